/* SPDX-License-Identifier: MIT */
/*
 * rdma-wire.h - part of the set rdma-common.h names: the wire header every
 * message of the collection starts with, big-endian fields, the buffer a
 * peer may access, the REJECT message, and receive-and-validate: what a
 * received message must be before anything in it is used. Pure code
 * (rdma-wire.c), no device needed: unit tests and fuzzers call it.
 */
#ifndef RDMA_WIRE_H
#define RDMA_WIRE_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <infiniband/verbs.h>

/* ------------------------------------------------------------------ */
/* The wire header every message of the collection starts with.       */
/* ------------------------------------------------------------------ */

#define RC_MAGIC   0x52444d58u /* "RDMX" */
#define RC_VERSION 1

/* Message types. 0x0_ are common, 0x1_ belong to 01, 0x2_ to 02, 0x3_ to 03. */
enum rc_type {
	RC_T_REJECT = 0x01, /* private data of rdma_reject: a text reason */
};

/*
 * On the wire, all fields big-endian. 16 bytes, no padding. Followed by
 * `length` bytes of body. The receiver takes the real length from
 * wc.byte_len (or the CM event's private_data_len) and checks it against
 * `length` before trusting anything else.
 */
struct rc_hdr {
	uint32_t magic;
	uint8_t version;
	uint8_t type;
	uint16_t flags; /* must be 0 in version 1 */
	uint32_t length;
	uint32_t seq;
};
_Static_assert(sizeof(struct rc_hdr) == 16, "wire header must be 16 bytes");

/* Decoded (host-endian) header. */
struct rc_msg {
	uint8_t type;
	uint32_t length;
	uint32_t seq;
	const uint8_t *body; /* points into the received buffer */
};

/* Write a header for `type` with a body of `length` bytes into buf. */
void rc_hdr_pack(void *buf, uint8_t type, uint32_t length, uint32_t seq);
/*
 * Validate and decode `len` received bytes: size, magic, version, flags and
 * that the header's length is exactly what arrived. The type is not checked
 * here: each example knows which types it accepts. Returns 0 or -EBADMSG
 * with a reason in err.
 */
int rc_hdr_unpack(const void *buf, size_t len, struct rc_msg *out, char *err, size_t errlen);
/* The same for connection private data, which the transport pads with
 * zeros (to 56 bytes for a connect request): trailing bytes beyond the
 * header's length are allowed, missing ones are not. */
int rc_priv_unpack(const void *buf, size_t len, struct rc_msg *out, char *err, size_t errlen);
/* A message that fails validation: the reason in err, returns -EBADMSG. */
static inline int __attribute__((format(printf, 3, 4)))
rc_bad_msg(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EBADMSG;
}

/* rc_hdr_unpack, then the expected type and sequence number (01's and 02's
 * messages): 0, or -EBADMSG with what differs in err. */
static inline int rc_hdr_expect(const void *buf, size_t len, uint8_t type, uint32_t seq,
				struct rc_msg *m, char *err, size_t errlen)
{
	int ret = rc_hdr_unpack(buf, len, m, err, errlen);

	if (ret)
		return ret;
	if (m->type != type)
		return rc_bad_msg(err, errlen, "message type 0x%02x, expected 0x%02x", m->type,
				  type);
	if (m->seq != seq)
		return rc_bad_msg(err, errlen, "sequence number %u, expected %u", m->seq, seq);
	return 0;
}

/* rc_priv_unpack for a connect request's first message, a HELLO: type
 * `type`, a body of exactly body_len bytes, sequence number 0 (01's, 02's
 * and 03's). 0, or -EBADMSG with what differs in err. */
static inline int rc_hello_expect(const void *priv, size_t len, uint8_t type, size_t body_len,
				  struct rc_msg *m, char *err, size_t errlen)
{
	int ret = rc_priv_unpack(priv, len, m, err, errlen);

	if (ret)
		return ret;
	if (m->type != type || m->length != body_len)
		return rc_bad_msg(err, errlen,
				  "expected a HELLO of %zu bytes, got type 0x%02x of %u bytes",
				  body_len, m->type, m->length);
	if (m->seq != 0)
		return rc_bad_msg(err, errlen, "HELLO with sequence number %u, expected 0", m->seq);
	return 0;
}

