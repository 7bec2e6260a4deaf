// SPDX-License-Identifier: MIT
/* Unit tests of 03's checksums (03_file-transfer/xfer-hash.c): XXH3-128
 * streamed in pieces equals one call; the hash pool's top digest is the
 * same for 1, 2 and 4 threads and equals one computed directly with
 * libxxhash; a chunk that differs from the sender's digest is named; a
 * failing chunk stops the pool; every thread is joined and has added its
 * CPU time. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <xxhash.h>

#include "xfer-hash.h"
#include "xfer-report.h"

/* ------------------------------------------------------------------ */
/* Checksum: one XXH3-128 stream                                       */
/* ------------------------------------------------------------------ */

static void checksum_streams_like_one_shot(void **state)
{
	static uint8_t data[300000];
	uint8_t d[XFER_HASH_LEN], one[XFER_HASH_LEN];
	struct xfer_hash h;
	XXH128_canonical_t c;
	char hex[2 * XFER_HASH_LEN + 1];
	size_t i;

	(void)state;
	/* XXH3-128 of nothing, as `xxhsum -H2` prints it. */
	assert_int_equal(xfer_hash_init(&h), 0);
	xfer_hash_final(&h, d);
	xfer_hash_free(&h);
	xfer_hash_hex(d, hex);
	assert_string_equal(hex, "99aa06d3014798d86001c324468d497f");
	/* Uneven pieces give the same digest as one call. */
	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + (i >> 8));
	XXH128_canonicalFromHash(&c, XXH3_128bits(data, sizeof(data)));
	memcpy(one, c.digest, sizeof(one));
	assert_int_equal(xfer_hash_init(&h), 0);
	xfer_hash_update(&h, data, 1);
	xfer_hash_update(&h, data + 1, 0);
	xfer_hash_update(&h, data + 1, 4095);
	xfer_hash_update(&h, data + 4096, sizeof(data) - 4096);
	xfer_hash_final(&h, d);
	xfer_hash_free(&h);
	xfer_hash_free(&h); /* twice is fine */
	assert_memory_equal(d, one, sizeof(d));
	/* One changed byte changes it. */
	data[123456] ^= 1;
	assert_int_equal(xfer_hash_init(&h), 0);
	xfer_hash_update(&h, data, sizeof(data));
	xfer_hash_final(&h, d);
	xfer_hash_free(&h);
	assert_memory_not_equal(d, one, sizeof(d));
}

#define CHUNK 4096u
#define SIZE  (257u * CHUNK - 123u) /* 257 chunks, the last one short */

struct data {
	uint8_t *buf;
	uint64_t size;
	uint64_t fail_at; /* UINT64_MAX: never */
};

static int hash_chunk(void *arg, uint64_t seq, uint8_t out[XFER_HASH_LEN], char *err, size_t errlen)
{
	struct data *d = arg;

	if (seq == d->fail_at) {
		snprintf(err, errlen, "cannot read chunk %llu", (unsigned long long)seq);
		return -EIO;
	}
	/* Some chunks take longer: they finish out of order. */
	if (seq % 3 == 0)
		usleep(300);
	xfer_chunk_digest(d->buf + seq * CHUNK, xfer_chunk_len(d->size, CHUNK, seq), out);
	return 0;
}

/* The reference, straight from libxxhash: each chunk's XXH3-128 in
 * canonical bytes, concatenated, then XXH3-128 of all of that at once. */
static void reference(const uint8_t *buf, uint64_t size, uint8_t out[XFER_HASH_LEN])
{
	uint64_t n = xfer_nchunks(size, CHUNK), k;
	uint8_t *all = malloc(n * XFER_HASH_LEN + 1);
	XXH128_canonical_t c;

	assert_non_null(all);
	for (k = 0; k < n; k++) {
		uint64_t len = size - k * CHUNK < CHUNK ? size - k * CHUNK : CHUNK;

		XXH128_canonicalFromHash(&c, XXH3_128bits(buf + k * CHUNK, len));
		memcpy(all + k * XFER_HASH_LEN, c.digest, XFER_HASH_LEN);
	}
	XXH128_canonicalFromHash(&c, XXH3_128bits(all, n * XFER_HASH_LEN));
	memcpy(out, c.digest, XFER_HASH_LEN);
	free(all);
}

static uint8_t *pattern(uint64_t size)
{
	uint8_t *buf = malloc(size + 1);
	uint64_t i;

	assert_non_null(buf);
	for (i = 0; i < size; i++)
		buf[i] = (uint8_t)(i * 131 + (i >> 9));
	return buf;
}

