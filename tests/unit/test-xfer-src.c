// SPDX-License-Identifier: MIT
/* Unit tests of 03's source side (03_file-transfer/xfer-src.c): the window
 * arithmetic, the locked-memory decision, hashing a mapping that shrinks
 * (SIGBUS), and the changed-source checks, on a real file, no device. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "xfer-ctl.h"
#include "xfer-src.h"

#define MiB (1ull << 20)

/* ------------------------------------------------------------------ */
/* Window arithmetic                                                   */
/* ------------------------------------------------------------------ */

static void windows_hold_enough_chunks(void **state)
{
	(void)state;
	/* 64 MiB of 1 MiB chunks, for a file larger than that. */
	assert_int_equal(xfer_win_chunks(1000 * MiB, 1 << 20, 16), 64);
	/* Never fewer than 2 x depth chunks (the hand-over needs them). */
	assert_int_equal(xfer_win_chunks(1000 * MiB, 16 << 20, 16), 32);
	/* Never more than the file has: one window. */
	assert_int_equal(xfer_win_chunks(3 * MiB + 1, 1 << 20, 16), 4);
	assert_int_equal(xfer_win_chunks(1, 4096, 1), 1);
	assert_int_equal(xfer_win_chunks(0, 4096, 1), 1);
}

static void windows_turn_depth_chunks_in(void **state)
{
	/* 100 chunks, windows of 40, depth 8: window 1 while chunk 7 is
	 * handled, window 2 while chunk 47; none for the last window. */
	uint64_t seq, turns = 0;

	(void)state;
	assert_true(xfer_win_turn(7, 100 * 4096, 4096, 8, 40) == 1);
	assert_true(xfer_win_turn(47, 100 * 4096, 4096, 8, 40) == 2);
	assert_true(xfer_win_turn(87, 100 * 4096, 4096, 8, 40) == UINT64_MAX);
	for (seq = 0; seq < 100; seq++)
		turns += xfer_win_turn(seq, 100 * 4096, 4096, 8, 40) != UINT64_MAX;
	assert_true(turns == 2);
	/* One window: never a turn. */
	assert_true(xfer_win_turn(0, 4096, 4096, 1, 1) == UINT64_MAX);
}

static void window_ranges_are_page_aligned(void **state)
{
	uint64_t off, len, w = xfer_win_chunks(200 * MiB, 5000, 8);

	(void)state;
	assert_int_equal(w, 64 * MiB / 5000);
	/* Window 0 starts at 0 and ends where window 1 begins. */
	xfer_win_range(200 * MiB, 5000, w, 0, 4096, &off, &len);
	assert_int_equal(off, 0);
	assert_int_equal(len, w * 5000);
	/* Window 1 starts mid-page: the map begins on the page below, and
	 * still covers exactly up to its last chunk. */
	xfer_win_range(200 * MiB, 5000, w, 1, 4096, &off, &len);
	assert_int_equal(off % 4096, 0);
	assert_true(off <= w * 5000 && w * 5000 - off < 4096);
	assert_int_equal(off + len, 2 * w * 5000);
	/* The last window ends at the end of the file. */
	xfer_win_range(200 * MiB, 5000, w, 3, 4096, &off, &len);
	assert_int_equal(off + len, 200 * MiB);
}

