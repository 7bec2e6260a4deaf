// SPDX-License-Identifier: MIT
/*
 * rdma-conn.c - part of the set rdma-common.h names: one connection's
 * life: its set-up (resolve, PD, CQ, QP, registered buffers), connect,
 * accept, reject, disconnect and teardown. See rdma-common.h.
 */
#define _GNU_SOURCE
#include "rdma-common.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- Connection setup ---- */

void rc_conn_init(struct rc_conn *c, const char *name, bool verbose, int timeout_ms, int cancel_fd)
{
	memset(c, 0, sizeof(*c));
	rc_log_init(&c->log, name, verbose);
	c->timeout_ms = timeout_ms;
	c->ack_timeout = RC_ACK_TIMEOUT;
	c->retry_count = RC_RETRY_COUNT;
	c->cancel_fd = cancel_fd;
	c->wake_fd = -1;
}

int rc_create_cm_channel(struct rc_log *log, struct rdma_event_channel **ch)
{
	*ch = rdma_create_event_channel();
	/* Non-blocking, so that we only ever wait in poll() with a timeout. */
	if (!*ch || fcntl((*ch)->fd, F_SETFL, O_NONBLOCK))
		return rc_fail_call(log, "rdma_create_event_channel", errno, NULL);
	return 0;
}

/* The cm_id and its own channel, for a client. */
static int create_client_id(struct rc_conn *c)
{
	int ret = rc_create_cm_channel(&c->log, &c->cm_channel);

	if (ret)
		return ret;
	/* RDMA_PS_TCP: reliable connected service, ports like TCP's. */
	if (rdma_create_id(c->cm_channel, &c->id, c, RDMA_PS_TCP))
		return rc_fail(&c->log, errno, "rdma_create_id: %s", strerror(errno));
	return 0;
}

/* Address, then route, from src (NULL: the kernel's choice) to dst. */
static int resolve(struct rc_conn *c, const struct sockaddr *src, const struct sockaddr *dst)
{
	int ret;

	rc_format_addr(dst, c->peer, sizeof(c->peer));
	/* Find the local RDMA device that reaches this IP address. */
	ret = rdma_resolve_addr(c->id, (struct sockaddr *)src, (struct sockaddr *)dst,
				c->timeout_ms)
		      ? errno
		      : 0;
	if (ret)
		return rc_fail(&c->log, ret, "rdma_resolve_addr(%s): %s; hint: %s", c->peer,
			       strerror(ret), rc_call_hint("rdma_resolve_addr", ret));
	ret = rc_conn_wait_cm_event(c, RDMA_CM_EVENT_ADDR_RESOLVED, "resolving the address", NULL);
	if (ret)
		return ret;

	/* Find the path (for RoCE: the GID and the next hop's MAC). */
	if (rdma_resolve_route(c->id, c->timeout_ms))
		return rc_fail_call(&c->log, "rdma_resolve_route", errno, NULL);
	return rc_conn_wait_cm_event(c, RDMA_CM_EVENT_ROUTE_RESOLVED, "resolving the route", NULL);
}

int rc_client_resolve(struct rc_conn *c, const char *host, const char *port)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP };
	struct rdma_addrinfo *res = NULL;
	struct sockaddr_storage dst;
	int ret;

	ret = create_client_id(c);
	if (ret)
		return ret;
	/* rdma_getaddrinfo takes IPv4, IPv6 and host names alike. */
	ret = rdma_getaddrinfo(host, port, &hints, &res);
	if (ret)
		return rc_fail(&c->log, ret == -1 ? errno : EHOSTUNREACH,
			       "cannot resolve '%s' port %s: %s; hint: use the server's IP address "
			       "on its RDMA netdev",
			       host, port, ret == -1 ? strerror(errno) : gai_strerror(ret));
	memset(&dst, 0, sizeof(dst));
	memcpy(&dst, res->ai_dst_addr,
	       res->ai_dst_len < sizeof(dst) ? res->ai_dst_len : sizeof(dst));
	rdma_freeaddrinfo(res);
	return resolve(c, NULL, (struct sockaddr *)&dst);
}

int rc_client_resolve_beside(struct rc_conn *c, const struct rc_conn *first, uint16_t port)
{
	struct sockaddr_storage src, dst;
	int ret;

	if (!first->id)
		return rc_fail(&c->log, EINVAL, "%s",
			       "rc_client_resolve_beside: the first connection has no cm_id yet");
	/* The first connection's two ends: the same device and path. */
	if (rc_addr_with_port(&src, rdma_get_local_addr(first->id), 0) ||
	    rc_addr_with_port(&dst, rdma_get_peer_addr(first->id), port))
		return rc_fail(&c->log, EAFNOSUPPORT, "%s",
			       "rc_client_resolve_beside: IPv4 and IPv6 only");
	ret = create_client_id(c);
	if (ret)
		return ret;
	return resolve(c, (struct sockaddr *)&src, (struct sockaddr *)&dst);
}

