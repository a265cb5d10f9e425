/*
 * host_robust_env.c - host_robust's subcommands for what a host's
 * environment imposes on a malloc replacement: no file descriptor left, a
 * region used up, locked memory, a seccomp filter, an address-space limit;
 * and what the shim must keep exact there (pass-through counts, realloc's
 * growth, malloc_trim, what a fork copies).
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

/* ---------------------------------------------------------------------- */
/* No file descriptor left                                                 */
/* ---------------------------------------------------------------------- */

/* A thread's first calls give it a stats slot, which reads its name from
 * procfs. With the descriptor table full that open fails: every call must
 * still succeed with errno as it was, for small (passed-through, counted
 * in batches of 4096) and pooled sizes alike. */
static void *no_fds_thread(void *arg)
{
	(void)arg;
	/* Small sizes first: the slot is attached when the first batch of
	 * pass-through calls is handed over, not by a pooled call. */
	for (int i = 0; i < 6000; i++) {
		size_t n = i < 5000 ? 32 : 256 * HOST_KIB;

		errno = EDOM;
		char *p = malloc(n);
		EXPECT(p != NULL && errno == EDOM, "malloc(%zu) #%d: %p, errno %d", n, i, (void *)p,
		       errno);
		if (p == NULL || failures)
			break;
		p[0] = 1;
		p[n - 1] = 2;
		errno = EDOM;
		free(p);
		EXPECT(errno == EDOM, "free #%d: errno %d", i, errno);
		if (failures)
			break;
	}
	return NULL;
}

void test_no_fds(void)
{
	struct rlimit lim = {.rlim_cur = 32, .rlim_max = 32};
	pthread_t t;

	EXPECT(setrlimit(RLIMIT_NOFILE, &lim) == 0, "setrlimit: %s", strerror(errno));
	while (open("/dev/null", O_RDONLY | O_CLOEXEC) >= 0)
		;
	EXPECT(pthread_create(&t, NULL, no_fds_thread, NULL) == 0, "pthread_create");
	EXPECT(pthread_join(t, NULL) == 0, "pthread_join");
}

/* ---------------------------------------------------------------------- */
/* The pools' region used up                                               */
/* ---------------------------------------------------------------------- */

#define FULL_BLOCKS 2048

static char *full_blocks[FULL_BLOCKS];

/* 2 GiB of live 1 MiB blocks, run with a 1 GiB reserve (shim_robust.test):
 * once the pools' region is used up, malloc must go on succeeding from the
 * backend, errno untouched, and every block keep its contents. Only the
 * first and last byte of each block are written. */
void test_region_full(void)
{
	const size_t n = HOST_MIB;

	for (int i = 0; i < FULL_BLOCKS; i++) {
		errno = EDOM;
		char *p = malloc(n);
		EXPECT(p != NULL, "malloc block %d: %s", i, strerror(errno));
		if (!p)
			break;
		EXPECT(errno == EDOM, "malloc block %d changed errno to %d", i, errno);
		p[0] = (char)i;
		p[n - 1] = (char)~i;
		full_blocks[i] = p;
	}
	for (int i = 0; i < FULL_BLOCKS && full_blocks[i]; i++) {
		char *p = full_blocks[i];
		EXPECT(p[0] == (char)i && p[n - 1] == (char)~i, "block %d lost its contents", i);
		errno = EDOM;
		free(p);
		EXPECT(errno == EDOM, "free of block %d changed errno to %d", i, errno);
	}
	EXPECT(mixed_round(2), "round after the region was full");
}

/* ---------------------------------------------------------------------- */
/* Pass-through counting: short-lived threads hand their counts over       */
/* ---------------------------------------------------------------------- */

#define COUNT_THREADS 10
#define COUNT_PAIRS   1000

static void *count_thread(void *arg)
{
	for (int i = 0; i < COUNT_PAIRS; i++) {
		void *p = malloc(32);
		if (!p)
			__atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
		free(p);
	}
	return arg;
}

/* COUNT_THREADS * COUNT_PAIRS small allocations, far less than a batch per
 * thread: shim_conf.test checks they were all counted. */
void test_count(void)
{
	pthread_t th[COUNT_THREADS];

	for (int i = 0; i < COUNT_THREADS; i++)
		EXPECT(pthread_create(&th[i], NULL, count_thread, NULL) == 0, "create");
	for (int i = 0; i < COUNT_THREADS; i++)
		pthread_join(th[i], NULL);
}

