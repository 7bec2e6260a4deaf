/* SPDX-License-Identifier: MIT */
/*
 * basic.h - what the client and the server of 01 share: the messages they
 * exchange and their command-line options.
 *
 * Conversation:
 *   connect request private data: HELLO { max_payload }
 *   client -> server SEND: DATA  (seq n, payload)
 *   server -> client SEND: REPLY (seq n, the same payload back)
 * Every message is a struct rc_hdr (common/rdma-common.h) and a body.
 */
#ifndef BASIC_H
#define BASIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rc-opts.h"
#include "rdma-common.h"

enum basic_type {
	BASIC_T_HELLO = 0x10, /* private data of rdma_connect */
	BASIC_T_DATA = 0x11,
	BASIC_T_REPLY = 0x12,
};

#define BASIC_MAX_PAYLOAD  (1u << 20) /* what a server agrees to receive */
#define BASIC_HELLO_LEN	   (sizeof(struct rc_hdr) + 4)
#define BASIC_DEFAULT_TEXT "Hello RDMA"
/* Each round trip keeps an 8-byte latency sample: 10M messages = 80 MB. */
#define BASIC_MAX_COUNT 10000000u

/* HELLO: the largest payload the client will send. */
void basic_hello_pack(uint8_t buf[BASIC_HELLO_LEN], uint32_t max_payload);
/* Validate a HELLO from connect private data. Returns 0 or -EBADMSG/-ERANGE
 * with a reason in err. */
int basic_hello_unpack(const void *priv, size_t len, uint32_t *max_payload, char *err,
		       size_t errlen);

/* DATA or REPLY into buf (at least 16 + len bytes); returns bytes used. */
size_t basic_msg_pack(void *buf, uint8_t type, uint32_t seq, const void *payload, uint32_t len);
/*
 * Validate a received DATA/REPLY of byte_len bytes (from wc.byte_len):
 * header, the expected type and seq, and payload <= max_payload.
 */
int basic_msg_unpack(const void *buf, size_t byte_len, uint8_t want_type, uint32_t want_seq,
		     uint32_t max_payload, struct rc_msg *m, char *err, size_t errlen);

/* Fill len bytes with the printable test pattern for message seq. */
void basic_fill_pattern(uint8_t *p, uint32_t len, uint32_t seq);

/* Quote an untrusted payload for printing: printable ASCII as is, other
 * bytes as \xNN, at most `max` input bytes then "...". */
void basic_quote(char *out, size_t outlen, const uint8_t *p, uint32_t len, uint32_t max);

/* Options. parse_*: 0 ok, 1 --help was printed, -EINVAL with err set. */
struct client_opts {
	struct rc_opts rc; /* -p, --timeout, --poll, -v */
	const char *server;
	const char *text; /* NULL when -s is used */
	uint32_t size;	  /* payload bytes */
	uint64_t count;
	bool json; /* --json: one JSON object on stdout instead of the lines */
};

struct server_opts {
	struct rc_opts rc; /* -p, -b, --once, --max-clients, --timeout, --poll, -v */
	bool quiet;	   /* -q: no line per message */
};

int basic_parse_client(int argc, char **argv, struct client_opts *o, char *err, size_t errlen);
int basic_parse_server(int argc, char **argv, struct server_opts *o, char *err, size_t errlen);

/* Latency summary of n round trips (sorts samples in place). */
struct basic_lat {
	double min, median, p99, max;
};
void basic_latency(uint64_t *samples_ns, size_t n, struct basic_lat *out);

#endif /* BASIC_H */
