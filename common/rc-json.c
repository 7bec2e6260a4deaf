// SPDX-License-Identifier: MIT
/*
 * rc-json.c - a small, strict JSON writer for the clients' --json. See
 * rc-json.h.
 */
#include "rc-json.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void rc_json_init(struct rc_json *j)
{
	j->len = 0;
	j->buf[0] = '\0';
	j->depth = 0;
	j->complete = false;
	j->err = 0;
}

struct rc_json *rc_json_new(const char *program)
{
	struct rc_json *j = malloc(sizeof(*j));

	if (!j) {
		fprintf(stderr, "%s: could not write the JSON output: out of memory\n", program);
		return NULL;
	}
	rc_json_init(j);
	return j;
}

static void json_put(struct rc_json *j, const char *s, size_t n)
{
	if (j->err)
		return;
	if (n >= sizeof(j->buf) - j->len) {
		j->err = -ENOSPC;
		return;
	}
	memcpy(j->buf + j->len, s, n);
	j->len += n;
	j->buf[j->len] = '\0';
}

/* A JSON string: every byte that is not printable ASCII, '"' or '\' is
 * escaped, so the output is ASCII whatever the input's encoding. */
static void json_put_string(struct rc_json *j, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	char esc[8];

	json_put(j, "\"", 1);
	for (; *p; p++) {
		if (*p == '"' || *p == '\\') {
			esc[0] = '\\';
			esc[1] = (char)*p;
			json_put(j, esc, 2);
		} else if (*p == '\n') {
			json_put(j, "\\n", 2);
		} else if (*p == '\t') {
			json_put(j, "\\t", 2);
		} else if (*p < 0x20 || *p >= 0x7f) {
			snprintf(esc, sizeof(esc), "\\u%04x", *p);
			json_put(j, esc, 6);
		} else {
			json_put(j, (const char *)p, 1);
		}
	}
	json_put(j, "\"", 1);
}

/* Before any value: the comma and the key, checking that a key is given
 * exactly where one belongs. */
static void json_start_value(struct rc_json *j, const char *key)
{
	int d = j->depth - 1;

	if (j->err)
		return;
	if (j->complete || (d < 0 && key) || (d >= 0 && j->is_array[d] != !key)) {
		j->err = -EINVAL;
		return;
	}
	if (d < 0)
		return;
	if (j->has_values[d])
		json_put(j, ",", 1);
	j->has_values[d] = true;
	if (key) {
		json_put_string(j, key);
		json_put(j, ":", 1);
	}
}

/* After a scalar or a closed level: at depth 0 the value is complete. */
static void json_end_value(struct rc_json *j)
{
	if (!j->err && j->depth == 0)
		j->complete = true;
}

static void json_open(struct rc_json *j, const char *key, bool array)
{
	json_start_value(j, key);
	if (j->err)
		return;
	if (j->depth == RC_JSON_MAX_DEPTH) {
		j->err = -EINVAL;
		return;
	}
	json_put(j, array ? "[" : "{", 1);
	j->is_array[j->depth] = array;
	j->has_values[j->depth] = false;
	j->depth++;
}

void rc_json_object(struct rc_json *j, const char *key)
{
	json_open(j, key, false);
}

void rc_json_array(struct rc_json *j, const char *key)
{
	json_open(j, key, true);
}

void rc_json_end(struct rc_json *j)
{
	if (j->err)
		return;
	if (j->depth == 0) {
		j->err = -EINVAL;
		return;
	}
	j->depth--;
	json_put(j, j->is_array[j->depth] ? "]" : "}", 1);
	json_end_value(j);
}

/* A scalar whose text needs no escaping (numbers, true, false, null). */
static void json_scalar(struct rc_json *j, const char *key, const char *text)
{
	json_start_value(j, key);
	json_put(j, text, strlen(text));
	json_end_value(j);
}

void rc_json_str(struct rc_json *j, const char *key, const char *s)
{
	if (!s) {
		rc_json_null(j, key);
		return;
	}
	json_start_value(j, key);
	json_put_string(j, s);
	json_end_value(j);
}

void rc_json_u64(struct rc_json *j, const char *key, uint64_t v)
{
	char t[24];

	snprintf(t, sizeof(t), "%" PRIu64, v);
	json_scalar(j, key, t);
}

void rc_json_i64(struct rc_json *j, const char *key, int64_t v)
{
	char t[24];

	snprintf(t, sizeof(t), "%" PRId64, v);
	json_scalar(j, key, t);
}

void rc_json_double(struct rc_json *j, const char *key, double v)
{
	char t[32];

	/* JSON has no NaN or infinity. %.9g gives valid JSON numbers in the
	 * C locale (these programs never call setlocale). */
	if (!isfinite(v)) {
		rc_json_null(j, key);
		return;
	}
	snprintf(t, sizeof(t), "%.9g", v);
	json_scalar(j, key, t);
}

void rc_json_bool(struct rc_json *j, const char *key, bool v)
{
	json_scalar(j, key, v ? "true" : "false");
}

void rc_json_null(struct rc_json *j, const char *key)
{
	json_scalar(j, key, "null");
}

int rc_json_finish(struct rc_json *j, FILE *f)
{
	if (j->err)
		return j->err;
	if (!j->complete)
		return -EINVAL;
	if (fprintf(f, "%s\n", j->buf) < 0 || fflush(f))
		return -EIO;
	return 0;
}

void rc_json_end_run(struct rc_json *j, const char *error, int code, const char *program)
{
	rc_json_str(j, "error", error);
	rc_json_i64(j, "exit_code", code);
	rc_json_end(j);
	if (rc_json_finish(j, stdout))
		fprintf(stderr, "%s: could not write the JSON output\n", program);
}

bool rc_json_wanted(int argc, char *const argv[])
{
	int i;

	for (i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--json"))
			return true;
	return false;
}
