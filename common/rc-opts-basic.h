/* SPDX-License-Identifier: MIT */
/*
 * rc-opts-basic.h - the command line of 01_basic-client-server. Option
 * parsing is what 01 takes from common/ (with the wire header, the hints
 * and the bounded waits), so that its own files hold the RDMA lesson.
 */
#ifndef RC_OPTS_BASIC_H
#define RC_OPTS_BASIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rc-opts.h"

#define BASIC_MAX_PAYLOAD  (1u << 20) /* what a server agrees to receive */
#define BASIC_DEFAULT_TEXT "Hello RDMA"
/* Each round trip keeps an 8-byte latency sample: 10M messages = 80 MB. */
#define BASIC_MAX_COUNT 10000000u

/*
 * 01's --inject lessons (01_basic-client-server/lessons.c). The number is
 * also the HELLO's `lesson` byte: the client says which lesson it runs and
 * the server does its part. 0: a normal run.
 */
enum basic_inject {
	BASIC_INJECT_NONE = 0,
	BASIC_INJECT_NO_RECV = 1,     /* the server posts no receive before our SEND */
	BASIC_INJECT_SQ_OVERFLOW = 2, /* more SENDs in one post than the send queue holds */
	/* The CQ armed after the reply arrived, no poll after: the client's
	 * alone (its HELLO says 0, the server answers as for any client). */
	BASIC_INJECT_ARM_LATE = 3,
	BASIC_INJECT_COUNT
};
/* The HELLO's lesson bytes a server takes: 0 and the lessons it has a part
 * in (1 to BASIC_HELLO_LESSONS - 1); arm-late's client says 0. */
#define BASIC_HELLO_LESSONS BASIC_INJECT_ARM_LATE

/* "no-recv", ... ("none" for 0, "(unknown)" past the last). */
const char *basic_inject_name(unsigned inject);

/* Options. parse_*: 0 ok, 1 --help was printed, -EINVAL with err set. */
struct client_opts {
	struct rc_opts rc; /* -p, --timeout, --poll, -v */
	const char *server;
	const char *text; /* NULL when -s is used */
	uint32_t size;	  /* payload bytes */
	uint64_t count;
	bool json;		  /* --json: one JSON object on stdout instead of the lines */
	enum basic_inject inject; /* --inject: the lesson to run instead of -n messages */
	bool send_inline;	  /* --inline: both sides SEND with IBV_SEND_INLINE */
};

struct server_opts {
	struct rc_opts rc; /* -p, -b, --once, --max-clients, --timeout, --poll, -v */
	bool quiet;	   /* -q: no line per message */
};

int basic_parse_client(int argc, char **argv, struct client_opts *o, char *err, size_t errlen);
int basic_parse_server(int argc, char **argv, struct server_opts *o, char *err, size_t errlen);

#endif /* RC_OPTS_BASIC_H */
