#!/usr/bin/env bash
# End-to-end tests of tools/smoke on one host (the two-host run is tests/e2e2/20-smoke.sh).
# Run through tools/rdma-env, which sets RDMA_IP.
# shellcheck source=../lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/../lib.sh"

SMOKE=$ROOT/tools/smoke
C01=$ROOT/01_basic-client-server/rdma-client
BASE=17471 # --server tests: 17471-17473

# want_rows NAME STATUS COUNT: COUNT table rows of NAME's FILE (out or err) have STATUS (a regex:
# 'PASS|LOSSY' for a check that passed, whatever the port's counters saw).
want_rows() {
	local n
	n=$(grep -Ec "^0[123] .* ($2) " "$T/$1")
	[ "$n" = "$3" ] || fail "$n rows $2 in $1, expected $3: $(tail_of "$T/$1" 12)"
}

t_local_all_pass() {
	# With --json: the table goes to stderr, the object to stdout (the
	# table on stdout is what t_client_without_server reads).
	local t0=$SECONDS
	run smoke "$SMOKE" --local --json
	echo "    smoke --local took $((SECONDS - t0)) s:"
	sed 's/^/    | /' "$T/smoke.err"
	want_rc smoke 0 || return 1
	# Every check passes. Even on one host a check can be LOSSY: a busy
	# VM can drop a loopback packet (seen on 6.1, in one check of
	# t_secret_passed_through, with the host's 2 cores busy); the port's
	# counters rightly show the resend. So each row is checked against
	# its own link line: PASS with "lossless: 0", LOSSY with "lossy: N".
	want_rows smoke.err 'PASS|LOSSY' 5 || return 1
	local st='(PASS|LOSSY)' nlossy
	nlossy=$(grep -Ec "^0[123] .* LOSSY " "$T/smoke.err")
	grep -Eq "^01 send/recv 64 B x1000 +$st +round trip median [0-9.]+ us, p99 [0-9.]+ us" "$T/smoke.err" &&
		grep -Eq "^02 write\+read 2 MiB +$st +written, read back, equal" "$T/smoke.err" &&
		grep -Eq "^02 bandwidth 1 MiB x50 +$st +write [0-9.]+ MiB/s \([0-9.]+ Gb/s\), read [0-9.]+ MiB/s" "$T/smoke.err" &&
		grep -Eq "^03 put 4 MiB file +$st +[0-9.]+ MiB/s, xxh3-128 checked by the server$" "$T/smoke.err" &&
		grep -Eq "^03 get 4 MiB file +$st +[0-9.]+ MiB/s, sha256 of the copy equals the original$" "$T/smoke.err" ||
		fail "table rows differ: $(tail_of "$T/smoke.err" 9)" || return 1
	if [ "$nlossy" = 0 ]; then
		want_err smoke "^smoke: 5 checks, 5 passed, 0 failed$" || return 1
	else
		echo "    $nlossy checks saw resends on one host (a dropped loopback packet): their lines are checked as lossy"
		want_err smoke "^smoke: 5 checks, 5 passed \($nlossy over a lossy link, with retransmissions\), 0 failed$" || return 1
	fi
	# rdma-check runs only after a failure.
	! grep -q "rdma-check" "$T/smoke.err" || fail "rdma-check ran although every check passed" || return 1
	# Each check's link line follows its row, with the payload it moved
	# (01: 1000 x 64 B each way): lossless after PASS, lossy after LOSSY.
	want_err smoke "^smoke: link counters of $RDMA_DEV/1 \(on [a-z0-9]+\) before and after each check; they are per port, so other traffic on $RDMA_DEV/1 counts too$" || return 1
	[ "$(grep -A1 -E "^0[123] .* PASS " "$T/smoke.err" | grep -Ec "^ +link: lossless: 0 retransmissions in (0\.1|4\.0|100\.0) MiB \($RDMA_DEV/1\)$")" = $((5 - nlossy)) ] &&
		[ "$(grep -A1 -E "^0[123] .* LOSSY " "$T/smoke.err" | grep -Ec "^ +link: lossy: ([0-9]+\.[0-9] retransmissions per MiB; on RoCE check PFC/ECN \([1-9][0-9]* in (0\.1|4\.0|100\.0) MiB(, [0-9]+ duplicate packets)?|the peer resent [0-9]+ packets that had arrived \(duplicates\); on RoCE check PFC/ECN \(0 retransmissions from this port in (0\.1|4\.0|100\.0) MiB), $RDMA_DEV/1\)$")" = "$nlossy" ] ||
		fail "link lines do not match their rows: $(grep -E '^0[123] |link:' "$T/smoke.err" | tr '\n' '|')" || return 1
	if [ "$nlossy" = 0 ]; then
		want_err smoke "^smoke: link, all checks: lossless: 0 retransmissions in 112\.1 MiB \($RDMA_DEV/1\)$" || return 1
	fi
	"$PYTHON" - "$T/smoke.out" <<'EOF' || fail "smoke --json: $(tail_of "$T/smoke.out")"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 1, lines
d = json.loads(lines[0])
assert d["program"] == "smoke" and d["ok"] is True and d["exit_code"] == 0, d
assert d["passed"] == 5 and d["failed"] == 0 and d["skipped"] == 0, d
assert d["rdma_check"] is None, d
examples = []
for c in d["checks"]:
    assert c["status"] in ("PASS", "LOSSY") and c["ok"] is True and c["error"] is None and c["figures"], c
    r = c["result"]
    assert r["ok"] is True and r["exit_code"] == 0 and r["error"] is None, c
    examples.append(r["example"])
assert examples == ["01_basic-client-server"] + ["02_read-write"] * 2 + ["03_file-transfer"] * 2, examples
assert d["checks"][0]["result"]["messages"] == 1000
assert d["checks"][2]["result"]["write"]["mib_s"] > 0
retry = ("completer_retry_err", "out_of_seq_request")
loss = ("duplicate_request", "rcvd_seq_err", "retry_exceeded_err")
nlossy = 0
for c in d["checks"]:
    l = c["link"]
    assert l["source"] == "sysfs" and l["unavailable"] == [] and "completer_retry_err" in l["counters"], l
    n = sum(l["counters"].get(k, 0) for k in retry)
    assert l["retransmissions"] == n, l
    moved = n + sum(l["counters"].get(k, 0) for k in loss)
    if moved == 0:
        assert c["status"] == "PASS" and l["verdict"] == "lossless" and l["per_mib"] == 0.0, c
    else:
        nlossy += 1
        assert c["status"] == "LOSSY" and l["verdict"] == "lossy", c
assert d["lossy"] == nlossy, d
assert d["link"]["verdict"] == ("lossless" if nlossy == 0 else "lossy"), d["link"]
assert [c["link"]["mib"] for c in d["checks"]] == [0.1, 4.0, 100.0, 4.0, 4.0], d["checks"]
EOF
}

# fake_counters DIR: a copy of $RDMA_DEV port 1's hw_counters (all 0) and the netdev of its GIDs,
# where smoke (RDMA_SMOKE_SYSFS) finds the port and reads its counters.
fake_counters() {
	local p=$1/class/infiniband/$RDMA_DEV/ports/1 real=/sys/class/infiniband/$RDMA_DEV/ports/1 c
	mkdir -p "$p/hw_counters" "$p/gid_attrs/ndevs" || return 1
	cp "$real/gid_attrs/ndevs/0" "$p/gid_attrs/ndevs/0" || return 1
	for c in "$real"/hw_counters/*; do echo 0 >"$p/hw_counters/${c##*/}"; done
}

