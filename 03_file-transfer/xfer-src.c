// SPDX-License-Identifier: MIT
/*
 * xfer-src.c - 03's source side: the copy path (pread into the ring) and
 * the zero-copy path (the NIC reads registered windows of the file's page
 * cache). See xfer-src.h.
 */
#define _GNU_SOURCE
#include "xfer-src.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "xfer-opts.h"

/* ------------------------------------------------------------------ */
/* Window arithmetic                                                   */
/* ------------------------------------------------------------------ */

uint64_t xfer_win_chunks(uint64_t size, uint32_t chunk, uint16_t depth)
{
	uint64_t n = xfer_nchunks(size, chunk), w = XFER_WIN_BYTES / chunk;

	if (w < 2u * depth)
		w = 2u * depth;
	if (w > n)
		w = n;
	return w ? w : 1;
}

/*
 * Window w holds chunks [w x W, (w + 1) x W), W >= 2 x depth. Window w + 1
 * goes into the slot of window w - 1 while chunk w x W + depth - 1 is
 * handled. Both sides move a chunk only after the chunk depth before it
 * is done (put's source: its WRITE completed; a receiver: in place and
 * hashed, which its credit says; a get's source: credited), so by then
 * every chunk of window w - 1 is done and the NIC no longer touches it;
 * and the new window is ready W - depth + 1 chunks before its first.
 */
uint64_t xfer_win_turn(uint64_t seq, uint64_t size, uint32_t chunk, uint16_t depth,
		       uint64_t win_chunks)
{
	uint64_t w = seq / win_chunks,
		 nwin = (xfer_nchunks(size, chunk) + win_chunks - 1) / win_chunks;

	return seq == w * win_chunks + depth - 1 && w + 1 < nwin ? w + 1 : UINT64_MAX;
}

/* Slack per window for the page rounding of its two ends. */
#define WIN_SLACK (2u * 4096u)

int xfer_win_fit(uint64_t size, uint32_t chunk, uint16_t depth, uint64_t limit, uint64_t locked,
		 uint64_t *win_chunks, char *why, size_t whylen)
{
	uint64_t n = xfer_nchunks(size, chunk), w = *win_chunks, avail, want, shrunk;
	char a[32], b[32], c[32];

	if (limit == (uint64_t)RLIM_INFINITY)
		return 0;
	avail = limit > locked ? limit - locked : 0;
	/* One window holds the whole file, or two are registered at once. */
	want = w >= n ? size : 2 * w * chunk;
	if (want + 2 * WIN_SLACK <= avail)
		return 0;
	/* Smaller windows, as long as each keeps 2 x depth chunks. */
	shrunk = avail / 2 > WIN_SLACK ? (avail / 2 - WIN_SLACK) / chunk : 0;
	if (shrunk >= 2u * depth && shrunk < w && shrunk < n) {
		*win_chunks = shrunk;
		return 0;
	}
	xfer_fmt_size(a, sizeof(a), limit);
	xfer_fmt_size(b, sizeof(b), locked);
	xfer_fmt_size(c, sizeof(c), want);
	snprintf(why, whylen,
		 "the locked-memory limit (`ulimit -l` %s, %s of it taken) cannot also pin %s "
		 "of file windows",
		 a, b, c);
	return -ENOMEM;
}

void xfer_win_range(uint64_t size, uint32_t chunk, uint64_t win_chunks, uint64_t w, long page,
		    uint64_t *off, uint64_t *len)
{
	uint64_t start = w * win_chunks * chunk, end = start + win_chunks * chunk;

	if (end > size)
		end = size;
	/* mmap wants a page-aligned offset; a chunk need not be one. */
	*off = start & ~((uint64_t)page - 1);
	*len = end - *off;
}

/* ------------------------------------------------------------------ */
/* Hashing a mapping without dying of SIGBUS                           */
/* ------------------------------------------------------------------ */

/*
 * A file truncated under a mapping makes every access past its new end
 * raise SIGBUS, which kills the process by default. MAP_POPULATE does not
 * help: truncation removes the pages from the mapping after it was
 * populated. So the hashing runs under sigsetjmp, and the handler jumps
 * back to it. The one piece of global state is what the handler needs:
 * per thread (SIGBUS from a memory access goes to the thread that made
 * it), where to jump, or NULL when that thread is not hashing a mapping
 * (then the fault is not ours: the default action, as before). The
 * handler is (re)installed whenever another one took its place: one
 * sigaction call per chunk at most.
 */
