/*
 * views.h - scratchstat's views: each GETs its document from scratchd
 * (client.h) and prints it as a table, or as the JSON value itself with
 * --json, so the two never disagree. And the helpers a view of another
 * file (a new command) uses to read documents and print sizes the same way.
 */
#ifndef SCRATCH_STATS_VIEWS_H
#define SCRATCH_STATS_VIEWS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* What the command line asks of a view (scratchstat(1)). */
struct view_req {
	pid_t pid;
	double interval; /* PID INTERVAL [COUNT]: seconds */
	long count;      /* samples, 0: until interrupted */
	bool json;       /* --json: the JSON value, no table */
	bool follow;     /* trace --follow */
	bool frames;     /* trace --frames */
	bool limit_given;
	uint64_t since, limit; /* trace --since, --limit */
	int nargs;             /* a command's own arguments, after its name and PID */
	char **args;
	const char *output;  /* report -o */
	unsigned audit_for;  /* report --for, 0: the audit's default */
	bool no_audit;       /* report --no-audit */
	const char *run_dir; /* the run directory (the report's audit reads segments) */
};

/* The views; each returns an exit status of client.h. */
int view_processes(const struct view_req *r); /* scratchstat */
int view_threads(const struct view_req *r);   /* scratchstat PID */
int view_interval(const struct view_req *r);  /* scratchstat PID INTERVAL [COUNT] */
int view_trace(const struct view_req *r);     /* scratchstat trace PID */
int view_owners(const struct view_req *r);    /* scratchstat owners PID */
int view_history(const struct view_req *r);   /* scratchstat history PID */
int view_sizes(const struct view_req *r);     /* scratchstat sizes PID */

/* Give every record of a trace answer of pid a "site" (its symbolized
 * call site, or null) and symbolized "frames", as trace prints them. */
void view_symbolize_trace(pid_t pid, json_t *trace);

/*
 * Route stdout through a filter that prints every C0 control but the
 * newline, DEL and every C1 control as '?': tables print names from the
 * watched processes. For table output only (JSON escapes them). EX_OK or
 * EX_FAIL (said).
 */
int view_clean_stdout(void);
/* One JSON value and a newline on stdout; false when it was not written. */
bool view_put_json(const json_t *v, size_t flags);
/* A document's integer key (0 when absent or negative), its string key
 * ("" when absent). */
uint64_t view_num(const json_t *o, const char *key);
const char *view_str(const json_t *o, const char *key);

#endif /* SCRATCH_STATS_VIEWS_H */
