#!/usr/bin/env bash
# End-to-end tests of 02_read-write on a real (or Soft-RoCE) device.
# Run through tools/rdma-env, which sets RDMA_IP.
# shellcheck source=../lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/../lib.sh"

S=$ROOT/02_read-write/rdma-server
C=$ROOT/02_read-write/rdma-client
CT=(--timeout 5) # client timeout: every wait in the client is bounded by it
HEX='0x[0-9a-f]{16}'

# The checksum printed on a line of NAME's stdout matching REGEX.
sum_of() {
	grep -E -- "$2" "$T/$1.out" | grep -Eo "fnv1a64 $HEX" | head -n1 | cut -d' ' -f2
}

# want_verified CLIENT SERVER SIZE: the client verified SIZE bytes, and the
# three checksums (client's own, the server's as the client received it, the
# server's as the server printed it) are one and the same.
want_verified() {
	local c s1
	want_out "$1" "^verified $3 bytes$" || return 1
	c=$(sum_of "$1" "^client checksum: .* over $3 bytes$")
	s1=$(sum_of "$1" "^server checksum: .* over $3 bytes$")
	[ -n "$c" ] && [ "$c" = "$s1" ] ||
		fail "checksums of $3 bytes differ or are missing: client '$c', server (as received) '$s1'" || return 1
	grep -Eq "^client $RDMA_IP port [0-9]+ done: $3 bytes, checksum fnv1a64 $c, the same as the client's$" "$T/$2.out" ||
		fail "the server printed no checksum $c for $3 bytes: $(tail_of "$T/$2.out")"
}

t_write_read_verify_default() {
	start_server srv "$S" --once || return 1
	run cli "$C" "${CT[@]}" "$RDMA_IP" "$PORT"
	want_rc cli 0 || return 1
	# SIZE defaults to the advertised length (the server's default 1 MiB).
	want_out cli "^server buffer: 1048576 bytes at 0x[0-9a-f]+, rkey 0x[0-9a-f]+, write\+read, read depth 16$" || return 1
	want_out cli "^wrote 1048576 bytes in 1 RDMA WRITE$" || return 1
	want_out cli "^read 1048576 bytes in 1 RDMA READ$" || return 1
	wait_exit srv 10
	want_rc srv 0 || return 1
	want_out srv "1048576-byte buffer, access LOCAL_WRITE\|REMOTE_WRITE\|REMOTE_READ, read depth 16$" || return 1
	want_verified cli srv 1048576
}

# want_pieces NAME SIZE MAX: NAME wrote and read SIZE bytes in as many WRs
# as a message limit of MAX bytes makes.
want_pieces() {
	local pieces=$((($2 + $3 - 1) / $3))
	if [ "$pieces" = 1 ]; then
		want_out "$1" "^wrote $2 bytes in 1 RDMA WRITE$" || return 1
		want_out "$1" "^read $2 bytes in 1 RDMA READ$"
	else
		want_out "$1" "^wrote $2 bytes in $pieces RDMA WRITEs \(max_msg_sz $3\)$" || return 1
		want_out "$1" "^read $2 bytes in $pieces RDMA READs \(max_msg_sz $3\)$"
	fi
}

# Sizes up to BIG_S bytes; real NICs and rxe since 6.12 allow messages of
# 1-2 GiB, too much for a test in an emulated VM.
BIG_S=$((64 << 20))

# verify_sizes MAX SIZE...: one server with a buffer of the last SIZE; a
# client per SIZE writes, reads back and verifies it, in as many WRs as
# the message limit MAX makes.
verify_sizes() {
	local max=$1 size n=0
	shift
	start_server srv "$S" -s "${!#}" || return 1
	for size in "$@"; do
		n=$((n + 1))
		run cli$n "$C" "${CT[@]}" -s "$size" "$RDMA_IP" "$PORT"
		want_rc cli$n 0 || return 1
		want_verified cli$n srv "$size" || return 1
		want_pieces cli$n "$size" "$max" || return 1
	done
	alive srv || return 1
	stop_server srv
}

t_sizes_verified() {
	local max
	max=$(dev_max_msg_sz)
	[ -n "$max" ] || fail "the port's max_msg_sz is unknown (ibv_devinfo -v)" || return 1
	verify_sizes "$max" 1 4096 $((1048576 + 3))
}

# One WR of exactly max_msg_sz, then max_msg_sz + 3 bytes: two WRs, the
# last of 3 bytes. Skipped where max_msg_sz + 3 is over the largest buffer
# the server gives (its --help) or BIG_S: nothing can be split there.
t_split_at_max_msg_sz() {
	local max lim
	max=$(dev_max_msg_sz)
	lim=$(size_max "$S" -s 0)
	[ -n "$max" ] && [ -n "$lim" ] || fail "max_msg_sz '$max' or the size limit '$lim' unknown" || return 1
	if [ $((max + 3)) -gt "$lim" ] || [ $((max + 3)) -gt "$BIG_S" ]; then
		REASON="max_msg_sz $max: a message above it is over the server's limit of $lim bytes or this test's $BIG_S"
		return 77
	fi
	verify_sizes "$max" "$max" $((max + 3))
}

