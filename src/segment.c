/*
 * segment.c - the process's stats segment (writer side).
 *
 * Owns the segment file: the run directory check, creating and publishing
 * the file, the thread slots and the owner table the pools and owners write
 * into, the copy a child gets after fork, the unlink at exit, and the
 * sweep of files dead processes left behind. The layout is in segment.h.
 * Everything here may run inside malloc (the first
 * pool use of the preload shim opens the segment), so nothing here
 * allocates or uses stdio: open/read/readlink and the os.c layer only.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <limits.h>
#include <stdio.h> /* rename() only: no streams here */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "segment.h"

__thread uint32_t scratch__current_owner __attribute__((tls_model("initial-exec")));

/* Slot index + 1 of the calling thread (0: none), to find the forking
 * thread's slot in the child. */
static __thread uint32_t my_slot __attribute__((tls_model("initial-exec")));

static struct {
	struct scratch_seg_header *hdr; /* NULL: no segment */
	size_t size;
	/* Everything but the ring, as it was when a fork began (prefork, under
	 * the pool's lock): the parent keeps writing the shared mapping after
	 * fork returns, so the child starts from this copy. */
	uint8_t *snap;
	size_t snap_len;
	/* the parts copied: the header, the process counters and the thread
	 * slots up to the last one ever used; the owner table. The rest of
	 * the copy (and of the child's new file) is zero. */
	size_t snap_part[2][2];
	bool keep;
	char dir[PATH_MAX];
	char path[PATH_MAX];
} seg;

struct scratch_seg_header *scratch__segment_header(void)
{
	return seg.hdr;
}

/* A consistent copy of one thread's counters (segment.h), read inside its
 * sequence count. */
void scratch__counters_read(const struct scratch__counters *c, struct scratch__counters *ret)
{
	uint64_t s1, s2;
	const uint64_t *src = (const uint64_t *)c;
	uint64_t *dst = (uint64_t *)ret;
	size_t n = sizeof(*c) / sizeof(uint64_t);

	for (int tries = 0;; tries++) {
		s1 = __atomic_load_n(&c->seq, __ATOMIC_ACQUIRE);
		for (size_t i = 0; i < n; i++)
			dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
		SCRATCH__FENCE_ACQUIRE();
		s2 = SCRATCH__SEQ_LOAD(&c->seq);
		/* A writer that died mid-update (a thread lost to fork) leaves
		 * seq odd forever: after enough tries, take what is there. */
		if ((s1 == s2 && (s1 & 1) == 0) || tries > 1000)
			return;
	}
}

static uint8_t *seg_at(uint64_t off)
{
	return (uint8_t *)seg.hdr + off;
}

static struct scratch_seg_thread *thread_slot(uint32_t i)
{
	return (struct scratch_seg_thread *)seg_at(seg.hdr->threads_off +
	                                           (uint64_t)i * seg.hdr->thread_stride);
}

static struct scratch_seg_owner *owner_slot(uint32_t i)
{
	return (struct scratch_seg_owner *)seg_at(seg.hdr->owners_off +
	                                          (uint64_t)i * seg.hdr->owner_stride);
}

/* Read up to len-1 bytes of a small file (procfs) into buf, NUL-terminated.
 * Returns the length read, or -1. */
