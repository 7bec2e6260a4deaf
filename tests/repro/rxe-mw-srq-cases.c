// SPDX-License-Identifier: MIT
/*
 * rxe-mw-srq's cases: each makes the connections it needs (pairs[0..3]),
 * prints one line per fact ("name: what happened") and drops them.
 * "server QP N" and "client QP N" in an event list are pairs[N]'s.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rxe-mw-srq.h"

#define W IBV_WR_RDMA_WRITE
#define R IBV_WR_RDMA_READ

/* Server QPs on the SRQ and the shared CQ; the client retries RNR forever. */
static struct srv_opts shared(const struct probe *p)
{
	return (struct srv_opts){ .srq = p->srq, .rnr_retry = 7 };
}

static void case_caps(const struct probe *p)
{
	const struct ibv_device_attr *d = &p->dev;
	unsigned f = d->device_cap_flags;

	printf("caps: MEM_WINDOW %s, TYPE_2A %s, TYPE_2B %s; max_mw %d, max_mr %d, max_qp %d, "
	       "max_cq %d, max_cqe %d, max_srq %d, max_srq_wr %d, max_srq_sge %d, max_qp_wr %d\n",
	       f & IBV_DEVICE_MEM_WINDOW ? "yes" : "no",
	       f & IBV_DEVICE_MEM_WINDOW_TYPE_2A ? "yes" : "no",
	       f & IBV_DEVICE_MEM_WINDOW_TYPE_2B ? "yes" : "no", d->max_mw, d->max_mr, d->max_qp,
	       d->max_cq, d->max_cqe, d->max_srq, d->max_srq_wr, d->max_srq_sge, d->max_qp_wr);
	printf("arena-mr: LOCAL_WRITE|MW_BIND, no REMOTE_*: lkey 0x%x, rkey 0x%x\n",
	       p->arena_mr->lkey, p->arena_mr->rkey);
}

/* The arena MR's own rkey, from a client: it must not open the arena. */
static void case_mr_rkey(struct probe *p)
{
	struct pair *a = &p->pairs[0];
	enum ibv_wr_opcode op[] = { W, R };
	const char *st[2], *ev[2], *qs[2];

	for (int i = 0; i < 2; i++) {
		if (new_pair(p, a, 16, shared(p)))
			return;
		st[i] = rdma_op(p, a, op[i], p->arena, p->arena_mr->rkey, 64);
		ev[i] = collect(p, 300, NULL);
		qs[i] = qp_state(a->sid->qp);
		drop_pair(p, a);
	}
	printf("mr-own-rkey: WRITE %s, events %s, server QP %s; READ %s, events %s, server QP %s\n",
	       st[0], ev[0], qs[0], st[1], ev[1], qs[1]);
}

/* A connection and a type 2 window bound on its server QP to slice 0. */
static struct ibv_mw *bound_window(struct probe *p, struct pair *a, uint32_t *key,
				   uint32_t *alloc_rkey)
{
	struct ibv_mw *mw;

	if (new_pair(p, a, 16, shared(p)))
		return NULL;
	mw = ibv_alloc_mw(p->spd, IBV_MW_TYPE_2);
	if (!mw) {
		printf("mw-alloc: ibv_alloc_mw(TYPE_2): %s\n", errstr(errno));
		return NULL;
	}
	if (alloc_rkey)
		*alloc_rkey = mw->rkey;
	*key = ibv_inc_rkey(mw->rkey);
	bind_mw(p, a, mw, p->arena_mr, p->arena, SLICE, *key);
	if (p->last)
		printf("mw-bind: failed: %s\n", status(p));
	else
		mw->rkey = *key; /* the application keeps the handle's rkey current */
	return mw;
}

