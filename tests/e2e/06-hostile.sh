#!/usr/bin/env bash
# End-to-end tests: hostile clients against the servers of 01, 02, 03 and 04.
# build/tests/hostile (tests/hostile/*.c) connects once per case and
# breaks the protocol in one way: bad magic, version, type, flags, lengths,
# sequence numbers; truncated and oversized messages; absurd sizes and
# depths; names without NUL; RDMA WRITEs and READs outside the advertised
# buffers; chunks in the wrong slot; credits for slots never handed out.
# Each time the server must log a clear error for that connection only,
# drop it, and keep serving: a well-behaved client that runs meanwhile and
# one that comes afterwards both succeed. Run through tools/rdma-env.
# shellcheck source=../lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/../lib.sh"

H=$ROOT/build/tests/hostile
HT=(--timeout 5) # how long a server has to drop a hostile connection
CT=(--timeout 10)
W=$(mktemp -d "${TMPDIR:-/tmp}/rdma-e2e-06.XXXXXX")
trap 'cleanup_test; rm -rf "$T" "$W"' EXIT

# log_problems CLI SRV [MIN]: one line per case whose error the server did not
# log as expected, i.e. exactly one line "client ADDR port P: ..." for the
# case's port P, matching the case's regex. Each connection is logged once
# (common/'s rc_serve, when its thread ends), and hostile gives every case
# its own port, so a second line, or a port named by two cases, is a
# fault. One awk for all cases: every process started in the VM costs a
# good fraction of a second.
log_problems() {
	awk -v min="${3:-10}" '
	FNR == NR && $1 == "case" && $3 == "port" {
		p = $4 + 0
		if (p in name) print "cases " name[p] " and " $2 " both used port " p
		name[p] = $2
	}
	FNR == NR && $1 == "expect" { p = $2; $1 = $2 = ""; re[p] = substr($0, 3); n++ }
	FNR == NR { next }
	match($0, / port [0-9]+: /) {
		p = substr($0, RSTART + 6, RLENGTH - 8) + 0
		if (p in re) { lines[p]++; text[p] = text[p] " [" $0 "]"; if ($0 ~ re[p]) ok[p] = 1 }
	}
	END {
		if (n < min) print "only " n " cases ran"
		# The lines themselves too: the logs are gone once the test ends.
		for (p in re)
			if (!(p in ok) || lines[p] != 1)
				print name[p] " (port " p ": " lines[p] + 0 " log lines, want 1 matching /" re[p] "/:" text[p] ")"
	}' "$T/$1.out" "$T/$2.err"
}

# hostile_ok CLI SRV [MIN]: the hostile client found every case refused or
# dropped, and the server logged each as expected (at least MIN cases, 10).
hostile_ok() {
	local problems i
	want_rc "$1" 0 || return 1
	want_out "$1" "^hostile: [0-9]+ cases, [0-9]+ refused or dropped by the server, 0 not$" || return 1
	# The server logs a connection's error when its thread ends, which may
	# come just after the client noticed: look again for up to 5 s.
	for ((i = 0; i < 5; i++)); do
		problems=$(log_problems "$1" "$2" "${3:-10}")
		[ -z "$problems" ] && return 0
		nap 1
	done
	fail "server log: $(tr '\n' ';' <<<"$problems" | cut -c1-1200) log tail: $(tail_of "$T/$2.err" 3)"
}

t_hostile_clients_01() {
	start_server srv "$ROOT/01_basic-client-server/rdma-server" --timeout 5 || return 1
	# A well-behaved client talks to the same server all along.
	spawn by "$ROOT/01_basic-client-server/rdma-client" "${CT[@]}" -n 3000 "$RDMA_IP" "$PORT"
	run bad "$H" "${HT[@]}" 01 "$RDMA_IP" "$PORT"
	hostile_ok bad srv || return 1
	alive srv || return 1
	wait_exit by 120
	want_rc by 0 || return 1
	want_out by "^verified 3000 of 3000 replies$" || return 1
	run after "$ROOT/01_basic-client-server/rdma-client" "${CT[@]}" -m after "$RDMA_IP" "$PORT"
	want_rc after 0 || return 1
	want_out after "^verified 1 of 1 replies$" || return 1
	stop_server srv
}

