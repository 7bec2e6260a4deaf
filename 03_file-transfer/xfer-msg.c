// SPDX-License-Identifier: MIT
/*
 * xfer-msg.c - 03's wire messages: packing, unpacking and validating each
 * one, and the checks that a chunk, its immediate or a CREDIT is the one
 * expected next. See xfer-msg.h.
 */
#define _GNU_SOURCE
#include "xfer-msg.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "xfer-hash.h" /* xfer_hash_hex: for xfer_msg_describe */
#include "xfer-name.h" /* xfer_quote: likewise */

/* ------------------------------------------------------------------ */
/* Byte order: every field is big-endian (rc_put*, rc_get* of         */
/* rdma-common.h, which need no alignment).                             */
/* ------------------------------------------------------------------ */

static bool all_zero(const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* ------------------------------------------------------------------ */
/* Messages                                                            */
/* ------------------------------------------------------------------ */

const char *xfer_type_str(uint8_t type)
{
	switch (type) {
	case XFER_T_HELLO: return "HELLO";
	case XFER_T_REQUEST: return "REQUEST";
	case XFER_T_ACCEPT: return "ACCEPT";
	case XFER_T_ERROR: return "ERROR";
	case XFER_T_CHUNK: return "CHUNK";
	case XFER_T_CREDIT: return "CREDIT";
	case XFER_T_DONE: return "DONE";
	case XFER_T_COMMITTED: return "COMMITTED";
	case XFER_T_CHALLENGE: return "CHALLENGE";
	case XFER_T_JOIN: return "JOIN";
	default: return "unknown";
	}
}

size_t xfer_hello_pack(uint8_t buf[XFER_HELLO_LEN], const struct xfer_hello *h)
{
	uint8_t *b = buf + sizeof(struct rc_hdr);

	rc_hdr_pack(buf, XFER_T_HELLO, XFER_HELLO_BODY, 0);
	b[0] = h->op;
	b[1] = h->version;
	rc_put16(b + 2, h->depth);
	rc_put32(b + 4, h->chunk);
	return XFER_HELLO_LEN;
}

int xfer_hello_unpack(const void *priv, size_t len, struct xfer_hello *h, char *err, size_t errlen)
{
	struct rc_msg m;
	int ret;

	ret = rc_hello_expect(priv, len, XFER_T_HELLO, XFER_HELLO_BODY, &m, err, errlen);
	if (ret)
		return ret;
	h->op = m.body[0];
	h->version = m.body[1];
	h->depth = rc_get16(m.body + 2);
	h->chunk = rc_get32(m.body + 4);
	/* Version 1 had a reserved zero byte here. An old peer must get a
	 * clear answer, not a protocol error later on. */
	if (h->version != XFER_PROTO_VERSION) {
		snprintf(err, errlen,
			 "the client speaks 03 protocol version %u, this server version %d: use "
			 "rdma-client and rdma-server of one release",
			 h->version ? h->version : 1, XFER_PROTO_VERSION);
		return -EPROTO;
	}
	if (h->op != XFER_PUT && h->op != XFER_GET)
		return rc_bad_msg(err, errlen, "unknown operation %u (1 put, 2 get)", h->op);
	if (h->depth < 1 || h->depth > XFER_MAX_DEPTH || h->chunk < XFER_MIN_CHUNK ||
	    h->chunk > XFER_MAX_CHUNK) {
		snprintf(err, errlen, "depth %u or chunk %u outside 1..%d and %u..%u", h->depth,
			 h->chunk, XFER_MAX_DEPTH, XFER_MIN_CHUNK, XFER_MAX_CHUNK);
		return -ERANGE;
	}
	return 0;
}

size_t xfer_join_pack(uint8_t buf[XFER_JOIN_LEN], const uint8_t token[XFER_TOKEN_LEN])
{
	rc_hdr_pack(buf, XFER_T_JOIN, XFER_JOIN_BODY, 0);
	memcpy(buf + sizeof(struct rc_hdr), token, XFER_TOKEN_LEN);
	return XFER_JOIN_LEN;
}

int xfer_join_unpack(const void *priv, size_t len, uint8_t token[XFER_TOKEN_LEN], char *err,
		     size_t errlen)
{
	struct rc_msg m;
	int ret;

	ret = rc_priv_unpack(priv, len, &m, err, errlen);
	if (ret)
		return ret;
	if (m.type != XFER_T_JOIN || m.length != XFER_JOIN_BODY || m.seq != 0)
		return rc_bad_msg(
			err, errlen,
			"expected a JOIN of %d bytes, got type 0x%02x of %u bytes, seq %u",
			XFER_JOIN_BODY, m.type, m.length, m.seq);
	memcpy(token, m.body, XFER_TOKEN_LEN);
	return 0;
}

/* The messages of the control channel, each with its body length. */
static const struct rc_msg_kind ctl_kinds[] = {
	{ XFER_T_REQUEST, XFER_REQUEST_BODY, "REQUEST" },
	{ XFER_T_ACCEPT, XFER_ACCEPT_BODY, "ACCEPT" },
	{ XFER_T_ERROR, XFER_ERROR_BODY, "ERROR" },
	{ XFER_T_CHUNK, XFER_CHUNK_BODY, "CHUNK" },
	{ XFER_T_CREDIT, XFER_CREDIT_BODY, "CREDIT" },
	{ XFER_T_DONE, XFER_DONE_BODY, "DONE" },
	{ XFER_T_COMMITTED, XFER_DONE_BODY, "COMMITTED" },
	{ XFER_T_CHALLENGE, XFER_CHALLENGE_BODY, "CHALLENGE" },
};
#define N_KINDS (sizeof(ctl_kinds) / sizeof(ctl_kinds[0]))

/* Body length of each type (0: not a message of the control channel). */
static uint32_t body_len(uint8_t type)
{
	for (size_t i = 0; i < N_KINDS; i++)
		if (ctl_kinds[i].type == type)
			return ctl_kinds[i].body_len;
	return 0;
}

size_t xfer_msg_pack(void *buf, uint32_t seq, const struct xfer_msg *m)
{
	uint32_t n = body_len(m->type);
	uint8_t *b = (uint8_t *)buf + sizeof(struct rc_hdr);
	size_t len;

	rc_hdr_pack(buf, m->type, n, seq);
	memset(b, 0, n); /* padding and unused bytes go out as zeros */
	switch (m->type) {
	case XFER_T_REQUEST:
		rc_put64(b, m->u.request.size);
		rc_put32(b + 8, m->u.request.flags);
		len = m->u.request.name_len > XFER_NAME_MAX ? XFER_NAME_MAX : m->u.request.name_len;
		rc_put16(b + 12, (uint16_t)len);
		memcpy(b + 16, m->u.request.name, len);
		memcpy(b + 272, m->u.request.proof, XFER_PROOF_LEN);
		break;
	case XFER_T_ACCEPT:
		rc_put64(b, m->u.accept.size);
		rc_remote_buf_pack(b + 8, &m->u.accept.ring);
		rc_put16(b + 24, m->u.accept.rd_depth);
		rc_put16(b + 26, m->u.accept.flags);
		rc_put16(b + 28, m->u.accept.data_port);
		memcpy(b + 32, m->u.accept.token, XFER_TOKEN_LEN);
		break;
	case XFER_T_ERROR:
		rc_put32(b, m->u.error.code);
		len = strnlen(m->u.error.text, XFER_ERR_TEXT);
		rc_put16(b + 4, (uint16_t)len);
		memcpy(b + 8, m->u.error.text, len);
		break;
	case XFER_T_CHUNK:
		rc_put64(b, m->u.chunk.seq);
		rc_put64(b + 8, m->u.chunk.offset);
		rc_put32(b + 16, m->u.chunk.len);
		rc_put16(b + 20, m->u.chunk.slot);
		memcpy(b + 24, m->u.chunk.hash, XFER_HASH_LEN);
		rc_put64(b + 40, m->u.chunk.addr);
		rc_put32(b + 48, m->u.chunk.rkey);
		break;
	case XFER_T_CREDIT:
		rc_put64(b, m->u.credit.seq);
		rc_put16(b + 8, m->u.credit.slot);
		memcpy(b + 16, m->u.credit.hash, XFER_HASH_LEN);
		rc_put64(b + 32, m->u.credit.addr);
		rc_put32(b + 40, m->u.credit.rkey);
		break;
	case XFER_T_DONE:
	case XFER_T_COMMITTED:
		rc_put64(b, m->u.done.size);
		memcpy(b + 8, m->u.done.hash, XFER_HASH_LEN);
		break;
	case XFER_T_CHALLENGE:
		rc_put16(b, m->u.challenge.version);
		rc_put16(b + 2, m->u.challenge.flags);
		memcpy(b + 8, m->u.challenge.nonce, XFER_NONCE_LEN);
		break;
	default: break;
	}
	return sizeof(struct rc_hdr) + n;
}

/* Printable text: no control characters (bytes >= 0x80 are fine: UTF-8). */
static bool printable(const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] < 0x20 || p[i] == 0x7f)
			return false;
	return true;
}

