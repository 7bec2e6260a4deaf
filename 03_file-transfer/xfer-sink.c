// SPDX-License-Identifier: MIT
/*
 * xfer-sink.c - 03's receiving end: the file a receiver writes, then links
 * or renames into place once it is verified. See xfer-sink.h.
 */
#define _GNU_SOURCE
#include "xfer-sink.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <linux/magic.h> /* TMPFS_MAGIC, EXT4_SUPER_MAGIC, ... */
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "rdma-common.h" /* rc_now_ns */

/*
 * Dirty data the receiver lets pile up before it waits for the disk. It
 * starts writeback of every chunk as soon as it is written and, once more
 * than this is in flight, waits for the oldest part. Without this the page
 * cache absorbs gigabytes at network speed and the final fsync then takes
 * minutes, longer than the sender waits for COMMITTED; with it a disk
 * slower than the network slows the sender down through the credits.
 */
#define WRITEBACK_LAG (64ull << 20)

/* A fresh random temporary name for NAME: .NAME.XXXXXXXX.part. */
static void pick_tmp_name(struct xfer_sink *s)
{
	uint32_t rnd;

	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
		rnd = (uint32_t)rc_now_ns() ^ (uint32_t)getpid() * 2654435761u;
	/* At most 1 + 200 + 1 + 8 + 5 bytes: fits NAME_MAX. */
	snprintf(s->tmp, sizeof(s->tmp), ".%.200s.%08x.part", s->name, rnd);
}

/*
 * An O_TMPFILE file gets its name at the commit through /proc/self/fd/N:
 * linkat(AT_FDCWD, "/proc/self/fd/N", dirfd, NAME, AT_SYMLINK_FOLLOW)
 * follows the magic link to the open file and needs no privilege on any
 * kernel (open(2) shows this very call). The other form, linkat(fd, "",
 * dirfd, NAME, AT_EMPTY_PATH), is refused with ENOENT before Linux 6.10
 * (6.1 here) without CAP_DAC_READ_SEARCH; since 6.10 (fs/namei.c,
 * path_init's LOOKUP_LINKAT_EMPTY) it also works when the caller's
 * credentials are the ones that opened fd. Hence /proc, on all of them.
 */
static int link_unnamed(struct xfer_sink *s, const char *name)
{
	char proc[32];

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", s->fd);
	return linkat(AT_FDCWD, proc, s->dirfd, name, AT_SYMLINK_FOLLOW) ? -errno : 0;
}

/*
 * O_TMPFILE where the file system has it: the file has no name until the
 * commit links one, so a receiver that dies leaves nothing. Without
 * O_EXCL, so that it can be linked. 1 if we have one, 0 if this file
 * system or kernel cannot (s->how says why), a negative errno otherwise.
 */
static int open_unnamed(struct xfer_sink *s)
{
	char proc[32];
	struct stat st;
	int ret;

	s->fd = openat(s->dirfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0666);
	if (s->fd < 0) {
		ret = errno;
		/* EOPNOTSUPP: the file system lacks it (9p, NFS, overlayfs
		 * on 6.1); EISDIR or EINVAL: a kernel that does not know the
		 * flag. Other errors (EACCES, ENOSPC) are the directory's. */
		if (ret != EOPNOTSUPP && ret != EISDIR && ret != EINVAL)
			return -ret;
		snprintf(s->how, sizeof(s->how), "O_TMPFILE: %s", strerror(ret));
		return 0;
	}
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", s->fd);
	if (stat(proc, &st)) {
		/* No /proc: the commit could not link it (see link_unnamed). */
		snprintf(s->how, sizeof(s->how), "O_TMPFILE: no %s to link it by: %s", proc,
			 strerror(errno));
		close(s->fd);
		s->fd = -1;
		return 0;
	}
	s->unnamed = true;
	snprintf(s->how, sizeof(s->how), "%s", "O_TMPFILE (nothing is left if the receiver dies)");
	return 1;
}

