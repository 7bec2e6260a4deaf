// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: 03's decoders and the checks a receiver applies to
 * what the peer claims: HELLO and JOIN, every control message (CHALLENGE and the
 * REQUEST's proof field included), the immediate of a
 * put chunk, CHUNK and CREDIT against the transfer's state, file names,
 * and the server's limits. Any input must be either rejected or decoded
 * into values inside the ranges xfer-msg.h documents; an accepted message
 * must be exactly the encoding of what was decoded (no byte went unchecked);
 * and an accepted chunk, slot or credit must lie inside the ring and the
 * file.
 *
 * Input layout: byte 0 picks the check, the rest is its input (see each
 * function).
 */
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "xfer-msg.h"
#include "xfer-name.h"
#include "xfer-opts.h"

static uint16_t rd16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return v;
}

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static void check_err(const char *err, size_t len)
{
	CHECK(memchr(err, '\0', len) != NULL);
}

/* The state a receiver is in when it checks a chunk: a transfer of `size`
 * bytes in chunks of `chunk` over `depth` slots, expecting chunk `want`
 * next; taken from 16 bytes of input (le32 chunk, le16 depth, le64 size,
 * u8 want, u8 flags for the caller) and bent into the ranges a HELLO and
 * a REQUEST allow. */
struct state {
	uint64_t size, want;
	uint32_t chunk;
	uint16_t depth;
};

static void get_state(const uint8_t *p, struct state *st)
{
	uint64_t n;

	st->chunk = XFER_MIN_CHUNK + rd32(p) % (XFER_MAX_CHUNK - XFER_MIN_CHUNK + 1);
	st->depth = (uint16_t)(1 + rd16(p + 4) % XFER_MAX_DEPTH);
	st->size = rd64(p + 6) & (uint64_t)XFER_MAX_SIZE;
	/* The chunk a receiver expects next: usually inside the file (as in
	 * a real transfer), sometimes just past its end or far beyond. */
	n = xfer_nchunks(st->size, st->chunk);
	st->want = p[14] == 0xff ? rd64(p + 6) : p[14] % (n + 1);
}

/* 0, too: a get's JOIN from the data connection's private data. */
static void fuzz_join(const uint8_t *msg, size_t len)
{
	uint8_t token[XFER_TOKEN_LEN], again[XFER_JOIN_LEN];
	char err[200];

	if (xfer_join_unpack(msg, len, token, err, sizeof(err))) {
		check_err(err, sizeof(err));
		return;
	}
	CHECK(len >= XFER_JOIN_LEN);
	CHECK(xfer_join_pack(again, token) == XFER_JOIN_LEN);
	CHECK(memcmp(again, msg, XFER_JOIN_LEN) == 0);
}

/* 0: HELLO (and JOIN) from connect private data. */
static void fuzz_hello(const uint8_t *msg, size_t len)
{
	uint8_t again[XFER_HELLO_LEN];
	struct xfer_hello h;
	char err[200];

	fuzz_join(msg, len);
	if (xfer_hello_unpack(msg, len, &h, err, sizeof(err))) {
		check_err(err, sizeof(err));
		return;
	}
	CHECK(len >= XFER_HELLO_LEN);
	CHECK(h.op == XFER_PUT || h.op == XFER_GET);
	CHECK(h.version == XFER_PROTO_VERSION);
	CHECK(h.depth >= 1 && h.depth <= XFER_MAX_DEPTH);
	CHECK(h.chunk >= XFER_MIN_CHUNK && h.chunk <= XFER_MAX_CHUNK);
	CHECK(xfer_hello_pack(again, &h) == XFER_HELLO_LEN);
	CHECK(memcmp(again, msg, XFER_HELLO_LEN) == 0);
}

