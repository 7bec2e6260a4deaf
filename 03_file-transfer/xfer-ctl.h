/* SPDX-License-Identifier: MIT */
/*
 * xfer-ctl.h - 03's control channel: posted receives, a pool of send
 * buffers, and the completions of both.
 */
#ifndef XFER_CTL_H
#define XFER_CTL_H

#include <stdbool.h>
#include <stdint.h>

#include "rdma-common.h"
#include "xfer-msg.h"

/* ------------------------------------------------------------------ */
/* The control channel: posted receives, a pool of send buffers.       */
/* ------------------------------------------------------------------ */

/* wr_ids: data operations use their ring slot (0..depth-1); receives and
 * control sends use these bases plus their buffer's index. */
#define XFER_WR_RECV 1000
#define XFER_WR_SEND 2000
/* A get's server: the one receive posted on the data connection's QP, which
 * no message ever takes: it completes (flushed) only when that QP fails. */
#define XFER_WR_WATCH 3000

struct xfer_ctl {
	struct rc_conn *c;
	struct rc_buf *rbuf, *sbuf; /* nrecv and nsend slots of XFER_MSG_MAX bytes */
	unsigned nrecv, nsend;
	unsigned *free_send, nfree; /* a stack of free send slots */
	uint32_t send_seq, recv_seq;
	/* Completions taken off the CQ while waiting for a send slot, handed
	 * out by xfer_ctl_next() before anything new. */
	struct ibv_wc *stash;
	unsigned stash_cap, stash_head, stash_len;
};

/* Receives a side keeps posted: `depth` for the messages that travel under
 * ring credits, one for the end of the stream (DONE or COMMITTED) and one
 * for an ERROR, which is always the last message a side sends. */
#define XFER_RECVS(depth) ((unsigned)(depth) + 2u)

/* The locked memory xfer_ctl_init registers for nrecv and nsend buffers
 * (two page-aligned regions, whole pages pinned). */
uint64_t xfer_ctl_locked(unsigned nrecv, unsigned nsend);
/* After rc_create_qp: register the buffers and post every receive. */
int xfer_ctl_init(struct xfer_ctl *x, struct rc_conn *c, unsigned nrecv, unsigned nsend);
void xfer_ctl_free(struct xfer_ctl *x);
/* SEND a message (waits for a free send buffer if need be). */
int xfer_ctl_send(struct xfer_ctl *x, const struct xfer_msg *m);
/* The next completion, except those of our own SENDs (handled inside). */
int xfer_ctl_next(struct xfer_ctl *x, struct ibv_wc *wc);
/* Is wc one of our receives (a message or a WRITE_WITH_IMM)? */
bool xfer_ctl_is_recv(const struct xfer_ctl *x, const struct ibv_wc *wc);
/* For a receive completion: decode the message (not for WITH_IMM), then
 * repost the receive. */
int xfer_ctl_take(struct xfer_ctl *x, const struct ibv_wc *wc, struct xfer_msg *m);
/* Wait until every SEND posted so far has completed. */
int xfer_ctl_drain(struct xfer_ctl *x);

#endif /* XFER_CTL_H */
