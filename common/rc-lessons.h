/* SPDX-License-Identifier: MIT */
/*
 * rc-lessons.h - what the --inject lessons of 01 and 02 report about a QP:
 * the enum names of completion statuses and QP states, and the QP's state
 * now (the kernel's release: rc_kernel_release, rc-counters.h). Not needed
 * to move data, so not in the set rdma-common.h names (what a service
 * copies).
 */
#ifndef RC_LESSONS_H
#define RC_LESSONS_H

#include <stddef.h>

#include <infiniband/verbs.h>

/* The enum's name of a completion status ("IBV_WC_RNR_RETRY_EXC_ERR"), as
 * the lessons print it; "IBV_WC_(other)" for the rarer ones. */
const char *rc_wc_status_name(int status);

/* qp's state as the device reports it now; IBV_QPS_UNKNOWN if
 * ibv_query_qp fails. */
enum ibv_qp_state rc_qp_state(struct ibv_qp *qp);

/* "RTS (ready to send)", "ERR (error)", "INIT", ...; "unknown" for others. */
const char *rc_qp_state_name(enum ibv_qp_state st);

#endif /* RC_LESSONS_H */
