// SPDX-License-Identifier: MIT
/*
 * rdma-common.c - RDMA only: one connection's setup, waits and teardown
 * with librdmacm and ibverbs, for 02 and 03 (and a service) to reuse. 01
 * makes these calls inline on purpose (rdma-common.h says why). See
 * rdma-common.h for the contract of each function.
 */
#define _GNU_SOURCE
#include "rdma-common.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- Logging ---- */

void rc_log_init(struct rc_log *log, const char *name, bool verbose)
{
	snprintf(log->name, sizeof(log->name), "%s", name);
	log->verbose = verbose;
	log->err[0] = '\0';
}

void rc_trace(const struct rc_log *log, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (!log->verbose)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* One fprintf per line: lines from several threads do not mix. */
	fprintf(stderr, "%s: %s\n", log->name, line);
}

int rc_fail(struct rc_log *log, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(log->err, sizeof(log->err), fmt, ap);
	va_end(ap);
	return err > 0 ? -err : -EIO;
}

int rc_fail_call(struct rc_log *log, const char *call, int err, const char *hint)
{
	hint = hint ? hint : rc_call_hint(call, err);
	if (hint)
		return rc_fail(log, err, "%s: %s; hint: %s", call, strerror(err), hint);
	return rc_fail(log, err, "%s: %s; hint: see `man %.*s`", call, strerror(err),
		       (int)strcspn(call, "("), call);
}

uint64_t rc_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t rc_now_us(void)
{
	return rc_now_ns() / 1000u;
}

/* ---- Wire header ---- */

void rc_hdr_pack(void *buf, uint8_t type, uint32_t length, uint32_t seq)
{
	struct rc_hdr h = {
		.magic = htobe32(RC_MAGIC),
		.version = RC_VERSION,
		.type = type,
		.flags = 0,
		.length = htobe32(length),
		.seq = htobe32(seq),
	};

	/* memcpy: the buffer need not be aligned for struct rc_hdr. */
	memcpy(buf, &h, sizeof(h));
}

int rc_hdr_unpack(const void *buf, size_t len, struct rc_msg *out, char *err, size_t errlen)
{
	struct rc_hdr h;

	if (len < sizeof(h)) {
		snprintf(err, errlen, "message of %zu bytes is shorter than the %zu-byte header",
			 len, sizeof(h));
		return -EBADMSG;
	}
	memcpy(&h, buf, sizeof(h));
	if (be32toh(h.magic) != RC_MAGIC) {
		snprintf(err, errlen, "bad magic 0x%08x (expected 0x%08x): not one of our messages",
			 be32toh(h.magic), RC_MAGIC);
		return -EBADMSG;
	}
	if (h.version != RC_VERSION) {
		snprintf(err, errlen, "protocol version %u, this program speaks %u", h.version,
			 RC_VERSION);
		return -EBADMSG;
	}
	if (h.flags != 0) {
		snprintf(err, errlen, "unknown flags 0x%04x", be16toh(h.flags));
		return -EBADMSG;
	}
	if ((uint64_t)be32toh(h.length) != len - sizeof(h)) {
		snprintf(err, errlen, "header says %" PRIu32 " body bytes, %zu arrived",
			 be32toh(h.length), len - sizeof(h));
		return -EBADMSG;
	}
	out->type = h.type;
	out->length = be32toh(h.length);
	out->seq = be32toh(h.seq);
	out->body = (const uint8_t *)buf + sizeof(h);
	return 0;
}

int rc_priv_unpack(const void *buf, size_t len, struct rc_msg *out, char *err, size_t errlen)
{
	struct rc_hdr h;
	uint64_t want;

	/* The transport pads private data (to 56 bytes for an IB/RoCE connect
	 * request): only the header's length tells where ours ends. */
	if (len < sizeof(h)) {
		snprintf(err, errlen,
			 "private data of %zu bytes is shorter than the %zu-byte header", len,
			 sizeof(h));
		return -EBADMSG;
	}
	memcpy(&h, buf, sizeof(h));
	want = sizeof(h) + (uint64_t)be32toh(h.length);
	if (want > len) {
		snprintf(err, errlen, "header says %" PRIu32 " body bytes, only %zu arrived",
			 be32toh(h.length), len - sizeof(h));
		return -EBADMSG;
	}
	return rc_hdr_unpack(buf, (size_t)want, out, err, errlen);
}

