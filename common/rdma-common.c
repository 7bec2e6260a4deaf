// SPDX-License-Identifier: MIT
/*
 * rdma-common.c - part of the set rdma-common.h names: the log, clocks,
 * names and hints every other file of the set reports with. 01 makes the
 * set's calls inline on purpose (rdma-common.h says why). See the set's
 * headers for the contract of each function.
 */
#define _GNU_SOURCE
#include "rdma-common.h"

#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* ---- Logging ---- */

void rc_log_init(struct rc_log *log, const char *name, bool verbose)
{
	snprintf(log->name, sizeof(log->name), "%s", name);
	log->verbose = verbose;
	log->err[0] = '\0';
}

void rc_trace(const struct rc_log *log, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (!log->verbose)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* One fprintf per line: lines from several threads do not mix. */
	fprintf(stderr, "%s: %s\n", log->name, line);
}

int rc_fail(struct rc_log *log, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(log->err, sizeof(log->err), fmt, ap);
	va_end(ap);
	return err > 0 ? -err : -EIO;
}

int rc_fail_call(struct rc_log *log, const char *call, int err, const char *hint)
{
	hint = hint ? hint : rc_call_hint(call, err);
	if (hint)
		return rc_fail(log, err, "%s: %s; hint: %s", call, strerror(err), hint);
	return rc_fail(log, err, "%s: %s; hint: see `man %.*s`", call, strerror(err),
		       (int)strcspn(call, "("), call);
}

uint64_t rc_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t rc_now_us(void)
{
	return rc_now_ns() / 1000u;
}

/* ---- Names and hints ---- */

const char *rc_wc_opcode_str(enum ibv_wc_opcode op)
{
	switch (op) {
	case IBV_WC_SEND: return "SEND";
	case IBV_WC_RDMA_WRITE: return "RDMA_WRITE";
	case IBV_WC_RDMA_READ: return "RDMA_READ";
	case IBV_WC_COMP_SWAP: return "COMP_SWAP";
	case IBV_WC_FETCH_ADD: return "FETCH_ADD";
	case IBV_WC_RECV: return "RECV";
	case IBV_WC_RECV_RDMA_WITH_IMM: return "RECV_RDMA_WITH_IMM";
	default: return "OTHER";
	}
}

const char *rc_wc_status_hint(enum ibv_wc_status st)
{
	switch (st) {
	case IBV_WC_LOC_LEN_ERR:
		return "a message was larger than the receive buffer posted for it";
	case IBV_WC_LOC_PROT_ERR: return "a local address/length/lkey is outside its memory region";
	case IBV_WC_REM_ACCESS_ERR:
		return "the remote address, length or rkey is outside the peer's memory region, or "
		       "the region lacks the access flag";
	case IBV_WC_REM_INV_REQ_ERR:
		return "the peer rejected the request as invalid (length, opcode, or a READ it has "
		       "no responder resources for)";
	case IBV_WC_RNR_RETRY_EXC_ERR:
		return "the peer had no receive posted (receiver not ready) and the RNR retries "
		       "ran out";
	case IBV_WC_RETRY_EXC_ERR:
		return "the peer did not acknowledge: it died, the link is down, or it loses or "
		       "reorders packets";
	case IBV_WC_WR_FLUSH_ERR:
		return "the QP is in the error state after an earlier failure or a disconnect; "
		       "normal during teardown";
	case IBV_WC_REM_OP_ERR:
		return "the peer could not carry out the operation (e.g. our message was larger "
		       "than the receive buffer it posted)";
	/* Soft-RoCE reports a message larger than the receive buffer as
	 * this, not as LOC_LEN_ERR, and a send while its link is down. */
	case IBV_WC_LOC_QP_OP_ERR:
		return "the QP could not carry out the work request: on a receive, the peer sent a "
		       "message larger than the receive buffer posted for it; on a send, the link "
		       "may be down";
	default: return "see ibv_poll_cq(3)";
	}
}