/*
 * Drive the pool as the disk thread would: chunks become ready at most
 * depth beyond those folded, at most `step` more per call. Waits on efd
 * (at most 10 s in all). With `expect`, announce the sender's digest of
 * each chunk first, as a CHUNK does. Returns xfer_hpool_done's result;
 * *done what it counted.
 */
static int drive_by(struct xfer_hpool *p, int efd, uint16_t depth, uint64_t step,
		    const uint8_t (*expect)[16], uint64_t *done, char *why, size_t whylen)
{
	struct pollfd pf = { .fd = efd, .events = POLLIN };
	uint64_t ready = 0, cnt, added;
	int ret, i;

	for (i = 0; i < 1000; i++) {
		ret = xfer_hpool_done(p, done, why, whylen);
		if (ret || *done == p->n)
			return ret;
		for (added = 0; added < step && ready < p->n && ready < *done + depth; added++) {
			if (expect)
				xfer_hpool_expect(p, ready, expect[ready]);
			ready++;
		}
		xfer_hpool_ready(p, ready);
		if (poll(&pf, 1, 10) == 1)
			assert_int_equal(read(efd, &cnt, sizeof(cnt)), sizeof(cnt));
	}
	return xfer_hpool_done(p, done, why, whylen);
}

/* As drive_by, every chunk the window allows at once. */
static int drive(struct xfer_hpool *p, int efd, uint16_t depth, const uint8_t (*expect)[16],
		 uint64_t *done, char *why, size_t whylen)
{
	return drive_by(p, efd, depth, depth, expect, done, why, whylen);
}

static void top_digest_independent_of_threads(void **state)
{
	struct data d = { .buf = pattern(SIZE), .size = SIZE, .fail_at = UINT64_MAX };
	uint8_t ref[XFER_HASH_LEN], top[XFER_HASH_LEN], c[XFER_HASH_LEN], want[XFER_HASH_LEN];
	static const unsigned threads[] = { 1, 2, 4 };
	char err[RC_ERR_LEN], why[RC_ERR_LEN];
	struct xfer_hpool *p = malloc(sizeof(*p));
	uint64_t done;
	int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	unsigned i;

	(void)state;
	assert_non_null(p);
	assert_true(efd >= 0);
	reference(d.buf, SIZE, ref);
	for (i = 0; i < 3; i++) {
		assert_int_equal(xfer_hpool_start(p, threads[i], SIZE, CHUNK, 4, hash_chunk, &d,
						  efd, err, sizeof(err)),
				 0);
		assert_int_equal(p->nthreads, threads[i]);
		/* Not done yet: no top digest. */
		assert_int_equal(xfer_hpool_top(p, top), -EAGAIN);
		assert_int_equal(drive(p, efd, 4, NULL, &done, why, sizeof(why)), 0);
		assert_int_equal(done, 257);
		xfer_hpool_stop(p);
		xfer_hpool_stop(p); /* twice is harmless */
		/* After stop: the top digest and the last chunks' digests. */
		assert_int_equal(xfer_hpool_top(p, top), 0);
		assert_memory_equal(top, ref, XFER_HASH_LEN);
		assert_int_equal(xfer_hpool_digest(p, 256, c), 0);
		xfer_chunk_digest(d.buf + 256 * CHUNK, SIZE - 256 * CHUNK, want);
		assert_memory_equal(c, want, XFER_HASH_LEN);
		assert_int_equal(xfer_hpool_digest(p, 249, c), 0);
		/* Long gone (more than 2 x depth back): not kept. */
		assert_int_equal(xfer_hpool_digest(p, 3, c), -ENOENT);
	}
	/* The chunk size is part of the digest: another one, another top. */
	{
		struct xfer_hash h;
		uint8_t one[XFER_HASH_LEN];

		assert_int_equal(xfer_top_start(&h), 0);
		xfer_chunk_digest(d.buf, SIZE, one);
		xfer_top_add(&h, one);
		xfer_top_end(&h, top);
		assert_memory_not_equal(top, ref, XFER_HASH_LEN);
	}
	close(efd);
	free(p);
	free(d.buf);
}

/*
 * As the disk thread feeds the pool: one more chunk ready per call. A
 * wake-up lost on that path leaves the chunk unhashed and the pool
 * stalls: done stays short of the last chunk when the 10 s of tries run
 * out.
 */
