// SPDX-License-Identifier: MIT
/* Unit tests of 02's messages, options, pattern, checksum and pipelining
 * arithmetic (02_read-write/rw.c). */
#include <endian.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rw.h"

#define ARGV(...) ((char *[]){ "prog", __VA_ARGS__, NULL })
#define ARGC(...) ((int)(sizeof((char *[]){ "prog", __VA_ARGS__ }) / sizeof(char *)))

/* ------------------------------------------------------------------ */
/* HELLO                                                               */
/* ------------------------------------------------------------------ */

static void hello_round_trip_with_padding(void **state)
{
	uint8_t priv[56] = { 0 }; /* as a connect request delivers it */
	struct rw_hello h = { .len = 12345, .ops = RW_OP_BOTH, .read_depth = 16 }, out;
	char err[128];

	(void)state;
	rw_hello_pack(priv, &h);
	assert_int_equal(rw_hello_unpack(priv, sizeof(priv), &out, err, sizeof(err)), 0);
	assert_int_equal(out.len, 12345);
	assert_int_equal(out.ops, RW_OP_BOTH);
	assert_int_equal(out.read_depth, 16);
	assert_int_equal(rw_hello_unpack(priv, RW_HELLO_LEN, &out, err, sizeof(err)), 0);
	/* Big-endian on the wire, whatever the host. */
	assert_int_equal(priv[16], 0);
	assert_int_equal(priv[17], 0);
	assert_int_equal(priv[18], 0x30);
	assert_int_equal(priv[19], 0x39);
	/* 0 = "whatever the server offers"; WRITE only needs no read depth. */
	h = (struct rw_hello){ .len = 0, .ops = RW_OP_WRITE, .read_depth = 0 };
	rw_hello_pack(priv, &h);
	assert_int_equal(rw_hello_unpack(priv, sizeof(priv), &out, err, sizeof(err)), 0);
	assert_int_equal(out.len, 0);
	assert_int_equal(out.ops, RW_OP_WRITE);
}

static void hello_rejects_bad(void **state)
{
	uint8_t priv[56] = { 0 };
	struct rw_hello h = { .len = 4096, .ops = RW_OP_READ, .read_depth = 4 }, out;
	char err[128];

	(void)state;
	/* No private data at all (a client of another program), or zeros. */
	assert_int_equal(rw_hello_unpack(priv, 0, &out, err, sizeof(err)), -EBADMSG);
	assert_int_equal(rw_hello_unpack(priv, sizeof(priv), &out, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "magic"));
	/* Truncated body. */
	rw_hello_pack(priv, &h);
	assert_int_equal(rw_hello_unpack(priv, RW_HELLO_LEN - 1, &out, err, sizeof(err)), -EBADMSG);
	/* Wrong type: 01's HELLO is 0x10. */
	priv[5] = 0x10;
	assert_int_equal(rw_hello_unpack(priv, sizeof(priv), &out, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "type 0x10"));
	/* Unknown operations, READ without depth, depth without READ. */
	h = (struct rw_hello){ .len = 1, .ops = 0, .read_depth = 0 };
	rw_hello_pack(priv, &h);
	assert_int_equal(rw_hello_unpack(priv, sizeof(priv), &out, err, sizeof(err)), -EBADMSG);
	h.ops = 4;
	rw_hello_pack(priv, &h);
	assert_int_equal(rw_hello_unpack(priv, sizeof(priv), &out, err, sizeof(err)), -EBADMSG);
	h.ops = RW_OP_BOTH;
	rw_hello_pack(priv, &h);
	assert_int_equal(rw_hello_unpack(priv, sizeof(priv), &out, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "read depth of 0"));
	h = (struct rw_hello){ .len = 1, .ops = RW_OP_WRITE, .read_depth = 3 };
	rw_hello_pack(priv, &h);
	assert_int_equal(rw_hello_unpack(priv, sizeof(priv), &out, err, sizeof(err)), -EBADMSG);
	/* Too large a buffer. */
	h = (struct rw_hello){ .len = RW_MAX_SIZE + 1, .ops = RW_OP_WRITE };
	rw_hello_pack(priv, &h);
	assert_int_equal(rw_hello_unpack(priv, sizeof(priv), &out, err, sizeof(err)), -ERANGE);
	/* Reserved bytes must be zero, the sequence number 0. */
	h = (struct rw_hello){ .len = 1, .ops = RW_OP_WRITE };
	rw_hello_pack(priv, &h);
	priv[RW_HELLO_LEN - 1] = 1;
	assert_int_equal(rw_hello_unpack(priv, sizeof(priv), &out, err, sizeof(err)), -EBADMSG);
	rw_hello_pack(priv, &h);
	priv[15] = 1; /* seq */
	assert_int_equal(rw_hello_unpack(priv, sizeof(priv), &out, err, sizeof(err)), -EBADMSG);
}