void rc_remote_buf_pack(void *p, const struct rc_remote_buf *r)
{
	rc_put64(p, r->addr);
	rc_put32((uint8_t *)p + 8, r->rkey);
	rc_put32((uint8_t *)p + 12, r->len);
}

void rc_remote_buf_unpack(const void *p, struct rc_remote_buf *r)
{
	r->addr = rc_get64(p);
	r->rkey = rc_get32((const uint8_t *)p + 8);
	r->len = rc_get32((const uint8_t *)p + 12);
}

bool rc_remote_range_ok(const struct rc_remote_buf *r, uint64_t off, uint64_t len)
{
	/* Written so that nothing can overflow: off <= len_total, then
	 * len <= what is left. */
	return off <= r->len && len <= r->len - off;
}

/* ---- Names and hints ---- */

const char *rc_wc_opcode_str(enum ibv_wc_opcode op)
{
	switch (op) {
	case IBV_WC_SEND: return "SEND";
	case IBV_WC_RDMA_WRITE: return "RDMA_WRITE";
	case IBV_WC_RDMA_READ: return "RDMA_READ";
	case IBV_WC_COMP_SWAP: return "COMP_SWAP";
	case IBV_WC_FETCH_ADD: return "FETCH_ADD";
	case IBV_WC_RECV: return "RECV";
	case IBV_WC_RECV_RDMA_WITH_IMM: return "RECV_RDMA_WITH_IMM";
	default: return "OTHER";
	}
}

const char *rc_wc_status_hint(enum ibv_wc_status st)
{
	switch (st) {
	case IBV_WC_LOC_LEN_ERR:
		return "a message was larger than the receive buffer posted for it";
	case IBV_WC_LOC_PROT_ERR: return "a local address/length/lkey is outside its memory region";
	case IBV_WC_REM_ACCESS_ERR:
		return "the remote address, length or rkey is outside the peer's memory region, or "
		       "the region lacks the access flag";
	case IBV_WC_REM_INV_REQ_ERR:
		return "the peer rejected the request as invalid (length, opcode, or a READ it has "
		       "no responder resources for)";
	case IBV_WC_RNR_RETRY_EXC_ERR:
		return "the peer had no receive posted (receiver not ready) and the RNR retries "
		       "ran out";
	case IBV_WC_RETRY_EXC_ERR:
		return "the peer did not acknowledge: it died, the link is down, or it loses or "
		       "reorders packets";
	case IBV_WC_WR_FLUSH_ERR:
		return "the QP is in the error state after an earlier failure or a disconnect; "
		       "normal during teardown";
	case IBV_WC_REM_OP_ERR:
		return "the peer could not carry out the operation (e.g. our message was larger "
		       "than the receive buffer it posted)";
	/* Soft-RoCE reports a message larger than the receive buffer as
	 * this, not as LOC_LEN_ERR, and a send while its link is down. */
	case IBV_WC_LOC_QP_OP_ERR:
		return "the QP could not carry out the work request: on a receive, the peer sent a "
		       "message larger than the receive buffer posted for it; on a send, the link "
		       "may be down";
	default: return "see ibv_poll_cq(3)";
	}
}

const char *rc_call_hint(const char *call, int err)
{
	if (!strcmp(call, "rdma_create_event_channel"))
		return "is the rdma_ucm module loaded (`modprobe rdma_ucm`)?";
	if (!strcmp(call, "ibv_reg_mr"))
		return err == ENOMEM || err == EPERM ? "registered memory is locked memory: raise "
						       "`ulimit -l` (or run as root)"
						     : "check the access flags";
	if (!strcmp(call, "ibv_post_send") || !strcmp(call, "ibv_post_recv"))
		return err == ENOMEM ? "more work requests posted than the queue holds"
		       : err == EINVAL
			       ? "a work request exceeds the QP's limits (SGEs, inline size)"
			       : "is the QP in the error state?";
	if (!strcmp(call, "rdma_resolve_addr") && (err == ENETUNREACH || err == EHOSTUNREACH))
		return "no route from here to that address (see `ip route get ADDR`); it must be "
		       "reachable through the RDMA device's netdev";
	if (!strcmp(call, "rdma_bind_addr") && err == EADDRINUSE)
		return "another program listens on that port; try -p 0";
	if (!strcmp(call, "rdma_bind_addr") || !strcmp(call, "rdma_resolve_addr"))
		return rc_cm_event_hint(RDMA_CM_EVENT_ADDR_ERROR, 0);
	if (!strcmp(call, "rdma_resolve_route"))
		return rc_cm_event_hint(RDMA_CM_EVENT_ROUTE_ERROR, 0);
	if (!strcmp(call, "ibv_create_cq") || !strcmp(call, "rdma_create_qp"))
		return "`ibv_devinfo -v` shows the device limits";
	if (!strcmp(call, "ibv_poll_cq")) /* mlx5: an entry for a QP it does not know */
		return "the device's driver could not handle a CQ entry; see `dmesg`";
	return NULL;
}

