// SPDX-License-Identifier: MIT
/*
 * xfer.c - messages, names, options, checksum, temporary files and the
 * control channel shared by 03's client and server. See xfer.h.
 */
#define _GNU_SOURCE
#include "xfer.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

/* ------------------------------------------------------------------ */
/* Byte order: every field is big-endian; memcpy because received       */
/* buffers are not aligned for wider loads.                             */
/* ------------------------------------------------------------------ */

static void put16(uint8_t *p, uint16_t v)
{
	v = htobe16(v);
	memcpy(p, &v, 2);
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htobe32(v);
	memcpy(p, &v, 4);
}

static void put64(uint8_t *p, uint64_t v)
{
	v = htobe64(v);
	memcpy(p, &v, 8);
}

static uint16_t get16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return be16toh(v);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return be32toh(v);
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return be64toh(v);
}

static bool all_zero(const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static int __attribute__((format(printf, 3, 4))) bad(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EBADMSG;
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
	default: return "unknown";
	}
}

size_t xfer_hello_pack(uint8_t buf[XFER_HELLO_LEN], const struct xfer_hello *h)
{
	uint8_t *b = buf + sizeof(struct rc_hdr);

	rc_hdr_pack(buf, XFER_T_HELLO, XFER_HELLO_BODY, 0);
	b[0] = h->op;
	b[1] = h->version;
	put16(b + 2, h->depth);
	put32(b + 4, h->chunk);
	return XFER_HELLO_LEN;
}

int xfer_hello_unpack(const void *priv, size_t len, struct xfer_hello *h, char *err, size_t errlen)
{
	struct rc_msg m;
	int ret;

	ret = rc_priv_unpack(priv, len, &m, err, errlen);
	if (ret)
		return ret;
	if (m.type != XFER_T_HELLO || m.length != XFER_HELLO_BODY)
		return bad(err, errlen, "expected a HELLO of %d bytes, got type 0x%02x of %u bytes",
			   XFER_HELLO_BODY, m.type, m.length);
	/* The first message of the connection, like any other: seq 0. */
	if (m.seq != 0)
		return bad(err, errlen, "HELLO with sequence number %u, expected 0", m.seq);
	h->op = m.body[0];
	h->version = m.body[1];
	h->depth = get16(m.body + 2);
	h->chunk = get32(m.body + 4);
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
		return bad(err, errlen, "unknown operation %u (1 put, 2 get)", h->op);
	if (h->depth < 1 || h->depth > XFER_MAX_DEPTH || h->chunk < XFER_MIN_CHUNK ||
	    h->chunk > XFER_MAX_CHUNK) {
		snprintf(err, errlen, "depth %u or chunk %u outside 1..%d and %u..%u", h->depth,
			 h->chunk, XFER_MAX_DEPTH, XFER_MIN_CHUNK, XFER_MAX_CHUNK);
		return -ERANGE;
	}
	return 0;
}

