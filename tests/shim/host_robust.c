/*
 * host_robust.c - situations a malloc replacement must survive, one per
 * subcommand: thread exit, fork from a threaded parent, exec, dlopen,
 * RTLD_DEEPBIND plugins, signals, 256 threads, and running out of memory;
 * host_robust_env.c has those a host's environment imposes.
 *
 * A plain program (not linked to libscratch); shim_robust.test runs each
 * subcommand without the shim and under each shim. Each prints
 * "<subcommand> ok" on stdout and exits 0, or says what broke on stderr
 * and exits 1. Block contents are verified before every free
 * (host_common.h).
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shimplug.h"
#include "host_robust.h"

int failures;

bool round_trip(size_t n, uint64_t seed)
{
	void *p = malloc(n);

	if (!p)
		return false;
	host_fill(p, n, seed);
	bool ok = host_check(p, n, n, seed);
	free(p);
	return ok;
}

static const size_t mixed[] = {24, 1000, 64 * HOST_KIB, 200 * HOST_KIB, 3 * HOST_MIB};
#define NMIXED (sizeof(mixed) / sizeof(mixed[0]))

bool mixed_round(uint64_t seed)
{
	bool ok = true;

	for (size_t i = 0; i < NMIXED; i++)
		ok &= round_trip(mixed[i], seed + i);
	return ok;
}

/* ---------------------------------------------------------------------- */
/* Thread exit: allocations in TLS destructors, after the pools' own ran   */
/* ---------------------------------------------------------------------- */

#define EXIT_THREADS  8
#define SHORT_THREADS 200
static pthread_key_t exit_key;
static void *handoff[EXIT_THREADS][4];
static void *kept[EXIT_THREADS];
static int dtor_bad;

/* The key is created after the pools' own (they start before main), so
 * this destructor runs after theirs; it re-arms itself for more rounds. */
static void exit_dtor(void *arg)
{
	intptr_t v = (intptr_t)arg;
	int t = (int)(v >> 8), round = (int)(v & 0xff) - 1; /* never NULL */

	if (!mixed_round((uint64_t)v))
		__atomic_add_fetch(&dtor_bad, 1, __ATOMIC_RELAXED);
	size_t n = 256 * HOST_KIB + (size_t)round;
	handoff[t][round] = malloc(n);
	if (handoff[t][round])
		host_fill(handoff[t][round], n, (uint64_t)v);
	if (round < 3)
		pthread_setspecific(exit_key, (void *)(v + 1));
}

static void *exit_thread(void *arg)
{
	int t = (int)(intptr_t)arg;

	kept[t] = malloc(2 * HOST_MIB);
	if (kept[t])
		host_fill(kept[t], 2 * HOST_MIB, (uint64_t)t);
	/* Half the threads touch the pools first, half only in the destructor. */
	if (t % 2 == 0 && !mixed_round((uint64_t)t))
		__atomic_add_fetch(&dtor_bad, 1, __ATOMIC_RELAXED);
	pthread_setspecific(exit_key, (void *)(((intptr_t)t << 8) | 1));
	return NULL;
}

static int short_done;