int xfer_msg_unpack(const void *buf, size_t byte_len, uint32_t want_seq, struct xfer_msg *m,
		    char *err, size_t errlen)
{
	struct rc_msg h;
	const uint8_t *b;
	uint16_t n;
	int ret;

	/* Header, a known type, its exact body size, the expected seq. */
	ret = rc_msg_expect(buf, byte_len, ctl_kinds, N_KINDS, want_seq, &h, err, errlen);
	if (ret)
		return ret;
	memset(m, 0, sizeof(*m));
	m->type = h.type;
	m->seq = h.seq;
	b = h.body;
	switch (h.type) {
	case XFER_T_REQUEST:
		m->u.request.size = rc_get64(b);
		m->u.request.flags = rc_get32(b + 8);
		n = rc_get16(b + 12);
		if (m->u.request.size > XFER_MAX_SIZE)
			return rc_bad_msg(err, errlen, "REQUEST size %" PRIu64 " is too large",
					  m->u.request.size);
		if (m->u.request.flags & ~(XFER_REQ_F_FORCE | XFER_REQ_F_PROOF | XFER_REQ_F_COPY |
					   XFER_REQ_F_DIRECT | XFER_REQ_F_ZEROCOPY))
			return rc_bad_msg(err, errlen, "REQUEST has unknown flags 0x%x",
					  m->u.request.flags);
		if ((m->u.request.flags & XFER_REQ_F_COPY) &&
		    (m->u.request.flags & XFER_REQ_F_ZEROCOPY))
			return rc_bad_msg(err, errlen, "%s",
					  "REQUEST asks for both the copy and the zero-copy path");
		if (n < 1 || n > XFER_NAME_MAX)
			return rc_bad_msg(err, errlen, "REQUEST name length %u outside 1..%d", n,
					  XFER_NAME_MAX);
		if (!all_zero(b + 14, 2) || !all_zero(b + 16 + n, 256 - (size_t)n))
			return rc_bad_msg(err, errlen, "%s", "REQUEST padding is not zero");
		/* The name's content (NUL, '/', ...) is judged by
		 * xfer_name_check, so the server can answer with a clear
		 * refusal rather than a protocol error. */
		m->u.request.name_len = n;
		memcpy(m->u.request.name, b + 16, n);
		m->u.request.name[n] = '\0';
		/* Whether the proof is right is the server's question
		 * (auth.c); here only that an absent one is all zeros. */
		if (!(m->u.request.flags & XFER_REQ_F_PROOF) && !all_zero(b + 272, XFER_PROOF_LEN))
			return rc_bad_msg(err, errlen, "%s",
					  "REQUEST has a proof but no proof flag");
		memcpy(m->u.request.proof, b + 272, XFER_PROOF_LEN);
		break;
	case XFER_T_ACCEPT:
		m->u.accept.size = rc_get64(b);
		rc_remote_buf_unpack(b + 8, &m->u.accept.ring);
		m->u.accept.rd_depth = rc_get16(b + 24);
		m->u.accept.flags = rc_get16(b + 26);
		m->u.accept.data_port = rc_get16(b + 28);
		memcpy(m->u.accept.token, b + 32, XFER_TOKEN_LEN);
		if (m->u.accept.size > XFER_MAX_SIZE)
			return rc_bad_msg(err, errlen, "ACCEPT size %" PRIu64 " is too large",
					  m->u.accept.size);
		if (m->u.accept.flags & ~(XFER_ACC_F_ZEROCOPY | XFER_ACC_F_INPLACE))
			return rc_bad_msg(err, errlen, "ACCEPT has unknown flags 0x%x",
					  m->u.accept.flags);
		if (!all_zero(b + 30, 2))
			return rc_bad_msg(err, errlen, "%s", "ACCEPT padding is not zero");
		break;
	case XFER_T_ERROR:
		m->u.error.code = rc_get32(b);
		n = rc_get16(b + 4);
		if (n > XFER_ERR_TEXT || !all_zero(b + 6, 2) ||
		    !all_zero(b + 8 + n, XFER_ERR_TEXT - (size_t)n))
			return rc_bad_msg(err, errlen, "%s",
					  "malformed ERROR (text length or padding)");
		if (!printable(b + 8, n))
			return rc_bad_msg(err, errlen, "%s", "ERROR text has control characters");
		memcpy(m->u.error.text, b + 8, n);
		m->u.error.text[n] = '\0';
		break;
	case XFER_T_CHUNK:
		m->u.chunk.seq = rc_get64(b);
		m->u.chunk.offset = rc_get64(b + 8);
		m->u.chunk.len = rc_get32(b + 16);
		m->u.chunk.slot = rc_get16(b + 20);
		if (!all_zero(b + 22, 2))
			return rc_bad_msg(err, errlen, "%s", "CHUNK padding is not zero");
		memcpy(m->u.chunk.hash, b + 24, XFER_HASH_LEN);
		m->u.chunk.addr = rc_get64(b + 40);
		m->u.chunk.rkey = rc_get32(b + 48);
		if (!all_zero(b + 52, 4))
			return rc_bad_msg(err, errlen, "%s", "CHUNK padding is not zero");
		/* Where it is the server's business; that it does not wrap
		 * around the address space, ours (the READ's end). */
		if (m->u.chunk.addr + m->u.chunk.len < m->u.chunk.addr)
			return rc_bad_msg(err, errlen,
					  "CHUNK at 0x%" PRIx64 " of %u bytes wraps around",
					  m->u.chunk.addr, m->u.chunk.len);
		break;
	case XFER_T_CREDIT:
		m->u.credit.seq = rc_get64(b);
		m->u.credit.slot = rc_get16(b + 8);
		if (!all_zero(b + 10, 6) || !all_zero(b + 44, 4))
			return rc_bad_msg(err, errlen, "%s", "CREDIT padding is not zero");
		memcpy(m->u.credit.hash, b + 16, XFER_HASH_LEN);
		m->u.credit.addr = rc_get64(b + 32);
		m->u.credit.rkey = rc_get32(b + 40);
		break;
	case XFER_T_DONE:
	case XFER_T_COMMITTED:
		m->u.done.size = rc_get64(b);
		memcpy(m->u.done.hash, b + 8, XFER_HASH_LEN);
		if (m->u.done.size > XFER_MAX_SIZE)
			return rc_bad_msg(err, errlen, "%s size %" PRIu64 " is too large",
					  xfer_type_str(h.type), m->u.done.size);
		break;
	case XFER_T_CHALLENGE:
		m->u.challenge.version = rc_get16(b);
		m->u.challenge.flags = rc_get16(b + 2);
		memcpy(m->u.challenge.nonce, b + 8, XFER_NONCE_LEN);
		if (m->u.challenge.version != XFER_PROTO_VERSION)
			return rc_bad_msg(err, errlen,
					  "CHALLENGE of 03 protocol version %u, expected %d",
					  m->u.challenge.version, XFER_PROTO_VERSION);
		if (m->u.challenge.flags & ~XFER_CH_F_SECRET)
			return rc_bad_msg(err, errlen, "CHALLENGE has unknown flags 0x%x",
					  m->u.challenge.flags);
		if (!all_zero(b + 4, 4))
			return rc_bad_msg(err, errlen, "%s", "CHALLENGE padding is not zero");
		break;
	}
	return 0;
}

