/* SPDX-License-Identifier: MIT */
/*
 * xfer-hash.h - 03's integrity: XXH3-128 of each chunk, computed by a
 * small pool of threads, and the file's digest over the chunk digests.
 *
 * Why per chunk: one XXH3 stream over the whole file is a chain, so one
 * core computes it, chunk after chunk. Digests of separate chunks can be
 * computed at once on several cores, and a chunk whose digest differs can
 * be named. The file's digest ("top digest") is XXH3-128 over the
 * sequence of chunk digests, each in canonical (big-endian) byte order,
 * folded in chunk order: it does not depend on how many threads ran.
 */
#ifndef XFER_HASH_H
#define XFER_HASH_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdma-common.h"
#include "xfer-msg.h"

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
/* CPU time of the threads of a transfer.                              */
/* ------------------------------------------------------------------ */

/* User and system CPU time, in microseconds (getrusage). */
struct xfer_cpu {
	uint64_t user_us, sys_us;
};

/* Add to *c the CPU time the calling thread has used since it started
 * (RUSAGE_THREAD), or the whole process with every thread, the ended
 * ones included (RUSAGE_SELF). Each worker thread adds its own as it
 * ends, since no other thread can ask for it (xfer-disk.h). */
void xfer_cpu_add(struct xfer_cpu *c, int who);

/* ------------------------------------------------------------------ */
/* Per chunk, on a pool of threads.                                    */
/* ------------------------------------------------------------------ */

#define XFER_DEF_HASH_THREADS 2
#define XFER_MAX_HASH_THREADS 16

/* XXH3-128 of p[0..len), canonical (big-endian) bytes. */
void xfer_chunk_digest(const void *p, size_t len, uint8_t out[XFER_HASH_LEN]);

/* "chunk N (bytes A..B) differs: the sender hashed X, the receiver Y". */
void xfer_chunk_differs(char *out, size_t outlen, uint64_t seq, uint64_t size, uint32_t chunk,
			const uint8_t sender[XFER_HASH_LEN], const uint8_t receiver[XFER_HASH_LEN]);

/* Hash chunk seq into out, on a pool thread. 0 or a negative errno with
 * err set. Called for different chunks at once from several threads. */
typedef int (*xfer_hash_fn)(void *arg, uint64_t seq, uint8_t out[XFER_HASH_LEN], char *err,
			    size_t errlen);

struct xfer_hslot {
	uint64_t seq;  /* which chunk this slot holds (UINT64_MAX: none) */
	bool hashed;   /* digest is seq's, not yet folded */
	bool expected; /* expect is the sender's digest of seq */
	bool kept;     /* digest is seq's, folded: xfer_hpool_digest may read it */
	uint8_t digest[XFER_HASH_LEN];
	uint8_t expect[XFER_HASH_LEN];
};

/*
 * The pool. The caller submits chunks in order once their bytes are in
 * place (xfer_hpool_ready); the threads hash them, any order, at most
 * `depth` beyond the last one folded; the chunks are folded into the top
 * digest strictly in order, and `done` counts them. A chunk whose digest
 * differs from the one the sender announced (xfer_hpool_expect) stops the
 * pool with "chunk N (bytes A..B) differs". Each advance of `done`, and
 * an error, writes efd (if not -1), so a main thread waiting in
 * rc_next_wc wakes up.
 */
struct xfer_hpool {
	pthread_t thread[XFER_MAX_HASH_THREADS];
	unsigned nthreads; /* started: to join */
	bool running;	   /* lock, cond and top exist */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int efd;
	xfer_hash_fn fn;
	void *arg;
	uint64_t n, size; /* chunks and bytes of the transfer */
	uint32_t chunk;
	uint32_t nslots; /* 2 x depth: the digests stay readable a while */
	uint16_t depth;
	bool started;	 /* xfer_hpool_start succeeded (stays set) */
	bool have_final; /* final is the top digest */
	/* Chunk seq in slot[seq % nslots]; inline, so the digests stay
	 * readable after stop (the last CREDITs arrive after it). */
	struct xfer_hslot slot[2 * XFER_MAX_DEPTH];
	struct xfer_hash top;
	/* Under lock: */
	uint64_t ready; /* chunks the threads may hash */
	uint64_t next;	/* the next chunk a thread takes */
	uint64_t done;	/* chunks hashed, checked and folded, in order */
	bool stop;
	int err;
	char why[RC_ERR_LEN];
	uint8_t final[XFER_HASH_LEN]; /* the top digest, once done == n */
	struct xfer_cpu cpu;	      /* of the threads that ended (all, once stopped) */
};

/*
 * Start nthreads (1..XFER_MAX_HASH_THREADS) threads for chunks 0..n-1 of
 * a `size`-byte transfer in `chunk`-byte chunks, with at most depth in
 * hand at once. 0, or a negative errno with err set (nothing left
 * running).
 */
int xfer_hpool_start(struct xfer_hpool *p, unsigned nthreads, uint64_t size, uint32_t chunk,
		     uint16_t depth, xfer_hash_fn fn, void *arg, int efd, char *err, size_t errlen);
/* Chunks below `ready` have their bytes in place (never lowers it). */
void xfer_hpool_ready(struct xfer_hpool *p, uint64_t ready);
/* The sender's digest of chunk seq, to compare when it is hashed: call
 * before xfer_hpool_ready covers seq. */
void xfer_hpool_expect(struct xfer_hpool *p, uint64_t seq, const uint8_t d[XFER_HASH_LEN]);
/* *done = chunks folded so far; or the pool's error, message in why. */
int xfer_hpool_done(struct xfer_hpool *p, uint64_t *done, char *why, size_t whylen);
/* What a worker thread (the pool's, the disk thread) reports under its
 * lock: *done = *done_in, and its error (why copied) or 0; the lock is
 * taken only while the thread runs. Shared by xfer-disk.c. */
int xfer_worker_outcome(pthread_mutex_t *lock, bool running, const uint64_t *done_in,
			const int *err_in, const char *why_in, uint64_t *done, char *why,
			size_t whylen);
/* The digest of chunk seq, folded not long ago (within 2 x depth of the
 * last one folded). 0, or -ENOENT. */
int xfer_hpool_digest(struct xfer_hpool *p, uint64_t seq, uint8_t out[XFER_HASH_LEN]);
/* The sender's check of a CREDIT: is `receiver`, the peer's digest of
 * chunk seq, ours? 0; -EIO with "chunk N (bytes A..B) differs: ...;
 * nothing was stored" in why; -ENOENT (no digest of seq kept: a bug). */
int xfer_hpool_check(struct xfer_hpool *p, uint64_t seq, const uint8_t receiver[XFER_HASH_LEN],
		     char *why, size_t whylen);
/* Once done == n: the top digest. -EAGAIN before. */
int xfer_hpool_top(struct xfer_hpool *p, uint8_t out[XFER_HASH_LEN]);
/* Stop after the chunks in hand, join every thread, free. Safe on a
 * zeroed struct and twice. */
void xfer_hpool_stop(struct xfer_hpool *p);

/*
 * The top digest of a whole buffer, directly: what the pool computes for
 * it (the reference of the unit tests, and the sender's second look at a
 * mapped file, chunk by chunk). start() / add(chunk digest) / end().
 */
int xfer_top_start(struct xfer_hash *top);
void xfer_top_add(struct xfer_hash *top, const uint8_t d[XFER_HASH_LEN]);
void xfer_top_end(struct xfer_hash *top, uint8_t out[XFER_HASH_LEN]);

#endif /* XFER_HASH_H */
