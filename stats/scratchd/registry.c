/*
 * registry.c - scratchd's process table (registry.h): discovery, adoption,
 * sampling, trace draining, exit and pid-reuse detection, retention and
 * eviction.
 *
 * Segments are published as "<pid>-<nonce>.seg", renamed into place
 * complete; the daemon's inotify watch hands their names to
 * registry_adopt(), which validates each one (segread.c). Every interval
 * registry_sample() samples their counters into a bounded history, and
 * every tick (a tenth of the interval, at most 100 ms) registry_drain()
 * drains their trace rings so records are taken before a ring wraps. A
 * process is live while its pid exists with the start time of the segment
 * and still maps the segment; otherwise it is kept, final state and all,
 * for the retention period, and its file is removed unless it asked to be
 * kept.
 *
 * Bounded under churn: an entry starts small (REG_HIST_MIN samples, no
 * trace buffer) and its rings double on demand up to --history and
 * --trace-keep; at most --max-exited exited entries are kept (the oldest
 * go first); and the bytes entries keep never exceed --memory-budget
 * (registry.h states the equation). When a growth would pass the budget,
 * exited entries are evicted, oldest first; a need that still does not fit
 * (a new process, a larger thread table) then shrinks the rings of live
 * entries, largest first; what still does not fit is refused. Every sample
 * and record let go this way is counted, per entry and in total.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "registry.h"
#include "sys.h"
#include "text.h"

#define REG_MAX_RETIRED 1024

/* The table; reg.lock guards all of it (registry.h "Locking"). */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stopping;
	struct registry_conf conf;
	char run_dir[PATH_MAX];
	int run_dir_fd;
	struct registry_proc *procs;
	struct registry_rejected rejected[REGISTRY_MAX_REJECTED];
	uint32_t nrejected;
	char (*retired)[NAME_MAX + 1]; /* kept files already reported and expired */
	uint32_t nretired;
	uint64_t samples; /* sampling rounds done */

	/* Bounds under churn (see the file header). */
	uint64_t mem_used, mem_peak;
	uint32_t nexited;                     /* exited entries in reg.procs */
	uint64_t evicted_cap;                 /* exited entries evicted over --max-exited */
	uint64_t evicted_budget;              /* exited entries evicted for the budget */
	uint64_t refused;                     /* segments not adopted: no room in the budget */
	uint64_t hist_dropped, trace_dropped; /* sums of the per-process counts, evicted included */
} reg = {
        .lock = PTHREAD_MUTEX_INITIALIZER,
        .cond = PTHREAD_COND_INITIALIZER,
        .conf = REGISTRY_CONF_DEFAULT,
        .run_dir_fd = -1,
};

/* The run directory's descriptor, held from registry_open on, so the
 * daemon's count of descriptors at rest is its count at start. */
