/*
 * report_cli.c - `scratchstat report` (report_cli.h): fetch the process,
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

#include "common.h"
#include "report.h"
#include "report_cli.h"

struct report_data {
	json_t *proc, *history, *trace, *sizes;
};

static void data_free(struct report_data *d)
{
	json_decref(d->proc);
	json_decref(d->history);
	json_decref(d->trace);
	json_decref(d->sizes);
}

/* GET /v1/processes/PID<what> into *ret. A process that went away between
 * two requests is still "no such process". */
static int get_part(pid_t pid, const char *what, json_t **ret, const struct report_io *io)
{
	char path[128];
	int rc;

	snprintf(path, sizeof(path), "/v1/processes/%d%s", (int)pid, what);
	rc = io->get_json(path, ret);
	if (rc == REPORT_EX_NOPROC)
		io->say("no such process: %d", (int)pid);
	return rc;
}

/* Everything the page shows, the process first (it also starts scratchd
 * when needed, and tells an unknown pid before anything else runs). */
static int fetch(pid_t pid, struct report_data *d, const struct report_io *io)
{
	int rc = get_part(pid, "", &d->proc, io);

	if (rc == REPORT_EX_OK)
		rc = get_part(pid, "/history", &d->history, io);
	if (rc == REPORT_EX_OK)
		rc = get_part(pid, "/sizes", &d->sizes, io);
	/* every record scratchd keeps: its largest --trace-keep is below this */
	if (rc == REPORT_EX_OK)
		rc = get_part(pid, "/trace?since=1&limit=1000000", &d->trace, io);
	if (rc == REPORT_EX_OK)
		io->symbolize(pid, d->trace);
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
static int write_file(const char *out, const struct report_input *in, const struct report_io *io)
{
	char tmp[PATH_MAX];
	sigset_t hold, old;
	FILE *f = NULL;
	int fd, rc = REPORT_EX_FAIL, e = 0;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.XXXXXX", out) >= sizeof(tmp)) {
		io->say("cannot write %s: %s", out, strerror(ENAMETOOLONG));
		return REPORT_EX_FAIL;
	}
	sigemptyset(&hold);
	sigaddset(&hold, SIGINT);
	sigaddset(&hold, SIGTERM);
	sigaddset(&hold, SIGHUP);
	sigaddset(&hold, SIGPIPE);
	sigprocmask(SIG_BLOCK, &hold, &old);
	fd = mkstemp(tmp);
	if (fd < 0) {
		io->say("cannot write %s: %s", out, strerror(errno));
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
		io->say("cannot write %s: %s", out, strerror(e));
		unlink(tmp);
	} else {
		rc = REPORT_EX_OK;
	}
out_signals:
	sigprocmask(SIG_SETMASK, &old, NULL);
	return rc;
}

/* "-": the page on standard output, through a stream of its own (not
 * scratchstat's filtered stdout: the page escapes its own text). */
static int write_stdout(const struct report_input *in, const struct report_io *io)
{
	int fd = dup(STDOUT_FILENO);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	int e = 0;

	if (f == NULL) {
		io->say("cannot write the output: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return REPORT_EX_FAIL;
	}
	errno = 0;
	e = written(report_write(f, in));
	if (fclose(f) != 0 && e == 0)
		e = errno;
	if (e != 0) {
		io->say("cannot write the output: %s", strerror(e));
		return REPORT_EX_FAIL;
	}
	return REPORT_EX_OK;
}

int report_run(pid_t pid, const char *out, const struct report_io *io)
{
	struct report_data d = {0};
	struct report_input in;
	char name[64];
	int rc = fetch(pid, &d, io);

	if (rc != REPORT_EX_OK)
		goto out;
	in = (struct report_input){
	        .proc = d.proc,
	        .history = d.history,
	        .trace = d.trace,
	        .sizes = d.sizes,
	        .made_ns = stats_realtime_ns(),
	};
	if (out == NULL) {
		snprintf(name, sizeof(name), REPORT_DEFAULT_NAME, (int)pid);
		out = name;
	}
	if (strcmp(out, "-") == 0) {
		rc = write_stdout(&in, io);
	} else {
		rc = write_file(out, &in, io);
		if (rc == REPORT_EX_OK && out == name)
			io->say("wrote %s", name);
	}
out:
	data_free(&d);
	return rc;
}
