/*
 * scratchstat.c - the everyday view of scratchd's data, in the habits of
 * vmstat and pidstat.
 *
 *   scratchstat                         processes
 *   scratchstat PID                     PID's per-thread table
 *   scratchstat PID INTERVAL [COUNT]    totals every INTERVAL seconds, with rates
 *   scratchstat trace PID [--follow] [--since SEQ] [--frames]
 *   scratchstat owners PID | history PID
 *   scratchstat sizes PID               per size class: requests, hits, misses
 *   scratchstat report PID [-o FILE]    the HTML report (report_cli.c)
 *
 * Every view is one JSON value (what scratchd served, plus symbolized call
 * sites for traces); --json prints that value, the table is rendered from
 * the same value, so the two never disagree. Talks HTTP over the Unix
 * socket with libcurl and starts scratchd (detached) when none answers,
 * unless --no-start.
 */
#include "config.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "audit_cli.h"
#include "common.h"
#include "report_cli.h"
#include "symbols.h"

/* Exit status: see scratchstat(1). */
enum {
	EX_OK = 0,
	EX_NOPROC = 1,
	EX_USAGE = 2,
	EX_NODAEMON = 3,
	EX_FAIL = 4,
};

static struct {
	bool json, no_start, follow, frames, verbose;
	bool may_start; /* no --no-start, and the socket is the run directory's */
	bool limit_given;
	uint64_t since, limit;
	const char *run_dir_arg, *socket_arg;
	const char *output; /* report -o */
	unsigned audit_for; /* report --for, 0: the audit's default */
	bool no_audit;      /* report --no-audit */
	char run_dir[PATH_MAX];
	char socket[PATH_MAX];
} opt = {.since = 1, .limit = 100000};

__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...)
{
	char line[PATH_MAX + 512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* Arguments and the daemon's answers are quoted here: none of their
	 * control characters reaches the terminal. */
	stats_mask_controls(line);
	fprintf(stderr, "scratchstat: %s\n", line);
}

/* ---------------------------------------------------------------------- */
/* HTTP over the Unix socket                                               */
/* ---------------------------------------------------------------------- */

struct body {
	char *p;
	size_t len;
	/* follow mode: called per complete line instead of buffering */
	int (*line)(json_t *j, void *ctx);
	void *ctx;
	int line_rc;
	CURL *curl; /* follow mode: an answer other than 200 is buffered whole */
};

static size_t on_data(char *data, size_t size, size_t n, void *arg)
{
	struct body *b = arg;
	size_t len = size * n;
	char *nb = realloc(b->p, b->len + len + 1);

	if (nb == NULL)
		return 0;
	b->p = nb;
	memcpy(b->p + b->len, data, len);
	b->len += len;
	b->p[b->len] = '\0';
	if (b->line != NULL && b->curl != NULL) {
		long status = 0;

		curl_easy_getinfo(b->curl, CURLINFO_RESPONSE_CODE, &status);
		if (status != 200)
			b->line = NULL; /* an error, not a stream of records */
		b->curl = NULL;
	}
	if (b->line == NULL)
		return len;
	for (char *nl; (nl = memchr(b->p, '\n', b->len)) != NULL;) {
		json_t *j;

		*nl = '\0';
		j = nl > b->p ? json_loads(b->p, 0, NULL) : NULL;
		memmove(b->p, nl + 1, b->len - (size_t)(nl + 1 - b->p));
		b->len -= (size_t)(nl + 1 - b->p);
		if (j == NULL)
			continue;
		b->line_rc = b->line(j, b->ctx);
		json_decref(j);
		if (b->line_rc != 0)
			return 0; /* stop the transfer */
	}
	return len;
}

/* GET path. Returns EX_OK with the HTTP status in *ret_status, or
 * EX_NODAEMON when nothing answers on the socket. */
static int http_get(const char *path, struct body *b, long *ret_status, bool stream)
{
	char url[512];
	CURL *c = curl_easy_init();
	CURLcode rc;

	if (c == NULL)
		return EX_FAIL;
	snprintf(url, sizeof(url), "http://localhost%s", path);
	curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, opt.socket);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, b);
	if (b->line != NULL)
		b->curl = c;
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 5L);
	if (!stream)
		curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
	rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, ret_status);
	curl_easy_cleanup(c);
	if (rc == CURLE_COULDNT_CONNECT)
		return EX_NODAEMON;
	if (rc == CURLE_WRITE_ERROR && b->line_rc != 0)
		return EX_OK;
	if (rc != CURLE_OK) {
		say("%s: %s", path, curl_easy_strerror(rc));
		return EX_FAIL;
	}
	return EX_OK;
}

static bool socket_answers(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool ok;

	if (fd < 0)
		return false;
	if (strlen(opt.socket) >= sizeof(sa.sun_path)) {
		close(fd);
		return false;
	}
	memcpy(sa.sun_path, opt.socket, strlen(opt.socket) + 1);
	ok = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	close(fd);
	return ok;
}

/* Where scratchd is: $SCRATCHD, next to us, ../sbin from us, the install
 * sbindir, else PATH. */
static void find_scratchd(char *buf, size_t len)
{
	const char *env = getenv("SCRATCHD");
	char self[PATH_MAX];
	ssize_t n;

	if (env != NULL && *env != '\0') {
		snprintf(buf, len, "%s", env);
		return;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		char *slash;

		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash != NULL) {
			*slash = '\0';
			snprintf(buf, len, "%.*s/scratchd", PATH_MAX - 32, self);
			if (access(buf, X_OK) == 0)
				return;
			snprintf(buf, len, "%.*s/../sbin/scratchd", PATH_MAX - 32, self);
			if (access(buf, X_OK) == 0)
				return;
		}
	}
	snprintf(buf, len, "%s/scratchd", SCRATCH_SBINDIR);
	if (access(buf, X_OK) == 0)
		return;
	snprintf(buf, len, "scratchd");
}

/* Start scratchd detached (double fork, new session, output to
 * <run dir>/scratchd.log) and wait up to 5 s for its socket. */
static int start_daemon(void)
{
	char exe[PATH_MAX], log[PATH_MAX + 16];
	pid_t pid;
	int st;

	find_scratchd(exe, sizeof(exe));
	snprintf(log, sizeof(log), "%s/scratchd.log", opt.run_dir);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
		int lfd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);

		setsid();
		if (fork() != 0)
			_exit(0);
		if (chdir("/") != 0)
			_exit(127);
		dup2(nul, 0);
		dup2(nul, 1);
		dup2(lfd >= 0 ? lfd : nul, 2);
		execlp(exe, "scratchd", "--run-dir", opt.run_dir, (char *)NULL);
		dprintf(2, "scratchstat: cannot run %s: %s\n", exe, strerror(errno));
		_exit(127);
	}
	waitpid(pid, &st, 0);
	for (int i = 0; i < 100; i++) {
		struct timespec ts = {0, 50 * 1000 * 1000};

		if (socket_answers())
			return 0;
		nanosleep(&ts, NULL);
	}
	say("started %s, but it does not answer on %s (see %s)", exe, opt.socket, log);
	return -ETIMEDOUT;
}