/* 1: any control message. Bytes 0..3: the expected seq. */
static void fuzz_msg(const uint8_t *p, size_t len)
{
	uint8_t again[XFER_MSG_MAX];
	struct xfer_msg m;
	char err[200], desc[512];
	uint32_t want_seq;
	size_t i;
	bool zero;

	if (len < 4)
		return;
	want_seq = rd32(p);
	p += 4;
	len -= 4;
	if (xfer_msg_unpack(p, len, want_seq, &m, err, sizeof(err))) {
		check_err(err, sizeof(err));
		return;
	}
	CHECK(len >= sizeof(struct rc_hdr) && len <= XFER_MSG_MAX);
	CHECK(m.seq == want_seq);
	switch (m.type) {
	case XFER_T_REQUEST:
		CHECK(m.u.request.size <= XFER_MAX_SIZE);
		CHECK((m.u.request.flags & ~(XFER_REQ_F_FORCE | XFER_REQ_F_PROOF | XFER_REQ_F_COPY |
					     XFER_REQ_F_DIRECT | XFER_REQ_F_ZEROCOPY)) == 0);
		/* The copy and the zero-copy path exclude each other. */
		CHECK((m.u.request.flags & (XFER_REQ_F_COPY | XFER_REQ_F_ZEROCOPY)) !=
		      (XFER_REQ_F_COPY | XFER_REQ_F_ZEROCOPY));
		/* No proof flag, no proof: nothing hides in those bytes. */
		for (zero = true, i = 0; i < XFER_PROOF_LEN; i++)
			zero = zero && !m.u.request.proof[i];
		CHECK(zero || (m.u.request.flags & XFER_REQ_F_PROOF));
		CHECK(m.u.request.name_len >= 1 && m.u.request.name_len <= XFER_NAME_MAX);
		/* Terminated, so the name is never read past its end. */
		CHECK(m.u.request.name[m.u.request.name_len] == '\0');
		break;
	case XFER_T_ACCEPT:
		CHECK(m.u.accept.size <= XFER_MAX_SIZE);
		CHECK((m.u.accept.flags & ~(XFER_ACC_F_ZEROCOPY | XFER_ACC_F_INPLACE)) == 0);
		break;
	case XFER_T_ERROR:
		/* Printed as is by the peer: terminated, no control bytes. */
		CHECK(memchr(m.u.error.text, '\0', sizeof(m.u.error.text)) != NULL);
		for (i = 0; m.u.error.text[i]; i++)
			CHECK((uint8_t)m.u.error.text[i] >= 0x20 && m.u.error.text[i] != 0x7f);
		break;
	case XFER_T_CHUNK:
		/* The client's READ of len bytes at addr never wraps. */
		CHECK(m.u.chunk.addr + m.u.chunk.len >= m.u.chunk.addr);
		break;
	case XFER_T_CREDIT: break; /* ranges: xfer_check_chunk / _credit */
	case XFER_T_DONE:
	case XFER_T_COMMITTED: CHECK(m.u.done.size <= XFER_MAX_SIZE); break;
	case XFER_T_CHALLENGE:
		CHECK(m.u.challenge.version == XFER_PROTO_VERSION);
		CHECK((m.u.challenge.flags & ~XFER_CH_F_SECRET) == 0);
		break;
	default: CHECK(0); /* an unknown type must never be accepted */
	}
	CHECK(xfer_msg_pack(again, want_seq, &m) == len);
	CHECK(memcmp(again, p, len) == 0);
	xfer_msg_describe(&m, desc, sizeof(desc));
	check_err(desc, sizeof(desc));
}

/* 2: the immediate and byte_len of a put chunk. 16 bytes of state, then
 * be32 imm, u32 byte_len. */
static void fuzz_imm(const uint8_t *p, size_t len)
{
	struct state st;
	uint32_t imm, byte_len, seq24;
	uint16_t slot;
	char err[200];

	if (len < 24)
		return;
	get_state(p, &st);
	imm = rd32(p + 16);
	byte_len = rd32(p + 20);
	if (xfer_check_imm(imm, byte_len, st.want, st.size, st.chunk, st.depth, err, sizeof(err))) {
		check_err(err, sizeof(err));
		return;
	}
	xfer_imm_unpack(imm, &seq24, &slot);
	/* Accepted: the slot is inside the ring, the one this chunk must
	 * use, and the data lies inside the announced file and one slot. */
	CHECK(slot < st.depth && slot == st.want % st.depth);
	CHECK(seq24 == (st.want & 0xffffffu));
	CHECK(st.want < xfer_nchunks(st.size, st.chunk));
	CHECK(byte_len >= 1 && byte_len <= st.chunk);
	CHECK(st.want * st.chunk + byte_len <= st.size);
	CHECK(xfer_imm_pack(st.want, slot) == imm);
}

/* 3: a CHUNK announced by the server of a get. 16 bytes of state, then
 * the decoded fields: u64 seq, u64 offset, u32 len, u16 slot. */
