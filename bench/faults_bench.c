/*
 * faults_bench.c - what first-toucher sampling costs per page fault (issue 14).
 *
 * A program faults N fresh 4 KiB pages (an anonymous mapping with
 * MADV_NOHUGEPAGE, one byte written per page) and times it:
 *   off      no sampling;
 *   attach   one software page-fault event on the thread (stats/audit/faults.c
 *            attach mode), its ring drained in-band every 1024 pages, so
 *            the drain is part of the cost;
 *   launch   the same program re-executed under faults_launch (one
 *            inherited event per CPU, enabled at exec), with this process
 *            draining the rings while the child faults, as an audit does.
 * Prints ns per fault, faults per second, the overhead over off in ns per
 * fault, and the samples seen and lost (in the last round). The median of
 * ROUNDS rounds, the modes interleaved (the machine is shared). Where
 * sampling is refused, the row says why.
 *
 *   bench/faults [PAGES [ROUNDS]]        (defaults 32768 and 7)
 *   bench/faults --child PAGES FILE      (the launched child: writes ns to FILE)
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#include "faults.h"

#define PAGE  4096UL
#define DRAIN 1024

/* Fault pages fresh pages; with f, drain its rings every DRAIN pages. */
static uint64_t touch(size_t pages, faults_t *f)
{
	char *p = mmap(NULL, pages * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
	               0);
	uint64_t t0, t1;

	if (p == MAP_FAILED) {
		perror("bench/faults: mmap");
		exit(1);
	}
	madvise(p, pages * PAGE, MADV_NOHUGEPAGE);
	t0 = bench_now_ns();
	for (size_t i = 0; i < pages; i++) {
		p[i * PAGE] = 1;
		if (f != NULL && (i + 1) % DRAIN == 0)
			faults_drain(f, NULL, NULL);
	}
	if (f != NULL)
		faults_drain(f, NULL, NULL);
	t1 = bench_now_ns();
	munmap(p, pages * PAGE);
	return t1 - t0;
}

static int child(size_t pages, const char *file)
{
	uint64_t ns = touch(pages, NULL);
	FILE *out = fopen(file, "w");

	if (out == NULL)
		return 1;
	fprintf(out, "%llu\n", (unsigned long long)ns);
	return fclose(out) != 0;
}

#define MAX_ROUNDS 64

/* One mode's rounds; samples and lost are from its last round. */
struct row {
	double ns[MAX_ROUNDS];
	size_t n;
	uint64_t samples, lost;
	char why[256];
};

static void add(struct row *r, uint64_t ns, const struct faults_stats *st)
{
	if (r->n < MAX_ROUNDS)
		r->ns[r->n++] = (double)ns;
	if (st != NULL) {
		r->samples = st->samples;
		r->lost = st->lost;
	}
}

/* The median round in ns per fault (the machine is shared: the mean is not). */
static double median(struct row *r, size_t pages)
{
	return bench_median(r->ns, r->n) / (double)pages;
}

static void run_attach(size_t pages, struct row *r)
{
	struct faults_opts o = {.ring_pages = 64};
	struct faults_stats st;
	faults_t *f;

	if (faults_attach(getpid(), &o, &f, r->why, sizeof(r->why)) != 0)
		return;
	uint64_t ns = touch(pages, f);

	faults_get_stats(f, &st);
	faults_close(f);
	add(r, ns, &st);
}

static void run_launch(size_t pages, const char *self, struct row *r)
{
	char file[] = "/tmp/bench-faults.XXXXXX", arg[32], opt[] = "--child", exe[64];
	struct faults_opts o = {.ring_pages = 256};
	struct faults_stats st;
	unsigned long long ns = 0;
	int fd = mkstemp(file), status;
	faults_t *f;
	pid_t pid;
	FILE *in;

	if (fd < 0)
		return;
	close(fd);
	snprintf(arg, sizeof(arg), "%zu", pages);
	snprintf(exe, sizeof(exe), "%s", self);
	char *argv[] = {exe, opt, arg, file, NULL};

	if (faults_launch(argv, &o, &f, &pid, r->why, sizeof(r->why)) != 0) {
		unlink(file);
		return;
	}
	while (waitpid(pid, &status, WNOHANG) == 0) {
		faults_drain(f, NULL, NULL);
		faults_wait(f, 10);
	}
	faults_drain(f, NULL, NULL);
	faults_get_stats(f, &st);
	faults_close(f);
	in = fopen(file, "r");
	if (in != NULL && fscanf(in, "%llu", &ns) == 1 && ns > 0)
		add(r, ns, &st);
	if (in != NULL)
		fclose(in);
	unlink(file);
}

static void print_row(const char *name, struct row *r, double off, size_t pages)
{
	double per;

	if (r->n == 0) {
		printf("%-28s refused: %s\n", name, r->why[0] ? r->why : "failed");
		return;
	}
	per = median(r, pages);
	printf("%-28s %10.0f %12.0f", name, per, 1e9 / per);
	if (off == 0)
		printf(" %14s %10s %8s\n", "-", "-", "-");
	else
		printf(" %14.0f %10llu %8llu\n", per - off, (unsigned long long)r->samples,
		       (unsigned long long)r->lost);
}

int main(int argc, char **argv)
{
	size_t pages = 32768, rounds = 7;
	struct row off = {0}, attach = {0}, launch = {0};

	if (argc == 4 && strcmp(argv[1], "--child") == 0)
		return child(strtoul(argv[2], NULL, 10), argv[3]);
	if (argc > 1)
		pages = strtoul(argv[1], NULL, 10);
	if (argc > 2)
		rounds = strtoul(argv[2], NULL, 10);
	if (pages == 0 || rounds == 0 || rounds > MAX_ROUNDS) {
		fprintf(stderr, "usage: bench/faults [PAGES [ROUNDS]]\n");
		return 2;
	}
	for (size_t i = 0; i < rounds; i++) {
		add(&off, touch(pages, NULL), NULL);
		run_attach(pages, &attach);
		run_launch(pages, "/proc/self/exe", &launch);
	}
	printf("page-fault sampling (issue 14): %zu fresh 4 KiB pages, median of %zu rounds\n",
	       pages, rounds);
	printf("%-28s %10s %12s %14s %10s %8s\n", "mode", "ns/fault", "faults/s", "overhead ns",
	       "samples", "lost");
	print_row("off", &off, 0, pages);
	print_row("attach (per thread, drained)", &attach, median(&off, pages), pages);
	print_row("launch (per CPU, inherit)", &launch, median(&off, pages), pages);
	return 0;
}
