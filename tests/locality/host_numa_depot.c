/*
 * host_numa_depot.c - the pools' per-node depot and node-following caches
 * (per_node) in the two-node guest (tests/locality/guest_locality.test), with
 * move_pages(2) as ground truth. Linked with libscratch; SCRATCH_CONF sets
 * per_node on or off.
 *
 *   host_numa_depot handover MIB
 *       a thread on CPU 0 acquires MIB MiB, writes it all, releases it and
 *       flushes its cache (the block goes to the depot); a thread on CPU 1
 *       then acquires MIB MiB and writes it all; then a thread on CPU 0
 *       acquires MIB MiB again
 *   host_numa_depot migrate MIB
 *       a thread on CPU 0 acquires MIB MiB, writes it, releases it (its
 *       cache keeps it), pins itself to CPU 1 and acquires 3/4 of MIB MiB
 *       (a class below: a slow-path request its idle block could serve),
 *       and writes it all
 *   host_numa_depot repin MIB
 *       a thread on CPU 0 acquires MIB MiB, writes it, releases it (its
 *       cache keeps it) and pins itself to CPU 1, where it makes no call
 *       that could notice; the main thread starts the decay thread (a
 *       slow-path acquire of 64 KiB once the pools are 1.2 s old); the
 *       thread waits (at most 3 s) for a pass to take its idle block, says
 *       whether one did ("repinned evicted=0|1"), then acquires MIB MiB
 *       again (a hit of its own bin, unless the block was taken) and
 *       writes it all. Run it with decay_ms:4000: a pass each second, and
 *       no block idle long enough to decay meanwhile
 *   host_numa_depot cost
 *       ns per call of getcpu, move_pages of 1 and of 8 pages, and
 *       get_mempolicy(MPOL_F_NODE|MPOL_F_ADDR) of one page; then, for an
 *       untouched page, whether each makes it present and the node
 *       get_mempolicy gives it (move_pages says "not present")
 *
 * Lines, key=value (the test greps them):
 *   conf per_node=0|1                        the key in force
 *   <step> node0=N node1=N absent=N          pages of the block, after its write
 *   <step> addr=0xA same=0|1 cpu=C           same: the block of the first step
 *   <step> hits=N depot_hits=N misses=N      the thread's counters
 *   <step> t_retained=B t_leased=B p_retained=B p_leased=B
 *                                            this thread's and the process's bytes
 * Exit: 0 done, 2 a call failed (the reason on stderr).
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
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "scratch.h"

#define PAGE  4096UL
#define BATCH 1024

static size_t size;
static void *first_block;
static int repinned; /* the repin thread is on CPU 1 */

static void die(const char *what)
{
	fprintf(stderr, "host_numa_depot: %s: %s\n", what, strerror(errno));
	exit(2);
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0)
		die("sched_setaffinity");
}

/* "<step> node0=N node1=N absent=N" for the len bytes at p. */
static void placement(const char *step, char *p, size_t len)
{
	unsigned long counts[3] = {0, 0, 0};
	void *pages[BATCH];
	int status[BATCH];

	for (char *at = p; at < p + len;) {
		unsigned long n = 0;

		for (; n < BATCH && at < p + len; n++, at += PAGE)
			pages[n] = at;
		if (syscall(SYS_move_pages, 0, n, pages, NULL, status, 0) != 0)
			die("move_pages");
		for (unsigned long i = 0; i < n; i++)
			counts[status[i] == 0 ? 0 : status[i] == 1 ? 1 : 2]++;
	}
	printf("%s node0=%lu node1=%lu absent=%lu\n", step, counts[0], counts[1], counts[2]);
}

/* The lines of step for block p, acquired by this thread. */
static void report(const char *step, char *p)
{
	struct scratch_stats t = {.size = sizeof(t)}, s = {.size = sizeof(s)};

	if (scratch_stats_thread(&t) != 0 || scratch_stats_total(&s) != 0)
		die("scratch_stats");
	printf("%s addr=%p same=%d cpu=%d\n", step, (void *)p, p == first_block, sched_getcpu());
	printf("%s hits=%llu depot_hits=%llu misses=%llu\n", step, (unsigned long long)t.hits,
	       (unsigned long long)t.depot_hits, (unsigned long long)t.misses);
	printf("%s t_retained=%llu t_leased=%llu p_retained=%llu p_leased=%llu\n", step,
	       (unsigned long long)t.retained, (unsigned long long)t.leased,
	       (unsigned long long)s.retained, (unsigned long long)s.leased);
}

/* Acquire len bytes on CPU cpu, write them all, report as step. */
static char *use(const char *step, int cpu, size_t len)
{
	char *p;

	pin(cpu);
	p = scratch_acquire(len);
	if (p == NULL)
		die("scratch_acquire");
	memset(p, 0x5a, len);
	report(step, p);
	placement(step, p, len);
	return p;
}

static void *released_on_0(void *arg)
{
	(void)arg;
	first_block = use("released", 0, size);
	scratch_release(first_block);
	scratch_thread_flush(); /* into the depot, as a thread's exit does */
	return NULL;
}

static void *acquired_on_1(void *arg)
{
	char *p = use("acquired", 1, size);

	(void)arg;
	scratch_release(p);
	scratch_thread_flush();
	return NULL;
}

static void *again_on_0(void *arg)
{
	char *p = use("again", 0, size);

	(void)arg;
	scratch_release(p);
	scratch_thread_flush();
	return NULL;
}

static void *mover(void *arg)
{
	char *p;

	(void)arg;
	first_block = use("cached", 0, size);
	scratch_release(first_block); /* cached: the fast path keeps it */
	p = use("moved", 1, size / 4 * 3);
	scratch_release(p);
	return NULL;
}

