// SPDX-License-Identifier: MIT
/* Unit tests of 03's messages, names and endpoints (03_file-transfer/
 * xfer-msg.c, xfer-name.c, xfer-opts.c's endpoints); the options and
 * limits: test-xfer-opts.c; the checksums: test-xfer-hash.c; the files
 * and the disk thread: test-xfer-file.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "xfer-msg.h"
#include "xfer-name.h"
#include "xfer-opts.h"

#define ARGV(...) ((char *[]){ "prog", __VA_ARGS__, NULL })
#define ARGC(...) ((int)(sizeof((char *[]){ "prog", __VA_ARGS__ }) / sizeof(char *)))

#define GiB (1ull << 30)

/* ------------------------------------------------------------------ */
/* HELLO                                                               */
/* ------------------------------------------------------------------ */

static void hello_round_trip_with_padding(void **state)
{
	uint8_t priv[56] = { 0 }; /* as a connect request delivers it */
	struct xfer_hello h = { .op = XFER_GET,
				.version = XFER_PROTO_VERSION,
				.depth = 16,
				.chunk = 1u << 20 },
			  out;
	char err[160];

	(void)state;
	assert_int_equal(xfer_hello_pack(priv, &h), XFER_HELLO_LEN);
	assert_int_equal(xfer_hello_unpack(priv, sizeof(priv), &out, err, sizeof(err)), 0);
	assert_int_equal(out.op, XFER_GET);
	assert_int_equal(out.version, XFER_PROTO_VERSION);
	assert_int_equal(priv[16 + 1], XFER_PROTO_VERSION); /* the version byte */
	assert_int_equal(out.depth, 16);
	assert_int_equal(out.chunk, 1u << 20);
	assert_int_equal(xfer_hello_unpack(priv, XFER_HELLO_LEN, &out, err, sizeof(err)), 0);
	/* Big-endian on the wire: depth at body offset 2, chunk at 4. */
	assert_int_equal(priv[16 + 2], 0);
	assert_int_equal(priv[16 + 3], 16);
	assert_int_equal(priv[16 + 5], 0x10);
}

static void hello_rejects_bad(void **state)
{
	uint8_t priv[56] = { 0 };
	struct xfer_hello h = { .op = XFER_PUT,
				.version = XFER_PROTO_VERSION,
				.depth = 4,
				.chunk = 65536 },
			  out;
	char err[160];

	(void)state;
	/* Nothing, zeros, truncated. */
	assert_int_equal(xfer_hello_unpack(priv, 0, &out, err, sizeof(err)), -EBADMSG);
	assert_int_equal(xfer_hello_unpack(priv, sizeof(priv), &out, err, sizeof(err)), -EBADMSG);
	xfer_hello_pack(priv, &h);
	assert_int_equal(xfer_hello_unpack(priv, XFER_HELLO_LEN - 1, &out, err, sizeof(err)),
			 -EBADMSG);
	/* Unknown op. */
	h.op = 3;
	xfer_hello_pack(priv, &h);
	assert_int_equal(xfer_hello_unpack(priv, sizeof(priv), &out, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "operation"));
	/* Depth and chunk outside what the protocol expresses. */
	h = (struct xfer_hello){
		.op = XFER_PUT, .version = XFER_PROTO_VERSION, .depth = 0, .chunk = 65536
	};
	xfer_hello_pack(priv, &h);
	assert_int_equal(xfer_hello_unpack(priv, sizeof(priv), &out, err, sizeof(err)), -ERANGE);
	h.depth = XFER_MAX_DEPTH + 1;
	xfer_hello_pack(priv, &h);
	assert_int_equal(xfer_hello_unpack(priv, sizeof(priv), &out, err, sizeof(err)), -ERANGE);
	h.depth = 1;
	h.chunk = XFER_MIN_CHUNK - 1;
	xfer_hello_pack(priv, &h);
	assert_int_equal(xfer_hello_unpack(priv, sizeof(priv), &out, err, sizeof(err)), -ERANGE);
	h.chunk = XFER_MAX_CHUNK + 1;
	xfer_hello_pack(priv, &h);
	assert_int_equal(xfer_hello_unpack(priv, sizeof(priv), &out, err, sizeof(err)), -ERANGE);
	/* Another protocol version: 0 is what version 1 sent (a reserved
	 * byte then); the answer names both versions. */
	h.chunk = 65536;
	xfer_hello_pack(priv, &h);
	priv[17] = 0;
	assert_int_equal(xfer_hello_unpack(priv, sizeof(priv), &out, err, sizeof(err)), -EPROTO);
	assert_non_null(strstr(err, "03 protocol version 1, this server version 6"));
	assert_true(strlen(err) <= XFER_REJECT_MAX);
	/* Version 2 (one XXH3 stream, no chunk digests) is refused too,
	 * with both versions named. */
	priv[17] = 2;
	assert_int_equal(xfer_hello_unpack(priv, sizeof(priv), &out, err, sizeof(err)), -EPROTO);
	assert_string_equal(err, "the client speaks 03 protocol version 2, this server version 6: "
				 "use rdma-client and rdma-server of one release");
	/* Version 3 (the client READ the ring slot; no addr/rkey in a
	 * CHUNK), version 4 (the get's READs on the one connection), version
	 * 5 (no ZEROCOPY flag) and a newer one: refused, both named. */
	priv[17] = 3;
	assert_int_equal(xfer_hello_unpack(priv, sizeof(priv), &out, err, sizeof(err)), -EPROTO);
	assert_non_null(strstr(err, "version 3, this server version 6"));
	priv[17] = 4;
	assert_int_equal(xfer_hello_unpack(priv, sizeof(priv), &out, err, sizeof(err)), -EPROTO);
	assert_non_null(strstr(err, "version 4, this server version 6"));
	priv[17] = 5;
	assert_int_equal(xfer_hello_unpack(priv, sizeof(priv), &out, err, sizeof(err)), -EPROTO);
	assert_non_null(strstr(err, "version 5, this server version 6"));
	priv[17] = 7;
	assert_int_equal(xfer_hello_unpack(priv, sizeof(priv), &out, err, sizeof(err)), -EPROTO);
	assert_non_null(strstr(err, "version 7, this server version 6"));
	/* Another type where HELLO belongs (01's HELLO is 0x10). */
	xfer_hello_pack(priv, &h);
	priv[5] = 0x10;
	assert_int_equal(xfer_hello_unpack(priv, sizeof(priv), &out, err, sizeof(err)), -EBADMSG);
	/* A sequence number other than 0 (found by fuzz-xfer: accepted before). */
	xfer_hello_pack(priv, &h);
	priv[15] = 5;
	assert_int_equal(xfer_hello_unpack(priv, sizeof(priv), &out, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "sequence number 5"));
}

