/*
 * args.c - scratchstat's arguments read by hand (args.h): the scan past
 * the global options for the command word, and option values.
 */
#include "config.h"

#include <string.h>

#include "args.h"

const char *args_value(int argc, char **argv, int *i, const char *name)
{
	size_t n = strlen(name);

	if (strncmp(argv[*i], name, n) == 0 && argv[*i][n] == '=')
		return argv[*i] + n + 1;
	if (strcmp(argv[*i], name) == 0 && *i + 1 < argc)
		return argv[++*i];
	return NULL;
}

int args_command(int argc, char **argv, struct args_global *g)
{
	for (int i = 1; i < argc; i++) {
		const char *v;

		if (strcmp(argv[i], "--json") == 0 || strcmp(argv[i], "-j") == 0) {
			g->json = true;
		} else if (strcmp(argv[i], "--no-start") == 0 || strcmp(argv[i], "-n") == 0) {
			continue;
		} else if ((v = args_value(argc, argv, &i, "--run-dir")) != NULL ||
		           (strcmp(argv[i], "-d") == 0 &&
		            (v = args_value(argc, argv, &i, "-d")) != NULL)) {
			g->run_dir = v;
		} else if (args_value(argc, argv, &i, "--socket") != NULL ||
		           (strcmp(argv[i], "-s") == 0 &&
		            args_value(argc, argv, &i, "-s") != NULL)) {
			continue;
		} else {
			return i;
		}
	}
	return 0;
}
