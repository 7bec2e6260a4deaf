/* SPDX-License-Identifier: MIT */
/*
 * xfer-progress.h - 03's client progress line: bytes, rate and ETA on
 * stderr (a line rewritten in place on a TTY, one line a second otherwise).
 */
#ifndef XFER_PROGRESS_H
#define XFER_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

struct xfer_progress {
	bool on, tty;
	uint64_t t0_ns, last_ns;
	bool shown; /* a TTY line is on screen */
};

/* `done` of `size` bytes of a put or get ("put"/"get"), at most 4 times a
 * second on a TTY, once a second otherwise. */
void xfer_progress_show(struct xfer_progress *p, const char *op, uint64_t done, uint64_t size);
/* Clear the TTY line, if one is shown. */
void xfer_progress_end(struct xfer_progress *p);

#endif /* XFER_PROGRESS_H */
