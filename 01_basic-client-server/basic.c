// SPDX-License-Identifier: MIT
/*
 * basic.c - messages and options shared by 01's client and server.
 */
#define _GNU_SOURCE
#include "basic.h"

#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void basic_hello_pack(uint8_t buf[BASIC_HELLO_LEN], uint32_t max_payload)
{
	uint32_t be = htobe32(max_payload);

	rc_hdr_pack(buf, BASIC_T_HELLO, 4, 0);
	memcpy(buf + sizeof(struct rc_hdr), &be, 4);
}

int basic_hello_unpack(const void *priv, size_t len, uint32_t *max_payload, char *err,
		       size_t errlen)
{
	struct rc_msg m;
	uint32_t be;
	int ret;

	ret = rc_priv_unpack(priv, len, &m, err, errlen);
	if (ret)
		return ret;
	if (m.type != BASIC_T_HELLO || m.length != 4) {
		snprintf(err, errlen, "expected a HELLO of 4 bytes, got type 0x%02x of %u bytes",
			 m.type, m.length);
		return -EBADMSG;
	}
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

void basic_quote(char *out, size_t outlen, const uint8_t *p, uint32_t len, uint32_t max)
{
	size_t o = 0;
	uint32_t i;

	for (i = 0; i < len && i < max && o + 5 < outlen; i++) {
		if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\' && p[i] != '\'')
			out[o++] = (char)p[i];
		else
			o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", p[i]);
	}
	if (i < len && o + 4 <= outlen) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o < outlen ? o : outlen - 1] = '\0';
}

/* ------------------------------------------------------------------ */
/* Options                                                             */
/* ------------------------------------------------------------------ */

#define MAX_CLIENTS 16

static const char client_usage[] =
	"usage: rdma-client [options] SERVER [PORT]\n"
	"Connect to an rdma-server, SEND messages, and check that each reply\n"
	"comes back unchanged.\n\n"
	"  -m, --message TEXT    text to send (default '" BASIC_DEFAULT_TEXT "')\n"
	"  -s, --size SIZE       send SIZE-byte payloads instead (K/M suffixes, at most 1M)\n"
	"  -n, --count N         messages to send, one at a time (default 1, at most 10M);\n"
	"                        with N > 1 prints round-trip latency\n"
	"      --json            print one JSON object with the results instead (also on\n"
	"                        failure: \"ok\": false, \"error\", "
	"\"exit_code\")\n" RC_USAGE_CLIENT
	"\nSERVER is the server's IP address (or name) on its RDMA netdev.\n"
	"Exit: 0 ok, 1 failed after connecting, 2 bad usage, 3 could not connect.\n";

static const char server_usage[] =
	"usage: rdma-server [options]\n"
	"Accept RDMA connections; answer each received message with the same\n"
	"payload.\n\n"
	"  -q, --quiet           no line per message (for benchmarks: a write to\n"
	"                        stdout costs about a round trip)\n" RC_USAGE_SERVER(MAX_CLIENTS);

enum { OPT_JSON = RC_OPT_FIRST_FREE };

int basic_parse_client(int argc, char **argv, struct client_opts *o, char *err, size_t errlen)
{
	static const struct option longopts[] = {
		RC_LONGOPTS_CLIENT,
		{ "message", required_argument, NULL, 'm' },
		{ "size", required_argument, NULL, 's' },
		{ "count", required_argument, NULL, 'n' },
		{ "json", no_argument, NULL, OPT_JSON },
		{ NULL, 0, NULL, 0 },
	};
	bool have_size = false;
	uint64_t v;
	int c, ret;

	*o = (struct client_opts){ .count = 1 };
	rc_opts_init(&o->rc, 1);
	while ((ret = rc_getopt(&o->rc, argc, argv, RC_SHORTOPTS_CLIENT "m:s:n:", longopts,
				client_usage, &c, err, errlen)) == 1) {
		switch (c) {
		case 'm': o->text = optarg; break;
		case 's':
			if (rc_parse_size(optarg, 1, BASIC_MAX_PAYLOAD, &v))
				return rc_usage_error(err, errlen, "invalid size '%s' (1 to 1M)",
						      optarg);
			o->size = (uint32_t)v;
			have_size = true;
			break;
		case 'n':
			if (rc_parse_uint(optarg, 1, BASIC_MAX_COUNT, &o->count))
				return rc_usage_error(err, errlen,
						      "invalid count '%s' (1 to 10000000)", optarg);
			break;
		case OPT_JSON: o->json = true; break;
		}
	}
	if (ret) /* 2: --help was printed */
		return ret == 2 ? 1 : ret;
	ret = rc_opts_server_args(&o->rc, argc, argv, &o->server, err, errlen);
	if (ret)
		return ret;
	if (o->text && have_size)
		return rc_usage_error(err, errlen, "-m and -s exclude each other");
	if (!have_size) {
		if (!o->text)
			o->text = BASIC_DEFAULT_TEXT;
		if (strlen(o->text) < 1 || strlen(o->text) > BASIC_MAX_PAYLOAD)
			return rc_usage_error(err, errlen, "the message must be 1 byte to 1M long");
		o->size = (uint32_t)strlen(o->text);
	}
	return 0;
}

int basic_parse_server(int argc, char **argv, struct server_opts *o, char *err, size_t errlen)
{
	static const struct option longopts[] = {
		RC_LONGOPTS_SERVER,
		{ "quiet", no_argument, NULL, 'q' },
		{ NULL, 0, NULL, 0 },
	};
	int c, ret;

	*o = (struct server_opts){ 0 };
	rc_opts_init(&o->rc, MAX_CLIENTS);
	while ((ret = rc_getopt(&o->rc, argc, argv, RC_SHORTOPTS_SERVER "q", longopts, server_usage,
				&c, err, errlen)) == 1) {
		if (c == 'q')
			o->quiet = true;
	}
	if (ret) /* 2: --help was printed */
		return ret == 2 ? 1 : ret;
	if (optind < argc)
		return rc_usage_error(err, errlen, "unexpected argument '%s'", argv[optind]);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

void basic_latency(uint64_t *ns, size_t n, struct basic_lat *out)
{
	size_t p99;

	*out = (struct basic_lat){ 0 };
	if (!n)
		return;
	qsort(ns, n, sizeof(*ns), cmp_u64);
	/* Nearest-rank percentiles: p99 is the sample at rank ceil(0.99 n). */
	p99 = (n * 99 + 99) / 100;
	out->min = (double)ns[0] / 1000.0;
	out->median = (double)(n % 2 ? ns[n / 2] : (ns[n / 2 - 1] + ns[n / 2]) / 2) / 1000.0;
	out->p99 = (double)ns[p99 - 1] / 1000.0;
	out->max = (double)ns[n - 1] / 1000.0;
}
