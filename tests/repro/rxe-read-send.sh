#!/usr/bin/env bash
# tests/repro/rxe-read-send.sh: run the rxe-read-send reproducer (see
# rxe-read-send.c) between two VMs, in both nodes of
#   tools/rdma-env -n 2 --kernel K -- tests/repro/rxe-read-send.sh
# (make repro does that for each kernel). Node 2 serves; node 1, for each
# of REPRO_ROUNDS rounds and each netem loss in REPRO_LOSS (on both nodes,
# queue 10240 as in tests/e2e2/10-faults.sh), runs each case of REPRO_CASES:
#   mix     READs and SENDs on one QP (03's get pattern): the bug's trigger
#   gate    mix, but a READ only once every SEND is acknowledged (--gate)
#   reads   the same READs, no SENDs (--reads-only)
#   split   mix on two connections of one PD (--split): the READs on QP 2,
#           the SENDs on QP 1 (03's get with its READs on a QP of their own)
#   perf    perftest's ib_read_bw, the same size and count
#   readsr6, readsr7, gater6, gater7, mixr6, mixr7, splitr6, splitr7
#           reads, gate, mix or split with ACK timeout 14 and retry count 6 or 7
#           (03's defaults and --retry-count 7)
#   get03   03_file-transfer's get of 16 MiB, -c 64K -t 8 (tests/e2e2's)
#   get03old  the same with the 03 client in $REPRO_OLD03 (e.g. one built
#           before a change, for comparison in the same run)
#   writes6 --writes: REPRO_WRITES WRITEs of REPRO_WSIZE bytes, 16 in flight
#           (02's --op write -s 4M -n 20), ACK timeout 14 (02's and perftest's),
#           retry count 6 (our default)
#   writes7 the same with retry count 7 (perftest's; "forever" on rxe)
#   perfw   perftest's ib_write_bw at that size, count and depth
#   put03r6 03_file-transfer's put of REPRO_PUT_MIB (64) MiB with default options (64 KiB
#           chunks, 16 in flight, ACK timeout 14, retry count 6)
#   put03r7 the same with --retry-count 7
#   get03r6, get03r7  03's get of that file, default options and retry
#           count 6 or 7; "bug" is a chunk whose data differs from the
#           sender's hash (03's per-chunk check)
# For the writes cases "bug" is the client's exit 4: RETRY_EXC_ERR (for the
# put03 cases: "transport retry counter exceeded" on either side), and
# each line adds how much node 1's rcvd_seq_err (sequence NAKs received)
# and completer_retry_err (resends) rose during the run.
# Each run is bounded. One line per run, then per-case counts and the mean
# MiB/s of the runs that print one (the reproducer's and 03's ok runs); the
# counts also go to $REPRO_RESULTS (default build/repro-rxe-read-send.txt):
#   repro rxe-read-send kernel 6.12.95 loss 1% mix: bug 4, ok 6, other 0 (of 10); ...
# "bug" is the client's exit 3: its QP went to the error state without an
# error completion (or a READ succeeded with data missing). The kernel logs
# its WARNING once per boot (WARN_ON_ONCE), so it is counted separately.
# shellcheck source-path=SCRIPTDIR
set -u
cd "$(dirname "$0")/../.." || exit 2
: "${RDMA_NODE:?run me through tools/rdma-env -n 2}"
# shellcheck source=../lib.sh
. tests/lib.sh
P2=repro
# shellcheck source=../e2e2/lib2.sh
. tests/e2e2/lib2.sh

if [ "$RDMA_NODE" = 2 ]; then
	agent_serve
	exit $?
fi

ROUNDS=${REPRO_ROUNDS:-5}
LOSS=${REPRO_LOSS:-0.5% 1%}
CASES=${REPRO_CASES:-mix reads perf}
READS=${REPRO_READS:-1000} # 64 KiB each: 62.5 MiB per run
WRITES=${REPRO_WRITES:-20}
WSIZE=${REPRO_WSIZE:-4194304}
PUT_MIB=${REPRO_PUT_MIB:-64}
EXTRA=${REPRO_NETEM_EXTRA:-} # more netem arguments, e.g. "delay 1ms 1ms"
OUT=${REPRO_RESULTS:-$ROOT/build/repro-rxe-read-send.txt}
BIN=$ROOT/build/tests/rxe-read-send
B3=$ROOT/03_file-transfer
PEER=$RDMA_PEER_IP
KVER=$(uname -r)
W=$(mktemp -d "${TMPDIR:-/tmp}/repro.XXXXXX")
R2=/tmp/repro-root
trap 'cleanup_test; KEEP2=(); cleanup2; netem 0; agent_quit; rm -rf "$T" "$W"' EXIT
declare -A N # "loss case result" -> count
declare -A MIBS # "loss case" -> the MiB/s of its runs, one word each
[ -x "$BIN" ] || {
	echo "$BIN missing: make repro-build first" >&2
	exit 2
}

