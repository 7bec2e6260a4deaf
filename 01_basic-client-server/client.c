// SPDX-License-Identifier: MIT
/*
 * 01 rdma-client: connect with librdmacm and exchange messages with
 * two-sided SEND/RECV, top to bottom in the order of a connection's life
 * (sequence.txt): resolve the server's address and route, create the PD,
 * CQ, QP and registered buffer (basic_setup), post the receive for the
 * first reply *before* connecting, connect, then for each message SEND it
 * and wait for its completion and the reply's (basic_next_wc), validating
 * the reply before use; disconnect, and release everything in reverse
 * order (basic_teardown). What both sides do the same way is in basic.c.
 *
 * 02 and 03 leave these calls to common/rdma-common.c (rc_client_resolve,
 * rc_create_qp, rc_buf_alloc, rc_post_*, rc_client_connect). That 01 makes
 * them itself, here and in basic.c, is intended: it is the lesson. From
 * common/ it takes only options, the wire header, error hints, the bounded
 * waits and output (--json, latency).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic.h"
#include "rc-report.h"

enum { WR_SEND = 1, WR_RECV = 2 }; /* wr_id: which buffer completed */

struct client {
	struct client_opts opt;
	struct basic_conn v; /* librdmacm and verbs objects, -v trace, last error */
	uint8_t *recv_buf;   /* v.buf holds the message to send, then this */
	size_t msg_len;	     /* one message: header + payload */
	char peer[80];	     /* "ADDR port N" */
	uint8_t *expect;     /* the payload being sent, to compare the reply */
	struct rc_lat lat;   /* a sample per verified round trip */
};

/* 1. Which local RDMA device reaches the server, and by which path? */
static int resolve(struct client *cl)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *res;
	int ret, err, tmo = cl->v.timeout_ms;
	struct rc_cm_info ev;

	if (basic_create_id(&cl->v, cl))
		return -EIO;
	/* Takes IPv4 and IPv6 addresses and host names alike. */
	ret = rdma_getaddrinfo(cl->opt.server, cl->opt.rc.port, &hints, &res);
	if (ret)
		return rc_fail(&cl->v.log, ret == -1 ? errno : EHOSTUNREACH,
			       "cannot resolve '%s' port %s: %s; hint: use the IP address of the "
			       "server's RDMA netdev",
			       cl->opt.server, cl->opt.rc.port,
			       ret == -1 ? strerror(errno) : gai_strerror(ret));
	rc_format_addr(res->ai_dst_addr, cl->peer, sizeof(cl->peer));
	/* Which local device reaches this IP address? Answered by an event. */
	ret = rdma_resolve_addr(cl->v.id, NULL, res->ai_dst_addr, tmo);
	err = errno;
	rdma_freeaddrinfo(res);
	if (ret)
		return rc_fail(&cl->v.log, err, "rdma_resolve_addr(%s): %s; hint: %s", cl->peer,
			       strerror(err), rc_call_hint("rdma_resolve_addr", err));
	ret = rc_wait_cm_event(cl->v.cm_ch, RDMA_CM_EVENT_ADDR_RESOLVED, tmo, -1,
			       "resolving the address", &cl->v.log, &ev);
	if (ret)
		return ret;
	/* The path to the server: for RoCE, the GID and the next hop's MAC. */
	if (rdma_resolve_route(cl->v.id, tmo))
		return rc_fail_call(&cl->v.log, "rdma_resolve_route", errno, NULL);
	return rc_wait_cm_event(cl->v.cm_ch, RDMA_CM_EVENT_ROUTE_RESOLVED, tmo, -1,
				"resolving the route", &cl->v.log, &ev);
}

/* 5. Connect. HELLO, in the private data, tells the server how large our
 * messages are, so that it can post receives that fit. */
