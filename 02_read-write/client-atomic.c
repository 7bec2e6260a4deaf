// SPDX-License-Identifier: MIT
/*
 * 02 rdma-client's atomics: --op fetch-add and --op cmp-swap on the 8-byte
 * word the server advertised (see atomic.h for the word and the wire).
 *
 * fetch-add -n N: N fetch-and-adds of ADD (--add). Each returns the word
 * as it was just before it: the originals must be FIRST, FIRST + ADD,
 * FIRST + 2 x ADD, ..., and the word must end at FIRST + N x ADD, which
 * the server's RESULT tells. With --shared (a word other clients add to)
 * each original must instead be at least the one before plus ADD, and the
 * word at least our last original plus ADD.
 *
 * cmp-swap -n N: a compare-and-swap whose compare and swap are both 0,
 * which never changes the word, reads it (V0); then N compare-and-swaps,
 * the k-th swapping V0 + (k - 1) x ADD for V0 + k x ADD, each of which
 * must return its compare value (it swapped); then one whose compare is
 * the value before the last swap, which must return the current value
 * (it did not swap). The word must end at V0 + N x ADD.
 *
 * Up to DEPTH atomics are in flight (bounded by the connection's read
 * depth: atomics use the same responder resources as READs), only every
 * (DEPTH+1)/2-th signalled, as 02's WRITEs and READs; each has its own
 * 8-byte slot for its original, checked once a later completion says it
 * is there (RC completes work requests in order).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "atomic.h"
#include "client.h"

/* The 8 bytes of the server's fresh word: its pattern's first 8 bytes. */
static void server_word_bytes(uint8_t out[RW_WORD])
{
	rw_fill_pattern(out, RW_WORD, RW_SERVER_SEED);
}

static bool host_little_endian(void)
{
	const uint16_t one = 1;

	return *(const uint8_t *)&one == 1;
}

bool atomic_is_fresh_word(const uint8_t raw[RW_WORD])
{
	uint8_t want[RW_WORD];
	unsigned i;

	server_word_bytes(want);
	for (i = 0; i < RW_WORD && raw[i] == want[i]; i++)
		;
	if (i == RW_WORD)
		return true;
	for (i = 0; i < RW_WORD && raw[i] == want[RW_WORD - 1 - i]; i++)
		;
	return i == RW_WORD;
}

int atomic_check_device(struct client *cl)
{
	return rw_atomic_cap(&cl->conn, "this client", &cl->at.cap);
}

int atomic_check_buf(struct client *cl)
{
	struct rc_conn *c = &cl->conn;

	/* A shared word changes under us: only --shared checks hold. */
	if ((cl->remote.flags & RW_BUF_SHARED) && !cl->opt.shared)
		return rc_fail(&c->log, EPROTO,
			       "the server's word is shared with other clients, which add to "
			       "it too: run with --shared");
	if (cl->remote.rb.len < RW_WORD)
		return rc_fail(&c->log, EPROTO, "the server's word has %u bytes, not %u",
			       cl->remote.rb.len, RW_WORD);
	return 0;
}

int atomic_alloc(struct client *cl)
{
	struct rc_conn *c = &cl->conn;
	unsigned slots = cl->opt.depth > 2 ? cl->opt.depth : 2;

	/* The NIC writes each returned original here: LOCAL_WRITE, and
	 * nothing remote. A slot per atomic in flight. */
	rc_trace(&c->log, "originals: %u slots of 8 bytes, access LOCAL_WRITE", slots);
	return rc_buf_alloc(c, (size_t)slots * RW_WORD, IBV_ACCESS_LOCAL_WRITE, &cl->at.orig);
}

void build_atomic_wr(struct client *cl, unsigned slot, enum ibv_wr_opcode op, unsigned oslot,
		     uint64_t raddr, uint64_t compare_add, uint64_t swap, uint64_t wr_id,
		     bool signaled)
{
	struct ibv_send_wr *wr = &cl->wrs[slot];

	/* The local side: where the NIC puts the original, 8 bytes. */
	cl->sges[slot] =
		(struct ibv_sge){ .addr = (uintptr_t)cl->at.orig->addr + (uint64_t)oslot * RW_WORD,
				  .length = RW_WORD,
				  .lkey = cl->at.orig->mr->lkey };
	*wr = (struct ibv_send_wr){ .wr_id = wr_id,
				    .sg_list = &cl->sges[slot],
				    .num_sge = 1,
				    .opcode = op,
				    .send_flags = signaled ? IBV_SEND_SIGNALED : 0 };
	/* Atomics name the remote word in wr.atomic, never wr.rdma: its
	 * rkey lies elsewhere in the union. */
	wr->wr.atomic.remote_addr = raddr;
	wr->wr.atomic.rkey = cl->remote.rb.rkey;
	wr->wr.atomic.compare_add = compare_add;
	wr->wr.atomic.swap = swap;
}

