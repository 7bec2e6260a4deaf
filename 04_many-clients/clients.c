// SPDX-License-Identifier: MIT
/*
 * clients.c - one client's life on 04's event loop (many.h), in the
 * order of sequence.txt: its connect request and HELLO, its memory and
 * QP, the accept; ESTABLISHED, the window's bind, BUF; DONE, RESULT; its
 * DISCONNECTED, then release: window, QP and id, region.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>

#include "atomic.h"
#include "many.h"

static unsigned slot_of(const struct server *s, const struct client *k)
{
	return (unsigned)(k - s->cl);
}

static uint64_t wr_id(const struct server *s, const struct client *k, int kind)
{
	return (uint64_t)slot_of(s, k) << 8 | (unsigned)kind;
}

static void set_deadline(const struct server *s, struct client *k)
{
	k->deadline_us = rc_now_us() + (uint64_t)s->o.rc.timeout_ms * 1000;
}

/* Where this client's BUF (half 0) and RESULT (half 1) are built. */
static struct rc_buf *tx_of(struct server *s, struct client *k, unsigned half, size_t *off)
{
	if (!s->use_mw) {
		*off = (1 + half) * RW_CTRL_MAX; /* after its DONE's receive */
		return k->ctl;
	}
	*off = ((size_t)slot_of(s, k) * 2 + half) * RW_CTRL_MAX;
	return &s->tx;
}

struct client *client_by_qp(struct server *s, uint32_t qp_num)
{
	for (unsigned i = 0; i < s->max; i++)
		if (s->cl[i].used && s->cl[i].c.qp && s->cl[i].c.qp->qp_num == qp_num)
			return &s->cl[i];
	return NULL;
}

/* A release the verbs refused: named, and -1 (the client's slot is
 * freed anyway; what was refused stays, and closing the device says so). */
static int refused(const struct client *k, const char *what, const char *err)
{
	fprintf(stderr, "rdma-server: %s: %s: %s\n", k->c.peer, what, err);
	return -1;
}

/* Release a client once nothing of it is in flight, in reverse order:
 * its window first (a bound window holds its QP: destroying the QP
 * first stalls about 51 s on Soft-RoCE), its QP and id, its region. */
static int release(struct server *s, struct client *k)
{
	int ret = 0;

	if (!k->closing || k->outstanding)
		return 0;
	if (k->counter)
		printf("client %s left: the counter holds %" PRIu64 "\n", k->c.peer,
		       counter_value(s));
	rc_trace(&k->c.log, "releasing: ibv_dealloc_mw, then its QP and id, then its region");
	if (k->mw && rc_mw_dealloc(&s->d, k->mw))
		ret = refused(k, "its window", s->d.log.err);
	k->mw = NULL;
	if (k->ctl && k->c.dev.channel)
		epoll_ctl(s->ep, EPOLL_CTL_DEL, k->c.dev.channel->fd, NULL);
	/* Fallback: the region on its own PD goes before that PD. */
	if (k->own_mr && ibv_dereg_mr(k->own_mr))
		ret = refused(k, "ibv_dereg_mr", strerror(errno));
	k->own_mr = NULL;
	k->c.log.err[0] = '\0';
	if (rc_conn_destroy(&k->c))
		ret = refused(k, "its connection", k->c.log.err);
	/* Fallback: freed with the connection, like its CQ; serve() reads
	 * a slot's own CQ only while this is set. */
	k->ctl = NULL;
	if (k->region.mr && rc_mem_dereg(&s->d, &k->region))
		ret = refused(k, "its region", s->d.log.err);
	/* Its slice's pages back to the system: memory follows the clients
	 * connected, not the most there ever were. (Not those of the
	 * shared-region lesson: registered, the NIC keeps the old pages.) */
	else if (!k->counter && k->mem && s->o.inject != MANY_INJECT_SHARED_REGION &&
		 madvise(k->mem, s->stride, MADV_DONTNEED))
		ret = refused(k, "madvise", strerror(errno));
	k->used = k->closing = false;
	s->nclients--;
	/* Named already; the others go on, the exit code says it. */
	if (ret)
		s->release_refused = true;
	return ret;
}

/* Disconnect (no wait: DISCONNECTED comes as an event) and release once
 * its sends have completed (they complete flushed now). */
int drop(struct server *s, struct client *k, const char *why)
{
	if (why)
		fprintf(stderr, "rdma-server: client %s: %s\n", k->c.peer, why);
	if (!k->closing)
		rc_disconnect(&k->c);
	k->closing = true;
	k->deadline_us = 0;
	return release(s, k);
}

