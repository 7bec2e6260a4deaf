// SPDX-License-Identifier: MIT
/* Unit tests of common/: the wire header, the option parsers, the JSON writer,
 * the lessons' names. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <getopt.h>
#include <pthread.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <cmocka.h>

#include "rc-counters.h" /* rc_kernel_release */
#include "rc-json.h"
#include "rc-lessons.h"
#include "rc-opts.h"
#include "rc-report.h"
#include "rdma-common.h"

static void hdr_round_trip_is_big_endian(void **state)
{
	uint8_t buf[16 + 3] = { 0 };
	struct rc_msg m;
	char err[128];

	(void)state;
	rc_hdr_pack(buf, 0x11, 3, 0x01020304);
	memcpy(buf + 16, "abc", 3);
	/* Magic "RDMX", version, type, flags, then big-endian length, seq. */
	static const uint8_t want[16] = {
		'R', 'D', 'M', 'X', 1, 0x11, 0, 0, 0, 0, 0, 3, 1, 2, 3, 4
	};
	assert_memory_equal(buf, want, 16);
	assert_int_equal(rc_hdr_unpack(buf, sizeof(buf), &m, err, sizeof(err)), 0);
	assert_int_equal(m.type, 0x11);
	assert_int_equal(m.length, 3);
	assert_int_equal(m.seq, 0x01020304);
	assert_ptr_equal(m.body, buf + 16);
}

static void hdr_rejects_malformed(void **state)
{
	uint8_t buf[32];
	struct rc_msg m;
	char err[128];

	(void)state;
	rc_hdr_pack(buf, 0x11, 4, 0);
	/* Too short for a header. */
	assert_int_equal(rc_hdr_unpack(buf, 15, &m, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "shorter"));
	/* Length field says 4, but 3 or 5 bytes arrived. */
	assert_int_equal(rc_hdr_unpack(buf, 19, &m, err, sizeof(err)), -EBADMSG);
	assert_int_equal(rc_hdr_unpack(buf, 21, &m, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "arrived"));
	assert_int_equal(rc_hdr_unpack(buf, 20, &m, err, sizeof(err)), 0);
	/* Wrong magic, version, flags. */
	buf[0] ^= 0xff;
	assert_int_equal(rc_hdr_unpack(buf, 20, &m, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "magic"));
	buf[0] ^= 0xff;
	buf[4] = 2;
	assert_int_equal(rc_hdr_unpack(buf, 20, &m, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "version"));
	buf[4] = 1;
	buf[7] = 1;
	assert_int_equal(rc_hdr_unpack(buf, 20, &m, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "flags"));
	/* A huge length must not wrap around. */
	rc_hdr_pack(buf, 0x11, 0xffffffffu, 0);
	assert_int_equal(rc_hdr_unpack(buf, 20, &m, err, sizeof(err)), -EBADMSG);
}

static void priv_allows_padding_not_truncation(void **state)
{
	uint8_t buf[56] = { 0 };
	struct rc_msg m;
	char err[128];

	(void)state;
	rc_hdr_pack(buf, RC_T_REJECT, 5, 0);
	memcpy(buf + 16, "busy!", 5);
	/* The transport padded it to 56 bytes: fine. */
	assert_int_equal(rc_priv_unpack(buf, sizeof(buf), &m, err, sizeof(err)), 0);
	assert_int_equal(m.length, 5);
	assert_memory_equal(m.body, "busy!", 5);
	/* Fewer bytes than the header promises: not fine. */
	assert_int_equal(rc_priv_unpack(buf, 20, &m, err, sizeof(err)), -EBADMSG);
	assert_int_equal(rc_priv_unpack(buf, 10, &m, err, sizeof(err)), -EBADMSG);
	rc_hdr_pack(buf, RC_T_REJECT, 0xfffffff0u, 0);
	assert_int_equal(rc_priv_unpack(buf, sizeof(buf), &m, err, sizeof(err)), -EBADMSG);
}

