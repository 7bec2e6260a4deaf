/* SPDX-License-Identifier: MIT */
/*
 * rdma-common.h - RDMA only: what a service copies to use librdmacm and
 * ibverbs the way these examples do.
 *
 * What lives here: one connection's verbs resources (PD, completion channel,
 * CQ, QP, registered buffers), resolving, connecting, accepting, rejecting
 * and disconnecting with librdmacm, waiting for CM events and completions
 * with a timeout, names and hints for statuses and events, and the common
 * wire header. rdma-common.c needs nothing else from common/ (a unit
 * test builds a program from it alone). rc-counters.c, RDMA too, is an
 * opt-in: a wait that also asks the port's retransmission counters
 * (c->link_hooks = &rc_link_counters). What is not RDMA lives beside them:
 * rc-opts.h (command line), rc-server.h (listener, thread per client,
 * signals), rc-json.h (--json output).
 *
 * 01_basic-client-server makes these same librdmacm and ibverbs calls
 * inline, in the order of its sequence.txt: it is the lesson, meant to be
 * read top to bottom without jumping here. That 01 repeats what this file
 * does is deliberate; do not "fix" it by calling these wrappers from 01.
 * 02 and 03 use the wrappers.
 *
 * Rules this library keeps: no global state (everything hangs off a
 * struct rc_conn), it never calls exit(), and every failing call returns
 * a negative errno and leaves a one-line message that says what failed,
 * why, and a hint, in the context's log.err.
 */
#ifndef RDMA_COMMON_H
#define RDMA_COMMON_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define RC_ERR_LEN 512

/*
 * The transport's retries: what it does when packets are lost, and when it
 * gives up. We choose all three values: the defaults are slow (rdma_cm's
 * ACK timeout on RoCE is 2^19 x 4.096 us = 2.1 s on Linux 6.1).
 *
 * retry_count 7: how often the NIC resends what the peer did not
 * acknowledge before the WR fails with IBV_WC_RETRY_EXC_ERR; perftest's
 * and NCCL's value. A NIC gives a silent peer up after (7 + 1) x the ACK
 * timeout, ~0.5 s. The count starts afresh when an ACK arrives; Soft-RoCE
 * also counts each NAK for a gap (rxe_comp.c) and restarts only on a
 * positive ACK, and never counts 7 down: it resends for ever. So on
 * Soft-RoCE our own bounds end a transfer (rc-counters.c): --timeout for a
 * peer that sends nothing back, 3 x --timeout of extended waits, and at
 * least 1 MiB per 2 x --timeout while the link resends. With 6, loss now
 * and then ended healthy transfers there where perftest's went on
 * (docs/reliability.md).
 *
 * rnr_retry_count 6: how often a SEND that found no receive posted is
 * resent. 7 would mean "forever", turning a missing receive into a hang;
 * our protocols post receives ahead of time, so RNR means a bug or a
 * stuck peer, and RNR_RETRY_EXC_ERR should say so.
 *
 * Who sets what (the IB CM, also for RoCE: Linux drivers/infiniband/core/
 * cm.c): the server's QP takes both counts from the client's connect
 * request, and the client's QP the server's rnr_retry_count from the
 * reply. The retry_count given to rdma_accept is not used at all.
 *
 * The local ACK timeout, set before connecting or accepting (rdma_cm
 * applies it when it moves the QP to RTS): after 4.096 us x 2^14 = 67 ms
 * without an ACK the NIC resends what is outstanding. perftest's default
 * too. It is what a lost last packet of a burst costs (nothing behind it
 * makes the peer NAK the gap): between two Soft-RoCE VMs at 1% loss, 03
 * ran 2-2.5x faster with 2^14 than with 2^16 (268 ms), as fast as
 * ib_write_bw/ib_read_bw with the same timer (docs/reliability.md). The
 * default (2^19 = 2.1 s on Linux 6.1) stalled our transfers past their
 * 10 s waits. A NIC gives a silent peer up after (RC_RETRY_COUNT + 1) x 67
 * ms = ~0.5 s, inside --timeout. Raise it (--ack-timeout 16: ~2.1 s; 18:
 * ~8.6 s) where the peer may be unresponsive for longer (busy, emulated
 * hosts) or outages must be ridden out. README.md's troubleshooting and
 * docs/reliability.md have the measurements.
 */
