/*
 * touch.c - the first-toucher store as runs (touch.h): a queue of
 * samples, flushed batch by batch into a sorted array of disjoint runs,
 * and a sorted set of the pages that had a major fault.
 *
 * A flush sorts the batch by page then time, keeps each page's earliest
 * sample, cuts the batch into runs (adjacent pages, same thread and CPU),
 * drops what existing runs already cover, and merges: appended when the
 * new runs all lie above the last one (a thread walking up a buffer), a
 * linear merge into a new array otherwise.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "touch.h"

#define PAGE_OF(a) ((a) & ~(uint64_t)(TOUCH_PAGE - 1))

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
	size_t nc = *cap ? *cap : 64;
	void *n;

	if (need <= *cap)
		return 0;
	while (nc < need)
		nc *= 2;
	n = realloc(*p, nc * size);
	if (n == NULL)
		return -ENOMEM;
	*p = n;
	*cap = nc;
	return 0;
}

int touch_add(struct touch_map *m, uint64_t addr, pid_t tid, int cpu, uint64_t time_ns, bool major)
{
	if (major) {
		if (grow((void **)&m->pend_major, &m->cappend_major, m->npend_major + 1,
		         sizeof(uint64_t)) != 0) {
			m->dropped++;
			return -ENOMEM;
		}
		m->pend_major[m->npend_major++] = PAGE_OF(addr);
		return 0;
	}
	if (grow((void **)&m->pend, &m->cappend, m->npend + 1, sizeof(*m->pend)) != 0) {
		m->dropped++;
		return -ENOMEM;
	}
	m->pend[m->npend++] = (struct touch_pending){PAGE_OF(addr), time_ns, tid, cpu};
	return 0;
}

static int by_page_time(const void *x, const void *y)
{
	const struct touch_pending *a = x, *b = y;

	if (a->page != b->page)
		return a->page < b->page ? -1 : 1;
	return (a->time_ns > b->time_ns) - (a->time_ns < b->time_ns);
}

static int by_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return (a > b) - (a < b);
}

/* The index of who (tid, cpu), added when new; -1 without memory. */
static long who_index(struct touch_map *m, pid_t tid, int32_t cpu)
{
	/* threads are few; the last one asked is the likeliest */
	for (size_t i = m->nwho; i-- > 0;)
		if (m->who[i].tid == tid && m->who[i].cpu == cpu)
			return (long)i;
	if (grow((void **)&m->who, &m->capwho, m->nwho + 1, sizeof(*m->who)) != 0)
		return -1;
	m->who[m->nwho] = (struct touch_who){tid, cpu};
	return (long)m->nwho++;
}

/* The first run ending above page (lower bound), m->n when none. */
static size_t first_after(const struct touch_map *m, uint64_t page)
{
	size_t lo = 0, hi = m->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->r[mid].page + (uint64_t)m->r[mid].pages * TOUCH_PAGE <= page)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const struct touch_run *touch_lookup(const struct touch_map *m, uint64_t addr)
{
	uint64_t page = PAGE_OF(addr);
	size_t i = first_after(m, page);

	return i < m->n && m->r[i].page <= page ? &m->r[i] : NULL;
}

const struct touch_run *touch_lookup_window(const struct touch_map *m, uint64_t addr,
                                            uint64_t window)
{
	const struct touch_run *own = touch_lookup(m, addr), *first = NULL;
	uint64_t lo, hi;

	if (own != NULL || window <= TOUCH_PAGE)
		return own;
	lo = addr & ~(window - 1);
	hi = lo + window;
	for (size_t i = first_after(m, lo); i < m->n && m->r[i].page < hi; i++) {
		if (first == NULL)
			first = &m->r[i];
		else if (m->who[m->r[i].who].tid != m->who[first->who].tid)
			return NULL;
	}
	return first;
}

bool touch_major(const struct touch_map *m, uint64_t addr)
{
	uint64_t page = PAGE_OF(addr);

	return bsearch(&page, m->major, m->nmajor, sizeof(uint64_t), by_u64) != NULL;
}

uint64_t touch_major_next(const struct touch_map *m, uint64_t addr, uint64_t hi)
{
	size_t lo = 0, top = m->nmajor;

	while (lo < top) {
		size_t mid = lo + (top - lo) / 2;

		if (m->major[mid] < addr)
			lo = mid + 1;
		else
			top = mid;
	}
	return lo < m->nmajor && m->major[lo] < hi ? m->major[lo] : 0;
}

size_t touch_index(const struct touch_map *m, uint64_t addr)
{
	return first_after(m, PAGE_OF(addr));
}

/* Merge the sorted, unique pending majors into m->major. */
static int flush_major(struct touch_map *m)
{
	uint64_t *out;
	size_t n = 0, i = 0, j = 0, k = 0;

	if (m->npend_major == 0)
		return 0;
	qsort(m->pend_major, m->npend_major, sizeof(uint64_t), by_u64);
	for (size_t x = 0; x < m->npend_major; x++)
		if (n == 0 || m->pend_major[n - 1] != m->pend_major[x])
			m->pend_major[n++] = m->pend_major[x];
	out = malloc((m->nmajor + n) * sizeof(uint64_t));
	if (out == NULL) {
		m->dropped += m->npend_major;
		m->npend_major = 0;
		return -ENOMEM;
	}
	while (i < m->nmajor || j < n) {
		uint64_t v;

		if (j >= n || (i < m->nmajor && m->major[i] <= m->pend_major[j]))
			v = m->major[i++];
		else
			v = m->pend_major[j++];
		if (k == 0 || out[k - 1] != v)
			out[k++] = v;
	}
	free(m->major);
	m->major = out;
	m->nmajor = m->capmajor = k;
	m->npend_major = 0;
	return 0;
}

