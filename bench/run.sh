#!/bin/sh
# bench/run.sh - the `make bench` driver.
#
# Runs every benchmark the project sets a target for, in one run, and writes
# each run's figures to a results file; bench/report.py prints from it, after
# each section, side-by-side tables of medians with each figure beside its
# target:
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
#   2b. the whole-process audit of a large host (bench/audit_scale): its time
#      and memory, and the host's slowdown while attached;
#   3. small-allocation pass-through (bench/small) under each shim against
#      its backend alone and a bare forwarder in front of it (bench/forward.c);
#   4. a pooled malloc+free hit through each shim (bench/pair): ns per pair,
#      and instructions per pair counted with callgrind;
#   5. every program in $BENCH_PROGRAMS, each printing its own table.
# Runs of one table are interleaved (A B C A B C ...) and the median of the
# rounds is reported (the best round for the nanosecond microbenchmarks):
# the machine is shared and noisy.
#
# The results file stays (bench/results/DATE-TIME.txt in the build directory,
# named at the end), so `bench/report.py FILE` prints a run's tables again;
# its format is described there.
#
# Environment: SCRATCH_TOP_BUILDDIR (set by make), BENCH_PROGRAMS, VALGRIND,
# PKG_CONFIG (from configure); BENCH_ROUNDS (default 3), BENCH_TOKENS
# (default 32), BENCH_VARY_TOKENS (default 32) and BENCH_CHURN_STEPS
# (default 2000) to trade time for precision; BENCH_SCALE_FILE_GIB (8),
# BENCH_SCALE_ANON_GIB (4) and BENCH_SCALE_ROUNDS (3) for table 2b;
# BENCH_PAIRS (2 x BENCH_ROUNDS) and BENCH_PAIR_PEERS (2) for table 6's
# pairs; BENCH_ONLY to run some tables;
# BENCH_RESULTS to name the results file; PYTHON (default python3) to run
# bench/report.py.
set -u

top=${SCRATCH_TOP_BUILDDIR:?run me through make bench}
src=$(cd "$(dirname "$0")/.." && pwd)
# checknum NAME: exit with one clear error unless environment variable NAME
# is unset, empty (its default), or a positive integer. Table 2b's sizes
# too: its host maps both parts, and a mapping of 0 bytes fails.
checknum() {
	eval "_v=\${$1:-}"
	case $_v in
	'') ;;
	*[!0-9]* | 0*)
		echo "bench: $1 must be a positive integer, not '$_v'" >&2
		exit 2
		;;
	esac
}
for v in BENCH_ROUNDS BENCH_PAIRS BENCH_PAIR_PEERS BENCH_TOKENS BENCH_VARY_TOKENS \
	BENCH_CHURN_STEPS BENCH_ENGINE_TOKENS BENCH_SCALE_ROUNDS BENCH_SCALE_FILE_GIB \
	BENCH_SCALE_ANON_GIB; do
	checknum $v
done
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
cg_n=50000                   # callgrind: instructions of 2N steps less those of N
dargs="--tokens $tokens --layers $layers --warmup $warmup"
# The varying-size loop: its steady state is the second half of the run
# (late tokens: a size-class allocator keeps meeting new sizes for a while).
# 2 layers a token keep a run of the slowest allocator near 4 s.
vtokens=${BENCH_VARY_TOKENS:-32}
vlayers=2
vwarmup=$((vtokens / 2))
vargs="--vary --tokens $vtokens --layers $vlayers --warmup $vwarmup"
# Its steady state (16 tokens at the default) lasts about 130 ms, and one
# round's ratio to the floor reads the machine's swing of the moment
# (0.72-1.33x in ten rounds of one build): the floor and the shims, where
# the targets are judged, run three times as many rounds (a run takes about
# a second) as the other allocators.
vrounds=$((rounds * 3))
churn_steps=${BENCH_CHURN_STEPS:-2000}
engine_tokens=${BENCH_ENGINE_TOKENS:-24} # table 6: see engine_args
# where bench/engine runs PyTorch and numpy (its ENGINE_PIN), for the caption
if [ "${ENGINE_PIN:-yes}" != no ] && [ "${ENGINE_THREADS:-1}" = 1 ]; then
	engine_pin="pinned to one CPU as PyTorch's CPU guides run them"