static void parse_size_units(void **state)
{
	uint64_t v;

	(void)state;
	assert_int_equal(rc_parse_size("1", 0, UINT64_MAX, &v), 0);
	assert_int_equal(v, 1);
	assert_int_equal(rc_parse_size("4096", 0, UINT64_MAX, &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(rc_parse_size("64K", 0, UINT64_MAX, &v), 0);
	assert_int_equal(v, 65536);
	assert_int_equal(rc_parse_size("64k", 0, UINT64_MAX, &v), 0);
	assert_int_equal(v, 65536);
	assert_int_equal(rc_parse_size("1M", 0, UINT64_MAX, &v), 0);
	assert_int_equal(v, 1048576);
	assert_int_equal(rc_parse_size("3g", 0, UINT64_MAX, &v), 0);
	assert_int_equal(v, 3ull << 30);
	assert_int_equal(rc_parse_size("8MiB", 0, UINT64_MAX, &v), 0);
	assert_int_equal(v, 8ull << 20);
	assert_int_equal(rc_parse_size("2KB", 0, UINT64_MAX, &v), 0);
	assert_int_equal(v, 2048);
}

static void parse_size_rejects(void **state)
{
	static const char *bad[] = { "",
				     "abc",
				     "-1",
				     "+1",
				     " 1",
				     "1X",
				     "1.5M",
				     "1MM",
				     "1Kx",
				     "K",
				     "99999999999999999999",
				     "17179869184G" /* 2^64 overflow */ };
	uint64_t v = 77;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(rc_parse_size(bad[i], 0, UINT64_MAX, &v), -EINVAL);
		assert_int_equal(v, 77); /* untouched on error */
	}
	assert_int_equal(rc_parse_size(NULL, 0, 10, &v), -EINVAL);
	/* Range limits, after the suffix is applied. */
	assert_int_equal(rc_parse_size("0", 1, 10, &v), -EINVAL);
	assert_int_equal(rc_parse_size("1K", 1, 1023, &v), -EINVAL);
	assert_int_equal(rc_parse_size("1K", 1, 1024, &v), 0);
}

static void parse_port_timeout_uint(void **state)
{
	uint64_t v;
	int ms;

	(void)state;
	assert_int_equal(rc_parse_port("0"), 0);
	assert_int_equal(rc_parse_port("7471"), 0);
	assert_int_equal(rc_parse_port("65535"), 0);
	assert_int_equal(rc_parse_port("65536"), -EINVAL);
	assert_int_equal(rc_parse_port("-1"), -EINVAL);
	assert_int_equal(rc_parse_port("12a"), -EINVAL);
	assert_int_equal(rc_parse_port(""), -EINVAL);

	assert_int_equal(rc_parse_timeout("10", &ms), 0);
	assert_int_equal(ms, 10000);
	assert_int_equal(rc_parse_timeout("0.25", &ms), 0);
	assert_int_equal(ms, 250);
	assert_int_equal(rc_parse_timeout("0", &ms), -EINVAL);
	assert_int_equal(rc_parse_timeout("-3", &ms), -EINVAL);
	assert_int_equal(rc_parse_timeout("nan", &ms), -EINVAL);
	assert_int_equal(rc_parse_timeout("1e9", &ms), -EINVAL);
	assert_int_equal(rc_parse_timeout("5s", &ms), -EINVAL);

	assert_int_equal(rc_parse_uint("42", 1, 100, &v), 0);
	assert_int_equal(v, 42);
	assert_int_equal(rc_parse_uint("0", 1, 100, &v), -EINVAL);
	assert_int_equal(rc_parse_uint("101", 1, 100, &v), -EINVAL);
	assert_int_equal(rc_parse_uint("4x", 1, 100, &v), -EINVAL);
}

/* What the lessons of 01 and 02 print about completions, the QP and the kernel. */
static void lesson_names(void **state)
{
	char buf[65], small[4];
	struct utsname u;

	(void)state;
	assert_string_equal(rc_wc_status_name(IBV_WC_REM_ACCESS_ERR), "IBV_WC_REM_ACCESS_ERR");
	assert_string_equal(rc_wc_status_name(IBV_WC_WR_FLUSH_ERR), "IBV_WC_WR_FLUSH_ERR");
	assert_string_equal(rc_wc_status_name(IBV_WC_RNR_RETRY_EXC_ERR),
			    "IBV_WC_RNR_RETRY_EXC_ERR");
	assert_string_equal(rc_wc_status_name(999), "IBV_WC_(other)");
	assert_string_equal(rc_qp_state_name(IBV_QPS_RTS), "RTS (ready to send)");
	assert_string_equal(rc_qp_state_name(IBV_QPS_ERR), "ERR (error)");
	assert_string_equal(rc_qp_state_name(IBV_QPS_INIT), "INIT");
	assert_string_equal(rc_qp_state_name(IBV_QPS_UNKNOWN), "unknown");
	assert_int_equal(rc_qp_state(NULL), IBV_QPS_UNKNOWN);
	assert_int_equal(uname(&u), 0);
	assert_ptr_equal(rc_kernel_release(buf, sizeof(buf)), buf);
	assert_string_equal(buf, u.release);
	/* Cut to the buffer, always terminated. */
	rc_kernel_release(small, sizeof(small));
	assert_int_equal(strlen(small), 3);
	assert_memory_equal(small, u.release, 3);
}

static void hints_name_the_cause(void **state)
{
	(void)state;
	assert_non_null(strstr(rc_cm_event_hint(RDMA_CM_EVENT_REJECTED, 8), "listening"));
	assert_non_null(strstr(rc_cm_event_hint(RDMA_CM_EVENT_ADDR_ERROR, 0), "rdma link"));
	assert_non_null(strstr(rc_wc_status_hint(IBV_WC_REM_ACCESS_ERR), "rkey"));
	assert_non_null(strstr(rc_wc_status_hint(IBV_WC_RNR_RETRY_EXC_ERR), "receive"));
	assert_non_null(strstr(rc_wc_status_hint(IBV_WC_WR_FLUSH_ERR), "teardown"));
	assert_string_equal(rc_wc_opcode_str(IBV_WC_RECV), "RECV");
}

static void fail_keeps_message_and_negates(void **state)
{
	struct rc_log log;

	(void)state;
	rc_log_init(&log, "t", false);
	assert_int_equal(rc_fail(&log, ETIMEDOUT, "waited %d ms", 5), -ETIMEDOUT);
	assert_string_equal(log.err, "waited 5 ms");
	assert_int_equal(rc_fail(&log, 0, "x"), -EIO); /* never "success" */
}

static void remote_buf_wire_and_ranges(void **state)
{
	struct rc_remote_buf r = { .addr = 0x0102030405060708ull, .rkey = 0xa0b0c0d0, .len = 4096 };
	struct rc_remote_buf back;
	uint8_t wire[RC_REMOTE_BUF_WIRE];
	static const uint8_t want[16] = { 1,	2,    3,    4,	  5, 6, 7,    8,
					  0xa0, 0xb0, 0xc0, 0xd0, 0, 0, 0x10, 0 };

	(void)state;
	rc_remote_buf_pack(wire, &r);
	assert_memory_equal(wire, want, sizeof(want)); /* big-endian */
	rc_remote_buf_unpack(wire, &back);
	assert_true(back.addr == r.addr && back.rkey == r.rkey && back.len == r.len);
	/* The field helpers under it, at odd offsets, with the high bits set. */
	rc_put16(wire + 1, 0xfeed);
	assert_true(wire[1] == 0xfe && wire[2] == 0xed && rc_get16(wire + 1) == 0xfeed);
	rc_put64(wire + 3, UINT64_MAX - 1);
	assert_true(wire[3] == 0xff && wire[10] == 0xfe && rc_get64(wire + 3) == UINT64_MAX - 1);
	rc_put32(wire + 11, 0x80000001u);
	assert_true(wire[11] == 0x80 && wire[14] == 1 && rc_get32(wire + 11) == 0x80000001u);

	assert_true(rc_remote_range_ok(&r, 0, 4096));
	assert_true(rc_remote_range_ok(&r, 4095, 1));
	assert_true(rc_remote_range_ok(&r, 4096, 0));
	assert_false(rc_remote_range_ok(&r, 0, 4097));
	assert_false(rc_remote_range_ok(&r, 4096, 1));
	assert_false(rc_remote_range_ok(&r, 4097, 0));
	/* Values that would wrap around if added naively. */
	assert_false(rc_remote_range_ok(&r, 16, UINT64_MAX - 8));
	assert_false(rc_remote_range_ok(&r, UINT64_MAX, 2));
}

static int parse_shared(int argc, char **argv, struct rc_opts *o, char *err)
{
	static const struct option longopts[] = { RC_LONGOPTS_SERVER, { NULL, 0, NULL, 0 } };
	int c, ret;

	rc_opts_init(o, 8);
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, RC_SHORTOPTS_SERVER, longopts, NULL)) != -1) {
		ret = rc_opts_handle(o, c, optarg, argv, err, 128);
		if (ret != 1)
			return ret;
	}
	return 0;
}

