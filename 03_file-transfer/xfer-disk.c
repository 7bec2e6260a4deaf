// SPDX-License-Identifier: MIT
/*
 * xfer-disk.c - 03's disk thread: the file I/O of each chunk, handed to
 * the hashing threads (xfer-hash.c), beside the verbs calls of the main
 * thread. See xfer-disk.h.
 */
#define _GNU_SOURCE
#include "xfer-disk.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* Disk thread                                                         */
/* ------------------------------------------------------------------ */

static void disk_wake(struct xfer_disk *d)
{
	uint64_t one = 1;

	/* Cannot fail short of a bug (the counter would need 2^64 - 1
	 * wake-ups unread); a lost one would only delay the main thread to
	 * its next completion or timeout. */
	if (write(d->efd, &one, sizeof(one)) < 0)
		return;
}

static void *disk_main(void *arg)
{
	struct xfer_disk *d = arg;
	char why[RC_ERR_LEN];
	uint64_t seq;
	bool stop;
	int ret;

	for (seq = 0; seq < d->n; seq++) {
		/* No timeout needed: the main thread either allows more or
		 * stops us, on every path (xfer_disk_stop). */
		pthread_mutex_lock(&d->lock);
		while (seq >= d->allowed && !d->stop)
			pthread_cond_wait(&d->cond, &d->lock);
		stop = d->stop;
		d->busy_us = stop ? 0 : rc_now_us();
		d->busy_seq = seq;
		pthread_mutex_unlock(&d->lock);
		if (stop)
			break;
		why[0] = '\0';
		ret = d->fn(d->arg, seq, why, sizeof(why));
		pthread_mutex_lock(&d->lock);
		d->busy_us = 0;
		if (ret) {
			d->err = ret;
			snprintf(d->why, sizeof(d->why), "%s", why);
		} else {
			d->done = seq + 1;
		}
		pthread_mutex_unlock(&d->lock);
		/* Its bytes are in place: a hashing thread may take it. */
		if (!ret)
			xfer_hpool_ready(&d->pool, seq + 1);
		/* With hashing threads a chunk counts once it is hashed, and
		 * they wake the main thread then: waking it now too would only
		 * cost it a switch (a failure still wakes it). */
		if (ret || !d->pool.started)
			disk_wake(d);
		if (ret)
			break;
	}
	/* Read by the main thread only once it joined us. */
	xfer_cpu_add(&d->cpu, RUSAGE_THREAD);
	return NULL;
}

/* rc_conn's local_stall: when the main thread's wait for the peer timed
 * out, is the disk thread inside one chunk? Then the local disk stalled:
 * every wait restarts when a chunk is done. */
static bool disk_stalled(void *arg, char *buf, size_t len)
{
	struct xfer_disk *d = arg;
	/* 03's disk functions, xfer_io_read and xfer_io_write, take an xfer_io. */
	const char *name = d->fn == xfer_io_read || d->fn == xfer_io_write
				   ? ((const struct xfer_io *)d->arg)->name
				   : "the file";
	uint64_t since, seq;

	pthread_mutex_lock(&d->lock);
	since = d->busy_us;
	seq = d->busy_seq;
	pthread_mutex_unlock(&d->lock);
	if (!since)
		return false;
	snprintf(buf, len,
		 "the local disk stalled: %s chunk %" PRIu64 " of %s has taken %.1f s so far; "
		 "hint: a slow, hung or frozen disk or file system on this host (a network file "
		 "system, a failing device), not the peer; raise --timeout if it is only slow",
		 d->fn == xfer_io_read ? "reading" : "writing", seq, name,
		 (double)(rc_now_us() - since) / 1e6);
	return true;
}

