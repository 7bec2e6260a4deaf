// SPDX-License-Identifier: MIT
/*
 * rxe-odp - does data that the NIC writes into an ODP memory region of a
 * file mapping arrive? The verbs-only question behind 03_file-transfer's
 * one failed try of ODP on Linux 7.3 (03's README: a get whose READs
 * landed in an ODP window of a file failed its chunk digest).
 *
 * One process, one device, two RC QPs connected to each other by hand
 * (ibv_modify_qp, no rdma_cm): QP A asks, QP B answers. The destination
 * is a MAP_SHARED read-write mapping of FILE (created, SIZE bytes),
 * registered with IBV_ACCESS_ON_DEMAND; the source is an anonymous buffer
 * with a known pattern, registered as usual.
 *   --op read:  A READs from B's source into A's ODP destination (03's get:
 *               the client READs each chunk into its window of the file);
 *   --op write: A WRITEs its source into B's ODP destination (03's put into
 *               an in-place server: the client WRITEs into the server's
 *               window).
 * DEPTH operations of CHUNK bytes are in flight until SIZE bytes are done.
 * Then the mapping and the file (pread: the page cache) are compared with
 * the source, and the first wrong chunk is named. --touch writes zeros
 * through the mapping first, so every page is present before the NIC's
 * first access (no page fault in the ODP path).
 *
 *   rxe-odp [-d DEVICE] [--op read|write] [-s SIZE] [-c CHUNK] [-t DEPTH]
 *           [--touch] [--no-odp] [--timeout SECONDS] FILE
 *
 * --no-odp registers the destination pinned, as usual: the control.
 *
 * What it showed (docs/kernels.md, "rxe-odp"): on 7.3.4, the only kernel
 * here whose rxe has ODP, every operation completes successfully and the
 * data is wrong, in both directions, on ext4, tmpfs and the overlay, with
 * or without --touch: each packet's payload lands at the start of its page
 * (with the 1024-byte MTU, the pages it maps out hold their source bytes
 * 3072..4095 in bytes 0..1023 and zeros after; 3/4 of all words are zero). rxe_odp.c's
 * __rxe_odp_mr_copy computes the offset within the page and never adds
 * it. The control is right.
 *
 * Exit status: 0 every operation completed and the data is right; 3 every
 * operation completed successfully but the data is wrong (the bug this
 * looks for); 5 the device has no ODP for RC READ (or WRITE) here; 1 any
 * other failure (an error completion, a timeout, a refused registration),
 * with the call and its error; 2 usage.
 * tests/repro/rxe-odp.sh runs it on ext4, tmpfs and the VM's overlay.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

struct opts {
	const char *dev, *file;
	bool write, touch, plain;
	size_t size, chunk;
	unsigned depth, timeout_s;
};

/* Everything the program holds, released by one cleanup path. */
struct probe {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq_a, *cq_b;
	struct ibv_qp *qp_a, *qp_b;
	uint8_t *src, *dst;
	struct ibv_mr *src_mr, *dst_mr;
	int fd;
	size_t size;
};

static void usage(FILE *f)
{
	fprintf(f, "usage: rxe-odp [-d DEVICE] [--op read|write] [-s SIZE] [-c CHUNK] [-t DEPTH]\n"
		   "               [--touch] [--no-odp] [--timeout SECONDS] FILE\n"
		   "defaults: the first device, --op read, -s 16M, -c 64K, -t 16, --timeout 20\n");
}

static size_t parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	if (end == s)
		return 0;
	if (*end == 'K' || *end == 'k')
		v <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		v <<= 20, end++;
	return *end || v > ((size_t)1 << 34) ? 0 : (size_t)v;
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "op", required_argument, NULL, 'o' }, { "touch", no_argument, NULL, 'T' },
		{ "no-odp", no_argument, NULL, 'N' },	{ "timeout", required_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },	{ NULL, 0, NULL, 0 }
	};
	int c;

	*o = (struct opts){ .size = 16u << 20, .chunk = 64u << 10, .depth = 16, .timeout_s = 20 };
	while ((c = getopt_long(argc, argv, "d:s:c:t:h", lo, NULL)) != -1) {
		switch (c) {
		case 'd': o->dev = optarg; break;
		case 'o':
			if (strcmp(optarg, "read") && strcmp(optarg, "write"))
				return -1;
			o->write = !strcmp(optarg, "write");
			break;
		case 's': o->size = parse_size(optarg); break;
		case 'c': o->chunk = parse_size(optarg); break;
		case 't': o->depth = (unsigned)atoi(optarg); break;
		case 'T': o->touch = true; break;
		case 'N': o->plain = true; break;
		case 'w': o->timeout_s = (unsigned)atoi(optarg); break;
		case 'h': usage(stdout); exit(0);
		default: return -1;
		}
	}
	if (optind != argc - 1 || !o->size || !o->chunk || o->size % o->chunk || !o->depth ||
	    o->depth > 128 || !o->timeout_s)
		return -1;
	o->file = argv[optind];
	return 0;
}