static int dirfd_cache(void)
{
	if (reg.run_dir_fd < 0)
		reg.run_dir_fd = open(reg.run_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return reg.run_dir_fd;
}

#define logmsg(...) text_log("scratchd", __VA_ARGS__)

/* ---------------------------------------------------------------------- */
/* Discovery                                                               */
/* ---------------------------------------------------------------------- */

static bool is_segment_name(const char *name)
{
	size_t n = strlen(name), s = strlen(SCRATCH_SEG_SUFFIX);

	return name[0] != '.' && n > s && strcmp(name + n - s, SCRATCH_SEG_SUFFIX) == 0;
}

static struct registry_proc *find_file(const char *name)
{
	for (struct registry_proc *p = reg.procs; p != NULL; p = p->next)
		if (strcmp(p->file, name) == 0)
			return p;
	return NULL;
}

static bool is_retired(const char *name)
{
	for (uint32_t i = 0; i < reg.nretired; i++)
		if (strcmp(reg.retired[i], name) == 0)
			return true;
	return false;
}

/* Remember a rejected file once (a later event for it replaces the entry). */
static void reject(const char *name, const char *why)
{
	uint32_t i;

	for (i = 0; i < reg.nrejected; i++)
		if (strcmp(reg.rejected[i].file, name) == 0)
			break;
	if (i == reg.nrejected) {
		if (reg.nrejected == REGISTRY_MAX_REJECTED) {
			memmove(&reg.rejected[0], &reg.rejected[1],
			        sizeof(reg.rejected[0]) * (REGISTRY_MAX_REJECTED - 1));
			i = REGISTRY_MAX_REJECTED - 1;
		} else {
			reg.nrejected++;
		}
		logmsg("%s: rejected: %s", name, why);
	}
	snprintf(reg.rejected[i].file, sizeof(reg.rejected[i].file), "%s", name);
	snprintf(reg.rejected[i].error, sizeof(reg.rejected[i].error), "%s", why);
}

static void unreject(const char *name)
{
	for (uint32_t i = 0; i < reg.nrejected; i++)
		if (strcmp(reg.rejected[i].file, name) == 0) {
			reg.rejected[i] = reg.rejected[--reg.nrejected];
			return;
		}
}

/* Free an entry (linked or not) and take its bytes off the budget. */
static void proc_free(struct registry_proc *p)
{
	reg.mem_used -= p->mem;
	if (!p->live)
		reg.nexited--;
	if (p->fd >= 0)
		close(p->fd);
	free(p->threads);
	free(p->owners);
	free(p->classes);
	free(p->hist);
	free(p->trace);
	free(p->maps);
	free(p);
}

static void retire(struct registry_proc *p);

/* ---------------------------------------------------------------------- */
/* Memory: the budget, eviction, rings that grow and shrink                */
/* ---------------------------------------------------------------------- */

/* The rings an entry starts with and is never shrunk below: a process
 * that lives a second takes a few samples and few growths. */
#define REG_HIST_MIN  8
#define REG_TRACE_MIN 16

static uint32_t hist_min(void)
{
	return reg.conf.history < REG_HIST_MIN ? reg.conf.history : REG_HIST_MIN;
}

static size_t proc_bytes(const struct registry_proc *p)
{
	return sizeof(*p) + (size_t)p->hist_cap * sizeof(*p->hist) +
	       (size_t)p->trace_cap * sizeof(*p->trace) +
	       (size_t)p->nthreads * sizeof(*p->threads) + (size_t)p->nowners * sizeof(*p->owners) +
	       (size_t)p->nclasses * sizeof(*p->classes) + p->maps_size;
}

/* Bring p's charge in line with what it holds now. */
static void charge(struct registry_proc *p)
{
	size_t now = proc_bytes(p);

	reg.mem_used = reg.mem_used - p->mem + now;
	p->mem = now;
	if (reg.mem_used > reg.mem_peak)
		reg.mem_peak = reg.mem_used;
}

static void proc_unlink(struct registry_proc *p)
{
	for (struct registry_proc **pp = &reg.procs; *pp != NULL; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			return;
		}
}

/*
 * Forget the exited entry that exited first, except keep (an entry a caller
 * is working on), and count it in *counter. False when there is none.
 * Unlinks in place: a loop over reg.procs stays valid as long as it reads
 * p->next after the call that may evict.
 */
static bool evict_oldest(const struct registry_proc *keep, uint64_t *counter)
{
	struct registry_proc *old = NULL;

	for (struct registry_proc *p = reg.procs; p != NULL; p = p->next)
		if (!p->live && p != keep && (old == NULL || p->exited_mono < old->exited_mono))
			old = p;
	if (old == NULL)
		return false;
	if (reg.conf.verbose)
		logmsg("%s: pid %d evicted (%s)", old->file, old->seg.pid,
		       counter == &reg.evicted_cap ? "--max-exited" : "--memory-budget");
	proc_unlink(old);
	retire(old);
	(*counter)++;
	return true;
}

/*
 * Grow a full ring of cap elements (oldest at index oldest) to new_cap:
 * the run from oldest to the end moves to the end of the larger buffer, so
 * the free slots open just before the oldest element, where the next
 * writes go. The caller adds new_cap - cap to its index of the oldest
 * element. NULL without memory (buf untouched).
 */
static void *ring_grow(void *buf, size_t elem, uint32_t cap, uint32_t new_cap, uint32_t oldest)
{
	char *b = realloc(buf, (size_t)new_cap * elem);

	if (b == NULL)
		return NULL;
	memmove(b + (size_t)(oldest + new_cap - cap) * elem, b + (size_t)oldest * elem,
	        (size_t)(cap - oldest) * elem);
	return b;
}

/* The newest min(len, new_cap) elements of a ring, in order from index 0
 * of a new buffer of new_cap (*ret_len of them). NULL without memory. */
static void *ring_keep_newest(const void *buf, size_t elem, uint32_t cap, uint32_t len,
                              uint32_t oldest, uint32_t new_cap, uint32_t *ret_len)
{
	uint32_t keep = len < new_cap ? len : new_cap;
	char *b = malloc((size_t)new_cap * elem);

	if (b == NULL)
		return NULL;
	for (uint32_t i = 0; i < keep; i++)
		memcpy(b + (size_t)i * elem,
		       (const char *)buf + (size_t)((oldest + len - keep + i) % cap) * elem, elem);
	*ret_len = keep;
	return b;
}

static bool shrink_hist(struct registry_proc *p)
{
	uint32_t cap = p->hist_cap / 2 < hist_min() ? hist_min() : p->hist_cap / 2, len;
	uint32_t oldest = (p->hist_pos + p->hist_cap - p->hist_len) % p->hist_cap;
	struct registry_sample *h =
	        ring_keep_newest(p->hist, sizeof(*h), p->hist_cap, p->hist_len, oldest, cap, &len);

	if (h == NULL)
		return false;
	p->hist_dropped += p->hist_len - len;
	reg.hist_dropped += p->hist_len - len;
	free(p->hist);
	p->hist = h;
	p->hist_cap = cap;
	p->hist_len = len;
	p->hist_pos = len % cap;
	charge(p);
	return true;
}

static bool shrink_trace(struct registry_proc *p)
{
	uint32_t cap = p->trace_cap / 2 < REG_TRACE_MIN ? REG_TRACE_MIN : p->trace_cap / 2, len;
	struct segread_record *t = ring_keep_newest(p->trace, sizeof(*t), p->trace_cap,
	                                            p->trace_len, p->trace_pos, cap, &len);

	if (t == NULL)
		return false;
	p->trace_dropped += p->trace_len - len;
	reg.trace_dropped += p->trace_len - len;
	free(p->trace);
	p->trace = t;
	p->trace_cap = cap;
	p->trace_len = len;
	p->trace_pos = 0;
	charge(p);
	return true;
}

/* Halve the larger ring of the live entry whose rings hold the most bytes
 * above their minimum. False when no live entry has any to give. */
static bool shrink_largest(void)
{
	struct registry_proc *big = NULL;
	size_t most = 0, h = 0, t = 0;

	for (struct registry_proc *p = reg.procs; p != NULL; p = p->next) {
		size_t ph = (size_t)(p->hist_cap - hist_min()) * sizeof(*p->hist);
		size_t pt = p->trace_cap > REG_TRACE_MIN
		                    ? (size_t)(p->trace_cap - REG_TRACE_MIN) * sizeof(*p->trace)
		                    : 0;

		if (p->live && ph + pt > most) {
			big = p;
			most = ph + pt;
			h = ph;
			t = pt;
		}
	}
	if (big == NULL)
		return false;
	return t >= h ? shrink_trace(big) : shrink_hist(big);
}

/*
 * Make room in the budget for extra more bytes of entry state. Exited
 * entries go first, oldest first (never keep, the entry asking); then,
 * when need is set, the rings of live entries shrink, largest first. A
 * want (need false: a ring growing) never shrinks another live entry.
 * Returns whether the bytes fit now; the caller charges them once
 * allocated.
 */
static bool mem_room(const struct registry_proc *keep, size_t extra, bool need)
{
	while (reg.mem_used + extra > reg.conf.budget && evict_oldest(keep, &reg.evicted_budget))
		;
	while (need && reg.mem_used + extra > reg.conf.budget && shrink_largest())
		;
	return reg.mem_used + extra <= reg.conf.budget;
}

/* Keep at most --max-exited exited entries. Call outside any loop over
 * reg.procs (it may evict any exited entry). */
static void enforce_exited_cap(void)
{
	while (reg.nexited > reg.conf.max_exited && evict_oldest(NULL, &reg.evicted_cap))
		;
}

/* ---------------------------------------------------------------------- */
/* Adoption                                                                */
/* ---------------------------------------------------------------------- */

static bool refresh_maps(struct registry_proc *p, bool *ret_empty);
static void sample(struct registry_proc *p);

/*
 * Open and validate a segment file of the run directory. Never follows a
 * symlink, opens only regular files owned by our uid, and O_NONBLOCK so a
 * FIFO planted there cannot hang the daemon. Under reg.lock.
 */
void registry_adopt(const char *name)
{
	char err[160];
	struct stat st;
	struct segread_src src = {.fd = -1};
	struct registry_proc *p;
	int fd, rc;

	if (!is_segment_name(name) || find_file(name) != NULL || is_retired(name))
		return;
	fd = openat(dirfd_cache(), name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		if (errno != ENOENT)
			reject(name, errno == ELOOP ? "a symbolic link" : strerror(errno));
		return;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
		reject(name, "not a regular file owned by this user");
		goto out_close;
	}
	src.fd = fd;
	/* The entry and its first history, as a need: a new process may
	 * shrink the rings of older ones. */
	if (!mem_room(NULL, sizeof(*p) + hist_min() * sizeof(*p->hist), true)) {
		reg.refused++;
		reject(name, "no room in scratchd's --memory-budget");
		goto out_close;
	}
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		goto out_close;
	rc = segread_open(&src, (uint64_t)st.st_size, &p->seg, err, sizeof(err));
	if (rc != 0) {
		reject(name, err);
		free(p);
		goto out_close;
	}
	unreject(name);
	snprintf(p->file, sizeof(p->file), "%s", name);
	p->fd = fd;
	p->live = true;
	p->seen_ns = sys_realtime_ns();
	p->next_seq = 1;
	p->hist_cap = hist_min();
	p->hist = calloc(p->hist_cap, sizeof(*p->hist));
	if (p->hist == NULL) {
		proc_free(p);
		return;
	}
	p->next = reg.procs;
	reg.procs = p;
	charge(p);
	/* Read the maps and take a first sample now: a request may come
	 * before the first sampling round, and should see the threads (and
	 * call sites need the maps). */
	{
		bool empty;

		(void)refresh_maps(p, &empty);
	}
	sample(p);
	if (reg.conf.verbose)
		logmsg("%s: pid %d %s", name, p->seg.pid, p->seg.exe);
	return;
out_close:
	close(fd);
}

void registry_rescan(void)
{
	DIR *d = opendir(reg.run_dir);
	struct dirent *e;

	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL)
		registry_adopt(e->d_name);
	closedir(d);
}

