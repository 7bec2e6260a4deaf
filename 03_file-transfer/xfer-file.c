// SPDX-License-Identifier: MIT
/*
 * xfer-file.c - 03's files: which names the server accepts, the checksum,
 * the temporary file a receiver writes and renames into place, and the
 * sender's reads. See xfer-file.h.
 */
#define _GNU_SOURCE
#include "xfer-file.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "rdma-common.h" /* rc_now_ns */

/* ------------------------------------------------------------------ */
/* Names                                                               */
/* ------------------------------------------------------------------ */

static bool is_tmp_name(const char *name, size_t len)
{
	return len >= 6 && name[0] == '.' && !memcmp(name + len - 5, ".part", 5);
}

int xfer_name_check(const char *name, size_t len, char *err, size_t errlen)
{
	size_t i;

	if (len == 0) {
		snprintf(err, errlen, "%s", "empty file name");
		return -EINVAL;
	}
	if (len > XFER_NAME_MAX) {
		snprintf(err, errlen, "name of %zu bytes; at most %d are allowed", len,
			 XFER_NAME_MAX);
		return -EINVAL;
	}
	if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.')) {
		snprintf(err, errlen, "'%.*s' is not a file name", (int)len, name);
		return -EINVAL;
	}
	for (i = 0; i < len; i++) {
		if (name[i] == '/') {
			snprintf(err, errlen, "%s",
				 "the name contains '/': only plain file names inside the "
				 "server's directory are allowed");
			return -EINVAL;
		}
		if (name[i] == '\0') {
			snprintf(err, errlen, "%s", "the name contains a NUL byte");
			return -EINVAL;
		}
		/* Not illegal for the file system, but they would garble
		 * logs and terminals that print the name. */
		if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f) {
			snprintf(err, errlen, "%s", "the name contains control characters");
			return -EINVAL;
		}
	}
	if (is_tmp_name(name, len)) {
		snprintf(err, errlen, "%s",
			 "names of the form .*.part are reserved for files being received");
		return -EINVAL;
	}
	return 0;
}

void xfer_quote(char *out, size_t outlen, const char *s, size_t len)
{
	size_t o = 0, i;

	for (i = 0; i < len && i < 80 && o + 5 < outlen; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (ch >= 0x20 && ch < 0x7f && ch != '\\' && ch != '\'')
			out[o++] = (char)ch;
		else
			o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", ch);
	}
	if (i < len && o + 4 <= outlen) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o < outlen ? o : outlen - 1] = '\0';
}

/* ------------------------------------------------------------------ */
/* Checksum                                                            */
/* ------------------------------------------------------------------ */

/*
 * XXH3-128 streams at several GB/s per core (far more with the library's
 * SIMD paths), so hashing each chunk while it is in the cache, once on
 * each side, costs much less than the copy between the page cache and the
 * ring. It detects corruption, not tampering: it is not a cryptographic
 * hash (use SHA-256 or an AEAD when the peer may be hostile).
 */
int xfer_hash_init(struct xfer_hash *h)
{
	h->state = XXH3_createState();
	if (!h->state)
		return -ENOMEM;
	if (XXH3_128bits_reset(h->state) != XXH_OK) {
		xfer_hash_free(h);
		return -EINVAL;
	}
	return 0;
}

void xfer_hash_update(struct xfer_hash *h, const void *p, size_t len)
{
	if (len)
		XXH3_128bits_update(h->state, p, len);
}

void xfer_hash_final(struct xfer_hash *h, uint8_t out[XFER_HASH_LEN])
{
	XXH128_canonical_t c;

	XXH128_canonicalFromHash(&c, XXH3_128bits_digest(h->state));
	memcpy(out, c.digest, XFER_HASH_LEN);
}

void xfer_hash_free(struct xfer_hash *h)
{
	if (h->state)
		XXH3_freeState(h->state);
	h->state = NULL;
}

