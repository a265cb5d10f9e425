/*
 * audit_scale.c - what the whole-process audit costs on a large process
 * (issue 24, item 6; table 2b of `make bench`): a host holding a touched
 * file mapping (default 8 GiB) and anonymous memory (default 4 GiB),
 * audited in attach mode and in launch mode.
 *
 *   audit_scale --scratchstat PATH [--file-gib N] [--anon-gib N]
 *               [--dir DIR] [--window S]
 *
 * The file is made sparse in DIR (default /dev/shm: tmpfs, so that its
 * pages are memory and the host's reads place them, as a model read from
 * a cold cache); the host is this program again (--host), which maps it
 * and reads every page, writes every page of its anonymous memory, says
 * ready, and then walks its memory in a loop, counting 4 KiB pages read in
 * a shared counter.
 *
 * It measures:
 *  - attach: `scratchstat audit --json --for WINDOW PID` on the ready
 *    host: its wall time less the window (the audit's own work: the
 *    passes over numa_maps, pagemap and the probes, the join, the JSON),
 *    its CPU time and its peak RSS (the "self" object it prints);
 *  - the host while attached: pages walked per second of the host's own
 *    CPU time (/proc/PID/schedstat: the host has one thread) during the
 *    middle of the audit's window, against the mean of a window before
 *    and a window after (once the host's rate settled: two one-second
 *    windows within 5%); per CPU second, so that other load on a shared
 *    machine, which takes CPU from the host, does not count as the
 *    audit's (the audit's own CPU time is its own line); the same per
 *    wall second too;
 *  - launch: the host run to its end alone, then under `scratchstat audit
 *    --` (every fault sampled): the CPU time the audit adds (wait4's
 *    rusage: the host, and scratchstat with the host it reaped), the wall
 *    time, and the audit's peak RSS.
 * It prints one line, "audit_scale key=value ...", with the figures per
 * 8 GiB audited beside the raw ones (bench/report.py, table 2b).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#define GIB (1ull << 30)
#define PG  4096u

static volatile uint64_t *counter; /* shared with the host: pages walked */

/* ---- the host ---- */

