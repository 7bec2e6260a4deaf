#!/usr/bin/env bash
# End-to-end tests of 01_basic-client-server on a real (or Soft-RoCE) device.
# Run through tools/rdma-env, which sets RDMA_IP.
# shellcheck source=../lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/../lib.sh"

S=$ROOT/01_basic-client-server/rdma-server
C=$ROOT/01_basic-client-server/rdma-client
CT=(--timeout 5) # client timeout: every wait in the client is bounded by it

t_one_message() {
	start_server srv "$S" --once || return 1
	run cli "$C" "${CT[@]}" "$RDMA_IP" "$PORT"
	want_rc cli 0 || return 1
	want_out cli "^reply 0: 'Hello RDMA' \(10 bytes\)$" || return 1
	want_out cli "^verified 1 of 1 replies$" || return 1
	# --once: the server exits by itself, successfully, after this client.
	wait_exit srv 10
	want_rc srv 0 || return 1
	want_out srv "^received 'Hello RDMA' \(10 bytes\)$" || return 1
	want_out srv "closed after 1 messages"
}

t_custom_text_and_port_option() {
	start_server srv "$S" --once || return 1
	run cli "$C" "${CT[@]}" -m "any text, even 'quotes'" -p "$PORT" "$RDMA_IP"
	want_rc cli 0 || return 1
	# The server escapes bytes it would not print raw (here: ').
	want_out srv "^received 'any text, even \\\\x27quotes\\\\x27' \(23 bytes\)$"
}

t_thousand_messages_with_latency() {
	start_server srv "$S" --once || return 1
	run cli "$C" "${CT[@]}" -n 1000 "$RDMA_IP" "$PORT"
	want_rc cli 0 || return 1
	want_out cli "^verified 1000 of 1000 replies$" || return 1
	want_out cli "^round-trip latency \(us\): min [0-9.]+ median [0-9.]+ p99 [0-9.]+ max [0-9.]+ over 1000 messages of 10 bytes$" || return 1
	# min <= median <= p99 <= max, all > 0
	read -r mn md p9 mx < <(sed -n 's/^round-trip latency (us): min \([0-9.]*\) median \([0-9.]*\) p99 \([0-9.]*\) max \([0-9.]*\).*/\1 \2 \3 \4/p' "$T/cli.out")
	awk -v a="$mn" -v b="$md" -v c="$p9" -v d="$mx" 'BEGIN { exit !(a > 0 && a <= b && b <= c && c <= d) }' ||
		fail "latency figures out of order: $mn $md $p9 $mx" || return 1
	wait_exit srv 10
	want_rc srv 0 || return 1
	[ "$(count_out srv "^received 'Hello RDMA'")" = 1000 ] || fail "server printed $(count_out srv "^received") messages, not 1000"
}

t_64k_payload() {
	start_server srv "$S" --once || return 1
	run cli "$C" "${CT[@]}" -s 64K -n 5 "$RDMA_IP" "$PORT"
	want_rc cli 0 || return 1
	want_out cli "^verified 5 of 5 replies$" || return 1
	want_out cli "^reply 0: 'abcdefghij.*' \(65536 bytes\)$" || return 1
	want_out srv "^received 'abcdefghij[a-z0-9]*\.\.\.' \(65536 bytes\)$"
}

t_locked_memory_message() {
	# As an ordinary user with `ulimit -l` of 64 KiB, 01's client cannot
	# register 2 x (1 MiB + 16) bytes; it says so with the size and the
	# hint, before it connects (nothing listens on port 1), exit 1: the
	# line README.md's troubleshooting table quotes.
	local u=nobody
	id "$u" >/dev/null 2>&1 && command -v setpriv >/dev/null ||
		{ REASON="no user '$u' or no setpriv"; return 77; }
	run u bash -c "ulimit -l 64 && exec setpriv --reuid=$u --regid=nogroup --clear-groups \
		$C --timeout 5 -s 1M $RDMA_IP 1"
	if grep -q "rdma_create_event_channel\|/dev/infiniband" "$T/u.err"; then
		REASON="this user cannot open the RDMA device: $(tail_of "$T/u.err" 1)"
		return 77
	fi
	want_rc u 1 || return 1
	want_err u "^rdma-client: ibv_reg_mr\(2097184 bytes\): (Cannot allocate memory|Operation not permitted); hint: registered memory is locked memory: raise \`ulimit -l\`"
}

