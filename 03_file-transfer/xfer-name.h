/* SPDX-License-Identifier: MIT */
/*
 * xfer-name.h - 03's file names: the rules for the names a client may
 * send, and quoting an untrusted name for messages.
 */
#ifndef XFER_NAME_H
#define XFER_NAME_H

#include <stddef.h>

/*
 * Is name[0..len) a plain file name the server may use inside its root
 * directory? Refuses: empty, longer than 255 bytes, "." and "..", any '/',
 * NUL or control character, and names of our temporary files (.*.part).
 * 0 or -EINVAL with the reason in err.
 */
int xfer_name_check(const char *name, size_t len, char *err, size_t errlen);

/* Quote an untrusted name for messages: printable bytes as is, others as
 * \xNN, at most about 80 input bytes. */
void xfer_quote(char *out, size_t outlen, const char *s, size_t len);

#endif /* XFER_NAME_H */
