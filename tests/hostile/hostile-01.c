// SPDX-License-Identifier: MIT
/*
 * hostile-01.c - the hostile client's cases against 01_basic-client-server:
 * bad HELLOs in the connect request, and bent DATA messages after it.
 * See hostile.c.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <string.h>

#include "basic.h"
#include "hostile.h"
#include "rw.h" /* RW_T_HELLO: 02's HELLO sent to 01 */

/* ------------------------------------------------------------------ */
/* 01                                                                  */
/* ------------------------------------------------------------------ */

#define B_MAX 64 /* the max_payload our 01 HELLOs announce */

static int b_hello(struct hc *h, int arg)
{
	uint8_t p[56] = { 0 };
	uint8_t len = BASIC_HELLO_LEN;

	basic_hello_pack(p, B_MAX, 0, 0);
	switch (arg) {
	case 100: len = 0; break;		      /* no HELLO at all */
	case 105: p[20] = BASIC_HELLO_LESSONS; break; /* a lesson no server knows */
	case 106: p[23] = 1; break;		      /* the last reserved byte */
	case 107: p[21] = 0x80; break;		      /* a HELLO flag nobody knows */
	case 108: /* --inline for 1 MiB messages: more than any device inlines */
		rc_put32(p + 16, BASIC_MAX_PAYLOAD);
		p[21] = BASIC_HELLO_INLINE;
		break;
	case 101: p[5] = RW_T_HELLO; break;	       /* 02's HELLO type */
	case 102: rc_put32(p + 16, 0); break;	       /* max_payload 0 */
	case 103: rc_put32(p + 16, UINT32_MAX); break; /* 4 GiB payloads */
	case 104:				       /* a body longer than a HELLO's */
		rc_put32(p + 8, 40);
		len = sizeof(p);
		break;
	default: bend_hdr(p, (enum bend)arg); break;
	}
	return connect_bad(h, p, len, 0);
}

/* Connect properly, then SEND one DATA bent as arg says. */
static int b_data(struct hc *h, int arg)
{
	uint8_t hello[BASIC_HELLO_LEN], *p;
	size_t len;
	int ret;

	basic_hello_pack(hello, B_MAX, 0, 0);
	ret = hc_connect(h, hello, sizeof(hello), 0);
	if (ret)
		return ret < 0 ? ret : 0;
	p = h->tx->addr;
	len = basic_data_pack(p, 0, "hostile!", 8);
	switch (arg) {
	case 100: p[5] = BASIC_T_REPLY; break; /* the server's type */
	case 101: len = 10; break;	       /* shorter than a header */
	case 102: /* empty payload */ len = basic_data_pack(p, 0, "", 0); break;
	case 103: /* more than the HELLO allowed: beyond its receive buffer */
		len = basic_data_pack(p, 0, NULL, 4000);
		break;
	default: bend_hdr(p, (enum bend)arg); break;
	}
	return hc_expect_dropped(h, hc_send(h, 0, len));
}

const struct kase cases01[] = {
	{ "no-hello", b_hello, 100, "rejected: .*(private data|shorter|bad magic|HELLO)" },
	{ "hello-bad-magic", b_hello, B_MAGIC, "rejected: bad magic" },
	{ "hello-bad-version", b_hello, B_VERSION, "rejected: protocol version 2" },
	{ "hello-unknown-flags", b_hello, B_FLAGS, "rejected: unknown flags" },
	{ "hello-wrong-type", b_hello, 101, "rejected: expected a HELLO" },
	{ "hello-truncated", b_hello, B_LEN_SHORT, "rejected: expected a HELLO of 8 bytes" },
	{ "hello-oversized", b_hello, 104, "rejected: expected a HELLO of 8 bytes" },
	{ "hello-unknown-lesson", b_hello, 105, "rejected: unknown lesson 3" },
	{ "hello-reserved", b_hello, 106, "rejected: HELLO with a non-zero reserved byte" },
	{ "hello-unknown-hello-flag", b_hello, 107, "rejected: HELLO with unknown flags 0x80" },
	{ "hello-inline-too-large", b_hello, 108,
	  "refused max_inline_data 1048592, .* it takes at most [0-9]+:" },
	{ "hello-wrong-seq", b_hello, B_SEQ, "rejected: HELLO with sequence number 77" },
	{ "hello-length-beyond-data", b_hello, B_LEN_HUGE, "rejected: header says 1000000" },
	{ "hello-payload-0", b_hello, 102, "rejected: payload size 0 is outside" },
	{ "hello-payload-4g", b_hello, 103, "rejected: payload size 4294967295 is outside" },
	{ "data-bad-magic", b_data, B_MAGIC, "bad message from client: bad magic" },
	{ "data-bad-version", b_data, B_VERSION, "bad message from client: protocol version" },
	{ "data-unknown-flags", b_data, B_FLAGS, "bad message from client: unknown flags" },
	{ "data-wrong-type", b_data, 100, "bad message from client: message type 0x12" },
	{ "data-unknown-type", b_data, B_TYPE_UNKNOWN, "bad message from client: message type" },
	{ "data-wrong-seq", b_data, B_SEQ, "bad message from client: sequence number 77" },
	{ "data-truncated", b_data, 101, "bad message from client: message of 10 bytes" },
	{ "data-length-short", b_data, B_LEN_SHORT, "bad message from client: header says 2" },
	{ "data-length-huge", b_data, B_LEN_HUGE, "bad message from client: header says 1000000" },
	{ "data-empty", b_data, 102, "bad message from client: payload of 0 bytes" },
	{ "data-oversized", b_data, 103,
	  "(local length|local QP operation) error.*larger than the receive buffer" },
	{ NULL, NULL, 0, NULL },
};
