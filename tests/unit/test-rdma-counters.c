// SPDX-License-Identifier: MIT
/*
 * test-rdma-counters: the set rdma-common.h names with rc-counters.c, the
 * opt-in: what a timed-out wait decides from fake counter files, and the
 * words of a failed completion. Its waits run on a stand-in CQ
 * (cq-stub.h), as 02 and 03 wait (link_hooks = &rc_link_counters).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "rc-counters.h"

#define CQ_STUB_HOOKS (&rc_link_counters) /* the waits as 02 and 03 wait */
#include "cq-stub.h"

/* ---- A timed-out wait and the port's counters (rc-counters.c) ---- */

/* A fake sysfs tree: ROOT/class/infiniband/rxe0/ports/1/hw_counters. */
struct fake_port {
	char root[64], dir[160];
};

static void fake_counter(const struct fake_port *f, const char *name, unsigned long long v)
{
	char path[256], tmp[256];
	FILE *fp;

	/* Whole or not at all, as sysfs reads are: a reader (rc_next_wc in
	 * another thread) never sees the file empty. */
	snprintf(path, sizeof(path), "%s/%s", f->dir, name);
	snprintf(tmp, sizeof(tmp), "%s/.%s.new", f->dir, name);
	fp = fopen(tmp, "w");
	assert_non_null(fp);
	fprintf(fp, "%llu\n", v);
	assert_int_equal(fclose(fp), 0);
	assert_int_equal(rename(tmp, path), 0);
}

static void fake_port_make(struct fake_port *f, bool with_counters)
{
	static const char *const parts[] = { "/class", "/infiniband", "/rxe0",
					     "/ports", "/1",	      "/hw_counters" };
	size_t i;

	snprintf(f->root, sizeof(f->root), "/tmp/rc-link.XXXXXX");
	assert_non_null(mkdtemp(f->root));
	snprintf(f->dir, sizeof(f->dir), "%s", f->root);
	for (i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		strncat(f->dir, parts[i], sizeof(f->dir) - strlen(f->dir) - 1);
		assert_int_equal(mkdir(f->dir, 0700), 0);
	}
	if (with_counters) {
		fake_counter(f, "completer_retry_err", 100);
		fake_counter(f, "rcvd_seq_err", 7);
		fake_counter(f, "lifespan", 10); /* not a retransmission counter */
	}
}

static void fake_port_remove(const struct fake_port *f)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->root);
	assert_int_equal(system(cmd), 0);
}

/* A connection with a 1000 ms --timeout whose wait began at 1 s; find:
 * look for the counters now (as a wait half-way does with a cm_id). */
static void link_conn(struct rc_conn *c, struct rc_cq_wait *w, const struct fake_port *f, bool find)
{
	rc_conn_init(c, "test", false, 1000, -1);
	c->link.sysfs = f->root;
	if (find)
		assert_int_equal(rc_link_find(&c->link, "rxe0", 1), 0);
	memset(w, 0, sizeof(*w));
	w->deadline_us = 1000000u + 1000u * (uint64_t)rc_wait_first_ms(c);
}

/* Today's message of a wait that timed out, at 1000 ms. */
static void want_silent_peer(const struct rc_conn *c)
{
	assert_string_equal(
		c->log.err,
		"no completion within 1000 ms; hint: the peer stalled, or the link is down");
}