# want_bandwidth NAME OP DEPTH: the line for 200 x 16 KiB, with MiB/s and
# Gb/s consistent with bytes and seconds (perftest's units).
want_bandwidth() {
	local s mib gb re="^$2: 200 x 16384 bytes in ([0-9.]+) s = ([0-9.]+) MiB/s = ([0-9.]+) Gb/s \(depth $3\)$"
	want_out "$1" "$re" || return 1
	read -r s mib gb < <(sed -En "s#$re#\1 \2 \3#p" "$T/$1.out")
	awk -v s="$s" -v m="$mib" -v g="$gb" 'BEGIN {
		b = 200 * 16384; if (s <= 0) exit 1
		em = b / 1048576 / s; eg = b * 8 / 1e9 / s
		# Allow only for the rounding of the printed figures: s to 1 ms,
		# MiB/s to 0.1, Gb/s to 0.01.
		r = 0.0005 / s + 0.002
		dm = m - em; dg = g - eg
		exit !(dm * dm <= (em * r + 0.051) ^ 2 && dg * dg <= (eg * r + 0.0051) ^ 2)
	}' || fail "$2 bandwidth figures inconsistent: $s s, $mib MiB/s, $gb Gb/s"
}

t_pipelined_write_and_read() {
	local op d posts sig
	start_server srv "$S" -s 16K || return 1
	for op in write read; do
		for d in 1 16; do
			run $op$d "$C" "${CT[@]}" --op $op -n 200 -t $d -v "$RDMA_IP" "$PORT"
			want_rc $op$d 0 || return 1
			want_bandwidth $op$d $op $d || return 1
			want_verified $op$d srv 16384 || return 1
			# Selective signalling: with depth 1 every WR asks for a
			# completion; with depth 16 every 8th and the last (25).
			posts=$(grep -c "^client: post RDMA_${op^^} " "$T/$op$d.err")
			sig=$(grep -c "^client: post RDMA_${op^^} .* signaled$" "$T/$op$d.err")
			[ "$posts" = 200 ] || fail "$op depth $d: $posts WRs posted, expected 200" || return 1
			[ "$sig" = $((d == 1 ? 200 : 25)) ] ||
				fail "$op depth $d: $sig of 200 WRs signalled" || return 1
		done
	done
	stop_server srv
}

t_two_clients_at_once_each_own_buffer() {
	local i k1 k2
	start_server srv "$S" -s 1M || return 1
	for i in 1 2; do
		spawn cli$i "$C" "${CT[@]}" -n 5 "$RDMA_IP" "$PORT"
	done
	for i in 1 2; do
		wait_exit cli$i 60
		want_rc cli$i 0 || return 1
		want_out cli$i "^verified 1048576 bytes$" || return 1
	done
	# Each wrote its own random pattern: two different checksums, each
	# confirmed by the server for that client.
	[ "$(sum_of cli1 '^client checksum')" != "$(sum_of cli2 '^client checksum')" ] ||
		fail "both clients report the same checksum" || return 1
	for i in 1 2; do
		grep -q "done: 1048576 bytes, checksum fnv1a64 $(sum_of cli$i '^client checksum'), the same" "$T/srv.out" ||
			fail "the server did not confirm client $i's checksum" || return 1
	done
	k1=$(sed -n 's/^server buffer: .* rkey \(0x[0-9a-f]*\),.*/\1/p' "$T/cli1.out")
	k2=$(sed -n 's/^server buffer: .* rkey \(0x[0-9a-f]*\),.*/\1/p' "$T/cli2.out")
	[ -n "$k1" ] && [ "$k1" != "$k2" ] || fail "clients got rkeys '$k1' and '$k2'" || return 1
	# A later client reads a fresh buffer: the server's own pattern, never
	# what an earlier client wrote.
	run rd "$C" "${CT[@]}" --op read "$RDMA_IP" "$PORT"
	want_rc rd 0 || return 1
	want_out rd "^verified 1048576 bytes$" || return 1
	want_out srv "1048576-byte buffer, access REMOTE_READ, read depth 16$" || return 1
	stop_server srv
}

# want_completion NAME WR_ID WHAT STATUS: NAME printed that completion.
want_completion() {
	want_out "$1" "^completion of wr_id $2 \($3\): $4 \(.*\) (after )?[0-9.]+ ms"
}

