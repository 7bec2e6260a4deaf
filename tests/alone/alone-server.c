// SPDX-License-Identifier: MIT
/*
 * alone-server - the slot service of alone.h on the set rdma-common.h
 * names alone: one thread, one poll() over the listener's CM channel, the
 * shared device's completion channel and async fd, and a signalfd. Every
 * client's id stays on the listener's channel (the channel rule of
 * rdma-listen.h); every QP is on one CQ and one SRQ; one allocation
 * holds every client's slot, each slot registered as a region of its own
 * (no REMOTE_* flag) and reachable only through a type 2 window bound on
 * it to that client's QP: the window keeps other QPs out, the region
 * bounds the range (Soft-RoCE checks a window's QP but not its range:
 * docs/kernels.md, rxe-mw-srq).
 *
 *   alone-server [-v] [-b ADDR] [-p PORT] [-c CLIENTS] [-s SLOT] [--keep-region]
 */
#define _GNU_SOURCE
#include "alone.h"

#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/signalfd.h>
#include <unistd.h>

#define MAX_CLIENTS 64
#define WR_RECV	    (1ull << 32)		  /* receives: WR_RECV + pool index */
enum { WR_BIND = 1, WR_SLOT, WR_INV, WR_RESULT }; /* sends: slot << 8 | kind */

struct client {
	struct rc_conn c; /* c.id->context points here: the CM events' way back */
	bool used, closing;
	struct ibv_mw *mw;
	uint32_t rkey, size;
	uint64_t sum;	      /* the client's, from DONE */
	unsigned outstanding; /* sends posted, not completed: release after */
};

struct server {
	struct rc_listener l;
	struct rdma_event_channel *ch; /* the listener's and every client's */
	struct rc_device d;
	bool dev_open;
	struct rc_buf rx, tx;		  /* the caller's memory, registered on d's PD */
	struct rc_buf slots[MAX_CLIENTS]; /* slot i of mem[0], a region of its own */
	void *mem[3];
	unsigned nclients, nrecv;
	size_t slot;
	bool verbose, keep_region;
	struct client cl[MAX_CLIENTS];
};

static int fail(const char *what, const char *err)
{
	fprintf(stderr, "alone-server: %s: %s\n", what, err);
	return -1;
}

/* Page-aligned memory of ours, registered on the shared PD. */
static int reg(struct server *s, int i, struct rc_buf *b, size_t len, int access)
{
	if (posix_memalign(&s->mem[i], 4096, len))
		return fail("posix_memalign", "out of memory");
	memset(s->mem[i], 0, len);
	return rc_mem_reg(&s->d, s->mem[i], len, access, b);
}

/* The shared context, once the device is known; the pools; every
 * receive posted to the SRQ, its limit armed. */
static int open_device(struct server *s, struct ibv_context *verbs)
{
	struct rc_device_attr a = { .ncq = 1,
				    .cq_size = (int)(s->nclients * 8),
				    .srq_size = s->nrecv };

	if (rc_device_open(&s->d, verbs, &a, "server device", s->verbose))
		return fail("opening the device", s->d.log.err);
	s->dev_open = true;
	if (!s->d.lim.mw_type2)
		return fail(ibv_get_device_name(verbs->device), "no type 2 memory windows");
	if (reg(s, 1, &s->rx, ALONE_MSG * s->nrecv, IBV_ACCESS_LOCAL_WRITE) ||
	    reg(s, 2, &s->tx, ALONE_MSG * 2 * s->nclients, 0))
		return fail("registering memory", s->d.log.err);
	if (posix_memalign(&s->mem[0], 4096, s->slot * s->nclients))
		return fail("posix_memalign", "out of memory");
	memset(s->mem[0], 0, s->slot * s->nclients);
	/* A region per slot, no REMOTE_* flag: only a window opens it, and
	 * the region, not the window, bounds the range on every device. */
	for (unsigned i = 0; i < s->nclients; i++)
		if (rc_mem_reg(&s->d, (uint8_t *)s->mem[0] + i * s->slot, s->slot,
			       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND, &s->slots[i]))
			return fail("registering a slot", s->d.log.err);
	for (unsigned i = 0; i < s->nrecv; i++)
		if (rc_post_srq_recv(&s->d, &s->rx, i * ALONE_MSG, ALONE_MSG, WR_RECV + i))
			return fail("posting receives", s->d.log.err);
	/* Below nrecv: the first message consumed raises the limit event. */
	if (rc_srq_arm_limit(&s->d, s->nrecv))
		return fail("arming the SRQ limit", s->d.log.err);
	return 0;
}

