// SPDX-License-Identifier: MIT
/*
 * rxe-read-send - the smallest verbs program that shows a Soft-RoCE bug:
 * RDMA READs and SENDs on one RC QP, with retransmissions (packet loss, or
 * an ACK timeout short enough to fire while responses are still on their
 * way), make rdma_rxe on Linux 6.12 and 7.x move the QP to the error state
 * without an error completion: the kernel logs
 *   WARNING ... rxe_comp.c:827 rxe_completer
 * and every WR still queued completes with IBV_WC_WR_FLUSH_ERR.
 *
 * Why (drivers/infiniband/sw/rxe/rxe_comp.c, 6.12 and 7.3): check_psn()
 * passes an ACKNOWLEDGE whose PSN is older than the one expected to
 * check_ack() while a multi-packet READ response is under way (added
 * there to catch a NAK in the middle of a READ); check_ack() takes a plain
 * ACK as one for a SEND and resets comp.opcode to -1 ("between
 * messages"). The next READ_RESPONSE_MIDDLE then fails the "-1 expects a
 * FIRST or ONLY" check: COMPST_ERROR with wqe->status still IB_WC_SUCCESS.
 * An old ACK comes from the responder answering a resent SEND (go-back-N
 * resends every WR after the lost packet) while the READ after it is
 * being answered. Linux 6.1 ignores such an ACK. Without SENDs on the QP
 * (perftest's ib_read_bw) there are no ACKs, only READ responses.
 *
 * No protocol of the project: the server registers a buffer and hands its
 * address and rkey over in the connection's private data; the client keeps
 * DEPTH READs of SIZE bytes in flight, and after each READ completes it
 * SENDs 16 bytes (unless --reads-only) and posts the next READ: the
 * pattern of 03_file-transfer's get (READ a chunk, SEND its credit).
 * READ k goes to server slot k % (SPREAD x DEPTH) and lands in client slot
 * k % DEPTH: each reuse of a client slot brings other bytes, so a READ
 * that completes with zeros or with another READ's bytes is caught.
 * --gate posts a READ only when every SEND before it has completed (been
 * acknowledged): the SEND queue then never holds a READ behind an
 * unacknowledged SEND, so a resent SEND can no longer be answered while a
 * READ after it is being answered (the avoidance 03's get uses).
 *
 * --split: the same READs and SENDs on two RC QPs of one PD (and CQ): the
 * client opens two connections to the server (its first request says so
 * in the private data, its second is marked as the second), keeps DEPTH
 * READs in flight on QP 2 and SENDs 16 bytes on QP 1 after each READ
 * completes, then posts the next READ on QP 2: 03's get with its READs on
 * a connection of their own. rdma_rxe's completer keeps its state per QP,
 * so a resent SEND's ACK can no longer meet a READ response under way;
 * this mode checks that with the same data checks and exit statuses.
 * QP 1's send queue has room for a SEND for every READ of the run (-n at
 * most SPLIT_MAX), so a SEND waiting out an ACK timeout on QP 1 never holds
 * back the READs on QP 2: the two queues run on their own. A SEND that
 * exhausts the retry count ends the run as under mix (exit 4).
 *
 * --writes: a second question, on the retry count. The client keeps DEPTH
 * WRITEs of SIZE bytes in flight into the server's buffer, no SENDs or
 * READs: the pattern of 02_read-write's `--op write -s 4M -n 20`. rdma_rxe
 * counts each NAK for a gap against the retry count (rxe_comp.c: a
 * sequence NAK goes to COMPST_ERROR_RETRY, which decrements it) and
 * restores the count only on a positive ACK, so under loss a live peer can
 * exhaust it: IBV_WC_RETRY_EXC_ERR, exit 4. --retry-count 7 means "never
 * give up" on rxe (perftest's default).
 *
 *   rxe-read-send server [-p PORT] [-s SIZE] [-d DEPTH] [--idle SECONDS]
 *   rxe-read-send client HOST [-p PORT] [-n OPS]
 *                        [--reads-only | --gate | --split | --writes]
 *                        [--ack-timeout EXP] [--retry-count N] [--timeout SECONDS]
 *
 * Client exit status: 0 every READ completed with the right data (or every
 * WRITE completed); 3 the bug: the first unsuccessful completion is
 * IBV_WC_WR_FLUSH_ERR (no error came before it), or a READ "succeeded" with
 * other data than its server slot's; 4 the first unsuccessful completion is
 * IBV_WC_RETRY_EXC_ERR; 1 any other failure (an error status, a timeout);
 * 2 usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define SEND_BYTES 16
#define WR_SEND	   ((uint64_t)1 << 62) /* wr_id of a SEND: this bit and the READ's index */
#define NRECV	   1024		       /* receives the server keeps posted */
#define SPREAD	   4	       /* server slots per client slot, while the ring stays small */
#define SPREAD_MAX (64u << 20) /* above this (--writes -s 4M): one per client slot */
#define SPLIT_MAX  16383       /* --split's READs: QP 1's SEND queue, rdma_rxe's max_qp_wr - 1 */

