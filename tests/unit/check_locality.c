/*
 * check_locality.c - unit suites of the locality audit's data collection
 * (topology, placement and faults of stats/audit/), in the one Check runner
 * (tests/unit/check_scratch.c). Pure parsers get hostile text; the syscall
 * paths run against this process and its children. A case that needs
 * sampling and finds it refused here (perf_event_paranoid) checks the reason
 * instead.
 *
 * Select with CK_RUN_SUITE=topology|placement|faults, CK_RUN_CASE=...
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "faults.h"
#include "placement.h"
#include "topology.h"
#include "suites.h"

/* ThreadSanitizer's runtime runs a thread of its own in every process,
 * which the thread counts below would see (UNDER_TSAN: suites.h). */

#define PAGE 4096UL

/* ---- topology ---- */

START_TEST(test_cpulist)
{
	uint64_t set[2];

	ck_assert_int_eq(topology_parse_cpulist("0-3,8,10-11\n", set, 128), 0);
	ck_assert_uint_eq(set[0], 0xd0fULL);
	ck_assert_int_eq(topology_parse_cpulist("\n", set, 128), 0);
	ck_assert_uint_eq(set[0], 0);
	ck_assert_int_eq(topology_parse_cpulist("", set, 128), 0);
	ck_assert_int_eq(topology_parse_cpulist("64-65", set, 128), 0);
	ck_assert_uint_eq(set[1], 3);
	ck_assert_int_eq(topology_parse_cpulist("3-1", set, 128), -EINVAL);
	ck_assert_int_eq(topology_parse_cpulist("0-", set, 128), -EINVAL);
	ck_assert_int_eq(topology_parse_cpulist("1,,2", set, 128), -EINVAL);
	ck_assert_int_eq(topology_parse_cpulist("a", set, 128), -EINVAL);
	ck_assert_int_eq(topology_parse_cpulist("-1", set, 128), -EINVAL);
	ck_assert_int_eq(topology_parse_cpulist("0\nx", set, 128), -EINVAL);
	ck_assert_int_eq(topology_parse_cpulist("128", set, 128), -ERANGE);
	ck_assert_int_eq(topology_parse_cpulist("99999999999999999999999", set, 128), -EINVAL);
}
END_TEST

/* A stat line whose fields 4..38 are 0 (or negative) and 39 is cpu. */
static void stat_line(char *buf, size_t len, const char *comm, const char *cpu)
{
	int n = snprintf(buf, len, "4242 (%s) S", comm);

	for (int f = 4; f <= 38; f++)
		n += snprintf(buf + n, len - (size_t)n, f == 18 ? " -2" : " 0");
	snprintf(buf + n, len - (size_t)n, " %s 0 0 0 0 0\n", cpu);
}

START_TEST(test_stat)
{
	struct topology_thread th = {0};
	char line[512];

	stat_line(line, sizeof(line), "worker", "3");
	ck_assert_int_eq(topology_parse_stat(line, strlen(line), &th), 0);
	ck_assert_int_eq(th.tid, 4242);
	ck_assert_str_eq(th.name, "worker");
	ck_assert_int_eq(th.state, 'S');
	ck_assert_int_eq(th.cpu, 3);
	/* comm with spaces and parentheses: the last ')' ends it. */
	stat_line(line, sizeof(line), "mv) (1 2", "1");
	ck_assert_int_eq(topology_parse_stat(line, strlen(line), &th), 0);
	ck_assert_str_eq(th.name, "mv) (1 2");
	ck_assert_int_eq(th.cpu, 1);
	stat_line(line, sizeof(line), ") S 1 2 3 (", "7");
	ck_assert_int_eq(topology_parse_stat(line, strlen(line), &th), 0);
	ck_assert_str_eq(th.name, ") S 1 2 3 (");
	ck_assert_int_eq(th.cpu, 7);
}
END_TEST

