/*
 * placement.c - the node of each page of a range of another process, from
 * move_pages(2) with nodes=NULL, merged into runs (placement.h).
 *
 * The range is walked in units: a unit is one page, or, inside a mapping
 * that smaps shows to be entirely huge-page backed, the rest of one huge
 * page. One address per unit goes to the kernel, PLACEMENT_BATCH at a time;
 * each answer extends the last run when it is on the same node and
 * adjacent. The smaps read and move_pages are not atomic: a huge page split
 * in between is reported whole, as it was a moment before.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "placement.h"
#include "sys.h"
#include "text.h"

#define MAX_SPANS 1024

struct span {
	uintptr_t start, end;
	size_t stride;
};

struct spans {
	struct span s[MAX_SPANS];
	size_t n;
};

/* One move_pages batch: the address queried and the bytes it stands for. */
struct batch {
	void *addr[PLACEMENT_BATCH];
	size_t bytes[PLACEMENT_BATCH];
	int status[PLACEMENT_BATCH];
	size_t n;
};

/* The value in kB of a "Key:   N kB" line, or -1 when the line is another key. */
static long long smaps_kb(const char *line, const char *key)
{
	size_t n = strlen(key);

	if (strncmp(line, key, n) != 0 || line[n] != ':')
		return -1;
	return strtoll(line + n + 1, NULL, 10);
}

struct vma {
	uintptr_t start, end;
	long long rss, anon_huge, kernel_page;
	int valid;
};

/* Report v if it overlaps [lo, hi) and is entirely huge-backed. */
static int vma_done(const struct vma *v, uintptr_t lo, uintptr_t hi,
                    void (*fn)(uintptr_t, uintptr_t, size_t, void *), void *arg)
{
	size_t stride = 0;

	if (!v->valid || v->end <= lo || v->start >= hi)
		return 0;
	if (v->kernel_page > 4)
		stride = (size_t)v->kernel_page << 10; /* hugetlb */
	else if (v->anon_huge > 0 && v->anon_huge == v->rss)
		stride = 2UL << 20;
	if (stride == 0)
		return 0;
	fn(v->start > lo ? v->start : lo, v->end < hi ? v->end : hi, stride, arg);
	return 1;
}

int placement_parse_smaps(const char *text, uintptr_t lo, uintptr_t hi,
                          void (*fn)(uintptr_t start, uintptr_t end, size_t page_bytes, void *arg),
                          void *arg)
{
	struct vma v = {0};
	int found = 0;

	for (const char *line = text; *line != '\0';) {
		const char *nl = strchr(line, '\n');
		unsigned long long a, b;
		char *end;
		long long kb;

		a = strtoull(line, &end, 16);
		if (end != line && *end == '-') {
			b = strtoull(end + 1, &end, 16);
			if (*end != ' ' || b < a)
				return -EINVAL;
			found += vma_done(&v, lo, hi, fn, arg);
			v = (struct vma){.start = a, .end = b, .valid = 1};
		} else if (!v.valid) {
			return -EINVAL; /* a key before any mapping */
		} else if ((kb = smaps_kb(line, "Rss")) >= 0) {
			v.rss = kb;
		} else if ((kb = smaps_kb(line, "AnonHugePages")) >= 0) {
			v.anon_huge = kb;
		} else if ((kb = smaps_kb(line, "KernelPageSize")) >= 0) {
			v.kernel_page = kb;
		}
		line = nl != NULL ? nl + 1 : line + strlen(line);
	}
	return found + vma_done(&v, lo, hi, fn, arg);
}

static void add_span(uintptr_t start, uintptr_t end, size_t stride, void *arg)
{
	struct spans *s = arg;

	if (s->n < MAX_SPANS)
		s->s[s->n++] = (struct span){start, end, stride};
}

/* The huge spans of pid within [lo, hi); none when smaps cannot be read. */
static void read_spans(pid_t pid, uintptr_t lo, uintptr_t hi, struct spans *s)
{
	char path[64], *text;

	s->n = 0;
	if (pid == 0)
		snprintf(path, sizeof(path), "/proc/self/smaps");
	else
		snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
	text = sys_read_file(path, 256u << 20, NULL);
	if (text == NULL)
		return;
	if (placement_parse_smaps(text, lo, hi, add_span, s) < 0)
		s->n = 0;
	free(text);
}

