/*
 * report_int.h - what the files of the HTML report share, private to
 * stats/report/: the locality section, which report_write() places in the
 * page, and the helpers every section prints text and sizes with.
 */
#ifndef SCRATCH_STATS_REPORT_INT_H
#define SCRATCH_STATS_REPORT_INT_H

#include <stdint.h>
#include <stdio.h>

#include "audit.h"

/* The locality section (locality.c): a, or why_none when a is NULL, and
 * json (NULL: none) as the embedded data block. */
void locality_section(FILE *f, const struct audit_result *a, const char *why_none,
                      const char *json);

/* s as HTML text (html_text()), up to its NUL (report.c). */
void report_text(FILE *f, const char *s);

/* v bytes in human units ("1.5 MiB", text_human()) (report.c). */
void report_bytes(FILE *f, uint64_t v);

#endif /* SCRATCH_STATS_REPORT_INT_H */
