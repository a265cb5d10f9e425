# libscratch: the core library (src/).
lib_LTLIBRARIES += libscratch.la
include_HEADERS += src/scratch.h

libscratch_la_SOURCES = \
	src/scratch.h src/internal.h src/shim.h src/debug.h \
	src/os.c src/conf.c \
	src/pool.h src/pool.c src/pool_slow.c src/pool_tcache.c src/pool_region.c \
	src/pool_grow.c src/pool_lend.c src/pool_gate.c src/pool_decay.c src/pool_fork.c \
	src/pool_stats.c src/pool_init.c src/pool_tail.c src/pool_dense.c \
	src/segment.h src/segment.c src/trace.c \
	src/workers.h src/workers.c src/matvec.c src/arena.c src/workspace.c
libscratch_la_CFLAGS = $(AM_CFLAGS) $(VISIBILITY_CFLAGS) -ftls-model=initial-exec
libscratch_la_LIBADD = $(PTHREAD_LIBS)
# -static-libgcc: the growth trace's unwinder (libgcc_eh.a) is linked in,
# hidden, so no host's unwinder (libunwind's _Unwind_Backtrace) replaces it.
libscratch_la_LDFLAGS = -version-info $(SCRATCH_LT_VERSION) -no-undefined -static-libgcc \
	-Wl,--version-script=$(srcdir)/src/libscratch.map -Wl,-z,nodelete
EXTRA_libscratch_la_DEPENDENCIES = $(srcdir)/src/libscratch.map
EXTRA_DIST += src/libscratch.map

# The configuration parser alone, for its unit tests (pure functions).
noinst_LTLIBRARIES += libscratch_conf.la
libscratch_conf_la_SOURCES = src/conf.c src/internal.h src/scratch.h
libscratch_conf_la_CFLAGS = $(AM_CFLAGS)