t_hostile_clients_02() {
	start_server srv "$ROOT/02_read-write/rdma-server" --timeout 5 || return 1
	spawn by "$ROOT/02_read-write/rdma-client" "${CT[@]}" -s 64K -n 3000 "$RDMA_IP" "$PORT"
	run bad "$H" "${HT[@]}" 02 "$RDMA_IP" "$PORT"
	hostile_ok bad srv || return 1
	# The control case: the HELLO the others bend is accepted as it is.
	want_out bad "^case valid-hello-accepted port [0-9]+: ok: accepted" || return 1
	alive srv || return 1
	wait_exit by 120
	want_rc by 0 || return 1
	want_out by "verified|the same" || return 1
	run after "$ROOT/02_read-write/rdma-client" "${CT[@]}" -s 4K "$RDMA_IP" "$PORT"
	want_rc after 0 || return 1
	stop_server srv
}

t_hostile_clients_03() {
	local root=$W/root left
	rm -rf "$root" "$W/local"
	mkdir -p "$root" "$W/local"
	head -c 16384 /dev/urandom >"$root/hostile.dat"
	head -c $((8 << 20)) /dev/urandom >"$W/local/by"
	start_server srv "$ROOT/03_file-transfer/rdma-server" -r "$root" --timeout 5 || return 1
	# A slow upload (4 KiB chunks, one at a time) runs all along.
	spawn by "$ROOT/03_file-transfer/rdma-client" "${CT[@]}" -c 4K -t 1 "$W/local/by" \
		"$RDMA_IP:by" -p "$PORT"
	run bad "$H" "${HT[@]}" --file hostile.dat 03 "$RDMA_IP" "$PORT"
	hostile_ok bad srv || return 1
	alive srv || return 1
	wait_exit by 180
	want_rc by 0 || return 1
	cmp -s "$W/local/by" "$root/by" || fail "the concurrent upload differs" || return 1
	run after "$ROOT/03_file-transfer/rdma-client" "${CT[@]}" -p "$PORT" "$RDMA_IP:hostile.dat" \
		"$W/local/after"
	want_rc after 0 || return 1
	cmp -s "$root/hostile.dat" "$W/local/after" || fail "the get after the attack differs" || return 1
	# No upload of a hostile client was stored, and no temporary file left.
	left=$(find "$root" -mindepth 1 -maxdepth 1 ! -name hostile.dat ! -name by -printf '%f ')
	[ -z "$left" ] || fail "left in the server's directory: $left" || return 1
	stop_server srv
}

# only_files DIR NAME...: DIR holds exactly these files (no upload of a
# refused client, no temporary file).
only_files() {
	local d=$1 got want
	shift
	got=$(find "$d" -mindepth 1 -maxdepth 1 -printf '%f\n' | sort | tr '\n' ' ')
	want=$(printf '%s\n' "$@" | sort | tr '\n' ' ')
	[ "$got" = "$want" ] && return 0
	fail "$d holds '$got', expected '$want'"
}

t_hostile_03_secret() {
	# --secret: no proof, another key, a replayed proof, a proof for
	# another request, one after the server's --timeout (2 s; hostile
	# waits its own 5 s). Each refused with its own reason before an
	# ACCEPT, logged once; the control case shows our proofs are right.
	local root=$W/root
	rm -rf "$root" "$W/local"
	mkdir -p "$root" "$W/local"
	head -c 16384 /dev/urandom >"$root/hostile.dat"
	head -c 32 /dev/urandom >"$W/key"
	chmod 600 "$W/key"
	start_server srv "$ROOT/03_file-transfer/rdma-server" -r "$root" --timeout 2 \
		--secret "$W/key" || return 1
	run bad "$H" "${HT[@]}" --secret "$W/key" --file hostile.dat 03-security "$RDMA_IP" \
		"$PORT" auth-good-proof auth-no-proof auth-wrong-key auth-replayed-proof \
		auth-proof-for-another-request auth-proof-too-late
	hostile_ok bad srv 5 || return 1
	want_out bad "^case auth-good-proof port [0-9]+: ok: .*accepted, as it should be" || return 1
	want_out bad "^case auth-replayed-proof port [0-9]+: ok: the proof was accepted on the first connection" || return 1
	alive srv || return 1
	only_files "$root" hostile.dat || return 1
	run after "$ROOT/03_file-transfer/rdma-client" "${CT[@]}" --secret "$W/key" -p "$PORT" \
		"$RDMA_IP:hostile.dat" "$W/local/after"
	want_rc after 0 || return 1
	cmp -s "$root/hostile.dat" "$W/local/after" || fail "the get after the attack differs" || return 1
	stop_server srv
}

