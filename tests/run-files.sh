# shellcheck shell=bash
# Sourced by tests/e2e/run.sh and tests/e2e2/run.sh: what both runners do
# with their test files.

# run_test_files DIR [WHERE]: run each DIR/[0-9]*.sh (only those matching
# the regex TEST_FILES, if set) in order, each in its own bash, recording
# into $TEST_RESULTS. A file that exits non-zero without recording a
# failure (a shell error, a signal) gets one recorded for it, so its death
# still counts; WHERE (e.g. "node 2") goes into that line. Returns 0 if
# no test failed.
run_test_files() {
	local f rc before where=${2:+ ($2)}

	for f in "$1"/[0-9]*.sh; do
		[ -n "${TEST_FILES:-}" ] && ! [[ $f =~ $TEST_FILES ]] && continue
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
