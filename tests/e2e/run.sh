#!/usr/bin/env bash
# Runs every end-to-end test file (tests/e2e/[0-9]*.sh) in the current RDMA
# environment. Meant to run under tools/rdma-env, which sets RDMA_IP.
# Results: one line per test in $TEST_RESULTS. Exit 0 if none failed.
set -u
cd "$(dirname "$0")/../.." || exit 2
: "${RDMA_IP:?run me through tools/rdma-env}"
: "${TEST_RESULTS:?TEST_RESULTS must name the results file}"
touch "$TEST_RESULTS" || exit 2
echo "e2e: device ${RDMA_DEV:-?} at $RDMA_IP (mode ${RDMA_ENV_MODE:-?}), kernel $(uname -r)"
# shellcheck source=../run-files.sh source-path=SCRIPTDIR
. tests/run-files.sh
# The order of the queue: first 05, 08 and 09, whose tests run alone
# (ALONE_TESTS) or share the VM with few others, then the longest files
# first (docs/testing.md has each file's time), so that the two lanes
# end together. A file not named here comes last.
run_test_files_in_two_lanes tests/e2e 05- 08- 09- 03-file 03-source 02- 01- 06- 07- 04-many 99- 10- 04-load 04-lessons
