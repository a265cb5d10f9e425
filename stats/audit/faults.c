/*
 * faults.c - software page-fault sampling with perf_event_open(2), in
 * launch and attach modes (faults.h).
 *
 * Each event has its own mmapped ring: one metadata page, then ring_pages
 * data pages. The kernel advances data_head (read with acquire), we
 * advance data_tail (written with release) once the records are copied
 * out; a record may wrap the ring's end, so it is copied whole first.
 * Records other than samples and PERF_RECORD_LOST are skipped by size.
 *
 * Losses: the kernel writes a PERF_RECORD_LOST only at the next sample that
 * fits, so the drops of a thread whose ring filled at the end of its life
 * are never reported. Each drain therefore also reads the event's count
 * (every fault, sampled or not: a period-1 software event is never
 * throttled) and counts as lost what neither a sample nor a loss record
 * accounts for. The count is read before the ring, so a live thread's
 * figure is a lower bound; once its task is gone it is exact.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include "faults.h"
#include "sys.h"
#include "text.h"
#include "topology.h"

#define DEFAULT_RING_PAGES 64
#define MAX_RING_PAGES     (1u << 16)

struct event {
	int fd;
	pid_t tid;  /* attach mode; 0 in launch mode */
	bool hup;   /* its task exited */
	bool seen;  /* attach mode: listed by the current scan */
	bool major; /* the major-fault event */
	unsigned ring_pages;
	struct perf_event_mmap_page *meta;
	size_t map_bytes;
	uint64_t records;    /* sample records read from its ring */
	uint64_t reported;   /* drops its PERF_RECORD_LOSTs reported */
	uint64_t unreported; /* count - records - reported at the last drain */
};

struct faults {
	struct faults_opts o;
	pid_t pid;   /* attach mode: the process; launch mode: the child */
	bool attach; /* mode */
	bool exclude_kernel;
	size_t page;
	struct event *ev;
	unsigned nev, cap;
	struct faults_stats st; /* .lost: the loss records' sum */
	uint64_t unreported;    /* drops of closed events no record reported */
};

/* A sample as PERF_SAMPLE_TID | TIME | ADDR | CPU lays it out. */
struct sample_rec {
	struct perf_event_header h;
	uint32_t pid, tid;
	uint64_t time;
	uint64_t addr;
	uint32_t cpu, res;
};

struct lost_rec {
	struct perf_event_header h;
	uint64_t id, lost;
};

static int paranoid(void)
{
	char *t = sys_read_file("/proc/sys/kernel/perf_event_paranoid", 64, NULL);
	int v = t != NULL ? atoi(t) : INT_MIN;

	free(t);
	return v;
}

/* Why perf_event_open(target) failed with e, into err; returns -e. */
static int refusal(int e, pid_t target, char *err, size_t errlen)
{
	int p = paranoid();

	switch (e) {
	case EACCES:
	case EPERM:
		if (p > 2)
			return text_fail(
			        err, errlen, e,
			        "perf_event_paranoid is %d: software page-fault sampling needs "
			        "<= 2 or CAP_PERFMON",
			        p);
		if (target > 0 && e == EACCES)
			return text_fail(
			        err, errlen, e,
			        "not allowed to sample process %d (another user's process, or "
			        "ptrace access refused)",
			        (int)target);
		return text_fail(
		        err, errlen, e,
		        "perf_event_open refused (%s) with perf_event_paranoid %d: a seccomp "
		        "filter (container runtime) or security module denies it",
		        strerror(e), p);
	case ENOSYS:
		return text_fail(err, errlen, e,
		                 "perf_event_open is not available (ENOSYS): a kernel without perf "
		                 "events, or a seccomp filter (container runtime) that hides it");
	case EOPNOTSUPP:
	case ENOENT:
	case ENODEV:
		return text_fail(err, errlen, e,
		                 "software page-fault events are not supported here (%s)",
		                 strerror(e));
	case ESRCH:
		return text_fail(err, errlen, e, "process %d: no such process (gone)", (int)target);
	case EMFILE:
	case ENFILE:
		return text_fail(err, errlen, e,
		                 "perf_event_open: %s (one event per thread or CPU)", strerror(e));
	default:
		return text_fail(err, errlen, e, "perf_event_open: %s", strerror(e));
	}
}

/* Data pages of an event's ring: the major-fault event's is an eighth. */
static unsigned ring_of(const struct faults *f, bool major)
{
	unsigned n = f->o.ring_pages;

	return major ? (n / 8 >= 8 ? n / 8 : 8) : n;
}

