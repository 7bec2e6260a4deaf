// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: 01's decoders (HELLO in connect private data, DATA and
 * REPLY messages) and the quoting of untrusted payloads for printing.
 */
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "basic.h"
#include "rc-report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t max = 0, want_seq = 0, limit;
	uint8_t lesson = 0, flags = 0;
	struct rc_msg m;
	char err[160], q[64];
	size_t i;

	/* A HELLO it accepts packs back to the same bytes (its length in the
	 * header, reserved bytes 0): a known lesson and a payload in range. */
	if (basic_hello_unpack(data, size, &max, &lesson, &flags, err, sizeof(err)) == 0) {
		uint8_t again[BASIC_HELLO_LEN];

		CHECK(max >= 1 && max <= BASIC_MAX_PAYLOAD);
		CHECK(lesson < BASIC_INJECT_COUNT);
		basic_hello_pack(again, max, lesson, flags);
		CHECK(size >= BASIC_HELLO_LEN);
		CHECK(memcmp(again + 8, data + 8, BASIC_HELLO_LEN - 8) == 0);
	}

	/* The expected seq and size limit come from the input too. */
	if (size >= 8) {
		memcpy(&want_seq, data, 4);
		memcpy(&limit, data + 4, 4);
		limit %= BASIC_MAX_PAYLOAD + 1;
		if (basic_msg_unpack(data + 8, size - 8, BASIC_T_DATA, want_seq, limit, &m, err,
				     sizeof(err)) == 0) {
			CHECK(m.type == BASIC_T_DATA && m.seq == want_seq);
			CHECK(m.length >= 1 && m.length <= limit);
			CHECK(m.length + sizeof(struct rc_hdr) == size - 8);
		}
	}

	/* Quoting: always terminated, within bounds, printable only. */
	rc_quote(q, sizeof(q), data, (uint32_t)size, size % 100);
	CHECK(memchr(q, '\0', sizeof(q)) != NULL);
	for (i = 0; q[i]; i++)
		CHECK(q[i] >= 0x20 && q[i] < 0x7f);
	return 0;
}
