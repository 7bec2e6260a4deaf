// SPDX-License-Identifier: MIT
/*
 * 01 rdma-server: every librdmacm and ibverbs call of the server's life,
 * in the order of sequence.txt: listen; each CONNECT_REQUEST's new id gets
 * its own event channel and thread (one client cannot stall another),
 * which reads the HELLO, creates PD, CQ, QP and receive slots, posts the
 * receives *before* accepting, SENDs each validated message back from its
 * slot and, at DISCONNECTED, releases it all. main(), at the end, listens.
 *
 * client.c repeats some steps, and 02/03 leave them, the listener and the
 * threads to common/ (rc_serve, rc_create_qp, ...): intended (each file a lesson
 * of its own). So is wait_cm_event, our own rdma_get_cm_event/rdma_ack_cm_event
 * loop for the listener's CONNECT_REQUESTs and each connection's events: what
 * common/'s rc_wait_cm_event does for 02 and 03. From common/: options, wire
 * header, error hints, poll() with a deadline (rc_wait_readable, rc_wait_cq),
 * --allow and output; cm-event.c: the words for a CM event that went wrong.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "basic.h"
#include "cm-event.h"
#include "inline.h"
#include "lessons.h"
#include "rc-report.h"

/* Receive slots, each reposted once the reply sent from it is ACKed: with two,
 * one lost ACK left the next message no receive (an RNR NAK: 655 ms). */
#define RECV_DEPTH 3
#define WR_SEND	   1000 /* receives: wr_id = slot; replies: WR_SEND + slot */

struct server {
	struct server_opts opt;
	struct rc_log log;
	struct rdma_event_channel *cm_ch; /* the listener's: CONNECT_REQUESTs */
	struct rdma_cm_id *id;		  /* the listening id */
	int cancel_fd;			  /* SIGINT and SIGTERM: ends every wait */
	unsigned seq;			  /* connections so far, to name them */
	atomic_int active;		  /* connections being served by their threads */
	struct rc_ratelimit refusals;	  /* --allow: the log of refused peers */
};

/* One client: its thread's state and its own librdmacm and verbs objects. */
struct conn {
	struct server *srv;
	struct rc_log log;		  /* -v trace and the last error */
	struct rdma_event_channel *cm_ch; /* this id's events only */
	struct rdma_cm_id *id;		  /* the connect request's new id */
	struct ibv_pd *pd;
	struct ibv_comp_channel *comp_ch; /* "a completion arrived" as an fd */
	struct ibv_cq *cq;
	uint8_t *buf;			   /* RECV_DEPTH slots of slot_len bytes */
	struct ibv_mr *mr;		   /* buf's registration */
	size_t slot_len;		   /* one message: header + max_payload */
	struct rc_cm_info req;		   /* the connect request and its private data */
	uint32_t max_payload, next_seq;	   /* from the client's HELLO; messages answered */
	uint32_t inline_ask, inline_limit; /* HELLO's inline flag: a slot's bytes; our device's */
	bool established;		   /* ESTABLISHED, and we have not disconnected */
	char peer[80];			   /* "ADDR port N" */
	struct lesson_server ls;	   /* --inject: the client's lesson (lessons.c) */
};

/* The CM's next event on ch within timeout_ms, or a signal (cancel_fd), kept in *got;
 * 0 if it is `expected`. The listener's CONNECT_REQUESTs and a connection's
 * ESTABLISHED and DISCONNECTED all come this way. */
static int wait_cm_event(struct rdma_event_channel *ch, int cancel_fd, int timeout_ms,
			 enum rdma_cm_event_type expected, const char *step, struct rc_log *log,
			 struct rc_cm_info *got)
{
	/* As the client's: half a second more than --timeout (0: "just look", 0.5 s). */
	uint64_t deadline = rc_now_us() + (uint64_t)timeout_ms * 1000u + 500000u;
	int fds[2] = { ch->fd, cancel_fd }, ret;
	struct rdma_cm_event *ev;

