/* SPDX-License-Identifier: MIT */
/*
 * rdma-common.h - RDMA only: what a service copies to use librdmacm and
 * ibverbs the way these examples do, and the one header it includes.
 *
 * The set: a service copies these files of common/, all named rdma-*,
 * and nothing else (they need only librdmacm, libibverbs and libc);
 * "rdma-common alone" (in the project's rules and tests) means this set.
 *   rdma-common.h  this header; it includes the three below
 *   rdma-wire.h    the wire header, big-endian fields, receive-and-validate
 *   rdma-device.h  a device context that many connections share
 *   rdma-listen.h  the listener; a connect request becomes a connection
 *   rdma-common.c  the log, clocks, names and hints
 *   rdma-wire.c    the wire messages (pure code: no device needed)
 *   rdma-conn.c    a connection: set-up, registration, connect, accept,
 *                  disconnect, teardown
 *   rdma-post.c    posting work requests, binding memory windows
 *   rdma-wait.c    bounded waits for CM events and completions
 *   rdma-device.c  the shared device context, caller memory, windows
 *   rdma-listen.c  the listener
 * A unit test (tests/unit/test-rdma-alone.c) and a small service with its
 * client (tests/alone/) are built from the set alone. Beside it, not in
 * it: rc-counters.{c,h}, RDMA too, an opt-in (waits that also ask the
 * port's retransmission counters: c->link_hooks = &rc_link_counters);
 * rc-opts.h (command line), rc-server.h (a thread per client, signals),
 * rc-allow.h (--allow), rc-json.h (--json output).
 *
 * A client: rc_conn_init, rc_client_resolve, rc_create_qp, rc_buf_alloc,
 * rc_post_recv, rc_client_connect; then rc_post_* and rc_next_wc; then
 * rc_disconnect and rc_conn_destroy. Both sides check every message
 * received with rc_recv_expect or rc_msg_expect (rdma-wire.h: its type,
 * number and body length, the length from wc.byte_len) before its fields.
 *
 * A server (rdma-listen.h and rdma-device.h say more):
 *  - listen: rc_listen, on a CM channel of the caller's or its own;
 *  - take a request: rc_take_cm_event on that channel gives a
 *    CONNECT_REQUEST, rc_take_request makes it a connection (struct
 *    rc_conn) under the channel rule: a connection served by a thread of
 *    its own gets a channel of its own (its thread waits there: rc_accept,
 *    rc_next_wc, rc_disconnect); with one event loop for all, every id
 *    stays on the listener's channel (c->cm_channel NULL) and the loop
 *    hands each event to rc_conn_cm_event;
 *  - a QP: with resources of its own (rc_create_qp: a PD, completion
 *    channel and CQ per connection, as 02 and 03 do), or on a device
 *    context the caller owns and shares (rc_device_open, rc_create_qp_on:
 *    one PD, CQs, one completion channel, an SRQ);
 *  - memory: rc_buf_alloc gives a connection memory of its own, freed with
 *    it; rc_mem_reg registers memory the caller owns on the shared PD,
 *    kept across connections until rc_mem_dereg; type 2 memory windows
 *    (rc_mw_alloc, rc_mw_bind) expose a region to one connection's QP
 *    (one region per client's part: on Soft-RoCE the region, not the
 *    window, bounds the range);
 *  - accept: rc_accept waits for ESTABLISHED (a thread per connection);
 *    rc_accept_start does not (an event loop gets ESTABLISHED as an event).
 *
 * 01_basic-client-server makes these same librdmacm and ibverbs calls
 * inline, in the order of its sequence.txt: it is the lesson, meant to be
 * read top to bottom without jumping here. That 01 repeats what this file
 * does is deliberate; do not "fix" it by calling these wrappers from 01.
 * 02 and 03 use the wrappers.
 *
 * Rules the set keeps: no global state (everything hangs off a struct
 * rc_conn, rc_device or rc_listener), it never calls exit(), and every
 * failing call returns a negative errno and leaves a one-line message that
 * says what failed, why, and a hint, in the context's log.err. Releasing
 * is checked too: rc_conn_destroy, rc_device_close and rc_mem_dereg return
 * what the verbs refused (a PD still in use: EBUSY) instead of ignoring it.
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

#include "rdma-wire.h"

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
/* Registered buffers.                                                 */
/* ------------------------------------------------------------------ */

