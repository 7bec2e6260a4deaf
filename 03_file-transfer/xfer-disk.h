/* SPDX-License-Identifier: MIT */
/*
 * xfer-disk.h - 03's disk thread: file I/O and checksum beside the verbs
 * calls.
 */
#ifndef XFER_DISK_H
#define XFER_DISK_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdma-common.h"
#include "xfer-file.h"

/* ------------------------------------------------------------------ */
/* The disk thread: file I/O and checksum beside the verbs calls.      */
/* ------------------------------------------------------------------ */

/*
 * Why a second thread: each side must copy every chunk between the file
 * and its ring (pread or pwrite) and checksum it, and on one thread that
 * work and the verbs calls take turns: while the thread copies, it posts
 * nothing. (Soft-RoCE is worse: it does the NIC's work inside
 * ibv_post_send, on the same thread.) So one disk thread per transfer
 * does the copies and the checksum, chunk after chunk, strictly in order
 * (the checksum is a stream), while the main thread keeps every verbs
 * call: posting, polling, the control messages.
 *
 * The hand-over is two counters under a mutex. The main thread says how
 * many chunks the disk thread may handle (allowed: their slot is free, or
 * their data has arrived); the disk thread says how many it has handled
 * (done) and writes an eventfd, which rc_next_wc() watches as the
 * connection's wake_fd, so a main thread waiting for a completion wakes
 * up for the disk's news too. The mutex also orders the memory: what the
 * disk thread read into a slot is visible to the main thread that posts
 * it, and the reverse.
 */
typedef int (*xfer_disk_fn)(void *arg, uint64_t seq, char *err, size_t errlen);

struct xfer_disk {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct rc_conn *c; /* whose wake_fd is ours while we run */
	int efd;	   /* the eventfd */
	bool running;	   /* the thread exists (and must be joined) */
	xfer_disk_fn fn;   /* handles chunk seq, on the disk thread */
	void *arg;
	uint64_t n; /* chunks in the transfer */
	/* Under lock: */
	uint64_t allowed; /* main -> disk: chunks it may handle */
	uint64_t done;	  /* disk -> main: chunks handled */
	bool stop;	  /* main -> disk: stop before the next chunk */
	int err;	  /* disk -> main: fn's negative errno, message in why */
	char why[RC_ERR_LEN];
};

/* Start the thread for chunks 0..n-1, of which the first `allowed` may be
 * handled at once; fn(arg, seq, ...) returns 0 or a negative errno with a
 * message. Sets c->wake_fd. 0, or a negative errno with err set. */
int xfer_disk_start(struct xfer_disk *d, struct rc_conn *c, uint64_t n, uint64_t allowed,
		    xfer_disk_fn fn, void *arg, char *err, size_t errlen);
/* Main thread: chunks below `allowed` may be handled (never lowers it). */
void xfer_disk_allow(struct xfer_disk *d, uint64_t allowed);
/* Main thread: *done = chunks handled so far; or fn's error, with its
 * message in why. */
int xfer_disk_done(struct xfer_disk *d, uint64_t *done, char *why, size_t whylen);
/* Stop after the chunk in hand, join, release, clear c->wake_fd. Safe on
 * a zeroed struct and twice; call before anything else touches the file. */
void xfer_disk_stop(struct xfer_disk *d);

/*
 * What the disk thread does on either side: chunk k is slot k % depth of
 * the ring and bytes [k * chunk, +len) of the file. The sender reads it
 * from the file into the slot (the one CPU copy on that side), the
 * receiver writes it from the slot to the temporary file; both hash it
 * while it is in the cache.
 */
struct xfer_io {
	uint8_t *ring;
	uint32_t chunk;
	uint16_t depth;
	uint64_t size;
	int fd;			  /* sender: the file */
	struct xfer_sink *sink;	  /* receiver: the temporary file */
	struct xfer_hash *hash;	  /* the disk thread's while it runs */
	const struct rc_log *log; /* for the -v trace */
	const char *who;	  /* "client" or "server", for messages */
	const char *name;	  /* the file, quoted, for messages */
};

/* xfer_disk_fn's for an xfer_io: file -> slot, and slot -> file. */
int xfer_io_read(void *io, uint64_t seq, char *err, size_t errlen);
int xfer_io_write(void *io, uint64_t seq, char *err, size_t errlen);

#endif /* XFER_DISK_H */
