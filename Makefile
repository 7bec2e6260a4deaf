# rdma-examples: one hand-written Makefile, no autodetection.
#
# The paths below are Debian/Ubuntu's (x86_64). Elsewhere, override them on
# the command line, e.g.
#   make IBVERBS_INC=/opt/rdma/include IBVERBS_LIB=/opt/rdma/lib
#   make LIBDIR=/usr/lib/aarch64-linux-gnu
# Check what you have with: dpkg -L libibverbs-dev | grep verbs.h

LIBDIR      = /usr/lib/x86_64-linux-gnu
IBVERBS_INC = /usr/include
IBVERBS_LIB = $(LIBDIR)
RDMACM_INC  = /usr/include
RDMACM_LIB  = $(LIBDIR)
CMOCKA_INC  = /usr/include
CMOCKA_LIB  = $(LIBDIR)
# libsodium (03's --secret): HMAC-SHA512-256 and a constant-time compare.
SODIUM_INC  = /usr/include
SODIUM_LIB  = $(LIBDIR)

# GNU make has its own default CC (cc), so `CC ?= gcc` would never apply:
# gcc unless CC comes from the command line or the environment.
ifeq ($(origin CC),default)
CC        = gcc
endif
OPTFLAGS  = -O2 -g
# make SANITIZE=address,undefined builds everything with ASan/UBSan.
SANITIZE  =
WARN      = -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wformat=2
CFLAGS    = -std=c11 $(OPTFLAGS) $(WARN) -pthread
CPPFLAGS  = -I$(IBVERBS_INC) -I$(RDMACM_INC) -Icommon
LDFLAGS   = -L$(IBVERBS_LIB) -L$(RDMACM_LIB) -pthread
LDLIBS    = -lrdmacm -libverbs

ifneq ($(SANITIZE),)
CFLAGS  += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS += -fsanitize=$(SANITIZE)
endif

XXHASH_INC  = /usr/include
XXHASH_LIB  = $(LIBDIR)

B := build

EX01 := 01_basic-client-server
EX02 := 02_read-write
EX03 := 03_file-transfer
EX04 := 04_many-clients

# What `make` builds. An example joins these lists once it exists.
EXAMPLES  := $(EX01)
EXAMPLES += $(EX02)
EXAMPLES += $(EX03)
UNIT_BINS := $(B)/tests/test-common $(B)/tests/test-basic
UNIT_BINS += $(B)/tests/test-rw
UNIT_BINS += $(B)/tests/test-rw-atomic
UNIT_BINS += $(B)/tests/test-xfer
UNIT_BINS += $(B)/tests/test-xfer-opts
UNIT_BINS += $(B)/tests/test-xfer-file
UNIT_BINS += $(B)/tests/test-xfer-src
UNIT_BINS += $(B)/tests/test-xfer-hash
UNIT_BINS += $(B)/tests/test-xfer-timeline
UNIT_BINS += $(B)/tests/test-rdma-alone
UNIT_BINS += $(B)/tests/test-rdma-counters
UNIT_BINS += $(B)/tests/test-allow
UNIT_BINS += $(B)/tests/test-auth

