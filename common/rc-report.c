// SPDX-License-Identifier: MIT
/*
 * rc-report.c - latency statistics and quoting for the clients' output.
 */
#define _GNU_SOURCE
#include "rc-report.h"
#include "rc-opts.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
uint64_t rc_ticks(void)
{
	return __rdtsc();
}
#else
uint64_t rc_ticks(void)
{
	return now_ns();
}
#endif

void rc_lat_start(struct rc_lat *l)
{
	l->t0_ns = now_ns();
	l->t0_ticks = rc_ticks();
}

void rc_lat_end(struct rc_lat *l)
{
	uint64_t dt = rc_ticks() - l->t0_ticks;
	double ns_per_tick;
	size_t i;

	l->elapsed_ns = now_ns() - l->t0_ns;
	ns_per_tick = dt ? (double)l->elapsed_ns / (double)dt : 1.0;
	for (i = 0; i < l->n; i++)
		l->samples[i] = (uint64_t)((double)l->samples[i] * ns_per_tick + 0.5);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

void rc_lat_summary(uint64_t *ns, size_t n, struct rc_lat_sum *out)
{
	size_t p99;

	*out = (struct rc_lat_sum){ 0 };
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

void rc_lat_print(struct rc_lat *l, uint32_t size)
{
	struct rc_lat_sum s;

	rc_lat_summary(l->samples, l->n, &s);
	printf("round-trip latency (us): min %.1f median %.1f p99 %.1f max %.1f over %zu messages "
	       "of %" PRIu32 " bytes\n",
	       s.min, s.median, s.p99, s.max, l->n, size);
}

void rc_lat_json(struct rc_json *j, const char *key, struct rc_lat *l)
{
	struct rc_lat_sum s;

	if (!l->n) {
		rc_json_null(j, key);
		return;
	}
	rc_lat_summary(l->samples, l->n, &s);
	rc_json_object(j, key);
	rc_json_double(j, "min", s.min);
	rc_json_double(j, "median", s.median);
	rc_json_double(j, "p99", s.p99);
	rc_json_double(j, "max", s.max);
	rc_json_end(j);
}

/* The fields of a run, in the order --json has always printed them. */
static void json_run(struct rc_json *j, const struct rc_run *r, int code, const char *error)
{
	double secs = (double)r->lat->elapsed_ns / 1e9;
	uint64_t done = r->lat->n;

	rc_json_init(j);
	rc_json_object(j, NULL);
	rc_json_str(j, "program", r->program);
	rc_json_str(j, "example", r->example);
	rc_json_bool(j, "ok", code == RC_EXIT_OK);
	if (code != RC_EXIT_USAGE) {
		rc_json_str(j, "op", r->op);
		rc_json_str(j, "server", r->server);
		rc_json_u64(j, "port", strtoul(r->port, NULL, 10));
		rc_json_u64(j, "count", r->count);
		rc_json_u64(j, "size", r->size);
		rc_json_u64(j, "messages", done);
		rc_json_u64(j, "bytes", done * r->size);
		rc_json_double(j, "seconds", secs);
		rc_json_double(j, "messages_per_s", secs > 0 ? (double)done / secs : 0);
		/* Round trips: SEND posted to the reply's completion. */
		rc_lat_json(j, "latency_us", r->lat);
		rc_json_bool(j, "verified", code == RC_EXIT_OK);
	}
	rc_json_end_run(j, error, code, r->program);
}

void rc_run_json(const struct rc_run *r, int code, const char *error)
{
	struct rc_json *j = rc_json_new(r->program); /* each call its own */

	if (!j)
		return;
	json_run(j, r, code, error);
	free(j);
}

int rc_run_usage_error(const char *program, const char *example, int argc, char **argv,
		       const char *err)
{
	struct rc_lat none = { 0 };
	struct rc_run r = { .program = program, .example = example, .lat = &none };

	fprintf(stderr, "%s: %s (try --help)\n", program, err);
	if (rc_json_wanted(argc, argv))
		rc_run_json(&r, RC_EXIT_USAGE, err);
	return RC_EXIT_USAGE;
}

void rc_quote(char *out, size_t outlen, const uint8_t *p, uint32_t len, uint32_t max)
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
