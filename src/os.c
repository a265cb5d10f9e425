/*
 * os.c - the one place that talks to the kernel about memory, futexes,
 * CPUs and the few raw file calls libc would wrap with an allocation
 * (musl's glue.h idea). Everything else in libscratch is portable C
 * over these functions. Nothing here allocates.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <linux/mempolicy.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

void *scratch__os_reserve(size_t size, size_t align)
{
	size_t span = size + align;
	char *p, *start;

	/* Over-map by one alignment unit, then cut both ends off. Untouched
	 * pages of a MAP_NORESERVE mapping cost neither memory nor swap, and
	 * PROT_NONE ones are not even faulted in by a host's
	 * mlockall(MCL_CURRENT), which populates every accessible mapping:
	 * the whole reservation, read-write, would be tens of GiB. */
	p = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	start = (char *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
	if (start > p)
		munmap(p, (size_t)(start - p));
	if (start + size < p + span)
		munmap(start + size, (size_t)(p + span - (start + size)));
	return start;
}

bool scratch__os_commit(void *p, size_t size)
{
	int saved = errno;
	bool ok = mprotect(p, size, PROT_READ | PROT_WRITE) == 0;

	errno = saved;
	return ok;
}

bool scratch__os_locked(void *probe)
{
	int saved = errno;
	bool locked = madvise(probe, (size_t)sysconf(_SC_PAGESIZE), MADV_DONTNEED) != 0 &&
	              errno == EINVAL;

	errno = saved;
	return locked;
}

void *scratch__os_map(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

void scratch__os_unmap(void *p, size_t size)
{
	int saved = errno;

	if (p != NULL)
		munmap(p, size);
	errno = saved;
}

void *scratch__os_map_file(int fd, size_t size, bool writable, void *addr)
{
	int prot = PROT_READ | (writable ? PROT_WRITE : 0);
	int flags = MAP_SHARED | (addr != NULL ? MAP_FIXED : 0);
	void *p = mmap(addr, size, prot, flags, fd, 0);

	return p == MAP_FAILED ? NULL : p;
}

int scratch__os_move(void *from, void *to, size_t size)
{
	if (mremap(from, size, size, MREMAP_MAYMOVE | MREMAP_FIXED, to) == MAP_FAILED)
		return -errno;
	return 0;
}

#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4 /* Linux 5.7 */
#endif

int scratch__os_move_pages(void *from, void *to, size_t size)
{
	int saved = errno, err = 0;

	if (mremap(from, size, size, MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP, to) ==
	    MAP_FAILED)
		err = -errno;
	errno = saved;
	return err;
}

int scratch__os_memfd(const char *name, size_t size)
{
	int fd = memfd_create(name, MFD_CLOEXEC);
	int err;

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) != 0) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

long scratch__os_getdents(int fd, void *buf, size_t len)
{
	long n = syscall(SYS_getdents64, fd, buf, len);

	return n < 0 ? -errno : n;
}

bool scratch__os_decommit(void *p, size_t size)
{
	int saved = errno;
	/* MADV_DONTNEED on private anonymous memory: the pages go back now and
	 * the range reads as zero afterwards, which calloc relies on. Locked
	 * pages refuse (EINVAL) and keep their contents. */
	bool ok = madvise(p, size, MADV_DONTNEED) == 0;

	errno = saved;
	return ok;
}

bool scratch__os_wipe_on_fork(void *p, size_t size, bool on)
{
	int saved = errno;
	bool ok = madvise(p, size, on ? MADV_WIPEONFORK : MADV_KEEPONFORK) == 0;

	errno = saved;
	return ok;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

bool scratch__os_populate(void *p, size_t size)
{
	static bool unknown; /* the kernel does not know the advice */
	int saved = errno;
	bool ok;

	if (__atomic_load_n(&unknown, __ATOMIC_RELAXED))
		return false;
	ok = madvise(p, size, MADV_POPULATE_WRITE) == 0;
	if (!ok && errno == EINVAL)
		__atomic_store_n(&unknown, true, __ATOMIC_RELAXED);
	errno = saved;
	return ok;
}

long scratch__os_resident(void *p, size_t size, unsigned char *vec, size_t pages)
{
	int saved = errno;
	long n = 0;

	if (mincore(p, size, vec) != 0) {
		errno = saved;
		return -1;
	}
	for (size_t i = 0; i < pages; i++)
		n += vec[i] & 1;
	return n;
}

/* Read up to len - 1 bytes of the file at path into buf, NUL-terminated
 * (empty when it cannot be read); the descriptor is closed before the
 * return. Returns the bytes read, or -1. errno is the caller's to keep. */
static ssize_t read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, len - 1) : -1;

	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return n;
}

void scratch__os_hugepage(void *p, size_t size, bool on)
{
	int saved = errno;

	madvise(p, size, on ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	errno = saved;
}

bool scratch__os_thp_on_request(void)
{
	char buf[128];
	int saved = errno;
	bool yes;

	read_small("/sys/kernel/mm/transparent_hugepage/enabled", buf, sizeof(buf));
	yes = strstr(buf, "[madvise]") != NULL;
	errno = saved;
	return yes;
}

int scratch__os_futex_wait(uint32_t *addr, uint32_t expected, long timeout_ns)
{
	struct timespec ts, *tsp = NULL;
	int saved = errno, rc = 0;

	if (timeout_ns >= 0) {
		ts.tv_sec = timeout_ns / 1000000000L;
		ts.tv_nsec = timeout_ns % 1000000000L;
		tsp = &ts;
	}
	if (syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, expected, tsp, NULL, 0) != 0)
		rc = -errno;
	errno = saved;
	return rc;
}

