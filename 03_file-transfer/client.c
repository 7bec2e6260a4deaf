// SPDX-License-Identifier: MIT
/*
 * 03 rdma-client: copy one file to (put) or from (get) an rdma-server,
 * pipelined, verified, and committed atomically.
 *
 * What it shows, in order (see sequence.txt): check the local side first
 * (the source can be read, or the destination may be created) so a bad
 * command fails before any network traffic; resolve; create a QP sized
 * from the depth; register the file's first window (a zero-copy put) or
 * a ring of DEPTH chunk-sized slots; post every receive; connect with a
 * HELLO (put or get, chunk, depth), so the server can refuse an
 * oversized ring before allocating anything; send the REQUEST (name,
 * size); then
 *   put: hash chunk k in the file's registered window (zero-copy), or
 *        pread it into slot k % depth and hash it there (copy), and
 *        RDMA_WRITE_WITH_IMM it into slot k % depth of the server's ring,
 *        the immediate naming slot and sequence; a slot is written again
 *        only after the server returned its CREDIT (its copy is on disk)
 *        and our WRITE completed (our copy may be overwritten), and its
 *        CREDIT carries the server's digest of the chunk, which must be
 *        ours; up to DEPTH chunks in flight, and the disk reads of the
 *        next chunks happen while earlier chunks are on the wire;
 *   get: for each CHUNK{slot, offset, len, seq, digest} the server
 *        announces, RDMA_READ the slot into our own slot (at most rd_depth
 *        READs in flight: the responder keeps state for each), pwrite it to
 *        a temporary file, check its digest, and return the slot with a
 *        CREDIT (and our digest);
 * then DONE{size, top digest} from the sender, once it checked that its
 * source did not change meanwhile, and COMMITTED from the receiver, who
 * fsyncs, verifies and renames only if everything matches.
 *
 * Copies: a put's source is zero-copy where the kernel lets us register
 * a read-only mapping of the file (6.2 and later: the NIC reads the page
 * cache, xfer-src.h); else, and for a get's sink, one CPU copy remains
 * between the page cache and the registered ring (pread/pwrite). RDMA
 * removes the socket buffers. Threads: the main thread makes every verbs
 * call (post, poll, control messages), the disk thread does the
 * pread/pwrite of each chunk, in order, and --hash-threads threads
 * (default 2) compute each chunk's XXH3-128 (xfer-disk.h and xfer-hash.h
 * say how they hand chunks over). So the copy and the hashing of some
 * chunks overlap the posting of the others, on other cores. --direct
 * writes a get's file from the ring with O_DIRECT where the file system
 * takes it: no page-cache copy, at the price of alignment rules.
 *
 * With --json, the result comes as one JSON object for scripts.
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
#include "xfer-progress.h"
#include "xfer-report.h"
#include "xfer-sink.h"
#include "xfer-src.h"
#include "rc-json.h"

struct client {
	struct xfer_client_opts opt;
	struct rc_conn conn;
	struct xfer_ctl ctl;
	struct rc_buf *ring;	       /* depth slots of chunk bytes */
	struct xfer_disk disk;	       /* pread/pwrite, and XXH3 of each chunk */
	struct xfer_io io;	       /* what the disk thread works on */
	uint8_t digest[XFER_HASH_LEN]; /* the top digest (xfer-hash.h) */
	uint8_t initiator_depth;       /* get: READs we may have outstanding */
	int fd;			       /* put: the source file */
	struct xfer_src src;	       /* put: where each chunk's bytes come from */
	int dirfd;		       /* get: the destination directory */
	struct xfer_sink sink;	       /* get: the temporary file */
	char local_name[XFER_NAME_MAX + 1];
	uint64_t size, nchunks;
	uint16_t rd_depth;  /* get: the server's answer */
	bool accepted;	    /* the server's ACCEPT arrived */
	bool peer_zerocopy; /* get: the server's CHUNKs point into its page cache */
	bool peer_inplace;  /* put: our WRITEs land in the server's page cache */
	/* Where the NIC takes (get: the CHUNK) or puts (put: the ACCEPT, then
	 * the slot's last CREDIT) the chunk in this slot, on the server. */
	struct rc_remote_buf chunk_at[XFER_MAX_DEPTH];
	char qname[400];  /* the remote name, quoted */
	char qlocal[400]; /* the local name, quoted */
	struct xfer_progress prog;
	uint64_t t0_ns, t1_ns;	       /* REQUEST sent, file committed */
	struct xfer_cpu cpu0, cpu1;    /* ours, all threads: before setup, at t1_ns */
	bool cpu_counted;	       /* cpu0 was read */
	struct xfer_hello hello;       /* what we connected with: the proof covers it */
	uint8_t nonce[XFER_NONCE_LEN]; /* from the server's CHALLENGE */
	struct xfer_secret secret;     /* --secret */
};

