// SPDX-License-Identifier: MIT
/*
 * rxe-mw-srq - what this kernel's Soft-RoCE does with type 2 memory
 * windows, a shared receive queue, a full CQ and async events: the facts
 * 04_many-clients is designed from (docs/kernels.md, "Memory windows,
 * SRQ, async events").
 *
 * One process, one device. A "server" side (one PD, one CQ, an SRQ, an
 * arena registered LOCAL_WRITE|MW_BIND and no REMOTE_* flag) and a
 * "client" side (its own PD, a CQ per connection) joined by rdma_cm over
 * ADDR, the device's own address. Each case makes the connections it
 * needs and drops them (an error moves a QP to the error state for good),
 * then prints one line: what each call and completion returned, and the
 * async events that arrived meanwhile (and on which object).
 *
 *   rxe-mw-srq [-t MS] ADDR                 every case
 *   rxe-mw-srq --port SECONDS ADDR          print "ready", wait for port events
 *                                           (the driver sets the link down and up)
 *   rxe-mw-srq --burst N [--backlog B] ADDR N connects at once, one process
 *   rxe-mw-srq --destroy-order ADDR         ibv_destroy_qp with a window bound
 *
 * Exit status: 0 every case ran (whatever the kernel answered), 1 setup
 * failed, 2 usage. tests/repro/rxe-mw-srq.sh runs it, cmtime and the
 * link flap on one kernel; make probe-rxe-mw-srq on each.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rxe-mw-srq.h"

double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* A few short-lived result strings per printf line. */
char *sbuf(void)
{
	static char ring[8][160];
	static unsigned i;

	return ring[i++ % 8];
}

const char *errstr(int ret)
{
	char *s = sbuf();

	if (!ret)
		return "0 (success)";
	snprintf(s, 160, "%s (%d)", strerror(ret < 0 ? -ret : ret), ret < 0 ? -ret : ret);
	return s;
}

static const char *ev_name(enum ibv_event_type e)
{
	static const char *n[] = {
		[IBV_EVENT_CQ_ERR] = "CQ_ERR",
		[IBV_EVENT_QP_FATAL] = "QP_FATAL",
		[IBV_EVENT_QP_REQ_ERR] = "QP_REQ_ERR",
		[IBV_EVENT_QP_ACCESS_ERR] = "QP_ACCESS_ERR",
		[IBV_EVENT_COMM_EST] = "COMM_EST",
		[IBV_EVENT_SQ_DRAINED] = "SQ_DRAINED",
		[IBV_EVENT_DEVICE_FATAL] = "DEVICE_FATAL",
		[IBV_EVENT_PORT_ACTIVE] = "PORT_ACTIVE",
		[IBV_EVENT_PORT_ERR] = "PORT_ERR",
		[IBV_EVENT_LID_CHANGE] = "LID_CHANGE",
		[IBV_EVENT_PKEY_CHANGE] = "PKEY_CHANGE",
		[IBV_EVENT_SRQ_ERR] = "SRQ_ERR",
		[IBV_EVENT_SRQ_LIMIT_REACHED] = "SRQ_LIMIT_REACHED",
		[IBV_EVENT_QP_LAST_WQE_REACHED] = "QP_LAST_WQE_REACHED",
		[IBV_EVENT_GID_CHANGE] = "GID_CHANGE",
	};

	return (unsigned)e < sizeof(n) / sizeof(n[0]) && n[e] ? n[e] : "other";
}

/* Which of our objects an async event names. */
static void ev_owner(const struct probe *p, const struct ibv_async_event *ev, char *s, size_t len)
{
	switch (ev->event_type) {
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		for (unsigned i = 0; i < p->npv; i++) {
			const struct pair *pr = &p->pv[i];

			if (pr->cid && pr->cid->qp == ev->element.qp)
				return (void)snprintf(s, len, "client QP %u", i);
			if (pr->sid && pr->sid->qp == ev->element.qp)
				return (void)snprintf(s, len, "server QP %u", i);
		}
		return (void)snprintf(s, len, "a QP");
	case IBV_EVENT_CQ_ERR:
		for (unsigned i = 0; i < p->npv; i++)
			if (p->pv[i].ccq && p->pv[i].ccq == ev->element.cq)
				return (void)snprintf(s, len, "client CQ %u", i);
		return (void)snprintf(s, len,
				      ev->element.cq == p->scq ? "server CQ" : "server QP's CQ");
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		return (void)snprintf(s, len, ev->element.srq == p->srq ? "SRQ" : "empty SRQ");
	default: return (void)snprintf(s, len, "port %d", ev->element.port_num);
	}
}

