// SPDX-License-Identifier: MIT
/*
 * rdma-listen.c - part of the set rdma-common.h names: listen, and turn a
 * connect request into a connection under the channel rule. See
 * rdma-listen.h.
 */
#define _GNU_SOURCE
#include "rdma-common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>

/* Bind l's id to bind_addr/port: a plain IPv4/IPv6 address, the RDMA
 * netdev's or "any". */
static int bind_listener(struct rc_listener *l, const char *bind_addr, const char *port)
{
	struct rdma_addrinfo hints = { .ai_flags = RAI_PASSIVE, .ai_port_space = RDMA_PS_TCP };
	struct rdma_addrinfo *res = NULL;
	const char *addr = bind_addr ? bind_addr : "0.0.0.0";
	int ret;

	ret = rdma_getaddrinfo(addr, port, &hints, &res);
	if (ret)
		return rc_fail(&l->log, ret == -1 ? errno : EINVAL,
			       "cannot use address '%s' port %s: %s", addr, port,
			       ret == -1 ? strerror(errno) : gai_strerror(ret));
	/* An address of an RDMA netdev ties the id to that device now. */
	ret = rdma_bind_addr(l->id, res->ai_src_addr) ? errno : 0;
	rdma_freeaddrinfo(res);
	if (ret)
		return rc_fail(&l->log, ret, "rdma_bind_addr(%s port %s): %s; hint: %s", addr, port,
			       strerror(ret), rc_call_hint("rdma_bind_addr", ret));
	return 0;
}

/* A fresh listener: its channel (ch, or its own) and its id. */
static int open_listener(struct rc_listener *l, struct rdma_event_channel *ch, bool verbose)
{
	int ret;

	memset(l, 0, sizeof(*l));
	rc_log_init(&l->log, "server", verbose);
	l->channel = ch;
	if (!ch) {
		ret = rc_create_cm_channel(&l->log, &l->channel);
		if (ret)
			return ret;
		l->own_channel = true;
	}
	/* RDMA_PS_TCP: reliable connected service, ports like TCP's. */
	if (rdma_create_id(l->channel, &l->id, l, RDMA_PS_TCP))
		return rc_fail(&l->log, errno, "rdma_create_id: %s", strerror(errno));
	return 0;
}

/* Listen on the bound id; record where. */
static int start_listening(struct rc_listener *l, int backlog)
{
	/* Backlog: connect requests the CM queues while we are busy. */
	if (rdma_listen(l->id, backlog))
		return rc_fail(&l->log, errno, "rdma_listen: %s", strerror(errno));
	rc_format_addr(rdma_get_local_addr(l->id), l->addr, sizeof(l->addr));
	*strstr(l->addr, " port ") = '\0';
	l->port = ntohs(rdma_get_src_port(l->id));
	rc_trace(&l->log, "listening on %s port %u", l->addr, l->port);
	return 0;
}

int rc_listen(struct rc_listener *l, struct rdma_event_channel *ch, const char *bind_addr,
	      const char *port, int backlog, bool verbose)
{
	int ret = open_listener(l, ch, verbose);

	if (!ret)
		ret = bind_listener(l, bind_addr, port);
	return ret ? ret : start_listening(l, backlog);
}

int rc_listen_at(struct rc_listener *l, struct rdma_event_channel *ch, const struct sockaddr *sa,
		 int backlog, bool verbose)
{
	char where[64];
	int ret = open_listener(l, ch, verbose);

	if (ret)
		return ret;
	/* sa is a connection's own address: it ties the id to its device. */
	if (rdma_bind_addr(l->id, (struct sockaddr *)sa)) {
		ret = errno;
		rc_format_addr(sa, where, sizeof(where));
		return rc_fail(&l->log, ret, "rdma_bind_addr(%s): %s; hint: %s", where,
			       strerror(ret), rc_call_hint("rdma_bind_addr", ret));
	}
	return start_listening(l, backlog);
}

void rc_listener_close(struct rc_listener *l)
{
	if (l->id)
		rdma_destroy_id(l->id);
	if (l->channel && l->own_channel)
		rdma_destroy_event_channel(l->channel);
	l->id = NULL;
	l->channel = NULL;
}

int rc_take_request(struct rc_conn *c, const struct rc_cm_info *info, bool own_channel)
{
	struct rdma_cm_id *id = info->id;
	int ret;

	if (info->event != RDMA_CM_EVENT_CONNECT_REQUEST || !id)
		return rc_fail(&c->log, EINVAL, "rc_take_request: %s is not a connect request",
			       rdma_event_str(info->event));
	/* From now on c owns the id: rc_conn_destroy destroys it. */
	c->id = id;
	id->context = c; /* an event loop finds the connection of an event here */
	rc_format_addr(rdma_get_peer_addr(id), c->peer, sizeof(c->peer));
	c->peer_initiator_depth = info->initiator_depth;
	c->peer_responder_resources = info->responder_resources;
	if (!own_channel)
		return 0; /* its events stay on the listener's channel */
	/* Its own channel: its events (ESTABLISHED, DISCONNECTED) then reach
	 * only the thread that serves it. */
	ret = rc_create_cm_channel(&c->log, &c->cm_channel);
	if (ret)
		return ret;
	if (rdma_migrate_id(id, c->cm_channel))
		return rc_fail(&c->log, errno, "rdma_migrate_id: %s", strerror(errno));
	return 0;
}
