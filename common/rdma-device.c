// SPDX-License-Identifier: MIT
/*
 * rdma-device.c - part of the set rdma-common.h names: a device context
 * that many connections share (one PD, CQs, one completion channel, an
 * SRQ), caller memory registered on it, memory windows and async events.
 * See rdma-device.h.
 */
#define _GNU_SOURCE
#include "rdma-common.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* ---- Limits ---- */

static uint8_t cap255(int v)
{
	return v > 255 ? 255 : v < 0 ? 0 : (uint8_t)v;
}

int rc_device_query(struct ibv_context *verbs, struct rc_device_limits *lim, struct rc_log *log)
{
	struct ibv_device_attr a;
	int err;

	/* What the device allows; sizes asked beyond it make creation fail. */
	err = ibv_query_device(verbs, &a);
	if (err)
		return rc_fail(log, err, "ibv_query_device(%s): %s",
			       ibv_get_device_name(verbs->device), strerror(err));
	*lim = (struct rc_device_limits){
		.max_qp = a.max_qp,
		.max_qp_wr = a.max_qp_wr,
		.max_cq = a.max_cq,
		.max_cqe = a.max_cqe,
		.max_srq = a.max_srq,
		.max_srq_wr = a.max_srq_wr,
		.max_srq_sge = a.max_srq_sge,
		.max_mw = a.max_mw,
		.device_cap_flags = a.device_cap_flags,
		.mw_type2 = a.max_mw > 0 && (a.device_cap_flags & (IBV_DEVICE_MEM_WINDOW_TYPE_2A |
								   IBV_DEVICE_MEM_WINDOW_TYPE_2B)),
		.atomic_cap = a.atomic_cap,
		.max_qp_rd_atom = cap255(a.max_qp_rd_atom),
		.max_qp_init_rd_atom = cap255(a.max_qp_init_rd_atom),
		.max_mr_size = a.max_mr_size,
		.vendor_id = a.vendor_id,
		.num_comp_vectors = verbs->num_comp_vectors,
	};
	return 0;
}

/* ---- Open and close ---- */

/* The CQs, each on the one channel, each armed. */
static int create_cqs(struct rc_device *d, int ncq, int size)
{
	if (ncq < 1 || ncq > RC_MAX_CQS)
		return rc_fail(&d->log, EINVAL, "%d CQs asked, 1 to %d possible", ncq, RC_MAX_CQS);
	if (size < 1 || size > d->lim.max_cqe)
		return rc_fail(&d->log, EINVAL,
			       "CQs of %d entries asked; this device allows 1 to %d (max_cqe): use "
			       "more CQs",
			       size, d->lim.max_cqe);
	for (d->ncq = 0; d->ncq < ncq; d->ncq++) {
		int vector = d->lim.num_comp_vectors > 0 ? d->ncq % d->lim.num_comp_vectors : 0;
		/* cq_context d: the channel's event names the CQ, not its QPs;
		 * each CQ on its own completion vector where there are several. */
		struct ibv_cq *cq = ibv_create_cq(d->verbs, size, d, d->channel, vector);

		if (!cq)
			return rc_fail(&d->log, errno, "ibv_create_cq(%d entries): %s; hint: %s",
				       size, strerror(errno), rc_call_hint("ibv_create_cq", errno));
		d->cq[d->ncq] = cq;
		d->cq_size = cq->cqe;
		/* Armed: its next completion makes the channel's fd readable. */
		if (ibv_req_notify_cq(cq, 0))
			return rc_fail(&d->log, EIO, "ibv_req_notify_cq failed");
	}
	return 0;
}

static int create_srq(struct rc_device *d, uint32_t size)
{
	struct ibv_srq_init_attr a = { .srq_context = d, .attr = { .max_wr = size, .max_sge = 1 } };

	if (size > (uint32_t)d->lim.max_srq_wr)
		return rc_fail(&d->log, EINVAL, "an SRQ of %" PRIu32 " asked; max_srq_wr is %d",
			       size, d->lim.max_srq_wr);
	/* One receive queue for every QP on it: buffers pooled, not per QP. */
	d->srq = ibv_create_srq(d->pd, &a);
	if (!d->srq)
		return rc_fail(&d->log, errno, "ibv_create_srq(%" PRIu32 " receives): %s", size,
			       strerror(errno));
	d->srq_size = a.attr.max_wr; /* what we got, at least what we asked */
	return 0;
}

