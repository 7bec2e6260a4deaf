/* SPDX-License-Identifier: MIT */
/* What every libFuzzer target of tests/fuzz/ shares. */
#ifndef RDMA_EXAMPLES_FUZZ_H
#define RDMA_EXAMPLES_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* A property the decoders promise: breaking it is a crash libFuzzer
 * reports with the input, even in a build without assert(). */
#define CHECK(x)                          \
	do {                              \
		if (!(x))                 \
			__builtin_trap(); \
	} while (0)

/* The entry point libFuzzer calls with each input. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
