/*
 * decode.c - a decode-loop host: what a CPU inference engine asks of malloc per token.
 *
 * Per generated token and per layer, every worker allocates its temporaries
 * (16 KiB to 16 MiB: activations, packed GEMM panels, FFN intermediates),
 * writes each once and frees them; the main thread allocates a 32 MiB shared
 * buffer (attention scores) that the workers write, so its first touch happens
 * on another thread; after the last layer the main thread allocates a 64 MiB
 * logits buffer the workers fill. The 8-64 MiB per-token temporaries dominate,
 * as in the inference hosts the pools are for.
 *
 * The program uses plain malloc/free and never links libscratch, so any
 * allocator can be LD_PRELOADed under it unchanged. `make bench` compares
 * allocators on it and `make demo` runs it under the shim.
 *
 * With --vary the sizes follow the host as real inference hosts' do, not
 * what a pool likes: each worker's temporaries (--temps of them per layer) are
 * 8-64 MiB, drawn per token and layer at 1 MiB steps from a seeded PRNG in
 * the main thread (so every allocator sees the same sequence), and the shared
 * buffer is the attention scores, which grow by one 256 KiB row every token.
 *
 * Variants:
 *   default       workers allocate their own temporaries;
 *   --main-alloc  the main thread allocates every buffer, the workers write;
 *   --prealloc    the floor: every buffer allocated at its largest size and
 *                 pre-faulted (by the thread that writes it) once before the
 *                 timer, then reused; each use writes the bytes the others
 *                 write, so the work is the same.
 *
 * Output: a human line, then one line "decode key=value ..." for scripts.
 * tokens_per_s covers the whole run, warm-up included; steady_* figures cover
 * the tokens after --warmup; first_token_ms is the first token alone (where
 * an allocator that grows pays its page faults). Faults are minflt+majflt of the whole process;
 * cpu_ms_per_token is its user+system time per token (the workers sleep in
 * the barriers, so this is work done, which other load disturbs less than
 * wall-clock time). warmup_excess_ms is what the warm-up tokens took beyond
 * the steady rate, the first touch of a growing allocator, with the faults and
 * the kernel CPU time (all threads) of the warm-up beside; sys_ms is the
 * kernel CPU time of the whole run, on this loop nearly all page faults;
 * prefault_ms is what the floor's pre-faulting took before its timer.
 * steady_refaults_per_token is the steady tokens' faults less the growth of
 * the peak resident set (VmHWM) over them, in pages: the faults that did not
 * make the process larger than it had ever been, pages given back and
 * faulted again (glibc unmaps its large buffers at free and maps them anew).
 * A new maximum (a draw larger than any before in its block, the scores' new
 * row) is faulted once and not counted.
 * steady_hot_mib is the hot set of a steady token: the distinct bytes its
 * buffers spanned (the union of the address ranges written, all threads),
 * what the caches must hold; an allocator that gives one thread's buffer the
 * memory another thread's just left has a smaller one.
 * steady_faulting_tokens counts the steady tokens that faulted any page (a
 * lazy allocator's new maxima land in some of them, the floor's in none);
 * steady_quiet_tokens_per_s is the rate of the others (0 when there are
 * none): what the allocator's reuse costs once its memory is in place.
 */
#include <limits.h>
#include <stdint.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bench.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)

/* A layer's per-worker temporaries, smallest first. */
static const size_t temp_sizes[] = {16 * KIB, 64 * KIB, 256 * KIB, 1 * MIB,
                                    4 * MIB,  8 * MIB,  16 * MIB};
#define NTEMPS      (sizeof(temp_sizes) / sizeof(temp_sizes[0]))
#define SHARED_SIZE (32 * MIB)
#define LOGITS_SIZE (64 * MIB)
#define MAX_WORKERS 64
#define MAX_TEMPS   NTEMPS

/* --vary: temporaries drawn from VARY_MIN to VARY_MAX at VARY_STEP, and
 * attention scores of (SCORE_ROWS0 + token) rows of SCORE_ROW bytes, which
 * cross a size class of the pools (four per power of two) every 16 tokens. */
#define VARY_MIN    (8 * MIB)
#define VARY_MAX    (64 * MIB)
#define VARY_STEP   MIB
#define SCORE_ROW   (256 * KIB)
#define SCORE_ROWS0 64u

