/*
 * cmd_report.c - `scratchstat report` (cmd_report.h): fetch the process,
 * its history, sizes and growth trace from scratchd, symbolize the trace,
 * render the page (report.c) and put it in place atomically.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit.h"
#include "client.h"
#include "cmd_audit.h"
#include "cmd_report.h"
#include "report.h"
#include "sys.h"

struct report_data {
	json_t *proc, *history, *trace, *sizes;
	struct audit_result audit;
	bool audited;
	char audit_none[512]; /* why there is no audit */
	char *audit_json;
};

static void data_free(struct report_data *d)
{
	json_decref(d->proc);
	json_decref(d->history);
	json_decref(d->trace);
	json_decref(d->sizes);
	if (d->audited)
		audit_result_free(&d->audit);
	free(d->audit_json);
}

/* GET /v1/processes/PID<what> into *ret. A process that went away between
 * two requests is still "no such process". */
static int get_part(pid_t pid, const char *what, json_t **ret)
{
	char path[128];
	int rc;

	snprintf(path, sizeof(path), "/v1/processes/%d%s", (int)pid, what);
	rc = client_get_json(path, ret);
	if (rc == EX_NOPROC)
		client_say("no such process: %d", (int)pid);
	return rc;
}

static volatile sig_atomic_t stop_audit;

static void on_stop(int sig)
{
	(void)sig;
	stop_audit = 1;
}

/*
 * An attach-mode audit of pid for o->audit_for seconds, as audit_collect() makes
 * one, except that SIGINT or SIGTERM ends its window early (as perf
 * record's): the report is then made from what was gathered.
 */
static int audit_window(pid_t pid, const struct view_req *o, struct audit_result *ret, char *err,
                        size_t errlen)
{
	struct audit_opts ao = {.run_dir = o->run_dir, .seconds = o->audit_for};
	struct sigaction sa = {.sa_handler = on_stop}, old_int, old_term;
	uint64_t end;
	audit_t *a;
	int rc;

	/* before the attach: a signal from then on ends the window */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	rc = audit_attach(pid, &ao, &a, err, errlen);
	if (rc == 0) {
		end = sys_mono_ns() +
		      (uint64_t)(o->audit_for ? o->audit_for : CMD_REPORT_AUDIT_SECONDS) *
		              1000000000u;
		while (!stop_audit && sys_mono_ns() < end && audit_poll(a, 100) == 0)
			;
		rc = audit_result(a, ret, err, errlen);
		audit_close(a);
	}
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	return rc;
}

/*
 * The audit, into d (audited), or why not into d->audit_none. An audit
 * that cannot be made does not fail the report: it is said, on stderr and
 * in the page.
 */
static void audit(pid_t pid, const struct view_req *o, struct report_data *d)
{
	char err[512];
	json_t *j;
	int rc;

	if (o->no_audit) {
		snprintf(d->audit_none, sizeof(d->audit_none), "not asked for (--no-audit)");
		return;
	}
	rc = audit_window(pid, o, &d->audit, err, sizeof(err));
	if (rc != 0) {
		snprintf(d->audit_none, sizeof(d->audit_none), "%s",
		         rc == -ESRCH ? "the process is not running (an audit attaches to a live "
		                        "process)"
		                      : err);
		client_say("no audit in the report: %s", d->audit_none);
		return;
	}
	d->audited = true;
	j = cmd_audit_json(&d->audit);
	/* the page is the audit's rendering; the data block is a bonus */
	d->audit_json = j != NULL ? json_dumps(j, JSON_COMPACT | JSON_ESCAPE_SLASH) : NULL;
	json_decref(j);
}

/* Everything the page shows, the process first (it also starts scratchd
 * when needed, and tells an unknown pid before anything else runs). The
 * audit runs between the two, so scratchd's history covers its window. */
