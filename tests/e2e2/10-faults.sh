#!/usr/bin/env bash
# Two-node fault tests: 01, 02 and 03 between two VMs while the link loses,
# delays or reorders packets (netem on both nodes), while the server is
# killed mid-transfer, and while the client is killed mid-transfer (the
# link going down is 99-link-down.sh). Node 1 runs the clients and the
# tests; node 2 runs the servers when node 1 asks (tests/e2e2/lib2.sh).
# Run in both nodes of `tools/rdma-env -n 2` (tests/e2e2/run.sh does).
#
# What must hold: every transfer either finishes with verified data, or
# fails with exit 1 within its --timeout (plus a margin); never a hang,
# never success with wrong data, never a temporary file left behind.
# shellcheck source=../lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/../lib.sh"
P2=f10
# shellcheck source=lib2.sh
. "$(dirname "$0")/lib2.sh"

if [ "$RDMA_NODE" = 2 ]; then
	agent_serve
	exit $?
fi

R2=/tmp/f10-root # the 03 server's directory, on node 2
W=$(mktemp -d "${TMPDIR:-/tmp}/f10.XXXXXX")
trap 'cleanup_test; KEEP2=(); cleanup2; netem_off; agent_quit; rm -rf "$T" "$W"' EXIT

# netem_both "ARGS": the same netem qdisc on eth0 of both nodes (both
# directions of the link); "" removes it.
#
# limit 10240: a queue as long as that of the qdisc netem replaces
# (fq_codel, 10240 packets, in these VMs). With netem's default of 1000,
# the queue overflowed under 02's 4 MiB READ (4096 response packets at
# once), which is the sender dropping its own packets, not the loss asked
# for, and Soft-RoCE on Linux 6.1 handles that badly: it logs "Failed
# sending ACK" and answers READs with RNR NAKs, and at 1% loss 03's get
# failed (its QP in the error state with no error completion; 2 of 22
# rounds) or 02's READ stalled for 40 s (1 of 4 rounds with a CPU hog in
# both VMs). With a limit of 10000: 8 of 8 such rounds verified, and no
# send errors.
netem_both() {
	tc qdisc del dev eth0 root 2>/dev/null
	on2 "tc qdisc del dev eth0 root 2>/dev/null; true"
	[ -z "$1" ] && return 0
	# shellcheck disable=SC2086 # one word per netem argument
	tc qdisc add dev eth0 root netem limit 10240 $1 || fail "tc qdisc add netem $1 failed" || return 1
	on2 "tc qdisc add dev eth0 root netem limit 10240 $1" ||
		fail "node 2: tc netem $1: $(tail_of "$T/on2.out")"
}
netem_off() { netem_both "" >/dev/null 2>&1; }

# no_temp2: no temporary file (.*.part) left in the 03 server's directory.
no_temp2() {
	on2 "find $R2 -maxdepth 1 -name '.*.part' | head -n3" || return 1
	[ ! -s "$T/on2.out" ] && return 0
	fail "temporary files left on node 2: $(tail_of "$T/on2.out")"
}

t_servers_start() {
	on2 "rm -rf $R2 && mkdir -p $R2 && head -c $((16 << 20)) /dev/urandom >$R2/src16" || return 1
	start_server2 srv1 "$B1/rdma-server" || return 1
	SPORT[01]=$PORT
	start_server2 srv2 "$B2/rdma-server" -s 4M || return 1
	SPORT[02]=$PORT
	start_server2 srv3 "$B3/rdma-server" -r "$R2" || return 1
	SPORT[03]=$PORT
	KEEP2=(srv1 srv2 srv3) # for the whole file, not one test
	head -c $((16 << 20)) /dev/urandom >"$W/data16"
	# The QP got the retry settings common/ chose (finite, 67 ms timer).
	run v "$B1/rdma-client" -v "$PEER" "${SPORT[01]}"
	want_rc v 0 || return 1
	want_err v "QP [0-9]+: ack timeout 16 \(268 ms\), retry_cnt 6, rnr_retry 6" || return 1
	echo "    servers on node 2: 01 port ${SPORT[01]}, 02 port ${SPORT[02]}, 03 port ${SPORT[03]}"
}