enum job_kind { JOB_LAYER, JOB_LOGITS, JOB_STOP };

/* What the main thread publishes before releasing the workers: the sizes
 * of each worker's temporaries and of the shared buffer for this layer. In
 * the default variant bufs is unused: the workers allocate their own. */
struct job {
	enum job_kind kind;
	unsigned char fill;
	bool own_temps;
	unsigned ntemps;
	char *shared;
	size_t shared_size;
	size_t sizes[MAX_WORKERS][MAX_TEMPS];
	char *bufs[MAX_WORKERS][MAX_TEMPS];
};

struct span {
	uintptr_t lo, hi;
};

/* The address ranges one thread wrote in the current token. */
struct spans {
	struct span *v;
	size_t n, cap;
};

struct decode {
	unsigned workers;
	unsigned tokens;
	unsigned layers;
	unsigned warmup;
	unsigned temps; /* --vary: temporaries per worker and layer */
	unsigned seed;
	bool main_alloc;
	bool prealloc;
	bool vary;
	bool verbose; /* one stderr line per token: time and faults */
	uint64_t rng; /* --vary: splitmix64 state, from --seed */
	pthread_barrier_t start;
	pthread_barrier_t done;
	struct job job;
	int failed; /* set (to 1) by any thread whose malloc returned NULL */
	struct spans touched[MAX_WORKERS + 1]; /* per worker, then the main thread */
	struct span *merged;                   /* room for all of them */
	double hot_bytes;                      /* summed over the steady tokens */
	unsigned quiet;                        /* steady tokens that faulted no page */
	double quiet_s;                        /* and their wall-clock time */
};

struct worker {
	struct decode *d;
	unsigned id;
	pthread_t thread;
};

static void write_once(char *p, size_t n, unsigned char fill)
{
	memset(p, fill, n);
	bench_keep(p);
}

/* Note that a thread wrote [p, p + n) in this token (see hot_set). */
static void touched(struct spans *s, const char *p, size_t n)
{
	if (s->n < s->cap)
		s->v[s->n++] = (struct span){(uintptr_t)p, (uintptr_t)p + n};
}

/* Worker id's slice of a buffer of n bytes shared by all workers. */
static void write_slice(const struct decode *d, unsigned id, char *p, size_t n, unsigned char fill)
{
	size_t lo = n / d->workers * id;
	size_t hi = id + 1 == d->workers ? n : n / d->workers * (id + 1);

	write_once(p + lo, hi - lo, fill);
}

/* One layer on one worker: all temporaries live at once, each written once,
 * plus this worker's slice of the shared buffer. */
