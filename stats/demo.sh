#!/bin/sh
# demo.sh - `make demo`: an unmodified multi-threaded decode loop (bench/decode,
# plain malloc/free) runs under the preload shim while a private scratchd
# watches it; scratchstat shows the process list, the per-thread table, the
# first growth-trace lines with call sites and a few vmstat-like samples.
# Everything it starts is stopped, and its run directory removed, on exit.
top=${SCRATCH_TOP_BUILDDIR:?}
shim=$top/preload/.libs/libscratch-preload.so
host=$top/bench/decode
for f in "$shim" "$host" "$top/stats/scratchd/scratchd" "$top/stats/scratchstat/scratchstat"; do
  test -x "$f" || test -f "$f" || { echo "demo: $f is not built" >&2; exit 1; }
done
run=$(mktemp -d "${TMPDIR:-/tmp}/scratch-demo.XXXXXX") || exit 1
chmod 0700 "$run"
dpid=
hpid=
cleanup() {
  test -n "$hpid" && kill "$hpid" 2>/dev/null
  test -n "$dpid" && kill -TERM "$dpid" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$run"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
ss() { "$top/stats/scratchstat/scratchstat" --no-start --run-dir "$run" "$@"; }
retry() { # up to ~20 s
  i=0
  while ! "$@" >/dev/null 2>&1; do
    i=$((i + 1)); test $i -lt 200 || return 1; sleep 0.1
  done
}

"$top/stats/scratchd/scratchd" --run-dir "$run" --interval 0.5 2>"$run/scratchd.log" &
dpid=$!
retry ss || { echo "demo: scratchd did not start:"; cat "$run/scratchd.log"; exit 1; } >&2

echo "\$ SCRATCH_RUNTIME_DIR=$run LD_PRELOAD=libscratch-preload.so bench/decode --threads 2 --tokens 48 &"
SCRATCH_RUNTIME_DIR=$run LD_PRELOAD=$shim "$host" --threads 2 --tokens 48 >"$run/decode.out" 2>&1 &
hpid=$!
# wait until the three threads have made their first rounds
retry sh -c "'$top/stats/scratchstat/scratchstat' --no-start --run-dir '$run' --json $hpid | grep -q '\"allocs\": [1-9][0-9][0-9]'" ||
  { echo "demo: scratchd never saw the decode loop" >&2; exit 1; }
echo
echo "\$ scratchstat"
ss
echo
echo "\$ scratchstat $hpid"
ss "$hpid"
echo
echo "\$ scratchstat trace $hpid | head"
ss trace "$hpid" | head -n 10
echo
echo "\$ scratchstat $hpid 1 3"
ss "$hpid" 1 3
wait "$hpid"
rc=$?
hpid=
echo
echo "\$ bench/decode's own report"
cat "$run/decode.out"
retry sh -c "'$top/stats/scratchstat/scratchstat' --no-start --run-dir '$run' | grep -q exited"
echo
echo "\$ scratchstat      # after the decode loop exited"
ss
exit $rc
