/* SPDX-License-Identifier: MIT */
/*
 * xfer-file.h - 03's files: the rules for file names, the checksum, the
 * temporary file a receiver commits, and reading a file in full.
 */
#ifndef XFER_FILE_H
#define XFER_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xfer-msg.h"

/* ------------------------------------------------------------------ */
/* Names.                                                             */
/* ------------------------------------------------------------------ */

/*
 * Is name[0..len) a plain file name the server may use inside its root
 * directory? Refuses: empty, longer than 255 bytes, "." and "..", any '/',
 * NUL or control character, and names of our temporary files (.*.part).
 * 0 or -EINVAL with the reason in err.
 */
int xfer_name_check(const char *name, size_t len, char *err, size_t errlen);

/* Quote an untrusted name for messages: printable bytes as is, others as
 * \xNN, at most about 80 input bytes. */
void xfer_quote(char *out, size_t outlen, const char *s, size_t len);

/* ------------------------------------------------------------------ */
/* Checksum: XXH3-128 (libxxhash), streamed chunk by chunk.            */
/* ------------------------------------------------------------------ */

struct xfer_hash {
	void *state; /* XXH3_state_t, allocated by the library (aligned) */
};

int xfer_hash_init(struct xfer_hash *h);
void xfer_hash_update(struct xfer_hash *h, const void *p, size_t len);
/* The digest in canonical (big-endian) byte order, as xxhsum -H2 prints it. */
void xfer_hash_final(struct xfer_hash *h, uint8_t out[XFER_HASH_LEN]);
void xfer_hash_free(struct xfer_hash *h);
void xfer_hash_hex(const uint8_t d[XFER_HASH_LEN], char out[2 * XFER_HASH_LEN + 1]);

/* ------------------------------------------------------------------ */
/* Files.                                                              */
/* ------------------------------------------------------------------ */

/*
 * The receiving end of a transfer: a temporary file ".NAME.XXXXXXXX.part"
 * in the destination directory, renamed over NAME only once the data is on
 * disk and verified. Until then NAME is untouched, and every failure path
 * ends in xfer_sink_abort(), which removes the temporary file.
 */
struct xfer_sink {
	int dirfd; /* borrowed */
	int fd;	   /* -1 when closed */
	bool force;
	bool have_tmp; /* the temporary file exists */
	char name[XFER_NAME_MAX + 1];
	char tmp[XFER_NAME_MAX + 1];
	uint64_t written_end; /* highest offset written */
	uint64_t flushed;     /* writeback waited for up to here */
};

/* Refuse an existing NAME unless force (and then only a regular file),
 * then create the temporary file. 0 or a negative errno with err set. */
int xfer_sink_open(struct xfer_sink *s, int dirfd, const char *name, bool force, char *err,
		   size_t errlen);
/* pwrite all of buf at off, and keep the dirty data bounded (see xfer-file.c). */
int xfer_sink_write(struct xfer_sink *s, const void *buf, size_t len, uint64_t off, char *err,
		    size_t errlen);
/* fsync, and check that the file has exactly `size` bytes. */
int xfer_sink_sync(struct xfer_sink *s, uint64_t size, char *err, size_t errlen);
/* Rename into place (without force: never over an existing file, even
 * one created meanwhile), then fsync the directory. */
int xfer_sink_commit(struct xfer_sink *s, char *err, size_t errlen);
/* Close and remove the temporary file, if any. Safe to call twice. */
void xfer_sink_abort(struct xfer_sink *s);

/* pread exactly len bytes at off (a short read means the file shrank). */
int xfer_read_full(int fd, void *buf, size_t len, uint64_t off, char *err, size_t errlen);

#endif /* XFER_FILE_H */
