/* SPDX-License-Identifier: MIT */
/*
 * rw.h - what the client and the server of 02 share: their messages,
 * options, the test pattern, the checksum, and the arithmetic of splitting
 * and pipelining RDMA operations.
 *
 * Conversation:
 *   connect request private data: HELLO  { length wanted, ops, read depth,
 *                                          lesson }
 *   server -> client SEND: BUF    { addr, rkey, length, max_msg_sz, ops,
 *                                   read depth granted, lesson, flags }
 *   (lesson dereg-other: a second BUF, sequence number 1, follows)
 *   client: RDMA WRITE / RDMA READ on that buffer (the server posts nothing),
 *           or fetch-and-adds / compare-and-swaps on its first 8 bytes
 *   client -> server SEND: DONE   { client's checksum, length }
 *   server -> client SEND: RESULT { server's checksum of its buffer, length }
 * For the atomics (ops fetch-add or cmp-swap) the buffer is one 8-byte
 * word, and DONE and RESULT carry the word's value instead of a checksum
 * (atomic.h). Every message is a struct rc_hdr (common/rdma-common.h) and
 * a body; all fields are big-endian; reserved fields must be zero.
 *
 * The atomics came without a new version: they are new values of the
 * HELLO's ops and lesson bytes, and BUF's last byte, reserved before, is
 * its flags. A server from before them refuses such a HELLO with its
 * reason ("unknown operations 0x04"), and sends old clients nothing new.
 */
#ifndef RW_H
#define RW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rc-opts.h"
#include "rdma-common.h"

enum rw_type {
	RW_T_HELLO = 0x20,  /* private data of rdma_connect */
	RW_T_BUF = 0x21,    /* the server's buffer, for the client to use */
	RW_T_DONE = 0x22,   /* the client finished; its checksum */
	RW_T_RESULT = 0x23, /* the server's checksum of its buffer */
};

/* What the client will do to the server's buffer (bits of `ops`): WRITE,
 * READ or both, or one kind of atomic alone. */
enum rw_ops {
	RW_OP_WRITE = 1,
	RW_OP_READ = 2,
	RW_OP_BOTH = RW_OP_WRITE | RW_OP_READ,
	RW_OP_FETCH_ADD = 4, /* IBV_WR_ATOMIC_FETCH_AND_ADD on the word */
	RW_OP_CMP_SWAP = 8,  /* IBV_WR_ATOMIC_CMP_AND_SWP on the word */
	RW_OP_ATOMIC = RW_OP_FETCH_ADD | RW_OP_CMP_SWAP,
};

/* An atomic (fetch-add or cmp-swap) among ops? */
static inline bool rw_ops_atomic(unsigned ops)
{
	return (ops & RW_OP_ATOMIC) != 0;
}

/* Do ops need responder resources (a read depth of at least 1)? RDMA
 * READs and atomics both take them: rdma_accept(3)'s responder_resources
 * counts "RDMA read and atomic operations". */
static inline bool rw_ops_responder(unsigned ops)
{
	return (ops & (RW_OP_READ | RW_OP_ATOMIC)) != 0;
}

/* BUF's flags. */
enum rw_buf_flags {
	/* The word is shared with other clients, which add to it too (a
	 * server's counter): only a client with --shared can check it. */
	RW_BUF_SHARED = 1,
};

#define RW_MAX_SIZE	 (1u << 30) /* largest buffer a client may ask for */
#define RW_DEFAULT_SIZE	 (1u << 20) /* the server's default buffer size */
#define RW_MAX_DEPTH	 1024u	    /* operations in flight, at most */
#define RW_DEFAULT_DEPTH 16u
#define RW_MAX_ITERS	 1000000000u
#define RW_HELLO_LEN	 (sizeof(struct rc_hdr) + 8)
#define RW_BUF_LEN	 (sizeof(struct rc_hdr) + RC_REMOTE_BUF_WIRE + 8)
#define RW_SUM_LEN	 (sizeof(struct rc_hdr) + 16) /* DONE and RESULT */
#define RW_CTRL_MAX	 64			      /* room for any control message */
#define RW_SERVER_SEED	 0x5345525645520002ull	      /* the server's initial pattern */
#define RW_CHECKSUM_NAME "fnv1a64"
/* The atomics: the client asks for a buffer of one 8-byte word (two words
 * in the atomic-unaligned lesson: its misaligned word must lie inside). */
