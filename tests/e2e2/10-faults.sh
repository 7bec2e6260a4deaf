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
	on2 "rm -rf $R2 && mkdir -p $R2 && head -c $((16 << 20)) /dev/urandom >$R2/src16 &&
		head -c $((4 << 20)) /dev/urandom >$R2/src4" || return 1
	start_server2 srv1 "$B1/rdma-server" || return 1
	SPORT[01]=$PORT
	start_server2 srv2 "$B2/rdma-server" -s 4M || return 1
	SPORT[02]=$PORT
	start_server2 srv3 "$B3/rdma-server" -r "$R2" || return 1
	SPORT[03]=$PORT
	KEEP2=(srv1 srv2 srv3) # for the whole file, not one test
	head -c $((16 << 20)) /dev/urandom >"$W/data16"
	head -c $((4 << 20)) /dev/urandom >"$W/data4"
	# The QP got the retry settings common/ chose (perftest's count, 67 ms timer).
	run v "$B1/rdma-client" -v "$PEER" "${SPORT[01]}"
	want_rc v 0 || return 1
	want_err v "QP [0-9]+: ack timeout 14 \(67 ms\), retry_cnt 7, rnr_retry 6" || return 1
	echo "    servers on node 2: 01 port ${SPORT[01]}, 02 port ${SPORT[02]}, 03 port ${SPORT[03]}"
}

# all_three LABEL "NETEM ARGS" ["02 ARGS" ...]: 03 put and get of 4
# MiB (16 until 2026-12-04: 03's chunk, depth and waits are the same at
# either size, and 1% of 4 MiB's 4,096 packets of 1 KiB is still about
# 40 lost), 01 with 200 messages, then one 02 client for each "02 ARGS"
# in turn (default: one write and one read of 4 MiB), all verified, under that
# netem, with the options in O2 and O3 (default options when empty), and
# -v: it traces each wait that went on because the link was still
# resending. One client at a time, as perftest runs in the benchmarks:
# these 1-vCPU nodes are emulated (TCG) on a 2-core host, and Soft-RoCE's
# ACKs need the peer's CPU. Beside 03, 02's 16 WRITEs of 4 MiB kept a
# node busy past the 7 x 67 ms the transport waits for an ACK (6.12, 0.5%
# loss), and 03 failed with RETRY_EXC_ERR: a starved CPU, not the loss (a
# NIC acknowledges without the CPU); in one CI run (2026-12-02) a put
# beside 01's 200 round trips failed the same way at 1%. Under loss a wait
# may last longer than --timeout: 02's 4 MiB READ is one operation, and
# each lost packet makes Soft-RoCE resend the rest of it (go-back-N).
# While the port's retransmission counters rise, a wait goes on, within
# the connection's budget of 3 x --timeout (common/rc-counters.c); the
# loss rounds run 02 and 03 with their defaults to test that.
O2=()
O3=()
all_three() { with_netem "$2" all_three_body "$@"; }

# with_netem "NETEM ARGS" FUNC [ARGS...]: FUNC under that netem on both
# nodes, which is removed after it whatever FUNC returned; FUNC's status.
with_netem() {
	local r args=$1
	shift
	netem_both "$args" || return 1
	"$@"
	r=$?
	netem_both "" || return 1
	link_alive "netem $args" || return 1
	return $r
}

# link_alive WHEN: the link passes packets once netem is gone (ping, which
# also needs ARP). Twice so far it did not (Linux 6.1, 2026-12-02 after a
# 1% loss round; in CI, after the 0.5% round): no ARP
# was answered for the rest of the run, and every later test failed. The
# cause is below our programs (the qemu link or a guest's virtio-net: a
# kernel warning with a call trace was seen the first time, not kept) and
# not yet known. So the check prints what both nodes show of eth0 (its
# counters, qdisc, neighbours, its TX queue's watchdog count and the
# virtio interrupts), the RDMA link and the kernels' last messages, then
# takes eth0 down and up on both nodes, which restarts the guests' NAPI
# polling of both virtqueues (a lost interrupt), and pings again. If that
# brings the link back, the run goes on and the round's own result
# stands (its transfers had finished, verified or failed, before); the
# line "link revived" says it happened. If not, the test fails.
link_alive() {
	if link_pings 5; then
		return 0
	fi
	echo "    the link passes no packets after $1; node 1:"
	link_state 2>&1 | sed 's/^/    | /'
	on2 "$(declare -f link_state); link_state 2>&1"
	echo "    node 2:"
	sed 's/^/    | /' "$T/on2.out"
	# on2 goes through the shared directory, not the link.
	on2 "ip link set eth0 down; sleep 1; ip link set eth0 up"
	ip link set eth0 down
	nap 1
	ip link set eth0 up
	if link_pings 15; then
		echo "    link revived: taking eth0 down and up on both nodes made the link pass packets again"
		return 0
	fi
	fail "the link between the nodes passes no packets after $1, nor after eth0 went down and up on both nodes (ping $PEER fails; both nodes' state is above)"
}
# link_pings N: one of N pings, 2 s each, one second apart, is answered.
link_pings() {
	local i ping=(ping)
	command -v ping >/dev/null || ping=(busybox ping) # as tools/rdma-env-guest.sh
	for ((i = 0; i < $1; i++)); do
		"${ping[@]}" -c 1 -W 2 "$PEER" >/dev/null 2>&1 && return 0
		nap 1
	done
	return 1
}
link_state() {
	ip -s link show dev eth0
	tc -s qdisc show dev eth0
	ip neigh show dev eth0
	echo "eth0 tx queue watchdog timeouts: $(cat /sys/class/net/eth0/queues/tx-0/tx_timeout 2>/dev/null)"
	grep virtio /proc/interrupts
	rdma link show
	dmesg | grep -E 'NETDEV WATCHDOG|TX timeout|virtio' | tail -n 5
	dmesg | tail -n 15
}