struct hello { /* private data of rdma_accept, host order (one machine type) */
	uint64_t addr;
	uint32_t rkey, size, depth;
	uint32_t slots; /* the server's ring: depth x SPREAD slots of size, or depth */
};

/* Private data of rdma_connect, host order: a --split client's first
 * request says qps 2, its second says nth 2; zeros (an older client) mean
 * one connection. */
struct ask {
	uint32_t qps, nth;
};

struct opts {
	bool server, reads_only, gate, split, writes;
	const char *host, *port;
	uint32_t size, depth;
	uint64_t reads;
	int ack_timeout; /* -1: rdma_cm's default */
	int retry_count; /* the client's QP, and through the REQ the server's */
	int timeout_s, idle_s;
};

struct conn {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id, *listen;
	struct rdma_cm_id *id2; /* --split: the READs' connection (the server's second) */
	struct ibv_pd *pd;
	struct ibv_comp_channel *cc;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;
};

static volatile sig_atomic_t stop;
static void on_signal(int sig)
{
	stop = sig;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The byte at offset i of the server's buffer (what every READ must bring). */
static uint8_t pattern(uint64_t i)
{
	return (uint8_t)(i * 131u + (i >> 10) + 7u);
}

/* Wait up to ms for the next CM event; NULL on timeout or error. */
static struct rdma_cm_event *next_event(struct rdma_event_channel *ch, int ms)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	if (poll(&p, 1, ms) <= 0 || rdma_get_cm_event(ch, &ev))
		return NULL;
	return ev;
}

static int expect_event(struct conn *c, enum rdma_cm_event_type want, struct hello *h)
{
	struct rdma_cm_event *ev = next_event(c->ch, 10000);
	int ok;

	if (!ev) {
		fprintf(stderr, "no %s within 10 s\n", rdma_event_str(want));
		return -1;
	}
	ok = ev->event == want;
	if (!ok)
		fprintf(stderr, "got %s (status %d), expected %s\n", rdma_event_str(ev->event),
			ev->status, rdma_event_str(want));
	if (ok && h && ev->param.conn.private_data_len >= sizeof(*h))
		memcpy(h, ev->param.conn.private_data, sizeof(*h));
	rdma_ack_cm_event(ev);
	return ok ? 0 : -1;
}

/* PD, CQ of cqe entries with a completion channel, and the buffer, on the
 * device verbs; the QPs come after (add_qp), sharing them. */