/* ------------------------------------------------------------------ */
/* Control messages                                                    */
/* ------------------------------------------------------------------ */

static bool all_zero_bytes(const uint8_t *p, size_t n)
{
	while (n--)
		if (*p++)
			return false;
	return true;
}

/* Pack m with seq, unpack it again (expecting seq), return the length. */
static size_t round_trip(const struct xfer_msg *m, uint32_t seq, struct xfer_msg *out)
{
	uint8_t buf[XFER_MSG_MAX];
	char err[160];
	size_t n = xfer_msg_pack(buf, seq, m);

	assert_true(n <= sizeof(buf));
	assert_int_equal(xfer_msg_unpack(buf, n, seq, out, err, sizeof(err)), 0);
	assert_int_equal(out->type, m->type);
	assert_int_equal(out->seq, seq);
	return n;
}

static void request_round_trip(void **state)
{
	struct xfer_msg m = { .type = XFER_T_REQUEST }, out;
	char long_name[XFER_NAME_MAX + 1];

	(void)state;
	m.u.request.size = 4 * GiB + 1; /* more than 32 bits */
	m.u.request.flags = XFER_REQ_F_FORCE;
	m.u.request.name_len = 5;
	memcpy(m.u.request.name, "a.bin", 5);
	assert_int_equal(round_trip(&m, 0, &out), XFER_MSG_MAX);
	assert_true(out.u.request.size == 4 * GiB + 1);
	assert_int_equal(out.u.request.flags, XFER_REQ_F_FORCE);
	assert_true(all_zero_bytes(out.u.request.proof, XFER_PROOF_LEN));
	assert_int_equal(out.u.request.name_len, 5);
	assert_string_equal(out.u.request.name, "a.bin");
	/* The longest name. */
	memset(long_name, 'x', XFER_NAME_MAX);
	m.u.request.name_len = XFER_NAME_MAX;
	memcpy(m.u.request.name, long_name, XFER_NAME_MAX);
	round_trip(&m, 7, &out);
	assert_int_equal(out.u.request.name_len, XFER_NAME_MAX);
	assert_memory_equal(out.u.request.name, long_name, XFER_NAME_MAX);
	assert_int_equal(out.u.request.name[XFER_NAME_MAX], '\0');
	/* A hostile name is carried as is: xfer_name_check judges it. */
	m.u.request.name_len = 4;
	memcpy(m.u.request.name, "../x", 4);
	round_trip(&m, 1, &out);
	assert_string_equal(out.u.request.name, "../x");
	/* The proof travels in the last 32 bytes, as is. */
	m.u.request.flags = XFER_REQ_F_PROOF;
	memset(m.u.request.proof, 0x5a, XFER_PROOF_LEN);
	m.u.request.proof[31] = 0;
	round_trip(&m, 2, &out);
	assert_int_equal(out.u.request.flags, XFER_REQ_F_PROOF);
	assert_memory_equal(out.u.request.proof, m.u.request.proof, XFER_PROOF_LEN);
}