static ssize_t read_small(const char *path, char *buf, size_t len)
{
	size_t got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	while (got + 1 < len) {
		ssize_t n = read(fd, buf + got, len - 1 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	buf[got] = '\0';
	return (ssize_t)got;
}

/* Field 22 of /proc/self/stat (start time in clock ticks since boot), and
 * field 4 (ppid). The command name may hold spaces: count after the last ')'. */
static void read_stat(uint64_t *ret_start, int32_t *ret_ppid)
{
	char buf[1024];
	const char *p;
	int field = 2;

	*ret_start = 0;
	*ret_ppid = 0;
	if (read_small("/proc/self/stat", buf, sizeof(buf)) <= 0)
		return;
	p = strrchr(buf, ')');
	if (p == NULL)
		return;
	for (p++; *p != '\0'; p++) {
		if (*p != ' ')
			continue;
		field++;
		if (field == 4 || field == 22) {
			uint64_t v = 0;

			for (p++; *p >= '0' && *p <= '9'; p++)
				v = v * 10 + (uint64_t)(*p - '0');
			if (field == 4)
				*ret_ppid = (int32_t)v;
			else
				*ret_start = v;
			if (field == 22)
				return;
			p--;
		}
	}
}

static void read_comm(pid_t tid, char *name, size_t len)
{
	char path[64];
	char buf[SCRATCH_SEG_NAME_LEN + 2];
	size_t pos = 0;
	ssize_t n;

	scratch__fmt_str(path, sizeof(path), &pos, "/proc/self/task/");
	scratch__fmt_u64(path, sizeof(path), &pos, (uint64_t)tid);
	scratch__fmt_str(path, sizeof(path), &pos, "/comm");
	n = read_small(path, buf, sizeof(buf));
	if (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	memset(name, 0, len);
	if (n > 0)
		memcpy(name, buf, (size_t)n < len - 1 ? (size_t)n : len - 1);
}

static void fill_identity(struct scratch_seg_header *h)
{
	ssize_t n;

	h->pid = (int32_t)getpid();
	h->uid = (uint32_t)geteuid();
	read_stat(&h->start_ticks, &h->ppid);
	h->created_ns = scratch__os_realtime_ns();
	n = readlink("/proc/self/exe", h->exe, sizeof(h->exe) - 1);
	h->exe[n > 0 ? n : 0] = '\0';
	n = read_small("/proc/self/cmdline", h->cmdline, sizeof(h->cmdline));
	for (ssize_t i = 0; i + 1 < n; i++)
		if (h->cmdline[i] == '\0')
			h->cmdline[i] = ' ';
}

#define NOT_FIT 1 /* dir_fit(): there, but not fit for this process */

/* Append a path from the environment, control bytes as '?'. */
static void fmt_path(char *buf, size_t len, size_t *pos, const char *path)
{
	for (const char *c = path; *c != '\0'; c++) {
		char one[2] = {(unsigned char)*c < 0x20 || *c == 0x7f ? '?' : *c, '\0'};

		scratch__fmt_str(buf, len, pos, one);
	}
}

/* Is dir fit to be the run directory (created 0700 when missing)? Not a
 * symlink, a directory, owned by the effective uid, closed to group and
 * others: another user could otherwise plant or read segments. 0, NOT_FIT
 * for one that is there but not fit, or -errno. */
static int dir_fit(const char *dir)
{
	struct stat st;

	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		return -errno;
	if (lstat(dir, &st) != 0)
		return -errno;
	if (S_ISDIR(st.st_mode) && st.st_uid == geteuid() && (st.st_mode & 077) == 0)
		return 0;
	return NOT_FIT;
}

/* "<what><path> <why><then>" under verbose:true, why from err (NOT_FIT or
 * -errno). */
static void dir_note(const struct scratch__conf *conf, const char *what, const char *dir, int err,
                     const char *then)
{
	char msg[480]; /* scratch__warn cuts longer lines anyway */
	size_t pos = 0;

	if (!conf->verbose)
		return;
	scratch__fmt_str(msg, sizeof(msg), &pos, what);
	fmt_path(msg, sizeof(msg), &pos, dir);
	if (err == NOT_FIT) {
		scratch__fmt_str(msg, sizeof(msg), &pos,
		                 " is not a directory of mode 0700 owned by this user");
	} else {
		scratch__fmt_str(msg, sizeof(msg), &pos, " cannot be used (errno ");
		scratch__fmt_u64(msg, sizeof(msg), &pos, (uint64_t)-err);
		scratch__fmt_str(msg, sizeof(msg), &pos, ")");
	}
	scratch__fmt_str(msg, sizeof(msg), &pos, then);
	scratch__env_warn(conf, msg);
}

/*
 * The run directory: $SCRATCH_RUNTIME_DIR, else $XDG_RUNTIME_DIR/scratch,
 * else /dev/shm/scratch-$EUID; the last component is created 0700 when
 * missing. A directory named by the environment that is not fit for this
 * process (dir_fit) is not its own: a child that runs as another user
 * inherits its parent's variables. It falls back to its own per-user
 * directory, /dev/shm/scratch-$EUID, without a word (verbose:true says
 * so); only when that one is not fit either is there no run directory,
 * and stats are off (silently too). 0 or -errno.
 */
static int run_dir(const struct scratch__conf *conf, char *dir, size_t len)
{
	const char *env = getenv("SCRATCH_RUNTIME_DIR");
	char own[48], then[64];
	size_t pos = 0, opos = 0, tpos = 0;
	int err;

	scratch__fmt_str(own, sizeof(own), &opos, "/dev/shm/scratch-");
	scratch__fmt_u64(own, sizeof(own), &opos, geteuid());
	if (env != NULL && *env != '\0') {
		scratch__fmt_str(dir, len, &pos, env);
	} else if ((env = getenv("XDG_RUNTIME_DIR")) != NULL && *env == '/') {
		scratch__fmt_str(dir, len, &pos, env);
		scratch__fmt_str(dir, len, &pos, "/scratch");
	}
	if (pos > 0) {
		err = pos + 64 >= len ? -ENAMETOOLONG : dir_fit(dir);
		if (err == 0)
			return 0;
		scratch__fmt_str(then, sizeof(then), &tpos, ", using ");
		scratch__fmt_str(then, sizeof(then), &tpos, own);
		dir_note(conf, "run directory ", dir, err, then);
	}
	pos = 0;
	scratch__fmt_str(dir, len, &pos, own);
	err = dir_fit(dir);
	if (err != 0)
		dir_note(conf, "stats off: run directory ", dir, err, "");
	return err == NOT_FIT ? -EPERM : err;
}

/* "<dir>/<pid>-<nonce>.seg" into path, and the temporary ".<pid>-<nonce>.tmp"
 * it is created under. */
static void seg_names(const char *dir, pid_t pid, uint64_t nonce, char *path, char *tmp, size_t len)
{
	size_t p = 0, t = 0;

	scratch__fmt_str(path, len, &p, dir);
	scratch__fmt_str(path, len, &p, "/");
	scratch__fmt_str(tmp, len, &t, dir);
	scratch__fmt_str(tmp, len, &t, "/.");
	scratch__fmt_u64(path, len, &p, (uint64_t)pid);
	scratch__fmt_u64(tmp, len, &t, (uint64_t)pid);
	scratch__fmt_str(path, len, &p, "-");
	scratch__fmt_str(tmp, len, &t, "-");
	scratch__fmt_u64(path, len, &p, nonce);
	scratch__fmt_u64(tmp, len, &t, nonce);
	scratch__fmt_str(path, len, &p, SCRATCH_SEG_SUFFIX);
	scratch__fmt_str(tmp, len, &t, ".tmp");
}

/* Create a new, empty file of size bytes under tmp (never following a
 * symlink, never reusing a file). Returns the fd, or -errno. */
static int create_file(const char *tmp, size_t size)
{
	int fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	int err;

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) != 0) {
		err = -errno;
		close(fd);
		unlink(tmp);
		return err;
	}
	return fd;
}

static uint32_t pow2_floor(uint64_t v)
{
	uint32_t p = 1;

	while ((uint64_t)p * 2 <= v && p * 2 <= SCRATCH_SEG_MAX_RING)
		p *= 2;
	return p;
}

/* Lay the sections out after the header, the trace ring only when ring
 * (a process whose pools are off never grows a block); returns the file
 * size. */
static size_t layout(struct scratch_seg_header *h, const struct scratch__conf *conf, bool ring)
{
	uint64_t off = sizeof(*h);
	uint64_t threads = conf->max_threads;
	uint32_t frames =
	        (uint32_t)(conf->trace_frames < SCRATCH_SEG_MAX_FRAMES ? conf->trace_frames
	                                                               : SCRATCH_SEG_MAX_FRAMES);

	if (threads < 1)
		threads = 1;
	if (threads > SCRATCH_SEG_MAX_THREADS)
		threads = SCRATCH_SEG_MAX_THREADS;
	h->proc_off = off;
	h->proc_size = (sizeof(struct scratch__proc_counters) + 63) & ~UINT64_C(63);
	off += h->proc_size;
	h->classes_off = off;
	h->classes_size = (sizeof(struct scratch__proc_classes) + 63) & ~UINT64_C(63);
	h->class_first = SCRATCH__CLS_FIRST;
	h->class_count = SCRATCH__CLS_COUNT;
	h->slot_class_off = (uint32_t) __builtin_offsetof(struct scratch_seg_thread, k);
	off += h->classes_size;
	h->threads_off = off;
	h->thread_slots = (uint32_t)threads;
	h->thread_stride = sizeof(struct scratch_seg_thread);
	off += threads * h->thread_stride;
	h->owners_off = off;
	h->owner_slots = SCRATCH_SEG_OWNER_SLOTS;
	h->owner_stride = (sizeof(struct scratch_seg_owner) + 63) & ~63u;
	off += (uint64_t)h->owner_slots * h->owner_stride;
	h->ring_off = off;
	if (ring && conf->trace && conf->trace_ring > 0) {
		h->ring_slots = pow2_floor(conf->trace_ring);
		h->record_frames = frames;
		h->record_stride = scratch_seg_record_stride(frames);
		h->flags |= SCRATCH_SEG_F_TRACE;
	}
	off += (uint64_t)h->ring_slots * h->record_stride;
	if (ring) {
		/* the block table, last: see segment.h "Block table" */
		off = (off + 63) & ~UINT64_C(63);
		h->blocks_off = off;
		h->block_slots = SCRATCH_SEG_BLOCK_SLOTS;
		h->block_stride = sizeof(struct scratch_seg_block);
		off += (uint64_t)h->block_slots * h->block_stride;
	}
	off = (off + 4095) & ~UINT64_C(4095);
	h->file_size = off;
	return (size_t)off;
}

/* The pid a segment or temporary file name starts with, or 0. */
static pid_t name_pid(const char *name)
{
	uint64_t pid = 0;
	const char *p = name[0] == '.' ? name + 1 : name;

	for (; *p >= '0' && *p <= '9' && pid < INT32_MAX; p++)
		pid = pid * 10 + (uint64_t)(*p - '0');
	if (*p != '-' || pid == 0 || pid >= INT32_MAX)
		return 0;
	return (pid_t)pid;
}

/* True when the file is a segment that asked to outlive its process. */
static bool kept_file(int dirfd, const char *name)
{
	struct scratch_seg_header h;
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	bool keep = true; /* unreadable: not ours to judge */

	if (fd < 0)
		return true;
	if (pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h))
		keep = h.magic == SCRATCH_SEG_MAGIC && (h.flags & SCRATCH_SEG_F_KEEP) != 0;
	else
		keep = false; /* a temporary file its creator never finished */
	close(fd);
	return keep;
}

