// SPDX-License-Identifier: MIT
/*
 * 02 rdma-client's --inject lessons about atomics (the others are in
 * lessons.c, whose helpers lessons.h names). Each prints what it saw,
 * not what it expected, and exits 1 instead of 4 when a device does
 * something else.
 *
 *   atomic-unaligned   an atomic on an address 4 bytes into the word's
 *                      buffer: inside it, but not 8-byte aligned, with a
 *                      correct atomic behind it in the same chain
 *   atomic-no-access   an atomic on a word the server registered without
 *                      REMOTE_ATOMIC (the server does its part: rw.h's
 *                      lesson byte)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "atomic.h"
#include "lessons.h"
#include "rc-lessons.h"

/* The lesson's atomic: the kind --op asks for, with operands that leave
 * a trace if it is carried out (fetch-add adds ADD; cmp-swap expects the
 * server's fresh word and swaps in that plus ADD). */
static void lesson_operands(const struct client *cl, enum ibv_wr_opcode *op, uint64_t *compare_add,
			    uint64_t *swap)
{
	uint8_t fresh[RW_WORD];

	rw_fill_pattern(fresh, RW_WORD, RW_SERVER_SEED);
	*op = cl->opt.ops == RW_OP_CMP_SWAP ? IBV_WR_ATOMIC_CMP_AND_SWP
					    : IBV_WR_ATOMIC_FETCH_AND_ADD;
	*compare_add = cl->opt.ops == RW_OP_CMP_SWAP ? rw_word_load(fresh) : cl->opt.add;
	*swap = cl->opt.ops == RW_OP_CMP_SWAP ? rw_word_load(fresh) + cl->opt.add : 0;
}

/* Is our device Soft-RoCE (rdma_rxe's vendor id, 0xffffff)? */
static bool soft_roce(struct rc_conn *c)
{
	struct ibv_device_attr a;

	return !ibv_query_device(c->id->verbs, &a) && a.vendor_id == RC_SOFT_ROCE_VENDOR_ID;
}

/* After the refusal: the correct atomic alone, its completion, and its
 * original, which must be the server's fresh word. */
static int correct_one_alone(struct client *cl, struct lesson_wr *w)
{
	const uint8_t *orig = (const uint8_t *)cl->at.orig->addr + RW_WORD;
	uint64_t t0;
	int ret;

	cl->wrs[1].next = NULL;
	say(cl, "Now the correct %s alone (wr_id %u):\n", rw_ops_str(cl->opt.ops), WR_DATA + 1);
	t0 = rc_now_ns();
	ret = rc_post_send_list(&cl->conn, &cl->wrs[1]);
	if (ret)
		return ret;
	ret = watch_wrs(cl, w, 1, WR_DATA + 1, t0);
	if (ret)
		return ret;
	if (w->status != IBV_WC_SUCCESS)
		return not_shown(cl, "the correct %s behind it ended with %s",
				 rw_ops_str(cl->opt.ops), rc_wc_status_name(w->status));
	if (!atomic_is_fresh_word(orig))
		return not_shown(cl,
				 "the correct %s returned 0x%016" PRIx64 ", not the server's fresh "
				 "word: something changed it",
				 rw_ops_str(cl->opt.ops), rw_word_load(orig));
	say(cl,
	    "its original, 0x%016" PRIx64 ", is the server's fresh word: the refused\n"
	    "atomic never reached it\n",
	    rw_word_load(orig));
	return 0;
}

/* The device took the unaligned atomic: what became of it. */
static int unaligned_posted(struct client *cl, struct lesson_wr *w, uint64_t t0)
{
	enum ibv_qp_state st;
	int ret;

	say(cl, "ibv_post_send accepted both: this device does not check the alignment when "
		"posting\n");
	ret = watch_wrs(cl, w, 2, WR_DATA, t0);
	if (ret)
		return ret;
	st = show_qp_state(cl);
	if (w[0].status == IBV_WC_SUCCESS)
		return not_shown(
			cl,
			"the device carried out the atomic 4 bytes into the word (%s after "
			"%.1f ms)",
			rc_wc_status_name(w[0].status), w[0].ms);
	say(cl,
	    "\nWhat happened: the request went out, and the server's NIC refused it: an\n"
	    "atomic's remote address must be 8-byte aligned. Our NIC completed it with\n"
	    "%s.\n",
	    rc_wc_status_name(w[0].status));
	explain_refused(cl, st, w[1].status);
	return shown(cl, "%s after %.1f ms", rc_wc_status_name(w[0].status), w[0].ms);
}