t_one_server_three_clients_in_a_row() {
	local i
	start_server srv "$S" || return 1
	for i in 1 2 3; do
		run cli$i "$C" "${CT[@]}" -m "client $i" -n 3 "$RDMA_IP" "$PORT"
		want_rc cli$i 0 || return 1
		want_out cli$i "^verified 3 of 3 replies$" || return 1
	done
	alive srv || return 1
	[ "$(count_out srv 'closed after 3 messages')" = 3 ] || fail "server did not close 3 sessions: $(tail_of "$T/srv.out" 4)" || return 1
	want_out srv "^received 'client 3' \(8 bytes\)$" || return 1
	stop_server srv
}

t_three_clients_at_once() {
	local i
	start_server srv "$S" || return 1
	for i in 1 2 3; do
		spawn cli$i "$C" "${CT[@]}" -m "concurrent $i" -n 300 "$RDMA_IP" "$PORT"
	done
	for i in 1 2 3; do
		wait_exit cli$i 60
		want_rc cli$i 0 || return 1
		want_out cli$i "^verified 300 of 300 replies$" || return 1
	done
	[ "$(count_out srv "^received 'concurrent 2'")" = 300 ] || fail "server saw $(count_out srv "^received 'concurrent 2'") messages of client 2" || return 1
	stop_server srv
}

t_nothing_listening() {
	# Find a port nobody listens on: start a server, note its port, stop it.
	start_server tmp "$S" || return 1
	local free=$PORT
	stop_server tmp || return 1
	local t0=$SECONDS
	run cli "$C" --timeout 3 "$RDMA_IP" "$free"
	want_rc cli 3 || return 1
	want_err cli "REJECTED.*is a server listening on that port\?" || return 1
	[ $((SECONDS - t0)) -le 8 ] || fail "took $((SECONDS - t0))s, timeout was 3s"
}

t_not_an_rdma_address() {
	# 127.0.0.1 belongs to no RDMA device: exit 3, and the hint says so.
	run cli "$C" --timeout 3 127.0.0.1 7471
	want_rc cli 3 || return 1
	want_err cli "127\.0\.0\.1 .*never RDMA addresses|no RDMA device" || return 1
	run cli2 "$C" --timeout 3 no-such-host.invalid 7471
	want_rc cli2 3 || return 1
	want_err cli2 "cannot resolve 'no-such-host.invalid'"
}

t_unreachable_host() {
	# 192.0.2.1 (TEST-NET-1) answers nobody: exit 3 within the timeout,
	# whether the route fails at once or the connect times out.
	local t0=$SECONDS
	run cli "$C" --timeout 3 192.0.2.1 7471
	want_rc cli 3 || return 1
	want_err cli "hint: " || return 1
	[ $((SECONDS - t0)) -le 8 ] || fail "took $((SECONDS - t0))s, timeout was 3s"
}

t_bad_options() {
	want_client_usage "$C" || return 1
	run c3 "$C" -s 0 "$RDMA_IP"; want_rc c3 2 || return 1
	run c4 "$C" -s 2M "$RDMA_IP"; want_rc c4 2 || return 1
	run c5 "$C" -n abc "$RDMA_IP"; want_rc c5 2 || return 1
	run c6 "$C" --timeout -1 "$RDMA_IP"; want_rc c6 2 || return 1
	run c7 "$C" "$RDMA_IP" 99999; want_rc c7 2 || return 1
	run s1 "$S" --port nope; want_rc s1 2 || return 1
	run s2 "$S" stray-argument; want_rc s2 2 || return 1
	run h2 "$S" --help; want_rc h2 0 || return 1
	want_out h2 "^usage: rdma-server"
}

t_server_killed_during_session() {
	start_server srv "$S" || return 1
	spawn cli "$C" --timeout 5 -n 1000000 "$RDMA_IP" "$PORT"
	wait_for cli "^reply 1:" 15 || return 1
	kill -9 "${PID[srv]}"
	# The client must notice (DISCONNECTED or a failed completion) and
	# exit 1 well within its 5 s timeout; never hang.
	wait_exit cli 15
	want_rc cli 1 || return 1
	want_err cli "disconnected|failed|no completion" || return 1
}