netem() { # LOSS (0: none) on eth0 of both nodes
	tc qdisc del dev eth0 root 2>/dev/null
	on2 "tc qdisc del dev eth0 root 2>/dev/null; true"
	[ "$1" = 0 ] && return 0
	# shellcheck disable=SC2086 # one word per netem argument
	tc qdisc add dev eth0 root netem limit 10240 loss "$1" $EXTRA &&
		on2 "tc qdisc add dev eth0 root netem limit 10240 loss $1 $EXTRA"
}

# mean_mibs X...: "MiB/s M (of N runs)", or "no MiB/s" without an X.
mean_mibs() {
	[ $# -gt 0 ] || {
		echo "no MiB/s"
		return
	}
	printf '%s\n' "$@" | awk '{ s += $1 } END { printf "MiB/s %.1f (of %d runs)\n", s / NR, NR }'
}

warns() { dmesg | grep -c 'rxe_comp.c:[0-9]* rxe_completer'; }

# hw NAME: node 1's rxe0 port counter NAME (0 if absent).
hw() { cat "/sys/class/infiniband/rxe0/ports/1/hw_counters/$1" 2>/dev/null || echo 0; }

# perftest SECONDS PROGRAM SIZE ARGS...: one run of perftest's PROGRAM
# (server on node 2), bounded; sets res and detail for run_case.
perftest() {
	local secs=$1 prog=$2 size=$3
	shift 3
	spawn2 pt "$prog" -d rxe0 -s "$size" "$@" -p 18515
	nap 2
	run cli timeout "$secs" "$prog" -d rxe0 -s "$size" "$@" -p 18515 "$PEER"
	res=other
	[ "$RC" = 0 ] && grep -q "^ $size " "$T/cli.out" && res=ok
	detail=$(grep "^ $size " "$T/cli.out" | awk '{print "BW average " $4 " MB/s"}')
	[ "$res" = ok ] || detail="exit $RC: $(tail_of "$T/cli.err" 2)"
	wait_exit2 pt 10
	cleanup2
}

# run_case LOSS CASE: one bounded run; prints its line, counts its result.
run_case() {
	local loss=$1 c=$2 res detail w0 t0=$SECONDS
	w0=$(warns)
	case $c in
	mix | reads | gate | split | mixr[67] | readsr[67] | gater[67] | splitr[67])
		local ro=()
		case $c in reads*) ro=(--reads-only) ;; gate*) ro=(--gate) ;; split*) ro=(--split) ;; esac
		[[ $c == *r[67] ]] && ro+=(--ack-timeout 14 --retry-count "${c: -1}")
		run cli "$BIN" client "$PEER" -p "${SPORT[rs]}" -n "$READS" --timeout 90 "${ro[@]}"
		case $RC in
		0) res=ok ;;
		3) res=bug ;;
		*) res=other ;;
		esac
		detail=$(tail -n1 "$T/cli.out" "$T/cli.err" 2>/dev/null | grep -v '^==>' | grep . | tail -n1)
		;;
	perf) perftest 90 ib_read_bw 65536 -n "$READS" ;;
	writes6 | writes7)
		local nak0 res0
		nak0=$(hw rcvd_seq_err) res0=$(hw completer_retry_err)
		run cli "$BIN" client "$PEER" -p "${SPORT[rw]}" -s "$WSIZE" -d 16 -n "$WRITES" \
			--writes --retry-count "${c#writes}" --ack-timeout 14 --timeout 150
		case $RC in
		0) res=ok ;;
		4) res=bug ;;
		*) res=other ;;
		esac
		detail="$(tail -n1 "$T/cli.out" "$T/cli.err" 2>/dev/null | grep -v '^==>' | grep . | tail -n1);"
		detail="$detail rcvd_seq_err +$(($(hw rcvd_seq_err) - nak0)), completer_retry_err +$(($(hw completer_retry_err) - res0))"
		;;
	perfw) perftest 150 ib_write_bw "$WSIZE" -n "$WRITES" -t 16 ;;
	put03r6 | put03r7)
		local nak0 res0
		nak0=$(hw rcvd_seq_err) res0=$(hw completer_retry_err)
		run cli "$B3/rdma-client" -f --progress --retry-count "${c#put03r}" -p "${SPORT[03]}" "$W/src64" "$PEER:put64"
		res=other
		if [ "$RC" = 0 ] && on2 "cmp -s $R2/put64 $R2/src64"; then
			res=ok
		elif grep -q 'retry counter exceeded' "$T/cli.err"; then
			res=bug
		fi
		detail="put $(grep -o 'in [0-9.]* s ([0-9.]* MiB/s' "$T/cli.out"))"
		[ "$res" = ok ] || detail="exit $RC: $(tail_of "$T/cli.err" 2)"
		detail="$detail; rcvd_seq_err +$(($(hw rcvd_seq_err) - nak0)), completer_retry_err +$(($(hw completer_retry_err) - res0))"
		on2 "rm -f $R2/put64"
		;;
	get03r6 | get03r7)
		run cli "$B3/rdma-client" -f --progress --retry-count "${c#get03r}" -p "${SPORT[03]}" "$PEER:src64" "$W/got"
		res=other
		if [ "$RC" = 0 ] && cmp -s "$W/got" "$W/src64"; then
			res=ok
		elif grep -q 'differs: the sender hashed' "$T/cli.err"; then
			res=bug
		fi
		detail="get $(grep -o 'in [0-9.]* s ([0-9.]* MiB/s' "$T/cli.out"))"
		[ "$res" = ok ] || detail="exit $RC: $(tail_of "$T/cli.err" 2)"
		rm -f "$W/got"
		;;
	get03 | get03old)
		local prog=$B3/rdma-client
		[ "$c" = get03old ] && prog=${REPRO_OLD03:?REPRO_OLD03 must name a 03 client}
		run cli "$prog" --timeout 10 -c 64K -t 8 -p "${SPORT[03]}" "$PEER:src16" "$W/got"
		res=other
		if [ "$RC" = 0 ] && cmp -s "$W/got" "$W/src16"; then
			res=ok
		elif grep -Eq 'Soft-RoCE moved the QP to the error state|failed: Work Request Flushed Error' "$T/cli.err"; then
			res=bug
		fi
		detail=$(grep -o 'get.*MiB/s' "$T/cli.out")
		[ "$res" = ok ] || detail="exit $RC: $(tail_of "$T/cli.err" 2)"
		rm -f "$W/got"
		;;
	esac
	N["$loss $c $res"]=$((${N["$loss $c $res"]:-0} + 1))
	local mibs
	mibs=$(grep -o '[0-9.]* MiB/s' <<<"$detail" | tail -n1 | cut -d' ' -f1)
	[ -n "$mibs" ] && MIBS["$loss $c"]="${MIBS["$loss $c"]:-} $mibs"
	local wn=$(($(warns) - w0))
	[ "$wn" -gt 0 ] && N["$loss $c warn"]=$((${N["$loss $c warn"]:-0} + wn))
	echo "  loss $loss $c: $res in $((SECONDS - t0))s${detail:+: $detail}$([ "$wn" -gt 0 ] && echo " [kernel WARNING rxe_comp.c]")"
}

