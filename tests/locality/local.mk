# Locality: the pools' page placement and the memory-locality audit
# (issue 14), on this host and in a two-node NUMA guest (QEMU, TCG):
# tests/lib/guest.sh boots it, every locality case of a script runs in one
# boot. The audit's unit suite is in the Check runner (tests/unit/).
# stats_report.test runs host_numa and host_locality_tool too.

# First-touch placement with and without each shim (guest_numa.test); the
# audit's subject in the guest and on this host.
check_PROGRAMS += tests/locality/host_numa
tests_locality_host_numa_SOURCES = tests/locality/host_numa.c
tests_locality_host_numa_CFLAGS = $(AM_CFLAGS) -fno-builtin
tests_locality_host_numa_LDADD = $(PTHREAD_LIBS)
TESTS += tests/locality/guest_numa.test
EXTRA_DIST += tests/locality/guest_numa.test

# The command-line driver of the audit's data collection modules.
check_PROGRAMS += tests/locality/host_locality_tool
tests_locality_host_locality_tool_SOURCES = tests/locality/host_locality_tool.c
tests_locality_host_locality_tool_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/stats/audit \
	-I$(srcdir)/stats/segread
tests_locality_host_locality_tool_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_locality_host_locality_tool_LDADD = libscratch_audit.la libscratch_segread.la \
	$(JANSSON_LIBS)

# The pools' per-node depot in the guest: libscratch linked in statically,
# so the guest needs no libtool wrapper.
check_PROGRAMS += tests/locality/host_numa_depot
tests_locality_host_numa_depot_SOURCES = tests/locality/host_numa_depot.c
tests_locality_host_numa_depot_LDFLAGS = -static
tests_locality_host_numa_depot_LDADD = libscratch.la $(PTHREAD_LIBS)

check_PROGRAMS += tests/locality/host_audit
tests_locality_host_audit_SOURCES = tests/locality/host_audit.c
tests_locality_host_audit_CFLAGS = $(AM_CFLAGS) -fno-builtin
tests_locality_host_audit_LDADD = $(PTHREAD_LIBS)

LOCALITY_TESTS = tests/locality/locality_host.test tests/locality/guest_locality.test \
	tests/locality/audit_host.test
TESTS += $(LOCALITY_TESTS)
EXTRA_DIST += $(LOCALITY_TESTS) tests/locality/audit_guest.sh
