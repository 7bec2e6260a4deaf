// SPDX-License-Identifier: MIT
/*
 * 02 rdma-client: RDMA WRITE into and RDMA READ from a buffer the server
 * advertised, without the server's CPU taking part.
 *
 * What it shows, in order (see sequence.txt): ask for READ resources when
 * connecting (initiator_depth), receive the server's {address, rkey,
 * length}, register local buffers with the flags each one needs, then
 * WRITE a pattern and READ it back: large operations split at the port's
 * max_msg_sz, up to DEPTH work requests in flight, only every k-th one
 * signalled, completions polled in batches. Compare, then SEND DONE with a
 * checksum and receive the server's checksum of the same memory.
 * --op fetch-add and cmp-swap do atomics on one word of the server's
 * instead (client-atomic.c). --inject LESSON (lessons.c) does one thing
 * wrong on purpose and shows what really happens. With --json, the
 * results come as one JSON object for scripts.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "rc-counters.h" /* rc_link_counters */
#include "rc-json.h"

/*
 * How many RDMA READs we will keep in flight: the initiator_depth we ask
 * for when connecting. It may not exceed our device's
 * max_qp_init_rd_atom (and the CM carries it in 8 bits).
 */
static int ask_read_depth(struct client *cl)
{
	struct rc_conn *c = &cl->conn;
	struct ibv_device_attr attr;
	unsigned d = cl->opt.depth;

	cl->read_ask = 0;
	if (!rw_ops_responder(cl->opt.ops))
		return 0; /* WRITE only: no READ resources needed (atomics use them too) */
	if (cl->opt.inject == RW_INJECT_NO_READ_DEPTH)
		return 0; /* the lesson: READ with initiator_depth 0 */
	if (ibv_query_device(c->id->verbs, &attr))
		return rc_fail(&c->log, errno, "ibv_query_device: %s", strerror(errno));
	if (d > (unsigned)attr.max_qp_init_rd_atom)
		d = (unsigned)attr.max_qp_init_rd_atom;
	if (d > 255)
		d = 255;
	if (d == 0)
		return rc_fail(&c->log, EOPNOTSUPP,
			       "device %s allows no outstanding RDMA READs (max_qp_init_rd_atom 0)",
			       ibv_get_device_name(c->id->verbs->device));
	cl->read_ask = (uint8_t)d;
	rc_trace(&c->log, "asking for initiator_depth %u (depth %u, max_qp_init_rd_atom %d)", d,
		 cl->opt.depth, attr.max_qp_init_rd_atom);
	return 0;
}

static int setup(struct client *cl)
{
	struct rc_conn *c = &cl->conn;
	unsigned depth = cl->opt.depth;
	/* Send queue: up to DEPTH data WRs in flight (2 for --inject); DONE
	 * is sent only once they are all finished. Receive queue: BUF, then
	 * RESULT, one at a time (dereg-other: two BUFs at once). */
	struct ibv_qp_cap cap = { .max_send_wr = depth > 2 ? depth : 2,
				  .max_recv_wr = cl->opt.inject == RW_INJECT_DEREG_OTHER ? 2 : 1,
				  .max_send_sge = 1,
				  .max_recv_sge = 1 };
	int ret;

	ret = rc_create_qp(c, &cap);
	if (ret)
		return ret;
	cl->wrs = calloc(cap.max_send_wr, sizeof(*cl->wrs));
	cl->sges = calloc(cap.max_send_wr, sizeof(*cl->sges));
	if (!cl->wrs || !cl->sges)
		return rc_fail(&c->log, ENOMEM, "out of memory");
	/* BUF and RESULT land here, a slot each for dereg-other's two
	 * BUFs: the NIC writes it, so LOCAL_WRITE. */
	ret = rc_buf_alloc(c, 2 * RW_CTRL_MAX, IBV_ACCESS_LOCAL_WRITE, &cl->ctrl_rx);
	if (ret)
		return ret;
	/* DONE is only read by the NIC: no flags. */
	return rc_buf_alloc(c, RW_CTRL_MAX, 0, &cl->ctrl_tx);
}

