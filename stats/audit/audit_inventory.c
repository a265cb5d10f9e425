/*
 * audit_inventory.c - the session's whole-process reads (audit_int.h):
 * every mapping of the process by category (maps.h) with its per-node
 * bytes from numa_maps, the threads' stack pointers that name their
 * stacks, the probes that place a mapping's present pages page by page,
 * the free memory of each node (for a fix that moves a run to one node),
 * and the first page-cache look at each mapped file (page-cache
 * provenance, audit.h).
 *
 * Two paces. audit__inventory_look() runs every poll and is cheap: the
 * stack pointers of the live threads and /proc/PID/maps alone, to take the
 * first look at a file as soon as it is mapped (before most of its pages
 * are touched, in launch mode). audit__inventory_read() is the
 * whole-process pass: numa_maps walks every page table of the process
 * (about 12 ms a GiB here), so the session makes it at the start, at the
 * end and at a pace that keeps it under a few percent of a core.
 *
 * The probes (why a stride, and its error, in docs/audit.md): pagemap
 * names the present pages of a mapping; every one is probed with
 * move_pages when there are at most AUDIT_PROBE_PAGES, else one at a
 * random place in each of AUDIT_PROBE_PAGES equal stretches of them
 * (stratified: no stride can alias a pattern such as interleaving), so a
 * pass costs at most about 4 ms a mapping whatever its size.
 *
 * Nothing here writes to the process: pagemap, numa_maps, maps, syscall
 * and move_pages with nodes=NULL only read, and a look maps the file
 * read-only in the audit's own address space and asks mincore(2).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "audit.h"
#include "audit_int.h"
#include "maps.h"
#include "placement.h"
#include "sys.h"
#include "text.h"
#include "touch.h"

#define PROC_TEXT_MAX (64u << 20)
#define LOOK_CHUNK    (64u << 20) /* mincore a file range 64 MiB at a time */
#define DEFAULT_RA_KB 128

/* ---------------------------------------------------------------------- */
/* Stacks                                                                  */
/* ---------------------------------------------------------------------- */

/* tid's stack pointer from its syscall file, else its stat line's: 0,
 * -EAGAIN (running), -ESRCH (gone), or why neither shows one (-EACCES
 * when syscall was refused, -ENODATA when stat's is 0). */
static int stack_pointer(pid_t pid, pid_t tid, uint64_t *sp)
{
	char path[64], *text;
	size_t len = 0;
	int rc, refused = 0;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
	text = sys_read_file(path, 4096, NULL);
	if (text == NULL && (errno == ENOENT || errno == ESRCH))
		return -ESRCH;
	if (text == NULL)
		refused = -errno;
	if (text != NULL) {
		rc = maps_parse_syscall(text, sp);
		free(text);
		if (rc == 0 || rc == -EAGAIN)
			return rc;
	}
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	text = sys_read_file(path, 4096, &len);
	if (text == NULL)
		return errno == ENOENT || errno == ESRCH ? -ESRCH : -errno;
	rc = maps_parse_stat_sp(text, len, sp);
	free(text);
	return rc == -ENODATA && refused != 0 ? refused : rc;
}

/* The stack pointers of the threads: those alive now (a thread running
 * when read keeps the one read before), then those of threads that
 * ended, last: glibc keeps an ended thread's stack mapped (its cache of
 * stacks), with its pages, until a new thread takes it, and maps_classify
 * lets a later entry win, so a live thread that reuses it does. */
static void stacks_refresh(struct audit *a)
{
	struct astack *n = calloc(a->nthreads + a->nstacks + 1, sizeof(*n));
	size_t k = 0, refused = 0, alive = 0;
	int why = 0;

	if (n == NULL)
		return;
	for (size_t i = 0; i < a->nstacks; i++) {
		const struct audit_thread *t = audit__thread_find(a, a->stacks[i].tid, false);

		if (t != NULL && !t->alive)
			n[k++] = a->stacks[i];
	}
	for (size_t i = 0; i < a->nthreads; i++) {
		const struct audit_thread *t = &a->threads[i].t;
		uint64_t sp = 0;
		int rc;

		if (!t->alive)
			continue;
		alive++;
		rc = stack_pointer(a->pid, t->tid, &sp);
		if (rc == -EAGAIN || rc == -ENODATA || rc == -EACCES || rc == -EPERM) {
			/* running, or not readable: the last one read stands */
			for (size_t j = 0; j < a->nstacks; j++)
				if (a->stacks[j].tid == t->tid)
					sp = a->stacks[j].sp;
			if (rc != -EAGAIN) {
				refused++;
				why = rc;
			}
		}
		if (sp != 0)
			n[k++] = (struct astack){t->tid, sp};
	}
	free(a->stacks);
	a->stacks = n;
	a->nstacks = k;
	if (refused > 0 && refused == alive)
		snprintf(a->stacks_note, sizeof(a->stacks_note),
		         "thread stacks other than [stack] are not known: neither "
		         "/proc/PID/task/TID/syscall nor stat shows a stack pointer here (%s)",
		         why == -ENODATA ? "stat's kstkesp is 0" : strerror(-why));
	else if (refused == 0)
		a->stacks_note[0] = '\0';
}

