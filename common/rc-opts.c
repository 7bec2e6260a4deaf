// SPDX-License-Identifier: MIT
/*
 * rc-opts.c - the shared command-line options and value parsers. See
 * rc-opts.h.
 */
#define _GNU_SOURCE
#include "rc-opts.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rc_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

int rc_parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	unsigned shift = 0;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	switch (*end) {
	case '\0': break;
	case 'k':
	case 'K': shift = 10; break;
	case 'm':
	case 'M': shift = 20; break;
	case 'g':
	case 'G': shift = 30; break;
	default: return -EINVAL;
	}
	if (*end) {
		end++;
		/* Allow "64KiB" and "64KB" too; both mean 65536 here. */
		if ((end[0] == 'i' || end[0] == 'I') && (end[1] == 'B' || end[1] == 'b'))
			end += 2;
		else if (end[0] == 'B' || end[0] == 'b')
			end++;
		if (*end)
			return -EINVAL;
	}
	if (shift && v > (UINT64_MAX >> shift))
		return -EINVAL;
	v <<= shift;
	if (v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

int rc_parse_poll(const char *s, enum rc_poll_mode *mode)
{
	if (s && !strcmp(s, "event"))
		*mode = RC_POLL_EVENT;
	else if (s && !strcmp(s, "busy"))
		*mode = RC_POLL_BUSY;
	else if (s && !strcmp(s, "adaptive"))
		*mode = RC_POLL_ADAPTIVE;
	else
		return -EINVAL;
	return 0;
}

int rc_parse_port(const char *s)
{
	uint64_t v;

	return rc_parse_uint(s, 0, 65535, &v);
}

int rc_parse_timeout(const char *s, int *ms)
{
	double v;
	char *end;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !(v > 0) || v > 86400)
		return -EINVAL;
	*ms = (int)(v * 1000 + 0.5);
	if (*ms < 1)
		*ms = 1;
	return 0;
}

int rc_usage_error(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

void rc_opts_init(struct rc_opts *o, int max_clients)
{
	*o = (struct rc_opts){ .port = RC_DEFAULT_PORT,
			       .timeout_ms = RC_DEFAULT_TIMEOUT_MS,
			       .max_clients = max_clients,
			       .ack_timeout = RC_DEFAULT_ACK_TIMEOUT,
			       .retry_count = RC_DEFAULT_RETRY_COUNT };
	optind = 0; /* glibc: a full restart, even after an earlier parse */
	opterr = 0; /* errors come back in err, worded by rc_opts_handle */
}

int rc_getopt(struct rc_opts *o, int argc, char *const argv[], const char *shortopts,
	      const struct option *longopts, const char *usage, int *c, char *err, size_t errlen)
{
	int ret;

	do {
		*c = getopt_long(argc, argv, shortopts, longopts, NULL);
		if (*c == -1)
			return 0;
		ret = rc_opts_handle(o, *c, optarg, argv, err, errlen);
	} while (ret == 1);
	if (ret == 2)
		fputs(usage, stdout);
	return ret == 0 ? 1 : ret;
}

/* A shared option's whole number in [min, max]: 1, or -EINVAL with
 * "invalid WHAT 'ARG' (RANGE)". */
static int int_option(const char *arg, uint64_t min, uint64_t max, int *out, const char *what,
		      const char *range, char *err, size_t errlen)
{
	uint64_t v;

	if (rc_parse_uint(arg, min, max, &v))
		return rc_usage_error(err, errlen, "invalid %s '%s' (%s)", what, arg, range);
	*out = (int)v;
	return 1;
}

int rc_opts_handle(struct rc_opts *o, int c, const char *arg, char *const argv[], char *err,
		   size_t errlen)
{
	switch (c) {
	case 'p':
		if (rc_parse_port(arg))
			return rc_usage_error(err, errlen, "invalid port '%s'", arg);
		o->port = arg;
		o->port_given = true;
		return 1;
	case 'b': o->bind = arg; return 1;
	case 'v': o->verbose = true; return 1;
	case 'h': return 2;
	case RC_OPT_ONCE: o->once = true; return 1;
	case RC_OPT_TIMEOUT:
		if (rc_parse_timeout(arg, &o->timeout_ms))
			return rc_usage_error(err, errlen, "invalid timeout '%s' (seconds > 0)",
					      arg);
		return 1;
	case RC_OPT_POLL:
		if (rc_parse_poll(arg, &o->poll))
			return rc_usage_error(err, errlen,
					      "invalid poll mode '%s' (event, busy or adaptive)",
					      arg);
		return 1;
	case RC_OPT_MAX_CLIENTS:
		return int_option(arg, 1, 1024, &o->max_clients, "client count", "1 to 1024", err,
				  errlen);
	case RC_OPT_ACK_TIMEOUT:
		/* The QP attribute is 5 bits: 4.096 us x 2^N, 0 meaning "never". */
		return int_option(arg, 0, 31, &o->ack_timeout, "ACK timeout",
				  "0 to 31: 4.096 us x 2^N", err, errlen);
	case RC_OPT_RETRY_COUNT:
		/* A 3-bit field of the CM's connect request. */
		return int_option(arg, 0, 7, &o->retry_count, "retry count", "0 to 7", err, errlen);
	case RC_OPT_ALLOW: return rc_allow_add(&o->allow, arg, err, errlen) ? -EINVAL : 1;
	case ':': return rc_usage_error(err, errlen, "option '%s' needs a value", argv[optind - 1]);
	case '?':
		/* A long option with a value it does not take ("--help=x")
		 * also lands here, with optopt set to its code, not a letter. */
		if (!strncmp(argv[optind - 1], "--", 2) && optopt)
			return rc_usage_error(err, errlen, "option '%s' takes no value",
					      argv[optind - 1]);
		if (optopt)
			return rc_usage_error(err, errlen, "unknown option '-%c'", optopt);
		return rc_usage_error(err, errlen, "unknown option '%s'", argv[optind - 1]);
	default: return 0;
	}
}

int rc_opts_check_client(const struct rc_opts *o, char *err, size_t errlen)
{
	if (!strcmp(o->port, "0"))
		return rc_usage_error(err, errlen, "port 0 is not a server port");
	return 0;
}

int rc_opts_end(struct rc_opts *o, int ret, int argc, char *const argv[], enum rc_operands what,
		const char **server, char *err, size_t errlen)
{
	if (ret) /* 2: --help was printed */
		return ret == 2 ? 1 : ret;
	switch (what) {
	case RC_OPERANDS_SERVER: return rc_opts_server_args(o, argc, argv, server, err, errlen);
	case RC_OPERANDS_OWN: return rc_opts_check_client(o, err, errlen);
	case RC_OPERANDS_NONE: break;
	}
	if (optind < argc)
		return rc_usage_error(err, errlen, "unexpected argument '%s'", argv[optind]);
	return 0;
}

int rc_opts_server_args(struct rc_opts *o, int argc, char *const argv[], const char **server,
			char *err, size_t errlen)
{
	if (optind >= argc)
		return rc_usage_error(err, errlen, "missing SERVER");
	*server = argv[optind++];
	if (optind < argc) {
		if (rc_parse_port(argv[optind]))
			return rc_usage_error(err, errlen, "invalid port '%s'", argv[optind]);
		if (o->port_given && strcmp(o->port, argv[optind]))
			return rc_usage_error(err, errlen, "two different ports given");
		o->port = argv[optind++];
	}
	if (optind < argc)
		return rc_usage_error(err, errlen, "unexpected argument '%s'", argv[optind]);
	return rc_opts_check_client(o, err, errlen);
}