static int kicked; /* start_decay's lease is released */

static void *repin(void *arg)
{
	struct scratch_stats t = {.size = sizeof(t)};
	char *p;
	int i;

	(void)arg;
	first_block = use("pinned", 0, size);
	scratch_release(first_block); /* cached: only a pass can take it */
	pin(1);
	__atomic_store_n(&repinned, 1, __ATOMIC_RELEASE);
	for (i = 0; i < 300; i++) {
		if (scratch_stats_thread(&t) != 0)
			die("scratch_stats_thread");
		if (t.retained == 0)
			break;
		usleep(10000);
	}
	/* the main thread's own 64 KiB lease, which started the decay thread,
	 * is back before the figures below are read (their exact bytes) */
	for (int j = 0; j < 300 && !__atomic_load_n(&kicked, __ATOMIC_ACQUIRE); j++)
		usleep(10000);
	printf("repinned evicted=%d\n", i < 300);
	p = use("repinned", 1, size);
	scratch_release(p);
	return NULL;
}

static double now_ns(void);

/* The repin case's main thread: the decay thread starts at its slow-path
 * acquire once the pools are 1.2 s old (they were born before t0). */
static void start_decay(double t0)
{
	void *p;

	while (!__atomic_load_n(&repinned, __ATOMIC_ACQUIRE))
		usleep(1000);
	while (now_ns() - t0 < 1.2e9)
		usleep(10000);
	p = scratch_acquire(64 << 10);
	if (p == NULL)
		die("scratch_acquire");
	scratch_release(p);
	__atomic_store_n(&kicked, 1, __ATOMIC_RELEASE);
}

static void run(void *(*fn)(void *))
{
	pthread_t t;

	if (pthread_create(&t, NULL, fn, NULL) != 0 || pthread_join(t, NULL) != 0)
		die("pthread_create");
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Is the page at p present (move_pages reports a node)? */
static bool present(void *p)
{
	int st;

	if (syscall(SYS_move_pages, 0, 1UL, &p, NULL, &st, 0) != 0)
		die("move_pages");
	return st >= 0;
}

#define MPOL_F_NODE_ 1
#define MPOL_F_ADDR_ 2

static int cost(void)
{
	enum { N = 20000 };
	char *buf =
	        mmap(NULL, 64 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void *pages[8];
	int st[8], node;
	unsigned cpu, nd;
	double t0, t[4];

	if (buf == MAP_FAILED)
		die("mmap");
	madvise(buf, 64 * PAGE, MADV_NOHUGEPAGE);
	memset(buf, 1, 32 * PAGE); /* the first half present, the second not */
	for (int i = 0; i < 8; i++)
		pages[i] = buf + (size_t)i * 4 * PAGE;
	t0 = now_ns();
	for (int i = 0; i < N; i++)
		getcpu(&cpu, &nd);
	t[0] = now_ns() - t0;
	t0 = now_ns();
	for (int i = 0; i < N; i++)
		syscall(SYS_move_pages, 0, 1UL, pages, NULL, st, 0);
	t[1] = now_ns() - t0;
	t0 = now_ns();
	for (int i = 0; i < N; i++)
		syscall(SYS_move_pages, 0, 8UL, pages, NULL, st, 0);
	t[2] = now_ns() - t0;
	t0 = now_ns();
	for (int i = 0; i < N; i++)
		syscall(SYS_get_mempolicy, &node, NULL, 0UL, buf, MPOL_F_NODE_ | MPOL_F_ADDR_);
	t[3] = now_ns() - t0;
	printf("cost getcpu_ns=%.0f move_pages1_ns=%.0f move_pages8_ns=%.0f "
	       "get_mempolicy_ns=%.0f\n",
	       t[0] / N, t[1] / N, t[2] / N, t[3] / N);
	/* an untouched page, read by each */
	printf("untouched before=%d", present(buf + 40 * PAGE));
	syscall(SYS_move_pages, 0, 1UL, (void *[]){buf + 40 * PAGE}, NULL, st, 0);
	printf(" after_move_pages=%d", present(buf + 40 * PAGE));
	if (syscall(SYS_get_mempolicy, &node, NULL, 0UL, buf + 40 * PAGE,
	            MPOL_F_NODE_ | MPOL_F_ADDR_) != 0)
		die("get_mempolicy");
	printf(" after_get_mempolicy=%d get_mempolicy_node=%d\n", present(buf + 40 * PAGE), node);
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t v = 0;

	if (argc == 2 && strcmp(argv[1], "cost") == 0)
		return cost();
	if (argc != 3 || (size = strtoul(argv[2], NULL, 10) << 20) == 0)
		goto usage;
	if (scratch_conf_get("per_node", &v) != 0)
		die("scratch_conf_get");
	printf("conf per_node=%llu\n", (unsigned long long)v);
	if (strcmp(argv[1], "handover") == 0) {
		run(released_on_0);
		run(acquired_on_1);
		run(again_on_0);
	} else if (strcmp(argv[1], "migrate") == 0) {
		run(mover);
	} else if (strcmp(argv[1], "repin") == 0) {
		double t0 = now_ns();
		pthread_t t;

		if (pthread_create(&t, NULL, repin, NULL) != 0)
			die("pthread_create");
		start_decay(t0);
		pthread_join(t, NULL);
	} else {
		goto usage;
	}
	return 0;
usage:
	fprintf(stderr, "usage: host_numa_depot handover|migrate|repin MIB\n"
	                "       host_numa_depot cost\n");
	return 2;
}
