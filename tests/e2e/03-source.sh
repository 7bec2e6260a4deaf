#!/usr/bin/env bash
# End-to-end tests of 03_file-transfer's source side: which path a put's
# source takes on this kernel with --zero-copy (zero-copy from Linux 6.2,
# the named copy fallback before), the ring that Soft-RoCE takes by
# default, --copy, the `ulimit -l` fallback, and a source
# truncated or rewritten in the middle of a put or a get. Run through
# tools/rdma-env, which sets RDMA_IP.
# shellcheck source=lib03.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib03.sh"

# The two source paths. Which one a put must take follows from the running
# kernel (docs/kernels.md, 03's README; tests/repro/reg-mr-probe.c measures
# it): up to Linux 6.1, ibv_reg_mr pins every page for writing and a
# read-only shared file mapping refuses that (EFAULT), so the client must
# say so and copy; 6.2 dropped the forced write pin, so from 6.2 on the
# file (in $TMPDIR: the VM's /tmp, tmpfs under an overlay) must be
# registered and sent zero-copy. A kernel that takes the other path fails.
ZC_LINE='^source: page cache -> NIC \(zero-copy\)$'
EFAULT_LINE='^source: pread -> ring \(copy: ibv_reg_mr of the read-only file mapping: Bad address \(EFAULT\); kernels before 6\.2 pin such pages for writing and refuse them\)$'

# What Soft-RoCE gives without --zero-copy or --copy: the ring, and why.
SOFT_WHY='Soft-RoCE, where the ring measured faster; --zero-copy for the page cache'

# probe_device: SOFT=yes if $RDMA_DEV is Soft-RoCE (rdma_rxe's vendor
# id), where a side without --zero-copy takes its ring, SOFT=no for
# another device; RING_WHY, the reason a ring then gives with no option
# (Soft-RoCE's, else the file system's: not tmpfs). Fails the test if
# ibv_devinfo names no vendor id, rather than skip the Soft-RoCE checks.
probe_device() {
	local v
	v=$(ibv_devinfo ${RDMA_DEV:+-d "$RDMA_DEV"} 2>/dev/null | awk '$1 == "vendor_id:" { print $2; exit }')
	[ -n "$v" ] || { fail "ibv_devinfo -d ${RDMA_DEV:-?} names no vendor_id"; return 1; }
	if [ "$v" = 0xffffff ]; then
		SOFT=yes RING_WHY=$SOFT_WHY
	else
		SOFT=no RING_WHY='not tmpfs: [^);]*'
	fi
}