/* --poll's three modes by name; anything else (a prefix, a case) refused. */
static void parse_poll_modes(void **state)
{
	enum rc_poll_mode m = RC_POLL_BUSY;

	(void)state;
	assert_int_equal(rc_parse_poll("event", &m), 0);
	assert_int_equal(m, RC_POLL_EVENT);
	assert_int_equal(rc_parse_poll("busy", &m), 0);
	assert_int_equal(m, RC_POLL_BUSY);
	assert_int_equal(rc_parse_poll("adaptive", &m), 0);
	assert_int_equal(m, RC_POLL_ADAPTIVE);
	assert_int_equal(rc_parse_poll("adapt", &m), -EINVAL);
	assert_int_equal(rc_parse_poll("Adaptive", &m), -EINVAL);
	assert_int_equal(rc_parse_poll("", &m), -EINVAL);
	assert_int_equal(rc_parse_poll(NULL, &m), -EINVAL);
	assert_int_equal(m, RC_POLL_ADAPTIVE); /* a refused value changes nothing */
}

/* adaptive spins within its budget, then sleeps for the rest of the wait;
 * event never spins, busy always does. */
static void cq_spin_budget(void **state)
{
	struct rc_cq_wait w = { 0 };
	uint64_t start;
	unsigned n = 0;

	(void)state;
	assert_false(rc_cq_spin(&w, RC_POLL_EVENT));
	assert_true(rc_cq_spin(&w, RC_POLL_BUSY));
	start = rc_now_us();
	/* As rc_wait_cq counts the spins between two looks at the clock. */
	while (rc_cq_spin(&w, RC_POLL_ADAPTIVE))
		w.spins++, n++;
	assert_true(n > 0);
	assert_true(rc_now_us() - start >= RC_SPIN_BUDGET_US);
	assert_false(rc_cq_spin(&w, RC_POLL_ADAPTIVE)); /* spent: no second spin */
	w = (struct rc_cq_wait){ 0 };
	assert_true(rc_cq_spin(&w, RC_POLL_ADAPTIVE)); /* a new wait spins again */
}

