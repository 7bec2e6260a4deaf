// SPDX-License-Identifier: MIT
/*
 * 01 rdma-client: every librdmacm and ibverbs call of the client's life,
 * in the order of sequence.txt: resolve address and route; PD, CQ, QP and
 * buffer; the first reply's receive posted *before* connecting; connect;
 * per message, SEND and wait for it and the validated reply; disconnect.
 *
 * server.c repeats some steps, and 02/03 leave them to common/ (rdma-*.c):
 * intended (each file a lesson of its own). So is wait_cm_event, our own
 * rdma_get_cm_event/rdma_ack_cm_event loop: what common/'s rc_wait_cm_event
 * does for 02 and 03. From common/: options, wire header, error hints, poll()
 * with a deadline (rc_wait_readable, rc_wait_cq) and output; cm-event.c: the
 * words for a CM event that went wrong.
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
#include "cm-event.h"
#include "inline.h"
#include "lessons.h"
#include "rc-report.h"

enum { WR_SEND = 1, WR_RECV = 2 }; /* wr_id: which half of buf completed */
#define QP_WRS 2		   /* each queue's max_*_wr (and --inject sq-overflow's) */

struct client {
	struct client_opts opt;
	struct rc_log log;		  /* -v trace and the last error */
	struct rdma_event_channel *cm_ch; /* the CM's events for our id */
	struct rdma_cm_id *id;		  /* librdmacm's handle: like a socket */
	struct ibv_pd *pd;
	struct ibv_comp_channel *comp_ch; /* "a completion arrived" as an fd */
	struct ibv_cq *cq;
	uint8_t *buf;	   /* the message being sent, then the reply: msg_len each */
	struct ibv_mr *mr; /* buf's registration */
	size_t msg_len;	   /* one message: header + payload */
	bool established;  /* ESTABLISHED, and we have not disconnected */
	char peer[80];	   /* "ADDR port N" */
	struct rc_lat lat; /* a sample per verified round trip */
};

/* The CM's next event on our id, within --timeout; 0 if it is `expected`. Every
 * step of the connection (resolve, connect, disconnect) is answered this way. */
static int wait_cm_event(struct client *cl, enum rdma_cm_event_type expected, const char *step)
{
	/* Resolutions got --timeout themselves: half a second more, so their verdict comes. */
	uint64_t deadline = rc_now_us() + (uint64_t)cl->opt.rc.timeout_ms * 1000u + 500000u;
	struct rdma_cm_event *ev;
	struct rc_cm_info got;
	int ret;

	/* Non-blocking channel: EAGAIN until the CM has queued an event for our id. At the
	 * server's REP the kernel queues CONNECT_RESPONSE; in here librdmacm then moves our
	 * QP to RTR and RTS, has the kernel send the RTU and gives us ESTABLISHED (cma.c:
	 * ucma_process_conn_resp). */
	while (rdma_get_cm_event(cl->cm_ch, &ev)) {
		if (errno != EAGAIN)
			return rc_fail(&cl->log, errno, "%s: rdma_get_cm_event: %s", step,
				       strerror(errno));
		/* poll() on the channel's fd until the deadline: never a hang. */
		if ((ret = rc_wait_readable(&cl->cm_ch->fd, 1, deadline)) < 0)
			return basic_cm_wait_failed(&cl->log, ret, expected, cl->opt.rc.timeout_ms,
						    step);
	}
	/* Copy first: the ack frees the event and its private data (a REJECTED's reason). */
	basic_cm_keep(&got, ev);
	rc_trace(&cl->log, "cm event %s (status %d)", rdma_event_str(ev->event), ev->status);
	/* Ack every event, once: rdma_destroy_id blocks until our id's events are acked. */
	rdma_ack_cm_event(ev);
	if (got.event != expected || got.status) /* REJECTED, UNREACHABLE, ADDR_ERROR, ... */
		return basic_cm_unexpected(&cl->log, &got, expected, step);
	return 0;
}