/* Body length of each type (0: not a message of the control channel). */
static uint32_t body_len(uint8_t type)
{
	switch (type) {
	case XFER_T_REQUEST: return XFER_REQUEST_BODY;
	case XFER_T_ACCEPT: return XFER_ACCEPT_BODY;
	case XFER_T_ERROR: return XFER_ERROR_BODY;
	case XFER_T_CHUNK: return XFER_CHUNK_BODY;
	case XFER_T_CREDIT: return XFER_CREDIT_BODY;
	case XFER_T_DONE:
	case XFER_T_COMMITTED: return XFER_DONE_BODY;
	case XFER_T_CHALLENGE: return XFER_CHALLENGE_BODY;
	default: return 0;
	}
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
		put64(b, m->u.request.size);
		put32(b + 8, m->u.request.flags);
		len = m->u.request.name_len > XFER_NAME_MAX ? XFER_NAME_MAX : m->u.request.name_len;
		put16(b + 12, (uint16_t)len);
		memcpy(b + 16, m->u.request.name, len);
		memcpy(b + 272, m->u.request.proof, XFER_PROOF_LEN);
		break;
	case XFER_T_ACCEPT:
		put64(b, m->u.accept.size);
		rc_remote_buf_pack(b + 8, &m->u.accept.ring);
		put16(b + 24, m->u.accept.rd_depth);
		break;
	case XFER_T_ERROR:
		put32(b, m->u.error.code);
		len = strnlen(m->u.error.text, XFER_ERR_TEXT);
		put16(b + 4, (uint16_t)len);
		memcpy(b + 8, m->u.error.text, len);
		break;
	case XFER_T_CHUNK:
		put64(b, m->u.chunk.seq);
		put64(b + 8, m->u.chunk.offset);
		put32(b + 16, m->u.chunk.len);
		put16(b + 20, m->u.chunk.slot);
		break;
	case XFER_T_CREDIT:
		put64(b, m->u.credit.seq);
		put16(b + 8, m->u.credit.slot);
		break;
	case XFER_T_DONE:
	case XFER_T_COMMITTED:
		put64(b, m->u.done.size);
		memcpy(b + 8, m->u.done.hash, XFER_HASH_LEN);
		break;
	case XFER_T_CHALLENGE:
		put16(b, m->u.challenge.version);
		put16(b + 2, m->u.challenge.flags);
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
	uint32_t want;
	uint16_t n;
	int ret;

	/* Size, magic, version, flags, header length == byte_len. */
	ret = rc_hdr_unpack(buf, byte_len, &h, err, errlen);
	if (ret)
		return ret;
	want = body_len(h.type);
	if (!want)
		return bad(err, errlen, "unexpected message type 0x%02x", h.type);
	if (h.length != want)
		return bad(err, errlen, "%s of %u body bytes, expected %u", xfer_type_str(h.type),
			   h.length, want);
	if (h.seq != want_seq)
		return bad(err, errlen, "%s has sequence number %u, expected %u",
			   xfer_type_str(h.type), h.seq, want_seq);
	memset(m, 0, sizeof(*m));
	m->type = h.type;
	m->seq = h.seq;
	b = h.body;
	switch (h.type) {
	case XFER_T_REQUEST:
		m->u.request.size = get64(b);
		m->u.request.flags = get32(b + 8);
		n = get16(b + 12);
		if (m->u.request.size > XFER_MAX_SIZE)
			return bad(err, errlen, "REQUEST size %" PRIu64 " is too large",
				   m->u.request.size);
		if (m->u.request.flags & ~(XFER_REQ_F_FORCE | XFER_REQ_F_PROOF))
			return bad(err, errlen, "REQUEST has unknown flags 0x%x",
				   m->u.request.flags);
		if (n < 1 || n > XFER_NAME_MAX)
			return bad(err, errlen, "REQUEST name length %u outside 1..%d", n,
				   XFER_NAME_MAX);
		if (!all_zero(b + 14, 2) || !all_zero(b + 16 + n, 256 - (size_t)n))
			return bad(err, errlen, "%s", "REQUEST padding is not zero");
		/* The name's content (NUL, '/', ...) is judged by
		 * xfer_name_check, so the server can answer with a clear
		 * refusal rather than a protocol error. */
		m->u.request.name_len = n;
		memcpy(m->u.request.name, b + 16, n);
		m->u.request.name[n] = '\0';
		/* Whether the proof is right is the server's question
		 * (auth.c); here only that an absent one is all zeros. */
		if (!(m->u.request.flags & XFER_REQ_F_PROOF) && !all_zero(b + 272, XFER_PROOF_LEN))
			return bad(err, errlen, "%s", "REQUEST has a proof but no proof flag");
		memcpy(m->u.request.proof, b + 272, XFER_PROOF_LEN);
		break;
	case XFER_T_ACCEPT:
		m->u.accept.size = get64(b);
		rc_remote_buf_unpack(b + 8, &m->u.accept.ring);
		m->u.accept.rd_depth = get16(b + 24);
		if (m->u.accept.size > XFER_MAX_SIZE)
			return bad(err, errlen, "ACCEPT size %" PRIu64 " is too large",
				   m->u.accept.size);
		if (!all_zero(b + 26, 6))
			return bad(err, errlen, "%s", "ACCEPT padding is not zero");
		break;
	case XFER_T_ERROR:
		m->u.error.code = get32(b);
		n = get16(b + 4);
		if (n > XFER_ERR_TEXT || !all_zero(b + 6, 2) ||
		    !all_zero(b + 8 + n, XFER_ERR_TEXT - (size_t)n))
			return bad(err, errlen, "%s", "malformed ERROR (text length or padding)");
		if (!printable(b + 8, n))
			return bad(err, errlen, "%s", "ERROR text has control characters");
		memcpy(m->u.error.text, b + 8, n);
		m->u.error.text[n] = '\0';
		break;
	case XFER_T_CHUNK:
		m->u.chunk.seq = get64(b);
		m->u.chunk.offset = get64(b + 8);
		m->u.chunk.len = get32(b + 16);
		m->u.chunk.slot = get16(b + 20);
		if (!all_zero(b + 22, 2))
			return bad(err, errlen, "%s", "CHUNK padding is not zero");
		break;
	case XFER_T_CREDIT:
		m->u.credit.seq = get64(b);
		m->u.credit.slot = get16(b + 8);
		if (!all_zero(b + 10, 6))
			return bad(err, errlen, "%s", "CREDIT padding is not zero");
		break;
	case XFER_T_DONE:
	case XFER_T_COMMITTED:
		m->u.done.size = get64(b);
		memcpy(m->u.done.hash, b + 8, XFER_HASH_LEN);
		if (m->u.done.size > XFER_MAX_SIZE)
			return bad(err, errlen, "%s size %" PRIu64 " is too large",
				   xfer_type_str(h.type), m->u.done.size);
		break;
	case XFER_T_CHALLENGE:
		m->u.challenge.version = get16(b);
		m->u.challenge.flags = get16(b + 2);
		memcpy(m->u.challenge.nonce, b + 8, XFER_NONCE_LEN);
		if (m->u.challenge.version != XFER_PROTO_VERSION)
			return bad(err, errlen, "CHALLENGE of 03 protocol version %u, expected %d",
				   m->u.challenge.version, XFER_PROTO_VERSION);
		if (m->u.challenge.flags & ~XFER_CH_F_SECRET)
			return bad(err, errlen, "CHALLENGE has unknown flags 0x%x",
				   m->u.challenge.flags);
		if (!all_zero(b + 4, 4))
			return bad(err, errlen, "%s", "CHALLENGE padding is not zero");
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
			 "%s size=%" PRIu64 " rd_depth=%u ring addr=0x%" PRIx64 " rkey=0x%x len=%u",
			 t, m->u.accept.size, m->u.accept.rd_depth, m->u.accept.ring.addr,
			 m->u.accept.ring.rkey, m->u.accept.ring.len);
		break;
	case XFER_T_ERROR:
		snprintf(out, outlen, "%s code=%u '%s'", t, m->u.error.code, m->u.error.text);
		break;
	case XFER_T_CHUNK:
		snprintf(out, outlen, "%s seq=%" PRIu64 " slot=%u offset=%" PRIu64 " len=%u", t,
			 m->u.chunk.seq, m->u.chunk.slot, m->u.chunk.offset, m->u.chunk.len);
		break;
	case XFER_T_CREDIT:
		snprintf(out, outlen, "%s seq=%" PRIu64 " slot=%u", t, m->u.credit.seq,
			 m->u.credit.slot);
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
		return bad(err, errlen, "chunk beyond the announced %" PRIu64 " bytes", size);
	/* Writes arrive in order (RC), so only the low 24 bits can differ
	 * from what we expect if something went wrong. */
	if (seq24 != (want_seq & 0xffffffu))
		return bad(err, errlen, "chunk sequence %u, expected %" PRIu64 " (mod 2^24)", seq24,
			   want_seq & 0xffffffu);
	if (slot != want_seq % depth)
		return bad(err, errlen, "chunk %" PRIu64 " in slot %u, expected slot %" PRIu64,
			   want_seq, slot, want_seq % depth);
	if (byte_len != xfer_chunk_len(size, chunk, want_seq))
		return bad(err, errlen, "chunk %" PRIu64 " has %u bytes, expected %u", want_seq,
			   byte_len, xfer_chunk_len(size, chunk, want_seq));
	return 0;
}

int xfer_check_chunk(const struct xfer_chunk *ch, uint64_t want_seq, uint64_t size, uint32_t chunk,
		     uint16_t depth, char *err, size_t errlen)
{
	if (want_seq >= xfer_nchunks(size, chunk))
		return bad(err, errlen, "CHUNK beyond the announced %" PRIu64 " bytes", size);
	if (ch->seq != want_seq)
		return bad(err, errlen, "CHUNK seq %" PRIu64 ", expected %" PRIu64, ch->seq,
			   want_seq);
	if (ch->slot != want_seq % depth)
		return bad(err, errlen, "CHUNK %" PRIu64 " in slot %u, expected %" PRIu64, ch->seq,
			   ch->slot, want_seq % depth);
	if (ch->offset != want_seq * chunk)
		return bad(err, errlen,
			   "CHUNK %" PRIu64 " at offset %" PRIu64 ", expected %" PRIu64, ch->seq,
			   ch->offset, want_seq * chunk);
	if (ch->len != xfer_chunk_len(size, chunk, want_seq))
		return bad(err, errlen, "CHUNK %" PRIu64 " of %u bytes, expected %u", ch->seq,
			   ch->len, xfer_chunk_len(size, chunk, want_seq));
	return 0;
}

