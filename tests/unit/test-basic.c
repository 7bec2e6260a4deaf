// SPDX-License-Identifier: MIT
/* Unit tests of 01's messages and options (01_basic-client-server/basic.c), and of
 * what its CM waits keep of an event and report (cm-event.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "basic.h"
#include "cm-event.h"
#include "inline.h"
#include "rc-report.h"

#define ARGV(...) ((char *[]){ "prog", __VA_ARGS__, NULL })
#define ARGC(...) ((int)(sizeof((char *[]){ "prog", __VA_ARGS__ }) / sizeof(char *)))

static void hello_round_trip_with_padding(void **state)
{
	uint8_t priv[56] = { 0 }; /* as a connect request delivers it */
	char err[128];
	uint32_t max = 0;
	uint8_t lesson = 9, flags = 9;

	(void)state;
	basic_hello_pack(priv, 65536, 0, 0);
	assert_int_equal(
		basic_hello_unpack(priv, sizeof(priv), &max, &lesson, &flags, err, sizeof(err)), 0);
	assert_int_equal(max, 65536);
	assert_int_equal(lesson, 0);
	assert_int_equal(
		basic_hello_unpack(priv, BASIC_HELLO_LEN, &max, &lesson, &flags, err, sizeof(err)),
		0);
	/* The lesson byte: every lesson comes through. */
	basic_hello_pack(priv, 10, BASIC_INJECT_SQ_OVERFLOW, 0);
	assert_int_equal(
		basic_hello_unpack(priv, sizeof(priv), &max, &lesson, &flags, err, sizeof(err)), 0);
	assert_int_equal(lesson, BASIC_INJECT_SQ_OVERFLOW);
	assert_int_equal(max, 10);
}

static void hello_rejects_bad(void **state)
{
	uint8_t priv[56] = { 0 };
	char err[128];
	uint32_t max = 0;
	uint8_t lesson = 0, flags = 0;

	(void)state;
	/* No private data at all (a client of another program). */
	assert_int_equal(basic_hello_unpack(priv, 0, &max, &lesson, &flags, err, sizeof(err)),
			 -EBADMSG);
	/* All zeros: bad magic. */
	assert_int_equal(
		basic_hello_unpack(priv, sizeof(priv), &max, &lesson, &flags, err, sizeof(err)),
		-EBADMSG);
	/* Sizes out of range. */
	basic_hello_pack(priv, 0, 0, 0);
	assert_int_equal(
		basic_hello_unpack(priv, sizeof(priv), &max, &lesson, &flags, err, sizeof(err)),
		-ERANGE);
	basic_hello_pack(priv, BASIC_MAX_PAYLOAD + 1, 0, 0);
	assert_int_equal(
		basic_hello_unpack(priv, sizeof(priv), &max, &lesson, &flags, err, sizeof(err)),
		-ERANGE);
	assert_non_null(strstr(err, "outside"));
	/* Wrong type (a DATA header where HELLO belongs). */
	basic_data_pack(priv, 0, "abcd", 4);
	assert_int_equal(
		basic_hello_unpack(priv, sizeof(priv), &max, &lesson, &flags, err, sizeof(err)),
		-EBADMSG);
	/* An unknown lesson (arm-late's is the client's alone: its HELLO says
	 * 0), a reserved byte set. */
	basic_hello_pack(priv, 100, BASIC_INJECT_ARM_LATE, 0);
	assert_int_equal(
		basic_hello_unpack(priv, sizeof(priv), &max, &lesson, &flags, err, sizeof(err)),
		-EBADMSG);
	assert_non_null(strstr(err, "unknown lesson 3 (1 to 2)"));
	basic_hello_pack(priv, 100, 0, 0);
	priv[sizeof(struct rc_hdr) + 7] = 1;
	assert_int_equal(
		basic_hello_unpack(priv, sizeof(priv), &max, &lesson, &flags, err, sizeof(err)),
		-EBADMSG);
	assert_non_null(strstr(err, "reserved"));
	/* Truncated body. */
	basic_hello_pack(priv, 100, 0, 0);
	assert_int_equal(basic_hello_unpack(priv, 18, &max, &lesson, &flags, err, sizeof(err)),
			 -EBADMSG);
}

