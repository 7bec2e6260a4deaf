// SPDX-License-Identifier: MIT
/*
 * server-put.c - 03's server receiving a file (put): each chunk arrives by
 * RDMA_WRITE_WITH_IMM in a ring slot (or in place in the file's window),
 * the disk thread writes and hashes it, and a CREDIT returns the slot
 * with our digest; at DONE, fsync, verify and rename. server.c has the
 * connection and the request; the order is sequence.txt's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "server.h"

/* ------------------------------------------------------------------ */
/* put: chunks arrive by RDMA_WRITE_WITH_IMM                           */
/* ------------------------------------------------------------------ */

/* The data of chunk seq is already in its slot; the immediate and
 * byte_len say which chunk it claims to be. Check before using it. */
static int on_chunk_arrived(struct session *s, uint64_t seq, const struct ibv_wc *wc)
{
	char why[RC_ERR_LEN];
	int ret;

	ret = xfer_check_imm(be32toh(wc->imm_data), wc->byte_len, seq, s->size, s->hello.chunk,
			     s->hello.depth, why, sizeof(why));
	if (ret)
		return refuse(s, EPROTO, "protocol error: %s", why);
	/* byte_len is now the chunk's length: the disk thread may write it.
	 * (A client that broke the credit rule and wrote into this slot
	 * again could only garble its own upload, and the checksum would
	 * tell.) */
	xfer_disk_allow(&s->disk, seq + 1);
	xfer_tl_data(&s->tl, 0);
	return 0;
}

/* Chunk seq is in the file and hashed: its slot is free again, and that
 * is the credit. It carries our digest of the chunk: the client compares
 * it with its own and names the chunk if they differ (no message of a
 * put carries the client's digest to us before the data). */
static int send_credit(struct session *s, uint64_t seq)
{
	struct xfer_msg m = { .type = XFER_T_CREDIT };
	struct rc_buf *b;
	size_t off;

	m.u.credit.seq = seq;
	m.u.credit.slot = (uint16_t)(seq % s->hello.depth);
	if (xfer_hpool_digest(&s->disk.pool, seq, m.u.credit.hash))
		return refuse(s, EINVAL, "internal error: no digest of chunk %" PRIu64, seq);
	/* Where chunk seq + depth goes: the same slot, or in place its spot
	 * in the file's window (registered by now: xfer_sink_place). */
	if (seq + s->hello.depth < s->nchunks) {
		xfer_sink_where(&s->sink, seq + s->hello.depth, s->ring, &b, &off);
		m.u.credit.addr = (uintptr_t)b->addr + off;
		m.u.credit.rkey = b->mr->rkey;
	}
	return xfer_ctl_send(&s->ctl, &m);
}

/* DONE: all data is here. fsync, verify, rename, answer. */
static int on_put_done(struct session *s, uint64_t arrived, const struct xfer_done *d)
{
	struct xfer_msg m = { .type = XFER_T_COMMITTED };
	char why[RC_ERR_LEN], ours[2 * XFER_HASH_LEN + 1], theirs[2 * XFER_HASH_LEN + 1];
	int ret;

	if (arrived != s->nchunks || d->size != s->size)
		return refuse(s, EPROTO,
			      "protocol error: DONE after %" PRIu64 " of %" PRIu64
			      " chunks, for %" PRIu64 " of %" PRIu64 " bytes",
			      arrived, s->nchunks, d->size, s->size);
	if (xfer_hpool_top(&s->disk.pool, s->digest))
		return refuse(s, EINVAL, "%s", "internal error: the chunks are not all hashed");
	ret = xfer_sink_sync(&s->sink, s->size, why, sizeof(why));
	if (ret)
		return refuse(s, -ret, "server: %s; removed the partial file", why);
	xfer_hash_hex(s->digest, ours);
	xfer_hash_hex(d->hash, theirs);
	if (memcmp(s->digest, d->hash, XFER_HASH_LEN))
		return refuse(s, EIO,
			      "checksum mismatch: the client sent %s %s, the server received %s; "
			      "nothing was stored",
			      XFER_HASH_NAME, theirs, ours);
	rc_trace(&s->c->log, "fsync'd, %" PRIu64 " bytes and " XFER_HASH_NAME " verified", s->size);
	ret = xfer_sink_commit(&s->sink, why, sizeof(why));
	if (ret)
		return refuse(s, -ret, "server: %s", why);
	rc_trace(&s->c->log, "in place: %s (%s)", s->sink.name, s->sink.how);
	rc_trace(&s->c->log, "copied by the CPU: %" PRIu64 " file bytes (%s)", s->io.copied,
		 xfer_sink_copies(&s->sink, why, sizeof(why)));
	trace_cpu(s);
	m.u.done.size = s->size;
	memcpy(m.u.done.hash, s->digest, XFER_HASH_LEN);
	ret = xfer_ctl_send(&s->ctl, &m);
	if (!ret)
		ret = xfer_ctl_drain(&s->ctl);
	/* Committed either way: the file is in place and verified. */
	printf("put %s from %s: %" PRIu64 " bytes, %s %s verified, stored\n", s->qname, s->c->peer,
	       s->size, XFER_HASH_NAME, ours);
	return 0;
}

