// SPDX-License-Identifier: MIT
/*
 * client-get.c - 03 rdma-client's get, in the order of sequence.txt: for
 * each CHUNK the server announces (where to READ it, and its digest), an
 * RDMA_READ into our slot or, in place, into the file's window, at most
 * rd_depth at a time; the disk thread (started in client-put.c) writes
 * each chunk to the temporary file and a hashing thread checks its
 * digest; a CREDIT gives the slot back; at DONE we fsync, verify, put
 * the file in place and send COMMITTED. See client.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "client.h"

/*
 * A CHUNK: the server announces chunk `announced`, where to READ it and
 * its digest.
 */
static int on_chunk(struct client *cl, const struct xfer_chunk *ch, uint64_t announced)
{
	char why[RC_ERR_LEN];
	int ret;

	/* Sequence, slot, offset and length: exactly the
	 * next chunk, or the connection ends here. */
	ret = xfer_check_chunk(ch, announced, cl->size, cl->opt.chunk, cl->opt.depth, why,
			       sizeof(why));
	if (ret)
		return give_up(cl, EPROTO, "protocol error: %s", why);
	/* The hashing thread compares the chunk with this as
	 * soon as it is in the file, and names it if it differs. */
	xfer_hpool_expect(&cl->disk.pool, announced, ch->hash);
	cl->chunk_at[ch->slot].addr = ch->addr;
	cl->chunk_at[ch->slot].rkey = ch->rkey;
	return 0;
}

/* Where the CHUNK said (the server's ring slot, or its page cache) ->
 * our slot, by the NIC alone. Its length was checked against the chunk's;
 * a wrong address fails the READ or the chunk's digest, nothing else. */
static int post_chunk_read(struct client *cl, uint64_t seq)
{
	uint32_t len = xfer_chunk_len(cl->size, cl->opt.chunk, seq);
	uint16_t slot = (uint16_t)(seq % cl->opt.depth);
	struct rc_buf *b;
	size_t off;
	int ret;

	/* Into our slot, or in place: into the file's window. */
	xfer_sink_where(&cl->sink, seq, cl->ring, &b, &off);
	/* On the data connection's QP: no SEND is ever queued with a READ. */
	ret = rc_post_rdma(&cl->data, IBV_WR_RDMA_READ, b, off, len, cl->chunk_at[slot].addr,
			   cl->chunk_at[slot].rkey, 0, slot, true);
	return ret ? rc_fail(&cl->conn.log, -ret, "%s", cl->data.log.err) : 0;
}

/* A READ failed (its completion's status in log.err): which chunk, on
 * which connection. The server learns it from our ERROR. */
static int read_failed(struct client *cl, uint64_t seq)
{
	char full[RC_ERR_LEN];

	snprintf(full, sizeof(full),
		 "the RDMA READ of chunk %" PRIu64 " on the data connection failed: %.440s", seq,
		 cl->conn.log.err);
	/* The ERROR carries what fits in it; our own message all of it. */
	give_up(cl, EIO, "%s", full);
	return rc_fail(&cl->conn.log, EIO, "%s", full);
}

/* The chunk is in the file and matched the CHUNK's digest: give its slot
 * back to the server, with our digest of it. */
static int send_credit(struct client *cl, uint64_t seq)
{
	struct xfer_msg m = { .type = XFER_T_CREDIT };

	m.u.credit.seq = seq;
	m.u.credit.slot = (uint16_t)(seq % cl->opt.depth);
	if (xfer_hpool_digest(&cl->disk.pool, seq, m.u.credit.hash))
		return give_up(cl, EINVAL, "internal error: no digest of chunk %" PRIu64, seq);
	return xfer_ctl_send(&cl->ctl, &m);
}