/* GET path as JSON. Starts the daemon when needed. Exit status style. */
static int get_json(const char *path, json_t **ret)
{
	struct body b = {0};
	json_error_t jerr;
	long status = 0;
	int rc = http_get(path, &b, &status, false);

	if (rc == EX_NODAEMON && opt.may_start && start_daemon() == 0) {
		free(b.p);
		memset(&b, 0, sizeof(b));
		rc = http_get(path, &b, &status, false);
	}
	if (rc == EX_NODAEMON) {
		say("no scratchd answers on %s%s", opt.socket,
		    opt.no_start     ? " (not started: --no-start)"
		    : !opt.may_start ? " (not started: not the run directory's socket)"
		                     : "");
		free(b.p);
		return rc;
	}
	if (rc != EX_OK) {
		free(b.p);
		return rc;
	}
	*ret = json_loads(b.p != NULL ? b.p : "", 0, &jerr);
	free(b.p);
	if (*ret == NULL) {
		say("%s: bad answer from scratchd: %s", path, jerr.text);
		return EX_FAIL;
	}
	if (status == 404) {
		json_decref(*ret);
		return EX_NOPROC;
	}
	if (status != 200) {
		say("%s: HTTP %ld: %s", path, status,
		    json_string_value(json_object_get(*ret, "error")));
		json_decref(*ret);
		return EX_FAIL;
	}
	return EX_OK;
}

/* ---------------------------------------------------------------------- */
/* Rendering                                                               */
/* ---------------------------------------------------------------------- */

/*
 * The tables print names that come from the watched processes (command
 * lines, thread and owner names, symbols of their binaries): untrusted
 * text, valid UTF-8 but free to hold terminal controls. In table mode
 * stdout is this filter, which writes fd 1 itself and prints every C0
 * control but the newline, DEL and every C1 control (U+0080-U+009F, the
 * two bytes 0xc2 0x80-0x9f) as '?'. JSON output is left alone: its
 * strings carry controls escaped.
 */
struct clean_out {
	bool c2; /* the last byte written was 0xc2: the next decides */
};

static bool write_all(const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(STDOUT_FILENO, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
	}
	return true;
}

static ssize_t clean_write(void *cookie, const char *buf, size_t n)
{
	struct clean_out *c = cookie;
	char out[4096];
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)buf[i];

		if (o + 2 > sizeof(out)) {
			if (!write_all(out, o))
				return -1;
			o = 0;
		}
		if (c->c2) {
			c->c2 = false;
			if (ch >= 0x80 && ch <= 0x9f) {
				out[o++] = '?';
				continue;
			}
			out[o++] = (char)0xc2;
		}
		if (ch == 0xc2) {
			c->c2 = true;
			continue;
		}
		out[o++] = (ch < 0x20 && ch != '\n') || ch == 0x7f ? '?' : (char)ch;
	}
	return write_all(out, o) ? (ssize_t)n : -1;
}

static int clean_close(void *cookie)
{
	struct clean_out *c = cookie;

	/* a lone 0xc2 at the end is not UTF-8: it shows as '?' */
	return c->c2 && !write_all("?", 1) ? -1 : 0;
}

/* Route stdout through clean_write(), buffered as stdout was (by line on a
 * terminal). Without the filter (fopencookie failed) the tables would pass
 * controls through, so that is an error. */
static int clean_stdout(void)
{
	static struct clean_out state;
	static const cookie_io_functions_t io = {.write = clean_write, .close = clean_close};
	FILE *f = fopencookie(&state, "w", io);

	if (f == NULL) {
		say("cannot set up output: %s", strerror(errno));
		return EX_FAIL;
	}
	fflush(stdout);
	setvbuf(f, NULL, isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF, BUFSIZ);
	stdout = f;
	return EX_OK;
}

/* One JSON value and a newline on stdout; false when it could not be
 * written (the caller stops, main says so and exits 4). */
static bool put_json(const json_t *v, size_t flags)
{
	if (json_dumpf(v, stdout, flags) != 0 || putchar('\n') == EOF)
		return false;
	return !ferror(stdout);
}

static uint64_t num(const json_t *o, const char *key)
{
	json_int_t v = json_integer_value(json_object_get(o, key));

	return v < 0 ? 0 : (uint64_t)v;
}

static const char *str(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s != NULL ? s : "";
}

