// SPDX-License-Identifier: MIT
/*
 * atomic.c - 02's atomics, what the client and the server share (see
 * atomic.h): the device's atomic_cap, and the word's value.
 */
#define _GNU_SOURCE
#include "atomic.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

const char *rw_atomic_cap_name(enum ibv_atomic_cap cap)
{
	switch (cap) {
	case IBV_ATOMIC_NONE: return "IBV_ATOMIC_NONE";
	case IBV_ATOMIC_HCA: return "IBV_ATOMIC_HCA";
	case IBV_ATOMIC_GLOB: return "IBV_ATOMIC_GLOB";
	default: return "(unknown)";
	}
}

/* The man pages list the levels without defining them; ibv_wr_post(3):
 * atomics are "only atomic so long as all writes to memory go only
 * through the same RDMA hardware" (IBV_ATOMIC_HCA). */
const char *rw_atomic_cap_meaning(enum ibv_atomic_cap cap)
{
	switch (cap) {
	case IBV_ATOMIC_NONE: return "no atomic operations at all";
	case IBV_ATOMIC_HCA:
		return "atomic among the atomics of this device only, not against the CPU or "
		       "other devices";
	case IBV_ATOMIC_GLOB: return "atomic also against the CPUs and other devices";
	default: return "a level the verbs do not define";
	}
}

int rw_atomic_cap(struct rc_conn *c, const char *who, enum ibv_atomic_cap *cap)
{
	const char *dev = ibv_get_device_name(c->id->verbs->device);
	struct ibv_device_attr attr;

	/* The device says how far its atomics are atomic: atomic_cap. */
	if (ibv_query_device(c->id->verbs, &attr))
		return rc_fail(&c->log, errno, "ibv_query_device(%s): %s", dev, strerror(errno));
	*cap = attr.atomic_cap;
	rc_trace(&c->log, "device %s: atomic_cap %s (%s)", dev, rw_atomic_cap_name(*cap),
		 rw_atomic_cap_meaning(*cap));
	if (*cap == IBV_ATOMIC_NONE)
		return rc_fail(&c->log, EOPNOTSUPP,
			       "device %s does no atomic operations (atomic_cap "
			       "IBV_ATOMIC_NONE): %s cannot do --op fetch-add or cmp-swap; hint: "
			       "a NIC that cannot return the original value in the host's byte "
			       "order may say so (Linux's mlx5 driver does)",
			       dev, who);
	return 0;
}

uint64_t rw_word_load(const void *p)
{
	uint64_t v;

	/* The NIC wrote the word: no C object was ever stored there, so
	 * copy its bytes rather than cast the pointer. */
	memcpy(&v, p, sizeof(v));
	return v;
}

int rw_word_done(struct rc_conn *c, const void *word, const struct rw_sum *done, uint64_t *value,
		 bool *mismatch)
{
	if (done->len != RW_WORD)
		return rc_fail(&c->log, EPROTO, "DONE is about %u bytes, the word has %u",
			       done->len, RW_WORD);
	/* The client's atomics are all complete: it sends DONE only after
	 * the last one's completion, and RC delivers DONE after them. */
	*value = rw_word_load(word);
	*mismatch = *value != done->checksum;
	if (*mismatch)
		printf("client %s done: its word holds 0x%016" PRIx64 " (%" PRIu64
		       "), it DIFFERS from the client's 0x%016" PRIx64 "\n",
		       c->peer, *value, *value, done->checksum);
	else
		printf("client %s done: its word holds 0x%016" PRIx64 " (%" PRIu64
		       "), the same as the client's\n",
		       c->peer, *value, *value);
	return 0;
}
