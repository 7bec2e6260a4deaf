// SPDX-License-Identifier: MIT
/*
 * load.c - rdma-load: N connections to one server from one process and
 * one thread, each doing 02's exchange, and the time of each step.
 *
 * What it shows, in order: resolve the server's address once; one CM
 * event channel for every id (the channel rule, common/rdma-listen.h);
 * start connections while fewer than --in-flight are between
 * rdma_create_id and ESTABLISHED (a request past a server's listen
 * backlog may get no answer at all: README.md, "rdma-load"); one loop over two
 * fds (CM events, completions of the shared CQ) drives each connection's
 * state machine (load-conn.c); every state has a deadline; hold them
 * all, disconnect them all, report.
 */
#define _GNU_SOURCE
#include "load.h"

#include <getopt.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rc-json.h"
#include "rc-report.h"

enum { OPT_IN_FLIGHT = RC_OPT_FIRST_FREE, OPT_HOLD, OPT_JSON, OPT_INJECT };

/* clang-format off */
static const char usage[] =
	"usage: rdma-load -c N [options] SERVER [PORT]\n"
	"\n"
	"Opens N connections to an 02_read-write server (rdma-server of 02 or 04;\n"
	"--inject: 04's only, whose windows and SRQ its explanations describe)\n"
	"from one process and one thread; each writes a pattern into the buffer the\n"
	"server offers, reads it back and compares, and checks the server's checksum.\n"
	"Reports the time of each step of a connection (create id, resolve addr,\n"
	"resolve route, create QP, connect: up to ESTABLISHED) and of the exchange,\n"
	"holds all connections, then disconnects them.\n"
	"\n"
	"  -c, --connections N   connections to open (1 to " RC_STR(LOAD_MAX_CONNS) ", default " RC_STR(LOAD_DEFAULT_CONNS) ")\n"
	"      --in-flight K     connections between rdma_create_id and ESTABLISHED at\n"
	"                        once, at most (1 to " RC_STR(LOAD_MAX_IN_FLIGHT) ", default " RC_STR(LOAD_DEFAULT_IN_FLIGHT) ": the listen\n"
	"                        backlog of 02's and 03's servers; a connect request\n"
	"                        past a server's backlog may get no answer, only\n"
	"                        --timeout ends it)\n"
	"  -s, --size SIZE       bytes each connection writes and reads back (1 to 1M,\n"
	"                        default 4K); the server's buffer must be as large; all\n"
	"                        connections' buffers together at most 1 GiB\n"
	"      --hold SEC        keep all connections up this long once every one is\n"
	"                        verified or failed, then disconnect (default 0)\n"
	"      --json            one JSON object on stdout instead of the report\n"
	"      --inject LESSON   do one thing on purpose and print what happened and why\n"
	"                        (README, \"Lessons\"): other-rkey (2 connections: the\n"
	"                        second's address and rkey on the first's QP), old-rkey\n"
	"                        (a closed connection's rkey on a new connection),\n"
	"                        srq-low (the normal run, then what became of each DONE:\n"
	"                        against a server with --inject srq-low)\n"
	"  -p, --port PORT       server port (default " RC_DEFAULT_PORT ")\n"
	"      --timeout SEC     bound of each connection's connect (rdma_create_id to\n"
	"                        ESTABLISHED), of its exchange and of its disconnect\n"
	"                        (default 10); a run ends within about\n"
	"                        (N / K + 2) x SEC + HOLD\n"
	"      --ack-timeout N   resend what the server has not acknowledged after\n"
	"                        4.096 us x 2^N (0 to 31, 0: never; default " RC_STR(RC_DEFAULT_ACK_TIMEOUT) ": 67 ms)\n"
	"      --retry-count N   resends in a row without an answer before a request fails\n"
	"                        with RETRY_EXC_ERR (0 to 7; default " RC_STR(RC_DEFAULT_RETRY_COUNT) ")\n"
	"  -v, --verbose         trace every CM event, work request and completion\n"
	"  -h, --help            this text\n"
	"\n"
	"Exit status: 0 all N verified; 1 a local failure (no device, out of memory),\n"
	"or an --inject lesson that did not show what it teaches; 2 bad usage; 3 not\n"
	"one connection established; 4 an --inject lesson showed what it teaches;\n"
	RC_STR(LOAD_EXIT_SOME) " some connections not verified (each failure's step and reason on\n"
	"stderr).\n";
