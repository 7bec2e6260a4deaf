/* SPDX-License-Identifier: MIT */
/*
 * rc-opts.h - the command line every program of the collection shares:
 * the common options and their usage text, parsing helpers for values,
 * and the exit codes. Nothing here touches RDMA.
 */
#ifndef RC_OPTS_H
#define RC_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rc-allow.h"
#include "rdma-common.h"

/* Exit codes shared by every program of the collection. */
enum rc_exit {
	RC_EXIT_OK = 0,	    /* success */
	RC_EXIT_FAIL = 1,   /* failure after connecting */
	RC_EXIT_USAGE = 2,  /* bad usage */
	RC_EXIT_NOCONN = 3, /* could not connect */
};

#define RC_DEFAULT_PORT	      "7471"
#define RC_DEFAULT_TIMEOUT_MS 10000
/* The transport's retries (--ack-timeout, --retry-count): the same values
 * as rdma-common.h's RC_ACK_TIMEOUT and RC_RETRY_COUNT, which explain them
 * (a unit test keeps them equal). */
#define RC_DEFAULT_ACK_TIMEOUT 14
#define RC_DEFAULT_RETRY_COUNT 7

/* The options every program of the collection shares. */
struct rc_opts {
	const char *port; /* -p PORT */
	bool port_given;
	const char *bind;	/* -b ADDR (servers) */
	int timeout_ms;		/* --timeout SEC */
	bool verbose;		/* -v */
	enum rc_poll_mode poll; /* --poll event|busy|adaptive */
	bool once;		/* --once (servers) */
	int max_clients;	/* --max-clients N (servers) */
	struct rc_allow allow;	/* --allow PREFIX... (servers) */
	int ack_timeout;	/* --ack-timeout N: 4.096 us x 2^N, 0..31 */
	int retry_count;	/* --retry-count N: 0..7 */
};

/* getopt_long codes of the shared long-only options; examples number
 * their own long-only options from RC_OPT_FIRST_FREE. */
enum {
	RC_OPT_TIMEOUT = 0x100,
	RC_OPT_POLL,
	RC_OPT_ONCE,
	RC_OPT_MAX_CLIENTS,
	RC_OPT_ALLOW,
	RC_OPT_ACK_TIMEOUT,
	RC_OPT_RETRY_COUNT,
	RC_OPT_FIRST_FREE = 0x180,
};

/* Put these in an example's option table and short-option string. */
#define RC_LONGOPTS_CLIENT                                                      \
	{ "port", required_argument, NULL, 'p' },                               \
		{ "timeout", required_argument, NULL, RC_OPT_TIMEOUT },         \
		{ "poll", required_argument, NULL, RC_OPT_POLL },               \
		{ "ack-timeout", required_argument, NULL, RC_OPT_ACK_TIMEOUT }, \
		{ "retry-count", required_argument, NULL, RC_OPT_RETRY_COUNT }, \
		{ "verbose", no_argument, NULL, 'v' },                          \
	{                                                                       \
		"help", no_argument, NULL, 'h'                                  \
	}
#define RC_LONGOPTS_SERVER                                                 \
	RC_LONGOPTS_CLIENT, { "bind", required_argument, NULL, 'b' },      \
		{ "once", no_argument, NULL, RC_OPT_ONCE },                \
		{ "allow", required_argument, NULL, RC_OPT_ALLOW },        \
	{                                                                  \
		"max-clients", required_argument, NULL, RC_OPT_MAX_CLIENTS \
	}
#define RC_SHORTOPTS_CLIENT ":p:vh"
#define RC_SHORTOPTS_SERVER ":p:b:vh"
/* A macro's value as a string literal: RC_STR(MAX_CLIENTS) is "16". */
#define RC_STR_(x) #x
#define RC_STR(x)  RC_STR_(x)

/* Usage text, one printed line per source line. max_clients: the server's
 * default, a plain number (16), shown as text. */
/* clang-format off */
/* RC_USAGE_LOSSY: after --timeout, for 02 and 03, whose waits rc_next_wc
 * extends on a link that still resends (common/rc-counters.c); 01 waits
 * on its own, and its --timeout is the bound of every wait. */
#define RC_USAGE_LOSSY \
	"                        (while the port's retransmission counters rise, a wait\n" \
	"                        goes on: a lossy link, still resending; the waits that\n" \
	"                        go on past SEC take at most 3 x SEC per connection, and\n" \
	"                        a transfer that moves less than 1 MiB in 2 x SEC while\n" \
	"                        the link resends ends)\n"
#define RC_USAGE_CLIENT RC_USAGE_CLIENT_WAIT("")
#define RC_USAGE_CLIENT_WAIT(lossy) \
	"  -p, --port PORT       server port (default " RC_DEFAULT_PORT ")\n" \
	"      --timeout SEC     bound of every wait (default 10)\n" lossy \
	"      --poll MODE       wait for completions by 'event' (sleep, default), 'busy'\n" \
	"                        (spin: lowest latency, one core at 100%) or 'adaptive'\n" \
	"                        (spin 100 us, then sleep)\n" \
	"      --ack-timeout N   resend what the server has not acknowledged after\n" \
	"                        4.096 us x 2^N (0 to 31, 0: never; default " RC_STR(RC_DEFAULT_ACK_TIMEOUT) ": 67 ms)\n" \
	"      --retry-count N   resends in a row without an answer before a request fails\n" \
	"                        with RETRY_EXC_ERR (0 to 7; default " RC_STR(RC_DEFAULT_RETRY_COUNT) "); the server's\n" \
	"                        QP takes this count too (7, perftest's: on Soft-RoCE\n" \
	"                        for ever, then --timeout bounds a silent peer)\n" \
	"  -v, --verbose         trace every CM event, work request and completion\n" \
	"  -h, --help            this text\n"
