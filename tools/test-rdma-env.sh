#!/usr/bin/env bash
# tools/test-rdma-env.sh: checks of tools/rdma-env and tools/deps. One line per check ("ok - ..." or
# "not ok - ..."), then "N passed, N failed"; exit status 1 if any check failed.
#
# On a machine without RDMA each rdma-env call boots a Soft-RoCE VM (some seconds to a minute each under
# TCG, depending on load). Every call is bounded by an outer timeout, so the test always ends.
# The two-node checks (-n 2) also need the 01 programs, which they build (make 01_basic-client-server).
#
#   tools/test-rdma-env.sh            every check
#   tools/test-rdma-env.sh kernels    only those of --kernel and of the watchdog (they fetch 6.12 and 7
#                                     into rdma-env's cache if they are not there)
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

# ---------------------------------------------------------------------------------------------------
# --kernel (6.12 and 7: fetched into the cache, booted, their modules used) and the watchdog.

kernel_checks() {
    local k kv rc out took start
    out=$("$RDMA_ENV" --list-kernels 2>/dev/null)
    rc=$?
    check "--list-kernels exits 0 (got $rc)" [ "$rc" = 0 ]
    for k in host 6.1 6.12 7; do
        check "--list-kernels maps --kernel $k to a version" \
            grep -Eq -- "^--kernel $k +-> [0-9][^ ]* \(" <<<"$out"
    done
    timeout 30 "$RDMA_ENV" -q --kernel 5.10 -- true > "$scratch/k0.out" 2>&1
    rc=$?
    check "--kernel 5.10 (not a kernel rdma-env knows) is refused (125, got $rc)" [ "$rc" = 125 ]
    timeout 30 "$RDMA_ENV" -q -m device --kernel 7 -- true > "$scratch/k1.out" 2>&1
    rc=$?
    check "-m device --kernel 7 is refused as bad usage (125, got $rc)" [ "$rc" = 125 ]

    for k in 6.12 7; do
        kv=$("$RDMA_ENV" -q --resolve-kernel "$k" 2> "$scratch/k-$k.err")
        check "--resolve-kernel $k names a $k kernel (${kv:-none}), fetching it if needed" \
            grep -Eq "^${k//./\\.}\.[0-9]" <<<"$kv"
        # shellcheck disable=SC2016  # expanded inside
        timeout $LIMIT "$RDMA_ENV" -q --kernel "$k" -- sh -c '
            uname -r; modinfo -n rdma_rxe; ibv_devinfo -d "$RDMA_DEV"' > "$scratch/k-$k.out" 2>&1
        rc=$?
        check "--kernel $k: the VM boots and COMMAND exits 0 (got $rc)" [ "$rc" = 0 ]
        check "... uname -r in the VM is $kv" grep -qxF -- "$kv" "$scratch/k-$k.out"
        check "... rdma_rxe comes from /lib/modules/$kv" grep -q "^/lib/modules/$kv/.*rdma_rxe" "$scratch/k-$k.out"
        check "... rxe port ACTIVE" grep -q PORT_ACTIVE "$scratch/k-$k.out"
        if ! grep -qxF -- "$kv" <("$RDMA_ENV" -q --list-kernels 2>/dev/null | awk '$1 == "installed" { print $2 }'); then
            check "... and the host's /lib/modules and /boot have no $kv (it stays in the cache)" \
                test ! -e "/lib/modules/$kv" -a ! -e "/boot/vmlinuz-$kv"
        fi
    done

    # The watchdog: the guest stops its heartbeat loop and prints nothing more: rdma-env must give up
    # after RDMA_ENV_WATCHDOG seconds (20 here), long before -t, naming the kernel and the test.
    mkdir -p "$scratch/tmp-w" "$scratch/tmp-w2"
    start=$SECONDS
    # shellcheck disable=SC2016  # expanded inside
    TMPDIR=$scratch/tmp-w RDMA_ENV_WATCHDOG=20 timeout $LIMIT "$RDMA_ENV" --kernel 7 -t 250 -- sh -c '
        echo "== tests/e2e/00-fake.sh"; echo "ok - first_test (0s)"; echo "-- stuck_test"
        kill -STOP "$(cat /run/rdma-env/heartbeat.pid)"; sleep 1000' > "$scratch/w.out" 2> "$scratch/w.err"
    rc=$? took=$((SECONDS - start))
    kv=$("$RDMA_ENV" -q --resolve-kernel 7 2>/dev/null)
    check "watchdog: a guest with no heartbeat and no output is stopped: exit 124 (got $rc)" [ "$rc" = 124 ]
    check "... after about 20 s of silence, not -t 250 (took $took s, boot included)" [ "$took" -le 120 ]
    check "... the message names the watchdog, the kernel ($kv) and the test" \
        grep -q "watchdog: the VM on kernel $kv .*00-fake.sh, test stuck_test was running" "$scratch/w.err"
    check "... and leaves no qemu process behind" no_qemu_left "$scratch/tmp-w"
    # A guest that is alive (heartbeat) but silent for longer than the watchdog's limit is left alone.
    TMPDIR=$scratch/tmp-w RDMA_ENV_WATCHDOG=20 timeout $LIMIT "$RDMA_ENV" -q -t 250 -- \
        sh -c 'sleep 45; echo quiet-but-alive' > "$scratch/w1.out" 2>&1
    rc=$?
    check "watchdog: a silent guest with a heartbeat runs on (45 s, limit 20 s): exit 0 (got $rc)" [ "$rc" = 0 ]
    check "... and finishes its command" grep -qx quiet-but-alive "$scratch/w1.out"
    # Two nodes: node 2 stalls; both VMs go, the message names node 2 and what node 1 was doing.
    start=$SECONDS
    # shellcheck disable=SC2016  # expanded inside
    TMPDIR=$scratch/tmp-w2 RDMA_ENV_WATCHDOG=20 timeout $LIMIT "$RDMA_ENV" -n 2 -t 250 -- sh -c '
        echo "== tests/e2e2/00-fake.sh"; echo "-- pair_test"
        [ "$RDMA_NODE" = 2 ] && kill -STOP "$(cat /run/rdma-env/heartbeat.pid)"; sleep 1000' \
        > "$scratch/w2.out" 2> "$scratch/w2.err"
    rc=$? took=$((SECONDS - start))
    check "watchdog, -n 2: node 2 stalls: exit 124 (got $rc) in $took s" test "$rc" = 124 -a "$took" -le 150
    check "... the message names node2 and its test" \
        grep -q "node2: watchdog: the VM on kernel .*test pair_test was running" "$scratch/w2.err"
    check "... and says what node1 was doing" grep -q "node1 (stopped with it): .*pair_test" "$scratch/w2.err"
    check "... and leaves no qemu process behind" no_qemu_left "$scratch/tmp-w2"

    # A guest kernel that crashes (sysrq's crash: an oops, then "Kernel panic"): -n 2 exits 123,
    # naming the node, the kernel, the oops and the test that was running (not "could not be set up").
    mkdir -p "$scratch/tmp-p"
    # shellcheck disable=SC2016  # expanded inside
    TMPDIR=$scratch/tmp-p timeout $LIMIT "$RDMA_ENV" -n 2 --kernel 6.1 -t 250 -- sh -c '
        echo "== tests/e2e2/00-fake.sh"; echo "-- crash_test"
        if [ "$RDMA_NODE" = 2 ]; then sleep 2; echo c > /proc/sysrq-trigger; fi; sleep 60' \
        > "$scratch/p.out" 2> "$scratch/p.err"
    rc=$?
    kv=$("$RDMA_ENV" -q --resolve-kernel 6.1 2>/dev/null)
    check "a guest kernel crash, -n 2: exit 123 (got $rc)" [ "$rc" = 123 ]
    check "... the message names node2, the kernel ($kv), the crash and the test" \
        grep -q "node2: the guest kernel $kv crashed: .*Kernel panic - not syncing.*test crash_test was running" "$scratch/p.err"
    check "... and leaves no qemu process behind" no_qemu_left "$scratch/tmp-p"
    check "... and is not booted again (COMMAND had started)" bash -c "! grep -q 'booting once more' '$scratch/p.err'"

    # A kernel that crashes while booting, before COMMAND could start (an rdinit and init that do
    # not exist: "Kernel panic - not syncing"): rdma-env says so and boots once more; when that boot
    # crashes too, it exits 123.
    mkdir -p "$scratch/tmp-bc"
    TMPDIR=$scratch/tmp-bc RDMA_ENV_APPEND="rdinit=/no-such-init init=/no-such-init" \
        timeout $LIMIT "$RDMA_ENV" --kernel 6.1 -t 120 -- true > "$scratch/bc.out" 2> "$scratch/bc.err"
    rc=$?
    check "a crash while booting: exit 123 after one more boot (got $rc)" [ "$rc" = 123 ]
    check "... it said it boots once more, once" \
        [ "$(grep -c 'crashed while booting, before COMMAND started.*booting once more' "$scratch/bc.err")" = 1 ]
    check "... and leaves no qemu process behind" no_qemu_left "$scratch/tmp-bc"
    # The same with two VMs: neither started COMMAND.
    mkdir -p "$scratch/tmp-bc2"
    TMPDIR=$scratch/tmp-bc2 RDMA_ENV_APPEND="rdinit=/no-such-init init=/no-such-init" \
        timeout $LIMIT "$RDMA_ENV" -n 2 --kernel 6.1 -t 120 -- true > "$scratch/bc2.out" 2> "$scratch/bc2.err"
    rc=$?
    check "a crash while booting, -n 2: exit 123 after one more boot (got $rc)" [ "$rc" = 123 ]
    check "... it said it boots once more, once" \
        [ "$(grep -c 'crashed while booting, before COMMAND started.*booting once more' "$scratch/bc2.err")" = 1 ]
    check "... and leaves no qemu process behind" no_qemu_left "$scratch/tmp-bc2"
}

