// SPDX-License-Identifier: MIT
/*
 * 02 rdma-client's --inject lessons. Each one does on purpose a thing a
 * newcomer may believe works (or fails) otherwise, posts it after the
 * server's BUF, and prints what the completion queue really said, how long
 * it took, and why. Each prints what it saw, not what it expected: where a
 * kernel or NIC behaves otherwise, the output says so, and the lesson
 * exits 1 instead of RW_EXIT_LESSON (4).
 *
 *   bad-rkey        a WRITE with an rkey the server never handed out
 *   no-remote-read  a READ of a buffer the server registered without
 *                   REMOTE_READ (the server does its part: rw.h's lesson byte)
 *   out-of-bounds   a READ one byte past the advertised buffer
 *   no-read-depth   a READ with initiator_depth 0 and responder_resources 0
 *   unaligned       WRITE and READ with malloc'd buffers at odd addresses
 *   dereg-other     READs through two MRs of one buffer, one deregistered
 * and, in lessons-atomic.c with the helpers lessons.h names,
 *   atomic-unaligned   an atomic on an address that is not 8-byte aligned
 *   atomic-no-access   an atomic on a word registered without REMOTE_ATOMIC
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lessons.h"
#include "rc-counters.h" /* rc_kernel_release */
#include "rc-lessons.h"

/* The explanation is for people: nothing of it with --json. */
void say(const struct client *cl, const char *fmt, ...)
{
	va_list ap;

	if (cl->opt.json)
		return;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
}

/* It showed what it teaches: the verdict on stdout; 1 for main. */
int shown(struct client *cl, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cl->lesson_saw, sizeof(cl->lesson_saw), fmt, ap);
	va_end(ap);
	say(cl, "lesson %s: shown (%s)\n", rw_inject_name(cl->opt.inject), cl->lesson_saw);
	return 1;
}

/* Something else happened: say what, as the error main prints. */
int not_shown(struct client *cl, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cl->lesson_saw, sizeof(cl->lesson_saw), fmt, ap);
	va_end(ap);
	return rc_fail(&cl->conn.log, EPROTO, "--inject %s: not shown: %s",
		       rw_inject_name(cl->opt.inject), cl->lesson_saw);
}

/* WR `slot` of the chain: op on [raddr, raddr + len) of the server's
 * memory with rkey, from or into local + loff. Signalled: we want each
 * one's status. */
static void set_wr(struct client *cl, unsigned slot, enum ibv_wr_opcode op, struct rc_buf *local,
		   uint64_t loff, uint32_t len, uint64_t raddr, uint32_t rkey)
{
	cl->sges[slot] = (struct ibv_sge){ .addr = (uintptr_t)local->addr + loff,
					   .length = len,
					   .lkey = local->mr->lkey };
	cl->wrs[slot] = (struct ibv_send_wr){ .wr_id = WR_DATA + slot,
					      .sg_list = &cl->sges[slot],
					      .num_sge = 1,
					      .opcode = op,
					      .send_flags = IBV_SEND_SIGNALED };
	cl->wrs[slot].wr.rdma.remote_addr = raddr;
	cl->wrs[slot].wr.rdma.rkey = rkey;
	if (slot)
		cl->wrs[slot - 1].next = &cl->wrs[slot];
}

/*
 * Our QP is in the error state and our receive for RESULT has not been
 * flushed yet: wait for it up to --timeout (also after the server has
 * hung up), print it as it comes, or say that it did not come.
 */
