// SPDX-License-Identifier: MIT
/*
 * cm-event.c - 01's CM events in words: the copy a wait keeps and the
 * errors it reports, with the same texts as common/'s rc_wait_cm_event.
 * client.c and server.c make the librdmacm calls themselves.
 */
#define _GNU_SOURCE
#include "cm-event.h"

#include <errno.h>
#include <string.h>

/* No DISCONNECTED after our rdma_disconnect, or one with status -ETIMEDOUT
 * (the kernel's for a DREQ that got no DREP): the peer's CM never answered. */
static const char no_goodbye[] =
	"the peer did not answer our DREQ: it is gone, or the DREQs (the CM resends one after "
	"a second or more) or their answers were lost on a lossy or reordering link";

void basic_cm_keep(struct rc_cm_info *out, const struct rdma_cm_event *ev)
{
	const struct rdma_conn_param *p = &ev->param.conn;

	memset(out, 0, sizeof(*out));
	out->event = ev->event;
	out->status = ev->status;
	out->id = ev->id; /* CONNECT_REQUEST: the new id */
	/* private_data_len is a uint8_t: out->priv (256 bytes) holds any. */
	_Static_assert(sizeof(out->priv) > UINT8_MAX, "rc_cm_info.priv too small");
	if (p->private_data && p->private_data_len) {
		out->priv_len = p->private_data_len;
		memcpy(out->priv, p->private_data, out->priv_len);
	}
	out->initiator_depth = p->initiator_depth;
	out->responder_resources = p->responder_resources;
}

int basic_cm_unexpected(struct rc_log *log, const struct rc_cm_info *got,
			enum rdma_cm_event_type expected, const char *step)
{
	struct rc_msg m;
	char why[128];

	/* 28: the IB CM's "consumer defined" reject, rdma_reject's; ours carry a reason. */
	if (got->event == RDMA_CM_EVENT_REJECTED && got->status == 28 &&
	    rc_priv_unpack(got->priv, got->priv_len, &m, why, sizeof(why)) == 0 &&
	    m.type == RC_T_REJECT)
		return rc_fail(log, ECONNREFUSED, "%s: the server rejected the connection: %.*s",
			       step, (int)(m.length > 200 ? 200 : m.length), (const char *)m.body);
	if (got->event == expected) /* the right event, but it says something failed */
		return rc_fail(log, EPROTO, "%s: %s with status %d; hint: %s", step,
			       rdma_event_str(got->event), got->status,
			       got->event == RDMA_CM_EVENT_DISCONNECTED
				       ? no_goodbye
				       : rc_cm_event_hint(got->event, got->status));
	return rc_fail(log,
		       got->event == RDMA_CM_EVENT_REJECTED	  ? ECONNREFUSED
		       : got->event == RDMA_CM_EVENT_DISCONNECTED ? ECONNRESET
								  : EHOSTUNREACH,
		       "%s: got %s (status %d) instead of %s; hint: %s", step,
		       rdma_event_str(got->event), got->status, rdma_event_str(expected),
		       rc_cm_event_hint(got->event, got->status));
}

int basic_cm_wait_failed(struct rc_log *log, int ret, enum rdma_cm_event_type expected,
			 int timeout_ms, const char *step)
{
	if (ret == 1)
		return rc_fail(log, ECANCELED, "%s: cancelled (shutting down)", step);
	if (ret != -ETIMEDOUT)
		return rc_fail(log, -ret, "%s: poll: %s", step, strerror(-ret));
	return rc_fail(log, ETIMEDOUT, "%s: no %s within %d ms; hint: %s", step,
		       rdma_event_str(expected), timeout_ms,
		       expected == RDMA_CM_EVENT_DISCONNECTED
			       ? no_goodbye
			       : "is the peer up and reachable over RDMA?");
}

int basic_peer_left(struct rc_log *log)
{
	return rc_fail(log, ECONNRESET, "the peer disconnected; hint: %s",
		       rc_cm_event_hint(RDMA_CM_EVENT_DISCONNECTED, 0));
}
