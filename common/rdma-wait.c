// SPDX-License-Identifier: MIT
/*
 * rdma-wait.c - part of the set rdma-common.h names: every wait is
 * bounded. CM events (rc_wait_cm_event, and a connection's, which records
 * what it saw) and completions (rc_wait_cq under rc_next_wc), each until
 * a deadline, a cancel fd or the peer's disconnect. See rdma-common.h.
 */
#define _GNU_SOURCE
#include "rdma-common.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* ---- Waiting ---- */

/* Milliseconds left until deadline_us (at least 0), -1 for none. */
static int ms_left(uint64_t deadline_us)
{
	uint64_t now, left;

	if (deadline_us == RC_NO_DEADLINE)
		return -1;
	if (deadline_us == 0)
		return 0; /* "just look": no need to read the clock */
	now = rc_now_us();
	if (now >= deadline_us)
		return 0;
	left = (deadline_us - now + 999) / 1000;
	return left > INT32_MAX ? INT32_MAX : (int)left;
}

int rc_wait_readable(const int *fds, int n, uint64_t deadline_us)
{
	struct pollfd p[4];
	int i, ret;

	if (n < 0 || n > 4)
		return -EINVAL;
	for (i = 0; i < n; i++)
		p[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
	for (;;) {
		ret = poll(p, (nfds_t)n, ms_left(deadline_us));
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret < 0)
			return -errno;
		if (ret == 0)
			return -ETIMEDOUT;
		for (i = 0; i < n; i++)
			if (p[i].revents)
				return i;
	}
}

int rc_take_cm_event(struct rdma_event_channel *ch, struct rc_cm_info *info, struct rdma_cm_id **id,
		     const struct rc_log *log)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(ch, &ev))
		return errno == EAGAIN ? -EAGAIN : -errno;
	memset(info, 0, sizeof(*info));
	info->event = ev->event;
	info->status = ev->status;
	info->id = ev->id;
	if (id)
		*id = ev->id;
	if (ev->param.conn.private_data && ev->param.conn.private_data_len) {
		info->priv_len = ev->param.conn.private_data_len;
		if (info->priv_len > sizeof(info->priv))
			info->priv_len = sizeof(info->priv);
		memcpy(info->priv, ev->param.conn.private_data, info->priv_len);
	}
	info->initiator_depth = ev->param.conn.initiator_depth;
	info->responder_resources = ev->param.conn.responder_resources;
	rc_trace(log, "cm event %s (status %d)", rdma_event_str(ev->event), ev->status);
	/* Acknowledge at once: rdma_destroy_id() blocks while events of its
	 * id are unacknowledged, and the copy above is all we need. */
	rdma_ack_cm_event(ev);
	return 0;
}

/* The error for an event we did not want, with the server's reason when
 * a REJECTED carries one. */
static int cm_event_error(struct rc_log *log, const struct rc_cm_info *in,
			  enum rdma_cm_event_type expected, const char *step)
{
	struct rc_msg m;
	char why[128];

	if (in->event == RDMA_CM_EVENT_REJECTED && in->status == 28 &&
	    rc_priv_unpack(in->priv, in->priv_len, &m, why, sizeof(why)) == 0 &&
	    m.type == RC_T_REJECT)
		return rc_fail(log, ECONNREFUSED, "%s: the server rejected the connection: %.*s",
			       step, (int)(m.length > 200 ? 200 : m.length), (const char *)m.body);
	return rc_fail(log,
		       in->event == RDMA_CM_EVENT_REJECTED	 ? ECONNREFUSED
		       : in->event == RDMA_CM_EVENT_DISCONNECTED ? ECONNRESET
								 : EHOSTUNREACH,
		       "%s: got %s (status %d) instead of %s; hint: %s", step,
		       rdma_event_str(in->event), in->status, rdma_event_str(expected),
		       rc_cm_event_hint(in->event, in->status));
}

/* No DISCONNECTED after our rdma_disconnect: the peer's CM never answered
 * our DREQ (ib_cm resends it after its response timeout; cma.c's
 * CMA_CM_RESPONSE_TIMEOUT is 20 in the sources we read: 4.3 s). */
