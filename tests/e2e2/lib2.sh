# shellcheck shell=bash
# tests/e2e2/lib2.sh - two-node helpers (sourced after tests/lib.sh), for
# test files where node 1 drives and node 2 only runs what node 1 asks.
#
# Node 2 runs agent_serve: it executes each request node 1 drops into
# RDMA_SYNC_DIR (a bash script, numbered 0, 1, 2, ...) one after the
# other and writes back its output and exit status, until node 1 says
# quit (or AGENT_S passes). Node 1 uses:
#   on2 SCRIPT             run SCRIPT on node 2, wait (bounded), set RC;
#                          its output is in $T/on2.out
#   spawn2 NAME CMD...     start CMD on node 2 in the background; its
#                          stdout/stderr/pid/exit status are the files
#                          $S2/NAME.{out,err,pid,rc}, visible to both nodes
#   start_server2 NAME PROGRAM ARGS...   spawn2 with -p 0, wait for its
#                          "listening on" line, set PORT
#   wait_exit2 NAME SECONDS / stop_server2 NAME / kill2 NAME [SIGNAL]
#   cleanup2               kill everything spawned on node 2
# Every wait is bounded. All files of one test file share the prefix
# $P2 (set it before sourcing), so several files can run in one VM pair.
: "${RDMA_SYNC_DIR:?run me through tools/rdma-env -n 2}"
: "${RDMA_NODE:?run me through tools/rdma-env -n 2}"
: "${P2:?set P2, the prefix of the coordination files}"
S2=$RDMA_SYNC_DIR
AGENT_S=${AGENT_S:-900} # node 2 gives up serving after this long
ON2_S=${ON2_S:-60}      # node 1 waits this long for one request
declare -A PID2         # node-2 processes this test spawned (name -> 1)
KEEP2=()                # names cleanup2 leaves running (e.g. servers of the whole file)

# put FILE TEXT: write FILE in the sync dir atomically (tmp, then mv).
put() {
	printf '%s\n' "$2" >"$S2/.$1.tmp" && mv -f "$S2/.$1.tmp" "$S2/$1"
}

# ---- node 2 --------------------------------------------------------------

agent_serve() {
	local n=0 end=$((SECONDS + AGENT_S)) f
	while ((SECONDS < end)); do
		f=$S2/$P2.req.$n
		if [ -e "$f" ]; then
			(cd "$ROOT" && bash "$f") >"$S2/$P2.res.$n.out" 2>&1 </dev/null
			put "$P2.res.$n.rc" "$?"
			n=$((n + 1))
			continue
		fi
		[ -e "$S2/$P2.quit" ] && return 0
		nap 0.05
	done
	echo "agent: node 1 did not say quit within ${AGENT_S}s" >&2
	return 1
}

# ---- node 1 --------------------------------------------------------------

# on2 SCRIPT: run SCRIPT (bash) on node 2; RC is its exit status (124 if
# node 2 did not answer within ON2_S).
on2() {
	local n i
	# The number of this request, kept in a file: a shell variable would
	# lose its increment when on2 runs in a subshell, as in "$(sha2 F)", and
	# the next on2 would reuse the number and get that request's old result
	# without running (a netem removal was skipped that way).
	n=$(cat "$S2/$P2.next" 2>/dev/null) || n=0
	put "$P2.next" $((n + 1))
	put "$P2.req.$n" "$1"
	for ((i = 0; i < ON2_S * 20; i++)); do
		if [ -e "$S2/$P2.res.$n.rc" ]; then
			RC=$(<"$S2/$P2.res.$n.rc")
			cp "$S2/$P2.res.$n.out" "$T/on2.out"
			return "$RC"
		fi
		nap 0.05
	done
	RC=124
	echo "node 2 did not run request $n within ${ON2_S}s: $1" >"$T/on2.out"
	return 124
}

agent_quit() { put "$P2.quit" 1; }

