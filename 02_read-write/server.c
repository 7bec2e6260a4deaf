// SPDX-License-Identifier: MIT
/*
 * 02 rdma-server: give each client a registered buffer that the client
 * RDMA WRITEs and READs without this CPU taking part.
 *
 * What it shows, in order (see sequence.txt): on a CONNECT_REQUEST, read
 * the client's HELLO (how much memory, which operations, how many READs in
 * flight); register a buffer with only the access flags those operations
 * need; accept with responder_resources so that the client's READs are
 * allowed; SEND the buffer's address, rkey and length. Then post nothing
 * for the data: the client's WRITEs and READs are carried out by the NIC.
 * When the client SENDs DONE, checksum the buffer (proof that the WRITEs
 * landed) and reply with RESULT. Each client has its own thread, buffer
 * and memory region (rc_serve in common/): no client sees another's data.
 * A client that asks for atomics (--op fetch-add or cmp-swap) gets one
 * 8-byte word with REMOTE_ATOMIC, if this device does atomics at all
 * (check_atomic_cap); on DONE the server prints the word's value and
 * returns it in RESULT (atomic.c).
 * A client running an --inject lesson says so in its HELLO; for five of
 * them this side does its part and says so (alloc_data, lesson_dereg_other,
 * choose_read_depth, and setup's access flags).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomic.h"
#include "rc-server.h"
#include "rw.h"

/* wr_id of each work request this side posts. */
enum { WR_RECV_DONE = 1, WR_SEND_BUF = 2, WR_SEND_RESULT = 3, WR_PROBE = 4, WR_SEND_BUF2 = 5 };

struct session {
	struct rc_conn *c;
	const struct rw_server_opts *opt;
	struct rw_hello hello;
	uint32_t len;		/* this client's buffer */
	uint8_t read_depth;	/* the responder_resources we accept with */
	int access;		/* the buffer's access flags */
	struct rc_buf *data;	/* the buffer the client reads and writes */
	struct rw_mr udata;	/* lesson unaligned: what data is */
	uint32_t gone_rkey;	/* lesson dereg-other: the deregistered MR's rkey */
	struct rc_buf *ctrl_rx; /* DONE lands here */
	struct rc_buf *ctrl_tx; /* BUF at 0, RESULT at RW_CTRL_MAX */
	uint64_t checksum;	/* atomics: the word's value */
	bool mismatch;
	enum ibv_atomic_cap atomic_cap; /* atomics: this device's */
};

/* The client's buffer: page-aligned from rc_buf_alloc, or for the
 * unaligned lesson malloc'd at an odd address (rw_mr_unaligned). */
static int alloc_data(struct session *s)
{
	struct rc_conn *c = s->c;
	char why[160];
	int ret;

	if (s->hello.lesson != RW_INJECT_UNALIGNED)
		return rc_buf_alloc(c, s->len, s->access, &s->data);
	ret = rw_mr_unaligned(c->dev.pd, s->len, s->access, &s->udata, why, sizeof(why));
	if (ret)
		return rc_fail(&c->log, -ret, "%s", why);
	s->data = &s->udata.buf;
	printf("lesson unaligned for %s: its buffer is at %p (malloc'd, odd)\n", c->peer,
	       s->data->addr);
	return 0;
}

/* Lesson dereg-other: a second MR over the same bytes, deregistered at
 * once; its rkey goes to the client in a second BUF. */
static int lesson_dereg_other(struct session *s)
{
	struct rc_conn *c = s->c;
	struct ibv_mr *mr;

	mr = ibv_reg_mr(c->dev.pd, s->data->addr, s->len, s->access);
	if (!mr)
		return rc_fail(&c->log, errno, "ibv_reg_mr (second MR): %s", strerror(errno));
	s->gone_rkey = mr->rkey;
	if (ibv_dereg_mr(mr))
		return rc_fail(&c->log, errno, "ibv_dereg_mr (second MR): %s", strerror(errno));
	printf("lesson dereg-other for %s: registered its buffer again (rkey 0x%x) and "
	       "deregistered that MR; rkey 0x%x stays\n",
	       c->peer, s->gone_rkey, s->data->mr->rkey);
	return 0;
}

