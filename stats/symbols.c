/*
 * symbols.c - return addresses to function, file and line (see symbols.h).
 */
#include "config.h"

#include <elfutils/libdwfl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbols.h"

struct symbolizer {
	Dwfl *dwfl;
};

static const Dwfl_Callbacks callbacks = {
        .find_elf = dwfl_linux_proc_find_elf,
        .find_debuginfo = dwfl_standard_find_debuginfo,
};

struct symbolizer *sym_new(const char *maps)
{
	struct symbolizer *s = calloc(1, sizeof(*s));
	FILE *f;

	if (s == NULL)
		return NULL;
	s->dwfl = dwfl_begin(&callbacks);
	if (s->dwfl == NULL) {
		free(s);
		errno = ENOMEM;
		return NULL;
	}
	dwfl_report_begin(s->dwfl);
	if (maps != NULL && *maps != '\0') {
		f = fmemopen((void *)maps, strlen(maps), "r");
		if (f != NULL) {
			dwfl_linux_proc_maps_report(s->dwfl, f);
			fclose(f);
		}
	}
	dwfl_report_end(s->dwfl, NULL, NULL);
	return s;
}

void sym_free(struct symbolizer *s)
{
	if (s == NULL)
		return;
	dwfl_end(s->dwfl);
	free(s);
}

static void copy(char *dst, size_t len, const char *src)
{
	snprintf(dst, len, "%s", src != NULL ? src : "");
}

bool sym_lookup(struct symbolizer *s, uint64_t ret_addr, struct sym_info *ret)
{
	/* A return address points after the call: look the call up. */
	Dwarf_Addr addr = ret_addr > 0 ? ret_addr - 1 : 0;
	Dwfl_Module *m = dwfl_addrmodule(s->dwfl, addr);
	GElf_Off off = 0;
	GElf_Sym sym;
	const char *name, *mod, *src;
	Dwfl_Line *line;
	int lineno = 0;

	memset(ret, 0, sizeof(*ret));
	if (m == NULL)
		return false;
	mod = dwfl_module_info(m, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
	copy(ret->module, sizeof(ret->module), mod);
	name = dwfl_module_addrinfo(m, addr, &off, &sym, NULL, NULL, NULL);
	copy(ret->function, sizeof(ret->function), name);
	ret->offset = name != NULL ? off + 1 : 0;
	line = dwfl_module_getsrc(m, addr);
	src = line != NULL ? dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL) : NULL;
	if (src != NULL) {
		const char *base = strrchr(src, '/');

		copy(ret->file, sizeof(ret->file), base != NULL ? base + 1 : src);
		ret->line = lineno;
	}
	return true;
}