BINS := $(foreach e,$(EXAMPLES),$(e)/rdma-server $(e)/rdma-client)
BINS += $(EX04)/rdma-server $(EX04)/rdma-load
SRCS := $(wildcard common/*.[ch] $(addsuffix /*.[ch],$(EXAMPLES) $(EX04)) tests/unit/*.[ch] tests/fuzz/*.[ch] \
		tests/hostile/*.[ch] tests/alone/*.[ch] tests/repro/*.[ch] tests/bench-hash.c \
		tests/bench-sink.c)

.PHONY: all $(EX01) $(EX02) $(EX03) $(EX04) counter-check unit hostile alone bench-hash bench-sink fuzz fuzz-build clean test test-kernels demo transcript check-env format check-format FORCE
all: $(BINS)

$(EX01): $(EX01)/rdma-server $(EX01)/rdma-client
$(EX02): $(EX02)/rdma-server $(EX02)/rdma-client
$(EX03): $(EX03)/rdma-server $(EX03)/rdma-client
$(EX04): $(EX04)/rdma-server $(EX04)/rdma-load

# Objects live under build/, so the source folders stay clean. -MMD -MP
# writes header dependencies next to each object: touching a header
# rebuilds everything that includes it.
$(B)/%.o: %.c $(B)/.flags
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

# Rebuild everything when the compiler or flags change (e.g. SANITIZE=...).
$(B)/.flags: FORCE
	@mkdir -p $(B)
	@echo '$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) $(LDLIBS)' | cmp -s - $@ || \
		echo '$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) $(LDLIBS)' > $@

# common/: the set rdma-common.h names (SET_O, common/rdma-*: what a
# service copies, RDMA only, linking on its own) and rc-counters.o, RDMA
# too, its opt-in that reads the port's retransmission counters; the others
# are the collection's command line, server loop and --json output, the
# servers' --allow list, and what the lessons of 01 and 02 print about the
# QP and the kernel.
SET_O    := $(addprefix $(B)/common/,rdma-common.o rdma-wire.o rdma-conn.o rdma-post.o \
	    rdma-wait.o rdma-device.o rdma-listen.o)
RDMA_O   := $(SET_O) $(B)/common/rc-counters.o
OPTS_O   := $(B)/common/rc-opts.o $(B)/common/rc-allow.o
SERVER_O := $(B)/common/rc-server.o
JSON_O   := $(B)/common/rc-json.o
REPORT_O := $(B)/common/rc-report.o
LESSONS_O := $(B)/common/rc-lessons.o
# 01's command line (01 takes its options from common/).
OPTS01_O := $(B)/common/rc-opts-basic.o
COMMON_O := $(RDMA_O) $(OPTS_O) $(SERVER_O) $(JSON_O) $(REPORT_O) $(OPTS01_O) $(LESSONS_O)

# 01 makes its own verbs calls, waits for its own CM events and runs its own
# server loop: of common/ it uses only the set's poll with a deadline, hints
# and wire header, options, output and rc-lessons.o. lessons.c: the
# --inject lessons, both sides; cm-event.c: what a CM wait keeps and reports;
# inline.c: --inline's questions to the device (asked, granted, its limit).
X01_O := $(addprefix $(B)/$(EX01)/,basic.o cm-event.o lessons.o inline.o)
$(EX01)/rdma-server: $(B)/$(EX01)/server.o $(X01_O) $(RDMA_O) \
		     $(OPTS_O) $(OPTS01_O) $(REPORT_O) $(JSON_O) $(LESSONS_O)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(EX01)/rdma-client: $(B)/$(EX01)/client.o $(X01_O) $(RDMA_O) \
		     $(OPTS_O) $(OPTS01_O) $(JSON_O) $(REPORT_O) $(LESSONS_O)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# 02: rw.c holds what its client and server share, atomic.c what both
# know of the atomics; client-atomic.c the client's --op fetch-add and
# cmp-swap; lessons.c and lessons-atomic.c the client's --inject lessons.
X02_O := $(addprefix $(B)/$(EX02)/,rw.o atomic.o)
X02_CLIENT_O := $(addprefix $(B)/$(EX02)/,client.o client-atomic.o lessons.o lessons-atomic.o)
$(EX02)/rdma-server: $(B)/$(EX02)/server.o $(X02_O) $(COMMON_O)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(EX02)/rdma-client: $(X02_CLIENT_O) $(X02_O) $(COMMON_O)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# 03: what its client and server share, one file per concern: the wire
# messages (xfer-msg.c), the command lines (xfer-opts.c), file names
# (xfer-name.c), the source side, copy or zero-copy (xfer-src.c), the
# receiving end, its temporary file and commit (xfer-sink.c), the
# checksums: XXH3-128 from libxxhash, per chunk on --hash-threads threads
# (xfer-hash.c), the disk thread (xfer-disk.c), the control channel
# (xfer-ctl.c), the client's progress line (xfer-progress.c) and its
# result, printed or --json (xfer-report.c);
# auth.c the --secret proof, with libsodium.
$(B)/$(EX03)/%.o: private CPPFLAGS += -I$(XXHASH_INC) -I$(SODIUM_INC)
X03_LIBS := -L$(XXHASH_LIB) -L$(SODIUM_LIB) -lxxhash -lsodium
X03_O    := $(addprefix $(B)/$(EX03)/,xfer-msg.o xfer-opts.o xfer-name.o xfer-src.o xfer-sink.o \
	    xfer-hash.o xfer-disk.o xfer-ctl.o xfer-progress.o xfer-report.o \
	    xfer-timeline.o)
$(EX03)/rdma-server: $(B)/$(EX03)/server.o $(B)/$(EX03)/server-put.o $(B)/$(EX03)/server-get.o $(X03_O) $(B)/$(EX03)/auth.o $(COMMON_O)
	$(CC) $(LDFLAGS) -o $@ $^ $(X03_LIBS) $(LDLIBS)
# The client by step (client.h): main (client.c), the local side and the
# connection (client-setup.c), CHALLENGE/REQUEST/ACCEPT (client-request.c),
# the put's data with the disk thread (client-put.c), the get's (client-get.c).
X03_CLIENT_O := $(addprefix $(B)/$(EX03)/,client.o client-setup.o client-request.o client-put.o \
		client-get.o)
$(EX03)/rdma-client: $(X03_CLIENT_O) $(X03_O) $(B)/$(EX03)/auth.o $(COMMON_O)
	$(CC) $(LDFLAGS) -o $@ $^ $(X03_LIBS) $(LDLIBS)

# 04: 02's service on one event loop for many clients (many.h): server.c
# the loop, clients.c a client's life, pool.c the shared device, its SRQ
# pool and async events. rdma-load: N connections from one process and one
# thread, 02's exchange on each; load-conn.c is one connection's state
# machine, lessons-load.c its --inject lessons. Both speak 02's protocol:
# 02's rw.o and atomic.o.
$(B)/$(EX04)/%.o: private CPPFLAGS += -I$(EX02)
X04_SERVER_O := $(addprefix $(B)/$(EX04)/,server.o clients.o pool.o)
$(EX04)/rdma-server: $(X04_SERVER_O) $(X02_O) $(COMMON_O)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
X04_LOAD_O := $(addprefix $(B)/$(EX04)/,load.o load-conn.o lessons-load.o)
$(EX04)/rdma-load: $(X04_LOAD_O) $(X02_O) $(COMMON_O)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
# 16 of 02's clients x 10,000 fetch-adds on 04's --counter, 10 runs, one
# VM (RDMA_ENV_KERNEL=6.12|7 for another kernel): PASS when every run ends
# at exactly 160000. Not part of make test.
counter-check:
	tools/deps base
	$(MAKE) all
	tools/rdma-env $(if $(RDMA_ENV_KERNEL),--kernel $(RDMA_ENV_KERNEL)) -t 1800 -- tests/counter-check.sh

# Unit tests (cmocka): no RDMA device needed.
unit: $(UNIT_BINS)
$(B)/tests/%.o: private CPPFLAGS += -I$(CMOCKA_INC) -I$(EX01) -I$(EX02) -I$(EX03) -I$(XXHASH_INC) \
			    -I$(SODIUM_INC)
$(B)/tests/test-common: $(B)/tests/unit/test-common.o $(COMMON_O)
	$(CC) $(LDFLAGS) -L$(CMOCKA_LIB) -o $@ $^ -lcmocka $(LDLIBS)
# The set alone, no other common/ file: it must stay RDMA only and link on
# its own. test-rdma-counters: the set with rc-counters.c, the opt-in.
$(B)/tests/test-rdma-alone: $(B)/tests/unit/test-rdma-alone.o $(SET_O)
	$(CC) $(LDFLAGS) -L$(CMOCKA_LIB) -o $@ $^ -lcmocka $(LDLIBS)
$(B)/tests/test-rdma-counters: $(B)/tests/unit/test-rdma-counters.o $(RDMA_O)
	$(CC) $(LDFLAGS) -L$(CMOCKA_LIB) -o $@ $^ -lcmocka $(LDLIBS)
$(B)/tests/test-basic: $(B)/tests/unit/test-basic.o $(B)/$(EX01)/basic.o $(B)/$(EX01)/cm-event.o \
		      $(B)/$(EX01)/inline.o $(COMMON_O)
	$(CC) $(LDFLAGS) -L$(CMOCKA_LIB) -o $@ $^ -lcmocka $(LDLIBS)
$(B)/tests/test-rw: $(B)/tests/unit/test-rw.o $(B)/$(EX02)/rw.o $(COMMON_O)
	$(CC) $(LDFLAGS) -L$(CMOCKA_LIB) -o $@ $^ -lcmocka $(LDLIBS)
$(B)/tests/test-rw-atomic: $(B)/tests/unit/test-rw-atomic.o $(X02_O) $(COMMON_O)
	$(CC) $(LDFLAGS) -L$(CMOCKA_LIB) -o $@ $^ -lcmocka $(LDLIBS)
$(B)/tests/test-xfer: $(B)/tests/unit/test-xfer.o $(X03_O) $(COMMON_O)
	$(CC) $(LDFLAGS) -L$(CMOCKA_LIB) -L$(XXHASH_LIB) -o $@ $^ -lcmocka -lxxhash $(LDLIBS)
$(B)/tests/test-xfer-opts: $(B)/tests/unit/test-xfer-opts.o $(X03_O) $(COMMON_O)
	$(CC) $(LDFLAGS) -L$(CMOCKA_LIB) -L$(XXHASH_LIB) -o $@ $^ -lcmocka -lxxhash $(LDLIBS)
$(B)/tests/test-xfer-file: $(B)/tests/unit/test-xfer-file.o $(X03_O) $(COMMON_O)
	$(CC) $(LDFLAGS) -L$(CMOCKA_LIB) -L$(XXHASH_LIB) -o $@ $^ -lcmocka -lxxhash $(LDLIBS)
$(B)/tests/test-xfer-src: $(B)/tests/unit/test-xfer-src.o $(X03_O) $(COMMON_O)
	$(CC) $(LDFLAGS) -L$(CMOCKA_LIB) -L$(XXHASH_LIB) -o $@ $^ -lcmocka -lxxhash $(LDLIBS)
$(B)/tests/test-xfer-hash: $(B)/tests/unit/test-xfer-hash.o $(X03_O) $(COMMON_O)
	$(CC) $(LDFLAGS) -L$(CMOCKA_LIB) -L$(XXHASH_LIB) -o $@ $^ -lcmocka -lxxhash $(LDLIBS)
$(B)/tests/test-xfer-timeline: $(B)/tests/unit/test-xfer-timeline.o $(X03_O) $(COMMON_O)
	$(CC) $(LDFLAGS) -L$(CMOCKA_LIB) -L$(XXHASH_LIB) -o $@ $^ -lcmocka -lxxhash $(LDLIBS)
$(B)/tests/test-auth: $(B)/tests/unit/test-auth.o $(B)/$(EX03)/auth.o $(X03_O) $(COMMON_O)
	$(CC) $(LDFLAGS) -L$(CMOCKA_LIB) -o $@ $^ -lcmocka $(X03_LIBS) $(LDLIBS)
$(B)/tests/test-allow: $(B)/tests/unit/test-allow.o $(COMMON_O)
	$(CC) $(LDFLAGS) -L$(CMOCKA_LIB) -o $@ $^ -lcmocka $(LDLIBS)

# The hostile test client (tests/e2e/06-hostile.sh): breaks the protocols of
# 01, 02 and 03 on purpose, so it links all three examples' message code.
HOSTILE := $(B)/tests/hostile
HOSTILE_O := $(addprefix $(B)/tests/,hostile.o hostile-01.o hostile-02.o hostile-03.o \
	     hostile-security.o hostile-04.o)
hostile: $(HOSTILE)
$(HOSTILE_O): $(B)/tests/%.o: tests/hostile/%.c $(B)/.flags
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<
$(HOSTILE): $(HOSTILE_O) $(B)/$(EX01)/basic.o \
	    $(B)/$(EX02)/rw.o $(X03_O) $(B)/$(EX03)/auth.o $(COMMON_O)
	$(CC) $(LDFLAGS) -o $@ $^ $(X03_LIBS) $(LDLIBS)

# A slot service and its client built from the set alone (SET_O, nothing
# else of common/): a server on one event loop, a shared device context,
# caller memory and memory windows (tests/alone/alone.h; tests/e2e/07-load.sh
# runs them).
ALONE := $(B)/tests/alone-server $(B)/tests/alone-client
alone: $(ALONE)
$(ALONE): $(B)/tests/%: $(B)/tests/alone/%.o $(SET_O)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# 03's host side natively, no RDMA (docs/performance.md), not part of make
# test. bench-hash: memcpy, pread+hash and 03's hash pool over a file in
# the page cache (`build/tests/bench-hash FILE`); bench-sink: the receiver's
# pwrite against --direct's O_DIRECT (`build/tests/bench-sink DIR [MiB]`).
BENCH_HOST := $(B)/tests/bench-hash $(B)/tests/bench-sink
bench-hash: $(B)/tests/bench-hash
bench-sink: $(B)/tests/bench-sink
$(B)/tests/bench-%.o: tests/bench-%.c $(B)/.flags
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<
$(BENCH_HOST): $(B)/tests/bench-%: $(B)/tests/bench-%.o $(X03_O) $(COMMON_O)
	$(CC) $(LDFLAGS) -o $@ $^ $(X03_LIBS) $(LDLIBS)

# Fuzzing the wire decoders with libFuzzer (clang). `make fuzz` runs each
# target for FUZZ_SECONDS on its committed seed corpus (tests/fuzz/corpus/);
# `make test` runs them briefly. New inputs found go to build/fuzz/corpus/.
FUZZ_CC      = clang
FUZZ_SECONDS = 60
FUZZ_CFLAGS  = -std=c11 -g -O1 $(WARN) -pthread -fsanitize=fuzzer-no-link,address,undefined \
	       -fno-sanitize-recover=all
FUZZ_LDFLAGS = -fsanitize=fuzzer,address,undefined -pthread
FUZZ_TARGETS := fuzz-common fuzz-basic
FUZZ_TARGETS += fuzz-rw
FUZZ_TARGETS += fuzz-xfer
FUZZ_BINS := $(addprefix $(B)/fuzz/bin/,$(FUZZ_TARGETS))
FUZZ_COMMON_O := $(patsubst $(B)/%,$(B)/fuzz/%,$(COMMON_O))
FUZZ_X03_O    := $(patsubst $(B)/%,$(B)/fuzz/%,$(X03_O))

$(B)/fuzz/%.o: %.c $(B)/.flags
	@mkdir -p $(@D)
	$(FUZZ_CC) $(CPPFLAGS) -I$(EX01) -I$(EX02) -I$(EX03) -I$(XXHASH_INC) $(FUZZ_CFLAGS) -MMD -MP -c -o $@ $<
$(B)/fuzz/bin/fuzz-common: $(B)/fuzz/tests/fuzz/fuzz-common.o $(FUZZ_COMMON_O)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_LDFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(B)/fuzz/bin/fuzz-basic: $(B)/fuzz/tests/fuzz/fuzz-basic.o $(B)/fuzz/$(EX01)/basic.o \
			  $(FUZZ_COMMON_O)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_LDFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(B)/fuzz/bin/fuzz-rw: $(B)/fuzz/tests/fuzz/fuzz-rw.o $(B)/fuzz/$(EX02)/rw.o \
		       $(FUZZ_COMMON_O)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_LDFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(B)/fuzz/bin/fuzz-xfer: $(B)/fuzz/tests/fuzz/fuzz-xfer.o $(FUZZ_X03_O) $(FUZZ_COMMON_O)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_LDFLAGS) $(LDFLAGS) -L$(XXHASH_LIB) -o $@ $^ -lxxhash $(LDLIBS)

fuzz-build: $(FUZZ_BINS)
fuzz: fuzz-build
	tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# The two commands of the README. Each first makes sure the Debian
# packages it needs are installed (as root) or says how to install them.
test:
	tools/deps base test
	$(MAKE) all unit hostile alone fuzz-build repro-build
	FUZZ_TARGETS="$(FUZZ_TARGETS)" tests/run

# The end-to-end stages on each of Debian's kernels 6.1, 6.12 and 7.x that
# `make test` (the host's default kernel) did not cover, fetching them if
# needed (tools/rdma-env --kernel, docs/kernels.md). TEST_KERNELS="6.12 7"
# chooses the kernels.
test-kernels:
	tools/deps base test vm
	$(MAKE) all hostile alone repro-build
	tests/run-kernels

demo:
	tools/deps base
	$(MAKE) all
	tools/rdma-env -- tools/demo.sh

# Our examples against perftest and rcopy in one run (tools/bench,
# docs/performance.md). BENCH_REPS=N (default 3), BENCH_QUICK=1 (a short smoke
# run), BENCH_OUT=docs (publish the run), NODES=2 (two VMs), BENCH_KERNEL=6.12|7.
# Under loss (two VMs only): NODES=2 BENCH_LOSS=1% BENCH_ONLY=loss make bench
# (03 put/get vs perftest at 03's defaults, netem on both links); BENCH_ONLY=loss02 (or
# loss02w, loss02r) or loss01 for 02's 4 MiB x 20 and 01's round trips; BENCH_ONLY=losssweep
# for the chunk x depth sweep under loss. make bench-loss: those parts on each kernel
# (BENCH_KERNELS, default 6.1 6.12 7; BENCH_PARTS=loss re-measures 03 only), 5
# repetitions, one boot per part, and a summary (tools/bench-loss --help).
.PHONY: bench bench-loss
bench:
	tools/deps base bench
	$(MAKE) all
	tools/bench
bench-loss:
	tools/deps base bench vm
	$(MAKE) all
	tools/bench-loss

# 01 in each completion mode (--poll busy, event, adaptive) over message sizes: latency (median,
# p99) and CPU per message, both processes' and the machine's kernel time, as a table and a PNG
# (tools/polling-lab --help; docs/performance.md). LAB_QUICK=1: a smoke run. RDMA_ENV_KERNEL=K.
.PHONY: polling-lab
polling-lab:
	tools/deps base bench
	$(MAKE) all
	tools/polling-lab

# Soft-RoCE (rdma_rxe) bugs, each shown by a verbs-only reproducer between
# two VMs, or in one (rxe-odp) (tests/repro/, docs/kernels.md "Soft-RoCE
# bugs we know"); not part of make test. REPRO_KERNELS (default 6.1 6.12 7),
# REPRO_ROUNDS (default 5; repro-rxe-livelock: 12); REPRO_LOSS, REPRO_CASES,
# REPRO_READS, REPRO_WRITES, REPRO_WSIZE, REPRO_PUT_MIB and REPRO_NETEM_EXTRA: see tests/repro/*.sh.
REPRO_KERNELS = 6.1 6.12 7
REPRO_ROUNDS  = 5
REPRO_PASS    = REPRO_ROUNDS REPRO_LOSS REPRO_CASES REPRO_READS REPRO_WRITES REPRO_WSIZE REPRO_RESULTS REPRO_OLD03 REPRO_PUT_MIB REPRO_NETEM_EXTRA
.PHONY: repro repro-build repro-rxe-read-send repro-rxe-livelock reg-mr-probe repro-rxe-odp probe-rxe-mw-srq \
	inline-probe
repro: repro-rxe-read-send repro-rxe-livelock repro-rxe-odp
repro-build: $(B)/tests/rxe-read-send $(B)/tests/reg-mr-probe $(B)/tests/rxe-odp $(B)/tests/rxe-mw-srq \
	     $(B)/tests/inline-probe
$(B)/tests/rxe-read-send: $(B)/tests/repro/rxe-read-send.o
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(B)/tests/rxe-odp: $(B)/tests/repro/rxe-odp.o
	$(CC) $(LDFLAGS) -o $@ $^ -libverbs
$(B)/tests/reg-mr-probe: $(B)/tests/repro/reg-mr-probe.o
	$(CC) $(LDFLAGS) -o $@ $^ -libverbs
$(B)/tests/inline-probe: $(B)/tests/repro/inline-probe.o
	$(CC) $(LDFLAGS) -o $@ $^ -libverbs
$(B)/tests/rxe-mw-srq: $(B)/tests/repro/rxe-mw-srq.o $(B)/tests/repro/rxe-mw-srq-cases.o
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
repro-rxe-read-send: repro-build
	tools/deps base
	$(MAKE) all
	for k in $(REPRO_KERNELS); do \
		REPRO_ROUNDS=$(REPRO_ROUNDS) RDMA_ENV_PASS="$(REPRO_PASS)" \
			tools/rdma-env -n 2 --kernel $$k -t 1800 -- tests/repro/rxe-read-send.sh || exit 1; \
	done
# Repeated silent failures of rxe-read-send's mix case in one boot: does a
# node stop making progress (the watchdog's verdict)? One line per kernel.
repro-rxe-livelock: repro-build
	tools/deps base
	$(MAKE) all
	REPRO_KERNELS="$(REPRO_KERNELS)" tests/repro/rxe-livelock.sh

# What max_inline_data the device grants an RC QP for each ask from 0 to
# 1100 bytes, and which asks it refuses: 01's README "Inline sends". One VM
# per kernel of REPRO_KERNELS; not part of make test or make repro.
inline-probe: $(B)/tests/inline-probe
	for k in $(REPRO_KERNELS); do \
		tools/rdma-env --kernel $$k -t 300 -- sh -c 'uname -r; $(B)/tests/inline-probe' || exit 1; \
	done

# Which shared file mappings each kernel lets ibv_reg_mr register (read-only
# and read-write, ext4 on a loop device and tmpfs, with and without ODP), and
# the device's odp_caps: the table in 03's README. One VM per kernel of
# REPRO_KERNELS; not part of make test or make repro.
reg-mr-probe: repro-build
	tools/deps base
	for k in $(REPRO_KERNELS); do \
		tools/rdma-env --kernel $$k -t 300 -- tests/repro/reg-mr-probe.sh || exit 1; \
	done

# Does data the NIC READs into, or WRITEs into, an ODP mapping of a file
# arrive (ext4, tmpfs, the VM's overlay)? One line per case and kernel of
# REPRO_KERNELS (only 7.x's rxe has ODP); not part of make test or make repro.
repro-rxe-odp: repro-build
	tools/deps base
	for k in $(REPRO_KERNELS); do \
		REPRO_ROUNDS=$(REPRO_ROUNDS) RDMA_ENV_PASS="$(REPRO_PASS)" \
			tools/rdma-env --kernel $$k -t 600 -- tests/repro/rxe-odp.sh || exit 1; \
	done

# What Soft-RoCE does with type 2 memory windows, an SRQ, a full CQ, async
# events, a link flap and bursts of connects (cmtime too): the facts behind
# 04_many-clients (docs/kernels.md, "Memory windows, SRQ, async events").
# One VM per kernel of REPRO_KERNELS; not part of make test or make repro.
probe-rxe-mw-srq: repro-build
	tools/deps base
	for k in $(REPRO_KERNELS); do \
		tools/rdma-env --kernel $$k -t 1200 -- tests/repro/rxe-mw-srq.sh || exit 1; \
	done

# Every --inject lesson, with what it shows and why, in the Soft-RoCE environment: one PASS/FAIL
# line per lesson (tools/lessons; the lessons are listed there).
.PHONY: lessons
lessons:
	tools/deps base
	$(MAKE) all
	tools/rdma-env -- tools/lessons

# Is this machine ready for RDMA? One line per check, with the fix for each failure.
check-env:
	tools/rdma-check

# Do 01, 02 and 03 work over RDMA here? One PASS/FAIL row per check. Between
# two hosts: tools/smoke --server on one, tools/smoke --client HOST on the other.
.PHONY: smoke
smoke:
	tools/deps base
	$(MAKE) all
	tools/rdma-env -- tools/smoke --local

# Regenerate s.txt from a real demo run.
transcript:
	tools/deps base
	$(MAKE) all
	tools/transcript.sh

format:
	clang-format -i $(SRCS)
check-format:
	clang-format --dry-run --Werror $(SRCS)

clean:
	rm -rf $(B) $(BINS)

-include $(wildcard $(B)/*/*.d $(B)/*/*/*.d $(B)/*/*/*/*.d)
