/* SPDX-License-Identifier: MIT */
/*
 * client.h - what 02's client (client.c), its atomics (client-atomic.c)
 * and its --inject lessons (lessons.c, lessons-atomic.c) share: the
 * client's state and the steps they reuse.
 */
#ifndef RW_CLIENT_H
#define RW_CLIENT_H

#include "rc-json.h"
#include "rw.h"

/* wr_id: control messages 1 to 3; data WR number i is WR_DATA + i. */
enum { WR_RECV_CTRL = 1, WR_SEND_DONE = 2, WR_RECV_CTRL2 = 3 };
#define WR_DATA 1000u

/* What one phase (all WRITEs or all READs) achieved, for --json. */
struct phase_result {
	bool done;
	uint64_t ns;
	unsigned depth;
};

/* How the originals an atomic returns are ordered, measured on the first
 * one (client-atomic.c). */
enum atomic_order {
	ORDER_UNMEASURED, /* --shared: the word's value before us is not known */
	ORDER_SAME,	  /* its 8 bytes in the order they lie in the server's memory */
	ORDER_REVERSED,	  /* the other way round */
};

/* --op fetch-add and cmp-swap (client-atomic.c). */
struct atomic_run {
	enum ibv_atomic_cap cap; /* our device's */
	struct rc_buf *orig;	 /* 8 bytes per atomic in flight: the originals land here */
	unsigned depth;		 /* atomics in flight */
	enum atomic_order order;
	uint64_t first;	    /* the first original: the word before our atomics */
	uint64_t prev;	    /* the original checked last */
	uint64_t expect;    /* the word's value at the end (--shared: the least) */
	uint64_t final;	    /* the server's RESULT: the word's value then */
	uint64_t count, ns; /* atomics timed, and how long they took */
	bool done, have_final;
};

struct client {
	struct rw_client_opts opt;
	struct rc_conn conn;
	struct rc_buf *ctrl_rx, *ctrl_tx; /* control messages */
	struct rc_buf *src, *dst;	  /* WRITE from src, READ into dst */
	struct rw_mr usrc, udst;	  /* --inject unaligned: what src and dst are */
	struct rw_buf remote;		  /* what the server advertised */
	struct rw_buf remote2;		  /* --inject dereg-other: the deregistered MR */
	uint32_t size;			  /* bytes per operation */
	uint32_t piece_max;		  /* largest WR: both ports' max_msg_sz */
	uint8_t read_ask;		  /* initiator_depth we connect with */
	unsigned read_depth;		  /* READs in flight, as negotiated */
	unsigned qp_read_depth;		  /* our QP's max_rd_atomic */
	uint64_t seed;			  /* of the pattern we write */
	struct ibv_send_wr *wrs;	  /* one chain of up to DEPTH WRs */
	struct ibv_sge *sges;
	struct phase_result write, read; /* for --json */
	struct atomic_run at;		 /* --op fetch-add or cmp-swap */
	bool have_sum, verified;
	uint64_t sum;
	char lesson_saw[160]; /* --inject: what the lesson saw, in a few words */
};

/* Data WR number idx into cl->wrs[slot]: piece idx % pieces of the
 * operation, from or into `local`, signalled as rw_is_signaled says. */
void build_wr(struct client *cl, unsigned slot, enum ibv_wr_opcode op, struct rc_buf *local,
	      uint64_t idx, uint64_t total, unsigned every);
/* Post cl->wrs[0..n) as one chain, take the next completion and check it
 * is the next signalled WR after `done` (wr_id id0 + index, set in *next). */
int post_and_reap(struct client *cl, unsigned n, enum ibv_wc_opcode want, uint64_t id0,
		  uint64_t done, uint64_t total, unsigned every, uint64_t *next);
/* WRITE, READ back, compare, and compare checksums with the server. */
int transfer(struct client *cl);
/* Send DONE with our checksum (atomics: the word's value we expect);
 * receive the server's RESULT. */
int exchange_sums(struct client *cl, uint64_t sum, struct rw_sum *result);

/*
 * The atomics (client-atomic.c). atomic_check_device: our device's
 * atomic_cap, before connecting (IBV_ATOMIC_NONE: a clear error).
 * atomic_check_buf: what BUF says of the word (shared or not) against
 * --shared. atomic_alloc: the buffer the originals land in.
 * atomic_transfer: the atomics, every original checked, and the word's
 * final value with the server's RESULT. json_atomic: --json's "atomic".
 */
int atomic_check_device(struct client *cl);
int atomic_check_buf(struct client *cl);
int atomic_alloc(struct client *cl);
int atomic_transfer(struct client *cl);
void json_atomic(struct rc_json *j, const struct client *cl);
/* Are these the 8 bytes of the server's fresh word, in either order? */
bool atomic_is_fresh_word(const uint8_t raw[RW_WORD]);
/* One atomic WR into cl->wrs[slot], its original into slot `oslot` of
 * at.orig: fetch-add of compare_add, or compare-and-swap, at raddr. */
void build_atomic_wr(struct client *cl, unsigned slot, enum ibv_wr_opcode op, unsigned oslot,
		     uint64_t raddr, uint64_t compare_add, uint64_t swap, uint64_t wr_id,
		     bool signaled);

/*
 * Run the lesson cl->opt.inject after BUF (lessons.c). Returns 1 if it
 * showed what it teaches (exit RW_EXIT_LESSON), or a negative errno with
 * the reason in the log when something else happened.
 */
int run_lesson(struct client *cl);
/* The atomic lessons (lessons-atomic.c), called by run_lesson. */
int lesson_atomic_unaligned(struct client *cl);
int lesson_atomic_no_access(struct client *cl);

#endif /* RW_CLIENT_H */