t_lossy_link_named() {
	# Counters that grow during every check (a loop plays a lossy link):
	# each check passes, but says LOSSY with its retransmissions per MiB.
	local f=$T/fsys
	fake_counters "$f" || { fail "could not build the fake counters"; return 1; }
	# shellcheck disable=SC2016 # for the inner bash
	spawn bump bash -c 'n=0; while :; do n=$((n + 1)); echo $n >"$0.tmp" && mv "$0.tmp" "$0"; sleep 0.1; done' \
		"$f/class/infiniband/$RDMA_DEV/ports/1/hw_counters/completer_retry_err"
	RDMA_SMOKE_SYSFS=$f run smoke "$SMOKE" --local --json
	local rc=$RC
	kill "${PID[bump]}"
	wait_exit bump 5
	rm -rf "$f"
	sed 's/^/    | /' "$T/smoke.err"
	RC=$rc want_rc smoke 0 || return 1
	want_rows smoke.err LOSSY 5 || return 1
	[ "$(grep -Ec "^ +link: lossy: [0-9]+\.[0-9] retransmissions per MiB; on RoCE check PFC/ECN \([1-9][0-9]* in [0-9.]+ MiB, $RDMA_DEV/1\)$" "$T/smoke.err")" = 5 ] ||
		fail "not 5 lossy link lines: $(grep 'link:' "$T/smoke.err" | tr '\n' '|')" || return 1
	want_err smoke "^smoke: 5 checks, 5 passed \(5 over a lossy link, with retransmissions\), 0 failed$" || return 1
	"$PYTHON" - "$T/smoke.out" <<'EOF' || fail "smoke --json: $(tail_of "$T/smoke.out")"
import json, sys
d = json.loads(open(sys.argv[1]).read())
assert d["ok"] is True and d["exit_code"] == 0 and d["passed"] == 5 and d["lossy"] == 5, d
assert d["link"]["verdict"] == "lossy" and d["link"]["retransmissions"] > 0, d["link"]
for c in d["checks"]:
    l = c["link"]
    assert c["status"] == "LOSSY" and c["ok"] is True and l["verdict"] == "lossy", c
    n = l["counters"]["completer_retry_err"]
    assert n > 0 and l["retransmissions"] == n, l
    r = c["result"]
    b = r["bytes"] * (2 if r["example"] == "01_basic-client-server" else 1)
    assert abs(l["per_mib"] - n * 1048576 / b) <= 0.051, (l, b)
EOF
}

