/*
 * host_numa.c - a test host for the two-node guest
 * (tests/locality/guest_*.test): where the kernel puts the pages of a
 * buffer that one thread allocates and others first touch.
 *
 *   host_numa split MIB   the main thread, on CPU 0, mallocs MIB MiB; a
 *                         worker pinned to CPU 0 writes the first half, one
 *                         pinned to CPU 1 the second (halves cut on a 2 MiB
 *                         boundary, so no huge page straddles them)
 *   host_numa untouched MIB
 *                         mallocs MIB MiB and touches none of it
 *   options, after MIB:
 *     --at ADDR           map the buffer at ADDR (2 MiB aligned) instead of
 *                         malloc, so a sampler can be given its range first
 *     --late              print the buffer, wait for SIGUSR1, start the
 *                         writers (which print their tids), wait for
 *                         SIGUSR2, then let them write: an attaching sampler
 *                         can attach to the writers before they touch
 *     --nohuge            madvise(MADV_NOHUGEPAGE) on the buffer: one fault
 *                         per 4 KiB page whatever the THP setting
 *     --hold              after the placement lines print "ready" and wait
 *                         for SIGTERM, so placement can be read from outside
 *   host_numa migrate     a thread named "mv) (1 2", pinned to CPU 0, prints
 *                         "mover tid=N" and "ready"; on SIGUSR1 it pins
 *                         itself to CPU 1 and prints "moved"
 *
 * SIGTERM ends every wait (and the process, status 0); every wait gives up
 * after 120 s (exit 3), so a test that dies never leaves this running. Before touching, it prints the buffer:
 *   buffer first=0xA mid=0xM end=0xE
 * and after the writers ran (or, with --late, once they started):
 *   writer first tid=N cpu=0
 *   writer second tid=N cpu=1
 *
 * Prints, per range, the pages on node 0, on node 1 and not present, from
 * move_pages(2) with nodes=NULL (which reports, never moves or faults):
 *   first node0=N node1=N absent=N
 *   second node0=N node1=N absent=N
 * A plain malloc/free program: the shim, when preloaded, serves the buffer.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PAGE  4096UL
#define HUGE  (2UL << 20)
#define BATCH 4096

#define WAIT_S 120

struct half {
	char *from, *to;
	int cpu;
	pid_t tid;
};

/* Released by main in --late mode once the sampler has attached. */
static pthread_mutex_t go_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t go_cond = PTHREAD_COND_INITIALIZER;
static int go = 1;

/*
 * Wait for sig (blocked in every thread, like SIGTERM): SIGTERM at any wait
 * ends the process at once with status 0; exit 3 after WAIT_S.
 */
static void await(int sig)
{
	struct timespec ts = {WAIT_S, 0};
	sigset_t set;
	int got;

	sigemptyset(&set);
	sigaddset(&set, sig);
	sigaddset(&set, SIGTERM);
	while ((got = sigtimedwait(&set, NULL, &ts)) < 0) {
		if (errno != EINTR) {
			fprintf(stderr, "host_numa: no signal %d in %d s\n", sig, WAIT_S);
			exit(3);
		}
	}
	if (got == SIGTERM)
		exit(0);
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0) {
		perror("host_numa: sched_setaffinity");
		exit(2);
	}
}

static void *write_half(void *arg)
{
	struct half *h = arg;

	pin(h->cpu);
	h->tid = (pid_t)syscall(SYS_gettid);
	pthread_mutex_lock(&go_lock);
	while (!go)
		pthread_cond_wait(&go_cond, &go_lock);
	pthread_mutex_unlock(&go_lock);
	memset(h->from, 0x5a, (size_t)(h->to - h->from));
	return NULL;
}

/* Pages of [from, to) on node 0, node 1 and not present. */
static void placement(const char *name, char *from, char *to)
{
	unsigned long counts[3] = {0, 0, 0}; /* node 0, node 1, absent */
	void *pages[BATCH];
	int status[BATCH];

	for (char *p = from; p < to;) {
		unsigned long n = 0;

		for (; n < BATCH && p < to; n++, p += PAGE)
			pages[n] = p;
		if (syscall(SYS_move_pages, 0, n, pages, NULL, status, 0) != 0) {
			perror("host_numa: move_pages");
			exit(2);
		}
		for (unsigned long i = 0; i < n; i++) {
			if (status[i] == 0 || status[i] == 1)
				counts[status[i]]++;
			else if (status[i] == -ENOENT || status[i] == -EFAULT)
				counts[2]++;
			else {
				fprintf(stderr, "host_numa: page status %d\n", status[i]);
				exit(2);
			}
		}
	}
	printf("%s node0=%lu node1=%lu absent=%lu\n", name, counts[0], counts[1], counts[2]);
}