static int setup_res(struct conn *c, struct ibv_context *verbs, size_t bytes, int cqe, int access)
{
	c->pd = ibv_alloc_pd(verbs);
	c->cc = c->pd ? ibv_create_comp_channel(verbs) : NULL;
	c->cq = c->cc ? ibv_create_cq(verbs, cqe, NULL, c->cc, 0) : NULL;
	if (!c->cq || ibv_req_notify_cq(c->cq, 0)) {
		perror("pd/cq");
		return -1;
	}
	c->buf = aligned_alloc(4096, (bytes + 4095) & ~(size_t)4095);
	c->mr = c->buf ? ibv_reg_mr(c->pd, c->buf, bytes, access) : NULL;
	if (!c->mr) {
		perror("ibv_reg_mr");
		return -1;
	}
	return 0;
}

/* An RC QP on id with sq send WRs, on c's PD and CQ. */
static int add_qp(struct conn *c, struct rdma_cm_id *id, uint32_t sq)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC, .sq_sig_all = 1, .send_cq = c->cq, .recv_cq = c->cq
	};

	qa.cap = (struct ibv_qp_cap){
		.max_send_wr = sq, .max_recv_wr = NRECV, .max_send_sge = 1, .max_recv_sge = 1
	};
	if (rdma_create_qp(id, c->pd, &qa)) {
		perror("rdma_create_qp");
		return -1;
	}
	return 0;
}

static void teardown(struct conn *c, struct rdma_cm_id *id)
{
	if (c->id2) { /* first: its QP is on the PD and CQ freed below */
		if (c->id2->qp)
			rdma_destroy_qp(c->id2);
		rdma_destroy_id(c->id2);
		c->id2 = NULL;
	}
	if (id && id->qp)
		rdma_destroy_qp(id);
	if (c->mr)
		ibv_dereg_mr(c->mr);
	free(c->buf);
	if (c->cq)
		ibv_destroy_cq(c->cq);
	if (c->cc)
		ibv_destroy_comp_channel(c->cc);
	if (c->pd)
		ibv_dealloc_pd(c->pd);
	c->mr = NULL, c->buf = NULL, c->cq = NULL, c->cc = NULL, c->pd = NULL;
	if (id)
		rdma_destroy_id(id);
}

/* Up to n completions, waiting at most ms for the first. <0 on error. */
static int get_wcs(struct conn *c, struct ibv_wc *wc, int n, int ms)
{
	struct pollfd p = { .fd = c->cc->fd, .events = POLLIN };
	struct ibv_cq *cq;
	void *ctx;
	int got = ibv_poll_cq(c->cq, n, wc);

	if (got)
		return got;
	if (poll(&p, 1, ms) <= 0)
		return 0;
	if (ibv_get_cq_event(c->cc, &cq, &ctx))
		return -1;
	ibv_ack_cq_events(cq, 1);
	if (ibv_req_notify_cq(cq, 0))
		return -1;
	return ibv_poll_cq(c->cq, n, wc);
}

/* ---- server: one client at a time, until SIGTERM or --idle ---------- */

static struct ask ask_of(const struct rdma_cm_event *ev)
{
	struct ask a = { 0 };

	if (ev->param.conn.private_data_len >= sizeof(a))
		memcpy(&a, ev->param.conn.private_data, sizeof(a));
	return a;
}

/* Turn down the request of ev (and ack it): not the one we wait for. */
static void refuse(struct rdma_cm_event *ev)
{
	struct rdma_cm_id *id = ev->id;

	fprintf(stderr, "server: refused a connection request (%u of %u)\n", ask_of(ev).nth,
		ask_of(ev).qps);
	rdma_reject(id, NULL, 0);
	rdma_ack_cm_event(ev);
	rdma_destroy_id(id);
}

/* Accept id and, for a --split client (qps 2), its second request, whose
 * QP (the READs': it gets no receives) shares the PD and CQ; both get the
 * same hello. Then wait until every connection is established, in any
 * order: the client connects its second once its first is established on
 * its side, and a lost RTU delays ours. */
