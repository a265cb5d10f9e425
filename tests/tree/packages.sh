#!/bin/sh
# make check-packages: the Debian packages (debian/) as a user gets them.
#
#  1. Builds them with `dpkg-buildpackage -us -uc -b` from the release tree
#     (make distdir: the files the tarball holds), in a private directory,
#     and checks the build log with blhc (every hardening flag reached every
#     compile and link). With SCRATCH_DEBS=DIR it takes the .debs already
#     built in DIR instead (a CI artifact, or the README's own build).
#  2. lintian, as the distribution ships it, reports no error and no warning.
#  3. Unpacks every package with dpkg -x into a private root (nothing is
#     installed on the system), and there:
#     - the files are where Debian wants them: the shims in the multiarch
#       library directory, the units in /usr/lib/systemd/user, man pages;
#       scratchd and scratchstat --version give the package's version and
#       every backend; each backend's shim is a package of its own that
#       depends on that allocator's library;
#     - an unmodified program (sort) gives the same output under each shim,
#       loaded by name (LD_PRELOAD=libscratch-preload.so) from the root;
#     - the packaged scratchstat starts the packaged scratchd (found from
#       its own directory, ../sbin) and shows a sort that holds a pool block
#       under each shim, mapped from the root;
#     - pkg-config --cflags --libs libscratch, pointed at the root, compiles
#       and links the examples (and libscratch.a links statically); they run.
#
# It takes 6 to 9 minutes on two CPUs (the package build runs the unit
# suites and the shim and stats tests again; with DEB_BUILD_OPTIONS=nocheck
# about 1.5), so it is a target of its own, not part of make check (CI's
# make check alone takes most of its budget): tests/tree/builddeps.test and
# debian_install.test are the cheap part that make check runs. DEB_BUILD_OPTIONS is
# passed on (default parallel=2; add nocheck to skip the build's tests).
. "$SCRATCH_TOP_BUILDDIR/tests/lib/env.sh"

say() { echo "check-packages: $*"; }
die() {
  echo "check-packages: FAIL: $*" >&2
  exit 1
}

# What the check needs besides the build dependencies (debian/control),
# which dpkg-checkbuilddeps reports.
need=
for tool in dpkg-buildpackage:dpkg-dev dh:debhelper lintian:lintian blhc:blhc \
  pkg-config:pkg-config; do
  command -v "${tool%%:*}" >/dev/null 2>&1 || need="$need ${tool#*:}"
done
if [ -n "${SCRATCH_DEBS:-}" ]; then need=$(echo "$need" | sed 's/ debhelper//; s/ blhc//'); fi
[ -z "$need" ] || die "missing tools; install them with: apt-get install$need"
[ "$SANITIZER" = none ] || die "this tree is configured with --enable-sanitizers=$SANITIZER; use a plain one"

