# tests/locality/audit.mk - the whole-process audit's tests (issue 24),
# included by tests/locality.mk: the inventory's unit suite in the one
# Check runner, and the scripts and hosts of tests/locality/.
tests_check_scratch_SOURCES += tests/locality/check_maps.c tests/locality/check_touch.c
tests_check_scratch_CPPFLAGS += -I$(srcdir)/tests

# A host with a mapping of every category (tests/locality/host_maps.c).
check_PROGRAMS += tests/locality/host_maps
tests_locality_host_maps_SOURCES = tests/locality/host_maps.c
tests_locality_host_maps_CFLAGS = $(AM_CFLAGS) -fno-builtin
tests_locality_host_maps_LDADD = $(PTHREAD_LIBS) -lrt

TESTS += tests/locality/audit_maps.test
EXTRA_DIST += tests/locality/audit_maps.test

# The findings' fixes applied and audited again in the two-node guest.
TESTS += tests/locality/guest_audit.test
EXTRA_DIST += tests/locality/guest_audit.test tests/locality/guest_audit.sh
