// SPDX-License-Identifier: MIT
/*
 * hostile-03.c - the hostile client's cases against 03_file-transfer: bad
 * HELLOs and REQUESTs, and puts and gets that go wrong after ACCEPT; also
 * the helpers hostile-security.c uses too (x_connect, x_send, x_request).
 * See hostile.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <string.h>

#include "basic.h" /* BASIC_T_HELLO: 01's HELLO sent to 03 */
#include "hostile.h"

/* ------------------------------------------------------------------ */
/* 03                                                                  */
/* ------------------------------------------------------------------ */

static int x_hello(struct hc *h, int arg)
{
	struct xfer_hello hello = {
		.op = XFER_PUT, .version = XFER_PROTO_VERSION, .depth = X_DEPTH, .chunk = X_CHUNK
	};
	uint8_t p[56] = { 0 }, len = XFER_HELLO_LEN, depth = 0;

	switch (arg) {
	case 100: hello.op = 9; break;
	case 101: hello.depth = 0; break;
	case 102: hello.depth = 65535; break;
	case 103: hello.depth = 100; break; /* over the server's --max-depth 64 */
	case 104: hello.chunk = 1; break;
	case 105: hello.chunk = UINT32_MAX; break;
	case 106: hello.chunk = 32u << 20; break;		    /* over --max-chunk 16M */
	case 107: hello.chunk = 16u << 20, hello.depth = 64; break; /* 1 GiB ring */
	case 108: hello.op = XFER_GET; break;			    /* initiator depth 0 */
	}
	xfer_hello_pack(p, &hello);
	if (arg == 109)
		len = 0;
	else if (arg == 110)
		p[5] = BASIC_T_HELLO;
	else if (arg == 111)
		p[17] = 0; /* version 1's HELLO: this byte was reserved */
	else if (arg == 112)
		p[17] = 7; /* a version from the future */
	else if (arg == 113)
		p[17] = 2; /* version 2: one XXH3 stream, no chunk digests */
	else if (arg == 114)
		p[17] = 3; /* version 3: CHUNKs without addr/rkey */
	else if (arg == 115)
		p[17] = 4; /* version 4: the get's READs on the one connection */
	else if (arg == 116)
		p[17] = 5; /* version 5: no ZEROCOPY flag in the REQUEST */
	else if (arg < 100)
		bend_hdr(p, (enum bend)arg);
	return connect_bad(h, p, len, depth);
}

/*
 * SEND m (packed with our next seq), after bending it as `b` says. Each
 * message has a slot of its own after TX_LEN, never reused on this
 * connection: a SEND's buffer is the NIC's until its completion, and rxe
 * on 6.12 and 7.x reads it after ibv_post_send has returned (two CREDITs
 * packed into one buffer arrived as the second twice).
 */
int x_send(struct hc *h, const struct xfer_msg *m, enum bend b)
{
	size_t off = TX_LEN + (size_t)h->seq * XFER_MSG_MAX, len;
	uint8_t *p = (uint8_t *)h->tx->addr + off;

	if (h->seq >= X_MSGS)
		return rc_fail(&h->c.log, ENOBUFS, "more than %d messages on one connection",
			       X_MSGS);
	len = xfer_msg_pack(p, h->seq++, m);
	bend_hdr(p, b);
	return hc_send(h, off, len);
}

/* After connecting: the server's CHALLENGE, its nonce kept for a proof.
 * 0, or 1 (noted). */
static int x_challenge(struct hc *h)
{
	struct xfer_msg m;
	char err[200];

	if (hc_recv(h))
		return 1;
	if (xfer_msg_unpack(h->last, h->last_len, h->rseq++, &m, err, sizeof(err)) ||
	    m.type != XFER_T_CHALLENGE) {
		note(h, "no CHALLENGE from the server: %s", h->refused ? "refused" : err);
		return 1;
	}
	memcpy(h->nonce, m.u.challenge.nonce, XFER_NONCE_LEN);
	h->secret_required = m.u.challenge.flags & XFER_CH_F_SECRET;
	return 0;
}

