// SPDX-License-Identifier: MIT
/*
 * xfer-report.c - 03's client result, as a line or as JSON. See
 * xfer-report.h.
 */
#define _GNU_SOURCE
#include "xfer-report.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "rc-json.h"
#include "xfer-hash.h"

/* CPU seconds per GiB moved, or a negative number for nothing moved. */
static double cpu_per_gib(const struct xfer_cpu *c, uint64_t bytes)
{
	return bytes ? (double)(c->user_us + c->sys_us) / 1e6 / ((double)bytes / 1073741824.0)
		     : -1.0;
}

void xfer_cpu_fmt(char *out, size_t outlen, const struct xfer_cpu *c, uint64_t bytes)
{
	int n = snprintf(out, outlen, "user %.3f s, sys %.3f s", (double)c->user_us / 1e6,
			 (double)c->sys_us / 1e6);

	if (bytes && n > 0 && (size_t)n < outlen)
		snprintf(out + n, outlen - (size_t)n, ", %.3f s per GiB", cpu_per_gib(c, bytes));
}

void xfer_print_result(const struct xfer_client_opts *o, const struct xfer_result *r)
{
	double secs = (double)(r->t1_ns - r->t0_ns) / 1e9;
	char hex[2 * XFER_HASH_LEN + 1], cpu[128], how[96];

	xfer_hash_hex(r->digest, hex);
	printf("%s %s: %" PRIu64 " bytes in %.3f s (%.1f MiB/s), %s %s verified\n",
	       o->op == XFER_PUT ? "put" : "get", o->name, r->size, secs,
	       secs > 0 ? (double)r->size / secs / 1048576.0 : 0.0, XFER_HASH_NAME, hex);
	/* -v: how much of the file went through the CPU on our side. */
	if (o->rc.verbose)
		printf("copied by the CPU: %" PRIu64 " file bytes (%s)\n", r->copied,
		       r->sink			    ? xfer_sink_copies(r->sink, how, sizeof(how))
		       : o->op == XFER_GET	    ? "pwrite from the ring"
		       : r->src && r->src->zerocopy ? "zero-copy: none"
						    : "pread into the ring");
	/* -v: what the transfer cost in CPU time, every thread of ours
	 * (the server's -v trace has its own: a benchmark adds the two). */
	if (o->rc.verbose) {
		xfer_cpu_fmt(cpu, sizeof(cpu), &r->cpu, r->size);
		printf("CPU: %s (this process, all its threads, from setup to the end of the "
		       "transfer)\n",
		       cpu);
	}
}

/* Why the server's end took its copy path, as far as we know. */
static const char *peer_reason(const struct xfer_client_opts *o)
{
	return o->copy ? "--copy" : "the server's choice (its -v trace says why)";
}