/*
 * Read the async events that arrive within ms (stop early once `until`
 * is among them), ack each, and list them in out: "none" if none.
 */
const char *collect(struct probe *p, int ms, const char *until)
{
	struct pollfd pfd = { .fd = p->ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;
	double end = now_ms() + ms;
	char *out = sbuf(), who[32];
	size_t n = 0;

	out[0] = 0;
	do {
		int left = (int)(end - now_ms()), w;

		if (poll(&pfd, 1, left > 0 ? left : 0) <= 0)
			break;
		while (!ibv_get_async_event(p->ctx, &ev)) {
			ev_owner(p, &ev, who, sizeof(who));
			if (n < 150) {
				w = snprintf(out + n, 160 - n, "%s%s (%s)", n ? ", " : "",
					     ev_name(ev.event_type), who);
				n = w > 0 && (size_t)w < 160 - n ? n + (size_t)w : 159;
			}
			ibv_ack_async_event(&ev);
		}
	} while (now_ms() < end && !(until && strstr(out, until)));
	return out[0] ? out : "none";
}

/* The server side of a connection: its QP on the shared CQ (and SRQ). */
static void on_connect_request(struct probe *p, struct rdma_cm_event *ev)
{
	struct ibv_qp_init_attr qa = { .send_cq = p->so.cq ? p->so.cq : p->scq,
				       .recv_cq = p->so.cq ? p->so.cq : p->scq,
				       .srq = p->so.srq,
				       .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 8,
						.max_recv_wr = p->so.srq ? 0 : 4,
						.max_send_sge = 1,
						.max_recv_sge = 1 } };
	struct rdma_conn_param cp = { .responder_resources = 4,
				      .initiator_depth = 4,
				      .rnr_retry_count = p->so.rnr_retry };
	uint32_t i = UINT32_MAX;

	if (ev->param.conn.private_data_len >= sizeof(i))
		memcpy(&i, ev->param.conn.private_data, sizeof(i));
	if (i >= p->npv || p->pv[i].sid || rdma_create_qp(ev->id, p->spd, &qa)) {
		fprintf(stderr, "rxe-mw-srq: connect request %u: %s\n", i, strerror(errno));
		rdma_reject(ev->id, NULL, 0);
		return;
	}
	p->pv[i].sid = ev->id;
	p->pv[i].seen |= S_REQ;
	ev->id->context = &p->pv[i];
	/* The REP carries rnr_retry_count: the client's QP retries RNR that often. */
	if (rdma_accept(ev->id, &cp))
		p->pv[i].seen |= S_FAIL;
}

/* Handle the CM events that arrive within ms; stray ids are destroyed. */
void pump(struct probe *p, int ms)
{
	struct pollfd pfd = { .fd = p->ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	if (poll(&pfd, 1, ms) <= 0)
		return;
	while (!rdma_get_cm_event(p->ch, &ev)) {
		struct pair *pr = ev->id->context;
		struct rdma_cm_id *stray = NULL;

		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			on_connect_request(p, ev);
			stray = ev->id->context ? NULL : ev->id;
		} else if (pr && ev->event == RDMA_CM_EVENT_ADDR_RESOLVED) {
			pr->seen |= S_ADDR;
		} else if (pr && ev->event == RDMA_CM_EVENT_ROUTE_RESOLVED) {
			pr->seen |= S_ROUTE;
		} else if (pr && ev->event == RDMA_CM_EVENT_ESTABLISHED) {
			pr->seen |= ev->id == pr->cid ? S_EST_C : S_EST_S;
			if ((pr->seen & (S_EST_C | S_EST_S)) == (S_EST_C | S_EST_S))
				pr->t_est = now_ms();
		} else if (pr && ev->event != RDMA_CM_EVENT_DISCONNECTED &&
			   ev->event != RDMA_CM_EVENT_TIMEWAIT_EXIT && !(pr->seen & S_FAIL)) {
			pr->seen |= S_FAIL;
			pr->fail_event = ev->event;
			pr->fail_status = ev->status;
		}
		rdma_ack_cm_event(ev);
		if (stray)
			rdma_destroy_id(stray);
	}
}

int wait_seen(struct probe *p, struct pair *pr, unsigned bits)
{
	double end = now_ms() + p->wait_ms;

	while ((pr->seen & bits) != bits && !(pr->seen & S_FAIL) && now_ms() < end)
		pump(p, 20);
	return (pr->seen & bits) == bits ? 0 : -1;
}

