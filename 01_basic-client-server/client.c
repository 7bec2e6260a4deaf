// SPDX-License-Identifier: MIT
/*
 * 01 rdma-client: connect with librdmacm and exchange messages with
 * two-sided SEND/RECV.
 *
 * What it shows, in order (see sequence.txt): resolve the server's address
 * and route, create the QP, register buffers, post the receive for the
 * first reply *before* connecting, connect, then for each message SEND it
 * and wait for both the send completion and the reply's receive
 * completion, validating the reply before use. Then disconnect.
 * With --json, the same results as one JSON object for scripts.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic.h"
#include "rc-json.h"

/*
 * The clock for the latency samples. clock_gettime() is a system call
 * wherever the kernel cannot read the TSC itself (hpet in many VMs: 2 to 3
 * us each, measured in our Soft-RoCE VM), and two calls around every
 * round trip would put that cost into each sample. So the samples count
 * ticks of the CPU's time-stamp counter, an instruction, and exchange()
 * converts them with the rate it measures over the whole run against
 * CLOCK_MONOTONIC (the TSC of any x86 CPU of the last 15 years runs at a
 * constant rate). Elsewhere the ticks are simply nanoseconds.
 */
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
static inline uint64_t ticks(void)
{
	return __rdtsc();
}
#else
static inline uint64_t ticks(void)
{
	return rc_now_ns();
}
#endif

enum { WR_SEND = 1, WR_RECV = 2 }; /* wr_id: which buffer completed */

struct client {
	struct client_opts opt;
	struct rc_conn conn;
	struct rc_buf *send_buf, *recv_buf;
	uint8_t *expect;     /* the payload being sent, to compare the reply */
	uint64_t *rtt_ns;    /* per round trip: ticks, nanoseconds after exchange() */
	uint64_t done;	     /* round trips completed and verified */
	uint64_t elapsed_ns; /* from the first SEND to the last reply */
};

static int setup(struct client *cl)
{
	struct rc_conn *c = &cl->conn;
	/* One message in flight each way; a spare in case of slow polling. */
	struct ibv_qp_cap cap = {
		.max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1, .max_recv_sge = 1
	};
	size_t msg_len = sizeof(struct rc_hdr) + cl->opt.size;
	int ret;

	ret = rc_create_qp(c, &cap);
	if (ret)
		return ret;
	/* We only SEND from this buffer: the NIC reads it, nobody writes
	 * it remotely, so it needs no access flags at all. */
	ret = rc_buf_alloc(c, msg_len, 0, &cl->send_buf);
	if (ret)
		return ret;
	/* The NIC writes received messages here: LOCAL_WRITE is required. */
	return rc_buf_alloc(c, msg_len, IBV_ACCESS_LOCAL_WRITE, &cl->recv_buf);
}

/* SEND message seq and wait for its reply. Returns 0 or a negative errno
 * with c->log.err set. */
static int round_trip(struct client *cl, uint32_t seq, uint64_t *rtt_ticks)
{
	struct rc_conn *c = &cl->conn;
	uint32_t size = cl->opt.size;
	bool sent = false, replied = false;
	uint64_t t0, t1 = 0;
	struct ibv_wc wc;
	struct rc_msg m;
	char why[160];
	int ret;

	if (cl->opt.text)
		memcpy(cl->expect, cl->opt.text, size);
	else
		basic_fill_pattern(cl->expect, size, seq);
	basic_msg_pack(cl->send_buf->addr, BASIC_T_DATA, seq, cl->expect, size);

	t0 = ticks();
	/* Signalled: we reuse send_buf for the next message only after the
	 * NIC says it is done reading it. */
	ret = rc_post_send(c, cl->send_buf, 0, sizeof(struct rc_hdr) + size, WR_SEND, true);
	if (ret)
		return ret;
	/* The send and the reply complete in either order. */
	while (!sent || !replied) {
		ret = rc_next_wc(c, &wc);
		if (ret)
			return ret;
		if (wc.wr_id == WR_SEND && wc.opcode == IBV_WC_SEND) {
			sent = true;
		} else if (wc.wr_id == WR_RECV && wc.opcode == IBV_WC_RECV) {
			t1 = ticks();
			replied = true;
			/* Never trust the peer: length from wc.byte_len, then
			 * header, type, seq and size. */
			ret = basic_msg_unpack(cl->recv_buf->addr, wc.byte_len, BASIC_T_REPLY, seq,
					       size, &m, why, sizeof(why));
			if (ret)
				return rc_fail(&c->log, EPROTO, "bad reply to message %u: %s", seq,
					       why);
			if (m.length != size || memcmp(m.body, cl->expect, size))
				return rc_fail(&c->log, EPROTO,
					       "reply to message %u differs from what was sent",
					       seq);
			/* Repost at once: the next reply needs a receive ready
			 * before the server sends it. */
			if (seq + 1 < cl->opt.count) {
				ret = rc_post_recv(c, cl->recv_buf, 0, cl->recv_buf->len, WR_RECV);
				if (ret)
					return ret;
			}
		} else {
			return rc_unexpected_wc(c, &wc);
		}
	}
	*rtt_ticks = t1 - t0;
	return 0;
}