t_counters_unavailable_not_zero() {
	# The port has no counters and 'rdma statistic' fails: each row says
	# so, and the JSON has null, never 0. (No server: the checks fail fast.)
	local f=$T/fsys
	fake_counters "$f" || { fail "could not build the fake counters"; return 1; }
	rm -rf "$f/class/infiniband/$RDMA_DEV/ports/1/hw_counters"
	mkdir -p "$T/bin" && printf '#!/bin/sh\nexit 1\n' >"$T/bin/rdma" && chmod +x "$T/bin/rdma"
	PATH=$T/bin:$PATH RDMA_SMOKE_SYSFS=$f run smoke "$SMOKE" --client "$RDMA_IP" -p $BASE --timeout 3 --no-check --json
	rm -rf "$f" "${T:?}/bin"
	want_rc smoke 1 || return 1
	[ "$(grep -Ec "^ +link: counters unavailable: $RDMA_DEV/1 has no retransmission counters$" "$T/smoke.err")" = 4 ] ||
		fail "not 4 'unavailable' link lines: $(grep 'link:' "$T/smoke.err" | tr '\n' '|')" || return 1
	! grep -q "0 retransmissions" "$T/smoke.err" || fail "a missing counter read as 0" || return 1
	"$PYTHON" - "$T/smoke.out" <<'EOF' || fail "smoke --json: $(tail_of "$T/smoke.out")"
import json, sys
d = json.loads(open(sys.argv[1]).read())
assert d["link"]["verdict"] == "unavailable" and d["link"]["retransmissions"] is None, d["link"]
for c in d["checks"]:
    if c["status"] == "SKIP":
        assert c["link"] is None, c
        continue
    l = c["link"]
    assert l["verdict"] == "unavailable" and l["retransmissions"] is None and l["per_mib"] is None, l
    assert "completer_retry_err" in l["unavailable"] and l["counters"] == {}, l
EOF
}