/* The client half up to rdma_connect; the connection completes in pump. */
int start_pair(struct probe *p, struct pair *pr, int cq_size, int step)
{
	uint32_t i = (uint32_t)(pr - p->pv);
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 }
	};
	/* The REQ: retry_count and rnr_retry_count are the server QP's. */
	struct rdma_conn_param cp = { .responder_resources = 4,
				      .initiator_depth = 4,
				      .retry_count = 2,
				      .rnr_retry_count = 7,
				      .private_data = &i,
				      .private_data_len = sizeof(i) };

	switch (step) {
	case S_ADDR:
		return rdma_create_id(p->ch, &pr->cid, pr, RDMA_PS_TCP) ||
		       rdma_resolve_addr(pr->cid, NULL, (struct sockaddr *)&p->addr, 2000);
	case S_ROUTE: return rdma_resolve_route(pr->cid, 2000);
	case S_REQ: return rdma_connect(pr->cid, &cp);
	default:
		if (pr->cid->verbs != p->ctx)
			return errno = EXDEV, -1; /* one device context for both sides */
		pr->ccq = ibv_create_cq(p->ctx, cq_size, NULL, NULL, 0);
		qa.send_cq = qa.recv_cq = pr->ccq;
		return !pr->ccq || rdma_create_qp(pr->cid, p->cpd, &qa);
	}
}

int new_pair(struct probe *p, struct pair *pr, int cq_size, struct srv_opts so)
{
	memset(pr, 0, sizeof(*pr));
	p->so = so;
	if (start_pair(p, pr, cq_size, S_ADDR) || wait_seen(p, pr, S_ADDR) ||
	    start_pair(p, pr, cq_size, S_ROUTE) || wait_seen(p, pr, S_ROUTE) ||
	    start_pair(p, pr, cq_size, 0) || start_pair(p, pr, cq_size, S_REQ) ||
	    wait_seen(p, pr, S_EST_C | S_EST_S)) {
		fprintf(stderr, "rxe-mw-srq: connection %u failed (%s, %s status %d): %s\n",
			(unsigned)(pr - p->pv), pr->seen & S_FAIL ? "event" : "no event",
			rdma_event_str(pr->fail_event), pr->fail_status, strerror(errno));
		return -1;
	}
	return 0;
}

void drop_pair(struct probe *p, struct pair *pr)
{
	collect(p, 0, NULL); /* what is left is this pair's: not the next case's */
	if (pr->sid && pr->sid->qp)
		rdma_destroy_qp(pr->sid);
	if (pr->sid)
		rdma_destroy_id(pr->sid);
	if (pr->cid && pr->cid->qp)
		rdma_destroy_qp(pr->cid);
	if (pr->cid)
		rdma_destroy_id(pr->cid);
	if (pr->ccq)
		ibv_destroy_cq(pr->ccq);
	memset(pr, 0, sizeof(*pr));
}

/* The completion of wr_id on qp; the shared CQ's other completions are dropped. */
int complete1(struct probe *p, struct ibv_cq *cq, uint32_t qpn, uint64_t id, int ms)
{
	double end = now_ms() + ms;
	struct ibv_wc wc;
	int n;

	p->last = -1;
	while (now_ms() < end) {
		n = ibv_poll_cq(cq, 1, &wc);
		if (n < 0)
			return -1;
		if (n && wc.qp_num == qpn && (wc.wr_id == id || id == ANY_WR))
			return p->last = wc.status, 0;
		if (!n)
			usleep(200);
	}
	return -1;
}

const char *status(const struct probe *p)
{
	char *s = sbuf();

	if (p->last == -2)
		return "post failed";
	if (p->last < 0)
		return "no completion";
	snprintf(s, 160, "%s (%d)", ibv_wc_status_str(p->last), p->last);
	return s;
}

/* Post one signaled WR on qp and wait for its completion on cq. */
const char *post_wait(struct probe *p, struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_send_wr *wr,
		      int ms)
{
	struct ibv_send_wr *bad;
	int ret;

	wr->wr_id = 0x5eed;
	wr->send_flags |= IBV_SEND_SIGNALED;
	ret = ibv_post_send(qp, wr, &bad);
	if (ret) {
		char *s = sbuf();

		p->last = -2;
		snprintf(s, 160, "ibv_post_send: %s (%d)", strerror(ret), ret);
		return s;
	}
	complete1(p, cq, qp->qp_num, wr->wr_id, ms);
	return status(p);
}

