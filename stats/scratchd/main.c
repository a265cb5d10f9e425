/*
 * main.c - scratchd, the stats daemon: its options, its socket and the
 * poll loop that drives the registry.
 *
 * The loop waits on the run directory's inotify watch and a signalfd, with
 * a tick of a tenth of the interval (at most 100 ms): every tick it hands
 * new segment names to the registry and drains the trace rings, every
 * interval it has the registry sample. The process table is registry.c;
 * the HTTP side, which reads it, is serve.c.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "protocol.h"
#include "registry.h"
#include "rundir.h"
#include "serve.h"
#include "sys.h"
#include "text.h"

static struct registry_conf conf = REGISTRY_CONF_DEFAULT;

#define logmsg(...) text_log("scratchd", __VA_ARGS__)

/* ---------------------------------------------------------------------- */
/* The socket                                                              */
/* ---------------------------------------------------------------------- */

/* The socket systemd passed (LISTEN_FDS, first fd 3), or -1. */
static int activated_socket(void)
{
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");

	if (pid == NULL || fds == NULL || strtol(pid, NULL, 10) != (long)getpid() ||
	    strtol(fds, NULL, 10) < 1)
		return -1;
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	fcntl(3, F_SETFD, FD_CLOEXEC);
	return 3;
}

/*
 * Create the listening socket as tmux does: check the path fits, refuse to
 * replace a socket another daemon still answers on, and create it with a
 * umask that leaves it 0600 from the start (no window where it is open).
 */
static int make_socket(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	mode_t mask;
	int fd, e;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "socket path too long: %s", path);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		goto out_err;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		close(fd);
		snprintf(err, errlen, "another scratchd is running on %s", path);
		return -EADDRINUSE;
	}
	close(fd);
	unlink(path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		goto out_err;
	mask = umask(S_IXUSR | S_IRWXG | S_IRWXO);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		e = errno;
		umask(mask);
		close(fd);
		errno = e;
		goto out_err;
	}
	umask(mask);
	if (listen(fd, 64) != 0) {
		e = errno;
		close(fd);
		errno = e;
		goto out_err;
	}
	return fd;
out_err:
	e = errno;
	snprintf(err, errlen, "%s: %s", path, strerror(e));
	return -e;
}

/* ---------------------------------------------------------------------- */
/* Main                                                                    */
/* ---------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f, "usage: scratchd [-v] [--run-dir DIR] [--interval SECONDS] [--history N]\n"
	           "                [--retention SECONDS] [--trace-keep N] [--max-exited N]\n"
	           "                [--memory-budget BYTES[K|M|G]] [--listen 127.0.0.1:PORT]\n");
}

static bool parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *ret)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi || *s == '-')
		return false;
	*ret = v;
	return true;
}

/* A byte count with an optional K, M or G (powers of 1024), from 1 MiB to
 * 1 TiB. */
static bool parse_bytes(const char *s, uint64_t *ret)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || end == s || *s == '-')
		return false;
	if (*end != '\0') {
		const char *units = "KMG", *u = strchr(units, *end);

		if (u == NULL || end[1] != '\0')
			return false;
		shift = 10 * (unsigned)(u - units + 1);
	}
	if (v > (UINT64_C(1) << 40) >> shift)
		return false;
	v <<= shift;
	if (v < (UINT64_C(1) << 20))
		return false;
	*ret = v;
	return true;
}

static bool parse_seconds_ms(const char *s, uint64_t *ret_ms)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || !(v >= 0.01 && v <= 3600))
		return false;
	*ret_ms = (uint64_t)(v * 1000.0 + 0.5);
	return true;
}