/* -v: what the put's receiving thread waits for when it blocks. */
static enum xfer_wait_for receive_waits_for(const struct session *s, uint64_t arrived,
					    uint64_t stored, bool have_done)
{
	if (have_done || arrived == s->nchunks)
		return XFER_WAIT_END;
	/* Chunks here and not yet in the file: the disk thread's; else the
	 * client's next WRITE. */
	return stored < arrived ? XFER_WAIT_DISK : XFER_WAIT_PEER;
}

static int receive_loop(struct session *s)
{
	/* Chunks that arrived, that the disk thread wrote, whose slot we
	 * gave back. */
	uint64_t arrived = 0, stored = 0, credited = 0;
	struct xfer_done fin = { 0 };
	bool have_done = false;
	struct xfer_msg m;
	struct ibv_wc wc;
	uint64_t since;
	int ret;

	for (;;) {
		ret = disk_done(s, &stored);
		if (ret)
			return ret;
		if (credited < stored) {
			ret = send_credit(s, credited++);
			if (ret)
				return lost_client(s, ret, stored * s->hello.chunk);
			continue;
		}
		if (have_done && stored == arrived) {
			/* The disk thread is done: the file is ours again. */
			xfer_disk_stop(&s->disk);
			return on_put_done(s, arrived, &fin);
		}
		since = xfer_tl_now(&s->tl);
		ret = xfer_ctl_next(&s->ctl, &wc);
		xfer_tl_waited(&s->tl, receive_waits_for(s, arrived, stored, have_done), since);
		if (ret == -EAGAIN)
			continue; /* a chunk is written and hashed */
		if (ret)
			return lost_client(s, ret, arrived * s->hello.chunk);
		if (!xfer_ctl_is_recv(&s->ctl, &wc))
			return refuse(s, EPROTO, "protocol error: unexpected completion");
		ret = xfer_ctl_take(&s->ctl, &wc, &m);
		if (ret)
			return refuse(s, EPROTO, "protocol error: %s", s->c->log.err);
		if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
			if (have_done)
				return refuse(s, EPROTO, "protocol error: a chunk after DONE");
			ret = on_chunk_arrived(s, arrived, &wc);
			if (ret)
				return ret;
			arrived++;
		} else if (m.type == XFER_T_DONE && !have_done) {
			/* Checked once the disk thread has written what arrived. */
			fin = m.u.done;
			have_done = true;
		} else if (m.type == XFER_T_ERROR) {
			return rc_fail(&s->c->log, ECONNABORTED,
				       "put %s: the client gave up: %s; removed the partial file",
				       s->qname, m.u.error.text);
		} else {
			return refuse(s, EPROTO, "protocol error: unexpected %s during a put",
				      xfer_type_str(m.type));
		}
	}
}

int receive_file(struct session *s)
{
	int ret;

	xfer_tl_start(&s->tl, s->c->log.verbose, rc_now_ns());
	/* Nothing for the disk thread until the first chunk arrives. */
	ret = start_disk(s, 0, xfer_io_write);
	if (!ret)
		ret = receive_loop(s);
	xfer_disk_stop(&s->disk);
	/* -v: where this thread's time went (the client's operations in
	 * flight are not ours to count: depth 0). */
	xfer_tl_trace(&s->tl, &s->c->log, s->size, 0);
	return ret;
}