/* ---------------------------------------------------------------------- */
/* Page-cache looks                                                        */
/* ---------------------------------------------------------------------- */

/* A maps path as a file name: "\012" back to a newline. */
static void unescape(const char *in, char *out, size_t len)
{
	size_t k = 0;

	for (size_t i = 0; in[i] != '\0' && k + 1 < len; i++) {
		if (in[i] == '\\' && in[i + 1] == '0' && in[i + 2] == '1' && in[i + 3] == '2') {
			out[k++] = '\n';
			i += 3;
		} else {
			out[k++] = in[i];
		}
	}
	out[k] = '\0';
}

/* The read-ahead window of the device behind maj:min, in pages. */
static uint64_t ra_pages(uint32_t maj, uint32_t min)
{
	static const char *const where[] = {"/sys/class/bdi/%s/read_ahead_kb",
	                                    "/sys/dev/block/%s/queue/read_ahead_kb",
	                                    "/sys/dev/block/%s/../queue/read_ahead_kb"};
	char path[96], dev[32], *t;
	long kb = -1;

	snprintf(dev, sizeof(dev), "%u:%u", maj, min);
	for (size_t i = 0; i < 3 && kb < 0; i++) {
		const char *at = strstr(where[i], "%s");

		snprintf(path, sizeof(path), "%.*s%s%s", (int)(at - where[i]), where[i], dev,
		         at + 2);
		t = sys_read_file(path, 64, NULL);
		if (t != NULL)
			kb = strtol(t, NULL, 10);
		free(t);
	}
	if (kb < 0)
		kb = DEFAULT_RA_KB;
	return (uint64_t)kb / 4;
}

/* Which pages of the file range [off, off + len) are resident, into
 * look->resident: mincore on a read-only shared mapping of the audit's
 * own, 64 MiB at a time. */
static int look_file(int fd, struct alook *l)
{
	size_t pages = (size_t)(l->len / TOUCH_PAGE);
	unsigned char *vec = malloc(LOOK_CHUNK / TOUCH_PAGE);

	l->resident = calloc(pages / 8 + 1, 1);
	if (vec == NULL || l->resident == NULL) {
		free(vec);
		return -ENOMEM;
	}
	for (uint64_t at = 0; at < l->len; at += LOOK_CHUNK) {
		size_t n = l->len - at < LOOK_CHUNK ? (size_t)(l->len - at) : LOOK_CHUNK;
		void *p = mmap(NULL, n, PROT_READ, MAP_SHARED, fd, (off_t)(l->offset + at));

		if (p == MAP_FAILED) {
			free(vec);
			return -errno;
		}
		if (mincore(p, n, vec) != 0) {
			int e = errno;

			munmap(p, n);
			free(vec);
			return -e;
		}
		munmap(p, n);
		for (size_t i = 0; i < n / TOUCH_PAGE; i++)
			if (vec[i] & 1) {
				size_t bit = (size_t)(at / TOUCH_PAGE) + i;

				l->resident[bit / 8] |= (uint8_t)(1u << (bit % 8));
			}
	}
	free(vec);
	return 0;
}

/* The first look at the file behind entry e (a regular file, the same
 * one by device and inode). */
