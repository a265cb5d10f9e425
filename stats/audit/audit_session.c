/*
 * audit_session.c - the memory-locality audit's session (audit.h): attach
 * to a process or launch one, then poll, until audit_close().
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
 * Each tier that cannot be had is turned off here, with the reason.
 *
 * What it gathered stays in struct audit (audit_int.h) for the join
 * (audit_join.c). Nothing here touches the process's memory: placement
 * only reads, and the samples are the kernel's.
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
#include "audit_int.h"
#include "faults.h"
#include "placement.h"
#include "rundir.h"
#include "segread.h"
#include "sys.h"
#include "text.h"
#include "topology.h"

#define MAPS_MAX (8u << 20)

/* ---------------------------------------------------------------------- */
/* Threads                                                                 */
/* ---------------------------------------------------------------------- */

struct audit_thread *audit__thread_find(struct audit *a, pid_t tid, bool add)
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
	n[a->nthreads].t.fault_last_node = -1;
	return &n[a->nthreads++].t;
}

int audit__thread_node(struct audit *a, pid_t tid)
{
	const struct audit_thread *t = tid > 0 ? audit__thread_find(a, tid, false) : NULL;

	return t != NULL ? t->node : -1;
}

const char *audit__thread_name(struct audit *a, pid_t tid)
{
	const struct audit_thread *t = tid > 0 ? audit__thread_find(a, tid, false) : NULL;

	return t != NULL && t->name[0] != '\0' ? t->name : "?";
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
		struct audit_thread *t = audit__thread_find(a, tt[i].tid, true);

		if (t == NULL)
			continue;
		t->alive = true;
		t->cpu = tt[i].cpu;
		t->node = tt[i].node;
		t->affinity = tt[i].affinity;
		t->cpu_ticks = tt[i].cpu_ticks;
		memcpy(t->name, tt[i].name, sizeof(t->name));
		t->name[sizeof(t->name) - 1] = '\0';
		text_mask_controls(t->name);
	}
	free(tt);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Samples                                                                 */
/* ---------------------------------------------------------------------- */

/* Note that thread tid faulted a page on cpu at time ns. */
static void fault_node(struct audit *a, pid_t tid, int cpu, uint64_t ns)
{
	struct audit_thread *t;
	int node;

	node = a->have_topo ? topology_cpu_node(&a->topo, cpu) : -1;
	t = audit__thread_find(a, tid, true);
	if (t == NULL || node < 0 || node >= TOPOLOGY_MAX_NODES)
		return;
	t->fault_nodes |= (topology_nodeset_t)1 << node;
	/* the rings are drained one CPU after another: the latest by time */
	if (t->fault_last_node < 0 || ns >= t->fault_last_ns) {
		t->fault_last_node = node;
		t->fault_last_ns = ns;
	}
}

/* Every sample of the whole process is kept (touch.h): the pools' pages
 * and every other mapping's alike. */
static void on_sample(const struct faults_sample *s, void *arg)
{
	struct audit *a = arg;

	a->samples_kept += !s->major;
	touch_add(&a->touch, s->addr, s->tid, (int)s->cpu, s->time_ns, s->major);
	if (!s->major)
		fault_node(a, s->tid, (int)s->cpu, s->time_ns);
}

void audit__drain(struct audit *a)
{
	if (a->faults == NULL)
		return;
	faults_drain(a->faults, on_sample, a);
	if (a->mode == AUDIT_ATTACH)
		faults_rescan(a->faults, on_sample, a, NULL, 0);
	touch_flush(&a->touch);
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
	text_mask_controls(a->exe);
	text_mask_controls(a->cmdline);
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
		touch_forget(&a->touch, k->b.start, k->b.start + k->b.capacity);
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

const char *audit_tier_name(enum audit_tier_id t)
{
	static const char *const n[] = {"placement", "first_touch", "use", "sites", "page_cache"};

	return (unsigned)t < AUDIT_TIERS ? n[t] : "unknown";
}

void audit__tier_off(struct audit *a, enum audit_tier_id t, int e, const char *why)
{
	if (!a->tiers[t].on && a->tiers[t].reason[0] != '\0')
		return;
	a->tiers[t].on = false;
	a->tiers[t].error = e;
	snprintf(a->tiers[t].reason, sizeof(a->tiers[t].reason), "%s", why);
	text_mask_controls(a->tiers[t].reason);
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
		audit__drain(a); /* a long pass must not let the rings fill */
		rc = placement_read(a->pid, k->b.start, k->b.capacity, PLACEMENT_HUGE, &pl, err,
		                    sizeof(err));
		if (rc == -ESRCH)
			return rc;
		if (rc != 0) {
			audit__tier_off(a, AUDIT_TIER_PLACEMENT, rc, err);
			return rc;
		}
		if (k->have_pl)
			placement_free(&k->pl);
		k->pl = pl;
		k->have_pl = true;
	}
	a->placement_reads++;
	a->last_place_ns = sys_mono_ns();
	/* the maps, for the call sites: libraries loaded since show up */
	snprintf(err, sizeof(err), "/proc/%d/maps", (int)a->pid);
	maps = sys_read_file(err, MAPS_MAX, NULL);
	if (maps != NULL) {
		free(a->maps);
		a->maps = maps;
	}
	return 0;
}