int rc_device_open(struct rc_device *d, struct ibv_context *verbs, const struct rc_device_attr *a,
		   const char *name, bool verbose)
{
	int ret;

	memset(d, 0, sizeof(*d));
	rc_log_init(&d->log, name, verbose);
	if (!verbs)
		return rc_fail(&d->log, ENODEV,
			       "no RDMA device yet; hint: open the shared context "
			       "with the first connect request's id->verbs");
	d->verbs = verbs;
	ret = rc_device_query(verbs, &d->lim, &d->log);
	if (ret)
		return ret;
	/* The async fd is the device's, read in the caller's event loop. */
	if (fcntl(verbs->async_fd, F_SETFL, fcntl(verbs->async_fd, F_GETFL) | O_NONBLOCK))
		return rc_fail(&d->log, errno, "fcntl(async_fd): %s", strerror(errno));
	/* One PD: every QP, region and window of the service in it. */
	d->pd = ibv_alloc_pd(verbs);
	if (!d->pd) {
		ret = rc_fail(&d->log, errno, "ibv_alloc_pd: %s", strerror(errno));
		goto fail;
	}
	/* One channel for all CQs: one fd tells the loop "completions". */
	d->channel = ibv_create_comp_channel(verbs);
	if (!d->channel || fcntl(d->channel->fd, F_SETFL, O_NONBLOCK)) {
		ret = rc_fail_call(&d->log, "ibv_create_comp_channel", errno, NULL);
		goto fail;
	}
	ret = create_cqs(d, a->ncq ? a->ncq : 1, a->cq_size);
	if (!ret && a->srq_size)
		ret = create_srq(d, a->srq_size);
	if (ret)
		goto fail;
	rc_trace(&d->log, "device %s: PD, %d CQ(s) of %d, SRQ of %" PRIu32 " (0: none)",
		 ibv_get_device_name(verbs->device), d->ncq, d->cq_size, d->srq_size);
	return 0;
fail:
	rc_device_close(d); /* its own failures would hide the first: log.err is kept */
	return ret;
}

/* A release the verbs refused: the object is leaked; the first failure
 * is what log.err says. */
static int close_failed(struct rc_device *d, int first, const char *call, int err, const char *hint)
{
	if (!first)
		rc_fail(&d->log, err, "%s: %s; hint: %s", call, strerror(err), hint);
	return first ? first : -err;
}

int rc_device_close(struct rc_device *d)
{
	char kept[RC_ERR_LEN];
	int i, err, ret = 0;

	snprintf(kept, sizeof(kept), "%s", d->log.err);
	if (d->srq && (err = ibv_destroy_srq(d->srq)))
		ret = close_failed(d, ret, "ibv_destroy_srq", err,
				   "a QP still takes its receives from it: destroy the connections "
				   "first");
	d->srq = NULL;
	for (i = d->ncq - 1; i >= 0; i--)
		if (d->cq[i] && (err = ibv_destroy_cq(d->cq[i])))
			ret = close_failed(d, ret, "ibv_destroy_cq", err,
					   "a QP is still on it: destroy the connections first");
	d->ncq = 0;
	if (d->channel && (err = ibv_destroy_comp_channel(d->channel)))
		ret = close_failed(d, ret, "ibv_destroy_comp_channel", err, "a CQ still uses it");
	d->channel = NULL;
	/* EBUSY: a region (rc_mem_reg) or window still on it; leaked. */
	if (d->pd && (err = ibv_dealloc_pd(d->pd)))
		ret = close_failed(d, ret, "ibv_dealloc_pd", err,
				   "a region or window is still on the PD: rc_mw_dealloc and "
				   "rc_mem_dereg first");
	d->pd = NULL;
	/* Open's own failure stays the message when closing goes well. */
	if (!ret)
		snprintf(d->log.err, sizeof(d->log.err), "%s", kept);
	return ret;
}

/* ---- Connections on it ---- */