# kernel_path: "zero-copy" on Linux 6.2 and later, else "efault".
kernel_path() {
	local v maj min
	v=$(uname -r)
	maj=${v%%.*}
	min=${v#*.}
	min=${min%%[!0-9]*}
	if [ "$maj" -gt 6 ] || { [ "$maj" = 6 ] && [ "${min:-0}" -ge 2 ]; }; then
		echo zero-copy
	else
		echo efault
	fi
}

# source_path NAME: "zero-copy" or "efault" from NAME's one source line.
source_path() {
	local n
	n=$(count_out "$1" '^source: ')
	[ "$n" = 1 ] || fail "$1 printed $n source lines, not 1: $(tail_of "$T/$1.out")" || return 1
	if grep -Eq -- "$ZC_LINE" "$T/$1.out"; then
		echo zero-copy
	elif grep -Eq -- "$EFAULT_LINE" "$T/$1.out"; then
		echo efault
	else
		fail "$1: neither zero-copy nor the EFAULT fallback: $(grep '^source: ' "$T/$1.out")"
	fi
}

# want_kernel_path NAME: NAME's source line is the one this kernel must give.
want_kernel_path() {
	local path want
	want=$(kernel_path)
	path=$(source_path "$1") || return 1
	[ "$path" = "$want" ] && return 0
	fail "Linux $(uname -r): $1's source took the $path path; this kernel must give $want (zero-copy from 6.2 on, the EFAULT fallback before)"
}

t_put_source_path_per_kernel() {
	# f spans two 64 MiB windows; what does not depend on windows (--copy,
	# a get) moves the small file s.
	local size=$((66 * 1048576 + 5)) small=$((3 * 1048576 + 7))
	dirs
	mkfile "$W/local/f" "$size"
	mkfile "$W/local/s" "$small"
	start_server srv "$S" -r "$W/root" || return 1
	# 1000000-byte chunks: a window of 64 MiB / 1000000 = 67 chunks, so the
	# second window begins mid-page (at 67000000, mapped from 66998272),
	# and the first is released under way.
	run put "$C" "${CT[@]}" -v --zero-copy -c 1000000 -t 8 -p "$PORT" "$W/local/f" "$RDMA_IP:f"
	want_rc put 0 || return 1
	want_out put "^put f: $size $OK_RE" || return 1
	same "$W/local/f" "$W/root/f" || return 1
	want_kernel_path put || return 1
	echo "   this kernel: $(kernel_path) ($(uname -r))"
	if [ "$(kernel_path)" = zero-copy ]; then
		want_out put "^copied by the CPU: 0 file bytes \(zero-copy: none\)$" || return 1
		want_err put "registered window 0 of the file: 67000000 bytes at offset 0, access 0," || return 1
		want_err put "registered window 1 of the file: 2207749 bytes at offset 66998272, access 0," || return 1
		want_err put "chunk 67: 1000000 bytes at offset 67000000 are in the registered window" || return 1
		# No ring: nothing would use it (1000000 x 8 bytes).
		! grep -q "registered 8000000 bytes" "$T/put.err" || fail "a zero-copy put registered a ring" || return 1
	else
		want_out put "^copied by the CPU: $size file bytes \(pread into the ring\)$" || return 1
		want_err put "registered 8000000 bytes" || return 1
	fi
	# No option: Soft-RoCE takes the ring and says why (a NIC, the page cache).
	run auto "$C" "${CT[@]}" -p "$PORT" "$W/local/s" "$RDMA_IP:a"
	want_rc auto 0 || return 1
	same "$W/local/s" "$W/root/a" || return 1
	probe_device || return 1
	if [ "$SOFT" = yes ]; then
		want_out auto "^source: pread -> ring \(copy: $SOFT_WHY\)$" || return 1
	else
		[ "$(source_path auto)" = "$(kernel_path)" ] || fail "a NIC's default is the kernel's path" || return 1
	fi
	# --copy: the copy path anywhere, and every byte through the CPU.
	run copy "$C" "${CT[@]}" -v --copy -p "$PORT" "$W/local/s" "$RDMA_IP:g"
	want_rc copy 0 || return 1
	want_out copy '^source: pread -> ring \(copy: --copy\)$' || return 1
	want_out copy "^copied by the CPU: $small file bytes \(pread into the ring\)$" || return 1
	same "$W/local/s" "$W/root/g" || return 1
	# --json names the path and the count; a get counts its pwrites.
	run json "$C" "${CT[@]}" --json --zero-copy -f -p "$PORT" "$W/local/f" "$RDMA_IP:f"
	want_rc json 0 || return 1
	if [ "$(kernel_path)" = zero-copy ]; then
		want_json json "d['source'] == 'zero-copy' and d['copy_reason'] is None and
			d['cpu_copied_bytes'] == 0 and d['verified'] is True" || return 1
	else
		want_json json "d['source'] == 'copy' and 'EFAULT' in d['copy_reason'] and
			d['cpu_copied_bytes'] == $size and d['verified'] is True" || return 1
	fi
	stop_server srv
}

# A get's source is the server's: the same per-kernel path with the
# server's --zero-copy, on the server's side (its -v trace), in the
# client's line and --json from the ACCEPT; a client's --zero-copy asks a
# server without it; Soft-RoCE's default is the ring; --copy on either
# side forces the copy path.
t_get_source_path_per_kernel() {
	local size=$((66 * 1048576 + 5)) small=$((3 * 1048576 + 7)) want n
	dirs
	mkfile "$W/root/f" "$size"
	mkfile "$W/root/s" "$small"
	start_server srv "$S" -v --zero-copy -r "$W/root" || return 1
	# Two windows of the file, the second mid-page (as the put above).
	run get "$C" "${CT[@]}" -v -c 1000000 -t 8 -p "$PORT" "$RDMA_IP:f" "$W/local/f"
	want_rc get 0 || return 1
	want_out get "^get f: $size $OK_RE" || return 1
	same "$W/root/f" "$W/local/f" || return 1
	want=$(kernel_path)
	echo "   this kernel: $want ($(uname -r))"
	if [ "$want" = zero-copy ]; then
		want_out get "^source: the server's page cache -> NIC \(zero-copy\)$" || return 1
		wait_for srv "source: page cache -> NIC \(zero-copy\)" 5 || return 1
		# REMOTE_READ (IBV_ACCESS_REMOTE_READ = 4): the client READs them.
		wait_for srv "registered window 0 of the file: 67000000 bytes at offset 0, access 4," 5 || return 1
		wait_for srv "registered window 1 of the file: 2207749 bytes at offset 66998272, access 4," 5 || return 1
		wait_for srv "source: page cache -> NIC \(zero-copy\); copied by the CPU: 0 file bytes" 5 || return 1
		# The client READ from the windows, not from the ring.
		grep -q "CHUNK seq=67 slot=3 offset=67000000 len=1000000 addr=0x[0-9a-f]* rkey=" "$T/get.err" ||
			fail "no trace of chunk 67's CHUNK" || return 1
	else
		want_out get "^source: the server's pread -> ring \(copy: its -v trace says why\)$" || return 1
		wait_for srv "source: pread -> ring \(copy: ibv_reg_mr of the read-only file mapping: Bad address \(EFAULT\)" 5 || return 1
		wait_for srv "copied by the CPU: $size file bytes" 5 || return 1
	fi
	run json "$C" "${CT[@]}" --json -p "$PORT" "$RDMA_IP:s" "$W/local/s"
	want_rc json 0 || return 1
	if [ "$want" = zero-copy ]; then
		want_json json "d['source'] == 'zero-copy' and d['copy_reason'] is None and
			d['cpu_copied_bytes'] == $small and d['verified'] is True" || return 1
	else
		want_json json "d['source'] == 'copy' and 'the server' in d['copy_reason'] and
			d['verified'] is True" || return 1
	fi
	same "$W/root/s" "$W/local/s" || return 1
	# The server's own --zero-copy decides a put's destination too: not
	# the Soft-RoCE ring, but the reason its directory gives (not tmpfs).
	run zput "$C" "${CT[@]}" -p "$PORT" "$W/local/s" "$RDMA_IP:zput"
	want_rc zput 0 || return 1
	same "$W/local/s" "$W/root/zput" || return 1
	wait_for srv "destination: ring -> pwrite \(copy: not tmpfs: " 5 || return 1
	# The client's --copy: the server preads into its ring.
	run copy "$C" "${CT[@]}" --json --copy -p "$PORT" "$RDMA_IP:s" "$W/local/s2"
	want_rc copy 0 || return 1
	want_json copy "d['source'] == 'copy' and d['copy_reason'] == '--copy' and
		d['verified'] is True" || return 1
	wait_for srv "source: pread -> ring \(copy: --copy\)" 5 || return 1
	same "$W/root/s" "$W/local/s2" || return 1
	stop_server srv
	# A server without options: its device's default, or the client's
	# --zero-copy (a REQUEST flag).
	start_server srv3 "$S" -v -r "$W/root" || return 1
	run auto "$C" "${CT[@]}" -p "$PORT" "$RDMA_IP:s" "$W/local/s4"
	want_rc auto 0 || return 1
	same "$W/root/s" "$W/local/s4" || return 1
	probe_device || return 1
	if [ "$SOFT" = yes ]; then
		want_out auto "^source: the server's pread -> ring \(copy: its -v trace says why\)$" || return 1
		wait_for srv3 "source: pread -> ring \(copy: $SOFT_WHY\)" 5 || return 1
	fi
	run zc "$C" "${CT[@]}" --zero-copy -p "$PORT" "$RDMA_IP:s" "$W/local/s5"
	want_rc zc 0 || return 1
	same "$W/root/s" "$W/local/s5" || return 1
	if [ "$want" = zero-copy ]; then
		want_out zc "^source: the server's page cache -> NIC \(zero-copy\)$" || return 1
	else
		want_out zc "^source: the server's pread -> ring \(copy: its -v trace says why\)$" || return 1
		wait_for srv3 "source: pread -> ring \(copy: ibv_reg_mr of the read-only file mapping: Bad address \(EFAULT\)" 5 || return 1
	fi
	stop_server srv3
	# The server's --copy: every get takes the copy path.
	start_server srv2 "$S" -v --copy -r "$W/root" || return 1
	run copy2 "$C" "${CT[@]}" -p "$PORT" "$RDMA_IP:s" "$W/local/s3"
	want_rc copy2 0 || return 1
	want_out copy2 "^source: the server's pread -> ring \(copy: its -v trace says why\)$" || return 1
	wait_for srv2 "source: pread -> ring \(copy: --copy\)" 5 || return 1
	same "$W/root/s" "$W/local/s3" || return 1
	# ... even when the client asks for the page cache.
	run zc2 "$C" "${CT[@]}" --json --zero-copy -p "$PORT" "$RDMA_IP:s" "$W/local/s6"
	want_rc zc2 0 || return 1
	want_json zc2 "d['source'] == 'copy' and d['verified'] is True" || return 1
	same "$W/root/s" "$W/local/s6" || return 1
	# Its own trace says why, for each of the two gets (on 6.1 the kernel
	# would refuse the page cache anyway: the reason tells them apart).
	n=$(grep -Ec -- "source: pread -> ring \(copy: --copy\)$" "$T/srv2.err")
	[ "$n" = 2 ] || fail "srv2 gave --copy as the reason $n times, not 2: $(tail_of "$T/srv2.err")" || return 1
	stop_server srv2
}

# The destination in place: a get's READs (or a put's WRITEs) land in the
# file's page cache, through registered windows of a writable mapping,
# where that is safe: on tmpfs, on every kernel. Elsewhere (the VM's
# /tmp, an overlay) the ring and pwrite, with the reason. --copy: the
# ring. Each asks with --zero-copy (Soft-RoCE's default is the ring).
t_destination_in_place() {
	local size=$((66 * 1048576 + 5)) small=$((3 * 1048576 + 7)) shm r=0 port
	dirs
	mkfile "$W/root/f" "$size"
	mkfile "$W/root/s" "$small"
	shm=$(mktemp -d /dev/shm/rdma-e2e.XXXXXX) || return 1
	start_server srv "$S" -r "$W/root" || { rm -rf "$shm"; return 1; }
	port=$PORT
	get_in_place "$shm" && put_in_place "$shm" || r=1
	rm -rf "$shm"
	[ "$r" = 0 ] || return 1
	PORT=$port # put_in_place's server is gone
	# Not tmpfs: the ring, and the reason.
	run ovl "$C" "${CT[@]}" -v --zero-copy -p "$PORT" "$RDMA_IP:s" "$W/local/s"
	want_rc ovl 0 || return 1
	want_out ovl "^destination: ring -> pwrite \(copy: not tmpfs: a pinned writable mapping of this file system's pages would bypass its dirty tracking\)$" || return 1
	want_out ovl "^copied by the CPU: $small file bytes \(pwrite from the ring\)$" || return 1
	same "$W/root/s" "$W/local/s" || return 1
	stop_server srv
}

# put_in_place DIR: a server whose directory is on tmpfs (DIR/root)
# takes a put's WRITEs in place when the client asks (--zero-copy): the
# ACCEPT gives the file's first window, each CREDIT where the chunk depth
# later goes. Without it, on Soft-RoCE, the server's ring.
put_in_place() {
	mkdir -p "$1/root"
	start_server srv2 "$S" -v -r "$1/root" || return 1
	run put2 "$C" "${CT[@]}" -v --zero-copy -c 1000000 -t 8 -p "$PORT" "$W/root/f" "$RDMA_IP:f"
	want_rc put2 0 || return 1
	want_out put2 "^destination: the server's NIC -> page cache \\(in place: tmpfs\\)$" || return 1
	same "$W/root/f" "$1/root/f" || return 1
	wait_for srv2 "destination: NIC -> page cache \\(in place: tmpfs\\)" 5 || return 1
	wait_for srv2 "registered window 1 of the O_TMPFILE file: 2207749 bytes at offset 66998272, access 0x3 \\(in place: tmpfs\\)" 5 || return 1
	wait_for srv2 "chunk 67: 1000000 bytes at offset 67000000 are in place" 5 || return 1
	# The CREDIT of chunk 59 sends chunk 67 into window 1.
	grep -Eq "recv CREDIT seq=59 slot=3 .* next addr=0x[0-9a-f]+ rkey=" "$T/put2.err" ||
		fail "no trace of the CREDIT that places chunk 67" || return 1
	run putj "$C" "${CT[@]}" --json --zero-copy -p "$PORT" "$W/root/s" "$RDMA_IP:s"
	want_rc putj 0 || return 1
	want_json putj "d['destination'] == 'in-place' and d['destination_reason'] == \"the server's tmpfs\"" || return 1
	same "$W/root/s" "$1/root/s" || return 1
	run putc "$C" "${CT[@]}" --copy -p "$PORT" "$W/root/s" "$RDMA_IP:s2"
	want_rc putc 0 || return 1
	want_out putc "^destination: the server's ring -> pwrite \\(copy: --copy\\)$" || return 1
	same "$W/root/s" "$1/root/s2" || return 1
	probe_device || return 1
	if [ "$SOFT" = yes ]; then
		run puta "$C" "${CT[@]}" -p "$PORT" "$W/root/s" "$RDMA_IP:s3"
		want_rc puta 0 || return 1
		want_out puta "^destination: the server's ring -> pwrite \\(copy: its -v trace says why\\)$" || return 1
		wait_for srv2 "destination: ring -> pwrite \\(copy: $SOFT_WHY\\)" 5 || return 1
		same "$W/root/s" "$1/root/s3" || return 1
	fi
	stop_server srv2
}

# get_in_place DIR: gets into DIR (tmpfs) with the server srv running.
get_in_place() {
	# Two windows of the destination, the second mid-page.
	run shm "$C" "${CT[@]}" -v --zero-copy -c 1000000 -t 8 -p "$PORT" "$RDMA_IP:f" "$1/f"
	want_rc shm 0 || return 1
	want_out shm "^destination: NIC -> page cache \(in place: tmpfs\)$" || return 1
	want_out shm "^copied by the CPU: 0 file bytes \(in place: none\)$" || return 1
	want_err shm "registered window 0 of the O_TMPFILE file: 67000000 bytes at offset 0, access 0x1 \(in place: tmpfs\)" || return 1
	want_err shm "registered window 1 of the O_TMPFILE file: 2207749 bytes at offset 66998272" || return 1
	want_err shm "chunk 67: 1000000 bytes at offset 67000000 are in place" || return 1
	same "$W/root/f" "$1/f" || return 1
	# --json says so; --copy takes the ring.
	run shmj "$C" "${CT[@]}" --json --zero-copy -p "$PORT" "$RDMA_IP:s" "$1/s"
	want_rc shmj 0 || return 1
	want_json shmj "d['destination'] == 'in-place' and d['destination_reason'] == 'tmpfs' and
		d['cpu_copied_bytes'] == 0 and d['verified'] is True" || return 1
	same "$W/root/s" "$1/s" || return 1
	run shmc "$C" "${CT[@]}" -v --copy -p "$PORT" "$RDMA_IP:s" "$1/s2"
	want_rc shmc 0 || return 1
	want_out shmc "^destination: ring -> pwrite \(copy: --copy\)$" || return 1
	want_out shmc "^copied by the CPU: $small file bytes \(pwrite from the ring\)$" || return 1
	same "$W/root/s" "$1/s2"
}

# --direct: the receiver pwrites with O_DIRECT on ext4, xfs and btrfs,
# where it bypasses the page cache; elsewhere (the VM's overlay /tmp)
# both ends say why not. Either way the file is verified. The O_DIRECT
# path itself: tests/unit/test-xfer-file.c, on the host's file system.
t_direct_where_the_file_system_allows() {
	local small=$((3 * 1048576 + 7)) fs want
	dirs
	mkfile "$W/local/s" "$small"
	probe_device || return 1
	fs=$(stat -f -c %T "$W/root")
	case $fs in
	ext2/ext3 | xfs | btrfs)
		want="pwrite with O_DIRECT \(copy: $RING_WHY\)" ;;
	*)
		want="pwrite \(copy: $RING_WHY; not O_DIRECT: used on ext4, xfs and btrfs only, where it bypasses the page cache \(this file system's type is 0x[0-9a-f]+\)\)" ;;
	esac
	start_server srv "$S" -v -r "$W/root" || return 1
	# A put's --direct reaches the server (a REQUEST flag).
	run put "$C" "${CT[@]}" --direct -p "$PORT" "$W/local/s" "$RDMA_IP:s"
	want_rc put 0 || return 1
	same "$W/local/s" "$W/root/s" || return 1
	wait_for srv "destination: ring -> $want$" 5 || return 1
	# A get's is ours: the line, and --json's direct_bytes/direct_reason.
	run get "$C" "${CT[@]}" --direct -p "$PORT" "$RDMA_IP:s" "$W/local/g"
	want_rc get 0 || return 1
	want_out get "^destination: ring -> $want$" || return 1
	same "$W/local/s" "$W/local/g" || return 1
	run getj "$C" "${CT[@]}" --direct --json -p "$PORT" "$RDMA_IP:s" "$W/local/j"
	want_rc getj 0 || return 1
	case $fs in
	ext2/ext3 | xfs | btrfs)
		# All but the last, short chunk with O_DIRECT, no CPU copy.
		want_json getj "d['direct_bytes'] == $small // 65536 * 65536 and
			d['cpu_copied_bytes'] == $small % 65536 and d['direct_reason'] is None" || return 1 ;;
	*)
		want_json getj "d['direct_bytes'] == 0 and d['cpu_copied_bytes'] == $small and
			d['direct_reason'].startswith('used on ext4, xfs and btrfs only')" || return 1 ;;
	esac
	same "$W/local/s" "$W/local/j" || return 1
	# Without --direct: no word of it.
	run plain "$C" "${CT[@]}" --json -p "$PORT" "$RDMA_IP:s" "$W/local/p"
	want_rc plain 0 || return 1
	want_json plain "d['direct_bytes'] == 0 and d['direct_reason'] is None" || return 1
	stop_server srv
}
# direct_on_ext4_body DIR: --direct over RDMA into an ext4 mounted at DIR
# (ordered data): both directions with O_DIRECT, then a chunk that is not a
# multiple of 4096, then a file system (data=journal) where ext4 buffers
# direct writes without an error and the mincore check must say so.
direct_on_ext4_body() {
	local e=$1 small=$((3 * 1048576 + 7))
	probe_device || return 1
	mkdir -p "$e/root" "$e/local"
	mkfile "$W/local/s" "$small"
	start_server srv "$S" -v -r "$e/root" || return 1
	run put "$C" "${CT[@]}" --direct -p "$PORT" "$W/local/s" "$RDMA_IP:s"
	want_rc put 0 || return 1
	same "$W/local/s" "$e/root/s" || return 1
	wait_for srv "destination: ring -> pwrite with O_DIRECT \\(copy: $RING_WHY\\)$" 5 || return 1
	wait_for srv "copied by the CPU: 7 file bytes \\(pwrite from the ring; 3145728 more with O_DIRECT\\)" 5 ||
		return 1
	run get "$C" "${CT[@]}" --direct --json -p "$PORT" "$RDMA_IP:s" "$e/local/g"
	want_rc get 0 || return 1
	same "$W/local/s" "$e/local/g" || return 1
	# All but the last, short chunk went with O_DIRECT: no CPU copy.
	want_json get "d['direct_bytes'] == $small // 65536 * 65536 and
		d['cpu_copied_bytes'] == $small % 65536 and d['direct_reason'] is None" || return 1
	run odd "$C" "${CT[@]}" --direct --json -c 20000 -p "$PORT" "$RDMA_IP:s" "$e/local/o"
	want_rc odd 0 || return 1
	same "$W/local/s" "$e/local/o" || return 1
	want_json odd "d['direct_bytes'] == 0 and
		d['direct_reason'] == 'the chunk size (20000 bytes) is not a multiple of 4096'" || return 1
	stop_server srv
	cleanup_test
	umount "$e" || { fail "cannot unmount $e"; return 1; }
	mount -o loop,data=journal "$W/ext4.img" "$e" ||
		{ fail "cannot mount the ext4 image with data=journal"; return 1; }
	start_server srv "$S" -r "$e/root" || return 1
	run jget "$C" "${CT[@]}" --direct --json -p "$PORT" "$RDMA_IP:s" "$e/local/j"
	want_rc jget 0 || return 1
	same "$W/local/s" "$e/local/j" || return 1
	want_json jget "d['direct_bytes'] == 0 and d['cpu_copied_bytes'] == $small and
		'page cache' in d['direct_reason']" || return 1
	stop_server srv
}

