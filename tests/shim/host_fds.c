/*
 * host_fds.c - what a host sees of its own file descriptors at each stage
 * of its life: at start, after four threads made the pools grow (128 KiB to
 * 64 MiB, every request a growth and so a growth trace), in a child it
 * forks (at its start and after growing there too), and in the image it
 * then execs (the same two).
 *
 *   host_fds list   prints one line per stage, "<stage>: <fd>:<type> ...",
 *                   on stdout; shim_fds.test requires the same lines
 *                   without the shim and under each shim.
 *   host_fds mark   prints nothing; at each stage and after every malloc
 *                   and free it writes a marker to fd -1 (EBADF, no effect)
 *                   which shim_strace.test uses to cut an strace log into
 *                   the calls the host made.
 *
 * Exits 0, or 1 when a block was not served or not intact (on stderr).
 */
#include "config.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host_grow.h"

static bool marking;

/* A marker write: strace shows write(-1, "host_fds: <what>", n) = -1 EBADF. */
static void mark(const char *what)
{
	char line[80];
	int n = snprintf(line, sizeof(line), "host_fds: %s", what);

	if (write(-1, line, (size_t)n) >= 0)
		fprintf(stderr, "host_fds: a write to fd -1 succeeded\n");
}

static void mark_call(void)
{
	mark("call");
}

static const char *fd_type(int fd)
{
	struct stat st;

	if (fstat(fd, &st) != 0)
		return "closed";
	switch (st.st_mode & S_IFMT) {
	case S_IFREG:
		return "file";
	case S_IFIFO:
		return "pipe";
	case S_IFCHR:
		return "chr";
	case S_IFSOCK:
		return "socket";
	case S_IFDIR:
		return "dir";
	default:
		return "other"; /* anonymous inodes: eventfd, epoll, memfd... */
	}
}

/* "<stage>: 0:chr 1:file ..." in fd order (readdir of /proc/self/fd is in
 * fd order), without the directory's own descriptor. */
static void list_fds(const char *stage)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	printf("%s:", stage);
	while (d && (e = readdir(d)) != NULL) {
		int fd = atoi(e->d_name);

		if (e->d_name[0] != '.' && fd != dirfd(d))
			printf(" %d:%s", fd, fd_type(fd));
	}
	printf("%s\n", d ? "" : " (no /proc/self/fd)");
	if (d)
		closedir(d);
	fflush(stdout);
}

static void stage(const char *name)
{
	if (marking)
		mark(name);
	else
		list_fds(name);
}

/* Four threads, 128 KiB to 64 MiB, 10 blocks held per round, 3 rounds. */
static int grow(uint64_t seed)
{
	struct host_grow g = {
	        .min = 128 * HOST_KIB,
	        .max = 64 * HOST_MIB,
	        .blocks = 10,
	        .rounds = 3,
	        .seed = seed,
	        .after_call = marking ? mark_call : NULL,
	};
	int bad = host_grow_threads(&g, 4);

	if (bad != 0)
		fprintf(stderr, "host_fds: %d blocks not served or not intact\n", bad);
	return bad != 0;
}

/* Fork: the child lists what it inherited, grows, lists again. */
static int fork_stage(void)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		stage("child");
		int bad = grow(300);
		stage("child grown");
		exit(bad);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid) {
		perror("host_fds: fork");
		return 1;
	}
	stage("parent after fork");
	return !WIFEXITED(status) || WEXITSTATUS(status) != 0;
}

int main(int argc, char **argv)
{
	bool exec_image = argc > 2 && !strcmp(argv[2], "exec");
	int bad;

	if (argc < 2 || (strcmp(argv[1], "list") && strcmp(argv[1], "mark"))) {
		fprintf(stderr, "usage: host_fds list|mark\n");
		return 2;
	}
	marking = !strcmp(argv[1], "mark");
	stage(exec_image ? "exec start" : "start");
	bad = grow(exec_image ? 200 : 100);
	stage(exec_image ? "exec grown" : "grown");
	if (exec_image || bad)
		return bad;
	if (fork_stage())
		return 1;
	stage("exec");
	execl("/proc/self/exe", argv[0], argv[1], "exec", (char *)NULL);
	perror("host_fds: exec");
	return 1;
}
