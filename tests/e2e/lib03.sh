# shellcheck shell=bash
# tests/e2e/lib03.sh - what the end-to-end tests of 03_file-transfer
# (03-file-transfer.sh, 03-source.sh) share: the programs, a scratch
# directory, random files, and checks of what a transfer leaves behind.
# Sourced; tests/lib.sh comes with it.
# shellcheck source=../lib.sh source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

# S, C, CT and OK_RE are for the files that source this.
# shellcheck disable=SC2034
S=$ROOT/03_file-transfer/rdma-server
# shellcheck disable=SC2034
C=$ROOT/03_file-transfer/rdma-client
# shellcheck disable=SC2034
CT=(--timeout 5) # client timeout: every wait in the client is bounded by it
# Directories of the tests live in $W, not in $T: lib.sh empties $T with
# `rm -f "$T"/*` after each test and copies its files for TEST_KEEP_LOGS.
W=$(mktemp -d "${TMPDIR:-/tmp}/rdma-e2e-03.XXXXXX")
POOL=$(mktemp "${TMPDIR:-/tmp}/rdma-e2e-03-pool.XXXXXX") # see mkfile
trap 'cleanup_test; umount "$W/small" "$W/ext4" 2>/dev/null; rm -rf "$T" "$W" "$POOL"' EXIT
# shellcheck disable=SC2034
OK_RE='bytes in [0-9]+\.[0-9]{3} s \([0-9]+\.[0-9] MiB/s\), xxh3-128 [0-9a-f]{32} verified$'

# Fresh server root and local directory for this test.
dirs() {
	rm -rf "${W:?}"/*
	mkdir -p "$W/root" "$W/local" "$W/outside"
}

# mkfile PATH BYTES: random content. Above 1 MiB: BYTES from a random offset
# of a pool of random bytes made once per run of this file, at page-cache
# speed (/dev/urandom gives ~26 MiB/s in the emulated VM, and this file
# needs ~500 MiB); random offsets, so two files of a test differ.
POOL_SIZE=$((128 << 20))
mkfile() {
	local off
	if [ "$2" -le $((1 << 20)) ] || [ "$2" -gt "$POOL_SIZE" ]; then
		head -c "$2" /dev/urandom >"$1"
		return
	fi
	[ -s "$POOL" ] || head -c "$POOL_SIZE" /dev/urandom >"$POOL"
	off=$((((RANDOM << 15) | RANDOM) % (POOL_SIZE - $2 + 1)))
	dd if="$POOL" of="$1" bs=1M skip="$off" count="$2" iflag=skip_bytes,count_bytes status=none
}

# same A B: identical content, byte for byte (cmp: hashing costs seconds per
# 32 MiB in the emulated VM); the sha256s only name a difference.
same() {
	local a b
	cmp -s -- "$1" "$2" && return 0
	a=$(sha256sum <"$1" | cut -d' ' -f1)
	b=$(sha256sum <"$2" 2>/dev/null | cut -d' ' -f1)
	fail "$2 differs from $1 (sha256 $a vs ${b:-missing})"
}

# wait_gone DIR SECONDS: until no temporary file is left in DIR.
wait_no_temp() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		[ -z "$(find "$1" -maxdepth 1 -name '.*.part')" ] && return 0
		nap 0.1
	done
	no_temp "$1"
}

# wait_temp_growing DIR SECONDS [NAME]: a file being received into DIR
# (an O_TMPFILE one, or a .*.part one: see `receiving` in lib.sh) has data
# while background process NAME (if given) still runs. Returns 77 (skip)
# if NAME finished first: a device fast enough to move the whole file
# before we look cannot be interrupted in the middle by this test.
wait_temp_growing() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		receiving "$1" && return 0
		if [ -n "${3:-}" ] && ! kill -0 "${PID[$3]}" 2>/dev/null; then
			REASON="the transfer finished before it could be interrupted"
			return 77
		fi
		nap 0.1
	done
	fail "no file being received with data appeared in $1 within $2 s"
}

# tmpfs_used DIR: bytes in use on the file system of DIR.
tmpfs_used() {
	local b f s
	read -r b f s < <(stat -f -c '%b %f %S' "$1")
	echo $(((b - f) * s))
}

# wait_used DIR BYTES SECONDS: until DIR's file system has BYTES in use.
wait_used() {
	local i
	for ((i = 0; i < $3 * 10; i++)); do
		[ "$(tmpfs_used "$1")" -ge "$2" ] && return 0
		nap 0.1
	done
	fail "$1 did not reach $2 bytes in use within $3 s (at $(tmpfs_used "$1"))"
}

# left_nothing DIR: DIR is empty, and its tmpfs holds no data any more (an
# unlinked file still open would keep its pages).
left_nothing() {
	[ -z "$(ls -A "$1")" ] || fail "left in $1: $(ls -A "$1" | head -n3 | tr '\n' ' ')" || return 1
	[ "$(tmpfs_used "$1")" = 0 ] || fail "$1 still holds $(tmpfs_used "$1") bytes"
}