static void *short_thread(void *arg)
{
	size_t n = 64 * HOST_KIB + (size_t)(uintptr_t)arg * 100;

	if (!round_trip(n, n))
		__atomic_add_fetch(&dtor_bad, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&short_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void test_thread_exit(void)
{
	pthread_t th[EXIT_THREADS];

	EXPECT(pthread_key_create(&exit_key, exit_dtor) == 0, "pthread_key_create");
	for (intptr_t t = 0; t < EXIT_THREADS; t++)
		EXPECT(pthread_create(&th[t], NULL, exit_thread, (void *)t) == 0, "create");
	for (int t = 0; t < EXIT_THREADS; t++)
		pthread_join(th[t], NULL);
	for (int t = 0; t < EXIT_THREADS; t++) {
		EXPECT(kept[t] && host_check(kept[t], 2 * HOST_MIB, 2 * HOST_MIB, (uint64_t)t),
		       "block of exited thread %d", t);
		free(kept[t]);
		for (int r = 0; r < 4; r++) {
			size_t n = 256 * HOST_KIB + (size_t)r;
			uint64_t seed = ((uint64_t)t << 8) | (uint64_t)(r + 1);
			EXPECT(handoff[t][r] && host_check(handoff[t][r], n, n, seed),
			       "destructor block %d/%d", t, r);
			free(handoff[t][r]);
		}
	}
	/* Very short-lived detached threads, many of them at once. */
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	for (uintptr_t i = 0; i < SHORT_THREADS; i++) {
		pthread_t t;
		EXPECT(pthread_create(&t, &attr, short_thread, (void *)i) == 0, "create short");
	}
	pthread_attr_destroy(&attr);
	EXPECT(mixed_round(77), "main thread round");
	while (__atomic_load_n(&short_done, __ATOMIC_ACQUIRE) < SHORT_THREADS)
		usleep(1000);
	EXPECT(__atomic_load_n(&dtor_bad, __ATOMIC_RELAXED) == 0, "bad blocks in threads");
}

/* ---------------------------------------------------------------------- */
/* fork from a multi-threaded parent                                       */
/* ---------------------------------------------------------------------- */

#define FORK_SLOTS   64
#define FORK_WORKERS 4
#define FORKS        12

struct slot {
	void *p;
	size_t n;
	uint64_t seed;
};
static struct slot table[FORK_SLOTS];
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static int stop_workers;

static void table_prepare(void)
{
	pthread_mutex_lock(&table_lock);
}

static void table_parent(void)
{
	pthread_mutex_unlock(&table_lock);
}

static void table_child(void)
{
	pthread_mutex_init(&table_lock, NULL);
}

static void *fork_worker(void *arg)
{
	uint64_t rng = 0x1234 + (uint64_t)(uintptr_t)arg, gen = 0;

	while (!__atomic_load_n(&stop_workers, __ATOMIC_RELAXED)) {
		size_t n = host_size(&rng);
		unsigned s = (unsigned)(host_rand(&rng) % FORK_SLOTS);
		void *p = malloc(n);
		uint64_t seed = ((uint64_t)(uintptr_t)arg << 32) | gen++;
		if (p)
			host_fill(p, n, seed);
		pthread_mutex_lock(&table_lock);
		struct slot old = table[s];
		table[s] = (struct slot){p, n, seed};
		pthread_mutex_unlock(&table_lock);
		if (old.p) {
			if (!host_check(old.p, old.n, old.n, old.seed))
				__atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
			free(old.p);
		}
	}
	return NULL;
}

static void *child_thread(void *arg)
{
	return (void *)(intptr_t)!mixed_round((uint64_t)(uintptr_t)arg);
}

/* In the child: free every block the parent's threads left in the table
 * (after checking it), then allocate on this and on new threads. */
static int fork_child(void)
{
	int bad = 0;

	for (int s = 0; s < FORK_SLOTS; s++) {
		if (!table[s].p)
			continue;
		bad += !host_check(table[s].p, table[s].n, table[s].n, table[s].seed);
		free(table[s].p);
		table[s].p = NULL;
	}
	bad += !mixed_round(5);
	pthread_t th[2];
	for (intptr_t i = 0; i < 2; i++)
		bad += pthread_create(&th[i], NULL, child_thread, (void *)i) != 0;
	for (int i = 0; i < 2; i++) {
		void *r = NULL;
		pthread_join(th[i], &r);
		bad += r != NULL;
	}
	return bad ? 1 : 0;
}

static void test_fork(void)
{
	pthread_t th[FORK_WORKERS];

	pthread_atfork(table_prepare, table_parent, table_child);
	for (intptr_t i = 0; i < FORK_WORKERS; i++)
		EXPECT(pthread_create(&th[i], NULL, fork_worker, (void *)i) == 0, "create");
	for (int f = 0; f < FORKS; f++) {
		usleep(2000);
		pid_t pid = fork();
		if (pid == 0)
			exit(fork_child());
		int status = 0;
		EXPECT(pid > 0 && waitpid(pid, &status, 0) == pid, "fork/wait");
		EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %d status %#x", f,
		       status);
	}
	__atomic_store_n(&stop_workers, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < FORK_WORKERS; i++)
		pthread_join(th[i], NULL);
	for (int s = 0; s < FORK_SLOTS; s++) {
		if (table[s].p)
			EXPECT(host_check(table[s].p, table[s].n, table[s].n, table[s].seed),
			       "slot %d", s);
		free(table[s].p);
	}
}

/* ---------------------------------------------------------------------- */
/* exec                                                                    */
/* ---------------------------------------------------------------------- */

static void test_exec(char *self)
{
	void *keep = malloc(4 * HOST_MIB);

	EXPECT(keep != NULL && mixed_round(1), "before exec");
	if (keep)
		host_fill(keep, 4 * HOST_MIB, 9);
	fflush(stdout);
	static char child_arg[] = "exec-child";
	char *args[] = {self, child_arg, NULL};
	execv("/proc/self/exe", args);
	EXPECT(0, "execv: %s", strerror(errno));
}

static void test_exec_child(void)
{
	EXPECT(mixed_round(2), "after exec");
}

/* ---------------------------------------------------------------------- */
/* dlopen: a plugin that allocates, loaded and unloaded repeatedly         */
/* ---------------------------------------------------------------------- */

struct plug {
	void *handle;
	void *(*alloc)(size_t, uint64_t);
	void *(*realloc)(void *, size_t);
	bool (*free)(void *, size_t, uint64_t);
};

static bool plug_open(struct plug *pl, const char *path, int flags)
{
	pl->handle = dlopen(path, flags);
	if (!pl->handle) {
		fprintf(stderr, "host_robust: dlopen: %s\n", dlerror());
		return false;
	}
	pl->alloc = (void *(*)(size_t, uint64_t))(uintptr_t)dlsym(pl->handle, "plug_alloc");
	pl->realloc = (void *(*)(void *, size_t))(uintptr_t)dlsym(pl->handle, "plug_realloc");
	pl->free = (bool (*)(void *, size_t, uint64_t))(uintptr_t)dlsym(pl->handle, "plug_free");
	return pl->alloc && pl->realloc && pl->free;
}

static void test_dlopen(const char *path)
{
	void *survivors[5] = {0};

	for (int round = 0; round < 5; round++) {
		struct plug pl;
		if (!plug_open(&pl, path, RTLD_NOW | RTLD_LOCAL)) {
			failures++;
			return;
		}
		for (size_t i = 0; i < NMIXED; i++) {
			size_t n = mixed[i];
			/* plugin allocates, host frees */
			void *p = pl.alloc(n, n + (uint64_t)round);
			EXPECT(p && host_check(p, n, n, n + (uint64_t)round), "plugin block");
			free(p);
			/* host allocates, plugin grows and frees */
			p = malloc(n);
			if (!p) {
				failures++;
				continue;
			}
			host_fill(p, n, 3);
			void *q = pl.realloc(p, 2 * n);
			EXPECT(q && host_check(q, n, n, 3), "plugin realloc");
			if (q) {
				host_fill(q, 2 * n, 4);
				EXPECT(pl.free(q, 2 * n, 4), "plugin free of host block");
			}
		}
		/* a plugin block that outlives the plugin */
		survivors[round] = pl.alloc(1 * HOST_MIB, 50 + (uint64_t)round);
		EXPECT(dlclose(pl.handle) == 0, "dlclose");
	}
	for (int round = 0; round < 5; round++) {
		EXPECT(survivors[round] && host_check(survivors[round], 1 * HOST_MIB, 1 * HOST_MIB,
		                                      50 + (uint64_t)round),
		       "survivor %d", round);
		free(survivors[round]);
	}
}

/*
 * RTLD_DEEPBIND: the plugin's own malloc binds to libc's, bypassing the
 * shim. "self" pairs every allocation with its own side's free, which is
 * safe with both backends. "cross" also frees the plugin's blocks in the
 * host and the host's small blocks in the plugin: safe with the glibc
 * backend only (both sides then reach glibc for those blocks); a pooled
 * host block freed by the plugin is never safe and is not tried.
 */
static void test_deepbind(const char *path, bool cross)
{
	bool (*owns)(const void *) =
	        (bool (*)(const void *))(uintptr_t)dlsym(RTLD_DEFAULT, "scratch_owns");
	struct plug pl;

	if (!plug_open(&pl, path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND)) {
		failures++;
		return;
	}
	for (int round = 0; round < 3; round++) {
		for (size_t i = 0; i < NMIXED; i++) {
			size_t n = mixed[i];
			void *p = pl.alloc(n, n);
			EXPECT(p != NULL, "plugin alloc");
			if (!p)
				continue;
			/* The plugin's malloc really is libc's: never a pool block. */
			EXPECT(!owns || !owns(p), "a deep-bound plugin got a pool block");
			if (cross) {
				EXPECT(host_check(p, n, n, n), "plugin block");
				free(p);
			} else {
				EXPECT(pl.free(p, n, n), "plugin block");
			}
			p = malloc(n);
			if (!p) {
				failures++;
				continue;
			}
			host_fill(p, n, 8);
			if (cross && n < 64 * HOST_KIB) {
				EXPECT(pl.free(p, n, 8), "host block freed by the plugin");
			} else {
				EXPECT(host_check(p, n, n, 8), "host block");
				free(p);
			}
		}
	}
	EXPECT(dlclose(pl.handle) == 0, "dlclose");
}

/* ---------------------------------------------------------------------- */
/* Signals                                                                 */
/* ---------------------------------------------------------------------- */

static volatile sig_atomic_t ticks;

/* Interrupts malloc anywhere: only async-signal-safe work, errno kept. */
static void tick_handler(int sig)
{
	int saved = errno;

	(void)sig;
	errno = EINTR;
	ticks++;
	errno = saved;
}

static volatile sig_atomic_t handled;
static int handler_bad;

/* Runs on a thread that is never inside an allocator call when the
 * signal arrives: then malloc in a handler is as safe as anywhere. */
static void alloc_handler(int sig)
{
	int saved = errno;

	(void)sig;
	if (!round_trip(128 * HOST_KIB, 11) || !round_trip(40, 12))
		handler_bad++;
	handled++;
	errno = saved;
}

static void *signal_sender(void *arg)
{
	pthread_t target = *(pthread_t *)arg;

	while (handled < 200) {
		pthread_kill(target, SIGUSR1);
		usleep(200);
	}
	return NULL;
}

static void *alloc_loop(void *arg)
{
	uint64_t rng = 99;
	int *stop = arg;

	while (!__atomic_load_n(stop, __ATOMIC_RELAXED))
		if (!round_trip(host_size(&rng), 13))
			__atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
	return NULL;
}

static void test_signals(void)
{
	struct sigaction sa = {0};
	uint64_t rng = 42;

	/* 1: a timer interrupts this thread's allocations at random points. */
	sa.sa_handler = tick_handler;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = {{0, 200}, {0, 200}};
	setitimer(ITIMER_REAL, &it, NULL);
	for (long i = 0; i < 5000 || ticks < 50; i++) {
		size_t n = host_size(&rng);
		errno = 4242;
		void *p = malloc(n);
		EXPECT(p && errno == 4242, "malloc under signals");
		if (!p)
			break;
		host_fill(p, n, (uint64_t)i);
		void *q = realloc(p, n / 2 + 1);
		EXPECT(q && host_check(q, n / 2 + 1, n, (uint64_t)i), "realloc under signals");
		free(q ? q : p);
	}
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &off, NULL);

	/* 2: a handler that allocates, on a thread that is not inside the
	 * allocator, while another thread allocates concurrently. */
	int stop = 0;
	pthread_t self = pthread_self(), sender, loop;
	sa.sa_handler = alloc_handler;
	sigaction(SIGUSR1, &sa, NULL);
	pthread_create(&loop, NULL, alloc_loop, &stop);
	pthread_create(&sender, NULL, signal_sender, &self);
	volatile uint64_t spin = 0;
	while (handled < 200)
		spin = spin + 1;
	pthread_join(sender, NULL);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	pthread_join(loop, NULL);
	EXPECT(handler_bad == 0, "allocation in a signal handler");
}

