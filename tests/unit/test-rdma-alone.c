// SPDX-License-Identifier: MIT
/*
 * Built from common/rdma-common.c alone (no other common/ file): the RDMA
 * part of common/ is what a service copies, so it must link on its own.
 * If rdma-common.c ever calls into rc-opts, rc-server or rc-json, this
 * program no longer links and `make unit` fails. It also tests the waits'
 * error paths that need no RDMA device, with a stand-in CQ.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>

#include <cmocka.h>

#include "rdma-common.h"

/* Every function rdma-common.h declares: taking its address makes the
 * linker find it in rdma-common.o. */
static void every_function_links(void **state)
{
	void (*const fns[])(void) = {
		(void (*)(void))rc_log_init,
		(void (*)(void))rc_trace,
		(void (*)(void))rc_fail,
		(void (*)(void))rc_now_us,
		(void (*)(void))rc_now_ns,
		(void (*)(void))rc_hdr_pack,
		(void (*)(void))rc_hdr_unpack,
		(void (*)(void))rc_priv_unpack,
		(void (*)(void))rc_remote_buf_pack,
		(void (*)(void))rc_remote_buf_unpack,
		(void (*)(void))rc_remote_range_ok,
		(void (*)(void))rc_conn_init,
		(void (*)(void))rc_client_resolve,
		(void (*)(void))rc_create_qp,
		(void (*)(void))rc_buf_alloc,
		(void (*)(void))rc_post_recv,
		(void (*)(void))rc_post_send,
		(void (*)(void))rc_post_rdma,
		(void (*)(void))rc_post_send_list,
		(void (*)(void))rc_client_connect,
		(void (*)(void))rc_accept,
		(void (*)(void))rc_reject,
		(void (*)(void))rc_next_wc,
		(void (*)(void))rc_unexpected_wc,
		(void (*)(void))rc_disconnect,
		(void (*)(void))rc_conn_destroy,
		(void (*)(void))rc_wc_opcode_str,
		(void (*)(void))rc_wc_status_hint,
		(void (*)(void))rc_cm_event_hint,
		(void (*)(void))rc_wait_readable,
		(void (*)(void))rc_create_cm_channel,
		(void (*)(void))rc_take_cm_event,
		(void (*)(void))rc_format_addr,
		(void (*)(void))rc_reject_id,
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
		assert_non_null(fns[i]);
}

static void wait_readable_refuses_too_many_fds(void **state)
{
	int fds[5] = { -1, -1, -1, -1, -1 };

	(void)state;
	assert_int_equal(rc_wait_readable(fds, 5, 0), -EINVAL);
	/* All skipped: nothing can become readable, so "just look" times out. */
	assert_int_equal(rc_wait_readable(fds, 4, 0), -ETIMEDOUT);
}

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

/*
 * rc_next_wc with a CQ that stays empty and a poll() that fails: with
 * RLIMIT_NOFILE below the number of fds, poll() fails with EINVAL. The
 * message must name that errno, in both waiting modes (busy polling once
 * shifted the error like an fd index and named errno 21, EISDIR).
 */
static void next_wc_names_polls_errno(bool busy)
{
	struct ibv_context ctx = { 0 };
	struct ibv_cq cq = { 0 };
	struct ibv_comp_channel ch = { .fd = -1 };
	struct rdma_event_channel cm = { .fd = -1 };
	struct rc_conn c;
	struct rlimit old, low;
	struct ibv_wc wc;
	int ret;

	ctx.ops.poll_cq = empty_poll_cq;
	ctx.ops.req_notify_cq = notify_ok;
	cq.context = &ctx;
	rc_conn_init(&c, "test", false, 1000, -1);
	c.busy_poll = busy;
	c.dev.cq = &cq;
	c.dev.channel = &ch;
	c.cm_channel = &cm;

	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = 2; /* fewer than the 3 (busy) or 4 fds polled */
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	ret = rc_next_wc(&c, &wc);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);

	assert_int_equal(ret, -EINVAL);
	assert_string_equal(c.log.err, "poll: Invalid argument");
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_function_links),
		cmocka_unit_test(wait_readable_refuses_too_many_fds),
		cmocka_unit_test(next_wc_busy_names_polls_errno),
		cmocka_unit_test(next_wc_event_names_polls_errno),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
