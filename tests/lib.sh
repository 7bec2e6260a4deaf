# shellcheck shell=bash
# tests/lib.sh - helpers for the end-to-end tests (sourced).
#
# A test is a shell function t_NAME that returns 0 (pass) or 1 (fail, after
# setting REASON), or 77 (skip, with REASON). run_tests runs the functions
# given, records "ok - NAME", "not ok - NAME: REASON" or "skip - NAME" in
# $TEST_RESULTS, and kills every process the test started, pass or fail.
#
# Every wait here is bounded: clients run under `timeout`, servers must say
# "listening on" within SERVER_READY_S, and wait_exit takes a limit.

set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
: "${RDMA_IP:?RDMA_IP is not set: run the tests through tools/rdma-env}"
: "${TEST_RESULTS:=/dev/null}"
SERVER_READY_S=${SERVER_READY_S:-15}
CLIENT_LIMIT_S=${CLIENT_LIMIT_S:-120} # hard cap on any one client run
T=$(mktemp -d "${TMPDIR:-/tmp}/rdma-e2e.XXXXXX")
declare -A PID       # name -> pid of background processes of this test
REASON=""
RC=0
PORT=""

cleanup_test() {
	local n
	for n in "${!PID[@]}"; do
		kill -9 "${PID[$n]}" 2>/dev/null
	done
	for n in "${!PID[@]}"; do
		wait "${PID[$n]}" 2>/dev/null
	done
	PID=()
}
trap 'cleanup_test; rm -rf "$T"' EXIT

# nap SECONDS: a sleep without starting a process. The polls below run every
# 0.1 s, and in the emulated VM each sleep(1), sed or grep started costs about
# as much again (tests/e2e2/lib2.sh uses it too).
exec {SLEEP_FD}<> <(:)
nap() { read -r -t "$1" -u "$SLEEP_FD" || :; }

# rdma_resources: the RDMA resources of the whole VM (rdma resource show)
# as "pd N cq N qp N cm_id N mr N ctx N" (srq N too, where the kernel
# counts them): what a server holds, compared before and after clients.
rdma_resources() {
	rdma resource show | sed -n 's/^[0-9]*: [^:]*: *//p' | tr -s ' ' | sed 's/ *$//'
}

# resources_settle WANT SECONDS [FN]: until FN (rdma_resources) prints WANT
# (a server tears a connection down after its client has gone), at most
# SECONDS; else fail with what it prints.
resources_settle() {
	local i now fn=${3:-rdma_resources}
	for ((i = 0; i < $2 * 2; i++)); do
		now=$("$fn")
		[ "$now" = "$1" ] && return 0
		nap 0.5
	done
	fail "RDMA resources did not return to '$1': now '$now'"
}

# plus_server BASE: BASE ("pd N cq N ...") with what 04's rdma-server holds
# idle once a client has come: one PD, CQ, SRQ and context, its listener's
# cm_id, two regions (the pool's receive and send buffers). Nothing per
# client (tests/e2e/04-many-clients.sh, 06-hostile.sh).
plus_server() {
	awk '{ for (i = 1; i < NF; i += 2) { v = $(i + 1)
		if ($i ~ /^(pd|cq|srq|ctx|cm_id)$/) v++
		if ($i == "mr") v += 2
		printf "%s%s %d", (i > 1 ? " " : ""), $i, v } print "" }' <<<"$1"
}

# listening_port FILE: PORT = N of the first "listening on ADDR port N" line
# in FILE (a server's stdout), without starting a process; empty if none yet.
listening_port() {
	local line
	PORT=""
	[ -f "$1" ] || return 1 # the server's shell may not have created it yet
	while IFS= read -r line || [ -n "$line" ]; do
		[[ $line =~ ^listening\ on\ .*\ port\ ([0-9]+)$ ]] && { PORT=${BASH_REMATCH[1]}; return 0; }
	done <"$1"
	return 1
}

fail() { REASON="$*"; return 1; }

# matches REGEX FILE...: a line of one of the FILEs (those that exist)
# matches the extended regular expression, as `grep -Eq` would tell, but
# without starting a process for a file of up to 500 lines: in the
# emulated VM a grep costs about 0.15 s of CPU (BSD process accounting of
# a whole e2e stage: 678 greps, 100 s), more than bash takes to scan that
# many lines. Longer files (the -v traces) go to grep.
matches() {
	local re=$1 f l lines
	shift
	for f; do
		[ -f "$f" ] || continue
		mapfile -t -n 501 lines <"$f"
		if [ "${#lines[@]}" -gt 500 ]; then
			grep -Eq -- "$re" "$f" && return 0
			continue
		fi
		for l in "${lines[@]}"; do
			[[ $l =~ $re ]] && return 0
		done
	done
	return 1
}