/* ---------------------------------------------------------------------- */
/* 256 threads allocating and freeing each other's blocks                  */
/* ---------------------------------------------------------------------- */

#define MANY_THREADS 256
#define MANY_BLOCKS  4
#define MANY_ROUNDS  3

static struct slot many[MANY_THREADS][MANY_BLOCKS];
static pthread_barrier_t many_barrier;

static void *many_thread(void *arg)
{
	int t = (int)(intptr_t)arg;
	uint64_t rng = 7 + (uint64_t)t;

	for (int r = 0; r < MANY_ROUNDS; r++) {
		for (int b = 0; b < MANY_BLOCKS; b++) {
			size_t n = (b % 2 ? 64 * HOST_KIB : 16) +
			           (size_t)(host_rand(&rng) % (128 * HOST_KIB));
			uint64_t seed = ((uint64_t)t << 16) | (uint64_t)(r * MANY_BLOCKS + b);
			void *p = malloc(n);
			if (p)
				host_fill(p, n, seed);
			many[t][b] = (struct slot){p, n, seed};
		}
		pthread_barrier_wait(&many_barrier);
		/* free the blocks of the next thread */
		struct slot *other = many[(t + 1) % MANY_THREADS];
		for (int b = 0; b < MANY_BLOCKS; b++) {
			if (!other[b].p ||
			    !host_check(other[b].p, other[b].n, other[b].n, other[b].seed))
				__atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
			free(other[b].p);
		}
		pthread_barrier_wait(&many_barrier);
	}
	return NULL;
}

