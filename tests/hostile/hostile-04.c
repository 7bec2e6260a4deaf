// SPDX-License-Identifier: MIT
/*
 * hostile-04.c - the hostile client against 04_many-clients' server. It
 * speaks 02's protocol, so 02's cases (hostile-02.c) run against it as
 * they are; expect04 gives the log lines 04's server writes where they
 * differ from 02's. cases04 adds what a server of many clients on one
 * event loop has to face: a connection that never completes its
 * handshake, a client silent after BUF (probed, not dropped), messages
 * out of order. See hostile.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "hostile.h"
#include "rw.h"

/* 02's RDMA outside the buffer: 04's QPs take DONE from the SRQ, so no
 * receive of theirs is flushed; the server learns it when a send of its
 * own is flushed (the probe of the silent client; on 6.12 at times its
 * BUF), or on 7.x by the async event QP_ACCESS_ERR. */
#define M_QP_FAILED "(flushed: the connection is in the error state|async event .*its QP failed)"

const struct kase_expect expect04[] = {
	{ "write-to-read-only-buffer", M_QP_FAILED },
	{ "write-past-buffer-end", M_QP_FAILED },
	{ "read-before-buffer-start", M_QP_FAILED },
	{ "write-with-wrong-rkey", M_QP_FAILED },
	{ "atomic-on-write-read-buffer", M_QP_FAILED },
	{ "atomic-past-the-word", M_QP_FAILED },
	{ NULL, NULL },
};

static void pause_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/*
 * The connect request with a valid HELLO, the server's CONNECT_RESPONSE
 * (its REP), and never the RTU: without id->qp, librdmacm hands the
 * response to us and sends the RTU only on rdma_establish, which we never
 * call. The server must give up after its --timeout.
 */
static int m_no_rtu(struct hc *h, int arg)
{
	struct rw_hello hello = { .len = R_LEN, .ops = RW_OP_BOTH, .read_depth = 4 };
	uint8_t priv[RW_HELLO_LEN];
	struct rdma_conn_param p = { .private_data = priv,
				     .private_data_len = sizeof(priv),
				     .initiator_depth = 4,
				     .retry_count = 7,
				     .rnr_retry_count = 7 };
	struct rc_cm_info info;
	struct ibv_qp *qp;
	uint64_t t0;
	int ret = hc_prepare(h);

	(void)arg;
	if (ret)
		return ret;
	rw_hello_pack(priv, &hello);
	qp = h->c.id->qp;
	p.qp_num = qp->qp_num;
	h->c.id->qp = NULL; /* given back below, for rc_conn_destroy */
	ret = rdma_connect(h->c.id, &p)
		      ? rc_fail(&h->c.log, errno, "rdma_connect: %s", strerror(errno))
		      : 0;
	if (!ret)
		ret = rc_conn_wait_cm_event(&h->c, RDMA_CM_EVENT_CONNECT_RESPONSE, "connecting",
					    NULL);
	if (!ret) {
		t0 = rc_now_us();
		h->connected = true;
		/* Whatever the server's CM sends once it gives up (its id
		 * destroyed: a REJ) ends the wait; none within ours fails. */
		rc_conn_wait_cm_event(&h->c, RDMA_CM_EVENT_REJECTED, "waiting for the server",
				      &info);
		if (info.event != RC_CM_NO_EVENT) {
			note(h, "%s %.1f s after its CONNECT_RESPONSE (no RTU sent)",
			     rdma_event_str(info.event), (double)(rc_now_us() - t0) / 1e6);
			h->refused = true;
		} else {
			note(h, "%s", h->c.log.err);
		}
	}
	h->c.id->qp = qp;
	return ret;
}

/* A DONE about our R_LEN bytes with checksum sum, at tx offset 0. */
static int send_done(struct hc *h, uint64_t sum)
{
	struct rw_sum done = { .checksum = sum, .len = R_LEN };

	return hc_send(h, 0, rw_sum_pack(h->tx->addr, RW_T_DONE, 1, &done));
}

/* The server's RESULT into r: 0, or 1 (noted). */
static int take_result(struct hc *h, struct rw_sum *r)
{
	char err[200];

	if (hc_recv(h))
		return 1;
	if (rw_sum_unpack(h->last, h->last_len, RW_T_RESULT, 1, r, err, sizeof(err))) {
		note(h, "bad RESULT from the server: %s", err);
		return 1;
	}
	return 0;
}

/*
 * Not hostile: take BUF, stay silent for our --timeout (longer than the
 * server's), then DONE. The server probes a silent client (its NIC
 * answers) and keeps it: RESULT comes, with the checksum of the server's
 * pattern, untouched by us.
 */
static int m_idle_after_buf(struct hc *h, int arg)
{
	struct rw_hello hello = { .len = R_LEN, .ops = RW_OP_BOTH, .read_depth = 4 };
	uint8_t pattern[R_LEN];
	struct rw_sum r;
	struct rw_buf b;
	uint64_t sum;
	int ret;

	(void)arg;
	ret = rw_connect_buf(h, &hello, &b);
	if (ret)
		return ret < 0 ? ret : 0;
	rw_fill_pattern(pattern, R_LEN, RW_SERVER_SEED);
	sum = rw_checksum(pattern, R_LEN);
	pause_ms(h->e->timeout_ms);
	ret = send_done(h, sum);
	if (ret)
		return ret;
	if (take_result(h, &r))
		return 0;
	note(h, "silent %d ms after BUF, then DONE: RESULT, checksum %s", h->e->timeout_ms,
	     r.checksum == sum && r.len == R_LEN ? "the server's pattern" : "WRONG");
	h->refused = r.checksum == sum && r.len == R_LEN;
	return 0;
}

/* After BUF: a second HELLO (as a SEND), or DONE, RESULT and a second
 * DONE: each a message the server was not due to get. */
static int m_out_of_order(struct hc *h, int arg)
{
	struct rw_hello hello = { .len = R_LEN, .ops = RW_OP_BOTH, .read_depth = 4 };
	struct rw_sum r;
	struct rw_buf b;
	int ret;

	ret = rw_connect_buf(h, &hello, &b);
	if (ret)
		return ret < 0 ? ret : 0;
	if (arg == 0) {
		rw_hello_pack(h->tx->addr, &hello);
		return hc_expect_dropped(h, hc_send(h, 0, RW_HELLO_LEN));
	}
	ret = send_done(h, 1);
	if (ret)
		return ret;
	if (take_result(h, &r))
		return 0;
	return hc_expect_dropped(h, send_done(h, 1));
}

const struct kase cases04[] = {
	{ "no-rtu", m_no_rtu, 0, "no ESTABLISHED within --timeout" },
	{ "idle-after-buf-probed", m_idle_after_buf, 0, NULL },
	{ "second-hello-after-buf", m_out_of_order, 0, "bad DONE from the client: " },
	{ "done-after-result", m_out_of_order, 1, "a message it was not due to send" },
	{ NULL, NULL, 0, NULL },
};
