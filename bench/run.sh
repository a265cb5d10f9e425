#!/bin/sh
# bench/run.sh - the `make bench` driver.
#
# Runs every benchmark the project sets a target for, in one run, and prints
# side-by-side tables of medians with each figure beside its target:
#   1. the decode loop (bench/decode) under glibc, jemalloc (stock and with
#      the PyTorch guides' tuning), tcmalloc, mimalloc, both shims and the
#      preallocated floor, with workers allocating and with the main thread
#      allocating, on fixed sizes and (1v) on sizes that vary token to token
#      (--vary), with what part of each whole-run gap is first touch;
#   1c. a large-block churn host (bench/churn) under each shim against its
#      backend alone;
#   1r. a buffer grown by realloc (bench/grow) under each shim against its
#      backend alone and the other allocators;
#   2. stats and tracing on versus off on the decode loop under the shim,
#      timed and counted (callgrind);
#   2a. the locality audit's cost: the decode loop under scratchstat audit;
#   3. small-allocation pass-through (bench/small) under each shim against
#      its backend alone and a bare forwarder in front of it (bench/forward.c);
#   4. a pooled malloc+free hit through each shim (bench/pair): ns per pair,
#      and instructions per pair counted with callgrind;
#   5. every program in $BENCH_PROGRAMS, each printing its own table.
# Runs of one table are interleaved (A B C A B C ...) and the median of the
# rounds is reported (the best round for the nanosecond microbenchmarks):
# the machine is shared and noisy.
#
# Environment: SCRATCH_TOP_BUILDDIR (set by make), BENCH_PROGRAMS, VALGRIND,
# PKG_CONFIG (from configure); BENCH_ROUNDS (default 3), BENCH_TOKENS
# (default 32), BENCH_VARY_TOKENS (default 32) and BENCH_CHURN_STEPS
# (default 2000) to trade time for precision; BENCH_ONLY to run some tables.
set -u

top=${SCRATCH_TOP_BUILDDIR:?run me through make bench}
rounds=${BENCH_ROUNDS:-3}
tokens=${BENCH_TOKENS:-32}
layers=4
warmup=4
frounds=$((rounds + 2))      # decode loop: floor and shims
srounds=$((rounds * 2 + 1))  # pooled pairs
mrounds=$((rounds * 5))      # small allocations: a ratio of 10 ns figures needs many rounds
orounds=$((rounds * 8))      # stats on versus off: an even number, in pairs of rounds;
                             # a whole run varies by about 4% (warm-up), the target is 2%
pair_size=262144
dargs="--tokens $tokens --layers $layers --warmup $warmup"
# The varying-size loop: its steady state is the second half of the run
# (late tokens: a size-class allocator keeps meeting new sizes for a while).
# 2 layers a token keep a run of the slowest allocator near 4 s.
vtokens=${BENCH_VARY_TOKENS:-32}
vlayers=2
vwarmup=$((vtokens / 2))
vargs="--vary --tokens $vtokens --layers $vlayers --warmup $vwarmup"
churn_steps=${BENCH_CHURN_STEPS:-2000}
# jemalloc as the PyTorch CPU tuning guides set it: the Intel Extension for
# PyTorch guide (which PyTorch's own guide points to) gives these decay times
# of 9*10^9 ms; others give -1 (never purge). They differ: with the former the
# background threads still purge (strace shows their madvise calls, and the
# decode loop faults most of its working set every token), with -1 nothing is
# purged. Both are measured.
tuned='oversize_threshold:1,background_thread:true,metadata_thp:auto,dirty_decay_ms:9000000000,muzzy_decay_ms:9000000000'
tuned_never='oversize_threshold:1,background_thread:true,metadata_thp:auto,dirty_decay_ms:-1,muzzy_decay_ms:-1'

T=$(mktemp -d "${TMPDIR:-/tmp}/scratch-bench.XXXXXX") || exit 1
# Shim runs publish their stats segments in a private run directory, so the
# benchmark neither needs nor disturbs a running scratchd. On tmpfs, as the
# default run directories are (/dev/shm, $XDG_RUNTIME_DIR): a segment on a
# disk file system is written back, and a forked child's new segment file
# there took 7 ms more than on tmpfs (table 1s).
RUN=$(mktemp -d /dev/shm/scratch-bench.XXXXXX 2>/dev/null) || RUN=$T/run
trap 'rm -rf "$T" "$RUN"' EXIT
trap 'exit 130' INT TERM
[ -d "$RUN" ] || mkdir -m 700 "$RUN" || exit 1
RES=$T/results
: >"$RES"
start=$(date +%s)

# find_lib SONAME: the path of an installed shared library, or nothing.
find_lib() {
	p=$({ ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null; } |
		awk -v n="$1" '$1 == n { print $NF; exit }')
	if [ -z "$p" ] && [ -n "${PKG_CONFIG:-}" ]; then
		for pc in jemalloc libtcmalloc_minimal mimalloc; do
			d=$($PKG_CONFIG --variable=libdir "$pc" 2>/dev/null) || continue
			if [ -n "$d" ] && [ -e "$d/$1" ]; then
				p=$d/$1
				break
			fi
		done
	fi
	echo "$p"
}

je=$(find_lib libjemalloc.so.2)
tc=$(find_lib libtcmalloc_minimal.so.4)
mi=$(find_lib libmimalloc.so.2)
shim_glibc=$top/preload/.libs/libscratch-preload.so
shim_je=$top/preload/.libs/libscratch-preload-jemalloc.so
forward=$top/bench/.libs/libforward.so
forward_je=$top/bench/.libs/libforward-jemalloc.so
scratchstat=$top/stats/scratchstat/scratchstat

# cfg_env CFG: the environment assignments of one configuration.
cfg_env() {
	case $1 in
	jemalloc) echo "LD_PRELOAD=$je" ;;
	jemalloc-tuned) echo "LD_PRELOAD=$je MALLOC_CONF=$tuned" ;;
	jemalloc-never) echo "LD_PRELOAD=$je MALLOC_CONF=$tuned_never" ;;
	tcmalloc) echo "LD_PRELOAD=$tc" ;;
	mimalloc) echo "LD_PRELOAD=$mi" ;;
	shim-glibc) echo "LD_PRELOAD=$shim_glibc SCRATCH_RUNTIME_DIR=$RUN" ;;
	shim-glibc-nostats)
		echo "LD_PRELOAD=$shim_glibc SCRATCH_RUNTIME_DIR=$RUN SCRATCH_CONF=stats:false,trace:false"
		;;
	shim-glibc-thp) echo "LD_PRELOAD=$shim_glibc SCRATCH_RUNTIME_DIR=$RUN SCRATCH_CONF=thp:true" ;;
	shim-jemalloc) echo "LD_PRELOAD=$shim_je SCRATCH_RUNTIME_DIR=$RUN" ;;
	forward) echo "LD_PRELOAD=$forward" ;;
	forward-jemalloc) echo "LD_PRELOAD=$forward_je:$je" ;;
	shim-glibc-audit) echo "SCRATCH_RUNTIME_DIR=$RUN" ;; # the audit preloads the shim
	esac
}

