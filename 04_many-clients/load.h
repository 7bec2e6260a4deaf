/* SPDX-License-Identifier: MIT */
/*
 * load.h - what rdma-load's main (load.c) and its connections
 * (load-conn.c) share.
 *
 * rdma-load opens N connections to one server from one process and one
 * thread: every id on one CM event channel (the channel rule,
 * common/rdma-listen.h: one reader for all their events), every QP on one
 * shared device context (common/rdma-device.h: one PD, one CQ, one
 * completion channel) and all their buffers in one registered arena. Each
 * connection goes through the steps rdma-core's cmtime times (create id,
 * resolve address, resolve route, create QP, connect), then 02's exchange
 * (HELLO, BUF, WRITE, READ back, verify, DONE, RESULT), and is held until
 * all are done; then all disconnect. At most --in-flight connections are
 * between "create id" and ESTABLISHED at a time.
 */
#ifndef LOAD_H
#define LOAD_H

#include <stdbool.h>
#include <stdint.h>

#include "rc-opts.h"
#include "rdma-common.h"
#include "rw.h"

#define LOAD_DEFAULT_CONNS 16
#define LOAD_MAX_CONNS	   1000
/* 02's and 03's servers listen with a backlog of RC_BACKLOG (16). */
#define LOAD_DEFAULT_IN_FLIGHT RC_BACKLOG
/* ucma caps any listen backlog at net.rdma_ucm.max_backlog (1024). */
#define LOAD_MAX_IN_FLIGHT 1024
#define LOAD_DEFAULT_SIZE  4096u
#define LOAD_MAX_SIZE	   (1u << 20)
/* Every connection's buffers (2 x -s + 128 bytes each), registered. */
#define LOAD_MAX_ARENA (1u << 30)
/* Exit code when some connections were not verified (others were). */
#define LOAD_EXIT_SOME 5

/* --inject: rdma-load's lessons (lessons-load.c; README, "Lessons"). */
enum load_inject {
	LOAD_INJECT_NONE,
	LOAD_INJECT_OTHER_RKEY, /* conn 1's (addr, rkey) on conn 0's QP */
	LOAD_INJECT_OLD_RKEY,	/* a closed connection's rkey on a new one */
	LOAD_INJECT_SRQ_LOW,	/* the normal run; then what became of the DONEs */
};

/* wr_id: the connection's index above LOAD_WR_KIND_BITS, the kind below;
 * a lesson's WR n is kind LOAD_WR_LESSON + n. */
#define LOAD_WR_KIND_BITS 4
#define LOAD_WR_LESSON	  8
#define LOAD_LESSON_WRS	  4

/* The steps timed per connection, in order. */
enum load_step {
	STEP_CREATE_ID,
	STEP_RESOLVE_ADDR,
	STEP_RESOLVE_ROUTE,
	STEP_CREATE_QP,
	STEP_CONNECT, /* rdma_connect to ESTABLISHED */
	STEP_EXCHANGE,
	STEP_DISCONNECT,
	STEP_COUNT
};

/* Where a connection is; every state but HELD, CLOSED and FAILED has a
 * deadline. */
enum load_state {
	LS_IDLE,
	LS_ADDR,       /* waiting for ADDR_RESOLVED */
	LS_ROUTE,      /* waiting for ROUTE_RESOLVED */
	LS_CONNECT,    /* waiting for ESTABLISHED */
	LS_BUF,	       /* waiting for the server's BUF */
	LS_WRITE,      /* our WRITE is out */
	LS_READ,       /* our READ is out */
	LS_RESULT,     /* DONE sent, waiting for RESULT (and DONE's completion) */
	LS_HELD,       /* verified, connected, waiting for the others */
	LS_DISCONNECT, /* rdma_disconnect done, waiting for DISCONNECTED */
	LS_CLOSED,     /* DISCONNECTED seen */
	LS_FAILED,
};

