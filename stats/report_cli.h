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

/*
 * Write the report of pid to out ("-": standard output; NULL: the default
 * name in the current directory, which is then said on stderr). Returns
 * an exit status; on failure no file is left at out, nor a temporary one.
 */
int report_run(pid_t pid, const char *out, const struct report_io *io);

#endif /* SCRATCH_STATS_REPORT_CLI_H */
