# locality_lib.sh - shell helpers for the locality cases, sourced by the
# scripts that run inside the two-node guest (busybox sh) and on this host
# (tests/locality/guest_locality.test, tests/locality/locality_host.test):
# plain POSIX sh.
#
#   check DESC CONDITION...   run the condition; print "ok DESC" or
#                             "not ok DESC" and remember the failure
#   waitfor FILE PATTERN      wait (at most 30 s) until FILE holds PATTERN
#   kv KEY LINE               the value of KEY=value in LINE
#   line PATTERN FILE         the first line of FILE matching PATTERN
failures=0
check() {
  _desc=$1
  shift
  if "$@"; then
    echo "ok $_desc"
  else
    echo "not ok $_desc"
    failures=$((failures + 1))
  fi
}
waitfor() {
  i=0
  while ! grep -q "$2" "$1" 2>/dev/null; do
    i=$((i + 1))
    if [ $i -gt 300 ]; then
      echo "timeout: no '$2' in $1"
      return 1
    fi
    sleep 0.1
  done
}
kv() { echo "$2" | sed -n "s/^\(.* \)*$1=\([^ ]*\).*/\2/p"; }
line() { grep -m 1 "$1" "$2"; }
# eq GOT WANT: true when GOT is non-empty and equal to WANT; otherwise
# prints both, so that a failing check in the guest says what it saw.
eq() {
  [ -n "$1" ] && [ "$1" = "$2" ] && return 0
  printf '  got:  %s\n  want: %s\n' "$1" "$2"
  return 1
}
