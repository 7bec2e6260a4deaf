// SPDX-License-Identifier: MIT
/*
 * test-xfer-timeline.c - 03's -v timeline (xfer-timeline.c): what it
 * records when on and off, and the line it prints.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "xfer-timeline.h"

/* -v's timeline: off reads no clock and records nothing; on, the spans,
 * the rate, the mean in flight and each wait come out as recorded. */
static void timeline_spans_and_waits(void **state)
{
	struct xfer_timeline tl;
	char line[512];
	uint64_t t;

	(void)state;
	xfer_tl_start(&tl, false, 5);
	assert_int_equal(xfer_tl_now(&tl), 0);
	xfer_tl_data(&tl, 3);
	xfer_tl_waited(&tl, XFER_WAIT_LINK, 0);
	assert_int_equal(tl.first_ns, 0);
	assert_int_equal(tl.waits[XFER_WAIT_LINK], 0);
	xfer_tl_format(&tl, 100, 16, line, sizeof(line));
	assert_string_equal(line, "timeline: no data moved");

	/* On: 4 in flight from the first data event to the second. */
	t = 1000;
	xfer_tl_start(&tl, true, t);
	xfer_tl_data(&tl, 4);
	xfer_tl_data(&tl, 0);
	assert_true(tl.first_ns >= t);
	assert_true(tl.last_ns >= tl.first_ns);
	assert_int_equal(tl.inflight_area, 4 * (tl.last_ns - tl.first_ns));
	t = xfer_tl_now(&tl);
	assert_true(t >= tl.last_ns);
	xfer_tl_waited(&tl, XFER_WAIT_DISK, t);
	assert_int_equal(tl.waits[XFER_WAIT_DISK], 1);

	/* The format, from figures set by hand: 1 ms before, 2 MiB in
	 * 1 s of data with 8 of 16 in flight on average, 3 ms after. */
	tl = (struct xfer_timeline){ .on = true,
				     .t0_ns = 0,
				     .first_ns = 1000000,
				     .last_ns = 1001000000,
				     .end_ns = 1004000000,
				     .inflight_area = 8000000000ull };
	tl.wait_ns[XFER_WAIT_LINK] = 900000000;
	tl.waits[XFER_WAIT_LINK] = 12;
	tl.wait_ns[XFER_WAIT_PEER] = 50000000;
	tl.waits[XFER_WAIT_PEER] = 2;
	xfer_tl_format(&tl, 2 * 1048576, 16, line, sizeof(line));
	assert_string_equal(line,
			    "timeline: 1.0 ms before the first data, data 1000.0 ms (2.0 MiB/s, "
			    "8.0 of 16 in flight on average), 3.0 ms after; blocked: link "
			    "900.0 ms (12), peer 50.0 ms (2), disk 0.0 ms (0), end 0.0 ms (0)");
	/* The passive side (depth 0) has no in-flight figure; a short
	 * buffer is cut, never overrun. */
	xfer_tl_format(&tl, 2 * 1048576, 0, line, sizeof(line));
	assert_null(strstr(line, "in flight"));
	xfer_tl_format(&tl, 2 * 1048576, 16, line, 20);
	assert_int_equal(strlen(line), 19);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(timeline_spans_and_waits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
