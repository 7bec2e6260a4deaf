// SPDX-License-Identifier: MIT
/*
 * 01 rdma-client: connect with librdmacm and exchange messages with
 * two-sided SEND/RECV. This file makes every librdmacm and ibverbs call of
 * the client's side itself, top to bottom in the order of a connection's
 * life (sequence.txt): resolve the server's address and route, create the
 * PD, CQ and QP, register the buffers, post the receive for the first
 * reply *before* connecting, connect, then for each message SEND it and
 * wait for both its completion and the reply's, validating the reply
 * before use; disconnect, and release everything in reverse order.
 * With --json, the same results as one JSON object for scripts.
 *
 * 02 and 03 leave these calls to common/rdma-common.c (rc_client_resolve,
 * rc_create_qp, rc_buf_alloc, rc_post_*, rc_client_connect). That 01 does
 * them again here is intended: it is the lesson. From common/ it takes
 * only option parsing, the wire header, error hints and the bounded waits.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic.h"
#include "rc-json.h"

/*
 * The clock for the latency samples. clock_gettime() is a system call
 * wherever the kernel cannot read the TSC itself (hpet in many VMs: 2 to 3
 * us each, measured in our Soft-RoCE VM), which would land in every
 * sample. So the samples count ticks of the CPU's time-stamp counter (an
 * instruction; constant-rate on any x86 CPU of the last 15 years), and
 * end_run() converts them with the rate it measures over the whole run
 * against CLOCK_MONOTONIC. Elsewhere the ticks are simply nanoseconds.
 */
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define ticks() __rdtsc()
#else
#define ticks() rc_now_ns()
#endif

enum { WR_SEND = 1, WR_RECV = 2 }; /* wr_id: which buffer completed */

struct client {
	struct client_opts opt;
	struct rc_log log;		  /* -v trace and the last error */
	struct rdma_event_channel *cm_ch; /* the CM's events for our id */
	struct rdma_cm_id *id;		  /* librdmacm's handle: like a socket */
	struct ibv_pd *pd;
	struct ibv_comp_channel *comp_ch; /* "a completion arrived" as an fd */
	struct ibv_cq *cq;
	uint8_t *send_buf, *recv_buf; /* one message each: header + payload */
	struct ibv_mr *send_mr, *recv_mr;
	size_t msg_len;
	bool connected;	     /* ESTABLISHED, and we have not disconnected */
	bool peer_gone;	     /* the server disconnected first */
	char peer[80];	     /* "ADDR port N" */
	uint8_t *expect;     /* the payload being sent, to compare the reply */
	uint64_t *rtt_ns;    /* per round trip: ticks, nanoseconds after end_run() */
	uint64_t done;	     /* round trips completed and verified */
	uint64_t elapsed_ns; /* from the first SEND to the last reply */
};

static void name_addr(const struct sockaddr *sa, char *out, size_t len)
{
	char host[64] = "?", port[8] = "?";

	getnameinfo(sa,
		    sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
					      : sizeof(struct sockaddr_in),
		    host, sizeof(host), port, sizeof(port), NI_NUMERICHOST | NI_NUMERICSERV);
	snprintf(out, len, "%s port %s", host, port);
}