/* clang-format on */

/* Options; 0 ok, 1 --help printed, -EINVAL with err set. */
static int parse(int argc, char **argv, struct load_opts *o, char *err, size_t errlen)
{
	/* RC_LONGOPTS_CLIENT's options but --poll: the loop always sleeps
	 * on its two fds, so a poll mode would mean nothing here. */
	static const struct option longopts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "timeout", required_argument, NULL, RC_OPT_TIMEOUT },
		{ "ack-timeout", required_argument, NULL, RC_OPT_ACK_TIMEOUT },
		{ "retry-count", required_argument, NULL, RC_OPT_RETRY_COUNT },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "connections", required_argument, NULL, 'c' },
		{ "size", required_argument, NULL, 's' },
		{ "in-flight", required_argument, NULL, OPT_IN_FLIGHT },
		{ "hold", required_argument, NULL, OPT_HOLD },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "inject", required_argument, NULL, OPT_INJECT },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	int c, ret;

	*o = (struct load_opts){ .conns = LOAD_DEFAULT_CONNS,
				 .in_flight = LOAD_DEFAULT_IN_FLIGHT,
				 .size = LOAD_DEFAULT_SIZE };
	rc_opts_init(&o->rc, 1);
	while ((ret = rc_getopt(&o->rc, argc, argv, RC_SHORTOPTS_CLIENT "c:s:", longopts, usage, &c,
				err, errlen)) == 1) {
		switch (c) {
		case 'c':
			if (rc_parse_uint(optarg, 1, LOAD_MAX_CONNS, &v))
				return rc_usage_error(err, errlen,
						      "invalid connection count '%s' (1 to %u)",
						      optarg, LOAD_MAX_CONNS);
			o->conns = (unsigned)v;
			break;
		case OPT_IN_FLIGHT:
			if (rc_parse_uint(optarg, 1, LOAD_MAX_IN_FLIGHT, &v))
				return rc_usage_error(err, errlen,
						      "invalid --in-flight '%s' (1 to %u)", optarg,
						      LOAD_MAX_IN_FLIGHT);
			o->in_flight = (unsigned)v;
			break;
		case 's':
			if (rc_parse_size(optarg, 1, LOAD_MAX_SIZE, &v))
				return rc_usage_error(err, errlen, "invalid size '%s' (1 to 1M)",
						      optarg);
			o->size = (uint32_t)v;
			break;
		case OPT_HOLD:
			if (rc_parse_timeout(optarg, &o->hold_ms) && strcmp(optarg, "0"))
				return rc_usage_error(err, errlen,
						      "invalid --hold '%s' (seconds, 0 to 86400)",
						      optarg);
			if (!strcmp(optarg, "0"))
				o->hold_ms = 0;
			break;
		case OPT_JSON: o->json = true; break;
		case OPT_INJECT:
			o->inject = !strcmp(optarg, "other-rkey") ? LOAD_INJECT_OTHER_RKEY
				    : !strcmp(optarg, "old-rkey") ? LOAD_INJECT_OLD_RKEY
				    : !strcmp(optarg, "srq-low")  ? LOAD_INJECT_SRQ_LOW
								  : LOAD_INJECT_NONE;
			if (!o->inject)
				return rc_usage_error(
					err, errlen,
					"unknown --inject '%s' (other-rkey, old-rkey, "
					"srq-low)",
					optarg);
			break;
		default: return rc_usage_error(err, errlen, "unknown option");
		}
	}
	ret = rc_opts_end(&o->rc, ret, argc, argv, RC_OPERANDS_SERVER, &o->server, err, errlen);
	if (ret || !o->inject)
		return ret;
	if (o->json)
		return rc_usage_error(err, errlen, "--inject prints its explanation: no --json");
	/* other-rkey and old-rkey: two connections, whatever -c says. */
	if (o->inject != LOAD_INJECT_SRQ_LOW)
		o->conns = 2;
	return 0;
}

/* ---- Set-up and teardown ---- */

