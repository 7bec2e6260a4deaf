// SPDX-License-Identifier: MIT
/*
 * 04 rdma-server: 02's service (02_read-write/rw.h: HELLO, BUF, DONE,
 * RESULT), so 02's rdma-client works against it unchanged, built as a
 * service: one event-loop thread for every client, on one device
 * context (many.h).
 *
 * What it shows, in order (sequence.txt): listen on a channel that every
 * client's id stays on; one epoll over that channel, the device's
 * completion channel, its async-event fd and a signalfd; on the first
 * connect request, one PD, CQ(s) sized so that none can overrun, one SRQ
 * whose pool of receive buffers does not grow with the clients
 * (pool.c); for each client a region of its own over its slice, without
 * REMOTE_* flags, reachable only through a type 2 memory window bound to
 * its QP (clients.c); SIGINT or SIGTERM: every resource released in
 * reverse order, exit 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "many.h"
#include "rc-server.h"

/* epoll tags: the fixed fds; a fallback client's CQ channel is 16 + slot. */
enum { TAG_CM, TAG_CQ, TAG_ASYNC, TAG_SIGNAL, TAG_CLIENT = 16 };

/* clang-format off */
static const char usage[] =
	"usage: rdma-server [options]\n"
	"02's service (02_read-write/rdma-client works against it unchanged) for\n"
	"many clients on one event-loop thread: one PD, CQ and SRQ for all, each\n"
	"client's slice a region of its own reachable only through a type 2 memory\n"
	"window bound to its QP. A client silent for --timeout after BUF is probed\n"
	"(a zero-length RDMA WRITE), not dropped.\n\n"
	"  -s, --size SIZE       each client's slice (default 64K, at most 1G); a client\n"
	"                        may ask for less, never more\n"
	"      --counter         one shared 8-byte word (zero at start) for every client\n"
	"                        that asks for atomics, through a window of its own on\n"
	"                        each such client's QP; its value is printed when each\n"
	"                        such client leaves and at exit (clients need --shared)\n"
	"      --no-mw           no memory windows: a PD, CQ and region per client, as\n"
	"                        02 does (also what a device without type 2 windows gets)\n"
	"  -p, --port PORT       port to listen on (default " RC_DEFAULT_PORT "; 0: any free one)\n"
	"  -b, --bind ADDR       listen only on ADDR (default: all addresses)\n"
	"      --max-clients N   clients served at once (1 to 1024, default " RC_STR(MANY_MAX_CLIENTS) "); the\n"
	"                        receive pool and the CQs are sized from it\n"
	"      --allow PREFIX    accept connections only from PREFIX (ADDR or ADDR/LEN,\n"
	"                        IPv4 or IPv6; repeatable; default: from anywhere)\n"
	"      --timeout SEC     bound of every wait of a client (default 10)\n"
	"      --ack-timeout N   resend what a client has not acknowledged after\n"
	"                        4.096 us x 2^N (0 to 31, 0: never; default " RC_STR(RC_DEFAULT_ACK_TIMEOUT) ": 67 ms)\n"
	"      --inject LESSON   a lesson, never for service (README, \"Lessons\"):\n"
	"                        shared-region: UNSAFE, one region over every slice\n"
	"                        with REMOTE_WRITE|REMOTE_READ and its rkey in every\n"
	"                        BUF, no windows (at most 64 MiB of slices);\n"
	"                        srq-low: only " RC_STR(MANY_LESSON_POSTED) " receives on the SRQ, its limit at " RC_STR(MANY_LESSON_LIMIT) ",\n"
	"                        none ever posted again\n"
	"  -v, --verbose         trace every CM event, work request and completion\n"
	"  -h, --help            this text\n\n"
	"Prints 'listening on ADDR port N' once ready. Stops on SIGINT/SIGTERM.\n";
/* clang-format on */

enum { OPT_COUNTER = RC_OPT_FIRST_FREE, OPT_NO_MW, OPT_INJECT };