# all_three LABEL "NETEM ARGS": 01 with 200 messages, 02 write+read of
# 4 MiB, 03 put and get of 16 MiB, all verified, under that netem.
# 02 gets a longer --timeout: its 4 MiB READ is one operation, and each
# lost packet makes Soft-RoCE resend the rest of it (go-back-N): at 1%
# loss it took up to ~25 s. 03 uses 64 KiB x 8 chunks for the same reason:
# short READs, little in flight to resend after each loss.
all_three() {
	local r
	netem_both "$2" || return 1
	all_three_body "$@"
	r=$?
	netem_both "" || return 1
	return $r
}

# 01 and 02 run alongside 03's put and get: the same link, less waiting.
all_three_body() {
	local t0=$SECONDS
	spawn c1 "$B1/rdma-client" "${CT[@]}" -n 200 "$PEER" "${SPORT[01]}"
	spawn c2 "$B2/rdma-client" --timeout 40 --op both -s 4M "$PEER" "${SPORT[02]}"
	run put "$B3/rdma-client" "${CT[@]}" -c 64K -t 8 "$W/data16" "$PEER:$1" -p "${SPORT[03]}"
	want_rc put 0 || with_log2 srv3 || return 1
	[ "$(sha2 "$R2/$1")" = "$(sha1 "$W/data16")" ] || fail "the file stored on node 2 differs" || return 1
	run get "$B3/rdma-client" "${CT[@]}" -c 64K -t 8 -p "${SPORT[03]}" "$PEER:$1" "$W/got-$1"
	if ! want_rc get 0; then
		rxe_known_bug && return 77
		with_log2 srv3
		return 1
	fi
	[ "$(sha1 "$W/got-$1")" = "$(sha1 "$W/data16")" ] || fail "the file fetched differs" || return 1
	rm -f "$W/got-$1"
	wait_exit c1 60
	want_rc c1 0 || with_log2 srv1 || return 1
	want_out c1 "^verified 200 of 200 replies$" || return 1
	wait_exit c2 120
	want_rc c2 0 || with_log2 srv2 || return 1
	want_out c2 "^verified 4194304 bytes$" || return 1
	echo "    netem ${2:-none}: all verified in $((SECONDS - t0))s: 01 $(sed -n 's/^round-trip latency (us): min [0-9.]* median \([0-9.]*\).*/median \1 us/p' "$T/c1.out");" \
		"03 $(grep -o 'put.*MiB/s' "$T/put.out"); $(grep -o 'get.*MiB/s' "$T/get.out")"
}

# rxe_known_bug: after a failed get that says Soft-RoCE failed its QP
# silently (docs/kernels.md), run that bug's reproducer under the same
# netem: if it shows the bug on this kernel now, set the skip REASON and
# return 0; else 1, REASON unchanged (the test fails).
rxe_known_bug() {
	local bin=$ROOT/build/tests/rxe-read-send why=$REASON
	grep -q 'Soft-RoCE moved the QP to the error state' "$T/get.err" && [ -x "$bin" ] || return 1
	if start_server2 rrs "$bin" server --idle 120; then
		run rr "$bin" client "$PEER" -p "$PORT" -n 300 --timeout 60
		if [ "$RC" = 3 ]; then
			REASON="rxe-read-send: rdma_rxe bug on Linux $(uname -r | cut -d. -f1,2), see tests/repro/rxe-read-send"
			return 0
		fi
		why="$why; the reproducer tests/repro/rxe-read-send did not show the bug (exit $RC: $(tail_of "$T/rr.out" 1))"
	fi
	REASON=$why
	return 1
}

