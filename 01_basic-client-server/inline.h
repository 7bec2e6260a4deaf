/* SPDX-License-Identifier: MIT */
/*
 * inline.h - --inline: SENDs whose bytes the CPU copies into the work
 * request (IBV_SEND_INLINE). No verb reports how much inline data a device
 * takes: a QP asks cap.max_inline_data, the device refuses (rxe: EINVAL) or
 * grants at least that much, and ibv_query_qp says what it granted. These
 * helpers are the asking around the QP that client.c and server.c create.
 */
#ifndef BASIC_INLINE_H
#define BASIC_INLINE_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "rdma-common.h"

/*
 * The largest n in [lo, hi) that accepts(arg, n) says yes to, given that
 * it says yes to lo and no to hi and, between them, yes up to some n and
 * no above: a bisection, about log2(hi - lo) questions.
 */
uint32_t basic_inline_bisect(uint32_t lo, uint32_t hi, bool (*accepts)(void *arg, uint32_t n),
			     void *arg);

/*
 * rdma_create_qp refused attr, whose max_inline_data asked for a message of
 * msg_len bytes, with err. If the inline size is what the device refused,
 * find its real limit with throwaway QPs of the same attr on pd (about
 * log2(msg_len) of them), say it in log.err and return -EMSGSIZE with
 * *limit set; else rc_fail_call's error, *limit 0.
 */
int basic_inline_refused(struct ibv_pd *pd, const struct ibv_qp_init_attr *attr, int err,
			 uint32_t msg_len, uint32_t *limit, struct rc_log *log);

/* After the QP's creation: what the device granted (ibv_query_qp), in -v
 * next to what we asked; fails if it is less than asked. */
int basic_inline_granted(struct ibv_qp *qp, uint32_t asked, struct rc_log *log);

#endif /* BASIC_INLINE_H */
