/* SPDX-License-Identifier: MIT */
/*
 * rc-server.h - a server's life around the RDMA calls: serve each client
 * on its own thread with its own struct rc_conn (its id on a channel of
 * its own: the channel rule of rdma-listen.h), turn SIGINT and SIGTERM
 * into a clean shutdown. Built on the set rdma-common.h names (the
 * listener is rdma-listen.h's); a service with its own event loop needs
 * only that set.
 */
#ifndef RC_SERVER_H
#define RC_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rc-allow.h"
#include "rdma-common.h"

/*
 * Handles one client, from QP creation to the end of the conversation.
 * `priv`/`priv_len` is the private data of the connect request (already
 * copied). Return 0 when the client finished normally, else a negative
 * errno with c->log.err set. The connection is destroyed afterwards; a
 * release the verbs refuse there (a leak) makes a 0 a failure.
 */
typedef int (*rc_serve_fn)(struct rc_conn *c, const void *priv, size_t priv_len, void *arg);

struct rc_serve_opts {
	int max_clients; /* more at once are rejected as busy */
	bool once;	 /* return after the first client */
	int timeout_ms;
	bool verbose;
	int stop_fd;		      /* readable = shut down (e.g. a signalfd) */
	enum rc_poll_mode poll_mode;  /* each connection's (see rc_conn) */
	int ack_timeout, retry_count; /* each connection's (see rc_conn) */
	const struct rc_allow *allow; /* NULL or empty: everyone may connect */
	/* Each connection's (see rc_conn); rc_server_main sets rc_link_counters. */
	const struct rc_link_hooks *link_hooks;
};

/*
 * Accept clients until stop_fd becomes readable (or after one with once),
 * each on its own thread, then cancel the remaining ones, wait for them
 * and return. A client's failure is logged to stderr and never ends the
 * loop. Returns 0, or a negative errno (with l->log.err) if listening
 * itself failed; with once, -EIO if that one client failed.
 */
int rc_serve(struct rc_listener *l, const struct rc_serve_opts *o, rc_serve_fn fn, void *arg);

/* SIGINT and SIGTERM blocked (in the calling thread and the threads it
 * starts later) and delivered as a readable signalfd instead, for a
 * server's poll or epoll. The fd, or -1 if it could not be made. */
int rc_stop_fd(void);

/*
 * A server's whole life, what every example's server main does:
 * SIGINT/SIGTERM become a signalfd (blocked in every thread), listen on
 * bind/port, print "listening on ADDR port N" to stdout (only now: the
 * server is ready), serve each client with fn on its own thread until a
 * signal (or after one client with o->once), release everything.
 * Errors go to stderr as "PROG: message". Returns the exit code for main:
 * 0; 1 if serving failed or, with once, that client failed; 3 if it could
 * not listen.
 */
struct rc_opts;
int rc_server_main(const char *prog, const struct rc_opts *o, rc_serve_fn fn, void *arg);

#endif /* RC_SERVER_H */
