/* SPDX-License-Identifier: MIT */
/*
 * hostile.h - what the hostile client's files share (tests/hostile/):
 * hostile.c has the connection helpers and main; hostile-01.c, hostile-02.c
 * and hostile-03.c the cases against 01, 02 and 03; hostile-security.c the
 * cases against the servers' access controls; hostile-04.c what 04's
 * server meets besides 02's cases.
 */
#ifndef HOSTILE_H
#define HOSTILE_H

#include <stdbool.h>
#include <stdint.h>

#include "auth.h"
#include "xfer-hash.h"
#include "xfer-msg.h"

#define NRECV	16   /* receives posted: the server's messages never meet RNR */
#define RX_SLOT 512  /* bytes per receive: more than any message of 01/02/03 */
#define TX_LEN	8192 /* what we SEND or WRITE from; also READ into */
#define WR_RX	100  /* receives: WR_RX + slot */
#define WR_TX	200
/* After TX_LEN, 03's messages: a slot each (see x_send), at most this
 * many SENDs per connection. */
#define X_MSGS 32

/* Chunk and depth of 03 cases; the get cases need a file of GET_CHUNKS
 * chunks on the server (--file). */
#define X_CHUNK	     4096u
#define X_DEPTH	     4u
#define X_GET_CHUNKS 4u

struct env {
	const char *host, *port, *file;
	int timeout_ms;
	bool verbose;
	struct xfer_secret secret; /* --secret: 03's key, for the proofs we make */
};

/* One hostile connection. */
struct hc {
	const struct env *e;
	struct rc_conn c;
	struct rc_buf *rx, *tx;
	unsigned port;	   /* our local port, as the server's log names it */
	uint32_t seq;	   /* the header seq of our next SEND */
	uint32_t rseq;	   /* 03: the seq of the server's next message */
	char got[512];	   /* what the server did, for the report */
	bool connected;	   /* ESTABLISHED */
	bool refused;	   /* rejected or dropped: the server passed */
	char expect[200];  /* regex for the server's log line */
	unsigned next_tx;  /* wr_id of our next send */
	uint8_t last[512]; /* the last message received */
	size_t last_len;
	/* 03: what we connected with, and the server's CHALLENGE. */
	struct xfer_hello hello;
	uint8_t nonce[XFER_NONCE_LEN];
	bool secret_required;
	bool accepted; /* the server sent an ACCEPT (advertised its ring) */
	/* 03's get: the data connection (x_join), whose QP takes our READs. */
	struct rc_conn data;
	bool joined;
	bool pending; /* last holds a message hc_recv has not handed out yet */
};

struct kase {
	const char *name;
	int (*run)(struct hc *h, int arg);
	int arg;
	const char *expect; /* regex the server's log line must match */
};

/* Ways to damage the header of a message already packed at p. */
enum bend {
	B_NONE,
	B_MAGIC,	/* wrong magic */
	B_VERSION,	/* version 2 */
	B_FLAGS,	/* a flag this version does not know */
	B_LEN_SHORT,	/* header length below the real body */
	B_LEN_HUGE,	/* header length far beyond what arrives */
	B_SEQ,		/* a sequence number from the future */
	B_TYPE_UNKNOWN, /* a type nobody uses */
};

void note(struct hc *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Resolve (on a port no earlier case of this run used), create the QP,
 * post every receive: 0 or a negative errno. */
int hc_prepare(struct hc *h);
/* hc_prepare, then connect with priv. 0 when
 * connected, 1 when the server rejected us (noted), or a negative errno. */
int hc_connect(struct hc *h, const void *priv, uint8_t priv_len, uint8_t initiator_depth);
/* The QP a work request goes on: a READ on the data connection once we
 * joined (03's get), everything else on the first. */
struct rc_conn *hc_conn_for(struct hc *h, enum ibv_wr_opcode op);
/* Destroy the data connection (if any), then the first. */
void hc_destroy(struct hc *h);
/* SEND len bytes of tx from offset off (signalled). */
int hc_send(struct hc *h, size_t off, size_t len);
/* A one-sided operation from tx offset 0 (signalled). */
int hc_rdma(struct hc *h, enum ibv_wr_opcode op, size_t len, uint64_t raddr, uint32_t rkey,
	    uint32_t imm);
/* The next message from the server into last (0), or a negative errno
 * after noting why. Our own completions are skipped. */
int hc_recv(struct hc *h);
/* Wait for the completion of our work request wr_id and give its status;
 * a message arriving meanwhile is kept for hc_recv. 0 or a negative errno. */
int hc_wait_own(struct hc *h, uint64_t wr_id, enum ibv_wc_status *st);
/* Wait (bounded) until the server drops the connection, noting what came. */
void hc_wait_dropped(struct hc *h);
/* The end of a case that sent the server something bad: ret is what
 * posting it gave (returned as it is if not 0); once posted, wait
 * (bounded) until the server drops or refuses us, and return 0. */
int hc_expect_dropped(struct hc *h, int ret);

/* Damage the header of the message packed at p as b says. */
void bend_hdr(uint8_t *p, enum bend b);
/* A connect-request case: connect with this private data; passes if the
 * server rejects it. */
int connect_bad(struct hc *h, const uint8_t *priv, uint8_t len, uint8_t initiator_depth);

/* 03: connect (put or get of X_CHUNK x X_DEPTH) and take the CHALLENGE:
 * 0, 1 (refused or noted) or a negative errno. */
int x_connect(struct hc *h, uint8_t op);
/* SEND m with our next seq, its header bent as b says. */
int x_send(struct hc *h, const struct xfer_msg *m, enum bend b);
/* A REQUEST into m; with a proof under key over our nonce unless NULL. */
void x_make_request(struct hc *h, struct xfer_msg *m, const char *name, uint64_t size,
		    const struct xfer_secret *key);
/* SEND the REQUEST m, wait for ACCEPT: 0, or 1 (noted). */
int x_send_request(struct hc *h, const struct xfer_msg *m, struct xfer_accept *acc);
/* A valid REQUEST (with a proof when we have --secret), then ACCEPT. */
int x_request(struct hc *h, const char *name, uint64_t size, struct xfer_accept *acc);
/* 03's get: open the data connection to the ACCEPT's data_port with a
 * JOIN carrying token (NULL: the ACCEPT's), on our PD and CQ. 0 joined,
 * 1 rejected (noted: "JOIN rejected: REASON"), or a negative errno. */
int x_join(struct hc *h, const struct xfer_accept *acc, const uint8_t *token);

/* 02 (and 04, which speaks 02's protocol): connect with hello (initiator
 * depth 4) and take the BUF into b: 0, 1 (refused or noted) or a negative
 * errno. */
struct rw_hello;
struct rw_buf;
#define R_LEN 4096u /* the buffer our 02 HELLOs ask for */
int rw_connect_buf(struct hc *h, const struct rw_hello *hello, struct rw_buf *b);

/* The cases of `hostile 01|02|03 SERVER PORT CASE...`: hostile-01.c,
 * hostile-02.c and hostile-03.c, each ended by a case without a name. */
extern const struct kase cases01[], cases02[], cases03[];
/* hostile-security.c: `hostile 03-security SERVER PORT CASE...`. */
extern const struct kase cases03sec[];
/* hostile-04.c: `hostile 04 SERVER PORT [CASE...]` runs 02's cases, with
 * the log lines 04's server gives where they differ (expect04), then
 * cases04: what only an event loop serving many clients has to face. */
struct kase_expect {
	const char *name, *expect;
};
extern const struct kase cases04[];
extern const struct kase_expect expect04[];

#endif /* HOSTILE_H */