/*
 * Remove files of processes that are gone: a process killed, crashed,
 * ended with _exit() or exec'd never unlinks its segment, and without a
 * scratchd running they would pile up in the (tmpfs) run directory. Each
 * new segment sweeps them. getdents64 on a stack buffer, since opendir()
 * allocates and this may run inside malloc. keep_segment files stay.
 */
static void sweep_stale(const char *dir)
{
	union {
		char buf[4096];
		uint64_t align;
	} u;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	long n;

	if (fd < 0)
		return;
	while ((n = scratch__os_getdents(fd, u.buf, sizeof(u.buf))) > 0) {
		for (long off = 0; off < n;) {
			/* struct linux_dirent64: ino, off, reclen, type, name */
			unsigned short reclen;
			const char *name = u.buf + off + 19;
			pid_t pid;

			memcpy(&reclen, u.buf + off + 16, sizeof(reclen));
			off += reclen;
			pid = name_pid(name);
			if (pid == 0 || (kill(pid, 0) == 0 || errno != ESRCH))
				continue;
			if (!kept_file(fd, name))
				unlinkat(fd, name, 0);
		}
	}
	close(fd);
}

/* The header this process starts its segment with; returns the file size. */
static size_t header_init(struct scratch_seg_header *h, const struct scratch__conf *conf,
                          uint32_t pools_off, bool lowered)
{
	size_t size;

	memset(h, 0, sizeof(*h));
	size = layout(h, conf, pools_off == SCRATCH_SEG_POOLS_ON);
	fill_identity(h);
	h->version = SCRATCH_SEG_VERSION;
	h->header_size = sizeof(*h);
	h->min_size = conf->min_size;
	h->max_size = conf->max_size;
	h->trace_frames = conf->trace_frames;
	h->pools_off = pools_off;
	if (lowered)
		h->flags |= SCRATCH_SEG_F_LOWERED;
	if (conf->keep_segment)
		h->flags |= SCRATCH_SEG_F_KEEP;
	scratch__conf_format(conf, h->conf, sizeof(h->conf));
	return size;
}