/* 1. Which local RDMA device reaches the server, and by which path? */
static int resolve(struct client *cl)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *res;
	int ret, err, tmo = cl->opt.rc.timeout_ms;

	/* Each CM step's outcome arrives here; non-blocking: we wait in poll(). */
	cl->cm_ch = rdma_create_event_channel();
	if (!cl->cm_ch || fcntl(cl->cm_ch->fd, F_SETFL, O_NONBLOCK))
		return rc_fail_call(&cl->log, "rdma_create_event_channel", errno, NULL);
	/* RDMA_PS_TCP: reliable connected QPs, with ports as in TCP. */
	if (rdma_create_id(cl->cm_ch, &cl->id, cl, RDMA_PS_TCP))
		return rc_fail_call(&cl->log, "rdma_create_id", errno, NULL);
	/* Takes IPv4 and IPv6 addresses and host names alike. */
	if ((ret = rdma_getaddrinfo(cl->opt.server, cl->opt.rc.port, &hints, &res)))
		return rc_fail(&cl->log, ret == -1 ? errno : EHOSTUNREACH,
			       "cannot resolve '%s' port %s: %s; hint: use the IP address of the "
			       "server's RDMA netdev",
			       cl->opt.server, cl->opt.rc.port,
			       ret == -1 ? strerror(errno) : gai_strerror(ret));
	rc_format_addr(res->ai_dst_addr, cl->peer, sizeof(cl->peer));
	/* Which local device reaches this IP address? Answered by an event. */
	ret = rdma_resolve_addr(cl->id, NULL, res->ai_dst_addr, tmo);
	err = errno;
	rdma_freeaddrinfo(res);
	if (ret)
		return rc_fail(&cl->log, err, "rdma_resolve_addr(%s): %s; hint: %s", cl->peer,
			       strerror(err), rc_call_hint("rdma_resolve_addr", err));
	if ((ret = wait_cm_event(cl, RDMA_CM_EVENT_ADDR_RESOLVED, "resolving the address")))
		return ret;
	/* The path to the server: for RoCE, the GID and the next hop's MAC. */
	if (rdma_resolve_route(cl->id, tmo))
		return rc_fail_call(&cl->log, "rdma_resolve_route", errno, NULL);
	return wait_cm_event(cl, RDMA_CM_EVENT_ROUTE_RESOLVED, "resolving the route");
}

/* Post the receive for the next reply, into the second half of buf. */
static int post_recv(struct client *cl)
{
	struct ibv_sge sge = { (uintptr_t)(cl->buf + cl->msg_len), (uint32_t)cl->msg_len,
			       cl->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = WR_RECV, .sg_list = &sge, .num_sge = 1 }, *bad;
	int ret;

	rc_trace(&cl->log, "post RECV wr_id=%d len=%zu", WR_RECV, cl->msg_len);
	/* Queued at once; it completes when a message has landed in it. */
	ret = ibv_post_recv(cl->id->qp, &wr, &bad);
	return ret ? rc_fail_call(&cl->log, "ibv_post_recv", ret, NULL) : 0;
}