static _Thread_local sigjmp_buf *volatile bus_jump;

static void on_sigbus(int sig)
{
	sigjmp_buf *to = bus_jump;

	if (to)
		siglongjmp(*to, 1);
	/* Not a mapping we hash: die as without us, on the way back. */
	signal(sig, SIG_DFL);
}

static void bus_install(void)
{
	struct sigaction sa = { .sa_handler = on_sigbus }, old;

	if (sigaction(SIGBUS, NULL, &old) == 0 && old.sa_handler == on_sigbus)
		return;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
}

int xfer_digest_mapped(const void *p, size_t len, uint8_t out[XFER_HASH_LEN])
{
	sigjmp_buf here;

	bus_install();
	/* 1: restore the signal mask on the jump (SIGBUS is blocked inside
	 * its handler). out is garbage afterwards: the caller abandons the
	 * transfer. */
	if (sigsetjmp(here, 1)) {
		bus_jump = NULL;
		return -EFAULT;
	}
	bus_jump = &here;
	xfer_chunk_digest(p, len, out);
	bus_jump = NULL;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Windows                                                             */
/* ------------------------------------------------------------------ */

void xfer_win_release(struct xfer_win *w)
{
	if (w->buf.mr)
		ibv_dereg_mr(w->buf.mr);
	if (w->map)
		munmap(w->map, w->map_len);
	*w = (struct xfer_win){ .idx = UINT64_MAX };
}

int xfer_win_map(struct xfer_win *w, uint64_t idx, int fd, int prot, struct ibv_pd *pd, int access,
		 uint64_t off, uint64_t len, char *err, size_t errlen)
{
	void *p;
	int ret;

	xfer_win_release(w);
	w->map_off = off;
	w->map_len = len;
	p = mmap(NULL, len, prot, MAP_SHARED, fd, (off_t)off);
	if (p == MAP_FAILED) {
		ret = errno;
		snprintf(err, errlen, "mmap of the file refused: %s (%s)", strerror(ret),
			 strerrorname_np(ret));
		*w = (struct xfer_win){ .idx = UINT64_MAX };
		return -ret;
	}
	w->map = p;
	/* The NIC reads (or writes) the page cache through this MR. */
	w->buf.mr = ibv_reg_mr(pd, p, len, access);
	if (!w->buf.mr) {
		ret = errno;
		snprintf(err, errlen, "ibv_reg_mr of the %s file mapping: %s (%s)%s",
			 prot & PROT_WRITE ? "writable" : "read-only", strerror(ret),
			 strerrorname_np(ret),
			 ret == EFAULT && !(prot & PROT_WRITE)
				 ? "; kernels before 6.2 pin such pages for writing and refuse them"
				 : "");
		xfer_win_release(w);
		return -ret;
	}
	w->buf.addr = p;
	w->buf.len = len;
	w->idx = idx;
	return 0;
}

/* Map and register window idx into its slot (idx % 2), releasing the
 * window that slot held. 0 or a negative errno with the call in err. */
static int win_map(struct xfer_src *s, uint64_t idx, char *err, size_t errlen)
{
	struct xfer_win *w = &s->win[idx % 2];
	uint64_t off, len;
	int ret;

	xfer_win_range(s->size, s->chunk, s->win_chunks, idx, sysconf(_SC_PAGESIZE), &off, &len);
	/* Access 0 for the source of our WRITE, REMOTE_READ for the peer's
	 * READ: the NIC only ever reads these pages. */
	ret = xfer_win_map(w, idx, s->fd, PROT_READ, s->pd, s->access, off, len, err, errlen);
	if (ret)
		return ret;
	if (s->log)
		rc_trace(s->log,
			 "registered window %" PRIu64 " of the file: %" PRIu64
			 " bytes at offset %" PRIu64 ", access %d, lkey=0x%x",
			 idx, w->map_len, w->map_off, s->access, w->buf.mr->lkey);
	return 0;
}

/* ------------------------------------------------------------------ */
/* The source                                                          */
/* ------------------------------------------------------------------ */

void xfer_src_init(struct xfer_src *s, int fd, const struct stat *st, uint32_t chunk,
		   uint16_t depth)
{
	const char *hook = getenv("RDMA_XFER_TEST_PAUSE");
	char *colon;

	*s = (struct xfer_src){ .fd = fd,
				.size = (uint64_t)st->st_size,
				.chunk = chunk,
				.depth = depth,
				.st0 = *st,
				.win = { { .idx = UINT64_MAX }, { .idx = UINT64_MAX } },
				.pause_seq = UINT64_MAX };
	snprintf(s->why, sizeof(s->why), "%s", "not chosen yet");
	/* Test-only (tests/e2e/03-file-transfer.sh): a known point at which
	 * the test changes the source. */
	if (hook && (colon = strchr(hook, ':')) && colon[1]) {
		s->pause_seq = strtoull(hook, NULL, 10);
		s->pause_path = colon + 1;
	}
}

/*
 * Does the kernel apply RLIMIT_MEMLOCK to our MRs? Not with CAP_IPC_LOCK
 * (ib_umem_get checks the limit only without it): root usually has it,
 * whatever `ulimit -l` says. CapEff in /proc/self/status, bit 14. And
 * how much the process has pinned already (*pinned, bytes): the limit
 * counts every MR's pages (ib_umem_get adds them to the mm's pinned_vm,
 * VmPin there), a hardware NIC's queue buffers too.
 */
static bool memlock_applies(uint64_t *pinned)
{
	char line[256];
	unsigned long long eff, kib;
	bool applies = true;
	FILE *f = fopen("/proc/self/status", "re");

	*pinned = 0;
	if (!f)
		return true;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			applies = !(eff & (1ull << 14)); /* CAP_IPC_LOCK */
		if (sscanf(line, "VmPin: %llu kB", &kib) == 1)
			*pinned = (uint64_t)kib << 10;
	}
	fclose(f);
	return applies;
}