scratch_test_tmp
SORTP=
# The scratchd processes run from the private root: started here (by the
# packaged scratchstat), never anyone else's.
root_daemons() {
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/exe" 2>/dev/null)" = "$ROOT/usr/sbin/scratchd" ] && echo "${p#/proc/}"
  done
}
cleanup() {
  [ -z "$SORTP" ] || kill "$SORTP" 2>/dev/null
  [ -z "${ROOT:-}" ] || for p in $(root_daemons); do kill "$p"; done
  rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

version=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"$/\1/p' "$top_builddir/config.h")
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
triplet=$(dpkg-architecture -qDEB_HOST_MULTIARCH)

# 1. Build.
if [ -n "${SCRATCH_DEBS:-}" ]; then
  DEBS=$(cd "$SCRATCH_DEBS" && pwd) || die "no directory $SCRATCH_DEBS"
  say "testing the packages in $DEBS"
else
  DEBS=$T/build
  src=$DEBS/scratch-$version
  mkdir "$DEBS" || exit 99
  make -s -C "$top_builddir" distdir distdir="$src" >"$T/distdir.log" 2>&1 ||
    { cat "$T/distdir.log"; die "make distdir"; }
  (cd "$src" && dpkg-checkbuilddeps) || die "build dependencies missing (above)"
  say "dpkg-buildpackage -us -uc -b (several minutes; log: $T/build/build.log while it runs)"
  start=$(date +%s)
  (cd "$src" && DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:-parallel=2}" \
    dpkg-buildpackage -us -uc -b) >"$DEBS/build.log" 2>&1 ||
    { tail -n 60 "$DEBS/build.log"; die "dpkg-buildpackage"; }
  say "built in $(($(date +%s) - start)) s"
  # Debian's gcc builds PIE by default: --debian stops blhc asking for -fPIE.
  blhc --debian --all "$DEBS/build.log" >"$T/blhc.out" 2>&1 ||
    { cat "$T/blhc.out"; die "blhc: hardening flags missing from the build"; }
  say "blhc: every compile and link had the hardening flags"
fi

debs=
for d in "$DEBS"/*_"$version"_*.deb; do
  case $d in *-dbgsym_*) ;; *) [ -f "$d" ] && debs="$debs $d" ;; esac
done
[ -n "$debs" ] || die "no .deb of version $version in $DEBS"
BACKENDS="jemalloc tcmalloc mimalloc"
for p in libscratch0 libscratch-dev libscratch-preload scratch-tools; do
  test -f "$DEBS/${p}_${version}_$arch.deb" || die "package $p was not built"
done
# A package per backend shim, as Debian ships each allocator: it pulls in
# that allocator's runtime library and the glibc shim's package (the manual
# page, libscratch0 at this very version), nothing else of scratch.
for b in $BACKENDS; do
  deb=$DEBS/libscratch-preload-${b}_${version}_$arch.deb
  test -f "$deb" || die "package libscratch-preload-$b was not built"
  dep=$(dpkg-deb -f "$deb" Depends)
  case $b in jemalloc) lib=libjemalloc2 ;; tcmalloc) lib=libtcmalloc-minimal4 ;; mimalloc) lib=libmimalloc2.0 ;; esac
  case ", $dep," in *", $lib "* | *", $lib,"*) ;; *) die "libscratch-preload-$b does not depend on $lib: $dep" ;; esac
  case ", $dep," in *", libscratch-preload (= $version),"*) ;; *) die "libscratch-preload-$b does not depend on libscratch-preload (= $version): $dep" ;; esac
  dpkg-deb -c "$deb" >"$T/contents" || die "dpkg-deb -c $deb"
  grep -q "/libscratch-preload-$b.so\$" "$T/contents" || die "libscratch-preload-$b holds no shim"
done

# 2. lintian: errors and warnings fail (debian/*.lintian-overrides say why
# each override stands); infos are printed.
changes=$DEBS/scratch_${version}_$arch.changes
if [ -f "$changes" ]; then lint=$changes; else lint=$debs; fi
# shellcheck disable=SC2086
lintian --fail-on error,warning --display-info $lint >"$T/lintian.out" 2>&1
rc=$?
grep -v 'running with root privileges' "$T/lintian.out"
[ $rc = 0 ] || die "lintian reports errors or warnings (above)"
say "lintian: no error, no warning"

# 3. A private root.
ROOT=$T/root
LIB=$ROOT/usr/lib/$triplet
for d in $debs; do dpkg -x "$d" "$ROOT" || die "dpkg -x $d"; done
for f in usr/lib/$triplet/libscratch-preload.so usr/lib/$triplet/libscratch-preload-jemalloc.so \
  usr/lib/$triplet/libscratch-preload-tcmalloc.so usr/lib/$triplet/libscratch-preload-mimalloc.so \
  usr/lib/$triplet/libscratch.so.0 usr/lib/$triplet/libscratch.so usr/lib/$triplet/libscratch.a \
  usr/lib/$triplet/pkgconfig/libscratch.pc usr/include/scratch.h \
  usr/bin/scratchstat usr/sbin/scratchd \
  usr/lib/systemd/user/scratchd.service usr/lib/systemd/user/scratchd.socket \
  usr/share/man/man3/libscratch.3.gz usr/share/man/man7/libscratch-preload.7.gz \
  usr/share/man/man1/scratchstat.1.gz usr/share/man/man8/scratchd.8.gz; do
  test -e "$ROOT/$f" || die "/$f is in no package"
done
exec_start=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$ROOT/usr/lib/systemd/user/scratchd.service")
test -x "$ROOT$exec_start" || die "scratchd.service starts $exec_start, which no package holds"
# One version number: the programs say the package's, and every backend.
for prog in usr/bin/scratchstat usr/sbin/scratchd; do
  v=$("$ROOT/$prog" --version) || die "/$prog --version"
  case "$v" in
    "${prog##*/} $version (segment format "*", backends glibc $BACKENDS)") ;;
    *) die "/$prog --version says '$v', the package is $version with the backends glibc $BACKENDS" ;;
  esac
