/* SPDX-License-Identifier: MIT */
/*
 * xfer-msg.h - 03's wire protocol, which its client and server share: the
 * messages, their limits, and the chunk arithmetic. The other parts: the
 * command lines (xfer-opts.h), file names (xfer-name.h), the source side
 * (xfer-src.h), the receiving end (xfer-sink.h), the checksums and their
 * threads (xfer-hash.h), the disk thread (xfer-disk.h), the control
 * channel (xfer-ctl.h) and the client's result (xfer-report.h).
 *
 * Conversation (sequence.txt has the full diagrams), protocol version 5:
 *   connect request private data: HELLO { op put|get, version, chunk, depth }
 *   server -> client SEND: CHALLENGE { version, flags, nonce }
 *   client -> server SEND: REQUEST { size, flags, name, proof }
 *        (proof: with --secret, a MAC over the nonce, HELLO and REQUEST)
 *   server -> client SEND: ACCEPT { size, ring, rd_depth, flags, data_port, token }
 *        or ERROR { code, text }
 *   put: client RDMA_WRITE_WITH_IMM chunk k into server ring slot k % depth
 *        (in place: at k x chunk in the ACCEPT's window, for k < depth),
 *        imm = (k mod 2^24) << 8 | slot; server -> client
 *        CREDIT { k, slot, digest, addr, rkey }: chunk k + depth goes to
 *        addr/rkey
 *   get: the client opens a second connection to data_port, its connect
 *        request's private data JOIN { token }: the data connection,
 *        whose QP carries the READs and nothing else (see XFER_T_JOIN);
 *        server -> client CHUNK { k, slot, offset, len, digest, addr, rkey };
 *        the client RDMA_READs len bytes at addr/rkey (the server's ring
 *        slot, or on its zero-copy path the file's page cache in a
 *        registered window) into its slot; client -> server CREDIT { k,
 *        slot, digest }
 *   sender -> receiver DONE { size, top digest }
 *   receiver -> sender COMMITTED { size, top digest } or ERROR
 * digest: XXH3-128 of chunk k (the CHUNK's: the sender's, checked by the
 * receiver as the chunk lands; the CREDIT's: the receiver's, checked by
 * the sender); top digest: XXH3-128 over all chunk digests (xfer-hash.h).
 * Every message is a struct rc_hdr (common/rdma-common.h) and a fixed-size,
 * big-endian body. The header's seq numbers each side's SENDs 0, 1, 2, ...
 */
#ifndef XFER_MSG_H
#define XFER_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdma-common.h"

enum xfer_type {
	XFER_T_HELLO = 0x30,	 /* private data of rdma_connect */
	XFER_T_REQUEST = 0x31,	 /* client: which file, how big */
	XFER_T_ACCEPT = 0x32,	 /* server: go ahead, here is the ring */
	XFER_T_ERROR = 0x33,	 /* either side: refused or failed; always the last message */
	XFER_T_CHUNK = 0x34,	 /* get: server announces a filled ring slot */
	XFER_T_CREDIT = 0x35,	 /* the receiver of a chunk gives its slot back */
	XFER_T_DONE = 0x36,	 /* sender: no more data; size and checksum */
	XFER_T_COMMITTED = 0x37, /* receiver: verified and renamed into place */
	XFER_T_CHALLENGE = 0x38, /* server: the nonce a --secret proof must cover */
	/* private data of a get's second rdma_connect, to the ACCEPT's
	 * data_port: the READs get a QP of their own, so no SEND is ever
	 * queued with them (Soft-RoCE on Linux 6.12 and 7.3 fails a QP that
	 * mixes READs and SENDs when packets are lost: docs/kernels.md,
	 * rxe-read-send), and no CREDIT waits behind a READ (an RC send queue
	 * completes in order). */
	XFER_T_JOIN = 0x39,
};

/* 03's protocol version, in the HELLO and the CHALLENGE. Version 1 had no
 * CHALLENGE and a reserved zero byte where the HELLO now has the version;
 * version 2 had one XXH3-128 stream over the file and no chunk digests;
 * version 3 had no addr/rkey in a CHUNK or a CREDIT (each side used the
 * ring's slots) and no flags in the ACCEPT; version 4 had the get's READs
 * on the one connection (no data_port or token in the ACCEPT, no JOIN);
 * version 5 had no ZEROCOPY flag in the REQUEST (and took the page cache
 * on Soft-RoCE too). */
#define XFER_PROTO_VERSION 6

enum xfer_op { XFER_PUT = 1, XFER_GET = 2 };