else
	engine_pin="where the scheduler put them (ENGINE_PIN=no or more threads)"
fi
prounds=${BENCH_PAIRS:-$((rounds * 2))} # table 6: the shim and the best peers in adjacent runs
pair_peers=${BENCH_PAIR_PEERS:-2}       # table 6: with how many of the rounds' best peers
# The audit at scale: a host of BENCH_SCALE_FILE_GIB of file mapping and
# BENCH_SCALE_ANON_GIB of anonymous memory (about 12.5 GiB of memory in all).
scale_file_gib=${BENCH_SCALE_FILE_GIB:-8}
scale_anon_gib=${BENCH_SCALE_ANON_GIB:-4}
scale_rounds=${BENCH_SCALE_ROUNDS:-3}
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
start=$(date +%s)
python=${PYTHON:-python3}
reporter=$(dirname "$0")/report.py
if ! command -v "$python" >/dev/null 2>&1; then
	echo "bench: $python not found: bench/report.py prints the tables (set PYTHON)" >&2
	exit 1
fi
RES=${BENCH_RESULTS:-$top/bench/results/$(date +%Y%m%d-%H%M%S).txt}
mkdir -p "$(dirname "$RES")" || exit 1
: >"$RES" || exit 1

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
shim_tc=$top/preload/.libs/libscratch-preload-tcmalloc.so
shim_mi=$top/preload/.libs/libscratch-preload-mimalloc.so
forward=$top/bench/.libs/libforward.so
forward_je=$top/bench/.libs/libforward-jemalloc.so
forward_tc=$top/bench/.libs/libforward-tcmalloc.so
forward_mi=$top/bench/.libs/libforward-mimalloc.so
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
	shim-tcmalloc) echo "LD_PRELOAD=$shim_tc SCRATCH_RUNTIME_DIR=$RUN" ;;
	shim-mimalloc) echo "LD_PRELOAD=$shim_mi SCRATCH_RUNTIME_DIR=$RUN" ;;
	forward) echo "LD_PRELOAD=$forward" ;;
	forward-jemalloc) echo "LD_PRELOAD=$forward_je:$je" ;;
	forward-tcmalloc) echo "LD_PRELOAD=$forward_tc:$tc" ;;
	forward-mimalloc) echo "LD_PRELOAD=$forward_mi:$mi" ;;
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
	shim-tcmalloc) [ -e "$shim_tc" ] || echo "not built (no tcmalloc development files)" ;;
	shim-mimalloc) [ -e "$shim_mi" ] || echo "not built (no mimalloc development files)" ;;
	forward) [ -e "$forward" ] || echo "not built" ;;
	forward-jemalloc)
		if [ -z "$je" ]; then echo "jemalloc not installed"; elif [ ! -e "$forward_je" ]; then echo "not built"; fi
		;;
	forward-tcmalloc)
		if [ -z "$tc" ]; then echo "tcmalloc not installed"; elif [ ! -e "$forward_tc" ]; then echo "not built"; fi
		;;
	forward-mimalloc)
		if [ -z "$mi" ]; then echo "mimalloc not installed"; elif [ ! -e "$forward_mi" ]; then echo "not built"; fi
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
	exe=$top/bench/$prog
	[ -x "$exe" ] || exe=$src/bench/$prog # a script (bench/engine)
	if out=$(env -u LD_PRELOAD -u MALLOC_CONF -u SCRATCH_CONF $(cfg_env "$cfg") \
		$(cfg_wrap "$cfg") "$exe" "$@" 2>"$T/err"); then
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

# report SECTION: print SECTION's caption and tables from the results so far.
report() {
	"$python" "$reporter" --section "$1" "$RES"
}