/* PD, completion channel and CQ for this connection's device. */
static int create_dev(struct rc_conn *c, int cq_size)
{
	struct rc_dev *d = &c->dev;
	struct ibv_port_attr pattr;
	struct ibv_device_attr dattr;

	d->verbs = c->id->verbs;
	if (!d->verbs)
		return rc_fail(&c->log, ENODEV, "the connection has no RDMA device yet");
	if (ibv_query_port(d->verbs, c->id->port_num, &pattr) || ibv_query_device(d->verbs, &dattr))
		return rc_fail(&c->log, errno, "querying device %s: %s",
			       ibv_get_device_name(d->verbs->device), strerror(errno));
	d->max_msg_sz = pattr.max_msg_sz;
	d->max_rd_atom = dattr.max_qp_rd_atom > 255 ? 255 : (uint8_t)dattr.max_qp_rd_atom;
	d->vendor_id = dattr.vendor_id;

	/* The PD groups the QP and the MRs it may use. */
	d->pd = ibv_alloc_pd(d->verbs);
	if (!d->pd)
		return rc_fail(&c->log, errno, "ibv_alloc_pd: %s", strerror(errno));
	/* The channel turns "a completion arrived" into a readable fd. */
	d->channel = ibv_create_comp_channel(d->verbs);
	if (!d->channel || fcntl(d->channel->fd, F_SETFL, O_NONBLOCK))
		return rc_fail_call(&c->log, "ibv_create_comp_channel", errno, NULL);
	/* Big enough for every WR the QP can have outstanding: a full CQ
	 * would put the QP in the error state. */
	d->cq = ibv_create_cq(d->verbs, cq_size, c, d->channel, 0);
	if (!d->cq)
		return rc_fail(&c->log, errno, "ibv_create_cq(%d entries): %s", cq_size,
			       strerror(errno));
	d->cq_size = d->cq->cqe;
	return 0;
}

int rc_create_qp(struct rc_conn *c, const struct ibv_qp_cap *cap)
{
	struct ibv_qp_init_attr attr = { 0 };
	int ret;

	ret = create_dev(c, (int)(cap->max_send_wr + cap->max_recv_wr));
	if (ret)
		return ret;
	attr.send_cq = c->dev.cq;
	attr.recv_cq = c->dev.cq;
	attr.qp_type = IBV_QPT_RC; /* reliable connected: acked, in order */
	attr.cap = *cap;	   /* explicit caps; the driver may round up */
	attr.sq_sig_all = 0;	   /* each send says whether it wants a completion */
	/* rdma_create_qp: the CM will move it through INIT, RTR and RTS. */
	if (rdma_create_qp(c->id, c->dev.pd, &attr))
		return rc_fail(&c->log, errno,
			       "rdma_create_qp(send %u, recv %u, sge %u): %s; hint: `ibv_devinfo "
			       "-v` shows the device limits",
			       cap->max_send_wr, cap->max_recv_wr, cap->max_send_sge,
			       strerror(errno));
	c->qp = c->id->qp;
	c->cap = attr.cap; /* what we really got */
	rc_trace(&c->log, "created RC QP %u (send %u, recv %u) on %s, CQ of %d", c->qp->qp_num,
		 c->cap.max_send_wr, c->cap.max_recv_wr, ibv_get_device_name(c->dev.verbs->device),
		 c->dev.cq_size);
	return 0;
}

int rc_create_qp_beside(struct rc_conn *c, struct rc_conn *owner, const struct ibv_qp_cap *cap)
{
	struct ibv_qp_init_attr attr = { .qp_type = IBV_QPT_RC, .cap = *cap };

	if (!c->id || !owner->qp)
		return rc_fail(&c->log, EINVAL, "%s",
			       "rc_create_qp_beside: resolve this connection and create the "
			       "owner's QP first");
	/* A PD belongs to one device: the second id must have resolved to
	 * the owner's. */
	if (c->id->verbs != owner->dev.verbs)
		return rc_fail(&c->log, EXDEV,
			       "the second connection is on device %s, the first on %s; hint: "
			       "connect both to the same address",
			       c->id->verbs ? ibv_get_device_name(c->id->verbs->device) : "?",
			       owner->dev.verbs ? ibv_get_device_name(owner->dev.verbs->device)
						: "?");
	c->owner = owner;
	c->dev = owner->dev;
	attr.send_cq = c->dev.cq;
	attr.recv_cq = c->dev.cq;
	/* rdma_create_qp: the CM will move it through INIT, RTR and RTS. */
	if (rdma_create_qp(c->id, c->dev.pd, &attr))
		return rc_fail(
			&c->log, errno,
			"rdma_create_qp(send %u, recv %u) beside QP %u: %s; hint: `ibv_devinfo "
			"-v` shows the device limits",
			cap->max_send_wr, cap->max_recv_wr, owner->qp->qp_num, strerror(errno));
	c->qp = c->id->qp;
	c->cap = attr.cap;
	rc_trace(&c->log, "created RC QP %u (send %u, recv %u) on the PD and CQ of QP %u",
		 c->qp->qp_num, c->cap.max_send_wr, c->cap.max_recv_wr, owner->qp->qp_num);
	return 0;
}

