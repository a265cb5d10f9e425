# The memory-locality audit's data collection (issue 14): the modules'
# unit suite, the command-line driver the locality tests run, and the tests
# on this host and in the two-node guest.

check_PROGRAMS += tests/host_locality_tool
tests_host_locality_tool_SOURCES = tests/host_locality_tool.c
tests_host_locality_tool_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/stats/audit -I$(srcdir)/stats/segread
tests_host_locality_tool_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_host_locality_tool_LDADD = libscratch_audit.la libscratch_segread.la $(JANSSON_LIBS)

# The pools' per-node depot in the guest: libscratch linked in statically,
# so the guest needs no libtool wrapper.
check_PROGRAMS += tests/host_numa_depot
tests_host_numa_depot_SOURCES = tests/host_numa_depot.c
tests_host_numa_depot_LDFLAGS = -static
tests_host_numa_depot_LDADD = libscratch.la $(PTHREAD_LIBS)

check_PROGRAMS += tests/host_audit
tests_host_audit_SOURCES = tests/host_audit.c
tests_host_audit_CFLAGS = $(AM_CFLAGS) -fno-builtin
tests_host_audit_LDADD = $(PTHREAD_LIBS)

TESTS += tests/locality_host.test tests/guest_locality.test tests/audit_host.test
EXTRA_DIST += tests/locality_host.test tests/guest_locality.test \
	tests/audit_guest.sh tests/audit_host.test