static void watch_recv_flush(struct client *cl, uint64_t t0)
{
	struct rc_conn *c = &cl->conn;
	const int timeout_ms = c->timeout_ms;
	uint64_t end = rc_now_ns() + (uint64_t)timeout_ms * 1000000u, now;
	char kernel[65];
	struct ibv_wc wc;
	int ret;

	while ((now = rc_now_ns()) < end) {
		c->timeout_ms = (int)((end - now) / 1000000u) + 1;
		ret = rc_next_wc(c, &wc);
		c->timeout_ms = timeout_ms;
		if (ret == -ECONNRESET && c->peer_disconnected) {
			usleep(1000); /* the CQ may still get it */
			continue;
		}
		if (ret && ret != -EIO)
			break;
		if (wc.wr_id >= WR_DATA)
			continue; /* one of ours we have seen (a repeated flush) */
		say(cl,
		    "completion of wr_id %" PRIu64
		    " (our receive for RESULT): %s (%s) after %.1f ms\n",
		    wc.wr_id, rc_wc_status_name(wc.status), ibv_wc_status_str(wc.status),
		    (double)(rc_now_ns() - t0) / 1e6);
		return;
	}
	say(cl, "our receive for RESULT was not flushed within %d ms (Linux %s)\n", timeout_ms,
	    rc_kernel_release(kernel, sizeof(kernel)));
}

/*
 * Wait until each of the n WRs with wr_id first .. first + n - 1, posted
 * at t0, has completed, printing every completion (also our receive for
 * RESULT when it is flushed). 0, or rc_next_wc's error if a completion
 * did not come (-ETIMEDOUT after --timeout). If the QP is in the error
 * state then, our receive is flushed too, but from the other queue and in
 * no fixed order with the send queue (Soft-RoCE of Linux 6.1 flushed it
 * before the WR behind the failed one, 6.12 and 7.3 after): see
 * watch_recv_flush.
 */
int watch_wrs(struct client *cl, struct lesson_wr *w, unsigned n, uint64_t first, uint64_t t0)
{
	struct rc_conn *c = &cl->conn;
	uint64_t deadline = t0 + (uint64_t)c->timeout_ms * 1000000u;
	unsigned i, left = n;
	bool recv_seen = false;
	struct ibv_wc wc;
	double ms;
	int ret;

	for (i = 0; i < n; i++)
		w[i].status = -1;
	while (left) {
		ret = rc_next_wc(c, &wc);
		/* The server may drop the connection (its QP failed too) before
		 * our NIC has reported the failure: seen on Linux 7.3. Our
		 * completions still come; poll for them until --timeout. */
		if (ret == -ECONNRESET && c->peer_disconnected && rc_now_ns() < deadline) {
			usleep(1000);
			continue;
		}
		if (ret && ret != -EIO)
			return ret; /* no completion at all: timeout, disconnect */
		ms = (double)(rc_now_ns() - t0) / 1e6;
		i = wc.wr_id >= first && wc.wr_id < first + n ? (unsigned)(wc.wr_id - first) : n;
		recv_seen |= i == n;
		if (i < n && w[i].status < 0) {
			w[i].status = wc.status;
			w[i].ms = ms;
			left--;
		}
		say(cl, "completion of wr_id %" PRIu64 " (%s): %s (%s) after %.1f ms\n", wc.wr_id,
		    i < n ? w[i].what : "our receive for RESULT", rc_wc_status_name(wc.status),
		    ibv_wc_status_str(wc.status), ms);
	}
	if (!recv_seen && rc_qp_state(cl->conn.qp) == IBV_QPS_ERR)
		watch_recv_flush(cl, t0);
	return 0;
}

int post_and_watch(struct client *cl, struct lesson_wr *w, unsigned n)
{
	uint64_t t0 = rc_now_ns();
	int ret = rc_post_send_list(&cl->conn, cl->wrs);

	if (ret)
		return ret;
	return watch_wrs(cl, w, n, WR_DATA, t0);
}

/* Our QP's state now, printed after the completions. */
enum ibv_qp_state show_qp_state(struct client *cl)
{
	enum ibv_qp_state st = rc_qp_state(cl->conn.qp);

	say(cl, "our QP is now in state %s\n", rc_qp_state_name(st));
	return st;
}

/*
 * The end of each remote access error's explanation: what became of our
 * QP (st) and of the WR behind the failed one (behind < 0: there was
 * none), and what it means.
 */
