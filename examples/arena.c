/*
 * arena.c - a per-token bump arena: allocate the token's temporaries,
 * reset once per token. After the first tokens the arena has settled on
 * one chunk and a token costs no pool call at all.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scratch.h"

int main(void)
{
	scratch_arena_t *arena = scratch_arena_new("example-arena", 0);
	struct scratch_arena_stats st = {.size = sizeof(st)};
	struct scratch_arena_mark mark;
	float *keep;

	if (!arena) {
		perror("scratch_arena_new");
		return 1;
	}
	for (int token = 0; token < 100; token++) {
		float *scores = scratch_arena_alloc(arena, 4096 * sizeof(float), 64);
		float *act = scratch_arena_alloc(arena, 300000 * sizeof(float), 0);

		if (!scores || !act) {
			perror("scratch_arena_alloc");
			return 1;
		}
		memset(scores, 0, 4096 * sizeof(float));
		act[299999] = (float)token;
		scratch_arena_reset(arena);
	}
	scratch_arena_stats(arena, &st);
	printf("100 tokens: %llu chunk(s), %llu bytes retained, %llu growths\n",
	       (unsigned long long)st.chunks, (unsigned long long)st.retained,
	       (unsigned long long)st.growths);

	/* A mark frees a nested phase's temporaries and keeps the rest. */
	keep = scratch_arena_alloc(arena, 1000 * sizeof(float), 0);
	scratch_arena_mark(arena, &mark);
	scratch_arena_alloc(arena, 5000000, 0);
	scratch_arena_rewind(arena, &mark);
	keep[999] = 1.0f;
	scratch_arena_stats(arena, &st);
	printf("after rewind: %llu bytes in use\n", (unsigned long long)st.used);
	scratch_arena_destroy(arena);
	return st.used == 1000 * sizeof(float) ? 0 : 1;
}
