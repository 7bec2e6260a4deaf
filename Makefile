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

CC       ?= gcc
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

B := build

EX01      := 01_basic-client-server
EX01_BINS := $(EX01)/rdma-server $(EX01)/rdma-client
UNIT_BINS := $(B)/tests/test-common $(B)/tests/test-basic

.PHONY: all $(EX01) unit clean distclean test demo format check-format deps FORCE
all: $(EX01)

$(EX01): $(EX01_BINS)

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

COMMON_O := $(B)/common/rdma-common.o

$(EX01)/rdma-server: $(B)/$(EX01)/server.o $(B)/$(EX01)/basic.o $(COMMON_O)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(EX01)/rdma-client: $(B)/$(EX01)/client.o $(B)/$(EX01)/basic.o $(COMMON_O)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# Unit tests (cmocka): no RDMA device needed.
unit: $(UNIT_BINS)
$(B)/tests/%.o: CPPFLAGS += -I$(CMOCKA_INC) -I$(EX01)
$(B)/tests/test-common: $(B)/tests/unit/test-common.o $(COMMON_O)
	$(CC) $(LDFLAGS) -L$(CMOCKA_LIB) -o $@ $^ -lcmocka $(LDLIBS)
$(B)/tests/test-basic: $(B)/tests/unit/test-basic.o $(B)/$(EX01)/basic.o $(COMMON_O)
	$(CC) $(LDFLAGS) -L$(CMOCKA_LIB) -o $@ $^ -lcmocka $(LDLIBS)

# The two commands of the README. Each first makes sure the Debian
# packages it needs are installed (as root) or says how to install them.
deps:
	tools/deps base

test: deps
	$(MAKE) all unit
	tests/run

demo: deps
	$(MAKE) all
	tools/rdma-env -- tools/demo.sh

format:
	clang-format -i common/*.[ch] $(EX01)/*.[ch] tests/unit/*.c
check-format:
	clang-format --dry-run --Werror common/*.[ch] $(EX01)/*.[ch] tests/unit/*.c

clean:
	rm -rf $(B) $(EX01_BINS)

-include $(wildcard $(B)/*/*.d $(B)/*/*/*.d)
