#!/usr/bin/env bash
# End-to-end tests of --allow, which every server takes (common/rc-allow.c):
# a client whose address no prefix names is rejected with "not allowed"
# before the server sets anything up for it, and says so; a named one is
# served; a flood of refused requests is logged at most 10 lines per
# second, the rest counted in one summary line per second. (03's --secret,
# --read-only and --write-only: 03-file-transfer.sh and 06-hostile.sh.)
# Run through tools/rdma-env, which sets RDMA_IP.
# shellcheck source=../lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/../lib.sh"

H=$ROOT/build/tests/hostile
CT=(--timeout 5)
W=$(mktemp -d "${TMPDIR:-/tmp}/rdma-e2e-09.XXXXXX")
trap 'cleanup_test; rm -rf "$T" "$W"' EXIT
# Prefixes that never name this host: TEST-NET-1 and IPv6's documentation prefix.
NOT_US=(--allow 192.0.2.0/24 --allow 2001:db8::/32)

# example EX: SRV (the server command), CLI (the client's, without -p) and
# OK (what its stdout says on success) for example 01, 02 or 03.
example() {
	case $1 in
	01)
		SRV=("$ROOT/01_basic-client-server/rdma-server")
		CLI=("$ROOT/01_basic-client-server/rdma-client" "${CT[@]}" "$RDMA_IP")
		OK='^verified 1 of 1 replies$'
		;;
	02)
		SRV=("$ROOT/02_read-write/rdma-server")
		CLI=("$ROOT/02_read-write/rdma-client" "${CT[@]}" -s 4K "$RDMA_IP")
		OK='^verified 4096 bytes$'
		;;
	03)
		SRV=("$ROOT/03_file-transfer/rdma-server" -r "$W/root")
		CLI=("$ROOT/03_file-transfer/rdma-client" "${CT[@]}" "$RDMA_IP:f" "$W/got")
		OK='^get f: 5000 bytes .* verified$'
		;;
	esac
}

t_allow_on_every_server() {
	local ex allow
	mkdir -p "$W/root"
	head -c 5000 /dev/urandom >"$W/root/f"
	for ex in 01 02 03; do
		example "$ex"
		start_server "no$ex" "${SRV[@]}" "${NOT_US[@]}" || return 1
		run "c$ex" "${CLI[@]}" -p "$PORT"
		want_rc "c$ex" 3 || return 1
		want_err "c$ex" "the server rejected the connection: not allowed" || return 1
		wait_for "no$ex" "^server: client $RDMA_IP port [0-9]+: not allowed \(no --allow prefix matches\); refused$" 5 || return 1
		alive "no$ex" || return 1
		stop_server "no$ex" || return 1
		# Named by its own /32, by its /24, or by 0.0.0.0/0, among others.
		case $ex in
		01) allow=$RDMA_IP/32 ;;
		02) allow=${RDMA_IP%.*}.0/24 ;;
		03) allow=0.0.0.0/0 ;;
		esac
		start_server "yes$ex" "${SRV[@]}" "${NOT_US[@]}" --allow "$allow" || return 1
		rm -f "$W/got"
		run "d$ex" "${CLI[@]}" -p "$PORT"
		want_rc "d$ex" 0 || return 1
		want_out "d$ex" "$OK" || return 1
		! grep -q "not allowed" "$T/yes$ex.err" || fail "yes$ex refused with --allow $allow" || return 1
		stop_server "yes$ex" || return 1
	done
}

t_allow_bad_prefix_is_a_usage_error() {
	run bad "$ROOT/02_read-write/rdma-server" -p 0 --allow 10.0.0.1/8
	want_rc bad 2 || return 1
	want_err bad "invalid --allow '10.0.0.1/8': bits set beyond the prefix length 8" || return 1
	run bad6 "$ROOT/01_basic-client-server/rdma-server" -p 0 --allow fe80::1%eth0
	want_rc bad6 2 || return 1
	want_err bad6 "not an IPv4 or IPv6 address" || return 1
}

t_allow_flood_log_is_rate_limited() {
	local t0 t1 logged summed windows
	mkdir -p "$W/root"
	start_server srv "$ROOT/03_file-transfer/rdma-server" -r "$W/root" "${NOT_US[@]}" || return 1
	t0=$(date +%s%N)
	run flood "$H" --timeout 5 03-security "$RDMA_IP" "$PORT" allow-flood
	t1=$(date +%s%N)
	want_rc flood 0 || return 1
	want_out flood "^case allow-flood port 0: ok: 50 of 50 connection requests refused as not allowed" || return 1
	# The summary of a second comes when that second is over.
	nap 1.5
	alive srv || return 1
	stop_server srv || return 1
	logged=$(grep -c ': not allowed (no --allow prefix matches); refused$' "$T/srv.err")
	summed=$(sed -n 's/^server: \([0-9][0-9]*\) more connection requests refused within 1.0 s.*/\1/p' \
		"$T/srv.err" | awk '{ s += $1 } END { print s + 0 }')
	# Windows of one second that the flood can have touched.
	windows=$(((t1 - t0) / 1000000000 + 2))
	echo "    flood: 50 refused in $(((t1 - t0) / 1000000)) ms; $logged logged one by one, $summed in summaries"
	[ $((logged + summed)) = 50 ] || fail "$logged lines + $summed in summaries, not 50: $(tail_of "$T/srv.err" 4)" || return 1
	[ "$logged" -le $((10 * windows)) ] || fail "$logged lines within $windows windows of 1 s" || return 1
	[ "$summed" -gt 0 ] || fail "no summary: 50 requests took $(((t1 - t0) / 1000000)) ms, under 10 per second" || return 1
}

run_tests t_allow_on_every_server t_allow_bad_prefix_is_a_usage_error t_allow_flood_log_is_rate_limited