/* 2-4. PD, CQ, QP, buffer; the reply's receive before connecting, however fast the server. */
static int setup(struct client *cl)
{
	struct ibv_qp_init_attr attr = {
		/* One message in flight each way; a spare in case of slow polling. */
		.cap = { .max_send_wr = QP_WRS,
			 .max_recv_wr = QP_WRS,
			 .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC, /* reliable connected: acknowledged, in order */
		.sq_sig_all = 0,       /* each send says whether it wants a completion */
	};
	struct ibv_context *dev = cl->id->verbs;
	/* --inline: room for a whole message in the send WQE; no verb tells the limit. */
	uint32_t ask = cl->opt.send_inline ? (uint32_t)cl->msg_len : 0, limit;
	int ret;

	/* The protection domain: the QP may use only memory registered in it. */
	cl->pd = ibv_alloc_pd(dev);
	if (!cl->pd)
		return rc_fail_call(&cl->log, "ibv_alloc_pd", errno, "is the device usable?");
	/* Lets us sleep until a completion arrives instead of spinning. */
	cl->comp_ch = ibv_create_comp_channel(dev);
	if (!cl->comp_ch || fcntl(cl->comp_ch->fd, F_SETFL, O_NONBLOCK))
		return rc_fail_call(&cl->log, "ibv_create_comp_channel", errno, NULL);
	/* One CQ, room for every WR of both queues: an overflow fails the QP. */
	cl->cq = ibv_create_cq(dev, 4, NULL, cl->comp_ch, 0);
	if (!cl->cq)
		return rc_fail_call(&cl->log, "ibv_create_cq", errno, NULL);
	attr.send_cq = attr.recv_cq = cl->cq;
	attr.cap.max_inline_data = ask;
	/* On the CM's id, left in INIT; rdma_get_cm_event takes it to RTS (wait_cm_event). */
	if (rdma_create_qp(cl->id, cl->pd, &attr))
		return ask ? basic_inline_refused(cl->pd, &attr, errno, ask, &limit, &cl->log)
			   : rc_fail_call(&cl->log, "rdma_create_qp", errno, NULL);
	rc_trace(&cl->log, "created RC QP %u on %s, CQ of %d", cl->id->qp->qp_num,
		 ibv_get_device_name(dev->device), cl->cq->cqe);
	/* The device may grant more than asked: ibv_query_qp says what (-v). */
	if (ask && (ret = basic_inline_granted(cl->id->qp, ask, &cl->log)))
		return ret;
	/* Pins buf, gives it an lkey; the NIC writes the reply: LOCAL_WRITE, no REMOTE_*. */
	cl->mr = ibv_reg_mr(cl->pd, cl->buf, 2 * cl->msg_len, IBV_ACCESS_LOCAL_WRITE);
	if (!cl->mr)
		return fail_reg_mr(&cl->log, 2 * cl->msg_len, errno);
	rc_trace(&cl->log, "registered %zu bytes lkey=0x%x rkey=0x%x", 2 * cl->msg_len,
		 cl->mr->lkey, cl->mr->rkey);
	return post_recv(cl);
}

/* 5. Connect; HELLO says how large our messages are (the server's receives fit) and
 * whether to reply inline. */
static int connect_server(struct client *cl)
{
	uint8_t hello[BASIC_HELLO_LEN], t = (uint8_t)cl->opt.rc.ack_timeout;
	/* No RDMA READ: initiator_depth, responder_resources 0. Retry 7 (Soft-RoCE:
	 * for ever, --timeout ends it); finite RNR retries; the server's QP takes both. */
	struct rdma_conn_param p = { .private_data = hello,
				     .private_data_len = sizeof(hello),
				     .retry_count = (uint8_t)cl->opt.rc.retry_count,
				     .rnr_retry_count = RC_RNR_RETRY_COUNT };
	int ret;

	basic_hello_pack(hello, cl->opt.size, lesson_hello_byte(cl->opt.inject),
			 cl->opt.send_inline ? BASIC_HELLO_INLINE : 0);
	/* Resend after 4.096 us x 2^t without an ACK (--ack-timeout; at RTS). */
	if (rdma_set_option(cl->id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &t, sizeof(t)))
		return rc_fail_call(&cl->log, "rdma_set_option(ACK_TIMEOUT)", errno, NULL);
	rc_trace(&cl->log, "rdma_connect to %s", cl->peer);
	/* Sends the CM's REQ; the server answers with REP (accept) or REJ. */
	if (rdma_connect(cl->id, &p))
		return rc_fail_call(&cl->log, "rdma_connect", errno, NULL);
	/* The REP: librdmacm moves our QP to RTR and RTS as it hands us the event. */
	ret = wait_cm_event(cl, RDMA_CM_EVENT_ESTABLISHED, "connecting");
	cl->established = !ret;
	/* -v: the retry settings the CM gave the QP on its way to RTS (none if refused). */
	if (cl->established)
		rc_trace_retry(&cl->log, cl->id->qp);
	return ret;
}

/* The next completion within --timeout: poll; if none, sleep (--poll event), spin
 * (busy), or spin 100 us then sleep (adaptive: rc_cq_spin).
 * (void *: --inject's lessons take our completions through it too.) */
static int next_wc(void *arg, struct ibv_wc *wc)
{
	struct client *cl = arg;
	struct ibv_comp_channel *ch;
	struct rc_cq_wait w = { 0 };
	bool armed = false;
	struct ibv_cq *cq;
	void *ctx;
	int n;

	for (;;) {
		/* Takes a completion if one is queued; never blocks. */
		n = ibv_poll_cq(cl->cq, 1, wc);
		if (n)
			return n > 0 ? rc_wc_check(&cl->log, wc)
				     : rc_fail(&cl->log, EIO, "ibv_poll_cq failed (%d); hint: %s",
					       n, rc_call_hint("ibv_poll_cq", EIO));
		ch = rc_cq_spin(&w, cl->opt.rc.poll) ? NULL : cl->comp_ch;
		if (ch && !armed) {
			/* Ask for an event, then poll once more: one may have come first. */
			if (ibv_req_notify_cq(cl->cq, 0))
				return rc_fail_call(&cl->log, "ibv_req_notify_cq", errno, NULL);
			armed = true;
			continue;
		}
		/* Bounded; the CM's fd too: a server that leaves ends the wait. */
		n = rc_wait_cq(&w, ch, &cl->cm_ch->fd, 1, cl->opt.rc.timeout_ms, &cl->log);
		if (n < 0)
			return n;
		/* A CM event: the server's DISCONNECTED (-ECONNRESET), or an error event. */
		if (n == 1) {
			n = wait_cm_event(cl, RDMA_CM_EVENT_DISCONNECTED, "waiting for a reply");
			return n ? n : basic_peer_left(&cl->log);
		}
		if (ch && ibv_get_cq_event(ch, &cq, &ctx) == 0) {
			/* Acknowledged: ibv_destroy_cq waits for every event. */
			ibv_ack_cq_events(cq, 1);
			armed = false;
		}
	}
}

/* 6. SEND message seq and wait for its reply (or a failure in log.err). */
static int round_trip(struct client *cl, uint32_t seq, uint64_t *rtt_ticks)
{
	uint32_t size = cl->opt.size, len = (uint32_t)cl->msg_len;
	struct ibv_sge sge = { (uintptr_t)cl->buf, len, cl->mr->lkey };
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

	/* --inline: ibv_post_send copies the bytes into the WQE, so buf would be free at
	 * once and the lkey is not read; we keep buf: the reply is compared with it. */
	if (cl->opt.send_inline)
		wr.send_flags |= IBV_SEND_INLINE;
	/* DATA, in buf until the reply, which must equal it, has arrived. */
	basic_data_pack(cl->buf, seq, cl->opt.text, size);
	rc_trace(&cl->log, "post SEND wr_id=%d len=%u signaled%s", WR_SEND, len,
		 wr.send_flags & IBV_SEND_INLINE ? " inline" : "");
	t0 = rc_ticks();
	/* Queued for the NIC; whether it worked arrives as a completion. */
	if ((ret = ibv_post_send(cl->id->qp, &wr, &bad)))
		return rc_fail_call(&cl->log, "ibv_post_send", ret, NULL);
	/* The send and the reply complete in either order. */
	while (!sent || !replied) {
		if ((ret = next_wc(cl, &wc)))
			return ret;
		if (wc.opcode == IBV_WC_SEND) { /* our own WRs: a SEND, else the RECV */
			sent = true;
			continue;
		}
		t1 = rc_ticks();
		replied = true;
		/* Never trust the peer: wc.byte_len, header, type, seq, size. */
		ret = basic_msg_unpack(cl->buf + cl->msg_len, wc.byte_len, BASIC_T_REPLY, seq, size,
				       &m, why, sizeof(why));
		if (ret)
			return rc_fail(&cl->log, EPROTO, "bad reply to message %u: %s", seq, why);
		if (m.length != size || memcmp(m.body, cl->buf + sizeof(struct rc_hdr), size))
			return rc_fail(&cl->log, EPROTO,
				       "reply to message %u differs from what was sent", seq);
		/* Repost at once: the next reply needs a receive ready. */
		if (seq + 1 < cl->opt.count && (ret = post_recv(cl)))
			return ret;
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
	for (i = 0; i < n && !(ret = round_trip(cl, (uint32_t)i, &cl->lat.samples[i])); i++) {
		cl->lat.n = i + 1;
		/* What we sent = the reply (verified); --json: the results come at the end. */
		if (!cl->opt.json && (i < 3 || i == n - 1)) {
			rc_quote(q, sizeof(q), cl->buf + sizeof(struct rc_hdr), cl->opt.size, 64);
			printf("reply %" PRIu64 ": '%s' (%u bytes)\n", i, q, cl->opt.size);
		} else if (!cl->opt.json && i == 3) {
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
	rc_trace(&cl->log, "rdma_disconnect");
	cl->established = false;
	/* Sends the CM's DREQ and moves our QP to the error state. */
	if (rdma_disconnect(cl->id))
		return rc_fail_call(&cl->log, "rdma_disconnect", errno, NULL);
	return wait_cm_event(cl, RDMA_CM_EVENT_DISCONNECTED, "disconnecting");
}

/* 9. Release everything in reverse order (after a failure, parts may be missing). */
static void teardown(struct client *cl)
{
	if (cl->established)
		rdma_disconnect(cl->id); /* a failure midway: still tell the server */
	if (cl->id && cl->id->qp)
		rdma_destroy_qp(cl->id); /* first: then nothing uses the MR */
	if (cl->mr)
		ibv_dereg_mr(cl->mr);
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
	free(cl->buf);
	free(cl->lat.samples);
}

int main(int argc, char **argv)
{
	struct client cl = { 0 };
	char err[256];
	int ret, code = RC_EXIT_FAIL;

	ret = basic_parse_client(argc, argv, &cl.opt, err, sizeof(err));
	if (ret < 0)
		return rc_run_usage_error("rdma-client", "01_basic-client-server", argc, argv, err);
	if (ret > 0)
		return RC_EXIT_OK; /* --help */
	/* Line-buffered even into a pipe: scripts watch our progress. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	rc_log_init(&cl.log, "client", cl.opt.rc.verbose);
	cl.msg_len = sizeof(struct rc_hdr) + cl.opt.size;
	cl.buf = calloc(2, cl.msg_len);
	cl.lat.samples = calloc(cl.opt.count, sizeof(*cl.lat.samples));
	if (!cl.buf || !cl.lat.samples)
		rc_fail(&cl.log, ENOMEM, "out of memory");
	else if (resolve(&cl) || (ret = setup(&cl)) || connect_server(&cl))
		code = ret ? RC_EXIT_FAIL : RC_EXIT_NOCONN;
	else if (!cl.opt.json)
		printf("connected to %s\n", cl.peer);
	/* --inject: a lesson (lessons.c) on our objects instead of the messages. */
	if (cl.established &&
	    !(cl.opt.inject
		      ? lesson_client_run(&cl.opt, QP_WRS, cl.id, cl.mr, &cl.log, next_wc, &cl)
		      : exchange(&cl)) &&
	    !disconnect(&cl))
		code = cl.opt.inject ? BASIC_EXIT_LESSON : RC_EXIT_OK;
	if (code != RC_EXIT_OK && code != BASIC_EXIT_LESSON)
		fprintf(stderr, "rdma-client: %s\n", cl.log.err);
	if (cl.opt.json) /* what was asked and what happened, one object (rc-report.c) */
		rc_run_json(&(struct rc_run){ "rdma-client", "01_basic-client-server", "sendrecv",
					      cl.opt.server, cl.opt.rc.port, cl.opt.count,
					      cl.opt.size, &cl.lat },
			    code, code == RC_EXIT_OK ? NULL : cl.log.err);
	teardown(&cl);
	return code;
}