t_client_killed_server_survives() {
	start_server srv "$S" || return 1
	spawn bad "$C" "${CT[@]}" -n 1000000 "$RDMA_IP" "$PORT"
	wait_for bad "^reply 1:" 15 || return 1
	kill -9 "${PID[bad]}"
	nap 1
	alive srv || return 1
	run cli "$C" "${CT[@]}" -m "after the crash" "$RDMA_IP" "$PORT"
	want_rc cli 0 || return 1
	want_out srv "^received 'after the crash'" || return 1
	stop_server srv
}

t_server_stops_cleanly_with_client_connected() {
	start_server srv "$S" || return 1
	spawn cli "$C" --timeout 5 -n 1000000 "$RDMA_IP" "$PORT"
	wait_for cli "^reply 1:" 15 || return 1
	stop_server srv || return 1
	wait_exit cli 15
	want_rc cli 1 || return 1
	# The server's goodbye reaches the client's wait for a reply: its own
	# rdma_get_cm_event takes the DISCONNECTED (or a completion failed first).
	want_err cli "the peer disconnected; hint: |failed"
}

t_foreign_client_rejected() {
	# rping (rdma-core) connects without our HELLO: the server must
	# reject it with a reason, log it, and go on serving.
	command -v rping >/dev/null || { REASON="rping not installed"; return 77; }
	start_server srv "$S" || return 1
	run rp timeout 10 rping -c -a "$RDMA_IP" -p "$PORT" -C 1
	[ "$RC" != 0 ] || fail "rping was not rejected" || return 1
	wait_for srv "rejected: private data of 0 bytes|rejected: .*HELLO|rejected" 5 || return 1
	run cli "$C" "${CT[@]}" "$RDMA_IP" "$PORT"
	want_rc cli 0 || return 1
	stop_server srv
}

t_too_many_clients_rejected_busy() {
	start_server srv "$S" --max-clients 1 || return 1
	spawn hog "$C" --timeout 5 -n 1000000 "$RDMA_IP" "$PORT"
	wait_for hog "^reply 1:" 15 || return 1
	run cli "$C" --timeout 5 "$RDMA_IP" "$PORT"
	want_rc cli 3 || return 1
	want_err cli "rejected the connection: server busy" || return 1
	alive hog || return 1
	stop_server srv
}

t_ipv6() {
	local a6
	a6=$(ip -6 -o addr show scope global 2>/dev/null | awk '{print $4}' | cut -d/ -f1 | head -n1)
	[ -n "$a6" ] || a6=$(ip -6 -o addr show scope site 2>/dev/null | awk '{print $4}' | cut -d/ -f1 | head -n1)
	[ -n "$a6" ] || { REASON="no global IPv6 address on this host"; return 77; }
	start_server srv "$S" --once -b "$a6" || return 1
	want_out srv "^listening on $a6 port" || return 1
	run cli "$C" "${CT[@]}" "$a6" "$PORT"
	want_rc cli 0 || return 1
	want_out cli "^verified 1 of 1 replies$"
}

t_sequence_matches_trace() {
	start_server srv "$S" --once -v || return 1
	run cli "$C" "${CT[@]}" -v "$RDMA_IP" "$PORT"
	want_rc cli 0 || return 1
	wait_exit srv 10
	want_rc srv 0 || return 1
	check_sequence 01_basic-client-server c cli || return 1
	check_sequence 01_basic-client-server s srv
}

t_retry_options_reach_the_qps() {
	retry_options_reach_qps "$S" "$C" 18 2 15 3 || return 1
	run bad "$C" --ack-timeout 32 "$RDMA_IP" "$PORT"
	want_rc bad 2 || return 1
	want_err bad "invalid ACK timeout '32' \(0 to 31: 4.096 us x 2\^N\)"
}