static void init_attr(struct perf_event_attr *a, bool launch, bool exclude_kernel, bool major)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_SOFTWARE;
	a->config = major ? PERF_COUNT_SW_PAGE_FAULTS_MAJ : PERF_COUNT_SW_PAGE_FAULTS;
	a->sample_period = 1;
	a->sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | PERF_SAMPLE_CPU;
	a->exclude_kernel = exclude_kernel;
	a->exclude_hv = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->watermark = 1;
	a->wakeup_watermark = 4096; /* set per ring in open_ring */
	/* Counting starts once the ring is there (a fault counted with no
	 * ring to take its sample would read as a loss): at the exec in launch
	 * mode, and by add_event's PERF_EVENT_IOC_ENABLE in attach mode. */
	a->disabled = 1;
	if (launch) {
		a->inherit = 1;
		a->enable_on_exec = 1;
	}
}

/*
 * perf_event_open for (pid, cpu); with paranoid 2 a kernel-inclusive event
 * is refused (EACCES), so retry once excluding kernel-mode faults.
 */
static int open_event(struct faults *f, pid_t pid, int cpu, bool major)
{
	struct perf_event_attr a;
	long fd;
	int e;

	for (;;) {
		init_attr(&a, !f->attach, f->exclude_kernel, major);
		a.wakeup_watermark = (uint32_t)(ring_of(f, major) * f->page / 4);
		fd = syscall(SYS_perf_event_open, &a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd >= 0)
			return (int)fd;
		e = errno; /* paranoid() reads a file */
		if (e != EACCES || f->exclude_kernel || paranoid() > 2)
			return -e;
		f->exclude_kernel = true;
	}
}

/* Map fd's ring and add it to f's events. */
static int add_event(struct faults *f, int fd, pid_t tid, bool major, char *err, size_t errlen)
{
	size_t bytes = (1 + ring_of(f, major)) * f->page;
	void *m;

	if (f->nev == f->cap) {
		unsigned nc = f->cap ? f->cap * 2 : 8;
		struct event *ne = realloc(f->ev, nc * sizeof(*ne));

		if (ne == NULL) {
			close(fd);
			return text_fail(err, errlen, ENOMEM, "out of memory");
		}
		f->ev = ne;
		f->cap = nc;
	}
	m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		int e = errno;

		close(fd);
		if (e == EPERM)
			return text_fail(
			        err, errlen, e,
			        "cannot map a %zu KiB sample ring: the perf_event_mlock_kb / "
			        "RLIMIT_MEMLOCK limit is reached (use a smaller ring)",
			        bytes >> 10);
		return text_fail(err, errlen, e, "mmap of a sample ring: %s", strerror(e));
	}
	if (f->attach && ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) != 0) {
		int e = errno;

		munmap(m, bytes);
		close(fd);
		return text_fail(err, errlen, e, "cannot enable a page-fault event: %s",
		                 strerror(e));
	}
	f->ev[f->nev++] = (struct event){.fd = fd,
	                                 .tid = tid,
	                                 .seen = true,
	                                 .major = major,
	                                 .ring_pages = ring_of(f, major),
	                                 .meta = m,
	                                 .map_bytes = bytes};
	return 0;
}

static struct faults *faults_new(const struct faults_opts *o, bool attach)
{
	struct faults *f = calloc(1, sizeof(*f));

	if (f == NULL)
		return NULL;
	if (o != NULL)
		f->o = *o;
	if (f->o.ring_pages == 0)
		f->o.ring_pages = DEFAULT_RING_PAGES;
	f->attach = attach;
	f->page = (size_t)sysconf(_SC_PAGESIZE);
	return f;
}

static bool valid_ring(const struct faults_opts *o, char *err, size_t errlen)
{
	unsigned n = o != NULL ? o->ring_pages : 0;

	if (n == 0 || (n <= MAX_RING_PAGES && (n & (n - 1)) == 0))
		return true;
	text_fail(err, errlen, EINVAL, "ring pages %u: not a power of two up to %u", n,
	          MAX_RING_PAGES);
	return false;
}

int faults_probe(char *err, size_t errlen)
{
	struct faults *f = faults_new(NULL, true);
	int fd;

	if (f == NULL)
		return text_fail(err, errlen, ENOMEM, "out of memory");
	fd = open_event(f, 0, -1, false);
	free(f);
	if (fd < 0)
		return refusal(-fd, 0, err, errlen);
	close(fd);
	return 0;
}

