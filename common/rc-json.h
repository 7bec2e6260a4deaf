/* SPDX-License-Identifier: MIT */
/*
 * rc-json.h - the clients' --json output: one object for automation,
 * printed whole or not at all. Nothing here touches RDMA. Hand-written, not
 * json-c or jansson: commit f637aef's message has the comparison (non-UTF-8
 * names, NaN, UINT64_MAX, never half an object).
 */
#ifndef RC_JSON_H
#define RC_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define RC_JSON_MAX	  32768 /* the whole text, at most */
#define RC_JSON_MAX_DEPTH 8	/* objects and arrays nested, at most */

/*
 * A small, strict JSON writer. The text is built in memory and printed by
 * rc_json_finish() only if it is one complete, well-formed value, so a
 * program never prints half an object. Inside an object every value needs
 * a key; inside an array and at the top, key must be NULL. Strings are
 * escaped byte by byte: '"', '\\', control characters and every byte
 * >= 0x7f become escapes (non-ASCII bytes as \u00XX), so any input, e.g. a
 * file name in any encoding, gives valid ASCII JSON. NaN and infinities,
 * which JSON cannot express, become null. The first misuse (a missing or
 * unexpected key, too deep, too long, an end without a start) is kept in
 * err and makes every later call a no-op.
 */
struct rc_json {
	char buf[RC_JSON_MAX]; /* NUL-terminated text so far */
	size_t len;
	int depth;			    /* open objects and arrays */
	bool is_array[RC_JSON_MAX_DEPTH];   /* of each open level */
	bool has_values[RC_JSON_MAX_DEPTH]; /* a comma goes before the next */
	bool complete;			    /* the top-level value is closed */
	int err;			    /* 0, -EINVAL (misuse) or -ENOSPC */
};

void rc_json_init(struct rc_json *j);
/* A writer of its own on the heap, initialised (32 KiB: too big for a
 * thread's stack, and a static one would be shared by every caller);
 * free() it after rc_json_finish. NULL when out of memory, after
 * "PROGRAM: could not write the JSON output: out of memory" on stderr. */
struct rc_json *rc_json_new(const char *program);
/* Open an object / array as a value (key as for any value); close the
 * innermost one with rc_json_end. */
void rc_json_object(struct rc_json *j, const char *key);
void rc_json_array(struct rc_json *j, const char *key);
void rc_json_end(struct rc_json *j);
/* Values. rc_json_str with s == NULL writes null. */
void rc_json_str(struct rc_json *j, const char *key, const char *s);
void rc_json_u64(struct rc_json *j, const char *key, uint64_t v);
void rc_json_i64(struct rc_json *j, const char *key, int64_t v);
void rc_json_double(struct rc_json *j, const char *key, double v);
void rc_json_bool(struct rc_json *j, const char *key, bool v);
void rc_json_null(struct rc_json *j, const char *key);
/* Write the text and a newline to f, if it is one complete value.
 * Returns 0, j->err, -EINVAL if a level is still open or nothing was
 * written, or -EIO if writing failed. */
int rc_json_finish(struct rc_json *j, FILE *f);
/* The tail of a client's --json object: "error" (NULL: null) and
 * "exit_code", close the object, print it on stdout; if that fails,
 * "PROGRAM: could not write the JSON output" on stderr. */
void rc_json_end_run(struct rc_json *j, const char *error, int code, const char *program);
/* Is "--json" among the arguments (before a "--")? Lets a client answer a
 * usage error in JSON too, although its options could not be parsed. */
bool rc_json_wanted(int argc, char *const argv[]);

#endif /* RC_JSON_H */
