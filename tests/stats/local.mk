# Tests of the stats part: the segment writer, scratchd and scratchstat, end
# to end with a real daemon on a private run directory per test. The hosts
# are this group's; shim_messages.test runs host_stats_malloc too, and
# stats_report.test runs the locality group's host_numa and
# host_locality_tool for the report's audit.
check_PROGRAMS += tests/stats/host_stats
tests_stats_host_stats_SOURCES = tests/stats/host_stats.c
tests_stats_host_stats_CFLAGS = $(AM_CFLAGS) -g -O1 -fno-omit-frame-pointer
tests_stats_host_stats_LDADD = libscratch.la $(PTHREAD_LIBS)

check_PROGRAMS += tests/stats/host_stats_tool
tests_stats_host_stats_tool_SOURCES = tests/stats/host_stats_tool.c

STATS_TESTS = tests/stats/stats_counters.test tests/stats/stats_trace.test \
	tests/stats/stats_lifecycle.test tests/stats/stats_hostile.test tests/stats/stats_shim.test \
	tests/stats/stats_interval.test tests/stats/stats_cli_sites.test \
	tests/stats/stats_cli_trace.test tests/stats/stats_cli_output.test \
	tests/stats/stats_cli_args.test tests/stats/stats_churn.test \
	tests/stats/stats_prometheus.test tests/stats/stats_sizes.test \
	tests/stats/stats_report.test
TESTS += $(STATS_TESTS)
EXTRA_DIST += $(STATS_TESTS) tests/stats/report_check.py

# The same host with plain malloc/free, for runs under the preload shim.
check_PROGRAMS += tests/stats/host_stats_malloc
tests_stats_host_stats_malloc_SOURCES = tests/stats/host_stats.c
tests_stats_host_stats_malloc_CPPFLAGS = $(AM_CPPFLAGS) -DHOST_MALLOC
tests_stats_host_stats_malloc_CFLAGS = $(AM_CFLAGS) -g -O1 -fno-omit-frame-pointer \
	-fno-builtin-malloc
tests_stats_host_stats_malloc_LDADD = $(PTHREAD_LIBS) -ldl

# A C++ host: growths through operator new, demangled call sites.
check_PROGRAMS += tests/stats/host_stats_cxx
tests_stats_host_stats_cxx_SOURCES = tests/stats/host_stats_cxx.cc
tests_stats_host_stats_cxx_CXXFLAGS = $(AM_CXXFLAGS) -g -O1 -fno-omit-frame-pointer
