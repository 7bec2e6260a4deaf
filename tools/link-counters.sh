# shellcheck shell=bash
# tools/link-counters.sh: does the RDMA link lose packets? Sourced by tools/smoke (the counters
# before and after each check) and tools/rdma-check (the counters since they started).
#
# A reliable connection hides loss: the NIC resends, and the data arrives, only later. What
# shows it are the port's error counters, in /sys/class/infiniband/DEV/ports/N/hw_counters/
# (or `rdma statistic show link DEV/N`). The names differ per driver; these are the ones whose
# meaning we checked in the kernel source:
#
#   Soft-RoCE (drivers/infiniband/sw/rxe/rxe_hw_counters.c; the same names in Linux 6.1, 6.12
#   and 7.3; there is no "send_retry"):
#     completer_retry_err  a send queue of this port went back and resent what was not
#                          acknowledged: after an ACK timeout or a sequence NAK (rxe_comp.c)
#     out_of_seq_request   a receiver here saw a gap in the packet numbers and NAKed it, once
#                          per gap: the peer resends (rxe_resp.c, check_psn)
#     duplicate_request    packets resent by the peer that had arrived before
#     rcvd_seq_err         sequence NAKs received (the peer saw a gap in what we sent)
#     retry_exceeded_err   a request given up after --retry-count resends
#     rcvd_rnr_err, send_rnr_err  receiver-not-ready NAKs: no receive posted (not loss)
#   mlx5 (drivers/infiniband/hw/mlx5/counters.c): local_ack_timeout_err, packet_seq_err and
#     implied_nak_seq_err (this port resent), out_of_sequence (a gap seen here),
#     duplicate_request, rnr_nak_retry_err; and where present the ECN counters np_cnp_sent,
#     rp_cnp_handled, np_ecn_marked_roce_packets.
#
# "Retransmissions" below = the resends this port started plus the gaps it NAKed: each lost
# packet counts at the end that noticed it. On one host both ends share the port, so a NAKed
# gap counts at both. The counters are per port: other traffic on the port counts too.

LC_SYSFS=${LC_SYSFS:-/sys}
# Role of each counter: this port resent (RETRY), a gap seen here (GAP), other signs of loss
# (LOSS), shown but not loss (INFO: RNR is flow control, ECN is congestion marking).
LC_RETRY=(completer_retry_err local_ack_timeout_err packet_seq_err implied_nak_seq_err)
LC_GAP=(out_of_seq_request out_of_sequence)
LC_LOSS=(duplicate_request rcvd_seq_err retry_exceeded_err)
LC_INFO=(rcvd_rnr_err send_rnr_err retry_rnr_exceeded_err rnr_nak_retry_err np_cnp_sent
    rp_cnp_handled np_ecn_marked_roce_packets)
# What each driver has, to name a missing counter as unavailable.
LC_WANT_RXE=(completer_retry_err out_of_seq_request duplicate_request rcvd_seq_err
    retry_exceeded_err rcvd_rnr_err send_rnr_err)
LC_WANT_MLX5=(local_ack_timeout_err packet_seq_err implied_nak_seq_err out_of_sequence
    duplicate_request rnr_nak_retry_err)

