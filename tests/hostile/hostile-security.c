// SPDX-License-Identifier: MIT
/*
 * hostile-security.c - hostile's cases against the access controls of the servers
 * (`hostile [--secret FILE] 03-security SERVER PORT CASE...`). Each needs
 * a server started for it (tests/e2e/06-hostile.sh and 10-security.sh):
 *   03 --secret FILE:  auth-good-proof (the control: our proofs are right),
 *                      auth-no-proof, auth-wrong-key, auth-replayed-proof,
 *                      auth-proof-for-another-request, auth-proof-too-late
 *                      (the server's --timeout below ours);
 *   03 --read-only:    put-to-read-only;  03 --write-only: get-from-write-only;
 *   --allow excluding us: not-allowed, allow-flood (50 requests at once);
 *   any 03 server:     isolation (client A uses client B's rkeys).
 * A refusal passes only if the server said why in its own words (its ERROR
 * or its reject) and never advertised its ring first.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "hostile.h"

/* The refusal must be the server's, with this text, before any ACCEPT. */
static void must_see(struct hc *h, const char *text)
{
	if (h->refused && !strstr(h->got, text)) {
		note(h, "but not with '%s'", text);
		h->refused = false;
	}
	if (h->accepted) {
		note(h, "%s", "the server sent ACCEPT (its ring's address and rkey) first");
		h->refused = false;
	}
}

/* ------------------------------------------------------------------ */
/* --secret                                                            */
/* ------------------------------------------------------------------ */

enum { A_GOOD, A_NONE, A_WRONG_KEY, A_REPLAY, A_OTHER_REQUEST, A_LATE };

/* A good proof on a first connection, which the server accepts; returns
 * that REQUEST in m, proof and all, to be sent again on the next one. */
static int replay_source(struct hc *h, struct xfer_msg *m)
{
	struct hc first = { .e = h->e };
	struct xfer_accept acc;
	int ret;

	ret = x_connect(&first, XFER_GET);
	if (!ret) {
		x_make_request(&first, m, h->e->file, 0, &h->e->secret);
		ret = x_send_request(&first, m, &acc);
	}
	if (ret)
		note(h, "the honest first connection failed: %s", first.got);
	else
		note(h, "%s", "the proof was accepted on the first connection");
	memcpy(h->nonce, first.nonce, XFER_NONCE_LEN); /* to compare with the next */
	rc_conn_destroy(&first.c);
	return ret;
}

static int x_auth(struct hc *h, int arg)
{
	static const char *const want[] = {
		[A_NONE] = "authentication failed: the request has no proof",
		[A_WRONG_KEY] = "authentication failed: wrong proof",
		[A_REPLAY] = "authentication failed: wrong proof",
		[A_OTHER_REQUEST] = "authentication failed: wrong proof",
		[A_LATE] = "authentication failed: no request within",
	};
	const struct xfer_secret *key = &h->e->secret;
	uint8_t old_nonce[XFER_NONCE_LEN], proof[XFER_PROOF_LEN];
	struct xfer_secret wrong;
	struct xfer_accept acc;
	struct xfer_msg m;
	int ret;

	if (!key->set) {
		note(h, "%s", "needs --secret FILE (the server's key)");
		return 0;
	}
	if (arg == A_REPLAY) {
		if (replay_source(h, &m))
			return 0;
		memcpy(old_nonce, h->nonce, XFER_NONCE_LEN);
	}
	/* The no-proof case is a put: nothing may appear in the directory. */
	ret = x_connect(h, arg == A_NONE ? XFER_PUT : XFER_GET);
	if (ret)
		return ret < 0 ? ret : 0;
	if (!h->secret_required)
		note(h, "%s", "the CHALLENGE does not ask for a proof");
	switch (arg) {
	case A_GOOD:
		x_make_request(h, &m, h->e->file, 0, key);
		/* Passed only if served: an ERROR (which hc_look counts as a
		 * refusal) fails the control. */
		h->refused = x_send_request(h, &m, &acc) == 0 && h->secret_required;
		if (h->refused)
			note(h, "%s", "accepted, as it should be");
		return 0;
	case A_NONE: x_make_request(h, &m, "hostile-auth-put", X_CHUNK, NULL); break;
	case A_WRONG_KEY:
		wrong = *key;
		wrong.key[wrong.len - 1] ^= 1;
		x_make_request(h, &m, h->e->file, 0, &wrong);
		break;
	case A_REPLAY:
		/* m is the first connection's REQUEST, as it was sent. */
		if (!memcmp(old_nonce, h->nonce, XFER_NONCE_LEN))
			note(h, "%s", "the server sent the same nonce twice");
		break;
	case A_OTHER_REQUEST:
		/* A proof for another name, on this very connection. */
		x_make_request(h, &m, "another-file", 0, key);
		memcpy(proof, m.u.request.proof, XFER_PROOF_LEN);
		x_make_request(h, &m, h->e->file, 0, NULL);
		m.u.request.flags = XFER_REQ_F_PROOF;
		memcpy(m.u.request.proof, proof, XFER_PROOF_LEN);
		break;
	case A_LATE:
		/* The right proof, after our --timeout (longer than the
		 * server's): it must have given up on us by then. */
		x_make_request(h, &m, h->e->file, 0, key);
		usleep((useconds_t)h->e->timeout_ms * 1000u);
		break;
	}
	if (x_send(h, &m, B_NONE))
		note(h, "our SEND failed: %s", h->c.log.err);
	hc_wait_dropped(h);
	must_see(h, want[arg]);
	return 0;
}

