#!/usr/bin/env bash
# End-to-end tests of 04_many-clients' --inject lessons (README,
# "Lessons"): rdma-load's other-rkey against windows and against the
# server's unsafe shared region, old-rkey, and srq-low against a server
# whose SRQ runs empty. The three servers and the four lesson runs go at
# once: budget 25 s of VM time for the file. Run through tools/rdma-env.
# shellcheck source=../lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/../lib.sh"

S=$ROOT/04_many-clients/rdma-server
L=$ROOT/04_many-clients/rdma-load
C=$ROOT/02_read-write/rdma-client
LT=(--timeout 5)

t_lessons_other_rkey_old_rkey_srq_low() {
	local win reg low
	start_server win "$S" --max-clients 8 || return 1
	win=$PORT
	start_server reg "$S" --max-clients 8 --inject shared-region || return 1
	reg=$PORT
	start_server low "$S" --max-clients 8 --inject srq-low || return 1
	low=$PORT
	spawn other "$L" "${LT[@]}" --inject other-rkey "$RDMA_IP" "$win"
	spawn old "$L" "${LT[@]}" --inject old-rkey "$RDMA_IP" "$win"
	spawn shared "$L" "${LT[@]}" --inject other-rkey "$RDMA_IP" "$reg"
	# 4 receives on its SRQ: 4 of 6 DONEs find one, 2 meet RNR.
	spawn srq "$L" "${LT[@]}" -c 6 --inject srq-low "$RDMA_IP" "$low"
	# Meanwhile: the unsafe lesson refuses the shared counter.
	run u1 "$S" --inject shared-region --counter
	want_rc u1 2 || return 1
	want_err u1 "--inject shared-region takes no --counter" || return 1
	wait_exit other 60
	want_lesson_shown other other-rkey "IBV_WC_REM_ACCESS_ERR on the other QP, IBV_WC_SUCCESS on its own" || return 1
	want_out other "^completion of the WRITE: IBV_WC_REM_ACCESS_ERR " || return 1
	wait_exit old 60
	want_lesson_shown old old-rkey "IBV_WC_REM_ACCESS_ERR for the old rkey on the new connection" || return 1
	wait_exit shared 60
	want_lesson_shown shared other-rkey "conn 0 wrote and read conn 1's buffer with conn 1's rkey" || return 1
	want_out shared "^completion of the READ: IBV_WC_SUCCESS " || return 1
	wait_exit srq 60
	want_rc srq 4 || return 1
	want_out srq "^inject srq-low: of 6 DONEs \(SENDs\), 4 completed, 2 failed with IBV_WC_RNR_RETRY_EXC_ERR, 0 had" || return 1
	want_out srq "our QPs' rnr_retry is 6 \(the CM set it$" || return 1
	want_out srq "^lesson srq-low: shown \(IBV_WC_RNR_RETRY_EXC_ERR for DONEs past the SRQ's receives\)$" || return 1
	want_err srq "x exchange \(first: conn [0-9]+\): .*RNR retry counter exceeded" || return 1
	# The server's side: the limit event, once (the order of its lines and
	# of the completions it takes is not fixed), and the SRQ empty.
	[ "$(grep -c "^async event SRQ limit reached: lesson srq-low: not refilling" "$T/low.out")" = 1 ] ||
		fail "low: not one limit event: $(tail_of "$T/low.out" 6)" || return 1
	want_out low "^lesson srq-low: no receive left on the SRQ$" || return 1
	want_out reg "LESSON shared-region, UNSAFE: every slice in one region" || return 1
	# The windows' server serves the next client (make lessons checks the
	# shared region's too; srq-low's SRQ is empty).
	run next "$C" "${LT[@]}" -s 4K "$RDMA_IP" "$win"
	want_rc next 0 || return 1
	stop_server win || return 1
	stop_server reg || return 1
	stop_server low
}

run_tests t_lessons_other_rkey_old_rkey_srq_low