static void wait_goes_on_while_counters_rise(void **state)
{
	struct fake_port f;
	struct rc_cq_wait w;
	struct rc_conn c;
	uint64_t sum;
	int i;

	(void)state;
	fake_port_make(&f, true);
	link_conn(&c, &w, &f, true);
	assert_int_equal(rc_link_read(&c.link, &sum), 0);
	assert_int_equal(sum, 107);		     /* the two counters, not lifespan */
	assert_int_equal(rc_wait_first_ms(&c), 500); /* first look half-way */
	assert_int_equal(w.deadline_us, 1000000u + 500000u);
	assert_int_equal(rc_wait_timed_out(&c, &w), 0);
	assert_int_equal(w.deadline_us, 2000000u); /* the other half */
	/* Rising at every look: half a timeout more each time, while the
	 * connection's budget lasts: 3 timeouts, this wait's from its start. */
	for (i = 0; i < 4; i++) {
		fake_counter(&f, "rcvd_seq_err", 7 + 3 * (i + 1));
		assert_int_equal(rc_wait_timed_out(&c, &w), 0);
		assert_int_equal(w.deadline_us, 2000000u + 500000u * (i + 1));
		assert_int_equal(c.link.spent_us, 1500000u + 500000u * i);
	}
	fake_counter(&f, "rcvd_seq_err", 7 + 15);
	assert_int_equal(rc_wait_timed_out(&c, &w), -ETIMEDOUT);
	assert_string_equal(c.log.err,
			    "no completion within 3000 ms while the link kept retransmitting (the "
			    "port's retransmission counters rose by 15): a lossy or reordering "
			    "link, or a responder slower than the ACK timeout (seen on Soft-RoCE "
			    "under heavy load); hint: on RoCE check PFC/ECN; for a busy "
			    "responder, a longer ACK timeout or fewer operations in flight");
	fake_port_remove(&f);
}

/* A wait as rc_next_wc begins it: at 1 s, the first look half-way. */
static void next_wait(struct rc_conn *c, struct rc_cq_wait *w)
{
	c->link.phase = 0;
	w->deadline_us = 1000000u + 1000u * (uint64_t)rc_wait_first_ms(c);
}

/*
 * The budget is the connection's, not one wait's: two waits that each go
 * on a little add up, and once it is spent a wait on a link that still
 * resends fails at its timeout, saying so; a quiet one, as before.
 */
static void budget_spans_the_connection(void **state)
{
	struct fake_port f;
	struct rc_cq_wait w;
	struct rc_conn c;

	(void)state;
	fake_port_make(&f, true);
	link_conn(&c, &w, &f, true);
	/* Wait 1: extended twice (1000 + 500, then 500), then a completion. */
	assert_int_equal(rc_wait_timed_out(&c, &w), 0);
	fake_counter(&f, "rcvd_seq_err", 8);
	assert_int_equal(rc_wait_timed_out(&c, &w), 0);
	fake_counter(&f, "rcvd_seq_err", 9);
	assert_int_equal(rc_wait_timed_out(&c, &w), 0);
	assert_int_equal(c.link.spent_us, 2000000u);
	/* Wait 2: 1500 more would pass 3000: it fails at its timeout. */
	next_wait(&c, &w);
	assert_int_equal(rc_wait_timed_out(&c, &w), 0);
	fake_counter(&f, "rcvd_seq_err", 12);
	assert_int_equal(rc_wait_timed_out(&c, &w), -ETIMEDOUT);
	assert_string_equal(c.log.err,
			    "no completion within 1000 ms while the link kept retransmitting (the "
			    "port's retransmission counters rose by 3), and this connection's "
			    "earlier waits on a resending link had taken 2000 ms of the 3000 ms it "
			    "may spend: a lossy or reordering link, or a responder slower than "
			    "the ACK timeout (seen on Soft-RoCE under heavy load); hint: on RoCE "
			    "check PFC/ECN; for a busy responder, a longer ACK timeout or fewer "
			    "operations in flight");
	assert_int_equal(c.link.spent_us, 2000000u); /* a failed step costs nothing */
	/* Wait 3: the counters quiet: a silent peer, at the timeout. */
	next_wait(&c, &w);
	assert_int_equal(rc_wait_timed_out(&c, &w), 0);
	assert_int_equal(rc_wait_timed_out(&c, &w), -ETIMEDOUT);
	want_silent_peer(&c);
	/* A service that zeroes the budget per request gets it whole again. */
	c.link.spent_us = 0;
	next_wait(&c, &w);
	assert_int_equal(rc_wait_timed_out(&c, &w), 0);
	fake_counter(&f, "rcvd_seq_err", 13);
	assert_int_equal(rc_wait_timed_out(&c, &w), 0);
	assert_int_equal(c.link.spent_us, 1500000u);
	fake_port_remove(&f);
}