static const char cm_no_goodbye[] =
	"the peer did not answer our DREQ: it is gone, or the DREQs (the CM resends one after "
	"a second or more) or their answers were lost on a lossy or reordering link";

int rc_wait_cm_event(struct rdma_event_channel *ch, enum rdma_cm_event_type expected,
		     int timeout_ms, int cancel_fd, const char *step, struct rc_log *log,
		     struct rc_cm_info *info)
{
	/* Address and route resolution were given timeout_ms themselves:
	 * wait a little longer, so that the CM's own verdict (ADDR_ERROR with
	 * its status) arrives rather than our generic timeout. */
	uint64_t deadline = rc_now_us() + (uint64_t)timeout_ms * 1000u + 500000u;
	int fds[2] = { ch->fd, cancel_fd };
	struct rc_cm_info none;
	int ret;

	if (!info)
		info = &none; /* the caller wants only the verdict */
	info->event = RC_CM_NO_EVENT;
	for (;;) {
		ret = rc_take_cm_event(ch, info, NULL, log);
		if (ret == 0)
			break;
		if (ret != -EAGAIN)
			return rc_fail(log, -ret, "%s: rdma_get_cm_event: %s", step,
				       strerror(-ret));
		ret = rc_wait_readable(fds, 2, deadline);
		if (ret == -ETIMEDOUT)
			return rc_fail(log, ETIMEDOUT, "%s: no %s within %d ms; hint: %s", step,
				       rdma_event_str(expected), timeout_ms,
				       expected == RDMA_CM_EVENT_DISCONNECTED
					       ? cm_no_goodbye
					       : "is the peer up and "
						 "reachable over RDMA?");
		if (ret == 1)
			return rc_fail(log, ECANCELED, "%s: cancelled (shutting down)", step);
		if (ret < 0)
			return rc_fail(log, -ret, "%s: poll: %s", step, strerror(-ret));
	}
	if (info->event != expected)
		return cm_event_error(log, info, expected, step);
	return 0;
}

/* What a connection keeps of its CM events, whichever was expected: a
 * DISCONNECTED seen by any wait is one rc_disconnect need not wait for. */
static void note_cm_event(struct rc_conn *c, const struct rc_cm_info *info)
{
	if (info->event == RDMA_CM_EVENT_ESTABLISHED && !c->established) {
		c->established = true;
		rc_trace_retry(&c->log, c->qp); /* what the CM gave the QP */
	}
	if (info->event == RDMA_CM_EVENT_DISCONNECTED)
		c->peer_disconnected = true;
}

int rc_conn_cm_event(struct rc_conn *c, const struct rc_cm_info *info)
{
	note_cm_event(c, info);
	switch (info->event) {
	case RDMA_CM_EVENT_ESTABLISHED:
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
	case RDMA_CM_EVENT_ADDR_CHANGE: return 0;
	default: /* REJECTED, UNREACHABLE, CONNECT_ERROR, DEVICE_REMOVAL, ... */
		return cm_event_error(&c->log, info, RDMA_CM_EVENT_ESTABLISHED, c->peer);
	}
}

int rc_conn_wait_cm_event(struct rc_conn *c, enum rdma_cm_event_type expected, const char *step,
			  struct rc_cm_info *info)
{
	struct rc_cm_info got;
	int ret;

	/* The channel rule (rdma-listen.h): an id's events have one reader. */
	if (!c->cm_channel)
		return rc_fail(&c->log, EINVAL,
			       "%s: this connection has no CM channel of its own; hint: its events "
			       "go to its owner's (an event loop's), which hands them to "
			       "rc_conn_cm_event",
			       step);
	ret = rc_wait_cm_event(c->cm_channel, expected, c->timeout_ms, c->cancel_fd, step, &c->log,
			       &got);
	note_cm_event(c, &got);
	if (info)
		*info = got;
	return ret;
}

