# Tests of the preload shim: plain host programs (not linked to libscratch)
# run with and without each shim by the shim_*.test scripts, a plugin for
# the dlopen tests, and a helper preloaded after the shim that reports the
# pool totals at exit; the Python programs some scripts run. All of them
# skip (77) under sanitizers. shim_messages.test also runs the stats
# group's host_stats_malloc.
SHIM_HOST_CFLAGS = $(AM_CFLAGS) -fno-builtin
check_PROGRAMS += tests/shim/host_semantics tests/shim/host_robust tests/shim/host_stress \
	tests/shim/host_cxx tests/shim/host_jelinked tests/shim/host_omp tests/shim/host_early \
	tests/shim/host_bursty tests/shim/host_fds tests/shim/host_daemon tests/shim/host_reopen

tests_shim_host_semantics_SOURCES = tests/shim/host_semantics.c
tests_shim_host_semantics_CFLAGS = $(SHIM_HOST_CFLAGS)
tests_shim_host_robust_SOURCES = tests/shim/host_robust.c tests/shim/host_robust_env.c \
	tests/shim/host_robust.h tests/shim/host_common.h tests/shim/shimplug.h
tests_shim_host_robust_CFLAGS = $(SHIM_HOST_CFLAGS)
tests_shim_host_robust_LDADD = $(PTHREAD_LIBS)
tests_shim_host_stress_SOURCES = tests/shim/host_stress.c tests/shim/host_common.h
tests_shim_host_stress_CFLAGS = $(SHIM_HOST_CFLAGS)
tests_shim_host_stress_LDADD = $(PTHREAD_LIBS)
tests_shim_host_jelinked_SOURCES = tests/shim/host_jelinked.c tests/shim/host_common.h
tests_shim_host_jelinked_CFLAGS = $(SHIM_HOST_CFLAGS) $(JEMALLOC_CFLAGS)
tests_shim_host_jelinked_LDADD = $(JEMALLOC_LIBS)
tests_shim_host_omp_SOURCES = tests/shim/host_omp.c tests/shim/host_common.h
tests_shim_host_omp_CFLAGS = $(SHIM_HOST_CFLAGS) $(OPENMP_CFLAGS)
tests_shim_host_omp_LDFLAGS = $(OPENMP_CFLAGS)
tests_shim_host_early_SOURCES = tests/shim/host_early.c tests/shim/host_common.h \
	tests/shim/shimplug.h
tests_shim_host_early_CFLAGS = $(SHIM_HOST_CFLAGS)
tests_shim_host_early_LDADD = tests/shim/libshimearly.la
# The transparency hosts: what a host can see of the shim (descriptors,
# files, offsets) while its threads make the pools grow.
tests_shim_host_fds_SOURCES = tests/shim/host_fds.c tests/shim/host_grow.h \
	tests/shim/host_common.h
tests_shim_host_fds_CFLAGS = $(SHIM_HOST_CFLAGS)
tests_shim_host_fds_LDADD = $(PTHREAD_LIBS)
tests_shim_host_daemon_SOURCES = tests/shim/host_daemon.c tests/shim/host_grow.h \
	tests/shim/host_common.h
tests_shim_host_daemon_CFLAGS = $(SHIM_HOST_CFLAGS)
tests_shim_host_daemon_LDADD = $(PTHREAD_LIBS)
tests_shim_host_reopen_SOURCES = tests/shim/host_reopen.c tests/shim/host_grow.h \
	tests/shim/host_common.h
tests_shim_host_reopen_CFLAGS = $(SHIM_HOST_CFLAGS)
tests_shim_host_reopen_LDADD = $(PTHREAD_LIBS)
tests_shim_host_bursty_SOURCES = tests/shim/host_bursty.c tests/shim/host_common.h
tests_shim_host_bursty_CFLAGS = $(SHIM_HOST_CFLAGS)
tests_shim_host_bursty_LDADD = $(PTHREAD_LIBS)
tests_shim_host_cxx_SOURCES = tests/shim/host_cxx.cc
tests_shim_host_cxx_CXXFLAGS = $(AM_CXXFLAGS) -fno-builtin
tests_shim_host_cxx_LDADD = $(PTHREAD_LIBS)

# -rpath makes libtool build them shared; they are never installed.
check_LTLIBRARIES += tests/shim/libshimplug.la tests/shim/libshimcheck.la \
	tests/shim/libshimearly.la
tests_shim_libshimplug_la_SOURCES = tests/shim/shimplug.c tests/shim/shimplug.h \
	tests/shim/host_common.h
tests_shim_libshimplug_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere
# The same plugin as an ordinary dependency of host_early.
tests_shim_libshimearly_la_SOURCES = tests/shim/shimplug.c tests/shim/shimplug.h \
	tests/shim/host_common.h
tests_shim_libshimearly_la_LDFLAGS = -avoid-version -shared -rpath /nowhere
tests_shim_libshimcheck_la_SOURCES = tests/shim/shimcheck.c
tests_shim_libshimcheck_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere
tests_shim_libshimcheck_la_LIBADD = libscratch.la

SHIM_TESTS = tests/shim/shim_semantics.test tests/shim/shim_robust.test \
	tests/shim/shim_stress.test tests/shim/shim_cxx.test tests/shim/shim_conf.test \
	tests/shim/shim_torch.test tests/shim/shim_python.test tests/shim/shim_sort.test \
	tests/shim/shim_gcc.test tests/shim/shim_git.test tests/shim/shim_messages.test \
	tests/shim/shim_fds.test tests/shim/shim_cpython.test tests/shim/shim_strace.test \
	tests/shim/shim_observe.test tests/shim/shim_decay.test
TESTS += $(SHIM_TESTS)
EXTRA_DIST += $(SHIM_TESTS) tests/shim/shim_torch.py tests/shim/shim_threads.py \
	tests/shim/shim_subprocess.py tests/shim/strace_fds.py
