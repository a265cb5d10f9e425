/*
 * serve.c - scratchd's HTTP side: routes each request to a document of
 * the registry's processes (documents.c renders them, JSON on the Unix
 * socket, the Prometheus text on /metrics, also on --listen
 * 127.0.0.1:PORT, which serves nothing else: no addresses leave the
 * socket). It holds the
 * registry's lock while a document is built, never while it is sent.
 *
 *   GET /v1                          protocol and daemon facts
 *   GET /v1/processes                every known process (summary)
 *   GET /v1/processes/PID            one process with threads and owners
 *   GET /v1/processes/PID/threads    its thread table
 *   GET /v1/processes/PID/owners     its workspaces, arenas, worker pools
 *   GET /v1/processes/PID/sizes      its size classes: requests, hits, misses,
 *                                    idle and leased bytes per class
 *   GET /v1/processes/PID/trace      growths: ?since=SEQ&limit=N, &follow=1
 *                                    streams NDJSON until the process ends
 *   GET /v1/processes/PID/history    sampled totals, oldest first
 *   GET /v1/processes/PID/maps       file-backed mappings (text/plain)
 *   GET /metrics                     Prometheus text format 0.0.4
 *
 * Every peer is checked with SO_PEERCRED (same uid or root); errors are
 * JSON {"error": "..."} with a 4xx status. One thread per connection
 * (followers block in their content callback), at most 64 connections,
 * 16 KiB of request memory each, 10 s to send a request's headers.
 */
#include "config.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "documents.h"
#include "protocol.h"
#include "registry.h"
#include "serve.h"
#include "sys.h"
#include "text.h"

static struct MHD_Daemon *unix_daemon, *tcp_daemon;
static unsigned followers; /* open follow streams, under the registry's lock */

/* ---------------------------------------------------------------------- */
/* Documents                                                               */
/* ---------------------------------------------------------------------- */

/* The daemon's facts for /v1 and /v1/processes; with list, the entries and
 * the rejected files too (malloc'd arrays that point into the registry,
 * valid under its lock; daemon_facts_free). False without memory. */
static bool daemon_facts(struct documents_daemon *d, struct registry_counts *counts, bool list)
{
	const struct registry_proc **v;
	const struct registry_rejected **r;
	size_t n = 0;

	registry_counts(counts);
	*d = (struct documents_daemon){.pid = (int)getpid(),
	                               .version = PACKAGE_VERSION,
	                               .run_dir = registry_run_dir(),
	                               .conf = registry_conf(),
	                               .counts = counts};
	if (!list)
		return true;
	v = malloc((counts->live + counts->exited + 1) * sizeof(*v));
	r = malloc((counts->rejected + 1) * sizeof(*r));
	if (v == NULL || r == NULL) {
		free(v);
		free(r);
		return false;
	}
	for (const struct registry_proc *p = registry_next(NULL); p != NULL; p = registry_next(p))
		v[n++] = p;
	d->procs = v;
	d->nprocs = n;
	for (n = 0; n < counts->rejected; n++)
		r[n] = registry_rejected((uint32_t)n);
	d->rejected = r;
	d->nrejected = counts->rejected;
	return true;
}

static void daemon_facts_free(struct documents_daemon *d)
{
	free((void *)d->procs);
	free((void *)d->rejected);
}

/* The Prometheus text of every pid's newest image, malloc'd; NULL without
 * memory. Under the registry's lock. */
