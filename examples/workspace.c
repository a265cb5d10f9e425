/*
 * workspace.c - the buffers of a GEMM-like call kept between calls: every
 * member packs into its own A block (first touched by the thread that
 * writes it), member 0 fills the shared panel, and a barrier separates the
 * phases. Only the first call grows anything.
 */
#include <stdio.h>
#include <string.h>

#include "scratch.h"

enum { K = 256 * 1024 };

static void gemm_member(void *ctx, scratch_team_t *team, unsigned m, unsigned n)
{
	float *total = ctx, *a, *sum;
	float *panel = NULL;
	void *const *scatter;

	if (m == 0)
		panel = scratch_team_panel(team, K * sizeof(float));
	a = scratch_team_slot(team, m, SCRATCH_SLOT_A, K / n * sizeof(float));
	sum = scratch_team_slot(team, m, SCRATCH_SLOT_SCATTER, sizeof(float));
	if (!a || !sum || (m == 0 && !panel))
		return;
	if (m == 0)
		for (int k = 0; k < K; k++)
			panel[k] = 1.0f;
	for (int k = 0; k < K / (int)n; k++)
		a[k] = 0.5f;
	scratch_team_barrier(team); /* the panel is ready */
	panel = scratch_team_panel(team, K * sizeof(float));
	*sum = 0;
	for (int k = 0; k < K / (int)n; k++)
		*sum += a[k] * panel[k];
	if (scratch_team_barrier(team)) { /* one member reduces */
		scatter = scratch_team_scatter(team);
		*total = 0;
		for (unsigned i = 0; i < n; i++)
			*total += *(const float *)scatter[i];
	}
}

int main(void)
{
	scratch_workers_t *w = scratch_workers_new(NULL);
	scratch_workspace_t *ws = scratch_workspace_new("example-gemm", SCRATCH_WORKSPACE_TRACED);
	struct scratch_workspace_stats st = {.size = sizeof(st)};
	struct scratch_growth rec[64];
	float total = 0;
	size_t nrec;
	unsigned n;

	if (!w || !ws) {
		perror("scratch_workspace_new");
		return 1;
	}
	n = scratch_workers_size(w);
	for (int call = 0; call < 20; call++)
		scratch_workspace_execute(ws, w, gemm_member, &total);
	scratch_workspace_stats(ws, &st);
	nrec = scratch_workspace_growths(ws, rec, 64);
	printf("%u members, 20 calls: %llu growths, %llu bytes retained, %llu leased, total %.1f\n",
	       n, (unsigned long long)st.growths, (unsigned long long)st.retained,
	       (unsigned long long)st.leased, (double)total);
	for (size_t i = 0; i < nrec; i++)
		printf("  growth by thread %llu: %llu bytes\n", (unsigned long long)rec[i].tid,
		       (unsigned long long)rec[i].bytes);
	scratch_workspace_destroy(ws);
	scratch_workers_destroy(w);
	return st.growths == 2 * n + 1 && st.leased == 0 && total == 0.5f * (float)(K / n * n) ? 0
	                                                                                       : 1;
}