void xfer_msg_describe(const struct xfer_msg *m, char *out, size_t outlen)
{
	char q[400], hex[2 * XFER_HASH_LEN + 1];
	const char *t = xfer_type_str(m->type);

	switch (m->type) {
	case XFER_T_REQUEST:
		xfer_quote(q, sizeof(q), m->u.request.name, m->u.request.name_len);
		snprintf(out, outlen, "%s '%s' size=%" PRIu64 " flags=0x%x", t, q,
			 m->u.request.size, m->u.request.flags);
		break;
	case XFER_T_CHALLENGE:
		/* The nonce is no secret, but a trace has no use for it. */
		snprintf(out, outlen, "%s version=%u flags=0x%x%s", t, m->u.challenge.version,
			 m->u.challenge.flags,
			 m->u.challenge.flags & XFER_CH_F_SECRET ? " (a proof is required)" : "");
		break;
	case XFER_T_ACCEPT:
		snprintf(out, outlen,
			 "%s size=%" PRIu64 " rd_depth=%u data_port=%u ring addr=0x%" PRIx64
			 " rkey=0x%x len=%u%s",
			 t, m->u.accept.size, m->u.accept.rd_depth, m->u.accept.data_port,
			 m->u.accept.ring.addr, m->u.accept.ring.rkey, m->u.accept.ring.len,
			 m->u.accept.flags & XFER_ACC_F_ZEROCOPY ? " (zero-copy source)" : "");
		break;
	case XFER_T_ERROR:
		snprintf(out, outlen, "%s code=%u '%s'", t, m->u.error.code, m->u.error.text);
		break;
	case XFER_T_CHUNK:
		xfer_hash_hex(m->u.chunk.hash, hex);
		snprintf(out, outlen,
			 "%s seq=%" PRIu64 " slot=%u offset=%" PRIu64 " len=%u addr=0x%" PRIx64
			 " rkey=0x%x " XFER_HASH_NAME "=%s",
			 t, m->u.chunk.seq, m->u.chunk.slot, m->u.chunk.offset, m->u.chunk.len,
			 m->u.chunk.addr, m->u.chunk.rkey, hex);
		break;
	case XFER_T_CREDIT:
		xfer_hash_hex(m->u.credit.hash, hex);
		snprintf(out, outlen, "%s seq=%" PRIu64 " slot=%u " XFER_HASH_NAME "=%s", t,
			 m->u.credit.seq, m->u.credit.slot, hex);
		if (m->u.credit.addr || m->u.credit.rkey)
			snprintf(out + strlen(out), outlen - strlen(out),
				 " next addr=0x%" PRIx64 " rkey=0x%x", m->u.credit.addr,
				 m->u.credit.rkey);
		break;
	case XFER_T_DONE:
	case XFER_T_COMMITTED:
		xfer_hash_hex(m->u.done.hash, hex);
		snprintf(out, outlen, "%s size=%" PRIu64 " " XFER_HASH_NAME "=%s", t,
			 m->u.done.size, hex);
		break;
	default: snprintf(out, outlen, "%s (type 0x%02x)", t, m->type); break;
	}
}