/* The lesson byte of HELLO (and of BUF, which echoes it). */
static void hello_and_buf_carry_the_lesson(void **state)
{
	uint8_t priv[56] = { 0 }, buf[RW_CTRL_MAX];
	struct rw_hello h = { .len = 4095, .ops = RW_OP_BOTH, .read_depth = 8 }, out;
	struct rw_buf b = { .rb = { .addr = 0x1001, .rkey = 7, .len = 4095 },
			    .max_msg_sz = 4096,
			    .ops = RW_OP_BOTH,
			    .read_depth = 8 },
		      bout;
	char err[128];
	unsigned l;
	size_t n;

	(void)state;
	for (l = RW_INJECT_NONE; l < RW_INJECT_COUNT; l++) {
		if (l == RW_INJECT_NO_READ_DEPTH)
			continue; /* below: it needs a read depth of 0 */
		if (l == RW_INJECT_ATOMIC_UNALIGNED || l == RW_INJECT_ATOMIC_NO_ACCESS)
			continue; /* they need an atomic: test-rw-atomic.c */
		h.lesson = (uint8_t)l;
		rw_hello_pack(priv, &h);
		assert_int_equal(priv[sizeof(struct rc_hdr) + 6], l);
		assert_int_equal(rw_hello_unpack(priv, sizeof(priv), &out, err, sizeof(err)), 0);
		assert_int_equal(out.lesson, l);
		b.lesson = (uint8_t)l;
		n = rw_buf_pack(buf, 0, &b);
		assert_int_equal(rw_buf_unpack(buf, n, 0, &bout, err, sizeof(err)), 0);
		assert_int_equal(bout.lesson, l);
	}
	/* An unknown lesson is refused. */
	h.lesson = RW_INJECT_COUNT;
	rw_hello_pack(priv, &h);
	assert_int_equal(rw_hello_unpack(priv, sizeof(priv), &out, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "unknown lesson"));
	b.lesson = 0xff;
	n = rw_buf_pack(buf, 0, &b);
	assert_int_equal(rw_buf_unpack(buf, n, 0, &bout, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "unknown lesson"));
	/* READ with a read depth of 0 only in the no-read-depth lesson, and
	 * that lesson only so. */
	h = (struct rw_hello){ .len = 1, .ops = RW_OP_READ, .lesson = RW_INJECT_NO_READ_DEPTH };
	rw_hello_pack(priv, &h);
	assert_int_equal(rw_hello_unpack(priv, sizeof(priv), &out, err, sizeof(err)), 0);
	assert_int_equal(out.read_depth, 0);
	h.read_depth = 1;
	rw_hello_pack(priv, &h);
	assert_int_equal(rw_hello_unpack(priv, sizeof(priv), &out, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "no-read-depth"));
	h = (struct rw_hello){ .len = 1, .ops = RW_OP_WRITE, .lesson = RW_INJECT_NO_READ_DEPTH };
	rw_hello_pack(priv, &h);
	assert_int_equal(rw_hello_unpack(priv, sizeof(priv), &out, err, sizeof(err)), -EBADMSG);
	b = (struct rw_buf){ .rb = { .addr = 0x1000, .rkey = 1, .len = 1 },
			     .max_msg_sz = 1,
			     .ops = RW_OP_BOTH,
			     .lesson = RW_INJECT_NO_READ_DEPTH };
	n = rw_buf_pack(buf, 0, &b);
	assert_int_equal(rw_buf_unpack(buf, n, 0, &bout, err, sizeof(err)), 0);
	b.lesson = RW_INJECT_NO_REMOTE_READ;
	n = rw_buf_pack(buf, 0, &b);
	assert_int_equal(rw_buf_unpack(buf, n, 0, &bout, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "read depth of 0"));
}