/* Memory the NIC may use: rc_buf_alloc's (a connection's, freed with it)
 * or rc_mem_reg's (the caller's, on a shared PD: rdma-device.h). */
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
 * Verbs resources of one device, as used by one connection. With
 * rc_create_qp each connection owns its own: its thread then waits only on
 * its own CQ, and a client that misbehaves cannot disturb the others. With
 * rc_create_qp_on they are a shared struct rc_device's, only borrowed.
 */
struct rc_dev {
	struct ibv_context *verbs; /* borrowed from the cm_id, not owned */
	struct ibv_pd *pd;
	struct ibv_comp_channel *channel;
	struct ibv_cq *cq;
	int cq_size;
	uint32_t max_msg_sz; /* the port's largest single message */
	uint8_t max_rd_atom; /* most RDMA READs a QP may have outstanding */
	uint32_t vendor_id;  /* ibv_device_attr's: RC_SOFT_ROCE_VENDOR_ID is Soft-RoCE */
};

/* rdma_rxe's vendor id in ibv_device_attr: the device is Soft-RoCE. */
#define RC_SOFT_ROCE_VENDOR_ID 0xffffffu

#define RC_POLL_BATCH 16

/* What a wait that timed out was waiting on: a silent peer, or a link
 * still resending? rc-counters.{c,h} (the opt-in) keeps its state here. */
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
struct rc_device;

struct rc_conn;
struct rc_cq_wait;

/*
 * What rc_next_wc asks beyond the CQ, when c->link_hooks is set (02 and 03
 * set rc-counters.c's rc_link_counters). NULL: each wait ends after
 * timeout_ms, with the plain messages ("no completion within N ms", "the
 * peer disconnected"), and the set needs no other file.
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

/*
 * How a wait for a completion waits when the CQ is empty.
 * EVENT: arm the CQ, poll once more, sleep on its channel (a wake-up per
 *   completion, no CPU while idle).
 * BUSY: spin on the CQ (lowest latency, one core per waiting thread).
 * ADAPTIVE: spin for RC_SPIN_BUDGET_US, then as EVENT (what services do).
 */
enum rc_poll_mode { RC_POLL_EVENT, RC_POLL_BUSY, RC_POLL_ADAPTIVE };

/*
 * ADAPTIVE's spin budget: 100 us, many round trips on a hardware NIC (a
 * few us each), about two on Soft-RoCE in our Linux 6.1 VM (~50 us), about
 * one on 6.12 and 7.3 there (100 to 300 us): a reply that comes back under
 * load is caught spinning; a peer that is idle costs at most 100 us of CPU
 * per wait, then the wait sleeps.
 */
#define RC_SPIN_BUDGET_US 100

struct rc_conn {
	struct rc_log log;
	int timeout_ms;		     /* bound of every single wait */
	enum rc_poll_mode poll_mode; /* when the CQ is empty: sleep, spin or both */
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

	/* Events of this id only, destroyed with it; NULL when its events go
	 * to a channel the connection does not own (an event loop's: the
	 * channel rule, rdma-listen.h). */
	struct rdma_event_channel *cm_channel;
	struct rdma_cm_id *id;
	struct rc_dev dev;
	/* NULL: dev's PD, channel and CQ are this connection's own; else the
	 * shared device they belong to (rc_create_qp_on). */
	struct rc_device *shared;
	/* NULL, or the connection whose PD, channel and CQ this one borrows
	 * (rc_create_qp_beside): destroy this one first. */
	struct rc_conn *owner;
	struct ibv_qp *qp; /* id->qp once created */
	struct ibv_qp_cap cap;
	struct rc_buf *bufs; /* every buffer registered on this connection */

