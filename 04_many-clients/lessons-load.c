// SPDX-License-Identifier: MIT
/*
 * lessons-load.c - rdma-load's --inject lessons (README, "Lessons"). One
 * process holds several connections, so it knows more than one rkey of a
 * server: each lesson uses one where it does not belong, or looks at what
 * became of its SENDs, and prints what the completions really said and
 * why. It prints what it saw: where a kernel or NIC behaves otherwise, it
 * says so and exits 1 instead of RW_EXIT_LESSON (4).
 *
 *   other-rkey  conn 1's (addr, rkey) on conn 0's QP: refused through a
 *               window, working on a region (server --inject shared-region)
 *   old-rkey    a closed connection's (addr, rkey) on a new connection
 *   srq-low     the normal run; then each DONE's fate (server --inject
 *               srq-low: its SRQ runs empty, the SENDs meet RNR)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "load.h"
#include "rc-lessons.h"

static const char *lesson_name(const struct load *ld)
{
	return ld->o.inject == LOAD_INJECT_OTHER_RKEY ? "other-rkey"
	       : ld->o.inject == LOAD_INJECT_OLD_RKEY ? "old-rkey"
						      : "srq-low";
}

static int shown(const struct load *ld, const char *saw)
{
	printf("lesson %s: shown (%s)\n", lesson_name(ld), saw);
	return RW_EXIT_LESSON;
}

static int not_shown(const struct load *ld, const char *saw)
{
	fprintf(stderr, "rdma-load: --inject %s: not shown: %s\n", lesson_name(ld), saw);
	return RC_EXIT_FAIL;
}

void load_lesson_wc(struct load *ld, const struct ibv_wc *wc)
{
	unsigned n = (unsigned)(wc->wr_id & ((1u << LOAD_WR_KIND_BITS) - 1)) - LOAD_WR_LESSON;

	if (n < LOAD_LESSON_WRS && ld->lwr_status[n] < 0) {
		ld->lwr_status[n] = wc->status;
		ld->lwr_ms[n] = (double)(rc_now_ns() - ld->lwr_t0) / 1e6;
	}
}

/* Post lesson WR n on lc's QP: op on [raddr, raddr + size) with rkey,
 * from lc's source or into its destination. */
static int post(struct load *ld, struct load_conn *lc, unsigned n, enum ibv_wr_opcode op,
		uint64_t raddr, uint32_t rkey)
{
	size_t off = lc->off + LOAD_SRC + (op == IBV_WR_RDMA_READ ? ld->o.size : 0);
	uint64_t id = (uint64_t)lc->idx << LOAD_WR_KIND_BITS | (LOAD_WR_LESSON + n);

	ld->lwr_status[n] = -1;
	if (rc_post_rdma(&lc->c, op, &ld->mem, off, ld->o.size, raddr, rkey, 0, id, true)) {
		fprintf(stderr, "rdma-load: %s\n", lc->c.log.err);
		return -1;
	}
	return 0;
}

/* Wait until lesson WRs 0 .. n-1 have completed, at most --timeout. */
static int wait_wrs(struct load *ld, unsigned n)
{
	uint64_t end = rc_now_us() + (uint64_t)ld->o.rc.timeout_ms * 1000u;
	unsigned done;

	for (;;) {
		done = 0;
		for (unsigned i = 0; i < n; i++)
			done += ld->lwr_status[i] >= 0;
		if (done == n)
			return 0;
		if (rc_now_us() >= end) {
			fprintf(stderr,
				"rdma-load: --inject %s: %u of %u completions within %d ms\n",
				lesson_name(ld), done, n, ld->o.rc.timeout_ms);
			return -1;
		}
		if (load_pump(ld, end)) {
			fprintf(stderr, "rdma-load: %s\n", ld->log.err);
			return -1;
		}
	}
}

static void say_wc(const struct load *ld, unsigned n, const char *what)
{
	printf("completion of %s: %s (%s) after %.1f ms\n", what,
	       rc_wc_status_name(ld->lwr_status[n]), ibv_wc_status_str(ld->lwr_status[n]),
	       ld->lwr_ms[n]);
}

