/*
 * main.c - scratchstat, the everyday view of scratchd's data, in the
 * habits of vmstat and pidstat: main, the command line and the dispatch
 * to a command.
 *
 *   scratchstat                         processes
 *   scratchstat PID                     PID's per-thread table
 *   scratchstat PID INTERVAL [COUNT]    totals every INTERVAL seconds, with rates
 *   scratchstat trace PID [--follow] [--since SEQ] [--frames]
 *   scratchstat owners PID | history PID
 *   scratchstat sizes PID               per size class: requests, hits, misses
 *   scratchstat report PID [-o FILE]    the HTML report (cmd_report.c)
 *   scratchstat audit ...               the locality audit (cmd_audit.c)
 *
 * The views are views.c, the HTTP client and the daemon's start client.c.
 * A new command is one line of commands[] below (its options, if any, go
 * in parse_opts and struct view_req, or it parses its own).
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "args.h"
#include "client.h"
#include "cmd_audit.h"
#include "cmd_report.h"
#include "protocol.h"
#include "rundir.h"
#include "text.h"
#include "views.h"

/*
 * The named commands, in the order usage and the messages list them. Most
 * take NAME PID [more arguments] and scratchstat's own options (run). A
 * command with a main of its own parses every argument after its name
 * itself: main finds its name past the global options, before getopt
 * sees them, and the PID-or-command check of the others leaves it out.
 */
static const struct command {
	const char *name;
	const char *usage; /* what follows the name */
	unsigned more;     /* arguments allowed after the PID (in view_req.args) */
	int (*run)(const struct view_req *r);
	int (*main)(int argc, char **argv, const struct args_global *g);
	void (*print_usage)(FILE *f, bool first); /* for a main: its usage lines */
} commands[] = {
        {"trace", "PID [--follow] [--since SEQ] [--limit N] [--frames]", 0, view_trace, NULL, NULL},
        {"owners", "PID", 0, view_owners, NULL, NULL},
        {"history", "PID", 0, view_history, NULL, NULL},
        {"sizes", "PID", 0, view_sizes, NULL, NULL},
        {"report", "PID [-o FILE] [--for SECONDS | --no-audit]", 0, cmd_report, NULL, NULL},
        {"audit", NULL, 0, NULL, cmd_audit, cmd_audit_usage}, /* reads the segment */
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static struct {
	struct view_req req;
	bool no_start;
	const char *run_dir_arg, *socket_arg;
	char run_dir[PATH_MAX];
	char socket[PATH_MAX];
} opt = {.req = {.since = 1, .limit = 100000}};

static void usage(FILE *f)
{
	fputs("usage: scratchstat [--json] [--no-start] [--run-dir DIR] [--socket PATH]\n"
	      "       scratchstat [options] PID [INTERVAL [COUNT]]\n",
	      f);
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (commands[i].main != NULL)
			commands[i].print_usage(f, false); /* options of its own */
		else
			fprintf(f, "       scratchstat [options] %s %s\n", commands[i].name,
			        commands[i].usage);
}

/* report --for: whole seconds, 1 to a day. */
static int report_seconds(const char *s, unsigned *ret)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || *s == '-' || v < 1 || v > 86400) {
		client_say("invalid number for --for: '%s' (expected whole seconds, 1 to 86400)",
		           s);
		return EX_USAGE;
	}
	*ret = (unsigned)v;
	return EX_OK;
}

