/* SPDX-License-Identifier: MIT */
/*
 * xfer-opts.h - 03's command lines: SRC and DST, the client's and the
 * server's options, and the server's limits against a HELLO.
 */
#ifndef XFER_OPTS_H
#define XFER_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rc-opts.h"
#include "xfer-msg.h"

/* ------------------------------------------------------------------ */
/* Endpoints.                                                         */
/* ------------------------------------------------------------------ */

/* SRC or DST of the command line: "HOST:NAME", "[ADDR]:NAME" or local. */
struct xfer_endpoint {
	bool remote;
	char host[256];
	const char *path; /* the NAME part, or the whole local path */
};

/* A ':' before any '/' makes it remote (as in scp: write ./a:b for a local
 * file named a:b). 0 or -EINVAL with err set. */
int xfer_parse_endpoint(const char *arg, struct xfer_endpoint *ep, char *err, size_t errlen);

/* ------------------------------------------------------------------ */
/* Options. parse_*: 0 ok, 1 --help was printed, -EINVAL with err set. */
/* ------------------------------------------------------------------ */

struct xfer_client_opts {
	struct rc_opts rc;	 /* -p, --timeout, --poll, -v: as every example */
	const char *secret_file; /* --secret FILE, or NULL */
	enum xfer_op op;
	char host[256];
	const char *name;		  /* the remote name */
	const char *local;		  /* the local path */
	char name_buf[XFER_NAME_MAX + 1]; /* put to "HOST:": the source's basename */
	uint32_t chunk;
	uint16_t depth;
	unsigned hash_threads; /* --hash-threads: chunk digests at once */
	bool force;
	bool copy;	/* --copy: rings on both sides, never zero-copy or in place */
	bool zero_copy; /* --zero-copy: the page cache where allowed, even on Soft-RoCE */
	bool direct;	/* --direct: the receiver pwrites with O_DIRECT (xfer-sink.h) */
	int progress;	/* -1: if stderr is a TTY; 0 off; 1 on */
	bool quiet;
	bool json; /* --json: one JSON object on stdout instead of the line */
};

struct xfer_limits {
	uint32_t max_chunk;
	uint16_t max_depth;
	uint64_t max_mem; /* chunk x depth, per client */
};

struct xfer_server_opts {
	struct rc_opts rc; /* -p, -b, --once, --max-clients, --timeout, --poll, -v */
	const char *root;
	unsigned hash_threads; /* --hash-threads, per transfer */
	struct xfer_limits lim;
	const char *secret_file; /* --secret FILE: requests need a proof */
	bool read_only;		 /* --read-only: get only */
	bool write_only;	 /* --write-only: put only */
	bool copy;		 /* --copy: always our ring (get: pread; put: pwrite) */
	bool zero_copy;		 /* --zero-copy: the page cache where allowed, even on Soft-RoCE */
	bool direct;		 /* --direct: a put's pwrite with O_DIRECT */
};

int xfer_parse_client(int argc, char **argv, struct xfer_client_opts *o, char *err, size_t errlen);
int xfer_parse_server(int argc, char **argv, struct xfer_server_opts *o, char *err, size_t errlen);

/* The most text a connect reject carries to the client (rc_reject: 128
 * bytes of private data, less the header). */
#define XFER_REJECT_MAX 112

/* The server's limits against a HELLO (max_msg_sz: the port's). 0, or
 * -ERANGE with the reason, meant for the client, in err (at most
 * XFER_REJECT_MAX bytes). */
int xfer_check_limits(const struct xfer_hello *h, const struct xfer_limits *lim,
		      uint32_t max_msg_sz, char *err, size_t errlen);

/* A ring that fits the locked-memory limit `limit` (bytes), as options
 * for the message of a ring that did not: "-c 1M -t 6", or "nothing
 * useful fits: raise the limit". */
void xfer_ring_hint(char *hint, size_t len, uint32_t chunk, uint16_t depth, uint64_t limit);

/* "16 MiB", "4 KiB", "3 B": sizes for messages. */
void xfer_fmt_size(char *out, size_t outlen, uint64_t bytes);

#endif /* XFER_OPTS_H */