/* Release a client once nothing of it is in flight: window first (it
 * holds the QP), then the connection. */
static int release(struct server *s, struct client *k)
{
	int ret = 0;

	if (!k->closing || k->outstanding)
		return 0;
	if (k->mw && rc_mw_dealloc(&s->d, k->mw))
		ret = fail(k->c.peer, s->d.log.err);
	k->mw = NULL;
	k->c.log.err[0] = '\0';
	if (rc_conn_destroy(&k->c))
		ret = fail(k->c.peer, k->c.log.err);
	k->used = k->closing = false;
	return ret;
}

/* Disconnect (no wait: DISCONNECTED comes as an event) and release. */
static int drop(struct server *s, struct client *k, const char *why)
{
	if (why)
		fail(k->c.peer, why);
	rc_disconnect(&k->c);
	k->closing = true;
	return release(s, k);
}

/* SEND one message from the client's half (0: SLOT, 1: RESULT) of tx. */
static int send_msg(struct server *s, struct client *k, unsigned half, size_t len, int kind)
{
	unsigned i = (unsigned)(k - s->cl);
	size_t off = (2 * i + half) * ALONE_MSG;
	int ret = rc_post_send(&k->c, &s->tx, off, len, (uint64_t)i << 8 | (unsigned)kind, true);

	k->outstanding += !ret;
	return ret;
}

/* ESTABLISHED: bind the client's window over its slot's region, to its QP. */
static void on_established(struct server *s, struct client *k)
{
	if (rc_mw_bind(&k->c, k->mw, &s->slots[k - s->cl], 0, s->slot, IBV_ACCESS_REMOTE_WRITE,
		       (uint64_t)(k - s->cl) << 8 | WR_BIND, &k->rkey)) {
		drop(s, k, k->c.log.err);
		return;
	}
	k->outstanding++;
}

/* The window is bound: tell the client where its slot is. */
static void send_slot(struct server *s, struct client *k)
{
	unsigned i = (unsigned)(k - s->cl);
	uint8_t *p = (uint8_t *)s->tx.addr + 2 * i * ALONE_MSG;
	struct rc_remote_buf rb = { .addr = (uintptr_t)s->slots[i].addr,
				    .rkey = k->rkey,
				    .len = (uint32_t)s->slot };

	rc_hdr_pack(p, ALONE_T_SLOT, ALONE_BODY, 0);
	rc_remote_buf_pack(p + sizeof(struct rc_hdr), &rb);
	if (send_msg(s, k, 0, ALONE_MSG, WR_SLOT))
		drop(s, k, k->c.log.err);
}

/* The window is invalidated: the slot is ours again; check and answer. */
static void send_result(struct server *s, struct client *k)
{
	unsigned i = (unsigned)(k - s->cl);
	uint64_t sum = alone_sum(s->slots[i].addr, k->size);

	printf("client %s: %" PRIu32 " bytes in slot %u through window rkey 0x%x, checksum "
	       "0x%016" PRIx64 " %s the client's\n",
	       k->c.peer, k->size, i, k->rkey, sum, sum == k->sum ? "the same as" : "DIFFERS from");
	alone_sum_pack((uint8_t *)s->tx.addr + (2 * i + 1) * ALONE_MSG, ALONE_T_RESULT, 1, sum,
		       k->size);
	if (send_msg(s, k, 1, ALONE_MSG, WR_RESULT))
		drop(s, k, k->c.log.err);
}