/* 0, 1 after --help, or -EINVAL with err set. */
static int parse(int argc, char **argv, struct many_opts *o, char *err, size_t errlen)
{
	static const struct option longopts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "bind", required_argument, NULL, 'b' },
		{ "size", required_argument, NULL, 's' },
		{ "counter", no_argument, NULL, OPT_COUNTER },
		{ "no-mw", no_argument, NULL, OPT_NO_MW },
		{ "inject", required_argument, NULL, OPT_INJECT },
		{ "max-clients", required_argument, NULL, RC_OPT_MAX_CLIENTS },
		{ "allow", required_argument, NULL, RC_OPT_ALLOW },
		{ "timeout", required_argument, NULL, RC_OPT_TIMEOUT },
		{ "ack-timeout", required_argument, NULL, RC_OPT_ACK_TIMEOUT },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	int c, ret;

	*o = (struct many_opts){ .slice = MANY_DEFAULT_SLICE };
	rc_opts_init(&o->rc, MANY_MAX_CLIENTS);
	while ((ret = rc_getopt(&o->rc, argc, argv, ":p:b:vhs:", longopts, usage, &c, err,
				errlen)) == 1) {
		if (c == OPT_COUNTER) {
			o->counter = true;
		} else if (c == OPT_NO_MW) {
			o->no_mw = true;
		} else if (c == OPT_INJECT) {
			if (!strcmp(optarg, "shared-region"))
				o->inject = MANY_INJECT_SHARED_REGION;
			else if (!strcmp(optarg, "srq-low"))
				o->inject = MANY_INJECT_SRQ_LOW;
			else
				return rc_usage_error(err, errlen,
						      "unknown --inject '%s' (shared-region, "
						      "srq-low)",
						      optarg);
		} else if (c == 's') {
			if (rc_parse_size(optarg, 1, RW_MAX_SIZE, &v))
				return rc_usage_error(err, errlen, "invalid size '%s' (1 to 1G)",
						      optarg);
			o->slice = (uint32_t)v;
		}
	}
	ret = rc_opts_end(&o->rc, ret, argc, argv, RC_OPERANDS_NONE, NULL, err, errlen);
	if (ret || o->inject == MANY_INJECT_NONE)
		return ret;
	/* Both lessons are about the shared PD and SRQ. */
	if (o->no_mw)
		return rc_usage_error(err, errlen, "--inject takes no --no-mw");
	if (o->inject == MANY_INJECT_SHARED_REGION && o->counter)
		return rc_usage_error(err, errlen, "--inject shared-region takes no --counter");
	if (o->inject == MANY_INJECT_SHARED_REGION &&
	    (uint64_t)o->rc.max_clients * ((o->slice + 4095u) & ~4095u) > MANY_LESSON_MAX_ARENA)
		return rc_usage_error(err, errlen,
				      "--inject shared-region registers every slice at once: "
				      "--max-clients x -s at most 64 MiB");
	return 0;
}

static int fail(const char *what, const char *err)
{
	fprintf(stderr, "rdma-server: %s: %s\n", what, err);
	return -1;
}

static int watch(struct server *s, int fd, uint64_t tag)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = tag };

	return epoll_ctl(s->ep, EPOLL_CTL_ADD, fd, &ev) ? fail("epoll_ctl", strerror(errno)) : 0;
}

/* Every CM event waiting on the one channel: requests, and each
 * client's, handed to its connection (id->context). */
static int on_cm_events(struct server *s)
{
	struct rc_cm_info info;
	struct rdma_cm_id *id;
	bool was_open = s->dev_open;
	int ret;

	while ((ret = rc_take_cm_event(s->ch, &info, &id, &s->l.log)) == 0) {
		if (info.event == RDMA_CM_EVENT_CONNECT_REQUEST)
			on_connect_request(s, &info);
		else if (id == s->l.id) /* DEVICE_REMOVAL: nothing more to serve */
			return fail("listener", rdma_event_str(info.event));
		else
			on_client_cm_event(s, id->context, &info);
	}
	if (ret != -EAGAIN)
		return fail("rdma_get_cm_event", strerror(-ret));
	/* The device opened with the first request: watch its two fds. */
	if (!was_open && s->dev_open &&
	    (watch(s, s->d.channel->fd, TAG_CQ) || watch(s, s->d.verbs->async_fd, TAG_ASYNC)))
		return -1;
	return 0;
}

/* The shared CQs: every completion to its client (by qp_num) or to the
 * pool. A client's own release may happen here, never the CQ's. */
static int on_completions(struct server *s)
{
	struct ibv_wc wc[16];
	int n;

	if (rc_device_cq_events(&s->d) < 0)
		return fail("completion channel", s->d.log.err);
	while ((n = rc_device_poll(&s->d, wc, 16)) > 0)
		for (int i = 0; i < n; i++) {
			struct client *k = &s->cl[(wc[i].wr_id >> 8) % s->max];

			if (wc[i].wr_id & WR_RECV)
				on_pool_recv(s, &wc[i]);
			else if (k->used)
				on_wc(s, k, &wc[i]);
		}
	return n < 0 ? fail("polling", s->d.log.err) : 0;
}

/* Ended waits, and the time until the next one ends (epoll's timeout). */
static int check_deadlines(struct server *s)
{
	uint64_t now = rc_now_us(), next = rc_ratelimit_due(&s->refusals);

	rc_ratelimit_flush(&s->refusals, now, false, stderr);
	for (unsigned i = 0; i < s->max; i++) {
		struct client *k = &s->cl[i];

		if (k->used && k->deadline_us && k->deadline_us <= now)
			on_deadline(s, k);
		if (k->used && k->deadline_us && k->deadline_us < next)
			next = k->deadline_us;
	}
	if (next == UINT64_MAX)
		return -1;
	return next <= now ? 0 : (int)((next - now + 999) / 1000);
}