static void memlock_limit_decides(void **state)
{
	char why[300];
	uint64_t w;

	(void)state;
	/* No limit: as planned. */
	w = 64;
	assert_int_equal(xfer_win_fit(1000 * MiB, 1 << 20, 16, (uint64_t)RLIM_INFINITY, 16 * MiB,
				      &w, why, sizeof(why)),
			 0);
	assert_int_equal(w, 64);
	/* Room for two windows next to the ring. */
	w = 64;
	assert_int_equal(
		xfer_win_fit(1000 * MiB, 1 << 20, 16, 200 * MiB, 16 * MiB, &w, why, sizeof(why)),
		0);
	assert_int_equal(w, 64);
	/* Less room: smaller windows, still 2 x depth chunks. */
	w = 64;
	assert_int_equal(
		xfer_win_fit(1000 * MiB, 1 << 20, 16, 100 * MiB, 16 * MiB, &w, why, sizeof(why)),
		0);
	assert_true(w >= 32 && w < 64 && 2 * w * MiB <= 84 * MiB);
	/* A one-window file needs only its own size. */
	w = 1;
	assert_int_equal(xfer_win_fit(100, 1 << 20, 3, 4 * MiB, 3 * MiB, &w, why, sizeof(why)), 0);
	/* No room: the copy path, and the reason names the limit. */
	w = 8;
	assert_int_equal(xfer_win_fit(8 * MiB, 1 << 20, 3, 4 * MiB, 3 * MiB, &w, why, sizeof(why)),
			 -ENOMEM);
	assert_string_equal(why, "the locked-memory limit (`ulimit -l` 4 MiB, 3 MiB of it taken) "
				 "cannot also pin 8 MiB of file windows");
	/* What the control buffers take: two regions of whole pages. */
	assert_int_equal(xfer_ctl_locked(1, 1), 2 * (uint64_t)sysconf(_SC_PAGESIZE));
	assert_int_equal(xfer_ctl_locked(18, 18) % (uint64_t)sysconf(_SC_PAGESIZE), 0);
	assert_true(xfer_ctl_locked(18, 18) >= 36 * XFER_MSG_MAX);
}

/* ------------------------------------------------------------------ */
/* A real file                                                         */
/* ------------------------------------------------------------------ */

static char path[64];

static int file_setup(void **state)
{
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "/tmp/test-xfer-src.XXXXXX");
	fd = mkstemp(path);
	return fd < 0 ? -1 : close(fd);
}

static int file_teardown(void **state)
{
	(void)state;
	return unlink(path);
}

/* Fill path with `len` bytes of pattern `seed`; an fd for reading. */
static int fill(size_t len, unsigned seed)
{
	uint8_t *buf = malloc(len ? len : 1);
	size_t i;
	int fd;

	assert_non_null(buf);
	for (i = 0; i < len; i++)
		buf[i] = (uint8_t)(i * 31 + seed + (i >> 12));
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	close(fd);
	free(buf);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	return fd;
}

static void mapping_that_shrinks_is_no_crash(void **state)
{
	long page = sysconf(_SC_PAGESIZE);
	int fd = fill(4 * (size_t)page, 1);
	uint8_t *p = mmap(NULL, 4 * (size_t)page, PROT_READ, MAP_SHARED, fd, 0);
	uint8_t d[XFER_HASH_LEN], ref[XFER_HASH_LEN];

	(void)state;
	assert_true(p != MAP_FAILED);
	assert_int_equal(xfer_digest_mapped(p, 4 * (size_t)page, d), 0);
	xfer_chunk_digest(p, 4 * (size_t)page, ref);
	assert_memory_equal(d, ref, XFER_HASH_LEN);
	/* Truncated under the mapping: a SIGBUS past the new end, caught. */
	assert_int_equal(truncate(path, page), 0);
	assert_int_equal(xfer_digest_mapped(p, 4 * (size_t)page, d), -EFAULT);
	/* Twice: the handler stays in place, the signal is unblocked again. */
	assert_int_equal(xfer_digest_mapped(p + page, (size_t)page, d), -EFAULT);
	/* What is left still hashes. */
	assert_int_equal(xfer_digest_mapped(p, (size_t)page, d), 0);
	munmap(p, 4 * (size_t)page);
	close(fd);
}

/* Open path as a source, read and hash every chunk (copy path), the top
 * digest in out. */
