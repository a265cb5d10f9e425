# Tests: one Check runner with a suite per module, and Automake TESTS scripts
# for the shim, the daemon and the CLI. Each part keeps its test rules in a
# fragment of its own, included at the end.
include $(srcdir)/tests/lib/local.mk
include $(srcdir)/tests/unit/local.mk
include $(srcdir)/tests/tree/local.mk
include $(srcdir)/tests/shim/local.mk
include $(srcdir)/tests/stats/local.mk

# Locality tests in a two-node NUMA guest (QEMU, TCG): tests/lib/guest.sh boots
# it, every locality case of a script runs in one boot.
check_PROGRAMS += tests/host_numa
tests_host_numa_SOURCES = tests/host_numa.c
tests_host_numa_CFLAGS = $(AM_CFLAGS) -fno-builtin
tests_host_numa_LDADD = $(PTHREAD_LIBS)
TESTS += tests/guest_numa.test
EXTRA_DIST += tests/guest_numa.test
include $(srcdir)/tests/locality/local.mk
