// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the decoders of common/ (wire header, connection
 * private data, remote buffer descriptors, receive-and-validate). Any
 * input must be either rejected or decoded into values that respect the
 * invariants below.
 */
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "rdma-common.h"

/* The first kind alone, then both: a message accepted is of one of them,
 * with exactly its body length, and numbered seq (the input's last byte). */
static void fuzz_msg_expect(const uint8_t *data, size_t size)
{
	static const struct rc_msg_kind kinds[] = { { 0x22, 16, NULL }, { 0x36, 0, "DONE" } };
	struct ibv_wc wc = { .status = IBV_WC_SUCCESS, .opcode = IBV_WC_RECV };
	uint32_t seq = size ? data[size - 1] : 0;
	char err[160];
	struct rc_msg m;

	for (size_t n = 1; n <= 2; n++) {
		if (rc_msg_expect(data, size, kinds, n, seq, &m, err, sizeof(err)) == 0) {
			CHECK(m.type == 0x22 || (n == 2 && m.type == 0x36));
			CHECK(m.length == (m.type == 0x22 ? 16u : 0u));
			CHECK(m.seq == seq && m.length + sizeof(struct rc_hdr) == size);
		} else {
			CHECK(memchr(err, '\0', sizeof(err)) != NULL);
		}
		/* The same bytes as a completion into a buffer of 24: an
		 * accepted one is never past it. */
		wc.byte_len = (uint32_t)size;
		if (rc_recv_expect(&wc, data, 24, kinds, n, seq, &m, err, sizeof(err)) == 0)
			CHECK(size <= 24 && m.type == 0x36);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rc_remote_buf r;
	struct rc_msg m;
	char err[160];
	uint64_t off, len;

	if (rc_hdr_unpack(data, size, &m, err, sizeof(err)) == 0) {
		/* Accepted: the body is exactly what arrived after the header. */
		CHECK(size >= sizeof(struct rc_hdr));
		CHECK(m.length == size - sizeof(struct rc_hdr));
		CHECK(m.body == data + sizeof(struct rc_hdr));
	} else {
		CHECK(memchr(err, '\0', sizeof(err)) != NULL);
	}
	if (rc_priv_unpack(data, size, &m, err, sizeof(err)) == 0) {
		/* Accepted private data never reads past what arrived. */
		CHECK((uint64_t)m.length + sizeof(struct rc_hdr) <= size);
	}
	if (size >= RC_REMOTE_BUF_WIRE + 16) {
		rc_remote_buf_unpack(data, &r);
		memcpy(&off, data + RC_REMOTE_BUF_WIRE, 8);
		memcpy(&len, data + RC_REMOTE_BUF_WIRE + 8, 8);
		/* In range exactly when off + len <= r.len, with no wrap. */
		CHECK(rc_remote_range_ok(&r, off, len) ==
		      ((unsigned __int128)off + len <= (unsigned __int128)r.len));
	}
	fuzz_msg_expect(data, size);
	return 0;
}