/* Whether a whole-process pass is due: the last one is at least 2 s old
 * and 20 times its own length (a pass over 12 GiB takes about 0.4 s; the
 * host must not pay more than a few percent of a core for it). */
static bool inventory_due(struct audit *a)
{
	uint64_t gap = a->inv_ns * 20 > 2000000000u ? a->inv_ns * 20 : 2000000000u;

	return !a->have_inv || sys_mono_ns() - a->last_inv_ns >= gap;
}

/* Everything the process shows now: samples, table, threads, placement;
 * with final, a whole-process pass whatever the time. */
static int refresh(struct audit *a, bool place, bool final)
{
	int rc;

	audit__drain(a);
	seg_find(a);
	blocks_refresh(a);
	rc = threads_refresh(a);
	if (rc == -ESRCH)
		return rc;
	audit__inventory_look(a);
	if (place && a->tiers[AUDIT_TIER_PLACEMENT].on)
		rc = placement_pass(a);
	if (rc != -ESRCH && place && (final || inventory_due(a)))
		rc = audit__inventory_read(a);
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
		text_fail(err, errlen, ENOMEM, "out of memory");
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
	rc = rundir_resolve(o->run_dir, mode == AUDIT_LAUNCH, a->run_dir, sizeof(a->run_dir), terr,
	                    sizeof(terr));
	if (rc != 0)
		a->run_dir[0] = '\0';
	rc = topology_load(o->sysfs, &a->topo, terr, sizeof(terr));
	a->have_topo = rc == 0;
	if (!a->have_topo)
		audit__tier_off(a, AUDIT_TIER_USE, rc, terr);
	a->started_ns = sys_realtime_ns();
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
		return text_fail(err, errlen, errno, "pipe: %s", strerror(errno));
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
		return text_fail(err, errlen, errno, "fork: %s", strerror(errno));
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
	return text_fail(err, errlen, e, "cannot run %s: %s", argv[0], strerror(e));
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

/* Add key:value to SCRATCH_CONF unless the user set key (whose choice
 * stands). Returns whether it was added, or -errno. */
static int conf_add(const char *key, const char *value)
{
	const char *conf = getenv("SCRATCH_CONF");
	char buf[4096];

	if (conf != NULL && strstr(conf, key) != NULL)
		return 0;
	if ((size_t)snprintf(buf, sizeof(buf), "%s%s%s:%s", conf != NULL ? conf : "",
	                     conf != NULL && *conf != '\0' ? "," : "", key, value) >= sizeof(buf))
		return -E2BIG;
	if (setenv("SCRATCH_CONF", buf, 1) != 0)
		return -errno;
	return 1;
}

/*
 * The command's configuration for the audit, in SCRATCH_CONF, each unless
 * the user set it:
 * - a short command's segment would be gone (its destructors unlink it)
 *   before a poll found it: ask the command to keep it (keep_segment:true),
 *   and remove it at the end, in audit_close();
 * - the pools populate the new pages of a thread that writes its buffers
 *   whole, on the thread that takes them, where the audit would see
 *   neither the fault nor the thread that writes: populate:false leaves
 *   each page to its first writer, as the pools do on a machine of two
 *   nodes or more, so that the first touches are the program's own.
 */
static int audit_conf(struct audit *a)
{
	int rc = conf_add("keep_segment", "true");

	if (rc < 0)
		return rc;
	a->unlink_segs = rc == 1;
	rc = conf_add("populate", "false");
	return rc < 0 ? rc : 0;
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
	text_mask_controls(a->cmdline);
	text_mask_controls(a->exe);
}

/* Attach mode, until a segment tells: the command line and program from
 * /proc (a process without the shim has no segment). */
static void cmdline_proc(struct audit *a)
{
	char path[64];
	size_t len = 0, at = 0;
	char *t;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)a->pid);
	t = sys_read_file(path, sizeof(a->cmdline), &len);
	if (t != NULL) {
		for (size_t i = 0; i < len && at + 1 < sizeof(a->cmdline); i++)
			a->cmdline[at++] = t[i] == '\0' ? ' ' : t[i];
		while (at > 0 && a->cmdline[at - 1] == ' ')
			at--;
		a->cmdline[at] = '\0';
		free(t);
	}
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)a->pid);
	n = readlink(path, a->exe, sizeof(a->exe) - 1);
	a->exe[n > 0 ? n : 0] = '\0';
	text_mask_controls(a->cmdline);
	text_mask_controls(a->exe);
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
		return text_fail(err, errlen, EINVAL, "no command");
	a = audit_new(AUDIT_LAUNCH, o, err, errlen);
	if (a == NULL)
		return -ENOMEM;
	if (o->preload != NULL && setenv("LD_PRELOAD", o->preload, 1) != 0) {
		audit_close(a);
		return text_fail(err, errlen, errno, "setenv: %s", strerror(errno));
	}
	rc = audit_conf(a);
	if (rc != 0) {
		audit_close(a);
		return text_fail(err, errlen, -rc, "SCRATCH_CONF: %s", strerror(-rc));
	}
	rc = faults_probe(ferr, sizeof(ferr));
	fo.ring_pages = ring_pages();
	fo.major = true;
	if (rc == 0)
		rc = faults_launch(argv, &fo, &a->faults, &child, ferr, sizeof(ferr));
	if (rc != 0 && fo.ring_pages != 0 && strncmp(ferr, "cannot run ", 11) != 0) {
		fo.ring_pages = 0; /* the default rings, where larger ones were refused */
		rc = faults_launch(argv, &fo, &a->faults, &child, ferr, sizeof(ferr));
	}
	if (rc != 0 && strncmp(ferr, "cannot run ", 11) == 0) {
		text_fail(err, errlen, -rc, "%s", ferr);
		audit_close(a);
		return rc;
	}
	if (rc != 0) {
		audit__tier_off(a, AUDIT_TIER_FIRST_TOUCH, rc, ferr);
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
	struct faults_opts fo = {.ring_pages = ring_pages(), .major = true};
	char ferr[256] = "";
	struct audit *a;
	int rc;

	if (pid <= 0)
		return text_fail(err, errlen, EINVAL, "invalid pid %d", (int)pid);
	if (kill(pid, 0) != 0 && errno == ESRCH)
		return text_fail(err, errlen, ESRCH, "no such process: %d", (int)pid);
	if (kill(pid, 0) != 0 && errno == EPERM)
		return text_fail(err, errlen, EPERM,
		                 "not permitted: process %d belongs to another user", (int)pid);
	a = audit_new(AUDIT_ATTACH, o, err, errlen);
	if (a == NULL)
		return -ENOMEM;
	a->pid = pid;
	cmdline_proc(a);
	rc = seg_find(a);
	if (rc == 0 && segread_region(&a->seg, &a->region_lo, &a->region_hi) == 0)
		a->region_hi += a->region_lo;
	rc = faults_attach(pid, &fo, &a->faults, ferr, sizeof(ferr));
	if (rc != 0 && rc != -ESRCH) {
		fo.ring_pages = 0;
		rc = faults_attach(pid, &fo, &a->faults, ferr, sizeof(ferr));
	}
	if (rc == -ESRCH) {
		audit_close(a);
		return text_fail(err, errlen, ESRCH, "no such process: %d", (int)pid);
	}
	if (rc != 0) {
		a->faults = NULL;
		audit__tier_off(a, AUDIT_TIER_FIRST_TOUCH, rc, ferr);
	}
	rc = refresh(a, true, true);
	if (rc == -ESRCH) {
		audit_close(a);
		return text_fail(err, errlen, ESRCH, "no such process: %d", (int)pid);
	}
	*ret = a;
	return 0;
}

