/*
 * symbols.c - return addresses to function, file and line (see symbols.h).
 */
#include "config.h"

#include <dlfcn.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>

#include "symbols.h"

#define OVERLAYFS_MAGIC 0x794c7630

/* Lookups remembered, direct-mapped by address: growth records share
 * their frames, and a libdw lookup costs a symbol table walk. */
#define SYM_CACHE 1024

struct sym_cached {
	uint64_t ret_addr; /* 0: empty */
	bool ok;
	struct symbols_info info;
};

struct symbols {
	Dwfl *dwfl;
	/* Files whose path names another file now than the one mapped (a
	 * binary replaced at the same path): their symbols would be wrong. */
	char **replaced;
	size_t nreplaced;
	struct sym_cached *cache; /* SYM_CACHE entries, NULL: none (no memory) */
};

static const Dwfl_Callbacks callbacks = {
        .find_elf = dwfl_linux_proc_find_elf,
        .find_debuginfo = dwfl_standard_find_debuginfo,
};

static bool is_replaced(const struct symbols *s, const char *path)
{
	for (size_t i = 0; i < s->nreplaced; i++)
		if (strcmp(s->replaced[i], path) == 0)
			return true;
	return false;
}

/*
 * A maps line names the device and inode of the file mapped; the path may
 * name another file by now. Overlayfs shows the underlying file's device
 * in the maps but its own in stat(): there only the inode is compared.
 */
static void find_replaced(struct symbols *s, const char *maps)
{
	for (const char *l = maps; *l != '\0';) {
		const char *nl = strchr(l, '\n');
		size_t len = nl != NULL ? (size_t)(nl - l) : strlen(l);
		char line[PATH_MAX + 256], path[PATH_MAX];
		unsigned maj, min;
		unsigned long long ino;
		struct stat st;
		struct statfs fs;
		char **nr;

		if (len < sizeof(line)) {
			memcpy(line, l, len);
			line[len] = '\0';
			path[0] = '\0';
			if (sscanf(line, "%*s %*s %*s %x:%x %llu %4095[^\n]", &maj, &min, &ino,
			           path) == 4 &&
			    path[0] == '/' && ino != 0 && !is_replaced(s, path) &&
			    stat(path, &st) == 0 &&
			    ((unsigned long long)st.st_ino != ino ||
			     (st.st_dev != makedev(maj, min) &&
			      !(statfs(path, &fs) == 0 && fs.f_type == OVERLAYFS_MAGIC)))) {
				nr = realloc(s->replaced, (s->nreplaced + 1) * sizeof(*nr));
				if (nr != NULL) {
					s->replaced = nr;
					s->replaced[s->nreplaced] = strdup(path);
					if (s->replaced[s->nreplaced] != NULL)
						s->nreplaced++;
				}
			}
		}
		l += len;
		if (*l == '\n')
			l++;
	}
}

struct symbols *symbols_new(const char *maps)
{
	struct symbols *s = calloc(1, sizeof(*s));
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
	if (maps != NULL)
		find_replaced(s, maps);
	s->cache = calloc(SYM_CACHE, sizeof(*s->cache)); /* without it, lookups are slower */
	return s;
}

void symbols_free(struct symbols *s)
{
	if (s == NULL)
		return;
	dwfl_end(s->dwfl);
	for (size_t i = 0; i < s->nreplaced; i++)
		free(s->replaced[i]);
	free(s->replaced);
	free(s->cache);
	free(s);
}

bool symbols_internal(const struct symbols_info *si)
{
	const char *base = strrchr(si->module, '/');

	base = base != NULL ? base + 1 : si->module;
	return strncmp(base, "libscratch", 10) == 0 || strncmp(si->function, "scratch_", 8) == 0 ||
	       si->allocator;
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

static bool lookup(struct symbols *s, uint64_t ret_addr, struct symbols_info *ret);

bool symbols_lookup(struct symbols *s, uint64_t ret_addr, struct symbols_info *ret)
{
	/* the maps, and so every answer, are fixed for s's life */
	struct sym_cached *c =
	        s->cache != NULL ? &s->cache[(ret_addr ^ ret_addr >> 12) % SYM_CACHE] : NULL;

	if (c != NULL && ret_addr != 0 && c->ret_addr == ret_addr) {
		*ret = c->info;
		return c->ok;
	}
	if (c == NULL || ret_addr == 0)
		return lookup(s, ret_addr, ret);
	c->ok = lookup(s, ret_addr, &c->info);
	c->ret_addr = ret_addr;
	*ret = c->info;
	return c->ok;
}

static bool lookup(struct symbols *s, uint64_t ret_addr, struct symbols_info *ret)
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
	if (mod != NULL && is_replaced(s, mod)) {
		/* no symbol of the file there now: the module and offset */
		ret->replaced = true;
		ret->offset = ret_addr - start;
		return true;
	}
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