static char *metrics_text(size_t *ret_len)
{
	struct registry_counts counts;
	const struct registry_proc **v;
	char *buf = NULL;
	FILE *f;
	size_t n;

	registry_counts(&counts);
	v = registry_images(&n);
	if (v == NULL && counts.live + counts.exited > 0)
		return NULL;
	f = open_memstream(&buf, ret_len);
	if (f == NULL) {
		free(v);
		return NULL;
	}
	documents_metrics(f, v, n, &counts);
	free(v);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* ---------------------------------------------------------------------- */
/* Responses                                                               */
/* ---------------------------------------------------------------------- */

/*
 * A handler builds its response under the registry's lock but queues it only after
 * dropping the lock: MHD holds a response's mutex while it calls a follow
 * stream's reader, which takes the registry's lock, so queueing under the registry's lock would
 * order the two locks both ways.
 */
static __thread struct {
	struct MHD_Response *r;
	unsigned status;
	const char *type;
} pending;

static enum MHD_Result queue(struct MHD_Connection *c, unsigned status, struct MHD_Response *r,
                             const char *type)
{
	(void)c;
	if (r == NULL)
		return MHD_NO;
	pending.r = r;
	pending.status = status;
	pending.type = type;
	return MHD_YES;
}

/* Queue the pending response; call without the registry's lock. */
static enum MHD_Result flush(struct MHD_Connection *c)
{
	struct MHD_Response *r = pending.r;
	enum MHD_Result ret;

	pending.r = NULL;
	if (r == NULL)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, pending.type);
	MHD_add_response_header(r, PROTOCOL_HEADER, PROTOCOL_STR(PROTOCOL_VERSION));
	ret = MHD_queue_response(c, pending.status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result reply_json(struct MHD_Connection *c, unsigned status, json_t *j)
{
	char *s = json_dumps(j, JSON_COMPACT);
	size_t len;

	json_decref(j);
	if (s == NULL)
		return MHD_NO;
	len = strlen(s);
	s[len] = '\0';
	return queue(c, status, MHD_create_response_from_buffer(len, s, MHD_RESPMEM_MUST_FREE),
	             "application/json");
}

static enum MHD_Result reply_error(struct MHD_Connection *c, unsigned status, const char *msg)
{
	return reply_json(c, status, documents_error(msg));
}

static enum MHD_Result reply_text(struct MHD_Connection *c, char *text, size_t len,
                                  const char *type)
{
	return queue(c, MHD_HTTP_OK,
	             MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE), type);
}

/* A query argument as an unsigned number; false when present but bad. */
static bool arg_u64(struct MHD_Connection *c, const char *key, uint64_t def, uint64_t *ret)
{
	const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, key);
	char *end;

	*ret = def;
	if (v == NULL)
		return true;
	if (*v < '0' || *v > '9')
		return false;
	errno = 0;
	*ret = strtoull(v, &end, 10);
	return errno == 0 && *end == '\0';
}

static bool arg_bool(struct MHD_Connection *c, const char *key)
{
	const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, key);

	return v != NULL && (strcmp(v, "1") == 0 || strcmp(v, "true") == 0 || *v == '\0');
}

/* ---------------------------------------------------------------------- */
/* Follow mode: NDJSON streamed from a content callback                   */
/* ---------------------------------------------------------------------- */

struct follow {
	char file[NAME_MAX + 1];
	uint64_t next, lost;
	bool ended;
	char *pend; /* formatted, not yet sent */
	size_t pend_len, pend_off;
};

static void pend_line(struct follow *fw, json_t *j)
{
	char *s = json_dumps(j, JSON_COMPACT);
	size_t n;
	char *nb;

	json_decref(j);
	if (s == NULL)
		return;
	n = strlen(s);
	nb = realloc(fw->pend, fw->pend_len + n + 2);
	if (nb != NULL) {
		fw->pend = nb;
		memcpy(fw->pend + fw->pend_len, s, n);
		fw->pend[fw->pend_len + n] = '\n';
		fw->pend_len += n + 1;
	}
	free(s);
}

/* Format what is new since fw->next; true when something was added. Under
 * the registry's lock. */