static void test_threads256(void)
{
	pthread_t th[MANY_THREADS];
	pthread_attr_t attr;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 128 * HOST_KIB);
	pthread_barrier_init(&many_barrier, NULL, MANY_THREADS);
	for (intptr_t t = 0; t < MANY_THREADS; t++)
		if (pthread_create(&th[t], &attr, many_thread, (void *)t) != 0) {
			fprintf(stderr, "host_robust: cannot create thread %ld\n", (long)t);
			exit(1);
		}
	for (int t = 0; t < MANY_THREADS; t++)
		pthread_join(th[t], NULL);
	pthread_barrier_destroy(&many_barrier);
	pthread_attr_destroy(&attr);
}

/* ---------------------------------------------------------------------- */
/* Out of memory                                                           */
/* ---------------------------------------------------------------------- */

/* The process's address space in bytes, from /proc/self/status. */
static size_t vm_size(void)
{
	char buf[4096];
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	const char *v = strstr(buf, "VmSize:");
	return v ? (size_t)strtoull(v + 7, NULL, 10) * 1024 : 0;
}

#define OOM_MAX (1 << 17)
static void *oom_blocks[OOM_MAX];

/* Exhaust the address space with blocks of n bytes: the last request must
 * fail with NULL and ENOMEM. Only small blocks are touched (a pooled one
 * may be a huge page). */
