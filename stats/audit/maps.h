/*
 * maps.h - every mapping of a process, by category, with its resident
 * bytes per NUMA node: pure parsers of /proc/PID/maps, /proc/PID/numa_maps
 * and the stack pointer a thread's /proc/PID/task/TID/syscall (or stat)
 * shows, and the rules that put each mapping in one category. The audit's
 * whole-process inventory (audit.h) is built from these; nothing here
 * reads a file or talks to the kernel, so the unit suite feeds it hostile
 * text.
 *
 * Per-node bytes come from numa_maps alone: N<node>=pages times the
 * mapping's kernelpagesize_kB, the figure numastat(8) -p sums (which
 * multiplies a hugetlb mapping's pages by the huge page size: the same
 * bytes). numa_maps counts the pages mapped in the process's own page
 * tables, so a file page is resident for the process once it is mapped
 * there, not merely cached.
 *
 * The categories (maps_classify), tried in this order:
 *   pool   inside the pools' region (the stats segment names it);
 *   heap   "[heap]" (the brk heap, glibc's main arena), or a glibc
 *          per-thread arena heap: an anonymous rw-p mapping whose start
 *          is aligned to HEAP_MAX_SIZE (64 MiB on 64-bit), followed by the
 *          ---p tail of its reservation, head and tail exactly
 *          HEAP_MAX_SIZE (or a whole rw-p mapping of that size and
 *          alignment, an arena grown to its maximum); the evidence is said;
 *   stack  "[stack]" (the main thread's), or an anonymous mapping that
 *          holds a thread's stack pointer, and the ---p guard right below
 *          it (unless the kernel merged that stack with an adjacent
 *          anonymous mapping: too large for a stack, it stays anon);
 *   shm    shared memory: a mapping of /dev/shm, SYSV shared memory
 *          ("/SYSV..."), a memfd ("/memfd:..."), anonymous shared memory
 *          ("/dev/zero (deleted)", or an 's' mapping with no path);
 *   file   any other mapping of a file, named by its path (a MAP_SHARED
 *          one of a regular file too: model weights are often mapped so);
 *   other  the kernel's: [vdso], [vvar], [vsyscall] and other bracketed
 *          names;
 *   anon   the rest: anonymous private memory outside the pools (the
 *          host's own mmaps, blocks the backend served), with its size
 *          against the pools' max_size said.
 *
 * Functions return 0 or a negative errno: -EINVAL for text that is not
 * what it should be (the first bad line stops the parse, nothing is
 * half-filled), -ENOMEM, -ERANGE for a node id at or above
 * TOPOLOGY_MAX_NODES. Out parameters are untouched on failure.
 */
#ifndef SCRATCH_STATS_MAPS_H
#define SCRATCH_STATS_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "topology.h"

#define MAPS_HEAP_MAX   (64u << 20) /* glibc's HEAP_MAX_SIZE on 64-bit */
#define MAPS_WHY_LEN    160
#define MAPS_POLICY_LEN 48

enum maps_category {
	MAPS_POOL = 0,
	MAPS_FILE = 1,
	MAPS_ANON = 2,
	MAPS_HEAP = 3,
	MAPS_STACK = 4,
	MAPS_SHM = 5,
	MAPS_OTHER = 6,
};
#define MAPS_CATEGORIES 7

/* One mapping (VMA) of /proc/PID/maps, and what numa_maps said of it. */
struct maps_entry {
	uint64_t start, end;
	uint64_t offset; /* the file offset of start */
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	char perms[5];    /* "rw-p" */
	const char *path; /* "" when anonymous; points into maps.text */
	/* numa_maps */
	bool have_numa; /* a numa_maps line named this start */
	bool numa_heap, numa_stack, numa_huge;
	char policy[MAPS_POLICY_LEN]; /* "default", "interleave:0-1", ... */
	uint64_t page_bytes;          /* kernelpagesize_kB * 1024, 4096 without pages */
	uint64_t anon_pages;          /* anon= */
	uint64_t resident;            /* the sum of node bytes */
	/* maps_classify */
	enum maps_category category;
	pid_t tid;              /* stack: its thread, 0 when not known */
	char why[MAPS_WHY_LEN]; /* the evidence for the category */
};