/* The fallback: a named temporary file, created exclusively. */
static int open_named(struct xfer_sink *s)
{
	char why[96];
	int i;

	for (i = 0; i < 100; i++) {
		pick_tmp_name(s);
		/* O_EXCL: a new file, never someone else's; O_NOFOLLOW: never
		 * through a symlink planted under this name. */
		s->fd = openat(s->dirfd, s->tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			       0666);
		if (s->fd >= 0 || errno != EEXIST)
			break;
	}
	if (s->fd < 0)
		return -errno;
	s->have_tmp = true;
	snprintf(why, sizeof(why), "%.90s", s->how);
	snprintf(s->how, sizeof(s->how),
		 "temporary file %s (%s; a receiver killed now leaves it behind)", s->tmp, why);
	return 0;
}

int xfer_sink_open(struct xfer_sink *s, int dirfd, const char *name, unsigned flags, char *err,
		   size_t errlen)
{
	struct stat st;
	int ret;

	memset(s, 0, sizeof(*s));
	s->dirfd = dirfd;
	s->fd = -1;
	s->force = flags & XFER_SINK_FORCE;
	snprintf(s->name, sizeof(s->name), "%s", name);
	/* AT_SYMLINK_NOFOLLOW: look at the entry itself, never where a
	 * symlink points. This check only gives an early, clear answer; the
	 * no-replace link or rename at the end is what really protects NAME. */
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (!s->force) {
			snprintf(err, errlen, "'%s' exists; use -f to overwrite it", name);
			return -EEXIST;
		}
		if (!S_ISREG(st.st_mode)) {
			snprintf(err, errlen, "'%s' exists and is %s; refusing to replace it", name,
				 S_ISLNK(st.st_mode)   ? "a symbolic link"
				 : S_ISDIR(st.st_mode) ? "a directory"
						       : "not a regular file");
			return -EEXIST;
		}
	} else if (errno != ENOENT) {
		ret = errno;
		snprintf(err, errlen, "cannot look at '%s': %s", name, strerror(ret));
		return -ret;
	}
	if (flags & XFER_SINK_NAMED_TMP)
		snprintf(s->how, sizeof(s->how), "%s", "O_TMPFILE not tried");
	ret = flags & XFER_SINK_NAMED_TMP ? 0 : open_unnamed(s);
	if (ret == 0)
		ret = open_named(s);
	if (ret < 0) {
		snprintf(err, errlen, "cannot create a temporary file next to '%s': %s%s", name,
			 strerror(-ret),
			 ret == -EACCES || ret == -EROFS ? " (is the directory writable?)" : "");
		return ret;
	}
	return 0;
}

/* The file being written, for messages. */
static const char *shown(const struct xfer_sink *s)
{
	return s->unnamed ? "the O_TMPFILE file" : s->tmp;
}

/* A failed pwrite, fsync or writeback, in words. */
static int write_error(struct xfer_sink *s, int ret, const char *what, uint64_t off, char *err,
		       size_t errlen)
{
	snprintf(err, errlen, "%s '%s' at offset %" PRIu64 ": %s%s", what, shown(s), off,
		 strerror(ret), ret == ENOSPC || ret == EDQUOT ? " (disk full)" : "");
	return -ret;
}

/* sync_file_range, where "not supported here" (tmpfs, pipes, some network
 * file systems) is not an error. */
static int writeback(struct xfer_sink *s, uint64_t off, uint64_t len, unsigned flags)
{
	if (sync_file_range(s->fd, (off_t)off, (off_t)len, flags) == 0)
		return 0;
	if (errno == EINVAL || errno == ESPIPE || errno == ENOSYS || errno == EOPNOTSUPP)
		return 0;
	return errno;
}

/*
 * Start writeback of [off, off + len) now, and wait for the part
 * WRITEBACK_LAG behind. An error here must be reported here: the kernel
 * hands a writeback error to the first caller that waits (this one), and
 * the fsync at the end would not see it again.
 */
static int bound_dirty(struct xfer_sink *s, uint64_t off, uint64_t len, char *err, size_t errlen)
{
	uint64_t end = off + len, upto;
	int ret;

	if (end > s->written_end)
		s->written_end = end;
	ret = writeback(s, off, len, SYNC_FILE_RANGE_WRITE);
	if (!ret && end > s->flushed + 2 * WRITEBACK_LAG) {
		upto = end - WRITEBACK_LAG;
		ret = writeback(s, s->flushed, upto - s->flushed,
				SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
					SYNC_FILE_RANGE_WAIT_AFTER);
		s->flushed = upto;
	}
	if (ret)
		return write_error(s, ret, "writing back", off, err, errlen);
	return 0;
}