# refused_by NAME CASE SERVER-ARGS...: a 03 server with these options
# refuses hostile's CASE as it should, logs it once and serves on.
refused_by() {
	local name=$1 kase=$2
	shift 2
	start_server "$name" "$ROOT/03_file-transfer/rdma-server" -r "$W/root" --timeout 5 "$@" || return 1
	run "bad-$name" "$H" "${HT[@]}" 03-security "$RDMA_IP" "$PORT" "$kase"
	hostile_ok "bad-$name" "$name" 1 || return 1
	alive "$name" || return 1
	stop_server "$name"
}

t_hostile_03_modes_and_allow() {
	rm -rf "$W/root"
	mkdir -p "$W/root"
	head -c 16384 /dev/urandom >"$W/root/hostile.dat"
	refused_by ro put-to-read-only --read-only || return 1
	refused_by wo get-from-write-only --write-only || return 1
	# TEST-NET-1 and the IPv6 documentation prefix: never this host.
	refused_by al not-allowed --allow 192.0.2.0/24 --allow 2001:db8::/32 || return 1
	only_files "$W/root" hostile.dat
}

t_isolation_between_clients() {
	# Client A READs and WRITEs client B's rings (B's addresses and
	# rkeys, from B's ACCEPTs) from its own connections: the NIC refuses
	# with REMOTE_ACCESS_ERROR, B's get and put then complete verified.
	local root=$W/root
	rm -rf "$root"
	mkdir -p "$root"
	head -c 16384 /dev/urandom >"$root/hostile.dat"
	# --timeout 30: B's transfers wait while A connects twice and attacks.
	start_server srv "$ROOT/03_file-transfer/rdma-server" -r "$root" --timeout 30 || return 1
	run iso "$H" "${HT[@]}" --file hostile.dat 03-security "$RDMA_IP" "$PORT" isolation
	want_rc iso 0 || return 1
	# Refused: a NAK, or on a busy host the server's disconnect before it.
	local refused="(remote access error|refused: the server dropped A first \(the request flushed\))"
	want_out iso "A's READ of B's ring \(rkey 0x[0-9a-f]+\): $refused" || return 1
	want_out iso "A's WRITE to B's ring \(rkey 0x[0-9a-f]+\): $refused" || return 1
	want_out iso "B's get and put completed, checksums verified" || return 1
	sed -n 's/.*(both in \([0-9]*\) ms).*/    the two attacks took \1 ms/p' "$T/iso.out"
	wait_for srv "^get 'hostile.dat' to $RDMA_IP port [0-9]+: 16384 bytes, xxh3-128 [0-9a-f]{32} verified by the client" 5 || return 1
	wait_for srv "^put 'isolation-put' from $RDMA_IP port [0-9]+: 16384 bytes, xxh3-128 [0-9a-f]{32} verified, stored" 5 || return 1
	cmp -s "$root/hostile.dat" "$root/isolation-put" || fail "B's upload differs from what B downloaded" || return 1
	alive srv || return 1
	stop_server srv
}

# 04's server speaks 02's protocol: 02's cases, then 04's own (a handshake
# never completed, a client silent after BUF, messages out of order).
# Meanwhile a client of 02 is killed mid-transfer and a well-behaved one
# verifies. Then nothing of any of them is left: the server holds what it
# held idle.
t_hostile_clients_04() {
	local base p cases
	base=$(rdma_resources)
	# --timeout 1: no-rtu and the RDMA cases wait for it; the silent
	# client is silent for hostile's --timeout, 2 of the server's.
	start_server srv "$ROOT/04_many-clients/rdma-server" --timeout 1 || return 1
	spawn by "$ROOT/02_read-write/rdma-client" "${CT[@]}" -s 64K -n 1000 "$RDMA_IP" "$PORT"
	spawn k "$ROOT/02_read-write/rdma-client" "${CT[@]}" -s 32K -n 100000 "$RDMA_IP" "$PORT"
	# Two of 02's six RDMA cases (each waits for the server's probe):
	# a range and a key.
	mapfile -t cases < <("$H" --list 04 | grep -Ev '^(write-to-read-only-buffer|read-before-buffer-start|atomic-on-write-read-buffer|atomic-past-the-word)$')
	spawn bad "$H" --timeout 2 04 "$RDMA_IP" "$PORT" "${cases[@]}"
	# Killed mid-transfer (its 32 KiB slice names it in the server's
	# log): its disconnect comes from its kernel.
	wait_for k "^server buffer: 32768 bytes" 10 || return 1
	nap 0.3
	kill -9 "${PID[k]}"
	matches "^verified" "$T/k.out" && { fail "k was done before it was killed"; return 1; }
	p=$(sed -n 's/^connection from [0-9.]* port \([0-9]*\): 32768-byte slice.*/\1/p' "$T/srv.out")
	wait_for srv "client $RDMA_IP port $p: the client disconnected before it was done" 10 || return 1
	wait_exit bad 120
	[ "$RC" = 124 ] && { fail "hostile did not exit within 120 s: $STUCK; $(tail_of "$T/bad.out" 2)"; return 1; }
	hostile_ok bad srv 35 || return 1
	want_out bad "^case valid-hello-accepted port [0-9]+: ok: accepted" || return 1
	want_out bad "^case no-rtu port [0-9]+: ok: RDMA_CM_EVENT_REJECTED [0-9.]+ s after its CONNECT_RESPONSE" || return 1
	want_out bad "^case idle-after-buf-probed port [0-9]+: ok: silent 2000 ms after BUF, then DONE: RESULT, checksum the server's pattern$" || return 1
	p=$(sed -n 's/^case idle-after-buf-probed port \([0-9]*\):.*/\1/p' "$T/bad.out")
	# Its exchange, late in the run, is also the server serving on.
	want_out srv "^client $RDMA_IP port $p done: 4096 bytes, checksum .*, the same as the client's" || return 1
	alive srv || return 1
	wait_exit by 120
	want_rc by 0 || return 1
	want_out by "verified" || return 1
	resources_settle "$(plus_server "$base")" 10 || return 1
	stop_server srv || return 1
	resources_settle "$base" 10
}

