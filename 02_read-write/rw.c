// SPDX-License-Identifier: MIT
/*
 * rw.c - messages, options, pattern, checksum and pipelining arithmetic
 * shared by 02's client and server.
 */
#define _GNU_SOURCE
#include "rw.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Messages                                                            */
/* ------------------------------------------------------------------ */

static bool ops_valid(unsigned ops)
{
	return ops == RW_OP_WRITE || ops == RW_OP_READ || ops == RW_OP_BOTH ||
	       ops == RW_OP_FETCH_ADD || ops == RW_OP_CMP_SWAP;
}

/* The lessons that post an atomic, and so need one in ops. */
static bool lesson_atomic(unsigned lesson)
{
	return lesson == RW_INJECT_ATOMIC_UNALIGNED || lesson == RW_INJECT_ATOMIC_NO_ACCESS;
}

/* READs and atomics need a read depth of at least 1 (except in the
 * no-read-depth lesson, which is about a depth of 0); without them it
 * must be 0. The atomic lessons need an atomic, the others none. */
static int check_ops(unsigned ops, unsigned read_depth, unsigned lesson, char *err, size_t errlen)
{
	if (!ops_valid(ops)) {
		snprintf(err, errlen,
			 "unknown operations 0x%02x (1 write, 2 read, 3 both, 4 fetch-add, "
			 "8 cmp-swap)",
			 ops);
		return -EBADMSG;
	}
	if (lesson >= RW_INJECT_COUNT) {
		snprintf(err, errlen, "unknown lesson %u (1 to %u)", lesson, RW_INJECT_COUNT - 1);
		return -EBADMSG;
	}
	if (lesson == RW_INJECT_NO_READ_DEPTH && (!(ops & RW_OP_READ) || read_depth != 0)) {
		snprintf(err, errlen,
			 "lesson no-read-depth needs RDMA READ with a read depth of 0");
		return -EBADMSG;
	}
	if (lesson && lesson_atomic(lesson) != rw_ops_atomic(ops)) {
		snprintf(err, errlen, "lesson %s with operations %s", rw_inject_name(lesson),
			 rw_ops_str(ops));
		return -EBADMSG;
	}
	if ((ops & RW_OP_READ) && read_depth == 0 && lesson != RW_INJECT_NO_READ_DEPTH) {
		snprintf(err, errlen, "RDMA READ with a read depth of 0");
		return -EBADMSG;
	}
	if (rw_ops_atomic(ops) && read_depth == 0) {
		snprintf(err, errlen, "%s with a read depth of 0", rw_ops_str(ops));
		return -EBADMSG;
	}
	if (!rw_ops_responder(ops) && read_depth != 0) {
		snprintf(err, errlen, "read depth %u without RDMA READ or atomics", read_depth);
		return -EBADMSG;
	}
	return 0;
}

/* HELLO body: be32 len, u8 ops, u8 read_depth, u8 lesson, u8 reserved. */
void rw_hello_pack(uint8_t buf[RW_HELLO_LEN], const struct rw_hello *h)
{
	uint8_t *b = buf + sizeof(struct rc_hdr);

	rc_hdr_pack(buf, RW_T_HELLO, RW_HELLO_LEN - sizeof(struct rc_hdr), 0);
	rc_put32(b, h->len);
	b[4] = h->ops;
	b[5] = h->read_depth;
	b[6] = h->lesson;
	b[7] = 0;
}

int rw_hello_unpack(const void *priv, size_t len, struct rw_hello *h, char *err, size_t errlen)
{
	struct rc_msg m;
	int ret;

	ret = rc_hello_expect(priv, len, RW_T_HELLO, RW_HELLO_LEN - sizeof(struct rc_hdr), &m, err,
			      errlen);
	if (ret)
		return ret;
	if (m.body[7]) {
		snprintf(err, errlen, "HELLO with a non-zero reserved byte");
		return -EBADMSG;
	}
	h->len = rc_get32(m.body);
	h->ops = m.body[4];
	h->read_depth = m.body[5];
	h->lesson = m.body[6];
	if (h->len > RW_MAX_SIZE) {
		snprintf(err, errlen, "asks for a buffer of %u bytes, more than the limit %u",
			 h->len, RW_MAX_SIZE);
		return -ERANGE;
	}
	return check_ops(h->ops, h->read_depth, h->lesson, err, errlen);
}