done
say "files in place ($(echo "$debs" | wc -w) packages unpacked), scratchd and scratchstat at $version"

# An unmodified program under each shim, loaded by name from the root.
SHIMS="libscratch-preload.so libscratch-preload-jemalloc.so libscratch-preload-tcmalloc.so libscratch-preload-mimalloc.so"
RUN=$T/run
mkdir -m 0700 "$RUN" || exit 99
SCRATCH_RUNTIME_DIR=$RUN
export SCRATCH_RUNTIME_DIR
unset XDG_RUNTIME_DIR SCRATCH_CONF LD_PRELOAD SCRATCHD
LC_ALL=C
export LC_ALL
awk 'BEGIN { srand(11); while (n < 20971520) {
	l = sprintf("%08x %d", int(rand() * 4294967295), int(rand() * 1000000));
	print l; n += length(l) + 1 } }' >"$T/input" || exit 99
sort -S 64M --parallel=2 -T "$T" "$T/input" >"$T/sorted.none" || die "sort without a shim"
for so in $SHIMS; do
  LD_LIBRARY_PATH=$LIB LD_PRELOAD=$so sort -S 64M --parallel=2 -T "$T" "$T/input" \
    >"$T/sorted.$so" 2>"$T/sort.err" || { cat "$T/sort.err"; die "sort under $so"; }
  test ! -s "$T/sort.err" || { cat "$T/sort.err"; die "sort under $so wrote on stderr"; }
  cmp -s "$T/sorted.none" "$T/sorted.$so" || die "sort's output differs under $so"
done
say "sort gives the same 20 MiB output under each shim"

