// SPDX-License-Identifier: MIT
/* Unit tests of 03's files in a real directory: the receiving end's
 * temporary file and commit (03_file-transfer/xfer-sink.c), the sender's
 * reads (xfer-src.c) and the disk thread (xfer-disk.c). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "xfer-disk.h"
#include "xfer-sink.h"
#include "xfer-src.h"

/* ------------------------------------------------------------------ */
/* Temporary files and the commit                                      */
/* ------------------------------------------------------------------ */

struct tmpdir {
	char path[64];
	int fd;
	unsigned flags; /* for xfer_sink_open: 0 or XFER_SINK_NAMED_TMP */
};

static int dir_open(void **state, unsigned flags)
{
	struct tmpdir *t = calloc(1, sizeof(*t));

	snprintf(t->path, sizeof(t->path), "/tmp/test-xfer.XXXXXX");
	if (!mkdtemp(t->path))
		return -1;
	t->fd = open(t->path, O_RDONLY | O_DIRECTORY);
	t->flags = flags;
	*state = t;
	return t->fd < 0 ? -1 : 0;
}

/* The sink as it runs: O_TMPFILE where /tmp has it (tmpfs and ext4 do). */
static int dir_setup(void **state)
{
	return dir_open(state, 0);
}

/* The fallback, forced: the .NAME.XXXXXXXX.part file. */
static int dir_setup_named(void **state)
{
	return dir_open(state, XFER_SINK_NAMED_TMP);
}

static int dir_teardown(void **state)
{
	struct tmpdir *t = *state;
	char cmd[128];

	close(t->fd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->path);
	if (system(cmd) != 0)
		return -1;
	free(t);
	return 0;
}