# serves_next SERVER SIZE: after a lesson the server is alive and serves a
# normal client (its buffer verified).
serves_next() {
	alive "$1" || return 1
	run next "$C" "${CT[@]}" -s "$2" "$RDMA_IP" "$PORT"
	want_rc next 0 || return 1
	want_verified next "$1" "$2"
}

# The server's line for a lesson client whose QP was refused: its receive
# for DONE flushed.
want_server_flushed() {
	wait_for "$1" "^server: client $RDMA_IP port [0-9]+: the receive for DONE was flushed" 10
}

t_inject_bad_rkey() {
	start_server srv "$S" -s 64K || return 1
	run bad "$C" "${CT[@]}" --inject bad-rkey "$RDMA_IP" "$PORT"
	want_lesson_shown bad bad-rkey "IBV_WC_REM_ACCESS_ERR after [0-9.]+ ms" || return 1
	want_completion bad 1000 "the WRITE with the wrong rkey" "IBV_WC_REM_ACCESS_ERR" || return 1
	want_completion bad 1001 "the correct WRITE behind it" "IBV_WC_WR_FLUSH_ERR" || return 1
	# Our receive for RESULT is flushed too, before or after the WRITE
	# behind (6.1 before, 6.12 and 7.3 after): the client waits for it.
	want_completion bad 1 "our receive for RESULT" "IBV_WC_WR_FLUSH_ERR" || return 1
	want_out bad "^our QP is now in state ERR" || return 1
	want_out bad "^What happened: the WRITE carried an rkey the server never handed out\.$" || return 1
	want_out bad "^failed one completed with IBV_WC_WR_FLUSH_ERR, as every work request$" || return 1
	# The server logs this client's failure and goes on serving.
	want_server_flushed srv || return 1
	want_out srv "65536-byte buffer, access LOCAL_WRITE\|REMOTE_WRITE\|REMOTE_READ, read depth 16, lesson bad-rkey$" || return 1
	serves_next srv 65536 || return 1
	stop_server srv
}

t_lesson_no_remote_read() {
	start_server srv "$S" -s 64K || return 1
	run les "$C" "${CT[@]}" --inject no-remote-read "$RDMA_IP" "$PORT"
	want_lesson_shown les no-remote-read "IBV_WC_REM_ACCESS_ERR after [0-9.]+ ms" || return 1
	want_out les "^inject no-remote-read: the server registered its buffer with access LOCAL_WRITE\|REMOTE_WRITE,$" || return 1
	want_completion les 1000 "the WRITE" "IBV_WC_SUCCESS" || return 1
	want_completion les 1001 "the READ" "IBV_WC_REM_ACCESS_ERR" || return 1
	want_out les "^What happened: the server's memory region has no IBV_ACCESS_REMOTE_READ,$" || return 1
	want_out les "^The WRITE, with the same address and rkey, succeeded: REMOTE_WRITE is$" || return 1
	# The server's side of it: the flags it really used, and the flush.
	want_out srv "65536-byte buffer, access LOCAL_WRITE\|REMOTE_WRITE, read depth 16, lesson no-remote-read$" || return 1
	want_server_flushed srv || return 1
	# READ only: the region has no flags at all; the READ alone fails.
	run rd "$C" "${CT[@]}" --op read --inject no-remote-read "$RDMA_IP" "$PORT"
	want_lesson_shown rd no-remote-read "IBV_WC_REM_ACCESS_ERR after [0-9.]+ ms" || return 1
	want_completion rd 1000 "the READ" "IBV_WC_REM_ACCESS_ERR" || return 1
	want_out srv "65536-byte buffer, access none, read depth 16, lesson no-remote-read$" || return 1
	serves_next srv 65536 || return 1
	stop_server srv
}

t_lesson_out_of_bounds() {
	local page len half
	page=$(getconf PAGESIZE)
	len=$((page - 1)) half=$(((page - 1) / 2))
	start_server srv "$S" || return 1
	# Without -s the lesson asks for one byte less than a page: the byte
	# past the buffer is in the buffer's last page.
	run les "$C" "${CT[@]}" --inject out-of-bounds "$RDMA_IP" "$PORT"
	want_lesson_shown les out-of-bounds "IBV_WC_REM_ACCESS_ERR after [0-9.]+ ms" || return 1
	want_out les "^server buffer: $len bytes at " || return 1
	want_out les "^rc_remote_range_ok\(offset $((len - half + 1)), $half bytes\) says no: a normal client never$" || return 1
	want_completion les 1000 "the READ of the last bytes" "IBV_WC_SUCCESS" || return 1
	want_completion les 1001 "the READ one byte further" "IBV_WC_REM_ACCESS_ERR" || return 1
	want_out les "^The byte past the end is in the same page as the buffer's last byte$" || return 1
	want_out les "^still the READ was refused: a region's bounds are exact to the byte\.$" || return 1
	want_server_flushed srv || return 1
	# A page-aligned end (-s 64K): the same refusal, without the page remark.
	run les2 "$C" "${CT[@]}" -s 64K --inject out-of-bounds "$RDMA_IP" "$PORT"
	want_lesson_shown les2 out-of-bounds "IBV_WC_REM_ACCESS_ERR after [0-9.]+ ms" || return 1
	[ "$(count_out les2 'same page')" = 0 ] || fail "the page remark for a page-aligned end" || return 1
	serves_next srv 65536 || return 1
	stop_server srv
}