static int read_all(struct xfer_src *s, int fd, uint32_t chunk, uint8_t out[XFER_HASH_LEN],
		    char *err, size_t errlen)
{
	static uint8_t slot[1 << 16];
	uint8_t d[XFER_HASH_LEN];
	struct xfer_hash h;
	struct stat st;
	uint64_t seq, n;
	int ret = 0;

	assert_int_equal(fstat(fd, &st), 0);
	xfer_src_init(s, fd, &st, chunk, 2);
	xfer_src_choose(s, NULL, 0, XFER_CHOOSE_COPY, 0, NULL);
	assert_false(s->zerocopy);
	assert_string_equal(s->why, "--copy");
	assert_int_equal(xfer_top_start(&h), 0);
	n = xfer_nchunks(s->size, chunk);
	for (seq = 0; seq < n && !ret; seq++) {
		ret = xfer_src_read(s, seq, slot, err, errlen);
		if (!ret)
			ret = xfer_src_digest(s, seq, slot, d, err, errlen);
		xfer_top_add(&h, d);
	}
	xfer_top_end(&h, out);
	return ret;
}

static void unchanged_source_verifies(void **state)
{
	uint8_t d[XFER_HASH_LEN];
	struct xfer_src s;
	char err[300];
	int fd = fill(100000, 2);

	(void)state;
	assert_int_equal(read_all(&s, fd, 4096, d, err, sizeof(err)), 0);
	assert_int_equal(xfer_src_verify(&s, d, 1, err, sizeof(err)), 0);
	/* The zero-copy check: the file hashed again, window by window (here
	 * 3 windows of 10 chunks of 4096, the last one short; or 7, 25 or 1
	 * chunks a window), each window's chunks shared by 1 to 16 threads
	 * (more threads than chunks too), into the same top digest as the
	 * copy path's. */
	s.zerocopy = true;
	for (unsigned w = 0; w < 4; w++) {
		static const uint64_t win[] = { 10, 7, 25, 1 };
		static const unsigned threads[] = { 1, 2, 3, 16 };

		s.win_chunks = win[w];
		for (unsigned t = 0; t < 4; t++) {
			assert_int_equal(xfer_src_verify(&s, d, threads[t], err, sizeof(err)), 0);
			/* As many threads as asked, or one per chunk of a window. */
			assert_int_equal(s.rehash_threads,
					 threads[t] < win[w] ? threads[t] : (unsigned)win[w]);
			d[t] ^= 1; /* not what was sent: the check must see it */
			assert_int_equal(xfer_src_verify(&s, d, threads[t], err, sizeof(err)),
					 -EIO);
			d[t] ^= 1;
		}
	}
	xfer_src_release(&s);
	close(fd);
}

static void truncated_source_is_named(void **state)
{
	uint8_t d[XFER_HASH_LEN];
	struct xfer_src s;
	struct stat st;
	char err[300];
	int fd = fill(100000, 3);

	(void)state;
	/* Copy path: a chunk past the new end cannot be read. */
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(truncate(path, 50000), 0);
	xfer_src_init(&s, fd, &st, 4096, 2);
	xfer_src_choose(&s, NULL, 0, XFER_CHOOSE_COPY, 0, NULL);
	{
		static uint8_t slot[4096];

		assert_int_equal(xfer_src_read(&s, 0, slot, err, sizeof(err)), 0);
		assert_true(xfer_src_read(&s, 20, slot, err, sizeof(err)) < 0);
		assert_string_equal(err, "source changed during transfer: it shrank from 100000 to "
					 "50000 bytes");
	}
	/* After the transfer: the size. */
	memset(d, 0, sizeof(d));
	assert_int_equal(xfer_src_verify(&s, d, 1, err, sizeof(err)), -EIO);
	assert_string_equal(err, "source changed during transfer: its size went from 100000 to "
				 "50000 bytes");
	/* Zero-copy: hashing again faults past the end, and says so, on
	 * whichever thread hashes the chunks past it (with 2, the second). */
	s.zerocopy = true;
	s.win_chunks = 30;
	for (unsigned t = 1; t <= 2; t++) {
		assert_int_equal(xfer_src_verify(&s, d, t, err, sizeof(err)), -EIO);
		assert_string_equal(err, "source changed during transfer: it shrank under its "
					 "mapping (SIGBUS while hashing it again)");
	}
	close(fd);
}