/* Everything the connection needs, before accepting it. */
static int setup(struct session *s)
{
	struct rc_conn *c = s->c;
	/* Sends: BUF (two for dereg-other), RESULT and a liveness probe,
	 * possibly all at once. Receives: DONE. The client's WRITEs and
	 * READs use none of these queues on this side: one-sided operations
	 * consume no WRs here. */
	struct ibv_qp_cap cap = {
		.max_send_wr = 4, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1
	};
	char flags[64];
	int ret;

	ret = rc_create_qp(c, &cap);
	if (ret)
		return ret;
	/* The buffer the client may access, with only the flags its
	 * operations need (rw_access_for): REMOTE_WRITE (+ LOCAL_WRITE, which
	 * the verbs require alongside it) for WRITE, REMOTE_READ for READ,
	 * REMOTE_ATOMIC (+ LOCAL_WRITE) for atomics, and only when asked. */
	s->access = rw_access_for(s->hello.ops);
	if (s->hello.lesson == RW_INJECT_NO_REMOTE_READ)
		s->access &= ~IBV_ACCESS_REMOTE_READ; /* the lesson: READ is refused */
	/* The lesson: the word registered as a buffer for WRITE and READ
	 * would be, without REMOTE_ATOMIC: its atomics are refused. */
	if (s->hello.lesson == RW_INJECT_ATOMIC_NO_ACCESS)
		s->access = rw_access_for(RW_OP_BOTH);
	rc_trace(&c->log, "buffer for the client: %u bytes, access %s", s->len,
		 rw_access_str(s->access, flags, sizeof(flags)));
	ret = alloc_data(s);
	if (ret)
		return ret;
	/* Fresh memory for every client, filled with a known pattern: a
	 * client reads this, never what an earlier client left behind. */
	rw_fill_pattern(s->data->addr, s->len, RW_SERVER_SEED);
	if (s->hello.lesson == RW_INJECT_DEREG_OTHER) {
		ret = lesson_dereg_other(s);
		if (ret)
			return ret;
	}
	/* DONE arrives here: the NIC writes it, so LOCAL_WRITE. */
	ret = rc_buf_alloc(c, RW_CTRL_MAX, IBV_ACCESS_LOCAL_WRITE, &s->ctrl_rx);
	if (ret)
		return ret;
	/* BUF and RESULT, a slot each: only read by the NIC, so no flags. */
	ret = rc_buf_alloc(c, 2 * RW_CTRL_MAX, 0, &s->ctrl_tx);
	if (ret)
		return ret;
	/* The receive for DONE, posted before accepting like every receive. */
	return rc_post_recv(c, s->ctrl_rx, 0, RW_CTRL_MAX, WR_RECV_DONE);
}

/*
 * How many RDMA READs from the client we will serve at once. The connect
 * request's responder_resources field is what the client asked for: its
 * initiator_depth (the CM reports it from our side of the connection).
 * It may not exceed our device's max_qp_rd_atom.
 */
static uint8_t choose_read_depth(struct session *s)
{
	struct rc_conn *c = s->c;
	uint8_t rr;

	if (!rw_ops_responder(s->hello.ops))
		return 0; /* no READs, no atomics: no responder resources */
	if (s->hello.lesson == RW_INJECT_NO_READ_DEPTH) {
		/* The lesson: accept what the client asked for, 0. */
		printf("lesson no-read-depth for %s: accepting with responder_resources 0 (its "
		       "initiator_depth is %u)\n",
		       c->peer, c->peer_responder_resources);
		return 0;
	}
	rr = c->peer_responder_resources;
	if (rr > s->hello.read_depth)
		rr = s->hello.read_depth;
	if (rr > c->dev.max_rd_atom)
		rr = c->dev.max_rd_atom;
	rc_trace(&c->log,
		 "client's initiator_depth %u, HELLO read depth %u, device max_qp_rd_atom %u: "
		 "responder_resources %u",
		 c->peer_responder_resources, s->hello.read_depth, c->dev.max_rd_atom, rr);
	return rr;
}

