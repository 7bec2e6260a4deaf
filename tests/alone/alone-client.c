// SPDX-License-Identifier: MIT
/*
 * alone-client - the client of alone.h's slot service, on the set
 * rdma-common.h names alone: connect with a HELLO, take the SLOT, RDMA
 * WRITE a pattern into it, send DONE, check RESULT, then wait for the
 * server to hang up (rc_conn_wait_cm_event, which records it) and
 * disconnect, which then waits for no second DISCONNECTED. --beyond
 * instead WRITEs one byte just past the slot, through the slot's own
 * window, which the server must refuse: the isolation check.
 *
 *   alone-client [-v] [-s SIZE] [--timeout MS] [--beyond] SERVER PORT
 */
#define _GNU_SOURCE
#include "alone.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

enum { WR_SLOT, WR_RESULT, WR_WRITE, WR_DONE };

struct client {
	struct rc_conn c;
	struct rc_buf *data, *rx, *tx;
	uint32_t size;
	struct rc_remote_buf slot;
	uint64_t sum;
	bool beyond; /* --beyond */
};

/* The next completion, which must be the receive wr_id: a message of
 * type `type`, number seq. */
static int receive(struct client *k, uint64_t wr_id, uint8_t type, uint32_t seq, struct rc_msg *m)
{
	const struct rc_msg_kind kind = { type, ALONE_BODY, NULL };
	struct ibv_wc wc;
	char why[160];
	int ret;

	do {
		ret = rc_next_wc(&k->c, &wc);
	} while (!ret && rc_wc_is(&wc, WR_DONE, IBV_WC_SEND)); /* DONE's own */
	if (ret)
		return ret;
	if (wc.wr_id != wr_id)
		return rc_unexpected_wc(&k->c, &wc);
	/* Never trust the peer: from wc.byte_len, type, number, body size. */
	ret = rc_recv_expect(&wc, (uint8_t *)k->rx->addr + wr_id * ALONE_MSG, ALONE_MSG, &kind, 1,
			     seq, m, why, sizeof(why));
	return ret ? rc_fail(&k->c.log, EPROTO, "bad message from the server: %s", why) : 0;
}

/* Connection, buffers, both receives posted, then connect with HELLO. */
static int set_up(struct client *k, const char *host, const char *port)
{
	struct ibv_qp_cap cap = {
		.max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1, .max_recv_sge = 1
	};
	uint8_t hello[sizeof(struct rc_hdr) + ALONE_HELLO];
	int ret;

	ret = rc_client_resolve(&k->c, host, port);
	if (!ret)
		ret = rc_create_qp(&k->c, &cap);
	if (!ret)
		ret = rc_buf_alloc(&k->c, k->size, 0, &k->data);
	if (!ret)
		ret = rc_buf_alloc(&k->c, 2 * ALONE_MSG, IBV_ACCESS_LOCAL_WRITE, &k->rx);
	if (!ret)
		ret = rc_buf_alloc(&k->c, ALONE_MSG, 0, &k->tx);
	/* Posted before connecting: the server sends once it is up. */
	if (!ret)
		ret = rc_post_recv(&k->c, k->rx, 0, ALONE_MSG, WR_SLOT);
	if (!ret)
		ret = rc_post_recv(&k->c, k->rx, ALONE_MSG, ALONE_MSG, WR_RESULT);
	if (ret)
		return ret;
	rc_hdr_pack(hello, ALONE_T_HELLO, ALONE_HELLO, 0);
	rc_put32(hello + sizeof(struct rc_hdr), k->size);
	rc_put32(hello + sizeof(struct rc_hdr) + 4, 0);
	return rc_client_connect(&k->c, hello, sizeof(hello), 0, 0);
}

/*
 * --beyond: one byte just past our slot, with our window's rkey. The
 * window admits our QP; the slot's own region must bound the range (a
 * window alone does not on Soft-RoCE: docs/kernels.md, rxe-mw-srq).
 * Returns 0 if the server's side refused it, as it must.
 */
static int write_beyond(struct client *k)
{
	struct ibv_wc wc;
	int ret;

	ret = rc_post_rdma(&k->c, IBV_WR_RDMA_WRITE, k->data, 0, 1, k->slot.addr + k->slot.len,
			   k->slot.rkey, 0, WR_WRITE, true);
	if (ret)
		return ret;
	ret = rc_next_wc(&k->c, &wc);
	if (ret == -EIO && wc.status == IBV_WC_REM_ACCESS_ERR) {
		printf("a WRITE 1 byte past the slot: %s, as it must be\n",
		       ibv_wc_status_str(wc.status));
		return 1;
	}
	if (!ret)
		return rc_fail(
			&k->c.log, EACCES,
			"a WRITE 1 byte past the slot succeeded: the slots are not isolated");
	return ret;
}

