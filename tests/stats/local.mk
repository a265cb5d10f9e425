# Tests of the stats part: the segment writer, scratchd and scratchstat, end
# to end with a real daemon on a private run directory per test.
check_PROGRAMS += tests/host_stats
tests_host_stats_SOURCES = tests/host_stats.c
tests_host_stats_CFLAGS = $(AM_CFLAGS) -g -O1 -fno-omit-frame-pointer
tests_host_stats_LDADD = libscratch.la $(PTHREAD_LIBS)

check_PROGRAMS += tests/host_stats_tool
tests_host_stats_tool_SOURCES = tests/host_stats_tool.c

STATS_TESTS = tests/stats_counters.test tests/stats_trace.test tests/stats_lifecycle.test tests/stats_hostile.test tests/stats_shim.test tests/stats_interval.test tests/stats_cli_sites.test tests/stats_cli_trace.test tests/stats_cli_output.test tests/stats_cli_args.test tests/stats_churn.test tests/stats_prometheus.test tests/stats_sizes.test tests/stats_report.test
TESTS += $(STATS_TESTS)
EXTRA_DIST += $(STATS_TESTS) tests/report_check.py

# The same host with plain malloc/free, for runs under the preload shim.
check_PROGRAMS += tests/host_stats_malloc
tests_host_stats_malloc_SOURCES = tests/host_stats.c
tests_host_stats_malloc_CPPFLAGS = $(AM_CPPFLAGS) -DHOST_MALLOC
tests_host_stats_malloc_CFLAGS = $(AM_CFLAGS) -g -O1 -fno-omit-frame-pointer -fno-builtin-malloc
tests_host_stats_malloc_LDADD = $(PTHREAD_LIBS) -ldl

# A C++ host: growths through operator new, demangled call sites.
check_PROGRAMS += tests/host_stats_cxx
tests_host_stats_cxx_SOURCES = tests/host_stats_cxx.cc
tests_host_stats_cxx_CXXFLAGS = $(AM_CXXFLAGS) -g -O1 -fno-omit-frame-pointer