# cfg_wrap CFG: the command a configuration runs the program under, if any.
cfg_wrap() {
	case $1 in
	shim-glibc-audit) echo "$scratchstat audit --json --preload $shim_glibc --" ;;
	esac
}

# cfg_missing CFG: why CFG cannot run here, or nothing when it can.
cfg_missing() {
	case $1 in
	jemalloc*) [ -n "$je" ] || echo "not installed" ;;
	tcmalloc) [ -n "$tc" ] || echo "not installed" ;;
	mimalloc) [ -n "$mi" ] || echo "not installed" ;;
	shim-glibc-audit)
		if [ ! -e "$shim_glibc" ] || [ ! -x "$scratchstat" ]; then echo "not built"; fi
		;;
	shim-glibc*) [ -e "$shim_glibc" ] || echo "not built" ;;
	shim-jemalloc) [ -e "$shim_je" ] || echo "not built" ;;
	forward) [ -e "$forward" ] || echo "not built" ;;
	forward-jemalloc)
		if [ -z "$je" ]; then echo "jemalloc not installed"; elif [ ! -e "$forward_je" ]; then echo "not built"; fi
		;;
	esac
}

# run TABLE CFG PROGRAM ARGS...: run one measurement and append its
# key=value figures to $RES as "TABLE CFG KEY VALUE" lines.
run() {
	table=$1
	cfg=$2
	prog=$3
	shift 3
	why=$(cfg_missing "$cfg")
	if [ -n "$why" ]; then
		echo "$table $cfg missing $why" >>"$RES"
		return
	fi
	# shellcheck disable=SC2046 # the assignments are meant to split
	# shellcheck disable=SC2046 # and so is the wrapper
	if out=$(env -u LD_PRELOAD -u MALLOC_CONF -u SCRATCH_CONF $(cfg_env "$cfg") \
		$(cfg_wrap "$cfg") "$top/bench/$prog" "$@" 2>"$T/err"); then
		echo "$out" | awk -v t="$table" -v c="$cfg" -v tag="$prog" '
			$1 == tag { for (i = 2; i <= NF; i++) { k = $i; sub(/=.*/, "", k)
				v = $i; sub(/^[^=]*=/, "", v); print t, c, k, v } }' >>"$RES"
	else
		echo "$table $cfg failed exit status $?: $(head -c 200 "$T/err" | head -n 1)" >>"$RES"
	fi
}

progress() {
	printf '%s\n' "bench: $*" >&2
}