/* Start connection i and run the loop until it has settled. */
static int open_one(struct load *ld, unsigned i)
{
	struct load_conn *lc = &ld->conns[i];

	load_conn_start(ld, lc);
	while (lc->st != LS_HELD && lc->st != LS_FAILED)
		if (load_pump(ld, RC_NO_DEADLINE)) {
			fprintf(stderr, "rdma-load: %s\n", ld->log.err);
			return -1;
		}
	if (!lc->verified) {
		fprintf(stderr, "rdma-load: conn %u: %s\n", i, lc->c.log.err);
		return -1;
	}
	printf("conn %u verified: the server's buffer at 0x%" PRIx64 ", rkey 0x%08x\n", i,
	       lc->remote.rb.addr, lc->remote.rb.rkey);
	return 0;
}

/* other-rkey, on a region: conn 0 wrote conn 1's buffer and read it back. */
static int other_rkey_region(struct load *ld, const uint8_t *src, const uint8_t *dst)
{
	if (ld->lwr_status[0] != IBV_WC_SUCCESS || ld->lwr_status[1] != IBV_WC_SUCCESS)
		return not_shown(ld, "one rkey for both buffers, yet the WRITE or READ failed");
	if (memcmp(src, dst, ld->o.size))
		return not_shown(ld, "the READ did not return what conn 0 wrote");
	printf("\nWhat happened: both succeeded, and the READ returned conn 0's pattern from\n"
	       "conn 1's buffer: conn 0 overwrote conn 1's data. Both BUFs carried the same\n"
	       "rkey: the server registered one region over every client's buffer with\n"
	       "REMOTE_WRITE|REMOTE_READ. A region's rkey is checked against the region\n"
	       "(range, access) and the PD, not against the QP that carries it: from any QP\n"
	       "on that PD it reaches every buffer in the region. This is the unsafe design\n"
	       "(the server's --inject shared-region); 04's server gives each client a\n"
	       "type 2 window bound to its own QP instead (or a PD of its own, --no-mw).\n\n");
	return shown(ld, "conn 0 wrote and read conn 1's buffer with conn 1's rkey");
}

/* other-rkey, through windows: refused; conn 1's own QP still works. */
static int other_rkey_windows(struct load *ld, struct load_conn *a, struct load_conn *b)
{
	enum ibv_qp_state st = rc_qp_state(a->c.qp);

	printf("conn 0's QP is now in state %s\n", rc_qp_state_name(st));
	if (ld->lwr_status[0] != IBV_WC_REM_ACCESS_ERR)
		return not_shown(ld, "two rkeys, yet the WRITE with the other's was not refused "
				     "with IBV_WC_REM_ACCESS_ERR");
	printf("Now conn 1's READ of its own buffer with the same rkey, on conn 1's QP\n");
	ld->lwr_t0 = rc_now_ns();
	if (post(ld, b, 2, IBV_WR_RDMA_READ, b->remote.rb.addr, b->remote.rb.rkey) ||
	    wait_wrs(ld, 3))
		return RC_EXIT_FAIL;
	say_wc(ld, 2, "conn 1's READ");
	if (ld->lwr_status[2] != IBV_WC_SUCCESS)
		return not_shown(ld, "conn 1's own READ failed too");
	printf("\nWhat happened: the server's NIC refused conn 1's rkey on conn 0's QP\n"
	       "(IBV_WC_REM_ACCESS_ERR), and the same rkey worked on conn 1's QP. Each BUF\n"
	       "carried another rkey: 04's server gives each client a type 2 memory window\n"
	       "over its buffer, bound to that client's QP; the NIC checks a window's QP as\n"
	       "well as its key, so a request on any other QP is refused, though every\n"
	       "client's QP is on the server's one PD. A region's rkey would have worked\n"
	       "(run the server with --inject shared-region to see it). The error moved\n"
	       "conn 0's QP to the error state (the READ behind the WRITE: %s).\n\n",
	       rc_wc_status_name(ld->lwr_status[1]));
	return shown(ld, "IBV_WC_REM_ACCESS_ERR on the other QP, IBV_WC_SUCCESS on its own");
}

