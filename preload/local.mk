# preload/: the LD_PRELOAD shim, one shared object per backend (glibc and
# jemalloc always; tcmalloc and mimalloc where their development files
# are). Each is a libtool module over the one libscratch.so, so a host that
# links libscratch itself shares the same pools. Each is one glue file
# (glibc.c, jemalloc.c, tcmalloc.c, mimalloc.c: the backend, backend.h)
# that includes override.c, the malloc family, so the backend calls inline.
lib_LTLIBRARIES += preload/libscratch-preload.la preload/libscratch-preload-jemalloc.la

# The shim defines malloc: the compiler must not turn its own code into
# calls to it (malloc+memset into calloc, say). -fno-plt: every call to the
# backend or the pools is one jump through its GOT entry (bound at load
# time), not a jump into the PLT and then that jump.
PRELOAD_CFLAGS = $(AM_CFLAGS) $(VISIBILITY_CFLAGS) -ftls-model=initial-exec -fno-plt \
	-fno-builtin-malloc -fno-builtin-calloc -fno-builtin-realloc -fno-builtin-free
PRELOAD_LDFLAGS = -module -avoid-version -shared -no-undefined -Wl,-z,nodelete \
	-Wl,--version-script=$(srcdir)/preload/preload.map
EXTRA_DIST += preload/preload.map preload/override.c

preload_libscratch_preload_la_SOURCES = preload/glibc.c preload/backend.h
preload_libscratch_preload_la_CFLAGS = $(PRELOAD_CFLAGS)
preload_libscratch_preload_la_LDFLAGS = $(PRELOAD_LDFLAGS)
preload_libscratch_preload_la_LIBADD = libscratch.la
EXTRA_preload_libscratch_preload_la_DEPENDENCIES = $(srcdir)/preload/preload.map

preload_libscratch_preload_jemalloc_la_SOURCES = preload/jemalloc.c preload/backend.h
preload_libscratch_preload_jemalloc_la_CFLAGS = $(PRELOAD_CFLAGS) $(JEMALLOC_CFLAGS)
preload_libscratch_preload_jemalloc_la_LDFLAGS = $(PRELOAD_LDFLAGS)
preload_libscratch_preload_jemalloc_la_LIBADD = libscratch.la $(JEMALLOC_LIBS)
EXTRA_preload_libscratch_preload_jemalloc_la_DEPENDENCIES = $(srcdir)/preload/preload.map

if HAVE_TCMALLOC
lib_LTLIBRARIES += preload/libscratch-preload-tcmalloc.la
preload_libscratch_preload_tcmalloc_la_SOURCES = preload/tcmalloc.c preload/backend.h
preload_libscratch_preload_tcmalloc_la_CFLAGS = $(PRELOAD_CFLAGS) $(TCMALLOC_CFLAGS)
preload_libscratch_preload_tcmalloc_la_LDFLAGS = $(PRELOAD_LDFLAGS)
preload_libscratch_preload_tcmalloc_la_LIBADD = libscratch.la $(TCMALLOC_LIBS)
EXTRA_preload_libscratch_preload_tcmalloc_la_DEPENDENCIES = $(srcdir)/preload/preload.map
endif

if HAVE_MIMALLOC
lib_LTLIBRARIES += preload/libscratch-preload-mimalloc.la
preload_libscratch_preload_mimalloc_la_SOURCES = preload/mimalloc.c preload/backend.h
preload_libscratch_preload_mimalloc_la_CFLAGS = $(PRELOAD_CFLAGS)
preload_libscratch_preload_mimalloc_la_LDFLAGS = $(PRELOAD_LDFLAGS)
preload_libscratch_preload_mimalloc_la_LIBADD = libscratch.la $(MIMALLOC_LIBS)
EXTRA_preload_libscratch_preload_mimalloc_la_DEPENDENCIES = $(srcdir)/preload/preload.map
endif
