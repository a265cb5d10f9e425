/*
 * topology.h - where a process's threads run, in NUMA nodes: the CPU -> node
 * map from sysfs, and per thread of a pid its name, last CPU, node and
 * affinity as a node set. The audit's "use" tier (which node each thread is
 * on) is built from these.
 *
 * Everything read here is untrusted and racy: /proc/PID/task/TID may vanish
 * between the directory listing and the read, a thread may rename itself
 * while its stat line is read, and comm may hold spaces and parentheses.
 * Every function returns 0 or a negative errno and, on failure, writes one
 * human line into err (errlen bytes, NUL-terminated; err may be NULL). Out
 * parameters are untouched on failure. Nothing here writes to stdout or
 * stderr.
 *
 * Node sets are bit masks (bit n = node n), so node ids stop at
 * TOPOLOGY_MAX_NODES - 1; sysfs with a larger node id is refused (-ERANGE).
 */
#ifndef SCRATCH_STATS_TOPOLOGY_H
#define SCRATCH_STATS_TOPOLOGY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define TOPOLOGY_MAX_NODES 64
#define TOPOLOGY_MAX_CPUS  8192
#define TOPOLOGY_NAME_LEN  64 /* comm is 16 bytes today; room for more */
#define TOPOLOGY_SYSFS     "/sys/devices/system/node"

typedef uint64_t topology_nodeset_t;

/*
 * The machine's CPU -> node map. cpu_node[c] is the node of CPU c, or -1
 * for a CPU that no node lists (offline, or absent). nodes is the highest
 * node id plus one; node_mask the nodes that exist (ids may have holes).
 * fallback is true when the sysfs directory was missing (a kernel without
 * CONFIG_NUMA, or a container without /sys): then every configured CPU is
 * on node 0.
 */
struct topology {
	unsigned nodes;
	topology_nodeset_t node_mask;
	unsigned ncpus; /* entries in cpu_node: highest CPU id listed + 1 */
	int *cpu_node;
	bool fallback;
};

/* One thread of a process, as last seen. */
struct topology_thread {
	pid_t tid;
	char name[TOPOLOGY_NAME_LEN]; /* comm, raw bytes: mask before printing */
	char state;                   /* stat field 3: R, S, D, ... */
	int cpu;                      /* stat field 39: the CPU it last ran on */
	int node;                     /* that CPU's node, -1 when unknown */
	topology_nodeset_t affinity;  /* nodes of the CPUs it may run on */
};

/*
 * Load the map from root (NULL: TOPOLOGY_SYSFS), reading each
 * root/nodeN/cpulist. A missing root gives the single-node fallback (with
 * sysconf(_SC_NPROCESSORS_CONF) CPUs); a node directory whose cpulist
 * cannot be read is an error, not the fallback. Returns 0, -ENOMEM, -ERANGE (a node
 * id >= TOPOLOGY_MAX_NODES or a CPU id >= TOPOLOGY_MAX_CPUS), -EINVAL (a
 * cpulist that does not parse), or the errno of a failed read. On success
 * the caller frees with topology_free().
 */
int topology_load(const char *root, struct topology *ret, char *err, size_t errlen);

/* Free what topology_load() allocated; t may be zeroed or already freed. */
void topology_free(struct topology *t);

/* The node of cpu, or -1 when cpu is out of range or on no node. */
int topology_cpu_node(const struct topology *t, int cpu);

/*
 * Parse a sysfs cpulist ("0-3,8,10-11\n", or empty) into set, a bit array
 * of setbits bits (set[i / 64] bit i % 64), which it clears first. Returns
 * 0, -EINVAL for text that is not a cpulist, -ERANGE for an id >= setbits.
 */
int topology_parse_cpulist(const char *text, uint64_t *set, unsigned setbits);

/*
 * Parse one /proc/PID/task/TID/stat line (len bytes, not necessarily
 * NUL-terminated) into ret's tid, name, state and cpu. comm is everything
 * between the first '(' and the LAST ')', so a name with spaces or
 * parentheses parses; the fields after it must be numbers up to field 39.
 * Returns 0 or -EINVAL (truncated or malformed; ret untouched).
 */
int topology_parse_stat(const char *line, size_t len, struct topology_thread *ret);

/*
 * Read thread tid of process pid: its stat line, its last CPU's node from
 * t, and its affinity (sched_getaffinity on the tid) as a node set.
 * Returns 0, -ESRCH when the thread (or process) is gone, -EINVAL for a
 * stat line that does not parse, or another -errno.
 */
int topology_thread_read(const struct topology *t, pid_t pid, pid_t tid,
                         struct topology_thread *ret, char *err, size_t errlen);

/*
 * Every thread of pid, from /proc/PID/task, into a malloc'd array
 * (*ret_threads, *ret_n; the caller frees it). A thread that exits while
 * the list is read is left out, not an error. Returns 0, -ESRCH when the
 * process is gone (or has no thread left), -EACCES/-EPERM when /proc
 * refuses, -ENOMEM, or -EINVAL for a stat line that does not parse.
 */
int topology_threads(const struct topology *t, pid_t pid, struct topology_thread **ret_threads,
                     size_t *ret_n, char *err, size_t errlen);

#endif /* SCRATCH_STATS_TOPOLOGY_H */