/* --inline: the HELLO's flags byte carries it; unknown flags are refused. */
static void hello_inline_flag(void **state)
{
	uint8_t priv[56] = { 0 };
	char err[128];
	uint32_t max = 0;
	uint8_t lesson = 9, flags = 0;

	(void)state;
	basic_hello_pack(priv, 100, 0, BASIC_HELLO_INLINE);
	assert_int_equal(priv[sizeof(struct rc_hdr) + 5], BASIC_HELLO_INLINE);
	assert_int_equal(
		basic_hello_unpack(priv, sizeof(priv), &max, &lesson, &flags, err, sizeof(err)), 0);
	assert_int_equal(flags, BASIC_HELLO_INLINE);
	assert_int_equal(max, 100);
	assert_int_equal(lesson, 0);
	basic_hello_pack(priv, 100, 0, 0);
	assert_int_equal(
		basic_hello_unpack(priv, sizeof(priv), &max, &lesson, &flags, err, sizeof(err)), 0);
	assert_int_equal(flags, 0);
	/* A flag nobody knows: never trust the peer. */
	basic_hello_pack(priv, 100, 0, 0x82);
	assert_int_equal(
		basic_hello_unpack(priv, sizeof(priv), &max, &lesson, &flags, err, sizeof(err)),
		-EBADMSG);
	assert_non_null(strstr(err, "unknown flags 0x82"));
}

/* A device that takes up to *limit bytes of inline data; counts the questions. */
struct fake_dev {
	uint32_t limit, asked;
};

static bool fake_accepts(void *arg, uint32_t n)
{
	struct fake_dev *d = arg;

	d->asked++;
	return n <= d->limit;
}

static void inline_bisect_finds_the_limit(void **state)
{
	static const uint32_t limits[] = { 0, 1, 16, 400, 511, 512, 1039 };
	struct fake_dev d;

	(void)state;
	for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		d = (struct fake_dev){ limits[i], 0 };
		assert_int_equal(basic_inline_bisect(0, 1040, fake_accepts, &d), limits[i]);
		assert_true(d.asked <= 11); /* log2(1040), rounded up */
	}
	/* Nothing between: no question at all. */
	d = (struct fake_dev){ 5, 0 };
	assert_int_equal(basic_inline_bisect(5, 6, fake_accepts, &d), 5);
	assert_int_equal(d.asked, 0);
}

static void msg_validation(void **state)
{
	uint8_t buf[64];
	struct rc_msg m;
	char err[128];
	size_t n;

	(void)state;
	n = basic_data_pack(buf, 7, "hello", 5);
	assert_int_equal(n, 21);
	assert_int_equal(basic_msg_unpack(buf, n, BASIC_T_DATA, 7, 5, &m, err, sizeof(err)), 0);
	assert_memory_equal(m.body, "hello", 5);
	/* Each field checked: type, seq, size limit, and byte_len. */
	assert_int_equal(basic_msg_unpack(buf, n, BASIC_T_REPLY, 7, 5, &m, err, sizeof(err)),
			 -EBADMSG);
	assert_non_null(strstr(err, "type"));
	assert_int_equal(basic_msg_unpack(buf, n, BASIC_T_DATA, 8, 5, &m, err, sizeof(err)),
			 -EBADMSG);
	assert_non_null(strstr(err, "sequence"));
	assert_int_equal(basic_msg_unpack(buf, n, BASIC_T_DATA, 7, 4, &m, err, sizeof(err)),
			 -EBADMSG);
	assert_int_equal(basic_msg_unpack(buf, n - 1, BASIC_T_DATA, 7, 5, &m, err, sizeof(err)),
			 -EBADMSG);
	/* Empty payloads are not part of the protocol. */
	n = basic_data_pack(buf, 0, "", 0);
	assert_int_equal(basic_msg_unpack(buf, n, BASIC_T_DATA, 0, 5, &m, err, sizeof(err)),
			 -EBADMSG);
}

static void quote_escapes_and_truncates(void **state)
{
	char out[64];

	(void)state;
	rc_quote(out, sizeof(out), (const uint8_t *)"Hi", 2, 64);
	assert_string_equal(out, "Hi");
	rc_quote(out, sizeof(out), (const uint8_t *)"a\nb\x1b'\\", 6, 64);
	assert_string_equal(out, "a\\x0ab\\x1b\\x27\\x5c");
	rc_quote(out, sizeof(out), (const uint8_t *)"abcdef", 6, 3);
	assert_string_equal(out, "abc...");
	/* A tiny output buffer is never overrun. */
	rc_quote(out, 8, (const uint8_t *)"\x01\x02\x03\x04", 4, 64);
	assert_true(strlen(out) < 8);
}