static int setup(struct load *ld)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP };
	long page = sysconf(_SC_PAGESIZE);
	int ret;

	rc_log_init(&ld->log, "rdma-load", ld->o.rc.verbose);
	/* The server's address once, not per connection (cmtime does the
	 * same): its time is no step of a connection. */
	ret = rdma_getaddrinfo(ld->o.server, ld->o.rc.port, &hints, &ld->ai);
	if (ret)
		return rc_fail(&ld->log, ret == -1 ? errno : EHOSTUNREACH,
			       "cannot resolve '%s' port %s: %s; hint: use the server's IP address "
			       "on its RDMA netdev",
			       ld->o.server, ld->o.rc.port,
			       ret == -1 ? strerror(errno) : gai_strerror(ret));
	/* One channel, non-blocking, for every id: one fd for the loop. */
	ret = rc_create_cm_channel(&ld->log, &ld->ch);
	if (ret)
		return ret;
	ld->conns = calloc(ld->o.conns, sizeof(*ld->conns));
	/* Each connection's part: RX and TX slots, source, destination. */
	ld->stride = (LOAD_SRC + 2 * (size_t)ld->o.size + 63) & ~(size_t)63;
	ld->arena_len = ld->stride * ld->o.conns;
	/* Registered memory is pinned: refuse what a small host cannot pin. */
	if (ld->arena_len > LOAD_MAX_ARENA)
		return rc_fail(&ld->log, ENOMEM,
			       "%u connections of -s %u need %zu MiB of registered memory, more "
			       "than %u MiB; hint: a smaller -s or -c",
			       ld->o.conns, ld->o.size, ld->arena_len >> 20, LOAD_MAX_ARENA >> 20);
	if (!ld->conns || posix_memalign(&ld->arena, (size_t)page, ld->arena_len))
		return rc_fail(&ld->log, ENOMEM, "out of memory for %u connections of %u bytes",
			       ld->o.conns, ld->o.size);
	memset(ld->arena, 0, ld->arena_len);
	for (unsigned i = 0; i < ld->o.conns; i++) {
		struct load_conn *lc = &ld->conns[i];

		lc->idx = i;
		lc->ld = ld;
		lc->off = i * ld->stride;
		/* A pattern of its own per connection: data that lands in
		 * another's buffer would show. */
		lc->seed = rc_now_ns() ^ ((uint64_t)getpid() << 32) ^ ((uint64_t)i << 48);
		rw_fill_pattern((uint8_t *)ld->arena + lc->off + LOAD_SRC, ld->o.size, lc->seed);
	}
	return 0;
}

/* Release in reverse order: connections (QPs, ids), the arena's
 * registration, the device context, the channel. 0 or the first failure. */
static int teardown(struct load *ld)
{
	int ret = 0, r;

	for (unsigned i = 0; ld->conns && i < ld->o.conns; i++)
		if ((r = rc_conn_destroy(&ld->conns[i].c)) && !ret) {
			ret = r;
			rc_fail(&ld->log, -r, "%s", ld->conns[i].c.log.err);
		}
	if (ld->mem_reg && (r = rc_mem_dereg(&ld->dev, &ld->mem)) && !ret) {
		ret = r;
		rc_fail(&ld->log, -r, "%s", ld->dev.log.err);
	}
	if (ld->dev_open && (r = rc_device_close(&ld->dev)) && !ret) {
		ret = r;
		rc_fail(&ld->log, -r, "%s", ld->dev.log.err);
	}
	if (ld->ch)
		rdma_destroy_event_channel(ld->ch);
	if (ld->ai)
		rdma_freeaddrinfo(ld->ai);
	free(ld->arena);
	free(ld->conns);
	return ret;
}

/* ---- The loop ---- */

static bool waiting(enum load_state st)
{
	return (st >= LS_ADDR && st <= LS_RESULT) || st == LS_DISCONNECT;
}

/* The earliest deadline of a waiting connection, or `until`. */
static uint64_t next_deadline(const struct load *ld, uint64_t until)
{
	uint64_t d = until;

	for (unsigned i = 0; i < ld->started; i++)
		if (waiting(ld->conns[i].st) && ld->conns[i].deadline_us < d)
			d = ld->conns[i].deadline_us;
	return d;
}