# Show the tail of a file in a failure reason.
tail_of() { [ -f "$1" ] && tail -n "${2:-3}" "$1" | tr '\n' '|' | cut -c1-400; }

# The port's max_msg_sz in bytes (the largest single RDMA message), as
# ibv_devinfo -v reports it for $RDMA_DEV; nothing if it cannot be read.
# It differs between kernels (8 MiB on rxe of 6.1, 2 GiB on 6.12 and 7.x).
dev_max_msg_sz() {
	local v
	v=$(ibv_devinfo -v ${RDMA_DEV:+-d "$RDMA_DEV"} 2>/dev/null | awk '/max_msg_sz/ { print $2; exit }')
	[[ $v =~ ^0x[0-9a-fA-F]+$ ]] && echo $((v))
}

# size_max PROGRAM ARGS...: the largest value a size option allows, in
# bytes, from the program's own refusal of ARGS ("invalid size '0' (1 to
# 1G)"); nothing if it does not say.
size_max() {
	local v
	v=$("$@" 2>&1 >/dev/null | sed -En 's/.*\([0-9]+[KMG]? to ([0-9]+)([KMG]?)\).*/\1 \2/p' | head -n1)
	case $v in
	*" G") echo $((${v% *} << 30)) ;;
	*" M") echo $((${v% *} << 20)) ;;
	*" K") echo $((${v% *} << 10)) ;;
	[0-9]*" ") echo "${v% *}" ;;
	esac
}

# start_server NAME PROGRAM [ARGS...]: start it on a free port (-p 0 is
# appended), wait for "listening on ADDR port N", set PORT.
start_server() {
	local name=$1 prog=$2 i
	shift 2
	# A server of the same name before this one left its "listening on"
	# line there, and the shell below truncates the file only once it
	# runs: reading it first gave the old, dead port (seen: the client's
	# connect REJECTED with status 8, no listener; 6.1 and 7.3).
	rm -f "$T/$name.out" "$T/$name.err"
	"$prog" "$@" -p 0 >"$T/$name.out" 2>"$T/$name.err" &
	PID[$name]=$!
	for ((i = 0; i < SERVER_READY_S * 10; i++)); do
		listening_port "$T/$name.out" && return 0
		kill -0 "${PID[$name]}" 2>/dev/null || break
		nap 0.1
	done
	fail "server $name did not report 'listening on' within ${SERVER_READY_S}s: $(tail_of "$T/$name.err")"
}

# run NAME PROGRAM [ARGS...]: run to completion (bounded), set RC.
run() {
	local name=$1
	shift
	timeout -k 5 "$CLIENT_LIMIT_S" "$@" >"$T/$name.out" 2>"$T/$name.err"
	RC=$?
}

# spawn NAME PROGRAM [ARGS...]: run in the background. No `timeout`
# wrapper here: killing a wrapper would leave the program running. The
# test bounds it with wait_exit, and cleanup_test kills it by PID.
spawn() {
	local name=$1
	shift
	rm -f "$T/$name.out" "$T/$name.err" # no old lines for wait_for (start_server)
	"$@" >"$T/$name.out" 2>"$T/$name.err" &
	PID[$name]=$!
}

# wait_exit NAME SECONDS: wait for a background process, set RC (124 if it
# is still running after SECONDS; it is then killed).
wait_exit() {
	local name=$1 limit=$2 i
	for ((i = 0; i < limit * 10; i++)); do
		if ! kill -0 "${PID[$name]}" 2>/dev/null; then
			wait "${PID[$name]}"
			RC=$?
			unset "PID[$name]"
			return 0
		fi
		nap 0.1
	done
	# Where it is, before it is killed (stop_server reports it).
	STUCK=$(where_stuck "${PID[$name]}")
	kill -9 "${PID[$name]}" 2>/dev/null
	wait "${PID[$name]}" 2>/dev/null
	unset "PID[$name]"
	RC=124
}