/* Stop writing with O_DIRECT (the rest goes through the page cache). */
static void end_direct(struct xfer_sink *s, const char *why)
{
	int fl = fcntl(s->fd, F_GETFL);

	if (fl >= 0)
		fcntl(s->fd, F_SETFL, fl & ~O_DIRECT);
	s->direct = false;
	if (why)
		snprintf(s->direct_why, sizeof(s->direct_why), "%s", why);
}

static bool aligned(uint64_t v)
{
	return v % XFER_DIRECT_ALIGN == 0;
}

/*
 * Did the first direct write really bypass the page cache? ext4 writes
 * through it, without an error, when a file cannot take direct I/O
 * (ext4_dio_supported: data=journal, encrypted or verity files). So look
 * once: the page written must not be in the page cache (mincore). NULL if
 * it is not, else why O_DIRECT is given up.
 */
static const char *not_bypassed(const struct xfer_sink *s, uint64_t off)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	unsigned char in = 0;
	void *m = mmap(NULL, page, PROT_READ, MAP_SHARED, s->fd, (off_t)(off - off % page));
	int ret;

	if (m == MAP_FAILED)
		return "cannot check that O_DIRECT bypassed the page cache (mmap failed)";
	ret = mincore(m, page, &in);
	munmap(m, page);
	if (ret)
		return "cannot check that O_DIRECT bypassed the page cache (mincore failed)";
	return in & 1 ? "a write with O_DIRECT went through the page cache all the same (this "
			"file cannot take direct I/O)"
		      : NULL;
}

