/* SPDX-License-Identifier: MIT */
/*
 * client.h - what the parts of 03's rdma-client share: the client's state
 * and the steps one part calls in another. main (client.c) calls them in
 * the order of sequence.txt: the local side and the connection
 * (client-setup.c), the CHALLENGE, REQUEST and ACCEPT (client-request.c),
 * then the data of a put (client-put.c) or a get (client-get.c).
 */
#ifndef XFER_CLIENT_H
#define XFER_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "auth.h"
#include "xfer-ctl.h"
#include "xfer-disk.h"
#include "xfer-msg.h"
#include "xfer-name.h"
#include "xfer-opts.h"
#include "xfer-progress.h"
#include "xfer-sink.h"
#include "xfer-src.h"
#include "xfer-timeline.h"

struct client {
	struct xfer_client_opts opt;
	struct rc_conn conn;
	struct rc_conn data; /* get: the READs' own connection (XFER_T_JOIN) */
	struct xfer_ctl ctl;
	struct rc_buf *ring;	       /* depth slots of chunk bytes */
	struct xfer_disk disk;	       /* pread/pwrite, and XXH3 of each chunk */
	struct xfer_io io;	       /* what the disk thread works on */
	uint8_t digest[XFER_HASH_LEN]; /* the top digest (xfer-hash.h) */
	uint8_t initiator_depth;       /* get: READs we may have outstanding */
	int fd;			       /* put: the source file */
	struct xfer_src src;	       /* put: where each chunk's bytes come from */
	int dirfd;		       /* get: the destination directory */
	struct xfer_sink sink;	       /* get: the temporary file */
	char local_name[XFER_NAME_MAX + 1];
	uint64_t size, nchunks;
	uint16_t rd_depth;	       /* get: the server's answer */
	uint16_t data_port;	       /* get: where the ACCEPT says the READs connect */
	uint8_t token[XFER_TOKEN_LEN]; /* get: the ACCEPT's, for the JOIN */
	bool accepted;		       /* the server's ACCEPT arrived */
	bool peer_zerocopy;	       /* get: the server's CHUNKs point into its page cache */
	bool peer_inplace;	       /* put: our WRITEs land in the server's page cache */
	/* Where the NIC takes (get: the CHUNK) or puts (put: the ACCEPT, then
	 * the slot's last CREDIT) the chunk in this slot, on the server. */
	struct rc_remote_buf chunk_at[XFER_MAX_DEPTH];
	char qname[400];  /* the remote name, quoted */
	char qlocal[400]; /* the local name, quoted */
	struct xfer_progress prog;
	uint64_t t0_ns, t1_ns;	 /* REQUEST sent, file committed */
	struct xfer_timeline tl; /* -v: where the main thread's time went */
	/* Ours, all threads (RUSAGE_SELF): before setup, and at t1_ns. */
	struct xfer_cpu cpu0, cpu1;
	bool cpu_counted;	       /* cpu0 was read */
	struct xfer_hello hello;       /* what we connected with: the proof covers it */
	uint8_t nonce[XFER_NONCE_LEN]; /* from the server's CHALLENGE */
	struct xfer_secret secret;     /* --secret */
};

/* ------------------------------------------------------------------ */
/* client-setup.c: the local side, then the connection                 */
/* ------------------------------------------------------------------ */

/* put: open the source and take its size and times; 0, or -1 with the
 * reason in err (exit 2, before any traffic). */
int open_source(struct client *cl, char *err, size_t errlen);
/* get: the destination directory and its temporary file; the same. */
int open_destination(struct client *cl, char *err, size_t errlen);
/* QP, ring and control buffers, every receive posted. Returns 0, or a
 * negative errno; *usage set when -c does not fit. */
int setup(struct client *cl, bool *usage);
/* rdma_connect with the HELLO; the server's REJECT says why it refused. */
int connect_server(struct client *cl);

/* ------------------------------------------------------------------ */
/* client-request.c: the server's answers, and giving up               */
/* ------------------------------------------------------------------ */

/* The server's ERROR, as our failure. */
int server_error(struct client *cl, const struct xfer_msg *m);
/* A message that has no place here: a protocol error. */
int unexpected(struct client *cl, const struct xfer_msg *m);
/* A failure on our side during a transfer: tell the server, then fail. */
int give_up(struct client *cl, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* CHALLENGE, REQUEST, then ACCEPT (or the server's reason for refusing). */
int request(struct client *cl);

/* ------------------------------------------------------------------ */
/* client-put.c: the disk thread, and the put's data                   */
/* ------------------------------------------------------------------ */

/* The disk thread for this transfer (put or get) and its hashing
 * threads; it may handle chunks below `allowed` at once. */
int start_disk(struct client *cl, uint64_t allowed, xfer_disk_fn fn);
/* How many chunks the disk thread has handled so far, or its failure. */
int disk_done(struct client *cl, uint64_t *done);
/* Every chunk WRITTEN and credited, DONE sent and COMMITTED checked. */
int put_file(struct client *cl);

/* ------------------------------------------------------------------ */
/* client-get.c: the get's data                                        */
/* ------------------------------------------------------------------ */

/* Every announced chunk READ, stored and credited; then the commit. */
int get_file(struct client *cl);

#endif /* XFER_CLIENT_H */
