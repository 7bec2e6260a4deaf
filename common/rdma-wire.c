// SPDX-License-Identifier: MIT
/*
 * rdma-wire.c - part of the set rdma-common.h names: the wire header,
 * connection private data, the advertised buffer, the REJECT message, and
 * receive-and-validate. Pure code, no device: see rdma-wire.h.
 */
#define _GNU_SOURCE
#include "rdma-common.h" /* rdma-wire.h, and rc_wc_opcode_str */

#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* ---- Wire header ---- */

void rc_hdr_pack(void *buf, uint8_t type, uint32_t length, uint32_t seq)
{
	struct rc_hdr h = {
		.magic = htobe32(RC_MAGIC),
		.version = RC_VERSION,
		.type = type,
		.flags = 0,
		.length = htobe32(length),
		.seq = htobe32(seq),
	};

	/* memcpy: the buffer need not be aligned for struct rc_hdr. */
	memcpy(buf, &h, sizeof(h));
}

int rc_hdr_unpack(const void *buf, size_t len, struct rc_msg *out, char *err, size_t errlen)
{
	struct rc_hdr h;

	if (len < sizeof(h)) {
		snprintf(err, errlen, "message of %zu bytes is shorter than the %zu-byte header",
			 len, sizeof(h));
		return -EBADMSG;
	}
	memcpy(&h, buf, sizeof(h));
	if (be32toh(h.magic) != RC_MAGIC) {
		snprintf(err, errlen, "bad magic 0x%08x (expected 0x%08x): not one of our messages",
			 be32toh(h.magic), RC_MAGIC);
		return -EBADMSG;
	}
	if (h.version != RC_VERSION) {
		snprintf(err, errlen, "protocol version %u, this program speaks %u", h.version,
			 RC_VERSION);
		return -EBADMSG;
	}
	if (h.flags != 0) {
		snprintf(err, errlen, "unknown flags 0x%04x", be16toh(h.flags));
		return -EBADMSG;
	}
	if ((uint64_t)be32toh(h.length) != len - sizeof(h)) {
		snprintf(err, errlen, "header says %" PRIu32 " body bytes, %zu arrived",
			 be32toh(h.length), len - sizeof(h));
		return -EBADMSG;
	}
	out->type = h.type;
	out->length = be32toh(h.length);
	out->seq = be32toh(h.seq);
	out->body = (const uint8_t *)buf + sizeof(h);
	return 0;
}

int rc_priv_unpack(const void *buf, size_t len, struct rc_msg *out, char *err, size_t errlen)
{
	struct rc_hdr h;
	uint64_t want;

	/* The transport pads private data (to 56 bytes for an IB/RoCE connect
	 * request): only the header's length tells where ours ends. */
	if (len < sizeof(h)) {
		snprintf(err, errlen,
			 "private data of %zu bytes is shorter than the %zu-byte header", len,
			 sizeof(h));
		return -EBADMSG;
	}
	memcpy(&h, buf, sizeof(h));
	want = sizeof(h) + (uint64_t)be32toh(h.length);
	if (want > len) {
		snprintf(err, errlen, "header says %" PRIu32 " body bytes, only %zu arrived",
			 be32toh(h.length), len - sizeof(h));
		return -EBADMSG;
	}
	return rc_hdr_unpack(buf, (size_t)want, out, err, errlen);
}

void rc_remote_buf_pack(void *p, const struct rc_remote_buf *r)
{
	rc_put64(p, r->addr);
	rc_put32((uint8_t *)p + 8, r->rkey);
	rc_put32((uint8_t *)p + 12, r->len);
}

void rc_remote_buf_unpack(const void *p, struct rc_remote_buf *r)
{
	r->addr = rc_get64(p);
	r->rkey = rc_get32((const uint8_t *)p + 8);
	r->len = rc_get32((const uint8_t *)p + 12);
}

