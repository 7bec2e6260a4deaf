// SPDX-License-Identifier: MIT
/*
 * load-conn.c - one connection of rdma-load, as a state machine driven by
 * the event loop in load.c: each CM event of its id and each completion
 * of its QP moves it one step on, and no call here waits.
 *
 * The steps (cmtime's, then 02's exchange):
 *   rdma_create_id           on the one channel of the process
 *   rdma_resolve_addr        -> ADDR_RESOLVED
 *   rdma_resolve_route       -> ROUTE_RESOLVED
 *   rdma_create_qp           on the shared PD and CQ (rc_create_qp_on)
 *   rdma_connect, HELLO      -> ESTABLISHED
 *   BUF received, WRITE our pattern, READ it back, compare, DONE with our
 *   checksum, RESULT with the server's: verified
 *   held; then rdma_disconnect -> DISCONNECTED
 */
#define _GNU_SOURCE
#include "load.h"

#include <string.h>

/* What a work request was, in the low bits of its wr_id; the connection's
 * index above them (one CQ for all: the completion must say whose). */
enum { WR_RECV = 1, WR_WRITE = 2, WR_READ = 3, WR_DONE = 4 };
#define WR_KIND_BITS LOAD_WR_KIND_BITS

static const char *const step_names[STEP_COUNT] = {
	"create id", "resolve addr", "resolve route", "create QP",
	"connect",   "exchange",     "disconnect",
};

const char *load_step_name(enum load_step s)
{
	return s < STEP_COUNT ? step_names[s] : "?";
}

static uint64_t wr_id(const struct load_conn *lc, unsigned kind)
{
	return (uint64_t)lc->idx << WR_KIND_BITS | kind;
}

static uint8_t *arena_at(const struct load_conn *lc, size_t part)
{
	return (uint8_t *)lc->ld->arena + lc->off + part;
}

/* A step begins: its clock starts. */
static void begin(struct load_conn *lc, enum load_step s)
{
	lc->step = s;
	lc->t0 = rc_now_ns();
}

/* The step in progress ended well: keep its time. */
static void end_step(struct load_conn *lc)
{
	lc->ns[lc->step] = rc_now_ns() - lc->t0;
	lc->timed[lc->step] = true;
}

static bool connecting(enum load_state st)
{
	return st == LS_ADDR || st == LS_ROUTE || st == LS_CONNECT;
}

static bool exchanging(enum load_state st)
{
	return st >= LS_BUF && st <= LS_RESULT;
}

void load_conn_fail(struct load_conn *lc)
{
	struct load *ld = lc->ld;

	if (lc->st == LS_FAILED)
		return;
	if (connecting(lc->st))
		ld->connecting--;
	if (lc->st < LS_HELD)
		ld->settled++;
	lc->st = LS_FAILED;
	ld->failed++;
	rc_trace(&lc->c.log, "failed in %s: %s", load_step_name(lc->step), lc->c.log.err);
	/* Tell the server at once (it frees its side); the QP and id stay
	 * until the end, so a late completion still finds its connection. */
	rc_disconnect(&lc->c);
}

int load_conn_start(struct load *ld, struct load_conn *lc)
{
	struct rc_conn *c = &lc->c;
	char name[32];
	int ret;

	snprintf(name, sizeof(name), "conn %u", lc->idx);
	rc_conn_init(c, name, ld->o.rc.verbose, ld->o.rc.timeout_ms, -1);
	c->ack_timeout = (uint8_t)ld->o.rc.ack_timeout;
	c->retry_count = (uint8_t)ld->o.rc.retry_count;
	lc->ld = ld;
	lc->done_status = -1;
	ld->started++;
	ld->connecting++;
	lc->st = LS_ADDR;
	/* One bound for the whole connect (its four waits): half a second
	 * more than the CM is given to resolve, so its own verdict (an
	 * ADDR_ERROR with a status) comes before ours. */
	lc->deadline_us = rc_now_us() + (uint64_t)c->timeout_ms * 1000u + 500000u;
	rc_format_addr(ld->ai->ai_dst_addr, c->peer, sizeof(c->peer));

	begin(lc, STEP_CREATE_ID);
	/* On the process's one channel, context lc: the loop finds us by it. */
	if (rdma_create_id(ld->ch, &c->id, lc, RDMA_PS_TCP)) {
		rc_fail_call(&c->log, "rdma_create_id", errno, NULL);
		load_conn_fail(lc);
		return -1;
	}
	end_step(lc);

	begin(lc, STEP_RESOLVE_ADDR);
	/* Which local device and port reach the server: ADDR_RESOLVED. */
	if (rdma_resolve_addr(c->id, NULL, ld->ai->ai_dst_addr, c->timeout_ms)) {
		ret = errno;
		rc_fail(&c->log, ret, "rdma_resolve_addr(%s): %s; hint: %s", c->peer, strerror(ret),
			rc_call_hint("rdma_resolve_addr", ret));
		load_conn_fail(lc);
		return -1;
	}
	return 0;
}

