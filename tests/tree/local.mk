# Checks of the whole tree: the exported symbols (exports.test, against the
# two .expected lists), the man pages' lint, formatting, the unit suites
# under valgrind, the release tarball (dist.test), the debug build under
# ASan+UBSan, and the stats segment's header standing alone.
TREE_TESTS = tests/tree/exports.test tests/tree/man.test tests/tree/format.test \
	tests/tree/valgrind.test tests/tree/dist.test tests/tree/debug_asan.test \
	tests/tree/segment_header.test
TESTS += $(TREE_TESTS)
EXTRA_DIST += $(TREE_TESTS) tests/tree/exports.expected tests/tree/exports-preload.expected