static int connect_server(struct client *cl)
{
	uint8_t hello[BASIC_HELLO_LEN], t = RC_ACK_TIMEOUT;
	struct rdma_conn_param p = {
		.private_data = hello,
		.private_data_len = sizeof(hello),
		/* No RDMA READ in 01: initiator_depth, responder_resources 0.
		 * Finite retries fail a WR instead of hanging (rdma-common.h). */
		.retry_count = RC_RETRY_COUNT,
		.rnr_retry_count = RC_RNR_RETRY_COUNT,
	};
	struct rc_cm_info ev;
	int ret;

	basic_hello_pack(hello, cl->opt.size);
	/* Resend after 4.096 us x 2^16 = 268 ms without an ACK (set at RTS). */
	if (rdma_set_option(cl->v.id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &t, sizeof(t)))
		return rc_fail_call(&cl->v.log, "rdma_set_option(ACK_TIMEOUT)", errno, NULL);
	rc_trace(&cl->v.log, "rdma_connect to %s", cl->peer);
	/* Sends the CM's REQ; the server answers with REP (accept) or REJ. */
	if (rdma_connect(cl->v.id, &p))
		return rc_fail_call(&cl->v.log, "rdma_connect", errno, NULL);
	ret = rc_wait_cm_event(cl->v.cm_ch, RDMA_CM_EVENT_ESTABLISHED, cl->v.timeout_ms, -1,
			       "connecting", &cl->v.log, &ev);
	if (ret)
		return ret;
	cl->v.established = true;
	/* -v: the retry settings the CM gave the QP on its way to RTS. */
	rc_trace_retry(&cl->v.log, cl->v.id->qp);
	return 0;
}

/* 6. SEND message seq and wait for its reply (or a failure in log.err). */
static int round_trip(struct client *cl, uint32_t seq, uint64_t *rtt_ticks)
{
	uint32_t size = cl->opt.size, len = (uint32_t)(sizeof(struct rc_hdr) + size);
	struct ibv_sge sge = { (uintptr_t)cl->v.buf, len, cl->v.mr->lkey };
	/* Signalled: the buffer is reused only once the NIC is done with it. */
	struct ibv_send_wr *bad, wr = { .wr_id = WR_SEND,
					.sg_list = &sge,
					.num_sge = 1,
					.opcode = IBV_WR_SEND,
					.send_flags = IBV_SEND_SIGNALED };
	bool sent = false, replied = false;
	uint64_t t0, t1 = 0;
	struct ibv_wc wc;
	struct rc_msg m;
	char why[160];
	int ret;

	if (cl->opt.text)
		memcpy(cl->expect, cl->opt.text, size);
	else
		basic_fill_pattern(cl->expect, size, seq);
	basic_msg_pack(cl->v.buf, BASIC_T_DATA, seq, cl->expect, size);
	rc_trace(&cl->v.log, "post SEND wr_id=%d len=%u signaled", WR_SEND, len);
	t0 = rc_ticks();
	/* Queued for the NIC; whether it worked arrives as a completion. */
	ret = ibv_post_send(cl->v.id->qp, &wr, &bad);
	if (ret)
		return rc_fail_call(&cl->v.log, "ibv_post_send", ret, NULL);
	/* The send and the reply complete in either order. */
	while (!sent || !replied) {
		/* basic.c: ibv_poll_cq, else a bounded sleep on the channel. */
		ret = basic_next_wc(&cl->v, &wc);
		if (ret > 0)
			return rc_fail(&cl->v.log, ECONNRESET, "the server disconnected; hint: %s",
				       rc_cm_event_hint(RDMA_CM_EVENT_DISCONNECTED, 0));
		if (ret)
			return ret;
		if (wc.wr_id == WR_SEND && wc.opcode == IBV_WC_SEND) {
			sent = true;
		} else if (wc.wr_id == WR_RECV && wc.opcode == IBV_WC_RECV) {
			t1 = rc_ticks();
			replied = true;
			/* Never trust the peer: wc.byte_len, header, type, seq, size. */
			ret = basic_msg_unpack(cl->recv_buf, wc.byte_len, BASIC_T_REPLY, seq, size,
					       &m, why, sizeof(why));
			if (ret)
				return rc_fail(&cl->v.log, EPROTO, "bad reply to message %u: %s",
					       seq, why);
			if (m.length != size || memcmp(m.body, cl->expect, size))
				return rc_fail(&cl->v.log, EPROTO,
					       "reply to message %u differs from what was sent",
					       seq);
			/* Repost at once: the next reply needs a receive ready. */
			if (seq + 1 < cl->opt.count &&
			    (ret = basic_post_recv(&cl->v, cl->msg_len, cl->msg_len, WR_RECV)))
				return ret;
		} else {
			return rc_fail(&cl->v.log, EPROTO,
				       "unexpected %s completion, wr_id %" PRIu64,
				       rc_wc_opcode_str(wc.opcode), wc.wr_id);
		}
	}
	*rtt_ticks = t1 - t0;
	return 0;
}

