/*
 * host_maps.c - a test host with one mapping of every category the
 * whole-process audit names (tests/locality/audit_maps.test on this host,
 * tests/locality/audit_guest.sh in the two-node guest):
 *
 *   host_maps [options]
 *     --file PATH       mmap PATH (MAP_SHARED, read-only); the main thread
 *                       reads every page first, then each worker does
 *     --anon MIB        an anonymous buffer of MIB from malloc (above the
 *                       pools' max_size under the shim, when it is set
 *                       lower), written by the main thread, then read by
 *                       every worker
 *     --pool MIB        a malloc'd block of MIB written by the main thread
 *                       (a pool block under the shim)
 *     --workers N       N worker threads (default 2), worker k pinned to
 *                       the k-th CPU the process may run on (so numactl
 *                       --cpunodebind narrows them); each mallocs 2 MiB in
 *                       4 KiB pieces (its glibc arena) and touches 256 KiB
 *                       of its stack
 *     --mover           one more thread that touches its stack and arena
 *                       on the first CPU it may run on, then pins itself
 *                       to the last one
 *     --shm             a POSIX shared memory object, a System V segment
 *                       and a memfd, 1 MiB each, written
 *     --work-ms N       each worker then reads the file and the buffer on,
 *                       a cache line at a time, until it used N ms of CPU
 *                       (a compute thread, as CPU time tells them)
 *     --wait-go         before any read, wait for SIGUSR1 (so that an
 *                       audit can look at a file before it is touched)
 *     --exit            exit 0 once everything is done, instead of waiting
 *
 * The main thread is pinned to the first CPU it may run on while it
 * reads and writes. It prints, one per line:
 *   host pid=P cpus=A,B,...
 *   file addr=0xA len=N          (with --file)
 *   anon addr=0xA len=N          (with --anon)
 *   pool addr=0xA len=N          (with --pool)
 *   worker k tid=T cpu=C
 *   mover tid=T from=C to=D      (with --mover)
 *   shm posix=0xA sysv=0xB memfd=0xC
 *   ready
 * then waits for SIGTERM (status 0), at most 120 s (exit 3), so a test
 * that dies never leaves it running.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define WAIT_S 120
#define MIB    (1ul << 20)

static int cpus[1024], ncpus;
static const volatile char *file;
static size_t file_len;
static volatile char *anon;
static size_t anon_len;
static volatile sig_atomic_t done, go;
static pthread_barrier_t ready_bar;
static volatile long sink;
static long work_ms;

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0) {
		perror("host_maps: sched_setaffinity");
		exit(2);
	}
}

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		go = 1;
	else
		done = 1;
}

static void nap_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};

	nanosleep(&ts, NULL);
}

static double thread_cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Read the file and the buffer a cache line at a time until this thread
 * used work_ms of CPU. */
static void work(void)
{
	long s = 0;

	while (thread_cpu_ms() < (double)work_ms) {
		for (size_t i = 0; file != NULL && i < file_len; i += 64)
			s += file[i];
		for (size_t i = 0; anon != NULL && i < anon_len; i += 64)
			s += anon[i];
		if (file == NULL && anon == NULL)
			break;
	}
	sink += s;
}

static void read_all(const volatile char *p, size_t len)
{
	long s = 0;

	for (size_t i = 0; i < len; i += 4096)
		s += p[i];
	sink += s;
}

/* A stack array of 256 KiB, written: the thread's stack pages. */
static void __attribute__((noinline)) touch_stack(void)
{
	volatile char buf[256 << 10];

	for (size_t i = 0; i < sizeof(buf); i += 4096)
		buf[i] = 1;
	sink += buf[4096];
}

/* 2 MiB of small blocks: the thread's glibc arena. */
static void touch_arena(void)
{
	for (int i = 0; i < 512; i++) {
		char *p = malloc(4000);

		if (p == NULL)
			exit(2);
		memset(p, 1, 4000);
		/* kept: the arena stays */
	}
}

struct worker {
	int k, cpu;
	pid_t tid;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	pin(w->cpu);
	w->tid = (pid_t)syscall(SYS_gettid);
	touch_arena();
	touch_stack();
	if (file != NULL)
		read_all(file, file_len);
	if (anon != NULL)
		read_all(anon, anon_len);
	work();
	pthread_barrier_wait(&ready_bar);
	while (!done)
		nap_ms(50);
	return NULL;
}

static pid_t mover_tid;
static int mover_to;

static void *mover_main(void *arg)
{
	(void)arg;
	pin(cpus[0]);
	mover_tid = (pid_t)syscall(SYS_gettid);
	touch_arena();
	touch_stack();
	mover_to = cpus[ncpus - 1];
	pin(mover_to);
	pthread_barrier_wait(&ready_bar);
	while (!done)
		nap_ms(50);
	return NULL;
}