/* Number of entries in the directory (without . and ..). */
static int entries(int dirfd)
{
	DIR *d = fdopendir(dup(dirfd));
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	rewinddir(d);
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

static void read_at(int dirfd, const char *name, char *buf, size_t len)
{
	int fd = openat(dirfd, name, O_RDONLY);
	ssize_t n;

	assert_true(fd >= 0);
	n = read(fd, buf, len - 1);
	assert_true(n >= 0);
	buf[n] = '\0';
	close(fd);
}

static void write_at(int dirfd, const char *name, const char *text)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/* Open a sink in t's mode, and check that it took the path it should. */
static void open_sink(struct tmpdir *t, struct xfer_sink *s, const char *name, unsigned flags)
{
	char err[RC_ERR_LEN];
	int ret = xfer_sink_open(s, t->fd, name, t->flags | flags, err, sizeof(err));

	if (ret)
		fail_msg("xfer_sink_open '%s': %s", name, err);
	if (t->flags & XFER_SINK_NAMED_TMP) {
		assert_false(s->unnamed);
		assert_true(s->have_tmp);
		assert_int_equal(s->tmp[0], '.');
		assert_non_null(strstr(s->tmp, ".part"));
		assert_non_null(strstr(s->how, "temporary file .")); /* the -v line */
		assert_non_null(strstr(s->how, "O_TMPFILE not tried"));
		return;
	}
	if (!s->unnamed) {
		/* Not a failure of the sink: this /tmp cannot do it. */
		xfer_sink_abort(s);
		skip();
	}
	assert_false(s->have_tmp);
	assert_string_equal(s->how, "O_TMPFILE (nothing is left if the receiver dies)");
}

/* Visible entries while a file is being received: the .part file, or
 * nothing at all with O_TMPFILE. */
static int in_flight(const struct tmpdir *t)
{
	return t->flags & XFER_SINK_NAMED_TMP ? 1 : 0;
}

static void sink_commits_only_verified_data(void **state)
{
	struct tmpdir *t = *state;
	struct xfer_sink s;
	char err[RC_ERR_LEN], buf[64];
	struct stat st;
	mode_t mask;

	/* Written out of order, synced, committed. */
	open_sink(t, &s, "new", 0);
	assert_int_equal(fstatat(t->fd, "new", &st, 0), -1); /* not yet */
	assert_int_equal(xfer_sink_write(&s, "world", 5, 6, err, sizeof(err)), 0);
	assert_int_equal(xfer_sink_write(&s, "hello ", 6, 0, err, sizeof(err)), 0);
	assert_int_equal(entries(t->fd), in_flight(t));
	/* The size check catches a missing tail. */
	assert_int_equal(xfer_sink_sync(&s, 12, err, sizeof(err)), -EIO);
	assert_non_null(strstr(err, "11 bytes on disk, expected 12"));
	assert_int_equal(xfer_sink_sync(&s, 11, err, sizeof(err)), 0);
	assert_int_equal(xfer_sink_commit(&s, err, sizeof(err)), 0);
	assert_string_equal(s.how, in_flight(t) ? strcat(strcpy(buf, "renamed from "), s.tmp)
						: "linked from O_TMPFILE");
	assert_int_equal(s.fd, -1);
	xfer_sink_abort(&s); /* after a commit: nothing to remove */
	read_at(t->fd, "new", buf, sizeof(buf));
	assert_string_equal(buf, "hello world");
	assert_int_equal(fstatat(t->fd, "new", &st, 0), 0);
	assert_int_equal(st.st_nlink, 1);
	/* The mode of a file created today: 0666 less the umask. */
	mask = umask(0);
	umask(mask);
	assert_int_equal(st.st_mode & 0777, 0666 & ~mask);
	assert_int_equal(entries(t->fd), 1);

	/* Aborted: the temporary file goes, the name stays untouched. */
	open_sink(t, &s, "other", 0);
	assert_int_equal(xfer_sink_write(&s, "x", 1, 0, err, sizeof(err)), 0);
	assert_int_equal(entries(t->fd), 1 + in_flight(t));
	xfer_sink_abort(&s);
	xfer_sink_abort(&s);
	assert_int_equal(entries(t->fd), 1);
	assert_int_equal(fstatat(t->fd, "other", &st, 0), -1);
}

static void sink_never_overwrites_without_force(void **state)
{
	struct tmpdir *t = *state;
	struct xfer_sink s;
	char err[RC_ERR_LEN], buf[64];
	struct stat before, after;
	int old;

	write_at(t->fd, "old", "old content");
	/* Refused at once without -f. */
	assert_int_equal(xfer_sink_open(&s, t->fd, "old", t->flags, err, sizeof(err)), -EEXIST);
	assert_non_null(strstr(err, "use -f"));
	assert_int_equal(entries(t->fd), 1);
	/* Created by someone else during the transfer: the link or rename
	 * refuses, and theirs stays. */
	open_sink(t, &s, "race", 0);
	assert_int_equal(xfer_sink_write(&s, "mine", 4, 0, err, sizeof(err)), 0);
	assert_int_equal(xfer_sink_sync(&s, 4, err, sizeof(err)), 0);
	write_at(t->fd, "race", "theirs");
	assert_int_equal(xfer_sink_commit(&s, err, sizeof(err)), -EEXIST);
	assert_non_null(strstr(err, "created during the transfer"));
	assert_non_null(strstr(err, in_flight(t) ? "cannot rename" : "cannot link"));
	xfer_sink_abort(&s);
	read_at(t->fd, "race", buf, sizeof(buf));
	assert_string_equal(buf, "theirs");
	assert_int_equal(entries(t->fd), 2);
	/* With -f: replaced in one step. A reader that opened the old file
	 * still reads it whole; the name points at the new one. */
	assert_int_equal(fstatat(t->fd, "old", &before, 0), 0);
	old = openat(t->fd, "old", O_RDONLY);
	assert_true(old >= 0);
	open_sink(t, &s, "old", XFER_SINK_FORCE);
	assert_int_equal(xfer_sink_write(&s, "new", 3, 0, err, sizeof(err)), 0);
	assert_int_equal(xfer_sink_sync(&s, 3, err, sizeof(err)), 0);
	assert_int_equal(xfer_sink_commit(&s, err, sizeof(err)), 0);
	if (!in_flight(t))
		assert_non_null(strstr(s.how, "renamed over the old file"));
	read_at(t->fd, "old", buf, sizeof(buf));
	assert_string_equal(buf, "new");
	assert_int_equal(fstatat(t->fd, "old", &after, 0), 0);
	assert_true(after.st_ino != before.st_ino);
	assert_int_equal(pread(old, buf, sizeof(buf), 0), 11);
	assert_memory_equal(buf, "old content", 11);
	close(old);
	assert_int_equal(entries(t->fd), 2); /* no temporary name left */
	/* With -f over a name that does not exist: just the file. */
	open_sink(t, &s, "fresh", XFER_SINK_FORCE);
	assert_int_equal(xfer_sink_sync(&s, 0, err, sizeof(err)), 0);
	assert_int_equal(xfer_sink_commit(&s, err, sizeof(err)), 0);
	assert_int_equal(entries(t->fd), 3);
}

static void sink_force_fails_cleanly(void **state)
{
	struct tmpdir *t = *state;
	struct xfer_sink s;
	char err[RC_ERR_LEN];
	struct stat st;

	/* -f, and a directory appears under the name during the transfer:
	 * the rename refuses it (EISDIR), and nothing of ours is left. */
	open_sink(t, &s, "d", XFER_SINK_FORCE);
	assert_int_equal(xfer_sink_write(&s, "data", 4, 0, err, sizeof(err)), 0);
	assert_int_equal(xfer_sink_sync(&s, 4, err, sizeof(err)), 0);
	assert_int_equal(mkdirat(t->fd, "d", 0755), 0);
	assert_int_equal(xfer_sink_commit(&s, err, sizeof(err)), -EISDIR);
	assert_non_null(strstr(err, "to 'd'"));
	xfer_sink_abort(&s);
	assert_int_equal(entries(t->fd), 1);
	assert_int_equal(fstatat(t->fd, "d", &st, 0), 0);
	assert_true(S_ISDIR(st.st_mode));
}

/* A receiver killed in the middle: a child opens a sink, writes, and dies
 * of SIGKILL without cleaning up. What is left in the directory? */
static void sink_killed_receiver_leaves(void **state)
{
	struct tmpdir *t = *state;
	struct xfer_sink s;
	char err[RC_ERR_LEN], c;
	int status, p[2];
	pid_t pid;

	open_sink(t, &s, "probe", 0); /* skips here if /tmp lacks O_TMPFILE */
	xfer_sink_abort(&s);
	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (xfer_sink_open(&s, t->fd, "k", t->flags, err, sizeof(err)) ||
		    xfer_sink_write(&s, "partial", 7, 0, err, sizeof(err)))
			_exit(1);
		if (write(p[1], "w", 1) != 1)
			_exit(1);
		pause(); /* until the parent kills us */
		_exit(1);
	}
	close(p[1]);
	assert_int_equal(read(p[0], &c, 1), 1); /* written, not committed */
	close(p[0]);
	assert_int_equal(entries(t->fd), in_flight(t));
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	/* O_TMPFILE: nothing. The fallback: its .k.XXXXXXXX.part. */
	assert_int_equal(entries(t->fd), in_flight(t));
}