static void case_mw_basic(struct probe *p)
{
	struct pair *a = &p->pairs[0];
	const char *w, *r, *o, *e;
	uint32_t alloc_rkey, key;
	struct ibv_mw *mw;
	int wok, rok;

	if (new_pair(p, a, 16, shared(p)))
		return;
	mw = ibv_alloc_mw(p->spd, IBV_MW_TYPE_2);
	if (!mw)
		return (void)printf("mw-alloc: ibv_alloc_mw(TYPE_2): %s\n", errstr(errno));
	alloc_rkey = mw->rkey;
	key = ibv_inc_rkey(mw->rkey);
	w = bind_mw(p, a, mw, p->arena_mr, p->arena, SLICE, key);
	printf("mw-bind: ibv_alloc_mw rkey 0x%x; IBV_WR_BIND_MW of slice 0 with key 0x%x: %s; "
	       "mw->rkey after the completion 0x%x\n",
	       alloc_rkey, key, w, mw->rkey);
	mw->rkey = key;
	memset(p->cbuf, 0xa5, 64);
	w = rdma_op(p, a, W, p->arena + 64, key, 64);
	wok = !p->last && !memcmp(p->arena + 64, p->cbuf, 64);
	memset(p->arena + 128, 0x5a, 64);
	r = rdma_op(p, a, R, p->arena + 128, key, 64);
	rok = !p->last && p->cbuf[0] == 0x5a;
	printf("mw-in-bounds: WRITE %s (data %s), READ %s (data %s)\n", w,
	       wok ? "arrived" : "MISSING", r, rok ? "right" : "WRONG");
	memset(p->cbuf, 0xee, 64);
	o = rdma_op(p, a, W, p->arena + SLICE - 32, key, 64);
	e = collect(p, 300, NULL);
	printf("mw-out-of-bounds: WRITE of 64 bytes at the slice's end - 32: %s, next slice %s; "
	       "events %s; client QP %s, server QP %s\n",
	       o, p->arena[SLICE] == 0xee ? "WRITTEN" : "untouched", e, qp_state(a->cid->qp),
	       qp_state(a->sid->qp));
	if (!p->last) {
		o = rdma_op(p, a, W, p->arena + SLICE + 512, key, 64);
		w = rdma_op(p, a, W, p->arena + 4 * SLICE - 32, key, 64);
		printf("mw-other-slice: through slice 0's window, a WRITE wholly inside slice 1: "
		       "%s, "
		       "slice 1 %s; a WRITE past the end of the arena MR: %s\n",
		       o, p->arena[SLICE + 512] == 0xee ? "WRITTEN" : "untouched", w);
	}
	ibv_dealloc_mw(mw);
	drop_pair(p, a);
	mw = bound_window(p, a, &key, NULL);
	if (mw) {
		o = rdma_op(p, a, R, p->arena + SLICE - 32, key, 64);
		printf("mw-out-of-bounds: READ of 64 bytes at the slice's end - 32: %s; events "
		       "%s\n",
		       o, collect(p, 300, NULL));
		ibv_dealloc_mw(mw);
	}
	drop_pair(p, a);
}

