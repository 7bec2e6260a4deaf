// SPDX-License-Identifier: MIT
/* Unit tests of 03's options, the server's limits and the sizes in its
 * messages (03_file-transfer/xfer-opts.c); the messages themselves:
 * test-xfer.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "xfer-msg.h"
#include "xfer-opts.h"

#define ARGV(...) ((char *[]){ "prog", __VA_ARGS__, NULL })
#define ARGC(...) ((int)(sizeof((char *[]){ "prog", __VA_ARGS__ }) / sizeof(char *)))

#define GiB (1ull << 30)

static void client_options(void **state)
{
	struct xfer_client_opts o;
	char err[256];

	(void)state;
	assert_int_equal(
		xfer_parse_client(ARGC("f.bin", "h:x"), ARGV("f.bin", "h:x"), &o, err, sizeof(err)),
		0);
	assert_int_equal(o.op, XFER_PUT);
	assert_string_equal(o.host, "h");
	assert_string_equal(o.name, "x");
	assert_string_equal(o.local, "f.bin");
	assert_int_equal(o.hash_threads, 2);
	assert_int_equal(xfer_parse_client(ARGC("--hash-threads", "16", "f.bin", "h:x"),
					   ARGV("--hash-threads", "16", "f.bin", "h:x"), &o, err,
					   sizeof(err)),
			 0);
	assert_int_equal(o.hash_threads, 16);
	assert_int_equal(xfer_parse_client(ARGC("--hash-threads", "0", "f.bin", "h:x"),
					   ARGV("--hash-threads", "0", "f.bin", "h:x"), &o, err,
					   sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "invalid number of hash threads '0' (1 to 16)"));
	assert_int_equal(xfer_parse_client(ARGC("--zero-copy", "f.bin", "h:x"),
					   ARGV("--zero-copy", "f.bin", "h:x"), &o, err,
					   sizeof(err)),
			 0);
	assert_true(o.zero_copy);
	assert_int_equal(xfer_parse_client(ARGC("--copy", "--zero-copy", "f.bin", "h:x"),
					   ARGV("--copy", "--zero-copy", "f.bin", "h:x"), &o, err,
					   sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "--copy and --zero-copy exclude each other");
	assert_int_equal(
		xfer_parse_client(ARGC("f.bin", "h:x"), ARGV("f.bin", "h:x"), &o, err, sizeof(err)),
		0);
	assert_false(o.zero_copy);
	assert_int_equal(o.rc.ack_timeout, RC_DEFAULT_ACK_TIMEOUT);
	assert_int_equal(o.rc.retry_count, RC_DEFAULT_RETRY_COUNT);
	assert_null(o.secret_file);
	assert_int_equal(xfer_parse_client(ARGC("--secret", "key", "f.bin", "h:x"),
					   ARGV("--secret", "key", "f.bin", "h:x"), &o, err,
					   sizeof(err)),
			 0);
	assert_string_equal(o.secret_file, "key");
	assert_string_equal(o.rc.port, RC_DEFAULT_PORT);
	assert_int_equal(o.chunk, 64u << 10); /* the default */
	assert_int_equal(o.depth, 16);
	assert_false(o.force);
	assert_int_equal(o.progress, -1);
	assert_int_equal(o.rc.timeout_ms, 10000);
	assert_false(o.json);

	assert_int_equal(xfer_parse_client(ARGC("--json", "h:x", "f.bin"),
					   ARGV("--json", "h:x", "f.bin"), &o, err, sizeof(err)),
			 0);
	assert_true(o.json);
	assert_int_equal(o.op, XFER_GET);

	assert_int_equal(
		xfer_parse_client(ARGC("-p", "9999", "-c", "4K", "-t", "1", "-f", "--no-progress",
				       "--timeout", "2.5", "-v", "[::1]:rem", "out/"),
				  ARGV("-p", "9999", "-c", "4K", "-t", "1", "-f", "--no-progress",
				       "--timeout", "2.5", "-v", "[::1]:rem", "out/"),
				  &o, err, sizeof(err)),
		0);
	assert_int_equal(o.op, XFER_GET);
	assert_string_equal(o.host, "::1");
	assert_string_equal(o.name, "rem");
	assert_string_equal(o.local, "out/");
	assert_string_equal(o.rc.port, "9999");
	assert_int_equal(o.chunk, 4096);
	assert_int_equal(o.depth, 1);
	assert_true(o.force);
	assert_int_equal(o.progress, 0);
	assert_int_equal(o.rc.timeout_ms, 2500);
	assert_true(o.rc.verbose);
	assert_int_equal(o.rc.poll, RC_POLL_EVENT);

	/* put to HOST: keeps the source's own name. */
	assert_int_equal(
		xfer_parse_client(
			ARGC("--chunk", "8M", "--depth", "4", "--progress", "dir/f.bin", "h:"),
			ARGV("--chunk", "8M", "--depth", "4", "--progress", "dir/f.bin", "h:"), &o,
			err, sizeof(err)),
		0);
	assert_string_equal(o.name, "f.bin");
	assert_int_equal(o.chunk, 8u << 20);
	assert_int_equal(o.depth, 4);
	assert_int_equal(o.progress, 1);
	/* -q turns progress off. */
	assert_int_equal(xfer_parse_client(ARGC("-q", "--poll", "busy", "h:a", "b"),
					   ARGV("-q", "--poll", "busy", "h:a", "b"), &o, err,
					   sizeof(err)),
			 0);
	assert_int_equal(o.rc.poll, RC_POLL_BUSY);
	assert_true(o.quiet);
	assert_int_equal(o.progress, 0);
}