START_TEST(test_stat_hostile)
{
	struct topology_thread th = {.tid = 99};
	char line[512];

	/* Truncated at every length: never a crash, never a half result. */
	stat_line(line, sizeof(line), "x", "5");
	for (size_t n = 0; n < strlen(line); n++) {
		int r;

		th.tid = 99;
		r = topology_parse_stat(line, n, &th);

		if (r == 0)
			ck_assert_int_eq(th.cpu, 5); /* only once field 39 is whole */
		else
			ck_assert_int_eq(th.tid, 99);
	}
	th.tid = 99;
	stat_line(line, sizeof(line), "x", "abc");
	ck_assert_int_eq(topology_parse_stat(line, strlen(line), &th), -EINVAL);
	stat_line(line, sizeof(line), "x", "99999999999");
	ck_assert_int_eq(topology_parse_stat(line, strlen(line), &th), -EINVAL);
	ck_assert_int_eq(topology_parse_stat("", 0, &th), -EINVAL);
	ck_assert_int_eq(topology_parse_stat("12 (x S 0", 9, &th), -EINVAL);
	ck_assert_int_eq(topology_parse_stat("(x) S", 5, &th), -EINVAL);
	ck_assert_int_eq(topology_parse_stat("12x (x) S", 9, &th), -EINVAL);
	ck_assert_int_eq(th.tid, 99);
}
END_TEST

/* Remove the fake sysfs tree dir (made by mkdtemp, so no quoting needed). */
static void remove_tree(const char *dir)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* A fake sysfs node directory under dir with the given cpulists. */
static void fake_node(const char *dir, const char *node, const char *cpulist)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, node);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/%s/cpulist", dir, node);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(cpulist, f);
	fclose(f);
}

START_TEST(test_load)
{
	char dir[] = "/tmp/check-topology.XXXXXX", missing[300], err[256] = "";
	struct topology t;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	fake_node(dir, "node0", "0-1\n");
	fake_node(dir, "node2", "2,3\n");
	fake_node(dir, "nodefoo", "9\n"); /* not a node: ignored */
	ck_assert_int_eq(topology_load(dir, &t, err, sizeof(err)), 0);
	ck_assert_uint_eq(t.nodes, 3);
	ck_assert_uint_eq(t.node_mask, 5);
	ck_assert_uint_eq(t.ncpus, 4);
	ck_assert(!t.fallback);
	ck_assert_int_eq(topology_cpu_node(&t, 1), 0);
	ck_assert_int_eq(topology_cpu_node(&t, 3), 2);
	ck_assert_int_eq(topology_cpu_node(&t, 4), -1);
	ck_assert_int_eq(topology_cpu_node(&t, -1), -1);
	topology_free(&t);
	topology_free(&t); /* twice is harmless */
	fake_node(dir, "node1", "0-x\n");
	ck_assert_int_eq(topology_load(dir, &t, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "not a cpulist"));
	snprintf(missing, sizeof(missing), "%s/none", dir);
	ck_assert_int_eq(topology_load(missing, &t, err, sizeof(err)), 0);
	ck_assert(t.fallback);
	ck_assert_uint_eq(t.nodes, 1);
	ck_assert_int_eq(topology_cpu_node(&t, 0), 0);
	topology_free(&t);
	remove_tree(dir);
}
END_TEST

START_TEST(test_node_range)
{
	char dir[] = "/tmp/check-topology.XXXXXX", err[256] = "", path[300];
	struct topology t;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	fake_node(dir, "node64", "0\n");
	ck_assert_int_eq(topology_load(dir, &t, err, sizeof(err)), -ERANGE);
	ck_assert_ptr_nonnull(strstr(err, "node id 64"));
	remove_tree(dir);
	/* A node whose cpulist vanished is an error, not the fallback. */
	ck_assert_ptr_nonnull(mkdtemp(strcpy(dir, "/tmp/check-topology.XXXXXX")));
	fake_node(dir, "node0", "0\n");
	snprintf(path, sizeof(path), "%s/node1", dir);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	ck_assert_int_eq(topology_load(dir, &t, err, sizeof(err)), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, "node1/cpulist"));
	remove_tree(dir);
}
END_TEST

/* Pins itself to CPU 0, names itself, then says so through the barrier
 * (a fixed sleep lost the race on a loaded machine). */
static void *pinned(void *arg)
{
	pthread_barrier_t *ready = arg;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	sched_setaffinity(0, sizeof(set), &set);
	pthread_setname_np(pthread_self(), "pin (0) x");
	pthread_barrier_wait(ready);
	pause();
	return NULL;
}