static void fuzz_chunk(const uint8_t *p, size_t len)
{
	struct xfer_chunk ch;
	struct state st;
	char err[200];

	if (len < 38)
		return;
	get_state(p, &st);
	ch.seq = rd64(p + 16);
	ch.offset = rd64(p + 24);
	ch.len = rd32(p + 32);
	ch.slot = rd16(p + 36);
	if (p[15] & 1) /* often the right seq, so the other checks run */
		ch.seq = st.want;
	if (p[15] & 2)
		ch.offset = st.want * st.chunk;
	if (xfer_check_chunk(&ch, st.want, st.size, st.chunk, st.depth, err, sizeof(err))) {
		check_err(err, sizeof(err));
		return;
	}
	/* The client will RDMA READ len bytes from slot `slot` of the ring
	 * and pwrite them at `offset`: both must be inside. */
	CHECK(ch.seq == st.want);
	CHECK(ch.slot < st.depth);
	CHECK(ch.len >= 1 && ch.len <= st.chunk);
	CHECK(ch.offset <= st.size && ch.len <= st.size - ch.offset);
	CHECK(ch.offset == ch.seq * st.chunk);
}

/* 4: a CREDIT. 16 bytes of state, u64 sent, u64 seq, u16 slot. */
static void fuzz_credit(const uint8_t *p, size_t len)
{
	struct xfer_credit cr;
	struct state st;
	uint64_t sent;
	char err[200];

	if (len < 34)
		return;
	get_state(p, &st);
	sent = rd64(p + 16);
	if (p[15] & 1) /* a plausible number of chunks sent so far */
		sent = st.want + p[15] % (st.depth + 1u);
	cr.seq = rd64(p + 24);
	cr.slot = rd16(p + 32);
	if (p[15] & 2)
		cr.seq = st.want;
	if (xfer_check_credit(&cr, st.want, sent, st.depth, err, sizeof(err))) {
		check_err(err, sizeof(err));
		return;
	}
	/* Only a slot that was really handed out comes back, in order. */
	CHECK(cr.seq == st.want && cr.seq < sent);
	CHECK(cr.slot < st.depth && cr.slot == cr.seq % st.depth);
}

/* 5: a file name (the bytes as they came), and quoting it for a log. */
static void fuzz_name(const uint8_t *p, size_t len)
{
	char err[200], q[400];
	size_t i;

	if (xfer_name_check((const char *)p, len, err, sizeof(err)) == 0) {
		/* Accepted: a plain name that cannot leave the directory. */
		CHECK(len >= 1 && len <= XFER_NAME_MAX);
		CHECK(!(len == 1 && p[0] == '.') && !(len == 2 && p[0] == '.' && p[1] == '.'));
		for (i = 0; i < len; i++)
			CHECK(p[i] != '/' && p[i] >= 0x20 && p[i] != 0x7f);
		CHECK(!(len >= 6 && p[0] == '.' && !memcmp(p + len - 5, ".part", 5)));
	} else {
		check_err(err, sizeof(err));
	}
	xfer_quote(q, sizeof(q), (const char *)p, len);
	CHECK(memchr(q, '\0', sizeof(q)) != NULL);
	for (i = 0; q[i]; i++)
		CHECK(q[i] >= 0x20 && q[i] < 0x7f);
}

/* 6: the server's limits. HELLO fields, the limits, max_msg_sz. */
static void fuzz_limits(const uint8_t *p, size_t len)
{
	struct xfer_limits lim;
	struct xfer_hello h;
	uint32_t max_msg_sz;
	char err[300];

	if (len < 24)
		return;
	h.op = XFER_PUT;
	h.chunk = rd32(p);
	h.depth = rd16(p + 4);
	lim.max_chunk = rd32(p + 6);
	lim.max_depth = rd16(p + 10);
	lim.max_mem = rd64(p + 12);
	max_msg_sz = rd32(p + 20);
	if (xfer_check_limits(&h, &lim, max_msg_sz, err, sizeof(err))) {
		check_err(err, sizeof(err));
		return;
	}
	CHECK(h.chunk <= lim.max_chunk && h.chunk <= max_msg_sz);
	CHECK(h.depth <= lim.max_depth);
	CHECK((uint64_t)h.chunk * h.depth <= lim.max_mem);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	switch (data[0] % 7) {
	case 0: fuzz_hello(data + 1, size - 1); break;
	case 1: fuzz_msg(data + 1, size - 1); break;
	case 2: fuzz_imm(data + 1, size - 1); break;
	case 3: fuzz_chunk(data + 1, size - 1); break;
	case 4: fuzz_credit(data + 1, size - 1); break;
	case 5: fuzz_name(data + 1, size - 1); break;
	case 6: fuzz_limits(data + 1, size - 1); break;
	}
	return 0;
}
