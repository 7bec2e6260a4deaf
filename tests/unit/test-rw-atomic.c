// SPDX-License-Identifier: MIT
/* Unit tests of 02's atomics on the wire and on the command line
 * (02_read-write/rw.c, atomic.c): the HELLO's and BUF's new values, what
 * old peers see of them, access flags, and the options. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "atomic.h"
#include "rw.h"

#define ARGV(...) ((char *[]){ "prog", __VA_ARGS__, NULL })
#define ARGC(...) ((int)(sizeof((char *[]){ "prog", __VA_ARGS__ }) / sizeof(char *)))

static int hello_of(const struct rw_hello *h, struct rw_hello *out, char *err, size_t errlen)
{
	uint8_t priv[56] = { 0 };

	rw_hello_pack(priv, h);
	return rw_hello_unpack(priv, sizeof(priv), out, err, errlen);
}

static int buf_of(const struct rw_buf *b, struct rw_buf *out, char *err, size_t errlen)
{
	uint8_t buf[RW_CTRL_MAX];
	size_t n = rw_buf_pack(buf, 0, b);

	return rw_buf_unpack(buf, n, 0, out, err, errlen);
}

static void hello_with_atomics(void **state)
{
	struct rw_hello h = { .len = RW_WORD, .ops = RW_OP_FETCH_ADD, .read_depth = 16 }, out;
	uint8_t priv[56] = { 0 };
	char err[160];

	(void)state;
	assert_int_equal(hello_of(&h, &out, err, sizeof(err)), 0);
	assert_int_equal(out.ops, RW_OP_FETCH_ADD);
	assert_int_equal(out.len, RW_WORD);
	/* The new values are in the old bytes: ops at body byte 4. */
	rw_hello_pack(priv, &h);
	assert_int_equal(priv[sizeof(struct rc_hdr) + 4], 4);
	h.ops = RW_OP_CMP_SWAP;
	assert_int_equal(hello_of(&h, &out, err, sizeof(err)), 0);
	assert_int_equal(out.ops, RW_OP_CMP_SWAP);
	/* Atomics take responder resources, as READ does. */
	h.read_depth = 0;
	assert_int_equal(hello_of(&h, &out, err, sizeof(err)), -EBADMSG);
	assert_string_equal(err, "cmp-swap with a read depth of 0");
	/* One kind of operation at a time: no atomic with WRITE or READ, no
	 * two atomics, no unknown bit. */
	for (unsigned ops = 0; ops < 256; ops++) {
		bool valid = ops == 1 || ops == 2 || ops == 3 || ops == 4 || ops == 8;

		h = (struct rw_hello){ .len = 8, .ops = (uint8_t)ops, .read_depth = 1 };
		if (ops == RW_OP_WRITE)
			h.read_depth = 0;
		assert_int_equal(hello_of(&h, &out, err, sizeof(err)), valid ? 0 : -EBADMSG);
		if (!valid)
			assert_non_null(strstr(err, "unknown operations"));
	}
	/* A read depth without READ or an atomic. */
	h = (struct rw_hello){ .len = 8, .ops = RW_OP_WRITE, .read_depth = 2 };
	assert_int_equal(hello_of(&h, &out, err, sizeof(err)), -EBADMSG);
	assert_string_equal(err, "read depth 2 without RDMA READ or atomics");
}

static void atomic_lessons_need_an_atomic(void **state)
{
	static const unsigned atomic_lessons[] = { RW_INJECT_ATOMIC_UNALIGNED,
						   RW_INJECT_ATOMIC_NO_ACCESS };
	struct rw_hello h, out;
	struct rw_buf b, bout;
	char err[160];
	unsigned i, l;

	(void)state;
	for (i = 0; i < 2; i++) {
		l = atomic_lessons[i];
		h = (struct rw_hello){ .len = 16, .ops = RW_OP_CMP_SWAP, .read_depth = 4 };
		h.lesson = (uint8_t)l;
		assert_int_equal(hello_of(&h, &out, err, sizeof(err)), 0);
		assert_int_equal(out.lesson, l);
		b = (struct rw_buf){ .rb = { .addr = 0x1000, .rkey = 1, .len = 16 },
				     .max_msg_sz = 4096,
				     .ops = RW_OP_FETCH_ADD,
				     .read_depth = 4,
				     .lesson = (uint8_t)l };
		assert_int_equal(buf_of(&b, &bout, err, sizeof(err)), 0);
		assert_int_equal(bout.lesson, l);
		/* The same lesson with WRITE and READ is refused. */
		h.ops = RW_OP_BOTH;
		assert_int_equal(hello_of(&h, &out, err, sizeof(err)), -EBADMSG);
		assert_non_null(strstr(err, "with operations write+read"));
	}
	/* And a lesson of WRITE and READ with an atomic. */
	h = (struct rw_hello){ .len = 8, .ops = RW_OP_FETCH_ADD, .read_depth = 4 };
	h.lesson = RW_INJECT_BAD_RKEY;
	assert_int_equal(hello_of(&h, &out, err, sizeof(err)), -EBADMSG);
	assert_string_equal(err, "lesson bad-rkey with operations fetch-add");
}