/* Connect for a put (or a get, with READs allowed) of X_CHUNK x X_DEPTH,
 * and take the CHALLENGE. 0, 1 (refused or noted) or a negative errno. */
int x_connect(struct hc *h, uint8_t op)
{
	uint8_t priv[XFER_HELLO_LEN];
	int ret;

	h->hello = (struct xfer_hello){
		.op = op, .version = XFER_PROTO_VERSION, .depth = X_DEPTH, .chunk = X_CHUNK
	};
	xfer_hello_pack(priv, &h->hello);
	ret = hc_connect(h, priv, sizeof(priv), op == XFER_GET ? X_DEPTH : 0);
	if (ret)
		return ret < 0 ? ret : 1;
	return x_challenge(h);
}

/* A REQUEST for name (size: of a put) into m; with a proof under key
 * (over this connection's nonce) unless key is NULL. */
void x_make_request(struct hc *h, struct xfer_msg *m, const char *name, uint64_t size,
		    const struct xfer_secret *key)
{
	struct xfer_request *r = &m->u.request;

	*m = (struct xfer_msg){ .type = XFER_T_REQUEST };
	r->size = size;
	r->name_len = (uint16_t)strlen(name);
	memcpy(r->name, name, r->name_len);
	if (key) {
		r->flags = XFER_REQ_F_PROOF;
		xfer_proof_make(key, h->nonce, &h->hello, r, r->proof);
	}
}

/* SEND the REQUEST m and wait for ACCEPT. 0, or 1 (noted). */
int x_send_request(struct hc *h, const struct xfer_msg *m, struct xfer_accept *acc)
{
	struct xfer_msg a;
	char err[200];

	if (x_send(h, m, B_NONE) || hc_recv(h))
		return 1;
	if (xfer_msg_unpack(h->last, h->last_len, h->rseq++, &a, err, sizeof(err)) ||
	    a.type != XFER_T_ACCEPT) {
		note(h, "no ACCEPT from the server: %s", h->refused ? "refused" : err);
		return 1;
	}
	*acc = a.u.accept;
	return 0;
}

/* Send a valid REQUEST for name (with a proof if we have --secret) and
 * wait for ACCEPT. 0, or 1 (noted). */
int x_request(struct hc *h, const char *name, uint64_t size, struct xfer_accept *acc)
{
	struct xfer_msg m;

	x_make_request(h, &m, name, size, h->e->secret.set ? &h->e->secret : NULL);
	return x_send_request(h, &m, acc);
}

int x_join(struct hc *h, const struct xfer_accept *acc, const uint8_t *token)
{
	/* READs only: X_DEPTH of them, on our PD, completions on our CQ. */
	struct ibv_qp_cap cap = {
		.max_send_wr = X_DEPTH, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1
	};
	uint8_t priv[XFER_JOIN_LEN];
	int ret;

	rc_conn_init(&h->data, "hostile", h->e->verbose, h->e->timeout_ms, -1);
	ret = rc_client_resolve_beside(&h->data, &h->c, acc->data_port);
	if (!ret)
		ret = rc_create_qp_beside(&h->data, &h->c, &cap);
	xfer_join_pack(priv, token ? token : acc->token);
	if (!ret)
		ret = rc_client_connect(&h->data, priv, sizeof(priv), X_DEPTH, 0);
	if (ret == -ECONNREFUSED) {
		note(h, "JOIN rejected: %s", h->data.log.err);
		rc_conn_destroy(&h->data);
		return 1;
	}
	if (ret) {
		note(h, "the data connection failed: %s", h->data.log.err);
		rc_conn_destroy(&h->data);
		return ret;
	}
	h->joined = true;
	return 0;
}

