#!/usr/bin/env bash
# End-to-end tests of 03_file-transfer on a real (or Soft-RoCE) device.
# Run through tools/rdma-env, which sets RDMA_IP. The source side (which
# path a put's source takes on this kernel, a source that changes
# mid-transfer): 03-source.sh.
#
# TEST_LARGE=1 adds a put and get of a sparse file of 4 GiB + 1 byte (off by
# default: at the ~40 MiB/s of the TCG VM it takes several minutes, and it
# needs ~8.5 GiB of disk under build/, since the VM's / is in RAM).
# shellcheck source=lib03.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib03.sh"


# The digest is per chunk, on --hash-threads threads: the same file in the
# same chunks has the same digest whatever the thread counts on either
# side, and a bad count is a usage error.
t_hash_threads_same_digest() {
	local h1 h4 hg size=$((3 * 1048576 + 5))
	dirs
	mkfile "$W/local/f" "$size"
	start_server srv "$S" -r "$W/root" --hash-threads 3 || return 1
	run p1 "$C" "${CT[@]}" --hash-threads 1 -c 64K -p "$PORT" "$W/local/f" "$RDMA_IP:a"
	want_rc p1 0 || return 1
	want_out p1 "^put a: $size $OK_RE" || return 1
	run p4 "$C" "${CT[@]}" --hash-threads 4 -c 64K -p "$PORT" "$W/local/f" "$RDMA_IP:b"
	want_rc p4 0 || return 1
	run g16 "$C" "${CT[@]}" --hash-threads 16 -c 64K -p "$PORT" "$RDMA_IP:a" "$W/local/g"
	want_rc g16 0 || return 1
	same "$W/local/f" "$W/root/a" || return 1
	same "$W/local/f" "$W/root/b" || return 1
	same "$W/local/f" "$W/local/g" || return 1
	h1=$(grep -o '[0-9a-f]\{32\}' "$T/p1.out")
	h4=$(grep -o '[0-9a-f]\{32\}' "$T/p4.out")
	hg=$(grep -o '[0-9a-f]\{32\}' "$T/g16.out")
	[ -n "$h1" ] && [ "$h1" = "$h4" ] && [ "$h1" = "$hg" ] ||
		fail "digests differ: 1 thread $h1, 4 threads $h4, get with 16 $hg" || return 1
	run bad "$C" "${CT[@]}" --hash-threads 17 -p "$PORT" "$W/local/f" "$RDMA_IP:c"
	want_rc bad 2 || return 1
	want_err bad "invalid number of hash threads '17' \(1 to 16\)" || return 1
}

t_put_get_sizes() {
	local n h1 h2
	dirs
	start_server srv "$S" -r "$W/root" || return 1
	for n in 0 1 $((1048576 + 3)) $((8 << 20)); do
		mkfile "$W/local/f$n" "$n"
		run put$n "$C" "${CT[@]}" "$W/local/f$n" "$RDMA_IP:f$n" -p "$PORT"
		want_rc put$n 0 || return 1
		want_out put$n "^put f$n: $n $OK_RE" || return 1
		same "$W/local/f$n" "$W/root/f$n" || return 1
		run get$n "$C" "${CT[@]}" -p "$PORT" "$RDMA_IP:f$n" "$W/local/g$n"
		want_rc get$n 0 || return 1
		want_out get$n "^get f$n: $n $OK_RE" || return 1
		same "$W/local/f$n" "$W/local/g$n" || return 1
		# Both directions computed the same checksum of the same bytes.
		h1=$(grep -o '[0-9a-f]\{32\}' "$T/put$n.out")
		h2=$(grep -o '[0-9a-f]\{32\}' "$T/get$n.out")
		[ "$h1" = "$h2" ] || fail "put printed $h1, get $h2" || return 1
	done
	want_out srv "^put 'f1' from .*: 1 bytes, xxh3-128 [0-9a-f]{32} verified, stored$" || return 1
	want_out srv "put, chunk 65536 x depth 16$" || return 1 # the defaults
	want_out srv "^get 'f8388608' to .*: 8388608 bytes, .* verified by the client$" || return 1
	no_temp "$W/root" && no_temp "$W/local" || return 1
	stop_server srv
}

t_chunk_and_depth_variants() {
	local v i=0
	dirs
	start_server srv "$S" -r "$W/root" || return 1
	# Sizes that are no multiple of the chunk, with more chunks than slots
	# (each slot reused): 4 KiB x 1 is stop-and-wait; 64 KiB x 16, the
	# default, is put_get_sizes' 32 MiB case.
	for v in "4K 1 $((1048576 + 3))" "8M 4 $((33 * 1048576 + 5))"; do
		# shellcheck disable=SC2086 # one word per field of $v
		set -- $v
		i=$((i + 1))
		mkfile "$W/local/src$i" "$3"
		run put$i "$C" "${CT[@]}" -p "$PORT" -c "$1" -t "$2" "$W/local/src$i" "$RDMA_IP:v$i"
		want_rc put$i 0 || return 1
		same "$W/local/src$i" "$W/root/v$i" || return 1
		run get$i "$C" "${CT[@]}" -p "$PORT" --chunk "$1" --depth "$2" "$RDMA_IP:v$i" "$W/local"
		want_rc get$i 0 || return 1
		# A directory DST receives the file under its remote name.
		same "$W/local/src$i" "$W/local/v$i" || return 1
	done
	want_out srv "put, chunk 4096 x depth 1$" || return 1
	want_out srv "get, chunk 8388608 x depth 4$" || return 1
	stop_server srv
}