static void inject_names(void **state)
{
	static const char *const names[] = { "bad-rkey",	 "no-remote-read",  "out-of-bounds",
					     "no-read-depth",	 "unaligned",	    "dereg-other",
					     "atomic-unaligned", "atomic-no-access" };
	unsigned i;

	(void)state;
	assert_int_equal(RW_INJECT_COUNT, 1 + sizeof(names) / sizeof(names[0]));
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		assert_int_equal(rw_inject_parse(names[i]), i + 1);
		assert_string_equal(rw_inject_name(i + 1), names[i]);
	}
	assert_string_equal(rw_inject_name(RW_INJECT_NONE), "none");
	assert_string_equal(rw_inject_name(RW_INJECT_COUNT), "(unknown)");
	/* "none" is no lesson to ask for; names match exactly. */
	assert_int_equal(rw_inject_parse("none"), RW_INJECT_COUNT);
	assert_int_equal(rw_inject_parse("bad-rkey "), RW_INJECT_COUNT);
	assert_int_equal(rw_inject_parse(""), RW_INJECT_COUNT);
}

/* ------------------------------------------------------------------ */
/* BUF, DONE, RESULT                                                   */
/* ------------------------------------------------------------------ */

static void buf_round_trip(void **state)
{
	uint8_t buf[RW_CTRL_MAX];
	struct rw_buf b = { .rb = { .addr = 0x7f0012345000ull, .rkey = 0xabcd, .len = 1048576 },
			    .max_msg_sz = 8388608,
			    .ops = RW_OP_BOTH,
			    .read_depth = 16 },
		      out;
	char err[128];
	size_t n;

	(void)state;
	n = rw_buf_pack(buf, 0, &b);
	assert_int_equal(n, RW_BUF_LEN);
	assert_true(n <= RW_CTRL_MAX);
	assert_int_equal(rw_buf_unpack(buf, n, 0, &out, err, sizeof(err)), 0);
	assert_true(out.rb.addr == b.rb.addr);
	assert_int_equal(out.rb.rkey, 0xabcd);
	assert_int_equal(out.rb.len, 1048576);
	assert_int_equal(out.max_msg_sz, 8388608);
	assert_int_equal(out.ops, RW_OP_BOTH);
	assert_int_equal(out.read_depth, 16);
	/* The address is big-endian right after the header. */
	assert_int_equal(buf[16], 0x00);
	assert_int_equal(buf[17], 0x00);
	assert_int_equal(buf[18], 0x7f);
}

static void buf_rejects_bad(void **state)
{
	uint8_t buf[RW_CTRL_MAX];
	struct rw_buf good = { .rb = { .addr = 0x1000, .rkey = 1, .len = 4096 },
			       .max_msg_sz = 4096,
			       .ops = RW_OP_WRITE },
		      b, out;
	char err[128];
	size_t n;

	(void)state;
	n = rw_buf_pack(buf, 0, &good);
	/* byte_len from the completion must match exactly. */
	assert_int_equal(rw_buf_unpack(buf, n - 1, 0, &out, err, sizeof(err)), -EBADMSG);
	assert_int_equal(rw_buf_unpack(buf, 10, 0, &out, err, sizeof(err)), -EBADMSG);
	/* Wrong sequence number, wrong type. */
	assert_int_equal(rw_buf_unpack(buf, n, 1, &out, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "sequence"));
	n = rw_sum_pack(buf, RW_T_RESULT, 0, &(struct rw_sum){ .checksum = 1, .len = 1 });
	assert_int_equal(rw_buf_unpack(buf, n, 0, &out, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "type"));
	/* Field by field. */
	b = good;
	b.rb.len = 0;
	n = rw_buf_pack(buf, 0, &b);
	assert_int_equal(rw_buf_unpack(buf, n, 0, &out, err, sizeof(err)), -EBADMSG);
	b = good;
	b.rb.len = RW_MAX_SIZE + 1;
	n = rw_buf_pack(buf, 0, &b);
	assert_int_equal(rw_buf_unpack(buf, n, 0, &out, err, sizeof(err)), -EBADMSG);
	b = good;
	b.rb.addr = UINT64_MAX - 100;
	n = rw_buf_pack(buf, 0, &b);
	assert_int_equal(rw_buf_unpack(buf, n, 0, &out, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "wraps"));
	b = good;
	b.max_msg_sz = 0;
	n = rw_buf_pack(buf, 0, &b);
	assert_int_equal(rw_buf_unpack(buf, n, 0, &out, err, sizeof(err)), -EBADMSG);
	b = good;
	b.ops = RW_OP_READ; /* READ with a read depth of 0 */
	n = rw_buf_pack(buf, 0, &b);
	assert_int_equal(rw_buf_unpack(buf, n, 0, &out, err, sizeof(err)), -EBADMSG);
	b = good;
	b.ops = 7;
	n = rw_buf_pack(buf, 0, &b);
	assert_int_equal(rw_buf_unpack(buf, n, 0, &out, err, sizeof(err)), -EBADMSG);
	n = rw_buf_pack(buf, 0, &good);
	buf[n - 1] = 1; /* flags: RW_BUF_SHARED, without an atomic */
	assert_int_equal(rw_buf_unpack(buf, n, 0, &out, err, sizeof(err)), -EBADMSG);
	n = rw_buf_pack(buf, 0, &good);
	buf[0] ^= 1; /* magic */
	assert_int_equal(rw_buf_unpack(buf, n, 0, &out, err, sizeof(err)), -EBADMSG);
}

