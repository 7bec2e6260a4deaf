// SPDX-License-Identifier: MIT
/*
 * xfer-ctl.c - 03's control channel: the posted receives, a pool of send
 * buffers, and the completions of both. See xfer-ctl.h.
 */
#define _GNU_SOURCE
#include "xfer-ctl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* Control channel                                                     */
/* ------------------------------------------------------------------ */

uint64_t xfer_ctl_locked(unsigned nrecv, unsigned nsend)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);

	/* rc_buf_alloc aligns each region to a page: whole pages pinned. */
	return ((uint64_t)nrecv * XFER_MSG_MAX + page - 1) / page * page +
	       ((uint64_t)nsend * XFER_MSG_MAX + page - 1) / page * page;
}

int xfer_ctl_init(struct xfer_ctl *x, struct rc_conn *c, unsigned nrecv, unsigned nsend)
{
	unsigned i;
	int ret;

	memset(x, 0, sizeof(*x));
	x->c = c;
	x->nrecv = nrecv;
	x->nsend = nsend;
	x->free_send = calloc(nsend, sizeof(*x->free_send));
	/* Room for every completion the CQ can hold. */
	x->stash_cap = (unsigned)c->dev.cq_size;
	x->stash = calloc(x->stash_cap, sizeof(*x->stash));
	if (!x->free_send || !x->stash)
		return rc_fail(&c->log, ENOMEM, "out of memory");
	for (i = 0; i < nsend; i++)
		x->free_send[x->nfree++] = nsend - 1 - i;
	/* Receive buffers: the NIC writes into them (LOCAL_WRITE), the peer
	 * never addresses them directly (no REMOTE_*). */
	ret = rc_buf_alloc(c, (size_t)nrecv * XFER_MSG_MAX, IBV_ACCESS_LOCAL_WRITE, &x->rbuf);
	if (ret)
		return ret;
	/* Send buffers are only read by the NIC: no access flags. */
	ret = rc_buf_alloc(c, (size_t)nsend * XFER_MSG_MAX, 0, &x->sbuf);
	if (ret)
		return ret;
	/*
	 * Every receive gets a buffer for the largest message, even though
	 * the peer's RDMA_WRITE_WITH_IMMs need none (a zero-SGE receive,
	 * rc_post_recv(c, NULL, ...), would do for them): receives are
	 * consumed strictly in posting order by whatever arrives, so any of
	 * them may meet a SEND (DONE, ERROR) and must have room for it.
	 * Posted now, before connecting or accepting: the peer may send the
	 * moment the connection is up.
	 */
	for (i = 0; i < nrecv; i++) {
		ret = rc_post_recv(c, x->rbuf, (size_t)i * XFER_MSG_MAX, XFER_MSG_MAX,
				   XFER_WR_RECV + i);
		if (ret)
			return ret;
	}
	return 0;
}

void xfer_ctl_free(struct xfer_ctl *x)
{
	/* The registered buffers belong to the connection (rc_conn_destroy). */
	free(x->free_send);
	free(x->stash);
	x->free_send = NULL;
	x->stash = NULL;
}

static bool is_ctl_send(const struct xfer_ctl *x, const struct ibv_wc *wc)
{
	return wc->wr_id >= XFER_WR_SEND && wc->wr_id < XFER_WR_SEND + x->nsend;
}

bool xfer_ctl_is_recv(const struct xfer_ctl *x, const struct ibv_wc *wc)
{
	return wc->wr_id >= XFER_WR_RECV && wc->wr_id < XFER_WR_RECV + x->nrecv;
}

/* One completion off the CQ: ours (a control SEND) frees its buffer; any
 * other is kept in the stash when `keep`, else returned. Returns 1 when
 * it was one of our SENDs. */