/* Atomic k of this run: its operands. fetch-add: k = 0..N-1. cmp-swap:
 * 0 the read, 1..N the swaps, N+1 the one with a stale compare. */
static void operands(const struct client *cl, uint64_t k, uint64_t *compare_add, uint64_t *swap)
{
	uint64_t n = cl->opt.iters, add = cl->opt.add, v0 = cl->at.first;

	*swap = 0;
	*compare_add = add;
	if (cl->opt.ops == RW_OP_FETCH_ADD)
		return;
	if (k == 0) {
		*compare_add = 0; /* compare == swap: the word never changes */
	} else if (k <= n) {
		*compare_add = v0 + (k - 1) * add;
		*swap = v0 + k * add;
	} else {
		*compare_add = v0 + (n - 1) * add; /* stale: the value before the last swap */
		*swap = v0 + (n + 1) * add;
	}
}

/* The first original: does it hold the bytes of the server's fresh word,
 * in their order or reversed? That is the byte order of the returned
 * value, which the verbs' man pages do not specify. */
static int measure_order(struct client *cl, const uint8_t raw[RW_WORD])
{
	uint8_t want[RW_WORD], rev[RW_WORD];
	unsigned i;

	if (cl->opt.shared) {
		cl->at.order = ORDER_UNMEASURED;
		return 0;
	}
	server_word_bytes(want);
	for (i = 0; i < RW_WORD; i++)
		rev[i] = want[RW_WORD - 1 - i];
	if (!memcmp(raw, want, RW_WORD))
		cl->at.order = ORDER_SAME;
	else if (!memcmp(raw, rev, RW_WORD))
		cl->at.order = ORDER_REVERSED;
	else
		return rc_fail(&cl->conn.log, EPROTO,
			       "the first original, 0x%016" PRIx64 ", is not the server's fresh "
			       "word in either byte order: did something else change the word "
			       "(then use --shared)?",
			       rw_word_load(raw));
	return 0;
}

/* The value of an original, in the byte order measured. */
static uint64_t decode(const struct client *cl, const uint8_t raw[RW_WORD])
{
	uint64_t v = rw_word_load(raw);

	return cl->at.order == ORDER_REVERSED ? __builtin_bswap64(v) : v;
}

/* Is the original of atomic k what it must be? */
static int check_original(struct client *cl, uint64_t k, const uint8_t raw[RW_WORD])
{
	struct rc_conn *c = &cl->conn;
	uint64_t v, want, compare, swap, add = cl->opt.add;
	int ret;

	if (k == 0) {
		ret = measure_order(cl, raw);
		if (ret)
			return ret;
		cl->at.first = cl->at.prev = decode(cl, raw);
		return 0;
	}
	v = decode(cl, raw);
	if (cl->opt.shared) {
		/* Ours and maybe others' adds came between: at least ADD more. */
		if (v < cl->at.prev || v - cl->at.prev < add)
			return rc_fail(&c->log, EPROTO,
				       "fetch-add %" PRIu64 " returned 0x%016" PRIx64
				       ", the one before 0x%016" PRIx64 ": not at least %" PRIu64
				       " more",
				       k + 1, v, cl->at.prev, add);
		cl->at.prev = v;
		return 0;
	}
	operands(cl, k, &compare, &swap);
	if (cl->opt.ops == RW_OP_FETCH_ADD)
		want = cl->at.first + k * add;
	else if (k <= cl->opt.iters)
		want = compare; /* it found its compare value: it swapped */
	else
		want = cl->at.first + cl->opt.iters * add; /* the word, unswapped */
	if (v != want)
		return rc_fail(&c->log, EPROTO,
			       "%s %" PRIu64 " returned 0x%016" PRIx64 ", expected 0x%016" PRIx64,
			       rw_ops_str(cl->opt.ops), k + 1, v, want);
	cl->at.prev = v;
	return 0;
}

/*
 * Atomics k0 .. k0 + total - 1, at most at.depth in flight, each refill
 * one chain (one doorbell), every `every`-th signalled; each original
 * checked as soon as a completion says it is there.
 */