static void exhaust(size_t n)
{
	int count = 0;

	for (;;) {
		errno = 0;
		void *p = malloc(n);
		if (!p) {
			EXPECT(errno == ENOMEM, "malloc(%zu) failed with errno %d", n, errno);
			break;
		}
		if (n < 64 * HOST_KIB)
			*(volatile char *)p = 1;
		if (count == OOM_MAX) {
			EXPECT(0, "malloc(%zu) never failed", n);
			free(p);
			break;
		}
		oom_blocks[count++] = p;
	}
	/* Everything works again after freeing. */
	while (count > 0)
		free(oom_blocks[--count]);
	EXPECT(mixed_round(4), "round after freeing");
}

static void test_oom(void)
{
	/* Warm the pools up before the limit: their region is reserved once.
	 * (jemalloc maps even 16 TiB with MAP_NORESERVE and keeps what it
	 * mapped: nothing huge is asked for before the limit is set.) */
	EXPECT(mixed_round(1), "warm-up");
	struct rlimit lim;
	size_t cur = vm_size();
	EXPECT(cur > 0, "VmSize");
	lim.rlim_cur = lim.rlim_max = cur + 256 * HOST_MIB;
	EXPECT(setrlimit(RLIMIT_AS, &lim) == 0, "setrlimit: %s", strerror(errno));
	errno = 0;
	EXPECT(malloc((size_t)1 << 44) == NULL && errno == ENOMEM, "16 TiB malloc");
	/* Beyond max_size (1 GiB by default): the backend's, and it fails.
	 * Pooled sizes may still succeed: the pools reserved their space. */
	errno = 0;
	EXPECT(malloc(2048 * HOST_MIB) == NULL && errno == ENOMEM, "2 GiB under the limit");
	errno = 0;
	EXPECT(calloc(2048, HOST_MIB) == NULL && errno == ENOMEM, "calloc 2 GiB");
	exhaust(8 * HOST_MIB);
	exhaust(16 * HOST_KIB);
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";

	if (!strcmp(cmd, "thread-exit"))
		test_thread_exit();
	else if (!strcmp(cmd, "fork"))
		test_fork();
	else if (!strcmp(cmd, "fork-cheap"))
		test_fork_cheap();
	else if (!strcmp(cmd, "exec"))
		test_exec(argv[0]);
	else if (!strcmp(cmd, "exec-child"))
		test_exec_child();
	else if (!strcmp(cmd, "dlopen") && argc > 2)
		test_dlopen(argv[2]);
	else if (!strcmp(cmd, "deepbind-self") && argc > 2)
		test_deepbind(argv[2], false);
	else if (!strcmp(cmd, "deepbind-cross") && argc > 2)
		test_deepbind(argv[2], true);
	else if (!strcmp(cmd, "signals"))
		test_signals();
	else if (!strcmp(cmd, "threads256"))
		test_threads256();
	else if (!strcmp(cmd, "oom"))
		test_oom();
	else if (!strcmp(cmd, "count"))
		test_count();
	else if (!strcmp(cmd, "region-full"))
		test_region_full();
	else if (!strcmp(cmd, "no-fds"))
		test_no_fds();
	else if (!strcmp(cmd, "realloc-growth"))
		test_realloc_growth();
	else if (!strcmp(cmd, "as-limit"))
		test_as_limit();
	else if (!strcmp(cmd, "mlockall"))
		test_mlockall();
	else if (!strcmp(cmd, "malloc-trim"))
		test_malloc_trim();
	else if (!strcmp(cmd, "seccomp") && argc > 2)
		test_seccomp(argv[0], argv[2]);
	else if (!strcmp(cmd, "seccomp-run") && argc > 2)
		test_seccomp_run(argv[2]);
	else {
		fprintf(stderr,
		        "usage: host_robust thread-exit|fork|fork-cheap|exec|dlopen PLUGIN|"
		        "deepbind-self PLUGIN|deepbind-cross "
		        "PLUGIN|signals|threads256|oom|count|region-full|no-fds|"
		        "realloc-growth|as-limit|mlockall|malloc-trim|seccomp docker|strict\n");
		return 2;
	}
	if (failures)
		return 1;
	printf("%s ok\n", cmd);
	return 0;
}
