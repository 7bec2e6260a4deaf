#!/usr/bin/env bash
# tests/repro/rxe-livelock.sh [KERNEL...]: does a Soft-RoCE node stop making
# progress after the rxe-read-send bug has struck several times in one boot?
# Runs on the host (make repro-rxe-livelock). For each kernel (default
# $REPRO_KERNELS, else "6.1 6.12 7") it boots two VMs and runs the verbs-only
# rxe-read-send reproducer's `mix` case (READs and SENDs on one QP, see
# rxe-read-send.c) REPRO_ROUNDS times (default 12) at 1% netem loss. When a
# guest prints nothing and writes no heartbeat for RDMA_ENV_WATCHDOG seconds
# (default here 120), rdma-env stops it: that is the livelock. One line per
# kernel, also appended to $REPRO_RESULTS (default build/repro-rxe-livelock.txt):
#   repro rxe-livelock kernel 7.3.4+deb13-amd64: livelock: node 1 stopped during mix run 6 (5 runs finished)
#   repro rxe-livelock kernel 6.12.95+deb12-amd64: no livelock in 12 mix runs (bug in 12)
# The guests run with loglevel=7 and their logs are kept (RDMA_ENV_KEEP=1):
# the line names the console log, where the kernel's WARNING and any trace are.
# Exit: 0 when every kernel's run ended either way, 1 when one could not run.
set -u
cd "$(dirname "$0")/../.." || exit 1
KERNELS=("$@")
[ ${#KERNELS[@]} -gt 0 ] || read -ra KERNELS <<<"${REPRO_KERNELS:-6.1 6.12 7}"
ROUNDS=${REPRO_ROUNDS:-12}
OUT=${REPRO_RESULTS:-$PWD/build/repro-rxe-livelock.txt}
LOG=$(mktemp "${TMPDIR:-/tmp}/rxe-livelock.XXXXXX")
trap 'rm -f "$LOG"' EXIT
status=0
mkdir -p "$(dirname "$OUT")"
for k in "${KERNELS[@]}"; do
	RDMA_ENV_WATCHDOG=${RDMA_ENV_WATCHDOG:-120} RDMA_ENV_KEEP=1 RDMA_ENV_APPEND=loglevel=7 \
		RDMA_ENV_PASS="REPRO_CASES REPRO_LOSS REPRO_ROUNDS REPRO_RESULTS" \
		REPRO_CASES=mix REPRO_LOSS=1% REPRO_ROUNDS=$ROUNDS REPRO_RESULTS=/dev/null \
		tools/rdma-env -n 2 --kernel "$k" -t $((ROUNDS * 60 + 240)) -- \
		tests/repro/rxe-read-send.sh >"$LOG" 2>&1
	rc=$?
	kver=$(grep -o 'kernel [0-9][^ ,]*' "$LOG" | head -n1 | cut -d' ' -f2)
	runs=$(grep -c ']   loss 1% mix: ' "$LOG")  # one line per run (not the summary)
	bugs=$(grep -c ']   loss 1% mix: bug in' "$LOG")
	console=$(grep -o 'logs kept in [^ ]*node1' "$LOG" | head -n1 | cut -d' ' -f4)
	if grep -q 'node1: watchdog:' "$LOG"; then
		line="livelock: node 1 stopped during mix run $((runs + 1)) ($runs runs finished, bug in $bugs); console: $console/console.log"
	elif [ "$rc" = 0 ] && [ "$runs" = "$ROUNDS" ]; then
		line="no livelock in $runs mix runs (bug in $bugs)"
	else
		line="did not run to the end (rdma-env exit $rc, $runs runs): $(tail -n 3 "$LOG" | tr '\n' ' ')"
		status=1
	fi
	echo "repro rxe-livelock kernel ${kver:-$k}: $line" | tee -a "$OUT"
done
exit $status