void scratch__os_futex_wake(uint32_t *addr, int count)
{
	int saved = errno;

	syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, count, NULL, NULL, 0);
	errno = saved;
}

void scratch__os_getcpu(int *ret_cpu, int *ret_node)
{
	unsigned cpu, node;
	int saved = errno;

	/* glibc's getcpu goes through the vDSO: no real system call on x86-64. */
	if (getcpu(&cpu, &node) == 0) {
		*ret_cpu = (int)cpu;
		*ret_node = (int)node;
	} else {
		*ret_cpu = -1;
		*ret_node = -1;
	}
	errno = saved;
}

void scratch__os_nodes(unsigned *ret_count, unsigned *ret_span)
{
	/* 1024 bits: Debian's MAX_NUMNODES; the kernel wants at least its
	 * nr_node_ids, and clears what it does not use */
	unsigned long mask[1024 / (8 * sizeof(unsigned long))];
	unsigned count = 0, span = 0;
	int saved = errno;

	if (syscall(SYS_get_mempolicy, NULL, mask, 8 * sizeof(mask), NULL, MPOL_F_MEMS_ALLOWED) !=
	    0) {
		*ret_count = 1;
		*ret_span = 1;
		errno = saved;
		return;
	}
	for (unsigned i = 0; i < 8 * sizeof(mask); i++)
		if ((mask[i / (8 * sizeof(long))] >> (i % (8 * sizeof(long)))) & 1) {
			count++;
			span = i + 1;
		}
	*ret_count = count > 0 ? count : 1;
	*ret_span = span > 0 ? span : 1;
	errno = saved;
}

bool scratch__os_page_nodes(void **pages, unsigned n, int *ret_status)
{
	int saved = errno;
	/* nodes NULL: move_pages(2) only reports, it never moves or faults */
	long rc = syscall(SYS_move_pages, 0, (unsigned long)n, pages, NULL, ret_status, 0);

	errno = saved;
	return rc == 0;
}

bool scratch__os_affinity(pid_t tid, uint64_t *ret_mask, size_t words)
{
	int saved = errno;
	long rc;

	memset(ret_mask, 0, words * sizeof(uint64_t));
	/* the raw call: glibc's wrapper takes a cpu_set_t of its own size */
	rc = syscall(SYS_sched_getaffinity, tid, words * sizeof(uint64_t), ret_mask);
	errno = saved;
	return rc > 0;
}

/* Parse a sysfs CPU list ("0-3,8,10-11\n") into mask (words of 64 CPUs).
 * False on a CPU beyond the mask or text that is not a list. */
static bool parse_cpulist(const char *s, uint64_t *mask, size_t words)
{
	unsigned long lo, hi;
	char *end;

	while (*s != '\0' && *s != '\n') {
		lo = hi = strtoul(s, &end, 10);
		if (end == s)
			return false;
		if (*end == '-') {
			s = end + 1;
			hi = strtoul(s, &end, 10);
			if (end == s || hi < lo)
				return false;
		}
		if (hi >= words * 64)
			return false;
		for (unsigned long c = lo; c <= hi; c++)
			mask[c / 64] |= UINT64_C(1) << (c % 64);
		s = *end == ',' ? end + 1 : end;
	}
	return true;
}

bool scratch__os_node_cpus(unsigned node, uint64_t *ret_mask, size_t words)
{
	char path[64], buf[1024];
	size_t pos = 0;
	int saved = errno;
	bool ok;

	memset(ret_mask, 0, words * sizeof(uint64_t));
	scratch__fmt_str(path, sizeof(path), &pos, "/sys/devices/system/node/node");
	scratch__fmt_u64(path, sizeof(path), &pos, node);
	scratch__fmt_str(path, sizeof(path), &pos, "/cpulist");
	ok = read_small(path, buf, sizeof(buf)) > 0 && parse_cpulist(buf, ret_mask, words);
	errno = saved;
	return ok;
}

pid_t scratch__os_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

bool scratch__os_thread_gone(pid_t tid)
{
	int saved = errno;
	bool gone = syscall(SYS_tgkill, getpid(), tid, 0) != 0 && errno == ESRCH;

	errno = saved;
	return gone;
}

unsigned scratch__os_ncpu(void)
{
	cpu_set_t set;
	int n;

	if (sched_getaffinity(0, sizeof(set), &set) == 0) {
		n = CPU_COUNT(&set);
		if (n > 0)
			return (unsigned)n;
	}
	n = (int)sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (unsigned)n : 1;
}

uint64_t scratch__os_realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t scratch__os_monotonic_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

bool scratch__os_membarrier_register(void)
{
	int saved = errno;
	long rc = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0);

	errno = saved;
	return rc == 0;
}

bool scratch__os_membarrier(void)
{
	int saved = errno;
	long rc = syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);

	errno = saved;
	return rc == 0;
}

uint64_t scratch__os_as_room(void)
{
	struct rlimit rl;
	char buf[64];
	uint64_t pages = 0, used;
	int saved = errno;

	if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) {
		errno = saved;
		return UINT64_MAX;
	}
	/* the size of the address space now: statm's first field, in pages */
	read_small("/proc/self/statm", buf, sizeof(buf));
	for (size_t i = 0; buf[i] >= '0' && buf[i] <= '9'; i++)
		pages = pages * 10 + (uint64_t)(buf[i] - '0');
	errno = saved;
	used = pages * (uint64_t)sysconf(_SC_PAGESIZE);
	return rl.rlim_cur > used ? rl.rlim_cur - used : 0;
}