/* One epoll over the CM channel, the completion channel, the async fd,
 * the signalfd (and a fallback client's CQ channel) until a signal. */
static int serve(struct server *s)
{
	for (;;) {
		struct epoll_event ev[16];
		int n = epoll_wait(s->ep, ev, 16, check_deadlines(s));

		if (n < 0 && errno != EINTR)
			return fail("epoll_wait", strerror(errno));
		for (int i = 0; i < n; i++) {
			uint64_t tag = ev[i].data.u64;
			int ret = 0;

			if (tag == TAG_SIGNAL)
				return 0;
			if (tag == TAG_CM)
				ret = on_cm_events(s);
			else if (tag == TAG_CQ)
				ret = on_completions(s);
			else if (tag == TAG_ASYNC)
				on_async_events(s);
			/* A fallback client's own CQ, unless an earlier event
			 * of this batch released it (release clears ctl). */
			else if (tag - TAG_CLIENT < s->max && s->cl[tag - TAG_CLIENT].ctl)
				ret = on_own_completions(s, &s->cl[tag - TAG_CLIENT]);
			if (ret < 0)
				return -1;
		}
	}
}

/* Release everything in reverse order, each release checked. */
static int shut_down(struct server *s)
{
	int bad = 0;

	for (unsigned i = 0; s->cl && i < s->max; i++) {
		if (!s->cl[i].used)
			continue;
		s->cl[i].outstanding = 0; /* its CQ entries go with the CQ */
		if (drop(s, &s->cl[i], NULL))
			bad = 1;
	}
	if (s->o.counter && s->ctr_mem)
		printf("counter at exit: %" PRIu64 "\n", counter_value(s));
	many_device_close(s, &bad);
	rc_listener_close(&s->l);
	if (s->ch)
		rdma_destroy_event_channel(s->ch);
	if (s->ep >= 0)
		close(s->ep);
	if (s->sfd >= 0)
		close(s->sfd);
	free(s->cl);
	return bad || s->release_refused ? -1 : 0;
}

/* The listener on a channel of ours that every client's id stays on. */
static int start(struct server *s)
{
	s->max = (unsigned)s->o.rc.max_clients;
	s->cl = calloc(s->max, sizeof(*s->cl));
	s->sfd = rc_stop_fd(); /* SIGINT, SIGTERM: a readable fd for the epoll */
	s->ep = epoll_create1(EPOLL_CLOEXEC);
	if (!s->cl || s->sfd < 0 || s->ep < 0) {
		fail("setup", strerror(errno));
		return RC_EXIT_FAIL;
	}
	if (rc_create_cm_channel(&s->l.log, &s->ch) ||
	    rc_listen(&s->l, s->ch, s->o.rc.bind, s->o.rc.port, MANY_BACKLOG, s->o.rc.verbose)) {
		fail("listening", s->l.log.err);
		return RC_EXIT_NOCONN;
	}
	if (watch(s, s->ch->fd, TAG_CM) || watch(s, s->sfd, TAG_SIGNAL))
		return RC_EXIT_FAIL;
	rc_trace(&s->l.log, "epoll: the CM channel and the signalfd (the device's fds once open)");
	/* A lesson says so before anything else: never mistaken for a service. */
	if (s->o.inject == MANY_INJECT_SHARED_REGION)
		printf("LESSON shared-region, UNSAFE: every client's slice in one region, its rkey "
		       "in every BUF (README, \"Lessons\")\n");
	else if (s->o.inject == MANY_INJECT_SRQ_LOW)
		printf("LESSON srq-low: only %d receives on the SRQ, its limit at %d, never "
		       "refilled "
		       "(README, \"Lessons\")\n",
		       MANY_LESSON_POSTED, MANY_LESSON_LIMIT);
	/* Only now, really ready: scripts may connect after this line. */
	printf("listening on %s port %u\n", s->l.addr, s->l.port);
	return RC_EXIT_OK;
}

int main(int argc, char **argv)
{
	static struct server s = { .ep = -1, .sfd = -1 };
	char err[256];
	int ret;

	ret = parse(argc, argv, &s.o, err, sizeof(err));
	if (ret) {
		if (ret < 0)
			fprintf(stderr, "rdma-server: %s (try --help)\n", err);
		return ret > 0 ? RC_EXIT_OK : RC_EXIT_USAGE;
	}
	/* Line-buffered even into a pipe: scripts wait for our lines. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	ret = start(&s);
	if (ret == RC_EXIT_OK && serve(&s))
		ret = RC_EXIT_FAIL;
	if (shut_down(&s) && ret == RC_EXIT_OK)
		ret = RC_EXIT_FAIL;
	return ret;
}
