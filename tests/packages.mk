# The Debian packages (debian/): shipped in the release tarball, so that it
# builds them too.
EXTRA_DIST += debian/changelog debian/control debian/copyright debian/rules \
	debian/source/format debian/README.source debian/not-installed \
	debian/libscratch0.install debian/libscratch0.symbols debian/libscratch0.lintian-overrides \
	debian/libscratch-dev.install \
	debian/libscratch-preload.install debian/libscratch-preload.triggers \
	debian/libscratch-preload.lintian-overrides \
	debian/scratch-tools.install debian/scratch-tools.lintian-overrides