#ifndef UNDER_TSAN
START_TEST(test_threads)
{
	struct topology_thread *th;
	pthread_barrier_t ready;
	struct topology t;
	char err[256];
	pthread_t p;
	size_t n;
	int found = 0;

	ck_assert_int_eq(topology_load(NULL, &t, err, sizeof(err)), 0);
	ck_assert_int_eq(pthread_barrier_init(&ready, NULL, 2), 0);
	ck_assert_int_eq(pthread_create(&p, NULL, pinned, &ready), 0);
	pthread_barrier_wait(&ready);
	ck_assert_int_eq(topology_threads(&t, getpid(), &th, &n, err, sizeof(err)), 0);
	ck_assert_uint_eq(n, 2);
	for (size_t i = 0; i < n; i++)
		if (strcmp(th[i].name, "pin (0) x") == 0) {
			found = 1;
			ck_assert_int_eq(th[i].cpu, 0);
			ck_assert_int_eq(th[i].node, topology_cpu_node(&t, 0));
			ck_assert_uint_eq(th[i].affinity, 1ULL << th[i].node);
		}
	ck_assert(found);
	free(th);
	ck_assert_int_eq(topology_threads(&t, 0x7ffffff0, &th, &n, err, sizeof(err)), -ESRCH);
	ck_assert_ptr_nonnull(strstr(err, "no such process"));
	topology_free(&t);
}
END_TEST
#endif

/* ---- placement ---- */

static void span_count(uintptr_t s, uintptr_t e, size_t stride, void *arg)
{
	uintptr_t *out = arg;

	out[0]++;
	out[1] = s;
	out[2] = e;
	out[3] = stride;
}

START_TEST(test_smaps)
{
	const char *text = "7e0000000000-7e0004000000 rw-p 00000000 00:00 0 \n"
	                   "Size:              65536 kB\n"
	                   "KernelPageSize:        4 kB\n"
	                   "Rss:               65536 kB\n"
	                   "AnonHugePages:     65536 kB\n"
	                   "VmFlags: rd wr mr mw me ac \n"
	                   "7f0000000000-7f0000400000 rw-p 00000000 00:00 0 \n"
	                   "Rss:                4100 kB\n"
	                   "AnonHugePages:      4096 kB\n"
	                   "7f1000000000-7f1000400000 rw-s 00000000 00:0f 123 /anon_hugepage\n"
	                   "KernelPageSize:     2048 kB\n"
	                   "Rss:                   0 kB\n";
	uintptr_t out[4] = {0};

	ck_assert_int_eq(
	        placement_parse_smaps(text, 0x7e0001000000, 0x7e0008000000, span_count, out), 1);
	ck_assert_uint_eq(out[1], 0x7e0001000000); /* clipped */
	ck_assert_uint_eq(out[2], 0x7e0004000000);
	ck_assert_uint_eq(out[3], 2UL << 20);
	memset(out, 0, sizeof(out));
	/* The partly huge mapping is not reported; the hugetlb one is. */
	ck_assert_int_eq(
	        placement_parse_smaps(text, 0x7f0000000000, 0x7f2000000000, span_count, out), 1);
	ck_assert_uint_eq(out[1], 0x7f1000000000);
	ck_assert_int_eq(placement_parse_smaps("Rss: 4 kB\n", 0, ~0UL, span_count, out), -EINVAL);
	ck_assert_int_eq(placement_parse_smaps("10-5 rw-p\n", 0, ~0UL, span_count, out), -EINVAL);
	ck_assert_int_eq(placement_parse_smaps("", 0, ~0UL, span_count, out), 0);
}
END_TEST

/* Pages of [p, p + n pages) resident per mincore(2): an independent witness. */
static size_t resident(void *p, size_t n)
{
	unsigned char vec[256];
	size_t r = 0;

	ck_assert_uint_le(n, sizeof(vec));
	ck_assert_int_eq(mincore(p, n * PAGE, vec), 0);
	for (size_t i = 0; i < n; i++)
		r += vec[i] & 1;
	return r;
}

/* Is any page of [p, p + n pages) mapped (mincore(2) answers for it)? */
static bool any_mapped(void *p, size_t n)
{
	unsigned char v;

	for (size_t i = 0; i < n; i++)
		if (mincore((char *)p + i * PAGE, PAGE, &v) == 0)
			return true;
	return false;
}