void xfer_hash_hex(const uint8_t d[XFER_HASH_LEN], char out[2 * XFER_HASH_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	int i;

	for (i = 0; i < XFER_HASH_LEN; i++) {
		out[2 * i] = hex[d[i] >> 4];
		out[2 * i + 1] = hex[d[i] & 15];
	}
	out[2 * XFER_HASH_LEN] = '\0';
}

/* ------------------------------------------------------------------ */
/* Files                                                               */
/* ------------------------------------------------------------------ */

/*
 * Dirty data the receiver lets pile up before it waits for the disk. It
 * starts writeback of every chunk as soon as it is written and, once more
 * than this is in flight, waits for the oldest part. Without this the page
 * cache absorbs gigabytes at network speed and the final fsync then takes
 * minutes, longer than the sender waits for COMMITTED; with it a disk
 * slower than the network slows the sender down through the credits.
 */
#define WRITEBACK_LAG (64ull << 20)

int xfer_sink_open(struct xfer_sink *s, int dirfd, const char *name, bool force, char *err,
		   size_t errlen)
{
	struct stat st;
	uint32_t rnd;
	int i, ret;

	memset(s, 0, sizeof(*s));
	s->dirfd = dirfd;
	s->fd = -1;
	s->force = force;
	snprintf(s->name, sizeof(s->name), "%s", name);
	/* AT_SYMLINK_NOFOLLOW: look at the entry itself, never where a
	 * symlink points. This check only gives an early, clear answer; the
	 * no-replace rename at the end is what really protects NAME. */
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (!force) {
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
	for (i = 0; i < 100; i++) {
		if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
			rnd = (uint32_t)rc_now_ns() ^ (uint32_t)getpid() * 2654435761u;
		/* At most 1 + 200 + 1 + 8 + 5 bytes: fits NAME_MAX. */
		snprintf(s->tmp, sizeof(s->tmp), ".%.200s.%08x.part", name, rnd);
		/* O_EXCL: a new file, never someone else's; O_NOFOLLOW: never
		 * through a symlink planted under this name. */
		s->fd = openat(dirfd, s->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			       0666);
		if (s->fd >= 0 || errno != EEXIST)
			break;
	}
	if (s->fd < 0) {
		ret = errno;
		snprintf(err, errlen, "cannot create a temporary file next to '%s': %s%s", name,
			 strerror(ret),
			 ret == EACCES || ret == EROFS ? " (is the directory writable?)" : "");
		return -ret;
	}
	s->have_tmp = true;
	return 0;
}

/* A failed pwrite, fsync or writeback, in words. */
static int write_error(struct xfer_sink *s, int ret, const char *what, uint64_t off, char *err,
		       size_t errlen)
{
	snprintf(err, errlen, "%s '%s' at offset %" PRIu64 ": %s%s", what, s->tmp, off,
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

int xfer_sink_write(struct xfer_sink *s, const void *buf, size_t len, uint64_t off, char *err,
		    size_t errlen)
{
	const uint8_t *p = buf;
	uint64_t end = off + len, upto;
	size_t done = 0;
	ssize_t n;
	int ret;

	while (done < len) {
		n = pwrite(s->fd, p + done, len - done, (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return write_error(s, n < 0 ? errno : ENOSPC, "writing", off + done, err,
					   errlen);
		done += (size_t)n;
	}
	if (end > s->written_end)
		s->written_end = end;
	/*
	 * Start writeback of this chunk now, and wait for the part
	 * WRITEBACK_LAG behind. An error here must be reported here: the
	 * kernel hands a writeback error to the first caller that waits
	 * (this one), and the fsync at the end would not see it again.
	 */
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

int xfer_sink_sync(struct xfer_sink *s, uint64_t size, char *err, size_t errlen)
{
	struct stat st;
	int ret;

	/* The data must be on disk before the name points at it: otherwise a
	 * crash after the rename could leave NAME with missing blocks. */
	if (fsync(s->fd)) {
		ret = errno;
		snprintf(err, errlen, "fsync '%s': %s%s", s->tmp, strerror(ret),
			 ret == ENOSPC || ret == EDQUOT ? " (disk full)" : "");
		return -ret;
	}
	if (fstat(s->fd, &st)) {
		ret = errno;
		snprintf(err, errlen, "fstat '%s': %s", s->tmp, strerror(ret));
		return -ret;
	}
	if ((uint64_t)st.st_size != size) {
		snprintf(err, errlen, "'%s' has %" PRIu64 " bytes on disk, expected %" PRIu64,
			 s->tmp, (uint64_t)st.st_size, size);
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

int xfer_sink_commit(struct xfer_sink *s, char *err, size_t errlen)
{
	int ret;

	if (close(s->fd)) {
		ret = errno;
		s->fd = -1;
		snprintf(err, errlen, "close '%s': %s", s->tmp, strerror(ret));
		return -ret;
	}
	s->fd = -1;
	/* -f: rename(2) replaces NAME atomically (readers see the old file or
	 * the new one, never a mix). A symlink NAME is replaced itself; its
	 * target is never touched. */
	if (s->force)
		ret = renameat(s->dirfd, s->tmp, s->dirfd, s->name) ? -errno : 0;
	else
		ret = rename_noreplace(s->dirfd, s->tmp, s->name);
	if (ret) {
		snprintf(err, errlen, "cannot rename the received file to '%s': %s%s", s->name,
			 strerror(-ret),
			 ret == -EEXIST ? " (it was created during the transfer; use -f to "
					  "overwrite)"
					: "");
		return ret;
	}
	s->have_tmp = false;
	/* The rename itself must survive a crash too. */
	if (fsync(s->dirfd)) {
		ret = errno;
		snprintf(err, errlen, "fsync of the directory after renaming to '%s': %s", s->name,
			 strerror(ret));
		return -ret;
	}
	return 0;
}

void xfer_sink_abort(struct xfer_sink *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	if (s->have_tmp)
		unlinkat(s->dirfd, s->tmp, 0);
	s->have_tmp = false;
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
