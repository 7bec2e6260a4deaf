// SPDX-License-Identifier: MIT
/*
 * inline.c - --inline's questions to the device: how much inline data it
 * granted a QP, and, when it refused, how much it would have taken.
 */
#define _GNU_SOURCE
#include "inline.h"

#include <errno.h>
#include <string.h>

uint32_t basic_inline_bisect(uint32_t lo, uint32_t hi, bool (*accepts)(void *arg, uint32_t n),
			     void *arg)
{
	uint32_t mid;

	/* Invariant: accepts(lo), !accepts(hi). */
	while (hi - lo > 1) {
		mid = lo + (hi - lo) / 2;
		if (accepts(arg, mid))
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

struct probe {
	struct ibv_pd *pd;
	struct ibv_qp_init_attr attr; /* the refused QP's, but for max_inline_data */
};

/* Would the device create this QP with n bytes of inline data? */
static bool probe_accepts(void *arg, uint32_t n)
{
	struct probe *p = arg;
	struct ibv_qp_init_attr a = p->attr; /* the verb writes the granted caps back */
	struct ibv_qp *qp;

	a.cap.max_inline_data = n;
	qp = ibv_create_qp(p->pd, &a);
	if (qp)
		ibv_destroy_qp(qp);
	return qp != NULL;
}

int basic_inline_refused(struct ibv_pd *pd, const struct ibv_qp_init_attr *attr, int err,
			 uint32_t msg_len, uint32_t *limit, struct rc_log *log)
{
	const uint32_t hdr = sizeof(struct rc_hdr);
	struct probe p = { pd, *attr };

	*limit = 0;
	/* Inline data is the cause only if the same QP without it is created, with it
	 * not (rxe says EINVAL; the errno that reaches us is librdmacm's). */
	if (!probe_accepts(&p, 0) || probe_accepts(&p, msg_len))
		return rc_fail_call(log, "rdma_create_qp", err, NULL);
	*limit = basic_inline_bisect(0, msg_len, probe_accepts, &p);
	return rc_fail(log, EMSGSIZE,
		       "rdma_create_qp: %s: the device refused max_inline_data %u, a %u-byte "
		       "header and a %u-byte payload; it takes at most %u: --inline works up to "
		       "-s %u",
		       strerror(err), msg_len, hdr, msg_len - hdr, *limit,
		       *limit > hdr ? *limit - hdr : 0);
}

int basic_inline_granted(struct ibv_qp *qp, uint32_t asked, struct rc_log *log)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;
	int ret;

	/* IBV_QP_CAP: the caps as the device set them, maybe more than asked. */
	if ((ret = ibv_query_qp(qp, &attr, IBV_QP_CAP, &init)))
		return rc_fail_call(log, "ibv_query_qp", ret, NULL);
	rc_trace(log, "inline data: asked %u, granted %u bytes", asked, attr.cap.max_inline_data);
	if (attr.cap.max_inline_data < asked)
		return rc_fail(log, ERANGE,
			       "the device granted %u bytes of inline data, %u asked; hint: "
			       "run without --inline",
			       attr.cap.max_inline_data, asked);
	return 0;
}