/* Connect, telling the server what we need in the HELLO. */
static int connect_server(struct client *cl)
{
	struct rc_conn *c = &cl->conn;
	struct rw_hello h = { .len = cl->opt.size,
			      .ops = (uint8_t)cl->opt.ops,
			      .lesson = (uint8_t)cl->opt.inject };
	uint8_t hello[RW_HELLO_LEN];
	int ret;

	/* The receive for BUF first: the server sends it as soon as the
	 * connection is up. */
	ret = rc_post_recv(c, cl->ctrl_rx, 0, RW_CTRL_MAX, WR_RECV_CTRL);
	if (!ret && cl->opt.inject == RW_INJECT_DEREG_OTHER)
		ret = rc_post_recv(c, cl->ctrl_rx, RW_CTRL_MAX, RW_CTRL_MAX, WR_RECV_CTRL2);
	if (ret)
		return ret;
	/* out-of-bounds: a buffer that ends inside a page (see lessons.c). */
	if (cl->opt.inject == RW_INJECT_OUT_OF_BOUNDS && !h.len)
		h.len = (uint32_t)sysconf(_SC_PAGESIZE) - 1;
	h.read_depth = cl->read_ask;
	rw_hello_pack(hello, &h);
	/* initiator_depth: READs we will have outstanding (the server answers
	 * with as many responder_resources as it grants). responder_resources
	 * 0: the server never READs from us. */
	return rc_client_connect(c, hello, sizeof(hello), cl->read_ask, 0);
}

/* How many READs our QP may really have in flight: what the CM set as
 * max_rd_atomic from the server's responder_resources. */
static int qp_read_depth(struct rc_conn *c, unsigned *out)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;

	if (ibv_query_qp(c->qp, &attr, IBV_QP_MAX_QP_RD_ATOMIC, &init))
		return rc_fail(&c->log, errno, "ibv_query_qp: %s", strerror(errno));
	*out = attr.max_rd_atomic;
	return 0;
}

/* A BUF (sequence number seq) in the receive slot at ctrl_rx + off. */
static int next_buf(struct client *cl, uint64_t wr_id, size_t off, uint32_t seq, struct rw_buf *b)
{
	struct rc_conn *c = &cl->conn;
	struct ibv_wc wc;
	char why[160];
	int ret;

	ret = rc_next_wc(c, &wc);
	if (ret)
		return ret;
	if (!rc_wc_is(&wc, wr_id, IBV_WC_RECV))
		return rc_unexpected_wc(c, &wc);
	/* Never trust the peer: length from wc.byte_len, then every field. */
	ret = rw_buf_unpack((uint8_t *)cl->ctrl_rx->addr + off, wc.byte_len, seq, b, why,
			    sizeof(why));
	if (ret)
		return rc_fail(&c->log, EPROTO, "bad BUF from the server: %s", why);
	if (b->lesson != cl->opt.inject)
		return rc_fail(&c->log, EPROTO, "we run lesson %s, the server's BUF says %s",
			       rw_inject_name(cl->opt.inject), rw_inject_name(b->lesson));
	return 0;
}

/* dereg-other: the second BUF, the MR the server deregistered. */
static int receive_buf2(struct client *cl)
{
	int ret = next_buf(cl, WR_RECV_CTRL2, RW_CTRL_MAX, 1, &cl->remote2);

	if (ret)
		return ret;
	if (cl->remote2.rb.addr != cl->remote.rb.addr || cl->remote2.rb.len != cl->remote.rb.len)
		return rc_fail(&cl->conn.log, EPROTO,
			       "the second BUF does not describe the same buffer as the first");
	return 0;
}

