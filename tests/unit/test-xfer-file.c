// SPDX-License-Identifier: MIT
/* Unit tests of 03's checksum, temporary files and disk thread
 * (03_file-transfer/xfer-file.c, xfer-disk.c), in a real directory. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <xxhash.h>

#include "xfer-disk.h"
#include "xfer-file.h"

/* ------------------------------------------------------------------ */
/* Checksum                                                            */
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

/* ------------------------------------------------------------------ */
/* Temporary files and the commit                                      */
/* ------------------------------------------------------------------ */

struct tmpdir {
	char path[64];
	int fd;
};

static int dir_setup(void **state)
{
	struct tmpdir *t = calloc(1, sizeof(*t));

	snprintf(t->path, sizeof(t->path), "/tmp/test-xfer.XXXXXX");
	if (!mkdtemp(t->path))
		return -1;
	t->fd = open(t->path, O_RDONLY | O_DIRECTORY);
	*state = t;
	return t->fd < 0 ? -1 : 0;
}

static int dir_teardown(void **state)
{
	struct tmpdir *t = *state;
	char cmd[128];

	close(t->fd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->path);
	if (system(cmd) != 0)
		return -1;
	free(t);
	return 0;
}

/* Number of entries in the directory (without . and ..). */
static int entries(int dirfd)
{
	DIR *d = fdopendir(dup(dirfd));
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	rewinddir(d);
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

static void read_at(int dirfd, const char *name, char *buf, size_t len)
{
	int fd = openat(dirfd, name, O_RDONLY);
	ssize_t n;

	assert_true(fd >= 0);
	n = read(fd, buf, len - 1);
	assert_true(n >= 0);
	buf[n] = '\0';
	close(fd);
}

static void write_at(int dirfd, const char *name, const char *text)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static void sink_commits_only_verified_data(void **state)
{
	struct tmpdir *t = *state;
	struct xfer_sink s;
	char err[RC_ERR_LEN], buf[64];
	struct stat st;

	/* Written out of order, synced, committed. */
	assert_int_equal(xfer_sink_open(&s, t->fd, "new", false, err, sizeof(err)), 0);
	assert_int_equal(s.tmp[0], '.');
	assert_non_null(strstr(s.tmp, ".part"));
	assert_int_equal(fstatat(t->fd, "new", &st, 0), -1); /* not yet */
	assert_int_equal(xfer_sink_write(&s, "world", 5, 6, err, sizeof(err)), 0);
	assert_int_equal(xfer_sink_write(&s, "hello ", 6, 0, err, sizeof(err)), 0);
	/* The size check catches a missing tail. */
	assert_int_equal(xfer_sink_sync(&s, 12, err, sizeof(err)), -EIO);
	assert_non_null(strstr(err, "11 bytes on disk, expected 12"));
	assert_int_equal(xfer_sink_sync(&s, 11, err, sizeof(err)), 0);
	assert_int_equal(xfer_sink_commit(&s, err, sizeof(err)), 0);
	xfer_sink_abort(&s); /* after a commit: nothing to remove */
	read_at(t->fd, "new", buf, sizeof(buf));
	assert_string_equal(buf, "hello world");
	assert_int_equal(entries(t->fd), 1);

	/* Aborted: the temporary file goes, the name stays untouched. */
	assert_int_equal(xfer_sink_open(&s, t->fd, "other", false, err, sizeof(err)), 0);
	assert_int_equal(xfer_sink_write(&s, "x", 1, 0, err, sizeof(err)), 0);
	assert_int_equal(entries(t->fd), 2);
	xfer_sink_abort(&s);
	xfer_sink_abort(&s);
	assert_int_equal(entries(t->fd), 1);
}

static void sink_never_overwrites_without_force(void **state)
{
	struct tmpdir *t = *state;
	struct xfer_sink s;
	char err[RC_ERR_LEN], buf[64];

	write_at(t->fd, "old", "old content");
	/* Refused at once without -f. */
	assert_int_equal(xfer_sink_open(&s, t->fd, "old", false, err, sizeof(err)), -EEXIST);
	assert_non_null(strstr(err, "use -f"));
	assert_int_equal(entries(t->fd), 1);
	/* Created by someone else during the transfer: the rename refuses. */
	assert_int_equal(xfer_sink_open(&s, t->fd, "race", false, err, sizeof(err)), 0);
	assert_int_equal(xfer_sink_write(&s, "mine", 4, 0, err, sizeof(err)), 0);
	assert_int_equal(xfer_sink_sync(&s, 4, err, sizeof(err)), 0);
	write_at(t->fd, "race", "theirs");
	assert_int_equal(xfer_sink_commit(&s, err, sizeof(err)), -EEXIST);
	assert_non_null(strstr(err, "created during the transfer"));
	xfer_sink_abort(&s);
	read_at(t->fd, "race", buf, sizeof(buf));
	assert_string_equal(buf, "theirs");
	assert_int_equal(entries(t->fd), 2);
	/* With -f: replaced. */
	assert_int_equal(xfer_sink_open(&s, t->fd, "old", true, err, sizeof(err)), 0);
	assert_int_equal(xfer_sink_write(&s, "new", 3, 0, err, sizeof(err)), 0);
	assert_int_equal(xfer_sink_sync(&s, 3, err, sizeof(err)), 0);
	assert_int_equal(xfer_sink_commit(&s, err, sizeof(err)), 0);
	read_at(t->fd, "old", buf, sizeof(buf));
	assert_string_equal(buf, "new");
	assert_int_equal(entries(t->fd), 2);
}

static void sink_refuses_links_and_directories(void **state)
{
	struct tmpdir *t = *state;
	struct xfer_sink s;
	char err[RC_ERR_LEN], buf[64], outside[128];
	int fd;

	/* A symlink pointing outside: never followed, never replaced. */
	snprintf(outside, sizeof(outside), "%s.outside", t->path);
	fd = open(outside, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "secret", 6), 6);
	close(fd);
	assert_int_equal(symlinkat(outside, t->fd, "link"), 0);
	assert_int_equal(xfer_sink_open(&s, t->fd, "link", false, err, sizeof(err)), -EEXIST);
	assert_int_equal(xfer_sink_open(&s, t->fd, "link", true, err, sizeof(err)), -EEXIST);
	assert_non_null(strstr(err, "symbolic link"));
	assert_int_equal(mkdirat(t->fd, "sub", 0755), 0);
	assert_int_equal(xfer_sink_open(&s, t->fd, "sub", true, err, sizeof(err)), -EEXIST);
	assert_non_null(strstr(err, "directory"));
	fd = open(outside, O_RDONLY);
	assert_int_equal(read(fd, buf, sizeof(buf)), 6);
	close(fd);
	unlink(outside);
	assert_int_equal(entries(t->fd), 2);
}