/* ------------------------------------------------------------------ */
/* The local side, checked before connecting                           */
/* ------------------------------------------------------------------ */

static int open_source(struct client *cl, char *err, size_t errlen)
{
	struct stat st;

	/* O_NONBLOCK: opening a FIFO must not hang us; fstat then refuses
	 * everything but regular files (whose size we must know). */
	cl->fd = open(cl->opt.local, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (cl->fd < 0) {
		snprintf(err, errlen, "cannot open '%s': %s", cl->opt.local, strerror(errno));
		return -1;
	}
	if (fstat(cl->fd, &st)) {
		snprintf(err, errlen, "cannot stat '%s': %s", cl->opt.local, strerror(errno));
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "'%s' is %s, not a regular file", cl->opt.local,
			 S_ISDIR(st.st_mode) ? "a directory" : "a special file");
		return -1;
	}
	fcntl(cl->fd, F_SETFL, 0); /* back to blocking reads */
	/* A hint that we read it once, front to back: more read-ahead. */
	posix_fadvise(cl->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	cl->size = (uint64_t)st.st_size;
	/* Its size and times now: the transfer ends by comparing them. */
	xfer_src_init(&cl->src, cl->fd, &st, cl->opt.chunk, cl->opt.depth);
	return 0;
}

/*
 * get: where the file goes. A directory DST receives it under the remote
 * NAME, so that name must be safe here too (we are the authority over our
 * own disk); otherwise DST names the file. The temporary file is created
 * now, next to it, so an unwritable or existing destination fails before
 * we connect.
 */
static int open_destination(struct client *cl, char *err, size_t errlen)
{
	const char *dst = cl->opt.local, *slash;
	char dir[4096], why[200];
	struct stat st;
	size_t n;

	if (stat(dst, &st) == 0 && S_ISDIR(st.st_mode)) {
		if (xfer_name_check(cl->opt.name, strlen(cl->opt.name), why, sizeof(why))) {
			snprintf(err, errlen, "cannot store %.100s in '%.100s': %s", cl->qname, dst,
				 why);
			return -1;
		}
		snprintf(dir, sizeof(dir), "%s", dst);
		snprintf(cl->local_name, sizeof(cl->local_name), "%s", cl->opt.name);
	} else {
		slash = strrchr(dst, '/');
		n = slash ? (size_t)(slash - dst) : 1;
		if (n >= sizeof(dir) || strlen(slash ? slash + 1 : dst) > XFER_NAME_MAX) {
			snprintf(err, errlen, "'%s': name too long", dst);
			return -1;
		}
		if (!slash)
			memcpy(dir, ".", 2);
		else if (slash == dst)
			memcpy(dir, "/", 2);
		else
			snprintf(dir, sizeof(dir), "%.*s", (int)n, dst);
		snprintf(cl->local_name, sizeof(cl->local_name), "%s", slash ? slash + 1 : dst);
		if (!cl->local_name[0]) {
			snprintf(err, errlen, "'%s': no such directory", dst);
			return -1;
		}
	}
	cl->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cl->dirfd < 0) {
		snprintf(err, errlen, "cannot open directory '%.300s': %s", dir, strerror(errno));
		return -1;
	}
	if (xfer_sink_open(&cl->sink, cl->dirfd, cl->local_name,
			   cl->opt.force ? XFER_SINK_FORCE : 0, why, sizeof(why))) {
		snprintf(err, errlen, "%s", why);
		return -1;
	}
	rc_trace(&cl->conn.log, "created temporary file for %s: %s", cl->local_name, cl->sink.how);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Connection setup                                                    */
/* ------------------------------------------------------------------ */

/* The ring could not be registered: usually the locked-memory limit. */
static int ring_failed(struct client *cl, int ret)
{
	uint64_t chunk = cl->opt.chunk;
	char ring[32], c[32], lim[32], hint[160];
	struct rlimit rl;

	if ((ret != -ENOMEM && ret != -EPERM) || getrlimit(RLIMIT_MEMLOCK, &rl))
		return ret; /* the library's message says it all */
	xfer_fmt_size(ring, sizeof(ring), chunk * cl->opt.depth);
	xfer_fmt_size(c, sizeof(c), chunk);
	if (rl.rlim_cur == RLIM_INFINITY)
		return rc_fail(&cl->conn.log, -ret,
			       "cannot register the %s ring (chunk %s x depth %u): %s; `ulimit -l` "
			       "is unlimited, so the machine is short of lockable memory: try a "
			       "smaller -c or -t",
			       ring, c, cl->opt.depth, strerror(-ret));
	xfer_ring_hint(hint, sizeof(hint), cl->opt.chunk, cl->opt.depth, rl.rlim_cur);
	xfer_fmt_size(lim, sizeof(lim), rl.rlim_cur);
	return rc_fail(
		&cl->conn.log, -ret,
		"cannot register the %s ring (chunk %s x depth %u): %s; registered memory is "
		"locked memory, limited to %s for this process (`ulimit -l`): raise the "
		"limit, or use a ring that fits, e.g. %s",
		ring, c, cl->opt.depth, strerror(-ret), lim, hint);
}

/*
 * put: the NIC reads the page cache (zero-copy) where the kernel lets us
 * register a read-only file mapping, else our pread into the ring (copy).
 * One line says which, and why not zero-copy. Within `ulimit -l`, less
 * the control buffers still to come.
 */
static void choose_source(struct client *cl)
{
	unsigned n = XFER_RECVS(cl->opt.depth);
	char path[300];

	xfer_src_choose(&cl->src, cl->conn.dev.pd, 0, cl->opt.copy, xfer_ctl_locked(n, n),
			&cl->conn.log);
	xfer_src_path(&cl->src, path, sizeof(path));
	if (!cl->opt.quiet && !cl->opt.json)
		printf("source: %s\n", path);
	else
		rc_trace(&cl->conn.log, "source: %s", path);
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
			 xfer_choose_flags(cl->opt.copy, cl->opt.direct), 0, cl->size,
			 cl->opt.chunk, cl->opt.depth, 0, &cl->conn.log);
	xfer_sink_path(&cl->sink, path, sizeof(path));
	if (!cl->opt.quiet && !cl->opt.json)
		printf("destination: %s\n", path);
	else
		rc_trace(&cl->conn.log, "destination: %s", path);
}