# 1,000 connect requests at once (rdma-load, all in flight) against 04's
# server, --max-clients 64, one client of 02 connected before and busy all
# through: every request answered, accepted and verified or rejected as
# busy, none left without an answer; the server up, the other unaffected.
t_burst_1000_04() {
	[ "${TEST_LARGE:-0}" = 1 ] || { REASON="set TEST_LARGE=1 (1,000 connect requests at once)"; return 77; }
	local n m
	# --timeout 30: the accepted ones' handshakes finish behind the burst
	# (once, with ASan on both sides on a busy host, the connects took a
	# median 10.7 s, and the default 10 s dropped 15 before ESTABLISHED).
	start_server srv "$ROOT/04_many-clients/rdma-server" --timeout 30 || return 1
	spawn by "$ROOT/02_read-write/rdma-client" "${CT[@]}" -s 64K -n 4000 "$RDMA_IP" "$PORT"
	wait_for by "^server buffer: 65536 bytes" 10 || return 1
	run burst "$ROOT/04_many-clients/rdma-load" --timeout 30 -c 1000 --in-flight 1000 "$RDMA_IP" "$PORT"
	want_rc burst 5 || return 1
	n=$(sed -n 's/^verified \([0-9]*\) of 1000 connections;.*/\1/p' "$T/burst.out")
	m=$(sed -n 's/^  \([0-9]*\) x connect (first: conn [0-9]*): .*the server rejected the connection: server busy: too many clients.*/\1/p' "$T/burst.err")
	[ -n "$n" ] && [ -n "$m" ] && [ $((n + m)) = 1000 ] && [ "$n" -ge 1 ] ||
		fail "not every request verified or rejected as busy: $n verified, $m busy; $(tail_of "$T/burst.err" 6)" || return 1
	# The server's log of them: at most 10 lines a second, then a count.
	[ "$(grep -c "rejecting $RDMA_IP port [0-9]*: all 64 client slots taken" "$T/srv.err")" -lt "$m" ] &&
		want_err srv "^server: [0-9]+ more connection requests refused within [0-9.]+ s, not logged one by one" ||
		fail "a line per rejected request: $(tail_of "$T/srv.err")" || return 1
	echo "    1,000 at once: $n verified, $m rejected as busy; $(sed -n 's/^established .*; all settled in \([0-9.]* ms\).*/all settled in \1/p' "$T/burst.out")"
	alive srv || return 1
	wait_exit by 120
	want_rc by 0 || return 1
	want_out by "verified" || return 1
	run after "$ROOT/02_read-write/rdma-client" "${CT[@]}" -s 4K "$RDMA_IP" "$PORT"
	want_rc after 0 || return 1
	stop_server srv
}

# Run alone (tests/lib.sh): they count the whole VM's RDMA resources.
ALONE_TESTS="t_hostile_clients_04 t_burst_1000_04"
run_tests t_hostile_clients_01 t_hostile_clients_02 t_hostile_clients_03 t_hostile_03_secret \
	t_hostile_03_modes_and_allow t_isolation_between_clients t_hostile_clients_04 t_burst_1000_04