/* Receive the server's BUF and check that it fits what we want to do. */
static int receive_buf(struct client *cl)
{
	struct rc_conn *c = &cl->conn;
	struct rw_buf *b = &cl->remote;
	unsigned qp_depth = 0;
	int ret;

	ret = next_buf(cl, WR_RECV_CTRL, 0, 0, b);
	if (ret)
		return ret;
	if ((b->ops & cl->opt.ops) != cl->opt.ops)
		return rc_fail(&c->log, EPROTO, "the server's buffer allows %s, we need %s",
			       rw_ops_str(b->ops), rw_ops_str(cl->opt.ops));
	/* Checked before anything is posted. */
	cl->size = cl->opt.size ? cl->opt.size : b->rb.len;
	if (!rc_remote_range_ok(&b->rb, 0, cl->size))
		return rc_fail(&c->log, EINVAL,
			       "size %u is larger than the server's buffer of %u bytes; nothing "
			       "was posted",
			       cl->size, b->rb.len);
	cl->piece_max = c->dev.max_msg_sz < b->max_msg_sz ? c->dev.max_msg_sz : b->max_msg_sz;
	if (rw_ops_atomic(cl->opt.ops)) {
		ret = atomic_check_buf(cl);
		if (ret)
			return ret;
	}
	if (rw_ops_responder(cl->opt.ops)) {
		ret = qp_read_depth(c, &qp_depth);
		if (ret)
			return ret;
		cl->qp_read_depth = qp_depth;
		cl->read_depth = cl->opt.depth;
		if (cl->read_depth > b->read_depth)
			cl->read_depth = b->read_depth;
		if (cl->read_depth > qp_depth)
			cl->read_depth = qp_depth;
		rc_trace(&c->log,
			 "read depth %u (asked %u, server granted %u, QP max_rd_atomic %u)",
			 cl->read_depth, cl->read_ask, b->read_depth, qp_depth);
		/* The no-read-depth lesson READs anyway, to show what happens. */
		if (!cl->read_depth && cl->opt.inject != RW_INJECT_NO_READ_DEPTH)
			return rc_fail(&c->log, EPROTO,
				       "our QP allows no outstanding RDMA READs (max_rd_atomic 0)");
	}
	if (!cl->opt.json) {
		printf("server buffer: %u bytes at 0x%" PRIx64 ", rkey 0x%x, %s", b->rb.len,
		       b->rb.addr, b->rb.rkey, rw_ops_str(b->ops));
		if (rw_ops_responder(b->ops))
			printf(", %s %u", rw_depth_name(b->ops), b->read_depth);
		printf("\n");
	}
	if (cl->opt.inject == RW_INJECT_DEREG_OTHER) {
		ret = receive_buf2(cl);
		if (ret)
			return ret;
	}
	/* The same slot takes RESULT later: BUF is decoded, reuse it. */
	return rc_post_recv(c, cl->ctrl_rx, 0, RW_CTRL_MAX, WR_RECV_CTRL);
}

/* A local buffer: page-aligned from rc_buf_alloc, or for --inject
 * unaligned malloc'd at an odd address (rw_mr_unaligned). */
static int alloc_buf(struct client *cl, int access, struct rw_mr *um, struct rc_buf **out)
{
	struct rc_conn *c = &cl->conn;
	char why[160];
	int ret;

	if (cl->opt.inject != RW_INJECT_UNALIGNED)
		return rc_buf_alloc(c, cl->size, access, out);
	ret = rw_mr_unaligned(c->dev.pd, cl->size, access, um, why, sizeof(why));
	if (ret)
		return rc_fail(&c->log, -ret, "%s", why);
	*out = &um->buf;
	return 0;
}

/* Local buffers, each with only the flags it needs. */
static int alloc_local(struct client *cl)
{
	struct rc_conn *c = &cl->conn;
	int ret;

	if (rw_ops_atomic(cl->opt.ops))
		return atomic_alloc(cl); /* where the originals land */
	if (cl->opt.ops & RW_OP_WRITE) {
		/* WRITE source: the NIC only reads it, and local read access
		 * is always granted (ibv_reg_mr(3)): no flags at all. */
		rc_trace(&c->log, "WRITE source: %u bytes, access none", cl->size);
		ret = alloc_buf(cl, 0, &cl->usrc, &cl->src);
		if (ret)
			return ret;
		cl->seed = rc_now_ns() ^ ((uint64_t)getpid() << 32);
		rc_trace(&c->log, "pattern seed 0x%016" PRIx64, cl->seed);
		rw_fill_pattern(cl->src->addr, cl->size, cl->seed);
	}
	if (cl->opt.ops & RW_OP_READ) {
		/* READ destination: the NIC writes the data it fetches into
		 * it, so LOCAL_WRITE. Nothing remote touches it: no REMOTE_*. */
		rc_trace(&c->log, "READ destination: %u bytes, access LOCAL_WRITE", cl->size);
		ret = alloc_buf(cl, IBV_ACCESS_LOCAL_WRITE, &cl->udst, &cl->dst);
		if (ret)
			return ret;
	}
	return 0;
}

