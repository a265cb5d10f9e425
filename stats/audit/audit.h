/*
 * audit.h - the memory-locality audit: its result model, and the session
 * that collects it (issue 14). `scratchstat audit` prints it as a table or
 * JSON; `scratchstat report` draws it. The session is audit_session.c, the
 * join audit_join.c and the findings audit_findings.c.
 *
 * For every pool block of one process the audit joins four tiers:
 *   placement    the node of each present page, move_pages(2) nodes=NULL
 *                (placement.h): read only, a page the host did not touch
 *                stays untouched;
 *   first_touch  the thread and CPU whose fault made each page present,
 *                from software page-fault samples (faults.h) inside the
 *                pools' region; a page made present before sampling began
 *                (attach mode) has an unknown first toucher, never a guess;
 *   use          who holds the block (owner, last lessee, remote freers)
 *                from the segment's block table, and each thread's node
 *                from its last CPU (topology.h);
 *   sites        the growth trace's call site of each block, symbolized.
 * A tier can be off (sampling refused by perf_event_paranoid or seccomp, a
 * writer with no block table, no trace): struct audit_tier says why, and
 * the join uses what is left.
 *
 * Byte figures are page bytes (4 KiB pages, or whole huge pages where the
 * placement read said so), never block capacities: only present pages
 * have a node. "Uses" means the thread holds the block by lease (owner or
 * last lessee) or freed it remotely.
 *
 * Node numbering in the matrices: node ids 0 .. nodes - 1 as the kernel
 * names them, and one extra index, nodes, for "unknown" (first toucher not
 * sampled, user not known). So a matrix has (nodes + 1)^2 cells.
 *
 * Ownership: everything in struct audit_result is malloc'd by the audit
 * and freed with audit_result_free(). Strings are NUL-terminated, with
 * control characters masked (text_mask_controls), ready to print or
 * escape. Functions return 0 or a negative errno and, on failure, one
 * human line in err (errlen bytes; err may be NULL). Nothing is printed.
 */
#ifndef SCRATCH_STATS_AUDIT_H
#define SCRATCH_STATS_AUDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "maps.h"
#include "topology.h"

#define AUDIT_MAX_FRAMES  16 /* SCRATCH_SEG_MAX_FRAMES */
#define AUDIT_MAX_TIDS    16 /* threads named by one finding; more are counted */
#define AUDIT_TEXT_LEN    512
#define AUDIT_REASON_LEN  256
#define AUDIT_UNKNOWN_TID 0 /* a first toucher or user that is not known */

/* Evidence levels; audit_evidence_name() gives the text. */
enum audit_evidence {
	AUDIT_EV_PLACEMENT = 0, /* "placement measured": move_pages said where pages sit */
	AUDIT_EV_SAMPLED = 1,   /* "first touch sampled": a fault sample named the thread */
	AUDIT_EV_LEASE = 2,     /* "use by lease": only the block table's holders */
	/* "inferred": who uses it is not measured (no PMU): a mapping every
	 * compute thread may read is taken to be "shared by the compute
	 * threads", a risk, not a measurement */
	AUDIT_EV_INFERRED = 3,
	AUDIT_EV_STACK = 4, /* "stack pointer": the thread's stack pointer is in it */
};
#define AUDIT_EVIDENCES 5

/* What a finding says; audit_kind_name() gives its stable snake_case key. */
enum audit_kind {
	/* "Buffer allocated by T0 at decode.c:157, pages first touched by T1
	 * and T2": the block's owner is not the thread that faulted its pages. */
	AUDIT_CROSS_TOUCH = 0,
	/* "Block reused by a thread on another node": a lessee or remote
	 * freer runs on another node than where the block's pages sit. */
	AUDIT_REUSED_REMOTE = 1,
	/* "Placement differs from the first toucher's node": the kernel put
	 * the pages elsewhere (policy, fallback, THP, migration). */
	AUDIT_PLACEMENT_DIFFERS = 2,
	/* "Thread moved node": its faults came from CPUs of more than one
	 * node, or it now runs on another node than its pages. */
	AUDIT_THREAD_MOVED = 3,
	/* A mapping outside the pools that the compute threads share (a
	 * file, shared memory, anonymous memory, the main heap), with pages
	 * off the nodes they run on: inferred users, measured placement. */
	AUDIT_MAPPING_SHARED = 4,
	/* One thread's own memory (its stack, the arena heap it made) on
	 * another node than the one it runs on. */
	AUDIT_MAPPING_PRIVATE = 5,
};
#define AUDIT_KINDS 6

