// SPDX-License-Identifier: MIT
/*
 * 01 rdma-server: accept RDMA connections and answer every message, in
 * the order of sequence.txt: listen; at each CONNECT_REQUEST, give the new
 * id its own event channel and thread, which reads the client's HELLO,
 * creates the PD, CQ, QP and receive slots (basic_setup) and posts the
 * receives *before* accepting; then validates each message and SENDs it
 * back from the very slot it arrived in; at DISCONNECTED, releases it all
 * (basic_teardown). Each client has its own thread and resources, so one
 * cannot stall another. main(), at the end, runs the listener. What both
 * sides do the same way is in basic.c.
 *
 * 02 and 03 leave these calls, the listener and the threads to common/
 * (rc_listen, rc_serve, rc_create_qp, rc_accept, ...). That 01 makes them
 * itself, here and in basic.c, is intended: it is the lesson. From common/
 * it takes only options, the wire header, error hints, waits and output.
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
#include "rc-report.h"

/* Two receive slots: the message being answered (its reply is sent from
 * it) and the next one's, which the client sends only after our reply. A
 * slot is posted again once the SEND from it completed. */
#define RECV_DEPTH 2	/* basic_setup's room for two messages */
#define WR_SEND	   1000 /* receives: wr_id = slot; replies: WR_SEND + slot */

struct server {
	struct server_opts opt;
	struct basic_conn l;	      /* the listener; l.cancel_fd: SIGINT and SIGTERM */
	unsigned seq;		      /* connections so far, to name them */
	atomic_int active;	      /* connections being served by their threads */
	struct rc_ratelimit refusals; /* --allow: the log of refused peers */
};

/* One client: its thread's state. */
struct conn {
	struct server *srv;
	struct basic_conn v;   /* its own objects; v.buf: RECV_DEPTH slots */
	size_t slot_len;       /* one message: header + max_payload */
	struct rc_cm_info req; /* the connect request and its private data */
	uint32_t max_payload;  /* from the client's HELLO */
	struct ibv_wc early;   /* a message that completed before our reply */
	bool have_early;
	uint32_t next_seq;
	char peer[80]; /* "ADDR port N" */
};

/* 1. Listen: bind an id to the address and port; the CM queues requests. */
static int listen_on(struct server *s)
{
	struct rdma_addrinfo hints = { .ai_flags = RAI_PASSIVE, .ai_port_space = RDMA_PS_TCP };
	const char *addr = s->opt.rc.bind ? s->opt.rc.bind : "0.0.0.0";
	struct rdma_addrinfo *res;
	char name[80];
	int ret, err;

	if (basic_create_id(&s->l, s))
		return -EIO;
	/* A plain IPv4/IPv6 address: the RDMA netdev's, or "any". */
	ret = rdma_getaddrinfo(addr, s->opt.rc.port, &hints, &res);
	if (ret)
		return rc_fail(&s->l.log, ret == -1 ? errno : EINVAL,
			       "cannot use address '%s' port %s: %s", addr, s->opt.rc.port,
			       ret == -1 ? strerror(errno) : gai_strerror(ret));
	/* Claims the address and port (port 0: any free one). */
	ret = rdma_bind_addr(s->l.id, res->ai_src_addr);
	err = errno;
	rdma_freeaddrinfo(res);
	if (ret)
		return rc_fail(&s->l.log, err, "rdma_bind_addr(%s port %s): %s; hint: %s", addr,
			       s->opt.rc.port, strerror(err), rc_call_hint("rdma_bind_addr", err));
	/* Backlog 16: connect requests the CM queues while we are busy. */
	if (rdma_listen(s->l.id, 16))
		return rc_fail_call(&s->l.log, "rdma_listen", errno, NULL);
	rc_format_addr(rdma_get_local_addr(s->l.id), name, sizeof(name));
	/* Only now, really ready: scripts may connect after this line. */
	printf("listening on %s\n", name);
	return 0;
}

/* Refuse a connect request: rdma_reject with a REJECT{reason} in the
 * private data (rc_reject_id packs it), which the client prints. */
static void reject(struct rdma_cm_id *id, struct rc_log *log, const char *reason)
{
	rc_trace(log, "rdma_reject: %s", reason);
	if (rc_reject_id(id, reason))
		fprintf(stderr, "server: rdma_reject: %s; hint: the client will time out\n",
			strerror(errno));
}