static void wait_ends_when_counters_stop(void **state)
{
	struct fake_port f;
	struct rc_cq_wait w;
	struct rc_conn c;

	(void)state;
	fake_port_make(&f, true);
	/* Quiet from the start: a silent peer, today's message at 1 s. */
	link_conn(&c, &w, &f, true);
	assert_int_equal(rc_wait_timed_out(&c, &w), 0);
	assert_int_equal(rc_wait_timed_out(&c, &w), -ETIMEDOUT);
	want_silent_peer(&c);
	/* Rising once, then quiet for half a timeout. */
	link_conn(&c, &w, &f, true);
	assert_int_equal(rc_wait_timed_out(&c, &w), 0);
	fake_counter(&f, "completer_retry_err", 104);
	assert_int_equal(rc_wait_timed_out(&c, &w), 0);
	assert_int_equal(rc_wait_timed_out(&c, &w), -ETIMEDOUT);
	assert_string_equal(
		c.log.err,
		"no completion within 1500 ms: the link retransmitted (the port's "
		"counters rose by 4), then nothing for 500 ms; hint: the peer stalled, or "
		"the link is down");
	/* Rising, but a counter became unreadable: say nothing about it. */
	link_conn(&c, &w, &f, true);
	assert_int_equal(rc_wait_timed_out(&c, &w), 0);
	fake_counter(&f, "completer_retry_err", 110);
	assert_int_equal(chmod(f.dir, 0), 0);
	if (access(f.dir, X_OK) == 0) /* root reads it anyway */
		assert_int_equal(unlink(strcat(strcpy((char[256]){ 0 }, f.dir), "/rcvd_seq_err")),
				 0);
	assert_int_equal(rc_wait_timed_out(&c, &w), -ETIMEDOUT);
	want_silent_peer(&c);
	assert_int_equal(chmod(f.dir, 0700), 0);
	fake_port_remove(&f);
}

/*
 * At retry count 7 Soft-RoCE resends for ever: its own resends while the
 * port receives nothing (rcvd_pkts flat) are a peer gone, not a lossy
 * link, and end the wait at its timeout.
 */
static void resends_without_replies_end_the_wait(void **state)
{
	char path[256];
	struct fake_port f;
	struct rc_cq_wait w;
	struct rc_conn c;

	(void)state;
	fake_port_make(&f, true);
	fake_counter(&f, "rcvd_pkts", 500);
	link_conn(&c, &w, &f, true);
	assert_int_equal(c.link.rx, 1);
	assert_int_equal(rc_wait_timed_out(&c, &w), 0); /* half-way */
	fake_counter(&f, "completer_retry_err", 104);
	assert_int_equal(rc_wait_timed_out(&c, &w), -ETIMEDOUT);
	assert_string_equal(c.log.err,
			    "no completion within 1000 ms: the port resent (its retransmission "
			    "counters rose by 4) and received nothing for the last 500 ms; hint: "
			    "the peer's host is down or stalled, or the link is down");
	/* Packets came back: lossy, the peer alive: the wait goes on, until
	 * the port resends and hears nothing again. */
	link_conn(&c, &w, &f, true);
	assert_int_equal(rc_wait_timed_out(&c, &w), 0);
	fake_counter(&f, "completer_retry_err", 108);
	fake_counter(&f, "rcvd_pkts", 520);
	assert_int_equal(rc_wait_timed_out(&c, &w), 0);
	fake_counter(&f, "completer_retry_err", 110);
	assert_int_equal(rc_wait_timed_out(&c, &w), -ETIMEDOUT);
	assert_non_null(strstr(c.log.err,
			       "no completion within 1500 ms: the port resent (its "
			       "retransmission counters rose by 6) and received nothing"));
	fake_port_remove(&f);
	/* An InfiniBand port: counters/port_rcv_packets beside hw_counters. */
	fake_port_make(&f, true);
	snprintf(path, sizeof(path), "%s/../counters", f.dir);
	assert_int_equal(mkdir(path, 0700), 0);
	strncat(path, "/port_rcv_packets", sizeof(path) - strlen(path) - 1);
	FILE *fp = fopen(path, "w");
	assert_non_null(fp);
	fputs("77\n", fp);
	assert_int_equal(fclose(fp), 0);
	link_conn(&c, &w, &f, true);
	assert_int_equal(c.link.rx, 2);
	assert_int_equal(rc_wait_timed_out(&c, &w), 0);
	fake_counter(&f, "rcvd_seq_err", 9);
	assert_int_equal(rc_wait_timed_out(&c, &w), -ETIMEDOUT);
	assert_non_null(strstr(c.log.err, "and received nothing for the last 500 ms"));
	fake_port_remove(&f);
}