static long status_kib(const char *key)
{
	char line[256];
	long v = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, key, strlen(key)) == 0)
			v = atol(line + strlen(key));
	fclose(f);
	return v;
}

/* A buffer grown by realloc a step at a time, as Python grows a bytearray,
 * to 64 MiB: the contents survive every move, and the peak memory stays
 * near the buffer's (the old and the new block while one is copied), not
 * one left-over block per size class passed. */
void test_realloc_growth(void)
{
	const size_t last = (size_t)64 << 20;
	long base = status_kib("VmRSS:"), peak;
	size_t n = 1000, i;
	unsigned char *p = malloc(n), *q;

	EXPECT(p != NULL, "malloc");
	for (i = 0; i < n; i++)
		p[i] = (unsigned char)(i * 7);
	while (p != NULL && n < last) {
		size_t m = n + n / 8 + 64;

		q = realloc(p, m);
		EXPECT(q != NULL, "realloc");
		if (q == NULL)
			break;
		p = q;
		EXPECT(p[n / 2] == (unsigned char)((n / 2) * 7) &&
		               p[n - 1] == (unsigned char)((n - 1) * 7),
		       "contents kept");
		for (i = n; i < m; i++)
			p[i] = (unsigned char)(i * 7);
		n = m;
	}
	peak = status_kib("VmHWM:");
	EXPECT(base >= 0 && peak >= 0, "VmRSS and VmHWM in /proc/self/status");
	if (peak - base > 3 * (long)(last >> 10)) {
		fprintf(stderr,
		        "realloc-growth: peak %ld KiB over a %ld KiB start for a %zu KiB buffer\n",
		        peak, base, n >> 10);
		failures++;
	}
	free(p);
}

/* malloc_trim gives back the allocator's free memory: a freed 48 MiB
 * block (above glibc's largest mmap threshold, so glibc alone unmaps it at
 * free) leaves no resident trace once the host has asked. */
void test_malloc_trim(void)
{
	const size_t n = 48 * HOST_MIB;
	long base = status_kib("VmRSS:"), after;
	char *p = malloc(n);

	EXPECT(p != NULL, "malloc");
	if (p == NULL)
		return;
	memset(p, 1, n);
	free(p);
	malloc_trim(0);
	after = status_kib("VmRSS:");
	EXPECT(base >= 0 && after - base < 8 * 1024, "VmRSS %ld KiB after malloc_trim, %ld before",
	       after, base);
}

/* Anonymous mappings of 2 MiB or more that are not locked (no "lo" in
 * their smaps VmFlags); -1 when smaps cannot be read. */
static long unlocked_mappings(void)
{
	char line[512];
	long n = 0, kib = 0;
	FILE *f = fopen("/proc/self/smaps", "r");

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (sscanf(line, "Size: %ld kB", &kib) == 1)
			continue;
		if (strncmp(line, "VmFlags:", 8) == 0 && strstr(line, " lo") == NULL && kib >= 2048)
			n++;
	}
	fclose(f);
	return n;
}

/* A host that locks all its memory, now and to come (mlockall, as
 * real-time and some serving programs do). The lock must not fault in
 * address space an allocator only reserved (run under ulimit -v, so that
 * a reservation that were read-write would be a few GiB, not the machine);
 * and a block whose pages the allocator could not give back (locked pages
 * stay, with their data) must not be taken for a zeroed one: the 1 MiB
 * block realloc leaves behind is calloc's next. Nor may memory the
 * host uses later escape the lock: an idle block's pages moved into a
 * larger one would leave their range unlocked (MREMAP_DONTUNMAP). Without
 * the privilege to lock, it says so and checks nothing else: that is also
 * the case of a user without CAP_IPC_LOCK under a small RLIMIT_MEMLOCK
 * (8 MiB by default), which mlockall accepts but which then refuses the
 * host's own later allocations, with or without a shim. */
