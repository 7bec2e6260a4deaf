#!/usr/bin/env bash
# Two-host test of tools/smoke, the way someone bringing up new hardware
# uses it: `smoke --server` on one host, `smoke --client HOST` on the
# other. Node 2 plays the server host (it runs what node 1 asks, see
# tests/e2e2/lib2.sh); node 1 runs the clients and records every result.
# Run in both nodes of `tools/rdma-env -n 2`, alone:
#   tools/rdma-env -n 2 -- bash tests/e2e2/20-smoke.sh
# Exit status (node 1): 1 if a test failed.
# Results go to TEST_RESULTS, or alone to a file of our own (for the exit status).
[ -n "${TEST_RESULTS:-}" ] || TEST_RESULTS=$(mktemp "${TMPDIR:-/tmp}/s20-results.XXXXXX")
# shellcheck source=../lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/../lib.sh"
P2=s20
# shellcheck source=lib2.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib2.sh"

if [ "$RDMA_NODE" = 2 ]; then
	agent_serve
	exit $?
fi

SMOKE=$ROOT/tools/smoke
PEER=$RDMA_PEER_IP
BASE=18471 # the smoke server's ports on node 2: 18471-18473
SRV=s20-smoke-server
RESULTS_BEFORE=$(wc -l <"$TEST_RESULTS" 2>/dev/null || echo 0)
trap 'cleanup_test; cleanup2; agent_quit; rm -rf "$T"' EXIT

# show NAME FILE: the output of a run, indented, for the log.
show() {
	echo "    $1:"
	sed 's/^/    | /' "$2"
}

t_client_without_server_fails() {
	# Nothing runs on node 2 yet: every check must FAIL with the reason
	# and a hint, and smoke exits 1, all within bounded time.
	local t0=$SECONDS
	run smoke "$SMOKE" --client "$PEER" -p $BASE --timeout 5
	show "smoke --client without a server ($((SECONDS - t0)) s)" "$T/smoke.out"
	want_rc smoke 1 || return 1
	want_out smoke "^smoke: 5 checks, 0 passed, 4 failed, 1 skipped$" || return 1
	[ "$(grep -Ec '^0[123] .* FAIL .*REJECTED' "$T/smoke.out")" = 4 ] ||
		fail "FAIL rows without the reason: $(tail_of "$T/smoke.out" 16)" || return 1
	[ "$(grep -c "hint: is 'tools/smoke --server' running on $PEER, with the same -p" "$T/smoke.out")" = 4 ] ||
		fail "FAIL rows without the hint: $(tail_of "$T/smoke.out" 16)" || return 1
	want_out smoke "^03 get 4 MiB file +SKIP +not run: the put failed" || return 1
	# After a failure, rdma-check (when present) looks at this host.
	if [ -x "$ROOT/tools/rdma-check" ]; then
		want_out smoke "^smoke: tools/rdma-check on this host says:$" || return 1
	fi
	[ $((SECONDS - t0)) -le 120 ] || fail "took $((SECONDS - t0)) s"
}

# smoke_server2 NAME: `smoke --server -p BASE` on node 2, ready within 30 s.
smoke_server2() {
	local i
	spawn2 "$1" "$SMOKE" --server -p $BASE || return 1
	for ((i = 0; i < 300; i++)); do
		grep -q "^smoke: ready" "$S2/$1.out" 2>/dev/null && break
		[ -e "$S2/$1.rc" ] && break
		nap 0.1
	done
	grep -q "^smoke: ready" "$S2/$1.out" ||
		fail "smoke --server on node 2 not ready within 30 s: $(tail_of "$S2/$1.err")"
}