int xfer_win_budget(uint64_t size, uint32_t chunk, uint16_t depth, uint64_t more,
		    uint64_t *win_chunks, char *why, size_t whylen)
{
	struct rlimit rl;
	uint64_t pinned;

	if (memlock_applies(&pinned) && getrlimit(RLIMIT_MEMLOCK, &rl) == 0)
		return xfer_win_fit(size, chunk, depth, rl.rlim_cur, pinned + more, win_chunks, why,
				    whylen);
	return 0;
}

unsigned xfer_choose_flags(bool copy, bool zero_copy, bool direct, uint32_t vendor_id)
{
	unsigned f = direct ? XFER_CHOOSE_DIRECT : 0;

	if (copy)
		return f | XFER_CHOOSE_COPY;
	if (!zero_copy && vendor_id == RC_SOFT_ROCE_VENDOR_ID)
		return f | XFER_CHOOSE_SOFT;
	return f;
}

const char *xfer_ring_reason(unsigned flags)
{
	if (flags & XFER_CHOOSE_COPY)
		return "--copy";
	if (flags & XFER_CHOOSE_SOFT)
		return "Soft-RoCE, where the ring measured faster; --zero-copy for the page cache";
	return NULL;
}

void xfer_src_choose(struct xfer_src *s, struct ibv_pd *pd, int access, unsigned flags,
		     uint64_t more, const struct rc_log *log)
{
	const char *ring = xfer_ring_reason(flags);

	s->chosen = true;
	s->zerocopy = false;
	s->pd = pd;
	s->access = access;
	s->log = log;
	if (ring) {
		snprintf(s->why, sizeof(s->why), "%s", ring);
		return;
	}
	if (!s->size) {
		snprintf(s->why, sizeof(s->why), "%s", "an empty file has nothing to map");
		return;
	}
	s->win_chunks = xfer_win_chunks(s->size, s->chunk, s->depth);
	/* Registered windows are locked memory, like the ring: stay within
	 * the limit (where the kernel applies it) rather than fail half way. */
	if (xfer_win_budget(s->size, s->chunk, s->depth, more, &s->win_chunks, s->why,
			    sizeof(s->why)))
		return;
	/* The first window now: a kernel or file that refuses shows here,
	 * before any data moves. */
	if (win_map(s, 0, s->why, sizeof(s->why)))
		return;
	s->zerocopy = true;
}

const char *xfer_src_path(const struct xfer_src *s, char *buf, size_t len)
{
	if (s->zerocopy)
		snprintf(buf, len, "%s", "page cache -> NIC (zero-copy)");
	else
		snprintf(buf, len, "pread -> ring (copy: %s)", s->why);
	return buf;
}

