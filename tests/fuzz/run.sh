#!/usr/bin/env bash
# tests/fuzz/run.sh SECONDS TARGET... - run each libFuzzer target (built by
# `make fuzz-build` into build/fuzz/bin/) for SECONDS on its committed seed
# corpus, and print "ok - fuzz TARGET ..." or "not ok - fuzz TARGET ...".
# New interesting inputs are kept in build/fuzz/corpus/TARGET; a crash
# leaves its input in build/fuzz/crashes/. Exit 1 if any target failed.
set -u
cd "$(dirname "$0")/../.." || exit 2
secs=${1:?usage: run.sh SECONDS TARGET...}
shift
failed=0
for t in "$@"; do
	bin=build/fuzz/bin/$t
	seeds=tests/fuzz/corpus/$t
	work=build/fuzz/corpus/$t
	crashes=build/fuzz/crashes/$t
	log=build/fuzz/$t.log
	mkdir -p "$work" "$crashes"
	if [ ! -x "$bin" ]; then
		echo "not ok - fuzz $t: $bin is missing (make fuzz-build)"
		failed=1
		continue
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
		failed=1
	fi
done
exit "$failed"