# The report: one awk program holding the median and table helpers, then
# the table named by its first argument.
report() {
	awk -v which="$1" -v arg="${2:-}" '
	function median(t, c, k,    n, i, j, x, a, s) {
		n = split(vals[t, c, k], a, " ")
		if (n == 0 || vals[t, c, k] == "")
			return ""
		for (i = 2; i <= n; i++) {
			x = a[i] + 0
			for (j = i - 1; j >= 1 && a[j] + 0 > x; j--)
				a[j + 1] = a[j]
			a[j + 1] = x
		}
		if (n % 2)
			return a[(n + 1) / 2] + 0
		return (a[n / 2] + a[n / 2 + 1]) / 2
	}
	# best(t, c, k): the smallest figure over the rounds. For the
	# nanosecond microbenchmarks: noise (other processes, a stolen vCPU) only
	# ever adds time, so the best round is the closest to the real cost.
	function best(t, c, k,    n, a, i, m) {
		n = split(vals[t, c, k], a, " ")
		if (n == 0)
			return ""
		m = a[1] + 0
		for (i = 2; i <= n; i++)
			if (a[i] + 0 < m)
				m = a[i] + 0
		return m
	}
	# rmedian(t, c1, c2, k): the median over rounds of the figure of c1 divided by
	# that of c2 in the same round. Runs of one round are close in time, so
	# their ratio drifts less with the load of the machine than a ratio of medians.
	function rmedian(t, c1, c2, k,    n1, n2, a1, a2, i, r) {
		n1 = split(vals[t, c1, k], a1, " ")
		n2 = split(vals[t, c2, k], a2, " ")
		if (n1 > n2)
			n1 = n2
		if (n1 == 0)
			return ""
		r = ""
		for (i = 1; i <= n1; i++)
			r = r (i > 1 ? " " : "") a1[i] / a2[i]
		vals[t, c1 "/" c2, k] = r
		return median(t, c1 "/" c2, k)
	}
	# rpaired(t, c1, c2, k): rmedian for rounds run in alternating order
	# (c1 first in odd rounds, c2 first in even ones). Each pair of rounds
	# gives one ratio, the geometric mean of its two, so the advantage the
	# second run of a round has on this machine cancels within the pair;
	# the median is over the pairs.
	function rpaired(t, c1, c2, k,    n1, n2, a1, a2, i, r) {
		n1 = split(vals[t, c1, k], a1, " ")
		n2 = split(vals[t, c2, k], a2, " ")
		if (n1 > n2)
			n1 = n2
		if (n1 < 2)
			return ""
		r = ""
		for (i = 1; i + 1 <= n1; i += 2)
			r = r (i > 1 ? " " : "") sqrt((a1[i] / a2[i]) * (a1[i + 1] / a2[i + 1]))
		vals[t, c1 "//" c2, k] = r
		return median(t, c1 "//" c2, k)
	}
	function verdict(ok) {
		return ok ? "ok" : "MISS"
	}
	# unmeasured(t, c, name): true when c has no figure in table t, after
	# printing why on its row (nothing when it never ran).
	function unmeasured(t, c, name,    st) {
		if ((st = status(t, c)) == "no result")
			return 1
		if (st != "")
			printf "  %-17s %s\n", name, st
		return st != ""
	}
	# status(t, c): "" when measured, else why there is no figure.
	function status(t, c) {
		if ((t, c) in why)
			return why[t, c]
		if (!((t, c, "seen") in vals))
			return "no result"
		return ""
	}
	{
		if ($3 == "missing" || $3 == "failed") {
			s = $3 == "missing" ? "" : "failed: "
			for (i = 4; i <= NF; i++)
				s = s (i > 4 ? " " : "") $i
			why[$1, $2] = s
			next
		}
		vals[$1, $2, $3] = ((($1, $2, $3) in vals) ? vals[$1, $2, $3] " " : "") $4
		vals[$1, $2, "seen"] = 1
	}
	# best_peer(t, k): of the comparison allocators measured in table t,
	# the one with the highest median k.
	function best_peer(t, k,    n, i, p, b, m, v) {
		n = split("glibc jemalloc jemalloc-tuned jemalloc-never tcmalloc mimalloc", p, " ")
		b = ""
		for (i = 1; i <= n; i++) {
			if (status(t, p[i]) != "")
				continue
			v = median(t, p[i], k)
			if (b == "" || v > m) {
				b = p[i]
				m = v
			}
		}
		return b
	}
	# cname(c): the name of configuration c in the tables.
	function cname(c,    n, i, a, b) {
		n = split("floor glibc jemalloc jemalloc-tuned jemalloc-never tcmalloc mimalloc shim-glibc shim-jemalloc shim-glibc-thp", a, " ")
		split("floor (prealloc)|glibc|jemalloc|jemalloc tuned|jemalloc tuned -1|tcmalloc|mimalloc|shim on glibc|shim on jemalloc|shim, thp:true", b, "|")
		for (i = 1; i <= n; i++)
			if (a[i] == c)
				return b[i]
		return c
	}
	function xfmt(x) {
		return x == "" ? "-" : sprintf("%.2fx", x)
	}
	function mark(on, ok) {
		return on ? verdict(ok) : ""
	}
	# decode_table(t): one row per configuration measured in table t (rows
	# with no result at all are left out), each figure beside its target on
	# the shim rows; then what part of each whole-run gap is first touch.
	function decode_table(t,    cfgs, n, i, c, f, fl, frss, bw, bs, shim, xf, xb, xs, xsb, xc, fs, rss, t1, ex, hot) {
		n = split("floor glibc jemalloc jemalloc-tuned jemalloc-never tcmalloc mimalloc shim-glibc shim-jemalloc shim-glibc-thp", cfgs, " ")
		fl = status(t, "floor") == ""
		frss = fl ? median(t, "floor", "peak_rss_kib") : ""
		bw = best_peer(t, "tokens_per_s")
		bs = best_peer(t, "steady_tokens_per_s")
		f = "  %-17s %8s %7s %7s %-4s %7s %-4s %7s %7s %9s %-4s %7s %8s %-4s %6s %7s %6s\n"
		printf f, "", "whole", "whole", "whole", "", "steady", "", "steady", "steady", "faults/", "", "peak", "peak", "", "token", "warm-up", "hot"
		printf f, "", "run", "run", "run x", "", "x floor", "", "x best", "by CPU", "token", "", "RSS", "RSS x", "", "0", "excess", "set"
		printf f, "allocator", "tokens/s", "x floor", "best", "", "", "", "peer", "x floor", "steady", "", "MiB", "floor", "", "ms", "ms", "MiB"
		printf f, "", "", "", "(>1)", "", "(>=.97)", "", "", "", "(0)", "", "", "(<=1.25)", "", "", "", ""
		for (i = 1; i <= n; i++) {
			c = cfgs[i]
			if (unmeasured(t, c, cname(c)))
				continue
			shim = c ~ /^shim/
			xf = fl ? rmedian(t, c, "floor", "tokens_per_s") : ""
			xs = fl ? rmedian(t, c, "floor", "steady_tokens_per_s") : ""
			xb = bw != "" ? rmedian(t, c, bw, "tokens_per_s") : ""
			xsb = bs != "" ? rmedian(t, c, bs, "steady_tokens_per_s") : ""
			xc = fl ? rmedian(t, "floor", c, "steady_cpu_ms_per_token") : ""
			fs = median(t, c, "steady_faults_per_token")
			rss = median(t, c, "peak_rss_kib")
			t1 = median(t, c, "first_token_ms")
			ex = median(t, c, "warmup_excess_ms")
			hot = median(t, c, "steady_hot_mib")
			printf f, cname(c), sprintf("%.2f", median(t, c, "tokens_per_s")), xfmt(xf),
				xfmt(xb), mark(shim && xb != "", xb > 1), xfmt(xs), mark(shim && xs != "", xs >= 0.97),
				xfmt(xsb), xfmt(xc), sprintf("%.2f", fs), mark(shim, fs < 0.05), sprintf("%.1f", rss / 1024),
				frss == "" ? "-" : xfmt(rss / frss), mark(shim && frss != "", rss <= 1.25 * frss),
				t1 == "" ? "-" : sprintf("%.0f", t1), ex == "" ? "-" : sprintf("%.0f", ex),
				hot == "" ? "-" : sprintf("%.0f", hot)
		}
		printf "  best peer: %s over the whole run, %s in the steady state.\n",
			bw == "" ? "none measured" : cname(bw), bs == "" ? "none measured" : cname(bs)
		first_touch(t, bw)
	}
	# first_touch(t, bw): the whole-run gap of each shim (and of the best
	# peer bw) to the floor, split into the warm-up excess (what the warm-up
	# tokens took beyond the steady rate of the same run, less the same for
	# the floor: first touch and growth) and the rest (the steady-state
	# speed), beside the pre-fault the floor did before its timer.
	function first_touch(t, bw,    n, i, c, cfgs, tf, pf, ef, tc, gap, ex) {
		if (status(t, "floor") != "")
			return
		tf = median(t, "floor", "seconds") * 1000
		pf = median(t, "floor", "prefault_ms")
		ef = median(t, "floor", "warmup_excess_ms")
		printf "  First touch: the floor pre-faulted its buffers in %.0f ms before its timer, against a whole\n", pf
		printf "  run of %.0f ms; paid inside the timer, that would have put it at %.2fx its figure. The\n", tf, tf / (tf + pf)
		printf "  whole-run gap to the floor (medians of the runs) and its parts; the floor spent %.0f ms of\n",
			median(t, "floor", "sys_ms")
		printf "  kernel CPU time in its whole run (%.0f faults in its warm-up). Kernel time here is page\n",
			median(t, "floor", "warmup_faults")
		printf "  faults, first touch; a run that still faults in its steady state pays that in the steady part:\n"
		n = split("shim-glibc shim-jemalloc shim-glibc-thp " bw, cfgs, " ")
		for (i = 1; i <= n; i++) {
			c = cfgs[i]
			if (status(t, c) != "")
				continue
			tc = median(t, c, "seconds") * 1000
			gap = tc - tf
			ex = median(t, c, "warmup_excess_ms") - ef
			printf "    %-26s %6.0f ms %+6.0f ms: warm-up excess %+6.0f ms, steady state %+6.0f ms;\n",
				c == bw ? cname(c) " (best peer)" : cname(c), tc, gap, ex, gap - ex
			printf "    %-26s kernel CPU time (all threads) %.0f ms in the warm-up (%.0f faults), %.0f ms in all;\n", "",
				median(t, c, "warmup_sys_ms"), median(t, c, "warmup_faults"), median(t, c, "sys_ms")
			printf "    %-26s against the floor with its pre-fault counted: %.2fx\n", "", (tf + pf) / tc
		}
	}
	# churn_table(t): each shim against its backend alone on bench/churn.
	function churn_table(t,    n, i, c, b, cfgs, names, bs, f, sp, x, rss, xr, live) {
		n = split("glibc shim-glibc shim-glibc-thp jemalloc shim-jemalloc tcmalloc", cfgs, " ")
		split("glibc alone|shim on glibc|shim, thp:true|jemalloc alone|shim on jemalloc|tcmalloc", names, "|")
		split("- glibc glibc - jemalloc -", bs, " ")
		f = "  %-17s %9s %9s %-4s %10s %9s %9s %-4s %9s %8s\n"
		printf f, "", "steps/s", "speed x", "", "faults/", "peak RSS", "RSS x", "", "live set", "RSS x"
		printf f, "allocator", "", "backend", "", "step", "MiB", "backend", "", "peak MiB", "live"
		printf f, "", "", "(>=1.00)", "", "", "", "(<=1.10)", "", "", ""
		for (i = 1; i <= n; i++) {
			c = cfgs[i]
			b = bs[i]
			if (unmeasured(t, c, names[i]))
				continue
			sp = median(t, c, "steps_per_s")
			rss = median(t, c, "peak_rss_kib")
			live = median(t, c, "live_peak_kib")
			x = xr = ""
			if (b != "-" && status(t, b) == "") {
				x = rmedian(t, c, b, "steps_per_s")
				xr = rmedian(t, c, b, "peak_rss_kib")
			}
			printf f, names[i], sprintf("%.0f", sp), xfmt(x), mark(x != "", x >= 1),
				sprintf("%.1f", median(t, c, "faults_per_step")), sprintf("%.1f", rss / 1024),
				xfmt(xr), mark(xr != "", xr <= 1.1), sprintf("%.1f", live / 1024), xfmt(rss / live)
		}
	}
	# grow_table(t): a buffer grown by realloc, each shim against its backend.
	function spawn_table(t,    n, i, c, b, cfgs, names, bs, f, x, y) {
		n = split("glibc shim-glibc jemalloc shim-jemalloc tcmalloc mimalloc", cfgs, " ")
		split("glibc alone|shim on glibc|jemalloc alone|shim on jemalloc|tcmalloc|mimalloc", names, "|")
		split("- glibc - jemalloc - -", bs, " ")
		f = "  %-17s %10s %10s %12s %10s\n"
		printf f, "", "fork", "fork x", "fork+exec", "fork+exec"
		printf f, "allocator", "us", "backend", "us", "x backend"
		for (i = 1; i <= n; i++) {
			c = cfgs[i]
			b = bs[i]
			if (unmeasured(t, c, names[i]))
				continue
			x = y = ""
			if (b != "-" && status(t, b) == "") {
				x = rmedian(t, c, b, "fork_us")
				y = rmedian(t, c, b, "exec_us")
			}
			printf f, names[i], sprintf("%.0f", median(t, c, "fork_us")),
				x == "" ? "" : sprintf("%.2fx", x), sprintf("%.0f", median(t, c, "exec_us")),
				y == "" ? "" : sprintf("%.2fx", y)
		}
	}
	function grow_table(t,    n, i, c, b, cfgs, names, bs, f, us, x) {
		n = split("glibc shim-glibc jemalloc shim-jemalloc tcmalloc mimalloc", cfgs, " ")
		split("glibc alone|shim on glibc|jemalloc alone|shim on jemalloc|tcmalloc|mimalloc", names, "|")
		split("- glibc - jemalloc - -", bs, " ")
		f = "  %-17s %12s %12s %10s %10s %9s\n"
		printf f, "", "us per", "realloc x", "faults/", "whole run", "peak RSS"
		printf f, "allocator", "realloc", "backend", "realloc", "s", "MiB"
		for (i = 1; i <= n; i++) {
			c = cfgs[i]
			b = bs[i]
			if (unmeasured(t, c, names[i]))
				continue
			us = median(t, c, "us_per_realloc")
			x = ""
			if (b != "-" && status(t, b) == "")
				x = rmedian(t, c, b, "us_per_realloc")
			printf f, names[i], sprintf("%.1f", us), x == "" ? "" : sprintf("%.3fx", x),
				sprintf("%.1f", median(t, c, "faults_per_realloc")),
				sprintf("%.3f", median(t, c, "seconds")),
				sprintf("%.1f", median(t, c, "peak_rss_kib") / 1024)
		}
	}
	# quartile(t, c, k, q): the q-th quartile (1 or 3) of the figures.
	function quartile(t, c, k, q,    n, i, j, x, a) {
		n = split(vals[t, c, k], a, " ")
		if (n == 0)
			return ""
		for (i = 2; i <= n; i++) {
			x = a[i] + 0
			for (j = i - 1; j >= 1 && a[j] + 0 > x; j--)
				a[j + 1] = a[j]
			a[j + 1] = x
		}
		return a[int((n - 1) * q / 4) + 1] + 0
	}
	function stats_table(t,    on, off, x, c, y, xl, xh, yl, yh, io, ix, pair) {
		if ((st = status(t, "shim-glibc")) != "" || (st = status(t, "shim-glibc-nostats")) != "") {
			printf "  shim on glibc: %s\n", st
			return
		}
		pair = "shim-glibc//shim-glibc-nostats"
		on = median(t, "shim-glibc", "tokens_per_s")
		off = median(t, "shim-glibc-nostats", "tokens_per_s")
		x = rpaired(t, "shim-glibc", "shim-glibc-nostats", "tokens_per_s")
		xl = quartile(t, pair, "tokens_per_s", 1)
		xh = quartile(t, pair, "tokens_per_s", 3)
		c = median(t, "shim-glibc", "steady_cpu_ms_per_token")
		y = rpaired(t, "shim-glibc", "shim-glibc-nostats", "steady_cpu_ms_per_token")
		yl = quartile(t, pair, "steady_cpu_ms_per_token", 1)
		yh = quartile(t, pair, "steady_cpu_ms_per_token", 3)
		printf "  %-46s %10s %14s %12s\n", "shim on glibc, decode loop", "tokens/s", "CPU ms/token", "page faults"
		printf "  %-46s %10s %14s %12s\n", "", "whole run", "steady state", "a run"
		printf "  %-46s %10.2f %14.2f %12.0f\n", "stats and trace off (stats:false,trace:false)", off,
			median(t, "shim-glibc-nostats", "steady_cpu_ms_per_token"), median(t, "shim-glibc-nostats", "faults")
		printf "  %-46s %10.2f %14.2f %12.0f\n", "stats and trace on (the default)", on, c, median(t, "shim-glibc", "faults")
		printf "  %-46s %9.2f%% %13.2f%%   target <= 2%%: %s (tokens/s), %s (CPU)\n", "overhead", (1 - x) * 100, (y - 1) * 100, verdict(1 - x <= 0.02), verdict(y - 1 <= 0.02)
		if (xl != "" && yl != "")
			printf "  %-46s %10s %14s\n", "  interquartile range over the pairs",
				sprintf("%.1f..%.1f%%", (1 - xh) * 100, (1 - xl) * 100), sprintf("%.1f..%.1f%%", (yl - 1) * 100, (yh - 1) * 100)
		io = median(t, "shim-glibc", "ir_total")
		ix = median(t, "shim-glibc-nostats", "ir_total")
		if (io != "" && ix != "")
			printf "  %-46s %+.3f%% (%.0f against %.0f)\n", "instructions, on against off (callgrind)", (io / ix - 1) * 100, io, ix
		else if ((st = status(t, "shim-glibc-cg")) != "" || (st = status(t, "shim-glibc-nostats-cg")) != "")
			printf "  %-46s %s\n", "instructions (callgrind)", st
	}
	# audit_table(t): the decode loop under the shim, alone and under
	# scratchstat audit (launch mode: first-toucher sampling armed before
	# the exec, placement read while it runs), medians of paired rounds.
	function audit_table(t,    x, y) {
		if ((st = status(t, "shim-glibc")) != "" || (st = status(t, "shim-glibc-audit")) != "") {
			printf "  audit: %s\n", st
			return
		}
		x = rpaired(t, "shim-glibc-audit", "shim-glibc", "tokens_per_s")
		y = rpaired(t, "shim-glibc-audit", "shim-glibc", "steady_cpu_ms_per_token")
		printf "  %-46s %10s %14s %12s\n", "shim on glibc, decode loop", "tokens/s", "CPU ms/token", "page faults"
		printf "  %-46s %10s %14s %12s\n", "", "whole run", "steady state", "a run"
		printf "  %-46s %10.2f %14.2f %12.0f\n", "alone", median(t, "shim-glibc", "tokens_per_s"),
			median(t, "shim-glibc", "steady_cpu_ms_per_token"), median(t, "shim-glibc", "faults")
		printf "  %-46s %10.2f %14.2f %12.0f\n", "under scratchstat audit -- (sampling armed)",
			median(t, "shim-glibc-audit", "tokens_per_s"),
			median(t, "shim-glibc-audit", "steady_cpu_ms_per_token"), median(t, "shim-glibc-audit", "faults")
		printf "  %-46s %9.2f%% %13.2f%%\n", "cost of the audit", (1 - x) * 100, (y - 1) * 100
	}
	# small_table(t): per backend, the pair alone, under the bare forwarder
	# and under the shim, in CPU time and in instructions; the budget
	# (DESIGN.md) is on instructions: the count of the forwarder plus 2 (glibc)
	# or 12 (jemalloc).
	function small_table(t,    i, names, bs, fs, ss, budget, f, a, x, y, rx, ry, ia, ix, iy, c) {
		f = "  %-9s %8s %8s %8s %9s %9s  %8s %8s %8s %10s %-14s\n"
		printf f, "", "alone", "forward", "shim", "forward", "shim", "alone", "forward", "shim", "shim -", ""
		printf f, "backend", "CPU ns", "CPU ns", "CPU ns", "x alone", "x alone", "instr", "instr", "instr", "forward", "target"
		printf f, "", "(best)", "(best)", "(best)", "(CPU)", "(CPU)", "", "", "", "(instr)", "(instr)"
		split("glibc|jemalloc", names, "|")
		split("glibc jemalloc", bs, " ")
		split("forward forward-jemalloc", fs, " ")
		split("shim-glibc shim-jemalloc", ss, " ")
		split("2 12", budget, " ")
		for (i = 1; i <= 2; i++) {
			if ((st = status(t, bs[i])) != "") {
				printf "  %-9s %s\n", names[i], st
				continue
			}
			for (c = 2; c <= 3; c++)
				if ((st = status(t, c == 2 ? fs[i] : ss[i])) != "")
					printf "  %-9s %s: %s\n", names[i], c == 2 ? "forwarder" : "shim", st
			a = best(t, bs[i], "cpu_ns_per_pair")
			x = status(t, fs[i]) == "" ? best(t, fs[i], "cpu_ns_per_pair") : ""
			y = status(t, ss[i]) == "" ? best(t, ss[i], "cpu_ns_per_pair") : ""
			rx = x == "" ? "" : rmedian(t, fs[i], bs[i], "cpu_ns_per_pair")
			ry = y == "" ? "" : rmedian(t, ss[i], bs[i], "cpu_ns_per_pair")
			ia = median(t, bs[i], "ir_per_pair")
			ix = x == "" ? "" : median(t, fs[i], "ir_per_pair")
			iy = y == "" ? "" : median(t, ss[i], "ir_per_pair")
			printf f, names[i], sprintf("%.2f", a), x == "" ? "-" : sprintf("%.2f", x),
				y == "" ? "-" : sprintf("%.2f", y), rx == "" ? "-" : sprintf("%+.1f%%", (rx - 1) * 100),
				ry == "" ? "-" : sprintf("%+.1f%%", (ry - 1) * 100),
				ia == "" ? "-" : sprintf("%.1f", ia), ix == "" ? "-" : sprintf("%.1f", ix),
				iy == "" ? "-" : sprintf("%.1f", iy), ix == "" || iy == "" ? "-" : sprintf("%+.1f", iy - ix),
				ix == "" || iy == "" ? "" : sprintf("<= +%d: %s", budget[i], verdict(iy - ix <= budget[i] + 0.05))
		}
	}
	function pair_table(t,    n, i, c, cfgs, names, ns, ir, shim) {
		n = split("shim-glibc shim-jemalloc glibc jemalloc", cfgs, " ")
		split("shim on glibc|shim on jemalloc|glibc alone|jemalloc alone", names, "|")
		printf "  %-18s %12s  %-14s %18s  %-14s %14s\n", "", "CPU ns/pair", "target", "instructions/pair", "target", "instructions/"
		printf "  %-18s %12s  %-14s %18s  %-14s %14s\n", "allocator", "(best)", "", "in malloc+free", "", "loop iteration"
		for (i = 1; i <= n; i++) {
			c = cfgs[i]
			shim = c ~ /^shim/
			if ((st = status(t, c)) != "") {
				printf "  %-18s %s\n", names[i], st
				continue
			}
			ns = best(t, c, "cpu_ns_per_pair")
			printf "  %-18s %12.2f  %-14s", names[i], ns, shim ? "<= 25: " verdict(ns <= 25) : "(reference)"
			ir = median(t, c, "ir_per_pair")
			if (ir == "")
				printf " %18s\n", status(t, c "-cg") != "" ? status(t, c "-cg") : "-"
			else
				printf " %18.1f  %-14s %14.1f\n", ir, shim ? "<= 100: " verdict(ir <= 100) : "(reference)", median(t, c, "ir_per_iter")
		}
	}
	END {
		if (which == "decode")
			decode_table(arg)
		else if (which == "churn")
			churn_table("churn")
		else if (which == "grow")
			grow_table("grow")
		else if (which == "spawn")
			spawn_table("spawn")
		else if (which == "stats")
			stats_table("stats")
		else if (which == "audit")
			audit_table("audit")
		else if (which == "small")
			small_table("small")
		else if (which == "pair")
			pair_table("pair")
	}' "$RES"
}