t_direct_on_ext4() {
	local e=$W/ext4 r
	dirs
	command -v mkfs.ext4 >/dev/null || { REASON="no mkfs.ext4 (e2fsprogs)"; return 77; }
	modprobe loop 2>/dev/null
	if ! truncate -s 64M "$W/ext4.img" || ! mkfs.ext4 -q -F "$W/ext4.img"; then
		fail "mkfs.ext4 of a 64 MiB image failed"
		return 1
	fi
	mkdir -p "$e"
	mount -o loop "$W/ext4.img" "$e" 2>/dev/null ||
		{ REASON="cannot mount an ext4 image on a loop device (not root, or no loop module)"; return 77; }
	direct_on_ext4_body "$e"
	r=$?
	cleanup_test # the servers must be gone before the unmount
	umount "$e" 2>/dev/null
	return $r
}

t_memlock_too_small_falls_back() {
	# An ordinary user with `ulimit -l` 4 MiB: the 8 MiB file's window
	# does not fit, so the client keeps within the limit: copy path, and
	# the line says why (what is taken: the control buffers, to come),
	# then the 3 MiB ring, which fits. The same on every kernel. (Root
	# has CAP_IPC_LOCK: the kernel does not apply the limit, nor do we.)
	local u=nobody
	id "$u" >/dev/null 2>&1 && command -v setpriv >/dev/null ||
		{ REASON="no user '$u' or no setpriv"; return 77; }
	dirs
	mkfile "$W/local/f" $((8 << 20))
	chmod 755 "$W" "$W/local"
	chmod 644 "$W/local/f"
	start_server srv "$S" -r "$W/root" || return 1
	run put bash -c "ulimit -l 4096 && exec setpriv --reuid=$u --regid=nogroup --clear-groups \
		$C --timeout 5 -v --zero-copy -c 1M -t 3 -p $PORT $W/local/f $RDMA_IP:f"
	if grep -q "rdma_create_event_channel\|/dev/infiniband" "$T/put.err"; then
		REASON="this user cannot open the RDMA device: $(tail_of "$T/put.err" 1)"
		return 77
	fi
	want_rc put 0 || return 1
	# shellcheck disable=SC2016 # the backquotes are the message's own
	want_out put '^source: pread -> ring \(copy: the locked-memory limit \(`ulimit -l` 4 MiB, [0-9]+ KiB of it taken\) cannot also pin 8 MiB of file windows\)$' || return 1
	want_err put 'registered 3145728 bytes' || return 1
	want_out put "^copied by the CPU: 8388608 file bytes" || return 1
	same "$W/local/f" "$W/root/f" || return 1
	stop_server srv
}