static bool follow_collect(struct follow *fw)
{
	struct registry_proc *p = registry_find_file(fw->file);
	size_t before = fw->pend_len;

	if (p == NULL || registry_stopping()) {
		if (!fw->ended)
			pend_line(fw, documents_end(registry_stopping() ? "daemon stopping"
			                                                : "expired"));
		fw->ended = true;
		return fw->pend_len != before;
	}
	/* Records the stream can no longer give: the ring wrapped before they
	 * were drained, or the kept buffer (--trace-keep) dropped them. */
	uint64_t first = registry_first_seq(p);

	if (fw->next < first) {
		pend_line(fw, documents_gone(fw->next, first - 1));
		fw->next = first;
	}
	for (uint32_t i = registry_record_from(p, fw->next);
	     i < p->trace_len && fw->pend_len < 65536; i++) {
		pend_line(fw, documents_record(p, registry_record(p, i)));
		fw->next = registry_record(p, i)->seq + 1;
	}
	if (p->lost != fw->lost) {
		fw->lost = p->lost;
		pend_line(fw, documents_lost(p->lost));
	}
	if (!p->live && registry_record_from(p, fw->next) == p->trace_len && !fw->ended) {
		pend_line(fw, documents_end(p->reason));
		fw->ended = true;
	}
	return fw->pend_len != before;
}

static ssize_t follow_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct follow *fw = cls;
	size_t n;

	(void)pos;
	if (fw->pend_off == fw->pend_len) {
		struct timespec until;

		fw->pend_off = fw->pend_len = 0;
		if (fw->ended)
			return MHD_CONTENT_READER_END_OF_STREAM;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 5;
		registry_lock();
		while (!follow_collect(fw)) {
			if (registry_wait(&until) == ETIMEDOUT)
				break;
		}
		registry_unlock();
		if (fw->pend_len == 0) {
			/* A blank line keeps the stream alive and notices a
			 * client that went away. */
			buf[0] = '\n';
			return 1;
		}
	}
	n = fw->pend_len - fw->pend_off;
	if (n > max)
		n = max;
	memcpy(buf, fw->pend + fw->pend_off, n);
	fw->pend_off += n;
	return (ssize_t)n;
}

static void follow_free(void *cls)
{
	struct follow *fw = cls;

	free(fw->pend);
	free(fw);
	registry_lock();
	followers--;
	registry_wake();
	registry_unlock();
}

static enum MHD_Result reply_follow(struct MHD_Connection *c, const struct registry_proc *p,
                                    uint64_t since)
{
	struct follow *fw = calloc(1, sizeof(*fw));

	if (fw == NULL)
		return reply_error(c, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory");
	snprintf(fw->file, sizeof(fw->file), "%s", p->file);
	fw->next = since;
	fw->lost = 0;
	followers++; /* under the registry's lock: route() holds it */
	return queue(c, MHD_HTTP_OK,
	             MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, follow_read, fw,
	                                               follow_free),
	             "application/x-ndjson");
}

/* ---------------------------------------------------------------------- */
/* Routing                                                                 */
/* ---------------------------------------------------------------------- */

static enum MHD_Result route_proc(struct MHD_Connection *c, pid_t pid, const char *what)
{
	struct registry_proc *p = registry_find(pid);
	uint64_t since, limit;

	if (p == NULL)
		return reply_error(c, MHD_HTTP_NOT_FOUND, "no such process");
	if (*what == '\0' || strcmp(what, "/threads") == 0)
		registry_refresh(p);
	if (*what == '\0')
		return reply_json(c, MHD_HTTP_OK, documents_process(p));
	if (strcmp(what, "/threads") == 0)
		return reply_json(c, MHD_HTTP_OK, documents_threads(p));
	if (strcmp(what, "/owners") == 0)
		return reply_json(c, MHD_HTTP_OK, documents_owners(p));
	if (strcmp(what, "/history") == 0)
		return reply_json(c, MHD_HTTP_OK, documents_history(p, registry_conf()));
	if (strcmp(what, "/sizes") == 0) {
		registry_refresh(p);
		return reply_json(c, MHD_HTTP_OK, documents_sizes(p));
	}
	if (strcmp(what, "/maps") == 0) {
		char *m = strdup(p->maps != NULL ? p->maps : "");

		return m ? reply_text(c, m, strlen(m), "text/plain") : MHD_NO;
	}
	if (strcmp(what, "/trace") == 0) {
		if (!arg_u64(c, "since", 1, &since) || !arg_u64(c, "limit", 10000, &limit) ||
		    limit == 0 || limit > 1000000)
			return reply_error(c, MHD_HTTP_BAD_REQUEST, "bad since or limit");
		if (since == 0)
			since = 1;
		if (arg_bool(c, "follow"))
			return reply_follow(c, p, since);
		return reply_json(c, MHD_HTTP_OK, documents_trace(p, since, limit));
	}
	return reply_error(c, MHD_HTTP_NOT_FOUND, "no such resource");
}