static int run_atomics(struct client *cl, uint64_t k0, uint64_t total)
{
	struct rc_conn *c = &cl->conn;
	enum ibv_wr_opcode op = cl->opt.ops == RW_OP_FETCH_ADD ? IBV_WR_ATOMIC_FETCH_AND_ADD
							       : IBV_WR_ATOMIC_CMP_AND_SWP;
	enum ibv_wc_opcode want =
		cl->opt.ops == RW_OP_FETCH_ADD ? IBV_WC_FETCH_ADD : IBV_WC_COMP_SWAP;
	unsigned depth = cl->at.depth, every = rw_signal_every(depth, RW_WORD), n;
	uint64_t posted = 0, done = 0, next, compare_add, swap;
	const uint8_t *slots = cl->at.orig->addr;
	int ret;

	while (done < total) {
		/* Fill the window: a WR's slot is free once its original was
		 * checked, i.e. once `done` has passed it. */
		for (n = 0; posted < total && posted - done < depth; n++, posted++) {
			operands(cl, k0 + posted, &compare_add, &swap);
			build_atomic_wr(cl, n, op, (unsigned)(posted % depth), cl->remote.rb.addr,
					compare_add, swap, WR_DATA + k0 + posted,
					rw_is_signaled(posted, total, every));
		}
		ret = post_and_reap(cl, n, want, WR_DATA + k0, done, total, every, &next);
		if (ret)
			return ret;
		/* It and every atomic before it are done: their originals
		 * are in their slots. */
		for (; done <= next; done++) {
			ret = check_original(cl, k0 + done, slots + (done % depth) * RW_WORD);
			if (ret)
				return ret;
			rc_link_moved(c, RW_WORD);
		}
	}
	return 0;
}

/* "little-endian" or "big-endian": this host. */
static const char *host_order(void)
{
	return host_little_endian() ? "little-endian" : "big-endian";
}

/* What the first original showed of the byte order. */
static void print_order(const struct client *cl)
{
	if (cl->opt.json)
		return;
	if (cl->at.order == ORDER_SAME)
		printf("byte order of the returned original: as in the server's memory (host "
		       "order, %s here)\n",
		       host_order());
	else if (cl->at.order == ORDER_REVERSED)
		printf("byte order of the returned original: REVERSED from the server's memory "
		       "(this %s host swaps it back)\n",
		       host_order());
	else
		printf("byte order of the returned original: not measured (--shared: the word's "
		       "value before our atomics is not known)\n");
}

/* fetch-add: every original checked; the word we now expect. */
static void fetch_add_done(struct client *cl)
{
	uint64_t n = cl->opt.iters;

	if (cl->opt.shared)
		cl->at.expect = cl->at.prev + cl->opt.add;
	else
		cl->at.expect = cl->at.first + n * cl->opt.add;
	if (cl->opt.json)
		return;
	printf("fetch-add: first original 0x%016" PRIx64 "\n", cl->at.first);
	if (n == 1)
		return; /* one original: nothing to compare it with */
	if (cl->opt.shared)
		printf("fetch-add: %" PRIu64 " originals, each at least %" PRIu64
		       " more than the one before, the last 0x%016" PRIx64 "\n",
		       n, cl->opt.add, cl->at.prev);
	else
		printf("fetch-add: %" PRIu64 " originals, each %" PRIu64
		       " more than the one before, the last 0x%016" PRIx64 "\n",
		       n, cl->opt.add, cl->at.prev);
}

/* cmp-swap: what the chain and the stale compare-and-swap returned. */
static void cmp_swap_done(struct client *cl)
{
	uint64_t n = cl->opt.iters, v0 = cl->at.first, add = cl->opt.add;
	uint64_t last = v0 + n * add, stale = v0 + (n - 1) * add;

	cl->at.expect = last;
	if (cl->opt.json)
		return;
	printf("cmp-swap: compare 0 and swap 0 (never changes the word) read 0x%016" PRIx64 "\n",
	       v0);
	printf("cmp-swap: %" PRIu64 " compare-and-swaps each returned its compare value: "
	       "swapped, 0x%016" PRIx64 " to 0x%016" PRIx64 "\n",
	       n, v0, last);
	printf("cmp-swap: one more with the value before the last swap, 0x%016" PRIx64
	       ", as compare returned 0x%016" PRIx64 ": not swapped, as it must be\n",
	       stale, last);
}

/* "fetch-add: N operations in T s = R Mpps (depth D)", with -n above 1. */
static void print_rate(const struct client *cl)
{
	double s = (double)(cl->at.ns ? cl->at.ns : 1) / 1e9;

	if (cl->opt.json || cl->opt.iters == 1)
		return;
	printf("%s: %" PRIu64 " operations in %.3f s = %.4f Mpps (depth %u)\n",
	       rw_ops_str(cl->opt.ops), cl->at.count, s, (double)cl->at.count / s / 1e6,
	       cl->at.depth);
}