static const char *human(uint64_t v, char *buf, size_t len)
{
	static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double d = (double)v;
	unsigned u = 0;

	while (d >= 1024.0 && u < 4) {
		d /= 1024.0;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%llu B", (unsigned long long)v);
	else
		snprintf(buf, len, "%.1f %s", d, unit[u]);
	return buf;
}

static void hit(const json_t *o, char *buf, size_t len)
{
	if (num(o, "allocs") == 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.1f%%",
		         json_real_value(json_object_get(o, "hit_rate")) * 100.0);
}

/* "name args" of a command line, argv[0] shortened to its base name, cut
 * to at most width characters at a character boundary (the text is UTF-8).
 * Returns how many characters it kept, for the padding. */
static size_t command_of(const json_t *p, char *buf, size_t len, size_t width)
{
	const char *cmd = str(p, "command");
	const char *sp = strchr(cmd, ' ');
	const char *end = sp != NULL ? sp : cmd + strlen(cmd);
	const char *base = cmd;
	size_t chars = 0, i;

	for (const char *q = cmd; q < end; q++)
		if (*q == '/')
			base = q + 1;
	snprintf(buf, len, "%s", *base ? base : str(p, "exe"));
	/* a truncated snprintf may have split a character: drop its start */
	for (i = strlen(buf); i > 0 && ((unsigned char)buf[i - 1] & 0xc0) == 0x80; i--)
		;
	if (i > 0 && (unsigned char)buf[i - 1] >= 0xc0) {
		unsigned char lead = (unsigned char)buf[i - 1];
		size_t need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;

		if (strlen(buf) - (i - 1) < need)
			buf[i - 1] = '\0';
	}
	for (i = 0; buf[i] != '\0'; i++) {
		if (((unsigned char)buf[i] & 0xc0) == 0x80)
			continue; /* a continuation byte */
		if (chars == width) {
			buf[i] = '\0';
			break;
		}
		chars++;
	}
	return chars;
}

/* What the library recorded rather than printed on the host's stderr:
 * ", pools off: address-space limit", ", max_size lowered" or "". */
static const char *pools_note(const json_t *p, char *buf, size_t len)
{
	static const char *const human_off[][2] = {
	        {"address_space_limit", "address-space limit"},
	        {"reserve_failed", "address space not reserved"},
	        {"out_of_memory", "out of memory"},
	        {"page_size", "page size not 4 KiB"},
	};
	const char *off = json_string_value(json_object_get(p, "pools_off"));

	buf[0] = '\0';
	if (off != NULL) {
		const char *says = off; /* a newer daemon's reason: its own name */

		for (size_t i = 0; i < sizeof(human_off) / sizeof(human_off[0]); i++)
			if (strcmp(off, human_off[i][0]) == 0)
				says = human_off[i][1];
		snprintf(buf, len, ", pools off: %s", says);
	} else if (json_is_true(json_object_get(p, "max_size_lowered"))) {
		snprintf(buf, len, ", max_size lowered");
	}
	return buf;
}

static void print_processes(const json_t *v)
{
	const json_t *procs = json_object_get(v, "processes"), *p, *r;
	size_t i;

	printf("%8s %-28s %7s %10s %6s %10s %10s %8s %s\n", "PID", "COMMAND", "THREADS", "ALLOCS",
	       "HIT%", "RETAINED", "LEASED", "GROWTHS", "STATE");
	json_array_foreach(procs, i, p)
	{
		char cmd[28 * 4 + 1], h[16], ret[32], lea[32], state[160], note[96];
		/* padded by characters, not bytes */
		int pad = 28 - (int)command_of(p, cmd, sizeof(cmd), 28);

		hit(p, h, sizeof(h));
		pools_note(p, note, sizeof(note));
		if (json_is_string(json_object_get(p, "exit_reason")))
			snprintf(state, sizeof(state), "%s (%s)%s", str(p, "state"),
			         str(p, "exit_reason"), note);
		else
			snprintf(state, sizeof(state), "%s%s", str(p, "state"), note);
		printf("%8llu %s%*s %7llu %10llu %6s %10s %10s %8llu %s\n",
		       (unsigned long long)num(p, "pid"), cmd, pad, "",
		       (unsigned long long)num(p, "threads"), (unsigned long long)num(p, "allocs"),
		       h, human(num(p, "retained"), ret, sizeof(ret)),
		       human(num(p, "leased"), lea, sizeof(lea)),
		       (unsigned long long)num(p, "growths"), state);
	}
	json_array_foreach(json_object_get(v, "rejected"), i, r)
	        printf("%8s %s: %s\n", "-", str(r, "file"), str(r, "error"));
}

static void print_threads(const json_t *p)
{
	const json_t *t;
	size_t i;
	char a[32], b[32], c[32], note[96];

	printf("PID %llu  %s  %s%s%s  threads %llu  retained %s  leased %s  growths %llu\n",
	       (unsigned long long)num(p, "pid"), str(p, "command"), str(p, "state"),
	       json_is_string(json_object_get(p, "exit_reason")) ? " " : "",
	       json_is_string(json_object_get(p, "exit_reason")) ? str(p, "exit_reason") : "",
	       (unsigned long long)num(p, "threads"), human(num(p, "retained"), a, sizeof(a)),
	       human(num(p, "leased"), b, sizeof(b)), (unsigned long long)num(p, "growths"));
	pools_note(p, note, sizeof(note));
	if (json_is_string(json_object_get(p, "pools_off")))
		printf("%s\n", note + 2); /* past the ", " */
	else if (note[0] != '\0')
		printf("max_size lowered to %s to fit the address space granted\n",
		       human(num(p, "max_size"), c, sizeof(c)));
	printf("%8s %-16s %10s %6s %10s %10s %10s %8s %8s %8s %s\n", "TID", "NAME", "ALLOCS",
	       "HIT%", "RETAINED", "LEASED", "PEAK", "GROWTHS", "RFREE-IN", "RFREE-OUT", "STATE");
	json_array_foreach(json_object_get(p, "thread_table"), i, t)
	{
		char h[16], pk[32];

		hit(t, h, sizeof(h));
		printf("%8llu %-16s %10llu %6s %10s %10s %10s %8llu %8llu %8llu %s\n",
		       (unsigned long long)num(t, "tid"), str(t, "name"),
		       (unsigned long long)num(t, "allocs"), h,
		       human(num(t, "retained"), a, sizeof(a)),
		       human(num(t, "leased"), b, sizeof(b)),
		       human(num(t, "peak_leased"), pk, sizeof(pk)),
		       (unsigned long long)num(t, "growths"),
		       (unsigned long long)num(t, "remote_frees_in"),
		       (unsigned long long)num(t, "remote_frees_out"), str(t, "state"));
	}
	if (num(p, "depot_bytes") != 0 || num(p, "threads_exited") != 0)
		printf("depot %s, %llu exited threads folded in\n",
		       human(num(p, "depot_bytes"), c, sizeof(c)),
		       (unsigned long long)num(p, "threads_exited"));
}

static void print_owners(const json_t *v)
{
	const json_t *o;
	size_t i;
	char a[32], b[32], c[32];

	printf("%4s %-10s %-20s %10s %10s %10s %8s %10s %8s %8s %s\n", "ID", "KIND", "NAME",
	       "RETAINED", "LEASED", "PANEL", "GROWTHS", "DISPATCHES", "PARKS", "WAKES", "STATE");
	json_array_foreach(json_object_get(v, "owners"), i, o) printf(
	        "%4llu %-10s %-20s %10s %10s %10s %8llu %10llu %8llu %8llu %s\n",
	        (unsigned long long)num(o, "id"), str(o, "kind"), str(o, "name"),
	        human(num(o, "retained"), a, sizeof(a)), human(num(o, "leased"), b, sizeof(b)),
	        human(num(o, "panel_bytes"), c, sizeof(c)), (unsigned long long)num(o, "growths"),
	        (unsigned long long)num(o, "dispatches"), (unsigned long long)num(o, "parks"),
	        (unsigned long long)num(o, "wakes"), str(o, "state"));
}

/* "64.0 KiB-80.0 KiB": the request sizes a class serves. */
static const char *class_range(const json_t *k, char *buf, size_t len)
{
	char a[32], b[32];

	snprintf(buf, len, "%s-%s", human(num(k, "size_min"), a, sizeof(a)),
	         human(num(k, "size"), b, sizeof(b)));
	return buf;
}

/* A bar of requests against the busiest class: '#' served from memory
 * the pools held, 'x' the share that grew the pools (misses). */
static void class_bar(const json_t *k, uint64_t most, char *buf, size_t len)
{
	const size_t width = 24;
	uint64_t req = num(k, "requests"), miss = num(k, "misses");
	size_t n = most ? (size_t)((req * width + most - 1) / most) : 0;
	size_t x = req ? (size_t)((miss * n + req - 1) / req) : 0;
	size_t i;

	for (i = 0; i < n && i + 1 < len; i++)
		buf[i] = i < n - x ? '#' : 'x';
	buf[i] = '\0';
}

/* The footer: which sizes make the pools grow, and what min_size does. */
static void sizes_footer(const json_t *v)
{
	const json_t *k, *worst = NULL, *first = NULL;
	size_t i;
	char a[64], b[32];

	json_array_foreach(json_object_get(v, "classes"), i, k)
	{
		if (first == NULL && num(k, "requests") > 0)
			first = k;
		if (num(k, "misses") > 0 &&
		    (worst == NULL || num(k, "misses") > num(worst, "misses")))
			worst = k;
	}
	if (worst != NULL)
		printf("most misses at %s: %llu of %llu growths\n",
		       class_range(worst, a, sizeof(a)), (unsigned long long)num(worst, "misses"),
		       (unsigned long long)num(json_object_get(v, "total"), "misses"));
	else
		printf("no misses: every request was served by memory the pools held\n");
	if (first != NULL)
		printf("smallest pooled requests at %s\n", class_range(first, a, sizeof(a)));
	printf("requests below min_size (%s) are not pooled: %llu calls passed through\n",
	       human(num(v, "min_size"), b, sizeof(b)), (unsigned long long)num(v, "passthrough"));
}

static void print_sizes(const json_t *v)
{
	const json_t *k, *t = json_object_get(v, "total");
	uint64_t most = 0;
	size_t i;
	char r[64], h[16], a[32], b[32], bar[32];

	if (!json_is_true(json_object_get(v, "available"))) {
		printf("no per size class counters in this process's segment (an older "
		       "libscratch)\n");
		return;
	}
	json_array_foreach(json_object_get(v, "classes"), i, k) if (num(k, "requests") > most)
	        most = num(k, "requests");
	printf("%-22s %10s %6s %8s %8s %8s %10s %10s %s\n", "CLASS (size)", "REQUESTS", "HIT%",
	       "LARGER", "DEPOT", "MISSES", "IDLE", "LEASED", "REQUESTS (x: misses)");
	json_array_foreach(json_object_get(v, "classes"), i, k)
	{
		if (num(k, "requests") == 0)
			snprintf(h, sizeof(h), "-");
		else
			snprintf(h, sizeof(h), "%.1f%%",
			         json_real_value(json_object_get(k, "hit_rate")) * 100.0);
		class_bar(k, most, bar, sizeof(bar));
		printf("%-22s %10llu %6s %8llu %8llu %8llu %10s %10s %s\n",
		       class_range(k, r, sizeof(r)), (unsigned long long)num(k, "requests"), h,
		       (unsigned long long)num(k, "larger_hits"),
		       (unsigned long long)num(k, "depot_hits"),
		       (unsigned long long)num(k, "misses"),
		       human(num(k, "idle_bytes"), a, sizeof(a)),
		       human(num(k, "leased_bytes"), b, sizeof(b)), bar);
	}
	printf("%-22s %10llu %6s %8llu %8llu %8llu %10s %10s\n", "total",
	       (unsigned long long)num(t, "requests"), "",
	       (unsigned long long)num(t, "larger_hits"), (unsigned long long)num(t, "depot_hits"),
	       (unsigned long long)num(t, "misses"), human(num(t, "idle_bytes"), a, sizeof(a)),
	       human(num(t, "leased_bytes"), b, sizeof(b)));
	sizes_footer(v);
}

static void clock_of(uint64_t ns, char *buf, size_t len)
{
	time_t s = (time_t)(ns / 1000000000u);
	struct tm tm;

	localtime_r(&s, &tm);
	snprintf(buf, len, "%02d:%02d:%02d.%03u", tm.tm_hour, tm.tm_min, tm.tm_sec,
	         (unsigned)(ns % 1000000000u / 1000000u));
}

static void print_history(const json_t *v)
{
	const json_t *s;
	size_t i;
	char t[32], a[32], b[32];

	printf("%-12s %7s %10s %6s %8s %10s %10s\n", "TIME", "THREADS", "ALLOCS", "HIT%", "GROWTHS",
	       "RETAINED", "LEASED");
	json_array_foreach(json_object_get(v, "samples"), i, s)
	{
		char h[16];

		clock_of(num(s, "time_ns"), t, sizeof(t));
		hit(s, h, sizeof(h));
		printf("%-12s %7llu %10llu %6s %8llu %10s %10s\n", t,
		       (unsigned long long)num(s, "threads"), (unsigned long long)num(s, "allocs"),
		       h, (unsigned long long)num(s, "growths"),
		       human(num(s, "retained"), a, sizeof(a)),
		       human(num(s, "leased"), b, sizeof(b)));
	}
}

/* ---------------------------------------------------------------------- */
/* Trace view                                                              */
/* ---------------------------------------------------------------------- */

struct trace_ctx {
	pid_t pid;
	struct symbolizer *sym;
	char *maps;
	uint64_t maps_at;  /* CLOCK_MONOTONIC of the last refresh */
	uint64_t maps_seq; /* every record up to it was drained before that */
	uint64_t seen;     /* the highest record seq received so far */
	/* Addresses the current maps do not cover, most recent last: no
	 * fetch again for those (bounded, forgotten when the maps change). */
	uint64_t unresolved[256];
	unsigned n_unresolved, next_unresolved;
	bool header;
	uint64_t records;
};

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash != NULL ? slash + 1 : path;
}