#define XFER_NAME_MAX	  255 /* bytes of a file name (NAME_MAX) */
#define XFER_ERR_TEXT	  240 /* bytes of an ERROR's text */
#define XFER_HASH_LEN	  16
#define XFER_HASH_NAME	  "xxh3-128"
#define XFER_MIN_CHUNK	  4096u
#define XFER_MAX_CHUNK	  (1u << 30)
#define XFER_MAX_DEPTH	  255	      /* the slot travels in 8 bits of the immediate */
#define XFER_MAX_SIZE	  INT64_MAX   /* largest off_t */
#define XFER_DEF_CHUNK	  (64u << 10) /* x depth 16: docs/performance.md, "Under loss" */
#define XFER_DEF_DEPTH	  16
#define XFER_REQ_F_FORCE  0x1u /* put: overwrite an existing file */
#define XFER_REQ_F_PROOF  0x2u /* the proof field is set (--secret) */
#define XFER_REQ_F_COPY	  0x4u /* get: the server must use its copy path (--copy) */
#define XFER_REQ_F_DIRECT 0x8u /* put: the server pwrites with O_DIRECT (--direct) */
/* The server's page cache where its kernel allows, even on Soft-RoCE
 * (--zero-copy); never with XFER_REQ_F_COPY. */
#define XFER_REQ_F_ZEROCOPY 0x10u
#define XFER_ACC_F_ZEROCOPY 0x1u /* get: the CHUNKs point into the file's page cache */
#define XFER_ACC_F_INPLACE  0x2u /* put: the ring is a window of the file (tmpfs) */
#define XFER_NONCE_LEN	    32
#define XFER_PROOF_LEN	    32	 /* HMAC-SHA512-256 (auth.h) */
#define XFER_CH_F_SECRET    0x1u /* CHALLENGE: this server needs a proof */
#define XFER_TOKEN_LEN	    16	 /* random: ties a get's data connection to its session */

/* Fixed body sizes on the wire. */
#define XFER_HELLO_BODY	    8
#define XFER_REQUEST_BODY   304 /* 8 size, 4 flags, 2 name_len, 2 zero, 256 name, 32 proof */
#define XFER_CHALLENGE_BODY 40	/* 2 version, 2 flags, 4 zero, 32 nonce */
#define XFER_ACCEPT_BODY \
	48 /* 8 size, 16 ring, 2 rd_depth, 2 flags, 2 data_port, 2 zero, 16 token */
#define XFER_ERROR_BODY 248 /* 4 code, 2 text_len, 2 zero, 240 text */
#define XFER_CHUNK_BODY \
	56 /* 8 seq, 8 offset, 4 len, 2 slot, 2 zero, 16 digest, 8 addr, 4 rkey, 4 zero */
#define XFER_CREDIT_BODY 48 /* 8 seq, 2 slot, 6 zero, 16 digest, 8 addr, 4 rkey, 4 zero */
#define XFER_DONE_BODY	 24 /* 8 size, 16 top digest (DONE and COMMITTED) */
#define XFER_JOIN_BODY	 16 /* the token */
#define XFER_HELLO_LEN	 (sizeof(struct rc_hdr) + XFER_HELLO_BODY)
#define XFER_JOIN_LEN	 (sizeof(struct rc_hdr) + XFER_JOIN_BODY)
/* The largest message: every receive buffer has exactly this size. */
#define XFER_MSG_MAX (sizeof(struct rc_hdr) + XFER_REQUEST_BODY)

struct xfer_hello {
	uint8_t op;	 /* enum xfer_op */
	uint8_t version; /* XFER_PROTO_VERSION (unpack refuses any other) */
	uint16_t depth;	 /* ring slots = chunks in flight */
	uint32_t chunk;	 /* bytes per slot */
};

struct xfer_request {
	uint64_t size;	/* put: the file's size; get: 0 */
	uint32_t flags; /* XFER_REQ_F_* */
	uint16_t name_len;
	char name[XFER_NAME_MAX + 1];  /* name_len bytes, then NUL (added on decode) */
	uint8_t proof[XFER_PROOF_LEN]; /* with XFER_REQ_F_PROOF; else zero */
};

struct xfer_challenge {
	uint16_t version;	       /* XFER_PROTO_VERSION */
	uint16_t flags;		       /* XFER_CH_F_* */
	uint8_t nonce[XFER_NONCE_LEN]; /* fresh from getrandom for each connection */
};

struct xfer_accept {
	uint64_t size;		   /* the file's size (get) or the announced one (put) */
	struct rc_remote_buf ring; /* put: the client WRITEs here; get: READs */
	uint16_t rd_depth;	   /* get: RDMA READs the client may have in flight */
	uint16_t flags;		   /* XFER_ACC_F_* */
	/* get: where to open the data connection, and the JOIN's token
	 * (fresh from getrandom for each get); put: zero. */
	uint16_t data_port;
	uint8_t token[XFER_TOKEN_LEN];
};