#define RW_WORD		     8u
#define RW_ATOMIC_LESSON_LEN 16u

/*
 * The --inject lessons. The number is also the HELLO's and BUF's `lesson`
 * byte: the client says which lesson it runs, the server does its part
 * (for no-remote-read, no-read-depth, unaligned, dereg-other and
 * atomic-no-access) and echoes the number in BUF. 0 in both: a normal run.
 */
enum rw_inject {
	RW_INJECT_NONE = 0,
	RW_INJECT_BAD_RKEY = 1,		/* WRITE with an rkey never handed out */
	RW_INJECT_NO_REMOTE_READ = 2,	/* server: MR without REMOTE_READ; client READs */
	RW_INJECT_OUT_OF_BOUNDS = 3,	/* READ one byte past the advertised region */
	RW_INJECT_NO_READ_DEPTH = 4,	/* initiator_depth 0, responder_resources 0; READ */
	RW_INJECT_UNALIGNED = 5,	/* malloc'd buffers at odd addresses, both sides */
	RW_INJECT_DEREG_OTHER = 6,	/* two MRs on one buffer, one deregistered */
	RW_INJECT_ATOMIC_UNALIGNED = 7, /* an atomic 4 bytes into the word's buffer */
	RW_INJECT_ATOMIC_NO_ACCESS = 8, /* server: MR without REMOTE_ATOMIC; an atomic */
	RW_INJECT_COUNT
};

/* "bad-rkey", ... ("none" for 0); RW_INJECT_COUNT for an unknown name. */
const char *rw_inject_name(unsigned inject);
unsigned rw_inject_parse(const char *name);

/* Exit code of a lesson that showed what it teaches. */
#define RW_EXIT_LESSON 4

struct rw_hello {
	uint32_t len;	    /* buffer length wanted; 0: whatever the server offers */
	uint8_t ops;	    /* enum rw_ops */
	uint8_t read_depth; /* RDMA READs the client will keep in flight (0 without READ) */
	uint8_t lesson;	    /* enum rw_inject: the lesson the client runs, 0 for none */
};

struct rw_buf {
	struct rc_remote_buf rb; /* addr, rkey, len */
	uint32_t max_msg_sz;	 /* the server port's largest message */
	uint8_t ops;		 /* what the buffer's access flags allow (except in the
				  * no-remote-read lesson: there they do not) */
	uint8_t read_depth;	 /* the responder_resources the server accepted with */
	uint8_t lesson;		 /* the HELLO's lesson, echoed: the server did its part */
	uint8_t flags;		 /* enum rw_buf_flags; only with an atomic in ops */
};

struct rw_sum {
	uint64_t checksum;
	uint32_t len;
};

/* HELLO into connect private data; validate one (padded, as received). */
void rw_hello_pack(uint8_t buf[RW_HELLO_LEN], const struct rw_hello *h);
int rw_hello_unpack(const void *priv, size_t len, struct rw_hello *h, char *err, size_t errlen);

/*
 * BUF, DONE and RESULT. pack writes the whole message into buf and returns
 * its length; unpack validates byte_len (from wc.byte_len), the header, the
 * type, the sequence number and every field, and returns 0 or -EBADMSG
 * with a reason in err.
 */
size_t rw_buf_pack(void *buf, uint32_t seq, const struct rw_buf *b);
int rw_buf_unpack(const void *buf, size_t byte_len, uint32_t want_seq, struct rw_buf *b, char *err,
		  size_t errlen);
size_t rw_sum_pack(void *buf, uint8_t type, uint32_t seq, const struct rw_sum *s);
int rw_sum_unpack(const void *buf, size_t byte_len, uint8_t want_type, uint32_t want_seq,
		  struct rw_sum *s, char *err, size_t errlen);

/* The memory-region access flags a buffer needs for `ops`, and their
 * names ("LOCAL_WRITE|REMOTE_WRITE") for printing. */
int rw_access_for(unsigned ops);
const char *rw_access_str(int access, char *out, size_t outlen);
/* "write", "read", "write+read", "fetch-add" or "cmp-swap". */
const char *rw_ops_str(unsigned ops);
/* What the responder resources are called in our output: "atomic depth"
 * for the atomics, "read depth" otherwise (the same resources). */
const char *rw_depth_name(unsigned ops);

