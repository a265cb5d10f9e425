/*
 * client.h - scratchstat's side of the protocol: HTTP GETs over scratchd's
 * Unix socket (libcurl), JSON answers, and starting scratchd when none
 * answers. Every scratchstat command uses it; it prints nothing on stdout.
 *
 * Use: client_setup() once (main does, from the command line's --socket,
 * --run-dir and --no-start), then any of the GETs, then client_cleanup().
 * Paths are the daemon's (serve.c): "/v1/processes", "/v1/processes/PID",
 * ".../trace?since=1", "/metrics". Every function returns one of the exit
 * statuses below, so a command can return what it got; problems are said
 * on stderr with client_say() before they are returned, except
 * EX_NOPROC (HTTP 404), which the caller words ("no such process: PID").
 * Not thread-safe: one command, one thread.
 */
#ifndef SCRATCH_STATS_CLIENT_H
#define SCRATCH_STATS_CLIENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Exit statuses of scratchstat, see scratchstat(1). */
enum {
	EX_OK = 0,       /* done */
	EX_NOPROC = 1,   /* no such process (the daemon answered 404) */
	EX_USAGE = 2,    /* bad command line */
	EX_NODAEMON = 3, /* no scratchd answers (and none could be started) */
	EX_FAIL = 4,     /* anything else: a bad answer, output that failed */
};

struct client_conf {
	const char *socket;  /* the daemon's socket */
	const char *run_dir; /* the run directory: where a started scratchd watches and logs */
	bool may_start;      /* start scratchd (detached) when nothing answers */
	/* when !may_start, why, for the message: "--no-start" */
	const char *why_not;
};

/* Copy conf and set up libcurl. Call once, before any other function. */
void client_setup(const struct client_conf *conf);
void client_cleanup(void);

/*
 * GET path and parse the answer as JSON into *ret (the caller's, to
 * json_decref) when it returns EX_OK. Starts scratchd and retries once
 * when nothing answers and client_conf.may_start. EX_NOPROC: 404, *ret
 * untouched; EX_FAIL: another status or a body that is not JSON.
 */
int client_get_json(const char *path, json_t **ret);

/*
 * GET path as text: *ret_body (malloc'd, NUL-terminated, the caller
 * frees; NULL for an empty body) and the HTTP status in *ret_status.
 * Never starts the daemon. EX_OK whatever the status; EX_NODAEMON when
 * nothing answers.
 */
int client_get_text(const char *path, char **ret_body, long *ret_status);

/*
 * GET path as a stream of NDJSON lines (a trace with follow=1): line() is
 * called with each complete line parsed as JSON (borrowed: decref'd after
 * the call); a non-zero return stops the stream (EX_OK then). No time
 * limit. An answer other than 200 is not a stream: it is returned whole
 * in *ret_body (malloc'd or NULL, the caller frees) with its status.
 */
typedef int (*client_line_fn)(json_t *line, void *ctx);
int client_stream(const char *path, client_line_fn line, void *ctx, long *ret_status,
                  char **ret_body);

/* "scratchstat: message" on stderr, controls masked (text_log). */
void client_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* SCRATCH_STATS_CLIENT_H */