t_lesson_no_read_depth() {
	local t0 t1
	start_server srv "$S" -s 64K || return 1
	t0=$(date +%s%N)
	run les "$C" --timeout 2 --inject no-read-depth "$RDMA_IP" "$PORT"
	t1=$(date +%s%N)
	want_rc les 4 || return 1
	want_out les "^server buffer: 65536 bytes at .*, write\+read, read depth 0$" || return 1
	want_out les "^with responder_resources 0, and our QP's max_rd_atomic is 0\. Now one RDMA$" || return 1
	want_out srv "^lesson no-read-depth for $RDMA_IP port [0-9]+: accepting with responder_resources 0 \(its initiator_depth is 0\)$" || return 1
	want_out srv "65536-byte buffer, access LOCAL_WRITE\|REMOTE_WRITE\|REMOTE_READ, read depth 0, lesson no-read-depth$" || return 1
	# What the READ did, as the client saw it: either it never completed
	# (then it was flushed once the QP was moved to ERR, after the
	# timeout), or it failed with an error status. Never success.
	if grep -q "^no completion within 2000 ms; moving our QP to the error state now$" "$T/les.out"; then
		want_lesson_shown les no-read-depth "no completion within 2000 ms; IBV_WC_WR_FLUSH_ERR after the QP was moved to ERR" || return 1
		want_completion les 1000 "the READ" "IBV_WC_WR_FLUSH_ERR" || return 1
		want_out les "^What happened: for 2000 ms the READ neither completed nor failed: no NAK,$" || return 1
		[ $(((t1 - t0) / 1000000)) -ge 2000 ] || fail "the client gave up before its 2 s timeout" || return 1
	else
		want_completion les 1000 "the READ" "IBV_WC_[A-Z_]+_ERR" || return 1
		want_lesson_shown les no-read-depth "IBV_WC_[A-Z_]+_ERR after [0-9.]+ ms" || return 1
	fi
	want_out les "^and the CM sets the client QP's max_rd_atomic from the server's answer\.$" || return 1
	# The server sees the client leave before DONE, and serves the next.
	wait_for srv "^server: client $RDMA_IP port [0-9]+: the client disconnected before it was done" 10 || return 1
	serves_next srv 65536 || return 1
	stop_server srv
}

t_lesson_unaligned() {
	start_server srv "$S" -s 1M || return 1
	run les "$C" "${CT[@]}" --inject unaligned "$RDMA_IP" "$PORT"
	want_lesson_shown les unaligned "verified 1048576 bytes at odd addresses" || return 1
	want_out les "^inject unaligned: our WRITE source is at 0x[0-9a-f]*[13579bdf] and our READ destination at 0x[0-9a-f]*[13579bdf]$" || return 1
	want_out les "^\(malloc'd, one byte in\); the server's buffer is at 0x[0-9a-f]*[13579bdf] \(an odd address\)\.$" || return 1
	want_out srv "^lesson unaligned for $RDMA_IP port [0-9]+: its buffer is at 0x[0-9a-f]*[13579bdf] \(malloc'd, odd\)$" || return 1
	# The data itself: three equal checksums, as for any transfer.
	want_verified les srv 1048576 || return 1
	want_out les "^length, and the WRITE and READ moved the data correctly \(1048576 bytes$" || return 1
	serves_next srv 65536 || return 1
	stop_server srv
}

t_lesson_dereg_other() {
	local kept gone
	start_server srv "$S" -s 64K || return 1
	run les "$C" "${CT[@]}" --inject dereg-other "$RDMA_IP" "$PORT"
	want_lesson_shown les dereg-other "the kept MR's READ succeeded; IBV_WC_REM_ACCESS_ERR through the deregistered one after [0-9.]+ ms" || return 1
	want_completion les 1000 "the READ through the kept MR" "IBV_WC_SUCCESS" || return 1
	want_completion les 1001 "the READ through the deregistered MR" "IBV_WC_REM_ACCESS_ERR" || return 1
	# The rkeys the client used are the ones the server registered.
	kept=$(sed -En 's/^\(rkeys (0x[0-9a-f]+) and (0x[0-9a-f]+)\) .*/\1/p' "$T/les.out")
	gone=$(sed -En 's/^\(rkeys (0x[0-9a-f]+) and (0x[0-9a-f]+)\) .*/\2/p' "$T/les.out")
	[ -n "$kept" ] && [ -n "$gone" ] && [ "$kept" != "$gone" ] || fail "rkeys '$kept' '$gone'" || return 1
	want_out srv "^lesson dereg-other for $RDMA_IP port [0-9]+: registered its buffer again \(rkey $gone\) and deregistered that MR; rkey $kept stays$" || return 1
	want_out les "^the server's data \(checked\): deregistering the other MR did not touch it,$" || return 1
	want_server_flushed srv || return 1
	serves_next srv 65536 || return 1
	stop_server srv
}