void explain_refused(struct client *cl, enum ibv_qp_state st, int behind)
{
	if (st == IBV_QPS_ERR && behind == IBV_WC_WR_FLUSH_ERR)
		say(cl, "The error moved our QP to the error state: the WR queued behind the\n"
			"failed one completed with IBV_WC_WR_FLUSH_ERR, as every work request\n"
			"still queued does, and the QP does no more work until it is reset or\n"
			"recreated.\n");
	else if (st == IBV_QPS_ERR && behind >= 0)
		say(cl,
		    "The error moved our QP to the error state; the WR queued behind the\n"
		    "failed one completed with %s.\n",
		    rc_wc_status_name(behind));
	else if (st == IBV_QPS_ERR)
		say(cl, "The error moved our QP to the error state: it does no more work until\n"
			"it is reset or recreated.\n");
	else
		say(cl, "Our QP is in state %s, not ERR, after the error.\n", rc_qp_state_name(st));
	say(cl, "On a reliable connection such errors are never silent: they arrive as\n"
		"completion statuses, so check the status of every completion, and signal\n"
		"at least the last WR of each batch. The server's NIC refused the request\n"
		"without the server program taking part; the server then finds its receive\n"
		"for DONE flushed (see its log), drops this connection and serves others.\n\n");
}

/* Is p[0..n) what the server's buffer holds at offset off (its initial
 * pattern)? */
static bool server_data_at(const uint8_t *p, uint64_t off, uint32_t n)
{
	uint8_t *want = malloc(off + n);
	bool same;

	if (!want)
		return false;
	rw_fill_pattern(want, off + n, RW_SERVER_SEED);
	same = !memcmp(p, want + off, n);
	free(want);
	return same;
}

/* out-of-bounds and dereg-other: w[0], a READ of n bytes at offset off of
 * the server's buffer, returned its data; w[1] was refused. 0, or why not. */
static int want_read_then_refused(struct client *cl, const struct lesson_wr *w, uint64_t off,
				  uint32_t n)
{
	if (w[0].status != IBV_WC_SUCCESS)
		return not_shown(cl, "expected %s to succeed, saw %s", w[0].what,
				 rc_wc_status_name(w[0].status));
	if (!server_data_at(cl->dst->addr, off, n))
		return not_shown(cl, "%s returned other data than the server's", w[0].what);
	if (w[1].status != IBV_WC_REM_ACCESS_ERR)
		return not_shown(cl, "expected IBV_WC_REM_ACCESS_ERR for %s, saw %s", w[1].what,
				 rc_wc_status_name(w[1].status));
	return 0;
}

/* Two READs of n bytes each fit side by side in our READ buffer. */
static uint32_t half_len(const struct client *cl)
{
	uint32_t n = cl->size / 2 ? cl->size / 2 : 1;

	return n < cl->piece_max ? n : cl->piece_max;
}

/* --inject bad-rkey: what a wrong rkey really does on RC. */
static int lesson_bad_rkey(struct client *cl)
{
	uint32_t len = cl->size < cl->piece_max ? cl->size : cl->piece_max;
	uint32_t rkey = cl->remote.rb.rkey, bad_rkey = rkey ^ 0xff; /* never handed out */
	struct lesson_wr w[2] = { { "the WRITE with the wrong rkey", -1, 0 },
				  { "the correct WRITE behind it", -1, 0 } };
	enum ibv_qp_state st;
	int ret;

	/* Two WRITEs in one chain: the first with a wrong rkey, the second
	 * correct and queued behind it. */
	set_wr(cl, 0, IBV_WR_RDMA_WRITE, cl->src, 0, len, cl->remote.rb.addr, bad_rkey);
	set_wr(cl, 1, IBV_WR_RDMA_WRITE, cl->src, 0, len, cl->remote.rb.addr, rkey);
	say(cl,
	    "inject bad-rkey: RDMA WRITE of %u bytes with rkey 0x%x (the server "
	    "advertised 0x%x), then a correct RDMA WRITE behind it\n",
	    len, bad_rkey, rkey);
	ret = post_and_watch(cl, w, 2);
	if (ret)
		return ret;
	st = show_qp_state(cl);
	if (w[0].status != IBV_WC_REM_ACCESS_ERR)
		return not_shown(cl,
				 "expected IBV_WC_REM_ACCESS_ERR for the WRITE with the wrong "
				 "rkey, saw %s",
				 rc_wc_status_name(w[0].status));
	say(cl, "\nWhat happened: the WRITE carried an rkey the server never handed out.\n"
		"The server's NIC checks every incoming RDMA request against its memory\n"
		"regions (rkey, address range, access flags); it refused this one with a\n"
		"NAK, and our NIC completed the WRITE with IBV_WC_REM_ACCESS_ERR.\n");
	explain_refused(cl, st, w[1].status);
	return shown(cl, "IBV_WC_REM_ACCESS_ERR after %.1f ms", w[0].ms);
}

