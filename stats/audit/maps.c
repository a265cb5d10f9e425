/*
 * maps.c - the whole-process inventory's parsers and categories (maps.h):
 * /proc/PID/maps lines into entries, numa_maps lines joined into them by
 * start address, the stack pointers of threads, and the rules that give
 * each mapping its category with the evidence for it.
 *
 * Everything here is text in, structs out: the text is untrusted (a
 * process may name a file anything, a hostile /proc may be mounted), so
 * every field is checked, the first bad line fails the whole parse, and
 * nothing is read past the NUL.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "maps.h"
#include "text.h"

const char *maps_category_name(enum maps_category c)
{
	static const char *const n[] = {"pool", "file", "anon", "heap", "stack", "shm", "other"};

	return (unsigned)c < MAPS_CATEGORIES ? n[c] : "unknown";
}

void maps_free(struct maps *m)
{
	if (m == NULL)
		return;
	free(m->e);
	free(m->node_pages);
	free(m->text);
	memset(m, 0, sizeof(*m));
}

/* ---------------------------------------------------------------------- */
/* /proc/PID/maps                                                          */
/* ---------------------------------------------------------------------- */

/* A hex number at *p, moved past; false when there is none or it overflows. */
static bool hex_at(char **p, uint64_t *ret)
{
	char *end;
	unsigned long long v;

	if (!((**p >= '0' && **p <= '9') || (**p >= 'a' && **p <= 'f') ||
	      (**p >= 'A' && **p <= 'F')))
		return false;
	errno = 0;
	v = strtoull(*p, &end, 16);
	if (errno != 0 || end == *p)
		return false;
	*p = end;
	*ret = v;
	return true;
}

static bool dec_at(char **p, uint64_t *ret)
{
	char *end;
	unsigned long long v;

	if (**p < '0' || **p > '9')
		return false;
	errno = 0;
	v = strtoull(*p, &end, 10);
	if (errno != 0 || end == *p)
		return false;
	*p = end;
	*ret = v;
	return true;
}

static bool perms_ok(const char *p)
{
	return (p[0] == 'r' || p[0] == '-') && (p[1] == 'w' || p[1] == '-') &&
	       (p[2] == 'x' || p[2] == '-') && (p[3] == 'p' || p[3] == 's');
}

/* One maps line (NUL-terminated, no newline) into e; its path stays in
 * the line. "START-END PERMS OFFSET MAJ:MIN INODE [PATH]". */
static int parse_line(char *line, struct maps_entry *e)
{
	uint64_t maj, min;
	char *p = line;

	memset(e, 0, sizeof(*e));
	if (!hex_at(&p, &e->start) || *p++ != '-' || !hex_at(&p, &e->end) || *p++ != ' ' ||
	    e->end <= e->start)
		return -EINVAL;
	if (strnlen(p, 5) < 5 || !perms_ok(p) || p[4] != ' ')
		return -EINVAL;
	memcpy(e->perms, p, 4);
	p += 5;
	if (!hex_at(&p, &e->offset) || *p++ != ' ' || !hex_at(&p, &maj) || *p++ != ':' ||
	    !hex_at(&p, &min) || *p++ != ' ' || !dec_at(&p, &e->inode))
		return -EINVAL;
	if (maj > UINT32_MAX || min > UINT32_MAX)
		return -EINVAL;
	e->dev_major = (uint32_t)maj;
	e->dev_minor = (uint32_t)min;
	if (*p != ' ' && *p != '\0')
		return -EINVAL;
	while (*p == ' ')
		p++;
	e->path = p;
	e->page_bytes = 4096;
	return 0;
}

int maps_parse(const char *text, struct maps *ret)
{
	struct maps m = {0};
	size_t cap = 0;
	char *line;

	if (text == NULL)
		return -EINVAL;
	m.text = strdup(text);
	if (m.text == NULL)
		return -ENOMEM;
	for (line = m.text; *line != '\0';) {
		char *nl = strchr(line, '\n');
		struct maps_entry e;
		int rc;

		if (nl != NULL)
			*nl = '\0';
		rc = parse_line(line, &e);
		if (rc == 0 && m.n > 0 && e.start < m.e[m.n - 1].end)
			rc = -EINVAL; /* out of order, or overlapping */
		if (rc == 0 && m.n == cap) {
			size_t nc = cap ? cap * 2 : 64;
			struct maps_entry *ne = realloc(m.e, nc * sizeof(*ne));

			if (ne == NULL)
				rc = -ENOMEM;
			else {
				m.e = ne;
				cap = nc;
			}
		}
		if (rc != 0) {
			maps_free(&m);
			return rc;
		}
		m.e[m.n++] = e;
		if (nl == NULL)
			break;
		line = nl + 1;
	}
	*ret = m;
	return 0;
}

