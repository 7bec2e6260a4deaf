// SPDX-License-Identifier: MIT
/*
 * bench-hash: the host side of 03's pipeline, natively, without RDMA.
 * GB/s over a file in the page cache (read once first) for
 *   memcpy      1 MiB chunks from a mapping of the file into a 16-slot
 *               ring, one thread (what pread costs, without the syscall);
 *   pread+hash  T threads, each preads its chunks into its own slot and
 *               computes their XXH3-128 there (the copy path);
 *   hash-only   03's hash pool (xfer-hash.c) with T threads over the
 *               mapping (the zero-copy path: the CPU only reads);
 * for T = 1 and 2, the median of 5 runs each. Not part of make test:
 * `make bench-hash && build/tests/bench-hash FILE` (FILE: e.g. 1 GiB in
 * /dev/shm). Prints the load average before and after: on a busy host
 * the threads share cores with other work.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "xfer-hash.h"

#define CHUNK (1u << 20)
#define DEPTH 16
#define RUNS  5

struct job {
	int fd;
	const uint8_t *map;
	uint64_t size;
	atomic_uint_fast64_t next; /* the next chunk a pread+hash worker takes */
	atomic_uint_fast64_t sink; /* keeps the digests from being optimised out */
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void loadavg(const char *when)
{
	char buf[128] = "?";
	FILE *f = fopen("/proc/loadavg", "r");

	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			snprintf(buf, sizeof(buf), "?\n");
		fclose(f);
	}
	printf("load average %s: %s", when, buf);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double run_memcpy(struct job *j)
{
	static uint8_t ring[DEPTH][CHUNK];
	uint64_t k, n = xfer_nchunks(j->size, CHUNK);
	double t0 = now_s();

	for (k = 0; k < n; k++)
		memcpy(ring[k % DEPTH], j->map + k * CHUNK, xfer_chunk_len(j->size, CHUNK, k));
	atomic_fetch_add(&j->sink, ring[n % DEPTH][7]);
	return now_s() - t0;
}

static void *pread_hash_worker(void *arg)
{
	struct job *j = arg;
	uint8_t *slot = aligned_alloc(4096, CHUNK);
	uint64_t n = xfer_nchunks(j->size, CHUNK), k, acc = 0;
	uint8_t d[XFER_HASH_LEN];
	uint32_t len;

	if (!slot)
		return NULL;
	while ((k = atomic_fetch_add(&j->next, 1)) < n) {
		len = xfer_chunk_len(j->size, CHUNK, k);
		if (pread(j->fd, slot, len, (off_t)(k * CHUNK)) != (ssize_t)len)
			break;
		xfer_chunk_digest(slot, len, d);
		acc += d[0];
	}
	atomic_fetch_add(&j->sink, acc);
	free(slot);
	return NULL;
}

