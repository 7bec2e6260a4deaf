// SPDX-License-Identifier: MIT
/*
 * hostile - a test client that breaks the protocol of 01, 02 or 03 on
 * purpose, one way per connection, and reports what the server did.
 *
 * Each case connects anew and then misbehaves once: a connect request
 * whose HELLO has a wrong magic, version, type, flags or length, or absurd
 * sizes and depths; or, after a valid HELLO, a control message that is
 * malformed, truncated, oversized, out of sequence or of the wrong type; a
 * file name without its terminating NUL or with a NUL inside; an RDMA
 * WRITE or READ outside the buffer the server advertised; a chunk in the
 * wrong ring slot or longer than announced; a credit for a slot it never
 * had. The server passes a case when it refuses or drops that connection
 * (REJECTED, its ERROR message, or DISCONNECTED) within --timeout.
 *
 * Output, one line per case:
 *   case NAME port P: ok|FAILED: what happened
 *   expect P REGEX
 * P is our local port, which the server's log names ("client ADDR port
 * P: ..."), different for every case of a run; REGEX is what that log
 * line should say. tests/e2e/06-hostile.sh
 * checks those lines and that the server keeps serving others.
 *
 * Exit: 0 every case was refused or dropped; 1 the server accepted or
 * kept a connection it should not have; 2 bad usage; 3 could not connect.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic.h"
#include "hostile.h"
#include "rw.h"

void note(struct hc *h, const char *fmt, ...)
{
	size_t n = strlen(h->got);
	va_list ap;

	if (n && n + 2 < sizeof(h->got)) {
		memcpy(h->got + n, "; ", 3);
		n += 2;
	}
	va_start(ap, fmt);
	vsnprintf(h->got + n, sizeof(h->got) - n, fmt, ap);
	va_end(ap);
}

/* ------------------------------------------------------------------ */
/* Connecting, sending, waiting                                        */
/* ------------------------------------------------------------------ */

/* The local ports of this run's connections so far (see hc_connect). */
static uint8_t ports_used[65536 / 8];

static bool port_used(unsigned port)
{
	return ports_used[port / 8] & (1u << (port % 8));
}

static void mark_port(unsigned port)
{
	ports_used[port / 8] |= (uint8_t)(1u << (port % 8));
}

/* A rejection is a pass for a case about the connect request. */
int hc_connect(struct hc *h, const void *priv, uint8_t priv_len, uint8_t initiator_depth)
{
	struct ibv_qp_cap cap = {
		.max_send_wr = 16, .max_recv_wr = NRECV, .max_send_sge = 1, .max_recv_sge = 1
	};
	unsigned i, tries;
	int ret;

	/*
	 * The port names this case in the server's log, so no two cases of
	 * a run may share one. rdma_cm picks a random free port for every
	 * connection (avoiding only the one it handed out last), so among
	 * the 51 cases of 03 two share a port in ~4% of runs (28232 ports
	 * in Linux's default range); the server's log then shows two cases
	 * under one port. A port used before: resolve again, which draws
	 * another.
	 */
	for (tries = 0;; tries++) {
		rc_conn_init(&h->c, "hostile", h->e->verbose, h->e->timeout_ms, -1);
		ret = rc_client_resolve(&h->c, h->e->host, h->e->port);
		if (ret)
			return ret;
		h->port = ntohs(rdma_get_src_port(h->c.id));
		if (!port_used(h->port) || tries == 100)
			break;
		rc_trace(&h->c.log, "port %u was used by an earlier case: again", h->port);
		rc_conn_destroy(&h->c);
	}
	if (port_used(h->port))
		return rc_fail(&h->c.log, EADDRINUSE,
			       "no port unused by earlier cases in 100 tries");
	mark_port(h->port);
	ret = rc_create_qp(&h->c, &cap);
	if (!ret)
		ret = rc_buf_alloc(&h->c, NRECV * RX_SLOT, IBV_ACCESS_LOCAL_WRITE, &h->rx);
	/* LOCAL_WRITE: our RDMA READs land here too. */
	if (!ret)
		ret = rc_buf_alloc(&h->c, TX_LEN + X_MSGS * XFER_MSG_MAX, IBV_ACCESS_LOCAL_WRITE,
				   &h->tx);
	for (i = 0; !ret && i < NRECV; i++)
		ret = rc_post_recv(&h->c, h->rx, i * RX_SLOT, RX_SLOT, WR_RX + i);
	if (ret)
		return ret;
	ret = rc_client_connect(&h->c, priv, priv_len, initiator_depth, 0);
	if (ret == -ECONNREFUSED) {
		note(h, "rejected: %s", h->c.log.err);
		h->refused = true;
		return 1;
	}
	if (ret)
		return ret;
	h->connected = true;
	return 0;
}

/* SEND len bytes of tx from offset off (signalled). */
int hc_send(struct hc *h, size_t off, size_t len)
{
	return rc_post_send(&h->c, h->tx, off, len, WR_TX + h->next_tx++, true);
}

int hc_rdma(struct hc *h, enum ibv_wr_opcode op, size_t len, uint64_t raddr, uint32_t rkey,
	    uint32_t imm)
{
	return rc_post_rdma(&h->c, op, h->tx, 0, len, raddr, rkey, imm, WR_TX + h->next_tx++, true);
}

/* A failed completion or a lost connection: remember it. */
static void hc_lost(struct hc *h, int ret)
{
	if (ret == -ECONNRESET && h->c.peer_disconnected) {
		note(h, "the server disconnected");
		h->refused = true;
	} else if (ret == -ETIMEDOUT) {
		note(h, "the connection was still open after %d ms", h->e->timeout_ms);
	} else {
		note(h, "%s", h->c.log.err);
	}
}