/* SLOT, the WRITE into it, DONE behind it (in order on one QP). */
static int write_slot(struct client *k)
{
	struct rc_msg m;
	int ret;

	ret = receive(k, WR_SLOT, ALONE_T_SLOT, 0, &m);
	if (ret)
		return ret;
	rc_remote_buf_unpack(m.body, &k->slot);
	if (!rc_remote_range_ok(&k->slot, 0, k->size))
		return rc_fail(&k->c.log, EPROTO, "a slot of %" PRIu32 " bytes for our %" PRIu32,
			       k->slot.len, k->size);
	if (k->beyond)
		return write_beyond(k);
	for (uint32_t i = 0; i < k->size; i++)
		((uint8_t *)k->data->addr)[i] = (uint8_t)(i * 7 + 1);
	k->sum = alone_sum(k->data->addr, k->size);
	ret = rc_post_rdma(&k->c, IBV_WR_RDMA_WRITE, k->data, 0, k->size, k->slot.addr,
			   k->slot.rkey, 0, WR_WRITE, false);
	if (ret)
		return ret;
	alone_sum_pack(k->tx->addr, ALONE_T_DONE, 0, k->sum, k->size);
	return rc_post_send(&k->c, k->tx, 0, ALONE_MSG, WR_DONE, true);
}

static int check_result(struct client *k)
{
	struct rc_msg m;
	int ret = receive(k, WR_RESULT, ALONE_T_RESULT, 1, &m);

	if (ret)
		return ret;
	if (rc_get64(m.body) != k->sum || rc_get32(m.body + 8) != k->size)
		return rc_fail(&k->c.log, EIO,
			       "the server's checksum 0x%016" PRIx64 " of %" PRIu32
			       " bytes differs from ours",
			       rc_get64(m.body), rc_get32(m.body + 8));
	printf("wrote %" PRIu32 " bytes through window rkey 0x%x: checksum 0x%016" PRIx64
	       " the same as the server's\n",
	       k->size, k->slot.rkey, k->sum);
	return 0;
}

/* The server hangs up first. The wait records DISCONNECTED in the
 * connection, so rc_disconnect waits for no second one. */
static int goodbye(struct client *k)
{
	uint64_t t0;
	int ret = 0;

	if (!k->c.peer_disconnected) /* rc_next_wc may have seen it already */
		ret = rc_conn_wait_cm_event(&k->c, RDMA_CM_EVENT_DISCONNECTED,
					    "waiting for the server to hang up", NULL);
	if (ret)
		return ret;
	t0 = rc_now_us();
	ret = rc_disconnect(&k->c);
	if (!ret)
		printf("disconnected in %" PRIu64 " ms\n", (rc_now_us() - t0) / 1000u);
	return ret;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = { { "timeout", required_argument, NULL, 't' },
					      { "beyond", no_argument, NULL, 'b' },
					      { "help", no_argument, NULL, 'h' },
					      { NULL, 0, NULL, 0 } };
	struct client k = { .size = 4096 };
	int o, ret, timeout_ms = 5000;
	bool verbose = false;

	while ((o = getopt_long(argc, argv, "vs:h", opts, NULL)) != -1) {
		if (o == 'v')
			verbose = true;
		else if (o == 's')
			k.size = (uint32_t)atol(optarg);
		else if (o == 't')
			timeout_ms = atoi(optarg);
		else if (o == 'b')
			k.beyond = true;
		else {
			fprintf(o == 'h' ? stdout : stderr, "usage: alone-client [-v] [-s SIZE] "
							    "[--timeout MS] [--beyond] SERVER "
							    "PORT\n");
			return o == 'h' ? 0 : 2;
		}
	}
	if (argc - optind != 2 || k.size < 1 || timeout_ms < 1) {
		fprintf(stderr, "usage: alone-client [-v] [-s SIZE] [--timeout MS] [--beyond] "
				"SERVER PORT\n");
		return 2;
	}
	rc_conn_init(&k.c, "client", verbose, timeout_ms, -1);
	ret = set_up(&k, argv[optind], argv[optind + 1]);
	if (!ret)
		ret = write_slot(&k);
	if (ret == 1) { /* --beyond: refused, as it must be; the QP is in error */
		ret = 0;
		goto out;
	}
	if (!ret)
		ret = check_result(&k);
	if (!ret)
		ret = goodbye(&k);
out:
	if (ret)
		fprintf(stderr, "alone-client: %s\n", k.c.log.err);
	/* Every release checked: a refused one is a leak, and a failure. */
	k.c.log.err[0] = '\0';
	if (rc_conn_destroy(&k.c)) {
		fprintf(stderr, "alone-client: %s\n", k.c.log.err);
		ret = -EIO;
	}
	return ret ? 1 : 0;
}