/* Wait for either fd (at most until `until`), then take every CM event
 * and every completion there is, and fail what is past its deadline. */
int load_pump(struct load *ld, uint64_t until)
{
	int fds[2] = { ld->ch->fd, ld->dev_open ? ld->dev.channel->fd : -1 };
	struct ibv_wc wc[RC_POLL_BATCH];
	struct rc_cm_info info;
	uint64_t now;
	int ret, n;

	ret = rc_wait_readable(fds, 2, next_deadline(ld, until));
	if (ret < 0 && ret != -ETIMEDOUT)
		return rc_fail(&ld->log, -ret, "poll: %s", strerror(-ret));
	while ((ret = rc_take_cm_event(ld->ch, &info, NULL, &ld->log)) == 0)
		load_conn_cm_event(ld, &info);
	if (ret != -EAGAIN)
		return rc_fail(&ld->log, -ret, "rdma_get_cm_event: %s", strerror(-ret));
	if (ld->dev_open) {
		/* Take the channel's events and re-arm, then poll it empty. */
		ret = rc_device_cq_events(&ld->dev);
		if (ret < 0)
			return rc_fail(&ld->log, -ret, "%s", ld->dev.log.err);
		while ((n = rc_device_poll(&ld->dev, wc, RC_POLL_BATCH)) > 0)
			for (int i = 0; i < n; i++)
				load_conn_wc(ld, &wc[i]);
		if (n < 0)
			return rc_fail(&ld->log, -n, "%s", ld->dev.log.err);
	}
	now = rc_now_us();
	for (unsigned i = 0; i < ld->started; i++)
		load_conn_expire(ld, &ld->conns[i], now);
	return 0;
}

/* Open all N, at most K connecting at once; each exchanges as soon as it
 * is established. Ends when every one is verified or failed. */
int load_connect_all(struct load *ld)
{
	int ret;

	while (ld->settled < ld->o.conns) {
		while (ld->started < ld->o.conns && ld->connecting < ld->o.in_flight)
			load_conn_start(ld, &ld->conns[ld->started]);
		ret = load_pump(ld, RC_NO_DEADLINE);
		if (ret)
			return ret;
	}
	return 0;
}

/* Hold, then disconnect every held connection and wait for the goodbyes. */
static int hold_and_disconnect(struct load *ld)
{
	uint64_t hold_end = rc_now_us() + (uint64_t)ld->o.hold_ms * 1000u;
	bool left;
	int ret;

	while (rc_now_us() < hold_end)
		if ((ret = load_pump(ld, hold_end)))
			return ret;
	for (unsigned i = 0; i < ld->o.conns; i++)
		load_conn_disconnect(ld, &ld->conns[i]);
	do {
		left = false;
		for (unsigned i = 0; i < ld->o.conns && !left; i++)
			left = ld->conns[i].st == LS_DISCONNECT;
		if (left && (ret = load_pump(ld, RC_NO_DEADLINE)))
			return ret;
	} while (left);
	return 0;
}

/* ---- The report ---- */

/* A step's times in ms over the connections that completed it: count,
 * median, p99 (nearest rank) and max (common/rc-report.h's summary). */
struct stat_ms {
	unsigned count;
	double median, p99, max;
};

static struct stat_ms step_stat(const struct load *ld, enum load_step s, uint64_t *tmp)
{
	struct rc_lat_sum us;
	unsigned n = 0;

	for (unsigned i = 0; i < ld->o.conns; i++)
		if (ld->conns[i].timed[s])
			tmp[n++] = ld->conns[i].ns[s];
	rc_lat_summary(tmp, n, &us);
	return (struct stat_ms){ n, us.median / 1000.0, us.p99 / 1000.0, us.max / 1000.0 };
}

static unsigned established(const struct load *ld)
{
	unsigned n = 0;

	for (unsigned i = 0; i < ld->o.conns; i++)
		n += ld->conns[i].timed[STEP_CONNECT];
	return n;
}

/* Failures grouped by step and reason (the same for hundreds, usually):
 * "28 x connect (first: conn 4): REASON". */
#define MAX_GROUPS 16
struct group {
	unsigned count, first;
};