int xfer_sink_write(struct xfer_sink *s, const void *buf, size_t len, uint64_t off, char *err,
		    size_t errlen)
{
	const uint8_t *p = buf;
	size_t done = 0;
	bool direct;
	ssize_t n;

	/* A piece O_DIRECT cannot take (the file's short last chunk): from
	 * here on the page cache, as without --direct. */
	if (s->direct && !(aligned((uintptr_t)p) && aligned(off) && aligned(len)))
		end_direct(s, NULL);
	while (done < len) {
		direct = s->direct;
		n = pwrite(s->fd, p + done, len - done, (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (direct && (n < 0 ? errno == EINVAL : !aligned((uint64_t)n))) {
			/* The file system refused this direct write, or wrote an
			 * unaligned part: the rest through the page cache. */
			end_direct(s, n < 0 ? "a write with O_DIRECT failed: Invalid argument"
					    : "a write with O_DIRECT was cut short");
			if (n < 0)
				continue;
		}
		if (n <= 0)
			return write_error(s, n < 0 ? errno : ENOSPC, "writing", off + done, err,
					   errlen);
		if (direct && !s->direct_checked) {
			const char *why = not_bypassed(s, off + done);

			s->direct_checked = true;
			if (why) {
				end_direct(s, why);
				direct = false;
			}
		}
		done += (size_t)n;
		if (direct)
			s->direct_bytes += (uint64_t)n;
	}
	/* Direct writes leave no dirty pages to bound. */
	return s->direct ? 0 : bound_dirty(s, off, len, err, errlen);
}

static void unplace(struct xfer_sink *s)
{
	xfer_win_release(&s->win[0]);
	xfer_win_release(&s->win[1]);
}

int xfer_sink_sync(struct xfer_sink *s, uint64_t size, char *err, size_t errlen)
{
	struct stat st;
	int ret;

	/* In place: the NIC is done with the windows; the dirty pages stay
	 * in the page cache for the fsync below. */
	unplace(s);
	/* The data must be on disk before the name points at it: otherwise a
	 * crash after the rename could leave NAME with missing blocks. */
	if (fsync(s->fd)) {
		ret = errno;
		snprintf(err, errlen, "fsync '%s': %s%s", shown(s), strerror(ret),
			 ret == ENOSPC || ret == EDQUOT ? " (disk full)" : "");
		return -ret;
	}
	if (fstat(s->fd, &st)) {
		ret = errno;
		snprintf(err, errlen, "fstat '%s': %s", shown(s), strerror(ret));
		return -ret;
	}
	if ((uint64_t)st.st_size != size) {
		snprintf(err, errlen, "'%s' has %" PRIu64 " bytes on disk, expected %" PRIu64,
			 shown(s), (uint64_t)st.st_size, size);
		return -EIO;
	}
	return 0;
}

/* Rename tmp to name without ever replacing an existing name. */
static int rename_noreplace(int dirfd, const char *tmp, const char *name)
{
	if (renameat2(dirfd, tmp, dirfd, name, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP)
		return -errno;
	/* The file system lacks RENAME_NOREPLACE: a hard link is just as
	 * exclusive (EEXIST if the name exists), then drop the temp name. */
	if (linkat(dirfd, tmp, dirfd, name, 0))
		return -errno;
	unlinkat(dirfd, tmp, 0);
	return 0;
}

/*
 * -f over an existing NAME, for an O_TMPFILE file: a link never replaces,
 * so link the file under a fresh temporary name, then rename(2) that over
 * NAME, which swaps atomically (readers see the old file or the new one,
 * never neither). Only a receiver killed between these two calls leaves
 * the temporary name behind.
 */
static int link_then_rename(struct xfer_sink *s)
{
	int i, ret = -EEXIST;

	for (i = 0; i < 100 && ret == -EEXIST; i++) {
		pick_tmp_name(s);
		ret = link_unnamed(s, s->tmp);
	}
	if (ret)
		return ret;
	s->have_tmp = true; /* xfer_sink_abort removes it if the rename fails */
	if (renameat(s->dirfd, s->tmp, s->dirfd, s->name))
		return -errno;
	s->have_tmp = false;
	snprintf(s->how, sizeof(s->how), "linked from O_TMPFILE as %s, renamed over the old file",
		 s->tmp);
	return 0;
}

/* Give the O_TMPFILE file its name, then close it. */
static int commit_unnamed(struct xfer_sink *s)
{
	int ret;

	/* A link fails with EEXIST if NAME exists, even one created during
	 * the transfer: the no-replace rule without -f. */
	ret = link_unnamed(s, s->name);
	if (!ret)
		snprintf(s->how, sizeof(s->how), "%s", "linked from O_TMPFILE");
	else if (ret == -EEXIST && s->force)
		ret = link_then_rename(s);
	if (ret)
		return ret;
	/* The data was fsync'd before the link, so close cannot lose any
	 * of it now, and nothing it reported could undo the link. */
	close(s->fd);
	s->fd = -1;
	s->unnamed = false;
	return 0;
}

/* Rename the (closed) named temporary file into place. */
static int commit_named(struct xfer_sink *s)
{
	int ret;

	/* -f: rename(2) replaces NAME atomically (readers see the old file or
	 * the new one, never a mix). A symlink NAME is replaced itself; its
	 * target is never touched. */
	if (s->force)
		ret = renameat(s->dirfd, s->tmp, s->dirfd, s->name) ? -errno : 0;
	else
		ret = rename_noreplace(s->dirfd, s->tmp, s->name);
	if (ret)
		return ret;
	s->have_tmp = false;
	snprintf(s->how, sizeof(s->how), "renamed from %s", s->tmp);
	return 0;
}

int xfer_sink_commit(struct xfer_sink *s, char *err, size_t errlen)
{
	bool unnamed = s->unnamed;
	int ret;

	if (unnamed) {
		ret = commit_unnamed(s);
	} else {
		if (close(s->fd)) {
			ret = errno;
			s->fd = -1;
			snprintf(err, errlen, "close '%s': %s", s->tmp, strerror(ret));
			return -ret;
		}
		s->fd = -1;
		ret = commit_named(s);
	}
	if (ret) {
		snprintf(err, errlen, "cannot %s the received file to '%s': %s%s",
			 unnamed ? "link" : "rename", s->name, strerror(-ret),
			 ret == -EEXIST ? " (it was created during the transfer; use -f to "
					  "overwrite)"
					: "");
		return ret;
	}
	/* The new name itself must survive a crash too. */
	if (fsync(s->dirfd)) {
		ret = errno;
		snprintf(err, errlen, "fsync of the directory after naming '%s': %s", s->name,
			 strerror(ret));
		return -ret;
	}
	return 0;
}

void xfer_sink_abort(struct xfer_sink *s)
{
	unplace(s);
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	/* An O_TMPFILE file goes with its last descriptor. */
	s->unnamed = false;
	if (s->have_tmp)
		unlinkat(s->dirfd, s->tmp, 0);
	s->have_tmp = false;
}

/* ------------------------------------------------------------------ */
/* In place                                                            */
/* ------------------------------------------------------------------ */

/* Map and register window idx writable into its slot (idx % 2). */
static int place_map(struct xfer_sink *s, uint64_t idx, char *err, size_t errlen)
{
	struct xfer_win *w = &s->win[idx % 2];
	uint64_t off, len;
	int ret;

	xfer_win_range(s->size, s->chunk, s->win_chunks, idx, sysconf(_SC_PAGESIZE), &off, &len);
	ret = xfer_win_map(w, idx, s->fd, PROT_READ | PROT_WRITE, s->pd, s->access, off, len, err,
			   errlen);
	if (!ret && s->log)
		rc_trace(s->log,
			 "registered window %" PRIu64 " of %s: %" PRIu64 " bytes at offset %" PRIu64
			 ", access 0x%x (in place: %s), lkey=0x%x",
			 idx, shown(s), w->map_len, w->map_off, s->access, s->kind,
			 w->buf.mr->lkey);
	return ret;
}

/*
 * --direct on the copy path: O_DIRECT on the file, where it bypasses the
 * page cache: ext4, xfs and btrfs (a block device's file systems). Not on
 * tmpfs (its pages are the file: since 6.6 it takes O_DIRECT and copies
 * all the same), overlayfs (whatever is below it) or network file
 * systems (a copy into their messages).
 */
static void try_direct(struct xfer_sink *s)
{
	struct statfs fs;
	int fl;

	if (s->inplace) {
		snprintf(s->direct_why, sizeof(s->direct_why), "%s",
			 "in place: the NIC writes the file itself");
		return;
	}
	if (fstatfs(s->fd, &fs)) {
		snprintf(s->direct_why, sizeof(s->direct_why), "fstatfs: %s", strerror(errno));
		return;
	}
	if (fs.f_type != EXT4_SUPER_MAGIC && fs.f_type != XFS_SUPER_MAGIC &&
	    fs.f_type != BTRFS_SUPER_MAGIC) {
		snprintf(s->direct_why, sizeof(s->direct_why),
			 "used on ext4, xfs and btrfs only, where it bypasses the page cache "
			 "(this file system's type is 0x%lx)",
			 (unsigned long)fs.f_type);
		return;
	}
	if (!aligned(s->chunk)) {
		snprintf(s->direct_why, sizeof(s->direct_why),
			 "the chunk size (%u bytes) is not a multiple of %u", s->chunk,
			 XFER_DIRECT_ALIGN);
		return;
	}
	/* EINVAL: no direct I/O here after all (e.g. ext4 with data=journal). */
	fl = fcntl(s->fd, F_GETFL);
	if (fl < 0 || fcntl(s->fd, F_SETFL, fl | O_DIRECT)) {
		snprintf(s->direct_why, sizeof(s->direct_why),
			 "this file system refuses O_DIRECT: %s", strerror(errno));
		return;
	}
	s->direct = true;
}

static void choose_path(struct xfer_sink *s, unsigned flags, int extra_access)
{
	const char *ring = xfer_ring_reason(flags);
	struct statfs fs;
	int ret;

	if (ring) {
		snprintf(s->why, sizeof(s->why), "%s", ring);
		return;
	}
	if (!s->size) {
		snprintf(s->why, sizeof(s->why), "%s", "an empty file has nothing to map");
		return;
	}
	if (fstatfs(s->fd, &fs)) {
		snprintf(s->why, sizeof(s->why), "fstatfs: %s", strerror(errno));
		return;
	}
	if (fs.f_type != TMPFS_MAGIC) {
		snprintf(s->why, sizeof(s->why), "%s",
			 "not tmpfs: a pinned writable mapping of this file system's pages would "
			 "bypass its dirty tracking");
		return;
	}
	s->kind = "tmpfs";
	s->access = IBV_ACCESS_LOCAL_WRITE | extra_access;
	/* The windows are locked memory, like the ring: within the limit. */
	s->win_chunks = xfer_win_chunks(s->size, s->chunk, s->depth);
	if (xfer_win_budget(s->size, s->chunk, s->depth, s->more, &s->win_chunks, s->why,
			    sizeof(s->why)))
		return;
	/* The whole size now: the windows map it, the NIC writes into it. */
	if (ftruncate(s->fd, (off_t)s->size)) {
		snprintf(s->why, sizeof(s->why), "ftruncate to %" PRIu64 " bytes: %s", s->size,
			 strerror(errno));
		return;
	}
	ret = place_map(s, 0, s->why, sizeof(s->why));
	if (ret) {
		/* The copy path pwrites every byte from offset 0 on. */
		if (ftruncate(s->fd, 0))
			snprintf(s->why + strlen(s->why), sizeof(s->why) - strlen(s->why),
				 "; ftruncate back to 0: %s", strerror(errno));
		return;
	}
	s->inplace = true;
}

void xfer_sink_choose(struct xfer_sink *s, struct ibv_pd *pd, unsigned flags, int extra_access,
		      uint64_t size, uint32_t chunk, uint16_t depth, uint64_t more,
		      const struct rc_log *log)
{
	s->chosen = true;
	s->inplace = false;
	s->pd = pd;
	s->size = size;
	s->chunk = chunk;
	s->depth = depth;
	s->more = more;
	s->log = log;
	s->win[0] = (struct xfer_win){ .idx = UINT64_MAX };
	s->win[1] = (struct xfer_win){ .idx = UINT64_MAX };
	choose_path(s, flags, extra_access);
	if (flags & XFER_CHOOSE_DIRECT)
		try_direct(s);
}

const char *xfer_sink_path(const struct xfer_sink *s, char *buf, size_t len)
{
	const char *why = s->chosen ? s->why : "not chosen";

	if (s->inplace)
		snprintf(buf, len, "NIC -> page cache (in place: %s)", s->kind);
	else if (s->direct)
		snprintf(buf, len, "ring -> pwrite with O_DIRECT (copy: %s)", why);
	else if (s->direct_why[0])
		snprintf(buf, len, "ring -> pwrite (copy: %s; not O_DIRECT: %s)", why,
			 s->direct_why);
	else
		snprintf(buf, len, "ring -> pwrite (copy: %s)", why);
	return buf;
}

const char *xfer_sink_copies(const struct xfer_sink *s, char *buf, size_t len)
{
	if (s->inplace)
		snprintf(buf, len, "in place: none");
	else if (s->direct_bytes)
		snprintf(buf, len, "pwrite from the ring; %" PRIu64 " more with O_DIRECT",
			 s->direct_bytes);
	else
		snprintf(buf, len, "pwrite from the ring");
	return buf;
}

/* In place: the next window when its turn comes (xfer_win_turn). */
int xfer_sink_place(struct xfer_sink *s, uint64_t seq, char *err, size_t errlen)
{
	uint64_t next = xfer_win_turn(seq, s->size, s->chunk, s->depth, s->win_chunks);
	uint32_t len = xfer_chunk_len(s->size, s->chunk, seq);
	char why[RC_ERR_LEN];
	int ret;

	if (next != UINT64_MAX) {
		ret = place_map(s, next, why, sizeof(why));
		if (ret) {
			snprintf(err, errlen, "cannot register window %" PRIu64 " of %s: %s", next,
				 shown(s), why);
			return ret;
		}
	}
	if (s->win[(seq / s->win_chunks) % 2].idx != seq / s->win_chunks) {
		snprintf(err, errlen, "internal error: chunk %" PRIu64 " has no window", seq);
		return -EINVAL;
	}
	/* As the pwrite path does: start writeback, bounded (a no-op on tmpfs). */
	return bound_dirty(s, seq * s->chunk, len, err, errlen);
}

void xfer_sink_where(struct xfer_sink *s, uint64_t seq, struct rc_buf *ring, struct rc_buf **b,
		     size_t *off)
{
	xfer_win_where(s->inplace ? s->win : NULL, s->win_chunks, seq, s->chunk, s->depth, ring, b,
		       off);
}

const uint8_t *xfer_sink_mapped(const struct xfer_sink *s, uint64_t seq)
{
	const struct xfer_win *w = &s->win[(seq / s->win_chunks) % 2];

	return w->map + (seq * s->chunk - w->map_off);
}
