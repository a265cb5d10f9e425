/*
 * report_cli.h - `scratchstat report PID [-o FILE]`: fetch what scratchd
 * knows about PID, symbolize its growths, and write the HTML page of
 * report.h to FILE atomically (a temporary file beside it, renamed over it
 * once complete), or to standard output for "-".
 *
 * scratchstat's main parses the arguments and hands over its HTTP client
 * through struct report_io, so the report speaks to scratchd exactly as
 * every other command does (the daemon started when needed, the same
 * messages and exit codes).
 */
#ifndef SCRATCH_STATS_REPORT_CLI_H
#define SCRATCH_STATS_REPORT_CLI_H

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

/* scratchstat(1)'s exit status, which report_run() returns. */
enum {
	REPORT_EX_OK = 0,
	REPORT_EX_NOPROC = 1,
	REPORT_EX_USAGE = 2,
	REPORT_EX_NODAEMON = 3,
	REPORT_EX_FAIL = 4,
};

struct report_io {
	/* GET path as JSON into *ret (the caller's to decref). Returns an
	 * exit status; says what went wrong itself, except for
	 * REPORT_EX_NOPROC (a 404), which it leaves to the caller. */
	int (*get_json)(const char *path, json_t **ret);
	/* Give every record of a trace answer of pid a "site" (symbolized
	 * call site, or null) and symbolized "frames". */
	void (*symbolize)(pid_t pid, json_t *trace);
	/* One line on stderr, prefixed "scratchstat: ", controls masked. */
	void (*say)(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
};

/* The default output file when no -o is given (printf format of the pid). */
#define REPORT_DEFAULT_NAME "scratch-report-%d.html"

/* How long the audit samples without --for (audit.h's default). */
#define REPORT_AUDIT_SECONDS 5

struct report_opts {
	const char *out;     /* "-": standard output; NULL: REPORT_DEFAULT_NAME */
	bool audit;          /* attach a locality audit (audit.h) first */
	unsigned seconds;    /* for this long, 0: REPORT_AUDIT_SECONDS; SIGINT or
	                      * SIGTERM ends it early */
	const char *run_dir; /* the segments' directory, for the audit */
};

/*
 * Write the report of pid as o says (the default name, when used, is said
 * on stderr). With o->audit, first an attach-mode audit of o->seconds,
 * then scratchd's data, so the history covers the audit's window; an
 * audit that cannot be made (the process exited, another user's, a
 * refusal) is said on stderr and in the page, and the rest of the report
 * is still written. Returns an exit status; on failure no file is left at
 * o->out, nor a temporary one.
 */
int report_run(pid_t pid, const struct report_opts *o, const struct report_io *io);

#endif /* SCRATCH_STATS_REPORT_CLI_H */
