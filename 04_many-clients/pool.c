// SPDX-License-Identifier: MIT
/*
 * pool.c - 04's shared device: CQs sized so that none can overrun, the
 * SRQ's pool of receive buffers and its credit rule, the --counter word,
 * and the device's async events (many.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "atomic.h"
#include "many.h"

static int fail(const char *what, const char *err)
{
	fprintf(stderr, "rdma-server: %s: %s\n", what, err);
	return -1;
}

/* Page-aligned memory of ours, zeroed. */
static void *alloc_pages(size_t len)
{
	void *p = NULL;

	if (posix_memalign(&p, 4096, len))
		return NULL;
	memset(p, 0, len);
	return p;
}

/*
 * The CQs. Every CQ must hold every completion that can be outstanding
 * on it (a full CQ loses send completions and kills a QP whose receive
 * finds no room: docs/kernels.md, "CQ sizing"): MANY_SEND_WR sends of
 * each of its clients plus, as the SRQ's receives may all complete on
 * one CQ, the whole pool. Above max_cqe: more CQs, clients split evenly.
 */
static int size_cqs(struct server *s, const struct rc_device_limits *lim, struct rc_device_attr *a)
{
	long room = (long)lim->max_cqe - (long)s->nrecv;

	if (!s->use_mw) {
		/* Fallback: each client's CQ is its own; this one only
		 * keeps the context (async events) the same. */
		*a = (struct rc_device_attr){ .ncq = 1, .cq_size = 1 };
		s->per_cq = s->max;
		return 0;
	}
	if (room < (long)MANY_SEND_WR)
		return fail("sizing the CQs", "the pool alone fills max_cqe");
	s->per_cq = (unsigned)(room / MANY_SEND_WR);
	if (s->per_cq > s->max)
		s->per_cq = s->max;
	a->ncq = (int)((s->max + s->per_cq - 1) / s->per_cq);
	if (a->ncq > RC_MAX_CQS)
		return fail("sizing the CQs", "more CQs needed than RC_MAX_CQS");
	a->cq_size = (int)(s->per_cq * MANY_SEND_WR + s->nrecv);
	a->srq_size = s->nrecv;
	if ((int)s->nrecv > lim->max_srq_wr)
		return fail("sizing the SRQ", "--max-clients is above the device's max_srq_wr");
	return 0;
}

/* One buffer of the pool back on the SRQ. */
int pool_repost(struct server *s, unsigned i)
{
	if (s->rx_posted[i])
		return 0;
	if (rc_post_srq_recv(&s->d, &s->rx, (size_t)i * RW_CTRL_MAX, RW_CTRL_MAX, WR_RECV | i))
		return fail("posting a receive to the SRQ", s->d.log.err);
	s->rx_posted[i] = true;
	s->posted++;
	return 0;
}

/* Every buffer not on the SRQ back on it (one whose repost failed). */
void pool_refill(struct server *s)
{
	for (unsigned i = 0; i < s->nrecv; i++)
		if (pool_repost(s, i))
			return;
}

/* The pool: one receive buffer per credit of each client, plus spares.
 * It is sized once, from --max-clients, and never grows. */
static int open_pool(struct server *s)
{
	s->rx_mem = alloc_pages((size_t)s->nrecv * RW_CTRL_MAX);
	s->tx_mem = alloc_pages((size_t)s->max * 2 * RW_CTRL_MAX);
	s->rx_posted = calloc(s->nrecv, sizeof(*s->rx_posted));
	if (!s->rx_mem || !s->tx_mem || !s->rx_posted)
		return fail("allocating the pool", strerror(ENOMEM));
	/* The NIC writes received messages: LOCAL_WRITE; sends: no flag. */
	if (rc_mem_reg(&s->d, s->rx_mem, (size_t)s->nrecv * RW_CTRL_MAX, IBV_ACCESS_LOCAL_WRITE,
		       &s->rx) ||
	    rc_mem_reg(&s->d, s->tx_mem, (size_t)s->max * 2 * RW_CTRL_MAX, 0, &s->tx))
		return fail("registering the pool", s->d.log.err);
	if (s->o.inject == MANY_INJECT_SRQ_LOW) {
		/* The lesson: a few receives, never posted again (on_pool_recv). */
		for (unsigned i = 0; i < MANY_LESSON_POSTED; i++)
			if (pool_repost(s, i))
				return -1;
		printf("lesson srq-low: %u receives on the SRQ, its limit armed at %u; the server "
		       "posts none again\n",
		       s->posted, s->low);
	} else {
		pool_refill(s);
	}
	if (s->posted != (s->o.inject == MANY_INJECT_SRQ_LOW ? MANY_LESSON_POSTED : s->nrecv))
		return -1;
	/* The limit: fewer than the spares posted raises SRQ_LIMIT_REACHED. */
	if (rc_srq_arm_limit(&s->d, s->low))
		return fail("arming the SRQ limit", s->d.log.err);
	rc_trace(&s->d.log, "pool: %u receives of %u bytes (%u clients x %u credit + %u), limit %u",
		 s->nrecv, RW_CTRL_MAX, s->max, MANY_CREDITS, MANY_POOL_SPARE, s->low);
	return 0;
}

