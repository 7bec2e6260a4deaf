/* SPDX-License-Identifier: MIT */
/*
 * auth.h - 03's optional shared secret (--secret FILE on both sides).
 *
 * After ESTABLISHED the server SENDs a CHALLENGE with a fresh 32-byte
 * nonce from getrandom. The client answers with its REQUEST, whose proof
 * is HMAC-SHA512-256 (libsodium's crypto_auth) under the key over
 *   a label, the nonce, the HELLO's body and the REQUEST's body (its proof
 *   field zero),
 * so a proof is good for exactly one request (op, chunk, depth, size,
 * flags, name) on exactly one connection: a replayed proof meets another
 * nonce, a changed request another MAC. The server compares in constant
 * time and serves nothing before the proof checks.
 *
 * What it does not do: encrypt or authenticate the data itself (RDMA moves
 * it from memory to memory, past our CPU), or prove the server to the
 * client. README.md ("Security") says what a real service still needs.
 */
#ifndef XFER_AUTH_H
#define XFER_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xfer-msg.h"

#define XFER_KEY_MIN 16
#define XFER_KEY_MAX 4096

struct xfer_secret {
	bool set;
	size_t len;
	uint8_t key[XFER_KEY_MAX];
};

/*
 * Read the key: every byte of FILE, which must be a regular file of
 * XFER_KEY_MIN..XFER_KEY_MAX bytes that neither group nor others may read
 * or write (as ssh insists for private keys). 0, or -1 with the reason
 * (and the fix) in err.
 */
int xfer_secret_load(struct xfer_secret *s, const char *path, char *err, size_t errlen);
/* Wipe the key from memory. */
void xfer_secret_wipe(struct xfer_secret *s);

/* A fresh nonce from getrandom(2). 0 or a negative errno. */
int xfer_nonce_new(uint8_t nonce[XFER_NONCE_LEN]);
/* A get's token (getrandom): the JOIN of its data connection must carry
 * it. 0 or a negative errno. */
int xfer_token_new(uint8_t token[XFER_TOKEN_LEN]);
/* The JOIN's token against ours, in constant time. */
bool xfer_token_equal(const uint8_t a[XFER_TOKEN_LEN], const uint8_t b[XFER_TOKEN_LEN]);

/* The proof of r (its proof field is ignored) on the connection whose
 * CHALLENGE carried nonce and whose HELLO was h. */
void xfer_proof_make(const struct xfer_secret *s, const uint8_t nonce[XFER_NONCE_LEN],
		     const struct xfer_hello *h, const struct xfer_request *r,
		     uint8_t out[XFER_PROOF_LEN]);
/* Does r carry the right proof? Constant-time comparison. */
bool xfer_proof_ok(const struct xfer_secret *s, const uint8_t nonce[XFER_NONCE_LEN],
		   const struct xfer_hello *h, const struct xfer_request *r);

#endif /* XFER_AUTH_H */