/* The first id to resolve names the device: open the shared context on
 * it (one PD, one CQ for every QP) and register the arena there. */
static int open_device(struct load *ld, struct ibv_context *verbs)
{
	/* Per connection at most 3 completions at once (BUF or RESULT's
	 * receive, and WRITE, READ or DONE): 4 leaves room. */
	struct rc_device_attr a = { .ncq = 1, .cq_size = 4 * (int)ld->o.conns + 8 };
	int ret;

	ret = rc_device_open(&ld->dev, verbs, &a, "load", ld->o.rc.verbose);
	if (ret)
		return rc_fail(&ld->log, -ret, "%s", ld->dev.log.err);
	ld->dev_open = true;
	/* One registration for all: LOCAL_WRITE, since our READs land in
	 * it; nothing remote ever touches it (no REMOTE_* flag). */
	ret = rc_mem_reg(&ld->dev, ld->arena, ld->arena_len, IBV_ACCESS_LOCAL_WRITE, &ld->mem);
	if (ret) {
		rc_fail(&ld->log, -ret, "%s", ld->dev.log.err);
		/* No QP may be created on a context without the arena. */
		rc_device_close(&ld->dev);
		ld->dev_open = false;
		return ret;
	}
	ld->mem_reg = true;
	return 0;
}

/* ADDR_RESOLVED: find the route (for RoCE: the GID and next hop's MAC). */
static int on_addr_resolved(struct load *ld, struct load_conn *lc)
{
	struct rc_conn *c = &lc->c;

	end_step(lc);
	if (!ld->dev_open && open_device(ld, c->id->verbs))
		return rc_fail(&c->log, ENODEV, "%s", ld->log.err);
	begin(lc, STEP_RESOLVE_ROUTE);
	if (rdma_resolve_route(c->id, c->timeout_ms))
		return rc_fail_call(&c->log, "rdma_resolve_route", errno, NULL);
	lc->st = LS_ROUTE;
	return 0;
}

/* ROUTE_RESOLVED: the QP on the shared device, then connect with HELLO. */
static int on_route_resolved(struct load *ld, struct load_conn *lc)
{
	struct rc_conn *c = &lc->c;
	/* Sends: WRITE, READ and DONE, one at a time; receives: BUF, then
	 * RESULT in the same slot. */
	struct ibv_qp_cap cap = {
		.max_send_wr = 2, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1
	};
	struct rw_hello h = { .len = ld->o.size, .ops = RW_OP_BOTH, .read_depth = 1 };
	uint8_t hello[RW_HELLO_LEN];
	int ret;

	end_step(lc);
	begin(lc, STEP_CREATE_QP);
	ret = rc_create_qp_on(c, &ld->dev, 0, &cap);
	if (ret)
		return ret;
	end_step(lc);

	begin(lc, STEP_CONNECT);
	/* The receive for BUF first: the server sends it once connected. */
	ret = rc_post_recv(c, &ld->mem, lc->off + LOAD_RX, RW_CTRL_MAX, wr_id(lc, WR_RECV));
	if (ret)
		return ret;
	rw_hello_pack(hello, &h);
	/* initiator_depth 1: our one READ; responder_resources 0: the server
	 * never READs from us. ESTABLISHED comes as an event to the loop. */
	ret = rc_connect_start(c, hello, sizeof(hello), 1, 0);
	if (ret)
		return ret;
	lc->st = LS_CONNECT;
	return 0;
}

static void on_wc_now(struct load *ld, struct load_conn *lc, const struct ibv_wc *wc);

/* ESTABLISHED: the exchange begins, bounded by --timeout of its own. */
static void on_established(struct load *ld, struct load_conn *lc)
{
	end_step(lc);
	ld->connecting--;
	ld->t_last_est = rc_now_us(); /* the rate up to ESTABLISHED: make bench's many row */
	begin(lc, STEP_EXCHANGE);
	lc->deadline_us = rc_now_us() + (uint64_t)lc->c.timeout_ms * 1000u;
	lc->st = LS_BUF;
	/* BUF's receive may have completed before the loop took ESTABLISHED
	 * off the CM channel (two fds): load_conn_wc kept it. */
	if (lc->early) {
		lc->early = false;
		on_wc_now(ld, lc, &lc->early_wc);
	}
}