/* The index of the entry starting at addr, or of the one containing it
 * when contain, else -1. */
static long entry_index(const struct maps *m, uint64_t addr, bool contain)
{
	size_t lo = 0, hi = m->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->e[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < m->n && (m->e[lo].start == addr || (contain && m->e[lo].start <= addr)))
		return (long)lo;
	return -1;
}

const struct maps_entry *maps_find(const struct maps *m, uint64_t addr)
{
	long i = entry_index(m, addr, true);

	return i >= 0 ? &m->e[i] : NULL;
}

uint64_t maps_node_bytes(const struct maps *m, size_t i, unsigned node)
{
	if (i >= m->n || node >= m->nodes || m->node_pages == NULL)
		return 0;
	return m->node_pages[i * m->nodes + node] * m->e[i].page_bytes;
}

/* ---------------------------------------------------------------------- */
/* /proc/PID/numa_maps                                                     */
/* ---------------------------------------------------------------------- */

/* What one numa_maps line says. */
struct numa_line {
	uint64_t start;
	char policy[MAPS_POLICY_LEN];
	bool heap, stack, huge;
	uint64_t anon, page_bytes;
	uint64_t pages[TOPOLOGY_MAX_NODES];
	unsigned nodes; /* highest node named + 1 */
};

/* A "N<node>=<pages>" token: 1 when it is one, 0 when it is another token,
 * or -EINVAL / -ERANGE for a malformed one. */
static int node_token(const char *t, unsigned *node, uint64_t *pages)
{
	char *p = (char *)t + 1;
	uint64_t n;

	if (t[0] != 'N' || ((t[1] < '0' || t[1] > '9') && t[1] != '='))
		return 0;
	if (!dec_at(&p, &n) || *p++ != '=' || !dec_at(&p, pages) || (*p != '\0' && *p != ' '))
		return -EINVAL;
	if (n >= TOPOLOGY_MAX_NODES)
		return -ERANGE;
	*node = (unsigned)n;
	return 1;
}

static bool key_value(const char *t, const char *key, uint64_t *v)
{
	size_t n = strlen(key);
	char *p = (char *)t + n;

	if (strncmp(t, key, n) != 0)
		return false;
	return dec_at(&p, v) && (*p == '\0' || *p == ' ');
}

/* One token of a numa_maps line into l; 0, or -EINVAL / -ERANGE. */
static int numa_token(struct numa_line *l, const char *t, bool *policy_done)
{
	uint64_t v, pages;
	unsigned node;
	int rc = node_token(t, &node, &pages);

	if (rc < 0)
		return rc;
	if (rc == 1) {
		l->pages[node] += pages;
		if (node + 1 > l->nodes)
			l->nodes = node + 1;
	} else if (key_value(t, "kernelpagesize_kB=", &v)) {
		if (v == 0 || v % 4 != 0 || v > (UINT64_C(1) << 30))
			return -EINVAL;
		l->page_bytes = v << 10;
	} else if (key_value(t, "anon=", &v)) {
		l->anon = v;
	} else if (strcmp(t, "heap") == 0) {
		l->heap = true;
	} else if (strcmp(t, "stack") == 0 || strncmp(t, "stack:", 6) == 0) {
		l->stack = true;
	} else if (strcmp(t, "huge") == 0) {
		l->huge = true;
	} else if (!*policy_done && strchr(t, '=') == NULL) {
		/* a policy name with a space in it: "prefer (many):0-1" */
		size_t at = strlen(l->policy);

		snprintf(l->policy + at, sizeof(l->policy) - at, " %s", t);
		return 0;
	}
	*policy_done = true;
	return 0;
}