static void *mover(void *arg)
{
	(void)arg;
	pin(0);
	pthread_setname_np(pthread_self(), "mv) (1 2");
	printf("mover tid=%ld\nready\n", (long)syscall(SYS_gettid));
	fflush(stdout);
	await(SIGUSR1);
	pin(1);
	printf("moved cpu=%d\n", sched_getcpu());
	fflush(stdout);
	await(SIGTERM);
	return NULL;
}

static int migrate(void)
{
	pthread_t t;

	if (pthread_create(&t, NULL, mover, NULL) != 0) {
		fprintf(stderr, "host_numa: pthread_create failed\n");
		return 2;
	}
	pthread_join(t, NULL);
	return 0;
}

/* MIB MiB at addr (MAP_FIXED_NOREPLACE), or from malloc when addr is 0. */
static char *allocate(size_t size, uintptr_t addr)
{
	char *p;

	if (addr == 0)
		return malloc(size);
	p = mmap((void *)addr, size, PROT_READ | PROT_WRITE,
	         MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (p == MAP_FAILED || (uintptr_t)p != addr) {
		fprintf(stderr, "host_numa: cannot map at %#lx\n", (unsigned long)addr);
		exit(2);
	}
	return p;
}

/* Start the writers of the two halves; with late, they wait for SIGUSR2. */
static void split(struct half h[2], bool late)
{
	pthread_t t[2];

	go = !late;
	for (int i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, write_half, &h[i]) != 0) {
			fprintf(stderr, "host_numa: pthread_create failed\n");
			exit(2);
		}
	if (late) {
		/* Each writer sets its tid before it waits for go. */
		while (__atomic_load_n(&h[0].tid, __ATOMIC_ACQUIRE) == 0 ||
		       __atomic_load_n(&h[1].tid, __ATOMIC_ACQUIRE) == 0)
			usleep(1000);
		printf("writer first tid=%d cpu=0\nwriter second tid=%d cpu=1\n", h[0].tid,
		       h[1].tid);
		fflush(stdout);
		await(SIGUSR2);
		pthread_mutex_lock(&go_lock);
		go = 1;
		pthread_cond_broadcast(&go_cond);
		pthread_mutex_unlock(&go_lock);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	if (!late)
		printf("writer first tid=%d cpu=0\nwriter second tid=%d cpu=1\n", h[0].tid,
		       h[1].tid);
}

int main(int argc, char **argv)
{
	bool late = false, hold = false, nohuge = false;
	uintptr_t at = 0;
	size_t size;
	char *buf, *first, *mid, *end;
	sigset_t sigs;

	sigemptyset(&sigs);
	sigaddset(&sigs, SIGUSR1);
	sigaddset(&sigs, SIGUSR2);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	if (argc == 2 && strcmp(argv[1], "migrate") == 0)
		return migrate();
	if (argc < 3 || (size = strtoul(argv[2], NULL, 10) << 20) == 0)
		goto usage;
	for (int i = 3; i < argc; i++) {
		if (strcmp(argv[i], "--at") == 0 && i + 1 < argc)
			at = strtoul(argv[++i], NULL, 0);
		else if (strcmp(argv[i], "--late") == 0)
			late = true;
		else if (strcmp(argv[i], "--hold") == 0)
			hold = true;
		else if (strcmp(argv[i], "--nohuge") == 0)
			nohuge = true;
		else
			goto usage;
	}
	pin(0);
	buf = allocate(size, at);
	if (buf == NULL) {
		perror("host_numa: malloc");
		return 2;
	}
	/* Whole pages only: glibc's chunk header shares the first page. */
	first = (char *)(((uintptr_t)buf + PAGE - 1) & ~(PAGE - 1));
	end = (char *)(((uintptr_t)buf + size) & ~(PAGE - 1));
	mid = (char *)(((uintptr_t)buf + size / 2 + HUGE - 1) & ~(HUGE - 1));
	if (nohuge && madvise(first, (size_t)(end - first), MADV_NOHUGEPAGE) != 0) {
		perror("host_numa: madvise");
		return 2;
	}
	printf("buffer first=%p mid=%p end=%p\n", (void *)first, (void *)mid, (void *)end);
	fflush(stdout);
	if (strcmp(argv[1], "split") == 0) {
		struct half h[2] = {{buf, mid, 0, 0}, {mid, buf + size, 1, 0}};

		if (late)
			await(SIGUSR1);
		split(h, late);
	} else if (strcmp(argv[1], "untouched") != 0) {
		fprintf(stderr, "host_numa: unknown mode %s\n", argv[1]);
		return 2;
	}
	placement("first", first, mid);
	placement("second", mid, end);
	if (hold) {
		printf("ready\n");
		fflush(stdout);
		await(SIGTERM);
	}
	if (at == 0)
		free(buf);
	return 0;
usage:
	fprintf(stderr,
	        "usage: host_numa split|untouched MIB [--at ADDR] [--late] [--nohuge] [--hold]\n"
	        "       host_numa migrate\n");
	return 2;
}