void build_wr(struct client *cl, unsigned slot, enum ibv_wr_opcode op, struct rc_buf *local,
	      uint64_t idx, uint64_t total, unsigned every)
{
	struct ibv_send_wr *wr = &cl->wrs[slot];
	struct ibv_sge *sge = &cl->sges[slot];
	uint64_t off;
	uint32_t len;

	rw_piece(cl->size, cl->piece_max, idx % rw_pieces(cl->size, cl->piece_max), &off, &len);
	*sge = (struct ibv_sge){ .addr = (uintptr_t)local->addr + off,
				 .length = len,
				 .lkey = local->mr->lkey };
	*wr = (struct ibv_send_wr){
		.wr_id = WR_DATA + idx,
		.sg_list = sge,
		.num_sge = 1,
		.opcode = op,
		/* Selective signalling: a completion only every k-th WR. */
		.send_flags = rw_is_signaled(idx, total, every) ? IBV_SEND_SIGNALED : 0,
	};
	/* RC: the remote memory is named in wr.rdma (never wr.ud). */
	wr->wr.rdma.remote_addr = cl->remote.rb.addr + off;
	wr->wr.rdma.rkey = cl->remote.rb.rkey;
}

/*
 * One round of a pipelined phase: the N WRs built in cl->wrs[0..N) go as
 * one chain (one doorbell), then the next completion is taken. RC
 * completes WRs in order, so it must be the next signalled WR after
 * `done` (wr_id id0 + its index), and it retires every WR before it.
 * *next is that WR's index.
 */
int post_and_reap(struct client *cl, unsigned n, enum ibv_wc_opcode want, uint64_t id0,
		  uint64_t done, uint64_t total, unsigned every, uint64_t *next)
{
	struct rc_conn *c = &cl->conn;
	struct ibv_wc wc;
	unsigned i;
	int ret;

	for (i = 0; i < n; i++)
		cl->wrs[i].next = i + 1 < n ? &cl->wrs[i + 1] : NULL;
	if (n) {
		ret = rc_post_send_list(c, cl->wrs);
		if (ret)
			return ret;
	}
	ret = rc_next_wc(c, &wc);
	if (ret)
		return ret;
	*next = rw_next_signaled(done, total, every);
	if (wc.opcode != want || wc.wr_id != id0 + *next)
		return rc_fail(&c->log, EPROTO,
			       "completion %s wr_id=%" PRIu64 ", expected wr_id=%" PRIu64,
			       rc_wc_opcode_str(wc.opcode), wc.wr_id, id0 + *next);
	return 0;
}

/*
 * ITERS operations of SIZE bytes each, as WRs of at most piece_max bytes,
 * at most `depth` of them in flight. Returns the data phase's duration.
 */
static int run_phase(struct client *cl, enum ibv_wr_opcode op, struct rc_buf *local, unsigned depth,
		     uint64_t *ns)
{
	struct rc_conn *c = &cl->conn;
	enum ibv_wc_opcode want = op == IBV_WR_RDMA_READ ? IBV_WC_RDMA_READ : IBV_WC_RDMA_WRITE;
	uint64_t total = cl->opt.iters * rw_pieces(cl->size, cl->piece_max);
	uint32_t wr_bytes = cl->size < cl->piece_max ? cl->size : cl->piece_max;
	unsigned every = rw_signal_every(depth, wr_bytes), n;
	uint64_t posted = 0, done = 0, next, t0;
	int ret;

	t0 = rc_now_ns();
	while (done < total) {
		/* Fill the window up to `depth` WRs: one chain, one doorbell.
		 * An unsignalled WR's send-queue slot is free only once a
		 * later signalled WR has completed, so `done` counts WRs up
		 * to the last completed signalled one. */
		for (n = 0; posted < total && posted - done < depth; n++, posted++)
			build_wr(cl, n, op, local, posted, total, every);
		ret = post_and_reap(cl, n, want, WR_DATA, done, total, every, &next);
		if (ret)
			return ret;
		/* What moved, for the crawl bound (RC_CRAWL_MIN, rc-counters.c). */
		for (; done <= next; done++) {
			uint64_t off;
			uint32_t len;

			rw_piece(cl->size, cl->piece_max, done % rw_pieces(cl->size, cl->piece_max),
				 &off, &len);
			rc_link_moved(c, len);
		}
	}
	*ns = rc_now_ns() - t0;
	return 0;
}

