// SPDX-License-Identifier: MIT
/* Unit tests of 03's --secret (03_file-transfer/auth.c): the key file's
 * checks, the nonce, and what a proof covers. */
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
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <sodium.h>

#include "auth.h"

struct tmp {
	char dir[64];
	char path[128];
};

static int tmp_setup(void **state)
{
	struct tmp *t = calloc(1, sizeof(*t));

	if (!t)
		return -1;
	snprintf(t->dir, sizeof(t->dir), "/tmp/test-auth.XXXXXX");
	if (!mkdtemp(t->dir))
		return -1;
	snprintf(t->path, sizeof(t->path), "%s/key", t->dir);
	*state = t;
	return 0;
}

static int tmp_teardown(void **state)
{
	struct tmp *t = *state;

	unlink(t->path);
	rmdir(t->dir);
	free(t);
	return 0;
}

/* Write n bytes of pattern into path with mode. */
static void write_key(const char *path, size_t n, mode_t mode)
{
	uint8_t buf[XFER_KEY_MAX + 16];
	int fd;
	size_t i;

	for (i = 0; i < n; i++)
		buf[i] = (uint8_t)(i * 13 + 5);
	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, n), (ssize_t)n);
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

static void key_file_checks(void **state)
{
	struct tmp *t = *state;
	struct xfer_secret s;
	char err[512];

	/* Owner only, 16..4095 bytes: taken, every byte. */
	write_key(t->path, 32, 0600);
	assert_int_equal(xfer_secret_load(&s, t->path, err, sizeof(err)), 0);
	assert_true(s.set);
	assert_int_equal(s.len, 32);
	assert_int_equal(s.key[1], 18);
	write_key(t->path, 16, 0400);
	assert_int_equal(xfer_secret_load(&s, t->path, err, sizeof(err)), 0);
	assert_int_equal(s.len, 16);
	write_key(t->path, XFER_KEY_MAX - 1, 0600);
	assert_int_equal(xfer_secret_load(&s, t->path, err, sizeof(err)), 0);
	/* Too short, too long. */
	write_key(t->path, 15, 0600);
	assert_int_equal(xfer_secret_load(&s, t->path, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "has 15 bytes; a key needs 16"));
	assert_false(s.set);
	write_key(t->path, XFER_KEY_MAX, 0600);
	assert_int_equal(xfer_secret_load(&s, t->path, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "at least 4096 bytes"));
	/* Readable (or writable) by group or others: refused, with the fix. */
	write_key(t->path, 32, 0640);
	assert_int_equal(xfer_secret_load(&s, t->path, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "mode 0640"));
	assert_non_null(strstr(err, "chmod 600"));
	assert_false(s.set);
	write_key(t->path, 32, 0604);
	assert_int_equal(xfer_secret_load(&s, t->path, err, sizeof(err)), -1);
	write_key(t->path, 32, 0620);
	assert_int_equal(xfer_secret_load(&s, t->path, err, sizeof(err)), -1);
	/* Missing, a directory. */
	assert_int_equal(xfer_secret_load(&s, "/nonexistent/key", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "No such file"));
	assert_int_equal(xfer_secret_load(&s, t->dir, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not a regular file"));
	xfer_secret_wipe(&s);
	assert_false(s.set);
}

static void nonces_are_fresh(void **state)
{
	uint8_t a[XFER_NONCE_LEN], b[XFER_NONCE_LEN];

	(void)state;
	assert_int_equal(xfer_nonce_new(a), 0);
	assert_int_equal(xfer_nonce_new(b), 0);
	/* 256 random bits twice alike: a broken source, not chance. */
	assert_memory_not_equal(a, b, XFER_NONCE_LEN);
}

/* The algorithm is HMAC-SHA512-256 with a key of any length: RFC 4231's
 * test case 2 (a 4-byte key), HMAC-SHA-512 truncated to 256 bits. */
/* A get's token: fresh each time, and compared bit for bit. */
static void tokens_are_fresh_and_exact(void **state)
{
	uint8_t a[XFER_TOKEN_LEN], b[XFER_TOKEN_LEN];

	(void)state;
	assert_int_equal(xfer_token_new(a), 0);
	assert_int_equal(xfer_token_new(b), 0);
	assert_memory_not_equal(a, b, XFER_TOKEN_LEN);
	assert_true(xfer_token_equal(a, a));
	assert_false(xfer_token_equal(a, b));
	memcpy(b, a, XFER_TOKEN_LEN);
	b[XFER_TOKEN_LEN - 1] ^= 0x80; /* the last bit counts too */
	assert_false(xfer_token_equal(a, b));
	b[XFER_TOKEN_LEN - 1] ^= 0x80;
	b[0] ^= 1;
	assert_false(xfer_token_equal(a, b));
}

static void mac_is_hmac_sha512_256(void **state)
{
	static const uint8_t want[32] = { 0x16, 0x4b, 0x7a, 0x7b, 0xfc, 0xf8, 0x19, 0xe2,
					  0xe3, 0x95, 0xfb, 0xe7, 0x3b, 0x56, 0xe0, 0xa3,
					  0x87, 0xbd, 0x64, 0x22, 0x2e, 0x83, 0x1f, 0xd6,
					  0x10, 0x27, 0x0c, 0xd7, 0xea, 0x25, 0x05, 0x54 };
	static const char data[] = "what do ya want for nothing?";
	crypto_auth_hmacsha512256_state st;
	uint8_t out[32];

	(void)state;
	crypto_auth_hmacsha512256_init(&st, (const uint8_t *)"Jefe", 4);
	crypto_auth_hmacsha512256_update(&st, (const uint8_t *)data, strlen(data));
	crypto_auth_hmacsha512256_final(&st, out);
	assert_memory_equal(out, want, 32);
}

static const struct xfer_hello hello = {
	.op = XFER_GET, .version = XFER_PROTO_VERSION, .depth = 4, .chunk = 4096
};

static void make_secret(struct xfer_secret *s, uint8_t first)
{
	memset(s, 0, sizeof(*s));
	memset(s->key, 0x42, 32);
	s->key[0] = first;
	s->len = 32;
	s->set = true;
}

static void make_request(struct xfer_request *r, const char *name)
{
	memset(r, 0, sizeof(*r));
	r->flags = XFER_REQ_F_PROOF;
	r->name_len = (uint16_t)strlen(name);
	memcpy(r->name, name, r->name_len);
}

/* The proof as auth.h defines it, computed here from its description:
 * MAC(label || nonce || HELLO body || REQUEST body with a zero proof). */
static void proof_by_the_book(const struct xfer_secret *s, const uint8_t *nonce,
			      const struct xfer_request *r, uint8_t out[32])
{
	static const char label[] = "rdma-examples 03 request proof v2";
	uint8_t h[XFER_HELLO_LEN], buf[XFER_MSG_MAX];
	struct xfer_msg m = { .type = XFER_T_REQUEST };
	crypto_auth_hmacsha512256_state st;

	xfer_hello_pack(h, &hello);
	m.u.request = *r;
	memset(m.u.request.proof, 0, XFER_PROOF_LEN);
	assert_int_equal(xfer_msg_pack(buf, 0, &m), 16 + XFER_REQUEST_BODY);
	crypto_auth_hmacsha512256_init(&st, s->key, s->len);
	crypto_auth_hmacsha512256_update(&st, (const uint8_t *)label, sizeof(label));
	crypto_auth_hmacsha512256_update(&st, nonce, XFER_NONCE_LEN);
	crypto_auth_hmacsha512256_update(&st, h + 16, XFER_HELLO_BODY);
	crypto_auth_hmacsha512256_update(&st, buf + 16, XFER_REQUEST_BODY);
	crypto_auth_hmacsha512256_final(&st, out);
}

static void proof_covers_key_nonce_hello_and_request(void **state)
{
	struct xfer_secret key, other_key;
	struct xfer_request r, changed;
	struct xfer_hello h2;
	uint8_t nonce[XFER_NONCE_LEN], nonce2[XFER_NONCE_LEN], want[32];

	(void)state;
	make_secret(&key, 1);
	make_secret(&other_key, 2);
	memset(nonce, 7, sizeof(nonce));
	memcpy(nonce2, nonce, sizeof(nonce));
	nonce2[31] ^= 1;
	make_request(&r, "data.bin");
	xfer_proof_make(&key, nonce, &hello, &r, r.proof);
	proof_by_the_book(&key, nonce, &r, want);
	assert_memory_equal(r.proof, want, 32);
	assert_true(xfer_proof_ok(&key, nonce, &hello, &r));
	/* The proof field itself is not covered: the same proof again. */
	changed = r;
	xfer_proof_make(&key, nonce, &hello, &changed, changed.proof);
	assert_memory_equal(changed.proof, r.proof, 32);
	/* Another key, another nonce (a replay on a new connection). */
	assert_false(xfer_proof_ok(&other_key, nonce, &hello, &r));
	assert_false(xfer_proof_ok(&key, nonce2, &hello, &r));
	/* Another HELLO: op, chunk, depth. */
	h2 = hello;
	h2.op = XFER_PUT;
	assert_false(xfer_proof_ok(&key, nonce, &h2, &r));
	h2 = hello;
	h2.depth = 5;
	assert_false(xfer_proof_ok(&key, nonce, &h2, &r));
	h2 = hello;
	h2.chunk = 8192;
	assert_false(xfer_proof_ok(&key, nonce, &h2, &r));
	/* Another request: name, size, flags. */
	changed = r;
	changed.name[0] = 'D';
	assert_false(xfer_proof_ok(&key, nonce, &hello, &changed));
	changed = r;
	changed.name_len = 4; /* "data": a prefix of the name */
	memset(changed.name + 4, 0, sizeof(changed.name) - 4);
	assert_false(xfer_proof_ok(&key, nonce, &hello, &changed));
	changed = r;
	changed.size = 1;
	assert_false(xfer_proof_ok(&key, nonce, &hello, &changed));
	changed = r;
	changed.flags |= XFER_REQ_F_FORCE;
	assert_false(xfer_proof_ok(&key, nonce, &hello, &changed));
	/* Any single bit of the proof. */
	changed = r;
	changed.proof[17] ^= 0x10;
	assert_false(xfer_proof_ok(&key, nonce, &hello, &changed));
	changed = r;
	memset(changed.proof, 0, XFER_PROOF_LEN);
	assert_false(xfer_proof_ok(&key, nonce, &hello, &changed));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(key_file_checks, tmp_setup, tmp_teardown),
		cmocka_unit_test(nonces_are_fresh),
		cmocka_unit_test(tokens_are_fresh_and_exact),
		cmocka_unit_test(mac_is_hmac_sha512_256),
		cmocka_unit_test(proof_covers_key_nonce_hello_and_request),
	};

	if (sodium_init() < 0)
		return 1;
	return cmocka_run_group_tests_name("auth", tests, NULL, NULL);
}