# spawn2 NAME CMD...: CMD in the background on node 2 (words quoted for
# bash). A subshell there waits for it and records its exit status.
spawn2() {
	local name=$1 cmd
	shift
	cmd=$(printf '%q ' "$@")
	rm -f "$S2/$name".{out,err,pid,rc}
	PID2[$name]=1
	on2 "( $cmd >$S2/$name.out 2>$S2/$name.err </dev/null & echo \$! >$S2/$name.pid
	      wait \$!; echo \$? >$S2/$name.rc.tmp; mv $S2/$name.rc.tmp $S2/$name.rc ) >/dev/null 2>&1 &
	      for i in \$(seq 100); do [ -s $S2/$name.pid ] && exit 0; sleep 0.05; done; exit 1" ||
		fail "could not start $name on node 2: $(tail_of "$T/on2.out")"
}

# start_server2 NAME PROGRAM [ARGS...]: on node 2, -p 0; sets PORT.
start_server2() {
	local name=$1 i
	spawn2 "$@" -p 0 || return 1
	for ((i = 0; i < SERVER_READY_S * 20; i++)); do
		PORT=$(sed -n 's/^listening on .* port \([0-9][0-9]*\)$/\1/p' "$S2/$name.out" 2>/dev/null | head -n1)
		[ -n "$PORT" ] && return 0
		[ -e "$S2/$name.rc" ] && break
		nap 0.05
	done
	fail "server $name on node 2 did not report 'listening on' within ${SERVER_READY_S}s: $(tail_of "$S2/$name.err")"
}

# wait_exit2 NAME SECONDS: RC = its exit status, 124 if still running.
wait_exit2() {
	local i
	for ((i = 0; i < $2 * 20; i++)); do
		if [ -e "$S2/$1.rc" ]; then
			RC=$(<"$S2/$1.rc")
			unset "PID2[$1]"
			return 0
		fi
		nap 0.05
	done
	RC=124
}

# kill2 NAME [SIGNAL]: signal a node-2 process (default KILL).
kill2() { on2 "kill -${2:-KILL} \$(cat $S2/$1.pid) 2>/dev/null; true"; }

# stop_server2 NAME: SIGTERM, then exit 0 within 10 s.
stop_server2() {
	kill2 "$1" TERM
	wait_exit2 "$1" 10
	[ "$RC" = 0 ] && return 0
	fail "server $1 on node 2 exited $RC after SIGTERM (124: still running): $(tail_of "$S2/$1.err")"
}

# alive2 NAME: still running on node 2.
alive2() {
	[ ! -e "$S2/$1.rc" ] && return 0
	fail "$1 on node 2 has exited ($(cat "$S2/$1.rc")): $(tail_of "$S2/$1.err")"
}

# want_err2 NAME REGEX: node-2 process NAME's stderr matches.
want_err2() {
	grep -Eq -- "$2" "$S2/$1.err" && return 0
	fail "$1 (node 2) stderr lacks /$2/: $(tail_of "$S2/$1.err")"
}

# with_log2 NAME: append node-2 process NAME's last log lines to REASON
# (after a failed check: a client's error often only says that the
# server gave up; the server's log says why), and this node's last kernel
# warnings: Soft-RoCE puts a WARNING there when it moves a QP to the
# error state without an error completion. Returns 1.
with_log2() {
	local k
	REASON="$REASON; $1 on node 2 logged: $(tail_of "$S2/$1.err" 2)"
	kernel_warnings "node $RDMA_NODE" "$(dmesg 2>/dev/null)"
	on2 "dmesg" >/dev/null 2>&1 && kernel_warnings "node 2" "$(cat "$T/on2.out")"
	k=$(dmesg --level=emerg,alert,crit,err,warn 2>/dev/null | grep -v 'cut here' | tail -n 3 |
		cut -c1-200 | tr '\n' '|')
	[ -z "$k" ] || REASON="$REASON; node $RDMA_NODE kernel: $k"
	return 1
}