/* One numa_maps line (NUL-terminated, modified: tokens are cut). */
static int numa_parse_line(char *line, struct numa_line *l)
{
	bool policy_done = false;
	char *p = line, *save = NULL, *t;
	int rc;

	memset(l, 0, sizeof(*l));
	l->page_bytes = 4096;
	if (!hex_at(&p, &l->start) || *p != ' ')
		return -EINVAL;
	t = strtok_r(p, " ", &save);
	if (t == NULL)
		return -EINVAL;
	snprintf(l->policy, sizeof(l->policy), "%s", t);
	while ((t = strtok_r(NULL, " ", &save)) != NULL) {
		rc = numa_token(l, t, &policy_done);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* Walk the numa_maps text: fn on each line; stops at the first error. */
static int numa_walk(const char *text, int (*fn)(const struct numa_line *l, void *arg), void *arg)
{
	char *copy = strdup(text), *line;
	struct numa_line *l = malloc(sizeof(*l));
	int rc = 0;

	if (copy == NULL || l == NULL) {
		free(copy);
		free(l);
		return -ENOMEM;
	}
	for (line = copy; rc == 0 && *line != '\0';) {
		char *nl = strchr(line, '\n');

		if (nl != NULL)
			*nl = '\0';
		rc = numa_parse_line(line, l);
		if (rc == 0)
			rc = fn(l, arg);
		if (nl == NULL)
			break;
		line = nl + 1;
	}
	free(l);
	free(copy);
	return rc;
}

static int count_nodes(const struct numa_line *l, void *arg)
{
	unsigned *nodes = arg;

	if (l->nodes > *nodes)
		*nodes = l->nodes;
	return 0;
}

struct join_state {
	struct maps *m;
	uint64_t *pages; /* the new node_pages */
	unsigned nodes;
};

static int join_line(const struct numa_line *l, void *arg)
{
	struct join_state *s = arg;
	struct maps *m = s->m;
	long i = entry_index(m, l->start, false);
	struct maps_entry *e;
	uint64_t sum = 0;

	if (i < 0) {
		for (unsigned n = 0; n < l->nodes; n++)
			m->moved_bytes[n] += l->pages[n] * l->page_bytes;
		m->moved_lines++;
		return 0;
	}
	e = &m->e[i];
	e->have_numa = true;
	e->numa_heap = l->heap;
	e->numa_stack = l->stack;
	e->numa_huge = l->huge;
	e->page_bytes = l->page_bytes;
	e->anon_pages = l->anon;
	snprintf(e->policy, sizeof(e->policy), "%s", l->policy);
	for (unsigned n = 0; n < l->nodes; n++) {
		s->pages[(size_t)i * s->nodes + n] = l->pages[n];
		sum += l->pages[n];
	}
	e->resident = sum * l->page_bytes;
	return 0;
}

int maps_join_numa(struct maps *m, const char *text)
{
	struct join_state s = {.m = m};
	struct maps saved = *m;
	struct maps_entry *copy;
	int rc;

	if (text == NULL)
		return -EINVAL;
	rc = numa_walk(text, count_nodes, &s.nodes);
	if (rc != 0)
		return rc;
	if (s.nodes == 0)
		s.nodes = 1;
	s.pages = calloc(m->n * s.nodes + 1, sizeof(uint64_t));
	copy = malloc((m->n + 1) * sizeof(*copy));
	if (s.pages == NULL || copy == NULL) {
		free(s.pages);
		free(copy);
		return -ENOMEM;
	}
	memcpy(copy, m->e, m->n * sizeof(*copy));
	memset(m->moved_bytes, 0, sizeof(m->moved_bytes));
	m->moved_lines = 0;
	for (size_t i = 0; i < m->n; i++) {
		m->e[i].have_numa = false;
		m->e[i].resident = 0;
	}
	rc = numa_walk(text, join_line, &s);
	if (rc != 0) {
		/* as it was: the entries, the moved bytes, the counts */
		memcpy(m->e, copy, m->n * sizeof(*copy));
		memcpy(m->moved_bytes, saved.moved_bytes, sizeof(m->moved_bytes));
		m->moved_lines = saved.moved_lines;
		free(copy);
		free(s.pages);
		return rc;
	}
	free(copy);
	free(m->node_pages);
	m->node_pages = s.pages;
	m->nodes = s.nodes;
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Stack pointers                                                          */
/* ---------------------------------------------------------------------- */

int maps_parse_syscall(const char *text, uint64_t *ret_sp)
{
	char *copy, *save = NULL, *t, *prev = NULL, *last = NULL;
	unsigned n = 0;
	uint64_t sp;
	char *p;
	int rc = -EINVAL;

	if (text == NULL)
		return -EINVAL;
	if (strncmp(text, "running", 7) == 0)
		return -EAGAIN;
	copy = strdup(text);
	if (copy == NULL)
		return -ENOMEM;
	for (t = strtok_r(copy, " \n", &save); t != NULL; t = strtok_r(NULL, " \n", &save)) {
		prev = last;
		last = t;
		n++;
	}
	/* "NR A1 .. A6 SP PC" (9 fields) or "-1 SP PC" (3) */
	if ((n == 9 || (n == 3 && strcmp(copy, "-1") == 0)) && prev != NULL &&
	    strncmp(prev, "0x", 2) == 0) {
		p = prev + 2;
		if (hex_at(&p, &sp) && *p == '\0') {
			*ret_sp = sp;
			rc = 0;
		}
	}
	free(copy);
	return rc;
}

int maps_parse_stat_sp(const char *line, size_t len, uint64_t *ret_sp)
{
	const char *close = NULL;
	char buf[1024], *p, *save = NULL, *t;
	uint64_t v = 0;
	unsigned field = 2;

	for (size_t i = 0; i < len && line[i] != '\0'; i++)
		if (line[i] == ')')
			close = line + i;
	if (close == NULL || (size_t)(close - line) + 1 >= len)
		return -EINVAL;
	/* fields 3.. follow the comm's last ')' */
	snprintf(buf, sizeof(buf), "%.*s", (int)(len - (size_t)(close - line) - 1), close + 1);
	for (t = strtok_r(buf, " \n", &save); t != NULL; t = strtok_r(NULL, " \n", &save)) {
		if (++field < 29)
			continue;
		p = t;
		if (!dec_at(&p, &v) || *p != '\0')
			return -EINVAL;
		if (v == 0)
			return -ENODATA;
		*ret_sp = v;
		return 0;
	}
	return -EINVAL;
}

/* ---------------------------------------------------------------------- */
/* Categories                                                              */
/* ---------------------------------------------------------------------- */

static bool anonymous(const struct maps_entry *e)
{
	return e->path[0] == '\0' || strncmp(e->path, "[anon:", 6) == 0;
}

static bool prefix(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

static void set(struct maps_entry *e, enum maps_category c, pid_t tid, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

static void set(struct maps_entry *e, enum maps_category c, pid_t tid, const char *fmt, ...)
{
	va_list ap;

	e->category = c;
	e->tid = tid;
	va_start(ap, fmt);
	vsnprintf(e->why, sizeof(e->why), fmt, ap);
	va_end(ap);
	text_mask_controls(e->why);
}

static bool shared_memory(const struct maps_entry *e)
{
	if (prefix(e->path, "/dev/shm/") || prefix(e->path, "/SYSV") ||
	    prefix(e->path, "/memfd:") || prefix(e->path, "[anon_shmem"))
		return true;
	return e->perms[3] == 's' && (e->path[0] == '\0' || prefix(e->path, "/dev/zero"));
}

static const char *shm_kind(const struct maps_entry *e)
{
	if (prefix(e->path, "/dev/shm/"))
		return "a POSIX shared memory object (/dev/shm)";
	if (prefix(e->path, "/SYSV"))
		return "System V shared memory (shmget)";
	if (prefix(e->path, "/memfd:"))
		return "a memfd (memfd_create)";
	return "anonymous shared memory (MAP_SHARED|MAP_ANONYMOUS)";
}

/* A glibc per-thread arena heap at i (and its ---p tail at i + 1)? */
static int arena_heap(struct maps *m, size_t i)
{
	struct maps_entry *e = &m->e[i], *t = i + 1 < m->n ? &m->e[i + 1] : NULL;
	char b1[32], b2[32];

	if (e->category != MAPS_ANON || !anonymous(e) || strcmp(e->perms, "rw-p") != 0 ||
	    e->start % MAPS_HEAP_MAX != 0)
		return 0;
	if (e->end - e->start == MAPS_HEAP_MAX) {
		set(e, MAPS_HEAP, 0,
		    "glibc arena heap: an anonymous rw-p mapping of HEAP_MAX_SIZE (64 MiB) at a "
		    "64 MiB-aligned address (an arena grown to its maximum)");
		return 1;
	}
	if (t == NULL || t->start != e->end || t->category != MAPS_ANON || !anonymous(t) ||
	    strcmp(t->perms, "---p") != 0 || t->end - e->start != MAPS_HEAP_MAX)
		return 0;
	set(e, MAPS_HEAP, 0,
	    "glibc arena heap: a 64 MiB-aligned anonymous reservation, rw-p head %s + ---p tail "
	    "%s = HEAP_MAX_SIZE",
	    text_human(e->end - e->start, b1, sizeof(b1)),
	    text_human(t->end - t->start, b2, sizeof(b2)));
	set(t, MAPS_HEAP, 0, "the ---p tail of the glibc arena heap at 0x%llx",
	    (unsigned long long)e->start);
	return 1;
}

/* Threads' stacks: the mapping that holds each stack pointer. */
static void thread_stacks(struct maps *m, const struct maps_context *c)
{
	for (size_t k = 0; k < c->nstacks; k++) {
		long i = entry_index(m, c->stacks[k].sp, true);
		struct maps_entry *e = i >= 0 ? &m->e[i] : NULL;

		/* a later stack pointer in the same mapping wins (maps.h) */
		if (e == NULL || !anonymous(e) ||
		    (e->category != MAPS_ANON && e->category != MAPS_STACK))
			continue;
		if (c->stack_max > 0 && e->end - e->start > c->stack_max + (1u << 20)) {
			char b[32];

			set(e, MAPS_ANON, 0,
			    "anonymous, %s: holds thread %d's stack, merged by the kernel with "
			    "adjacent anonymous memory",
			    text_human(e->end - e->start, b, sizeof(b)), (int)c->stacks[k].tid);
			continue;
		}
		set(e, MAPS_STACK, c->stacks[k].tid,
		    "holds the stack pointer of thread %d (/proc/PID/task/TID/syscall)",
		    (int)c->stacks[k].tid);
		if (i > 0 && m->e[i - 1].end == e->start && m->e[i - 1].category == MAPS_ANON &&
		    anonymous(&m->e[i - 1]) && strcmp(m->e[i - 1].perms, "---p") == 0 &&
		    m->e[i - 1].end - m->e[i - 1].start <= (1u << 20))
			set(&m->e[i - 1], MAPS_STACK, c->stacks[k].tid,
			    "the guard page below thread %d's stack", (int)c->stacks[k].tid);
	}
}

static void classify_one(struct maps_entry *e, const struct maps_context *c)
{
	char b1[32], b2[32];

	if (c->pool_hi > c->pool_lo && e->start < c->pool_hi && e->end > c->pool_lo)
		set(e, MAPS_POOL, 0, "inside the pools' region (the stats segment names it)");
	else if (strcmp(e->path, "[heap]") == 0)
		set(e, MAPS_HEAP, 0, "the brk heap ([heap]): glibc's main arena");
	else if (strcmp(e->path, "[stack]") == 0)
		set(e, MAPS_STACK, c->pid, "the main thread's stack ([stack])");
	else if (shared_memory(e))
		set(e, MAPS_SHM, 0, "%s", shm_kind(e));
	else if (e->path[0] == '/')
		set(e, MAPS_FILE, 0, "a %s mapping of a file",
		    e->perms[3] == 's' ? "shared (MAP_SHARED)" : "private (MAP_PRIVATE)");
	else if (e->path[0] == '[' && !anonymous(e))
		set(e, MAPS_OTHER, 0, "the kernel's %s", e->path);
	else if (c->max_size > 0 && e->end - e->start > c->max_size)
		set(e, MAPS_ANON, 0,
		    "anonymous, %s: above the pools' max_size (%s), so not the pools'",
		    text_human(e->end - e->start, b1, sizeof(b1)),
		    text_human(c->max_size, b2, sizeof(b2)));
	else
		set(e, MAPS_ANON, 0,
		    "anonymous, outside the pools: the host's own mmap, or memory the backend "
		    "served");
}

void maps_classify(struct maps *m, const struct maps_context *c)
{
	for (size_t i = 0; i < m->n; i++)
		classify_one(&m->e[i], c);
	thread_stacks(m, c);
	for (size_t i = 0; i < m->n; i++)
		if (arena_heap(m, i))
			i++;
}
