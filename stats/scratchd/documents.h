/*
 * documents.h - the documents scratchd serves, rendered from the field tables
 * of documents.c: the JSON of /v1 and /v1/processes/..., the lines of a trace
 * stream, and the Prometheus text of /metrics.
 *
 * Every JSON key and metric name is written once, in a table of documents.c;
 * tests/unit/check_fields.c pins the whole list. The renderers are pure: they
 * read what they are given (registry entries, counts) and return a new
 * JSON value (the caller's) or write text. The caller holds the registry's
 * lock while the entries are read.
 */
#ifndef SCRATCH_STATS_DOCUMENTS_H
#define SCRATCH_STATS_DOCUMENTS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "registry.h"

/* What the daemon says of itself: /v1 and the head of /v1/processes. */
struct documents_daemon {
	int pid;
	const char *version;
	const char *run_dir;
	const struct registry_conf *conf;
	const struct registry_counts *counts;
	/* /v1/processes: every entry, and the rejected files */
	const struct registry_proc *const *procs;
	size_t nprocs;
	const struct registry_rejected *const *rejected;
	size_t nrejected;
};

json_t *documents_info(const struct documents_daemon *d);      /* GET /v1 */
json_t *documents_processes(const struct documents_daemon *d); /* GET /v1/processes */

/* GET /v1/processes/PID and its parts. */
json_t *documents_process(const struct registry_proc *p); /* with threads and owners */
json_t *documents_threads(const struct registry_proc *p);
json_t *documents_owners(const struct registry_proc *p);
json_t *documents_sizes(const struct registry_proc *p);
json_t *documents_history(const struct registry_proc *p, const struct registry_conf *conf);
/* The kept records from seq since, at most limit of them. */
json_t *documents_trace(const struct registry_proc *p, uint64_t since, uint64_t limit);

/* The lines of a trace stream (follow=1): a record, records that are gone
 * (from..to), the lost count so far, the end and why. */
json_t *documents_record(const struct registry_proc *p, const struct segread_record *r);
json_t *documents_gone(uint64_t from, uint64_t to);
json_t *documents_lost(uint64_t lost);
json_t *documents_end(const char *reason);

/* An error answer: {"error": msg}. */
json_t *documents_error(const char *msg);

/*
 * The Prometheus text (format 0.0.4) of images (each pid's newest image,
 * registry_images) and the registry's counts, into f.
 */
void documents_metrics(FILE *f, const struct registry_proc *const *images, size_t n,
                       const struct registry_counts *counts);

#endif /* SCRATCH_STATS_DOCUMENTS_H */