/* Returns 0, or a negative errno; *usage set when -c does not fit. */
static int setup(struct client *cl, bool *usage)
{
	struct rc_conn *c = &cl->conn;
	unsigned depth = cl->opt.depth;
	/* Sends: up to DEPTH data operations (WRITEs or READs) plus our
	 * control messages. Receives: see XFER_RECVS. */
	struct ibv_qp_cap cap = { .max_send_wr = depth + XFER_RECVS(depth),
				  .max_recv_wr = XFER_RECVS(depth),
				  .max_send_sge = 1,
				  .max_recv_sge = 1 };
	char a[32], b[32];
	int access, ret;

	ret = rc_create_qp(c, &cap);
	if (ret)
		return ret;
	/* One chunk is one RDMA operation: it must fit the port's limit. */
	if (cl->opt.chunk > c->dev.max_msg_sz) {
		*usage = true;
		xfer_fmt_size(a, sizeof(a), cl->opt.chunk);
		xfer_fmt_size(b, sizeof(b), c->dev.max_msg_sz);
		return rc_fail(&c->log, EINVAL,
			       "chunk %s is larger than the port's max_msg_sz (%s); use -c %s or "
			       "less",
			       a, b, b);
	}
	if (cl->opt.op == XFER_GET) {
		/* How many READs we ask to have outstanding. A requester's
		 * limit is max_qp_init_rd_atom (often 16 on hardware); the
		 * server's responder_resources will cap it again. */
		struct ibv_device_attr attr;

		if (ibv_query_device(c->dev.verbs, &attr))
			return rc_fail(&c->log, errno, "ibv_query_device: %s", strerror(errno));
		/* depth <= 255, so the smaller of the two fits 8 bits. */
		cl->initiator_depth = (uint8_t)(depth < (unsigned)attr.max_qp_init_rd_atom
							? depth
							: (unsigned)attr.max_qp_init_rd_atom);
		if (!cl->initiator_depth)
			return rc_fail(
				&c->log, ENOTSUP,
				"this device cannot issue RDMA READs (max_qp_init_rd_atom 0)");
	}
	if (cl->opt.op == XFER_PUT)
		choose_source(cl);
	/* put: the NIC only reads our ring (no flag needed); get: RDMA READ
	 * responses land in it (LOCAL_WRITE). Nothing remote touches it. A
	 * zero-copy put has none: the NIC reads the file's windows, and
	 * pinning a ring nobody uses would take locked memory for nothing. */
	access = cl->opt.op == XFER_PUT ? 0 : IBV_ACCESS_LOCAL_WRITE;
	if (!cl->src.zerocopy) {
		ret = rc_buf_alloc(c, (size_t)cl->opt.chunk * depth, access, &cl->ring);
		if (ret)
			return ring_failed(cl, ret);
	}
	/* Every receive posted before connecting: the server may answer the
	 * moment the connection is up. */
	return xfer_ctl_init(&cl->ctl, c, XFER_RECVS(depth), XFER_RECVS(depth));
}

