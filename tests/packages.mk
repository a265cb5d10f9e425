# The Debian packages (debian/): shipped in the release tarball, so that it
# builds them too, and `make check-packages` (tests/packages.sh), which
# builds them from the release tree with dpkg-buildpackage, runs lintian and
# blhc, and checks the install path from a private root. It takes several
# minutes, so it is not part of `make check`.
EXTRA_DIST += debian/changelog debian/control debian/copyright debian/rules \
	debian/source/format debian/README.source debian/not-installed \
	debian/libscratch0.install debian/libscratch0.symbols debian/libscratch0.lintian-overrides \
	debian/libscratch-dev.install \
	debian/libscratch-preload.install debian/libscratch-preload.triggers \
	debian/libscratch-preload.lintian-overrides \
	debian/scratch-tools.install debian/scratch-tools.lintian-overrides \
	tests/packages.sh

check-packages:
	SCRATCH_TOP_SRCDIR='$(abs_top_srcdir)' SCRATCH_TOP_BUILDDIR='$(abs_top_builddir)' \
	$(SHELL) $(srcdir)/tests/packages.sh
.PHONY: check-packages