static int take_one(struct xfer_ctl *x, struct ibv_wc *wc, bool keep)
{
	int ret;

	*wc = (struct ibv_wc){ 0 }; /* no field of an earlier completion left */
	ret = rc_next_wc(x->c, wc);
	/* A failure of a QP beside ours (03's data connection) met while we
	 * wait for our own SENDs: kept, failure and all, for the caller's
	 * loop, which knows what that QP is for; our SENDs are waited on. */
	if (ret == -EIO && keep && wc->status != IBV_WC_SUCCESS && wc->qp_num != x->c->qp->qp_num) {
		if (x->stash_len == x->stash_cap)
			return rc_fail(&x->c->log, EOVERFLOW, "completion stash overflow");
		x->stash[(x->stash_head + x->stash_len++) % x->stash_cap] = *wc;
		return 0;
	}
	if (ret)
		return ret;
	if (is_ctl_send(x, wc)) {
		if (wc->opcode != IBV_WC_SEND || x->nfree >= x->nsend)
			return rc_unexpected_wc(x->c, wc);
		x->free_send[x->nfree++] = (unsigned)(wc->wr_id - XFER_WR_SEND);
		return 1;
	}
	if (keep) {
		if (x->stash_len == x->stash_cap)
			return rc_fail(&x->c->log, EOVERFLOW, "completion stash overflow");
		x->stash[(x->stash_head + x->stash_len++) % x->stash_cap] = *wc;
	}
	return 0;
}

int xfer_ctl_send(struct xfer_ctl *x, const struct xfer_msg *m)
{
	struct ibv_wc wc;
	char desc[400];
	unsigned slot;
	size_t len;
	int ret;

	/* All send buffers in flight: take completions until one is back,
	 * keeping the others for the caller's loop. */
	while (x->nfree == 0) {
		ret = take_one(x, &wc, true);
		if (ret < 0 && ret != -EAGAIN) /* EAGAIN: the disk thread's news */
			return ret;
	}
	slot = x->free_send[--x->nfree];
	len = xfer_msg_pack((uint8_t *)x->sbuf->addr + (size_t)slot * XFER_MSG_MAX, x->send_seq, m);
	if (x->c->log.verbose) {
		xfer_msg_describe(m, desc, sizeof(desc));
		rc_trace(&x->c->log, "send %s", desc);
	}
	/* Signalled: its completion returns the buffer to the pool. */
	ret = rc_post_send(x->c, x->sbuf, (size_t)slot * XFER_MSG_MAX, len, XFER_WR_SEND + slot,
			   true);
	if (ret) {
		x->free_send[x->nfree++] = slot;
		return ret;
	}
	x->send_seq++;
	return 0;
}

int xfer_ctl_next(struct xfer_ctl *x, struct ibv_wc *wc)
{
	int ret;

	if (x->stash_len) {
		*wc = x->stash[x->stash_head];
		x->stash_head = (x->stash_head + 1) % x->stash_cap;
		x->stash_len--;
		/* A failure take_one kept: reported now, as rc_next_wc would. */
		return wc->status == IBV_WC_SUCCESS ? 0 : rc_wc_check(&x->c->log, wc);
	}
	do {
		ret = take_one(x, wc, false);
	} while (ret == 1);
	return ret;
}

int xfer_ctl_take(struct xfer_ctl *x, const struct ibv_wc *wc, struct xfer_msg *m)
{
	unsigned i = (unsigned)(wc->wr_id - XFER_WR_RECV);
	const uint8_t *buf = (const uint8_t *)x->rbuf->addr + (size_t)i * XFER_MSG_MAX;
	char why[200], desc[400];
	int ret = 0;

	if (wc->opcode == IBV_WC_RECV) {
		/* Validate before use, on a copy: the buffer is reposted below
		 * and may be overwritten by the next message. */
		ret = xfer_msg_unpack(buf, wc->byte_len, x->recv_seq, m, why, sizeof(why));
		if (ret)
			return rc_fail(&x->c->log, EPROTO, "bad message from %s: %s", x->c->peer,
				       why);
		x->recv_seq++;
		if (x->c->log.verbose) {
			xfer_msg_describe(m, desc, sizeof(desc));
			rc_trace(&x->c->log, "recv %s", desc);
		}
	} else if (wc->opcode != IBV_WC_RECV_RDMA_WITH_IMM) {
		return rc_unexpected_wc(x->c, wc);
	}
	/* Hand the receive back at once: the credit scheme counts on it. */
	return rc_post_recv(x->c, x->rbuf, (size_t)i * XFER_MSG_MAX, XFER_MSG_MAX, wc->wr_id);
}

int xfer_ctl_drain(struct xfer_ctl *x)
{
	struct ibv_wc wc;
	int ret;

	while (x->nfree < x->nsend) {
		ret = take_one(x, &wc, true);
		if (ret < 0 && ret != -EAGAIN) /* EAGAIN: the disk thread's news */
			return ret;
	}
	return 0;
}