static int fetch(pid_t pid, const struct view_req *o, struct report_data *d)
{
	int rc = get_part(pid, "", &d->proc);
	const char *state;

	if (rc != EX_OK)
		return rc;
	state = json_string_value(json_object_get(d->proc, "state"));
	if (!o->no_audit && (state == NULL || strcmp(state, "live") != 0)) {
		snprintf(d->audit_none, sizeof(d->audit_none),
		         "the process had exited (an audit attaches to a live process)");
		client_say("no audit in the report: %s", d->audit_none);
	} else {
		audit(pid, o, d);
	}
	json_decref(d->proc);
	d->proc = NULL;
	rc = get_part(pid, "", &d->proc);
	if (rc == EX_OK)
		rc = get_part(pid, "/history", &d->history);
	if (rc == EX_OK)
		rc = get_part(pid, "/sizes", &d->sizes);
	/* every record scratchd keeps: its largest --trace-keep is below this */
	if (rc == EX_OK)
		rc = get_part(pid, "/trace?since=1&limit=1000000", &d->trace);
	if (rc == EX_OK)
		view_symbolize_trace(pid, d->trace);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* Atomic output                                                           */
/* ---------------------------------------------------------------------- */

/* The errno of a report_write() result: the stream's own (ENOSPC, EPIPE...)
 * when it set one, else what report_write() said. */
static int written(int rc)
{
	if (rc == 0)
		return 0;
	return rc == -EIO && errno != 0 ? errno : -rc;
}

/* The mode a file created by open(2) with 0666 would get. */
static mode_t file_mode(void)
{
	mode_t mask = umask(0);

	umask(mask);
	return 0666 & ~mask;
}

/*
 * Render into a temporary file beside out, then rename it over out. The
 * signals that end a CLI are held from the temporary file's creation to
 * its rename or removal, so an interrupted run leaves either the complete
 * page or nothing.
 */
static int write_file(const char *out, const struct report_input *in)
{
	char tmp[PATH_MAX];
	sigset_t hold, old;
	FILE *f = NULL;
	int fd, rc = EX_FAIL, e = 0;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.XXXXXX", out) >= sizeof(tmp)) {
		client_say("cannot write %s: %s", out, strerror(ENAMETOOLONG));
		return EX_FAIL;
	}
	sigemptyset(&hold);
	sigaddset(&hold, SIGINT);
	sigaddset(&hold, SIGTERM);
	sigaddset(&hold, SIGHUP);
	sigaddset(&hold, SIGPIPE);
	sigprocmask(SIG_BLOCK, &hold, &old);
	fd = mkstemp(tmp);
	if (fd < 0) {
		client_say("cannot write %s: %s", out, strerror(errno));
		goto out_signals;
	}
	f = fdopen(fd, "w");
	errno = 0;
	if (f == NULL || fchmod(fd, file_mode()) != 0)
		e = errno;
	else
		e = written(report_write(f, in));
	if (f != NULL && fclose(f) != 0 && e == 0)
		e = errno;
	if (f == NULL)
		close(fd);
	if (e == 0 && rename(tmp, out) != 0)
		e = errno;
	if (e != 0) {
		client_say("cannot write %s: %s", out, strerror(e));
		unlink(tmp);
	} else {
		rc = EX_OK;
	}
out_signals:
	sigprocmask(SIG_SETMASK, &old, NULL);
	return rc;
}

/* "-": the page on standard output, through a stream of its own (not
 * scratchstat's filtered stdout: the page escapes its own text). */
static int write_stdout(const struct report_input *in)
{
	int fd = dup(STDOUT_FILENO);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	int e = 0;

	if (f == NULL) {
		client_say("cannot write the output: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return EX_FAIL;
	}
	errno = 0;
	e = written(report_write(f, in));
	if (fclose(f) != 0 && e == 0)
		e = errno;
	if (e != 0) {
		client_say("cannot write the output: %s", strerror(e));
		return EX_FAIL;
	}
	return EX_OK;
}

int cmd_report(const struct view_req *o)
{
	struct report_data d = {0};
	struct report_input in;
	const char *out = o->output;
	pid_t pid = o->pid;
	char name[64];
	int rc = fetch(pid, o, &d);

	if (rc != EX_OK)
		goto out;
	in = (struct report_input){
	        .proc = d.proc,
	        .history = d.history,
	        .trace = d.trace,
	        .sizes = d.sizes,
	        .audit = d.audited ? &d.audit : NULL,
	        .audit_none = d.audit_none,
	        .audit_json = d.audit_json,
	        .made_ns = sys_realtime_ns(),
	};
	if (out == NULL) {
		snprintf(name, sizeof(name), CMD_REPORT_DEFAULT_NAME, (int)pid);
		out = name;
	}
	if (strcmp(out, "-") == 0) {
		rc = write_stdout(&in);
	} else {
		rc = write_file(out, &in);
		if (rc == EX_OK && out == name)
			client_say("wrote %s", name);
	}
out:
	data_free(&d);
	return rc;
}