void xfer_make_error(struct xfer_msg *m, int code, const char *fmt, ...)
{
	va_list ap;
	size_t i;

	memset(m, 0, sizeof(*m));
	m->type = XFER_T_ERROR;
	m->u.error.code = code > 0 ? (uint32_t)code : EIO;
	va_start(ap, fmt);
	vsnprintf(m->u.error.text, sizeof(m->u.error.text), fmt, ap);
	va_end(ap);
	/* The peer refuses control characters: replace any (say from an
	 * strerror text or a quoted name gone wrong) before they go out. */
	for (i = 0; m->u.error.text[i]; i++)
		if ((unsigned char)m->u.error.text[i] < 0x20 || m->u.error.text[i] == 0x7f)
			m->u.error.text[i] = '?';
}

/* ------------------------------------------------------------------ */
/* Chunks                                                              */
/* ------------------------------------------------------------------ */

uint64_t xfer_nchunks(uint64_t size, uint32_t chunk)
{
	return size / chunk + (size % chunk != 0);
}

uint32_t xfer_chunk_len(uint64_t size, uint32_t chunk, uint64_t seq)
{
	uint64_t off;

	if (seq >= xfer_nchunks(size, chunk))
		return 0;
	/* No overflow: seq * chunk <= size < 2^63. */
	off = seq * chunk;
	return size - off < chunk ? (uint32_t)(size - off) : chunk;
}

