#!/usr/bin/env bash
# The smoke of `make bench` inside `make test`, so that the bench cannot rot unnoticed: tools/bench
# with BENCH_QUICK=2 (every part, the least data) in this RDMA environment. Its figures mean
# nothing here; what must hold is that every measurement produced a number, every ratio was
# computed and every file it writes parses. Run through tools/rdma-env, which sets RDMA_IP.
# shellcheck source=../lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/../lib.sh"

BENCH=$ROOT/tools/bench
OUT=build/e2e-bench-smoke # relative to ROOT, as tools/bench takes BENCH_OUT

t_quick_bench_every_row() {
	local t0=$SECONDS
	rm -rf "${ROOT:?}/$OUT"
	CLIENT_LIMIT_S=300 run bench env BENCH_QUICK=2 BENCH_OUT="$OUT" "$BENCH"
	echo "    BENCH_QUICK=2 tools/bench took $((SECONDS - t0)) s"
	want_rc bench 0 || return 1
	! grep -q 'WARNING' "$T/bench.err" || fail "bench warned: $(grep 'WARNING' "$T/bench.err" | head -n 3 | tr '\n' '|')" || return 1
	want_out bench '^bench: results in build/e2e-bench-smoke/: ' || return 1
	local why
	why=$("$PYTHON" - "$ROOT/$OUT" 2>&1 <<'EOF'
import csv, json, sys
out = sys.argv[1]
def rows(name, header):
    with open(out + "/" + name, newline="") as f:
        r = list(csv.reader(f))
    assert r and r[0] == header, "%s: header %r" % (name, r[:1])
    return [dict(zip(header, x)) for x in r[1:]]
def positive(v, what):
    x = float(v)
    assert x > 0, "%s: %r is not above 0" % (what, v)
    return x

# Every measurement of BENCH_QUICK=2 is in the raw file, each a number above 0.
raw = rows("bench-raw.csv", ["rep", "name", "value", "unit"])
names = ["01-ours-median", "01-ours-p99", "01-ib_send_lat-typical", "01-ib_send_lat-p99",
         "01-ib_send_lat80-typical", "01-ib_send_lat80-p99",
         "01-event-I80-ours-median", "01-event-I80-ours-p99",
         "01-event-I80-ib_send_lat-typical", "01-event-I80-ib_send_lat-p99",
         "02-ours-write-65536", "02-ib_write_bw-65536", "02-ours-read-65536", "02-ib_read_bw-65536",
         "02-ours-fetch-add", "02-ib_atomic_bw",
         "03-ours-put", "03-ceiling-write", "03-ours-get", "03-ceiling-read", "03-rcopy"]
sweep = ["sweep-%s-%d-4" % (op, c) for op in ("put", "get") for c in (262144, 1048576)]
got = sorted(x["name"] for x in raw)
assert got == sorted(names + sweep), "raw measurements: %r" % got
for x in raw:
    positive(x["value"], x["name"])
    assert x["rep"] == ("0" if x["name"].startswith("sweep-") else "1"), x

# The table: each row has both sides, the ratio ours/anchor, and met agrees with the target.
head = ["id", "what", "ours", "anchor_name", "anchor", "unit", "ratio", "target", "met", "reps",
        "ratio_min", "ratio_max"]
res = rows("bench-results.csv", head)
ids = ["01-latency-median", "01-latency-p99", "01-latency-wire80", "01-event-inline", "02-write-64K", "02-read-64K",
       "02-fetch-add", "03-put-ceiling", "03-get-ceiling", "03-put-rcopy", "03-get-rcopy"]
assert [x["id"] for x in res] == ids, "table rows: %r" % [x["id"] for x in res]
for x in res:
    o, a, r = positive(x["ours"], x["id"]), positive(x["anchor"], x["id"]), positive(x["ratio"], x["id"])
    assert abs(r - o / a) <= 0.0005 + 1e-5 * o / a, "%s: ratio %s, ours/anchor %.4f" % (x["id"], r, o / a)
    t = x["target"]
    want = ("-" if t == "-" else
            "yes" if (r <= float(t[2:]) if t.startswith("<=") else
                      r >= float(t[2:]) if t.startswith(">=") else r > float(t[1:])) else "no")
    assert x["met"] == want, "%s: met %r, expected %r (ratio %s, target %s)" % (x["id"], x["met"], want, r, t)
    assert x["reps"] == "1", x
    # One repetition: its ratio is the whole spread.
    assert x["ratio_min"] == x["ratio"] == x["ratio_max"], x

# The JSON holds the same rows.
d = json.load(open(out + "/bench-results.json"))
assert d["quick"] is True and d["repetitions"] == 1 and d["nodes"] == 1 and d["seconds"] > 0, d
assert d["kernel"] and d["device"] and d["mode"], d
assert [j["id"] for j in d["results"]] == ids, d["results"]
for j, x in zip(d["results"], res):
    for k in ("ours", "anchor", "ratio", "ratio_min", "ratio_max"):
        assert j[k] == float(x[k]), (k, j, x)
    assert j["met"] == {"yes": True, "no": False, "-": None}[x["met"]], (j, x)

# The sweep as a table and as a plot.
sw = rows("bench-sweep.csv", ["op", "chunk", "depth", "mib_s"])
assert sorted((x["op"], int(x["chunk"]), x["depth"]) for x in sw) == \
    sorted((op, c, "4") for op in ("put", "get") for c in (262144, 1048576)), sw
for x in sw:
    positive(x["mib_s"], "sweep " + str(x))
assert open(out + "/bench-sweep.png", "rb").read(8) == b"\x89PNG\r\n\x1a\n", "bench-sweep.png is no PNG"
EOF
	) || fail "bench output in $OUT: $(tail -n 3 <<<"$why" | tr '\n' '|' | cut -c1-600)"
}

# The polling lab's smoke (tools/polling-lab, LAB_QUICK=1 with 100 round trips): every mode ran,
# its row has a median, a p99 and CPU figures that are numbers ("outside", a difference of two
# counts, may be below 0), and the PNG was drawn. ~8 s.
t_polling_lab_quick() {
	local out=build/e2e-polling-lab t0=$SECONDS
	rm -rf "${ROOT:?}/$out"
	run lab env LAB_QUICK=1 LAB_N=100 LAB_OUT="$out" "$ROOT/tools/polling-lab"
	echo "    LAB_QUICK=1 tools/polling-lab took $((SECONDS - t0)) s"
	want_rc lab 0 || return 1
	want_out lab '^polling-lab: results in build/e2e-polling-lab/: ' || return 1
	local m
	for m in busy event adaptive; do
		want_out lab "^$m +64 +[0-9.]+ +[0-9.]+ \\| +[0-9.]+ +[0-9.]+ +[0-9.]+ +-?[0-9.]+ +[0-9.]+ +[0-9.]+$" || return 1
	done
	[ "$(head -c 8 "$ROOT/$out/polling-lab.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] ||
		fail "$out/polling-lab.png is no PNG" || return 1
	[ "$(wc -l <"$ROOT/$out/polling-lab.csv")" = 4 ] || fail "polling-lab.csv: $(cat "$ROOT/$out/polling-lab.csv")"
}

# Run alone (tests/lib.sh): they measure speed, and busy polling takes both CPUs.
ALONE_TESTS="all"
run_tests t_quick_bench_every_row t_polling_lab_quick