/* "wrote N bytes in 1 RDMA WRITE", or the bandwidth with ITERS > 1. */
static void print_phase(const struct client *cl, enum ibv_wr_opcode op, unsigned depth, uint64_t ns)
{
	uint64_t pieces = rw_pieces(cl->size, cl->piece_max);
	const char *name = op == IBV_WR_RDMA_READ ? "read" : "write";
	const char *wr = op == IBV_WR_RDMA_READ ? "RDMA READ" : "RDMA WRITE";
	double mib_s, gb_s;

	if (cl->opt.json)
		return; /* the figures come as JSON at the end */
	if (cl->opt.iters == 1 && pieces == 1)
		printf("%s %u bytes in 1 %s\n", op == IBV_WR_RDMA_READ ? "read" : "wrote", cl->size,
		       wr);
	else if (cl->opt.iters == 1)
		printf("%s %u bytes in %" PRIu64 " %ss (max_msg_sz %u)\n",
		       op == IBV_WR_RDMA_READ ? "read" : "wrote", cl->size, pieces, wr,
		       cl->piece_max);
	else if (pieces > 1)
		printf("each %s is split into %" PRIu64 " %ss (max_msg_sz %u)\n", name, pieces, wr,
		       cl->piece_max);
	if (cl->opt.iters == 1)
		return;
	rw_bandwidth(cl->opt.iters * cl->size, ns, &mib_s, &gb_s);
	printf("%s: %" PRIu64 " x %u bytes in %.3f s = %.1f MiB/s = %.2f Gb/s (depth %u)\n", name,
	       cl->opt.iters, cl->size, (double)ns / 1e9, mib_s, gb_s, depth);
}

/* Send DONE with our checksum; receive the server's RESULT. */
int exchange_sums(struct client *cl, uint64_t sum, struct rw_sum *result)
{
	struct rc_conn *c = &cl->conn;
	struct rw_sum done = { .checksum = sum, .len = cl->size };
	bool sent = false, got = false;
	struct ibv_wc wc;
	char why[160];
	size_t n;
	int ret;

	n = rw_sum_pack(cl->ctrl_tx->addr, RW_T_DONE, 1, &done);
	ret = rc_post_send(c, cl->ctrl_tx, 0, n, WR_SEND_DONE, true);
	if (ret)
		return ret;
	/* The send and the reply complete in either order. */
	while (!sent || !got) {
		ret = rc_next_wc(c, &wc);
		if (ret)
			return ret;
		if (wc.wr_id == WR_SEND_DONE && wc.opcode == IBV_WC_SEND && !sent) {
			sent = true;
		} else if (wc.wr_id == WR_RECV_CTRL && wc.opcode == IBV_WC_RECV && !got) {
			got = true;
			ret = rw_sum_unpack(cl->ctrl_rx->addr, wc.byte_len, RW_T_RESULT, 1, result,
					    why, sizeof(why));
			if (ret)
				return rc_fail(&c->log, EPROTO, "bad RESULT from the server: %s",
					       why);
			if (result->len != cl->size)
				return rc_fail(&c->log, EPROTO,
					       "RESULT is about %u bytes, we used %u", result->len,
					       cl->size);
		} else {
			return rc_unexpected_wc(c, &wc);
		}
	}
	return 0;
}

