/* shimplug.h - what the test plugin (shimplug.c) exports to its host. */
#ifndef SCRATCH_SHIMPLUG_H
#define SCRATCH_SHIMPLUG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The i-th block the plugin's constructor allocated (its size in
 * *ret_size), or NULL past the last. */
void *plug_kept(int i, size_t *ret_size);
/* malloc(n) inside the plugin, filled with host_fill(seed). */
void *plug_alloc(size_t n, uint64_t seed);
/* realloc(p, n) inside the plugin. */
void *plug_realloc(void *p, size_t n);
/* Verify p's pattern, then free(p) inside the plugin; false when the
 * contents were not intact. */
bool plug_free(void *p, size_t n, uint64_t seed);

#endif /* SCRATCH_SHIMPLUG_H */