/* The pattern: each 8-byte word holds its own offset, mixed, so a chunk
 * landed at the wrong place or missing shows. */
#define GOLDEN 0x9e3779b97f4a7c15ull
#define SALT   0x5bd1e995u
static void fill(uint8_t *p, size_t len)
{
	for (size_t off = 0; off < len; off += 8) {
		uint64_t v = off * GOLDEN ^ SALT;

		memcpy(p + off, &v, 8);
	}
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The first GID that is an IPv4-mapped address (rxe's RoCE v2 entry for
 * the interface's IPv4 address), else index 0. */
static int pick_gid(struct ibv_context *ctx, union ibv_gid *gid)
{
	static const uint8_t v4[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	int i;

	for (i = 0; i < 16; i++)
		if (!ibv_query_gid(ctx, 1, i, gid) && !memcmp(gid->raw, v4, 12))
			return i;
	return ibv_query_gid(ctx, 1, 0, gid) ? -1 : 0;
}

/* RESET -> INIT -> RTR -> RTS, aimed at the QP with number peer. */
static int connect_qp(struct ibv_qp *qp, uint32_t peer, int gid_index, const union ibv_gid *gid,
		      enum ibv_mtu mtu, unsigned depth)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT,
				 .port_num = 1,
				 .qp_access_flags =
					 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE };
	int ret;

	ret = ibv_modify_qp(qp, &a,
			    IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (ret)
		return ret;
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR,
				  .path_mtu = mtu,
				  .dest_qp_num = peer,
				  .max_dest_rd_atomic = (uint8_t)depth,
				  .min_rnr_timer = 12 };
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *gid;
	a.ah_attr.grh.sgid_index = (uint8_t)gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	ret = ibv_modify_qp(qp, &a,
			    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				    IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				    IBV_QP_MIN_RNR_TIMER);
	if (ret)
		return ret;
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS,
				  .timeout = 14,
				  .retry_cnt = 7,
				  .rnr_retry = 7,
				  .max_rd_atomic = (uint8_t)depth };
	return ibv_modify_qp(qp, &a,
			     IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

static struct ibv_qp *make_qp(struct probe *p, struct ibv_cq *cq, unsigned depth)
{
	struct ibv_qp_init_attr qa = { .send_cq = cq,
				       .recv_cq = cq,
				       .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = depth,
						.max_recv_wr = 1,
						.max_send_sge = 1,
						.max_recv_sge = 1 } };

	return ibv_create_qp(p->pd, &qa);
}

static int fail(const char *call, int err)
{
	fprintf(stderr, "rxe-odp: %s: %s\n", call, strerror(err));
	return 1;
}

/* Device, PD, QPs and the two memory regions. 5: no ODP for this op. */
static int setup(struct probe *p, const struct opts *o)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_device_attr_ex ax = { 0 };
	struct ibv_port_attr port;
	union ibv_gid gid;
	uint32_t need = o->write ? IBV_ODP_SUPPORT_WRITE : IBV_ODP_SUPPORT_READ;
	int i, gi, ret;

	for (i = 0; list && list[i]; i++)
		if (!o->dev || !strcmp(ibv_get_device_name(list[i]), o->dev))
			break;
	if (!list || !list[i]) {
		fprintf(stderr, "rxe-odp: no RDMA device%s%s\n", o->dev ? " named " : "",
			o->dev ? o->dev : "");
		if (list)
			ibv_free_device_list(list);
		return 1;
	}
	p->ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!p->ctx)
		return fail("ibv_open_device", errno);
	ret = ibv_query_device_ex(p->ctx, NULL, &ax);
	if (ret)
		return fail("ibv_query_device_ex", ret);
	printf("odp_caps: general 0x%" PRIx64 ", rc 0x%x\n", ax.odp_caps.general_caps,
	       ax.odp_caps.per_transport_caps.rc_odp_caps);
	if (!o->plain && (!(ax.odp_caps.general_caps & IBV_ODP_SUPPORT) ||
			  (ax.odp_caps.per_transport_caps.rc_odp_caps & need) != need)) {
		printf("no ODP for RC %s on this device\n", o->write ? "WRITE" : "READ");
		return 5;
	}
	if (ibv_query_port(p->ctx, 1, &port))
		return fail("ibv_query_port", errno);
	gi = pick_gid(p->ctx, &gid);
	if (gi < 0)
		return fail("ibv_query_gid", errno);
	p->pd = ibv_alloc_pd(p->ctx);
	p->cq_a = p->pd ? ibv_create_cq(p->ctx, (int)o->depth * 2, NULL, NULL, 0) : NULL;
	p->cq_b = p->cq_a ? ibv_create_cq(p->ctx, 2, NULL, NULL, 0) : NULL;
	p->qp_a = p->cq_b ? make_qp(p, p->cq_a, o->depth) : NULL;
	p->qp_b = p->qp_a ? make_qp(p, p->cq_b, 1) : NULL;
	if (!p->qp_b)
		return fail("ibv_alloc_pd/ibv_create_cq/ibv_create_qp", errno);
	ret = connect_qp(p->qp_a, p->qp_b->qp_num, gi, &gid, port.active_mtu, o->depth);
	if (!ret)
		ret = connect_qp(p->qp_b, p->qp_a->qp_num, gi, &gid, port.active_mtu, o->depth);
	if (ret)
		return fail("ibv_modify_qp", ret);

	/* Source: anonymous memory, the pattern. */
	p->size = o->size;
	p->src = mmap(NULL, o->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p->src == MAP_FAILED) {
		p->src = NULL;
		return fail("mmap (source)", errno);
	}
	fill(p->src, o->size);
	p->src_mr =
		ibv_reg_mr(p->pd, p->src, o->size, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!p->src_mr)
		return fail("ibv_reg_mr (source)", errno);

	/* Destination: FILE, SIZE bytes, shared and writable, ODP. */
	p->fd = open(o->file, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (p->fd < 0)
		return fail(o->file, errno);
	if (ftruncate(p->fd, (off_t)o->size))
		return fail("ftruncate", errno);
	p->dst = mmap(NULL, o->size, PROT_READ | PROT_WRITE, MAP_SHARED, p->fd, 0);
	if (p->dst == MAP_FAILED) {
		p->dst = NULL;
		return fail("mmap (destination)", errno);
	}
	if (o->touch)
		memset(p->dst, 0, o->size);
	/* --no-odp: the control, a pinned registration of the same mapping. */
	p->dst_mr = ibv_reg_mr(p->pd, p->dst, o->size,
			       (o->plain ? 0 : IBV_ACCESS_ON_DEMAND) | IBV_ACCESS_LOCAL_WRITE |
				       IBV_ACCESS_REMOTE_WRITE);
	if (!p->dst_mr)
		return fail(o->plain ? "ibv_reg_mr (destination)"
				     : "ibv_reg_mr (destination, ON_DEMAND)",
			    errno);
	return 0;
}

