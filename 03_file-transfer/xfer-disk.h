/* SPDX-License-Identifier: MIT */
/*
 * xfer-disk.h - 03's disk thread: file I/O beside the verbs calls, and
 * the hashing threads it hands each chunk to.
 */
#ifndef XFER_DISK_H
#define XFER_DISK_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdma-common.h"
#include "xfer-hash.h"
#include "xfer-sink.h"
#include "xfer-src.h"

/* ------------------------------------------------------------------ */
/* The disk thread: file I/O and checksum beside the verbs calls.      */
/* ------------------------------------------------------------------ */

/*
 * Why a second thread: each side must copy every chunk between the file
 * and its ring (pread or pwrite) and checksum it, and on one thread that
 * work and the verbs calls take turns: while the thread copies, it posts
 * nothing. (Soft-RoCE is worse: it does the NIC's work inside
 * ibv_post_send, on the same thread.) So one disk thread per transfer
 * does the copies, chunk after chunk, strictly in order, and hands each
 * chunk to a small pool of hashing threads (xfer-hash.h), while the main
 * thread keeps every verbs call: posting, polling, the control messages.
 * A chunk counts as handled once it is copied and its digest computed,
 * checked and folded into the file's digest.
 *
 * The hand-over is two counters under a mutex. The main thread says how
 * many chunks the disk thread may handle (allowed: their slot is free, or
 * their data has arrived); the disk thread says how many it has copied,
 * the hashing threads how many are hashed in order (done), and whoever
 * has news for the main thread (a chunk handled, a failure) writes an
 * eventfd, which rc_next_wc() watches as the connection's wake_fd, so a
 * main thread waiting for a completion wakes up for it too. The mutex
 * also orders the memory: what the disk thread read into a slot is
 * visible to the main thread that posts it, and the reverse.
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
	uint64_t allowed;  /* main -> disk: chunks it may handle */
	uint64_t done;	   /* disk -> main: chunks copied */
	bool stop;	   /* main -> disk: stop before the next chunk */
	uint64_t busy_us;  /* disk: when it took the chunk in hand; 0: idle */
	uint64_t busy_seq; /* disk: that chunk */
	int err;	   /* disk -> main: fn's negative errno, message in why */
	char why[RC_ERR_LEN];
	struct xfer_hpool pool; /* the hashing threads (xfer_disk_start_hashed) */
	struct xfer_cpu cpu;	/* the disk thread's, once it ended */
};

/* Start the thread for chunks 0..n-1, of which the first `allowed` may be
 * handled at once; fn(arg, seq, ...) returns 0 or a negative errno with a
 * message. Sets c->wake_fd. 0, or a negative errno with err set. */
int xfer_disk_start(struct xfer_disk *d, struct rc_conn *c, uint64_t n, uint64_t allowed,
		    xfer_disk_fn fn, void *arg, char *err, size_t errlen);
/* The same, and a pool of `threads` hashing threads that run hfn(arg,
 * seq) on each chunk once fn is through with it; a chunk then counts as
 * handled once it is hashed and folded too (xfer_disk_done). */
struct xfer_hash_cfg {
	unsigned threads;
	uint64_t size;
	uint32_t chunk;
	uint16_t depth;
	xfer_hash_fn fn;
};
int xfer_disk_start_hashed(struct xfer_disk *d, struct rc_conn *c, uint64_t allowed,
			   xfer_disk_fn fn, void *arg, const struct xfer_hash_cfg *h, char *err,
			   size_t errlen);
/* Main thread: chunks below `allowed` may be handled (never lowers it).
 * After xfer_disk_stop: does nothing. */
void xfer_disk_allow(struct xfer_disk *d, uint64_t allowed);
/* Main thread: *done = chunks handled so far; or fn's error, with its
 * message in why. After xfer_disk_stop: what the thread left. */
int xfer_disk_done(struct xfer_disk *d, uint64_t *done, char *why, size_t whylen);
/* Stop after the chunk in hand, join (the hashing threads too), release,
 * clear c->wake_fd. Safe on a zeroed struct and twice; call before
 * anything else touches the file. The pool's digests stay readable. */
void xfer_disk_stop(struct xfer_disk *d);
/* After xfer_disk_stop: add to *c the CPU time of the disk thread and of
 * its hashing threads, each over its whole life (this transfer). */
void xfer_disk_cpu(const struct xfer_disk *d, struct xfer_cpu *c);

/*
 * What the disk thread does on either side: chunk k is slot k % depth of
 * the ring and bytes [k * chunk, +len) of the file. The sender reads it
 * from the file into the slot (the one CPU copy on that side) or, on the
 * zero-copy path, only hashes it in the registered mapping (xfer-src.h);
 * the receiver writes it from the slot to the temporary file. Then a
 * hashing thread computes its digest: of the slot, or of the mapping.
 */
struct xfer_io {
	uint8_t *ring; /* NULL: the sender's zero-copy path has none */
	uint32_t chunk;
	uint16_t depth;
	uint64_t size;
	struct xfer_src *src;	  /* sender: the file, copy or zero-copy */
	struct xfer_sink *sink;	  /* receiver: the temporary file */
	const struct rc_log *log; /* for the -v trace */
	const char *who;	  /* "client" or "server", for messages */
	const char *name;	  /* the file, quoted, for messages */
	uint64_t copied;	  /* file bytes the CPU copied (pread or pwrite) */
};

/* xfer_disk_fn's for an xfer_io: file -> slot, and slot -> file. */
int xfer_io_read(void *io, uint64_t seq, char *err, size_t errlen);
int xfer_io_write(void *io, uint64_t seq, char *err, size_t errlen);
/* xfer_hash_fn's: the sender's chunk (slot or mapping), the receiver's. */
int xfer_io_hash_src(void *io, uint64_t seq, uint8_t out[XFER_HASH_LEN], char *err, size_t errlen);
int xfer_io_hash_sink(void *io, uint64_t seq, uint8_t out[XFER_HASH_LEN], char *err, size_t errlen);

#endif /* XFER_DISK_H */