static int accept_all(struct conn *c, struct rdma_cm_id *id, struct hello *h, uint32_t qps)
{
	struct rdma_conn_param cp = { .responder_resources = RDMA_MAX_RESP_RES,
				      .private_data = h,
				      .private_data_len = sizeof(*h) };
	double end = now_s() + 10;
	uint32_t up = 0;

	if (rdma_accept(id, &cp))
		return -1;
	while (up < qps) {
		struct rdma_cm_event *ev = next_event(c->ch, 500);
		bool ok = true;

		if (!ev) {
			if (now_s() < end)
				continue;
			fprintf(stderr, "server: %u of %u connections established within 10 s\n",
				up, qps);
			return -1;
		}
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST &&
		    (qps != 2 || c->id2 || ask_of(ev).nth != 2)) {
			refuse(ev);
			continue;
		}
		if (ev->event == RDMA_CM_EVENT_ESTABLISHED) {
			up++;
		} else if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			c->id2 = ev->id;
			ok = !add_qp(c, c->id2, 4) && !rdma_accept(c->id2, &cp);
		} else {
			fprintf(stderr, "server: %s (status %d) while accepting\n",
				rdma_event_str(ev->event), ev->status);
			ok = false;
		}
		rdma_ack_cm_event(ev);
		if (!ok)
			return -1;
	}
	return 0;
}

static int serve_one(struct conn *c, struct rdma_cm_id *id, const struct opts *o, uint32_t qps)
{
	uint32_t slots =
		(uint64_t)o->size * o->depth * SPREAD <= SPREAD_MAX ? o->depth * SPREAD : o->depth;
	size_t ring = (size_t)o->size * slots;
	struct hello h;
	struct ibv_wc wc[16];
	uint64_t recvs = 0;
	int n, i, ret = -1;

	/* The ring for READs, then the receive area behind it. */
	if (setup_res(c, id->verbs, ring + NRECV * SEND_BYTES, 4 + NRECV,
		      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE) ||
	    add_qp(c, id, 4))
		goto out;
	for (size_t k = 0; k < ring; k++)
		c->buf[k] = pattern(k);
	for (i = 0; i < NRECV; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)c->buf + ring + (size_t)i * SEND_BYTES,
				       .length = SEND_BYTES,
				       .lkey = c->mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1 },
				   *bad;

		if (ibv_post_recv(id->qp, &wr, &bad))
			goto out;
	}
	h = (struct hello){ (uintptr_t)c->buf, c->mr->rkey, o->size, o->depth, slots };
	if (accept_all(c, id, &h, qps))
		goto out;
	while (!stop) {
		struct rdma_cm_event *ev = next_event(c->ch, 0);

		if (ev) {
			int done = ev->event == RDMA_CM_EVENT_DISCONNECTED;

			rdma_ack_cm_event(ev);
			if (done)
				break;
		}
		n = get_wcs(c, wc, 16, 200);
		for (i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS)
				goto done; /* the client's QP went away */
			struct ibv_sge sge = { .addr = (uintptr_t)c->buf + ring +
						       wc[i].wr_id * SEND_BYTES,
					       .length = SEND_BYTES,
					       .lkey = c->mr->lkey };
			struct ibv_recv_wr wr = { .wr_id = wc[i].wr_id,
						  .sg_list = &sge,
						  .num_sge = 1 },
					   *bad;

			recvs++;
			if (ibv_post_recv(id->qp, &wr, &bad))
				goto out;
		}
	}
done:
	printf("server: client gone after %" PRIu64 " SENDs received\n", recvs);
	fflush(stdout);
	rdma_disconnect(id);
	if (c->id2)
		rdma_disconnect(c->id2);
	ret = 0;
out:
	teardown(c, id);
	return ret;
}

