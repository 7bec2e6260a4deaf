// SPDX-License-Identifier: MIT
/*
 * rc-server.c - serve each client on its own thread, stop on
 * SIGINT/SIGTERM. See rc-server.h. Every RDMA call it makes goes through
 * the set rdma-common.h names: rc_listen, rc_take_request (each client's
 * id on a channel of its own: the channel rule), rc_conn_destroy.
 */
#define _GNU_SOURCE
#include "rc-server.h"
#include "rc-counters.h"
#include "rc-opts.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

/* One client being served. */
struct slot {
	struct rc_conn conn;
	pthread_t thread;
	bool used;
	atomic_bool done;
	int ret;
	uint8_t priv[256];
	size_t priv_len;
	rc_serve_fn fn;
	void *arg;
	int done_fd;
};

static void *serve_thread(void *p)
{
	struct slot *s = p;
	uint64_t one = 1;
	int ret;

	s->ret = s->fn(&s->conn, s->priv, s->priv_len, s->arg);
	/* A release the verbs refused is a leak: reported, as a failure. */
	if (s->ret == 0)
		s->conn.log.err[0] = '\0';
	ret = rc_conn_destroy(&s->conn);
	if (s->ret == 0)
		s->ret = ret;
	atomic_store(&s->done, true);
	/* Wake the accept loop so it joins us now. */
	if (write(s->done_fd, &one, sizeof(one)) < 0)
		perror("write(eventfd)");
	return NULL;
}

static void reap(struct slot *s)
{
	pthread_join(s->thread, NULL);
	s->used = false;
	atomic_store(&s->done, false);
	if (s->ret < 0 && s->ret != -ECANCELED)
		fprintf(stderr, "server: client %s: %s\n", s->conn.peer, s->conn.log.err);
}

/* Hand a connect request to a free slot and its thread. */
static int start_client(struct rc_listener *l, const struct rc_serve_opts *o, struct slot *s,
			const struct rc_cm_info *info, int cancel_fd, unsigned seq)
{
	char name[32];
	int ret;

	snprintf(name, sizeof(name), "server conn %u", seq);
	rc_conn_init(&s->conn, name, o->verbose, o->timeout_ms, cancel_fd);
	s->conn.poll_mode = o->poll_mode;
	s->conn.ack_timeout = (uint8_t)o->ack_timeout;
	s->conn.retry_count = (uint8_t)o->retry_count;
	s->conn.link_hooks = o->link_hooks;
	memcpy(s->priv, info->priv, info->priv_len);
	s->priv_len = info->priv_len;
	/* Its own event channel: this thread-per-client server's rule. */
	ret = rc_take_request(&s->conn, info, true);
	if (!ret) {
		ret = pthread_create(&s->thread, NULL, serve_thread, s);
		if (ret)
			rc_fail(&s->conn.log, ret, "pthread_create: %s", strerror(ret));
		ret = -ret;
	}
	if (ret) {
		fprintf(stderr, "server: client %s: %s\n", s->conn.peer, s->conn.log.err);
		rc_reject_id(s->conn.id, "server error");
		rc_conn_destroy(&s->conn);
		return ret;
	}
	rc_trace(&l->log, "client %s handed to conn %u", s->conn.peer, seq);
	s->used = true;
	return 0;
}

/* --allow: refuse a peer that no prefix names, before anything is set
 * up for it. The log line is rate-limited: a flood cannot fill the log. */
static void refuse_peer(struct rdma_cm_id *id, struct rc_ratelimit *rl)
{
	char peer[64];

	rc_format_addr(rdma_get_peer_addr(id), peer, sizeof(peer));
	rc_allow_refused(rl, rc_now_us(), peer, stderr);
	rc_reject_id(id, "not allowed");
	rdma_destroy_id(id);
}