static void shared_options(void **state)
{
	char *good[] = { "prog", "-p",	      "0",   "-b",     "::1",  "--once", "--max-clients",
			 "3",	 "--timeout", "1.5", "--poll", "busy", "-v",	 NULL };
	char *help[] = { "prog", "--help", NULL };
	char *bad_poll[] = { "prog", "--poll", "fast", NULL };
	char *bad_port[] = { "prog", "-p", "70000", NULL };
	char *no_value[] = { "prog", "--timeout", NULL };
	char *unknown[] = { "prog", "--frobnicate", NULL };
	char *unknown_short[] = { "prog", "-z", NULL };
	char *zero_clients[] = { "prog", "--max-clients", "0", NULL };
	char *flag_value[] = { "prog", "--once=yes", NULL };
	struct rc_opts o;
	char err[128];

	(void)state;
	assert_int_equal(parse_shared(13, good, &o, err), 0);
	assert_string_equal(o.port, "0");
	assert_true(o.port_given);
	assert_string_equal(o.bind, "::1");
	assert_true(o.once && o.verbose && o.poll == RC_POLL_BUSY);
	assert_int_equal(o.max_clients, 3);
	assert_int_equal(o.timeout_ms, 1500);

	assert_int_equal(parse_shared(1, help, &o, err), 0); /* defaults */
	assert_string_equal(o.port, RC_DEFAULT_PORT);
	assert_false(o.port_given);
	assert_int_equal(o.timeout_ms, RC_DEFAULT_TIMEOUT_MS);
	assert_int_equal(o.max_clients, 8);
	assert_int_equal(parse_shared(2, help, &o, err), 2);
	assert_int_equal(parse_shared(3, bad_poll, &o, err), -EINVAL);
	assert_non_null(strstr(err, "poll mode 'fast' (event, busy or adaptive)"));
	assert_int_equal(parse_shared(3, bad_port, &o, err), -EINVAL);
	assert_non_null(strstr(err, "invalid port '70000'"));
	assert_int_equal(parse_shared(2, no_value, &o, err), -EINVAL);
	assert_non_null(strstr(err, "needs a value"));
	assert_int_equal(parse_shared(2, unknown, &o, err), -EINVAL);
	assert_non_null(strstr(err, "unknown option '--frobnicate'"));
	assert_int_equal(parse_shared(2, unknown_short, &o, err), -EINVAL);
	assert_non_null(strstr(err, "unknown option '-z'"));
	assert_int_equal(parse_shared(3, zero_clients, &o, err), -EINVAL);
	assert_int_equal(parse_shared(2, flag_value, &o, err), -EINVAL);
	assert_string_equal(err, "option '--once=yes' takes no value");
}

/* --ack-timeout and --retry-count: the whole range of the QP attributes,
 * nothing beyond, and defaults equal to the library's. */