/* The tiers, as in the file header. */
enum audit_tier_id {
	AUDIT_TIER_PLACEMENT = 0,
	AUDIT_TIER_FIRST_TOUCH = 1,
	AUDIT_TIER_USE = 2,
	AUDIT_TIER_SITES = 3,
	/* page-cache provenance of file pages: a major-fault event beside the
	 * all-faults one, and a first look at each file's residency (mincore
	 * on the audit's own read-only mapping of it) */
	AUDIT_TIER_PAGE_CACHE = 4,
};
#define AUDIT_TIERS 5

struct audit_tier {
	bool on;
	int error; /* the -errno that turned it off, 0 when on */
	/* why it is off ("perf_event_paranoid is 3 ..."), or a limit while on
	 * (attach mode: first touches before it are unknown), else "" */
	char reason[AUDIT_REASON_LEN];
};

/* One symbolized frame of a call site; fields empty/0 when unknown. */
struct audit_frame {
	uint64_t addr; /* return address */
	char function[256];
	char file[256]; /* source base name */
	int line;
	char module[256];
};

/* A call site: the growth record's frames, innermost first, with the
 * allocator's own frames left out. where is "file:line" of the first frame
 * with a line, else "function+0xoff", else "module+0xoff", else "". */
struct audit_site {
	unsigned nframes;
	struct audit_frame frames[AUDIT_MAX_FRAMES];
	char where[AUDIT_TEXT_LEN];
};

/* bytes[first * (nodes + 1) + user]; index nodes is "unknown". */
struct audit_matrix {
	unsigned nodes;
	uint64_t *bytes;
};

/* One thread of the process, as the audit saw it (alive or gone). */
struct audit_thread {
	pid_t tid;
	char name[TOPOLOGY_NAME_LEN];
	bool alive;                     /* in /proc at the last look */
	int cpu;                        /* last CPU, -1 when unknown */
	int node;                       /* that CPU's node, -1 when unknown */
	topology_nodeset_t affinity;    /* nodes it may run on, 0 when unknown */
	topology_nodeset_t fault_nodes; /* nodes of the CPUs its sampled faults came from */
	int fault_last_node;            /* the node of its latest sampled fault, -1: none */
	uint64_t fault_last_ns;         /* that fault's time (CLOCK_MONOTONIC) */
	uint64_t used_bytes;            /* present bytes of the blocks it uses */
	uint64_t remote_bytes;          /* of those, on another node than its node */
	uint64_t first_touched;         /* bytes it first-touched (sampled) */
	uint64_t touched_for_others;    /* of those, in blocks another thread uses */
	uint64_t cpu_ticks;             /* user + system time at the last look */
	/* a compute thread: it used at least 5% of the busiest thread's CPU
	 * time (and a tick); the threads taken to share a read-mostly mapping */
	bool compute;
	uint64_t mapped_touched; /* present bytes outside the pools it first touched */
};

/* One page run of a block: adjacent pages with the same node and the same
 * first toucher. */
struct audit_run {
	uintptr_t start;
	uint64_t bytes;
	int node;       /* >= 0, or PLACEMENT_ABSENT / PLACEMENT_UNKNOWN */
	pid_t toucher;  /* AUDIT_UNKNOWN_TID when not sampled */
	int touch_node; /* the node of the faulting CPU, -1 when unknown */
};

