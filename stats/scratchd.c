/*
 * scratchd.c - the stats daemon: discovery, sampling, trace draining.
 *
 * Watches the run directory with inotify for published segments
 * ("<pid>-<nonce>.seg", renamed into place complete), validates each one
 * (segread.c), then every interval samples its counters into a bounded
 * history, and every tick (a tenth of the interval, at most 100 ms) drains
 * its trace ring so records are taken before the ring wraps. A process is
 * live while its pid exists with the start time of the segment and still
 * maps the segment; otherwise it is kept, final state and all, for the
 * retention period, and its file is removed unless it asked to be kept.
 * The HTTP side is serve.c.
 *
 * Bounded under churn: an entry starts small (SD_HIST_MIN samples, no trace
 * buffer) and its rings double on demand up to --history and --trace-keep;
 * at most --max-exited exited entries are kept (the oldest go first); and
 * the bytes entries keep never exceed --memory-budget (scratchd.h states the
 * equation). When a growth would pass the budget, exited entries are
 * evicted, oldest first; a need that still does not fit (a new process, a
 * larger thread table) then shrinks the rings of live entries, largest
 * first; what still does not fit is refused. Every sample and record let go
 * this way is counted, per entry and in total.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common.h"
#include "scratchd.h"

struct sd_state sd = {
        .lock = PTHREAD_MUTEX_INITIALIZER,
        .cond = PTHREAD_COND_INITIALIZER,
        .interval_ms = 1000,
        .retention_s = 300,
        .history = 600,
        .trace_keep = 16384,
        .budget = 64u << 20,
        .max_exited = 256,
};

static bool verbose;
static int run_dir_fd = -1;

static int dirfd_cache(void)
{
	if (run_dir_fd < 0)
		run_dir_fd = open(sd.run_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return run_dir_fd;
}

__attribute__((format(printf, 1, 2))) static void logmsg(const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* Lines carry names from segments and the command line: no control
	 * character of theirs reaches a terminal or splits a log line. */
	stats_mask_controls(line);
	fprintf(stderr, "scratchd: %s\n", line);
}

/* ---------------------------------------------------------------------- */
/* Discovery                                                               */
/* ---------------------------------------------------------------------- */

static bool is_segment_name(const char *name)
{
	size_t n = strlen(name), s = strlen(SCRATCH_SEG_SUFFIX);

	return name[0] != '.' && n > s && strcmp(name + n - s, SCRATCH_SEG_SUFFIX) == 0;
}

static struct sd_proc *find_file(const char *name)
{
	for (struct sd_proc *p = sd.procs; p != NULL; p = p->next)
		if (strcmp(p->file, name) == 0)
			return p;
	return NULL;
}

static bool is_retired(const char *name)
{
	for (uint32_t i = 0; i < sd.nretired; i++)
		if (strcmp(sd.retired[i], name) == 0)
			return true;
	return false;
}

/* Remember a rejected file once (a later event for it replaces the entry). */
static void reject(const char *name, const char *why)
{
	uint32_t i;

	for (i = 0; i < sd.nrejected; i++)
		if (strcmp(sd.rejected[i].file, name) == 0)
			break;
	if (i == sd.nrejected) {
		if (sd.nrejected == SD_MAX_REJECTED) {
			memmove(&sd.rejected[0], &sd.rejected[1],
			        sizeof(sd.rejected[0]) * (SD_MAX_REJECTED - 1));
			i = SD_MAX_REJECTED - 1;
		} else {
			sd.nrejected++;
		}
		logmsg("%s: rejected: %s", name, why);
	}
	snprintf(sd.rejected[i].file, sizeof(sd.rejected[i].file), "%s", name);
	snprintf(sd.rejected[i].error, sizeof(sd.rejected[i].error), "%s", why);
}

static void unreject(const char *name)
{
	for (uint32_t i = 0; i < sd.nrejected; i++)
		if (strcmp(sd.rejected[i].file, name) == 0) {
			sd.rejected[i] = sd.rejected[--sd.nrejected];
			return;
		}
}