/* Big-endian fields of n bytes (at most 8) in message bodies, byte by
 * byte: a received buffer need not be aligned for a wider load. */
static inline void rc_put_be(uint8_t *p, uint64_t v, int n)
{
	while (n-- > 0) {
		p[n] = (uint8_t)v;
		v >>= 8;
	}
}

static inline uint64_t rc_get_be(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

static inline void rc_put16(uint8_t *p, uint16_t v)
{
	rc_put_be(p, v, 2);
}

static inline void rc_put32(uint8_t *p, uint32_t v)
{
	rc_put_be(p, v, 4);
}

static inline void rc_put64(uint8_t *p, uint64_t v)
{
	rc_put_be(p, v, 8);
}

static inline uint16_t rc_get16(const uint8_t *p)
{
	return (uint16_t)rc_get_be(p, 2);
}

static inline uint32_t rc_get32(const uint8_t *p)
{
	return (uint32_t)rc_get_be(p, 4);
}

static inline uint64_t rc_get64(const uint8_t *p)
{
	return rc_get_be(p, 8);
}

/*
 * A memory region the peer may access: what a server advertises so the
 * client can RDMA READ/WRITE it. 16 bytes on the wire: be64 addr,
 * be32 rkey, be32 len.
 */
struct rc_remote_buf {
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
};
#define RC_REMOTE_BUF_WIRE 16

void rc_remote_buf_pack(void *p, const struct rc_remote_buf *r);
void rc_remote_buf_unpack(const void *p, struct rc_remote_buf *r);
/* Is [off, off+len) inside the advertised region? Overflow-safe. */
bool rc_remote_range_ok(const struct rc_remote_buf *r, uint64_t off, uint64_t len);

/* The REJECT message rdma_reject carries (rc_reject_id): `reason` (cut to
 * fit) after the header, in buf; returns its length, for rdma_reject's
 * private data. The client prints the reason. */
#define RC_REJECT_MAX 128
uint8_t rc_reject_pack(uint8_t buf[RC_REJECT_MAX], const char *reason);

/* ------------------------------------------------------------------ */
/* Receive-and-validate.                                               */
/* ------------------------------------------------------------------ */

/*
 * A message type a receiver accepts, and the exact length of its body.
 * name: for the reasons below ("DONE of 8 body bytes, expected 16"); NULL:
 * the type's number instead ("message of type 0x23 has a 8-byte body,
 * expected 16").
 */
struct rc_msg_kind {
	uint8_t type;
	uint32_t body_len;
	const char *name;
};

/*
 * Validate len received bytes, len from the completion (wc.byte_len), never
 * from the sender: rc_hdr_unpack's checks (size, magic, version, flags,
 * the header's length equal to what arrived), then the type is one of
 * kinds[0..n), its body exactly that kind's body_len, and its sequence
 * number seq. In that order; the reason names the first that differs:
 * with one kind "message type 0x23, expected 0x22", with several
 * "unexpected message type 0x7e"; then the body length; then "sequence
 * number 77, expected 1" (with a name: "DONE has sequence number ...").
 * Returns 0 with *m (m->body points into buf), or -EBADMSG with the
 * reason in err.
 */
int rc_msg_expect(const void *buf, size_t len, const struct rc_msg_kind *kinds, size_t n,
		  uint32_t seq, struct rc_msg *m, char *err, size_t errlen);

/*
 * rc_msg_expect for the receive that completed as *wc, into buf of cap
 * bytes (the receive buffer posted for it): wc must be a successful
 * IBV_WC_RECV (else -EPROTO, err naming what it is), and it took
 * wc->byte_len bytes, at most cap. Returns 0, -EPROTO or -EBADMSG with err.
 */
int rc_recv_expect(const struct ibv_wc *wc, const void *buf, size_t cap,
		   const struct rc_msg_kind *kinds, size_t n, uint32_t seq, struct rc_msg *m,
		   char *err, size_t errlen);

/* Is wc the successful completion of wr_id, of kind op? (wc->opcode means
 * something only when the status is IBV_WC_SUCCESS.) */
static inline bool rc_wc_is(const struct ibv_wc *wc, uint64_t wr_id, enum ibv_wc_opcode op)
{
	return wc->status == IBV_WC_SUCCESS && wc->wr_id == wr_id && wc->opcode == op;
}

#endif /* RDMA_WIRE_H */
