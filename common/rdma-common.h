/* SPDX-License-Identifier: MIT */
/*
 * rdma-common.h - the helpers all three examples share.
 *
 * What lives here: one connection's verbs resources (PD, completion channel,
 * CQ, QP, registered buffers), resolving and connecting with librdmacm,
 * waiting for CM events and completions with a timeout, the common wire
 * header, and the thread-per-connection server loop.
 *
 * Rules this library keeps: no global state (everything hangs off a
 * struct rc_conn or struct rc_listener), it never calls exit(), and every
 * failing call returns a negative errno and leaves a one-line message that
 * says what failed, why, and a hint, in the context's log.err.
 */
#ifndef RDMA_COMMON_H
#define RDMA_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

/* Exit codes shared by every program of the collection. */
enum rc_exit {
	RC_EXIT_OK = 0,	    /* success */
	RC_EXIT_FAIL = 1,   /* failure after connecting */
	RC_EXIT_USAGE = 2,  /* bad usage */
	RC_EXIT_NOCONN = 3, /* could not connect */
};

#define RC_DEFAULT_PORT	      "7471"
#define RC_DEFAULT_TIMEOUT_MS 10000
#define RC_ERR_LEN	      512

/* The transport's retries (rdma-common.c explains the choice): resend
 * after 4.096 us x 2^RC_ACK_TIMEOUT = 268 ms without an ACK, give up after
 * RC_RETRY_COUNT resends in a row (~1.9 s). All finite. */
#define RC_ACK_TIMEOUT	   16
#define RC_RETRY_COUNT	   6
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

struct rc_conn {
	struct rc_log log;
	int timeout_ms; /* bound of every single wait */
	bool busy_poll; /* spin on the CQ instead of sleeping on its channel */
	int cancel_fd;	/* -1, or an fd whose readability aborts waits */
	int wake_fd;	/* -1, or an eventfd that ends rc_next_wc's wait early */

	struct rdma_event_channel *cm_channel; /* events of this id only */
	struct rdma_cm_id *id;
	struct rc_dev dev;
	struct ibv_qp *qp; /* id->qp once created */
	struct ibv_qp_cap cap;
	struct rc_buf *bufs; /* every buffer registered on this connection */