/* What a BUF and a DONE or RESULT are: a type and a body of fixed size. */
static const struct rc_msg_kind buf_kind = { RW_T_BUF, RW_BUF_LEN - sizeof(struct rc_hdr), NULL };

/* BUF body: rc_remote_buf (16), be32 max_msg_sz, u8 ops, u8 read_depth,
 * u8 lesson, u8 flags (reserved, zero, before the atomics). */
size_t rw_buf_pack(void *buf, uint32_t seq, const struct rw_buf *b)
{
	uint8_t *p = (uint8_t *)buf + sizeof(struct rc_hdr);

	rc_hdr_pack(buf, RW_T_BUF, RW_BUF_LEN - sizeof(struct rc_hdr), seq);
	rc_remote_buf_pack(p, &b->rb);
	p += RC_REMOTE_BUF_WIRE;
	rc_put32(p, b->max_msg_sz);
	p[4] = b->ops;
	p[5] = b->read_depth;
	p[6] = b->lesson;
	p[7] = b->flags;
	return RW_BUF_LEN;
}

int rw_buf_unpack(const void *buf, size_t byte_len, uint32_t want_seq, struct rw_buf *b, char *err,
		  size_t errlen)
{
	const uint8_t *p;
	struct rc_msg m;
	int ret;

	ret = rc_msg_expect(buf, byte_len, &buf_kind, 1, want_seq, &m, err, errlen);
	if (ret)
		return ret;
	rc_remote_buf_unpack(m.body, &b->rb);
	p = m.body + RC_REMOTE_BUF_WIRE;
	b->max_msg_sz = rc_get32(p);
	b->ops = p[4];
	b->read_depth = p[5];
	b->lesson = p[6];
	b->flags = p[7];
	if (b->flags & ~RW_BUF_SHARED) {
		snprintf(err, errlen, "BUF with unknown flags 0x%02x", b->flags);
		return -EBADMSG;
	}
	if (b->flags && !rw_ops_atomic(b->ops)) {
		snprintf(err, errlen, "BUF flags 0x%02x without an atomic", b->flags);
		return -EBADMSG;
	}
	if (b->rb.len < 1 || b->rb.len > RW_MAX_SIZE) {
		snprintf(err, errlen, "advertised length %u is outside 1..%u", b->rb.len,
			 RW_MAX_SIZE);
		return -EBADMSG;
	}
	if (b->rb.addr > UINT64_MAX - b->rb.len) {
		snprintf(err, errlen, "advertised buffer 0x%llx + %u wraps around",
			 (unsigned long long)b->rb.addr, b->rb.len);
		return -EBADMSG;
	}
	if (b->max_msg_sz < 1) {
		snprintf(err, errlen, "advertised max_msg_sz is 0");
		return -EBADMSG;
	}
	return check_ops(b->ops, b->read_depth, b->lesson, err, errlen);
}

/* DONE / RESULT body: be64 checksum, be32 len, be32 reserved. */
size_t rw_sum_pack(void *buf, uint8_t type, uint32_t seq, const struct rw_sum *s)
{
	uint8_t *p = (uint8_t *)buf + sizeof(struct rc_hdr);

	rc_hdr_pack(buf, type, RW_SUM_LEN - sizeof(struct rc_hdr), seq);
	rc_put64(p, s->checksum);
	rc_put32(p + 8, s->len);
	rc_put32(p + 12, 0);
	return RW_SUM_LEN;
}