#define CLIENT_BAD(why, ...)                                                                      \
	do {                                                                                      \
		struct xfer_client_opts o_;                                                       \
		char e_[256] = "";                                                                \
		assert_int_equal(xfer_parse_client(ARGC(__VA_ARGS__), ARGV(__VA_ARGS__), &o_, e_, \
						   sizeof(e_)),                                   \
				 -EINVAL);                                                        \
		if (!strstr(e_, why))                                                             \
			fail_msg("reason '%s' lacks '%s'", e_, why);                              \
	} while (0)

static void client_options_rejected(void **state)
{
	(void)state;
	CLIENT_BAD("need SRC and DST", "a");
	CLIENT_BAD("unexpected argument", "a", "h:b", "c");
	CLIENT_BAD("neither SRC nor DST", "a", "b");
	CLIENT_BAD("both SRC and DST", "h:a", "h:b");
	CLIENT_BAD("missing NAME", "h:", "b");
	CLIENT_BAD("cannot take a name", "dir/", "h:");
	CLIENT_BAD("invalid chunk", "-c", "3K", "a", "h:b");
	CLIENT_BAD("invalid chunk", "-c", "2G", "a", "h:b");
	CLIENT_BAD("invalid chunk", "-c", "1X", "a", "h:b");
	CLIENT_BAD("invalid depth", "-t", "0", "a", "h:b");
	CLIENT_BAD("invalid depth", "-t", "256", "a", "h:b");
	CLIENT_BAD("4 GiB", "-c", "1G", "-t", "4", "a", "h:b");
	CLIENT_BAD("port 0 is not a server port", "-p", "0", "a", "h:b");
	CLIENT_BAD("invalid port", "-p", "65536", "a", "h:b");
	CLIENT_BAD("invalid timeout", "--timeout", "0", "a", "h:b");
	CLIENT_BAD("option '--json=1' takes no value", "--json=1", "a", "h:b");
	CLIENT_BAD("exclude", "-q", "--progress", "a", "h:b");
	CLIENT_BAD("invalid poll mode", "--poll", "spin", "a", "h:b");
	CLIENT_BAD("invalid ACK timeout '32' (0 to 31", "--ack-timeout", "32", "a", "h:b");
	CLIENT_BAD("invalid retry count '-1' (0 to 7)", "--retry-count", "-1", "a", "h:b");
	CLIENT_BAD("unknown option '--bogus'", "--bogus", "a", "h:b");
	CLIENT_BAD("needs a value", "a", "h:b", "-c");
	CLIENT_BAD("missing host", "a", ":b");
	CLIENT_BAD("IPv6", "a", "[::1]b");
}