/* 7. The conversation: -n round trips, the replies and the latency. */
static int exchange(struct client *cl)
{
	uint64_t i, n = cl->opt.count;
	char q[300];
	int ret = 0;

	rc_lat_start(&cl->lat);
	for (i = 0; i < n; i++) {
		ret = round_trip(cl, (uint32_t)i, &cl->lat.samples[i]);
		if (ret)
			break;
		cl->lat.n = i + 1;
		if (cl->opt.json)
			continue; /* the results come as JSON at the end */
		if (i < 3 || i == n - 1) {
			rc_quote(q, sizeof(q), cl->expect, cl->opt.size, 64); /* = the reply */
			printf("reply %" PRIu64 ": '%s' (%u bytes)\n", i, q, cl->opt.size);
		} else if (i == 3) {
			printf("...\n");
		}
	}
	rc_lat_end(&cl->lat);
	if (ret || cl->opt.json)
		return ret;
	printf("verified %" PRIu64 " of %" PRIu64 " replies\n", n, n);
	if (n > 1)
		rc_lat_print(&cl->lat, cl->opt.size);
	return 0;
}

/* 8. Goodbye: the server sees DISCONNECTED, then so do we. */
static int disconnect(struct client *cl)
{
	struct rc_cm_info ev;

	rc_trace(&cl->v.log, "rdma_disconnect");
	cl->v.established = false;
	/* Sends the CM's DREQ and moves our QP to the error state. */
	if (rdma_disconnect(cl->v.id))
		return rc_fail_call(&cl->v.log, "rdma_disconnect", errno, NULL);
	return rc_wait_cm_event(cl->v.cm_ch, RDMA_CM_EVENT_DISCONNECTED, cl->v.timeout_ms, -1,
				"disconnecting", &cl->v.log, &ev);
}

/* --json: what was asked and what happened, as one object (rc-report.c). */
static void print_json(struct client *cl, int code, const char *error)
{
	struct rc_run r = { "rdma-client",   "01_basic-client-server",
			    "sendrecv",	     cl->opt.server,
			    cl->opt.rc.port, cl->opt.count,
			    cl->opt.size,    &cl->lat };

	rc_run_json(&r, code, error);
}

int main(int argc, char **argv)
{
	struct client cl = { 0 };
	char err[256];
	int ret, code = RC_EXIT_FAIL;

	ret = basic_parse_client(argc, argv, &cl.opt, err, sizeof(err));
	if (ret) {
		if (ret < 0) {
			fprintf(stderr, "rdma-client: %s (try --help)\n", err);
			if (rc_json_wanted(argc, argv))
				print_json(&cl, RC_EXIT_USAGE, err);
		}
		return ret > 0 ? RC_EXIT_OK : RC_EXIT_USAGE;
	}
	/* Line-buffered even into a pipe: scripts watch our progress. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	basic_conn_init(&cl.v, "client", &cl.opt.rc, -1);
	cl.msg_len = sizeof(struct rc_hdr) + cl.opt.size;
	cl.expect = malloc(cl.opt.size);
	cl.lat.samples = calloc(cl.opt.count, sizeof(*cl.lat.samples));
	if (!cl.expect || !cl.lat.samples) {
		rc_fail(&cl.v.log, ENOMEM, "out of memory");
		goto fail;
	}
	if (resolve(&cl)) {
		code = RC_EXIT_NOCONN;
		goto fail;
	}
	/* 2-4. PD, CQ, QP and the buffer (basic.c), and the receive for the
	 * first reply *before* connecting: ready however fast the server is. */
	if (basic_setup(&cl.v, cl.msg_len))
		goto fail;
	cl.recv_buf = cl.v.buf + cl.msg_len;
	if (basic_post_recv(&cl.v, cl.msg_len, cl.msg_len, WR_RECV))
		goto fail;
	if (connect_server(&cl)) {
		code = RC_EXIT_NOCONN;
		goto fail;
	}
	if (!cl.opt.json)
		printf("connected to %s\n", cl.peer);
	if (exchange(&cl) || disconnect(&cl))
		goto fail;
	code = RC_EXIT_OK;
	goto out;
fail:
	fprintf(stderr, "rdma-client: %s\n", cl.v.log.err);
out:
	if (cl.opt.json)
		print_json(&cl, code, code == RC_EXIT_OK ? NULL : cl.v.log.err);
	basic_teardown(&cl.v); /* 9. in reverse order of creation */
	free(cl.expect);
	free(cl.lat.samples);
	return code;
}
