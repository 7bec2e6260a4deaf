#!/usr/bin/env bash
# tests/repro/reg-mr-probe.sh: run reg-mr-probe (see reg-mr-probe.c) on an
# ext4 file system on a loop device and on a tmpfs, as root, in
#   tools/rdma-env --kernel K -- tests/repro/reg-mr-probe.sh
# (make reg-mr-probe does that for each kernel). Prints the probe's lines:
# one per case, the ODP capabilities, and the row of 03's README table.
set -u
cd "$(dirname "$0")/../.." || exit 2
BIN=$PWD/build/tests/reg-mr-probe
[ -x "$BIN" ] || { echo "$BIN missing: make repro-build first" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "reg-mr-probe.sh: needs root (a loop mount and a tmpfs)" >&2; exit 2; }
command -v mkfs.ext4 >/dev/null || { echo "reg-mr-probe.sh: mkfs.ext4 not installed" >&2; exit 2; }
W=$(mktemp -d "${TMPDIR:-/tmp}/reg-mr-probe.XXXXXX") || exit 2
cleanup() {
	umount "$W/ext4" "$W/tmpfs" 2>/dev/null
	rm -rf "$W"
}
trap cleanup EXIT
mkdir -p "$W/ext4" "$W/tmpfs" || exit 2
modprobe loop 2>/dev/null # a module in Debian's kernels
# 64 MiB: room for the probe's 2 MiB file and ext4's journal.
truncate -s 64M "$W/img" && mkfs.ext4 -q -F "$W/img" && mount -o loop "$W/img" "$W/ext4" ||
	{ echo "reg-mr-probe.sh: cannot loop-mount an ext4 image" >&2; exit 1; }
mount -t tmpfs -o size=16M reg-mr-probe "$W/tmpfs" ||
	{ echo "reg-mr-probe.sh: cannot mount a tmpfs" >&2; exit 1; }
echo "file systems: $(findmnt -n -o FSTYPE "$W/ext4") and $(findmnt -n -o FSTYPE "$W/tmpfs")"
"$BIN" ${RDMA_DEV:+-d "$RDMA_DEV"} "$W/ext4" "$W/tmpfs"