# wait_for NAME REGEX SECONDS: until NAME's stdout or stderr matches.
wait_for() {
	local name=$1 re=$2 limit=$3 i
	for ((i = 0; i < limit * 10; i++)); do
		matches "$re" "$T/$name.out" "$T/$name.err" && return 0
		nap 0.1
	done
	fail "$name did not print /$re/ within ${limit}s: $(tail_of "$T/$name.err")"
}

# want_rc NAME EXPECTED: the last RC of NAME.
want_rc() {
	[ "$RC" = "$2" ] && return 0
	# Its stderr, or if it printed none there, its stdout.
	if [ -s "$T/$1.err" ]; then
		fail "$1 exited $RC, expected $2; stderr: $(tail_of "$T/$1.err")"
	else
		fail "$1 exited $RC, expected $2; stderr empty, stdout: $(tail_of "$T/$1.out")"
	fi
}

# want_out NAME REGEX / want_err NAME REGEX / want_no_err NAME REGEX
want_out() {
	matches "$2" "$T/$1.out" && return 0
	fail "$1 stdout lacks /$2/: $(tail_of "$T/$1.out")"
}
want_err() {
	matches "$2" "$T/$1.err" && return 0
	fail "$1 stderr lacks /$2/: $(tail_of "$T/$1.err")"
}
# want_client_usage CLIENT: what 01's and 02's clients say to a bad command
# line: an unknown option and no SERVER exit 2 with their messages, --help
# exits 0 with the usage.
want_client_usage() {
	run u1 "$1" --bogus "$RDMA_IP"; want_rc u1 2 || return 1
	want_err u1 "unknown option '--bogus' \(try --help\)" || return 1
	run u2 "$1"; want_rc u2 2 || return 1
	want_err u2 "missing SERVER" || return 1
	run u3 "$1" --help; want_rc u3 0 || return 1
	want_out u3 "^usage: rdma-client"
}
# retry_options_reach_qps SERVER CLIENT SRV_ACK SRV_RETRY CLI_ACK CLI_RETRY [CLIENT_ARGS...]:
# a --once server and one client, each with -v and its own --ack-timeout
# and --retry-count. The client's QP must get both of its values; the
# server's QP its own ACK timeout and the client's retry count (the IB CM
# takes it from the connect request and ignores the server's).
retry_options_reach_qps() {
	local srv=$1 cli=$2 sa=$3 sr=$4 ca=$5 cr=$6
	shift 6
	start_server srv "$srv" --once -v --ack-timeout "$sa" --retry-count "$sr" || return 1
	run cli "$cli" --timeout 5 -v --ack-timeout "$ca" --retry-count "$cr" "$@" "$RDMA_IP" "$PORT"
	want_rc cli 0 || return 1
	wait_exit srv 10
	want_rc srv 0 || return 1
	want_qp_retry cli "$ca" "$cr" || return 1
	want_qp_retry srv "$sa" "$cr"
}

# want_qp_retry NAME ACK_TIMEOUT RETRY_COUNT: NAME's -v trace (stderr) shows
# a QP that got this ACK timeout (4.096 us x 2^N) and retry count.
want_qp_retry() {
	local ms
	ms=$(awk -v n="$2" 'BEGIN { printf "%.0f", 2 ^ n * 4.096e-3 }')
	want_err "$1" ": QP [0-9]+: ack timeout $2 \\($ms ms\\), retry_cnt $3, rnr_retry [0-9]+$"
}
count_out() { grep -Ec -- "$2" "$T/$1.out"; }

# want_lesson_shown NAME LESSON REGEX: an --inject lesson exited 4 (it
# showed what it teaches) and ended with its verdict on stdout; stderr
# stays empty.
want_lesson_shown() {
	want_rc "$1" 4 || return 1
	want_out "$1" "^lesson $2: shown \($3\)$" || return 1
	[ ! -s "$T/$1.err" ] || fail "$1 printed on stderr: $(tail_of "$T/$1.err")"
}