static void sum_round_trip_and_rejects(void **state)
{
	uint8_t buf[RW_CTRL_MAX];
	struct rw_sum s = { .checksum = 0x0123456789abcdefull, .len = 7 }, out;
	char err[128];
	size_t n;

	(void)state;
	n = rw_sum_pack(buf, RW_T_DONE, 1, &s);
	assert_int_equal(n, RW_SUM_LEN);
	assert_int_equal(rw_sum_unpack(buf, n, RW_T_DONE, 1, &out, err, sizeof(err)), 0);
	assert_true(out.checksum == s.checksum);
	assert_int_equal(out.len, 7);
	assert_int_equal(buf[16], 0x01); /* big-endian checksum */
	assert_int_equal(buf[23], 0xef);
	assert_int_equal(rw_sum_unpack(buf, n, RW_T_RESULT, 1, &out, err, sizeof(err)), -EBADMSG);
	assert_int_equal(rw_sum_unpack(buf, n, RW_T_DONE, 2, &out, err, sizeof(err)), -EBADMSG);
	assert_int_equal(rw_sum_unpack(buf, n + 1, RW_T_DONE, 1, &out, err, sizeof(err)), -EBADMSG);
	s.len = 0;
	n = rw_sum_pack(buf, RW_T_DONE, 1, &s);
	assert_int_equal(rw_sum_unpack(buf, n, RW_T_DONE, 1, &out, err, sizeof(err)), -EBADMSG);
	s.len = 1;
	n = rw_sum_pack(buf, RW_T_DONE, 1, &s);
	buf[n - 1] = 9; /* reserved */
	assert_int_equal(rw_sum_unpack(buf, n, RW_T_DONE, 1, &out, err, sizeof(err)), -EBADMSG);
}

/* ------------------------------------------------------------------ */
/* Access flags, pattern, checksum                                     */
/* ------------------------------------------------------------------ */