# lc_port_for ADDR: "DEV/PORT NETDEV" of the RDMA port that carries traffic to (or at) ADDR, a
# local or remote IP address or a name. Status 1 if none is found.
lc_port_for() {
    local a=${1#[} nd='' f v dp
    a=${a%]}
    if [[ ! $a =~ ^[0-9.]+$ && $a != *:* ]]; then
        a=$(getent hosts "$a" 2>/dev/null | awk '{ print $1; exit }')
        [ -n "$a" ] || return 1
    fi
    # A local address: its own netdev (the route to it would say lo).
    nd=$(ip -o addr show 2>/dev/null | awk -v a="$a" '{ split($4, p, "/"); if (p[1] == a) { print $2; exit } }')
    [ -n "$nd" ] || nd=$(ip -o route get "$a" 2>/dev/null |
        awk '{ for (i = 1; i < NF; i++) if ($i == "dev") { print $(i + 1); exit } }')
    [ -n "$nd" ] || return 1
    for f in "$LC_SYSFS"/class/infiniband/*/ports/*/gid_attrs/ndevs/*; do
        [ -e "$f" ] || continue
        { IFS= read -r v || [ -n "$v" ]; } 2>/dev/null <"$f" || continue
        [ "$v" = "$nd" ] || continue
        dp=${f#"$LC_SYSFS"/class/infiniband/}
        dp=${dp%%/gid_attrs/*}
        echo "${dp%%/*}/${dp##*/} $nd"
        return 0
    done
    v=$(rdma link show 2>/dev/null | awk -v nd="$nd" '{ for (i = 3; i < NF; i++) if ($i == "netdev" && $(i + 1) == nd) { print $2; exit } }')
    [ -n "$v" ] && echo "$v $nd"
}