const char *rc_cm_event_hint(enum rdma_cm_event_type ev, int status)
{
	switch (ev) {
	case RDMA_CM_EVENT_ADDR_ERROR:
		/* -110: neighbour (ARP/ND) resolution timed out. */
		if (status == -ETIMEDOUT)
			return "nobody answered for that address on the RDMA netdev's network; is "
			       "the server up, and is its address right?";
		return "no RDMA device has that address; see `rdma link` and use the IP of the "
		       "RDMA netdev (on RoCE, 127.0.0.1 is not one)";
	case RDMA_CM_EVENT_ROUTE_ERROR:
		return "no route to that address through an RDMA device (on RoCE, 127.0.0.1 and "
		       "::1 are never RDMA addresses); check `ip route` and `rdma link`";
	case RDMA_CM_EVENT_UNREACHABLE:
		return "the server's host did not answer; is it up, and (Soft-RoCE) does its "
		       "firewall let UDP port 4791 in?";
	case RDMA_CM_EVENT_REJECTED:
		/* 8 = IB CM "invalid service ID": nobody listens on that port. */
		return status == 8 ? "is a server listening on that port?"
				   : "the server refused the connection";
	case RDMA_CM_EVENT_CONNECT_ERROR:
		return "the connection failed while being set up; try again, and check both hosts "
		       "with `rdma link`";
	case RDMA_CM_EVENT_DISCONNECTED:
		return "the peer closed the connection (or its process died)";
	case RDMA_CM_EVENT_DEVICE_REMOVAL: return "the RDMA device was removed";
	default: return "see rdma_get_cm_event(3)";
	}
}

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

/* Wait (bounded) for the next CM event of this connection; fail unless it
 * is `expected`. */
