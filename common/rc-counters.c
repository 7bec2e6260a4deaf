// SPDX-License-Identifier: MIT
/*
 * rc-counters.c - RDMA only: what the port saw. A timed-out wait asks the
 * port's retransmission counters whether the link is still resending
 * (lossy but alive) or quiet (the peer is silent); a failed completion is
 * worded with what the counters and the device say (rc_wc_explain).
 * Declared in rc-counters.h.
 */
#define _GNU_SOURCE
#include "rc-counters.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

/*
 * What rises while a reliable connection recovers lost packets (meanings
 * checked in the kernel source, tools/link-counters.sh lists them).
 * Soft-RoCE (rxe_hw_counters.c): completer_retry_err (this port went back
 * and resent), out_of_seq_request (a gap seen here, NAKed),
 * duplicate_request (the peer resent), rcvd_seq_err (the peer NAKed a
 * gap). mlx5 (counters.c): local_ack_timeout_err, packet_seq_err and
 * implied_nak_seq_err (this port resent), out_of_sequence (a gap here),
 * duplicate_request. Not RNR: that is a peer without a receive posted.
 */
static const char *const link_names[] = {
	"completer_retry_err",	 "out_of_seq_request", "duplicate_request",   "rcvd_seq_err",
	"local_ack_timeout_err", "packet_seq_err",     "implied_nak_seq_err", "out_of_sequence",
};
#define N_NAMES (sizeof(link_names) / sizeof(link_names[0]))
/* The ones that rise only on packets from a live peer: a gap seen here, a
 * resend received, a NAK received. Not this port's own timer's resends
 * (completer_retry_err, local_ack_timeout_err: a dead peer raises them). */
#define PEER_NAMES 0xeeu

/* One counter file: 0 with its value, or -1. */
static int read_counter(const char *dir, const char *name, uint64_t *v)
{
	char path[256], text[32], *end;
	ssize_t n;
	int fd;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	text[n] = '\0';
	errno = 0;
	*v = strtoull(text, &end, 10);
	return errno || end == text || (*end && *end != '\n') ? -1 : 0;
}

/*
 * The packets the port received: Soft-RoCE's hw_counters/rcvd_pkts (1), or
 * the IB port counter counters/port_rcv_packets (2). A port that resends
 * and receives nothing has lost its peer: a wait does not go on for it
 * (at retry count 7 Soft-RoCE's own resends never stop).
 */
static int rx_read(const struct rc_link *l, int which, uint64_t *v)
{
	char dir[sizeof(l->dir) + 16];

	if (which == 1)
		return read_counter(l->dir, "rcvd_pkts", v);
	snprintf(dir, sizeof(dir), "%s/../counters", l->dir);
	return read_counter(dir, "port_rcv_packets", v);
}

/* Note the received packets now (rx_have: known). */
static void rx_mark(struct rc_link *l)
{
	l->rx_have = l->rx > 0 && rx_read(l, l->rx, &l->rx_base) == 0;
}

/* Did the port receive packets since rx_mark? Unknown counts as yes. */
static bool rx_heard(struct rc_link *l)
{
	uint64_t v;

	if (!l->rx_have || rx_read(l, l->rx, &v))
		return true;
	if (v == l->rx_base)
		return false;
	l->rx_base = v;
	return true;
}

int rc_link_find(struct rc_link *l, const char *dev, unsigned port)
{
	uint64_t v;
	size_t i;

	l->names = 0;
	l->state = -1;
	if ((size_t)snprintf(l->dir, sizeof(l->dir), "%s/class/infiniband/%s/ports/%u/hw_counters",
			     l->sysfs ? l->sysfs : "/sys", dev, port) >= sizeof(l->dir))
		return -1;
	for (i = 0; i < N_NAMES; i++)
		if (read_counter(l->dir, link_names[i], &v) == 0)
			l->names |= 1u << i;
	if (l->names)
		l->state = 1;
	l->rx = rx_read(l, 1, &v) == 0 ? 1 : rx_read(l, 2, &v) == 0 ? 2 : -1;
	return l->names ? 0 : -1;
}

/* Sum of the counters of `mask` (bit i: link_names[i]) now: 0, or -1. */
static int read_sum(const struct rc_link *l, unsigned mask, uint64_t *sum)
{
	uint64_t v;
	size_t i;

	if (l->state <= 0)
		return -1;
	*sum = 0;
	for (i = 0; i < N_NAMES; i++) {
		if (!(l->names & mask & (1u << i)))
			continue;
		if (read_counter(l->dir, link_names[i], &v))
			return -1;
		*sum += v;
	}
	return 0;
}

int rc_link_read(const struct rc_link *l, uint64_t *sum)
{
	return read_sum(l, ~0u, sum);
}

