// SPDX-License-Identifier: MIT
/*
 * rc-opts-basic.c - 01_basic-client-server's options and usage.
 */
#define _GNU_SOURCE
#include "rc-opts-basic.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#define MAX_CLIENTS 16

static const char client_usage[] =
	"usage: rdma-client [options] SERVER [PORT]\n"
	"Connect to an rdma-server, SEND messages, and check that each reply\n"
	"comes back unchanged.\n\n"
	"  -m, --message TEXT    text to send (default '" BASIC_DEFAULT_TEXT "')\n"
	"  -s, --size SIZE       send SIZE-byte payloads instead (K/M suffixes, at most 1M)\n"
	"  -n, --count N         messages to send, one at a time (default 1, at most 10M);\n"
	"                        with N > 1 prints round-trip latency\n"
	"      --inline          SEND the messages inline (IBV_SEND_INLINE), the server's\n"
	"                        replies too; -v prints the inline data asked and granted;\n"
	"                        a message larger than the device takes fails (exit 1)\n"
	"      --json            print one JSON object with the results instead (also on\n"
	"                        failure: \"ok\": false, \"error\", "
	"\"exit_code\")\n"
	"      --inject LESSON   instead of the messages, do one thing wrong on purpose and\n"
	"                        print what really happened and why (exit 4 if it showed\n"
	"                        what it teaches, 1 if something else happened). LESSON:\n"
	"          no-recv         the server posts no receive before our SEND\n"
	"          sq-overflow     one ibv_post_send of more SENDs than the send queue "
	"holds\n"
	"          arm-late        arm the CQ after the reply arrived and sleep without\n"
	"                          polling once more (waits min(--timeout, 2 s))\n" RC_USAGE_CLIENT
	"\nSERVER is the server's IP address (or name) on its RDMA netdev.\n"
	"Exit: 0 ok, 1 failed after connecting, 2 bad usage, 3 could not connect,\n"
	"4 an --inject lesson showed what it teaches.\n";

static const char server_usage[] =
	"usage: rdma-server [options]\n"
	"Accept RDMA connections; answer each received message with the same\n"
	"payload.\n\n"
	"  -q, --quiet           no line per message (for benchmarks: a write to\n"
	"                        stdout costs about a round trip)\n" RC_USAGE_SERVER(MAX_CLIENTS);

enum { OPT_JSON = RC_OPT_FIRST_FREE, OPT_INJECT, OPT_INLINE };

static const char *const inject_names[BASIC_INJECT_COUNT] = {
	[BASIC_INJECT_NONE] = "none",
	[BASIC_INJECT_NO_RECV] = "no-recv",
	[BASIC_INJECT_SQ_OVERFLOW] = "sq-overflow",
	[BASIC_INJECT_ARM_LATE] = "arm-late",
};

const char *basic_inject_name(unsigned inject)
{
	return inject < BASIC_INJECT_COUNT ? inject_names[inject] : "(unknown)";
}

static unsigned inject_parse(const char *name)
{
	unsigned i;

	for (i = 1; i < BASIC_INJECT_COUNT; i++)
		if (!strcmp(name, inject_names[i]))
			return i;
	return BASIC_INJECT_COUNT;
}

int basic_parse_client(int argc, char **argv, struct client_opts *o, char *err, size_t errlen)
{
	static const struct option longopts[] = {
		RC_LONGOPTS_CLIENT,
		{ "message", required_argument, NULL, 'm' },
		{ "size", required_argument, NULL, 's' },
		{ "count", required_argument, NULL, 'n' },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "inject", required_argument, NULL, OPT_INJECT },
		{ "inline", no_argument, NULL, OPT_INLINE },
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
		case OPT_INLINE: o->send_inline = true; break;
		case OPT_INJECT:
			o->inject = inject_parse(optarg);
			if (o->inject == BASIC_INJECT_COUNT)
				return rc_usage_error(
					err, errlen,
					"unknown --inject '%s' (no-recv, sq-overflow or arm-late)",
					optarg);
			break;
		}
	}
	ret = rc_opts_end(&o->rc, ret, argc, argv, RC_OPERANDS_SERVER, &o->server, err, errlen);
	if (ret)
		return ret;
	if (o->text && have_size)
		return rc_usage_error(err, errlen, "-m and -s exclude each other");
	if (o->inject && (o->json || o->count != 1))
		return rc_usage_error(err, errlen,
				      "--inject runs one lesson: without --json and -n");
	/* The lessons post their own SENDs, never inline. */
	if (o->inject && o->send_inline)
		return rc_usage_error(err, errlen, "--inject and --inline exclude each other");
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
	return rc_opts_end(&o->rc, ret, argc, argv, RC_OPERANDS_NONE, NULL, err, errlen);
}