static int connect_server(struct client *cl)
{
	uint8_t priv[XFER_HELLO_LEN];
	char why[RC_ERR_LEN];
	int ret;

	cl->hello = (struct xfer_hello){ .op = (uint8_t)cl->opt.op,
					 .version = XFER_PROTO_VERSION,
					 .depth = cl->opt.depth,
					 .chunk = cl->opt.chunk };
	/* The HELLO lets the server size its QP and ring, or refuse. */
	xfer_hello_pack(priv, &cl->hello);
	ret = rc_client_connect(&cl->conn, priv, sizeof(priv), cl->initiator_depth, 0);
	/* A version 1 server refuses our version byte as its reserved one. */
	if (ret && strstr(cl->conn.log.err, "reserved HELLO byte")) {
		memcpy(why, cl->conn.log.err, sizeof(why));
		rc_fail(&cl->conn.log, -ret,
			"%.300s; hint: the server is older (03 protocol version 1), this client "
			"speaks version %d",
			why, XFER_PROTO_VERSION);
	}
	return ret;
}

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

static int server_error(struct client *cl, const struct xfer_msg *m)
{
	return rc_fail(&cl->conn.log, (int)m->u.error.code, "server: %s", m->u.error.text);
}

static int unexpected(struct client *cl, const struct xfer_msg *m)
{
	return rc_fail(&cl->conn.log, EPROTO, "protocol error: unexpected %s from the server",
		       xfer_type_str(m->type));
}

/* A failure on our side during a transfer: tell the server, then fail. */
static int __attribute__((format(printf, 3, 4)))
give_up(struct client *cl, int code, const char *fmt, ...)
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

