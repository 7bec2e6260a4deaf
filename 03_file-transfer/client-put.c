// SPDX-License-Identifier: MIT
/*
 * client-put.c - 03 rdma-client's put, in the order of sequence.txt: the
 * disk thread starts (the get uses it too) and reads each chunk into its
 * slot, or finds it in the file's registered window; the main thread
 * RDMA_WRITE_WITH_IMMs each chunk that is read and hashed into the
 * server's ring, as long as the server's CREDITs allow, and checks the
 * digest each CREDIT carries; once every WRITE completed, DONE with the
 * top digest, and the server's COMMITTED must match it. See client.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "client.h"

/* ------------------------------------------------------------------ */
/* The disk thread                                                     */
/* ------------------------------------------------------------------ */

/* The disk thread for this transfer: xfer_io_read (put: file -> our
 * slots) or xfer_io_write (get: our slots -> the temporary file), and its
 * hashing threads. */
int start_disk(struct client *cl, uint64_t allowed, xfer_disk_fn fn)
{
	struct xfer_hash_cfg h = { .threads = cl->opt.hash_threads,
				   .size = cl->size,
				   .chunk = cl->opt.chunk,
				   .depth = cl->opt.depth,
				   .fn = fn == xfer_io_read ? xfer_io_hash_src
							    : xfer_io_hash_sink };
	char why[RC_ERR_LEN];
	int ret;

	cl->io = (struct xfer_io){ .ring = cl->ring ? cl->ring->addr : NULL,
				   .chunk = cl->opt.chunk,
				   .depth = cl->opt.depth,
				   .size = cl->size,
				   .src = &cl->src,
				   .sink = &cl->sink,
				   .log = &cl->conn.log,
				   .who = "client",
				   .name = cl->qlocal };
	ret = xfer_disk_start_hashed(&cl->disk, &cl->conn, allowed, fn, &cl->io, &h, why,
				     sizeof(why));
	return ret ? give_up(cl, -ret, "client: %s", why) : 0;
}

/* How many chunks the disk thread has handled so far, or its failure. */
int disk_done(struct client *cl, uint64_t *done)
{
	char why[RC_ERR_LEN];
	int ret;

	ret = xfer_disk_done(&cl->disk, done, why, sizeof(why));
	if (!ret)
		return 0;
	return give_up(cl, -ret, "%s", why);
}

/* ------------------------------------------------------------------ */
/* put                                                                 */
/* ------------------------------------------------------------------ */

/* Our slot (copy) or the file's registered window (zero-copy) -> the
 * chunk's slot of the server's ring, with the immediate that tells the
 * server which chunk just landed. */
static int post_chunk_write(struct client *cl, uint64_t seq)
{
	uint32_t len = xfer_chunk_len(cl->size, cl->opt.chunk, seq);
	uint16_t slot = (uint16_t)(seq % cl->opt.depth);
	struct rc_buf *src;
	size_t src_off;

	xfer_src_where(&cl->src, seq, cl->ring, &src, &src_off);
	/* Where the server said (ACCEPT, then the slot's last CREDIT): a
	 * wrong address fails the WRITE or the server's own digest check.
	 * Signalled: the completion says our source may be reused. */
	return rc_post_rdma(&cl->conn, IBV_WR_RDMA_WRITE_WITH_IMM, src, src_off, len,
			    cl->chunk_at[slot].addr, cl->chunk_at[slot].rkey,
			    xfer_imm_pack(seq, slot), slot, true);
}

/*
 * A CREDIT: the server stored chunk seq and gives its slot back. Our
 * WRITEs so far are `posted`, the CREDITs before this one `credited`.
 */
static int on_credit(struct client *cl, const struct xfer_credit *cr, uint64_t credited,
		     uint64_t posted)
{
	char why[RC_ERR_LEN];
	int ret;

	ret = xfer_check_credit(cr, credited, posted, cl->opt.depth, why, sizeof(why));
	if (ret)
		return rc_fail(&cl->conn.log, EPROTO, "protocol error: %s", why);
	/* The server's digest of the chunk it stored must be
	 * ours: else the chunk is named, nothing is stored. */
	ret = xfer_hpool_check(&cl->disk.pool, cr->seq, cr->hash, why, sizeof(why));
	if (ret)
		return give_up(cl, -ret, "%s", why);
	/* Where chunk seq + depth goes, in this slot. */
	cl->chunk_at[cr->slot].addr = cr->addr;
	cl->chunk_at[cr->slot].rkey = cr->rkey;
	return 0;
}

/*
 * Every WRITE completed: is the source still what we sent? Only then
 * DONE, so a file changed under us never reaches the server's commit.
 */
static int send_done(struct client *cl)
{
	struct xfer_msg m = { .type = XFER_T_DONE };
	char why[RC_ERR_LEN];

	/* The file is ours alone: the disk thread is through. */
	xfer_disk_stop(&cl->disk);
	if (xfer_hpool_top(&cl->disk.pool, cl->digest))
		return give_up(cl, EINVAL, "%s", "internal error: the chunks are not all hashed");
	if (xfer_src_verify(&cl->src, cl->digest, cl->opt.hash_threads, why, sizeof(why)))
		return give_up(cl, EIO, "client: %s; nothing was stored", why);
	m.u.done.size = cl->size;
	memcpy(m.u.done.hash, cl->digest, XFER_HASH_LEN);
	return xfer_ctl_send(&cl->ctl, &m);
}

