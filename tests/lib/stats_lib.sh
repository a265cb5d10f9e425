# stats_lib.sh - sourced by tests/stats/stats_*.test: a private run directory, a
# scratchd of the test's own, test hosts driven through a FIFO, and bounded
# waits (never a timed assertion: a wait only bounds how long a test hangs).

. "$SCRATCH_TOP_BUILDDIR/tests/lib/env.sh"

stats_setup() {
  scratch_test_tmp
  trap 'stats_cleanup; rm -rf "$T"' EXIT
  command -v jq >/dev/null 2>&1 || skip "jq is not installed"
  command -v curl >/dev/null 2>&1 || skip "curl is not installed"
  RUN=$T/run
  mkdir -m 0700 "$RUN" || fail "cannot make $RUN"
  SCRATCH_RUNTIME_DIR=$RUN
  export SCRATCH_RUNTIME_DIR
  unset XDG_RUNTIME_DIR
  SD=$top_builddir/stats/scratchd/scratchd
  SS="$top_builddir/stats/scratchstat/scratchstat --no-start"
  HOST=$top_builddir/tests/stats/host_stats
  HOST_PREFIX=
  TOOL=$top_builddir/tests/stats/host_stats_tool
  SOCK=$RUN/scratchd.sock
  DPID=
  HPIDS=
  NHOST=0
}

stats_cleanup() {
  for p in $HPIDS; do kill -9 "$p" 2>/dev/null; done
  test -n "$DPID" && kill -9 "$DPID" 2>/dev/null
  wait 2>/dev/null
}

# wait_for CMD...: retry CMD until it succeeds, at most about 20 s.
wait_for() {
  i=0
  while ! "$@" >/dev/null 2>&1; do
    i=$((i + 1))
    test $i -lt 400 || return 1
    sleep 0.05
  done
}

# until_true 'SHELL CODE': wait_for, with the code evaluated afresh each time.
until_true() {
  i=0
  while ! eval "$1" >/dev/null 2>&1; do
    i=$((i + 1))
    test $i -lt 400 || return 1
    sleep 0.05
  done
}

# q PATH: GET PATH from the daemon (fails on HTTP errors).
q() {
  curl -sf --unix-socket "$SOCK" "http://localhost$1"
}
# Every JSON check is `jq -en 'input | FILTER'`: jq 1.6's plain -e exits 0
# on empty input, so a failed request (curl -sf prints nothing) would pass.

daemon_start() {
  "$SD" --run-dir "$RUN" --interval 0.1 "$@" 2>>"$T/scratchd.err" &
  DPID=$!
  wait_for q /v1 || fail "scratchd did not come up: $(cat "$T/scratchd.err")"
}

daemon_stop() {
  kill -TERM "$DPID" || fail "scratchd is gone"
  wait "$DPID"
  rc=$?
  DPID=
  test $rc = 0 || fail "scratchd exited $rc on SIGTERM"
  test ! -e "$SOCK" || fail "scratchd left its socket behind"
}

# host_start N ARGS...: start host number N ($HOST_PREFIX, e.g. "env
# LD_PRELOAD=...", goes before it) (fd 7+N is its command pipe);
# sets HPID and HOUT, waits for "ready".
host_start() {
  n=$1
  shift
  mkfifo "$T/ctl.$n"
  HOUT=$T/host.$n
  $HOST_PREFIX "$HOST" "$@" <"$T/ctl.$n" >"$HOUT" 2>&1 &
  HPID=$!
  HPIDS="$HPIDS $HPID"
  eval "exec $((7 + n))>\"\$T/ctl.\$n\""
  wait_for grep -q '^ready' "$HOUT" || fail "host did not start: $(cat "$HOUT")"
}

# host_cmd N CMD: send CMD to host N and wait for its "ok".
host_cmd() {
  before=$(grep -c '^ok' "$T/host.$1")
  echo "$2" >&$((7 + $1))
  wait_for sh -c "test \$(grep -c '^ok' '$T/host.$1') -gt $before" || fail "host $1 ignored '$2'"
}

# host_stop N PID: tell host N to exit and reap it.
host_stop() {
  echo exit >&$((7 + $1))
  eval "exec $((7 + $1))>&-"
  wait "$2" || fail "host $1 exited $?"
}

# tid_of N WORKER: the tid host N reported for worker WORKER (or "main").
tid_of() {
  awk -v w="$2" '$1 == "tid" && $2 == w { print $3 }' "$T/host.$1"
}

class_of() {
  awk -v w="$2" '$1 == "tid" && $2 == w { print $4 }' "$T/host.$1"
}

# expect WHAT GOT WANT
expect() {
  test "$2" = "$3" || fail "$1: got '$2', expected '$3'"
}