/*
 * The crawl bound: once the caller counts what it moves, every window of
 * RC_CRAWL_WINDOW x timeout in which the port counted a peer's packets out
 * of order, resent or NAKed must move RC_CRAWL_MIN; a slow sender on a
 * clean link (the counters quiet) may take its time.
 */
static void crawl_ends_a_transfer(void **state)
{
	const struct rc_link_hooks *h = &rc_link_counters;
	struct fake_port f;
	struct rc_cq_wait w;
	struct rc_conn c;

	(void)state;
	fake_port_make(&f, true);
	link_conn(&c, &w, &f, true);
	c.timeout_ms = 50; /* windows of 100 ms */
	assert_int_equal(h->begin(&c), 0);
	assert_int_equal(c.link.win_start_us, 0); /* nothing counted: no check */
	rc_link_moved(&c, 64 << 10);
	assert_int_equal(h->begin(&c), 0); /* the first window starts */
	assert_int_not_equal(c.link.win_start_us, 0);
	fake_counter(&f, "rcvd_seq_err", 50);
	assert_int_equal(h->begin(&c), 0); /* within the window: not yet */
	usleep(110000);
	rc_link_moved(&c, 1 << 20);
	assert_int_equal(h->begin(&c), 0); /* 1 MiB moved: enough */
	usleep(110000);
	rc_link_moved(&c, 100 << 10);
	assert_int_equal(h->begin(&c), 0); /* slow, but the counters quiet */
	usleep(110000);
	rc_link_moved(&c, 100 << 10);
	fake_counter(&f, "rcvd_seq_err", 90);
	assert_int_equal(h->begin(&c), -ETIMEDOUT);
	assert_non_null(strstr(c.log.err, "moved only 100 KiB in 0 s while the port counted 40 "
					  "packets from a peer out of order, resent or NAKed: a "
					  "lossy or reordering link or a responder slower than "
					  "the ACK timeout, too slow to go on (at least 1024 KiB "
					  "per 2 x --timeout)"));
	fake_port_remove(&f);
}

static bool disk_busy(void *arg, char *buf, size_t len)
{
	(void)arg;
	snprintf(buf, len, "the local disk stalled");
	return true;
}

static void wait_without_counters_is_as_before(void **state)
{
	struct fake_port f;
	struct rc_cq_wait w;
	struct rc_conn c;

	(void)state;
	fake_port_make(&f, false); /* a port without these counters */
	link_conn(&c, &w, &f, false);
	assert_int_equal(rc_link_find(&c.link, "rxe0", 1), -1);
	assert_int_equal(c.link.state, -1);
	assert_int_equal(rc_wait_first_ms(&c), 1000); /* one look, at the end */
	assert_int_equal(rc_wait_timed_out(&c, &w), -ETIMEDOUT);
	want_silent_peer(&c);
	/* No cm_id (no device to ask): found missing half-way. */
	link_conn(&c, &w, &f, false);
	assert_int_equal(rc_wait_timed_out(&c, &w), 0);
	assert_int_equal(c.link.state, -1);
	assert_int_equal(rc_wait_timed_out(&c, &w), -ETIMEDOUT);
	want_silent_peer(&c);
	/* A local stall is named first, whatever the counters say. */
	fake_port_remove(&f);
	fake_port_make(&f, true);
	link_conn(&c, &w, &f, true);
	c.local_stall = disk_busy;
	assert_int_equal(rc_wait_timed_out(&c, &w), 0); /* half-way: not asked */
	fake_counter(&f, "completer_retry_err", 200);
	assert_int_equal(rc_wait_timed_out(&c, &w), -ETIMEDOUT);
	assert_string_equal(c.log.err, "no progress within 1000 ms: the local disk stalled");
	fake_port_remove(&f);
}

/* rc_next_wc on an empty CQ while a thread bumps the counters. */
struct bumper {
	const struct fake_port *f;
	int ms;	     /* how long it bumps, every 10 ms (by the clock) */
	int wake_fd; /* -1, or an eventfd it writes once at wake_ms */
	int wake_ms;
	uint64_t gap_us; /* out: the longest time between two bumps */
};