# change_at_pause WHO HOW FILE: wait (30 s at most: the emulated VM may
# share the host) until WHO stopped at the test hook's chunk ($W/pause
# exists), truncate FILE to 100 KiB or rewrite all its bytes in place
# (HOW), then let WHO go on. The client runs as cli.
change_at_pause() {
	local i
	for ((i = 0; i < 300; i++)); do
		[ -e "$W/pause" ] && break
		nap 0.1
	done
	[ -e "$W/pause" ] ||
		fail "the $1 did not reach chunk 2 within 30 s; client: $(tail_of "$T/cli.err" 3);" \
			"server $(kill -0 "${PID[srv]}" 2>/dev/null && echo running || echo "gone"): $(tail_of "$T/srv.err" 3)" ||
		return 1
	if [ "$2" = truncate ]; then
		truncate -s 100K "$3"
	else
		# Same size, other bytes: only the content and the times move.
		# From the pool (mkfile), not /dev/urandom: 8 MiB of that took
		# seconds in a loaded VM while the paused peer's --timeout ran.
		mkfile "$W/rewrite" "$(stat -c %s "$3")" &&
			dd if="$W/rewrite" of="$3" conv=notrunc status=none && rm -f "$W/rewrite"
	fi
	rm -f "$W/pause"
}