static void chunks_ready_one_at_a_time_all_hashed(void **state)
{
	struct data d = { .buf = pattern(SIZE), .size = SIZE, .fail_at = UINT64_MAX };
	struct xfer_hpool *p = malloc(sizeof(*p));
	int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	static const unsigned threads[] = { 1, 2, 4 };
	uint8_t ref[XFER_HASH_LEN], top[XFER_HASH_LEN];
	char err[RC_ERR_LEN], why[RC_ERR_LEN];
	uint64_t done;
	unsigned i;

	(void)state;
	assert_non_null(p);
	assert_true(efd >= 0);
	reference(d.buf, SIZE, ref);
	for (i = 0; i < 3; i++) {
		assert_int_equal(xfer_hpool_start(p, threads[i], SIZE, CHUNK, 4, hash_chunk, &d,
						  efd, err, sizeof(err)),
				 0);
		assert_int_equal(drive_by(p, efd, 4, 1, NULL, &done, why, sizeof(why)), 0);
		assert_int_equal(done, 257);
		xfer_hpool_stop(p);
		assert_int_equal(xfer_hpool_top(p, top), 0);
		assert_memory_equal(top, ref, XFER_HASH_LEN);
	}
	close(efd);
	free(p);
	free(d.buf);
}

static void empty_transfer_has_the_digest_of_nothing(void **state)
{
	struct data d = { .buf = pattern(0), .size = 0, .fail_at = UINT64_MAX };
	uint8_t top[XFER_HASH_LEN], ref[XFER_HASH_LEN];
	struct xfer_hpool *p = malloc(sizeof(*p));
	char err[RC_ERR_LEN];

	(void)state;
	assert_non_null(p);
	assert_int_equal(xfer_hpool_start(p, 2, 0, CHUNK, 1, hash_chunk, &d, -1, err, sizeof(err)),
			 0);
	assert_int_equal(xfer_hpool_top(p, top), 0);
	reference(d.buf, 0, ref); /* XXH3-128 over no digests */
	assert_memory_equal(top, ref, XFER_HASH_LEN);
	xfer_hpool_stop(p);
	free(p);
	free(d.buf);
}

static void corrupt_chunk_is_named(void **state)
{
	struct data d = { .buf = pattern(SIZE), .size = SIZE, .fail_at = UINT64_MAX };
	uint8_t(*expect)[16] = calloc(257, 16), top[XFER_HASH_LEN];
	struct xfer_hpool *p = malloc(sizeof(*p));
	char err[RC_ERR_LEN], why[RC_ERR_LEN] = "", want[RC_ERR_LEN];
	uint64_t done, k;
	unsigned t;

	(void)state;
	assert_non_null(p);
	assert_non_null(expect);
	for (k = 0; k < 257; k++)
		xfer_chunk_digest(d.buf + k * CHUNK, xfer_chunk_len(SIZE, CHUNK, k), expect[k]);
	for (t = 1; t <= 4; t *= 2) {
		int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);

		/* All as sent: verified. */
		assert_int_equal(xfer_hpool_start(p, t, SIZE, CHUNK, 8, hash_chunk, &d, efd, err,
						  sizeof(err)),
				 0);
		assert_int_equal(
			drive(p, efd, 8, (const uint8_t(*)[16])expect, &done, why, sizeof(why)), 0);
		assert_int_equal(done, 257);
		xfer_hpool_stop(p);
		/* Byte 21000 differs on the receiver: chunk 5 is named, with
		 * its range and both digests, and nothing after it counts. */
		d.buf[21000] ^= 1;
		assert_int_equal(xfer_hpool_start(p, t, SIZE, CHUNK, 8, hash_chunk, &d, efd, err,
						  sizeof(err)),
				 0);
		assert_int_equal(
			drive(p, efd, 8, (const uint8_t(*)[16])expect, &done, why, sizeof(why)),
			-EIO);
		assert_int_equal(done, 5);
		{
			uint8_t got[XFER_HASH_LEN];
			char a[33], b[33];

			xfer_chunk_digest(d.buf + 5 * CHUNK, CHUNK, got);
			xfer_hash_hex(expect[5], a);
			xfer_hash_hex(got, b);
			snprintf(want, sizeof(want),
				 "chunk 5 (bytes 20480..24575) differs: the sender hashed xxh3-128 "
				 "%s, the receiver %s",
				 a, b);
		}
		assert_string_equal(why, want);
		xfer_hpool_stop(p);
		assert_int_equal(xfer_hpool_top(p, top), -EAGAIN);
		d.buf[21000] ^= 1;
		close(efd);
	}
	/* The last, short chunk's range ends at the file's last byte. */
	xfer_chunk_differs(want, sizeof(want), 256, SIZE, CHUNK, expect[0], expect[1]);
	assert_non_null(strstr(want, "chunk 256 (bytes 1048576..1052548) differs"));
	free(expect);
	free(p);
	free(d.buf);
}

