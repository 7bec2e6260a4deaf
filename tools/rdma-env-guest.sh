#!/bin/bash
# tools/rdma-env-guest.sh: second stage of the Soft-RoCE VM booted by tools/rdma-env. Not for direct use.
#
# The initramfs /init has already mounted the root overlay (host / over 9p, read-only, + tmpfs), a tmpfs
# on /run, this VM's private work dir at /run/rdma-env (9p, read-write, shared with the host) and the
# caller's working directory at its own path (9p, read-write), then switch_root'ed to
# `bash /run/rdma-env/guest.sh` (a copy of this file) as PID 1.
#
# Protocol with the host, all files in /run/rdma-env:
#   in:  job.sh      sourced: VM_ROLE VM_ADDR VM_NETDEV VM_RDMA_DEV, VM_KERNEL (the version booted) and
#                    VM_MODULES (its modules directory on the host), JOB_CWD JOB_ARGV JOB_ENV (bash arrays);
#                    for one node of a pair (rdma-env -n 2) also VM_NODES=2 VM_NODE VM_PEER VM_SYNC
#   out: setup.log   output of the setup steps below (shown by the host only if something fails)
#        ready       guest uptime when the RDMA port became ACTIVE (boot time, for the progress line)
#        output.log  COMMAND's stdout+stderr; the host streams it live (tail -f)
#        rc          COMMAND's exit status; its absence tells the host the run failed
#        setup-failed  one-line reason, if the environment could not be set up
#        heartbeat   "N UPTIME", rewritten every VM_HEARTBEAT seconds by a background loop (pid in
#                    heartbeat.pid): the host's watchdog stops a guest that neither writes it nor
#                    prints anything for too long (a hung or livelocked kernel)
#        command-started  (pair) COMMAND has started: both nodes passed the barrier
# A node of a pair also mounts the run's sync share (9p tag rdmasync) at $VM_SYNC, for COMMAND
# (RDMA_SYNC_DIR) and for the start barrier: each node pings its peer, then writes
# $VM_SYNC/.rdma-env-ready-nodeN and waits for the peer's.
# PID 1 must never exit (the kernel would panic), so every path ends in power_off.
set -u
W=/run/rdma-env
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin   # PID 1 inherits no PATH

# Progress lines in setup.log carry the guest uptime, to see where boot time goes.
log() { local up; read -r up _ < /proc/uptime; echo "[$up] rdma-env-guest: $*"; }

power_off() {
    sync
    echo o > /proc/sysrq-trigger    # immediate power off; qemu runs with -no-reboot and exits
    sleep 60                        # never return from PID 1 while the power-off is in progress
}

# Report an environment failure to the host (which exits 125 and shows setup.log), then power off.
setup_failed() {
    log "$*"
    echo "$*" > "$W/setup-failed"
    power_off
}

exec >>"$W/setup.log" 2>&1 </dev/null
# shellcheck source=/dev/null
. "$W/job.sh" || setup_failed "cannot read job.sh"

# Pseudo filesystems that ordinary programs expect (/proc, /sys, /dev were moved here by /init).
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs shm /dev/shm
ln -sfn /proc/self/fd /dev/fd
ln -sfn /proc/self/fd/0 /dev/stdin; ln -sfn /proc/self/fd/1 /dev/stdout; ln -sfn /proc/self/fd/2 /dev/stderr
hostname "rdma-env-$VM_ROLE"
log "stage 2 started"

# The heartbeat: written whole (mv), so the host never reads half a line.
heartbeat() {
    local n=0 up
    while :; do
        n=$((n + 1))
        read -r up _ < /proc/uptime
        echo "$n $up" > "$W/heartbeat.tmp" && mv -f "$W/heartbeat.tmp" "$W/heartbeat"
        sleep "${VM_HEARTBEAT:-10}"
    done
}
heartbeat </dev/null >/dev/null 2>&1 &
echo $! > "$W/heartbeat.pid"

# Modules come from the host through the overlay: for the host's installed kernel that is its
# /lib/modules; for a kernel rdma-env fetched into its cache, that cache directory (read-only through
# the host-root share) is bind-mounted onto /lib/modules/VERSION first, where modprobe looks.
# sch_netem is optional for one node (loss injection in the two-node tests).
[ "$(uname -r)" = "$VM_KERNEL" ] || setup_failed "booted kernel $(uname -r), expected $VM_KERNEL"
if [ "$VM_MODULES" != "/lib/modules/$VM_KERNEL" ]; then
    { mkdir -p "/lib/modules/$VM_KERNEL" && mount --bind "$VM_MODULES" "/lib/modules/$VM_KERNEL"; } \
        || setup_failed "cannot bind-mount $VM_MODULES onto /lib/modules/$VM_KERNEL"