# change_mid_put HOW [CLIENT_ARGS...]: a put of 8 MiB in 64 KiB chunks
# that stops after chunk 2 (the test hook RDMA_XFER_TEST_PAUSE), while
# the source is truncated or rewritten; then it must fail, and nothing
# may be stored.
change_mid_put() {
	local how=$1
	shift
	dirs
	mkfile "$W/local/f" $((8 << 20))
	start_server srv "$S" -r "$W/root" || return 1
	RDMA_XFER_TEST_PAUSE="2:$W/pause" spawn cli "$C" "${CT[@]}" -c 64K -t 2 "$@" \
		-p "$PORT" "$W/local/f" "$RDMA_IP:f"
	change_at_pause client "$how" "$W/local/f" || return 1
	wait_exit cli 20
	want_rc cli 1 || return 1
	want_err cli "source changed during transfer" || return 1
	! grep -q verified "$T/cli.out" || fail "the client printed 'verified'" || return 1
	wait_no_temp "$W/root" 10 || return 1
	[ ! -e "$W/root/f" ] || fail "a changed source was stored" || return 1
	wait_for srv "put 'f': the client gave up: client.*source changed during transfer" 5 || return 1
	stop_server srv
}

# changed_put HOW ZERO_COPY_RE COPY_RE: change_mid_put HOW --zero-copy,
# which must fail with the message of this kernel's path (ZERO_COPY_RE or
# COPY_RE), then the same with --copy, with COPY_RE.
changed_put() {
	local re=$3
	change_mid_put "$1" --zero-copy || return 1
	want_kernel_path cli || return 1
	[ "$(kernel_path)" = zero-copy ] && re=$2
	want_err cli "source changed during transfer: $re" || return 1
	change_mid_put "$1" --copy || return 1
	want_err cli "source changed during transfer: $3"
}

