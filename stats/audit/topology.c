/*
 * topology.c - the CPU -> node map from sysfs and each thread's last CPU,
 * node and affinity from /proc and sched_getaffinity(2) (topology.h).
 *
 * /proc text is parsed defensively: every number is range-checked, comm is
 * found by the last ')', and a thread that vanishes between the task
 * directory listing and its stat read is skipped rather than reported.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sys.h"
#include "text.h"
#include "topology.h"

#define SET_WORDS(bits) (((bits) + 63) / 64)

/* A decimal number of at most max at *p; advances *p. */
static int parse_uint(const char **p, unsigned long max, unsigned long *ret)
{
	char *end;
	unsigned long v;

	if (!isdigit((unsigned char)**p))
		return -EINVAL;
	errno = 0;
	v = strtoul(*p, &end, 10);
	if (errno != 0 || v > max)
		return -ERANGE;
	*p = end;
	*ret = v;
	return 0;
}

int topology_parse_cpulist(const char *text, uint64_t *set, unsigned setbits)
{
	const char *p = text;

	memset(set, 0, SET_WORDS(setbits) * sizeof(*set));
	while (*p != '\0' && *p != '\n') {
		unsigned long lo, hi;
		int r = parse_uint(&p, ULONG_MAX, &lo);

		if (r != 0)
			return -EINVAL;
		hi = lo;
		if (*p == '-') {
			p++;
			if (parse_uint(&p, ULONG_MAX, &hi) != 0 || hi < lo)
				return -EINVAL;
		}
		if (hi >= setbits)
			return -ERANGE;
		for (unsigned long c = lo; c <= hi; c++)
			set[c / 64] |= 1ULL << (c % 64);
		if (*p == ',')
			p++;
		else if (*p != '\0' && *p != '\n')
			return -EINVAL;
	}
	return *p == '\n' && p[1] != '\0' ? -EINVAL : 0;
}

/* Give node every CPU of its cpulist file. */
static int load_node(struct topology *t, const char *root, unsigned node, uint64_t *set, char *err,
                     size_t errlen)
{
	char path[PATH_MAX];
	char *text;
	int r;

	snprintf(path, sizeof(path), "%s/node%u/cpulist", root, node);
	text = sys_read_file(path, 1 << 16, NULL);
	if (text == NULL)
		return text_fail(err, errlen, errno, "cannot read %s: %s", path, strerror(errno));
	r = topology_parse_cpulist(text, set, TOPOLOGY_MAX_CPUS);
	free(text);
	if (r != 0)
		return text_fail(err, errlen, -r, "%s: %s", path,
		                 r == -ERANGE ? "a CPU id beyond the limit" : "not a cpulist");
	for (unsigned c = 0; c < TOPOLOGY_MAX_CPUS; c++) {
		if (!(set[c / 64] & (1ULL << (c % 64))))
			continue;
		if (c >= t->ncpus)
			t->ncpus = c + 1;
		t->cpu_node[c] = (int)node;
	}
	t->node_mask |= 1ULL << node;
	if (node + 1 > t->nodes)
		t->nodes = node + 1;
	return 0;
}

/* The node id of a sysfs entry named nodeN, or -1 for other entries. */
static long node_id(const char *name)
{
	const char *p = name + 4;
	unsigned long id;

	if (strncmp(name, "node", 4) != 0 || parse_uint(&p, LONG_MAX, &id) != 0 || *p != '\0')
		return -1;
	return (long)id;
}

/* Every root/nodeN; *ret_missing tells a missing root (no NUMA in sysfs). */
static int load_nodes(struct topology *t, const char *root, bool *ret_missing, char *err,
                      size_t errlen)
{
	uint64_t set[SET_WORDS(TOPOLOGY_MAX_CPUS)];
	struct dirent *d;
	DIR *dir = opendir(root);
	int r = 0;

	if (dir == NULL) {
		r = errno;
		*ret_missing = r == ENOENT;
		if (r == ENOENT)
			return 0;
		return text_fail(err, errlen, r, "cannot list %s: %s", root, strerror(r));
	}
	while (r == 0 && (d = readdir(dir)) != NULL) {
		long id = node_id(d->d_name);

		if (id < 0)
			continue;
		if (id >= TOPOLOGY_MAX_NODES)
			r = text_fail(err, errlen, ERANGE, "%s: node id %ld beyond %d", root, id,
			              TOPOLOGY_MAX_NODES - 1);
		else
			r = load_node(t, root, (unsigned)id, set, err, errlen);
	}
	closedir(dir);
	return r;
}