int rc_wc_check(struct rc_log *log, const struct ibv_wc *wc)
{
	/* wc->opcode is only valid for successful completions. */
	if (wc->status == IBV_WC_SUCCESS) {
		rc_trace(log, "completion %s ok wr_id=%" PRIu64 " byte_len=%u",
			 rc_wc_opcode_str(wc->opcode), wc->wr_id, wc->byte_len);
		return 0;
	}
	rc_trace(log, "completion FAILED wr_id=%" PRIu64 " status=%s", wc->wr_id,
		 ibv_wc_status_str(wc->status));
	return rc_fail(log, EIO,
		       "work request %" PRIu64
		       " failed: %s (status %d, vendor error 0x%x); hint: %s",
		       wc->wr_id, ibv_wc_status_str(wc->status), wc->status, wc->vendor_err,
		       rc_wc_status_hint(wc->status));
}

bool rc_cq_spin(struct rc_cq_wait *w, enum rc_poll_mode m)
{
	uint64_t now;

	if (m != RC_POLL_ADAPTIVE)
		return m == RC_POLL_BUSY;
	/* Once slept (armed), this wait does not spin again: the budget is
	 * spent, and an event woke us because something arrived. */
	if (w->spin_until_us == UINT64_MAX)
		return false;
	/* The clock every 16 empty polls: it may be a system call (hpet). */
	if (w->spin_until_us && w->spins % 16)
		return true;
	now = rc_now_us();
	if (!w->spin_until_us)
		w->spin_until_us = now + RC_SPIN_BUDGET_US;
	if (now < w->spin_until_us)
		return true;
	w->spin_until_us = UINT64_MAX;
	return false;
}

int rc_wait_cq(struct rc_cq_wait *w, struct ibv_comp_channel *channel, const int *fds, int n,
	       int timeout_ms, struct rc_log *log)
{
	int all[4], i, ret;

	if (!channel) {
		/* Busy polling: lowest latency, one core at 100%. Every 256
		 * empty polls give way: a spinner that keeps its CPU starves
		 * what must run there first (a peer on this host, Soft-RoCE's
		 * kernel work): 8 ms instead of 50 us round trips on rxe.
		 * Every 4096, look at the other fds and the clock (system
		 * calls). */
		if (++w->spins % 256)
			return 0;
		sched_yield();
		if (w->spins % 4096)
			return 0;
	}
	/*
	 * The deadline is set when we first have to wait, not before:
	 * reading the clock is a system call where the clocksource is not
	 * the TSC (hpet in many VMs: microseconds each), and a completion
	 * that is already queued, or arrives while we spin, should cost none.
	 */
	if (!w->deadline_us)
		w->deadline_us = rc_now_us() + (uint64_t)timeout_ms * 1000u;
	all[0] = channel ? channel->fd : -1;
	for (i = 0; i < n && i < 3; i++)
		all[i + 1] = fds[i];
	/* Asleep on the channel until the deadline; spinning, only a look. */
	ret = rc_wait_readable(all, i + 1, channel ? w->deadline_us : 0);
	if (ret == -ETIMEDOUT && !channel && rc_now_us() < w->deadline_us)
		return 0;
	if (ret == -ETIMEDOUT)
		return rc_fail(log, ETIMEDOUT,
			       "no completion within %d ms; hint: the peer stalled, or the link is "
			       "down",
			       timeout_ms);
	if (ret < 0)
		return rc_fail(log, -ret, "poll: %s", strerror(-ret));
	return ret;
}

/* The peer's DISCONNECTED, as the error of a wait for a completion. */
static int peer_gone(struct rc_log *log)
{
	return rc_fail(log, ECONNRESET, "the peer disconnected; hint: %s",
		       rc_cm_event_hint(RDMA_CM_EVENT_DISCONNECTED, 0));
}

int rc_wait_cq_cm(struct rc_cq_wait *w, struct ibv_comp_channel *channel,
		  struct rdma_event_channel *cm, int cancel_fd, int timeout_ms, const char *step,
		  struct rc_log *log)
{
	int fds[2] = { cm->fd, cancel_fd }, ret;

	ret = rc_wait_cq(w, channel, fds, 2, timeout_ms, log);
	if (ret == 2)
		return rc_fail(log, ECANCELED, "cancelled (shutting down)");
	if (ret != 1)
		return ret;
	ret = rc_wait_cm_event(cm, RDMA_CM_EVENT_DISCONNECTED, 0, -1, step, log, NULL);
	return ret ? ret : peer_gone(log);
}