/* ------------------------------------------------------------------ */
/* --read-only, --write-only, --allow                                  */
/* ------------------------------------------------------------------ */

enum { R_READ_ONLY, R_WRITE_ONLY, R_NOT_ALLOWED };

/* A connect request the server must reject, with its reason. */
static int x_refused_connect(struct hc *h, int arg)
{
	static const struct {
		uint8_t op;
		const char *text;
	} r[] = {
		[R_READ_ONLY] = { XFER_PUT, "this server is read-only (--read-only)" },
		[R_WRITE_ONLY] = { XFER_GET, "this server is write-only (--write-only)" },
		[R_NOT_ALLOWED] = { XFER_GET, "rejected the connection: not allowed" },
	};
	int ret = x_connect(h, r[arg].op);

	if (ret < 0)
		return ret;
	if (ret == 0) {
		note(h, "%s", "the server ACCEPTED the connection");
		hc_wait_dropped(h);
	}
	must_see(h, r[arg].text);
	return 0;
}

/* n connect requests one after the other, as fast as we can: each must be
 * refused as not allowed (the server's log is rate-limited meanwhile). */
static int x_flood(struct hc *h, int n)
{
	uint64_t t0 = rc_now_us();
	int i, ret, refused = 0;

	for (i = 0; i < n; i++) {
		struct hc one = { .e = h->e };

		ret = x_connect(&one, XFER_GET);
		if (ret == 1 && one.refused && strstr(one.got, "not allowed"))
			refused++;
		else if (refused == i) /* note the first oddity only */
			note(h, "request %d: %s", i, ret < 0 ? one.c.log.err : one.got);
		rc_conn_destroy(&one.c);
	}
	note(h, "%d of %d connection requests refused as not allowed in %.2f s", refused, n,
	     (double)(rc_now_us() - t0) / 1e6);
	h->refused = refused == n;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Isolation: client A against client B's memory                       */
/* ------------------------------------------------------------------ */

/* Client B's data moves through tx at this offset; our SENDs use 0. */
#define ISO_DATA X_CHUNK

/* One-sided op of X_CHUNK bytes from/to tx at ISO_DATA (signalled). */
static int iso_post(struct hc *h, enum ibv_wr_opcode op, uint64_t raddr, uint32_t rkey,
		    uint32_t imm)
{
	uint64_t id = WR_TX + h->next_tx++;

	/* A READ on the data connection, once joined (03's get). */
	return rc_post_rdma(hc_conn_for(h, op), op, h->tx, ISO_DATA, X_CHUNK, raddr, rkey, imm, id,
			    true);
}

/* The next message from the server, decoded, of type `type`. 0 or -1. */
static int iso_msg(struct hc *h, uint8_t type, struct xfer_msg *m)
{
	char err[200];

	if (hc_recv(h))
		return -1;
	if (xfer_msg_unpack(h->last, h->last_len, h->rseq++, m, err, sizeof(err))) {
		note(h, "bad message from the server: %s", err);
		return -1;
	}
	if (m->type != type) {
		note(h, "%s from the server, expected %s", xfer_type_str(m->type),
		     xfer_type_str(type));
		return -1;
	}
	return 0;
}

/* Our last work request (ret: what posting it returned) must succeed. Its
 * wr_id is taken here, after the post: not as an argument beside it. */
static int iso_ok(struct hc *h, int ret, const char *what)
{
	enum ibv_wc_status st = IBV_WC_GENERAL_ERR;
	uint64_t id = WR_TX + h->next_tx - 1;

	if (!ret)
		ret = hc_wait_own(h, id, &st);
	if (!ret && st == IBV_WC_SUCCESS)
		return 0;
	note(h, "%s failed: %s", what, ret ? h->c.log.err : ibv_wc_status_str(st));
	return -1;
}

/* B's get, to the end, with the rkey A was refused: every chunk READ,
 * checked against its CHUNK's digest, credited with our digest, and
 * COMMITTED with the top digest. data receives the file. */
static int iso_get(struct hc *b, uint8_t *data)
{
	uint8_t digest[XFER_HASH_LEN], dg[X_GET_CHUNKS][XFER_HASH_LEN];
	uint16_t slot[X_GET_CHUNKS];
	uint64_t addr[X_GET_CHUNKS]; /* where each CHUNK says to READ it */
	uint32_t rkey[X_GET_CHUNKS];
	struct xfer_hash hash;
	struct xfer_msg m;
	unsigned k;

	/* The ring holds the whole file: CHUNK 0..3 come at once, then DONE. */
	for (k = 0; k < X_GET_CHUNKS; k++) {
		if (iso_msg(b, XFER_T_CHUNK, &m))
			return -1;
		if (m.u.chunk.seq != k || m.u.chunk.len != X_CHUNK || m.u.chunk.slot >= X_DEPTH) {
			note(b, "odd CHUNK %u", k);
			return -1;
		}
		slot[k] = m.u.chunk.slot;
		addr[k] = m.u.chunk.addr;
		rkey[k] = m.u.chunk.rkey;
		memcpy(dg[k], m.u.chunk.hash, XFER_HASH_LEN);
	}
	if (iso_msg(b, XFER_T_DONE, &m) || xfer_top_start(&hash))
		return -1;
	for (k = 0; k < X_GET_CHUNKS; k++) {
		if (iso_ok(b, iso_post(b, IBV_WR_RDMA_READ, addr[k], rkey[k], 0), "B's own READ")) {
			xfer_hash_free(&hash);
			return -1;
		}
		memcpy(data + k * X_CHUNK, (uint8_t *)b->tx->addr + ISO_DATA, X_CHUNK);
		xfer_chunk_digest(data + k * X_CHUNK, X_CHUNK, digest);
		if (memcmp(digest, dg[k], XFER_HASH_LEN)) {
			note(b, "B's chunk %u differs from the server's digest", k);
			xfer_hash_free(&hash);
			return -1;
		}
		xfer_top_add(&hash, digest);
	}
	xfer_top_end(&hash, digest);
	if (memcmp(digest, m.u.done.hash, XFER_HASH_LEN)) {
		note(b, "%s", "B's data differs from the server's checksum");
		return -1;
	}
	for (k = 0; k < X_GET_CHUNKS; k++) {
		struct xfer_msg cr = { .type = XFER_T_CREDIT };

		cr.u.credit = (struct xfer_credit){ .seq = k, .slot = slot[k] };
		memcpy(cr.u.credit.hash, dg[k], XFER_HASH_LEN);
		/* Each SEND is packed in the same buffer: one at a time. */
		if (iso_ok(b, x_send(b, &cr, B_NONE), "B's CREDIT"))
			return -1;
	}
	m = (struct xfer_msg){ .type = XFER_T_COMMITTED };
	m.u.done.size = X_GET_CHUNKS * X_CHUNK;
	memcpy(m.u.done.hash, digest, XFER_HASH_LEN);
	/* Delivered (acknowledged) before we go: the server then logs it. */
	return iso_ok(b, x_send(b, &m, B_NONE), "B's COMMITTED");
}

/* B's put of data, to the end: every chunk WRITTEN with the rkey A was
 * refused, credited with the server's digest of it (which must be ours),
 * then DONE with the top digest and the server's COMMITTED. */
static int iso_put(struct hc *b, const struct xfer_accept *acc, const uint8_t *data)
{
	uint8_t d[XFER_HASH_LEN];
	struct xfer_hash hash;
	struct xfer_msg m;
	unsigned k;

	if (xfer_top_start(&hash))
		return -1;
	for (k = 0; k < X_GET_CHUNKS; k++) {
		memcpy((uint8_t *)b->tx->addr + ISO_DATA, data + k * X_CHUNK, X_CHUNK);
		xfer_chunk_digest(data + k * X_CHUNK, X_CHUNK, d);
		xfer_top_add(&hash, d);
		if (iso_ok(b,
			   iso_post(b, IBV_WR_RDMA_WRITE_WITH_IMM, acc->ring.addr + k * X_CHUNK,
				    acc->ring.rkey, xfer_imm_pack(k, (uint16_t)k)),
			   "B's own WRITE") ||
		    iso_msg(b, XFER_T_CREDIT, &m) || memcmp(m.u.credit.hash, d, XFER_HASH_LEN)) {
			note(b, "B's chunk %u: no CREDIT, or another digest in it", k);
			xfer_hash_free(&hash);
			return -1;
		}
	}
	m = (struct xfer_msg){ .type = XFER_T_DONE };
	m.u.done.size = X_GET_CHUNKS * X_CHUNK;
	xfer_top_end(&hash, m.u.done.hash);
	if (x_send(b, &m, B_NONE) || iso_msg(b, XFER_T_COMMITTED, &m))
		return -1;
	return 0;
}

/*
 * The attack: from A's connection, op against B's ring. True if the server
 * refused it: a remote access error, or, seen on a busy host, the server's
 * disconnect before any completion (our request then flushed): A does
 * nothing else the server could drop it for within the attack's
 * milliseconds.
 * *what says which it was, for the log.
 */
static bool iso_attack(struct hc *a, uint8_t op, enum ibv_wr_opcode wr,
		       const struct xfer_accept *b_acc, const char **what)
{
	enum ibv_wc_status st = IBV_WC_GENERAL_ERR;

	struct xfer_accept own;

	*what = "not attempted";
	if (x_connect(a, op)) {
		note(a, "%s", "A could not connect");
		return false;
	}
	/* A get's READs go on its data connection: A opens its own, on its
	 * own session's PD, and READs B's ring from there. */
	if (op == XFER_GET && (x_request(a, a->e->file, 0, &own) || x_join(a, &own, NULL))) {
		note(a, "%s", "A could not open its data connection");
		return false;
	}
	memset((uint8_t *)a->tx->addr + ISO_DATA, 'A', X_CHUNK);
	if (iso_post(a, wr, b_acc->ring.addr, b_acc->ring.rkey, 0) ||
	    hc_wait_own(a, WR_TX + a->next_tx - 1, &st)) {
		*what = "no completion";
		note(a, "%s", a->c.log.err);
		return false;
	}
	if (st == IBV_WC_WR_FLUSH_ERR && a->c.peer_disconnected) {
		*what = "refused: the server dropped A first (the request flushed)";
		return true;
	}
	*what = ibv_wc_status_str(st);
	return st == IBV_WC_REM_ACCESS_ERR;
}

/*
 * B (two connections: a get, whose server ring may be READ, and a put,
 * whose ring may be WRITTEN) learns the server's rings from its ACCEPTs.
 * A, on connections of its own to the same server, then READs and WRITEs
 * those rings with B's addresses and rkeys: the server's NIC must refuse
 * (IBV_WC_REM_ACCESS_ERR), because B's rings are registered in B's
 * connection's PD and an rkey is good only on QPs of its PD. Then B
 * completes both transfers with the same rkeys, verified end to end, and
 * uploads what it downloaded as "isolation-put" (the test compares it).
 */
static int x_isolation(struct hc *h, int arg)
{
	static uint8_t data[X_GET_CHUNKS * X_CHUNK];
	struct hc b1 = { .e = h->e }, b2 = { .e = h->e }, a2 = { .e = h->e };
	bool read_refused, write_refused, b_ok = false;
	struct xfer_accept acc1, acc2;
	const char *what;
	uint64_t t0;

	(void)arg;
	if (x_connect(&b1, XFER_GET) || x_request(&b1, h->e->file, 0, &acc1) ||
	    x_join(&b1, &acc1, NULL) || x_connect(&b2, XFER_PUT) ||
	    x_request(&b2, "isolation-put", sizeof(data), &acc2)) {
		note(h, "B could not start: %s | %s", b1.got, b2.got);
		goto out;
	}
	/* B's transfers wait meanwhile: the server's --timeout must cover this. */
	t0 = rc_now_us();
	read_refused = iso_attack(h, XFER_GET, IBV_WR_RDMA_READ, &acc1, &what);
	note(h, "A's READ of B's ring (rkey 0x%x): %s", acc1.ring.rkey, what);
	write_refused = iso_attack(&a2, XFER_PUT, IBV_WR_RDMA_WRITE, &acc2, &what);
	note(h, "A's WRITE to B's ring (rkey 0x%x): %s", acc2.ring.rkey, what);
	note(h, "(both in %.0f ms)", (double)(rc_now_us() - t0) / 1e3);
	if (a2.got[0])
		note(h, "(A's second connection: %s)", a2.got);
	if (iso_get(&b1, data) || iso_put(&b2, &acc2, data)) {
		note(h, "B's transfers failed: %s | %s", b1.got, b2.got);
		goto out;
	}
	note(h, "%s", "B's get and put completed, checksums verified");
	b_ok = true;
	h->refused = read_refused && write_refused && b_ok;
out:
	hc_destroy(&a2);
	hc_destroy(&b2);
	hc_destroy(&b1);
	return 0;
}

const struct kase cases03sec[] = {
	{ "auth-good-proof", x_auth, A_GOOD, NULL },
	{ "auth-no-proof", x_auth, A_NONE,
	  "put 'hostile-auth-put': authentication failed: the request has no proof" },
	{ "auth-wrong-key", x_auth, A_WRONG_KEY, "authentication failed: wrong proof" },
	{ "auth-replayed-proof", x_auth, A_REPLAY, "authentication failed: wrong proof" },
	{ "auth-proof-for-another-request", x_auth, A_OTHER_REQUEST,
	  "authentication failed: wrong proof" },
	{ "auth-proof-too-late", x_auth, A_LATE,
	  "authentication failed: no request within [0-9.]+ s of the challenge" },
	{ "put-to-read-only", x_refused_connect, R_READ_ONLY,
	  "rejected: this server is read-only \\(--read-only\\): put is refused" },
	{ "get-from-write-only", x_refused_connect, R_WRITE_ONLY,
	  "rejected: this server is write-only \\(--write-only\\): get is refused" },
	{ "not-allowed", x_refused_connect, R_NOT_ALLOWED,
	  "not allowed \\(no --allow prefix matches\\); refused" },
	{ "allow-flood", x_flood, 50, NULL },
	{ "isolation", x_isolation, 0, NULL },
	{ NULL, NULL, 0, NULL },
};
