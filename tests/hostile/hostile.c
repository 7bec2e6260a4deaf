// SPDX-License-Identifier: MIT
/*
 * hostile - a test client that breaks the protocol of 01, 02 or 03 on
 * purpose, one way per connection, and reports what the server did (04's
 * server gets 02's cases and its own: hostile-04.c).
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
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hostile.h"
#include "rc-counters.h" /* rc_link_counters */
#include "rc-opts.h"

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

int hc_prepare(struct hc *h)
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
		h->c.link_hooks = &rc_link_counters; /* as 02 and 03 wait */
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
	return ret;
}

/* A rejection is a pass for a case about the connect request. */
int hc_connect(struct hc *h, const void *priv, uint8_t priv_len, uint8_t initiator_depth)
{
	int ret = hc_prepare(h);

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

struct rc_conn *hc_conn_for(struct hc *h, enum ibv_wr_opcode op)
{
	return op == IBV_WR_RDMA_READ && h->joined ? &h->data : &h->c;
}

void hc_destroy(struct hc *h)
{
	/* The data QP is on the first connection's PD and CQ: it goes first. */
	rc_conn_destroy(&h->data);
	rc_conn_destroy(&h->c);
}

int hc_rdma(struct hc *h, enum ibv_wr_opcode op, size_t len, uint64_t raddr, uint32_t rkey,
	    uint32_t imm)
{
	struct rc_conn *c = hc_conn_for(h, op);
	int ret = rc_post_rdma(c, op, h->tx, 0, len, raddr, rkey, imm, WR_TX + h->next_tx++, true);

	return ret && c != &h->c ? rc_fail(&h->c.log, -ret, "%s", c->log.err) : ret;
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

/*
 * The server disconnected while our work request wr_id was outstanding
 * (seen on 7.3 on a busy host: the server's QP failed on our bad request,
 * and its DISCONNECTED reached us before any completion of it). Move our
 * QP to the error state, which completes every outstanding request (with
 * its error if one came in time, else flushed), and take wr_id's status
 * within --timeout. 0, or -1.
 */
static int hc_own_after_drop(struct hc *h, uint64_t wr_id, enum ibv_wc_status *st)
{
	uint64_t end = rc_now_us() + (uint64_t)h->e->timeout_ms * 1000u;
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
	struct ibv_wc wc;
	int n;

	/* In the error state, the QP flushes what it still holds. */
	if (ibv_modify_qp(h->c.id->qp, &attr, IBV_QP_STATE))
		return -1;
	while (rc_now_us() < end) {
		/* Polled, not waited for: the CQ's channel may be armed or not. */
		n = ibv_poll_cq(h->c.dev.cq, 1, &wc);
		if (n < 0)
			return -1;
		if (n == 1 && wc.wr_id == wr_id) {
			*st = wc.status;
			return 0;
		}
		if (n == 0)
			nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
	}
	return -1;
}

int hc_wait_own(struct hc *h, uint64_t wr_id, enum ibv_wc_status *st)
{
	struct ibv_wc wc;
	int ret;

	for (;;) {
		ret = rc_next_wc(&h->c, &wc);
		if (ret == -ECONNRESET && h->c.peer_disconnected &&
		    hc_own_after_drop(h, wr_id, st) == 0) {
			note(h, "%s", "the server disconnected before our work request completed");
			return 0;
		}
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

int hc_expect_dropped(struct hc *h, int ret)
{
	if (ret)
		return ret;
	hc_wait_dropped(h);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Bending messages                                                    */
/* ------------------------------------------------------------------ */

void bend_hdr(uint8_t *p, enum bend b)
{
	switch (b) {
	case B_NONE: break;
	case B_MAGIC: p[0] ^= 0x20; break;
	case B_VERSION: p[4] = RC_VERSION + 1; break;
	case B_FLAGS: p[7] = 0x80; break;
	case B_LEN_SHORT: rc_put32(p + 8, 2); break;
	case B_LEN_HUGE: rc_put32(p + 8, 1000000); break;
	case B_SEQ: rc_put32(p + 12, 77); break;
	case B_TYPE_UNKNOWN: p[5] = 0x7e; break;
	}
}

/* A connect-request case: connect with this private data; passes if the
 * server rejects it. */
int connect_bad(struct hc *h, const uint8_t *priv, uint8_t len, uint8_t initiator_depth)
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
/* main                                                                */
/* ------------------------------------------------------------------ */

static const char usage[] =
	"usage: hostile [options] 01|02|03|03-security|04 SERVER PORT [CASE...]\n"
	"Break the protocol of example 01, 02 or 03 on purpose, one way per\n"
	"connection, and check that the server refuses or drops each one.\n"
	"04: 02's cases against 04's server (it speaks 02's protocol), then\n"
	"what only a server of many clients meets (tests/hostile/hostile-04.c).\n"
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

/* The log line this server gives for case k: alt's where it names k. */
static const char *expect_of(const struct kase *k, const struct kase_expect *alt)
{
	for (; alt && alt->name; alt++)
		if (!strcmp(alt->name, k->name))
			return alt->expect;
	return k->expect;
}

static int run_case(const struct env *e, const struct kase *k, const char *expect, unsigned *failed)
{
	struct hc h = { .e = e };
	int ret;

	ret = k->run(&h, k->arg);
	if (ret && !h.connected && !h.refused && !h.got[0]) {
		/* Could not even reach the server: not the server's fault. */
		printf("case %s: could not connect: %s\n", k->name, h.c.log.err);
		hc_destroy(&h);
		return -1;
	}
	if (ret)
		note(&h, "%s", h.c.log.err);
	printf("case %s port %u: %s: %s\n", k->name, h.port, h.refused ? "ok" : "FAILED", h.got);
	if (expect)
		printf("expect %u %s\n", h.port, expect);
	*failed += !h.refused;
	hc_destroy(&h);
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
	const struct kase *lists[2] = { NULL, NULL }, *k;
	const struct kase_expect *alt = NULL;
	unsigned failed = 0, ran = 0, l;
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
		lists[0] = cases01;
	else if (!strcmp(argv[optind], "02"))
		lists[0] = cases02;
	else if (!strcmp(argv[optind], "03"))
		lists[0] = cases03;
	else if (!strcmp(argv[optind], "03-security"))
		lists[0] = cases03sec;
	else if (!strcmp(argv[optind], "04")) {
		/* 04's server speaks 02's protocol: 02's cases, then its own. */
		lists[0] = cases02;
		lists[1] = cases04;
		alt = expect04;
	} else {
		fprintf(stderr, "hostile: unknown example '%s' (01, 02, 03, 03-security or 04)\n",
			argv[optind]);
		return RC_EXIT_USAGE;
	}
	if (list) {
		for (l = 0; l < 2 && lists[l]; l++)
			for (k = lists[l]; k->name; k++)
				printf("%s\n", k->name);
		return RC_EXIT_OK;
	}
	e.host = argv[optind + 1];
	e.port = argv[optind + 2];
	argc -= optind + 3;
	argv += optind + 3;
	for (l = 0; l < 2 && lists[l]; l++)
		for (k = lists[l]; k->name; k++) {
			if (!wanted(k->name, argc, argv))
				continue;
			if (run_case(&e, k, expect_of(k, alt), &failed))
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