/* All data is in the temporary file: fsync, verify, rename, tell. */
static int commit_get(struct client *cl, const struct xfer_done *d)
{
	struct xfer_msg m = { .type = XFER_T_COMMITTED };
	char why[RC_ERR_LEN], ours[2 * XFER_HASH_LEN + 1], theirs[2 * XFER_HASH_LEN + 1];
	int ret;

	if (xfer_hpool_top(&cl->disk.pool, cl->digest))
		return give_up(cl, EINVAL, "%s", "internal error: the chunks are not all hashed");
	if (d->size != cl->size)
		return give_up(cl, EPROTO, "DONE for %" PRIu64 " bytes, ACCEPT said %" PRIu64,
			       d->size, cl->size);
	ret = xfer_sink_sync(&cl->sink, cl->size, why, sizeof(why));
	if (ret)
		return give_up(cl, -ret, "client: %s; removed the partial file", why);
	if (memcmp(d->hash, cl->digest, XFER_HASH_LEN)) {
		xfer_hash_hex(cl->digest, ours);
		xfer_hash_hex(d->hash, theirs);
		return give_up(cl, EIO,
			       "checksum mismatch: the server sent %s %s, we received %s; nothing "
			       "was stored",
			       XFER_HASH_NAME, theirs, ours);
	}
	rc_trace(&cl->conn.log, "fsync'd, %" PRIu64 " bytes and " XFER_HASH_NAME " verified",
		 cl->size);
	ret = xfer_sink_commit(&cl->sink, why, sizeof(why));
	if (ret)
		return give_up(cl, -ret, "client: %s", why);
	rc_trace(&cl->conn.log, "in place: %s (%s)", cl->sink.name, cl->sink.how);
	m.u.done.size = cl->size;
	memcpy(m.u.done.hash, cl->digest, XFER_HASH_LEN);
	ret = xfer_ctl_send(&cl->ctl, &m);
	/* Wait until the server has it, before we disconnect. */
	if (!ret)
		ret = xfer_ctl_drain(&cl->ctl);
	/* The file is in place and verified either way: a server that hangs
	 * up as soon as COMMITTED arrives may leave our SEND unacknowledged. */
	if (ret) {
		rc_trace(&cl->conn.log, "COMMITTED not acknowledged: %s", cl->conn.log.err);
		cl->conn.log.err[0] = '\0'; /* not a failure of the get */
	}
	return 0;
}

/* -v: what the get's main thread waits for when it blocks. */
static enum xfer_wait_for get_waits_for(const struct client *cl, uint64_t posted, uint64_t done,
					uint64_t stored)
{
	if (done == cl->nchunks)
		return XFER_WAIT_END;
	if (posted > done)
		return XFER_WAIT_LINK;
	/* Nothing in flight: chunks READ and not yet in the file hold their
	 * CREDITs back (our disk), or the server has announced no more. */
	return stored < done ? XFER_WAIT_DISK : XFER_WAIT_PEER;
}

/* The main thread's get: credit, READ, count the completions, handle
 * the server's messages, until DONE and our commit. */