/* 5. Accept, and wait for the client's RTU: ESTABLISHED. */
static int accept_client(struct conn *c)
{
	/* No RDMA READ in 01: initiator_depth, responder_resources 0. Our
	 * rnr_retry_count goes to the client's QP (rdma-common.h). */
	struct rdma_conn_param p = { .retry_count = RC_RETRY_COUNT,
				     .rnr_retry_count = RC_RNR_RETRY_COUNT };
	struct rc_cm_info ev;
	uint8_t t = RC_ACK_TIMEOUT;
	int ret;

	/* Resend after 4.096 us x 2^16 = 268 ms without an ACK (set at RTS). */
	if (rdma_set_option(c->v.id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &t, sizeof(t)))
		return rc_fail_call(&c->v.log, "rdma_set_option(ACK_TIMEOUT)", errno, NULL);
	rc_trace(&c->v.log, "rdma_accept");
	/* Moves the QP to RTR and RTS, then sends the CM's REP. */
	if (rdma_accept(c->v.id, &p))
		return rc_fail_call(&c->v.log, "rdma_accept", errno, NULL);
	ret = rc_wait_cm_event(c->v.cm_ch, RDMA_CM_EVENT_ESTABLISHED, c->v.timeout_ms,
			       c->v.cancel_fd, "accepting", &c->v.log, &ev);
	c->v.established = ev.event == RDMA_CM_EVENT_ESTABLISHED;
	return ret;
}

/* The next completion of kind want (RECV or SEND). The client's next
 * message may complete before the SEND of our last reply: it is kept for
 * the next call. Returns 1 once the client has disconnected. */
static int wait_for(struct conn *c, enum ibv_wc_opcode want, struct ibv_wc *wc)
{
	int ret;

	if (want == IBV_WC_RECV && c->have_early) {
		c->have_early = false;
		*wc = c->early;
		return 0;
	}
	while (!(ret = basic_next_wc(&c->v, wc)) && wc->opcode != want) {
		if (wc->opcode != IBV_WC_RECV || c->have_early)
			return rc_fail(&c->v.log, EPROTO, "unexpected %s completion at message %u",
				       rc_wc_opcode_str(wc->opcode), c->next_seq);
		c->early = *wc;
		c->have_early = true;
	}
	return ret;
}

/* 6. Each message in turn: validate it, SEND it back from its slot, and
 * post the slot again once that SEND has completed. */
static int answer_messages(struct conn *c)
{
	struct ibv_sge sge = { .lkey = c->v.mr->lkey };
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

	while (!(ret = wait_for(c, IBV_WC_RECV, &wc))) {
		buf = c->v.buf + wc.wr_id * c->slot_len;
		/* Validate before use: size from wc.byte_len, then the header. */
		ret = basic_msg_unpack(buf, wc.byte_len, BASIC_T_DATA, c->next_seq, c->max_payload,
				       &m, why, sizeof(why));
		if (ret)
			return rc_fail(&c->v.log, EPROTO, "bad message from client: %s", why);
		/* The reply is this message with type REPLY: rewrite the header
		 * in place and SEND straight from the slot, with no copy. */
		rc_hdr_pack(buf, BASIC_T_REPLY, m.length, m.seq);
		sge.addr = (uintptr_t)buf;
		sge.length = (uint32_t)(sizeof(struct rc_hdr) + m.length);
		wr.wr_id = WR_SEND + wc.wr_id;
		ret = ibv_post_send(c->v.id->qp, &wr, &bad);
		if (ret)
			return rc_fail_call(&c->v.log, "ibv_post_send", ret, NULL);
		rc_trace(&c->v.log, "post SEND wr_id=%" PRIu64 " len=%u signaled", wr.wr_id,
			 sge.length);
		c->next_seq++;
		/* A write(2) per line: only once the reply is on its way, and
		 * none with --quiet, where the round trip is being measured. */
		if (!c->srv->opt.quiet) {
			rc_quote(q, sizeof(q), m.body, m.length, 64);
			printf("received '%s' (%u bytes)\n", q, m.length);
		}
		ret = wait_for(c, IBV_WC_SEND, &wc);
		if (ret > 0)
			return rc_fail(&c->v.log, ECONNRESET,
				       "the client left before our reply went");
		if (ret || (ret = basic_post_recv(&c->v, (wc.wr_id - WR_SEND) * c->slot_len,
						  c->slot_len, wc.wr_id - WR_SEND)))
			return ret;
	}
	return ret < 0 ? ret : 0;
}