# kernel_warnings NODE DMESG: a kernel warning or oops in DMESG is printed
# whole (the function it names and its call trace: a kernel bug to prove
# with a reproducer, docs/kernels.md), and its first line joins REASON.
kernel_warnings() {
	local w
	w=$(grep -m1 -E 'WARNING: |BUG: |Oops' <<<"$2") || return 0
	REASON="$REASON; $1 kernel: $(cut -c1-200 <<<"$w")"
	echo "    $1 kernel:"
	sed -n '/cut here/,/end trace/p' <<<"$2" | head -n 60 | sed 's/^/    | /'
}

# cleanup2: kill what node 1 spawned on node 2, but those named in KEEP2.
cleanup2() {
	local n cmd=""
	for n in "${!PID2[@]}"; do
		[[ " ${KEEP2[*]} " == *" $n "* ]] && continue
		cmd="$cmd kill -9 \$(cat $S2/$n.pid 2>/dev/null) 2>/dev/null;"
		unset "PID2[$n]"
	done
	[ -n "$cmd" ] && on2 "$cmd true"
	return 0
}

# After each test (run_tests calls cleanup_test), node 1 also cleans up
# node 2.
eval "lib_$(declare -f cleanup_test)"
cleanup_test() {
	lib_cleanup_test
	[ "$RDMA_NODE" = 1 ] && cleanup2
	return 0
}

# ---- node 1: checks for fault tests ------------------------------------

# What the fault tests share: the programs, the peer, and the bounds.
# shellcheck disable=SC2034 # used by the files that source this one
{
	B1=$ROOT/01_basic-client-server
	B2=$ROOT/02_read-write
	B3=$ROOT/03_file-transfer
	PEER=${RDMA_PEER_IP:-}
	CT=(--timeout 10) # every client wait is bounded by this
	MARGIN=5          # seconds allowed beyond a client's --timeout to exit
	# A client of 02 or 03 on a link that keeps resending without getting
	# through ends within this (issue 16): its waits past --timeout add up
	# to 3 x --timeout per connection (RC_LINK_BUDGET), then one --timeout.
	LINK_S=60
	declare -A SPORT  # example -> port of its server on node 2
}

# sha2 PATH: sha256 of a file on node 2 (empty if missing).
sha2() {
	on2 "sha256sum <'$1' 2>/dev/null | cut -d' ' -f1" >/dev/null
	head -n1 "$T/on2.out"
}
sha1() { sha256sum <"$1" | cut -d' ' -f1; }

# within NAME SECONDS START: the run that began at START took at most SECONDS.
within() {
	[ $((SECONDS - $3)) -le "$2" ] && return 0
	fail "$1 took $((SECONDS - $3))s, more than ${2}s"
}

# wait_temp2 DIR SECONDS: until a file being received into DIR on node 2
# has data (the transfer is under way): `receiving` of tests/lib.sh, sent
# along. One request: node 2 polls itself.
wait_temp2() {
	on2 "$(declare -f receiving)
		end=\$((SECONDS + $2)); while [ \$SECONDS -lt \$end ]; do
		receiving $1 && exit 0; sleep 0.1; done; exit 1" &&
		return 0
	fail "no file being received with data appeared on node 2 in $1 within $2s"
}

# wait_no_temp2 DIR SECONDS: until no temporary file is left in DIR on node 2.
wait_no_temp2() {
	on2 "end=\$((SECONDS + $2)); while [ \$SECONDS -lt \$end ]; do
		[ -z \"\$(find $1 -maxdepth 1 -name '.*.part')\" ] && exit 0; sleep 0.1; done
		find $1 -maxdepth 1 -name '.*.part'; exit 1" && return 0
	fail "temporary files still in $1 on node 2 after $2s: $(tail_of "$T/on2.out")"
}

# wait_local_temp DIR SECONDS: until a file being received into DIR has
# data (our get is under way; `receiving` in tests/lib.sh).
wait_local_temp() {
	local end=$((SECONDS + $2))
	while [ $SECONDS -lt $end ]; do
		receiving "$1" && return 0
		nap 0.1
	done
	fail "no file being received with data appeared in $1 within $2s"
}
