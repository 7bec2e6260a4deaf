// SPDX-License-Identifier: MIT
/*
 * 01 rdma-server: accept RDMA connections and answer every message.
 *
 * What it shows, in order (see sequence.txt): listen with librdmacm; for
 * each CONNECT_REQUEST, read the client's HELLO from the private data,
 * create the QP, register the receive slots and post them *before*
 * accepting; then receive each message, validate it, and SEND it back
 * from the very slot it arrived in. Each client runs on its own thread
 * with its own resources (rc_serve in common/), so one client cannot
 * stall another.
 *
 * The path from a message's completion to the reply's ibv_post_send is
 * the server's share of every round trip, so it holds only what must come
 * first: validation, and the one header field that changes. Everything
 * else (reposting the receive, printing) happens once the reply is on
 * its way.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "basic.h"
#include "rc-server.h"

/*
 * Two receive slots: one holds the message being answered (its reply is
 * sent from it), the other is posted for the client's next message. The
 * client sends that only after it has our reply, and we repost a slot as
 * soon as the SEND from it completed, which is at the latest when the
 * next message arrives (wait_send_done): so a receive is always posted.
 */
#define RECV_DEPTH 2
#define WR_SEND	   1000 /* receives: wr_id = slot; replies: WR_SEND + slot */

struct session {
	struct rc_conn *c;
	bool quiet;		 /* --quiet: no line per message */
	uint32_t max_payload;	 /* from the client's HELLO */
	size_t slot_len;	 /* one message: header + max_payload */
	struct rc_buf *recv_buf; /* RECV_DEPTH slots of slot_len bytes */
	bool send_busy;		 /* the last reply's SEND has not completed */
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
	/* Receive slots: the NIC writes into them (LOCAL_WRITE) and reads
	 * the replies from them (local reads need no flag). Nothing here is
	 * exposed to the peer, so no REMOTE_* flag. No separate send
	 * buffer: a reply is the request with a new header. */
	ret = rc_buf_alloc(c, s->slot_len * RECV_DEPTH, IBV_ACCESS_LOCAL_WRITE, &s->recv_buf);
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

/* A reply's SEND completed: its slot may receive again. */
static int reply_sent(struct session *s, const struct ibv_wc *wc)
{
	uint64_t slot = wc->wr_id - WR_SEND;

	if (wc->opcode != IBV_WC_SEND || wc->wr_id < WR_SEND || slot >= RECV_DEPTH || !s->send_busy)
		return rc_unexpected_wc(s->c, wc);
	s->send_busy = false;
	return rc_post_recv(s->c, s->recv_buf, slot * s->slot_len, s->slot_len, slot);
}

/* Wait until the previous reply's SEND completed and its slot is posted
 * again. (It usually has by now: the client's next message follows its
 * acknowledgement of our reply.) */
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
		ret = reply_sent(s, &wc);
		if (ret)
			return ret;
	}
	return 0;
}

static int on_message(struct session *s, const struct ibv_wc *wc)
{
	struct rc_conn *c = s->c;
	uint64_t slot = wc->wr_id;
	uint8_t *buf;
	struct rc_msg m;
	char why[160], q[300];
	int ret;

	if (slot >= RECV_DEPTH)
		return rc_unexpected_wc(c, wc);
	buf = (uint8_t *)s->recv_buf->addr + slot * s->slot_len;
	/* Validate before use: size from wc.byte_len, then the header. */
	ret = basic_msg_unpack(buf, wc->byte_len, BASIC_T_DATA, s->next_seq, s->max_payload, &m,
			       why, sizeof(why));
	if (ret)
		return rc_fail(&c->log, EPROTO, "bad message from client: %s", why);
	ret = wait_send_done(s);
	if (ret)
		return ret;
	/*
	 * The reply is this message with type REPLY: rewrite the header in
	 * place and SEND straight from the receive slot. No copy of the
	 * payload, and no other buffer to touch. The slot is reposted only
	 * when this SEND has completed (reply_sent): until then the NIC
	 * reads from it. Signalled for exactly that reason.
	 */
	rc_hdr_pack(buf, BASIC_T_REPLY, m.length, m.seq);
	ret = rc_post_send(c, s->recv_buf, slot * s->slot_len, sizeof(struct rc_hdr) + m.length,
			   WR_SEND + slot, true);
	if (ret)
		return ret;
	s->send_busy = true;
	s->next_seq++;
	/* One write(2) per message when stdout is line-buffered, so after
	 * the reply is on its way; --quiet leaves it out altogether where
	 * the round trip itself is being measured. The NIC only reads the
	 * slot, and so do we. */
	if (!s->quiet) {
		basic_quote(q, sizeof(q), m.body, m.length, 64);
		printf("received '%s' (%u bytes)\n", q, m.length);
	}
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
		if (wc.opcode == IBV_WC_SEND)
			ret = reply_sent(&s, &wc);
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