static void challenge_round_trip(void **state)
{
	struct xfer_msg m = { .type = XFER_T_CHALLENGE }, out;
	uint8_t buf[XFER_MSG_MAX];
	size_t n;
	int i;

	(void)state;
	m.u.challenge.version = XFER_PROTO_VERSION;
	m.u.challenge.flags = XFER_CH_F_SECRET;
	for (i = 0; i < XFER_NONCE_LEN; i++)
		m.u.challenge.nonce[i] = (uint8_t)(i * 7 + 1);
	assert_int_equal(round_trip(&m, 0, &out), 16 + XFER_CHALLENGE_BODY);
	assert_int_equal(out.u.challenge.version, XFER_PROTO_VERSION);
	assert_int_equal(out.u.challenge.flags, XFER_CH_F_SECRET);
	assert_memory_equal(out.u.challenge.nonce, m.u.challenge.nonce, XFER_NONCE_LEN);
	/* Big-endian version and flags, then 4 zero bytes, then the nonce. */
	n = xfer_msg_pack(buf, 0, &m);
	assert_int_equal(n, 56);
	assert_int_equal(buf[5], XFER_T_CHALLENGE);
	assert_int_equal(buf[16], 0);
	assert_int_equal(buf[17], XFER_PROTO_VERSION);
	assert_int_equal(buf[19], 1);
	assert_memory_equal(buf + 24, m.u.challenge.nonce, XFER_NONCE_LEN);
	assert_string_equal(xfer_type_str(XFER_T_CHALLENGE), "CHALLENGE");
}

/* A get's data connection: the JOIN carries the token, and nothing
 * else passes for one. */
static void join_round_trip_and_refusals(void **state)
{
	uint8_t priv[XFER_JOIN_LEN], hello[XFER_HELLO_LEN], token[XFER_TOKEN_LEN],
		out[XFER_TOKEN_LEN];
	struct xfer_hello h = {
		.op = XFER_GET, .version = XFER_PROTO_VERSION, .depth = 4, .chunk = 4096
	};
	char err[200];
	int i;

	(void)state;
	for (i = 0; i < XFER_TOKEN_LEN; i++)
		token[i] = (uint8_t)(7 * i + 1);
	assert_int_equal(xfer_join_pack(priv, token), XFER_JOIN_LEN);
	assert_int_equal(xfer_join_unpack(priv, sizeof(priv), out, err, sizeof(err)), 0);
	assert_memory_equal(out, token, XFER_TOKEN_LEN);
	/* Cut short, or a HELLO where the JOIN belongs. */
	assert_int_equal(xfer_join_unpack(priv, sizeof(priv) - 1, out, err, sizeof(err)), -EBADMSG);
	xfer_hello_pack(hello, &h);
	assert_int_equal(xfer_join_unpack(hello, sizeof(hello), out, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "expected a JOIN of 16 bytes, got type 0x30"));
	/* A JOIN where the HELLO belongs: refused as well. */
	assert_int_equal(xfer_hello_unpack(priv, sizeof(priv), &h, err, sizeof(err)), -EBADMSG);
	/* Sequence number other than 0. */
	priv[15] = 1;
	assert_int_equal(xfer_join_unpack(priv, sizeof(priv), out, err, sizeof(err)), -EBADMSG);
}