static void look_take(struct audit *a, const struct maps_entry *e, struct alook *l)
{
	char path[PATH_MAX];
	struct stat st;
	int fd, rc;

	memset(l, 0, sizeof(*l));
	l->dev_major = e->dev_major;
	l->dev_minor = e->dev_minor;
	l->inode = e->inode;
	l->offset = e->offset;
	l->len = e->end - e->start;
	l->gen = touch_generation(&a->touch);
	l->at_attach = a->mode == AUDIT_ATTACH && a->inv_reads == 0;
	l->ra_pages = ra_pages(e->dev_major, e->dev_minor);
	unescape(e->path, path, sizeof(path));
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		l->error = -errno;
		snprintf(l->note, sizeof(l->note), "the file could not be opened: %s",
		         strerror(errno));
		return;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_ino != e->inode ||
	    major(st.st_dev) != e->dev_major || minor(st.st_dev) != e->dev_minor) {
		close(fd);
		l->error = -ESTALE;
		snprintf(l->note, sizeof(l->note),
		         "the file at that path is not the one mapped (replaced or deleted)");
		return;
	}
	{
		struct statfs sf;

		/* tmpfs (0x01021994) and ramfs (0x858458f6) pages stay cached */
		l->pinned =
		        fstatfs(fd, &sf) == 0 &&
		        (sf.f_type == 0x01021994 || sf.f_type == (__typeof__(sf.f_type))0x858458f6);
	}
	rc = look_file(fd, l);
	close(fd);
	if (rc != 0) {
		free(l->resident);
		l->resident = NULL;
		l->error = rc;
		snprintf(l->note, sizeof(l->note), "mincore: %s", strerror(-rc));
	}
}

static bool looked(const struct audit *a, const struct maps_entry *e)
{
	for (size_t i = 0; i < a->nlooks; i++) {
		const struct alook *l = &a->looks[i];

		if (l->inode == e->inode && l->dev_major == e->dev_major &&
		    l->dev_minor == e->dev_minor && l->offset <= e->offset &&
		    l->offset + l->len >= e->offset + (e->end - e->start))
			return true;
	}
	return false;
}

/* Looks at the files of m not looked at yet (file and shm mappings of a
 * file that has an inode). */
static void looks_take(struct audit *a, const struct maps *m)
{
	bool drained = false;

	for (size_t i = 0; i < m->n; i++) {
		const struct maps_entry *e = &m->e[i];
		struct alook *nl;

		if ((e->category != MAPS_FILE && e->category != MAPS_SHM) || e->path[0] != '/' ||
		    e->inode == 0 || looked(a, e))
			continue;
		if (!drained) {
			/* faults up to now belong to the generations before the look */
			audit__drain(a);
			drained = true;
		}
		nl = realloc(a->looks, (a->nlooks + 1) * sizeof(*nl));
		if (nl == NULL)
			return;
		a->looks = nl;
		look_take(a, e, &a->looks[a->nlooks++]);
		/* faults while mincore ran count as before the look: a page the
		 * process faulted then is "unknown", never "resident before" */
		audit__drain(a);
		a->looks[a->nlooks - 1].gen = touch_generation(&a->touch);
	}
}

/* ---------------------------------------------------------------------- */
/* The maps                                                                */
/* ---------------------------------------------------------------------- */

/* The default stack size of the process's threads: glibc takes
 * RLIMIT_STACK's soft limit, 32 MiB on x86-64 when it is unlimited. */
static uint64_t stack_max(pid_t pid)
{
	char path[64], *t, *p;
	uint64_t v = 0;

	snprintf(path, sizeof(path), "/proc/%d/limits", (int)pid);
	t = sys_read_file(path, 1 << 16, NULL);
	p = t != NULL ? strstr(t, "Max stack size") : NULL;
	if (p != NULL) {
		p += strlen("Max stack size");
		while (*p == ' ')
			p++;
		v = strncmp(p, "unlimited", 9) == 0 ? 32u << 20 : strtoull(p, NULL, 10);
	}
	free(t);
	return v;
}

static struct maps_context context(struct audit *a)
{
	struct maps_context c = {.pid = a->pid,
	                         .pool_lo = a->region_lo,
	                         .pool_hi = a->region_hi,
	                         .max_size = a->have_seg ? a->seg.max_size : 0,
	                         .stack_max = stack_max(a->pid),
	                         .nstacks = a->nstacks};

	c.stacks = (const struct maps_stack *)a->stacks;
	return c;
}

_Static_assert(sizeof(struct astack) == sizeof(struct maps_stack), "the same pair");

