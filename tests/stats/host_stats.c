/*
 * host_stats.c - a test host with a known allocation pattern, for the
 * scratchd/scratchstat end-to-end tests. Links libscratch directly so every
 * counter is exact.
 *
 * Each of --threads workers (named "worker-I", or worker 0 --name0) runs --rounds rounds of
 * acquire+release of one block of (I + 1) * --size bytes, then acquires
 * --hold blocks of that size and keeps them. With fresh pools that gives,
 * per worker (class C = scratch_class_size((I + 1) * size)):
 *
 *   allocs = rounds + hold    hits = rounds    growths = hold (hold >= 1)
 *   frees = rounds            retained = leased = hold * C
 *
 * and hold growth records of C bytes whose call site is grow_site_worker().
 *
 * Built a second time with -DHOST_MALLOC (tests/stats/host_stats_malloc): the
 * same program with plain malloc/free, never linked with libscratch, for
 * runs under the preload shim. Each worker then also makes 5000 small
 * malloc/free pairs (the shim passes them through, counting the mallocs in
 * batches of 4096), and C is looked up
 * with dlsym (0 when no libscratch is loaded).
 * It prints "tid I TID C" per worker and "tid main TID 0", then "ready",
 * then obeys commands on stdin, answering each with "ok":
 *
 *   grow N     the main thread acquires and keeps N blocks (grow_site_main)
 *   churn N    the main thread acquires and releases one block of the same
 *              size N times (one growth when its cache has none, then hits)
 *   remote     the main thread releases worker 0's first held block
 *   larger     the main thread acquires and releases a block of 2 * --size
 *              (a growth of worker 1's class), then one of --size, which
 *              its cache serves from that block (a hit of a larger class in
 *              worker 0's class), and releases it
 *   fork       fork; the child makes one growth, reports "child PID", exits
 *   arena      (libscratch build only) an arena named "test-arena" with 4 MiB
 *              chunks takes 100000 bytes: one growth owned by the arena
 *   exit       release everything, join the workers, exit 0
 */
#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef HOST_MALLOC
#include <dlfcn.h>
#define ACQUIRE(n) malloc(n)
#define RELEASE(p) free(p)
static size_t class_size(size_t n)
{
	size_t (*f)(size_t) = (size_t(*)(size_t))dlsym(RTLD_DEFAULT, "scratch_class_size");

	return f != NULL ? f(n) : 0;
}
#else
#include "scratch.h"
#define ACQUIRE(n) scratch_acquire(n)
#define RELEASE(p) scratch_release(p)
#define class_size scratch_class_size
#endif

#define MAX_THREADS 16
#define MAX_HOLD    256

static unsigned nthreads = 2, rounds = 10, hold = 2;
static const char *name0; /* --name0: worker 0's name instead of "worker-0" */
static size_t base_size = 1 << 20;
static void *held[MAX_THREADS][MAX_HOLD];
static void *main_held[MAX_HOLD * 4];
static unsigned nmain;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t ready;
static pthread_mutex_t stop_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t stop_cond = PTHREAD_COND_INITIALIZER;
static int stopping;

__attribute__((noinline)) void *grow_site_worker(size_t size);
__attribute__((noinline)) void *grow_site_main(size_t size);

__attribute__((noinline)) void *grow_site_worker(size_t size)
{
	void *p = ACQUIRE(size);

	__asm__ volatile("" ::: "memory"); /* keep the frame: no tail call */
	return p;
}

__attribute__((noinline)) void *grow_site_main(size_t size)
{
	void *p = ACQUIRE(size);

	__asm__ volatile("" ::: "memory");
	return p;
}

static void *worker(void *arg)
{
	unsigned i = (unsigned)(uintptr_t)arg;
	size_t size = (i + 1) * base_size;
	char name[16];

	snprintf(name, sizeof(name), "worker-%u", i);
	pthread_setname_np(pthread_self(), i == 0 && name0 != NULL ? name0 : name);
	for (unsigned r = 0; r < rounds; r++) {
		void *p = grow_site_worker(size);

		if (p == NULL) {
			perror("acquire");
			exit(1);
		}
		memset(p, 1, 64);
		RELEASE(p);
	}
	for (unsigned h = 0; h < hold; h++)
		held[i][h] = grow_site_worker(size);
#ifdef HOST_MALLOC
	for (unsigned k = 0; k < 5000; k++) {
		char *volatile small = malloc(100);

		free(small);
	}
#endif
	pthread_mutex_lock(&out_lock);
	printf("tid %u %ld %zu\n", i, (long)syscall(SYS_gettid), class_size(size));
	fflush(stdout);
	pthread_mutex_unlock(&out_lock);
	pthread_barrier_wait(&ready);
	pthread_mutex_lock(&stop_lock);
	while (!stopping)
		pthread_cond_wait(&stop_cond, &stop_lock);
	pthread_mutex_unlock(&stop_lock);
	for (unsigned h = 0; h < hold; h++)
		RELEASE(held[i][h]);
	return NULL;
}