t_hostile_names_rejected() {
	local name i=0 before
	dirs
	mkfile "$W/local/src" 1000
	echo secret >"$W/outside/secret"
	ln -s "$W/outside/secret" "$W/root/link"
	before=$(sha256sum </etc/passwd)
	start_server srv "$S" -r "$W/root" || return 1
	# The client sends such names as typed: the server is the authority.
	# (".", "..", NUL, control characters, .*.part: see the unit tests)
	for name in "../x" "/etc/passwd" "a/../../b"; do
		i=$((i + 1))
		run put$i "$C" "${CT[@]}" -p "$PORT" -f "$W/local/src" "$RDMA_IP:$name"
		want_rc put$i 1 || return 1
		want_err put$i "server: forbidden name" || return 1
		run get$i "$C" "${CT[@]}" -p "$PORT" "$RDMA_IP:$name" "$W/local/out$i"
		want_rc get$i 1 || return 1
		want_err get$i "server: forbidden name" || return 1
	done
	want_err put1 "forbidden name '\.\./x': the name contains '/'" || return 1
	# A symlink in DIR pointing outside: never followed, never replaced.
	run getl "$C" "${CT[@]}" -p "$PORT" "$RDMA_IP:link" "$W/local/l"
	want_rc getl 1 || return 1
	want_err getl "'link' is a symbolic link; the server does not follow links" || return 1
	run putl "$C" "${CT[@]}" -p "$PORT" -f "$W/local/src" "$RDMA_IP:link"
	want_rc putl 1 || return 1
	want_err putl "'link' exists and is a symbolic link; refusing to replace it" || return 1
	[ "$(cat "$W/outside/secret")" = secret ] || fail "the file outside DIR changed" || return 1
	[ -L "$W/root/link" ] || fail "the symlink in DIR was replaced" || return 1
	# Nothing was written outside DIR, nor anything left inside it.
	[ "$(sha256sum </etc/passwd)" = "$before" ] || fail "/etc/passwd changed" || return 1
	[ ! -e "$W/x" ] && [ ! -e "$W/b" ] && [ ! -e "$W/root/a" ] || fail "a file appeared outside DIR" || return 1
	[ "$(ls -A "$W/root")" = link ] || fail "DIR holds $(ls -A "$W/root" | tr '\n' ' ')" || return 1
	[ -z "$(find "$W/local" -mindepth 1 -maxdepth 1 ! -name src)" ] || fail "local dir holds $(ls -A "$W/local")" || return 1
	# get into a directory: the remote name becomes a local one, so the
	# client refuses an unsafe one itself, before connecting.
	run getd "$C" "${CT[@]}" -p "$PORT" "$RDMA_IP:../x" "$W/local"
	want_rc getd 2 || return 1
	want_err getd "cannot store '\.\./x' in" || return 1
	alive srv || return 1
	stop_server srv
}

t_existing_destination() {
	dirs
	mkfile "$W/local/new" 3000
	echo old >"$W/root/exists"
	echo mine >"$W/local/mine"
	start_server srv "$S" -r "$W/root" || return 1
	# put: refused without -f, the server's file untouched.
	run put1 "$C" "${CT[@]}" -p "$PORT" "$W/local/new" "$RDMA_IP:exists"
	want_rc put1 1 || return 1
	want_err put1 "server: 'exists' exists; use -f to overwrite it" || return 1
	[ "$(cat "$W/root/exists")" = old ] || fail "refused put changed the file" || return 1
	run put2 "$C" "${CT[@]}" -p "$PORT" -f "$W/local/new" "$RDMA_IP:exists"
	want_rc put2 0 || return 1
	same "$W/local/new" "$W/root/exists" || return 1
	# get: refused before connecting (exit 2), the local file untouched.
	run get1 "$C" "${CT[@]}" -p "$PORT" "$RDMA_IP:exists" "$W/local/mine"
	want_rc get1 2 || return 1
	want_err get1 "'mine' exists; use -f to overwrite it" || return 1
	[ "$(cat "$W/local/mine")" = mine ] || fail "refused get changed the file" || return 1
	run get2 "$C" "${CT[@]}" -p "$PORT" -f "$RDMA_IP:exists" "$W/local/mine"
	want_rc get2 0 || return 1
	same "$W/local/new" "$W/local/mine" || return 1
	no_temp "$W/root" && no_temp "$W/local" || return 1
	stop_server srv
}

t_client_killed_mid_put() {
	dirs
	mkfile "$W/local/big" $((32 << 20))
	mkfile "$W/local/small" 5000
	start_server srv "$S" -r "$W/root" --timeout 3 || return 1
	# 4 KiB chunks, one at a time: slow enough to be caught in the middle.
	spawn cli "$C" --timeout 5 -c 4K -t 1 "$W/local/big" "$RDMA_IP:big" -p "$PORT"
	wait_temp_growing "$W/root" 15 cli || return $?
	kill -9 "${PID[cli]}"
	wait_exit cli 5
	# Once the server notices (DISCONNECTED, or its 3 s timeout), the
	# temporary file is gone and the final name never existed.
	wait_no_temp "$W/root" 10 || return 1
	[ ! -e "$W/root/big" ] || fail "a file appeared under the final name" || return 1
	want_err srv "put 'big': .* after [0-9]+ of 33554432 bytes; removed the partial file" || return 1
	# The server serves the next client.
	run next "$C" "${CT[@]}" -p "$PORT" "$W/local/small" "$RDMA_IP:"
	want_rc next 0 || return 1
	same "$W/local/small" "$W/root/small" || return 1
	stop_server srv
}

t_server_killed_mid_get() {
	dirs
	mkfile "$W/root/big" $((32 << 20))
	start_server srv "$S" -r "$W/root" || return 1
	spawn cli "$C" --timeout 3 -c 4K -t 1 "$RDMA_IP:big" "$W/local/big" -p "$PORT"
	wait_temp_growing "$W/local" 15 cli || return $?
	kill -9 "${PID[srv]}"
	# Exit 1 within the timeout, and nothing left behind.
	wait_exit cli 10
	want_rc cli 1 || return 1
	want_err cli "get 'big': .*(disconnect|failed|no completion)" || return 1
	no_temp "$W/local" || return 1
	[ ! -e "$W/local/big" ] || fail "a file appeared under the final name"
}

# A receiver killed with SIGKILL in the middle, on a tmpfs (O_TMPFILE on
# every kernel; the VM's /tmp is an overlayfs, which lacks it on 6.1):
# nothing is left, neither a name nor the data. tmpfs_body BODY runs BODY
# with $W/tmpfs mounted, and unmounts it whatever BODY returns.
tmpfs_body() {
	local r
	dirs
	mkdir -p "$W/tmpfs"
	mount -t tmpfs -o size=64m tmpfs "$W/tmpfs" 2>/dev/null ||
		{ REASON="cannot mount a tmpfs (not root?)"; return 77; }
	"$1"
	r=$?
	cleanup_test
	umount "$W/tmpfs"
	return $r
}