/* Look at a message from the server: keep it; note an ERROR (03). */
static void hc_look(struct hc *h, const struct ibv_wc *wc)
{
	const uint8_t *p = (const uint8_t *)h->rx->addr + (wc->wr_id - WR_RX) * RX_SLOT;
	struct xfer_msg m;
	struct rc_msg hd;
	char err[200];

	h->last_len = wc->byte_len < sizeof(h->last) ? wc->byte_len : sizeof(h->last);
	memcpy(h->last, p, h->last_len);
	if (rc_hdr_unpack(p, wc->byte_len, &hd, err, sizeof(err)) == 0 && hd.type == XFER_T_ERROR &&
	    xfer_msg_unpack(p, wc->byte_len, hd.seq, &m, err, sizeof(err)) == 0) {
		note(h, "server sent ERROR '%s'", m.u.error.text);
		h->refused = true;
	}
	if (rc_hdr_unpack(p, wc->byte_len, &hd, err, sizeof(err)) == 0 && hd.type == XFER_T_ACCEPT)
		h->accepted = true;
}

/*
 * The next message from the server (its receive is posted again). Our
 * own completions are skipped; a failed one is noted. Returns 0, or a
 * negative errno after noting why.
 */
int hc_recv(struct hc *h)
{
	struct ibv_wc wc;
	int ret;

	if (h->pending) { /* taken while hc_wait_own waited */
		h->pending = false;
		return 0;
	}
	for (;;) {
		ret = rc_next_wc(&h->c, &wc);
		if (ret == -EIO && wc.wr_id >= WR_TX) {
			note(h, "our work request failed: %s", ibv_wc_status_str(wc.status));
			continue;
		}
		if (ret) {
			hc_lost(h, ret);
			return ret;
		}
		if (wc.wr_id < WR_RX || wc.wr_id >= WR_RX + NRECV)
			continue; /* one of our SENDs, WRITEs or READs completed */
		hc_look(h, &wc);
		ret = rc_post_recv(&h->c, h->rx, (wc.wr_id - WR_RX) * RX_SLOT, RX_SLOT, wc.wr_id);
		if (ret) {
			note(h, "%s", h->c.log.err);
			return ret;
		}
		return 0;
	}
}

int hc_wait_own(struct hc *h, uint64_t wr_id, enum ibv_wc_status *st)
{
	struct ibv_wc wc;
	int ret;

	for (;;) {
		ret = rc_next_wc(&h->c, &wc);
		if (ret && ret != -EIO) {
			hc_lost(h, ret);
			return ret;
		}
		if (wc.wr_id == wr_id) {
			*st = wc.status;
			return 0;
		}
		if (wc.wr_id >= WR_TX) {
			if (ret)
				note(h, "our work request failed: %s",
				     ibv_wc_status_str(wc.status));
			continue;
		}
		if (ret)
			continue; /* a receive flushed: the QP is in the error state */
		if (h->pending) {
			note(h, "%s", "a second message from the server while we waited");
			return -EPROTO;
		}
		hc_look(h, &wc);
		ret = rc_post_recv(&h->c, h->rx, (wc.wr_id - WR_RX) * RX_SLOT, RX_SLOT, wc.wr_id);
		if (ret) {
			note(h, "%s", h->c.log.err);
			return ret;
		}
		h->pending = true;
	}
}

/* Wait (bounded) until the server drops the connection. Whatever arrives
 * meanwhile is noted (an ERROR of 03 counts as refusing). */
void hc_wait_dropped(struct hc *h)
{
	uint64_t end = rc_now_us() + (uint64_t)h->e->timeout_ms * 1000u;
	struct ibv_wc wc;
	int ret;

	while (rc_now_us() < end) {
		ret = rc_next_wc(&h->c, &wc);
		if (ret == 0 && wc.wr_id >= WR_RX && wc.wr_id < WR_RX + NRECV &&
		    (wc.opcode == IBV_WC_RECV)) {
			hc_look(h, &wc);
			continue;
		}
		if (ret == 0)
			continue;
		if (ret == -EIO && wc.status != IBV_WC_WR_FLUSH_ERR) {
			note(h, "our work request failed: %s", ibv_wc_status_str(wc.status));
			continue;
		}
		if (ret == -EIO)
			continue; /* flushed: the QP is in the error state */
		hc_lost(h, ret);
		return;
	}
	note(h, "the connection was still open after %d ms", h->e->timeout_ms);
}

/* ------------------------------------------------------------------ */
/* Bending messages                                                    */
/* ------------------------------------------------------------------ */

static void put32(uint8_t *p, uint32_t v)
{
	v = htobe32(v);
	memcpy(p, &v, 4);
}

static void bend_hdr(uint8_t *p, enum bend b)
{
	switch (b) {
	case B_NONE: break;
	case B_MAGIC: p[0] ^= 0x20; break;
	case B_VERSION: p[4] = RC_VERSION + 1; break;
	case B_FLAGS: p[7] = 0x80; break;
	case B_LEN_SHORT: put32(p + 8, 2); break;
	case B_LEN_HUGE: put32(p + 8, 1000000); break;
	case B_SEQ: put32(p + 12, 77); break;
	case B_TYPE_UNKNOWN: p[5] = 0x7e; break;
	}
}

/* A connect-request case: connect with this private data; passes if the
 * server rejects it. */
static int connect_bad(struct hc *h, const uint8_t *priv, uint8_t len, uint8_t initiator_depth)
{
	int ret = hc_connect(h, priv, len, initiator_depth);

	if (ret == 1)
		return 0;
	if (ret)
		return ret;
	note(h, "the server ACCEPTED the connection");
	hc_wait_dropped(h); /* it may still drop us later: say so */
	return 0;
}

/* ------------------------------------------------------------------ */
/* 01                                                                  */
/* ------------------------------------------------------------------ */

#define B_MAX 64 /* the max_payload our 01 HELLOs announce */

static int b_hello(struct hc *h, int arg)
{
	uint8_t p[56] = { 0 };
	uint8_t len = BASIC_HELLO_LEN;

	basic_hello_pack(p, B_MAX);
	switch (arg) {
	case 100: len = 0; break;		    /* no HELLO at all */
	case 101: p[5] = RW_T_HELLO; break;	    /* 02's HELLO type */
	case 102: put32(p + 16, 0); break;	    /* max_payload 0 */
	case 103: put32(p + 16, UINT32_MAX); break; /* 4 GiB payloads */
	case 104:				    /* a body longer than a HELLO's */
		put32(p + 8, 40);
		len = sizeof(p);
		break;
	default: bend_hdr(p, (enum bend)arg); break;
	}
	return connect_bad(h, p, len, 0);
}

