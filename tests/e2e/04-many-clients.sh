#!/usr/bin/env bash
# End-to-end tests of 04_many-clients' rdma-server with 02's client,
# unchanged: many clients at once on one event loop, isolation through a
# region and a window each, the refusals, --counter, --no-mw, and nothing
# left behind. Run through tools/rdma-env, which sets RDMA_IP. Budget: at
# most 40 s of VM time for the whole file.
# shellcheck source=../lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/../lib.sh"

S=$ROOT/04_many-clients/rdma-server
C=$ROOT/02_read-write/rdma-client
CT=(--timeout 10) # 8 clients share the VM's two CPUs

# settled WANT: until the RDMA resources are back to WANT, at most 10 s.
settled() { resources_settle "$1" 10; }

t_eight_clients_isolated_refused_then_nothing_left() {
	local i ops=(write read both write read both both write) base
	base=$(rdma_resources)
	start_server srv "$S" -v --max-clients 16 || return 1
	# 8 at once, mixed operations, each verified by both sides.
	for i in "${!ops[@]}"; do
		spawn "c$i" "$C" "${CT[@]}" --op "${ops[$i]}" "$RDMA_IP" "$PORT"
	done
	for i in "${!ops[@]}"; do
		wait_exit "c$i" 60
		want_rc "c$i" 0 || return 1
		want_out "c$i" "^verified 65536 bytes$" || return 1
	done
	[ "$(grep -c "done: 65536 bytes, checksum fnv1a64 0x[0-9a-f]*, the same as the client's" "$T/srv.out")" = 8 ] ||
		fail "the server did not confirm 8 clients: $(tail_of "$T/srv.out")" || return 1
	want_out srv "one PD, 1 CQ\(s\) of [0-9]+, one SRQ of 32 receives for up to 16 clients" || return 1
	# sequence.txt's [s] steps, in the -v trace.
	"$ROOT/tests/check-sequence" "$ROOT/04_many-clients/sequence.txt" 04_many-clients s \
		"$T/srv.err" >"$T/seq.out" || fail "sequence.txt and the server's trace disagree: $(tail_of "$T/seq.out")" || return 1
	# More than -s: refused as 02 refuses it.
	run big "$C" "${CT[@]}" -s 128K "$RDMA_IP" "$PORT"
	want_rc big 3 || return 1
	want_err big "asks for a 131072-byte buffer; this server gives each client at most 65536 bytes \(its -s\)" || return 1
	# A lesson 04 does not serve: refused with the reason.
	run una "$C" "${CT[@]}" --inject unaligned "$RDMA_IP" "$PORT"
	want_rc una 3 || return 1
	want_err una "lesson unaligned is not served by 04's server" || return 1
	# Isolation: one byte past its whole slice is the next slice of the
	# same allocation; its region ends there: a remote access error.
	run oob "$C" "${CT[@]}" -s 64K --inject out-of-bounds "$RDMA_IP" "$PORT"
	want_lesson_shown oob out-of-bounds "IBV_WC_REM_ACCESS_ERR after [0-9.]+ ms" || return 1
	# The clients gone, the server holds what it held idle: nothing per client.
	settled "$(plus_server "$base")" || return 1
	stop_server srv || return 1
	settled "$base"
}

t_counter_four_clients_exact_total() {
	local i
	start_server ctr "$S" --counter || return 1
	for i in 1 2 3 4; do
		spawn "f$i" "$C" "${CT[@]}" --op fetch-add --shared -n 2000 "$RDMA_IP" "$PORT"
	done
	for i in 1 2 3 4; do
		wait_exit "f$i" 60
		want_rc "f$i" 0 || return 1
		want_out "f$i" "^server buffer: 8 bytes at 0x[0-9a-f]+, rkey 0x[0-9a-f]+, fetch-add, atomic depth [0-9]+" || return 1
	done
	# Without --shared, 02's client refuses a shared word.
	run ns "$C" "${CT[@]}" --op fetch-add -n 3 "$RDMA_IP" "$PORT"
	want_rc ns 1 || return 1
	want_err ns "run with --shared" || return 1
	stop_server ctr || return 1
	want_out ctr "^counter at exit: 8000$" || return 1
	[ "$(grep -c "^client .* left: the counter holds [0-9]*$" "$T/ctr.out")" = 5 ] ||
		fail "not one 'left' line per atomic client: $(tail_of "$T/ctr.out")"
}

t_no_mw_fallback() {
	local i
	start_server nm "$S" --no-mw || return 1
	# Six at once: their goodbyes come close together, and an epoll batch
	# can hold a client's CM event and its own CQ's event. Until the fix,
	# the first released the client and the second still read its
	# channel, gone by then: a crash (10 of 60 rounds of six on 6.1, with
	# a busy loop beside and 0.3 s before SIGTERM; CI once saw it with
	# two), so this catches a return of it only some of the time.
	for i in 1 2 3 4 5 6; do
		spawn "n$i" "$C" "${CT[@]}" "$RDMA_IP" "$PORT"
	done
	for i in 1 2 3 4 5 6; do
		wait_exit "n$i" 60
		want_rc "n$i" 0 || return 1
		want_out "n$i" "^verified 65536 bytes$" || return 1
	done
	want_out nm "--no-mw: a PD, CQ and region per client, 02's way" || return 1
	want_out nm "through its own region" || return 1
	stop_server nm
}

# Run alone (tests/lib.sh): it counts the whole VM's RDMA resources.
ALONE_TESTS="t_eight_clients_isolated_refused_then_nothing_left"
run_tests t_eight_clients_isolated_refused_then_nothing_left t_counter_four_clients_exact_total \
	t_no_mw_fallback