# kill_receiver NAME: once 1 MiB of the file background process NAME (run
# with -v) receives into $W/tmpfs has arrived, SIGKILL it; nothing may be
# left there.
kill_receiver() {
	wait_temp_growing "$W/tmpfs" 15 cli || return $?
	want_err "$1" "created temporary file for big: O_TMPFILE \(nothing is left if the receiver dies\)$" || return 1
	wait_used "$W/tmpfs" $((1 << 20)) 20 || return 1
	kill -9 "${PID[$1]}"
	wait_exit "$1" 5
	left_nothing "$W/tmpfs"
}

killed_server_put_body() {
	mkfile "$W/local/big" $((32 << 20))
	start_server srv "$S" -v -r "$W/tmpfs" || return 1
	spawn cli "$C" --timeout 5 --no-progress -c 4K -t 1 "$W/local/big" "$RDMA_IP:big" -p "$PORT"
	kill_receiver srv || return $?
	# The client notices the dead server within its timeout.
	wait_exit cli 10
	want_rc cli 1
}

t_tmpfile_server_killed_mid_put() { tmpfs_body killed_server_put_body; }

killed_client_get_body() {
	mkfile "$W/root/big" $((32 << 20))
	start_server srv "$S" -r "$W/root" --timeout 3 || return 1
	spawn cli "$C" -v --timeout 5 --no-progress -c 4K -t 1 "$RDMA_IP:big" "$W/tmpfs/big" -p "$PORT"
	kill_receiver cli || return $?
	# The server notices, and serves the next client.
	wait_for srv "get 'big': .* after [0-9]+ of 33554432 bytes" 10 || return 1
	run next "$C" "${CT[@]}" -v -p "$PORT" "$RDMA_IP:big" "$W/tmpfs/big"
	want_rc next 0 || return 1
	same "$W/root/big" "$W/tmpfs/big" || return 1
	want_err next "in place: big \(linked from O_TMPFILE\)$" || return 1
	stop_server srv
}

t_tmpfile_client_killed_mid_get() { tmpfs_body killed_client_get_body; }

t_server_stops_cleanly_mid_put() {
	dirs
	mkfile "$W/local/big" $((32 << 20))
	start_server srv "$S" -r "$W/root" || return 1
	spawn cli "$C" --timeout 5 -c 4K -t 1 "$W/local/big" "$RDMA_IP:big" -p "$PORT"
	wait_temp_growing "$W/root" 15 cli || return $?
	# SIGTERM: exit 0, the partial upload removed, the client told.
	stop_server srv || return 1
	no_temp "$W/root" || return 1
	[ ! -e "$W/root/big" ] || fail "a file appeared under the final name" || return 1
	wait_exit cli 10
	want_rc cli 1
}

t_two_puts_and_two_gets_at_once() {
	local i
	dirs
	for i in 1 2; do
		mkfile "$W/local/p$i" $((8 << 20))
		mkfile "$W/root/g$i" $((8 << 20))
	done
	start_server srv "$S" -r "$W/root" || return 1
	for i in 1 2; do
		spawn put$i "$C" "${CT[@]}" -p "$PORT" -c 256K -t 4 "$W/local/p$i" "$RDMA_IP:"
		spawn get$i "$C" "${CT[@]}" -p "$PORT" -c 256K -t 4 "$RDMA_IP:g$i" "$W/local"
	done
	for i in 1 2; do
		wait_exit put$i 60
		want_rc put$i 0 || return 1
		want_out put$i "^put p$i: 8388608 $OK_RE" || return 1
		wait_exit get$i 60
		want_rc get$i 0 || return 1
		want_out get$i "^get g$i: 8388608 $OK_RE" || return 1
		same "$W/local/p$i" "$W/root/p$i" || return 1
		same "$W/root/g$i" "$W/local/g$i" || return 1
	done
	stop_server srv
}

enospc_body() {
	start_server srv "$S" -r "$W/small" || return 1
	# put: the server's disk fills up.
	run put "$C" "${CT[@]}" -p "$PORT" "$W/local/big" "$RDMA_IP:big"
	want_rc put 1 || return 1
	want_err put "server: .*No space left on device \(disk full\); removed the partial file" || return 1
	[ -z "$(ls -A "$W/small")" ] || fail "left in the full DIR: $(ls -A "$W/small")" || return 1
	alive srv || return 1
	# get: our own disk fills up.
	rm -rf "${W:?}/root"
	mkdir "$W/root"
	mkfile "$W/root/big" $((16 << 20))
	stop_server srv || return 1
	start_server srv2 "$S" -r "$W/root" || return 1
	run get "$C" "${CT[@]}" -p "$PORT" "$RDMA_IP:big" "$W/small/big"
	want_rc get 1 || return 1
	want_err get "client: .*No space left on device \(disk full\); removed the partial file" || return 1
	[ -z "$(ls -A "$W/small")" ] || fail "left in the full local dir: $(ls -A "$W/small")" || return 1
	want_err srv2 "get 'big': the client failed: client: .*disk full" || return 1
	stop_server srv2
}

t_disk_full() {
	local r
	dirs
	mkfile "$W/local/big" $((16 << 20))
	mkdir -p "$W/small"
	mount -t tmpfs -o size=4m tmpfs "$W/small" 2>/dev/null ||
		{ REASON="cannot mount a tmpfs (not root?)"; return 77; }
	enospc_body
	r=$?
	cleanup_test # the servers must be gone before the unmount
	umount "$W/small"
	return $r
}