#define RC_USAGE_SERVER(max_clients) RC_USAGE_SERVER_WAIT(max_clients, "")
#define RC_USAGE_SERVER_WAIT(max_clients, lossy) \
	"  -p, --port PORT       port to listen on (default " RC_DEFAULT_PORT "; 0: any free one)\n" \
	"  -b, --bind ADDR       listen only on ADDR (default: all addresses)\n" \
	"      --once            exit after the first client\n" \
	"      --max-clients N   clients served at once (default " RC_STR(max_clients) ")\n" \
	"      --allow PREFIX    accept connections only from PREFIX (ADDR or ADDR/LEN,\n" \
	"                        IPv4 or IPv6; repeatable; default: from anywhere)\n" \
	"      --timeout SEC     bound of every wait within a connection (default 10)\n" lossy \
	"      --poll MODE       'event' (default), 'busy' (spins one core per client) or\n" \
	"                        'adaptive' (spins 100 us, then sleeps)\n" \
	"      --ack-timeout N   resend what a client has not acknowledged after\n" \
	"                        4.096 us x 2^N (0 to 31, 0: never; default " RC_STR(RC_DEFAULT_ACK_TIMEOUT) ": 67 ms)\n" \
	"      --retry-count N   accepted (0 to 7; default " RC_STR(RC_DEFAULT_RETRY_COUNT) ") but not used: the IB CM gives\n" \
	"                        this server's QP the client's count\n" \
	"  -v, --verbose         trace every CM event, work request and completion\n" \
	"  -h, --help            this text\n\n" \
	"Prints 'listening on ADDR port N' once ready. Stops on SIGINT/SIGTERM.\n"
/* clang-format on */

/* Defaults: port 7471, 10 s timeout, event polling. Also restarts
 * getopt, so a program (or a test) may parse more than once. */
void rc_opts_init(struct rc_opts *o, int max_clients);
/*
 * getopt_long() that handles the shared options itself. Returns 1 with *c
 * set to an option of the caller's own (optarg as usual), 0 after the last
 * option (optind: the first operand), 2 after printing usage for -h, or
 * -EINVAL with a message in err (nothing goes to stderr).
 */
struct option;
int rc_getopt(struct rc_opts *o, int argc, char *const argv[], const char *shortopts,
	      const struct option *longopts, const char *usage, int *c, char *err, size_t errlen);
/*
 * Handle one getopt_long() result c if it is a shared option (or ':'/'?',
 * a missing value or an unknown option). Returns 1 handled, 0 not a shared
 * option, 2 for -h (the caller prints its usage), or -EINVAL with a
 * message in err. Call with opterr = 0 and a short-option string that
 * starts with ':'.
 */
int rc_opts_handle(struct rc_opts *o, int c, const char *arg, char *const argv[], char *err,
		   size_t errlen);
/*
 * A client's positional arguments after the options: SERVER [PORT], and
 * nothing more. PORT may repeat -p but not contradict it; port 0 names no
 * server. Sets *server and o->port. Returns 0 or -EINVAL with err set.
 */
int rc_opts_server_args(struct rc_opts *o, int argc, char *const argv[], const char **server,
			char *err, size_t errlen);
/* A client's port must name a server: -EINVAL with err set for "0". */
int rc_opts_check_client(const struct rc_opts *o, char *err, size_t errlen);

/* What a program takes after its options (rc_opts_end). */
enum rc_operands {
	RC_OPERANDS_NONE,   /* nothing (the servers) */
	RC_OPERANDS_SERVER, /* SERVER [PORT]: rc_opts_server_args (01's, 02's clients) */
	RC_OPERANDS_OWN,    /* a client's own, from optind, left to the caller (03's) */
};
/*
 * After the rc_getopt() loop, with its last return value ret: 1 if it
 * printed --help, its error as is, else 0 once the operands are what
 * `what` says (RC_OPERANDS_SERVER sets *server and o->port; RC_OPERANDS_OWN
 * checks only the client's port), or -EINVAL with err set. The same
 * values as the examples' parse functions, which can return it.
 */
int rc_opts_end(struct rc_opts *o, int ret, int argc, char *const argv[], enum rc_operands what,
		const char **server, char *err, size_t errlen);
/* snprintf into err and return -EINVAL: for usage errors. */
int rc_usage_error(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* "event" (sleep on the completion channel), "busy" (spin on the CQ) or
 * "adaptive" (spin, then sleep). Returns 0 or -EINVAL. */
int rc_parse_poll(const char *s, enum rc_poll_mode *mode);
/* "4096", "64K", "1M", "2g" (binary units). Returns 0 or -EINVAL. */
int rc_parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* A TCP-style port 0..65535, as text. Returns 0 or -EINVAL. */
int rc_parse_port(const char *s);
/* Seconds (may be fractional, > 0, <= 1 day) to milliseconds. */
int rc_parse_timeout(const char *s, int *ms);
/* A plain unsigned integer in [min, max]. */
int rc_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out);

#endif /* RC_OPTS_H */
