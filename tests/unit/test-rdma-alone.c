// SPDX-License-Identifier: MIT
/*
 * test-rdma-alone is built from the set rdma-common.h names (common/
 * rdma-*.c) alone, no other common/ file: it is what a service copies, so
 * it must link on its own; if it ever calls into rc-counters, rc-opts,
 * rc-server or rc-json, it no longer links and `make unit` fails. It tests
 * what needs no RDMA device: the waits' error paths with a stand-in CQ
 * (cq-stub.h) and their plain behaviour (no c->link_hooks), the channel
 * rule's connection without a CM channel of its own, what a connection
 * records of its CM events, and receive-and-validate.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#define CQ_STUB_HOOKS NULL /* plain waits: no rc-counters */
#include "cq-stub.h"

/* Every function the set's headers declare (tests/check-set compares them
 * with the set's definitions; `nm -g build/common/rdma-*.o` lists the
 * same): taking its address makes the linker find it in the set, and in
 * nothing else. */
static void every_function_links(void **state)
{
	void (*const fns[])(void) = {
		(void (*)(void))rc_accept,
		(void (*)(void))rc_accept_start,
		(void (*)(void))rc_buf_alloc,
		(void (*)(void))rc_call_hint,
		(void (*)(void))rc_client_connect,
		(void (*)(void))rc_client_resolve,
		(void (*)(void))rc_cm_event_hint,
		(void (*)(void))rc_conn_cm_event,
		(void (*)(void))rc_conn_destroy,
		(void (*)(void))rc_conn_init,
		(void (*)(void))rc_conn_wait_cm_event,
		(void (*)(void))rc_connect_start,
		(void (*)(void))rc_create_cm_channel,
		(void (*)(void))rc_create_qp,
		(void (*)(void))rc_create_qp_on,
		(void (*)(void))rc_device_async_event,
		(void (*)(void))rc_device_close,
		(void (*)(void))rc_device_cq_events,
		(void (*)(void))rc_device_open,
		(void (*)(void))rc_device_poll,
		(void (*)(void))rc_device_query,
		(void (*)(void))rc_disconnect,
		(void (*)(void))rc_fail,
		(void (*)(void))rc_fail_call,
		(void (*)(void))rc_format_addr,
		(void (*)(void))rc_hdr_pack,
		(void (*)(void))rc_hdr_unpack,
		(void (*)(void))rc_listen,
		(void (*)(void))rc_listener_close,
		(void (*)(void))rc_log_init,
		(void (*)(void))rc_mem_dereg,
		(void (*)(void))rc_mem_reg,
		(void (*)(void))rc_msg_expect,
		(void (*)(void))rc_mw_alloc,
		(void (*)(void))rc_mw_bind,
		(void (*)(void))rc_mw_dealloc,
		(void (*)(void))rc_mw_invalidate,
		(void (*)(void))rc_next_wc,
		(void (*)(void))rc_now_ns,
		(void (*)(void))rc_now_us,
		(void (*)(void))rc_post_rdma,
		(void (*)(void))rc_post_recv,
		(void (*)(void))rc_post_send,
		(void (*)(void))rc_post_send_list,
		(void (*)(void))rc_post_srq_recv,
		(void (*)(void))rc_priv_unpack,
		(void (*)(void))rc_recv_expect,
		(void (*)(void))rc_reject,
		(void (*)(void))rc_reject_id,
		(void (*)(void))rc_reject_pack,
		(void (*)(void))rc_remote_buf_pack,
		(void (*)(void))rc_remote_buf_unpack,
		(void (*)(void))rc_remote_range_ok,
		(void (*)(void))rc_srq_arm_limit,
		(void (*)(void))rc_take_cm_event,
		(void (*)(void))rc_take_request,
		(void (*)(void))rc_trace,
		(void (*)(void))rc_trace_retry,
		(void (*)(void))rc_unexpected_wc,
		(void (*)(void))rc_wait_cm_event,
		(void (*)(void))rc_wait_cq,
		(void (*)(void))rc_wait_cq_cm,
		(void (*)(void))rc_wait_readable,
		(void (*)(void))rc_wc_check,
		(void (*)(void))rc_wc_opcode_str,
		(void (*)(void))rc_wc_status_hint,
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
/* No link_hooks: a wait ends after --timeout, with the plain message, in
 * both modes; a peer that disconnected is named as such. */
static void next_wc_plain_waits(void **state)
{
	struct empty_cq_conn e;
	struct ibv_wc wc;
	uint64_t t0, ms;

	(void)state;
	for (int busy = 0; busy < 2; busy++) {
		empty_cq_conn_init(&e, busy, 300);
		t0 = rc_now_us();
		assert_int_equal(rc_next_wc(&e.c, &wc), -ETIMEDOUT);
		ms = (rc_now_us() - t0) / 1000u;
		assert_true(ms >= 300 && ms < 1000);
		assert_string_equal(
			e.c.log.err,
			"no completion within 300 ms; hint: the peer stalled, or the link is down");
	}
	empty_cq_conn_init(&e, false, 300);
	e.c.peer_disconnected = true;
	assert_int_equal(rc_next_wc(&e.c, &wc), -ECONNRESET);
	assert_string_equal(e.c.log.err, "the peer disconnected; hint: the peer closed the "
					 "connection (or its process died)");
}

/* The REJECT message rc_reject_id sends: our header, the reason cut to fit. */
static void reject_message(void **state)
{
	uint8_t buf[RC_REJECT_MAX];
	char reason[300], why[64];
	struct rc_msg m;

	(void)state;
	assert_int_equal(rc_reject_pack(buf, "busy"), sizeof(struct rc_hdr) + 4);
	assert_int_equal(rc_hdr_unpack(buf, sizeof(struct rc_hdr) + 4, &m, why, sizeof(why)), 0);
	assert_true(m.type == RC_T_REJECT && m.length == 4 && !memcmp(m.body, "busy", 4));
	memset(reason, 'x', sizeof(reason) - 1);
	reason[sizeof(reason) - 1] = '\0';
	assert_int_equal(rc_reject_pack(buf, reason), RC_REJECT_MAX);
}
/* ---- Receive-and-validate (rdma-wire.h) ---- */

/* A message of `type` with a body of body_len zero bytes, number seq. */
static size_t make_msg(uint8_t *buf, uint8_t type, uint32_t body_len, uint32_t seq)
{
	memset(buf, 0, sizeof(struct rc_hdr) + body_len);
	rc_hdr_pack(buf, type, body_len, seq);
	return sizeof(struct rc_hdr) + body_len;
}

/* rc_msg_expect, wanting -EBADMSG with `why` in the reason. */
static void want_bad(const uint8_t *buf, size_t len, const struct rc_msg_kind *k, size_t n,
		     uint32_t seq, const char *why)
{
	char err[160] = "";
	struct rc_msg m;

	assert_int_equal(rc_msg_expect(buf, len, k, n, seq, &m, err, sizeof(err)), -EBADMSG);
	if (strcmp(err, why))
		fail_msg("reason '%s', not '%s'", err, why);
}

/* One kind without a name (02's messages): the words of 02's checks. */
static void msg_expect_one_kind(void **state)
{
	const struct rc_msg_kind done = { 0x22, 16, NULL };
	uint8_t buf[64];
	char err[160];
	struct rc_msg m;
	size_t n;

	(void)state;
	n = make_msg(buf, 0x22, 16, 1);
	assert_int_equal(rc_msg_expect(buf, n, &done, 1, 1, &m, err, sizeof(err)), 0);
	assert_true(m.type == 0x22 && m.length == 16 && m.seq == 1 && m.body == buf + 16);
	want_bad(buf, n, &done, 1, 2, "sequence number 1, expected 2");
	/* The length comes from the completion: a header that says more or
	 * less than arrived is refused before anything else. */
	want_bad(buf, n - 1, &done, 1, 1, "header says 16 body bytes, 15 arrived");
	want_bad(buf, 15, &done, 1, 1, "message of 15 bytes is shorter than the 16-byte header");
	n = make_msg(buf, 0x23, 16, 7);
	want_bad(buf, n, &done, 1, 1, "message type 0x23, expected 0x22");
	/* Type, then body length, then sequence number: the first that differs. */
	n = make_msg(buf, 0x22, 8, 7);
	want_bad(buf, n, &done, 1, 1, "message of type 0x22 has a 8-byte body, expected 16");
	buf[0] ^= 1;
	want_bad(buf, n, &done, 1, 1,
		 "bad magic 0x53444d58 (expected 0x52444d58): not one of our messages");
}

/* Several named kinds (03's messages): the words of 03's checks. */
static void msg_expect_named_kinds(void **state)
{
	const struct rc_msg_kind kinds[] = { { 0x31, 4, "REQUEST" }, { 0x36, 16, "DONE" } };
	uint8_t buf[64];
	char err[160];
	struct rc_msg m;
	size_t n;

	(void)state;
	n = make_msg(buf, 0x36, 16, 6);
	assert_int_equal(rc_msg_expect(buf, n, kinds, 2, 6, &m, err, sizeof(err)), 0);
	assert_int_equal(m.type, 0x36);
	n = make_msg(buf, 0x31, 4, 6);
	assert_int_equal(rc_msg_expect(buf, n, kinds, 2, 6, &m, err, sizeof(err)), 0);
	want_bad(buf, n, kinds, 2, 7, "REQUEST has sequence number 6, expected 7");
	n = make_msg(buf, 0x7e, 4, 6);
	want_bad(buf, n, kinds, 2, 6, "unexpected message type 0x7e");
	n = make_msg(buf, 0x36, 8, 5);
	want_bad(buf, n, kinds, 2, 6, "DONE of 8 body bytes, expected 16");
	/* No kind at all: every type is unexpected. */
	want_bad(buf, n, kinds, 0, 6, "unexpected message type 0x36");
}

/* rc_recv_expect: the completion first (a success, a RECV, within the
 * buffer posted), then the message. */
static void recv_expect_checks_the_completion(void **state)
{
	const struct rc_msg_kind k = { 0x22, 8, "DONE" };
	struct ibv_wc wc = { .wr_id = 9, .status = IBV_WC_SUCCESS, .opcode = IBV_WC_RECV };
	uint8_t buf[64];
	char err[160];
	struct rc_msg m;

	(void)state;
	wc.byte_len = (uint32_t)make_msg(buf, 0x22, 8, 3);
	assert_int_equal(rc_recv_expect(&wc, buf, sizeof(buf), &k, 1, 3, &m, err, sizeof(err)), 0);
	assert_true(m.length == 8 && m.body == buf + 16);
	assert_int_equal(rc_recv_expect(&wc, buf, 23, &k, 1, 3, &m, err, sizeof(err)), -EPROTO);
	assert_string_equal(err, "24 bytes received into a buffer of 23");
	wc.byte_len = 20;
	assert_int_equal(rc_recv_expect(&wc, buf, sizeof(buf), &k, 1, 3, &m, err, sizeof(err)),
			 -EBADMSG);
	assert_string_equal(err, "header says 8 body bytes, 4 arrived");
	wc.opcode = IBV_WC_SEND;
	assert_int_equal(rc_recv_expect(&wc, buf, sizeof(buf), &k, 1, 3, &m, err, sizeof(err)),
			 -EPROTO);
	assert_string_equal(err, "completion of work request 9 is a SEND, not a message");
	wc.status = IBV_WC_WR_FLUSH_ERR;
	assert_int_equal(rc_recv_expect(&wc, buf, sizeof(buf), &k, 1, 3, &m, err, sizeof(err)),
			 -EPROTO);
	assert_string_equal(err, "work request 9 failed: Work Request Flushed Error");
	/* rc_wc_is: a success, of that wr_id and kind. */
	wc = (struct ibv_wc){ .wr_id = 9, .status = IBV_WC_SUCCESS, .opcode = IBV_WC_RECV };
	assert_true(rc_wc_is(&wc, 9, IBV_WC_RECV));
	assert_false(rc_wc_is(&wc, 8, IBV_WC_RECV));
	assert_false(rc_wc_is(&wc, 9, IBV_WC_SEND));
	wc.status = IBV_WC_WR_FLUSH_ERR;
	assert_false(rc_wc_is(&wc, 9, IBV_WC_RECV));
}

/* ---- A connection's CM events, and the channel rule ---- */

/* Whatever was expected, a connection records ESTABLISHED and
 * DISCONNECTED: rc_disconnect then waits for no second DISCONNECTED. */
static void conn_records_its_cm_events(void **state)
{
	struct rc_cm_info in = { .event = RDMA_CM_EVENT_ESTABLISHED };
	struct rc_conn c;

	(void)state;
	rc_conn_init(&c, "test", false, 300, -1);
	snprintf(c.peer, sizeof(c.peer), "10.0.0.2 port 7");
	assert_int_equal(rc_conn_cm_event(&c, &in), 0);
	assert_true(c.established && !c.peer_disconnected);
	in.event = RDMA_CM_EVENT_DISCONNECTED;
	assert_int_equal(rc_conn_cm_event(&c, &in), 0);
	assert_true(c.peer_disconnected);
	in.event = RDMA_CM_EVENT_TIMEWAIT_EXIT;
	assert_int_equal(rc_conn_cm_event(&c, &in), 0);
	/* An event that ends a connection is an error, with the server's
	 * reason where a REJECT message carries one. */
	rc_conn_init(&c, "test", false, 300, -1);
	snprintf(c.peer, sizeof(c.peer), "10.0.0.2 port 7");
	in = (struct rc_cm_info){ .event = RDMA_CM_EVENT_REJECTED, .status = 28 };
	in.priv_len = rc_reject_pack(in.priv, "server busy");
	assert_int_equal(rc_conn_cm_event(&c, &in), -ECONNREFUSED);
	assert_string_equal(c.log.err, "10.0.0.2 port 7: the server rejected the connection: "
				       "server busy");
	in = (struct rc_cm_info){ .event = RDMA_CM_EVENT_CONNECT_ERROR, .status = -110 };
	assert_int_equal(rc_conn_cm_event(&c, &in), -EHOSTUNREACH);
	assert_non_null(strstr(c.log.err, "got RDMA_CM_EVENT_CONNECT_ERROR (status -110)"));
	assert_false(c.established);
}

/*
 * The channel rule's other side: a connection whose events go to an event
 * loop has no channel of its own (c->cm_channel NULL). Its waits on CM
 * events refuse, before any call that would need one; rc_next_wc on a CQ
 * of its own still waits (no CM fd: -1 is skipped) and ends on the
 * timeout, or on a DISCONNECTED the loop recorded.
 */
static void conn_without_a_channel_of_its_own(void **state)
{
	struct empty_cq_conn e;
	struct ibv_wc wc;
	uint64_t t0, ms;

	(void)state;
	for (int busy = 0; busy < 2; busy++) {
		empty_cq_conn_init(&e, busy, 100);
		e.c.cm_channel = NULL;
		t0 = rc_now_us();
		assert_int_equal(rc_next_wc(&e.c, &wc), -ETIMEDOUT);
		ms = (rc_now_us() - t0) / 1000u;
		assert_true(ms >= 100 && ms < 1000);
	}
	e.c.peer_disconnected = true;
	assert_int_equal(rc_next_wc(&e.c, &wc), -ECONNRESET);
	assert_int_equal(rc_conn_wait_cm_event(&e.c, RDMA_CM_EVENT_DISCONNECTED, "waiting", NULL),
			 -EINVAL);
	assert_string_equal(e.c.log.err,
			    "waiting: this connection has no CM channel of its own; hint: its "
			    "events go to its owner's (an event loop's), which hands them to "
			    "rc_conn_cm_event");
	/* No id either: rc_accept must refuse before rdma_accept. */
	assert_int_equal(rc_accept(&e.c, 1, 1), -EINVAL);
	assert_non_null(strstr(e.c.log.err, "accepting: this connection has no CM channel"));
}

/* A connection on a shared CQ: rc_next_wc would hand out the completions
 * of other connections; it refuses and says what to do instead. */
static void next_wc_refuses_a_shared_cq(void **state)
{
	struct empty_cq_conn e;
	struct rc_device d;
	struct ibv_wc wc;

	(void)state;
	memset(&d, 0, sizeof(d));
	empty_cq_conn_init(&e, false, 300);
	e.c.shared = &d;
	assert_int_equal(rc_next_wc(&e.c, &wc), -EINVAL);
	assert_string_equal(e.c.log.err,
			    "rc_next_wc: this connection's CQ is shared (rc_create_qp_on); hint: "
			    "poll the device (rc_device_poll) and find each completion's "
			    "connection by wc.qp_num");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_function_links),
		cmocka_unit_test(wait_readable_refuses_too_many_fds),
		cmocka_unit_test(next_wc_busy_names_polls_errno),
		cmocka_unit_test(next_wc_event_names_polls_errno),
		cmocka_unit_test(next_wc_plain_waits),
		cmocka_unit_test(reject_message),
		cmocka_unit_test(msg_expect_one_kind),
		cmocka_unit_test(msg_expect_named_kinds),
		cmocka_unit_test(recv_expect_checks_the_completion),
		cmocka_unit_test(conn_records_its_cm_events),
		cmocka_unit_test(conn_without_a_channel_of_its_own),
		cmocka_unit_test(next_wc_refuses_a_shared_cq),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