t_local_and_remote_missing() {
	dirs
	mkdir "$W/local/adir"
	# Local source problems: exit 2 before connecting (port 1: nobody
	# listens, so trying to connect would give exit 3).
	run m1 "$C" "${CT[@]}" -p 1 "$W/local/nope" "$RDMA_IP:x"
	want_rc m1 2 || return 1
	want_err m1 "cannot open '.*/nope': No such file or directory" || return 1
	run m2 "$C" "${CT[@]}" -p 1 "$W/local/adir" "$RDMA_IP:x"
	want_rc m2 2 || return 1
	want_err m2 "is a directory, not a regular file" || return 1
	mkfifo "$W/local/fifo"
	run m4 "$C" "${CT[@]}" -p 1 "$W/local/fifo" "$RDMA_IP:x"
	want_rc m4 2 || return 1
	want_err m4 "is a special file, not a regular file" || return 1
	rm "$W/local/fifo"
	run m3 "$C" "${CT[@]}" -p 1 "$RDMA_IP:x" "$W/nodir/x"
	want_rc m3 2 || return 1
	want_err m3 "cannot open directory '.*/nodir'" || return 1
	# Remote name missing: exit 1 with the server's message; nothing left.
	mkdir "$W/root/sub"
	start_server srv "$S" -r "$W/root" || return 1
	run r1 "$C" "${CT[@]}" -p "$PORT" "$RDMA_IP:nope" "$W/local/"
	want_rc r1 1 || return 1
	want_err r1 "get 'nope': server: no such file 'nope' on the server" || return 1
	run r2 "$C" "${CT[@]}" -p "$PORT" "$RDMA_IP:sub" "$W/local/"
	want_rc r2 1 || return 1
	want_err r2 "server: 'sub' is a directory, not a regular file" || return 1
	[ "$(ls -A "$W/local")" = adir ] || fail "local dir holds $(ls -A "$W/local" | tr '\n' ' ')" || return 1
	stop_server srv
}

t_limits_rejected() {
	local max lim
	dirs
	mkfile "$W/local/big" $((32 << 20))
	mkfile "$W/local/f" 100
	start_server srv "$S" -r "$W/root" --max-mem 4M --max-depth 8 --max-clients 1 || return 1
	run l1 "$C" "${CT[@]}" -p "$PORT" -c 1M -t 8 "$W/local/f" "$RDMA_IP:f"
	want_rc l1 3 || return 1
	want_err l1 "rejected the connection: ring of 1 MiB x 8 = 8 MiB is over this server's 4 MiB per client; use a smaller -c or -t$" || return 1
	run l2 "$C" "${CT[@]}" -p "$PORT" -c 4K -t 9 "$W/local/f" "$RDMA_IP:f"
	want_rc l2 3 || return 1
	want_err l2 "rejected the connection: depth 9 is over this server's limit of 8; use a smaller -t$" || return 1
	# A chunk larger than one RDMA message may be (the port's max_msg_sz)
	# or than -c allows: the client refuses it before connecting. Where
	# max_msg_sz is at least what -c allows (2 GiB on rxe since 6.12, 1G
	# for -c), only the second can happen.
	max=$(dev_max_msg_sz)
	lim=$(size_max "$C" -c 0 "$W/local/f" "$RDMA_IP:f")
	[ -n "$max" ] && [ -n "$lim" ] || fail "max_msg_sz '$max' or the chunk limit '$lim' unknown" || return 1
	if [ "$max" -lt "$lim" ]; then
		run l3 "$C" "${CT[@]}" -p "$PORT" -c $((2 * max)) -t 1 "$W/local/f" "$RDMA_IP:f"
		want_rc l3 2 || return 1
		want_err l3 "chunk [0-9.]+ [KMG]iB is larger than the port's max_msg_sz \([0-9.]+ [KMG]iB\); use -c" || return 1
	fi
	run l3b "$C" "${CT[@]}" -p "$PORT" -c $((2 * lim)) -t 1 "$W/local/f" "$RDMA_IP:f"
	want_rc l3b 2 || return 1
	want_err l3b "invalid chunk size '$((2 * lim))'" || return 1
	# --max-clients 1: a second client while one transfers is turned away.
	spawn hog "$C" --timeout 5 -c 4K -t 1 "$W/local/big" "$RDMA_IP:big" -p "$PORT"
	wait_temp_growing "$W/root" 15 hog || return $?
	run l4 "$C" "${CT[@]}" -p "$PORT" -c 4K -t 1 "$W/local/f" "$RDMA_IP:f"
	want_rc l4 3 || return 1
	want_err l4 "rejected the connection: server busy" || return 1
	alive hog || return 1
	[ ! -e "$W/root/f" ] || fail "a rejected client stored its file" || return 1
	stop_server srv
}

t_garbage_client_rejected() {
	# rping (rdma-core) connects without our HELLO: rejected with a
	# reason, and the server goes on serving.
	command -v rping >/dev/null || { REASON="rping not installed"; return 77; }
	dirs
	mkfile "$W/local/f" 100
	start_server srv "$S" -r "$W/root" || return 1
	run rp timeout 10 rping -c -a "$RDMA_IP" -p "$PORT" -C 1
	[ "$RC" != 0 ] || fail "rping was not rejected" || return 1
	wait_for srv "rejected: (private data|bad magic|.*HELLO)" 5 || return 1
	run cli "$C" "${CT[@]}" -p "$PORT" "$W/local/f" "$RDMA_IP:f"
	want_rc cli 0 || return 1
	stop_server srv
}

t_progress_and_quiet() {
	dirs
	mkfile "$W/local/f" $((1 << 20))
	start_server srv "$S" -r "$W/root" || return 1
	run p "$C" "${CT[@]}" -p "$PORT" --progress -c 64K -t 2 "$W/local/f" "$RDMA_IP:f"
	want_rc p 0 || return 1
	want_err p "^put [0-9.]+ [KMG]?i?B of 1 MiB \([0-9]+%\), [0-9]+\.[0-9] MiB/s, ETA [0-9-]+:[0-9-]{2}:[0-9-]{2}$" || return 1
	# No TTY, no --progress: no progress line. -q: no output at all.
	run n "$C" "${CT[@]}" -p "$PORT" -f "$W/local/f" "$RDMA_IP:f"
	want_rc n 0 || return 1
	[ ! -s "$T/n.err" ] || fail "progress without --progress: $(tail_of "$T/n.err")" || return 1
	run q "$C" "${CT[@]}" -p "$PORT" -q "$RDMA_IP:f" "$W/local/g"
	want_rc q 0 || return 1
	[ ! -s "$T/q.out" ] && [ ! -s "$T/q.err" ] || fail "-q printed something" || return 1
	same "$W/local/f" "$W/local/g" || return 1
	stop_server srv
}