static void buf_flags(void **state)
{
	struct rw_buf b = { .rb = { .addr = 0x7f0000001000, .rkey = 0x1234, .len = RW_WORD },
			    .max_msg_sz = 1 << 23,
			    .ops = RW_OP_FETCH_ADD,
			    .read_depth = 16,
			    .flags = RW_BUF_SHARED },
		      out;
	uint8_t buf[RW_CTRL_MAX];
	char err[160];
	size_t n;

	(void)state;
	assert_int_equal(buf_of(&b, &out, err, sizeof(err)), 0);
	assert_int_equal(out.flags, RW_BUF_SHARED);
	/* The flags are the body's last byte, reserved (0) before. */
	n = rw_buf_pack(buf, 0, &b);
	assert_int_equal(buf[n - 1], RW_BUF_SHARED);
	b.flags = 0;
	n = rw_buf_pack(buf, 0, &b);
	assert_int_equal(buf[n - 1], 0);
	/* An unknown flag, and a flag without an atomic. */
	b.flags = 2;
	assert_int_equal(buf_of(&b, &out, err, sizeof(err)), -EBADMSG);
	assert_string_equal(err, "BUF with unknown flags 0x02");
	b.flags = RW_BUF_SHARED;
	b.ops = RW_OP_READ;
	assert_int_equal(buf_of(&b, &out, err, sizeof(err)), -EBADMSG);
	assert_string_equal(err, "BUF flags 0x01 without an atomic");
	/* An atomic with a read depth of 0. */
	b = (struct rw_buf){ .rb = { .addr = 0x1000, .rkey = 1, .len = 8 },
			     .max_msg_sz = 1,
			     .ops = RW_OP_FETCH_ADD };
	assert_int_equal(buf_of(&b, &out, err, sizeof(err)), -EBADMSG);
	assert_string_equal(err, "fetch-add with a read depth of 0");
}