/* One pool block (from the segment's block table). */
struct audit_block {
	uintptr_t start;
	uint64_t capacity;
	uint32_t cls;
	uint32_t state;               /* SCRATCH_SEG_BLK_* (segment.h) */
	pid_t owner;                  /* thread that owns it (carved or took it), 0: none */
	pid_t lessee;                 /* last lessee when it differs from the owner, else 0 */
	pid_t freers[AUDIT_MAX_TIDS]; /* threads that freed it remotely */
	unsigned nfreers;
	uint32_t handovers;                      /* times it changed owning thread (depot, reuse) */
	uint64_t present;                        /* present bytes (placement) */
	uint64_t node_bytes[TOPOLOGY_MAX_NODES]; /* present bytes per node */
	int site; /* index into audit_result.sites, -1 when unknown */
	struct audit_run *runs;
	size_t nruns;
};

/* Where a file page came from (page-cache provenance); audit_prov_name()
 * gives the key. Measured, except AUDIT_PROV_READAHEAD. */
enum audit_prov {
	/* a major fault of this process read it in */
	AUDIT_PROV_FAULTED = 0,
	/* not resident at the audit's first look at the file, resident now:
	 * read in during the run (by this process's read-ahead, or by
	 * another process reading the file meanwhile) */
	AUDIT_PROV_DURING = 1,
	/* inferred: resident at the first look, within the read-ahead window
	 * after a page this process faulted before the look, when one of its
	 * faults there was major */
	AUDIT_PROV_READAHEAD = 2,
	/* resident at the first look, and this process had not touched it:
	 * placed by another process or an earlier run */
	AUDIT_PROV_BEFORE = 3,
	/* this process touched it before the first look with a minor fault
	 * (either of the above), or there was no look (attach mode: resident
	 * at the attach; a file that could not be opened) */
	AUDIT_PROV_UNKNOWN = 4,
};
#define AUDIT_PROVS 5

/* A first toucher of a mapping: a thread, the CPU of its first sample
 * there, that CPU's node, and the present bytes it first touched. */
struct audit_toucher {
	pid_t tid;
	int cpu, node;
	uint64_t bytes;
};

#define AUDIT_BAR        64   /* cells of a mapping's placement bar */
#define AUDIT_BAR_ABSENT (-1) /* a cell with no present page */
#define AUDIT_BAR_MIXED  (-2) /* a cell whose pages sit on several nodes */

/*
 * One mapping of the process (maps.h), as the last whole-process pass read
 * it. Per-node bytes are numa_maps' (exact). The rest comes from probes:
 * move_pages on every present page when there are at most
 * AUDIT_PROBE_PAGES of them, else on AUDIT_PROBE_PAGES pages spread
 * evenly over the present ones (one at a random place in each equal
 * stretch), each standing for probe_bytes (exact false).
 */
struct audit_mapping {
	uint64_t start, end;
	enum maps_category category;
	char perms[5];
	char *path; /* the file's path, "" when anonymous (malloc'd, masked) */
	char why[MAPS_WHY_LEN];
	char policy[MAPS_POLICY_LEN];
	pid_t thread; /* stack: its thread; arena heap: the thread that made it */
	uint64_t resident;
	uint64_t node_bytes[TOPOLOGY_MAX_NODES];
	/* probes */
	uint64_t probes, probe_bytes;
	bool exact;
	uint64_t sampled_bytes;         /* present bytes with a sampled first toucher */
	uint64_t unknown_bytes;         /* present bytes whose first toucher was not seen */
	uint64_t differs_bytes;         /* placed off the node of their first toucher's CPU */
	struct audit_toucher *touchers; /* bytes descending */
	unsigned ntouchers;
	int8_t bar[AUDIT_BAR]; /* node of each 1/64th, AUDIT_BAR_ABSENT, AUDIT_BAR_MIXED */
	/* file and shared memory: page-cache provenance, bytes per class */
	bool have_prov;
	bool cache_pinned; /* on tmpfs or ramfs: its pages cannot be dropped from the cache */
	uint64_t prov[AUDIT_PROVS];
	char prov_note[AUDIT_REASON_LEN]; /* why a class is unknown, "" */
	/* who uses it, and the bytes off their nodes */
	enum audit_evidence use_evidence;
	pid_t users[AUDIT_MAX_TIDS];
	unsigned nusers;
	topology_nodeset_t user_nodes;
	uint64_t remote_bytes; /* off the nodes of its users (the worst user node) */
};

