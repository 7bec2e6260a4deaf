#!/usr/bin/env bash
# End-to-end tests of tools/rdma-check, the environment checker: on a working Soft-RoCE device,
# on "no RDMA at all", as an ordinary user with a small `ulimit -l`, behind a firewall that drops
# RoCE, and on a copy of the device's sysfs entries broken on purpose (port down, netdev MTU too
# small for the RDMA MTU, no IP-based GID). Run through tools/rdma-env, which sets RDMA_IP.
# shellcheck source=../lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/../lib.sh"

CHK=$ROOT/tools/rdma-check
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)

# no_fail_line NAME: NAME printed no ✗ line.
no_fail_line() {
	! grep -q '^✗' "$T/$1.out" && return 0
	fail "$1 reported a failure: $(grep '^✗' "$T/$1.out" | head -n 2 | tr '\n' '|')"
}

# Changing the firewall or the network is for the throw-away VM only, never a real host.
vm_only() {
	[ "${RDMA_ENV_MODE:-}" = vm ] && return 0
	REASON="changes the firewall: runs only in the throw-away VM (mode ${RDMA_ENV_MODE:-?})"
	return 77
}

# retransmissions: the port's completer_retry_err + out_of_seq_request on sysfs.
retransmissions() {
	local hw=/sys/class/infiniband/$RDMA_DEV/ports/1/hw_counters
	echo $(($(cat "$hw/completer_retry_err") + $(cat "$hw/out_of_seq_request")))
}

t_all_fine_on_soft_roce() {
	local N0 N1
	N0=$(retransmissions)
	run chk "$CHK"
	N1=$(retransmissions)
	want_rc chk 0 || return 1
	no_fail_line chk || return 1
	want_out chk "^rdma-check: RDMA environment of .*, checked as root$" || return 1
	want_out chk "^✓ RDMA devices: $RDMA_DEV \(Soft-RoCE on [a-z0-9]+\)$" || return 1
	want_out chk "^✓ kernel modules loaded: ib_core ib_uverbs rdma_ucm rdma_rxe$" || return 1
	want_out chk "^✓ user space: .*provider librxe-rdmav[0-9]+\.so.*; ibv_devices lists $RDMA_DEV$" || return 1
	want_out chk "^✓ $RDMA_DEV port 1: ACTIVE, LinkUp, Ethernet \(RoCE\), .*active MTU (256|512|1024|2048|4096)" || return 1
	want_out chk "^✓ $RDMA_DEV port 1 GID table: .*RoCE v2 GID for an IP address: ::ffff:$RDMA_IP \(index [0-9]+\)$" || return 1
	want_out chk "^    GID\[ *[0-9]+\] ::ffff:$RDMA_IP +RoCE v2 " || return 1
	want_out chk "^✓ $RDMA_DEV port 1: active RDMA MTU [0-9]+ fits [a-z0-9]+ MTU [0-9]+" || return 1
	want_out chk "^✓ $RDMA_DEV port 1 addresses on [a-z0-9]+: (.*, )?$RDMA_IP/[0-9]+" || return 1
	want_out chk "^✓ firewall: " || return 1
	want_out chk "^✓ locked memory: no limit for root, CAP_IPC_LOCK" || return 1
	# The link counters since they started: earlier tests that killed a
	# peer made the survivor retry, so either verdict may be true; the
	# number must be one sysfs held while rdma-check ran (a QP of an
	# earlier test may still be retrying: on 7.3 the line once did not
	# give the 3 that sysfs held after the run). Where the port has byte
	# counters the line gives them per MiB, with the count in brackets.
	local got warns=0
	if grep -q "^✓ $RDMA_DEV port 1 link counters: " "$T/chk.out"; then
		want_out chk "^✓ $RDMA_DEV port 1 link counters: no retransmissions since they started \(rcvd_pkts [0-9]+, sent_pkts [0-9]+\)$" || return 1
		[ "$N0" = 0 ] || fail "no retransmissions printed, but sysfs had $N0 before the run" || return 1
	else
		got=$(sed -n -e "s/^! $RDMA_DEV port 1 link counters: lossy: \([0-9][0-9]*\) retransmissions since they started (rcvd_pkts [0-9]*, sent_pkts [0-9]*); on RoCE check PFC\/ECN — .*/\1/p" \
			-e "s/^! $RDMA_DEV port 1 link counters: lossy: [0-9.]* retransmissions per MiB since they started; on RoCE check PFC\/ECN (\([0-9][0-9]*\) in [0-9.]* MiB.*/\1/p" "$T/chk.out")
		[ -n "$got" ] && [ "$got" -ge 1 ] && [ "$got" -ge "$N0" ] && [ "$got" -le "$N1" ] ||
			fail "link counters line: '$(grep "link counters" "$T/chk.out")', sysfs $N0 before and $N1 after" || return 1
		warns=1
	fi
	want_out chk "^[0-9]+ checks, 0 failed, $warns warnings$"
}

