# shellcheck shell=bash
# tests/repro/fs.sh - what reg-mr-probe.sh and rxe-odp.sh share: as root in
# the VM, a scratch directory W with an ext4 file system on a loop device
# at $W/ext4 and a tmpfs at $W/tmpfs, both unmounted and W removed on exit.
# Sourced.
#
# repro_fs NAME BIN IMG_SIZE TMPFS_SIZE: checks that BIN was built, that we
# are root and that mkfs.ext4 is there (exit 2 if not), then mounts both
# (exit 1 if it cannot). NAME names the script in messages.
repro_fs() {
	local name=$1 bin=$2 img=$3 tmp=$4
	[ -x "$bin" ] || { echo "$bin missing: make repro-build first" >&2; exit 2; }
	[ "$(id -u)" = 0 ] || { echo "$name: needs root (a loop mount and a tmpfs)" >&2; exit 2; }
	command -v mkfs.ext4 >/dev/null || { echo "$name: mkfs.ext4 not installed" >&2; exit 2; }
	W=$(mktemp -d "${TMPDIR:-/tmp}/$name.XXXXXX") || exit 2
	trap 'umount "$W/ext4" "$W/tmpfs" 2>/dev/null; rm -rf "$W"' EXIT
	mkdir -p "$W/ext4" "$W/tmpfs" || exit 2
	modprobe loop 2>/dev/null # a module in Debian's kernels
	if ! truncate -s "$img" "$W/img" || ! mkfs.ext4 -q -F "$W/img" ||
		! mount -o loop "$W/img" "$W/ext4"; then
		echo "$name: cannot loop-mount an ext4 image" >&2
		exit 1
	fi
	mount -t tmpfs -o "size=$tmp" "$name" "$W/tmpfs" || { echo "$name: cannot mount a tmpfs" >&2; exit 1; }
}