# want_json NAME EXPR: NAME's stdout is exactly one line, one JSON object
# d with the fields every --json output has, and the Python expression
# EXPR is true (it may also use err: NAME's stderr as text). The system's
# python3 (tools/deps test) if there is one: a pyenv shim first on PATH
# takes ~15 s to start in the VM.
PYTHON=${PYTHON:-$(command -v /usr/bin/python3 || command -v python3)}
want_json() {
	local why
	why=$("$PYTHON" - "$T/$1.out" "$T/$1.err" "$2" 2>&1 <<'EOF'
import json, sys
text = open(sys.argv[1], encoding="ascii").read()
err = open(sys.argv[2]).read()
lines = text.splitlines()
if len(lines) != 1:
    sys.exit("%d lines on stdout, not 1: %r" % (len(lines), text[:300]))
d = json.loads(lines[0])
for k in ("program", "example", "ok", "error", "exit_code"):
    if k not in d:
        sys.exit("no field %r in %s" % (k, lines[0][:300]))
if not eval("(" + sys.argv[3] + ")", {"d": d, "err": err}):
    sys.exit("false: %s for %s" % (sys.argv[3], lines[0][:600]))
EOF
	) && return 0
	fail "$1 JSON: $(tail -n 3 <<<"$why" | tr '\n' '|' | cut -c1-900)"
}

# alive NAME: the background process still runs.
alive() {
	kill -0 "${PID[$1]}" 2>/dev/null && return 0
	fail "$1 is no longer running: $(tail_of "$T/$1.err")"
}

# where_stuck PID: where each thread of a process that did not exit waits:
# its state (D: uninterruptible, in the kernel) and the kernel function it
# sleeps in, then, where gdb is installed, the functions of each thread's
# stack (innermost first). One line; evidence for a hang, ours or below.
where_stuck() {
	local t st out=""
	for t in /proc/"$1"/task/*; do
		[ -r "$t/stat" ] || continue
		st=$(sed 's/^.*) //' "$t/stat" 2>/dev/null | cut -d' ' -f1)
		out+="${t##*/} $st $(cat "$t/wchan" 2>/dev/null); "
	done
	if [ -n "$out" ] && command -v gdb >/dev/null; then
		out+=$(timeout 20 gdb -p "$1" -batch -nx -ex 'thread apply all bt 8' 2>/dev/null |
			awk '/^Thread /{printf "| T%s:", $2} /^#[0-9]/{for(i=1;i<=NF;i++) if($i=="in"){printf " %s", $(i+1); break} else if(i==2 && $i!~/^0x/){printf " %s", $i; break}}')
	fi
	echo "${out:-gone}"
}

# stop_server NAME: SIGTERM, then it must exit 0 within 10 s.
stop_server() {
	local where=""
	STUCK=""
	kill -TERM "${PID[$1]}" 2>/dev/null
	wait_exit "$1" 10
	[ "$RC" = 0 ] && return 0
	[ "$RC" = 124 ] && where=" threads: $STUCK"
	fail "server $1 exited $RC after SIGTERM (124: did not exit in 10s):$where $(tail_of "$T/$1.err")"
}

# unsanitized: skip (77) when the programs are built with SANITIZE=...:
# valgrind cannot run binaries instrumented by ASan.
unsanitized() {
	[ -z "${SANITIZE:-}" ] && return 0
	REASON="built with SANITIZE=$SANITIZE: valgrind cannot run ASan binaries"
	return 77
}

record() {
	echo "$1"
	echo "$1" >>"$TEST_RESULTS" # (not tee: no process to start)
}

# TEST_CPU=1: each "ok" line also gives the CPU time the whole machine
# spent while the test ran (user, nice and system in /proc/stat, all CPUs,
# not irq and softirq; with two lanes the other lane's test counts too:
# use it with TEST_LANES=1, docs/testing.md). guest_cpu_ticks VAR
# sets VAR to the ticks so far; cpu_since TICKS prints " cpu N.Ns".
guest_cpu_ticks() {
	local _c _u _n _s _rest
	read -r _c _u _n _s _rest </proc/stat
	printf -v "$1" '%s' $((_u + _n + _s))
}
cpu_since() {
	local now
	guest_cpu_ticks now
	printf ' cpu %d.%ds' $(((now - $1) / 100)) $(((now - $1) % 100 / 10))
}

# Two lanes in one VM (tests/run-files.sh) share the RDMA device. A test
# that counts the whole VM's RDMA resources, reads the port's counters,
# changes the link or firewall, or measures speed runs alone: the file
# names it in ALONE_TESTS (function names, or "all"). Each test takes
# the lock $TEST_LOCK (set by the runner, in the guest's own /dev/shm, not
# on the 9p share), shared or, if it runs alone, exclusive, and the
# turnstile $TEST_LOCK.turn first, so that a test waiting to run alone
# is not passed over by the other lane's next tests. Without TEST_LOCK,
# nothing is locked.
ALONE_TESTS=${ALONE_TESTS:-}
if [ -n "${TEST_LOCK:-}" ]; then
	exec {LOCK_FD}>>"$TEST_LOCK" {TURN_FD}>>"$TEST_LOCK.turn"