static void access_flags_per_operation(void **state)
{
	char s[64];

	(void)state;
	assert_int_equal(rw_access_for(RW_OP_WRITE),
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	assert_int_equal(rw_access_for(RW_OP_READ), IBV_ACCESS_REMOTE_READ);
	assert_int_equal(rw_access_for(RW_OP_BOTH),
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	assert_string_equal(rw_access_str(rw_access_for(RW_OP_BOTH), s, sizeof(s)),
			    "LOCAL_WRITE|REMOTE_WRITE|REMOTE_READ");
	assert_string_equal(rw_access_str(0, s, sizeof(s)), "none");
	/* A short buffer is never overrun. */
	rw_access_str(rw_access_for(RW_OP_BOTH), s, 8);
	assert_true(strlen(s) < 8);
	assert_string_equal(rw_ops_str(RW_OP_BOTH), "write+read");
}

static void checksum_is_fnv1a_64(void **state)
{
	(void)state;
	/* The published FNV-1a 64 test vectors. */
	assert_true(rw_checksum("", 0) == 0xcbf29ce484222325ull);
	assert_true(rw_checksum("a", 1) == 0xaf63dc4c8601ec8cull);
	assert_true(rw_checksum("foobar", 6) == 0x85944171f73967e8ull);
	assert_true(rw_checksum("ab", 2) != rw_checksum("ba", 2));
}

static void pattern_properties(void **state)
{
	enum { N = 1000 };
	uint8_t *a = malloc(N), *b = malloc(N), *c = malloc(N);

	(void)state;
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(c);
	rw_fill_pattern(a, N, 1);
	rw_fill_pattern(b, N, 1);
	assert_memory_equal(a, b, N); /* deterministic */
	rw_fill_pattern(c, N, 2);
	assert_memory_not_equal(a, c, N);     /* differs per seed */
	assert_memory_not_equal(a, a + 8, 8); /* differs per offset */
	/* A shorter fill is a prefix of a longer one (any length, not only
	 * multiples of 8). */
	memset(b, 0, N);
	rw_fill_pattern(b, 13, 1);
	assert_memory_equal(a, b, 13);
	assert_int_equal(b[13], 0);
	/* The checker finds the first wrong byte. */
	assert_int_equal(rw_check_pattern(a, N, 1), N);
	assert_int_equal(rw_check_pattern(a, N, 2), 0);
	a[777] ^= 0x40;
	assert_int_equal(rw_check_pattern(a, N, 1), 777);
	assert_int_equal(rw_check_pattern(a, 777, 1), 777);
	assert_int_equal(rw_check_pattern(a, 0, 1), 0);
	free(a);
	free(b);
	free(c);
}

/* ------------------------------------------------------------------ */
/* Splitting and pipelining                                            */
/* ------------------------------------------------------------------ */

static void split_into_max_msg_sz_pieces(void **state)
{
	const uint32_t M = 8u << 20;
	uint64_t off, sum;
	uint32_t len;
	uint64_t i, n;

	(void)state;
	assert_int_equal(rw_pieces(1, M), 1);
	assert_int_equal(rw_pieces(M, M), 1);
	assert_int_equal(rw_pieces(M + 1ull, M), 2);
	assert_int_equal(rw_pieces(3ull * M, M), 3);
	assert_int_equal(rw_pieces(RW_MAX_SIZE, M), 128);
	rw_piece(M + 3ull, M, 0, &off, &len);
	assert_int_equal(off, 0);
	assert_int_equal(len, M);
	rw_piece(M + 3ull, M, 1, &off, &len);
	assert_int_equal(off, M);
	assert_int_equal(len, 3);
	/* The pieces tile the operation exactly, for awkward sizes too. */
	n = rw_pieces(1000003, 4096);
	for (i = 0, sum = 0; i < n; i++) {
		rw_piece(1000003, 4096, i, &off, &len);
		assert_int_equal(off, sum);
		assert_true(len >= 1 && len <= 4096);
		sum += len;
	}
	assert_int_equal(sum, 1000003);
}

static void signalling_never_stalls(void **state)
{
	unsigned depth, every;
	uint64_t total, posted, done, next, j;
	bool seen;

	(void)state;
	assert_int_equal(rw_signal_every(1, 4096), 1);
	assert_int_equal(rw_signal_every(2, 4096), 1);
	assert_int_equal(rw_signal_every(16, 4096), 8);
	/* Large WRs: a completion at least every 4 MiB. */
	assert_int_equal(rw_signal_every(16, 512 << 10), 8);
	assert_int_equal(rw_signal_every(16, 1 << 20), 4);
	assert_int_equal(rw_signal_every(16, (1 << 20) + 1), 3);
	assert_int_equal(rw_signal_every(16, 4 << 20), 1);
	assert_int_equal(rw_signal_every(16, 8 << 20), 1);
	assert_int_equal(rw_signal_every(16, 0), 8);
	assert_true(rw_is_signaled(4, 5, 100)); /* the last WR always */
	assert_false(rw_is_signaled(3, 5, 100));
	/* Simulate the client's loop: fill the window, then wait for the
	 * next signalled WR. It must exist inside the window every time, and
	 * the send queue must never hold more than depth WRs. */
	for (depth = 1; depth <= 20; depth++) {
		every = rw_signal_every(depth, depth % 3 ? 4096 : (depth << 19));
		for (total = 1; total <= 70; total++) {
			posted = done = 0;
			while (done < total) {
				while (posted < total && posted - done < depth)
					posted++;
				assert_true(posted - done <= depth);
				next = rw_next_signaled(done, total, every);
				assert_true(next >= done && next < posted);
				assert_true(rw_is_signaled(next, total, every));
				for (j = done, seen = false; j < next; j++)
					seen |= rw_is_signaled(j, total, every);
				assert_false(seen); /* it really is the first one */
				done = next + 1;
			}
		}
	}
}

static void bandwidth_in_perftest_units(void **state)
{
	double mib, gb;

	(void)state;
	/* 200 MiB in 1 s: 200 MiB/s, 1.6777216 Gb/s. */
	rw_bandwidth(200ull << 20, 1000000000ull, &mib, &gb);
	assert_true(mib > 199.999 && mib < 200.001);
	assert_true(gb > 1.67772 && gb < 1.67773);
	rw_bandwidth(1000, 0, &mib, &gb); /* never divides by zero */
	assert_true(mib > 0);
}

/* ------------------------------------------------------------------ */
/* Options                                                             */
/* ------------------------------------------------------------------ */

static void client_options(void **state)
{
	struct rw_client_opts o;
	char err[128];

	(void)state;
	assert_int_equal(rw_parse_client(ARGC("10.0.0.1"), ARGV("10.0.0.1"), &o, err, sizeof(err)),
			 0);
	assert_string_equal(o.server, "10.0.0.1");
	assert_string_equal(o.rc.port, RC_DEFAULT_PORT);
	assert_int_equal(o.ops, RW_OP_BOTH);
	assert_int_equal(o.size, 0); /* the advertised length */
	assert_int_equal(o.iters, 1);
	assert_int_equal(o.depth, RW_DEFAULT_DEPTH);
	assert_int_equal(o.rc.timeout_ms, 10000);
	assert_int_equal(o.inject, RW_INJECT_NONE);
	assert_false(o.rc.verbose);
	assert_int_equal(o.rc.poll, RC_POLL_EVENT);
	assert_false(o.json);
	assert_int_equal(o.rc.ack_timeout, RC_DEFAULT_ACK_TIMEOUT);
	assert_int_equal(o.rc.retry_count, RC_DEFAULT_RETRY_COUNT);
	assert_int_equal(rw_parse_client(ARGC("--ack-timeout", "20", "--retry-count", "7", "h"),
					 ARGV("--ack-timeout", "20", "--retry-count", "7", "h"), &o,
					 err, sizeof(err)),
			 0);
	assert_int_equal(o.rc.ack_timeout, 20);
	assert_int_equal(o.rc.retry_count, 7);
	assert_int_equal(rw_parse_client(ARGC("--retry-count", "8", "h"),
					 ARGV("--retry-count", "8", "h"), &o, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "invalid retry count '8' (0 to 7)"));

	assert_int_equal(
		rw_parse_client(ARGC("h", "--json"), ARGV("h", "--json"), &o, err, sizeof(err)), 0);
	assert_true(o.json);
	assert_string_equal(o.server, "h");
	assert_int_equal(
		rw_parse_client(ARGC("--json=1", "h"), ARGV("--json=1", "h"), &o, err, sizeof(err)),
		-EINVAL);
	assert_non_null(strstr(err, "takes no value"));

	assert_int_equal(rw_parse_client(ARGC("--op", "write", "-s", "64K", "-n", "200", "-t", "1",
					      "--timeout", "2.5", "-v", "h", "99"),
					 ARGV("--op", "write", "-s", "64K", "-n", "200", "-t", "1",
					      "--timeout", "2.5", "-v", "h", "99"),
					 &o, err, sizeof(err)),
			 0);
	assert_int_equal(o.ops, RW_OP_WRITE);
	assert_int_equal(o.size, 65536);
	assert_int_equal(o.iters, 200);
	assert_int_equal(o.depth, 1);
	assert_int_equal(o.rc.timeout_ms, 2500);
	assert_true(o.rc.verbose);
	assert_string_equal(o.rc.port, "99");

	assert_int_equal(rw_parse_client(ARGC("--op=read", "-p", "5000", "-s", "1", "h"),
					 ARGV("--op=read", "-p", "5000", "-s", "1", "h"), &o, err,
					 sizeof(err)),
			 0);
	assert_int_equal(o.ops, RW_OP_READ);
	assert_string_equal(o.rc.port, "5000");
	assert_int_equal(o.size, 1);
	assert_int_equal(rw_parse_client(ARGC("--inject", "bad-rkey", "-t", "1024", "h"),
					 ARGV("--inject", "bad-rkey", "-t", "1024", "h"), &o, err,
					 sizeof(err)),
			 0);
	assert_int_equal(o.inject, RW_INJECT_BAD_RKEY);
	assert_int_equal(o.depth, 1024);
	/* Every lesson by name; the READ lessons with --op read too, and
	 * unaligned with either operation alone. */
	assert_int_equal(rw_parse_client(ARGC("--inject", "no-remote-read", "h"),
					 ARGV("--inject", "no-remote-read", "h"), &o, err,
					 sizeof(err)),
			 0);
	assert_int_equal(o.inject, RW_INJECT_NO_REMOTE_READ);
	assert_int_equal(rw_parse_client(ARGC("--inject=out-of-bounds", "--op", "read", "h"),
					 ARGV("--inject=out-of-bounds", "--op", "read", "h"), &o,
					 err, sizeof(err)),
			 0);
	assert_int_equal(o.inject, RW_INJECT_OUT_OF_BOUNDS);
	assert_int_equal(o.ops, RW_OP_READ);
	assert_int_equal(rw_parse_client(ARGC("--inject", "no-read-depth", "h"),
					 ARGV("--inject", "no-read-depth", "h"), &o, err,
					 sizeof(err)),
			 0);
	assert_int_equal(o.inject, RW_INJECT_NO_READ_DEPTH);
	assert_int_equal(rw_parse_client(ARGC("--inject", "unaligned", "--op", "write", "h"),
					 ARGV("--inject", "unaligned", "--op", "write", "h"), &o,
					 err, sizeof(err)),
			 0);
	assert_int_equal(o.inject, RW_INJECT_UNALIGNED);
	assert_int_equal(rw_parse_client(ARGC("--inject", "unaligned", "--op", "read", "h"),
					 ARGV("--inject", "unaligned", "--op", "read", "h"), &o,
					 err, sizeof(err)),
			 0);
	assert_int_equal(rw_parse_client(ARGC("--inject", "dereg-other", "h"),
					 ARGV("--inject", "dereg-other", "h"), &o, err,
					 sizeof(err)),
			 0);
	assert_int_equal(o.inject, RW_INJECT_DEREG_OTHER);
	assert_int_equal(rw_parse_client(ARGC("--poll", "busy", "h"), ARGV("--poll", "busy", "h"),
					 &o, err, sizeof(err)),
			 0);
	assert_int_equal(o.rc.poll, RC_POLL_BUSY);
	assert_int_equal(
		rw_parse_client(ARGC("-s", "1G", "h"), ARGV("-s", "1G", "h"), &o, err, sizeof(err)),
		0);
	assert_int_equal(o.size, RW_MAX_SIZE);
}

/* Each call must fail with -EINVAL and a message containing `what`. */
static void expect_client_error(int argc, char **argv, const char *what)
{
	struct rw_client_opts o;
	char err[128] = "";

	assert_int_equal(rw_parse_client(argc, argv, &o, err, sizeof(err)), -EINVAL);
	if (!strstr(err, what))
		fail_msg("error '%s' lacks '%s'", err, what);
}

static void client_options_rejected(void **state)
{
	/* The lessons that post a READ. */
	static char *const readers[] = { "no-remote-read", "out-of-bounds", "no-read-depth",
					 "dereg-other" };
	char what[96];
	unsigned i;

	(void)state;
	expect_client_error(1, ARGV(NULL), "missing SERVER");
	expect_client_error(ARGC("--op", "copy", "h"), ARGV("--op", "copy", "h"),
			    "unknown --op 'copy'");
	expect_client_error(ARGC("--op", "", "h"), ARGV("--op", "", "h"), "unknown --op");
	expect_client_error(ARGC("-s", "0", "h"), ARGV("-s", "0", "h"), "invalid size");
	expect_client_error(ARGC("-s", "2G", "h"), ARGV("-s", "2G", "h"), "invalid size");
	expect_client_error(ARGC("-s", "1X", "h"), ARGV("-s", "1X", "h"), "invalid size");
	expect_client_error(ARGC("-n", "0", "h"), ARGV("-n", "0", "h"), "invalid iteration");
	expect_client_error(ARGC("-n", "-5", "h"), ARGV("-n", "-5", "h"), "invalid iteration");
	expect_client_error(ARGC("-t", "0", "h"), ARGV("-t", "0", "h"), "invalid depth");
	expect_client_error(ARGC("-t", "1025", "h"), ARGV("-t", "1025", "h"), "invalid depth");
	expect_client_error(ARGC("--inject", "bad-lkey", "h"), ARGV("--inject", "bad-lkey", "h"),
			    "unknown --inject");
	expect_client_error(ARGC("--inject", "bad-rkey", "--op", "read", "h"),
			    ARGV("--inject", "bad-rkey", "--op", "read", "h"), "--op write");
	expect_client_error(ARGC("--inject", "none", "h"), ARGV("--inject", "none", "h"),
			    "unknown --inject 'none' (bad-rkey, no-remote-read");
	expect_client_error(ARGC("--inject", "", "h"), ARGV("--inject", "", "h"),
			    "unknown --inject ''");
	for (i = 0; i < sizeof(readers) / sizeof(readers[0]); i++) {
		snprintf(what, sizeof(what), "--inject %s posts a READ: use --op read or both",
			 readers[i]);
		expect_client_error(ARGC("--inject", readers[i], "--op", "write", "h"),
				    ARGV("--inject", readers[i], "--op", "write", "h"), what);
	}
	expect_client_error(ARGC("--timeout", "0", "h"), ARGV("--timeout", "0", "h"),
			    "invalid timeout");
	expect_client_error(ARGC("--poll", "spin", "h"), ARGV("--poll", "spin", "h"),
			    "invalid poll mode");
	expect_client_error(ARGC("--bogus", "h"), ARGV("--bogus", "h"), "unknown option '--bogus'");
	expect_client_error(ARGC("h", "-n"), ARGV("h", "-n"), "needs a value");
	expect_client_error(ARGC("h", "70000"), ARGV("h", "70000"), "invalid port");
	expect_client_error(ARGC("h", "0"), ARGV("h", "0"), "port 0");
	expect_client_error(ARGC("-p", "1", "h", "2"), ARGV("-p", "1", "h", "2"), "two different");
	expect_client_error(ARGC("h", "1", "extra"), ARGV("h", "1", "extra"), "unexpected");
}

static void server_options(void **state)
{
	struct rw_server_opts o;
	char err[128];

	(void)state;
	assert_int_equal(rw_parse_server(1, ARGV(NULL), &o, err, sizeof(err)), 0);
	assert_string_equal(o.rc.port, RC_DEFAULT_PORT);
	assert_null(o.rc.bind);
	assert_int_equal(o.size, RW_DEFAULT_SIZE);
	assert_false(o.rc.once);
	assert_int_equal(o.rc.max_clients, 16);
	assert_int_equal(o.rc.timeout_ms, 10000);
	assert_int_equal(rw_parse_server(ARGC("--ack-timeout", "18", "--retry-count", "2"),
					 ARGV("--ack-timeout", "18", "--retry-count", "2"), &o, err,
					 sizeof(err)),
			 0);
	assert_int_equal(o.rc.ack_timeout, 18);
	assert_int_equal(o.rc.retry_count, 2);
	assert_int_equal(rw_parse_server(ARGC("--ack-timeout", "40"), ARGV("--ack-timeout", "40"),
					 &o, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "invalid ACK timeout '40' (0 to 31"));
	assert_int_equal(rw_parse_server(ARGC("-p", "0", "-b", "10.0.2.15", "-s", "16M", "--once",
					      "--max-clients", "3", "--timeout", "1", "-v"),
					 ARGV("-p", "0", "-b", "10.0.2.15", "-s", "16M", "--once",
					      "--max-clients", "3", "--timeout", "1", "-v"),
					 &o, err, sizeof(err)),
			 0);
	assert_string_equal(o.rc.port, "0");
	assert_string_equal(o.rc.bind, "10.0.2.15");
	assert_int_equal(o.size, 16u << 20);
	assert_true(o.rc.once);
	assert_int_equal(o.rc.max_clients, 3);
	assert_int_equal(o.rc.timeout_ms, 1000);
	assert_true(o.rc.verbose);
	assert_int_equal(rw_parse_server(ARGC("--poll", "busy"), ARGV("--poll", "busy"), &o, err,
					 sizeof(err)),
			 0);
	assert_int_equal(o.rc.poll, RC_POLL_BUSY);
	assert_int_equal(rw_parse_server(ARGC("-p", "x"), ARGV("-p", "x"), &o, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(rw_parse_server(ARGC("-s", "0"), ARGV("-s", "0"), &o, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(rw_parse_server(ARGC("-s", "2G"), ARGV("-s", "2G"), &o, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(rw_parse_server(ARGC("--max-clients", "0"), ARGV("--max-clients", "0"), &o,
					 err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(rw_parse_server(ARGC("stray"), ARGV("stray"), &o, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(
		rw_parse_server(ARGC("--op", "write"), ARGV("--op", "write"), &o, err, sizeof(err)),
		-EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(hello_round_trip_with_padding),
		cmocka_unit_test(hello_rejects_bad),
		cmocka_unit_test(hello_and_buf_carry_the_lesson),
		cmocka_unit_test(inject_names),
		cmocka_unit_test(buf_round_trip),
		cmocka_unit_test(buf_rejects_bad),
		cmocka_unit_test(sum_round_trip_and_rejects),
		cmocka_unit_test(access_flags_per_operation),
		cmocka_unit_test(checksum_is_fnv1a_64),
		cmocka_unit_test(pattern_properties),
		cmocka_unit_test(split_into_max_msg_sz_pieces),
		cmocka_unit_test(signalling_never_stalls),
		cmocka_unit_test(bandwidth_in_perftest_units),
		cmocka_unit_test(client_options),
		cmocka_unit_test(client_options_rejected),
		cmocka_unit_test(server_options),
	};

	return cmocka_run_group_tests_name("02 read-write", tests, NULL, NULL);
}
