# debian/: the Debian packaging ships in the release tarball, so that an
# unpacked tarball builds the packages too (dpkg-buildpackage -us -uc -b);
# tests/tree/packages.sh (make check-packages) builds them from it.
EXTRA_DIST += debian/changelog debian/control debian/copyright debian/rules \
	debian/source/format debian/README.source debian/not-installed debian/local.mk \
	debian/libscratch0.install debian/libscratch0.symbols debian/libscratch0.lintian-overrides \
	debian/libscratch-dev.install \
	debian/libscratch-preload.install debian/libscratch-preload.triggers \
	debian/libscratch-preload.lintian-overrides \
	debian/libscratch-preload-jemalloc.install debian/libscratch-preload-jemalloc.triggers \
	debian/libscratch-preload-jemalloc.lintian-overrides \
	debian/libscratch-preload-tcmalloc.install debian/libscratch-preload-tcmalloc.triggers \
	debian/libscratch-preload-tcmalloc.lintian-overrides \
	debian/libscratch-preload-mimalloc.install debian/libscratch-preload-mimalloc.triggers \
	debian/libscratch-preload-mimalloc.lintian-overrides \
	debian/scratch-tools.install debian/scratch-tools.lintian-overrides