static int wait_cm_event(struct rc_conn *c, enum rdma_cm_event_type expected, const char *step)
{
	struct rc_cm_info info;
	int ret = rc_wait_cm_event(c->cm_channel, expected, c->timeout_ms, c->cancel_fd, step,
				   &c->log, &info);

	if (info.event == RDMA_CM_EVENT_ESTABLISHED)
		c->established = true;
	if (ret && info.event == RDMA_CM_EVENT_DISCONNECTED)
		c->peer_disconnected = true;
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
	int fds[3] = { c->cm_channel->fd, c->cancel_fd, c->wake_fd };
	const struct rc_link_hooks *h = c->link_hooks;
	struct rc_cq_wait w = { 0 };
	struct rc_cm_info info;
	bool armed = false, busy;
	struct ibv_cq *cq;
	void *cq_ctx;
	int n, ret;

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
		busy = c->busy_poll && !c->peer_disconnected;
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

/* ---- Connection setup ---- */

void rc_conn_init(struct rc_conn *c, const char *name, bool verbose, int timeout_ms, int cancel_fd)
{
	memset(c, 0, sizeof(*c));
	rc_log_init(&c->log, name, verbose);
	c->timeout_ms = timeout_ms;
	c->ack_timeout = RC_ACK_TIMEOUT;
	c->retry_count = RC_RETRY_COUNT;
	c->cancel_fd = cancel_fd;
	c->wake_fd = -1;
}

void rc_format_addr(const struct sockaddr *sa, char *out, size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "?", port[8] = "0";

	getnameinfo(sa,
		    sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
					      : sizeof(struct sockaddr_in),
		    ip, sizeof(ip), port, sizeof(port), NI_NUMERICHOST | NI_NUMERICSERV);
	snprintf(out, len, "%s port %s", ip, port);
}

int rc_create_cm_channel(struct rc_log *log, struct rdma_event_channel **ch)
{
	*ch = rdma_create_event_channel();
	/* Non-blocking, so that we only ever wait in poll() with a timeout. */
	if (!*ch || fcntl((*ch)->fd, F_SETFL, O_NONBLOCK))
		return rc_fail_call(log, "rdma_create_event_channel", errno, NULL);
	return 0;
}

int rc_client_resolve(struct rc_conn *c, const char *host, const char *port)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP };
	struct rdma_addrinfo *res = NULL;
	int ret;

	ret = rc_create_cm_channel(&c->log, &c->cm_channel);
	if (ret)
		return ret;
	/* RDMA_PS_TCP: reliable connected service, ports like TCP's. */
	if (rdma_create_id(c->cm_channel, &c->id, c, RDMA_PS_TCP))
		return rc_fail(&c->log, errno, "rdma_create_id: %s", strerror(errno));

	/* rdma_getaddrinfo takes IPv4, IPv6 and host names alike. */
	ret = rdma_getaddrinfo(host, port, &hints, &res);
	if (ret)
		return rc_fail(&c->log, ret == -1 ? errno : EHOSTUNREACH,
			       "cannot resolve '%s' port %s: %s; hint: use the server's IP address "
			       "on its RDMA netdev",
			       host, port, ret == -1 ? strerror(errno) : gai_strerror(ret));
	rc_format_addr(res->ai_dst_addr, c->peer, sizeof(c->peer));

	/* Find the local RDMA device that reaches this IP address (errno kept
	 * before rdma_freeaddrinfo, which may change it). */
	ret = rdma_resolve_addr(c->id, NULL, res->ai_dst_addr, c->timeout_ms) ? errno : 0;
	rdma_freeaddrinfo(res);
	if (ret)
		return rc_fail(&c->log, ret, "rdma_resolve_addr(%s): %s; hint: %s", c->peer,
			       strerror(ret), rc_call_hint("rdma_resolve_addr", ret));
	ret = wait_cm_event(c, RDMA_CM_EVENT_ADDR_RESOLVED, "resolving the address");
	if (ret)
		return ret;

	/* Find the path (for RoCE: the GID and the next hop's MAC). */
	if (rdma_resolve_route(c->id, c->timeout_ms))
		return rc_fail_call(&c->log, "rdma_resolve_route", errno, NULL);
	return wait_cm_event(c, RDMA_CM_EVENT_ROUTE_RESOLVED, "resolving the route");
}

/* PD, completion channel and CQ for this connection's device. */
static int create_dev(struct rc_conn *c, int cq_size)
{
	struct rc_dev *d = &c->dev;
	struct ibv_port_attr pattr;
	struct ibv_device_attr dattr;

	d->verbs = c->id->verbs;
	if (!d->verbs)
		return rc_fail(&c->log, ENODEV, "the connection has no RDMA device yet");
	if (ibv_query_port(d->verbs, c->id->port_num, &pattr) || ibv_query_device(d->verbs, &dattr))
		return rc_fail(&c->log, errno, "querying device %s: %s",
			       ibv_get_device_name(d->verbs->device), strerror(errno));
	d->max_msg_sz = pattr.max_msg_sz;
	d->max_rd_atom = dattr.max_qp_rd_atom > 255 ? 255 : (uint8_t)dattr.max_qp_rd_atom;

	/* The PD groups the QP and the MRs it may use. */
	d->pd = ibv_alloc_pd(d->verbs);
	if (!d->pd)
		return rc_fail(&c->log, errno, "ibv_alloc_pd: %s", strerror(errno));
	/* The channel turns "a completion arrived" into a readable fd. */
	d->channel = ibv_create_comp_channel(d->verbs);
	if (!d->channel || fcntl(d->channel->fd, F_SETFL, O_NONBLOCK))
		return rc_fail_call(&c->log, "ibv_create_comp_channel", errno, NULL);
	/* Big enough for every WR the QP can have outstanding: a full CQ
	 * would put the QP in the error state. */
	d->cq = ibv_create_cq(d->verbs, cq_size, c, d->channel, 0);
	if (!d->cq)
		return rc_fail(&c->log, errno, "ibv_create_cq(%d entries): %s", cq_size,
			       strerror(errno));
	d->cq_size = d->cq->cqe;
	return 0;
}