/* Connect properly, then SEND one DATA bent as arg says. */
static int b_data(struct hc *h, int arg)
{
	uint8_t hello[BASIC_HELLO_LEN], *p;
	size_t len;
	int ret;

	basic_hello_pack(hello, B_MAX);
	ret = hc_connect(h, hello, sizeof(hello), 0);
	if (ret)
		return ret < 0 ? ret : 0;
	p = h->tx->addr;
	len = basic_msg_pack(p, BASIC_T_DATA, 0, "hostile!", 8);
	switch (arg) {
	case 100: p[5] = BASIC_T_REPLY; break; /* the server's type */
	case 101: len = 10; break;	       /* shorter than a header */
	case 102: /* empty payload */ len = basic_msg_pack(p, BASIC_T_DATA, 0, "", 0); break;
	case 103: /* more than the HELLO allowed: beyond its receive buffer */
		memset(p + 16, 'x', 4000);
		len = basic_msg_pack(p, BASIC_T_DATA, 0, p + 16, 4000);
		break;
	default: bend_hdr(p, (enum bend)arg); break;
	}
	ret = hc_send(h, 0, len);
	if (ret)
		return ret;
	hc_wait_dropped(h);
	return 0;
}

static const struct kase cases01[] = {
	{ "no-hello", b_hello, 100, "rejected: .*(private data|shorter|bad magic|HELLO)" },
	{ "hello-bad-magic", b_hello, B_MAGIC, "rejected: bad magic" },
	{ "hello-bad-version", b_hello, B_VERSION, "rejected: protocol version 2" },
	{ "hello-unknown-flags", b_hello, B_FLAGS, "rejected: unknown flags" },
	{ "hello-wrong-type", b_hello, 101, "rejected: expected a HELLO" },
	{ "hello-truncated", b_hello, B_LEN_SHORT, "rejected: expected a HELLO of 4 bytes" },
	{ "hello-oversized", b_hello, 104, "rejected: expected a HELLO of 4 bytes" },
	{ "hello-length-beyond-data", b_hello, B_LEN_HUGE, "rejected: header says 1000000" },
	{ "hello-payload-0", b_hello, 102, "rejected: payload size 0 is outside" },
	{ "hello-payload-4g", b_hello, 103, "rejected: payload size 4294967295 is outside" },
	{ "data-bad-magic", b_data, B_MAGIC, "bad message from client: bad magic" },
	{ "data-bad-version", b_data, B_VERSION, "bad message from client: protocol version" },
	{ "data-unknown-flags", b_data, B_FLAGS, "bad message from client: unknown flags" },
	{ "data-wrong-type", b_data, 100, "bad message from client: message type 0x12" },
	{ "data-unknown-type", b_data, B_TYPE_UNKNOWN, "bad message from client: message type" },
	{ "data-wrong-seq", b_data, B_SEQ, "bad message from client: sequence number 77" },
	{ "data-truncated", b_data, 101, "bad message from client: message of 10 bytes" },
	{ "data-length-short", b_data, B_LEN_SHORT, "bad message from client: header says 2" },
	{ "data-length-huge", b_data, B_LEN_HUGE, "bad message from client: header says 1000000" },
	{ "data-empty", b_data, 102, "bad message from client: payload of 0 bytes" },
	{ "data-oversized", b_data, 103,
	  "(local length|local QP operation) error.*larger than the receive buffer" },
	{ NULL, NULL, 0, NULL },
};

/* ------------------------------------------------------------------ */
/* 02                                                                  */
/* ------------------------------------------------------------------ */

#define R_LEN 4096u /* the buffer our 02 HELLOs ask for */

static int r_hello(struct hc *h, int arg)
{
	struct rw_hello hello = { .len = R_LEN, .ops = RW_OP_BOTH, .read_depth = 4 };
	uint8_t p[56] = { 0 }, len = RW_HELLO_LEN, depth = 4;
	int ret;

	switch (arg) {
	case 100: hello.len = 0x80000000u; break; /* 2 GiB */
	case 101: hello.len = 64u << 20; break;	  /* more than the server's -s */
	case 102: hello.ops = 0; break;
	case 103: hello.ops = 7; break;
	case 104: hello.read_depth = 0; break;	  /* READ without a read depth */
	case 105: hello.ops = RW_OP_WRITE; break; /* a read depth without READ */
	case 106: depth = 0; break;		  /* READ, initiator depth 0 */
	}
	rw_hello_pack(p, &hello);
	switch (arg) {
	case 107: /* not hostile: a control (see below) */ break;
	case 108: p[23] = 1; break;   /* reserved byte (byte 22 is the lesson) */
	case 111: p[22] = 200; break; /* a lesson that does not exist */
	case 109: len = 0; break;     /* no HELLO */
	case 110: p[5] = XFER_T_HELLO; break;
	default:
		if (arg < 100)
			bend_hdr(p, (enum bend)arg);
		break;
	}
	if (arg != 107)
		return connect_bad(h, p, len, depth);
	/* The valid HELLO all the cases above start from is accepted: they
	 * are refused for what they bend, nothing else. */
	ret = hc_connect(h, p, len, depth);
	if (ret)
		return ret < 0 ? ret : 0;
	note(h, "accepted, as it should be");
	h->refused = true;
	return 0;
}