static int disk_start(struct xfer_disk *d, struct rc_conn *c, uint64_t n, uint64_t allowed,
		      xfer_disk_fn fn, void *arg, const struct xfer_hash_cfg *h, char *err,
		      size_t errlen)
{
	int ret;

	*d = (struct xfer_disk){ .c = c, .fn = fn, .arg = arg, .n = n, .allowed = allowed };
	/* Non-blocking: rc_next_wc reads it only to reset it. */
	d->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (d->efd < 0) {
		ret = -errno;
		snprintf(err, errlen, "eventfd: %s", strerror(errno));
		return ret;
	}
	if (h) {
		ret = xfer_hpool_start(&d->pool, h->threads, h->size, h->chunk, h->depth, h->fn,
				       arg, d->efd, err, errlen);
		if (ret) {
			close(d->efd);
			return ret;
		}
	}
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->cond, NULL);
	ret = pthread_create(&d->thread, NULL, disk_main, d);
	if (ret) {
		snprintf(err, errlen, "cannot start the disk thread: %s", strerror(ret));
		xfer_hpool_stop(&d->pool);
		pthread_cond_destroy(&d->cond);
		pthread_mutex_destroy(&d->lock);
		close(d->efd);
		return -ret;
	}
	d->running = true;
	c->wake_fd = d->efd;
	c->local_stall = disk_stalled;
	c->local_stall_arg = d;
	return 0;
}

int xfer_disk_start(struct xfer_disk *d, struct rc_conn *c, uint64_t n, uint64_t allowed,
		    xfer_disk_fn fn, void *arg, char *err, size_t errlen)
{
	return disk_start(d, c, n, allowed, fn, arg, NULL, err, errlen);
}

int xfer_disk_start_hashed(struct xfer_disk *d, struct rc_conn *c, uint64_t allowed,
			   xfer_disk_fn fn, void *arg, const struct xfer_hash_cfg *h, char *err,
			   size_t errlen)
{
	return disk_start(d, c, xfer_nchunks(h->size, h->chunk), allowed, fn, arg, h, err, errlen);
}

void xfer_disk_allow(struct xfer_disk *d, uint64_t allowed)
{
	/* Stopped (every chunk handled, the file handed back): nothing to
	 * allow, and the mutex is gone. */
	if (!d->running)
		return;
	pthread_mutex_lock(&d->lock);
	if (allowed > d->allowed) {
		d->allowed = allowed;
		pthread_cond_signal(&d->cond);
	}
	pthread_mutex_unlock(&d->lock);
}

static int copied_done(struct xfer_disk *d, uint64_t *done, char *why, size_t whylen)
{
	return xfer_worker_outcome(&d->lock, d->running, &d->done, &d->err, d->why, done, why,
				   whylen);
}

int xfer_disk_done(struct xfer_disk *d, uint64_t *done, char *why, size_t whylen)
{
	uint64_t hashed;
	int ret;

	ret = copied_done(d, done, why, whylen);
	if (ret || !d->pool.started)
		return ret;
	/* With a pool: handled = copied and hashed (hashed <= copied). */
	ret = xfer_hpool_done(&d->pool, &hashed, why, whylen);
	if (hashed < *done)
		*done = hashed;
	return ret;
}

void xfer_disk_stop(struct xfer_disk *d)
{
	if (!d->running)
		return;
	pthread_mutex_lock(&d->lock);
	d->stop = true;
	pthread_cond_signal(&d->cond);
	pthread_mutex_unlock(&d->lock);
	pthread_join(d->thread, NULL);
	xfer_hpool_stop(&d->pool);
	d->running = false;
	d->c->wake_fd = -1;
	d->c->local_stall = NULL;
	pthread_cond_destroy(&d->cond);
	pthread_mutex_destroy(&d->lock);
	close(d->efd);
}

void xfer_disk_cpu(const struct xfer_disk *d, struct xfer_cpu *c)
{
	/* Joined (or never started): no thread writes these any more. */
	if (d->running)
		return;
	c->user_us += d->cpu.user_us + d->pool.cpu.user_us;
	c->sys_us += d->cpu.sys_us + d->pool.cpu.sys_us;
}

/* Chunk seq's slot of the ring; NULL on the zero-copy path, which has no
 * ring (the NIC reads the file's registered windows). */
static uint8_t *slot_of(const struct xfer_io *io, uint64_t seq)
{
	return io->ring ? io->ring + (size_t)(seq % io->depth) * io->chunk : NULL;
}