/* --inject no-remote-read: the MR's access flags are what the NIC obeys. */
static int lesson_no_remote_read(struct client *cl)
{
	uint32_t len = cl->size < cl->piece_max ? cl->size : cl->piece_max;
	struct lesson_wr w[2] = { { "the WRITE", -1, 0 }, { "the READ", -1, 0 } };
	int access = rw_access_for(cl->opt.ops) & ~IBV_ACCESS_REMOTE_READ;
	bool write = cl->opt.ops & RW_OP_WRITE;
	struct lesson_wr *rd = &w[write];
	enum ibv_qp_state st;
	char flags[64];
	int ret;

	/* The server's part (server.c): its MR lacks REMOTE_READ, but its
	 * BUF grants READ and its QP accepts READs (responder_resources). */
	rw_access_str(access, flags, sizeof(flags));
	rd->what = "the READ";
	if (write)
		set_wr(cl, 0, IBV_WR_RDMA_WRITE, cl->src, 0, len, cl->remote.rb.addr,
		       cl->remote.rb.rkey);
	set_wr(cl, write, IBV_WR_RDMA_READ, cl->dst, 0, len, cl->remote.rb.addr,
	       cl->remote.rb.rkey);
	say(cl,
	    "inject no-remote-read: the server registered its buffer with access %s,\n"
	    "without REMOTE_READ, yet its BUF says %s and it accepted read depth %u.\n"
	    "%s an RDMA READ of %u bytes with the advertised address and rkey\n",
	    flags, rw_ops_str(cl->remote.ops), cl->remote.read_depth,
	    write ? "An RDMA WRITE, then" : "Now", len);
	ret = post_and_watch(cl, w, write ? 2 : 1);
	if (ret)
		return ret;
	st = show_qp_state(cl);
	if (write && w[0].status != IBV_WC_SUCCESS)
		return not_shown(cl,
				 "expected the WRITE to succeed (REMOTE_WRITE is granted), saw %s",
				 rc_wc_status_name(w[0].status));
	if (rd->status != IBV_WC_REM_ACCESS_ERR)
		return not_shown(cl, "expected IBV_WC_REM_ACCESS_ERR for the READ, saw %s",
				 rc_wc_status_name(rd->status));
	say(cl, "\nWhat happened: the server's memory region has no IBV_ACCESS_REMOTE_READ,\n"
		"and its NIC obeys the region's access flags, not what a message promised:\n"
		"it refused the READ with a NAK, and our NIC completed the READ with\n"
		"IBV_WC_REM_ACCESS_ERR.\n");
	if (write)
		say(cl, "The WRITE, with the same address and rkey, succeeded: REMOTE_WRITE is\n"
			"among the region's flags.\n");
	say(cl, "Register each buffer with exactly the REMOTE_* flags its peers need:\n"
		"REMOTE_READ where a peer READs, REMOTE_WRITE (with LOCAL_WRITE) where a\n"
		"peer WRITEs.\n");
	explain_refused(cl, st, -1);
	return shown(cl, "IBV_WC_REM_ACCESS_ERR after %.1f ms", rd->ms);
}