/* A bent or wrong REQUEST as the first message. */
static int x_bad_request(struct hc *h, int arg)
{
	struct xfer_msg m = { .type = XFER_T_REQUEST };
	uint8_t *p;
	size_t len;
	int ret;

	ret = x_connect(h, XFER_PUT);
	if (ret)
		return ret < 0 ? ret : 0;
	p = h->tx->addr;
	m.u.request.size = 4096;
	m.u.request.name_len = 7;
	memcpy(m.u.request.name, "hostile", 7);
	len = xfer_msg_pack(p, 0, &m);
	switch (arg) {
	case 100: len = 100; break; /* truncated */
	case 101: /* beyond the server's receive buffer */ len = XFER_MSG_MAX + 200; break;
	case 102: p[16 + 11] = 0x80; break;		 /* unknown flag */
	case 103: p[16 + 12] = 1, p[16 + 13] = 0; break; /* name_len 256 */
	case 104:
		memset(p + 32, 'n', 256); /* no NUL at all */
		p[16 + 12] = 1, p[16 + 13] = 0;
		break;
	case 105: p[16 + 13] = 0; break;	 /* name_len 0 */
	case 106: p[16 + 16 + 200] = 'x'; break; /* padding after name */
	case 107: /* NUL inside the name */ p[16 + 16 + 3] = '\0'; break;
	case 108: /* a path, not a name */
		m.u.request.name_len = 9;
		memcpy(m.u.request.name, "../escape", 9);
		len = xfer_msg_pack(p, 0, &m);
		break;
	case 109: /* terminal escape sequences in the name */
		m.u.request.name_len = 7;
		memcpy(m.u.request.name, "\x1b[2Jboo", 7);
		len = xfer_msg_pack(p, 0, &m);
		break;
	case 110: /* DONE instead of REQUEST */
		m = (struct xfer_msg){ .type = XFER_T_DONE };
		len = xfer_msg_pack(p, 0, &m);
		break;
	case 111: /* an ERROR with control characters in its text */
		xfer_make_error(&m, EIO, "x");
		len = xfer_msg_pack(p, 0, &m);
		memcpy(p + 16 + 8, "\x1b[2J", 4);
		p[16 + 5] = 4;
		break;
	case 112:
		m.u.request.size = 1ull << 63; /* negative as off_t */
		len = xfer_msg_pack(p, 0, &m);
		break;
	default: bend_hdr(p, (enum bend)arg); break;
	}
	return hc_expect_dropped(h, hc_send(h, 0, len));
}

/* A put that goes wrong after ACCEPT: 2 chunks announced (8 KiB). */
static int x_bad_put(struct hc *h, int arg)
{
	struct xfer_msg m = { .type = XFER_T_DONE };
	struct xfer_accept acc;
	char name[40];
	uint32_t imm = xfer_imm_pack(0, 0);
	size_t len = X_CHUNK;
	uint64_t raddr;
	int ret;

	ret = x_connect(h, XFER_PUT);
	if (ret)
		return ret < 0 ? ret : 0;
	snprintf(name, sizeof(name), "hostile-put-%d", arg);
	if (x_request(h, name, arg == 105 ? X_CHUNK : 2 * X_CHUNK, &acc))
		return 0;
	raddr = acc.ring.addr;
	memset(h->tx->addr, 'h', TX_LEN);
	switch (arg) {
	case 100: imm = xfer_imm_pack(0, 3); break;		     /* wrong slot */
	case 101: imm = xfer_imm_pack(5, 0); break;		     /* wrong seq */
	case 102: len = 100; break;				     /* shorter than the chunk */
	case 103: raddr = acc.ring.addr + acc.ring.len - 100; break; /* past the ring */
	case 104:						     /* DONE before any chunk */
	case 106: /* a CREDIT: only the receiver of chunks sends those */
		if (arg == 106)
			m = (struct xfer_msg){ .type = XFER_T_CREDIT };
		ret = x_send(h, &m, B_NONE);
		goto wait;
	case 105: /* one chunk announced; we send a second one */
		ret = hc_rdma(h, IBV_WR_RDMA_WRITE_WITH_IMM, len, raddr, acc.ring.rkey, imm);
		if (!ret)
			ret = hc_recv(h); /* its CREDIT */
		if (ret)
			return 0;
		h->rseq++;
		imm = xfer_imm_pack(1, 1);
		raddr += X_CHUNK;
		break;
	case 107: /* both chunks, then DONE with a wrong checksum */
		ret = hc_rdma(h, IBV_WR_RDMA_WRITE_WITH_IMM, len, raddr, acc.ring.rkey, imm);
		if (!ret)
			ret = hc_rdma(h, IBV_WR_RDMA_WRITE_WITH_IMM, len, raddr + X_CHUNK,
				      acc.ring.rkey, xfer_imm_pack(1, 1));
		if (!ret)
			ret = hc_recv(h);
		if (!ret)
			ret = hc_recv(h);
		if (ret)
			return 0;
		m.u.done.size = 2 * X_CHUNK;
		ret = x_send(h, &m, B_NONE);
		goto wait;
	}
	ret = hc_rdma(h, IBV_WR_RDMA_WRITE_WITH_IMM, len, raddr, acc.ring.rkey, imm);
wait:
	return hc_expect_dropped(h, ret);
}