static void run_layer(struct decode *d, unsigned id)
{
	struct job *job = &d->job;
	char *temps[MAX_TEMPS];
	size_t i;

	for (i = 0; i < job->ntemps; i++) {
		temps[i] = job->own_temps ? malloc(job->sizes[id][i]) : job->bufs[id][i];
		if (!temps[i]) {
			__atomic_store_n(&d->failed, 1, __ATOMIC_RELAXED);
			break;
		}
		write_once(temps[i], job->sizes[id][i], job->fill);
		touched(&d->touched[id], temps[i], job->sizes[id][i]);
	}
	write_slice(d, id, job->shared, job->shared_size, job->fill);
	if (job->own_temps) {
		while (i-- > 0)
			free(temps[i]);
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct decode *d = w->d;

	for (;;) {
		pthread_barrier_wait(&d->start);
		if (d->job.kind == JOB_STOP)
			return NULL;
		if (d->job.kind == JOB_LAYER)
			run_layer(d, w->id);
		else
			write_slice(d, w->id, d->job.shared, LOGITS_SIZE, d->job.fill);
		pthread_barrier_wait(&d->done);
	}
}

/* Release the workers on the published job and wait until all finished it.
 * The barriers order the job's stores before the workers' loads. */
static void dispatch(struct decode *d, enum job_kind kind)
{
	d->job.kind = kind;
	pthread_barrier_wait(&d->start);
	if (kind != JOB_STOP)
		pthread_barrier_wait(&d->done);
}

static char *alloc_or_fail(struct decode *d, size_t n)
{
	char *p = malloc(n);

	if (!p)
		__atomic_store_n(&d->failed, 1, __ATOMIC_RELAXED);
	return p;
}

static void free_worker_bufs(struct decode *d)
{
	unsigned w;
	size_t i;

	for (w = 0; w < d->workers; w++)
		for (i = 0; i < MAX_TEMPS; i++) {
			free(d->job.bufs[w][i]);
			d->job.bufs[w][i] = NULL;
		}
}

/* One set of temporaries per worker, of the job's sizes, in job.bufs.
 * Returns false when malloc fails; what was allocated stays in job.bufs for
 * free_worker_bufs(). */
static bool alloc_worker_bufs(struct decode *d)
{
	unsigned w;
	size_t i;

	for (w = 0; w < d->workers; w++)
		for (i = 0; i < d->job.ntemps; i++)
			if (!(d->job.bufs[w][i] = alloc_or_fail(d, d->job.sizes[w][i])))
				return false;
	return true;
}

static size_t scores_size(unsigned tok)
{
	return (SCORE_ROWS0 + tok) * SCORE_ROW;
}

/* The sizes of one layer of token tok into d->job: fixed, or (--vary) drawn
 * in the main thread, always in the same order, so the sequence does not
 * depend on the allocator or the threads' timing. The floor draws too: it
 * writes the same bytes into its largest-size buffers. */
static void plan_layer(struct decode *d, unsigned tok)
{
	const uint64_t steps = (VARY_MAX - VARY_MIN) / VARY_STEP + 1;
	unsigned w;
	size_t i;

	d->job.ntemps = d->vary ? d->temps : NTEMPS;
	d->job.shared_size = d->vary ? scores_size(tok) : SHARED_SIZE;
	for (w = 0; w < d->workers; w++)
		for (i = 0; i < d->job.ntemps; i++)
			d->job.sizes[w][i] =
			        d->vary ? VARY_MIN + bench_next_random(&d->rng) % steps * VARY_STEP
			                : temp_sizes[i];
}

/* The largest sizes plan_layer() can give: every buffer of the floor. */
static void plan_largest(struct decode *d)
{
	unsigned w;
	size_t i;

	d->job.ntemps = d->vary ? d->temps : NTEMPS;
	d->job.shared_size = d->vary ? scores_size(d->tokens - 1) : SHARED_SIZE;
	for (w = 0; w < d->workers; w++)
		for (i = 0; i < d->job.ntemps; i++)
			d->job.sizes[w][i] = d->vary ? VARY_MAX : temp_sizes[i];
}

/* Buffers the floor keeps for the whole run, each at its largest size: one
 * set per worker, one shared buffer and one logits buffer. Returns false when
 * malloc fails. */
static bool prealloc_all(struct decode *d, char **shared, char **logits)
{
	plan_largest(d);
	if (!alloc_worker_bufs(d))
		return false;
	*shared = alloc_or_fail(d, d->job.shared_size);
	*logits = alloc_or_fail(d, LOGITS_SIZE);
	return *shared && *logits;
}

/* The floor's pre-fault, before its timer: every byte of every buffer
 * written once, by the thread that writes it in the loop. */
static void prefault_all(struct decode *d, char *shared, char *logits)
{
	plan_largest(d);
	d->job.fill = 0xa5;
	d->job.shared = shared;
	dispatch(d, JOB_LAYER);
	d->job.shared = logits;
	dispatch(d, JOB_LOGITS);
}

/* One token: every layer, then the logits. Buffers come from malloc unless
 * the floor passed its preallocated ones. Returns false when malloc failed. */
static bool run_token(struct decode *d, unsigned tok, char *pre_shared, char *pre_logits)
{
	struct spans *mine = &d->touched[d->workers];
	unsigned l;

	/* the workers wait at the barrier: their lists are ours to reset */
	for (l = 0; l <= d->workers; l++)
		d->touched[l].n = 0;
	for (l = 0; l < d->layers; l++) {
		d->job.fill = (unsigned char)(tok * 31 + l + 1);
		plan_layer(d, tok);
		d->job.shared = pre_shared ? pre_shared : alloc_or_fail(d, d->job.shared_size);
		if (!d->job.shared)
			return false;
		if (d->main_alloc && !d->prealloc && !alloc_worker_bufs(d)) {
			free_worker_bufs(d);
			free(d->job.shared);
			return false;
		}
		dispatch(d, JOB_LAYER);
		touched(mine, d->job.shared, d->job.shared_size);
		if (d->main_alloc && !d->prealloc)
			free_worker_bufs(d);
		if (!pre_shared)
			free(d->job.shared);
		if (__atomic_load_n(&d->failed, __ATOMIC_RELAXED))
			return false;
	}
	d->job.shared = pre_logits ? pre_logits : alloc_or_fail(d, LOGITS_SIZE);
	if (!d->job.shared)
		return false;
	dispatch(d, JOB_LOGITS);
	touched(mine, d->job.shared, LOGITS_SIZE);
	if (!pre_logits)
		free(d->job.shared);
	return true;
}

struct sample {
	double t;
	double cpu; /* user+system seconds of the whole process */
	double sys; /* system seconds alone: page faults, madvise, mmap */
	long faults;
	long peak_kib; /* VmHWM, where asked for (else 0) */
};

/* With peak, the peak resident set too, read first: a page the read itself
 * faults then counts in both figures. */
static struct sample take_sample(bool peak)
{
	struct rusage ru;
	struct sample s;

	s.peak_kib = peak ? bench_peak_rss_kib() : 0;
	getrusage(RUSAGE_SELF, &ru);
	s.faults = ru.ru_minflt + ru.ru_majflt;
	s.cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	        (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
	s.sys = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
	s.t = bench_now_s();
	return s;
}

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: decode [--threads N] [--tokens N] [--layers N] [--warmup N]\n"
	        "              [--main-alloc] [--prealloc] [--vary] [--temps N] [--seed N]\n"
	        "  --threads N   worker threads besides the main thread (default 2, max %d)\n"
	        "  --tokens N    tokens to decode, warm-up included (default 32)\n"
	        "  --layers N    layers per token (default 4)\n"
	        "  --warmup N    leading tokens left out of the steady-state figures "
	        "(default 4)\n"
	        "  --main-alloc  the main thread allocates every buffer, workers write\n"
	        "  --prealloc    the floor: buffers allocated and pre-faulted before the timer\n"
	        "  --vary        temporaries of 8-64 MiB drawn per token and layer at 1 MiB\n"
	        "                steps, attention scores growing by a 256 KiB row per token\n"
	        "  --temps N     --vary: temporaries per worker and layer (default 2, max %zu)\n"
	        "  --seed N      --vary: the seed of the size sequence (default 1)\n",
	        MAX_WORKERS, MAX_TEMPS);
}