all_three_body() {
	local t0=$SECONDS i w2 said2='' rates
	local -a work=("${@:3}")
	[ ${#work[@]} -gt 0 ] || work=("--op both -s 4M")
	run put "$B3/rdma-client" "${CT[@]}" -v "${O3[@]}" "$W/data4" "$PEER:$1" -p "${SPORT[03]}"
	want_rc put 0 || with_log2 srv3 || return 1
	[ "$(sha2 "$R2/$1")" = "$(sha1 "$W/data4")" ] || fail "the file stored on node 2 differs" || return 1
	mkdir -p "$W/get-$1"
	run get "$B3/rdma-client" "${CT[@]}" -v "${O3[@]}" -p "${SPORT[03]}" "$PEER:$1" "$W/get-$1/f"
	# The get's READs have a QP of their own (03's data connection), where
	# rdma_rxe's READ-and-SEND bug cannot strike: no failure is excused.
	want_rc get 0 || with_log2 srv3 || return 1
	[ "$(sha1 "$W/get-$1/f")" = "$(sha1 "$W/data4")" ] || fail "the file fetched differs" || return 1
	rm -rf "$W/get-$1"
	spawn c1 "$B1/rdma-client" "${CT[@]}" -n 200 "$PEER" "${SPORT[01]}"
	wait_exit c1 60
	want_rc c1 0 || with_log2 srv1 || return 1
	want_out c1 "^verified 200 of 200 replies$" || return 1
	for i in "${!work[@]}"; do
		read -ra w2 <<<"${work[$i]}"
		spawn "c2$i" "$B2/rdma-client" -v "${O2[@]}" "${w2[@]}" "$PEER" "${SPORT[02]}"
		wait_exit "c2$i" "$C2_S"
		want_rc "c2$i" 0 || with_log2 srv2 || return 1
		want_out "c2$i" "^verified 4194304 bytes$" || return 1
		rates=$(grep -Eo '^(write|read): [0-9]+ x .* MiB/s' "$T/c2$i.out" | sed 's/ bytes in / B in /' | paste -sd,)
		said2="$said2 ${work[$i]}: ${rates:-verified} ($(extended "c2$i"));"
	done
	echo "    netem ${2:-none}, ${O3[*]:-default options}${O2[*]:+ (02: ${O2[*]})}: all verified in $((SECONDS - t0))s:" \
		"01 $(sed -n 's/^round-trip latency (us): min [0-9.]* median \([0-9.]*\).*/median \1 us/p' "$T/c1.out");" \
		"03 $(grep -o 'put.*MiB/s)' "$T/put.out"); $(grep -o 'get.*MiB/s)' "$T/get.out");" \
		"02$said2 put $(extended put), get $(extended get)"
}

# extended NAME: how many times NAME (run with -v) let a wait go on past
# --timeout because the link was still resending.
extended() {
	echo "$(grep -c "but the port's retransmission counters rose" "$T/$1.err") wait extensions"
}

t_no_faults() { all_three clean ""; }
# 02 as issue 16 asks: 4 MiB operations, 20 of them, 16 in flight. Its 20
# READs take over 2 minutes at 0.5% loss here (0.6 MiB/s on a loaded host),
# so they run only with TEST_LARGE=1; by default 2 READs of 4 MiB. At 1%
# only the WRITEs: there ib_read_bw -s 4194304 -n 20 did not finish within
# 120 s on any kernel (docs/reliability.md); tools/bench's loss02 part
# measures our READs there.
C2_S=90 # bound of each 02 client of a round
[ "${TEST_LARGE:-0}" = 1 ] && C2_S=300
# Its READs under loss matter most on 6.12 and 7.x (rdma_rxe's
# READ-after-SEND bug, docs/kernels.md): make test-kernels runs it there;
# on 6.1 only with TEST_LARGE=1 (make test's 15 minutes: 1% and 3% stay).
t_loss_half_percent() {
	case $(uname -r) in
	6.1.*) [ "${TEST_LARGE:-0}" = 1 ] || {
		REASON="on 6.1 with TEST_LARGE=1 only; make test-kernels runs it on 6.12 and 7.x"
		return 77
	} ;;
	esac
	local reads="--op read -s 4M -n 2"
	[ "${TEST_LARGE:-0}" = 1 ] && reads="--op read -s 4M -n 20"
	all_three loss05 "loss 0.5%" "--op write -s 4M -n 20" "$reads"
}
t_loss_one_percent() { all_three loss1 "loss 1%" "--op write -s 4M -n 20"; }
# No jitter: with it netem reorders most packets (loss_and_jitter below).
# Here 1% of the packets jump ahead of the others, which are delayed by
# 2 ms. Default options, as in the loss rounds.
t_delay_and_reorder() { all_three reorder "delay 2ms reorder 1%"; }

# 1% loss with 1 ms +- 1 ms of delay: netem reorders most packets, and
# perftest's ib_write_bw hangs at every size (issue 16). With default
# options each client either finishes verified or exits 1 within LINK_S
# (60 s) with a message that names the cause: retries exhausted
# (RETRY_EXC_ERR, which 02 and 03 say came with a live peer's packets out
# of order), waits that went on while the link kept resending until the
# connection's budget was spent. (The rdma_rxe bug's wording, docs/kernels.md,
# needs a READ posted after a SEND on one QP: none of these clients does
# that since 03's protocol version 5, so it is not an accepted cause.)
# The servers serve on; nothing is left behind.
t_loss_and_jitter() {
	with_netem "loss 1% delay 1ms 1ms" jitter_body || return
	alive2 srv1 && alive2 srv2 && alive2 srv3 && no_temp2
}

JITTER_CAUSES="retry counter exceeded|a lossy or reordering link"
jitter_body() {
	local t0=$SECONDS n b said=''
	mkdir -p "$W/jit"
	spawn c1 "$B1/rdma-client" -n 200 "$PEER" "${SPORT[01]}"
	spawn c2 "$B2/rdma-client" -v --op both -s 4M -n 20 "$PEER" "${SPORT[02]}"
	# 4 MiB files: a 16 MiB get took 80 s here, verified, and 03's
	# chunks, depth and waits are the same at either size.
	spawn put "$B3/rdma-client" -v "$W/data4" "$PEER:jit" -p "${SPORT[03]}"
	spawn get "$B3/rdma-client" -v -p "${SPORT[03]}" "$PEER:src4" "$W/jit/f"
	for n in c1 c2 put get; do
		b=$LINK_S
		wait_exit "$n" $((b + MARGIN - (SECONDS - t0) > 1 ? b + MARGIN - (SECONDS - t0) : 1))
		# Where it was and what it said last: the logs are gone after the test.
		[ "$RC" = 124 ] && { fail "$n still running after $((SECONDS - t0))s (bound $b s); where: $STUCK; its last lines: $(tail_of "$T/$n.out" 4) $(tail_of "$T/$n.err" 4)"; return 1; }
		if [ "$RC" = 0 ]; then
			jitter_verified "$n" || return 1
			said="$said $n verified ($((SECONDS - t0))s);"
			continue
		fi
		want_rc "$n" 1 || return 1
		within "$n" $((b + MARGIN)) "$t0" || return 1
		want_err "$n" "$JITTER_CAUSES" || with_log2 "$(jitter_server "$n")" || return 1
		jitter_nothing_left "$n" || return 1
		said="$said $n exit 1 ($((SECONDS - t0))s: $(grep -Eo "$JITTER_CAUSES" "$T/$n.err" | sort -u | paste -sd+)$([ "$n" = c1 ] || echo ", $(extended "$n")"): $(tail -n1 "$T/$n.err" | cut -c1-160));"
	done
	no_temp "$W/jit" || return 1
	rm -rf "$W/jit"
	echo "    loss 1%, delay 1ms 1ms:$said"
}

# jitter_server NAME: the node-2 server of client NAME.
jitter_server() {
	case $1 in
	c1) echo srv1 ;;
	c2) echo srv2 ;;
	*) echo srv3 ;;
	esac
}

