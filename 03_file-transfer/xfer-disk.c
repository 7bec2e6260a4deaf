// SPDX-License-Identifier: MIT
/*
 * xfer-disk.c - 03's disk thread: the file I/O and the checksum of each
 * chunk, beside the verbs calls of the main thread. See xfer-disk.h.
 */
#define _GNU_SOURCE
#include "xfer-disk.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
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
		pthread_mutex_unlock(&d->lock);
		if (stop)
			break;
		why[0] = '\0';
		ret = d->fn(d->arg, seq, why, sizeof(why));
		pthread_mutex_lock(&d->lock);
		if (ret) {
			d->err = ret;
			snprintf(d->why, sizeof(d->why), "%s", why);
		} else {
			d->done = seq + 1;
		}
		pthread_mutex_unlock(&d->lock);
		disk_wake(d);
		if (ret)
			break;
	}
	return NULL;
}

int xfer_disk_start(struct xfer_disk *d, struct rc_conn *c, uint64_t n, uint64_t allowed,
		    xfer_disk_fn fn, void *arg, char *err, size_t errlen)
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
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->cond, NULL);
	ret = pthread_create(&d->thread, NULL, disk_main, d);
	if (ret) {
		snprintf(err, errlen, "cannot start the disk thread: %s", strerror(ret));
		pthread_cond_destroy(&d->cond);
		pthread_mutex_destroy(&d->lock);
		close(d->efd);
		return -ret;
	}
	d->running = true;
	c->wake_fd = d->efd;
	return 0;
}

void xfer_disk_allow(struct xfer_disk *d, uint64_t allowed)
{
	pthread_mutex_lock(&d->lock);
	if (allowed > d->allowed) {
		d->allowed = allowed;
		pthread_cond_signal(&d->cond);
	}
	pthread_mutex_unlock(&d->lock);
}

int xfer_disk_done(struct xfer_disk *d, uint64_t *done, char *why, size_t whylen)
{
	int ret;

	pthread_mutex_lock(&d->lock);
	*done = d->done;
	ret = d->err;
	if (ret)
		snprintf(why, whylen, "%s", d->why);
	pthread_mutex_unlock(&d->lock);
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
	d->running = false;
	d->c->wake_fd = -1;
	pthread_cond_destroy(&d->cond);
	pthread_mutex_destroy(&d->lock);
	close(d->efd);
}

int xfer_io_read(void *arg, uint64_t seq, char *err, size_t errlen)
{
	struct xfer_io *io = arg;
	uint32_t len = xfer_chunk_len(io->size, io->chunk, seq);
	unsigned slot = (unsigned)(seq % io->depth);
	uint8_t *data = io->ring + (size_t)slot * io->chunk;
	char why[RC_ERR_LEN];
	int ret;

	ret = xfer_read_full(io->fd, data, len, seq * io->chunk, why, sizeof(why));
	if (ret) {
		snprintf(err, errlen, "%s cannot read %s: %s", io->who, io->name, why);
		return ret;
	}
	xfer_hash_update(io->hash, data, len);
	rc_trace(io->log, "chunk %" PRIu64 ": read %u bytes at offset %" PRIu64 " into slot %u",
		 seq, len, seq * io->chunk, slot);
	return 0;
}

int xfer_io_write(void *arg, uint64_t seq, char *err, size_t errlen)
{
	struct xfer_io *io = arg;
	uint32_t len = xfer_chunk_len(io->size, io->chunk, seq);
	unsigned slot = (unsigned)(seq % io->depth);
	const uint8_t *data = io->ring + (size_t)slot * io->chunk;
	char why[RC_ERR_LEN];
	int ret;

	ret = xfer_sink_write(io->sink, data, len, seq * io->chunk, why, sizeof(why));
	if (ret) {
		snprintf(err, errlen, "%s: %s; removed the partial file", io->who, why);
		return ret;
	}
	xfer_hash_update(io->hash, data, len);
	rc_trace(io->log, "chunk %" PRIu64 ": wrote %u bytes at offset %" PRIu64 " from slot %u",
		 seq, len, seq * io->chunk, slot);
	return 0;
}
