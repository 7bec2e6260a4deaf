// SPDX-License-Identifier: MIT
/*
 * 01's --inject lessons. The client does on purpose a thing a newcomer may
 * believe works (or fails) otherwise, and prints what the verbs and the
 * completion queue really said, how long it took, and why; the server does
 * its part (the HELLO's lesson byte says which). Each prints what it saw,
 * not what it expected: where a kernel or NIC behaves otherwise, the
 * output says so, and the lesson exits 1 instead of BASIC_EXIT_LESSON (4).
 *
 * Like the rest of 01, these call the verbs themselves; the names they
 * print and the QP's state come from common/rc-lessons.c, as in 02's.
 */
#define _GNU_SOURCE
#include "lessons.h"
#include "rc-counters.h" /* rc_kernel_release */
#include "rc-lessons.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WR_LESSON 1 /* the lesson's SEND; sq-overflow: WR_LESSON + i */

/* ------------------------------------------------------------------ */
/* What both sides print                                               */
/* ------------------------------------------------------------------ */

/* The RNR NAK timer codes of the InfiniBand spec (IB_RNR_TIMER_* in the
 * kernel), in units of 10 us: code 0 is the longest, 655.36 ms. */
static const uint32_t rnr_timer_10us[32] = {
	65536, 1,    2,	   3,	 4,    6,     8,     12,    16,	   24,	  32,
	48,    64,   96,   128,	 192,  256,   384,   512,   768,   1024,  1536,
	2048,  3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152,
};

static double rnr_timer_ms(uint8_t code)
{
	return rnr_timer_10us[code & 31] / 100.0;
}

/* A counter of this id's device and port (rdma_rxe and most RDMA drivers
 * have them; names differ between drivers). 1 and *val, or 0 if missing. */
static int read_counter(const struct lesson_conn *v, const char *name, uint64_t *val)
{
	char path[256];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/%u/hw_counters/%s",
		 ibv_get_device_name(v->id->verbs->device), v->id->port_num, name);
	f = fopen(path, "r");
	if (!f)
		return 0;
	ok = fscanf(f, "%" SCNu64, val) == 1;
	fclose(f);
	return ok;
}