/* --inject other-rkey: conn 1's (addr, rkey) on conn 0's QP. */
static int lesson_other_rkey(struct load *ld)
{
	struct load_conn *a = &ld->conns[0], *b = &ld->conns[1];
	uint8_t *src = (uint8_t *)ld->arena + a->off + LOAD_SRC, *dst = src + ld->o.size;
	bool same;

	if (open_one(ld, 0) || open_one(ld, 1))
		return RC_EXIT_NOCONN;
	same = a->remote.rb.rkey == b->remote.rb.rkey;
	printf("inject other-rkey: on conn 0's QP, an RDMA WRITE of %u bytes of conn 0's pattern\n"
	       "to conn 1's buffer with conn 1's rkey, then an RDMA READ of them back%s\n",
	       ld->o.size, same ? " (both BUFs carried the same rkey)" : "");
	memset(dst, 0, ld->o.size); /* the READ must bring them, not the exchange */
	ld->lwr_t0 = rc_now_ns();
	if (post(ld, a, 0, IBV_WR_RDMA_WRITE, b->remote.rb.addr, b->remote.rb.rkey) ||
	    post(ld, a, 1, IBV_WR_RDMA_READ, b->remote.rb.addr, b->remote.rb.rkey) ||
	    wait_wrs(ld, 2))
		return RC_EXIT_FAIL;
	say_wc(ld, 0, "the WRITE");
	say_wc(ld, 1, "the READ");
	return same ? other_rkey_region(ld, src, dst) : other_rkey_windows(ld, a, b);
}

/* What the two rkeys' bits say: the key byte alone, or the rest too. */
static void explain_old_rkey(uint32_t old, uint32_t now)
{
	if ((old >> 8) != (now >> 8))
		printf("The two rkeys differ in their upper 24 bits, not only in the key byte\n"
		       "(the low 8 bits): the new connection got another window (04's server\n"
		       "deallocates a client's window when it leaves, and allocates one for each\n"
		       "new connection), so the key byte did not come into it.\n");
	else
		printf("The two rkeys differ only in the key byte (the low 8 bits): the same\n"
		       "window index, bound again with another key byte.\n");
	printf("What the key byte guarantees: each bind request names the window's new rkey,\n"
	       "whose low 8 bits the application chooses (ibv_inc_rkey: the next value, mod\n"
	       "256), so an rkey of the window's previous binding does not match its new one.\n"
	       "It does not guarantee more: it has 256 values, so after 256 binds of the same\n"
	       "window an old rkey matches again; and a type 2 window is bound to one QP, so\n"
	       "an rkey that came on another QP (an old connection's) is refused there\n"
	       "whatever its key byte (--inject other-rkey). After reconnecting, use only\n"
	       "the rkey of the new connection's BUF.\n\n");
}