static int send_msg(struct server *s, struct client *k, unsigned half, size_t n, int kind)
{
	size_t off;
	struct rc_buf *b = tx_of(s, k, half, &off);
	int ret = rc_post_send(&k->c, b, off, n, wr_id(s, k, kind), true);

	k->outstanding += !ret;
	return ret;
}

/* ---- The connect request ---- */

/* The HELLO: 02's checks, then what 04 does not serve. */
static int check_hello(struct server *s, struct client *k, const struct rc_cm_info *info, char *why,
		       size_t len)
{
	const struct rw_hello *h = &k->hello;

	if (rw_hello_unpack(info->priv, info->priv_len, &k->hello, why, len))
		return -1;
	k->len = h->len ? h->len : s->o.slice;
	if (k->len > s->o.slice) {
		snprintf(why, len,
			 "asks for a %u-byte buffer; this server gives each client at most %u "
			 "bytes (its -s)",
			 k->len, s->o.slice);
		return -1;
	}
	if (h->lesson == RW_INJECT_UNALIGNED || h->lesson == RW_INJECT_DEREG_OTHER) {
		snprintf(why, len,
			 "lesson %s is not served by 04's server: run it against 02's server",
			 rw_inject_name(h->lesson));
		return -1;
	}
	if (rw_ops_atomic(h->ops) && s->d.lim.atomic_cap == IBV_ATOMIC_NONE) {
		snprintf(why, len,
			 "this server's device %s does no atomic operations (atomic_cap "
			 "IBV_ATOMIC_NONE)",
			 ibv_get_device_name(s->d.verbs->device));
		return -1;
	}
	k->counter = s->o.counter && rw_ops_atomic(h->ops);
	if (k->counter && k->len > RW_WORD) {
		snprintf(why, len, "asks for a %u-byte word; the --counter word has %u bytes",
			 k->len, RW_WORD);
		return -1;
	}
	return 0;
}

/* The access its operations need (rw_access_for), less what a lesson
 * takes away: the server's part of no-remote-read and atomic-no-access. */
static int access_for(const struct rw_hello *h)
{
	if (h->lesson == RW_INJECT_ATOMIC_NO_ACCESS)
		return rw_access_for(RW_OP_BOTH);
	if (h->lesson == RW_INJECT_NO_REMOTE_READ)
		return rw_access_for(h->ops) & ~IBV_ACCESS_REMOTE_READ;
	return rw_access_for(h->ops);
}

/* Windows: its slice as a region of its own, no REMOTE_* flag (the
 * region bounds the range, which a window does not on Soft-RoCE), a
 * window to bind once ESTABLISHED, its QP on the shared CQ and SRQ. */
static int setup_shared(struct server *s, struct client *k)
{
	struct ibv_qp_cap cap = { .max_send_wr = MANY_SEND_WR, .max_send_sge = 1 };

	/* The shared-region lesson: no region, no window of its own. */
	if (s->o.inject == MANY_INJECT_SHARED_REGION)
		return rc_create_qp_on(&k->c, &s->d, (int)(slot_of(s, k) / s->per_cq), &cap);
	if (!k->counter && rc_mem_reg(&s->d, k->mem, k->len,
				      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND, &k->region))
		return rc_fail(&k->c.log, EIO, "%s", s->d.log.err);
	if (rc_mw_alloc(&s->d, &k->mw))
		return rc_fail(&k->c.log, EIO, "%s", s->d.log.err);
	return rc_create_qp_on(&k->c, &s->d, (int)(slot_of(s, k) / s->per_cq), &cap);
}

/* Fallback: 02's way, a PD, CQ and region of its own; its CQ's channel
 * joins the loop's epoll. */
static int setup_own(struct server *s, struct client *k)
{
	struct ibv_qp_cap cap = {
		.max_send_wr = MANY_SEND_WR, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1
	};
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 16 + slot_of(s, k) };
	int ret = rc_create_qp(&k->c, &cap);

	if (!ret)
		ret = rc_buf_alloc(&k->c, 3 * RW_CTRL_MAX, IBV_ACCESS_LOCAL_WRITE, &k->ctl);
	if (ret)
		return ret;
	k->own_mr = ibv_reg_mr(k->c.dev.pd, k->mem, k->len, k->access);
	if (!k->own_mr)
		return rc_fail(&k->c.log, errno, "ibv_reg_mr: %s", strerror(errno));
	if (epoll_ctl(s->ep, EPOLL_CTL_ADD, k->c.dev.channel->fd, &ev) ||
	    ibv_req_notify_cq(k->c.dev.cq, 0))
		return rc_fail(&k->c.log, errno, "watching its CQ: %s", strerror(errno));
	return rc_post_recv(&k->c, k->ctl, 0, RW_CTRL_MAX, WR_OWN_RECV);
}