static void shm_all(void)
{
	char name[64];
	void *posix, *sysv, *mfd;
	int fd, id;

	snprintf(name, sizeof(name), "/host_maps.%d", (int)getpid());
	fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0 || ftruncate(fd, MIB) != 0)
		exit(2);
	posix = mmap(NULL, MIB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	shm_unlink(name);
	close(fd);
	id = shmget(IPC_PRIVATE, MIB, IPC_CREAT | 0600);
	sysv = id >= 0 ? shmat(id, NULL, 0) : (void *)-1;
	if (id >= 0)
		shmctl(id, IPC_RMID, NULL);
	fd = memfd_create("host_maps", 0);
	if (fd < 0 || ftruncate(fd, MIB) != 0)
		exit(2);
	mfd = mmap(NULL, MIB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (posix == MAP_FAILED || sysv == (void *)-1 || mfd == MAP_FAILED)
		exit(2);
	memset(posix, 1, MIB);
	memset(sysv, 1, MIB);
	memset(mfd, 1, MIB);
	printf("shm posix=%p sysv=%p memfd=%p\n", posix, sysv, mfd);
}

static void allowed_cpus(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		exit(2);
	for (int c = 0; c < CPU_SETSIZE && ncpus < 1024; c++)
		if (CPU_ISSET(c, &set))
			cpus[ncpus++] = c;
}

int main(int argc, char **argv)
{
	const char *path = NULL;
	size_t anon_mib = 0, pool_mib = 0;
	int nworkers = 2, mover = 0, shm = 0, wait_go = 0, exit_at_end = 0;
	struct worker w[64];
	pthread_t th[65];
	struct sigaction sa = {.sa_handler = on_signal};

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--file") == 0 && i + 1 < argc)
			path = argv[++i];
		else if (strcmp(argv[i], "--anon") == 0 && i + 1 < argc)
			anon_mib = strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--pool") == 0 && i + 1 < argc)
			pool_mib = strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--workers") == 0 && i + 1 < argc)
			nworkers = atoi(argv[++i]);
		else if (strcmp(argv[i], "--work-ms") == 0 && i + 1 < argc)
			work_ms = atol(argv[++i]);
		else if (strcmp(argv[i], "--mover") == 0)
			mover = 1;
		else if (strcmp(argv[i], "--shm") == 0)
			shm = 1;
		else if (strcmp(argv[i], "--wait-go") == 0)
			wait_go = 1;
		else if (strcmp(argv[i], "--exit") == 0)
			exit_at_end = 1;
		else {
			fprintf(stderr, "host_maps: bad argument '%s'\n", argv[i]);
			return 2;
		}
	}
	if (nworkers < 0 || nworkers > 64)
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	allowed_cpus();
	printf("host pid=%d cpus=", (int)getpid());
	for (int i = 0; i < ncpus; i++)
		printf("%s%d", i ? "," : "", cpus[i]);
	printf("\n");
	pin(cpus[0]);
	if (path != NULL) {
		int fd = open(path, O_RDONLY);
		struct stat st;

		if (fd < 0 || fstat(fd, &st) != 0) {
			perror("host_maps: open");
			return 2;
		}
		file_len = (size_t)st.st_size;
		file = mmap(NULL, file_len, PROT_READ, MAP_SHARED, fd, 0);
		close(fd);
		if (file == MAP_FAILED)
			return 2;
		printf("file addr=%p len=%zu\n", (const void *)file, file_len);
	}
	if (wait_go) {
		printf("waiting\n");
		for (int i = 0; i < WAIT_S * 20 && !go && !done; i++)
			nap_ms(50);
	}
	if (file != NULL)
		read_all(file, file_len);
	if (anon_mib > 0) {
		anon_len = anon_mib * MIB;
		anon = malloc(anon_len);
		if (anon == NULL)
			return 2;
		memset((void *)anon, 1, anon_len);
		printf("anon addr=%p len=%zu\n", (void *)anon, anon_len);
	}
	if (pool_mib > 0) {
		char *p = malloc(pool_mib * MIB);

		if (p == NULL)
			return 2;
		memset(p, 1, pool_mib * MIB);
		printf("pool addr=%p len=%zu\n", (void *)p, pool_mib * MIB);
	}
	if (shm)
		shm_all();
	pin(cpus[0]); /* malloc may have moved nothing; the reads are done */
	pthread_barrier_init(&ready_bar, NULL, (unsigned)(nworkers + mover + 1));
	for (int k = 0; k < nworkers; k++) {
		w[k] = (struct worker){.k = k, .cpu = cpus[k % ncpus]};
		if (pthread_create(&th[k], NULL, worker_main, &w[k]) != 0)
			return 2;
	}
	if (mover && pthread_create(&th[nworkers], NULL, mover_main, NULL) != 0)
		return 2;
	pthread_barrier_wait(&ready_bar);
	for (int k = 0; k < nworkers; k++)
		printf("worker %d tid=%d cpu=%d\n", k, (int)w[k].tid, w[k].cpu);
	if (mover)
		printf("mover tid=%d from=%d to=%d\n", (int)mover_tid, cpus[0], mover_to);
	printf("ready\n");
	if (exit_at_end)
		done = 1;
	for (int i = 0; i < WAIT_S * 20 && !done; i++)
		nap_ms(50);
	if (!done)
		_exit(3);
	done = 1;
	for (int k = 0; k < nworkers; k++)
		pthread_join(th[k], NULL);
	if (mover)
		pthread_join(th[nworkers], NULL);
	return 0;
}