static void pattern_differs_per_message(void **state)
{
	uint8_t a[16 + 40], b[16 + 40];
	struct rc_msg m;
	char err[128];

	(void)state;
	assert_int_equal(basic_data_pack(a, 0, NULL, 40), sizeof(a));
	basic_data_pack(b, 1, NULL, 40);
	assert_int_equal(basic_msg_unpack(a, sizeof(a), BASIC_T_DATA, 0, 40, &m, err, sizeof(err)),
			 0);
	assert_memory_equal(m.body, "abcdefghijklmnopqrstuvwxyz0123456789abcd", 40);
	assert_memory_not_equal(a + 16, b + 16, 40);
}

static void client_options(void **state)
{
	struct client_opts o;
	char err[128];

	(void)state;
	assert_int_equal(
		basic_parse_client(ARGC("10.0.0.1"), ARGV("10.0.0.1"), &o, err, sizeof(err)), 0);
	assert_string_equal(o.server, "10.0.0.1");
	assert_string_equal(o.rc.port, RC_DEFAULT_PORT);
	assert_string_equal(o.text, BASIC_DEFAULT_TEXT);
	assert_int_equal(o.size, 10);
	assert_int_equal(o.count, 1);
	assert_int_equal(o.rc.timeout_ms, 10000);
	assert_int_equal(o.rc.ack_timeout, RC_DEFAULT_ACK_TIMEOUT);
	assert_int_equal(o.rc.retry_count, RC_DEFAULT_RETRY_COUNT);
	assert_int_equal(basic_parse_client(ARGC("--ack-timeout", "14", "--retry-count", "3", "h"),
					    ARGV("--ack-timeout", "14", "--retry-count", "3", "h"),
					    &o, err, sizeof(err)),
			 0);
	assert_int_equal(o.rc.ack_timeout, 14);
	assert_int_equal(o.rc.retry_count, 3);

	assert_int_equal(
		basic_parse_client(
			ARGC("-s", "64K", "-n", "1000", "--timeout", "2.5", "-v", "h", "99"),
			ARGV("-s", "64K", "-n", "1000", "--timeout", "2.5", "-v", "h", "99"), &o,
			err, sizeof(err)),
		0);
	assert_null(o.text);
	assert_int_equal(o.size, 65536);
	assert_int_equal(o.count, 1000);
	assert_int_equal(o.rc.timeout_ms, 2500);
	assert_true(o.rc.verbose);
	assert_string_equal(o.rc.port, "99");
	assert_false(o.send_inline);
	assert_int_equal(basic_parse_client(ARGC("--inline", "-s", "100", "h"),
					    ARGV("--inline", "-s", "100", "h"), &o, err,
					    sizeof(err)),
			 0);
	assert_true(o.send_inline);
	assert_int_equal(o.size, 100);

	assert_int_equal(basic_parse_client(ARGC("-p", "5000", "-m", "hey", "h"),
					    ARGV("-p", "5000", "-m", "hey", "h"), &o, err,
					    sizeof(err)),
			 0);
	assert_string_equal(o.rc.port, "5000");
	assert_int_equal(o.size, 3);
	assert_int_equal(o.rc.poll, RC_POLL_EVENT);
	assert_false(o.json);

	assert_int_equal(basic_parse_client(ARGC("h", "--json", "-n", "2"),
					    ARGV("h", "--json", "-n", "2"), &o, err, sizeof(err)),
			 0);
	assert_true(o.json);
	assert_int_equal(o.count, 2);
	assert_int_equal(o.inject, BASIC_INJECT_NONE);

	/* --inject: the two lessons by name; one lesson, no -n, no --json. */
	assert_int_equal(basic_parse_client(ARGC("--inject", "no-recv", "h"),
					    ARGV("--inject", "no-recv", "h"), &o, err, sizeof(err)),
			 0);
	assert_int_equal(o.inject, BASIC_INJECT_NO_RECV);
	assert_string_equal(basic_inject_name(o.inject), "no-recv");
	assert_int_equal(basic_parse_client(ARGC("--inject", "sq-overflow", "h"),
					    ARGV("--inject", "sq-overflow", "h"), &o, err,
					    sizeof(err)),
			 0);
	assert_int_equal(o.inject, BASIC_INJECT_SQ_OVERFLOW);
	assert_int_equal(basic_parse_client(ARGC("--inject", "arm-late", "h"),
					    ARGV("--inject", "arm-late", "h"), &o, err,
					    sizeof(err)),
			 0);
	assert_int_equal(o.inject, BASIC_INJECT_ARM_LATE);
	assert_string_equal(basic_inject_name(o.inject), "arm-late");
	assert_int_equal(basic_parse_client(ARGC("--inject", "none", "h"),
					    ARGV("--inject", "none", "h"), &o, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "unknown --inject 'none'"));
	{
		char *with_n[] = { "prog", "--inject", "no-recv", "-n", "2", "h", NULL };
		char *with_json[] = { "prog", "--inject", "no-recv", "--json", "h", NULL };

		assert_int_equal(basic_parse_client(6, with_n, &o, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "--inject runs one lesson"));
		assert_int_equal(basic_parse_client(5, with_json, &o, err, sizeof(err)), -EINVAL);
	}
	assert_string_equal(basic_inject_name(BASIC_INJECT_COUNT), "(unknown)");
	assert_int_equal(basic_parse_client(ARGC("--json=yes", "h"), ARGV("--json=yes", "h"), &o,
					    err, sizeof(err)),
			 -EINVAL);

	assert_int_equal(basic_parse_client(ARGC("--poll", "busy", "h"),
					    ARGV("--poll", "busy", "h"), &o, err, sizeof(err)),
			 0);
	assert_int_equal(o.rc.poll, RC_POLL_BUSY);
	assert_int_equal(basic_parse_client(ARGC("--poll", "adaptive", "h"),
					    ARGV("--poll", "adaptive", "h"), &o, err, sizeof(err)),
			 0);
	assert_int_equal(o.rc.poll, RC_POLL_ADAPTIVE);
	assert_int_equal(basic_parse_client(ARGC("--poll", "spin", "h"),
					    ARGV("--poll", "spin", "h"), &o, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "poll mode"));
}

