/*
 * cmd_audit.h - `scratchstat audit`: the command (cmd_audit.c) over the
 * audit's session (audit.h), and the JSON document of a result, which the
 * table is rendered from and `scratchstat report` may embed.
 */
#ifndef SCRATCH_STATS_CMD_AUDIT_H
#define SCRATCH_STATS_CMD_AUDIT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "args.h"
#include "audit.h"

/*
 * The audit command: argv[0] is "audit", the rest its own arguments
 * (scratchstat(1), AUDIT); g holds the global options that came before
 * it. It reads the segment and the kernel, not scratchd. Returns the
 * exit status.
 */
int cmd_audit(int argc, char **argv, const struct args_global *g);

/* The audit's usage lines, the first begun with "usage: " when first, else
 * indented as a continuation of scratchstat's. */
void cmd_audit_usage(FILE *f, bool first);

/* The result as one JSON object (snake_case keys, raw integers, null for
 * an unknown node); NULL without memory. The caller owns it. */
json_t *cmd_audit_json(const struct audit_result *r);

#endif /* SCRATCH_STATS_CMD_AUDIT_H */