static void *bump(void *arg)
{
	struct bumper *b = arg;
	uint64_t now = rc_now_us(), t0 = now, end = now + (uint64_t)b->ms * 1000u, last = now;
	uint64_t one = 1;
	unsigned long long v = 8;

	b->gap_us = 0;
	while ((now = rc_now_us()) < end) {
		fake_counter(b->f, "rcvd_seq_err", v++);
		if (now - last > b->gap_us)
			b->gap_us = now - last;
		last = now;
		if (b->wake_fd >= 0 && now - t0 >= (uint64_t)b->wake_ms * 1000u) {
			assert_int_equal(write(b->wake_fd, &one, sizeof(one)), sizeof(one));
			b->wake_fd = -1;
		}
		usleep(10000);
	}
	return NULL;
}

static void next_wc_waits_on_a_resending_link(bool busy, int bump_ms, const char *want,
					      uint64_t min_ms, uint64_t max_ms)
{
	struct empty_cq_conn e;
	struct rc_conn *c = &e.c;
	struct fake_port f;
	struct bumper b;
	struct ibv_wc wc;
	pthread_t t;
	uint64_t t0, ms;
	bool ok;

	/*
	 * The wait looks at the counters every 200 ms. A bumper starved of CPU
	 * for that long (a loaded CI host; busy polling takes a core) leaves a
	 * quiet window that the code rightly ends on: then the fixture, not the
	 * code, failed, and the run is repeated (at most 3 times).
	 */
	for (int attempt = 1;; attempt++) {
		fake_port_make(&f, true);
		empty_cq_conn_init(&e, busy, 400);
		c->link.sysfs = f.root;
		assert_int_equal(rc_link_find(&c->link, "rxe0", 1), 0);
		b.f = &f;
		b.ms = bump_ms;
		b.wake_fd = -1;
		assert_int_equal(pthread_create(&t, NULL, bump, &b), 0);
		t0 = rc_now_us();
		assert_int_equal(rc_next_wc(c, &wc), -ETIMEDOUT);
		ms = (rc_now_us() - t0) / 1000u;
		assert_int_equal(pthread_join(t, NULL), 0);
		fake_port_remove(&f);
		ok = strstr(c->log.err, want) && ms >= min_ms && ms <= max_ms;
		if (ok || !bump_ms || b.gap_us < 150000 || attempt == 3)
			break;
		print_message("bumper starved for %" PRIu64 " ms (run %d): again\n",
			      b.gap_us / 1000u, attempt);
	}
	if (!ok && bump_ms && b.gap_us >= 150000) /* starved every time: nothing measured */
		skip();
	if (!strstr(c->log.err, want))
		fail_msg("after %" PRIu64 " ms: '%s', not /%s/", ms, c->log.err, want);
	assert_true(ms >= min_ms);
	assert_true(ms <= max_ms);
}

/* Bumped throughout: the wait ends when the connection's budget of
 * 3 x 400 ms is spent, naming the link. */
static void next_wc_ends_at_the_cap(void **state)
{
	(void)state;
	next_wc_waits_on_a_resending_link(false, 1800, "while the link kept retransmitting", 1200,
					  1600);
	next_wc_waits_on_a_resending_link(true, 1800, "while the link kept retransmitting", 1200,
					  1600);
}

/*
 * Two calls of rc_next_wc on one connection, the counters bumped all the
 * while: the first goes on past 400 ms and is woken at 700 ms (wake_fd,
 * -EAGAIN); it charged 400 + 200 + 200 ms. The second may charge only the
 * 400 ms left: at its timeout (400 + 200 more would pass 1200) it fails,
 * naming what the first took. Both end within the budget and a timeout.
 */
