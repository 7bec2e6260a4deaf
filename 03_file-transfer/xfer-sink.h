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

#include "xfer-msg.h"

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
};

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

#endif /* XFER_SINK_H */