/* Create the file of size bytes under tmp, write proto into it, magic
 * last, and publish it as seg.path. The mapping, or NULL with -errno in
 * *ret_err (nothing is left behind). */
static void *publish(const struct scratch_seg_header *proto, size_t size, const char *tmp,
                     int *ret_err)
{
	void *map;
	int fd = create_file(tmp, size);

	*ret_err = fd;
	if (fd < 0)
		return NULL;
	map = scratch__os_map_file(fd, size, true, NULL);
	close(fd);
	*ret_err = -ENOMEM;
	if (map == NULL)
		goto out_unlink;
	memcpy(map, proto, sizeof(*proto));
	__atomic_store_n(&((struct scratch_seg_header *)map)->magic, SCRATCH_SEG_MAGIC,
	                 __ATOMIC_RELEASE);
	if (rename(tmp, seg.path) == 0)
		return map;
	*ret_err = -errno;
	scratch__os_unmap(map, size);
out_unlink:
	unlink(tmp);
	return NULL;
}

/*
 * Create this process's segment per conf and map it. Called once from
 * scratch__init() under its lock (possibly inside malloc), also when the
 * pools are off for a reason of the environment (pools_off), so that the
 * reason can be read. The file is complete, magic included, before
 * rename() makes it visible, so a reader never sees a half-written header
 * under the final name.
 */