# wait_until 'SHELL CODE': retry for at most about 20 s.
wait_until() {
  i=0
  while ! eval "$1" >/dev/null 2>&1; do
    i=$((i + 1))
    [ $i -lt 200 ] || return 1
    sleep 0.1
  done
}
SS=$ROOT/usr/bin/scratchstat
for so in $SHIMS; do
  # sort allocates its 16 MiB buffer and then waits for input on a FIFO,
  # which fd 7 keeps open (closed in every other child, or sort never ends).
  rm -f "$T/fifo"
  mkfifo "$T/fifo" || exit 99
  LD_LIBRARY_PATH=$LIB LD_PRELOAD=$so sort -S 16M <"$T/fifo" >"$T/live.out" 2>"$T/live.err" &
  SORTP=$!
  exec 7>"$T/fifo"
  printf 'b\na\n' >&7
  # The first query starts the daemon (scratchstat's own way).
  wait_until "'$SS' --json $SORTP 7>&- | jq -en 'input | .state == \"live\" and .allocs >= 1 and .growths >= 1'" ||
    die "scratchstat does not show sort under $so: $("$SS" --json $SORTP 7>&- 2>&1 | head -c 2000)"
  if [ -z "${DPIDS:-}" ]; then
    DPIDS=$(root_daemons)
    [ -n "$DPIDS" ] || die "scratchstat got answers, but from no scratchd of the root"
    say "scratchstat started the packaged scratchd (pid $DPIDS)"
  fi
  "$SS" --json 7>&- | jq -en "input | [.processes[] | select(.pid == $SORTP and .state == \"live\")] | length == 1" >/dev/null ||
    die "sort is not in scratchstat's list under $so"
  "$SS" $SORTP 7>&- >"$T/table" || die "scratchstat $SORTP"
  grep -q "^ *$SORTP  *sort " "$T/table" || { cat "$T/table"; die "no row for sort in scratchstat's table"; }
  grep -q " $LIB/$so\$" "/proc/$SORTP/maps" || die "$so is not mapped from the root in sort"
  grep -q " $LIB/libscratch.so.0.0.0\$" "/proc/$SORTP/maps" || die "libscratch.so.0 is not mapped from the root in sort"
  exec 7>&-
  wait $SORTP || { cat "$T/live.err"; die "sort under $so exited $?"; }
  SORTP=
  test "$(cat "$T/live.out")" = "$(printf 'a\nb')" || die "sort under $so printed: $(cat "$T/live.out")"
  say "scratchstat shows sort's pool under $so:"
  sed 's/^/    /' "$T/table"
done
for p in $DPIDS; do kill -TERM "$p"; done
wait_until "[ -z \"\$(root_daemons)\" ]" || die "scratchd did not exit on SIGTERM"

# The -dev package: pkg-config, pointed at the root, builds the examples.
PKG_CONFIG_LIBDIR=$LIB/pkgconfig
PKG_CONFIG_SYSROOT_DIR=$ROOT
PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1
PKG_CONFIG_ALLOW_SYSTEM_LIBS=1
export PKG_CONFIG_LIBDIR PKG_CONFIG_SYSROOT_DIR PKG_CONFIG_ALLOW_SYSTEM_CFLAGS PKG_CONFIG_ALLOW_SYSTEM_LIBS
flags=$(pkg-config --cflags --libs libscratch) || die "pkg-config --cflags --libs libscratch"
for want in "-I$ROOT/usr/include" "-L$LIB" -lscratch; do
  case " $flags " in
    *" $want "*) ;;
    *) die "pkg-config does not give $want: $flags" ;;
  esac
done
[ "$(pkg-config --modversion libscratch)" = "$version" ] || die "libscratch.pc is not version $version"
for ex in arena workspace workers; do
  # shellcheck disable=SC2086
  $CC -o "$T/$ex" "$top_srcdir/examples/$ex.c" $flags -pthread 2>"$T/cc.err" ||
    { cat "$T/cc.err"; die "examples/$ex.c does not build with: $flags"; }
  LD_LIBRARY_PATH=$LIB ldd "$T/$ex" | grep -q "libscratch.so.0 => $LIB/libscratch.so.0 " ||
    die "$ex does not load libscratch.so.0 from the root"
  LD_LIBRARY_PATH=$LIB "$T/$ex" >"$T/$ex.out" 2>&1 || { cat "$T/$ex.out"; die "examples/$ex.c exited $?"; }
done
# shellcheck disable=SC2046
$CC -o "$T/arena-static" "$top_srcdir/examples/arena.c" $(pkg-config --cflags libscratch) \
  "$LIB/libscratch.a" $(pkg-config --static --libs-only-other libscratch) 2>"$T/cc.err" ||
  { cat "$T/cc.err"; die "examples/arena.c does not link with libscratch.a"; }
"$T/arena-static" >"$T/arena-static.out" 2>&1 || { cat "$T/arena-static.out"; die "the static arena example exited $?"; }
say "pkg-config --cflags --libs libscratch: $flags"
say "examples arena, workspace and workers build against the root and run (arena with libscratch.a too)"
say "PASS"