/* The test hook: say where we are, then wait (bounded) to be let go. */
static void test_pause(struct xfer_src *s, uint64_t seq)
{
	int fd, i;

	if (!s->pause_path || seq != s->pause_seq)
		return;
	fd = open(s->pause_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	close(fd);
	for (i = 0; i < 3000 && access(s->pause_path, F_OK) == 0; i++)
		nanosleep(&(struct timespec){ .tv_nsec = 10000000 }, NULL);
}

/* Did the file shrink since we began? Then say so the one way we say it. */
static bool shrank(struct xfer_src *s, uint64_t *now)
{
	struct stat st;

	if (fstat(s->fd, &st))
		return false;
	*now = (uint64_t)st.st_size;
	return *now < s->size;
}

int xfer_read_full(int fd, void *buf, size_t len, uint64_t off, char *err, size_t errlen)
{
	uint8_t *p = buf;
	size_t done = 0;
	ssize_t n;
	int ret;

	while (done < len) {
		n = pread(fd, p + done, len - done, (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = errno;
			snprintf(err, errlen, "reading at offset %" PRIu64 ": %s", off + done,
				 strerror(ret));
			return -ret;
		}
		if (n == 0) {
			snprintf(err, errlen,
				 "the file ended at offset %" PRIu64
				 " although it had more bytes when the transfer began (truncated "
				 "meanwhile?)",
				 off + done);
			return -EIO;
		}
		done += (size_t)n;
	}
	return 0;
}

static int read_copy(struct xfer_src *s, uint64_t seq, uint8_t *slot, char *err, size_t errlen)
{
	uint32_t len = xfer_chunk_len(s->size, s->chunk, seq);
	uint64_t now;
	int ret;

	ret = xfer_read_full(s->fd, slot, len, seq * s->chunk, err, errlen);
	if (ret) {
		if (shrank(s, &now))
			snprintf(err, errlen,
				 "source changed during transfer: it shrank from %" PRIu64
				 " to %" PRIu64 " bytes",
				 s->size, now);
		return ret;
	}
	return 0;
}

/* Zero-copy: the next window when its turn comes (xfer_win_turn). */
static int read_zerocopy(struct xfer_src *s, uint64_t seq, char *err, size_t errlen)
{
	uint64_t next = xfer_win_turn(seq, s->size, s->chunk, s->depth, s->win_chunks);
	char why[RC_ERR_LEN];
	int ret;

	if (next != UINT64_MAX) {
		ret = win_map(s, next, why, sizeof(why));
		if (ret) {
			snprintf(err, errlen, "cannot register window %" PRIu64 " of the file: %s",
				 next, why);
			return ret;
		}
	}
	if (s->win[(seq / s->win_chunks) % 2].idx != seq / s->win_chunks) {
		snprintf(err, errlen, "internal error: chunk %" PRIu64 " has no window", seq);
		return -EINVAL;
	}
	return 0;
}

int xfer_src_read(struct xfer_src *s, uint64_t seq, uint8_t *slot, char *err, size_t errlen)
{
	int ret = s->zerocopy ? read_zerocopy(s, seq, err, errlen)
			      : read_copy(s, seq, slot, err, errlen);

	if (!ret)
		test_pause(s, seq);
	return ret;
}

/*
 * On a hashing thread, once xfer_src_read handled seq. The window is
 * stable: the next one replaces window w - 1 only when chunk w x W +
 * depth - 1 is read, and that chunk is allowed only once chunk w x W - 1
 * completed its WRITE, which it posted only once that chunk was hashed.
 */
int xfer_src_digest(struct xfer_src *s, uint64_t seq, const uint8_t *slot,
		    uint8_t out[XFER_HASH_LEN], char *err, size_t errlen)
{
	uint32_t len = xfer_chunk_len(s->size, s->chunk, seq);
	const struct xfer_win *win;
	uint64_t now;
	int ret;

	if (!s->zerocopy) {
		/* What the NIC will send is exactly what is in the slot. */
		xfer_chunk_digest(slot, len, out);
		return 0;
	}
	win = &s->win[(seq / s->win_chunks) % 2]; /* windows exist only here */
	/* Hash what the NIC will read: the page cache, through the map. */
	ret = xfer_digest_mapped(win->map + (seq * s->chunk - win->map_off), len, out);
	if (ret) {
		now = 0;
		shrank(s, &now);
		snprintf(err, errlen,
			 "source changed during transfer: it shrank to %" PRIu64
			 " bytes under its mapping (SIGBUS while hashing chunk %" PRIu64 ")",
			 now, seq);
		return ret;
	}
	return 0;
}

void xfer_win_where(struct xfer_win win[2], uint64_t win_chunks, uint64_t seq, uint32_t chunk,
		    uint16_t depth, struct rc_buf *ring, struct rc_buf **b, size_t *off)
{
	struct xfer_win *w;

	if (!win) {
		*b = ring;
		*off = (size_t)(seq % depth) * chunk;
		return;
	}
	w = &win[(seq / win_chunks) % 2];
	*b = &w->buf;
	*off = (size_t)(seq * chunk - w->map_off);
}

void xfer_src_where(struct xfer_src *s, uint64_t seq, struct rc_buf *ring, struct rc_buf **b,
		    size_t *off)
{
	xfer_win_where(s->zerocopy ? s->win : NULL, s->win_chunks, seq, s->chunk, s->depth, ring, b,
		       off);
}

/* One thread's share of a window in the second look: the digests of
 * chunks [first, end) of a mapping of the file from offset off. */
struct rehash_part {
	const struct xfer_src *s;
	const uint8_t *p;
	uint64_t off, first, end;
	uint8_t (*d)[XFER_HASH_LEN]; /* d[k - first] */
	pthread_t thread;
	bool started;
	int ret;
};

static void *rehash_part(void *arg)
{
	struct rehash_part *r = arg;
	uint64_t k;

	for (k = r->first; k < r->end && !r->ret; k++)
		r->ret = xfer_digest_mapped(r->p + (k * r->s->chunk - r->off),
					    xfer_chunk_len(r->s->size, r->s->chunk, k),
					    r->d[k - r->first]);
	return NULL;
}

/* Chunks [first, end) of window p (mapped from off) on up to `threads`
 * threads, each a contiguous share: the caller's own thread takes the
 * first share and any share whose thread could not start; the digests go
 * into d, in chunk order. *used: the threads that hashed. */
static int rehash_window(const struct xfer_src *s, const uint8_t *p, uint64_t off, uint64_t first,
			 uint64_t end, unsigned threads, uint8_t (*d)[XFER_HASH_LEN],
			 unsigned *used)
{
	struct rehash_part part[XFER_MAX_HASH_THREADS];
	uint64_t n = end - first, at = first;
	unsigned i, t = threads < 1			  ? 1
			: threads > XFER_MAX_HASH_THREADS ? XFER_MAX_HASH_THREADS
							  : threads;
	int ret = 0;

	if (t > n)
		t = (unsigned)n;
	for (i = 0; i < t; i++) {
		uint64_t share = n / t + (i < n % t);

		part[i] = (struct rehash_part){ .s = s,
						.p = p,
						.off = off,
						.first = at,
						.end = at + share,
						.d = d + (at - first) };
		at += share;
	}
	/* The others on threads of their own, the first on ours. */
	*used = 1;
	for (i = 1; i < t; i++) {
		part[i].started = !pthread_create(&part[i].thread, NULL, rehash_part, &part[i]);
		*used += part[i].started;
	}
	for (i = 0; i < t; i++)
		if (!part[i].started)
			rehash_part(&part[i]);
	for (i = 0; i < t; i++) {
		if (part[i].started)
			pthread_join(part[i].thread, NULL);
		if (part[i].ret && !ret)
			ret = part[i].ret;
	}
	return ret;
}

/* Hash the whole file again through a fresh, unregistered mapping, window
 * by window, each window's chunks shared by up to `threads` threads (a
 * whole pass costs what the pool's did: in the Soft-RoCE VMs of
 * docs/performance.md about 200 ms per 64 MiB on one thread), into the
 * top digest (xfer-hash.h) as the pool computed it. s->rehash_threads:
 * the most threads one window used. */
static int rehash(struct xfer_src *s, unsigned threads, uint8_t out[XFER_HASH_LEN])
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t n = xfer_nchunks(s->size, s->chunk);
	uint64_t nwin = (n + s->win_chunks - 1) / s->win_chunks;
	uint64_t w, k, first, end, off, len;
	uint8_t(*d)[XFER_HASH_LEN];
	unsigned used;
	struct xfer_hash top;
	uint8_t *p;
	int ret = 0;

	d = calloc(s->win_chunks, XFER_HASH_LEN);
	if (!d)
		return -ENOMEM;
	if (xfer_top_start(&top)) {
		free(d);
		return -ENOMEM;
	}
	for (w = 0; w < nwin && !ret; w++) {
		xfer_win_range(s->size, s->chunk, s->win_chunks, w, page, &off, &len);
		p = mmap(NULL, len, PROT_READ, MAP_SHARED, s->fd, (off_t)off);
		if (p == MAP_FAILED) {
			ret = -errno;
			break;
		}
		/* The window's first bytes below its first chunk belong to
		 * the previous window (page rounding). */
		first = w * s->win_chunks;
		end = first + s->win_chunks < n ? first + s->win_chunks : n;
		ret = rehash_window(s, p, off, first, end, threads, d, &used);
		if (used > s->rehash_threads)
			s->rehash_threads = used;
		for (k = first; k < end && !ret; k++)
			xfer_top_add(&top, d[k - first]);
		munmap(p, len);
	}
	free(d);
	if (!ret)
		xfer_top_end(&top, out);
	else
		xfer_hash_free(&top);
	return ret;
}

static bool same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/*
 * Is what we sent the file? What each check sees:
 *
 * - The receiver compares its hash of what landed with ours, so what it
 *   stores is what we hashed. On the copy path that is what pread gave
 *   (the slot is hashed, then sent); on the zero-copy path it is what the
 *   mapping showed when hashed, and a change before the NIC read the page
 *   makes the chunk's digests differ (the chunk is named, nothing is
 *   committed).
 * - But what we hashed may be no state the file was ever in, if it was
 *   written during the transfer: chunk 0 before the write, chunk 9 after.
 *   fstat before and after catches a truncation or extension (size) and
 *   a write(2) or truncate(2) (mtime, ctime), except one within the same
 *   timestamp tick as the last change before we began (coarse clocks),
 *   and it misses a store through another process's writable mapping to
 *   pages already dirty (no mtime update until writeback).
 * - So the zero-copy path also hashes the file again after the last
 *   chunk completed and compares with what it sent: any byte that differs
 *   now shows (a fault past a new end too). That read is no copy; the
 *   copy path does not do it (it would be a second pread of every byte)
 *   and relies on fstat. The transfer waits for it, so each window's
 *   chunks are shared by --hash-threads threads: ours and the others
 *   started for the window (the pool of the first pass has ended).
 * All of this runs before DONE: a changed source never reaches a commit.
 */
int xfer_src_verify(struct xfer_src *s, const uint8_t sent[XFER_HASH_LEN], unsigned threads,
		    char *err, size_t errlen)
{
	uint8_t again[XFER_HASH_LEN];
	struct stat st;
	int ret;

	s->rehash_threads = 0;
	if (s->zerocopy && s->size) {
		ret = rehash(s, threads, again);
		if (ret == -EFAULT) {
			snprintf(err, errlen, "%s",
				 "source changed during transfer: it shrank under its mapping "
				 "(SIGBUS while hashing it again)");
			return -EIO;
		}
		if (ret) {
			snprintf(err, errlen, "cannot hash the source again: %s", strerror(-ret));
			return ret;
		}
		if (memcmp(again, sent, XFER_HASH_LEN)) {
			snprintf(err, errlen, "%s",
				 "source changed during transfer: its bytes now differ from those "
				 "sent");
			return -EIO;
		}
		if (s->log)
			rc_trace(s->log, "source hashed again on %u threads: as sent",
				 s->rehash_threads);
	}
	if (fstat(s->fd, &st)) {
		ret = errno;
		snprintf(err, errlen, "cannot stat the source: %s", strerror(ret));
		return -ret;
	}
	if ((uint64_t)st.st_size != s->size) {
		snprintf(err, errlen,
			 "source changed during transfer: its size went from %" PRIu64
			 " to %" PRIu64 " bytes",
			 s->size, (uint64_t)st.st_size);
		return -EIO;
	}
	if (!same_time(&st.st_mtim, &s->st0.st_mtim) || !same_time(&st.st_ctim, &s->st0.st_ctim)) {
		snprintf(err, errlen, "%s",
			 "source changed during transfer: it was modified (its mtime or ctime "
			 "moved)");
		return -EIO;
	}
	return 0;
}

void xfer_src_release(struct xfer_src *s)
{
	int i;

	for (i = 0; i < 2; i++)
		if (s->win[i].map || s->win[i].buf.mr)
			xfer_win_release(&s->win[i]);
}
