// SPDX-License-Identifier: MIT
/*
 * xfer-hash.c - 03's integrity: per-chunk XXH3-128 on a pool of threads,
 * folded in order into the file's top digest. See xfer-hash.h.
 */
#define _GNU_SOURCE
#include "xfer-hash.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <xxhash.h>

/* ------------------------------------------------------------------ */
/* Checksum                                                            */
/* ------------------------------------------------------------------ */

/*
 * XXH3-128 streams at several GB/s per core (far more with the library's
 * SIMD paths), so hashing each chunk while it is in the cache, once on
 * each side, costs much less than the copy between the page cache and the
 * ring. It detects corruption, not tampering: it is not a cryptographic
 * hash (use SHA-256 or an AEAD when the peer may be hostile).
 */
int xfer_hash_init(struct xfer_hash *h)
{
	h->state = XXH3_createState();
	if (!h->state)
		return -ENOMEM;
	if (XXH3_128bits_reset(h->state) != XXH_OK) {
		xfer_hash_free(h);
		return -EINVAL;
	}
	return 0;
}

void xfer_hash_update(struct xfer_hash *h, const void *p, size_t len)
{
	if (len)
		XXH3_128bits_update(h->state, p, len);
}

void xfer_hash_final(struct xfer_hash *h, uint8_t out[XFER_HASH_LEN])
{
	XXH128_canonical_t c;

	XXH128_canonicalFromHash(&c, XXH3_128bits_digest(h->state));
	memcpy(out, c.digest, XFER_HASH_LEN);
}

void xfer_hash_free(struct xfer_hash *h)
{
	if (h->state)
		XXH3_freeState(h->state);
	h->state = NULL;
}

