/* SPDX-License-Identifier: MIT */
/*
 * rdma-device.h - part of the set rdma-common.h names: a device context a
 * caller owns and shares across many connections, what a service with one
 * event loop for all its clients is built on (rdma-device.c).
 *
 * One PD, one or more CQs, one completion channel for all of them, an
 * optional SRQ: a connection's QP is created on them (rc_create_qp_on)
 * instead of on resources of its own (rc_create_qp, 02's and 03's way).
 * Memory the caller owns is registered on the PD once (rc_mem_reg) and
 * outlives every connection; type 2 memory windows (rc_mw_*) expose it to
 * one connection's QP only. To keep clients out of each other's part,
 * register each part as a region of its own and bind the client's window
 * on that region: the window bounds the QP, the region the range (on
 * Soft-RoCE a window's own range is not checked, only its region's:
 * docs/kernels.md, rxe-mw-srq; tests/alone does it this way).
 *
 * An event loop watches three fds of it besides the listener's channel:
 * d->channel->fd (completions: rc_device_cq_events, then rc_device_poll),
 * d->verbs->async_fd (rc_device_async_event: a QP gone fatal, a CQ
 * overrun, the SRQ running low, a port going down). It finds a
 * completion's connection by wc.qp_num; a completion of a QP destroyed
 * since may still come out of a shared CQ, and a new QP may get its
 * number: destroy a QP only once every send posted on it has completed
 * (after rdma_disconnect they complete flushed; its receives on the SRQ
 * stay there for other QPs).
 *
 * Release order: each connection (rc_conn_destroy; unbind or deallocate
 * its windows first: a window bound to a QP holds it), then windows
 * (rc_mw_dealloc), then memory (rc_mem_dereg: it fails while a window is
 * bound to it), then rc_device_close. Every release reports what the verbs
 * refused: a PD with a region still registered is not freed (EBUSY).
 */
#ifndef RDMA_DEVICE_H
#define RDMA_DEVICE_H

#include "rdma-common.h"

#define RC_MAX_CQS 8

/* What an event loop sizes its queues, pools and windows by
 * (ibv_query_device: `ibv_devinfo -v` shows the same). */
struct rc_device_limits {
	int max_qp, max_qp_wr;
	int max_cq, max_cqe; /* CQs, and entries in one */
	int max_srq, max_srq_wr, max_srq_sge;
	int max_mw;			/* memory windows; 0: none */
	unsigned device_cap_flags;	/* IBV_DEVICE_*, e.g. MEM_WINDOW_TYPE_2B */
	bool mw_type2;			/* type 2 windows (2A or 2B): rc_mw_bind works */
	enum ibv_atomic_cap atomic_cap; /* IBV_ATOMIC_NONE, _HCA or _GLOB */
	uint8_t max_qp_rd_atom;		/* READs one QP may serve at once */
	uint8_t max_qp_init_rd_atom;	/* READs one QP may have outstanding */
	uint64_t max_mr_size;
	uint32_t vendor_id; /* 0xffffff: Soft-RoCE */
	int num_comp_vectors;
};

/* What rc_device_open creates. */
struct rc_device_attr {
	int ncq;	   /* CQs, 1..RC_MAX_CQS (0: 1) */
	int cq_size;	   /* entries in each, at most max_cqe; a CQ that
			    * overflows fails every QP on it: size each for
			    * every WR its QPs may have outstanding */
	uint32_t srq_size; /* receives the SRQ holds; 0: no SRQ, each QP
			    * has a receive queue of its own */
};

struct rc_device {
	struct rc_log log;
	struct ibv_context *verbs; /* librdmacm's for the device, not owned */
	struct rc_device_limits lim;
	struct ibv_pd *pd;
	struct ibv_comp_channel *channel; /* one for all the CQs, non-blocking */
	struct ibv_cq *cq[RC_MAX_CQS];
	int ncq, cq_size; /* cq_size: what the device gave (at least asked) */
	struct ibv_srq *srq;
	uint32_t srq_size; /* what the device gave */
	int next_cq;	   /* where rc_device_poll looks first */
};

/* The device's limits. 0, or a negative errno with log->err. */
int rc_device_query(struct ibv_context *verbs, struct rc_device_limits *lim, struct rc_log *log);

/*
 * Open a shared device context on verbs: the listener's id->verbs when it
 * was bound to a device's address, else the first connect request's (all
 * ids on one device share librdmacm's context). Queries the limits, and
 * creates the PD, the completion channel, a->ncq CQs (each armed: its next
 * completion wakes the channel) and, if a->srq_size, the SRQ; makes the
 * device's async_fd non-blocking. name and verbose are for d->log. 0, or
 * a negative errno with d->log.err (what it had created is released).
 */
int rc_device_open(struct rc_device *d, struct ibv_context *verbs, const struct rc_device_attr *a,
		   const char *name, bool verbose);
/*
 * Release what rc_device_open created, in reverse order, each release
 * checked: a QP still on a CQ or the SRQ, or a region or window still on
 * the PD, makes its release fail (EBUSY), and that object is leaked. Safe
 * to call twice. 0, or the first failure as a negative errno with
 * d->log.err naming it and what to release first.
 */
int rc_device_close(struct rc_device *d);

/*
 * c's RC QP on d: d's PD, send and receive completions on d->cq[cq],
 * receives from d's SRQ when it has one (then cap's receive fields are
 * ignored). c->dev names d's objects, borrowed: rc_conn_destroy leaves
 * them. c's id must be on d's device (-EXDEV). rc_next_wc refuses such a
 * connection: poll the device. A client that must not share the PD (a
 * device without memory windows) gets rc_create_qp instead, 02's way: a
 * PD, CQ and channel of its own, whose fd the loop watches too. 0, or a
 * negative errno with c->log.err.
 */