int rc_create_qp(struct rc_conn *c, const struct ibv_qp_cap *cap)
{
	struct ibv_qp_init_attr attr = { 0 };
	int ret;

	ret = create_dev(c, (int)(cap->max_send_wr + cap->max_recv_wr));
	if (ret)
		return ret;
	attr.send_cq = c->dev.cq;
	attr.recv_cq = c->dev.cq;
	attr.qp_type = IBV_QPT_RC; /* reliable connected: acked, in order */
	attr.cap = *cap;	   /* explicit caps; the driver may round up */
	attr.sq_sig_all = 0;	   /* each send says whether it wants a completion */
	/* rdma_create_qp: the CM will move it through INIT, RTR and RTS. */
	if (rdma_create_qp(c->id, c->dev.pd, &attr))
		return rc_fail(&c->log, errno,
			       "rdma_create_qp(send %u, recv %u, sge %u): %s; hint: `ibv_devinfo "
			       "-v` shows the device limits",
			       cap->max_send_wr, cap->max_recv_wr, cap->max_send_sge,
			       strerror(errno));
	c->qp = c->id->qp;
	c->cap = attr.cap; /* what we really got */
	rc_trace(&c->log, "created RC QP %u (send %u, recv %u) on %s, CQ of %d", c->qp->qp_num,
		 c->cap.max_send_wr, c->cap.max_recv_wr, ibv_get_device_name(c->dev.verbs->device),
		 c->dev.cq_size);
	return 0;
}

int rc_buf_alloc(struct rc_conn *c, size_t len, int access, struct rc_buf **out)
{
	long page = sysconf(_SC_PAGESIZE);
	struct rc_buf *b;
	int ret;

	if (!c->dev.pd)
		return rc_fail(&c->log, EINVAL, "rc_buf_alloc before rc_create_qp");
	b = calloc(1, sizeof(*b));
	if (!b)
		return rc_fail(&c->log, ENOMEM, "out of memory");
	/* Page alignment is good practice (fewer pages pinned), not a rule. */
	ret = posix_memalign(&b->addr, (size_t)page, len ? len : 1);
	if (ret) {
		free(b);
		return rc_fail(&c->log, ret, "posix_memalign(%zu): %s", len, strerror(ret));
	}
	memset(b->addr, 0, len ? len : 1);
	b->len = len;
	/* Pin the pages and give the NIC a translation: lkey for local
	 * access, rkey for the peer (only if access allows it). */
	b->mr = ibv_reg_mr(c->dev.pd, b->addr, len ? len : 1, access);
	if (!b->mr) {
		ret = errno;
		free(b->addr);
		free(b);
		return rc_fail(&c->log, ret, "ibv_reg_mr(%zu bytes): %s; hint: %s", len,
			       strerror(ret), rc_call_hint("ibv_reg_mr", ret));
	}
	b->next = c->bufs;
	c->bufs = b;
	rc_trace(&c->log, "registered %zu bytes lkey=0x%x rkey=0x%x", len, b->mr->lkey,
		 b->mr->rkey);
	*out = b;
	return 0;
}

int rc_post_recv(struct rc_conn *c, struct rc_buf *b, size_t off, size_t len, uint64_t wr_id)
{
	struct ibv_sge sge = {
		.addr = b ? (uintptr_t)b->addr + off : 0,
		.length = (uint32_t)len,
		.lkey = b ? b->mr->lkey : 0,
	};
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = b ? 1 : 0 };
	struct ibv_recv_wr *bad;
	int ret;

	rc_trace(&c->log, "post RECV wr_id=%" PRIu64 " len=%zu", wr_id, len);
	ret = ibv_post_recv(c->qp, &wr, &bad);
	return ret ? rc_fail_call(&c->log, "ibv_post_recv", ret, NULL) : 0;
}

static const char *wr_opcode_str(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_SEND: return "SEND";
	case IBV_WR_SEND_WITH_IMM: return "SEND_WITH_IMM";
	case IBV_WR_RDMA_WRITE: return "RDMA_WRITE";
	case IBV_WR_RDMA_WRITE_WITH_IMM: return "RDMA_WRITE_WITH_IMM";
	case IBV_WR_RDMA_READ: return "RDMA_READ";
	default: return "OTHER";
	}
}

