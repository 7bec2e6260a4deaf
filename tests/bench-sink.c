// SPDX-License-Identifier: MIT
/*
 * bench-sink: 03's receiving end natively, without RDMA: what writing a
 * received file costs with plain pwrite (into the page cache, writeback
 * bounded as 03 does it) and with --direct (O_DIRECT from the ring).
 * xfer-sink.c's own functions write MiB mebibytes (default 256) into DIR in
 * 64 KiB chunks from a page-aligned ring of 16 slots, then fsync
 * (xfer_sink_sync), then remove the file; RUNS runs per mode, alternating,
 * medians. It prints MiB/s (fsync included) and this process's CPU seconds
 * (user + system, getrusage) per GiB: the copy into the page cache is
 * system time of this process; the kernel's writeback threads are not
 * counted. Not part of make test: `make bench-sink &&
 * build/tests/bench-sink DIR [MiB]`.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "xfer-sink.h"

#define CHUNK (64u << 10)
#define DEPTH 16
#define RUNS  5

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v)
{
	qsort(v, RUNS, sizeof(*v), cmp_double);
	return v[RUNS / 2];
}

/* One run: 0 with the MiB/s and CPU s/GiB, or -1 with a message. */
static int run(int dirfd, const uint8_t *ring, uint64_t size, bool direct, double *mibs,
	       double *cpu_gib, char *path, size_t pathlen)
{
	char err[RC_ERR_LEN];
	struct xfer_sink s;
	double t0, c0;

	if (xfer_sink_open(&s, dirfd, "bench-sink.data", 0, err, sizeof(err))) {
		fprintf(stderr, "bench-sink: %s\n", err);
		return -1;
	}
	xfer_sink_choose(&s, NULL, xfer_choose_flags(true, false, direct, 0), 0, size, CHUNK, DEPTH,
			 0, NULL);
	xfer_sink_path(&s, path, pathlen);
	t0 = now_s();
	c0 = cpu_s();
	for (uint64_t k = 0; k * CHUNK < size; k++) {
		if (xfer_sink_write(&s, ring + (k % DEPTH) * CHUNK, CHUNK, k * CHUNK, err,
				    sizeof(err))) {
			fprintf(stderr, "bench-sink: %s\n", err);
			xfer_sink_abort(&s);
			return -1;
		}
	}
	if (xfer_sink_sync(&s, size, err, sizeof(err))) {
		fprintf(stderr, "bench-sink: %s\n", err);
		xfer_sink_abort(&s);
		return -1;
	}
	*mibs = (double)size / (1 << 20) / (now_s() - t0);
	*cpu_gib = (cpu_s() - c0) / ((double)size / (1 << 30));
	xfer_sink_abort(&s);
	return 0;
}

int main(int argc, char **argv)
{
	double rate[2][RUNS], cpu[2][RUNS], load[3];
	char path[2][400];
	uint64_t mib = argc > 2 ? strtoull(argv[2], NULL, 10) : 256, size = mib << 20;
	uint8_t *ring = aligned_alloc(XFER_DIRECT_ALIGN, (size_t)CHUNK * DEPTH);
	int dirfd;

	if (argc < 2 || argc > 3 || !mib || !ring) {
		fprintf(stderr, "usage: bench-sink DIR [MiB (default 256)]\n");
		return 2;
	}
	dirfd = open(argv[1], O_RDONLY | O_DIRECTORY);
	if (dirfd < 0) {
		perror(argv[1]);
		return 2;
	}
	/* Random bytes: no file system compresses or skips them. */
	for (size_t off = 0; off < (size_t)CHUNK * DEPTH;) {
		ssize_t n = getrandom(ring + off, (size_t)CHUNK * DEPTH - off, 0);

		if (n <= 0)
			return 1;
		off += (size_t)n;
	}
	if (getloadavg(load, 3) == 3)
		printf("load average before: %.2f %.2f %.2f\n", load[0], load[1], load[2]);
	for (int r = 0; r < RUNS; r++)
		for (int m = 0; m < 2; m++) {
			int d = r % 2 ? 1 - m : m; /* alternate which goes first */

			if (run(dirfd, ring, size, d, &rate[d][r], &cpu[d][r], path[d],
				sizeof(path[d])))
				return 1;
		}
	printf("%" PRIu64 " MiB in %u KiB chunks into %s, median of %d runs each:\n", mib,
	       CHUNK >> 10, argv[1], RUNS);
	for (int d = 0; d < 2; d++)
		printf("  %-8s %8.1f MiB/s  %6.3f CPU s/GiB  (%s)\n", d ? "--direct" : "pwrite",
		       median(rate[d]), median(cpu[d]), path[d]);
	if (getloadavg(load, 3) == 3)
		printf("load average after: %.2f %.2f %.2f\n", load[0], load[1], load[2]);
	free(ring);
	close(dirfd);
	return 0;
}
