/*
 * host_omp.c - libgomp's worker threads under the shim: parallel regions
 * allocate pooled and small blocks, blocks allocated in one region are
 * freed by other threads in the next, and the program exits with the
 * workers still alive (libgomp never joins them). Prints "omp ok".
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "host_common.h"

#define NBLOCKS 64
#define ROUNDS  20

static void *blocks[NBLOCKS];
static size_t block_size[NBLOCKS];

int main(void)
{
	int bad = 0;

	for (int r = 0; r < ROUNDS; r++) {
#pragma omp parallel for schedule(dynamic, 1) reduction(+ : bad)
		for (int i = 0; i < NBLOCKS; i++) {
			/* free what another thread allocated in the last round */
			if (blocks[i]) {
				bad += !host_check(blocks[i], block_size[i], block_size[i],
				                   (uint64_t)(r - 1) * NBLOCKS + (uint64_t)i);
				free(blocks[i]);
			}
			size_t n = (i % 3 == 0 ? 40 : 64 * HOST_KIB) +
			           (size_t)((i * 7919 + r) % 300000);
			blocks[i] = malloc(n);
			block_size[i] = n;
			if (!blocks[i]) {
				bad++;
				continue;
			}
			host_fill(blocks[i], n, (uint64_t)r * NBLOCKS + (uint64_t)i);
			/* a temporary, as an operator's workspace would be */
			float *tmp = calloc(70000, sizeof(float));
			bad += !tmp || tmp[69999] != 0.0f;
			free(tmp);
		}
	}
	for (int i = 0; i < NBLOCKS; i++)
		free(blocks[i]);
	if (bad) {
		fprintf(stderr, "host_omp: %d bad blocks\n", bad);
		return 1;
	}
	printf("omp ok\n");
	return 0;
}