struct xfer_error {
	uint32_t code;		      /* a positive errno value: ENOENT, EEXIST, ENOSPC... */
	char text[XFER_ERR_TEXT + 1]; /* printable, NUL-terminated after decoding */
};

struct xfer_chunk {
	uint64_t seq;	 /* chunk index: offset = seq * chunk */
	uint64_t offset; /* in the file */
	uint32_t len;
	uint16_t slot;		     /* always seq % depth */
	uint8_t hash[XFER_HASH_LEN]; /* the sender's XXH3-128 of the chunk */
	uint64_t addr;		     /* where the client READs the chunk's len bytes */
	uint32_t rkey;
};

struct xfer_credit {
	uint64_t seq;
	uint16_t slot;
	uint8_t hash[XFER_HASH_LEN]; /* the receiver's XXH3-128 of the chunk */
	/* put: where the client WRITEs chunk seq + depth (the slot again, or
	 * in place its spot in the file's window); get: zero. */
	uint64_t addr;
	uint32_t rkey;
};

struct xfer_done {
	uint64_t size;
	uint8_t hash[XFER_HASH_LEN]; /* the top digest */
};

/* A decoded message (host-endian). */
struct xfer_msg {
	uint8_t type;
	uint32_t seq; /* the header's: the sender's message counter */
	union {
		struct xfer_request request;
		struct xfer_accept accept;
		struct xfer_error error;
		struct xfer_chunk chunk;
		struct xfer_credit credit;
		struct xfer_done done; /* DONE and COMMITTED */
		struct xfer_challenge challenge;
	} u;
};

/* HELLO into connect private data; returns XFER_HELLO_LEN. */
size_t xfer_hello_pack(uint8_t buf[XFER_HELLO_LEN], const struct xfer_hello *h);
/* Validate a HELLO from connect private data: header, type, op, and depth
 * and chunk within what the protocol can express (not the server's
 * limits: xfer_check_limits). 0 or -EBADMSG/-ERANGE with err set. */
int xfer_hello_unpack(const void *priv, size_t len, struct xfer_hello *h, char *err, size_t errlen);

/* JOIN { token } into connect private data; returns XFER_JOIN_LEN. */
size_t xfer_join_pack(uint8_t buf[XFER_JOIN_LEN], const uint8_t token[XFER_TOKEN_LEN]);
/* Validate a JOIN from connect private data (header, type, length) and
 * copy its token. 0 or -EBADMSG with err set. */
int xfer_join_unpack(const void *priv, size_t len, uint8_t token[XFER_TOKEN_LEN], char *err,
		     size_t errlen);

/* Any message but HELLO and JOIN into buf (XFER_MSG_MAX bytes); returns its length. */
size_t xfer_msg_pack(void *buf, uint32_t seq, const struct xfer_msg *m);
/*
 * Validate and decode byte_len received bytes (from wc.byte_len): header,
 * the expected seq, a known type, its exact body size, zero padding, and
 * each field's range. Says nothing about whether the type is welcome in
 * the current state: the caller checks that. 0 or -EBADMSG with err set.
 */
int xfer_msg_unpack(const void *buf, size_t byte_len, uint32_t want_seq, struct xfer_msg *m,
		    char *err, size_t errlen);
/* One line for traces and messages: "CHUNK seq=3 slot=3 offset=...". */
void xfer_msg_describe(const struct xfer_msg *m, char *out, size_t outlen);
const char *xfer_type_str(uint8_t type);

/* Helpers to build messages. */
void xfer_make_error(struct xfer_msg *m, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ------------------------------------------------------------------ */
/* Chunks: offsets are 64-bit everywhere, files may exceed 4 GiB.      */
/* ------------------------------------------------------------------ */

uint64_t xfer_nchunks(uint64_t size, uint32_t chunk);
/* Length of chunk seq of a file of `size` bytes (0 past the end). */
uint32_t xfer_chunk_len(uint64_t size, uint32_t chunk, uint64_t seq);

/* The immediate of a put chunk: low 24 bits of its seq, then its slot. */
uint32_t xfer_imm_pack(uint64_t seq, uint16_t slot);
void xfer_imm_unpack(uint32_t imm, uint32_t *seq24, uint16_t *slot);

/* Is this the chunk we expect next? Each returns 0 or -EBADMSG with err. */
int xfer_check_imm(uint32_t imm, uint32_t byte_len, uint64_t want_seq, uint64_t size,
		   uint32_t chunk, uint16_t depth, char *err, size_t errlen);
int xfer_check_chunk(const struct xfer_chunk *ch, uint64_t want_seq, uint64_t size, uint32_t chunk,
		     uint16_t depth, char *err, size_t errlen);
int xfer_check_credit(const struct xfer_credit *cr, uint64_t want_seq, uint64_t sent,
		      uint16_t depth, char *err, size_t errlen);

#endif /* XFER_MSG_H */
