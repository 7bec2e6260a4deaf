// SPDX-License-Identifier: MIT
/*
 * xfer-name.c - 03's file names: which names the server accepts, and how
 * an untrusted name is quoted in messages. See xfer-name.h.
 */
#define _GNU_SOURCE
#include "xfer-name.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "xfer-msg.h" /* XFER_NAME_MAX */

/* ------------------------------------------------------------------ */
/* Names                                                               */
/* ------------------------------------------------------------------ */

static bool is_tmp_name(const char *name, size_t len)
{
	return len >= 6 && name[0] == '.' && !memcmp(name + len - 5, ".part", 5);
}

int xfer_name_check(const char *name, size_t len, char *err, size_t errlen)
{
	size_t i;

	if (len == 0) {
		snprintf(err, errlen, "%s", "empty file name");
		return -EINVAL;
	}
	if (len > XFER_NAME_MAX) {
		snprintf(err, errlen, "name of %zu bytes; at most %d are allowed", len,
			 XFER_NAME_MAX);
		return -EINVAL;
	}
	if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.')) {
		snprintf(err, errlen, "'%.*s' is not a file name", (int)len, name);
		return -EINVAL;
	}
	for (i = 0; i < len; i++) {
		if (name[i] == '/') {
			snprintf(err, errlen, "%s",
				 "the name contains '/': only plain file names inside the "
				 "server's directory are allowed");
			return -EINVAL;
		}
		if (name[i] == '\0') {
			snprintf(err, errlen, "%s", "the name contains a NUL byte");
			return -EINVAL;
		}
		/* Not illegal for the file system, but they would garble
		 * logs and terminals that print the name. */
		if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f) {
			snprintf(err, errlen, "%s", "the name contains control characters");
			return -EINVAL;
		}
	}
	if (is_tmp_name(name, len)) {
		snprintf(err, errlen, "%s",
			 "names of the form .*.part are reserved for files being received");
		return -EINVAL;
	}
	return 0;
}

void xfer_quote(char *out, size_t outlen, const char *s, size_t len)
{
	size_t o = 0, i;

	for (i = 0; i < len && i < 80 && o + 5 < outlen; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (ch >= 0x20 && ch < 0x7f && ch != '\\' && ch != '\'')
			out[o++] = (char)ch;
		else
			o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", ch);
	}
	if (i < len && o + 4 <= outlen) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o < outlen ? o : outlen - 1] = '\0';
}