	bool established;	/* ESTABLISHED seen */
	bool peer_disconnected; /* DISCONNECTED seen */
	bool local_disconnected;
	bool wc_failed; /* a failed completion was handed out */
	/* This QP has carried a SEND; a READ posted after a SEND
	 * (rc_post_send_list): the pattern the rdma_rxe bug of
	 * docs/kernels.md needs, a SEND resent with a READ behind it. */
	bool posted_send, read_after_send;

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
 * rc_client_resolve() or rc_take_request() (a server). */
void rc_conn_init(struct rc_conn *c, const char *name, bool verbose, int timeout_ms, int cancel_fd);

/* Client: rdma_getaddrinfo, then resolve address and route (waits). */
int rc_client_resolve(struct rc_conn *c, const char *host, const char *port);
/* Client: a second connection to the same server, at another port: from
 * and to the addresses `first` connected (its device, its path), then
 * resolve address and route (waits). */
int rc_client_resolve_beside(struct rc_conn *c, const struct rc_conn *first, uint16_t port);

/* Both: PD + completion channel + CQ sized for `cap`, then the RC QP. On a
 * shared device instead: rc_create_qp_on (rdma-device.h). */
int rc_create_qp(struct rc_conn *c, const struct ibv_qp_cap *cap);

/*
 * A second QP for the peer of `owner`, on owner's PD and CQ: owner's
 * buffers serve it (one PD), and its completions come out of
 * rc_next_wc(owner), told apart by wc.qp_num or wr_id; rc_next_wc(c)
 * refuses. For work that must not share a send queue with owner's (03's
 * get: READs on one QP, SENDs on the other). Owner's CQ must have room
 * for both QPs' work requests: size owner's cap for them. c must be on
 * owner's device (-EXDEV otherwise). rc_conn_destroy(c) before owner's.
 */
int rc_create_qp_beside(struct rc_conn *c, struct rc_conn *owner, const struct ibv_qp_cap *cap);

/* Allocate page-aligned memory and register it with `access` flags on the
 * connection's PD. The buffer belongs to the connection and is freed by
 * rc_conn_destroy(). Memory that outlives connections: rc_mem_reg. */
int rc_buf_alloc(struct rc_conn *c, size_t len, int access, struct rc_buf **out);

/* Post one receive / send of buf[off, off+len). wr_id identifies it in
 * the completion; `signaled` asks for a send completion. A receive with
 * b == NULL has no buffer at all (zero SGEs): enough for an
 * RDMA_WRITE_WITH_IMM, whose data lands where the writer said and whose
 * receive carries only the immediate value. A QP on an SRQ takes its
 * receives from there (rc_post_srq_recv): rc_post_recv refuses. */
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
/* Client: rdma_connect with private data and return; ESTABLISHED (or
 * REJECTED, UNREACHABLE...) comes later as an event on the id's channel,
 * for an event loop that owns it (the channel rule, rdma-listen.h). */
int rc_connect_start(struct rc_conn *c, const void *priv, uint8_t priv_len, uint8_t initiator_depth,
		     uint8_t responder_resources);
/* Server: rdma_accept, wait for ESTABLISHED (on the connection's own
 * channel: -EINVAL without one). */
int rc_accept(struct rc_conn *c, uint8_t initiator_depth, uint8_t responder_resources);
/* Server: rdma_accept and return; ESTABLISHED comes later as an event for
 * rc_conn_cm_event (an event loop's way). The QP is in RTS already: the
 * server may post sends, but the client's QP takes them only once it has
 * the reply, so an event loop sends after ESTABLISHED. */
int rc_accept_start(struct rc_conn *c, uint8_t initiator_depth, uint8_t responder_resources);
/* Server: refuse a connection request with a reason the client prints. */
int rc_reject(struct rc_conn *c, const char *reason);

/*
 * Wait for the next completion, at most timeout_ms; with rc_link_counters,
 * longer while the port's retransmission counters rise (a lossy link,
 * still resending: within the connection's budget, rc-counters.h). Polls
 * the CQ in batches of RC_POLL_BATCH and hands them out one by one. It
 * watches the connection's own CM channel for DISCONNECTED; without one
 * (c->cm_channel NULL: the channel rule), the CQ, cancel_fd and wake_fd
 * only, and c->peer_disconnected as the owner of the events set it. On a
 * shared CQ (rc_create_qp_on) it refuses (-EINVAL): another connection's
 * completions would come out here; poll the device (rc_device_poll). On a
 * QP beside another (rc_create_qp_beside) it refuses too: poll the owner.
 * Returns 0 with *wc filled; -EIO with *wc filled when the completion
 * failed (log.err names the status and a hint); -ETIMEDOUT;
 * -ECONNRESET when the peer disconnected; -ECANCELED when cancel_fd fired;
 * -EAGAIN, with no completion and no error, when wake_fd fired (it is read,
 * which resets an eventfd): another thread of ours has news.
 */
int rc_next_wc(struct rc_conn *c, struct ibv_wc *wc);

/* The caller moved `bytes` (a completed WRITE or READ): what rc-counters'
 * crawl bound (RC_CRAWL_MIN) is measured against. A connection that never
 * calls it is not checked; without rc_link_counters it counts, unused. */
static inline void rc_link_moved(struct rc_conn *c, uint64_t bytes)
{
	c->link.moved += bytes;
}

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
 * It knows no connection: on a connection's channel use
 * rc_conn_wait_cm_event, which records what it saw in the connection.
 */
int rc_wait_cm_event(struct rdma_event_channel *ch, enum rdma_cm_event_type expected,
		     int timeout_ms, int cancel_fd, const char *step, struct rc_log *log,
		     struct rc_cm_info *info);

/*
 * Record a CM event of c's id in c: ESTABLISHED sets c->established
 * (and traces the QP's retry settings), DISCONNECTED c->peer_disconnected,
 * whatever was expected. Every wait of a connection calls it, and so does
 * an event loop for each event whose id is c's (id->context). Returns 0
 * for ESTABLISHED, DISCONNECTED, TIMEWAIT_EXIT and ADDR_CHANGE; for an
 * event that ends the connection (REJECTED, UNREACHABLE, CONNECT_ERROR,
 * DEVICE_REMOVAL, ...), a negative errno with log.err naming it and a hint.
 */
int rc_conn_cm_event(struct rc_conn *c, const struct rc_cm_info *info);
/*
 * rc_wait_cm_event on c's own channel, bounded by c->timeout_ms and
 * cancelled by c->cancel_fd, then rc_conn_cm_event's record of what came:
 * after a DISCONNECTED waited for here, rc_disconnect waits for no other.
 * 0 if it is `expected` (info: NULL, or a copy), else a negative errno with
 * c->log.err; -EINVAL when c has no channel of its own (the channel rule:
 * its owner hands its events to rc_conn_cm_event).
 */
int rc_conn_wait_cm_event(struct rc_conn *c, enum rdma_cm_event_type expected, const char *step,
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
	uint64_t spin_until_us; /* ADAPTIVE: the end of the spin budget */
};
/*
 * Whether a wait in mode m that found the CQ empty spins (true: poll
 * again, rc_wait_cq with no channel) or sleeps (false: arm the CQ, poll
 * once more, then rc_wait_cq on the channel). ADAPTIVE spins until
 * RC_SPIN_BUDGET_US after its first empty poll of this wait (w zeroed).
 */
bool rc_cq_spin(struct rc_cq_wait *w, enum rc_poll_mode m);
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

/*
 * rdma_disconnect, and with a channel of its own, wait (bounded) for the
 * DISCONNECTED event, unless one was seen already (c->peer_disconnected).
 * Without one (the channel rule) it does not wait: DISCONNECTED reaches
 * the owner of the events, who hands it to rc_conn_cm_event.
 */
int rc_disconnect(struct rc_conn *c);

/*
 * Free everything the connection holds, in reverse order of creation:
 * its QP, its buffers, what of dev is its own (a shared device's objects
 * stay), its id and its own channel. Safe on a partly set up connection
 * and safe to call twice. Returns 0, or the first failure of a release
 * as a negative errno, added to c->log.err (after what is there): e.g.
 * EBUSY from ibv_dealloc_pd when memory the caller registered on the
 * connection's PD is still registered (it is leaked; say so, never
 * ignore it).
 */
int rc_conn_destroy(struct rc_conn *c);

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
/* *out: an IPv4 or IPv6 address sa (rdma_get_local_addr's, say) with its
 * port set to port (host order; 0: any free one). -EAFNOSUPPORT for other
 * families. */
int rc_addr_with_port(struct sockaddr_storage *out, const struct sockaddr *sa, uint16_t port);
/* rdma_reject a connect request with a REJECT message carrying `reason`
 * (rc_reject_pack), which the client prints. Returns 0 or a negative
 * errno. */
int rc_reject_id(struct rdma_cm_id *id, const char *reason);

/* The rest of the set: the shared device context, and the listener. */
#include "rdma-device.h"
#include "rdma-listen.h"

#endif /* RDMA_COMMON_H */