static bool internal_frame(const struct sym_info *si)
{
	const char *base = strrchr(si->module, '/');

	base = base != NULL ? base + 1 : si->module;
	return strncmp(base, "libscratch", 10) == 0 || strncmp(si->function, "scratch_", 8) == 0 ||
	       si->allocator;
}

/* Fetch the maps again. Every attempt counts as a fetch, whatever it
 * brought: an unresolved frame asks at most once per newer record or
 * second, never once per frame. */
static void refresh_symbols(struct trace_ctx *tc)
{
	char path[64];
	struct body b = {0};
	long status = 0;

	snprintf(path, sizeof(path), "/v1/processes/%d/maps", (int)tc->pid);
	/* The daemon rereads the maps when it drains new records, before it
	 * serves them: these cover the libraries of every record seen so far. */
	tc->maps_seq = tc->seen;
	if (http_get(path, &b, &status, false) != EX_OK || status != 200) {
		tc->maps_at = stats_mono_ns();
		free(b.p);
		return;
	}
	tc->maps_at = stats_mono_ns();
	if (tc->maps != NULL && b.p != NULL && strcmp(tc->maps, b.p) == 0) {
		free(b.p);
		return;
	}
	free(tc->maps);
	tc->maps = b.p;
	sym_free(tc->sym);
	tc->sym = sym_new(tc->maps);
	tc->n_unresolved = tc->next_unresolved = 0;
}

