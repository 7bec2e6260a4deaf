/* SPDX-License-Identifier: MIT */
/*
 * lessons.h - 01's --inject lessons (lessons.c): what the client does
 * wrong on purpose, and the server's part in it, with the few hooks that
 * client.c and server.c call.
 *
 *   no-recv      the server posts no receive before the client's SEND
 *   sq-overflow  one ibv_post_send of more SENDs than the send queue holds
 *   arm-late     the CQ armed after the reply arrived, then a sleep on the
 *                channel without polling once more (the client's alone)
 */
#ifndef BASIC_LESSONS_H
#define BASIC_LESSONS_H

#include <stdint.h>

#include "basic.h"

/* Exit code of a lesson that showed what it teaches. */
#define BASIC_EXIT_LESSON 4

/* The rnr_retry_count the server accepts no-recv with: the CM gives it to
 * the client's QP (the REP carries it), so its SEND fails after this many
 * retries instead of RC_RNR_RETRY_COUNT. */
#define LESSON_RNR_RETRY 2

/* The HELLO's lesson byte for --inject lesson: 0 for arm-late, a lesson
 * of the client's alone (the server answers as for any client). */
uint8_t lesson_hello_byte(unsigned lesson);

/* The side's next completion, within --timeout: 0, a failed completion
 * -EIO, -ECONNRESET when the peer has left, or another negative errno. */
typedef int lesson_next_wc_fn(void *side, struct ibv_wc *wc);

/* What a lesson uses of client.c's or server.c's connection (each keeps
 * its own objects and its own next_wc). */
struct lesson_conn {
	struct rdma_cm_id *id; /* connected: its QP, device and port */
	uint8_t *buf;	       /* client: registered (mr), room for one message */
	struct ibv_mr *mr;
	struct rc_log *log;   /* -v trace and the last error */
	int timeout_ms;	      /* client: --timeout */
	unsigned max_send_wr; /* client: what rdma_create_qp was asked for */
	lesson_next_wc_fn *next_wc;
	void *side;
};

/* Client: after connecting, run the lesson o->inject on id's QP, with mr
 * (room for one message of o->size bytes) and max_send_wr, what
 * rdma_create_qp was asked for. 0 when it showed what it teaches, else a
 * negative errno with log->err set. */
int lesson_client_run(const struct client_opts *o, unsigned max_send_wr, struct rdma_cm_id *id,
		      struct ibv_mr *mr, struct rc_log *log, lesson_next_wc_fn *next_wc,
		      void *side);

/* The server's side of one lesson client. */
struct lesson_server {
	struct lesson_conn v;
	uint8_t lesson;	    /* from the HELLO: enum basic_inject */
	const char *peer;   /* "ADDR port N" */
	uint64_t rnr_sent0; /* send_rnr_err before accepting */
	int have_rnr;	    /* read it: 1, the counter is missing: 0 */
	unsigned posted;    /* sq-overflow: receives posted */
	unsigned took;	    /* sq-overflow: empty SENDs taken */
};

/* The rnr_retry_count to accept a client running lesson with. */
uint8_t lesson_server_rnr_retry(unsigned lesson);
/* Before rdma_accept, on the connection's id with its QP (ls->lesson set
 * from the HELLO): post what the lesson wants posted (no-recv: nothing;
 * sq-overflow: empty receives). 0 or a negative errno with log->err. */
int lesson_server_setup(struct lesson_server *ls, struct rdma_cm_id *id, struct rc_log *log,
			const char *peer);
/* After ESTABLISHED: the lesson's part, until the client disconnects.
 * 0, or a negative errno with log->err set. */
int lesson_server_run(struct lesson_server *ls, lesson_next_wc_fn *next_wc, void *side);

#endif /* BASIC_LESSONS_H */
