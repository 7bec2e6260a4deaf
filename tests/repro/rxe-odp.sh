#!/usr/bin/env bash
# tests/repro/rxe-odp.sh: run rxe-odp (see rxe-odp.c) as root in
#   tools/rdma-env --kernel K -- tests/repro/rxe-odp.sh
# (make repro-rxe-odp does that for each kernel of REPRO_KERNELS): the NIC
# READs into (--op read) or is WRITTEN into (--op write) an ODP mapping of a
# file on ext4 (a loop device), on tmpfs and on the VM's root overlay
# (/tmp), with the pages faulted in first (--touch) or not, after a control
# run without ODP. REPRO_ROUNDS runs per case (default 3). One line per
# case: how many runs had the data right, wrong after successful
# completions (exit 3), or failed otherwise, and the first such run's words. Exits 0 when every case ran (whatever
# the kernel did), 1 when the file systems could not be set up.
set -u
cd "$(dirname "$0")/../.." || exit 2
BIN=$PWD/build/tests/rxe-odp
ROUNDS=${REPRO_ROUNDS:-3}
# shellcheck source=fs.sh source-path=SCRIPTDIR
. tests/repro/fs.sh
repro_fs rxe-odp.sh "$BIN" 96M 64M
mkdir -p "$W/overlay" || exit 2
echo "kernel $(uname -r); file systems: $(findmnt -n -o FSTYPE -T "$W/ext4"), $(findmnt -n -o FSTYPE -T "$W/tmpfs"), $(findmnt -n -o FSTYPE -T "$W/overlay")"
# The control: the same program with the destination pinned (no ODP), on
# tmpfs, whose writable mappings every kernel here registers.
for op in read write; do
	echo "control, $op into tmpfs without ODP: $("$BIN" ${RDMA_DEV:+-d "$RDMA_DEV"} --no-odp --op "$op" "$W/tmpfs/control" 2>&1 | tail -n 1)"
	rm -f "$W/tmpfs/control"
done
for op in read write; do
	for fs in ext4 tmpfs overlay; do
		for touch in "" --touch; do
			ok=0 wrong=0 failed=0 first=""
			for ((r = 1; r <= ROUNDS; r++)); do
				out=$(timeout 60 "$BIN" ${RDMA_DEV:+-d "$RDMA_DEV"} --op "$op" $touch "$W/$fs/dst" 2>&1)
				rc=$?
				case $rc in
				0) ok=$((ok + 1)) ;;
				3) wrong=$((wrong + 1)) ;;
				5) echo "$op: no ODP for RC on this device (every file system)"; continue 3 ;;
				*) failed=$((failed + 1)) ;;
				esac
				# The first run that went wrong: its first "mapping bytes" line
				# (where the data landed), else its last line.
				[ "$rc" = 0 ] || [ -n "$first" ] ||
					first="exit $rc: $(grep -m1 'mapping bytes' <<<"$out" || tail -n 1 <<<"$out")"
				rm -f "$W/$fs/dst"
			done
			echo "$op $fs ${touch:---no-touch}: $ok right, $wrong wrong after success, $failed failed${first:+ (first: $first)}"
		done
	done
done