static int parse_opts(int argc, char **argv)
{
	static const struct option opts[] = {
	        {"json", no_argument, NULL, 'j'},
	        {"no-start", no_argument, NULL, 'n'},
	        {"run-dir", required_argument, NULL, 'd'},
	        {"socket", required_argument, NULL, 's'},
	        {"follow", no_argument, NULL, 'f'},
	        {"since", required_argument, NULL, 'S'},
	        {"limit", required_argument, NULL, 'l'},
	        {"frames", no_argument, NULL, 'F'},
	        {"output", required_argument, NULL, 'o'}, /* report */
	        {"for", required_argument, NULL, 'W'},    /* report */
	        {"no-audit", no_argument, NULL, 'A'},     /* report */
	        {"help", no_argument, NULL, 'h'},
	        {"version", no_argument, NULL, 'V'},
	        {NULL, 0, NULL, 0},
	};
	char *end;
	int c;

	while ((c = getopt_long(argc, argv, "jnd:s:fS:l:Fo:hV", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			opt.req.json = true;
			break;
		case 'n':
			opt.no_start = true;
			break;
		case 'd':
			opt.run_dir_arg = optarg;
			break;
		case 's':
			opt.socket_arg = optarg;
			break;
		case 'f':
			opt.req.follow = true;
			break;
		case 'S':
		case 'l':
			errno = 0;
			*(c == 'S' ? &opt.req.since : &opt.req.limit) = strtoull(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || *optarg == '-' || *optarg == '\0') {
				client_say(
				        "invalid number for --%s: '%s' (expected a whole number)",
				        c == 'S' ? "since" : "limit", optarg);
				return EX_USAGE;
			}
			if (c == 'l' && (opt.req.limit < 1 || opt.req.limit > 1000000)) {
				client_say(
				        "invalid number for --limit: '%s' (expected 1 to 1000000)",
				        optarg);
				return EX_USAGE;
			}
			opt.req.limit_given |= c == 'l';
			break;
		case 'F':
			opt.req.frames = true;
			break;
		case 'o':
			opt.req.output = optarg;
			break;
		case 'W':
			if (report_seconds(optarg, &opt.req.audit_for) != EX_OK)
				return EX_USAGE;
			break;
		case 'A':
			opt.req.no_audit = true;
			break;
		case 'h':
			usage(stdout);
			exit(EX_OK);
		case 'V':
			text_version("scratchstat");
			exit(EX_OK);
		default:
			usage(stderr);
			return EX_USAGE;
		}
	}
	return EX_OK;
}

/* "trace, owners, history, sizes, report": the commands that take a PID,
 * for a message. */
static const char *command_list(char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < NCOMMANDS && o < len; i++)
		if (commands[i].run != NULL)
			o += (size_t)snprintf(buf + o, len - o, "%s%s", o ? ", " : "",
			                      commands[i].name);
	return buf;
}

/* A named command's arguments: PID, then at most c->more others. */
static int parse_command(const struct command *c, int nargs, char **args, struct view_req *req)
{
	if (nargs < 2)
		client_say("%s needs a PID", args[0]);
	else if ((unsigned)nargs - 2 > c->more)
		client_say("%s takes one PID", args[0]);
	else if (!text_parse_pid(args[1], &req->pid))
		client_say("invalid PID: '%s'", args[1]);
	else {
		req->nargs = nargs - 2;
		req->args = args + 2;
		return EX_OK;
	}
	return EX_USAGE;
}

/* PID [INTERVAL [COUNT]]: the thread table, or interval lines. */
static int parse_watch(int nargs, char **args, struct view_req *req)
{
	char *end;

	if (nargs > 3) {
		client_say("a PID takes at most INTERVAL and COUNT after it");
		return EX_USAGE;
	}
	if (nargs >= 2) {
		req->interval = strtod(args[1], &end);
		if (end == args[1] || *end != '\0' ||
		    !(req->interval > 0 && req->interval <= 86400)) {
			client_say("invalid interval: '%s' (expected seconds, above 0 and at most "
			           "86400)",
			           args[1]);
			return EX_USAGE;
		}
	}
	if (nargs == 3) {
		errno = 0;
		req->count = strtol(args[2], &end, 10);
		if (errno != 0 || end == args[2] || *end != '\0' || req->count <= 0) {
			client_say("invalid count: '%s' (expected a whole number from 1)", args[2]);
			return EX_USAGE;
		}
	}
	return EX_OK;
}

/* The view the positional arguments ask for, into *ret_run, checked before
 * anything else runs. EX_OK, or EX_USAGE with the problem said. */
static int parse_request(int nargs, char **args, struct view_req *req,
                         int (**ret_run)(const struct view_req *))
{
	char list[256];

	*ret_run = view_processes;
	if (nargs == 0)
		return EX_OK;
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (commands[i].run != NULL && strcmp(args[0], commands[i].name) == 0) {
			*ret_run = commands[i].run;
			return parse_command(&commands[i], nargs, args, req);
		}
	if (!text_parse_pid(args[0], &req->pid)) {
		client_say("'%s' is neither a PID nor a command (%s)", args[0],
		           command_list(list, sizeof(list)));
		usage(stderr);
		return EX_USAGE;
	}
	*ret_run = nargs == 1 ? view_threads : view_interval;
	return parse_watch(nargs, args, req);
}

/* -o, --for and --no-audit belong to report, and --json, --follow and
 * --frames to the other commands. */
