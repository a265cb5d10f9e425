/*
 * audit_cli.h - `scratchstat audit`: the command (audit_cli.c) over the
 * audit's session (audit.h), and the JSON document of a result, which the
 * table is rendered from and `scratchstat report` may embed.
 */
#ifndef SCRATCH_STATS_AUDIT_CLI_H
#define SCRATCH_STATS_AUDIT_CLI_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "audit.h"

/*
 * If the first word of argv that is not one of scratchstat's global
 * options (--json, --no-start, --run-dir DIR, --socket PATH) is "audit",
 * run the audit command and return its exit status (scratchstat(1),
 * AUDIT); else return -1 and touch nothing.
 */
int audit_dispatch(int argc, char **argv);

/* The audit's usage lines, the first begun with "usage: " when first, else
 * indented as a continuation of scratchstat's. */
void audit_usage(FILE *f, bool first);

/* The result as one JSON object (snake_case keys, raw integers, null for
 * an unknown node); NULL without memory. The caller owns it. */
json_t *audit_json(const struct audit_result *r);

#endif /* SCRATCH_STATS_AUDIT_CLI_H */