cat <<EOF
scratch benchmarks: $(nproc) CPUs, transparent huge pages: $(sed 's/.*\[\(.*\)\].*/\1/' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo unknown), $(uname -sr)
Every figure is measured in this run, over interleaved rounds (medians, or the best round for
the nanosecond microbenchmarks), each beside its target.
Comparison allocators: jemalloc ${je:-not installed}, tcmalloc ${tc:-not installed}, mimalloc ${mi:-not installed}.

EOF

# --- 1. decode loop ----------------------------------------------------------
# shuffle SEED WORDS...: the words in an order that depends on SEED.
shuffle() {
	echo "$@" | awk -v seed="$1" '{
		srand(seed + 0); n = 0
		for (i = 2; i <= NF; i++) a[++n] = $i
		for (i = n; i > 1; i--) { j = int(rand() * i) + 1; x = a[i]; a[i] = a[j]; a[j] = x }
		for (i = 1; i <= n; i++) printf "%s%s", a[i], i < n ? " " : "\n" }'
}

# decode_rounds PREFIX ARGS NROUNDS FAST SLOW: NROUNDS interleaved rounds of
# bench/decode ARGS under the FAST configurations, the first $rounds of them
# under the SLOW ones too, in both variants, into tables PREFIX-default and
# PREFIX-main-alloc.
# The floor and the shims, where the targets are judged, may get more rounds
# than the comparison allocators (which are also the slow ones). Each round
# runs the configurations in a new order: a run's first touches cost more
# when the run before it left no freshly freed huge pages behind (on a VM
# whose free memory goes back to the host), so no configuration may always
# follow the same neighbour.
decode_rounds() {
	dr_prefix=$1
	dr_args=$2
	dr_rounds=$3
	dr_fast=$4
	dr_slow=$5
	r=1
	while [ "$r" -le "$dr_rounds" ]; do
		cfgs=$dr_fast
		[ "$r" -le "$rounds" ] && cfgs="$dr_fast $dr_slow"
		seed=$((r * 2))
		for variant in default main-alloc; do
			seed=$((seed + 1))
			# shellcheck disable=SC2086 # one word per configuration
			cfgs=$(shuffle $seed $cfgs)
			progress "$dr_prefix loop, $variant, round $r of $dr_rounds"
			vflag=
			[ "$variant" = main-alloc ] && vflag=--main-alloc
			for cfg in $cfgs; do
				if [ "$cfg" = floor ]; then
					# shellcheck disable=SC2086 # the arguments split on purpose
					run "$dr_prefix-$variant" floor decode $dr_args $vflag --prealloc
				else
					# shellcheck disable=SC2086
					run "$dr_prefix-$variant" "$cfg" decode $dr_args $vflag
				fi
			done
		done
		r=$((r + 1))
	done
}