/* Append bytes at start on node to p's runs, merging with the last run. */
static int push_run(struct placement *p, size_t *cap, uintptr_t start, size_t bytes, int node)
{
	struct placement_run *last = p->nruns ? &p->runs[p->nruns - 1] : NULL;

	if (last != NULL && last->node == node && last->start + last->length == start) {
		last->length += bytes;
		return 0;
	}
	if (p->nruns == *cap) {
		size_t nc = *cap ? *cap * 2 : 64;
		struct placement_run *nr = realloc(p->runs, nc * sizeof(*nr));

		if (nr == NULL)
			return -ENOMEM;
		p->runs = nr;
		*cap = nc;
	}
	p->runs[p->nruns++] = (struct placement_run){start, bytes, node};
	return 0;
}

static int status_node(int status)
{
	if (status >= 0)
		return status;
	if (status == -ENOENT || status == -EFAULT)
		return PLACEMENT_ABSENT;
	return PLACEMENT_UNKNOWN;
}

/* Ask the kernel about one batch and append its answers as runs. */
static int flush(pid_t pid, struct batch *b, struct placement *p, size_t *cap, char *err,
                 size_t errlen)
{
	long r;

	if (b->n == 0)
		return 0;
	r = syscall(SYS_move_pages, pid, b->n, b->addr, NULL, b->status, 0);
	if (r < 0) {
		int e = errno;

		if (e == ESRCH)
			return text_fail(err, errlen, e, "process %d: no such process (gone)",
			                 (int)pid);
		if (e == EPERM || e == EACCES)
			return text_fail(err, errlen, EPERM,
			                 "process %d: not allowed to read its page placement "
			                 "(another user's process: needs its uid or CAP_SYS_NICE)",
			                 (int)pid);
		return text_fail(err, errlen, e, "move_pages: %s", strerror(e));
	}
	p->queries += b->n;
	for (size_t i = 0; i < b->n; i++)
		if (push_run(p, cap, (uintptr_t)b->addr[i], b->bytes[i],
		             status_node(b->status[i])) != 0)
			return text_fail(err, errlen, ENOMEM, "out of memory");
	b->n = 0;
	return 0;
}

/* The bytes the unit at a stands for: one page, or the rest of a huge page. */
static size_t unit_bytes(const struct spans *s, size_t *si, uintptr_t a, uintptr_t hi, size_t page,
                         struct placement *p)
{
	while (*si < s->n && s->s[*si].end <= a)
		(*si)++;
	if (*si < s->n && s->s[*si].start <= a) {
		const struct span *sp = &s->s[*si];
		uintptr_t next = (a & ~(uintptr_t)(sp->stride - 1)) + sp->stride;

		if (next > sp->end)
			next = sp->end;
		if (next > hi)
			next = hi;
		p->huge_strides++;
		return next - a;
	}
	return page;
}

int placement_read(pid_t pid, uintptr_t addr, size_t len, unsigned flags, struct placement *ret,
                   char *err, size_t errlen)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), cap = 0, si = 0;
	struct placement p = {.page_size = page};
	uintptr_t lo = addr & ~(uintptr_t)(page - 1), hi;
	struct spans *spans = NULL;
	struct batch *b;
	int r = 0;

	if (len == 0 || addr + len < addr || addr + len + page - 1 < addr + len)
		return text_fail(err, errlen, EINVAL, "empty or wrapping range");
	hi = (addr + len + page - 1) & ~(uintptr_t)(page - 1);
	b = malloc(sizeof(*b));
	if (b == NULL || (spans = calloc(1, sizeof(*spans))) == NULL) {
		free(b);
		return text_fail(err, errlen, ENOMEM, "out of memory");
	}
	b->n = 0;
	if (flags & PLACEMENT_HUGE)
		read_spans(pid, lo, hi, spans);
	for (uintptr_t a = lo; r == 0 && a < hi;) {
		size_t bytes = unit_bytes(spans, &si, a, hi, page, &p);

		b->addr[b->n] = (void *)a;
		b->bytes[b->n++] = bytes;
		a += bytes;
		if (b->n == PLACEMENT_BATCH || a >= hi)
			r = flush(pid, b, &p, &cap, err, errlen);
	}
	free(b);
	free(spans);
	if (r != 0) {
		free(p.runs);
		return r;
	}
	*ret = p;
	return 0;
}

void placement_free(struct placement *p)
{
	free(p->runs);
	p->runs = NULL;
	p->nruns = 0;
}

size_t placement_bytes(const struct placement *p, int node, uintptr_t from, uintptr_t to)
{
	size_t sum = 0;

	for (size_t i = 0; i < p->nruns; i++) {
		const struct placement_run *r = &p->runs[i];
		uintptr_t a = r->start > from ? r->start : from;
		uintptr_t e = r->start + r->length < to ? r->start + r->length : to;

		if (r->node == node && a < e)
			sum += e - a;
	}
	return sum;
}
