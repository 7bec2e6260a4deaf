// SPDX-License-Identifier: MIT
/*
 * rc-allow.c - the servers' --allow prefixes and the rate limit of the
 * refusal log. See rc-allow.h.
 */
#include "rc-allow.h"
#include "rc-opts.h" /* rc_usage_error */

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

/* a.b.c.d as the IPv4-mapped IPv6 address ::ffff:a.b.c.d. */
static void map_v4(uint8_t out[16], const void *v4)
{
	memset(out, 0, 10);
	out[10] = out[11] = 0xff;
	memcpy(out + 12, v4, 4);
}

/* Do a and b agree in their first len bits? */
static bool same_bits(const uint8_t *a, const uint8_t *b, unsigned len)
{
	unsigned whole = len / 8, rest = len % 8;
	uint8_t mask = (uint8_t)(0xff00u >> rest);

	if (memcmp(a, b, whole))
		return false;
	return !rest || !((a[whole] ^ b[whole]) & mask);
}

int rc_allow_add(struct rc_allow *a, const char *text, char *err, size_t errlen)
{
	const char *slash = strchr(text, '/');
	size_t n = slash ? (size_t)(slash - text) : strlen(text);
	unsigned len, max, off, i;
	struct rc_prefix p = { 0 };
	uint8_t v4[4];
	char addr[INET6_ADDRSTRLEN];

	if (a->n >= RC_ALLOW_MAX)
		return rc_usage_error(err, errlen, "more than %d --allow prefixes", RC_ALLOW_MAX);
	if (n == 0 || n >= sizeof(addr))
		return rc_usage_error(err, errlen,
				      "invalid --allow '%s': not an IPv4 or IPv6 address", text);
	memcpy(addr, text, n);
	addr[n] = '\0';
	if (inet_pton(AF_INET, addr, v4) == 1) {
		map_v4(p.addr, v4);
		max = 32;
		off = 96;
	} else if (inet_pton(AF_INET6, addr, p.addr) == 1) {
		max = 128;
		off = 0;
	} else {
		return rc_usage_error(err, errlen,
				      "invalid --allow '%s': not an IPv4 or IPv6 address", text);
	}
	len = max;
	if (slash) {
		const char *s = slash + 1;

		/* Plain decimal digits only: no sign, no space, no "0x". */
		if (!*s || strlen(s) > 3)
			return rc_usage_error(err, errlen,
					      "invalid --allow '%s': prefix length 0 to %u", text,
					      max);
		for (len = 0; *s; s++) {
			if (*s < '0' || *s > '9')
				return rc_usage_error(err, errlen,
						      "invalid --allow '%s': prefix length 0 to %u",
						      text, max);
			len = len * 10 + (unsigned)(*s - '0');
		}
		if (len > max)
			return rc_usage_error(err, errlen,
					      "invalid --allow '%s': prefix length 0 to %u", text,
					      max);
	}
	p.len = (uint8_t)(off + len);
	/* Host bits must be zero: "10.0.0.1/8" is a typo more often than not. */
	for (i = p.len; i < 128; i++)
		if (p.addr[i / 8] & (0x80u >> (i % 8)))
			return rc_usage_error(
				err, errlen,
				"invalid --allow '%s': bits set beyond the prefix length %u", text,
				len);
	a->p[a->n++] = p;
	return 0;
}

bool rc_allow_match(const struct rc_allow *a, const struct sockaddr *peer)
{
	uint8_t addr[16];
	unsigned i;

	if (!a || !a->n)
		return true;
	if (!peer)
		return false;
	if (peer->sa_family == AF_INET)
		map_v4(addr, &((const struct sockaddr_in *)(const void *)peer)->sin_addr);
	else if (peer->sa_family == AF_INET6)
		memcpy(addr, &((const struct sockaddr_in6 *)(const void *)peer)->sin6_addr, 16);
	else
		return false; /* AF_IB or unknown: not something a prefix names */
	for (i = 0; i < a->n; i++)
		if (same_bits(addr, a->p[i].addr, a->p[i].len))
			return true;
	return false;
}

/* ------------------------------------------------------------------ */
/* The refusal log's rate limit                                        */
/* ------------------------------------------------------------------ */

void rc_ratelimit_flush(struct rc_ratelimit *r, uint64_t now_us, bool force, FILE *f)
{
	if (!r->start_us || (!force && now_us - r->start_us < RC_REFUSE_LOG_WINDOW_US))
		return;
	if (r->dropped)
		fprintf(f,
			"server: %u more connection requests refused within %.1f s, not logged one "
			"by one (at most %d lines per window)\n",
			r->dropped, RC_REFUSE_LOG_WINDOW_US / 1e6, RC_REFUSE_LOG_MAX);
	*r = (struct rc_ratelimit){ 0 };
}

bool rc_ratelimit_take(struct rc_ratelimit *r, uint64_t now_us, FILE *f)
{
	rc_ratelimit_flush(r, now_us, false, f);
	if (!r->start_us)
		r->start_us = now_us ? now_us : 1;
	if (r->logged < RC_REFUSE_LOG_MAX) {
		r->logged++;
		return true;
	}
	r->dropped++;
	return false;
}

uint64_t rc_ratelimit_due(const struct rc_ratelimit *r)
{
	return r->dropped ? r->start_us + RC_REFUSE_LOG_WINDOW_US : UINT64_MAX;
}

void rc_allow_refused(struct rc_ratelimit *r, uint64_t now_us, const char *peer, FILE *f)
{
	if (rc_ratelimit_take(r, now_us, f))
		fprintf(f, "server: client %s: not allowed (no --allow prefix matches); refused\n",
			peer);
}