/* --inject out-of-bounds: one byte past the region is enough. */
static int lesson_out_of_bounds(struct client *cl)
{
	const struct rc_remote_buf *rb = &cl->remote.rb;
	uint32_t n = half_len(cl);
	uint64_t ok_off = rb->len - n, bad_off = ok_off + 1;
	uint64_t last = rb->addr + rb->len - 1, page = (uint64_t)sysconf(_SC_PAGESIZE);
	struct lesson_wr w[2] = { { "the READ of the last bytes", -1, 0 },
				  { "the READ one byte further", -1, 0 } };
	enum ibv_qp_state st;
	int ret;

	/* Deliberately past our own check: receive_buf made sure the whole
	 * transfer fits, and build_wr stays inside it; this WR does not. */
	set_wr(cl, 0, IBV_WR_RDMA_READ, cl->dst, 0, n, rb->addr + ok_off, rb->rkey);
	set_wr(cl, 1, IBV_WR_RDMA_READ, cl->dst, cl->size - n, n, rb->addr + bad_off, rb->rkey);
	say(cl,
	    "inject out-of-bounds: the server advertised %u bytes at 0x%" PRIx64 ".\n"
	    "An RDMA READ of its last %u bytes (offset %" PRIu64 "), then the same READ one byte\n"
	    "further (offset %" PRIu64 "), whose last byte is the first byte past the buffer.\n"
	    "rc_remote_range_ok(offset %" PRIu64 ", %u bytes) says %s: a normal client never\n"
	    "posts this; the lesson bypasses that check on purpose.\n",
	    rb->len, rb->addr, n, ok_off, bad_off, bad_off, n,
	    rc_remote_range_ok(rb, bad_off, n) ? "yes" : "no");
	ret = post_and_watch(cl, w, 2);
	if (ret)
		return ret;
	st = show_qp_state(cl);
	ret = want_read_then_refused(cl, w, ok_off, n);
	if (ret)
		return ret;
	say(cl, "\nWhat happened: the READ inside the buffer returned the server's data\n"
		"(checked). The READ that reached one byte past the end was refused with\n"
		"IBV_WC_REM_ACCESS_ERR: the server's NIC checks the whole range of each\n"
		"request, [address, address + length), against the memory region.\n");
	if (last / page == (last + 1) / page)
		say(cl,
		    "The byte past the end is in the same page as the buffer's last byte\n"
		    "(for pages of %" PRIu64 " bytes or more), a page pinned for the region, and\n"
		    "still the READ was refused: a region's bounds are exact to the byte.\n",
		    page);
	say(cl, "Check every remote range against what the peer advertised before posting\n"
		"(rc_remote_range_ok): the NIC's check protects the server's memory, and\n"
		"costs you the connection.\n");
	explain_refused(cl, st, -1);
	return shown(cl, "IBV_WC_REM_ACCESS_ERR after %.1f ms", w[1].ms);
}

/* After a READ that never completed: move our QP to the error state (as
 * rdma_disconnect does first) and see what becomes of it. */
static int flush_stuck_read(struct client *cl, struct lesson_wr *w)
{
	struct rc_conn *c = &cl->conn;
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
	struct ibv_wc wc;
	uint64_t t0;
	int ret;

	if (ibv_modify_qp(c->qp, &attr, IBV_QP_STATE))
		return rc_fail(&c->log, errno, "ibv_modify_qp(ERR): %s", strerror(errno));
	t0 = rc_now_ns();
	while (w->status < 0) {
		ret = rc_next_wc(c, &wc);
		if (ret && ret != -EIO)
			return ret;
		say(cl, "completion of wr_id %" PRIu64 " (%s): %s (%s) %.1f ms after that\n",
		    wc.wr_id, wc.wr_id == WR_DATA ? w->what : "our receive for RESULT",
		    rc_wc_status_name(wc.status), ibv_wc_status_str(wc.status),
		    (double)(rc_now_ns() - t0) / 1e6);
		if (wc.wr_id == WR_DATA)
			w->status = wc.status;
	}
	return 0;
}

