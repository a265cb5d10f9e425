/*
 * audit.c - the memory-locality audit's session and join (see audit.h).
 *
 * A session gathers, poll by poll: fault samples (faults.h) into a map of
 * page -> earliest sample; the segment's block table and growth records
 * (segread.h); the threads with their last CPU and node (topology.h); and,
 * every interval, the placement of every block that holds pages
 * (placement.h). In launch mode the command is also seized with ptrace
 * (PTRACE_O_TRACEEXIT only: no other stop is asked for), so that when its
 * main thread exits, while its memory is still mapped, one last placement
 * pass is read: "placement as last sampled while it ran" is then the
 * placement at exit. Where ptrace is refused, the last periodic pass stands.
 *
 * audit_result() joins them per page run of each block; findings are
 * built per block and merged per (kind, call site, thread), then ranked.
 * Nothing here touches the process's memory: placement only reads, and
 * the samples are the kernel's.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "common.h"
#include "faults.h"
#include "placement.h"
#include "segread.h"
#include "symbols.h"
#include "topology.h"

#define PAGE       4096u
#define HUGE_PAGE  (2u << 20)
#define MAX_BLOCKS SCRATCH_SEG_MAX_BLOCKS
#define MAPS_MAX   (8u << 20)

/* A page's earliest fault sample. page 0: an empty slot. */
struct touch {
	uint64_t page;
	uint64_t time_ns;
	pid_t tid;
	int32_t cpu;
};

/* Open-addressing map of page -> struct touch, power-of-two capacity. */
struct touchmap {
	struct touch *e;
	size_t cap, n;
};

struct ablock {
	bool seen; /* the table described it */
	struct segread_block b;
	struct placement pl; /* the last pass that read it */
	bool have_pl;
};

struct athread {
	struct audit_thread t;
};

struct agrowth {
	uint64_t seq;
	pid_t tid;
	uint32_t nframes;
	uint64_t frames[SCRATCH_SEG_MAX_FRAMES];
};

struct audit {
	enum audit_mode mode;
	pid_t pid;
	struct audit_opts o;
	struct topology topo;
	bool have_topo;
	faults_t *faults;
	struct audit_tier tiers[AUDIT_TIERS];
	bool traced, gone, reaped;
	bool unlink_segs; /* launch mode asked for keep_segment: remove them at the end */
	int exit_status;
	uint64_t started_ns, ended_ns;
	uint64_t last_place_ns;
	uint64_t placement_reads;
	char run_dir[PATH_MAX];
	int seg_fd;
	struct segread seg;
	bool have_seg;
	uint64_t seg_nonce; /* the open segment's name: newer ones replace it */
	uint64_t next_rec, lost_rec;
	uint64_t region_lo, region_hi;
	struct touchmap pages, huge; /* 4 KiB pages, and 2 MiB frames */
	struct ablock *blocks;       /* by id - 1 */
	size_t nblocks;
	struct athread *threads;
	size_t nthreads;
	struct agrowth *growths;
	size_t ngrowths, capgrowths;
	char *maps;
	char exe[256], cmdline[512];
	uint64_t samples_kept;
};

/* ---------------------------------------------------------------------- */
/* Page -> first sample                                                    */
/* ---------------------------------------------------------------------- */

static size_t touch_slot(const struct touchmap *m, uint64_t page)
{
	uint64_t h = page * UINT64_C(0x9e3779b97f4a7c15);

	return (size_t)(h >> 20) & (m->cap - 1);
}

static int touch_grow(struct touchmap *m)
{
	struct touchmap n = {.cap = m->cap ? m->cap * 2 : 4096};

	n.e = calloc(n.cap, sizeof(*n.e));
	if (n.e == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < m->cap; i++) {
		size_t j;

		if (m->e[i].page == 0)
			continue;
		for (j = touch_slot(&n, m->e[i].page); n.e[j].page != 0; j = (j + 1) & (n.cap - 1))
			;
		n.e[j] = m->e[i];
		n.n++;
	}
	free(m->e);
	*m = n;
	return 0;
}

/* Keep the earliest sample of page (rings are drained out of time order). */
static void touch_put(struct touchmap *m, uint64_t page, const struct faults_sample *s)
{
	size_t j;

	if ((m->n + 1) * 2 > m->cap && touch_grow(m) != 0)
		return;
	for (j = touch_slot(m, page); m->e[j].page != 0; j = (j + 1) & (m->cap - 1)) {
		if (m->e[j].page == page) {
			if (s->time_ns < m->e[j].time_ns)
				m->e[j] = (struct touch){page, s->time_ns, s->tid, (int32_t)s->cpu};
			return;
		}
	}
	m->e[j] = (struct touch){page, s->time_ns, s->tid, (int32_t)s->cpu};
	m->n++;
}

static const struct touch *touch_get(const struct touchmap *m, uint64_t page)
{
	if (m->cap == 0)
		return NULL;
	for (size_t j = touch_slot(m, page); m->e[j].page != 0; j = (j + 1) & (m->cap - 1))
		if (m->e[j].page == page)
			return &m->e[j];
	return NULL;
}

/* Forget the samples of [lo, hi): its pages went back to the OS, and the
 * next fault there is a new first touch. Rebuilds the map. */
static void touch_forget(struct touchmap *m, uint64_t lo, uint64_t hi)
{
	struct touchmap n = {0};

	for (size_t i = 0; i < m->cap; i++) {
		const struct touch *t = &m->e[i];
		struct faults_sample s = {.tid = t->tid, .cpu = (uint32_t)t->cpu};

		if (t->page == 0 || (t->page >= lo && t->page < hi))
			continue;
		s.time_ns = t->time_ns;
		touch_put(&n, t->page, &s);
	}
	free(m->e);
	*m = n;
}

/* ---------------------------------------------------------------------- */
/* Threads                                                                 */
/* ---------------------------------------------------------------------- */

static struct audit_thread *thread_find(struct audit *a, pid_t tid, bool add)
{
	struct athread *n;

	for (size_t i = 0; i < a->nthreads; i++)
		if (a->threads[i].t.tid == tid)
			return &a->threads[i].t;
	if (!add || tid <= 0)
		return NULL;
	n = realloc(a->threads, (a->nthreads + 1) * sizeof(*n));
	if (n == NULL)
		return NULL;
	a->threads = n;
	memset(&n[a->nthreads], 0, sizeof(n[0]));
	n[a->nthreads].t.tid = tid;
	n[a->nthreads].t.cpu = -1;
	n[a->nthreads].t.node = -1;
	return &n[a->nthreads++].t;
}