# The run's settings, for the captions (and the record).
cat >>"$RES" <<EOF
# make bench, $(date -u +%Y-%m-%dT%H:%M:%SZ); bench/report.py THIS-FILE prints its tables
set cpus $(nproc)
set thp $(sed 's/.*\[\(.*\)\].*/\1/' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo unknown)
set kernel $(uname -sr)
set jemalloc $je
set tcmalloc $tc
set mimalloc $mi
set rounds $rounds
set frounds $frounds
set vrounds $vrounds
set srounds $srounds
set mrounds $mrounds
set orounds $orounds
set tokens $tokens
set layers $layers
set warmup $warmup
set vtokens $vtokens
set vlayers $vlayers
set vwarmup $vwarmup
set churn_steps $churn_steps
set scale_rounds $scale_rounds
set pair_size $pair_size
set cg_n $cg_n
set tuned $tuned
set ort_steps $((engine_tokens * 3))
set ort_long_steps $((engine_tokens * 8))
set torch_long_tokens $((engine_tokens * 25 / 2))
set prounds $prounds
set pair_peers $pair_peers
set engine_pin $engine_pin
EOF
report header

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

# Tables 1 and 1v: the floor and every shim build, where the targets are
# judged, get the extra rounds; the comparison allocators (the slow ones in
# table 1v) get $rounds.
decode_fast="floor shim-glibc shim-jemalloc shim-tcmalloc shim-mimalloc shim-glibc-thp"
decode_slow="glibc jemalloc jemalloc-tuned jemalloc-never tcmalloc mimalloc"

bench_decode() {
decode_rounds decode "$dargs" "$frounds" "$decode_fast" "$decode_slow"
report decode
}

bench_vary() {
decode_rounds vary "$vargs" "$vrounds" "$decode_fast" "$decode_slow"
report vary
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
report churn
}

# --- 1r. a buffer grown by realloc -------------------------------------------
bench_grow() {
shuffled_rounds grow "realloc growth" 300 \
	"glibc shim-glibc jemalloc shim-jemalloc tcmalloc mimalloc" grow
report grow
}

# --- 1k. a set of buffers that grows together, freed late by another thread --
bench_kvset() {
shuffled_rounds kvset "K/V set" 600 \
	"glibc shim-glibc jemalloc shim-jemalloc tcmalloc shim-tcmalloc mimalloc shim-mimalloc" kvset
report kvset
}

# --- 1s. fork and exec from a host with big buffers --------------------------
bench_spawn() {
shuffled_rounds spawn "fork and exec" 400 \
	"glibc shim-glibc jemalloc shim-jemalloc tcmalloc mimalloc" spawn
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
report stats
}

# --- 2a. the locality audit's cost on its host --------------------------------
bench_audit() {
paired_rounds audit "audit on/off" shim-glibc shim-glibc-audit
report audit
}

# --- 2b. the whole-process audit at scale -------------------------------------
bench_scale() {
need=$((scale_file_gib + scale_anon_gib + 1))
shm=$(df -P -k /dev/shm 2>/dev/null | awk 'NR == 2 { print int($4 / 1048576) }')
mem=$(awk '$1 == "MemAvailable:" { print int($2 / 1048576) }' /proc/meminfo)
if [ "${shm:-0}" -lt $((scale_file_gib + 1)) ] || [ "${mem:-0}" -lt "$need" ]; then
	echo "scale audit missing needs $need GiB of memory and $((scale_file_gib + 1)) GiB in /dev/shm (has ${mem:-?} and ${shm:-?}; set BENCH_SCALE_FILE_GIB, BENCH_SCALE_ANON_GIB)" >>"$RES"
	report scale
	return
fi
r=1
while [ "$r" -le "$scale_rounds" ]; do
	progress "audit at scale, round $r of $scale_rounds"
	run scale audit audit_scale --scratchstat "$scratchstat" \
		--file-gib "$scale_file_gib" --anon-gib "$scale_anon_gib"
	r=$((r + 1))
done
report scale
}

# --- 3. small-allocation pass-through ----------------------------------------
small_cfgs="glibc shim-glibc forward jemalloc shim-jemalloc forward-jemalloc
	tcmalloc shim-tcmalloc forward-tcmalloc mimalloc shim-mimalloc forward-mimalloc"