uint32_t xfer_imm_pack(uint64_t seq, uint16_t slot)
{
	return (uint32_t)(seq & 0xffffffu) << 8 | (uint8_t)slot;
}

void xfer_imm_unpack(uint32_t imm, uint32_t *seq24, uint16_t *slot)
{
	*seq24 = imm >> 8;
	*slot = imm & 0xffu;
}

int xfer_check_imm(uint32_t imm, uint32_t byte_len, uint64_t want_seq, uint64_t size,
		   uint32_t chunk, uint16_t depth, char *err, size_t errlen)
{
	uint32_t seq24;
	uint16_t slot;

	xfer_imm_unpack(imm, &seq24, &slot);
	if (want_seq >= xfer_nchunks(size, chunk))
		return rc_bad_msg(err, errlen, "chunk beyond the announced %" PRIu64 " bytes",
				  size);
	/* Writes arrive in order (RC), so only the low 24 bits can differ
	 * from what we expect if something went wrong. */
	if (seq24 != (want_seq & 0xffffffu))
		return rc_bad_msg(err, errlen, "chunk sequence %u, expected %" PRIu64 " (mod 2^24)",
				  seq24, want_seq & 0xffffffu);
	if (slot != want_seq % depth)
		return rc_bad_msg(err, errlen,
				  "chunk %" PRIu64 " in slot %u, expected slot %" PRIu64, want_seq,
				  slot, want_seq % depth);
	if (byte_len != xfer_chunk_len(size, chunk, want_seq))
		return rc_bad_msg(err, errlen, "chunk %" PRIu64 " has %u bytes, expected %u",
				  want_seq, byte_len, xfer_chunk_len(size, chunk, want_seq));
	return 0;
}

