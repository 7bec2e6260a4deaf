// SPDX-License-Identifier: MIT
/*
 * client-setup.c - 03 rdma-client's first steps, in the order of
 * sequence.txt: the local side, checked before any traffic (the source
 * can be read, or the destination may be created), then the connection:
 * a QP sized from the depth, the source path (put), the ring and the
 * control buffers with every receive posted, and rdma_connect with the
 * HELLO. See client.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client.h"

/* ------------------------------------------------------------------ */
/* The local side, checked before connecting                           */
/* ------------------------------------------------------------------ */

int open_source(struct client *cl, char *err, size_t errlen)
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
int open_destination(struct client *cl, char *err, size_t errlen)
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
 * register a read-only file mapping, else our pread into the ring (copy);
 * --copy, or Soft-RoCE without --zero-copy, takes the ring at once. One
 * line says which, and why not zero-copy. Within `ulimit -l`, less the
 * control buffers still to come.
 */
static void choose_source(struct client *cl)
{
	unsigned n = XFER_RECVS(cl->opt.depth);
	char path[300];

	xfer_src_choose(
		&cl->src, cl->conn.dev.pd, 0,
		xfer_choose_flags(cl->opt.copy, cl->opt.zero_copy, false, cl->conn.dev.vendor_id),
		xfer_ctl_locked(n, n), &cl->conn.log);
	xfer_src_path(&cl->src, path, sizeof(path));
	if (!cl->opt.quiet && !cl->opt.json)
		printf("source: %s\n", path);
	else
		rc_trace(&cl->conn.log, "source: %s", path);
}

/* One chunk is one RDMA operation: it must fit the port's limit. */
static int check_chunk_fits(struct client *cl)
{
	struct rc_conn *c = &cl->conn;
	char a[32], b[32];

	if (cl->opt.chunk <= c->dev.max_msg_sz)
		return 0;
	xfer_fmt_size(a, sizeof(a), cl->opt.chunk);
	xfer_fmt_size(b, sizeof(b), c->dev.max_msg_sz);
	return rc_fail(&c->log, EINVAL,
		       "chunk %s is larger than the port's max_msg_sz (%s); use -c %s or less", a,
		       b, b);
}

/*
 * get: how many READs we ask to have outstanding. A requester's limit is
 * max_qp_init_rd_atom (often 16 on hardware); the server's
 * responder_resources will cap it again.
 */
static int choose_read_depth(struct client *cl)
{
	struct rc_conn *c = &cl->conn;
	unsigned depth = cl->opt.depth;
	struct ibv_device_attr attr;

	if (ibv_query_device(c->dev.verbs, &attr))
		return rc_fail(&c->log, errno, "ibv_query_device: %s", strerror(errno));
	/* depth <= 255, so the smaller of the two fits 8 bits. */
	cl->initiator_depth = (uint8_t)(depth < (unsigned)attr.max_qp_init_rd_atom
						? depth
						: (unsigned)attr.max_qp_init_rd_atom);
	if (!cl->initiator_depth)
		return rc_fail(&c->log, ENOTSUP,
			       "this device cannot issue RDMA READs (max_qp_init_rd_atom 0)");
	return 0;
}

/*
 * The ring of DEPTH chunk-sized slots. put: the NIC only reads it (no
 * flag needed); get: RDMA READ responses land in it (LOCAL_WRITE).
 * Nothing remote touches it. A zero-copy put has none: the NIC reads the
 * file's windows, and pinning a ring nobody uses would take locked
 * memory for nothing.
 */
static int register_ring(struct client *cl)
{
	int access = cl->opt.op == XFER_PUT ? 0 : IBV_ACCESS_LOCAL_WRITE;
	int ret;

	if (cl->src.zerocopy)
		return 0;
	ret = rc_buf_alloc(&cl->conn, (size_t)cl->opt.chunk * cl->opt.depth, access, &cl->ring);
	return ret ? ring_failed(cl, ret) : 0;
}

/* QP, ring and control buffers, every receive posted. Returns 0, or a
 * negative errno; *usage set when -c does not fit. */
int setup(struct client *cl, bool *usage)
{
	unsigned depth = cl->opt.depth;
	/* Sends: up to DEPTH data operations plus our control messages: a
	 * put's WRITEs go on this QP; a get's READs go on its data
	 * connection's, whose completions come to this CQ, sized from this
	 * cap. Receives: see XFER_RECVS. */
	struct ibv_qp_cap cap = { .max_send_wr = depth + XFER_RECVS(depth),
				  .max_recv_wr = XFER_RECVS(depth),
				  .max_send_sge = 1,
				  .max_recv_sge = 1 };
	int ret;

	ret = rc_create_qp(&cl->conn, &cap);
	if (ret)
		return ret;
	ret = check_chunk_fits(cl);
	if (ret) {
		*usage = true;
		return ret;
	}
	if (cl->opt.op == XFER_GET) {
		ret = choose_read_depth(cl);
		if (ret)
			return ret;
	}
	if (cl->opt.op == XFER_PUT)
		choose_source(cl);
	ret = register_ring(cl);
	if (ret)
		return ret;
	/* Every receive posted before connecting: the server may answer the
	 * moment the connection is up. */
	return xfer_ctl_init(&cl->ctl, &cl->conn, XFER_RECVS(depth), XFER_RECVS(depth));
}

/* rdma_connect with the HELLO; the server's REJECT says why it refused. */
int connect_server(struct client *cl)
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
