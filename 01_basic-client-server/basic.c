// SPDX-License-Identifier: MIT
/*
 * basic.c - what 01's client and server share: the messages, and the
 * librdmacm and verbs steps both sides take the same way.
 */
#define _GNU_SOURCE
#include "basic.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void basic_hello_pack(uint8_t buf[BASIC_HELLO_LEN], uint32_t max_payload)
{
	uint32_t be = htobe32(max_payload);

	rc_hdr_pack(buf, BASIC_T_HELLO, 4, 0);
	memcpy(buf + sizeof(struct rc_hdr), &be, 4);
}

int basic_hello_unpack(const void *priv, size_t len, uint32_t *max_payload, char *err,
		       size_t errlen)
{
	struct rc_msg m;
	uint32_t be;
	int ret;

	ret = rc_priv_unpack(priv, len, &m, err, errlen);
	if (ret)
		return ret;
	if (m.type != BASIC_T_HELLO || m.length != 4) {
		snprintf(err, errlen, "expected a HELLO of 4 bytes, got type 0x%02x of %u bytes",
			 m.type, m.length);
		return -EBADMSG;
	}
	memcpy(&be, m.body, 4);
	*max_payload = be32toh(be);
	if (*max_payload < 1 || *max_payload > BASIC_MAX_PAYLOAD) {
		snprintf(err, errlen, "payload size %u is outside 1..%u", *max_payload,
			 BASIC_MAX_PAYLOAD);
		return -ERANGE;
	}
	return 0;
}

size_t basic_msg_pack(void *buf, uint8_t type, uint32_t seq, const void *payload, uint32_t len)
{
	rc_hdr_pack(buf, type, len, seq);
	memcpy((uint8_t *)buf + sizeof(struct rc_hdr), payload, len);
	return sizeof(struct rc_hdr) + len;
}

int basic_msg_unpack(const void *buf, size_t byte_len, uint8_t want_type, uint32_t want_seq,
		     uint32_t max_payload, struct rc_msg *m, char *err, size_t errlen)
{
	int ret = rc_hdr_unpack(buf, byte_len, m, err, errlen);

	if (ret)
		return ret;
	if (m->type != want_type) {
		snprintf(err, errlen, "message type 0x%02x, expected 0x%02x", m->type, want_type);
		return -EBADMSG;
	}
	if (m->seq != want_seq) {
		snprintf(err, errlen, "sequence number %u, expected %u", m->seq, want_seq);
		return -EBADMSG;
	}
	if (m->length < 1 || m->length > max_payload) {
		snprintf(err, errlen, "payload of %u bytes is outside 1..%u", m->length,
			 max_payload);
		return -EBADMSG;
	}
	return 0;
}

void basic_fill_pattern(uint8_t *p, uint32_t len, uint32_t seq)
{
	static const char abc[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	uint32_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)abc[(i + seq) % (sizeof(abc) - 1)];
}

void basic_conn_init(struct basic_conn *v, const char *name, const struct rc_opts *o, int cancel_fd)
{
	rc_log_init(&v->log, name, o->verbose);
	v->timeout_ms = o->timeout_ms;
	v->busy_poll = o->busy_poll;
	v->cancel_fd = cancel_fd;
}

int basic_create_id(struct basic_conn *v, void *context)
{
	/* The CM reports each step's outcome as an event on this channel. */
	v->cm_ch = rdma_create_event_channel();
	if (!v->cm_ch)
		return rc_fail_call(&v->log, "rdma_create_event_channel", errno, NULL);
	/* Non-blocking: we wait only in poll(), with a timeout. */
	if (fcntl(v->cm_ch->fd, F_SETFL, O_NONBLOCK))
		return rc_fail_call(&v->log, "fcntl(O_NONBLOCK)", errno, NULL);
	/* RDMA_PS_TCP: reliable connected QPs, with ports as in TCP. */
	if (rdma_create_id(v->cm_ch, &v->id, context, RDMA_PS_TCP))
		return rc_fail_call(&v->log, "rdma_create_id", errno, NULL);
	return 0;
}

