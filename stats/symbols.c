/*
 * symbols.c - return addresses to function, file and line (see symbols.h).
 */
#include "config.h"

#include <dlfcn.h>
#include <elfutils/libdw.h>
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

/*
 * C++ names come out of the symbol table mangled. The demangler is the C++
 * runtime's own __cxa_demangle, found at run time so scratchstat does not
 * link libstdc++; without it the mangled name is shown.
 */
static void demangle(char *name, size_t len)
{
	typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);
	static demangle_fn fn;
	static bool tried;
	char *out;
	int status = -1;

	if (strncmp(name, "_Z", 2) != 0)
		return;
	if (!tried) {
		void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);

		tried = true;
		fn = h != NULL ? (demangle_fn)dlsym(h, "__cxa_demangle") : NULL;
	}
	if (fn == NULL)
		return;
	out = fn(name, NULL, NULL, &status);
	if (out != NULL && status == 0)
		snprintf(name, len, "%s", out);
	free(out);
}

/*
 * File and line of addr by walking the module's compilation units: the
 * fallback for objects without .debug_aranges (clang emits none by
 * default), where dwfl_module_getsrc finds no unit. Returns the file name
 * (owned by libdw) or NULL.
 */
static const char *src_by_units(Dwfl_Module *m, Dwarf_Addr addr, int *ret_line)
{
	Dwarf_Die *cu = NULL;
	Dwarf_Addr bias = 0;

	while ((cu = dwfl_module_nextcu(m, cu, &bias)) != NULL) {
		Dwarf_Line *l;

		if (dwarf_haspc(cu, addr - bias) <= 0)
			continue;
		l = dwarf_getsrc_die(cu, addr - bias);
		if (l == NULL || dwarf_lineno(l, ret_line) != 0)
			return NULL;
		return dwarf_linesrc(l, NULL, NULL);
	}
	return NULL;
}

bool sym_lookup(struct symbolizer *s, uint64_t ret_addr, struct sym_info *ret)
{
	/* A return address points after the call: look the call up. */
	Dwarf_Addr addr = ret_addr > 0 ? ret_addr - 1 : 0;
	Dwfl_Module *m = dwfl_addrmodule(s->dwfl, addr);
	GElf_Off off = 0;
	Dwarf_Addr start = 0;
	GElf_Sym sym;
	const char *name, *mod, *src;
	Dwfl_Line *line;
	int lineno = 0;

	memset(ret, 0, sizeof(*ret));
	if (m == NULL)
		return false;
	mod = dwfl_module_info(m, NULL, &start, NULL, NULL, NULL, NULL, NULL);
	copy(ret->module, sizeof(ret->module), mod);
	name = dwfl_module_addrinfo(m, addr, &off, &sym, NULL, NULL, NULL);
	copy(ret->function, sizeof(ret->function), name);
	ret->allocator =
	        name != NULL && (strncmp(name, "_Znw", 4) == 0 || strncmp(name, "_Zna", 4) == 0);
	demangle(ret->function, sizeof(ret->function));
	/* the return address's offset in its function, else in its module */
	ret->offset = name != NULL ? off + 1 : ret_addr - start;
	line = dwfl_module_getsrc(m, addr);
	src = line != NULL ? dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL) : NULL;
	if (src == NULL)
		src = src_by_units(m, addr, &lineno);
	if (src != NULL) {
		const char *base = strrchr(src, '/');

		copy(ret->file, sizeof(ret->file), base != NULL ? base + 1 : src);
		ret->line = lineno;
	}
	return true;
}