# hex_of NAME REGEX: the first 0x + 16 hex digits on a line of NAME's
# stdout matching REGEX (in bash: a grep costs more in the VM).
hex_of() {
	local l
	while IFS= read -r l; do
		[[ $l =~ $2 ]] && [[ $l =~ $HEX ]] && { echo "${BASH_REMATCH[0]}"; return; }
	done <"$T/$1.out"
}
# hex64 EXPR: EXPR as 0x + 16 hex digits (bash's arithmetic wraps modulo
# 2^64, as the word does).
hex64() { printf '0x%016x' "$(($1))"; }

# The atomics: fetch-add and cmp-swap with every original and the final
# word checked by the client and the word printed by the server, the byte
# order of the originals (Soft-RoCE: host order on every kernel measured,
# 6.1, 6.12 and 7.x), sequence.txt's atomics, both atomic lessons, and
# --shared with --json. One server for all (a server start costs seconds
# in the VM): the clients after the lessons show that it serves on.
t_atomics_and_their_lessons() {
	local first want v0 posts sig
	start_server srv "$S" -v || return 1
	# First, so that the server's trace begins with it: one -v run for
	# sequence.txt's atomics section and the checks, 20 fetch-adds of 3,
	# at most 8 in flight, every 4th signalled (5).
	run fa "$C" "${CT[@]}" -v --op fetch-add -n 20 --add 3 -t 8 "$RDMA_IP" "$PORT"
	want_rc fa 0 || return 1
	check_sequence "02_read-write atomics" c fa || return 1
	check_sequence "02_read-write atomics" s srv || return 1
	posts=$(grep -c "^client: post ATOMIC_FETCH_AND_ADD " "$T/fa.err")
	sig=$(grep -c "^client: post ATOMIC_FETCH_AND_ADD .* signaled$" "$T/fa.err")
	[ "$posts/$sig" = 20/5 ] || fail "$posts fetch-adds posted, $sig signalled: expected 20, 5" || return 1
	want_out fa "^server buffer: 8 bytes at 0x[0-9a-f]+, rkey 0x[0-9a-f]+, fetch-add, atomic depth 8$" || return 1
	want_out fa "^our device $RDMA_DEV: atomic_cap IBV_ATOMIC_HCA \(atomic among the atomics of this device only, not against the CPU or other devices\)$" || return 1
	want_out fa "^byte order of the returned original: as in the server's memory \(host order, little-endian here\)$" || return 1
	first=$(hex_of fa "^fetch-add: first original ")
	[ -n "$first" ] || fail "no first original" || return 1
	want_out fa "^fetch-add: 20 originals, each 3 more than the one before, the last $(hex64 "$first + 19 * 3")$" || return 1
	want_out fa "^fetch-add: 20 operations in [0-9.]+ s = [0-9.]+ Mpps \(depth 8\)$" || return 1
	want=$(hex64 "$first + 60")
	want_out fa "^client expects: $want \([0-9]+\) in the word$" || return 1
	want_out fa "^server's word:  $want \([0-9]+\)$" || return 1
	want_out fa "^verified 20 fetch-adds and the word's final value$" || return 1
	want_out srv "8-byte buffer, access LOCAL_WRITE\|REMOTE_ATOMIC, atomic depth 8, atomic_cap IBV_ATOMIC_HCA$" || return 1
	wait_for srv "^client $RDMA_IP port [0-9]+ done: its word holds $want \([0-9]+\), the same as the client's$" 5 || return 1
	# The lessons: an unaligned atomic, refused at ibv_post_send.
	run un "$C" "${CT[@]}" --inject atomic-unaligned "$RDMA_IP" "$PORT"
	want_lesson_shown un atomic-unaligned "ibv_post_send: EINVAL, no completion; the correct fetch-add behind it succeeded" || return 1
	want_out un "^ibv_post_send returned EINVAL \(Invalid argument\) after [0-9.]+ ms, bad_wr at wr_id 1000:$" || return 1
	want_completion un 1001 "the correct atomic behind it" "IBV_WC_SUCCESS" || return 1
	[ "$(count_out un '^completion of wr_id 1000 ')" = 0 ] || fail "a completion for the refused atomic" || return 1
	want_out un "^our QP is now in state RTS" || return 1
	want_out un "^Soft-RoCE's library \(rdma-core's rxe provider\) makes this check in user$" || return 1
	want_out srv "16-byte buffer, access LOCAL_WRITE\|REMOTE_ATOMIC, atomic depth 16, atomic_cap IBV_ATOMIC_HCA, lesson atomic-unaligned$" || return 1
	# An atomic on a word registered without REMOTE_ATOMIC.
	run na "$C" "${CT[@]}" --op cmp-swap --inject atomic-no-access "$RDMA_IP" "$PORT"
	want_lesson_shown na atomic-no-access "IBV_WC_REM_ACCESS_ERR after [0-9.]+ ms" || return 1
	want_out na "^LOCAL_WRITE\|REMOTE_WRITE\|REMOTE_READ, as a buffer for WRITE and READ: without$" || return 1
	want_completion na 1000 "the atomic" "IBV_WC_REM_ACCESS_ERR" || return 1
	want_out na "^What happened: the server's memory region has no IBV_ACCESS_REMOTE_ATOMIC,$" || return 1
	want_out srv "8-byte buffer, access LOCAL_WRITE\|REMOTE_WRITE\|REMOTE_READ, atomic depth 16, atomic_cap IBV_ATOMIC_HCA, lesson atomic-no-access$" || return 1
	want_server_flushed srv || return 1
	# cmp-swap: read V0 (the fresh word), 5 swaps of 7, one stale compare.
	run cs "$C" "${CT[@]}" --op cmp-swap -n 5 --add 7 "$RDMA_IP" "$PORT"
	want_rc cs 0 || return 1
	v0=$(hex_of cs "^cmp-swap: compare 0 and swap 0 \(never changes the word\) read ")
	[ "$v0" = "$first" ] || fail "cmp-swap read $v0, not the fresh word $first" || return 1
	want_out cs "^cmp-swap: 5 compare-and-swaps each returned its compare value: swapped, $v0 to $(hex64 "$v0 + 35")$" || return 1
	want_out cs "^cmp-swap: one more with the value before the last swap, $(hex64 "$v0 + 28"), as compare returned $(hex64 "$v0 + 35"): not swapped, as it must be$" || return 1
	want_out cs "^verified 6 compare-and-swaps and the word's final value$" || return 1
	wait_for srv "done: its word holds $(hex64 "$v0 + 35") \([0-9]+\), the same as the client's$" 5 || return 1
	# --shared: increasing originals, a word at least the last one + 1.
	run sh "$C" "${CT[@]}" --json --op fetch-add --shared -n 20 "$RDMA_IP" "$PORT"
	want_rc sh 0 || return 1
	want_json sh "d['ok'] is True and d['op'] == 'fetch-add' and d['size'] == 8 and
		d['verified'] is True and d['write'] is None and err == '' and
		d['atomic']['operations'] == 20 and d['atomic']['shared'] is True and
		d['atomic']['byte_order'] is None and d['atomic']['atomic_cap'] == 'IBV_ATOMIC_HCA' and
		d['atomic']['depth'] == 16 and d['atomic']['mpps'] > 0 and
		d['atomic']['first_original'] == $first and
		d['atomic']['expected'] == d['atomic']['server_word'] == ($first + 20) % 2**64" || return 1
	stop_server srv
}