	bool established;	/* ESTABLISHED seen */
	bool peer_disconnected; /* DISCONNECTED seen */
	bool local_disconnected;

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
 * Wait for the next completion, at most timeout_ms. Polls the CQ in
 * batches of RC_POLL_BATCH and hands them out one by one.
 * Returns 0 with *wc filled; -EIO with *wc filled when the completion
 * failed (log.err names the status and a hint); -ETIMEDOUT;
 * -ECONNRESET when the peer disconnected; -ECANCELED when cancel_fd fired;
 * -EAGAIN, with no completion and no error, when wake_fd fired (it is read,
 * which resets an eventfd): another thread of ours has news.
 */
int rc_next_wc(struct rc_conn *c, struct ibv_wc *wc);

/* A completion of an unexpected kind: record it as an error. */
int rc_unexpected_wc(struct rc_conn *c, const struct ibv_wc *wc);

/* rdma_disconnect and wait (bounded) for the DISCONNECTED event. */
int rc_disconnect(struct rc_conn *c);

/* Free everything the connection holds, in reverse order of creation.
 * Safe on a partly set up connection and safe to call twice. */
void rc_conn_destroy(struct rc_conn *c);

/* Names for traces and messages. */
const char *rc_wc_opcode_str(enum ibv_wc_opcode op);
const char *rc_wc_status_hint(enum ibv_wc_status st);
const char *rc_cm_event_hint(enum rdma_cm_event_type ev, int status);

/* ------------------------------------------------------------------ */
/* Server: listen, and serve each client on its own thread.           */
/* ------------------------------------------------------------------ */

struct rc_listener {
	struct rc_log log;
	struct rdma_event_channel *channel;
	struct rdma_cm_id *id;
	char addr[64]; /* the bound address as text */
	uint16_t port; /* the bound port (the real one when 0 was asked) */
};

/* Bind to bind_addr (NULL: all addresses) and port ("0": any free one)
 * and listen. */
int rc_listen(struct rc_listener *l, const char *bind_addr, const char *port, bool verbose);
void rc_listener_close(struct rc_listener *l);

/*
 * Handles one client, from QP creation to the end of the conversation.
 * `priv`/`priv_len` is the private data of the connect request (already
 * copied). Return 0 when the client finished normally, else a negative
 * errno with c->log.err set. The connection is destroyed afterwards.
 */
typedef int (*rc_serve_fn)(struct rc_conn *c, const void *priv, size_t priv_len, void *arg);

struct rc_serve_opts {
	int max_clients; /* more at once are rejected as busy */
	bool once;	 /* return after the first client */
	int timeout_ms;
	bool verbose;
	int stop_fd;	/* readable = shut down (e.g. a signalfd) */
	bool busy_poll; /* each connection spins on its CQ (see rc_conn) */
};

/*
 * Accept clients until stop_fd becomes readable (or after one with once),
 * each on its own thread, then cancel the remaining ones, wait for them
 * and return. A client's failure is logged to stderr and never ends the
 * loop. Returns 0, or a negative errno (with l->log.err) if listening
 * itself failed; with once, -EIO if that one client failed.
 */
int rc_serve(struct rc_listener *l, const struct rc_serve_opts *o, rc_serve_fn fn, void *arg);

/*
 * A server's whole life, what every example's server main does:
 * SIGINT/SIGTERM become a signalfd (blocked in every thread), listen on
 * bind/port, print "listening on ADDR port N" to stdout (only now: the
 * server is ready), serve each client with fn on its own thread until a
 * signal (or after one client with o->once), release everything.
 * Errors go to stderr as "PROG: message". Returns the exit code for main:
 * 0; 1 if serving failed or, with once, that client failed; 3 if it could
 * not listen.
 */
struct rc_opts;
int rc_server_main(const char *prog, const struct rc_opts *o, rc_serve_fn fn, void *arg);

/* ------------------------------------------------------------------ */
/* Command-line helpers.                                               */
/* ------------------------------------------------------------------ */

/* The options every program of the collection shares. */
struct rc_opts {
	const char *port; /* -p PORT */
	bool port_given;
	const char *bind; /* -b ADDR (servers) */
	int timeout_ms;	  /* --timeout SEC */
	bool verbose;	  /* -v */
	bool busy_poll;	  /* --poll event|busy */
	bool once;	  /* --once (servers) */
	int max_clients;  /* --max-clients N (servers) */
};

/* getopt_long codes of the shared long-only options; examples number
 * their own long-only options from RC_OPT_FIRST_FREE. */
enum {
	RC_OPT_TIMEOUT = 0x100,
	RC_OPT_POLL,
	RC_OPT_ONCE,
	RC_OPT_MAX_CLIENTS,
	RC_OPT_FIRST_FREE = 0x180,
};

/* Put these in an example's option table and short-option string. */
#define RC_LONGOPTS_CLIENT                                              \
	{ "port", required_argument, NULL, 'p' },                       \
		{ "timeout", required_argument, NULL, RC_OPT_TIMEOUT }, \
		{ "poll", required_argument, NULL, RC_OPT_POLL },       \
		{ "verbose", no_argument, NULL, 'v' },                  \
	{                                                               \
		"help", no_argument, NULL, 'h'                          \
	}
#define RC_LONGOPTS_SERVER                                                 \
	RC_LONGOPTS_CLIENT, { "bind", required_argument, NULL, 'b' },      \
		{ "once", no_argument, NULL, RC_OPT_ONCE },                \
	{                                                                  \
		"max-clients", required_argument, NULL, RC_OPT_MAX_CLIENTS \
	}
#define RC_SHORTOPTS_CLIENT ":p:vh"
#define RC_SHORTOPTS_SERVER ":p:b:vh"
/* A macro's value as a string literal: RC_STR(MAX_CLIENTS) is "16". */
#define RC_STR_(x) #x
#define RC_STR(x)  RC_STR_(x)

/* Usage text, one printed line per source line. max_clients: the server's
 * default, a plain number (16), shown as text. */
/* clang-format off */
#define RC_USAGE_CLIENT \
	"  -p, --port PORT       server port (default " RC_DEFAULT_PORT ")\n" \
	"      --timeout SEC     bound of every wait (default 10)\n" \
	"      --poll MODE       wait for completions by 'event' (sleep, default) or 'busy'\n" \
	"                        (spin: lowest latency, one core at 100%)\n" \
	"  -v, --verbose         trace every CM event, work request and completion\n" \
	"  -h, --help            this text\n"
#define RC_USAGE_SERVER(max_clients) \
	"  -p, --port PORT       port to listen on (default " RC_DEFAULT_PORT "; 0: any free one)\n" \
	"  -b, --bind ADDR       listen only on ADDR (default: all addresses)\n" \
	"      --once            exit after the first client\n" \
	"      --max-clients N   clients served at once (default " RC_STR(max_clients) ")\n" \
	"      --timeout SEC     bound of every wait within a connection (default 10)\n" \
	"      --poll MODE       'event' (default) or 'busy': busy spins one core per client\n" \
	"  -v, --verbose         trace every CM event, work request and completion\n" \
	"  -h, --help            this text\n\n" \
	"Prints 'listening on ADDR port N' once ready. Stops on SIGINT/SIGTERM.\n"
/* clang-format on */

/* Defaults: port 7471, 10 s timeout, event polling. Also restarts
 * getopt, so a program (or a test) may parse more than once. */
void rc_opts_init(struct rc_opts *o, int max_clients);
/*
 * getopt_long() that handles the shared options itself. Returns 1 with *c
 * set to an option of the caller's own (optarg as usual), 0 after the last
 * option (optind: the first operand), 2 after printing usage for -h, or
 * -EINVAL with a message in err (nothing goes to stderr).
 */
struct option;
int rc_getopt(struct rc_opts *o, int argc, char *const argv[], const char *shortopts,
	      const struct option *longopts, const char *usage, int *c, char *err, size_t errlen);
/*
 * Handle one getopt_long() result c if it is a shared option (or ':'/'?',
 * a missing value or an unknown option). Returns 1 handled, 0 not a shared
 * option, 2 for -h (the caller prints its usage), or -EINVAL with a
 * message in err. Call with opterr = 0 and a short-option string that
 * starts with ':'.
 */
int rc_opts_handle(struct rc_opts *o, int c, const char *arg, char *const argv[], char *err,
		   size_t errlen);
/*
 * A client's positional arguments after the options: SERVER [PORT], and
 * nothing more. PORT may repeat -p but not contradict it; port 0 names no
 * server. Sets *server and o->port. Returns 0 or -EINVAL with err set.
 */
int rc_opts_server_args(struct rc_opts *o, int argc, char *const argv[], const char **server,
			char *err, size_t errlen);
/* A client's port must name a server: -EINVAL with err set for "0". */
int rc_opts_check_client(const struct rc_opts *o, char *err, size_t errlen);
/* snprintf into err and return -EINVAL: for usage errors. */
int rc_usage_error(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* "event" (sleep on the completion channel) or "busy" (spin on the CQ).
 * Returns 0 or -EINVAL. */
int rc_parse_poll(const char *s, bool *busy);
/* "4096", "64K", "1M", "2g" (binary units). Returns 0 or -EINVAL. */
int rc_parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* A TCP-style port 0..65535, as text. Returns 0 or -EINVAL. */
int rc_parse_port(const char *s);
/* Seconds (may be fractional, > 0, <= 1 day) to milliseconds. */
int rc_parse_timeout(const char *s, int *ms);
/* A plain unsigned integer in [min, max]. */
int rc_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/* Micro- and nanoseconds on a monotonic clock. */
uint64_t rc_now_us(void);
uint64_t rc_now_ns(void);

/* ------------------------------------------------------------------ */
/* JSON output (the clients' --json): one object for automation.       */
/* ------------------------------------------------------------------ */

#define RC_JSON_MAX	  32768 /* the whole text, at most */
#define RC_JSON_MAX_DEPTH 8	/* objects and arrays nested, at most */

/*
 * A small, strict JSON writer. The text is built in memory and printed by
 * rc_json_finish() only if it is one complete, well-formed value, so a
 * program never prints half an object. Inside an object every value needs
 * a key; inside an array and at the top, key must be NULL. Strings are
 * escaped byte by byte: '"', '\\', control characters and every byte
 * >= 0x7f become escapes (non-ASCII bytes as \u00XX), so any input, e.g. a
 * file name in any encoding, gives valid ASCII JSON. NaN and infinities,
 * which JSON cannot express, become null. The first misuse (a missing or
 * unexpected key, too deep, too long, an end without a start) is kept in
 * err and makes every later call a no-op.
 */
struct rc_json {
	char buf[RC_JSON_MAX]; /* NUL-terminated text so far */
	size_t len;
	int depth;			    /* open objects and arrays */
	bool is_array[RC_JSON_MAX_DEPTH];   /* of each open level */
	bool has_values[RC_JSON_MAX_DEPTH]; /* a comma goes before the next */
	bool complete;			    /* the top-level value is closed */
	int err;			    /* 0, -EINVAL (misuse) or -ENOSPC */
};

void rc_json_init(struct rc_json *j);
/* Open an object / array as a value (key as for any value); close the
 * innermost one with rc_json_end. */
void rc_json_object(struct rc_json *j, const char *key);
void rc_json_array(struct rc_json *j, const char *key);
void rc_json_end(struct rc_json *j);
/* Values. rc_json_str with s == NULL writes null. */
void rc_json_str(struct rc_json *j, const char *key, const char *s);
void rc_json_u64(struct rc_json *j, const char *key, uint64_t v);
void rc_json_i64(struct rc_json *j, const char *key, int64_t v);
void rc_json_double(struct rc_json *j, const char *key, double v);
void rc_json_bool(struct rc_json *j, const char *key, bool v);
void rc_json_null(struct rc_json *j, const char *key);
/* Write the text and a newline to f, if it is one complete value.
 * Returns 0, j->err, -EINVAL if a level is still open or nothing was
 * written, or -EIO if writing failed. */
int rc_json_finish(struct rc_json *j, FILE *f);
/* Is "--json" among the arguments (before a "--")? Lets a client answer a
 * usage error in JSON too, although its options could not be parsed. */
bool rc_json_wanted(int argc, char *const argv[]);

#endif /* RDMA_COMMON_H */
