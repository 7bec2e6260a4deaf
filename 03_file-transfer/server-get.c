// SPDX-License-Identifier: MIT
/*
 * server-get.c - 03's server sending a file (get): the disk thread reads
 * and hashes chunks into ring slots (or registers the file's pages), a
 * CHUNK announces each with its digest, the client READs it and returns a
 * CREDIT with its own; at the end, DONE, and the client's COMMITTED.
 * server.c has the connection and the request; the order is
 * sequence.txt's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "server.h"

/* ------------------------------------------------------------------ */
/* get: we announce filled slots, the client READs them                */
/* ------------------------------------------------------------------ */

/* Chunk seq is ready: tell the client where to READ it, our ring's slot
 * (copy) or the file's page cache in a registered window (zero-copy). */
static int announce_chunk(struct session *s, uint64_t seq)
{
	uint32_t chunk = s->hello.chunk, len = xfer_chunk_len(s->size, chunk, seq);
	struct xfer_msg m = { .type = XFER_T_CHUNK };
	struct rc_buf *b;
	size_t off;
	int ret;

	xfer_src_where(&s->src, seq, s->ring, &b, &off);
	m.u.chunk = (struct xfer_chunk){ .seq = seq,
					 .offset = seq * chunk,
					 .len = len,
					 .slot = (uint16_t)(seq % s->hello.depth),
					 .addr = (uintptr_t)b->addr + off,
					 .rkey = b->mr->rkey };
	/* Our digest of what is in the slot: the client checks the chunk
	 * against it as soon as it has written it. */
	if (xfer_hpool_digest(&s->disk.pool, seq, m.u.chunk.hash))
		return refuse(s, EINVAL, "internal error: no digest of chunk %" PRIu64, seq);
	ret = xfer_ctl_send(&s->ctl, &m);
	xfer_tl_data(&s->tl, 0);
	return ret;
}

static int on_get_committed(struct session *s, uint64_t credited, const struct xfer_done *d)
{
	char path[300], ours[2 * XFER_HASH_LEN + 1], theirs[2 * XFER_HASH_LEN + 1];

	xfer_hash_hex(s->digest, ours);
	xfer_hash_hex(d->hash, theirs);
	if (credited != s->nchunks || d->size != s->size ||
	    memcmp(d->hash, s->digest, XFER_HASH_LEN))
		return rc_fail(&s->c->log, EPROTO,
			       "get %s: the client committed %" PRIu64 " bytes with %s %s, we sent "
			       "%" PRIu64 " with %s",
			       s->qname, d->size, XFER_HASH_NAME, theirs, s->size, ours);
	printf("get %s to %s: %" PRIu64 " bytes, %s %s verified by the client\n", s->qname,
	       s->c->peer, s->size, XFER_HASH_NAME, ours);
	rc_trace(&s->c->log, "source: %s; copied by the CPU: %" PRIu64 " file bytes",
		 xfer_src_path(&s->src, path, sizeof(path)), s->io.copied);
	trace_cpu(s);
	return 0;
}

/* -v: what the get's sending thread waits for when it blocks. */
static enum xfer_wait_for send_waits_for(const struct session *s, uint64_t filled,
					 uint64_t credited, bool done_sent)
{
	if (done_sent)
		return XFER_WAIT_END;
	/* A slot the client gave back and the disk thread has not filled
	 * yet: the disk's; else every slot is out, the client's CREDIT. */
	return filled < credited + s->hello.depth && filled < s->nchunks ? XFER_WAIT_DISK
									 : XFER_WAIT_PEER;
}

static int send_loop(struct session *s)
{
	/* Chunks the disk thread read into their slot, that we announced,
	 * whose slot the client gave back. */
	uint64_t filled = 0, announced = 0, credited = 0;
	bool done_sent = false;
	struct xfer_msg m;
	struct ibv_wc wc;
	char why[RC_ERR_LEN];
	uint64_t since;
	int ret;

	for (;;) {
		ret = disk_done(s, &filled);
		if (ret)
			return ret;
		/* Announce every filled slot. */
		if (announced < filled) {
			ret = announce_chunk(s, announced++);
			if (ret)
				return lost_client(s, ret, credited * s->hello.chunk);
			continue;
		}
		if (announced == s->nchunks && !done_sent) {
			/* Every chunk is read: is the file still what we read? */
			xfer_disk_stop(&s->disk);
			if (xfer_hpool_top(&s->disk.pool, s->digest))
				return refuse(s, EINVAL, "%s",
					      "internal error: the chunks are not all hashed");
			if (xfer_src_verify(&s->src, s->digest, s->srv->opt.hash_threads, why,
					    sizeof(why)))
				return refuse(s, EIO, "server: %s; nothing was stored", why);
			m = (struct xfer_msg){ .type = XFER_T_DONE };
			m.u.done.size = s->size;
			memcpy(m.u.done.hash, s->digest, XFER_HASH_LEN);
			ret = xfer_ctl_send(&s->ctl, &m);
			if (ret)
				return lost_client(s, ret, credited * s->hello.chunk);
			done_sent = true;
			continue;
		}
		since = xfer_tl_now(&s->tl);
		ret = xfer_ctl_next(&s->ctl, &wc);
		xfer_tl_waited(&s->tl, send_waits_for(s, filled, credited, done_sent), since);
		if (ret == -EAGAIN)
			continue; /* the disk thread read a chunk */
		if (ret)
			return lost_client(s, ret, credited * s->hello.chunk);
		if (!xfer_ctl_is_recv(&s->ctl, &wc) || wc.opcode != IBV_WC_RECV)
			return refuse(s, EPROTO, "protocol error: unexpected completion");
		ret = xfer_ctl_take(&s->ctl, &wc, &m);
		if (ret)
			return refuse(s, EPROTO, "protocol error: %s", s->c->log.err);
		if (m.type == XFER_T_CREDIT) {
			ret = xfer_check_credit(&m.u.credit, credited, announced, s->hello.depth,
						why, sizeof(why));
			if (ret)
				return refuse(s, EPROTO, "protocol error: %s", why);
			/* The client's digest of the chunk it stored must be
			 * ours (it checked ours, from the CHUNK, first). */
			ret = xfer_hpool_check(&s->disk.pool, m.u.credit.seq, m.u.credit.hash, why,
					       sizeof(why));
			if (ret)
				return refuse(s, -ret, "%s", why);
			/* The client has the chunk: its slot may be refilled. */
			credited++;
			xfer_tl_data(&s->tl, 0);
			xfer_disk_allow(&s->disk, credited + s->hello.depth);
		} else if (m.type == XFER_T_COMMITTED && done_sent) {
			return on_get_committed(s, credited, &m.u.done);
		} else if (m.type == XFER_T_ERROR) {
			return rc_fail(&s->c->log, ECONNABORTED, "get %s: the client failed: %s",
				       s->qname, m.u.error.text);
		} else {
			return refuse(s, EPROTO, "protocol error: unexpected %s during a get",
				      xfer_type_str(m.type));
		}
	}
}

int send_file(struct session *s)
{
	int ret;

	xfer_tl_start(&s->tl, s->c->log.verbose, rc_now_ns());
	/* The disk thread may fill every slot at once. */
	ret = start_disk(s, s->hello.depth, xfer_io_read);
	if (!ret)
		ret = send_loop(s);
	xfer_disk_stop(&s->disk);
	/* -v: where this thread's time went (the client's operations in
	 * flight are not ours to count: depth 0). */
	xfer_tl_trace(&s->tl, &s->c->log, s->size, 0);
	return ret;
}
