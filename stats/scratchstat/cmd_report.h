/*
 * cmd_report.h - `scratchstat report PID [-o FILE] [--for SECONDS |
 * --no-audit]`: attach a locality audit (audit.h) for a while, fetch what
 * scratchd knows about PID (client.h), symbolize its growths, and write
 * the HTML page of report.h to FILE atomically (a temporary file beside
 * it, renamed over it once complete), or to standard output for "-".
 */
#ifndef SCRATCH_STATS_CMD_REPORT_H
#define SCRATCH_STATS_CMD_REPORT_H

#include "views.h"

/* The default output file when no -o is given (printf format of the pid). */
#define CMD_REPORT_DEFAULT_NAME "scratch-report-%d.html"

/* How long the audit samples without --for (audit.h's default). */
#define CMD_REPORT_AUDIT_SECONDS 5

/*
 * The report of r->pid, to r->output ("-": standard output; NULL: the
 * default name, then said on stderr). Unless r->no_audit, first an
 * attach-mode audit of r->audit_for seconds (0: CMD_REPORT_AUDIT_SECONDS;
 * SIGINT or SIGTERM ends it early), then scratchd's data, so the history
 * covers the audit's window; an audit that cannot be made (the process
 * exited, another user's, a refusal) is said on stderr and in the page,
 * and the rest of the report is still written. Returns an exit status of
 * client.h; on failure no file is left at the output, nor a temporary one.
 */
int cmd_report(const struct view_req *r);

#endif /* SCRATCH_STATS_CMD_REPORT_H */