summary() {
    if [ "$failed" -gt 0 ]; then
        for f in "$scratch"/*.out "$scratch"/*.err; do echo "---- ${f##*/}:"; tail -n 40 "$f"; done >&2
    fi
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
}

if [ "${1:-}" = kernels ]; then
    kernel_checks
    summary
    exit
fi

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

# ---------------------------------------------------------------------------------------------------
# Two nodes (-n 2): two VMs joined by a link, COMMAND in both.

timeout 30 "$RDMA_ENV" -q -n 2 -m device -- true > "$scratch/u.out" 2>&1
rc=$?
check "-n 2 -m device is refused as bad usage (125, got $rc)" [ "$rc" = 125 ]

ROOT=$(cd "$TOOLS/.." && pwd -P)
BIN01=$ROOT/01_basic-client-server
# Only 01 is needed here (other examples may be half-written while this runs).
check "make -s 01_basic-client-server builds the 01 programs" make -s -C "$ROOT" 01_basic-client-server

# One run does most of the checks: each node records what it sees and the result of each step in files
# in the shared cwd; node 1 serves, node 2 connects, and they take turns through RDMA_SYNC_DIR.
pcwd="$scratch/pair, cwd"
mkdir -p "$pcwd" "$scratch/tmp-p" "$scratch/tmp-c1" "$scratch/tmp-c2" "$scratch/tmp-pt" "$scratch/tmp-ps"
cat > "$pcwd/pair.sh" <<'PAIR'
set -u
n=$RDMA_NODE S=$RDMA_SYNC_DIR BIN=$1
echo "hello from node $n"
env | grep '^RDMA_' | sort > "env-node$n.txt"
rdma link show "$RDMA_DEV/1" > "link-node$n.txt" 2>&1
command -v tc > "tc-node$n.txt"
wait_file() { # FILE SECONDS
    for _ in $(seq $(($2 * 10))); do [ -s "$1" ] && return 0; sleep 0.1; done
    echo "node $n: gave up waiting for $1"; return 1
}
publish() { echo "$2" > "$S/$1.tmp" && mv "$S/$1.tmp" "$S/$1"; }   # NAME VALUE

