/*
 * rundir.c - the run directory's name and checks (rundir.h).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "protocol.h"
#include "rundir.h"

int rundir_resolve(const char *dir, bool create, char *buf, size_t len, char *err, size_t errlen)
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
	if (n < 0 || (size_t)n + sizeof(PROTOCOL_SOCKET_NAME) + 2 > len) {
		snprintf(err, errlen, "run directory name too long");
		return -ENAMETOOLONG;
	}
	/* "<dir>/scratchd.sock" and its NUL must fit a Unix socket address */
	if ((size_t)n + 1 + sizeof(PROTOCOL_SOCKET_NAME) >
	    sizeof(((struct sockaddr_un *)NULL)->sun_path)) {
		snprintf(err, errlen, "socket path too long: %.200s%s/%s (at most %zu bytes)", buf,
		         n > 200 ? "..." : "", PROTOCOL_SOCKET_NAME,
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