/* Parse argv into d. Returns 0, 1 (help printed) or -1 (error printed). */
static int parse_args(int argc, char **argv, struct decode *d)
{
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		unsigned *target = NULL;
		unsigned lo = 1, hi = 1u << 20;

		if (!strcmp(a, "--main-alloc")) {
			d->main_alloc = true;
			continue;
		}
		if (!strcmp(a, "--prealloc")) {
			d->prealloc = true;
			continue;
		}
		if (!strcmp(a, "--vary")) {
			d->vary = true;
			continue;
		}
		if (!strcmp(a, "--verbose") || !strcmp(a, "-v")) {
			d->verbose = true;
			continue;
		}
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 1;
		}
		if (!strcmp(a, "--threads")) {
			target = &d->workers;
			hi = MAX_WORKERS;
		} else if (!strcmp(a, "--tokens")) {
			target = &d->tokens;
		} else if (!strcmp(a, "--layers")) {
			target = &d->layers;
		} else if (!strcmp(a, "--warmup")) {
			target = &d->warmup;
			lo = 0;
		} else if (!strcmp(a, "--temps")) {
			target = &d->temps;
			hi = MAX_TEMPS;
		} else if (!strcmp(a, "--seed")) {
			target = &d->seed;
			lo = 0;
			hi = UINT_MAX;
		}
		if (!target) {
			fprintf(stderr, "decode: unknown option '%s'\n", a);
			usage(stderr);
			return -1;
		}
		if (i + 1 >= argc || !bench_parse_uint(argv[i + 1], lo, hi, target)) {
			fprintf(stderr, "decode: %s needs a number from %u to %u\n", a, lo, hi);
			return -1;
		}
		i++;
	}
	if (d->warmup >= d->tokens) {
		fprintf(stderr, "decode: --warmup (%u) must be below --tokens (%u)\n", d->warmup,
		        d->tokens);
		return -1;
	}
	d->rng = d->seed;
	return 0;
}