/* How many of its READs and atomics its QP serves at once (02's rule). */
static uint8_t choose_read_depth(struct client *k)
{
	uint8_t rr = k->c.peer_responder_resources;

	if (!rw_ops_responder(k->hello.ops))
		return 0;
	if (k->hello.lesson == RW_INJECT_NO_READ_DEPTH) {
		printf("lesson no-read-depth for %s: accepting with responder_resources 0 (its "
		       "initiator_depth is %u)\n",
		       k->c.peer, rr);
		return 0;
	}
	if (rr > k->hello.read_depth)
		rr = k->hello.read_depth;
	return rr > k->c.dev.max_rd_atom ? k->c.dev.max_rd_atom : rr;
}

/* Accepted without waiting; then its QP's RNR delay shortened. */
static int accept_client(struct server *s, struct client *k, char *why, size_t len)
{
	struct ibv_qp_attr a = { .min_rnr_timer = MANY_MIN_RNR_TIMER };
	char flags[64];

	k->read_depth = choose_read_depth(k);
	if (rw_ops_responder(k->hello.ops) && !k->read_depth &&
	    k->hello.lesson != RW_INJECT_NO_READ_DEPTH) {
		snprintf(why, len, "wants to %s but its connect request has initiator_depth 0",
			 k->hello.ops & RW_OP_READ ? "RDMA READ" : "do atomics");
		return -1;
	}
	if (rc_accept_start(&k->c, 0, k->read_depth))
		return rc_fail(&k->c.log, EIO, "%s", k->c.log.err);
	/* In RTS now: an RNR retry after 10.24 ms, not the CM's 655 ms. */
	if (ibv_modify_qp(k->c.qp, &a, IBV_QP_MIN_RNR_TIMER))
		fprintf(stderr,
			"rdma-server: client %s: ibv_modify_qp(min_rnr_timer %d): %s; hint: its "
			"RNR "
			"retries wait the CM's 655 ms, which may outlast its ACK timeout\n",
			k->c.peer, MANY_MIN_RNR_TIMER, strerror(errno));
	else
		rc_trace(&k->c.log, "ibv_modify_qp: min_rnr_timer %d (10.24 ms)",
			 MANY_MIN_RNR_TIMER);
	printf("connection from %s: %u-byte %s, access %s through %s, %s %u%s%s\n", k->c.peer,
	       k->len, k->counter ? "shared counter" : "slice",
	       rw_access_str(k->access, flags, sizeof(flags)),
	       s->o.inject == MANY_INJECT_SHARED_REGION ? "the shared region (UNSAFE lesson)"
	       : s->use_mw				? "its window"
							: "its own region",
	       rw_depth_name(k->hello.ops), k->read_depth, k->hello.lesson ? ", lesson " : "",
	       k->hello.lesson ? rw_inject_name(k->hello.lesson) : "");
	k->state = CL_ACCEPTING;
	set_deadline(s, k);
	return 0;
}

/* Refused with why: the client reads it in the REJECT, the log names it. */
static void refuse(struct server *s, struct client *k, const char *why)
{
	char line[RC_REJECT_MAX + 16];

	rc_reject(&k->c, why);
	snprintf(line, sizeof(line), "rejected: %s", why);
	drop(s, k, line);
}

/* A request whose client is set up: its HELLO, memory, QP, the accept. */
static void take_client(struct server *s, struct client *k, const struct rc_cm_info *info)
{
	char why[RC_REJECT_MAX];

	why[0] = '\0';
	if (rc_take_request(&k->c, info, false)) {
		drop(s, k, k->c.log.err);
		return;
	}
	if (check_hello(s, k, info, why, sizeof(why))) {
		refuse(s, k, why);
		return;
	}
	k->access = access_for(&k->hello);
	k->mem = k->counter ? s->ctr_mem : s->arena + (size_t)slot_of(s, k) * s->stride;
	/* Fresh for every client: it reads this, never an earlier client's. */
	if (!k->counter)
		rw_fill_pattern(k->mem, k->len, RW_SERVER_SEED);
	if ((s->use_mw ? setup_shared(s, k) : setup_own(s, k))) {
		rc_reject(&k->c, "server could not set up the connection (see its log)");
		drop(s, k, k->c.log.err);
		return;
	}
	if (accept_client(s, k, why, sizeof(why))) {
		if (why[0])
			refuse(s, k, why);
		else
			drop(s, k, k->c.log.err);
	}
}