static int run_server(const struct opts *o)
{
	struct conn c = { 0 };
	struct addrinfo hints = { .ai_flags = AI_PASSIVE, .ai_family = AF_INET }, *ai;
	struct sockaddr_in sin;
	double idle_until = now_s() + o->idle_s;

	c.ch = rdma_create_event_channel();
	if (!c.ch || rdma_create_id(c.ch, &c.listen, NULL, RDMA_PS_TCP) ||
	    getaddrinfo(NULL, o->port, &hints, &ai)) {
		perror("server setup");
		return 1;
	}
	if (rdma_bind_addr(c.listen, ai->ai_addr) || rdma_listen(c.listen, 4)) {
		perror("rdma_bind_addr/listen");
		return 1;
	}
	freeaddrinfo(ai);
	memcpy(&sin, rdma_get_local_addr(c.listen), sizeof(sin));
	printf("listening on 0.0.0.0 port %u\n", ntohs(sin.sin_port));
	fflush(stdout);
	while (!stop && now_s() < idle_until) {
		struct rdma_cm_event *ev = next_event(c.ch, 500);
		struct rdma_cm_id *id;
		struct ask a;

		if (!ev)
			continue;
		id = ev->id;
		if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
			rdma_ack_cm_event(ev);
			continue;
		}
		a = ask_of(ev);
		if (a.nth > 1) { /* the second of a client we no longer serve */
			refuse(ev);
			continue;
		}
		rdma_ack_cm_event(ev);
		serve_one(&c, id, o, a.qps == 2 ? 2 : 1);
		idle_until = now_s() + o->idle_s;
	}
	rdma_destroy_id(c.listen);
	rdma_destroy_event_channel(c.ch);
	return 0;
}

/* ---- client ----------------------------------------------------------- */

/* A new id on c's channel, resolved to the server, with --ack-timeout set. */
static int resolve(struct conn *c, struct rdma_cm_id **id, const struct opts *o)
{
	struct addrinfo hints = { .ai_family = AF_INET }, *ai;
	int ret;

	if (rdma_create_id(c->ch, id, NULL, RDMA_PS_TCP) ||
	    getaddrinfo(o->host, o->port, &hints, &ai)) {
		fprintf(stderr, "cannot resolve %s port %s\n", o->host, o->port);
		return -1;
	}
	ret = rdma_resolve_addr(*id, NULL, ai->ai_addr, 5000);
	freeaddrinfo(ai);
	if (ret || expect_event(c, RDMA_CM_EVENT_ADDR_RESOLVED, NULL) ||
	    rdma_resolve_route(*id, 5000) || expect_event(c, RDMA_CM_EVENT_ROUTE_RESOLVED, NULL))
		return -1;
	if (o->ack_timeout >= 0) {
		uint8_t t = (uint8_t)o->ack_timeout;

		if (rdma_set_option(*id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &t,
				    sizeof(t))) {
			perror("rdma_set_option(ACK_TIMEOUT)");
			return -1;
		}
	}
	return 0;
}

/* Connection 1 (QP 1), and with --split connection 2 (QP 2, the READs')
 * on the same PD and CQ. QP 1 holds DEPTH READs and the SENDs after
 * completed ones (a READ completes after every SEND before it, so at most
 * DEPTH + 1 of those); with --split it holds only SENDs, which no READ
 * completion waits for: room for one per READ of the run. */
static int connect_to(struct conn *c, const struct opts *o, struct hello *h)
{
	struct ask a = { .qps = o->split ? 2 : 1, .nth = 1 };
	struct rdma_conn_param cp = { .initiator_depth = RDMA_MAX_INIT_DEPTH,
				      .retry_count = (uint8_t)o->retry_count,
				      .rnr_retry_count = 6,
				      .private_data = &a,
				      .private_data_len = sizeof(a) };
	uint32_t sq = o->split ? (uint32_t)o->reads + 1 : 2 * o->depth + 2;

	c->ch = rdma_create_event_channel();
	if (!c->ch || resolve(c, &c->id, o) ||
	    setup_res(c, c->id->verbs, (size_t)o->size * o->depth, (int)(sq + o->depth + NRECV),
		      IBV_ACCESS_LOCAL_WRITE) ||
	    add_qp(c, c->id, sq))
		return -1;
	*h = (struct hello){ 0 }; /* stays zeros, refused below, if the server sent less */
	if (rdma_connect(c->id, &cp) || expect_event(c, RDMA_CM_EVENT_ESTABLISHED, h))
		return -1;
	if (h->size != o->size || h->depth != o->depth || h->slots < h->depth ||
	    h->slots > h->depth * SPREAD) {
		fprintf(stderr, "server offers %u x %u, we asked for %u x %u: use the same -s/-d\n",
			h->depth, h->size, o->depth, o->size);
		return -1;
	}
	if (!o->split)
		return 0;
	a.nth = 2;
	if (resolve(c, &c->id2, o))
		return -1;
	if (c->id2->verbs != c->id->verbs) { /* a PD is one device's */
		fprintf(stderr, "the second connection is on another device\n");
		return -1;
	}
	if (add_qp(c, c->id2, o->depth) || rdma_connect(c->id2, &cp) ||
	    expect_event(c, RDMA_CM_EVENT_ESTABLISHED, NULL))
		return -1;
	return 0;
}