/* --inject old-rkey: a closed connection's (addr, rkey) on a new one. */
static int lesson_old_rkey(struct load *ld)
{
	struct load_conn *a = &ld->conns[0], *b = &ld->conns[1];
	uint32_t old, now;
	enum ibv_qp_state st;

	if (open_one(ld, 0))
		return RC_EXIT_NOCONN;
	printf("disconnecting conn 0, then connecting again (conn 1: a new QP)\n");
	load_conn_disconnect(ld, a);
	while (a->st == LS_DISCONNECT)
		if (load_pump(ld, RC_NO_DEADLINE)) {
			fprintf(stderr, "rdma-load: %s\n", ld->log.err);
			return RC_EXIT_FAIL;
		}
	if (open_one(ld, 1))
		return RC_EXIT_NOCONN;
	old = a->remote.rb.rkey;
	now = b->remote.rb.rkey;
	printf("inject old-rkey: the buffer is at %s address; rkey 0x%08x then, 0x%08x now\n"
	       "(key bytes 0x%02x, 0x%02x). On conn 1's QP, an RDMA WRITE of %u bytes to conn 0's\n"
	       "address with conn 0's rkey\n",
	       a->remote.rb.addr == b->remote.rb.addr ? "the same" : "another", old, now,
	       old & 0xff, now & 0xff, ld->o.size);
	ld->lwr_t0 = rc_now_ns();
	if (post(ld, b, 0, IBV_WR_RDMA_WRITE, a->remote.rb.addr, old) || wait_wrs(ld, 1))
		return RC_EXIT_FAIL;
	say_wc(ld, 0, "the WRITE with the old rkey");
	st = rc_qp_state(b->c.qp);
	printf("conn 1's QP is now in state %s\n", rc_qp_state_name(st));
	if (old == now)
		return not_shown(ld, "the new connection got the same rkey as the old one");
	if (ld->lwr_status[0] != IBV_WC_REM_ACCESS_ERR)
		return not_shown(ld, "the old rkey was not refused with IBV_WC_REM_ACCESS_ERR");
	printf("\nWhat happened: the server's NIC refused the old rkey on the new connection\n"
	       "(IBV_WC_REM_ACCESS_ERR), and the error moved our QP to the error state.\n");
	explain_old_rkey(old, now);
	return shown(ld, "IBV_WC_REM_ACCESS_ERR for the old rkey on the new connection");
}

int load_lesson_run(struct load *ld)
{
	return ld->o.inject == LOAD_INJECT_OTHER_RKEY ? lesson_other_rkey(ld) : lesson_old_rkey(ld);
}

/* --inject srq-low, after the normal run: what became of each DONE. */
int load_lesson_srq_low(struct load *ld)
{
	unsigned rnr = 0, waited = 0, ok = 0;
	struct load_conn *first = NULL;
	struct ibv_qp_attr a = { 0 };
	struct ibv_qp_init_attr init;

	for (unsigned i = 0; i < ld->o.conns; i++) {
		struct load_conn *lc = &ld->conns[i];

		if (lc->done_status == IBV_WC_SUCCESS)
			ok++;
		if (lc->done_status == IBV_WC_RNR_RETRY_EXC_ERR && !rnr++)
			first = lc;
		/* DONE posted, no completion: our NIC was still retrying. */
		if (lc->done_ns && lc->done_status < 0 && lc->st == LS_FAILED)
			waited++;
	}
	printf("\ninject srq-low: of %u DONEs (SENDs), %u completed, %u failed with "
	       "IBV_WC_RNR_RETRY_EXC_ERR, %u had no completion within --timeout\n",
	       ok + rnr + waited, ok, rnr, waited);
	if (!rnr && !waited)
		return not_shown(ld, "every DONE found a receive: run it against a server with "
				     "--inject srq-low, with more connections than its SRQ holds");
	if (first && !ibv_query_qp(first->c.qp, &a, IBV_QP_RNR_RETRY, &init))
		printf("conn %u's DONE failed after %.1f ms; our QPs' rnr_retry is %u (the CM set "
		       "it\n"
		       "from the server's accept, the REP; rdma-load asked for the same count)\n",
		       first->idx, first->done_ms, a.rnr_retry);
	printf("\nWhat happened: a DONE that found no receive on the server's SRQ was answered\n"
	       "with an RNR NAK (receiver not ready), which names how long to wait (the server\n"
	       "QP's min_rnr_timer); our NIC waited and sent again, up to rnr_retry times%s.\n"
	       "The server's program sees none of this. What it can see is its SRQ limit\n"
	       "event, when its receives run low (04's server with --inject srq-low prints it);\n"
	       "a service refills then.\n\n",
	       rnr ? ", then gave up" : "; others were still retrying when our --timeout ended");
	return shown(ld, rnr ? "IBV_WC_RNR_RETRY_EXC_ERR for DONEs past the SRQ's receives"
			     : "DONEs past the SRQ's receives never completed");
}
