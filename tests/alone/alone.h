/* SPDX-License-Identifier: MIT */
/*
 * alone.h - a small slot service built from the set rdma-common.h names
 * and nothing else of common/ (tests/alone/, run by tests/e2e/07-load.sh):
 * proof that a server and a client can be written on the set alone, with
 * its server side: a listener, one event loop, a shared device context
 * (one PD, one CQ, an SRQ), caller-owned memory registered as a region
 * per client's slot, and a type 2 memory window per client on it.
 *
 * The conversation, every message an rc_hdr and a fixed body:
 *   client -> HELLO in the connect request: be32 size, be32 0 (bytes it
 *             will write, at most the server's slot size)
 *   server <- SLOT (seq 0): rc_remote_buf of the client's slot, reachable
 *             through a window bound to that client's QP only
 *   client    RDMA WRITEs size bytes into the slot, then
 *   client -> DONE (seq 0): be64 checksum, be32 size, be32 0
 *   server    invalidates the window (the slot is the server's again),
 *             checksums the slot, and
 *   server <- RESULT (seq 1): the same body, then disconnects.
 */
#ifndef ALONE_H
#define ALONE_H

#include <stdint.h>
#include <string.h>

#include "rdma-common.h"

/* Message types: 0x7_ belong to this test service. */
enum alone_type {
	ALONE_T_HELLO = 0x71,
	ALONE_T_SLOT = 0x72,
	ALONE_T_DONE = 0x73,
	ALONE_T_RESULT = 0x74,
};

#define ALONE_BODY  16 /* SLOT, DONE and RESULT */
#define ALONE_HELLO 8
#define ALONE_MSG   (sizeof(struct rc_hdr) + ALONE_BODY)

/* FNV-1a, 64 bits: what both sides compute over the slot's bytes. */
static inline uint64_t alone_sum(const void *p, size_t len)
{
	const uint8_t *b = p;
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

/* DONE and RESULT: a checksum and the size it covers. */
static inline size_t alone_sum_pack(uint8_t *buf, uint8_t type, uint32_t seq, uint64_t sum,
				    uint32_t size)
{
	rc_hdr_pack(buf, type, ALONE_BODY, seq);
	rc_put64(buf + 16, sum);
	rc_put32(buf + 24, size);
	rc_put32(buf + 28, 0);
	return ALONE_MSG;
}

#endif /* ALONE_H */