int rc_buf_alloc(struct rc_conn *c, size_t len, int access, struct rc_buf **out)
{
	long page = sysconf(_SC_PAGESIZE);
	struct rc_buf *b;
	int ret;

	if (!c->dev.pd)
		return rc_fail(&c->log, EINVAL, "rc_buf_alloc before rc_create_qp");
	b = calloc(1, sizeof(*b));
	if (!b)
		return rc_fail(&c->log, ENOMEM, "out of memory");
	/* Page alignment is good practice (fewer pages pinned), not a rule. */
	ret = posix_memalign(&b->addr, (size_t)page, len ? len : 1);
	if (ret) {
		free(b);
		return rc_fail(&c->log, ret, "posix_memalign(%zu): %s", len, strerror(ret));
	}
	memset(b->addr, 0, len ? len : 1);
	b->len = len;
	/* Pin the pages and give the NIC a translation: lkey for local
	 * access, rkey for the peer (only if access allows it). */
	b->mr = ibv_reg_mr(c->dev.pd, b->addr, len ? len : 1, access);
	if (!b->mr) {
		ret = errno;
		free(b->addr);
		free(b);
		return rc_fail(&c->log, ret, "ibv_reg_mr(%zu bytes): %s; hint: %s", len,
			       strerror(ret), rc_call_hint("ibv_reg_mr", ret));
	}
	b->next = c->bufs;
	c->bufs = b;
	rc_trace(&c->log, "registered %zu bytes lkey=0x%x rkey=0x%x", len, b->mr->lkey,
		 b->mr->rkey);
	*out = b;
	return 0;
}

/* rdma_connect (client) or rdma_accept (server); ESTABLISHED comes later. */
static int start_connection(struct rc_conn *c, bool client, const void *priv, uint8_t priv_len,
			    uint8_t initiator_depth, uint8_t responder_resources)
{
	const char *call = client ? "rdma_connect" : "rdma_accept";
	/* The retry counts: rdma-common.h explains them. A server's
	 * retry_count goes unused: its QP takes the client's. */
	struct rdma_conn_param param = { .private_data = priv,
					 .private_data_len = priv_len,
					 .initiator_depth = initiator_depth,
					 .responder_resources = responder_resources,
					 .retry_count = c->retry_count,
					 .rnr_retry_count = RC_RNR_RETRY_COUNT };
	uint8_t t = c->ack_timeout;

	/* The local ACK timeout (rdma-common.h explains the value): rdma_cm
	 * applies it when it moves the QP to RTS. */
	if (rdma_set_option(c->id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &t, sizeof(t)))
		return rc_fail_call(&c->log, "rdma_set_option(ACK_TIMEOUT)", errno, NULL);
	rc_trace(&c->log, "%s%s%s", call, client ? " to " : "", client ? c->peer : "");
	if (client ? rdma_connect(c->id, &param) : rdma_accept(c->id, &param))
		return rc_fail(&c->log, errno, "%s: %s", call, strerror(errno));
	return 0;
}

int rc_connect_start(struct rc_conn *c, const void *priv, uint8_t priv_len, uint8_t initiator_depth,
		     uint8_t responder_resources)
{
	if (priv_len > 56)
		return rc_fail(&c->log, EINVAL, "connect private data is %u bytes, at most 56 fit",
			       priv_len);
	return start_connection(c, true, priv, priv_len, initiator_depth, responder_resources);
}

int rc_client_connect(struct rc_conn *c, const void *priv, uint8_t priv_len,
		      uint8_t initiator_depth, uint8_t responder_resources)
{
	int ret = rc_connect_start(c, priv, priv_len, initiator_depth, responder_resources);

	return ret ? ret : rc_conn_wait_cm_event(c, RDMA_CM_EVENT_ESTABLISHED, "connecting", NULL);
}

int rc_accept_start(struct rc_conn *c, uint8_t initiator_depth, uint8_t responder_resources)
{
	return start_connection(c, false, NULL, 0, initiator_depth, responder_resources);
}

int rc_accept(struct rc_conn *c, uint8_t initiator_depth, uint8_t responder_resources)
{
	int ret;

	/* Refused before rdma_accept: nobody here would see ESTABLISHED. */
	if (!c->cm_channel)
		return rc_conn_wait_cm_event(c, RDMA_CM_EVENT_ESTABLISHED, "accepting", NULL);
	ret = rc_accept_start(c, initiator_depth, responder_resources);
	return ret ? ret : rc_conn_wait_cm_event(c, RDMA_CM_EVENT_ESTABLISHED, "accepting", NULL);
}