# jitter_verified NAME: what a client that exited 0 must have done.
jitter_verified() {
	case $1 in
	c1) want_out c1 "^verified 200 of 200 replies$" ;;
	c2) want_out c2 "^verified 4194304 bytes$" ;;
	put) [ "$(sha2 "$R2/jit")" = "$(sha1 "$W/data4")" ] || fail "the file stored on node 2 differs" ;;
	get) [ "$(sha1 "$W/jit/f")" = "$(sha2 "$R2/src4")" ] || fail "the file fetched differs" ;;
	esac
}

# jitter_nothing_left NAME: a put or get that failed left no file under
# its final name (no_temp checks the temporary files).
jitter_nothing_left() {
	case $1 in
	put) on2 "[ ! -e $R2/jit ]" || fail "the failed put left $R2/jit on node 2" ;;
	get) [ ! -e "$W/jit/f" ] || fail "the failed get left $W/jit/f" ;;
	esac
}

# 3% loss, small messages, default options: 01 with 50 messages, 03 put
# and get of 1 MiB. Each either finishes verified or exits 1 within its
# bound (01: every wait --timeout; 03: LINK_S, its waits on a link still
# resending go on within the connection's budget). Either way nothing is
# lost: no temporary file, no file under the final name after a failure,
# the servers serve on.
t_loss_three_percent() {
	with_netem "loss 3%" loss3_body || return
	alive2 srv1 && alive2 srv3 && no_temp2
}

