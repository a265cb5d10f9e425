/*
 * host_audit.c - a test host for scratchstat audit
 * (tests/locality/audit_host.test, tests/locality/audit_guest.sh): a block
 * that another thread, on another CPU, frees.
 *
 *   host_audit remote MIB   the main thread, pinned to CPU 0, mallocs MIB
 *                           MiB and writes every page; a thread pinned to
 *                           CPU 1 frees it (a remote free under the shim)
 *   host_audit moved MIB    the main thread, pinned to CPU 0, mallocs MIB
 *                           MiB and writes every page, then pins itself to
 *                           CPU 1 and exits (status 0) holding the block
 *
 * remote then prints
 *   block addr=0xA freer=TID
 *   ready
 * and waits, both threads alive, for SIGTERM (status 0), at most 120 s
 * (exit 3), so a test that dies never leaves it running; moved prints
 *   block addr=0xA moved cpu=1
 * A plain
 * malloc/free program: the shim, when preloaded, serves the block.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define WAIT_S 120

static char *block;
static volatile sig_atomic_t done;
static pid_t freer_tid;

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0) {
		perror("host_audit: sched_setaffinity");
		exit(2);
	}
}

static void on_term(int sig)
{
	(void)sig;
	done = 1;
}

/* Sleep until SIGTERM, or give up after WAIT_S. */
static void wait_term(void)
{
	for (int i = 0; i < WAIT_S * 10 && !done; i++) {
		struct timespec ts = {0, 100000000};

		nanosleep(&ts, NULL);
	}
	if (!done)
		_exit(3);
}

static pthread_barrier_t freed;

/* Pinned to CPU 1: free the main thread's block, then stay, so that its
 * node can be read while the process holds. */
static void *freer(void *arg)
{
	(void)arg;
	pin(1);
	freer_tid = (pid_t)syscall(SYS_gettid);
	free(block);
	pthread_barrier_wait(&freed);
	wait_term();
	return NULL;
}

int main(int argc, char **argv)
{
	struct sigaction sa = {.sa_handler = on_term};
	pthread_t t;
	size_t size;

	if (argc != 3 || (strcmp(argv[1], "remote") != 0 && strcmp(argv[1], "moved") != 0) ||
	    atoi(argv[2]) <= 0) {
		fprintf(stderr, "usage: host_audit remote|moved MIB\n");
		return 2;
	}
	size = (size_t)atoi(argv[2]) << 20;
	sigaction(SIGTERM, &sa, NULL);
	pin(0);
	block = malloc(size);
	if (block == NULL)
		return 1;
	for (size_t i = 0; i < size; i += 4096)
		block[i] = 1;
	if (strcmp(argv[1], "moved") == 0) {
		pin(1);
		printf("block addr=%p moved cpu=%d\n", (void *)block, sched_getcpu());
		return 0;
	}
	pthread_barrier_init(&freed, NULL, 2);
	if (pthread_create(&t, NULL, freer, NULL) != 0)
		return 1;
	pthread_barrier_wait(&freed);
	printf("block addr=%p freer=%d\nready\n", (void *)block, (int)freer_tid);
	fflush(stdout);
	wait_term();
	pthread_join(t, NULL);
	return 0;
}