/* Tell the client where the buffer is and how it may use it. */
static int send_buf(struct session *s)
{
	struct rw_buf b = {
		.rb = { .addr = (uintptr_t)s->data->addr,
			.rkey = s->data->mr->rkey,
			.len = s->len },
		.max_msg_sz = s->c->dev.max_msg_sz,
		.ops = s->hello.ops,
		.read_depth = s->read_depth,
		.lesson = s->hello.lesson,
		.flags = 0, /* our word is this client's alone: never RW_BUF_SHARED */
	};
	size_t n = rw_buf_pack(s->ctrl_tx->addr, 0, &b);
	int ret;

	/* Signalled, like every send here: a completion for each, so the
	 * send queue never fills with finished WRs. */
	ret = rc_post_send(s->c, s->ctrl_tx, 0, n, WR_SEND_BUF, true);
	if (ret || s->hello.lesson != RW_INJECT_DEREG_OTHER)
		return ret;
	/* dereg-other: the same buffer, the deregistered MR's rkey. The
	 * RESULT slot is free until DONE, which this client never sends. */
	b.rb.rkey = s->gone_rkey;
	n = rw_buf_pack((uint8_t *)s->ctrl_tx->addr + RW_CTRL_MAX, 1, &b);
	return rc_post_send(s->c, s->ctrl_tx, RW_CTRL_MAX, n, WR_SEND_BUF2, true);
}

/* An atomic client is done: print the word's value (rw_word_done) and
 * answer with RESULT, which carries it. */
static int on_atomic_done(struct session *s, const struct rw_sum *done)
{
	struct rw_sum result;
	size_t n;
	int ret;

	ret = rw_word_done(s->c, s->data->addr, done, &s->checksum, &s->mismatch);
	if (ret)
		return ret;
	result = (struct rw_sum){ .checksum = s->checksum, .len = RW_WORD };
	n = rw_sum_pack((uint8_t *)s->ctrl_tx->addr + RW_CTRL_MAX, RW_T_RESULT, 1, &result);
	return rc_post_send(s->c, s->ctrl_tx, RW_CTRL_MAX, n, WR_SEND_RESULT, true);
}

/* The client is done: checksum the buffer and answer with RESULT. */
static int on_done(struct session *s, const struct ibv_wc *wc)
{
	struct rc_conn *c = s->c;
	struct rw_sum done, result;
	char why[160];
	size_t n;
	int ret;

	/* Validate before use: size from wc.byte_len, then every field. */
	ret = rw_sum_unpack(s->ctrl_rx->addr, wc->byte_len, RW_T_DONE, 1, &done, why, sizeof(why));
	if (ret)
		return rc_fail(&c->log, EPROTO, "bad DONE from the client: %s", why);
	if (rw_ops_atomic(s->hello.ops))
		return on_atomic_done(s, &done);
	if (done.len != s->len)
		return rc_fail(&c->log, EPROTO, "DONE is about %u bytes, the buffer has %u",
			       done.len, s->len);
	/* Nothing was posted on this side for the data: whatever the client
	 * wrote is simply in memory now. */
	s->checksum = rw_checksum(s->data->addr, s->len);
	s->mismatch = s->checksum != done.checksum;
	if (s->mismatch)
		printf("client %s done: %u bytes, checksum " RW_CHECKSUM_NAME " 0x%016" PRIx64
		       " DIFFERS from the client's 0x%016" PRIx64 "\n",
		       c->peer, s->len, s->checksum, done.checksum);
	else
		printf("client %s done: %u bytes, checksum " RW_CHECKSUM_NAME " 0x%016" PRIx64
		       ", the same as the client's\n",
		       c->peer, s->len, s->checksum);
	/* RESULT has a send slot of its own (BUF's may still be in use). */
	result = (struct rw_sum){ .checksum = s->checksum, .len = s->len };
	n = rw_sum_pack((uint8_t *)s->ctrl_tx->addr + RW_CTRL_MAX, RW_T_RESULT, 1, &result);
	return rc_post_send(c, s->ctrl_tx, RW_CTRL_MAX, n, WR_SEND_RESULT, true);
}