int rw_sum_unpack(const void *buf, size_t byte_len, uint8_t want_type, uint32_t want_seq,
		  struct rw_sum *s, char *err, size_t errlen)
{
	const struct rc_msg_kind kind = { want_type, RW_SUM_LEN - sizeof(struct rc_hdr), NULL };
	struct rc_msg m;
	int ret;

	ret = rc_msg_expect(buf, byte_len, &kind, 1, want_seq, &m, err, errlen);
	if (ret)
		return ret;
	if (rc_get32(m.body + 12)) {
		snprintf(err, errlen, "message with non-zero reserved bytes");
		return -EBADMSG;
	}
	s->checksum = rc_get64(m.body);
	s->len = rc_get32(m.body + 8);
	if (s->len < 1 || s->len > RW_MAX_SIZE) {
		snprintf(err, errlen, "length %u is outside 1..%u", s->len, RW_MAX_SIZE);
		return -EBADMSG;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Access flags                                                        */
/* ------------------------------------------------------------------ */

int rw_access_for(unsigned ops)
{
	int access = 0;

	/* The peer writes: REMOTE_WRITE, and the verbs rule that
	 * REMOTE_WRITE requires LOCAL_WRITE (ibv_reg_mr(3)). */
	if (ops & RW_OP_WRITE)
		access |= IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	/* The peer reads: REMOTE_READ only; the NIC only reads our memory. */
	if (ops & RW_OP_READ)
		access |= IBV_ACCESS_REMOTE_READ;
	/* The peer's atomics read and write the word: REMOTE_ATOMIC, which
	 * also requires LOCAL_WRITE (ibv_reg_mr(3)). */
	if (rw_ops_atomic(ops))
		access |= IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
	return access;
}

const char *rw_access_str(int access, char *out, size_t outlen)
{
	static const struct {
		int flag;
		const char *name;
	} names[] = {
		{ IBV_ACCESS_LOCAL_WRITE, "LOCAL_WRITE" },
		{ IBV_ACCESS_REMOTE_WRITE, "REMOTE_WRITE" },
		{ IBV_ACCESS_REMOTE_READ, "REMOTE_READ" },
		{ IBV_ACCESS_REMOTE_ATOMIC, "REMOTE_ATOMIC" },
	};
	size_t i, o = 0;

	out[0] = '\0';
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!(access & names[i].flag))
			continue;
		o += (size_t)snprintf(out + o, o < outlen ? outlen - o : 0, "%s%s", o ? "|" : "",
				      names[i].name);
		if (o >= outlen)
			break;
	}
	if (!access)
		snprintf(out, outlen, "none");
	return out;
}

const char *rw_ops_str(unsigned ops)
{
	switch (ops) {
	case RW_OP_WRITE: return "write";
	case RW_OP_READ: return "read";
	case RW_OP_BOTH: return "write+read";
	case RW_OP_FETCH_ADD: return "fetch-add";
	case RW_OP_CMP_SWAP: return "cmp-swap";
	default: return "?";
	}
}

const char *rw_depth_name(unsigned ops)
{
	return rw_ops_atomic(ops) ? "atomic depth" : "read depth";
}

/* ------------------------------------------------------------------ */
/* Pattern and checksum                                                */
/* ------------------------------------------------------------------ */

