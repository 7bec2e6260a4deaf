// SPDX-License-Identifier: MIT
/*
 * rc-lessons.c - names and states the --inject lessons of 01 and 02 print.
 */
#define _GNU_SOURCE
#include "rc-lessons.h"

const char *rc_wc_status_name(int status)
{
	switch (status) {
	case IBV_WC_SUCCESS: return "IBV_WC_SUCCESS";
	case IBV_WC_LOC_LEN_ERR: return "IBV_WC_LOC_LEN_ERR";
	case IBV_WC_LOC_QP_OP_ERR: return "IBV_WC_LOC_QP_OP_ERR";
	case IBV_WC_LOC_PROT_ERR: return "IBV_WC_LOC_PROT_ERR";
	case IBV_WC_WR_FLUSH_ERR: return "IBV_WC_WR_FLUSH_ERR";
	case IBV_WC_REM_INV_REQ_ERR: return "IBV_WC_REM_INV_REQ_ERR";
	case IBV_WC_REM_ACCESS_ERR: return "IBV_WC_REM_ACCESS_ERR";
	case IBV_WC_REM_OP_ERR: return "IBV_WC_REM_OP_ERR";
	case IBV_WC_RETRY_EXC_ERR: return "IBV_WC_RETRY_EXC_ERR";
	case IBV_WC_RNR_RETRY_EXC_ERR: return "IBV_WC_RNR_RETRY_EXC_ERR";
	default: return "IBV_WC_(other)";
	}
}

enum ibv_qp_state rc_qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;

	/* Only the state: the device fills in what the mask asks for. */
	if (!qp || ibv_query_qp(qp, &attr, IBV_QP_STATE, &init))
		return IBV_QPS_UNKNOWN;
	return attr.qp_state;
}

const char *rc_qp_state_name(enum ibv_qp_state st)
{
	switch (st) {
	case IBV_QPS_RESET: return "RESET";
	case IBV_QPS_INIT: return "INIT";
	case IBV_QPS_RTR: return "RTR";
	case IBV_QPS_RTS: return "RTS (ready to send)";
	case IBV_QPS_SQD: return "SQD";
	case IBV_QPS_SQE: return "SQE";
	case IBV_QPS_ERR: return "ERR (error)";
	default: return "unknown";
	}
}
