/*
 * sys.c - what scratchd and scratchstat read from the system (sys.h):
 * clocks, procfs files, a process's start time, a socket peer's uid.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "sys.h"

int sys_peer_uid(int fd, uid_t *ret_uid)
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

uint64_t sys_realtime_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}

uint64_t sys_mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

char *sys_read_file(const char *path, size_t max, size_t *ret_len)
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

int sys_proc_start_ticks(pid_t pid, uint64_t *ret_ticks)
{
	char path[64], *buf, *p;
	int field = 2;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	buf = sys_read_file(path, 8192, NULL);
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
