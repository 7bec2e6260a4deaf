// SPDX-License-Identifier: MIT
/* Unit tests of common/rc-allow.c: the --allow prefixes and the rate limit
 * of the refusal log. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <getopt.h>

#include <cmocka.h>

#include "rc-opts.h"

/* A peer address as rdma_get_peer_addr gives it. */
static const struct sockaddr *peer(const char *ip, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (strchr(ip, ':')) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		s6->sin6_family = AF_INET6;
		assert_int_equal(inet_pton(AF_INET6, ip, &s6->sin6_addr), 1);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

		s4->sin_family = AF_INET;
		assert_int_equal(inet_pton(AF_INET, ip, &s4->sin_addr), 1);
	}
	return (const struct sockaddr *)ss;
}

static bool allowed(const struct rc_allow *a, const char *ip)
{
	struct sockaddr_storage ss;

	return rc_allow_match(a, peer(ip, &ss));
}

/* One list of the given prefixes, each accepted. */
static void make(struct rc_allow *a, const char *const *prefixes)
{
	char err[200];

	memset(a, 0, sizeof(*a));
	for (; *prefixes; prefixes++)
		assert_int_equal(rc_allow_add(a, *prefixes, err, sizeof(err)), 0);
}

static void empty_list_allows_everyone(void **state)
{
	struct rc_allow a = { 0 };
	struct sockaddr_storage ss = { .ss_family = AF_UNIX };

	(void)state;
	assert_true(allowed(&a, "192.0.2.1"));
	assert_true(allowed(&a, "2001:db8::1"));
	assert_true(rc_allow_match(NULL, (struct sockaddr *)&ss));
	assert_true(rc_allow_match(&a, (struct sockaddr *)&ss));
}

static void ipv4_prefixes(void **state)
{
	static const char *const p[] = { "10.0.0.0/8", "192.0.2.7", "198.51.100.128/25", NULL };
	struct rc_allow a;

	(void)state;
	make(&a, p);
	assert_int_equal(a.n, 3);
	assert_true(allowed(&a, "10.0.0.0"));
	assert_true(allowed(&a, "10.255.255.255"));
	assert_false(allowed(&a, "11.0.0.0"));
	assert_false(allowed(&a, "9.255.255.255"));
	/* A plain address is /32: exactly that one. */
	assert_true(allowed(&a, "192.0.2.7"));
	assert_false(allowed(&a, "192.0.2.6"));
	assert_false(allowed(&a, "192.0.2.8"));
	/* /25: a prefix that ends inside a byte. */
	assert_true(allowed(&a, "198.51.100.128"));
	assert_true(allowed(&a, "198.51.100.255"));
	assert_false(allowed(&a, "198.51.100.127"));
	/* An IPv4 prefix says nothing about native IPv6 peers. */
	assert_false(allowed(&a, "2001:db8::1"));
	assert_false(allowed(&a, "::a00:1")); /* IPv4-compatible, not mapped */
}

static void ipv4_mapped_peers_match_ipv4_prefixes(void **state)
{
	static const char *const p[] = { "10.0.2.0/24", NULL };
	struct rc_allow a;

	(void)state;
	make(&a, p);
	/* A dual-stack listener sees IPv4 clients as ::ffff:a.b.c.d. */
	assert_true(allowed(&a, "::ffff:10.0.2.15"));
	assert_false(allowed(&a, "::ffff:10.0.3.15"));
	assert_true(allowed(&a, "10.0.2.15"));
}

static void ipv6_prefixes(void **state)
{
	static const char *const p[] = { "2001:db8:1::/48", "fe80::1", "::ffff:192.0.2.0/120",
					 NULL };
	struct rc_allow a;

	(void)state;
	make(&a, p);
	assert_true(allowed(&a, "2001:db8:1::"));
	assert_true(allowed(&a, "2001:db8:1:ffff:ffff:ffff:ffff:ffff"));
	assert_false(allowed(&a, "2001:db8:2::1"));
	/* A plain IPv6 address is /128. */
	assert_true(allowed(&a, "fe80::1"));
	assert_false(allowed(&a, "fe80::2"));
	/* An IPv4-mapped IPv6 prefix names IPv4 peers too. */
	assert_true(allowed(&a, "192.0.2.77"));
	assert_true(allowed(&a, "::ffff:192.0.2.77"));
	assert_false(allowed(&a, "192.0.3.77"));
}

