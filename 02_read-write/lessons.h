/* SPDX-License-Identifier: MIT */
/*
 * lessons.h - what 02's --inject lessons share: lessons.c's way of
 * posting work requests, watching their completions and saying what
 * happened, which the atomic lessons (lessons-atomic.c) reuse.
 */
#ifndef RW_LESSONS_H
#define RW_LESSONS_H

#include "client.h"

/* One WR of a lesson: what it is, and what became of it. */
struct lesson_wr {
	const char *what;
	int status; /* -1 until it completes */
	double ms;  /* from posting to its completion */
};

/* Print the explanation (nothing with --json). */
void say(const struct client *cl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* It showed what it teaches: "lesson NAME: shown (...)"; returns 1. */
int shown(struct client *cl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Something else happened: the error main prints; returns -EPROTO. */
int not_shown(struct client *cl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Wait until the n WRs with wr_id first + i (w[i]), posted at t0, have
 * completed, printing every completion; 0, or rc_next_wc's error. */
int watch_wrs(struct client *cl, struct lesson_wr *w, unsigned n, uint64_t first, uint64_t t0);
/* Post the chain cl->wrs of n WRs (wr_id WR_DATA + i) and watch_wrs. */
int post_and_watch(struct client *cl, struct lesson_wr *w, unsigned n);
/* Print our QP's state, and return it. */
enum ibv_qp_state show_qp_state(struct client *cl);
/* The end of a remote error's explanation: what became of our QP (st)
 * and of the WR behind the failed one (behind < 0: none). */
void explain_refused(struct client *cl, enum ibv_qp_state st, int behind);

#endif /* RW_LESSONS_H */