/*
 * The test pattern: byte i of the buffer is a function of (seed, i) only,
 * so data that lands at the wrong offset or comes from another writer is
 * detected, and a prefix of a longer fill equals a shorter fill.
 */
void rw_fill_pattern(uint8_t *p, size_t len, uint64_t seed);
/* The offset of the first byte that differs from the pattern, or len. */
size_t rw_check_pattern(const uint8_t *p, size_t len, uint64_t seed);

/*
 * The checksum both sides print: 64-bit FNV-1a (offset basis
 * 0xcbf29ce484222325, prime 0x100000001b3) over the bytes in order. Not
 * cryptographic; it only has to make two equal-looking buffers comparable
 * without sending them.
 */
uint64_t rw_checksum(const void *p, size_t len);

/* An operation of `size` bytes in pieces of at most max_piece bytes (the
 * port's max_msg_sz): how many, and where piece i lies. */
uint64_t rw_pieces(uint64_t size, uint32_t max_piece);
void rw_piece(uint64_t size, uint32_t max_piece, uint64_t i, uint64_t *off, uint32_t *len);

/*
 * Selective signalling with at most `depth` work requests in flight:
 * request a completion for every rw_signal_every(depth, wr_bytes)-th WR
 * and for the last one. Every window of `depth` consecutive WRs then holds
 * a signalled one, so a full send queue always has a completion coming
 * that frees it. Half the depth, but at least one completion every
 * RW_SIGNAL_BYTES: one wait then covers at most that much data, which a
 * lossy link still moves within --timeout (4 MiB: ~3 s READ at 0.5% loss
 * on Soft-RoCE, where 8 WRs of 4 MiB took ~25 s, past every wait's bound).
 */
#define RW_SIGNAL_BYTES (4u << 20)
unsigned rw_signal_every(unsigned depth, uint32_t wr_bytes);
bool rw_is_signaled(uint64_t idx, uint64_t total, unsigned every);
/* The first signalled WR at or after idx (< total): the next completion. */
uint64_t rw_next_signaled(uint64_t idx, uint64_t total, unsigned every);

/* perftest's units: MiB/s = bytes / 2^20 / s, Gb/s = bytes * 8 / 1e9 / s. */
void rw_bandwidth(uint64_t bytes, uint64_t ns, double *mib_s, double *gb_s);

/*
 * Memory registered by hand, for the lessons that need what rc_buf_alloc
 * never does: memory at an odd address (malloc'd, one byte in), or an MR
 * deregistered while the connection lives. `buf` describes it like an
 * rc_buf (addr, len, mr), so build_wr and the transfer code take it as is;
 * it is not on the connection's list: rw_mr_free it before the PD goes.
 */
struct rw_mr {
	struct rc_buf buf;
	void *mem; /* what malloc returned (buf.addr is mem + 1 or mem) */
};

/* malloc len + 1 bytes, start at the first odd address in them, register
 * len bytes there with `access`. 0, or -errno with err set. */
int rw_mr_unaligned(struct ibv_pd *pd, size_t len, int access, struct rw_mr *m, char *err,
		    size_t errlen);
void rw_mr_free(struct rw_mr *m);

/* Options. parse_*: 0 ok, 1 --help was printed, -EINVAL with err set. */
struct rw_client_opts {
	struct rc_opts rc; /* -p, --timeout, --poll, -v */
	const char *server;
	unsigned ops;	       /* enum rw_ops */
	uint32_t size;	       /* bytes per operation; 0: the advertised length */
	uint64_t iters;	       /* operations of each kind */
	unsigned depth;	       /* operations in flight */
	enum rw_inject inject; /* --inject: the lesson to run */
	bool json;	       /* --json: one JSON object on stdout instead of the lines */
	uint64_t add;	       /* --add: fetch-add's addend, cmp-swap's step (default 1) */
	bool shared;	       /* --shared: other clients add to the word too */
};

struct rw_server_opts {
	struct rc_opts rc; /* -p, -b, --once, --max-clients, --timeout, --poll, -v */
	uint32_t size;	   /* each client's buffer, and the most a client may ask for */
};

int rw_parse_client(int argc, char **argv, struct rw_client_opts *o, char *err, size_t errlen);
int rw_parse_server(int argc, char **argv, struct rw_server_opts *o, char *err, size_t errlen);

#endif /* RW_H */