static void retry_options(void **state)
{
	char *both[] = { "prog", "--ack-timeout", "20", "--retry-count", "7", NULL };
	char *lowest[] = { "prog", "--ack-timeout", "0", "--retry-count", "0", NULL };
	char *highest[] = { "prog", "--ack-timeout", "31", NULL };
	char *none[] = { "prog", NULL };
	char *bad[][4] = {
		{ "prog", "--ack-timeout", "32", NULL },  { "prog", "--ack-timeout", "-1", NULL },
		{ "prog", "--ack-timeout", "1.5", NULL }, { "prog", "--ack-timeout", "", NULL },
		{ "prog", "--retry-count", "8", NULL },	  { "prog", "--retry-count", "x", NULL },
	};
	struct rc_opts o;
	char err[128];
	size_t i;

	(void)state;
	assert_int_equal(RC_DEFAULT_ACK_TIMEOUT, RC_ACK_TIMEOUT);
	assert_int_equal(RC_DEFAULT_RETRY_COUNT, RC_RETRY_COUNT);
	assert_int_equal(parse_shared(1, none, &o, err), 0);
	assert_int_equal(o.ack_timeout, RC_ACK_TIMEOUT);
	assert_int_equal(o.retry_count, RC_RETRY_COUNT);
	assert_int_equal(parse_shared(5, both, &o, err), 0);
	assert_int_equal(o.ack_timeout, 20);
	assert_int_equal(o.retry_count, 7);
	assert_int_equal(parse_shared(5, lowest, &o, err), 0);
	assert_int_equal(o.ack_timeout, 0);
	assert_int_equal(o.retry_count, 0);
	assert_int_equal(parse_shared(3, highest, &o, err), 0);
	assert_int_equal(o.ack_timeout, 31);
	assert_int_equal(o.retry_count, RC_RETRY_COUNT);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		assert_int_equal(parse_shared(3, bad[i], &o, err), -EINVAL);
		assert_non_null(
			strstr(err, i < 4 ? "invalid ACK timeout '" : "invalid retry count '"));
		assert_non_null(strstr(err, bad[i][2]));
		assert_non_null(strstr(err, i < 4 ? "(0 to 31" : "(0 to 7)"));
	}
}

/* SERVER [PORT] after the options, with o->port from -p (or the default). */
static int server_args(int argc, char **argv, const char *p_opt, struct rc_opts *o,
		       const char **server, char *err)
{
	rc_opts_init(o, 1);
	if (p_opt) {
		o->port = p_opt;
		o->port_given = true;
	}
	optind = 1;
	return rc_opts_server_args(o, argc, argv, server, err, 128);
}

static void client_positional_arguments(void **state)
{
	char *host[] = { "prog", "h", NULL };
	char *host_port[] = { "prog", "h", "9000", NULL };
	char *none[] = { "prog", NULL };
	char *extra[] = { "prog", "h", "9000", "x", NULL };
	char *bad_port[] = { "prog", "h", "x9", NULL };
	char *zero[] = { "prog", "h", "0", NULL };
	const char *server = NULL;
	struct rc_opts o;
	char err[128];

	(void)state;
	assert_int_equal(server_args(2, host, NULL, &o, &server, err), 0);
	assert_string_equal(server, "h");
	assert_string_equal(o.port, RC_DEFAULT_PORT);
	assert_int_equal(server_args(3, host_port, NULL, &o, &server, err), 0);
	assert_string_equal(o.port, "9000");
	/* -p 9000 and PORT 9000 agree; -p 9001 and PORT 9000 do not. */
	assert_int_equal(server_args(3, host_port, "9000", &o, &server, err), 0);
	assert_int_equal(server_args(3, host_port, "9001", &o, &server, err), -EINVAL);
	assert_non_null(strstr(err, "two different ports"));
	assert_int_equal(server_args(1, none, NULL, &o, &server, err), -EINVAL);
	assert_non_null(strstr(err, "missing SERVER"));
	assert_int_equal(server_args(4, extra, NULL, &o, &server, err), -EINVAL);
	assert_non_null(strstr(err, "unexpected argument 'x'"));
	assert_int_equal(server_args(3, bad_port, NULL, &o, &server, err), -EINVAL);
	assert_non_null(strstr(err, "invalid port 'x9'"));
	/* 0 means "any free port" to a server, but names no server. */
	assert_int_equal(server_args(3, zero, NULL, &o, &server, err), -EINVAL);
	assert_non_null(strstr(err, "port 0"));
	assert_int_equal(server_args(2, host, "0", &o, &server, err), -EINVAL);
}

/* The end of the option loop: --help, an error, and each kind of operand. */
static int opts_end(int argc, char **argv, int ret, enum rc_operands what, struct rc_opts *o,
		    const char **server, char *err)
{
	rc_opts_init(o, 1);
	optind = 1;
	err[0] = '\0';
	return rc_opts_end(o, ret, argc, argv, what, server, err, 128);
}

