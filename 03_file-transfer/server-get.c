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
#include <netinet/in.h>

#include "server.h"

/* ------------------------------------------------------------------ */
/* get: the READs' own connection                                      */
/* ------------------------------------------------------------------ */

/*
 * Before the ACCEPT: a listener on the address this client reached, on a
 * free port, and a fresh token. The client's second rdma_connect comes
 * here with the token in its JOIN; its QP, on this session's PD, carries
 * the client's READs and nothing else: no SEND is queued with them
 * (XFER_T_JOIN says why that matters).
 */
int open_data_listener(struct session *s)
{
	struct sockaddr_storage sa;
	int ret;

	ret = xfer_token_new(s->token);
	if (ret)
		return rc_fail(&s->c->log, -ret, "getrandom: %s", strerror(-ret));
	/* Our address on this connection, port 0: the same device. */
	if (rc_addr_with_port(&sa, rdma_get_local_addr(s->c->id), 0))
		return rc_fail(&s->c->log, EAFNOSUPPORT, "%s",
			       "the data connection needs an IPv4 or IPv6 address");
	/* Backlog 1: one connection is expected, a wrong one is refused.
	 * Its own trace would say "server: listening": ours names the conn. */
	ret = rc_listen_at(&s->data_l, NULL, (struct sockaddr *)&sa, 1, false);
	if (ret)
		return rc_fail(&s->c->log, -ret, "%s", s->data_l.log.err);
	rc_trace(&s->c->log, "data connection: listening on %s port %u", s->data_l.addr,
		 s->data_l.port);
	return 0;
}

/* Same IP address as the control connection's peer (ports differ). */
static bool same_peer_host(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		       &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr));
}

/* Is this connect request our client's JOIN? 0, or why not in why. */
static int check_join(struct session *s, const struct rc_cm_info *info, char *why, size_t len)
{
	uint8_t token[XFER_TOKEN_LEN];

	if (xfer_join_unpack(info->priv, info->priv_len, token, why, len))
		return -EPROTO;
	if (!same_peer_host(rdma_get_peer_addr(info->id), rdma_get_peer_addr(s->c->id))) {
		snprintf(why, len, "%s", "not from this session's client");
		return -EACCES;
	}
	if (!xfer_token_equal(token, s->token)) {
		snprintf(why, len, "%s", "wrong token");
		return -EACCES;
	}
	/* Its initiator depth arrives as the responder resources it wants. */
	if (info->responder_resources < 1) {
		snprintf(why, len, "%s",
			 "the data connection offers no RDMA READ (initiator depth 0)");
		return -EPROTO;
	}
	return 0;
}

/* The JOIN is right: its QP beside ours, on our PD, READs up to rd_depth. */
static int take_join(struct session *s, const struct rc_cm_info *info)
{
	/* The READs are the client's: this QP posts one receive (below). */
	struct ibv_qp_cap cap = {
		.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1
	};
	char name[sizeof(s->c->log.name)];
	int ret;

	/* "server conn 3 data": its trace lines name the session. */
	snprintf(name, sizeof(name), "%.40s data", s->c->log.name);
	rc_conn_init(&s->data, name, s->c->log.verbose, s->c->timeout_ms, s->c->cancel_fd);
	/* Its own channel: the listener closes once it is taken. */
	ret = rc_take_request(&s->data, info, true);
	if (!ret)
		ret = rc_create_qp_beside(&s->data, s->c, &cap);
	/* One receive that no message takes: it completes, flushed, only
	 * when this QP fails (a READ we refused), and our CQ tells us. */
	if (!ret)
		ret = rc_post_recv(&s->data, NULL, 0, 0, XFER_WR_WATCH);
	if (ret) {
		rc_reject(&s->data, "the server could not set up the data connection");
		return ret;
	}
	return rc_accept(&s->data, 0, s->rd_depth);
}

/* The client left while we waited for its JOIN: did it say why (an ERROR
 * sent before it disconnected, e.g. its data connection failed)? */