const char *rc_call_hint(const char *call, int err)
{
	if (!strcmp(call, "rdma_create_event_channel"))
		return "is the rdma_ucm module loaded (`modprobe rdma_ucm`)?";
	if (!strcmp(call, "ibv_reg_mr"))
		return err == ENOMEM || err == EPERM ? "registered memory is locked memory: raise "
						       "`ulimit -l` (or run as root)"
						     : "check the access flags";
	if (!strcmp(call, "ibv_post_send") || !strcmp(call, "ibv_post_recv"))
		return err == ENOMEM ? "more work requests posted than the queue holds"
		       : err == EINVAL
			       ? "a work request exceeds the QP's limits (SGEs, inline size)"
			       : "is the QP in the error state?";
	if (!strcmp(call, "rdma_resolve_addr") && (err == ENETUNREACH || err == EHOSTUNREACH))
		return "no route from here to that address (see `ip route get ADDR`); it must be "
		       "reachable through the RDMA device's netdev";
	if (!strcmp(call, "rdma_bind_addr") && err == EADDRINUSE)
		return "another program listens on that port; try -p 0";
	if (!strcmp(call, "rdma_bind_addr") || !strcmp(call, "rdma_resolve_addr"))
		return rc_cm_event_hint(RDMA_CM_EVENT_ADDR_ERROR, 0);
	if (!strcmp(call, "rdma_resolve_route"))
		return rc_cm_event_hint(RDMA_CM_EVENT_ROUTE_ERROR, 0);
	if (!strcmp(call, "ibv_create_cq") || !strcmp(call, "rdma_create_qp"))
		return "`ibv_devinfo -v` shows the device limits";
	if (!strcmp(call, "ibv_poll_cq")) /* mlx5: an entry for a QP it does not know */
		return "the device's driver could not handle a CQ entry; see `dmesg`";
	return NULL;
}

const char *rc_cm_event_hint(enum rdma_cm_event_type ev, int status)
{
	switch (ev) {
	case RDMA_CM_EVENT_ADDR_ERROR:
		/* -110: neighbour (ARP/ND) resolution timed out. */
		if (status == -ETIMEDOUT)
			return "nobody answered for that address on the RDMA netdev's network; is "
			       "the server up, and is its address right?";
		return "no RDMA device has that address; see `rdma link` and use the IP of the "
		       "RDMA netdev (on RoCE, 127.0.0.1 is not one)";
	case RDMA_CM_EVENT_ROUTE_ERROR:
		return "no route to that address through an RDMA device (on RoCE, 127.0.0.1 and "
		       "::1 are never RDMA addresses); check `ip route` and `rdma link`";
	case RDMA_CM_EVENT_UNREACHABLE:
		return "the server's host did not answer; is it up, and (Soft-RoCE) does its "
		       "firewall let UDP port 4791 in?";
	case RDMA_CM_EVENT_REJECTED:
		/* 8 = IB CM "invalid service ID": nobody listens on that port. */
		return status == 8 ? "is a server listening on that port?"
				   : "the server refused the connection";
	case RDMA_CM_EVENT_CONNECT_ERROR:
		return "the connection failed while being set up; try again, and check both hosts "
		       "with `rdma link`";
	case RDMA_CM_EVENT_DISCONNECTED:
		return "the peer closed the connection (or its process died)";
	case RDMA_CM_EVENT_DEVICE_REMOVAL: return "the RDMA device was removed";
	default: return "see rdma_get_cm_event(3)";
	}
}

int rc_addr_with_port(struct sockaddr_storage *out, const struct sockaddr *sa, uint16_t port)
{
	if (sa->sa_family == AF_INET6) {
		memcpy(out, sa, sizeof(struct sockaddr_in6));
		((struct sockaddr_in6 *)out)->sin6_port = htons(port);
	} else if (sa->sa_family == AF_INET) {
		memcpy(out, sa, sizeof(struct sockaddr_in));
		((struct sockaddr_in *)out)->sin_port = htons(port);
	} else {
		return -EAFNOSUPPORT;
	}
	return 0;
}

void rc_format_addr(const struct sockaddr *sa, char *out, size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "?", port[8] = "0";

	getnameinfo(sa,
		    sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
					      : sizeof(struct sockaddr_in),
		    ip, sizeof(ip), port, sizeof(port), NI_NUMERICHOST | NI_NUMERICSERV);
	snprintf(out, len, "%s port %s", ip, port);
}
void rc_trace_retry(const struct rc_log *log, struct ibv_qp *qp)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a;

	if (!log->verbose || !qp ||
	    ibv_query_qp(qp, &a, IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY, &init))
		return;
	rc_trace(log, "QP %u: ack timeout %u (%.0f ms), retry_cnt %u, rnr_retry %u", qp->qp_num,
		 a.timeout, (double)(1ull << (a.timeout & 31)) * 4.096e-3, a.retry_cnt,
		 a.rnr_retry);
}
