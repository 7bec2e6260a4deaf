// SPDX-License-Identifier: MIT
/*
 * basic.c - messages and options shared by 01's client and server.
 */
#define _GNU_SOURCE
#include "basic.h"

#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
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

enum { OPT_TIMEOUT = 1000, OPT_ONCE, OPT_MAX_CLIENTS, OPT_POLL };

static const char client_usage[] =
	"usage: rdma-client [options] SERVER [PORT]\n"
	"Connect to an rdma-server, SEND messages, and check that each reply\n"
	"comes back unchanged.\n\n"
	"  -p, --port PORT     server port (default " RC_DEFAULT_PORT ")\n"
	"  -m, --message TEXT  text to send (default '" BASIC_DEFAULT_TEXT "')\n"
	"  -s, --size SIZE     send SIZE-byte payloads instead (K/M suffixes, at most 1M)\n"
	"  -n, --count N       messages to send, one at a time (default 1, at most 10M);\n"
	"                      with N > 1 prints round-trip latency\n"
	"      --timeout SEC   bound of every wait (default 10)\n"
	"      --poll MODE     wait for completions by 'event' (sleep, default) or\n"
	"                      'busy' (spin: lowest latency, one core at 100%)\n"
	"  -v, --verbose       trace every CM event, work request and completion\n"
	"  -h, --help          this text\n\n"
	"SERVER is the server's IP address (or name) on its RDMA netdev.\n"
	"Exit: 0 ok, 1 failed after connecting, 2 bad usage, 3 could not connect.\n";

static const char server_usage[] =
	"usage: rdma-server [options]\n"
	"Accept RDMA connections; answer each received message with the same\n"
	"payload.\n\n"
	"  -p, --port PORT       port to listen on (default " RC_DEFAULT_PORT
	"; 0 picks a free one)\n"
	"  -b, --bind ADDR       listen only on ADDR (default: all addresses)\n"
	"      --once            exit after the first client\n"
	"      --max-clients N   clients served at once (default 16)\n"
	"      --timeout SEC     bound of every wait within a connection (default 10)\n"
	"      --poll MODE       'event' (default) or 'busy': busy spins one core per client\n"
	"  -v, --verbose         trace every CM event, work request and completion\n"
	"  -h, --help            this text\n\n"
	"Prints 'listening on ADDR port N' once ready. Stops on SIGINT/SIGTERM.\n";

static int __attribute__((format(printf, 3, 4))) bad(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int basic_parse_client(int argc, char **argv, struct client_opts *o, char *err, size_t errlen)
{
	static const struct option longopts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "message", required_argument, NULL, 'm' },
		{ "size", required_argument, NULL, 's' },
		{ "count", required_argument, NULL, 'n' },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "poll", required_argument, NULL, OPT_POLL },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *port_opt = NULL;
	bool have_size = false;
	uint64_t v;
	int c;

	*o = (struct client_opts){ .port = RC_DEFAULT_PORT,
				   .count = 1,
				   .timeout_ms = RC_DEFAULT_TIMEOUT_MS };
	optind = 0; /* glibc: full re-initialisation (for tests) */
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":p:m:s:n:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (rc_parse_port(optarg))
				return bad(err, errlen, "invalid port '%s'", optarg);
			port_opt = optarg;
			break;
		case 'm': o->text = optarg; break;
		case 's':
			if (rc_parse_size(optarg, 1, BASIC_MAX_PAYLOAD, &v))
				return bad(err, errlen, "invalid size '%s' (1 to 1M)", optarg);
			o->size = (uint32_t)v;
			have_size = true;
			break;
		case 'n':
			if (rc_parse_uint(optarg, 1, BASIC_MAX_COUNT, &o->count))
				return bad(err, errlen, "invalid count '%s' (1 to 10000000)",
					   optarg);
			break;
		case OPT_TIMEOUT:
			if (rc_parse_timeout(optarg, &o->timeout_ms))
				return bad(err, errlen, "invalid timeout '%s' (seconds > 0)",
					   optarg);
			break;
		case OPT_POLL:
			if (rc_parse_poll(optarg, &o->busy_poll))
				return bad(err, errlen, "invalid poll mode '%s' (event or busy)",
					   optarg);
			break;
		case 'v': o->verbose = true; break;
		case 'h': fputs(client_usage, stdout); return 1;
		case ':': return bad(err, errlen, "option '%s' needs a value", argv[optind - 1]);
		default: return bad(err, errlen, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return bad(err, errlen, "%s", "missing SERVER");
	o->server = argv[optind++];
	if (optind < argc) {
		if (rc_parse_port(argv[optind]))
			return bad(err, errlen, "invalid port '%s'", argv[optind]);
		if (port_opt && strcmp(port_opt, argv[optind]))
			return bad(err, errlen, "%s", "two different ports given");
		o->port = argv[optind++];
	} else if (port_opt) {
		o->port = port_opt;
	}
	if (optind < argc)
		return bad(err, errlen, "unexpected argument '%s'", argv[optind]);
	if (o->text && have_size)
		return bad(err, errlen, "%s", "-m and -s exclude each other");
	if (!have_size) {
		if (!o->text)
			o->text = BASIC_DEFAULT_TEXT;
		if (strlen(o->text) < 1 || strlen(o->text) > BASIC_MAX_PAYLOAD)
			return bad(err, errlen, "%s", "the message must be 1 byte to 1M long");
		o->size = (uint32_t)strlen(o->text);
	}
	if (!strcmp(o->port, "0"))
		return bad(err, errlen, "%s", "port 0 is not a server port");
	return 0;
}

int basic_parse_server(int argc, char **argv, struct server_opts *o, char *err, size_t errlen)
{
	static const struct option longopts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "bind", required_argument, NULL, 'b' },
		{ "once", no_argument, NULL, OPT_ONCE },
		{ "max-clients", required_argument, NULL, OPT_MAX_CLIENTS },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "poll", required_argument, NULL, OPT_POLL },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	int c;

	*o = (struct server_opts){ .port = RC_DEFAULT_PORT,
				   .max_clients = 16,
				   .timeout_ms = RC_DEFAULT_TIMEOUT_MS };
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":p:b:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (rc_parse_port(optarg))
				return bad(err, errlen, "invalid port '%s'", optarg);
			o->port = optarg;
			break;
		case 'b': o->bind = optarg; break;
		case OPT_ONCE: o->once = true; break;
		case OPT_MAX_CLIENTS:
			if (rc_parse_uint(optarg, 1, 1024, &v))
				return bad(err, errlen, "invalid client count '%s' (1 to 1024)",
					   optarg);
			o->max_clients = (int)v;
			break;
		case OPT_TIMEOUT:
			if (rc_parse_timeout(optarg, &o->timeout_ms))
				return bad(err, errlen, "invalid timeout '%s' (seconds > 0)",
					   optarg);
			break;
		case OPT_POLL:
			if (rc_parse_poll(optarg, &o->busy_poll))
				return bad(err, errlen, "invalid poll mode '%s' (event or busy)",
					   optarg);
			break;
		case 'v': o->verbose = true; break;
		case 'h': fputs(server_usage, stdout); return 1;
		case ':': return bad(err, errlen, "option '%s' needs a value", argv[optind - 1]);
		default: return bad(err, errlen, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return bad(err, errlen, "unexpected argument '%s'", argv[optind]);
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