/* The client of pr WRITEs or READs len bytes at raddr with rkey. */
const char *rdma_op(struct probe *p, struct pair *pr, enum ibv_wr_opcode op, void *raddr,
		    uint32_t rkey, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)p->cbuf, len, p->cmr->lkey };
	struct ibv_send_wr wr = { .opcode = op, .sg_list = &sge, .num_sge = 1 };

	wr.wr.rdma.remote_addr = (uintptr_t)raddr;
	wr.wr.rdma.rkey = rkey;
	return post_wait(p, pr->cid->qp, pr->ccq, &wr, (int)p->wait_ms);
}

const char *send_msg(struct probe *p, struct pair *pr, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)p->cbuf, len, p->cmr->lkey };
	struct ibv_send_wr wr = { .opcode = IBV_WR_SEND, .sg_list = &sge, .num_sge = 1 };

	return post_wait(p, pr->cid->qp, pr->ccq, &wr, 15000);
}

/* Bind mw on the server QP of pr to [addr, addr+len) of mr with key. */
const char *bind_mw(struct probe *p, struct pair *pr, struct ibv_mw *mw, struct ibv_mr *mr,
		    void *addr, uint32_t len, uint32_t rkey)
{
	struct ibv_send_wr wr = { .opcode = IBV_WR_BIND_MW };

	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info =
		(struct ibv_mw_bind_info){ .mr = mr,
					   .addr = (uintptr_t)addr,
					   .length = len,
					   .mw_access_flags = IBV_ACCESS_REMOTE_WRITE |
							      IBV_ACCESS_REMOTE_READ };
	return post_wait(p, pr->sid->qp, p->scq, &wr, (int)p->wait_ms);
}

const char *local_inv(struct probe *p, struct pair *pr, uint32_t rkey)
{
	struct ibv_send_wr wr = { .opcode = IBV_WR_LOCAL_INV, .invalidate_rkey = rkey };

	return post_wait(p, pr->sid->qp, p->scq, &wr, (int)p->wait_ms);
}

void srq_post(struct probe *p, struct ibv_srq *srq, unsigned n)
{
	for (unsigned i = 0; i < n; i++, p->rbuf_next++) {
		struct ibv_sge sge = { (uintptr_t)(p->rbuf + (p->rbuf_next % NRBUF) * MSG), MSG,
				       p->rmr->lkey };
		struct ibv_recv_wr wr = { .wr_id = p->rbuf_next, .sg_list = &sge, .num_sge = 1 },
				   *bad;

		if (ibv_post_srq_recv(srq, &wr, &bad))
			fprintf(stderr, "rxe-mw-srq: ibv_post_srq_recv: %s\n", strerror(errno));
	}
}

const char *qp_state(struct ibv_qp *qp)
{
	static const char *n[] = { "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR" };
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia) || a.qp_state > IBV_QPS_ERR)
		return "?";
	return n[a.qp_state];
}

const char *after(double t0)
{
	char *s = sbuf();

	snprintf(s, 160, "%.0f ms", now_ms() - t0);
	return s;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: rxe-mw-srq [-t MS] [--port SECONDS | --burst N [--backlog B] |\n"
		   "                  --destroy-order] ADDR\n"
		   "  ADDR: the RDMA device's IPv4 address (both sides use it)\n"
		   "  -t MS: bound of each wait (default 5000)\n"
		   "  without a mode: every case but --destroy-order, one line per fact\n");
}