void faults_close(faults_t *f)
{
	if (f == NULL)
		return;
	for (unsigned i = 0; i < f->nev; i++) {
		munmap(f->ev[i].meta, f->ev[i].map_bytes);
		close(f->ev[i].fd);
	}
	free(f->ev);
	free(f);
}

/* Copy len bytes at ring offset off (mod size) out of the data area. */
static void ring_copy(const uint8_t *data, uint64_t size, uint64_t off, void *dst, size_t len)
{
	size_t at = (size_t)(off & (size - 1)), first = len;

	if (at + len > size)
		first = (size_t)(size - at);
	memcpy(dst, data + at, first);
	memcpy((uint8_t *)dst + first, data, len - first);
}

/* One record: a sample is handed to fn when in range, a loss is counted. */
static long handle_record(struct faults *f, struct event *e, const void *rec, size_t len,
                          faults_fn *fn, void *arg)
{
	const struct perf_event_header *h = rec;
	bool major = e->major;

	if (h->type == PERF_RECORD_LOST && len >= sizeof(struct lost_rec)) {
		e->reported += ((const struct lost_rec *)rec)->lost;
		f->st.lost += ((const struct lost_rec *)rec)->lost;
		f->st.lost_records++;
	} else if (h->type == PERF_RECORD_SAMPLE && len >= sizeof(struct sample_rec)) {
		const struct sample_rec *s = rec;
		struct faults_sample out = {(pid_t)s->pid, (pid_t)s->tid, s->cpu,
		                            s->addr,       s->time,       major};

		e->records++;
		f->st.samples++;
		if (f->o.hi != 0 && (s->addr < f->o.lo || s->addr >= f->o.hi))
			return 0;
		f->st.kept++;
		f->st.major += major;
		if (fn != NULL)
			fn(&out, arg);
		return 1;
	}
	return 0;
}