/* The threads alive now: refresh their CPU, node, affinity and name. */
static int threads_refresh(struct audit *a)
{
	struct topology_thread *tt = NULL;
	size_t n = 0;
	int rc;

	if (!a->have_topo)
		return 0;
	rc = topology_threads(&a->topo, a->pid, &tt, &n, NULL, 0);
	if (rc != 0)
		return rc;
	for (size_t i = 0; i < a->nthreads; i++)
		a->threads[i].t.alive = false;
	for (size_t i = 0; i < n; i++) {
		struct audit_thread *t = thread_find(a, tt[i].tid, true);

		if (t == NULL)
			continue;
		t->alive = true;
		t->cpu = tt[i].cpu;
		t->node = tt[i].node;
		t->affinity = tt[i].affinity;
		memcpy(t->name, tt[i].name, sizeof(t->name));
		t->name[sizeof(t->name) - 1] = '\0';
		stats_mask_controls(t->name);
	}
	free(tt);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Samples                                                                 */
/* ---------------------------------------------------------------------- */

static void fault_node(struct audit *a, pid_t tid, int cpu);

static void on_sample(const struct faults_sample *s, void *arg)
{
	struct audit *a = arg;

	/* Before the region is known (launch mode, until the shim set up)
	 * every sample is kept; touch_prune() drops the rest once it is. */
	if (a->region_hi != 0 && (s->addr < a->region_lo || s->addr >= a->region_hi))
		return;
	a->samples_kept++;
	touch_put(&a->pages, s->addr & ~(uint64_t)(PAGE - 1), s);
	touch_put(&a->huge, s->addr & ~(uint64_t)(HUGE_PAGE - 1), s);
	if (a->region_hi == 0)
		return; /* touch_prune() counts these, once it knows which are ours */
	fault_node(a, s->tid, (int)s->cpu);
}

/* Note that thread tid faulted a page of the region on cpu. */
static void fault_node(struct audit *a, pid_t tid, int cpu)
{
	struct audit_thread *t;
	int node;

	node = a->have_topo ? topology_cpu_node(&a->topo, cpu) : -1;
	t = thread_find(a, tid, true);
	if (t != NULL && node >= 0 && node < TOPOLOGY_MAX_NODES)
		t->fault_nodes |= (topology_nodeset_t)1 << node;
}

/* The region became known: drop samples outside it. */
static void touch_prune(struct audit *a)
{
	touch_forget(&a->pages, 0, a->region_lo);
	touch_forget(&a->pages, a->region_hi, UINT64_MAX);
	touch_forget(&a->huge, 0, a->region_lo & ~(uint64_t)(HUGE_PAGE - 1));
	touch_forget(&a->huge, a->region_hi, UINT64_MAX);
	for (size_t i = 0; i < a->pages.cap; i++)
		if (a->pages.e[i].page != 0)
			fault_node(a, a->pages.e[i].tid, a->pages.e[i].cpu);
}

static void drain(struct audit *a)
{
	if (a->faults == NULL)
		return;
	faults_drain(a->faults, on_sample, a);
	if (a->mode == AUDIT_ATTACH)
		faults_rescan(a->faults, on_sample, a, NULL, 0);
}

/* ---------------------------------------------------------------------- */
/* The segment: block table and growth records                             */
/* ---------------------------------------------------------------------- */

/* Forget the segment read so far: the process exec'd (a shell that runs
 * the command with exec, say) and has a new one, with new blocks. */
static void seg_reset(struct audit *a)
{
	if (!a->have_seg)
		return;
	close(a->seg_fd);
	a->seg_fd = -1;
	a->have_seg = false;
	for (size_t i = 0; i < a->nblocks; i++)
		if (a->blocks[i].have_pl)
			placement_free(&a->blocks[i].pl);
	free(a->blocks);
	a->blocks = NULL;
	a->nblocks = 0;
	a->ngrowths = 0;
	a->next_rec = 1;
	a->region_lo = a->region_hi = 0;
}

/* The newest segment file of pid in the run directory, opened into a
 * unless it is the one already open. */
static int seg_find(struct audit *a)
{
	char prefix[32], best[NAME_MAX + 1] = "", path[PATH_MAX + NAME_MAX + 2];
	uint64_t best_nonce = 0;
	struct dirent *d;
	struct stat st;
	DIR *dir;
	int fd, rc;

	dir = opendir(a->run_dir);
	if (dir == NULL)
		return -errno;
	snprintf(prefix, sizeof(prefix), "%d-", (int)a->pid);
	while ((d = readdir(dir)) != NULL) {
		size_t len = strlen(d->d_name);
		uint64_t nonce;

		if (strncmp(d->d_name, prefix, strlen(prefix)) != 0 || len < 5 ||
		    strcmp(d->d_name + len - 4, SCRATCH_SEG_SUFFIX) != 0)
			continue;
		nonce = strtoull(d->d_name + strlen(prefix), NULL, 10);
		if (best[0] == '\0' || nonce > best_nonce) {
			best_nonce = nonce;
			snprintf(best, sizeof(best), "%s", d->d_name);
		}
	}
	closedir(dir);
	if (best[0] == '\0')
		return -ENOENT;
	if (best_nonce <= a->seg_nonce)
		return 0; /* the open one, or one from before an exec */
	seg_reset(a);
	snprintf(path, sizeof(path), "%s/%s", a->run_dir, best);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	rc = segread_open(&(struct segread_src){.fd = fd}, (uint64_t)st.st_size, &a->seg, NULL, 0);
	if (rc != 0 || a->seg.pid != a->pid) {
		close(fd);
		return rc != 0 ? rc : -EINVAL;
	}
	a->seg_fd = fd;
	a->seg_nonce = best_nonce;
	a->have_seg = true;
	snprintf(a->exe, sizeof(a->exe), "%s", a->seg.exe);
	snprintf(a->cmdline, sizeof(a->cmdline), "%s", a->seg.cmdline);
	stats_mask_controls(a->exe);
	stats_mask_controls(a->cmdline);
	return 0;
}

static void on_record(void *ctx, const struct segread_record *r)
{
	struct audit *a = ctx;
	struct agrowth *g;

	if (a->ngrowths == a->capgrowths) {
		size_t cap = a->capgrowths ? a->capgrowths * 2 : 256;

		g = realloc(a->growths, cap * sizeof(*g));
		if (g == NULL)
			return;
		a->growths = g;
		a->capgrowths = cap;
	}
	g = &a->growths[a->ngrowths++];
	g->seq = r->seq;
	g->tid = r->tid;
	g->nframes = r->nframes;
	memcpy(g->frames, r->frames, sizeof(g->frames));
}

/* A block's entry changed: a block that gave its pages back, or was carved
 * again, starts a new life, and its old samples and placement go. */
static void block_update(struct audit *a, struct ablock *k, const struct segread_block *b)
{
	bool reborn = k->seen && (b->growth != k->b.growth || b->start != k->b.start);

	if (b->state == SCRATCH_SEG_BLK_EMPTY && k->seen && k->b.state != SCRATCH_SEG_BLK_EMPTY)
		reborn = true;
	if (reborn && b->state != SCRATCH_SEG_BLK_EMPTY) {
		touch_forget(&a->pages, k->b.start, k->b.start + k->b.capacity);
		placement_free(&k->pl);
		k->have_pl = false;
	}
	k->b = *b;
	k->seen = true;
}

static int blocks_refresh(struct audit *a)
{
	struct segread_block *b;
	uint32_t n = 0;
	uint64_t base, size;
	int rc;

	if (!a->have_seg)
		return -ENODATA;
	if (a->region_hi == 0 && segread_region(&a->seg, &base, &size) == 0) {
		a->region_lo = base;
		a->region_hi = base + size;
		touch_prune(a);
	}
	b = malloc((size_t)a->seg.block_slots * sizeof(*b) + 1);
	if (b == NULL)
		return -ENOMEM;
	rc = segread_blocks(&a->seg, b, a->seg.block_slots, &n, NULL);
	if (rc == 0 && n > 0 && b[n - 1].id > a->nblocks) {
		struct ablock *nb = realloc(a->blocks, b[n - 1].id * sizeof(*nb));

		if (nb == NULL) {
			rc = -ENOMEM;
			goto out;
		}
		memset(nb + a->nblocks, 0, (b[n - 1].id - a->nblocks) * sizeof(*nb));
		a->blocks = nb;
		a->nblocks = b[n - 1].id;
	}
	for (uint32_t i = 0; rc == 0 && i < n; i++)
		block_update(a, &a->blocks[b[i].id - 1], &b[i]);
	if (rc == 0 && a->seg.ring_slots > 0)
		segread_drain(&a->seg, &a->next_rec, &a->lost_rec, UINT64_MAX, a->gone, on_record,
		              a);
out:
	free(b);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* Placement passes                                                        */
/* ---------------------------------------------------------------------- */

static void tier_off(struct audit *a, enum audit_tier_id t, int e, const char *why)
{
	if (!a->tiers[t].on && a->tiers[t].reason[0] != '\0')
		return;
	a->tiers[t].on = false;
	a->tiers[t].error = e;
	snprintf(a->tiers[t].reason, sizeof(a->tiers[t].reason), "%s", why);
	stats_mask_controls(a->tiers[t].reason);
}

/* Read the placement of every block that holds pages; a block that went
 * EMPTY keeps the last reading of its life. */
static int placement_pass(struct audit *a)
{
	char err[256];
	char *maps;
	int rc = 0;

	for (size_t i = 0; i < a->nblocks; i++) {
		struct ablock *k = &a->blocks[i];
		struct placement pl;

		if (!k->seen || k->b.state == SCRATCH_SEG_BLK_EMPTY)
			continue;
		drain(a); /* a long pass must not let the rings fill */
		rc = placement_read(a->pid, k->b.start, k->b.capacity, PLACEMENT_HUGE, &pl, err,
		                    sizeof(err));
		if (rc == -ESRCH)
			return rc;
		if (rc != 0) {
			tier_off(a, AUDIT_TIER_PLACEMENT, rc, err);
			return rc;
		}
		if (k->have_pl)
			placement_free(&k->pl);
		k->pl = pl;
		k->have_pl = true;
	}
	a->placement_reads++;
	a->last_place_ns = stats_mono_ns();
	/* the maps, for the call sites: libraries loaded since show up */
	snprintf(err, sizeof(err), "/proc/%d/maps", (int)a->pid);
	maps = stats_read_file(err, MAPS_MAX, NULL);
	if (maps != NULL) {
		free(a->maps);
		a->maps = maps;
	}
	return 0;
}

/* Everything the process shows now: samples, table, threads, placement. */
static int refresh(struct audit *a, bool place)
{
	int rc;

	drain(a);
	seg_find(a);
	blocks_refresh(a);
	rc = threads_refresh(a);
	if (rc == -ESRCH)
		return rc;
	if (place && a->tiers[AUDIT_TIER_PLACEMENT].on)
		rc = placement_pass(a);
	return rc == -ESRCH ? rc : 0;
}

/* ---------------------------------------------------------------------- */
/* Session                                                                 */
/* ---------------------------------------------------------------------- */

static struct audit *audit_new(enum audit_mode mode, const struct audit_opts *o, char *err,
                               size_t errlen)
{
	struct audit *a = calloc(1, sizeof(*a));
	char terr[256];
	int rc;

	if (a == NULL) {
		stats_fail(err, errlen, ENOMEM, "out of memory");
		return NULL;
	}
	a->mode = mode;
	a->o = *o;
	if (a->o.interval_ms == 0)
		a->o.interval_ms = 200;
	if (a->o.seconds == 0)
		a->o.seconds = 5;
	a->seg_fd = -1;
	a->next_rec = 1;
	a->exit_status = -1;
	for (int t = 0; t < AUDIT_TIERS; t++)
		a->tiers[t].on = true;
	/* launch mode: made now if missing, as the shim would make it */
	rc = stats_run_dir(o->run_dir, mode == AUDIT_LAUNCH, a->run_dir, sizeof(a->run_dir), terr,
	                   sizeof(terr));
	if (rc != 0)
		a->run_dir[0] = '\0';
	rc = topology_load(o->sysfs, &a->topo, terr, sizeof(terr));
	a->have_topo = rc == 0;
	if (!a->have_topo)
		tier_off(a, AUDIT_TIER_USE, rc, terr);
	a->started_ns = stats_realtime_ns();
	return a;
}

/* Seize the launched child for its exit stop alone. */
static void seize(struct audit *a, pid_t child)
{
	a->traced = ptrace(PTRACE_SEIZE, child, NULL,
	                   (void *)(uintptr_t)(PTRACE_O_TRACEEXIT | PTRACE_O_TRACEEXEC |
	                                       PTRACE_O_EXITKILL)) == 0;
}

/*
 * Start argv without sampling (the sampler was refused): fork, exec, and
 * report an exec failure through a close-on-exec pipe, so that on success
 * the command runs and on failure nothing is left.
 */
static int spawn(char *const argv[], pid_t *ret_child, char *err, size_t errlen)
{
	int p[2], e = 0, status;
	ssize_t n;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) != 0)
		return stats_fail(err, errlen, errno, "pipe: %s", strerror(errno));
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		execvp(argv[0], argv);
		e = errno;
		if (write(p[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(p[1]);
	if (pid < 0) {
		close(p[0]);
		return stats_fail(err, errlen, errno, "fork: %s", strerror(errno));
	}
	do
		n = read(p[0], &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(p[0]);
	if (n <= 0) {
		*ret_child = pid;
		return 0;
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return stats_fail(err, errlen, e, "cannot run %s: %s", argv[0], strerror(e));
}

/*
 * Ring pages per event: a ring that fills between two drains loses
 * samples, and a placement pass over a large block takes a while. Root
 * gets 4 MiB rings (within 32 MiB over all CPUs); others get what
 * perf_event_mlock_kb grants without a charge (516 KiB with the header).
 */
static unsigned ring_pages(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned n = 1024;

	if (geteuid() != 0)
		return 128;
	while (cpus > 0 && n > 64 && (uint64_t)n * (uint64_t)cpus > 8192)
		n /= 2;
	return n;
}

/*
 * A short command's segment would be gone (its destructors unlink it)
 * before a poll found it: ask the command to keep it (keep_segment:true
 * added to SCRATCH_CONF, unless the user set keep_segment), and remove it
 * at the end, in audit_close().
 */
static int keep_segments(struct audit *a)
{
	const char *conf = getenv("SCRATCH_CONF");
	char buf[4096];

	if (conf != NULL && strstr(conf, "keep_segment") != NULL)
		return 0; /* the user's choice stands */
	snprintf(buf, sizeof(buf), "%s%skeep_segment:true", conf != NULL ? conf : "",
	         conf != NULL && *conf != '\0' ? "," : "");
	if (setenv("SCRATCH_CONF", buf, 1) != 0)
		return -errno;
	a->unlink_segs = true;
	return 0;
}

/* Remove the segments the command kept for us: its pid's, made since the
 * audit began (the name's nonce is their creation time). */
static void unlink_segments(struct audit *a)
{
	char prefix[32], path[PATH_MAX + NAME_MAX + 2];
	uint64_t since = a->started_ns;
	struct dirent *d;
	DIR *dir;

	if (!a->unlink_segs || a->pid <= 0 || a->run_dir[0] == '\0')
		return;
	dir = opendir(a->run_dir);
	if (dir == NULL)
		return;
	snprintf(prefix, sizeof(prefix), "%d-", (int)a->pid);
	while ((d = readdir(dir)) != NULL) {
		size_t len = strlen(d->d_name);

		if (strncmp(d->d_name, prefix, strlen(prefix)) != 0 || len < 5 ||
		    strcmp(d->d_name + len - 4, SCRATCH_SEG_SUFFIX) != 0 ||
		    strtoull(d->d_name + strlen(prefix), NULL, 10) < since)
			continue;
		snprintf(path, sizeof(path), "%s/%s", a->run_dir, d->d_name);
		unlink(path);
	}
	closedir(dir);
}

/* The command line until the segment tells: argv joined by spaces. */
static void cmdline_of(struct audit *a, char *const argv[])
{
	size_t at = 0;

	for (int i = 0; argv[i] != NULL && at < sizeof(a->cmdline) - 1; i++)
		at += (size_t)snprintf(a->cmdline + at, sizeof(a->cmdline) - at, "%s%s",
		                       i ? " " : "", argv[i]);
	snprintf(a->exe, sizeof(a->exe), "%s", argv[0]);
	stats_mask_controls(a->cmdline);
	stats_mask_controls(a->exe);
}

int audit_launch(char *const argv[], const struct audit_opts *o, audit_t **ret, pid_t *ret_child,
                 char *err, size_t errlen)
{
	struct faults_opts fo = {0};
	char ferr[256] = "";
	struct audit *a;
	pid_t child = 0;
	int rc;

	if (argv == NULL || argv[0] == NULL)
		return stats_fail(err, errlen, EINVAL, "no command");
	a = audit_new(AUDIT_LAUNCH, o, err, errlen);
	if (a == NULL)
		return -ENOMEM;
	if (o->preload != NULL && setenv("LD_PRELOAD", o->preload, 1) != 0) {
		audit_close(a);
		return stats_fail(err, errlen, errno, "setenv: %s", strerror(errno));
	}
	if (keep_segments(a) != 0) {
		audit_close(a);
		return stats_fail(err, errlen, ENOMEM, "setenv: %s", strerror(errno));
	}
	rc = faults_probe(ferr, sizeof(ferr));
	fo.ring_pages = ring_pages();
	if (rc == 0)
		rc = faults_launch(argv, &fo, &a->faults, &child, ferr, sizeof(ferr));
	if (rc != 0 && fo.ring_pages != 0 && strncmp(ferr, "cannot run ", 11) != 0) {
		fo.ring_pages = 0; /* the default rings, where larger ones were refused */
		rc = faults_launch(argv, &fo, &a->faults, &child, ferr, sizeof(ferr));
	}
	if (rc != 0 && strncmp(ferr, "cannot run ", 11) == 0) {
		stats_fail(err, errlen, -rc, "%s", ferr);
		audit_close(a);
		return rc;
	}
	if (rc != 0) {
		tier_off(a, AUDIT_TIER_FIRST_TOUCH, rc, ferr);
		a->faults = NULL;
		rc = spawn(argv, &child, err, errlen);
		if (rc != 0) {
			audit_close(a);
			return rc;
		}
	}
	a->pid = child;
	cmdline_of(a, argv);
	seize(a, child);
	*ret = a;
	*ret_child = child;
	return 0;
}

int audit_attach(pid_t pid, const struct audit_opts *o, audit_t **ret, char *err, size_t errlen)
{
	struct faults_opts fo = {.ring_pages = ring_pages()};
	char ferr[256] = "";
	struct audit *a;
	int rc;

	if (pid <= 0)
		return stats_fail(err, errlen, EINVAL, "invalid pid %d", (int)pid);
	if (kill(pid, 0) != 0 && errno == ESRCH)
		return stats_fail(err, errlen, ESRCH, "no such process: %d", (int)pid);
	if (kill(pid, 0) != 0 && errno == EPERM)
		return stats_fail(err, errlen, EPERM,
		                  "not permitted: process %d belongs to another user", (int)pid);
	a = audit_new(AUDIT_ATTACH, o, err, errlen);
	if (a == NULL)
		return -ENOMEM;
	a->pid = pid;
	rc = seg_find(a);
	if (rc == 0 && segread_region(&a->seg, &a->region_lo, &a->region_hi) == 0) {
		a->region_hi += a->region_lo;
		fo.lo = (uintptr_t)a->region_lo;
		fo.hi = (uintptr_t)a->region_hi;
	}
	rc = faults_attach(pid, &fo, &a->faults, ferr, sizeof(ferr));
	if (rc != 0 && rc != -ESRCH) {
		fo.ring_pages = 0;
		rc = faults_attach(pid, &fo, &a->faults, ferr, sizeof(ferr));
	}
	if (rc == -ESRCH) {
		audit_close(a);
		return stats_fail(err, errlen, ESRCH, "no such process: %d", (int)pid);
	}
	if (rc != 0) {
		a->faults = NULL;
		tier_off(a, AUDIT_TIER_FIRST_TOUCH, rc, ferr);
	}
	rc = refresh(a, true);
	if (rc == -ESRCH) {
		audit_close(a);
		return stats_fail(err, errlen, ESRCH, "no such process: %d", (int)pid);
	}
	*ret = a;
	return 0;
}

static void touches_clear(struct audit *a)
{
	free(a->pages.e);
	free(a->huge.e);
	memset(&a->pages, 0, sizeof(a->pages));
	memset(&a->huge, 0, sizeof(a->huge));
	for (size_t i = 0; i < a->nthreads; i++)
		a->threads[i].t.fault_nodes = 0;
}

static bool stop_signal(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

/* The launched child stopped or ended: its exit stop gets the last
 * placement pass, any other stop is let go as it came. */
static void child_event(struct audit *a, int status)
{
	if (WIFEXITED(status) || WIFSIGNALED(status)) {
		a->gone = a->reaped = true;
		a->exit_status = status;
		return;
	}
	if (!WIFSTOPPED(status))
		return;
	if (status >> 16 == PTRACE_EVENT_EXIT) {
		refresh(a, true);
		ptrace(PTRACE_CONT, a->pid, NULL, NULL);
	} else if (status >> 16 == PTRACE_EVENT_EXEC) {
		/* A new image (sh -c 'exec cmd'): the old one's samples are
		 * drained against its region, then every sample is kept until
		 * the new image's segment names its region. */
		drain(a);
		seg_reset(a);
		touches_clear(a); /* the old address space is gone */
		/* only a segment made after the exec is the new image's */
		if (a->seg_nonce < stats_realtime_ns())
			a->seg_nonce = stats_realtime_ns();
		ptrace(PTRACE_CONT, a->pid, NULL, NULL);
	} else if (status >> 16 == PTRACE_EVENT_STOP && stop_signal(WSTOPSIG(status))) {
		/* a group-stop (SIGSTOP, ^Z): it stays stopped until SIGCONT */
		ptrace(PTRACE_LISTEN, a->pid, NULL, NULL);
	} else if (status >> 16 == PTRACE_EVENT_STOP) {
		/* a seized tracee's trap on a job-control change (SIGCONT) */
		ptrace(PTRACE_CONT, a->pid, NULL, NULL);
	} else {
		ptrace(PTRACE_CONT, a->pid, NULL, (void *)(uintptr_t)WSTOPSIG(status));
	}
}

/* Launch mode: handle what the child did; true once it was reaped. */
static bool child_check(struct audit *a)
{
	int status;
	pid_t r;

	while (!a->reaped && (r = waitpid(a->pid, &status, WNOHANG | __WALL)) != 0) {
		if (r < 0) {
			if (errno == EINTR)
				continue;
			a->gone = a->reaped = true;
			break;
		}
		child_event(a, status);
	}
	return a->reaped;
}

static void nap(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};

	nanosleep(&ts, NULL);
}

int audit_poll(audit_t *a, int timeout_ms)
{
	bool place;
	int rc;

	if (a->gone)
		return -ESRCH;
	if (a->mode == AUDIT_LAUNCH && child_check(a))
		goto out_gone;
	if (a->faults != NULL && faults_live(a->faults) > 0)
		faults_wait(a->faults, timeout_ms);
	else
		nap(timeout_ms);
	if (a->mode == AUDIT_LAUNCH && child_check(a))
		goto out_gone;
	place = stats_mono_ns() - a->last_place_ns >= (uint64_t)a->o.interval_ms * 1000000u;
	rc = refresh(a, place);
	if (rc == -ESRCH && a->mode == AUDIT_ATTACH)
		goto out_gone;
	return 0;
out_gone:
	a->gone = true;
	drain(a);
	blocks_refresh(a);
	a->ended_ns = stats_realtime_ns();
	return -ESRCH;
}

void audit_set_exit(audit_t *a, int status)
{
	a->exit_status = status;
	a->gone = a->reaped = true;
}

/* The end of an attach-mode window: one last pass while it runs. */
static void finish(struct audit *a)
{
	if (!a->gone)
		refresh(a, true);
	drain(a);
	if (a->ended_ns == 0)
		a->ended_ns = stats_realtime_ns();
}

void audit_close(audit_t *a)
{
	if (a == NULL)
		return;
	if (a->faults != NULL)
		faults_close(a->faults);
	unlink_segments(a);
	if (a->seg_fd >= 0)
		close(a->seg_fd);
	for (size_t i = 0; i < a->nblocks; i++)
		if (a->blocks[i].have_pl)
			placement_free(&a->blocks[i].pl);
	free(a->blocks);
	free(a->threads);
	free(a->growths);
	free(a->pages.e);
	free(a->huge.e);
	free(a->maps);
	topology_free(&a->topo);
	free(a);
}

int audit_collect(pid_t pid, const struct audit_opts *o, struct audit_result *ret, char *err,
                  size_t errlen)
{
	uint64_t end;
	audit_t *a;
	int rc = audit_attach(pid, o, &a, err, errlen);

	if (rc != 0)
		return rc;
	end = stats_mono_ns() + (uint64_t)a->o.seconds * 1000000000u;
	while (stats_mono_ns() < end && audit_poll(a, 100) == 0)
		;
	rc = audit_result(a, ret, err, errlen);
	audit_close(a);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* The join                                                                */
/* ---------------------------------------------------------------------- */

const char *audit_evidence_name(enum audit_evidence e)
{
	static const char *const n[] = {"placement measured", "first touch sampled",
	                                "use by lease"};

	return (unsigned)e < 3 ? n[e] : "unknown";
}

const char *audit_kind_name(enum audit_kind k)
{
	static const char *const n[] = {"cross_touch", "reused_remote", "placement_differs",
	                                "thread_moved"};

	return (unsigned)k < AUDIT_KINDS ? n[k] : "unknown";
}

const char *audit_tier_name(enum audit_tier_id t)
{
	static const char *const n[] = {"placement", "first_touch", "use", "sites"};

	return (unsigned)t < AUDIT_TIERS ? n[t] : "unknown";
}

/* What the join of one block found, before findings are merged. */
struct block_tally {
	pid_t allocator, holder;
	int holder_node;
	pid_t users[2 + SCRATCH_SEG_BLOCK_FREERS];
	unsigned nusers;
	pid_t touchers[AUDIT_MAX_TIDS];
	unsigned ntouchers, more_touchers;
	uint64_t cross;        /* first touched by another than the allocator */
	uint64_t cross_remote; /* of those, off the holder's node */
	uint64_t reuse[2 + SCRATCH_SEG_BLOCK_FREERS]; /* per user: off its node, not its touch */
	uint64_t differs;                             /* not on the toucher's node */
	uint64_t unsampled_remote;                    /* toucher unknown, off the holder's node */
	int differs_from, differs_to;
};

struct join {
	struct audit *a;
	struct audit_result *r;
	struct symbolizer *sym;
	size_t capfindings, capsites;
};

static int node_of(struct audit *a, pid_t tid)
{
	const struct audit_thread *t = tid > 0 ? thread_find(a, tid, false) : NULL;

	return t != NULL ? t->node : -1;
}

static const char *name_of(struct audit *a, pid_t tid)
{
	const struct audit_thread *t = tid > 0 ? thread_find(a, tid, false) : NULL;

	return t != NULL && t->name[0] != '\0' ? t->name : "?";
}

static void add_tid(pid_t *set, unsigned *n, unsigned *more, unsigned cap, pid_t tid)
{
	for (unsigned i = 0; i < *n; i++)
		if (set[i] == tid)
			return;
	if (*n < cap)
		set[(*n)++] = tid;
	else if (more != NULL)
		(*more)++;
}

/* The block's users: its owner, its last lessee, its remote freers. */
static void block_users(const struct segread_block *b, struct block_tally *t)
{
	unsigned cap = sizeof(t->users) / sizeof(t->users[0]);

	t->allocator = b->carver != 0 ? b->carver : b->owner;
	t->holder = b->lessee != 0 ? b->lessee : b->owner != 0 ? b->owner : b->carver;
	if (t->holder != 0)
		add_tid(t->users, &t->nusers, NULL, cap, t->holder);
	if (b->owner != 0)
		add_tid(t->users, &t->nusers, NULL, cap, b->owner);
	for (unsigned i = 0; i < b->nfreers && i < SCRATCH_SEG_BLOCK_FREERS; i++)
		if (b->freers[i] > 0)
			add_tid(t->users, &t->nusers, NULL, cap, b->freers[i]);
}

static bool is_user(const struct block_tally *t, pid_t tid)
{
	for (unsigned i = 0; i < t->nusers; i++)
		if (t->users[i] == tid)
			return true;
	return false;
}

/* Append a run to blk, merging with the last one when it continues it. */
static int run_add(struct audit_block *blk, size_t *cap, const struct audit_run *run)
{
	struct audit_run *last = blk->nruns > 0 ? &blk->runs[blk->nruns - 1] : NULL;

	if (last != NULL && last->start + last->bytes == run->start && last->node == run->node &&
	    last->toucher == run->toucher && last->touch_node == run->touch_node) {
		last->bytes += run->bytes;
		return 0;
	}
	if (blk->nruns == *cap) {
		size_t n = *cap ? *cap * 2 : 8;
		struct audit_run *r = realloc(blk->runs, n * sizeof(*r));

		if (r == NULL)
			return -ENOMEM;
		blk->runs = r;
		*cap = n;
	}
	blk->runs[blk->nruns++] = *run;
	return 0;
}

/* The first toucher of page: its own sample, or on a wholly huge-backed
 * block the sample of its 2 MiB page (one fault placed it all). */
static const struct touch *first_touch(struct audit *a, uint64_t page, bool huge)
{
	const struct touch *t = touch_get(&a->pages, page);

	if (t == NULL && huge)
		t = touch_get(&a->huge, page & ~(uint64_t)(HUGE_PAGE - 1));
	return t;
}

/* One present page of a block into the result, the tally and the threads. */
static void page_join(struct join *j, struct block_tally *t, int node, const struct touch *tt,
                      int touch_node)
{
	struct audit *a = j->a;
	struct audit_result *r = j->r;

	r->present_bytes += PAGE;
	if (tt != NULL)
		r->sampled_bytes += PAGE;
	else
		r->unknown_bytes += PAGE;
	*audit_cell(&r->touch, touch_node, t->holder_node) += PAGE;
	*audit_cell(&r->placed, node, t->holder_node) += PAGE;
	for (unsigned i = 0; i < t->nusers; i++) {
		struct audit_thread *u = thread_find(a, t->users[i], true);

		if (u == NULL)
			continue;
		u->used_bytes += PAGE;
		if (u->node >= 0 && node != u->node) {
			u->remote_bytes += PAGE;
			if (tt == NULL || tt->tid != u->tid)
				t->reuse[i] += PAGE;
		}
	}
	if (tt == NULL) {
		if (t->holder_node >= 0 && node != t->holder_node)
			t->unsampled_remote += PAGE;
		return;
	}
	{
		struct audit_thread *w = thread_find(a, tt->tid, true);

		if (w != NULL) {
			w->first_touched += PAGE;
			if (!is_user(t, tt->tid))
				w->touched_for_others += PAGE;
		}
	}
	if (tt->tid != t->allocator) {
		t->cross += PAGE;
		if (t->holder_node >= 0 && node != t->holder_node)
			t->cross_remote += PAGE;
		add_tid(t->touchers, &t->ntouchers, &t->more_touchers, AUDIT_MAX_TIDS, tt->tid);
	}
	if (touch_node >= 0 && node != touch_node) {
		t->differs += PAGE;
		t->differs_from = touch_node;
		t->differs_to = node;
	}
}

/* Walk a block's placement page by page: runs, tallies, matrices. */
static int block_join(struct join *j, const struct ablock *k, struct audit_block *blk,
                      struct block_tally *t)
{
	struct audit *a = j->a;
	bool huge = k->pl.huge_strides > 0;
	size_t cap = 0;

	for (size_t i = 0; i < k->pl.nruns; i++) {
		const struct placement_run *pr = &k->pl.runs[i];

		for (uint64_t p = pr->start; p < pr->start + pr->length; p += PAGE) {
			const struct touch *tt = pr->node >= 0 ? first_touch(a, p, huge) : NULL;
			int tn = tt != NULL && a->have_topo ? topology_cpu_node(&a->topo, tt->cpu)
			                                    : -1;
			struct audit_run run = {p, PAGE, pr->node, tt != NULL ? tt->tid : 0, tn};

			if (run_add(blk, &cap, &run) != 0)
				return -ENOMEM;
			if (pr->node < 0)
				continue;
			blk->present += PAGE;
			if (pr->node < TOPOLOGY_MAX_NODES)
				blk->node_bytes[pr->node] += PAGE;
			page_join(j, t, pr->node, tt, tn);
		}
	}
	return 0;
}

/* ---- call sites ---- */

static bool internal_frame(const struct sym_info *si)
{
	const char *base = strrchr(si->module, '/');

	base = base != NULL ? base + 1 : si->module;
	return strncmp(base, "libscratch", 10) == 0 || strncmp(si->function, "scratch_", 8) == 0 ||
	       si->allocator;
}

static const struct agrowth *growth_of(const struct audit *a, uint64_t seq)
{
	size_t lo = 0, hi = a->ngrowths;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (a->growths[mid].seq < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < a->ngrowths && a->growths[lo].seq == seq ? &a->growths[lo] : NULL;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash != NULL ? slash + 1 : path;
}

/* Symbolize g's frames into site, the allocator's own frames left out. */
static void site_make(struct join *j, const struct agrowth *g, struct audit_site *site)
{
	memset(site, 0, sizeof(*site));
	for (uint32_t i = 0; i < g->nframes && i < AUDIT_MAX_FRAMES; i++) {
		struct audit_frame *f = &site->frames[site->nframes];
		struct sym_info si;
		bool ok = j->sym != NULL && sym_lookup(j->sym, g->frames[i], &si);

		if (ok && internal_frame(&si))
			continue;
		f->addr = g->frames[i];
		if (ok) {
			snprintf(f->function, sizeof(f->function), "%s", si.function);
			snprintf(f->file, sizeof(f->file), "%s", si.file);
			snprintf(f->module, sizeof(f->module), "%s", si.module);
			f->line = si.line;
			stats_mask_controls(f->function);
			stats_mask_controls(f->file);
			stats_mask_controls(f->module);
		}
		if (site->where[0] == '\0') {
			if (f->file[0] != '\0')
				snprintf(site->where, sizeof(site->where), "%s:%d", f->file,
				         f->line);
			else if (f->function[0] != '\0')
				snprintf(site->where, sizeof(site->where), "%s+0x%llx", f->function,
				         (unsigned long long)si.offset);
			else if (ok)
				snprintf(site->where, sizeof(site->where), "%s+0x%llx",
				         base_name(f->module), (unsigned long long)si.offset);
			else
				snprintf(site->where, sizeof(site->where), "0x%llx",
				         (unsigned long long)f->addr);
		}
		site->nframes++;
	}
}

static bool same_frames(const struct audit_site *x, const struct audit_site *y)
{
	if (x->nframes != y->nframes)
		return false;
	for (unsigned i = 0; i < x->nframes; i++)
		if (x->frames[i].addr != y->frames[i].addr)
			return false;
	return true;
}

/* The site index of a block's growth record, -1 when there is none. */
static int site_index(struct join *j, const struct segread_block *b)
{
	const struct agrowth *g = b->growth != 0 ? growth_of(j->a, b->growth) : NULL;
	struct audit_result *r = j->r;
	struct audit_site site;

	if (g == NULL)
		return -1;
	site_make(j, g, &site);
	for (size_t i = 0; i < r->nsites; i++)
		if (same_frames(&r->sites[i], &site))
			return (int)i;
	if (r->nsites == j->capsites) {
		size_t n = j->capsites ? j->capsites * 2 : 16;
		struct audit_site *s = realloc(r->sites, n * sizeof(*s));

		if (s == NULL)
			return -1;
		r->sites = s;
		j->capsites = n;
	}
	r->sites[r->nsites] = site;
	return (int)r->nsites++;
}

/* ---- findings ---- */

/* The finding of (kind, site, owner, node), new or to merge into. */
static struct audit_finding *finding_get(struct join *j, enum audit_kind kind, int site,
                                         pid_t owner, int node)
{
	struct audit_result *r = j->r;
	struct audit_finding *f;

	for (size_t i = 0; i < r->nfindings; i++) {
		f = &r->findings[i];
		if (f->kind == kind && f->site == site && f->owner == owner && f->node == node)
			return f;
	}
	if (r->nfindings == j->capfindings) {
		size_t n = j->capfindings ? j->capfindings * 2 : 16;

		f = realloc(r->findings, n * sizeof(*f));
		if (f == NULL)
			return NULL;
		r->findings = f;
		j->capfindings = n;
	}
	f = &r->findings[r->nfindings++];
	memset(f, 0, sizeof(*f));
	f->kind = kind;
	f->site = site;
	f->owner = owner;
	f->node = node;
	f->other_node = -1;
	return f;
}

static void finding_add(struct audit_finding *f, uint64_t bytes, uintptr_t block,
                        enum audit_evidence ev, bool risk)
{
	if (f->nblocks++ == 0)
		f->block = block;
	f->bytes += bytes;
	f->evidence = ev;
	f->risk = risk;
}

/* The node most of a block's present bytes sit on, -1 when none. */
static int main_node(const struct audit_block *blk)
{
	int best = -1;

	for (int n = 0; n < TOPOLOGY_MAX_NODES; n++)
		if (blk->node_bytes[n] > 0 &&
		    (best < 0 || blk->node_bytes[n] > blk->node_bytes[best]))
			best = n;
	return best;
}

static void block_findings(struct join *j, const struct audit_block *blk,
                           const struct block_tally *t)
{
	bool single = j->r->single_node;
	uint64_t cross = single ? t->cross : t->cross_remote;
	struct audit_finding *f;

	if (cross > 0 && (f = finding_get(j, AUDIT_CROSS_TOUCH, blk->site, t->allocator, -1))) {
		finding_add(f, cross, blk->start, AUDIT_EV_SAMPLED, single);
		f->other_node = t->holder_node;
		for (unsigned i = 0; i < t->ntouchers; i++)
			add_tid(f->tids, &f->ntids, &f->more_tids, AUDIT_MAX_TIDS, t->touchers[i]);
		f->more_tids += t->more_touchers;
	}
	for (unsigned i = 0; i < t->nusers; i++) {
		pid_t u = t->users[i];
		bool reused = blk->handovers > 0 || (u != blk->owner && u != t->allocator);
		uint64_t bytes = single ? (reused ? blk->present : 0) : t->reuse[i];

		if (!reused || bytes == 0)
			continue;
		f = finding_get(j, AUDIT_REUSED_REMOTE, blk->site, u, main_node(blk));
		if (f == NULL)
			continue;
		finding_add(f, bytes, blk->start, AUDIT_EV_LEASE, single);
		f->other_node = node_of(j->a, u);
		add_tid(f->tids, &f->ntids, &f->more_tids, AUDIT_MAX_TIDS, u);
	}
	/* No sample: placement and lease alone say the holder's pages sit
	 * elsewhere (who touched them is not known). */
	if (!single && t->unsampled_remote > 0 &&
	    (f = finding_get(j, AUDIT_CROSS_TOUCH, blk->site, t->allocator, main_node(blk)))) {
		finding_add(f, t->unsampled_remote, blk->start, AUDIT_EV_PLACEMENT, false);
		f->other_node = t->holder_node;
	}
	if (t->differs > 0 &&
	    (f = finding_get(j, AUDIT_PLACEMENT_DIFFERS, blk->site, t->allocator, t->differs_to))) {
		finding_add(f, t->differs, blk->start, AUDIT_EV_PLACEMENT, false);
		f->other_node = t->differs_from;
	}
}

/* Bytes t first touched that sit on another node than t's now. */
static uint64_t bytes_off_node(const struct audit_result *r, const struct audit_thread *t)
{
	uint64_t bytes = 0;

	for (size_t b = 0; b < r->nblocks; b++)
		for (size_t k = 0; k < r->blocks[b].nruns; k++) {
			const struct audit_run *u = &r->blocks[b].runs[k];

			if (u->toucher == t->tid && u->node >= 0 && u->node != t->node)
				bytes += u->bytes;
		}
	return bytes;
}

/* Threads whose faults came from another node than the one they run on:
 * the bytes they first touched that sit off their node now. */
static void moved_findings(struct join *j)
{
	struct audit *a = j->a;

	for (size_t i = 0; i < a->nthreads; i++) {
		struct audit_thread *t = &a->threads[i].t;
		topology_nodeset_t here = t->node >= 0 ? (topology_nodeset_t)1 << t->node : 0;
		struct audit_finding *f;
		uint64_t bytes;

		if (t->node < 0 || t->fault_nodes == 0 || (t->fault_nodes & ~here) == 0)
			continue;
		bytes = bytes_off_node(j->r, t);
		if (bytes == 0)
			continue;
		f = finding_get(j, AUDIT_THREAD_MOVED, -1, t->tid, t->node);
		if (f != NULL)
			finding_add(f, bytes, 0, AUDIT_EV_SAMPLED, j->r->single_node);
	}
}

static void tids_text(struct audit *a, const struct audit_finding *f, char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < f->ntids && at < len; i++) {
		const char *sep = i == 0                                     ? ""
		                  : (i + 1 == f->ntids && f->more_tids == 0) ? " and "
		                                                             : ", ";

		at += (size_t)snprintf(buf + at, len - at, "%s%d (%s)", sep, (int)f->tids[i],
		                       name_of(a, f->tids[i]));
	}
	if (f->more_tids > 0 && at < len)
		snprintf(buf + at, len - at, " and %u more", f->more_tids);
}

static void finding_text(struct join *j, struct audit_finding *f)
{
	const char *where = f->site >= 0 && j->r->sites[f->site].where[0] != '\0'
	                            ? j->r->sites[f->site].where
	                            : "an unknown site";
	char tids[160];
	size_t n;

	tids_text(j->a, f, tids, sizeof(tids));
	switch (f->kind) {
	case AUDIT_CROSS_TOUCH:
		if (f->evidence == AUDIT_EV_PLACEMENT)
			snprintf(f->text, sizeof(f->text),
			         "Buffer allocated by %d (%.64s) at %.160s, used on node %d, has "
			         "pages on "
			         "node %d (first toucher not sampled)",
			         (int)f->owner, name_of(j->a, f->owner), where, f->other_node,
			         f->node);
		else
			snprintf(f->text, sizeof(f->text),
			         "Buffer allocated by %d (%.64s) at %.160s, pages first touched by "
			         "%.160s",
			         (int)f->owner, name_of(j->a, f->owner), where, tids);
		snprintf(f->fix, sizeof(f->fix),
		         "allocate in the worker that first writes it; if every thread reads it, "
		         "bind or interleave only the shared weights");
		break;
	case AUDIT_REUSED_REMOTE:
		if (f->risk)
			snprintf(f->text, sizeof(f->text),
			         "Block reused by another thread: %.160s (allocated at %.160s)",
			         tids, where);
		else
			snprintf(f->text, sizeof(f->text),
			         "Block reused by a thread on another node: %.160s on node %d, its "
			         "pages "
			         "on node %d (allocated at %.160s)",
			         tids, f->other_node, f->node, where);
		snprintf(
		        f->fix, sizeof(f->fix),
		        "per-node pools, so that a block goes only to a thread on its pages' node; "
		        "or free blocks in the thread that allocated them");
		break;
	case AUDIT_PLACEMENT_DIFFERS:
		snprintf(f->text, sizeof(f->text),
		         "Placement differs from the first toucher's node: pages first touched on "
		         "node %d sit on node %d (allocated by %d at %.160s)",
		         f->other_node, f->node, (int)f->owner, where);
		snprintf(f->fix, sizeof(f->fix),
		         "check the memory policy (numactl, set_mempolicy), free memory on the "
		         "node, "
		         "THP and NUMA balancing; bind or interleave only the shared weights");
		break;
	case AUDIT_THREAD_MOVED:
		snprintf(f->text, sizeof(f->text),
		         "Thread moved node: %d (%.64s) first touched pages on other nodes, now on "
		         "node %d",
		         (int)f->owner, name_of(j->a, f->owner), f->node);
		snprintf(f->fix, sizeof(f->fix),
		         "pin the thread to its node's CPUs; per-node pools notice a moved thread");
		break;
	}
	n = strlen(f->text);
	if (f->risk && n < sizeof(f->text))
		snprintf(f->text + n, sizeof(f->text) - n, " (remote on a multi-node machine)");
	stats_mask_controls(f->text);
}

static int by_bytes(const void *x, const void *y)
{
	const struct audit_finding *a = x, *b = y;

	if (a->bytes != b->bytes)
		return a->bytes < b->bytes ? 1 : -1;
	return (int)a->kind - (int)b->kind;
}

static int by_tid(const void *x, const void *y)
{
	const struct audit_thread *a = x, *b = y;

	return (a->tid > b->tid) - (a->tid < b->tid);
}

static int matrices_new(struct audit_result *r)
{
	size_t cells = (size_t)(r->nodes + 1) * (r->nodes + 1);

	r->touch.nodes = r->placed.nodes = r->nodes;
	r->touch.bytes = calloc(cells, sizeof(uint64_t));
	r->placed.bytes = calloc(cells, sizeof(uint64_t));
	return r->touch.bytes != NULL && r->placed.bytes != NULL ? 0 : -ENOMEM;
}

static void result_head(struct audit *a, struct audit_result *r)
{
	r->mode = a->mode;
	r->pid = a->pid;
	snprintf(r->exe, sizeof(r->exe), "%s", a->exe);
	snprintf(r->cmdline, sizeof(r->cmdline), "%s", a->cmdline);
	r->started_ns = a->started_ns;
	r->ended_ns = a->ended_ns;
	r->exited = a->gone;
	r->exit_status = a->exit_status;
	r->nodes = a->have_topo && a->topo.nodes > 0 ? a->topo.nodes : 1;
	r->node_mask = a->have_topo ? a->topo.node_mask : 1;
	r->single_node = __builtin_popcountll(r->node_mask) <= 1;
	r->region_lo = (uintptr_t)a->region_lo;
	r->region_hi = (uintptr_t)a->region_hi;
	r->placement_reads = a->placement_reads;
	r->samples_kept = a->samples_kept;
	if (a->faults != NULL) {
		struct faults_stats st;

		faults_get_stats(a->faults, &st);
		r->samples = st.samples;
		r->samples_lost = st.lost;
	}
}

/* The tiers as the session left them, with what the data says. */
static void result_tiers(struct audit *a, struct audit_result *r)
{
	if (!a->have_seg)
		tier_off(a, AUDIT_TIER_USE, -ENOENT,
		         "no stats segment for the process: it does not run under libscratch with "
		         "stats on, or its run directory is another");
	else if (a->seg.block_slots == 0)
		tier_off(a, AUDIT_TIER_USE, -ENODATA,
		         "the segment has no block table (a libscratch older than the audit)");
	if (!a->tiers[AUDIT_TIER_USE].on)
		tier_off(a, AUDIT_TIER_PLACEMENT, -ENODATA,
		         "no block table: the pools' blocks are not known");
	if (a->have_seg && a->seg.ring_slots == 0)
		tier_off(a, AUDIT_TIER_SITES, -ENODATA, "the growth trace is off (trace:false)");
	else if (!a->have_seg)
		tier_off(a, AUDIT_TIER_SITES, -ENOENT, "no stats segment");
	if (a->faults != NULL && a->mode == AUDIT_ATTACH)
		snprintf(a->tiers[AUDIT_TIER_FIRST_TOUCH].reason, AUDIT_REASON_LEN,
		         "attach mode: first touches before the attach are unknown");
	memcpy(r->tiers, a->tiers, sizeof(r->tiers));
}

static int join_blocks(struct join *j)
{
	struct audit *a = j->a;
	struct audit_result *r = j->r;

	r->blocks = calloc(a->nblocks + 1, sizeof(*r->blocks));
	if (r->blocks == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < a->nblocks; i++) {
		const struct ablock *k = &a->blocks[i];
		struct audit_block *blk = &r->blocks[r->nblocks];
		struct block_tally t = {0};

		if (!k->seen || !k->have_pl)
			continue;
		block_users(&k->b, &t);
		t.holder_node = node_of(a, t.holder);
		blk->start = (uintptr_t)k->b.start;
		blk->capacity = k->b.capacity;
		blk->cls = k->b.cls;
		blk->state = k->b.state;
		blk->owner = k->b.owner;
		blk->lessee = k->b.lessee;
		for (unsigned f = 0; f < k->b.nfreers && f < SCRATCH_SEG_BLOCK_FREERS; f++)
			blk->freers[blk->nfreers++] = k->b.freers[f];
		blk->handovers = k->b.handovers;
		blk->site = site_index(j, &k->b);
		r->nblocks++;
		if (block_join(j, k, blk, &t) != 0)
			return -ENOMEM;
		if (blk->present > 0)
			block_findings(j, blk, &t);
	}
	return 0;
}

/* A thread that ended before a look at /proc saw it: its node is the
 * one all its sampled faults came from, when there is one. */
static void node_from_faults(struct audit_thread *t)
{
	if (t->node < 0 && t->fault_nodes != 0 && (t->fault_nodes & (t->fault_nodes - 1)) == 0)
		t->node = __builtin_ctzll(t->fault_nodes);
}

static int threads_out(struct audit *a, struct audit_result *r)
{
	r->threads = calloc(a->nthreads + 1, sizeof(*r->threads));
	if (r->threads == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < a->nthreads; i++)
		r->threads[i] = a->threads[i].t;
	r->nthreads = a->nthreads;
	qsort(r->threads, r->nthreads, sizeof(*r->threads), by_tid);
	return 0;
}

int audit_result(audit_t *a, struct audit_result *ret, char *err, size_t errlen)
{
	struct audit_result r = {0};
	struct join j = {.a = a, .r = &r};
	int rc;

	finish(a);
	result_head(a, &r);
	result_tiers(a, &r);
	/* per-thread figures are the join's: start from zero every time */
	for (size_t i = 0; i < a->nthreads; i++) {
		struct audit_thread *t = &a->threads[i].t;

		t->used_bytes = t->remote_bytes = t->first_touched = t->touched_for_others = 0;
	}
	for (size_t i = 0; i < a->nthreads; i++)
		node_from_faults(&a->threads[i].t);
	j.sym = a->maps != NULL ? sym_new(a->maps) : NULL;
	rc = matrices_new(&r);
	if (rc == 0)
		rc = join_blocks(&j);
	if (rc == 0 && a->faults != NULL)
		moved_findings(&j);
	sym_free(j.sym);
	if (rc == 0)
		rc = threads_out(a, &r);
	if (rc != 0) {
		audit_result_free(&r);
		return stats_fail(err, errlen, ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < r.nfindings; i++)
		finding_text(&j, &r.findings[i]);
	if (r.nfindings > 1)
		qsort(r.findings, r.nfindings, sizeof(*r.findings), by_bytes);
	*ret = r;
	return 0;
}

void audit_result_free(struct audit_result *r)
{
	if (r == NULL)
		return;
	for (size_t i = 0; i < r->nblocks; i++)
		free(r->blocks[i].runs);
	free(r->blocks);
	free(r->threads);
	free(r->sites);
	free(r->findings);
	free(r->touch.bytes);
	free(r->placed.bytes);
	memset(r, 0, sizeof(*r));
}