/* The other way to cut slices: an MR per slice (MW_BIND only), a window on it. */
static void case_mw_slice_mr(struct probe *p)
{
	struct pair *a = &p->pairs[0];
	struct ibv_mr *mr =
		ibv_reg_mr(p->spd, p->arena, SLICE, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	struct ibv_mw *mw = mr ? ibv_alloc_mw(p->spd, IBV_MW_TYPE_2) : NULL;
	uint32_t key = mw ? ibv_inc_rkey(mw->rkey) : 0;
	const char *b = "-", *in = "-", *o = "-";

	if (mw && !new_pair(p, a, 16, shared(p))) {
		memset(p->arena + SLICE, 0, SLICE);
		memset(p->cbuf, 0xee, 64);
		b = bind_mw(p, a, mw, mr, p->arena, SLICE, key);
		in = rdma_op(p, a, W, p->arena + 64, key, 64);
		o = rdma_op(p, a, W, p->arena + SLICE - 32, key, 64);
	}
	printf("mw-slice-mr: a window on an MR of slice 0 alone: bind %s; WRITE inside %s; WRITE "
	       "at its end - 32: %s, next slice %s\n",
	       b, in, o, p->arena[SLICE] == 0xee ? "WRITTEN" : "untouched");
	if (mw)
		ibv_dealloc_mw(mw);
	if (mr)
		ibv_dereg_mr(mr);
	drop_pair(p, a);
}

/* Type 2 windows belong to one QP: another connection's peer tries it. */
static void case_mw_other_qp(struct probe *p)
{
	struct pair *a = &p->pairs[0], *b = &p->pairs[1], *c = &p->pairs[2];
	const char *open, *wb, *rc, *e, *own;
	struct ibv_mw *mw = bound_window(p, a, &(uint32_t){ 0 }, NULL);
	uint32_t key = mw ? mw->rkey : 0;

	if (mw && !new_pair(p, b, 16, shared(p)) && !new_pair(p, c, 16, shared(p))) {
		open = rdma_op(p, b, W, p->arena + 2 * SLICE, p->open_mr->rkey, 64);
		wb = rdma_op(p, b, W, p->arena + 64, key, 64);
		rc = rdma_op(p, c, R, p->arena + 64, key, 64);
		e = collect(p, 300, NULL);
		own = rdma_op(p, a, W, p->arena + 64, key, 64);
		printf("mw-other-qp: a REMOTE_WRITE MR's rkey from QP 1's peer: %s; QP 0's window "
		       "from QP 1's peer: WRITE %s, from QP 2's peer: READ %s; events %s; "
		       "QP 0's own peer afterwards: WRITE %s\n",
		       open, wb, rc, e, own);
	}
	if (mw)
		ibv_dealloc_mw(mw);
	for (int i = 0; i < 3; i++)
		drop_pair(p, &p->pairs[i]);
}

/* A new key byte: LOCAL_INV, then bind again; the old rkey must fail. */
static void case_mw_rebind(struct probe *p)
{
	struct pair *a = &p->pairs[0];
	const char *inv, *b2, *w2, *old, *e;
	uint32_t k1, k2;
	struct ibv_mw *mw = bound_window(p, a, &k1, NULL);

	if (mw) {
		inv = local_inv(p, a, k1);
		k2 = ibv_inc_rkey(k1);
		b2 = bind_mw(p, a, mw, p->arena_mr, p->arena, SLICE, k2);
		if (!p->last)
			mw->rkey = k2;
		w2 = rdma_op(p, a, W, p->arena + 64, k2, 64);
		old = rdma_op(p, a, W, p->arena + 64, k1, 64);
		e = collect(p, 300, NULL);
		printf("mw-rebind: LOCAL_INV of 0x%x %s; bind with key 0x%x %s; WRITE with the new "
		       "rkey %s; with the old rkey %s; events %s\n",
		       k1, inv, k2, b2, w2, old, e);
		ibv_dealloc_mw(mw);
	}
	drop_pair(p, a);
	mw = bound_window(p, a, &k1, NULL);
	if (mw) {
		b2 = bind_mw(p, a, mw, p->arena_mr, p->arena, SLICE, ibv_inc_rkey(k1));
		e = collect(p, 300, NULL);
		printf("mw-bind-over-bound: a second bind of a bound type 2 window, no LOCAL_INV: "
		       "%s; server QP %s; events %s\n",
		       b2, qp_state(a->sid->qp), e);
		ibv_dealloc_mw(mw);
	}
	drop_pair(p, a);
	mw = bound_window(p, a, &k1, &k2);
	if (mw) {
		mw->rkey = k2; /* as ibv_alloc_mw left it: the application did not update it */
		inv = local_inv(p, a, k1);
		b2 = bind_mw(p, a, mw, p->arena_mr, p->arena, SLICE, ibv_inc_rkey(k1));
		printf("mw-stale-handle-rkey: LOCAL_INV %s; bind with mw->rkey left at the "
		       "ibv_alloc_mw value: %s\n",
		       inv, b2);
		ibv_dealloc_mw(mw);
	}
	drop_pair(p, a);
}

/* An MR with a window bound to it, and the window itself, released. */
static void case_mw_dereg(struct probe *p)
{
	struct pair *a = &p->pairs[0];
	uint8_t *buf = p->arena + 3 * SLICE;
	struct ibv_mr *mr = NULL;
	struct ibv_mw *mw = NULL;
	int r1 = -1, r2, r3 = -1;
	uint32_t key;
	const char *w;

	if (new_pair(p, a, 16, shared(p)))
		return;
	mr = ibv_reg_mr(p->spd, buf, SLICE, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	mw = mr ? ibv_alloc_mw(p->spd, IBV_MW_TYPE_2) : NULL;
	if (!mw)
		goto out;
	key = ibv_inc_rkey(mw->rkey);
	bind_mw(p, a, mw, mr, buf, SLICE, key);
	if (p->last)
		goto out;
	mw->rkey = key;
	r1 = ibv_dereg_mr(mr);
	if (!r1)
		mr = NULL;
	r2 = ibv_dealloc_mw(mw);
	mw = NULL;
	w = rdma_op(p, a, W, buf, key, 64);
	if (mr && !(r3 = ibv_dereg_mr(mr)))
		mr = NULL;
	printf("mw-dereg-while-bound: ibv_dereg_mr of the MR %s; ibv_dealloc_mw of the bound "
	       "window %s; a WRITE with its rkey after %s; ibv_dereg_mr after the dealloc %s\n",
	       errstr(r1), errstr(r2), w, r1 ? errstr(r3) : "-");
out:
	if (mw)
		ibv_dealloc_mw(mw);
	if (mr)
		ibv_dereg_mr(mr);
	drop_pair(p, a);
}

/* A departing client: its server QP (on the SRQ) is moved to the error state. */
static void case_departing(struct probe *p)
{
	struct pair *a = &p->pairs[0];
	struct ibv_qp_attr m = { .qp_state = IBV_QPS_ERR };
	struct ibv_mw *mw, *mw2;
	const char *e, *inv, *b;
	double t0 = now_ms();
	uint32_t key;
	int rm, r1, r2, r3 = 0;

	mw = bound_window(p, a, &key, NULL);
	if (!mw)
		return drop_pair(p, a);
	rm = ibv_modify_qp(a->sid->qp, &m, IBV_QP_STATE);
	e = collect(p, 1000, "LAST_WQE");
	printf("last-wqe: server QP on the SRQ moved to ERR (ibv_modify_qp %s): events %s (%s)\n",
	       errstr(rm), e, after(t0));
	inv = local_inv(p, a, key);
	/* Does the window still hold the arena? Then ibv_dereg_mr fails. */
	r1 = ibv_dereg_mr(p->arena_mr);
	if (!r1)
		p->arena_mr = NULL;
	r2 = ibv_dealloc_mw(mw);
	if (p->arena_mr && !(r3 = ibv_dereg_mr(p->arena_mr)))
		p->arena_mr = NULL;
	if (!p->arena_mr)
		p->arena_mr = ibv_reg_mr(p->spd, p->arena, 4 * SLICE,
					 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	mw2 = p->arena_mr ? ibv_alloc_mw(p->spd, IBV_MW_TYPE_2) : NULL;
	b = mw2 ? bind_mw(p, a, mw2, p->arena_mr, p->arena, SLICE, ibv_inc_rkey(mw2->rkey))
		: "ibv_alloc_mw failed";
	if (mw2)
		ibv_dealloc_mw(mw2);
	printf("mw-departing-qp: on the server QP in ERR: LOCAL_INV %s; ibv_dereg_mr of the arena "
	       "then %s; ibv_dealloc_mw %s; ibv_dereg_mr after it %s; a new window's bind on that "
	       "QP %s; events %s\n",
	       inv, errstr(r1), errstr(r2), r1 ? errstr(r3) : "-", b, collect(p, 300, NULL));
	if (!p->arena_mr)
		printf("mw-departing-qp: the arena could not be registered again\n");
	drop_pair(p, a);
}

/*
 * Which goes first, ibv_destroy_qp or ibv_dealloc_mw of its window? Its
 * own run (--destroy-order), the last: a kernel that frees the QP while
 * the window still points to it may not survive the dealloc.
 */
int case_destroy_order(struct probe *p)
{
	struct pair *a = &p->pairs[0];
	int r1, r2;
	double t0, t1;
	uint32_t key;
	struct ibv_mw *mw;

	for (int qp_first = 1; qp_first >= 0; qp_first--) {
		mw = bound_window(p, a, &key, NULL);
		if (!mw)
			return drop_pair(p, a), 1;
		collect(p, 0, NULL);
		t0 = now_ms();
		if (qp_first) {
			r1 = ibv_destroy_qp(a->sid->qp);
			t1 = now_ms();
			r2 = ibv_dealloc_mw(mw);
		} else {
			r2 = ibv_dealloc_mw(mw);
			t1 = now_ms();
			r1 = ibv_destroy_qp(a->sid->qp);
		}
		printf("mw-%s-first: ibv_destroy_qp of the server QP %s (%s%s); ibv_dealloc_mw "
		       "%s\n",
		       qp_first ? "destroy-qp" : "dealloc", errstr(r1), after(qp_first ? t0 : t1),
		       qp_first ? ", a window bound" : "", errstr(r2));
		if (!r1)
			a->sid->qp = NULL;
		drop_pair(p, a);
	}
	return 0;
}

/* 8 receives, limit 4: when does SRQ_LIMIT_REACHED come, and again? */
static void case_srq_limit(struct probe *p)
{
	struct pair *a = &p->pairs[0];
	struct ibv_srq_attr sa;
	int r, at = 0, again = 0;

	ibv_query_srq(p->srq, &sa);
	printf("srq: asked max_wr %u, max_sge 1: ibv_query_srq says max_wr %u, max_sge %u\n", NRBUF,
	       sa.max_wr, sa.max_sge);
	srq_post(p, p->srq, 8);
	sa.srq_limit = 4;
	r = ibv_modify_srq(p->srq, &sa, IBV_SRQ_LIMIT);
	if (new_pair(p, a, 16, shared(p)))
		return;
	for (int i = 1; i <= 6; i++) {
		send_msg(p, a, 16);
		if (p->last || complete1(p, p->scq, a->sid->qp->qp_num, ANY_WR, 2000)) {
			printf("srq-limit: SEND %d: %s\n", i, status(p));
			break;
		}
		if (strstr(collect(p, 300, NULL), "SRQ_LIMIT"))
			*(at ? &again : &at) = i;
	}
	ibv_query_srq(p->srq, &sa);
	printf("srq-limit: 8 posted, srq_limit 4 (ibv_modify_srq %s): SRQ_LIMIT_REACHED after "
	       "receive %d (%d left), again after receive %d (0: never, 6 sent); srq_limit reads "
	       "%u afterwards\n",
	       errstr(r), at, 8 - at, again, sa.srq_limit);
	drop_pair(p, a);
}

/* A SEND into an empty SRQ: RNR NAKs, with the timer the server's QP has. */
static void rnr_run(struct probe *p, const char *name, uint8_t rnr_retry, int timer, int refill)
{
	struct pair *a = &p->pairs[0];
	struct ibv_sge sge = { (uintptr_t)p->cbuf, 16, p->cmr->lkey };
	struct ibv_send_wr wr = { .opcode = IBV_WR_SEND, .sg_list = &sge, .num_sge = 1 };
	struct ibv_qp_attr ca, sa, m = { .min_rnr_timer = (uint8_t)timer };
	struct ibv_qp_init_attr ia;
	const char *s, *t, *s2 = "-", *t2 = "-";
	int rm = 0, got = 0;
	struct ibv_wc wc;

	if (new_pair(p, a, 16, (struct srv_opts){ .srq = p->srq0, .rnr_retry = rnr_retry }))
		return;
	ibv_query_qp(a->cid->qp, &ca, IBV_QP_RNR_RETRY | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT, &ia);
	if (timer >= 0)
		rm = ibv_modify_qp(a->sid->qp, &m, IBV_QP_MIN_RNR_TIMER);
	ibv_query_qp(a->sid->qp, &sa, IBV_QP_MIN_RNR_TIMER, &ia);
	double t0 = now_ms();
	s = post_wait(p, a->cid->qp, a->ccq, &wr, refill ? refill : 20000);
	t = after(t0);
	if (refill && p->last == -1) {
		srq_post(p, p->srq0, 1);
		t0 = now_ms();
		complete1(p, a->ccq, a->cid->qp->qp_num, wr.wr_id, 10000);
		s2 = status(p);
		t2 = after(t0);
	}
	while (ibv_poll_cq(p->scq, 1, &wc) > 0)
		got += wc.qp_num == a->sid->qp->qp_num && wc.status;
	printf("%s: client rnr_retry %u (retry_cnt %u, timeout %u); server min_rnr_timer %u "
	       "(ibv_modify_qp %s): SEND %s after %s; after one receive was posted: %s after %s; "
	       "server error completions %d, events %s, server QP %s\n",
	       name, ca.rnr_retry, ca.retry_cnt, ca.timeout, sa.min_rnr_timer,
	       timer >= 0 ? errstr(rm) : "not called", s, t, s2, t2, got, collect(p, 300, NULL),
	       qp_state(a->sid->qp));
	drop_pair(p, a);
}

/* A WRITE the server QP's access flags forbid; a SEND too long for its receive. */
static void case_request_errors(struct probe *p)
{
	struct pair *a = &p->pairs[0];
	struct ibv_qp_attr m = { .qp_access_flags = 0 };
	const char *w, *e, *r;
	int rm;

	if (new_pair(p, a, 16, shared(p)))
		return;
	rm = ibv_modify_qp(a->sid->qp, &m, IBV_QP_ACCESS_FLAGS);
	w = rdma_op(p, a, W, p->arena + 2 * SLICE, p->open_mr->rkey, 64);
	e = collect(p, 300, NULL);
	printf("qp-access-flags-0: ibv_modify_qp(server QP, access 0) %s; a WRITE to a "
	       "REMOTE_WRITE MR: %s; events %s; client QP %s, server QP %s\n",
	       errstr(rm), w, e, qp_state(a->cid->qp), qp_state(a->sid->qp));
	drop_pair(p, a);
	if (new_pair(p, a, 16, shared(p)))
		return;
	srq_post(p, p->srq, 1);
	w = send_msg(p, a, 200);
	complete1(p, p->scq, a->sid->qp->qp_num, ANY_WR, 2000);
	r = status(p);
	e = collect(p, 300, NULL);
	printf("oversize-send: a 200-byte SEND into a %u-byte SRQ receive: client %s; server "
	       "receive %s; events %s; client QP %s, server QP %s\n",
	       MSG, w, r, e, qp_state(a->cid->qp), qp_state(a->sid->qp));
	drop_pair(p, a);
}

/* More signaled completions than the CQ holds: on the requester, then the responder. */
static void case_cq_overrun(struct probe *p)
{
	struct pair *a = &p->pairs[0];
	struct ibv_sge sge = { (uintptr_t)p->cbuf, 16, p->cmr->lkey };
	struct ibv_send_wr wr[8], *bad;
	struct ibv_wc wc[16];
	struct ibv_cq *small, *big;
	int n, k, cqe, rp;
	char sent[64] = "";
	const char *e, *more;

	if (new_pair(p, a, 1, shared(p)))
		return;
	cqe = a->ccq->cqe;
	k = cqe + 3 > 8 ? 8 : cqe + 3;
	for (int i = 0; i < k; i++) {
		wr[i] = (struct ibv_send_wr){ .wr_id = (uint64_t)i,
					      .sg_list = &sge,
					      .num_sge = 1,
					      .opcode = W,
					      .send_flags = IBV_SEND_SIGNALED,
					      .next = i + 1 < k ? &wr[i + 1] : NULL };
		wr[i].wr.rdma.remote_addr = (uintptr_t)(p->arena + 2 * SLICE);
		wr[i].wr.rdma.rkey = p->open_mr->rkey;
	}
	rp = ibv_post_send(a->cid->qp, wr, &bad);
	e = collect(p, 1000, NULL);
	n = ibv_poll_cq(a->ccq, 16, wc);
	more = rdma_op(p, a, W, p->arena + 2 * SLICE, p->open_mr->rkey, 16);
	printf("cq-overrun-send: client CQ asked 1, cqe %d; %d signaled WRITEs (ibv_post_send %s): "
	       "%d completions polled after 1 s; events %s; client QP %s; one more WRITE %s\n",
	       cqe, k, errstr(rp), n, e, qp_state(a->cid->qp), more);
	drop_pair(p, a);

	small = ibv_create_cq(p->ctx, 1, NULL, NULL, 0);
	if (!small || new_pair(p, a, 16, (struct srv_opts){ p->srq, small, 7 }))
		goto max;
	cqe = small->cqe;
	srq_post(p, p->srq, (unsigned)cqe + 3);
	for (int i = 1; i <= cqe + 2; i++) {
		send_msg(p, a, 16);
		n = (int)strlen(sent);
		snprintf(sent + n, sizeof(sent) - (size_t)n, "%s%s", n ? ", " : "",
			 p->last ? status(p) : "ok");
		if (p->last)
			break;
	}
	e = collect(p, 300, NULL);
	printf("cq-overrun-recv: server QP's own CQ asked 1, cqe %d, never polled; SENDs: %s; "
	       "receive completions polled %d; events %s; server QP %s\n",
	       cqe, sent, ibv_poll_cq(small, 16, wc), e, qp_state(a->sid->qp));
	drop_pair(p, a);
max:
	if (small)
		ibv_destroy_cq(small);
	big = ibv_create_cq(p->ctx, p->dev.max_cqe, NULL, NULL, 0);
	printf("cq-max: ibv_create_cq(max_cqe %d): %s", p->dev.max_cqe, big ? "created" : "");
	printf("%s; max_cqe + 1: ", big ? "" : errstr(errno));
	if (big)
		ibv_destroy_cq(big);
	big = ibv_create_cq(p->ctx, p->dev.max_cqe + 1, NULL, NULL, 0);
	printf("%s\n", big ? "created" : errstr(errno));
	if (big)
		ibv_destroy_cq(big);
}

int run_cases(struct probe *p)
{
	case_caps(p);
	case_mr_rkey(p);
	case_mw_basic(p);
	case_mw_slice_mr(p);
	case_mw_other_qp(p);
	case_mw_rebind(p);
	case_mw_dereg(p);
	case_departing(p);
	case_srq_limit(p);
	rnr_run(p, "rnr-cm-timer", 2, -1, 0);
	rnr_run(p, "rnr-timer-1", 2, 1, 0);
	rnr_run(p, "rnr-retry-7-refill", 7, -1, 7000);
	rnr_run(p, "rnr-retry-7-timer-20-refill", 7, 20, 7000);
	case_request_errors(p);
	case_cq_overrun(p);
	return 0;
}

/* The link goes down and up (the driver does it): events, and the connections. */
int case_port(struct probe *p, int seconds)
{
	struct pair *a = &p->pairs[0], *b = &p->pairs[1];
	double t0;
	const char *e, *w;

	if (new_pair(p, a, 16, shared(p)))
		return 1;
	printf("ready\n");
	t0 = now_ms();
	e = collect(p, seconds * 1000, "PORT_ACTIVE");
	printf("port-events: %s (within %s of ready)\n", e, after(t0));
	w = rdma_op(p, a, W, p->arena + 2 * SLICE, p->open_mr->rkey, 64);
	printf("port-old-connection: a WRITE on the connection made before: %s; client QP %s, "
	       "server QP %s; events %s\n",
	       w, qp_state(a->cid->qp), qp_state(a->sid->qp), collect(p, 300, NULL));
	if (new_pair(p, b, 16, shared(p)))
		printf("port-new-connection: failed\n");
	else
		printf("port-new-connection: established; a WRITE %s\n",
		       rdma_op(p, b, W, p->arena + 2 * SLICE, p->open_mr->rkey, 64));
	return 0;
}

static long fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	long n = -3; /* ., .. and d's own */

	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n;
}

static long vmrss_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[128];
	long kb = -1;

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmRSS:", 6))
			kb = atol(line + 6);
	if (f)
		fclose(f);
	return kb;
}

/* Until every pair has bits (or failed): handle events, bounded. */
static void wait_all(struct probe *p, unsigned bits, double bound_ms)
{
	double end = now_ms() + bound_ms;
	unsigned i = 0;

	while (now_ms() < end) {
		for (; i < p->npv; i++)
			if ((p->pv[i].seen & bits) != bits && !(p->pv[i].seen & S_FAIL))
				break;
		if (i == p->npv)
			return;
		pump(p, 20);
	}
}

/* N connects in a burst, cmtime's steps, and what the process holds at N. */
int case_burst(struct probe *p, unsigned n, int backlog)
{
	static const char *step[] = { "resolve addr", "resolve route", "create CQ+QP",
				      "connect to established" };
	static const int bits[] = { S_ADDR, S_ROUTE, 0, S_REQ };
	long fd0 = fds(), rss0 = vmrss_kb(), fd1, rss1;
	struct pair *v = calloc(n, sizeof(*v));
	unsigned est = 0, failed = 0, in_1s = 0;
	int first_ev = -1, first_st = 0;
	double t[5], last = 0;

	if (!v)
		return 1;
	p->pv = v;
	p->npv = n;
	p->so = shared(p);
	printf("burst: %u connections, rdma_listen backlog %d (0: ucma's max_backlog)\n", n,
	       backlog);
	for (int s = 0; s < 4; s++) {
		t[s] = now_ms();
		for (unsigned i = 0; i < n; i++)
			if ((s < 2 || (v[i].seen & S_ROUTE)) && !(v[i].seen & S_FAIL) &&
			    start_pair(p, &v[i], 4, bits[s]))
				v[i].seen |= S_FAIL, v[i].fail_event = -errno;
		if (s != 2)
			wait_all(p, s == 3 ? S_EST_C | S_EST_S : (unsigned)bits[s],
				 p->wait_ms + n * 20.0);
		t[s + 1] = now_ms();
		printf("burst-step: %s: %.1f ms total, %.3f ms per connection\n", step[s],
		       t[s + 1] - t[s], (t[s + 1] - t[s]) / n);
	}
	for (unsigned i = 0; i < n; i++) {
		if (v[i].t_est) {
			est++;
			in_1s += v[i].t_est - t[3] <= 1000;
			last = v[i].t_est - t[3] > last ? v[i].t_est - t[3] : last;
		}
		if ((v[i].seen & S_FAIL) && failed++ == 0)
			first_ev = v[i].fail_event, first_st = v[i].fail_status;
	}
	fd1 = fds();
	rss1 = vmrss_kb();
	printf("burst-result: %u established, %u failed, %u still connecting after %.0f ms; open "
	       "fds %ld -> %ld; VmRSS %ld -> %ld kB with %u QPs (%.1f kB per connection, both "
	       "sides)\n",
	       est, failed, n - est - failed, t[4] - t[3], fd0, fd1, rss0, rss1, 2 * est,
	       est ? (double)(rss1 - rss0) / est : 0.0);
	printf("burst-timing: %u established within 1 s of the first rdma_connect, the last after "
	       "%.0f ms\n",
	       in_1s, last);
	if (failed && first_ev >= 0)
		printf("burst-failure: the first failed connection got %s, status %d\n",
		       rdma_event_str(first_ev), first_st);
	else if (failed)
		printf("burst-failure: the first failed connection: a call failed: %s\n",
		       strerror(-first_ev));
	t[0] = now_ms();
	for (unsigned i = 0; i < n; i++)
		drop_pair(p, &v[i]);
	printf("burst-teardown: %.1f ms (%.3f ms per connection); open fds %ld, VmRSS %ld kB\n",
	       now_ms() - t[0], (now_ms() - t[0]) / n, fds(), vmrss_kb());
	p->pv = p->pairs;
	p->npv = NPAIR;
	free(v);
	return 0;
}
