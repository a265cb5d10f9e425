# What the test scripts share: tests/lib/env.sh (configure makes it from
# env.sh.in: where the build is and what it was built with), the shell
# libraries the scripts source, and the sanitizers' and valgrind's
# suppressions.
EXTRA_DIST += tests/lib/env.sh.in tests/lib/shim_common.sh tests/lib/stats_lib.sh \
	tests/lib/locality_lib.sh tests/lib/guest.sh tests/lib/tsan.supp tests/lib/valgrind.supp
DISTCLEANFILES += tests/lib/env.sh

# guest.sh keeps the guest's kernel in the build tree (tests/lib/guest/),
# fetched once: make clean leaves it, make distclean removes it (distcheck
# finds any file a distclean leaves).
distclean-local:
	-rm -rf tests/lib/guest