int xfer_check_chunk(const struct xfer_chunk *ch, uint64_t want_seq, uint64_t size, uint32_t chunk,
		     uint16_t depth, char *err, size_t errlen)
{
	if (want_seq >= xfer_nchunks(size, chunk))
		return rc_bad_msg(err, errlen, "CHUNK beyond the announced %" PRIu64 " bytes",
				  size);
	if (ch->seq != want_seq)
		return rc_bad_msg(err, errlen, "CHUNK seq %" PRIu64 ", expected %" PRIu64, ch->seq,
				  want_seq);
	if (ch->slot != want_seq % depth)
		return rc_bad_msg(err, errlen, "CHUNK %" PRIu64 " in slot %u, expected %" PRIu64,
				  ch->seq, ch->slot, want_seq % depth);
	if (ch->offset != want_seq * chunk)
		return rc_bad_msg(err, errlen,
				  "CHUNK %" PRIu64 " at offset %" PRIu64 ", expected %" PRIu64,
				  ch->seq, ch->offset, want_seq * chunk);
	if (ch->len != xfer_chunk_len(size, chunk, want_seq))
		return rc_bad_msg(err, errlen, "CHUNK %" PRIu64 " of %u bytes, expected %u",
				  ch->seq, ch->len, xfer_chunk_len(size, chunk, want_seq));
	return 0;
}

int xfer_check_credit(const struct xfer_credit *cr, uint64_t want_seq, uint64_t sent,
		      uint16_t depth, char *err, size_t errlen)
{
	/* Chunks are handled in order, so credits come back in order, and
	 * only for chunks that were really sent. */
	if (want_seq >= sent)
		return rc_bad_msg(err, errlen,
				  "CREDIT for chunk %" PRIu64 ", but only %" PRIu64 " sent",
				  cr->seq, sent);
	if (cr->seq != want_seq || cr->slot != want_seq % depth)
		return rc_bad_msg(err, errlen,
				  "CREDIT seq %" PRIu64 " slot %u, expected seq %" PRIu64
				  " slot %" PRIu64,
				  cr->seq, cr->slot, want_seq, want_seq % depth);
	return 0;
}