/* Connect for a get and REQUEST --file: 0 with the ACCEPT in acc, 1
 * (refused or noted) or a negative errno. */
static int x_start_get(struct hc *h, struct xfer_accept *acc)
{
	int ret = x_connect(h, XFER_GET);

	return ret ? ret : x_request(h, h->e->file, 0, acc);
}

/* A get that goes wrong: the server announces X_GET_CHUNKS chunks. */
static int x_bad_get(struct hc *h, int arg)
{
	struct xfer_msg m = { .type = XFER_T_CREDIT };
	uint8_t dg[X_GET_CHUNKS][XFER_HASH_LEN] = { { 0 } }; /* the CHUNKs' digests */
	uint64_t addr0 = 0; /* where CHUNK 0 said to READ, and with which rkey */
	uint32_t rkey0 = 0;
	struct xfer_accept acc;
	unsigned i;
	char err[200];
	int ret;

	ret = x_start_get(h, &acc);
	if (ret)
		return ret < 0 ? ret : 0;
	if (acc.size != X_GET_CHUNKS * X_CHUNK) {
		note(h, "--file must have %u bytes on the server, it has %" PRIu64,
		     X_GET_CHUNKS * X_CHUNK, acc.size);
		return 0;
	}
	/* The server announces nothing before our data connection is up. */
	if (x_join(h, &acc, NULL))
		return 0;
	/* Every case but 102 breaks the rules after the server announced
	 * every chunk (the ring holds them all) and sent DONE: its disk
	 * thread fills the slots while it reads our messages, so a message
	 * sent before that would meet the server at no fixed point. */
	for (i = 0; arg != 102 && i <= X_GET_CHUNKS; i++) {
		if (hc_recv(h))
			return 0;
		if (xfer_msg_unpack(h->last, h->last_len, h->rseq++, &m, err, sizeof(err)))
			note(h, "bad message from the server: %s", err);
		else if (m.type == XFER_T_CHUNK && m.u.chunk.seq < X_GET_CHUNKS)
			memcpy(dg[m.u.chunk.seq], m.u.chunk.hash, XFER_HASH_LEN);
		if (m.type == XFER_T_CHUNK && m.u.chunk.seq == 0) {
			addr0 = m.u.chunk.addr;
			rkey0 = m.u.chunk.rkey;
		}
	}
	m = (struct xfer_msg){ .type = XFER_T_CREDIT };
	switch (arg) {
	case 100: /* credit for a slot the chunk is not in */
		m.u.credit = (struct xfer_credit){ .seq = 0, .slot = 2 };
		ret = x_send(h, &m, B_NONE);
		break;
	case 101: /* credit out of order */
		m.u.credit = (struct xfer_credit){ .seq = 1, .slot = 1 };
		ret = x_send(h, &m, B_NONE);
		break;
	case 102: /* READ beyond the ring */
		ret = hc_rdma(h, IBV_WR_RDMA_READ, X_CHUNK, acc.ring.addr + acc.ring.len - 100,
			      acc.ring.rkey, 0);
		break;
	case 106: /* chunk 1 stored with another digest than the CHUNK's */
		for (i = 0; i < 2 && !ret; i++) {
			m.u.credit = (struct xfer_credit){ .seq = i, .slot = (uint16_t)i };
			memcpy(m.u.credit.hash, dg[i], XFER_HASH_LEN);
			m.u.credit.hash[15] ^= (uint8_t)i;
			ret = x_send(h, &m, B_NONE);
		}
		break;
	case 107: /* READ with CHUNK 0's rkey past what it covers: 1 MiB on,
		   * beyond the ring (copy) and the file's window (zero-copy) */
		ret = hc_rdma(h, IBV_WR_RDMA_READ, X_CHUNK, addr0 + (1u << 20), rkey0, 0);
		break;
	case 103: /* COMMITTED without reading anything */
		m = (struct xfer_msg){ .type = XFER_T_COMMITTED };
		ret = x_send(h, &m, B_NONE);
		break;
	case 104: /* every credit, then one more than there were chunks */
	case 105: /* every credit, then COMMITTED with a wrong checksum */
		for (i = 0; i < X_GET_CHUNKS && !ret; i++) {
			/* As a good client would: its digest is the CHUNK's. */
			m.u.credit = (struct xfer_credit){ .seq = i, .slot = (uint16_t)i };
			memcpy(m.u.credit.hash, dg[i], XFER_HASH_LEN);
			ret = x_send(h, &m, B_NONE);
		}
		if (ret)
			break;
		if (arg == 104) {
			m.u.credit = (struct xfer_credit){ .seq = X_GET_CHUNKS, .slot = 0 };
		} else {
			m = (struct xfer_msg){ .type = XFER_T_COMMITTED };
			m.u.done.size = X_GET_CHUNKS * X_CHUNK;
		}
		ret = x_send(h, &m, B_NONE);
		break;
	}
	return hc_expect_dropped(h, ret);
}