void rc_link_begin(struct rc_conn *c)
{
	struct rc_link *l = &c->link;

	if (l->state) /* not the connection's first wait */
		return;
	if (!c->id || !c->id->verbs) {
		l->state = -1;
		return;
	}
	rc_link_find(l, ibv_get_device_name(c->id->verbs->device), c->id->port_num);
	l->conn_have = read_sum(l, PEER_NAMES, &l->conn_peer) == 0;
}

int rc_wait_first_ms(const struct rc_conn *c)
{
	return c->link.state < 0 ? c->timeout_ms : c->timeout_ms / 2;
}

/* Half the timeout: the first look at the counters, then the other half. */
static int wait_half_way(struct rc_conn *c, struct rc_cq_wait *w)
{
	struct rc_link *l = &c->link;
	int half = c->timeout_ms / 2;

	l->phase = 1;
	l->start_us = w->deadline_us - (uint64_t)half * 1000u;
	l->rose = 0;
	l->spent_before_us = l->spent_us;
	if (!l->state && c->id && c->id->verbs)
		rc_link_find(l, ibv_get_device_name(c->id->verbs->device), c->id->port_num);
	else if (!l->state)
		l->state = -1;
	l->have = rc_link_read(l, &l->base) == 0;
	rx_mark(l);
	w->deadline_us += (uint64_t)(c->timeout_ms - half) * 1000u;
	return 0;
}

/*
 * What going on for another half timeout costs the connection's budget:
 * a wait's first extension charges it from its start (the timeout it
 * has waited, and the half), later ones the half. So the extended waits
 * of a connection, from start to end, add up to at most the budget, and
 * a link that keeps failing ends the connection within it plus the
 * waits that did end in time.
 */
static bool budget_allows(struct rc_conn *c, uint64_t waited_us, uint64_t half_us)
{
	struct rc_link *l = &c->link;
	uint64_t budget_us = (uint64_t)c->timeout_ms * RC_LINK_BUDGET * 1000u;
	uint64_t step_us = l->phase == 1 ? waited_us + half_us : half_us;

	if (l->spent_us + step_us > budget_us)
		return false;
	l->spent_us += step_us;
	return true;
}

/* The link kept resending, and the budget is spent: say how it went. */
static int fail_lossy(struct rc_conn *c, uint64_t waited_us)
{
	struct rc_link *l = &c->link;
	uint64_t before_ms = l->spent_before_us / 1000u;

	if (before_ms == 0)
		return rc_fail(&c->log, ETIMEDOUT,
			       "no completion within %" PRIu64 " ms while the link kept "
			       "retransmitting (the port's retransmission counters rose by %" PRIu64
			       "): a lossy or reordering link, or a responder slower than the "
			       "ACK timeout (seen on Soft-RoCE under heavy load); hint: on RoCE "
			       "check PFC/ECN; for a busy responder, a longer ACK timeout or fewer "
			       "operations in flight",
			       waited_us / 1000u, l->rose);
	return rc_fail(&c->log, ETIMEDOUT,
		       "no completion within %" PRIu64 " ms while the link kept retransmitting "
		       "(the port's retransmission counters rose by %" PRIu64 "), and this "
		       "connection's earlier waits on a resending link had taken %" PRIu64
		       " ms of the %" PRIu64 " ms it may spend: a lossy or reordering link, "
		       "or a responder slower than the ACK timeout (seen on Soft-RoCE under "
		       "heavy load); hint: on RoCE check PFC/ECN; for a busy responder, a "
		       "longer ACK timeout or fewer operations in flight",
		       waited_us / 1000u, l->rose, before_ms,
		       (uint64_t)c->timeout_ms * RC_LINK_BUDGET);
}