static int report_args(const struct view_req *req, int (*run)(const struct view_req *))
{
	if (run != cmd_report && (req->output != NULL || req->audit_for != 0 || req->no_audit)) {
		client_say("-o, --for and --no-audit are for report only");
		return EX_USAGE;
	}
	if (run == cmd_report && (req->json || req->follow || req->frames)) {
		client_say("report writes HTML: --json, --follow and --frames do not apply");
		return EX_USAGE;
	}
	if (req->audit_for != 0 && req->no_audit) {
		client_say("--for and --no-audit contradict each other");
		return EX_USAGE;
	}
	return EX_OK;
}

/* Whether path names <run dir>/scratchd.sock (the directories compared
 * by their real paths). */
static bool is_run_dir_socket(const char *path)
{
	char dir[PATH_MAX], real_dir[PATH_MAX], real_run[PATH_MAX];
	const char *slash = strrchr(path, '/');

	if (slash == NULL)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	if (strcmp(slash != NULL ? slash + 1 : path, PROTOCOL_SOCKET_NAME) != 0)
		return false;
	return realpath(*dir ? dir : "/", real_dir) != NULL &&
	       realpath(opt.run_dir, real_run) != NULL && strcmp(real_dir, real_run) == 0;
}

/* The command with a main of its own that the first word past the global
 * options names, and that word's index in *ret_at; NULL for any other
 * command line, which getopt then reads. */
static const struct command *own_main(int argc, char **argv, struct args_global *g, int *ret_at)
{
	int at = args_command(argc, argv, g);

	for (size_t i = 0; at > 0 && i < NCOMMANDS; i++)
		if (commands[i].main != NULL && strcmp(argv[at], commands[i].name) == 0) {
			*ret_at = at;
			return &commands[i];
		}
	return NULL;
}

int main(int argc, char **argv)
{
	const struct command *c;
	struct args_global g = {0};
	char err[PATH_MAX + 128];
	int (*run)(const struct view_req *);
	struct client_conf cc;
	struct sockaddr_un sa;
	bool bad;
	int rc, at;

	c = own_main(argc, argv, &g, &at);
	if (c != NULL)
		return c->main(argc - at, argv + at, &g);
	rc = parse_opts(argc, argv);
	if (rc == EX_OK)
		rc = parse_request(argc - optind, argv + optind, &opt.req, &run);
	if (rc == EX_OK)
		rc = report_args(&opt.req, run);
	if (rc != EX_OK)
		return rc;
	if (opt.socket_arg != NULL && strlen(opt.socket_arg) >= sizeof(sa.sun_path)) {
		client_say("socket path too long: %.200s%s (at most %zu bytes)", opt.socket_arg,
		           strlen(opt.socket_arg) > 200 ? "..." : "", sizeof(sa.sun_path) - 1);
		return EX_USAGE;
	}
	/* A daemon started here serves <run dir>/scratchd.sock: with another
	 * --socket, none is started (nor a run directory made for one). */
	rc = rundir_resolve(opt.run_dir_arg, !opt.no_start && opt.socket_arg == NULL, opt.run_dir,
	                    sizeof(opt.run_dir), err, sizeof(err));
	if (rc != 0 && opt.socket_arg == NULL) {
		client_say("%s", err);
		return rc == -ENAMETOOLONG ? EX_USAGE : EX_NODAEMON;
	}
	cc.may_start = !opt.no_start &&
	               (opt.socket_arg == NULL || (rc == 0 && is_run_dir_socket(opt.socket_arg)));
	cc.why_not = opt.no_start ? "--no-start" : "not the run directory's socket";
	snprintf(opt.socket, sizeof(opt.socket), "%s",
	         opt.socket_arg != NULL ? opt.socket_arg : opt.run_dir);
	if (opt.socket_arg == NULL)
		snprintf(opt.socket + strlen(opt.socket), sizeof(opt.socket) - strlen(opt.socket),
		         "/%s", PROTOCOL_SOCKET_NAME);
	cc.socket = opt.socket;
	cc.run_dir = opt.run_dir;
	opt.req.run_dir = opt.run_dir[0] != '\0' ? opt.run_dir : NULL;
	if (!opt.req.json && view_clean_stdout() != EX_OK)
		return EX_FAIL;
	client_setup(&cc);
	rc = run(&opt.req);
	client_cleanup();
	/* The tables and the JSON alike: output that did not all reach fd 1
	 * is an error. */
	errno = 0;
	bad = ferror(stdout) != 0;
	bad |= fflush(stdout) != 0;
	if (!opt.req.json)
		bad |= fclose(stdout) != 0;
	if (bad) {
		client_say("cannot write the output: %s", errno != 0 ? strerror(errno) : "error");
		if (rc == EX_OK)
			rc = EX_FAIL;
	}
	return rc;
}
