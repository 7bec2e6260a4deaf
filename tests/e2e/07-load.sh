#!/usr/bin/env bash
# End-to-end load test: many clients at once against one 03 server and one
# 01 server, all verified, and afterwards the servers hold no more than
# before: the same RDMA resources (rdma resource show: pd, cq, qp, cm_id,
# mr, ctx), the same open files, and no memory that grows from one round
# of clients to the next. Then the slot service built from common/'s set
# alone (tests/alone/): clients at once on one event loop, one CQ, one SRQ,
# one region and a window each. Run through tools/rdma-env.
# shellcheck source=../lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/../lib.sh"

S1=$ROOT/01_basic-client-server/rdma-server
C1=$ROOT/01_basic-client-server/rdma-client
S3=$ROOT/03_file-transfer/rdma-server
C3=$ROOT/03_file-transfer/rdma-client
CT=(--timeout 20) # generous: 11 clients share the VM's two CPUs
W=$(mktemp -d "${TMPDIR:-/tmp}/rdma-e2e-07.XXXXXX")
trap 'cleanup_test; rm -rf "$T" "$W"' EXIT
# How much a server's resident memory may grow from one round of clients
# to the next. Not zero: glibc keeps freed memory in per-thread arenas for
# reuse (each client thread may get one), and pages touched once stay
# resident until trimmed. A leak of the per-client ring (64 KiB x 16) or of
# the per-connection buffers would add megabytes every round.
RSS_SLACK_KB=4096

# resources: the RDMA resources of the whole VM (only our two servers
# should hold any between rounds), without the SRQs.
resources() { rdma_resources | sed 's/ *srq [0-9]*//'; }

# server_state NAME: "rss KB fds N" of a running server.
server_state() {
	local pid=${PID[$1]} rss fds
	rss=$(awk '$1 == "VmRSS:" { print $2 }' "/proc/$pid/status")
	fds=$(ls "/proc/$pid/fd" | wc -l)
	echo "rss $rss fds $fds"
}

# round N: 4 puts and 4 gets of 8 MiB (03) and 3 clients of 01 with 300
# messages each, all at once; every one must succeed and verify.
round() {
	local n=$1 i
	for i in 1 2 3 4; do
		spawn put$i "$C3" "${CT[@]}" -q "$W/local/p$i" "$RDMA_IP:p$i-$n" -p "$P3"
		spawn get$i "$C3" "${CT[@]}" -q -p "$P3" "$RDMA_IP:g$i" "$W/local/g$i-$n"
	done
	for i in 1 2 3; do
		spawn b$i "$C1" "${CT[@]}" -n 300 -m "load $i" "$RDMA_IP" "$P1"
	done
	for i in 1 2 3 4; do
		wait_exit put$i 180
		want_rc put$i 0 || return 1
		cmp -s "$W/local/p$i" "$W/root/p$i-$n" || fail "round $n: put $i stored different data" || return 1
		wait_exit get$i 180
		want_rc get$i 0 || return 1
		cmp -s "$W/root/g$i" "$W/local/g$i-$n" || fail "round $n: get $i fetched different data" || return 1
		rm -f "$W/root/p$i-$n" "$W/local/g$i-$n"
	done
	for i in 1 2 3; do
		wait_exit b$i 180
		want_rc b$i 0 || return 1
		want_out b$i "^verified 300 of 300 replies$" || return 1
	done
}

# settled WANT: until the RDMA resources are back to WANT, at most 15 s.
settled() { resources_settle "$1" 15 resources; }

t_eleven_clients_at_once_then_nothing_left() {
	local i base r0 s0 s1 s2 grow x y
	mkdir -p "$W/root" "$W/local"
	for i in 1 2 3 4; do
		head -c $((8 << 20)) /dev/urandom >"$W/local/p$i"
		head -c $((8 << 20)) /dev/urandom >"$W/root/g$i"
	done
	base=$(resources)
	start_server s3 "$S3" -r "$W/root" --max-clients 16 || return 1
	P3=$PORT
	start_server s1 "$S1" --max-clients 16 || return 1
	P1=$PORT
	# Warm up: one of each, so that what stays allocated for reuse (the
	# first thread's arena, the listener) is in the baseline.
	run w1 "$C3" "${CT[@]}" -q "$W/local/p1" "$RDMA_IP:warm" -p "$P3"
	want_rc w1 0 || return 1
	run w2 "$C1" "${CT[@]}" -n 10 "$RDMA_IP" "$P1"
	want_rc w2 0 || return 1
	r0=$(resources)
	settled "$r0" || return 1
	s0="$(server_state s3) / $(server_state s1)"
	round 1 || return 1
	settled "$r0" || return 1
	s1="$(server_state s3) / $(server_state s1)"
	round 2 || return 1
	settled "$r0" || return 1
	s2="$(server_state s3) / $(server_state s1)"
	echo "    RDMA resources: before the servers '$base'; with the servers idle '$r0', after each round the same"
	echo "    03 / 01 server: warm $s0; after round 1 $s1; after round 2 $s2"
	# The same open files after each round; memory does not keep growing.
	[ "$(sed 's/rss [0-9]* //g' <<<"$s0")" = "$(sed 's/rss [0-9]* //g' <<<"$s2")" ] ||
		fail "open files changed: $s0 -> $s2" || return 1
	read -ra x <<<"$s1"
	read -ra y <<<"$s2"
	# Under ASan, freed memory waits in its quarantine (up to 256 MiB) to
	# catch use after free, so RSS grows by design; LeakSanitizer checks
	# for leaks instead when the servers exit (stop_server wants exit 0).
	[ -n "${SANITIZE:-}" ] && x=() && y=()
	for i in ${x[1]:+1 6}; do # the rss fields of the 03 and the 01 server
		grow=$((y[i] - x[i]))
		[ "$grow" -le "$RSS_SLACK_KB" ] ||
			fail "a server's RSS grew by $grow kB from round 1 to round 2 (limit $RSS_SLACK_KB): $s1 -> $s2" ||
			return 1
	done
	# Each server logged every client as done.
	[ "$(grep -c "^put 'p[1-4]-[12]' from .* verified, stored$" "$T/s3.out")" = 8 ] ||
		fail "the 03 server did not log 8 stored puts: $(tail_of "$T/s3.out" 4)" || return 1
	[ "$(grep -c "^get 'g[1-4]' to .* verified by the client$" "$T/s3.out")" = 8 ] ||
		fail "the 03 server did not log 8 verified gets" || return 1
	[ "$(grep -c 'closed after 300 messages' "$T/s1.out")" = 6 ] ||
		fail "the 01 server did not log 6 sessions of 300 messages" || return 1
	stop_server s3 && stop_server s1 || return 1
	# With the servers gone, the VM holds what it held before them.
	settled "$base"
}