# lc_snapshot VAR DEV/PORT: every numeric counter of the port into VAR, as "name=value ..."
# (empty if it has none); LC_SRC says where they came from ("sysfs", "rdma statistic" or "").
lc_snapshot() {
    local _var=$1 d=$LC_SYSFS/class/infiniband/${2%/*}/ports/${2#*/}/hw_counters f v lc_found=() w
    LC_SRC=''
    if [ -d "$d" ]; then
        for f in "$d"/*; do
            [ -f "$f" ] && [ "${f##*/}" != lifespan ] || continue # lifespan: a setting, in ms
            { IFS= read -r v || [ -n "$v" ]; } 2>/dev/null <"$f" || continue
            [[ $v =~ ^[0-9]+$ ]] && lc_found+=("${f##*/}=$v")
        done
        [ ${#lc_found[@]} -gt 0 ] && LC_SRC=sysfs
    fi
    if [ ${#lc_found[@]} = 0 ] && command -v rdma >/dev/null; then
        # "link rxe0/1 sent_pkts 12 rcvd_pkts 12 ..."
        read -r -a w < <(rdma statistic show link "$2" 2>/dev/null | head -n 1)
        for ((f = 2; f + 1 < ${#w[@]}; f += 2)); do
            [[ ${w[f + 1]} =~ ^[0-9]+$ ]] && lc_found+=("${w[f]}=${w[f + 1]}")
        done
        [ ${#lc_found[@]} -gt 0 ] && LC_SRC="rdma statistic"
    fi
    printf -v "$_var" '%s' "${lc_found[*]}"
}

# lc_driver_wants DEV: the counter names DEV's driver has into the array LC_WANTS (empty: a
# driver we do not know). No fork here, nor anywhere in lc_judge on a lossless link: smoke
# judges six times per run, and a fork costs tens of milliseconds in an emulated VM.
lc_driver_wants() {
    local d=$LC_SYSFS/class/infiniband/$1 m=''
    LC_WANTS=()
    # Hardware only: Soft-RoCE has no driver link (and so no readlink to fork).
    [ -L "$d/device/driver/module" ] && m=$(readlink "$d/device/driver/module" 2>/dev/null) && m=${m##*/}
    case $m in
        mlx5_*) LC_WANTS=("${LC_WANT_MLX5[@]}") ;;
        '') [ -e "$d/parent" ] || [[ $1 == rxe* ]] && LC_WANTS=("${LC_WANT_RXE[@]}") ;; # Soft-RoCE
    esac
}

# lc_judge DEV/PORT BEFORE AFTER BYTES: what the counters say about the link while BYTES moved
# (BEFORE and AFTER from lc_snapshot; BYTES 0: unknown). Sets
#   LC_VERDICT  lossless, lossy or unavailable
#   LC_N        retransmissions (empty when unavailable), LC_PER_MIB (empty without BYTES)
#   LC_TEXT     one line for people
#   LC_JSON     {"port":..,"verdict":..,"retransmissions":..,"mib":..,"per_mib":..,
#                "counters":{name: increase},"unavailable":[names]}
lc_judge() {
    local port=$1 bytes=${4:-0} kv name n=0 loss=0 dups=0 mib per='' lc_list='' miss='' have=0
    local -A b=() a=()
    for kv in $2; do b[${kv%%=*}]=${kv#*=}; done
    for kv in $3; do a[${kv%%=*}]=${kv#*=}; done
    declare -A d=()
    for name in "${LC_RETRY[@]}" "${LC_GAP[@]}" "${LC_LOSS[@]}" "${LC_INFO[@]}"; do
        [ -n "${a[$name]:-}" ] && [ -n "${b[$name]:-}" ] || continue
        d[$name]=$((a[$name] - b[$name]))
        lc_list+="${lc_list:+,}\"$name\":${d[$name]}"
    done
    for name in "${LC_RETRY[@]}" "${LC_GAP[@]}"; do
        [ -n "${d[$name]:-}" ] && { have=1; n=$((n + d[$name])); }
    done
    for name in "${LC_LOSS[@]}"; do
        [ -n "${d[$name]:-}" ] && loss=$((loss + d[$name]))
    done
    dups=${d[duplicate_request]:-0}
    lc_driver_wants "${port%/*}"
    for name in "${LC_WANTS[@]}"; do
        [ -n "${d[$name]:-}" ] || miss+="${miss:+,}\"$name\""
    done
    # BYTES / 2^20 to one decimal: exact as a hexadecimal float, rounded by printf as awk does.
    if [[ $bytes =~ ^[0-9]{1,15}$ ]]; then
        printf -v mib '%x' "$bytes"
        LC_ALL=C printf -v mib '%.1f' "0x${mib}p-20"
    else
        mib=$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1048576 }')
    fi
    if [ "$have" = 0 ]; then
        LC_VERDICT=unavailable LC_N='' LC_PER_MIB=''
        LC_TEXT="counters unavailable: $port has no retransmission counters${LC_SRC:+ in $LC_SRC}"
    else
        if [ "$bytes" -gt 0 ] && [ "$n" = 0 ]; then
            per=0.0
        elif [ "$bytes" -gt 0 ]; then
            per=$(awk -v n="$n" -v b="$bytes" 'BEGIN { printf "%.1f", n * 1048576 / b }')
        fi
        LC_N=$n LC_PER_MIB=$per
        if [ $((n + loss)) = 0 ]; then
            LC_VERDICT=lossless
            LC_TEXT="lossless: 0 retransmissions in $mib MiB ($port)"
        else
            LC_VERDICT=lossy
            if [ "$n" = 0 ] && [ "$dups" != 0 ]; then
                # No resend started here, no gap seen here: the peer resent packets that had
                # arrived (its ACK timeout fired: an ACK lost, or late).
                LC_TEXT="lossy: the peer resent $dups packets that had arrived (duplicates); on RoCE check PFC/ECN (0 retransmissions from this port in $mib MiB, $port)"
            elif [ -n "$per" ]; then
                LC_TEXT="lossy: $per retransmissions per MiB; on RoCE check PFC/ECN ($n in $mib MiB"
            else
                LC_TEXT="lossy: $n retransmissions; on RoCE check PFC/ECN (no data moved"
            fi
            if [ "$n" != 0 ] || [ "$dups" = 0 ]; then
                [ "$dups" = 0 ] || LC_TEXT+=", $dups duplicate packets"
                LC_TEXT+=", $port)"
            fi
        fi
    fi
    local src=null
    [ -n "$LC_SRC" ] && src="\"$LC_SRC\""
    # shellcheck disable=SC2034 # LC_JSON is for the scripts that source this file
    LC_JSON="{\"port\":\"$port\",\"source\":$src,\"verdict\":\"$LC_VERDICT\",\"retransmissions\":${LC_N:-null},\"mib\":$mib,\"per_mib\":${LC_PER_MIB:-null},\"counters\":{$lc_list},\"unavailable\":[$miss]}"
}