int transfer(struct client *cl)
{
	struct rc_conn *c = &cl->conn;
	const uint8_t *data;
	struct rw_sum result;
	size_t bad = cl->size;
	uint64_t ns, sum;
	int ret;

	if (rw_ops_atomic(cl->opt.ops))
		return atomic_transfer(cl); /* fetch-add, cmp-swap: client-atomic.c */
	if (cl->opt.ops & RW_OP_WRITE) {
		ret = run_phase(cl, IBV_WR_RDMA_WRITE, cl->src, cl->opt.depth, &ns);
		if (ret)
			return ret;
		cl->write = (struct phase_result){ true, ns, cl->opt.depth };
		print_phase(cl, IBV_WR_RDMA_WRITE, cl->opt.depth, ns);
	}
	if (cl->opt.ops & RW_OP_READ) {
		if (cl->read_depth < cl->opt.depth && cl->opt.iters > 1 && !cl->opt.json)
			printf("read depth limited to %u by the connection's initiator depth\n",
			       cl->read_depth);
		ret = run_phase(cl, IBV_WR_RDMA_READ, cl->dst, cl->read_depth, &ns);
		if (ret)
			return ret;
		cl->read = (struct phase_result){ true, ns, cl->read_depth };
		print_phase(cl, IBV_WR_RDMA_READ, cl->read_depth, ns);
	}
	/* What we read must be what we wrote, or with --op read the
	 * server's initial pattern. */
	if (cl->opt.ops == RW_OP_BOTH && memcmp(cl->dst->addr, cl->src->addr, cl->size))
		for (bad = 0; bad < cl->size; bad++)
			if (((uint8_t *)cl->dst->addr)[bad] != ((uint8_t *)cl->src->addr)[bad])
				break;
	if (cl->opt.ops == RW_OP_READ)
		bad = rw_check_pattern(cl->dst->addr, cl->size, RW_SERVER_SEED);
	data = cl->opt.ops == RW_OP_READ ? cl->dst->addr : cl->src->addr;
	sum = rw_checksum(data, cl->size);
	/* Send DONE even after a mismatch: the server logs it too. */
	ret = exchange_sums(cl, sum, &result);
	if (ret)
		return ret;
	cl->have_sum = true;
	cl->sum = sum;
	if (!cl->opt.json) {
		printf("client checksum: " RW_CHECKSUM_NAME " 0x%016" PRIx64 " over %u bytes\n",
		       sum, cl->size);
		printf("server checksum: " RW_CHECKSUM_NAME " 0x%016" PRIx64 " over %u bytes\n",
		       result.checksum, result.len);
	}
	if (bad < cl->size)
		return rc_fail(
			&c->log, EPROTO, "the data read differs from the %s at offset %zu of %u",
			cl->opt.ops == RW_OP_READ ? "server's initial pattern" : "data written",
			bad, cl->size);
	if (result.checksum != sum)
		return rc_fail(&c->log, EPROTO,
			       "the server's checksum differs from ours: the data did not arrive "
			       "as sent");
	cl->verified = true;
	if (!cl->opt.json)
		printf("verified %u bytes\n", cl->size);
	return 0;
}

/* One phase's figures: {"bytes", "seconds", "mib_s", "gb_s", "depth"}. */
static void json_phase(struct rc_json *j, const char *key, const struct client *cl,
		       const struct phase_result *p)
{
	uint64_t bytes = cl->opt.iters * cl->size;
	double mib_s, gb_s;

	if (!p->done) {
		rc_json_null(j, key);
		return;
	}
	rw_bandwidth(bytes, p->ns, &mib_s, &gb_s);
	rc_json_object(j, key);
	rc_json_u64(j, "bytes", bytes);
	rc_json_double(j, "seconds", (double)p->ns / 1e9);
	rc_json_double(j, "mib_s", mib_s);
	rc_json_double(j, "gb_s", gb_s);
	rc_json_u64(j, "depth", p->depth);
	rc_json_end(j);
}

/*
 * --json: one object with what was asked and what happened, printed on
 * success and on failure alike (error: the message stderr got, or null).
 */
static void json_run(struct rc_json *j, const struct client *cl, int code, const char *error)
{
	char sum[40];
	char op[40];

	rc_json_object(j, NULL);
	rc_json_str(j, "program", "rdma-client");
	rc_json_str(j, "example", "02_read-write");
	/* A lesson that showed what it teaches did what was asked. */
	rc_json_bool(j, "ok", code == RC_EXIT_OK || code == RW_EXIT_LESSON);
	if (code != RC_EXIT_USAGE) {
		snprintf(op, sizeof(op), "inject-%s", rw_inject_name(cl->opt.inject));
		rc_json_str(j, "op", cl->opt.inject ? op : rw_ops_str(cl->opt.ops));
		rc_json_str(j, "server", cl->opt.server);
		rc_json_u64(j, "port", strtoul(cl->opt.rc.port, NULL, 10));
		/* 0 until the server's BUF said how large its buffer is. */
		rc_json_u64(j, "size", cl->size ? cl->size : cl->opt.size);
		rc_json_u64(j, "iters", cl->opt.iters);
		rc_json_u64(j, "depth", cl->opt.depth);
		rc_json_u64(j, "bytes",
			    (cl->write.done + cl->read.done) * cl->opt.iters * cl->size);
		rc_json_double(j, "seconds", (double)(cl->write.ns + cl->read.ns) / 1e9);
		json_phase(j, "write", cl, &cl->write);
		json_phase(j, "read", cl, &cl->read);
		if (rw_ops_atomic(cl->opt.ops))
			json_atomic(j, cl); /* "atomic": the originals and the word */
		snprintf(sum, sizeof(sum), RW_CHECKSUM_NAME ":%016" PRIx64, cl->sum);
		rc_json_str(j, "checksum", cl->have_sum ? sum : NULL);
		rc_json_bool(j, "verified", cl->verified);
		/* --inject: what the lesson saw ("IBV_WC_REM_ACCESS_ERR", ...). */
		if (cl->opt.inject)
			rc_json_str(j, "lesson_saw", cl->lesson_saw[0] ? cl->lesson_saw : NULL);
	}
	rc_json_end_run(j, error, code, "rdma-client");
}