int rc_create_qp_on(struct rc_conn *c, struct rc_device *d, int cq, const struct ibv_qp_cap *cap)
{
	struct ibv_qp_init_attr attr = { .qp_type = IBV_QPT_RC, .cap = *cap, .srq = d->srq };
	struct ibv_port_attr pattr;

	if (!c->id || c->id->verbs != d->verbs)
		return rc_fail(&c->log, EXDEV,
			       "the connection is on device %s, the shared context on %s; hint: "
			       "bind the listener to one device's address",
			       c->id && c->id->verbs ? ibv_get_device_name(c->id->verbs->device)
						     : "?",
			       ibv_get_device_name(d->verbs->device));
	if (cq < 0 || cq >= d->ncq)
		return rc_fail(&c->log, EINVAL, "CQ %d asked, the device context has %d", cq,
			       d->ncq);
	if (ibv_query_port(d->verbs, c->id->port_num, &pattr))
		return rc_fail(&c->log, errno, "ibv_query_port: %s", strerror(errno));
	c->shared = d;
	c->dev = (struct rc_dev){ .verbs = d->verbs,
				  .pd = d->pd,
				  .channel = d->channel,
				  .cq = d->cq[cq],
				  .cq_size = d->cq_size,
				  .max_msg_sz = pattr.max_msg_sz,
				  .max_rd_atom = d->lim.max_qp_rd_atom,
				  .vendor_id = d->lim.vendor_id };
	attr.send_cq = c->dev.cq;
	attr.recv_cq = c->dev.cq;
	/* On the SRQ: receives come from the pool every QP shares. */
	if (attr.srq)
		attr.cap.max_recv_wr = attr.cap.max_recv_sge = 0;
	/* rdma_create_qp: the CM will move it through INIT, RTR and RTS. */
	if (rdma_create_qp(c->id, c->dev.pd, &attr))
		return rc_fail(&c->log, errno,
			       "rdma_create_qp(send %u, recv %u) on a shared CQ: %s; hint: "
			       "`ibv_devinfo -v` shows the device limits",
			       cap->max_send_wr, attr.cap.max_recv_wr, strerror(errno));
	c->qp = c->id->qp;
	c->cap = attr.cap;
	rc_trace(&c->log, "created RC QP %u (send %u, recv %s) on shared CQ %d", c->qp->qp_num,
		 c->cap.max_send_wr, attr.srq ? "the SRQ" : "its own", cq);
	return 0;
}

/* ---- Completions, receives, async events ---- */

int rc_device_cq_events(struct rc_device *d)
{
	struct ibv_cq *cq;
	void *ctx;
	int n = 0;

	for (;;) {
		/* Non-blocking channel: EAGAIN when none is left. */
		if (ibv_get_cq_event(d->channel, &cq, &ctx))
			return errno == EAGAIN ? n
					       : rc_fail(&d->log, errno, "ibv_get_cq_event: %s",
							 strerror(errno));
		/* ibv_destroy_cq waits until every event is acknowledged. */
		ibv_ack_cq_events(cq, 1);
		/* Armed again before the caller polls: nothing slips by. */
		if (ibv_req_notify_cq(cq, 0))
			return rc_fail(&d->log, EIO, "ibv_req_notify_cq failed");
		n++;
	}
}

int rc_device_poll(struct rc_device *d, struct ibv_wc *wc, int n)
{
	int k, got = 0;

	for (k = 0; k < d->ncq && got < n; k++) {
		struct ibv_cq *cq = d->cq[(d->next_cq + k) % d->ncq];
		/* Batched: one call takes up to n - got completions. */
		int r = ibv_poll_cq(cq, n - got, wc + got);

		if (r < 0)
			return rc_fail(&d->log, EIO, "ibv_poll_cq failed (%d); hint: %s", r,
				       rc_call_hint("ibv_poll_cq", EIO));
		got += r;
	}
	d->next_cq = d->ncq ? (d->next_cq + 1) % d->ncq : 0;
	return got;
}

int rc_post_srq_recv(struct rc_device *d, struct rc_buf *b, size_t off, size_t len, uint64_t wr_id)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)b->addr + off,
		.length = (uint32_t)len,
		.lkey = b->mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;
	int ret;

	if (!d->srq)
		return rc_fail(&d->log, EINVAL, "rc_post_srq_recv: the device context has no SRQ");
	rc_trace(&d->log, "post SRQ RECV wr_id=%" PRIu64 " len=%zu", wr_id, len);
	/* Whichever QP on the SRQ gets the next message consumes it. */
	ret = ibv_post_srq_recv(d->srq, &wr, &bad);
	return ret ? rc_fail_call(&d->log, "ibv_post_srq_recv", ret,
				  ret == ENOMEM ? "more receives posted than the SRQ holds" : NULL)
		   : 0;
}