void xfer_hash_hex(const uint8_t d[XFER_HASH_LEN], char out[2 * XFER_HASH_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	int i;

	for (i = 0; i < XFER_HASH_LEN; i++) {
		out[2 * i] = hex[d[i] >> 4];
		out[2 * i + 1] = hex[d[i] & 15];
	}
	out[2 * XFER_HASH_LEN] = '\0';
}

/* ------------------------------------------------------------------ */
/* CPU time                                                            */
/* ------------------------------------------------------------------ */

void xfer_cpu_add(struct xfer_cpu *c, int who)
{
	struct rusage ru;

	/* Only EINVAL is possible, for a `who` the kernel does not know. */
	if (getrusage(who, &ru))
		return;
	c->user_us += (uint64_t)ru.ru_utime.tv_sec * 1000000u + (uint64_t)ru.ru_utime.tv_usec;
	c->sys_us += (uint64_t)ru.ru_stime.tv_sec * 1000000u + (uint64_t)ru.ru_stime.tv_usec;
}

/* ------------------------------------------------------------------ */
/* Chunk digests and the top digest                                    */
/* ------------------------------------------------------------------ */

void xfer_chunk_digest(const void *p, size_t len, uint8_t out[XFER_HASH_LEN])
{
	XXH128_canonical_t c;

	XXH128_canonicalFromHash(&c, XXH3_128bits(p, len));
	memcpy(out, c.digest, XFER_HASH_LEN);
}

void xfer_chunk_differs(char *out, size_t outlen, uint64_t seq, uint64_t size, uint32_t chunk,
			const uint8_t sender[XFER_HASH_LEN], const uint8_t receiver[XFER_HASH_LEN])
{
	char a[2 * XFER_HASH_LEN + 1], b[2 * XFER_HASH_LEN + 1];
	uint64_t from = seq * chunk;

	xfer_hash_hex(sender, a);
	xfer_hash_hex(receiver, b);
	snprintf(out, outlen,
		 "chunk %" PRIu64 " (bytes %" PRIu64 "..%" PRIu64 ") differs: the sender hashed "
		 "%s %s, the receiver %s",
		 seq, from, from + xfer_chunk_len(size, chunk, seq) - 1, XFER_HASH_NAME, a, b);
}

int xfer_top_start(struct xfer_hash *top)
{
	return xfer_hash_init(top);
}

void xfer_top_add(struct xfer_hash *top, const uint8_t d[XFER_HASH_LEN])
{
	xfer_hash_update(top, d, XFER_HASH_LEN);
}

void xfer_top_end(struct xfer_hash *top, uint8_t out[XFER_HASH_LEN])
{
	xfer_hash_final(top, out);
	xfer_hash_free(top);
}

/* ------------------------------------------------------------------ */
/* The pool                                                            */
/* ------------------------------------------------------------------ */

static void pool_wake(struct xfer_hpool *p)
{
	uint64_t one = 1;

	/* As the disk thread's: a lost wake-up only delays the main thread
	 * to its next completion or timeout. */
	if (p->efd >= 0 && write(p->efd, &one, sizeof(one)) < 0)
		return;
}

/* Under lock: fold every hashed chunk that is next in order. */
static void fold(struct xfer_hpool *p)
{
	struct xfer_hslot *s;

	while (p->done < p->n && !p->err) {
		s = &p->slot[p->done % p->nslots];
		if (!s->hashed || s->seq != p->done)
			break;
		if (s->expected && memcmp(s->expect, s->digest, XFER_HASH_LEN)) {
			xfer_chunk_differs(p->why, sizeof(p->why), p->done, p->size, p->chunk,
					   s->expect, s->digest);
			p->err = -EIO;
			break;
		}
		xfer_top_add(&p->top, s->digest);
		s->hashed = false;
		s->expected = false;
		s->kept = true;
		p->done++;
	}
	if (p->done == p->n && !p->err && !p->have_final) {
		xfer_top_end(&p->top, p->final);
		p->have_final = true;
	}
}

static void *pool_main(void *arg)
{
	struct xfer_hpool *p = arg;
	uint8_t d[XFER_HASH_LEN];
	char why[RC_ERR_LEN];
	struct xfer_hslot *s;
	uint64_t seq, before;
	int ret;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		/* No timeout needed: the caller either makes more ready or
		 * stops us, on every path (xfer_hpool_stop). */
		while (!p->stop && !p->err && !(p->next < p->ready && p->next < p->done + p->depth))
			pthread_cond_wait(&p->cond, &p->lock);
		if (p->stop || p->err)
			break;
		seq = p->next++;
		pthread_mutex_unlock(&p->lock);
		why[0] = '\0';
		ret = p->fn(p->arg, seq, d, why, sizeof(why));
		pthread_mutex_lock(&p->lock);
		before = p->done;
		if (ret) {
			if (!p->err) {
				p->err = ret;
				snprintf(p->why, sizeof(p->why), "%s", why);
			}
		} else {
			s = &p->slot[seq % p->nslots];
			/* Within depth of done: this slot's previous chunk,
			 * seq - nslots, was folded long ago. */
			memcpy(s->digest, d, XFER_HASH_LEN);
			s->kept = false;
			s->hashed = true;
			if (!s->expected || s->seq != seq)
				s->expected = false;
			s->seq = seq;
			fold(p);
		}
		/* Others may take a chunk now (done moved) or must stop. */
		pthread_cond_broadcast(&p->cond);
		/* The main thread has news only when done moved or we failed
		 * (a chunk hashed ahead of an earlier one waits for it). */
		if (p->done != before || p->err)
			pool_wake(p);
	}
	/* This thread's CPU time, its whole life: the transfer's hashing. */
	xfer_cpu_add(&p->cpu, RUSAGE_THREAD);
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

int xfer_hpool_start(struct xfer_hpool *p, unsigned nthreads, uint64_t size, uint32_t chunk,
		     uint16_t depth, xfer_hash_fn fn, void *arg, int efd, char *err, size_t errlen)
{
	uint32_t i;
	int ret;

	*p = (struct xfer_hpool){ .efd = efd,
				  .fn = fn,
				  .arg = arg,
				  .n = xfer_nchunks(size, chunk),
				  .size = size,
				  .chunk = chunk,
				  .depth = depth,
				  .nslots = 2u * depth };
	if (nthreads < 1 || nthreads > XFER_MAX_HASH_THREADS || depth < 1 ||
	    depth > XFER_MAX_DEPTH) {
		snprintf(err, errlen, "hash threads %u or depth %u out of range (1..%d)", nthreads,
			 depth, XFER_MAX_HASH_THREADS);
		return -EINVAL;
	}
	if (xfer_top_start(&p->top)) {
		snprintf(err, errlen, "%s", "out of memory for the hash pool");
		return -ENOMEM;
	}
	for (i = 0; i < p->nslots; i++)
		p->slot[i].seq = UINT64_MAX;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	p->running = true;
	p->started = true;
	/* No chunks: the digest of nothing, at once. */
	if (!p->n)
		fold(p);
	for (i = 0; i < nthreads; i++) {
		ret = pthread_create(&p->thread[i], NULL, pool_main, p);
		if (ret) {
			snprintf(err, errlen, "cannot start hashing thread %u of %u: %s", i + 1,
				 nthreads, strerror(ret));
			xfer_hpool_stop(p);
			return -ret;
		}
		p->nthreads = i + 1;
	}
	return 0;
}

void xfer_hpool_ready(struct xfer_hpool *p, uint64_t ready)
{
	if (!p->running)
		return;
	pthread_mutex_lock(&p->lock);
	if (ready > p->ready) {
		p->ready = ready > p->n ? p->n : ready;
		pthread_cond_broadcast(&p->cond);
	}
	pthread_mutex_unlock(&p->lock);
}

void xfer_hpool_expect(struct xfer_hpool *p, uint64_t seq, const uint8_t d[XFER_HASH_LEN])
{
	struct xfer_hslot *s;

	if (!p->running)
		return;
	pthread_mutex_lock(&p->lock);
	s = &p->slot[seq % p->nslots];
	/* Not yet ready, so no thread has it: the slot is seq's now. */
	if (seq >= p->ready && seq < p->done + p->nslots) {
		s->seq = seq;
		s->hashed = false;
		s->kept = false;
		s->expected = true;
		memcpy(s->expect, d, XFER_HASH_LEN);
	}
	pthread_mutex_unlock(&p->lock);
}

int xfer_worker_outcome(pthread_mutex_t *lock, bool running, const uint64_t *done_in,
			const int *err_in, const char *why_in, uint64_t *done, char *why,
			size_t whylen)
{
	int ret;

	/* Joined (or never started): its last word stands, no lock needed. */
	if (running)
		pthread_mutex_lock(lock);
	*done = *done_in;
	ret = *err_in;
	if (ret)
		snprintf(why, whylen, "%s", why_in);
	if (running)
		pthread_mutex_unlock(lock);
	return ret;
}

int xfer_hpool_done(struct xfer_hpool *p, uint64_t *done, char *why, size_t whylen)
{
	return xfer_worker_outcome(&p->lock, p->running, &p->done, &p->err, p->why, done, why,
				   whylen);
}

int xfer_hpool_digest(struct xfer_hpool *p, uint64_t seq, uint8_t out[XFER_HASH_LEN])
{
	struct xfer_hslot *s;
	int ret = -ENOENT;

	if (p->running)
		pthread_mutex_lock(&p->lock);
	s = &p->slot[seq % p->nslots];
	if (s->kept && s->seq == seq && seq < p->done) {
		memcpy(out, s->digest, XFER_HASH_LEN);
		ret = 0;
	}
	if (p->running)
		pthread_mutex_unlock(&p->lock);
	return ret;
}

int xfer_hpool_check(struct xfer_hpool *p, uint64_t seq, const uint8_t receiver[XFER_HASH_LEN],
		     char *why, size_t whylen)
{
	uint8_t ours[XFER_HASH_LEN];
	size_t n;

	if (xfer_hpool_digest(p, seq, ours)) {
		snprintf(why, whylen, "internal error: no digest of chunk %" PRIu64, seq);
		return -ENOENT;
	}
	if (!memcmp(ours, receiver, XFER_HASH_LEN))
		return 0;
	xfer_chunk_differs(why, whylen, seq, p->size, p->chunk, ours, receiver);
	n = strlen(why);
	snprintf(why + n, whylen - n, "%s", "; nothing was stored");
	return -EIO;
}

int xfer_hpool_top(struct xfer_hpool *p, uint8_t out[XFER_HASH_LEN])
{
	uint64_t done;
	char why[RC_ERR_LEN];

	if (xfer_hpool_done(p, &done, why, sizeof(why)) || done != p->n || !p->have_final)
		return -EAGAIN;
	memcpy(out, p->final, XFER_HASH_LEN);
	return 0;
}

void xfer_hpool_stop(struct xfer_hpool *p)
{
	unsigned i;

	if (!p->running)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	for (i = 0; i < p->nthreads; i++)
		pthread_join(p->thread[i], NULL);
	p->nthreads = 0;
	p->running = false;
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
	xfer_hash_free(&p->top);
}