static int host(const char *path, uint64_t anon_bytes, int exit_at_end)
{
	struct stat st;
	int fd = open(path, O_RDONLY);
	volatile char *file, *anon;
	uint64_t sum = 0;

	if (fd < 0 || fstat(fd, &st) != 0)
		return 2;
	file = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	anon = mmap(NULL, anon_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (file == MAP_FAILED || anon == MAP_FAILED)
		return 2;
	for (uint64_t i = 0; i < (uint64_t)st.st_size; i += PG)
		sum += file[i];
	for (uint64_t i = 0; i < anon_bytes; i += PG)
		anon[i] = 1;
	printf("ready\n");
	fflush(stdout);
	if (exit_at_end)
		return (int)(sum & 1);
	/* the steady loop: one byte a page, file then anonymous memory */
	for (;;) {
		for (uint64_t i = 0; i < (uint64_t)st.st_size; i += PG) {
			sum += file[i];
			if ((i & ((1u << 24) - 1)) == 0)
				__atomic_add_fetch(counter, 4096, __ATOMIC_RELAXED);
		}
		for (uint64_t i = 0; i < anon_bytes; i += PG) {
			sum += anon[i];
			if ((i & ((1u << 24) - 1)) == 0)
				__atomic_add_fetch(counter, 4096, __ATOMIC_RELAXED);
		}
		bench_keep((void *)(uintptr_t)sum);
	}
}

/* ---- the driver ---- */

struct run {
	double wall_s, cpu_s; /* cpu_s: of the child and those it reaped */
	long maxrss_kib;
	double self_cpu_s; /* scratchstat's own, from its "self" */
	int status;
};

static const char *file_path; /* unlinked on SIGINT and SIGTERM */

static void on_signal(int sig)
{
	if (file_path != NULL)
		unlink(file_path);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* The audit's own peak RSS in KiB, from the "self" object it prints
 * (getrusage of scratchstat alone: wait4's would count the launched host,
 * a child it waited for), -1 when not found. */
static long self_rss_kib(const char *json)
{
	const char *p = strstr(json, "\"peak_rss_bytes\":");

	return p != NULL ? (long)(strtoll(p + 17, NULL, 10) / 1024) : -1;
}

/* The audit's own CPU time from its "self" object, -1 when not found. */
static double self_cpu_s(const char *json)
{
	const char *p = strstr(json, "\"cpu_s\":");

	return p != NULL ? strtod(p + 8, NULL) : -1;
}

static double tv_s(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

/* Run argv to its end, its output into a buffer: wall time, and the
 * audit's own peak RSS when it is scratchstat. */
static struct run run_wait(char *const argv[])
{
	struct run r = {.maxrss_kib = -1};
	double t0 = bench_now_s();
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	int p[2];
	pid_t pid;

	if (f == NULL || pipe(p) != 0) {
		r.status = -1;
		return r;
	}
	pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	for (;;) {
		char buf[65536];
		ssize_t n = read(p[0], buf, sizeof(buf));

		if (n <= 0)
			break;
		fwrite(buf, 1, (size_t)n, f);
	}
	close(p[0]);
	fclose(f);
	{
		struct rusage ru;

		if (pid < 0 || wait4(pid, &r.status, 0, &ru) < 0)
			r.status = -1;
		else
			r.cpu_s = tv_s(ru.ru_utime) + tv_s(ru.ru_stime);
	}
	r.wall_s = bench_now_s() - t0;
	if (out != NULL) {
		r.maxrss_kib = self_rss_kib(out);
		r.self_cpu_s = self_cpu_s(out);
	}
	free(out);
	return r;
}

/* Start the host in the background; its pid once it said ready. */
static pid_t host_start(const char *self, const char *path, uint64_t anon_gib)
{
	char anon[32], line[64];
	int p[2];
	pid_t pid;
	FILE *f;

	snprintf(anon, sizeof(anon), "%llu", (unsigned long long)anon_gib);
	if (pipe(p) != 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		execl(self, self, "--host", path, anon, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	f = fdopen(p[0], "r");
	if (f == NULL || fgets(line, sizeof(line), f) == NULL || strncmp(line, "ready", 5) != 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -1;
	}
	fclose(f);
	return pid;
}

/* The host's CPU time so far in seconds (its one thread's, from
 * /proc/PID/schedstat, in ns), -1 when unreadable. */
static double host_cpu_s(pid_t hp)
{
	char path[64];
	unsigned long long ns;
	FILE *f;
	int n;

	snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)hp);
	f = fopen(path, "r");
	if (f == NULL)
		return -1;
	n = fscanf(f, "%llu", &ns);
	fclose(f);
	return n == 1 ? (double)ns / 1e9 : -1;
}

struct rate {
	double wall, cpu; /* pages walked per wall second, per host CPU second */
};

/* The pages the host walks over s seconds. */
static struct rate host_rate(pid_t hp, double s)
{
	uint64_t c0 = __atomic_load_n(counter, __ATOMIC_RELAXED);
	double t0 = bench_now_s(), u0 = host_cpu_s(hp), u1, pages;
	struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};

	nanosleep(&ts, NULL);
	pages = (double)(__atomic_load_n(counter, __ATOMIC_RELAXED) - c0);
	u1 = host_cpu_s(hp);
	return (struct rate){pages / (bench_now_s() - t0),
	                     u0 >= 0 && u1 > u0 ? pages / (u1 - u0) : 0};
}

/* The attach-mode audit in the background (its output into a file), the
 * host's rate meanwhile. */
static struct run attach(const char *ss, pid_t hp, unsigned window, struct rate *rate)
{
	char spid[16], win[16], *text;
	char *argv[] = {(char *)ss, (char *)"audit", (char *)"--json", (char *)"--for", win, spid,
	                NULL};
	struct run r = {.maxrss_kib = -1};
	double t0 = bench_now_s();
	FILE *out = tmpfile();
	long len;
	pid_t pid;

	if (out == NULL)
		return (struct run){.status = -1};
	snprintf(spid, sizeof(spid), "%d", (int)hp);
	snprintf(win, sizeof(win), "%u", window);
	pid = fork();
	if (pid == 0) {
		dup2(fileno(out), 1);
		execv(argv[0], argv);
		_exit(127);
	}
	if (pid < 0)
		return (struct run){.status = -1};
	/* the window less its first fifth (the attach and its first pass)
	 * and its last (the last pass, the join): the host while attached */
	host_rate(hp, (double)window * 0.2);
	*rate = host_rate(hp, (double)window * 0.6);
	if (waitpid(pid, &r.status, 0) < 0)
		r.status = -1;
	r.wall_s = bench_now_s() - t0;
	len = ftell(out) > 0 ? ftell(out) : lseek(fileno(out), 0, SEEK_END);
	text = len > 0 ? calloc(1, (size_t)len + 1) : NULL;
	if (text != NULL && pread(fileno(out), text, (size_t)len, 0) == len) {
		r.maxrss_kib = self_rss_kib(text);
		r.self_cpu_s = self_cpu_s(text);
	}
	free(text);
	fclose(out);
	return r;
}

int main(int argc, char **argv)
{
	const char *ss = NULL, *dir = "/dev/shm";
	unsigned file_gib = 8, anon_gib = 4, window = 4;
	char path[4096];
	struct run alone, launched, att;
	struct rate before, during = {0, 0}, after;
	double total_gib, slow_cpu, slow_wall;
	pid_t hp;
	int fd;

	if (argc == 4 && strcmp(argv[1], "--host") == 0) {
		const char *cfd = getenv("AUDIT_SCALE_COUNTER_FD");

		/* the driver's counter page, inherited across the exec */
		counter = mmap(NULL, PG, PROT_READ | PROT_WRITE,
		               cfd != NULL ? MAP_SHARED : MAP_PRIVATE | MAP_ANONYMOUS,
		               cfd != NULL ? atoi(cfd) : -1, 0);
		if (counter == MAP_FAILED)
			return 2;
		return host(argv[2], strtoull(argv[3], NULL, 10) * GIB,
		            getenv("AUDIT_SCALE_EXIT") != NULL);
	}
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--scratchstat") == 0 && i + 1 < argc)
			ss = argv[++i];
		else if (strcmp(argv[i], "--file-gib") == 0 && i + 1 < argc)
			file_gib = (unsigned)atoi(argv[++i]);
		else if (strcmp(argv[i], "--anon-gib") == 0 && i + 1 < argc)
			anon_gib = (unsigned)atoi(argv[++i]);
		else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
			dir = argv[++i];
		else if (strcmp(argv[i], "--window") == 0 && i + 1 < argc)
			window = (unsigned)atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: audit_scale --scratchstat PATH [--file-gib N] "
			                "[--anon-gib N] "
			                "[--dir DIR] [--window S]\n");
			return 2;
		}
	}
	if (ss == NULL || window < 2)
		return 2;
	snprintf(path, sizeof(path), "%s/audit_scale.XXXXXX", dir);
	fd = mkstemp(path);
	if (fd < 0 || ftruncate(fd, (off_t)file_gib * (off_t)GIB) != 0) {
		perror("audit_scale: the file");
		return 1;
	}
	close(fd);
	file_path = path;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	total_gib = file_gib + anon_gib;
	{
		int cfd = memfd_create("audit_scale", 0);
		char num[16];

		if (cfd < 0 || ftruncate(cfd, PG) != 0)
			return 1;
		counter = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, cfd, 0);
		if (counter == MAP_FAILED)
			return 1;
		snprintf(num, sizeof(num), "%d", cfd);
		setenv("AUDIT_SCALE_COUNTER_FD", num, 1);
	}

	/* attach mode, and the host's rate around it */
	hp = host_start(argv[0], path, anon_gib);
	if (hp < 0) {
		unlink(path);
		fprintf(stderr, "audit_scale: the host did not start\n");
		return 1;
	}
	/* warm up: on this kind of VM the host's first laps after its
	 * touches ran up to 15 times slower per CPU second than later ones
	 * (cause not established: the VM's backing of fresh memory is
	 * suspected), which read as a slowdown: walk until two
	 * one-second windows agree within 5%, at most 60 s */
	{
		struct rate w0 = host_rate(hp, 1), w1;

		for (int i = 0; i < 60; i++, w0 = w1) {
			w1 = host_rate(hp, 1);
			if (w0.cpu > 0 && w1.cpu > 0 && w1.cpu < w0.cpu * 1.05 &&
			    w0.cpu < w1.cpu * 1.05)
				break;
		}
	}
	before = host_rate(hp, window);
	att = attach(ss, hp, window, &during);
	after = host_rate(hp, window);
	kill(hp, SIGKILL);
	waitpid(hp, NULL, 0);

	/* launch mode: the host to its end, alone and under the audit; the
	 * file is made sparse again so both first-touch it */
	{
		char anon[32];
		char *host_argv[] = {argv[0], (char *)"--host", path, anon, NULL};
		char *audit_argv[] = {(char *)ss,
		                      (char *)"audit",
		                      (char *)"--json",
		                      (char *)"--",
		                      argv[0],
		                      (char *)"--host",
		                      path,
		                      anon,
		                      NULL};

		snprintf(anon, sizeof(anon), "%u", anon_gib);
		setenv("AUDIT_SCALE_EXIT", "1", 1);
		truncate(path, 0);
		truncate(path, (off_t)file_gib * (off_t)GIB);
		alone = run_wait(host_argv);
		truncate(path, 0);
		truncate(path, (off_t)file_gib * (off_t)GIB);
		launched = run_wait(audit_argv);
		unsetenv("AUDIT_SCALE_EXIT");
	}
	unlink(path);
	if (att.status != 0 || alone.status != 0 || launched.status != 0) {
		fprintf(stderr, "audit_scale: a run failed (attach %d, alone %d, launched %d)\n",
		        att.status, alone.status, launched.status);
		return 1;
	}
	slow_cpu = (1 - during.cpu / ((before.cpu + after.cpu) / 2)) * 100;
	slow_wall = (1 - during.wall / ((before.wall + after.wall) / 2)) * 100;
	printf("audit of a host holding %u GiB of touched file mapping and %u GiB of anonymous "
	       "memory: attach %.2f s beyond its %u s window (%.2f s of CPU), %.1f MiB peak; "
	       "launch adds %.2f s of CPU, %.1f MiB peak; host %.2f%% slower per CPU second "
	       "while attached (%.2f%% per wall second)\n",
	       file_gib, anon_gib, att.wall_s - window, window, att.self_cpu_s,
	       att.maxrss_kib / 1024.0, launched.cpu_s - alone.cpu_s, launched.maxrss_kib / 1024.0,
	       slow_cpu, slow_wall);
	printf("audit_scale file_gib=%u anon_gib=%u window_s=%u attach_s=%.3f attach_cpu_s=%.3f "
	       "attach_rss_mib=%.1f attach_s_per_8g=%.3f attach_cpu_s_per_8g=%.3f "
	       "attach_rss_mib_per_8g=%.1f launch_added_cpu_s=%.3f launch_added_s=%.3f "
	       "launch_self_cpu_s=%.3f launch_rss_mib=%.1f launch_rss_mib_per_8g=%.1f "
	       "host_alone_s=%.3f host_alone_cpu_s=%.3f rate_before=%.0f rate_during=%.0f "
	       "rate_after=%.0f cpu_rate_before=%.0f cpu_rate_during=%.0f cpu_rate_after=%.0f "
	       "host_slowdown_pct=%.2f host_slowdown_wall_pct=%.2f noise_pct=%.2f\n",
	       file_gib, anon_gib, window, att.wall_s - window, att.self_cpu_s,
	       att.maxrss_kib / 1024.0, (att.wall_s - window) * 8 / total_gib,
	       att.self_cpu_s * 8 / total_gib, att.maxrss_kib / 1024.0 * 8 / total_gib,
	       launched.cpu_s - alone.cpu_s, launched.wall_s - alone.wall_s, launched.self_cpu_s,
	       launched.maxrss_kib / 1024.0, launched.maxrss_kib / 1024.0 * 8 / total_gib,
	       alone.wall_s, alone.cpu_s, before.wall, during.wall, after.wall, before.cpu,
	       during.cpu, after.cpu, slow_cpu, slow_wall,
	       fabs(before.cpu - after.cpu) * 200 / (before.cpu + after.cpu));
	return 0;
}