#define AUDIT_PROBE_PAGES 16384

/* A category's totals over its mappings. */
struct audit_category {
	unsigned mappings;
	uint64_t resident;
	uint64_t node_bytes[TOPOLOGY_MAX_NODES];
	uint64_t sampled_bytes, unknown_bytes;
};

struct audit_finding {
	enum audit_kind kind;
	enum audit_evidence evidence;
	uint64_t bytes; /* remote bytes: the ranking key */
	bool risk;      /* single node: "remote on a multi-node machine", not measured */
	pid_t owner;    /* the allocating / owning thread, 0 when unknown */
	pid_t tids[AUDIT_MAX_TIDS]; /* the other threads involved */
	unsigned ntids;             /* entries of tids[] */
	unsigned more_tids;         /* involved threads left out of tids[] */
	int node;                   /* the node the pages sit on, -1 when mixed/unknown */
	int other_node;             /* the node of the threads involved, -1 when mixed/unknown */
	uintptr_t block;            /* first block concerned, 0 for a thread finding */
	unsigned nblocks;
	int site;    /* index into audit_result.sites, -1 when unknown */
	int mapping; /* index into audit_result.mappings, -1 for a pool finding */
	enum maps_category category;
	char text[AUDIT_TEXT_LEN]; /* the sentence, with tids and the site */
	char fix[AUDIT_TEXT_LEN];  /* the fix that fits, tested to work (docs/audit.md) */
	/* the fix's steps for a script: a command to run first ("" none), and
	 * what to put before the program's command line ("" none) */
	char fix_run[AUDIT_TEXT_LEN];
	char fix_prefix[128];
};

enum audit_mode { AUDIT_LAUNCH = 0, AUDIT_ATTACH = 1 };

struct audit_result {
	enum audit_mode mode;
	pid_t pid;
	char exe[256];
	char cmdline[512];
	uint64_t started_ns, ended_ns; /* CLOCK_REALTIME of the audit's window */
	bool exited;                   /* the process ended during the audit */
	int exit_status;               /* launch mode: wait(2) status, -1 otherwise */
	unsigned nodes;                /* node ids 0 .. nodes - 1 */
	topology_nodeset_t node_mask;  /* the nodes that exist */
	bool single_node;              /* findings are risks, not measurements */
	struct audit_tier tiers[AUDIT_TIERS];

	uintptr_t region_lo, region_hi; /* the pools' region, 0/0 when unknown */
	uint64_t present_bytes;         /* present bytes in the pools' blocks */
	uint64_t sampled_bytes;         /* of those, with a sampled first toucher */
	uint64_t unknown_bytes;         /* present, first toucher unknown */
	uint64_t samples, samples_kept, samples_lost;
	uint64_t placement_reads; /* placement passes made */

	struct audit_matrix touch;  /* first-touch node x user node */
	struct audit_matrix placed; /* placement node x user node */

	struct audit_thread *threads; /* by tid */
	size_t nthreads;
	struct audit_block *blocks; /* by address */
	size_t nblocks;
	struct audit_site *sites;
	size_t nsites;
	struct audit_finding *findings; /* ranked: bytes descending */
	size_t nfindings;