/* The server's slot of READ k: a local slot's next READ brings other bytes,
 * so a late response of its previous READ landing in it shows. */
static uint64_t remote_slot(const struct hello *h, uint64_t k)
{
	return k % h->slots;
}

/* The QP of the READs: QP 2 with --split, else the only one. */
static struct ibv_qp *read_qp(const struct conn *c)
{
	return c->id2 ? c->id2->qp : c->id->qp;
}

/* READ k (or, with --writes, WRITE k) between local slot k % depth and
 * the server's remote_slot(k). */
static int post_read(struct conn *c, const struct hello *h, uint64_t k, bool write)
{
	uint32_t slot = (uint32_t)(k % h->depth);
	uint8_t *dst = c->buf + (size_t)slot * h->size;
	struct ibv_sge sge = { .addr = (uintptr_t)dst, .length = h->size, .lkey = c->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = k,
				  .sg_list = &sge,
				  .num_sge = 1,
				  .opcode = write ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ,
				  .send_flags = IBV_SEND_SIGNALED },
			   *bad;

	if (!write)
		memset(dst, 0, h->size); /* a READ that brings less leaves zeros */
	wr.wr.rdma.remote_addr = h->addr + remote_slot(h, k) * h->size;
	wr.wr.rdma.rkey = h->rkey;
	return ibv_post_send(read_qp(c), &wr, &bad);
}

/* The SEND after READ k, on QP 1. */
static int post_small_send(struct conn *c, uint64_t k)
{
	static const char msg[SEND_BYTES] = "credit";
	struct ibv_send_wr wr = { .wr_id = WR_SEND | k,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE },
			   *bad;
	struct ibv_sge sge = { .addr = (uintptr_t)msg, .length = SEND_BYTES };

	wr.sg_list = &sge;
	wr.num_sge = 1;
	return ibv_post_send(c->id->qp, &wr, &bad);
}

/* Does this run of n bytes at offset i of the server's slot r match p? */
static bool from_slot(const uint8_t *p, const struct hello *h, uint64_t r, uint32_t i, uint32_t n)
{
	for (uint32_t j = 0; j < n; j++)
		if (p[j] != pattern(r * h->size + i + j))
			return false;
	return true;
}

/* Does local slot k % depth hold what the server's remote_slot(k) holds?
 * If not, say into why where it first differs and whose bytes are there. */
static bool read_ok(const struct conn *c, const struct hello *h, uint64_t k, char *why, size_t len)
{
	const uint8_t *p = c->buf + (size_t)(k % h->depth) * h->size;
	uint64_t want = remote_slot(h, k), bad = 0;
	uint32_t first = h->size, n;
	int64_t from = -1;

	for (uint32_t i = 0; i < h->size; i++)
		if (p[i] != pattern(want * h->size + i)) {
			if (!bad++)
				first = i;
		}
	if (!bad)
		return true;
	n = h->size - first < 16 ? h->size - first : 16;
	for (uint64_t r = 0; r < h->slots && from < 0; r++)
		if (from_slot(p + first, h, r, first, n))
			from = (int64_t)r;
	if (from >= 0)
		snprintf(why, len,
			 "%" PRIu64
			 " of %u bytes differ from byte %u on, which holds server slot %" PRId64
			 "'s bytes",
			 bad, h->size, first, from);
	else
		snprintf(why, len, "%" PRIu64 " of %u bytes differ from byte %u on, which holds %s",
			 bad, h->size, first,
			 p[first] ? "bytes of no slot" : "zeros (never written)");
	return false;
}