/* DONE with the value we expect, RESULT with the server's: compare. */
static int check_final(struct client *cl)
{
	struct rc_conn *c = &cl->conn;
	struct rw_sum result;
	int ret;

	ret = exchange_sums(cl, cl->at.expect, &result);
	if (ret)
		return ret;
	cl->at.final = result.checksum;
	cl->at.have_final = true;
	if (!cl->opt.json) {
		printf("client expects: 0x%016" PRIx64 " (%" PRIu64 ")%s in the word\n",
		       cl->at.expect, cl->at.expect, cl->opt.shared ? " or more" : "");
		printf("server's word:  0x%016" PRIx64 " (%" PRIu64 ")\n", cl->at.final,
		       cl->at.final);
	}
	if (cl->opt.shared ? cl->at.final < cl->at.expect : cl->at.final != cl->at.expect)
		return rc_fail(&c->log, EPROTO,
			       "the server's word holds 0x%016" PRIx64 ", we expected 0x%016" PRIx64
			       "%s",
			       cl->at.final, cl->at.expect, cl->opt.shared ? " or more" : "");
	return 0;
}

int atomic_transfer(struct client *cl)
{
	struct rc_conn *c = &cl->conn;
	uint64_t t0;
	int ret;

	/* Atomics in flight: DEPTH, within the read depth negotiated. */
	cl->at.depth = cl->opt.depth < cl->read_depth ? cl->opt.depth : cl->read_depth;
	if (!cl->opt.json)
		printf("our device %s: atomic_cap %s (%s)\n",
		       ibv_get_device_name(c->id->verbs->device), rw_atomic_cap_name(cl->at.cap),
		       rw_atomic_cap_meaning(cl->at.cap));
	if (cl->opt.ops == RW_OP_CMP_SWAP) {
		/* The read first: the swaps' operands depend on it. */
		ret = run_atomics(cl, 0, 1);
		if (ret)
			return ret;
	}
	t0 = rc_now_ns();
	if (cl->opt.ops == RW_OP_FETCH_ADD)
		ret = run_atomics(cl, 0, cl->opt.iters);
	else
		ret = run_atomics(cl, 1, cl->opt.iters + 1);
	if (ret)
		return ret;
	cl->at.ns = rc_now_ns() - t0;
	cl->at.count = cl->opt.iters + (cl->opt.ops == RW_OP_CMP_SWAP);
	cl->at.done = true;
	print_order(cl);
	if (cl->opt.ops == RW_OP_FETCH_ADD)
		fetch_add_done(cl);
	else
		cmp_swap_done(cl);
	print_rate(cl);
	ret = check_final(cl);
	if (ret)
		return ret;
	cl->verified = true;
	if (!cl->opt.json)
		printf("verified %" PRIu64 " %s%s and the word's final value\n", cl->at.count,
		       cl->opt.ops == RW_OP_FETCH_ADD ? "fetch-adds" : "compare-and-swaps",
		       cl->opt.shared ? " (--shared)" : "");
	return 0;
}

void json_atomic(struct rc_json *j, const struct client *cl)
{
	static const char *const order[] = { [ORDER_UNMEASURED] = NULL,
					     [ORDER_SAME] = "as in the server's memory",
					     [ORDER_REVERSED] = "reversed" };
	double s = (double)(cl->at.ns ? cl->at.ns : 1) / 1e9;

	if (!cl->at.done) {
		rc_json_null(j, "atomic");
		return;
	}
	rc_json_object(j, "atomic");
	rc_json_u64(j, "operations", cl->at.count);
	rc_json_u64(j, "add", cl->opt.add);
	rc_json_bool(j, "shared", cl->opt.shared);
	rc_json_double(j, "seconds", s);
	rc_json_double(j, "mpps", (double)cl->at.count / s / 1e6);
	rc_json_u64(j, "depth", cl->at.depth);
	rc_json_str(j, "atomic_cap", rw_atomic_cap_name(cl->at.cap));
	rc_json_str(j, "byte_order", order[cl->at.order]);
	rc_json_u64(j, "first_original", cl->at.first);
	rc_json_u64(j, "expected", cl->at.expect);
	if (cl->at.have_final)
		rc_json_u64(j, "server_word", cl->at.final);
	else
		rc_json_null(j, "server_word");
	rc_json_end(j);
}
