#!/usr/bin/env bash
# tests/repro/rxe-ack-panic.sh: perftest traffic only (no program of this
# collection runs) between the two nodes of tools/rdma-env, in a loop, to
# show the Soft-RoCE crash of Linux 6.12 in rxe's ACK path. Run it as
#   tools/rdma-env -n 2 --kernel 6.12 -t 780 -- tests/repro/rxe-ack-panic.sh
# (RDMA_ENV_PASS=REPRO_SECS to change the 600 s it runs). It ends with
# "no panic" on node 2 when none came; a crash stops the VMs, and the
# console log rdma-env keeps has the Oops. Seen on 6.12.95 (2026-12-02,
# first boot): node 1 panicked after about 30 s of traffic, "double fault"
# in kmem_cache_alloc_node from rxe_receiver -> send_common_ack ->
# prepare_ack_packet -> rxe_init_packet -> __alloc_skb (docs/kernels.md);
# a second boot of 150 s did not. Not part of make test or make repro yet:
# two boots on one kernel give no rate.
set -u
END=$((SECONDS + ${REPRO_SECS:-600}))
S=$RDMA_SYNC_DIR
put() { echo "$2" >"$S/$1.tmp" && mv "$S/$1.tmp" "$S/$1"; }
waitf() { local i; for ((i = 0; i < $2 * 10; i++)); do [ -f "$S/$1" ] && return 0; sleep 0.1; done; return 1; }
i=0
if [ "$RDMA_NODE" = 1 ]; then
	while :; do
		i=$((i + 1))
		[ -f "$S/stop" ] && break
		for t in "ib_send_lat -s 64 -n 2000" "ib_write_bw -s 65536 -n 2000 -t 16" "ib_read_bw -s 65536 -n 1000 -t 16" "ib_send_bw -s 4096 -n 5000"; do
			read -ra cmd <<<"$t"
			"${cmd[@]}" -d "$RDMA_DEV" -F -p 18515 >/dev/null 2>&1 &
			P=$!
			sleep 0.5
			put "ready.$i.${t%% *}" go
			waitf "done.$i.${t%% *}" 120
			kill $P 2>/dev/null; wait $P 2>/dev/null
		done
	done
	echo "node1: $i rounds"
else
	while [ $SECONDS -lt $END ]; do
		i=$((i + 1))
		for t in "ib_send_lat -s 64 -n 2000" "ib_write_bw -s 65536 -n 2000 -t 16" "ib_read_bw -s 65536 -n 1000 -t 16" "ib_send_bw -s 4096 -n 5000"; do
			waitf "ready.$i.${t%% *}" 60 || echo "no ready $i ${t%% *}"
			read -ra cmd <<<"$t"
			timeout 60 "${cmd[@]}" -d "$RDMA_DEV" -F -p 18515 "$RDMA_PEER_IP" >/dev/null 2>&1 || echo "round $i ${t%% *}: exit $?"
			put "done.$i.${t%% *}" ok
		done
	done
	put stop x
	echo "node2: $i rounds, no panic"
fi