START_TEST(test_self)
{
	char *p = mmap(NULL, 64 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct placement pl;
	char err[256];

	ck_assert_ptr_ne(p, MAP_FAILED);
	madvise(p, 64 * PAGE, MADV_NOHUGEPAGE);
	for (int i = 0; i < 10; i++)
		p[(20 + i) * PAGE] = 1;
	for (int round = 0; round < 2; round++) {
		ck_assert_int_eq(placement_read(0, (uintptr_t)p + 1, 64 * PAGE - 1, 0, &pl, err,
		                                sizeof(err)),
		                 0);
		ck_assert_uint_eq(pl.queries, 64);
		ck_assert_uint_eq(pl.nruns, 3);
		ck_assert_int_eq(pl.runs[0].node, PLACEMENT_ABSENT);
		ck_assert_uint_eq(pl.runs[0].length, 20 * PAGE);
		ck_assert_int_ge(pl.runs[1].node, 0);
		ck_assert_uint_eq(pl.runs[1].start, (uintptr_t)p + 20 * PAGE);
		ck_assert_uint_eq(pl.runs[1].length, 10 * PAGE);
		ck_assert_int_eq(pl.runs[2].node, PLACEMENT_ABSENT);
		ck_assert_uint_eq(placement_bytes(&pl, PLACEMENT_ABSENT, 0, UINTPTR_MAX),
		                  54 * PAGE);
		ck_assert_uint_eq(placement_bytes(&pl, PLACEMENT_ABSENT, (uintptr_t)p,
		                                  (uintptr_t)p + 25 * PAGE),
		                  20 * PAGE);
		placement_free(&pl);
		/* Reading made nothing present. */
		ck_assert_uint_eq(resident(p, 64), 10);
	}
	/* An unmapped range is absent too (-EFAULT per page), as long as it
	 * stays unmapped: a sanitizer's runtime may map the hole again for
	 * itself meanwhile (seen under ASan), and then there is nothing to
	 * check. */
	munmap(p, 64 * PAGE);
	ck_assert_int_eq(
	        placement_read(0, (uintptr_t)p, 64 * PAGE, PLACEMENT_HUGE, &pl, err, sizeof(err)),
	        0);
	if (!any_mapped(p, 64)) {
		ck_assert_uint_eq(pl.nruns, 1);
		ck_assert_int_eq(pl.runs[0].node, PLACEMENT_ABSENT);
	}
	placement_free(&pl);
}
END_TEST

START_TEST(test_huge)
{
	size_t len = 8UL << 20;
	char *raw = mmap(NULL, len + (2UL << 20), PROT_READ | PROT_WRITE,
	                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
	     *p;
	struct placement pl;
	char err[256];

	ck_assert_ptr_ne(raw, MAP_FAILED);
	p = (char *)(((uintptr_t)raw + (2UL << 20) - 1) & ~((2UL << 20) - 1));
	/* Its own mapping (mprotect splits it), so smaps can speak of it alone. */
	ck_assert_int_eq(mprotect(p, len, PROT_READ | PROT_WRITE | PROT_EXEC), 0);
	if (madvise(p, len, MADV_HUGEPAGE) != 0)
		return; /* no THP in this kernel */
	memset(p, 1, len);
	ck_assert_int_eq(
	        placement_read(0, (uintptr_t)p, len, PLACEMENT_HUGE, &pl, err, sizeof(err)), 0);
	ck_assert_uint_eq(placement_bytes(&pl, PLACEMENT_ABSENT, 0, UINTPTR_MAX), 0);
	/* Whole huge pages (when the kernel gave them): one query each. */
	if (pl.huge_strides > 0)
		ck_assert_uint_eq(pl.queries, 4);
	else
		ck_assert_uint_eq(pl.queries, len / PAGE);
	placement_free(&pl);
	munmap(raw, len + (2UL << 20));
}
END_TEST

START_TEST(test_placement_errors)
{
	struct placement pl = {.nruns = 77};
	char err[256] = "", buf[PAGE];
	pid_t child;
	int status;

	ck_assert_int_eq(placement_read(0, (uintptr_t)buf, 0, 0, &pl, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(placement_read(0, UINTPTR_MAX - 10, 100, 0, &pl, err, sizeof(err)),
	                 -EINVAL);
	ck_assert_int_eq(placement_read(0x7ffffff0, (uintptr_t)buf, PAGE, 0, &pl, err, sizeof(err)),
	                 -ESRCH);
	ck_assert_ptr_nonnull(strstr(err, "no such process"));
	ck_assert_uint_eq(pl.nruns, 77); /* untouched on failure */
	if (geteuid() != 0)
		return;
	/* Another user's process: a child that becomes nobody reads init's. */
	child = fork();
	if (child == 0) {
		if (setgid(65534) != 0 || setuid(65534) != 0)
			_exit(2);
		_exit(placement_read(1, 0x400000, PAGE, 0, &pl, err, sizeof(err)) == -EPERM &&
		                      strstr(err, "another user's process") != NULL
		              ? 0
		              : 1);
	}
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert_int_eq(WEXITSTATUS(status), 0);
}
END_TEST

/* ---- faults ---- */

static char refused[256];

/* True when sampling is allowed here; else the reason is in refused. */
static int sampling_allowed(void)
{
	int r = faults_probe(refused, sizeof(refused));

	if (r != 0)
		ck_assert_ptr_nonnull(strstr(refused, "perf"));
	return r == 0;
}

struct tally {
	long n;
	pid_t tid;
	uintptr_t lo, hi;
	long in_range;
};

static void tally(const struct faults_sample *s, void *arg)
{
	struct tally *t = arg;

	t->n++;
	t->tid = s->tid;
	t->in_range += s->addr >= t->lo && s->addr < t->hi;
}

START_TEST(test_launch)
{
	char sh[] = "sh", c[] = "-c", cmd[] = "exit 3";
	char *argv[] = {sh, c, cmd, NULL};
	struct faults_stats st;
	struct tally t = {0};
	char err[256];
	faults_t *f;
	pid_t pid;
	int status;

	if (!sampling_allowed())
		return;
	ck_assert_int_eq(faults_launch(argv, NULL, &f, &pid, err, sizeof(err)), 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_int_eq(WEXITSTATUS(status), 3);
	faults_drain(f, tally, &t);
	faults_get_stats(f, &st);
	ck_assert_int_gt(t.n, 10); /* ld.so and libc fault pages in */
	ck_assert_uint_eq(st.kept, (uint64_t)t.n);
	ck_assert_int_eq(t.tid, pid);
	ck_assert_uint_ge(st.events, 1);
	faults_close(f);
}
END_TEST

START_TEST(test_launch_errors)
{
	char cmd[] = "/nonexistent/cmd";
	char *bad[] = {cmd, NULL}, *none[] = {NULL};
	struct faults_opts o = {.ring_pages = 3};
	char err[256] = "";
	faults_t *f = NULL;
	pid_t pid = 0;

	ck_assert_int_eq(faults_launch(none, NULL, &f, &pid, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(faults_launch(bad, &o, &f, &pid, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "power of two"));
	if (!sampling_allowed()) {
		/* Refused: the command never runs and no child is left. */
		ck_assert_int_lt(faults_launch(bad, NULL, &f, &pid, err, sizeof(err)), 0);
		ck_assert_str_eq(err, refused);
	} else {
		ck_assert_int_eq(faults_launch(bad, NULL, &f, &pid, err, sizeof(err)), -ENOENT);
		ck_assert_ptr_nonnull(strstr(err, "cannot run /nonexistent/cmd"));
	}
	ck_assert_int_eq(waitpid(-1, NULL, WNOHANG), -1);
	ck_assert_int_eq(errno, ECHILD);
	ck_assert_ptr_null(f);
	ck_assert_int_eq(pid, 0);
}
END_TEST

#ifndef UNDER_TSAN
/*
 * A child that writes one byte to each of n shared pages once go says so,
 * and the sampler attached to it before (ring pages: ring, 0 the default),
 * keeping the samples inside the pages. The caller writes go, reaps
 * w->child, and calls attached_done().
 */
struct attached {
	faults_t *f;
	pid_t child;
	int go[2];
	char *p;
	int n;
	struct tally t;
};

static void attach_writer(struct attached *w, int n, unsigned ring)
{
	struct faults_opts o;
	char err[256];

	w->n = n;
	w->p = mmap(NULL, n * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(w->p, MAP_FAILED);
	ck_assert_int_eq(pipe(w->go), 0);
	w->child = fork();
	if (w->child == 0) {
		char c;

		/* Touch the shared pages only once the parent has attached. */
		if (read(w->go[0], &c, 1) != 1)
			_exit(1);
		for (int i = 0; i < n; i++)
			w->p[i * PAGE] = 1;
		_exit(0);
	}
	o = (struct faults_opts){
	        .lo = (uintptr_t)w->p, .hi = (uintptr_t)w->p + n * PAGE, .ring_pages = ring};
	w->t = (struct tally){.lo = o.lo, .hi = o.hi};
	ck_assert_int_eq(faults_attach(w->child, &o, &w->f, err, sizeof(err)), 0);
}

/* Let the child write, and reap it. */
static void attached_run(struct attached *w)
{
	int status;

	ck_assert_int_eq(write(w->go[1], "g", 1), 1);
	ck_assert_int_eq(waitpid(w->child, &status, 0), w->child);
	ck_assert_int_eq(WEXITSTATUS(status), 0);
}

static void attached_done(struct attached *w)
{
	faults_close(w->f);
	close(w->go[0]);
	close(w->go[1]);
	munmap(w->p, w->n * PAGE);
}

START_TEST(test_attach)
{
	struct faults_stats st;
	struct attached w;
	char err[256];
	faults_t *f;

	if (!sampling_allowed())
		return;
	attach_writer(&w, 32, 0);
	attached_run(&w);
	ck_assert_int_ge(faults_wait(w.f, 1000), 1);
	faults_drain(w.f, tally, &w.t);
	ck_assert_int_eq(w.t.n, 32); /* only the range's faults, each once */
	ck_assert_int_eq(w.t.in_range, 32);
	ck_assert_int_eq(w.t.tid, w.child);
	ck_assert_int_eq(faults_rescan(w.f, tally, &w.t, err, sizeof(err)), -ESRCH);
	faults_get_stats(w.f, &st);
	ck_assert_uint_eq(st.attached, 1);
	ck_assert_uint_eq(st.lost, 0);
	ck_assert_uint_eq(faults_live(w.f), 0);
	attached_done(&w);
	ck_assert_int_eq(faults_attach(0x7ffffff0, NULL, &f, err, sizeof(err)), -ESRCH);
}
END_TEST

/*
 * A thread that fills its ring and exits before the next drain: the
 * kernel never writes the loss record (it waits for a sample that fits),
 * yet the drops must show in lost (the event's count minus the records).
 */
START_TEST(test_attach_lost_at_exit)
{
	enum { N = 512 }; /* a 1-page ring holds ~100 samples */
	struct faults_stats st;
	struct attached w;
	char err[256];

	if (!sampling_allowed())
		return;
	attach_writer(&w, N, 1);
	attached_run(&w);
	faults_drain(w.f, tally, &w.t);
	ck_assert_int_eq(faults_rescan(w.f, tally, &w.t, err, sizeof(err)), -ESRCH);
	faults_get_stats(w.f, &st);
	ck_assert_int_lt(w.t.n, N); /* the ring could not hold them all */
	ck_assert_uint_eq(st.kept, (uint64_t)w.t.n);
	ck_assert_uint_eq(st.lost_records, 0); /* none came after the ring filled */
	/* Every fault in the range is a sample or a drop (the child's other
	 * faults, out of the range, may be either too). */
	ck_assert_uint_ge(st.kept + st.lost, N);
	attached_done(&w);
}
END_TEST
#endif

Suite *topology_suite(void)
{
	Suite *s = suite_create("topology");
	TCase *parse = tcase_create("parse"), *sys = tcase_create("sys");

	tcase_add_test(parse, test_cpulist);
	tcase_add_test(parse, test_stat);
	tcase_add_test(parse, test_stat_hostile);
	tcase_add_test(sys, test_load);
	tcase_add_test(sys, test_node_range);
#ifndef UNDER_TSAN
	tcase_add_test(sys, test_threads);
#endif
	suite_add_tcase(s, parse);
	suite_add_tcase(s, sys);
	return s;
}

Suite *placement_suite(void)
{
	Suite *s = suite_create("placement");
	TCase *parse = tcase_create("parse"), *sys = tcase_create("sys");

	tcase_add_test(parse, test_smaps);
	tcase_add_test(sys, test_self);
	tcase_add_test(sys, test_huge);
	tcase_add_test(sys, test_placement_errors);
	suite_add_tcase(s, parse);
	suite_add_tcase(s, sys);
	return s;
}

Suite *faults_suite(void)
{
	Suite *s = suite_create("faults");
	TCase *sys = tcase_create("sys");

	tcase_set_timeout(sys, 30);
	tcase_add_test(sys, test_launch);
	tcase_add_test(sys, test_launch_errors);
#ifndef UNDER_TSAN
	tcase_add_test(sys, test_attach);
	tcase_add_test(sys, test_attach_lost_at_exit);
#endif
	suite_add_tcase(s, sys);
	return s;
}