t_bad_requests_leave_server_unaffected() {
	start_server srv "$S" -s 1M || return 1
	# More than the server offers: refused at connect, before any WR.
	run big "$C" "${CT[@]}" -s 2M "$RDMA_IP" "$PORT"
	want_rc big 3 || return 1
	want_err big "rejected the connection: asks for a 2097152-byte buffer; this server gives each client at most 1048576 bytes" || return 1
	run op "$C" "${CT[@]}" --op copy "$RDMA_IP" "$PORT"
	want_rc op 2 || return 1
	want_err op "unknown --op 'copy' \(write, read, both, fetch-add or cmp-swap\) \(try --help\)" || return 1
	alive srv || return 1
	run cli "$C" "${CT[@]}" -s 1M "$RDMA_IP" "$PORT"
	want_rc cli 0 || return 1
	want_verified cli srv 1048576 || return 1
	stop_server srv
}

t_bad_options() {
	want_client_usage "$C" || return 1
	run c3 "$C" -s 0 "$RDMA_IP"; want_rc c3 2 || return 1
	want_err c3 "invalid size '0'" || return 1
	run c4 "$C" -s 2G "$RDMA_IP"; want_rc c4 2 || return 1
	run c5 "$C" -n 0 "$RDMA_IP"; want_rc c5 2 || return 1
	run c6 "$C" -t 0 "$RDMA_IP"; want_rc c6 2 || return 1
	want_err c6 "invalid depth '0'" || return 1
	run c7 "$C" --inject bad-lkey "$RDMA_IP"; want_rc c7 2 || return 1
	want_err c7 "unknown --inject 'bad-lkey'" || return 1
	run c8 "$C" --inject bad-rkey --op read "$RDMA_IP"; want_rc c8 2 || return 1
	run c10 "$C" --inject dereg-other --op write "$RDMA_IP"; want_rc c10 2 || return 1
	want_err c10 "--inject dereg-other posts a READ: use --op read or both" || return 1
	run c9 "$C" --timeout 0 "$RDMA_IP"; want_rc c9 2 || return 1
	# The atomics' options.
	run c11 "$C" --op fetch-add -s 4K "$RDMA_IP"; want_rc c11 2 || return 1
	want_err c11 "--size is not for atomics: each works on one 8-byte word" || return 1
	run c12 "$C" --op cmp-swap --shared "$RDMA_IP"; want_rc c12 2 || return 1
	want_err c12 "--shared is for --op fetch-add" || return 1
	run c13 "$C" --inject atomic-no-access --op read "$RDMA_IP"; want_rc c13 2 || return 1
	want_err c13 "--inject atomic-no-access posts an atomic: use --op fetch-add or cmp-swap" || return 1
	run c14 "$C" --op fetch-add --add 0 "$RDMA_IP"; want_rc c14 2 || return 1
	run c15 "$C" --op write --add 2 "$RDMA_IP"; want_rc c15 2 || return 1
	run s1 "$S" -s 0; want_rc s1 2 || return 1
	want_err s1 "invalid size '0'" || return 1
	run s2 "$S" stray-argument; want_rc s2 2 || return 1
	run h1 "$C" --help; want_rc h1 0 || return 1
	want_out h1 "^usage: rdma-client" || return 1
	# --help names every lesson, and the exit code of a lesson.
	local l
	for l in bad-rkey no-remote-read out-of-bounds no-read-depth unaligned dereg-other \
		atomic-unaligned atomic-no-access; do
		want_out h1 "^          $l  " || return 1
	done
	want_out h1 "^4 an --inject lesson showed what it teaches\.$" || return 1
	run h2 "$S" --help; want_rc h2 0 || return 1
	want_out h2 "^usage: rdma-server"
}