static void opts_end_after_the_loop(void **state)
{
	char *none[] = { "prog", NULL };
	char *one[] = { "prog", "h", NULL };
	char *two[] = { "prog", "h", "9000", NULL };
	const char *server = NULL;
	struct rc_opts o;
	char err[128];

	(void)state;
	/* rc_getopt's 2 (--help printed) is the parse functions' 1; its
	 * errors pass as they are, whatever the operands. */
	assert_int_equal(opts_end(2, one, 2, RC_OPERANDS_NONE, &o, &server, err), 1);
	assert_int_equal(opts_end(2, one, -EINVAL, RC_OPERANDS_SERVER, &o, &server, err), -EINVAL);
	/* Servers take no operand. */
	assert_int_equal(opts_end(1, none, 0, RC_OPERANDS_NONE, &o, NULL, err), 0);
	assert_int_equal(opts_end(2, one, 0, RC_OPERANDS_NONE, &o, NULL, err), -EINVAL);
	assert_string_equal(err, "unexpected argument 'h'");
	/* SERVER [PORT]: rc_opts_server_args. */
	assert_int_equal(opts_end(3, two, 0, RC_OPERANDS_SERVER, &o, &server, err), 0);
	assert_string_equal(server, "h");
	assert_string_equal(o.port, "9000");
	assert_int_equal(opts_end(1, none, 0, RC_OPERANDS_SERVER, &o, &server, err), -EINVAL);
	assert_string_equal(err, "missing SERVER");
	/* The caller's own operands stay untouched; only the port is checked. */
	assert_int_equal(opts_end(3, two, 0, RC_OPERANDS_OWN, &o, NULL, err), 0);
	assert_int_equal(optind, 1);
	o.port = "0"; /* -p 0 */
	assert_int_equal(rc_opts_end(&o, 0, 3, two, RC_OPERANDS_OWN, NULL, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "port 0 is not a server port");
}

static void json_escapes_every_unsafe_byte(void **state)
{
	static struct rc_json j;

	(void)state;
	rc_json_init(&j);
	rc_json_str(&j, NULL,
		    "q\" b\\ nl\n tab\t cr\r ctl \x01\x1f del\x7f "
		    "utf8 \xc3\xa9 hi\xff /");
	assert_true(j.complete && !j.err);
	assert_string_equal(j.buf, "\"q\\\" b\\\\ nl\\n tab\\t cr\\u000d ctl \\u0001\\u001f "
				   "del\\u007f utf8 \\u00c3\\u00a9 hi\\u00ff /\"");
	/* Keys are escaped the same way. */
	rc_json_init(&j);
	rc_json_object(&j, NULL);
	rc_json_str(&j, "a\"b", "");
	rc_json_end(&j);
	assert_string_equal(j.buf, "{\"a\\\"b\":\"\"}");
}

static void json_nesting_and_values(void **state)
{
	static struct rc_json j;

	(void)state;
	rc_json_init(&j);
	rc_json_object(&j, NULL);
	rc_json_str(&j, "op", "put");
	rc_json_u64(&j, "bytes", UINT64_MAX);
	rc_json_i64(&j, "neg", -3);
	rc_json_double(&j, "secs", 0.25);
	rc_json_double(&j, "nan", NAN);
	rc_json_double(&j, "inf", INFINITY);
	rc_json_bool(&j, "ok", false);
	rc_json_str(&j, "error", NULL);
	rc_json_object(&j, "lat");
	rc_json_double(&j, "min", 1.5);
	rc_json_end(&j);
	rc_json_object(&j, "empty");
	rc_json_end(&j);
	rc_json_array(&j, "list");
	rc_json_u64(&j, NULL, 1);
	rc_json_array(&j, NULL);
	rc_json_end(&j);
	rc_json_object(&j, NULL);
	rc_json_null(&j, "x");
	rc_json_end(&j);
	rc_json_end(&j);
	rc_json_end(&j);
	assert_int_equal(j.err, 0);
	assert_true(j.complete);
	assert_string_equal(j.buf, "{\"op\":\"put\",\"bytes\":18446744073709551615,\"neg\":-3,"
				   "\"secs\":0.25,\"nan\":null,\"inf\":null,\"ok\":false,"
				   "\"error\":null,\"lat\":{\"min\":1.5},\"empty\":{},"
				   "\"list\":[1,[],{\"x\":null}]}");
}

static void json_rejects_misuse(void **state)
{
	static struct rc_json j;
	FILE *out = tmpfile(); /* each failing finish must write nothing to it */
	int i;

	(void)state;
	assert_non_null(out);
	/* A value without a key in an object, a key in an array, a key at
	 * the top level. */
	rc_json_init(&j);
	rc_json_object(&j, NULL);
	rc_json_u64(&j, NULL, 1);
	assert_int_equal(j.err, -EINVAL);
	rc_json_init(&j);
	rc_json_array(&j, NULL);
	rc_json_u64(&j, "k", 1);
	assert_int_equal(j.err, -EINVAL);
	rc_json_init(&j);
	rc_json_u64(&j, "k", 1);
	assert_int_equal(j.err, -EINVAL);
	/* The first error sticks: later calls change nothing, finish fails. */
	rc_json_end(&j);
	assert_int_equal(j.err, -EINVAL);
	assert_int_equal(rc_json_finish(&j, out), -EINVAL);
	assert_int_equal(ftell(out), 0);
	/* An end too many, a second top-level value, an unclosed object,
	 * nothing at all. */
	rc_json_init(&j);
	rc_json_end(&j);
	assert_int_equal(j.err, -EINVAL);
	rc_json_init(&j);
	rc_json_u64(&j, NULL, 1);
	rc_json_u64(&j, NULL, 2);
	assert_int_equal(j.err, -EINVAL);
	rc_json_init(&j);
	rc_json_object(&j, NULL);
	assert_int_equal(rc_json_finish(&j, out), -EINVAL);
	assert_int_equal(ftell(out), 0);
	rc_json_init(&j);
	assert_int_equal(rc_json_finish(&j, out), -EINVAL);
	assert_int_equal(ftell(out), 0);
	/* Too deep. */
	rc_json_init(&j);
	for (i = 0; i < RC_JSON_MAX_DEPTH; i++)
		rc_json_array(&j, NULL);
	assert_int_equal(j.err, 0);
	rc_json_array(&j, NULL);
	assert_int_equal(j.err, -EINVAL);
	/* Too long: fails whole, never truncated. */
	rc_json_init(&j);
	rc_json_array(&j, NULL);
	for (i = 0; i < RC_JSON_MAX && !j.err; i++)
		rc_json_str(&j, NULL, "\x01");
	assert_int_equal(j.err, -ENOSPC);
	assert_true(j.len < RC_JSON_MAX);
	assert_int_equal(rc_json_finish(&j, out), -ENOSPC);
	assert_int_equal(ftell(out), 0);
	fclose(out);
}

static void json_finish_writes_one_line(void **state)
{
	static struct rc_json j;
	char line[64] = { 0 };
	FILE *f = tmpfile();

	(void)state;
	assert_non_null(f);
	rc_json_init(&j);
	rc_json_object(&j, NULL);
	rc_json_bool(&j, "ok", true);
	rc_json_end(&j);
	assert_int_equal(rc_json_finish(&j, f), 0);
	rewind(f);
	assert_int_equal(fread(line, 1, sizeof(line) - 1, f), 12);
	assert_string_equal(line, "{\"ok\":true}\n");
	fclose(f);
}

static void json_wanted_before_double_dash(void **state)
{
	char *yes[] = { "prog", "-n", "3", "--json", "h", NULL };
	char *no[] = { "prog", "--jsonx", "h", NULL };
	char *after[] = { "prog", "--", "--json", NULL };

	(void)state;
	assert_true(rc_json_wanted(5, yes));
	assert_false(rc_json_wanted(3, no));
	assert_false(rc_json_wanted(3, after));
}

/* Run fn(arg) with stdout going to a temporary file; returns that file,
 * rewound, for the caller to read and close. */
static FILE *stdout_of(void *(*fn)(void *), void *arg)
{
	FILE *f = tmpfile();
	int saved;

	assert_non_null(f);
	fflush(stdout);
	saved = dup(STDOUT_FILENO);
	assert_true(saved >= 0);
	assert_true(dup2(fileno(f), STDOUT_FILENO) >= 0);
	fn(arg);
	fflush(stdout);
	assert_true(dup2(saved, STDOUT_FILENO) >= 0);
	close(saved);
	rewind(f);
	return f;
}

static const char run_line_ok[] =
	"{\"program\":\"rdma-client\",\"example\":\"01_basic-client-server\",\"ok\":true,"
	"\"op\":\"sendrecv\",\"server\":\"10.0.0.1\",\"port\":7471,\"count\":3,\"size\":10,"
	"\"messages\":3,\"bytes\":30,\"seconds\":1.5,\"messages_per_s\":2,"
	"\"latency_us\":{\"min\":1,\"median\":2,\"p99\":3,\"max\":3},\"verified\":true,"
	"\"error\":null,\"exit_code\":0}\n";
static const char run_line_usage[] =
	"{\"program\":\"rdma-client\",\"example\":\"01_basic-client-server\","
	"\"ok\":false,\"error\":\"unknown option '--x'\",\"exit_code\":2}\n";

/* One --json object of a verified run of 3 messages (latencies 3, 1 and
 * 2 us, over 1.5 s), n times. */
static void *print_run_ok(void *n)
{
	int i;

	for (i = 0; i < *(int *)n; i++) {
		uint64_t ns[] = { 3000, 1000, 2000 };
		struct rc_lat lat = { .samples = ns, .n = 3, .elapsed_ns = 1500000000 };

		rc_run_json(&(struct rc_run){ "rdma-client", "01_basic-client-server", "sendrecv",
					      "10.0.0.1", "7471", 3, 10, &lat },
			    RC_EXIT_OK, NULL);
	}
	return NULL;
}

/* A usage error's object: only program, example, ok, error, exit_code. */
static void *print_run_usage(void *n)
{
	struct rc_lat none = { 0 };
	int i;

	for (i = 0; i < *(int *)n; i++)
		rc_run_json(&(struct rc_run){ .program = "rdma-client",
					      .example = "01_basic-client-server",
					      .lat = &none },
			    RC_EXIT_USAGE, "unknown option '--x'");
	return NULL;
}

static void run_json_objects(void **state)
{
	char line[1024];
	int one = 1;
	FILE *f;

	(void)state;
	f = stdout_of(print_run_ok, &one);
	assert_non_null(fgets(line, sizeof(line), f));
	assert_string_equal(line, run_line_ok);
	assert_null(fgets(line, sizeof(line), f));
	fclose(f);
	f = stdout_of(print_run_usage, &one);
	assert_non_null(fgets(line, sizeof(line), f));
	assert_string_equal(line, run_line_usage);
	assert_null(fgets(line, sizeof(line), f));
	fclose(f);
}

/* Two threads printing runs at once: every object comes out whole and
 * right (a text shared between calls would mix them or fail them). */
static void *print_both_at_once(void *n)
{
	pthread_t t;

	assert_int_equal(pthread_create(&t, NULL, print_run_ok, n), 0);
	print_run_usage(n);
	assert_int_equal(pthread_join(t, NULL), 0);
	return NULL;
}

static void run_json_from_two_threads(void **state)
{
	int n = 20000, ok = 0, usage = 0;
	char line[1024];
	FILE *f;

	(void)state;
	f = stdout_of(print_both_at_once, &n);
	while (fgets(line, sizeof(line), f)) {
		if (!strcmp(line, run_line_ok))
			ok++;
		else if (!strcmp(line, run_line_usage))
			usage++;
		else
			fail_msg("a mixed object: %s", line);
	}
	fclose(f);
	assert_int_equal(ok, n);
	assert_int_equal(usage, n);
}

/* A connection's address with another port: the address kept, the port
 * set, other families refused. */
static void addr_with_port_keeps_the_address(void **state)
{
	struct sockaddr_in in4 = { .sin_family = AF_INET, .sin_port = htons(7471) };
	struct sockaddr_in6 in6 = { .sin6_family = AF_INET6,
				    .sin6_port = htons(7471),
				    .sin6_scope_id = 3 };
	struct sockaddr un = { .sa_family = AF_UNIX };
	struct sockaddr_storage out;

	(void)state;
	in4.sin_addr.s_addr = htonl(0x0a00020f);
	in6.sin6_addr.s6_addr[15] = 1;
	assert_int_equal(rc_addr_with_port(&out, (struct sockaddr *)&in4, 49152), 0);
	assert_int_equal(((struct sockaddr_in *)&out)->sin_port, htons(49152));
	assert_int_equal(((struct sockaddr_in *)&out)->sin_addr.s_addr, htonl(0x0a00020f));
	assert_int_equal(rc_addr_with_port(&out, (struct sockaddr *)&in6, 0), 0);
	assert_int_equal(((struct sockaddr_in6 *)&out)->sin6_port, 0);
	assert_int_equal(((struct sockaddr_in6 *)&out)->sin6_scope_id, 3);
	assert_memory_equal(&((struct sockaddr_in6 *)&out)->sin6_addr, &in6.sin6_addr,
			    sizeof(in6.sin6_addr));
	assert_int_equal(rc_addr_with_port(&out, &un, 1), -EAFNOSUPPORT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(hdr_round_trip_is_big_endian),
		cmocka_unit_test(addr_with_port_keeps_the_address),
		cmocka_unit_test(hdr_rejects_malformed),
		cmocka_unit_test(priv_allows_padding_not_truncation),
		cmocka_unit_test(parse_size_units),
		cmocka_unit_test(parse_poll_modes),
		cmocka_unit_test(cq_spin_budget),
		cmocka_unit_test(parse_size_rejects),
		cmocka_unit_test(parse_port_timeout_uint),
		cmocka_unit_test(lesson_names),
		cmocka_unit_test(hints_name_the_cause),
		cmocka_unit_test(fail_keeps_message_and_negates),
		cmocka_unit_test(remote_buf_wire_and_ranges),
		cmocka_unit_test(shared_options),
		cmocka_unit_test(retry_options),
		cmocka_unit_test(client_positional_arguments),
		cmocka_unit_test(opts_end_after_the_loop),
		cmocka_unit_test(json_escapes_every_unsafe_byte),
		cmocka_unit_test(json_nesting_and_values),
		cmocka_unit_test(json_rejects_misuse),
		cmocka_unit_test(json_finish_writes_one_line),
		cmocka_unit_test(json_wanted_before_double_dash),
		cmocka_unit_test(run_json_objects),
		cmocka_unit_test(run_json_from_two_threads),
	};

	return cmocka_run_group_tests_name("common", tests, NULL, NULL);
}