/* The server's COMMITTED: what it stored must be what we sent. */
static int check_committed(struct client *cl, const struct xfer_done *d)
{
	char ours[2 * XFER_HASH_LEN + 1], theirs[2 * XFER_HASH_LEN + 1];

	if (d->size == cl->size && !memcmp(d->hash, cl->digest, XFER_HASH_LEN))
		return 0;
	xfer_hash_hex(cl->digest, ours);
	xfer_hash_hex(d->hash, theirs);
	return rc_fail(&cl->conn.log, EPROTO,
		       "the server committed %" PRIu64 " bytes with %s %s, we sent %" PRIu64
		       " with %s",
		       d->size, XFER_HASH_NAME, theirs, cl->size, ours);
}

/* -v: what the put's main thread waits for when it blocks. */
static enum xfer_wait_for put_waits_for(const struct client *cl, uint64_t posted, uint64_t written,
					uint64_t credited)
{
	if (written == cl->nchunks)
		return XFER_WAIT_END;
	if (posted > written)
		return XFER_WAIT_LINK;
	/* Nothing in flight: every slot is the server's, or none is read. */
	return posted >= credited + cl->opt.depth ? XFER_WAIT_PEER : XFER_WAIT_DISK;
}

/* The main thread's put: post each chunk, count the completions, handle
 * the server's messages, until COMMITTED. */
static int put_loop(struct client *cl)
{
	uint64_t n = cl->nchunks, depth = cl->opt.depth;
	/* Chunks read from disk (by the disk thread), posted, whose WRITE
	 * completed, and whose slot the server returned. Chunk k always uses
	 * slot k % depth. */
	uint64_t nread = 0, posted = 0, written = 0, credited = 0;
	bool done_sent = false, committed = false;
	struct xfer_msg m;
	struct ibv_wc wc;
	uint64_t since;
	int ret;

	for (;;) {
		ret = disk_done(cl, &nread);
		if (ret)
			return ret;
		/* Post every chunk that is read and whose slot the server has
		 * free. Meanwhile the disk thread reads the next ones. */
		if (posted < nread && posted < credited + depth) {
			ret = post_chunk_write(cl, posted++);
			if (ret)
				return ret;
			xfer_tl_data(&cl->tl, (unsigned)(posted - written));
			continue;
		}
		if (written == n && !done_sent) {
			ret = send_done(cl);
			if (ret)
				return ret;
			done_sent = true;
			continue;
		}
		if (committed && written == n)
			return 0;
		xfer_progress_show(&cl->prog, "put",
				   credited * cl->opt.chunk < cl->size ? credited * cl->opt.chunk
								       : cl->size,
				   cl->size);
		/* Nothing to do but wait for a completion or the disk. */
		since = xfer_tl_now(&cl->tl);
		ret = xfer_ctl_next(&cl->ctl, &wc);
		xfer_tl_waited(&cl->tl, put_waits_for(cl, posted, written, credited), since);
		if (ret == -EAGAIN)
			continue; /* a chunk is read and hashed */
		if (ret)
			return ret;
		if (wc.opcode == IBV_WC_RDMA_WRITE && wc.wr_id == written % depth &&
		    written < posted) {
			/* Our copy of the chunk is sent: its slot may be
			 * refilled, with the chunk `depth` further on. */
			rc_link_moved(&cl->conn, xfer_chunk_len(cl->size, cl->opt.chunk, written));
			written++;
			xfer_tl_data(&cl->tl, (unsigned)(posted - written));
			xfer_disk_allow(&cl->disk, written + depth);
			continue;
		}
		if (!xfer_ctl_is_recv(&cl->ctl, &wc) || wc.opcode != IBV_WC_RECV)
			return rc_unexpected_wc(&cl->conn, &wc);
		ret = xfer_ctl_take(&cl->ctl, &wc, &m);
		if (ret)
			return ret;
		if (m.type == XFER_T_CREDIT) {
			ret = on_credit(cl, &m.u.credit, credited, posted);
			if (ret)
				return ret;
			credited++;
		} else if (m.type == XFER_T_COMMITTED && done_sent && credited == n) {
			ret = check_committed(cl, &m.u.done);
			if (ret)
				return ret;
			committed = true;
		} else if (m.type == XFER_T_ERROR) {
			return server_error(cl, &m);
		} else {
			return unexpected(cl, &m);
		}
	}
}

/* Every chunk WRITTEN and credited, DONE sent and COMMITTED checked. */
int put_file(struct client *cl)
{
	int ret;

	/* The disk thread may fill every slot at once. */
	ret = start_disk(cl, cl->opt.depth, xfer_io_read);
	if (!ret)
		ret = put_loop(cl);
	xfer_disk_stop(&cl->disk);
	/* -v: where the main thread's time went, WRITEs out of depth. */
	xfer_tl_trace(&cl->tl, &cl->conn.log, cl->size, cl->opt.depth);
	return ret;
}