static void client_options_rejected(void **state)
{
	struct client_opts o;
	char err[128];

	(void)state;
	assert_int_equal(basic_parse_client(1, ARGV(NULL), &o, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "SERVER"));
	assert_int_equal(basic_parse_client(ARGC("-m", "x", "-s", "1", "h"),
					    ARGV("-m", "x", "-s", "1", "h"), &o, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(basic_parse_client(ARGC("-s", "2M", "h"), ARGV("-s", "2M", "h"), &o, err,
					    sizeof(err)),
			 -EINVAL);
	assert_int_equal(basic_parse_client(ARGC("-s", "0", "h"), ARGV("-s", "0", "h"), &o, err,
					    sizeof(err)),
			 -EINVAL);
	assert_int_equal(basic_parse_client(ARGC("-n", "0", "h"), ARGV("-n", "0", "h"), &o, err,
					    sizeof(err)),
			 -EINVAL);
	assert_int_equal(
		basic_parse_client(ARGC("-m", "", "h"), ARGV("-m", "", "h"), &o, err, sizeof(err)),
		-EINVAL);
	assert_int_equal(basic_parse_client(ARGC("--timeout", "0", "h"),
					    ARGV("--timeout", "0", "h"), &o, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(basic_parse_client(ARGC("--bogus", "h"), ARGV("--bogus", "h"), &o, err,
					    sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "--bogus"));
	assert_int_equal(basic_parse_client(ARGC("h", "-n"), ARGV("h", "-n"), &o, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "needs a value"));
	assert_int_equal(basic_parse_client(ARGC("--inline", "--inject", "no-recv", "h"),
					    ARGV("--inline", "--inject", "no-recv", "h"), &o, err,
					    sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "--inline"));
	assert_int_equal(
		basic_parse_client(ARGC("h", "70000"), ARGV("h", "70000"), &o, err, sizeof(err)),
		-EINVAL);
	assert_int_equal(basic_parse_client(ARGC("-p", "1", "h", "2"), ARGV("-p", "1", "h", "2"),
					    &o, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(basic_parse_client(ARGC("h", "1", "extra"), ARGV("h", "1", "extra"), &o,
					    err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(basic_parse_client(ARGC("h", "0"), ARGV("h", "0"), &o, err, sizeof(err)),
			 -EINVAL);
}

static void server_options(void **state)
{
	struct server_opts o;
	char err[128];

	(void)state;
	assert_int_equal(basic_parse_server(1, ARGV(NULL), &o, err, sizeof(err)), 0);
	assert_string_equal(o.rc.port, RC_DEFAULT_PORT);
	assert_null(o.rc.bind);
	assert_false(o.rc.once);
	assert_int_equal(o.rc.max_clients, 16);
	assert_int_equal(basic_parse_server(
				 ARGC("-p", "0", "-b", "10.0.2.15", "--once", "--max-clients", "3"),
				 ARGV("-p", "0", "-b", "10.0.2.15", "--once", "--max-clients", "3"),
				 &o, err, sizeof(err)),
			 0);
	assert_string_equal(o.rc.port, "0");
	assert_string_equal(o.rc.bind, "10.0.2.15");
	assert_true(o.rc.once);
	assert_int_equal(o.rc.max_clients, 3);
	assert_int_equal(basic_parse_server(ARGC("-p", "x"), ARGV("-p", "x"), &o, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(basic_parse_server(ARGC("--max-clients", "0"), ARGV("--max-clients", "0"),
					    &o, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(basic_parse_server(ARGC("stray"), ARGV("stray"), &o, err, sizeof(err)),
			 -EINVAL);
}

static void latency_percentiles(void **state)
{
	uint64_t ns[100];
	struct rc_lat_sum l;
	int i;

	(void)state;
	/* 1..100 us, shuffled by a stride: nearest-rank p99 = 99 us. */
	for (i = 0; i < 100; i++)
		ns[(i * 37) % 100] = (uint64_t)(i + 1) * 1000;
	rc_lat_summary(ns, 100, &l);
	assert_true(l.min == 1.0);
	assert_true(l.median == 50.5);
	assert_true(l.p99 == 99.0);
	assert_true(l.max == 100.0);
	ns[0] = 7000;
	rc_lat_summary(ns, 1, &l);
	assert_true(l.min == 7.0 && l.median == 7.0 && l.p99 == 7.0 && l.max == 7.0);
}

/* The copy outlives the event: rdma_ack_cm_event frees the event's private data. */
static void cm_keep_copies_private_data(void **state)
{
	uint8_t priv[56] = { 0 };     /* a connect request's, padded */
	struct rdma_cm_id id = { 0 }; /* only its address is kept */
	struct rdma_cm_event ev = { .id = &id, .event = RDMA_CM_EVENT_CONNECT_REQUEST };
	struct rc_cm_info got;
	uint32_t max = 0;
	uint8_t lesson = 9, flags = 9;
	char err[128];

	(void)state;
	basic_hello_pack(priv, 4096, 0, 0);
	ev.param.conn.private_data = priv;
	ev.param.conn.private_data_len = sizeof(priv);
	ev.param.conn.initiator_depth = 3;
	basic_cm_keep(&got, &ev);
	memset(priv, 0xee, sizeof(priv)); /* what the ack's free may leave */
	assert_int_equal(got.event, RDMA_CM_EVENT_CONNECT_REQUEST);
	assert_ptr_equal(got.id, &id);
	assert_int_equal(got.priv_len, 56);
	assert_int_equal(got.initiator_depth, 3);
	assert_int_equal(
		basic_hello_unpack(got.priv, got.priv_len, &max, &lesson, &flags, err, sizeof(err)),
		0);
	assert_int_equal(max, 4096);
	/* No private data (an ESTABLISHED, an rping client): nothing kept. */
	ev = (struct rdma_cm_event){ .event = RDMA_CM_EVENT_ESTABLISHED, .status = 0 };
	basic_cm_keep(&got, &ev);
	assert_int_equal(got.priv_len, 0);
	assert_null(got.id);
}

/* The errors a wrong event gets, in the words the e2e tests and users see. */
static void cm_unexpected_words(void **state)
{
	struct rc_cm_info got = { .event = RDMA_CM_EVENT_REJECTED, .status = 8 };
	struct rc_log log;

	(void)state;
	rc_log_init(&log, "t", false);
	/* IB CM status 8, invalid service ID: nobody listens on that port. */
	assert_int_equal(basic_cm_unexpected(&log, &got, RDMA_CM_EVENT_ESTABLISHED, "connecting"),
			 -ECONNREFUSED);
	assert_string_equal(log.err, "connecting: got RDMA_CM_EVENT_REJECTED (status 8) instead of "
				     "RDMA_CM_EVENT_ESTABLISHED; hint: is a server listening on "
				     "that port?");
	/* Status 28, rdma_reject's, with our REJECT: the server's reason. */
	got.status = 28;
	got.priv_len = rc_reject_pack(got.priv, "server busy: too many clients");
	assert_int_equal(basic_cm_unexpected(&log, &got, RDMA_CM_EVENT_ESTABLISHED, "connecting"),
			 -ECONNREFUSED);
	assert_string_equal(log.err,
			    "connecting: the server rejected the connection: server busy: too many "
			    "clients");
	/* Status 28 without our REJECT (another program's reject): the generic words. */
	got.priv_len = 0;
	basic_cm_unexpected(&log, &got, RDMA_CM_EVENT_ESTABLISHED, "connecting");
	assert_non_null(strstr(log.err, "REJECTED (status 28)"));
	got = (struct rc_cm_info){ .event = RDMA_CM_EVENT_DISCONNECTED };
	assert_int_equal(basic_cm_unexpected(&log, &got, RDMA_CM_EVENT_ESTABLISHED, "accepting"),
			 -ECONNRESET);
	got = (struct rc_cm_info){ .event = RDMA_CM_EVENT_ADDR_ERROR, .status = -ETIMEDOUT };
	assert_int_equal(basic_cm_unexpected(&log, &got, RDMA_CM_EVENT_ADDR_RESOLVED,
					     "resolving the address"),
			 -EHOSTUNREACH);
	assert_non_null(strstr(log.err, "resolving the address: got RDMA_CM_EVENT_ADDR_ERROR "
					"(status -110) instead of RDMA_CM_EVENT_ADDR_RESOLVED; "
					"hint: nobody answered"));
	/* The expected event, with a status: still an error. */
	got = (struct rc_cm_info){ .event = RDMA_CM_EVENT_ESTABLISHED, .status = -EIO };
	assert_int_equal(basic_cm_unexpected(&log, &got, RDMA_CM_EVENT_ESTABLISHED, "accepting"),
			 -EPROTO);
	assert_non_null(strstr(log.err, "accepting: RDMA_CM_EVENT_ESTABLISHED with status -5"));
	/* DISCONNECTED with -ETIMEDOUT: the kernel's for our DREQ that got no answer. */
	got = (struct rc_cm_info){ .event = RDMA_CM_EVENT_DISCONNECTED, .status = -ETIMEDOUT };
	assert_int_equal(
		basic_cm_unexpected(&log, &got, RDMA_CM_EVENT_DISCONNECTED, "disconnecting"),
		-EPROTO);
	assert_non_null(
		strstr(log.err, "with status -110; hint: the peer did not answer our DREQ"));
}

/* A wait that ended without an event: timeout, signal, poll's error; the peer's goodbye. */
static void cm_wait_failed_words(void **state)
{
	struct rc_log log;

	(void)state;
	rc_log_init(&log, "t", false);
	assert_int_equal(basic_cm_wait_failed(&log, -ETIMEDOUT, RDMA_CM_EVENT_ESTABLISHED, 3000,
					      "connecting"),
			 -ETIMEDOUT);
	assert_string_equal(log.err, "connecting: no RDMA_CM_EVENT_ESTABLISHED within 3000 ms; "
				     "hint: is the peer up and reachable over RDMA?");
	basic_cm_wait_failed(&log, -ETIMEDOUT, RDMA_CM_EVENT_DISCONNECTED, 10000, "disconnecting");
	assert_non_null(strstr(log.err, "disconnecting: no RDMA_CM_EVENT_DISCONNECTED within 10000 "
					"ms; hint: the peer did not answer our DREQ"));
	assert_int_equal(
		basic_cm_wait_failed(&log, 1, RDMA_CM_EVENT_ESTABLISHED, 3000, "accepting"),
		-ECANCELED);
	assert_string_equal(log.err, "accepting: cancelled (shutting down)");
	assert_int_equal(
		basic_cm_wait_failed(&log, -EBADF, RDMA_CM_EVENT_ESTABLISHED, 3000, "accepting"),
		-EBADF);
	assert_non_null(strstr(log.err, "accepting: poll: "));
	assert_int_equal(basic_peer_left(&log), -ECONNRESET);
	assert_non_null(strstr(log.err, "the peer disconnected; hint: the peer closed"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(hello_round_trip_with_padding),
		cmocka_unit_test(hello_rejects_bad),
		cmocka_unit_test(hello_inline_flag),
		cmocka_unit_test(inline_bisect_finds_the_limit),
		cmocka_unit_test(msg_validation),
		cmocka_unit_test(quote_escapes_and_truncates),
		cmocka_unit_test(pattern_differs_per_message),
		cmocka_unit_test(client_options),
		cmocka_unit_test(client_options_rejected),
		cmocka_unit_test(server_options),
		cmocka_unit_test(latency_percentiles),
		cmocka_unit_test(cm_keep_copies_private_data),
		cmocka_unit_test(cm_unexpected_words),
		cmocka_unit_test(cm_wait_failed_words),
	};

	return cmocka_run_group_tests_name("01 basic", tests, NULL, NULL);
}