void on_connect_request(struct server *s, const struct rc_cm_info *info)
{
	struct client *k = NULL;
	char peer[64];

	rc_format_addr(rdma_get_peer_addr(info->id), peer, sizeof(peer));
	/* The peer's address, checked before a slot or QP is spent. */
	if (!rc_allow_match(&s->o.rc.allow, rdma_get_peer_addr(info->id))) {
		rc_allow_refused(&s->refusals, rc_now_us(), peer, stderr);
		rc_reject_id(info->id, "not allowed");
		rdma_destroy_id(info->id);
		return;
	}
	for (unsigned i = 0; i < s->max && !k; i++)
		k = s->cl[i].used ? NULL : &s->cl[i];
	/* A burst of requests past --max-clients: a few lines a second and
	 * a count, as for --allow's refusals, not a line each. */
	if (!k && rc_ratelimit_take(&s->refusals, rc_now_us(), stderr))
		fprintf(stderr, "rdma-server: rejecting %s: all %u client slots taken\n", peer,
			s->max);
	if (!k || (!s->dev_open && many_device_open(s, info->id->verbs))) {
		rc_reject_id(info->id, k ? "server could not set up the connection (see its log)"
					 : "server busy: too many clients, try again later");
		rdma_destroy_id(info->id);
		return;
	}
	memset(k, 0, sizeof(*k));
	rc_conn_init(&k->c, "server conn", s->o.rc.verbose, s->o.rc.timeout_ms, -1);
	k->c.ack_timeout = (uint8_t)s->o.rc.ack_timeout;
	k->used = true;
	s->nclients++;
	take_client(s, k, info);
}

/* ---- ESTABLISHED, BUF ---- */

static void send_buf(struct server *s, struct client *k)
{
	size_t off;
	struct rw_buf b = {
		.rb = { .addr = (uintptr_t)k->mem, .rkey = k->rkey, .len = k->len },
		.max_msg_sz = k->c.dev.max_msg_sz,
		.ops = k->hello.ops,
		.read_depth = k->read_depth,
		.lesson = k->hello.lesson,
		/* --counter: other clients add to the word too. */
		.flags = k->counter ? RW_BUF_SHARED : 0,
	};
	size_t n = rw_buf_pack((uint8_t *)tx_of(s, k, 0, &off)->addr + off, 0, &b);

	if (send_msg(s, k, 0, n, WR_BUF)) {
		drop(s, k, k->c.log.err);
		return;
	}
	k->state = CL_SERVING;
	set_deadline(s, k);
}

/* Windows: bind its window (on its slice's region, or on the counter's)
 * to its QP with only the access it asked for, under a fresh key byte;
 * BUF goes once the bind has completed. Fallback: its region's rkey. */
static void on_established(struct server *s, struct client *k)
{
	int remote = k->access &
		     (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);

	if (!s->use_mw || s->o.inject == MANY_INJECT_SHARED_REGION) {
		/* Its own region's rkey, or the lesson's one for every slice. */
		k->rkey = s->use_mw ? s->all.mr->rkey : k->own_mr->rkey;
		send_buf(s, k);
		return;
	}
	if (rc_mw_bind(&k->c, k->mw, k->counter ? &s->ctr : &k->region, 0, k->len, remote,
		       wr_id(s, k, WR_BIND), &k->rkey)) {
		drop(s, k, k->c.log.err);
		return;
	}
	k->outstanding++;
	k->state = CL_BINDING;
	set_deadline(s, k);
}

void on_client_cm_event(struct server *s, struct client *k, const struct rc_cm_info *info)
{
	if (k->closing)
		return; /* released once its sends complete */
	if (rc_conn_cm_event(&k->c, info)) {
		drop(s, k, k->c.log.err);
	} else if (info->event == RDMA_CM_EVENT_ESTABLISHED) {
		on_established(s, k);
	} else if (info->event == RDMA_CM_EVENT_DISCONNECTED) {
		if (k->state == CL_ANSWERED)
			printf("connection from %s closed\n", k->c.peer);
		drop(s, k,
		     k->state == CL_ANSWERED ? NULL
					     : "the client disconnected before it was done (it "
					       "failed or was stopped)");
	}
}