/*
 * A get's data connection done wrong. 100: a JOIN with a wrong token,
 * then none: it must be refused, and the server must give up on us after
 * its --timeout. 101: a HELLO where the JOIN belongs (refused), then the
 * right JOIN (accepted: the server waits on for it), then we leave.
 */
static int x_bad_join(struct hc *h, int arg)
{
	uint8_t token[XFER_TOKEN_LEN], hello[XFER_HELLO_LEN];
	struct xfer_accept acc;
	struct hc other = { .e = h->e };
	int ret;

	ret = x_start_get(h, &acc);
	if (ret)
		return ret < 0 ? ret : 0;
	if (arg == 100) {
		memcpy(token, acc.token, XFER_TOKEN_LEN);
		token[0] ^= 1;
		if (x_join(h, &acc, token) != 1 || !strstr(h->got, "wrong token")) {
			note(h, "%s", "a JOIN with a wrong token was not refused as such");
			return 0;
		}
		/* Wait for the server's verdict: an ERROR after its --timeout,
		 * which began at the ACCEPT; ours would end about then too. */
		{
			const struct env *e = h->e;
			struct env longer = *e;

			longer.timeout_ms = 2 * e->timeout_ms;
			h->e = &longer;
			h->c.timeout_ms = longer.timeout_ms; /* each wait's bound too */
			hc_wait_dropped(h);
			h->c.timeout_ms = e->timeout_ms;
			h->e = e;
		}
		return 0;
	}
	/* 101: the HELLO of another connection, on the data port. */
	other.hello = (struct xfer_hello){
		.op = XFER_GET, .version = XFER_PROTO_VERSION, .depth = X_DEPTH, .chunk = X_CHUNK
	};
	xfer_hello_pack(hello, &other.hello);
	rc_conn_init(&other.c, "hostile", h->e->verbose, h->e->timeout_ms, -1);
	{
		char port[8];

		snprintf(port, sizeof(port), "%u", acc.data_port);
		ret = rc_client_resolve(&other.c, h->e->host, port);
	}
	if (!ret) {
		struct ibv_qp_cap cap = {
			.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1
		};

		ret = rc_create_qp(&other.c, &cap);
	}
	if (!ret)
		ret = rc_client_connect(&other.c, hello, sizeof(hello), X_DEPTH, 0);
	if (ret != -ECONNREFUSED || !strstr(other.c.log.err, "expected a JOIN")) {
		note(h, "a HELLO on the data port was not refused as no JOIN: %s",
		     ret ? other.c.log.err : "accepted");
		rc_conn_destroy(&other.c);
		return 0;
	}
	rc_conn_destroy(&other.c);
	note(h, "%s", "a HELLO on the data port was refused");
	/* The right one is still welcome. */
	if (x_join(h, &acc, NULL))
		return 0;
	note(h, "%s", "then the JOIN was accepted; we leave");
	/* The server serves on until it sees us go: passed. */
	h->refused = true;
	return 0;
}