int rc_wait_timed_out(struct rc_conn *c, struct rc_cq_wait *w)
{
	struct rc_link *l = &c->link;
	uint64_t half_us = (uint64_t)(c->timeout_ms / 2) * 1000u, waited_us, sum;
	char why[RC_ERR_LEN - 64];

	if (l->phase == 0 && l->state >= 0)
		return wait_half_way(c, w);
	waited_us = l->phase ? w->deadline_us - l->start_us : (uint64_t)c->timeout_ms * 1000u;
	if (c->local_stall && c->local_stall(c->local_stall_arg, why, sizeof(why)))
		return rc_fail(&c->log, ETIMEDOUT, "no progress within %" PRIu64 " ms: %s",
			       waited_us / 1000u, why);
	if (l->phase && l->have && rc_link_read(l, &sum) == 0 && sum > l->base) {
		/* Resending, and nothing came back: the peer is gone. */
		if (!rx_heard(l))
			return rc_fail(&c->log, ETIMEDOUT,
				       "no completion within %" PRIu64 " ms: the port resent (its "
				       "retransmission counters rose by %" PRIu64 ") and received "
				       "nothing for the last %" PRIu64 " ms; hint: the peer's host "
				       "is down or stalled, or the link is down",
				       waited_us / 1000u, l->rose + sum - l->base, half_us / 1000u);
		/* The transport is still resending: lossy, but not silent. */
		l->rose += sum - l->base;
		l->base = sum;
		if (!budget_allows(c, waited_us, half_us))
			return fail_lossy(c, waited_us);
		l->phase++;
		w->deadline_us += half_us;
		rc_trace(&c->log,
			 "no completion for %" PRIu64 " ms, but the port's retransmission "
			 "counters rose by %" PRIu64 ": a lossy link, still resending; "
			 "waiting on (this connection's extended waits: %" PRIu64
			 " of at most %" PRIu64 " ms)",
			 waited_us / 1000u, l->rose, l->spent_us / 1000u,
			 (uint64_t)c->timeout_ms * RC_LINK_BUDGET);
		return 0;
	}
	if (l->rose)
		return rc_fail(&c->log, ETIMEDOUT,
			       "no completion within %" PRIu64 " ms: the link retransmitted (the "
			       "port's counters rose by %" PRIu64 "), then nothing for %" PRIu64
			       " ms; hint: the peer stalled, or the link is down",
			       waited_us / 1000u, l->rose, half_us / 1000u);
	return rc_fail(&c->log, ETIMEDOUT,
		       "no completion within %d ms; hint: the peer stalled, or the link is down",
		       c->timeout_ms);
}

static void note_lossy_link(struct rc_conn *c, const char *lead);

/* Is c's device Soft-RoCE (rdma_rxe's vendor id, 0xffffff)? Then true,
 * with the running kernel's major and minor version. */
static bool soft_roce_kernel(const struct rc_conn *c, int *major, int *minor)
{
	char rel[65];

	/* As the device said when the connection's PD was made. */
	if (c->dev.vendor_id != RC_SOFT_ROCE_VENDOR_ID)
		return false;
	*major = *minor = 0;
	sscanf(rc_kernel_release(rel, sizeof(rel)), "%d.%d", major, minor);
	return true;
}

/*
 * The connection's first failure is a flush, before our own
 * rdma_disconnect. A peer's DISCONNECTED never flushes our QP (librdmacm's
 * rdma_get_cm_event and the kernel's CM leave the QP alone), so the device
 * moved the QP to the error state without an error completion: on
 * Soft-RoCE 6.12 and later, on a QP where a READ was posted after a SEND,
 * the rdma_rxe bug of docs/kernels.md (elsewhere its cause is not known).
 * A peer that no longer
 * gets our ACKs gives up and disconnects too, often before we poll the
 * flush: named beside the cause, not instead of it.
 */
static void first_flush(struct rc_conn *c, const struct ibv_wc *wc, bool own)
{
	const char *gone = c->peer_disconnected ? "; the peer has disconnected since" : "";
	int major = 0, minor = 0;

	if (c->local_disconnected) /* our own teardown: the hint says so */
		return;
	/* The other queue's flushes may come before the error itself (their
	 * order is not fixed): an error polled in the same batch is the cause. */
	for (int i = c->wc_next; i < c->wc_count; i++) {
		const struct ibv_wc *e = &c->wc[i];

		if (e->status == IBV_WC_SUCCESS || e->status == IBV_WC_WR_FLUSH_ERR)
			continue;
		rc_wc_check(&c->log, e);
		if (e->status == IBV_WC_RETRY_EXC_ERR)
			note_lossy_link(c, "but");
		return;
	}
	/* The bug needs a SEND resent with a READ behind it: c's own QP, on
	 * which a READ was posted after a SEND (whether that SEND was still
	 * unacknowledged then is not tracked), not a QP beside it
	 * (rc_create_qp_beside), nor one of WRITEs and SENDs (a put's). */
	if (own && c->read_after_send && soft_roce_kernel(c, &major, &minor) &&
	    rc_rxe_read_send_kernel(major, minor)) {
		rc_fail(&c->log, EIO,
			"work request %" PRIu64 " failed: %s, and no error came before it: "
			"Soft-RoCE moved the QP to the error state without reporting an error; "
			"a known rdma_rxe bug on Linux %d.%d (see docs/kernels.md)%s",
			wc->wr_id, ibv_wc_status_str(wc->status), major, minor, gone);
	} else {
		rc_fail(&c->log, EIO,
			"work request %" PRIu64 " failed: %s, and no error came before it: the "
			"QP went to the error state without an error completion first%s; "
			"hint: see the kernel log (dmesg) for the device",
			wc->wr_id, ibv_wc_status_str(wc->status), gone);
	}
	/* What the port saw: under loss or reordering, the lossy link. */
	note_lossy_link(c, "and");
}