/* Connect (ops as arg asks), take the BUF, then misbehave. */
static int r_after_buf(struct hc *h, int arg)
{
	struct rw_hello hello = { .len = R_LEN, .ops = RW_OP_BOTH, .read_depth = 4 };
	uint8_t priv[RW_HELLO_LEN], *p;
	struct rw_sum done = { .checksum = 1, .len = R_LEN };
	struct rw_buf b;
	char err[200];
	size_t len;
	int ret;

	if (arg == 200)
		hello = (struct rw_hello){ .len = R_LEN, .ops = RW_OP_READ, .read_depth = 4 };
	rw_hello_pack(priv, &hello);
	ret = hc_connect(h, priv, sizeof(priv), 4);
	if (ret)
		return ret < 0 ? ret : 0;
	p = h->tx->addr;
	ret = hc_recv(h);
	if (ret)
		return 0; /* noted: the server dropped us before BUF */
	if (rw_buf_unpack(h->last, h->last_len, 0, &b, err, sizeof(err))) {
		note(h, "bad BUF from the server: %s", err);
		return 0;
	}
	switch (arg) {
	case 200: /* WRITE into a buffer offered for READ only */
	case 201: /* WRITE across the end of the buffer */
		ret = hc_rdma(h, IBV_WR_RDMA_WRITE, 256,
			      arg == 200 ? b.rb.addr : b.rb.addr + b.rb.len - 128, b.rb.rkey, 0);
		break;
	case 202: /* READ from before the buffer */
		ret = hc_rdma(h, IBV_WR_RDMA_READ, 256, b.rb.addr - 128, b.rb.rkey, 0);
		break;
	case 203: /* WRITE with an rkey we were never given */
		ret = hc_rdma(h, IBV_WR_RDMA_WRITE, 256, b.rb.addr, b.rb.rkey ^ 0x5a5a00, 0);
		break;
	default: /* a bent DONE */
		len = rw_sum_pack(p, RW_T_DONE, 1, &done);
		if (arg == 100)
			p[5] = RW_T_RESULT; /* the server's type */
		else if (arg == 101)
			len = 10;
		else if (arg == 102)
			len = RW_CTRL_MAX + 100; /* beyond its receive buffer */
		else if (arg == 103)
			len = rw_sum_pack(p, RW_T_DONE, 1, &(struct rw_sum){ 1, R_LEN / 2 });
		else if (arg == 104)
			p[31] = 1; /* reserved */
		else if (arg == 105)
			len = rw_sum_pack(p, RW_T_DONE, 1, &(struct rw_sum){ 1, 0 });
		else
			bend_hdr(p, (enum bend)arg);
		ret = hc_send(h, 0, len);
		break;
	}
	if (ret)
		return ret;
	hc_wait_dropped(h);
	return 0;
}

#define R_FLUSHED "flushed: the connection is in the error state"

static const struct kase cases02[] = {
	{ "valid-hello-accepted", r_hello, 107, NULL },
	{ "no-hello", r_hello, 109, "rejected: .*(private data|shorter|bad magic|HELLO)" },
	{ "hello-bad-magic", r_hello, B_MAGIC, "rejected: bad magic" },
	{ "hello-bad-version", r_hello, B_VERSION, "rejected: protocol version 2" },
	{ "hello-unknown-flags", r_hello, B_FLAGS, "rejected: unknown flags" },
	{ "hello-wrong-type", r_hello, 110, "rejected: expected a HELLO" },
	{ "hello-truncated", r_hello, B_LEN_SHORT, "rejected: expected a HELLO of 8 bytes" },
	{ "hello-length-beyond-data", r_hello, B_LEN_HUGE, "rejected: header says 1000000" },
	{ "hello-seq", r_hello, B_SEQ, "rejected: HELLO with sequence number 77" },
	{ "hello-reserved", r_hello, 108, "rejected: HELLO with a non-zero reserved byte" },
	{ "hello-lesson-200", r_hello, 111, "rejected: unknown lesson 200" },
	{ "hello-len-2g", r_hello, 100, "rejected: asks for a buffer of 2147483648 bytes" },
	{ "hello-len-over-server", r_hello, 101, "rejected: asks for a 67108864-byte buffer" },
	{ "hello-ops-0", r_hello, 102, "rejected: unknown operations 0x00" },
	{ "hello-ops-7", r_hello, 103, "rejected: unknown operations 0x07" },
	{ "hello-read-depth-0", r_hello, 104, "rejected: RDMA READ with a read depth of 0" },
	{ "hello-depth-without-read", r_hello, 105, "rejected: read depth 4 without RDMA READ" },
	{ "read-with-initiator-depth-0", r_hello, 106, "rejected: .*initiator_depth 0" },
	{ "done-bad-magic", r_after_buf, B_MAGIC, "bad DONE from the client: bad magic" },
	{ "done-bad-version", r_after_buf, B_VERSION, "bad DONE from the client: protocol" },
	{ "done-wrong-type", r_after_buf, 100, "bad DONE from the client: message type 0x23" },
	{ "done-wrong-seq", r_after_buf, B_SEQ, "bad DONE from the client: sequence number 77" },
	{ "done-truncated", r_after_buf, 101, "bad DONE from the client: message of 10 bytes" },
	{ "done-length-huge", r_after_buf, B_LEN_HUGE, "bad DONE from the client: header says" },
	{ "done-oversized", r_after_buf, 102,
	  "(local length|local QP operation) error.*larger than the receive buffer" },
	{ "done-wrong-length", r_after_buf, 103, "DONE is about 2048 bytes, the buffer has 4096" },
	{ "done-length-0", r_after_buf, 105, "bad DONE from the client: length 0 is outside" },
	{ "done-reserved", r_after_buf, 104, "bad DONE from the client: .*reserved" },
	{ "write-to-read-only-buffer", r_after_buf, 200, R_FLUSHED },
	{ "write-past-buffer-end", r_after_buf, 201, R_FLUSHED },
	{ "read-before-buffer-start", r_after_buf, 202, R_FLUSHED },
	{ "write-with-wrong-rkey", r_after_buf, 203, R_FLUSHED },
	{ NULL, NULL, 0, NULL },
};

/* ------------------------------------------------------------------ */
/* 03                                                                  */
/* ------------------------------------------------------------------ */