int xfer_check_credit(const struct xfer_credit *cr, uint64_t want_seq, uint64_t sent,
		      uint16_t depth, char *err, size_t errlen)
{
	/* Chunks are handled in order, so credits come back in order, and
	 * only for chunks that were really sent. */
	if (want_seq >= sent)
		return bad(err, errlen, "CREDIT for chunk %" PRIu64 ", but only %" PRIu64 " sent",
			   cr->seq, sent);
	if (cr->seq != want_seq || cr->slot != want_seq % depth)
		return bad(err, errlen,
			   "CREDIT seq %" PRIu64 " slot %u, expected seq %" PRIu64 " slot %" PRIu64,
			   cr->seq, cr->slot, want_seq, want_seq % depth);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Names and endpoints                                                 */
/* ------------------------------------------------------------------ */

static bool is_tmp_name(const char *name, size_t len)
{
	return len >= 6 && name[0] == '.' && !memcmp(name + len - 5, ".part", 5);
}

int xfer_name_check(const char *name, size_t len, char *err, size_t errlen)
{
	size_t i;

	if (len == 0) {
		snprintf(err, errlen, "%s", "empty file name");
		return -EINVAL;
	}
	if (len > XFER_NAME_MAX) {
		snprintf(err, errlen, "name of %zu bytes; at most %d are allowed", len,
			 XFER_NAME_MAX);
		return -EINVAL;
	}
	if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.')) {
		snprintf(err, errlen, "'%.*s' is not a file name", (int)len, name);
		return -EINVAL;
	}
	for (i = 0; i < len; i++) {
		if (name[i] == '/') {
			snprintf(err, errlen, "%s",
				 "the name contains '/': only plain file names inside the "
				 "server's directory are allowed");
			return -EINVAL;
		}
		if (name[i] == '\0') {
			snprintf(err, errlen, "%s", "the name contains a NUL byte");
			return -EINVAL;
		}
		/* Not illegal for the file system, but they would garble
		 * logs and terminals that print the name. */
		if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f) {
			snprintf(err, errlen, "%s", "the name contains control characters");
			return -EINVAL;
		}
	}
	if (is_tmp_name(name, len)) {
		snprintf(err, errlen, "%s",
			 "names of the form .*.part are reserved for files being received");
		return -EINVAL;
	}
	return 0;
}

void xfer_quote(char *out, size_t outlen, const char *s, size_t len)
{
	size_t o = 0, i;

	for (i = 0; i < len && i < 80 && o + 5 < outlen; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (ch >= 0x20 && ch < 0x7f && ch != '\\' && ch != '\'')
			out[o++] = (char)ch;
		else
			o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", ch);
	}
	if (i < len && o + 4 <= outlen) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o < outlen ? o : outlen - 1] = '\0';
}