int rc_reject_id(struct rdma_cm_id *id, const char *reason)
{
	uint8_t priv[RC_REJECT_MAX];

	/* A REJECT message in the private data: the client prints it. */
	return rdma_reject(id, priv, rc_reject_pack(priv, reason)) ? -errno : 0;
}

int rc_reject(struct rc_conn *c, const char *reason)
{
	int ret;

	rc_trace(&c->log, "rdma_reject: %s", reason);
	ret = rc_reject_id(c->id, reason);
	return ret ? rc_fail_call(&c->log, "rdma_reject", -ret, NULL) : 0;
}

int rc_disconnect(struct rc_conn *c)
{
	if (!c->established || c->local_disconnected)
		return 0;
	c->local_disconnected = true;
	rc_trace(&c->log, "rdma_disconnect");
	/* Moves the QP to the error state (posted receives flush) and tells
	 * the peer. */
	if (rdma_disconnect(c->id))
		return rc_fail(&c->log, errno, "rdma_disconnect: %s", strerror(errno));
	/* Its goodbye came already, or goes to an event loop (the channel
	 * rule): nothing to wait for here. */
	if (c->peer_disconnected || !c->cm_channel)
		return 0;
	return rc_conn_wait_cm_event(c, RDMA_CM_EVENT_DISCONNECTED, "disconnecting", NULL);
}

/* A release the verbs refused: the object is leaked, so say so after what
 * log.err holds. Returns the first failure's -errno. */
static int release_failed(struct rc_conn *c, int first, const char *call, int err, const char *hint)
{
	size_t n = strlen(c->log.err);

	snprintf(c->log.err + n, sizeof(c->log.err) - n, "%s%s: %s; hint: %s",
		 n ? "; and releasing the connection, " : "releasing the connection, ", call,
		 strerror(err), hint);
	return first ? first : -err;
}

/* The connection's registered buffers, each deregistered, then freed. */
static int free_bufs(struct rc_conn *c, int ret)
{
	struct rc_buf *b;
	int err;

	while ((b = c->bufs)) {
		c->bufs = b->next;
		/* EBUSY while a memory window is bound to it: keep the memory,
		 * which the NIC may still reach. */
		err = ibv_dereg_mr(b->mr);
		if (err) {
			ret = release_failed(c, ret, "ibv_dereg_mr", err,
					     "a memory window is still bound to it; its memory is "
					     "leaked");
			continue;
		}
		free(b->addr);
		free(b);
	}
	return ret;
}

/* dev's PD, channel and CQ, unless they are a shared device's or another
 * connection's. */
static int free_dev(struct rc_conn *c, int ret)
{
	struct rc_dev *d = &c->dev;
	int err;

	if (c->shared || c->owner)
		goto out;
	if (d->cq && (err = ibv_destroy_cq(d->cq)))
		ret = release_failed(c, ret, "ibv_destroy_cq", err,
				     "a QP made outside rc_create_qp is still on it");
	if (d->channel && (err = ibv_destroy_comp_channel(d->channel)))
		ret = release_failed(c, ret, "ibv_destroy_comp_channel", err,
				     "a CQ made outside rc_create_qp still uses it");
	/* EBUSY: memory or a window the caller registered on this PD itself
	 * is still there; the PD is leaked, and with it that memory. */
	if (d->pd && (err = ibv_dealloc_pd(d->pd)))
		ret = release_failed(c, ret, "ibv_dealloc_pd", err,
				     "memory or a window registered on the connection's PD outside "
				     "rc_buf_alloc is still there: release it first");
out:
	memset(d, 0, sizeof(*d));
	c->shared = NULL;
	c->owner = NULL;
	return ret;
}

int rc_conn_destroy(struct rc_conn *c)
{
	int ret = 0;

	/* Reverse order of creation. */
	if (c->id && c->established && !c->local_disconnected) {
		c->local_disconnected = true;
		rdma_disconnect(c->id);
	}
	if (c->qp) {
		rdma_destroy_qp(c->id); /* first: nothing may use the MRs now */
		c->qp = NULL;
	}
	ret = free_bufs(c, ret);
	ret = free_dev(c, ret);
	if (c->id && rdma_destroy_id(c->id))
		ret = release_failed(c, ret, "rdma_destroy_id", errno, "see `man rdma_destroy_id`");
	c->id = NULL;
	/* Only a channel of its own (the channel rule, rdma-listen.h). */
	if (c->cm_channel)
		rdma_destroy_event_channel(c->cm_channel);
	c->cm_channel = NULL;
	return ret;
}
