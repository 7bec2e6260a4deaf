// SPDX-License-Identifier: MIT
/*
 * reg-mr-probe - which shared file mappings does this kernel let a
 * program register for RDMA (ibv_reg_mr), and does the device do ODP?
 *
 * 03_file-transfer's zero-copy source registers a read-only MAP_SHARED
 * mapping of the file it sends; an in-place receiver would register a
 * writable one of the file it receives. Whether the kernel allows either
 * depends on its version (ib_umem_get's pinning rules) and on the file
 * system (dirty tracking), not on the device, so one program answers it:
 * no QP, no peer, only a PD and ibv_reg_mr on mappings of two files, one
 * on ext4 and one on tmpfs. Registration only: whether the NIC's reads or
 * writes through such an MR then work is not tested here.
 *
 *   reg-mr-probe [-d DEVICE] EXT4_DIR TMPFS_DIR
 *
 * Prints one line per case, the device's ODP capabilities
 * (ibv_query_device_ex), then the row of the table in 03's README:
 *   | KERNEL | ro access 0 | ro REMOTE_READ | rw ext4 | rw tmpfs | ODP | ODP rw ext4 |
 * Exit status: 0 (every case ran, whatever the kernel answered), 1 setup
 * failed (no device, a file could not be made), 2 usage.
 * tests/repro/reg-mr-probe.sh makes the two file systems in the VM.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define FILE_BYTES (2u << 20) /* two huge pages' worth; any size would do */

/* What one case came to: "registered", or the errno's name. */
struct outcome {
	char text[64];
};

/* A file of FILE_BYTES of data in dir, on disk: the page cache holds it
 * as a real file's pages (not holes). Returns its path in path. */
static int make_file(const char *dir, char *path, size_t len)
{
	static uint8_t buf[1 << 16];
	unsigned i;
	int fd;

	snprintf(path, len, "%s/reg-mr-probe.dat", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		fprintf(stderr, "reg-mr-probe: cannot create %s: %s\n", path, strerror(errno));
		return -1;
	}
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 7u);
	for (i = 0; i < FILE_BYTES / sizeof(buf); i++)
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf)) {
			fprintf(stderr, "reg-mr-probe: cannot write %s: %s\n", path,
				strerror(errno));
			close(fd);
			return -1;
		}
	/* On disk, so the pages are clean file pages, as a sender's are. */
	fsync(fd);
	close(fd);
	return 0;
}

/*
 * Map path MAP_SHARED (read-only, or read-write) and register the
 * mapping with `access`. The MR is released at once: only the kernel's
 * answer counts.
 */
static void try_reg(struct ibv_pd *pd, const char *path, bool writable, int access,
		    struct outcome *o)
{
	struct ibv_mr *mr;
	void *p;
	int fd, err;