t_bad_options() {
	run c1 "$C" --bogus a "$RDMA_IP:b"; want_rc c1 2 || return 1
	want_err c1 "unknown option '--bogus' \(try --help\)" || return 1
	run c2 "$C" a; want_rc c2 2 || return 1
	run c3 "$C" a b; want_rc c3 2 || return 1
	want_err c3 "neither SRC nor DST is remote" || return 1
	run c4 "$C" -c 1K a "$RDMA_IP:b"; want_rc c4 2 || return 1
	run c5 "$C" -t 0 a "$RDMA_IP:b"; want_rc c5 2 || return 1
	run c6 "$C" --timeout -1 a "$RDMA_IP:b"; want_rc c6 2 || return 1
	run s1 "$S"; want_rc s1 2 || return 1
	want_err s1 "missing -r DIR" || return 1
	run s2 "$S" -r "$W/no-such-dir"; want_rc s2 2 || return 1
	want_err s2 "cannot open directory" || return 1
	run s3 "$S" -r / --max-depth 0; want_rc s3 2 || return 1
	run h1 "$C" --help; want_rc h1 0 || return 1
	want_out h1 "^usage: rdma-client" || return 1
	run h2 "$S" --help; want_rc h2 0 || return 1
	want_out h2 "^usage: rdma-server"
}

t_ulimit_l_message() {
	# As an ordinary user with `ulimit -l` of 4 MiB, a 16 MiB ring (1 MiB
	# x 16; the default ring, 1 MiB, fits) cannot be registered: the
	# message names the limit and a fit. --copy: a zero-copy put (6.2 and
	# later) registers no ring, only windows of the file (03-source.sh).
	local u=nobody
	id "$u" >/dev/null 2>&1 && command -v setpriv >/dev/null ||
		{ REASON="no user '$u' or no setpriv"; return 77; }
	dirs
	mkfile "$W/local/f" 100
	chmod 755 "$W" "$W/local"
	chmod 644 "$W/local/f"
	start_server srv "$S" -r "$W/root" || return 1
	run u bash -c "ulimit -l 4096 && exec setpriv --reuid=$u --regid=nogroup --clear-groups \
		$C --timeout 5 --copy -c 1M -t 16 -p $PORT $W/local/f $RDMA_IP:f"
	if grep -q "rdma_create_event_channel\|/dev/infiniband" "$T/u.err"; then
		REASON="this user cannot open the RDMA device: $(tail_of "$T/u.err" 1)"
		return 77
	fi
	want_rc u 1 || return 1
	want_err u "cannot register the 16 MiB ring \(chunk 1 MiB x depth 16\): .*limited to 4 MiB .*\`ulimit -l\`.*e\.g\. -c 1M -t 3$" || return 1
	# And the suggestion does fit.
	run u2 bash -c "ulimit -l 4096 && exec setpriv --reuid=$u --regid=nogroup --clear-groups \
		$C --timeout 5 --copy -p $PORT -c 1M -t 3 $W/local/f $RDMA_IP:f"
	want_rc u2 0 || return 1
	same "$W/local/f" "$W/root/f" || return 1
	stop_server srv
}

t_sequence_matches_trace() {
	dirs
	mkfile "$W/local/f" 100000
	start_server srv "$S" -r "$W/root" -v || return 1
	# put then get of a 2-chunk file, 64 KiB chunks, depth 2; the server
	# serves both, one after the other: its trace holds put then get.
	run cli1 "$C" "${CT[@]}" -v -p "$PORT" -c 64K -t 2 "$W/local/f" "$RDMA_IP:f"
	want_rc cli1 0 || return 1
	run cli2 "$C" "${CT[@]}" -v -p "$PORT" -c 64K -t 2 "$RDMA_IP:f" "$W/local/g"
	want_rc cli2 0 || return 1
	same "$W/local/f" "$W/local/g" || return 1
	stop_server srv || return 1
	cat "$T/cli1.err" "$T/cli2.err" >"$T/cli.err"
	check_sequence 03_file-transfer c cli || return 1
	check_sequence 03_file-transfer s srv
}

t_retry_options_reach_the_qps() {
	# A put with --ack-timeout and --retry-count: the client's QP has both,
	# the server's its own --ack-timeout and the client's retry count.
	dirs
	mkfile "$W/local/f" 70000
	start_server srv "$S" -r "$W/root" --once -v --ack-timeout 17 || return 1
	run cli "$C" "${CT[@]}" -v --ack-timeout 13 --retry-count 4 -p "$PORT" -c 64K -t 2 \
		"$W/local/f" "$RDMA_IP:f"
	want_rc cli 0 || return 1
	wait_exit srv 10
	want_rc srv 0 || return 1
	same "$W/local/f" "$W/root/f" || return 1
	want_qp_retry cli 13 4 || return 1
	want_qp_retry srv 17 4
}

t_slow_local_disk_named() {
	# A get into a file system frozen mid-transfer (fsfreeze: every write
	# blocks until it thaws), for longer than --timeout: the client names
	# its own disk, not the peer, and leaves no temporary file.
	local r
	[ "$(id -u)" = 0 ] || { REASON="needs root (a loop mount and fsfreeze)"; return 77; }
	command -v fsfreeze >/dev/null && command -v mkfs.ext4 >/dev/null ||
		{ REASON="fsfreeze or mkfs.ext4 not installed"; return 77; }
	dirs
	mkfile "$W/root/big" $((96 << 20))
	modprobe loop 2>/dev/null # a module in Debian's kernels
	truncate -s 160M "$W/img" && mkfs.ext4 -q -F "$W/img" >"$T/mnt.err" 2>&1 && mkdir -p "$W/slow" &&
		mount -o loop "$W/img" "$W/slow" 2>>"$T/mnt.err" ||
		{ REASON="cannot loop-mount an ext4 image: $(tail_of "$T/mnt.err")"; return 77; }
	frozen_get_body
	r=$?
	fsfreeze -u "$W/slow" 2>/dev/null
	cleanup_test
	umount "$W/slow"
	return $r
}