/* What an event other than the one awaited means in state st. */
static int unexpected_event(struct load_conn *lc, const struct rc_cm_info *info,
			    enum rdma_cm_event_type want)
{
	struct rc_conn *c = &lc->c;
	int ret;

	/* rc_conn_cm_event names REJECTED (with the server's reason),
	 * UNREACHABLE, CONNECT_ERROR... and records DISCONNECTED. */
	ret = rc_conn_cm_event(c, info);
	if (ret)
		return ret;
	if (info->event == RDMA_CM_EVENT_DISCONNECTED)
		return rc_fail(&c->log, ECONNRESET,
			       "the server disconnected%s; hint: its log says why (was it "
			       "stopped, or did it time out?)",
			       exchanging(lc->st) ? " before the exchange was done" : "");
	if (info->event == RDMA_CM_EVENT_TIMEWAIT_EXIT || info->event == RDMA_CM_EVENT_ADDR_CHANGE)
		return 0;
	return rc_fail(&c->log, EPROTO, "got %s (status %d) while waiting for %s; hint: %s",
		       rdma_event_str(info->event), info->status, rdma_event_str(want),
		       rc_cm_event_hint(info->event, info->status));
}

/* A step's CM event failed: say which step's event it was. */
static int step_event_error(struct load_conn *lc, const struct rc_cm_info *info,
			    enum rdma_cm_event_type want)
{
	return rc_fail(&lc->c.log, EHOSTUNREACH, "%s: got %s (status %d) instead of %s; hint: %s",
		       lc->c.peer, rdma_event_str(info->event), info->status, rdma_event_str(want),
		       rc_cm_event_hint(info->event, info->status));
}

void load_conn_cm_event(struct load *ld, const struct rc_cm_info *info)
{
	struct load_conn *lc = info->id ? info->id->context : NULL;
	int ret = 0;

	if (!lc)
		return;
	switch (lc->st) {
	case LS_ADDR:
		ret = info->event == RDMA_CM_EVENT_ADDR_RESOLVED
			      ? on_addr_resolved(ld, lc)
			      : step_event_error(lc, info, RDMA_CM_EVENT_ADDR_RESOLVED);
		break;
	case LS_ROUTE:
		ret = info->event == RDMA_CM_EVENT_ROUTE_RESOLVED
			      ? on_route_resolved(ld, lc)
			      : step_event_error(lc, info, RDMA_CM_EVENT_ROUTE_RESOLVED);
		break;
	case LS_CONNECT:
		ret = rc_conn_cm_event(&lc->c, info);
		if (!ret && info->event == RDMA_CM_EVENT_ESTABLISHED)
			on_established(ld, lc);
		else if (!ret)
			ret = unexpected_event(lc, info, RDMA_CM_EVENT_ESTABLISHED);
		break;
	case LS_HELD:
		/* Verified already: a server that hangs up now (its own
		 * --timeout) costs no verification; noted in the report. */
		rc_conn_cm_event(&lc->c, info);
		if (lc->c.peer_disconnected) {
			ld->dropped++;
			lc->st = LS_CLOSED;
		}
		break;
	case LS_DISCONNECT:
		rc_conn_cm_event(&lc->c, info);
		if (lc->c.peer_disconnected) {
			end_step(lc);
			lc->st = LS_CLOSED;
		}
		break;
	case LS_FAILED:
	case LS_CLOSED:
		rc_conn_cm_event(&lc->c, info); /* recorded, nothing more to do */
		break;
	default: /* the exchange */
		ret = unexpected_event(lc, info, RDMA_CM_EVENT_DISCONNECTED);
		break;
	}
	if (ret)
		load_conn_fail(lc);
}

/* ---- The exchange: 02's wire (rw.h), one step per completion ---- */