static int run_client(const struct opts *o)
{
	struct conn c = { 0 };
	struct hello h;
	struct ibv_wc wc[16];
	uint64_t posted = 0, done = 0, sends = 0, sent = 0, flushed = 0;
	double t0, deadline;
	int first_bad = -1, rc = 1;
	uint64_t bad_id = 0;
	char why[160];

	if (connect_to(&c, o, &h))
		goto out;
	if (o->writes) /* what the WRITEs carry does not matter; defined bytes do */
		memset(c.buf, 0xa5, (size_t)h.size * h.depth);
	t0 = now_s();
	deadline = t0 + o->timeout_s;
	for (; posted < o->depth && posted < o->reads; posted++)
		if (post_read(&c, &h, posted, o->writes))
			goto out;
	while (done < o->reads && first_bad < 0 && !stop) {
		int n = get_wcs(&c, wc, 16, 100);

		if (n < 0)
			goto out;
		if (now_s() > deadline) {
			fprintf(stderr,
				"client: %" PRIu64 " of %" PRIu64 " %s done after %d s: stalled\n",
				done, o->reads, o->writes ? "WRITEs" : "READs", o->timeout_s);
			goto out;
		}
		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				if (first_bad < 0) {
					first_bad = wc[i].status;
					bad_id = wc[i].wr_id;
				}
				flushed += wc[i].status == IBV_WC_WR_FLUSH_ERR;
				continue;
			}
			if (wc[i].wr_id & WR_SEND) {
				sends++;
				continue;
			}
			if (!o->writes && !read_ok(&c, &h, wc[i].wr_id, why, sizeof(why))) {
				printf("BUG: READ %" PRIu64 " (server slot %" PRIu64
				       ") completed successfully with other data: %s\n",
				       wc[i].wr_id, remote_slot(&h, wc[i].wr_id), why);
				rc = 3;
				goto out;
			}
			done++;
			if (!o->reads_only && !o->writes && post_small_send(&c, wc[i].wr_id))
				goto out;
			sent += !o->reads_only && !o->writes;
			if (!o->gate && posted < o->reads && post_read(&c, &h, posted++, o->writes))
				goto out;
		}
		/* --gate: the next READs only once every SEND is acknowledged. */
		while (o->gate && sends == sent && posted < o->reads && posted < done + o->depth)
			if (post_read(&c, &h, posted++, false))
				goto out;
	}
	if (first_bad >= 0) {
		/* Collect the rest of the flushed WRs (bounded). */
		for (double end = now_s() + 2; now_s() < end;) {
			int n = get_wcs(&c, wc, 16, 100);

			for (int i = 0; i < n; i++)
				flushed += wc[i].status == IBV_WC_WR_FLUSH_ERR;
		}
		if (first_bad == IBV_WC_WR_FLUSH_ERR) {
			printf("BUG: QP in the error state without an error completion: the first "
			       "unsuccessful completion (%s %" PRIu64 ") is %s, after %" PRIu64
			       " READs; %" PRIu64 " WRs flushed\n",
			       bad_id & WR_SEND ? "SEND" : "READ", bad_id & ~WR_SEND,
			       ibv_wc_status_str(first_bad), done, flushed);
			rc = 3;
		} else {
			printf("error: %s on %s %" PRIu64 " after %" PRIu64 " %s, retry count %d\n",
			       ibv_wc_status_str(first_bad),
			       bad_id & WR_SEND ? "SEND"
			       : o->writes	? "WRITE"
						: "READ",
			       bad_id & ~WR_SEND, done, o->writes ? "WRITEs" : "READs",
			       o->retry_count);
			if (first_bad == IBV_WC_RETRY_EXC_ERR)
				rc = 4;
		}
		goto out;
	}
	printf("ok: %" PRIu64 " %s of %u bytes, %" PRIu64 " SENDs%s, %.1f MiB/s\n", done,
	       o->writes ? "WRITEs" : "READs verified", h.size, sends,
	       o->split ? " (READs on QP 2, SENDs on QP 1)" : "",
	       (double)done * h.size / (now_s() - t0) / 1048576.0);
	rc = 0;