t_ascii_help_and_bad_usage() {
	run chk "$CHK" --ascii
	want_rc chk 0 || return 1
	want_out chk "^\[ok\] $RDMA_DEV port 1: ACTIVE" || return 1
	! grep -q '✓' "$T/chk.out" || fail "--ascii still printed ✓" || return 1
	run help "$CHK" --help
	want_rc help 0 || return 1
	want_out help "^usage: tools/rdma-check \[--ascii\] \[--json\]$" || return 1
	run bogus "$CHK" --bogus
	want_rc bogus 2 || return 1
	want_err bogus "unknown option '--bogus' \(try --help\)"
}

t_no_rdma_at_all() {
	# An empty sysfs plays a machine without RDMA.
	local empty
	empty=$(mktemp -d "$T/empty.XXXXXX") || return 1
	RDMA_CHECK_SYSFS=$empty run chk "$CHK"
	rmdir "$empty"
	want_rc chk 1 || return 1
	want_out chk "^✗ RDMA devices: none " || return 1
	want_out chk "^No RDMA device on this machine\. Soft-RoCE \(rdma_rxe\)" || return 1
	want_out chk "modprobe rdma_rxe$" || return 1
	want_out chk "rdma link add rxe0 type rxe netdev [a-z0-9]+" || return 1
	want_out chk "ibverbs-providers" || return 1
	# Nothing about ports of a device that is not there.
	! grep -q "port 1" "$T/chk.out" || fail "port lines without a device: $(grep 'port 1' "$T/chk.out" | head -n 1)"
}

t_json_output() {
	# --json: the lines people read go to stderr, one object to stdout
	# that says the same (each check in order, its details, the link).
	local n0 n1
	n0=$(retransmissions)
	run chk "$CHK" --json
	n1=$(retransmissions)
	want_rc chk 0 || return 1
	"$PYTHON" - "$T/chk.out" "$T/chk.err" "$RDMA_DEV" "$n0" "$n1" <<'EOF' || fail "rdma-check --json: $(tail_of "$T/chk.out")" || return 1
import json, sys
out, err, dev = sys.argv[1:4]
n0, n1 = int(sys.argv[4]), int(sys.argv[5])
lines = open(out).read().splitlines()
assert len(lines) == 1, lines
d = json.loads(lines[0])
assert d["program"] == "rdma-check" and d["ok"] is True and d["exit_code"] == 0 and d["user"] == "root", d
shown = [l for l in open(err).read().splitlines() if l[:1] in ("\u2713", "\u2717", "!")]
status = {"\u2713": "ok", "\u2717": "fail", "!": "warn"}
assert d["checks"] == len(shown) == len(d["results"]) and d["failed"] == 0, (d["checks"], shown)
assert d["warnings"] == sum(1 for r in d["results"] if r["status"] == "warn"), d
for r, l in zip(d["results"], shown):
    assert r["status"] == status[l[0]] and l[2:].startswith(r["text"][:40]), (r, l)
    assert (r["fix"] is None) == (r["status"] != "fail"), r
gids = [r for r in d["results"] if r["text"].startswith(dev + " port 1 GID table")]
assert len(gids) == 1 and any(x.startswith("GID[") for x in gids[0]["details"]), gids
assert d["devices"] == [dev], d["devices"]
assert len(d["link"]) == 1, d["link"]
l = d["link"][0]
n = l["retransmissions"]
assert l["port"] == dev + "/1" and l["source"] == "sysfs" and l["unavailable"] == [], l
assert n0 <= n <= n1 and l["verdict"] == ("lossless" if n == 0 else "lossy"), (n0, n1, l)
EOF
	# No RDMA at all: the same object, failing, with the fix.
	local empty
	empty=$(mktemp -d "$T/empty.XXXXXX") || return 1
	RDMA_CHECK_SYSFS=$empty run none "$CHK" --json
	rmdir "$empty"
	want_rc none 1 || return 1
	want_err none "^✗ RDMA devices: none " || return 1
	"$PYTHON" - "$T/none.out" <<'EOF' || fail "rdma-check --json without RDMA: $(tail_of "$T/none.out")"
import json, sys
d = json.loads(open(sys.argv[1]).read())
assert d["ok"] is False and d["exit_code"] == 1 and d["devices"] == [] and d["link"] == [], d
r = d["results"][0]
assert r["status"] == "fail" and r["text"].startswith("RDMA devices: none") and r["fix"], r
assert d["failed"] == sum(1 for r in d["results"] if r["status"] == "fail") >= 1, d
EOF
}