static unsigned failure_groups(const struct load *ld, struct group *g)
{
	unsigned ng = 0;

	for (unsigned i = 0; i < ld->o.conns; i++) {
		const struct load_conn *lc = &ld->conns[i];
		unsigned k;

		if (lc->st != LS_FAILED)
			continue;
		for (k = 0; k < ng; k++) {
			const struct load_conn *f = &ld->conns[g[k].first];

			if (f->step == lc->step && !strcmp(f->c.log.err, lc->c.log.err))
				break;
		}
		if (k < ng)
			g[k].count++;
		else if (ng < MAX_GROUPS)
			g[ng++] = (struct group){ 1, i };
	}
	return ng;
}

static void print_failures(const struct load *ld)
{
	struct group g[MAX_GROUPS];
	unsigned ng = failure_groups(ld, g), shown = 0;

	if (!ld->failed)
		return;
	fprintf(stderr, "rdma-load: %u of %u connections failed:\n", ld->failed, ld->o.conns);
	for (unsigned k = 0; k < ng; k++) {
		const struct load_conn *f = &ld->conns[g[k].first];

		shown += g[k].count;
		fprintf(stderr, "  %u x %s (first: conn %u): %s\n", g[k].count,
			load_step_name(f->step), f->idx, f->c.log.err);
	}
	if (shown < ld->failed)
		fprintf(stderr, "  %u more, for other reasons (-v traces each)\n",
			ld->failed - shown);
}

static double ms_between(uint64_t a, uint64_t b)
{
	return b > a ? (double)(b - a) / 1000.0 : 0.0;
}

static void print_report(const struct load *ld, uint64_t *tmp)
{
	double conn_ms = ms_between(ld->t_start, ld->t_settled);
	unsigned est = established(ld);

	printf("%u connections to %s, at most %u connecting at once, %u bytes each\n", ld->o.conns,
	       ld->conns[0].c.peer[0] ? ld->conns[0].c.peer : ld->o.server, ld->o.in_flight,
	       ld->o.size);
	printf("%-14s %6s %10s %10s %10s\n", "step", "count", "median ms", "p99 ms", "max ms");
	for (int s = 0; s < STEP_COUNT; s++) {
		struct stat_ms st = step_stat(ld, (enum load_step)s, tmp);

		printf("%-14s %6u %10.3f %10.3f %10.3f\n", load_step_name((enum load_step)s),
		       st.count, st.median, st.p99, st.max);
	}
	printf("established %u of %u; all settled in %.1f ms (%.0f connections/s)\n", est,
	       ld->o.conns, conn_ms, conn_ms > 0 ? est * 1000.0 / conn_ms : 0.0);
	if (ld->dropped)
		printf("the server hung up on %u verified connections while held\n", ld->dropped);
	if (ld->no_goodbye)
		printf("%u connections saw no DISCONNECTED within --timeout\n", ld->no_goodbye);
	printf("verified %u of %u connections; total %.1f ms\n", ld->verified, ld->o.conns,
	       ms_between(ld->t_start, ld->t_end));
}