/* Chunk i: READ from the source into the destination (A's ODP MR is the
 * local buffer), or WRITE the source into it (B's ODP MR is the target). */
static int post_chunk(struct probe *p, const struct opts *o, size_t i)
{
	size_t off = i * o->chunk;
	struct ibv_sge sge = { .length = (uint32_t)o->chunk };
	struct ibv_send_wr wr = { .wr_id = i,
				  .sg_list = &sge,
				  .num_sge = 1,
				  .send_flags = IBV_SEND_SIGNALED },
			   *bad;

	if (o->write) {
		sge.addr = (uintptr_t)(p->src + off), sge.lkey = p->src_mr->lkey;
		wr.opcode = IBV_WR_RDMA_WRITE;
		wr.wr.rdma.remote_addr = (uintptr_t)(p->dst + off);
		wr.wr.rdma.rkey = p->dst_mr->rkey;
	} else {
		sge.addr = (uintptr_t)(p->dst + off), sge.lkey = p->dst_mr->lkey;
		wr.opcode = IBV_WR_RDMA_READ;
		wr.wr.rdma.remote_addr = (uintptr_t)(p->src + off);
		wr.wr.rdma.rkey = p->src_mr->rkey;
	}
	return ibv_post_send(p->qp_a, &wr, &bad);
}

static int transfer(struct probe *p, const struct opts *o)
{
	size_t chunks = o->size / o->chunk, posted = 0, done = 0;
	double end = now_s() + o->timeout_s;
	struct ibv_wc wc[16];
	int n, i, ret;

	while (done < chunks) {
		while (posted < chunks && posted - done < o->depth) {
			ret = post_chunk(p, o, posted);
			if (ret)
				return fail("ibv_post_send", ret);
			posted++;
		}
		n = ibv_poll_cq(p->cq_a, 16, wc);
		if (n < 0)
			return fail("ibv_poll_cq", EIO);
		for (i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				fprintf(stderr,
					"rxe-odp: chunk %" PRIu64 ": %s (vendor_err 0x%x)\n",
					wc[i].wr_id, ibv_wc_status_str(wc[i].status),
					wc[i].vendor_err);
				return 1;
			}
			done++;
		}
		if (!n && now_s() > end) {
			fprintf(stderr, "rxe-odp: %zu of %zu chunks completed after %u s\n", done,
				chunks, o->timeout_s);
			return 1;
		}
	}
	return 0;
}