/* BUF: the server's buffer; WRITE our pattern into it. */
static int on_buf(struct load *ld, struct load_conn *lc, const struct ibv_wc *wc)
{
	struct rc_conn *c = &lc->c;
	struct rw_buf *b = &lc->remote;
	uint32_t max_msg;
	char why[160];
	int ret;

	/* Never trust the peer: length from wc.byte_len, then every field. */
	ret = rw_buf_unpack(arena_at(lc, LOAD_RX), wc->byte_len, 0, b, why, sizeof(why));
	if (ret)
		return rc_fail(&c->log, EPROTO, "bad BUF from the server: %s", why);
	if ((b->ops & RW_OP_BOTH) != RW_OP_BOTH || b->read_depth < 1)
		return rc_fail(&c->log, EPROTO,
			       "the server's buffer allows %s with read depth %u; we need "
			       "write+read with 1",
			       rw_ops_str(b->ops), b->read_depth);
	if (!rc_remote_range_ok(&b->rb, 0, ld->o.size))
		return rc_fail(&c->log, EINVAL,
			       "-s %u is larger than the server's buffer of %u bytes; hint: "
			       "a smaller -s, or a server with a larger -s",
			       ld->o.size, b->rb.len);
	max_msg = c->dev.max_msg_sz < b->max_msg_sz ? c->dev.max_msg_sz : b->max_msg_sz;
	if (ld->o.size > max_msg)
		return rc_fail(&c->log, EMSGSIZE, "-s %u is more than one message may carry (%u)",
			       ld->o.size, max_msg);
	/* The same slot takes RESULT later: BUF is decoded, reuse it. */
	ret = rc_post_recv(c, &ld->mem, lc->off + LOAD_RX, RW_CTRL_MAX, wr_id(lc, WR_RECV));
	if (ret)
		return ret;
	lc->st = LS_WRITE;
	return rc_post_rdma(c, IBV_WR_RDMA_WRITE, &ld->mem, lc->off + LOAD_SRC, ld->o.size,
			    b->rb.addr, b->rb.rkey, 0, wr_id(lc, WR_WRITE), true);
}

/* WRITE done: READ it back into our destination. */
static int on_write(struct load *ld, struct load_conn *lc)
{
	lc->st = LS_READ;
	return rc_post_rdma(&lc->c, IBV_WR_RDMA_READ, &ld->mem, lc->off + LOAD_SRC + ld->o.size,
			    ld->o.size, lc->remote.rb.addr, lc->remote.rb.rkey, 0,
			    wr_id(lc, WR_READ), true);
}

/* READ done: compare, then DONE with our checksum (sent after a mismatch
 * too: the server logs its side). */
static int on_read(struct load *ld, struct load_conn *lc)
{
	struct rc_conn *c = &lc->c;
	const uint8_t *src = arena_at(lc, LOAD_SRC);
	struct rw_sum done = { .len = ld->o.size };
	size_t n;

	if (memcmp(src, src + ld->o.size, ld->o.size))
		return rc_fail(&c->log, EPROTO,
			       "the data read back differs from the data written (%u bytes)",
			       ld->o.size);
	lc->sum = rw_checksum(src, ld->o.size);
	done.checksum = lc->sum;
	n = rw_sum_pack(arena_at(lc, LOAD_TX), RW_T_DONE, 1, &done);
	lc->st = LS_RESULT;
	lc->done_ns = rc_now_ns();
	return rc_post_send(c, &ld->mem, lc->off + LOAD_TX, n, wr_id(lc, WR_DONE), true);
}

/* RESULT: the server's checksum of its buffer must be ours. */
static int on_result(struct load *ld, struct load_conn *lc, const struct ibv_wc *wc)
{
	struct rc_conn *c = &lc->c;
	char why[160];

	if (rw_sum_unpack(arena_at(lc, LOAD_RX), wc->byte_len, RW_T_RESULT, 1, &lc->result, why,
			  sizeof(why)))
		return rc_fail(&c->log, EPROTO, "bad RESULT from the server: %s", why);
	if (lc->result.len != ld->o.size)
		return rc_fail(&c->log, EPROTO, "RESULT is about %u bytes, we used %u",
			       lc->result.len, ld->o.size);
	if (lc->result.checksum != lc->sum)
		return rc_fail(&c->log, EPROTO,
			       "the server's checksum 0x%016" PRIx64
			       " differs from ours 0x%016" PRIx64
			       ": the data did not arrive as sent",
			       lc->result.checksum, lc->sum);
	lc->result_got = true;
	return 0;
}

/* DONE sent and RESULT matched, in either order: verified. */
static void maybe_verified(struct load *ld, struct load_conn *lc)
{
	if (!lc->done_sent || !lc->result_got)
		return;
	end_step(lc);
	lc->verified = true;
	lc->st = LS_HELD;
	ld->settled++;
	ld->verified++;
}

