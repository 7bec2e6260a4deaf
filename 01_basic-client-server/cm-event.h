/* SPDX-License-Identifier: MIT */
/*
 * cm-event.h - 01's CM events in words: what client.c's and server.c's own
 * CM-event waits keep of an event and the errors they report. The
 * librdmacm calls (rdma_get_cm_event, rdma_ack_cm_event) are not here:
 * each side makes them itself, in its wait_cm_event.
 */
#ifndef BASIC_CM_EVENT_H
#define BASIC_CM_EVENT_H

#include "rdma-common.h"

/* Copy what a wait needs of ev into *out (struct rc_cm_info: type, status,
 * id, private data, read depths): the ack frees ev and its private data. */
void basic_cm_keep(struct rc_cm_info *out, const struct rdma_cm_event *ev);

/*
 * The error for a kept event that is not `expected`, or is with a non-zero
 * status: "STEP: got EVENT (status N) instead of EXPECTED; hint: ...", or
 * for a REJECTED carrying our REJECT message, the server's reason. Returns
 * -ECONNREFUSED (REJECTED), -ECONNRESET (DISCONNECTED), -EPROTO (the
 * expected event with a status) or -EHOSTUNREACH, with log->err set.
 */
int basic_cm_unexpected(struct rc_log *log, const struct rc_cm_info *got,
			enum rdma_cm_event_type expected, const char *step);

/* The error for a wait that ended without an event: ret is
 * rc_wait_readable's (-ETIMEDOUT, 1: the cancel fd, another negative
 * errno). Returns -ETIMEDOUT, -ECANCELED or -errno, with log->err set. */
int basic_cm_wait_failed(struct rc_log *log, int ret, enum rdma_cm_event_type expected,
			 int timeout_ms, const char *step);

/* The peer's DISCONNECTED, as the end of a wait for a completion:
 * -ECONNRESET, "the peer disconnected; hint: ...". */
int basic_peer_left(struct rc_log *log);

#endif /* BASIC_CM_EVENT_H */