static void other_messages_round_trip(void **state)
{
	struct xfer_msg m, out;
	int i;

	(void)state;
	m = (struct xfer_msg){ .type = XFER_T_ACCEPT };
	m.u.accept.size = 5 * GiB + 3;
	m.u.accept.ring = (struct rc_remote_buf){ .addr = 0x7f0012345000ull,
						  .rkey = 0xabcd,
						  .len = 16u << 20 };
	m.u.accept.rd_depth = 16;
	m.u.accept.flags = XFER_ACC_F_ZEROCOPY | XFER_ACC_F_INPLACE;
	m.u.accept.data_port = 0xbeef;
	for (i = 0; i < XFER_TOKEN_LEN; i++)
		m.u.accept.token[i] = (uint8_t)(0xa0 + i);
	assert_int_equal(round_trip(&m, 0, &out), 16 + XFER_ACCEPT_BODY);
	assert_int_equal(out.u.accept.data_port, 0xbeef);
	assert_memory_equal(out.u.accept.token, m.u.accept.token, XFER_TOKEN_LEN);
	assert_true(out.u.accept.size == 5 * GiB + 3);
	assert_true(out.u.accept.ring.addr == 0x7f0012345000ull);
	assert_int_equal(out.u.accept.ring.rkey, 0xabcd);
	assert_int_equal(out.u.accept.ring.len, 16u << 20);
	assert_int_equal(out.u.accept.rd_depth, 16);
	assert_int_equal(out.u.accept.flags, XFER_ACC_F_ZEROCOPY | XFER_ACC_F_INPLACE);

	xfer_make_error(&m, ENOSPC, "disk full writing '%s'", "x");
	assert_int_equal(round_trip(&m, 3, &out), 16 + XFER_ERROR_BODY);
	assert_int_equal(out.u.error.code, ENOSPC);
	assert_string_equal(out.u.error.text, "disk full writing 'x'");

	m = (struct xfer_msg){ .type = XFER_T_CHUNK };
	m.u.chunk = (struct xfer_chunk){ .seq = 4097,
					 .offset = 4097ull << 20,
					 .len = 1,
					 .slot = 1,
					 .addr = 0x7f00aabbccdd0001ull,
					 .rkey = 0x1234abcd };
	for (i = 0; i < XFER_HASH_LEN; i++)
		m.u.chunk.hash[i] = (uint8_t)(0xc0 + i);
	assert_int_equal(round_trip(&m, 9, &out), 16 + XFER_CHUNK_BODY);
	assert_true(out.u.chunk.seq == 4097);
	assert_true(out.u.chunk.offset == 4097ull << 20);
	assert_int_equal(out.u.chunk.len, 1);
	assert_int_equal(out.u.chunk.slot, 1);
	assert_memory_equal(out.u.chunk.hash, m.u.chunk.hash, XFER_HASH_LEN);
	assert_true(out.u.chunk.addr == 0x7f00aabbccdd0001ull);
	assert_int_equal(out.u.chunk.rkey, 0x1234abcd);
	/* The digest at bytes 24..39 as is, then addr and rkey big-endian. */
	{
		uint8_t b[XFER_MSG_MAX];
		char err[160];

		assert_int_equal(xfer_msg_pack(b, 9, &m), 16 + 56);
		assert_int_equal(b[16 + 24], 0xc0);
		assert_int_equal(b[16 + 39], 0xcf);
		assert_int_equal(b[16 + 40], 0x7f);
		assert_int_equal(b[16 + 47], 0x01);
		assert_int_equal(b[16 + 48], 0x12);
		assert_int_equal(b[16 + 51], 0xcd);
		/* A CHUNK whose READ would wrap around the address space. */
		m.u.chunk.addr = UINT64_MAX - 10;
		m.u.chunk.len = 11;
		xfer_msg_pack(b, 9, &m);
		assert_int_equal(xfer_msg_unpack(b, 16 + 56, 9, &out, err, sizeof(err)), -EBADMSG);
		assert_non_null(strstr(err, "wraps around"));
		m.u.chunk.len = 10;
		xfer_msg_pack(b, 9, &m);
		assert_int_equal(xfer_msg_unpack(b, 16 + 56, 9, &out, err, sizeof(err)), 0);
	}

	m = (struct xfer_msg){ .type = XFER_T_CREDIT };
	m.u.credit = (struct xfer_credit){
		.seq = 1ull << 33, .slot = 254, .addr = 0x7f0000abc000ull, .rkey = 0xbeef
	};
	memset(m.u.credit.hash, 0x5a, XFER_HASH_LEN);
	assert_int_equal(round_trip(&m, 2, &out), 16 + XFER_CREDIT_BODY);
	assert_int_equal(XFER_CREDIT_BODY, 48);
	assert_true(out.u.credit.addr == 0x7f0000abc000ull);
	assert_int_equal(out.u.credit.rkey, 0xbeef);
	assert_true(out.u.credit.seq == 1ull << 33);
	assert_int_equal(out.u.credit.slot, 254);
	assert_memory_equal(out.u.credit.hash, m.u.credit.hash, XFER_HASH_LEN);

	for (i = 0; i < 2; i++) {
		m = (struct xfer_msg){ .type = i ? XFER_T_COMMITTED : XFER_T_DONE };
		m.u.done.size = 4 * GiB;
		memset(m.u.done.hash, 0xa5, XFER_HASH_LEN);
		m.u.done.hash[15] = 1;
		assert_int_equal(round_trip(&m, 4, &out), 16 + XFER_DONE_BODY);
		assert_true(out.u.done.size == 4 * GiB);
		assert_memory_equal(out.u.done.hash, m.u.done.hash, XFER_HASH_LEN);
	}
}