int rc_post_send_list(struct rc_conn *c, struct ibv_send_wr *first)
{
	struct ibv_send_wr *wr, *bad = NULL;
	int ret;

	for (wr = first; c->log.verbose && wr; wr = wr->next) {
		char remote[64] = "";

		if (wr->opcode != IBV_WR_SEND)
			snprintf(remote, sizeof(remote), " remote=0x%" PRIx64 " rkey=0x%x",
				 wr->wr.rdma.remote_addr, wr->wr.rdma.rkey);
		rc_trace(&c->log, "post %s wr_id=%" PRIu64 " len=%u%s%s", wr_opcode_str(wr->opcode),
			 wr->wr_id, wr->num_sge ? wr->sg_list[0].length : 0, remote,
			 wr->send_flags & IBV_SEND_SIGNALED ? " signaled" : "");
	}
	/* Returns an errno at once if a WR cannot be queued (bad points at
	 * it; those before it were posted); whether the operation worked
	 * arrives later as a completion status. */
	ret = ibv_post_send(c->qp, first, &bad);
	if (ret)
		return rc_fail(&c->log, ret, "ibv_post_send(%s wr_id %" PRIu64 "): %s; hint: %s",
			       bad ? wr_opcode_str(bad->opcode) : "?", bad ? bad->wr_id : 0,
			       strerror(ret), rc_call_hint("ibv_post_send", ret));
	return 0;
}

int rc_post_rdma(struct rc_conn *c, enum ibv_wr_opcode op, struct rc_buf *b, size_t off, size_t len,
		 uint64_t raddr, uint32_t rkey, uint32_t imm, uint64_t wr_id, bool signaled)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)b->addr + off,
		.length = (uint32_t)len,
		.lkey = b->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = &sge,
		.num_sge = len ? 1 : 0,
		.opcode = op,
		.send_flags = signaled ? IBV_SEND_SIGNALED : 0,
	};

	if (len > c->dev.max_msg_sz)
		return rc_fail(&c->log, EMSGSIZE,
			       "%s of %zu bytes is larger than the port's max_msg_sz %u; split it",
			       wr_opcode_str(op), len, c->dev.max_msg_sz);
	/* RC READ/WRITE name the remote memory in wr.rdma; a connected QP
	 * needs no remote QPN or address handle per WR (that is UD). */
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	if (op == IBV_WR_RDMA_WRITE_WITH_IMM)
		wr.imm_data = htobe32(imm);
	return rc_post_send_list(c, &wr);
}

int rc_post_send(struct rc_conn *c, struct rc_buf *b, size_t off, size_t len, uint64_t wr_id,
		 bool signaled)
{
	/* A SEND is the same WR without a remote address. */
	return rc_post_rdma(c, IBV_WR_SEND, b, off, len, 0, 0, 0, wr_id, signaled);
}

void rc_trace_retry(const struct rc_log *log, struct ibv_qp *qp)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a;

	if (!log->verbose || !qp ||
	    ibv_query_qp(qp, &a, IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY, &init))
		return;
	rc_trace(log, "QP %u: ack timeout %u (%.0f ms), retry_cnt %u, rnr_retry %u", qp->qp_num,
		 a.timeout, (double)(1ull << (a.timeout & 31)) * 4.096e-3, a.retry_cnt,
		 a.rnr_retry);
}