struct maps {
	struct maps_entry *e; /* by start address */
	size_t n;
	unsigned nodes;       /* node columns of node_pages: highest node id + 1 */
	uint64_t *node_pages; /* n * nodes page counts, entry-major */
	/* numa_maps lines whose start no maps entry has: the process changed
	 * between the two reads; their bytes still count per node */
	uint64_t moved_bytes[TOPOLOGY_MAX_NODES];
	size_t moved_lines;
	char *text; /* the maps text, owned: paths point into it */
};

/* A thread's stack pointer, for maps_classify. */
struct maps_stack {
	pid_t tid;
	uint64_t sp;
};

/* What maps_classify needs besides the text. */
struct maps_context {
	pid_t pid;                 /* its main thread owns [stack] */
	uint64_t pool_lo, pool_hi; /* the pools' region, 0/0 when unknown */
	uint64_t max_size;         /* the pools' max_size, 0 when unknown */
	/* the largest thread stack expected (glibc's default: RLIMIT_STACK),
	 * 0: no bound. A mapping holding a stack pointer but larger than
	 * this by more than 1 MiB is a stack the kernel merged with the
	 * anonymous mapping above it: it stays anon, and says so. */
	uint64_t stack_max;
	/* threads whose stack pointer is known; when two fall in one
	 * mapping, the later in the array wins */
	const struct maps_stack *stacks;
	size_t nstacks;
};

/*
 * Parse /proc/PID/maps text (NUL-terminated) into ret: one entry per line,
 * by address; paths keep the kernel's escapes ("\012" for a newline) and
 * a " (deleted)" suffix. Returns 0, -EINVAL (a malformed line, or lines
 * out of order or overlapping), -ENOMEM. Free with maps_free().
 */
int maps_parse(const char *text, struct maps *ret);

/*
 * Join /proc/PID/numa_maps text into m: each line's policy, keywords and
 * N<node>=pages go to the entry with the same start; a line whose start no
 * entry has counts in m->moved_bytes. Per-node counts replace what an
 * earlier join put there. Returns 0, -EINVAL (a malformed line: no start
 * address, an N token that is not N<digits>=<digits>, a page size that is
 * not a positive multiple of 4), -ERANGE (a node id >= TOPOLOGY_MAX_NODES),
 * -ENOMEM; on failure m is as it was.
 */
int maps_join_numa(struct maps *m, const char *text);

/* Put every entry of m in its category (the rules in the file header). */
void maps_classify(struct maps *m, const struct maps_context *c);

/* Entry i's resident bytes on node (0 for a node numa_maps did not name). */
uint64_t maps_node_bytes(const struct maps *m, size_t i, unsigned node);

/* The entry that contains addr, or NULL. */
const struct maps_entry *maps_find(const struct maps *m, uint64_t addr);

/*
 * The stack pointer in a /proc/PID/task/TID/syscall line: the second last
 * field of "NR ARG1..ARG6 SP PC" or of "-1 SP PC" (blocked outside a
 * system call). Returns 0, -EAGAIN for "running" (no stack pointer while
 * it runs), -EINVAL for anything else.
 */
int maps_parse_syscall(const char *text, uint64_t *ret_sp);

/*
 * The stack pointer of a /proc/PID/task/TID/stat line (len bytes): field
 * 29, kstkesp. Since Linux 4.x it is 0 unless the thread is dumping core.
 * Returns 0, -ENODATA when it is 0, -EINVAL for a line that does not
 * parse.
 */
int maps_parse_stat_sp(const char *line, size_t len, uint64_t *ret_sp);

/* "pool", "file", "anon", "heap", "stack", "shm", "other". */
const char *maps_category_name(enum maps_category c);

void maps_free(struct maps *m);

#endif /* SCRATCH_STATS_MAPS_H */