static void server_options(void **state)
{
	struct xfer_server_opts o;
	char err[256];

	(void)state;
	assert_int_equal(
		xfer_parse_server(ARGC("-r", "/srv"), ARGV("-r", "/srv"), &o, err, sizeof(err)), 0);
	assert_string_equal(o.root, "/srv");
	assert_string_equal(o.rc.port, RC_DEFAULT_PORT);
	assert_int_equal(o.rc.max_clients, 8);
	assert_int_equal(o.lim.max_chunk, 16u << 20);
	assert_int_equal(o.lim.max_depth, 64);
	assert_true(o.lim.max_mem == 64u << 20);
	assert_int_equal(o.hash_threads, 2);
	assert_false(o.rc.once);
	assert_int_equal(xfer_parse_server(ARGC("--root", "d", "-p", "0", "-b", "10.0.0.1",
						"--once", "--max-clients", "2", "--max-chunk",
						"64K", "--max-depth", "3", "--max-mem", "1M",
						"--timeout", "3", "--poll", "busy", "-v"),
					   ARGV("--root", "d", "-p", "0", "-b", "10.0.0.1",
						"--once", "--max-clients", "2", "--max-chunk",
						"64K", "--max-depth", "3", "--max-mem", "1M",
						"--timeout", "3", "--poll", "busy", "-v"),
					   &o, err, sizeof(err)),
			 0);
	assert_string_equal(o.rc.port, "0");
	assert_string_equal(o.rc.bind, "10.0.0.1");
	assert_true(o.rc.once);
	assert_int_equal(o.rc.max_clients, 2);
	assert_int_equal(o.lim.max_chunk, 65536);
	assert_int_equal(o.lim.max_depth, 3);
	assert_true(o.lim.max_mem == 1u << 20);
	assert_int_equal(o.rc.timeout_ms, 3000);
	assert_int_equal(o.rc.poll, RC_POLL_BUSY);
	assert_true(o.rc.verbose);
	assert_int_equal(xfer_parse_server(ARGC("-r", "d", "--hash-threads", "1"),
					   ARGV("-r", "d", "--hash-threads", "1"), &o, err,
					   sizeof(err)),
			 0);
	assert_int_equal(o.hash_threads, 1);
	assert_int_equal(xfer_parse_server(ARGC("-r", "d", "--hash-threads", "17"),
					   ARGV("-r", "d", "--hash-threads", "17"), &o, err,
					   sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "invalid number of hash threads '17' (1 to 16)"));

	assert_null(o.secret_file);
	assert_false(o.read_only);
	assert_int_equal(o.rc.allow.n, 0);
	assert_int_equal(
		xfer_parse_server(
			ARGC("-r", "d", "--secret", "k", "--read-only", "--allow", "10.0.2.0/24"),
			ARGV("-r", "d", "--secret", "k", "--read-only", "--allow", "10.0.2.0/24"),
			&o, err, sizeof(err)),
		0);
	assert_string_equal(o.secret_file, "k");
	assert_true(o.read_only);
	assert_false(o.write_only);
	assert_int_equal(o.rc.allow.n, 1);
	assert_int_equal(xfer_parse_server(ARGC("-r", "d", "--write-only"),
					   ARGV("-r", "d", "--write-only"), &o, err, sizeof(err)),
			 0);
	assert_true(o.write_only);
	assert_int_equal(xfer_parse_server(ARGC("-r", "d", "--write-only", "--read-only"),
					   ARGV("-r", "d", "--write-only", "--read-only"), &o, err,
					   sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "exclude each other"));
	assert_int_equal(xfer_parse_server(ARGC("-r", "d", "--zero-copy"),
					   ARGV("-r", "d", "--zero-copy"), &o, err, sizeof(err)),
			 0);
	assert_true(o.zero_copy);
	assert_false(o.copy);
	assert_int_equal(xfer_parse_server(ARGC("-r", "d", "--zero-copy", "--copy"),
					   ARGV("-r", "d", "--zero-copy", "--copy"), &o, err,
					   sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "--copy and --zero-copy exclude each other");
	assert_int_equal(xfer_parse_server(ARGC("-r", "d", "--allow", "10.0.2.0/33"),
					   ARGV("-r", "d", "--allow", "10.0.2.0/33"), &o, err,
					   sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "--allow '10.0.2.0/33'"));
	assert_int_equal(xfer_parse_server(ARGC("-p", "1"), ARGV("-p", "1"), &o, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "missing -r DIR"));
	assert_int_equal(
		xfer_parse_server(ARGC("-r", "d", "x"), ARGV("-r", "d", "x"), &o, err, sizeof(err)),
		-EINVAL);
	assert_int_equal(xfer_parse_server(ARGC("-r", "d", "--max-depth", "300"),
					   ARGV("-r", "d", "--max-depth", "300"), &o, err,
					   sizeof(err)),
			 -EINVAL);
	assert_int_equal(xfer_parse_server(ARGC("-r", "d", "--max-mem", "3G"),
					   ARGV("-r", "d", "--max-mem", "3G"), &o, err,
					   sizeof(err)),
			 -EINVAL);
	assert_int_equal(xfer_parse_server(ARGC("-r", "d", "--max-clients", "0"),
					   ARGV("-r", "d", "--max-clients", "0"), &o, err,
					   sizeof(err)),
			 -EINVAL);
}

static void server_limits(void **state)
{
	struct xfer_limits lim = { .max_chunk = 16u << 20, .max_depth = 64, .max_mem = 64u << 20 };
	struct xfer_limits big = { .max_chunk = (1u << 30) - 1,
				   .max_depth = 254,
				   .max_mem = (2ull << 30) - 1 };
	struct xfer_hello h = { .op = XFER_PUT, .depth = 16, .chunk = 1u << 20 };
	char err[256];

	(void)state;
	assert_int_equal(xfer_check_limits(&h, &lim, 8u << 20, err, sizeof(err)), 0);
	h.chunk = 16u << 20; /* fine for us, too big for the port */
	h.depth = 4;
	assert_int_equal(xfer_check_limits(&h, &lim, 8u << 20, err, sizeof(err)), -ERANGE);
	assert_string_equal(err,
			    "chunk 16 MiB is over this server's limit of 8 MiB; use a smaller -c");
	h.chunk = 32u << 20;
	assert_int_equal(xfer_check_limits(&h, &lim, UINT32_MAX, err, sizeof(err)), -ERANGE);
	h = (struct xfer_hello){ .op = XFER_GET, .depth = 65, .chunk = 4096 };
	assert_int_equal(xfer_check_limits(&h, &lim, UINT32_MAX, err, sizeof(err)), -ERANGE);
	assert_string_equal(err, "depth 65 is over this server's limit of 64; use a smaller -t");
	h = (struct xfer_hello){ .op = XFER_GET, .depth = 64, .chunk = 2u << 20 };
	assert_int_equal(xfer_check_limits(&h, &lim, UINT32_MAX, err, sizeof(err)), -ERANGE);
	assert_string_equal(err, "ring of 2 MiB x 64 = 128 MiB is over this server's 64 MiB per "
				 "client; use a smaller -c or -t");
	/* The longest numbers still fit the connect reject. */
	h = (struct xfer_hello){ .op = XFER_GET, .depth = 255, .chunk = XFER_MAX_CHUNK };
	assert_int_equal(xfer_check_limits(&h, &big, UINT32_MAX, err, sizeof(err)), -ERANGE);
	assert_true(strlen(err) <= XFER_REJECT_MAX);
	h.depth = 254;
	assert_int_equal(xfer_check_limits(&h, &big, UINT32_MAX, err, sizeof(err)), -ERANGE);
	assert_true(strlen(err) <= XFER_REJECT_MAX);
	h.chunk = (1u << 30) - 1;
	assert_int_equal(xfer_check_limits(&h, &big, UINT32_MAX, err, sizeof(err)), -ERANGE);
	assert_non_null(strstr(err, "ring of 1024.0 MiB x 254"));
	assert_true(strlen(err) <= XFER_REJECT_MAX);
}

static void sizes_for_messages(void **state)
{
	char s[32];

	(void)state;
	xfer_fmt_size(s, sizeof(s), 0);
	assert_string_equal(s, "0 B");
	xfer_fmt_size(s, sizeof(s), 1023);
	assert_string_equal(s, "1023 B");
	xfer_fmt_size(s, sizeof(s), 4096);
	assert_string_equal(s, "4 KiB");
	xfer_fmt_size(s, sizeof(s), 16u << 20);
	assert_string_equal(s, "16 MiB");
	xfer_fmt_size(s, sizeof(s), (1u << 20) + 3);
	assert_string_equal(s, "1.0 MiB");
	xfer_fmt_size(s, sizeof(s), 4 * GiB + 1);
	assert_string_equal(s, "4.0 GiB");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(client_options),     cmocka_unit_test(client_options_rejected),
		cmocka_unit_test(server_options),     cmocka_unit_test(server_limits),
		cmocka_unit_test(sizes_for_messages),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