static int x_hello(struct hc *h, int arg)
{
	struct xfer_hello hello = {
		.op = XFER_PUT, .version = XFER_PROTO_VERSION, .depth = X_DEPTH, .chunk = X_CHUNK
	};
	uint8_t p[56] = { 0 }, len = XFER_HELLO_LEN, depth = 0;

	switch (arg) {
	case 100: hello.op = 9; break;
	case 101: hello.depth = 0; break;
	case 102: hello.depth = 65535; break;
	case 103: hello.depth = 100; break; /* over the server's --max-depth 64 */
	case 104: hello.chunk = 1; break;
	case 105: hello.chunk = UINT32_MAX; break;
	case 106: hello.chunk = 32u << 20; break;		    /* over --max-chunk 16M */
	case 107: hello.chunk = 16u << 20, hello.depth = 64; break; /* 1 GiB ring */
	case 108: hello.op = XFER_GET; break;			    /* initiator depth 0 */
	}
	xfer_hello_pack(p, &hello);
	if (arg == 109)
		len = 0;
	else if (arg == 110)
		p[5] = BASIC_T_HELLO;
	else if (arg == 111)
		p[17] = 0; /* version 1's HELLO: this byte was reserved */
	else if (arg == 112)
		p[17] = 3; /* a version from the future */
	else if (arg < 100)
		bend_hdr(p, (enum bend)arg);
	return connect_bad(h, p, len, depth);
}

/*
 * SEND m (packed with our next seq), after bending it as `b` says. Each
 * message has a slot of its own after TX_LEN, never reused on this
 * connection: a SEND's buffer is the NIC's until its completion, and rxe
 * on 6.12 and 7.x reads it after ibv_post_send has returned (two CREDITs
 * packed into one buffer arrived as the second twice).
 */
int x_send(struct hc *h, const struct xfer_msg *m, enum bend b)
{
	size_t off = TX_LEN + (size_t)h->seq * XFER_MSG_MAX, len;
	uint8_t *p = (uint8_t *)h->tx->addr + off;

	if (h->seq >= X_MSGS)
		return rc_fail(&h->c.log, ENOBUFS, "more than %d messages on one connection",
			       X_MSGS);
	len = xfer_msg_pack(p, h->seq++, m);
	bend_hdr(p, b);
	return hc_send(h, off, len);
}

/* After connecting: the server's CHALLENGE, its nonce kept for a proof.
 * 0, or 1 (noted). */
static int x_challenge(struct hc *h)
{
	struct xfer_msg m;
	char err[200];

	if (hc_recv(h))
		return 1;
	if (xfer_msg_unpack(h->last, h->last_len, h->rseq++, &m, err, sizeof(err)) ||
	    m.type != XFER_T_CHALLENGE) {
		note(h, "no CHALLENGE from the server: %s", h->refused ? "refused" : err);
		return 1;
	}
	memcpy(h->nonce, m.u.challenge.nonce, XFER_NONCE_LEN);
	h->secret_required = m.u.challenge.flags & XFER_CH_F_SECRET;
	return 0;
}

/* Connect for a put (or a get, with READs allowed) of X_CHUNK x X_DEPTH,
 * and take the CHALLENGE. 0, 1 (refused or noted) or a negative errno. */
int x_connect(struct hc *h, uint8_t op)
{
	uint8_t priv[XFER_HELLO_LEN];
	int ret;

	h->hello = (struct xfer_hello){
		.op = op, .version = XFER_PROTO_VERSION, .depth = X_DEPTH, .chunk = X_CHUNK
	};
	xfer_hello_pack(priv, &h->hello);
	ret = hc_connect(h, priv, sizeof(priv), op == XFER_GET ? X_DEPTH : 0);
	if (ret)
		return ret < 0 ? ret : 1;
	return x_challenge(h);
}

/* A REQUEST for name (size: of a put) into m; with a proof under key
 * (over this connection's nonce) unless key is NULL. */
void x_make_request(struct hc *h, struct xfer_msg *m, const char *name, uint64_t size,
		    const struct xfer_secret *key)
{
	struct xfer_request *r = &m->u.request;

	*m = (struct xfer_msg){ .type = XFER_T_REQUEST };
	r->size = size;
	r->name_len = (uint16_t)strlen(name);
	memcpy(r->name, name, r->name_len);
	if (key) {
		r->flags = XFER_REQ_F_PROOF;
		xfer_proof_make(key, h->nonce, &h->hello, r, r->proof);
	}
}

/* SEND the REQUEST m and wait for ACCEPT. 0, or 1 (noted). */
int x_send_request(struct hc *h, const struct xfer_msg *m, struct xfer_accept *acc)
{
	struct xfer_msg a;
	char err[200];

	if (x_send(h, m, B_NONE) || hc_recv(h))
		return 1;
	if (xfer_msg_unpack(h->last, h->last_len, h->rseq++, &a, err, sizeof(err)) ||
	    a.type != XFER_T_ACCEPT) {
		note(h, "no ACCEPT from the server: %s", h->refused ? "refused" : err);
		return 1;
	}
	*acc = a.u.accept;
	return 0;
}

/* Send a valid REQUEST for name (with a proof if we have --secret) and
 * wait for ACCEPT. 0, or 1 (noted). */
int x_request(struct hc *h, const char *name, uint64_t size, struct xfer_accept *acc)
{
	struct xfer_msg m;

	x_make_request(h, &m, name, size, h->e->secret.set ? &h->e->secret : NULL);
	return x_send_request(h, &m, acc);
}