static void sink_refuses_links_and_directories(void **state)
{
	struct tmpdir *t = *state;
	struct xfer_sink s;
	char err[RC_ERR_LEN], buf[64], outside[128];
	int fd;

	/* A symlink pointing outside: never followed, never replaced. */
	snprintf(outside, sizeof(outside), "%s.outside", t->path);
	fd = open(outside, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "secret", 6), 6);
	close(fd);
	assert_int_equal(symlinkat(outside, t->fd, "link"), 0);
	assert_int_equal(xfer_sink_open(&s, t->fd, "link", t->flags, err, sizeof(err)), -EEXIST);
	assert_int_equal(
		xfer_sink_open(&s, t->fd, "link", t->flags | XFER_SINK_FORCE, err, sizeof(err)),
		-EEXIST);
	assert_non_null(strstr(err, "symbolic link"));
	assert_int_equal(mkdirat(t->fd, "sub", 0755), 0);
	assert_int_equal(
		xfer_sink_open(&s, t->fd, "sub", t->flags | XFER_SINK_FORCE, err, sizeof(err)),
		-EEXIST);
	assert_non_null(strstr(err, "directory"));
	fd = open(outside, O_RDONLY);
	assert_int_equal(read(fd, buf, sizeof(buf)), 6);
	close(fd);
	unlink(outside);
	assert_int_equal(entries(t->fd), 2);
}

