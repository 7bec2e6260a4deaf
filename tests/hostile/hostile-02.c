// SPDX-License-Identifier: MIT
/*
 * hostile-02.c - the hostile client's cases against 02_read-write: bad
 * HELLOs, and misbehaviour after the BUF (bent messages, RDMA outside
 * the advertised buffer). See hostile.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <string.h>

#include "hostile.h"
#include "rw.h"

/* ------------------------------------------------------------------ */
/* 02                                                                  */
/* ------------------------------------------------------------------ */

static int r_hello(struct hc *h, int arg)
{
	struct rw_hello hello = { .len = R_LEN, .ops = RW_OP_BOTH, .read_depth = 4 };
	uint8_t p[56] = { 0 }, len = RW_HELLO_LEN, depth = 4;
	int ret;

	switch (arg) {
	case 100: hello.len = 0x80000000u; break; /* 2 GiB */
	case 101: hello.len = 64u << 20; break;	  /* more than the server's -s */
	case 102: hello.ops = 0; break;
	case 103: hello.ops = 7; break;
	case 104: hello.read_depth = 0; break;	  /* READ without a read depth */
	case 105: hello.ops = RW_OP_WRITE; break; /* a read depth without READ */
	case 106: depth = 0; break;		  /* READ, initiator depth 0 */
	case 112:				  /* an atomic without a read depth */
		hello = (struct rw_hello){ .len = RW_WORD, .ops = RW_OP_FETCH_ADD };
		break;
	case 113: hello.ops = RW_OP_FETCH_ADD | RW_OP_WRITE; break; /* never together */
	case 115: /* an atomic, initiator depth 0 */
		hello = (struct rw_hello){ .len = RW_WORD, .ops = RW_OP_CMP_SWAP, .read_depth = 4 };
		depth = 0;
		break;
	}
	rw_hello_pack(p, &hello);
	switch (arg) {
	case 107: /* not hostile: a control (see below) */ break;
	case 108: p[23] = 1; break;   /* reserved byte (byte 22 is the lesson) */
	case 111: p[22] = 200; break; /* a lesson that does not exist */
	case 109: len = 0; break;     /* no HELLO */
	case 110: p[5] = XFER_T_HELLO; break;
	default:
		if (arg < 100)
			bend_hdr(p, (enum bend)arg);
		break;
	}
	if (arg != 107)
		return connect_bad(h, p, len, depth);
	/* The valid HELLO all the cases above start from is accepted: they
	 * are refused for what they bend, nothing else. */
	ret = hc_connect(h, p, len, depth);
	if (ret)
		return ret < 0 ? ret : 0;
	note(h, "accepted, as it should be");
	h->refused = true;
	return 0;
}

/* A fetch-and-add of 1 on the server's raddr, its original into tx. */
static int r_fetch_add(struct hc *h, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = { .addr = (uintptr_t)h->tx->addr,
			       .length = RW_WORD,
			       .lkey = h->tx->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = WR_TX + h->next_tx++,
				  .sg_list = &sge,
				  .num_sge = 1,
				  .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
				  .send_flags = IBV_SEND_SIGNALED };

	wr.wr.atomic.remote_addr = raddr;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = 1;
	return rc_post_send_list(&h->c, &wr);
}

int rw_connect_buf(struct hc *h, const struct rw_hello *hello, struct rw_buf *b)
{
	uint8_t priv[RW_HELLO_LEN];
	char err[200];
	int ret;

	rw_hello_pack(priv, hello);
	ret = hc_connect(h, priv, sizeof(priv), 4);
	if (ret)
		return ret < 0 ? ret : 1;
	ret = hc_recv(h);
	if (ret)
		return 1; /* noted: the server dropped us before BUF */
	if (rw_buf_unpack(h->last, h->last_len, 0, b, err, sizeof(err))) {
		note(h, "bad BUF from the server: %s", err);
		return 1;
	}
	return 0;
}

/* Connect (ops as arg asks), take the BUF, then misbehave. */
static int r_after_buf(struct hc *h, int arg)
{
	struct rw_hello hello = { .len = R_LEN, .ops = RW_OP_BOTH, .read_depth = 4 };
	struct rw_sum done = { .checksum = 1, .len = R_LEN };
	uint8_t *p;
	struct rw_buf b;
	size_t len;
	int ret;

	if (arg == 200)
		hello = (struct rw_hello){ .len = R_LEN, .ops = RW_OP_READ, .read_depth = 4 };
	if (arg == 205)
		hello = (struct rw_hello){ .len = RW_WORD,
					   .ops = RW_OP_FETCH_ADD,
					   .read_depth = 4 };
	ret = rw_connect_buf(h, &hello, &b);
	if (ret)
		return ret < 0 ? ret : 0;
	p = h->tx->addr;
	switch (arg) {
	case 200: /* WRITE into a buffer offered for READ only */
	case 201: /* WRITE across the end of the buffer */
		ret = hc_rdma(h, IBV_WR_RDMA_WRITE, 256,
			      arg == 200 ? b.rb.addr : b.rb.addr + b.rb.len - 128, b.rb.rkey, 0);
		break;
	case 202: /* READ from before the buffer */
		ret = hc_rdma(h, IBV_WR_RDMA_READ, 256, b.rb.addr - 128, b.rb.rkey, 0);
		break;
	case 203: /* WRITE with an rkey we were never given */
		ret = hc_rdma(h, IBV_WR_RDMA_WRITE, 256, b.rb.addr, b.rb.rkey ^ 0x5a5a00, 0);
		break;
	case 204: /* an atomic on a buffer for WRITE and READ: no REMOTE_ATOMIC */
		ret = r_fetch_add(h, b.rb.addr, b.rb.rkey);
		break;
	case 205: /* an atomic on the word after the one we were given */
		ret = r_fetch_add(h, b.rb.addr + RW_WORD, b.rb.rkey);
		break;
	default: /* a bent DONE */
		len = rw_sum_pack(p, RW_T_DONE, 1, &done);
		if (arg == 100)
			p[5] = RW_T_RESULT; /* the server's type */
		else if (arg == 101)
			len = 10;
		else if (arg == 102)
			len = RW_CTRL_MAX + 100; /* beyond its receive buffer */
		else if (arg == 103)
			len = rw_sum_pack(p, RW_T_DONE, 1, &(struct rw_sum){ 1, R_LEN / 2 });
		else if (arg == 104)
			p[31] = 1; /* reserved */
		else if (arg == 105)
			len = rw_sum_pack(p, RW_T_DONE, 1, &(struct rw_sum){ 1, 0 });
		else
			bend_hdr(p, (enum bend)arg);
		ret = hc_send(h, 0, len);
		break;
	}
	return hc_expect_dropped(h, ret);
}