# 1. rping, 5 round trips. The server may exit non-zero after a good run: judge by the client.
if [ "$n" = 1 ]; then
    timeout 60 rping -s -v -a "$RDMA_IP" -C 5 > rping-server.txt 2>&1 &
    for _ in $(seq 100); do rdma resource show cm_id | grep -q 'LISTEN.*comm rping' && break; sleep 0.2; done
    publish rping-up 1
    wait $!
else
    wait_file "$S/rping-up" 60 && timeout 60 rping -c -v -a "$RDMA_PEER_IP" -C 5 > rping-client.txt 2>&1
    echo "$?" > rping-client.rc
fi
# 2. and 3. 01's server and client: -n 100, then -n 200 with 1% loss on node 2's eth0. The server
# prints its port (-p 0 picks a free one); node 1 passes it on.
for count in 100 200; do
    if [ "$n" = 1 ]; then
        timeout 90 "$BIN/rdma-server" -p 0 --once > "srv-$count.txt" 2>&1 &
        port=
        for _ in $(seq 300); do
            port=$(sed -n 's/^listening on .* port \([0-9][0-9]*\)$/\1/p' "srv-$count.txt")
            [ -n "$port" ] && break
            kill -0 $! 2>/dev/null || break         # the server failed
            sleep 0.1
        done
        publish "port-$count" "${port:-none}"
        wait $!; echo "$?" > "srv-$count.rc"
    else
        wait_file "$S/port-$count" 60 && port=$(cat "$S/port-$count")
        if [ "$count" = 200 ]; then
            tc qdisc add dev eth0 root netem loss 1%; echo "$?" > netem.rc
        fi
        timeout 90 "$BIN/rdma-client" -n "$count" "$RDMA_PEER_IP" "${port:-none}" > "cli-$count.txt" 2>&1
        echo "$?" > "cli-$count.rc"
        if [ "$count" = 200 ]; then tc -s qdisc show dev eth0 > netem.txt; tc qdisc del dev eth0 root; fi
    fi
