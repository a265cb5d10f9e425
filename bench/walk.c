/*
 * walk.c - the growth trace's stack walk, three ways (issue 11).
 *
 * A growth record carries its call site's return addresses. This measures,
 * for each way of walking the stack, what one walk costs (the first, which
 * warms the unwinder's caches, and a warm one), how many of the frames it
 * recovers on a stack that goes through code built without frame pointers
 * (this file is built with -fomit-frame-pointer, and the walk starts inside
 * a qsort() comparator, under Debian's libc), and whether it opened a file
 * descriptor or called malloc:
 *
 *   libgcc     _Unwind_Backtrace over .eh_frame (what libscratch uses; here
 *              libgcc_s's copy, taken with dlsym so that libunwind's
 *              function of the same name cannot stand in for it);
 *   libunwind  unw_init_local/unw_step (what libscratch used before);
 *   fp         a frame-pointer chain, bounded by the thread's stack.
 *
 * Prints one table; bench/run.sh runs it as part of `make bench`.
 */
#define _GNU_SOURCE
#include "config.h"

#include <dirent.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unwind.h>
#ifdef HAVE_LIBUNWIND
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#endif

#include "bench.h"

#define MAX_FRAMES 16
#define WARM_WALKS 20000

typedef unsigned (*walker_fn)(uint64_t *frames, unsigned max);

/* malloc calls made while a walk runs, counted by the wrappers below. */
static int counting;
static unsigned long mallocs;

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);

void *malloc(size_t n)
{
	mallocs += counting;
	return __libc_malloc(n);
}

void *calloc(size_t n, size_t m)
{
	mallocs += counting;
	return __libc_calloc(n, m);
}

void *realloc(void *p, size_t n)
{
	mallocs += counting;
	return __libc_realloc(p, n);
}

static _Unwind_Reason_Code (*gcc_backtrace)(_Unwind_Trace_Fn, void *);
static _Unwind_Ptr (*gcc_get_ip)(struct _Unwind_Context *);

struct gcc_walk {
	uint64_t *frames;
	unsigned n, max;
	int skip;
};

static _Unwind_Reason_Code gcc_frame(struct _Unwind_Context *ctx, void *arg)
{
	struct gcc_walk *w = arg;
	uintptr_t ip = gcc_get_ip(ctx);

	if (ip == 0)
		return _URC_END_OF_STACK;
	if (w->skip) {
		w->skip = 0;
		return _URC_NO_REASON;
	}
	w->frames[w->n++] = ip;
	return w->n < w->max ? _URC_NO_REASON : _URC_END_OF_STACK;
}

__attribute__((noinline)) static unsigned walk_libgcc(uint64_t *frames, unsigned max)
{
	struct gcc_walk w = {frames, 0, max, 1};

	gcc_backtrace(gcc_frame, &w);
	return w.n;
}

#ifdef HAVE_LIBUNWIND
__attribute__((noinline)) static unsigned walk_libunwind(uint64_t *frames, unsigned max)
{
	unw_context_t uc;
	unw_cursor_t cur;
	unsigned n = 0;

	if (unw_getcontext(&uc) != 0 || unw_init_local(&cur, &uc) != 0)
		return 0;
	while (n < max && unw_step(&cur) > 0) {
		unw_word_t ip;

		if (unw_get_reg(&cur, UNW_REG_IP, &ip) != 0 || ip == 0)
			break;
		frames[n++] = ip;
	}
	return n;
}
#endif

/* The stack's bounds, from /proc/self/maps' [stack] line: read once, before
 * any walk is measured (pthread_getattr_np would read the same file and
 * call malloc inside the walk). */
static uintptr_t stack_lo, stack_hi;

static void find_stack(void)
{
	char line[256];
	FILE *f = fopen("/proc/self/maps", "r");

	while (f != NULL && fgets(line, sizeof(line), f) != NULL)
		if (strstr(line, "[stack]") != NULL)
			sscanf(line, "%lx-%lx", &stack_lo, &stack_hi);
	if (f != NULL)
		fclose(f);
}