t_no_faults() { all_three clean ""; }
t_loss_half_percent() { all_three loss05 "loss 0.5%"; }
t_loss_one_percent() { all_three loss1 "loss 1%"; }
# No jitter: with it netem reorders most packets, and RC (go-back-N, a
# NAK for every gap) cannot make progress. Here 1% of the packets jump
# ahead of the others, which are delayed by 2 ms.
t_delay_and_reorder() { all_three reorder "delay 2ms reorder 1%"; }

t_server_killed_mid_put() {
	local t0 rk=/tmp/f10-kill
	on2 "rm -rf $rk && mkdir -p $rk" || return 1
	start_server2 srvk "$B3/rdma-server" -r "$rk" || return 1
	# 4 KiB chunks, one at a time: slow enough to be caught in the middle.
	spawn cli "$B3/rdma-client" "${CT[@]}" -c 4K -t 1 "$W/data16" "$PEER:k" -p "$PORT"
	wait_temp2 "$rk" 20 || return 1
	kill2 srvk KILL
	t0=$SECONDS
	wait_exit cli $((10 + MARGIN))
	if [ "$RC" = 0 ]; then
		# Finished before the kill landed: then it must be all there.
		[ "$(sha2 "$rk/k")" = "$(sha1 "$W/data16")" ] || fail "success reported, the file differs" || return 1
		REASON="the put finished before the server was killed"
		return 77
	fi
	want_rc cli 1 || return 1
	within "the client after the server died" $((10 + MARGIN)) "$t0" || return 1
	want_err cli "put 'k': .*(disconnect|failed|no completion|retry)" || return 1
	# What SIGKILL leaves: the server's temporary file (nothing can remove
	# it), never a file under the final name.
	on2 "ls -A $rk" || return 1
	! grep -qx k "$T/on2.out" || fail "a file appeared under the final name" || return 1
	echo "    client exit 1 $((SECONDS - t0))s after the kill: $(tail -n1 "$T/cli.err")"
	echo "    left in the killed server's directory: $(tr '\n' ' ' <"$T/on2.out")"
}

t_server_killed_mid_get() {
	local t0 rk=/tmp/f10-kill2
	on2 "rm -rf $rk && mkdir -p $rk && head -c $((16 << 20)) /dev/urandom >$rk/big" || return 1
	start_server2 srvk2 "$B3/rdma-server" -r "$rk" || return 1
	mkdir -p "$W/get"
	spawn cli "$B3/rdma-client" "${CT[@]}" -c 4K -t 1 -p "$PORT" "$PEER:big" "$W/get/big"
	wait_local_temp "$W/get" 20 || return 1
	kill2 srvk2 KILL
	t0=$SECONDS
	wait_exit cli $((10 + MARGIN))
	want_rc cli 1 || return 1
	within "the client after the server died" $((10 + MARGIN)) "$t0" || return 1
	# The client removes its own temporary file; nothing under the name.
	no_temp "$W/get" || return 1
	[ ! -e "$W/get/big" ] || fail "a file appeared under the final name"
}

t_client_killed_mid_put() {
	spawn cli "$B3/rdma-client" "${CT[@]}" -c 4K -t 1 "$W/data16" "$PEER:ck" -p "${SPORT[03]}"
	wait_temp2 "$R2" 20 || return 1
	kill -9 "${PID[cli]}"
	wait_exit cli 5
	# The server notices (DISCONNECTED, or its own 10 s timeout), removes
	# its temporary file, and serves the next client.
	wait_no_temp2 "$R2" 20 || return 1
	want_err2 srv3 "put 'ck': .*removed the partial file" || return 1
	on2 "[ ! -e $R2/ck ]" || fail "a file appeared under the final name" || return 1
	alive2 srv3
}

t_servers_survive_and_stop() {
	alive2 srv1 && alive2 srv2 && alive2 srv3 || return 1
	no_temp2 || return 1
	stop_server2 srv1 && stop_server2 srv2 && stop_server2 srv3
}

run_tests t_servers_start t_no_faults t_loss_half_percent t_loss_one_percent t_delay_and_reorder \
	t_server_killed_mid_put t_server_killed_mid_get t_client_killed_mid_put \
	t_servers_survive_and_stop