static void touches_clear(struct audit *a)
{
	touch_free(&a->touch);
	audit__inventory_free(a);
	for (size_t i = 0; i < a->nthreads; i++) {
		a->threads[i].t.fault_nodes = 0;
		a->threads[i].t.fault_last_node = -1;
		a->threads[i].t.fault_last_ns = 0;
	}
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
		refresh(a, true, true);
		ptrace(PTRACE_CONT, a->pid, NULL, NULL);
	} else if (status >> 16 == PTRACE_EVENT_EXEC) {
		/* A new image (sh -c 'exec cmd'): the old one's samples are
		 * drained against its region, then every sample is kept until
		 * the new image's segment names its region. */
		audit__drain(a);
		seg_reset(a);
		touches_clear(a); /* the old address space is gone */
		/* only a segment made after the exec is the new image's */
		if (a->seg_nonce < sys_realtime_ns())
			a->seg_nonce = sys_realtime_ns();
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
	place = sys_mono_ns() - a->last_place_ns >= (uint64_t)a->o.interval_ms * 1000000u;
	rc = refresh(a, place, false);
	if (rc == -ESRCH && a->mode == AUDIT_ATTACH)
		goto out_gone;
	return 0;
out_gone:
	a->gone = true;
	audit__drain(a);
	blocks_refresh(a);
	a->ended_ns = sys_realtime_ns();
	return -ESRCH;
}

void audit_set_exit(audit_t *a, int status)
{
	a->exit_status = status;
	a->gone = a->reaped = true;
}

/* The end of an attach-mode window: one last pass while it runs. */
void audit__finish(struct audit *a)
{
	if (!a->gone)
		refresh(a, true, true);
	audit__drain(a);
	if (a->ended_ns == 0)
		a->ended_ns = sys_realtime_ns();
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
	touch_free(&a->touch);
	audit__inventory_free(a);
	free(a->maps);
	topology_free(&a->topo);
	free(a);
}