static void failing_chunk_stops_the_pool(void **state)
{
	struct data d = { .buf = pattern(SIZE), .size = SIZE, .fail_at = 7 };
	struct xfer_hpool *p = malloc(sizeof(*p));
	char err[RC_ERR_LEN], why[RC_ERR_LEN] = "";
	int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	uint64_t done;

	(void)state;
	assert_non_null(p);
	assert_int_equal(
		xfer_hpool_start(p, 2, SIZE, CHUNK, 4, hash_chunk, &d, efd, err, sizeof(err)), 0);
	assert_int_equal(drive(p, efd, 4, NULL, &done, why, sizeof(why)), -EIO);
	assert_true(done <= 7);
	assert_string_equal(why, "cannot read chunk 7");
	xfer_hpool_stop(p);
	/* Stopped with chunks never made ready: joined, no hang. */
	d.fail_at = UINT64_MAX;
	assert_int_equal(
		xfer_hpool_start(p, 4, SIZE, CHUNK, 4, hash_chunk, &d, efd, err, sizeof(err)), 0);
	xfer_hpool_ready(p, 2);
	xfer_hpool_stop(p);
	assert_int_equal(p->nthreads, 0);
	/* Out of range thread counts. */
	assert_int_equal(
		xfer_hpool_start(p, 0, SIZE, CHUNK, 4, hash_chunk, &d, efd, err, sizeof(err)),
		-EINVAL);
	assert_int_equal(xfer_hpool_start(p, XFER_MAX_HASH_THREADS + 1, SIZE, CHUNK, 4, hash_chunk,
					  &d, efd, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "hash threads 17"));
	xfer_hpool_stop(p); /* never started: nothing to do */
	close(efd);
	free(p);
	free(d.buf);
}

/* Spin until this thread has used `us` more microseconds of CPU. */
static void burn_cpu(uint64_t us)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
	do
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	while ((uint64_t)(t.tv_sec - t0.tv_sec) * 1000000u + (uint64_t)(t.tv_nsec / 1000) -
		       (uint64_t)(t0.tv_nsec / 1000) <
	       us);
}

static int busy_chunk(void *arg, uint64_t seq, uint8_t out[XFER_HASH_LEN], char *err, size_t errlen)
{
	(void)arg;
	(void)err;
	(void)errlen;
	burn_cpu(2000);
	memset(out, (int)seq, XFER_HASH_LEN);
	return 0;
}

/* Each hashing thread adds its CPU time as it ends; the line says it. */
static void cpu_time_is_counted(void **state)
{
	struct xfer_hpool *p = malloc(sizeof(*p));
	struct xfer_cpu before = { 0 }, after = { 0 }, c = { 1500000, 250000 };
	char err[RC_ERR_LEN], why[RC_ERR_LEN], line[128];
	int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	uint64_t done;

	(void)state;
	assert_non_null(p);
	/* 8 chunks of 2 ms of CPU each, on 2 threads: 16 ms at least. */
	assert_int_equal(xfer_hpool_start(p, 2, 8 * CHUNK, CHUNK, 4, busy_chunk, NULL, efd, err,
					  sizeof(err)),
			 0);
	assert_int_equal(drive(p, efd, 4, NULL, &done, why, sizeof(why)), 0);
	assert_int_equal(done, 8);
	xfer_hpool_stop(p);
	assert_true(p->cpu.user_us + p->cpu.sys_us >= 16000);
	assert_true(p->cpu.user_us + p->cpu.sys_us < 5000000);
	/* RUSAGE_THREAD: this thread's own time grows with its work. */
	xfer_cpu_add(&before, RUSAGE_THREAD);
	burn_cpu(5000);
	xfer_cpu_add(&after, RUSAGE_THREAD);
	assert_true(after.user_us + after.sys_us >= before.user_us + before.sys_us + 5000);
	xfer_cpu_fmt(line, sizeof(line), &c, 1ull << 30);
	assert_string_equal(line, "user 1.500 s, sys 0.250 s, 1.750 s per GiB");
	xfer_cpu_fmt(line, sizeof(line), &c, 512ull << 20);
	assert_string_equal(line, "user 1.500 s, sys 0.250 s, 3.500 s per GiB");
	xfer_cpu_fmt(line, sizeof(line), &c, 0); /* nothing moved: no rate */
	assert_string_equal(line, "user 1.500 s, sys 0.250 s");
	close(efd);
	free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(checksum_streams_like_one_shot),
		cmocka_unit_test(top_digest_independent_of_threads),
		cmocka_unit_test(chunks_ready_one_at_a_time_all_hashed),
		cmocka_unit_test(empty_transfer_has_the_digest_of_nothing),
		cmocka_unit_test(corrupt_chunk_is_named),
		cmocka_unit_test(failing_chunk_stops_the_pool),
		cmocka_unit_test(cpu_time_is_counted),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