bool rc_remote_range_ok(const struct rc_remote_buf *r, uint64_t off, uint64_t len)
{
	/* Written so that nothing can overflow: off <= len_total, then
	 * len <= what is left. */
	return off <= r->len && len <= r->len - off;
}

uint8_t rc_reject_pack(uint8_t buf[RC_REJECT_MAX], const char *reason)
{
	size_t n = strnlen(reason, RC_REJECT_MAX - sizeof(struct rc_hdr));

	rc_hdr_pack(buf, RC_T_REJECT, (uint32_t)n, 0);
	memcpy(buf + sizeof(struct rc_hdr), reason, n);
	return (uint8_t)(sizeof(struct rc_hdr) + n);
}

/* ---- Receive-and-validate ---- */

/* The kind of m's type among kinds[0..n), or NULL with the reason in err. */
static const struct rc_msg_kind *find_kind(const struct rc_msg *m, const struct rc_msg_kind *kinds,
					   size_t n, char *err, size_t errlen)
{
	for (size_t i = 0; i < n; i++)
		if (kinds[i].type == m->type)
			return &kinds[i];
	if (n == 1)
		rc_bad_msg(err, errlen, "message type 0x%02x, expected 0x%02x", m->type,
			   kinds[0].type);
	else
		rc_bad_msg(err, errlen, "unexpected message type 0x%02x", m->type);
	return NULL;
}

int rc_msg_expect(const void *buf, size_t len, const struct rc_msg_kind *kinds, size_t n,
		  uint32_t seq, struct rc_msg *m, char *err, size_t errlen)
{
	const struct rc_msg_kind *k;
	int ret;

	/* Size, magic, version, flags, header length == what arrived. */
	ret = rc_hdr_unpack(buf, len, m, err, errlen);
	if (ret)
		return ret;
	k = find_kind(m, kinds, n, err, errlen);
	if (!k)
		return -EBADMSG;
	/* Fixed-size bodies: any other length is not this message. */
	if (m->length != k->body_len && k->name)
		return rc_bad_msg(err, errlen, "%s of %" PRIu32 " body bytes, expected %" PRIu32,
				  k->name, m->length, k->body_len);
	if (m->length != k->body_len)
		return rc_bad_msg(err, errlen,
				  "message of type 0x%02x has a %" PRIu32
				  "-byte body, expected %" PRIu32,
				  m->type, m->length, k->body_len);
	/* The next in order, not a replay or one from the future. */
	if (m->seq != seq && k->name)
		return rc_bad_msg(err, errlen,
				  "%s has sequence number %" PRIu32 ", expected %" PRIu32, k->name,
				  m->seq, seq);
	if (m->seq != seq)
		return rc_bad_msg(err, errlen, "sequence number %" PRIu32 ", expected %" PRIu32,
				  m->seq, seq);
	return 0;
}

int rc_recv_expect(const struct ibv_wc *wc, const void *buf, size_t cap,
		   const struct rc_msg_kind *kinds, size_t n, uint32_t seq, struct rc_msg *m,
		   char *err, size_t errlen)
{
	/* wc->opcode and byte_len mean something only for a success. */
	if (wc->status != IBV_WC_SUCCESS) {
		snprintf(err, errlen, "work request %" PRIu64 " failed: %s", wc->wr_id,
			 ibv_wc_status_str(wc->status));
		return -EPROTO;
	}
	if (wc->opcode != IBV_WC_RECV) {
		snprintf(err, errlen,
			 "completion of work request %" PRIu64 " is a %s, not a message", wc->wr_id,
			 rc_wc_opcode_str(wc->opcode));
		return -EPROTO;
	}
	/* The NIC never writes past the posted buffer; a larger byte_len
	 * means the wrong buffer was named for this completion. */
	if (wc->byte_len > cap) {
		snprintf(err, errlen, "%" PRIu32 " bytes received into a buffer of %zu",
			 wc->byte_len, cap);
		return -EPROTO;
	}
	return rc_msg_expect(buf, wc->byte_len, kinds, n, seq, m, err, errlen);
}