/* 1. Which local RDMA device reaches the server, and by which path? */
static int resolve(struct client *cl)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *res;
	int ret, err, tmo = cl->opt.rc.timeout_ms;
	struct rc_cm_info ev;

	/* The CM reports each step's outcome as an event on this channel. */
	cl->cm_ch = rdma_create_event_channel();
	if (!cl->cm_ch)
		return rc_fail_call(&cl->log, "rdma_create_event_channel", errno,
				    "is the rdma_ucm module loaded (`modprobe rdma_ucm`)?");
	/* Non-blocking: we wait only in poll(), with a timeout. */
	if (fcntl(cl->cm_ch->fd, F_SETFL, O_NONBLOCK))
		return rc_fail_call(&cl->log, "fcntl(O_NONBLOCK)", errno, "see fcntl(2)");
	/* RDMA_PS_TCP: a reliable connected QP, with ports as in TCP. */
	if (rdma_create_id(cl->cm_ch, &cl->id, cl, RDMA_PS_TCP))
		return rc_fail_call(&cl->log, "rdma_create_id", errno, "see rdma_create_id(3)");
	/* Takes IPv4 and IPv6 addresses and host names alike. */
	ret = rdma_getaddrinfo(cl->opt.server, cl->opt.rc.port, &hints, &res);
	if (ret)
		return rc_fail(&cl->log, ret == -1 ? errno : EHOSTUNREACH,
			       "cannot resolve '%s' port %s: %s; hint: use the server's IP address "
			       "on its RDMA netdev",
			       cl->opt.server, cl->opt.rc.port,
			       ret == -1 ? strerror(errno) : gai_strerror(ret));
	name_addr(res->ai_dst_addr, cl->peer, sizeof(cl->peer));
	/* Which local device reaches this IP address? Answered by an event. */
	ret = rdma_resolve_addr(cl->id, NULL, res->ai_dst_addr, tmo);
	err = errno;
	rdma_freeaddrinfo(res);
	if (ret)
		return rc_fail(
			&cl->log, err, "rdma_resolve_addr(%s): %s; hint: %s", cl->peer,
			strerror(err),
			err == ENETUNREACH || err == EHOSTUNREACH
				? "no route from here to that address (see `ip route get "
				  "ADDR`); it must be reachable through the RDMA device's netdev"
				: rc_cm_event_hint(RDMA_CM_EVENT_ADDR_ERROR, 0));
	ret = rc_wait_cm_event(cl->cm_ch, RDMA_CM_EVENT_ADDR_RESOLVED, tmo, -1,
			       "resolving the address", &cl->log, &ev);
	if (ret)
		return ret;
	/* The path to the server: for RoCE, the GID and the next hop's MAC. */
	if (rdma_resolve_route(cl->id, tmo))
		return rc_fail(&cl->log, errno, "rdma_resolve_route(%s): %s; hint: %s", cl->peer,
			       strerror(errno), rc_cm_event_hint(RDMA_CM_EVENT_ROUTE_ERROR, 0));
	return rc_wait_cm_event(cl->cm_ch, RDMA_CM_EVENT_ROUTE_RESOLVED, tmo, -1,
				"resolving the route", &cl->log, &ev);
}