/* splitmix64's output function: a well-mixed 64-bit word from x. */
static uint64_t mix64(uint64_t x)
{
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Word k of the pattern; byte i of the buffer is byte (i % 8), counted
 * from the least significant, of word i / 8. Defined per byte, so the
 * result is the same on every host. */
static uint64_t pattern_word(uint64_t seed, size_t k)
{
	return mix64(seed + (uint64_t)(k + 1) * 0x9e3779b97f4a7c15ull);
}

void rw_fill_pattern(uint8_t *p, size_t len, uint64_t seed)
{
	size_t i, k;

	for (i = 0; i < len; i += 8) {
		uint64_t w = pattern_word(seed, i / 8);

		for (k = 0; k < 8 && i + k < len; k++)
			p[i + k] = (uint8_t)(w >> (8 * k));
	}
}

size_t rw_check_pattern(const uint8_t *p, size_t len, uint64_t seed)
{
	size_t i, k;

	for (i = 0; i < len; i += 8) {
		uint64_t w = pattern_word(seed, i / 8);

		for (k = 0; k < 8 && i + k < len; k++)
			if (p[i + k] != (uint8_t)(w >> (8 * k)))
				return i + k;
	}
	return len;
}

uint64_t rw_checksum(const void *p, size_t len)
{
	const uint8_t *b = p;
	uint64_t h = 0xcbf29ce484222325ull;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

/* ------------------------------------------------------------------ */
/* Splitting and pipelining                                            */
/* ------------------------------------------------------------------ */

uint64_t rw_pieces(uint64_t size, uint32_t max_piece)
{
	return size / max_piece + (size % max_piece != 0);
}

void rw_piece(uint64_t size, uint32_t max_piece, uint64_t i, uint64_t *off, uint32_t *len)
{
	uint64_t o = i * max_piece;

	*off = o;
	*len = (uint32_t)(size - o < max_piece ? size - o : max_piece);
}

unsigned rw_signal_every(unsigned depth, uint32_t wr_bytes)
{
	/* Half the depth: a completion arrives while the other half of the
	 * queue is still busy, so refilling overlaps with the transfer. */
	unsigned every = depth > 1 ? (depth + 1) / 2 : 1;
	/* Large WRs: a completion every RW_SIGNAL_BYTES at least. */
	uint32_t most =
		wr_bytes > RW_SIGNAL_BYTES ? 1 : RW_SIGNAL_BYTES / (wr_bytes ? wr_bytes : 1);

	return every < most ? every : most;
}

bool rw_is_signaled(uint64_t idx, uint64_t total, unsigned every)
{
	return (idx + 1) % every == 0 || idx + 1 == total;
}

uint64_t rw_next_signaled(uint64_t idx, uint64_t total, unsigned every)
{
	uint64_t next = (idx / every + 1) * every - 1;

	return next < total - 1 ? next : total - 1;
}

void rw_bandwidth(uint64_t bytes, uint64_t ns, double *mib_s, double *gb_s)
{
	double s = (double)(ns ? ns : 1) / 1e9;

	*mib_s = (double)bytes / 1048576.0 / s;
	*gb_s = (double)bytes * 8.0 / 1e9 / s;
}

/* ------------------------------------------------------------------ */
/* Lessons                                                             */
/* ------------------------------------------------------------------ */

static const char *const inject_names[RW_INJECT_COUNT] = {
	[RW_INJECT_NONE] = "none",
	[RW_INJECT_BAD_RKEY] = "bad-rkey",
	[RW_INJECT_NO_REMOTE_READ] = "no-remote-read",
	[RW_INJECT_OUT_OF_BOUNDS] = "out-of-bounds",
	[RW_INJECT_NO_READ_DEPTH] = "no-read-depth",
	[RW_INJECT_UNALIGNED] = "unaligned",
	[RW_INJECT_DEREG_OTHER] = "dereg-other",
	[RW_INJECT_ATOMIC_UNALIGNED] = "atomic-unaligned",
	[RW_INJECT_ATOMIC_NO_ACCESS] = "atomic-no-access",
};

const char *rw_inject_name(unsigned inject)
{
	return inject < RW_INJECT_COUNT ? inject_names[inject] : "(unknown)";
}

unsigned rw_inject_parse(const char *name)
{
	unsigned i;

	for (i = 1; i < RW_INJECT_COUNT; i++)
		if (!strcmp(name, inject_names[i]))
			return i;
	return RW_INJECT_COUNT;
}

int rw_mr_unaligned(struct ibv_pd *pd, size_t len, int access, struct rw_mr *m, char *err,
		    size_t errlen)
{
	int ret;

	*m = (struct rw_mr){ 0 };
	/* Plain malloc: 16-byte aligned at best; one byte in is odd. */
	m->mem = malloc(len + 1);
	if (!m->mem) {
		snprintf(err, errlen, "out of memory (%zu bytes)", len + 1);
		return -ENOMEM;
	}
	m->buf.addr = (uint8_t *)m->mem + !((uintptr_t)m->mem & 1);
	m->buf.len = len;
	memset(m->buf.addr, 0, len);
	/* The verbs take any virtual address and length: the NIC's
	 * translation covers the pages around them, its checks the bytes. */
	m->buf.mr = ibv_reg_mr(pd, m->buf.addr, len, access);
	if (!m->buf.mr) {
		ret = errno;
		snprintf(err, errlen, "ibv_reg_mr(%zu bytes at %p): %s", len, m->buf.addr,
			 strerror(ret));
		free(m->mem);
		m->mem = NULL;
		return -ret;
	}
	return 0;
}

void rw_mr_free(struct rw_mr *m)
{
	if (m->buf.mr)
		ibv_dereg_mr(m->buf.mr);
	free(m->mem);
	*m = (struct rw_mr){ 0 };
}

/* ------------------------------------------------------------------ */
/* Options                                                             */
/* ------------------------------------------------------------------ */

/* Long-only options of 02, numbered after the shared ones. */
enum { OPT_INJECT = RC_OPT_FIRST_FREE, OPT_JSON, OPT_ADD, OPT_SHARED };

#define MAX_CLIENTS 16

static const char client_usage[] =
	"usage: rdma-client [options] SERVER [PORT]\n"
	"Connect to an rdma-server, RDMA WRITE a pattern into the buffer it\n"
	"advertises, RDMA READ it back, and verify it. The server's CPU takes no\n"
	"part in the transfers.\n\n"
	"  -o, --op OP           write, read or both (default both): write a pattern,\n"
	"                        read the server's initial pattern, or write then read\n"
	"                        back; fetch-add or cmp-swap: atomics on one 8-byte word\n"
	"                        of the server's, each original value returned checked\n"
	"  -s, --size SIZE       bytes per operation (K/M/G suffixes; default: the whole\n"
	"                        advertised buffer); the server allocates exactly this much\n"
	"  -n, --iters N         operations of each kind (default 1); with N > 1 prints\n"
	"                        bandwidth (atomics: operations per second)\n"
	"  -t, --depth DEPTH     operations in flight (default 16, at most 1024); RDMA READs\n"
	"                        and atomics are also bounded by the read depth the server\n"
	"                        accepts\n"
	"      --add N           fetch-add adds N each time; cmp-swap swaps the word for\n"
	"                        its value plus N (default 1, at most 4294967295)\n"
	"      --shared          fetch-add on a word other clients add to as well (a\n"
	"                        server's shared counter): check that the originals\n"
	"                        returned increase, instead of the final value\n"
	"      --inject LESSON   instead of the transfer, do one thing on purpose and print\n"
	"                        what really happened and why (exit 4 if it showed what it\n"
	"                        teaches, 1 if something else happened). LESSON is one of:\n"
	"          bad-rkey        an RDMA WRITE with an rkey the server never handed out\n"
	"          no-remote-read  an RDMA READ of a buffer registered without REMOTE_READ\n"
	"          out-of-bounds   an RDMA READ one byte past the advertised buffer\n"
	"          no-read-depth   an RDMA READ on a connection with a read depth of 0\n"
	"                          (initiator_depth 0, responder_resources 0)\n"
	"          unaligned       WRITE and READ with malloc'd buffers at odd addresses\n"
	"          dereg-other     READ through two MRs of one buffer after one of them was\n"
	"                          deregistered\n"
	"          atomic-unaligned  an atomic (fetch-add unless --op cmp-swap) 4 bytes\n"
	"                          into the word: not 8-byte aligned\n"
	"          atomic-no-access  an atomic on a word registered without REMOTE_ATOMIC\n"
	"      --json            print one JSON object with the results instead (also on\n"
	"                        failure: \"ok\": false, \"error\", "
	"\"exit_code\")\n" RC_USAGE_CLIENT_WAIT(
		RC_USAGE_LOSSY) "\nSERVER is the server's IP address (or name) on its RDMA "
				"netdev.\n"
				"Exit: 0 ok, 1 failed after connecting, 2 bad usage, 3 could not "
				"connect,\n"
				"4 an --inject lesson showed what it teaches.\n";

static const char server_usage[] =
	"usage: rdma-server [options]\n"
	"Accept RDMA connections; give each client a buffer of its own to RDMA\n"
	"WRITE and READ, and print its checksum when the client is done; a client\n"
	"that asks for atomics gets one 8-byte word (registered with REMOTE_ATOMIC),\n"
	"and the word's value is printed instead. A client silent for --timeout is\n"
	"probed (a zero-length RDMA WRITE), not dropped.\n\n"
	"  -s, --size SIZE       each client's buffer (default 1M, at most 1G); a client may\n"
	"                        ask for less, never more\n" RC_USAGE_SERVER_WAIT(MAX_CLIENTS,
										  RC_USAGE_LOSSY);

/* What the atomics allow and imply, and what each lesson needs. */
static int check_lesson_and_atomic_opts(struct rw_client_opts *o, bool op_given, bool add_given,
					char *err, size_t errlen)
{
	bool atomic_lesson =
		o->inject == RW_INJECT_ATOMIC_UNALIGNED || o->inject == RW_INJECT_ATOMIC_NO_ACCESS;

	/* An atomic lesson without --op posts a fetch-add. */
	if (atomic_lesson && !op_given)
		o->ops = RW_OP_FETCH_ADD;
	if (atomic_lesson && !rw_ops_atomic(o->ops))
		return rc_usage_error(err, errlen,
				      "--inject %s posts an atomic: use --op fetch-add or cmp-swap",
				      rw_inject_name(o->inject));
	if (add_given && !rw_ops_atomic(o->ops))
		return rc_usage_error(err, errlen, "--add is for --op fetch-add and cmp-swap");
	if (o->shared && o->ops != RW_OP_FETCH_ADD)
		return rc_usage_error(err, errlen, "--shared is for --op fetch-add");
	if (rw_ops_atomic(o->ops) && o->size)
		return rc_usage_error(err, errlen,
				      "--size is not for atomics: each works on one 8-byte word");
	/* The word's buffer; the unaligned lesson's word 4 bytes into it
	 * must lie inside, so that only its alignment is wrong. */
	if (rw_ops_atomic(o->ops))
		o->size = o->inject == RW_INJECT_ATOMIC_UNALIGNED ? RW_ATOMIC_LESSON_LEN : RW_WORD;
	if (o->inject == RW_INJECT_BAD_RKEY && !(o->ops & RW_OP_WRITE))
		return rc_usage_error(err, errlen,
				      "--inject bad-rkey posts a WRITE: use --op write or both");
	if (o->inject && o->inject != RW_INJECT_BAD_RKEY && o->inject != RW_INJECT_UNALIGNED &&
	    !atomic_lesson && !(o->ops & RW_OP_READ))
		return rc_usage_error(err, errlen,
				      "--inject %s posts a READ: use --op read or both",
				      rw_inject_name(o->inject));
	return 0;
}

int rw_parse_client(int argc, char **argv, struct rw_client_opts *o, char *err, size_t errlen)
{
	static const struct option longopts[] = {
		RC_LONGOPTS_CLIENT,
		{ "op", required_argument, NULL, 'o' },
		{ "size", required_argument, NULL, 's' },
		{ "iters", required_argument, NULL, 'n' },
		{ "depth", required_argument, NULL, 't' },
		{ "inject", required_argument, NULL, OPT_INJECT },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "add", required_argument, NULL, OPT_ADD },
		{ "shared", no_argument, NULL, OPT_SHARED },
		{ NULL, 0, NULL, 0 },
	};
	bool op_given = false, add_given = false;
	uint64_t v;
	int c, ret;

	*o = (struct rw_client_opts){
		.ops = RW_OP_BOTH, .iters = 1, .depth = RW_DEFAULT_DEPTH, .add = 1
	};
	rc_opts_init(&o->rc, 1);
	while ((ret = rc_getopt(&o->rc, argc, argv, RC_SHORTOPTS_CLIENT "o:s:n:t:", longopts,
				client_usage, &c, err, errlen)) == 1) {
		switch (c) {
		case 'o':
			if (!strcmp(optarg, "write"))
				o->ops = RW_OP_WRITE;
			else if (!strcmp(optarg, "read"))
				o->ops = RW_OP_READ;
			else if (!strcmp(optarg, "both"))
				o->ops = RW_OP_BOTH;
			else if (!strcmp(optarg, "fetch-add"))
				o->ops = RW_OP_FETCH_ADD;
			else if (!strcmp(optarg, "cmp-swap"))
				o->ops = RW_OP_CMP_SWAP;
			else
				return rc_usage_error(err, errlen,
						      "unknown --op '%s' (write, read, both, "
						      "fetch-add or cmp-swap)",
						      optarg);
			op_given = true;
			break;
		case 's':
			if (rc_parse_size(optarg, 1, RW_MAX_SIZE, &v))
				return rc_usage_error(err, errlen, "invalid size '%s' (1 to 1G)",
						      optarg);
			o->size = (uint32_t)v;
			break;
		case 'n':
			if (rc_parse_uint(optarg, 1, RW_MAX_ITERS, &o->iters))
				return rc_usage_error(err, errlen,
						      "invalid iteration count '%s' (1 to %u)",
						      optarg, RW_MAX_ITERS);
			break;
		case 't':
			if (rc_parse_uint(optarg, 1, RW_MAX_DEPTH, &v))
				return rc_usage_error(err, errlen, "invalid depth '%s' (1 to %u)",
						      optarg, RW_MAX_DEPTH);
			o->depth = (unsigned)v;
			break;
		case OPT_INJECT:
			o->inject = rw_inject_parse(optarg);
			if (o->inject == RW_INJECT_COUNT)
				return rc_usage_error(
					err, errlen,
					"unknown --inject '%s' (bad-rkey, no-remote-read, "
					"out-of-bounds, no-read-depth, unaligned, "
					"dereg-other, atomic-unaligned or atomic-no-access)",
					optarg);
			break;
		case OPT_JSON: o->json = true; break;
		case OPT_ADD:
			if (rc_parse_uint(optarg, 1, UINT32_MAX, &o->add))
				return rc_usage_error(err, errlen,
						      "invalid --add '%s' (1 to 4294967295)",
						      optarg);
			add_given = true;
			break;
		case OPT_SHARED: o->shared = true; break;
		}
	}
	ret = rc_opts_end(&o->rc, ret, argc, argv, RC_OPERANDS_SERVER, &o->server, err, errlen);
	if (ret)
		return ret;
	return check_lesson_and_atomic_opts(o, op_given, add_given, err, errlen);
}

int rw_parse_server(int argc, char **argv, struct rw_server_opts *o, char *err, size_t errlen)
{
	static const struct option longopts[] = {
		RC_LONGOPTS_SERVER,
		{ "size", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	int c, ret;

	*o = (struct rw_server_opts){ .size = RW_DEFAULT_SIZE };
	rc_opts_init(&o->rc, MAX_CLIENTS);
	while ((ret = rc_getopt(&o->rc, argc, argv, RC_SHORTOPTS_SERVER "s:", longopts,
				server_usage, &c, err, errlen)) == 1) {
		if (c == 's') {
			if (rc_parse_size(optarg, 1, RW_MAX_SIZE, &v))
				return rc_usage_error(err, errlen, "invalid size '%s' (1 to 1G)",
						      optarg);
			o->size = (uint32_t)v;
		}
	}
	return rc_opts_end(&o->rc, ret, argc, argv, RC_OPERANDS_NONE, NULL, err, errlen);
}
