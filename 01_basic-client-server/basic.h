/* SPDX-License-Identifier: MIT */
/*
 * basic.h - 01's wire format: the messages its client and server exchange
 * (their options: common/rc-opts-basic.h). The librdmacm and verbs calls
 * are not here: each side makes its own, in client.c and server.c.
 *
 * Conversation:
 *   connect request private data: HELLO { max_payload, lesson, flags }
 *   client -> server SEND: DATA  (seq n, payload)
 *   server -> client SEND: REPLY (seq n, the same payload back)
 * Every message is a struct rc_hdr (common/rdma-common.h) and a body.
 */
#ifndef BASIC_H
#define BASIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rc-opts-basic.h"
#include "rdma-common.h"

enum basic_type {
	BASIC_T_HELLO = 0x10, /* private data of rdma_connect */
	BASIC_T_DATA = 0x11,
	BASIC_T_REPLY = 0x12,
};

/* HELLO body: be32 max_payload, u8 lesson, u8 flags, 2 reserved bytes (0). */
#define BASIC_HELLO_LEN (sizeof(struct rc_hdr) + 8)

/* HELLO flags: --inline, both sides SEND with IBV_SEND_INLINE. */
#define BASIC_HELLO_INLINE 0x01u
#define BASIC_HELLO_FLAGS  BASIC_HELLO_INLINE /* every flag we know */

/* HELLO: the largest payload the client will send, the --inject lesson it
 * runs (enum basic_inject, 0 for none) and its BASIC_HELLO_* flags. */
void basic_hello_pack(uint8_t buf[BASIC_HELLO_LEN], uint32_t max_payload, uint8_t lesson,
		      uint8_t flags);
/* Validate a HELLO from connect private data. Returns 0 or -EBADMSG/-ERANGE
 * with a reason in err. */
int basic_hello_unpack(const void *priv, size_t len, uint32_t *max_payload, uint8_t *lesson,
		       uint8_t *flags, char *err, size_t errlen);

/* DATA seq into buf (at least 16 + len bytes): the len bytes of text, or
 * with text NULL the printable test pattern for seq. Returns bytes used. */
size_t basic_data_pack(void *buf, uint32_t seq, const void *text, uint32_t len);
/*
 * Validate a received DATA/REPLY of byte_len bytes (from wc.byte_len):
 * header, the expected type and seq, and payload <= max_payload.
 */
int basic_msg_unpack(const void *buf, size_t byte_len, uint8_t want_type, uint32_t want_seq,
		     uint32_t max_payload, struct rc_msg *m, char *err, size_t errlen);

/* A failed ibv_reg_mr of LEN bytes, with its size and a hint (the
 * locked-memory limit for ENOMEM and EPERM); returns -err. */
int fail_reg_mr(struct rc_log *log, size_t len, int err);

#endif /* BASIC_H */