static void json_result(struct rc_json *j, const struct xfer_client_opts *o,
			const struct xfer_result *r, int code, const char *error)
{
	double secs = (double)(r->t1_ns - r->t0_ns) / 1e9;
	char hex[2 * XFER_HASH_LEN + 1];
	bool ok = code == RC_EXIT_OK;

	rc_json_object(j, NULL);
	rc_json_str(j, "program", "rdma-client");
	rc_json_str(j, "example", "03_file-transfer");
	rc_json_bool(j, "ok", ok);
	if (code != RC_EXIT_USAGE || o->local) {
		rc_json_str(j, "op", o->op == XFER_PUT ? "put" : "get");
		rc_json_str(j, "server", o->host);
		rc_json_u64(j, "port", strtoul(o->rc.port, NULL, 10));
		rc_json_str(j, "name", o->name);
		rc_json_str(j, "local", o->local);
		rc_json_u64(j, "chunk", o->chunk);
		rc_json_u64(j, "depth", o->depth);
		/* The file's size: known from the start for a put, from the
		 * server's ACCEPT for a get. */
		rc_json_u64(j, "size", r->size);
		rc_json_u64(j, "bytes", ok ? r->size : 0);
		rc_json_double(j, "seconds", ok ? secs : 0);
		rc_json_double(j, "mib_s", ok && secs > 0 ? (double)r->size / secs / 1048576.0 : 0);
		rc_json_str(j, "hash_name", XFER_HASH_NAME);
		xfer_hash_hex(r->digest, hex);
		/* Both sides computed it over the data and compared. */
		rc_json_str(j, "hash", ok ? hex : NULL);
		rc_json_bool(j, "verified", ok);
		/* Which source path, and why not zero-copy (null: it was, or
		 * not known yet). put: ours; get: the server's, from its
		 * ACCEPT (the reason then is what we know of it). */
		if (r->src) {
			rc_json_str(j, "source", r->src->zerocopy ? "zero-copy" : "copy");
			rc_json_str(j, "copy_reason", r->src->zerocopy ? NULL : r->src->why);
		} else if (r->accepted && o->op == XFER_GET) {
			rc_json_str(j, "source", r->peer_zerocopy ? "zero-copy" : "copy");
			rc_json_str(j, "copy_reason", r->peer_zerocopy ? NULL : peer_reason(o));
		} else {
			rc_json_null(j, "source");
			rc_json_null(j, "copy_reason");
		}
		/* Where the data landed, and why not in place. get: our end;
		 * put: the server's, from its ACCEPT. */
		if (r->sink) {
			rc_json_str(j, "destination", r->sink->inplace ? "in-place" : "copy");
			rc_json_str(j, "destination_reason",
				    r->sink->inplace ? r->sink->kind : r->sink->why);
		} else if (r->accepted && o->op == XFER_PUT) {
			rc_json_str(j, "destination", r->peer_inplace ? "in-place" : "copy");
			rc_json_str(j, "destination_reason",
				    r->peer_inplace ? "the server's tmpfs" : peer_reason(o));
		} else {
			rc_json_null(j, "destination");
			rc_json_null(j, "destination_reason");
		}
		/* File bytes our CPU copied between the file and the ring. */
		rc_json_u64(j, "cpu_copied_bytes", r->copied);
		/* get --direct: bytes we wrote with O_DIRECT; direct_reason:
		 * why not, or why the rest went through the page cache. */
		rc_json_u64(j, "direct_bytes", r->sink ? r->sink->direct_bytes : 0);
		rc_json_str(j, "direct_reason",
			    r->sink && r->sink->direct_why[0] ? r->sink->direct_why : NULL);
		/* CPU seconds of this process, all its threads, from setup to
		 * the end (getrusage RUSAGE_SELF); per GiB of the file once
		 * moved. null: it failed before setup. */
		if (r->cpu_known) {
			rc_json_double(j, "cpu_user_s", (double)r->cpu.user_us / 1e6);
			rc_json_double(j, "cpu_sys_s", (double)r->cpu.sys_us / 1e6);
		} else {
			rc_json_null(j, "cpu_user_s");
			rc_json_null(j, "cpu_sys_s");
		}
		if (ok && r->cpu_known && r->size)
			rc_json_double(j, "cpu_s_per_gib", cpu_per_gib(&r->cpu, r->size));
		else
			rc_json_null(j, "cpu_s_per_gib");
	}
	rc_json_end_run(j, error, code, "rdma-client");
}

void xfer_print_json(const struct xfer_client_opts *o, const struct xfer_result *r, int code,
		     const char *error)
{
	struct rc_json *j = rc_json_new("rdma-client"); /* 32 KiB, freed here */

	if (!j)
		return;
	json_result(j, o, r, code, error);
	free(j);
}

const char *xfer_peer_source(bool zerocopy, bool copy)
{
	if (zerocopy)
		return "the server's page cache -> NIC (zero-copy)";
	return copy ? "the server's pread -> ring (copy: --copy)"
		    : "the server's pread -> ring (copy: its -v trace says why)";
}

const char *xfer_peer_destination(bool inplace, bool copy)
{
	if (inplace)
		return "the server's NIC -> page cache (in place: tmpfs)";
	return copy ? "the server's ring -> pwrite (copy: --copy)"
		    : "the server's ring -> pwrite (copy: its -v trace says why)";
}
