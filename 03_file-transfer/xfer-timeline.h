/* SPDX-License-Identifier: MIT */
/*
 * xfer-timeline.h - with -v, where a side's main thread spent a transfer:
 * the data's span (first data operation to the last one's completion,
 * the span perftest times) apart from what comes before and after it, and
 * each wait for a completion or for the disk thread, by what it waited
 * for. Off, and no clock read, without -v.
 */
#ifndef XFER_TIMELINE_H
#define XFER_TIMELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What the main thread was waiting for when it blocked. */
enum xfer_wait_for {
	XFER_WAIT_LINK, /* our READs or WRITEs in flight: the link's time */
	XFER_WAIT_PEER, /* nothing of ours in flight: the peer's next message */
	XFER_WAIT_DISK, /* our disk thread (file I/O and hashing) */
	XFER_WAIT_END,	/* after the data: DONE or COMMITTED */
	XFER_WAIT_N
};

struct xfer_timeline {
	bool on;
	uint64_t t0_ns;	   /* the transfer's start (REQUEST sent, or accepted) */
	uint64_t first_ns; /* the first data operation posted (or arrived) */
	uint64_t last_ns;  /* the last data operation completed (or arrived) */
	uint64_t end_ns;   /* committed */
	uint64_t wait_ns[XFER_WAIT_N];
	uint64_t waits[XFER_WAIT_N];
	/* Time-weighted count of our data operations in flight. */
	unsigned inflight;
	uint64_t inflight_since_ns, inflight_area;
};

/* Start counting at t0_ns when `on` (-v); otherwise every call below
 * returns at once. */
void xfer_tl_start(struct xfer_timeline *tl, bool on, uint64_t t0_ns);
/* Before a blocking wait: the time now (0 when off). */
uint64_t xfer_tl_now(const struct xfer_timeline *tl);
/* After it: add the wait since `since` to `what`. */
void xfer_tl_waited(struct xfer_timeline *tl, enum xfer_wait_for what, uint64_t since);
/* A data operation was posted (or, on the passive side, arrived) or
 * completed: `inflight` are now outstanding. */
void xfer_tl_data(struct xfer_timeline *tl, unsigned inflight);
/* The transfer is over (committed, or failed). */
void xfer_tl_end(struct xfer_timeline *tl);
/* The transfer is over: end the timeline and trace its line (the
 * format below) to log. Nothing when off. */
struct rc_log;
void xfer_tl_trace(struct xfer_timeline *tl, const struct rc_log *log, uint64_t bytes,
		   unsigned depth);
/* One line: the spans, the data rate over `bytes`, the waits, and the
 * mean number in flight out of `depth` (0: not ours to count). */
void xfer_tl_format(const struct xfer_timeline *tl, uint64_t bytes, unsigned depth, char *out,
		    size_t outlen);

#endif /* XFER_TIMELINE_H */
