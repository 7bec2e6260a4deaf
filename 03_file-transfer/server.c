// SPDX-License-Identifier: MIT
/*
 * 03 rdma-server: serve the files of one directory and receive uploads
 * into it, over RDMA, several clients at once.
 *
 * What it shows, in order (see sequence.txt): read the client's HELLO
 * (put or get, chunk size, depth) from the connect request and enforce the
 * limits before allocating anything; create a QP sized from the depth;
 * register one ring of DEPTH chunk-sized slots that the client may WRITE
 * (put) or READ (get), and nothing else; post every receive before
 * accepting; then
 *   put: each chunk arrives by RDMA_WRITE_WITH_IMM straight into a ring
 *        slot (no receive buffer, no copy by us on the way in); the
 *        immediate names the slot and sequence, which we check; we pwrite
 *        the slot to a temporary file and return the slot with a CREDIT
 *        that carries our digest of the chunk (the client compares it);
 *        at DONE we fsync, compare the top digest and rename into place;
 *   get: before the ACCEPT we listen on a free port for the client's
 *        second connection, which must bring the ACCEPT's token (JOIN);
 *        its QP, on our PD, serves the client's READs and nothing else.
 *        We pread the next chunks into free slots, announce each with a
 *        CHUNK message that carries its digest; the client RDMA_READs it,
 *        checks it and returns a CREDIT with its digest.
 * Each client has its own thread, QP, CQ, ring and file (rc_serve in
 * common/): one client's crash, stall or garbage only ends its own
 * transfer. Each transfer also has a disk thread for the pwrite/pread of
 * each chunk and --hash-threads threads for its XXH3-128, so the client's
 * thread stays free for the verbs calls (xfer-disk.h says how they hand
 * chunks over).
 *
 * Copies: RDMA removes the socket-buffer copies and the protocol work of
 * TCP (the NIC moves the bytes between the two rings). What remains is one
 * CPU copy on each side between the page cache and the ring: pwrite from
 * the ring (put), pread into it (get). O_DIRECT into the registered ring
 * would remove that one too, at the price of alignment rules.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth.h"
#include "xfer-ctl.h"
#include "xfer-disk.h"
#include "xfer-msg.h"
#include "xfer-name.h"
#include "xfer-opts.h"
#include "xfer-report.h"
#include "xfer-sink.h"
#include "xfer-src.h"
#include "rc-server.h"

#include "server.h"

/* ------------------------------------------------------------------ */
/* Connection setup                                                    */
/* ------------------------------------------------------------------ */

/* Refuse the connect request after a local failure, keeping our message. */
static int reject_setup(struct rc_conn *c, int ret, const char *why)
{
	char err[RC_ERR_LEN];

	memcpy(err, c->log.err, sizeof(err));
	rc_reject(c, why);
	memcpy(c->log.err, err, sizeof(err));
	return ret;
}

static int setup(struct session *s)
{
	struct rc_conn *c = s->c;
	unsigned depth = s->hello.depth;
	/* Receives: DEPTH chunks (put) or credits (get) in flight, plus the
	 * end of stream and an ERROR. Sends: our control messages only. */
	struct ibv_qp_cap cap = { .max_send_wr = XFER_RECVS(depth),
				  .max_recv_wr = XFER_RECVS(depth),
				  .max_send_sge = 1,
				  .max_recv_sge = 1 };
	char why[256];
	int access, ret;

	/* get: the CQ, sized from this cap, also takes the data connection's
	 * one receive (server-get.c). */
	if (s->hello.op == XFER_GET)
		cap.max_recv_wr++;
	ret = rc_create_qp(c, &cap);
	if (ret)
		return reject_setup(c, ret, "the server could not create a QP");
	/* Only now is the port's max_msg_sz known: the last limit. */
	ret = xfer_check_limits(&s->hello, &s->srv->opt.lim, c->dev.max_msg_sz, why, sizeof(why));
	if (ret) {
		rc_reject(c, why);
		return rc_fail(&c->log, ERANGE, "rejected: %s", why);
	}
	/*
	 * The only memory the client may touch, and only through this
	 * session's QPs (the rkey belongs to this connection's PD, which a
	 * get's data connection shares):
	 * put: REMOTE_WRITE (which needs LOCAL_WRITE too); get: REMOTE_READ,
	 * filled by our own pread, which needs no flag at all.
	 */
	access = s->hello.op == XFER_PUT ? IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE
					 : IBV_ACCESS_REMOTE_READ;
	ret = rc_buf_alloc(c, (size_t)s->hello.chunk * depth, access, &s->ring);
	if (ret)
		return reject_setup(
			c, ret, "the server could not register its ring; try a smaller -c or -t");
	ret = xfer_ctl_init(&s->ctl, c, XFER_RECVS(depth), XFER_RECVS(depth));
	if (ret)
		return reject_setup(c, ret, "the server could not set up the connection");
	return 0;
}