static void print_reply(const struct client *cl, uint32_t seq)
{
	char q[300];

	basic_quote(q, sizeof(q), (const uint8_t *)cl->recv_buf->addr + sizeof(struct rc_hdr),
		    cl->opt.size, 64);
	printf("reply %u: '%s' (%u bytes)\n", seq, q, cl->opt.size);
}

/* The run's end: its duration, and the samples from ticks to ns. */
static void end_run(struct client *cl, uint64_t t0_ns, uint64_t t0_ticks)
{
	uint64_t dt = ticks() - t0_ticks, i;
	double ns_per_tick;

	cl->elapsed_ns = rc_now_ns() - t0_ns;
	ns_per_tick = dt ? (double)cl->elapsed_ns / (double)dt : 1.0;
	for (i = 0; i < cl->done; i++)
		cl->rtt_ns[i] = (uint64_t)((double)cl->rtt_ns[i] * ns_per_tick + 0.5);
}

static int exchange(struct client *cl)
{
	uint64_t i, n = cl->opt.count, t0 = rc_now_ns(), t0_ticks = ticks();
	struct basic_lat lat;
	int ret;

	for (i = 0; i < n; i++) {
		ret = round_trip(cl, (uint32_t)i, &cl->rtt_ns[i]);
		if (ret) {
			end_run(cl, t0, t0_ticks);
			return ret;
		}
		cl->done = i + 1;
		if (cl->opt.json)
			continue; /* the results come as JSON at the end */
		if (i < 3 || i == n - 1)
			print_reply(cl, (uint32_t)i);
		else if (i == 3)
			printf("...\n");
	}
	end_run(cl, t0, t0_ticks);
	if (cl->opt.json)
		return 0;
	printf("verified %" PRIu64 " of %" PRIu64 " replies\n", n, n);
	if (n > 1) {
		basic_latency(cl->rtt_ns, n, &lat);
		printf("round-trip latency (us): min %.1f median %.1f p99 %.1f max %.1f over "
		       "%" PRIu64 " messages of %u bytes\n",
		       lat.min, lat.median, lat.p99, lat.max, n, cl->opt.size);
	}
	return 0;
}

/*
 * --json: one object with what was asked and what happened, printed on
 * success and on failure alike (error: the message stderr got, or null).
 */
