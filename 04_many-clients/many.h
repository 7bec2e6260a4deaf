/* SPDX-License-Identifier: MIT */
/*
 * many.h - 04's rdma-server: 02's protocol (02_read-write/rw.h) served to
 * many clients by one event-loop thread on one device context.
 *
 * What the files hold, in the order a client meets them:
 *   server.c   main, the options, the event loop (epoll over the CM
 *              channel, the completion channel, the async fd, a signalfd)
 *              and the shutdown, everything released in reverse order.
 *   clients.c  one client's life: its connect request and HELLO, its
 *              region and window, ESTABLISHED, BUF, DONE, RESULT, leaving.
 *   pool.c     the shared device: the CQs sized so none can overrun, the
 *              SRQ's pool of receive buffers and its credit rule, the
 *              counter, the async events.
 *
 * Two ways to keep clients apart (use_mw):
 *   windows  one PD, CQ(s) and SRQ for all; each client's slice is a
 *            region of its own without REMOTE_* flags, reachable only
 *            through a type 2 window bound to that client's QP.
 *   fallback (--no-mw, or a device without type 2 windows) a PD, CQ and
 *            region per client, 02's way: the region's rkey is the key.
 */
#ifndef MANY_H
#define MANY_H

#include <stdbool.h>
#include <stdint.h>

#include "rc-allow.h"
#include "rc-opts.h"
#include "rw.h"

#define MANY_DEFAULT_SLICE (64u << 10) /* each client's slice (-s) */
#define MANY_MAX_CLIENTS   64	       /* --max-clients' default */
/* The listen backlog: connect requests the kernel queues until the loop
 * reads them. A request past it gets no answer at all (README, rdma-load),
 * so it is not --max-clients but ucma's cap (net.rdma_ucm.max_backlog's
 * default): a burst past --max-clients reaches the loop and is rejected
 * with a reason. */
#define MANY_BACKLOG 1024
/* The credit rule: by 02's protocol a client sends one control message
 * (DONE) per connection, after BUF: at most MANY_CREDITS in flight. */
#define MANY_CREDITS 1u
/* Receives beyond the credits: what a misbehaving client's extra SENDs
 * take before it is dropped; also the SRQ limit that warns. */
#define MANY_POOL_SPARE 16u
/* Sends one client's QP may have outstanding: BIND, BUF, RESULT, a probe. */
#define MANY_SEND_WR 4u
/* The server's QPs wait 10.24 ms before an RNR retry is due (the CM
 * leaves 0, 655 ms): docs/kernels.md, "SRQ and RNR". */
#define MANY_MIN_RNR_TIMER 20

/* The server's --inject lessons (README, "Lessons"): never the default. */
enum many_inject {
	MANY_INJECT_NONE,
	/* UNSAFE: one region over every slice with REMOTE_WRITE|REMOTE_READ,
	 * its rkey in every BUF, no windows: what windows exist to avoid. */
	MANY_INJECT_SHARED_REGION,
	/* The pool: only MANY_LESSON_POSTED receives, the limit at
	 * MANY_LESSON_LIMIT, none ever posted again. */
	MANY_INJECT_SRQ_LOW,
};
#define MANY_LESSON_POSTED 4
#define MANY_LESSON_LIMIT  2
/* shared-region registers every slice at once: pinned, so bounded. */
#define MANY_LESSON_MAX_ARENA (64u << 20)

/* wr_id: receives from the pool carry WR_RECV | index; sends the client's
 * slot << 8 | kind (slots < 1024: below WR_RECV). */
#define WR_RECV (1ull << 24)
enum { WR_BIND = 1, WR_BUF, WR_RESULT, WR_PROBE, WR_OWN_RECV };

struct many_opts {
	struct rc_opts rc;	 /* -p, -b, --allow, --max-clients, --timeout, -v */
	uint32_t slice;		 /* -s: each client's slice, the most one may ask for */
	bool no_mw;		 /* --no-mw: the fallback even with windows */
	bool counter;		 /* --counter: one shared word for every atomic client */
	enum many_inject inject; /* --inject: a lesson, never the default */
};

enum client_state {
	CL_ACCEPTING, /* accepted, ESTABLISHED not seen */
	CL_BINDING,   /* its window's bind posted */
	CL_SERVING,   /* BUF sent, waiting for DONE (probed when silent) */
	CL_ANSWERED,  /* RESULT sent, waiting for its DISCONNECTED */
};

struct client {
	struct rc_conn c; /* c.id->context points here (the channel rule) */
	bool used, closing;
	enum client_state state;
	struct rw_hello hello;
	uint32_t len;	       /* its slice's bytes (or the counter's 8) */
	uint8_t read_depth;    /* the responder_resources accepted with */
	int access;	       /* what its window (or own region) allows */
	bool counter;	       /* it does atomics on the shared counter */
	uint8_t *mem;	       /* its slice of the arena, or the counter */
	struct rc_buf region;  /* windows: its slice's region, no REMOTE_* flag */
	struct ibv_mw *mw;     /* windows: bound to its QP */
	uint32_t rkey;	       /* what BUF tells it */
	struct ibv_mr *own_mr; /* fallback: its slice or the counter on its PD */
	struct rc_buf *ctl;    /* fallback: DONE at 0, BUF, RESULT after */
	unsigned outstanding;  /* sends posted, not completed: release after */
	bool probing;
	uint64_t deadline_us; /* when the current wait ends (0: none) */
};

struct server {
	struct many_opts o;
	struct rc_listener l;
	struct rdma_event_channel *ch; /* the listener's and every client's */
	int ep, sfd;		       /* epoll, signalfd */
	struct rc_device d;
	bool dev_open, use_mw;
	unsigned max;	 /* --max-clients */
	unsigned per_cq; /* clients on each CQ */
	uint8_t *arena;	 /* max slices, mmap'd */
	size_t stride;	 /* o.slice rounded up to a page: each slice on pages of its own */
	size_t arena_len;
	struct rc_buf rx;  /* the pool: nrecv receives of RW_CTRL_MAX */
	struct rc_buf tx;  /* windows: BUF and RESULT, two per client */
	struct rc_buf ctr; /* --counter: the word, LOCAL_WRITE|MW_BIND */
	struct rc_buf all; /* --inject shared-region: every slice, REMOTE_* */
	void *rx_mem, *tx_mem, *ctr_mem;
	bool *rx_posted;
	unsigned nrecv, posted, low; /* pool size, posted now, the limit */
	struct client *cl;
	struct rc_ratelimit refusals;
	unsigned nclients;
	bool release_refused; /* a client's release failed (named on stderr): exit 1 */
};

/* pool.c */
int many_device_open(struct server *s, struct ibv_context *verbs);
void many_device_close(struct server *s, int *bad);
int pool_repost(struct server *s, unsigned i);
void pool_refill(struct server *s);
void on_async_events(struct server *s);
uint64_t counter_value(const struct server *s);

/* clients.c */
void on_connect_request(struct server *s, const struct rc_cm_info *info);
void on_client_cm_event(struct server *s, struct client *k, const struct rc_cm_info *info);
void on_wc(struct server *s, struct client *k, const struct ibv_wc *wc);
void on_pool_recv(struct server *s, const struct ibv_wc *wc);
int on_own_completions(struct server *s, struct client *k);
void on_deadline(struct server *s, struct client *k);
int drop(struct server *s, struct client *k, const char *why);
struct client *client_by_qp(struct server *s, uint32_t qp_num);

#endif /* MANY_H */
