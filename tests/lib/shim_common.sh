# shim_common.sh - sourced by the tests/shim/shim_*.test scripts.
#
# Finds both shims and the test hosts, skips under sanitizers (a sanitizer
# interposes malloc itself), makes a private temporary directory $T that
# also holds the run directory (stats segments stay out of the user's), and
# defines shim_compare.
. "$SCRATCH_TOP_BUILDDIR/tests/lib/env.sh"

test "$SANITIZER" = none || skip "the shim cannot be preloaded under the $SANITIZER sanitizer"
SHIM_GLIBC=$top_builddir/preload/.libs/libscratch-preload.so
SHIM_JEMALLOC=$top_builddir/preload/.libs/libscratch-preload-jemalloc.so
SHIMS="$SHIM_GLIBC $SHIM_JEMALLOC"
for so in $SHIMS; do
  test -f "$so" || fail "$so is not built"
done
# The tcmalloc and mimalloc shims are built where their development files
# are; the tests that check what a host observes (semantics, C++, sort,
# git, torch) run under them too with shims_all, the longer ones stay on the
# two above.
SHIMS_MORE=
for so in "$top_builddir/preload/.libs/libscratch-preload-tcmalloc.so" \
  "$top_builddir/preload/.libs/libscratch-preload-mimalloc.so"; do
  if test -f "$so"; then
    SHIMS_MORE="$SHIMS_MORE $so"
  else
    echo "note: $so is not built (configure found no development files), not tested"
  fi
done
shims_all() {
  SHIMS="$SHIM_GLIBC $SHIM_JEMALLOC$SHIMS_MORE"
}
HOSTS=$top_builddir/tests/shim
PLUGIN=$top_builddir/tests/shim/.libs/libshimplug.so
SHIMCHECK=$top_builddir/tests/shim/.libs/libshimcheck.so

scratch_test_tmp
SCRATCH_RUNTIME_DIR=$T/run
mkdir -m 700 "$SCRATCH_RUNTIME_DIR" || exit 99
export SCRATCH_RUNTIME_DIR
unset SCRATCH_CONF LD_PRELOAD

# The shim's name for messages: its backend.
shim_name() {
  case $1 in
    *-jemalloc.so) echo jemalloc ;;
    *-tcmalloc.so) echo tcmalloc ;;
    *-mimalloc.so) echo mimalloc ;;
    *) echo glibc ;;
  esac
}

# shim_compare NAME COMMAND...
#   Runs COMMAND without the shim, then under each shim (LD_PRELOAD, with
#   $SHIM_EXTRA_PRELOAD after it when set). Fails unless stdout and the exit
#   status are the same every time, and the status is $SHIM_EXPECT (default
#   0; "any" accepts whatever the run without the shim gave).
shim_compare() {
  name=$1; shift
  "$@" >"$T/$name.none.out" 2>"$T/$name.none.err"
  want=$?
  if test "${SHIM_EXPECT:-0}" != any && test "$want" != "${SHIM_EXPECT:-0}"; then
    cat "$T/$name.none.err" >&2
    fail "$name: exit status $want without the shim (expected ${SHIM_EXPECT:-0})"
  fi
  for so in $SHIMS; do
    b=$(shim_name "$so")
    LD_PRELOAD="$so${SHIM_EXTRA_PRELOAD:+:$SHIM_EXTRA_PRELOAD}" "$@" \
      >"$T/$name.$b.out" 2>"$T/$name.$b.err"
    got=$?
    if test "$got" != "$want"; then
      cat "$T/$name.$b.err" >&2
      fail "$name: exit status $got under the $b shim, $want without it"
    fi
    if ! cmp -s "$T/$name.none.out" "$T/$name.$b.out"; then
      diff -u "$T/$name.none.out" "$T/$name.$b.out" | head -40 >&2
      fail "$name: output differs under the $b shim"
    fi
    echo "ok: $name ($b)"
  done
}

# shim_pools_used FILE [hits]: the shimcheck lines in FILE show that the
# pools served allocations (allocs > 0) in at least one process, and with
# "hits" that some came from a thread's cache (hits > 0).
shim_pools_used() {
  test -s "$1" || fail "no pool statistics were written to $1"
  if test "${2-}" = hits; then
    awk '$2 > 0 && $3 > 0 { used = 1 } END { exit !used }' "$1" ||
      fail "the pools were not used, or never from a cache: $(cat "$1")"
  else
    awk '$2 > 0 { used = 1 } END { exit !used }' "$1" ||
      fail "the pools were not used: $(cat "$1")"
  fi
}