/* rdma_connect (client) or rdma_accept (server), then wait for ESTABLISHED. */
static int establish(struct rc_conn *c, bool client, const void *priv, uint8_t priv_len,
		     uint8_t initiator_depth, uint8_t responder_resources)
{
	const char *call = client ? "rdma_connect" : "rdma_accept";
	/* The retry counts: rdma-common.h explains them. A server's
	 * retry_count goes unused: its QP takes the client's. */
	struct rdma_conn_param param = { .private_data = priv,
					 .private_data_len = priv_len,
					 .initiator_depth = initiator_depth,
					 .responder_resources = responder_resources,
					 .retry_count = c->retry_count,
					 .rnr_retry_count = RC_RNR_RETRY_COUNT };
	uint8_t t = c->ack_timeout;
	int ret;

	/* The local ACK timeout (rdma-common.h explains the value): rdma_cm
	 * applies it when it moves the QP to RTS. */
	if (rdma_set_option(c->id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &t, sizeof(t)))
		return rc_fail_call(&c->log, "rdma_set_option(ACK_TIMEOUT)", errno, NULL);
	rc_trace(&c->log, "%s%s%s", call, client ? " to " : "", client ? c->peer : "");
	if (client ? rdma_connect(c->id, &param) : rdma_accept(c->id, &param))
		return rc_fail(&c->log, errno, "%s: %s", call, strerror(errno));
	ret = wait_cm_event(c, RDMA_CM_EVENT_ESTABLISHED, client ? "connecting" : "accepting");
	if (!ret)
		rc_trace_retry(&c->log, c->qp);
	return ret;
}

int rc_client_connect(struct rc_conn *c, const void *priv, uint8_t priv_len,
		      uint8_t initiator_depth, uint8_t responder_resources)
{
	if (priv_len > 56)
		return rc_fail(&c->log, EINVAL, "connect private data is %u bytes, at most 56 fit",
			       priv_len);
	return establish(c, true, priv, priv_len, initiator_depth, responder_resources);
}

int rc_accept(struct rc_conn *c, uint8_t initiator_depth, uint8_t responder_resources)
{
	return establish(c, false, NULL, 0, initiator_depth, responder_resources);
}

uint8_t rc_reject_pack(uint8_t buf[RC_REJECT_MAX], const char *reason)
{
	size_t n = strnlen(reason, RC_REJECT_MAX - sizeof(struct rc_hdr));

	rc_hdr_pack(buf, RC_T_REJECT, (uint32_t)n, 0);
	memcpy(buf + sizeof(struct rc_hdr), reason, n);
	return (uint8_t)(sizeof(struct rc_hdr) + n);
}

int rc_reject_id(struct rdma_cm_id *id, const char *reason)
{
	uint8_t priv[RC_REJECT_MAX];

	/* A REJECT message in the private data: the client prints it. */
	return rdma_reject(id, priv, rc_reject_pack(priv, reason)) ? -errno : 0;
}

int rc_reject(struct rc_conn *c, const char *reason)
{
	int ret;

	rc_trace(&c->log, "rdma_reject: %s", reason);
	ret = rc_reject_id(c->id, reason);
	return ret ? rc_fail_call(&c->log, "rdma_reject", -ret, NULL) : 0;
}

int rc_disconnect(struct rc_conn *c)
{
	int ret;

	if (!c->established || c->local_disconnected)
		return 0;
	c->local_disconnected = true;
	rc_trace(&c->log, "rdma_disconnect");
	/* Moves the QP to the error state (posted receives flush) and tells
	 * the peer. */
	if (rdma_disconnect(c->id))
		return rc_fail(&c->log, errno, "rdma_disconnect: %s", strerror(errno));
	if (c->peer_disconnected)
		return 0;
	ret = wait_cm_event(c, RDMA_CM_EVENT_DISCONNECTED, "disconnecting");
	if (ret == 0)
		c->peer_disconnected = true;
	return ret;
}

void rc_conn_destroy(struct rc_conn *c)
{
	struct rc_buf *b;

	/* Reverse order of creation. */
	if (c->id && c->established && !c->local_disconnected) {
		c->local_disconnected = true;
		rdma_disconnect(c->id);
	}
	if (c->qp) {
		rdma_destroy_qp(c->id); /* first: nothing may use the MRs now */
		c->qp = NULL;
	}
	while ((b = c->bufs)) {
		c->bufs = b->next;
		ibv_dereg_mr(b->mr);
		free(b->addr);
		free(b);
	}
	if (c->dev.cq)
		ibv_destroy_cq(c->dev.cq);
	if (c->dev.channel)
		ibv_destroy_comp_channel(c->dev.channel);
	if (c->dev.pd)
		ibv_dealloc_pd(c->dev.pd);
	memset(&c->dev, 0, sizeof(c->dev));
	if (c->id)
		rdma_destroy_id(c->id);
	c->id = NULL;
	if (c->cm_channel)
		rdma_destroy_event_channel(c->cm_channel);
	c->cm_channel = NULL;
}