/* A bent or wrong REQUEST as the first message. */
static int x_bad_request(struct hc *h, int arg)
{
	struct xfer_msg m = { .type = XFER_T_REQUEST };
	uint8_t *p;
	size_t len;
	int ret;

	ret = x_connect(h, XFER_PUT);
	if (ret)
		return ret < 0 ? ret : 0;
	p = h->tx->addr;
	m.u.request.size = 4096;
	m.u.request.name_len = 7;
	memcpy(m.u.request.name, "hostile", 7);
	len = xfer_msg_pack(p, 0, &m);
	switch (arg) {
	case 100: len = 100; break; /* truncated */
	case 101: /* beyond the server's receive buffer */ len = XFER_MSG_MAX + 200; break;
	case 102: p[16 + 11] = 0x80; break;		 /* unknown flag */
	case 103: p[16 + 12] = 1, p[16 + 13] = 0; break; /* name_len 256 */
	case 104:
		memset(p + 32, 'n', 256); /* no NUL at all */
		p[16 + 12] = 1, p[16 + 13] = 0;
		break;
	case 105: p[16 + 13] = 0; break;	 /* name_len 0 */
	case 106: p[16 + 16 + 200] = 'x'; break; /* padding after name */
	case 107: /* NUL inside the name */ p[16 + 16 + 3] = '\0'; break;
	case 108: /* a path, not a name */
		m.u.request.name_len = 9;
		memcpy(m.u.request.name, "../escape", 9);
		len = xfer_msg_pack(p, 0, &m);
		break;
	case 109: /* terminal escape sequences in the name */
		m.u.request.name_len = 7;
		memcpy(m.u.request.name, "\x1b[2Jboo", 7);
		len = xfer_msg_pack(p, 0, &m);
		break;
	case 110: /* DONE instead of REQUEST */
		m = (struct xfer_msg){ .type = XFER_T_DONE };
		len = xfer_msg_pack(p, 0, &m);
		break;
	case 111: /* an ERROR with control characters in its text */
		xfer_make_error(&m, EIO, "x");
		len = xfer_msg_pack(p, 0, &m);
		memcpy(p + 16 + 8, "\x1b[2J", 4);
		p[16 + 5] = 4;
		break;
	case 112:
		m.u.request.size = 1ull << 63; /* negative as off_t */
		len = xfer_msg_pack(p, 0, &m);
		break;
	default: bend_hdr(p, (enum bend)arg); break;
	}
	ret = hc_send(h, 0, len);
	if (ret)
		return ret;
	hc_wait_dropped(h);
	return 0;
}

/* A put that goes wrong after ACCEPT: 2 chunks announced (8 KiB). */
static int x_bad_put(struct hc *h, int arg)
{
	struct xfer_msg m = { .type = XFER_T_DONE };
	struct xfer_accept acc;
	char name[40];
	uint32_t imm = xfer_imm_pack(0, 0);
	size_t len = X_CHUNK;
	uint64_t raddr;
	int ret;

	ret = x_connect(h, XFER_PUT);
	if (ret)
		return ret < 0 ? ret : 0;
	snprintf(name, sizeof(name), "hostile-put-%d", arg);
	if (x_request(h, name, arg == 105 ? X_CHUNK : 2 * X_CHUNK, &acc))
		return 0;
	raddr = acc.ring.addr;
	memset(h->tx->addr, 'h', TX_LEN);
	switch (arg) {
	case 100: imm = xfer_imm_pack(0, 3); break;		     /* wrong slot */
	case 101: imm = xfer_imm_pack(5, 0); break;		     /* wrong seq */
	case 102: len = 100; break;				     /* shorter than the chunk */
	case 103: raddr = acc.ring.addr + acc.ring.len - 100; break; /* past the ring */
	case 104:						     /* DONE before any chunk */
	case 106: /* a CREDIT: only the receiver of chunks sends those */
		if (arg == 106)
			m = (struct xfer_msg){ .type = XFER_T_CREDIT };
		ret = x_send(h, &m, B_NONE);
		goto wait;
	case 105: /* one chunk announced; we send a second one */
		ret = hc_rdma(h, IBV_WR_RDMA_WRITE_WITH_IMM, len, raddr, acc.ring.rkey, imm);
		if (!ret)
			ret = hc_recv(h); /* its CREDIT */
		if (ret)
			return 0;
		h->rseq++;
		imm = xfer_imm_pack(1, 1);
		raddr += X_CHUNK;
		break;
	case 107: /* both chunks, then DONE with a wrong checksum */
		ret = hc_rdma(h, IBV_WR_RDMA_WRITE_WITH_IMM, len, raddr, acc.ring.rkey, imm);
		if (!ret)
			ret = hc_rdma(h, IBV_WR_RDMA_WRITE_WITH_IMM, len, raddr + X_CHUNK,
				      acc.ring.rkey, xfer_imm_pack(1, 1));
		if (!ret)
			ret = hc_recv(h);
		if (!ret)
			ret = hc_recv(h);
		if (ret)
			return 0;
		m.u.done.size = 2 * X_CHUNK;
		ret = x_send(h, &m, B_NONE);
		goto wait;
	}
	ret = hc_rdma(h, IBV_WR_RDMA_WRITE_WITH_IMM, len, raddr, acc.ring.rkey, imm);
wait:
	if (ret)
		return ret;
	hc_wait_dropped(h);
	return 0;
}

/* A get that goes wrong: the server announces X_GET_CHUNKS chunks. */
static int x_bad_get(struct hc *h, int arg)
{
	struct xfer_msg m = { .type = XFER_T_CREDIT };
	struct xfer_accept acc;
	unsigned i;
	char err[200];
	int ret;

	ret = x_connect(h, XFER_GET);
	if (ret)
		return ret < 0 ? ret : 0;
	if (x_request(h, h->e->file, 0, &acc))
		return 0;
	if (acc.size != X_GET_CHUNKS * X_CHUNK) {
		note(h, "--file must have %u bytes on the server, it has %" PRIu64,
		     X_GET_CHUNKS * X_CHUNK, acc.size);
		return 0;
	}
	/* Every case but 102 breaks the rules after the server announced
	 * every chunk (the ring holds them all) and sent DONE: its disk
	 * thread fills the slots while it reads our messages, so a message
	 * sent before that would meet the server at no fixed point. */
	for (i = 0; arg != 102 && i <= X_GET_CHUNKS; i++) {
		if (hc_recv(h))
			return 0;
		if (xfer_msg_unpack(h->last, h->last_len, h->rseq++, &m, err, sizeof(err)))
			note(h, "bad message from the server: %s", err);
	}
	m = (struct xfer_msg){ .type = XFER_T_CREDIT };
	switch (arg) {
	case 100: /* credit for a slot the chunk is not in */
		m.u.credit = (struct xfer_credit){ .seq = 0, .slot = 2 };
		ret = x_send(h, &m, B_NONE);
		break;
	case 101: /* credit out of order */
		m.u.credit = (struct xfer_credit){ .seq = 1, .slot = 1 };
		ret = x_send(h, &m, B_NONE);
		break;
	case 102: /* READ beyond the ring */
		ret = hc_rdma(h, IBV_WR_RDMA_READ, X_CHUNK, acc.ring.addr + acc.ring.len - 100,
			      acc.ring.rkey, 0);
		break;
	case 103: /* COMMITTED without reading anything */
		m = (struct xfer_msg){ .type = XFER_T_COMMITTED };
		ret = x_send(h, &m, B_NONE);
		break;
	case 104: /* every credit, then one more than there were chunks */
	case 105: /* every credit, then COMMITTED with a wrong checksum */
		for (i = 0; i < X_GET_CHUNKS && !ret; i++) {
			m.u.credit = (struct xfer_credit){ .seq = i, .slot = (uint16_t)i };
			ret = x_send(h, &m, B_NONE);
		}
		if (ret)
			break;
		if (arg == 104) {
			m.u.credit = (struct xfer_credit){ .seq = X_GET_CHUNKS, .slot = 0 };
		} else {
			m = (struct xfer_msg){ .type = XFER_T_COMMITTED };
			m.u.done.size = X_GET_CHUNKS * X_CHUNK;
		}
		ret = x_send(h, &m, B_NONE);
		break;
	}
	if (ret)
		return ret;
	hc_wait_dropped(h);
	return 0;
}

