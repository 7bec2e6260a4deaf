#!/usr/bin/env bash
# tools/demo.sh - what `make demo` runs inside the RDMA environment: each
# example's server and client, with the commands shown as they run.
# Needs RDMA_IP (tools/rdma-env sets it). Exits non-zero if any step fails.
set -u
cd "$(dirname "$0")/.." || exit 2
: "${RDMA_IP:?run me through tools/rdma-env (make demo does)}"
work=$(mktemp -d "${TMPDIR:-/tmp}/rdma-demo.XXXXXX")
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
failed=0

# show CMD...: print a command as one would type it.
show() {
	local a out="\$"
	for a in "$@"; do
		case $a in
		*[[:space:]]* | *\'* | "") out+=" '${a//\'/\'\\\'\'}'" ;;
		*) out+=" $a" ;;
		esac
	done
	printf '%s\n' "$out"
}

# start_server NAME CMD...: start in the background, wait (bounded) for
# "listening on ... port N", print its lines as they come; sets PORT.
start_server() {
	local name=$1 i
	shift
	show "$@" "&"
	"$@" >"$work/$name.out" 2>&1 &
	pids+=($!)
	for ((i = 0; i < 150; i++)); do
		PORT=$(sed -n 's/^listening on .* port \([0-9][0-9]*\)$/\1/p' "$work/$name.out")
		[ -n "$PORT" ] && { cat "$work/$name.out"; return 0; }
		sleep 0.1
	done
	echo "demo: $name did not start:"; cat "$work/$name.out"
	return 1
}

# step CMD...: run, show output, note failure (bounded by timeout).
step() {
	step_expect 0 "$@"
}

# step_expect CODE CMD...: the same, for a step that must exit with CODE.
step_expect() {
	local want=$1 rc
	shift
	show "$@"
	timeout 120 "$@" 2>&1
	rc=$?
	[ "$rc" = "$want" ] || { echo "demo: FAILED (exit $rc, expected $want): $*"; failed=1; }
}

# stop_server: SIGTERM the last server started and wait for it.
stop_server() {
	kill -TERM "${pids[-1]}"
	wait "${pids[-1]}" 2>/dev/null
}

# server_log NAME: the server's output, long runs of lines shortened.
server_log() {
	local f=$work/$1.out n
	n=$(wc -l <"$f")
	echo "--- server output:"
	if [ "$n" -le 14 ]; then
		cat "$f"
	else
		head -n 8 "$f"
		echo "    ... ($((n - 12)) more lines) ..."
		tail -n 4 "$f"
	fi
}

# Lines about the environment start with "# " (tests/normalize-transcript
# ignores them: they differ from machine to machine).
echo "# RDMA device ${RDMA_DEV:-?} at $RDMA_IP (${RDMA_ENV_MODE:-?} mode), kernel $(uname -r)"
if [ "${RDMA_ENV_MODE:-}" != device ]; then
	echo "# Soft-RoCE emulates the NIC in software$([ "${RDMA_ENV_MODE:-}" = vm ] && echo ", here inside an emulated VM"):"
	echo "# latencies and rates below are far from real hardware; compare them only with each other."
fi
echo
echo "=== 01_basic-client-server: connect with librdmacm, SEND/RECV messages"
cd 01_basic-client-server || exit 2
if start_server s01 ./rdma-server -p 0; then
	step ./rdma-client "$RDMA_IP" "$PORT"
	step ./rdma-client -m "zero-copy, kernel bypass" "$RDMA_IP" "$PORT"
	step ./rdma-client -n 1000 "$RDMA_IP" "$PORT"
	stop_server
	server_log s01
else
	failed=1
fi
cd ..
echo

echo "=== 02_read-write: one-sided RDMA WRITE and READ into the server's advertised buffer"
cd 02_read-write || exit 2
if start_server s02 ./rdma-server -p 0 -s 4M; then
	step ./rdma-client "$RDMA_IP" "$PORT"
	step ./rdma-client --op write -s 1M -n 50 -t 16 "$RDMA_IP" "$PORT"
	# A wrong rkey is not silent: the lesson shows what really happens
	# and exits 4 (shown), and the server goes on serving.
	step_expect 4 ./rdma-client --inject bad-rkey "$RDMA_IP" "$PORT"
	step ./rdma-client --op read -s 64K -n 50 "$RDMA_IP" "$PORT"
	stop_server
	server_log s02
else
	failed=1
fi
cd ..
echo

echo "=== 03_file-transfer: a pipelined, verified file transfer (put = RDMA WRITE, get = RDMA READ)"
cd 03_file-transfer || exit 2
mkdir -p "$work/root" "$work/local"
head -c 8388611 /dev/urandom >"$work/local/data.bin" # 8 MiB + 3 bytes
if start_server s03 ./rdma-server -p 0 -r "$work/root"; then
	step ./rdma-client --no-progress -p "$PORT" "$work/local/data.bin" "$RDMA_IP:data.bin"
	step ./rdma-client --no-progress -p "$PORT" -c 256K -t 8 "$RDMA_IP:data.bin" "$work/local/copy.bin"
	step cmp "$work/local/data.bin" "$work/local/copy.bin"
	# Without -f an existing destination is refused, and left as it was.
	step_expect 1 ./rdma-client --no-progress -p "$PORT" "$work/local/data.bin" "$RDMA_IP:data.bin"
	stop_server
	server_log s03
else
	failed=1
fi
cd ..
echo
if [ "$failed" = 0 ]; then
	echo "demo: all steps passed"
else
	echo "demo: some steps FAILED"
fi
exit "$failed"