/* ---------------------------------------------------------------------- */
/* Sampling                                                                */
/* ---------------------------------------------------------------------- */

/* Keep the file-backed lines of /proc/PID/maps (what libdw needs to map
 * addresses back to ELF files); returns whether the segment is mapped.
 * Without room in the budget the previous lines stay. */
static bool refresh_maps(struct registry_proc *p, bool *ret_empty)
{
	char path[64];
	char *maps, *out, *line, *save = NULL;
	size_t len, o = 0;
	bool mapped = false;

	snprintf(path, sizeof(path), "/proc/%d/maps", p->seg.pid);
	maps = sys_read_file(path, 64u << 20, &len);
	*ret_empty = maps == NULL || len == 0;
	if (maps == NULL)
		return false;
	out = malloc(len + 1);
	if (out == NULL) {
		free(maps);
		return true;
	}
	for (line = strtok_r(maps, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
		const char *slash = strchr(line, '/');
		const char *base;

		if (slash == NULL)
			continue;
		base = strrchr(slash, '/');
		if (strncmp(base + 1, p->file, strlen(p->file)) == 0) {
			mapped = true;
			continue;
		}
		o += (size_t)sprintf(out + o, "%s\n", line);
	}
	out[o] = '\0';
	free(maps);
	if (o + 1 > p->maps_size && !mem_room(p, o + 1 - p->maps_size, true)) {
		free(out);
		return mapped;
	}
	maps = realloc(out, o + 1); /* keep only what is used */
	if (maps == NULL) {
		free(out);
		return mapped;
	}
	free(p->maps);
	p->maps = maps;
	p->maps_size = o + 1;
	charge(p);
	return mapped;
}

/* Why the process behind p is no longer live, or NULL while it is. */
static const char *liveness(struct registry_proc *p, const struct segread_dyn *d)
{
	uint64_t ticks;
	bool empty;
	int rc;

	if (d->exited)
		return "exit";
	rc = sys_proc_start_ticks(p->seg.pid, &ticks);
	if (rc == -ENOENT)
		return "gone";
	if (rc == 0 && ticks != p->seg.start_ticks)
		return "pid_reused";
	if (!refresh_maps(p, &empty))
		return empty ? "gone" : "exec";
	return NULL;
}

/* Seqlocked reads that may give up, each after SEGREAD_RETRIES retries,
 * in one sample of one process; beyond them every read gets one try. A
 * writer is inside a slot for a few stores, so an honest process uses
 * none of them; a segment whose sequence words stay odd would otherwise
 * hold reg.lock (and every request) for seconds per sample. */
#define REG_BUSY_BUDGET 8

/* One read's result: counts a give-up against the sample's budget. */
static int budget(struct registry_proc *p, int rc)
{
	if (rc == -EAGAIN && ++p->busy >= REG_BUSY_BUDGET)
		p->seg.retries = 0;
	return rc;
}

/* Replace *arr (of *n elements) with an exact copy of the first n of
 * fresh, when the budget has room (a need): false leaves *arr as it was.
 * fresh stays the caller's. */
static bool keep_table(struct registry_proc *p, void **arr, uint32_t *old_n, const void *fresh,
                       uint32_t n, size_t elem)
{
	void *copy = NULL;

	if (n > *old_n && !mem_room(p, (size_t)(n - *old_n) * elem, true))
		return false;
	if (n > 0 && (copy = malloc((size_t)n * elem)) == NULL)
		return false;
	if (n > 0)
		memcpy(copy, fresh, (size_t)n * elem);
	free(*arr);
	*arr = copy;
	*old_n = n;
	charge(p);
	return true;
}

/* Read the thread slots into p->threads; false when they could not be
 * kept (no memory, no room in the budget): the last sample's stay. */
static bool read_threads(struct registry_proc *p)
{
	uint32_t slots = p->seg.thread_slots ? p->seg.thread_slots : 1;
	struct segread_thread *t = calloc(slots, sizeof(*t));
	bool *used = calloc(slots, sizeof(*used));
	uint32_t n = 0, j = 0;
	bool ok;

	if (t == NULL || used == NULL || segread_threads_used(&p->seg, used) != 0) {
		free(t);
		free(used);
		return false;
	}
	for (uint32_t i = 0; i < p->seg.thread_slots; i++) {
		int rc = used[i] ? budget(p, segread_thread(&p->seg, i, &t[n])) : -ENOENT;

		if (rc == 0) {
			n++;
			continue;
		}
		if (rc != -EAGAIN)
			continue;
		/* Being rewritten: keep what the last sample saw. */
		while (j < p->nthreads && p->threads[j].index < i)
			j++;
		if (j < p->nthreads && p->threads[j].index == i)
			t[n++] = p->threads[j];
	}
	free(used);
	ok = keep_table(p, (void **)&p->threads, &p->nthreads, t, n, sizeof(*t));
	free(t);
	return ok;
}

/* Thread names change after the first pool use (pthread_setname_np):
 * refresh them from /proc while the process lives. */
static void refresh_names(struct registry_proc *p)
{
	for (uint32_t i = 0; i < p->nthreads; i++) {
		struct segread_thread *t = &p->threads[i];
		char path[96], *comm;
		size_t len;

		if (t->state != SCRATCH_SEG_LIVE)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", p->seg.pid, t->tid);
		comm = sys_read_file(path, 64, &len);
		if (comm == NULL)
			continue;
		if (len > 0 && comm[len - 1] == '\n')
			comm[--len] = '\0';
		snprintf(t->name, sizeof(t->name), "%s", comm);
		free(comm);
	}
}

static void read_owners(struct registry_proc *p)
{
	struct segread_owner *o = calloc(p->seg.owner_slots ? p->seg.owner_slots : 1, sizeof(*o));
	uint32_t n = 0;

	if (o == NULL)
		return;
	for (uint32_t i = 0; i < p->seg.owner_slots; i++)
		if (budget(p, segread_owner(&p->seg, i, &o[n])) == 0)
			n++;
	/* Most processes own nothing: keep only the owners there are. */
	(void)keep_table(p, (void **)&p->owners, &p->nowners, o, n, sizeof(*o));
	free(o);
}

/* The per size class figures (segment.h "Size classes"), kept like the
 * thread table: when they cannot be read or kept, the last sample's stay. */
static void read_classes(struct registry_proc *p)
{
	struct segread_class c[SCRATCH_SEG_MAX_CLASSES];
	int n;

	p->has_classes = p->seg.class_count != 0;
	if (!p->has_classes)
		return;
	n = budget(p, segread_classes(&p->seg, c, SCRATCH_SEG_MAX_CLASSES));
	if (n >= 0)
		(void)keep_table(p, (void **)&p->classes, &p->nclasses, c, (uint32_t)n,
		                 sizeof(c[0]));
}

static void read_sample(struct registry_proc *p)
{
	struct scratch__proc_counters again, prev = p->pc;

	/* A slot the pool reclaims is folded into proc->exited inside
	 * proc->seq: read proc around the slots and retry when it moved, so a
	 * thread is counted exactly once. */
	p->busy = 0;
	p->seg.retries = SEGREAD_RETRIES;
	for (int tries = 0; tries < 8; tries++) {
		if (budget(p, segread_proc(&p->seg, &p->pc)) != 0)
			memset(&p->pc, 0, sizeof(p->pc));
		if (!read_threads(p)) {
			/* The slots could not be kept: the counters that go
			 * with the last sample's slots stay too. */
			p->pc = prev;
			break;
		}
		if (budget(p, segread_proc(&p->seg, &again)) != 0 || again.seq == p->pc.seq ||
		    p->busy >= REG_BUSY_BUDGET)
			break;
	}
	if (p->live)
		refresh_names(p);
	read_owners(p);
	read_classes(p);
	segread_totals(p->threads, p->nthreads, &p->pc, &p->tot);
	p->sampled_ns = sys_realtime_ns();
	p->sampled_mono = sys_mono_ns();
}

/* Double a full history ring, up to --history, if the budget has room
 * (a want: it evicts exited entries, never shrinks live ones). */
static void grow_hist(struct registry_proc *p)
{
	uint32_t cap = p->hist_cap > reg.conf.history / 2 ? reg.conf.history : p->hist_cap * 2;
	struct registry_sample *h;

	if (cap <= p->hist_cap || !mem_room(p, (size_t)(cap - p->hist_cap) * sizeof(*h), false))
		return;
	h = ring_grow(p->hist, sizeof(*h), p->hist_cap, cap, p->hist_pos);
	if (h == NULL)
		return;
	/* hist_pos, the next write, is where the free slots opened. */
	p->hist = h;
	p->hist_cap = cap;
	charge(p);
}

/* A sample for the history: read, then keep the totals and the threads. */
static void sample(struct registry_proc *p)
{
	struct registry_sample *s;

	read_sample(p);
	if (p->hist_len == p->hist_cap)
		grow_hist(p);
	if (p->hist_len == p->hist_cap && p->hist_cap < reg.conf.history) {
		/* Full below --history: the oldest sample goes for the budget. */
		p->hist_dropped++;
		reg.hist_dropped++;
	}
	s = &p->hist[p->hist_pos];
	s->t_ns = p->sampled_ns;
	s->tot = p->tot;
	thread_points_fill(&s->threads, p->threads, p->nthreads);
	p->hist_pos = (p->hist_pos + 1) % p->hist_cap;
	if (p->hist_len < p->hist_cap)
		p->hist_len++;
}

/* Double the full kept-record ring (from REG_TRACE_MIN), up to --trace-keep,
 * if the budget has room (a want, as for the history). */
static bool grow_trace(struct registry_proc *p)
{
	uint32_t cap = p->trace_cap < REG_TRACE_MIN ? REG_TRACE_MIN : p->trace_cap * 2;
	struct segread_record *t;

	if (cap > reg.conf.trace_keep)
		cap = reg.conf.trace_keep;
	if (cap <= p->trace_cap || !mem_room(p, (size_t)(cap - p->trace_cap) * sizeof(*t), false))
		return false;
	t = ring_grow(p->trace, sizeof(*t), p->trace_cap, cap, p->trace_pos);
	if (t == NULL)
		return false;
	p->trace = t;
	if (p->trace_cap > 0)
		p->trace_pos += cap - p->trace_cap;
	p->trace_cap = cap;
	charge(p);
	return true;
}

static bool owner_known(const struct registry_proc *p, uint32_t id)
{
	for (uint32_t i = 0; i < p->nowners; i++)
		if (p->owners[i].id == id)
			return true;
	return false;
}

static void keep_record(void *ctx, const struct segread_record *r)
{
	struct registry_proc *p = ctx;
	uint32_t at;

	/* An owner registers before its first growth, so a record naming an
	 * owner we have not sampled yet means the table is newer than our
	 * copy: read it now, or the record would show no owner name. Once
	 * per drain: a hostile ring may name an unknown owner in every record. */
	if (r->owner != 0 && !p->owners_fresh && !owner_known(p, r->owner)) {
		read_owners(p);
		p->owners_fresh = true;
	}

	p->drained++;
	if (p->trace_len == p->trace_cap && !grow_trace(p) && p->trace_cap < reg.conf.trace_keep) {
		/* Full below --trace-keep (or no buffer at all): the record
		 * that goes, goes for the budget. */
		p->trace_dropped++;
		reg.trace_dropped++;
		if (p->trace_cap == 0)
			return;
	}
	if (p->trace_len < p->trace_cap) {
		at = (p->trace_pos + p->trace_len++) % p->trace_cap;
	} else {
		/* Our own buffer is full: the oldest record goes (readers see
		 * it through "first"). */
		at = p->trace_pos;
		p->trace_pos = (p->trace_pos + 1) % p->trace_cap;
	}
	p->trace[at] = *r;
}

static bool drain(struct registry_proc *p, bool final)
{
	uint64_t before = p->next_seq, lost = p->lost;
	struct segread_dyn d;
	int rc;

	if (p->seg.ring_slots == 0)
		return false;
	/* A record claimed but not written stops the drain. Its writer is a
	 * few stores from done, so one that stays unwritten for two seconds
	 * belongs to a thread that died (or a hostile writer): count it lost
	 * and move on. */
	bool force = final || (p->stall_since != 0 && sys_mono_ns() - p->stall_since > 2000000000u);

	p->owners_fresh = false;
	rc = segread_drain(&p->seg, &p->next_seq, &p->lost, UINT64_MAX, force, keep_record, p);
	/* New growths may come from code loaded since the maps were read
	 * (growths are rare, so rereading the maps then costs little). */
	if (p->next_seq != before && p->live && !final) {
		bool empty;

		(void)refresh_maps(p, &empty);
	}
	if (rc != -EAGAIN || p->next_seq != before)
		p->stall_since = 0;
	else if (p->stall_since == 0)
		p->stall_since = sys_mono_ns();
	if (rc == -EBADMSG && !p->head_warned) {
		logmsg("%s: trace ring head went backwards or out of range; not logged again",
		       p->file);
		p->head_warned = true;
	}
	if (segread_dyn(&p->seg, &d) == 0)
		p->head = d.ring_head;
	return p->next_seq != before || p->lost != lost;
}

static void mark_exited(struct registry_proc *p, const char *reason, const struct segread_dyn *d)
{
	struct stat st;

	p->live = false;
	reg.nexited++;
	p->reason = reason;
	p->exit_ns = d->exited && d->exit_ns != 0 ? d->exit_ns : sys_realtime_ns();
	p->exited_mono = sys_mono_ns();
	drain(p, true);
	sample(p);
	/* A dead process's file is stale unless it asked to be kept; the
	 * final state lives on in memory for the retention. */
	if (!(p->seg.flags & SCRATCH_SEG_F_KEEP) && fstat(p->fd, &st) == 0 && st.st_nlink > 0 &&
	    unlinkat(dirfd_cache(), p->file, 0) == 0)
		p->unlinked = true;
	/* Everything is copied out now: free the descriptor, so a host that
	 * forks thousands of short processes cannot exhaust ours. */
	close(p->fd);
	p->fd = -1;
	p->seg.src.fd = -1;
	p->seg.src.mem = NULL;
	p->seg.src.mem_size = 0;
	/* The maps only serve to symbolize kept records. */
	if (p->trace_len == 0) {
		free(p->maps);
		p->maps = NULL;
		p->maps_size = 0;
		charge(p);
	}
	if (reg.conf.verbose)
		logmsg("%s: pid %d no longer live (%s)", p->file, p->seg.pid, reason);
}

/* Forget an unlinked entry. Its name is remembered only while the file is
 * still there (kept, or not removable), so a rescan does not adopt it
 * again: under churn, removed files would fill the list for nothing. */
static void retire(struct registry_proc *p)
{
	if (reg.nretired < REG_MAX_RETIRED &&
	    faccessat(dirfd_cache(), p->file, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		snprintf(reg.retired[reg.nretired++], NAME_MAX + 1, "%s", p->file);
	proc_free(p);
}

/* A request wants the counters of now, not of the last round (interval
 * views divide by the time between samples): read a live process again
 * unless it was read in the last millisecond. Under reg.lock. */
void registry_refresh(struct registry_proc *p)
{
	if (p->live && sys_mono_ns() - p->sampled_mono > 1000000u)
		read_sample(p);
}

/* One sampling round: liveness, counters, history, retention, the cap on
 * exited entries. p->next is read after each step, since a step may evict
 * other (exited) entries. */
void registry_sample(void)
{
	uint64_t now = sys_mono_ns();

	for (struct registry_proc *p = reg.procs, *next; p != NULL; p = next) {
		struct segread_dyn d;
		const char *why;

		if (!p->live) {
			next = p->next;
			if (now - p->exited_mono >= reg.conf.retention_s * 1000000000u) {
				proc_unlink(p);
				retire(p);
			}
			continue;
		}
		if (segread_dyn(&p->seg, &d) != 0) {
			memset(&d, 0, sizeof(d));
			why = "gone";
		} else {
			why = liveness(p, &d);
		}
		if (why != NULL)
			mark_exited(p, why, &d);
		else
			sample(p);
		next = p->next;
	}
	enforce_exited_cap();
	reg.samples++;
	registry_wake();
}

void registry_drain(void)
{
	bool any = false;

	for (struct registry_proc *p = reg.procs; p != NULL; p = p->next)
		if (p->live)
			any |= drain(p, false);
	if (any)
		registry_wake();
}

/* ---------------------------------------------------------------------- */
/* The API: set-up, lookup, iteration, waiting                             */
/* ---------------------------------------------------------------------- */

int registry_open(const struct registry_conf *conf, const char *run_dir, char *err, size_t errlen)
{
	reg.conf = *conf;
	if (snprintf(reg.run_dir, sizeof(reg.run_dir), "%s", run_dir) >= (int)sizeof(reg.run_dir))
		return text_fail(err, errlen, ENAMETOOLONG, "run directory name too long");
	reg.retired = calloc(REG_MAX_RETIRED, sizeof(*reg.retired));
	if (reg.retired == NULL)
		return text_fail(err, errlen, ENOMEM, "out of memory");
	if (dirfd_cache() < 0) {
		int e = errno;

		free(reg.retired);
		reg.retired = NULL;
		return text_fail(err, errlen, e, "%s: %s", reg.run_dir, strerror(e));
	}
	return 0;
}

void registry_close(void)
{
	while (reg.procs != NULL) {
		struct registry_proc *p = reg.procs;

		reg.procs = p->next;
		proc_free(p);
	}
	free(reg.retired);
	reg.retired = NULL;
	reg.nretired = 0;
	if (reg.run_dir_fd >= 0)
		close(reg.run_dir_fd);
	reg.run_dir_fd = -1;
}

void registry_lock(void)
{
	pthread_mutex_lock(&reg.lock);
}

void registry_unlock(void)
{
	pthread_mutex_unlock(&reg.lock);
}

const struct registry_conf *registry_conf(void)
{
	return &reg.conf;
}

const char *registry_run_dir(void)
{
	return reg.run_dir;
}

struct registry_proc *registry_find(pid_t pid)
{
	struct registry_proc *best = NULL;

	for (struct registry_proc *p = reg.procs; p != NULL; p = p->next) {
		if (p->seg.pid != pid)
			continue;
		if (p->live)
			return p;
		if (best == NULL || p->exit_ns > best->exit_ns)
			best = p;
	}
	return best;
}

struct registry_proc *registry_find_file(const char *name)
{
	return find_file(name);
}

struct registry_proc *registry_next(const struct registry_proc *p)
{
	return p == NULL ? reg.procs : p->next;
}

/* Newest first within a pid. */
static int image_cmp(const void *a, const void *b)
{
	const struct registry_proc *x = *(const struct registry_proc *const *)a;
	const struct registry_proc *y = *(const struct registry_proc *const *)b;

	if (x->seg.pid != y->seg.pid)
		return x->seg.pid < y->seg.pid ? -1 : 1;
	if (x->seg.created_ns != y->seg.created_ns)
		return x->seg.created_ns > y->seg.created_ns ? -1 : 1;
	return (int)y->live - (int)x->live;
}

const struct registry_proc **registry_images(size_t *ret_n)
{
	const struct registry_proc **v;
	size_t n = 0, k = 0;

	*ret_n = 0;
	for (const struct registry_proc *p = reg.procs; p != NULL; p = p->next)
		n++;
	if (n == 0 || (v = malloc(n * sizeof(*v))) == NULL)
		return NULL;
	for (const struct registry_proc *p = reg.procs; p != NULL; p = p->next)
		v[k++] = p;
	qsort(v, n, sizeof(*v), image_cmp);
	k = 0;
	for (size_t i = 0; i < n; i++)
		if (k == 0 || v[k - 1]->seg.pid != v[i]->seg.pid)
			v[k++] = v[i];
	*ret_n = k;
	return v;
}

const struct segread_record *registry_record(const struct registry_proc *p, uint32_t i)
{
	return &p->trace[(p->trace_pos + i) % p->trace_cap];
}

/* A binary search: the kept records are in seq order. */
uint32_t registry_record_from(const struct registry_proc *p, uint64_t since)
{
	uint32_t lo = 0, hi = p->trace_len;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (registry_record(p, mid)->seq < since)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

uint64_t registry_first_seq(const struct registry_proc *p)
{
	return p->trace_len ? registry_record(p, 0)->seq : p->next_seq;
}

const struct registry_sample *registry_history(const struct registry_proc *p, uint32_t i)
{
	return &p->hist[(p->hist_pos + p->hist_cap - p->hist_len + i) % p->hist_cap];
}

const char *registry_owner_name(const struct registry_proc *p, uint32_t id)
{
	for (uint32_t i = 0; i < p->nowners; i++)
		if (p->owners[i].id == id)
			return p->owners[i].name;
	return NULL;
}

void registry_counts(struct registry_counts *ret)
{
	uint32_t n = 0;

	for (const struct registry_proc *p = reg.procs; p != NULL; p = p->next)
		n++;
	*ret = (struct registry_counts){
	        .budget = reg.conf.budget,
	        .mem_used = reg.mem_used,
	        .mem_peak = reg.mem_peak,
	        .max_exited = reg.conf.max_exited,
	        .live = n - reg.nexited,
	        .exited = reg.nexited,
	        .rejected = reg.nrejected,
	        .evicted_cap = reg.evicted_cap,
	        .evicted_budget = reg.evicted_budget,
	        .refused = reg.refused,
	        .hist_dropped = reg.hist_dropped,
	        .trace_dropped = reg.trace_dropped,
	        .samples = reg.samples,
	};
}

const struct registry_rejected *registry_rejected(uint32_t i)
{
	return i < reg.nrejected ? &reg.rejected[i] : NULL;
}

int registry_wait(const struct timespec *until)
{
	if (until == NULL)
		return pthread_cond_wait(&reg.cond, &reg.lock);
	return pthread_cond_timedwait(&reg.cond, &reg.lock, until);
}

void registry_wake(void)
{
	pthread_cond_broadcast(&reg.cond);
}

void registry_stop(void)
{
	reg.stopping = true;
	registry_wake();
}

bool registry_stopping(void)
{
	return reg.stopping;
}
