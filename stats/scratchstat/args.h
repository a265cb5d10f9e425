/*
 * args.h - scratchstat's arguments read by hand, before and beside
 * getopt: the word after the global options, which names a command that
 * parses its own arguments (cmd_audit.h), and an option's value for such
 * a command.
 */
#ifndef SCRATCH_STATS_ARGS_H
#define SCRATCH_STATS_ARGS_H

#include <stdbool.h>

/* What the global options before the command word said, for a command
 * that parses its own arguments. */
struct args_global {
	bool json;           /* --json, -j */
	const char *run_dir; /* --run-dir DIR, -d DIR; NULL: not given */
};

/*
 * The index in argv of the first word past scratchstat's global options
 * (--json, --no-start, --run-dir DIR, --socket PATH, their short forms),
 * or 0 when there is none; the options seen go into *g. Any other option
 * ends the scan as a word would: main then leaves argv to getopt.
 */
int args_command(int argc, char **argv, struct args_global *g);

/* The value of option name at argv[*i] ("--name V", *i then moved to V,
 * or "--name=V"); NULL when argv[*i] is not name with a value. */
const char *args_value(int argc, char **argv, int *i, const char *name);

#endif /* SCRATCH_STATS_ARGS_H */
