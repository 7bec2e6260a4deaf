// SPDX-License-Identifier: MIT
/*
 * basic.c - 01's wire format: HELLO, DATA and REPLY, packed and
 * validated, and the test pattern. The RDMA calls are in client.c and
 * server.c, each side's own.
 */
#define _GNU_SOURCE
#include "basic.h"

#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

void basic_hello_pack(uint8_t buf[BASIC_HELLO_LEN], uint32_t max_payload, uint8_t lesson)
{
	uint32_t be = htobe32(max_payload);
	uint8_t *b = buf + sizeof(struct rc_hdr);

	rc_hdr_pack(buf, BASIC_T_HELLO, BASIC_HELLO_LEN - sizeof(struct rc_hdr), 0);
	memcpy(b, &be, 4);
	b[4] = lesson;
	memset(b + 5, 0, 3); /* reserved */
}

int basic_hello_unpack(const void *priv, size_t len, uint32_t *max_payload, uint8_t *lesson,
		       char *err, size_t errlen)
{
	const size_t body = BASIC_HELLO_LEN - sizeof(struct rc_hdr);
	struct rc_msg m;
	uint32_t be;
	int ret;

	ret = rc_priv_unpack(priv, len, &m, err, errlen);
	if (ret)
		return ret;
	if (m.type != BASIC_T_HELLO || m.length != body) {
		snprintf(err, errlen, "expected a HELLO of %zu bytes, got type 0x%02x of %u bytes",
			 body, m.type, m.length);
		return -EBADMSG;
	}
	if (m.seq != 0) {
		snprintf(err, errlen, "HELLO with sequence number %u, expected 0", m.seq);
		return -EBADMSG;
	}
	if (m.body[5] || m.body[6] || m.body[7]) {
		snprintf(err, errlen, "HELLO with a non-zero reserved byte");
		return -EBADMSG;
	}
	if (m.body[4] >= BASIC_INJECT_COUNT) {
		snprintf(err, errlen, "unknown lesson %u (1 to %u)", m.body[4],
			 BASIC_INJECT_COUNT - 1);
		return -EBADMSG;
	}
	*lesson = m.body[4];
	memcpy(&be, m.body, 4);
	*max_payload = be32toh(be);
	if (*max_payload < 1 || *max_payload > BASIC_MAX_PAYLOAD) {
		snprintf(err, errlen, "payload size %u is outside 1..%u", *max_payload,
			 BASIC_MAX_PAYLOAD);
		return -ERANGE;
	}
	return 0;
}

size_t basic_msg_pack(void *buf, uint8_t type, uint32_t seq, const void *payload, uint32_t len)
{
	rc_hdr_pack(buf, type, len, seq);
	memcpy((uint8_t *)buf + sizeof(struct rc_hdr), payload, len);
	return sizeof(struct rc_hdr) + len;
}

int basic_msg_unpack(const void *buf, size_t byte_len, uint8_t want_type, uint32_t want_seq,
		     uint32_t max_payload, struct rc_msg *m, char *err, size_t errlen)
{
	int ret = rc_hdr_unpack(buf, byte_len, m, err, errlen);

	if (ret)
		return ret;
	if (m->type != want_type) {
		snprintf(err, errlen, "message type 0x%02x, expected 0x%02x", m->type, want_type);
		return -EBADMSG;
	}
	if (m->seq != want_seq) {
		snprintf(err, errlen, "sequence number %u, expected %u", m->seq, want_seq);
		return -EBADMSG;
	}
	if (m->length < 1 || m->length > max_payload) {
		snprintf(err, errlen, "payload of %u bytes is outside 1..%u", m->length,
			 max_payload);
		return -EBADMSG;
	}
	return 0;
}

void basic_fill_pattern(uint8_t *p, uint32_t len, uint32_t seq)
{
	static const char abc[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	uint32_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)abc[(i + seq) % (sizeof(abc) - 1)];
}