static void next_wc_budget_spans_calls(void **state)
{
	struct empty_cq_conn e;
	struct rc_conn *c = &e.c;
	struct fake_port f;
	struct bumper b;
	struct ibv_wc wc;
	pthread_t t;
	uint64_t t0, t1, t2;
	int efd, r1, r2;

	(void)state;
	fake_port_make(&f, true);
	empty_cq_conn_init(&e, false, 400);
	c->link.sysfs = f.root;
	assert_int_equal(rc_link_find(&c->link, "rxe0", 1), 0);
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	assert_true(efd >= 0);
	c->wake_fd = efd;
	b = (struct bumper){ .f = &f, .ms = 1600, .wake_fd = efd, .wake_ms = 700 };
	assert_int_equal(pthread_create(&t, NULL, bump, &b), 0);
	t0 = rc_now_us();
	r1 = rc_next_wc(c, &wc);
	t1 = rc_now_us();
	r2 = rc_next_wc(c, &wc);
	t2 = rc_now_us();
	assert_int_equal(pthread_join(t, NULL), 0);
	close(efd);
	fake_port_remove(&f);
	if (b.gap_us >= 150000) /* a starved bumper: the checks below mean nothing */
		skip();
	assert_int_equal(r1, -EAGAIN);
	assert_int_equal(r2, -ETIMEDOUT);
	assert_non_null(strstr(c->log.err, "no completion within 400 ms while the link kept "
					   "retransmitting"));
	assert_non_null(strstr(c->log.err, "earlier waits on a resending link had taken 800 ms "
					   "of the 1200 ms it may spend"));
	assert_in_range((t1 - t0) / 1000u, 700, 900);
	assert_in_range((t2 - t1) / 1000u, 400, 600);
}

/* Bumped for 700 ms: extended past 400 ms (checks at 400, 600, 800), then
 * quiet from 800 to 1000 ms: it ends there. */
static void next_wc_ends_when_quiet(void **state)
{
	(void)state;
	next_wc_waits_on_a_resending_link(false, 700, "then nothing for 200 ms", 1000, 1300);
	/* Never bumped: a silent peer, as before. */
	next_wc_waits_on_a_resending_link(false, 0, "no completion within 400 ms; hint: the peer",
					  400, 700);
}

/* A port with counters, and a connection whose first wait noted them. */
static void lossy_conn(struct rc_conn *c, struct fake_port *f)
{
	struct rc_cq_wait w;

	fake_port_make(f, true);
	link_conn(c, &w, f, true);
	c->link.conn_have = true;
	c->link.conn_peer = 7; /* rcvd_seq_err at the first wait */
}

/* RETRY_EXC_ERR: "a lossy or reordering link" only when the counters that
 * need a live peer's packets rose during the connection; this port's own
 * resends alone (a dead peer raises them too) change nothing. */
static void retries_exhausted_names_a_lossy_link(void **state)
{
	struct ibv_wc wc = { .wr_id = 9, .status = IBV_WC_RETRY_EXC_ERR };
	struct rc_conn c;
	struct fake_port f;
	char plain[RC_ERR_LEN];

	(void)state;
	lossy_conn(&c, &f);
	rc_wc_check(&c.log, &wc);
	snprintf(plain, sizeof(plain), "%s", c.log.err);
	fake_counter(&f, "completer_retry_err", 107); /* our own resends only */
	rc_wc_explain(&c, &wc);
	assert_string_equal(c.log.err, plain);
	assert_true(c.wc_failed);
	fake_counter(&f, "rcvd_seq_err", 12); /* the peer NAKed 5 gaps */
	rc_wc_explain(&c, &wc);
	assert_non_null(strstr(c.log.err, "transport retry counter exceeded"));
	assert_non_null(strstr(c.log.err, "the port counted 5 packets from a peer out of order, "
					  "resent or NAKed: a lossy or reordering link"));
	/* A peer that disconnected: said, and the lossy link beside it. */
	assert_int_equal(rc_peer_gone(&c), -ECONNRESET);
	assert_non_null(strstr(c.log.err, "the peer disconnected; hint: "));
	assert_non_null(strstr(c.log.err, "; and during this connection the port counted 5 "
					  "packets from a peer"));
	/* Counters gone (or never found): the message as it was. */
	rc_wc_check(&c.log, &wc);
	c.link.conn_have = false;
	rc_wc_explain(&c, &wc);
	assert_string_equal(c.log.err, plain);
	rc_peer_gone(&c);
	assert_string_equal(c.log.err, "the peer disconnected; hint: "
				       "the peer closed the connection (or its process died)");
	fake_port_remove(&f);
}

/* A flush as the first failure, the peer gone since, the counters risen:
 * the flush's cause, the disconnect beside it, and the lossy link. */