static long drain_event(struct faults *f, struct event *e, faults_fn *fn, void *arg)
{
	struct perf_event_mmap_page *m = e->meta;
	const uint8_t *data = (const uint8_t *)m + f->page;
	uint64_t size = (uint64_t)e->ring_pages * f->page;
	uint64_t head = __atomic_load_n(&m->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = m->data_tail;
	uint8_t rec[256];
	uint64_t count;
	bool counted = read(e->fd, &count, sizeof(count)) == (ssize_t)sizeof(count);
	long n = 0;

	while (tail + sizeof(struct perf_event_header) <= head) {
		struct perf_event_header h;

		ring_copy(data, size, tail, &h, sizeof(h));
		if (h.size < sizeof(h) || tail + h.size > head)
			break; /* a corrupt header: drop the rest of this batch */
		if (h.size <= sizeof(rec)) {
			ring_copy(data, size, tail, rec, h.size);
			n += handle_record(f, e, rec, h.size, fn, arg);
		}
		tail += h.size;
	}
	__atomic_store_n(&m->data_tail, head, __ATOMIC_RELEASE);
	if (counted)
		e->unreported =
		        count > e->records + e->reported ? count - e->records - e->reported : 0;
	return n;
}

long faults_drain(faults_t *f, faults_fn *fn, void *arg)
{
	long n = 0;

	for (unsigned i = 0; i < f->nev; i++)
		n += drain_event(f, &f->ev[i], fn, arg);
	return n;
}

int faults_wait(faults_t *f, int timeout_ms)
{
	struct pollfd *p = calloc(f->nev ? f->nev : 1, sizeof(*p));
	unsigned *map = calloc(f->nev ? f->nev : 1, sizeof(*map));
	unsigned n = 0;
	int r, ready = 0;

	if (p == NULL || map == NULL) {
		free(p);
		free(map);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < f->nev; i++)
		if (!f->ev[i].hup) {
			p[n] = (struct pollfd){.fd = f->ev[i].fd, .events = POLLIN};
			map[n++] = i;
		}
	r = poll(p, n, timeout_ms);
	if (r < 0)
		r = errno == EINTR ? 0 : -errno;
	for (unsigned i = 0; r > 0 && i < n; i++) {
		if (p[i].revents & (POLLHUP | POLLERR))
			f->ev[map[i]].hup = true;
		if (p[i].revents != 0)
			ready++;
	}
	free(p);
	free(map);
	return r < 0 ? r : ready;
}

unsigned faults_live(const faults_t *f)
{
	unsigned n = 0;

	for (unsigned i = 0; i < f->nev; i++)
		n += !f->ev[i].hup;
	return n;
}

pid_t faults_event_tid(const faults_t *f, unsigned i)
{
	return i < f->nev ? f->ev[i].tid : 0;
}

void faults_get_stats(const faults_t *f, struct faults_stats *ret)
{
	*ret = f->st;
	ret->lost += f->unreported;
	for (unsigned i = 0; i < f->nev; i++)
		ret->lost += f->ev[i].unreported;
	ret->events = f->nev;
	ret->kernel_faults = !f->exclude_kernel;
}

/* ---- launch mode ---- */

/* The online CPUs into set (TOPOLOGY_MAX_CPUS bits). */
static void online_cpus(uint64_t *set)
{
	char *t = sys_read_file("/sys/devices/system/cpu/online", 1 << 16, NULL);

	if (t == NULL || topology_parse_cpulist(t, set, TOPOLOGY_MAX_CPUS) != 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		memset(set, 0, TOPOLOGY_MAX_CPUS / 8);
		for (long c = 0; c < (n > 0 ? n : 1) && c < TOPOLOGY_MAX_CPUS; c++)
			set[c / 64] |= 1ULL << (c % 64);
	}
	free(t);
}

/*
 * The child: wait for the go byte, exec, or report the exec's errno. The
 * command starts with no signal blocked, whatever the caller's mask (a
 * daemon blocks signals it waits for with signalfd or sigwait).
 */
static void __attribute__((noreturn)) child(char *const argv[], int go, int report)
{
	sigset_t none;
	char c;
	ssize_t n;
	int e;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);

	do
		n = read(go, &c, 1);
	while (n < 0 && errno == EINTR);
	if (n != 1)
		_exit(127); /* the parent gave up */
	close(go);
	execvp(argv[0], argv);
	e = errno;
	if (write(report, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

/* One event per online CPU for the (waiting) child. */
static int open_per_cpu(struct faults *f, char *err, size_t errlen)
{
	uint64_t set[TOPOLOGY_MAX_CPUS / 64];
	int r;

	online_cpus(set);
	for (int c = 0; c < TOPOLOGY_MAX_CPUS; c++) {
		int fd;

		if (!(set[c / 64] & (1ULL << (c % 64))))
			continue;
		for (int major = 0; major <= (int)f->o.major; major++) {
			fd = open_event(f, f->pid, c, major);
			if (fd == -ENODEV || fd == -EINVAL) /* went offline since */
				break;
			if (fd < 0)
				return refusal(-fd, 0, err, errlen);
			r = add_event(f, fd, 0, major, err, errlen);
			if (r != 0)
				return r;
		}
	}
	if (f->nev == 0)
		return text_fail(err, errlen, ENODEV, "no online CPU accepted an event");
	return 0;
}

/*
 * Write the go byte without risking SIGPIPE (the child may have been
 * killed): block it around the write and take a pending one back.
 */
static bool send_go(int go)
{
	struct timespec zero = {0, 0};
	sigset_t pipe_set, old;
	bool sent;

	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	sent = write(go, "g", 1) == 1;
	if (!sent && errno == EPIPE)
		sigtimedwait(&pipe_set, NULL, &zero);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return sent;
}

/*
 * Release the child (or, with ok false, make it exit) and learn its exec's
 * fate; the child is reaped unless it exec'd. Returns 0 once it exec'd.
 */
static int start_child(struct faults *f, int go, int report, bool ok, const char *cmd, char *err,
                       size_t errlen)
{
	bool sent = ok && send_go(go);
	int e = 0, status;
	ssize_t n;

	close(go);
	do
		n = read(report, &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(report);
	if (sent && n <= 0)
		return 0; /* exec succeeded: the close-on-exec end closed */
	while (waitpid(f->pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!ok)
		return -1; /* the caller's error stands */
	if (!sent)
		return text_fail(err, errlen, ECHILD, "the command's process died before its exec");
	return text_fail(err, errlen, e, "cannot run %s: %s", cmd, strerror(e));
}

int faults_launch(char *const argv[], const struct faults_opts *o, faults_t **ret, pid_t *ret_child,
                  char *err, size_t errlen)
{
	int go[2], report[2], r, s;
	struct faults *f;

	if (argv == NULL || argv[0] == NULL)
		return text_fail(err, errlen, EINVAL, "no command");
	if (!valid_ring(o, err, errlen))
		return -EINVAL;
	f = faults_new(o, false);
	if (f == NULL)
		return text_fail(err, errlen, ENOMEM, "out of memory");
	if (pipe2(go, O_CLOEXEC) != 0) {
		free(f);
		return text_fail(err, errlen, errno, "pipe: %s", strerror(errno));
	}
	if (pipe2(report, O_CLOEXEC) != 0) {
		r = text_fail(err, errlen, errno, "pipe: %s", strerror(errno));
		close(go[0]);
		close(go[1]);
		free(f);
		return r;
	}
	f->pid = fork();
	if (f->pid == 0) {
		close(go[1]);
		close(report[0]);
		child(argv, go[0], report[1]);
	}
	close(go[0]);
	close(report[1]);
	if (f->pid < 0) {
		r = text_fail(err, errlen, errno, "fork: %s", strerror(errno));
		close(go[1]);
		close(report[0]);
		free(f);
		return r;
	}
	r = open_per_cpu(f, err, errlen);
	s = start_child(f, go[1], report[0], r == 0, argv[0], err, errlen);
	if (r != 0 || s != 0) {
		faults_close(f);
		return r != 0 ? r : s;
	}
	*ret = f;
	*ret_child = f->pid;
	return 0;
}

/* ---- attach mode ---- */

static struct event *find_tid(struct faults *f, pid_t tid)
{
	for (unsigned i = 0; i < f->nev; i++)
		if (f->ev[i].tid == tid)
			return &f->ev[i];
	return NULL;
}

/* Attach one thread; a thread that exited meanwhile is not an error. */
static int attach_tid(struct faults *f, pid_t tid, char *err, size_t errlen)
{
	for (int major = 0; major <= (int)f->o.major; major++) {
		int fd = open_event(f, tid, -1, major), r;

		if (fd == -ESRCH)
			return 0;
		if (fd < 0)
			return refusal(-fd, f->pid, err, errlen);
		r = add_event(f, fd, tid, major, err, errlen);
		if (r != 0)
			return r;
	}
	f->st.attached++;
	return 1;
}

/* Drain and close the events not seen by this scan (their threads exited). */
static void prune(struct faults *f, faults_fn *fn, void *arg)
{
	unsigned k = 0;

	for (unsigned i = 0; i < f->nev; i++) {
		struct event *e = &f->ev[i];

		if (e->seen) {
			f->ev[k++] = *e;
			continue;
		}
		drain_event(f, e, fn, arg);
		f->unreported += e->unreported;
		munmap(e->meta, e->map_bytes);
		close(e->fd);
	}
	f->nev = k;
}

int faults_rescan(faults_t *f, faults_fn *fn, void *arg, char *err, size_t errlen)
{
	char path[64];
	struct dirent *d;
	DIR *dir;
	int added = 0, r = 0;

	if (!f->attach)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)f->pid);
	dir = opendir(path);
	for (unsigned i = 0; i < f->nev; i++)
		f->ev[i].seen = false;
	if (dir == NULL) {
		prune(f, fn, arg);
		return text_fail(err, errlen, ESRCH, "process %d: gone", (int)f->pid);
	}
	while (r >= 0 && (d = readdir(dir)) != NULL) {
		char *end;
		long tid = strtol(d->d_name, &end, 10);
		struct event *e;

		if (*end != '\0' || tid <= 0 || tid > INT_MAX)
			continue;
		e = find_tid(f, (pid_t)tid);
		if (e != NULL && !e->hup) {
			/* its events, the major-fault one too */
			for (unsigned i = 0; i < f->nev; i++)
				if (f->ev[i].tid == (pid_t)tid)
					f->ev[i].seen = true;
			continue;
		}
		if (e != NULL) /* exited, and its tid reused: a new thread */
			continue;
		r = attach_tid(f, (pid_t)tid, err, errlen);
		added += r > 0;
	}
	closedir(dir);
	prune(f, fn, arg);
	return r < 0 ? r : added;
}

int faults_attach(pid_t pid, const struct faults_opts *o, faults_t **ret, char *err, size_t errlen)
{
	struct faults *f;
	char path[64];
	int r;

	if (pid <= 0)
		return text_fail(err, errlen, EINVAL, "pid %d: not a process", (int)pid);
	if (!valid_ring(o, err, errlen))
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if (access(path, F_OK) != 0)
		return text_fail(err, errlen, ESRCH, "process %d: no such process", (int)pid);
	f = faults_new(o, true);
	if (f == NULL)
		return text_fail(err, errlen, ENOMEM, "out of memory");
	f->pid = pid;
	r = faults_rescan(f, NULL, NULL, err, errlen);
	if (r >= 0 && f->nev == 0)
		r = text_fail(err, errlen, ESRCH, "process %d: no thread left", (int)pid);
	if (r < 0) {
		faults_close(f);
		return r;
	}
	*ret = f;
	return 0;
}