static bool known_unresolved(const struct trace_ctx *tc, uint64_t ip)
{
	for (unsigned i = 0; i < tc->n_unresolved; i++)
		if (tc->unresolved[i] == ip)
			return true;
	return false;
}

static void remember_unresolved(struct trace_ctx *tc, uint64_t ip)
{
	const unsigned cap = sizeof(tc->unresolved) / sizeof(tc->unresolved[0]);

	if (known_unresolved(tc, ip))
		return;
	tc->unresolved[tc->next_unresolved] = ip;
	tc->next_unresolved = (tc->next_unresolved + 1) % cap;
	if (tc->n_unresolved < cap)
		tc->n_unresolved++;
}

/* Replace a record's raw frames by symbolized ones, and name its call
 * site: the first frame outside libscratch, the preload shim and C++'s
 * operator new. A frame no mapping covers (code loaded and unloaded again
 * before the daemon read the maps, or a JIT) may be the call site itself:
 * it is shown by its address, never skipped for its caller. */
static void symbolize(struct trace_ctx *tc, json_t *rec)
{
	json_t *frames = json_object_get(rec, "frames"), *out = json_array(), *f;
	uint64_t seq = num(rec, "seq");
	bool have_site = false;
	size_t i;

	if (seq > tc->seen)
		tc->seen = seq;
	json_array_foreach(frames, i, f)
	{
		uint64_t ip = (uint64_t)json_integer_value(f);
		struct sym_info si;
		json_t *o = json_object();
		bool ok = tc->sym != NULL && sym_lookup(tc->sym, ip, &si);

		/* A record newer than the maps may come from a library loaded
		 * since: fetch them again, however recent the last fetch. */
		if (!ok && !known_unresolved(tc, ip) &&
		    (seq > tc->maps_seq || stats_mono_ns() - tc->maps_at > 1000000000u)) {
			refresh_symbols(tc);
			ok = tc->sym != NULL && sym_lookup(tc->sym, ip, &si);
		}
		if (!ok)
			remember_unresolved(tc, ip);
		json_object_set_new(o, "addr", json_integer((json_int_t)ip));
		if (ok) {
			json_object_set_new(o, "function",
			                    si.function[0] ? json_string(si.function)
			                                   : json_null());
			json_object_set_new(o, "offset", json_integer((json_int_t)si.offset));
			json_object_set_new(o, "file",
			                    si.file[0] ? json_string(si.file) : json_null());
			json_object_set_new(o, "line", json_integer(si.line));
			json_object_set_new(o, "module", json_string(si.module));
			if (si.replaced)
				json_object_set_new(o, "replaced", json_true());
		}
		if (!have_site && (!ok || !internal_frame(&si))) {
			char site[600];

			if (!ok)
				snprintf(site, sizeof(site), "0x%llx", (unsigned long long)ip);
			else if (si.replaced)
				snprintf(site, sizeof(site), "%s+0x%llx (replaced)",
				         base_name(si.module), (unsigned long long)si.offset);
			else if (si.file[0] != '\0')
				snprintf(site, sizeof(site), "%s (%s:%d)",
				         si.function[0] ? si.function : "??", si.file, si.line);
			else
				snprintf(site, sizeof(site), "%s+0x%llx",
				         si.function[0] ? si.function : base_name(si.module),
				         (unsigned long long)si.offset);
			json_object_set_new(rec, "site", json_string(site));
			have_site = true;
		}
		json_array_append_new(out, o);
	}
	if (!have_site)
		json_object_set_new(rec, "site", json_null());
	json_object_set_new(rec, "frames", out);
}

static void print_record(struct trace_ctx *tc, const json_t *r)
{
	char t[32], sz[32];
	const json_t *f;
	size_t i;

	if (!tc->header) {
		printf("%8s %-12s %8s %10s %5s %4s %4s %-12s %s\n", "SEQ", "TIME", "TID", "SIZE",
		       "CLASS", "CPU", "NODE", "OWNER", "SITE");
		tc->header = true;
	}
	clock_of(num(r, "time_ns"), t, sizeof(t));
	printf("%8llu %-12s %8llu %10s %5llu %4lld %4lld %-12s %s\n",
	       (unsigned long long)num(r, "seq"), t, (unsigned long long)num(r, "tid"),
	       human(num(r, "bytes"), sz, sizeof(sz)), (unsigned long long)num(r, "class"),
	       (long long)json_integer_value(json_object_get(r, "cpu")),
	       (long long)json_integer_value(json_object_get(r, "node")),
	       json_is_string(json_object_get(r, "owner_name")) ? str(r, "owner_name")
	                                                        : (num(r, "owner") ? "?" : "-"),
	       json_is_string(json_object_get(r, "site")) ? str(r, "site") : "??");
	if (!opt.frames)
		return;
	json_array_foreach(json_object_get(r, "frames"), i, f)
	{
		const char *fn = str(f, "function");

		printf("%10s #%-2zu 0x%llx %s", "", i, (unsigned long long)num(f, "addr"),
		       *fn ? fn : "??");
		if (json_is_string(json_object_get(f, "file")))
			printf(" (%s:%llu)", str(f, "file"), (unsigned long long)num(f, "line"));
		else if (*str(f, "module"))
			printf(" [%s]%s", str(f, "module"),
			       json_is_true(json_object_get(f, "replaced")) ? " (replaced)" : "");
		putchar('\n');
	}
}

/* One line of the follow stream: a record, a lost count, a gap or the end. */
static int follow_line(json_t *j, void *ctx)
{
	struct trace_ctx *tc = ctx;

	if (json_object_get(j, "seq") != NULL) {
		symbolize(tc, j);
		if (opt.json)
			put_json(j, JSON_COMPACT);
		else
			print_record(tc, j);
		/* --limit given with --follow: that many records, then stop */
		if (++tc->records >= opt.limit && opt.limit_given)
			return 1;
	} else if (opt.json) {
		put_json(j, JSON_COMPACT);
	} else if (json_object_get(j, "lost") != NULL) {
		printf("-- %lld growth records lost so far (the ring wrapped before they were "
		       "drained)\n",
		       (long long)json_integer_value(json_object_get(j, "lost")));
	} else if (json_object_get(j, "gone_from") != NULL) {
		printf("-- records %llu..%llu are gone: lost in the ring or dropped by scratchd "
		       "(--trace-keep)\n",
		       (unsigned long long)num(j, "gone_from"),
		       (unsigned long long)num(j, "gone_to"));
	} else if (json_object_get(j, "end") != NULL) {
		printf("-- end: %s\n", str(j, "reason"));
	}
	/* output that goes nowhere ends the stream */
	return fflush(stdout) != 0 || ferror(stdout) ? 1 : 0;
}