	fd = open(path, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	if (fd < 0) {
		snprintf(o->text, sizeof(o->text), "open: %s", strerrorname_np(errno));
		return;
	}
	p = mmap(NULL, FILE_BYTES, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd,
		 0);
	err = errno;
	close(fd); /* the mapping keeps the file */
	if (p == MAP_FAILED) {
		snprintf(o->text, sizeof(o->text), "mmap: %s", strerrorname_np(err));
		return;
	}
	/* The call under test: ib_umem_get pins (or, with ON_DEMAND, only
	 * tracks) the mapping's pages. */
	mr = ibv_reg_mr(pd, p, FILE_BYTES, access);
	if (mr) {
		snprintf(o->text, sizeof(o->text), "%s", "registered");
		ibv_dereg_mr(mr);
	} else {
		snprintf(o->text, sizeof(o->text), "%s", strerrorname_np(errno));
	}
	munmap(p, FILE_BYTES);
}

/* Bit names of an ODP transport capability mask. */
static void odp_bits(uint32_t caps, char *out, size_t len)
{
	static const char *const name[] = { "SEND",   "RECV",	  "WRITE", "READ",
					    "ATOMIC", "SRQ_RECV", "FLUSH", "ATOMIC_WRITE" };
	size_t o = 0;
	unsigned i;

	out[0] = '\0';
	for (i = 0; i < 32 && o < len; i++)
		if (caps & (1u << i))
			o += (size_t)snprintf(out + o, len - o, "%s%s", o ? "|" : "",
					      i < 8 ? name[i] : "?");
	if (!o)
		snprintf(out, len, "%s", "none");
}

static int usage(void)
{
	fprintf(stderr, "usage: reg-mr-probe [-d DEVICE] EXT4_DIR TMPFS_DIR\n");
	return 2;
}

int main(int argc, char **argv)
{
	enum { RO0, RORR, RWEXT4, RWTMPFS, TMPRO0, TMPRORR, ODPRW, ODPRO, ODPTMP, NCASES };
	static const char *const what[NCASES] = {
		"ext4, read-only map, access 0",
		"ext4, read-only map, REMOTE_READ",
		"ext4, read-write map, LOCAL_WRITE|REMOTE_WRITE",
		"tmpfs, read-write map, LOCAL_WRITE|REMOTE_WRITE",
		"tmpfs, read-only map, access 0",
		"tmpfs, read-only map, REMOTE_READ",
		"ext4, read-write map, ON_DEMAND|LOCAL_WRITE|REMOTE_WRITE",
		"ext4, read-only map, ON_DEMAND|REMOTE_READ",
		"tmpfs, read-write map, ON_DEMAND|LOCAL_WRITE|REMOTE_WRITE",
	};
	const int rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	struct outcome o[NCASES];
	struct ibv_device_attr_ex ax;
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_pd *pd;
	struct utsname un;
	const char *devname = NULL;
	char ext4[4096], tmpfs[4096], rc[128], odp[64];
	bool has_odp;
	int i, n, ret;

	if (argc == 5 && !strcmp(argv[1], "-d")) {
		devname = argv[2];
		argv += 2;
		argc -= 2;
	}
	if (argc != 3)
		return usage();
	if (make_file(argv[1], ext4, sizeof(ext4)) || make_file(argv[2], tmpfs, sizeof(tmpfs)))
		return 1;
	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n && !ctx; i++)
		if (!devname || !strcmp(ibv_get_device_name(list[i]), devname))
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	if (!ctx) {
		fprintf(stderr, "reg-mr-probe: no RDMA device%s%s could be opened\n",
			devname ? " named " : "", devname ? devname : "");
		return 1;
	}
	/* The extended attributes carry odp_caps; all zero means no ODP. */
	memset(&ax, 0, sizeof(ax));
	ret = ibv_query_device_ex(ctx, NULL, &ax);
	pd = ibv_alloc_pd(ctx);
	if (ret || !pd) {
		fprintf(stderr, "reg-mr-probe: %s: %s\n",
			ret ? "ibv_query_device_ex" : "ibv_alloc_pd", strerror(ret ? ret : errno));
		if (pd)
			ibv_dealloc_pd(pd);
		ibv_close_device(ctx);
		return 1;
	}
	has_odp = ax.odp_caps.general_caps & IBV_ODP_SUPPORT;

	try_reg(pd, ext4, false, 0, &o[RO0]);
	try_reg(pd, ext4, false, IBV_ACCESS_REMOTE_READ, &o[RORR]);
	try_reg(pd, ext4, true, rw, &o[RWEXT4]);
	try_reg(pd, tmpfs, true, rw, &o[RWTMPFS]);
	try_reg(pd, tmpfs, false, 0, &o[TMPRO0]);
	try_reg(pd, tmpfs, false, IBV_ACCESS_REMOTE_READ, &o[TMPRORR]);
	/* Tried without ODP too: the kernel's refusal names itself. */
	try_reg(pd, ext4, true, IBV_ACCESS_ON_DEMAND | rw, &o[ODPRW]);
	try_reg(pd, ext4, false, IBV_ACCESS_ON_DEMAND | IBV_ACCESS_REMOTE_READ, &o[ODPRO]);
	try_reg(pd, tmpfs, true, IBV_ACCESS_ON_DEMAND | rw, &o[ODPTMP]);

	if (uname(&un))
		snprintf(un.release, sizeof(un.release), "%s", "?");
	printf("kernel %s, device %s\n", un.release, ibv_get_device_name(ctx->device));
	for (i = 0; i < NCASES; i++)
		printf("%-58s %s\n", what[i], o[i].text);
	odp_bits(ax.odp_caps.per_transport_caps.rc_odp_caps, rc, sizeof(rc));
	printf("odp_caps: general 0x%" PRIx64 " (%s%s), rc 0x%x (%s), uc 0x%x, ud 0x%x, xrc 0x%x\n",
	       ax.odp_caps.general_caps, has_odp ? "ODP_SUPPORT" : "no ODP_SUPPORT",
	       ax.odp_caps.general_caps & IBV_ODP_SUPPORT_IMPLICIT ? "|IMPLICIT" : "",
	       ax.odp_caps.per_transport_caps.rc_odp_caps, rc,
	       ax.odp_caps.per_transport_caps.uc_odp_caps,
	       ax.odp_caps.per_transport_caps.ud_odp_caps, ax.xrc_odp_caps);
	if (has_odp)
		snprintf(odp, sizeof(odp), "yes (rc caps 0x%x)",
			 ax.odp_caps.per_transport_caps.rc_odp_caps);
	else
		snprintf(odp, sizeof(odp), "%s", "no");
	/* The README's columns, in its order. */
	printf("| %s | %s | %s | %s | %s | %s | %s |\n", un.release, o[RO0].text, o[RORR].text,
	       o[RWEXT4].text, o[RWTMPFS].text, odp, o[ODPRW].text);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	unlink(ext4);
	unlink(tmpfs);
	return 0;
}