static void slash_0_and_full_length(void **state)
{
	static const char *const v4all[] = { "0.0.0.0/0", NULL };
	static const char *const v6all[] = { "::/0", NULL };
	static const char *const hosts[] = { "192.0.2.1/32", "2001:db8::1/128", NULL };
	struct rc_allow a;

	(void)state;
	/* 0.0.0.0/0: every IPv4 peer (mapped ones too), no native IPv6 one. */
	make(&a, v4all);
	assert_true(allowed(&a, "1.2.3.4"));
	assert_true(allowed(&a, "255.255.255.255"));
	assert_true(allowed(&a, "::ffff:1.2.3.4"));
	assert_false(allowed(&a, "2001:db8::1"));
	/* ::/0: everyone. */
	make(&a, v6all);
	assert_true(allowed(&a, "1.2.3.4"));
	assert_true(allowed(&a, "2001:db8::1"));
	assert_true(allowed(&a, "::"));
	/* /32 and /128: one host each. */
	make(&a, hosts);
	assert_true(allowed(&a, "192.0.2.1"));
	assert_false(allowed(&a, "192.0.2.0"));
	assert_true(allowed(&a, "2001:db8::1"));
	assert_false(allowed(&a, "2001:db8::"));
}

static void other_families_are_refused_when_a_list_is_set(void **state)
{
	static const char *const p[] = { "::/0", NULL };
	struct sockaddr_storage ss = { .ss_family = AF_UNIX };
	struct rc_allow a;

	(void)state;
	make(&a, p);
	assert_false(rc_allow_match(&a, (struct sockaddr *)&ss));
	assert_false(rc_allow_match(&a, NULL));
}

static void bad_input_is_refused(void **state)
{
	static const char *const bad[] = {
		"",
		"/8",
		"10.0.0.0/",
		"10.0.0.0/33",
		"10.0.0.0/-1",
		"10.0.0.0/+8",
		"10.0.0.0/ 8",
		"10.0.0.0/8x",
		"10.0.0.0/0x8",
		"10.0.0.0/0008",
		"10.0.0.1/8",
		"10.0.0",
		"10.0.0.256",
		"1.2.3.4.5",
		"::/129",
		"2001:db8::1/64",
		"fe80::1%eth0",
		"host.example",
		"10.0.0.0/8/8",
		" 10.0.0.0",
		"2001:db8:::1",
	};
	struct rc_allow a = { 0 };
	char err[200];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_int_equal(rc_allow_add(&a, bad[i], err, sizeof(err)), -EINVAL);
		/* The message names the option and what is wrong. */
		assert_non_null(strstr(err, "--allow"));
	}
	assert_int_equal(a.n, 0);
	assert_int_equal(rc_allow_add(&a, "10.0.0.1/8", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "bits set beyond the prefix length 8"));
}

static void list_is_bounded(void **state)
{
	struct rc_allow a = { 0 };
	char err[200], text[32];
	int i;

	(void)state;
	for (i = 0; i < RC_ALLOW_MAX; i++) {
		snprintf(text, sizeof(text), "10.0.%d.0/24", i);
		assert_int_equal(rc_allow_add(&a, text, err, sizeof(err)), 0);
	}
	assert_int_equal(rc_allow_add(&a, "10.1.0.0/16", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "more than"));
	assert_true(allowed(&a, "10.0.63.9"));
	assert_false(allowed(&a, "10.0.64.9"));
}

static void allow_option_is_shared_and_repeatable(void **state)
{
	static const struct option longopts[] = { RC_LONGOPTS_SERVER, { NULL, 0, NULL, 0 } };
	char *argv[] = { "prog", "--allow", "10.0.2.0/24", "--allow=2001:db8::/32", NULL };
	char *bad[] = { "prog", "--allow", "10.0.2.1/24", NULL };
	struct rc_opts o;
	char err[200];
	int c;

	(void)state;
	rc_opts_init(&o, 4);
	assert_int_equal(
		rc_getopt(&o, 4, argv, RC_SHORTOPTS_SERVER, longopts, "", &c, err, sizeof(err)), 0);
	assert_int_equal(o.allow.n, 2);
	assert_true(allowed(&o.allow, "10.0.2.15"));
	assert_true(allowed(&o.allow, "2001:db8:5::1"));
	assert_false(allowed(&o.allow, "10.0.3.15"));
	rc_opts_init(&o, 4);
	assert_int_equal(
		rc_getopt(&o, 3, bad, RC_SHORTOPTS_SERVER, longopts, "", &c, err, sizeof(err)),
		-EINVAL);
	assert_non_null(strstr(err, "10.0.2.1/24"));
	/* rc_opts_init starts with an open server again. */
	rc_opts_init(&o, 4);
	assert_int_equal(o.allow.n, 0);
}

