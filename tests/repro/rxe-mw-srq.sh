#!/usr/bin/env bash
# tests/repro/rxe-mw-srq.sh: run rxe-mw-srq (see rxe-mw-srq.c) as root in
#   tools/rdma-env --kernel K -- tests/repro/rxe-mw-srq.sh
# (make probe-rxe-mw-srq does that for each kernel of REPRO_KERNELS), in
# this order: every case (one line per fact); the link of rxe's netdev set
# down and up while the probe waits for port events; N connects in one
# burst (--burst: 500 and 1100 with ucma's backlog, 64 with a backlog of
# 8); rdma-core's cmtime with -c 256 and -c 1000; last the case that may
# hurt the kernel (--destroy-order). After each step, the kernel's new
# log lines about rxe, warnings and traces ("dmesg:"). Exits 0 when every
# step ran, whatever the kernel answered.
set -u
cd "$(dirname "$0")/../.." || exit 2
BIN=$PWD/build/tests/rxe-mw-srq
[ -x "$BIN" ] || { echo "rxe-mw-srq.sh: $BIN is missing (make repro-build)" >&2; exit 2; }
[ -n "${RDMA_IP:-}" ] || { echo "rxe-mw-srq.sh: RDMA_IP is unset: run it through tools/rdma-env" >&2; exit 2; }
DEV=${RDMA_DEV:-rxe0}
NETDEV=$(rdma link show "$DEV/1" 2>/dev/null | sed -n 's/.* netdev \([^ ]*\).*/\1/p')
CMPORT=7471
seen=$(dmesg | wc -l)

# The kernel log lines since the last call that name rxe or warn.
kernel_log() {
	local now
	now=$(dmesg | wc -l)
	dmesg | tail -n "+$((seen + 1))" | head -n "$((now - seen))" |
		grep -E 'rxe|WARNING|BUG|Call Trace|refcount|[Tt]imed out|infiniband' | sed 's/^/dmesg: /'
	seen=$now
}

# run SECONDS COMMAND...: the command's output, then its exit status.
run() {
	local t=$1
	shift
	echo "## $*"
	timeout "$t" "$@" 2>&1
	echo "exit $?"
	kernel_log
}

echo "kernel $(uname -r); $DEV on ${NETDEV:-?} ($RDMA_IP); ucma max_backlog $(cat /proc/sys/net/rdma_ucm/max_backlog 2>/dev/null || echo '?')"
run 300 "$BIN" "$RDMA_IP"

# Port events: the probe waits (up to 30 s) once it printed "ready".
out=$(mktemp)
echo "## $BIN --port 30 $RDMA_IP, with ip link set $NETDEV down, 2 s, up"
timeout 90 "$BIN" --port 30 "$RDMA_IP" >"$out" 2>&1 &
pid=$!
for _ in $(seq 150); do
	grep -q '^ready' "$out" && break
	sleep 0.2
done
if [ -n "$NETDEV" ] && grep -q '^ready' "$out"; then
	ip link set "$NETDEV" down
	sleep 2
	ip link set "$NETDEV" up
fi
wait "$pid"
rc=$?
cat "$out"
echo "exit $rc"
rm -f "$out"
kernel_log
# The route back: the port is ACTIVE again before the next step.
for _ in $(seq 50); do
	rdma link show "$DEV/1" | grep -q 'state ACTIVE' && break
	sleep 0.2
done

run 600 "$BIN" -t 20000 --burst 500 "$RDMA_IP"
run 900 "$BIN" -t 20000 --burst 1100 "$RDMA_IP"
run 120 "$BIN" -t 40000 --burst 64 --backlog 8 "$RDMA_IP"

# cmtime: its server (-b) in the background, its client (-s) in front.
for n in 256 1000; do
	echo "## cmtime -s $RDMA_IP -p $CMPORT -c $n (server: cmtime -b $RDMA_IP -p $CMPORT)"
	timeout 600 cmtime -b "$RDMA_IP" -p "$CMPORT" >/dev/null 2>&1 &
	srv=$!
	sleep 1
	timeout 600 cmtime -s "$RDMA_IP" -p "$CMPORT" -c "$n" 2>&1
	echo "exit $?"
	kill "$srv" 2>/dev/null
	wait "$srv" 2>/dev/null
	kernel_log
done

run 60 "$BIN" --destroy-order "$RDMA_IP"
sleep 1
kernel_log
exit 0