# decode_legend: the columns and targets of the decode tables (1 and 1v).
decode_legend() {
	cat <<EOF
   Whole-run tokens/s covers every token, warm-up included; steady tokens/s and faults/token
   (minflt+majflt) the tokens after the warm-up. Ratios are medians of per-round ratios, to the
   floor and to the best peer (of glibc, jemalloc, both tuned jemallocs, tcmalloc and mimalloc,
   the one with the best median, named under the table). Peak RSS is VmHWM. Token 0 ms is the
   first token alone; warm-up excess is what the warm-up tokens took beyond the run's own
   steady rate: first touch and growth. Steady by CPU: the floor's CPU time per steady token
   over the run's (above 1: less work per token than the floor), which other load on the
   machine disturbs less than tokens/s. Hot set: the distinct bytes a steady token's buffers
   spanned (the union of the address ranges written, all threads): what the caches must hold.
   An allocator that hands one thread's request the memory another thread just freed (a
   shared heap: tcmalloc's logits buffer takes the pages of the workers' temporaries) has a
   smaller one than per-thread pools, which keep each thread's pages apart; where the hot set
   outgrows the last-level cache, writes slow down. The floor allocates every buffer at its
   largest size and pre-faults it before its timer; each use writes the same bytes as in the
   other runs.
   Targets (shim rows): whole run ahead of every peer (> 1x the best), steady state >= 0.97x
   the floor, 0 faults per token in steady state, peak RSS <= 1.25x the floor's.
   jemalloc tuned: MALLOC_CONF=$tuned
   (the Intel Extension for PyTorch tuning guide's); jemalloc tuned -1: the same with both
   decay times -1 (never purge), as other PyTorch CPU guides give it.
EOF
}

