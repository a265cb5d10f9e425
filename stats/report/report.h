/*
 * report.h - scratchstat's HTML report: one self-contained page (inline CSS
 * and SVG, no script, nothing loaded from anywhere) rendered from what
 * scratchd serves about one process.
 *
 * The page holds the process header (exe, command line, configuration),
 * its totals, the per-thread table, retained and leased bytes over time
 * (process totals and per thread, from the history), the growth timeline
 * per thread with call sites, the per size class table, and the locality
 * audit's node matrix and findings when an audit was collected. Every
 * element that names a thread carries data-tid; every finding is an
 * element of class "finding", so a test (or a script of the user's) can
 * find them in the DOM; the audit's JSON document itself is embedded as
 * <script type="application/json" id="audit-json"> (a data block, never
 * run, with every '<', '>' and '&' escaped so it cannot end its element).
 */
#ifndef SCRATCH_STATS_REPORT_H
#define SCRATCH_STATS_REPORT_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "audit.h"

/*
 * The answers the page is made from, as scratchd served them (the JSON
 * keys of serve.c). proc is required; any other may be NULL, and the page
 * then says that part is missing rather than leaving a hole.
 */
struct report_input {
	const json_t *proc;               /* GET /v1/processes/PID: header, totals, thread_table */
	const json_t *history;            /* GET /v1/processes/PID/history: samples, oldest first,
	                        * each with "threads" when scratchd keeps them */
	const json_t *trace;              /* GET /v1/processes/PID/trace, every record with
	                        * "site" (symbolized by the caller, null if none) */
	const json_t *sizes;              /* GET /v1/processes/PID/sizes */
	const struct audit_result *audit; /* NULL: no audit was collected */
	const char *audit_none;           /* then why, for the page ("" or NULL: unsaid) */
	const char *audit_json;           /* the audit as JSON text (cmd_audit_json()), embedded
	                                   * for scripts as a data block; NULL: none */
	uint64_t made_ns;                 /* when the report was made, CLOCK_REALTIME */
};

/* At most this many growth records are listed in the page's table (the
 * timeline draws them all); the page says how many it left out. */
#define REPORT_MAX_ROWS 1000

/*
 * Write the page to f. Returns 0, or -EIO when f reported a write error
 * (the caller then discards the output). Does not close f.
 */
int report_write(FILE *f, const struct report_input *in);

#endif /* SCRATCH_STATS_REPORT_H */