/* 2-7. One client, from its HELLO to its disconnect. */
static int serve(struct conn *c)
{
	char why[160];
	int ret;

	ret = basic_hello_unpack(c->req.priv, c->req.priv_len, &c->max_payload, why, sizeof(why));
	if (ret) {
		reject(c->v.id, &c->v.log, why);
		return rc_fail(&c->v.log, EPROTO, "rejected: %s", why);
	}
	c->slot_len = sizeof(struct rc_hdr) + c->max_payload;
	/* 3. PD, CQ, QP and the two slots (basic.c), then every receive
	 * posted before rdma_accept: the client may SEND the moment it is
	 * connected, and a SEND that finds no receive gets RNR NAKs. */
	if (basic_setup(&c->v, c->slot_len) || basic_post_recv(&c->v, 0, c->slot_len, 0) ||
	    basic_post_recv(&c->v, c->slot_len, c->slot_len, 1)) {
		reject(c->v.id, &c->v.log, "server could not set up the connection");
		return -EIO;
	}
	if ((ret = accept_client(c)))
		return ret;
	printf("connection from %s\n", c->peer);
	if ((ret = answer_messages(c)))
		return ret;
	printf("connection from %s closed after %u messages\n", c->peer, c->next_seq);
	/* 7. Our half of the goodbye: the CM answers the client's DREQ. */
	rc_trace(&c->v.log, "rdma_disconnect");
	c->v.established = false;
	return rdma_disconnect(c->v.id) ? rc_fail_call(&c->v.log, "rdma_disconnect", errno, NULL)
					: 0;
}

/* 8. Serve, log a failure (one line), release everything (basic.c) in
 * reverse order of creation. Returns 1 if it failed; a signal is none. */
static int run_conn(struct conn *c)
{
	int ret = serve(c), failed = ret && ret != -ECANCELED;

	if (failed)
		fprintf(stderr, "server: client %s: %s\n", c->peer, c->v.log.err);
	basic_teardown(&c->v);
	free(c);
	return failed;
}

static void *conn_thread(void *arg)
{
	atomic_int *active = &((struct conn *)arg)->srv->active;

	run_conn(arg);
	atomic_fetch_sub(active, 1); /* our last touch of shared state */
	return NULL;
}

/* 2. A connect request: the new id gets its own event channel and a thread
 * (with --once, main serves it: its result is the exit code), or a reject
 * when --max-clients are being served. Returns 1 if it failed. */