t_valgrind_clean() {
	# No invalid access, no uninitialised use, no leak, on either side.
	command -v valgrind >/dev/null || { REASON="valgrind not installed"; return 77; }
	unsanitized || return 77
	# shellcheck disable=SC2054 # the commas are inside valgrind's option values
	local vg=(valgrind -q --leak-check=full --show-leak-kinds=definite,indirect
		--errors-for-leak-kinds=definite,indirect --error-exitcode=9)
	SERVER_READY_S=60 start_server srv "${vg[@]}" "$S" --once || return 1
	run cli "${vg[@]}" "$C" --timeout 20 -n 20 -s 4K "$RDMA_IP" "$PORT"
	want_rc cli 0 || return 1
	wait_exit srv 60
	want_rc srv 0
}

t_json_output() {
	start_server srv "$S" --once || return 1
	run cli "$C" "${CT[@]}" --json -n 100 -s 64 "$RDMA_IP" "$PORT"
	want_rc cli 0 || return 1
	want_json cli "d['ok'] is True and d['program'] == 'rdma-client' and
		d['example'] == '01_basic-client-server' and d['op'] == 'sendrecv' and
		d['server'] == '$RDMA_IP' and d['port'] == $PORT and d['messages'] == 100 and
		d['size'] == 64 and d['bytes'] == 6400 and d['seconds'] > 0 and
		d['messages_per_s'] > 0 and d['verified'] is True and d['error'] is None and
		d['exit_code'] == 0 and err == '' and
		0 < d['latency_us']['min'] <= d['latency_us']['median'] <= d['latency_us']['p99'] <= d['latency_us']['max']" || return 1
	wait_exit srv 10
	want_rc srv 0 || return 1
	# The --once server is gone: nobody listens on PORT now. Still one
	# object, with the reason stderr got too.
	run cli2 "$C" --timeout 3 --json "$RDMA_IP" "$PORT"
	want_rc cli2 3 || return 1
	want_json cli2 "d['ok'] is False and d['exit_code'] == 3 and d['messages'] == 0 and
		d['latency_us'] is None and d['verified'] is False and 'REJECTED' in d['error'] and
		'rdma-client: ' + d['error'] + '\n' == err" || return 1
	run cli3 "$C" --json -n 0 "$RDMA_IP"
	want_rc cli3 2 || return 1
	want_json cli3 "d['ok'] is False and d['exit_code'] == 2 and 'invalid count' in d['error']"
}

# want_counter NAME COUNTER DELTA: NAME printed COUNTER's rise as DELTA, or
# that this kernel and device have no such counter (then nothing to check).
want_counter() {
	grep -Eq -- "^  $2 +not found on this kernel and device$" "$T/$1.out" && return 0
	want_out "$1" "^  $2 +\+$3  "
}

# serves_next SERVER: after a lesson the server is alive and serves a
# normal client.
serves_next() {
	alive "$1" || return 1
	run next "$C" "${CT[@]}" -m "after the lesson" "$RDMA_IP" "$PORT"
	want_rc next 0 || return 1
	want_out next "^verified 1 of 1 replies$" || return 1
	want_out "$1" "^received 'after the lesson' \(16 bytes\)$"
}

t_lesson_no_recv() {
	start_server srv "$S" || return 1
	run les "$C" "${CT[@]}" --inject no-recv "$RDMA_IP" "$PORT"
	# The server's accept gave our QP rnr_retry 2: three tries, each
	# answered by an RNR NAK, then the error.
	want_lesson_shown les no-recv "IBV_WC_RNR_RETRY_EXC_ERR after [0-9.]+ ms, rnr_retry 2" || return 1
	want_out les "QP rnr_retry 2 \(the CM sets it from the server's rdma_accept\)" || return 1
	want_out les "^completion of wr_id 1 \(the SEND\): IBV_WC_RNR_RETRY_EXC_ERR \(.*\) after [0-9.]+ ms$" || return 1
	want_out les "^our QP is now in state ERR" || return 1
	# On one host the client and the server share the device: their counters.
	want_counter les rcvd_rnr_err 3 || return 1
	want_counter les send_rnr_err 3 || return 1
	want_counter les retry_rnr_exceeded_err 1 || return 1
	wait_for srv "^lesson no-recv for $RDMA_IP port [0-9]+: the client left" 10 || return 1
	want_out srv "^lesson no-recv for $RDMA_IP port [0-9]+: accepted with no receive posted and rnr_retry_count 2$" || return 1
	want_out srv "^for its QP; our QP's min_rnr_timer is [0-9]+ \(RNR NAKs ask for a wait of [0-9.]+ ms\)$" || return 1
	if ! grep -q "no send_rnr_err counter" "$T/srv.out"; then
		want_out srv "send_rnr_err of .* rose by 3 meanwhile" || return 1
	fi
	serves_next srv || return 1
	stop_server srv
}

