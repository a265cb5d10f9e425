/*
 * placement.h - on which NUMA node each page of another process's address
 * range sits, from move_pages(2) with nodes=NULL: the audit's "placement
 * measured" tier.
 *
 * move_pages with nodes=NULL only reports: it never migrates, faults or
 * makes present a page, so reading the placement of a range the process has
 * not touched leaves it untouched. Pages are reported as runs of adjacent
 * pages on the same node; a page that is not present (-ENOENT, or -EFAULT
 * for an address with no page or no mapping) is "absent", i.e. untouched
 * (or swapped out). Any other per-page status is "unknown".
 *
 * Permissions: the kernel requires that the caller may ptrace-read the
 * target (same uid and no setuid transition, or CAP_SYS_NICE): scratchd
 * runs as its hosts' user. Every function returns 0 or a negative errno
 * and, on failure, writes one human line into err (errlen bytes; err may be
 * NULL). Out parameters are untouched on failure. Nothing is printed.
 */
#ifndef SCRATCH_STATS_PLACEMENT_H
#define SCRATCH_STATS_PLACEMENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PLACEMENT_ABSENT  (-1) /* not present: untouched, or swapped out */
#define PLACEMENT_UNKNOWN (-2) /* another per-page status (the kernel's) */
#define PLACEMENT_BATCH   4096 /* pages per move_pages call */

/* A run of pages: [start, start + length) on node (>= 0) or absent/unknown. */
struct placement_run {
	uintptr_t start;
	size_t length; /* bytes, a multiple of the page size */
	int node;
};

/* What one read did: the runs, and how many pages move_pages was asked for. */
struct placement {
	struct placement_run *runs; /* malloc'd; free with placement_free() */
	size_t nruns;
	size_t queries;      /* pages passed to move_pages */
	size_t huge_strides; /* 2 MiB (or hugetlb) strides queried once */
	size_t page_size;
};

/* Flags for placement_read(). */
enum {
	/* One query per huge page where /proc/PID/smaps shows the mapping is
	 * entirely huge-page backed (AnonHugePages == Rss, or a hugetlb
	 * KernelPageSize): every present page there is a whole huge page. */
	PLACEMENT_HUGE = 1u << 0,
};

/*
 * Read the placement of [addr, addr + len) in process pid (0: the caller).
 * addr is rounded down and addr + len up to the page size. Returns 0 with
 * ret filled, or: -ESRCH (the process is gone), -EPERM (not allowed: another
 * user's process), -EINVAL (len 0, or the range wraps), -ENOMEM, or the
 * errno move_pages gave. With PLACEMENT_HUGE, a smaps read that fails only
 * turns the optimisation off.
 */
int placement_read(pid_t pid, uintptr_t addr, size_t len, unsigned flags, struct placement *ret,
                   char *err, size_t errlen);

/* Free the runs of a placement filled by placement_read(). */
void placement_free(struct placement *p);

/*
 * Bytes of p on node (>= 0, PLACEMENT_ABSENT or PLACEMENT_UNKNOWN) within
 * [from, to): a sum over the runs, clipped.
 */
size_t placement_bytes(const struct placement *p, int node, uintptr_t from, uintptr_t to);

/*
 * The huge-page strides of pid's smaps text (NUL-terminated) that overlap
 * [lo, hi): for each mapping that is entirely huge-backed, calls
 * fn(start, end, page_bytes, arg). Pure (for tests); returns the number of
 * such mappings, or -EINVAL for text that is not smaps.
 */
int placement_parse_smaps(const char *text, uintptr_t lo, uintptr_t hi,
                          void (*fn)(uintptr_t start, uintptr_t end, size_t page_bytes, void *arg),
                          void *arg);

#endif /* SCRATCH_STATS_PLACEMENT_H */