/* What a trace answer leaves out: records before the first one scratchd
 * still keeps (its --trace-keep buffer dropped them, or the ring wrapped:
 * the lost count says how many of those), and records after the last one
 * shown (--limit). */
static void trace_notes(const json_t *v)
{
	uint64_t first = num(v, "first"), next = num(v, "next"), head = num(v, "head");
	uint64_t lost = num(v, "lost");

	if (json_is_integer(json_object_get(v, "first")) && opt.since < first &&
	    first - opt.since > lost) {
		if (lost == 0)
			printf("-- records %llu..%llu were dropped by scratchd (--trace-keep)\n",
			       (unsigned long long)opt.since, (unsigned long long)first - 1);
		else
			printf("-- records %llu..%llu are gone: lost in the ring or dropped by "
			       "scratchd (--trace-keep)\n",
			       (unsigned long long)opt.since, (unsigned long long)first - 1);
	}
	if (json_is_integer(json_object_get(v, "next")) && next != 0 && next <= head)
		printf("-- more records exist: continue with --since %llu\n",
		       (unsigned long long)next);
}

static int view_trace(pid_t pid)
{
	struct trace_ctx tc = {.pid = pid};
	char path[128];
	json_t *v, *r;
	size_t i;
	int rc;

	snprintf(path, sizeof(path), "/v1/processes/%d", (int)pid);
	rc = get_json(path, &v); /* also starts the daemon and checks the pid */
	if (rc == EX_NOPROC)
		say("no such process: %d", (int)pid);
	if (rc != EX_OK)
		return rc;
	json_decref(v);
	refresh_symbols(&tc);
	if (opt.follow) {
		struct body b = {.line = follow_line, .ctx = &tc};
		long status = 0;

		snprintf(path, sizeof(path), "/v1/processes/%d/trace?follow=1&since=%llu", (int)pid,
		         (unsigned long long)opt.since);
		rc = http_get(path, &b, &status, true);
		if (rc == EX_OK && status == 404) {
			say("no such process: %d", (int)pid);
			rc = EX_NOPROC;
		} else if (rc == EX_OK && status != 200) {
			json_t *e = json_loads(b.p != NULL ? b.p : "", 0, NULL);
			const char *why = json_string_value(json_object_get(e, "error"));

			say("%s: HTTP %ld: %s", path, status, why != NULL ? why : "(no reason)");
			json_decref(e);
			rc = EX_FAIL;
		}
		free(b.p);
		goto out;
	}
	snprintf(path, sizeof(path), "/v1/processes/%d/trace?since=%llu&limit=%llu", (int)pid,
	         (unsigned long long)opt.since, (unsigned long long)opt.limit);
	rc = get_json(path, &v);
	if (rc != EX_OK)
		goto out;
	/* The daemon drained all of these before it answered: one fetch of
	 * the maps covers them all. */
	json_array_foreach(json_object_get(v, "records"), i, r) if (num(r, "seq") > tc.seen)
	        tc.seen = num(r, "seq");
	json_array_foreach(json_object_get(v, "records"), i, r) symbolize(&tc, r);
	if (opt.json) {
		put_json(v, JSON_INDENT(2));
	} else {
		json_array_foreach(json_object_get(v, "records"), i, r) print_record(&tc, r);
		if (!tc.header)
			printf("no growth records since %llu\n", (unsigned long long)opt.since);
		if (num(v, "lost") != 0)
			printf("-- %llu growth records lost (the ring wrapped before they were "
			       "drained)\n",
			       (unsigned long long)num(v, "lost"));
		trace_notes(v);
	}
	json_decref(v);
out:
	sym_free(tc.sym);
	free(tc.maps);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* Interval mode                                                           */
/* ---------------------------------------------------------------------- */

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

/* How much counter key grew from prev to v; 0 if it did not. */
static uint64_t grown(const json_t *v, const json_t *prev, const char *key)
{
	uint64_t a = num(v, key), b = prev != NULL ? num(prev, key) : 0;

	return a > b ? a - b : 0;
}

/* When the counters of v were read: the daemon's sample time (it samples
 * again for each request), or the exit if the process ended before. */
static uint64_t sample_time(const json_t *v)
{
	uint64_t at = num(v, "sampled_ns"), end = num(v, "exit_ns");

	if (at == 0)
		at = stats_realtime_ns(); /* a daemon that does not say */
	if (strcmp(str(v, "state"), "live") != 0 && end != 0 && end < at)
		at = end;
	return at;
}

/* One interval line as JSON: rates between two process snapshots (prev
 * NULL: since the process started), over the time between their samples.
 * After an exec the pid shows a new image (another segment file) whose
 * counters start again: the line then covers the new image's life so far,
 * and says so. */
static json_t *interval_json(pid_t pid, const json_t *v, const json_t *prev, uint64_t now,
                             uint64_t prev_ns)
{
	bool new_image = prev != NULL && (strcmp(str(v, "file"), str(prev, "file")) != 0 ||
	                                  num(v, "created_ns") != num(prev, "created_ns"));
	const json_t *base = new_image ? NULL : prev;
	uint64_t from = base != NULL ? prev_ns : num(v, "created_ns");
	double dt = now > from ? (double)(now - from) / 1e9 : 1e-9;
	uint64_t da = grown(v, base, "allocs");
	uint64_t dg = grown(v, base, "growths");
	uint64_t df = grown(v, base, "frees");

	return json_pack(
	        "{s:I,s:i,s:f,s:I,s:I,s:f,s:o,s:f,s:f,s:I,s:I,s:s,s:b}", "time_ns", (json_int_t)now,
	        "pid", (int)pid, "interval_s", dt, "threads", (json_int_t)num(v, "threads"),
	        "allocs", (json_int_t)da, "allocs_per_s", (double)da / dt, "hit_rate",
	        da ? json_real((double)(da - (dg < da ? dg : da)) / (double)da) : json_null(),
	        "growths_per_s", (double)dg / dt, "frees_per_s", (double)df / dt, "retained",
	        (json_int_t)num(v, "retained"), "leased", (json_int_t)num(v, "leased"), "state",
	        str(v, "state"), "new_image", new_image);
}

static void print_interval(const json_t *o)
{
	char t[32], a[32], b[32], h[16];

	clock_of(num(o, "time_ns"), t, sizeof(t));
	if (json_is_real(json_object_get(o, "hit_rate")))
		snprintf(h, sizeof(h), "%.1f%%",
		         100.0 * json_real_value(json_object_get(o, "hit_rate")));
	else
		snprintf(h, sizeof(h), "-");
	printf("%-12s %7llu %10.0f %6s %9.1f %9.0f %10s %10s %s%s\n", t,
	       (unsigned long long)num(o, "threads"),
	       json_real_value(json_object_get(o, "allocs_per_s")), h,
	       json_real_value(json_object_get(o, "growths_per_s")),
	       json_real_value(json_object_get(o, "frees_per_s")),
	       human(num(o, "retained"), a, sizeof(a)), human(num(o, "leased"), b, sizeof(b)),
	       str(o, "state"),
	       json_is_true(json_object_get(o, "new_image")) ? " (new image: exec)" : "");
}

static int view_interval(pid_t pid, double interval, long count)
{
	char path[64];
	json_t *prev = NULL;
	uint64_t prev_ns = 0;
	int rc = EX_OK;

	signal(SIGINT, on_sigint);
	snprintf(path, sizeof(path), "/v1/processes/%d", (int)pid);
	if (!opt.json)
		printf("%-12s %7s %10s %6s %9s %9s %10s %10s %s\n", "TIME", "THREADS", "ALLOCS/s",
		       "HIT%", "GROWTH/s", "FREES/s", "RETAINED", "LEASED", "STATE");
	for (long n = 0; (count <= 0 || n < count) && !interrupted; n++) {
		uint64_t now;
		json_t *v, *o;

		if (n > 0) {
			struct timespec ts = {(time_t)interval,
			                      (long)((interval - (double)(time_t)interval) * 1e9)};

			nanosleep(&ts, NULL);
			if (interrupted)
				break;
		}
		rc = get_json(path, &v);
		if (rc == EX_NOPROC)
			say("no such process: %d", (int)pid);
		if (rc != EX_OK)
			break;
		now = sample_time(v);
		/* The first line covers the process's whole life, as vmstat's. */
		o = interval_json(pid, v, prev, now, prev_ns);
		if (opt.json)
			put_json(o, JSON_COMPACT);
		else
			print_interval(o);
		json_decref(o);
		json_decref(prev);
		prev = v;
		prev_ns = now;
		if (fflush(stdout) != 0 || ferror(stdout))
			break; /* main says so */
		if (strcmp(str(v, "state"), "live") != 0)
			break;
	}
	json_decref(prev);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* Main                                                                    */
/* ---------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fputs("usage: scratchstat [--json] [--no-start] [--run-dir DIR] [--socket PATH]\n"
	      "       scratchstat [options] PID [INTERVAL [COUNT]]\n"
	      "       scratchstat [options] trace PID [--follow] [--since SEQ] [--limit N] "
	      "[--frames]\n"
	      "       scratchstat [options] owners PID\n"
	      "       scratchstat [options] sizes PID\n"
	      "       scratchstat [options] history PID\n"
	      "       scratchstat [options] report PID [-o FILE] [--for SECONDS | --no-audit]\n"
	      "       scratchstat audit [--json] [--preload PATH] -- COMMAND [ARGS...]\n"
	      "       scratchstat audit [--json] [--for SECONDS] PID\n",
	      f);
}

static bool parse_pid(const char *s, pid_t *ret)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v <= 0 || v > 0x7fffffff)
		return false;
	*ret = (pid_t)v;
	return true;
}

/* report --for: whole seconds, 1 to a day. */
static int report_seconds(const char *s, unsigned *ret)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || *s == '-' || v < 1 || v > 86400) {
		say("invalid number for --for: '%s' (expected whole seconds, 1 to 86400)", s);
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
			opt.json = true;
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
			opt.follow = true;
			break;
		case 'S':
		case 'l':
			errno = 0;
			*(c == 'S' ? &opt.since : &opt.limit) = strtoull(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || *optarg == '-' || *optarg == '\0') {
				say("invalid number for --%s: '%s' (expected a whole number)",
				    c == 'S' ? "since" : "limit", optarg);
				return EX_USAGE;
			}
			if (c == 'l' && (opt.limit < 1 || opt.limit > 1000000)) {
				say("invalid number for --limit: '%s' (expected 1 to 1000000)",
				    optarg);
				return EX_USAGE;
			}
			opt.limit_given |= c == 'l';
			break;
		case 'F':
			opt.frames = true;
			break;
		case 'o':
			opt.output = optarg;
			break;
		case 'W':
			if (report_seconds(optarg, &opt.audit_for) != EX_OK)
				return EX_USAGE;
			break;
		case 'A':
			opt.no_audit = true;
			break;
		case 'h':
			usage(stdout);
			exit(EX_OK);
		case 'V':
			printf("scratchstat %s (protocol %d)\n", PACKAGE_VERSION, STATS_PROTOCOL);
			exit(EX_OK);
		default:
			usage(stderr);
			return EX_USAGE;
		}
	}
	return EX_OK;
}