/* It showed what it teaches: the verdict on stdout; 0 for main. */
static int shown(unsigned lesson, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int shown(unsigned lesson, const char *fmt, ...)
{
	char saw[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(saw, sizeof(saw), fmt, ap);
	va_end(ap);
	printf("lesson %s: shown (%s)\n", basic_inject_name(lesson), saw);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Client: no-recv                                                     */
/* ------------------------------------------------------------------ */

/* The counters that tell the story, before and after. */
struct rnr_counters {
	const char *name, *what;
	uint64_t before, after;
	int have;
};

static void counters_print(struct lesson_conn *v, struct rnr_counters *c, unsigned n)
{
	unsigned i;

	printf("hw_counters of %s port %u (they count every QP of the device):\n",
	       ibv_get_device_name(v->id->verbs->device), v->id->port_num);
	for (i = 0; i < n; i++) {
		if (c[i].have && read_counter(v, c[i].name, &c[i].after))
			printf("  %-22s +%" PRIu64 "  %s\n", c[i].name, c[i].after - c[i].before,
			       c[i].what);
		else
			printf("  %-22s not found on this kernel and device\n", c[i].name);
	}
}

/* Each completion until the SEND's and our receive's are in (the receive
 * is flushed once the QP is in the error state). 0 with *send_status, or
 * a negative errno. */
static int watch_send(struct lesson_conn *v, uint64_t t0, int *send_status, double *send_ms)
{
	bool recv_seen = false;
	char kernel[65];
	struct ibv_wc wc;
	double ms;
	int ret;

	*send_status = -1;
	while (*send_status < 0 || !recv_seen) {
		ret = v->next_wc(v->side, &wc);
		if (ret == -ETIMEDOUT && *send_status >= 0) {
			printf("our receive for the reply was not flushed within %d ms (Linux "
			       "%s)\n",
			       v->timeout_ms, rc_kernel_release(kernel, sizeof(kernel)));
			return 0;
		}
		if (ret && ret != -EIO)
			return ret; /* no completion at all within --timeout */
		ms = (double)(rc_now_ns() - t0) / 1e6;
		printf("completion of wr_id %" PRIu64 " (%s): %s (%s) after %.1f ms\n", wc.wr_id,
		       wc.wr_id == WR_LESSON ? "the SEND" : "our receive for the reply",
		       rc_wc_status_name(wc.status), ibv_wc_status_str(wc.status), ms);
		if (wc.wr_id == WR_LESSON) {
			*send_status = wc.status;
			*send_ms = ms;
		} else {
			recv_seen = true;
		}
	}
	return 0;
}

/* One signalled SEND of the message packed in v->buf (header + SIZE
 * bytes), wr_id WR_LESSON: what both client lessons send. */
static int post_message(struct lesson_conn *v, uint32_t size)
{
	struct ibv_sge sge = { (uintptr_t)v->buf, (uint32_t)sizeof(struct rc_hdr) + size,
			       v->mr->lkey };
	struct ibv_send_wr *bad, wr = { .wr_id = WR_LESSON,
					.sg_list = &sge,
					.num_sge = 1,
					.opcode = IBV_WR_SEND,
					.send_flags = IBV_SEND_SIGNALED };
	int ret = ibv_post_send(v->id->qp, &wr, &bad);

	return ret ? rc_fail_call(v->log, "ibv_post_send", ret, NULL) : 0;
}

/* --inject no-recv: a SEND that finds no receive. */
static int lesson_no_recv(struct lesson_conn *v, uint32_t size)
{
	struct rnr_counters c[] = {
		{ "rcvd_rnr_err", "RNR NAKs received: our QP's SEND was refused", 0, 0, 0 },
		{ "send_rnr_err", "RNR NAKs sent (by the server's QP, if it is on this device)", 0,
		  0, 0 },
		{ "retry_rnr_exceeded_err", "SENDs given up after the last RNR retry", 0, 0, 0 },
	};
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a;
	enum ibv_qp_state st;
	double ms = 0;
	unsigned i, n = sizeof(c) / sizeof(c[0]);
	int ret, status;
	uint64_t t0;

	if (ibv_query_qp(v->id->qp, &a, IBV_QP_RNR_RETRY, &init))
		return rc_fail_call(v->log, "ibv_query_qp", errno, NULL);
	printf("inject no-recv: the server accepted without posting a receive, and gave our\n"
	       "QP rnr_retry %u (the CM sets it from the server's rdma_accept). Now one SEND of\n"
	       "%u bytes; we wait up to %d ms for its completion.\n",
	       a.rnr_retry, (uint32_t)sizeof(struct rc_hdr) + size, v->timeout_ms);
	for (i = 0; i < n; i++)
		c[i].have = read_counter(v, c[i].name, &c[i].before);
	basic_data_pack(v->buf, 0, NULL, size);
	t0 = rc_now_ns();
	/* The lesson: the server has no receive for this. */
	ret = post_message(v, size);
	if (ret)
		return ret;
	ret = watch_send(v, t0, &status, &ms);
	if (ret)
		return ret;
	st = rc_qp_state(v->id->qp);
	printf("our QP is now in state %s\n", rc_qp_state_name(st));
	counters_print(v, c, n);
	if (status != IBV_WC_RNR_RETRY_EXC_ERR)
		return rc_fail(v->log, EPROTO,
			       "--inject no-recv: not shown: expected IBV_WC_RNR_RETRY_EXC_ERR for "
			       "the SEND, saw %s",
			       rc_wc_status_name(status));
	printf("\nWhat happened: the SEND reached the server's QP while its receive queue\n"
	       "was empty. A SEND consumes a receive the peer posted; with none there, the\n"
	       "responder answers \"receiver not ready\" (an RNR NAK), and our NIC waits for\n"
	       "the time the NAK names (the server's QP's min_rnr_timer) and sends again.\n"
	       "After %u retries it gave up: the SEND failed with IBV_WC_RNR_RETRY_EXC_ERR\n"
	       "%.1f ms after it was posted",
	       a.rnr_retry, ms);
	if (a.rnr_retry)
		printf(", about %.0f ms per retry", ms / a.rnr_retry);
	printf(",\n%s The server program never saw the message.\n",
	       st == IBV_QPS_ERR ? "and our QP went to the error state."
				 : "and our QP did not go to the error state.");
	printf("This is why a receive is posted before the peer can send: 01's server posts\n"
	       "its receives before rdma_accept, and its client posts the receive for the\n"
	       "reply before rdma_connect. rnr_retry_count 7 means retry for ever: a missing\n"
	       "receive then hangs the sender instead of failing it; 01 asks for %u.\n\n",
	       RC_RNR_RETRY_COUNT);
	return shown(BASIC_INJECT_NO_RECV, "IBV_WC_RNR_RETRY_EXC_ERR after %.1f ms, rnr_retry %u",
		     ms, a.rnr_retry);
}

/* ------------------------------------------------------------------ */
/* Client: sq-overflow                                                 */
/* ------------------------------------------------------------------ */

/* Take n completions of WRs first..first+n-1 of the chain, printing each;
 * 0 if every one succeeded, 1 if one did not, or a negative errno. */
static int take_sends(struct lesson_conn *v, unsigned first, unsigned n, uint64_t t0)
{
	struct ibv_wc wc;
	unsigned left = n;
	int ret, failed = 0;

	while (left) {
		ret = v->next_wc(v->side, &wc);
		if (ret && ret != -EIO)
			return ret;
		printf("completion of wr_id %" PRIu64 ": %s after %.3f ms\n", wc.wr_id,
		       rc_wc_status_name(wc.status), (double)(rc_now_ns() - t0) / 1e6);
		if (wc.wr_id >= WR_LESSON + first && wc.wr_id < WR_LESSON + first + n)
			left--;
		failed |= wc.status != IBV_WC_SUCCESS;
	}
	return failed;
}

/* --inject sq-overflow: one post of one SEND more than the send queue holds. */
static int lesson_sq_overflow(struct lesson_conn *v)
{
	struct ibv_send_wr *wrs, *bad = NULL;
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a;
	unsigned i, n, cap, queued;
	int ret, failed;
	double us;
	uint64_t t0;

	if (ibv_query_qp(v->id->qp, &a, IBV_QP_CAP, &init))
		return rc_fail_call(v->log, "ibv_query_qp", errno, NULL);
	cap = a.cap.max_send_wr;
	n = cap + 1;
	printf("inject sq-overflow: client.c asked rdma_create_qp for max_send_wr %u;\n"
	       "ibv_query_qp says our send queue holds %u. Now one ibv_post_send of a chain\n"
	       "of %u empty, signalled SENDs, without polling the CQ first.\n",
	       v->max_send_wr, cap, n);
	if (cap > (unsigned)v->id->qp->send_cq->cqe)
		return rc_fail(
			v->log, EPROTO,
			"--inject sq-overflow: not shown: the send queue holds %u, more than "
			"the CQ's %d entries can report",
			cap, v->id->qp->send_cq->cqe);
	wrs = calloc(n, sizeof(*wrs));
	if (!wrs)
		return rc_fail(v->log, ENOMEM, "out of memory");
	for (i = 0; i < n; i++) {
		/* No scatter list: a SEND of 0 bytes, into the server's empty receives. */
		wrs[i] = (struct ibv_send_wr){ .wr_id = WR_LESSON + i,
					       .opcode = IBV_WR_SEND,
					       .send_flags = IBV_SEND_SIGNALED,
					       .next = i + 1 < n ? &wrs[i + 1] : NULL };
	}
	t0 = rc_now_ns();
	/* The lesson: more WRs than the queue holds, in one call. */
	ret = ibv_post_send(v->id->qp, wrs, &bad);
	us = (double)(rc_now_ns() - t0) / 1e3;
	queued = bad ? (unsigned)(bad - wrs) : n;
	printf("ibv_post_send returned %d (%s) after %.1f us; bad_wr is %s%u: WRs 0 to %u\n"
	       "were queued, the rest were not\n",
	       ret, ret ? strerror(ret) : "success", us, bad ? "WR " : "NULL, queued ",
	       bad ? queued : n, queued ? queued - 1 : 0);
	/* The queued ones go on as if nothing happened. */
	failed = take_sends(v, 0, queued, t0);
	if (failed < 0) {
		free(wrs);
		return failed;
	}
	printf("our QP is in state %s\n", rc_qp_state_name(rc_qp_state(v->id->qp)));
	if (ret != ENOMEM || queued != cap || failed) {
		free(wrs);
		return rc_fail(v->log, EPROTO,
			       "--inject sq-overflow: not shown: expected ENOMEM at WR %u with the "
			       "WRs before it completing, saw %d (%s) at WR %u%s",
			       cap, ret, strerror(ret), queued,
			       failed ? ", and a failed completion" : "");
	}
	/* The refused WR, again, now that the queue has room. */
	wrs[queued].next = NULL;
	t0 = rc_now_ns();
	ret = ibv_post_send(v->id->qp, &wrs[queued], &bad);
	printf("after those completions, WR %u posted again: ibv_post_send returned %d after "
	       "%.1f us\n",
	       queued, ret, (double)(rc_now_ns() - t0) / 1e3);
	if (!ret && (ret = take_sends(v, queued, 1, t0)) > 0)
		ret = -EIO;
	free(wrs);
	if (ret)
		return ret < 0 ? ret : rc_fail(v->log, EIO, "the WR posted again failed");
	printf("\nWhat happened: ibv_post_send only queues work requests. With the send\n"
	       "queue full it refused the rest at once, waiting for nothing: it returned\n"
	       "ENOMEM (\"%s\") and set bad_wr to the first WR it did not\n"
	       "queue. (Each call's time includes ringing the doorbell for what it queued.)\n"
	       "Nothing was sent for that WR, and the connection is unharmed: the WRs\n"
	       "before it completed with IBV_WC_SUCCESS and the QP stayed in RTS. It is\n"
	       "not a completion error like IBV_WC_RETRY_EXC_ERR, which comes from the CQ\n"
	       "later and moves the QP to the error state. The queue holds %u here, not\n"
	       "the %u that was asked for: a driver may round max_send_wr up, and\n"
	       "rdma_create_qp's cap (or ibv_query_qp) says what you got. A slot is free\n"
	       "again once its WR has completed: count the WRs in flight and poll\n"
	       "completions before posting more.\n\n",
	       strerror(ENOMEM), cap, v->max_send_wr);
	return shown(BASIC_INJECT_SQ_OVERFLOW,
		     "ENOMEM after %.1f us at WR %u of %u; the %u queued SENDs completed", us, cap,
		     n, cap);
}

/* ------------------------------------------------------------------ */
/* Client: arm-late                                                    */
/* ------------------------------------------------------------------ */

/* How long the reply gets to land before we arm: a round trip takes a few
 * us on a NIC, a median of 34 to 309 us on Soft-RoCE in our VMs (6.1 to
 * 7.3), rarely over 20 ms: 50 ms is after it (if not, we say so). */
#define ARM_LATE_SETTLE_US 50000
/* The sleep that no event ends: --timeout, but at most 2 s. */
#define ARM_LATE_WAIT_MS 2000

uint8_t lesson_hello_byte(unsigned lesson)
{
	return lesson == BASIC_INJECT_ARM_LATE ? 0 : (uint8_t)lesson;
}

static int lesson_arm_late(struct lesson_conn *v, const char *text, uint32_t size)
{
	struct ibv_cq *cq = v->id->qp->recv_cq, *ev_cq;
	struct ibv_comp_channel *ch = cq->channel;
	int wait_ms = v->timeout_ms < ARM_LATE_WAIT_MS ? v->timeout_ms : ARM_LATE_WAIT_MS;
	struct ibv_wc wc[4];
	uint64_t t0;
	void *ev_ctx;
	char kernel[64];
	int n, ret;

	printf("Posting a SEND and not polling for %d ms: the server's reply lands in\n"
	       "the CQ meanwhile. Then the wrong adaptive wait: arm the CQ\n"
	       "(ibv_req_notify_cq) and sleep on the completion channel at once,\n"
	       "without polling once more; waiting up to %d ms for an event.\n",
	       ARM_LATE_SETTLE_US / 1000, wait_ms);
	basic_data_pack(v->buf, 0, text, size);
	/* The message; the server echoes it into the receive setup posted. */
	ret = post_message(v, size);
	if (ret)
		return ret;
	usleep(ARM_LATE_SETTLE_US);
	/* The mistake: an event only for completions added after this call. */
	if (ibv_req_notify_cq(cq, 0))
		return rc_fail_call(v->log, "ibv_req_notify_cq", errno, NULL);
	t0 = rc_now_us();
	ret = rc_wait_readable(&ch->fd, 1, t0 + (uint64_t)wait_ms * 1000u);
	if (ret < 0 && ret != -ETIMEDOUT)
		return rc_fail(v->log, -ret, "poll on the completion channel: %s", strerror(-ret));
	/* Takes the event, if one came, and acknowledges it (ibv_destroy_cq waits). */
	if (ret == 0 && ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == 0)
		ibv_ack_cq_events(ev_cq, 1);
	printf("After %.1f ms: %s.\n", (double)(rc_now_us() - t0) / 1000.0,
	       ret == 0 ? "an event came" : "no event came, the wait timed out");
	/* The one poll the wait left out: what was in the CQ all along. */
	n = ibv_poll_cq(cq, 4, wc);
	if (n < 0)
		return rc_fail(v->log, EIO, "ibv_poll_cq failed (%d)", n);
	for (int i = 0; i < n; i++)
		printf("  then polled: %s %s wr_id=%" PRIu64 "\n", rc_wc_opcode_str(wc[i].opcode),
		       ibv_wc_status_str(wc[i].status), wc[i].wr_id);
	if (ret == 0 || n < 2)
		return rc_fail(v->log, EPROTO,
			       "%s, and %d completion(s) were in the CQ afterwards: not the race "
			       "this lesson shows (kernel %s)",
			       ret == 0
				       ? "an event came: a completion was added after the arm (the "
					 "reply was slower than the settle time here), or this "
					 "device signals completions already queued"
				       : "the wait timed out",
			       n, rc_kernel_release(kernel, sizeof(kernel)));
	printf("\nWhat happened: ibv_req_notify_cq asks for an event on the next\n"
	       "completion added to the CQ, not for those already in it. The reply and\n"
	       "the SEND's completion were there before the arm, so no event came, and\n"
	       "a wait that sleeps right after arming sleeps until its timeout (or for\n"
	       "ever). The fix, as every wait here does (next_wc, rc_next_wc): arm, then\n"
	       "poll once more before sleeping.\n\n");
	return shown(BASIC_INJECT_ARM_LATE,
		     "armed after the completion arrived and did not poll again: no event in %d "
		     "ms, %d completions were in the CQ all along; fix: arm, then poll once "
		     "more before sleeping",
		     wait_ms, n);
}

int lesson_client_run(const struct client_opts *o, unsigned max_send_wr, struct rdma_cm_id *id,
		      struct ibv_mr *mr, struct rc_log *log, lesson_next_wc_fn *next_wc, void *side)
{
	struct lesson_conn v = { .id = id,
				 .buf = mr->addr,
				 .mr = mr,
				 .log = log,
				 .timeout_ms = o->rc.timeout_ms,
				 .max_send_wr = max_send_wr,
				 .next_wc = next_wc,
				 .side = side };

	switch (o->inject) {
	case BASIC_INJECT_NO_RECV: return lesson_no_recv(&v, o->size);
	case BASIC_INJECT_SQ_OVERFLOW: return lesson_sq_overflow(&v);
	case BASIC_INJECT_ARM_LATE: return lesson_arm_late(&v, o->text, o->size);
	default: return rc_fail(log, EINVAL, "no lesson %u", o->inject);
	}
}

/* ------------------------------------------------------------------ */
/* Server                                                              */
/* ------------------------------------------------------------------ */

uint8_t lesson_server_rnr_retry(unsigned lesson)
{
	return lesson == BASIC_INJECT_NO_RECV ? LESSON_RNR_RETRY : RC_RNR_RETRY_COUNT;
}

/* A receive with no memory: it takes a SEND of 0 bytes. */
static int post_empty_recv(struct lesson_conn *v)
{
	struct ibv_recv_wr wr = { .wr_id = 0 }, *bad;
	int ret = ibv_post_recv(v->id->qp, &wr, &bad);

	return ret ? rc_fail_call(v->log, "ibv_post_recv", ret, NULL) : 0;
}

int lesson_server_setup(struct lesson_server *ls, struct rdma_cm_id *id, struct rc_log *log,
			const char *peer)
{
	struct lesson_conn *v = &ls->v;
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a;
	unsigned i;

	*v = (struct lesson_conn){ .id = id, .log = log };
	ls->peer = peer;
	if (ls->lesson == BASIC_INJECT_NO_RECV) {
		/* The lesson: no receive before accepting (nor after). */
		ls->have_rnr = read_counter(v, "send_rnr_err", &ls->rnr_sent0);
		return 0;
	}
	/* sq-overflow: as many empty receives as the receive queue holds. */
	if (ibv_query_qp(v->id->qp, &a, IBV_QP_CAP, &init))
		return rc_fail_call(v->log, "ibv_query_qp", errno, NULL);
	for (i = 0; i < a.cap.max_recv_wr; i++)
		if (post_empty_recv(v))
			return -EIO;
	ls->posted = i;
	return 0;
}

/* no-recv: no receive, only the wait for the client to leave. */
static int server_no_recv(struct lesson_server *ls)
{
	struct lesson_conn *v = &ls->v;
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a;
	struct ibv_wc wc;
	uint64_t now;
	int ret;

	if (ibv_query_qp(v->id->qp, &a, IBV_QP_MIN_RNR_TIMER, &init))
		return rc_fail_call(v->log, "ibv_query_qp", errno, NULL);
	printf("lesson no-recv for %s: accepted with no receive posted and rnr_retry_count %u\n"
	       "for its QP; our QP's min_rnr_timer is %u (RNR NAKs ask for a wait of %.2f ms)\n",
	       ls->peer, LESSON_RNR_RETRY, a.min_rnr_timer, rnr_timer_ms(a.min_rnr_timer));
	ret = v->next_wc(v->side, &wc);
	if (ret == 0 || ret == -EIO)
		return rc_fail(v->log, EPROTO,
			       "lesson no-recv: a completion with no receive posted");
	if (ret != -ECONNRESET) /* else the client has left */
		return ret;
	if (ls->have_rnr && read_counter(v, "send_rnr_err", &now))
		printf("lesson no-recv for %s: the client left; send_rnr_err of %s port %u rose by "
		       "%" PRIu64 " meanwhile (RNR NAKs sent by this device's QPs)\n",
		       ls->peer, ibv_get_device_name(v->id->verbs->device), v->id->port_num,
		       now - ls->rnr_sent0);
	else
		printf("lesson no-recv for %s: the client left (this device has no send_rnr_err "
		       "counter)\n",
		       ls->peer);
	return 0;
}

/* sq-overflow: take the empty SENDs and post each receive again. */
static int server_sq_overflow(struct lesson_server *ls)
{
	struct lesson_conn *v = &ls->v;
	struct ibv_wc wc;
	int ret;

	printf("lesson sq-overflow for %s: %u empty receives posted; taking empty SENDs\n",
	       ls->peer, ls->posted);
	while (!(ret = v->next_wc(v->side, &wc))) {
		if (wc.opcode != IBV_WC_RECV || wc.byte_len)
			return rc_fail(
				v->log, EPROTO,
				"lesson sq-overflow: expected empty SENDs, got %s of %u bytes",
				rc_wc_opcode_str(wc.opcode), wc.byte_len);
		ls->took++;
		if (post_empty_recv(v))
			return -EIO;
	}
	if (ret != -ECONNRESET) /* else the client has left */
		return ret;
	printf("lesson sq-overflow for %s: the client left after %u empty SENDs\n", ls->peer,
	       ls->took);
	return 0;
}

int lesson_server_run(struct lesson_server *ls, lesson_next_wc_fn *next_wc, void *side)
{
	ls->v.next_wc = next_wc;
	ls->v.side = side;
	return ls->lesson == BASIC_INJECT_NO_RECV ? server_no_recv(ls) : server_sq_overflow(ls);
}