static int get_loop(struct client *cl)
{
	uint64_t n = cl->nchunks;
	/* Chunks the server announced, READs posted, READs done, chunks
	 * written to the file (by the disk thread), slots given back. */
	uint64_t announced = 0, posted = 0, done = 0, stored = 0, credited = 0;
	struct xfer_done fin = { 0 };
	bool have_done = false;
	struct xfer_msg m;
	struct ibv_wc wc;
	uint64_t since;
	int ret;

	for (;;) {
		ret = disk_done(cl, &stored);
		if (ret)
			return ret;
		/* Every chunk in the file frees its slot on the server. */
		if (credited < stored) {
			ret = send_credit(cl, credited++);
			if (ret)
				return ret;
			continue;
		}
		/* READ every announced chunk, at most rd_depth at a time. */
		if (posted < announced && posted - done < cl->rd_depth) {
			ret = post_chunk_read(cl, posted++);
			if (ret)
				return ret;
			xfer_tl_data(&cl->tl, (unsigned)(posted - done));
			continue;
		}
		if (have_done && stored == n) {
			/* The disk thread is done: the file is ours again. */
			xfer_disk_stop(&cl->disk);
			return commit_get(cl, &fin);
		}
		xfer_progress_show(&cl->prog, "get",
				   stored * cl->opt.chunk < cl->size ? stored * cl->opt.chunk
								     : cl->size,
				   cl->size);
		since = xfer_tl_now(&cl->tl);
		ret = xfer_ctl_next(&cl->ctl, &wc);
		xfer_tl_waited(&cl->tl, get_waits_for(cl, posted, done, stored), since);
		if (ret == -EAGAIN)
			continue; /* a chunk is written and hashed */
		if (ret == -EIO && wc.status != IBV_WC_SUCCESS && wc.qp_num == cl->data.qp->qp_num)
			return read_failed(cl, done);
		if (ret)
			return ret;
		if (wc.opcode == IBV_WC_RDMA_READ && wc.wr_id == done % cl->opt.depth &&
		    done < posted) {
			/* READs complete in order: chunk `done` is in our slot,
			 * for the disk thread to write. */
			rc_link_moved(&cl->conn, xfer_chunk_len(cl->size, cl->opt.chunk, done));
			xfer_disk_allow(&cl->disk, ++done);
			xfer_tl_data(&cl->tl, (unsigned)(posted - done));
			continue;
		}
		if (!xfer_ctl_is_recv(&cl->ctl, &wc) || wc.opcode != IBV_WC_RECV)
			return rc_unexpected_wc(&cl->conn, &wc);
		ret = xfer_ctl_take(&cl->ctl, &wc, &m);
		if (ret)
			return ret;
		if (m.type == XFER_T_CHUNK) {
			ret = on_chunk(cl, &m.u.chunk, announced);
			if (ret)
				return ret;
			announced++;
		} else if (m.type == XFER_T_DONE && !have_done && announced == n) {
			fin = m.u.done;
			have_done = true;
		} else if (m.type == XFER_T_ERROR) {
			return server_error(cl, &m);
		} else {
			return unexpected(cl, &m);
		}
	}
}

/*
 * The READs' own connection, to the ACCEPT's data_port with its token in
 * the JOIN; its QP on our PD and CQ (its completions come with the
 * control connection's). Only READs go on it: no SEND is ever queued
 * with them (XFER_T_JOIN says why).
 */
static int connect_data(struct client *cl)
{
	struct ibv_qp_cap cap = {
		.max_send_wr = cl->rd_depth, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1
	};
	uint8_t priv[XFER_JOIN_LEN];
	int ret;

	rc_conn_init(&cl->data, "client data", cl->opt.rc.verbose, cl->opt.rc.timeout_ms, -1);
	/* --ack-timeout and --retry-count: the READs' QP above all. */
	cl->data.ack_timeout = cl->conn.ack_timeout;
	cl->data.retry_count = cl->conn.retry_count;
	/* From and to the first connection's addresses: the same device, so
	 * one PD serves both QPs, and the server sees the same host. */
	ret = rc_client_resolve_beside(&cl->data, &cl->conn, cl->data_port);
	if (!ret)
		ret = rc_create_qp_beside(&cl->data, &cl->conn, &cap);
	xfer_join_pack(priv, cl->token);
	/* Initiator depth: the READs we keep in flight, as the ACCEPT said. */
	if (!ret)
		ret = rc_client_connect(&cl->data, priv, sizeof(priv), (uint8_t)cl->rd_depth, 0);
	if (ret)
		return give_up(cl, -ret, "the data connection (port %u) failed: %s", cl->data_port,
			       cl->data.log.err);
	rc_trace(&cl->conn.log, "data connection: QP %u to port %u, %u READs at a time",
		 cl->data.qp->qp_num, cl->data_port, cl->rd_depth);
	return 0;
}

/* Every announced chunk READ, stored and credited; then the commit. */
int get_file(struct client *cl)
{
	int ret;

	ret = connect_data(cl);
	if (ret)
		return ret;
	/* Nothing for the disk thread until the first READ completes. */
	ret = start_disk(cl, 0, xfer_io_write);
	if (!ret)
		ret = get_loop(cl);
	xfer_disk_stop(&cl->disk);
	/* -v: where the main thread's time went, READs out of rd_depth. */
	xfer_tl_trace(&cl->tl, &cl->conn.log, cl->size, cl->rd_depth);
	return ret;
}
