/* SPDX-License-Identifier: MIT */
/*
 * xfer-sink.h - 03's receiving end: the file a receiver writes (pwrite,
 * with bounded writeback), and how it gets its name once verified
 * (O_TMPFILE and a link, or a temporary .part file and a rename).
 */
#ifndef XFER_SINK_H
#define XFER_SINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "xfer-msg.h"
#include "xfer-src.h" /* struct xfer_win */

/*
 * The receiving end of a transfer: a file without a name (O_TMPFILE) in the
 * destination directory, linked as NAME only once the data is on disk and
 * verified, so a receiver killed at any moment leaves nothing. Where the
 * file system has no O_TMPFILE, a temporary file ".NAME.XXXXXXXX.part"
 * renamed over NAME instead (a receiver killed with SIGKILL leaves that one
 * behind). Until the commit NAME is untouched, and every failure path ends
 * in xfer_sink_abort(), which removes the temporary file.
 */
struct xfer_sink {
	int dirfd; /* borrowed */
	int fd;	   /* -1 when closed */
	bool force;
	bool unnamed;  /* fd is an O_TMPFILE file: nothing to remove but fd */
	bool have_tmp; /* the temporary file tmp exists */
	char name[XFER_NAME_MAX + 1];
	char tmp[XFER_NAME_MAX + 1];
	/* For -v: which kind of file, and after the commit how it got its
	 * name ("O_TMPFILE (nothing is left if the receiver dies)", ...). */
	char how[XFER_NAME_MAX + 160];
	uint64_t written_end; /* highest offset written */
	uint64_t flushed;     /* writeback waited for up to here */
	/* In place (xfer_sink_choose): the NIC writes the file's page cache
	 * through registered windows of a writable shared mapping. */
	bool chosen;
	bool inplace;
	const char *kind; /* in place: "tmpfs" */
	char why[240];	  /* copy path: why not in place */
	struct ibv_pd *pd;
	int access;
	uint64_t size, win_chunks, more;
	uint32_t chunk;
	uint16_t depth;
	const struct rc_log *log;
	struct xfer_win win[2];
	/* --direct on the copy path: fd has O_DIRECT, so pwrite hands the
	 * ring's pages to the device and the page cache keeps no copy. */
	bool direct;
	bool direct_checked;   /* the first direct write: seen to bypass the page cache */
	char direct_why[160];  /* --direct refused or given up: why */
	uint64_t direct_bytes; /* written with O_DIRECT */
};

/* O_DIRECT's alignment here: ring address, file offset and length, each a
 * multiple of 4096 (the largest logical block size in common use; the
 * ring's slots are page-aligned and -c is a multiple of 4 KiB). */
#define XFER_DIRECT_ALIGN 4096u

/* xfer_sink_open's flags. */
enum {
	XFER_SINK_FORCE = 1, /* -f: replace an existing regular file NAME */
	/* Skip O_TMPFILE and use the .NAME.XXXXXXXX.part file, as on a file
	 * system without O_TMPFILE. Only the unit tests set it. */
	XFER_SINK_NAMED_TMP = 2,
};

/* Refuse an existing NAME unless XFER_SINK_FORCE (and then only a regular
 * file), then create the temporary file. 0 or a negative errno with err
 * set. */
int xfer_sink_open(struct xfer_sink *s, int dirfd, const char *name, unsigned flags, char *err,
		   size_t errlen);
/* pwrite all of buf at off, and keep the dirty data bounded (see xfer-sink.c). */
int xfer_sink_write(struct xfer_sink *s, const void *buf, size_t len, uint64_t off, char *err,
		    size_t errlen);
/* fsync, and check that the file has exactly `size` bytes. */
int xfer_sink_sync(struct xfer_sink *s, uint64_t size, char *err, size_t errlen);
/* Link (O_TMPFILE) or rename into place (without force: never over an
 * existing file, even one created meanwhile), then fsync the directory. */
int xfer_sink_commit(struct xfer_sink *s, char *err, size_t errlen);
/* Close and remove the temporary file, if any. Safe to call twice. */
void xfer_sink_abort(struct xfer_sink *s);

/*
 * In place: once the size is known, may the NIC write this file's page
 * cache itself? On tmpfs, yes: its pages need no writeback, so a pinned
 * writable mapping is safe (registered with LOCAL_WRITE | extra_access).
 * On a file system that writes back, a long-term writable pin bypasses
 * its dirty tracking (Linux 6.5 and later refuse it, 6.1 allows it,
 * unsafely): the ring and pwrite. (ODP would make it safe; see 03's
 * README for why 03 does not use it.) Sets the file's size and registers
 * window 0; never fails: a refusal selects the copy path, with the reason
 * in s->why. flags: XFER_CHOOSE_*. more: bytes still to be registered.
 * With XFER_CHOOSE_DIRECT on the copy path, the file gets O_DIRECT where
 * its file system takes it (else s->direct_why says why not); the last
 * chunk, when shorter than the alignment allows, goes through the page
 * cache.
 */
void xfer_sink_choose(struct xfer_sink *s, struct ibv_pd *pd, unsigned flags, int extra_access,
		      uint64_t size, uint32_t chunk, uint16_t depth, uint64_t more,
		      const struct rc_log *log);
/* "NIC -> page cache (in place: tmpfs)", "ring -> pwrite (copy: WHY)" or
 * "ring -> pwrite with O_DIRECT (copy: WHY)". */
const char *xfer_sink_path(const struct xfer_sink *s, char *buf, size_t len);
/* What the receiver's CPU did with the file's bytes, for "copied by the
 * CPU: N file bytes (...)": "in place: none", "pwrite from the ring" or
 * "pwrite from the ring; M more with O_DIRECT". */
const char *xfer_sink_copies(const struct xfer_sink *s, char *buf, size_t len);
/*
 * The disk thread's work for chunk seq in place (its data is in the file
 * already): register the next window when its turn comes, start the
 * chunk's writeback. The caller lets the NIC write chunk seq + depth only
 * after this returned for seq and the chunk was hashed. 0 or a negative
 * errno with err.
 */
int xfer_sink_place(struct xfer_sink *s, uint64_t seq, char *err, size_t errlen);
/* Where the NIC puts chunk seq: the ring's slot (copy) or the window. */
void xfer_sink_where(struct xfer_sink *s, uint64_t seq, struct rc_buf *ring, struct rc_buf **b,
		     size_t *off);
/* In place: chunk seq's bytes in the mapping, for its hash. */
const uint8_t *xfer_sink_mapped(const struct xfer_sink *s, uint64_t seq);

#endif /* XFER_SINK_H */