int xfer_parse_endpoint(const char *arg, struct xfer_endpoint *ep, char *err, size_t errlen)
{
	const char *colon, *slash, *host, *end;

	memset(ep, 0, sizeof(*ep));
	ep->path = arg;
	if (arg[0] == '[') {
		/* [IPv6]:NAME: the brackets keep the address's colons apart. */
		end = strchr(arg, ']');
		if (!end || end[1] != ':') {
			snprintf(err, errlen, "'%s': write an IPv6 address as [ADDR]:NAME", arg);
			return -EINVAL;
		}
		host = arg + 1;
		colon = end + 1;
	} else {
		colon = strchr(arg, ':');
		slash = strchr(arg, '/');
		if (!colon || (slash && slash < colon))
			return 0; /* a local path */
		host = arg;
		end = colon;
	}
	if (end == host) {
		snprintf(err, errlen, "'%s': missing host before ':'", arg);
		return -EINVAL;
	}
	if ((size_t)(end - host) >= sizeof(ep->host)) {
		snprintf(err, errlen, "'%s': host name too long", arg);
		return -EINVAL;
	}
	memcpy(ep->host, host, (size_t)(end - host));
	ep->host[end - host] = '\0';
	ep->path = colon + 1;
	ep->remote = true;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Options                                                             */
/* ------------------------------------------------------------------ */

enum {
	OPT_PROGRESS = RC_OPT_FIRST_FREE,
	OPT_NO_PROGRESS,
	OPT_MAX_CHUNK,
	OPT_MAX_DEPTH,
	OPT_MAX_MEM,
	OPT_JSON,
	OPT_SECRET,
	OPT_READ_ONLY,
	OPT_WRITE_ONLY,
};

#define XFER_MAX_CLIENTS 8

static const char client_usage[] =
	"usage: rdma-client [options] SRC DST\n"
	"Copy one file to or from an rdma-server, scp-style: exactly one of SRC\n"
	"and DST is HOST:NAME ([ADDR]:NAME for IPv6). DST remote = put (upload),\n"
	"SRC remote = get (download). NAME is a plain file name in the server's\n"
	"directory; `put FILE HOST:` keeps FILE's name. A local DST that is a\n"
	"directory receives the file under NAME.\n\n"
	"  -c, --chunk SIZE      bytes per RDMA transfer (default 1M; at most the\n"
	"                        port's max_msg_sz; K/M/G suffixes)\n"
	"  -t, --depth N         chunks in flight (default 16, at most 255)\n"
	"  -f, --force           overwrite an existing destination\n"
	"      --progress        show bytes, rate and ETA on stderr (default: if it is a TTY)\n"
	"      --no-progress     never show progress\n"
	"  -q, --quiet           print nothing but errors\n"
	"      --json            print one JSON object with the results instead (also on\n"
	"                        failure: \"ok\": false, \"error\", "
	"\"exit_code\")\n"
	"      --secret FILE     prove to the server that we hold its key (FILE: at least\n"
	"                        16 bytes, readable by its owner only); the data itself\n"
	"                        is not encrypted\n" RC_USAGE_CLIENT
	"\nRegisters chunk x depth bytes (default 16 MiB): see `ulimit -l`.\n"
	"Exit: 0 copied and verified, 1 failed after connecting, 2 bad usage or\n"
	"local file problem, 3 could not connect (or the server refused).\n";

static const char server_usage[] =
	"usage: rdma-server -r DIR [options]\n"
	"Serve the files in DIR and receive uploads into it, over RDMA.\n\n"
	"  -r, --root DIR        the directory served (required)\n"
	"      --max-chunk SIZE  largest chunk a client may ask for (default 16M,\n"
	"                        and never above the port's max_msg_sz)\n"
	"      --max-depth N     most chunks in flight per client (default 64)\n"
	"      --max-mem SIZE    most registered ring memory, chunk x depth, per\n"
	"                        client (default 64M)\n"
	"      --secret FILE     serve only clients that prove they hold this key (a MAC\n"
	"                        over a fresh nonce and their request; FILE: at least 16\n"
	"                        bytes, readable by its owner only); the data itself is\n"
	"                        not encrypted\n"
	"      --read-only       serve get only: refuse every put\n"
	"      --write-only      serve put only: refuse every get\n" RC_USAGE_SERVER(
		XFER_MAX_CLIENTS);

/* SRC and DST into the options: which one is remote, which name. */
static int client_endpoints(const char *src, const char *dst, struct xfer_client_opts *o, char *err,
			    size_t errlen)
{
	struct xfer_endpoint s, d;
	const char *base;
	int ret;

	ret = xfer_parse_endpoint(src, &s, err, errlen);
	if (!ret)
		ret = xfer_parse_endpoint(dst, &d, err, errlen);
	if (ret)
		return ret;
	if (s.remote == d.remote)
		return rc_usage_error(err, errlen, "%s",
				      s.remote ? "both SRC and DST are remote; one must be local"
					       : "neither SRC nor DST is remote (HOST:NAME)");
	o->op = d.remote ? XFER_PUT : XFER_GET;
	if (o->op == XFER_PUT) {
		memcpy(o->host, d.host, sizeof(o->host));
		o->local = src;
		o->name = d.path;
		if (!*o->local)
			return rc_usage_error(err, errlen, "%s", "empty SRC");
		if (!*o->name) {
			/* put FILE HOST: keeps the file's own name. */
			base = strrchr(src, '/');
			base = base ? base + 1 : src;
			if (!*base || strlen(base) > XFER_NAME_MAX)
				return rc_usage_error(
					err, errlen,
					"cannot take a name from '%s'; write HOST:NAME", src);
			memcpy(o->name_buf, base, strlen(base) + 1);
			o->name = o->name_buf;
		}
	} else {
		memcpy(o->host, s.host, sizeof(o->host));
		o->local = dst;
		o->name = s.path;
		if (!*o->name)
			return rc_usage_error(err, errlen, "%s", "missing NAME after HOST:");
		if (!*o->local)
			return rc_usage_error(err, errlen, "%s", "empty DST");
	}
	/* The name is judged by the server (the one authority over its
	 * directory); here only what the REQUEST can carry. */
	if (strlen(o->name) > XFER_NAME_MAX)
		return rc_usage_error(err, errlen, "remote name longer than %d bytes",
				      XFER_NAME_MAX);
	return 0;
}

int xfer_parse_client(int argc, char **argv, struct xfer_client_opts *o, char *err, size_t errlen)
{
	static const struct option longopts[] = {
		RC_LONGOPTS_CLIENT,
		{ "chunk", required_argument, NULL, 'c' },
		{ "depth", required_argument, NULL, 't' },
		{ "force", no_argument, NULL, 'f' },
		{ "progress", no_argument, NULL, OPT_PROGRESS },
		{ "no-progress", no_argument, NULL, OPT_NO_PROGRESS },
		{ "quiet", no_argument, NULL, 'q' },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "secret", required_argument, NULL, OPT_SECRET },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	int c, ret;

	*o = (struct xfer_client_opts){ .chunk = XFER_DEF_CHUNK,
					.depth = XFER_DEF_DEPTH,
					.progress = -1 };
	rc_opts_init(&o->rc, 1);
	while ((ret = rc_getopt(&o->rc, argc, argv, RC_SHORTOPTS_CLIENT "c:t:fq", longopts,
				client_usage, &c, err, errlen)) == 1) {
		switch (c) {
		case 'c':
			if (rc_parse_size(optarg, XFER_MIN_CHUNK, XFER_MAX_CHUNK, &v))
				return rc_usage_error(err, errlen,
						      "invalid chunk size '%s' (4K to 1G)", optarg);
			o->chunk = (uint32_t)v;
			break;
		case 't':
			if (rc_parse_uint(optarg, 1, XFER_MAX_DEPTH, &v))
				return rc_usage_error(err, errlen, "invalid depth '%s' (1 to %d)",
						      optarg, XFER_MAX_DEPTH);
			o->depth = (uint16_t)v;
			break;
		case 'f': o->force = true; break;
		case OPT_PROGRESS: o->progress = 1; break;
		case OPT_NO_PROGRESS: o->progress = 0; break;
		case 'q': o->quiet = true; break;
		case OPT_JSON: o->json = true; break;
		case OPT_SECRET: o->secret_file = optarg; break;
		}
	}
	if (ret) /* 2: --help was printed */
		return ret == 2 ? 1 : ret;
	ret = rc_opts_check_client(&o->rc, err, errlen);
	if (ret)
		return ret;
	if (argc - optind < 2)
		return rc_usage_error(err, errlen, "%s", "need SRC and DST");
	if (argc - optind > 2)
		return rc_usage_error(err, errlen, "unexpected argument '%s'", argv[optind + 2]);
	if (o->quiet && o->progress == 1)
		return rc_usage_error(err, errlen, "%s", "-q and --progress exclude each other");
	if (o->quiet)
		o->progress = 0;
	if ((uint64_t)o->chunk * o->depth > UINT32_MAX)
		return rc_usage_error(err, errlen, "%s",
				      "chunk x depth must stay below 4 GiB (the ring is described "
				      "with a 32-bit length)");
	return client_endpoints(argv[optind], argv[optind + 1], o, err, errlen);
}

int xfer_parse_server(int argc, char **argv, struct xfer_server_opts *o, char *err, size_t errlen)
{
	static const struct option longopts[] = {
		RC_LONGOPTS_SERVER,
		{ "root", required_argument, NULL, 'r' },
		{ "max-chunk", required_argument, NULL, OPT_MAX_CHUNK },
		{ "max-depth", required_argument, NULL, OPT_MAX_DEPTH },
		{ "max-mem", required_argument, NULL, OPT_MAX_MEM },
		{ "secret", required_argument, NULL, OPT_SECRET },
		{ "read-only", no_argument, NULL, OPT_READ_ONLY },
		{ "write-only", no_argument, NULL, OPT_WRITE_ONLY },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	int c, ret;

	*o = (struct xfer_server_opts){
		.lim = { .max_chunk = 16u << 20, .max_depth = 64, .max_mem = 64u << 20 },
	};
	rc_opts_init(&o->rc, XFER_MAX_CLIENTS);
	while ((ret = rc_getopt(&o->rc, argc, argv, RC_SHORTOPTS_SERVER "r:", longopts,
				server_usage, &c, err, errlen)) == 1) {
		switch (c) {
		case 'r': o->root = optarg; break;
		case OPT_MAX_CHUNK:
			if (rc_parse_size(optarg, XFER_MIN_CHUNK, XFER_MAX_CHUNK, &v))
				return rc_usage_error(err, errlen,
						      "invalid chunk size '%s' (4K to 1G)", optarg);
			o->lim.max_chunk = (uint32_t)v;
			break;
		case OPT_MAX_DEPTH:
			if (rc_parse_uint(optarg, 1, XFER_MAX_DEPTH, &v))
				return rc_usage_error(err, errlen, "invalid depth '%s' (1 to %d)",
						      optarg, XFER_MAX_DEPTH);
			o->lim.max_depth = (uint16_t)v;
			break;
		case OPT_MAX_MEM:
			if (rc_parse_size(optarg, XFER_MIN_CHUNK, 2ull << 30, &v))
				return rc_usage_error(
					err, errlen, "invalid memory size '%s' (4K to 2G)", optarg);
			o->lim.max_mem = v;
			break;
		case OPT_SECRET: o->secret_file = optarg; break;
		case OPT_READ_ONLY: o->read_only = true; break;
		case OPT_WRITE_ONLY: o->write_only = true; break;
		}
	}
	if (ret) /* 2: --help was printed */
		return ret == 2 ? 1 : ret;
	if (optind < argc)
		return rc_usage_error(err, errlen, "unexpected argument '%s'", argv[optind]);
	if (!o->root || !*o->root)
		return rc_usage_error(err, errlen, "%s", "missing -r DIR (the directory to serve)");
	if (o->read_only && o->write_only)
		return rc_usage_error(err, errlen, "%s",
				      "--read-only and --write-only exclude each other");
	return 0;
}

void xfer_fmt_size(char *out, size_t outlen, uint64_t bytes)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	unsigned u = 0;

	/* Exact when it divides evenly ("16 MiB"), one decimal otherwise. */
	while (u < 4 && bytes >= (1ull << (10 * (u + 1))) && !(bytes % (1ull << (10 * (u + 1)))))
		u++;
	if (u || bytes < 1024) {
		snprintf(out, outlen, "%" PRIu64 " %s", bytes >> (10 * u), unit[u]);
		return;
	}
	while (u < 4 && bytes >= (1ull << (10 * (u + 1))))
		u++;
	snprintf(out, outlen, "%.1f %s", (double)bytes / (double)(1ull << (10 * u)), unit[u]);
}

int xfer_check_limits(const struct xfer_hello *h, const struct xfer_limits *lim,
		      uint32_t max_msg_sz, char *err, size_t errlen)
{
	uint64_t mem = (uint64_t)h->chunk * h->depth;
	char a[32], b[32], m[32];

	/* Short: the reason travels in the connect reject, which holds at
	 * most XFER_REJECT_MAX bytes of text. */
	xfer_fmt_size(a, sizeof(a), h->chunk);
	if (h->chunk > lim->max_chunk || h->chunk > max_msg_sz) {
		xfer_fmt_size(b, sizeof(b),
			      lim->max_chunk < max_msg_sz ? lim->max_chunk : max_msg_sz);
		snprintf(err, errlen,
			 "chunk %s is over this server's limit of %s; use a smaller -c", a, b);
		return -ERANGE;
	}
	if (h->depth > lim->max_depth) {
		snprintf(err, errlen,
			 "depth %u is over this server's limit of %u; use a smaller -t", h->depth,
			 lim->max_depth);
		return -ERANGE;
	}
	if (mem > lim->max_mem) {
		xfer_fmt_size(b, sizeof(b), mem);
		xfer_fmt_size(m, sizeof(m), lim->max_mem);
		snprintf(err, errlen,
			 "ring of %s x %u = %s is over this server's %s per client; use a smaller "
			 "-c or -t",
			 a, h->depth, b, m);
		return -ERANGE;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Checksum                                                            */
/* ------------------------------------------------------------------ */

/*
 * XXH3-128 streams at several GB/s per core (far more with the library's
 * SIMD paths), so hashing each chunk while it is in the cache, once on
 * each side, costs much less than the copy between the page cache and the
 * ring. It detects corruption, not tampering: it is not a cryptographic
 * hash (use SHA-256 or an AEAD when the peer may be hostile).
 */
int xfer_hash_init(struct xfer_hash *h)
{
	h->state = XXH3_createState();
	if (!h->state)
		return -ENOMEM;
	if (XXH3_128bits_reset(h->state) != XXH_OK) {
		xfer_hash_free(h);
		return -EINVAL;
	}
	return 0;
}

void xfer_hash_update(struct xfer_hash *h, const void *p, size_t len)
{
	if (len)
		XXH3_128bits_update(h->state, p, len);
}

void xfer_hash_final(struct xfer_hash *h, uint8_t out[XFER_HASH_LEN])
{
	XXH128_canonical_t c;

	XXH128_canonicalFromHash(&c, XXH3_128bits_digest(h->state));
	memcpy(out, c.digest, XFER_HASH_LEN);
}

void xfer_hash_free(struct xfer_hash *h)
{
	if (h->state)
		XXH3_freeState(h->state);
	h->state = NULL;
}

void xfer_hash_hex(const uint8_t d[XFER_HASH_LEN], char out[2 * XFER_HASH_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	int i;

	for (i = 0; i < XFER_HASH_LEN; i++) {
		out[2 * i] = hex[d[i] >> 4];
		out[2 * i + 1] = hex[d[i] & 15];
	}
	out[2 * XFER_HASH_LEN] = '\0';
}

/* ------------------------------------------------------------------ */
/* Files                                                               */
/* ------------------------------------------------------------------ */

/*
 * Dirty data the receiver lets pile up before it waits for the disk. It
 * starts writeback of every chunk as soon as it is written and, once more
 * than this is in flight, waits for the oldest part. Without this the page
 * cache absorbs gigabytes at network speed and the final fsync then takes
 * minutes, longer than the sender waits for COMMITTED; with it a disk
 * slower than the network slows the sender down through the credits.
 */
#define WRITEBACK_LAG (64ull << 20)

int xfer_sink_open(struct xfer_sink *s, int dirfd, const char *name, bool force, char *err,
		   size_t errlen)
{
	struct stat st;
	uint32_t rnd;
	int i, ret;

	memset(s, 0, sizeof(*s));
	s->dirfd = dirfd;
	s->fd = -1;
	s->force = force;
	snprintf(s->name, sizeof(s->name), "%s", name);
	/* AT_SYMLINK_NOFOLLOW: look at the entry itself, never where a
	 * symlink points. This check only gives an early, clear answer; the
	 * no-replace rename at the end is what really protects NAME. */
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (!force) {
			snprintf(err, errlen, "'%s' exists; use -f to overwrite it", name);
			return -EEXIST;
		}
		if (!S_ISREG(st.st_mode)) {
			snprintf(err, errlen, "'%s' exists and is %s; refusing to replace it", name,
				 S_ISLNK(st.st_mode)   ? "a symbolic link"
				 : S_ISDIR(st.st_mode) ? "a directory"
						       : "not a regular file");
			return -EEXIST;
		}
	} else if (errno != ENOENT) {
		ret = errno;
		snprintf(err, errlen, "cannot look at '%s': %s", name, strerror(ret));
		return -ret;
	}
	for (i = 0; i < 100; i++) {
		if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
			rnd = (uint32_t)rc_now_ns() ^ (uint32_t)getpid() * 2654435761u;
		/* At most 1 + 200 + 1 + 8 + 5 bytes: fits NAME_MAX. */
		snprintf(s->tmp, sizeof(s->tmp), ".%.200s.%08x.part", name, rnd);
		/* O_EXCL: a new file, never someone else's; O_NOFOLLOW: never
		 * through a symlink planted under this name. */
		s->fd = openat(dirfd, s->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			       0666);
		if (s->fd >= 0 || errno != EEXIST)
			break;
	}
	if (s->fd < 0) {
		ret = errno;
		snprintf(err, errlen, "cannot create a temporary file next to '%s': %s%s", name,
			 strerror(ret),
			 ret == EACCES || ret == EROFS ? " (is the directory writable?)" : "");
		return -ret;
	}
	s->have_tmp = true;
	return 0;
}

/* A failed pwrite, fsync or writeback, in words. */
static int write_error(struct xfer_sink *s, int ret, const char *what, uint64_t off, char *err,
		       size_t errlen)
{
	snprintf(err, errlen, "%s '%s' at offset %" PRIu64 ": %s%s", what, s->tmp, off,
		 strerror(ret), ret == ENOSPC || ret == EDQUOT ? " (disk full)" : "");
	return -ret;
}

/* sync_file_range, where "not supported here" (tmpfs, pipes, some network
 * file systems) is not an error. */
static int writeback(struct xfer_sink *s, uint64_t off, uint64_t len, unsigned flags)
{
	if (sync_file_range(s->fd, (off_t)off, (off_t)len, flags) == 0)
		return 0;
	if (errno == EINVAL || errno == ESPIPE || errno == ENOSYS || errno == EOPNOTSUPP)
		return 0;
	return errno;
}

int xfer_sink_write(struct xfer_sink *s, const void *buf, size_t len, uint64_t off, char *err,
		    size_t errlen)
{
	const uint8_t *p = buf;
	uint64_t end = off + len, upto;
	size_t done = 0;
	ssize_t n;
	int ret;

	while (done < len) {
		n = pwrite(s->fd, p + done, len - done, (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return write_error(s, n < 0 ? errno : ENOSPC, "writing", off + done, err,
					   errlen);
		done += (size_t)n;
	}
	if (end > s->written_end)
		s->written_end = end;
	/*
	 * Start writeback of this chunk now, and wait for the part
	 * WRITEBACK_LAG behind. An error here must be reported here: the
	 * kernel hands a writeback error to the first caller that waits
	 * (this one), and the fsync at the end would not see it again.
	 */
	ret = writeback(s, off, len, SYNC_FILE_RANGE_WRITE);
	if (!ret && end > s->flushed + 2 * WRITEBACK_LAG) {
		upto = end - WRITEBACK_LAG;
		ret = writeback(s, s->flushed, upto - s->flushed,
				SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
					SYNC_FILE_RANGE_WAIT_AFTER);
		s->flushed = upto;
	}
	if (ret)
		return write_error(s, ret, "writing back", off, err, errlen);
	return 0;
}

int xfer_sink_sync(struct xfer_sink *s, uint64_t size, char *err, size_t errlen)
{
	struct stat st;
	int ret;

	/* The data must be on disk before the name points at it: otherwise a
	 * crash after the rename could leave NAME with missing blocks. */
	if (fsync(s->fd)) {
		ret = errno;
		snprintf(err, errlen, "fsync '%s': %s%s", s->tmp, strerror(ret),
			 ret == ENOSPC || ret == EDQUOT ? " (disk full)" : "");
		return -ret;
	}
	if (fstat(s->fd, &st)) {
		ret = errno;
		snprintf(err, errlen, "fstat '%s': %s", s->tmp, strerror(ret));
		return -ret;
	}
	if ((uint64_t)st.st_size != size) {
		snprintf(err, errlen, "'%s' has %" PRIu64 " bytes on disk, expected %" PRIu64,
			 s->tmp, (uint64_t)st.st_size, size);
		return -EIO;
	}
	return 0;
}

/* Rename tmp to name without ever replacing an existing name. */
static int rename_noreplace(int dirfd, const char *tmp, const char *name)
{
	if (renameat2(dirfd, tmp, dirfd, name, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP)
		return -errno;
	/* The file system lacks RENAME_NOREPLACE: a hard link is just as
	 * exclusive (EEXIST if the name exists), then drop the temp name. */
	if (linkat(dirfd, tmp, dirfd, name, 0))
		return -errno;
	unlinkat(dirfd, tmp, 0);
	return 0;
}

int xfer_sink_commit(struct xfer_sink *s, char *err, size_t errlen)
{
	int ret;

	if (close(s->fd)) {
		ret = errno;
		s->fd = -1;
		snprintf(err, errlen, "close '%s': %s", s->tmp, strerror(ret));
		return -ret;
	}
	s->fd = -1;
	/* -f: rename(2) replaces NAME atomically (readers see the old file or
	 * the new one, never a mix). A symlink NAME is replaced itself; its
	 * target is never touched. */
	if (s->force)
		ret = renameat(s->dirfd, s->tmp, s->dirfd, s->name) ? -errno : 0;
	else
		ret = rename_noreplace(s->dirfd, s->tmp, s->name);
	if (ret) {
		snprintf(err, errlen, "cannot rename the received file to '%s': %s%s", s->name,
			 strerror(-ret),
			 ret == -EEXIST ? " (it was created during the transfer; use -f to "
					  "overwrite)"
					: "");
		return ret;
	}
	s->have_tmp = false;
	/* The rename itself must survive a crash too. */
	if (fsync(s->dirfd)) {
		ret = errno;
		snprintf(err, errlen, "fsync of the directory after renaming to '%s': %s", s->name,
			 strerror(ret));
		return -ret;
	}
	return 0;
}

void xfer_sink_abort(struct xfer_sink *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	if (s->have_tmp)
		unlinkat(s->dirfd, s->tmp, 0);
	s->have_tmp = false;
}

int xfer_read_full(int fd, void *buf, size_t len, uint64_t off, char *err, size_t errlen)
{
	uint8_t *p = buf;
	size_t done = 0;
	ssize_t n;
	int ret;

	while (done < len) {
		n = pread(fd, p + done, len - done, (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = errno;
			snprintf(err, errlen, "reading at offset %" PRIu64 ": %s", off + done,
				 strerror(ret));
			return -ret;
		}
		if (n == 0) {
			snprintf(err, errlen,
				 "the file ended at offset %" PRIu64
				 " although it had more bytes when the transfer began (truncated "
				 "meanwhile?)",
				 off + done);
			return -EIO;
		}
		done += (size_t)n;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Disk thread                                                         */
/* ------------------------------------------------------------------ */

static void disk_wake(struct xfer_disk *d)
{
	uint64_t one = 1;

	/* Cannot fail short of a bug (the counter would need 2^64 - 1
	 * wake-ups unread); a lost one would only delay the main thread to
	 * its next completion or timeout. */
	if (write(d->efd, &one, sizeof(one)) < 0)
		return;
}

static void *disk_main(void *arg)
{
	struct xfer_disk *d = arg;
	char why[RC_ERR_LEN];
	uint64_t seq;
	bool stop;
	int ret;

	for (seq = 0; seq < d->n; seq++) {
		/* No timeout needed: the main thread either allows more or
		 * stops us, on every path (xfer_disk_stop). */
		pthread_mutex_lock(&d->lock);
		while (seq >= d->allowed && !d->stop)
			pthread_cond_wait(&d->cond, &d->lock);
		stop = d->stop;
		pthread_mutex_unlock(&d->lock);
		if (stop)
			break;
		why[0] = '\0';
		ret = d->fn(d->arg, seq, why, sizeof(why));
		pthread_mutex_lock(&d->lock);
		if (ret) {
			d->err = ret;
			snprintf(d->why, sizeof(d->why), "%s", why);
		} else {
			d->done = seq + 1;
		}
		pthread_mutex_unlock(&d->lock);
		disk_wake(d);
		if (ret)
			break;
	}
	return NULL;
}

int xfer_disk_start(struct xfer_disk *d, struct rc_conn *c, uint64_t n, uint64_t allowed,
		    xfer_disk_fn fn, void *arg, char *err, size_t errlen)
{
	int ret;

	*d = (struct xfer_disk){ .c = c, .fn = fn, .arg = arg, .n = n, .allowed = allowed };
	/* Non-blocking: rc_next_wc reads it only to reset it. */
	d->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (d->efd < 0) {
		ret = -errno;
		snprintf(err, errlen, "eventfd: %s", strerror(errno));
		return ret;
	}
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->cond, NULL);
	ret = pthread_create(&d->thread, NULL, disk_main, d);
	if (ret) {
		snprintf(err, errlen, "cannot start the disk thread: %s", strerror(ret));
		pthread_cond_destroy(&d->cond);
		pthread_mutex_destroy(&d->lock);
		close(d->efd);
		return -ret;
	}
	d->running = true;
	c->wake_fd = d->efd;
	return 0;
}

void xfer_disk_allow(struct xfer_disk *d, uint64_t allowed)
{
	pthread_mutex_lock(&d->lock);
	if (allowed > d->allowed) {
		d->allowed = allowed;
		pthread_cond_signal(&d->cond);
	}
	pthread_mutex_unlock(&d->lock);
}

int xfer_disk_done(struct xfer_disk *d, uint64_t *done, char *why, size_t whylen)
{
	int ret;

	pthread_mutex_lock(&d->lock);
	*done = d->done;
	ret = d->err;
	if (ret)
		snprintf(why, whylen, "%s", d->why);
	pthread_mutex_unlock(&d->lock);
	return ret;
}

void xfer_disk_stop(struct xfer_disk *d)
{
	if (!d->running)
		return;
	pthread_mutex_lock(&d->lock);
	d->stop = true;
	pthread_cond_signal(&d->cond);
	pthread_mutex_unlock(&d->lock);
	pthread_join(d->thread, NULL);
	d->running = false;
	d->c->wake_fd = -1;
	pthread_cond_destroy(&d->cond);
	pthread_mutex_destroy(&d->lock);
	close(d->efd);
}

int xfer_io_read(void *arg, uint64_t seq, char *err, size_t errlen)
{
	struct xfer_io *io = arg;
	uint32_t len = xfer_chunk_len(io->size, io->chunk, seq);
	unsigned slot = (unsigned)(seq % io->depth);
	uint8_t *data = io->ring + (size_t)slot * io->chunk;
	char why[RC_ERR_LEN];
	int ret;

	ret = xfer_read_full(io->fd, data, len, seq * io->chunk, why, sizeof(why));
	if (ret) {
		snprintf(err, errlen, "%s cannot read %s: %s", io->who, io->name, why);
		return ret;
	}
	xfer_hash_update(io->hash, data, len);
	rc_trace(io->log, "chunk %" PRIu64 ": read %u bytes at offset %" PRIu64 " into slot %u",
		 seq, len, seq * io->chunk, slot);
	return 0;
}

int xfer_io_write(void *arg, uint64_t seq, char *err, size_t errlen)
{
	struct xfer_io *io = arg;
	uint32_t len = xfer_chunk_len(io->size, io->chunk, seq);
	unsigned slot = (unsigned)(seq % io->depth);
	const uint8_t *data = io->ring + (size_t)slot * io->chunk;
	char why[RC_ERR_LEN];
	int ret;

	ret = xfer_sink_write(io->sink, data, len, seq * io->chunk, why, sizeof(why));
	if (ret) {
		snprintf(err, errlen, "%s: %s; removed the partial file", io->who, why);
		return ret;
	}
	xfer_hash_update(io->hash, data, len);
	rc_trace(io->log, "chunk %" PRIu64 ": wrote %u bytes at offset %" PRIu64 " from slot %u",
		 seq, len, seq * io->chunk, slot);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Control channel                                                     */
/* ------------------------------------------------------------------ */

int xfer_ctl_init(struct xfer_ctl *x, struct rc_conn *c, unsigned nrecv, unsigned nsend)
{
	unsigned i;
	int ret;

	memset(x, 0, sizeof(*x));
	x->c = c;
	x->nrecv = nrecv;
	x->nsend = nsend;
	x->free_send = calloc(nsend, sizeof(*x->free_send));
	/* Room for every completion the CQ can hold. */
	x->stash_cap = (unsigned)c->dev.cq_size;
	x->stash = calloc(x->stash_cap, sizeof(*x->stash));
	if (!x->free_send || !x->stash)
		return rc_fail(&c->log, ENOMEM, "out of memory");
	for (i = 0; i < nsend; i++)
		x->free_send[x->nfree++] = nsend - 1 - i;
	/* Receive buffers: the NIC writes into them (LOCAL_WRITE), the peer
	 * never addresses them directly (no REMOTE_*). */
	ret = rc_buf_alloc(c, (size_t)nrecv * XFER_MSG_MAX, IBV_ACCESS_LOCAL_WRITE, &x->rbuf);
	if (ret)
		return ret;
	/* Send buffers are only read by the NIC: no access flags. */
	ret = rc_buf_alloc(c, (size_t)nsend * XFER_MSG_MAX, 0, &x->sbuf);
	if (ret)
		return ret;
	/*
	 * Every receive gets a buffer for the largest message, even though
	 * the peer's RDMA_WRITE_WITH_IMMs need none (a zero-SGE receive,
	 * rc_post_recv(c, NULL, ...), would do for them): receives are
	 * consumed strictly in posting order by whatever arrives, so any of
	 * them may meet a SEND (DONE, ERROR) and must have room for it.
	 * Posted now, before connecting or accepting: the peer may send the
	 * moment the connection is up.
	 */
	for (i = 0; i < nrecv; i++) {
		ret = rc_post_recv(c, x->rbuf, (size_t)i * XFER_MSG_MAX, XFER_MSG_MAX,
				   XFER_WR_RECV + i);
		if (ret)
			return ret;
	}
	return 0;
}

void xfer_ctl_free(struct xfer_ctl *x)
{
	/* The registered buffers belong to the connection (rc_conn_destroy). */
	free(x->free_send);
	free(x->stash);
	x->free_send = NULL;
	x->stash = NULL;
}

static bool is_ctl_send(const struct xfer_ctl *x, const struct ibv_wc *wc)
{
	return wc->wr_id >= XFER_WR_SEND && wc->wr_id < XFER_WR_SEND + x->nsend;
}

bool xfer_ctl_is_recv(const struct xfer_ctl *x, const struct ibv_wc *wc)
{
	return wc->wr_id >= XFER_WR_RECV && wc->wr_id < XFER_WR_RECV + x->nrecv;
}

/* One completion off the CQ: ours (a control SEND) frees its buffer; any
 * other is kept in the stash when `keep`, else returned. Returns 1 when
 * it was one of our SENDs. */
static int take_one(struct xfer_ctl *x, struct ibv_wc *wc, bool keep)
{
	int ret = rc_next_wc(x->c, wc);

	if (ret)
		return ret;
	if (is_ctl_send(x, wc)) {
		if (wc->opcode != IBV_WC_SEND || x->nfree >= x->nsend)
			return rc_unexpected_wc(x->c, wc);
		x->free_send[x->nfree++] = (unsigned)(wc->wr_id - XFER_WR_SEND);
		return 1;
	}
	if (keep) {
		if (x->stash_len == x->stash_cap)
			return rc_fail(&x->c->log, EOVERFLOW, "completion stash overflow");
		x->stash[(x->stash_head + x->stash_len++) % x->stash_cap] = *wc;
	}
	return 0;
}

int xfer_ctl_send(struct xfer_ctl *x, const struct xfer_msg *m)
{
	struct ibv_wc wc;
	char desc[400];
	unsigned slot;
	size_t len;
	int ret;

	/* All send buffers in flight: take completions until one is back,
	 * keeping the others for the caller's loop. */
	while (x->nfree == 0) {
		ret = take_one(x, &wc, true);
		if (ret < 0 && ret != -EAGAIN) /* EAGAIN: the disk thread's news */
			return ret;
	}
	slot = x->free_send[--x->nfree];
	len = xfer_msg_pack((uint8_t *)x->sbuf->addr + (size_t)slot * XFER_MSG_MAX, x->send_seq, m);
	if (x->c->log.verbose) {
		xfer_msg_describe(m, desc, sizeof(desc));
		rc_trace(&x->c->log, "send %s", desc);
	}
	/* Signalled: its completion returns the buffer to the pool. */
	ret = rc_post_send(x->c, x->sbuf, (size_t)slot * XFER_MSG_MAX, len, XFER_WR_SEND + slot,
			   true);
	if (ret) {
		x->free_send[x->nfree++] = slot;
		return ret;
	}
	x->send_seq++;
	return 0;
}

int xfer_ctl_next(struct xfer_ctl *x, struct ibv_wc *wc)
{
	int ret;

	if (x->stash_len) {
		*wc = x->stash[x->stash_head];
		x->stash_head = (x->stash_head + 1) % x->stash_cap;
		x->stash_len--;
		return 0;
	}
	do {
		ret = take_one(x, wc, false);
	} while (ret == 1);
	return ret;
}

int xfer_ctl_take(struct xfer_ctl *x, const struct ibv_wc *wc, struct xfer_msg *m)
{
	unsigned i = (unsigned)(wc->wr_id - XFER_WR_RECV);
	const uint8_t *buf = (const uint8_t *)x->rbuf->addr + (size_t)i * XFER_MSG_MAX;
	char why[200], desc[400];
	int ret = 0;

	if (wc->opcode == IBV_WC_RECV) {
		/* Validate before use, on a copy: the buffer is reposted below
		 * and may be overwritten by the next message. */
		ret = xfer_msg_unpack(buf, wc->byte_len, x->recv_seq, m, why, sizeof(why));
		if (ret)
			return rc_fail(&x->c->log, EPROTO, "bad message from %s: %s", x->c->peer,
				       why);
		x->recv_seq++;
		if (x->c->log.verbose) {
			xfer_msg_describe(m, desc, sizeof(desc));
			rc_trace(&x->c->log, "recv %s", desc);
		}
	} else if (wc->opcode != IBV_WC_RECV_RDMA_WITH_IMM) {
		return rc_unexpected_wc(x->c, wc);
	}
	/* Hand the receive back at once: the credit scheme counts on it. */
	return rc_post_recv(x->c, x->rbuf, (size_t)i * XFER_MSG_MAX, XFER_MSG_MAX, wc->wr_id);
}

int xfer_ctl_drain(struct xfer_ctl *x)
{
	struct ibv_wc wc;
	int ret;

	while (x->nfree < x->nsend) {
		ret = take_one(x, &wc, true);
		if (ret < 0 && ret != -EAGAIN) /* EAGAIN: the disk thread's news */
			return ret;
	}
	return 0;
}