int rc_serve(struct rc_listener *l, const struct rc_serve_opts *o, rc_serve_fn fn, void *arg)
{
	struct rc_ratelimit refusals = { 0 };
	int max = o->max_clients > 0 ? o->max_clients : 1;
	struct slot *slots = calloc((size_t)max, sizeof(*slots));
	int cancel_fd = eventfd(0, EFD_CLOEXEC);
	int done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	unsigned started = 0, seq = 0;
	int i, ret = 0, once_ret = 0;

	if (!slots || cancel_fd < 0 || done_fd < 0) {
		ret = rc_fail(&l->log, errno ? errno : ENOMEM, "rc_serve setup: %s",
			      strerror(errno));
		goto out;
	}
	for (i = 0; i < max; i++) {
		slots[i].fn = fn;
		slots[i].arg = arg;
		slots[i].done_fd = done_fd;
	}
	for (;;) {
		int fds[3] = { done_fd, o->stop_fd, l->channel->fd };
		struct rdma_cm_id *id;
		struct rc_cm_info info;
		uint64_t cnt;
		int busy = 0;

		for (i = 0; i < max; i++) {
			if (slots[i].used && atomic_load(&slots[i].done)) {
				if (o->once && slots[i].ret < 0 && slots[i].ret != -ECANCELED)
					once_ret = -EIO;
				reap(&slots[i]);
			}
			busy += slots[i].used;
		}
		if (o->once && started && !busy)
			break;
		/* With --once, stop taking requests after the first client. */
		ret = rc_wait_readable(fds, o->once && started ? 2 : 3,
				       rc_ratelimit_due(&refusals));
		if (ret == -ETIMEDOUT) { /* a second of refusals is over */
			rc_ratelimit_flush(&refusals, rc_now_us(), false, stderr);
			continue;
		}
		if (ret == 0) {
			if (read(done_fd, &cnt, sizeof(cnt)) < 0 && errno != EAGAIN)
				perror("read(eventfd)");
			continue;
		}
		if (ret == 1)
			break; /* asked to stop */
		if (ret < 0) {
			ret = rc_fail(&l->log, -ret, "poll: %s", strerror(-ret));
			break;
		}
		ret = rc_take_cm_event(l->channel, &info, &id, &l->log);
		if (ret == -EAGAIN)
			continue;
		if (ret) {
			ret = rc_fail(&l->log, -ret, "rdma_get_cm_event: %s", strerror(-ret));
			break;
		}
		if (info.event == RDMA_CM_EVENT_DEVICE_REMOVAL) {
			ret = rc_fail(&l->log, ENODEV, "the RDMA device was removed");
			break;
		}
		if (info.event != RDMA_CM_EVENT_CONNECT_REQUEST) {
			rc_trace(&l->log, "ignoring %s", rdma_event_str(info.event));
			continue;
		}
		/* The peer's address, checked before a slot or QP is spent. */
		if (!rc_allow_match(o->allow, rdma_get_peer_addr(id))) {
			refuse_peer(id, &refusals);
			continue;
		}
		for (i = 0; i < max && slots[i].used; i++)
			;
		if (i == max || (o->once && started)) {
			char peer[64];

			rc_format_addr(rdma_get_peer_addr(id), peer, sizeof(peer));
			fprintf(stderr, "server: rejecting %s: %d clients already connected\n",
				peer, max);
			rc_reject_id(id, "server busy: too many clients, try again later");
			rdma_destroy_id(id);
			continue;
		}
		if (start_client(l, o, &slots[i], &info, cancel_fd, ++seq) == 0)
			started++;
		ret = 0;
	}
	rc_ratelimit_flush(&refusals, rc_now_us(), true, stderr);
	/* Shutting down: wake every client thread and wait for it. */
	if (cancel_fd >= 0) {
		uint64_t one = 1;

		if (write(cancel_fd, &one, sizeof(one)) < 0)
			perror("write(eventfd)");
	}
	for (i = 0; slots && i < max; i++)
		if (slots[i].used)
			reap(&slots[i]);
out:
	free(slots);
	if (cancel_fd >= 0)
		close(cancel_fd);
	if (done_fd >= 0)
		close(done_fd);
	return ret < 0 ? ret : once_ret;
}

/* SIGINT/SIGTERM become a readable fd, so rc_serve can poll for them. */
int rc_stop_fd(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	/* Blocked in every thread: client threads inherit the mask. */
	if (pthread_sigmask(SIG_BLOCK, &set, NULL))
		return -1;
	return signalfd(-1, &set, SFD_CLOEXEC);
}

int rc_server_main(const char *prog, const struct rc_opts *o, rc_serve_fn fn, void *arg)
{
	struct rc_listener l = { 0 };
	struct rc_serve_opts so;
	int ret, stop_fd, code = RC_EXIT_OK;

	/* Line-buffered even into a pipe: scripts wait for our lines. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	stop_fd = rc_stop_fd();
	if (stop_fd < 0) {
		fprintf(stderr, "%s: signalfd: %s\n", prog, strerror(errno));
		return RC_EXIT_FAIL;
	}
	ret = rc_listen(&l, NULL, o->bind, o->port, RC_BACKLOG, o->verbose);
	if (ret) {
		fprintf(stderr, "%s: %s\n", prog, l.log.err);
		code = RC_EXIT_NOCONN;
		goto out;
	}
	/* Only now, really ready: scripts may connect after this line. */
	printf("listening on %s port %u\n", l.addr, l.port);

	so = (struct rc_serve_opts){ .max_clients = o->max_clients,
				     .once = o->once,
				     .timeout_ms = o->timeout_ms,
				     .verbose = o->verbose,
				     .stop_fd = stop_fd,
				     .poll_mode = o->poll,
				     .ack_timeout = o->ack_timeout,
				     .retry_count = o->retry_count,
				     .allow = &o->allow,
				     /* 02's and 03's: a lossy link extends the waits */
				     .link_hooks = &rc_link_counters };
	ret = rc_serve(&l, &so, fn, arg);
	if (ret == -EIO && o->once) {
		code = RC_EXIT_FAIL; /* the one client failed; already logged */
	} else if (ret) {
		fprintf(stderr, "%s: %s\n", prog, l.log.err);
		code = RC_EXIT_FAIL;
	}
out:
	rc_listener_close(&l);
	close(stop_fd);
	return code;
}