static int emit(int rc, json_t *v, void (*table)(const json_t *))
{
	if (rc != EX_OK)
		return rc;
	if (opt.json)
		put_json(v, JSON_INDENT(2));
	else
		table(v);
	json_decref(v);
	return EX_OK;
}

static int view_pid(const char *what, pid_t pid, void (*table)(const json_t *))
{
	char path[96];
	json_t *v = NULL;
	int rc;

	snprintf(path, sizeof(path), "/v1/processes/%d%s", (int)pid, what);
	rc = get_json(path, &v);
	if (rc == EX_NOPROC)
		say("no such process: %d", (int)pid);
	return emit(rc, v, table);
}

/* What the positional arguments ask for, checked before anything else runs. */
struct request {
	enum {
		REQ_LIST,
		REQ_THREADS,
		REQ_WATCH,
		REQ_TRACE,
		REQ_OWNERS,
		REQ_HISTORY,
		REQ_SIZES,
		REQ_REPORT
	} kind;
	pid_t pid;
	double interval;
	long count; /* 0: until interrupted */
};

/* Parse args into req. Returns EX_OK, or EX_USAGE with the problem said. */
static int parse_request(int nargs, char **args, struct request *req)
{
	char *end;

	*req = (struct request){.kind = REQ_LIST};
	if (nargs == 0)
		return EX_OK;
	if (strcmp(args[0], "trace") == 0 || strcmp(args[0], "owners") == 0 ||
	    strcmp(args[0], "history") == 0 || strcmp(args[0], "sizes") == 0 ||
	    strcmp(args[0], "report") == 0) {
		req->kind = args[0][0] == 't'   ? REQ_TRACE
		            : args[0][0] == 'o' ? REQ_OWNERS
		            : args[0][0] == 's' ? REQ_SIZES
		            : args[0][0] == 'r' ? REQ_REPORT
		                                : REQ_HISTORY;
		if (nargs < 2)
			say("%s needs a PID", args[0]);
		else if (nargs > 2)
			say("%s takes one PID", args[0]);
		else if (!parse_pid(args[1], &req->pid))
			say("invalid PID: '%s'", args[1]);
		else
			return EX_OK;
		return EX_USAGE;
	}
	if (!parse_pid(args[0], &req->pid)) {
		say("'%s' is neither a PID nor a command (trace, owners, history, sizes, report)",
		    args[0]);
		usage(stderr);
		return EX_USAGE;
	}
	if (nargs > 3) {
		say("a PID takes at most INTERVAL and COUNT after it");
		return EX_USAGE;
	}
	req->kind = nargs == 1 ? REQ_THREADS : REQ_WATCH;
	if (nargs >= 2) {
		req->interval = strtod(args[1], &end);
		if (end == args[1] || *end != '\0' ||
		    !(req->interval > 0 && req->interval <= 86400)) {
			say("invalid interval: '%s' (expected seconds, above 0 and at most 86400)",
			    args[1]);
			return EX_USAGE;
		}
	}
	if (nargs == 3) {
		errno = 0;
		req->count = strtol(args[2], &end, 10);
		if (errno != 0 || end == args[2] || *end != '\0' || req->count <= 0) {
			say("invalid count: '%s' (expected a whole number from 1)", args[2]);
			return EX_USAGE;
		}
	}
	return EX_OK;
}