static int exchange_step(struct load *ld, struct load_conn *lc, const struct ibv_wc *wc,
			 unsigned kind)
{
	int ret;

	if (kind == WR_DONE) { /* for --inject srq-low: what became of DONE */
		lc->done_status = wc->status;
		lc->done_ms = (double)(rc_now_ns() - lc->done_ns) / 1e6;
	}
	ret = rc_wc_check(&lc->c.log, wc);
	if (ret) /* log.err names the status (ibv_wc_status_str) and a hint */
		return ret;
	if (lc->st == LS_BUF && kind == WR_RECV && wc->opcode == IBV_WC_RECV)
		return on_buf(ld, lc, wc);
	if (lc->st == LS_WRITE && kind == WR_WRITE && wc->opcode == IBV_WC_RDMA_WRITE)
		return on_write(ld, lc);
	if (lc->st == LS_READ && kind == WR_READ && wc->opcode == IBV_WC_RDMA_READ)
		return on_read(ld, lc);
	if (lc->st == LS_RESULT && kind == WR_DONE && wc->opcode == IBV_WC_SEND && !lc->done_sent)
		lc->done_sent = true;
	else if (lc->st == LS_RESULT && kind == WR_RECV && wc->opcode == IBV_WC_RECV &&
		 !lc->result_got)
		ret = on_result(ld, lc, wc);
	else
		return rc_unexpected_wc(&lc->c, wc);
	if (!ret)
		maybe_verified(ld, lc);
	return ret;
}

static void on_wc_now(struct load *ld, struct load_conn *lc, const struct ibv_wc *wc)
{
	if (exchange_step(ld, lc, wc, wc->wr_id & ((1u << WR_KIND_BITS) - 1)))
		load_conn_fail(lc);
}

void load_conn_wc(struct load *ld, const struct ibv_wc *wc)
{
	uint64_t idx = wc->wr_id >> WR_KIND_BITS;
	struct load_conn *lc;

	if (idx >= ld->o.conns)
		return; /* not one of ours: cannot happen, and never trusted */
	lc = &ld->conns[idx];
	if (!lc->c.qp || wc->qp_num != lc->c.qp->qp_num)
		return;
	if ((wc->wr_id & ((1u << WR_KIND_BITS) - 1)) >= LOAD_WR_LESSON) {
		load_lesson_wc(ld, wc);
		return;
	}
	/* BUF's receive before ESTABLISHED was taken: for on_established. */
	if (lc->st == LS_CONNECT && !lc->early) {
		lc->early_wc = *wc;
		lc->early = true;
		return;
	}
	if (exchanging(lc->st))
		on_wc_now(ld, lc, wc);
	/* Anything else: flushed work of a connection that failed or left. */
}

void load_conn_expire(struct load *ld, struct load_conn *lc, uint64_t now)
{
	struct rc_conn *c = &lc->c;
	int ms = c->timeout_ms;

	if (now < lc->deadline_us)
		return;
	if (lc->st == LS_DISCONNECT) {
		/* Verified already; the goodbye went unanswered. */
		rc_fail(&c->log, ETIMEDOUT, "no DISCONNECTED within %d ms", ms);
		ld->no_goodbye++;
		lc->st = LS_CLOSED;
		return;
	}
	if (!connecting(lc->st) && !exchanging(lc->st))
		return;
	rc_fail(&c->log, ETIMEDOUT, "%s: no %s within %d ms of its %s; hint: %s", c->peer,
		connecting(lc->st) ? "ESTABLISHED" : "end of the exchange", ms,
		connecting(lc->st) ? "rdma_create_id" : "ESTABLISHED",
		connecting(lc->st) ? "is the server up and reachable over RDMA, and is its listen "
				     "backlog full (fewer --in-flight)?"
				   : "is the server stuck or overloaded?");
	load_conn_fail(lc);
}

void load_conn_disconnect(struct load *ld, struct load_conn *lc)
{
	(void)ld;
	if (lc->st != LS_HELD)
		return;
	begin(lc, STEP_DISCONNECT);
	lc->deadline_us = rc_now_us() + (uint64_t)lc->c.timeout_ms * 1000u;
	/* Our DREQ; the server's answer comes as DISCONNECTED to the loop. */
	if (rc_disconnect(&lc->c)) {
		lc->st = LS_CLOSED;
		return;
	}
	lc->st = lc->c.peer_disconnected ? LS_CLOSED : LS_DISCONNECT;
}