/* CHALLENGE, REQUEST, then ACCEPT (or the server's reason for refusing). */
static int request(struct client *cl)
{
	struct xfer_msg m = { .type = XFER_T_REQUEST };
	struct xfer_request *r = &m.u.request;
	struct xfer_accept *a = &m.u.accept;
	uint64_t ring_len = (uint64_t)cl->opt.chunk * cl->opt.depth;
	unsigned i;
	int ret;

	ret = take_challenge(cl);
	if (ret)
		return ret;
	r->size = cl->opt.op == XFER_PUT ? cl->size : 0;
	r->flags = cl->opt.op == XFER_PUT && cl->opt.force ? XFER_REQ_F_FORCE : 0;
	r->flags |= (cl->opt.copy ? XFER_REQ_F_COPY : 0) | /* the server's path too */
		    (cl->opt.op == XFER_PUT && cl->opt.direct ? XFER_REQ_F_DIRECT : 0);
	r->name_len = (uint16_t)strlen(cl->opt.name);
	memcpy(r->name, cl->opt.name, r->name_len);
	/* --secret: a MAC over the server's nonce, our HELLO and this very
	 * request (the flag included), good for this connection only. */
	if (cl->secret.set) {
		r->flags |= XFER_REQ_F_PROOF;
		xfer_proof_make(&cl->secret, cl->nonce, &cl->hello, r, r->proof);
	}
	ret = xfer_ctl_send(&cl->ctl, &m);
	if (!ret)
		ret = expect_msg(cl, XFER_T_ACCEPT, &m);
	if (ret)
		return ret;
	/* Never trust the peer: the ring must be exactly what we asked for,
	 * the size what we announced (put), the READ depth what we offered,
	 * the flags those of our operation. */
	if ((a->ring.len != ring_len && !(a->flags & XFER_ACC_F_INPLACE)) ||
	    /* in place: the window holds the first depth chunks, or the file */
	    ((a->flags & XFER_ACC_F_INPLACE) &&
	     a->ring.len < (a->size < ring_len ? a->size : ring_len)) ||
	    (cl->opt.op == XFER_PUT && a->size != cl->size) ||
	    (cl->opt.op == XFER_PUT && (a->rd_depth || (a->flags & ~XFER_ACC_F_INPLACE))) ||
	    (cl->opt.op == XFER_GET && (a->rd_depth < 1 || a->rd_depth > cl->initiator_depth ||
					(a->flags & ~XFER_ACC_F_ZEROCOPY))))
		return rc_fail(&cl->conn.log, EPROTO,
			       "protocol error: ACCEPT with ring of %u bytes (asked %" PRIu64
			       "), size %" PRIu64 ", rd_depth %u",
			       a->ring.len, ring_len, a->size, a->rd_depth);
	cl->rd_depth = a->rd_depth;
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
	return 0;
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
	if (xfer_src_verify(&cl->src, cl->digest, why, sizeof(why)))
		return give_up(cl, EIO, "client: %s; nothing was stored", why);
	m.u.done.size = cl->size;
	memcpy(m.u.done.hash, cl->digest, XFER_HASH_LEN);
	return xfer_ctl_send(&cl->ctl, &m);
}

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

/* The disk thread for this transfer: xfer_io_read (put: file -> our
 * slots) or xfer_io_write (get: our slots -> the temporary file), and its
 * hashing threads. */
