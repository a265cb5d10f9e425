/*
 * common.c - run directory, peer credentials, clocks and /proc helpers for
 * scratchd and scratchstat (see common.h).
 */
#include "config.h"

#include <stdarg.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

int stats_run_dir(const char *dir, bool create, char *buf, size_t len, char *err, size_t errlen)
{
	const char *env;
	struct stat st;
	int n;

	if (dir != NULL)
		n = snprintf(buf, len, "%s", dir);
	else if ((env = getenv("SCRATCH_RUNTIME_DIR")) != NULL && *env != '\0')
		n = snprintf(buf, len, "%s", env);
	else if ((env = getenv("XDG_RUNTIME_DIR")) != NULL && *env == '/')
		n = snprintf(buf, len, "%s/scratch", env);
	else
		n = snprintf(buf, len, "/dev/shm/scratch-%u", (unsigned)geteuid());
	if (n < 0 || (size_t)n + sizeof(STATS_SOCKET_NAME) + 2 > len) {
		snprintf(err, errlen, "run directory name too long");
		return -ENAMETOOLONG;
	}
	/* "<dir>/scratchd.sock" and its NUL must fit a Unix socket address */
	if ((size_t)n + 1 + sizeof(STATS_SOCKET_NAME) >
	    sizeof(((struct sockaddr_un *)NULL)->sun_path)) {
		snprintf(err, errlen, "socket path too long: %.200s%s/%s (at most %zu bytes)", buf,
		         n > 200 ? "..." : "", STATS_SOCKET_NAME,
		         sizeof(((struct sockaddr_un *)NULL)->sun_path) - 1);
		return -ENAMETOOLONG;
	}
	if (create && mkdir(buf, 0700) != 0 && errno != EEXIST) {
		snprintf(err, errlen, "cannot create %s: %s", buf, strerror(errno));
		return -errno;
	}
	if (lstat(buf, &st) != 0) {
		int e = errno;

		snprintf(err, errlen, "%s: %s", buf, strerror(e));
		return -e;
	}
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077) != 0) {
		snprintf(err, errlen, "%s must be a directory of mode 0700 owned by uid %u", buf,
		         (unsigned)geteuid());
		return -EPERM;
	}
	return 0;
}

int stats_peer_uid(int fd, uid_t *ret_uid)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
		return -errno;
	*ret_uid = cred.uid;
	return 0;
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t stats_realtime_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}

uint64_t stats_mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

char *stats_read_file(const char *path, size_t max, size_t *ret_len)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || buf == NULL)
		goto out_fail;
	for (;;) {
		ssize_t n;

		if (cap - len < 2) {
			char *nb;

			if (cap >= max) {
				errno = EFBIG;
				goto out_fail;
			}
			nb = realloc(buf, cap * 2);
			if (nb == NULL)
				goto out_fail;
			buf = nb;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto out_fail;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	if (ret_len != NULL)
		*ret_len = len;
	return buf;
out_fail:
	if (fd >= 0) {
		int e = errno;

		close(fd);
		errno = e;
	}
	free(buf);
	return NULL;
}

int stats_proc_start_ticks(pid_t pid, uint64_t *ret_ticks)
{
	char path[64], *buf, *p;
	int field = 2;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	buf = stats_read_file(path, 8192, NULL);
	if (buf == NULL)
		return errno == ENOENT || errno == ESRCH ? -ENOENT : -errno;
	p = strrchr(buf, ')');
	for (p = p != NULL ? p + 1 : buf + strlen(buf); *p != '\0'; p++) {
		if (*p == ' ' && ++field == 22) {
			*ret_ticks = strtoull(p + 1, NULL, 10);
			free(buf);
			return 0;
		}
	}
	free(buf);
	return -EINVAL;
}

void stats_mask_controls(char *s)
{
	char *o = s;

	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == 0xc2 && (unsigned char)s[1] >= 0x80 && (unsigned char)s[1] <= 0x9f) {
			*o++ = '?'; /* a C1 control, U+0080-U+009F in UTF-8 */
			s++;
		} else {
			*o++ = c < 0x20 || c == 0x7f ? '?' : *s;
		}
	}
	*o = '\0';
}

int stats_fail(char *err, size_t errlen, int e, const char *fmt, ...)
{
	va_list ap;

	if (err != NULL && errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -e;
}

void stats_log(const char *prog, const char *fmt, ...)
{
	char line[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	stats_mask_controls(line);
	fprintf(stderr, "%s: %s\n", prog, line);
}

const char *stats_human(uint64_t v, char *buf, size_t len)
{
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
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

bool stats_parse_pid(const char *s, pid_t *ret)
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
