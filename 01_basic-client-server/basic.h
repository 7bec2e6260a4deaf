/* SPDX-License-Identifier: MIT */
/*
 * basic.h - what the client and the server of 01 share: the messages they
 * exchange, and a connection's objects with the wait for a completion and
 * the release (their options: common/rc-opts-basic.h).
 *
 * Conversation:
 *   connect request private data: HELLO { max_payload }
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

#define BASIC_HELLO_LEN (sizeof(struct rc_hdr) + 4)

/* HELLO: the largest payload the client will send. */
void basic_hello_pack(uint8_t buf[BASIC_HELLO_LEN], uint32_t max_payload);
/* Validate a HELLO from connect private data. Returns 0 or -EBADMSG/-ERANGE
 * with a reason in err. */
int basic_hello_unpack(const void *priv, size_t len, uint32_t *max_payload, char *err,
		       size_t errlen);

/* DATA or REPLY into buf (at least 16 + len bytes); returns bytes used. */
size_t basic_msg_pack(void *buf, uint8_t type, uint32_t seq, const void *payload, uint32_t len);
/*
 * Validate a received DATA/REPLY of byte_len bytes (from wc.byte_len):
 * header, the expected type and seq, and payload <= max_payload.
 */
int basic_msg_unpack(const void *buf, size_t byte_len, uint8_t want_type, uint32_t want_seq,
		     uint32_t max_payload, struct rc_msg *m, char *err, size_t errlen);

/* Fill len bytes with the printable test pattern for message seq. */
void basic_fill_pattern(uint8_t *p, uint32_t len, uint32_t seq);

/*
 * One connection's librdmacm and verbs objects, the same on both sides:
 * what both sides do the same way is here, what differs is in client.c
 * and server.c, in the order of sequence.txt.
 */
struct basic_conn {
	struct rc_log log;		  /* -v trace and the last error */
	struct rdma_event_channel *cm_ch; /* the CM's events, for this id only */
	struct rdma_cm_id *id;		  /* librdmacm's handle: like a socket */
	struct ibv_pd *pd;
	struct ibv_comp_channel *comp_ch; /* "a completion arrived" as an fd */
	struct ibv_cq *cq;
	uint8_t *buf;		/* the registered memory */
	struct ibv_mr *mr;	/* its registration */
	int timeout_ms;		/* --timeout: the bound of every wait */
	bool busy_poll;		/* --poll busy: spin on the CQ instead of sleeping */
	int cancel_fd;		/* -1, or an fd whose readability ends the waits */
	bool established;	/* ESTABLISHED, and we have not disconnected */
	bool peer_disconnected; /* DISCONNECTED seen */
};

void basic_conn_init(struct basic_conn *v, const char *name, const struct rc_opts *o,
		     int cancel_fd);
/* A non-blocking CM event channel, and an id on it (librdmacm's handle:
 * like a socket). */
int basic_create_id(struct basic_conn *v, void *context);
/* PD, completion channel, CQ and RC QP on the id's device, then room for
 * two messages of msg_len bytes (v->buf), registered. */
int basic_setup(struct basic_conn *v, size_t msg_len);
/* Post a receive of v->buf[off, off + len). */
int basic_post_recv(struct basic_conn *v, size_t off, size_t len, uint64_t wr_id);
/*
 * The next completion, within --timeout: poll the CQ; when it is empty,
 * sleep on the completion channel (--poll event) or spin (--poll busy),
 * watching the CM's fd too. Returns 0 with *wc, 1 once the peer has
 * disconnected and every completion is taken, or a negative errno with
 * log.err set (-ECANCELED when cancel_fd fired).
 */
int basic_next_wc(struct basic_conn *v, struct ibv_wc *wc);
/* Release everything in reverse order of creation (any part may be
 * missing after a failure), telling the peer first if still connected. */
void basic_teardown(struct basic_conn *v);

#endif /* BASIC_H */