frozen_get_body() {
	start_server srv "$S" -r "$W/root" || return 1
	spawn cli "$C" --timeout 3 --no-progress -c 64K -t 4 -p "$PORT" "$RDMA_IP:big" "$W/slow/big"
	wait_temp_growing "$W/slow" 20 cli || return $?
	fsfreeze -f "$W/slow" || { fail "fsfreeze -f failed"; return 1; }
	# The client's wait times out after 3 s; it exits once the file
	# system thaws (its disk thread is inside a write until then).
	nap 5
	fsfreeze -u "$W/slow" || { fail "fsfreeze -u failed"; return 1; }
	wait_exit cli 20
	want_rc cli 1 || return 1
	want_err cli "no progress within 3000 ms: the local disk stalled: writing chunk [0-9]+ of .*big.* has taken [0-9]+\.[0-9] s so far; hint: .*not the peer" || return 1
	! grep -q "the peer stalled" "$T/cli.err" || fail "the client blamed the peer: $(tail_of "$T/cli.err")" || return 1
	[ ! -e "$W/slow/big" ] || fail "the destination exists after a failed get" || return 1
	no_temp "$W/slow"
}

t_large_file() {
	# Offsets beyond 4 GiB on the wire and on disk. Off by default: see
	# the top of this file.
	[ "${TEST_LARGE:-0}" = 1 ] || { REASON="set TEST_LARGE=1 (4 GiB + 1 byte each way)"; return 77; }
	local d=$ROOT/build/e2e-large n=$((4 * 1024 * 1024 * 1024 + 1))
	local CLIENT_LIMIT_S=1800 # for run: minutes per direction in the VM
	rm -rf "$d" && mkdir -p "$d/root" "$d/local" || return 1
	truncate -s "$n" "$d/local/sparse"
	printf 'end' | dd of="$d/local/sparse" bs=1 seek=$((n - 3)) conv=notrunc status=none
	start_server srv "$S" -r "$d/root" --timeout 60 || return 1
	run put "$C" --timeout 60 -p "$PORT" -c 8M -t 4 "$d/local/sparse" "$RDMA_IP:big"
	want_rc put 0 || return 1
	want_out put "^put big: $n $OK_RE" || return 1
	run get "$C" --timeout 60 -p "$PORT" -c 8M -t 4 "$RDMA_IP:big" "$d/local/back"
	want_rc get 0 || return 1
	want_out get "^get big: $n $OK_RE" || return 1
	# cmp, not sha256sum: hashing 8 GiB in the emulated VM takes too long.
	cmp "$d/local/sparse" "$d/root/big" && cmp "$d/local/sparse" "$d/local/back" ||
		fail "the 4 GiB copies differ" || return 1
	[ "$(tail -c 3 "$d/local/back")" = end ] || fail "the last bytes are lost" || return 1
	stop_server srv
	rm -rf "$d"
}

t_json_output() {
	local hash
	dirs
	mkfile "$W/local/a.bin" 300000
	start_server srv "$S" -r "$W/root" || return 1
	run put "$C" "${CT[@]}" --json -c 64K -t 4 -p "$PORT" "$W/local/a.bin" "$RDMA_IP:a.bin"
	want_rc put 0 || return 1
	want_json put "d['ok'] is True and d['program'] == 'rdma-client' and
		d['example'] == '03_file-transfer' and d['op'] == 'put' and
		d['server'] == '$RDMA_IP' and d['port'] == $PORT and d['name'] == 'a.bin' and
		d['local'] == '$W/local/a.bin' and d['chunk'] == 65536 and d['depth'] == 4 and
		d['size'] == 300000 and d['bytes'] == 300000 and d['seconds'] > 0 and
		d['mib_s'] > 0 and d['hash_name'] == 'xxh3-128' and len(d['hash']) == 32 and
		d['verified'] is True and d['error'] is None and d['exit_code'] == 0 and err == ''" || return 1
	hash=$("$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["hash"])' <"$T/put.out")
	# The digest is over the chunk digests: the same chunk size, the same
	# digest (another -c gives another one).
	run get "$C" "${CT[@]}" --json -c 64K -p "$PORT" "$RDMA_IP:a.bin" "$W/local/b.bin"
	want_rc get 0 || return 1
	want_json get "d['ok'] is True and d['op'] == 'get' and d['size'] == 300000 and
		d['hash'] == '$hash' and d['verified'] is True" || return 1
	same "$W/local/a.bin" "$W/local/b.bin" || return 1
	# The server refuses to overwrite: one object, exit 1, its reason.
	run again "$C" "${CT[@]}" --json -p "$PORT" "$W/local/a.bin" "$RDMA_IP:a.bin"
	want_rc again 1 || return 1
	want_json again "d['ok'] is False and d['exit_code'] == 1 and d['bytes'] == 0 and
		d['hash'] is None and d['verified'] is False and 'exists' in d['error'] and
		'rdma-client: ' + d['error'] + '\n' == err" || return 1
	stop_server srv || return 1
	run none "$C" --timeout 3 --json -p "$PORT" "$W/local/a.bin" "$RDMA_IP:a.bin"
	want_rc none 3 || return 1
	want_json none "d['ok'] is False and d['exit_code'] == 3 and 'REJECTED' in d['error']"
}

# cpu_ok WHAT USER SYS WALL: USER + SYS seconds of CPU time are above 0 and
# at most WALL seconds on every CPU here: more cannot be used in WALL.
cpu_ok() {
	awk -v u="$2" -v s="$3" -v w="$4" -v n="$NCPU" 'BEGIN { exit !(u + s > 0 && u + s <= w * n) }' &&
		return 0
	fail "$1: CPU time user $2 s + sys $3 s is not within (0, $4 s x $NCPU CPUs]"
}

# since T0: seconds of wall time since $EPOCHREALTIME was T0.
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }'; }