static void print_json(struct client *cl, int code, const char *error)
{
	static struct rc_json j; /* 32 KiB: not on the stack */
	struct basic_lat lat;
	double secs = (double)cl->elapsed_ns / 1e9;

	rc_json_init(&j);
	rc_json_object(&j, NULL);
	rc_json_str(&j, "program", "rdma-client");
	rc_json_str(&j, "example", "01_basic-client-server");
	rc_json_bool(&j, "ok", code == RC_EXIT_OK);
	if (code != RC_EXIT_USAGE) {
		rc_json_str(&j, "op", "sendrecv");
		rc_json_str(&j, "server", cl->opt.server);
		rc_json_u64(&j, "port", strtoul(cl->opt.rc.port, NULL, 10));
		rc_json_u64(&j, "count", cl->opt.count);
		rc_json_u64(&j, "size", cl->opt.size);
		rc_json_u64(&j, "messages", cl->done);
		rc_json_u64(&j, "bytes", cl->done * cl->opt.size);
		rc_json_double(&j, "seconds", secs);
		rc_json_double(&j, "messages_per_s", secs > 0 ? (double)cl->done / secs : 0);
		if (cl->done) {
			/* Round trips: SEND posted to the reply's completion. */
			basic_latency(cl->rtt_ns, cl->done, &lat);
			rc_json_object(&j, "latency_us");
			rc_json_double(&j, "min", lat.min);
			rc_json_double(&j, "median", lat.median);
			rc_json_double(&j, "p99", lat.p99);
			rc_json_double(&j, "max", lat.max);
			rc_json_end(&j);
		} else {
			rc_json_null(&j, "latency_us");
		}
		rc_json_bool(&j, "verified", code == RC_EXIT_OK);
	}
	rc_json_str(&j, "error", error);
	rc_json_i64(&j, "exit_code", code);
	rc_json_end(&j);
	if (rc_json_finish(&j, stdout))
		fprintf(stderr, "rdma-client: could not write the JSON output\n");
}

int main(int argc, char **argv)
{
	struct client cl = { 0 };
	struct rc_conn *c = &cl.conn;
	uint8_t hello[BASIC_HELLO_LEN];
	char err[256];
	int ret, code = RC_EXIT_FAIL;

	ret = basic_parse_client(argc, argv, &cl.opt, err, sizeof(err));
	if (ret) {
		if (ret < 0) {
			fprintf(stderr, "rdma-client: %s (try --help)\n", err);
			if (rc_json_wanted(argc, argv))
				print_json(&cl, RC_EXIT_USAGE, err);
		}
		return ret > 0 ? RC_EXIT_OK : RC_EXIT_USAGE;
	}
	/* Line-buffered even into a pipe: scripts watch our progress. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	cl.expect = malloc(cl.opt.size);
	cl.rtt_ns = calloc(cl.opt.count, sizeof(*cl.rtt_ns));
	if (!cl.expect || !cl.rtt_ns) {
		rc_fail(&c->log, ENOMEM, "out of memory");
		goto fail;
	}
	rc_conn_init(c, "client", cl.opt.rc.verbose, cl.opt.rc.timeout_ms, -1);
	c->busy_poll = cl.opt.rc.busy_poll;

	/* 1. Which device and path reach the server? */
	ret = rc_client_resolve(c, cl.opt.server, cl.opt.rc.port);
	if (ret) {
		code = RC_EXIT_NOCONN;
		goto fail;
	}
	/* 2. QP and registered buffers on that device. */
	ret = setup(&cl);
	if (ret)
		goto fail;
	/* 3. A receive for the first reply, posted before connecting so it
	 * is ready however fast the server answers. */
	ret = rc_post_recv(c, cl.recv_buf, 0, cl.recv_buf->len, WR_RECV);
	if (ret)
		goto fail;
	/* 4. Connect; HELLO tells the server how large our messages are, so
	 * it can post receives that fit. No RDMA READ here: depth 0. */
	basic_hello_pack(hello, cl.opt.size);
	ret = rc_client_connect(c, hello, sizeof(hello), 0, 0);
	if (ret) {
		code = RC_EXIT_NOCONN;
		goto fail;
	}
	if (!cl.opt.json)
		printf("connected to %s\n", c->peer);
	fflush(stdout);
	/* 5. The conversation. */
	ret = exchange(&cl);
	if (ret)
		goto fail;
	/* 6. Goodbye: the server sees DISCONNECTED. */
	ret = rc_disconnect(c);
	if (ret)
		goto fail;
	code = RC_EXIT_OK;
	goto out;
fail:
	fprintf(stderr, "rdma-client: %s\n", c->log.err);
out:
	if (cl.opt.json)
		print_json(&cl, code, code == RC_EXIT_OK ? NULL : c->log.err);
	rc_conn_destroy(c);
	free(cl.expect);
	free(cl.rtt_ns);
	return code;
}