/* Where a connection's read depth comes from. */
static void explain_read_depth(struct client *cl)
{
	say(cl, "A READ needs a read depth of at least 1: the client's initiator_depth\n"
		"asks for it, the server grants it as responder_resources when it accepts,\n"
		"and the CM sets the client QP's max_rd_atomic from the server's answer.\n"
		"Our server refuses a client that wants to READ with initiator_depth 0,\n"
		"with a clear reason; this lesson asked it to accept with 0 instead.\n");
}

/* --inject no-read-depth: a READ with a read depth of 0. */
static int lesson_no_read_depth(struct client *cl)
{
	struct rc_conn *c = &cl->conn;
	uint32_t n = half_len(cl);
	struct lesson_wr w[1] = { { "the READ", -1, 0 } };
	int ret;

	set_wr(cl, 0, IBV_WR_RDMA_READ, cl->dst, 0, n, cl->remote.rb.addr, cl->remote.rb.rkey);
	say(cl,
	    "inject no-read-depth: we connected with initiator_depth 0, the server accepted\n"
	    "with responder_resources %u, and our QP's max_rd_atomic is %u. Now one RDMA\n"
	    "READ of %u bytes; we wait up to %d ms for its completion.\n",
	    cl->remote.read_depth, cl->qp_read_depth, n, c->timeout_ms);
	ret = post_and_watch(cl, w, 1);
	if (ret && ret != -ETIMEDOUT)
		return ret;
	if (w[0].status == IBV_WC_SUCCESS && server_data_at(cl->dst->addr, 0, n))
		return not_shown(cl,
				 "the READ succeeded after %.1f ms although our QP's max_rd_atomic "
				 "is %u: this device does not hold it back",
				 w[0].ms, cl->qp_read_depth);
	if (w[0].status >= 0) {
		say(cl, "\nWhat happened: the READ failed with %s after %.1f ms.\n",
		    rc_wc_status_name(w[0].status), w[0].ms);
		explain_read_depth(cl);
		return shown(cl, "%s after %.1f ms", rc_wc_status_name(w[0].status), w[0].ms);
	}
	say(cl, "no completion within %d ms; moving our QP to the error state now\n",
	    c->timeout_ms);
	ret = flush_stuck_read(cl, &w[0]);
	if (ret)
		return ret;
	say(cl,
	    "\nWhat happened: for %d ms the READ neither completed nor failed: no NAK,\n"
	    "no retry, no transport timeout. It was never carried out: a requester may\n"
	    "have at most max_rd_atomic READs outstanding and holds the next one back\n"
	    "until one is free; with %u there never is one. Only our own timeout\n"
	    "noticed, and moving the QP to the error state flushed the READ (%s).\n",
	    c->timeout_ms, cl->qp_read_depth, rc_wc_status_name(w[0].status));
	explain_read_depth(cl);
	say(cl, "A READ stuck like this hangs a program without a timeout for ever: ask\n"
		"for and grant a read depth of at least 1 on every connection that READs,\n"
		"and bound every wait.\n\n");
	return shown(cl, "no completion within %d ms; %s after the QP was moved to ERR",
		     c->timeout_ms, rc_wc_status_name(w[0].status));
}