loss3_body() {
	local start=$SECONDS t0=$SECONDS t1 said=''
	head -c $((1 << 20)) /dev/urandom >"$W/data1"
	spawn c1 "$B1/rdma-client" "${CT[@]}" -n 50 "$PEER" "${SPORT[01]}"
	run put "$B3/rdma-client" "${CT[@]}" -v "$W/data1" "$PEER:l3" -p "${SPORT[03]}"
	t1=$SECONDS
	if [ "$RC" = 0 ]; then
		[ "$(sha2 "$R2/l3")" = "$(sha1 "$W/data1")" ] || fail "the file stored on node 2 differs" || return 1
		said="put verified in $((t1 - t0))s ($(extended put))"
		mkdir -p "$W/l3"
		t0=$SECONDS
		run get "$B3/rdma-client" "${CT[@]}" -v -p "${SPORT[03]}" "$PEER:l3" "$W/l3/got"
		if [ "$RC" = 0 ]; then
			[ "$(sha1 "$W/l3/got")" = "$(sha1 "$W/data1")" ] || fail "the file fetched differs" || return 1
			said="$said; get verified in $((SECONDS - t0))s ($(extended get))"
		else
			loss3_failed get "$t0" || return 1
			[ ! -e "$W/l3/got" ] || fail "a file appeared under the final name" || return 1
			said="$said; get failed in $((SECONDS - t0))s: $(tail -n1 "$T/get.err")"
		fi
		no_temp "$W/l3" || return 1
		rm -rf "$W/l3"
	else
		loss3_failed put "$t0" || return 1
		on2 "[ ! -e $R2/l3 ]" || fail "a file appeared under the final name" || return 1
		said="put failed in $((t1 - t0))s: $(tail -n1 "$T/put.err")"
	fi
	# 50 round trips: a minute at most, even if most waited for resends.
	wait_exit c1 $((60 - (SECONDS - start) > 1 ? 60 - (SECONDS - start) : 1))
	if [ "$RC" = 0 ]; then
		want_out c1 "^verified 50 of 50 replies$" || return 1
		said="01 verified; $said"
	else
		want_rc c1 1 || return 1
		want_err c1 "no completion|retry|disconnect|timed out" || return 1
		said="01 failed: $(tail -n1 "$T/c1.err"); $said"
	fi
	echo "    loss 3%: $said"
}

# loss3_failed NAME START: NAME exited 1 with a message, within LINK_S
# and the margin.
loss3_failed() {
	want_rc "$1" 1 || return 1
	within "$1 at 3% loss" $((LINK_S + MARGIN)) "$2" || return 1
	want_err "$1" "no completion|no progress|retry|retransmitting|disconnect" || return 1
}

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
	# What SIGKILL leaves: nothing where the server's directory has
	# O_TMPFILE, its .k.XXXXXXXX.part where it has not (nothing can remove
	# that); never a file under the final name.
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

run_tests t_servers_start t_no_faults t_loss_half_percent t_loss_one_percent t_loss_three_percent \
	t_delay_and_reorder t_loss_and_jitter \
	t_server_killed_mid_put t_server_killed_mid_get t_client_killed_mid_put \
	t_servers_survive_and_stop