int scratch__segment_open(const struct scratch__conf *conf, uint32_t pools_off, bool lowered)
{
	struct scratch_seg_header proto;
	char tmp[PATH_MAX];
	size_t size;
	void *map;
	int err;

	if (seg.hdr != NULL)
		return 0;
	err = run_dir(conf, seg.dir, sizeof(seg.dir));
	if (err != 0)
		return err;
	sweep_stale(seg.dir);
	size = header_init(&proto, conf, pools_off, lowered);
	seg_names(seg.dir, proto.pid, proto.created_ns, seg.path, tmp, sizeof(tmp));
	map = publish(&proto, size, tmp, &err);
	if (map == NULL) {
		dir_note(conf, "stats off: run directory ", seg.dir, err, " for the segment file");
		seg.path[0] = '\0';
		return err;
	}
	seg.size = size;
	seg.keep = conf->keep_segment;
	seg.snap_len = ((struct scratch_seg_header *)map)->ring_off;
	seg.snap = scratch__os_map(seg.snap_len); /* NULL: forks copy the live file */
	__atomic_store_n(&seg.hdr, (struct scratch_seg_header *)map, __ATOMIC_RELEASE);
	return 0;
}

static void copy_words(uint8_t *to, const uint8_t *from, size_t len)
{
	/* Word by word: other threads' counters change under us, atomically,
	 * and the copy reads them as such (any value a thread could see). */
	for (size_t i = 0; i < len / 8; i++)
		((uint64_t *)(void *)to)[i] = __atomic_load_n(
		        &((const uint64_t *)(const void *)from)[i], __ATOMIC_RELAXED);
	memcpy(to + len / 8 * 8, from + len / 8 * 8, len % 8);
}

/* The thread slots ever attached: [0, threads_high). Under the pool's lock
 * (which attach holds), so it does not move while a fork copies. */
static uint32_t high_slots(const struct scratch_seg_header *h)
{
	return h->threads_high < h->thread_slots ? h->threads_high : h->thread_slots;
}

/* Before fork, under the pool's lock: the state the child starts from. */
void scratch__segment_prefork(void)
{
	const struct scratch_seg_header *h = seg.hdr;
	uint32_t used = 0;

	if (h == NULL || seg.snap == NULL)
		return;
	/* Only slots below threads_high were ever written: reading one above
	 * would fault a page of the shared file in (shmem allocates on a read
	 * fault), about 4.6 MiB for the default 1024 slots. */
	for (uint32_t i = 0; i < high_slots(h); i++)
		if (__atomic_load_n(&thread_slot(i)->state, __ATOMIC_RELAXED) != SCRATCH_SEG_FREE)
			used = i + 1;
	seg.snap_part[0][0] = 0;
	seg.snap_part[0][1] = h->threads_off + (size_t)used * h->thread_stride;
	seg.snap_part[1][0] = h->owners_off;
	seg.snap_part[1][1] = h->owners_off + (size_t)h->owner_slots * h->owner_stride;
	for (int k = 0; k < 2; k++)
		copy_words(seg.snap + seg.snap_part[k][0], (const uint8_t *)h + seg.snap_part[k][0],
		           seg.snap_part[k][1] - seg.snap_part[k][0]);
}