static void rewritten_source_is_named(void **state)
{
	uint8_t d[XFER_HASH_LEN];
	struct timespec times[2];
	struct xfer_src s;
	struct stat st;
	char err[300];
	int fd = fill(100000, 4), wfd;

	(void)state;
	assert_int_equal(read_all(&s, fd, 4096, d, err, sizeof(err)), 0);
	/* One byte, written through another descriptor: mtime and ctime move
	 * (a second later at the latest: coarse timestamps). */
	assert_int_equal(fstat(fd, &st), 0);
	times[0] = st.st_atim;
	times[1] = st.st_mtim;
	sleep(1);
	wfd = open(path, O_WRONLY);
	assert_true(wfd >= 0);
	assert_int_equal(pwrite(wfd, "x", 1, 70000), 1);
	assert_int_equal(xfer_src_verify(&s, d, 1, err, sizeof(err)), -EIO);
	assert_string_equal(err, "source changed during transfer: it was modified (its mtime or "
				 "ctime moved)");
	/* Put mtime back (ctime cannot be): the zero-copy path sees the
	 * bytes themselves first. */
	assert_int_equal(futimens(wfd, times), 0);
	close(wfd);
	s.zerocopy = true;
	s.win_chunks = 7;
	/* Byte 70000 is in chunk 17, window 2 (chunks 14-20): with 3
	 * threads the second one's share (17, 18). */
	for (unsigned t = 1; t <= 3; t++) {
		assert_int_equal(xfer_src_verify(&s, d, t, err, sizeof(err)), -EIO);
		assert_string_equal(err, "source changed during transfer: its bytes now differ "
					 "from those sent");
		assert_int_equal(s.rehash_threads, t);
	}
	close(fd);
}

static void path_line_says_why(void **state)
{
	struct xfer_src s = { 0 };
	char buf[300];

	(void)state;
	s.zerocopy = true;
	assert_string_equal(xfer_src_path(&s, buf, sizeof(buf)), "page cache -> NIC (zero-copy)");
	s.zerocopy = false;
	snprintf(s.why, sizeof(s.why), "%s", "--copy");
	assert_string_equal(xfer_src_path(&s, buf, sizeof(buf)), "pread -> ring (copy: --copy)");
	/* An empty file is not mapped at all. */
	{
		struct stat st = { .st_size = 0 };

		xfer_src_init(&s, -1, &st, 4096, 1);
		xfer_src_choose(&s, NULL, 0, 0, 0, NULL);
		assert_false(s.zerocopy);
		assert_string_equal(s.why, "an empty file has nothing to map");
	}
}

/* Which path each side tries: --copy wins, then --zero-copy, then the
 * device (Soft-RoCE: the ring, and the line says why). */
static void path_follows_options_and_device(void **state)
{
	struct stat st = { .st_size = 1 << 20 };
	struct xfer_src s = { 0 };
	const uint32_t rxe = RC_SOFT_ROCE_VENDOR_ID, nic = 0x02c9; /* Mellanox's */

	(void)state;
	assert_int_equal(xfer_choose_flags(false, false, false, nic), 0);
	assert_int_equal(xfer_choose_flags(false, false, false, rxe), XFER_CHOOSE_SOFT);
	assert_int_equal(xfer_choose_flags(false, true, false, rxe), 0);
	assert_int_equal(xfer_choose_flags(true, false, false, nic), XFER_CHOOSE_COPY);
	assert_int_equal(xfer_choose_flags(true, true, true, rxe),
			 XFER_CHOOSE_COPY | XFER_CHOOSE_DIRECT);
	assert_int_equal(xfer_choose_flags(false, false, true, rxe),
			 XFER_CHOOSE_SOFT | XFER_CHOOSE_DIRECT);
	assert_null(xfer_ring_reason(0));
	assert_null(xfer_ring_reason(XFER_CHOOSE_DIRECT));
	assert_string_equal(xfer_ring_reason(XFER_CHOOSE_COPY | XFER_CHOOSE_SOFT), "--copy");
	assert_non_null(strstr(xfer_ring_reason(XFER_CHOOSE_SOFT), "--zero-copy"));
	/* Soft-RoCE: nothing is mapped (fd -1 would fail a mapping). */
	xfer_src_init(&s, -1, &st, 4096, 1);
	xfer_src_choose(&s, NULL, 0, XFER_CHOOSE_SOFT, 0, NULL);
	assert_false(s.zerocopy);
	assert_string_equal(s.why, xfer_ring_reason(XFER_CHOOSE_SOFT));
}