t_client_without_server() {
	# Nothing listens on these ports: every check fails at once with the
	# reason (the CM's REJECTED), the put's failure skips the get.
	local t0=$SECONDS
	run smoke "$SMOKE" --client "$RDMA_IP" -p $BASE --timeout 3 --no-check
	want_rc smoke 1 || return 1
	want_rows smoke.out FAIL 4 || return 1
	want_rows smoke.out SKIP 1 || return 1
	[ "$(grep -c "REJECTED" "$T/smoke.out")" = 4 ] || fail "not every FAIL row names REJECTED: $(tail_of "$T/smoke.out" 14)" || return 1
	[ "$(grep -c "hint: is 'tools/smoke --server' running on $RDMA_IP, with the same -p? (it listens on $BASE, $((BASE + 1)) and $((BASE + 2)))" "$T/smoke.out")" = 4 ] ||
		fail "hints missing: $(tail_of "$T/smoke.out" 14)" || return 1
	want_out smoke "^03 get 4 MiB file +SKIP +not run: the put failed" || return 1
	want_out smoke "^smoke: 5 checks, 0 passed, 4 failed, 1 skipped$" || return 1
	[ $((SECONDS - t0)) -le 40 ] || fail "took $((SECONDS - t0)) s"
}

t_client_unreachable_host() {
	# 192.0.2.1 (TEST-NET-1) answers nobody: the first check fails within
	# the timeout, the others are skipped rather than waited for again;
	# rdma-check (when present) then looks at this host. With --json, the
	# reasons are in the object too.
	local t0=$SECONDS rc_present=0
	[ -x "$ROOT/tools/rdma-check" ] && rc_present=1
	run smoke "$SMOKE" --client 192.0.2.1 --timeout 3 --json
	want_rc smoke 1 || return 1
	grep -Eq "^01 send/recv 64 B x1000 +FAIL " "$T/smoke.err" || fail "no FAIL row: $(tail_of "$T/smoke.err" 9)" || return 1
	want_rows smoke.err SKIP 4 || return 1
	grep -q "^smoke: 5 checks, 0 passed, 1 failed, 4 skipped$" "$T/smoke.err" || fail "summary: $(tail_of "$T/smoke.err" 9)" || return 1
	if [ $rc_present = 1 ]; then
		grep -q "^smoke: tools/rdma-check on this host says:$" "$T/smoke.err" || fail "rdma-check did not run" || return 1
	fi
	"$PYTHON" - "$T/smoke.out" $rc_present <<'EOF' || fail "smoke --json: $(tail_of "$T/smoke.out")" || return 1
import json, sys
d = json.loads(open(sys.argv[1]).read())
assert d["ok"] is False and d["exit_code"] == 1 and d["host"] == "192.0.2.1", d
assert (d["passed"], d["failed"], d["skipped"]) == (0, 1, 4), d
first = d["checks"][0]
assert first["status"] == "FAIL" and first["ok"] is False and first["error"] and first["hint"], first
assert first["result"]["exit_code"] == 3 and first["result"]["error"] in first["error"], first
assert all(c["status"] == "SKIP" and c["result"] is None for c in d["checks"][1:]), d
if sys.argv[2] == "1":
    assert isinstance(d["rdma_check"]["exit_code"], int) and "checks" in d["rdma_check"]["summary"], d
EOF
	[ $((SECONDS - t0)) -le 90 ] || fail "took $((SECONDS - t0)) s"
}