/* A DONE from one of the QPs on the SRQ: validate it, hand the buffer
 * back to the SRQ, invalidate that client's window. */
static void on_recv(struct server *s, const struct ibv_wc *wc)
{
	const struct rc_msg_kind done = { ALONE_T_DONE, ALONE_BODY, "DONE" };
	size_t off = (size_t)(wc->wr_id - WR_RECV) * ALONE_MSG;
	struct client *k = NULL;
	char why[160];
	struct rc_msg m;
	int ret;

	for (unsigned i = 0; i < s->nclients && !k; i++)
		if (s->cl[i].used && s->cl[i].c.qp && s->cl[i].c.qp->qp_num == wc->qp_num)
			k = &s->cl[i];
	ret = rc_recv_expect(wc, (uint8_t *)s->rx.addr + off, ALONE_MSG, &done, 1, 0, &m, why,
			     sizeof(why));
	if (!ret && k && (rc_get32(m.body + 8) != k->size || rc_get32(m.body + 12)))
		ret = rc_bad_msg(why, sizeof(why),
				 "DONE about %" PRIu32 " bytes, HELLO said %" PRIu32,
				 rc_get32(m.body + 8), k->size);
	if (k && !ret)
		k->sum = rc_get64(m.body);
	/* Copied out: the buffer goes back to the pool at once. */
	if (rc_post_srq_recv(&s->d, &s->rx, off, ALONE_MSG, wc->wr_id))
		fail("reposting a receive", s->d.log.err);
	if (!k)
		return; /* a client released since */
	if (ret) {
		drop(s, k, why);
		return;
	}
	if (rc_mw_invalidate(&k->c, k->mw, (uint64_t)(k - s->cl) << 8 | WR_INV)) {
		drop(s, k, k->c.log.err);
		return;
	}
	k->outstanding++;
}

/* A completion of one of our sends. */
static void on_send(struct server *s, const struct ibv_wc *wc)
{
	struct client *k = &s->cl[(wc->wr_id >> 8) % MAX_CLIENTS];

	k->outstanding--;
	if (rc_wc_check(&k->c.log, wc)) {
		drop(s, k, k->closing ? NULL : k->c.log.err);
		return;
	}
	switch (wc->wr_id & 0xff) {
	case WR_BIND: send_slot(s, k); break;
	case WR_INV: send_result(s, k); break;
	case WR_RESULT: rc_disconnect(&k->c); break; /* its goodbye: an event */
	}
	release(s, k);
}

static int on_completions(struct server *s)
{
	struct ibv_wc wc[16];
	int n;

	if (rc_device_cq_events(&s->d) < 0)
		return fail("completion channel", s->d.log.err);
	while ((n = rc_device_poll(&s->d, wc, 16)) > 0)
		for (int i = 0; i < n; i++)
			(wc[i].wr_id & WR_RECV ? on_recv : on_send)(s, &wc[i]);
	return n < 0 ? fail("polling", s->d.log.err) : 0;
}

static void on_async(struct server *s)
{
	struct rc_async ev;

	while (rc_device_async_event(&s->d, &ev) == 0) {
		printf("async event %s\n", ibv_event_type_str(ev.type));
		/* One-shot: armed again for the next time the pool runs low. */
		if (ev.type == IBV_EVENT_SRQ_LIMIT_REACHED && rc_srq_arm_limit(&s->d, s->nrecv))
			fail("arming the SRQ limit", s->d.log.err);
	}
}

