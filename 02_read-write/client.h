/* SPDX-License-Identifier: MIT */
/*
 * client.h - what 02's client (client.c) and its --inject lessons
 * (lessons.c) share: the client's state and the steps the lessons reuse.
 */
#ifndef RW_CLIENT_H
#define RW_CLIENT_H

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
	bool have_sum, verified;
	uint64_t sum;
	char lesson_saw[160]; /* --inject: what the lesson saw, in a few words */
};

/* Data WR number idx into cl->wrs[slot]: piece idx % pieces of the
 * operation, from or into `local`, signalled as rw_is_signaled says. */
void build_wr(struct client *cl, unsigned slot, enum ibv_wr_opcode op, struct rc_buf *local,
	      uint64_t idx, uint64_t total, unsigned every);
/* WRITE, READ back, compare, and compare checksums with the server. */
int transfer(struct client *cl);

/*
 * Run the lesson cl->opt.inject after BUF (lessons.c). Returns 1 if it
 * showed what it teaches (exit RW_EXIT_LESSON), or a negative errno with
 * the reason in the log when something else happened.
 */
int run_lesson(struct client *cl);

#endif /* RW_CLIENT_H */
