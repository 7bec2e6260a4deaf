/* SPDX-License-Identifier: MIT */
/*
 * cq-stub.h - for test-rdma-alone.c and test-rdma-counters.c: a
 * connection on a stand-in CQ that never has a completion, to run
 * rc_next_wc's waits without an RDMA device. The includer defines
 * CQ_STUB_HOOKS: the connection's link_hooks (NULL, or &rc_link_counters).
 */
#ifndef CQ_STUB_H
#define CQ_STUB_H

#include <string.h>
#include <sys/resource.h>

#include "rdma-common.h"

/* A stand-in for a device's CQ: never has a completion. */
static int empty_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	(void)cq;
	(void)n;
	(void)wc;
	return 0;
}

static int notify_ok(struct ibv_cq *cq, int solicited_only)
{
	(void)cq;
	(void)solicited_only;
	return 0;
}

/* A connection on a stand-in CQ that stays empty, with no fds to wake it. */
struct empty_cq_conn {
	struct ibv_context ctx;
	struct ibv_cq cq;
	struct ibv_comp_channel ch;
	struct rdma_event_channel cm;
	struct rc_conn c;
};

static void empty_cq_conn_init(struct empty_cq_conn *e, bool busy, int timeout_ms)
{
	memset(e, 0, sizeof(*e));
	e->ch.fd = -1;
	e->cm.fd = -1;
	e->ctx.ops.poll_cq = empty_poll_cq;
	e->ctx.ops.req_notify_cq = notify_ok;
	e->cq.context = &e->ctx;
	rc_conn_init(&e->c, "test", false, timeout_ms, -1);
	e->c.poll_mode = busy ? RC_POLL_BUSY : RC_POLL_EVENT;
	e->c.dev.cq = &e->cq;
	e->c.dev.channel = &e->ch;
	e->c.link_hooks = CQ_STUB_HOOKS;
}

/*
 * rc_next_wc with a CQ that stays empty and a poll() that fails: with
 * RLIMIT_NOFILE below the number of fds, poll() fails with EINVAL. The
 * message must name that errno, in both waiting modes (busy polling once
 * shifted the error like an fd index and named errno 21, EISDIR).
 */
static void next_wc_names_polls_errno(bool busy)
{
	struct empty_cq_conn e;
	struct rc_conn *c = &e.c;
	struct rlimit old, low;
	struct ibv_wc wc;
	int ret;

	empty_cq_conn_init(&e, busy, 1000);

	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = 2; /* fewer than the 3 (busy) or 4 fds polled */
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	ret = rc_next_wc(c, &wc);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);

	assert_int_equal(ret, -EINVAL);
	assert_string_equal(c->log.err, "poll: Invalid argument");
}

static void next_wc_busy_names_polls_errno(void **state)
{
	(void)state;
	next_wc_names_polls_errno(true);
}

static void next_wc_event_names_polls_errno(void **state)
{
	(void)state;
	next_wc_names_polls_errno(false);
}

#endif /* CQ_STUB_H */