static int start_disk(struct client *cl, uint64_t allowed, xfer_disk_fn fn)
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
static int disk_done(struct client *cl, uint64_t *done)
{
	char why[RC_ERR_LEN];
	int ret;

	ret = xfer_disk_done(&cl->disk, done, why, sizeof(why));
	if (ret && (ret = give_up(cl, -ret, "%s", why)) && cl->disk.pool.differs)
		rc_read_data_explain(&cl->conn); /* a get's READ: a known cause? */
	return ret;
}

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
	char why[RC_ERR_LEN];
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
		ret = xfer_ctl_next(&cl->ctl, &wc);
		if (ret == -EAGAIN)
			continue; /* the disk thread read a chunk */
		if (ret)
			return ret;
		if (wc.opcode == IBV_WC_RDMA_WRITE && wc.wr_id == written % depth &&
		    written < posted) {
			/* Our copy of the chunk is sent: its slot may be
			 * refilled, with the chunk `depth` further on. */
			rc_link_moved(&cl->conn, xfer_chunk_len(cl->size, cl->opt.chunk, written));
			written++;
			xfer_disk_allow(&cl->disk, written + depth);
			continue;
		}
		if (!xfer_ctl_is_recv(&cl->ctl, &wc) || wc.opcode != IBV_WC_RECV)
			return rc_unexpected_wc(&cl->conn, &wc);
		ret = xfer_ctl_take(&cl->ctl, &wc, &m);
		if (ret)
			return ret;
		if (m.type == XFER_T_CREDIT) {
			ret = xfer_check_credit(&m.u.credit, credited, posted, cl->opt.depth, why,
						sizeof(why));
			if (ret)
				return rc_fail(&cl->conn.log, EPROTO, "protocol error: %s", why);
			/* The server's digest of the chunk it stored must be
			 * ours: else the chunk is named, nothing is stored. */
			ret = xfer_hpool_check(&cl->disk.pool, m.u.credit.seq, m.u.credit.hash, why,
					       sizeof(why));
			if (ret)
				return give_up(cl, -ret, "%s", why);
			/* Where chunk seq + depth goes, in this slot. */
			cl->chunk_at[m.u.credit.slot].addr = m.u.credit.addr;
			cl->chunk_at[m.u.credit.slot].rkey = m.u.credit.rkey;
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

static int put_file(struct client *cl)
{
	int ret;

	/* The disk thread may fill every slot at once. */
	ret = start_disk(cl, cl->opt.depth, xfer_io_read);
	if (!ret)
		ret = put_loop(cl);
	xfer_disk_stop(&cl->disk);
	return ret;
}

/* ------------------------------------------------------------------ */
/* get                                                                 */
/* ------------------------------------------------------------------ */

/* Where the CHUNK said (the server's ring slot, or its page cache) ->
 * our slot, by the NIC alone. Its length was checked against the chunk's;
 * a wrong address fails the READ or the chunk's digest, nothing else. */
static int post_chunk_read(struct client *cl, uint64_t seq)
{
	uint32_t len = xfer_chunk_len(cl->size, cl->opt.chunk, seq);
	uint16_t slot = (uint16_t)(seq % cl->opt.depth);
	struct rc_buf *b;
	size_t off;

	/* Into our slot, or in place: into the file's window. */
	xfer_sink_where(&cl->sink, seq, cl->ring, &b, &off);
	return rc_post_rdma(&cl->conn, IBV_WR_RDMA_READ, b, off, len, cl->chunk_at[slot].addr,
			    cl->chunk_at[slot].rkey, 0, slot, true);
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
	return ret ? ret : xfer_ctl_drain(&cl->ctl);
}

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
	char why[RC_ERR_LEN];
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
		/* READ every announced chunk, at most rd_depth at a time, once
		 * every CREDIT sent is acknowledged: with a READ queued behind
		 * an unacknowledged SEND, a retransmission makes Soft-RoCE on
		 * Linux 6.12 and 7.x fail the QP (docs/kernels.md). */
		if (posted < announced && posted - done < cl->rd_depth) {
			ret = xfer_ctl_drain(&cl->ctl);
			if (!ret)
				ret = post_chunk_read(cl, posted++);
			if (ret)
				return ret;
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
		ret = xfer_ctl_next(&cl->ctl, &wc);
		if (ret == -EAGAIN)
			continue; /* the disk thread wrote a chunk */
		if (ret)
			return ret;
		if (wc.opcode == IBV_WC_RDMA_READ && wc.wr_id == done % cl->opt.depth &&
		    done < posted) {
			/* READs complete in order: chunk `done` is in our slot,
			 * for the disk thread to write. */
			rc_link_moved(&cl->conn, xfer_chunk_len(cl->size, cl->opt.chunk, done));
			xfer_disk_allow(&cl->disk, ++done);
			continue;
		}
		if (!xfer_ctl_is_recv(&cl->ctl, &wc) || wc.opcode != IBV_WC_RECV)
			return rc_unexpected_wc(&cl->conn, &wc);
		ret = xfer_ctl_take(&cl->ctl, &wc, &m);
		if (ret)
			return ret;
		if (m.type == XFER_T_CHUNK) {
			/* Sequence, slot, offset and length: exactly the
			 * next chunk, or the connection ends here. */
			ret = xfer_check_chunk(&m.u.chunk, announced, cl->size, cl->opt.chunk,
					       cl->opt.depth, why, sizeof(why));
			if (ret)
				return give_up(cl, EPROTO, "protocol error: %s", why);
			/* The hashing thread compares the chunk with this as
			 * soon as it is in the file, and names it if it differs. */
			xfer_hpool_expect(&cl->disk.pool, announced, m.u.chunk.hash);
			cl->chunk_at[m.u.chunk.slot].addr = m.u.chunk.addr;
			cl->chunk_at[m.u.chunk.slot].rkey = m.u.chunk.rkey;
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

static int get_file(struct client *cl)
{
	int ret;

	/* Nothing for the disk thread until the first READ completes. */
	ret = start_disk(cl, 0, xfer_io_write);
	if (!ret)
		ret = get_loop(cl);
	xfer_disk_stop(&cl->disk);
	return ret;
}

/* ------------------------------------------------------------------ */
/* main                                                                */
/* ------------------------------------------------------------------ */

/* What there is to report, on success or failure (xfer-report.h). */
static void report(const struct client *cl, int code, const char *error)
{
	struct xfer_result r = { .size = cl->size,
				 .t0_ns = cl->t0_ns,
				 .t1_ns = cl->t1_ns,
				 .digest = cl->digest,
				 /* the source path, once setup chose it */
				 .src = cl->opt.op == XFER_PUT && cl->src.chosen ? &cl->src : NULL,
				 .accepted = cl->accepted,
				 .peer_zerocopy = cl->peer_zerocopy,
				 .peer_inplace = cl->peer_inplace,
				 .sink = cl->opt.op == XFER_GET && cl->sink.chosen ? &cl->sink
										   : NULL,
				 .copied = cl->io.copied,
				 .cpu_known = cl->cpu_counted };
	struct xfer_cpu end = cl->cpu1;

	/* Failed before the transfer's end: the CPU time until now. */
	if (!cl->t1_ns)
		xfer_cpu_add(&end, RUSAGE_SELF);
	r.cpu.user_us = end.user_us > cl->cpu0.user_us ? end.user_us - cl->cpu0.user_us : 0;
	r.cpu.sys_us = end.sys_us > cl->cpu0.sys_us ? end.sys_us - cl->cpu0.sys_us : 0;
	if (cl->opt.json)
		xfer_print_json(&cl->opt, &r, code, error);
	else if (code == RC_EXIT_OK && !cl->opt.quiet)
		xfer_print_result(&cl->opt, &r);
}

int main(int argc, char **argv)
{
	struct client cl = { .fd = -1, .dirfd = -1 };
	struct rc_conn *c = &cl.conn;
	char err[RC_ERR_LEN], q[360], msg[RC_ERR_LEN + 416];
	const char *error = err; /* what went wrong, as stderr got it */
	bool usage = false;
	int ret, code = RC_EXIT_FAIL;

	cl.sink.fd = -1;
	ret = xfer_parse_client(argc, argv, &cl.opt, err, sizeof(err));
	if (ret) {
		if (ret < 0) {
			fprintf(stderr, "rdma-client: %s (try --help)\n", err);
			if (rc_json_wanted(argc, argv)) {
				cl.opt.local = NULL; /* not parsed: no details */
				xfer_print_json(&cl.opt,
						&(struct xfer_result){ .digest = cl.digest },
						RC_EXIT_USAGE, err);
			}
		}
		return ret > 0 ? RC_EXIT_OK : RC_EXIT_USAGE;
	}
	/* Line-buffered even into a pipe: scripts watch our progress. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	xfer_quote(q, sizeof(q), cl.opt.name, strlen(cl.opt.name));
	snprintf(cl.qname, sizeof(cl.qname), "'%s'", q);
	snprintf(cl.qlocal, sizeof(cl.qlocal), "'%.390s'", cl.opt.local);
	rc_conn_init(c, "client", cl.opt.rc.verbose, cl.opt.rc.timeout_ms, -1);
	c->busy_poll = cl.opt.rc.busy_poll;
	c->ack_timeout = (uint8_t)cl.opt.rc.ack_timeout;
	c->retry_count = (uint8_t)cl.opt.rc.retry_count;
	c->link_hooks = &rc_link_counters; /* a lossy link extends the waits */

	/* 1. The local side, before any traffic: exit 2 if it is wrong. */
	ret = cl.opt.op == XFER_PUT ? open_source(&cl, err, sizeof(err))
				    : open_destination(&cl, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "rdma-client: %s\n", err);
		code = RC_EXIT_USAGE;
		goto out;
	}
	if (cl.opt.secret_file &&
	    xfer_secret_load(&cl.secret, cl.opt.secret_file, err, sizeof(err))) {
		fprintf(stderr, "rdma-client: %s\n", err);
		code = RC_EXIT_USAGE;
		goto out;
	}
	/* 2. Which device and path reach the server? */
	ret = rc_client_resolve(c, cl.opt.host, cl.opt.rc.port);
	if (ret) {
		code = RC_EXIT_NOCONN;
		goto fail;
	}
	/* 3. QP, ring and control buffers; receives posted. The CPU time
	 * from here on is the transfer's: not the process's start-up. */
	xfer_cpu_add(&cl.cpu0, RUSAGE_SELF);
	cl.cpu_counted = true;
	ret = setup(&cl, &usage);
	if (ret) {
		code = usage ? RC_EXIT_USAGE : RC_EXIT_FAIL;
		goto fail;
	}
	/* 4. Connect with the HELLO; the server may refuse (its reason is
	 * in the REJECT). */
	ret = connect_server(&cl);
	if (ret) {
		code = RC_EXIT_NOCONN;
		goto fail;
	}
	/* 5. Which file; the server's ring. */
	cl.t0_ns = rc_now_ns();
	cl.prog = (struct xfer_progress){ .on = cl.opt.progress == 1 ||
						(cl.opt.progress < 0 && isatty(STDERR_FILENO)),
					  .tty = isatty(STDERR_FILENO),
					  .t0_ns = cl.t0_ns }; /* last_ns 0: show at once */
	ret = request(&cl);
	/* 6. The data, then DONE and COMMITTED. */
	if (!ret)
		ret = cl.opt.op == XFER_PUT ? put_file(&cl) : get_file(&cl);
	cl.t1_ns = rc_now_ns();
	/* Every thread's CPU time, the ended disk and hashing threads too. */
	xfer_cpu_add(&cl.cpu1, RUSAGE_SELF);
	xfer_progress_end(&cl.prog);
	if (ret)
		goto fail;
	/* 7. Goodbye. The file is committed: a failure here changes nothing. */
	rc_disconnect(c);
	code = RC_EXIT_OK;
	goto out;
fail:
	snprintf(msg, sizeof(msg), "%s %s: %s", cl.opt.op == XFER_PUT ? "put" : "get", cl.qname,
		 c->log.err);
	error = msg;
	fprintf(stderr, "rdma-client: %s\n", msg);
out:
	/* The disk thread's counters are final once it is stopped. */
	xfer_disk_stop(&cl.disk);
	report(&cl, code, code == RC_EXIT_OK ? NULL : error);
	/* A get that did not commit leaves nothing behind. */
	xfer_sink_abort(&cl.sink);
	/* The windows' MRs before the PD that rc_conn_destroy frees. */
	xfer_src_release(&cl.src);
	rc_conn_destroy(c);
	xfer_ctl_free(&cl.ctl);
	if (cl.fd >= 0)
		close(cl.fd);
	if (cl.dirfd >= 0)
		close(cl.dirfd);
	xfer_secret_wipe(&cl.secret);
	return code;
}
