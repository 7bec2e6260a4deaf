// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the decoders of common/ (wire header, connection
 * private data, remote buffer descriptors). Any input must be either
 * rejected or decoded into values that respect the invariants below.
 */
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "rdma-common.h"

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
	return 0;
}
