# Tests: one Check runner with a suite per module, and Automake TESTS scripts
# for the shim, the daemon and the CLI. Each part keeps its test rules in a
# fragment of its own, included at the end.
check_PROGRAMS += tests/check_scratch
tests_check_scratch_SOURCES = tests/check_scratch.c tests/suites.h \
	tests/check_conf.c tests/check_pool.h tests/check_pool.c tests/check_pool_threads.c \
	tests/check_pool_reuse.c tests/check_pool_decay.c \
	tests/check_workers.c tests/check_arena.c tests/check_workspace.c tests/check_stats_abi.c \
	tests/check_debug.c
tests_check_scratch_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_check_scratch_LDADD = libscratch.la libscratch_conf.la $(CHECK_LIBS) $(PTHREAD_LIBS)
TESTS += tests/check_scratch

TESTS += tests/exports.test tests/man.test tests/format.test tests/valgrind.test tests/dist.test \
	tests/debug_asan.test tests/segment_header.test
EXTRA_DIST += tests/exports.test tests/man.test tests/format.test tests/valgrind.test tests/dist.test \
	tests/debug_asan.test tests/segment_header.test \
	tests/env.sh.in tests/exports.expected tests/exports-preload.expected \
	tests/valgrind.supp
DISTCLEANFILES += tests/env.sh

include $(srcdir)/tests/shim.mk
include $(srcdir)/tests/stats.mk

# Locality tests in a two-node NUMA guest (QEMU, TCG): tests/guest.sh boots
# it, every locality case of a script runs in one boot.
check_PROGRAMS += tests/host_numa
tests_host_numa_SOURCES = tests/host_numa.c
tests_host_numa_CFLAGS = $(AM_CFLAGS) -fno-builtin
tests_host_numa_LDADD = $(PTHREAD_LIBS)
TESTS += tests/guest_numa.test
EXTRA_DIST += tests/guest_numa.test tests/guest.sh
# The guest's kernel, fetched once into the build tree (tests/guest.sh),
# outlives make clean; distclean removes it (distcheck's distcleancheck).
DISTCLEANFILES += tests/guest/vmlinuz
include $(srcdir)/tests/locality.mk

# The Debian packages: in the tarball, and built and checked from a private
# root (make check-packages).
include $(srcdir)/tests/packages.mk
