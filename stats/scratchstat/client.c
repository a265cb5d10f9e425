/*
 * client.c - HTTP over scratchd's Unix socket with libcurl, and starting
 * scratchd when none answers (client.h).
 */
#include "config.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
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

#include "client.h"
#include "text.h"

static struct {
	char socket[PATH_MAX];
	char run_dir[PATH_MAX];
	bool may_start;
	char why_not[128];
} cl;

void client_setup(const struct client_conf *conf)
{
	snprintf(cl.socket, sizeof(cl.socket), "%s", conf->socket);
	snprintf(cl.run_dir, sizeof(cl.run_dir), "%s", conf->run_dir != NULL ? conf->run_dir : "");
	cl.may_start = conf->may_start;
	snprintf(cl.why_not, sizeof(cl.why_not), "%s", conf->why_not != NULL ? conf->why_not : "");
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

void client_cleanup(void)
{
	curl_global_cleanup();
}

void client_say(const char *fmt, ...)
{
	char line[PATH_MAX + 512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* Arguments and the daemon's answers are quoted here: text_log masks
	 * their control characters. */
	text_log("scratchstat", "%s", line);
}

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
	curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, cl.socket);
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
		client_say("%s: %s", path, curl_easy_strerror(rc));
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
	if (strlen(cl.socket) >= sizeof(sa.sun_path)) {
		close(fd);
		return false;
	}
	memcpy(sa.sun_path, cl.socket, strlen(cl.socket) + 1);
	ok = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	close(fd);
	return ok;
}

/* Where scratchd is: $SCRATCHD, next to us, ../sbin from us,
 * ../scratchd/scratchd from us (a build tree: stats/scratchstat/ beside
 * stats/scratchd/), the install sbindir, else PATH. */
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
			snprintf(buf, len, "%.*s/../scratchd/scratchd", PATH_MAX - 32, self);
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
	snprintf(log, sizeof(log), "%s/scratchd.log", cl.run_dir);
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
		execlp(exe, "scratchd", "--run-dir", cl.run_dir, (char *)NULL);
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
	client_say("started %s, but it does not answer on %s (see %s)", exe, cl.socket, log);
	return -ETIMEDOUT;
}

/* GET path as JSON. Starts the daemon when needed. Exit status style. */
int client_get_json(const char *path, json_t **ret)
{
	struct body b = {0};
	json_error_t jerr;
	long status = 0;
	int rc = http_get(path, &b, &status, false);

	if (rc == EX_NODAEMON && cl.may_start && start_daemon() == 0) {
		free(b.p);
		memset(&b, 0, sizeof(b));
		rc = http_get(path, &b, &status, false);
	}
	if (rc == EX_NODAEMON) {
		if (cl.may_start)
			client_say("no scratchd answers on %s", cl.socket);
		else
			client_say("no scratchd answers on %s (not started: %s)", cl.socket,
			           cl.why_not);
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
		client_say("%s: bad answer from scratchd: %s", path, jerr.text);
		return EX_FAIL;
	}
	if (status == 404) {
		json_decref(*ret);
		return EX_NOPROC;
	}
	if (status != 200) {
		client_say("%s: HTTP %ld: %s", path, status,
		           json_string_value(json_object_get(*ret, "error")));
		json_decref(*ret);
		return EX_FAIL;
	}
	return EX_OK;
}

int client_get_text(const char *path, char **ret_body, long *ret_status)
{
	struct body b = {0};
	int rc;

	*ret_status = 0;
	rc = http_get(path, &b, ret_status, false);
	if (rc != EX_OK) {
		free(b.p);
		return rc;
	}
	*ret_body = b.p;
	return EX_OK;
}

int client_stream(const char *path, client_line_fn line, void *ctx, long *ret_status,
                  char **ret_body)
{
	struct body b = {.line = line, .ctx = ctx};
	int rc;

	*ret_status = 0;
	rc = http_get(path, &b, ret_status, true);
	*ret_body = b.p;
	return rc;
}