/* A CQ that hands out a script of completions, then none. */
static struct ibv_wc script[4];
static int script_n, script_i;

static int scripted_poll(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	int k = 0;

	(void)cq;
	while (k < n && script_i < script_n)
		wc[k++] = script[script_i++];
	return k;
}

static int notify_ok(struct ibv_cq *cq, int solicited_only)
{
	(void)cq;
	(void)solicited_only;
	return 0;
}

/*
 * 03's get: a READ on the data connection (a QP beside the control one,
 * on its CQ) fails while the control channel waits for its own SEND. The
 * wait goes on until the SEND completes (so an ERROR is delivered), and
 * the READ's failure comes out of the next xfer_ctl_next, as a failure.
 * A failure of the control QP itself still ends the wait.
 */
static void ctl_keeps_a_failure_of_the_qp_beside(void **state)
{
	struct ibv_context ctx = { 0 };
	struct ibv_cq cq = { 0 };
	struct ibv_comp_channel ch = { .fd = -1 };
	struct ibv_qp qp = { .qp_num = 7 };
	struct ibv_wc stash[8], wc;
	struct xfer_ctl x = { 0 };
	unsigned free_send[1];
	struct rc_conn c;

	(void)state;
	ctx.ops.poll_cq = scripted_poll;
	ctx.ops.req_notify_cq = notify_ok;
	cq.context = &ctx;
	rc_conn_init(&c, "test", false, 1000, -1);
	c.poll_mode = RC_POLL_BUSY;
	c.dev.cq = &cq;
	c.dev.channel = &ch;
	c.qp = &qp;
	x = (struct xfer_ctl){ .c = &c,
			       .nrecv = 1,
			       .nsend = 1,
			       .free_send = free_send,
			       .stash = stash,
			       .stash_cap = 8 };
	script[0] = (struct ibv_wc){ .wr_id = 3, .status = IBV_WC_REM_ACCESS_ERR, .qp_num = 9 };
	script[1] = (struct ibv_wc){ .wr_id = XFER_WR_SEND, .opcode = IBV_WC_SEND, .qp_num = 7 };
	script_n = 2;
	script_i = 0;
	assert_int_equal(xfer_ctl_drain(&x), 0);
	assert_int_equal(x.nfree, 1);
	assert_int_equal(xfer_ctl_next(&x, &wc), -EIO);
	assert_int_equal(wc.qp_num, 9);
	assert_int_equal(wc.status, IBV_WC_REM_ACCESS_ERR);
	assert_non_null(strstr(c.log.err, "remote access error"));
	/* The control QP's own SEND flushed: the wait ends with it. */
	x.nfree = 0;
	script[0] = (struct ibv_wc){ .wr_id = XFER_WR_SEND,
				     .status = IBV_WC_WR_FLUSH_ERR,
				     .qp_num = 7 };
	script_n = 1;
	script_i = 0;
	assert_int_equal(xfer_ctl_drain(&x), -EIO);
	assert_int_equal(x.stash_len, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(windows_hold_enough_chunks),
		cmocka_unit_test(windows_turn_depth_chunks_in),
		cmocka_unit_test(window_ranges_are_page_aligned),
		cmocka_unit_test(memlock_limit_decides),
		cmocka_unit_test_setup_teardown(mapping_that_shrinks_is_no_crash, file_setup,
						file_teardown),
		cmocka_unit_test_setup_teardown(unchanged_source_verifies, file_setup,
						file_teardown),
		cmocka_unit_test_setup_teardown(truncated_source_is_named, file_setup,
						file_teardown),
		cmocka_unit_test_setup_teardown(rewritten_source_is_named, file_setup,
						file_teardown),
		cmocka_unit_test(path_line_says_why),
		cmocka_unit_test(path_follows_options_and_device),
		cmocka_unit_test(ctl_keeps_a_failure_of_the_qp_beside),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