static void first_flush_names_cause_and_link(void **state)
{
	struct ibv_wc wc = { .wr_id = 1, .status = IBV_WC_WR_FLUSH_ERR };
	struct rc_conn c;
	struct fake_port f;
	char plain[RC_ERR_LEN];

	(void)state;
	lossy_conn(&c, &f);
	c.peer_disconnected = true;
	fake_counter(&f, "rcvd_seq_err", 12);
	rc_wc_check(&c.log, &wc);
	rc_wc_explain(&c, &wc);
	assert_non_null(strstr(
		c.log.err,
		"work request 1 failed: Work Request Flushed Error, and no error came before it"));
	assert_non_null(strstr(c.log.err, "; the peer has disconnected since"));
	assert_non_null(strstr(c.log.err, "a lossy or reordering link"));
	/* Our own disconnect came first: the flush is its aftermath. */
	c.wc_failed = false;
	c.local_disconnected = true;
	rc_wc_check(&c.log, &wc);
	snprintf(plain, sizeof(plain), "%s", c.log.err);
	rc_wc_explain(&c, &wc);
	assert_string_equal(c.log.err, plain);
	/* An error polled in the same batch, behind the flush: it is named. */
	c.wc_failed = false;
	c.local_disconnected = false;
	c.wc[0] = wc;
	c.wc[1] = (struct ibv_wc){ .wr_id = 5, .status = IBV_WC_RETRY_EXC_ERR };
	c.wc_next = 1;
	c.wc_count = 2;
	rc_wc_explain(&c, &wc);
	assert_non_null(
		strstr(c.log.err, "work request 5 failed: transport retry counter exceeded"));
	assert_non_null(strstr(c.log.err, "; but during this connection the port counted 5 "));
	fake_port_remove(&f);
}

/* A stand-in for a device's send queue: takes every WR but one whose
 * wr_id is 99, which it refuses as a full queue would. */
static int post_send_but_99(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	(void)qp;
	for (; wr; wr = wr->next) {
		if (wr->wr_id == 99) {
			*bad = wr;
			return ENOMEM;
		}
	}
	return 0;
}

/* The kernels with the rdma_rxe bug: 6.12 and later, as shown. */
static void rxe_bug_kernels(void **state)
{
	(void)state;
	assert_false(rc_rxe_read_send_kernel(6, 1));
	assert_false(rc_rxe_read_send_kernel(6, 11));
	assert_false(rc_rxe_read_send_kernel(5, 19));
	assert_true(rc_rxe_read_send_kernel(6, 12));
	assert_true(rc_rxe_read_send_kernel(6, 18));
	assert_true(rc_rxe_read_send_kernel(7, 3));
}

/* Does the kernel these tests run on have the rdma_rxe bug? */
static bool host_has_rxe_bug(void)
{
	char rel[65];
	int major = 0, minor = 0;

	sscanf(rc_kernel_release(rel, sizeof(rel)), "%d.%d", &major, &minor);
	return rc_rxe_read_send_kernel(major, minor);
}

/* rc_wc_explain of a connection's first failure, a flush of QP qp_num. */
static void flush_of(struct rc_conn *c, uint32_t qp_num)
{
	struct ibv_wc wc = { .wr_id = 4, .status = IBV_WC_WR_FLUSH_ERR, .qp_num = qp_num };

	c->wc_failed = false;
	rc_wc_check(&c->log, &wc);
	rc_wc_explain(c, &wc);
}

/* rc_post_send_list notes a READ posted after a SEND on the QP, for the
 * first flush's wording; a WR the device refused does not count. */
