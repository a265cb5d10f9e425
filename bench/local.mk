# bench/: `make bench` measures every figure the project sets a target for, side
# by side in one run, and prints each as a ratio beside its target.
#
# The host programs use plain malloc/free and never link libscratch, so any
# allocator (or the shim) can be LD_PRELOADed under them unchanged. The helpers
# every program needs (clocks, peak RSS, option parsing) are in bench/bench.h.
# A source whose name src/ or stats/ also uses ends in _bench: bench/pool is
# built from bench/pool_bench.c.
#
# bench/README.md describes how to run it, the method and the tables.
EXTRA_DIST += bench/README.md
noinst_PROGRAMS += bench/decode bench/small bench/pair bench/churn bench/grow bench/spawn \
	bench/audit_scale bench/kvset
bench_decode_SOURCES = bench/decode.c bench/bench.h
bench_decode_LDADD = $(PTHREAD_LIBS)
bench_churn_SOURCES = bench/churn.c bench/bench.h
bench_grow_SOURCES = bench/grow.c bench/bench.h
bench_kvset_SOURCES = bench/kvset.c bench/bench.h
bench_kvset_LDADD = $(PTHREAD_LIBS)
bench_spawn_SOURCES = bench/spawn.c bench/bench.h
bench_spawn_LDADD = $(PTHREAD_LIBS)
bench_small_SOURCES = bench/small.c bench/bench.h
bench_small_LDADD = $(PTHREAD_LIBS)
bench_pair_SOURCES = bench/pair.c bench/bench.h
bench_audit_scale_SOURCES = bench/audit_scale.c bench/bench.h
bench_audit_scale_LDADD = -lm

# Programs that print their own benchmark table; bench/run.sh runs each.
# (Not *_PROGRAMS: automake would take that for a program primary.)
BENCH_RUN =

# The pool microbenchmark (issue 2): libscratch itself against glibc and jemalloc.
noinst_PROGRAMS += bench/pool
bench_pool_SOURCES = bench/pool_bench.c bench/bench.h
bench_pool_CFLAGS = $(AM_CFLAGS) $(JEMALLOC_CFLAGS)
bench_pool_LDADD = libscratch.la $(JEMALLOC_LIBS) $(PTHREAD_LIBS)
BENCH_RUN += bench/pool

# The growth trace's stack walk: libgcc against libunwind and frame pointers.
noinst_PROGRAMS += bench/walk
bench_walk_SOURCES = bench/walk.c bench/bench.h
bench_walk_CFLAGS = $(AM_CFLAGS) $(UNWIND_CFLAGS) -fomit-frame-pointer
bench_walk_LDFLAGS = -rdynamic
bench_walk_LDADD = $(UNWIND_LIBS) -ldl
BENCH_RUN += bench/walk

EXTRA_DIST += bench/run.sh bench/report.py bench/engine bench/engines/torch_decode.py \
	bench/engines/numpy_temps.py bench/engines/onnx_export.py bench/engines/ort_decode.js

bench: all
	@if test "x$(SANITIZER)" != xnone; then \
	  echo "make bench: this build uses --enable-sanitizers=$(SANITIZER); benchmark a plain build" >&2; \
	  exit 1; fi; \
	SCRATCH_TOP_BUILDDIR='$(abs_top_builddir)' \
	BENCH_PROGRAMS='$(BENCH_RUN)' \
	VALGRIND='$(VALGRIND)' \
	PKG_CONFIG='$(PKG_CONFIG)' \
	$(SHELL) $(srcdir)/bench/run.sh

# workers bench (issue 5): the worker pool against OpenMP and spawn-per-call.
noinst_PROGRAMS += bench/workers
bench_workers_SOURCES = bench/workers_bench.c bench/bench.h
bench_workers_CFLAGS = $(AM_CFLAGS) $(OPENMP_CFLAGS)
bench_workers_LDFLAGS = $(OPENMP_CFLAGS)
bench_workers_LDADD = libscratch.la $(PTHREAD_LIBS)
BENCH_RUN += bench/workers

# Forwarding interposers (bench/forward.c): the cost of interposition alone,
# beside the shim in the small-allocation table.
noinst_LTLIBRARIES += bench/libforward.la
bench_libforward_la_SOURCES = bench/forward.c
bench_libforward_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden -fno-plt
bench_libforward_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere
# The same in front of jemalloc (preloaded before libjemalloc.so.2).
noinst_LTLIBRARIES += bench/libforward-jemalloc.la
bench_libforward_jemalloc_la_SOURCES = bench/forward.c
bench_libforward_jemalloc_la_CPPFLAGS = $(AM_CPPFLAGS) -DFORWARD_JEMALLOC
bench_libforward_jemalloc_la_CFLAGS = $(AM_CFLAGS) $(JEMALLOC_CFLAGS) -fvisibility=hidden -fno-plt
bench_libforward_jemalloc_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere
bench_libforward_jemalloc_la_LIBADD = $(JEMALLOC_LIBS) -ldl
# And in front of tcmalloc and mimalloc, for those shims.
if HAVE_TCMALLOC
noinst_LTLIBRARIES += bench/libforward-tcmalloc.la
bench_libforward_tcmalloc_la_SOURCES = bench/forward.c
bench_libforward_tcmalloc_la_CPPFLAGS = $(AM_CPPFLAGS) -DFORWARD_TCMALLOC
bench_libforward_tcmalloc_la_CFLAGS = $(AM_CFLAGS) $(TCMALLOC_CFLAGS) -fvisibility=hidden -fno-plt
bench_libforward_tcmalloc_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere
bench_libforward_tcmalloc_la_LIBADD = $(TCMALLOC_LIBS)
endif
if HAVE_MIMALLOC
noinst_LTLIBRARIES += bench/libforward-mimalloc.la
bench_libforward_mimalloc_la_SOURCES = bench/forward.c
bench_libforward_mimalloc_la_CPPFLAGS = $(AM_CPPFLAGS) -DFORWARD_MIMALLOC
bench_libforward_mimalloc_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden -fno-plt
bench_libforward_mimalloc_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere
bench_libforward_mimalloc_la_LIBADD = $(MIMALLOC_LIBS)
endif

# First-toucher sampling's cost per page fault (issue 14): stats/audit/faults.c.
noinst_PROGRAMS += bench/faults
bench_faults_SOURCES = bench/faults_bench.c bench/bench.h
bench_faults_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/stats/audit
bench_faults_LDADD = libscratch_audit.la libscratch_segread.la
BENCH_RUN += bench/faults