#define R_FLUSHED "flushed: the connection is in the error state"

const struct kase cases02[] = {
	{ "valid-hello-accepted", r_hello, 107, NULL },
	{ "no-hello", r_hello, 109, "rejected: .*(private data|shorter|bad magic|HELLO)" },
	{ "hello-bad-magic", r_hello, B_MAGIC, "rejected: bad magic" },
	{ "hello-bad-version", r_hello, B_VERSION, "rejected: protocol version 2" },
	{ "hello-unknown-flags", r_hello, B_FLAGS, "rejected: unknown flags" },
	{ "hello-wrong-type", r_hello, 110, "rejected: expected a HELLO" },
	{ "hello-truncated", r_hello, B_LEN_SHORT, "rejected: expected a HELLO of 8 bytes" },
	{ "hello-length-beyond-data", r_hello, B_LEN_HUGE, "rejected: header says 1000000" },
	{ "hello-seq", r_hello, B_SEQ, "rejected: HELLO with sequence number 77" },
	{ "hello-reserved", r_hello, 108, "rejected: HELLO with a non-zero reserved byte" },
	{ "hello-lesson-200", r_hello, 111, "rejected: unknown lesson 200" },
	{ "hello-len-2g", r_hello, 100, "rejected: asks for a buffer of 2147483648 bytes" },
	{ "hello-len-over-server", r_hello, 101, "rejected: asks for a 67108864-byte buffer" },
	{ "hello-ops-0", r_hello, 102, "rejected: unknown operations 0x00" },
	{ "hello-ops-7", r_hello, 103, "rejected: unknown operations 0x07" },
	{ "hello-read-depth-0", r_hello, 104, "rejected: RDMA READ with a read depth of 0" },
	{ "hello-depth-without-read", r_hello, 105, "rejected: read depth 4 without RDMA READ" },
	{ "read-with-initiator-depth-0", r_hello, 106, "rejected: .*initiator_depth 0" },
	{ "hello-atomic-read-depth-0", r_hello, 112, "rejected: fetch-add with a read depth of 0" },
	{ "hello-atomic-and-write", r_hello, 113, "rejected: unknown operations 0x05" },
	{ "atomic-with-initiator-depth-0", r_hello, 115,
	  "rejected: wants to do atomics but its connect request has initiator_depth 0" },
	{ "done-bad-magic", r_after_buf, B_MAGIC, "bad DONE from the client: bad magic" },
	{ "done-bad-version", r_after_buf, B_VERSION, "bad DONE from the client: protocol" },
	{ "done-wrong-type", r_after_buf, 100, "bad DONE from the client: message type 0x23" },
	{ "done-wrong-seq", r_after_buf, B_SEQ, "bad DONE from the client: sequence number 77" },
	{ "done-truncated", r_after_buf, 101, "bad DONE from the client: message of 10 bytes" },
	{ "done-length-huge", r_after_buf, B_LEN_HUGE, "bad DONE from the client: header says" },
	{ "done-oversized", r_after_buf, 102,
	  "(local length|local QP operation) error.*larger than the receive buffer" },
	{ "done-wrong-length", r_after_buf, 103, "DONE is about 2048 bytes, the buffer has 4096" },
	{ "done-length-0", r_after_buf, 105, "bad DONE from the client: length 0 is outside" },
	{ "done-reserved", r_after_buf, 104, "bad DONE from the client: .*reserved" },
	{ "write-to-read-only-buffer", r_after_buf, 200, R_FLUSHED },
	{ "write-past-buffer-end", r_after_buf, 201, R_FLUSHED },
	{ "read-before-buffer-start", r_after_buf, 202, R_FLUSHED },
	{ "write-with-wrong-rkey", r_after_buf, 203, R_FLUSHED },
	{ "atomic-on-write-read-buffer", r_after_buf, 204, R_FLUSHED },
	{ "atomic-past-the-word", r_after_buf, 205, R_FLUSHED },
	{ NULL, NULL, 0, NULL },
};
