// SPDX-License-Identifier: MIT
/*
 * xfer-progress.c - 03's client progress line. See xfer-progress.h.
 */
#include "xfer-progress.h"

#include <inttypes.h>
#include <stdio.h>

#include "rdma-common.h"
#include "xfer-opts.h"

void xfer_progress_show(struct xfer_progress *p, const char *op, uint64_t done, uint64_t size)
{
	uint64_t now = rc_now_ns(), left;
	double secs, rate;
	char a[32], b[32], eta[32];

	if (!p->on || now - p->last_ns < (p->tty ? 250000000u : 1000000000u))
		return;
	p->last_ns = now;
	secs = (double)(now - p->t0_ns) / 1e9;
	rate = secs > 0 ? (double)done / secs : 0;
	left = rate > 0 ? (uint64_t)((double)(size - done) / rate) : 0;
	if (rate > 0)
		snprintf(eta, sizeof(eta), "%" PRIu64 ":%02" PRIu64 ":%02" PRIu64, left / 3600,
			 left / 60 % 60, left % 60);
	else
		snprintf(eta, sizeof(eta), "--:--:--");
	xfer_fmt_size(a, sizeof(a), done);
	xfer_fmt_size(b, sizeof(b), size);
	fprintf(stderr, "%s%s %s of %s (%.0f%%), %.1f MiB/s, ETA %s%s", p->tty ? "\r" : "", op, a,
		b, size ? 100.0 * (double)done / (double)size : 100.0, rate / 1048576.0, eta,
		p->tty ? "\033[K" : "\n");
	p->shown = p->tty;
}

void xfer_progress_end(struct xfer_progress *p)
{
	if (p->shown)
		fputs("\r\033[K", stderr); /* clear the line */
	p->shown = false;
}