	/* the whole process (maps.h), as the last whole-process pass read it */
	struct audit_mapping *mappings; /* by address */
	size_t nmappings;
	struct audit_category categories[MAPS_CATEGORIES];
	uint64_t node_total[TOPOLOGY_MAX_NODES]; /* every mapping, per node: numastat -p's */
	uint64_t moved_bytes;     /* numa_maps lines whose mapping changed between the reads */
	uint64_t inventory_reads; /* whole-process passes made */
	uint64_t inventory_ns;    /* the last one's wall time */
	char stacks_note[AUDIT_REASON_LEN];     /* why threads' stacks are not known, "" */
	char engine[32];                        /* a recognized engine ("llama.cpp"), "" */
	uint64_t node_free[TOPOLOGY_MAX_NODES]; /* MemFree per node at the last pass */
	uint64_t audit_memory; /* bytes the audit's own stores held (first touches, probes) */
};

/* How to collect. */
struct audit_opts {
	const char *run_dir;  /* the segments' directory (rundir_resolve), NULL: default */
	const char *preload;  /* launch: the shim to put in LD_PRELOAD, NULL: leave env */
	unsigned interval_ms; /* between placement passes, 0: 200 */
	unsigned seconds;     /* attach: how long to sample, 0: 5 */
	const char *sysfs;    /* topology root, NULL: the machine's (tests) */
};

typedef struct audit audit_t;

/*
 * Launch argv under sampling (faults_launch) with o->preload in
 * LD_PRELOAD. When the sampler is refused, the command still runs
 * (first_touch off, reason kept). Returns 0 with *ret and *ret_child, or
 * -ENOENT/-EACCES with err beginning "cannot run " for a COMMAND that
 * cannot be run, or another -errno. No child is left on failure.
 */
int audit_launch(char *const argv[], const struct audit_opts *o, audit_t **ret, pid_t *ret_child,
                 char *err, size_t errlen);

/*
 * Attach to the running process pid. Returns 0, -ESRCH (no such process),
 * -EPERM (another user's: placement and sampling are refused), or another
 * -errno. A refused sampler is not an error: that tier is off.
 */
int audit_attach(pid_t pid, const struct audit_opts *o, audit_t **ret, char *err, size_t errlen);

/*
 * One step of the session: drain the samples, read the segment's block
 * table and growth trace, the threads and, every interval_ms, the
 * placement of every present block. Waits up to timeout_ms for samples.
 * Returns 0, or -ESRCH once the process is gone (what was gathered stays).
 */
int audit_poll(audit_t *a, int timeout_ms);

/* Launch mode: audit_poll() reaps the child itself and keeps its wait
 * status; a caller that reaped it (another waitpid loop) says so here. */
void audit_set_exit(audit_t *a, int status);

/*
 * Join what the session gathered into ret (findings ranked). May be
 * called after the process exited: placement is then as last read.
 * Returns 0 or -ENOMEM. ret is freed with audit_result_free().
 */
int audit_result(audit_t *a, struct audit_result *ret, char *err, size_t errlen);

/* End the session: close events, free tables. Does not touch the process. */
void audit_close(audit_t *a);

/*
 * The whole attach-mode audit of pid for o->seconds: attach, poll, join,
 * close. For `scratchstat report`. Same returns as audit_attach().
 */
int audit_collect(pid_t pid, const struct audit_opts *o, struct audit_result *ret, char *err,
                  size_t errlen);

void audit_result_free(struct audit_result *r);

/* Stable names: "placement measured", "cross_touch", "first_touch",
 * "faulted" (audit_prov). */
const char *audit_evidence_name(enum audit_evidence e);
const char *audit_prov_name(enum audit_prov p);
const char *audit_kind_name(enum audit_kind k);
const char *audit_tier_name(enum audit_tier_id t);

/* Cell (first, user) of m; first/user -1 mean unknown. */
static inline uint64_t *audit_cell(const struct audit_matrix *m, int first, int user)
{
	unsigned f = first < 0 ? m->nodes : (unsigned)first;
	unsigned u = user < 0 ? m->nodes : (unsigned)user;

	return &m->bytes[f * (m->nodes + 1) + u];
}

#endif /* SCRATCH_STATS_AUDIT_H */