static int on_connect_request(struct server *s, const struct rc_cm_info *req)
{
	struct conn *c = NULL;
	char name[80];
	pthread_t t;
	int ret = 0;

	/* --allow (common/rc-allow.c; rc-server.c does the same for 02 and
	 * 03): the peer's address first, before anything is spent on it. */
	if (!rc_allow_match(&s->opt.rc.allow, rdma_get_peer_addr(req->id))) {
		rc_format_addr(rdma_get_peer_addr(req->id), name, sizeof(name));
		if (rc_ratelimit_take(&s->refusals, rc_now_us(), stderr))
			fprintf(stderr,
				"server: client %s: not allowed (no --allow prefix matches); "
				"refused\n",
				name);
		reject(req->id, &s->l.log, "not allowed");
		rdma_destroy_id(req->id);
		return 0;
	}
	if (atomic_load(&s->active) < s->opt.rc.max_clients)
		c = calloc(1, sizeof(*c));
	if (!c) {
		rc_format_addr(rdma_get_peer_addr(req->id), name, sizeof(name));
		fprintf(stderr, "server: rejecting %s: %d of %d clients connected\n", name,
			atomic_load(&s->active), s->opt.rc.max_clients);
		reject(req->id, &s->l.log, "server busy: too many clients, try again later");
		rdma_destroy_id(req->id);
		return 0;
	}
	*c = (struct conn){ .srv = s, .v.id = req->id, .req = *req };
	rc_format_addr(rdma_get_peer_addr(c->v.id), c->peer, sizeof(c->peer));
	snprintf(name, sizeof(name), "server conn %u", ++s->seq);
	basic_conn_init(&c->v, name, &s->opt.rc, s->l.cancel_fd);
	/* Its own event channel: this id's ESTABLISHED and DISCONNECTED then
	 * reach only its own thread. */
	c->v.cm_ch = rdma_create_event_channel();
	if (!c->v.cm_ch || fcntl(c->v.cm_ch->fd, F_SETFL, O_NONBLOCK))
		ret = rc_fail_call(&c->v.log, "rdma_create_event_channel", errno, "out of fds?");
	else if (rdma_migrate_id(c->v.id, c->v.cm_ch))
		ret = rc_fail_call(&c->v.log, "rdma_migrate_id", errno, NULL);
	else if (s->opt.rc.once)
		return run_conn(c);
	atomic_fetch_add(&s->active, 1);
	if (!ret && (ret = pthread_create(&t, NULL, conn_thread, c)))
		rc_fail_call(&c->v.log, "pthread_create", ret, "too many threads?");
	if (!ret) {
		pthread_detach(t); /* it ends, and counts itself out, by itself */
		return 0;
	}
	atomic_fetch_sub(&s->active, 1);
	fprintf(stderr, "server: client %s: %s\n", c->peer, c->v.log.err);
	reject(c->v.id, &c->v.log, "server error");
	basic_teardown(&c->v);
	free(c);
	return 1;
}

/* Serve until SIGINT/SIGTERM, or with --once until the first client has
 * left; then wait (bounded) for the connections, which the signal ends. */
static int serve_clients(struct server *s)
{
	int fds[2] = { s->l.cancel_fd, s->l.cm_ch->fd }, ret = 0, failed = 0;
	uint64_t deadline;
	struct rc_cm_info ev;

	while (!(s->opt.rc.once && s->seq)) {
		/* No timeout: a server waits for clients as long as it runs,
		 * unless a second of refused requests ends (its summary). */
		ret = rc_wait_readable(fds, 2, rc_ratelimit_due(&s->refusals));
		rc_ratelimit_flush(&s->refusals, rc_now_us(), false, stderr);
		if (ret == -ETIMEDOUT)
			continue;
		if (ret != 1)
			break;
		/* Copies the event and acknowledges it: then the new id may be
		 * migrated to its own channel (which waits for that). */
		ret = rc_wait_cm_event(s->l.cm_ch, RDMA_CM_EVENT_CONNECT_REQUEST, 0, -1,
				       "listening", &s->l.log, &ev);
		if (!ret)
			failed |= on_connect_request(s, &ev);
		else if (ev.event == RDMA_CM_EVENT_DEVICE_REMOVAL ||
			 (ev.event == RC_CM_NO_EVENT && ret != -ETIMEDOUT))
			break;
	}
	rc_ratelimit_flush(&s->refusals, rc_now_us(), true, stderr);
	if (ret < 0) { /* else 0: a signal came, or --once is done */
		fprintf(stderr, "rdma-server: %s\n",
			s->l.log.err[0] ? s->l.log.err : strerror(-ret));
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
	struct server s = { .l.cancel_fd = -1 };
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
	basic_conn_init(&s.l, "server", &s.opt.rc, -1);
	/* SIGINT and SIGTERM become a signalfd, never read: once a signal came
	 * it stays readable and ends every thread's waits. Blocked in every
	 * thread: the connections' threads inherit the mask. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	if (pthread_sigmask(SIG_BLOCK, &sigs, NULL) ||
	    (s.l.cancel_fd = signalfd(-1, &sigs, SFD_CLOEXEC)) < 0) {
		fprintf(stderr, "rdma-server: signalfd: %s\n", strerror(errno));
		code = RC_EXIT_FAIL;
	} else if (listen_on(&s)) {
		fprintf(stderr, "rdma-server: %s\n", s.l.log.err);
		code = RC_EXIT_NOCONN;
	} else {
		code = serve_clients(&s);
	}
	basic_teardown(&s.l); /* the listener last */
	if (s.l.cancel_fd >= 0)
		close(s.l.cancel_fd);
	return code;
}
