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
 *   get: open a second connection to the port the ACCEPT names, with
 *        its token (the JOIN), whose QP carries our READs and nothing
 *        else; for each CHUNK{slot, offset, len, seq, digest} the server
 *        announces, RDMA_READ the slot into our own slot on it (at most
 *        rd_depth READs in flight: the responder keeps state for each),
 *        pwrite it to a temporary file, check its digest, and return the
 *        slot with a CREDIT (and our digest) on the first connection;
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
 *
 * Where the rest is: this file has main, which takes the steps above in
 * order, and report, the result it prints at the end. client-setup.c
 * checks the local side and sets up the connection (QP, ring, receives,
 * the HELLO); client-request.c has the CHALLENGE, REQUEST and ACCEPT, and
 * give_up, how we fail once connected; client-put.c the disk thread that
 * both directions use, then the put's data; client-get.c the get's data;
 * client.h the state they share.
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "client.h"
#include "xfer-report.h"
#include "rc-counters.h" /* rc_link_counters */
#include "rc-json.h"

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
	c->poll_mode = cl.opt.rc.poll;
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
	/* -v: the transfer's timeline, from the REQUEST on. */
	xfer_tl_start(&cl.tl, cl.opt.rc.verbose, cl.t0_ns);
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
	/* get: the READs' QP first: it is on the control connection's PD
	 * and CQ. */
	rc_conn_destroy(&cl.data);
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
