/*
 * spawn.c - a host that starts processes: what fork and exec cost under an
 * allocator, in a program that holds big buffers (an inference server that
 * runs a tokenizer script, a build that forks compilers, Python's
 * subprocess).
 *
 * The host keeps a 64 MiB buffer written, has freed a 32 MiB one (idle in a
 * cache that keeps it), has run a second thread that allocated and exited,
 * and keeps a worker thread parked between requests, which has written and
 * freed a 32 MiB temporary. Then, --count times each, it forks a child that exits at once
 * (fork + _exit + waitpid), and forks a child that execs --exec (by default
 * /bin/true: under an LD_PRELOADed allocator the new program loads it too, so
 * its start-up is in the figure).
 *
 * The program uses plain malloc/free and never links libscratch, so any
 * allocator can be LD_PRELOADed under it unchanged.
 *
 * Output: a human line, then one line "spawn key=value ..." for scripts:
 * fork_us and exec_us, microseconds per child from fork to its reaping.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#define MIB ((size_t)1 << 20)

/* A temporary of n bytes, written and freed. */
static void temporary(size_t n)
{
	char *p = malloc(n);

	if (p != NULL)
		memset(p, 3, n);
	bench_keep(p);
	free(p);
}

static void *other_thread(void *arg)
{
	(void)arg;
	temporary(4 * MIB);
	return NULL;
}

static pthread_barrier_t parked, done;

/* A worker between requests: its last temporary freed, waiting for work. */
static void *worker_thread(void *arg)
{
	(void)arg;
	temporary(32 * MIB);
	pthread_barrier_wait(&parked);
	pthread_barrier_wait(&done);
	return NULL;
}

/* One child per call, reaped; exec_path NULL: the child exits at once.
 * Returns 0, or -1 with a message printed. */
static int one_child(const char *exec_path)
{
	int status = 0;
	pid_t pid = fork();

	if (pid < 0) {
		fprintf(stderr, "spawn: fork: %s\n", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		if (exec_path != NULL) {
			execl(exec_path, exec_path, (char *)NULL);
			_exit(127);
		}
		_exit(0);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			fprintf(stderr, "spawn: waitpid: %s\n", strerror(errno));
			return -1;
		}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "spawn: child %s: status %#x\n", exec_path ? exec_path : "(fork)",
		        status);
		return -1;
	}
	return 0;
}

static void usage(FILE *out)
{
	fprintf(out, "usage: spawn [--count N] [--exec PROGRAM]\n"
	             "  --count N       children of each kind (default 200)\n"
	             "  --exec PROGRAM  what the exec children run, without arguments "
	             "(default /bin/true)\n");
}

int main(int argc, char **argv)
{
	unsigned long count = 200;
	const char *exec_path = "/bin/true";
	pthread_t th, worker;
	double t0, fork_s, exec_s;

	for (int i = 1; i < argc; i++) {
		char *end;

		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		}
		if (i + 1 >= argc) {
			fprintf(stderr, "spawn: %s needs a value\n", argv[i]);
			usage(stderr);
			return 2;
		}
		if (!strcmp(argv[i], "--count")) {
			errno = 0;
			count = strtoul(argv[++i], &end, 10);
			if (errno != 0 || *end != '\0' || count < 1 || count > 100000) {
				fprintf(stderr, "spawn: --count needs a number from 1 to 100000\n");
				return 2;
			}
		} else if (!strcmp(argv[i], "--exec")) {
			exec_path = argv[++i];
		} else {
			fprintf(stderr, "spawn: unknown option '%s'\n", argv[i]);
			usage(stderr);
			return 2;
		}
	}

	char *live = malloc(64 * MIB), *gone = malloc(32 * MIB);

	if (live == NULL || gone == NULL) {
		fprintf(stderr, "spawn: malloc failed\n");
		return 1;
	}
	memset(live, 1, 64 * MIB);
	memset(gone, 2, 32 * MIB);
	bench_keep(gone);
	free(gone);
	if (pthread_create(&th, NULL, other_thread, NULL) != 0 || pthread_join(th, NULL) != 0) {
		fprintf(stderr, "spawn: pthread_create failed\n");
		return 1;
	}
	pthread_barrier_init(&parked, NULL, 2);
	pthread_barrier_init(&done, NULL, 2);
	if (pthread_create(&worker, NULL, worker_thread, NULL) != 0) {
		fprintf(stderr, "spawn: pthread_create failed\n");
		return 1;
	}
	pthread_barrier_wait(&parked);

	t0 = bench_now_s();
	for (unsigned long i = 0; i < count; i++)
		if (one_child(NULL) != 0)
			return 1;
	fork_s = bench_now_s() - t0;
	t0 = bench_now_s();
	for (unsigned long i = 0; i < count; i++)
		if (one_child(exec_path) != 0)
			return 1;
	exec_s = bench_now_s() - t0;
	bench_keep(live);
	free(live);
	pthread_barrier_wait(&done);
	pthread_join(worker, NULL);

	printf("%lu forks: %.1f us each; %lu fork+exec of %s: %.1f us each\n", count,
	       fork_s / (double)count * 1e6, count, exec_path, exec_s / (double)count * 1e6);
	printf("spawn fork_us=%.1f exec_us=%.1f\n", fork_s / (double)count * 1e6,
	       exec_s / (double)count * 1e6);
	return 0;
}