__attribute__((noinline)) static unsigned walk_fp(uint64_t *frames, unsigned max)
{
	uintptr_t *fp = __builtin_frame_address(0);
	unsigned n = 0;

	while (n < max && (uintptr_t)fp >= stack_lo && (uintptr_t)fp + 16 <= stack_hi &&
	       ((uintptr_t)fp & 7) == 0 && fp[1] != 0) {
		uintptr_t *next = (uintptr_t *)fp[0];

		frames[n++] = fp[1];
		if (next <= fp)
			break;
		fp = next;
	}
	return n;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	while (d != NULL && (e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	if (d != NULL)
		closedir(d);
	return n - 1; /* the directory's own */
}

/* The walk under test starts inside a qsort() comparator, so the stack is
 * comparator <- libc's qsort <- the chain below <- main. */
static walker_fn cur_walker;
static uint64_t got[MAX_FRAMES];
static unsigned ngot;
static int walked;

static int compare(const void *a, const void *b)
{
	if (!walked) {
		walked = 1;
		ngot = cur_walker(got, MAX_FRAMES);
	}
	return *(const int *)a - *(const int *)b;
}

__attribute__((noinline)) static void walk_depth3(void)
{
	int v[4] = {3, 1, 2, 0};

	qsort(v, 4, sizeof(v[0]), compare);
	__asm__ volatile("");
}

__attribute__((noinline)) static void walk_depth2(void)
{
	walk_depth3();
	__asm__ volatile("");
}

__attribute__((noinline)) static void walk_depth1(void)
{
	walk_depth2();
	__asm__ volatile("");
}

/* Frames recovered up to and including main: the ones a call site needs. */
static int reached_main(void)
{
	for (unsigned i = 0; i < ngot; i++) {
		Dl_info d;

		if (dladdr((void *)(uintptr_t)(got[i] - 1), &d) != 0 && d.dli_sname != NULL &&
		    strcmp(d.dli_sname, "main") == 0)
			return (int)i + 1;
	}
	return 0;
}

static void measure(const char *name, walker_fn w)
{
	double t0, first, warm;
	int fds = count_fds();
	unsigned long m;
	int depth;

	cur_walker = w;
	walked = 0;
	mallocs = 0;
	counting = 1;
	t0 = (double)bench_now_ns();
	walk_depth1();
	first = (double)bench_now_ns() - t0;
	counting = 0;
	m = mallocs;
	depth = reached_main();
	fds = count_fds() - fds;
	t0 = (double)bench_now_ns();
	for (int i = 0; i < WARM_WALKS; i++) {
		walked = 0;
		walk_depth1();
	}
	warm = ((double)bench_now_ns() - t0) / WARM_WALKS;
	printf("  %-10s %9.1f %9.0f   %6u   %-12s %5d %7lu\n", name, first / 1e3, warm, ngot,
	       depth ? "yes" : "no", fds, m);
}

int main(void)
{
	void *gcc = dlopen("libgcc_s.so.1", RTLD_NOW);

	find_stack();
	if (gcc != NULL) {
		*(void **)&gcc_backtrace = dlsym(gcc, "_Unwind_Backtrace");
		*(void **)&gcc_get_ip = dlsym(gcc, "_Unwind_GetIP");
	}
	printf("Growth-trace stack walk from a qsort() comparator (frames of Debian's libc and of\n"
	       "code built with -fomit-frame-pointer); a call site needs the frames up to main:\n");
	printf("  %-10s %9s %9s   %6s   %-12s %5s %7s\n", "walker", "first us", "warm ns", "frames",
	       "reaches main", "+fds", "mallocs");
	if (gcc_backtrace != NULL && gcc_get_ip != NULL)
		measure("libgcc", walk_libgcc);
	else
		printf("  %-10s (libgcc_s.so.1 not found)\n", "libgcc");
#ifdef HAVE_LIBUNWIND
	measure("libunwind", walk_libunwind);
#else
	printf("  %-10s (not built: libunwind-dev missing)\n", "libunwind");
#endif
	measure("fp", walk_fp);
	return 0;
}