int rc_next_wc(struct rc_conn *c, struct ibv_wc *wc)
{
	/* Without a channel of its own (the channel rule), no CM fd: -1 is
	 * skipped, and peer_disconnected is what the owner recorded. */
	int fds[3] = { c->cm_channel ? c->cm_channel->fd : -1, c->cancel_fd, c->wake_fd };
	const struct rc_link_hooks *h = c->link_hooks;
	struct rc_cq_wait w = { 0 };
	struct rc_cm_info info;
	bool armed = false, busy;
	struct ibv_cq *cq;
	void *cq_ctx;
	int n, ret;

	if (c->shared)
		return rc_fail(
			&c->log, EINVAL,
			"rc_next_wc: this connection's CQ is shared (rc_create_qp_on); hint: "
			"poll the device (rc_device_poll) and find each completion's "
			"connection by wc.qp_num");
	if (c->owner)
		return rc_fail(&c->log, EINVAL, "%s",
			       "rc_next_wc: this QP's completions go to another connection's CQ "
			       "(rc_create_qp_beside); hint: poll that one");
	if (h && (ret = h->begin(c)))
		return ret;
	for (;;) {
		if (c->wc_next < c->wc_count) {
			*wc = c->wc[c->wc_next++];
			ret = rc_wc_check(&c->log, wc);
			if (ret && h)
				h->explain(c, wc); /* what the port saw */
			return ret;
		}
		/* Batched: one call takes up to RC_POLL_BATCH completions. */
		n = ibv_poll_cq(c->dev.cq, RC_POLL_BATCH, c->wc);
		if (n < 0)
			return rc_fail(&c->log, EIO, "ibv_poll_cq failed (%d); hint: %s", n,
				       rc_call_hint("ibv_poll_cq", EIO));
		if (n > 0) {
			c->wc_next = 0;
			c->wc_count = n;
			continue;
		}
		/* A peer gone: no completion is coming, stop spinning. */
		busy = !c->peer_disconnected && rc_cq_spin(&w, c->poll_mode);
		if (!busy && !armed) {
			/* Ask for an event on the next completion, then poll
			 * once more: one may have arrived before we asked. */
			if (ibv_req_notify_cq(c->dev.cq, 0))
				return rc_fail(&c->log, EIO, "ibv_req_notify_cq failed");
			armed = true;
			continue;
		}
		if (!busy && c->peer_disconnected)
			return h ? h->peer_gone(c) : peer_gone(&c->log);
		ret = rc_wait_cq(&w, busy ? NULL : c->dev.channel, fds, 3,
				 h ? h->first_ms(c) : c->timeout_ms, &c->log);
		/* A local stall, a silent peer, or a link still resending? */
		if (ret == -ETIMEDOUT && h && (ret = h->timed_out(c, &w)) == 0)
			continue;
		if (ret < 0)
			return ret;
		if (ret == 0 && !busy) {
			if (ibv_get_cq_event(c->dev.channel, &cq, &cq_ctx) == 0) {
				ibv_ack_cq_events(cq, 1);
				armed = false;
			}
		} else if (ret == 1) {
			ret = rc_take_cm_event(c->cm_channel, &info, NULL, &c->log);
			if (ret == 0 && info.event == RDMA_CM_EVENT_DISCONNECTED)
				c->peer_disconnected = true; /* drain the CQ first */
			else if (ret == 0 && info.event == RDMA_CM_EVENT_DEVICE_REMOVAL)
				return cm_event_error(&c->log, &info, RDMA_CM_EVENT_ESTABLISHED,
						      "waiting for a completion");
		} else if (ret == 2) {
			return rc_fail(&c->log, ECANCELED, "cancelled (shutting down)");
		} else if (ret == 3) {
			uint64_t news;

			/* Reading resets the eventfd; the caller looks. */
			if (read(c->wake_fd, &news, sizeof(news)) < 0 && errno != EAGAIN)
				return rc_fail(&c->log, errno, "reading the wake-up fd: %s",
					       strerror(errno));
			return -EAGAIN;
		}
	}
}

int rc_unexpected_wc(struct rc_conn *c, const struct ibv_wc *wc)
{
	return rc_fail(&c->log, EPROTO, "unexpected completion %s wr_id=%" PRIu64,
		       rc_wc_opcode_str(wc->opcode), wc->wr_id);
}