	got->event = RC_CM_NO_EVENT;
	/* Non-blocking channel: EAGAIN until the CM has queued an event for its ids. */
	while (rdma_get_cm_event(ch, &ev)) {
		if (errno != EAGAIN)
			return rc_fail(log, errno, "%s: rdma_get_cm_event: %s", step,
				       strerror(errno));
		/* poll() on the channel's fd and the signalfd until the deadline: never a hang. */
		if ((ret = rc_wait_readable(fds, 2, deadline)) != 0)
			return basic_cm_wait_failed(log, ret, expected, timeout_ms, step);
	}
	/* Copy first: the ack frees the event and its private data (the client's HELLO). */
	basic_cm_keep(got, ev);
	rc_trace(log, "cm event %s (status %d)", rdma_event_str(ev->event), ev->status);
	/* Ack every event, once: rdma_migrate_id and rdma_destroy_id wait for the acks. */
	rdma_ack_cm_event(ev);
	if (got->event != expected || got->status)
		return basic_cm_unexpected(log, got, expected, step);
	return 0;
}

/* 1. Listen: bind an id to the address and port; the CM queues requests. */
static int listen_on(struct server *s)
{
	struct rdma_addrinfo hints = { .ai_flags = RAI_PASSIVE, .ai_port_space = RDMA_PS_TCP };
	const char *addr = s->opt.rc.bind ? s->opt.rc.bind : "0.0.0.0";
	struct rdma_addrinfo *res;
	char name[80];
	int ret, err;

	/* Connect requests arrive here; non-blocking: we wait only in poll(). */
	s->cm_ch = rdma_create_event_channel();
	if (!s->cm_ch || fcntl(s->cm_ch->fd, F_SETFL, O_NONBLOCK))
		return rc_fail_call(&s->log, "rdma_create_event_channel", errno, NULL);
	/* RDMA_PS_TCP: reliable connected QPs, with ports as in TCP. */
	if (rdma_create_id(s->cm_ch, &s->id, s, RDMA_PS_TCP))
		return rc_fail_call(&s->log, "rdma_create_id", errno, NULL);
	/* A plain IPv4/IPv6 address: the RDMA netdev's, or "any". */
	if ((ret = rdma_getaddrinfo(addr, s->opt.rc.port, &hints, &res)))
		return rc_fail(&s->log, ret == -1 ? errno : EINVAL,
			       "cannot use address '%s' port %s: %s; hint: -b takes an IP address "
			       "of this host's RDMA netdev, or leave it out",
			       addr, s->opt.rc.port,
			       ret == -1 ? strerror(errno) : gai_strerror(ret));
	/* Claims the address and port (port 0: any free one). */
	ret = rdma_bind_addr(s->id, res->ai_src_addr);
	err = errno;
	rdma_freeaddrinfo(res);
	if (ret)
		return rc_fail(&s->log, err, "rdma_bind_addr(%s port %s): %s; hint: %s", addr,
			       s->opt.rc.port, strerror(err), rc_call_hint("rdma_bind_addr", err));
	/* Backlog 16: connect requests the CM queues while we are busy. */
	if (rdma_listen(s->id, 16))
		return rc_fail_call(&s->log, "rdma_listen", errno, NULL);
	rc_format_addr(rdma_get_local_addr(s->id), name, sizeof(name));
	/* Only now, really ready: scripts may connect after this line. */
	printf("listening on %s\n", name);
	return 0;
}

/* Refuse a connect request: the CM's REJ carries a REJECT{reason}, which the client prints. */
static void reject(struct rdma_cm_id *id, struct rc_log *log, const char *reason)
{
	uint8_t priv[RC_REJECT_MAX];

	rc_trace(log, "rdma_reject: %s", reason);
	if (rdma_reject(id, priv, rc_reject_pack(priv, reason)))
		fprintf(stderr, "server: rdma_reject: %s; hint: the client will time out\n",
			strerror(errno));
}

