/*
 * text.h - text in and out for people: a pid argument, sizes in human
 * units, control characters masked out of untrusted names, a log line, and
 * the reason an error carries back.
 */
#ifndef SCRATCH_STATS_TEXT_H
#define SCRATCH_STATS_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Replace every C0 control character, DEL and C1 control (U+0080-U+009F,
 * the two bytes 0xc2 0x80-0x9f in UTF-8) in s by one '?', in place: a line
 * for a log or a terminal that carries untrusted names. */
void text_mask_controls(char *s);

/* Bytes in human units into buf: "512 B", "1.5 MiB" (the largest binary
 * unit that keeps the figure >= 1). Returns buf. */
const char *text_human(uint64_t v, char *buf, size_t len);

/* A pid argument: decimal, 1 to 2^31 - 1, nothing after it. */
bool text_parse_pid(const char *s, pid_t *ret);

/* Write the reason (printf-style) into err when there is room, and return
 * -e: the locality modules' one error path. */
int text_fail(char *err, size_t errlen, int e, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

/* One line "PROG: message" on stderr, every control character of the
 * message masked (text_mask_controls): lines carry names from segments,
 * the command line and the daemon's answers. Cut at 4 KiB. */
void text_log(const char *prog, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The --version line of scratchd and scratchstat, on stdout: "PROG
 * PACKAGE_VERSION (segment format N, protocol N, backends glibc ...)", the
 * shims' backends as configure found them. */
void text_version(const char *prog);

#endif /* SCRATCH_STATS_TEXT_H */
