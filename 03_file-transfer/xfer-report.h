/* SPDX-License-Identifier: MIT */
/*
 * xfer-report.h - 03's results: the client's line a transfer ends with
 * (and what -v adds to it), or one JSON object with --json; and the CPU
 * time line both sides print with -v.
 */
#ifndef XFER_REPORT_H
#define XFER_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xfer-hash.h"
#include "xfer-msg.h"
#include "xfer-opts.h"
#include "xfer-sink.h"
#include "xfer-src.h"

/* What the client knows at the end, on success or failure. */
struct xfer_result {
	uint64_t size;		      /* the file's (put: ours; get: from ACCEPT) */
	uint64_t t0_ns, t1_ns;	      /* REQUEST sent, file committed */
	const uint8_t *digest;	      /* the top digest (XFER_HASH_LEN bytes) */
	const struct xfer_src *src;   /* put: the source path chosen; else NULL */
	bool accepted;		      /* the server's ACCEPT arrived, with its flags: */
	bool peer_zerocopy;	      /* get: the server's source is zero-copy */
	bool peer_inplace;	      /* put: the server receives in place */
	const struct xfer_sink *sink; /* get: our end, once chosen; else NULL */
	uint64_t copied;	      /* file bytes our CPU copied (xfer_io) */
	/* CPU time of the whole process (all threads) from setup to the end of
	 * the transfer (RUSAGE_SELF at both); cpu_known: setup began. */
	struct xfer_cpu cpu;
	bool cpu_known;
};

/* The server's end, as its ACCEPT's flags tell it (the reason of a copy
 * path is in the server's -v trace, unless our --copy asked for it): a
 * get's source, a put's destination. */
const char *xfer_peer_source(bool zerocopy, bool copy);
const char *xfer_peer_destination(bool inplace, bool copy);

/* "user 0.120 s, sys 0.340 s, 1.840 s per GiB" (per GiB of `bytes`; none
 * for 0 bytes). The client's -v and the server's -v trace say whose. */
void xfer_cpu_fmt(char *out, size_t outlen, const struct xfer_cpu *c, uint64_t bytes);

/* "put NAME: N bytes in S s (X MiB/s), xxh3-128 HEX verified", and with
 * -v how many file bytes went through the CPU, and the CPU time. */
void xfer_print_result(const struct xfer_client_opts *o, const struct xfer_result *r);

/*
 * --json: one object with what was asked and what happened, printed on
 * success and on failure alike (error: the message stderr got, or null).
 * With code RC_EXIT_USAGE and no o->local, the command line was not
 * understood: no details.
 */
void xfer_print_json(const struct xfer_client_opts *o, const struct xfer_result *r, int code,
		     const char *error);

#endif /* XFER_REPORT_H */
