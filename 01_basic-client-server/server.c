// SPDX-License-Identifier: MIT
/*
 * 01 rdma-server: accept RDMA connections and answer every message. This
 * file makes every librdmacm and ibverbs call of the server's side itself,
 * in the order of sequence.txt: listen; at each CONNECT_REQUEST, a thread
 * for the new id that reads the client's HELLO from the private data,
 * creates the PD, CQ and QP, registers the receive slots and posts them
 * *before* accepting; then receives each message, validates it, and SENDs
 * it back from the very slot it arrived in; at DISCONNECTED, releases
 * everything. Each client has its own thread and resources, so one client
 * cannot stall another. main(), at the end, runs the listener.
 *
 * The path from a message's completion to the reply's ibv_post_send is
 * the server's share of every round trip, so it holds only what must come
 * first: validation, and the one header field that changes. Reposting the
 * receive and printing happen once the reply is on its way.
 *
 * 02 and 03 leave these calls, the listener and the threads to common/
 * (rc_listen, rc_serve, rc_create_qp, rc_accept, ...). That 01 does them
 * again here is intended: it is the lesson. From common/ it takes only
 * option parsing, the wire header, error hints and the bounded waits.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "basic.h"

/*
 * Two receive slots: one holds the message being answered (its reply is
 * sent from it), the other is posted for the client's next message. The
 * client sends that only after it has our reply, and we repost a slot as
 * soon as the SEND from it completed, which is at the latest when the
 * next message arrives (wait_send_done): so a receive is always posted.
 */
#define RECV_DEPTH 2
#define WR_SEND	   1000 /* receives: wr_id = slot; replies: WR_SEND + slot */

struct server {
	struct server_opts opt;
	struct rc_log log;
	struct rdma_event_channel *cm_ch; /* the listener's: connect requests */
	struct rdma_cm_id *listen_id;
	int stop_fd;	     /* signalfd: SIGINT or SIGTERM arrived */
	int cancel_fd;	     /* eventfd: written once, ends every connection's waits */
	int done_fd;	     /* eventfd: a connection's thread has finished */
	unsigned seq, ended; /* connections started, and ended (done_fd) */
	atomic_bool failed;  /* one of them failed (the exit code of --once) */
};

