/* SPDX-License-Identifier: MIT */
/*
 * xfer-src.h - 03's source side: where the bytes of each chunk come from.
 *
 * Two paths. Copy: pread each chunk into its slot of the registered ring
 * (one CPU copy), hash the slot, the NIC reads the slot. Zero-copy: map
 * the file MAP_SHARED PROT_READ in windows, register each window (the NIC
 * reads the page cache itself), hash the mapping. The zero-copy path is
 * taken where the kernel and the file allow it, else the copy path, with
 * one line that says why (xfer_src_path).
 */
#ifndef XFER_SRC_H
#define XFER_SRC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include <infiniband/verbs.h>

#include "rdma-common.h"
#include "xfer-hash.h"

/* How much of the file one window maps, unless the ring needs more. */
#define XFER_WIN_BYTES (64ull << 20)

/* ------------------------------------------------------------------ */
/* Window arithmetic (pure: unit-tested without a device).             */
/* ------------------------------------------------------------------ */

/*
 * Chunks per window: XFER_WIN_BYTES worth, but at least 2 x depth (so the
 * next window is registered at least depth chunks before it is needed,
 * and the old one is released only once its last WRITE completed: see
 * xfer-src.c), and never more than the file has (one window then).
 */
uint64_t xfer_win_chunks(uint64_t size, uint32_t chunk, uint16_t depth);

/*
 * May we pin the windows within the locked-memory limit `limit` (bytes,
 * RLIM_INFINITY for none) of which `locked` is in use already? Shrinks
 * *win_chunks if a smaller window still keeps 2 x depth chunks. 0, or
 * -ENOMEM with the reason in why.
 */
int xfer_win_fit(uint64_t size, uint32_t chunk, uint16_t depth, uint64_t limit, uint64_t locked,
		 uint64_t *win_chunks, char *why, size_t whylen);

/* xfer_win_fit against this process's `ulimit -l`, where the kernel
 * applies it (not with CAP_IPC_LOCK), less what it has pinned already
 * (VmPin) and `more` bytes it will register besides. */
int xfer_win_budget(uint64_t size, uint32_t chunk, uint16_t depth, uint64_t more,
		    uint64_t *win_chunks, char *why, size_t whylen);

/* The window to register while chunk seq is handled, replacing the one
 * two before it, or UINT64_MAX for none (the rule: xfer-src.c). The
 * source and an in-place receiver both follow it. */
uint64_t xfer_win_turn(uint64_t seq, uint64_t size, uint32_t chunk, uint16_t depth,
		       uint64_t win_chunks);

/* The page-aligned file range [*off, *off + *len) that maps window w. */
void xfer_win_range(uint64_t size, uint32_t chunk, uint64_t win_chunks, uint64_t w, long page,
		    uint64_t *off, uint64_t *len);

/* ------------------------------------------------------------------ */
/* The source                                                          */
/* ------------------------------------------------------------------ */

struct xfer_win {
	uint64_t idx; /* which window; UINT64_MAX: none */
	uint8_t *map; /* MAP_SHARED of the file at map_off */
	uint64_t map_off, map_len;
	struct rc_buf buf; /* map and its MR, for rc_post_rdma (not on any list) */
};

/* Map [off, off + len) of fd MAP_SHARED with prot and register it with
 * access, as window idx into w (whatever w held is released first). 0 or
 * a negative errno with the refused call in err; w is then empty. The
 * source maps PROT_READ, a receiver in place PROT_READ | PROT_WRITE. */
int xfer_win_map(struct xfer_win *w, uint64_t idx, int fd, int prot, struct ibv_pd *pd, int access,
		 uint64_t off, uint64_t len, char *err, size_t errlen);
/* Where chunk seq is for the NIC: in window seq / win_chunks of the two
 * in win, or with win NULL in the ring's slot seq % depth. */
void xfer_win_where(struct xfer_win win[2], uint64_t win_chunks, uint64_t seq, uint32_t chunk,
		    uint16_t depth, struct rc_buf *ring, struct rc_buf **b, size_t *off);
/* Deregister and unmap; w is empty after. Safe on an empty window. */
void xfer_win_release(struct xfer_win *w);

struct xfer_src {
	int fd; /* borrowed */
	uint64_t size;
	uint32_t chunk;
	uint16_t depth;
	struct stat st0; /* when the transfer began */
	bool chosen;	 /* xfer_src_choose ran: zerocopy and why are the answer */
	bool zerocopy;
	char why[200]; /* copy path: why not zero-copy */
	struct ibv_pd *pd;
	int access;		  /* of the windows' MRs */
	const struct rc_log *log; /* -v: each window's registration, the second look */
	uint64_t win_chunks;	  /* chunks per window */
	struct xfer_win win[2];
	unsigned rehash_threads; /* xfer_src_verify's second look: threads that ran (-v) */
	/* Test hook (RDMA_XFER_TEST_PAUSE=SEQ:PATH): after chunk SEQ, create
	 * PATH and wait (at most 30 s) until it is removed. */
	uint64_t pause_seq;
	const char *pause_path;
};