bench_decode() {
decode_rounds decode "$dargs" "$frounds" "floor shim-glibc shim-jemalloc shim-glibc-thp" \
	"glibc jemalloc jemalloc-tuned jemalloc-never tcmalloc mimalloc"
cat <<EOF
1. Decode loop, fixed sizes (issue 3): 2 worker threads + main, $tokens tokens x $layers layers
   ($warmup warm-up); per layer each worker allocates temporaries of 16 KiB-16 MiB (powers of
   4) and the main thread a 32 MiB buffer the workers write; per token a 64 MiB logits buffer.
   Every buffer is written once per use. Medians of $frounds interleaved rounds (each in a new
   order) for the floor and the shims, of $rounds for the other allocators. The last row (shim
   on glibc with SCRATCH_CONF=thp:true: huge pages for blocks of 2 MiB and more) shows what
   transparent huge pages cost at first touch and give back in the steady state.
EOF
decode_legend
cat <<EOF

 a) workers allocate their own temporaries:
EOF
report decode decode-default
cat <<EOF

 b) the main thread allocates every buffer, the workers write them (--main-alloc):
EOF
report decode decode-main-alloc
}

bench_vary() {
decode_rounds vary "$vargs" "$rounds" "floor shim-glibc shim-jemalloc shim-glibc-thp" \
	"glibc jemalloc jemalloc-tuned jemalloc-never tcmalloc mimalloc"
cat <<EOF

1v. Decode loop, sizes that vary (issue 12, --vary): 2 worker threads + main, $vtokens tokens x
   $vlayers layers, the first $vwarmup of them the warm-up (the steady state is the late tokens).
   Per token and layer each worker's 2 temporaries are 8-64 MiB, drawn at 1 MiB steps from a
   seeded PRNG (the same sequence under every allocator); the main thread allocates the
   attention scores, (64 + token) rows of 256 KiB (16 MiB growing by one row a token), which
   the workers write; per token a 64 MiB logits buffer. Medians of $rounds interleaved rounds,
   each in a new order; the last row is the shim on glibc with SCRATCH_CONF=thp:true.
EOF
decode_legend
cat <<EOF

 a) workers allocate their own temporaries:
EOF
report decode vary-default
cat <<EOF

 b) the main thread allocates every buffer, the workers write them (--main-alloc):
EOF
report decode vary-main-alloc
}

