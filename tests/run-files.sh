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

# run_one_file FILE [WHERE]: FILE in its own bash, its results into a file
# of its own, then added to $TEST_RESULTS (so that two lanes at once know
# whose failure is whose). A file that exits non-zero without recording a
# failure (a shell error, a signal) gets one recorded for it, so its death
# still counts; WHERE (e.g. "node 2") goes into that line.
run_one_file() {
	local f=$1 where=${2:+ ($2)} own rc
	echo "== $f"
	if ! own=$(mktemp "${TMPDIR:-/tmp}/rdma-results.XXXXXX"); then
		echo "not ok - $f not run: cannot make its results file in ${TMPDIR:-/tmp}" | tee -a "$TEST_RESULTS"
		return 1
	fi
	TEST_RESULTS=$own bash "$f"
	rc=$?
	if [ "$rc" != 0 ] && ! grep -q '^not ok' "$own"; then
		echo "not ok - $f exited $rc$where without recording a failure" | tee -a "$own"
	fi
	cat "$own" >>"$TEST_RESULTS"
	rm -f "$own"
}

# run_test_files DIR [WHERE]: run each of DIR's test files (test_files) in
# order, recording into $TEST_RESULTS. Returns 0 if no test failed.
run_test_files() {
	local f

	while read -r f; do
		run_one_file "$f" "${2:-}"
	done < <(test_files "$1")
	! grep -q '^not ok' "$TEST_RESULTS"
}

# run_test_files_in_two_lanes DIR NAME...: tests/e2e's runner, for a VM of
# two vCPUs that one lane leaves idle much of the time (docs/testing.md).
# Two lanes take DIR's test files from one queue, each the next file no
# lane has claimed (the lane whose mkdir of its name succeeds first
# takes it): first the files whose names start with the NAMEs, in that
# order, then the rest. The longest first, so that the lanes end
# together. The second lane starts once the file TEST_LANE2_AFTER exists,
# if that is set (tests/run with TEST_OVERLAP=1: the two-node stage
# beside this one is done); its lines are prefixed "[lane 2] ". A test
# that must not share the VM runs alone through the lock TEST_LOCK
# (tests/lib.sh, ALONE_TESTS). TEST_LANES=1: one lane. Returns 0 if no
# test failed.
run_test_files_in_two_lanes() {
	local f n claims lane2='' dir=$1
	local -a files order=()

	shift
	mapfile -t files < <(test_files "$dir")
	for n in "$@" ''; do # '' last: every file not named yet
		for f in "${files[@]}"; do
			[[ ${f##*/} == "$n"* && " ${order[*]} " != *" $f "* ]] && order+=("$f")
		done
	done
	if ! claims=$(mktemp -d /dev/shm/rdma-lanes.XXXXXX); then
		echo "not ok - $dir: cannot make the lanes' directory in /dev/shm" | tee -a "$TEST_RESULTS"
		return 1
	fi
	if [ "${TEST_LANES:-2}" != 1 ] && [ ${#order[@]} -gt 1 ]; then
		export TEST_LOCK=$claims/lock
		second_lane "$claims" "${order[@]}" 2>&1 | sed -u 's/^/[lane 2] /' &
		lane2=$!
	fi
	take_files "$claims" "${order[@]}"
	[ -n "$lane2" ] && wait "$lane2"
	# A file a lane took and did not finish (the lane died) still counts.
	for f in "${order[@]}"; do
		[ ! -d "$claims/${f##*/}" ] || [ -e "$claims/${f##*/}/done" ] ||
			echo "not ok - $f: its lane ended before it did" | tee -a "$TEST_RESULTS"
	done
	rm -rf "$claims"
	! grep -q '^not ok' "$TEST_RESULTS"
}

# take_files CLAIMS FILE...: run each FILE no lane has claimed yet.
take_files() {
	local claims=$1 f
	shift
	for f in "$@"; do
		mkdir "$claims/${f##*/}" 2>/dev/null || continue
		run_one_file "$f"
		: >"$claims/${f##*/}/done"
	done
}

# second_lane CLAIMS FILE...: the second lane of run_test_files_in_two_lanes.
second_lane() {
	local claims=$1
	shift
	# Waits while the first lane has files left to start.
	while [ -n "${TEST_LANE2_AFTER:-}" ] && [ ! -e "$TEST_LANE2_AFTER" ]; do
		[ "$(find "$claims" -mindepth 1 -maxdepth 1 -type d | wc -l)" -lt $# ] || return 0
		sleep 2
	done
	echo "a second lane starts"
	take_files "$claims" "$@"
}