/* /v1 (the daemon's facts) or, with list, /v1/processes. */
static enum MHD_Result reply_daemon(struct MHD_Connection *c, bool list)
{
	struct registry_counts counts;
	struct documents_daemon d;
	json_t *j;

	if (!daemon_facts(&d, &counts, list))
		return reply_error(c, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory");
	j = list ? documents_processes(&d) : documents_info(&d);
	daemon_facts_free(&d);
	return reply_json(c, MHD_HTTP_OK, j);
}

static enum MHD_Result route(struct MHD_Connection *c, const char *url)
{
	const char *rest;
	char *end;
	long pid;

	if (strcmp(url, "/metrics") == 0) {
		size_t len;
		char *t = metrics_text(&len);

		if (t == NULL)
			return reply_error(c, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory");
		return reply_text(c, t, len, "text/plain; version=0.0.4; charset=utf-8");
	}
	if (strcmp(url, "/v1") == 0 || strcmp(url, "/v1/") == 0)
		return reply_daemon(c, false);
	if (strcmp(url, "/v1/processes") == 0)
		return reply_daemon(c, true);
	if (strncmp(url, "/v1/processes/", 14) != 0)
		return reply_error(c, MHD_HTTP_NOT_FOUND, "no such resource");
	rest = url + 14;
	if (*rest < '1' || *rest > '9')
		return reply_error(c, MHD_HTTP_BAD_REQUEST, "bad pid");
	errno = 0;
	pid = strtol(rest, &end, 10);
	if (errno != 0 || pid <= 0 || pid > 0x7fffffffL || (*end != '\0' && *end != '/'))
		return reply_error(c, MHD_HTTP_BAD_REQUEST, "bad pid");
	return route_proc(c, (pid_t)pid, end);
}

static bool peer_allowed(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
	        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	uid_t uid;

	if (ci == NULL || sys_peer_uid(ci->connect_fd, &uid) != 0)
		return false;
	return uid == geteuid() || uid == 0;
}

static void waiting_set(struct MHD_Connection *c, bool in_headers);

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **state)
{
	static int first_call;
	bool tcp = cls != NULL;
	enum MHD_Result ret;

	(void)version;
	(void)upload;
	if (*state == NULL) {
		*state = &first_call;
		waiting_set(c, false); /* the request's headers are in */
		return MHD_YES;
	}
	if (*upload_size != 0) {
		*upload_size = 0; /* a GET carries no body: drop it */
		return MHD_YES;
	}
	if (!tcp && !peer_allowed(c))
		ret = reply_error(c, MHD_HTTP_FORBIDDEN, "peer refused: not the same user");
	else if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		ret = reply_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET");
	else if (tcp && strcmp(url, "/metrics") != 0)
		ret = reply_error(c, MHD_HTTP_NOT_FOUND, "only /metrics is served here");
	else {
		registry_lock();
		ret = route(c, url);
		registry_unlock();
	}
	if (ret != MHD_YES) {
		if (pending.r != NULL)
			MHD_destroy_response(pending.r);
		pending.r = NULL;
		return ret;
	}
	return flush(c);
}

/* ---------------------------------------------------------------------- */
/* Header deadline                                                         */
/* ---------------------------------------------------------------------- */

/*
 * Each connection has a thread, and MHD closes one only after its idle
 * timeout, which every byte restarts: a peer that opens connections and
 * sends headers a byte at a time would hold every thread. So a connection
 * gets SD_HEADER_DEADLINE_S seconds to deliver a request's headers, from
 * its start or from the end of its previous request; the watchdog shuts
 * down the socket of one that misses it, and MHD then closes it. Streams
 * (follow) have their headers in and are never cut. MHD reports a
 * connection closed before it closes its socket, and the entry leaves the
 * list then, under wait_lock: the watchdog never shuts a reused fd.
 */
#define SD_HEADER_DEADLINE_S 10

struct waiting {
	struct waiting *next, **prevp;
	int fd;
	bool in_headers; /* waiting for a request's headers */
	bool cut;        /* shut down by the watchdog */
	uint64_t since;  /* CLOCK_MONOTONIC ns */
};

static pthread_mutex_t wait_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wait_cond = PTHREAD_COND_INITIALIZER;
static struct waiting *waiting_head;
static pthread_t watchdog;
static bool watchdog_running, watchdog_stop;

/* Connection c waits for a request's headers from now on, or has them. */
static void waiting_set(struct MHD_Connection *c, bool in_headers)
{
	const union MHD_ConnectionInfo *ci =
	        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct waiting *w = ci != NULL ? ci->socket_context : NULL;

	if (w == NULL)
		return;
	pthread_mutex_lock(&wait_lock);
	w->in_headers = in_headers;
	w->since = sys_mono_ns();
	pthread_mutex_unlock(&wait_lock);
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
	struct waiting *w = *socket_context;

	(void)cls;
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci =
		        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);