/*
 * The client's WRITEs and READs never show up here, so a client that is
 * busy and a client whose host died look the same: silence. When a wait
 * times out, post a zero-length RDMA WRITE to the client (it needs no
 * rkey and touches no memory): the client's NIC acknowledges it if the
 * client is still there, and it fails with IBV_WC_RETRY_EXC_ERR if not.
 */
static int probe_client(struct session *s)
{
	rc_trace(&s->c->log, "no DONE within %d ms: probing the client", s->c->timeout_ms);
	return rc_post_rdma(s->c, IBV_WR_RDMA_WRITE, s->ctrl_tx, 0, 0, 0, 0, 0, WR_PROBE, true);
}

/* Wait for DONE, answer it, and wait for the client to hang up. */
static int converse(struct session *s)
{
	struct rc_conn *c = s->c;
	bool probing = false, done = false, result_sent = false;
	struct ibv_wc wc;
	int ret;

	for (;;) {
		ret = rc_next_wc(c, &wc);
		if (ret == -ETIMEDOUT && !done && !probing) {
			ret = probe_client(s);
			if (ret)
				return ret;
			probing = true;
			continue;
		}
		if (ret == -ETIMEDOUT && probing)
			return rc_fail(&c->log, ETIMEDOUT,
				       "the client sent no DONE and its NIC did not answer a probe "
				       "within %d ms",
				       c->timeout_ms);
		if (ret == -ETIMEDOUT && result_sent)
			return 0; /* it has its RESULT; stop waiting for its goodbye */
		if (ret == -ECONNRESET && c->peer_disconnected && result_sent)
			return 0; /* the client said goodbye */
		if (ret == -ECONNRESET && c->peer_disconnected && done) {
			/* RESULT was posted, its completion not seen: the client can
			 * take it and hang up before its ACK reaches us (a QP torn
			 * down at once sends no more ACKs). Our part is done. */
			rc_trace(&c->log, "the client hung up before RESULT's SEND completed here");
			return 0;
		}
		if (ret == -ECONNRESET && c->peer_disconnected)
			return rc_fail(&c->log, ECONNRESET,
				       "the client disconnected before it was done (it failed or "
				       "was stopped)");
		if (ret == -EIO && wc.wr_id == WR_PROBE && result_sent)
			continue; /* the client hung up while the probe was out */
		if (ret == -EIO && wc.wr_id == WR_RECV_DONE && wc.status == IBV_WC_WR_FLUSH_ERR)
			return rc_fail(&c->log, EIO,
				       "the receive for DONE was flushed: the connection is in the "
				       "error state (was an RDMA request of the client refused, "
				       "e.g. for a wrong rkey?)");
		if (ret)
			return ret;
		if (rc_wc_is(&wc, WR_SEND_BUF, IBV_WC_SEND) ||
		    rc_wc_is(&wc, WR_SEND_BUF2, IBV_WC_SEND)) {
			continue;
		} else if (rc_wc_is(&wc, WR_PROBE, IBV_WC_RDMA_WRITE) && probing) {
			probing = false;
			rc_trace(&c->log, "the client's NIC answered: still working, waiting on");
		} else if (rc_wc_is(&wc, WR_RECV_DONE, IBV_WC_RECV) && !done) {
			done = true;
			ret = on_done(s, &wc);
			if (ret)
				return ret;
		} else if (rc_wc_is(&wc, WR_SEND_RESULT, IBV_WC_SEND) && done) {
			result_sent = true;
		} else {
			return rc_unexpected_wc(c, &wc);
		}
	}
}

/*
 * A client that asks for atomics: does our device do them (atomic_cap)?
 * If not, refuse it before anything is set up, naming the device.
 */
static int check_atomic_cap(struct session *s)
{
	char why[RC_REJECT_MAX];
	int ret;

	if (!rw_ops_atomic(s->hello.ops))
		return 0;
	ret = rw_atomic_cap(s->c, "this server", &s->atomic_cap);
	if (ret == -EOPNOTSUPP) {
		snprintf(why, sizeof(why),
			 "this server's device %s does no atomic operations (atomic_cap "
			 "IBV_ATOMIC_NONE)",
			 ibv_get_device_name(s->c->id->verbs->device));
		rc_reject(s->c, why);
	} else if (ret) {
		rc_reject(s->c, "server could not set up the connection (see its log)");
	}
	return ret;
}

