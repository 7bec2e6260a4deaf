// SPDX-License-Identifier: MIT
/*
 * rdma-post.c - part of the set rdma-common.h names: posting work
 * requests on a connection's QP (receives, sends, RDMA READ and WRITE, a
 * chain with one doorbell) and binding and invalidating memory windows.
 * The outcome of each arrives later as a completion. See rdma-common.h
 * and rdma-device.h.
 */
#define _GNU_SOURCE
#include "rdma-common.h"

#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

int rc_post_recv(struct rc_conn *c, struct rc_buf *b, size_t off, size_t len, uint64_t wr_id)
{
	struct ibv_sge sge = {
		.addr = b ? (uintptr_t)b->addr + off : 0,
		.length = (uint32_t)len,
		.lkey = b ? b->mr->lkey : 0,
	};
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = b ? 1 : 0 };
	struct ibv_recv_wr *bad;
	int ret;

	if (c->qp->srq)
		return rc_fail(&c->log, EINVAL,
			       "rc_post_recv: this QP takes its receives from the device's SRQ; "
			       "hint: post them with rc_post_srq_recv");
	rc_trace(&c->log, "post RECV wr_id=%" PRIu64 " len=%zu", wr_id, len);
	ret = ibv_post_recv(c->qp, &wr, &bad);
	return ret ? rc_fail_call(&c->log, "ibv_post_recv", ret, NULL) : 0;
}

static const char *wr_opcode_str(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_SEND: return "SEND";
	case IBV_WR_SEND_WITH_IMM: return "SEND_WITH_IMM";
	case IBV_WR_RDMA_WRITE: return "RDMA_WRITE";
	case IBV_WR_RDMA_WRITE_WITH_IMM: return "RDMA_WRITE_WITH_IMM";
	case IBV_WR_RDMA_READ: return "RDMA_READ";
	case IBV_WR_ATOMIC_FETCH_AND_ADD: return "ATOMIC_FETCH_AND_ADD";
	case IBV_WR_ATOMIC_CMP_AND_SWP: return "ATOMIC_CMP_AND_SWP";
	case IBV_WR_BIND_MW: return "BIND_MW";
	case IBV_WR_LOCAL_INV: return "LOCAL_INV";
	default: return "OTHER";
	}
}

int rc_post_send_list(struct rc_conn *c, struct ibv_send_wr *first)
{
	struct ibv_send_wr *wr, *bad = NULL;
	int ret;

	for (wr = first; c->log.verbose && wr; wr = wr->next) {
		char remote[160] = "";

		if (wr->opcode == IBV_WR_BIND_MW)
			snprintf(remote, sizeof(remote), " rkey=0x%x over 0x%" PRIx64 "+%" PRIu64,
				 wr->bind_mw.rkey, wr->bind_mw.bind_info.addr,
				 wr->bind_mw.bind_info.length);
		else if (wr->opcode == IBV_WR_LOCAL_INV)
			snprintf(remote, sizeof(remote), " rkey=0x%x", wr->invalidate_rkey);
		else if (wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD ||
			 wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP) /* wr.atomic, not wr.rdma */
			snprintf(remote, sizeof(remote),
				 " remote=0x%" PRIx64 " rkey=0x%x compare_add=0x%" PRIx64
				 " swap=0x%" PRIx64,
				 wr->wr.atomic.remote_addr, wr->wr.atomic.rkey,
				 wr->wr.atomic.compare_add, wr->wr.atomic.swap);
		else if (wr->opcode != IBV_WR_SEND)
			snprintf(remote, sizeof(remote), " remote=0x%" PRIx64 " rkey=0x%x",
				 wr->wr.rdma.remote_addr, wr->wr.rdma.rkey);
		rc_trace(&c->log, "post %s wr_id=%" PRIu64 " len=%u%s%s", wr_opcode_str(wr->opcode),
			 wr->wr_id, wr->num_sge ? wr->sg_list[0].length : 0, remote,
			 wr->send_flags & IBV_SEND_SIGNALED ? " signaled" : "");
	}
	/* Returns an errno at once if a WR cannot be queued (bad points at
	 * it; those before it were posted); whether the operation worked
	 * arrives later as a completion status. */
	ret = ibv_post_send(c->qp, first, &bad);
	/* What this QP carried, in order, up to the WR that was refused: a
	 * flush is worded as the rdma_rxe bug only where a READ followed a
	 * SEND (rc_wc_explain). */
	for (wr = first; wr && !(ret && wr == bad); wr = wr->next) {
		c->read_after_send |= wr->opcode == IBV_WR_RDMA_READ && c->posted_send;
		c->posted_send |= wr->opcode == IBV_WR_SEND || wr->opcode == IBV_WR_SEND_WITH_IMM;
	}
	if (ret)
		return rc_fail(&c->log, ret, "ibv_post_send(%s wr_id %" PRIu64 "): %s; hint: %s",
			       bad ? wr_opcode_str(bad->opcode) : "?", bad ? bad->wr_id : 0,
			       strerror(ret), rc_call_hint("ibv_post_send", ret));
	return 0;
}