/* 2. PD, completion channel, CQ and QP, on the device the CM found. */
static int create_qp(struct client *cl)
{
	struct ibv_qp_init_attr attr = {
		/* One message in flight each way; a spare in case of slow polling. */
		.cap = { .max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC, /* reliable connected: acknowledged, in order */
		.sq_sig_all = 0,       /* each send says whether it wants a completion */
	};
	struct ibv_context *dev = cl->id->verbs;

	/* The protection domain: the QP may use only memory registered in it. */
	cl->pd = ibv_alloc_pd(dev);
	if (!cl->pd)
		return rc_fail_call(&cl->log, "ibv_alloc_pd", errno, "is the device usable?");
	/* Lets us sleep until a completion arrives instead of spinning. */
	cl->comp_ch = ibv_create_comp_channel(dev);
	if (!cl->comp_ch)
		return rc_fail_call(&cl->log, "ibv_create_comp_channel", errno,
				    "see ibv_create_comp_channel(3)");
	if (fcntl(cl->comp_ch->fd, F_SETFL, O_NONBLOCK))
		return rc_fail_call(&cl->log, "fcntl(O_NONBLOCK)", errno, "see fcntl(2)");
	/* One CQ for both queues, room for every WR they hold: a CQ that
	 * overflows puts the QP in the error state. */
	cl->cq = ibv_create_cq(dev, 4, NULL, cl->comp_ch, 0);
	if (!cl->cq)
		return rc_fail_call(&cl->log, "ibv_create_cq", errno, "see `ibv_devinfo -v`");
	attr.send_cq = attr.recv_cq = cl->cq;
	/* On the CM's id: the CM moves it through INIT, RTR and RTS for us. */
	if (rdma_create_qp(cl->id, cl->pd, &attr))
		return rc_fail_call(&cl->log, "rdma_create_qp", errno,
				    "`ibv_devinfo -v` shows the device limits");
	rc_trace(&cl->log, "created RC QP %u (send %u, recv %u) on %s, CQ of %d",
		 cl->id->qp->qp_num, attr.cap.max_send_wr, attr.cap.max_recv_wr,
		 ibv_get_device_name(dev->device), cl->cq->cqe);
	return 0;
}

/* Pin buf and give the NIC a translation for it (lkey; rkey if remote). */
static struct ibv_mr *reg(struct client *cl, void *buf, int access)
{
	struct ibv_mr *mr = ibv_reg_mr(cl->pd, buf, cl->msg_len, access);

	if (!mr) {
		rc_fail_call(&cl->log, "ibv_reg_mr", errno,
			     errno == ENOMEM || errno == EPERM
				     ? "registered memory is locked memory: raise `ulimit -l`"
				     : "check the access flags");
		return NULL;
	}
	rc_trace(&cl->log, "registered %zu bytes lkey=0x%x rkey=0x%x", cl->msg_len, mr->lkey,
		 mr->rkey);
	return mr;
}

/* 3. The two buffers. Access flags: the least each one needs. */
static int register_buffers(struct client *cl)
{
	cl->send_buf = calloc(1, cl->msg_len);
	cl->recv_buf = calloc(1, cl->msg_len);
	if (!cl->send_buf || !cl->recv_buf)
		return rc_fail(&cl->log, ENOMEM, "out of memory");
	/* Only SENT from: the NIC reads it, nobody writes it remotely: none. */
	cl->send_mr = reg(cl, cl->send_buf, 0);
	if (!cl->send_mr)
		return -EIO;
	/* The NIC writes the replies here: LOCAL_WRITE. */
	cl->recv_mr = reg(cl, cl->recv_buf, IBV_ACCESS_LOCAL_WRITE);
	return cl->recv_mr ? 0 : -EIO;
}

/* 4. A receive for the next reply: the buffer the NIC may put it in. */
static int post_recv(struct client *cl)
{
	struct ibv_sge sge = { (uintptr_t)cl->recv_buf, (uint32_t)cl->msg_len, cl->recv_mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = WR_RECV, .sg_list = &sge, .num_sge = 1 }, *bad;
	int ret;

	rc_trace(&cl->log, "post RECV wr_id=%d len=%zu", WR_RECV, cl->msg_len);
	/* Queued at once; it completes when a message has landed in it. */
	ret = ibv_post_recv(cl->id->qp, &wr, &bad);
	if (ret)
		return rc_fail_call(&cl->log, "ibv_post_recv", ret,
				    ret == ENOMEM ? "more receives posted than max_recv_wr"
						  : "is the QP in the error state?");
	return 0;
}

/* 5. Connect. HELLO, in the private data, tells the server how large our
 * messages are, so that it can post receives that fit. */
static int connect_server(struct client *cl)
{
	uint8_t hello[BASIC_HELLO_LEN], t = RC_ACK_TIMEOUT;
	struct rdma_conn_param p = {
		.private_data = hello,
		.private_data_len = sizeof(hello),
		/* initiator_depth, responder_resources: 0, no RDMA READ in 01. */
		/* Finite retries: a dead peer or a missing receive fails the
		 * WR instead of hanging (rdma-common.c explains the values). */
		.retry_count = RC_RETRY_COUNT,
		.rnr_retry_count = RC_RNR_RETRY_COUNT,
	};
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a;
	struct rc_cm_info ev;
	int ret;

	basic_hello_pack(hello, cl->opt.size);
	/* Resend after 4.096 us x 2^16 = 268 ms without an ACK (set at RTS). */
	if (rdma_set_option(cl->id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &t, sizeof(t)))
		return rc_fail_call(&cl->log, "rdma_set_option(ACK_TIMEOUT)", errno,
				    "see rdma_set_option(3)");
	rc_trace(&cl->log, "rdma_connect to %s", cl->peer);
	/* Sends the CM's REQ; the server answers with REP (accept) or REJ. */
	if (rdma_connect(cl->id, &p))
		return rc_fail_call(&cl->log, "rdma_connect", errno, "see rdma_connect(3)");
	ret = rc_wait_cm_event(cl->cm_ch, RDMA_CM_EVENT_ESTABLISHED, cl->opt.rc.timeout_ms, -1,
			       "connecting", &cl->log, &ev);
	if (ret)
		return ret;
	cl->connected = true;
	/* -v: the retry settings the CM gave the QP on its way to RTS. */
	if (cl->log.verbose &&
	    !ibv_query_qp(cl->id->qp, &a, IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY,
			  &init))
		rc_trace(&cl->log, "QP %u: ack timeout %u (%.0f ms), retry_cnt %u, rnr_retry %u",
			 cl->id->qp->qp_num, a.timeout,
			 (double)(1ull << (a.timeout & 31)) * 4.096e-3, a.retry_cnt, a.rnr_retry);
	return 0;
}

/* The next completion, within --timeout: poll the CQ; when it is empty,
 * sleep on the completion channel (--poll event) or spin (--poll busy). */
static int next_wc(struct client *cl, struct ibv_wc *wc)
{
	struct ibv_comp_channel *ch = cl->opt.rc.busy_poll ? NULL : cl->comp_ch;
	struct rc_cq_wait w = { 0 };
	struct rc_cm_info ev;
	bool armed = false;
	struct ibv_cq *cq;
	void *ctx;
	int n, ret;

	for (;;) {
		/* Takes a completion if one is queued; never blocks. */
		n = ibv_poll_cq(cl->cq, 1, wc);
		if (n > 0)
			return rc_wc_check(&cl->log, wc);
		if (n < 0)
			return rc_fail(&cl->log, EIO, "ibv_poll_cq failed (%d)", n);
		if (ch && !armed) {
			/* An event for the next completion, then poll once
			 * more: one may have arrived before we asked. */
			if (ibv_req_notify_cq(cl->cq, 0))
				return rc_fail_call(&cl->log, "ibv_req_notify_cq", errno,
						    "see ibv_req_notify_cq(3)");
			armed = true;
			continue;
		}
		/* Bounded; the CM's fd too: a server that leaves ends it. */
		ret = rc_wait_cq(&w, ch, &cl->cm_ch->fd, 1, cl->opt.rc.timeout_ms, &cl->log);
		if (ret == 1) {
			ret = rc_wait_cm_event(cl->cm_ch, RDMA_CM_EVENT_DISCONNECTED,
					       cl->opt.rc.timeout_ms, -1, "waiting for a reply",
					       &cl->log, &ev);
			cl->peer_gone = ev.event == RDMA_CM_EVENT_DISCONNECTED;
			return ret ? ret
				   : rc_fail(&cl->log, ECONNRESET,
					     "the server disconnected; hint: %s",
					     rc_cm_event_hint(RDMA_CM_EVENT_DISCONNECTED, 0));
		}
		if (ret < 0)
			return ret;
		/* Take the channel's event and acknowledge it: ibv_destroy_cq
		 * waits until every event is acknowledged. */
		if (ch && ibv_get_cq_event(ch, &cq, &ctx) == 0) {
			ibv_ack_cq_events(cq, 1);
			armed = false;
		}
	}
}

/* 6. SEND message seq and wait for its reply. Returns 0 or a negative
 * errno with cl->log.err set. */
static int round_trip(struct client *cl, uint32_t seq, uint64_t *rtt_ticks)
{
	uint32_t size = cl->opt.size, len = (uint32_t)(sizeof(struct rc_hdr) + size);
	struct ibv_sge sge = { (uintptr_t)cl->send_buf, len, cl->send_mr->lkey };
	/* Signalled: send_buf is reused for the next message only after the
	 * NIC said that it is done reading it. */
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
	basic_msg_pack(cl->send_buf, BASIC_T_DATA, seq, cl->expect, size);
	rc_trace(&cl->log, "post SEND wr_id=%d len=%u signaled", WR_SEND, len);
	t0 = ticks();
	/* Queued for the NIC; whether it worked arrives as a completion. */
	ret = ibv_post_send(cl->id->qp, &wr, &bad);
	if (ret)
		return rc_fail_call(&cl->log, "ibv_post_send", ret,
				    ret == ENOMEM ? "more WRs outstanding than max_send_wr"
						  : "is the QP in the error state?");
	/* The send and the reply complete in either order. */
	while (!sent || !replied) {
		ret = next_wc(cl, &wc);
		if (ret)
			return ret;
		if (wc.wr_id == WR_SEND && wc.opcode == IBV_WC_SEND) {
			sent = true;
		} else if (wc.wr_id == WR_RECV && wc.opcode == IBV_WC_RECV) {
			t1 = ticks();
			replied = true;
			/* Never trust the peer: length from wc.byte_len, then
			 * header, type, seq and size. */
			ret = basic_msg_unpack(cl->recv_buf, wc.byte_len, BASIC_T_REPLY, seq, size,
					       &m, why, sizeof(why));
			if (ret)
				return rc_fail(&cl->log, EPROTO, "bad reply to message %u: %s", seq,
					       why);
			if (m.length != size || memcmp(m.body, cl->expect, size))
				return rc_fail(&cl->log, EPROTO,
					       "reply to message %u differs from what was sent",
					       seq);
			/* Repost at once: the next reply needs a receive ready
			 * before the server sends it. */
			if (seq + 1 < cl->opt.count && (ret = post_recv(cl)))
				return ret;
		} else {
			return rc_fail(&cl->log, EPROTO, "unexpected completion %s wr_id=%" PRIu64,
				       rc_wc_opcode_str(wc.opcode), wc.wr_id);
		}
	}
	*rtt_ticks = t1 - t0;
	return 0;
}

/* The run's end: its duration, and the samples from ticks to ns. */
static void end_run(struct client *cl, uint64_t t0_ns, uint64_t t0_ticks)
{
	uint64_t dt = ticks() - t0_ticks, i;
	double ns_per_tick;

	cl->elapsed_ns = rc_now_ns() - t0_ns;
	ns_per_tick = dt ? (double)cl->elapsed_ns / (double)dt : 1.0;
	for (i = 0; i < cl->done; i++)
		cl->rtt_ns[i] = (uint64_t)((double)cl->rtt_ns[i] * ns_per_tick + 0.5);
}

/* 7. The conversation: -n round trips, the replies and the latency. */
static int exchange(struct client *cl)
{
	uint64_t i, n = cl->opt.count, t0 = rc_now_ns(), t0_ticks = ticks();
	struct basic_lat lat;
	char q[300];
	int ret = 0;

	for (i = 0; i < n; i++) {
		ret = round_trip(cl, (uint32_t)i, &cl->rtt_ns[i]);
		if (ret)
			break;
		cl->done = i + 1;
		if (cl->opt.json)
			continue; /* the results come as JSON at the end */
		if (i < 3 || i == n - 1) {
			basic_quote(q, sizeof(q), cl->recv_buf + sizeof(struct rc_hdr),
				    cl->opt.size, 64);
			printf("reply %" PRIu64 ": '%s' (%u bytes)\n", i, q, cl->opt.size);
		} else if (i == 3) {
			printf("...\n");
		}
	}
	end_run(cl, t0, t0_ticks);
	if (ret || cl->opt.json)
		return ret;
	printf("verified %" PRIu64 " of %" PRIu64 " replies\n", n, n);
	if (n > 1) {
		basic_latency(cl->rtt_ns, n, &lat);
		printf("round-trip latency (us): min %.1f median %.1f p99 %.1f max %.1f over "
		       "%" PRIu64 " messages of %u bytes\n",
		       lat.min, lat.median, lat.p99, lat.max, n, cl->opt.size);
	}
	return 0;
}

/* 8. Goodbye: the server sees DISCONNECTED, then so do we. */
static int disconnect(struct client *cl)
{
	struct rc_cm_info ev;

	rc_trace(&cl->log, "rdma_disconnect");
	cl->connected = false;
	/* Sends the CM's DREQ and moves our QP to the error state. */
	if (rdma_disconnect(cl->id))
		return rc_fail_call(&cl->log, "rdma_disconnect", errno, "see rdma_disconnect(3)");
	return rc_wait_cm_event(cl->cm_ch, RDMA_CM_EVENT_DISCONNECTED, cl->opt.rc.timeout_ms, -1,
				"disconnecting", &cl->log, &ev);
}

/* 9. Release everything in reverse order of creation (any part may be
 * missing after a failure). */
static void teardown(struct client *cl)
{
	if (cl->connected && !cl->peer_gone)
		rdma_disconnect(cl->id); /* a failure midway: still tell the server */
	if (cl->id && cl->id->qp)
		rdma_destroy_qp(cl->id); /* first: then nothing uses the MRs */
	if (cl->recv_mr)
		ibv_dereg_mr(cl->recv_mr);
	if (cl->send_mr)
		ibv_dereg_mr(cl->send_mr);
	if (cl->cq)
		ibv_destroy_cq(cl->cq);
	if (cl->comp_ch)
		ibv_destroy_comp_channel(cl->comp_ch);
	if (cl->pd)
		ibv_dealloc_pd(cl->pd);
	if (cl->id)
		rdma_destroy_id(cl->id);
	if (cl->cm_ch)
		rdma_destroy_event_channel(cl->cm_ch);
	free(cl->send_buf);
	free(cl->recv_buf);
	free(cl->expect);
	free(cl->rtt_ns);
}

/*
 * --json: one object with what was asked and what happened, printed on
 * success and on failure alike (error: the message stderr got, or null).
 */
static void print_json(struct client *cl, int code, const char *error)
{
	static struct rc_json j; /* 32 KiB: not on the stack */
	struct basic_lat lat;
	double secs = (double)cl->elapsed_ns / 1e9;

	rc_json_init(&j);
	rc_json_object(&j, NULL);
	rc_json_str(&j, "program", "rdma-client");
	rc_json_str(&j, "example", "01_basic-client-server");
	rc_json_bool(&j, "ok", code == RC_EXIT_OK);
	if (code != RC_EXIT_USAGE) {
		rc_json_str(&j, "op", "sendrecv");
		rc_json_str(&j, "server", cl->opt.server);
		rc_json_u64(&j, "port", strtoul(cl->opt.rc.port, NULL, 10));
		rc_json_u64(&j, "count", cl->opt.count);
		rc_json_u64(&j, "size", cl->opt.size);
		rc_json_u64(&j, "messages", cl->done);
		rc_json_u64(&j, "bytes", cl->done * cl->opt.size);
		rc_json_double(&j, "seconds", secs);
		rc_json_double(&j, "messages_per_s", secs > 0 ? (double)cl->done / secs : 0);
		if (cl->done) {
			/* Round trips: SEND posted to the reply's completion. */
			basic_latency(cl->rtt_ns, cl->done, &lat);
			rc_json_object(&j, "latency_us");
			rc_json_double(&j, "min", lat.min);
			rc_json_double(&j, "median", lat.median);
			rc_json_double(&j, "p99", lat.p99);
			rc_json_double(&j, "max", lat.max);
			rc_json_end(&j);
		} else {
			rc_json_null(&j, "latency_us");
		}
		rc_json_bool(&j, "verified", code == RC_EXIT_OK);
	}
	rc_json_str(&j, "error", error);
	rc_json_i64(&j, "exit_code", code);
	rc_json_end(&j);
	if (rc_json_finish(&j, stdout))
		fprintf(stderr, "rdma-client: could not write the JSON output\n");
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
	rc_log_init(&cl.log, "client", cl.opt.rc.verbose);
	cl.msg_len = sizeof(struct rc_hdr) + cl.opt.size;
	cl.expect = malloc(cl.opt.size);
	cl.rtt_ns = calloc(cl.opt.count, sizeof(*cl.rtt_ns));
	if (!cl.expect || !cl.rtt_ns) {
		rc_fail(&cl.log, ENOMEM, "out of memory");
		goto fail;
	}
	if (resolve(&cl)) {
		code = RC_EXIT_NOCONN;
		goto fail;
	}
	/* The receive for the first reply goes before connecting, so that it
	 * is ready however fast the server answers. */
	if (create_qp(&cl) || register_buffers(&cl) || post_recv(&cl))
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
	fprintf(stderr, "rdma-client: %s\n", cl.log.err);
out:
	if (cl.opt.json)
		print_json(&cl, code, code == RC_EXIT_OK ? NULL : cl.log.err);
	teardown(&cl);
	return code;
}