void test_mlockall(void)
{
	const size_t n = HOST_MIB;
	unsigned char *p, *q, *z;
	long base, peak;
	size_t i, nonzero = 0;
	struct rlimit lim;

	free(malloc(n)); /* the allocator is up before the lock */
	if (geteuid() != 0 && getrlimit(RLIMIT_MEMLOCK, &lim) == 0 &&
	    lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < 256 * n) {
		printf("mlockall: refused\n");
		return;
	}
	if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0) {
		printf("mlockall: refused\n");
		return;
	}
	base = status_kib("VmRSS:");
	EXPECT(base >= 0 && base < 512 * 1024, "VmRSS %ld KiB after mlockall", base);
	p = malloc(n);
	EXPECT(p != NULL, "malloc");
	if (p == NULL)
		return;
	memset(p, 0xa5, n);
	q = realloc(p, 8 * n); /* p's block stays behind, its pages locked */
	EXPECT(q != NULL && q[n - 1] == 0xa5, "realloc");
	z = calloc(1, n);
	EXPECT(z != NULL, "calloc");
	for (i = 0; z != NULL && i < n; i++)
		nonzero += z[i] != 0;
	EXPECT(nonzero == 0, "calloc: %zu bytes not zero", nonzero);
	free(z);
	free(q);
	p = malloc(8 * n);
	EXPECT(p != NULL, "malloc");
	if (p != NULL)
		memset(p, 0x5a, 8 * n);
	free(p);
	q = malloc(40 * n); /* larger than any idle block: grows */
	EXPECT(q != NULL, "malloc");
	if (q != NULL)
		memset(q, 0x5a, 40 * n);
	EXPECT(unlocked_mappings() == 0, "%ld mappings of 2 MiB or more not locked",
	       unlocked_mappings());
	free(q);
	peak = status_kib("VmHWM:");
	EXPECT(peak - base < 128 * 1024, "VmHWM %ld KiB, %ld KiB after mlockall", peak, base);
	munlockall();
	printf("mlockall: locked\n");
}

/* A fork costs what it costs without the shim. Neither side may fault in
 * the stats segment's thread slots no thread ever used (shared memory is
 * allocated on a read fault: 1024 slots are about 4.6 MiB, and forking took
 * four times as long); RssShmem counts the segment pages a process
 * touched, and the host maps no other shared memory. Nor may the child get
 * the page tables of a 32 MiB block the parent freed (glibc unmaps it):
 * the child's RssAnon stays below it. What the parent holds live at a fork,
 * even in a block that was idle at the fork before, reaches the child
 * intact, and the child's own 32 MiB calloc reads as zero. */
/* Does p[0, n) read as zero? One look at each page's first and last byte
 * (a recycled page shows at both); what is there, not what calloc
 * promises (host_written). Says where not on stderr. */
static bool pages_zero(unsigned char *p, size_t n, const char *what)
{
	host_written(p);
	for (size_t i = 0; i < n; i += 4096)
		if (p[i] != 0 || p[i + 4095] != 0) {
			fprintf(stderr, "%s: byte %zu is %#x\n", what, i,
			        p[i] ? p[i] : p[i + 4095]);
			return false;
		}
	return true;
}

/* In a forked child: a 32 MiB calloc reads as zero and can be written. */
static int fork_cheap_child_calloc(void)
{
	unsigned char *z = calloc(1, 32 * HOST_MIB);

	if (z == NULL || !pages_zero(z, 32 * HOST_MIB, "fork child: calloc"))
		return 1;
	host_fill(z, 32 * HOST_MIB, 11);
	if (!host_check(z, 32 * HOST_MIB, 32 * HOST_MIB, 11))
		return 1;
	free(z);
	return 0;
}

static int fork_cheap_child(const unsigned char *keep, const unsigned char *live, uint64_t seed)
{
	long shm = status_kib("RssShmem:"), anon = status_kib("RssAnon:");

	if (shm < 0 || shm >= 1024 || (live == NULL && (anon < 0 || anon >= 24 * 1024))) {
		fprintf(stderr, "fork-cheap: child RssShmem %ld KiB, RssAnon %ld KiB\n", shm, anon);
		return 1;
	}
	if (!host_check(keep, 4 * HOST_MIB, 4 * HOST_MIB, 7) ||
	    (live != NULL && !host_check(live, 32 * HOST_MIB, 32 * HOST_MIB, seed))) {
		fprintf(stderr, "fork-cheap: the parent's live blocks changed in the child\n");
		return 1;
	}
	return fork_cheap_child_calloc();
}

