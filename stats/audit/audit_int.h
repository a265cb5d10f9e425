/*
 * audit_int.h - what the three files of the audit share, private to
 * stats/audit/: the session's state (struct audit), which audit_session.c
 * gathers and the join reads; the join's tally of one block, which
 * audit_findings.c turns into findings; and the functions they call
 * across. The calls go one way: audit_join.c (audit_result) calls the
 * findings and the session, audit_findings.c calls the session, and the
 * session calls neither.
 */
#ifndef SCRATCH_STATS_AUDIT_INT_H
#define SCRATCH_STATS_AUDIT_INT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "audit.h"
#include "faults.h"
#include "placement.h"
#include "segread.h"
#include "topology.h"

#define PAGE      4096u
#define HUGE_PAGE (2u << 20)

/* A page's earliest fault sample. page 0: an empty slot. */
struct touch {
	uint64_t page;
	uint64_t time_ns;
	pid_t tid;
	int32_t cpu;
};

/* Open-addressing map of page -> struct touch, power-of-two capacity. */
struct touchmap {
	struct touch *e;
	size_t cap, n;
};

struct ablock {
	bool seen; /* the table described it */
	struct segread_block b;
	struct placement pl; /* the last pass that read it */
	bool have_pl;
};

struct athread {
	struct audit_thread t;
};

struct agrowth {
	uint64_t seq;
	pid_t tid;
	uint32_t nframes;
	uint64_t frames[SCRATCH_SEG_MAX_FRAMES];
};

struct audit {
	enum audit_mode mode;
	pid_t pid;
	struct audit_opts o;
	struct topology topo;
	bool have_topo;
	faults_t *faults;
	struct audit_tier tiers[AUDIT_TIERS];
	bool traced, gone, reaped;
	bool unlink_segs; /* launch mode asked for keep_segment: remove them at the end */
	int exit_status;
	uint64_t started_ns, ended_ns;
	uint64_t last_place_ns;
	uint64_t placement_reads;
	char run_dir[PATH_MAX];
	int seg_fd;
	struct segread seg;
	bool have_seg;
	uint64_t seg_nonce; /* the open segment's name: newer ones replace it */
	uint64_t next_rec, lost_rec;
	uint64_t region_lo, region_hi;
	struct touchmap pages, huge; /* 4 KiB pages, and 2 MiB frames */
	struct ablock *blocks;       /* by id - 1 */
	size_t nblocks;
	struct athread *threads;
	size_t nthreads;
	struct agrowth *growths;
	size_t ngrowths, capgrowths;
	char *maps;
	char exe[256], cmdline[512];
	uint64_t samples_kept;
};

/* What the join of one block found, before findings are merged. */
struct block_tally {
	pid_t allocator, holder;
	int holder_node;
	pid_t users[2 + SCRATCH_SEG_BLOCK_FREERS];
	unsigned nusers;
	pid_t touchers[AUDIT_MAX_TIDS];
	unsigned ntouchers, more_touchers;
	uint64_t cross;        /* first touched by another than the allocator */
	uint64_t cross_remote; /* of those, off the holder's node */
	uint64_t reuse[2 + SCRATCH_SEG_BLOCK_FREERS]; /* per user: off its node, not its touch */
	uint64_t differs;                             /* not on the toucher's node */
	uint64_t unsampled_remote;                    /* toucher unknown, off the holder's node */
	int differs_from, differs_to;
};

struct symbols;

struct join {
	struct audit *a;
	struct audit_result *r;
	struct symbols *sym;
	size_t capfindings, capsites;
};

/* audit_session.c: the session's maps and threads, for the join. */

/* page's earliest fault sample in m, NULL when none. */
const struct touch *audit__touch_get(const struct touchmap *m, uint64_t page);
/* Thread tid of the session (added when add and tid > 0), NULL when it is
 * not known (or no memory to add it). */
struct audit_thread *audit__thread_find(struct audit *a, pid_t tid, bool add);
/* tid's node, -1 when unknown; its name, "?" when unknown. */
int audit__thread_node(struct audit *a, pid_t tid);
const char *audit__thread_name(struct audit *a, pid_t tid);
/* Turn tier t off with why (and -errno e), unless it is off with a reason
 * already. */
void audit__tier_off(struct audit *a, enum audit_tier_id t, int e, const char *why);
/* The end of the window: one last refresh while the process runs, the
 * samples drained, the end time set. */
void audit__finish(struct audit *a);

/* audit_findings.c: what the join found, as findings. */

/* Add tid to the set of *n (at most cap); one more in *more, when not
 * NULL, once it is full. */
void audit__add_tid(pid_t *set, unsigned *n, unsigned *more, unsigned cap, pid_t tid);
/* The findings of one joined block with present bytes, merged into j->r's. */
void audit__block_findings(struct join *j, const struct audit_block *blk,
                           const struct block_tally *t);
/* The thread_moved findings, once every block is joined. */
void audit__moved_findings(struct join *j);
/* Every finding's text and fix, then the findings ranked: bytes
 * descending. */
void audit__findings_rank(struct join *j);

#endif /* SCRATCH_STATS_AUDIT_INT_H */