/* Write [off, end) of src to fd at off. */
static bool write_part(int fd, const uint8_t *src, size_t off, size_t end)
{
	while (off < end) {
		ssize_t n = pwrite(fd, src + off, end - off, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		off += (size_t)n;
	}
	return true;
}

/*
 * Hand thread slot index to the calling thread (tid): zeroed counters,
 * state LIVE. The slot is BUSY while it is reset so a reader skips it
 * rather than mixing the old and the new thread.
 */
struct scratch__counters *scratch__segment_thread_attach(uint32_t index, pid_t tid)
{
	struct scratch_seg_thread *t;

	if (seg.hdr == NULL || index >= seg.hdr->thread_slots)
		return NULL;
	t = thread_slot(index);
	__atomic_store_n(&t->state, SCRATCH_SEG_BUSY, __ATOMIC_RELAXED);
	SCRATCH__FENCE_RELEASE();
	/* as an owner slot's reuse: inside a sequence count that only grows */
	scratch__seq_begin(&t->c.seq);
	memset((char *)&t->c + sizeof(t->c.seq), 0, sizeof(t->c) - sizeof(t->c.seq));
	memset(&t->k, 0, sizeof(t->k));
	t->tid = (int32_t)tid;
	t->generation++;
	t->attach_ns = scratch__os_realtime_ns();
	t->exit_ns = 0;
	read_comm(tid, t->name, sizeof(t->name));
	scratch__seq_end(&t->c.seq);
	__atomic_store_n(&t->state, SCRATCH_SEG_LIVE, __ATOMIC_RELEASE);
	/* under the pool's lock: one writer */
	if (seg.hdr->threads_high < index + 1)
		__atomic_store_n(&seg.hdr->threads_high, index + 1, __ATOMIC_RELEASE);
	my_slot = index + 1;
	return &t->c;
}

void scratch__segment_thread_exit(uint32_t index)
{
	struct scratch_seg_thread *t;

	if (seg.hdr == NULL || index >= seg.hdr->thread_slots)
		return;
	t = thread_slot(index);
	t->exit_ns = scratch__os_realtime_ns();
	__atomic_store_n(&t->state, SCRATCH_SEG_EXITED, __ATOMIC_RELEASE);
	if (my_slot == index + 1)
		my_slot = 0;
}

void scratch__segment_thread_reclaim(uint32_t index)
{
	if (seg.hdr == NULL || index >= seg.hdr->thread_slots)
		return;
	__atomic_store_n(&thread_slot(index)->state, SCRATCH_SEG_FREE, __ATOMIC_RELEASE);
}

struct scratch__proc_counters *scratch__segment_proc(void)
{
	if (seg.hdr == NULL)
		return NULL;
	return (struct scratch__proc_counters *)seg_at(seg.hdr->proc_off);
}

struct scratch__proc_classes *scratch__segment_proc_classes(void)
{
	if (seg.hdr == NULL || seg.hdr->class_count == 0)
		return NULL;
	return (struct scratch__proc_classes *)seg_at(seg.hdr->classes_off);
}

/* Give the child its own copy at the same address: a new file when the run
 * directory takes one, else an anonymous memfd (invisible to scratchd, but
 * the child no longer writes into its parent's counters). tmp (PATH_MAX
 * bytes) gets the temporary name the caller publishes by rename, or "" for
 * a memfd. */
static bool fork_remap(const struct scratch_seg_header *h, char *tmp)
{
	int fd;

	seg_names(seg.dir, getpid(), scratch__os_realtime_ns(), seg.path, tmp, PATH_MAX);
	fd = create_file(tmp, seg.size);
	if (fd < 0) {
		seg.path[0] = '\0';
		tmp[0] = '\0';
		fd = scratch__os_memfd("scratch-segment", seg.size);
		if (fd < 0)
			return false;
	}
	if (seg.snap != NULL) {
		for (int k = 0; k < 2; k++)
			if (!write_part(fd, seg.snap, seg.snap_part[k][0], seg.snap_part[k][1]))
				goto out_unlink;
	} else if (!write_part(fd, (const uint8_t *)seg.hdr, 0, seg.size)) {
		goto out_unlink;
	}
	if (scratch__os_map_file(fd, seg.size, true, (void *)h) == NULL)
		goto out_unlink;
	close(fd);
	return true;
out_unlink:
	if (tmp[0] != '\0')
		unlink(tmp);
	close(fd);
	return false;
}

/*
 * In the child after fork (only the forking thread exists): move to a
 * segment of its own at the same address, since the pools hold pointers
 * into it. The child inherits its parent's counters (it inherits the blocks
 * too), not its trace ring; every other thread is marked exited.
 */
void scratch__segment_atfork_child(void)
{
	struct scratch_seg_header *h = seg.hdr;
	char tmp[PATH_MAX];

	if (h == NULL)
		return;
	if (!fork_remap(h, tmp)) {
		/* No file and no memfd (no descriptor left): the pools keep
		 * pointers into the segment, so a private copy, which nobody
		 * reads, is moved to the same address. The copy is made first:
		 * without memory for it the mapping stays, and the child
		 * writes into its parent's counters. */
		void *p = scratch__os_map(seg.size);

		if (p != NULL) {
			if (seg.snap == NULL)
				memcpy(p, h, seg.size);
			for (int k = 0; seg.snap != NULL && k < 2; k++)
				memcpy((uint8_t *)p + seg.snap_part[k][0],
				       seg.snap + seg.snap_part[k][0],
				       seg.snap_part[k][1] - seg.snap_part[k][0]);
			if (scratch__os_move(p, (void *)h, seg.size) != 0)
				scratch__os_unmap(p, seg.size);
		}
		seg.hdr = NULL;
		return;
	}
	fill_identity(h);
	h->forks++;
	h->exited = 0;
	h->exit_ns = 0;
	h->ring_head = 0;
	/* From the snapshot, the ring was never written: the new file holds
	 * zeros there, and touching them would only fault the pages in. */
	if (h->ring_slots > 0 && seg.snap == NULL)
		memset(seg_at(h->ring_off), 0, (size_t)h->ring_slots * h->record_stride);
	for (uint32_t i = 0; i < high_slots(h); i++) {
		struct scratch_seg_thread *t = thread_slot(i);

		if (i + 1 == my_slot)
			t->tid = (int32_t)scratch__os_gettid();
		else if (t->state == SCRATCH_SEG_LIVE || t->state == SCRATCH_SEG_BUSY)
			t->state = SCRATCH_SEG_EXITED;
	}
	/* Published only now, with the child's identity in place: a reader
	 * copies pid and start time once, when it adopts the file. */
	if (tmp[0] != '\0' && rename(tmp, seg.path) != 0) {
		unlink(tmp);
		seg.path[0] = '\0';
	}
}

/* Claim a free owner slot (never used ones first, then released ones). */
static struct scratch_seg_owner *owner_claim(void)
{
	for (int pass = 0; pass < 2; pass++) {
		uint32_t from = pass == 0 ? SCRATCH_SEG_FREE : SCRATCH_SEG_EXITED;

		for (uint32_t i = 0; i < seg.hdr->owner_slots; i++) {
			struct scratch_seg_owner *o = owner_slot(i);
			uint32_t expect = from;

			if (__atomic_compare_exchange_n(&o->state, &expect, SCRATCH_SEG_BUSY, false,
			                                __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
				o->id = i + 1;
				return o;
			}
		}
	}
	return NULL;
}

uint32_t scratch__owner_register(enum scratch__owner_kind kind, const char *name)
{
	struct scratch_seg_owner *o;
	size_t n = 0;

	if (seg.hdr == NULL)
		return 0;
	o = owner_claim();
	if (o == NULL)
		return 0;
	/* A reused slot changes inside its sequence count, which only ever
	 * grows: a reader that copied part of the old owner sees the count
	 * move and reads again (zeroing it could leave it where it was). */
	scratch__seq_begin(&o->c.seq);
	memset((char *)&o->c + sizeof(o->c.seq), 0, sizeof(o->c) - sizeof(o->c.seq));
	memset(o->name, 0, sizeof(o->name));
	while (name != NULL && name[n] != '\0' && n < sizeof(o->name) - 1) {
		o->name[n] = name[n];
		n++;
	}
	o->kind = (uint32_t)kind;
	o->generation++;
	o->created_ns = scratch__os_realtime_ns();
	scratch__seq_end(&o->c.seq);
	__atomic_store_n(&o->state, SCRATCH_SEG_LIVE, __ATOMIC_RELEASE);
	return o->id;
}

struct scratch__owner_counters *scratch__owner_counters(uint32_t id)
{
	if (seg.hdr == NULL || id == 0 || id > seg.hdr->owner_slots)
		return NULL;
	return &owner_slot(id - 1)->c;
}

/* The slot keeps its last counters (readers show the owner as gone) until
 * a new owner claims it. */
void scratch__owner_unregister(uint32_t id)
{
	if (seg.hdr == NULL || id == 0 || id > seg.hdr->owner_slots)
		return;
	__atomic_store_n(&owner_slot(id - 1)->state, SCRATCH_SEG_EXITED, __ATOMIC_RELEASE);
}

/*
 * At normal exit: mark the segment exited (scratchd keeps its descriptor,
 * and so the final state) and unlink the file unless keep_segment. A
 * destructor rather than atexit(): registering from inside malloc is not
 * safe, and this runs in a forked child for the child's own file too.
 */
__attribute__((destructor)) static void segment_fini(void)
{
	struct scratch_seg_header *h = seg.hdr;

	if (h == NULL)
		return;
	h->exit_ns = scratch__os_realtime_ns();
	__atomic_store_n(&h->exited, 1, __ATOMIC_RELEASE);
	if (!seg.keep && seg.path[0] != '\0')
		unlink(seg.path);
}

/* ---------------------------------------------------------------------- */
/* Block table (segment.h "Block table"): the pool's slow paths only        */
/* ---------------------------------------------------------------------- */

void scratch__segment_region(uintptr_t base, uint64_t size)
{
	if (seg.hdr == NULL || seg.hdr->blocks_off == 0)
		return;
	seg.hdr->region_size = size;
	__atomic_store_n(&seg.hdr->region_base, (uint64_t)base, __ATOMIC_RELEASE);
}

/* Entry of block id, or NULL (no table, or id beyond it). */
static struct scratch_seg_block *block_entry(uint32_t id)
{
	if (seg.hdr == NULL || seg.hdr->blocks_off == 0 || id == 0 || id > seg.hdr->block_slots)
		return NULL;
	return (struct scratch_seg_block *)seg_at(seg.hdr->blocks_off +
	                                          (uint64_t)(id - 1) * seg.hdr->block_stride);
}

/* The seq bracket of an entry: one writer at a time (the block's holder),
 * so plain increments; the fences order the fields against it. */
static void block_begin(struct scratch_seg_block *b)
{
	__atomic_store_n(&b->seq, b->seq + 1, __ATOMIC_RELAXED);
	SCRATCH__FENCE_RELEASE();
}

static void block_end(struct scratch_seg_block *b)
{
	__atomic_store_n(&b->seq, b->seq + 1, __ATOMIC_RELEASE);
}

/*
 * A thread leased block id on a slow path: owner is the tid whose cache
 * owns it now (0 for an orphan lease), lessee the tid that leased it. A new
 * owner after another counts as a handover.
 */
void scratch__segment_block_lease(uint32_t id, uintptr_t start, uint64_t cap, uint32_t cls,
                                  pid_t owner, pid_t lessee)
{
	struct scratch_seg_block *b = block_entry(id);

	if (b == NULL)
		return;
	block_begin(b);
	if (b->owner != 0 && owner != 0 && b->owner != (int32_t)owner)
		b->handovers++;
	b->start = start;
	b->capacity = cap;
	b->cls = cls;
	b->state = SCRATCH_SEG_BLK_OWNED;
	if (owner != 0)
		b->owner = (int32_t)owner;
	b->lessee = lessee != owner ? (int32_t)lessee : 0;
	block_end(b);
}

/* Thread freer freed block id, which it does not own. */
void scratch__segment_block_freed(uint32_t id, pid_t freer)
{
	struct scratch_seg_block *b = block_entry(id);
	uint32_t n;

	if (b == NULL)
		return;
	block_begin(b);
	b->state = SCRATCH_SEG_BLK_REMOTE;
	n = b->nfreers < SCRATCH_SEG_BLOCK_FREERS ? b->nfreers : SCRATCH_SEG_BLOCK_FREERS;
	for (uint32_t i = 0; i < n; i++)
		if (b->freers[i] == (int32_t)freer)
			goto out;
	if (b->nfreers < SCRATCH_SEG_BLOCK_FREERS)
		b->freers[b->nfreers] = (int32_t)freer;
	b->nfreers++;
out:
	block_end(b);
}

/* Block id went to the depot or (EMPTY) gave its pages back: an empty
 * block starts a new life, with no remote freer. */
void scratch__segment_block_state(uint32_t id, uint32_t state)
{
	struct scratch_seg_block *b = block_entry(id);

	if (b == NULL)
		return;
	block_begin(b);
	b->state = state;
	b->lessee = 0;
	if (state == SCRATCH_SEG_BLK_EMPTY) {
		b->nfreers = 0;
		memset(b->freers, 0, sizeof(b->freers));
	}
	block_end(b);
}

void scratch__segment_block_carved(uint32_t id, pid_t tid, uint64_t growth)
{
	struct scratch_seg_block *b = block_entry(id);

	if (b == NULL)
		return;
	block_begin(b);
	b->growth = growth;
	b->carver = (int32_t)tid;
	block_end(b);
}