		/* Without memory the connection just has no deadline. */
		if (ci == NULL || (w = calloc(1, sizeof(*w))) == NULL)
			return;
		w->fd = ci->connect_fd;
		w->in_headers = true;
		w->since = sys_mono_ns();
		pthread_mutex_lock(&wait_lock);
		w->next = waiting_head;
		w->prevp = &waiting_head;
		if (waiting_head != NULL)
			waiting_head->prevp = &w->next;
		waiting_head = w;
		pthread_mutex_unlock(&wait_lock);
		*socket_context = w;
		return;
	}
	if (w == NULL)
		return;
	pthread_mutex_lock(&wait_lock);
	*w->prevp = w->next;
	if (w->next != NULL)
		w->next->prevp = w->prevp;
	pthread_mutex_unlock(&wait_lock);
	free(w);
	*socket_context = NULL;
}

/* A request is done: the next one's headers are due in time again. */
static void on_completed(void *cls, struct MHD_Connection *c, void **state,
                         enum MHD_RequestTerminationCode toe)
{
	(void)cls;
	(void)state;
	(void)toe;
	waiting_set(c, true);
}

static void *watchdog_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&wait_lock);
	while (!watchdog_stop) {
		struct timespec until;
		uint64_t now = sys_mono_ns();

		for (struct waiting *w = waiting_head; w != NULL; w = w->next)
			if (w->in_headers && !w->cut &&
			    now - w->since > (uint64_t)SD_HEADER_DEADLINE_S * 1000000000u) {
				shutdown(w->fd, SHUT_RDWR);
				w->cut = true;
			}
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 1;
		pthread_cond_timedwait(&wait_cond, &wait_lock, &until);
	}
	pthread_mutex_unlock(&wait_lock);
	return NULL;
}

/*
 * MHD's own messages (a peer that closed mid-request, a failed accept):
 * masked like the daemon's log and at most 10 a minute, since any peer
 * can cause them; the count of the rest is logged when the next minute
 * starts.
 */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static uint64_t window;
	static unsigned shown, dropped;
	uint64_t now = sys_mono_ns() / 60000000000u;
	char line[512];
	size_t n;

	(void)cls;
	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	while (n > 0 && line[n - 1] == '\n')
		line[--n] = '\0';
	text_mask_controls(line);
	pthread_mutex_lock(&lock);
	if (now != window) {
		if (dropped > 0)
			fprintf(stderr, "scratchd: http: %u more messages in the last minute\n",
			        dropped);
		window = now;
		shown = dropped = 0;
	}
	if (shown < 10) {
		shown++;
		fprintf(stderr, "scratchd: http: %s\n", line);
	} else {
		dropped++;
	}
	pthread_mutex_unlock(&lock);
}