head -c $((16 << 20)) /dev/urandom >"$W/src16"
cp "$W/src16" "$S2/src16"
on2 "rm -rf $R2 && mkdir -p $R2 && mv $S2/src16 $R2/src16" || exit 1
if [[ " $CASES " == *" put03"* || " $CASES " == *" get03r"* ]]; then
	head -c $((PUT_MIB << 20)) /dev/urandom >"$W/src64"
	cp "$W/src64" "$S2/src64"
	on2 "mv $S2/src64 $R2/src64" || exit 1
fi
declare -A SPORT
start_server2 rs "$BIN" server --idle 900 || {
	echo "$REASON"
	exit 1
}
SPORT[rs]=$PORT
if [[ " $CASES " == *" get03"* || " $CASES " == *" put03"* ]]; then
	start_server2 s3 "$B3/rdma-server" -r "$R2" || {
		echo "$REASON"
		exit 1
	}
	SPORT[03]=$PORT
fi
if [[ " $CASES " == *" writes"* ]]; then
	start_server2 rw "$BIN" server --idle 900 -s "$WSIZE" -d 16 || {
		echo "$REASON"
		exit 1
	}
	SPORT[rw]=$PORT
fi
KEEP2=(rs s3 rw)
echo "repro rxe-read-send: kernel $KVER, $ROUNDS rounds, loss $LOSS${EXTRA:+ with $EXTRA}, cases $CASES, $READS READs of 64 KiB"
for ((r = 1; r <= ROUNDS; r++)); do
	echo "round $r"
	for l in $LOSS; do
		netem "$l" || exit 1
		for c in $CASES; do
			run_case "$l" "$c"
		done
	done
	netem 0
done
mkdir -p "$(dirname "$OUT")"
for l in $LOSS; do
	for c in $CASES; do
		# shellcheck disable=SC2086 # one word per run's MiB/s
		echo "repro rxe-read-send kernel $KVER loss $l $c: bug ${N["$l $c bug"]:-0}," \
			"ok ${N["$l $c ok"]:-0}, other ${N["$l $c other"]:-0} (of $ROUNDS);" \
			"kernel warnings ${N["$l $c warn"]:-0};" \
			"$(mean_mibs ${MIBS["$l $c"]:-})"
	done
done | tee -a "$OUT"
exit 0