int rc_srq_arm_limit(struct rc_device *d, uint32_t limit)
{
	struct ibv_srq_attr a = { .srq_limit = limit };
	int ret;

	if (!d->srq)
		return rc_fail(&d->log, EINVAL, "rc_srq_arm_limit: the device context has no SRQ");
	/* One-shot: the event disarms it; arm again after refilling. */
	ret = ibv_modify_srq(d->srq, &a, IBV_SRQ_LIMIT);
	return ret ? rc_fail_call(&d->log, "ibv_modify_srq(IBV_SRQ_LIMIT)", ret,
				  "the limit must be below the SRQ's size")
		   : 0;
}

int rc_device_async_event(struct rc_device *d, struct rc_async *ev)
{
	struct ibv_async_event e;

	/* Non-blocking since rc_device_open: EAGAIN when none is waiting. */
	if (ibv_get_async_event(d->verbs, &e))
		return errno == EAGAIN ? -EAGAIN
				       : rc_fail(&d->log, errno, "ibv_get_async_event: %s",
						 strerror(errno));
	*ev = (struct rc_async){ .type = e.event_type };
	switch (e.event_type) {
	case IBV_EVENT_CQ_ERR: ev->cq = e.element.cq; break;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED: ev->srq = e.element.srq; break;
	case IBV_EVENT_PORT_ACTIVE:
	case IBV_EVENT_PORT_ERR:
	case IBV_EVENT_LID_CHANGE:
	case IBV_EVENT_PKEY_CHANGE:
	case IBV_EVENT_SM_CHANGE:
	case IBV_EVENT_CLIENT_REREGISTER:
	case IBV_EVENT_GID_CHANGE: ev->port = e.element.port_num; break;
	case IBV_EVENT_DEVICE_FATAL: break;
	default: ev->qp = e.element.qp; break; /* the QP events */
	}
	/* Acknowledged at once: destroying its object waits for that. */
	ibv_ack_async_event(&e);
	rc_trace(&d->log, "async event %s%s%u", ibv_event_type_str(ev->type),
		 ev->qp	    ? " on QP "
		 : ev->port ? " on port "
			    : "",
		 ev->qp ? ev->qp->qp_num : (unsigned)ev->port);
	return 0;
}

/* ---- Caller memory and memory windows ---- */

int rc_mem_reg(struct rc_device *d, void *addr, size_t len, int access, struct rc_buf *b)
{
	/* Pin the caller's pages and give the NIC a translation on d's PD. */
	struct ibv_mr *mr = ibv_reg_mr(d->pd, addr, len, access);

	if (!mr)
		return rc_fail(&d->log, errno, "ibv_reg_mr(%zu bytes): %s; hint: %s", len,
			       strerror(errno), rc_call_hint("ibv_reg_mr", errno));
	*b = (struct rc_buf){ .addr = addr, .len = len, .mr = mr };
	rc_trace(&d->log, "registered the caller's %zu bytes lkey=0x%x rkey=0x%x", len, mr->lkey,
		 mr->rkey);
	return 0;
}

int rc_mem_dereg(struct rc_device *d, struct rc_buf *b)
{
	/* Refused while a window is bound to it (Soft-RoCE: EINVAL, measured
	 * on 6.1, 6.12 and 7.3; EBUSY elsewhere): the region stays. */
	int err = ibv_dereg_mr(b->mr);

	if (err)
		return rc_fail(&d->log, err, "ibv_dereg_mr(%zu bytes): %s; hint: %s", b->len,
			       strerror(err),
			       err == EBUSY || err == EINVAL
				       ? "is a memory window still bound to it? rc_mw_dealloc first"
				       : "see `man ibv_dereg_mr`");
	b->mr = NULL;
	return 0;
}

int rc_mw_alloc(struct rc_device *d, struct ibv_mw **mw)
{
	/* Type 2: bound by a work request on one QP, reachable from it only. */
	*mw = ibv_alloc_mw(d->pd, IBV_MW_TYPE_2);
	if (!*mw)
		return rc_fail(&d->log, errno, "ibv_alloc_mw(type 2): %s; hint: %s",
			       strerror(errno),
			       d->lim.mw_type2 ? "more windows than max_mw?"
					       : "this device has no type 2 memory windows");
	return 0;
}

int rc_mw_dealloc(struct rc_device *d, struct ibv_mw *mw)
{
	/* Unbinds it too, and lets go of its QP and region. */
	int err = ibv_dealloc_mw(mw);

	return err ? rc_fail(&d->log, err, "ibv_dealloc_mw: %s", strerror(err)) : 0;
}
