/* SPDX-License-Identifier: MIT */
/*
 * rc-report.h - what a client reports about its messages: round-trip
 * latency statistics, with a clock cheap enough to read per message, and
 * untrusted bytes quoted for printing. Nothing here touches RDMA.
 */
#ifndef RC_REPORT_H
#define RC_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "rc-json.h"

/*
 * The clock for latency samples. clock_gettime() is a system call wherever
 * the kernel cannot read the TSC itself (hpet in many VMs: 2 to 3 us each,
 * measured in our Soft-RoCE VM), which would land in every sample. So on
 * x86 the samples count ticks of the CPU's time-stamp counter (one
 * instruction; constant-rate on any x86 CPU of the last 15 years) and
 * rc_lat_end converts them with the rate it measures over the whole run
 * against CLOCK_MONOTONIC. Elsewhere the ticks are simply nanoseconds.
 */
uint64_t rc_ticks(void);

/* n round trips: samples[] in ticks until rc_lat_end, then in ns. */
struct rc_lat {
	uint64_t *samples;
	size_t n;
	uint64_t t0_ns, t0_ticks; /* rc_lat_start */
	uint64_t elapsed_ns;	  /* rc_lat_end: from start to end */
};
/* Summary in microseconds; nearest-rank p99. */
struct rc_lat_sum {
	double min, median, p99, max;
};

void rc_lat_start(struct rc_lat *l);
/* Sets elapsed_ns and converts the n samples taken from ticks to ns. */
void rc_lat_end(struct rc_lat *l);
/* Summary of samples[0..n) in ns (sorts them in place); zeros if n is 0. */
void rc_lat_summary(uint64_t *ns, size_t n, struct rc_lat_sum *out);
/* The line "round-trip latency (us): min .. median .. p99 .. max .. over
 * N messages of SIZE bytes" on stdout. */
void rc_lat_print(struct rc_lat *l, uint32_t size);
/* "key": { "min", "median", "p99", "max" } in microseconds, or null when
 * there is no sample. */
void rc_lat_json(struct rc_json *j, const char *key, struct rc_lat *l);

/* A client's run of round trips, as --json reports it. */
struct rc_run {
	const char *program, *example, *op;
	const char *server, *port;
	uint64_t count, size; /* messages asked for, payload bytes */
	struct rc_lat *lat;   /* lat->n round trips done and verified */
};
/*
 * --json: one object with what was asked and what happened, printed on
 * success and on failure alike. error: the message stderr got, or NULL.
 * For code 2 (bad usage) only program, example, ok, error and exit_code.
 * Each call builds its text in memory of its own (freed before it
 * returns), so threads may call it at once, each with its own run.
 */
void rc_run_json(const struct rc_run *r, int code, const char *error);
/* A bad command line: "PROGRAM: ERR (try --help)" on stderr and, if --json
 * is among the arguments, its object (exit code 2) on stdout. Returns 2. */
int rc_run_usage_error(const char *program, const char *example, int argc, char **argv,
		       const char *err);

/* Quote an untrusted payload for printing: printable ASCII as is, other
 * bytes (and \ and ') as \xNN, at most `max` input bytes then "...". */
void rc_quote(char *out, size_t outlen, const uint8_t *p, uint32_t len, uint32_t max);

#endif /* RC_REPORT_H */