bench_small() {
r=1
while [ "$r" -le "$mrounds" ]; do
	progress "small allocations, round $r of $mrounds"
	# A new order each round, so that no configuration always runs first.
	for cfg in $(shuffle $((r + 100)) $small_cfgs); do
		run small "$cfg" small --threads 2 --ops 5000000
	done
	r=$((r + 1))
done
for cfg in $small_cfgs; do
	callgrind_diff small "$cfg" $cg_n small --threads 1
done
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
pair_cfgs="shim-glibc shim-jemalloc shim-tcmalloc shim-mimalloc glibc jemalloc"
bench_pair() {
r=1
while [ "$r" -le "$srounds" ]; do
	progress "pooled pair, round $r of $srounds"
	for cfg in $pair_cfgs; do
		run pair "$cfg" pair --size $pair_size --pairs 2000000
	done
	r=$((r + 1))
done

for cfg in $pair_cfgs; do
	callgrind_diff pair "$cfg" $cg_n pair --size $pair_size
done
report pair
}

# --- 5. programs that print their own tables ---------------------------------
# Their output goes to the results file ("out PROGRAM LINE"), and their exit
# status ("program PROGRAM STATUS").
# --- 6. real engines -----------------------------------------------------------
# Engines users run, each under every allocator: eager PyTorch decoding
# (Debian's python3-torch) at batch 1 and 4, numpy temporaries
# (python3-numpy), and an ONNX Runtime decode loop (onnxruntime-node from
# npm, installed into the build tree on first use, over the same decoder
# exported by PyTorch). bench/engine runs one and prints its figures.
engine_cfgs="glibc jemalloc jemalloc-tuned tcmalloc mimalloc
	shim-glibc shim-jemalloc shim-tcmalloc shim-mimalloc"
engine_py=${ENGINE_PYTHON:-/usr/bin/python3}
ort_version=1.31.1
ort_dir=$top/bench/engines

# engines_ready: which engines can run here; "TABLE missing WHY" for the
# others, and the ONNX model exported for the one that needs it.
engines_ready() {
	engines=
	if "$engine_py" -c 'import torch' 2>/dev/null; then
		engines="torch-b1 torch-b4 torch-b1-long"
	else
		why_torch="$engine_py has no torch (python3-torch)"
	fi
	if "$engine_py" -c 'import numpy' 2>/dev/null; then
		engines="$engines numpy"
	else
		why_numpy="$engine_py has no numpy (python3-numpy)"
	fi
	why_ort=
	if ! command -v node >/dev/null 2>&1; then
		why_ort="node not found"
	elif [ ! -d "$ort_dir/node_modules/onnxruntime-node" ]; then
		if command -v npm >/dev/null 2>&1 && [ "${BENCH_NPM:-yes}" != no ]; then
			progress "installing onnxruntime-node@$ort_version from npm into $ort_dir"
			# --ignore-scripts: its install script fetches GPU providers
			# (nuget.org), which the CPU build does not need.
			mkdir -p "$ort_dir" && npm install --prefix "$ort_dir" --no-save --no-audit \
				--no-fund --ignore-scripts "onnxruntime-node@$ort_version" >"$T/npm.log" 2>&1 ||
				why_ort="npm install onnxruntime-node failed: $(tail -n 1 "$T/npm.log")"
		else
			why_ort="onnxruntime-node not installed (npm; BENCH_NPM=no)"
		fi
	fi
	if [ -z "$why_ort" ] && [ -z "${why_torch:-}" ]; then
		progress "exporting the decoder to ONNX"
		"$engine_py" "$src/bench/engines/onnx_export.py" "$T/decoder.onnx" >"$T/export.log" 2>&1 ||
			why_ort="the ONNX export failed: $(tail -n 1 "$T/export.log")"
	elif [ -z "$why_ort" ]; then
		why_ort="the model is exported by torch: ${why_torch:-}"
	fi
	[ -n "$why_ort" ] || engines="$engines ort-b4 ort-b4-long"
	for cfg in $engine_cfgs; do
		[ -z "${why_torch:-}" ] || echo "engine-torch-b1 $cfg missing $why_torch" >>"$RES"
		[ -z "${why_torch:-}" ] || echo "engine-torch-b4 $cfg missing $why_torch" >>"$RES"
		[ -z "${why_torch:-}" ] || echo "engine-torch-b1-long $cfg missing $why_torch" >>"$RES"
		[ -z "${why_numpy:-}" ] || echo "engine-numpy $cfg missing $why_numpy" >>"$RES"
		[ -z "$why_ort" ] || echo "engine-ort-b4 $cfg missing $why_ort" >>"$RES"
		[ -z "$why_ort" ] || echo "engine-ort-b4-long $cfg missing $why_ort" >>"$RES"
	done
}

# engine_args ENGINE: bench/engine's arguments for one engine.
engine_args() {
	case $1 in
	torch-b1) echo "torch 1 $engine_tokens 8" ;;
	torch-b4) echo "torch 4 $((engine_tokens * 3 / 4)) 6" ;;
	# a context users decode to: 300 tokens, the K/V of each layer past
	# 600 KiB, where glibc alone trims and regrows its heap and maps and
	# unmaps K/V every step (230-260 faults a step, against 4-26 for the
	# others)
	torch-b1-long) echo "torch 1 $((engine_tokens * 25 / 2)) $engine_tokens" ;;
	numpy) echo "numpy $((engine_tokens * 2 / 3)) 4" ;;
	ort-b4) echo "ort $T/decoder.onnx 4 $((engine_tokens * 3)) 8" ;;
	# the same loop eight times as long: its K/V past 2 MiB, the live set
	# settled after the first steps (at 72 steps it still grows in them)
	ort-b4-long) echo "ort $T/decoder.onnx 4 $((engine_tokens * 8)) 8" ;;
	esac
}