t_cpu_time_reported() {
	# getrusage at the end of a transfer: the client's whole process from
	# setup on, in -v and --json; the server's threads of that one
	# transfer, in its -v trace. An 8 MiB file is 1/128 GiB: "per GiB" is 128 x the total.
	local t0 put_wall get_wall re n=0 line walls
	local srv_re="^server conn [0-9]+: CPU: user ([0-9]+\.[0-9]{3}) s, sys ([0-9]+\.[0-9]{3}) s, ([0-9]+\.[0-9]{3}) s per GiB \(this transfer's threads: this connection's, its disk thread and 2 hashing threads\)$"
	NCPU=$(nproc)
	dirs
	mkfile "$W/local/f" $((8 << 20))
	start_server srv "$S" -r "$W/root" -v || return 1
	t0=$EPOCHREALTIME
	run put "$C" "${CT[@]}" -v -p "$PORT" "$W/local/f" "$RDMA_IP:f"
	put_wall=$(since "$t0")
	want_rc put 0 || return 1
	re='^CPU: user ([0-9]+\.[0-9]{3}) s, sys ([0-9]+\.[0-9]{3}) s, ([0-9]+\.[0-9]{3}) s per GiB \(this process, all its threads, from setup to the end of the transfer\)$'
	line=$(grep -E '^CPU: ' "$T/put.out")
	[[ $line =~ $re ]] || fail "put -v: no CPU line of the expected form: '$line'" || return 1
	cpu_ok "put -v" "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" "$put_wall" || return 1
	awk -v u="${BASH_REMATCH[1]}" -v s="${BASH_REMATCH[2]}" -v g="${BASH_REMATCH[3]}" \
		'BEGIN { d = (u + s) * 128 - g; exit !(d < 0.2 && d > -0.2) }' ||
		fail "put -v: $line: per GiB is not 128 x (user + sys)" || return 1
	t0=$EPOCHREALTIME
	run get "$C" "${CT[@]}" --json -p "$PORT" "$RDMA_IP:f" "$W/local/g"
	get_wall=$(since "$t0")
	want_rc get 0 || return 1
	want_json get "d['cpu_user_s'] >= 0 and d['cpu_sys_s'] >= 0 and
		0 < d['cpu_user_s'] + d['cpu_sys_s'] <= $get_wall * $NCPU and
		abs(d['cpu_s_per_gib'] - (d['cpu_user_s'] + d['cpu_sys_s']) * 128) < 0.01" || return 1
	same "$W/local/f" "$W/local/g" || return 1
	stop_server srv || return 1
	# The server's line for each transfer, put then get, each within the
	# wall time of the client it served.
	walls=("$put_wall" "$get_wall")
	while IFS= read -r line; do
		[[ $line =~ $srv_re ]] || continue
		[ "$n" -lt 2 ] || fail "the server printed more than 2 CPU lines" || return 1
		cpu_ok "the server's line $line" "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" "${walls[$n]}" || return 1
		n=$((n + 1))
	done <"$T/srv.err"
	[ "$n" = 2 ] || fail "the server's -v trace has $n CPU lines, not 2: $(grep -m3 'CPU' "$T/srv.err" | tr '\n' '|')"
}

# mkkey PATH [MODE]: a 32-byte random key, readable by its owner only.
mkkey() {
	head -c 32 /dev/urandom >"$1"
	chmod "${2:-600}" "$1"
}

t_timeline_reported() {
	# -v's timeline line (xfer-timeline.c), on both sides of a put and a
	# get: the spans, a rate above 0, the client's mean in flight within
	# its depth, the blocked times within the transfer's span; nothing
	# timed without -v.
	local re line who span blocked n=0
	re='timeline: ([0-9]+\.[0-9]) ms before the first data, data ([0-9]+\.[0-9]) ms \(([0-9]+\.[0-9]) MiB/s(, ([0-9]+\.[0-9]) of ([0-9]+) in flight on average)?\), ([0-9]+\.[0-9]) ms after; blocked: link ([0-9.]+) ms \([0-9]+\), peer ([0-9.]+) ms \([0-9]+\), disk ([0-9.]+) ms \([0-9]+\), end ([0-9.]+) ms \([0-9]+\)$'
	dirs
	mkfile "$W/local/f" $((8 << 20))
	start_server srv "$S" -r "$W/root" -v || return 1
	run put "$C" "${CT[@]}" -v -c 256K -t 4 -p "$PORT" "$W/local/f" "$RDMA_IP:f"
	want_rc put 0 || return 1
	run get "$C" "${CT[@]}" -v -c 256K -t 4 -p "$PORT" "$RDMA_IP:f" "$W/local/g"
	want_rc get 0 || return 1
	run quiet "$C" "${CT[@]}" -f -p "$PORT" "$RDMA_IP:f" "$W/local/g"
	want_rc quiet 0 || return 1
	stop_server srv || return 1
	same "$W/local/f" "$W/local/g" || return 1
	! grep -q "timeline:" "$T/quiet.out" "$T/quiet.err" ||
		fail "a transfer without -v printed a timeline" || return 1
	for who in put get srv srv; do
		case $who in
		srv)
			n=$((n + 1))
			line=$(grep -E "^server conn [0-9]+: timeline: " "$T/srv.err" | sed -n "${n}p")
			;;
		*) line=$(grep -hE "^client: timeline: " "$T/$who.out" "$T/$who.err") ;;
		esac
		[[ $line =~ $re ]] || fail "$who: no timeline line of the expected form: '$line'" || return 1
		span=$(awk -v a="${BASH_REMATCH[1]}" -v b="${BASH_REMATCH[2]}" -v c="${BASH_REMATCH[7]}" 'BEGIN { print a + b + c }')
		blocked=$(awk -v a="${BASH_REMATCH[8]}" -v b="${BASH_REMATCH[9]}" -v c="${BASH_REMATCH[10]}" \
			-v d="${BASH_REMATCH[11]}" 'BEGIN { print a + b + c + d }')
		awk -v r="${BASH_REMATCH[3]}" -v d="${BASH_REMATCH[2]}" 'BEGIN { exit !(r > 0 && d > 0) }' ||
			fail "$who: no data span or rate: $line" || return 1
		# Blocked time is part of the transfer's span (0.5 ms of rounding per term).
		awk -v s="$span" -v b="$blocked" 'BEGIN { exit !(b <= s + 3) }' ||
			fail "$who: blocked $blocked ms of a $span ms transfer: $line" || return 1
		if [ "$who" = srv ]; then
			[ -z "${BASH_REMATCH[4]}" ] || fail "the server counted our operations in flight: $line" || return 1
		else
			[ "${BASH_REMATCH[6]}" = 4 ] && awk -v m="${BASH_REMATCH[5]}" 'BEGIN { exit !(m > 0 && m <= 4) }' ||
				fail "$who: mean in flight not within 0..4: $line" || return 1
		fi
	done
}

