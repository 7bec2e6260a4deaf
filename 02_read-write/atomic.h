/* SPDX-License-Identifier: MIT */
/*
 * atomic.h - 02's atomics (--op fetch-add and cmp-swap), what the client
 * and the server share: what the device's atomic_cap promises, and the
 * 8-byte word.
 *
 * The word is the server's buffer: 8 bytes, page-aligned, filled with the
 * server's pattern like any buffer of 02, registered with REMOTE_ATOMIC
 * (and LOCAL_WRITE, which ibv_reg_mr(3) requires with it). DONE carries
 * the value the client expects the word to hold, RESULT the value the
 * server then read from it, each in DONE's and RESULT's checksum field
 * (big-endian on the wire, as every field), the length field being 8.
 *
 * A shared word (a server's counter that several clients add to: BUF flag
 * RW_BUF_SHARED) is checked by a client with --shared: its DONE then
 * carries the least value the word can hold (its last original plus its
 * addend), and the server's RESULT must be at least that.
 */
#ifndef RW_ATOMIC_H
#define RW_ATOMIC_H

#include <stdbool.h>
#include <stdint.h>

#include "rw.h"

/* "IBV_ATOMIC_HCA", and what it promises, in a few words. */
const char *rw_atomic_cap_name(enum ibv_atomic_cap cap);
const char *rw_atomic_cap_meaning(enum ibv_atomic_cap cap);

/*
 * The device's atomic_cap (ibv_query_device). 0, or -EOPNOTSUPP when it
 * is IBV_ATOMIC_NONE (the device does no atomics), or another -errno;
 * log.err names the device either way. who: "this client", "this server".
 */
int rw_atomic_cap(struct rc_conn *c, const char *who, enum ibv_atomic_cap *cap);

/* The word's value as this host reads 8 bytes at p (host order). */
uint64_t rw_word_load(const void *p);

/*
 * The server, when an atomic client sent DONE: read the word, print it
 * and whether the client expected that value (done->checksum, the length
 * being 8). *value is the word, *mismatch whether it differs. 0, or
 * -EPROTO when DONE is not about one word (log.err says so).
 */
int rw_word_done(struct rc_conn *c, const void *word, const struct rw_sum *done, uint64_t *value,
		 bool *mismatch);

#endif /* RW_ATOMIC_H */