t_small_memlock_as_ordinary_user() {
	command -v setpriv >/dev/null || { REASON="setpriv not installed"; return 77; }
	# shellcheck disable=SC2016  # $0 is for the inner bash
	run chk "${NOBODY[@]}" bash -c 'ulimit -l 64 && exec "$0"' "$CHK"
	want_rc chk 1 || return 1
	want_out chk "checked as nobody$" || return 1
	want_out chk "^✗ locked memory: 'ulimit -l' is 64 KiB for nobody: enough for 01, too small for 02 \(.*\), 03 \(1 MiB \+ 64 KiB on each side.*\) — fix: .*memlock unlimited" || return 1
	# Only root may read the firewall rules: a warning, which does not fail the run...
	want_out chk "^! firewall: cannot read the rules as nobody" || return 1
	[ "$(grep -c '^✗' "$T/chk.out")" = 1 ] || fail "expected the locked-memory failure only: $(grep '^✗' "$T/chk.out" | tr '\n' '|')" || return 1
	# ... as an unlimited ulimit -l (raised by root before dropping privileges) shows: exit 0.
	run ok "bash" -c 'ulimit -l unlimited && exec "$@"' - "${NOBODY[@]}" "$CHK"
	want_rc ok 0 || return 1
	want_out ok "^✓ locked memory: 'ulimit -l' is unlimited for nobody$" || return 1
	# The firewall's, and the link counters' when earlier tests made the
	# port retry (t_all_fine_on_soft_roce checks that line against sysfs).
	local warns=1
	grep -q "^! $RDMA_DEV port 1 link counters: lossy: " "$T/ok.out" && warns=2
	want_out ok "^[0-9]+ checks, 0 failed, $warns warnings$"
}

t_firewall_dropping_roce_iptables() {
	vm_only || return 77
	command -v iptables >/dev/null || { REASON="iptables not installed"; return 77; }
	iptables -I INPUT -p udp --dport 4791 -j DROP 2>"$T/ipt.err" || { REASON="iptables -I failed: $(tail_of "$T/ipt.err")"; return 77; }
	run chk "$CHK"
	# Remove the rule before judging, so a failed check leaves no rule behind.
	iptables -D INPUT -p udp --dport 4791 -j DROP || fail "could not remove the test's iptables rule" || return 1
	want_rc chk 1 || return 1
	want_out chk "^✗ firewall: iptables drops RoCE v2 \(UDP 4791\): -A INPUT -p udp -m udp --dport 4791 -j DROP — fix: sudo iptables -I INPUT -p udp --dport 4791 -j ACCEPT$" || return 1
	[ "$(grep -c '^✗' "$T/chk.out")" = 1 ] || fail "expected the firewall failure only: $(grep '^✗' "$T/chk.out" | tr '\n' '|')"
}