/* Pack a good message, let `mangle` damage the bytes, expect -EBADMSG
 * with `why` in the reason. */
static void expect_bad(const struct xfer_msg *m, size_t delta_len, int at, uint8_t val,
		       const char *why)
{
	uint8_t buf[XFER_MSG_MAX + 8] = { 0 };
	struct xfer_msg out;
	char err[160] = "";
	size_t n = xfer_msg_pack(buf, 0, m);

	if (at >= 0)
		buf[at] = val;
	assert_int_equal(xfer_msg_unpack(buf, n + delta_len, 0, &out, err, sizeof(err)), -EBADMSG);
	if (!strstr(err, why))
		fail_msg("reason '%s' lacks '%s'", err, why);
}

static void malformed_messages_rejected(void **state)
{
	struct xfer_msg m = { .type = XFER_T_CREDIT }, out;
	uint8_t buf[XFER_MSG_MAX];
	char err[160];
	size_t n;

	(void)state;
	m.u.credit.seq = 1;
	m.u.credit.slot = 1;
	/* Header: length from byte_len, magic, version, flags. */
	expect_bad(&m, (size_t)-1, -1, 0, "arrived");
	expect_bad(&m, 1, -1, 0, "arrived");
	expect_bad(&m, 0, 0, 0, "magic");
	expect_bad(&m, 0, 4, 9, "version");
	expect_bad(&m, 0, 7, 1, "flags");
	/* Unknown type and HELLO on the control channel. */
	expect_bad(&m, 0, 5, 0x3f, "unexpected message type");
	expect_bad(&m, 0, 5, XFER_T_HELLO, "unexpected message type");
	/* A known type with the body size of another. */
	expect_bad(&m, 0, 5, XFER_T_CHUNK, "body bytes");
	/* Padding. */
	expect_bad(&m, 0, 16 + 12, 1, "padding");
	expect_bad(&m, 0, 16 + 47, 1, "padding"); /* after the rkey */
	/* Sequence: the next message must have the next number. */
	n = xfer_msg_pack(buf, 5, &m);
	assert_int_equal(xfer_msg_unpack(buf, n, 6, &out, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "sequence number 5, expected 6"));
	/* Shorter than a header. */
	assert_int_equal(xfer_msg_unpack(buf, 15, 5, &out, err, sizeof(err)), -EBADMSG);

	m = (struct xfer_msg){ .type = XFER_T_REQUEST };
	m.u.request.name_len = 1;
	m.u.request.name[0] = 'a';
	expect_bad(&m, 0, 16 + 13, 0, "name length 0");	   /* name_len 0 */
	expect_bad(&m, 0, 16 + 12, 1, "name length 257");  /* name_len 257 */
	expect_bad(&m, 0, 16 + 11, 0x20, "unknown flags"); /* 0x10 is ZEROCOPY */
	expect_bad(&m, 0, 16 + 11, 0x14, "both the copy and the zero-copy path");
	expect_bad(&m, 0, 16 + 272 + 5, 1, "proof but no proof flag");
	expect_bad(&m, 0, 16 + 0, 0x80, "too large");	/* size >= 2^63 */
	expect_bad(&m, 0, 16 + 16 + 1, 'b', "padding"); /* byte after the name */
	expect_bad(&m, 0, 16 + 14, 1, "padding");

	xfer_make_error(&m, EIO, "%s", "text");
	expect_bad(&m, 0, 16 + 4, 1, "malformed ERROR");       /* text_len 260 */
	expect_bad(&m, 0, 16 + 8 + 1, '\n', "control");	       /* control char */
	expect_bad(&m, 0, 16 + 8 + 4, 'x', "malformed ERROR"); /* byte after text */

	m = (struct xfer_msg){ .type = XFER_T_ACCEPT };
	expect_bad(&m, 0, 16 + 31, 1, "padding");
	/* Version 4's ACCEPT (32 body bytes, no data_port or token). */
	expect_bad(&m, (size_t)-16, 11, 0x20, "ACCEPT of 32 body bytes, expected 48");
	expect_bad(&m, 0, 16 + 27, 4, "unknown flags");
	expect_bad(&m, 0, 16 + 0, 0x80, "too large");
	m = (struct xfer_msg){ .type = XFER_T_CHUNK };
	expect_bad(&m, 0, 16 + 23, 1, "padding");
	expect_bad(&m, 0, 16 + 53, 1, "padding");
	m = (struct xfer_msg){ .type = XFER_T_DONE };
	expect_bad(&m, 0, 16 + 0, 0xff, "too large");
	m = (struct xfer_msg){ .type = XFER_T_CHALLENGE };
	m.u.challenge.version = XFER_PROTO_VERSION;
	expect_bad(&m, 0, 16 + 1, 1, "version 1, expected 6");
	expect_bad(&m, 0, 16 + 1, 2, "version 2, expected 6");
	expect_bad(&m, 0, 16 + 1, 3, "version 3, expected 6");
	expect_bad(&m, 0, 16 + 1, 4, "version 4, expected 6");
	expect_bad(&m, 0, 16 + 1, 5, "version 5, expected 6");
	expect_bad(&m, 0, 16 + 3, 2, "unknown flags");
	expect_bad(&m, 0, 16 + 6, 1, "padding");
	/* Version 1's REQUEST (272 body bytes) is not a REQUEST any more. */
	m = (struct xfer_msg){ .type = XFER_T_REQUEST };
	m.u.request.name_len = 1;
	m.u.request.name[0] = 'a';
	expect_bad(&m, (size_t)-32, 11, 0x10, "REQUEST of 272 body bytes, expected 304");
}