void test_fork_cheap(void)
{
	unsigned char *keep = malloc(4 * HOST_MIB), *idle = malloc(32 * HOST_MIB);

	EXPECT(keep != NULL && idle != NULL && mixed_round(3), "before fork");
	if (keep == NULL || idle == NULL)
		return;
	host_fill(keep, 4 * HOST_MIB, 7);
	host_fill(idle, 32 * HOST_MIB, 8);
	free(idle);
	for (int f = 0; f < 4; f++) {
		/* forks 2 and 3: a live 32 MiB block (from the one idle before) */
		unsigned char *live = f >= 2 ? malloc(32 * HOST_MIB) : NULL;

		if (f >= 2) {
			EXPECT(live != NULL, "malloc");
			if (live == NULL)
				return;
			host_fill(live, 32 * HOST_MIB, 20 + (uint64_t)f);
		}
		pid_t pid = fork();

		if (pid == 0)
			_exit(fork_cheap_child(keep, live, 20 + (uint64_t)f));
		int status = 0;
		EXPECT(pid > 0 && waitpid(pid, &status, 0) == pid, "fork/wait");
		EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %d status %#x", f,
		       status);
		if (live != NULL)
			EXPECT(host_check(live, 32 * HOST_MIB, 32 * HOST_MIB, 20 + (uint64_t)f),
			       "parent's block after fork %d", f);
		free(live);
	}
	long kib = status_kib("RssShmem:");
	EXPECT(kib >= 0 && kib < 1024, "parent RssShmem %ld KiB", kib);
	EXPECT(host_check(keep, 4 * HOST_MIB, 4 * HOST_MIB, 7), "parent's 4 MiB block");
	free(keep);
}

/*
 * A host in a sandbox whose syscall filter refuses what the pools use.
 * "docker": the NUMA calls, as Docker's default seccomp profile refuses
 * them to a container without CAP_SYS_NICE (EPERM): get_mempolicy,
 * set_mempolicy, mbind, move_pages, migrate_pages. "strict": those, and
 * mremap and madvise too (ENOSYS, as a sandbox that does not implement
 * them answers): no page moves, no decommit, no fork wipe. The filter is
 * installed and the program exec'd again under it, so the shim starts up
 * in the sandbox, as it would in a container. Everything a host can see
 * must be as without the filter: contents kept across reuse, realloc and
 * fork, calloc zeroed after a dirty free, cross-thread frees.
 */
static bool seccomp_install(bool strict)
{
	static const struct {
		int nr, err;
		bool strict; /* only in the strict profile */
	} denied[] = {
	        {SYS_get_mempolicy, EPERM, false}, {SYS_set_mempolicy, EPERM, false},
	        {SYS_mbind, EPERM, false},         {SYS_move_pages, EPERM, false},
	        {SYS_migrate_pages, EPERM, false}, {SYS_mremap, ENOSYS, true},
	        {SYS_madvise, ENOSYS, true},
	};
	struct sock_filter f[4 + 2 * sizeof(denied) / sizeof(denied[0]) + 1] = {
	        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
	        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
	        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	};
	unsigned short n = 4;

	for (size_t i = 0; i < sizeof(denied) / sizeof(denied[0]); i++) {
		if (denied[i].strict && !strict)
			continue;
		f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
		                                      (unsigned)denied[i].nr, 0, 1);
		f[n++] = (struct sock_filter)BPF_STMT(
		        BPF_RET | BPF_K,
		        SECCOMP_RET_ERRNO | ((unsigned)denied[i].err & SECCOMP_RET_DATA));
	}
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);

	struct sock_fprog prog = {.len = n, .filter = f};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
		perror("host_robust: seccomp");
		return false;
	}
	return true;
}

void test_seccomp(char *self, const char *profile)
{
	bool strict = !strcmp(profile, "strict");

	if (!strict && strcmp(profile, "docker") != 0) {
		fprintf(stderr, "host_robust: seccomp docker|strict\n");
		failures++;
		return;
	}
	fflush(stdout);
	if (!seccomp_install(strict)) {
		failures++;
		return;
	}
	execl(self, self, "seccomp-run", profile, (char *)NULL);
	perror("host_robust: exec");
	failures++;
}

/* A block of n bytes written all over, then freed. */
static void dirty_free(size_t n)
{
	unsigned char *p = malloc(n);

	EXPECT(p != NULL, "malloc");
	if (p != NULL)
		memset(p, 0xa5, n);
	host_written(p);
	free(p);
}

static void *seccomp_thread(void *arg)
{
	void **out = arg;

	*out = malloc(24 * HOST_MIB);
	if (*out != NULL)
		host_fill(*out, 24 * HOST_MIB, 31);
	return NULL;
}

