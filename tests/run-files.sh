# shellcheck shell=bash
# Sourced by tests/e2e/run.sh and tests/e2e2/run.sh: what both runners do
# with their test files.

# test_files DIR: DIR/[0-9]*.sh in order, those matching the regex
# TEST_FILES if set, one per line.
test_files() {
	local f
	for f in "$1"/[0-9]*.sh; do
		[ -n "${TEST_FILES:-}" ] && ! [[ $f =~ $TEST_FILES ]] && continue
		echo "$f"
	done
}

# run_test_files DIR [WHERE]: run each DIR/[0-9]*.sh (only those matching
# the regex TEST_FILES, if set) in order, each in its own bash, recording
# into $TEST_RESULTS. A file that exits non-zero without recording a
# failure (a shell error, a signal) gets one recorded for it, so its death
# still counts; WHERE (e.g. "node 2") goes into that line. Returns 0 if
# no test failed.
#
# TEST_CLAIMS=DIR: another runner takes files from the same list at the
# same time (tests/run's second lane, in another VM): each file runs in
# the runner whose mkdir DIR/NAME succeeds first (atomic on the host,
# through 9p). TEST_REVERSE=1 takes the files last first, so that two
# runners start at opposite ends and meet.
run_test_files() {
	local f rc before where=${2:+ ($2)} files=()

	mapfile -t files < <(test_files "$1")
	[ "${TEST_REVERSE:-0}" = 1 ] && [ ${#files[@]} -gt 0 ] && mapfile -t files < <(printf '%s\n' "${files[@]}" | tac)
	for f in "${files[@]}"; do
		[ -n "${TEST_CLAIMS:-}" ] && ! mkdir "$TEST_CLAIMS/${f##*/}" 2>/dev/null && continue
		echo "== $f"
		before=$(grep -c '^not ok' "$TEST_RESULTS")
		bash "$f"
		rc=$?
		if [ "$rc" != 0 ] && [ "$(grep -c '^not ok' "$TEST_RESULTS")" = "$before" ]; then
			echo "not ok - $f exited $rc$where without recording a failure" |
				tee -a "$TEST_RESULTS"
		fi
	done
	! grep -q '^not ok' "$TEST_RESULTS"
}