/* How many of a live peer's packets the port counted out of order,
 * resent or NAKed during this connection (0: none, or no counters). */
static uint64_t peer_astray(const struct rc_conn *c)
{
	const struct rc_link *l = &c->link;
	uint64_t sum;

	if (!l->conn_have || read_sum(l, PEER_NAMES, &sum) || sum <= l->conn_peer)
		return 0;
	return sum - l->conn_peer;
}

/* Did the port see a live peer's packets go astray during this
 * connection? Then append `lead` and what it counted to c->log.err. */
static void note_lossy_link(struct rc_conn *c, const char *lead)
{
	size_t n = strlen(c->log.err);
	uint64_t k = peer_astray(c);

	if (!k)
		return;
	snprintf(c->log.err + n, sizeof(c->log.err) - n,
		 "; %s during this connection the port counted %" PRIu64 " packets from a peer "
		 "out of order, resent or NAKed: a lossy or reordering link (on RoCE check "
		 "PFC/ECN), "
		 "or a responder slower than the ACK timeout",
		 lead, k);
}

bool rc_rxe_read_send_kernel(int major, int minor)
{
	/* Shown on 6.12 and 7.3 (tests/repro/rxe-read-send); 6.1 drops the
	 * old ACK that triggers it; the kernels between were not tried. */
	return major > 6 || (major == 6 && minor >= 12);
}

const char *rc_kernel_release(char *buf, size_t len)
{
	struct utsname u;

	snprintf(buf, len, "%s", uname(&u) ? "(unknown)" : u.release);
	return buf;
}

int rc_peer_gone(struct rc_conn *c)
{
	rc_fail(&c->log, ECONNRESET, "the peer disconnected; hint: %s",
		rc_cm_event_hint(RDMA_CM_EVENT_DISCONNECTED, 0));
	/* A peer that gave up on a lossy link disconnects: say what we saw. */
	note_lossy_link(c, "and");
	return -ECONNRESET;
}

void rc_wc_explain(struct rc_conn *c, const struct ibv_wc *wc)
{
	/* A QP beside c's (rc_create_qp_beside) is worded without the rxe
	 * bug, which needs READs and SENDs on one QP: c's own flag says what
	 * c's QP carried, not what the one beside it did. */
	bool own = !c->qp || wc->qp_num == c->qp->qp_num;
	bool first = !c->wc_failed;

	c->wc_failed = true;
	if (wc->status == IBV_WC_WR_FLUSH_ERR && first)
		first_flush(c, wc, own);
	else if (wc->status == IBV_WC_RETRY_EXC_ERR)
		note_lossy_link(c, "but");
}

/*
 * RC_CRAWL_*: at a wait's start, once a window of RC_CRAWL_WINDOW x the
 * timeout has passed: fail if the port counted a peer's packets out of
 * order, resent or NAKed in it and the caller moved less than RC_CRAWL_MIN.
 */
static int crawl_check(struct rc_conn *c)
{
	struct rc_link *l = &c->link;
	uint64_t now = rc_now_us(), win_us = (uint64_t)c->timeout_ms * RC_CRAWL_WINDOW * 1000u;
	uint64_t peer = 0, moved = l->moved - l->win_moved;
	bool have;

	if (!l->moved || l->state <= 0) /* not counted, or no counters */
		return 0;
	if (l->win_start_us && now - l->win_start_us < win_us)
		return 0;
	have = read_sum(l, PEER_NAMES, &peer) == 0;
	if (l->win_start_us && have && l->win_have && peer > l->win_peer && moved < RC_CRAWL_MIN)
		return rc_fail(
			&c->log, ETIMEDOUT,
			"moved only %" PRIu64 " KiB in %" PRIu64
			" s while the port counted %" PRIu64
			" packets from a peer out of order, resent or NAKed: a lossy or "
			"reordering link or a responder slower than the ACK timeout, too slow to "
			"go on (at least %u KiB per %d x --timeout); hint: on RoCE check PFC/ECN",
			moved >> 10, (now - l->win_start_us) / 1000000u, peer - l->win_peer,
			RC_CRAWL_MIN >> 10, RC_CRAWL_WINDOW);
	l->win_start_us = now;
	l->win_moved = l->moved;
	l->win_peer = peer;
	l->win_have = have;
	return 0;
}

/* rc_next_wc's every wait: a new one (phase 0); the connection's first
 * notes the counters. */
static int wait_begin(struct rc_conn *c)
{
	c->link.phase = 0;
	rc_link_begin(c);
	return crawl_check(c);
}

const struct rc_link_hooks rc_link_counters = {
	.begin = wait_begin,
	.first_ms = rc_wait_first_ms,
	.timed_out = rc_wait_timed_out,
	.peer_gone = rc_peer_gone,
	.explain = rc_wc_explain,
};