struct load_opts {
	struct rc_opts rc; /* -p, --timeout, --ack-timeout, --retry-count, -v */
	const char *server;
	unsigned conns;	    /* -c */
	unsigned in_flight; /* --in-flight */
	uint32_t size;	    /* -s: bytes each connection writes and reads back */
	int hold_ms;	    /* --hold */
	bool json;
	enum load_inject inject;
};

struct load;

struct load_conn {
	struct rc_conn c; /* c.cm_channel NULL: its events come to the loop */
	struct load *ld;
	unsigned idx;
	enum load_state st;
	enum load_step step;	 /* the step in progress, or the one that failed */
	uint64_t t0;		 /* when the step in progress began (ns) */
	uint64_t deadline_us;	 /* of the step in progress */
	uint64_t ns[STEP_COUNT]; /* each step's time */
	bool timed[STEP_COUNT];
	size_t off; /* its part of the arena: RX, TX, source, destination */
	struct rw_buf remote;
	uint64_t seed, sum;
	bool done_sent, result_got;
	struct rw_sum result;
	bool verified;
	int done_status;  /* its DONE's completion status, -1 until then */
	uint64_t done_ns; /* when DONE was posted */
	double done_ms;	  /* from posting DONE to its completion */
	/* BUF's receive completed before ESTABLISHED was taken off the CM
	 * channel: handled once it is. */
	struct ibv_wc early_wc;
	bool early;
};

struct load {
	struct load_opts o;
	struct rc_log log;
	struct rdma_event_channel *ch; /* every id's events */
	struct rdma_addrinfo *ai;      /* the server's address, resolved once */
	struct rc_device dev;	       /* opened on the first id's device */
	bool dev_open;
	void *arena; /* every connection's buffers, registered once */
	size_t arena_len, stride;
	struct rc_buf mem;
	bool mem_reg;
	struct load_conn *conns;
	unsigned started, connecting, settled, verified, failed;
	unsigned dropped;    /* verified, then the server hung up while held */
	unsigned no_goodbye; /* verified, no DISCONNECTED after our DREQ */
	uint64_t t_start, t_settled, t_end;
	uint64_t t_last_est; /* the last ESTABLISHED taken */
	/* A lesson's work requests: status (-1 until done), ms after post. */
	int lwr_status[LOAD_LESSON_WRS];
	double lwr_ms[LOAD_LESSON_WRS];
	uint64_t lwr_t0;
};

/* The arena's layout within a connection's part. */
#define LOAD_RX	 0
#define LOAD_TX	 RW_CTRL_MAX
#define LOAD_SRC (2 * RW_CTRL_MAX)

/* load-conn.c: start connection i (create id, resolve address); hand a
 * CM event or a completion to its connection; fail those past their
 * deadline; disconnect one that is held. */
int load_conn_start(struct load *ld, struct load_conn *lc);
void load_conn_cm_event(struct load *ld, const struct rc_cm_info *info);
void load_conn_wc(struct load *ld, const struct ibv_wc *wc);
void load_conn_expire(struct load *ld, struct load_conn *lc, uint64_t now);
void load_conn_disconnect(struct load *ld, struct load_conn *lc);
/* A connection failed: record why (its log.err), settle it. */
void load_conn_fail(struct load_conn *lc);
const char *load_step_name(enum load_step s);

/* load.c: one turn of the loop (wait at most until `until`, take every
 * event and completion); open all N, at most --in-flight at once. */
int load_pump(struct load *ld, uint64_t until);
int load_connect_all(struct load *ld);

/* lessons-load.c: a lesson's completion (kind LOAD_WR_LESSON + n); run
 * other-rkey or old-rkey, or explain srq-low after the normal run. Each
 * returns the exit code: RW_EXIT_LESSON when it showed what it teaches. */
void load_lesson_wc(struct load *ld, const struct ibv_wc *wc);
int load_lesson_run(struct load *ld);
int load_lesson_srq_low(struct load *ld);

#endif /* LOAD_H */