/* The first chunk of buf that differs from the source, or -1. */
static long first_bad(const struct probe *p, const uint8_t *buf, size_t chunk)
{
	for (size_t off = 0; off < p->size; off += chunk)
		if (memcmp(buf + off, p->src + off, chunk))
			return (long)(off / chunk);
	return -1;
}

/* Where the data in the first two pages of the mapping came from: runs of
 * words that hold the source's words from a contiguous range (the pattern
 * is invertible: offset = (word ^ SALT) * GOLDEN^-1). */
static void where_from(const struct probe *p, const struct opts *o)
{
	size_t end = o->size < 8192 ? o->size : 8192, off, start = 0;
	uint64_t inv = GOLDEN, w, from, start_from = 0;
	bool in_run = false;
	int i;

	/* Newton's iteration for the inverse modulo 2^64 of an odd number. */
	for (i = 0; i < 6; i++)
		inv *= 2 - GOLDEN * inv;
	for (off = 0; off <= end; off += 8) {
		from = UINT64_MAX;
		if (off < end) {
			memcpy(&w, p->dst + off, 8);
			from = (w ^ SALT) * inv;
		}
		if (in_run && from == start_from + (off - start))
			continue;
		if (in_run)
			printf("  mapping bytes %zu..%zu hold source bytes %" PRIu64 "..%" PRIu64
			       "\n",
			       start, off - 1, start_from, start_from + (off - start) - 1);
		in_run = from < o->size && from % 8 == 0;
		start = off, start_from = from;
	}
}

/* What the wrong data looks like: how many 8-byte words of the mapping
 * are wrong, how many of those are zero, and the first one. */
static void describe(const struct probe *p, const struct opts *o)
{
	size_t off, wrong = 0, zero = 0, first = SIZE_MAX;
	uint64_t got, want;

	for (off = 0; off < o->size; off += 8) {
		memcpy(&got, p->dst + off, 8);
		memcpy(&want, p->src + off, 8);
		if (got == want)
			continue;
		wrong++;
		zero += !got;
		if (first == SIZE_MAX)
			first = off;
	}
	if (first == SIZE_MAX)
		return;
	memcpy(&got, p->dst + first, 8);
	memcpy(&want, p->src + first, 8);
	printf("  %zu of %zu words wrong (%zu of them zero); first at offset %zu: 0x%016" PRIx64
	       ", want 0x%016" PRIx64 "\n",
	       wrong, o->size / 8, zero, first, got, want);
	where_from(p, o);
}

static int verify(struct probe *p, const struct opts *o)
{
	uint8_t *copy = malloc(o->size);
	long in_map, in_file;
	size_t got = 0;
	ssize_t n;

	if (!copy)
		return fail("malloc", ENOMEM);
	while (got < o->size && (n = pread(p->fd, copy + got, o->size - got, (off_t)got)) > 0)
		got += (size_t)n;
	in_map = first_bad(p, p->dst, o->chunk);
	in_file = got == o->size ? first_bad(p, copy, o->chunk) : 0;
	free(copy);
	if (in_map < 0 && in_file < 0) {
		printf("data right: %zu bytes in the mapping and in the file\n", o->size);
		return 0;
	}
	printf("DATA WRONG after successful completions: first wrong chunk %ld in the mapping, "
	       "%ld in the file (pread; -1: right)\n",
	       in_map, in_file);
	describe(p, o);
	return 3;
}

static void cleanup(struct probe *p)
{
	if (p->dst_mr)
		ibv_dereg_mr(p->dst_mr);
	if (p->dst)
		munmap(p->dst, p->size);
	if (p->fd >= 0)
		close(p->fd);
	if (p->src_mr)
		ibv_dereg_mr(p->src_mr);
	if (p->src)
		munmap(p->src, p->size);
	if (p->qp_b)
		ibv_destroy_qp(p->qp_b);
	if (p->qp_a)
		ibv_destroy_qp(p->qp_a);
	if (p->cq_b)
		ibv_destroy_cq(p->cq_b);
	if (p->cq_a)
		ibv_destroy_cq(p->cq_a);
	if (p->pd)
		ibv_dealloc_pd(p->pd);
	if (p->ctx)
		ibv_close_device(p->ctx);
}

int main(int argc, char **argv)
{
	struct probe p = { .fd = -1 };
	struct opts o;
	int ret;

	if (parse(argc, argv, &o)) {
		usage(stderr);
		return 2;
	}
	ret = setup(&p, &o);
	if (!ret)
		ret = transfer(&p, &o);
	if (!ret)
		ret = verify(&p, &o);
	cleanup(&p);
	return ret;
}