static void read_full_reports_short_files(void **state)
{
	struct tmpdir *t = *state;
	char err[RC_ERR_LEN], buf[16];
	int fd;

	write_at(t->fd, "short", "12345");
	fd = openat(t->fd, "short", O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(xfer_read_full(fd, buf, 3, 2, err, sizeof(err)), 0);
	assert_memory_equal(buf, "345", 3);
	assert_int_equal(xfer_read_full(fd, buf, 4, 2, err, sizeof(err)), -EIO);
	assert_non_null(strstr(err, "ended at offset 5"));
	close(fd);
}

/* ------------------------------------------------------------------ */
/* The disk thread                                                     */
/* ------------------------------------------------------------------ */

/* What the disk thread did: the chunks in the order it handled them. */
struct disk_log {
	uint64_t seen[16];
	unsigned count;
	uint64_t fail_at; /* fail on this chunk (UINT64_MAX: never) */
};

static int log_chunk(void *arg, uint64_t seq, char *err, size_t errlen)
{
	struct disk_log *l = arg;

	if (seq == l->fail_at) {
		snprintf(err, errlen, "no space for chunk %" PRIu64, seq);
		return -ENOSPC;
	}
	l->seen[l->count++] = seq;
	return 0;
}

/* Wait (at most 5 s) for the disk thread's eventfd, as rc_next_wc would,
 * until it reports `want` chunks or an error; return xfer_disk_done's. */
static int wait_disk(struct xfer_disk *d, uint64_t want, uint64_t *done, char *why, size_t len)
{
	struct pollfd p = { .fd = d->efd, .events = POLLIN };
	uint64_t cnt;
	int ret, i;

	for (i = 0; i < 50; i++) {
		ret = xfer_disk_done(d, done, why, len);
		if (ret || *done >= want)
			return ret;
		if (poll(&p, 1, 100) == 1)
			assert_int_equal(read(d->efd, &cnt, sizeof(cnt)), sizeof(cnt));
	}
	return xfer_disk_done(d, done, why, len);
}

static void disk_thread_keeps_order_and_limit(void **state)
{
	struct disk_log l = { .fail_at = UINT64_MAX };
	struct xfer_disk d;
	struct rc_conn c;
	char err[RC_ERR_LEN], why[RC_ERR_LEN];
	uint64_t done = 0;
	unsigned i;

	(void)state;
	rc_conn_init(&c, "test", false, 1000, -1);
	assert_int_equal(xfer_disk_start(&d, &c, 6, 2, log_chunk, &l, err, sizeof(err)), 0);
	assert_int_equal(c.wake_fd, d.efd); /* rc_next_wc wakes for it */
	assert_int_equal(wait_disk(&d, 2, &done, why, sizeof(why)), 0);
	assert_int_equal(done, 2);
	/* Not one chunk beyond what was allowed, however long we wait. */
	usleep(200 * 1000);
	assert_int_equal(xfer_disk_done(&d, &done, why, sizeof(why)), 0);
	assert_int_equal(done, 2);
	xfer_disk_allow(&d, 1); /* lowering is ignored */
	xfer_disk_allow(&d, 6);
	assert_int_equal(wait_disk(&d, 6, &done, why, sizeof(why)), 0);
	assert_int_equal(done, 6);
	xfer_disk_stop(&d);
	assert_int_equal(c.wake_fd, -1);
	assert_int_equal(l.count, 6);
	for (i = 0; i < l.count; i++)
		assert_int_equal(l.seen[i], i);
	xfer_disk_stop(&d); /* twice is harmless */
}

static void disk_thread_reports_failure_and_stops(void **state)
{
	struct disk_log l = { .fail_at = 3 };
	struct xfer_disk d, never = { 0 };
	struct rc_conn c;
	char err[RC_ERR_LEN], why[RC_ERR_LEN] = "";
	uint64_t done = 0;

	(void)state;
	rc_conn_init(&c, "test", false, 1000, -1);
	assert_int_equal(xfer_disk_start(&d, &c, 10, 10, log_chunk, &l, err, sizeof(err)), 0);
	assert_int_equal(wait_disk(&d, 10, &done, why, sizeof(why)), -ENOSPC);
	assert_int_equal(done, 3); /* the chunks before the failure */
	assert_string_equal(why, "no space for chunk 3");
	xfer_disk_stop(&d);
	assert_int_equal(l.count, 3);
	/* Stopped while waiting for permission: returns, nothing handled. */
	l = (struct disk_log){ .fail_at = UINT64_MAX };
	assert_int_equal(xfer_disk_start(&d, &c, 10, 0, log_chunk, &l, err, sizeof(err)), 0);
	usleep(50 * 1000);
	xfer_disk_stop(&d);
	assert_int_equal(l.count, 0);
	/* Never started (a transfer that failed before it): nothing to do. */
	xfer_disk_stop(&never);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(checksum_streams_like_one_shot),
		cmocka_unit_test_setup_teardown(sink_commits_only_verified_data, dir_setup,
						dir_teardown),
		cmocka_unit_test_setup_teardown(sink_never_overwrites_without_force, dir_setup,
						dir_teardown),
		cmocka_unit_test_setup_teardown(sink_refuses_links_and_directories, dir_setup,
						dir_teardown),
		cmocka_unit_test_setup_teardown(read_full_reports_short_files, dir_setup,
						dir_teardown),
		cmocka_unit_test(disk_thread_keeps_order_and_limit),
		cmocka_unit_test(disk_thread_reports_failure_and_stops),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
