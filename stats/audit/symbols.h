/*
 * symbols.h - call-site symbolization for scratchstat, with elfutils libdw.
 *
 * Built from the text of a process's /proc/PID/maps (as scratchd keeps it),
 * so addresses still resolve after the process exited, as long as its ELF
 * files are there.
 */
#ifndef SCRATCH_STATS_SYMBOLS_H
#define SCRATCH_STATS_SYMBOLS_H

#include <stdbool.h>
#include <stdint.h>

struct symbols;

struct symbols_info {
	char function[256]; /* "" when unknown */
	uint64_t offset;    /* from the function's start (the module's when unknown) */
	char file[256];     /* source file base name, "" when unknown */
	int line;
	char module[256]; /* the ELF file's path */
	bool allocator;   /* operator new or new[]: not a call site of interest */
	bool replaced;    /* the module's path names another file now (a binary
	                   * replaced): only module and offset are set */
};

/* NULL when libdw cannot even start (errno set). */
struct symbols *symbols_new(const char *maps);
void symbols_free(struct symbols *s);

/* Describe a return address (the call instruction before it is looked
 * up). False when no module covers it. */
bool symbols_lookup(struct symbols *s, uint64_t ret_addr, struct symbols_info *ret);

/* Whether the frame si describes is the allocator's own (libscratch, a
 * scratch_ function, operator new), not the call site of interest. */
bool symbols_internal(const struct symbols_info *si);

#endif /* SCRATCH_STATS_SYMBOLS_H */
