#!/usr/bin/env bash
# tests/fuzz/run.sh SECONDS TARGET... - run each libFuzzer target (built by
# `make fuzz-build` into build/fuzz/bin/) for SECONDS on its committed seed
# corpus, and print "ok - fuzz TARGET ..." or "not ok - fuzz TARGET ...".
# New interesting inputs are kept in build/fuzz/corpus/TARGET; a crash
# leaves its input in build/fuzz/crashes/. Exit 1 if any target failed.
# FUZZ_JOBS targets run at once (default: the number of CPUs); each target
# still gets its SECONDS, and the lines come out in the order given.
set -u
cd "$(dirname "$0")/../.." || exit 2
secs=${1:?usage: run.sh SECONDS TARGET...}
shift
jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: FUZZ_JOBS must be a positive number" >&2; exit 2; }

# fuzz_one TARGET: run it, write its ok/not ok line to build/fuzz/TARGET.result.
fuzz_one() {
	local t=$1 bin seeds work crashes log rc runs
	bin=build/fuzz/bin/$t
	seeds=tests/fuzz/corpus/$t
	work=build/fuzz/corpus/$t
	crashes=build/fuzz/crashes/$t
	log=build/fuzz/$t.log
	mkdir -p "$work" "$crashes"
	if [ ! -x "$bin" ]; then
		echo "not ok - fuzz $t: $bin is missing (make fuzz-build)"
		return
	fi
	# The first directory receives new inputs; the seeds stay untouched.
	# Bounded twice: libFuzzer's own limit, and timeout in case it hangs.
	timeout -k 5 $((secs + 60)) "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
		-artifact_prefix="$crashes/" -print_final_stats=1 "$work" "$seeds" >"$log" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	if [ "$rc" = 0 ] && [ -n "$runs" ] && [ "$runs" -gt 0 ]; then
		echo "ok - fuzz $t: $runs inputs in ${secs}s, no crash"
	else
		echo "not ok - fuzz $t: exit $rc; $(grep -m1 -E 'ERROR|SUMMARY|deadly' "$log") (log: $log)"
	fi
}

mkdir -p build/fuzz
running=0
for t in "$@"; do
	rm -f "build/fuzz/$t.result"
	if [ "$running" -ge "$jobs" ]; then
		wait -n
		running=$((running - 1))
	fi
	fuzz_one "$t" >"build/fuzz/$t.result" &
	running=$((running + 1))
done
wait
# A target without a result line (its shell died) fails too.
failed=0
for t in "$@"; do
	if [ -s "build/fuzz/$t.result" ]; then
		cat "build/fuzz/$t.result"
	else
		echo "not ok - fuzz $t: no result (build/fuzz/$t.result is empty)"
	fi
	grep -q '^ok ' "build/fuzz/$t.result" 2>/dev/null || failed=1
done
exit "$failed"
