// SPDX-License-Identifier: MIT
/*
 * auth.c - 03's --secret: the key file, the nonce, the proof. See auth.h.
 *
 * The MAC is libsodium's crypto_auth algorithm, HMAC-SHA512-256, through
 * its streaming interface, which takes a key of any length (crypto_auth
 * itself wants exactly 32 bytes) and the message in pieces.
 */
#define _GNU_SOURCE
#include "auth.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

/* Binds a proof to this protocol and version: no other MAC computed with
 * the same key can pass for one. */
static const char proof_label[] = "rdma-examples 03 request proof v2";

_Static_assert(XFER_PROOF_LEN == crypto_auth_hmacsha512256_BYTES, "the proof is one MAC");

int xfer_secret_load(struct xfer_secret *s, const char *path, char *err, size_t errlen)
{
	struct stat st;
	ssize_t n;
	int fd;

	memset(s, 0, sizeof(*s));
	if (sodium_init() < 0) {
		snprintf(err, errlen, "%s", "libsodium could not be initialised");
		return -1;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		snprintf(err, errlen, "cannot open secret file '%s': %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "secret file '%s' is not a regular file", path);
		goto fail;
	}
	/* A key others can read is no secret; one others can write is not
	 * ours. Refuse both before reading a byte. */
	if (st.st_mode & (S_IRWXG | S_IRWXO)) {
		snprintf(err, errlen,
			 "secret file '%s' is accessible by group or others (mode %04o); it must "
			 "be readable by its owner only: chmod 600 '%s'",
			 path, (unsigned)(st.st_mode & 07777), path);
		goto fail;
	}
	/* One byte more than allowed, to see a file that is too long. */
	do
		n = read(fd, s->key, sizeof(s->key));
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		snprintf(err, errlen, "cannot read secret file '%s': %s", path, strerror(errno));
		goto fail;
	}
	if ((size_t)n < XFER_KEY_MIN || (size_t)n == sizeof(s->key)) {
		snprintf(err, errlen,
			 "secret file '%s' has %s%zd bytes; a key needs %d to %d (e.g. `head -c 32 "
			 "/dev/urandom >FILE`)",
			 path, (size_t)n == sizeof(s->key) ? "at least " : "", n, XFER_KEY_MIN,
			 XFER_KEY_MAX - 1);
		goto fail;
	}
	close(fd);
	s->len = (size_t)n;
	s->set = true;
	return 0;
fail:
	close(fd);
	xfer_secret_wipe(s);
	return -1;
}

void xfer_secret_wipe(struct xfer_secret *s)
{
	sodium_memzero(s, sizeof(*s));
}

/* len bytes from the kernel's random pool. */
static int random_bytes(uint8_t *buf, size_t len)
{
	ssize_t n;

	/* Up to 256 bytes never come back short once the pool is ready;
	 * before that getrandom blocks, which is what we want. */
	do
		n = getrandom(buf, len, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

int xfer_nonce_new(uint8_t nonce[XFER_NONCE_LEN])
{
	return random_bytes(nonce, XFER_NONCE_LEN);
}

int xfer_token_new(uint8_t token[XFER_TOKEN_LEN])
{
	return random_bytes(token, XFER_TOKEN_LEN);
}

bool xfer_token_equal(const uint8_t a[XFER_TOKEN_LEN], const uint8_t b[XFER_TOKEN_LEN])
{
	/* In constant time: how long a wrong guess took says nothing. */
	return sodium_memcmp(a, b, XFER_TOKEN_LEN) == 0;
}

void xfer_proof_make(const struct xfer_secret *s, const uint8_t nonce[XFER_NONCE_LEN],
		     const struct xfer_hello *h, const struct xfer_request *r,
		     uint8_t out[XFER_PROOF_LEN])
{
	crypto_auth_hmacsha512256_state st;
	uint8_t hello[XFER_HELLO_LEN], req[XFER_MSG_MAX];
	struct xfer_msg m = { .type = XFER_T_REQUEST };

	/* The fields as they travel (big-endian, padding zero): the same
	 * bytes on both sides, whatever the hosts' byte order. */
	xfer_hello_pack(hello, h);
	m.u.request = *r;
	memset(m.u.request.proof, 0, XFER_PROOF_LEN);
	xfer_msg_pack(req, 0, &m);
	crypto_auth_hmacsha512256_init(&st, s->key, s->len);
	crypto_auth_hmacsha512256_update(&st, (const uint8_t *)proof_label, sizeof(proof_label));
	crypto_auth_hmacsha512256_update(&st, nonce, XFER_NONCE_LEN);
	crypto_auth_hmacsha512256_update(&st, hello + sizeof(struct rc_hdr), XFER_HELLO_BODY);
	crypto_auth_hmacsha512256_update(&st, req + sizeof(struct rc_hdr), XFER_REQUEST_BODY);
	crypto_auth_hmacsha512256_final(&st, out);
	sodium_memzero(&st, sizeof(st));
}

bool xfer_proof_ok(const struct xfer_secret *s, const uint8_t nonce[XFER_NONCE_LEN],
		   const struct xfer_hello *h, const struct xfer_request *r)
{
	uint8_t want[XFER_PROOF_LEN];
	bool ok;

	xfer_proof_make(s, nonce, h, r, want);
	/* Constant time: how much of a guess was right must not show in
	 * how long the answer takes. */
	ok = crypto_verify_32(want, r->proof) == 0;
	sodium_memzero(want, sizeof(want));
	return ok;
}
