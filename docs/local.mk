# docs/: what the README points to beyond the man pages, shipped as it is:
# the pools' policies and why, dated measurements, the audit's method, fleet use.
EXTRA_DIST += docs/fleet.md
EXTRA_DIST += docs/audit.md
EXTRA_DIST += docs/design.md docs/performance.md