t_nothing_listening() {
	start_server tmp "$S" || return 1
	local free=$PORT
	stop_server tmp || return 1
	run cli "$C" --timeout 3 "$RDMA_IP" "$free"
	want_rc cli 3 || return 1
	want_err cli "REJECTED.*is a server listening on that port\?"
}

t_long_run_server_probes_client() {
	# The server's wait for DONE (1 s here) is shorter than the client's
	# run: it must probe the client, not give up on it.
	start_server srv "$S" -s 1M --timeout 1 -v || return 1
	run cli "$C" "${CT[@]}" --op write -n 120 -t 4 "$RDMA_IP" "$PORT"
	want_rc cli 0 || return 1
	want_verified cli srv 1048576 || return 1
	local secs
	secs=$(sed -En 's/^write: .* in ([0-9.]+) s = .*/\1/p' "$T/cli.out")
	if awk -v s="$secs" 'BEGIN { exit !(s > 1.5) }'; then
		want_err srv "no DONE within 1000 ms: probing the client" || return 1
		want_err srv "the client's NIC answered: still working" || return 1
	fi
	stop_server srv
}

t_client_killed_server_survives() {
	start_server srv "$S" -s 64K || return 1
	spawn bad "$C" "${CT[@]}" --op write -n 100000000 "$RDMA_IP" "$PORT"
	wait_for bad "^server buffer:" 15 || return 1
	nap 1
	kill -9 "${PID[bad]}"
	wait_for srv "client $RDMA_IP port [0-9]+: the client disconnected before it was done" 10 || return 1
	alive srv || return 1
	run cli "$C" "${CT[@]}" "$RDMA_IP" "$PORT"
	want_rc cli 0 || return 1
	want_verified cli srv 65536 || return 1
	stop_server srv
}

t_server_stops_cleanly_with_client_connected() {
	start_server srv "$S" -s 64K || return 1
	spawn cli "$C" --timeout 5 --op write -n 100000000 "$RDMA_IP" "$PORT"
	wait_for cli "^server buffer:" 15 || return 1
	stop_server srv || return 1
	# The client's WRITEs fail or it sees the disconnect: exit 1, no hang.
	wait_exit cli 15
	want_rc cli 1
}

t_sequence_matches_trace() {
	start_server srv "$S" --once -v || return 1
	run cli "$C" "${CT[@]}" -v "$RDMA_IP" "$PORT"
	want_rc cli 0 || return 1
	wait_exit srv 10
	want_rc srv 0 || return 1
	check_sequence 02_read-write c cli || return 1
	check_sequence 02_read-write s srv || return 1
	# The defaults: ACK timeout 2^14 x 4.096 us, retry count 7, on both QPs.
	want_qp_retry cli 14 7 || return 1
	want_qp_retry srv 14 7
}