#define X_PROTO "protocol error: "

static const struct kase cases03[] = {
	{ "no-hello", x_hello, 109, "rejected: .*(private data|shorter|bad magic|HELLO)" },
	{ "hello-bad-magic", x_hello, B_MAGIC, "rejected: bad magic" },
	{ "hello-bad-version", x_hello, B_VERSION, "rejected: protocol version 2" },
	{ "hello-unknown-flags", x_hello, B_FLAGS, "rejected: unknown flags" },
	{ "hello-wrong-type", x_hello, 110, "rejected: expected a HELLO" },
	{ "hello-truncated", x_hello, B_LEN_SHORT, "rejected: expected a HELLO of 8 bytes" },
	{ "hello-length-beyond-data", x_hello, B_LEN_HUGE, "rejected: header says 1000000" },
	{ "hello-seq", x_hello, B_SEQ, "rejected: HELLO with sequence number 77" },
	{ "hello-version-1", x_hello, 111, "rejected: the client speaks 03 protocol version 1," },
	{ "hello-version-3", x_hello, 112, "rejected: the client speaks 03 protocol version 3," },
	{ "hello-op-9", x_hello, 100, "rejected: unknown operation 9" },
	{ "hello-depth-0", x_hello, 101, "rejected: depth 0 or chunk" },
	{ "hello-depth-65535", x_hello, 102, "rejected: depth 65535 or chunk" },
	{ "hello-depth-over-limit", x_hello, 103, "rejected: depth 100 .*64" },
	{ "hello-chunk-1", x_hello, 104, "rejected: depth 4 or chunk 1 outside" },
	{ "hello-chunk-4g", x_hello, 105, "rejected: depth 4 or chunk 4294967295 outside" },
	{ "hello-chunk-over-limit", x_hello, 106, "rejected: chunk 32 MiB .*16 MiB" },
	{ "hello-ring-1g", x_hello, 107, "rejected: .*16 MiB x (depth )?64 = 1 GiB" },
	{ "get-with-initiator-depth-0", x_hello, 108, "offered an initiator depth of 0" },
	{ "request-bad-magic", x_bad_request, B_MAGIC, X_PROTO "bad message .*bad magic" },
	{ "request-bad-version", x_bad_request, B_VERSION, X_PROTO "bad message .*version 2" },
	{ "request-unknown-flags", x_bad_request, B_FLAGS, X_PROTO "bad message .*unknown flags" },
	{ "request-unknown-type", x_bad_request, B_TYPE_UNKNOWN,
	  X_PROTO "bad message .*unexpected message type 0x7e" },
	{ "request-wrong-seq", x_bad_request, B_SEQ, X_PROTO "bad message .*sequence number 77" },
	{ "request-length-short", x_bad_request, B_LEN_SHORT,
	  X_PROTO "bad message .*header says 2 body bytes" },
	{ "request-truncated", x_bad_request, 100,
	  X_PROTO "bad message .*100 bytes arrived|header says" },
	{ "request-oversized", x_bad_request, 101,
	  "(local length|local QP operation) error.*larger than the receive buffer" },
	{ "request-unknown-request-flag", x_bad_request, 102,
	  X_PROTO "bad message .*REQUEST has unknown flags" },
	{ "request-name-len-256", x_bad_request, 103,
	  X_PROTO "bad message .*name length 256 outside" },
	{ "request-name-without-nul", x_bad_request, 104,
	  X_PROTO "bad message .*name length 256 outside" },
	{ "request-name-len-0", x_bad_request, 105, X_PROTO "bad message .*name length 0 outside" },
	{ "request-garbage-after-name", x_bad_request, 106,
	  X_PROTO "bad message .*REQUEST padding is not zero" },
	{ "request-name-with-nul", x_bad_request, 107, "forbidden name .*contains a NUL byte" },
	{ "request-name-is-a-path", x_bad_request, 108, "forbidden name .*contains '/'" },
	{ "request-name-control-chars", x_bad_request, 109,
	  "forbidden name .*contains control characters" },
	{ "request-done-first", x_bad_request, 110, X_PROTO "expected a REQUEST, got DONE" },
	{ "request-error-with-escapes", x_bad_request, 111,
	  X_PROTO "bad message .*ERROR text has control characters" },
	{ "request-size-2-63", x_bad_request, 112,
	  X_PROTO "bad message .*REQUEST size .*too large" },
	{ "put-chunk-wrong-slot", x_bad_put, 100, X_PROTO "chunk 0 in slot 3, expected slot 0" },
	{ "put-chunk-wrong-seq", x_bad_put, 101, X_PROTO "chunk sequence 5, expected 0" },
	{ "put-chunk-short", x_bad_put, 102, X_PROTO "chunk 0 has 100 bytes, expected 4096" },
	{ "put-write-past-ring", x_bad_put, 103, "removed the partial file" },
	{ "put-done-before-data", x_bad_put, 104, X_PROTO "DONE after 0 of 2 chunks" },
	{ "put-chunk-past-announced-size", x_bad_put, 105,
	  X_PROTO "chunk beyond the announced 4096 bytes" },
	{ "put-credit-from-sender", x_bad_put, 106, X_PROTO "unexpected CREDIT during a put" },
	{ "put-done-wrong-checksum", x_bad_put, 107, "checksum mismatch.*nothing was stored" },
	{ "get-credit-wrong-slot", x_bad_get, 100, X_PROTO "CREDIT seq 0 slot 2, expected seq 0" },
	{ "get-credit-out-of-order", x_bad_get, 101,
	  X_PROTO "CREDIT seq 1 slot 1, expected seq 0" },
	{ "get-read-past-ring", x_bad_get, 102, "get .*(failed|flush|error)" },
	{ "get-committed-without-reading", x_bad_get, 103, "the client committed 0 bytes with" },
	{ "get-credit-for-unsent-chunk", x_bad_get, 104, X_PROTO "CREDIT for chunk 4, but only 4" },
	{ "get-committed-wrong-checksum", x_bad_get, 105, "the client committed 16384 bytes with" },
	{ NULL, NULL, 0, NULL },
};

