/* SPDX-License-Identifier: MIT */
/*
 * rc-counters.h - RDMA only, but not in the set rdma-common.h names: an
 * opt-in. rc_next_wc's look at the port's retransmission counters
 * (/sys/class/infiniband/DEV/ports/N/hw_counters, the names
 * tools/link-counters.sh explains) when a wait times out: a silent peer,
 * or a transport still resending what a lossy link dropped? A connection
 * opts in with c->link_hooks = &rc_link_counters (02 and 03 do); its
 * program then links rc-counters.c too. Its state lives in struct
 * rc_link, inside struct rc_conn.
 */
#ifndef RC_COUNTERS_H
#define RC_COUNTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdma-common.h"

/*
 * The waits of one connection that went on past timeout_ms, each counted
 * from its start, add up to at most RC_LINK_BUDGET x timeout_ms: a link
 * that keeps failing ends the connection within a bounded time.
 */
#define RC_LINK_BUDGET 3
/*
 * A transfer that crawls: every wait ends in time, yet little moves (on a
 * link that reorders most packets, Soft-RoCE, which resends for ever at
 * retry count 7, went on at ~23 KiB/s: docs/reliability.md). A connection
 * whose caller counts what it moves (rc_link_moved) must move at least
 * RC_CRAWL_MIN bytes in every RC_CRAWL_WINDOW x timeout_ms in which the
 * port counted a peer's packets out of order, resent or NAKed.
 */
#define RC_CRAWL_WINDOW 2
#define RC_CRAWL_MIN	(1u << 20)

/* rc_next_wc's hooks (struct rc_link_hooks): the functions below. */
extern const struct rc_link_hooks rc_link_counters;
/* Find the counters of DEV's port: 0, or -1 (l->state -1) if this port
 * has none of them or they cannot be read. */
int rc_link_find(struct rc_link *l, const char *dev, unsigned port);
/* Sum of the port's retransmission counters now: 0, or -1. */
int rc_link_read(const struct rc_link *l, uint64_t *sum);
/* At a connection's first wait: find the counters, note conn_peer;
 * later calls do nothing. */
void rc_link_begin(struct rc_conn *c);
/* rc_link_moved (rdma-common.h): the bytes RC_CRAWL_MIN is measured
 * against. */

/*
 * How long rc_next_wc's wait sleeps before asking rc_wait_timed_out:
 * half of timeout_ms while the counters may be there (the look at the
 * counters then costs nothing in a wait that ends sooner), else all.
 */
int rc_wait_first_ms(const struct rc_conn *c);

/*
 * rc_next_wc's wait reached w's deadline. At half the timeout:
 * read the counters, wait for the other half (returns 0). At the timeout:
 * a local stall (c->local_stall) fails with its message; counters that
 * rose since the last look, while the port received packets (where it
 * counts them), mean the link is lossy but the peer alive: the deadline
 * moves on by half a timeout (returns 0; one -v line) while the
 * connection's budget lasts (RC_LINK_BUDGET timeouts for all its extended
 * waits, each charged from its start). Else -ETIMEDOUT, log.err naming
 * what was seen: a spent budget fails the wait at once, as a lossy link.
 */
int rc_wait_timed_out(struct rc_conn *c, struct rc_cq_wait *w);

/*
 * rc_next_wc, after a failed completion (rc-counters.c): words what the
 * port saw, in c->log.err. A flush that is the first failure of c, before
 * our own rdma_disconnect, on Soft-RoCE (vendor id 0xffffff) under a
 * kernel that has the bug (rc_rxe_read_send_kernel), of a QP on
 * which a READ was posted after a SEND (c->read_after_send): the
 * device failed the QP without an error completion, a known rdma_rxe bug
 * (docs/kernels.md), with the kernel's X.Y; elsewhere the same flush is
 * worded without a cause, with the kernel log as hint; a peer's disconnect never
 * flushes our QP, so it is named beside the bug, not instead; an error
 * polled in the same batch behind the flush is named instead. Retries
 * exhausted while the port counted packets from a peer out of order,
 * resent or NAKed during this connection: a lossy or reordering link, not
 * only a silent peer. A first flush of a QP beside c's
 * (rc_create_qp_beside) is worded as on a NIC, never as the bug: that
 * needs READs and SENDs on one QP, which such a pair keeps apart.
 */
void rc_wc_explain(struct rc_conn *c, const struct ibv_wc *wc);
/* rc_next_wc, when the peer disconnected: -ECONNRESET, c->log.err saying
 * so, and that the link was lossy when the counters above say it was. */
int rc_peer_gone(struct rc_conn *c);
/* The running kernel's release as `uname -r` prints it, copied into buf
 * (65 bytes hold any), or "(unknown)"; returns buf. Where kernels differ
 * (the rdma_rxe bug above, the lessons of 01 and 02), we say which one we
 * saw. In rc-counters.c. */
const char *rc_kernel_release(char *buf, size_t len);
/* Does Linux major.minor have the rdma_rxe bug of docs/kernels.md (a QP
 * with a READ behind a resent SEND fails silently)? Shown on 6.12 and
 * 7.3; 6.1 does not have it; the kernels between were not tried: false. */
bool rc_rxe_read_send_kernel(int major, int minor);

#endif /* RC_COUNTERS_H */