#define X_PROTO "protocol error: "

const struct kase cases03[] = {
	{ "no-hello", x_hello, 109, "rejected: .*(private data|shorter|bad magic|HELLO)" },
	{ "hello-bad-magic", x_hello, B_MAGIC, "rejected: bad magic" },
	{ "hello-bad-version", x_hello, B_VERSION, "rejected: protocol version 2" },
	{ "hello-unknown-flags", x_hello, B_FLAGS, "rejected: unknown flags" },
	{ "hello-wrong-type", x_hello, 110, "rejected: expected a HELLO" },
	{ "hello-truncated", x_hello, B_LEN_SHORT, "rejected: expected a HELLO of 8 bytes" },
	{ "hello-length-beyond-data", x_hello, B_LEN_HUGE, "rejected: header says 1000000" },
	{ "hello-seq", x_hello, B_SEQ, "rejected: HELLO with sequence number 77" },
	{ "hello-version-1", x_hello, 111, "rejected: the client speaks 03 protocol version 1," },
	{ "hello-version-2", x_hello, 113,
	  "rejected: the client speaks 03 protocol version 2, this server version 6" },
	{ "hello-version-3", x_hello, 114,
	  "rejected: the client speaks 03 protocol version 3, this server version 6" },
	{ "hello-version-4", x_hello, 115,
	  "rejected: the client speaks 03 protocol version 4, this server version 6" },
	{ "hello-version-5", x_hello, 116,
	  "rejected: the client speaks 03 protocol version 5, this server version 6" },
	{ "hello-version-7", x_hello, 112, "rejected: the client speaks 03 protocol version 7," },
	{ "hello-op-9", x_hello, 100, "rejected: unknown operation 9" },
	{ "hello-depth-0", x_hello, 101, "rejected: depth 0 or chunk" },
	{ "hello-depth-65535", x_hello, 102, "rejected: depth 65535 or chunk" },
	{ "hello-depth-over-limit", x_hello, 103, "rejected: depth 100 .*64" },
	{ "hello-chunk-1", x_hello, 104, "rejected: depth 4 or chunk 1 outside" },
	{ "hello-chunk-4g", x_hello, 105, "rejected: depth 4 or chunk 4294967295 outside" },
	{ "hello-chunk-over-limit", x_hello, 106, "rejected: chunk 32 MiB .*16 MiB" },
	{ "hello-ring-1g", x_hello, 107, "rejected: .*16 MiB x (depth )?64 = 1 GiB" },
	{ "get-with-initiator-depth-0", x_hello, 108, "offered an initiator depth of 0" },
	{ "request-bad-magic", x_bad_request, B_MAGIC, X_PROTO "bad message .*bad magic" },
	{ "request-bad-version", x_bad_request, B_VERSION, X_PROTO "bad message .*version 2" },
	{ "request-unknown-flags", x_bad_request, B_FLAGS, X_PROTO "bad message .*unknown flags" },
	{ "request-unknown-type", x_bad_request, B_TYPE_UNKNOWN,
	  X_PROTO "bad message .*unexpected message type 0x7e" },
	{ "request-wrong-seq", x_bad_request, B_SEQ, X_PROTO "bad message .*sequence number 77" },
	{ "request-length-short", x_bad_request, B_LEN_SHORT,
	  X_PROTO "bad message .*header says 2 body bytes" },
	{ "request-truncated", x_bad_request, 100,
	  X_PROTO "bad message .*100 bytes arrived|header says" },
	{ "request-oversized", x_bad_request, 101,
	  "(local length|local QP operation) error.*larger than the receive buffer" },
	{ "request-unknown-request-flag", x_bad_request, 102,
	  X_PROTO "bad message .*REQUEST has unknown flags" },
	{ "request-name-len-256", x_bad_request, 103,
	  X_PROTO "bad message .*name length 256 outside" },
	{ "request-name-without-nul", x_bad_request, 104,
	  X_PROTO "bad message .*name length 256 outside" },
	{ "request-name-len-0", x_bad_request, 105, X_PROTO "bad message .*name length 0 outside" },
	{ "request-garbage-after-name", x_bad_request, 106,
	  X_PROTO "bad message .*REQUEST padding is not zero" },
	{ "request-name-with-nul", x_bad_request, 107, "forbidden name .*contains a NUL byte" },
	{ "request-name-is-a-path", x_bad_request, 108, "forbidden name .*contains '/'" },
	{ "request-name-control-chars", x_bad_request, 109,
	  "forbidden name .*contains control characters" },
	{ "request-done-first", x_bad_request, 110, X_PROTO "expected a REQUEST, got DONE" },
	{ "request-error-with-escapes", x_bad_request, 111,
	  X_PROTO "bad message .*ERROR text has control characters" },
	{ "request-size-2-63", x_bad_request, 112,
	  X_PROTO "bad message .*REQUEST size .*too large" },
	{ "put-chunk-wrong-slot", x_bad_put, 100, X_PROTO "chunk 0 in slot 3, expected slot 0" },
	{ "put-chunk-wrong-seq", x_bad_put, 101, X_PROTO "chunk sequence 5, expected 0" },
	{ "put-chunk-short", x_bad_put, 102, X_PROTO "chunk 0 has 100 bytes, expected 4096" },
	{ "put-write-past-ring", x_bad_put, 103, "removed the partial file" },
	{ "put-done-before-data", x_bad_put, 104, X_PROTO "DONE after 0 of 2 chunks" },
	{ "put-chunk-past-announced-size", x_bad_put, 105,
	  X_PROTO "chunk beyond the announced 4096 bytes" },
	{ "put-credit-from-sender", x_bad_put, 106, X_PROTO "unexpected CREDIT during a put" },
	{ "put-done-wrong-checksum", x_bad_put, 107, "checksum mismatch.*nothing was stored" },
	{ "get-credit-wrong-slot", x_bad_get, 100, X_PROTO "CREDIT seq 0 slot 2, expected seq 0" },
	{ "get-credit-out-of-order", x_bad_get, 101,
	  X_PROTO "CREDIT seq 1 slot 1, expected seq 0" },
	{ "get-read-past-ring", x_bad_get, 102, "get .*(failed|flush|error)" },
	{ "get-read-past-chunk-mr", x_bad_get, 107, "get .*(failed|flush|error)" },
	{ "get-committed-without-reading", x_bad_get, 103, "the client committed 0 bytes with" },
	{ "get-credit-for-unsent-chunk", x_bad_get, 104, X_PROTO "CREDIT for chunk 4, but only 4" },
	{ "get-committed-wrong-checksum", x_bad_get, 105, "the client committed 16384 bytes with" },
	{ "get-credit-wrong-digest", x_bad_get, 106,
	  "chunk 1 .bytes 4096..8191. differs: the sender hashed xxh3-128 [0-9a-f]+, the receiver "
	  "[0-9a-f]+; nothing was stored" },
	{ "get-join-wrong-token", x_bad_join, 100,
	  "get 'hostile.dat': no data connection within 5.0 s of the ACCEPT" },
	{ "get-join-not-a-join", x_bad_join, 101,
	  "the client disconnected after 0 of 16384 bytes" },
	{ NULL, NULL, 0, NULL },
};