SA=$ROOT/build/tests/alone-server
CA=$ROOT/build/tests/alone-client

# The set rdma-common.h names, alone (tests/alone/alone.h): first a client
# that WRITEs one byte past its slot through its own window, which must
# be refused (each slot is a region of its own: on Soft-RoCE a window
# bounds only the QP, not the range, so with one region for all slots
# that WRITE landed in the next client's slot); then 6 clients at
# once on one event loop, each verified through a window of its own over
# its slot (a fresh rkey each: no two the same), the SRQ's limit event
# seen, each client disconnecting after waiting for the server's
# DISCONNECTED (no second wait: a wait that did not record it would end
# in "no DISCONNECTED within"); a HELLO asking for more than a slot is
# rejected with the reason. Afterwards the server holds what it held
# idle (each client's QP, id and window released), and exits 0 on
# SIGTERM, every release checked; one that leaves a region on the PD
# (--keep-region) exits 1, saying that closing the device failed.
t_set_alone_serves_many_on_shared_resources() {
	local idle i rkeys port
	start_server sa "$SA" -b "$RDMA_IP" -c 8 || return 1
	port=$PORT
	ASAN_OPTIONS=detect_leaks=0 start_server sk "$SA" -b "$RDMA_IP" --keep-region || return 1
	idle=$(resources)
	run beyond "$CA" --timeout 10000 --beyond "$RDMA_IP" "$port"
	want_rc beyond 0 || return 1
	want_out beyond "^a WRITE 1 byte past the slot: remote access error, as it must be$" || return 1
	for i in 1 2 3 4 5 6; do
		spawn a$i "$CA" --timeout 10000 -s $((i * 5000)) "$RDMA_IP" "$port"
	done
	spawn big "$CA" -s 100000 "$RDMA_IP" "$port"
	for i in 1 2 3 4 5 6; do
		wait_exit a$i 60
		[ "$RC" != 124 ] || fail "client a$i did not exit within 60 s: $STUCK; $(tail_of "$T/a$i.err")" || return 1
		want_rc a$i 0 || return 1
		want_out a$i "^wrote $((i * 5000)) bytes through window rkey 0x[0-9a-f]+: checksum 0x[0-9a-f]{16} the same as the server's$" || return 1
		want_out a$i "^disconnected in [0-9]+ ms$" || return 1
	done
	wait_exit big 60
	want_rc big 1 || return 1
	want_err big "the server rejected the connection: asks for 100000 bytes, a slot has 65536$" || return 1
	[ "$(count_out sa " bytes in slot [0-7] through window rkey 0x[0-9a-f]+, checksum 0x[0-9a-f]{16} the same as the client's$")" = 6 ] ||
		fail "the server did not verify 6 clients: $(tail_of "$T/sa.out" 4)" || return 1
	rkeys=$(sed -n 's/.* through window rkey \(0x[0-9a-f]*\),.*/\1/p' "$T/sa.out" | sort -u | wc -l)
	[ "$rkeys" = 6 ] || fail "6 clients, $rkeys different window rkeys" || return 1
	want_out sa "^async event SRQ limit reached$" || return 1
	settled "$idle" || return 1
	stop_server sa || return 1
	kill -TERM "${PID[sk]}"
	wait_exit sk 10
	want_rc sk 1 || return 1
	want_err sk "closing the device: ibv_dealloc_pd: Device or resource busy; hint: a region or window is still on the PD"
}

# Run alone (tests/lib.sh): they count the whole VM's RDMA resources.
ALONE_TESTS="all"
run_tests t_eleven_clients_at_once_then_nothing_left t_set_alone_serves_many_on_shared_resources