int xfer_io_read(void *arg, uint64_t seq, char *err, size_t errlen)
{
	struct xfer_io *io = arg;
	uint32_t len = xfer_chunk_len(io->size, io->chunk, seq);
	unsigned slot = (unsigned)(seq % io->depth);
	uint8_t *data = slot_of(io, seq);
	char why[RC_ERR_LEN];
	int ret;

	/* Copy: pread into the slot; zero-copy: the mapping (xfer-src.c). */
	ret = xfer_src_read(io->src, seq, data, why, sizeof(why));
	if (ret) {
		snprintf(err, errlen, "%s cannot read %s: %s", io->who, io->name, why);
		return ret;
	}
	if (!io->src->zerocopy)
		io->copied += len;
	if (io->src->zerocopy)
		rc_trace(io->log,
			 "chunk %" PRIu64 ": %u bytes at offset %" PRIu64
			 " are in the registered window",
			 seq, len, seq * io->chunk);
	else
		rc_trace(io->log,
			 "chunk %" PRIu64 ": read %u bytes at offset %" PRIu64 " into slot %u", seq,
			 len, seq * io->chunk, slot);
	return 0;
}

int xfer_io_write(void *arg, uint64_t seq, char *err, size_t errlen)
{
	struct xfer_io *io = arg;
	uint32_t len = xfer_chunk_len(io->size, io->chunk, seq);
	unsigned slot = (unsigned)(seq % io->depth);
	const uint8_t *data = io->ring + (size_t)slot * io->chunk;
	char why[RC_ERR_LEN];
	uint64_t direct;
	bool was_direct;
	int ret;

	if (io->sink->inplace) {
		/* The NIC wrote the chunk into the file's page cache. */
		ret = xfer_sink_place(io->sink, seq, why, sizeof(why));
		if (ret) {
			snprintf(err, errlen, "%s: %s; removed the partial file", io->who, why);
			return ret;
		}
		rc_trace(io->log, "chunk %" PRIu64 ": %u bytes at offset %" PRIu64 " are in place",
			 seq, len, seq * io->chunk);
		return 0;
	}
	direct = io->sink->direct_bytes;
	was_direct = io->sink->direct;
	ret = xfer_sink_write(io->sink, data, len, seq * io->chunk, why, sizeof(why));
	if (ret) {
		snprintf(err, errlen, "%s: %s; removed the partial file", io->who, why);
		return ret;
	}
	if (was_direct && !io->sink->direct && io->sink->direct_why[0])
		rc_trace(io->log, "chunk %" PRIu64 ": O_DIRECT given up: %s", seq,
			 io->sink->direct_why);
	/* O_DIRECT: the device takes the bytes from the ring, no CPU copy. */
	direct = io->sink->direct_bytes - direct;
	io->copied += len - direct;
	rc_trace(io->log, "chunk %" PRIu64 ": wrote %u bytes at offset %" PRIu64 " from slot %u%s",
		 seq, len, seq * io->chunk, slot, direct ? " (O_DIRECT)" : "");
	return 0;
}

int xfer_io_hash_src(void *arg, uint64_t seq, uint8_t out[XFER_HASH_LEN], char *err, size_t errlen)
{
	struct xfer_io *io = arg;
	uint8_t *data = slot_of(io, seq);
	char why[RC_ERR_LEN];
	int ret;

	/* What the NIC sends: the slot (copy) or the mapping (zero-copy). */
	ret = xfer_src_digest(io->src, seq, data, out, why, sizeof(why));
	if (ret)
		snprintf(err, errlen, "%s cannot read %s: %s", io->who, io->name, why);
	return ret;
}

int xfer_io_hash_sink(void *arg, uint64_t seq, uint8_t out[XFER_HASH_LEN], char *err, size_t errlen)
{
	struct xfer_io *io = arg;
	uint32_t len = xfer_chunk_len(io->size, io->chunk, seq);

	/* The slot (or the file's window, in place) still holds what was
	 * written: its credit waits for us. A mapping faults (SIGBUS) if
	 * someone truncates the temporary file under us. */
	if (!io->sink->inplace) {
		xfer_chunk_digest(io->ring + (size_t)(seq % io->depth) * io->chunk, len, out);
		return 0;
	}
	if (xfer_digest_mapped(xfer_sink_mapped(io->sink, seq), len, out)) {
		snprintf(err, errlen, "%s: the file being received shrank under its mapping",
			 io->who);
		return -EIO;
	}
	return 0;
}