int topology_load(const char *root, struct topology *ret, char *err, size_t errlen)
{
	struct topology t = {0};
	bool missing = false;
	int r;

	if (root == NULL)
		root = TOPOLOGY_SYSFS;
	t.cpu_node = malloc(TOPOLOGY_MAX_CPUS * sizeof(*t.cpu_node));
	if (t.cpu_node == NULL)
		return text_fail(err, errlen, ENOMEM, "out of memory");
	for (unsigned c = 0; c < TOPOLOGY_MAX_CPUS; c++)
		t.cpu_node[c] = -1;
	r = load_nodes(&t, root, &missing, err, errlen);
	if (r == 0 && (missing || t.nodes == 0)) {
		/* No NUMA in sysfs: one node holding every configured CPU. */
		long n = sysconf(_SC_NPROCESSORS_CONF);

		t.ncpus = n > 0 && n <= TOPOLOGY_MAX_CPUS ? (unsigned)n : 1;
		for (unsigned c = 0; c < t.ncpus; c++)
			t.cpu_node[c] = 0;
		t.nodes = 1;
		t.node_mask = 1;
		t.fallback = true;
		r = 0;
	}
	if (r != 0) {
		free(t.cpu_node);
		return r;
	}
	*ret = t;
	return 0;
}

void topology_free(struct topology *t)
{
	free(t->cpu_node);
	t->cpu_node = NULL;
	t->ncpus = 0;
}

int topology_cpu_node(const struct topology *t, int cpu)
{
	if (cpu < 0 || (unsigned)cpu >= t->ncpus)
		return -1;
	return t->cpu_node[cpu];
}

/* Skip to field 39 of the fields that follow comm (field 3 at p). */
static int parse_after_comm(const char *p, const char *end, struct topology_thread *th)
{
	unsigned long v = 0;
	char buf[32];

	if (p >= end || *p++ != ' ' || p >= end || !isalpha((unsigned char)*p))
		return -EINVAL;
	th->state = *p++;
	for (int field = 4; field <= 39; field++) {
		size_t n = 0;
		const char *q;

		if (p >= end || *p++ != ' ')
			return -EINVAL;
		/* Some fields may be negative (priority, nice); only 39 matters. */
		while (p + n < end && n < sizeof(buf) - 1 &&
		       (isdigit((unsigned char)p[n]) || (n == 0 && p[n] == '-')))
			n++;
		if (n == 0 || (p + n < end && p[n] != ' ' && p[n] != '\n'))
			return -EINVAL;
		memcpy(buf, p, n);
		buf[n] = '\0';
		p += n;
		q = buf;
		if (field == 39 && parse_uint(&q, INT_MAX, &v) != 0)
			return -EINVAL;
	}
	th->cpu = (int)v;
	return 0;
}

int topology_parse_stat(const char *line, size_t len, struct topology_thread *ret)
{
	const char *end = line + len, *open, *close, *p = line;
	struct topology_thread th = {0};
	unsigned long tid;
	size_t n;

	open = memchr(line, '(', len);
	close = NULL;
	for (const char *q = end; q > line; q--)
		if (q[-1] == ')') {
			close = q - 1;
			break;
		}
	if (open == NULL || close == NULL || close < open || open == line || open[-1] != ' ')
		return -EINVAL;
	if (parse_uint(&p, INT_MAX, &tid) != 0 || p != open - 1 || tid == 0)
		return -EINVAL;
	th.tid = (pid_t)tid;
	n = (size_t)(close - open - 1);
	if (n >= sizeof(th.name))
		n = sizeof(th.name) - 1;
	memcpy(th.name, open + 1, n);
	th.name[n] = '\0';
	if (parse_after_comm(close + 1, end, &th) != 0)
		return -EINVAL;
	th.node = -1;
	*ret = th;
	return 0;
}