static void post_notes_read_after_send(void **state)
{
	struct ibv_context ctx;
	struct ibv_qp qp;
	struct ibv_mr mr = { .lkey = 1 };
	char mem[64];
	struct rc_buf b = { .addr = mem, .len = sizeof(mem), .mr = &mr };
	struct ibv_send_wr refused = { .wr_id = 99, .opcode = IBV_WR_RDMA_READ };
	struct ibv_send_wr send = { .wr_id = 1, .opcode = IBV_WR_SEND, .next = &refused };
	struct rc_conn c;

	(void)state;
	memset(&ctx, 0, sizeof(ctx));
	memset(&qp, 0, sizeof(qp));
	ctx.ops.post_send = post_send_but_99;
	qp.context = &ctx;
	rc_conn_init(&c, "test", false, 1000, -1);
	c.qp = &qp;
	c.dev.max_msg_sz = 1u << 20;
	/* WRITEs and a READ before any SEND: not the pattern. */
	assert_int_equal(rc_post_rdma(&c, IBV_WR_RDMA_WRITE, &b, 0, 8, 0, 0, 0, 2, true), 0);
	assert_int_equal(rc_post_rdma(&c, IBV_WR_RDMA_READ, &b, 0, 8, 0, 0, 0, 3, true), 0);
	assert_false(c.posted_send || c.read_after_send);
	/* A chain refused at its READ: the SEND before it went, the READ not. */
	assert_int_equal(rc_post_send_list(&c, &send), -ENOMEM);
	assert_true(c.posted_send);
	assert_false(c.read_after_send);
	/* On Soft-RoCE, a first flush is worded as the rdma_rxe bug only on
	 * a QP with a READ after a SEND: not a put's (WRITEs and SENDs), not
	 * a QP beside c's (another qp_num), whatever c's own carried. */
	c.dev.vendor_id = RC_SOFT_ROCE_VENDOR_ID;
	flush_of(&c, 0);
	assert_non_null(strstr(c.log.err, "the QP went to the error state without an error "
					  "completion first; hint: see the kernel log"));
	assert_null(strstr(c.log.err, "rdma_rxe"));
	assert_int_equal(rc_post_rdma(&c, IBV_WR_RDMA_READ, &b, 0, 8, 0, 0, 0, 4, true), 0);
	assert_true(c.read_after_send);
	flush_of(&c, 7);
	assert_null(strstr(c.log.err, "rdma_rxe"));
	flush_of(&c, 0);
	/* The running kernel decides (the unit tests run on any host): the
	 * bug's wording where it has the bug, the plain one elsewhere. */
	assert_int_equal(strstr(c.log.err,
				"Soft-RoCE moved the QP to the error state without "
				"reporting an error; a known rdma_rxe bug on Linux ") != NULL,
			 host_has_rxe_bug());
	assert_int_equal(strstr(c.log.err, "hint: see the kernel log") != NULL,
			 !host_has_rxe_bug());
	/* Another vendor: never the rdma_rxe bug. */
	c.dev.vendor_id = 0x02c9;
	flush_of(&c, 0);
	assert_null(strstr(c.log.err, "rdma_rxe"));
}

/* The hooks rc-counters.c gives rc_next_wc are its functions. */
static void counters_hooks(void **state)
{
	(void)state;
	assert_ptr_equal(rc_link_counters.first_ms, rc_wait_first_ms);
	assert_ptr_equal(rc_link_counters.timed_out, rc_wait_timed_out);
	assert_ptr_equal(rc_link_counters.peer_gone, rc_peer_gone);
	assert_ptr_equal(rc_link_counters.explain, rc_wc_explain);
	assert_non_null(rc_link_counters.begin);
	assert_non_null((void (*)(void))rc_link_find);
	assert_non_null((void (*)(void))rc_link_read);
	assert_non_null((void (*)(void))rc_link_begin);
	assert_non_null((void (*)(void))rc_kernel_release);
}
int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(counters_hooks),
		cmocka_unit_test(next_wc_busy_names_polls_errno),
		cmocka_unit_test(next_wc_event_names_polls_errno),
		cmocka_unit_test(wait_goes_on_while_counters_rise),
		cmocka_unit_test(budget_spans_the_connection),
		cmocka_unit_test(wait_ends_when_counters_stop),
		cmocka_unit_test(wait_without_counters_is_as_before),
		cmocka_unit_test(resends_without_replies_end_the_wait),
		cmocka_unit_test(crawl_ends_a_transfer),
		cmocka_unit_test(next_wc_ends_at_the_cap),
		cmocka_unit_test(next_wc_budget_spans_calls),
		cmocka_unit_test(next_wc_ends_when_quiet),
		cmocka_unit_test(retries_exhausted_names_a_lossy_link),
		cmocka_unit_test(first_flush_names_cause_and_link),
		cmocka_unit_test(rxe_bug_kernels),
		cmocka_unit_test(post_notes_read_after_send),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