int basic_setup(struct basic_conn *v, size_t msg_len)
{
	struct ibv_qp_init_attr attr = {
		/* One message in flight each way; a spare in case of slow polling. */
		.cap = { .max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC, /* reliable connected: acknowledged, in order */
		.sq_sig_all = 0,       /* each send says whether it wants a completion */
	};
	struct ibv_context *dev = v->id->verbs;

	/* The protection domain: the QP may use only memory registered in it. */
	v->pd = ibv_alloc_pd(dev);
	if (!v->pd)
		return rc_fail_call(&v->log, "ibv_alloc_pd", errno, "is the device usable?");
	/* Lets us sleep until a completion arrives instead of spinning. */
	v->comp_ch = ibv_create_comp_channel(dev);
	if (!v->comp_ch)
		return rc_fail_call(&v->log, "ibv_create_comp_channel", errno, NULL);
	if (fcntl(v->comp_ch->fd, F_SETFL, O_NONBLOCK))
		return rc_fail_call(&v->log, "fcntl(O_NONBLOCK)", errno, NULL);
	/* One CQ, room for every WR of both queues: an overflow fails the QP. */
	v->cq = ibv_create_cq(dev, 4, NULL, v->comp_ch, 0);
	if (!v->cq)
		return rc_fail_call(&v->log, "ibv_create_cq", errno, NULL);
	attr.send_cq = attr.recv_cq = v->cq;
	/* On the CM's id: the CM moves it through INIT, RTR and RTS for us. */
	if (rdma_create_qp(v->id, v->pd, &attr))
		return rc_fail_call(&v->log, "rdma_create_qp", errno, NULL);
	rc_trace(&v->log, "created RC QP %u (send %u, recv %u) on %s, CQ of %d", v->id->qp->qp_num,
		 attr.cap.max_send_wr, attr.cap.max_recv_wr, ibv_get_device_name(dev->device),
		 v->cq->cqe);
	v->buf = calloc(2, msg_len);
	if (!v->buf)
		return rc_fail(&v->log, ENOMEM, "out of memory");
	/* Pins the pages and gives the NIC their lkey. It writes what arrives
	 * (LOCAL_WRITE), reads what we SEND (no flag); no REMOTE_*: no peer. */
	v->mr = ibv_reg_mr(v->pd, v->buf, 2 * msg_len, IBV_ACCESS_LOCAL_WRITE);
	if (!v->mr)
		return rc_fail_call(&v->log, "ibv_reg_mr", errno, NULL);
	rc_trace(&v->log, "registered %zu bytes lkey=0x%x rkey=0x%x", 2 * msg_len, v->mr->lkey,
		 v->mr->rkey);
	return 0;
}

int basic_post_recv(struct basic_conn *v, size_t off, size_t len, uint64_t wr_id)
{
	struct ibv_sge sge = { (uintptr_t)(v->buf + off), (uint32_t)len, v->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;
	int ret;

	rc_trace(&v->log, "post RECV wr_id=%" PRIu64 " len=%zu", wr_id, len);
	/* Queued at once; it completes when a message has landed in it. */
	ret = ibv_post_recv(v->id->qp, &wr, &bad);
	if (ret)
		return rc_fail_call(&v->log, "ibv_post_recv", ret, NULL);
	return 0;
}

int basic_next_wc(struct basic_conn *v, struct ibv_wc *wc)
{
	struct ibv_comp_channel *ch = v->busy_poll ? NULL : v->comp_ch;
	int fds[2] = { v->cm_ch->fd, v->cancel_fd }, n, ret;
	struct rc_cq_wait w = { 0 };
	struct rc_cm_info ev;
	bool armed = false;
	struct ibv_cq *cq;
	void *ctx;

	for (;;) {
		/* Takes a completion if one is queued; never blocks. */
		n = ibv_poll_cq(v->cq, 1, wc);
		if (n > 0)
			return rc_wc_check(&v->log, wc);
		if (n < 0)
			return rc_fail(&v->log, EIO, "ibv_poll_cq failed (%d)", n);
		if (v->peer_disconnected)
			return 1; /* the peer said goodbye, and nothing is left */
		if (ch && !armed) {
			/* Ask for an event, then poll once more: one may have come first. */
			if (ibv_req_notify_cq(v->cq, 0))
				return rc_fail_call(&v->log, "ibv_req_notify_cq", errno, NULL);
			armed = true;
			continue;
		}
		/* Bounded; the CM's fd too: a peer that leaves ends the wait. */
		ret = rc_wait_cq(&w, ch, fds, 2, v->timeout_ms, &v->log);
		if (ret == 1) {
			/* DISCONNECTED (else an error): then a last look. */
			ret = rc_wait_cm_event(v->cm_ch, RDMA_CM_EVENT_DISCONNECTED, 0, -1,
					       "waiting for a completion", &v->log, &ev);
			if (ret)
				return ret;
			v->peer_disconnected = true;
		} else if (ret == 2) {
			return rc_fail(&v->log, ECANCELED, "cancelled (shutting down)");
		} else if (ret < 0) {
			return ret;
		} else if (ch && ibv_get_cq_event(ch, &cq, &ctx) == 0) {
			/* Acknowledged: ibv_destroy_cq waits for every event. */
			ibv_ack_cq_events(cq, 1);
			armed = false;
		}
	}
}

void basic_teardown(struct basic_conn *v)
{
	if (v->established)
		rdma_disconnect(v->id); /* a failure midway: still tell the peer */
	if (v->id && v->id->qp)
		rdma_destroy_qp(v->id); /* first: then nothing uses the MR */
	if (v->mr)
		ibv_dereg_mr(v->mr);
	if (v->cq)
		ibv_destroy_cq(v->cq);
	if (v->comp_ch)
		ibv_destroy_comp_channel(v->comp_ch);
	if (v->pd)
		ibv_dealloc_pd(v->pd);
	if (v->id)
		rdma_destroy_id(v->id);
	if (v->cm_ch)
		rdma_destroy_event_channel(v->cm_ch);
	free(v->buf);
}