static int client_left(struct session *s, int ret)
{
	struct xfer_msg m;
	struct ibv_wc wc;

	/* Only after DISCONNECTED: then this polls what is left, without
	 * waiting. */
	if (s->c->peer_disconnected && xfer_ctl_next(&s->ctl, &wc) == 0 &&
	    xfer_ctl_is_recv(&s->ctl, &wc) && wc.opcode == IBV_WC_RECV &&
	    xfer_ctl_take(&s->ctl, &wc, &m) == 0 && m.type == XFER_T_ERROR)
		return rc_fail(&s->c->log, ECONNABORTED, "get %s: the client gave up: %s", s->qname,
			       m.u.error.text);
	return lost_client(s, ret, 0);
}

/* One event on the control connection while we wait for the JOIN: the
 * client may have given up. 0 to wait on, or the error. */
static int control_event(struct session *s)
{
	struct rc_cm_info info;
	int ret;

	ret = rc_take_cm_event(s->c->cm_channel, &info, NULL, &s->c->log);
	if (ret == -EAGAIN)
		return 0;
	if (!ret)
		ret = rc_conn_cm_event(s->c, &info);
	if (!ret && s->c->peer_disconnected)
		ret = rc_fail(&s->c->log, ECONNRESET, "%s", "the client disconnected");
	return ret;
}

/*
 * After the ACCEPT: wait (--timeout) for the client's data connection.
 * A connect request that is not its JOIN is refused, and we wait on.
 */
static int join_data_connection(struct session *s)
{
	uint64_t deadline = rc_now_us() + (uint64_t)s->c->timeout_ms * 1000;
	const int fds[3] = { s->data_l.channel->fd, s->c->cm_channel ? s->c->cm_channel->fd : -1,
			     s->c->cancel_fd };
	struct rc_cm_info info;
	struct rdma_cm_id *id;
	char why[RC_ERR_LEN];
	int i, ret;

	for (;;) {
		i = rc_wait_readable(fds, 3, deadline);
		if (i == -ETIMEDOUT)
			return refuse(s, ETIMEDOUT,
				      "no data connection within %.1f s of the ACCEPT (--timeout)",
				      s->c->timeout_ms / 1000.0);
		if (i == 2)
			return rc_fail(&s->c->log, ECANCELED, "%s", "the server is stopping");
		if (i < 0)
			return rc_fail(&s->c->log, -i, "poll: %s", strerror(-i));
		if (i == 1) {
			ret = control_event(s);
			if (ret)
				return client_left(s, ret);
			continue;
		}
		ret = rc_take_cm_event(s->data_l.channel, &info, &id, &s->c->log);
		if (ret == -EAGAIN)
			continue;
		if (ret)
			return refuse(s, -ret, "data connection: rdma_get_cm_event: %s",
				      strerror(-ret));
		if (info.event != RDMA_CM_EVENT_CONNECT_REQUEST)
			return refuse(s, EIO, "data connection: the listener got %s",
				      rdma_event_str(info.event));
		ret = check_join(s, &info, why, sizeof(why));
		if (ret) {
			char from[64];

			rc_format_addr(rdma_get_peer_addr(id), from, sizeof(from));
			rc_trace(&s->c->log, "data connection from %s refused: %s", from, why);
			rc_reject_id(id, why);
			rdma_destroy_id(id);
			continue;
		}
		ret = take_join(s, &info);
		if (ret)
			return refuse(s, -ret, "data connection: %s", s->data.log.err);
		rc_trace(&s->c->log, "data connection from %s: QP %u, %u READs at a time",
			 s->data.peer, s->data.qp->qp_num, s->rd_depth);
		/* Nobody else may come in now. */
		rc_listener_close(&s->data_l);
		return 0;
	}
}

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
			continue; /* a chunk is read and hashed */
		if (ret == -EIO && wc.status != IBV_WC_SUCCESS && wc.wr_id == XFER_WR_WATCH)
			ret = rc_fail(&s->c->log, ECONNABORTED,
				      "the data connection failed (its receive: %s; a READ we "
				      "refused, outside what we announced, or a broken link)",
				      ibv_wc_status_str(wc.status));
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
	/* The client READs nothing before its data connection is up. */
	ret = join_data_connection(s);
	/* The disk thread may fill every slot at once. */
	if (!ret)
		ret = start_disk(s, s->hello.depth, xfer_io_read);
	if (!ret)
		ret = send_loop(s);
	xfer_disk_stop(&s->disk);
	/* -v: where this thread's time went (the client's operations in
	 * flight are not ours to count: depth 0). */
	xfer_tl_trace(&s->tl, &s->c->log, s->size, 0);
	return ret;
}