/* /proc/PID/maps, parsed and classified, into m. */
static int maps_now(struct audit *a, struct maps *m)
{
	char path[64], *text;
	struct maps_context c;
	int rc;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)a->pid);
	text = sys_read_file(path, PROC_TEXT_MAX, NULL);
	if (text == NULL)
		return errno == ENOENT || errno == ESRCH ? -ESRCH : -errno;
	rc = maps_parse(text, m);
	free(text);
	if (rc != 0)
		return rc;
	c = context(a);
	maps_classify(m, &c);
	return 0;
}

void audit__inventory_look(struct audit *a)
{
	struct maps m;

	stacks_refresh(a);
	if (a->faults == NULL && a->mode == AUDIT_LAUNCH)
		return; /* no samples: a look could not be told from a touch */
	if (maps_now(a, &m) != 0)
		return;
	looks_take(a, &m);
	maps_free(&m);
}

/* ---------------------------------------------------------------------- */
/* Probes                                                                  */
/* ---------------------------------------------------------------------- */

/* Stratified choice among the present pages: target is the index (in
 * present order) of the next page to probe. */
struct pick {
	struct aprobe *p;
	size_t n, cap;
	uint64_t seen;  /* present pages walked */
	uint64_t want;  /* the probes wanted, AUDIT_PROBE_PAGES or every page */
	uint64_t total; /* the present pages expected (numa_maps) */
	uint64_t next;  /* the index of the next page to probe */
	uint64_t seed;
};

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= UINT64_C(0xff51afd7ed558ccd);
	x ^= x >> 33;
	x *= UINT64_C(0xc4ceb9fe1a85ec53);
	return x ^ (x >> 33);
}

/* The index of probe k: a random place in the k-th of want equal
 * stretches of total pages. */
static uint64_t target(const struct pick *s, uint64_t k)
{
	uint64_t lo = k * s->total / s->want, hi = (k + 1) * s->total / s->want;

	return hi > lo ? lo + mix(s->seed + k) % (hi - lo) : lo;
}

static int pick_page(uint64_t page, void *arg)
{
	struct pick *s = arg;

	if (s->seen++ != s->next)
		return 0;
	if (s->n < s->cap)
		s->p[s->n++] = (struct aprobe){page, PLACEMENT_ABSENT};
	if (s->n >= s->want)
		return 1;
	s->next = s->want >= s->total ? s->seen : target(s, s->n);
	if (s->next < s->seen)
		s->next = s->seen;
	return 0;
}

/* Probe entry i of m: its present pages from pagemap, their nodes from
 * move_pages. */
static int probe_mapping(struct audit *a, const struct maps *m, size_t i, struct aprobes *out,
                         char *err, size_t errlen)
{
	const struct maps_entry *e = &m->e[i];
	uint64_t expect = e->resident / TOUCH_PAGE;
	struct pick s = {0};
	uint64_t *addr;
	int16_t *node;
	long present;
	int rc;

	memset(out, 0, sizeof(*out));
	if (e->resident == 0)
		return 0;
	s.total = expect;
	s.want = expect <= AUDIT_PROBE_PAGES ? UINT64_MAX : AUDIT_PROBE_PAGES;
	s.cap = expect <= AUDIT_PROBE_PAGES ? (size_t)expect + 64 : AUDIT_PROBE_PAGES;
	s.seed = mix(e->start);
	s.next = s.want == UINT64_MAX ? 0 : target(&s, 0);
	s.p = malloc(s.cap * sizeof(*s.p));
	if (s.p == NULL)
		return -ENOMEM;
	present = placement_present(a->pid, e->start, e->end, pick_page, &s);
	if (present < 0) {
		free(s.p);
		return text_fail(err, errlen, (int)-present, "/proc/%d/pagemap: %s", (int)a->pid,
		                 strerror((int)-present));
	}
	addr = malloc((s.n + 1) * sizeof(*addr));
	node = malloc((s.n + 1) * sizeof(*node));
	rc = addr != NULL && node != NULL ? 0 : -ENOMEM;
	for (size_t k = 0; rc == 0 && k < s.n; k++)
		addr[k] = s.p[k].page;
	if (rc == 0)
		rc = placement_nodes(a->pid, addr, s.n, node, err, errlen);
	for (size_t k = 0; rc == 0 && k < s.n; k++)
		s.p[k].node = node[k];
	free(addr);
	free(node);
	if (rc != 0) {
		free(s.p);
		return rc;
	}
	out->p = s.p;
	out->n = s.n;
	/* the walk stops at the last probe: count what it did not see */
	out->present = (uint64_t)present < s.seen ? s.seen : (uint64_t)present;
	if (s.want != UINT64_MAX && s.n >= s.want)
		out->present = expect > out->present ? expect : out->present;
	return 0;
}