t_lesson_sq_overflow() {
	local cap
	start_server srv "$S" || return 1
	run les "$C" "${CT[@]}" --inject sq-overflow "$RDMA_IP" "$PORT"
	cap=$(sed -n 's/^ibv_query_qp says our send queue holds \([0-9]*\)\. .*/\1/p' "$T/les.out")
	[ -n "$cap" ] || fail "no send queue size in: $(tail_of "$T/les.out")" || return 1
	want_lesson_shown les sq-overflow "ENOMEM after [0-9.]+ us at WR $cap of $((cap + 1)); the $cap queued SENDs completed" || return 1
	want_out les "^ibv_post_send returned 12 \(Cannot allocate memory\) after [0-9.]+ us; bad_wr is WR $cap: WRs 0 to $((cap - 1))$" || return 1
	[ "$(count_out les '^completion of wr_id [0-9]+: IBV_WC_SUCCESS after')" = $((cap + 1)) ] ||
		fail "not $((cap + 1)) successful completions: $(tail_of "$T/les.out" 8)" || return 1
	want_out les "^our QP is in state RTS" || return 1
	want_out les "^after those completions, WR $cap posted again: ibv_post_send returned 0 after [0-9.]+ us$" || return 1
	wait_for srv "^lesson sq-overflow for $RDMA_IP port [0-9]+: the client left after $((cap + 1)) empty SENDs$" 10 || return 1
	serves_next srv || return 1
	stop_server srv
}

t_lesson_bad_options() {
	run c1 "$C" --inject no-such "$RDMA_IP"; want_rc c1 2 || return 1
	want_err c1 "unknown --inject 'no-such' \(no-recv, sq-overflow or arm-late\)" || return 1
	run c2 "$C" --inject no-recv -n 2 "$RDMA_IP"; want_rc c2 2 || return 1
	want_err c2 "--inject runs one lesson: without --json and -n" || return 1
	run h1 "$C" --help; want_rc h1 0 || return 1
	want_out h1 "^          no-recv  " || return 1
	want_out h1 "^          sq-overflow  " || return 1
	want_out h1 "^4 an --inject lesson showed what it teaches\.$"
}

# --inline: both sides ask max_inline_data for a whole message, say in -v what
# the device granted (at least that) and SEND with IBV_SEND_INLINE.
t_inline_messages() {
	local got
	start_server srv "$S" --once -v || return 1
	run cli "$C" "${CT[@]}" --inline -v -s 100 -n 5 "$RDMA_IP" "$PORT"
	want_rc cli 0 || return 1
	want_out cli "^verified 5 of 5 replies$" || return 1
	want_err cli "^client: inline data: asked 116, granted [0-9]+ bytes$" || return 1
	got=$(sed -n 's/^client: inline data: asked 116, granted \([0-9]*\) bytes$/\1/p' "$T/cli.err")
	[ "$got" -ge 116 ] || fail "granted $got bytes, less than the 116 asked" || return 1
	[ "$(grep -Ec '^client: post SEND wr_id=1 len=116 signaled inline$' "$T/cli.err")" = 5 ] ||
		fail "not 5 inline SENDs: $(tail_of "$T/cli.err" 6)" || return 1
	wait_exit srv 10
	want_rc srv 0 || return 1
	want_err srv "^server conn 1: inline data: asked 116, granted [0-9]+ bytes$" || return 1
	want_err srv "post SEND wr_id=1000 len=116 signaled inline$" || return 1
	# Without --inline, no inline data is asked for and no SEND is inline.
	start_server srv2 "$S" --once -v || return 1
	run plain "$C" "${CT[@]}" -v "$RDMA_IP" "$PORT"
	want_rc plain 0 || return 1
	! grep -q "inline" "$T/plain.err" || fail "inline without --inline: $(grep inline "$T/plain.err" | head -2)" || return 1
	wait_exit srv2 10
	! grep -q "inline" "$T/srv2.err" || fail "server inline without --inline"
}