static void json_report(struct rc_json *j, const struct load *ld, uint64_t *tmp)
{
	struct group g[MAX_GROUPS];
	unsigned ng = failure_groups(ld, g);

	rc_json_u64(j, "connections", ld->o.conns);
	rc_json_u64(j, "in_flight", ld->o.in_flight);
	rc_json_u64(j, "size", ld->o.size);
	rc_json_u64(j, "hold_ms", (uint64_t)ld->o.hold_ms);
	rc_json_object(j, "steps");
	for (int s = 0; s < STEP_COUNT; s++) {
		struct stat_ms st = step_stat(ld, (enum load_step)s, tmp);
		char key[32];

		snprintf(key, sizeof(key), "%s", load_step_name((enum load_step)s));
		for (char *p = key; *p; p++)
			*p = *p == ' ' ? '_' : (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
		rc_json_object(j, key);
		rc_json_u64(j, "count", st.count);
		rc_json_double(j, "median_ms", st.median);
		rc_json_double(j, "p99_ms", st.p99);
		rc_json_double(j, "max_ms", st.max);
		rc_json_end(j);
	}
	rc_json_end(j);
	rc_json_u64(j, "established", established(ld));
	rc_json_u64(j, "verified", ld->verified);
	rc_json_u64(j, "failed", ld->failed);
	rc_json_u64(j, "dropped_while_held", ld->dropped);
	rc_json_double(j, "established_ms", ms_between(ld->t_start, ld->t_last_est));
	rc_json_double(j, "settled_ms", ms_between(ld->t_start, ld->t_settled));
	rc_json_double(j, "total_ms", ms_between(ld->t_start, ld->t_end));
	rc_json_array(j, "failures");
	for (unsigned k = 0; k < ng; k++) {
		const struct load_conn *f = &ld->conns[g[k].first];

		rc_json_object(j, NULL);
		rc_json_u64(j, "count", g[k].count);
		rc_json_u64(j, "first_conn", f->idx);
		rc_json_str(j, "step", load_step_name(f->step));
		rc_json_str(j, "reason", f->c.log.err);
		rc_json_end(j);
	}
	rc_json_end(j);
}

static void print_json(const struct load *ld, int code, const char *error, uint64_t *tmp)
{
	struct rc_json *j = rc_json_new("rdma-load");

	if (!j)
		return;
	rc_json_object(j, NULL);
	rc_json_str(j, "program", "rdma-load");
	rc_json_str(j, "example", "04_many-clients");
	rc_json_bool(j, "ok", code == RC_EXIT_OK);
	rc_json_str(j, "server", ld->o.server);
	rc_json_u64(j, "port", strtoul(ld->o.rc.port, NULL, 10));
	if (tmp) /* NULL: a local failure before or during the run */
		json_report(j, ld, tmp);
	rc_json_end_run(j, error, code, "rdma-load");
	free(j);
}

static int exit_code(const struct load *ld)
{
	if (ld->verified == ld->o.conns)
		return RC_EXIT_OK;
	return established(ld) ? LOAD_EXIT_SOME : RC_EXIT_NOCONN;
}

int main(int argc, char **argv)
{
	struct load *ld = calloc(1, sizeof(*ld));
	uint64_t *tmp = NULL;
	char err[256];
	int ret, code = RC_EXIT_FAIL;

	/* One line at a time, so a pipe gets stdout and stderr in order. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!ld) {
		fprintf(stderr, "rdma-load: out of memory\n");
		return RC_EXIT_FAIL;
	}
	ret = parse(argc, argv, &ld->o, err, sizeof(err));
	if (ret) {
		free(ld);
		/* A bad command line: the message, and with --json its object. */
		return ret > 0 ? RC_EXIT_OK
			       : rc_run_usage_error("rdma-load", "04_many-clients", argc, argv,
						    err);
	}
	ret = setup(ld);
	tmp = calloc(ld->o.conns, sizeof(*tmp));
	if (!ret && !tmp)
		ret = rc_fail(&ld->log, ENOMEM, "out of memory");
	if (!ret) {
		ld->t_start = rc_now_us();
		if (ld->o.inject == LOAD_INJECT_OTHER_RKEY || ld->o.inject == LOAD_INJECT_OLD_RKEY)
			code = load_lesson_run(ld); /* its own report; ld->log.err on failure */
		else
			ret = load_connect_all(ld);
		ld->t_settled = rc_now_us();
	}
	if (!ret)
		ret = hold_and_disconnect(ld);
	ld->t_end = rc_now_us();
	if (!ret && (ld->o.inject == LOAD_INJECT_NONE || ld->o.inject == LOAD_INJECT_SRQ_LOW)) {
		code = exit_code(ld);
		if (!ld->o.json)
			print_report(ld, tmp);
		print_failures(ld);
		if (ld->o.inject == LOAD_INJECT_SRQ_LOW)
			code = load_lesson_srq_low(ld);
	}
	if (ret)
		fprintf(stderr, "rdma-load: %s\n", ld->log.err);
	if (ld->o.json)
		print_json(ld, code,
			   ret	  ? ld->log.err
			   : code ? "not every connection was verified (stderr says why)"
				  : NULL,
			   ret ? NULL : tmp);
	if (teardown(ld)) {
		fprintf(stderr, "rdma-load: %s\n", ld->log.err);
		if (code == RC_EXIT_OK)
			code = RC_EXIT_FAIL;
	}
	free(tmp);
	free(ld);
	return code;
}