/* --counter: one 8-byte word, zero, a region of its own. */
static int open_counter(struct server *s)
{
	s->ctr_mem = alloc_pages(RW_WORD);
	if (!s->ctr_mem)
		return fail("allocating the counter", strerror(ENOMEM));
	if (!s->use_mw)
		return 0; /* registered on each atomic client's own PD */
	/* No REMOTE_* flag: only the windows bound on it open it. */
	if (rc_mem_reg(&s->d, s->ctr_mem, RW_WORD, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND,
		       &s->ctr))
		return fail("registering the counter", s->d.log.err);
	return 0;
}

/* --inject shared-region, the unsafe design: every slice in one region
 * with REMOTE_* flags, so its one rkey reaches every slice from any QP on
 * the PD. Registered (pinned) at once, hence the 64 MiB bound. */
static int open_shared_region(struct server *s)
{
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

	if (s->d.lim.atomic_cap != IBV_ATOMIC_NONE)
		access |= IBV_ACCESS_REMOTE_ATOMIC;
	if (rc_mem_reg(&s->d, s->arena, s->arena_len, access, &s->all))
		return fail("registering the shared region", s->d.log.err);
	return 0;
}

uint64_t counter_value(const struct server *s)
{
	return s->ctr_mem ? rw_word_load(s->ctr_mem) : 0;
}

