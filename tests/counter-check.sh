#!/usr/bin/env bash
# make counter-check: 16 of 02's clients x 10,000 fetch-adds of 1 on the
# one word of 04's rdma-server --counter, 10 runs, each on a fresh server.
# PASS when every run's server prints "counter at exit: 160000" and every
# client verified its originals (--shared). Run through tools/rdma-env.
set -u
cd "$(dirname "$0")/.." || exit 2
: "${RDMA_IP:?run me through tools/rdma-env}"
S=04_many-clients/rdma-server
C=02_read-write/rdma-client
N=${COUNTER_CLIENTS:-16} K=${COUNTER_ADDS:-10000} RUNS=${COUNTER_RUNS:-10}
W=$(mktemp -d "${TMPDIR:-/tmp}/counter-check.XXXXXX")
trap 'kill $SP 2>/dev/null; rm -rf "$W"' EXIT
echo "counter-check: kernel $(uname -r), $N clients x $K fetch-adds, $RUNS runs"
pass=0 totals=""
for ((r = 1; r <= RUNS; r++)); do
	$S -p 0 --counter --max-clients "$N" --timeout 30 >"$W/srv.out" 2>"$W/srv.err" &
	SP=$!
	port=""
	for ((i = 0; i < 150; i++)); do
		port=$(sed -n 's/^listening on .* port \([0-9]*\)$/\1/p' "$W/srv.out")
		[ -n "$port" ] && break
		sleep 0.1
	done
	pids=()
	for ((i = 0; i < N; i++)); do
		timeout 300 $C --timeout 30 --op fetch-add --shared -n "$K" "$RDMA_IP" "$port" \
			>"$W/c$i.out" 2>"$W/c$i.err" &
		pids+=($!)
	done
	ok=0
	for p in "${pids[@]}"; do wait "$p" && ok=$((ok + 1)); done
	kill -TERM $SP
	wait $SP
	src=$?
	total=$(sed -n 's/^counter at exit: //p' "$W/srv.out")
	totals+="${totals:+ }${total:-none}"
	if [ "$ok" = "$N" ] && [ "$src" = 0 ] && [ "$total" = $((N * K)) ]; then
		pass=$((pass + 1))
	else
		echo "run $r: $ok of $N clients ok, server exit $src, counter ${total:-none}"
		tail -n 2 "$W"/c*.err "$W/srv.err" 2>/dev/null | head -20
	fi
done
echo "totals: $totals (want $((N * K)) each)"
if [ "$pass" = "$RUNS" ]; then
	echo "PASS: $RUNS of $RUNS runs ended at exactly $((N * K)) on $(uname -r)"
	exit 0
fi
echo "FAIL: $pass of $RUNS runs ended at exactly $((N * K)) on $(uname -r)"
exit 1