/* One client: its thread's state and verbs resources. */
struct conn {
	struct server *srv;
	struct rc_log log;
	struct rdma_event_channel *cm_ch; /* this id's events only */
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *comp_ch;
	struct ibv_cq *cq;
	uint8_t *slots; /* RECV_DEPTH receive slots of slot_len bytes */
	struct ibv_mr *mr;
	size_t slot_len;   /* one message: header + max_payload */
	uint8_t priv[256]; /* the connect request's private data */
	size_t priv_len;
	uint32_t max_payload;	/* from the client's HELLO */
	bool established;	/* and we have not disconnected */
	bool peer_disconnected; /* DISCONNECTED seen */
	bool send_busy;		/* the last reply's SEND has not completed */
	uint32_t next_seq;
	char peer[80]; /* "ADDR port N" */
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

/* 1. Listen: bind an id to the address and port; the CM queues requests. */
static int listen_on(struct server *s)
{
	struct rdma_addrinfo hints = { .ai_flags = RAI_PASSIVE, .ai_port_space = RDMA_PS_TCP };
	const char *addr = s->opt.rc.bind ? s->opt.rc.bind : "0.0.0.0";
	struct rdma_addrinfo *res;
	char name[80];
	int ret, err;

	/* The CM reports connect requests as events on this channel. */
	s->cm_ch = rdma_create_event_channel();
	if (!s->cm_ch)
		return rc_fail_call(&s->log, "rdma_create_event_channel", errno,
				    "is the rdma_ucm module loaded (`modprobe rdma_ucm`)?");
	/* Non-blocking: we wait only in poll(). */
	if (fcntl(s->cm_ch->fd, F_SETFL, O_NONBLOCK))
		return rc_fail_call(&s->log, "fcntl(O_NONBLOCK)", errno, "see fcntl(2)");
	/* RDMA_PS_TCP: reliable connected QPs, with ports as in TCP. */
	if (rdma_create_id(s->cm_ch, &s->listen_id, s, RDMA_PS_TCP))
		return rc_fail_call(&s->log, "rdma_create_id", errno, "see rdma_create_id(3)");
	/* A plain IPv4/IPv6 address: the RDMA netdev's, or "any". */
	ret = rdma_getaddrinfo(addr, s->opt.rc.port, &hints, &res);
	if (ret)
		return rc_fail(&s->log, ret == -1 ? errno : EINVAL,
			       "cannot use address '%s' port %s: %s", addr, s->opt.rc.port,
			       ret == -1 ? strerror(errno) : gai_strerror(ret));
	/* Claims the address and port (port 0: any free one). */
	ret = rdma_bind_addr(s->listen_id, res->ai_src_addr);
	err = errno;
	rdma_freeaddrinfo(res);
	if (ret)
		return rc_fail(&s->log, err, "rdma_bind_addr(%s port %s): %s; hint: %s", addr,
			       s->opt.rc.port, strerror(err),
			       err == EADDRINUSE ? "another program listens on that port; try -p 0"
						 : rc_cm_event_hint(RDMA_CM_EVENT_ADDR_ERROR, 0));
	/* Backlog 16: connect requests the CM queues while we are busy. */
	if (rdma_listen(s->listen_id, 16))
		return rc_fail_call(&s->log, "rdma_listen", errno, "see rdma_listen(3)");
	name_addr(rdma_get_local_addr(s->listen_id), name, sizeof(name));
	/* Only now, really ready: scripts may connect after this line. */
	printf("listening on %s\n", name);
	return 0;
}

/* Refuse a connect request with a REJECT{reason}: the client prints it. */
static void reject(struct rdma_cm_id *id, struct rc_log *log, const char *reason)
{
	uint8_t priv[128];
	size_t n = strnlen(reason, sizeof(priv) - sizeof(struct rc_hdr));

	rc_hdr_pack(priv, RC_T_REJECT, (uint32_t)n, 0);
	memcpy(priv + sizeof(struct rc_hdr), reason, n);
	rc_trace(log, "rdma_reject: %s", reason);
	/* The CM answers the REQ with a REJ that carries priv. */
	if (rdma_reject(id, priv, (uint8_t)(sizeof(struct rc_hdr) + n)))
		fprintf(stderr, "server: rdma_reject: %s; hint: the client will time out\n",
			strerror(errno));
}

/* 3. PD, completion channel, CQ and QP on the new id's device. */
static int create_qp(struct conn *c)
{
	struct ibv_qp_init_attr attr = {
		.cap = { .max_send_wr = 2,
			 .max_recv_wr = RECV_DEPTH,
			 .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC, /* reliable connected: acknowledged, in order */
		.sq_sig_all = 0,       /* each send says whether it wants a completion */
	};
	struct ibv_context *dev = c->id->verbs;

	/* The protection domain: the QP may use only memory registered in it. */
	c->pd = ibv_alloc_pd(dev);
	if (!c->pd)
		return rc_fail_call(&c->log, "ibv_alloc_pd", errno, "is the device usable?");
	/* Lets the thread sleep until a completion arrives. */
	c->comp_ch = ibv_create_comp_channel(dev);
	if (!c->comp_ch)
		return rc_fail_call(&c->log, "ibv_create_comp_channel", errno,
				    "see ibv_create_comp_channel(3)");
	if (fcntl(c->comp_ch->fd, F_SETFL, O_NONBLOCK))
		return rc_fail_call(&c->log, "fcntl(O_NONBLOCK)", errno, "see fcntl(2)");
	/* Room for every WR of both queues: an overflow fails the QP. */
	c->cq = ibv_create_cq(dev, 2 + RECV_DEPTH, NULL, c->comp_ch, 0);
	if (!c->cq)
		return rc_fail_call(&c->log, "ibv_create_cq", errno, "see `ibv_devinfo -v`");
	attr.send_cq = attr.recv_cq = c->cq;
	/* On the new id: the CM moves it to RTR and RTS as we accept. */
	if (rdma_create_qp(c->id, c->pd, &attr))
		return rc_fail_call(&c->log, "rdma_create_qp", errno,
				    "`ibv_devinfo -v` shows the device limits");
	rc_trace(&c->log, "created RC QP %u (send %u, recv %u) on %s, CQ of %d", c->id->qp->qp_num,
		 attr.cap.max_send_wr, attr.cap.max_recv_wr, ibv_get_device_name(dev->device),
		 c->cq->cqe);
	return 0;
}

/* Post the receive of slot: the NIC may put the next message there. */
static int post_recv(struct conn *c, uint64_t slot)
{
	struct ibv_sge sge = { (uintptr_t)(c->slots + slot * c->slot_len), (uint32_t)c->slot_len,
			       c->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1 }, *bad;
	int ret;

	rc_trace(&c->log, "post RECV wr_id=%" PRIu64 " len=%zu", slot, c->slot_len);
	ret = ibv_post_recv(c->id->qp, &wr, &bad);
	if (ret)
		return rc_fail_call(&c->log, "ibv_post_recv", ret,
				    ret == ENOMEM ? "more receives posted than max_recv_wr"
						  : "is the QP in the error state?");
	return 0;
}

/* 4. The receive slots, registered, and every receive posted. */
static int register_slots(struct conn *c)
{
	uint64_t i;
	int ret;

	c->slots = calloc(RECV_DEPTH, c->slot_len);
	if (!c->slots)
		return rc_fail(&c->log, ENOMEM, "out of memory");
	/* The NIC writes into the slots (LOCAL_WRITE) and reads the replies
	 * from them (local reads need no flag). Nothing is open to the
	 * peer: no REMOTE_*. No send buffer: a reply is its request with a
	 * new header. */
	c->mr = ibv_reg_mr(c->pd, c->slots, RECV_DEPTH * c->slot_len, IBV_ACCESS_LOCAL_WRITE);
	if (!c->mr)
		return rc_fail_call(
			&c->log, "ibv_reg_mr", errno,
			errno == ENOMEM || errno == EPERM
				? "registered memory is locked memory: raise `ulimit -l`"
				: "check the access flags");
	rc_trace(&c->log, "registered %zu bytes lkey=0x%x rkey=0x%x", RECV_DEPTH * c->slot_len,
		 c->mr->lkey, c->mr->rkey);
	/* All before rdma_accept: the client may SEND the moment it is
	 * connected, and a SEND that finds no receive gets RNR NAKs. */
	for (i = 0; i < RECV_DEPTH; i++)
		if ((ret = post_recv(c, i)))
			return ret;
	return 0;
}

/* 5. Accept, and wait for the client's RTU: ESTABLISHED. */
static int accept_client(struct conn *c)
{
	/* No RDMA READ in 01: initiator_depth, responder_resources 0. The
	 * retry limits as the client's (rdma-common.c explains them). */
	struct rdma_conn_param p = { .retry_count = RC_RETRY_COUNT,
				     .rnr_retry_count = RC_RNR_RETRY_COUNT };
	struct rc_cm_info ev;
	uint8_t t = RC_ACK_TIMEOUT;
	int ret;

	/* Resend after 4.096 us x 2^16 = 268 ms without an ACK (set at RTS). */
	if (rdma_set_option(c->id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &t, sizeof(t)))
		return rc_fail_call(&c->log, "rdma_set_option(ACK_TIMEOUT)", errno,
				    "see rdma_set_option(3)");
	rc_trace(&c->log, "rdma_accept");
	/* Moves the QP to RTR and RTS, then sends the CM's REP. */
	if (rdma_accept(c->id, &p))
		return rc_fail_call(&c->log, "rdma_accept", errno, "see rdma_accept(3)");
	ret = rc_wait_cm_event(c->cm_ch, RDMA_CM_EVENT_ESTABLISHED, c->srv->opt.rc.timeout_ms,
			       c->srv->cancel_fd, "accepting", &c->log, &ev);
	c->established = ev.event == RDMA_CM_EVENT_ESTABLISHED;
	return ret;
}

/*
 * The next completion, as in client.c's next_wc, and also ended by a
 * shutdown. Returns 1 once the client has disconnected and every
 * completion is taken.
 */
static int next_wc(struct conn *c, struct ibv_wc *wc)
{
	int fds[2] = { c->cm_ch->fd, c->srv->cancel_fd }, n, ret;
	struct rc_cq_wait w = { 0 };
	bool armed = false, busy;
	struct rc_cm_info ev;
	struct ibv_cq *cq;
	void *ctx;

	for (;;) {
		n = ibv_poll_cq(c->cq, 1, wc);
		if (n > 0)
			return rc_wc_check(&c->log, wc);
		if (n < 0)
			return rc_fail(&c->log, EIO, "ibv_poll_cq failed (%d)", n);
		busy = c->srv->opt.rc.busy_poll && !c->peer_disconnected;
		if (!busy && !armed) {
			/* An event for the next completion; poll once more. */
			if (ibv_req_notify_cq(c->cq, 0))
				return rc_fail_call(&c->log, "ibv_req_notify_cq", errno,
						    "see ibv_req_notify_cq(3)");
			armed = true;
			continue;
		}
		if (c->peer_disconnected)
			return 1; /* the client said goodbye; nothing is left */
		ret = rc_wait_cq(&w, busy ? NULL : c->comp_ch, fds, 2, c->srv->opt.rc.timeout_ms,
				 &c->log);
		if (ret == 1) {
			/* The CM: DISCONNECTED. Take what is queued first. */
			ret = rc_wait_cm_event(c->cm_ch, RDMA_CM_EVENT_DISCONNECTED, 0, -1,
					       "serving", &c->log, &ev);
			if (ret)
				return ret;
			c->peer_disconnected = true;
		} else if (ret == 2) {
			return rc_fail(&c->log, ECANCELED, "cancelled (shutting down)");
		} else if (ret < 0) {
			return ret;
		} else if (!busy && ibv_get_cq_event(c->comp_ch, &cq, &ctx) == 0) {
			/* Acknowledged: ibv_destroy_cq waits for every event. */
			ibv_ack_cq_events(cq, 1);
			armed = false;
		}
	}
}

/* A reply's SEND completed: its slot may receive again. */
static int reply_sent(struct conn *c, const struct ibv_wc *wc)
{
	uint64_t slot = wc->wr_id - WR_SEND;

	if (wc->opcode != IBV_WC_SEND || wc->wr_id < WR_SEND || slot >= RECV_DEPTH || !c->send_busy)
		return rc_fail(&c->log, EPROTO, "unexpected completion %s wr_id=%" PRIu64,
			       rc_wc_opcode_str(wc->opcode), wc->wr_id);
	c->send_busy = false;
	return post_recv(c, slot);
}

/* Wait until the previous reply's SEND completed and its slot is posted
 * again. (It usually has by now: the client's next message follows its
 * acknowledgement of our reply.) */
static int wait_send_done(struct conn *c)
{
	struct ibv_wc wc;
	int ret;

	while (c->send_busy) {
		ret = next_wc(c, &wc);
		if (ret > 0)
			return rc_fail(&c->log, ECONNRESET,
				       "the client left before our reply went");
		if (ret)
			return ret;
		if (wc.opcode != IBV_WC_SEND)
			return rc_fail(&c->log, EPROTO,
				       "client sent message %u before its previous reply completed",
				       c->next_seq);
		if ((ret = reply_sent(c, &wc)))
			return ret;
	}
	return 0;
}

/* 6. A message arrived in slot wc->wr_id: validate it, answer from it. */
static int on_message(struct conn *c, const struct ibv_wc *wc)
{
	uint64_t slot = wc->wr_id;
	uint8_t *buf = c->slots + slot * c->slot_len;
	struct ibv_sge sge = { (uintptr_t)buf, 0, c->mr->lkey };
	struct ibv_send_wr *bad, wr = { .wr_id = WR_SEND + slot,
					.sg_list = &sge,
					.num_sge = 1,
					.opcode = IBV_WR_SEND,
					.send_flags = IBV_SEND_SIGNALED };
	struct rc_msg m;
	char why[160], q[300];
	int ret;

	if (slot >= RECV_DEPTH)
		return rc_fail(&c->log, EPROTO, "unexpected completion RECV wr_id=%" PRIu64, slot);
	/* Validate before use: size from wc.byte_len, then the header. */
	ret = basic_msg_unpack(buf, wc->byte_len, BASIC_T_DATA, c->next_seq, c->max_payload, &m,
			       why, sizeof(why));
	if (ret)
		return rc_fail(&c->log, EPROTO, "bad message from client: %s", why);
	if ((ret = wait_send_done(c)))
		return ret;
	/*
	 * The reply is this message with type REPLY: rewrite the header in
	 * place and SEND straight from the receive slot. No copy of the
	 * payload, and no other buffer to touch. The slot is reposted only
	 * when this SEND has completed (reply_sent): until then the NIC
	 * reads from it. Signalled for exactly that reason.
	 */
	rc_hdr_pack(buf, BASIC_T_REPLY, m.length, m.seq);
	sge.length = (uint32_t)(sizeof(struct rc_hdr) + m.length);
	ret = ibv_post_send(c->id->qp, &wr, &bad);
	if (ret)
		return rc_fail_call(&c->log, "ibv_post_send", ret,
				    ret == ENOMEM ? "more WRs outstanding than max_send_wr"
						  : "is the QP in the error state?");
	rc_trace(&c->log, "post SEND wr_id=%" PRIu64 " len=%u signaled", wr.wr_id, sge.length);
	c->send_busy = true;
	c->next_seq++;
	/* One write(2) per message when stdout is line-buffered, so after
	 * the reply is on its way; --quiet leaves it out altogether where
	 * the round trip itself is being measured. */
	if (!c->srv->opt.quiet) {
		basic_quote(q, sizeof(q), m.body, m.length, 64);
		printf("received '%s' (%u bytes)\n", q, m.length);
	}
	return 0;
}

/* 2-7. One client, from its HELLO to its disconnect. */
static int serve(struct conn *c)
{
	struct ibv_wc wc;
	char why[160];
	int ret;

	ret = basic_hello_unpack(c->priv, c->priv_len, &c->max_payload, why, sizeof(why));
	if (ret) {
		reject(c->id, &c->log, why);
		return rc_fail(&c->log, EPROTO, "rejected: %s", why);
	}
	c->slot_len = sizeof(struct rc_hdr) + c->max_payload;
	if (create_qp(c) || register_slots(c)) {
		reject(c->id, &c->log, "server could not set up the connection");
		return -EIO;
	}
	if ((ret = accept_client(c)))
		return ret;
	printf("connection from %s\n", c->peer);
	while (!(ret = next_wc(c, &wc))) {
		if (wc.opcode == IBV_WC_SEND)
			ret = reply_sent(c, &wc);
		else if (wc.opcode == IBV_WC_RECV)
			ret = on_message(c, &wc);
		else
			ret = rc_fail(&c->log, EPROTO, "unexpected completion %s wr_id=%" PRIu64,
				      rc_wc_opcode_str(wc.opcode), wc.wr_id);
		if (ret)
			return ret;
	}
	if (ret < 0)
		return ret;
	printf("connection from %s closed after %u messages\n", c->peer, c->next_seq);
	/* 7. Our half of the goodbye: the CM answers the client's DREQ. */
	rc_trace(&c->log, "rdma_disconnect");
	c->established = false;
	if (rdma_disconnect(c->id))
		return rc_fail_call(&c->log, "rdma_disconnect", errno, "see rdma_disconnect(3)");
	return 0;
}

/* 8. Release the connection's resources in reverse order of creation. */
static void teardown(struct conn *c)
{
	if (c->established)
		rdma_disconnect(c->id); /* a failure midway: still tell the client */
	if (c->id && c->id->qp)
		rdma_destroy_qp(c->id); /* first: then nothing uses the MR */
	if (c->mr)
		ibv_dereg_mr(c->mr);
	if (c->cq)
		ibv_destroy_cq(c->cq);
	if (c->comp_ch)
		ibv_destroy_comp_channel(c->comp_ch);
	if (c->pd)
		ibv_dealloc_pd(c->pd);
	if (c->id)
		rdma_destroy_id(c->id);
	if (c->cm_ch)
		rdma_destroy_event_channel(c->cm_ch);
	free(c->slots);
	free(c);
}

/* A connection's thread: serve, log a failure (one line), release. */
static void *conn_thread(void *arg)
{
	struct conn *c = arg;
	struct server *s = c->srv;
	uint64_t one = 1;
	int ret = serve(c);

	if (ret && ret != -ECANCELED) {
		fprintf(stderr, "server: client %s: %s\n", c->peer, c->log.err);
		atomic_store(&s->failed, true);
	}
	teardown(c);
	/* Our last touch of shared state: the main loop counts us out. */
	if (write(s->done_fd, &one, sizeof(one)) < 0)
		perror("server: write(eventfd)");
	return NULL;
}

/* Count the connections whose threads have ended since the last look. */
static void count_ended(struct server *s)
{
	uint64_t n;

	if (read(s->done_fd, &n, sizeof(n)) == sizeof(n))
		s->ended += (unsigned)n;
	else if (errno != EAGAIN)
		perror("server: read(eventfd)");
}

/* 2. A connect request: a thread of its own for the new id, or a reject
 * when --max-clients are being served. */
static void on_connect_request(struct server *s, const struct rc_cm_info *req)
{
	struct conn *c;
	char name[32];
	pthread_t t;
	int ret = 0;
	bool full;

	count_ended(s);
	full = s->seq - s->ended >= (unsigned)s->opt.rc.max_clients;
	c = full ? NULL : calloc(1, sizeof(*c));
	if (!c) {
		char peer[80];

		name_addr(rdma_get_peer_addr(req->id), peer, sizeof(peer));
		if (full)
			fprintf(stderr, "server: rejecting %s: %d clients already connected\n",
				peer, s->opt.rc.max_clients);
		else
			fprintf(stderr, "server: rejecting %s: out of memory\n", peer);
		reject(req->id, &s->log, "server busy: too many clients, try again later");
		rdma_destroy_id(req->id);
		return;
	}
	*c = (struct conn){ .srv = s, .id = req->id, .priv_len = req->priv_len };
	memcpy(c->priv, req->priv, req->priv_len);
	name_addr(rdma_get_peer_addr(c->id), c->peer, sizeof(c->peer));
	snprintf(name, sizeof(name), "server conn %u", ++s->seq);
	rc_log_init(&c->log, name, s->opt.rc.verbose);
	/* Its own event channel: this id's ESTABLISHED and DISCONNECTED then
	 * reach only its own thread. */
	c->cm_ch = rdma_create_event_channel();
	if (!c->cm_ch || fcntl(c->cm_ch->fd, F_SETFL, O_NONBLOCK))
		ret = rc_fail_call(&c->log, "rdma_create_event_channel", errno, "out of fds?");
	else if (rdma_migrate_id(c->id, c->cm_ch))
		ret = rc_fail_call(&c->log, "rdma_migrate_id", errno, "see rdma_migrate_id(3)");
	if (!ret && (ret = pthread_create(&t, NULL, conn_thread, c)))
		rc_fail_call(&c->log, "pthread_create", ret, "too many threads?");
	if (!ret) {
		pthread_detach(t); /* it ends by itself; done_fd tells us when */
		return;
	}
	s->ended++;
	atomic_store(&s->failed, true);
	fprintf(stderr, "server: client %s: %s\n", c->peer, c->log.err);
	reject(c->id, &c->log, "server error");
	teardown(c);
}

/* Serve until SIGINT/SIGTERM, or with --once until the first client
 * leaves; then end every connection and wait for it. */
static int serve_clients(struct server *s)
{
	struct pollfd p[3] = { { .fd = s->stop_fd, .events = POLLIN },
			       { .fd = s->done_fd, .events = POLLIN },
			       { .fd = s->cm_ch->fd, .events = POLLIN } };
	bool once = s->opt.rc.once;
	const uint64_t one = 1;
	struct rc_cm_info ev;
	int ret = 0;

	while (!(once && s->seq && s->seq == s->ended)) {
		/* No timeout: a server waits for clients as long as it runs.
		 * With --once, no more requests after the first. */
		if (poll(p, once && s->seq ? 2 : 3, -1) < 0) {
			ret = rc_fail_call(&s->log, "poll", errno, "see poll(2)");
			break;
		}
		if (p[0].revents)
			break; /* SIGINT or SIGTERM */
		if (p[1].revents)
			count_ended(s);
		if (!(p[2].revents & POLLIN))
			continue;
		/* Copies the event and acknowledges it: then the new id may be
		 * migrated to its own channel (which waits for that). */
		ret = rc_wait_cm_event(s->cm_ch, RDMA_CM_EVENT_CONNECT_REQUEST, 0, -1, "listening",
				       &s->log, &ev);
		if (!ret)
			on_connect_request(s, &ev);
		else if (ev.event == RDMA_CM_EVENT_DEVICE_REMOVAL ||
			 (ev.event == RC_CM_NO_EVENT && ret != -ETIMEDOUT))
			break;
		ret = 0;
	}
	/* Shutting down: wake every connection's waits, then wait for it. */
	if (write(s->cancel_fd, &one, sizeof(one)) < 0)
		perror("server: write(eventfd)");
	while (s->ended < s->seq)
		if (poll(p + 1, 1, -1) > 0)
			count_ended(s);
	if (ret)
		fprintf(stderr, "rdma-server: %s\n", s->log.err);
	return ret || (once && atomic_load(&s->failed)) ? RC_EXIT_FAIL : RC_EXIT_OK;
}

int main(int argc, char **argv)
{
	struct server s = { .stop_fd = -1, .cancel_fd = -1, .done_fd = -1 };
	char err[256];
	sigset_t sigs;
	int code;

	code = basic_parse_server(argc, argv, &s.opt, err, sizeof(err));
	if (code) {
		if (code < 0)
			fprintf(stderr, "rdma-server: %s (try --help)\n", err);
		return code > 0 ? RC_EXIT_OK : RC_EXIT_USAGE;
	}
	/* Line-buffered even into a pipe: scripts wait for our lines. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	rc_log_init(&s.log, "server", s.opt.rc.verbose);
	/* SIGINT and SIGTERM become a readable fd. Blocked in every thread:
	 * the connections' threads inherit the mask. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	if (pthread_sigmask(SIG_BLOCK, &sigs, NULL) ||
	    (s.stop_fd = signalfd(-1, &sigs, SFD_CLOEXEC)) < 0 ||
	    (s.cancel_fd = eventfd(0, EFD_CLOEXEC)) < 0 ||
	    (s.done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
		fprintf(stderr, "rdma-server: signalfd/eventfd: %s\n", strerror(errno));
		code = RC_EXIT_FAIL;
	} else if (listen_on(&s)) {
		fprintf(stderr, "rdma-server: %s\n", s.log.err);
		code = RC_EXIT_NOCONN;
	} else {
		code = serve_clients(&s);
	}
	/* The listener last, in reverse order of creation. */
	if (s.listen_id)
		rdma_destroy_id(s.listen_id);
	if (s.cm_ch)
		rdma_destroy_event_channel(s.cm_ch);
	if (s.stop_fd >= 0)
		close(s.stop_fd);
	if (s.cancel_fd >= 0)
		close(s.cancel_fd);
	if (s.done_fd >= 0)
		close(s.done_fd);
	return code;
}