/* ---- DONE, RESULT ---- */

/* The word's value for an atomic client: the counter, or its own word. */
static int atomic_done(struct server *s, struct client *k, const struct rw_sum *done, uint64_t *v)
{
	bool mismatch;

	if (!k->counter)
		return rw_word_done(&k->c, k->mem, done, v, &mismatch);
	if (done->len != RW_WORD)
		return rc_fail(&k->c.log, EPROTO, "DONE is about %u bytes, the word has %u",
			       done->len, RW_WORD);
	*v = counter_value(s);
	/* Others add too: the client's adds make it at least this. */
	printf("client %s done: the counter holds %" PRIu64 " (%s %" PRIu64
	       " the client's adds make it at least)\n",
	       k->c.peer, *v, *v >= done->checksum ? "not below the" : "BELOW the", done->checksum);
	return 0;
}

/* Its DONE: check its slice (or word), answer with RESULT. */
static void on_done(struct server *s, struct client *k, const void *msg, uint32_t byte_len)
{
	struct rw_sum done, result;
	char why[160];
	size_t off;
	uint64_t v;

	if (k->state != CL_SERVING) {
		drop(s, k, "a message it was not due to send (02's protocol: one DONE, after BUF)");
		return;
	}
	if (rw_sum_unpack(msg, byte_len, RW_T_DONE, 1, &done, why, sizeof(why))) {
		rc_fail(&k->c.log, EPROTO, "bad DONE from the client: %s", why);
		drop(s, k, k->c.log.err);
		return;
	}
	if (rw_ops_atomic(k->hello.ops)) {
		if (atomic_done(s, k, &done, &v)) {
			drop(s, k, k->c.log.err);
			return;
		}
	} else if (done.len != k->len) {
		rc_fail(&k->c.log, EPROTO, "DONE is about %u bytes, the buffer has %u", done.len,
			k->len);
		drop(s, k, k->c.log.err);
		return;
	} else {
		/* Nothing was posted here for its data: it is simply in memory. */
		v = rw_checksum(k->mem, k->len);
		printf("client %s done: %u bytes, checksum " RW_CHECKSUM_NAME " 0x%016" PRIx64
		       "%s 0x%016" PRIx64 "\n",
		       k->c.peer, k->len, v,
		       v == done.checksum ? ", the same as the client's"
					  : " DIFFERS from the client's",
		       done.checksum);
	}
	result = (struct rw_sum){ .checksum = v, .len = done.len };
	if (send_msg(s, k, 1,
		     rw_sum_pack((uint8_t *)tx_of(s, k, 1, &off)->addr + off, RW_T_RESULT, 1,
				 &result),
		     WR_RESULT)) {
		drop(s, k, k->c.log.err);
		return;
	}
	k->probing = false;
	k->state = CL_ANSWERED;
	set_deadline(s, k);
}

/* A receive from the pool: copied out, the buffer back on the SRQ at
 * once (the credit returns), then handed to its client by qp_num. */
void on_pool_recv(struct server *s, const struct ibv_wc *wc)
{
	unsigned i = (unsigned)(wc->wr_id & ~WR_RECV);
	struct client *k = client_by_qp(s, wc->qp_num);
	uint8_t msg[RW_CTRL_MAX];

	if (i >= s->nrecv)
		return;
	memcpy(msg, (uint8_t *)s->rx.addr + (size_t)i * RW_CTRL_MAX, sizeof(msg));
	s->rx_posted[i] = false;
	s->posted--;
	if (s->o.inject != MANY_INJECT_SRQ_LOW)
		pool_repost(s, i);
	else if (!s->posted)
		printf("lesson srq-low: no receive left on the SRQ\n");
	if (!k || k->closing)
		return; /* a client released or leaving since */
	if (rc_wc_check(&k->c.log, wc)) {
		drop(s, k, k->c.log.err);
		return;
	}
	on_done(s, k, msg, wc->byte_len);
}

/* What a send of ours was, for the line that says it was flushed. */
static const char *flushed_send_name(uint64_t kind)
{
	switch (kind) {
	case WR_BIND: return "the bind of its window";
	case WR_BUF: return "its BUF";
	case WR_RESULT: return "its RESULT";
	default: return "the probe of the silent client";
	}
}

