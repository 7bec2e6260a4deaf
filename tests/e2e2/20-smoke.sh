#!/usr/bin/env bash
# Two-host test of tools/smoke: node 1 plays host A (smoke --server), node 2 host B
# (smoke --client A). Runs in both nodes of `tools/rdma-env -n 2`, standalone:
#   tools/rdma-env -n 2 -- bash tests/e2e2/20-smoke.sh
# Each node runs the tests of its role and records them under its role's name. They take turns
# through files in RDMA_SYNC_DIR; every wait for the other node is bounded (SYNC_S), and each node
# writes its "done" file whatever the outcome, so a failure on one side never hangs the other.
# Exit status: 1 if a test of this node failed.
: "${RDMA_SYNC_DIR:?run me through tools/rdma-env -n 2}"
: "${RDMA_PEER_IP:?run me through tools/rdma-env -n 2}"
if [ -z "${TEST_RESULTS:-}" ]; then
	TEST_RESULTS=$(mktemp "${TMPDIR:-/tmp}/smoke-results.XXXXXX")
fi
RESULTS_BEFORE=$(wc -l <"$TEST_RESULTS" 2>/dev/null || echo 0)
. "$(dirname "$0")/../lib.sh"

SMOKE=$ROOT/tools/smoke
BASE=18471 # the smoke server's ports: 18471-18473
SYNC_S=240 # how long one node waits for the other's next step

# signal NAME: tell the other node (write a temporary name, then rename).
signal() {
	echo "$RDMA_NODE" >"$RDMA_SYNC_DIR/.smoke-$1.tmp$RDMA_NODE" &&
		mv "$RDMA_SYNC_DIR/.smoke-$1.tmp$RDMA_NODE" "$RDMA_SYNC_DIR/smoke-$1"
}

# await NAME: until the other node signalled NAME (bounded).
await() {
	local i
	for ((i = 0; i < SYNC_S * 10; i++)); do
		[ -e "$RDMA_SYNC_DIR/smoke-$1" ] && return 0
		sleep 0.1
	done
	fail "the other node did not signal '$1' within ${SYNC_S}s"
}

# ---- node 2: host B, the client --------------------------------------------------------

t_client_without_server_fails() {
	# Node 1 has started no smoke server yet: every check must FAIL with
	# the reason and a hint, and exit 1, all within bounded time.
	local t0=$SECONDS
	run smoke "$SMOKE" --client "$RDMA_PEER_IP" -p $BASE --timeout 5
	signal no-server-done
	echo "    client output without a server ($((SECONDS - t0)) s):"
	sed 's/^/    | /' "$T/smoke.out"
	want_rc smoke 1 || return 1
	want_out smoke "^smoke: 5 checks, 0 passed, 4 failed, 1 skipped$" || return 1
	[ "$(grep -Ec '^0[123] .* FAIL .*REJECTED' "$T/smoke.out")" = 4 ] ||
		fail "FAIL rows without the reason: $(tail_of "$T/smoke.out" 16)" || return 1
	[ "$(grep -c "hint: is 'tools/smoke --server' running on $RDMA_PEER_IP" "$T/smoke.out")" = 4 ] ||
		fail "FAIL rows without the hint: $(tail_of "$T/smoke.out" 16)" || return 1
	want_out smoke "^03 get 4 MiB file +SKIP +not run: the put failed" || return 1
	# After a failure, rdma-check (when present) looks at this host.
	if [ -x "$ROOT/tools/rdma-check" ]; then
		want_out smoke "^smoke: tools/rdma-check on this host says:$" || return 1
	fi
	[ $((SECONDS - t0)) -le 120 ] || fail "took $((SECONDS - t0)) s"
}

t_client_all_pass() {
	local r=0
	await server-ready || { signal client-done; return 1; }
	run smoke "$SMOKE" --client "$RDMA_PEER_IP" -p $BASE --timeout 10
	signal client-done
	echo "    client output:"
	sed 's/^/    | /' "$T/smoke.out"
	want_rc smoke 0 || return 1
	[ "$(grep -Ec '^0[123] .* PASS ' "$T/smoke.out")" = 5 ] || fail "not 5 PASS rows: $(tail_of "$T/smoke.out" 8)" || return 1
	want_out smoke "^01 send/recv 64 B x1000 +PASS +round trip median [0-9.]+ us" || return 1
	want_out smoke "^02 bandwidth 1 MiB x50 +PASS +write [0-9.]+ MiB/s" || return 1
	want_out smoke "^smoke: 5 checks, 5 passed, 0 failed$"
}

# ---- node 1: host A, the server ------------------------------------------------------------

t_server_serves_peer() {
	await no-server-done || return 1
	spawn srv "$SMOKE" --server -p $BASE
	if ! wait_for srv "^smoke: ready" 30; then
		signal server-ready # node 2 then fails fast instead of waiting
		return 1
	fi
	want_out srv "^smoke: clients connect to $RDMA_IP " || { signal server-ready; return 1; }
	signal server-ready
	await client-done || return 1
	alive srv || return 1
	kill -TERM "${PID[srv]}"
	wait_exit srv 15
	echo "    server output:"
	sed 's/^/    | /' "$T/srv.out"
	want_rc srv 0 || return 1
	# The peer's connections show in the server's log, 01's per-message
	# lines left out.
	want_out srv "^\[01\] connection from $RDMA_PEER_IP port [0-9]+ closed after 1000 messages$" || return 1
	want_out srv "^\[02\] client $RDMA_PEER_IP port [0-9]+ done: 2097152 bytes, checksum fnv1a64 0x[0-9a-f]+, the same as the client's$" || return 1
	! grep -q "^\[01\] received" "$T/srv.out" || fail "01's per-message lines were shown"
}

if [ "$RDMA_NODE" = 1 ]; then
	run_tests t_server_serves_peer
else
	run_tests t_client_without_server_fails t_client_all_pass
fi
! tail -n +"$((RESULTS_BEFORE + 1))" "$TEST_RESULTS" | grep -q '^not ok'