/* Read the HELLO, check it against our limits, set up, accept. */
static int accept_client(struct session *s, const void *priv, size_t priv_len)
{
	struct rc_conn *c = s->c;
	char why[256];
	int ret;

	ret = xfer_hello_unpack(priv, priv_len, &s->hello, why, sizeof(why));
	if (!ret)
		/* Limits first, before anything is allocated (max_msg_sz is
		 * checked in setup, once the device is known). */
		ret = xfer_check_limits(&s->hello, &s->srv->opt.lim, UINT32_MAX, why, sizeof(why));
	/* The CM reports the request from our side's point of view: the
	 * client's initiator depth (READs it will have in flight) arrives
	 * as the responder resources it wants from us. */
	if (!ret && s->hello.op == XFER_GET && !c->peer_responder_resources) {
		snprintf(why, sizeof(why), "%s",
			 "get needs RDMA READ, but the connect request offered an initiator depth "
			 "of 0");
		ret = -EPROTO;
	}
	/* --read-only / --write-only: refused before anything is allocated. */
	if (!ret && s->srv->opt.read_only && s->hello.op == XFER_PUT) {
		snprintf(why, sizeof(why), "%s",
			 "this server is read-only (--read-only): put is refused, get only");
		ret = -EPERM;
	}
	if (!ret && s->srv->opt.write_only && s->hello.op == XFER_GET) {
		snprintf(why, sizeof(why), "%s",
			 "this server is write-only (--write-only): get is refused, put only");
		ret = -EPERM;
	}
	if (ret) {
		rc_reject(c, why);
		return rc_fail(&c->log, EPROTO, "rejected: %s", why);
	}
	rc_trace(&c->log, "HELLO %s chunk=%u depth=%u", s->hello.op == XFER_PUT ? "put" : "get",
		 s->hello.chunk, s->hello.depth);
	ret = setup(s);
	if (ret)
		return ret;
	if (s->hello.op == XFER_GET) {
		/* READ needs responder resources: how many of the client's
		 * READs we serve at once. At most what the client asked for,
		 * what the device allows, and what the ring holds. */
		unsigned rd = s->hello.depth;

		if (rd > c->peer_responder_resources)
			rd = c->peer_responder_resources;
		if (rd > c->dev.max_rd_atom)
			rd = c->dev.max_rd_atom;
		if (rd == 0) {
			rc_reject(c, "this server's device cannot serve RDMA READs");
			return rc_fail(&c->log, ENOTSUP, "rejected: max_qp_rd_atom is 0");
		}
		s->rd_depth = (uint8_t)rd;
	}
	/* This connection carries no READ: they come on the get's data
	 * connection (XFER_T_JOIN), which is accepted with rd_depth. */
	return rc_accept(c, 0, 0);
}

/* ------------------------------------------------------------------ */
/* Errors: tell the client, then end only this connection.             */
/* ------------------------------------------------------------------ */

/*
 * Send ERROR{code, text} (the client prints the text), wait until it is
 * delivered, and record it for our log. Returns -code.
 */
