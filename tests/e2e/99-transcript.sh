#!/usr/bin/env bash
# s.txt must show what the programs print today: run the demo again and
# compare the two after reducing both to their shape (tests/normalize-transcript).
# shellcheck source=../lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/../lib.sh"

t_s_txt_matches_current_output() {
	local norm=$ROOT/tests/normalize-transcript
	[ -f "$ROOT/s.txt" ] || fail "s.txt is missing; run make transcript" || return 1
	run demo "$ROOT/tools/demo.sh"
	want_rc demo 0 || return 1
	# s.txt: everything after its header line of dashes.
	sed '1,/^-----/d' "$ROOT/s.txt" | "$norm" >"$T/want"
	"$norm" "$T/demo.out" >"$T/got"
	cat "$T/demo.err" >>"$T/got.err"
	diff -u "$T/want" "$T/got" >"$T/diff" && return 0
	fail "s.txt no longer matches the demo's output; run make transcript and review: $(head -c 600 "$T/diff" | tr '\n' '|')"
}

run_tests t_s_txt_matches_current_output