/* --inject unaligned: any address and length register and work. */
static int lesson_unaligned(struct client *cl)
{
	uint64_t raddr = cl->remote.rb.addr;
	int ret;

	/* The buffers came from rw_mr_unaligned (alloc_local in client.c,
	 * setup in server.c); the transfer is the normal one. */
	say(cl,
	    "inject unaligned: our WRITE source is at %p and our READ destination at %p\n"
	    "(malloc'd, one byte in); the server's buffer is at 0x%" PRIx64 " (%s address).\n"
	    "Each is registered as it is, not rounded to pages. Now the normal transfer.\n",
	    cl->src ? cl->src->addr : NULL, cl->dst ? cl->dst->addr : NULL, raddr,
	    raddr & 1 ? "an odd" : "an even");
	ret = transfer(cl);
	if (ret)
		return ret;
	say(cl,
	    "\nWhat happened: ibv_reg_mr took each buffer at its odd address and exact\n"
	    "length, and the WRITE and READ moved the data correctly (%u bytes\n"
	    "verified, and the server's checksum is the same as ours). Registration\n"
	    "pins every page the buffer touches, but a region starts and ends at the\n"
	    "exact bytes given. Page alignment (what rc_buf_alloc does) keeps unrelated\n"
	    "data out of pinned pages; the verbs do not require it.\n\n",
	    cl->size);
	return shown(cl, "verified %u bytes at odd addresses", cl->size);
}

/* --inject dereg-other: deregistering one MR leaves another working. */
static int lesson_dereg_other(struct client *cl)
{
	const struct rc_remote_buf *kept = &cl->remote.rb, *gone = &cl->remote2.rb;
	uint32_t n = half_len(cl);
	struct lesson_wr w[2] = { { "the READ through the kept MR", -1, 0 },
				  { "the READ through the deregistered MR", -1, 0 } };
	enum ibv_qp_state st;
	int ret;

	set_wr(cl, 0, IBV_WR_RDMA_READ, cl->dst, 0, n, kept->addr, kept->rkey);
	set_wr(cl, 1, IBV_WR_RDMA_READ, cl->dst, cl->size - n, n, gone->addr, gone->rkey);
	say(cl,
	    "inject dereg-other: the server registered its %u-byte buffer at 0x%" PRIx64 " twice\n"
	    "(rkeys 0x%x and 0x%x) and deregistered the second MR before telling us.\n"
	    "An RDMA READ of %u bytes through the first, then the same READ through the\n"
	    "second.\n",
	    kept->len, kept->addr, kept->rkey, gone->rkey, n);
	ret = post_and_watch(cl, w, 2);
	if (ret)
		return ret;
	st = show_qp_state(cl);
	ret = want_read_then_refused(cl, w, 0, n);
	if (ret)
		return ret;
	say(cl, "\nWhat happened: the READ through the MR that is still registered returned\n"
		"the server's data (checked): deregistering the other MR did not touch it,\n"
		"though both cover the same memory. An MR is the NIC's entry for a range of\n"
		"memory, with its own lkey, rkey and access flags; each registration pins\n"
		"the pages for itself, and ibv_dereg_mr removes only its own entry. The\n"
		"deregistered MR's rkey is refused like any unknown rkey\n"
		"(IBV_WC_REM_ACCESS_ERR): a peer that still holds it cannot reach the\n"
		"memory. Deregister an MR only once no peer will use its rkey again.\n");
	explain_refused(cl, st, -1);
	return shown(cl,
		     "the kept MR's READ succeeded; IBV_WC_REM_ACCESS_ERR through the "
		     "deregistered one after %.1f ms",
		     w[1].ms);
}

int run_lesson(struct client *cl)
{
	switch (cl->opt.inject) {
	case RW_INJECT_BAD_RKEY: return lesson_bad_rkey(cl);
	case RW_INJECT_NO_REMOTE_READ: return lesson_no_remote_read(cl);
	case RW_INJECT_OUT_OF_BOUNDS: return lesson_out_of_bounds(cl);
	case RW_INJECT_NO_READ_DEPTH: return lesson_no_read_depth(cl);
	case RW_INJECT_UNALIGNED: return lesson_unaligned(cl);
	case RW_INJECT_DEREG_OTHER: return lesson_dereg_other(cl);
	case RW_INJECT_ATOMIC_UNALIGNED: return lesson_atomic_unaligned(cl);
	case RW_INJECT_ATOMIC_NO_ACCESS: return lesson_atomic_no_access(cl);
	default: return rc_fail(&cl->conn.log, EINVAL, "no lesson %u", cl->opt.inject);
	}
}