/* MemFree of each node, for a fix that moves a run to one node. */
static void node_free(struct audit *a)
{
	char path[96], *t, *p;

	memset(a->node_free, 0, sizeof(a->node_free));
	for (unsigned n = 0; a->have_topo && n < a->topo.nodes && n < TOPOLOGY_MAX_NODES; n++) {
		if (!(a->topo.node_mask & ((topology_nodeset_t)1 << n)))
			continue;
		snprintf(path, sizeof(path), "%s/node%u/meminfo",
		         a->o.sysfs != NULL ? a->o.sysfs : TOPOLOGY_SYSFS, n);
		t = sys_read_file(path, 1 << 16, NULL);
		p = t != NULL ? strstr(t, "MemFree:") : NULL;
		if (p != NULL)
			a->node_free[n] = strtoull(p + 8, NULL, 10) << 10;
		free(t);
	}
}

static void probes_free(struct aprobes *p, size_t n)
{
	for (size_t i = 0; p != NULL && i < n; i++)
		free(p[i].p);
	free(p);
}

void audit__inventory_free(struct audit *a)
{
	probes_free(a->probes, a->inv.n);
	a->probes = NULL;
	maps_free(&a->inv);
	a->have_inv = false;
	for (size_t i = 0; i < a->nlooks; i++)
		free(a->looks[i].resident);
	free(a->looks);
	a->looks = NULL;
	a->nlooks = 0;
	free(a->stacks);
	a->stacks = NULL;
	a->nstacks = 0;
}

int audit__inventory_read(struct audit *a)
{
	uint64_t t0 = sys_mono_ns(), mem = 0;
	char path[64], err[256], *numa;
	struct aprobes *probes;
	struct maps m;
	int rc;

	snprintf(path, sizeof(path), "/proc/%d/numa_maps", (int)a->pid);
	/* numa_maps first: its totals are what numastat sums; a mapping that
	 * changes before maps is read counts as moved */
	numa = sys_read_file(path, PROC_TEXT_MAX, NULL);
	if (numa == NULL && (errno == ENOENT || errno == ESRCH))
		return -ESRCH;
	rc = maps_now(a, &m);
	if (rc == 0 && numa != NULL)
		rc = maps_join_numa(&m, numa);
	else if (rc == 0)
		audit__tier_off(a, AUDIT_TIER_PLACEMENT, -errno,
		                "/proc/PID/numa_maps cannot be read: per-node bytes of the "
		                "mappings are not known (a kernel without NUMA, or refused)");
	free(numa);
	if (rc == -ESRCH)
		return rc;
	if (rc != 0) {
		snprintf(err, sizeof(err), "the process's maps do not parse (%s)", strerror(-rc));
		audit__tier_off(a, AUDIT_TIER_PLACEMENT, rc, err);
		return rc;
	}
	probes = calloc(m.n + 1, sizeof(*probes));
	if (probes == NULL) {
		maps_free(&m);
		return -ENOMEM;
	}
	for (size_t i = 0; rc == 0 && i < m.n; i++) {
		audit__drain(a); /* a long pass must not let the rings fill */
		rc = probe_mapping(a, &m, i, &probes[i], err, sizeof(err));
		mem += probes[i].n * sizeof(struct aprobe);
		if (rc == -ENOMEM || rc == -EFAULT || rc == -ENOENT)
			rc = 0; /* that mapping goes unprobed; the others are read */
	}
	if (rc != 0) {
		probes_free(probes, m.n);
		maps_free(&m);
		if (rc != -ESRCH)
			audit__tier_off(a, AUDIT_TIER_PLACEMENT, rc, err);
		return rc;
	}
	looks_take(a, &m);
	probes_free(a->probes, a->inv.n);
	maps_free(&a->inv);
	a->inv = m;
	a->probes = probes;
	a->have_inv = true;
	a->probe_memory = mem;
	node_free(a);
	a->inv_reads++;
	a->last_inv_ns = sys_mono_ns();
	a->inv_ns = a->last_inv_ns - t0;
	return 0;
}