# Zero-copy: hashing a chunk past the new end faults (SIGBUS), caught.
t_source_truncated_during_put() {
	changed_put truncate 'it shrank to 102400 bytes under its mapping \(SIGBUS while hashing chunk [0-9]+\)' \
		'it shrank from 8388608 to 102400 bytes$'
}

# Zero-copy: hashed again before DONE, the bytes differ from those sent.
t_source_rewritten_during_put() {
	changed_put rewrite 'its bytes now differ from those sent' 'it was modified \(its mtime or ctime moved\)'
}

# The server's get source, the same way, on this kernel's path (the
# client's --zero-copy) and with --copy.
t_source_changed_during_get() {
	local how copy
	for copy in --zero-copy --copy; do
	for how in truncate rewrite; do
		dirs
		mkfile "$W/root/f" $((8 << 20))
		RDMA_XFER_TEST_PAUSE="2:$W/pause" start_server srv "$S" -r "$W/root" || return 1
		spawn cli "$C" "${CT[@]}" -c 64K -t 2 $copy -p "$PORT" "$RDMA_IP:f" "$W/local/f"
		change_at_pause server "$how" "$W/root/f" || return 1
		wait_exit cli 20
		want_rc cli 1 || return 1
		want_err cli "server: server cannot read 'f': source changed during transfer|server: source changed during transfer" || return 1
		! grep -q verified "$T/cli.out" || fail "the client printed 'verified'" || return 1
		no_temp "$W/local" || return 1
		[ ! -e "$W/local/f" ] || fail "a changed source was stored" || return 1
		stop_server srv || return 1
	done
	done
}

run_tests t_put_source_path_per_kernel t_get_source_path_per_kernel t_destination_in_place \
	t_direct_where_the_file_system_allows t_direct_on_ext4 t_memlock_too_small_falls_back \
	t_source_truncated_during_put t_source_rewritten_during_put t_source_changed_during_get