done
# 4. node 2 takes its link down and up again; its rxe port must come back ACTIVE.
if [ "$n" = 2 ]; then
    ip link set eth0 down && rdma link show rxe0/1 > linkdown.txt && ip link set eth0 up
    for _ in $(seq 100); do rdma link show rxe0/1 | grep -q 'state ACTIVE' && break; sleep 0.1; done
    rdma link show rxe0/1 > linkup.txt
fi
echo "node $n done"
[ "$n" = 2 ] && exit 5
exit 0
PAIR
start=$SECONDS
(cd "$pcwd" && TMPDIR=$scratch/tmp-p timeout $LIMIT "$RDMA_ENV" -n 2 -- bash pair.sh "$BIN01" \
     > "$scratch/p.out" 2> "$scratch/p.err")
rc=$? took=$((SECONDS - start))
echo "# two-node run with rping, 01 and netem (boot included): $took s"
check "-n 2: node 1 exits 0, node 2 exits 5: rdma-env exits 5 (got $rc)" [ "$rc" = 5 ]
node_env_ok() { # N IP PEER_IP
    local f="$pcwd/env-node$1.txt"
    grep -qx "RDMA_NODE=$1" "$f" && grep -qx "RDMA_NODES=2" "$f" && grep -qx "RDMA_IP=$2" "$f" &&
        grep -qx "RDMA_PEER_IP=$3" "$f" && grep -qx "RDMA_DEV=rxe0" "$f" &&
        grep -qx "RDMA_ENV_MODE=vm2" "$f" && grep -q '^RDMA_SYNC_DIR=/' "$f"
}
check "node 1 sees RDMA_NODE=1 RDMA_IP=10.77.0.1 RDMA_PEER_IP=10.77.0.2, RDMA_SYNC_DIR, ..." \
    node_env_ok 1 10.77.0.1 10.77.0.2
check "node 2 sees RDMA_NODE=2 RDMA_IP=10.77.0.2 RDMA_PEER_IP=10.77.0.1, RDMA_SYNC_DIR, ..." \
    node_env_ok 2 10.77.0.2 10.77.0.1
