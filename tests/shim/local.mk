# Tests of the preload shim: plain host programs (not linked to libscratch)
# run with and without each shim by the shim_*.test scripts, a plugin for
# the dlopen tests, and a helper preloaded after the shim that reports the
# pool totals at exit. All of them skip (77) under sanitizers.
SHIM_HOST_CFLAGS = $(AM_CFLAGS) -fno-builtin
check_PROGRAMS += tests/host_semantics tests/host_robust tests/host_stress tests/host_cxx \
	tests/host_jelinked tests/host_omp tests/host_early tests/host_bursty \
	tests/host_fds tests/host_daemon tests/host_reopen

tests_host_semantics_SOURCES = tests/host_semantics.c
tests_host_semantics_CFLAGS = $(SHIM_HOST_CFLAGS)
tests_host_robust_SOURCES = tests/host_robust.c tests/host_robust_env.c tests/host_robust.h \
	tests/host_common.h tests/shimplug.h
tests_host_robust_CFLAGS = $(SHIM_HOST_CFLAGS)
tests_host_robust_LDADD = $(PTHREAD_LIBS)
tests_host_stress_SOURCES = tests/host_stress.c tests/host_common.h
tests_host_stress_CFLAGS = $(SHIM_HOST_CFLAGS)
tests_host_stress_LDADD = $(PTHREAD_LIBS)
tests_host_jelinked_SOURCES = tests/host_jelinked.c tests/host_common.h
tests_host_jelinked_CFLAGS = $(SHIM_HOST_CFLAGS) $(JEMALLOC_CFLAGS)
tests_host_jelinked_LDADD = $(JEMALLOC_LIBS)
tests_host_omp_SOURCES = tests/host_omp.c tests/host_common.h
tests_host_omp_CFLAGS = $(SHIM_HOST_CFLAGS) $(OPENMP_CFLAGS)
tests_host_omp_LDFLAGS = $(OPENMP_CFLAGS)
tests_host_early_SOURCES = tests/host_early.c tests/host_common.h tests/shimplug.h
tests_host_early_CFLAGS = $(SHIM_HOST_CFLAGS)
tests_host_early_LDADD = tests/libshimearly.la
# The transparency hosts: what a host can see of the shim (descriptors,
# files, offsets) while its threads make the pools grow.
tests_host_fds_SOURCES = tests/host_fds.c tests/host_grow.h tests/host_common.h
tests_host_fds_CFLAGS = $(SHIM_HOST_CFLAGS)
tests_host_fds_LDADD = $(PTHREAD_LIBS)
tests_host_daemon_SOURCES = tests/host_daemon.c tests/host_grow.h tests/host_common.h
tests_host_daemon_CFLAGS = $(SHIM_HOST_CFLAGS)
tests_host_daemon_LDADD = $(PTHREAD_LIBS)
tests_host_reopen_SOURCES = tests/host_reopen.c tests/host_grow.h tests/host_common.h
tests_host_reopen_CFLAGS = $(SHIM_HOST_CFLAGS)
tests_host_reopen_LDADD = $(PTHREAD_LIBS)
tests_host_bursty_SOURCES = tests/host_bursty.c tests/host_common.h
tests_host_bursty_CFLAGS = $(SHIM_HOST_CFLAGS)
tests_host_bursty_LDADD = $(PTHREAD_LIBS)
tests_host_cxx_SOURCES = tests/host_cxx.cc
tests_host_cxx_CXXFLAGS = $(AM_CXXFLAGS) -fno-builtin
tests_host_cxx_LDADD = $(PTHREAD_LIBS)

# -rpath makes libtool build them shared; they are never installed.
check_LTLIBRARIES += tests/libshimplug.la tests/libshimcheck.la tests/libshimearly.la
tests_libshimplug_la_SOURCES = tests/shimplug.c tests/shimplug.h tests/host_common.h
tests_libshimplug_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere
# The same plugin as an ordinary dependency of host_early.
tests_libshimearly_la_SOURCES = tests/shimplug.c tests/shimplug.h tests/host_common.h
tests_libshimearly_la_LDFLAGS = -avoid-version -shared -rpath /nowhere
tests_libshimcheck_la_SOURCES = tests/shimcheck.c
tests_libshimcheck_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere
tests_libshimcheck_la_LIBADD = libscratch.la

SHIM_TESTS = tests/shim_semantics.test tests/shim_robust.test tests/shim_stress.test \
	tests/shim_cxx.test tests/shim_conf.test tests/shim_torch.test tests/shim_python.test \
	tests/shim_sort.test tests/shim_gcc.test tests/shim_git.test tests/shim_messages.test \
	tests/shim_fds.test tests/shim_cpython.test tests/shim_strace.test tests/shim_observe.test \
	tests/shim_decay.test
TESTS += $(SHIM_TESTS)
EXTRA_DIST += $(SHIM_TESTS) tests/shim_torch.py tests/shim_threads.py \
	tests/shim_subprocess.py tests/strace_fds.py
