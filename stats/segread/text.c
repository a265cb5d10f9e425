/*
 * text.c - text in and out for people (text.h): a pid argument, sizes in
 * human units, control characters masked, a log line, an error reason,
 * the --version line.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "protocol.h"
#include "segread.h"
#include "text.h"

void text_mask_controls(char *s)
{
	char *o = s;

	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == 0xc2 && (unsigned char)s[1] >= 0x80 && (unsigned char)s[1] <= 0x9f) {
			*o++ = '?'; /* a C1 control, U+0080-U+009F in UTF-8 */
			s++;
		} else {
			*o++ = c < 0x20 || c == 0x7f ? '?' : *s;
		}
	}
	*o = '\0';
}

int text_fail(char *err, size_t errlen, int e, const char *fmt, ...)
{
	va_list ap;

	if (err != NULL && errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -e;
}

void text_log(const char *prog, const char *fmt, ...)
{
	char line[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	text_mask_controls(line);
	fprintf(stderr, "%s: %s\n", prog, line);
}

const char *text_human(uint64_t v, char *buf, size_t len)
{
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double d = (double)v;
	unsigned u = 0;

	while (d >= 1024.0 && u < 4) {
		d /= 1024.0;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%llu B", (unsigned long long)v);
	else
		snprintf(buf, len, "%.1f %s", d, unit[u]);
	return buf;
}

bool text_parse_pid(const char *s, pid_t *ret)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v <= 0 || v > 0x7fffffff)
		return false;
	*ret = (pid_t)v;
	return true;
}

void text_version(const char *prog)
{
	printf("%s %s (segment format %d, protocol %d, backends %s)\n", prog, PACKAGE_VERSION,
	       SCRATCH_SEG_VERSION, PROTOCOL_VERSION, SCRATCH_BACKENDS);
}