out:
	if (c.id)
		rdma_disconnect(c.id);
	if (c.id2)
		rdma_disconnect(c.id2);
	teardown(&c, c.id);
	if (c.ch)
		rdma_destroy_event_channel(c.ch);
	return rc;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rxe-read-send server [-p PORT] [-s SIZE] [-d DEPTH] [--idle S]\n"
		"       rxe-read-send client HOST [-p PORT] [-s SIZE] [-d DEPTH] [-n READS]\n"
		"                     [--reads-only | --gate | --split | --writes]\n"
		"                     [--ack-timeout EXP] [--retry-count N] [--timeout S]\n"
		"defaults: port 7471, size 65536, depth 8, 2000 READs, retry count 6, timeout "
		"60 s,\n"
		"idle 600 s; --split: at most %u READs\n",
		SPLIT_MAX);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = { { "reads-only", no_argument, NULL, 'r' },
					    { "ack-timeout", required_argument, NULL, 'a' },
					    { "gate", no_argument, NULL, 'g' },
					    { "split", no_argument, NULL, 'S' },
					    { "writes", no_argument, NULL, 'w' },
					    { "retry-count", required_argument, NULL, 'R' },
					    { "timeout", required_argument, NULL, 't' },
					    { "idle", required_argument, NULL, 'i' },
					    { "help", no_argument, NULL, 'h' },
					    { 0 } };
	struct opts o = { .port = "7471",
			  .size = 65536,
			  .depth = 8,
			  .reads = 2000,
			  .ack_timeout = -1,
			  .retry_count = 6,
			  .timeout_s = 60,
			  .idle_s = 600 };
	int ch;

	if (argc < 2 || (strcmp(argv[1], "server") && strcmp(argv[1], "client"))) {
		usage(stderr);
		return 2;
	}
	o.server = !strcmp(argv[1], "server");
	optind = 2;
	while ((ch = getopt_long(argc, argv, "p:s:d:n:h", lo, NULL)) != -1) {
		switch (ch) {
		case 'p': o.port = optarg; break;
		case 's': o.size = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'd': o.depth = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'n': o.reads = strtoull(optarg, NULL, 0); break;
		case 'r': o.reads_only = true; break;
		case 'g': o.gate = true; break;
		case 'S': o.split = true; break;
		case 'w': o.writes = true; break;
		case 'R': o.retry_count = atoi(optarg); break;
		case 'a': o.ack_timeout = atoi(optarg); break;
		case 't': o.timeout_s = atoi(optarg); break;
		case 'i': o.idle_s = atoi(optarg); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!o.server) {
		if (optind >= argc) {
			usage(stderr);
			return 2;
		}
		o.host = argv[optind];
	}
	if (o.size < 1 || o.depth < 1 || o.depth > 128 || o.reads < 1 || o.ack_timeout > 31 ||
	    o.timeout_s < 1 || o.retry_count < 0 || o.retry_count > 7 ||
	    (o.writes && (o.reads_only || o.gate)) ||
	    (o.split && (o.reads_only || o.gate || o.writes || o.reads > SPLIT_MAX))) {
		usage(stderr);
		return 2;
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	return o.server ? run_server(&o) : run_client(&o);
}