int serve_parse_listen(const char *s, struct sockaddr_in *sa, char *err, size_t errlen)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	char *end;
	long port;

	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	if (colon == NULL || (size_t)(colon - s) >= sizeof(host))
		goto out_bad;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	port = strtol(colon + 1, &end, 10);
	if (*end != '\0' || port < 1 || port > 65535 ||
	    inet_pton(AF_INET, host, &sa->sin_addr) != 1)
		goto out_bad;
	if ((ntohl(sa->sin_addr.s_addr) >> 24) != 127) {
		snprintf(err, errlen, "--listen %s: only loopback addresses (127.0.0.0/8)", s);
		return -EINVAL;
	}
	sa->sin_port = htons((uint16_t)port);
	return 0;
out_bad:
	snprintf(err, errlen, "--listen %s: expected 127.0.0.1:PORT", s);
	return -EINVAL;
}

int serve_start(int unix_fd, const char *socket_path, const char *listen_on, char *err,
                size_t errlen)
{
	static int tcp_marker;
	const unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
	                       MHD_USE_ERROR_LOG | MHD_USE_ITC;
	struct sockaddr_in sa;

	if (!watchdog_running) {
		watchdog_stop = false;
		watchdog_running = pthread_create(&watchdog, NULL, watchdog_main, NULL) == 0;
	}
	unix_daemon = MHD_start_daemon(
	        flags, 0, NULL, NULL, handle, NULL, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
	        MHD_OPTION_LISTEN_SOCKET, unix_fd, MHD_OPTION_CONNECTION_LIMIT, 64u,
	        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)16384, MHD_OPTION_CONNECTION_TIMEOUT,
	        60u, MHD_OPTION_NOTIFY_CONNECTION, on_connection, NULL, MHD_OPTION_NOTIFY_COMPLETED,
	        on_completed, NULL, MHD_OPTION_END);
	if (unix_daemon == NULL) {
		snprintf(err, errlen, "cannot serve on %s", socket_path);
		return -EIO;
	}
	if (listen_on == NULL)
		return 0;
	if (serve_parse_listen(listen_on, &sa, err, errlen) != 0)
		return -EINVAL;
	tcp_daemon = MHD_start_daemon(
	        flags, ntohs(sa.sin_port), NULL, NULL, handle, &tcp_marker,
	        MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_SOCK_ADDR,
	        (struct sockaddr *)&sa, MHD_OPTION_CONNECTION_LIMIT, 16u,
	        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)16384, MHD_OPTION_CONNECTION_TIMEOUT,
	        30u, MHD_OPTION_NOTIFY_CONNECTION, on_connection, NULL, MHD_OPTION_NOTIFY_COMPLETED,
	        on_completed, NULL, MHD_OPTION_END);
	if (tcp_daemon == NULL) {
		snprintf(err, errlen, "cannot listen on %s", listen_on);
		return -EADDRINUSE;
	}
	return 0;
}

/*
 * Stop serving. Followers were told (registry_stopping()) and send their end
 * marker; they get up to two seconds to finish before the daemon closes
 * what is left, so a client sees a complete stream.
 */
void serve_stop(void)
{
	struct timespec until;

	if (unix_daemon != NULL)
		MHD_quiesce_daemon(unix_daemon);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 2;
	registry_lock();
	while (followers > 0 && registry_wait(&until) != ETIMEDOUT)
		;
	registry_unlock();
	if (tcp_daemon != NULL)
		MHD_stop_daemon(tcp_daemon);
	if (unix_daemon != NULL)
		MHD_stop_daemon(unix_daemon);
	tcp_daemon = unix_daemon = NULL;
	if (watchdog_running) {
		pthread_mutex_lock(&wait_lock);
		watchdog_stop = true;
		pthread_cond_signal(&wait_cond);
		pthread_mutex_unlock(&wait_lock);
		pthread_join(watchdog, NULL);
		watchdog_running = false;
	}
}
