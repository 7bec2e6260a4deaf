#!/usr/bin/env bash
# Runs every two-node test file (tests/e2e2/[0-9]*.sh) in this node of
# `tools/rdma-env -n 2`: both nodes run this script, and each file, at the
# same time; the files coordinate through RDMA_SYNC_DIR. Each node records
# its own tests in ${TEST_RESULTS%.txt}-node$RDMA_NODE.txt (two VMs
# appending to one file over 9p could interleave). Exit 0 if none failed.
set -u
cd "$(dirname "$0")/../.." || exit 2
: "${RDMA_NODE:?run me through tools/rdma-env -n 2}"
: "${TEST_RESULTS:?TEST_RESULTS must name the results file}"
TEST_RESULTS=${TEST_RESULTS%.txt}-node$RDMA_NODE.txt
export TEST_RESULTS
: >"$TEST_RESULTS"
echo "e2e2: node $RDMA_NODE at $RDMA_IP, peer $RDMA_PEER_IP, kernel $(uname -r)"
# shellcheck source=../run-files.sh source-path=SCRIPTDIR
. tests/run-files.sh
run_test_files tests/e2e2 "node $RDMA_NODE"
