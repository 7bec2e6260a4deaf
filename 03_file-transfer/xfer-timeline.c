// SPDX-License-Identifier: MIT
/*
 * xfer-timeline.c - where a side's main thread spent a transfer (-v).
 * See xfer-timeline.h.
 */
#include "xfer-timeline.h"

#include <stdio.h>
#include <string.h>

#include "rdma-common.h" /* rc_now_ns */

static const char *const wait_names[XFER_WAIT_N] = {
	[XFER_WAIT_LINK] = "link",
	[XFER_WAIT_PEER] = "peer",
	[XFER_WAIT_DISK] = "disk",
	[XFER_WAIT_END] = "end",
};

void xfer_tl_start(struct xfer_timeline *tl, bool on, uint64_t t0_ns)
{
	memset(tl, 0, sizeof(*tl));
	tl->on = on;
	tl->t0_ns = t0_ns;
}

uint64_t xfer_tl_now(const struct xfer_timeline *tl)
{
	/* Off: not even the clock (in a VM it can be a system call). */
	return tl->on ? rc_now_ns() : 0;
}

void xfer_tl_waited(struct xfer_timeline *tl, enum xfer_wait_for what, uint64_t since)
{
	uint64_t now;

	if (!tl->on || what >= XFER_WAIT_N)
		return;
	now = rc_now_ns();
	tl->wait_ns[what] += now > since ? now - since : 0;
	tl->waits[what]++;
}

void xfer_tl_data(struct xfer_timeline *tl, unsigned inflight)
{
	uint64_t now;

	if (!tl->on)
		return;
	now = rc_now_ns();
	if (!tl->first_ns)
		tl->first_ns = now;
	else
		tl->inflight_area += (uint64_t)tl->inflight * (now - tl->inflight_since_ns);
	tl->last_ns = now;
	tl->inflight = inflight;
	tl->inflight_since_ns = now;
}

void xfer_tl_end(struct xfer_timeline *tl)
{
	if (tl->on && !tl->end_ns)
		tl->end_ns = rc_now_ns();
}

void xfer_tl_trace(struct xfer_timeline *tl, const struct rc_log *log, uint64_t bytes,
		   unsigned depth)
{
	char line[512];

	if (!tl->on)
		return;
	xfer_tl_end(tl);
	xfer_tl_format(tl, bytes, depth, line, sizeof(line));
	rc_trace(log, "%s", line);
}

static double ms(uint64_t ns)
{
	return (double)ns / 1e6;
}

void xfer_tl_format(const struct xfer_timeline *tl, uint64_t bytes, unsigned depth, char *out,
		    size_t outlen)
{
	uint64_t span = tl->last_ns > tl->first_ns ? tl->last_ns - tl->first_ns : 0;
	uint64_t before = tl->first_ns > tl->t0_ns ? tl->first_ns - tl->t0_ns : 0;
	uint64_t after = tl->end_ns > tl->last_ns ? tl->end_ns - tl->last_ns : 0;
	size_t n = 0;
	int w, i;

	if (!outlen)
		return;
	out[0] = '\0';
	if (!tl->on || !tl->first_ns) {
		snprintf(out, outlen, "timeline: no data moved");
		return;
	}
	w = snprintf(out, outlen,
		     "timeline: %.1f ms before the first data, data %.1f ms (%.1f MiB/s",
		     ms(before), ms(span),
		     span ? (double)bytes / ((double)span / 1e9) / 1048576.0 : 0.0);
	if (w > 0)
		n += (size_t)w;
	if (depth && span && n < outlen) {
		w = snprintf(out + n, outlen - n, ", %.1f of %u in flight on average",
			     (double)tl->inflight_area / (double)span, depth);
		if (w > 0)
			n += (size_t)w;
	}
	if (n < outlen) {
		w = snprintf(out + n, outlen - n, "), %.1f ms after; blocked:", ms(after));
		if (w > 0)
			n += (size_t)w;
	}
	for (i = 0; i < XFER_WAIT_N && n < outlen; i++) {
		w = snprintf(out + n, outlen - n, "%s %s %.1f ms (%llu)", i ? "," : "",
			     wait_names[i], ms(tl->wait_ns[i]), (unsigned long long)tl->waits[i]);
		if (w > 0)
			n += (size_t)w;
	}
}