/* The nodes of the CPUs tid may run on. */
static int affinity_nodes(const struct topology *t, pid_t tid, topology_nodeset_t *ret)
{
	size_t ncpus = 1024, size;
	cpu_set_t *set;
	topology_nodeset_t nodes = 0;

	for (;;) {
		set = CPU_ALLOC(ncpus);
		if (set == NULL)
			return -ENOMEM;
		size = CPU_ALLOC_SIZE(ncpus);
		if (sched_getaffinity(tid, size, set) == 0)
			break;
		CPU_FREE(set);
		/* EINVAL: the kernel's mask is larger than ours. */
		if (errno != EINVAL || ncpus >= 4 * TOPOLOGY_MAX_CPUS)
			return -errno;
		ncpus *= 2;
	}
	for (size_t c = 0; c < ncpus; c++) {
		int node = topology_cpu_node(t, (int)c);

		if (CPU_ISSET_S(c, size, set) && node >= 0)
			nodes |= 1ULL << node;
	}
	CPU_FREE(set);
	*ret = nodes;
	return 0;
}

int topology_thread_read(const struct topology *t, pid_t pid, pid_t tid,
                         struct topology_thread *ret, char *err, size_t errlen)
{
	struct topology_thread th;
	char path[64], *line;
	size_t len;
	int r;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	line = sys_read_file(path, 4096, &len);
	if (line == NULL) {
		r = errno == ENOENT || errno == ESRCH ? ESRCH : errno;
		return text_fail(err, errlen, r, "thread %d of process %d: %s", (int)tid, (int)pid,
		                 r == ESRCH ? "gone" : strerror(r));
	}
	r = topology_parse_stat(line, len, &th);
	free(line);
	if (r != 0 || th.tid != tid)
		return text_fail(err, errlen, EINVAL, "%s: not a stat line", path);
	th.node = topology_cpu_node(t, th.cpu);
	r = affinity_nodes(t, tid, &th.affinity);
	if (r != 0)
		return text_fail(err, errlen, -r, "thread %d of process %d: sched_getaffinity: %s",
		                 (int)tid, (int)pid, r == -ESRCH ? "gone" : strerror(-r));
	*ret = th;
	return 0;
}

/* Append one thread to a growing array. */
static int push_thread(struct topology_thread **a, size_t *n, size_t *cap,
                       const struct topology_thread *th)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 16;
		struct topology_thread *na = realloc(*a, nc * sizeof(**a));

		if (na == NULL)
			return -ENOMEM;
		*a = na;
		*cap = nc;
	}
	(*a)[(*n)++] = *th;
	return 0;
}

int topology_threads(const struct topology *t, pid_t pid, struct topology_thread **ret_threads,
                     size_t *ret_n, char *err, size_t errlen)
{
	struct topology_thread *a = NULL, th;
	size_t n = 0, cap = 0;
	struct dirent *d;
	char path[64];
	DIR *dir;
	int r = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (dir == NULL) {
		r = errno == ENOENT ? ESRCH : errno;
		return text_fail(err, errlen, r, "process %d: %s", (int)pid,
		                 r == ESRCH ? "no such process" : strerror(r));
	}
	while (r == 0 && (d = readdir(dir)) != NULL) {
		const char *p = d->d_name;
		unsigned long tid;

		if (parse_uint(&p, INT_MAX, &tid) != 0 || *p != '\0')
			continue;
		r = topology_thread_read(t, pid, (pid_t)tid, &th, err, errlen);
		if (r == -ESRCH) { /* exited since the listing */
			r = 0;
			continue;
		}
		if (r == 0)
			r = push_thread(&a, &n, &cap, &th);
		if (r == -ENOMEM)
			text_fail(err, errlen, ENOMEM, "out of memory");
	}
	closedir(dir);
	if (r == 0 && n == 0)
		r = text_fail(err, errlen, ESRCH, "process %d: no thread left", (int)pid);
	if (r != 0) {
		free(a);
		return r;
	}
	*ret_threads = a;
	*ret_n = n;
	return 0;
}