static void read_full_reports_short_files(void **state)
{
	struct tmpdir *t = *state;
	char err[RC_ERR_LEN], buf[16];
	int fd;

	write_at(t->fd, "short", "12345");
	fd = openat(t->fd, "short", O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(xfer_read_full(fd, buf, 3, 2, err, sizeof(err)), 0);
	assert_memory_equal(buf, "345", 3);
	assert_int_equal(xfer_read_full(fd, buf, 4, 2, err, sizeof(err)), -EIO);
	assert_non_null(strstr(err, "ended at offset 5"));
	close(fd);
}

/* ------------------------------------------------------------------ */
/* The disk thread                                                     */
/* ------------------------------------------------------------------ */

/* What the disk thread did: the chunks in the order it handled them. */
struct disk_log {
	uint64_t seen[16];
	unsigned count;
	uint64_t fail_at; /* fail on this chunk (UINT64_MAX: never) */
};

static int log_chunk(void *arg, uint64_t seq, char *err, size_t errlen)
{
	struct disk_log *l = arg;

	if (seq == l->fail_at) {
		snprintf(err, errlen, "no space for chunk %" PRIu64, seq);
		return -ENOSPC;
	}
	l->seen[l->count++] = seq;
	return 0;
}

/* Wait (at most 5 s) for the disk thread's eventfd, as rc_next_wc would,
 * until it reports `want` chunks or an error; return xfer_disk_done's. */
static int wait_disk(struct xfer_disk *d, uint64_t want, uint64_t *done, char *why, size_t len)
{
	struct pollfd p = { .fd = d->efd, .events = POLLIN };
	uint64_t cnt;
	int ret, i;

	for (i = 0; i < 50; i++) {
		ret = xfer_disk_done(d, done, why, len);
		if (ret || *done >= want)
			return ret;
		if (poll(&p, 1, 100) == 1)
			assert_int_equal(read(d->efd, &cnt, sizeof(cnt)), sizeof(cnt));
	}
	return xfer_disk_done(d, done, why, len);
}

static void disk_thread_keeps_order_and_limit(void **state)
{
	struct disk_log l = { .fail_at = UINT64_MAX };
	struct xfer_disk d;
	struct rc_conn c;
	char err[RC_ERR_LEN], why[RC_ERR_LEN];
	uint64_t done = 0;
	unsigned i;

	(void)state;
	rc_conn_init(&c, "test", false, 1000, -1);
	assert_int_equal(xfer_disk_start(&d, &c, 6, 2, log_chunk, &l, err, sizeof(err)), 0);
	assert_int_equal(c.wake_fd, d.efd); /* rc_next_wc wakes for it */
	assert_int_equal(wait_disk(&d, 2, &done, why, sizeof(why)), 0);
	assert_int_equal(done, 2);
	/* Not one chunk beyond what was allowed, however long we wait. */
	usleep(200 * 1000);
	assert_int_equal(xfer_disk_done(&d, &done, why, sizeof(why)), 0);
	assert_int_equal(done, 2);
	xfer_disk_allow(&d, 1); /* lowering is ignored */
	xfer_disk_allow(&d, 6);
	assert_int_equal(wait_disk(&d, 6, &done, why, sizeof(why)), 0);
	assert_int_equal(done, 6);
	xfer_disk_stop(&d);
	assert_int_equal(c.wake_fd, -1);
	assert_int_equal(l.count, 6);
	for (i = 0; i < l.count; i++)
		assert_int_equal(l.seen[i], i);
	xfer_disk_stop(&d); /* twice is harmless */
	/* Stopped: the count stands, and allowing more does nothing (the
	 * main loops ask once more after handing the file back). */
	done = 0;
	assert_int_equal(xfer_disk_done(&d, &done, why, sizeof(why)), 0);
	assert_int_equal(done, 6);
	xfer_disk_allow(&d, 10);
	assert_int_equal(l.count, 6);
}

/* A disk function and a hashing function for the wake-up test: chunk 0's
 * hash waits for a byte on `gate` (at most 5 s), so chunk 1 is hashed
 * first. */
struct gated {
	struct disk_log log;
	int gate;	 /* read end of a pipe */
	unsigned hashed; /* chunks hashed so far (both hashing threads) */
};

static int gated_copy(void *arg, uint64_t seq, char *err, size_t errlen)
{
	return log_chunk(&((struct gated *)arg)->log, seq, err, errlen);
}

static int gated_hash(void *arg, uint64_t seq, uint8_t out[XFER_HASH_LEN], char *err, size_t errlen)
{
	struct gated *g = arg;
	struct pollfd p = { .fd = g->gate, .events = POLLIN };
	char byte;

	(void)err;
	(void)errlen;
	if (seq == 0 && poll(&p, 1, 5000) == 1 && read(g->gate, &byte, 1) != 1)
		return -EIO;
	memset(out, (int)seq, XFER_HASH_LEN);
	__atomic_add_fetch(&g->hashed, 1, __ATOMIC_SEQ_CST);
	return 0;
}

/* How many wake-ups wait on the eventfd (0: none within timeout_ms)?
 * Reads (and so clears) them. */
static uint64_t woken(int efd, int timeout_ms)
{
	struct pollfd p = { .fd = efd, .events = POLLIN };
	uint64_t cnt;

	if (poll(&p, 1, timeout_ms) != 1)
		return 0;
	assert_int_equal(read(efd, &cnt, sizeof(cnt)), sizeof(cnt));
	return cnt;
}

/* Has the pool recorded chunk seq as hashed (not yet folded)? */
static bool pool_holds(struct xfer_hpool *p, uint64_t seq)
{
	struct xfer_hslot *h = &p->slot[seq % p->nslots];
	bool yes;

	pthread_mutex_lock(&p->lock);
	yes = h->hashed && h->seq == seq;
	pthread_mutex_unlock(&p->lock);
	return yes;
}

/* The main thread is woken only with news: not by a chunk copied but not
 * yet hashed, nor by a chunk hashed before an earlier one; but when the
 * count of chunks handled moves (once for two chunks), and on a failure
 * of the copy (chunk 2: no hash can wake it then). */
static void main_thread_woken_only_with_news(void **state)
{
	struct gated g = { .log = { .fail_at = 2 } };
	struct xfer_hash_cfg h = {
		.threads = 2, .size = 4 * 4096, .chunk = 4096, .depth = 4, .fn = gated_hash
	};
	char err[RC_ERR_LEN], why[RC_ERR_LEN];
	struct xfer_disk d;
	struct rc_conn c;
	uint64_t done = 0;
	int pfd[2], i;

	(void)state;
	assert_int_equal(pipe(pfd), 0);
	g.gate = pfd[0];
	rc_conn_init(&c, "test", false, 1000, -1);
	assert_int_equal(xfer_disk_start_hashed(&d, &c, 2, gated_copy, &g, &h, err, sizeof(err)),
			 0);
	/* Chunks 0 and 1 copied, chunk 1 hashed and recorded by the pool,
	 * chunk 0 held at its gate. */
	for (i = 0; i < 500 && !pool_holds(&d.pool, 1); i++)
		usleep(10 * 1000);
	assert_true(pool_holds(&d.pool, 1));
	assert_int_equal(__atomic_load_n(&g.hashed, __ATOMIC_SEQ_CST), 1);
	assert_int_equal(g.log.count, 2);
	assert_int_equal(woken(d.efd, 50), 0);
	assert_int_equal(xfer_disk_done(&d, &done, why, sizeof(why)), 0);
	assert_int_equal(done, 0);
	/* Chunk 0 hashed: two chunks handled at once, one wake-up. */
	assert_int_equal(write(pfd[1], "x", 1), 1);
	assert_int_equal(woken(d.efd, 5000), 1);
	assert_int_equal(xfer_disk_done(&d, &done, why, sizeof(why)), 0);
	assert_int_equal(done, 2);
	/* Chunk 2's copy fails: woken (by the disk thread: nothing was left
	 * to hash), and told. */
	xfer_disk_allow(&d, 3);
	assert_int_equal(woken(d.efd, 5000), 1);
	assert_int_equal(xfer_disk_done(&d, &done, why, sizeof(why)), -ENOSPC);
	assert_non_null(strstr(why, "no space for chunk 2"));
	assert_int_equal(done, 2);
	xfer_disk_stop(&d);
	close(pfd[0]);
	close(pfd[1]);
}

static void disk_thread_reports_failure_and_stops(void **state)
{
	struct disk_log l = { .fail_at = 3 };
	struct xfer_disk d, never = { 0 };
	struct rc_conn c;
	char err[RC_ERR_LEN], why[RC_ERR_LEN] = "";
	uint64_t done = 0;

	(void)state;
	rc_conn_init(&c, "test", false, 1000, -1);
	assert_int_equal(xfer_disk_start(&d, &c, 10, 10, log_chunk, &l, err, sizeof(err)), 0);
	assert_int_equal(wait_disk(&d, 10, &done, why, sizeof(why)), -ENOSPC);
	assert_int_equal(done, 3); /* the chunks before the failure */
	assert_string_equal(why, "no space for chunk 3");
	xfer_disk_stop(&d);
	assert_int_equal(l.count, 3);
	/* The failure outlives the thread. */
	why[0] = '\0';
	assert_int_equal(xfer_disk_done(&d, &done, why, sizeof(why)), -ENOSPC);
	assert_string_equal(why, "no space for chunk 3");
	/* Stopped while waiting for permission: returns, nothing handled. */
	l = (struct disk_log){ .fail_at = UINT64_MAX };
	assert_int_equal(xfer_disk_start(&d, &c, 10, 0, log_chunk, &l, err, sizeof(err)), 0);
	usleep(50 * 1000);
	xfer_disk_stop(&d);
	assert_int_equal(l.count, 0);
	/* Never started (a transfer that failed before it): nothing to do. */
	xfer_disk_stop(&never);
}

/* A disk that takes as long as the test wants: the chunk waits for a byte
 * on a pipe (5 s at most). */
static int slow_chunk(void *arg, uint64_t seq, char *err, size_t errlen)
{
	struct pollfd p = { .fd = *(int *)arg, .events = POLLIN };
	char b;

	(void)seq;
	if (poll(&p, 1, 5000) != 1 || read(p.fd, &b, 1) != 1) {
		snprintf(err, errlen, "the test never released the chunk");
		return -EIO;
	}
	return 0;
}

static void disk_thread_names_its_stall(void **state)
{
	struct xfer_disk d;
	struct rc_conn c;
	char err[RC_ERR_LEN], why[RC_ERR_LEN] = "";
	uint64_t done = 0;
	int pfd[2];

	(void)state;
	assert_int_equal(pipe(pfd), 0);
	rc_conn_init(&c, "test", false, 1000, -1);
	assert_null(c.local_stall);
	assert_int_equal(xfer_disk_start(&d, &c, 2, 1, slow_chunk, &pfd[0], err, sizeof(err)), 0);
	assert_non_null(c.local_stall);
	/* Chunk 0 in hand and not done: a wait that times out now names the
	 * disk, with how long the chunk has taken. */
	usleep(300 * 1000);
	assert_true(c.local_stall(c.local_stall_arg, why, sizeof(why)));
	assert_non_null(
		strstr(why, "the local disk stalled: writing chunk 0 of the file has taken 0."));
	assert_non_null(strstr(why, "not the peer"));
	/* Done, and waiting for permission for chunk 1: the disk is idle, a
	 * timeout is the peer's. */
	assert_int_equal(write(pfd[1], "x", 1), 1);
	assert_int_equal(wait_disk(&d, 1, &done, why, sizeof(why)), 0);
	assert_int_equal(done, 1);
	assert_false(c.local_stall(c.local_stall_arg, why, sizeof(why)));
	assert_int_equal(write(pfd[1], "x", 1), 1);
	xfer_disk_allow(&d, 2);
	assert_int_equal(wait_disk(&d, 2, &done, why, sizeof(why)), 0);
	xfer_disk_stop(&d);
	assert_null(c.local_stall);
	close(pfd[0]);
	close(pfd[1]);
}

/* ------------------------------------------------------------------ */
/* --direct: O_DIRECT pwrites                                          */
/* ------------------------------------------------------------------ */

/* Does the file system of dirfd take O_DIRECT from the sink (xfer-sink.c)? */
static bool direct_fs(int dirfd)
{
	struct statfs fs;

	assert_int_equal(fstatfs(dirfd, &fs), 0);
	return fs.f_type == EXT4_SUPER_MAGIC || fs.f_type == XFS_SUPER_MAGIC ||
	       fs.f_type == BTRFS_SUPER_MAGIC;
}

/* Pages of [off, off + len) of fd in the page cache. */
static size_t resident(int fd, uint64_t off, size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), n = len / page, in = 0;
	unsigned char vec[64];
	void *m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, (off_t)off);

	assert_true(m != MAP_FAILED && n <= sizeof(vec));
	assert_int_equal(mincore(m, len, vec), 0);
	for (size_t i = 0; i < n; i++)
		in += vec[i] & 1;
	munmap(m, len);
	return in;
}