# A message larger than the device's inline limit is refused before connecting
# (exit 1: a local resource), with the limit, found by asking the device; that
# limit is exact: a message of that size goes, one byte more does not.
t_inline_too_large_names_the_limit() {
	local lim
	run big "$C" "${CT[@]}" --inline -s 1M "$RDMA_IP" 1
	want_rc big 1 || return 1
	want_err big "the device refused max_inline_data 1048592, a 16-byte header and a 1048576-byte payload; it takes at most [0-9]+: --inline works up to -s [0-9]+$" || return 1
	lim=$(sed -n 's/.* it takes at most \([0-9]*\): .*/\1/p' "$T/big.err")
	[ "$lim" -gt 16 ] || fail "limit '$lim' leaves no payload" || return 1
	want_err big "works up to -s $((lim - 16))$" || return 1
	run over "$C" "${CT[@]}" --inline -s $((lim - 15)) "$RDMA_IP" 1
	want_rc over 1 || return 1
	want_err over "refused max_inline_data $((lim + 1)), .* it takes at most $lim:" || return 1
	start_server srv "$S" --once || return 1
	run fits "$C" "${CT[@]}" --inline -s $((lim - 16)) "$RDMA_IP" "$PORT"
	want_rc fits 0 || return 1
	want_out fits "^verified 1 of 1 replies$" || return 1
	run both "$C" --inline --inject no-recv "$RDMA_IP"
	want_rc both 2 || return 1
	want_err both "--inject and --inline exclude each other"
}

t_lesson_arm_late() {
	# The reply lands before the arm; no poll after it: no event, the wait
	# ends at min(--timeout, 2 s), and the poll after it finds both.
	start_server srv "$S" || return 1
	run les "$C" --timeout 3 --inject arm-late "$RDMA_IP" "$PORT"
	want_lesson_shown les arm-late "armed after the completion arrived and did not poll again: no event in 2000 ms, 2 completions were in the CQ all along; fix: arm, then poll once more before sleeping" || return 1
	want_out les "^After [0-9.]+ ms: no event came, the wait timed out\.$" || return 1
	want_out les "^  then polled: RECV success wr_id=" || return 1
	wait_for srv "closed after 1 messages" 10 || return 1
	serves_next srv || return 1
	stop_server srv
}

t_adaptive_poll_both_sides() {
	# --poll adaptive: each wait spins 100 us, then arms the CQ, polls once
	# more and sleeps. The server's first wait (for the client's first
	# SEND, after the connection's set-up) outlasts the budget: it sleeps.
	start_server srv "$S" --once --poll adaptive || return 1
	run cli "$C" "${CT[@]}" --poll adaptive -n 300 "$RDMA_IP" "$PORT"
	want_rc cli 0 || return 1
	want_out cli "^verified 300 of 300 replies$" || return 1
	wait_exit srv 10
	want_rc srv 0 || return 1
	[ "$(count_out srv "^received 'Hello RDMA'")" = 300 ] || fail "server printed $(count_out srv "^received") messages, not 300"
}

# The no-recv lesson asserts the device's hw_counters, which count every
# QP of the device: the other lane's RNR NAKs raised them once in CI.
ALONE_TESTS="t_lesson_no_recv"
run_tests t_one_message t_custom_text_and_port_option t_thousand_messages_with_latency t_locked_memory_message \
	t_64k_payload t_one_server_three_clients_in_a_row t_three_clients_at_once \
	t_nothing_listening t_not_an_rdma_address t_unreachable_host t_bad_options t_server_killed_during_session \
	t_client_killed_server_survives t_server_stops_cleanly_with_client_connected \
	t_foreign_client_rejected t_too_many_clients_rejected_busy t_ipv6 t_sequence_matches_trace t_retry_options_reach_the_qps t_valgrind_clean \
	t_json_output t_lesson_no_recv t_lesson_sq_overflow t_lesson_bad_options t_inline_messages \
	t_inline_too_large_names_the_limit t_adaptive_poll_both_sides t_lesson_arm_late