#define RC_ACK_TIMEOUT	   14
#define RC_RETRY_COUNT	   7
#define RC_RNR_RETRY_COUNT 6

/* ------------------------------------------------------------------ */
/* Logging: an error message buffer and the -v trace, per context.    */
/* ------------------------------------------------------------------ */

struct rc_log {
	char name[48];	      /* "client", "server", "conn 3" */
	bool verbose;	      /* -v: one line per CM event, WR, completion */
	char err[RC_ERR_LEN]; /* the last error, for main to print */
};

void rc_log_init(struct rc_log *log, const char *name, bool verbose);
/* Print one -v trace line "NAME: ..." to stderr if verbose. */
void rc_trace(const struct rc_log *log, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Store a message in log->err and return -err (err is a positive errno). */
int rc_fail(struct rc_log *log, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The same for a failed library call: "CALL: strerror(err); hint: HINT".
 * hint NULL: rc_call_hint's, or "see `man CALL`". */
int rc_fail_call(struct rc_log *log, const char *call, int err, const char *hint);

/* Micro- and nanoseconds on a monotonic clock. */
uint64_t rc_now_us(void);
uint64_t rc_now_ns(void);

/* ------------------------------------------------------------------ */
/* The wire header every message of the collection starts with.       */
/* ------------------------------------------------------------------ */

#define RC_MAGIC   0x52444d58u /* "RDMX" */
#define RC_VERSION 1

/* Message types. 0x0_ are common, 0x1_ belong to 01, 0x2_ to 02, 0x3_ to 03. */
enum rc_type {
	RC_T_REJECT = 0x01, /* private data of rdma_reject: a text reason */
};

/*
 * On the wire, all fields big-endian. 16 bytes, no padding. Followed by
 * `length` bytes of body. The receiver takes the real length from
 * wc.byte_len (or the CM event's private_data_len) and checks it against
 * `length` before trusting anything else.
 */
struct rc_hdr {
	uint32_t magic;
	uint8_t version;
	uint8_t type;
	uint16_t flags; /* must be 0 in version 1 */
	uint32_t length;
	uint32_t seq;
};
_Static_assert(sizeof(struct rc_hdr) == 16, "wire header must be 16 bytes");

/* Decoded (host-endian) header. */
struct rc_msg {
	uint8_t type;
	uint32_t length;
	uint32_t seq;
	const uint8_t *body; /* points into the received buffer */
};

/* Write a header for `type` with a body of `length` bytes into buf. */
void rc_hdr_pack(void *buf, uint8_t type, uint32_t length, uint32_t seq);
/*
 * Validate and decode `len` received bytes: size, magic, version, flags and
 * that the header's length is exactly what arrived. The type is not checked
 * here: each example knows which types it accepts. Returns 0 or -EBADMSG
 * with a reason in err.
 */
int rc_hdr_unpack(const void *buf, size_t len, struct rc_msg *out, char *err, size_t errlen);
/* The same for connection private data, which the transport pads with
 * zeros (to 56 bytes for a connect request): trailing bytes beyond the
 * header's length are allowed, missing ones are not. */
int rc_priv_unpack(const void *buf, size_t len, struct rc_msg *out, char *err, size_t errlen);
/* A message that fails validation: the reason in err, returns -EBADMSG. */
static inline int __attribute__((format(printf, 3, 4)))
rc_bad_msg(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EBADMSG;
}

/* rc_hdr_unpack, then the expected type and sequence number (01's and 02's
 * messages): 0, or -EBADMSG with what differs in err. */
static inline int rc_hdr_expect(const void *buf, size_t len, uint8_t type, uint32_t seq,
				struct rc_msg *m, char *err, size_t errlen)
{
	int ret = rc_hdr_unpack(buf, len, m, err, errlen);

	if (ret)
		return ret;
	if (m->type != type)
		return rc_bad_msg(err, errlen, "message type 0x%02x, expected 0x%02x", m->type,
				  type);
	if (m->seq != seq)
		return rc_bad_msg(err, errlen, "sequence number %u, expected %u", m->seq, seq);
	return 0;
}

/* rc_priv_unpack for a connect request's first message, a HELLO: type
 * `type`, a body of exactly body_len bytes, sequence number 0 (01's, 02's
 * and 03's). 0, or -EBADMSG with what differs in err. */
static inline int rc_hello_expect(const void *priv, size_t len, uint8_t type, size_t body_len,
				  struct rc_msg *m, char *err, size_t errlen)
{
	int ret = rc_priv_unpack(priv, len, m, err, errlen);

	if (ret)
		return ret;
	if (m->type != type || m->length != body_len)
		return rc_bad_msg(err, errlen,
				  "expected a HELLO of %zu bytes, got type 0x%02x of %u bytes",
				  body_len, m->type, m->length);
	if (m->seq != 0)
		return rc_bad_msg(err, errlen, "HELLO with sequence number %u, expected 0", m->seq);
	return 0;
}

/* Big-endian fields of n bytes (at most 8) in message bodies, byte by
 * byte: a received buffer need not be aligned for a wider load. */
static inline void rc_put_be(uint8_t *p, uint64_t v, int n)
{
	while (n-- > 0) {
		p[n] = (uint8_t)v;
		v >>= 8;
	}
}

static inline uint64_t rc_get_be(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

static inline void rc_put16(uint8_t *p, uint16_t v)
{
	rc_put_be(p, v, 2);
}

static inline void rc_put32(uint8_t *p, uint32_t v)
{
	rc_put_be(p, v, 4);
}

static inline void rc_put64(uint8_t *p, uint64_t v)
{
	rc_put_be(p, v, 8);
}

static inline uint16_t rc_get16(const uint8_t *p)
{
	return (uint16_t)rc_get_be(p, 2);
}

static inline uint32_t rc_get32(const uint8_t *p)
{
	return (uint32_t)rc_get_be(p, 4);
}

static inline uint64_t rc_get64(const uint8_t *p)
{
	return rc_get_be(p, 8);
}

/*
 * A memory region the peer may access: what a server advertises so the
 * client can RDMA READ/WRITE it. 16 bytes on the wire: be64 addr,
 * be32 rkey, be32 len.
 */
struct rc_remote_buf {
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
};
#define RC_REMOTE_BUF_WIRE 16

void rc_remote_buf_pack(void *p, const struct rc_remote_buf *r);
void rc_remote_buf_unpack(const void *p, struct rc_remote_buf *r);
/* Is [off, off+len) inside the advertised region? Overflow-safe. */
bool rc_remote_range_ok(const struct rc_remote_buf *r, uint64_t off, uint64_t len);

/* ------------------------------------------------------------------ */
/* Registered buffers.                                                 */
/* ------------------------------------------------------------------ */

struct rc_buf {
	void *addr;
	size_t len;
	struct ibv_mr *mr;
	struct rc_buf *next; /* the connection's list, for cleanup */
};

/* ------------------------------------------------------------------ */
/* The per-device and per-connection contexts.                         */
/* ------------------------------------------------------------------ */

/*
 * Verbs resources of one device, as used by one connection. Each
 * connection owns its own: its thread then waits only on its own CQ, and
 * a client that misbehaves cannot disturb the others.
 */
struct rc_dev {
	struct ibv_context *verbs; /* borrowed from the cm_id, not owned */
	struct ibv_pd *pd;
	struct ibv_comp_channel *channel;
	struct ibv_cq *cq;
	int cq_size;
	uint32_t max_msg_sz; /* the port's largest single message */
	uint8_t max_rd_atom; /* most RDMA READs a QP may have outstanding */
};

#define RC_POLL_BATCH 16

/*
 * What a wait that timed out was waiting on: a silent peer, or a
 * transport still resending what a lossy link dropped? The port's
 * retransmission counters tell (/sys/class/infiniband/DEV/ports/N/
 * hw_counters, the names tools/link-counters.sh explains); rc-counters.c
 * reads them, for rc_next_wc, when c->link_hooks is &rc_link_counters.
 * The waits of one connection that went on past timeout_ms, each counted
 * from its start, add up to at most RC_LINK_BUDGET x timeout_ms: a link
 * that keeps failing ends the connection within a bounded time.
 */
#define RC_LINK_BUDGET 3
/*
 * A transfer that crawls: every wait ends in time, yet little moves (on a
 * link that reorders most packets, Soft-RoCE, which resends for ever at
 * retry count 7, went on at ~23 KiB/s: docs/reliability.md). A connection
 * whose caller counts what it moves (rc_link_moved) must move at least
 * RC_CRAWL_MIN bytes in every RC_CRAWL_WINDOW x timeout_ms in which the
 * port counted a peer's packets out of order, resent or NAKed.
 */
#define RC_CRAWL_WINDOW 2
#define RC_CRAWL_MIN	(1u << 20)

/* The port's counters and one wait's look at them, in struct rc_conn. */
struct rc_link {
	/* NULL: "/sys". Only tests set it, to a tree of fake counter files. */
	const char *sysfs;
	char dir[192];	/* SYSFS/class/infiniband/DEV/ports/N/hw_counters */
	int state;	/* 0: not looked for yet; 1: found; -1: none here */
	unsigned names; /* bit i: the i-th counter name exists in dir */
	/* The current wait of rc_next_wc (reset at each call). */
	int phase; /* 0: first half of the timeout; 1: second; 2..: extended */
	bool have; /* base was read */
	uint64_t start_us, base, rose;
	/* At the connection's first wait: the counters that need packets
	 * from a peer (a gap, a resend, a NAK), for rc_wc_explain. */
	bool conn_have;
	uint64_t conn_peer;
	/* What the connection's extended waits took (RC_LINK_BUDGET), and
	 * what they had taken when the current wait began. A service that
	 * reuses a connection for many requests may zero spent_us per request. */
	uint64_t spent_us, spent_before_us;
	/* Packets the port received (rxe's rcvd_pkts, or the IB
	 * port_rcv_packets): a wait goes on only if the peer is heard. */
	int rx; /* 0: not looked for; 1: rcvd_pkts; 2: port_rcv_packets; -1 */
	bool rx_have;
	uint64_t rx_base;
	/* RC_CRAWL_*: the bytes the caller moved (rc_link_moved), and the
	 * current window's start, bytes and peer counters. */
	uint64_t moved, win_start_us, win_moved, win_peer;
	bool win_have;
};

struct rc_conn;
struct rc_cq_wait;

/*
 * What rc_next_wc asks beyond the CQ, when c->link_hooks is set (02 and 03
 * set rc-counters.c's rc_link_counters). NULL: each wait ends after
 * timeout_ms, with the plain messages ("no completion within N ms", "the
 * peer disconnected"), and rdma-common.c needs no other file.
 */
struct rc_link_hooks {
	/* At the start of each wait: 0, or the error that ends it at once. */
	int (*begin)(struct rc_conn *c);
	/* How long the wait sleeps before asking timed_out (not timeout_ms). */
	int (*first_ms)(const struct rc_conn *c);
	/* The wait reached w's deadline: 0 to wait on (w moved), or the error. */
	int (*timed_out)(struct rc_conn *c, struct rc_cq_wait *w);
	/* The error when the peer has disconnected. */
	int (*peer_gone)(struct rc_conn *c);
	/* After a failed completion, log.err already naming it: add to it. */
	void (*explain)(struct rc_conn *c, const struct ibv_wc *wc);
};

struct rc_conn {
	struct rc_log log;
	int timeout_ms; /* bound of every single wait */
	bool busy_poll; /* spin on the CQ instead of sleeping on its channel */
	/* The local ACK timeout (4.096 us x 2^N) and the retry count this side
	 * asks for; rc_conn_init sets RC_ACK_TIMEOUT and RC_RETRY_COUNT. */
	uint8_t ack_timeout, retry_count;
	int cancel_fd; /* -1, or an fd whose readability aborts waits */
	int wake_fd;   /* -1, or an eventfd that ends rc_next_wc's wait early */
	/* NULL, or asked by rc_link_counters when a wait times out: true with
	 * a message in buf when a local cause, not the peer, stalled us (03's
	 * disk thread inside one chunk). */
	bool (*local_stall)(void *arg, char *buf, size_t len);
	void *local_stall_arg;
	/* NULL, or rc_link_counters: the port's retransmission counters, read
	 * when a wait times out; a lossy link that still resends extends it
	 * (rc-counters.c, its state in link). */
	const struct rc_link_hooks *link_hooks;
	struct rc_link link;

	struct rdma_event_channel *cm_channel; /* events of this id only */
	struct rdma_cm_id *id;
	struct rc_dev dev;
	struct ibv_qp *qp; /* id->qp once created */
	struct ibv_qp_cap cap;
	struct rc_buf *bufs; /* every buffer registered on this connection */

	bool established;	/* ESTABLISHED seen */
	bool peer_disconnected; /* DISCONNECTED seen */
	bool local_disconnected;
	bool wc_failed; /* a failed completion was handed out */

	/* Completions polled in a batch and not yet handed out. */
	struct ibv_wc wc[RC_POLL_BATCH];
	int wc_next, wc_count;

	/*
	 * The connect request's parameters as the CM reports them to the
	 * server: already from the server's point of view. So
	 * peer_responder_resources is the client's initiator_depth (how many
	 * READs it wants in flight towards us: what our responder must
	 * allow), and peer_initiator_depth is the client's
	 * responder_resources.
	 */
	uint8_t peer_initiator_depth, peer_responder_resources;
	char peer[64]; /* "ADDR port N" of the other side */
};

/* Set the fields every connection needs. Call first; then either
 * rc_client_resolve() or receive one from rc_serve(). */
void rc_conn_init(struct rc_conn *c, const char *name, bool verbose, int timeout_ms, int cancel_fd);

/* Client: rdma_getaddrinfo, then resolve address and route (waits). */
int rc_client_resolve(struct rc_conn *c, const char *host, const char *port);

/* Both: PD + completion channel + CQ sized for `cap`, then the RC QP. */
int rc_create_qp(struct rc_conn *c, const struct ibv_qp_cap *cap);

/* Allocate page-aligned memory and register it with `access` flags. The
 * buffer belongs to the connection and is freed by rc_conn_destroy(). */
int rc_buf_alloc(struct rc_conn *c, size_t len, int access, struct rc_buf **out);

/* Post one receive / send of buf[off, off+len). wr_id identifies it in
 * the completion; `signaled` asks for a send completion. A receive with
 * b == NULL has no buffer at all (zero SGEs): enough for an
 * RDMA_WRITE_WITH_IMM, whose data lands where the writer said and whose
 * receive carries only the immediate value. */
int rc_post_recv(struct rc_conn *c, struct rc_buf *b, size_t off, size_t len, uint64_t wr_id);
int rc_post_send(struct rc_conn *c, struct rc_buf *b, size_t off, size_t len, uint64_t wr_id,
		 bool signaled);

/*
 * One-sided operations on the peer's memory at raddr/rkey (which the peer
 * advertised): op is IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM (imm is
 * sent big-endian and consumes one receive at the peer) or
 * IBV_WR_RDMA_READ. len must be at most dev.max_msg_sz.
 */
int rc_post_rdma(struct rc_conn *c, enum ibv_wr_opcode op, struct rc_buf *b, size_t off, size_t len,
		 uint64_t raddr, uint32_t rkey, uint32_t imm, uint64_t wr_id, bool signaled);
/* Post a chain of send WRs with one ibv_post_send (one doorbell), tracing
 * each. On failure log.err names the WR that was refused. */
int rc_post_send_list(struct rc_conn *c, struct ibv_send_wr *first);

/* Client: rdma_connect with private data, wait for ESTABLISHED. */
int rc_client_connect(struct rc_conn *c, const void *priv, uint8_t priv_len,
		      uint8_t initiator_depth, uint8_t responder_resources);
/* Server: rdma_accept, wait for ESTABLISHED. */
int rc_accept(struct rc_conn *c, uint8_t initiator_depth, uint8_t responder_resources);
/* Server: refuse a connection request with a reason the client prints. */
int rc_reject(struct rc_conn *c, const char *reason);

/*
 * Wait for the next completion, at most timeout_ms; with rc_link_counters,
 * longer while the port's retransmission counters rise (a lossy link,
 * still resending: within the connection's RC_LINK_BUDGET, see
 * rc_wait_timed_out). Polls the CQ in batches of RC_POLL_BATCH and hands
 * them out one by one.
 * Returns 0 with *wc filled; -EIO with *wc filled when the completion
 * failed (log.err names the status and a hint); -ETIMEDOUT;
 * -ECONNRESET when the peer disconnected; -ECANCELED when cancel_fd fired;
 * -EAGAIN, with no completion and no error, when wake_fd fired (it is read,
 * which resets an eventfd): another thread of ours has news.
 */
int rc_next_wc(struct rc_conn *c, struct ibv_wc *wc);

/*
 * rc-counters.c: rc_next_wc's look at the port's counters, its hooks in
 * rc_link_counters. A program that sets them links rc-counters.c too.
 */
extern const struct rc_link_hooks rc_link_counters;
/* Find the counters of DEV's port: 0, or -1 (l->state -1) if this port
 * has none of them or they cannot be read. */
int rc_link_find(struct rc_link *l, const char *dev, unsigned port);
/* Sum of the port's retransmission counters now: 0, or -1. */
int rc_link_read(const struct rc_link *l, uint64_t *sum);
/* At a connection's first wait: find the counters, note conn_peer;
 * later calls do nothing. */
void rc_link_begin(struct rc_conn *c);
/* The caller moved `bytes` (a completed WRITE or READ): what RC_CRAWL_MIN
 * is measured against. A connection that never calls it is not checked. */
static inline void rc_link_moved(struct rc_conn *c, uint64_t bytes)
{
	c->link.moved += bytes;
}

/*
 * How long rc_next_wc's wait sleeps before asking rc_wait_timed_out:
 * half of timeout_ms while the counters may be there (the look at the
 * counters then costs nothing in a wait that ends sooner), else all.
 */
int rc_wait_first_ms(const struct rc_conn *c);

/*
 * rc_next_wc's wait reached w's deadline. At half the timeout:
 * read the counters, wait for the other half (returns 0). At the timeout:
 * a local stall (c->local_stall) fails with its message; counters that
 * rose since the last look, while the port received packets (where it
 * counts them), mean the link is lossy but the peer alive: the deadline
 * moves on by half a timeout (returns 0; one -v line) while the
 * connection's budget lasts (RC_LINK_BUDGET timeouts for all its extended
 * waits, each charged from its start). Else -ETIMEDOUT, log.err naming
 * what was seen: a spent budget fails the wait at once, as a lossy link.
 */
int rc_wait_timed_out(struct rc_conn *c, struct rc_cq_wait *w);

/*
 * The bounded waits on raw objects, under rc_next_wc and the rc_conn
 * functions above, and what 01 calls around its own verbs.
 */

/* What we keep of a CM event after acknowledging it. */
struct rc_cm_info {
	enum rdma_cm_event_type event; /* RC_CM_NO_EVENT: none arrived */
	int status;
	uint8_t priv[256]; /* private data, copied */
	size_t priv_len;
	uint8_t initiator_depth, responder_resources;
	struct rdma_cm_id *id; /* the event's id: a new one for CONNECT_REQUEST */
};
#define RC_CM_NO_EVENT ((enum rdma_cm_event_type) - 1)

/*
 * Wait for the next event on the (non-blocking) channel ch, at most
 * timeout_ms plus half a second (so that the CM's own verdict on a
 * resolution it was given timeout_ms for comes first), or until cancel_fd
 * (-1: none) is readable. Copies the event into *info (NULL: not
 * wanted) and acknowledges it.
 * Returns 0 if it is `expected`; else a negative errno with log->err: the
 * step, the event that came instead and a hint (for a REJECTED with our
 * REJECT message, the server's reason), or the timeout or cancellation.
 */
int rc_wait_cm_event(struct rdma_event_channel *ch, enum rdma_cm_event_type expected,
		     int timeout_ms, int cancel_fd, const char *step, struct rc_log *log,
		     struct rc_cm_info *info);

/* Trace a polled completion (-v); a failed one is an error: returns 0, or
 * -EIO with log->err naming the status and a hint. */
int rc_wc_check(struct rc_log *log, const struct ibv_wc *wc);

/*
 * Call when ibv_poll_cq found nothing; zero *w before waiting for each
 * completion. With channel (event mode, the CQ armed by
 * ibv_req_notify_cq): sleeps until the channel's fd or one of fds (at most
 * 3; entries < 0 are skipped) is readable; 0 means the channel is, so take
 * its event (ibv_get_cq_event, ibv_ack_cq_events) and poll again. With
 * channel NULL (busy polling): returns 0 at once, to poll again, yielding
 * the CPU every 256th call and looking at fds every 4096th. Returns 1 + i
 * when fds[i] is readable, or -ETIMEDOUT (timeout_ms after the first call)
 * or another negative errno with log->err set.
 */
struct rc_cq_wait {
	uint64_t deadline_us; /* set at the first call that needs it */
	unsigned spins;
};
int rc_wait_cq(struct rc_cq_wait *w, struct ibv_comp_channel *channel, const int *fds, int n,
	       int timeout_ms, struct rc_log *log);
/*
 * rc_wait_cq for a connection that makes its own verbs calls (01): the CM
 * channel cm and cancel_fd (-1: none) end the wait too. 0: poll again;
 * -ECONNRESET when the peer disconnected ("the peer disconnected; hint"),
 * -ECANCELED when cancel_fd is readable, -ETIMEDOUT, or another CM event's
 * or poll's error, each with log->err (step names the wait).
 */
int rc_wait_cq_cm(struct rc_cq_wait *w, struct ibv_comp_channel *channel,
		  struct rdma_event_channel *cm, int cancel_fd, int timeout_ms, const char *step,
		  struct rc_log *log);

/* A completion of an unexpected kind: record it as an error. */
int rc_unexpected_wc(struct rc_conn *c, const struct ibv_wc *wc);

/* rdma_disconnect and wait (bounded) for the DISCONNECTED event. */
int rc_disconnect(struct rc_conn *c);

/* Free everything the connection holds, in reverse order of creation.
 * Safe on a partly set up connection and safe to call twice. */
void rc_conn_destroy(struct rc_conn *c);

/* -v: the retry settings the CM gave qp on its way to RTS. */
void rc_trace_retry(const struct rc_log *log, struct ibv_qp *qp);

/* Names for traces and messages. */
const char *rc_wc_opcode_str(enum ibv_wc_opcode op);
const char *rc_wc_status_hint(enum ibv_wc_status st);
const char *rc_cm_event_hint(enum rdma_cm_event_type ev, int status);
/* What to check first when CALL failed with err, or NULL: none known. */
const char *rc_call_hint(const char *call, int err);

/* ------------------------------------------------------------------ */
/* Lower-level pieces, for a listener and its own event loop.          */
/* ------------------------------------------------------------------ */

#define RC_NO_DEADLINE UINT64_MAX

/*
 * Wait until one of n (at most 4) fds is readable; entries < 0 are
 * skipped. deadline_us is on rc_now_us()'s clock; 0 only looks (without
 * reading the clock), RC_NO_DEADLINE waits for as long as it takes.
 * Returns the fd's index, -ETIMEDOUT, or another negative errno (poll's).
 */
int rc_wait_readable(const int *fds, int n, uint64_t deadline_us);

/* A non-blocking CM event channel; log.err says why it failed. */
int rc_create_cm_channel(struct rc_log *log, struct rdma_event_channel **ch);
/* Take one event off a non-blocking channel, copy it, acknowledge it;
 * *id (if id is not NULL) is the event's id. Returns 0, -EAGAIN when there
 * was none, or another negative errno. */
int rc_take_cm_event(struct rdma_event_channel *ch, struct rc_cm_info *info, struct rdma_cm_id **id,
		     const struct rc_log *log);
/* "ADDR port N" of an IPv4 or IPv6 address. */
void rc_format_addr(const struct sockaddr *sa, char *out, size_t len);
/* rdma_reject a connect request with a REJECT message carrying `reason`,
 * which the client prints. Returns 0 or a negative errno. */
int rc_reject_id(struct rdma_cm_id *id, const char *reason);
/* That REJECT message: `reason` (cut to fit) after the header, in buf;
 * returns its length, for rdma_reject's private data. */
#define RC_REJECT_MAX 128
uint8_t rc_reject_pack(uint8_t buf[RC_REJECT_MAX], const char *reason);

/*
 * rc_next_wc, after a failed completion (rc-counters.c): words what the
 * port saw, in c->log.err. A flush that is the first failure of c, before
 * our own rdma_disconnect, on Soft-RoCE (vendor id 0xffffff): the device
 * failed the QP without an error completion, a known rdma_rxe bug
 * (docs/kernels.md), with the kernel's X.Y; a peer's disconnect never
 * flushes our QP, so it is named beside the bug, not instead; an error
 * polled in the same batch behind the flush is named instead. Retries
 * exhausted while the port counted packets from a peer out of order,
 * resent or NAKed during this connection: a lossy or reordering link, not
 * only a silent peer.
 */
void rc_wc_explain(struct rc_conn *c, const struct ibv_wc *wc);
/* After c->log.err got the caller's "the data an RDMA READ brought differs
 * from the peer's" (03: a chunk's hash): on Soft-RoCE on a kernel whose
 * rdma_rxe was seen to complete READs with data missing on a lossy or
 * reordering link (6.12 and later: tests/repro/rxe-read-send,
 * docs/kernels.md), and only when the port counted a peer's packets out
 * of order, resent or NAKed during this connection, append both to
 * c->log.err. In rc-counters.c. */
void rc_read_data_explain(struct rc_conn *c);
/* Its rule and words, given what the device (soft_roce: vendor id
 * 0xffffff) and the kernel (major.minor) are: for the unit tests. */
void rc_read_data_note(struct rc_conn *c, bool soft_roce, int major, int minor);
/* rc_next_wc, when the peer disconnected: -ECONNRESET, c->log.err saying
 * so, and that the link was lossy when the counters above say it was. */
int rc_peer_gone(struct rc_conn *c);
/* The running kernel's release as `uname -r` prints it, copied into buf
 * (65 bytes hold any), or "(unknown)"; returns buf. Where kernels differ
 * (the rdma_rxe bug above, the lessons of 01 and 02), we say which one we
 * saw. In rc-counters.c. */
const char *rc_kernel_release(char *buf, size_t len);

#endif /* RDMA_COMMON_H */
