/* SPDX-License-Identifier: MIT */
/*
 * server.h - what 03's server files share: the server and one client's
 * transfer (session), and the steps put (server-put.c) and get
 * (server-get.c) both take, defined in server.c.
 */
#ifndef XFER_SERVER_H
#define XFER_SERVER_H

#include "auth.h"
#include "xfer-ctl.h"
#include "xfer-disk.h"
#include "xfer-msg.h"
#include "xfer-opts.h"
#include "xfer-sink.h"
#include "xfer-src.h"
#include "xfer-timeline.h"

struct server {
	struct xfer_server_opts opt;
	int dirfd;		   /* the root: every name is opened relative to it */
	struct xfer_secret secret; /* --secret: every REQUEST needs a proof */
};

/* One client's transfer. */
struct session {
	struct rc_conn *c;
	const struct server *srv;
	struct xfer_hello hello;
	uint8_t rd_depth;	       /* get: READs we accepted to serve at once */
	struct rc_buf *ring;	       /* hello.depth slots of hello.chunk bytes */
	struct xfer_ctl ctl;	       /* control messages */
	struct xfer_disk disk;	       /* pwrite/pread, and XXH3 of each chunk */
	struct xfer_io io;	       /* what the disk thread works on */
	struct xfer_sink sink;	       /* put: the temporary file */
	int fd;			       /* get: the file served */
	struct xfer_src src;	       /* get: its chunks: file windows or the ring */
	struct rc_listener data_l;     /* get: where the data connection comes in */
	struct rc_conn data;	       /* get: the READs' own QP (the JOIN's connection) */
	uint8_t token[XFER_TOKEN_LEN]; /* get: what the JOIN must carry */
	uint64_t size, nchunks;	       /* of the file */
	char qname[400];	       /* the name, quoted for messages */
	uint8_t digest[XFER_HASH_LEN]; /* the top digest (xfer-hash.h) */
	uint8_t nonce[XFER_NONCE_LEN]; /* of our CHALLENGE: the proof must cover it */
	struct xfer_timeline tl;       /* -v: where this thread's time went */
};

/* Send ERROR{code, text} (the client prints the text), wait until it is
 * delivered, and record it for our log. Returns -code. */
int refuse(struct session *s, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The transport failed or the client vanished after DONE bytes: nothing
 * to tell it; our log says what happened. */
int lost_client(struct session *s, int ret, uint64_t done);
/* How many chunks the disk thread has handled so far, or its failure. */
int disk_done(struct session *s, uint64_t *done);
/* Start the transfer's disk thread with fn (xfer_io_write or _read),
 * `allowed` chunks it may handle before more are allowed. */
int start_disk(struct session *s, uint64_t allowed, xfer_disk_fn fn);
/* -v: the CPU time this transfer's threads took. */
void trace_cpu(struct session *s);

/* put: receive the file into the temporary file and commit it. */
int receive_file(struct session *s);
/* get: send the file chunk by chunk. */
int open_data_listener(struct session *s);
int send_file(struct session *s);

#endif /* XFER_SERVER_H */