static void access_and_names(void **state)
{
	char s[80];

	(void)state;
	/* REMOTE_ATOMIC only for atomics, with the LOCAL_WRITE it requires. */
	assert_int_equal(rw_access_for(RW_OP_FETCH_ADD),
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
	assert_int_equal(rw_access_for(RW_OP_CMP_SWAP),
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
	assert_int_equal(rw_access_for(RW_OP_BOTH) & IBV_ACCESS_REMOTE_ATOMIC, 0);
	assert_string_equal(rw_access_str(rw_access_for(RW_OP_FETCH_ADD), s, sizeof(s)),
			    "LOCAL_WRITE|REMOTE_ATOMIC");
	assert_string_equal(rw_ops_str(RW_OP_FETCH_ADD), "fetch-add");
	assert_string_equal(rw_ops_str(RW_OP_CMP_SWAP), "cmp-swap");
	assert_string_equal(rw_ops_str(RW_OP_FETCH_ADD | RW_OP_WRITE), "?");
	assert_string_equal(rw_depth_name(RW_OP_CMP_SWAP), "atomic depth");
	assert_string_equal(rw_depth_name(RW_OP_READ), "read depth");
	assert_true(rw_ops_responder(RW_OP_FETCH_ADD));
	assert_true(rw_ops_responder(RW_OP_READ));
	assert_false(rw_ops_responder(RW_OP_WRITE));
	assert_string_equal(rw_atomic_cap_name(IBV_ATOMIC_NONE), "IBV_ATOMIC_NONE");
	assert_string_equal(rw_atomic_cap_name(IBV_ATOMIC_HCA), "IBV_ATOMIC_HCA");
	assert_string_equal(rw_atomic_cap_name(IBV_ATOMIC_GLOB), "IBV_ATOMIC_GLOB");
	assert_string_equal(rw_atomic_cap_name((enum ibv_atomic_cap)7), "(unknown)");
	assert_non_null(strstr(rw_atomic_cap_meaning(IBV_ATOMIC_HCA), "this device only"));
}

static void word_is_host_order(void **state)
{
	const uint64_t v = 0x0123456789abcdefull;
	uint8_t b[RW_WORD];

	(void)state;
	memcpy(b, &v, sizeof(v));
	assert_true(rw_word_load(b) == v);
	/* At any address: the word the NIC wrote need not be aligned here. */
	uint8_t odd[RW_WORD + 1];
	memcpy(odd + 1, &v, sizeof(v));
	assert_true(rw_word_load(odd + 1) == v);
}

static void options_for_atomics(void **state)
{
	struct rw_client_opts o;
	char err[200];

	(void)state;
	assert_int_equal(rw_parse_client(ARGC("-o", "fetch-add", "h"), ARGV("-o", "fetch-add", "h"),
					 &o, err, sizeof(err)),
			 0);
	assert_int_equal(o.ops, RW_OP_FETCH_ADD);
	assert_int_equal(o.size, RW_WORD); /* the word, asked for in HELLO */
	assert_true(o.add == 1 && !o.shared);
	assert_int_equal(rw_parse_client(ARGC("--op", "cmp-swap", "--add", "4294967295", "h"),
					 ARGV("--op", "cmp-swap", "--add", "4294967295", "h"), &o,
					 err, sizeof(err)),
			 0);
	assert_int_equal(o.ops, RW_OP_CMP_SWAP);
	assert_true(o.add == 4294967295u);
	assert_int_equal(rw_parse_client(ARGC("--op", "fetch-add", "--shared", "-n", "7", "h"),
					 ARGV("--op", "fetch-add", "--shared", "-n", "7", "h"), &o,
					 err, sizeof(err)),
			 0);
	assert_true(o.shared && o.iters == 7);
	/* An atomic lesson without --op does a fetch-add; the unaligned one
	 * asks for two words, so that its word 4 bytes in lies inside. */
	assert_int_equal(rw_parse_client(ARGC("--inject", "atomic-unaligned", "h"),
					 ARGV("--inject", "atomic-unaligned", "h"), &o, err,
					 sizeof(err)),
			 0);
	assert_true(o.ops == RW_OP_FETCH_ADD && o.size == RW_ATOMIC_LESSON_LEN);
	assert_int_equal(
		rw_parse_client(ARGC("-o", "cmp-swap", "--inject", "atomic-no-access", "h"),
				ARGV("-o", "cmp-swap", "--inject", "atomic-no-access", "h"), &o,
				err, sizeof(err)),
		0);
	assert_true(o.ops == RW_OP_CMP_SWAP && o.size == RW_WORD);
}

static void options_for_atomics_rejected(void **state)
{
	const struct {
		int argc;
		char **argv;
		const char *msg;
	} bad[] = {
		{ ARGC("--op", "fetch-add", "-s", "8", "h"),
		  ARGV("--op", "fetch-add", "-s", "8", "h"), "--size is not for atomics" },
		{ ARGC("--add", "2", "h"), ARGV("--add", "2", "h"), "--add is for --op fetch-add" },
		{ ARGC("--op", "fetch-add", "--add", "0", "h"),
		  ARGV("--op", "fetch-add", "--add", "0", "h"), "invalid --add '0'" },
		{ ARGC("--op", "fetch-add", "--add", "4294967296", "h"),
		  ARGV("--op", "fetch-add", "--add", "4294967296", "h"), "invalid --add" },
		{ ARGC("--shared", "h"), ARGV("--shared", "h"), "--shared is for --op fetch-add" },
		{ ARGC("--op", "cmp-swap", "--shared", "h"),
		  ARGV("--op", "cmp-swap", "--shared", "h"), "--shared is for --op fetch-add" },
		{ ARGC("--op", "both", "--inject", "atomic-unaligned", "h"),
		  ARGV("--op", "both", "--inject", "atomic-unaligned", "h"),
		  "--inject atomic-unaligned posts an atomic" },
		{ ARGC("--op", "fetch-add", "--inject", "no-remote-read", "h"),
		  ARGV("--op", "fetch-add", "--inject", "no-remote-read", "h"),
		  "--inject no-remote-read posts a READ" },
		{ ARGC("--op", "swap", "h"), ARGV("--op", "swap", "h"),
		  "(write, read, both, fetch-add or cmp-swap)" },
	};
	struct rw_client_opts o;
	char err[200];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(rw_parse_client(bad[i].argc, bad[i].argv, &o, err, sizeof(err)),
				 -EINVAL);
		if (!strstr(err, bad[i].msg))
			fail_msg("case %zu: '%s' lacks '%s'", i, err, bad[i].msg);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(hello_with_atomics),
		cmocka_unit_test(atomic_lessons_need_an_atomic),
		cmocka_unit_test(buf_flags),
		cmocka_unit_test(access_and_names),
		cmocka_unit_test(word_is_host_order),
		cmocka_unit_test(options_for_atomics),
		cmocka_unit_test(options_for_atomics_rejected),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
