// SPDX-License-Identifier: MIT
/*
 * 01 rdma-server: accept RDMA connections and answer every message.
 *
 * What it shows, in order (see sequence.txt): listen with librdmacm; for
 * each CONNECT_REQUEST, read the client's HELLO from the private data,
 * create the QP, register buffers and post receives *before* accepting;
 * then receive each message, validate it, repost the receive, and SEND
 * the same payload back. Each client runs on its own thread with its own
 * resources (rc_serve in common/), so one client cannot stall another.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "basic.h"

#define RECV_DEPTH 2	/* one receive being handled, one ready for the next */
#define WR_SEND	   1000 /* receives use wr_id = their slot, 0..RECV_DEPTH-1 */

struct session {
	struct rc_conn *c;
	bool quiet;	      /* --quiet: no line per message */
	uint32_t max_payload; /* from the client's HELLO */
	size_t slot_len;      /* one message: header + max_payload */
	struct rc_buf *recv_buf, *send_buf;
	bool send_busy; /* the last reply's SEND has not completed */
	uint32_t next_seq;
};

static int setup(struct session *s)
{
	struct rc_conn *c = s->c;
	struct ibv_qp_cap cap = {
		.max_send_wr = 2, .max_recv_wr = RECV_DEPTH, .max_send_sge = 1, .max_recv_sge = 1
	};
	uint64_t i;
	int ret;

	ret = rc_create_qp(c, &cap);
	if (ret)
		return ret;
	/* Receive slots: the NIC writes into them (LOCAL_WRITE). Nothing
	 * here is exposed to the peer, so no REMOTE_* flag. */
	ret = rc_buf_alloc(c, s->slot_len * RECV_DEPTH, IBV_ACCESS_LOCAL_WRITE, &s->recv_buf);
	if (ret)
		return ret;
	ret = rc_buf_alloc(c, s->slot_len, 0, &s->send_buf);
	if (ret)
		return ret;
	/* Post every receive before rdma_accept: the client may SEND the
	 * moment the connection is established, and a SEND that finds no
	 * receive gets "receiver not ready" NAKs. */
	for (i = 0; i < RECV_DEPTH; i++) {
		ret = rc_post_recv(c, s->recv_buf, i * s->slot_len, s->slot_len, i);
		if (ret)
			return ret;
	}
	return 0;
}

/* Wait until the previous reply's SEND completed, so send_buf is ours. */
static int wait_send_done(struct session *s)
{
	struct ibv_wc wc;
	int ret;

	while (s->send_busy) {
		ret = rc_next_wc(s->c, &wc);
		if (ret)
			return ret;
		if (wc.opcode != IBV_WC_SEND)
			return rc_fail(&s->c->log, EPROTO,
				       "client sent message %u before its previous reply completed",
				       s->next_seq);
		s->send_busy = false;
	}
	return 0;
}

static int on_message(struct session *s, const struct ibv_wc *wc)
{
	struct rc_conn *c = s->c;
	uint64_t slot = wc->wr_id;
	const uint8_t *buf;
	struct rc_msg m;
	char why[160], q[300];
	int ret;

	if (slot >= RECV_DEPTH)
		return rc_unexpected_wc(c, wc);
	buf = (const uint8_t *)s->recv_buf->addr + slot * s->slot_len;
	/* Validate before use: size from wc.byte_len, then the header. */
	ret = basic_msg_unpack(buf, wc->byte_len, BASIC_T_DATA, s->next_seq, s->max_payload, &m,
			       why, sizeof(why));
	if (ret)
		return rc_fail(&c->log, EPROTO, "bad message from client: %s", why);
	/* One write(2) per message when stdout is line-buffered: --quiet
	 * leaves it out where the round trip itself is being measured. */
	if (!s->quiet) {
		basic_quote(q, sizeof(q), m.body, m.length, 64);
		printf("received '%s' (%u bytes)\n", q, m.length);
	}

	ret = wait_send_done(s);
	if (ret)
		return ret;
	basic_msg_pack(s->send_buf->addr, BASIC_T_REPLY, m.seq, m.body, m.length);
	/* Repost this slot before replying: once the client has our reply
	 * it may send again at once. */
	ret = rc_post_recv(c, s->recv_buf, slot * s->slot_len, s->slot_len, slot);
	if (ret)
		return ret;
	/* Signalled, to learn when send_buf may be reused. */
	ret = rc_post_send(c, s->send_buf, 0, sizeof(struct rc_hdr) + m.length, WR_SEND, true);
	if (ret)
		return ret;
	s->send_busy = true;
	s->next_seq++;
	return 0;
}

/* One client, from its connect request to its disconnect. */
static int serve_client(struct rc_conn *c, const void *priv, size_t priv_len, void *arg)
{
	const struct server_opts *opt = arg;
	struct session s = { .c = c, .quiet = opt->quiet };
	struct ibv_wc wc;
	char why[160];
	int ret;

	ret = basic_hello_unpack(priv, priv_len, &s.max_payload, why, sizeof(why));
	if (ret) {
		rc_reject(c, why);
		return rc_fail(&c->log, EPROTO, "rejected: %s", why);
	}
	s.slot_len = sizeof(struct rc_hdr) + s.max_payload;
	ret = setup(&s);
	if (ret) {
		rc_reject(c, "server could not set up the connection");
		return ret;
	}
	/* No READs in 01, so no responder resources / initiator depth. */
	ret = rc_accept(c, 0, 0);
	if (ret)
		return ret;
	printf("connection from %s\n", c->peer);

	for (;;) {
		ret = rc_next_wc(c, &wc);
		if (ret == -ECONNRESET && c->peer_disconnected)
			break; /* the client said goodbye */
		if (ret)
			return ret;
		if (wc.opcode == IBV_WC_SEND && wc.wr_id == WR_SEND)
			s.send_busy = false;
		else if (wc.opcode == IBV_WC_RECV)
			ret = on_message(&s, &wc);
		else
			ret = rc_unexpected_wc(c, &wc);
		if (ret)
			return ret;
	}
	printf("connection from %s closed after %u messages\n", c->peer, s.next_seq);
	rc_disconnect(c);
	return 0;
}

int main(int argc, char **argv)
{
	struct server_opts opt;
	char err[256];
	int ret;

	ret = basic_parse_server(argc, argv, &opt, err, sizeof(err));
	if (ret) {
		if (ret < 0)
			fprintf(stderr, "rdma-server: %s (try --help)\n", err);
		return ret > 0 ? RC_EXIT_OK : RC_EXIT_USAGE;
	}
	/* Listen, print "listening on ...", run serve_client for each client
	 * on its own thread until SIGINT/SIGTERM (common/rdma-common.c). */
	return rc_server_main("rdma-server", &opt.rc, serve_client, &opt);
}