static void describe_and_error_text(void **state)
{
	struct xfer_msg m = { .type = XFER_T_REQUEST };
	char out[400], big[600];

	(void)state;
	m.u.request.size = 100;
	m.u.request.name_len = 3;
	memcpy(m.u.request.name, "a\nb", 3);
	xfer_msg_describe(&m, out, sizeof(out));
	assert_string_equal(out, "REQUEST 'a\\x0ab' size=100 flags=0x0");
	m = (struct xfer_msg){ .type = XFER_T_CHUNK };
	m.u.chunk = (struct xfer_chunk){ .seq = 2, .offset = 8192, .len = 5, .slot = 0 };
	xfer_msg_describe(&m, out, sizeof(out));
	assert_string_equal(out, "CHUNK seq=2 slot=0 offset=8192 len=5 addr=0x0 rkey=0x0 "
				 "xxh3-128=00000000000000000000000000000000");
	m = (struct xfer_msg){ .type = XFER_T_DONE };
	m.u.done.size = 1;
	xfer_msg_describe(&m, out, sizeof(out));
	assert_string_equal(out, "DONE size=1 xxh3-128=00000000000000000000000000000000");
	/* ERROR texts lose control characters and fit their field. */
	xfer_make_error(&m, 0, "tab\there");
	assert_string_equal(m.u.error.text, "tab?here");
	assert_int_equal(m.u.error.code, EIO);
	memset(big, 'y', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	xfer_make_error(&m, EIO, "%s", big);
	assert_int_equal(strlen(m.u.error.text), XFER_ERR_TEXT);
	assert_string_equal(xfer_type_str(0x99), "unknown");
}

/* ------------------------------------------------------------------ */
/* Chunks and their checks (64-bit offsets)                            */
/* ------------------------------------------------------------------ */

static void chunk_arithmetic_beyond_4g(void **state)
{
	uint64_t size = 4 * GiB + 1;

	(void)state;
	assert_true(xfer_nchunks(0, 4096) == 0);
	assert_true(xfer_nchunks(1, 4096) == 1);
	assert_true(xfer_nchunks(4096, 4096) == 1);
	assert_true(xfer_nchunks(4097, 4096) == 2);
	assert_true(xfer_nchunks((1u << 20) + 3, 1u << 20) == 2);
	assert_int_equal(xfer_chunk_len((1u << 20) + 3, 1u << 20, 1), 3);
	/* 4 GiB + 1 in 1 MiB chunks: 4097 chunks, the last of 1 byte at
	 * offset 4 GiB, which does not fit 32 bits. */
	assert_true(xfer_nchunks(size, 1u << 20) == 4097);
	assert_int_equal(xfer_chunk_len(size, 1u << 20, 4095), 1u << 20);
	assert_int_equal(xfer_chunk_len(size, 1u << 20, 4096), 1);
	assert_int_equal(xfer_chunk_len(size, 1u << 20, 4097), 0);
	/* Largest file: no overflow in seq * chunk. */
	assert_true(xfer_nchunks(XFER_MAX_SIZE, XFER_MAX_CHUNK) == (1ull << 33));
	assert_int_equal(xfer_chunk_len(XFER_MAX_SIZE, XFER_MAX_CHUNK, (1ull << 33) - 1),
			 XFER_MAX_CHUNK - 1);
}

static void immediate_data(void **state)
{
	uint64_t size = 4 * GiB + 1, seq = 4096; /* the last chunk, 1 byte */
	uint32_t seq24;
	uint16_t slot;
	char err[160];

	(void)state;
	xfer_imm_unpack(xfer_imm_pack(0x123456, 7), &seq24, &slot);
	assert_int_equal(seq24, 0x123456);
	assert_int_equal(slot, 7);
	/* Sequence numbers wrap at 2^24; the slot keeps its 8 bits. */
	xfer_imm_unpack(xfer_imm_pack((1ull << 24) + 5, 254), &seq24, &slot);
	assert_int_equal(seq24, 5);
	assert_int_equal(slot, 254);

	assert_int_equal(xfer_check_imm(xfer_imm_pack(seq, seq % 16), 1, seq, size, 1u << 20, 16,
					err, sizeof(err)),
			 0);
	/* Wrong sequence, slot, length; beyond the end. */
	assert_int_equal(xfer_check_imm(xfer_imm_pack(seq + 1, seq % 16), 1, seq, size, 1u << 20,
					16, err, sizeof(err)),
			 -EBADMSG);
	assert_non_null(strstr(err, "sequence"));
	assert_int_equal(
		xfer_check_imm(xfer_imm_pack(seq, 1), 1, seq, size, 1u << 20, 16, err, sizeof(err)),
		-EBADMSG);
	assert_non_null(strstr(err, "slot"));
	assert_int_equal(xfer_check_imm(xfer_imm_pack(seq, seq % 16), 2, seq, size, 1u << 20, 16,
					err, sizeof(err)),
			 -EBADMSG);
	assert_non_null(strstr(err, "2 bytes, expected 1"));
	assert_int_equal(xfer_check_imm(xfer_imm_pack(seq + 1, (seq + 1) % 16), 1, seq + 1, size,
					1u << 20, 16, err, sizeof(err)),
			 -EBADMSG);
	assert_non_null(strstr(err, "beyond"));
	/* After 2^24 chunks the sequence has wrapped: still accepted. */
	assert_int_equal(xfer_check_imm(xfer_imm_pack((1ull << 24) + 2, 2), 4096, (1ull << 24) + 2,
					1ull << 40, 4096, 4, err, sizeof(err)),
			 0);
}

static void chunk_and_credit_checks(void **state)
{
	uint64_t size = 4 * GiB + 1;
	struct xfer_chunk ch = { .seq = 4096, .offset = 4 * GiB, .len = 1, .slot = 0 };
	struct xfer_credit cr = { .seq = 3, .slot = 3 };
	char err[160];

	(void)state;
	assert_int_equal(xfer_check_chunk(&ch, 4096, size, 1u << 20, 16, err, sizeof(err)), 0);
	ch.offset = 0; /* the same offset truncated to 32 bits */
	assert_int_equal(xfer_check_chunk(&ch, 4096, size, 1u << 20, 16, err, sizeof(err)),
			 -EBADMSG);
	assert_non_null(strstr(err, "offset"));
	ch.offset = 4 * GiB;
	ch.len = 2;
	assert_int_equal(xfer_check_chunk(&ch, 4096, size, 1u << 20, 16, err, sizeof(err)),
			 -EBADMSG);
	ch.len = 1;
	ch.slot = 1;
	assert_int_equal(xfer_check_chunk(&ch, 4096, size, 1u << 20, 16, err, sizeof(err)),
			 -EBADMSG);
	ch.slot = 0;
	assert_int_equal(xfer_check_chunk(&ch, 4095, size, 1u << 20, 16, err, sizeof(err)),
			 -EBADMSG);
	assert_int_equal(xfer_check_chunk(&ch, 4097, size, 1u << 20, 16, err, sizeof(err)),
			 -EBADMSG);
	assert_non_null(strstr(err, "beyond"));

	assert_int_equal(xfer_check_credit(&cr, 3, 4, 4, err, sizeof(err)), 0);
	assert_int_equal(xfer_check_credit(&cr, 3, 3, 4, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "only 3 sent"));
	assert_int_equal(xfer_check_credit(&cr, 2, 4, 4, err, sizeof(err)), -EBADMSG);
	cr.slot = 0;
	assert_int_equal(xfer_check_credit(&cr, 3, 4, 4, err, sizeof(err)), -EBADMSG);
}

/* ------------------------------------------------------------------ */
/* Names and endpoints                                                 */
/* ------------------------------------------------------------------ */

static int name_ok(const char *s, size_t len)
{
	char err[160];

	return xfer_name_check(s, len, err, sizeof(err));
}

#define NAME_OK(s)  assert_int_equal(name_ok(s, strlen(s)), 0)
#define NAME_BAD(s) assert_int_equal(name_ok(s, strlen(s)), -EINVAL)

static void names(void **state)
{
	char n[300], err[160];

	(void)state;
	NAME_OK("a");
	NAME_OK("file.bin");
	NAME_OK(".hidden");
	NAME_OK("..a");
	NAME_OK("a..");
	NAME_OK("...");
	NAME_OK("with space");
	NAME_OK("\xc3\xa9t\xc3\xa9"); /* UTF-8 */
	NAME_OK("x.part");
	/* The hostile names of the issue, and their cousins. */
	NAME_BAD("../x");
	NAME_BAD("/etc/passwd");
	NAME_BAD("a/../../b");
	NAME_BAD("a/b");
	NAME_BAD("a/");
	NAME_BAD("/");
	NAME_BAD("..");
	NAME_BAD(".");
	NAME_BAD("");
	NAME_BAD("a\nb");
	NAME_BAD("\x7f");
	/* Our temporary files. */
	NAME_BAD(".a.1234abcd.part");
	NAME_BAD(".x.part");
	/* NUL inside (only possible from the wire). */
	assert_int_equal(xfer_name_check("a\0b", 3, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "NUL"));
	/* 255 bytes fit, 256 do not. */
	memset(n, 'z', sizeof(n));
	assert_int_equal(name_ok(n, 255), 0);
	assert_int_equal(xfer_name_check(n, 256, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "255"));
	assert_int_equal(xfer_name_check("../x", 4, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "'/'"));
}

static void quoting(void **state)
{
	char out[400], in[200];

	(void)state;
	xfer_quote(out, sizeof(out), "a'b\\c\x01", 6);
	assert_string_equal(out, "a\\x27b\\x5cc\\x01");
	memset(in, 'q', sizeof(in));
	xfer_quote(out, sizeof(out), in, sizeof(in));
	assert_int_equal(strlen(out), 83);  /* 80 bytes and "..." */
	xfer_quote(out, 8, in, sizeof(in)); /* never overflows */
	assert_true(strlen(out) < 8);
}

static void endpoints(void **state)
{
	struct xfer_endpoint ep;
	char err[160];

	(void)state;
	assert_int_equal(xfer_parse_endpoint("10.0.2.15:a.bin", &ep, err, sizeof(err)), 0);
	assert_true(ep.remote);
	assert_string_equal(ep.host, "10.0.2.15");
	assert_string_equal(ep.path, "a.bin");
	assert_int_equal(xfer_parse_endpoint("host:", &ep, err, sizeof(err)), 0);
	assert_true(ep.remote);
	assert_string_equal(ep.path, "");
	assert_int_equal(xfer_parse_endpoint("[fe80::1%eth0]:x", &ep, err, sizeof(err)), 0);
	assert_true(ep.remote);
	assert_string_equal(ep.host, "fe80::1%eth0");
	assert_string_equal(ep.path, "x");
	assert_int_equal(xfer_parse_endpoint("[::1]:a:b", &ep, err, sizeof(err)), 0);
	assert_string_equal(ep.host, "::1");
	assert_string_equal(ep.path, "a:b");
	assert_int_equal(xfer_parse_endpoint("h:a:b", &ep, err, sizeof(err)), 0);
	assert_string_equal(ep.host, "h");
	assert_string_equal(ep.path, "a:b");
	/* Local: no colon, or a slash before it. */
	assert_int_equal(xfer_parse_endpoint("file", &ep, err, sizeof(err)), 0);
	assert_false(ep.remote);
	assert_string_equal(ep.path, "file");
	assert_int_equal(xfer_parse_endpoint("./a:b", &ep, err, sizeof(err)), 0);
	assert_false(ep.remote);
	assert_int_equal(xfer_parse_endpoint("/tmp/x:y", &ep, err, sizeof(err)), 0);
	assert_false(ep.remote);
	/* Malformed. */
	assert_int_equal(xfer_parse_endpoint(":name", &ep, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "missing host"));
	assert_int_equal(xfer_parse_endpoint("[::1]x", &ep, err, sizeof(err)), -EINVAL);
	assert_int_equal(xfer_parse_endpoint("[::1", &ep, err, sizeof(err)), -EINVAL);
	assert_int_equal(xfer_parse_endpoint("[]:x", &ep, err, sizeof(err)), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(hello_round_trip_with_padding),
		cmocka_unit_test(hello_rejects_bad),
		cmocka_unit_test(request_round_trip),
		cmocka_unit_test(join_round_trip_and_refusals),
		cmocka_unit_test(other_messages_round_trip),
		cmocka_unit_test(challenge_round_trip),
		cmocka_unit_test(malformed_messages_rejected),
		cmocka_unit_test(describe_and_error_text),
		cmocka_unit_test(chunk_arithmetic_beyond_4g),
		cmocka_unit_test(immediate_data),
		cmocka_unit_test(chunk_and_credit_checks),
		cmocka_unit_test(names),
		cmocka_unit_test(quoting),
		cmocka_unit_test(endpoints),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