/* The HELLO of a request: the size the client will write. */
static int check_hello(const struct server *s, const struct rc_cm_info *info, uint32_t *size,
		       char *why, size_t len)
{
	struct rc_msg m;
	int ret;

	ret = rc_hello_expect(info->priv, info->priv_len, ALONE_T_HELLO, ALONE_HELLO, &m, why, len);
	if (ret)
		return ret;
	*size = rc_get32(m.body);
	if (rc_get32(m.body + 4))
		return rc_bad_msg(why, len, "HELLO with non-zero reserved bytes");
	if (*size < 1 || *size > s->slot)
		return rc_bad_msg(why, len, "asks for %" PRIu32 " bytes, a slot has %zu", *size,
				  s->slot);
	return 0;
}

/* A CONNECT_REQUEST: a connection on the listener's channel, its QP on
 * the shared CQ and SRQ, a window allocated; accepted without waiting. */
static int on_request(struct server *s, const struct rc_cm_info *info)
{
	struct ibv_qp_cap cap = { .max_send_wr = 4, .max_send_sge = 1 };
	struct client *k = NULL;
	char why[160];

	for (unsigned i = 0; i < s->nclients && !k; i++)
		k = s->cl[i].used ? NULL : &s->cl[i];
	if (!k || (!s->dev_open && open_device(s, info->id->verbs))) {
		/* Refused before anything is spent on it. */
		rc_reject_id(info->id, k ? "server error" : "server busy");
		rdma_destroy_id(info->id);
		return k ? -1 : 0;
	}
	memset(k, 0, sizeof(*k));
	rc_conn_init(&k->c, "server conn", s->verbose, 5000, -1);
	k->used = true;
	/* From here k owns the id, whatever happens; no channel of its own. */
	if (rc_take_request(&k->c, info, false)) {
		drop(s, k, k->c.log.err);
		return 0;
	}
	if (check_hello(s, info, &k->size, why, sizeof(why))) {
		rc_reject(&k->c, why);
		drop(s, k, why);
		return 0;
	}
	if (rc_mw_alloc(&s->d, &k->mw))
		drop(s, k, s->d.log.err);
	else if (rc_create_qp_on(&k->c, &s->d, 0, &cap) || rc_accept_start(&k->c, 0, 0))
		drop(s, k, k->c.log.err);
	return 0;
}

/* Every CM event waiting on the one channel: requests, and each
 * client's, handed to its connection (id->context). */
static int on_cm_events(struct server *s)
{
	struct rc_cm_info info;
	struct rdma_cm_id *id;
	struct client *k;
	int ret;

	while ((ret = rc_take_cm_event(s->ch, &info, &id, &s->l.log)) == 0) {
		if (info.event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			if (on_request(s, &info))
				return -1;
			continue;
		}
		if (id == s->l.id) /* DEVICE_REMOVAL: nothing more to serve */
			return fail("listener", rdma_event_str(info.event));
		k = id->context;
		if (rc_conn_cm_event(&k->c, &info))
			drop(s, k, k->c.log.err);
		else if (info.event == RDMA_CM_EVENT_ESTABLISHED)
			on_established(s, k);
		else if (info.event == RDMA_CM_EVENT_DISCONNECTED)
			drop(s, k, NULL);
	}
	return ret == -EAGAIN ? 0 : fail("rdma_get_cm_event", strerror(-ret));
}

/* Release everything, each release checked: 0, or -1 if one was refused. */
static int shut_down(struct server *s)
{
	int bad = 0;

	for (unsigned i = 0; i < s->nclients; i++) {
		if (!s->cl[i].used)
			continue;
		s->cl[i].outstanding = 0; /* its CQ entries go with the CQ */
		if (drop(s, &s->cl[i], NULL))
			bad = 1;
	}
	if (s->dev_open) {
		/* --keep-region: slot 0's region left on the PD, which
		 * closing reports. */
		for (unsigned i = s->keep_region ? 1 : 0; i < s->nclients + 2; i++) {
			struct rc_buf *b = i < s->nclients    ? &s->slots[i]
					   : i == s->nclients ? &s->rx
							      : &s->tx;

			if (b->mr && rc_mem_dereg(&s->d, b) && (bad = 1))
				fail("releasing memory", s->d.log.err);
		}
		if (rc_device_close(&s->d) && (bad = 1))
			fail("closing the device", s->d.log.err);
	}
	rc_listener_close(&s->l);
	rdma_destroy_event_channel(s->ch);
	for (int i = s->keep_region ? 1 : 0; i < 3; i++)
		free(s->mem[i]);
	return bad ? -1 : 0;
}

