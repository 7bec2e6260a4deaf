// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: 02's decoders (HELLO in connect private data, BUF,
 * DONE and RESULT), and the arithmetic that splits an operation into
 * pieces. Any input must be either rejected or decoded into values inside
 * the ranges rw.h documents, and an accepted message must be exactly the
 * encoding of what was decoded (so no byte of it went unchecked).
 *
 * Input layout: byte 0 picks the decoder, bytes 1..4 are the sequence
 * number the receiver expects (little-endian), the rest is the message.
 */
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "rw.h"

/* What rw.h promises about ops, read depth and lesson, for HELLO and BUF
 * alike: READ and the atomics need a depth of at least 1, except in the
 * no-read-depth lesson, which is about a depth of 0 (and needs READ); an
 * atomic comes alone, and the atomic lessons need one, the others not. */
static void check_ops(unsigned ops, unsigned read_depth, unsigned lesson)
{
	bool atomic = ops == RW_OP_FETCH_ADD || ops == RW_OP_CMP_SWAP;

	CHECK(ops == RW_OP_WRITE || ops == RW_OP_READ || ops == RW_OP_BOTH || atomic);
	CHECK(lesson < RW_INJECT_COUNT);
	if (lesson == RW_INJECT_NO_READ_DEPTH)
		CHECK((ops & RW_OP_READ) && read_depth == 0);
	else
		CHECK((ops & RW_OP_READ) || atomic ? read_depth >= 1 : read_depth == 0);
	if (lesson)
		CHECK((lesson == RW_INJECT_ATOMIC_UNALIGNED ||
		       lesson == RW_INJECT_ATOMIC_NO_ACCESS) == atomic);
}

static void fuzz_hello(const uint8_t *msg, size_t len)
{
	uint8_t again[RW_HELLO_LEN];
	struct rw_hello h;
	char err[160];

	if (rw_hello_unpack(msg, len, &h, err, sizeof(err))) {
		CHECK(memchr(err, '\0', sizeof(err)) != NULL);
		return;
	}
	/* Private data may be padded, never short. */
	CHECK(len >= RW_HELLO_LEN);
	CHECK(h.len <= RW_MAX_SIZE);
	check_ops(h.ops, h.read_depth, h.lesson);
	rw_hello_pack(again, &h);
	CHECK(memcmp(again, msg, RW_HELLO_LEN) == 0);
}

static void fuzz_buf(const uint8_t *msg, size_t len, uint32_t want_seq)
{
	uint8_t again[RW_CTRL_MAX];
	struct rw_buf b;
	char err[160];

	if (rw_buf_unpack(msg, len, want_seq, &b, err, sizeof(err))) {
		CHECK(memchr(err, '\0', sizeof(err)) != NULL);
		return;
	}
	CHECK(len == RW_BUF_LEN);
	/* The client will WRITE and READ inside [addr, addr + len): it must
	 * be a real, non-wrapping range of at most RW_MAX_SIZE bytes. */
	CHECK(b.rb.len >= 1 && b.rb.len <= RW_MAX_SIZE);
	CHECK(b.rb.addr <= UINT64_MAX - b.rb.len);
	CHECK(rc_remote_range_ok(&b.rb, 0, b.rb.len));
	CHECK(!rc_remote_range_ok(&b.rb, 0, (uint64_t)b.rb.len + 1));
	/* Pieces are at most max_msg_sz: 0 would divide by zero. */
	CHECK(b.max_msg_sz >= 1);
	check_ops(b.ops, b.read_depth, b.lesson);
	/* The only flag, RW_BUF_SHARED, only with an atomic. */
	CHECK(b.flags == 0 || (b.flags == RW_BUF_SHARED && rw_ops_atomic(b.ops)));
	CHECK(rw_buf_pack(again, want_seq, &b) == len);
	CHECK(memcmp(again, msg, len) == 0);
}

static void fuzz_sum(const uint8_t *msg, size_t len, uint8_t type, uint32_t want_seq)
{
	uint8_t again[RW_CTRL_MAX];
	struct rw_sum s;
	char err[160];

	if (rw_sum_unpack(msg, len, type, want_seq, &s, err, sizeof(err))) {
		CHECK(memchr(err, '\0', sizeof(err)) != NULL);
		return;
	}
	CHECK(len == RW_SUM_LEN);
	CHECK(s.len >= 1 && s.len <= RW_MAX_SIZE);
	CHECK(rw_sum_pack(again, type, want_seq, &s) == len);
	CHECK(memcmp(again, msg, len) == 0);
}

/* Splitting `total` bytes into pieces of at most max_piece: the pieces
 * are contiguous, none is empty or too large, together they are total. */
static void fuzz_pieces(const uint8_t *p, size_t len)
{
	uint64_t total, n, i, off, expect = 0;
	uint32_t max_piece, plen;

	if (len < 8)
		return;
	memcpy(&total, p, 4); /* up to 4 GiB: the sizes 02 can ask for */
	total &= 0xffffffffu;
	memcpy(&max_piece, p + 4, 4);
	if (total == 0 || max_piece == 0)
		return;
	n = rw_pieces(total, max_piece);
	CHECK(n >= 1 && n <= total);
	if (n > 4096)
		return; /* keep each input fast; the last piece is checked below */
	for (i = 0; i < n; i++) {
		rw_piece(total, max_piece, i, &off, &plen);
		CHECK(off == expect);
		CHECK(plen >= 1 && plen <= max_piece);
		expect += plen;
	}
	CHECK(expect == total);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t want_seq;

	if (size < 5)
		return 0;
	memcpy(&want_seq, data + 1, 4);
	switch (data[0] % 5) {
	case 0: fuzz_hello(data + 5, size - 5); break;
	case 1: fuzz_buf(data + 5, size - 5, want_seq); break;
	case 2: fuzz_sum(data + 5, size - 5, RW_T_DONE, want_seq); break;
	case 3: fuzz_sum(data + 5, size - 5, RW_T_RESULT, want_seq); break;
	case 4: fuzz_pieces(data + 5, size - 5); break;
	}
	return 0;
}