int rc_post_rdma(struct rc_conn *c, enum ibv_wr_opcode op, struct rc_buf *b, size_t off, size_t len,
		 uint64_t raddr, uint32_t rkey, uint32_t imm, uint64_t wr_id, bool signaled)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)b->addr + off,
		.length = (uint32_t)len,
		.lkey = b->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = &sge,
		.num_sge = len ? 1 : 0,
		.opcode = op,
		.send_flags = signaled ? IBV_SEND_SIGNALED : 0,
	};

	if (len > c->dev.max_msg_sz)
		return rc_fail(&c->log, EMSGSIZE,
			       "%s of %zu bytes is larger than the port's max_msg_sz %u; split it",
			       wr_opcode_str(op), len, c->dev.max_msg_sz);
	/* RC READ/WRITE name the remote memory in wr.rdma; a connected QP
	 * needs no remote QPN or address handle per WR (that is UD). */
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	if (op == IBV_WR_RDMA_WRITE_WITH_IMM)
		wr.imm_data = htobe32(imm);
	return rc_post_send_list(c, &wr);
}

int rc_post_send(struct rc_conn *c, struct rc_buf *b, size_t off, size_t len, uint64_t wr_id,
		 bool signaled)
{
	/* A SEND is the same WR without a remote address. */
	return rc_post_rdma(c, IBV_WR_SEND, b, off, len, 0, 0, 0, wr_id, signaled);
}

int rc_mw_bind(struct rc_conn *c, struct ibv_mw *mw, struct rc_buf *b, size_t off, size_t len,
	       int access, uint64_t wr_id, uint32_t *rkey)
{
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.opcode = IBV_WR_BIND_MW,
		.send_flags = IBV_SEND_SIGNALED, /* the rkey is good once it completes */
	};
	int ret;

	if (off > b->len || len > b->len - off || !len)
		return rc_fail(
			&c->log, EINVAL,
			"rc_mw_bind: [%zu, +%zu) is not a non-empty part of the %zu-byte region",
			off, len, b->len);
	/* Type 2: the application picks the rkey, a new key byte each bind
	 * (ibv_inc_rkey), so an rkey of an earlier bind no longer matches. */
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){
		.mr = b->mr,
		.addr = (uintptr_t)b->addr + off,
		.length = len,
		.mw_access_flags = (unsigned)access,
	};
	ret = rc_post_send_list(c, &wr);
	if (ret)
		return ret;
	/* Nobody else updates a type 2 window's rkey. */
	mw->rkey = wr.bind_mw.rkey;
	*rkey = mw->rkey;
	return 0;
}

int rc_mw_invalidate(struct rc_conn *c, struct ibv_mw *mw, uint64_t wr_id)
{
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.opcode = IBV_WR_LOCAL_INV,
		.send_flags = IBV_SEND_SIGNALED,
		.invalidate_rkey = mw->rkey,
	};

	/* Executed in order on the send queue: the peer's accesses through
	 * the window end when it completes. */
	return rc_post_send_list(c, &wr);
}