void test_seccomp_run(const char *profile)
{
	uint64_t rng = 17;
	pthread_t t;
	void *theirs = NULL;
	unsigned char *p, *q;

	/* the filter is there: what the sandbox refuses fails as it says */
	errno = 0;
	EXPECT(syscall(SYS_get_mempolicy, NULL, NULL, 0, NULL, 0) != 0 && errno == EPERM,
	       "get_mempolicy refused (%s)", strerror(errno));
	if (!strcmp(profile, "strict")) {
		errno = 0;
		EXPECT(madvise(NULL, 0, MADV_NORMAL) != 0 && errno == ENOSYS, "madvise refused");
	}
	/* first, while this is the only block: written, freed and trimmed, it
	 * comes back to calloc, which may skip zeroing only what did go back */
	dirty_free(40 * HOST_MIB);
	malloc_trim(0);
	q = calloc(1, 40 * HOST_MIB);
	EXPECT(q != NULL && pages_zero(q, 40 * HOST_MIB, "calloc after trim"), "calloc after trim");
	free(q);
	EXPECT(mixed_round(41), "mixed sizes");
	/* sizes that vary, as a decode loop's temporaries: reuse across classes */
	for (int i = 0; i < 64; i++) {
		size_t n = (8 + host_rand(&rng) % 57) * HOST_MIB - host_rand(&rng) % 4096;

		EXPECT(round_trip(n, (uint64_t)i), "round trip of %zu bytes", n);
	}
	/* a dirty block freed, then calloc'd: zero although decommit may fail */
	dirty_free(40 * HOST_MIB);
	for (int i = 0; i < 3; i++) {
		size_t n = (20 + 10 * (size_t)i) * HOST_MIB;

		q = calloc(1, n);
		EXPECT(q != NULL && pages_zero(q, n, "calloc"), "calloc(%zu)", n);
		if (q != NULL)
			memset(q, 0x5a, n);
		host_written(q);
		free(q);
	}
	/* realloc growth: moved without mremap, or moved by it */
	p = malloc(1000);
	size_t n = 1000;
	EXPECT(p != NULL, "malloc");
	if (p != NULL)
		host_fill(p, n, 5);
	while (p != NULL && n < 48 * HOST_MIB) {
		size_t m = n + n / 4 + 4096;

		q = realloc(p, m);
		EXPECT(q != NULL, "realloc to %zu", m);
		if (q == NULL)
			break;
		p = q;
		EXPECT(host_check(p, n, n, 5), "realloc to %zu kept the contents", m);
		host_fill(p, m, 5);
		n = m;
	}
	/* a block from another thread, freed here */
	EXPECT(pthread_create(&t, NULL, seccomp_thread, &theirs) == 0 && pthread_join(t, NULL) == 0,
	       "thread");
	EXPECT(theirs != NULL && host_check(theirs, 24 * HOST_MIB, 24 * HOST_MIB, 31),
	       "the other thread's block");
	free(theirs);
	/* fork: live blocks intact in the child, its calloc zero (no wipe) */
	q = malloc(32 * HOST_MIB);
	EXPECT(q != NULL, "malloc");
	if (q != NULL)
		memset(q, 0x77, 32 * HOST_MIB);
	host_written(q);
	free(q);
	pid_t pid = fork();
	if (pid == 0)
		_exit(p != NULL && host_check(p, n, n, 5) ? fork_cheap_child_calloc() : 1);
	int status = 0;
	EXPECT(pid > 0 && waitpid(pid, &status, 0) == pid, "fork/wait");
	EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
	EXPECT(p == NULL || host_check(p, n, n, 5), "parent's block after fork");
	free(p);
	EXPECT(mixed_round(43), "mixed sizes after trim");
	if (failures == 0)
		printf("seccomp %s: ok\n", profile);
}

/* Run under ulimit -v: three 1.5 GiB blocks (never touched) that the limit
 * allows the backend, so the pools' region must not have taken their
 * room. Above max_size, they are the backend's anyway. */
void test_as_limit(void)
{
	void *p[3];
	int got = 0;

	for (int i = 0; i < 3; i++)
		if ((p[i] = malloc((size_t)3 << 29)) != NULL)
			got++;
	printf("as-limit: %d of 3\n", got);
	for (int i = 0; i < 3; i++)
		free(p[i]);
}