static void print_json(const struct client *cl, int code, const char *error)
{
	struct rc_json *j = rc_json_new("rdma-client"); /* 32 KiB, freed here */

	if (!j)
		return;
	json_run(j, cl, code, error);
	free(j);
}

int main(int argc, char **argv)
{
	struct client cl = { 0 };
	struct rc_conn *c = &cl.conn;
	char err[256];
	int ret, code = RC_EXIT_FAIL;

	ret = rw_parse_client(argc, argv, &cl.opt, err, sizeof(err));
	if (ret) {
		if (ret < 0) {
			fprintf(stderr, "rdma-client: %s (try --help)\n", err);
			if (rc_json_wanted(argc, argv))
				print_json(&cl, RC_EXIT_USAGE, err);
		}
		return ret > 0 ? RC_EXIT_OK : RC_EXIT_USAGE;
	}
	/* Line-buffered even into a pipe: scripts watch our progress. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	rc_conn_init(c, "client", cl.opt.rc.verbose, cl.opt.rc.timeout_ms, -1);
	c->poll_mode = cl.opt.rc.poll;
	c->ack_timeout = (uint8_t)cl.opt.rc.ack_timeout;
	c->retry_count = (uint8_t)cl.opt.rc.retry_count;
	c->link_hooks = &rc_link_counters; /* a lossy link extends the waits */

	/* 1. Which device and path reach the server? */
	ret = rc_client_resolve(c, cl.opt.server, cl.opt.rc.port);
	if (ret) {
		code = RC_EXIT_NOCONN;
		goto fail;
	}
	/* 2. How many READs we want in flight, QP and control buffers;
	 * for atomics, whether our device does them at all. */
	ret = ask_read_depth(&cl);
	if (!ret && rw_ops_atomic(cl.opt.ops))
		ret = atomic_check_device(&cl);
	if (!ret)
		ret = setup(&cl);
	if (ret)
		goto fail;
	/* 3. Connect: HELLO says how much memory and which operations. */
	ret = connect_server(&cl);
	if (ret) {
		code = RC_EXIT_NOCONN;
		goto fail;
	}
	if (!cl.opt.json)
		printf("connected to %s\n", c->peer);
	/* 4. Where is the server's buffer, and may we use it as we want? */
	ret = receive_buf(&cl);
	if (ret)
		goto fail;
	ret = alloc_local(&cl);
	if (ret)
		goto fail;
	/* 5. The one-sided part, or a lesson (lessons.c). */
	if (cl.opt.inject) {
		ret = run_lesson(&cl);
		if (ret < 0)
			goto fail;
		code = RW_EXIT_LESSON;
		rc_disconnect(c); /* the connection may be broken: no error */
		goto out;
	}
	ret = transfer(&cl);
	if (ret)
		goto fail;
	/* 6. Goodbye: the server sees DISCONNECTED. */
	ret = rc_disconnect(c);
	if (ret)
		goto fail;
	code = RC_EXIT_OK;
	goto out;
fail:
	fprintf(stderr, "rdma-client: %s\n", c->log.err);
out:
	if (cl.opt.json)
		print_json(&cl, code,
			   code == RC_EXIT_OK || code == RW_EXIT_LESSON ? NULL : c->log.err);
	/* Our own MRs before the PD goes (rc_conn_destroy). */
	rw_mr_free(&cl.usrc);
	rw_mr_free(&cl.udst);
	rc_conn_destroy(c);
	free(cl.wrs);
	free(cl.sges);
	return code;
}
