# Checks of the whole tree: the exported symbols (exports.test, against the
# two .expected lists), the man pages' lint, formatting, the unit suites
# under valgrind, the release tarball (dist.test), the debug build under
# ASan+UBSan, the stats segment's header standing alone, and that bootstrap
# installs what the Debian packages' build needs (builddeps.test) and that
# they take every file make install installs (debian_install.test), and
# bench/report.py's table 6 pairs on a results file of its own, and
# bench/run.sh's refusal of a bad count (bench_report.test), and the pooled
# pair's and the pass-through's instruction budgets, counted by callgrind
# (budget.test).
TREE_TESTS = tests/tree/exports.test tests/tree/man.test tests/tree/format.test \
	tests/tree/valgrind.test tests/tree/dist.test tests/tree/debug_asan.test \
	tests/tree/segment_header.test tests/tree/builddeps.test tests/tree/debian_install.test \
	tests/tree/bench_report.test tests/tree/budget.test
TESTS += $(TREE_TESTS)
EXTRA_DIST += $(TREE_TESTS) tests/tree/exports.expected tests/tree/exports-preload.expected

# make check-packages (packages.sh): builds the Debian packages from the
# release tree with dpkg-buildpackage, runs blhc and lintian on them, and
# checks the install path from a private root (dpkg -x).
EXTRA_DIST += tests/tree/packages.sh
check-packages:
	SCRATCH_TOP_SRCDIR='$(abs_top_srcdir)' SCRATCH_TOP_BUILDDIR='$(abs_top_builddir)' \
	$(SHELL) $(srcdir)/tests/tree/packages.sh
.PHONY: check-packages