t_firewall_policy_drop_nft() {
	vm_only || return 77
	command -v nft >/dev/null || { REASON="nft not installed"; return 77; }
	if ! nft add table inet rdmacheck 2>"$T/nft.err" ||
		! nft add chain inet rdmacheck input '{ type filter hook input priority 0; policy drop; }' 2>>"$T/nft.err"; then
		nft delete table inet rdmacheck 2>/dev/null
		REASON="nft failed: $(tail_of "$T/nft.err")"
		return 77
	fi
	run drop "$CHK"
	local drop_rc=$RC fix
	# The fix the checker prints, applied as is, must turn the ✗ into a ✓.
	fix=$(sed -n 's/^✗ firewall: .* — fix: sudo \(nft insert rule .*\)$/\1/p' "$T/drop.out")
	[ -n "$fix" ] && eval "$fix"
	run accept "$CHK"
	nft delete table inet rdmacheck || fail "could not remove the test's nft table" || return 1
	RC=$drop_rc want_rc drop 1 || return 1
	want_out drop "^✗ firewall: nft drops RoCE v2 \(UDP 4791\): chain inet rdmacheck input: policy drop, no rule accepts it — fix: sudo nft insert rule inet rdmacheck input udp dport 4791 accept$" || return 1
	want_rc accept 0 || return 1
	want_out accept "^✓ firewall: nft accepts RoCE v2 \(UDP 4791\) \(chain inet rdmacheck input: udp dport 4791 accept\)$"
}

