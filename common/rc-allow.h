/* SPDX-License-Identifier: MIT */
/*
 * rc-allow.h - who may connect to a server: the --allow PREFIX list every
 * server takes, matched against the peer's address of each connect
 * request before anything is allocated for it, and the rate limit that
 * keeps a flood of refused requests from filling the log.
 *
 * This is a filter on the address the connect request claims, as the CM
 * reports it (rdma_get_peer_addr): on RoCE the IP of the peer's netdev.
 * It keeps honest strangers out; it does not authenticate anyone (see
 * README.md, "Security").
 */
#ifndef RC_ALLOW_H
#define RC_ALLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct sockaddr;

#define RC_ALLOW_MAX 64 /* --allow options, at most */

/*
 * One prefix, kept as IPv6: an IPv4 prefix a.b.c.d/n is ::ffff:a.b.c.d/(96+n),
 * so it matches IPv4 peers and IPv4-mapped IPv6 peers alike. Bits past
 * len are zero.
 */
struct rc_prefix {
	uint8_t addr[16];
	uint8_t len; /* 0..128 */
};

struct rc_allow {
	unsigned n; /* 0: no --allow, everyone may connect (the default) */
	struct rc_prefix p[RC_ALLOW_MAX];
};

/*
 * Add "ADDR" or "ADDR/LEN" (IPv4 or IPv6; a plain address is /32 or
 * /128). Bits set beyond LEN are refused ("10.0.0.1/8": did you mean
 * 10.0.0.0/8?), as are more than RC_ALLOW_MAX prefixes. 0, or -EINVAL
 * with the reason in err.
 */
int rc_allow_add(struct rc_allow *a, const char *text, char *err, size_t errlen);

/* May this peer connect? True if the list is empty or a prefix matches;
 * false for an address family other than IPv4/IPv6 (when a list is set). */
bool rc_allow_match(const struct rc_allow *a, const struct sockaddr *peer);

/*
 * The log of refusals: at most RC_REFUSE_LOG_MAX lines in any window of
 * RC_REFUSE_LOG_WINDOW_US; the refusals beyond that are counted and
 * reported in one line when the window ends.
 */
#define RC_REFUSE_LOG_MAX	10
#define RC_REFUSE_LOG_WINDOW_US 1000000u

struct rc_ratelimit {
	uint64_t start_us; /* start of the current window (0: none yet) */
	unsigned logged;   /* lines printed in it */
	unsigned dropped;  /* refusals counted, not printed, in it */
};

/* A refusal at now_us: true if its line may be printed. First prints the
 * summary of the last window to f, if that one dropped lines. */
bool rc_ratelimit_take(struct rc_ratelimit *r, uint64_t now_us, FILE *f);
/* Print the summary to f if the window is over (or at once with force)
 * and lines were dropped. */
void rc_ratelimit_flush(struct rc_ratelimit *r, uint64_t now_us, bool force, FILE *f);
/* When the pending summary is due (UINT64_MAX: nothing pending). */
uint64_t rc_ratelimit_due(const struct rc_ratelimit *r);
/* A peer --allow refused, at now_us: its line "server: client PEER: not
 * allowed ...; refused" to f, rate-limited by r. */
void rc_allow_refused(struct rc_ratelimit *r, uint64_t now_us, const char *peer, FILE *f);

#endif /* RC_ALLOW_H */