t_server_and_client_on_two_hosts() {
	smoke_server2 $SRV || return 1
	grep -q "^smoke: clients connect to $PEER (.*): tools/smoke --client $PEER -p $BASE$" "$S2/$SRV.out" ||
		fail "the server names no address for clients: $(tail_of "$S2/$SRV.out")" || return 1
	run smoke "$SMOKE" --client "$PEER" -p $BASE --timeout 10
	show "smoke --client $PEER" "$T/smoke.out"
	want_rc smoke 0 || return 1
	# PASS, or LOSSY where the emulated link needed retransmissions.
	[ "$(grep -Ec '^0[123] .* (PASS|LOSSY) ' "$T/smoke.out")" = 5 ] ||
		fail "not 5 passed rows: $(tail_of "$T/smoke.out" 8)" || return 1
	[ "$(grep -Ec '^ +link: (lossless|lossy): ' "$T/smoke.out")" = 5 ] ||
		fail "not 5 link lines: $(tail_of "$T/smoke.out" 12)" || return 1
	want_out smoke "^01 send/recv 64 B x1000 +(PASS|LOSSY) +round trip median [0-9.]+ us" || return 1
	want_out smoke "^02 bandwidth 1 MiB x50 +(PASS|LOSSY) +write [0-9.]+ MiB/s" || return 1
	want_out smoke "^03 get 4 MiB file +(PASS|LOSSY) +[0-9.]+ MiB/s, sha256 of the copy equals the original$" || return 1
	want_out smoke "^smoke: 5 checks, 5 passed( \([1-5] over a lossy link, with retransmissions\))?, 0 failed$" || return 1
	# SIGTERM stops the server side cleanly, with exit 0.
	stop_server2 $SRV || return 1
	show "smoke --server on node 2" "$S2/$SRV.out"
	# Its log shows this client's sessions, without 01's per-message lines.
	grep -Eq "^\[01\] connection from $RDMA_IP port [0-9]+ closed after 1000 messages$" "$S2/$SRV.out" &&
		grep -Eq "^\[02\] client $RDMA_IP port [0-9]+ done: 2097152 bytes, checksum fnv1a64 0x[0-9a-f]+, the same as the client's$" "$S2/$SRV.out" &&
		grep -Eq "^\[03\] get 'smoke-.*\.bin' to $RDMA_IP port [0-9]+: 4194304 bytes, .* verified by the client$" "$S2/$SRV.out" &&
		! grep -q "^\[01\] received" "$S2/$SRV.out" &&
		grep -q "^smoke: stopping$" "$S2/$SRV.out" ||
		fail "the server's log lacks the client's sessions: $(tail_of "$S2/$SRV.out" 6)"
}

t_lossy_link_named() {
	# 0.5% of node 1's packets dropped (netem on its eth0): the checks
	# still pass, but each row whose traffic saw a retransmission says
	# LOSSY, with the retransmissions per MiB node 1's port counted.
	smoke_server2 $SRV-lossy || return 1
	tc qdisc add dev eth0 root netem limit 10240 loss 0.5% || fail "tc qdisc add netem failed" || return 1
	run smoke "$SMOKE" --client "$PEER" -p $BASE --timeout 30 --json
	tc qdisc del dev eth0 root
	show "smoke --client $PEER, 0.5% loss on node 1" "$T/smoke.err"
	stop_server2 $SRV-lossy || return 1
	want_rc smoke 0 || return 1
	[ "$(grep -Ec '^0[123] .* LOSSY ' "$T/smoke.err")" -ge 3 ] ||
		fail "fewer than 3 LOSSY rows: $(tail_of "$T/smoke.err" 16)" || return 1
	grep -Eq "^smoke: link, all checks: lossy: [0-9]+\.[0-9] retransmissions per MiB; on RoCE check PFC/ECN \([1-9][0-9]* in [0-9.]+ MiB" "$T/smoke.err" ||
		fail "no lossy verdict over all checks: $(tail_of "$T/smoke.err" 4)" || return 1
	"$PYTHON" - "$T/smoke.out" <<'EOF' || fail "smoke --json: $(tail_of "$T/smoke.out")"
import json, sys
d = json.loads(open(sys.argv[1]).read())
assert d["ok"] is True and d["link"]["verdict"] == "lossy" and d["link"]["per_mib"] > 0, d["link"]
for c in d["checks"]:
    l = c["link"]
    # A row is LOSSY exactly when its counters moved.
    assert (c["status"] == "LOSSY") == (l["verdict"] == "lossy"), c
    assert c["status"] in ("PASS", "LOSSY") and l["retransmissions"] is not None, c
print("retransmissions per check:", [(c["name"], c["link"]["retransmissions"], c["link"]["mib"]) for c in d["checks"]])
EOF
}

run_tests t_client_without_server_fails t_server_and_client_on_two_hosts t_lossy_link_named
! tail -n +"$((RESULTS_BEFORE + 1))" "$TEST_RESULTS" | grep -q '^not ok'