static int parse_args(int argc, char **argv, const char **run_dir, const char **listen_on)
{
	static const struct option opts[] = {
	        {"run-dir", required_argument, NULL, 'd'},
	        {"interval", required_argument, NULL, 'i'},
	        {"history", required_argument, NULL, 'H'},
	        {"retention", required_argument, NULL, 'r'},
	        {"trace-keep", required_argument, NULL, 'k'},
	        {"max-exited", required_argument, NULL, 'x'},
	        {"memory-budget", required_argument, NULL, 'm'},
	        {"listen", required_argument, NULL, 'l'},
	        {"verbose", no_argument, NULL, 'v'},
	        {"help", no_argument, NULL, 'h'},
	        {"version", no_argument, NULL, 'V'},
	        {NULL, 0, NULL, 0},
	};
	uint64_t v;
	int c;

	while ((c = getopt_long(argc, argv, "d:i:H:r:k:x:m:l:vhV", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			*run_dir = optarg;
			break;
		case 'i':
			if (!parse_seconds_ms(optarg, &conf.interval_ms))
				goto out_bad;
			break;
		case 'H':
			if (!parse_u64(optarg, 2, 1000000, &v))
				goto out_bad;
			conf.history = (uint32_t)v;
			break;
		case 'r':
			if (!parse_u64(optarg, 0, 86400 * 365, &conf.retention_s))
				goto out_bad;
			break;
		case 'k':
			if (!parse_u64(optarg, 16, 1u << 24, &v))
				goto out_bad;
			conf.trace_keep = (uint32_t)v;
			break;
		case 'x':
			if (!parse_u64(optarg, 0, 1000000, &v))
				goto out_bad;
			conf.max_exited = (uint32_t)v;
			break;
		case 'm':
			if (!parse_bytes(optarg, &conf.budget))
				goto out_bad;
			break;
		case 'l': {
			struct sockaddr_in sa;
			char err[160];

			if (serve_parse_listen(optarg, &sa, err, sizeof(err)) != 0) {
				logmsg("%s", err);
				return 2;
			}
			*listen_on = optarg;
			break;
		}
		case 'v':
			conf.verbose = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			text_version("scratchd");
			exit(0);
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	return 0;
out_bad:
	for (const struct option *o = opts; o->name != NULL; o++)
		if (o->val == c)
			logmsg("invalid value for --%s: '%s' (expected %s)", o->name, optarg,
			       c == 'i'   ? "seconds from 0.01 to 3600"
			       : c == 'H' ? "a whole number from 2 to 1000000"
			       : c == 'r' ? "seconds from 0 to 31536000"
			       : c == 'x' ? "a whole number from 0 to 1000000"
			       : c == 'm' ? "bytes from 1M to 1024G, with K, M or G"
			                  : "a whole number from 16 to 16777216");
	return 2;
}

/* One descriptor per live process: take the hard limit. */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static void handle_inotify(int fd)
{
	char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n = read(fd, buf, sizeof(buf));

	for (char *p = buf; n > 0 && p < buf + n;) {
		struct inotify_event *e = (struct inotify_event *)p;

		if (e->mask & IN_Q_OVERFLOW)
			registry_rescan();
		else if (e->len > 0)
			registry_adopt(e->name);
		p += sizeof(*e) + e->len;
	}
}

static int loop(int ino, int sig)
{
	uint64_t tick_ms = conf.interval_ms / 10 < 100 ? conf.interval_ms / 10 : 100;
	uint64_t next_sample = 0;

	if (tick_ms < 5)
		tick_ms = 5;
	for (;;) {
		struct pollfd pf[2] = {{.fd = ino, .events = POLLIN},
		                       {.fd = sig, .events = POLLIN}};
		uint64_t now;

		if (poll(pf, 2, (int)tick_ms) < 0 && errno != EINTR) {
			logmsg("poll: %s", strerror(errno));
			return 1;
		}
		if (pf[1].revents & POLLIN) {
			struct signalfd_siginfo si;

			if (read(sig, &si, sizeof(si)) == sizeof(si)) {
				if (conf.verbose)
					logmsg("signal %u: stopping", si.ssi_signo);
				return 0;
			}
		}
		registry_lock();
		if (pf[0].revents & POLLIN)
			handle_inotify(ino);
		registry_drain();
		now = sys_mono_ns() / 1000000u;
		if (now >= next_sample) {
			registry_sample();
			next_sample = now + conf.interval_ms;
		}
		registry_unlock();
	}
}

/*
 * The poll loop's descriptors: a signalfd for SIGTERM, SIGINT and SIGHUP
 * (blocked here, before any thread starts, so every HTTP thread inherits
 * the mask) and an inotify watch on the run directory. Returns 0, or -1
 * with the cause logged.
 */
static int watch(const char *run_dir, int *ret_ino, int *ret_sig)
{
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	*ret_sig = signalfd(-1, &mask, SFD_CLOEXEC);
	*ret_ino = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (*ret_sig < 0 || *ret_ino < 0 ||
	    inotify_add_watch(*ret_ino, run_dir, IN_MOVED_TO | IN_CREATE | IN_CLOSE_WRITE) < 0) {
		logmsg("inotify on %s: %s", run_dir, strerror(errno));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *run_dir_arg = NULL, *listen_on = NULL;
	char err[PATH_MAX + 128], run_dir[PATH_MAX], socket_path[PATH_MAX];
	bool activated;
	int rc, ufd, ino, sig;

	rc = parse_args(argc, argv, &run_dir_arg, &listen_on);
	if (rc != 0)
		return rc;
	raise_fd_limit();
	/* One malloc arena: samples and requests run under the registry's
	 * lock anyway, and an arena per connection thread only keeps freed
	 * memory resident (the budget bounds what the entries hold, not those
	 * free lists). */
	mallopt(M_ARENA_MAX, 1);
	if (rundir_resolve(run_dir_arg, true, run_dir, sizeof(run_dir), err, sizeof(err)) != 0) {
		logmsg("%s", err);
		return 1;
	}
	if (snprintf(socket_path, sizeof(socket_path), "%.*s/%s", PATH_MAX - 32, run_dir,
	             PROTOCOL_SOCKET_NAME) < 0)
		return 1;
	/* The registry holds the run directory's descriptor for the daemon's
	 * life: opened now, so the count of descriptors at rest is the count
	 * at start. */
	if (registry_open(&conf, run_dir, err, sizeof(err)) != 0) {
		logmsg("%s", err);
		return 1;
	}
	if (watch(run_dir, &ino, &sig) != 0)
		return 1;
	ufd = activated_socket();
	activated = ufd >= 0;
	if (ufd < 0)
		ufd = make_socket(socket_path, err, sizeof(err));
	if (ufd < 0) {
		logmsg("%s", err);
		return 1;
	}
	registry_lock();
	registry_rescan();
	registry_sample();
	registry_unlock();
	if (serve_start(ufd, socket_path, listen_on, err, sizeof(err)) != 0) {
		logmsg("%s", err);
		serve_stop();
		if (!activated)
			unlink(socket_path);
		return 1;
	}
	if (conf.verbose)
		logmsg("serving %s", socket_path);
	rc = loop(ino, sig);
	registry_lock();
	registry_stop();
	registry_unlock();
	serve_stop();
	if (!activated)
		unlink(socket_path);
	registry_close();
	return rc;
}