static double run_pread_hash(struct job *j, unsigned threads)
{
	pthread_t t[2];
	unsigned i, started = 0;
	double t0 = now_s();

	atomic_store(&j->next, 0);
	for (i = 0; i < threads; i++)
		if (pthread_create(&t[i], NULL, pread_hash_worker, j) == 0)
			started++;
	for (i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	return started == threads ? now_s() - t0 : -1;
}

static int hash_mapped(void *arg, uint64_t seq, uint8_t out[XFER_HASH_LEN], char *err,
		       size_t errlen)
{
	struct job *j = arg;

	(void)err;
	(void)errlen;
	xfer_chunk_digest(j->map + seq * CHUNK, xfer_chunk_len(j->size, CHUNK, seq), out);
	return 0;
}

/* The pool as 03 runs it: chunks made ready as fast as it folds them
 * (here all at once: the pool itself keeps at most DEPTH in hand). */
static double run_pool(struct job *j, unsigned threads)
{
	struct xfer_hpool *p = malloc(sizeof(*p));
	uint8_t top[XFER_HASH_LEN];
	char err[RC_ERR_LEN], why[RC_ERR_LEN];
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	struct pollfd pf = { .fd = efd, .events = POLLIN };
	uint64_t done = 0, cnt;
	double t0 = now_s(), t = -1;

	if (!p || efd < 0) {
		free(p);
		return -1;
	}
	if (xfer_hpool_start(p, threads, j->size, CHUNK, DEPTH, hash_mapped, j, efd, err,
			     sizeof(err)) == 0) {
		xfer_hpool_ready(p, p->n);
		/* As 03's main thread waits: the pool's eventfd (1 s at most). */
		while (xfer_hpool_done(p, &done, why, sizeof(why)) == 0 && done < p->n)
			if (poll(&pf, 1, 1000) == 1 && read(efd, &cnt, sizeof(cnt)) < 0)
				break;
		if (done == p->n && xfer_hpool_top(p, top) == 0) {
			t = now_s() - t0;
			atomic_fetch_add(&j->sink, top[0]);
		}
		xfer_hpool_stop(p);
	}
	close(efd);
	free(p);
	return t;
}

static void report(const char *what, unsigned threads, struct job *j, double secs[RUNS],
		   double *median)
{
	qsort(secs, RUNS, sizeof(secs[0]), cmp_double);
	*median = (double)j->size / secs[RUNS / 2] / 1e9;
	printf("%-11s %u thread%s  median %6.2f GB/s  (%.2f per thread; runs %.2f..%.2f GB/s)\n",
	       what, threads, threads > 1 ? "s" : " ", *median, *median / threads,
	       (double)j->size / secs[RUNS - 1] / 1e9, (double)j->size / secs[0] / 1e9);
}

int main(int argc, char **argv)
{
	struct job j = { .fd = -1 };
	double secs[RUNS], m, ph[3], ho[3];
	struct stat st;
	unsigned t;
	int i;

	if (argc != 2) {
		fprintf(stderr, "usage: bench-hash FILE (e.g. 1 GiB in /dev/shm)\n");
		return 2;
	}
	j.fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	if (j.fd < 0 || fstat(j.fd, &st) || st.st_size < CHUNK) {
		fprintf(stderr, "bench-hash: %s: %s\n", argv[1],
			j.fd < 0 ? strerror(errno) : "not a file of 1 MiB or more");
		return 2;
	}
	j.size = (uint64_t)st.st_size;
	j.map = mmap(NULL, j.size, PROT_READ, MAP_SHARED | MAP_POPULATE, j.fd, 0);
	if (j.map == MAP_FAILED) {
		fprintf(stderr, "bench-hash: mmap: %s\n", strerror(errno));
		return 1;
	}
	printf("%s: %" PRIu64 " bytes, chunks of %u bytes, median of %d runs\n", argv[1], j.size,
	       CHUNK, RUNS);
	loadavg("before");
	/* One warm read: everything below reads the page cache. */
	run_pread_hash(&j, 1);
	for (i = 0; i < RUNS; i++)
		secs[i] = run_memcpy(&j);
	report("memcpy", 1, &j, secs, &m);
	for (t = 1; t <= 2; t++) {
		for (i = 0; i < RUNS; i++)
			secs[i] = run_pread_hash(&j, t);
		report("pread+hash", t, &j, secs, &ph[t]);
	}
	for (t = 1; t <= 2; t++) {
		for (i = 0; i < RUNS; i++)
			secs[i] = run_pool(&j, t);
		report("hash-only", t, &j, secs, &ho[t]);
	}
	printf("2 threads / 1: pread+hash %.2fx, hash-only (03's pool) %.2fx\n", ph[2] / ph[1],
	       ho[2] / ho[1]);
	printf("cores for 25 GB/s at these rates: pread+hash %.1f, hash-only %.1f\n", 25 / ph[1],
	       25 / ho[1]);
	loadavg("after");
	munmap((void *)j.map, j.size);
	close(j.fd);
	return (unsigned)atomic_load(&j.sink) == 0xdeadbeefu; /* never: keeps sink live */
}
