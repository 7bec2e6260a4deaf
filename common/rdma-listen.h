/* SPDX-License-Identifier: MIT */
/*
 * rdma-listen.h - part of the set rdma-common.h names: a listener, and how
 * a connect request becomes a connection (rdma-listen.c).
 *
 * The channel rule. Every CM event of an id goes to the event channel the
 * id is on. A listener's connect requests arrive on its channel, each with
 * a new id, and that id's later events (ESTABLISHED, DISCONNECTED, ...)
 * go there too, unless the id moves to another channel (rdma_migrate_id).
 * An id's events must have exactly one reader, so a server chooses:
 *  - A thread per connection (rc-server.c, 02's and 03's servers): move
 *    it. rc_take_request(c, info, true) gives the connection a channel of
 *    its own, which only its thread reads: rc_accept, rc_conn_wait_cm_event
 *    and rc_disconnect wait there, rc_next_wc watches it for DISCONNECTED,
 *    and rc_conn_destroy destroys it with the id.
 *  - One event loop for all connections: keep every id on the listener's
 *    channel: rc_take_request(c, info, false), c->cm_channel stays NULL.
 *    The loop takes each event off that one fd (rc_take_cm_event) and
 *    tells them apart: a CONNECT_REQUEST (rc_take_request), the listener's
 *    own (info.id == l->id: DEVICE_REMOVAL), or a connection's: its
 *    id->context is its struct rc_conn (rc_take_request sets it), which
 *    gets the event through rc_conn_cm_event. Then the waits of the
 *    connection do not wait on CM events: rc_accept and
 *    rc_conn_wait_cm_event refuse (-EINVAL; use rc_accept_start), and
 *    rc_disconnect does not wait for DISCONNECTED; rc_next_wc, on a CQ of
 *    the connection's own, watches its CQ, cancel_fd and wake_fd, and
 *    c->peer_disconnected as the loop records it.
 * Either way rc_take_cm_event acknowledges each event at once, as
 * rdma_destroy_id needs before it returns, so rc_conn_destroy never waits.
 */
#ifndef RDMA_LISTEN_H
#define RDMA_LISTEN_H

#include "rdma-common.h"

/* rc_listen's backlog in 02's and 03's servers. The kernel caps any at
 * net.rdma_ucm.max_backlog (1024 by default). */
#define RC_BACKLOG 16

struct rc_listener {
	struct rc_log log;
	/* Its connect requests, and unmoved connections' events, arrive here. */
	struct rdma_event_channel *channel;
	bool own_channel;      /* rc_listen created it: rc_listener_close destroys it */
	struct rdma_cm_id *id; /* id->context is the listener */
	char addr[64];	       /* the bound address as text */
	uint16_t port;	       /* the bound port (the real one when 0 was asked) */
};

/*
 * Bind to bind_addr (an IPv4 or IPv6 address; NULL: all) and port ("0":
 * any free one), and listen, with up to backlog connect requests queued
 * while the program is busy. Events arrive on ch, the caller's
 * non-blocking channel (rc_create_cm_channel), or, ch NULL, on one the
 * listener creates. log name "server". 0, or a negative errno with
 * l->log.err (rc_listener_close releases what was set up).
 */
int rc_listen(struct rc_listener *l, struct rdma_event_channel *ch, const char *bind_addr,
	      const char *port, int backlog, bool verbose);
/*
 * rc_listen on a socket address instead of text (its port 0: any free
 * one, then in l->port): e.g. a connection's own address
 * (rdma_get_local_addr), for a second connection from the same peer to
 * reach the same device.
 */
int rc_listen_at(struct rc_listener *l, struct rdma_event_channel *ch, const struct sockaddr *sa,
		 int backlog, bool verbose);
/* Destroy the listener's id, and its channel if it is its own. */
void rc_listener_close(struct rc_listener *l);

/*
 * A CONNECT_REQUEST (info, from rc_take_cm_event on the listener's
 * channel) becomes connection c, which rc_conn_init prepared: c takes the
 * request's id (id->context = c) and owns it from now on, whatever this
 * returns: reject it (rc_reject) or accept it, then rc_conn_destroy. c
 * gets the peer's address (c->peer) and the depths it asked for; with
 * own_channel, a channel of its own (the channel rule, above). The
 * request's private data stays in info (a HELLO to validate). 0, or a
 * negative errno with c->log.err.
 */
int rc_take_request(struct rc_conn *c, const struct rc_cm_info *info, bool own_channel);

#endif /* RDMA_LISTEN_H */