int refuse(struct session *s, int code, const char *fmt, ...)
{
	struct xfer_msg m;
	char text[XFER_ERR_TEXT + 1], kept[RC_ERR_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	/* Nothing more goes to or comes from the file once we said we failed. */
	xfer_disk_stop(&s->disk);
	xfer_make_error(&m, code, "%s", text);
	rc_fail(&s->c->log, code, "%s %s: %s", s->hello.op == XFER_PUT ? "put" : "get", s->qname,
		m.u.error.text);
	memcpy(kept, s->c->log.err, sizeof(kept));
	/* Best effort: the connection may be gone already. */
	if (xfer_ctl_send(&s->ctl, &m) == 0)
		xfer_ctl_drain(&s->ctl);
	/* Our reason stays the log's, whatever the delivery met. */
	memcpy(s->c->log.err, kept, sizeof(kept));
	return -code;
}

/* The transport failed or the client vanished: nothing to tell it. */
int lost_client(struct session *s, int ret, uint64_t done)
{
	char why[RC_ERR_LEN];

	xfer_disk_stop(&s->disk);
	snprintf(why, sizeof(why), "%s", s->c->log.err);
	if (s->c->peer_disconnected)
		snprintf(why, sizeof(why), "%s", "the client disconnected");
	if (done > s->size)
		done = s->size; /* the last chunk may be short */
	return rc_fail(&s->c->log, ret == -ETIMEDOUT ? ETIMEDOUT : ECONNABORTED,
		       "%s %s: %s after %" PRIu64 " of %" PRIu64 " bytes%s",
		       s->hello.op == XFER_PUT ? "put" : "get", s->qname, why, done, s->size,
		       s->hello.op == XFER_PUT ? "; removed the partial file" : "");
}

/* ------------------------------------------------------------------ */
/* The REQUEST                                                         */
/* ------------------------------------------------------------------ */

/* The first message: the nonce a --secret proof must cover. Sent with or
 * without a secret (the flag says which), so a client always knows. */
static int send_challenge(struct session *s)
{
	struct xfer_msg m = { .type = XFER_T_CHALLENGE };
	int ret;

	/* Fresh for every connection: a proof seen once is worth nothing on
	 * the next one. */
	ret = xfer_nonce_new(s->nonce);
	if (ret)
		return rc_fail(&s->c->log, -ret, "getrandom: %s", strerror(-ret));
	m.u.challenge.version = XFER_PROTO_VERSION;
	m.u.challenge.flags = s->srv->secret.set ? XFER_CH_F_SECRET : 0;
	memcpy(m.u.challenge.nonce, s->nonce, XFER_NONCE_LEN);
	return xfer_ctl_send(&s->ctl, &m);
}

static int wait_request(struct session *s, struct xfer_msg *m)
{
	struct ibv_wc wc;
	int ret;

	ret = xfer_ctl_next(&s->ctl, &wc);
	/* With a secret, the proof is due within --timeout of the nonce. */
	if (ret == -ETIMEDOUT && s->srv->secret.set)
		return refuse(s, EACCES,
			      "authentication failed: no request within %.1f s of the challenge "
			      "(--timeout)",
			      s->c->timeout_ms / 1000.0);
	if (ret)
		return ret;
	if (!xfer_ctl_is_recv(&s->ctl, &wc) || wc.opcode != IBV_WC_RECV)
		return refuse(s, EPROTO, "protocol error: expected a REQUEST first");
	ret = xfer_ctl_take(&s->ctl, &wc, m);
	if (ret)
		return refuse(s, EPROTO, "protocol error: %s", s->c->log.err);
	if (m->type == XFER_T_ERROR)
		return rc_fail(&s->c->log, ECONNABORTED,
			       "the client gave up before its request: %s", m->u.error.text);
	if (m->type != XFER_T_REQUEST)
		return refuse(s, EPROTO, "protocol error: expected a REQUEST, got %s",
			      xfer_type_str(m->type));
	return 0;
}

static int send_accept(struct session *s)
{
	struct xfer_msg m = { .type = XFER_T_ACCEPT };

	m.u.accept.size = s->size;
	m.u.accept.ring = (struct rc_remote_buf){ .addr = (uintptr_t)s->ring->addr,
						  .rkey = s->ring->mr->rkey,
						  .len = (uint32_t)s->ring->len };
	m.u.accept.rd_depth = s->rd_depth;
	/* get: where the READs' own connection comes in, and its ticket. */
	if (s->hello.op == XFER_GET) {
		m.u.accept.data_port = s->data_l.port;
		memcpy(m.u.accept.token, s->token, XFER_TOKEN_LEN);
	}
	/* The client learns which path its chunks take. put in place: the
	 * file's first window instead of the ring (chunk k < depth at k x
	 * chunk: the window begins at offset 0). */
	if (s->hello.op == XFER_GET && s->src.zerocopy)
		m.u.accept.flags = XFER_ACC_F_ZEROCOPY;
	if (s->hello.op == XFER_PUT && s->sink.inplace) {
		m.u.accept.flags = XFER_ACC_F_INPLACE;
		m.u.accept.ring =
			(struct rc_remote_buf){ .addr = (uintptr_t)s->sink.win[0].buf.addr,
						.rkey = s->sink.win[0].buf.mr->rkey,
						.len = (uint32_t)s->sink.win[0].buf.len };
	}
	return xfer_ctl_send(&s->ctl, &m);
}

/* Our path's flags: either side's --copy, else either side's --zero-copy,
 * else our device (Soft-RoCE: the ring). */
static unsigned path_flags(const struct session *s, const struct xfer_request *r, bool direct)
{
	return xfer_choose_flags(s->srv->opt.copy || (r->flags & XFER_REQ_F_COPY),
				 s->srv->opt.zero_copy || (r->flags & XFER_REQ_F_ZEROCOPY), direct,
				 s->c->dev.vendor_id);
}

/* put: may we create this name? Then the temporary file. */
static int start_put(struct session *s, const struct xfer_request *r)
{
	char why[RC_ERR_LEN];
	int ret;

	s->size = r->size;
	s->nchunks = xfer_nchunks(s->size, s->hello.chunk);
	ret = xfer_sink_open(&s->sink, s->srv->dirfd, r->name,
			     r->flags & XFER_REQ_F_FORCE ? XFER_SINK_FORCE : 0, why, sizeof(why));
	if (ret)
		return refuse(s, -ret, "%s", why);
	rc_trace(&s->c->log, "created temporary file for %s: %s", s->sink.name, s->sink.how);
	/* On tmpfs the client's WRITEs land in the file's page cache (its
	 * windows, REMOTE_WRITE); else in our ring, and we pwrite. */
	xfer_sink_choose(&s->sink, s->c->dev.pd,
			 path_flags(s, r, s->srv->opt.direct || (r->flags & XFER_REQ_F_DIRECT)),
			 IBV_ACCESS_REMOTE_WRITE, s->size, s->hello.chunk, s->hello.depth, 0,
			 &s->c->log);
	rc_trace(&s->c->log, "destination: %s", xfer_sink_path(&s->sink, why, sizeof(why)));
	return send_accept(s);
}

/* get: open the file without following symlinks; regular files only. */
static int start_get(struct session *s, const struct xfer_request *r)
{
	struct stat st;
	char path[300];
	int ret;

	if (r->size || (r->flags & ~(XFER_REQ_F_PROOF | XFER_REQ_F_COPY | XFER_REQ_F_ZEROCOPY)))
		return refuse(s, EPROTO,
			      "protocol error: a get REQUEST has size 0 and no flags but the "
			      "proof's, copy and zero-copy");
	/* O_NOFOLLOW: a symlink placed in DIR is refused (ELOOP), so it
	 * cannot lead outside. O_NONBLOCK: opening a FIFO must not hang us;
	 * fstat then refuses everything but regular files. */
	s->fd = openat(s->srv->dirfd, r->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (s->fd < 0) {
		ret = errno;
		if (ret == ELOOP)
			return refuse(s, ret,
				      "%s is a symbolic link; the server does not follow "
				      "links",
				      s->qname);
		if (ret == ENOENT)
			return refuse(s, ret, "no such file %s on the server", s->qname);
		return refuse(s, ret, "cannot open %s: %s", s->qname, strerror(ret));
	}
	if (fstat(s->fd, &st))
		return refuse(s, errno, "cannot stat %s: %s", s->qname, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return refuse(s, EINVAL, "%s is %s, not a regular file", s->qname,
			      S_ISDIR(st.st_mode) ? "a directory" : "a special file");
	fcntl(s->fd, F_SETFL, 0); /* back to blocking reads */
	/* A hint that we read it once, front to back: more read-ahead. */
	posix_fadvise(s->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	s->size = (uint64_t)st.st_size;
	s->nchunks = xfer_nchunks(s->size, s->hello.chunk);
	/* Its size and times now: DONE waits until they are compared. */
	xfer_src_init(&s->src, s->fd, &st, s->hello.chunk, s->hello.depth);
	/* The path: windows of the file's page cache that the client READs
	 * (REMOTE_READ), or our ring, with the reason in the -v trace. The
	 * ring is registered already, so VmPin counts it. */
	xfer_src_choose(&s->src, s->c->dev.pd, IBV_ACCESS_REMOTE_READ, path_flags(s, r, false), 0,
			&s->c->log);
	rc_trace(&s->c->log, "source: %s", xfer_src_path(&s->src, path, sizeof(path)));
	ret = open_data_listener(s);
	if (ret)
		return refuse(s, -ret, "the server could not listen for the data connection: %s",
			      s->c->log.err);
	return send_accept(s);
}

static int on_request(struct session *s, const struct xfer_msg *m)
{
	const struct xfer_request *r = &m->u.request;
	char why[200], q[360];

	xfer_quote(q, sizeof(q), r->name, r->name_len);
	snprintf(s->qname, sizeof(s->qname), "'%s'", q);
	/* --secret: the proof first. Until it checks, the name is only text
	 * for our log: nothing is looked up, opened or advertised. */
	if (s->srv->secret.set && !(r->flags & XFER_REQ_F_PROOF))
		return refuse(s, EACCES,
			      "authentication failed: the request has no proof; this server needs "
			      "--secret");
	if (s->srv->secret.set && !xfer_proof_ok(&s->srv->secret, s->nonce, &s->hello, r))
		return refuse(s, EACCES,
			      "authentication failed: wrong proof (another key, an old nonce or "
			      "another request)");
	/* Never trust the name: a plain name inside DIR, or nothing. */
	if (xfer_name_check(r->name, r->name_len, why, sizeof(why)))
		return refuse(s, EINVAL, "forbidden name %s: %s", s->qname, why);
	return s->hello.op == XFER_PUT ? start_put(s, r) : start_get(s, r);
}
/* ------------------------------------------------------------------ */
/* What put and get share (server-put.c, server-get.c)                 */
/* ------------------------------------------------------------------ */

/* How many chunks the disk thread has handled so far, or its failure. */
int disk_done(struct session *s, uint64_t *done)
{
	char why[RC_ERR_LEN];
	int ret;

	ret = xfer_disk_done(&s->disk, done, why, sizeof(why));
	return ret ? refuse(s, -ret, "%s", why) : 0;
}

/* The disk thread for this transfer: xfer_io_write (put: our slots -> the
 * temporary file, while the NIC keeps receiving the next chunks into the
 * other slots) or xfer_io_read (get: file -> our slots, while the client
 * READs the slots announced before). */
int start_disk(struct session *s, uint64_t allowed, xfer_disk_fn fn)
{
	char why[RC_ERR_LEN];
	int ret;

	struct xfer_hash_cfg h = { .threads = s->srv->opt.hash_threads,
				   .size = s->size,
				   .chunk = s->hello.chunk,
				   .depth = s->hello.depth,
				   .fn = fn == xfer_io_read ? xfer_io_hash_src
							    : xfer_io_hash_sink };

	s->io = (struct xfer_io){ .ring = s->ring->addr,
				  .chunk = s->hello.chunk,
				  .depth = s->hello.depth,
				  .size = s->size,
				  .src = &s->src,
				  .sink = &s->sink,
				  .log = &s->c->log,
				  .who = "server",
				  .name = s->qname };
	ret = xfer_disk_start_hashed(&s->disk, s->c, allowed, fn, &s->io, &h, why, sizeof(why));
	return ret ? refuse(s, -ret, "server: %s", why) : 0;
}

/*
 * -v: the CPU time this transfer took on our side, for a benchmark to add
 * to the client's. Per thread, not the process's: the process serves
 * other clients meanwhile. This connection's thread (from the connect
 * request on) and its disk and hashing threads, each measured by itself
 * (getrusage RUSAGE_THREAD); the listener's share (the connect request
 * event) is not in it, nor the kernel's own threads (writeback).
 */
void trace_cpu(struct session *s)
{
	struct xfer_cpu cpu = { 0 };
	char line[128];

	xfer_cpu_add(&cpu, RUSAGE_THREAD);
	xfer_disk_cpu(&s->disk, &cpu);
	xfer_cpu_fmt(line, sizeof(line), &cpu, s->size);
	rc_trace(&s->c->log,
		 "CPU: %s (this transfer's threads: this connection's, its disk thread and %u "
		 "hashing threads)",
		 line, s->srv->opt.hash_threads);
}

/* ------------------------------------------------------------------ */
/* One client                                                          */
/* ------------------------------------------------------------------ */

/* After success: the client disconnects; wait for it (bounded). */
static void wait_goodbye(struct session *s)
{
	struct ibv_wc wc;

	while (xfer_ctl_next(&s->ctl, &wc) == 0)
		;
	rc_disconnect(s->c);
}

static int serve_client(struct rc_conn *c, const void *priv, size_t priv_len, void *arg)
{
	struct session s = { .c = c, .srv = arg, .fd = -1, .qname = "?" };
	struct xfer_msg m;
	int ret;

	s.sink.fd = -1;
	ret = accept_client(&s, priv, priv_len);
	if (ret)
		goto out;
	printf("connection from %s: %s, chunk %u x depth %u\n", c->peer,
	       s.hello.op == XFER_PUT ? "put" : "get", s.hello.chunk, s.hello.depth);
	ret = send_challenge(&s);
	if (!ret)
		ret = wait_request(&s, &m);
	if (!ret)
		ret = on_request(&s, &m);
	if (!ret)
		ret = s.hello.op == XFER_PUT ? receive_file(&s) : send_file(&s);
	if (!ret)
		wait_goodbye(&s);
out:
	/* Every way out of a put that did not commit removes the temporary
	 * file; after a commit there is none left to remove. */
	xfer_disk_stop(&s.disk);
	/* get: the READs' QP first: it is on this connection's PD and CQ. */
	rc_conn_destroy(&s.data);
	rc_listener_close(&s.data_l);
	xfer_sink_abort(&s.sink);
	xfer_src_release(&s.src);
	if (s.fd >= 0)
		close(s.fd);
	xfer_ctl_free(&s.ctl);
	return ret;
}

int main(int argc, char **argv)
{
	struct server srv = { .dirfd = -1 };
	char err[RC_ERR_LEN];
	int ret;

	ret = xfer_parse_server(argc, argv, &srv.opt, err, sizeof(err));
	if (ret) {
		if (ret < 0)
			fprintf(stderr, "rdma-server: %s (try --help)\n", err);
		return ret > 0 ? RC_EXIT_OK : RC_EXIT_USAGE;
	}
	/* The key, checked at start: a bad key file fails now, not with the
	 * first client. */
	if (srv.opt.secret_file &&
	    xfer_secret_load(&srv.secret, srv.opt.secret_file, err, sizeof(err))) {
		fprintf(stderr, "rdma-server: %s\n", err);
		return RC_EXIT_USAGE;
	}
	/* Every name a client sends is resolved relative to this directory
	 * (openat), never through a path the client could steer elsewhere. */
	srv.dirfd = open(srv.opt.root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (srv.dirfd < 0) {
		fprintf(stderr, "rdma-server: cannot open directory '%s': %s\n", srv.opt.root,
			strerror(errno));
		return RC_EXIT_USAGE;
	}
	/* Listen, then one thread per client running serve_client. */
	ret = rc_server_main("rdma-server", &srv.opt.rc, serve_client, &srv);
	close(srv.dirfd);
	xfer_secret_wipe(&srv.secret);
	return ret;
}
