// SPDX-License-Identifier: MIT
/*
 * inline-probe - what max_inline_data does this device grant an RC QP, for
 * each ask from 0 to MAX bytes, and which asks does it refuse?
 *
 * No verb reports a device's inline limit: 01's --inline asks for what its
 * message needs and reads back the grant. This program asks every size in
 * turn (one QP each, one send SGE, as 01's QPs), reads each grant with
 * ibv_query_qp(IBV_QP_CAP) and prints runs of equal answers, e.g.
 *   0..15: granted 16
 *   16..512: granted the ask
 *   513..1100: refused (errno 22, Invalid argument)
 * The measurements in 01's README "Inline sends" came from it.
 *
 *   inline-probe [MAX]     (default 1100; the first device)
 *
 * Exit status: 0 every ask answered, 1 setup failed, 2 usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

/* An answer: the grant, GRANT_ASK (= the ask) or -errno (refused). */
#define GRANT_ASK (-100000L)

static long ask_one(struct ibv_pd *pd, struct ibv_cq *cq, uint32_t ask)
{
	struct ibv_qp_init_attr a = { .send_cq = cq,
				      .recv_cq = cq,
				      .qp_type = IBV_QPT_RC,
				      .cap = { .max_send_wr = 4,
					       .max_recv_wr = 4,
					       .max_send_sge = 1,
					       .max_recv_sge = 1,
					       .max_inline_data = ask } };
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;
	struct ibv_qp *qp;
	long got;

	qp = ibv_create_qp(pd, &a);
	if (!qp)
		return -errno;
	got = ibv_query_qp(qp, &attr, IBV_QP_CAP, &init) ? -errno : (long)attr.cap.max_inline_data;
	ibv_destroy_qp(qp);
	return got == (long)ask ? GRANT_ASK : got;
}

static void print_run(uint32_t from, uint32_t to, long got)
{
	if (got == GRANT_ASK)
		printf("%u..%u: granted the ask\n", from, to);
	else if (got < 0)
		printf("%u..%u: refused (errno %ld, %s)\n", from, to, -got, strerror((int)-got));
	else
		printf("%u..%u: granted %ld\n", from, to, got);
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	uint32_t max = 1100, from = 0, ask;
	long got, prev = 0;
	char *end;
	int n;

	if (argc > 2 ||
	    (argc == 2 && ((max = (uint32_t)strtoul(argv[1], &end, 10)) == 0 || *end))) {
		fprintf(stderr, "usage: inline-probe [MAX]\n");
		return 2;
	}
	list = ibv_get_device_list(&n);
	if (!list || n < 1) {
		fprintf(stderr, "inline-probe: no RDMA device\n");
		return 1;
	}
	ctx = ibv_open_device(list[0]);
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	cq = ctx ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
	if (!pd || !cq) {
		fprintf(stderr, "inline-probe: %s: PD or CQ: %s\n", ibv_get_device_name(list[0]),
			strerror(errno));
		return 1;
	}
	printf("%s: max_inline_data asked from 0 to %u, one RC QP each\n",
	       ibv_get_device_name(list[0]), max);
	for (ask = 0; ask <= max; ask++) {
		got = ask_one(pd, cq, ask);
		if (ask > 0 && got != prev) {
			print_run(from, ask - 1, prev);
			from = ask;
		}
		prev = got;
	}
	print_run(from, max, prev);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return 0;
}