t_server_duration_and_signal() {
	# --duration ends the server by itself, SIGTERM too; either way exit
	# 0 and the example servers are gone (their ports refuse).
	spawn srv "$SMOKE" --server -p $BASE --duration 2
	wait_for srv "^smoke: ready" 20 || return 1
	want_out srv "^smoke: serving 01 on port $BASE, 02 on port $((BASE + 1)), 03 on port $((BASE + 2)) " || return 1
	want_out srv "^smoke: clients connect to $RDMA_IP .*: tools/smoke --client $RDMA_IP -p $BASE$" || return 1
	wait_exit srv 20
	want_rc srv 0 || return 1
	spawn srv2 "$SMOKE" --server -p $BASE
	wait_for srv2 "^smoke: ready" 20 || return 1
	kill -TERM "${PID[srv2]}"
	wait_exit srv2 15
	want_rc srv2 0 || return 1
	want_out srv2 "^smoke: stopping$" || return 1
	run cli "$C01" --timeout 3 "$RDMA_IP" $BASE
	want_rc cli 3 || return 1
	want_err cli "REJECTED"
}

t_server_port_taken() {
	# A port already in use: the server says which and exits 3, and the
	# servers it had started are stopped again.
	spawn busy "$ROOT/01_basic-client-server/rdma-server" -p $((BASE + 1))
	wait_for busy "^listening on" 15 || return 1
	run srv "$SMOKE" --server -p $BASE --duration 30
	want_rc srv 3 || return 1
	want_err srv "the 02 server did not start on port $((BASE + 1))" || return 1
	run cli "$C01" --timeout 3 "$RDMA_IP" $BASE
	want_rc cli 3
}

t_bad_usage() {
	run u1 "$SMOKE"; want_rc u1 2 || return 1
	want_err u1 "say --server, --client HOST or --local" || return 1
	run u2 "$SMOKE" --client; want_rc u2 2 || return 1
	run u3 "$SMOKE" --local --timeout 0; want_rc u3 2 || return 1
	run u4 "$SMOKE" --client h --duration 5; want_rc u4 2 || return 1
	run u5 "$SMOKE" --server -p 65535; want_rc u5 2 || return 1
	run h "$SMOKE" --help; want_rc h 0 || return 1
	want_out h "^usage: tools/smoke --server"
}

t_secret_passed_through() {
	# --secret FILE reaches 03's server and client: with the key on both
	# sides every check passes; a client without it fails 03 with the
	# server's "authentication failed" and a hint naming --secret.
	local key=$T/key
	head -c 32 /dev/urandom >"$key"
	chmod 600 "$key"
	spawn srv "$SMOKE" --server -p $BASE --secret "$key" --duration 120
	wait_for srv "^smoke: ready" 20 || return 1
	run ok "$SMOKE" --client "$RDMA_IP" -p $BASE --secret "$key" --no-check
	want_rc ok 0 || return 1
	want_rows ok.out 'PASS|LOSSY' 5 || return 1
	want_out ok "^03 put 4 MiB file +(PASS|LOSSY) " || return 1
	run nokey "$SMOKE" --client "$RDMA_IP" -p $BASE --no-check
	want_rc nokey 1 || return 1
	want_out nokey "^03 put 4 MiB file +FAIL +.*authentication failed: the server requires --secret FILE" || return 1
	want_out nokey "hint: the 03 server wants a proof of its key: give both sides --secret with the same key file" || return 1
	want_rows nokey.out 'PASS|LOSSY' 3 || return 1
	kill -TERM "${PID[srv]}"
	wait_exit srv 15
	want_rc srv 0 || return 1
	# A key file others may read: the 03 server refuses to start.
	chmod 644 "$key"
	run bad "$SMOKE" --local --secret "$key" --no-check
	want_rc bad 3 || return 1
	want_err bad "the 03 server did not start.*chmod 600" || return 1
}

# Run alone (tests/lib.sh): it counts the port's retransmissions, which
# count every connection's (the others read fake counters, or none).
ALONE_TESTS="t_local_all_pass"
run_tests t_local_all_pass t_lossy_link_named t_counters_unavailable_not_zero \
	t_client_without_server t_client_unreachable_host \
	t_server_duration_and_signal t_server_port_taken t_bad_usage t_secret_passed_through