/* --inject atomic-unaligned: an atomic's address must be 8-byte aligned. */
int lesson_atomic_unaligned(struct client *cl)
{
	struct rc_conn *c = &cl->conn;
	const struct rc_remote_buf *rb = &cl->remote.rb;
	struct lesson_wr w[2] = { { "the atomic 4 bytes in", -1, 0 },
				  { "the correct atomic behind it", -1, 0 } };
	uint64_t compare_add, swap, t0;
	struct ibv_send_wr *bad = NULL;
	enum ibv_wr_opcode op;
	double ms;
	int ret;

	if (!rc_remote_range_ok(rb, 4, RW_WORD))
		return rc_fail(&c->log, EPROTO,
			       "the server's buffer has %u bytes: a word 4 bytes in does not fit",
			       rb->len);
	lesson_operands(cl, &op, &compare_add, &swap);
	build_atomic_wr(cl, 0, op, 0, rb->addr + 4, compare_add, swap, WR_DATA, true);
	build_atomic_wr(cl, 1, op, 1, rb->addr, compare_add, swap, WR_DATA + 1, true);
	cl->wrs[0].next = &cl->wrs[1];
	say(cl,
	    "inject atomic-unaligned: the server's buffer is %u bytes at 0x%" PRIx64 ",\n"
	    "8-byte aligned. A %s at 0x%" PRIx64 ", 4 bytes in: inside the\n"
	    "buffer, but not 8-byte aligned (wr_id %u); then a correct one at the word,\n"
	    "0x%" PRIx64 ", behind it (wr_id %u), both in one chain: one ibv_post_send.\n",
	    rb->len, rb->addr, rw_ops_str(cl->opt.ops), rb->addr + 4, WR_DATA, rb->addr,
	    WR_DATA + 1);
	/* The verb itself, not rc_post_send_list: its return value and
	 * bad_wr are the lesson. */
	t0 = rc_now_ns();
	ret = ibv_post_send(c->qp, cl->wrs, &bad);
	ms = (double)(rc_now_ns() - t0) / 1e6;
	if (!ret)
		return unaligned_posted(cl, w, t0);
	if (ret < 0)
		ret = -ret; /* some providers return -errno */
	say(cl,
	    "ibv_post_send returned %s (%s) after %.3f ms, bad_wr at wr_id %" PRIu64 ":\n"
	    "that work request and every one behind it in the chain were not posted.\n",
	    ret == EINVAL ? "EINVAL" : "an error", strerror(ret), ms, bad ? bad->wr_id : 0);
	if (ret != EINVAL || bad != &cl->wrs[0])
		return not_shown(cl, "ibv_post_send failed with %s at wr_id %" PRIu64,
				 strerror(ret), bad ? bad->wr_id : 0);
	ret = correct_one_alone(cl, &w[1]);
	if (ret)
		return ret;
	if (show_qp_state(cl) != IBV_QPS_RTS)
		return not_shown(cl, "our QP left RTS after a work request that was never posted");
	say(cl,
	    "\nWhat happened: ibv_post_send checked the atomic and refused it at once,\n"
	    "with EINVAL: an atomic's remote address must be 8-byte aligned. Nothing was\n"
	    "queued, so no completion ever comes for wr_id %u (the correct %s\n"
	    "behind it completed alone, and RC completes in order), nothing went to the\n"
	    "server, and our QP stays in RTS: the work requests from bad_wr on may be\n"
	    "posted again.\n",
	    WR_DATA, rw_ops_str(cl->opt.ops));
	if (soft_roce(c))
		say(cl, "Soft-RoCE's library (rdma-core's rxe provider) makes this check in user\n"
			"space, before the kernel sees the request: the same on every kernel.\n");
	say(cl, "A NIC's library need not check: the request then goes out and the\n"
		"server's NIC refuses it (Soft-RoCE's own responder answers such a request\n"
		"with a NAK, invalid request), the atomic completes with an error such as\n"
		"IBV_WC_REM_INV_REQ_ERR, and the QP goes to the error state. Keep every\n"
		"remote atomic word 8-byte aligned.\n\n");
	return shown(cl, "ibv_post_send: EINVAL, no completion; the correct %s behind it succeeded",
		     rw_ops_str(cl->opt.ops));
}

/* --inject atomic-no-access: the word's MR has no REMOTE_ATOMIC. */
int lesson_atomic_no_access(struct client *cl)
{
	const struct rc_remote_buf *rb = &cl->remote.rb;
	struct lesson_wr w[1] = { { "the atomic", -1, 0 } };
	int access = rw_access_for(RW_OP_BOTH); /* the server's, in this lesson */
	uint64_t compare_add, swap, t0;
	enum ibv_wr_opcode op;
	enum ibv_qp_state st;
	char flags[64];
	int ret;

	/* The server's part (server.c): it registered the word as it would a
	 * buffer for WRITE and READ, without REMOTE_ATOMIC, but its BUF grants
	 * the atomic and its QP accepts them (responder_resources). */
	lesson_operands(cl, &op, &compare_add, &swap);
	build_atomic_wr(cl, 0, op, 0, rb->addr, compare_add, swap, WR_DATA, true);
	cl->wrs[0].next = NULL;
	say(cl,
	    "inject atomic-no-access: the server registered its word with access\n"
	    "%s, as a buffer for WRITE and READ: without\n"
	    "REMOTE_ATOMIC. Yet its BUF says %s and it accepted atomic depth %u.\n"
	    "Now a %s on the word with the advertised address and rkey\n",
	    rw_access_str(access, flags, sizeof(flags)), rw_ops_str(cl->remote.ops),
	    cl->remote.read_depth, rw_ops_str(cl->opt.ops));
	t0 = rc_now_ns();
	ret = rc_post_send_list(&cl->conn, cl->wrs);
	if (!ret)
		ret = watch_wrs(cl, w, 1, WR_DATA, t0);
	if (ret)
		return ret;
	st = show_qp_state(cl);
	if (w[0].status != IBV_WC_REM_ACCESS_ERR)
		return not_shown(cl, "expected IBV_WC_REM_ACCESS_ERR for the atomic, saw %s",
				 rc_wc_status_name(w[0].status));
	say(cl, "\nWhat happened: the server's memory region has no IBV_ACCESS_REMOTE_ATOMIC,\n"
		"and its NIC checks every atomic against the region's flags, as it does\n"
		"READs and WRITEs: it refused the atomic with a NAK, our NIC completed it\n"
		"with IBV_WC_REM_ACCESS_ERR, and the word is unchanged. The QP itself\n"
		"allows atomics: the CM gives it remote read and atomic access whenever\n"
		"responder_resources is above 0. Register a word that peers' atomics\n"
		"reach with REMOTE_ATOMIC, and with LOCAL_WRITE, which ibv_reg_mr(3)\n"
		"requires with it.\n");
	explain_refused(cl, st, -1);
	return shown(cl, "IBV_WC_REM_ACCESS_ERR after %.1f ms", w[0].ms);
}