# --- 1c. large-block churn ---------------------------------------------------
# shuffled_rounds TABLE WHAT SEED "CFGS" PROGRAM ARGS...: $rounds rounds of
# PROGRAM under each configuration, each round in a new order.
shuffled_rounds() {
	table=$1 what=$2 seed=$3 cfgs=$4
	shift 4
	r=1
	while [ "$r" -le "$rounds" ]; do
		progress "$what, round $r of $rounds"
		# shellcheck disable=SC2086 # cfgs splits into words on purpose
		for cfg in $(shuffle $((r + seed)) $cfgs); do
			run "$table" "$cfg" "$@"
		done
		r=$((r + 1))
	done
}

bench_churn() {
shuffled_rounds churn "large-block churn" 200 \
	"glibc shim-glibc shim-glibc-thp jemalloc shim-jemalloc tcmalloc" churn --steps "$churn_steps"
cat <<EOF

1c. Large-block churn (issue 12, bench/churn): one thread keeps 32 blocks of random sizes from
   5 to 25 MiB (whole pages, from a seeded PRNG) and $churn_steps times frees a random one, mallocs
   one of a new random size and writes each of its pages. Each shim against its backend alone
   (tcmalloc for reference; "shim, thp:true" is the shim on glibc with huge pages):
   steps/s and peak RSS (VmHWM), with the shims' ratios
   as medians of per-round ratios over $rounds interleaved rounds (each in a new order); the
   live set's own peak beside.
   Targets (shim rows): peak RSS <= 1.10x the backend's alone, at equal or better speed.
EOF
report churn
}