/*
 * --direct on the copy path: on ext4, xfs or btrfs every aligned chunk is
 * written with O_DIRECT (none of its pages in the page cache afterwards),
 * the short last chunk through the page cache; elsewhere the reason.
 * Either way the file holds exactly what was written.
 */
static void sink_direct_bypasses_the_page_cache(void **state)
{
	struct tmpdir *t = *state;
	const uint32_t chunk = 64 << 10, tail = 1000;
	const uint64_t size = 3ull * chunk + tail;
	uint8_t *ring = aligned_alloc(XFER_DIRECT_ALIGN, chunk), *back = malloc(size);
	char err[RC_ERR_LEN], path[400], text[96];
	struct xfer_sink s;
	bool fs_ok = direct_fs(t->fd);
	int fd;

	assert_non_null(ring);
	assert_non_null(back);
	open_sink(t, &s, "d", 0);
	xfer_sink_choose(&s, NULL, XFER_CHOOSE_COPY | XFER_CHOOSE_DIRECT, 0, size, chunk, 4, 0,
			 NULL);
	xfer_sink_path(&s, path, sizeof(path));
	if (!fs_ok) {
		assert_false(s.direct);
		assert_non_null(strstr(s.direct_why, "used on ext4, xfs and btrfs only"));
		assert_non_null(
			strstr(path, "ring -> pwrite (copy: --copy; not O_DIRECT: used on"));
	} else {
		assert_true(s.direct);
		assert_string_equal(path, "ring -> pwrite with O_DIRECT (copy: --copy)");
	}
	for (uint64_t k = 0; k < 4; k++) {
		uint32_t len = k < 3 ? chunk : tail;

		for (uint32_t i = 0; i < len; i++)
			ring[i] = (uint8_t)(k * 131 + i * 7 + (i >> 9));
		assert_int_equal(xfer_sink_write(&s, ring, len, k * chunk, err, sizeof(err)), 0);
		memcpy(back + k * chunk, ring, len);
		/* The tail ended O_DIRECT for the rest, without a reason. */
		assert_int_equal(s.direct, fs_ok && k < 3);
	}
	assert_int_equal(s.direct_bytes, fs_ok ? 3ull * chunk : 0);
	assert_int_equal(s.direct_why[0] != '\0', !fs_ok);
	/* What -v and the server's trace say of the receiver's copies. */
	snprintf(text, sizeof(text), "pwrite from the ring; %u more with O_DIRECT", 3 * chunk);
	assert_string_equal(xfer_sink_copies(&s, path, sizeof(path)),
			    fs_ok ? text : "pwrite from the ring");
	if (fs_ok) /* what O_DIRECT wrote is not in the page cache; the tail is */
		assert_int_equal(resident(s.fd, 0, 3 * chunk), 0);
	assert_int_equal(resident(s.fd, 3 * chunk, chunk), 1);
	assert_int_equal(xfer_sink_sync(&s, size, err, sizeof(err)), 0);
	assert_int_equal(xfer_sink_commit(&s, err, sizeof(err)), 0);
	fd = openat(t->fd, "d", O_RDONLY);
	assert_true(fd >= 0);
	memset(ring, 0, chunk);
	for (uint64_t off = 0; off < size; off += chunk) {
		size_t len = size - off < chunk ? size - off : chunk;

		assert_int_equal(pread(fd, ring, len, (off_t)off), (ssize_t)len);
		assert_memory_equal(ring, back + off, len);
	}
	close(fd);

	/* A chunk size O_DIRECT cannot take: the reason, no O_DIRECT. */
	open_sink(t, &s, "e", 0);
	xfer_sink_choose(&s, NULL, XFER_CHOOSE_COPY | XFER_CHOOSE_DIRECT, 0, size, 5000, 4, 0,
			 NULL);
	assert_false(s.direct);
	if (fs_ok)
		assert_string_equal(s.direct_why,
				    "the chunk size (5000 bytes) is not a multiple of 4096");
	/* Without --direct: nothing said, nothing tried. */
	xfer_sink_abort(&s);
	open_sink(t, &s, "f", 0);
	xfer_sink_choose(&s, NULL, XFER_CHOOSE_COPY, 0, size, chunk, 4, 0, NULL);
	assert_false(s.direct);
	assert_string_equal(xfer_sink_path(&s, path, sizeof(path)),
			    "ring -> pwrite (copy: --copy)");
	xfer_sink_abort(&s);
	free(ring);
	free(back);
}

/* Each sink test twice: as it runs (O_TMPFILE), and the fallback forced. */
#define SINK_TEST(f, setup, what)                                              \
	{                                                                      \
		.name = #f " (" what ")", .test_func = f, .setup_func = setup, \
		.teardown_func = dir_teardown                                  \
	}
#define BOTH_SINKS(f) SINK_TEST(f, dir_setup, "O_TMPFILE"), SINK_TEST(f, dir_setup_named, ".part")

int main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH_SINKS(sink_commits_only_verified_data),
		BOTH_SINKS(sink_never_overwrites_without_force),
		BOTH_SINKS(sink_force_fails_cleanly),
		BOTH_SINKS(sink_killed_receiver_leaves),
		BOTH_SINKS(sink_refuses_links_and_directories),
		BOTH_SINKS(sink_direct_bypasses_the_page_cache),
		cmocka_unit_test_setup_teardown(read_full_reports_short_files, dir_setup,
						dir_teardown),
		cmocka_unit_test(disk_thread_keeps_order_and_limit),
		cmocka_unit_test(disk_thread_reports_failure_and_stops),
		cmocka_unit_test(disk_thread_names_its_stall),
		cmocka_unit_test(main_thread_woken_only_with_news),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