/* Post the receive of slot i (wr_id i). */
static int post_recv(struct conn *c, uint64_t i)
{
	struct ibv_sge sge = { (uintptr_t)(c->buf + i * c->slot_len), (uint32_t)c->slot_len,
			       c->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *bad;
	int ret;

	rc_trace(&c->log, "post RECV wr_id=%" PRIu64 " len=%zu", i, c->slot_len);
	/* Queued at once; it completes when a message has landed in it. */
	ret = ibv_post_recv(c->id->qp, &wr, &bad);
	return ret ? rc_fail_call(&c->log, "ibv_post_recv", ret, NULL) : 0;
}

/* 3. PD, CQ, QP, slots; receives before rdma_accept, or a SEND gets RNR NAKs. */
static int setup(struct conn *c)
{
	struct ibv_qp_init_attr attr = {
		/* A reply in flight per slot at most; a receive per slot. */
		.cap = { .max_send_wr = RECV_DEPTH,
			 .max_recv_wr = RECV_DEPTH,
			 .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC, /* reliable connected: acknowledged, in order */
		.sq_sig_all = 0,       /* each send says whether it wants a completion */
	};
	struct ibv_context *dev = c->id->verbs;
	int ret;

	/* The protection domain: the QP may use only memory registered in it. */
	c->pd = ibv_alloc_pd(dev);
	if (!c->pd)
		return rc_fail_call(&c->log, "ibv_alloc_pd", errno, "is the device usable?");
	/* Lets the thread sleep until a completion arrives instead of spinning. */
	c->comp_ch = ibv_create_comp_channel(dev);
	if (!c->comp_ch || fcntl(c->comp_ch->fd, F_SETFL, O_NONBLOCK))
		return rc_fail_call(&c->log, "ibv_create_comp_channel", errno, NULL);
	/* One CQ, room for every WR of both queues: an overflow fails the QP. */
	c->cq = ibv_create_cq(dev, 2 * RECV_DEPTH, NULL, c->comp_ch, 0);
	if (!c->cq)
		return rc_fail_call(&c->log, "ibv_create_cq", errno, NULL);
	attr.send_cq = attr.recv_cq = c->cq;
	attr.cap.max_inline_data = c->inline_ask; /* --inline: a whole reply in the WQE */
	/* On the new id, by us, left in INIT: rdma_accept moves it to RTR and RTS. */
	if (rdma_create_qp(c->id, c->pd, &attr))
		return c->inline_ask ? basic_inline_refused(c->pd, &attr, errno, c->inline_ask,
							    &c->inline_limit, &c->log)
				     : rc_fail_call(&c->log, "rdma_create_qp", errno, NULL);
	rc_trace(&c->log, "created RC QP %u on %s, CQ of %d", c->id->qp->qp_num,
		 ibv_get_device_name(dev->device), c->cq->cqe);
	/* The device may grant more than asked: ibv_query_qp says what (-v). */
	if (c->inline_ask && (ret = basic_inline_granted(c->id->qp, c->inline_ask, &c->log)))
		return ret;
	c->buf = calloc(RECV_DEPTH, c->slot_len);
	if (!c->buf)
		return rc_fail(&c->log, ENOMEM, "out of memory");
	/* Pins the slots, gives them an lkey; the NIC writes into them: LOCAL_WRITE, no REMOTE_*. */
	c->mr = ibv_reg_mr(c->pd, c->buf, RECV_DEPTH * c->slot_len, IBV_ACCESS_LOCAL_WRITE);
	if (!c->mr)
		return fail_reg_mr(&c->log, RECV_DEPTH * c->slot_len, errno);
	rc_trace(&c->log, "registered %zu bytes lkey=0x%x rkey=0x%x", RECV_DEPTH * c->slot_len,
		 c->mr->lkey, c->mr->rkey);
	if (c->ls.lesson) /* --inject: what the lesson wants posted instead */
		return lesson_server_setup(&c->ls, c->id, &c->log, c->peer);
	for (uint64_t i = 0; i < RECV_DEPTH; i++)
		if (post_recv(c, i))
			return -EIO;
	return 0;
}

/* The next completion within --timeout: poll; if none, sleep (--poll event), spin
 * (busy), or spin 100 us then sleep (adaptive: rc_cq_spin).
 * (void *: --inject's lessons take our completions through it too.) */
static int next_wc(void *arg, struct ibv_wc *wc)
{
	struct conn *c = arg;
	struct ibv_comp_channel *ch;
	int fds[2] = { c->cm_ch->fd, c->srv->cancel_fd };
	struct rc_cq_wait w = { 0 };
	struct rc_cm_info ev;
	bool armed = false;
	struct ibv_cq *cq;
	void *ctx;
	int n;

	for (;;) {
		/* Takes a completion if one is queued; never blocks. */
		n = ibv_poll_cq(c->cq, 1, wc);
		if (n)
			return n > 0 ? rc_wc_check(&c->log, wc)
				     : rc_fail(&c->log, EIO, "ibv_poll_cq failed (%d); hint: %s", n,
					       rc_call_hint("ibv_poll_cq", EIO));
		ch = rc_cq_spin(&w, c->srv->opt.rc.poll) ? NULL : c->comp_ch;
		if (ch && !armed) {
			/* Ask for an event, then poll once more: one may have come first. */
			if (ibv_req_notify_cq(c->cq, 0))
				return rc_fail_call(&c->log, "ibv_req_notify_cq", errno, NULL);
			armed = true;
			continue;
		}
		/* Bounded; a client that leaves (-ECONNRESET), a signal (-ECANCELED) end it too. */
		n = rc_wait_cq(&w, ch, fds, 2, c->srv->opt.rc.timeout_ms, &c->log);
		if (n < 0)
			return n;
		if (n == 2)
			return rc_fail(&c->log, ECANCELED, "cancelled (shutting down)");
		if (n == 1) { /* a CM event: the client's DISCONNECTED, or an error event */
			n = wait_cm_event(c->cm_ch, -1, 0, RDMA_CM_EVENT_DISCONNECTED,
					  "waiting for a message", &c->log, &ev);
			return n ? n : basic_peer_left(&c->log);
		}
		if (ch && ibv_get_cq_event(ch, &cq, &ctx) == 0) {
			/* Acknowledged: ibv_destroy_cq waits for every event. */
			ibv_ack_cq_events(cq, 1);
			armed = false;
		}
	}
}

/* 5. A message: validate it, SEND it back from its slot; that SEND done, repost. */
static int answer_messages(struct conn *c)
{
	struct ibv_sge sge = { .lkey = c->mr->lkey };
	/* Signalled: the slot is reposted only when the NIC is done with it. */
	struct ibv_send_wr *bad, wr = { .sg_list = &sge,
					.num_sge = 1,
					.opcode = IBV_WR_SEND,
					.send_flags = IBV_SEND_SIGNALED };
	struct ibv_wc wc;
	struct rc_msg m;
	char why[160], q[300];
	uint8_t *buf;
	int ret;

	/* --inline: the bytes are copied into the WQE at the post (the slot could be
	 * reposted at once; we keep one rule for both modes), the lkey is not read. */
	if (c->inline_ask)
		wr.send_flags |= IBV_SEND_INLINE;
	while (!(ret = next_wc(c, &wc))) {
		if (wc.opcode == IBV_WC_SEND) { /* our own WRs: a reply, else a RECV */
			if ((ret = post_recv(c, wc.wr_id - WR_SEND)))
				return ret;
			continue;
		}
		buf = c->buf + wc.wr_id * c->slot_len;
		/* Validate before use: size from wc.byte_len, then the header. */
		ret = basic_msg_unpack(buf, wc.byte_len, BASIC_T_DATA, c->next_seq, c->max_payload,
				       &m, why, sizeof(why));
		if (ret)
			return rc_fail(&c->log, EPROTO, "bad message from client: %s", why);
		/* The reply is the message as REPLY, sent from the slot: no copy. */
		rc_hdr_pack(buf, BASIC_T_REPLY, m.length, m.seq);
		sge.addr = (uintptr_t)buf;
		sge.length = (uint32_t)(sizeof(struct rc_hdr) + m.length);
		wr.wr_id = WR_SEND + wc.wr_id;
		/* Queued for the NIC; whether it worked arrives as a completion. */
		if ((ret = ibv_post_send(c->id->qp, &wr, &bad)))
			return rc_fail_call(&c->log, "ibv_post_send", ret, NULL);
		rc_trace(&c->log, "post SEND wr_id=%" PRIu64 " len=%u signaled%s", wr.wr_id,
			 sge.length, wr.send_flags & IBV_SEND_INLINE ? " inline" : "");
		c->next_seq++;
		/* A write(2): only once the reply is on its way; none with --quiet (benchmarks). */
		if (!c->srv->opt.quiet) {
			rc_quote(q, sizeof(q), m.body, m.length, 64);
			printf("received '%s' (%u bytes)\n", q, m.length);
		}
	}
	return ret == -ECONNRESET ? 0 : ret; /* the client has left: the normal end */
}

/* 2-6. One client, from its HELLO to its disconnect. */
static int serve(struct conn *c)
{
	/* No RDMA READ in 01: initiator_depth, responder_resources 0. Our rnr_retry_count
	 * (RC_RNR_RETRY_COUNT, no-recv's 2) goes to the client's QP; no retry_count: the IB CM
	 * gives our QP the client's, from its request, and ignores rdma_accept's. */
	struct rdma_conn_param p = { 0 };
	uint8_t t = (uint8_t)c->srv->opt.rc.ack_timeout;
	struct rc_cm_info ev;
	uint8_t flags;
	char why[160];
	int ret;

	ret = basic_hello_unpack(c->req.priv, c->req.priv_len, &c->max_payload, &c->ls.lesson,
				 &flags, why, sizeof(why));
	if (ret) {
		reject(c->id, &c->log, why);
		return rc_fail(&c->log, EPROTO, "rejected: %s", why);
	}
	c->slot_len = sizeof(struct rc_hdr) + c->max_payload;
	c->inline_ask = flags & BASIC_HELLO_INLINE ? (uint32_t)c->slot_len : 0;
	p.rnr_retry_count = lesson_server_rnr_retry(c->ls.lesson); /* once the HELLO named it */
	if ((ret = setup(c))) {
		/* Too large for our device's inline data: the client learns our limit. */
		snprintf(why, sizeof(why), "server's device takes %u bytes of inline data at most",
			 c->inline_limit);
		reject(c->id, &c->log,
		       ret == -EMSGSIZE ? why : "server could not set up the connection");
		return ret;
	}
	/* 4. Resend after 4.096 us x 2^t without an ACK (--ack-timeout; at RTS). */
	if (rdma_set_option(c->id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &t, sizeof(t)))
		return rc_fail_call(&c->log, "rdma_set_option(ACK_TIMEOUT)", errno, NULL);
	rc_trace(&c->log, "rdma_accept");
	/* Moves the QP to RTR and RTS, then sends the CM's REP. */
	if (rdma_accept(c->id, &p))
		return rc_fail_call(&c->log, "rdma_accept", errno, NULL);
	/* The client's RTU: ESTABLISHED. */
	ret = wait_cm_event(c->cm_ch, c->srv->cancel_fd, c->srv->opt.rc.timeout_ms,
			    RDMA_CM_EVENT_ESTABLISHED, "accepting", &c->log, &ev);
	if ((c->established = !ret))
		printf("connection from %s\n", c->peer);
	/* -v: the retry settings the CM gave our QP on its way to RTS (none if it failed). */
	if (c->established)
		rc_trace_retry(&c->log, c->id->qp);
	if (ret ||
	    (ret = c->ls.lesson ? lesson_server_run(&c->ls, next_wc, c) : answer_messages(c)))
		return ret;
	printf("connection from %s closed after %u messages\n", c->peer, c->next_seq);
	/* 6. Our half of the goodbye: the CM answers the client's DREQ. */
	rc_trace(&c->log, "rdma_disconnect");
	c->established = false;
	return rdma_disconnect(c->id) ? rc_fail_call(&c->log, "rdma_disconnect", errno, NULL) : 0;
}

/* 7. Log a failure (a signal is none); release all in reverse order. 1: it failed. */
static int finish(struct conn *c, int ret)
{
	int failed = ret && ret != -ECANCELED;
	atomic_int *active = &c->srv->active;

	if (failed)
		fprintf(stderr, "server: client %s: %s\n", c->peer, c->log.err);
	if (c->established)
		rdma_disconnect(c->id); /* a failure midway: still tell the client */
	if (c->id->qp)
		rdma_destroy_qp(c->id); /* first: then nothing uses the MR */
	if (c->mr)
		ibv_dereg_mr(c->mr);
	if (c->cq)
		ibv_destroy_cq(c->cq);
	if (c->comp_ch)
		ibv_destroy_comp_channel(c->comp_ch);
	if (c->pd)
		ibv_dealloc_pd(c->pd);
	rdma_destroy_id(c->id);
	if (c->cm_ch)
		rdma_destroy_event_channel(c->cm_ch);
	free(c->buf);
	free(c);
	atomic_fetch_sub(active, 1); /* our last touch of shared state */
	return failed;
}

static void *conn_thread(void *arg)
{
	finish(arg, serve(arg));
	return NULL;
}

/* 2. Reject it, or the new id gets its own channel and thread (--once: main's). 1: failed. */
static int on_connect_request(struct server *s, const struct rc_cm_info *req)
{
	const char *refused = NULL;
	struct conn *c = NULL;
	char name[80];
	pthread_t t;
	int ret = 0;

	rc_format_addr(rdma_get_peer_addr(req->id), name, sizeof(name));
	/* --allow (common/rc-allow.c): before anything is spent on the peer. */
	if (!rc_allow_match(&s->opt.rc.allow, rdma_get_peer_addr(req->id))) {
		refused = "not allowed";
		rc_allow_refused(&s->refusals, rc_now_us(), name, stderr); /* rate-limited */
	} else if (atomic_load(&s->active) >= s->opt.rc.max_clients ||
		   !(c = calloc(1, sizeof(*c)))) {
		refused = "server busy: too many clients, try again later";
		fprintf(stderr, "server: rejecting %s: %d of %d clients connected\n", name,
			atomic_load(&s->active), s->opt.rc.max_clients);
	}
	if (refused) {
		reject(req->id, &s->log, refused);
		rdma_destroy_id(req->id);
		return 0;
	}
	*c = (struct conn){ .srv = s, .id = req->id, .req = *req };
	memcpy(c->peer, name, sizeof(c->peer));
	snprintf(name, sizeof(name), "server conn %u", ++s->seq);
	rc_log_init(&c->log, name, s->opt.rc.verbose);
	atomic_fetch_add(&s->active, 1); /* finish() counts it out */
	/* Its own event channel: this id's events then reach only its thread. */
	c->cm_ch = rdma_create_event_channel();
	if (!c->cm_ch || fcntl(c->cm_ch->fd, F_SETFL, O_NONBLOCK))
		ret = rc_fail_call(&c->log, "rdma_create_event_channel", errno, "out of fds?");
	else if (rdma_migrate_id(c->id, c->cm_ch))
		ret = rc_fail_call(&c->log, "rdma_migrate_id", errno, NULL);
	else if (s->opt.rc.once)
		return finish(c, serve(c));
	else if ((ret = pthread_create(&t, NULL, conn_thread, c)))
		rc_fail_call(&c->log, "pthread_create", ret, "too many threads?");
	if (!ret) {
		pthread_detach(t); /* it ends, and counts itself out, by itself */
		return 0;
	}
	reject(c->id, &c->log, "server error");
	return finish(c, -EIO);
}

/* Until SIGINT/SIGTERM (--once: one client); then wait, bounded, for the threads. */
static int serve_clients(struct server *s)
{
	int fds[2] = { s->cancel_fd, s->cm_ch->fd }, ret = 0, failed = 0;
	uint64_t deadline;
	struct rc_cm_info ev;

	while (!(s->opt.rc.once && s->seq)) {
		/* No timeout: clients may come at any time; the refusals' summary may be due. */
		ret = rc_wait_readable(fds, 2, rc_ratelimit_due(&s->refusals));
		rc_ratelimit_flush(&s->refusals, rc_now_us(), false, stderr);
		if (ret == -ETIMEDOUT)
			continue;
		if (ret != 1)
			break;
		/* Copied and acknowledged: rdma_migrate_id waits for the ack. */
		ret = wait_cm_event(s->cm_ch, -1, 0, RDMA_CM_EVENT_CONNECT_REQUEST, "listening",
				    &s->log, &ev);
		if (!ret)
			failed |= on_connect_request(s, &ev);
		else if (ev.event == RDMA_CM_EVENT_DEVICE_REMOVAL ||
			 (ev.event == RC_CM_NO_EVENT && ret != -ETIMEDOUT))
			break;
	}
	rc_ratelimit_flush(&s->refusals, rc_now_us(), true, stderr);
	if (ret < 0) { /* else 0: a signal came, or --once is done */
		fprintf(stderr, "rdma-server: %s\n", s->log.err[0] ? s->log.err : strerror(-ret));
		kill(getpid(), SIGTERM); /* the listener failed: end the connections too */
	}
	deadline = rc_now_us() + (uint64_t)s->opt.rc.timeout_ms * 1000u;
	while (atomic_load(&s->active) > 0 && rc_now_us() < deadline)
		usleep(10000);
	if (atomic_load(&s->active) > 0)
		fprintf(stderr, "rdma-server: exiting before every connection ended\n");
	return ret < 0 || (s->opt.rc.once && failed) ? RC_EXIT_FAIL : RC_EXIT_OK;
}

int main(int argc, char **argv)
{
	struct server s = { .cancel_fd = -1 };
	char err[256];
	sigset_t sigs;
	int code;

	code = basic_parse_server(argc, argv, &s.opt, err, sizeof(err));
	if (code < 0)
		fprintf(stderr, "rdma-server: %s (try --help)\n", err);
	if (code)
		return code > 0 ? RC_EXIT_OK : RC_EXIT_USAGE;
	/* Line-buffered even into a pipe: scripts wait for our lines. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	rc_log_init(&s.log, "server", s.opt.rc.verbose);
	/* SIGINT and SIGTERM: a signalfd, never read, readable for good once one
	 * came: it ends every wait. Blocked before any thread: they inherit it. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	if (pthread_sigmask(SIG_BLOCK, &sigs, NULL) ||
	    (s.cancel_fd = signalfd(-1, &sigs, SFD_CLOEXEC)) < 0) {
		fprintf(stderr, "rdma-server: signalfd: %s\n", strerror(errno));
		code = RC_EXIT_FAIL;
	} else if (listen_on(&s)) {
		fprintf(stderr, "rdma-server: %s\n", s.log.err);
		code = RC_EXIT_NOCONN;
	} else {
		code = serve_clients(&s);
	}
	if (s.id)
		rdma_destroy_id(s.id); /* the listener last */
	if (s.cm_ch)
		rdma_destroy_event_channel(s.cm_ch);
	if (s.cancel_fd >= 0)
		close(s.cancel_fd);
	return code;
}