static int span_cmp(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The bytes the last token's buffers spanned, all threads: the union of
 * the ranges they wrote (a range written twice, or by two threads, counts
 * once). */
static double hot_set(struct decode *d)
{
	size_t n = 0, i;
	uintptr_t end = 0;
	double bytes = 0;

	for (unsigned t = 0; t <= d->workers; t++)
		for (i = 0; i < d->touched[t].n; i++)
			d->merged[n++] = d->touched[t].v[i];
	qsort(d->merged, n, sizeof(*d->merged), span_cmp);
	for (i = 0; i < n; i++) {
		uintptr_t lo = d->merged[i].lo > end ? d->merged[i].lo : end;

		if (d->merged[i].hi > lo)
			bytes += (double)(d->merged[i].hi - lo);
		if (d->merged[i].hi > end)
			end = d->merged[i].hi;
	}
	return bytes;
}

/* Room for every range of a token: a worker's temporaries of each layer,
 * the main thread's shared buffer of each layer and the logits. */
static bool spans_alloc(struct decode *d)
{
	size_t all = 0;

	for (unsigned t = 0; t <= d->workers; t++) {
		struct spans *s = &d->touched[t];

		s->cap = t < d->workers ? (size_t)d->layers * MAX_TEMPS : (size_t)d->layers + 1;
		s->v = calloc(s->cap, sizeof(*s->v));
		if (!s->v)
			return false;
		all += s->cap;
	}
	d->merged = calloc(all, sizeof(*d->merged));
	return d->merged != NULL;
}

static void spans_free(struct decode *d)
{
	for (unsigned t = 0; t <= d->workers; t++)
		free(d->touched[t].v);
	free(d->merged);
}

/* What one run measured besides the three samples (start, end of warm-up, end). */
struct times {
	double first_ms;    /* the first token alone */
	double prefault_ms; /* the floor's pre-fault, before the timer; 0 otherwise */
};

static void report(const struct decode *d, struct sample s0, struct sample s1, struct sample s2,
                   struct times tm)
{
	unsigned steady = d->tokens - d->warmup;
	double steady_ms = (s2.t - s1.t) * 1e3 / steady;
	double excess_ms = (s1.t - s0.t) * 1e3 - d->warmup * steady_ms;
	double secs = s2.t - s0.t;
	double tps = d->tokens / secs;
	double steady_tps = steady / (s2.t - s1.t);
	double fpt = (double)(s2.faults - s0.faults) / d->tokens;
	double steady_fpt = (double)(s2.faults - s1.faults) / steady;
	/* Faults count events and the peak pages: a huge page's one fault can
	 * raise it by 512, hence the floor at 0. */
	long page_kib = sysconf(_SC_PAGESIZE) / 1024;
	long grown = (s2.peak_kib - s1.peak_kib) / (page_kib > 0 ? page_kib : 4);
	long refaults = s2.faults - s1.faults - (grown > 0 ? grown : 0);
	double steady_rpt = (double)(refaults > 0 ? refaults : 0) / steady;
	long rss = bench_peak_rss_kib();
	const char *variant = d->prealloc ? "prealloc" : d->main_alloc ? "main-alloc" : "default";
	const char *sizes = d->vary ? "vary" : "fixed";
	double hot_mib = d->hot_bytes / steady / (double)MIB;

	printf("decode: %u workers, %u tokens x %u layers (%u warm-up), %s, %s sizes: "
	       "%.2f tokens/s, %.1f faults/token in steady state (%.1f overall), "
	       "%.1f of them refaults, peak RSS %.1f MiB, hot set %.1f MiB a token\n",
	       d->workers, d->tokens, d->layers, d->warmup, variant, sizes, tps, steady_fpt, fpt,
	       steady_rpt, (double)rss / 1024.0, hot_mib);
	printf("decode variant=%s sizes=%s threads=%u tokens=%u layers=%u warmup=%u "
	       "seconds=%.4f tokens_per_s=%.3f steady_tokens_per_s=%.3f faults=%ld "
	       "faults_per_token=%.2f steady_faults_per_token=%.2f peak_rss_kib=%ld "
	       "cpu_ms_per_token=%.3f steady_cpu_ms_per_token=%.3f first_token_ms=%.2f "
	       "steady_ms_per_token=%.3f warmup_excess_ms=%.2f prefault_ms=%.2f "
	       "warmup_faults=%ld warmup_sys_ms=%.1f sys_ms=%.1f steady_hot_mib=%.1f "
	       "steady_refaults_per_token=%.2f steady_faulting_tokens=%u "
	       "steady_quiet_tokens_per_s=%.3f\n",
	       variant, sizes, d->workers, d->tokens, d->layers, d->warmup, secs, tps, steady_tps,
	       s2.faults - s0.faults, fpt, steady_fpt, rss, (s2.cpu - s0.cpu) * 1e3 / d->tokens,
	       (s2.cpu - s1.cpu) * 1e3 / steady, tm.first_ms, steady_ms, excess_ms, tm.prefault_ms,
	       s1.faults - s0.faults, (s1.sys - s0.sys) * 1e3, (s2.sys - s0.sys) * 1e3, hot_mib,
	       steady_rpt, steady - d->quiet, d->quiet != 0 ? d->quiet / d->quiet_s : 0.0);
}

/* The timed loop, with the workers already running. */
static int decode_run(struct decode *d)
{
	char *pre_shared = NULL, *pre_logits = NULL;
	struct sample s0, s1, s2;
	struct times tm = {0, 0};
	unsigned tok;
	int rc = 0;

	d->job.own_temps = !d->main_alloc && !d->prealloc;
	if (!spans_alloc(d)) {
		spans_free(d);
		fprintf(stderr, "decode: out of memory\n");
		return 1;
	}
	if (d->prealloc) {
		double t = bench_now_s();

		if (!prealloc_all(d, &pre_shared, &pre_logits))
			goto out_free;
		/* Pre-fault outside the timer, each page by the thread that writes it. */
		prefault_all(d, pre_shared, pre_logits);
		tm.prefault_ms = (bench_now_s() - t) * 1e3;
	}
	s0 = take_sample(true);
	s1 = s0;
	for (tok = 0; tok < d->tokens; tok++) {
		struct sample t0 = take_sample(tok == d->warmup), t1;

		if (tok == d->warmup)
			s1 = t0;
		if (!run_token(d, tok, pre_shared, pre_logits))
			break;
		t1 = take_sample(false);
		if (tok >= d->warmup) { /* microseconds: a few dozen ranges */
			d->hot_bytes += hot_set(d);
			if (t1.faults == t0.faults) {
				d->quiet++;
				d->quiet_s += t1.t - t0.t;
			}
		}
		if (tok == 0)
			tm.first_ms = (t1.t - t0.t) * 1e3;
		if (d->verbose)
			fprintf(stderr, "decode: token %u: %.2f ms, %ld faults\n", tok,
			        (t1.t - t0.t) * 1e3, t1.faults - t0.faults);
	}
	s2 = take_sample(true);
	if (!d->failed)
		report(d, s0, s1, s2, tm);
out_free:
	if (d->failed) {
		fprintf(stderr, "decode: malloc failed\n");
		rc = 1;
	}
	if (d->prealloc)
		free_worker_bufs(d);
	free(pre_shared);
	free(pre_logits);
	spans_free(d);
	return rc;
}

int main(int argc, char **argv)
{
	static struct decode d = {
	        .workers = 2, .tokens = 32, .layers = 4, .warmup = 4, .temps = 2, .seed = 1};
	static struct worker w[MAX_WORKERS];
	unsigned i;
	int rc;

	rc = parse_args(argc, argv, &d);
	if (rc)
		return rc > 0 ? 0 : 2;
	if (pthread_barrier_init(&d.start, NULL, d.workers + 1) ||
	    pthread_barrier_init(&d.done, NULL, d.workers + 1)) {
		fprintf(stderr, "decode: pthread_barrier_init failed\n");
		return 1;
	}
	for (i = 0; i < d.workers; i++) {
		w[i].d = &d;
		w[i].id = i;
		rc = pthread_create(&w[i].thread, NULL, worker_main, &w[i]);
		if (rc) {
			fprintf(stderr, "decode: pthread_create: %s\n", strerror(rc));
			return 1;
		}
	}
	rc = decode_run(&d);
	dispatch(&d, JOB_STOP);
	for (i = 0; i < d.workers; i++)
		pthread_join(w[i].thread, NULL);
	return rc;
}