fi
for m in virtio_net rdma_rxe rdma_ucm ib_uverbs; do
    modprobe "$m" || setup_failed "modprobe $m failed"
done
PAIR=0
[ "${VM_NODES:-1}" = 2 ] && PAIR=1
if [ $PAIR = 1 ]; then
    # Two-node runs promise fault injection: netem and tc must work.
    modprobe sch_netem || setup_failed "modprobe sch_netem failed (netem loss injection)"
    command -v tc >/dev/null || setup_failed "tc not found (package iproute2)"
    mkdir -p "$VM_SYNC"
    mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 rdmasync "$VM_SYNC" \
        || setup_failed "cannot mount the sync dir (9p tag rdmasync)"
else
    modprobe sch_netem || echo "rdma-env-guest: sch_netem not available (only needed for loss injection)"
fi

log "modules loaded"
ip link set lo up
ip link set "$VM_NETDEV" up || setup_failed "no network device $VM_NETDEV"
ip addr add "$VM_ADDR" dev "$VM_NETDEV" || setup_failed "cannot add $VM_ADDR to $VM_NETDEV"
rdma link add "$VM_RDMA_DEV" type rxe netdev "$VM_NETDEV" || setup_failed "rdma link add $VM_RDMA_DEV failed"

# The rxe port follows the netdev's carrier; it is normally ACTIVE at once. Bounded wait: 20 s.
active=0
for _ in $(seq 200); do
    if rdma link show "$VM_RDMA_DEV/1" 2>/dev/null | grep -q 'state ACTIVE'; then active=1; break; fi
    sleep 0.1
done
rdma link show
[ $active = 1 ] || setup_failed "port $VM_RDMA_DEV/1 did not become ACTIVE within 20 s"
log "Soft-RoCE port $VM_RDMA_DEV/1 active"
read -r uptime _ < /proc/uptime
echo "$uptime" > "$W/ready"

# Pair: COMMAND starts only when the peer answers ping and has reached this point too. Both bounded
# (120 s in all); the host stops this VM earlier if the peer's setup fails.
pair_barrier() {
    local ping=(ping) end=$((SECONDS + 120))
    command -v ping >/dev/null || ping=(busybox ping)
    until "${ping[@]}" -c 1 -W 1 "$VM_PEER" >/dev/null 2>&1; do
        [ $SECONDS -lt $end ] || setup_failed "the peer $VM_PEER did not answer ping within 120 s (link: $(ip -o link show "$VM_NETDEV" | grep -o 'state [A-Z]*'))"
        sleep 0.2
    done
    log "peer $VM_PEER answers ping"
    echo "$uptime" > "$VM_SYNC/.rdma-env-ready-node$VM_NODE"
    until [ -e "$VM_SYNC/.rdma-env-ready-node$((3 - VM_NODE))" ]; do
        [ $SECONDS -lt $end ] || setup_failed "the peer node$((3 - VM_NODE)) did not get ready within 120 s"
        sleep 0.1
    done
    log "peer node$((3 - VM_NODE)) is ready"
}

ip=${VM_ADDR%/*}
mode_env=(RDMA_ENV_MODE=vm)
if [ $PAIR = 1 ]; then
    pair_barrier
    mode_env=(RDMA_ENV_MODE=vm2 RDMA_NODES=2 RDMA_NODE="$VM_NODE" RDMA_PEER_IP="$VM_PEER" RDMA_SYNC_DIR="$VM_SYNC")
    echo "$VM_NODE" > "$W/command-started"
fi

# Run COMMAND with a clean environment: only what the host chose to pass, plus the RDMA variables.
# stdin is /dev/null: there is no terminal in the VM.
(
    cd "$JOB_CWD" || exit 125
    exec env -i -- HOME=/root USER=root LOGNAME=root SHELL=/bin/bash "${JOB_ENV[@]}" \
        RDMA_IP="$ip" RDMA_DEV="$VM_RDMA_DEV" "${mode_env[@]}" "${JOB_ARGV[@]}"
) >>"$W/output.log" 2>&1 </dev/null
rc=$?
# Pair: the host prefixes each output line with the node's name; a last line without its newline
# would run into the other node's next line.
if [ $PAIR = 1 ] && [ -s "$W/output.log" ] && [ -n "$(tail -c 1 "$W/output.log")" ]; then
    echo >> "$W/output.log"
fi
log "command exited with status $rc"
sync    # COMMAND's files in the shared working directory must reach the host before power-off
echo "$rc" > "$W/rc.tmp" && mv "$W/rc.tmp" "$W/rc"
power_off