int rc_create_qp_on(struct rc_conn *c, struct rc_device *d, int cq, const struct ibv_qp_cap *cap);

/*
 * The completion channel's fd is readable: take every CQ event waiting
 * on it, acknowledge each and arm its CQ again, so that a completion
 * after the next poll still wakes the channel. Then poll (rc_device_poll)
 * until it returns 0. Returns the number of events taken (0: none), or a
 * negative errno with d->log.err.
 */
int rc_device_cq_events(struct rc_device *d);
/*
 * Up to n completions from d's CQs, each CQ in turn (a busy one cannot
 * starve the others). Returns how many (0: all empty), or a negative
 * errno with d->log.err. Check each (rc_wc_check, with the connection's
 * log, found by wc.qp_num): a failed one is not an error of the device.
 */
int rc_device_poll(struct rc_device *d, struct ibv_wc *wc, int n);

/*
 * Post one receive of b[off, off+len) to d's SRQ: any QP on it may
 * consume it; the completion's qp_num says whose message it was, its
 * wr_id which buffer. 0, or a negative errno with d->log.err.
 */
int rc_post_srq_recv(struct rc_device *d, struct rc_buf *b, size_t off, size_t len, uint64_t wr_id);
/*
 * Arm the SRQ's limit (ibv_modify_srq, IBV_SRQ_LIMIT): once fewer than
 * limit receives are posted, IBV_EVENT_SRQ_LIMIT_REACHED comes on the
 * async fd, once: arm it again after refilling. 0, or a negative errno.
 */
int rc_srq_arm_limit(struct rc_device *d, uint32_t limit);

/* An async event, copied: what it is about (the others NULL, 0). */
struct rc_async {
	enum ibv_event_type type;
	struct ibv_qp *qp;   /* QP events (QP_FATAL, ...): find its connection */
	struct ibv_cq *cq;   /* CQ_ERR: an overrun, every QP on it failed */
	struct ibv_srq *srq; /* SRQ_LIMIT_REACHED, SRQ_ERR */
	int port;	     /* PORT_ACTIVE, PORT_ERR, GID_CHANGE, ... */
};
/*
 * Take one async event off the device's (non-blocking) async fd, copy it,
 * acknowledge it (ibv_destroy_qp and the others wait for that) and trace
 * it. 0, -EAGAIN when there was none, or another negative errno.
 */
int rc_device_async_event(struct rc_device *d, struct rc_async *ev);

/*
 * Register memory the caller owns, [addr, addr + len), on d's PD with
 * access flags: b describes it (b->next unused). The memory stays the
 * caller's: nothing here frees it, and the registration outlives every
 * connection until rc_mem_dereg. For windows over it, access includes
 * IBV_ACCESS_MW_BIND and, for the peer to WRITE through them, LOCAL_WRITE;
 * a REMOTE_* flag here would let the region's own rkey reach all of it.
 * 0, or a negative errno with d->log.err.
 */
int rc_mem_reg(struct rc_device *d, void *addr, size_t len, int access, struct rc_buf *b);
/* Deregister it: 0, or a negative errno with d->log.err (a window still
 * bound to it: EINVAL on Soft-RoCE, EBUSY elsewhere); b is then as before,
 * still registered. */
int rc_mem_dereg(struct rc_device *d, struct rc_buf *b);

/*
 * Type 2 memory windows: allocated on d's PD, unbound; bound by a work
 * request on one connection's QP (rc_mw_bind), reachable by that QP's
 * peer only, through the rkey the bind gave. How far it reaches: the
 * window's range by the verbs' spec, but on Soft-RoCE the whole region
 * under it, so bind it on a region that holds only what that peer may
 * touch. d->lim.mw_type2 says whether
 * the device has them. 0, or a negative errno with d->log.err.
 */
int rc_mw_alloc(struct rc_device *d, struct ibv_mw **mw);
/*
 * Post IBV_WR_BIND_MW on c's QP (in RTS: after rc_accept_start): bind mw
 * to b[off, off + len) (b registered with IBV_ACCESS_MW_BIND) with access
 * (IBV_ACCESS_REMOTE_WRITE, _READ, _ATOMIC) under a fresh key byte
 * (ibv_inc_rkey: the application keeps the rkey; mw->rkey is updated
 * here). *rkey: what the peer will use, valid once the bind's completion
 * (always signaled, wr_id) arrived: send it to the peer after that. The
 * window must be unbound (just allocated, or invalidated). 0, or a
 * negative errno with c->log.err.
 */
int rc_mw_bind(struct rc_conn *c, struct ibv_mw *mw, struct rc_buf *b, size_t off, size_t len,
	       int access, uint64_t wr_id, uint32_t *rkey);
/*
 * Post IBV_WR_LOCAL_INV of mw's rkey on c's QP (signaled, wr_id): once it
 * completes, the peer's accesses with that rkey fail and the window may be
 * bound again. On a QP in the error state (a peer gone) it is flushed,
 * not executed: deallocate the window instead. 0, or a negative errno.
 */
int rc_mw_invalidate(struct rc_conn *c, struct ibv_mw *mw, uint64_t wr_id);
/* ibv_dealloc_mw: also unbinds it. Before its QP is destroyed: a bound
 * window holds its QP. 0, or a negative errno with d->log.err. */
int rc_mw_dealloc(struct rc_device *d, struct ibv_mw *mw);

#endif /* RDMA_DEVICE_H */