/* ---------------------------------------------------------------------- */
/* The report (report_cli.c) through this file's client                    */
/* ---------------------------------------------------------------------- */

_Static_assert((int)REPORT_EX_NOPROC == EX_NOPROC && (int)REPORT_EX_USAGE == EX_USAGE &&
                       (int)REPORT_EX_NODAEMON == EX_NODAEMON && (int)REPORT_EX_FAIL == EX_FAIL,
               "report_cli.h speaks scratchstat's exit codes");

static void report_symbolize(pid_t pid, json_t *trace)
{
	struct trace_ctx tc = {.pid = pid};
	json_t *r;
	size_t i;

	/* drained before the answer: one fetch of the maps covers them all */
	json_array_foreach(json_object_get(trace, "records"), i, r) if (num(r, "seq") > tc.seen)
	        tc.seen = num(r, "seq");
	refresh_symbols(&tc);
	json_array_foreach(json_object_get(trace, "records"), i, r) symbolize(&tc, r);
	sym_free(tc.sym);
	free(tc.maps);
}

static const struct report_io report_io = {get_json, report_symbolize, say};

/* -o, --for and --no-audit belong to report, and --json to every other
 * command. */
static int report_args(const struct request *req)
{
	if (req->kind != REQ_REPORT && (opt.output != NULL || opt.audit_for != 0 || opt.no_audit)) {
		say("-o, --for and --no-audit are for report only");
		return EX_USAGE;
	}
	if (opt.audit_for != 0 && opt.no_audit) {
		say("--for and --no-audit contradict each other");
		return EX_USAGE;
	}
	if (req->kind == REQ_REPORT && (opt.json || opt.follow || opt.frames)) {
		say("report writes HTML: --json, --follow and --frames do not apply");
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
	if (strcmp(slash != NULL ? slash + 1 : path, STATS_SOCKET_NAME) != 0)
		return false;
	return realpath(*dir ? dir : "/", real_dir) != NULL &&
	       realpath(opt.run_dir, real_run) != NULL && strcmp(real_dir, real_run) == 0;
}

int main(int argc, char **argv)
{
	char err[PATH_MAX + 128];
	struct request req;
	struct sockaddr_un sa;
	json_t *v = NULL;
	bool bad;
	int rc;

	rc = audit_dispatch(argc, argv); /* the audit reads the segment, not scratchd */
	if (rc >= 0)
		return rc;
	rc = parse_opts(argc, argv);
	if (rc == EX_OK)
		rc = parse_request(argc - optind, argv + optind, &req);
	if (rc == EX_OK)
		rc = report_args(&req);
	if (rc != EX_OK)
		return rc;
	if (opt.socket_arg != NULL && strlen(opt.socket_arg) >= sizeof(sa.sun_path)) {
		say("socket path too long: %.200s%s (at most %zu bytes)", opt.socket_arg,
		    strlen(opt.socket_arg) > 200 ? "..." : "", sizeof(sa.sun_path) - 1);
		return EX_USAGE;
	}
	/* A daemon started here serves <run dir>/scratchd.sock: with another
	 * --socket, none is started (nor a run directory made for one). */
	rc = stats_run_dir(opt.run_dir_arg, !opt.no_start && opt.socket_arg == NULL, opt.run_dir,
	                   sizeof(opt.run_dir), err, sizeof(err));
	if (rc != 0 && opt.socket_arg == NULL) {
		say("%s", err);
		return rc == -ENAMETOOLONG ? EX_USAGE : EX_NODAEMON;
	}
	opt.may_start = !opt.no_start &&
	                (opt.socket_arg == NULL || (rc == 0 && is_run_dir_socket(opt.socket_arg)));
	snprintf(opt.socket, sizeof(opt.socket), "%s",
	         opt.socket_arg != NULL ? opt.socket_arg : opt.run_dir);
	if (opt.socket_arg == NULL)
		snprintf(opt.socket + strlen(opt.socket), sizeof(opt.socket) - strlen(opt.socket),
		         "/%s", STATS_SOCKET_NAME);
	if (!opt.json && clean_stdout() != EX_OK)
		return EX_FAIL;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	switch (req.kind) {
	case REQ_LIST:
		rc = get_json("/v1/processes", &v);
		rc = emit(rc, v, print_processes);
		break;
	case REQ_THREADS:
		rc = view_pid("", req.pid, print_threads);
		break;
	case REQ_WATCH:
		rc = view_interval(req.pid, req.interval, req.count);
		break;
	case REQ_TRACE:
		rc = view_trace(req.pid);
		break;
	case REQ_OWNERS:
		rc = view_pid("/owners", req.pid, print_owners);
		break;
	case REQ_HISTORY:
		rc = view_pid("/history", req.pid, print_history);
		break;
	case REQ_SIZES:
		rc = view_pid("/sizes", req.pid, print_sizes);
		break;
	case REQ_REPORT:
		rc = report_run(
		        req.pid,
		        &(struct report_opts){.out = opt.output,
		                              .audit = !opt.no_audit,
		                              .seconds = opt.audit_for,
		                              .run_dir = opt.run_dir[0] ? opt.run_dir : NULL},
		        &report_io);
		break;
	}
	curl_global_cleanup();
	/* The tables and the JSON alike: output that did not all reach fd 1
	 * is an error. */
	errno = 0;
	bad = ferror(stdout) != 0;
	bad |= fflush(stdout) != 0;
	if (!opt.json)
		bad |= fclose(stdout) != 0;
	if (bad) {
		say("cannot write the output: %s", errno != 0 ? strerror(errno) : "error");
		if (rc == EX_OK)
			rc = EX_FAIL;
	}
	return rc;
}