# fake_sysfs DIR: a copy of what the checker reads of $RDMA_DEV port 1 (and its netdev and the
# loaded modules), for the tests to break on purpose. ibv_devinfo and `rdma link` still see the
# real device, so its active MTU and netdev are the real ones.
fake_sysfs() {
	local real=/sys/class/infiniband/$RDMA_DEV d=$1/class/infiniband/$RDMA_DEV p i g nd mods=(/sys/module/*)
	p=$d/ports/1
	mkdir -p "$p/gids" "$p/gid_attrs/types" "$p/gid_attrs/ndevs" "${mods[@]/#\/sys/$1}" || return 1
	cp "$real/node_type" "$d/" && cp "$real"/ports/1/{state,phys_state,link_layer,rate} "$p/" || return 1
	for ((i = 0; i < 8; i++)); do
		read -r g <"$real/ports/1/gids/$i" || break
		[ "$g" = 0000:0000:0000:0000:0000:0000:0000:0000 ] && continue
		echo "$g" >"$p/gids/$i"
		cp "$real/ports/1/gid_attrs/types/$i" "$p/gid_attrs/types/$i"
		cp "$real/ports/1/gid_attrs/ndevs/$i" "$p/gid_attrs/ndevs/$i"
	done
	read -r nd <"$real/ports/1/gid_attrs/ndevs/0"
	mkdir -p "$1/class/net/$nd" && cp "/sys/class/net/$nd/mtu" "$1/class/net/$nd/"
}

t_broken_port_mtu_and_gids() {
	local f=$T/sys r
	fake_sysfs "$f" || { fail "could not build the fake sysfs"; return 1; }
	check_broken_copy "$f"
	r=$?
	rm -rf "$f"
	return "$r"
}

check_broken_copy() { # FAKE_SYSFS
	local f=$1 p nd mtu
	p=$f/class/infiniband/$RDMA_DEV/ports/1
	read -r nd <"$p/gid_attrs/ndevs/0"
	# The untouched copy passes the port, GID and MTU checks...
	RDMA_CHECK_SYSFS=$f run good "$CHK"
	want_out good "^✓ $RDMA_DEV port 1: ACTIVE" || return 1
	want_out good "^✓ $RDMA_DEV port 1 GID table: " || return 1
	want_out good "^✓ $RDMA_DEV port 1: active RDMA MTU " || return 1
	mtu=$(sed -n 's/^✓ .*port 1: ACTIVE.*active MTU \([0-9]*\).*/\1/p' "$T/good.out")
	[ "$mtu" = 1024 ] || { REASON="the MTU case assumes active MTU 1024, the device has '$mtu'"; return 77; }
	# ... then: the port down (link disabled), a netdev MTU of 1000 (room for 512-byte RDMA packets
	# only, while the port uses 1024), and only the link-local GID left (no IP address).
	echo "1: DOWN" >"$p/state"
	echo "3: Disabled" >"$p/phys_state"
	echo 1000 >"$f/class/net/$nd/mtu"
	find "$p/gids" "$p/gid_attrs" -type f ! -name 0 -delete
	RDMA_CHECK_SYSFS=$f run bad "$CHK"
	want_rc bad 1 || return 1
	want_out bad "^✗ $RDMA_DEV port 1: DOWN, Disabled, Ethernet \(RoCE\).* — fix: the port is disabled: sudo ip link set $nd up" || return 1
	want_out bad "^✗ $RDMA_DEV port 1: active RDMA MTU 1024 does not fit $nd MTU 1000 \(allows up to 512\).* — fix: sudo ip link set $nd mtu 1120 " || return 1
	want_out bad "^✗ $RDMA_DEV port 1 GID table has no RoCE v2 entry for an IP address \(1 entries\) — fix: give $nd an IP address" || return 1
	want_out bad "^    GID\[0\] fe80:" || return 1
	want_out bad "^[0-9]+ checks, 3 failed, "
}

t_link_counters_read_not_invented() {
	# A copy of the port's hw_counters: all zero, then with retransmissions,
	# then gone (and 'rdma statistic' failing too): unavailable, never 0.
	local f=$T/sys p r
	fake_sysfs "$f" || { fail "could not build the fake sysfs"; return 1; }
	p=$f/class/infiniband/$RDMA_DEV/ports/1
	check_counters_copy "$f" "$p"
	r=$?
	rm -rf "$f" "${T:?}/bin"
	return "$r"
}

check_counters_copy() { # FAKE_SYSFS PORT_DIR
	local f=$1 p=$2 c
	mkdir -p "$p/hw_counters" || return 1
	for c in /sys/class/infiniband/"$RDMA_DEV"/ports/1/hw_counters/*; do
		echo 0 >"$p/hw_counters/${c##*/}"
	done
	[ -e "$p/hw_counters/completer_retry_err" ] || { fail "no completer_retry_err in $RDMA_DEV's hw_counters: $(ls "$p/hw_counters" | tr '\n' ' ')"; return 1; }
	RDMA_CHECK_SYSFS=$f run zero "$CHK"
	want_out zero "^✓ $RDMA_DEV port 1 link counters: no retransmissions since they started \(rcvd_pkts 0, sent_pkts 0\)$" || return 1
	echo 12 >"$p/hw_counters/completer_retry_err"
	echo 3 >"$p/hw_counters/out_of_seq_request"
	echo 40 >"$p/hw_counters/duplicate_request"
	echo 5000 >"$p/hw_counters/sent_pkts"
	RDMA_CHECK_SYSFS=$f run lossy "$CHK"
	want_out lossy "^! $RDMA_DEV port 1 link counters: lossy: 15 retransmissions since they started \(rcvd_pkts 0, sent_pkts 5000\); on RoCE check PFC/ECN — retries for peers that stopped answering count too" || return 1
	# No counters in sysfs, and an 'rdma' that fails: nothing to read.
	rm -rf "$p/hw_counters"
	mkdir -p "$T/bin" && printf '#!/bin/sh\nexit 1\n' >"$T/bin/rdma" && chmod +x "$T/bin/rdma"
	PATH=$T/bin:$PATH RDMA_CHECK_SYSFS=$f run none "$CHK"
	want_out none "^! $RDMA_DEV port 1 link counters: unavailable \(no retransmission counters in hw_counters or 'rdma statistic'\): cannot tell" || return 1
	! grep -q "link counters: no retransmissions" "$T/none.out" || fail "missing counters read as zero"
}

# Run alone (tests/lib.sh): two change the firewall, two count the real
# port's retransmissions (the others read a fake sysfs, or none).
ALONE_TESTS="t_all_fine_on_soft_roce t_json_output t_firewall_dropping_roce_iptables t_firewall_policy_drop_nft"
run_tests t_all_fine_on_soft_roce t_ascii_help_and_bad_usage t_no_rdma_at_all t_json_output \
	t_small_memlock_as_ordinary_user t_firewall_dropping_roce_iptables t_firewall_policy_drop_nft \
	t_broken_port_mtu_and_gids t_link_counters_read_not_invented
