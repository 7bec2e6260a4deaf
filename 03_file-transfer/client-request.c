// SPDX-License-Identifier: MIT
/*
 * client-request.c - 03 rdma-client once connected, before the data: the
 * server's CHALLENGE (its nonce, and whether it wants a --secret proof),
 * our REQUEST (name, size, flags, proof), and its ACCEPT, checked field by
 * field before we trust it; a get then picks its destination path. Also
 * what every later step uses to fail: the server's ERROR, an unexpected
 * message, and give_up (tell the server, then fail). See client.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "client.h"
#include "xfer-report.h"

/* ------------------------------------------------------------------ */
/* Messages                                                            */
/* ------------------------------------------------------------------ */

/* The next message from the server; data completions are not expected. */
static int next_msg(struct client *cl, struct xfer_msg *m)
{
	struct ibv_wc wc;
	int ret;

	ret = xfer_ctl_next(&cl->ctl, &wc);
	if (ret)
		return ret;
	if (!xfer_ctl_is_recv(&cl->ctl, &wc) || wc.opcode != IBV_WC_RECV)
		return rc_unexpected_wc(&cl->conn, &wc);
	return xfer_ctl_take(&cl->ctl, &wc, m);
}

/* The server's ERROR: its code and text are our failure. */
int server_error(struct client *cl, const struct xfer_msg *m)
{
	return rc_fail(&cl->conn.log, (int)m->u.error.code, "server: %s", m->u.error.text);
}

/* A message that has no place here ends the connection. */
int unexpected(struct client *cl, const struct xfer_msg *m)
{
	return rc_fail(&cl->conn.log, EPROTO, "protocol error: unexpected %s from the server",
		       xfer_type_str(m->type));
}

/* A failure on our side during a transfer: tell the server, then fail. */
int give_up(struct client *cl, int code, const char *fmt, ...)
{
	char text[XFER_ERR_TEXT + 1];
	struct xfer_msg m;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	/* The file is ours alone again before anyone removes it. */
	xfer_disk_stop(&cl->disk);
	xfer_make_error(&m, code, "%s", text);
	/* Best effort: the connection may be gone already. */
	if (xfer_ctl_send(&cl->ctl, &m) == 0)
		xfer_ctl_drain(&cl->ctl);
	return rc_fail(&cl->conn.log, code, "%s", text);
}

/* The next message must be of `type`; an ERROR is the server's refusal. */
static int expect_msg(struct client *cl, uint8_t type, struct xfer_msg *m)
{
	int ret = next_msg(cl, m);

	if (ret)
		return ret;
	if (m->type == XFER_T_ERROR)
		return server_error(cl, m);
	return m->type == type ? 0 : unexpected(cl, m);
}

/* ------------------------------------------------------------------ */
/* CHALLENGE, REQUEST, ACCEPT                                          */
/* ------------------------------------------------------------------ */

/* The server's first message: its nonce, and whether it wants a proof. */
static int take_challenge(struct client *cl)
{
	struct xfer_msg m;
	int ret;

	ret = expect_msg(cl, XFER_T_CHALLENGE, &m);
	if (ret)
		return ret;
	if ((m.u.challenge.flags & XFER_CH_F_SECRET) && !cl->secret.set)
		return give_up(
			cl, EACCES,
			"authentication failed: the server requires --secret FILE (its key), "
			"and none was given");
	memcpy(cl->nonce, m.u.challenge.nonce, XFER_NONCE_LEN);
	return 0;
}

/* The REQUEST: which file, our size (put), our flags, and the proof. */
static int send_request(struct client *cl)
{
	struct xfer_msg m = { .type = XFER_T_REQUEST };
	struct xfer_request *r = &m.u.request;

	r->size = cl->opt.op == XFER_PUT ? cl->size : 0;
	if (cl->opt.op == XFER_PUT && cl->opt.force)
		r->flags |= XFER_REQ_F_FORCE;
	if (cl->opt.copy)
		r->flags |= XFER_REQ_F_COPY; /* the server's path too */
	if (cl->opt.zero_copy)
		r->flags |= XFER_REQ_F_ZEROCOPY; /* even if it is Soft-RoCE */
	if (cl->opt.op == XFER_PUT && cl->opt.direct)
		r->flags |= XFER_REQ_F_DIRECT;
	r->name_len = (uint16_t)strlen(cl->opt.name);
	memcpy(r->name, cl->opt.name, r->name_len);
	/* --secret: a MAC over the server's nonce, our HELLO and this very
	 * request (the flag included), good for this connection only. */
	if (cl->secret.set) {
		r->flags |= XFER_REQ_F_PROOF;
		xfer_proof_make(&cl->secret, cl->nonce, &cl->hello, r, r->proof);
	}
	return xfer_ctl_send(&cl->ctl, &m);
}

