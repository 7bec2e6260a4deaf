/* SPDX-License-Identifier: MIT */
/*
 * xfer.h - what 03's client and server share: the messages, the rules for
 * file names, the command-line options, the checksum, the temporary-file
 * commit, and the small control channel both sides run their messages on.
 *
 * Conversation (sequence.txt has the full diagrams), protocol version 2:
 *   connect request private data: HELLO { op put|get, version, chunk, depth }
 *   server -> client SEND: CHALLENGE { version, flags, nonce }
 *   client -> server SEND: REQUEST { size, flags, name, proof }
 *        (proof: with --secret, a MAC over the nonce, HELLO and REQUEST)
 *   server -> client SEND: ACCEPT { size, ring, rd_depth } or ERROR { code, text }
 *   put: client RDMA_WRITE_WITH_IMM chunk k into server ring slot k % depth,
 *        imm = (k mod 2^24) << 8 | slot; server -> client CREDIT { k, slot }
 *   get: server -> client CHUNK { k, slot, offset, len }; the client
 *        RDMA_READs the slot; client -> server CREDIT { k, slot }
 *   sender -> receiver DONE { size, xxh3-128 }
 *   receiver -> sender COMMITTED { size, xxh3-128 } or ERROR
 * Every message is a struct rc_hdr (common/rdma-common.h) and a fixed-size,
 * big-endian body. The header's seq numbers each side's SENDs 0, 1, 2, ...
 */
#ifndef XFER_H
#define XFER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rc-opts.h"
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
};

/* 03's protocol version, in the HELLO and the CHALLENGE. Version 1 had no
 * CHALLENGE and a reserved zero byte where the HELLO now has the version. */
#define XFER_PROTO_VERSION 2

enum xfer_op { XFER_PUT = 1, XFER_GET = 2 };

#define XFER_NAME_MAX	 255 /* bytes of a file name (NAME_MAX) */
#define XFER_ERR_TEXT	 240 /* bytes of an ERROR's text */
#define XFER_HASH_LEN	 16
#define XFER_HASH_NAME	 "xxh3-128"
#define XFER_MIN_CHUNK	 4096u
#define XFER_MAX_CHUNK	 (1u << 30)
#define XFER_MAX_DEPTH	 255	   /* the slot travels in 8 bits of the immediate */
#define XFER_MAX_SIZE	 INT64_MAX /* largest off_t */
#define XFER_DEF_CHUNK	 (1u << 20)
#define XFER_DEF_DEPTH	 16
#define XFER_REQ_F_FORCE 0x1u /* put: overwrite an existing file */
#define XFER_REQ_F_PROOF 0x2u /* the proof field is set (--secret) */
#define XFER_NONCE_LEN	 32
#define XFER_PROOF_LEN	 32   /* HMAC-SHA512-256 (auth.h) */
#define XFER_CH_F_SECRET 0x1u /* CHALLENGE: this server needs a proof */

/* Fixed body sizes on the wire. */
#define XFER_HELLO_BODY	    8
#define XFER_REQUEST_BODY   304 /* 8 size, 4 flags, 2 name_len, 2 zero, 256 name, 32 proof */
#define XFER_CHALLENGE_BODY 40	/* 2 version, 2 flags, 4 zero, 32 nonce */
#define XFER_ACCEPT_BODY    32	/* 8 size, 16 ring, 2 rd_depth, 6 zero */
#define XFER_ERROR_BODY	    248 /* 4 code, 2 text_len, 2 zero, 240 text */
#define XFER_CHUNK_BODY	    24	/* 8 seq, 8 offset, 4 len, 2 slot, 2 zero */
#define XFER_CREDIT_BODY    16	/* 8 seq, 2 slot, 6 zero */
#define XFER_DONE_BODY	    24	/* 8 size, 16 hash (DONE and COMMITTED) */
#define XFER_HELLO_LEN	    (sizeof(struct rc_hdr) + XFER_HELLO_BODY)
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
};

struct xfer_error {
	uint32_t code;		      /* a positive errno value: ENOENT, EEXIST, ENOSPC... */
	char text[XFER_ERR_TEXT + 1]; /* printable, NUL-terminated after decoding */
};