/* SIGINT and SIGTERM as a readable fd, for the poll. */
static int stop_fd(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	if (sigprocmask(SIG_BLOCK, &set, NULL))
		return -1;
	return signalfd(-1, &set, SFD_CLOEXEC);
}

/* One poll over the four fds until a signal or a failure. */
static int serve(struct server *s, int sfd)
{
	for (;;) {
		int fds[4] = { s->ch->fd, s->dev_open ? s->d.channel->fd : -1,
			       s->dev_open ? s->d.verbs->async_fd : -1, sfd };
		int ret = rc_wait_readable(fds, 4, RC_NO_DEADLINE);

		if (ret == 0)
			ret = on_cm_events(s);
		else if (ret == 1)
			ret = on_completions(s);
		else if (ret == 2)
			on_async(s);
		else if (ret == 3)
			return 0;
		if (ret < 0)
			return -1;
	}
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: alone-server [-v] [-b ADDR] [-p PORT] [-c CLIENTS] [-s SLOT] "
		"[--keep-region]\n"
		"  -c CLIENTS     clients at once (1 to %d, default 8)\n"
		"  -s SLOT        bytes of each client's slot (1 to 1048576, default 65536)\n"
		"  --keep-region  leave a region registered at exit: closing reports it\n",
		MAX_CLIENTS);
}

static int parse(struct server *s, int argc, char **argv, const char **bind, const char **port)
{
	static const struct option opts[] = { { "keep-region", no_argument, NULL, 'k' },
					      { "help", no_argument, NULL, 'h' },
					      { NULL, 0, NULL, 0 } };
	int o;

	while ((o = getopt_long(argc, argv, "vb:p:c:s:h", opts, NULL)) != -1) {
		switch (o) {
		case 'v': s->verbose = true; break;
		case 'b': *bind = optarg; break;
		case 'p': *port = optarg; break;
		case 'c': s->nclients = (unsigned)atoi(optarg); break;
		case 's': s->slot = (size_t)atol(optarg); break;
		case 'k': s->keep_region = true; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return -1;
		}
	}
	if (optind != argc || s->nclients < 1 || s->nclients > MAX_CLIENTS || s->slot < 1 ||
	    s->slot > (1u << 20)) {
		usage(stderr);
		return -1;
	}
	s->nrecv = 2 * s->nclients; /* DONEs in flight: one a client, twice over */
	return 0;
}

int main(int argc, char **argv)
{
	static struct server s = { .nclients = 8, .slot = 65536 };
	const char *bind = NULL, *port = "7479";
	struct rc_log log;
	int sfd, ret;

	if (parse(&s, argc, argv, &bind, &port))
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	rc_log_init(&log, "server", s.verbose);
	sfd = stop_fd();
	if (sfd < 0 || rc_create_cm_channel(&log, &s.ch)) {
		fail("setting up", sfd < 0 ? strerror(errno) : log.err);
		return 1;
	}
	/* Every client's events come here too: the event loop's channel rule. */
	if (rc_listen(&s.l, s.ch, bind, port, 64, s.verbose)) {
		fail("listening", s.l.log.err);
		shut_down(&s);
		return 3;
	}
	/* Bound to a device's address: the device is known now. */
	ret = s.l.id->verbs ? open_device(&s, s.l.id->verbs) : 0;
	if (!ret) {
		printf("listening on %s port %u\n", s.l.addr, s.l.port);
		ret = serve(&s, sfd);
	}
	ret |= shut_down(&s);
	close(sfd);
	return ret ? 1 : 0;
}
