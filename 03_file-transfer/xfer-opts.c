// SPDX-License-Identifier: MIT
/*
 * xfer-opts.c - 03's command lines: SRC and DST, the options of the client
 * and of the server, and the server's limits against a HELLO. See
 * xfer-opts.h.
 */
#define _GNU_SOURCE
#include "xfer-opts.h"
#include "xfer-hash.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Endpoints                                                           */
/* ------------------------------------------------------------------ */

int xfer_parse_endpoint(const char *arg, struct xfer_endpoint *ep, char *err, size_t errlen)
{
	const char *colon, *slash, *host, *end;

	memset(ep, 0, sizeof(*ep));
	ep->path = arg;
	if (arg[0] == '[') {
		/* [IPv6]:NAME: the brackets keep the address's colons apart. */
		end = strchr(arg, ']');
		if (!end || end[1] != ':') {
			snprintf(err, errlen, "'%s': write an IPv6 address as [ADDR]:NAME", arg);
			return -EINVAL;
		}
		host = arg + 1;
		colon = end + 1;
	} else {
		colon = strchr(arg, ':');
		slash = strchr(arg, '/');
		if (!colon || (slash && slash < colon))
			return 0; /* a local path */
		host = arg;
		end = colon;
	}
	if (end == host) {
		snprintf(err, errlen, "'%s': missing host before ':'", arg);
		return -EINVAL;
	}
	if ((size_t)(end - host) >= sizeof(ep->host)) {
		snprintf(err, errlen, "'%s': host name too long", arg);
		return -EINVAL;
	}
	memcpy(ep->host, host, (size_t)(end - host));
	ep->host[end - host] = '\0';
	ep->path = colon + 1;
	ep->remote = true;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Options                                                             */
/* ------------------------------------------------------------------ */

enum {
	OPT_PROGRESS = RC_OPT_FIRST_FREE,
	OPT_NO_PROGRESS,
	OPT_MAX_CHUNK,
	OPT_MAX_DEPTH,
	OPT_MAX_MEM,
	OPT_JSON,
	OPT_SECRET,
	OPT_READ_ONLY,
	OPT_WRITE_ONLY,
	OPT_COPY,
	OPT_ZERO_COPY,
	OPT_DIRECT,
	OPT_HASH_THREADS,
};

#define XFER_MAX_CLIENTS 8

static const char client_usage[] =
	"usage: rdma-client [options] SRC DST\n"
	"Copy one file to or from an rdma-server, scp-style: exactly one of SRC\n"
	"and DST is HOST:NAME ([ADDR]:NAME for IPv6). DST remote = put (upload),\n"
	"SRC remote = get (download). NAME is a plain file name in the server's\n"
	"directory; `put FILE HOST:` keeps FILE's name. A local DST that is a\n"
	"directory receives the file under NAME.\n\n"
	"  -c, --chunk SIZE      bytes per RDMA transfer (default 64K; at most the\n"
	"                        port's max_msg_sz; K/M/G suffixes)\n"
	"  -t, --depth N         chunks in flight (default 16, at most 255)\n"
	"  -f, --force           overwrite an existing destination\n"
	"      --hash-threads N  threads computing the chunks' XXH3-128, and the put's\n"
	"                        hash of its whole file again before DONE on the\n"
	"                        zero-copy path (default 2, 1 to 16)\n"
	"      --copy            through rings on both sides: the sender preads into\n"
	"                        one, the receiver pwrites from one, even where the NIC\n"
	"                        could read or write the page cache itself (zero-copy,\n"
	"                        in place)\n"
	"      --zero-copy       the page cache on both sides where the kernel allows\n"
	"                        it, even on Soft-RoCE (whose default is the rings:\n"
	"                        faster there); the server's own --copy still wins on\n"
	"                        its side; not with --copy\n"
	"      --direct          the receiver (we for a get, the server for a put)\n"
	"                        pwrites from its ring with O_DIRECT: no copy in the page\n"
	"                        cache (ext4, xfs, btrfs; chunks a multiple of 4K)\n"
	"      --progress        show bytes, rate and ETA on stderr (default: if it is a TTY)\n"
	"      --no-progress     never show progress\n"
	"  -q, --quiet           print nothing but errors\n"
	"      --json            print one JSON object with the results instead (also on\n"
	"                        failure: \"ok\": false, \"error\", "
	"\"exit_code\")\n"
	"      --secret FILE     prove to the server that we hold its key (FILE: at least\n"
	"                        16 bytes, readable by its owner only); the data itself\n"
	"                        is not encrypted\n" RC_USAGE_CLIENT_WAIT(
		RC_USAGE_LOSSY) "\nRegisters chunk x depth bytes (default 1 MiB): see `ulimit "
				"-l`.\n"
				"Exit: 0 copied and verified, 1 failed after connecting, 2 bad "
				"usage or\n"
				"local file problem, 3 could not connect (or the server "
				"refused).\n";

static const char server_usage[] =
	"usage: rdma-server -r DIR [options]\n"
	"Serve the files in DIR and receive uploads into it, over RDMA.\n\n"
	"  -r, --root DIR        the directory served (required)\n"
	"      --max-chunk SIZE  largest chunk a client may ask for (default 16M,\n"
	"                        and never above the port's max_msg_sz)\n"
	"      --max-depth N     most chunks in flight per client (default 64)\n"
	"      --max-mem SIZE    most registered ring memory, chunk x depth, per\n"
	"                        client (default 64M)\n"
	"      --secret FILE     serve only clients that prove they hold this key (a MAC\n"
	"                        over a fresh nonce and their request; FILE: at least 16\n"
	"                        bytes, readable by its owner only); the data itself is\n"
	"                        not encrypted\n"
	"      --hash-threads N  threads computing the chunks' XXH3-128, per transfer,\n"
	"                        and a get's hash of its whole file again before DONE\n"
	"                        on the zero-copy path (default 2, 1 to 16)\n"
	"      --copy            always through our ring: a get's file is pread into it,\n"
	"                        a put's pwritten from it, even where the NIC could use\n"
	"                        the page cache itself (zero-copy, in place on tmpfs)\n"
	"      --zero-copy       the page cache where the kernel allows it, even on\n"
	"                        Soft-RoCE (whose default is the ring: faster there);\n"
	"                        a client's --zero-copy asks for it too, and a client's\n"
	"                        --copy wins over it\n"
	"      --direct          a put's file is pwritten from our ring with O_DIRECT: no\n"
	"                        copy in the page cache (ext4, xfs, btrfs; chunks a\n"
	"                        multiple of 4K); a client's --direct asks for it too\n"
	"      --read-only       serve get only: refuse every put\n"
	"      --write-only      serve put only: refuse every get\n" RC_USAGE_SERVER_WAIT(
		XFER_MAX_CLIENTS, RC_USAGE_LOSSY);

/* SRC and DST into the options: which one is remote, which name. */
static int client_endpoints(const char *src, const char *dst, struct xfer_client_opts *o, char *err,
			    size_t errlen)
{
	struct xfer_endpoint s, d;
	const char *base;
	int ret;

	ret = xfer_parse_endpoint(src, &s, err, errlen);
	if (!ret)
		ret = xfer_parse_endpoint(dst, &d, err, errlen);
	if (ret)
		return ret;
	if (s.remote == d.remote)
		return rc_usage_error(err, errlen, "%s",
				      s.remote ? "both SRC and DST are remote; one must be local"
					       : "neither SRC nor DST is remote (HOST:NAME)");
	o->op = d.remote ? XFER_PUT : XFER_GET;
	if (o->op == XFER_PUT) {
		memcpy(o->host, d.host, sizeof(o->host));
		o->local = src;
		o->name = d.path;
		if (!*o->local)
			return rc_usage_error(err, errlen, "%s", "empty SRC");
		if (!*o->name) {
			/* put FILE HOST: keeps the file's own name. */
			base = strrchr(src, '/');
			base = base ? base + 1 : src;
			if (!*base || strlen(base) > XFER_NAME_MAX)
				return rc_usage_error(
					err, errlen,
					"cannot take a name from '%s'; write HOST:NAME", src);
			memcpy(o->name_buf, base, strlen(base) + 1);
			o->name = o->name_buf;
		}
	} else {
		memcpy(o->host, s.host, sizeof(o->host));
		o->local = dst;
		o->name = s.path;
		if (!*o->name)
			return rc_usage_error(err, errlen, "%s", "missing NAME after HOST:");
		if (!*o->local)
			return rc_usage_error(err, errlen, "%s", "empty DST");
	}
	/* The name is judged by the server (the one authority over its
	 * directory); here only what the REQUEST can carry. */
	if (strlen(o->name) > XFER_NAME_MAX)
		return rc_usage_error(err, errlen, "remote name longer than %d bytes",
				      XFER_NAME_MAX);
	return 0;
}

/* --hash-threads N, on both programs. */
static int parse_hash_threads(const char *arg, unsigned *n, char *err, size_t errlen)
{
	uint64_t v;

	if (rc_parse_uint(arg, 1, XFER_MAX_HASH_THREADS, &v))
		return rc_usage_error(err, errlen, "invalid number of hash threads '%s' (1 to %d)",
				      arg, XFER_MAX_HASH_THREADS);
	*n = (unsigned)v;
	return 0;
}

int xfer_parse_client(int argc, char **argv, struct xfer_client_opts *o, char *err, size_t errlen)
{
	static const struct option longopts[] = {
		RC_LONGOPTS_CLIENT,
		{ "chunk", required_argument, NULL, 'c' },
		{ "depth", required_argument, NULL, 't' },
		{ "force", no_argument, NULL, 'f' },
		{ "copy", no_argument, NULL, OPT_COPY },
		{ "zero-copy", no_argument, NULL, OPT_ZERO_COPY },
		{ "direct", no_argument, NULL, OPT_DIRECT },
		{ "hash-threads", required_argument, NULL, OPT_HASH_THREADS },
		{ "progress", no_argument, NULL, OPT_PROGRESS },
		{ "no-progress", no_argument, NULL, OPT_NO_PROGRESS },
		{ "quiet", no_argument, NULL, 'q' },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "secret", required_argument, NULL, OPT_SECRET },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	int c, ret;

	*o = (struct xfer_client_opts){ .chunk = XFER_DEF_CHUNK,
					.depth = XFER_DEF_DEPTH,
					.hash_threads = XFER_DEF_HASH_THREADS,
					.progress = -1 };
	rc_opts_init(&o->rc, 1);
	while ((ret = rc_getopt(&o->rc, argc, argv, RC_SHORTOPTS_CLIENT "c:t:fq", longopts,
				client_usage, &c, err, errlen)) == 1) {
		switch (c) {
		case 'c':
			if (rc_parse_size(optarg, XFER_MIN_CHUNK, XFER_MAX_CHUNK, &v))
				return rc_usage_error(err, errlen,
						      "invalid chunk size '%s' (4K to 1G)", optarg);
			o->chunk = (uint32_t)v;
			break;
		case 't':
			if (rc_parse_uint(optarg, 1, XFER_MAX_DEPTH, &v))
				return rc_usage_error(err, errlen, "invalid depth '%s' (1 to %d)",
						      optarg, XFER_MAX_DEPTH);
			o->depth = (uint16_t)v;
			break;
		case 'f': o->force = true; break;
		case OPT_COPY: o->copy = true; break;
		case OPT_ZERO_COPY: o->zero_copy = true; break;
		case OPT_DIRECT: o->direct = true; break;
		case OPT_HASH_THREADS:
			ret = parse_hash_threads(optarg, &o->hash_threads, err, errlen);
			if (ret)
				return ret;
			break;
		case OPT_PROGRESS: o->progress = 1; break;
		case OPT_NO_PROGRESS: o->progress = 0; break;
		case 'q': o->quiet = true; break;
		case OPT_JSON: o->json = true; break;
		case OPT_SECRET: o->secret_file = optarg; break;
		}
	}
	ret = rc_opts_end(&o->rc, ret, argc, argv, RC_OPERANDS_OWN, NULL, err, errlen);
	if (ret)
		return ret;
	if (argc - optind < 2)
		return rc_usage_error(err, errlen, "%s", "need SRC and DST");
	if (argc - optind > 2)
		return rc_usage_error(err, errlen, "unexpected argument '%s'", argv[optind + 2]);
	if (o->copy && o->zero_copy)
		return rc_usage_error(err, errlen, "%s",
				      "--copy and --zero-copy exclude each other");
	if (o->quiet && o->progress == 1)
		return rc_usage_error(err, errlen, "%s", "-q and --progress exclude each other");
	if (o->quiet)
		o->progress = 0;
	if ((uint64_t)o->chunk * o->depth > UINT32_MAX)
		return rc_usage_error(err, errlen, "%s",
				      "chunk x depth must stay below 4 GiB (the ring is described "
				      "with a 32-bit length)");
	return client_endpoints(argv[optind], argv[optind + 1], o, err, errlen);
}

int xfer_parse_server(int argc, char **argv, struct xfer_server_opts *o, char *err, size_t errlen)
{
	static const struct option longopts[] = {
		RC_LONGOPTS_SERVER,
		{ "root", required_argument, NULL, 'r' },
		{ "max-chunk", required_argument, NULL, OPT_MAX_CHUNK },
		{ "max-depth", required_argument, NULL, OPT_MAX_DEPTH },
		{ "max-mem", required_argument, NULL, OPT_MAX_MEM },
		{ "secret", required_argument, NULL, OPT_SECRET },
		{ "read-only", no_argument, NULL, OPT_READ_ONLY },
		{ "write-only", no_argument, NULL, OPT_WRITE_ONLY },
		{ "hash-threads", required_argument, NULL, OPT_HASH_THREADS },
		{ "copy", no_argument, NULL, OPT_COPY },
		{ "zero-copy", no_argument, NULL, OPT_ZERO_COPY },
		{ "direct", no_argument, NULL, OPT_DIRECT },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	int c, ret;

	*o = (struct xfer_server_opts){
		.lim = { .max_chunk = 16u << 20, .max_depth = 64, .max_mem = 64u << 20 },
		.hash_threads = XFER_DEF_HASH_THREADS,
	};
	rc_opts_init(&o->rc, XFER_MAX_CLIENTS);
	while ((ret = rc_getopt(&o->rc, argc, argv, RC_SHORTOPTS_SERVER "r:", longopts,
				server_usage, &c, err, errlen)) == 1) {
		switch (c) {
		case 'r': o->root = optarg; break;
		case OPT_MAX_CHUNK:
			if (rc_parse_size(optarg, XFER_MIN_CHUNK, XFER_MAX_CHUNK, &v))
				return rc_usage_error(err, errlen,
						      "invalid chunk size '%s' (4K to 1G)", optarg);
			o->lim.max_chunk = (uint32_t)v;
			break;
		case OPT_MAX_DEPTH:
			if (rc_parse_uint(optarg, 1, XFER_MAX_DEPTH, &v))
				return rc_usage_error(err, errlen, "invalid depth '%s' (1 to %d)",
						      optarg, XFER_MAX_DEPTH);
			o->lim.max_depth = (uint16_t)v;
			break;
		case OPT_MAX_MEM:
			if (rc_parse_size(optarg, XFER_MIN_CHUNK, 2ull << 30, &v))
				return rc_usage_error(
					err, errlen, "invalid memory size '%s' (4K to 2G)", optarg);
			o->lim.max_mem = v;
			break;
		case OPT_SECRET: o->secret_file = optarg; break;
		case OPT_READ_ONLY: o->read_only = true; break;
		case OPT_WRITE_ONLY: o->write_only = true; break;
		case OPT_COPY: o->copy = true; break;
		case OPT_ZERO_COPY: o->zero_copy = true; break;
		case OPT_DIRECT: o->direct = true; break;
		case OPT_HASH_THREADS:
			ret = parse_hash_threads(optarg, &o->hash_threads, err, errlen);
			if (ret)
				return ret;
			break;
		}
	}
	ret = rc_opts_end(&o->rc, ret, argc, argv, RC_OPERANDS_NONE, NULL, err, errlen);
	if (ret)
		return ret;
	if (!o->root || !*o->root)
		return rc_usage_error(err, errlen, "%s", "missing -r DIR (the directory to serve)");
	if (o->read_only && o->write_only)
		return rc_usage_error(err, errlen, "%s",
				      "--read-only and --write-only exclude each other");
	if (o->copy && o->zero_copy)
		return rc_usage_error(err, errlen, "%s",
				      "--copy and --zero-copy exclude each other");
	return 0;
}

void xfer_fmt_size(char *out, size_t outlen, uint64_t bytes)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	unsigned u = 0;

	/* Exact when it divides evenly ("16 MiB"), one decimal otherwise. */
	while (u < 4 && bytes >= (1ull << (10 * (u + 1))) && !(bytes % (1ull << (10 * (u + 1)))))
		u++;
	if (u || bytes < 1024) {
		snprintf(out, outlen, "%" PRIu64 " %s", bytes >> (10 * u), unit[u]);
		return;
	}
	while (u < 4 && bytes >= (1ull << (10 * (u + 1))))
		u++;
	snprintf(out, outlen, "%.1f %s", (double)bytes / (double)(1ull << (10 * u)), unit[u]);
}

int xfer_check_limits(const struct xfer_hello *h, const struct xfer_limits *lim,
		      uint32_t max_msg_sz, char *err, size_t errlen)
{
	uint64_t mem = (uint64_t)h->chunk * h->depth;
	char a[32], b[32], m[32];

	/* Short: the reason travels in the connect reject, which holds at
	 * most XFER_REJECT_MAX bytes of text. */
	xfer_fmt_size(a, sizeof(a), h->chunk);
	if (h->chunk > lim->max_chunk || h->chunk > max_msg_sz) {
		xfer_fmt_size(b, sizeof(b),
			      lim->max_chunk < max_msg_sz ? lim->max_chunk : max_msg_sz);
		snprintf(err, errlen,
			 "chunk %s is over this server's limit of %s; use a smaller -c", a, b);
		return -ERANGE;
	}
	if (h->depth > lim->max_depth) {
		snprintf(err, errlen,
			 "depth %u is over this server's limit of %u; use a smaller -t", h->depth,
			 lim->max_depth);
		return -ERANGE;
	}
	if (mem > lim->max_mem) {
		xfer_fmt_size(b, sizeof(b), mem);
		xfer_fmt_size(m, sizeof(m), lim->max_mem);
		snprintf(err, errlen,
			 "ring of %s x %u = %s is over this server's %s per client; use a smaller "
			 "-c or -t",
			 a, h->depth, b, m);
		return -ERANGE;
	}
	return 0;
}

/* A size as an option value: "1M", "512K", "5000". */
static void opt_size(char *out, size_t outlen, uint64_t v)
{
	if (v && !(v % (1u << 30)))
		snprintf(out, outlen, "%" PRIu64 "G", v >> 30);
	else if (v && !(v % (1u << 20)))
		snprintf(out, outlen, "%" PRIu64 "M", v >> 20);
	else if (v && !(v % 1024))
		snprintf(out, outlen, "%" PRIu64 "K", v >> 10);
	else
		snprintf(out, outlen, "%" PRIu64, v);
}

void xfer_ring_hint(char *hint, size_t len, uint32_t chunk, uint16_t depth, uint64_t limit)
{
	uint64_t budget, c2;
	char small[32];

	/* Leave room for our control buffers and the driver's queues. */
	budget = limit > (2u << 20) ? limit - (1u << 20) : limit / 2;
	if (budget >= 2ull * chunk) {
		opt_size(small, sizeof(small), chunk);
		snprintf(hint, len, "-c %s -t %" PRIu64, small,
			 budget / chunk < depth ? budget / chunk : depth - 1u);
		return;
	}
	/* The largest power of two that fits 4 times. */
	for (c2 = 1u << 30; c2 > XFER_MIN_CHUNK && c2 * 4 > budget; c2 /= 2)
		;
	opt_size(small, sizeof(small), c2);
	if (c2 * 4 <= budget)
		snprintf(hint, len, "-c %s -t 4", small);
	else
		snprintf(hint, len, "%s", "nothing useful fits: raise the limit");
}