t_retry_options_reach_the_qps() {
	retry_options_reach_qps "$S" "$C" 19 1 14 5 -s 64K || return 1
	run bad "$C" --retry-count 8 "$RDMA_IP" "$PORT"
	want_rc bad 2 || return 1
	want_err bad "invalid retry count '8' \(0 to 7\)"
}

t_json_output() {
	local sum
	start_server srv "$S" || return 1
	run cli "$C" "${CT[@]}" --json -s 256K -n 20 -t 8 "$RDMA_IP" "$PORT"
	want_rc cli 0 || return 1
	want_json cli "d['ok'] is True and d['program'] == 'rdma-client' and
		d['example'] == '02_read-write' and d['op'] == 'write+read' and
		d['server'] == '$RDMA_IP' and d['port'] == $PORT and d['size'] == 262144 and
		d['iters'] == 20 and d['depth'] == 8 and d['bytes'] == 2 * 20 * 262144 and
		all(d[p]['bytes'] == 20 * 262144 and d[p]['seconds'] > 0 and d[p]['mib_s'] > 0 and
		    d[p]['gb_s'] > 0 and 1 <= d[p]['depth'] <= 8 for p in ('write', 'read')) and
		d['write']['depth'] == 8 and
		abs(d['seconds'] - d['write']['seconds'] - d['read']['seconds']) < 1e-6 and
		d['verified'] is True and d['error'] is None and d['exit_code'] == 0 and err == ''" || return 1
	# The checksum is the one the server computed over its buffer.
	sum=$("$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["checksum"].split(":")[1])' <"$T/cli.out")
	wait_for srv "done: 262144 bytes, checksum fnv1a64 0x$sum, the same" 5 || return 1
	# A lesson: one object, exit 4, what it saw, no error.
	run bad "$C" "${CT[@]}" --json --inject bad-rkey -s 4K "$RDMA_IP" "$PORT"
	want_rc bad 4 || return 1
	want_json bad "d['ok'] is True and d['exit_code'] == 4 and d['op'] == 'inject-bad-rkey' and
		d['write'] is None and d['verified'] is False and d['checksum'] is None and
		d['lesson_saw'].startswith('IBV_WC_REM_ACCESS_ERR after ') and d['error'] is None and
		err == ''" || return 1
	run una "$C" "${CT[@]}" --json --inject unaligned -s 4K "$RDMA_IP" "$PORT"
	want_rc una 4 || return 1
	want_json una "d['ok'] is True and d['exit_code'] == 4 and d['op'] == 'inject-unaligned' and
		d['verified'] is True and d['lesson_saw'] == 'verified 4096 bytes at odd addresses'" || return 1
	# A failure: still one object, the reason as stderr has it.
	run big "$C" "${CT[@]}" --json -s 2M "$RDMA_IP" "$PORT"
	want_rc big 3 || return 1
	want_json big "d['ok'] is False and d['exit_code'] == 3 and 'lesson_saw' not in d and
		'rdma-client: ' + d['error'] + '\n' == err" || return 1
	stop_server srv || return 1
	run none "$C" --timeout 3 --json "$RDMA_IP" "$PORT"
	want_rc none 3 || return 1
	want_json none "d['ok'] is False and d['exit_code'] == 3 and d['bytes'] == 0 and
		d['read'] is None and 'REJECTED' in d['error']"
}

t_adaptive_poll_verifies() {
	# --poll adaptive reaches common's rc_next_wc: spin, then arm and sleep.
	start_server srv "$S" --once --poll adaptive || return 1
	run cli "$C" "${CT[@]}" --poll adaptive -s 65536 "$RDMA_IP" "$PORT"
	want_rc cli 0 || return 1
	want_verified cli srv 65536 || return 1
	wait_exit srv 10
	want_rc srv 0
}

# Its server must probe within 1 s while the client's write runs over
# 1.5 s: a margin the other lane's load can eat (seen once in make test).
ALONE_TESTS="t_long_run_server_probes_client"
run_tests t_write_read_verify_default t_sizes_verified t_split_at_max_msg_sz t_pipelined_write_and_read \
	t_two_clients_at_once_each_own_buffer t_inject_bad_rkey t_lesson_no_remote_read \
	t_lesson_out_of_bounds t_lesson_no_read_depth t_lesson_unaligned t_lesson_dereg_other \
	t_atomics_and_their_lessons \
	t_bad_requests_leave_server_unaffected \
	t_bad_options t_nothing_listening t_long_run_server_probes_client \
	t_client_killed_server_survives t_server_stops_cleanly_with_client_connected \
	t_sequence_matches_trace t_retry_options_reach_the_qps t_json_output t_adaptive_poll_verifies