/* Free an entry (linked or not) and take its bytes off the budget. */
static void proc_free(struct sd_proc *p)
{
	sd.mem_used -= p->mem;
	if (!p->live)
		sd.nexited--;
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

static void retire(struct sd_proc *p);

/* ---------------------------------------------------------------------- */
/* Memory: the budget, eviction, rings that grow and shrink                */
/* ---------------------------------------------------------------------- */

/* The rings an entry starts with and is never shrunk below: a process
 * that lives a second takes a few samples and few growths. */
#define SD_HIST_MIN  8
#define SD_TRACE_MIN 16

static uint32_t hist_min(void)
{
	return sd.history < SD_HIST_MIN ? sd.history : SD_HIST_MIN;
}

static size_t proc_bytes(const struct sd_proc *p)
{
	return sizeof(*p) + (size_t)p->hist_cap * sizeof(*p->hist) +
	       (size_t)p->trace_cap * sizeof(*p->trace) +
	       (size_t)p->nthreads * sizeof(*p->threads) + (size_t)p->nowners * sizeof(*p->owners) +
	       (size_t)p->nclasses * sizeof(*p->classes) + p->maps_size;
}

/* Bring p's charge in line with what it holds now. */
static void charge(struct sd_proc *p)
{
	size_t now = proc_bytes(p);

	sd.mem_used = sd.mem_used - p->mem + now;
	p->mem = now;
	if (sd.mem_used > sd.mem_peak)
		sd.mem_peak = sd.mem_used;
}

static void proc_unlink(struct sd_proc *p)
{
	for (struct sd_proc **pp = &sd.procs; *pp != NULL; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			return;
		}
}

/*
 * Forget the exited entry that exited first, except keep (an entry a caller
 * is working on), and count it in *counter. False when there is none.
 * Unlinks in place: a loop over sd.procs stays valid as long as it reads
 * p->next after the call that may evict.
 */
static bool evict_oldest(const struct sd_proc *keep, uint64_t *counter)
{
	struct sd_proc *old = NULL;

	for (struct sd_proc *p = sd.procs; p != NULL; p = p->next)
		if (!p->live && p != keep && (old == NULL || p->exited_mono < old->exited_mono))
			old = p;
	if (old == NULL)
		return false;
	if (verbose)
		logmsg("%s: pid %d evicted (%s)", old->file, old->seg.pid,
		       counter == &sd.evicted_cap ? "--max-exited" : "--memory-budget");
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

static bool shrink_hist(struct sd_proc *p)
{
	uint32_t cap = p->hist_cap / 2 < hist_min() ? hist_min() : p->hist_cap / 2, len;
	uint32_t oldest = (p->hist_pos + p->hist_cap - p->hist_len) % p->hist_cap;
	struct sd_sample *h =
	        ring_keep_newest(p->hist, sizeof(*h), p->hist_cap, p->hist_len, oldest, cap, &len);

	if (h == NULL)
		return false;
	p->hist_dropped += p->hist_len - len;
	sd.hist_dropped += p->hist_len - len;
	free(p->hist);
	p->hist = h;
	p->hist_cap = cap;
	p->hist_len = len;
	p->hist_pos = len % cap;
	charge(p);
	return true;
}

static bool shrink_trace(struct sd_proc *p)
{
	uint32_t cap = p->trace_cap / 2 < SD_TRACE_MIN ? SD_TRACE_MIN : p->trace_cap / 2, len;
	struct segread_record *t = ring_keep_newest(p->trace, sizeof(*t), p->trace_cap,
	                                            p->trace_len, p->trace_pos, cap, &len);

	if (t == NULL)
		return false;
	p->trace_dropped += p->trace_len - len;
	sd.trace_dropped += p->trace_len - len;
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
	struct sd_proc *big = NULL;
	size_t most = 0, h = 0, t = 0;

	for (struct sd_proc *p = sd.procs; p != NULL; p = p->next) {
		size_t ph = (size_t)(p->hist_cap - hist_min()) * sizeof(*p->hist);
		size_t pt = p->trace_cap > SD_TRACE_MIN
		                    ? (size_t)(p->trace_cap - SD_TRACE_MIN) * sizeof(*p->trace)
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
static bool mem_room(const struct sd_proc *keep, size_t extra, bool need)
{
	while (sd.mem_used + extra > sd.budget && evict_oldest(keep, &sd.evicted_budget))
		;
	while (need && sd.mem_used + extra > sd.budget && shrink_largest())
		;
	return sd.mem_used + extra <= sd.budget;
}

/* Keep at most --max-exited exited entries. Call outside any loop over
 * sd.procs (it may evict any exited entry). */
static void enforce_exited_cap(void)
{
	while (sd.nexited > sd.max_exited && evict_oldest(NULL, &sd.evicted_cap))
		;
}

/* ---------------------------------------------------------------------- */
/* Adoption                                                                */
/* ---------------------------------------------------------------------- */

static bool refresh_maps(struct sd_proc *p, bool *ret_empty);
static void sample(struct sd_proc *p);

/*
 * Open and validate a segment file of the run directory. Never follows a
 * symlink, opens only regular files owned by our uid, and O_NONBLOCK so a
 * FIFO planted there cannot hang the daemon. Under sd.lock.
 */
static void adopt(const char *name)
{
	char err[160];
	struct stat st;
	struct segread_src src = {.fd = -1};
	struct sd_proc *p;
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
		sd.refused++;
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
	p->seen_ns = stats_realtime_ns();
	p->next_seq = 1;
	p->hist_cap = hist_min();
	p->hist = calloc(p->hist_cap, sizeof(*p->hist));
	if (p->hist == NULL) {
		proc_free(p);
		return;
	}
	p->next = sd.procs;
	sd.procs = p;
	charge(p);
	/* Read the maps and take a first sample now: a request may come
	 * before the first sampling round, and should see the threads (and
	 * call sites need the maps). */
	{
		bool empty;

		(void)refresh_maps(p, &empty);
	}
	sample(p);
	if (verbose)
		logmsg("%s: pid %d %s", name, p->seg.pid, p->seg.exe);
	return;
out_close:
	close(fd);
}

static void rescan(void)
{
	DIR *d = opendir(sd.run_dir);
	struct dirent *e;

	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL)
		adopt(e->d_name);
	closedir(d);
}

/* ---------------------------------------------------------------------- */
/* Sampling                                                                */
/* ---------------------------------------------------------------------- */

/* Keep the file-backed lines of /proc/PID/maps (what libdw needs to map
 * addresses back to ELF files); returns whether the segment is mapped.
 * Without room in the budget the previous lines stay. */
static bool refresh_maps(struct sd_proc *p, bool *ret_empty)
{
	char path[64];
	char *maps, *out, *line, *save = NULL;
	size_t len, o = 0;
	bool mapped = false;

	snprintf(path, sizeof(path), "/proc/%d/maps", p->seg.pid);
	maps = stats_read_file(path, 64u << 20, &len);
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
static const char *liveness(struct sd_proc *p, const struct segread_dyn *d)
{
	uint64_t ticks;
	bool empty;
	int rc;

	if (d->exited)
		return "exit";
	rc = stats_proc_start_ticks(p->seg.pid, &ticks);
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
 * hold sd.lock (and every request) for seconds per sample. */
#define SD_BUSY_BUDGET 8

/* One read's result: counts a give-up against the sample's budget. */
static int budget(struct sd_proc *p, int rc)
{
	if (rc == -EAGAIN && ++p->busy >= SD_BUSY_BUDGET)
		p->seg.retries = 0;
	return rc;
}

/* Replace *arr (of *n elements) with an exact copy of the first n of
 * fresh, when the budget has room (a need): false leaves *arr as it was.
 * fresh stays the caller's. */
static bool keep_table(struct sd_proc *p, void **arr, uint32_t *old_n, const void *fresh,
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
static bool read_threads(struct sd_proc *p)
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
static void refresh_names(struct sd_proc *p)
{
	for (uint32_t i = 0; i < p->nthreads; i++) {
		struct segread_thread *t = &p->threads[i];
		char path[96], *comm;
		size_t len;

		if (t->state != SCRATCH_SEG_LIVE)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", p->seg.pid, t->tid);
		comm = stats_read_file(path, 64, &len);
		if (comm == NULL)
			continue;
		if (len > 0 && comm[len - 1] == '\n')
			comm[--len] = '\0';
		snprintf(t->name, sizeof(t->name), "%s", comm);
		free(comm);
	}
}

static void read_owners(struct sd_proc *p)
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
static void read_classes(struct sd_proc *p)
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

static void read_sample(struct sd_proc *p)
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
		    p->busy >= SD_BUSY_BUDGET)
			break;
	}
	if (p->live)
		refresh_names(p);
	read_owners(p);
	read_classes(p);
	segread_totals(p->threads, p->nthreads, &p->pc, &p->tot);
	p->sampled_ns = stats_realtime_ns();
	p->sampled_mono = stats_mono_ns();
}

/* Double a full history ring, up to --history, if the budget has room
 * (a want: it evicts exited entries, never shrinks live ones). */
static void grow_hist(struct sd_proc *p)
{
	uint32_t cap = p->hist_cap > sd.history / 2 ? sd.history : p->hist_cap * 2;
	struct sd_sample *h;

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
static void sample(struct sd_proc *p)
{
	struct sd_sample *s;

	read_sample(p);
	if (p->hist_len == p->hist_cap)
		grow_hist(p);
	if (p->hist_len == p->hist_cap && p->hist_cap < sd.history) {
		/* Full below --history: the oldest sample goes for the budget. */
		p->hist_dropped++;
		sd.hist_dropped++;
	}
	s = &p->hist[p->hist_pos];
	s->t_ns = p->sampled_ns;
	s->tot = p->tot;
	thread_points_fill(&s->threads, p->threads, p->nthreads);
	p->hist_pos = (p->hist_pos + 1) % p->hist_cap;
	if (p->hist_len < p->hist_cap)
		p->hist_len++;
}

/* Double the full kept-record ring (from SD_TRACE_MIN), up to --trace-keep,
 * if the budget has room (a want, as for the history). */
static bool grow_trace(struct sd_proc *p)
{
	uint32_t cap = p->trace_cap < SD_TRACE_MIN ? SD_TRACE_MIN : p->trace_cap * 2;
	struct segread_record *t;

	if (cap > sd.trace_keep)
		cap = sd.trace_keep;
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

static bool owner_known(const struct sd_proc *p, uint32_t id)
{
	for (uint32_t i = 0; i < p->nowners; i++)
		if (p->owners[i].id == id)
			return true;
	return false;
}

static void keep_record(void *ctx, const struct segread_record *r)
{
	struct sd_proc *p = ctx;
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
	if (p->trace_len == p->trace_cap && !grow_trace(p) && p->trace_cap < sd.trace_keep) {
		/* Full below --trace-keep (or no buffer at all): the record
		 * that goes, goes for the budget. */
		p->trace_dropped++;
		sd.trace_dropped++;
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

static bool drain(struct sd_proc *p, bool final)
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
	bool force =
	        final || (p->stall_since != 0 && stats_mono_ns() - p->stall_since > 2000000000u);

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
		p->stall_since = stats_mono_ns();
	if (rc == -EBADMSG && !p->head_warned) {
		logmsg("%s: trace ring head went backwards or out of range; not logged again",
		       p->file);
		p->head_warned = true;
	}
	if (segread_dyn(&p->seg, &d) == 0)
		p->head = d.ring_head;
	return p->next_seq != before || p->lost != lost;
}

static void mark_exited(struct sd_proc *p, const char *reason, const struct segread_dyn *d)
{
	struct stat st;

	p->live = false;
	sd.nexited++;
	p->reason = reason;
	p->exit_ns = d->exited && d->exit_ns != 0 ? d->exit_ns : stats_realtime_ns();
	p->exited_mono = stats_mono_ns();
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
	if (verbose)
		logmsg("%s: pid %d no longer live (%s)", p->file, p->seg.pid, reason);
}

/* Forget an unlinked entry. Its name is remembered only while the file is
 * still there (kept, or not removable), so a rescan does not adopt it
 * again: under churn, removed files would fill the list for nothing. */
static void retire(struct sd_proc *p)
{
	if (sd.nretired < SD_MAX_RETIRED &&
	    faccessat(dirfd_cache(), p->file, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		snprintf(sd.retired[sd.nretired++], NAME_MAX + 1, "%s", p->file);
	proc_free(p);
}

/* A request wants the counters of now, not of the last round (interval
 * views divide by the time between samples): read a live process again
 * unless it was read in the last millisecond. Under sd.lock. */
void sd_refresh(struct sd_proc *p)
{
	if (p->live && stats_mono_ns() - p->sampled_mono > 1000000u)
		read_sample(p);
}

/* One sampling round: liveness, counters, history, retention, the cap on
 * exited entries. p->next is read after each step, since a step may evict
 * other (exited) entries. */
static void sample_all(void)
{
	uint64_t now = stats_mono_ns();

	for (struct sd_proc *p = sd.procs, *next; p != NULL; p = next) {
		struct segread_dyn d;
		const char *why;

		if (!p->live) {
			next = p->next;
			if (now - p->exited_mono >= sd.retention_s * 1000000000u) {
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
	sd.samples++;
}

static void drain_all(void)
{
	bool any = false;

	for (struct sd_proc *p = sd.procs; p != NULL; p = p->next)
		if (p->live)
			any |= drain(p, false);
	if (any)
		pthread_cond_broadcast(&sd.cond);
}

/* ---------------------------------------------------------------------- */
/* The socket                                                              */
/* ---------------------------------------------------------------------- */

/* The socket systemd passed (LISTEN_FDS, first fd 3), or -1. */
static int activated_socket(void)
{
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");

	if (pid == NULL || fds == NULL || strtol(pid, NULL, 10) != (long)getpid() ||
	    strtol(fds, NULL, 10) < 1)
		return -1;
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	fcntl(3, F_SETFD, FD_CLOEXEC);
	return 3;
}

/*
 * Create the listening socket as tmux does: check the path fits, refuse to
 * replace a socket another daemon still answers on, and create it with a
 * umask that leaves it 0600 from the start (no window where it is open).
 */
static int make_socket(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	mode_t mask;
	int fd, e;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "socket path too long: %s", path);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		goto out_err;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		close(fd);
		snprintf(err, errlen, "another scratchd is running on %s", path);
		return -EADDRINUSE;
	}
	close(fd);
	unlink(path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		goto out_err;
	mask = umask(S_IXUSR | S_IRWXG | S_IRWXO);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		e = errno;
		umask(mask);
		close(fd);
		errno = e;
		goto out_err;
	}
	umask(mask);
	if (listen(fd, 64) != 0) {
		e = errno;
		close(fd);
		errno = e;
		goto out_err;
	}
	return fd;
out_err:
	e = errno;
	snprintf(err, errlen, "%s: %s", path, strerror(e));
	return -e;
}

/* ---------------------------------------------------------------------- */
/* Main                                                                    */
/* ---------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f, "usage: scratchd [-v] [--run-dir DIR] [--interval SECONDS] [--history N]\n"
	           "                [--retention SECONDS] [--trace-keep N] [--max-exited N]\n"
	           "                [--memory-budget BYTES[K|M|G]] [--listen 127.0.0.1:PORT]\n");
}

static bool parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *ret)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi || *s == '-')
		return false;
	*ret = v;
	return true;
}

/* A byte count with an optional K, M or G (powers of 1024), from 1 MiB to
 * 1 TiB. */
static bool parse_bytes(const char *s, uint64_t *ret)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || end == s || *s == '-')
		return false;
	if (*end != '\0') {
		const char *units = "KMG", *u = strchr(units, *end);

		if (u == NULL || end[1] != '\0')
			return false;
		shift = 10 * (unsigned)(u - units + 1);
	}
	if (v > (UINT64_C(1) << 40) >> shift)
		return false;
	v <<= shift;
	if (v < (UINT64_C(1) << 20))
		return false;
	*ret = v;
	return true;
}

static bool parse_seconds_ms(const char *s, uint64_t *ret_ms)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || !(v >= 0.01 && v <= 3600))
		return false;
	*ret_ms = (uint64_t)(v * 1000.0 + 0.5);
	return true;
}

static int parse_args(int argc, char **argv, const char **run_dir, const char **listen_on)
{
	static const struct option opts[] = {
	        {"run-dir", required_argument, NULL, 'd'},
	        {"interval", required_argument, NULL, 'i'},
	        {"history", required_argument, NULL, 'H'},
	        {"retention", required_argument, NULL, 'r'},
	        {"trace-keep", required_argument, NULL, 'k'},
	        {"max-exited", required_argument, NULL, 'x'},
	        {"memory-budget", required_argument, NULL, 'm'},
	        {"listen", required_argument, NULL, 'l'},
	        {"verbose", no_argument, NULL, 'v'},
	        {"help", no_argument, NULL, 'h'},
	        {"version", no_argument, NULL, 'V'},
	        {NULL, 0, NULL, 0},
	};
	uint64_t v;
	int c;

	while ((c = getopt_long(argc, argv, "d:i:H:r:k:x:m:l:vhV", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			*run_dir = optarg;
			break;
		case 'i':
			if (!parse_seconds_ms(optarg, &sd.interval_ms))
				goto out_bad;
			break;
		case 'H':
			if (!parse_u64(optarg, 2, 1000000, &v))
				goto out_bad;
			sd.history = (uint32_t)v;
			break;
		case 'r':
			if (!parse_u64(optarg, 0, 86400 * 365, &sd.retention_s))
				goto out_bad;
			break;
		case 'k':
			if (!parse_u64(optarg, 16, 1u << 24, &v))
				goto out_bad;
			sd.trace_keep = (uint32_t)v;
			break;
		case 'x':
			if (!parse_u64(optarg, 0, 1000000, &v))
				goto out_bad;
			sd.max_exited = (uint32_t)v;
			break;
		case 'm':
			if (!parse_bytes(optarg, &sd.budget))
				goto out_bad;
			break;
		case 'l': {
			struct sockaddr_in sa;
			char err[160];

			if (sd_parse_listen(optarg, &sa, err, sizeof(err)) != 0) {
				logmsg("%s", err);
				return 2;
			}
			*listen_on = optarg;
			break;
		}
		case 'v':
			verbose = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf("scratchd %s (protocol %d)\n", PACKAGE_VERSION, STATS_PROTOCOL);
			exit(0);
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	return 0;
out_bad:
	for (const struct option *o = opts; o->name != NULL; o++)
		if (o->val == c)
			logmsg("invalid value for --%s: '%s' (expected %s)", o->name, optarg,
			       c == 'i'   ? "seconds from 0.01 to 3600"
			       : c == 'H' ? "a whole number from 2 to 1000000"
			       : c == 'r' ? "seconds from 0 to 31536000"
			       : c == 'x' ? "a whole number from 0 to 1000000"
			       : c == 'm' ? "bytes from 1M to 1024G, with K, M or G"
			                  : "a whole number from 16 to 16777216");
	return 2;
}

/* One descriptor per live process: take the hard limit. */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static void handle_inotify(int fd)
{
	char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n = read(fd, buf, sizeof(buf));

	for (char *p = buf; n > 0 && p < buf + n;) {
		struct inotify_event *e = (struct inotify_event *)p;

		if (e->mask & IN_Q_OVERFLOW)
			rescan();
		else if (e->len > 0)
			adopt(e->name);
		p += sizeof(*e) + e->len;
	}
}

static int loop(int ino, int sig)
{
	uint64_t tick_ms = sd.interval_ms / 10 < 100 ? sd.interval_ms / 10 : 100;
	uint64_t next_sample = 0;

	if (tick_ms < 5)
		tick_ms = 5;
	for (;;) {
		struct pollfd pf[2] = {{.fd = ino, .events = POLLIN},
		                       {.fd = sig, .events = POLLIN}};
		uint64_t now;

		if (poll(pf, 2, (int)tick_ms) < 0 && errno != EINTR) {
			logmsg("poll: %s", strerror(errno));
			return 1;
		}
		if (pf[1].revents & POLLIN) {
			struct signalfd_siginfo si;

			if (read(sig, &si, sizeof(si)) == sizeof(si)) {
				if (verbose)
					logmsg("signal %u: stopping", si.ssi_signo);
				return 0;
			}
		}
		pthread_mutex_lock(&sd.lock);
		if (pf[0].revents & POLLIN)
			handle_inotify(ino);
		drain_all();
		now = stats_mono_ns() / 1000000u;
		if (now >= next_sample) {
			sample_all();
			next_sample = now + sd.interval_ms;
			pthread_cond_broadcast(&sd.cond);
		}
		pthread_mutex_unlock(&sd.lock);
	}
}

int main(int argc, char **argv)
{
	const char *run_dir = NULL, *listen_on = NULL;
	char err[PATH_MAX + 128];
	sigset_t mask;
	bool activated;
	int rc, ufd, ino, sig;

	rc = parse_args(argc, argv, &run_dir, &listen_on);
	if (rc != 0)
		return rc;
	raise_fd_limit();
	/* One malloc arena: samples and requests run under sd.lock anyway, and
	 * an arena per connection thread only keeps freed memory resident
	 * (the budget bounds what the entries hold, not those free lists). */
	mallopt(M_ARENA_MAX, 1);
	sd.retired = calloc(SD_MAX_RETIRED, sizeof(*sd.retired));
	if (sd.retired == NULL)
		return 1;
	if (stats_run_dir(run_dir, true, sd.run_dir, sizeof(sd.run_dir), err, sizeof(err)) != 0) {
		logmsg("%s", err);
		return 1;
	}
	if (snprintf(sd.socket_path, sizeof(sd.socket_path), "%.*s/%s", PATH_MAX - 32, sd.run_dir,
	             STATS_SOCKET_NAME) < 0)
		return 1;
	sd.start_ns = stats_realtime_ns();
	/* The run directory's descriptor is held for the daemon's life: open
	 * it now, so the count of descriptors at rest is the count at start. */
	(void)dirfd_cache();
	/* SIGTERM and SIGINT arrive through a signalfd; blocked before any
	 * thread starts so every HTTP thread inherits the mask. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	sig = signalfd(-1, &mask, SFD_CLOEXEC);
	ino = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (sig < 0 || ino < 0 ||
	    inotify_add_watch(ino, sd.run_dir, IN_MOVED_TO | IN_CREATE | IN_CLOSE_WRITE) < 0) {
		logmsg("inotify on %s: %s", sd.run_dir, strerror(errno));
		return 1;
	}
	ufd = activated_socket();
	activated = ufd >= 0;
	if (ufd < 0)
		ufd = make_socket(sd.socket_path, err, sizeof(err));
	if (ufd < 0) {
		logmsg("%s", err);
		return 1;
	}
	pthread_mutex_lock(&sd.lock);
	rescan();
	sample_all();
	pthread_mutex_unlock(&sd.lock);
	if (sd_serve_start(ufd, listen_on, err, sizeof(err)) != 0) {
		logmsg("%s", err);
		sd_serve_stop();
		if (!activated)
			unlink(sd.socket_path);
		return 1;
	}
	if (verbose)
		logmsg("serving %s", sd.socket_path);
	rc = loop(ino, sig);
	pthread_mutex_lock(&sd.lock);
	sd.stopping = true;
	pthread_cond_broadcast(&sd.cond);
	pthread_mutex_unlock(&sd.lock);
	sd_serve_stop();
	if (!activated)
		unlink(sd.socket_path);
	while (sd.procs != NULL) {
		struct sd_proc *p = sd.procs;

		sd.procs = p->next;
		proc_free(p);
	}
	free(sd.retired);
	return rc;
}
