#!/usr/bin/env bash
# tools/test-rdma-env.sh: checks of tools/rdma-env and tools/deps. One line per check ("ok - ..." or
# "not ok - ..."), then "N passed, N failed"; exit status 1 if any check failed.
#
# On a machine without RDMA each rdma-env call boots a Soft-RoCE VM (some seconds to a minute each under
# TCG, depending on load). Every call is bounded by an outer timeout, so the test always ends.
set -u

TOOLS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
RDMA_ENV=$TOOLS/rdma-env
LIMIT=300                  # outer bound for one rdma-env call, seconds
passed=0 failed=0

check() { # DESCRIPTION COMMAND...: run COMMAND, report ok if it succeeds
    local what=$1; shift
    if "$@"; then echo "ok - $what"; passed=$((passed + 1))
    else echo "not ok - $what"; failed=$((failed + 1)); fi
}

# No qemu of a run may survive it: look for a process whose command line has the run's unique TMPDIR.
no_qemu_left() { # TMPDIR_OF_THE_RUN
    for _ in $(seq 50); do                      # allow 5 s for processes that are just exiting
        pgrep -f -- "qemu-system.*$1" >/dev/null || return 0
        sleep 0.1
    done
    pgrep -af -- "qemu-system.*$1" >&2
    return 1
}

scratch=$(mktemp -d "${TMPDIR:-/tmp}/test-rdma-env.XXXXXX") || exit 1
trap 'rm -rf "$scratch"' EXIT
# The command's directory: under /tmp (as in CI), with a space and a comma (qemu option quoting).
cwd="$scratch/cwd, with space"
mkdir -p "$cwd" "$scratch/tmp-a" "$scratch/tmp-d" "$scratch/tmp-t"

# (e) dependencies
check "tools/deps base vm exits 0 (all packages installed)" "$TOOLS/deps" base vm

# (a) exit status propagation
TMPDIR=$scratch/tmp-a timeout $LIMIT "$RDMA_ENV" -q -- sh -c 'exit 7' > "$scratch/a.out" 2>&1
rc=$?
check "COMMAND's exit status is rdma-env's (7, got $rc)" [ "$rc" = 7 ]

# (b), (c) and environment passing, from one run: the command records what it sees in files in its cwd.
export TEST_TRICKY_VALUE="a b  \$HOME 'q' \"dq\" *"
# shellcheck disable=SC2016  # expanded inside
(cd "$cwd" && timeout $LIMIT "$RDMA_ENV" -q -- sh -c '
    env > env.txt
    ibv_devinfo -d "$RDMA_DEV" > devinfo.txt 2>&1
    echo written-inside > from-inside.txt' > "$scratch/b.out" 2>&1)
rc=$?
check "a command that writes files runs and exits 0 (got $rc)" [ "$rc" = 0 ]
rdma_ip=$(sed -n 's/^RDMA_IP=//p' "$cwd/env.txt" 2>/dev/null)
ip_ok() { [[ $rdma_ip =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$ ]] && [[ $rdma_ip != 127.* ]]; }
check "RDMA_IP is an IPv4 address, not loopback (${rdma_ip:-unset})" ip_ok
vars_ok() { grep -q '^RDMA_DEV=.' "$cwd/env.txt" && grep -q '^RDMA_ENV_MODE=.' "$cwd/env.txt"; }
check "RDMA_DEV and RDMA_ENV_MODE are set" vars_ok
check "ibv_devinfo -d \$RDMA_DEV shows PORT_ACTIVE" grep -q PORT_ACTIVE "$cwd/devinfo.txt"
check "a file written in the cwd inside appears on the host" \
    grep -qx written-inside "$cwd/from-inside.txt"
check "TEST_* variables are passed unchanged" \
    grep -qxF "TEST_TRICKY_VALUE=$TEST_TRICKY_VALUE" "$cwd/env.txt"
unset TEST_TRICKY_VALUE

# (d) timeout: 124, within a bounded time, and no qemu left behind.
start=$SECONDS
TMPDIR=$scratch/tmp-d timeout $LIMIT "$RDMA_ENV" -q -t 20 -- sleep 1000 > "$scratch/d.out" 2>&1
rc=$? took=$((SECONDS - start))
check "-t 20 -- sleep 1000 exits 124 (got $rc)" [ "$rc" = 124 ]
check "... within 40 s (took $took s)" [ "$took" -le 40 ]
check "... and leaves no qemu process behind" no_qemu_left "$scratch/tmp-d"

# SIGTERM while the VM runs: rdma-env exits 143 and takes its VM with it.
TMPDIR=$scratch/tmp-t "$RDMA_ENV" -q -- sleep 1000 > "$scratch/t.out" 2>&1 &
pid=$!
for _ in $(seq 600); do                     # up to 60 s for qemu to start
    pgrep -f -- "qemu-system.*$scratch/tmp-t" >/dev/null && break
    sleep 0.1
done
sleep 2
kill -TERM "$pid"
for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done   # up to 30 s
kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
wait "$pid"
rc=$?
check "SIGTERM makes rdma-env exit 143 (got $rc)" [ "$rc" = 143 ]
check "... and leaves no qemu process behind" no_qemu_left "$scratch/tmp-t"

if [ "$failed" -gt 0 ]; then
    for f in "$scratch"/*.out; do echo "---- ${f##*/}:"; tail -n 40 "$f"; done >&2
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