/* Append run to the array *v (n, cap), merging it into the last one when
 * it continues it. */
static int push(struct touch_run **v, size_t *n, size_t *cap, const struct touch_run *run)
{
	struct touch_run *last = *n > 0 ? &(*v)[*n - 1] : NULL;

	if (last != NULL && last->who == run->who && last->gen == run->gen &&
	    last->page + (uint64_t)last->pages * TOUCH_PAGE == run->page &&
	    (uint64_t)last->pages + run->pages <= UINT32_MAX) {
		last->pages += run->pages;
		return 0;
	}
	if (grow((void **)v, cap, *n + 1, sizeof(**v)) != 0)
		return -ENOMEM;
	(*v)[(*n)++] = *run;
	return 0;
}

/* The batch's runs, each page once (its earliest sample), the pages that
 * existing runs cover left out. */
static int batch_runs(struct touch_map *m, struct touch_run **out, size_t *nout)
{
	size_t cap = 0;

	*out = NULL;
	*nout = 0;
	qsort(m->pend, m->npend, sizeof(*m->pend), by_page_time);
	for (size_t i = 0; i < m->npend; i++) {
		const struct touch_pending *p = &m->pend[i];
		struct touch_run run;
		long w;

		if (i > 0 && m->pend[i - 1].page == p->page)
			continue; /* a later sample of the same page */
		if (touch_lookup(m, p->page) != NULL)
			continue; /* an earlier batch saw it first */
		w = who_index(m, p->tid, p->cpu);
		if (w < 0)
			return -ENOMEM;
		run = (struct touch_run){p->page, 1, (uint32_t)w, m->gen};
		if (push(out, nout, &cap, &run) != 0)
			return -ENOMEM;
	}
	return 0;
}

/* Merge the sorted new runs (disjoint from m's) into m. */
static int merge(struct touch_map *m, struct touch_run *nr, size_t nn)
{
	struct touch_run *out = NULL;
	size_t n = 0, cap = 0, i = 0, j = 0;

	if (nn == 0)
		return 0;
	if (m->n == 0 || nr[0].page >= m->r[m->n - 1].page) {
		/* above the last run: append in place */
		for (size_t k = 0; k < nn; k++)
			if (push(&m->r, &m->n, &m->cap, &nr[k]) != 0)
				return -ENOMEM;
		return 0;
	}
	if (grow((void **)&out, &cap, m->n + nn, sizeof(*out)) != 0)
		return -ENOMEM;
	while (i < m->n || j < nn) {
		const struct touch_run *r =
		        j >= nn || (i < m->n && m->r[i].page < nr[j].page) ? &m->r[i++] : &nr[j++];

		if (push(&out, &n, &cap, r) != 0) {
			free(out);
			return -ENOMEM;
		}
	}
	free(m->r);
	m->r = out;
	m->n = n;
	m->cap = cap;
	return 0;
}

int touch_flush(struct touch_map *m)
{
	struct touch_run *nr = NULL;
	size_t nn = 0;
	int rc, rm;

	rm = flush_major(m);
	rc = batch_runs(m, &nr, &nn);
	if (rc == 0)
		rc = merge(m, nr, nn);
	if (rc != 0)
		m->dropped += m->npend;
	free(nr);
	m->npend = 0;
	m->gen++;
	return rc != 0 ? rc : rm;
}

void touch_forget(struct touch_map *m, uint64_t lo, uint64_t hi)
{
	size_t k = 0;

	lo = PAGE_OF(lo);
	for (size_t i = 0; i < m->n; i++) {
		struct touch_run r = m->r[i];
		uint64_t end = r.page + (uint64_t)r.pages * TOUCH_PAGE;

		if (end <= lo || r.page >= hi) {
			m->r[k++] = r;
			continue;
		}
		if (r.page < lo) {
			/* the part below lo stays; a part above hi needs a slot */
			struct touch_run below = r;

			below.pages = (uint32_t)((lo - r.page) / TOUCH_PAGE);
			m->r[k++] = below;
		}
		if (end > hi) {
			struct touch_run above = r;

			above.page = (hi + TOUCH_PAGE - 1) & ~(uint64_t)(TOUCH_PAGE - 1);
			above.pages = (uint32_t)((end - above.page) / TOUCH_PAGE);
			if (above.pages == 0)
				continue;
			if (k <= i) {
				m->r[k++] = above;
			} else if (grow((void **)&m->r, &m->cap, m->n + 1, sizeof(*m->r)) == 0) {
				/* one run split in two: shift the rest up by one */
				memmove(&m->r[i + 2], &m->r[i + 1], (m->n - i - 1) * sizeof(*m->r));
				m->r[i + 1] = above;
				m->n++;
				m->r[k++] = above;
				i++;
			}
		}
	}
	m->n = k;
	/* majors in the range go too */
	k = 0;
	for (size_t i = 0; i < m->nmajor; i++)
		if (m->major[i] < lo || m->major[i] >= hi)
			m->major[k++] = m->major[i];
	m->nmajor = k;
}

size_t touch_memory(const struct touch_map *m)
{
	return m->cap * sizeof(*m->r) + m->capwho * sizeof(*m->who) +
	       m->capmajor * sizeof(uint64_t) + m->cappend * sizeof(*m->pend) +
	       m->cappend_major * sizeof(uint64_t);
}

void touch_free(struct touch_map *m)
{
	free(m->r);
	free(m->who);
	free(m->major);
	free(m->pend);
	free(m->pend_major);
	memset(m, 0, sizeof(*m));
}
