#!/usr/bin/env bash
# tests/repro/reg-mr-probe.sh: run reg-mr-probe (see reg-mr-probe.c) on an
# ext4 file system on a loop device and on a tmpfs, as root, in
#   tools/rdma-env --kernel K -- tests/repro/reg-mr-probe.sh
# (make reg-mr-probe does that for each kernel). Prints the probe's lines:
# one per case, the ODP capabilities, and the row of 03's README table.
set -u
cd "$(dirname "$0")/../.." || exit 2
BIN=$PWD/build/tests/reg-mr-probe
# shellcheck source=fs.sh source-path=SCRIPTDIR
. tests/repro/fs.sh
# 64 MiB: room for the probe's 2 MiB file and ext4's journal.
repro_fs reg-mr-probe.sh "$BIN" 64M 16M
echo "file systems: $(findmnt -n -o FSTYPE "$W/ext4") and $(findmnt -n -o FSTYPE "$W/tmpfs")"
"$BIN" ${RDMA_DEV:+-d "$RDMA_DEV"} "$W/ext4" "$W/tmpfs"
