# Tests, grouped as the code is: a folder per group, each with its own
# fragment, included here.
#
#   lib/       env.sh (configure makes it), the shell libraries the
#              scripts source, the suppression files
#   unit/      the one Check runner, with a suite per module
#   tree/      checks of the whole tree: exports, man pages, formatting,
#              valgrind, the release tarball, the ASan+UBSan debug build,
#              the segment header on its own
#   shim/      the preload shim, run with and without each shim
#   stats/     the segment writer, scratchd and scratchstat, end to end
#   locality/  the memory-locality audit and the pools' NUMA placement, on
#              this host and in a two-node guest
#
# A host program lives with the group that owns it; another group that runs
# it names it by that path (tests/stats/host_stats_malloc,
# tests/locality/host_numa, tests/locality/host_locality_tool).
include $(srcdir)/tests/lib/local.mk
include $(srcdir)/tests/unit/local.mk
include $(srcdir)/tests/tree/local.mk
include $(srcdir)/tests/shim/local.mk
include $(srcdir)/tests/stats/local.mk
include $(srcdir)/tests/locality/local.mk