/* One client, from its connect request to its disconnect. */
static int serve(struct session *s, const void *priv, size_t priv_len)
{
	struct rc_conn *c = s->c;
	char why[160], flags[64];
	int ret;

	ret = rw_hello_unpack(priv, priv_len, &s->hello, why, sizeof(why));
	if (ret) {
		rc_reject(c, why);
		return rc_fail(&c->log, EPROTO, "rejected: %s", why);
	}
	s->len = s->hello.len ? s->hello.len : s->opt->size;
	if (s->len > s->opt->size) {
		snprintf(why, sizeof(why),
			 "asks for a %u-byte buffer; this server gives each client at most %u "
			 "bytes (its -s)",
			 s->len, s->opt->size);
		rc_reject(c, why);
		return rc_fail(&c->log, EPROTO, "rejected: %s", why);
	}
	ret = check_atomic_cap(s);
	if (ret)
		return ret;
	ret = setup(s);
	if (ret) {
		rc_reject(c, "server could not set up the connection (see its log)");
		return ret;
	}
	s->read_depth = choose_read_depth(s);
	if (rw_ops_responder(s->hello.ops) && !s->read_depth &&
	    s->hello.lesson != RW_INJECT_NO_READ_DEPTH) {
		snprintf(why, sizeof(why),
			 "wants to %s but its connect request has initiator_depth 0",
			 s->hello.ops & RW_OP_READ ? "RDMA READ" : "do atomics");
		rc_reject(c, why);
		return rc_fail(&c->log, EPROTO, "rejected: %s", why);
	}
	/* responder_resources: how many of the client's READs and atomics
	 * our QP serves at once (0 = none at all). initiator_depth 0: we
	 * issue no READs. */
	ret = rc_accept(c, 0, s->read_depth);
	if (ret)
		return ret;
	printf("connection from %s: %u-byte buffer, access %s, %s %u%s%s%s%s\n", c->peer, s->len,
	       rw_access_str(s->access, flags, sizeof(flags)), rw_depth_name(s->hello.ops),
	       s->read_depth, rw_ops_atomic(s->hello.ops) ? ", atomic_cap " : "",
	       rw_ops_atomic(s->hello.ops) ? rw_atomic_cap_name(s->atomic_cap) : "",
	       s->hello.lesson ? ", lesson " : "",
	       s->hello.lesson ? rw_inject_name(s->hello.lesson) : "");
	ret = send_buf(s);
	if (ret)
		return ret;
	ret = converse(s);
	if (ret)
		return ret;
	printf("connection from %s closed\n", c->peer);
	rc_disconnect(c);
	if (s->mismatch && rw_ops_atomic(s->hello.ops))
		return rc_fail(&c->log, EPROTO,
			       "the word's value differs from the one the client expected");
	if (s->mismatch)
		return rc_fail(&c->log, EPROTO,
			       "the buffer's checksum differs from the client's: the data did not "
			       "arrive as sent");
	return 0;
}

static int serve_client(struct rc_conn *c, const void *priv, size_t priv_len, void *arg)
{
	struct session s = { .c = c, .opt = arg };
	int ret = serve(&s, priv, priv_len);

	/* A lesson's own MR goes before the PD (rc_serve then destroys the
	 * connection); rc_buf_alloc's buffers go with the connection. */
	rw_mr_free(&s.udata);
	return ret;
}

int main(int argc, char **argv)
{
	struct rw_server_opts opt;
	char err[256];
	int ret;

	ret = rw_parse_server(argc, argv, &opt, err, sizeof(err));
	if (ret) {
		if (ret < 0)
			fprintf(stderr, "rdma-server: %s (try --help)\n", err);
		return ret > 0 ? RC_EXIT_OK : RC_EXIT_USAGE;
	}
	/* Listen, print "listening on ...", run serve_client for each client
	 * on its own thread until SIGINT/SIGTERM (common/rc-server.c). */
	return rc_server_main("rdma-server", &opt.rc, serve_client, &opt);
}
