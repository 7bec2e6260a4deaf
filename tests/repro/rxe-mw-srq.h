/* SPDX-License-Identifier: MIT */
/*
 * rxe-mw-srq: the probe's state and plumbing (rxe-mw-srq.c: connections
 * over rdma_cm, async events, posting and waiting) and its cases
 * (rxe-mw-srq-cases.c: one printed line per fact).
 */
#ifndef RXE_MW_SRQ_H
#define RXE_MW_SRQ_H

#include <stdint.h>
#include <sys/socket.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define SLICE  4096u /* a client's slice of the arena */
#define MSG    64u   /* an SRQ receive buffer */
#define NRBUF  64u
#define NPAIR  4
#define ANY_WR UINT64_MAX /* complete1: any work request of the QP */

enum { S_ADDR = 1, S_ROUTE = 2, S_REQ = 4, S_EST_C = 8, S_EST_S = 16, S_FAIL = 32 };

/* One connection: the client's id and QP, the server's id and QP. */
struct pair {
	struct rdma_cm_id *cid, *sid;
	struct ibv_cq *ccq;
	unsigned seen;
	int fail_event, fail_status;
	double t_est; /* when both sides were ESTABLISHED */
};

/* What the server side of the next connections gets. */
struct srv_opts {
	struct ibv_srq *srq;
	struct ibv_cq *cq;
	uint8_t rnr_retry; /* REP: the client's rnr_retry */
};

struct probe {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen;
	struct sockaddr_storage addr;
	struct ibv_context *ctx;
	struct ibv_device_attr dev;
	struct ibv_pd *spd, *cpd;
	struct ibv_cq *scq;
	struct ibv_srq *srq, *srq0; /* srq0 stays empty: RNR */
	uint8_t *arena, *cbuf, *rbuf;
	struct ibv_mr *arena_mr, *open_mr, *cmr, *rmr;
	struct pair pairs[NPAIR], *pv;
	unsigned npv, wait_ms, rbuf_next;
	struct srv_opts so;
	int last; /* the last completion's status, -1 none, -2 post failed */
};

double now_ms(void);
char *sbuf(void);
const char *errstr(int ret);
const char *collect(struct probe *p, int ms, const char *until);
void pump(struct probe *p, int ms);
int wait_seen(struct probe *p, struct pair *pr, unsigned bits);
int start_pair(struct probe *p, struct pair *pr, int cq_size, int step);
int new_pair(struct probe *p, struct pair *pr, int cq_size, struct srv_opts so);
void drop_pair(struct probe *p, struct pair *pr);
int complete1(struct probe *p, struct ibv_cq *cq, uint32_t qpn, uint64_t id, int ms);
const char *status(const struct probe *p);
const char *post_wait(struct probe *p, struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_send_wr *wr,
		      int ms);
const char *rdma_op(struct probe *p, struct pair *pr, enum ibv_wr_opcode op, void *raddr,
		    uint32_t rkey, uint32_t len);
const char *send_msg(struct probe *p, struct pair *pr, uint32_t len);
const char *bind_mw(struct probe *p, struct pair *pr, struct ibv_mw *mw, struct ibv_mr *mr,
		    void *addr, uint32_t len, uint32_t rkey);
const char *local_inv(struct probe *p, struct pair *pr, uint32_t rkey);
void srq_post(struct probe *p, struct ibv_srq *srq, unsigned n);
const char *qp_state(struct ibv_qp *qp);
const char *after(double t0);

/* rxe-mw-srq-cases.c */
int run_cases(struct probe *p);
int case_port(struct probe *p, int seconds);
int case_destroy_order(struct probe *p);
int case_burst(struct probe *p, unsigned n, int backlog);

#endif