/* A completion of one of its QP's work requests. */
void on_wc(struct server *s, struct client *k, const struct ibv_wc *wc)
{
	if ((wc->wr_id & 0xff) == WR_OWN_RECV) {
		/* Fallback: its DONE in its own receive buffer. */
		if (wc->status == IBV_WC_WR_FLUSH_ERR)
			drop(s, k,
			     k->closing
				     ? NULL
				     : "the receive for DONE was flushed: the connection is in the "
				       "error state (was an RDMA request of the client refused, "
				       "e.g. "
				       "for a wrong rkey?)");
		else if (rc_wc_check(&k->c.log, wc))
			drop(s, k, k->closing ? NULL : k->c.log.err);
		else if (!k->closing)
			on_done(s, k, k->ctl->addr, wc->byte_len);
		return;
	}
	k->outstanding--;
	/* Its QP failed before: an RDMA request of the client's that the
	 * NIC refused leaves no flushed receive here (DONE comes from the
	 * SRQ), so a flushed send is where it shows: the probe of a silent
	 * client, or its BUF (seen on 6.12) or RESULT. */
	if (wc->status == IBV_WC_WR_FLUSH_ERR && !k->closing) {
		char why[200];

		snprintf(why, sizeof(why),
			 "%s was flushed: the connection is in the error state (was an RDMA "
			 "request of the client refused, e.g. for a wrong rkey?)",
			 flushed_send_name(wc->wr_id & 0xff));
		drop(s, k, why);
		return;
	}
	if (rc_wc_check(&k->c.log, wc)) {
		drop(s, k, k->closing ? NULL : k->c.log.err);
		return;
	}
	switch (wc->wr_id & 0xff) {
	case WR_BIND:
		if (!k->closing)
			send_buf(s, k);
		break;
	case WR_PROBE:
		k->probing = false;
		if (k->state == CL_SERVING) {
			rc_trace(&k->c.log, "the client's NIC answered: still working, waiting on");
			set_deadline(s, k);
		}
		break;
	}
	release(s, k);
}

/* Fallback: its own CQ's channel is readable. */
int on_own_completions(struct server *s, struct client *k)
{
	struct ibv_cq *cq;
	struct ibv_wc wc[16];
	void *ctx;
	int n = 0;

	/* Non-blocking: EAGAIN once every event is taken; then arm again,
	 * then poll, so that a completion after the poll wakes us. */
	while (!ibv_get_cq_event(k->c.dev.channel, &cq, &ctx))
		ibv_ack_cq_events(cq, 1);
	/* A failure here ends this client, never the server. */
	if (ibv_req_notify_cq(k->c.dev.cq, 0)) {
		/* No completion would wake us for its sends: they go with
		 * its own CQ (released now, not at shutdown). */
		k->outstanding = 0;
		drop(s, k, "ibv_req_notify_cq failed");
		return 0;
	}
	while (k->used && (n = ibv_poll_cq(k->c.dev.cq, 16, wc)) > 0)
		for (int i = 0; i < n && k->used; i++)
			on_wc(s, k, &wc[i]);
	if (k->used && n < 0)
		drop(s, k, "ibv_poll_cq failed on its own CQ");
	return 0;
}

/* Its current wait ended: a silent client after BUF is probed (a
 * zero-length RDMA WRITE its NIC acknowledges if it is there), not
 * dropped; every other wait drops it. */
void on_deadline(struct server *s, struct client *k)
{
	size_t off;
	struct rc_buf *b = tx_of(s, k, 0, &off);

	if (k->state == CL_SERVING && !k->probing) {
		rc_trace(&k->c.log, "no DONE within %d ms: probing the client", s->o.rc.timeout_ms);
		if (rc_post_rdma(&k->c, IBV_WR_RDMA_WRITE, b, off, 0, 0, 0, 0,
				 wr_id(s, k, WR_PROBE), true)) {
			drop(s, k, k->c.log.err);
			return;
		}
		k->outstanding++;
		k->probing = true;
		set_deadline(s, k);
		return;
	}
	drop(s, k,
	     k->state == CL_ACCEPTING ? "no ESTABLISHED within --timeout"
	     : k->state == CL_BINDING ? "its window's bind did not complete within --timeout"
	     : k->state == CL_SERVING ? "the client sent no DONE and its NIC did not answer a "
					"probe within --timeout"
				      : NULL); /* it has its RESULT: stop waiting for its goodbye */
}