/* What the rate limiter printed so far into the memory stream f. */
static char *captured(FILE *f, char **buf)
{
	fflush(f);
	return *buf;
}

static int lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static void refusal_log_is_rate_limited(void **state)
{
	struct rc_ratelimit r = { 0 };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	uint64_t t = 5000000;
	int i, printed = 0;

	(void)state;
	assert_non_null(f);
	assert_int_equal(rc_ratelimit_due(&r), UINT64_MAX);
	/* A flood of 100 refusals within 0.1 s: the first 10 are logged. */
	for (i = 0; i < 100; i++)
		printed += rc_ratelimit_take(&r, t + (uint64_t)i * 1000, f);
	assert_int_equal(printed, RC_REFUSE_LOG_MAX);
	assert_int_equal(r.dropped, 90);
	assert_int_equal(rc_ratelimit_due(&r), t + RC_REFUSE_LOG_WINDOW_US);
	/* Not yet due: nothing printed. */
	rc_ratelimit_flush(&r, t + 500000, false, f);
	assert_string_equal(captured(f, &buf), "");
	/* Due: one summary line with the count, then a fresh window. */
	rc_ratelimit_flush(&r, t + RC_REFUSE_LOG_WINDOW_US, false, f);
	assert_non_null(strstr(captured(f, &buf), "90 more connection requests refused"));
	assert_int_equal(lines(buf), 1);
	assert_int_equal(rc_ratelimit_due(&r), UINT64_MAX);
	assert_true(rc_ratelimit_take(&r, t + 2 * RC_REFUSE_LOG_WINDOW_US, f));
	/* A window without drops prints no summary. */
	len = strlen(buf);
	rc_ratelimit_flush(&r, t + 4 * RC_REFUSE_LOG_WINDOW_US, true, f);
	assert_int_equal(strlen(captured(f, &buf)), len);
	/* A refusal after a window with drops prints the summary first. */
	for (i = 0; i < 12; i++)
		rc_ratelimit_take(&r, t + 10 * RC_REFUSE_LOG_WINDOW_US, f);
	assert_true(rc_ratelimit_take(&r, t + 12 * RC_REFUSE_LOG_WINDOW_US, f));
	assert_non_null(strstr(captured(f, &buf), "2 more connection requests refused"));
	fclose(f);
	free(buf);
}

/* The servers' line for a refused peer, rate-limited the same way. */
static void refused_peer_line(void **state)
{
	struct rc_ratelimit r = { 0 };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int i;

	(void)state;
	assert_non_null(f);
	rc_allow_refused(&r, 5000000, "10.0.0.9 port 4242", f);
	assert_string_equal(captured(f, &buf), "server: client 10.0.0.9 port 4242: not allowed "
					       "(no --allow prefix matches); refused\n");
	for (i = 0; i < 20; i++)
		rc_allow_refused(&r, 5000000, "10.0.0.9 port 4242", f);
	assert_int_equal(lines(captured(f, &buf)), RC_REFUSE_LOG_MAX);
	assert_int_equal(r.dropped, 11);
	fclose(f);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(empty_list_allows_everyone),
		cmocka_unit_test(ipv4_prefixes),
		cmocka_unit_test(ipv4_mapped_peers_match_ipv4_prefixes),
		cmocka_unit_test(ipv6_prefixes),
		cmocka_unit_test(slash_0_and_full_length),
		cmocka_unit_test(other_families_are_refused_when_a_list_is_set),
		cmocka_unit_test(bad_input_is_refused),
		cmocka_unit_test(list_is_bounded),
		cmocka_unit_test(allow_option_is_shared_and_repeatable),
		cmocka_unit_test(refusal_log_is_rate_limited),
		cmocka_unit_test(refused_peer_line),
	};

	return cmocka_run_group_tests_name("allow", tests, NULL, NULL);
}