fi
# lane_lock NAME / lane_unlock: around test NAME (run_tests). Each of its
# two waits is bounded (TEST_LOCK_WAIT_S, default 900 s: the other lane's
# tests are bounded themselves); 1 if one ran out.
lane_lock() {
	[ -n "${TEST_LOCK:-}" ] || return 0
	local how=-s w=${TEST_LOCK_WAIT_S:-900}
	{ [ "$ALONE_TESTS" = all ] || [[ " $ALONE_TESTS " == *" $1 "* ]]; } && how=-x
	flock -w "$w" -x "$TURN_FD" || return 1
	flock -w "$w" "$how" "$LOCK_FD" || { flock -u "$TURN_FD"; return 1; }
	flock -u "$TURN_FD"
}
lane_unlock() { [ -z "${TEST_LOCK:-}" ] || flock -u "$LOCK_FD"; }

# run_tests FUNC...: run each test, record its result.
run_tests() {
	local t start r
	for t in "$@"; do
		if [ -n "${TEST_FILTER:-}" ] && ! [[ $t =~ $TEST_FILTER ]]; then
			continue
		fi
		# TEST_SKIP=REGEX: tests left out of this run on purpose (make
		# test-kernels leaves out what no kernel can change: tests/run-kernels).
		if [ -n "${TEST_SKIP:-}" ] && [[ ${t#t_} =~ $TEST_SKIP ]]; then
			echo "-- ${t#t_}: not run here (TEST_SKIP)"
			continue
		fi
		REASON=""
		if ! lane_lock "$t"; then
			record "not ok - ${t#t_}: the other lane's test did not end in time (TEST_LOCK; TEST_LOCK_WAIT_S=${TEST_LOCK_WAIT_S:-900} s per wait)"
			continue
		fi
		start=$SECONDS
		[ -n "${TEST_CPU:-}" ] && guest_cpu_ticks c0
		# Where a run that hangs was (tools/rdma-env's watchdog names it).
		echo "-- ${t#t_}"
		"$t"
		r=$?
		cleanup_test
		lane_unlock
		case $r in
		0) record "ok - ${t#t_} ($((SECONDS - start))s)${TEST_CPU:+$(cpu_since "$c0")}" ;;
		77) record "skip - ${t#t_}: $REASON" ;;
		*)
			record "not ok - ${t#t_}: $REASON"
			if [ -n "${TEST_KEEP_LOGS:-}" ]; then
				mkdir -p "$TEST_KEEP_LOGS/${t#t_}"
				cp "$T"/* "$TEST_KEEP_LOGS/${t#t_}/" 2>/dev/null
			fi
			;;
		esac
		rm -f "$T"/*
	done
}

# check_sequence SECTION SIDE NAME: the [SIDE] steps of SECTION in
# sequence.txt occur in order in NAME's stderr (its -v trace).
check_sequence() {
	local out
	out=$("$ROOT/tests/check-sequence" "$ROOT/sequence.txt" "$1" "$2" "$T/$3.err") && return 0
	fail "sequence.txt ($1) and the $3 trace disagree: $out"
}

# receiving DIR: a file being received into DIR has data. Either a
# temporary .*.part file (the fallback), or an O_TMPFILE file, which has no
# name: a process holding it shows it in /proc/PID/fd as
# "DIR/#INODE (deleted)". Pass it to another node with "$(declare -f
# receiving)".
receiving() {
	local d f
	d=$(cd "$1" 2>/dev/null && pwd -P) || return 1
	[ -n "$(find "$d" -maxdepth 1 -name '.*.part' -size +0)" ] && return 0
	while read -r f; do
		[ -s "$f" ] && return 0
	done < <(find /proc/[0-9]*/fd -lname "$d/*(deleted)" 2>/dev/null)
	return 1
}

# no_temp DIR: no temporary file (.*.part) left in DIR.
no_temp() {
	local left
	left=$(find "$1" -maxdepth 1 -name '.*.part' | head -n3 | tr '\n' ' ')
	[ -z "$left" ] && return 0
	fail "temporary files left in $1: $left"
}