bench_engines() {
ENGINE_PYTHON=$engine_py
NODE_PATH=$ort_dir/node_modules
export ENGINE_PYTHON NODE_PATH
engines_ready
r=1
while [ "$r" -le "$rounds" ]; do
	for eng in $engines; do
		progress "real engines, $eng, round $r of $rounds"
		# shellcheck disable=SC2046 # the arguments split on purpose
		for cfg in $(shuffle $((r + 500)) $engine_cfgs); do
			run "engine-$eng" "$cfg" engine $(engine_args "$eng")
		done
	done
	r=$((r + 1))
done
# Then the shim on glibc beside each engine's best $pair_peers peers of
# those rounds, one after the other, in $prounds pairs of adjacent runs
# each, the shim first in odd pairs and the peer in even ones. A round runs
# nine configurations over minutes, and this machine's speed drifts by 20%
# over minutes: a ratio between adjacent runs says more than one between
# runs a round apart. More than one peer, as the rounds' best is the one
# whose noise was highest, and on PyTorch it changes from run to run.
for eng in $engines; do
	n=0
	for peer in $("$python" "$reporter" --peers "engine-$eng" "$RES"); do
		[ "$n" -lt "$pair_peers" ] || break
		n=$((n + 1))
		ptable=pairs-$eng
		[ "$n" -eq 1 ] || ptable=pairs$n-$eng
		i=1
		while [ "$i" -le "$prounds" ]; do
			progress "real engines, $eng, the shim beside $peer, pair $i of $prounds"
			order="shim-glibc $peer"
			[ $((i % 2)) -eq 0 ] && order="$peer shim-glibc"
			for cfg in $order; do
				# shellcheck disable=SC2046 # the arguments split on purpose
				run "$ptable" "$cfg" engine $(engine_args "$eng")
			done
			i=$((i + 1))
		done
	done
done
report engines
}

bench_programs() {
for prog in ${BENCH_PROGRAMS:-}; do
	progress "$prog"
	"$top/$prog" >"$T/out"
	st=$?
	awk -v p="$prog" '{ print "out", p, $0 }' "$T/out" >>"$RES"
	echo "program $prog $st" >>"$RES"
done
report programs
}

# BENCH_ONLY="small pair" runs only those tables (decode vary churn grow kvset
# spawn stats audit scale small pair engines programs), for quick iterations on
# one part.
for section in ${BENCH_ONLY:-decode vary churn grow kvset spawn stats audit scale small pair engines programs}; do
	case $section in
	decode | vary | churn | grow | kvset | spawn | stats | audit | scale | small | pair | engines | programs)
		"bench_$section" ;;
	*) echo "bench: BENCH_ONLY: unknown section '$section'" >&2 ;;
	esac
done

echo
echo "make bench: done in $(($(date +%s) - start)) s"
echo "results: $RES ($reporter prints their tables again)"