/*
 * Never trust the peer: the ring must be exactly what we asked for, the
 * size what we announced (put), the READ depth what we offered, the flags
 * those of our operation.
 */
static bool accept_fits(const struct client *cl, const struct xfer_accept *a)
{
	uint64_t ring_len = (uint64_t)cl->opt.chunk * cl->opt.depth;
	bool inplace = a->flags & XFER_ACC_F_INPLACE;

	if (!inplace && a->ring.len != ring_len)
		return false;
	/* in place: the window holds the first depth chunks, or the file */
	if (inplace && a->ring.len < (a->size < ring_len ? a->size : ring_len))
		return false;
	if (cl->opt.op == XFER_PUT)
		return a->size == cl->size && !a->rd_depth && !(a->flags & ~XFER_ACC_F_INPLACE) &&
		       !a->data_port;
	return a->rd_depth >= 1 && a->rd_depth <= cl->initiator_depth &&
	       !(a->flags & ~XFER_ACC_F_ZEROCOPY) && a->data_port;
}

/*
 * get: the NIC writes our file's page cache itself where that is safe
 * (tmpfs), else the ring and pwrite (copy). One line says which. The
 * ring is registered already (the size comes only with the ACCEPT).
 */
static void choose_destination(struct client *cl)
{
	char path[300];

	xfer_sink_choose(&cl->sink, cl->conn.dev.pd,
			 xfer_choose_flags(cl->opt.copy, cl->opt.zero_copy, cl->opt.direct,
					   cl->conn.dev.vendor_id),
			 0, cl->size, cl->opt.chunk, cl->opt.depth, 0, &cl->conn.log);
	xfer_sink_path(&cl->sink, path, sizeof(path));
	if (!cl->opt.quiet && !cl->opt.json)
		printf("destination: %s\n", path);
	else
		rc_trace(&cl->conn.log, "destination: %s", path);
}

/* The ACCEPT fits: the size, the server's path, where the first chunks
 * go; each side's path on stdout. */
static void take_accept(struct client *cl, const struct xfer_accept *a)
{
	unsigned i;

	cl->rd_depth = a->rd_depth;
	cl->data_port = a->data_port;
	memcpy(cl->token, a->token, XFER_TOKEN_LEN);
	cl->size = a->size;
	cl->nchunks = xfer_nchunks(cl->size, cl->opt.chunk);
	cl->peer_zerocopy = a->flags & XFER_ACC_F_ZEROCOPY;
	cl->peer_inplace = a->flags & XFER_ACC_F_INPLACE;
	cl->accepted = true;
	/* put: chunk k < depth goes to k x chunk in the ring (or the file's
	 * first window, in place); each CREDIT then says where the next. */
	for (i = 0; cl->opt.op == XFER_PUT && i < cl->opt.depth; i++)
		cl->chunk_at[i] =
			(struct rc_remote_buf){ .addr = a->ring.addr + (uint64_t)i * cl->opt.chunk,
						.rkey = a->ring.rkey };
	if (cl->opt.op == XFER_PUT && !cl->opt.quiet && !cl->opt.json)
		printf("destination: %s\n", xfer_peer_destination(cl->peer_inplace, cl->opt.copy));
	/* get: the server's source path, as put prints ours; our own end. */
	if (cl->opt.op == XFER_GET && !cl->opt.quiet && !cl->opt.json)
		printf("source: %s\n", xfer_peer_source(cl->peer_zerocopy, cl->opt.copy));
	if (cl->opt.op == XFER_GET)
		choose_destination(cl);
}

/* CHALLENGE, REQUEST, then ACCEPT (or the server's reason for refusing). */
int request(struct client *cl)
{
	struct xfer_msg m;
	struct xfer_accept *a = &m.u.accept;
	int ret;

	ret = take_challenge(cl);
	if (ret)
		return ret;
	ret = send_request(cl);
	if (!ret)
		ret = expect_msg(cl, XFER_T_ACCEPT, &m);
	if (ret)
		return ret;
	if (!accept_fits(cl, a))
		return rc_fail(&cl->conn.log, EPROTO,
			       "protocol error: ACCEPT with ring of %u bytes (asked %" PRIu64
			       "), size %" PRIu64 ", rd_depth %u",
			       a->ring.len, (uint64_t)cl->opt.chunk * cl->opt.depth, a->size,
			       a->rd_depth);
	take_accept(cl, a);
	return 0;
}