static void do_fork(void)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		void *p = grow_site_main(3 * base_size);

		printf("child %d\n", (int)getpid());
		fflush(stdout);
		RELEASE(p);
		_exit(p != NULL ? 0 : 1);
	}
	waitpid(pid, &st, 0);
}

#ifndef HOST_MALLOC
static scratch_arena_t *arena;
#endif

/* n acquire+release pairs on the main thread; volatile so that the pair
 * is not folded away (a pool hit is what the caller wants to count). */
static void churn(unsigned n)
{
	for (unsigned k = 0; k < n; k++) {
		void *volatile p = ACQUIRE(base_size / 2);

		RELEASE(p);
	}
}

static void commands(void)
{
	char line[128];
	unsigned n;

	while (fgets(line, sizeof(line), stdin) != NULL) {
		if (sscanf(line, "grow %u", &n) == 1) {
			for (unsigned k = 0; k < n && nmain < MAX_HOLD * 4; k++)
				main_held[nmain++] = grow_site_main(base_size / 2);
		} else if (sscanf(line, "churn %u", &n) == 1) {
			churn(n);
		} else if (strncmp(line, "larger", 6) == 0) {
			void *big = grow_site_main(2 * base_size), *small;

			RELEASE(big);
			small = grow_site_main(base_size);
			if (small != big)
				printf("larger: not served by the larger block\n");
			RELEASE(small);
		} else if (strncmp(line, "remote", 6) == 0) {
			if (held[0][0] != NULL)
				RELEASE(held[0][0]);
			held[0][0] = NULL;
		} else if (strncmp(line, "fork", 4) == 0) {
			do_fork();
#ifndef HOST_MALLOC
		} else if (strncmp(line, "arena", 5) == 0) {
			if (arena == NULL)
				arena = scratch_arena_new("test-arena", 4 << 20);
			if (arena == NULL || scratch_arena_alloc(arena, 100000, 64) == NULL)
				printf("arena failed\n");
#endif
		} else if (strncmp(line, "exit", 4) == 0) {
			break;
		}
		printf("ok\n");
		fflush(stdout);
	}
}

int main(int argc, char **argv)
{
	pthread_t th[MAX_THREADS];

	for (int a = 1; a + 1 < argc; a += 2) {
		if (strcmp(argv[a], "--threads") == 0)
			nthreads = (unsigned)atoi(argv[a + 1]);
		else if (strcmp(argv[a], "--rounds") == 0)
			rounds = (unsigned)atoi(argv[a + 1]);
		else if (strcmp(argv[a], "--hold") == 0)
			hold = (unsigned)atoi(argv[a + 1]);
		else if (strcmp(argv[a], "--size") == 0)
			base_size = (size_t)strtoull(argv[a + 1], NULL, 0);
		else if (strcmp(argv[a], "--name0") == 0)
			name0 = argv[a + 1]; /* any bytes, up to 15 */
	}
	if (nthreads < 1 || nthreads > MAX_THREADS || hold > MAX_HOLD) {
		fprintf(stderr, "host_stats: bad arguments\n");
		return 2;
	}
	pthread_barrier_init(&ready, NULL, nthreads + 1);
	for (unsigned i = 0; i < nthreads; i++)
		pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)i);
	pthread_barrier_wait(&ready);
	printf("tid main %ld 0\nready\n", (long)getpid());
	fflush(stdout);
	commands();
	pthread_mutex_lock(&stop_lock);
	stopping = 1;
	pthread_cond_broadcast(&stop_cond);
	pthread_mutex_unlock(&stop_lock);
	for (unsigned i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	for (unsigned k = 0; k < nmain; k++)
		RELEASE(main_held[k]);
#ifndef HOST_MALLOC
	if (arena != NULL)
		scratch_arena_destroy(arena);
#endif
	return 0;
}
