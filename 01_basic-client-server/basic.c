// SPDX-License-Identifier: MIT
/*
 * basic.c - 01's wire format: HELLO, DATA and REPLY, packed and
 * validated, the test pattern, and the message of a failed ibv_reg_mr
 * (both sides print it). The RDMA calls are in client.c and server.c,
 * each side's own.
 */
#define _GNU_SOURCE
#include "basic.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

void basic_hello_pack(uint8_t buf[BASIC_HELLO_LEN], uint32_t max_payload, uint8_t lesson,
		      uint8_t flags)
{
	uint8_t *b = buf + sizeof(struct rc_hdr);

	rc_hdr_pack(buf, BASIC_T_HELLO, BASIC_HELLO_LEN - sizeof(struct rc_hdr), 0);
	rc_put32(b, max_payload);
	b[4] = lesson;
	b[5] = flags;
	memset(b + 6, 0, 2); /* reserved */
}

int basic_hello_unpack(const void *priv, size_t len, uint32_t *max_payload, uint8_t *lesson,
		       uint8_t *flags, char *err, size_t errlen)
{
	struct rc_msg m;
	int ret;

	ret = rc_hello_expect(priv, len, BASIC_T_HELLO, BASIC_HELLO_LEN - sizeof(struct rc_hdr), &m,
			      err, errlen);
	if (ret)
		return ret;
	if (m.body[6] || m.body[7])
		return rc_bad_msg(err, errlen, "HELLO with a non-zero reserved byte");
	/* A flag we do not know would be a promise we cannot keep. */
	if (m.body[5] & ~BASIC_HELLO_FLAGS)
		return rc_bad_msg(err, errlen, "HELLO with unknown flags 0x%02x", m.body[5]);
	if (m.body[4] >= BASIC_HELLO_LESSONS)
		return rc_bad_msg(err, errlen, "unknown lesson %u (1 to %u)", m.body[4],
				  BASIC_HELLO_LESSONS - 1);
	*lesson = m.body[4];
	*flags = m.body[5];
	*max_payload = rc_get32(m.body);
	if (*max_payload < 1 || *max_payload > BASIC_MAX_PAYLOAD) {
		snprintf(err, errlen, "payload size %u is outside 1..%u", *max_payload,
			 BASIC_MAX_PAYLOAD);
		return -ERANGE;
	}
	return 0;
}

size_t basic_data_pack(void *buf, uint32_t seq, const void *text, uint32_t len)
{
	static const char abc[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	uint8_t *p = (uint8_t *)buf + sizeof(struct rc_hdr);
	uint32_t i;

	rc_hdr_pack(buf, BASIC_T_DATA, len, seq);
	if (text)
		memcpy(p, text, len);
	else
		for (i = 0; i < len; i++)
			p[i] = (uint8_t)abc[(i + seq) % (sizeof(abc) - 1)];
	return sizeof(struct rc_hdr) + len;
}

int basic_msg_unpack(const void *buf, size_t byte_len, uint8_t want_type, uint32_t want_seq,
		     uint32_t max_payload, struct rc_msg *m, char *err, size_t errlen)
{
	int ret = rc_hdr_expect(buf, byte_len, want_type, want_seq, m, err, errlen);

	if (ret || (m->length >= 1 && m->length <= max_payload))
		return ret;
	return rc_bad_msg(err, errlen, "payload of %u bytes is outside 1..%u", m->length,
			  max_payload);
}

int fail_reg_mr(struct rc_log *log, size_t len, int err)
{
	return rc_fail(log, err, "ibv_reg_mr(%zu bytes): %s; hint: %s", len, strerror(err),
		       rc_call_hint("ibv_reg_mr", err));
}