/* ------------------------------------------------------------------ */
/* main                                                                */
/* ------------------------------------------------------------------ */

static const char usage[] =
	"usage: hostile [options] 01|02|03|03-security SERVER PORT [CASE...]\n"
	"Break the protocol of example 01, 02 or 03 on purpose, one way per\n"
	"connection, and check that the server refuses or drops each one.\n"
	"03-security: attacks on the access controls (--secret, --read-only,\n"
	"--write-only, --allow) and on another client's memory; each case needs\n"
	"a server started for it (see tests/hostile/hostile-security.c), so name them.\n\n"
	"  --file NAME     03: a file of 16384 bytes on the server, for the get cases\n"
	"                  (default hostile.dat)\n"
	"  --secret FILE   03: the server's key, for the proofs the cases make\n"
	"  --timeout SEC   how long the server has to drop a connection (default 5)\n"
	"  --list          print the cases and exit\n"
	"  -v, --verbose   trace every CM event, work request and completion\n"
	"  -h, --help      this text\n\n"
	"Exit: 0 every case refused or dropped, 1 one was not, 2 bad usage,\n"
	"3 could not reach the server.\n";

static bool wanted(const char *name, int argc, char **argv)
{
	int i;

	if (argc == 0)
		return true;
	for (i = 0; i < argc; i++)
		if (!strcmp(argv[i], name))
			return true;
	return false;
}

static int run_case(const struct env *e, const struct kase *k, unsigned *failed)
{
	struct hc h = { .e = e };
	int ret;

	ret = k->run(&h, k->arg);
	if (ret && !h.connected && !h.refused && !h.got[0]) {
		/* Could not even reach the server: not the server's fault. */
		printf("case %s: could not connect: %s\n", k->name, h.c.log.err);
		rc_conn_destroy(&h.c);
		return -1;
	}
	if (ret)
		note(&h, "%s", h.c.log.err);
	printf("case %s port %u: %s: %s\n", k->name, h.port, h.refused ? "ok" : "FAILED", h.got);
	if (k->expect)
		printf("expect %u %s\n", h.port, k->expect);
	*failed += !h.refused;
	rc_conn_destroy(&h.c);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "file", required_argument, NULL, 'f' },
		{ "secret", required_argument, NULL, 's' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "list", no_argument, NULL, 'l' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct env e = { .file = "hostile.dat", .timeout_ms = 5000 };
	const struct kase *cases, *k;
	unsigned failed = 0, ran = 0;
	bool list = false;
	char err[RC_ERR_LEN];
	int c;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((c = getopt_long(argc, argv, "vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'f': e.file = optarg; break;
		case 's':
			if (xfer_secret_load(&e.secret, optarg, err, sizeof(err))) {
				fprintf(stderr, "hostile: %s\n", err);
				return RC_EXIT_USAGE;
			}
			break;
		case 'T':
			if (rc_parse_timeout(optarg, &e.timeout_ms)) {
				fprintf(stderr, "hostile: invalid timeout '%s'\n", optarg);
				return RC_EXIT_USAGE;
			}
			break;
		case 'l': list = true; break;
		case 'v': e.verbose = true; break;
		case 'h': fputs(usage, stdout); return RC_EXIT_OK;
		default: fputs(usage, stderr); return RC_EXIT_USAGE;
		}
	}
	if (optind >= argc || (!list && argc - optind < 3)) {
		fputs(usage, stderr);
		return RC_EXIT_USAGE;
	}
	if (!strcmp(argv[optind], "01"))
		cases = cases01;
	else if (!strcmp(argv[optind], "02"))
		cases = cases02;
	else if (!strcmp(argv[optind], "03"))
		cases = cases03;
	else if (!strcmp(argv[optind], "03-security"))
		cases = cases03sec;
	else {
		fprintf(stderr, "hostile: unknown example '%s' (01, 02, 03 or 03-security)\n",
			argv[optind]);
		return RC_EXIT_USAGE;
	}
	if (list) {
		for (k = cases; k->name; k++)
			printf("%s\n", k->name);
		return RC_EXIT_OK;
	}
	e.host = argv[optind + 1];
	e.port = argv[optind + 2];
	argc -= optind + 3;
	argv += optind + 3;
	for (k = cases; k->name; k++) {
		if (!wanted(k->name, argc, argv))
			continue;
		if (run_case(&e, k, &failed))
			return RC_EXIT_NOCONN;
		ran++;
	}
	if (!ran) {
		fprintf(stderr, "hostile: no such case (see --list)\n");
		return RC_EXIT_USAGE;
	}
	printf("hostile: %u cases, %u refused or dropped by the server, %u not\n", ran,
	       ran - failed, failed);
	return failed ? RC_EXIT_FAIL : RC_EXIT_OK;
}