t_secret_required_and_checked() {
	dirs
	mkfile "$W/local/f" $((300 << 10))
	mkkey "$W/key"
	mkkey "$W/other"
	start_server srv "$S" -r "$W/root" --secret "$W/key" || return 1
	# The right key: put and get as usual.
	run put "$C" "${CT[@]}" -p "$PORT" --secret "$W/key" -c 64K "$W/local/f" "$RDMA_IP:f"
	want_rc put 0 || return 1
	want_out put "^put f: 307200 $OK_RE" || return 1
	run get "$C" "${CT[@]}" -p "$PORT" --secret "$W/key" "$RDMA_IP:f" "$W/local/g"
	want_rc get 0 || return 1
	same "$W/local/f" "$W/local/g" || return 1
	# Another key: refused after connecting (exit 1), nothing stored.
	run wrong "$C" "${CT[@]}" -p "$PORT" --secret "$W/other" "$W/local/f" "$RDMA_IP:w"
	want_rc wrong 1 || return 1
	want_err wrong "^rdma-client: put 'w': server: authentication failed: wrong proof" || return 1
	# No key: the client sees the server's demand and says so (exit 1).
	run nokey "$C" "${CT[@]}" -p "$PORT" "$RDMA_IP:f" "$W/local/n"
	want_rc nokey 1 || return 1
	want_err nokey "authentication failed: the server requires --secret FILE" || return 1
	[ ! -e "$W/local/n" ] || fail "a refused get left $W/local/n" || return 1
	# The server logs each refusal with the peer and goes on serving.
	wait_for srv "client $RDMA_IP port [0-9]+: put 'w': authentication failed: wrong proof" 5 || return 1
	wait_for srv "client $RDMA_IP port [0-9]+: the client gave up before its request: authentication failed" 5 || return 1
	[ "$(find "$W/root" -mindepth 1 -printf '%f ')" = "f " ] ||
		fail "the server's directory holds: $(find "$W/root" -mindepth 1 -printf '%f ')" || return 1
	no_temp "$W/root" || return 1
	alive srv || return 1
	# A server with the key serves clients without one only if it has none.
	stop_server srv || return 1
	start_server open "$S" -r "$W/root" || return 1
	run any "$C" "${CT[@]}" -p "$PORT" --secret "$W/key" "$RDMA_IP:f" "$W/local/h"
	want_rc any 0 || return 1
	stop_server open
}

t_secret_file_checked_at_start() {
	dirs
	mkkey "$W/open" 644
	head -c 15 /dev/urandom >"$W/short"
	chmod 600 "$W/short"
	mkfile "$W/local/f" 100
	run s1 "$S" -r "$W/root" -p 0 --secret "$W/open"
	want_rc s1 2 || return 1
	want_err s1 "secret file '.*/open' is accessible by group or others \(mode 0644\); it must be readable by its owner only: chmod 600" || return 1
	run s2 "$S" -r "$W/root" -p 0 --secret "$W/short"
	want_rc s2 2 || return 1
	want_err s2 "has 15 bytes; a key needs 16 to 4095" || return 1
	run s3 "$S" -r "$W/root" -p 0 --secret "$W/missing"
	want_rc s3 2 || return 1
	want_err s3 "cannot open secret file" || return 1
	# The client checks its copy the same way, before any traffic.
	run c1 "$C" "${CT[@]}" --secret "$W/open" "$W/local/f" "$RDMA_IP:f"
	want_rc c1 2 || return 1
	want_err c1 "chmod 600" || return 1
}

t_read_only_and_write_only() {
	dirs
	mkfile "$W/root/served" 70000
	mkfile "$W/local/f" 5000
	start_server ro "$S" -r "$W/root" --read-only || return 1
	run put "$C" "${CT[@]}" -p "$PORT" "$W/local/f" "$RDMA_IP:f"
	want_rc put 3 || return 1
	want_err put "rejected the connection: this server is read-only \(--read-only\): put is refused, get only$" || return 1
	run get "$C" "${CT[@]}" -p "$PORT" "$RDMA_IP:served" "$W/local/served"
	want_rc get 0 || return 1
	same "$W/root/served" "$W/local/served" || return 1
	wait_for ro "client $RDMA_IP port [0-9]+: rejected: this server is read-only" 5 || return 1
	stop_server ro || return 1
	start_server wo "$S" -r "$W/root" --write-only || return 1
	run get2 "$C" "${CT[@]}" -p "$PORT" "$RDMA_IP:served" "$W/local/again"
	want_rc get2 3 || return 1
	want_err get2 "rejected the connection: this server is write-only \(--write-only\): get is refused, put only$" || return 1
	[ ! -e "$W/local/again" ] || fail "a refused get left its destination" || return 1
	no_temp "$W/local" || return 1
	run put2 "$C" "${CT[@]}" -p "$PORT" "$W/local/f" "$RDMA_IP:f"
	want_rc put2 0 || return 1
	same "$W/local/f" "$W/root/f" || return 1
	stop_server wo || return 1
	run both "$S" -r "$W/root" --read-only --write-only
	want_rc both 2 || return 1
	want_err both "exclude each other" || return 1
}

run_tests t_put_get_sizes t_hash_threads_same_digest t_chunk_and_depth_variants t_hostile_names_rejected \
	t_existing_destination t_client_killed_mid_put t_server_killed_mid_get \
	t_tmpfile_server_killed_mid_put t_tmpfile_client_killed_mid_get \
	t_server_stops_cleanly_mid_put t_two_puts_and_two_gets_at_once t_disk_full \
	t_local_and_remote_missing t_limits_rejected t_garbage_client_rejected \
	t_progress_and_quiet t_bad_options t_ulimit_l_message t_sequence_matches_trace \
	t_retry_options_reach_the_qps t_slow_local_disk_named \
	t_large_file t_json_output t_cpu_time_reported t_timeline_reported t_secret_required_and_checked t_secret_file_checked_at_start \
	t_read_only_and_write_only