struct xfer_chunk {
	uint64_t seq;	 /* chunk index: offset = seq * chunk */
	uint64_t offset; /* in the file */
	uint32_t len;
	uint16_t slot; /* always seq % depth */
};

struct xfer_credit {
	uint64_t seq;
	uint16_t slot;
};

struct xfer_done {
	uint64_t size;
	uint8_t hash[XFER_HASH_LEN];
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

/* Any message but HELLO into buf (XFER_MSG_MAX bytes); returns its length. */
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

/* ------------------------------------------------------------------ */
/* Names and endpoints.                                                */
/* ------------------------------------------------------------------ */

/*
 * Is name[0..len) a plain file name the server may use inside its root
 * directory? Refuses: empty, longer than 255 bytes, "." and "..", any '/',
 * NUL or control character, and names of our temporary files (.*.part).
 * 0 or -EINVAL with the reason in err.
 */
int xfer_name_check(const char *name, size_t len, char *err, size_t errlen);

/* Quote an untrusted name for messages: printable bytes as is, others as
 * \xNN, at most about 80 input bytes. */
void xfer_quote(char *out, size_t outlen, const char *s, size_t len);

/* SRC or DST of the command line: "HOST:NAME", "[ADDR]:NAME" or local. */
struct xfer_endpoint {
	bool remote;
	char host[256];
	const char *path; /* the NAME part, or the whole local path */
};

/* A ':' before any '/' makes it remote (as in scp: write ./a:b for a local
 * file named a:b). 0 or -EINVAL with err set. */
int xfer_parse_endpoint(const char *arg, struct xfer_endpoint *ep, char *err, size_t errlen);

/* ------------------------------------------------------------------ */
/* Options. parse_*: 0 ok, 1 --help was printed, -EINVAL with err set. */
/* ------------------------------------------------------------------ */

struct xfer_client_opts {
	struct rc_opts rc;	 /* -p, --timeout, --poll, -v: as every example */
	const char *secret_file; /* --secret FILE, or NULL */
	enum xfer_op op;
	char host[256];
	const char *name;		  /* the remote name */
	const char *local;		  /* the local path */
	char name_buf[XFER_NAME_MAX + 1]; /* put to "HOST:": the source's basename */
	uint32_t chunk;
	uint16_t depth;
	bool force;
	int progress; /* -1: if stderr is a TTY; 0 off; 1 on */
	bool quiet;
	bool json; /* --json: one JSON object on stdout instead of the line */
};

struct xfer_limits {
	uint32_t max_chunk;
	uint16_t max_depth;
	uint64_t max_mem; /* chunk x depth, per client */
};

struct xfer_server_opts {
	struct rc_opts rc; /* -p, -b, --once, --max-clients, --timeout, --poll, -v */
	const char *root;
	struct xfer_limits lim;
	const char *secret_file; /* --secret FILE: requests need a proof */
	bool read_only;		 /* --read-only: get only */
	bool write_only;	 /* --write-only: put only */
};

int xfer_parse_client(int argc, char **argv, struct xfer_client_opts *o, char *err, size_t errlen);
int xfer_parse_server(int argc, char **argv, struct xfer_server_opts *o, char *err, size_t errlen);

/* The most text a connect reject carries to the client (rc_reject: 128
 * bytes of private data, less the header). */
#define XFER_REJECT_MAX 112

/* The server's limits against a HELLO (max_msg_sz: the port's). 0, or
 * -ERANGE with the reason, meant for the client, in err (at most
 * XFER_REJECT_MAX bytes). */
int xfer_check_limits(const struct xfer_hello *h, const struct xfer_limits *lim,
		      uint32_t max_msg_sz, char *err, size_t errlen);

/* "16 MiB", "4 KiB", "3 B": sizes for messages. */
void xfer_fmt_size(char *out, size_t outlen, uint64_t bytes);

/* ------------------------------------------------------------------ */
/* Checksum: XXH3-128 (libxxhash), streamed chunk by chunk.            */
/* ------------------------------------------------------------------ */

struct xfer_hash {
	void *state; /* XXH3_state_t, allocated by the library (aligned) */
};

int xfer_hash_init(struct xfer_hash *h);
void xfer_hash_update(struct xfer_hash *h, const void *p, size_t len);
/* The digest in canonical (big-endian) byte order, as xxhsum -H2 prints it. */
void xfer_hash_final(struct xfer_hash *h, uint8_t out[XFER_HASH_LEN]);
void xfer_hash_free(struct xfer_hash *h);
void xfer_hash_hex(const uint8_t d[XFER_HASH_LEN], char out[2 * XFER_HASH_LEN + 1]);

/* ------------------------------------------------------------------ */
/* Files.                                                              */
/* ------------------------------------------------------------------ */

/*
 * The receiving end of a transfer: a temporary file ".NAME.XXXXXXXX.part"
 * in the destination directory, renamed over NAME only once the data is on
 * disk and verified. Until then NAME is untouched, and every failure path
 * ends in xfer_sink_abort(), which removes the temporary file.
 */
struct xfer_sink {
	int dirfd; /* borrowed */
	int fd;	   /* -1 when closed */
	bool force;
	bool have_tmp; /* the temporary file exists */
	char name[XFER_NAME_MAX + 1];
	char tmp[XFER_NAME_MAX + 1];
	uint64_t written_end; /* highest offset written */
	uint64_t flushed;     /* writeback waited for up to here */
};

/* Refuse an existing NAME unless force (and then only a regular file),
 * then create the temporary file. 0 or a negative errno with err set. */
int xfer_sink_open(struct xfer_sink *s, int dirfd, const char *name, bool force, char *err,
		   size_t errlen);
/* pwrite all of buf at off, and keep the dirty data bounded (see xfer.c). */
int xfer_sink_write(struct xfer_sink *s, const void *buf, size_t len, uint64_t off, char *err,
		    size_t errlen);
/* fsync, and check that the file has exactly `size` bytes. */
int xfer_sink_sync(struct xfer_sink *s, uint64_t size, char *err, size_t errlen);
/* Rename into place (without force: never over an existing file, even
 * one created meanwhile), then fsync the directory. */
int xfer_sink_commit(struct xfer_sink *s, char *err, size_t errlen);
/* Close and remove the temporary file, if any. Safe to call twice. */
void xfer_sink_abort(struct xfer_sink *s);

/* pread exactly len bytes at off (a short read means the file shrank). */
int xfer_read_full(int fd, void *buf, size_t len, uint64_t off, char *err, size_t errlen);

/* ------------------------------------------------------------------ */
/* The disk thread: file I/O and checksum beside the verbs calls.      */
/* ------------------------------------------------------------------ */

/*
 * Why a second thread: each side must copy every chunk between the file
 * and its ring (pread or pwrite) and checksum it, and on one thread that
 * work and the verbs calls take turns: while the thread copies, it posts
 * nothing. (Soft-RoCE is worse: it does the NIC's work inside
 * ibv_post_send, on the same thread.) So one disk thread per transfer
 * does the copies and the checksum, chunk after chunk, strictly in order
 * (the checksum is a stream), while the main thread keeps every verbs
 * call: posting, polling, the control messages.
 *
 * The hand-over is two counters under a mutex. The main thread says how
 * many chunks the disk thread may handle (allowed: their slot is free, or
 * their data has arrived); the disk thread says how many it has handled
 * (done) and writes an eventfd, which rc_next_wc() watches as the
 * connection's wake_fd, so a main thread waiting for a completion wakes
 * up for the disk's news too. The mutex also orders the memory: what the
 * disk thread read into a slot is visible to the main thread that posts
 * it, and the reverse.
 */
typedef int (*xfer_disk_fn)(void *arg, uint64_t seq, char *err, size_t errlen);

struct xfer_disk {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct rc_conn *c; /* whose wake_fd is ours while we run */
	int efd;	   /* the eventfd */
	bool running;	   /* the thread exists (and must be joined) */
	xfer_disk_fn fn;   /* handles chunk seq, on the disk thread */
	void *arg;
	uint64_t n; /* chunks in the transfer */
	/* Under lock: */
	uint64_t allowed; /* main -> disk: chunks it may handle */
	uint64_t done;	  /* disk -> main: chunks handled */
	bool stop;	  /* main -> disk: stop before the next chunk */
	int err;	  /* disk -> main: fn's negative errno, message in why */
	char why[RC_ERR_LEN];
};

/* Start the thread for chunks 0..n-1, of which the first `allowed` may be
 * handled at once; fn(arg, seq, ...) returns 0 or a negative errno with a
 * message. Sets c->wake_fd. 0, or a negative errno with err set. */
int xfer_disk_start(struct xfer_disk *d, struct rc_conn *c, uint64_t n, uint64_t allowed,
		    xfer_disk_fn fn, void *arg, char *err, size_t errlen);
/* Main thread: chunks below `allowed` may be handled (never lowers it). */
void xfer_disk_allow(struct xfer_disk *d, uint64_t allowed);
/* Main thread: *done = chunks handled so far; or fn's error, with its
 * message in why. */
int xfer_disk_done(struct xfer_disk *d, uint64_t *done, char *why, size_t whylen);
/* Stop after the chunk in hand, join, release, clear c->wake_fd. Safe on
 * a zeroed struct and twice; call before anything else touches the file. */
void xfer_disk_stop(struct xfer_disk *d);

/*
 * What the disk thread does on either side: chunk k is slot k % depth of
 * the ring and bytes [k * chunk, +len) of the file. The sender reads it
 * from the file into the slot (the one CPU copy on that side), the
 * receiver writes it from the slot to the temporary file; both hash it
 * while it is in the cache.
 */
struct xfer_io {
	uint8_t *ring;
	uint32_t chunk;
	uint16_t depth;
	uint64_t size;
	int fd;			  /* sender: the file */
	struct xfer_sink *sink;	  /* receiver: the temporary file */
	struct xfer_hash *hash;	  /* the disk thread's while it runs */
	const struct rc_log *log; /* for the -v trace */
	const char *who;	  /* "client" or "server", for messages */
	const char *name;	  /* the file, quoted, for messages */
};

/* xfer_disk_fn's for an xfer_io: file -> slot, and slot -> file. */
int xfer_io_read(void *io, uint64_t seq, char *err, size_t errlen);
int xfer_io_write(void *io, uint64_t seq, char *err, size_t errlen);

/* ------------------------------------------------------------------ */
/* The control channel: posted receives, a pool of send buffers.       */
/* ------------------------------------------------------------------ */

/* wr_ids: data operations use their ring slot (0..depth-1); receives and
 * control sends use these bases plus their buffer's index. */
#define XFER_WR_RECV 1000
#define XFER_WR_SEND 2000

struct xfer_ctl {
	struct rc_conn *c;
	struct rc_buf *rbuf, *sbuf; /* nrecv and nsend slots of XFER_MSG_MAX bytes */
	unsigned nrecv, nsend;
	unsigned *free_send, nfree; /* a stack of free send slots */
	uint32_t send_seq, recv_seq;
	/* Completions taken off the CQ while waiting for a send slot, handed
	 * out by xfer_ctl_next() before anything new. */
	struct ibv_wc *stash;
	unsigned stash_cap, stash_head, stash_len;
};

/* Receives a side keeps posted: `depth` for the messages that travel under
 * ring credits, one for the end of the stream (DONE or COMMITTED) and one
 * for an ERROR, which is always the last message a side sends. */
#define XFER_RECVS(depth) ((unsigned)(depth) + 2u)

/* After rc_create_qp: register the buffers and post every receive. */
int xfer_ctl_init(struct xfer_ctl *x, struct rc_conn *c, unsigned nrecv, unsigned nsend);
void xfer_ctl_free(struct xfer_ctl *x);
/* SEND a message (waits for a free send buffer if need be). */
int xfer_ctl_send(struct xfer_ctl *x, const struct xfer_msg *m);
/* The next completion, except those of our own SENDs (handled inside). */
int xfer_ctl_next(struct xfer_ctl *x, struct ibv_wc *wc);
/* Is wc one of our receives (a message or a WRITE_WITH_IMM)? */
bool xfer_ctl_is_recv(const struct xfer_ctl *x, const struct ibv_wc *wc);
/* For a receive completion: decode the message (not for WITH_IMM), then
 * repost the receive. */
int xfer_ctl_take(struct xfer_ctl *x, const struct ibv_wc *wc, struct xfer_msg *m);
/* Wait until every SEND posted so far has completed. */
int xfer_ctl_drain(struct xfer_ctl *x);

#endif /* XFER_H */