static int setup(struct probe *p, const char *host, int backlog)
{
	struct addrinfo hints = { .ai_family = AF_INET }, *ai;
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = NRBUF, .max_sge = 1 } };
	size_t arena_len = 4 * SLICE;

	if (getaddrinfo(host, NULL, &hints, &ai))
		return fprintf(stderr, "rxe-mw-srq: bad address %s\n", host), -1;
	memcpy(&p->addr, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	p->ch = rdma_create_event_channel();
	if (!p->ch || rdma_create_id(p->ch, &p->listen, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(p->listen, (struct sockaddr *)&p->addr) ||
	    rdma_listen(p->listen, backlog) || !p->listen->verbs)
		return perror("rxe-mw-srq: listen on ADDR"), -1;
	/* The listener's port is the one the clients connect to. */
	((struct sockaddr_in *)&p->addr)->sin_port = rdma_get_src_port(p->listen);
	p->ctx = p->listen->verbs;
	fcntl(p->ch->fd, F_SETFL, O_NONBLOCK);
	fcntl(p->ctx->async_fd, F_SETFL, O_NONBLOCK);
	if (ibv_query_device(p->ctx, &p->dev))
		return perror("rxe-mw-srq: ibv_query_device"), -1;
	p->spd = ibv_alloc_pd(p->ctx);
	p->cpd = ibv_alloc_pd(p->ctx);
	p->scq = ibv_create_cq(p->ctx, 256, NULL, NULL, 0);
	p->srq = p->spd ? ibv_create_srq(p->spd, &sa) : NULL;
	p->srq0 = p->spd ? ibv_create_srq(p->spd, &sa) : NULL;
	if (posix_memalign((void **)&p->arena, 4096, arena_len) ||
	    posix_memalign((void **)&p->cbuf, 4096, 4096) ||
	    posix_memalign((void **)&p->rbuf, 4096, NRBUF * MSG))
		return perror("rxe-mw-srq: posix_memalign"), -1;
	memset(p->arena, 0, arena_len);
	/* The arena: no REMOTE_* flag, so only windows open it. */
	p->arena_mr = p->srq0 ? ibv_reg_mr(p->spd, p->arena, arena_len,
					   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND)
			      : NULL;
	/* Slice 2 also as a plain remote-writable region (CQ and error cases). */
	p->open_mr = p->arena_mr ? ibv_reg_mr(p->spd, p->arena + 2 * SLICE, SLICE,
					      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)
				 : NULL;
	p->cmr = p->open_mr ? ibv_reg_mr(p->cpd, p->cbuf, 4096, IBV_ACCESS_LOCAL_WRITE) : NULL;
	p->rmr = p->cmr ? ibv_reg_mr(p->spd, p->rbuf, NRBUF * MSG, IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!p->rmr)
		return perror("rxe-mw-srq: PD, CQ, SRQ or MR"), -1;
	return 0;
}

static void teardown(struct probe *p)
{
	for (unsigned i = 0; p->pv == p->pairs && i < NPAIR; i++)
		drop_pair(p, &p->pairs[i]);
	if (p->rmr)
		ibv_dereg_mr(p->rmr);
	if (p->cmr)
		ibv_dereg_mr(p->cmr);
	if (p->open_mr)
		ibv_dereg_mr(p->open_mr);
	if (p->arena_mr)
		ibv_dereg_mr(p->arena_mr);
	if (p->srq0)
		ibv_destroy_srq(p->srq0);
	if (p->srq)
		ibv_destroy_srq(p->srq);
	if (p->scq)
		ibv_destroy_cq(p->scq);
	if (p->cpd)
		ibv_dealloc_pd(p->cpd);
	if (p->spd)
		ibv_dealloc_pd(p->spd);
	if (p->listen)
		rdma_destroy_id(p->listen);
	if (p->ch)
		rdma_destroy_event_channel(p->ch);
	free(p->arena);
	free(p->cbuf);
	free(p->rbuf);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = { { "port", required_argument, NULL, 'P' },
					    { "burst", required_argument, NULL, 'B' },
					    { "backlog", required_argument, NULL, 'L' },
					    { "destroy-order", no_argument, NULL, 'D' },
					    { "help", no_argument, NULL, 'h' },
					    { NULL, 0, NULL, 0 } };
	struct probe p = { .wait_ms = 5000 };
	int c, port_s = 0, burst_n = 0, backlog = 0, destroy_order = 0, ret;

	while ((c = getopt_long(argc, argv, "t:h", lo, NULL)) != -1) {
		switch (c) {
		case 't': p.wait_ms = (unsigned)atoi(optarg); break;
		case 'P': port_s = atoi(optarg); break;
		case 'B': burst_n = atoi(optarg); break;
		case 'L': backlog = atoi(optarg); break;
		case 'D': destroy_order = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc - 1 || !p.wait_ms || port_s < 0 || burst_n < 0 || backlog < 0) {
		usage(stderr);
		return 2;
	}
	p.pv = p.pairs;
	p.npv = NPAIR;
	setvbuf(stdout, NULL, _IOLBF, 0);
	ret = setup(&p, argv[optind], backlog) ? 1 : 0;
	if (!ret && port_s)
		ret = case_port(&p, port_s);
	else if (!ret && destroy_order)
		ret = case_destroy_order(&p);
	else if (!ret && burst_n)
		ret = case_burst(&p, (unsigned)burst_n, backlog);
	else if (!ret)
		ret = run_cases(&p);
	teardown(&p);
	return ret;
}