# --- 1r. a buffer grown by realloc -------------------------------------------
bench_grow() {
shuffled_rounds grow "realloc growth" 300 \
	"glibc shim-glibc jemalloc shim-jemalloc tcmalloc mimalloc" grow
cat <<EOF

1r. A buffer grown by realloc (issue 12, bench/grow): 20 times, one buffer grows from 4 to
   256 MiB by an eighth at a time (44 reallocs), writing the part each step adds. Microseconds
   per realloc call (the writes left out; a shim's ratio to its backend alone as a median of
   per-round ratios), faults per realloc (the writes' included), the whole run and peak RSS,
   medians of $rounds interleaved rounds. Under the shim a realloc within a block's capacity
   stays in place and one into a larger block moves the pages (mremap) instead of copying
   them. No target: the issue leaves copy or move to measurement.
EOF
report grow
}

# --- 1s. fork and exec from a host with big buffers --------------------------
bench_spawn() {
shuffled_rounds spawn "fork and exec" 400 \
	"glibc shim-glibc jemalloc shim-jemalloc tcmalloc mimalloc" spawn
cat <<EOF

1s. Fork and exec (bench/spawn): a host holding a written 64 MiB buffer, with a 32 MiB one
   freed, a second thread gone and a worker thread parked with its 32 MiB temporary freed,
   forks 200 children that exit at once, then 200 that exec
   /bin/true (which loads the preloaded allocator too). Microseconds per child, fork to reaping;
   a shim's ratio to its backend alone as a median of per-round ratios over $rounds interleaved
   rounds. No target in DESIGN.md (the host should not notice the shim). fork copies the page
   tables of every resident page, so an allocator that keeps freed memory for reuse pays for it
   here: glibc unmaps the 32 MiB blocks at free, the pools keep them (and the thread's 4 MiB)
   until the decay, as jemalloc and tcmalloc keep theirs; the pools mark their idle blocks
   MADV_WIPEONFORK for the fork. The exec child also starts the shim.
EOF
report spawn
}

# --- 2. stats and tracing on versus off --------------------------------------
# paired_rounds TABLE WHAT A B: $orounds rounds of the decode loop under
# configurations A and B, which take turns to run first: on this machine
# the second run of a back-to-back pair is the faster one, by 3-4%
# (measured both ways round), which a fixed order would charge to one side.
paired_rounds() {
	r=1
	while [ "$r" -le "$orounds" ]; do
		progress "$2, round $r of $orounds"
		order="$3 $4"
		[ $((r % 2)) = 0 ] && order="$4 $3"
		for cfg in $order; do
			# shellcheck disable=SC2086 # dargs splits into options on purpose
			run "$1" "$cfg" decode $dargs
		done
		r=$((r + 1))
	done
}

bench_stats() {
paired_rounds stats "stats on/off" shim-glibc shim-glibc-nostats
# The same comparison without the noise: instructions of a short run of the
# loop (callgrind; every growth, and so every trace record, is in it).
for cfg in shim-glibc shim-glibc-nostats; do
	callgrind_whole stats "$cfg" decode --tokens 2 --layers 2 --warmup 1
done
cat <<EOF

2. Stats and tracing on versus off (issue 4): the decode loop (workers allocate) under the shim on
   glibc, default SCRATCH_CONF against SCRATCH_CONF=stats:false,trace:false; medians of $orounds
   interleaved rounds, on and off taking turns to run first. Overhead: the median over pairs of
   rounds of the two rounds' ratios' geometric mean (the order's advantage cancels within a
   pair), on tokens/s over the whole run (1 - on/off), and on the process's CPU time per
   steady-state token (on/off - 1), which neither other load nor the first-touch cost of the
   warm-up (see table 1) disturbs as much; under each, the interquartile range of the pairs'
   ratios, the noise the median is read against. Page faults: the median of the runs (the
   segment's own pages). Instructions: callgrind's count of a whole 2-token, 2-layer run,
   on against off: what the stats and the trace add, without the machine's noise.
   Target: overhead <= 2%.
EOF
report stats
}

# --- 2a. the locality audit's cost on its host --------------------------------
bench_audit() {
paired_rounds audit "audit on/off" shim-glibc shim-glibc-audit
cat <<EOF

2a. The locality audit's cost on its host (issue 14): the decode loop (workers allocate) under
   the shim on glibc, alone and launched by scratchstat audit (first-toucher sampling armed
   before the exec, one event per CPU; placement read while it runs); medians of $orounds
   interleaved rounds, taking turns to run first, as in table 2. Page faults are what the
   sampling pays for (bench/faults gives the cost per fault, among the programs' tables); a
   steady-state token faults nothing, so the steady-state CPU figure is the audit's cost per
   token once warm. Where perf_event_paranoid refuses sampling, the audit reads placement
   only. (No target.)
EOF
report audit
}

# --- 3. small-allocation pass-through ----------------------------------------
bench_small() {
r=1
while [ "$r" -le "$mrounds" ]; do
	progress "small allocations, round $r of $mrounds"
	# A new order each round, so that no configuration always runs first.
	for cfg in $(shuffle $((r + 100)) glibc shim-glibc forward jemalloc shim-jemalloc forward-jemalloc); do
		run small "$cfg" small --threads 2 --ops 5000000
	done
	r=$((r + 1))
done
for cfg in glibc shim-glibc forward jemalloc shim-jemalloc forward-jemalloc; do
	callgrind_diff small "$cfg" 50000 small --threads 1
done
cat <<EOF

3. Small-allocation pass-through (issues 3, 12): 2 threads, each replacing one of 64 live
   blocks of 16 B-1 KiB per step (5x10^6 malloc+free pairs per thread); the shim forwards
   these to its backend. Each backend alone, under a bare forwarding interposer
   (bench/forward.c: malloc and free forward to the backend's own with one compare and a
   jump each, what any LD_PRELOAD malloc pays on this loop; before libjemalloc.so.2 for
   jemalloc) and under the shim. CPU time per pair over $mrounds interleaved rounds (each in a
   new order): the best round of each, and the median of the per-round ratios to the
   backend alone (runs side by side in one round see the same load; other load on a shared
   machine only ever adds time). Instructions per pair inside malloc and free (one thread,
   callgrind, as in table 4) measure the same without the noise, and carry the target
   (DESIGN.md): the shim at most the forwarder's count plus 2 on glibc, plus 12 on jemalloc.
EOF
report small
}

# callgrind_ir CFG PROGRAM ARGS...: "TOTAL SELF", the instructions (Ir) of a
# whole bench program run under CFG and those of the program's own functions
# (the loop, without the malloc and free it calls into other objects).
callgrind_ir() {
	cg_cfg=$1
	cg_prog=$2
	shift 2
	# shellcheck disable=SC2046
	env -u LD_PRELOAD -u MALLOC_CONF -u SCRATCH_CONF $(cfg_env "$cg_cfg") \
		"$VALGRIND" --tool=callgrind --callgrind-out-file="$T/cg.out" \
		"$top/bench/$cg_prog" "$@" >/dev/null 2>"$T/cg.err" || return
	total=$(awk '$1 == "summary:" || $1 == "totals:" { print $2; exit }' "$T/cg.out")
	self=$(callgrind_annotate --threshold=100 --auto=no "$T/cg.out" 2>/dev/null |
		awk -v obj="/bench/$cg_prog]" '
			substr($0, length($0) - length(obj) + 1) == obj { gsub(/,/, "", $1); n += $1 }
			END { if (n) print n }')
	[ -n "$total" ] && [ -n "$self" ] && echo "$total $self"
}

# callgrind_whole TABLE CFG PROGRAM ARGS...: record ir_total, the
# instructions of one whole run of PROGRAM ARGS under CFG.
callgrind_whole() {
	cw_table=$1
	cw_cfg=$2
	shift 2
	[ -z "$(cfg_missing "$cw_cfg")" ] || return 0
	if [ -z "${VALGRIND:-}" ] || ! command -v callgrind_annotate >/dev/null 2>&1; then
		echo "$cw_table $cw_cfg-cg missing valgrind not installed" >>"$RES"
		return 0
	fi
	progress "callgrind, $1, $cw_cfg"
	if cw=$(callgrind_ir "$cw_cfg" "$@"); then
		echo "$cw_table $cw_cfg ir_total ${cw%% *}" >>"$RES"
	else
		echo "$cw_table $cw_cfg-cg failed callgrind: $(head -n 1 "$T/cg.err")" >>"$RES"
	fi
}

# callgrind_diff TABLE CFG N PROGRAM ARGS...: run PROGRAM with "--OPT N" and
# "--OPT 2N" appended to ARGS (OPT is --pairs or --ops, chosen by PROGRAM)
# and record instructions per step: ir_per_iter (the whole loop) and
# ir_per_pair (less the program's own instructions: malloc and free alone).
callgrind_diff() {
	cd_table=$1
	cd_cfg=$2
	cd_n=$3
	cd_prog=$4
	shift 4
	[ -z "$(cfg_missing "$cd_cfg")" ] || return 0
	if [ -z "${VALGRIND:-}" ] || ! command -v callgrind_annotate >/dev/null 2>&1; then
		echo "$cd_table $cd_cfg-cg missing valgrind not installed" >>"$RES"
		return 0
	fi
	cd_opt=--pairs
	[ "$cd_prog" = small ] && cd_opt=--ops
	progress "callgrind, $cd_prog, $cd_cfg"
	a=$(callgrind_ir "$cd_cfg" "$cd_prog" "$@" $cd_opt "$cd_n")
	b=$(callgrind_ir "$cd_cfg" "$cd_prog" "$@" $cd_opt $((2 * cd_n)))
	if [ -n "$a" ] && [ -n "$b" ]; then
		echo "$a $b" | awk -v t="$cd_table" -v c="$cd_cfg" -v n="$cd_n" '{
			printf "%s %s ir_per_iter %.2f\n", t, c, ($3 - $1) / n
			printf "%s %s ir_per_pair %.2f\n", t, c, ($3 - $1 - ($4 - $2)) / n }' >>"$RES"
	else
		echo "$cd_table $cd_cfg-cg failed callgrind: $(head -n 1 "$T/cg.err")" >>"$RES"
	fi
}

# --- 4. pooled malloc+free hit -----------------------------------------------
bench_pair() {
r=1
while [ "$r" -le "$srounds" ]; do
	progress "pooled pair, round $r of $srounds"
	for cfg in shim-glibc shim-jemalloc glibc jemalloc; do
		run pair "$cfg" pair --size $pair_size --pairs 2000000
	done
	r=$((r + 1))
done

n=50000
for cfg in shim-glibc shim-jemalloc glibc jemalloc; do
	callgrind_diff pair "$cfg" $n pair --size $pair_size
done
cat <<EOF

4. Pooled malloc+free hit (issue 3): one thread, malloc+free of a $pair_size-byte block (scratch-
   sized, so every pair after the first is a hit in the thread's cache). ns per pair: CPU time,
   best of $srounds interleaved runs of 2x10^6 pairs. Instructions: callgrind's count for 2N pairs
   minus N pairs, divided by N (N = $n): per pair inside malloc and free (the whole count less
   that of the program's own functions, the loop), and per loop iteration (calls included).
   Targets: <= 25 ns and <= 100 instructions per pair.
EOF
report pair
}

# --- 5. programs that print their own tables ---------------------------------
bench_programs() {
for prog in ${BENCH_PROGRAMS:-}; do
	progress "$prog"
	echo
	echo "== $prog (prints its own table) =="
	"$top/$prog" || echo "$prog: failed with exit status $?"
done
}

# BENCH_ONLY="small pair" runs only those tables (decode vary churn grow spawn
# stats audit small pair programs), for quick iterations on one part.
for section in ${BENCH_ONLY:-decode vary churn grow spawn stats audit small pair programs}; do
	case $section in
	decode | vary | churn | grow | spawn | stats | audit | small | pair | programs) "bench_$section" ;;
	*) echo "bench: BENCH_ONLY: unknown section '$section'" >&2 ;;
	esac
done

echo
echo "make bench: done in $(($(date +%s) - start)) s"