both() { # FILE_PREFIX PATTERN: PATTERN is in the file of each node
    grep -q "$2" "$pcwd/$1-node1.txt" && grep -q "$2" "$pcwd/$1-node2.txt"
}
check "rxe0/1 is ACTIVE on both nodes" both link 'state ACTIVE'
check "tc exists in both guests" both tc 'tc$'
prefixed() { # each node's lines reach stdout whole, prefixed, and nothing else does
    local o=$scratch/p.out
    grep -qx '\[node1\] hello from node 1' "$o" && grep -qx '\[node2\] hello from node 2' "$o" &&
        grep -qx '\[node1\] node 1 done' "$o" && grep -qx '\[node2\] node 2 done' "$o" &&
        ! grep -qv '^\[node[12]\] ' "$o"
}
check "both outputs reach stdout, every line prefixed [node1] / [node2]" prefixed
rc_is() { [ "$(cat "$pcwd/$1" 2>/dev/null)" = "$2" ]; }
rping_ok() { rc_is rping-client.rc 0 && [ "$(grep -c '^ping data: rdma-ping-' "$pcwd/rping-client.txt")" = 5 ]; }
check "rping across the link: 5 round trips, client exits 0" rping_ok
check "01 across the link: rdma-client -n 100 exits 0" rc_is cli-100.rc 0
check "... and rdma-server --once exits 0" rc_is srv-100.rc 0
check "tc qdisc add dev eth0 root netem loss 1% works in node 2" rc_is netem.rc 0
check "01 with 1% loss on node 2's eth0: rdma-client -n 200 exits 0" rc_is cli-200.rc 0
check "... all 200 replies verified" grep -q 'verified 200 of 200' "$pcwd/cli-200.txt"
echo "# netem on node 2: $(grep -o 'Sent .*(dropped [0-9]*' "$pcwd/netem.txt" 2>/dev/null)); 01 latency without, with loss:"
grep -h 'round-trip' "$pcwd/cli-100.txt" "$pcwd/cli-200.txt" 2>/dev/null | sed 's/^/#   /'
link_bounce_ok() { grep -q 'state DOWN' "$pcwd/linkdown.txt" && grep -q 'state ACTIVE' "$pcwd/linkup.txt"; }
check "ip link set eth0 down/up in node 2: rxe0/1 goes DOWN, then ACTIVE again" link_bounce_ok
check "... no qemu process left behind" no_qemu_left "$scratch/tmp-p"

# Two -n 2 runs at the same time: their links must not collide. They also check the other exit status
# rule, and that a node that ends first waits for the other (node 2 of the second run writes a file
# 5 s after node 1 has ended).
start=$SECONDS
# shellcheck disable=SC2016  # expanded inside
(cd "$pcwd" && TMPDIR=$scratch/tmp-c1 timeout $LIMIT "$RDMA_ENV" -q -n 2 -- \
     sh -c '[ "$RDMA_NODE" = 1 ] && exit 3; exit 0' > "$scratch/c1.out" 2>&1) &
c1=$!
# shellcheck disable=SC2016
(cd "$pcwd" && TMPDIR=$scratch/tmp-c2 timeout $LIMIT "$RDMA_ENV" -q -n 2 -- \
     sh -c '[ "$RDMA_NODE" = 2 ] && sleep 5 && echo late > late-node2.txt; exit 0' > "$scratch/c2.out" 2>&1) &
c2=$!
wait "$c1"; rc1=$?
wait "$c2"; rc2=$?
echo "# two -n 2 runs at the same time: $((SECONDS - start)) s"
check "-n 2: node 1 exits 3, node 2 exits 0: rdma-env exits 3 (got $rc1)" [ "$rc1" = 3 ]
check "-n 2, another run at the same time: both nodes exit 0: rdma-env exits 0 (got $rc2)" [ "$rc2" = 0 ]
check "... its node 2, which ended 5 s after node 1, was not cut short" grep -qx late "$pcwd/late-node2.txt"
check "... no qemu process of either run left behind" no_qemu_left "$scratch/tmp-c"

# -n 2 timeout: 124, both VMs gone.
start=$SECONDS
TMPDIR=$scratch/tmp-pt timeout $LIMIT "$RDMA_ENV" -q -n 2 -t 25 -- sleep 1000 > "$scratch/pt.out" 2>&1
rc=$? took=$((SECONDS - start))
check "-n 2 -t 25 -- sleep 1000 exits 124 (got $rc)" [ "$rc" = 124 ]
check "... within 45 s (took $took s)" [ "$took" -le 45 ]
check "... and leaves no qemu process behind" no_qemu_left "$scratch/tmp-pt"

# SIGTERM while both VMs run: rdma-env exits 143 and takes both with it.
TMPDIR=$scratch/tmp-ps "$RDMA_ENV" -q -n 2 -- sleep 1000 > "$scratch/ps.out" 2>&1 &
pid=$!
for _ in $(seq 600); do                     # up to 60 s for both qemus to start
    [ "$(pgrep -fc -- "qemu-system.*$scratch/tmp-ps")" -ge 2 ] && break
    sleep 0.1
done
sleep 2
kill -TERM "$pid"
for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done   # up to 30 s
kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
wait "$pid"
rc=$?
check "-n 2: SIGTERM makes rdma-env exit 143 (got $rc)" [ "$rc" = 143 ]
check "... and leaves no qemu process behind" no_qemu_left "$scratch/tmp-ps"

kernel_checks
summary