/* Take fd (a regular file of `size` bytes, already fstat'ed into st). */
void xfer_src_init(struct xfer_src *s, int fd, const struct stat *st, uint32_t chunk,
		   uint16_t depth);

/*
 * Why a side may take its ring where the page cache could serve
 * (xfer_src_choose's and xfer_sink_choose's flags).
 */
enum {
	XFER_CHOOSE_COPY = 1,	/* --copy: the ring, never the page cache */
	XFER_CHOOSE_DIRECT = 2, /* the receiver's --direct: pwrite with O_DIRECT */
	/* Soft-RoCE and no --zero-copy: the ring. rdma_rxe moves every byte
	 * with the CPU anyway, and pinning the page cache measured slower
	 * there than the ring's copy (docs/performance.md). */
	XFER_CHOOSE_SOFT = 4,
};

/* The flags from the options that apply to this side (--copy wins over
 * --zero-copy), --direct and the device's vendor id. */
unsigned xfer_choose_flags(bool copy, bool zero_copy, bool direct, uint32_t vendor_id);
/* NULL if the flags let a side try the page cache, else why not. */
const char *xfer_ring_reason(unsigned flags);

/*
 * Choose the path: unless flags say the ring (XFER_CHOOSE_COPY or
 * XFER_CHOOSE_SOFT), map and register the first window
 * with `access` (0: put's WRITE source; IBV_ACCESS_REMOTE_READ: get's),
 * within the locked-memory limit, less what the process has pinned
 * already (VmPin) and `more`, the bytes the caller will register besides
 * the windows. Never fails: a refusal selects the copy path and says why
 * in s->why. log (may be NULL): where -v traces each window.
 */
void xfer_src_choose(struct xfer_src *s, struct ibv_pd *pd, int access, unsigned flags,
		     uint64_t more, const struct rc_log *log);

/* "page cache -> NIC (zero-copy)" or "pread -> ring (copy: WHY)". */
const char *xfer_src_path(const struct xfer_src *s, char *buf, size_t len);

/*
 * The disk thread's work for chunk seq: zero-copy, register the next
 * window when its turn comes; copy, pread it into `slot`. The caller must
 * allow chunk seq only after the WRITE (or READ) of chunk seq - depth
 * completed. 0, or a negative errno with err set ("source changed during
 * transfer" if the file shrank under us).
 */
int xfer_src_read(struct xfer_src *s, uint64_t seq, uint8_t *slot, char *err, size_t errlen);
/* A hashing thread's work for chunk seq, after xfer_src_read: its
 * XXH3-128 in the slot (copy) or in the mapping (zero-copy; a SIGBUS is
 * "source changed during transfer"). 0 or a negative errno with err. */
int xfer_src_digest(struct xfer_src *s, uint64_t seq, const uint8_t *slot,
		    uint8_t out[XFER_HASH_LEN], char *err, size_t errlen);

/* Where chunk seq's bytes are for the NIC: the ring's slot (copy) or the
 * window (zero-copy). Main thread, once the disk thread has handled seq. */
void xfer_src_where(struct xfer_src *s, uint64_t seq, struct rc_buf *ring, struct rc_buf **b,
		    size_t *off);

/*
 * Once every chunk is hashed and sent (a put's client: after the last
 * WRITE completed; a get's server: once the last CHUNK is announced, its
 * READs perhaps still under way, where the client's digest of each chunk
 * catches a later change): is the file still what we sent? `sent` is
 * the top digest of what was hashed. The zero-copy path hashes the file
 * again, each window's chunks shared by up to `threads` threads (the
 * transfer's --hash-threads; s->rehash_threads says how many ran). 0, or -EIO
 * with "source changed during transfer: ..." in err. See xfer-src.c for what each path
 * can and cannot see.
 */
int xfer_src_verify(struct xfer_src *s, const uint8_t sent[XFER_HASH_LEN], unsigned threads,
		    char *err, size_t errlen);

/* pread exactly len bytes at off (a short read means the file shrank). */
int xfer_read_full(int fd, void *buf, size_t len, uint64_t off, char *err, size_t errlen);

/* Deregister and unmap the windows. Safe on a zeroed struct and twice. */
void xfer_src_release(struct xfer_src *s);

/* XXH3-128 of p[0..len) of a file mapping; a SIGBUS (the file shrank
 * under the mapping) returns -EFAULT instead of killing the process. */
int xfer_digest_mapped(const void *p, size_t len, uint8_t out[XFER_HASH_LEN]);

#endif /* XFER_SRC_H */