int many_device_open(struct server *s, struct ibv_context *verbs)
{
	struct rc_device_limits lim;
	struct rc_device_attr a = { 0 };
	const char *name = ibv_get_device_name(verbs->device);

	s->nrecv = s->max * MANY_CREDITS + MANY_POOL_SPARE;
	s->low = s->o.inject == MANY_INJECT_SRQ_LOW ? MANY_LESSON_LIMIT : MANY_POOL_SPARE;
	if (rc_device_query(verbs, &lim, &s->d.log))
		return fail("querying the device", s->d.log.err);
	/* shared-region: the shared PD and SRQ, its one region instead of windows. */
	s->use_mw = (lim.mw_type2 || s->o.inject == MANY_INJECT_SHARED_REGION) && !s->o.no_mw;
	if (!s->use_mw)
		printf("%s: %s: a PD, CQ and region per client, 02's way (one PD with a region "
		       "each "
		       "would not isolate the clients: a region's rkey would reach it from any "
		       "QP on the PD)\n",
		       name, s->o.no_mw ? "--no-mw" : "no type 2 memory windows");
	if (size_cqs(s, &lim, &a))
		return -1;
	if (rc_device_open(&s->d, verbs, &a, "server device", s->o.rc.verbose))
		return fail("opening the device", s->d.log.err);
	s->dev_open = true;
	if (s->use_mw)
		printf("%s: one PD, %d CQ(s) of %d, one SRQ of %u receives for up to %u clients; "
		       "%s\n",
		       name, s->d.ncq, s->d.cq_size, s->nrecv, s->max,
		       s->o.inject == MANY_INJECT_SHARED_REGION
			       ? "LESSON shared-region, UNSAFE: every slice in one region with "
				 "REMOTE_WRITE|REMOTE_READ, its rkey in every client's BUF, no "
				 "windows"
			       : "each slice a region of its own behind a type 2 window");
	/* Address space for every slice, no memory yet: a page costs only
	 * once a client's pattern touches it, and is given back when that
	 * client leaves (MADV_DONTNEED in clients.c). */
	s->stride = ((size_t)s->o.slice + 4095) & ~(size_t)4095;
	s->arena_len = (size_t)s->max * s->stride;
	s->arena = mmap(NULL, s->arena_len, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (s->arena == MAP_FAILED) {
		s->arena = NULL;
		return fail("reserving the slices (mmap)", strerror(errno));
	}
	if (s->o.inject == MANY_INJECT_SHARED_REGION && open_shared_region(s))
		return -1;
	if (s->use_mw && open_pool(s))
		return -1;
	return s->o.counter ? open_counter(s) : 0;
}

/* Release in reverse order, each release checked (*bad set on one). */
void many_device_close(struct server *s, int *bad)
{
	struct rc_buf *b[] = { &s->ctr, &s->tx, &s->rx, &s->all };

	for (unsigned i = 0; s->dev_open && i < 4; i++)
		if (b[i]->mr && rc_mem_dereg(&s->d, b[i]) && (*bad = 1))
			fail("releasing memory", s->d.log.err);
	if (s->dev_open && rc_device_close(&s->d) && (*bad = 1))
		fail("closing the device", s->d.log.err);
	s->dev_open = false;
	free(s->rx_posted);
	free(s->rx_mem);
	free(s->tx_mem);
	free(s->ctr_mem);
	if (s->arena)
		munmap(s->arena, s->arena_len);
}

static struct client *client_of_qp(struct server *s, const struct ibv_qp *qp)
{
	for (unsigned i = 0; qp && i < s->max; i++)
		if (s->cl[i].used && s->cl[i].c.qp == qp)
			return &s->cl[i];
	return NULL;
}

/* --inject srq-low: the limit event, and what it means. */
static void lesson_srq_low_event(struct server *s, const char *event)
{
	printf("async event %s: lesson srq-low: not refilling (we have taken %u of the %u\n"
	       "receives' completions so far)\n",
	       event, MANY_LESSON_POSTED - s->posted, MANY_LESSON_POSTED);
	printf("lesson srq-low: the event came once fewer than %u receives were posted, and once\n"
	       "only: it disarms the limit until ibv_modify_srq arms it again. A service\n"
	       "refills here and arms it again; this lesson does neither. Once the SRQ is\n"
	       "empty a client's SEND finds no receive: our NIC answers with an RNR NAK that\n"
	       "asks for a retry after our QP's min_rnr_timer (%d: 10.24 ms), and the\n"
	       "client's NIC retries rnr_retry times, the count our accept (the REP) gave it\n"
	       "(%d), then fails the SEND with IBV_WC_RNR_RETRY_EXC_ERR. This server sees none\n"
	       "of it (rdma-load --inject srq-low shows the client's side).\n",
	       s->low, MANY_MIN_RNR_TIMER, RC_RNR_RETRY_COUNT);
}

/* One async event: what it means for us. */
static void on_async(struct server *s, const struct rc_async *ev)
{
	struct client *k = client_of_qp(s, ev->qp);
	char why[128];

	switch (ev->type) {
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
		/* Its QP is in the error state: nothing more will work on it. */
		snprintf(why, sizeof(why), "async event %s: its QP failed",
			 ibv_event_type_str(ev->type));
		if (k && !k->closing)
			drop(s, k, why);
		break;
	case IBV_EVENT_CQ_ERR:
		fprintf(stderr, "rdma-server: async event %s: a CQ overran, its QPs failed\n",
			ibv_event_type_str(ev->type));
		break;
	case IBV_EVENT_PORT_ERR:
		fprintf(stderr, "rdma-server: async event %s: port %d is down\n",
			ibv_event_type_str(ev->type), ev->port);
		break;
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		/* 6.12 and later: a QP on the SRQ went to the error state and
		 * takes no more receives (traced by rc_device_async_event). */
		break;
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		if (s->o.inject == MANY_INJECT_SRQ_LOW) {
			lesson_srq_low_event(s, ibv_event_type_str(ev->type));
			break;
		}
		/* One-shot: refill what is missing, then arm it again. */
		printf("async event %s: %u of %u receives posted; refilling\n",
		       ibv_event_type_str(ev->type), s->posted, s->nrecv);
		pool_refill(s);
		if (rc_srq_arm_limit(&s->d, s->low))
			fail("arming the SRQ limit", s->d.log.err);
		break;
	default: printf("async event %s\n", ibv_event_type_str(ev->type)); break;
	}
}

void on_async_events(struct server *s)
{
	struct rc_async ev;
	int ret;

	while ((ret = rc_device_async_event(&s->d, &ev)) == 0)
		on_async(s, &ev);
	if (ret != -EAGAIN)
		fail("reading an async event", strerror(-ret));
}
