#!/usr/bin/env python3
"""bench/report.py - the tables of `make bench`, from the results bench/run.sh wrote.

    bench/report.py [--section NAME]... [--table TABLE] RESULTS
    bench/report.py --best-peer ENGINE-TABLE RESULTS
    bench/report.py --peers ENGINE-TABLE RESULTS

With RESULTS alone it prints everything the run printed on its standard output:
the header, then each section the file holds, in the order they ran.
--section prints one section (header, decode, vary, churn, grow, kvset, spawn,
stats, audit, scale, small, pair, engines, programs) with its caption; run.sh calls it
so after each section's rounds. --table prints one table alone, without its
caption (decode-default, decode-main-alloc, vary-default, vary-main-alloc,
churn, grow, kvset, spawn, stats, audit, scale, small, pair, engine-torch-b1,
engine-torch-b4, engine-torch-b1-long, engine-numpy, engine-ort-b4, engine-ort-b4-long).
--best-peer prints the comparison allocator with the best median rate in one
engine table (an engine-* name above), or an empty line; --peers prints every
comparison allocator measured in it, the best median rate first. run.sh runs
the shim beside the first BENCH_PAIR_PEERS of them in alternated pairs (the
pairs-* tables for the best, pairs2-* for the second and so on, printed under
the engine's).

The results file holds one record a line:
    # TEXT                      a comment
    set NAME VALUE              a setting of the run (rounds, sizes, the machine);
                                VALUE is the rest of the line
    TABLE CFG KEY VALUE         one figure of one run of configuration CFG
    TABLE CFG missing WHY       CFG cannot run here
    TABLE CFG failed WHY        a run of CFG failed (its figures are not shown)
    out PROGRAM TEXT            a line a self-reporting program printed
    program PROGRAM STATUS      that program's exit status
A figure recorded more than once (one per round) is summarised over its rounds.

The tables were an awk program inside run.sh (mawk on Debian). The figures follow
awk's rules, so that the same results print the same bytes: a ratio is kept as
its 6 significant digits (awk's CONVFMT) before the median over the rounds; a
missing figure counts as 0 in arithmetic and as the empty string in comparisons;
0/0 is -nan, x/0 is inf, and NaN compares equal to everything (as mawk does).
"""

import math
import os
import re
import string
import sys

# --- awk's values and arithmetic ---------------------------------------------
# A value is a float (an awk number) or a str (an awk string: a figure as
# recorded, or "" for none).

MAX_INT = 2147483647  # mawk prints integral numbers up to this as integers

_STRTOD = re.compile(
    r"[ \t\n\v\f\r]*([+-]?)(?:(0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)"
    r"(?:[pP][+-]?[0-9]+)?)|((?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)"
    r"|(inf(?:inity)?)|(nan(?:\([0-9A-Za-z_]*\))?))",
    re.IGNORECASE,
)


def num(v):
    """The number awk reads in v: the longest prefix strtod accepts, else 0."""
    if not isinstance(v, str):
        return float(v)
    m = _STRTOD.match(v)
    if not m:
        return 0.0
    sign, hexa, dec, inf, nan = m.groups()
    if hexa is not None:
        x = float.fromhex(hexa)
    elif dec is not None:
        x = float(dec)
    elif inf is not None:
        x = math.inf
    else:
        x = math.nan
    return -x if sign == "-" else x


def _nan_text(spec, x):
    """printf of a NaN as glibc writes it: the sign bit shows as "-nan"."""
    flags, width = spec
    if math.copysign(1.0, x) < 0:
        sign = "-"
    else:
        sign = "+" if "+" in flags else " " if " " in flags else ""
    text = sign + "nan"
    return text.ljust(width) if "-" in flags else text.rjust(width)


_SPEC = re.compile(r"%([-+ #0]*)(\d*)(?:\.(\d+))?([sdfg%])")


def sprintf(fmt, *args):
    """awk's sprintf for the conversions the tables use (%s %d %f %g %%)."""
    out = []
    pos = 0
    args = list(args)
    for m in _SPEC.finditer(fmt):
        out.append(fmt[pos : m.start()])
        pos = m.end()
        flags, width, prec, conv = m.groups()
        if conv == "%":
            out.append("%")
            continue
        arg = args.pop(0)
        spec = "%" + flags + width + ("." + prec if prec is not None else "") + conv
        if conv == "s":
            out.append(spec % to_str(arg))
        elif conv == "d":
            x = num(arg)
            # mawk's conversion to an integer: clamped, NaN as -MAX_INT
            n = MAX_INT if x >= MAX_INT else int(x) if x > -MAX_INT else -MAX_INT
            out.append(spec % n)
        else:
            x = num(arg)
            if math.isnan(x):
                out.append(_nan_text((flags, int(width or 0)), x))
            else:
                out.append(spec % x)
    out.append(fmt[pos:])
    return "".join(out)


def to_str(v):
    """awk's conversion of a number to a string (CONVFMT "%.6g", integers whole)."""
    if isinstance(v, str):
        return v
    if math.isfinite(v) and v == int(v) and -MAX_INT <= v <= MAX_INT:
        return "%d" % int(v)
    return sprintf("%.6g", v)


def cmp(a, b):
    """awk's comparison: numeric for two numbers (NaN equal to all, as in
    mawk), else of the two as strings."""
    if isinstance(a, float) and isinstance(b, float):
        return (a > b) - (a < b)
    a, b = to_str(a), to_str(b)
    return (a > b) - (a < b)


def div(a, b):
    """a / b in IEEE arithmetic, as awk divides: no error on a zero divisor."""
    a, b = num(a), num(b)
    if b != 0:
        return a / b
    if math.isnan(a):
        return a
    if a == 0:
        return -math.nan  # the x86 default NaN has its sign bit set
    return math.copysign(math.inf, a) * math.copysign(1.0, b)


def sqrt(x):
    if x < 0:
        return -math.nan
    return math.sqrt(x)


def split(s):
    """awk's split(s, a, " "): the words of s."""
    return [w for w in re.split(r"[ \t\n]+", s) if w]


def verdict(ok):
    return "ok" if ok else "MISS"


def mark(on, ok):
    return verdict(ok) if on else ""


def xfmt(x):
    return "-" if x == "" else sprintf("%.2fx", x)


# --- the results -------------------------------------------------------------

SECTIONS = [
    "decode", "vary", "churn", "grow", "kvset", "spawn", "stats", "audit", "scale", "small",
    "pair",
    "engines",
    "programs"
]
TABLES = {
    "decode-default": "decode",
    "decode-main-alloc": "decode",
    "vary-default": "vary",
    "vary-main-alloc": "vary",
    "churn": "churn",
    "grow": "grow",
    "kvset": "kvset",
    "spawn": "spawn",
    "stats": "stats",
    "audit": "audit",
    "scale": "scale",
    "small": "small",
    "pair": "pair",
    "engine-torch-b1": "engines",
    "engine-torch-b4": "engines",
    "engine-torch-b1-long": "engines",
    "engine-numpy": "engines",
    "engine-ort-b4": "engines",
    "engine-ort-b4-long": "engines",
}
ENGINES = [("engine-torch-b1", "PyTorch decode, batch 1", "tok_s", "cpu_tok_ms", "tokens/s"),
           ("engine-torch-b4", "PyTorch decode, batch 4", "tok_s", "cpu_tok_ms", "tokens/s"),
           ("engine-torch-b1-long", "PyTorch decode, batch 1, a longer decode", "tok_s",
            "cpu_tok_ms", "tokens/s"),
           ("engine-numpy", "numpy temporaries", "it_s", "cpu_it_ms", "iterations/s"),
           ("engine-ort-b4", "ONNX Runtime decode, batch 4", "tok_s", "cpu_tok_ms", "tokens/s"),
           ("engine-ort-b4-long", "ONNX Runtime decode, batch 4, a longer decode", "tok_s",
            "cpu_tok_ms", "tokens/s")]
PAIR_PEERS_MAX = 6  # pairs tables an engine may have: one per comparison allocator


def pairs_table(engine, n):
    """run.sh's table of the shim's pairs with engine table engine's n-th
    best peer: pairs-ENGINE for the best, pairs2-ENGINE for the next..."""
    e = engine[len("engine-"):]
    return "pairs-" + e if n == 1 else "pairs%d-%s" % (n, e)


for _e in ENGINES:
    for _n in range(1, PAIR_PEERS_MAX + 1):
        TABLES[pairs_table(_e[0], _n)] = "engines"
ENGINE_CFGS = ["glibc", "jemalloc", "jemalloc-tuned", "tcmalloc", "mimalloc", "shim-glibc",
               "shim-jemalloc", "shim-tcmalloc", "shim-mimalloc"]
PEERS = ["glibc", "jemalloc", "jemalloc-tuned", "jemalloc-never", "tcmalloc", "mimalloc"]


class Results:
    """The records of one results file, and the figures over their rounds."""

    def __init__(self, text):
        self.settings = {}
        self.vals = {}  # (table, cfg, key) -> the figures of the rounds, as one string
        self.seen = set()  # (table, cfg) with at least one figure
        self.why = {}  # (table, cfg) -> why it has no figure
        self.programs = {}  # program -> [lines printed, exit status]
        self.sections = []  # in the order they ran
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        for line in lines:
            self._record(line)

    def _section(self, name):
        if name is not None and name not in self.sections:
            self.sections.append(name)

    def _record(self, line):
        kind, _, rest = line.partition(" ")
        if kind == "#":
            return
        if kind == "set":
            name, _, value = rest.partition(" ")
            self.settings[name] = value
            return
        if kind in ("out", "program"):
            prog, _, value = rest.partition(" ")
            p = self.programs.setdefault(prog, [[], "0"])
            if kind == "out":
                p[0].append(value)
            else:
                p[1] = value
            self._section("programs")
            return
        f = split(line) + ["", "", "", ""]
        t, c, k = f[0], f[1], f[2]
        self._section(TABLES.get(t))
        if k in ("missing", "failed"):
            words = split(line)[3:]
            self.why[t, c] = ("" if k == "missing" else "failed: ") + " ".join(words)
            return
        key = (t, c, k)
        self.vals[key] = (self.vals[key] + " " if key in self.vals else "") + f[3]
        self.seen.add((t, c))

    def status(self, t, c):
        """"" when c has figures in table t, else why not."""
        if (t, c) in self.why:
            return self.why[t, c]
        if (t, c) not in self.seen:
            return "no result"
        return ""

    def sorted_figures(self, t, c, k):
        """The figures of k, sorted as the awk sorted them (by insertion)."""
        a = split(self.vals.get((t, c, k), ""))
        for i in range(1, len(a)):
            x = num(a[i])
            j = i - 1
            while j >= 0 and cmp(num(a[j]), x) > 0:
                a[j + 1] = a[j]
                j -= 1
            a[j + 1] = x
        return a

    def median(self, t, c, k):
        """The median of k over the rounds, or "" when there is none."""
        if self.vals.get((t, c, k), "") == "":
            return ""
        a = self.sorted_figures(t, c, k)
        n = len(a)
        if n == 0:
            return ""
        if n % 2:
            return num(a[(n + 1) // 2 - 1])
        return (num(a[n // 2 - 1]) + num(a[n // 2])) / 2

    def best(self, t, c, k):
        """The smallest figure over the rounds. For the nanosecond
        microbenchmarks: noise (other processes, a stolen vCPU) only ever adds
        time, so the best round is the closest to the real cost."""
        a = split(self.vals.get((t, c, k), ""))
        if not a:
            return ""
        m = num(a[0])
        for v in a[1:]:
            if cmp(num(v), m) < 0:
                m = num(v)
        return m

    def quartile(self, t, c, k, q):
        """The q-th quartile (1 or 3) of the figures."""
        a = self.sorted_figures(t, c, k)
        if not a:
            return ""
        return num(a[int((len(a) - 1) * q / 4)])

    def rmedian(self, t, c1, c2, k):
        """The median over rounds of the figure of c1 divided by that of c2 in
        the same round. Runs of one round are close in time, so their ratio
        drifts less with the load of the machine than a ratio of medians."""
        a1 = split(self.vals.get((t, c1, k), ""))
        a2 = split(self.vals.get((t, c2, k), ""))
        n = min(len(a1), len(a2))
        if n == 0:
            return ""
        r = [to_str(div(a1[i], a2[i])) for i in range(n)]
        self.vals[t, c1 + "/" + c2, k] = " ".join(r)
        return self.median(t, c1 + "/" + c2, k)

    def rpaired(self, t, c1, c2, k):
        """rmedian for rounds run in alternating order (c1 first in odd rounds,
        c2 first in even ones). Each pair of rounds gives one ratio, the
        geometric mean of its two, so the advantage the second run of a round
        has on this machine cancels within the pair; the median is over the
        pairs."""
        a1 = split(self.vals.get((t, c1, k), ""))
        a2 = split(self.vals.get((t, c2, k), ""))
        n = min(len(a1), len(a2))
        if n < 2:
            return ""
        r = [
            to_str(sqrt(div(a1[i], a2[i]) * div(a1[i + 1], a2[i + 1])))
            for i in range(0, n - 1, 2)
        ]
        self.vals[t, c1 + "//" + c2, k] = " ".join(r)
        return self.median(t, c1 + "//" + c2, k)

    def best_peer(self, t, k, lowest=False):
        """Of the comparison allocators measured in table t, the one with the
        highest median k (with lowest, the lowest: a time); "" when none."""
        peers = self.peers_by(t, k, lowest)
        return peers[0] if peers else ""

    def peers_by(self, t, k, lowest=False):
        """The comparison allocators measured in table t, the highest median
        k first (with lowest, the lowest first); on a tie, PEERS' order."""
        left = [p for p in PEERS if self.status(t, p) == ""]
        out = []
        while left:
            b = left[0]
            for p in left[1:]:
                if cmp(self.median(t, p, k), self.median(t, b, k)) * (-1 if lowest else 1) > 0:
                    b = p
            out.append(b)
            left.remove(b)
        return out


# --- the tables --------------------------------------------------------------

CNAMES = {
    "floor": "floor (prealloc)",
    "glibc": "glibc",
    "jemalloc": "jemalloc",
    "jemalloc-tuned": "jemalloc tuned",
    "jemalloc-never": "jemalloc tuned -1",
    "tcmalloc": "tcmalloc",
    "mimalloc": "mimalloc",
    "shim-glibc": "shim on glibc",
    "shim-jemalloc": "shim on jemalloc",
    "shim-tcmalloc": "shim on tcmalloc",
    "shim-mimalloc": "shim on mimalloc",
    "shim-glibc-thp": "shim, thp:true",
}
SHIMS = ["shim-glibc", "shim-jemalloc", "shim-tcmalloc", "shim-mimalloc"]
DECODE_CFGS = ["floor"] + PEERS + SHIMS + ["shim-glibc-thp"]


# Student's t, two-sided 95%, by degrees of freedom (1-30); beyond, 1.96.
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
        2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
        2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def ratio_interval(ratios):
    """The geometric mean of ratios (paired runs' ratios, all positive) and
    the 95% interval of it that Student's t gives on their logarithms, as
    (mean, lo, hi); None for fewer than two, or any not positive."""
    if len(ratios) < 2 or any(not x > 0 for x in ratios):
        return None
    lg = [math.log(x) for x in ratios]
    n = len(lg)
    m = sum(lg) / n
    sd = math.sqrt(sum((v - m) ** 2 for v in lg) / (n - 1))
    half = (T975[n - 2] if n - 1 <= len(T975) else 1.96) * sd / math.sqrt(n)
    return math.exp(m), math.exp(m - half), math.exp(m + half)


def cname(c):
    """The name of configuration c in the tables."""
    return CNAMES.get(c, c)


class Printer:
    def __init__(self, res, write):
        self.r = res
        self.write = write

    def printf(self, fmt, *args):
        self.write(sprintf(fmt, *args))

    def unmeasured(self, t, c, name):
        """True when c has no figure in table t, after printing why on its row
        (nothing when it never ran)."""
        st = self.r.status(t, c)
        if st == "no result":
            return True
        if st != "":
            self.printf("  %-17s %s\n", name, st)
        return st != ""

    def decode_table(self, t):
        """One row per configuration measured in table t (rows with no result
        at all are left out), each figure beside its target on the shim rows;
        then what part of each whole-run gap is first touch."""
        r = self.r
        fl = r.status(t, "floor") == ""
        frss = r.median(t, "floor", "peak_rss_kib") if fl else ""
        bw = r.best_peer(t, "tokens_per_s")
        bs = r.best_peer(t, "steady_tokens_per_s")
        f = "  %-17s %8s %7s %7s %-4s %7s %-4s %7s %7s %9s %9s %-4s %7s %8s %-4s %6s %7s %6s\n"
        self.printf(f, "", "whole", "whole", "whole", "", "steady", "", "steady", "steady",
                    "faults/", "refaults/", "", "peak", "peak", "", "token", "warm-up", "hot")
        self.printf(f, "", "run", "run", "run x", "", "x floor", "", "x best", "by CPU",
                    "token", "token", "", "RSS", "RSS x", "", "0", "excess", "set")
        self.printf(f, "allocator", "tokens/s", "x floor", "best", "", "", "", "peer",
                    "x floor", "steady", "steady", "", "MiB", "floor", "", "ms", "ms", "MiB")
        self.printf(f, "", "", "", "(>1)", "", "(>=.97)", "", "", "", "", "(0)", "", "",
                    "(<=1.25)", "", "", "", "")
        for c in DECODE_CFGS:
            if self.unmeasured(t, c, cname(c)):
                continue
            shim = c.startswith("shim")
            xf = r.rmedian(t, c, "floor", "tokens_per_s") if fl else ""
            xs = r.rmedian(t, c, "floor", "steady_tokens_per_s") if fl else ""
            xb = r.rmedian(t, c, bw, "tokens_per_s") if bw != "" else ""
            xsb = r.rmedian(t, c, bs, "steady_tokens_per_s") if bs != "" else ""
            xc = r.rmedian(t, "floor", c, "steady_cpu_ms_per_token") if fl else ""
            fs = r.median(t, c, "steady_faults_per_token")
            rf = r.median(t, c, "steady_refaults_per_token")  # "" in runs before it
            rss = r.median(t, c, "peak_rss_kib")
            t1 = r.median(t, c, "first_token_ms")
            ex = r.median(t, c, "warmup_excess_ms")
            hot = r.median(t, c, "steady_hot_mib")
            self.printf(
                f, cname(c), sprintf("%.2f", r.median(t, c, "tokens_per_s")), xfmt(xf),
                xfmt(xb), mark(shim and xb != "", cmp(xb, 1.0) > 0), xfmt(xs),
                mark(shim and xs != "", cmp(xs, 0.97) >= 0), xfmt(xsb), xfmt(xc),
                sprintf("%.2f", fs), "-" if rf == "" else sprintf("%.2f", rf),
                mark(shim and rf != "", cmp(rf, 0.05) < 0), sprintf("%.1f", div(rss, 1024)),
                "-" if frss == "" else xfmt(div(rss, frss)),
                mark(shim and frss != "", cmp(rss, 1.25 * num(frss)) <= 0),
                "-" if t1 == "" else sprintf("%.0f", t1), "-" if ex == "" else sprintf("%.0f", ex),
                "-" if hot == "" else sprintf("%.0f", hot))
        self.printf("  best peer: %s over the whole run, %s in the steady state.\n",
                    "none measured" if bw == "" else cname(bw),
                    "none measured" if bs == "" else cname(bs))
        self.first_touch(t, bw)

    def first_touch(self, t, bw):
        """The whole-run gap of each shim (and of the best peer bw) to the
        floor, split into the warm-up excess (what the warm-up tokens took
        beyond the steady rate of the same run, less the same for the floor:
        first touch and growth) and the rest (the steady-state speed), beside
        the pre-fault the floor did before its timer."""
        r = self.r
        if r.status(t, "floor") != "":
            return
        tf = num(r.median(t, "floor", "seconds")) * 1000
        pf = r.median(t, "floor", "prefault_ms")
        ef = r.median(t, "floor", "warmup_excess_ms")
        self.printf("  First touch: the floor pre-faulted its buffers in %.0f ms before its timer, "
                    "against a whole\n", pf)
        self.printf("  run of %.0f ms; paid inside the timer, that would have put it at %.2fx its "
                    "figure. The\n", tf, div(tf, tf + num(pf)))
        self.printf("  whole-run gap to the floor (medians of the runs) and its parts; the floor "
                    "spent %.0f ms of\n", r.median(t, "floor", "sys_ms"))
        self.printf("  kernel CPU time in its whole run (%.0f faults in its warm-up). Kernel time "
                    "here is page\n", r.median(t, "floor", "warmup_faults"))
        self.printf("  faults, first touch; a run that still faults in its steady state pays that "
                    "in the steady part:\n")
        for c in split("shim-glibc shim-jemalloc shim-glibc-thp " + bw):
            if r.status(t, c) != "":
                continue
            tc = num(r.median(t, c, "seconds")) * 1000
            gap = tc - tf
            ex = num(r.median(t, c, "warmup_excess_ms")) - num(ef)
            self.printf("    %-26s %6.0f ms %+6.0f ms: warm-up excess %+6.0f ms, steady state "
                        "%+6.0f ms;\n", cname(c) + " (best peer)" if c == bw else cname(c), tc,
                        gap, ex, gap - ex)
            self.printf("    %-26s kernel CPU time (all threads) %.0f ms in the warm-up (%.0f "
                        "faults), %.0f ms in all;\n", "", r.median(t, c, "warmup_sys_ms"),
                        r.median(t, c, "warmup_faults"), r.median(t, c, "sys_ms"))
            self.printf("    %-26s against the floor with its pre-fault counted: %.2fx\n", "",
                        div(tf + num(pf), tc))
            self.quiet_tokens(t, c)

    def quiet_tokens(self, t, c):
        """How many of c's steady tokens faulted (a lazy allocator's new maxima
        land there: a layer that needs more large blocks at once than any
        before, a draw larger than its block ever held), and the others' rate
        against the floor's steady rate, round by round. Runs recorded before
        decode printed these figures have no such line."""
        r = self.r
        nf = r.median(t, c, "steady_faulting_tokens")
        if nf == "":
            return
        steady = num(r.median(t, c, "tokens")) - num(r.median(t, c, "warmup"))
        xq = r.rmedian(t, c, "floor", "steady_quiet_tokens_per_s") if nf < steady else ""
        self.printf("    %-26s steady tokens that faulted: %s of %.0f; the others at %s the "
                    "floor's steady rate\n", "", sprintf("%g", nf), steady,
                    "(none)" if xq == "" else xfmt(xq))

    def churn_table(self, t):
        """Each shim against its backend alone on bench/churn; peak RSS judged
        against glibc's alone for both shims (DESIGN.md's revised target)."""
        r = self.r
        rows = [("glibc", "glibc alone", "-"), ("shim-glibc", "shim on glibc", "glibc"),
                ("shim-glibc-thp", "shim, thp:true", "glibc"), ("jemalloc", "jemalloc alone", "-"),
                ("shim-jemalloc", "shim on jemalloc", "jemalloc"), ("tcmalloc", "tcmalloc", "-")]
        f = "  %-17s %9s %9s %-4s %10s %9s %9s %9s %-4s %9s %8s\n"
        self.printf(f, "", "steps/s", "speed x", "", "faults/", "peak RSS", "RSS x", "RSS x", "",
                    "live set", "RSS x")
        self.printf(f, "allocator", "", "backend", "", "step", "MiB", "backend", "glibc", "",
                    "peak MiB", "live")
        self.printf(f, "", "", "(>=1.00)", "", "", "", "", "(<=1.10)", "", "", "")
        glibc_ok = r.status(t, "glibc") == ""
        for c, name, b in rows:
            if self.unmeasured(t, c, name):
                continue
            sp = r.median(t, c, "steps_per_s")
            rss = r.median(t, c, "peak_rss_kib")
            live = r.median(t, c, "live_peak_kib")
            x = xr = xg = ""
            if b != "-" and r.status(t, b) == "":
                x = r.rmedian(t, c, b, "steps_per_s")
                xr = r.rmedian(t, c, b, "peak_rss_kib")
            if b != "-" and glibc_ok:
                xg = r.rmedian(t, c, "glibc", "peak_rss_kib")
            self.printf(f, name, sprintf("%.0f", sp), xfmt(x), mark(x != "", cmp(x, 1.0) >= 0),
                        sprintf("%.1f", r.median(t, c, "faults_per_step")),
                        sprintf("%.1f", div(rss, 1024)), xfmt(xr), xfmt(xg),
                        mark(xg != "", cmp(xg, 1.1) <= 0), sprintf("%.1f", div(live, 1024)),
                        xfmt(div(rss, live)))

    # grow and spawn: each shim against its backend alone, and the others
    BACKENDS = [("glibc", "glibc alone", "-"), ("shim-glibc", "shim on glibc", "glibc"),
                ("jemalloc", "jemalloc alone", "-"),
                ("shim-jemalloc", "shim on jemalloc", "jemalloc"),
                ("tcmalloc", "tcmalloc", "-"), ("mimalloc", "mimalloc", "-")]

    def spawn_table(self, t):
        """Fork and exec from a host with big buffers."""
        r = self.r
        f = "  %-17s %10s %10s %12s %10s\n"
        self.printf(f, "", "fork", "fork x", "fork+exec", "fork+exec")
        self.printf(f, "allocator", "us", "backend", "us", "x backend")
        for c, name, b in self.BACKENDS:
            if self.unmeasured(t, c, name):
                continue
            x = y = ""
            if b != "-" and r.status(t, b) == "":
                x = r.rmedian(t, c, b, "fork_us")
                y = r.rmedian(t, c, b, "exec_us")
            self.printf(f, name, sprintf("%.0f", r.median(t, c, "fork_us")),
                        "" if x == "" else sprintf("%.2fx", x),
                        sprintf("%.0f", r.median(t, c, "exec_us")),
                        "" if y == "" else sprintf("%.2fx", y))

    def grow_table(self, t):
        """A buffer grown by realloc, each shim against its backend."""
        r = self.r
        f = "  %-17s %12s %12s %10s %10s %9s\n"
        self.printf(f, "", "us per", "realloc x", "faults/", "whole run", "peak RSS")
        self.printf(f, "allocator", "realloc", "backend", "realloc", "s", "MiB")
        for c, name, b in self.BACKENDS:
            if self.unmeasured(t, c, name):
                continue
            us = r.median(t, c, "us_per_realloc")
            x = ""
            if b != "-" and r.status(t, b) == "":
                x = r.rmedian(t, c, b, "us_per_realloc")
            self.printf(f, name, sprintf("%.1f", us), "" if x == "" else sprintf("%.3fx", x),
                        sprintf("%.1f", r.median(t, c, "faults_per_realloc")),
                        sprintf("%.3f", r.median(t, c, "seconds")),
                        sprintf("%.1f", div(r.median(t, c, "peak_rss_kib"), 1024)))

    KVSET = BACKENDS[:5] + [("shim-tcmalloc", "shim on tcmalloc", "tcmalloc"),
                            ("mimalloc", "mimalloc alone", "-"),
                            ("shim-mimalloc", "shim on mimalloc", "mimalloc")]

    def kvset_table(self, t):
        """A set of buffers growing together, freed late by another thread."""
        r = self.r
        f = "  %-17s %9s %9s %9s %11s %9s %9s\n"
        self.printf(f, "", "ms a", "x best", "CPU ms", "faults a", "peak RSS", "RSS x")
        self.printf(f, "allocator", "step", "peer", "a step", "step", "MiB", "best")
        best = r.best_peer(t, "ms_step", lowest=True)
        for c, name, b in self.KVSET:
            if self.unmeasured(t, c, name):
                continue
            x = xr = ""
            if best != "":
                x = r.rmedian(t, best, c, "ms_step")
                xr = div(r.median(t, c, "peak_rss_kib"), r.median(t, best, "peak_rss_kib"))
            self.printf(f, name, sprintf("%.2f", r.median(t, c, "ms_step")), xfmt(x),
                        sprintf("%.2f", r.median(t, c, "cpu_ms_step")),
                        sprintf("%.1f", r.median(t, c, "faults_step")),
                        sprintf("%.1f", div(r.median(t, c, "peak_rss_kib"), 1024)), xfmt(xr))
        if best != "":
            self.printf("  best peer: %s\n", best)
        sums = set(v for c, _, _ in self.KVSET for v in split(r.vals.get((t, c, "sum"), "")))
        if len(sums) == 1:
            self.printf("  what was read back identical in every run (%s)\n", sums.pop())
        elif sums:
            self.printf("  what was read back DIFFERS between runs: %s\n",
                        " ".join(sorted(sums)))

    def first_status(self, t, *cfgs):
        """The first of the configurations' statuses that is not "", or ""."""
        for c in cfgs:
            st = self.r.status(t, c)
            if st != "":
                return st
        return ""

    def stats_table(self, t):
        """Stats and tracing on against off, medians of paired rounds."""
        r = self.r
        st = self.first_status(t, "shim-glibc", "shim-glibc-nostats")
        if st != "":
            self.printf("  shim on glibc: %s\n", st)
            return
        pair = "shim-glibc//shim-glibc-nostats"
        on = r.median(t, "shim-glibc", "tokens_per_s")
        off = r.median(t, "shim-glibc-nostats", "tokens_per_s")
        x = r.rpaired(t, "shim-glibc", "shim-glibc-nostats", "tokens_per_s")
        xl = r.quartile(t, pair, "tokens_per_s", 1)
        xh = r.quartile(t, pair, "tokens_per_s", 3)
        c = r.median(t, "shim-glibc", "steady_cpu_ms_per_token")
        y = r.rpaired(t, "shim-glibc", "shim-glibc-nostats", "steady_cpu_ms_per_token")
        yl = r.quartile(t, pair, "steady_cpu_ms_per_token", 1)
        yh = r.quartile(t, pair, "steady_cpu_ms_per_token", 3)
        self.printf("  %-46s %10s %14s %12s\n", "shim on glibc, decode loop", "tokens/s",
                    "CPU ms/token", "page faults")
        self.printf("  %-46s %10s %14s %12s\n", "", "whole run", "steady state", "a run")
        self.printf("  %-46s %10.2f %14.2f %12.0f\n",
                    "stats and trace off (stats:false,trace:false)", off,
                    r.median(t, "shim-glibc-nostats", "steady_cpu_ms_per_token"),
                    r.median(t, "shim-glibc-nostats", "faults"))
        self.printf("  %-46s %10.2f %14.2f %12.0f\n", "stats and trace on (the default)", on, c,
                    r.median(t, "shim-glibc", "faults"))
        self.printf("  %-46s %9.2f%% %13.2f%%   target <= 2%%: %s (tokens/s), %s (CPU)\n",
                    "overhead", (1 - num(x)) * 100, (num(y) - 1) * 100,
                    verdict(cmp(1 - num(x), 0.02) <= 0), verdict(cmp(num(y) - 1, 0.02) <= 0))
        if xl != "" and yl != "":
            self.printf("  %-46s %10s %14s\n", "  interquartile range over the pairs",
                        sprintf("%.1f..%.1f%%", (1 - xh) * 100, (1 - xl) * 100),
                        sprintf("%.1f..%.1f%%", (yl - 1) * 100, (yh - 1) * 100))
        io = r.median(t, "shim-glibc", "ir_total")
        ix = r.median(t, "shim-glibc-nostats", "ir_total")
        if io != "" and ix != "":
            self.printf("  %-46s %+.3f%% (%.0f against %.0f)\n",
                        "instructions, on against off (callgrind)", (div(io, ix) - 1) * 100, io, ix)
        else:
            st = self.first_status(t, "shim-glibc-cg", "shim-glibc-nostats-cg")
            if st != "":
                self.printf("  %-46s %s\n", "instructions (callgrind)", st)

    def audit_table(self, t):
        """The decode loop under the shim, alone and under scratchstat audit
        (launch mode: first-toucher sampling armed before the exec, placement
        read while it runs), medians of paired rounds."""
        r = self.r
        st = self.first_status(t, "shim-glibc", "shim-glibc-audit")
        if st != "":
            self.printf("  audit: %s\n", st)
            return
        x = r.rpaired(t, "shim-glibc-audit", "shim-glibc", "tokens_per_s")
        y = r.rpaired(t, "shim-glibc-audit", "shim-glibc", "steady_cpu_ms_per_token")
        self.printf("  %-46s %10s %14s %12s\n", "shim on glibc, decode loop", "tokens/s",
                    "CPU ms/token", "page faults")
        self.printf("  %-46s %10s %14s %12s\n", "", "whole run", "steady state", "a run")
        for c, name in [("shim-glibc", "alone"),
                        ("shim-glibc-audit", "under scratchstat audit -- (sampling armed)")]:
            self.printf("  %-46s %10.2f %14.2f %12.0f\n", name, r.median(t, c, "tokens_per_s"),
                        r.median(t, c, "steady_cpu_ms_per_token"), r.median(t, c, "faults"))
        self.printf("  %-46s %9.2f%% %13.2f%%\n", "cost of the audit", (1 - num(x)) * 100,
                    (num(y) - 1) * 100)

    def scale_table(self, t):
        """The whole-process audit of a large host (bench/audit_scale):
        medians over the rounds, raw and per 8 GiB audited, beside the
        targets."""
        r = self.r
        st = r.status(t, "audit")
        if st != "":
            self.printf("  scale: %s\n", st)
            return

        def m(k):
            return r.median(t, "audit", k)

        gib = num(m("file_gib")) + num(m("anon_gib"))
        self.printf("  host: %s GiB of touched file mapping, %s GiB anonymous; attach window %s s\n",
                    to_str(m("file_gib")), to_str(m("anon_gib")), to_str(m("window_s")))
        f = "  %-46s %10s %10s  %s\n"
        self.printf(f, "", "measured", "per 8 GiB", "target")
        s8, c8 = m("attach_s_per_8g"), m("attach_cpu_s_per_8g")
        m8, l8 = m("attach_rss_mib_per_8g"), m("launch_rss_mib_per_8g")
        self.printf(f, "attach: the audit's time beyond its window (s)",
                    sprintf("%.2f", m("attach_s")), sprintf("%.2f", s8),
                    "<= 2 s: " + verdict(cmp(s8, 2.0) <= 0))
        self.printf(f, "attach: the audit's CPU time (s)", sprintf("%.2f", m("attach_cpu_s")),
                    sprintf("%.2f", c8), "(the window included)")
        self.printf(f, "attach: the audit's peak RSS (MiB)", sprintf("%.1f", m("attach_rss_mib")),
                    sprintf("%.1f", m8), "<= 64 MiB: " + verdict(cmp(m8, 64.0) <= 0))
        self.printf(f, "launch: CPU time the audit adds (s)",
                    sprintf("%.2f", m("launch_added_cpu_s")),
                    sprintf("%.2f", div(num(m("launch_added_cpu_s")) * 8, gib)),
                    "(every fault sampled; the host alone: %s s CPU, %s s wall)"
                    % (sprintf("%.1f", m("host_alone_cpu_s")), sprintf("%.1f", m("host_alone_s"))))
        self.printf(f, "launch: the audit's peak RSS (MiB)", sprintf("%.1f", m("launch_rss_mib")),
                    sprintf("%.1f", l8), "<= 64 MiB: " + verdict(cmp(l8, 64.0) <= 0))
        sl = m("host_slowdown_pct")
        self.printf(f, "host while attached, per CPU second: slower %", sprintf("%.2f", sl),
                    "", "<= 2%: " + verdict(cmp(sl, 2.0) <= 0))
        self.printf(f, "... per wall second %", sprintf("%.2f", m("host_slowdown_wall_pct")), "",
                    "(other load on the machine counts here)")
        self.printf(f, "noise: windows before and after differ by %",
                    sprintf("%.2f", m("noise_pct")), "",
                    "(per CPU second; a slowdown below this is not resolved)")

    def small_table(self, t):
        """Per backend, the pair alone, under the bare forwarder and under the
        shim, in CPU time and in instructions; the budget (DESIGN.md) is on
        instructions: the count of the forwarder plus 2 (glibc) or 12
        (jemalloc)."""
        r = self.r
        f = "  %-9s %8s %8s %8s %9s %9s  %8s %8s %8s %10s %-14s\n"
        self.printf(f, "", "alone", "forward", "shim", "forward", "shim", "alone", "forward",
                    "shim", "shim -", "")
        self.printf(f, "backend", "CPU ns", "CPU ns", "CPU ns", "x alone", "x alone", "instr",
                    "instr", "instr", "forward", "target")
        self.printf(f, "", "(best)", "(best)", "(best)", "(CPU)", "(CPU)", "", "", "", "(instr)",
                    "(instr)")
        rows = [("glibc", "glibc", "forward", "shim-glibc", 2),
                ("jemalloc", "jemalloc", "forward-jemalloc", "shim-jemalloc", 12),
                ("tcmalloc", "tcmalloc", "forward-tcmalloc", "shim-tcmalloc", 12),
                ("mimalloc", "mimalloc", "forward-mimalloc", "shim-mimalloc", 12)]
        for name, b, fw, shim, budget in rows:
            if r.status(t, b) == "no result":
                continue  # not in this run's configurations
            st = r.status(t, b)
            if st != "":
                self.printf("  %-9s %s\n", name, st)
                continue
            for what, c in [("forwarder", fw), ("shim", shim)]:
                st = r.status(t, c)
                if st != "":
                    self.printf("  %-9s %s: %s\n", name, what, st)
            a = r.best(t, b, "cpu_ns_per_pair")
            x = r.best(t, fw, "cpu_ns_per_pair") if r.status(t, fw) == "" else ""
            y = r.best(t, shim, "cpu_ns_per_pair") if r.status(t, shim) == "" else ""
            rx = "" if x == "" else r.rmedian(t, fw, b, "cpu_ns_per_pair")
            ry = "" if y == "" else r.rmedian(t, shim, b, "cpu_ns_per_pair")
            ia = r.median(t, b, "ir_per_pair")
            ix = "" if x == "" else r.median(t, fw, "ir_per_pair")
            iy = "" if y == "" else r.median(t, shim, "ir_per_pair")
            self.printf(f, name, sprintf("%.2f", a), "-" if x == "" else sprintf("%.2f", x),
                        "-" if y == "" else sprintf("%.2f", y),
                        "-" if rx == "" else sprintf("%+.1f%%", (rx - 1) * 100),
                        "-" if ry == "" else sprintf("%+.1f%%", (ry - 1) * 100),
                        "-" if ia == "" else sprintf("%.1f", ia),
                        "-" if ix == "" else sprintf("%.1f", ix),
                        "-" if iy == "" else sprintf("%.1f", iy),
                        "-" if ix == "" or iy == "" else sprintf("%+.1f", iy - ix),
                        "" if ix == "" or iy == "" else
                        sprintf("<= +%d: %s", budget, verdict(cmp(iy - ix, budget + 0.05) <= 0)))

    def pair_table(self, t):
        """The pooled pair: CPU time and instructions through each shim,
        beside each backend alone."""
        r = self.r
        rows = [("shim-glibc", "shim on glibc"), ("shim-jemalloc", "shim on jemalloc"),
                ("shim-tcmalloc", "shim on tcmalloc"), ("shim-mimalloc", "shim on mimalloc"),
                ("glibc", "glibc alone"), ("jemalloc", "jemalloc alone")]
        self.printf("  %-18s %12s  %-14s %18s  %-14s %14s\n", "", "CPU ns/pair", "target",
                    "instructions/pair", "target", "instructions/")
        self.printf("  %-18s %12s  %-14s %18s  %-14s %14s\n", "allocator", "(best)", "",
                    "in malloc+free", "", "loop iteration")
        for c, name in rows:
            shim = c.startswith("shim")
            st = r.status(t, c)
            if st == "no result":
                continue  # not in this run's configurations
            if st != "":
                self.printf("  %-18s %s\n", name, st)
                continue
            ns = r.best(t, c, "cpu_ns_per_pair")
            self.printf("  %-18s %12.2f  %-14s", name, ns,
                        "<= 25: " + verdict(cmp(ns, 25.0) <= 0) if shim else "(reference)")
            ir = r.median(t, c, "ir_per_pair")
            if ir == "":
                st = r.status(t, c + "-cg")
                self.printf(" %18s\n", st if st != "" else "-")
            else:
                self.printf(" %18.1f  %-14s %14.1f\n", ir,
                            "<= 100: " + verdict(cmp(ir, 100.0) <= 0) if shim else "(reference)",
                            r.median(t, c, "ir_per_iter"))

    def ratios(self, t, c1, c2, k):
        """The per-round ratios of c1's figure k to c2's, as rmedian
        computed and kept them (none before it ran)."""
        return [num(v) for v in split(self.r.vals.get((t, c1 + "/" + c2, k), ""))]

    def spread(self, t, c1, c2, k):
        """The smallest and largest per-round ratio of c1 to c2 (after
        rmedian computed them), as "lo-hi"."""
        a = self.ratios(t, c1, c2, k)
        if not a:
            return "-"
        return sprintf("%.2f-%.2f", min(a), max(a))

    def ahead(self, t, c1, c2, k):
        """In how many rounds c1's figure k was at least c2's (after rmedian
        computed the ratios), as "n/rounds"."""
        a = self.ratios(t, c1, c2, k)
        if not a:
            return "-"
        return "%d/%d" % (sum(1 for v in a if v >= 1.0), len(a))

    def engine_table(self, t, title, rate, cpu, unit):
        """One engine under every allocator: its steady rate and CPU time per
        step beside the best peer's (medians of per-round ratios, with their
        spread), faults per step and peak RSS against the best peer's, and
        whether its output matched the others'."""
        r = self.r
        bp = r.best_peer(t, rate)
        self.printf("\n  %s (%s; best peer: %s)\n", title, unit,
                    "none measured" if bp == "" else cname(bp))
        f = "  %-17s %9s %7s %-4s %11s %7s %10s %8s %9s %8s %-4s %s\n"
        self.printf(f, "", "steady", "x best", "", "per-round", "rounds", "CPU ms", "CPU x",
                    "faults/", "peak RSS", "", "RSS x")
        self.printf(f, "allocator", "rate", "peer", "", "x range", "ahead", "per step", "best",
                    "step", "MiB", "", "best")
        outs = {}
        for c in ENGINE_CFGS:
            if self.unmeasured(t, c, cname(c)):
                continue
            shim = c.startswith("shim")
            x = xc = xr = ""
            if bp != "":
                x = r.rmedian(t, c, bp, rate)
                xc = r.rmedian(t, bp, c, cpu)
                xr = r.rmedian(t, c, bp, "rss_kib")
            rss = r.median(t, c, "rss_kib")
            self.printf(f, cname(c), sprintf("%.2f", r.median(t, c, rate)), xfmt(x),
                        mark(shim and x != "", cmp(x, 1.0) >= 0),
                        "-" if x == "" else self.spread(t, c, bp, rate),
                        "-" if x == "" or c == bp else self.ahead(t, c, bp, rate),
                        sprintf("%.2f", r.median(t, c, cpu)), xfmt(xc),
                        sprintf("%.1f", r.median(t, c, "faults_step")),
                        sprintf("%.1f", div(rss, 1024)), mark(shim and xr != "", cmp(xr, 1.1) <= 0),
                        xfmt(xr))
            for o in split(r.vals.get((t, c, "out"), "")):
                outs.setdefault(o, []).append(cname(c))
        if len(outs) > 1:
            self.printf("  outputs DIFFER: %s\n", "; ".join(
                "%s from %s" % (o, ", ".join(sorted(set(cs)))) for o, cs in outs.items()))
        elif outs:
            self.printf("  outputs identical in every run (%s)\n", list(outs)[0])
        self.engine_pairs(t, rate)

    def engine_pairs(self, t, rate):
        """The shim on glibc beside each of the rounds' best peers, in runs
        alternated right after them (run.sh's pairs-ENGINE table for the
        best, pairs2-ENGINE for the next...): the median of the pairs'
        ratios, their spread, the pairs in which the shim was at least as
        fast, and their geometric mean with its interval."""
        for n in range(1, PAIR_PEERS_MAX + 1):
            self.engine_pair_line(pairs_table(t, n), rate)

    def engine_pair_line(self, p, rate):
        """One pairs table's lines (nothing when it did not run)."""
        r = self.r
        peers = [c for c in PEERS if r.status(p, c) == ""]
        if r.status(p, "shim-glibc") != "" or len(peers) != 1:
            return
        x = r.rmedian(p, "shim-glibc", peers[0], rate)
        self.printf("  alternated with %s right after, in %d pairs: shim on glibc %s %s"
                    " (%s), ahead in %s\n", cname(peers[0]),
                    len(split(r.vals.get((p, "shim-glibc", rate), ""))), xfmt(x),
                    mark(x != "", cmp(x, 1.0) >= 0), self.spread(p, "shim-glibc", peers[0], rate),
                    self.ahead(p, "shim-glibc", peers[0], rate))
        iv = ratio_interval(self.ratios(p, "shim-glibc", peers[0], rate))
        if iv is not None:
            m, lo, hi = iv
            self.printf("    their geometric mean %.2fx, 95%% interval %.2f-%.2f: %s\n", m, lo, hi,
                        "ahead beyond the noise" if lo > 1.0 else
                        "behind beyond the noise" if hi < 1.0 else
                        "the noise explains the difference")

    def engines_table(self, t):
        """Every engine that ran, or that says why it could not."""
        for e, title, rate, cpu, unit in ENGINES:
            if all(self.r.status(e, c) == "no result" for c in ENGINE_CFGS):
                continue
            self.engine_table(e, title, rate, cpu, unit)

    def table(self, t):
        """Print table t alone."""
        if t in ("decode-default", "decode-main-alloc", "vary-default", "vary-main-alloc"):
            self.decode_table(t)
        elif t.startswith("engine-"):
            for e, title, rate, cpu, unit in ENGINES:
                if e == t:
                    self.engine_table(e, title, rate, cpu, unit)
        else:
            getattr(self, t + "_table")(t)


# --- the sections: each table under its caption, as run.sh printed them -----

# The captions, with the run's settings ($name: "set name VALUE" in the results).
CAPTIONS = {
    "decode": """\
1. Decode loop, fixed sizes (issue 3): 2 worker threads + main, $tokens tokens x $layers layers
   ($warmup warm-up); per layer each worker allocates temporaries of 16 KiB-16 MiB (powers of
   4) and the main thread a 32 MiB buffer the workers write; per token a 64 MiB logits buffer.
   Every buffer is written once per use. Medians of $frounds interleaved rounds (each in a new
   order) for the floor and the shims, of $rounds for the other allocators. The last row (shim
   on glibc with SCRATCH_CONF=thp:true: huge pages for blocks of 2 MiB and more) shows what
   transparent huge pages cost at first touch and give back in the steady state.
""",
    "decode_legend": """\
   Whole-run tokens/s covers every token, warm-up included; steady tokens/s and faults/token
   (minflt+majflt) the tokens after the warm-up. Refaults/token: those faults less the growth
   of the peak resident set (VmHWM, in pages) over the same tokens, the pages faulted again
   (given back and faulted anew); a new maximum (a buffer larger than any before, the scores'
   new row) is faulted once and is not one. Ratios are medians of per-round ratios, to the
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
   other runs. Under each table, per shim: the steady tokens that faulted any page (a lazy
   allocator's new maxima; the floor's are all pre-faulted) and the others' rate against the
   floor's steady rate.
   Targets (shim rows): whole run ahead of every peer (> 1x the best), steady state >= 0.97x
   the floor, no page faulted twice in the steady state (0 refaults per token; a new maximum
   must be faulted once), peak RSS <= 1.25x the floor's.
   jemalloc tuned: MALLOC_CONF=$tuned
   (the Intel Extension for PyTorch tuning guide's); jemalloc tuned -1: the same with both
   decay times -1 (never purge), as other PyTorch CPU guides give it.
""",
    "part_a": """\

 a) workers allocate their own temporaries:
""",
    "part_b": """\

 b) the main thread allocates every buffer, the workers write them (--main-alloc):
""",
    "vary": """\

1v. Decode loop, sizes that vary (issue 12, --vary): 2 worker threads + main, $vtokens tokens x
   $vlayers layers, the first $vwarmup of them the warm-up (the steady state is the late tokens).
   Per token and layer each worker's 2 temporaries are 8-64 MiB, drawn at 1 MiB steps from a
   seeded PRNG (the same sequence under every allocator); the main thread allocates the
   attention scores, (64 + token) rows of 256 KiB (16 MiB growing by one row a token), which
   the workers write; per token a 64 MiB logits buffer. Medians of $vrounds interleaved rounds
   (each in a new order) for the floor and the shims, of $rounds for the other allocators; the
   last row is the shim on glibc with SCRATCH_CONF=thp:true.
""",
    "churn": """\

1c. Large-block churn (issue 12, bench/churn): one thread keeps 32 blocks of random sizes from
   5 to 25 MiB (whole pages, from a seeded PRNG) and $churn_steps times frees a random one, mallocs
   one of a new random size and writes each of its pages. Each shim against its backend alone
   (tcmalloc for reference; "shim, thp:true" is the shim on glibc with huge pages):
   steps/s and peak RSS (VmHWM), with the shims' ratios
   as medians of per-round ratios over $rounds interleaved rounds (each in a new order); the
   live set's own peak beside.
   Targets (shim rows): at least the speed of the backend alone, and peak RSS <= 1.10x
   glibc's alone for both shims (jemalloc alone holds less than glibc: its RSS is beside).
""",
    "grow": """\

1r. A buffer grown by realloc (issue 12, bench/grow): 20 times, one buffer grows from 4 to
   256 MiB by an eighth at a time (44 reallocs), writing the part each step adds. Microseconds
   per realloc call (the writes left out; a shim's ratio to its backend alone as a median of
   per-round ratios), faults per realloc (the writes' included), the whole run and peak RSS,
   medians of $rounds interleaved rounds. Under the shim a realloc within a block's capacity
   stays in place and one into a larger block moves the pages (mremap) instead of copying
   them. No target: the issue leaves copy or move to measurement.
""",
    "kvset": """\

1k. A set of buffers that grows together, freed late by another thread (bench/kvset): the
   K/V cache a decoder hands to a garbage-collected host (ONNX Runtime under node: 12
   ArrayBuffers a step, each 8 KiB larger than the step before, freed by V8's collector about
   a dozen steps later). Each of 200 steps the main thread callocs 12 buffers (512 KiB, plus
   8 KiB a step), fills each with a copy and reads it back; a second thread frees the buffers
   of the step 12 before. Milliseconds a step after 8 steps of warm-up (the best peer's over
   the row's, as a median of per-round ratios: above 1 is faster), CPU time a step (both
   threads), faults a step and peak RSS, medians of $rounds interleaved rounds. A page heap
   that joins freed neighbours reuses the set's pages in place; size classes carve a new
   block at each class the set crosses, whose pages are faulted or moved in.
   Target: none of its own; the real engine's (table 6) is >= 1.0x the best peer.
""",
    "spawn": """\

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
""",
    "stats": """\

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
""",
    "audit": """\

2a. The locality audit's cost on its host (issue 14): the decode loop (workers allocate) under
   the shim on glibc, alone and launched by scratchstat audit (first-toucher sampling armed
   before the exec, one event per CPU; placement read while it runs); medians of $orounds
   interleaved rounds, taking turns to run first, as in table 2. Page faults are what the
   sampling pays for (bench/faults gives the cost per fault, among the programs' tables); a
   steady-state token faults nothing, so the steady-state CPU figure is the audit's cost per
   token once warm. Where perf_event_paranoid refuses sampling, the audit reads placement
   only. (No target.)
""",
    "scale": """\

2b. The whole-process audit at scale (issue 24): bench/audit_scale holds a touched file
   mapping and anonymous memory (sizes below; the file is sparse on tmpfs, so the host's reads
   place it), and is audited in attach mode (scratchstat audit --for: its wall time beyond the
   window, its CPU time and its peak RSS) and in launch mode (every fault sampled: the CPU time
   it adds to the host's run, and its peak RSS). The host walks its memory meanwhile, one byte
   a page: its pages per second of its own CPU time in the middle of the attach window against
   the mean of a window before and one after (per wall second too, where other load on a
   shared machine counts). Medians of $scale_rounds rounds; per 8 GiB: the figure times 8 GiB
   over the GiB audited. Targets: at most 2 s and 64 MiB of the audit's own memory per 8 GiB;
   the host at most 2% slower while attached.
""",
    "small": """\

3. Small-allocation pass-through (issues 3, 12): 2 threads, each replacing one of 64 live
   blocks of 16 B-1 KiB per step (5x10^6 malloc+free pairs per thread); the shim forwards
   these to its backend. Each backend alone, under a bare forwarding interposer
   (bench/forward.c: malloc and free forward to the backend's own with one compare and a
   jump each, what any LD_PRELOAD malloc pays on this loop; before the allocator's library
   for jemalloc, tcmalloc and mimalloc) and under the shim. CPU time per pair over $mrounds interleaved rounds (each in a
   new order): the best round of each, and the median of the per-round ratios to the
   backend alone (runs side by side in one round see the same load; other load on a shared
   machine only ever adds time). Instructions per pair inside malloc and free (one thread,
   callgrind, as in table 4) measure the same without the noise, and carry the target
   (DESIGN.md): the shim at most the forwarder's count plus 2 on glibc, plus 12 on the others.
""",
    "engines": """\

6. Real engines (issue 25): engines users run, under every allocator, over $rounds interleaved
   rounds (each in a new order; PyTorch and numpy $engine_pin):
   eager PyTorch CPU decoding of a small GPT-style model whose
   K/V caches grow by torch.cat every token (batch 1 and 4, a short decode, and batch 1 for
   $torch_long_tokens tokens in the longer row, where glibc alone trims and regrows its heap),
   numpy elementwise expressions over 64 MiB arrays, and an ONNX Runtime decode loop
   (onnxruntime-node, its arena on, the same decoder exported by PyTorch; batch 4, for
   $ort_steps steps, and for $ort_long_steps in the longer row, whose K/V pass 2 MiB). Steady
   rate: after each engine's warm-up steps; "x best peer" is the median of per-round ratios
   to the best of glibc, jemalloc, jemalloc tuned, tcmalloc and mimalloc (the one with the
   best median rate), with the smallest and largest of those ratios beside it, and the
   rounds in which the row was at least as fast (a row below 1.00x that was ahead in some
   rounds is within what this machine's noise explains; one behind in every round is not);
   CPU x best: the best peer's CPU time per step over the row's (above 1: less CPU). Faults
   per steady step (minor faults as the kernel counts them: the pages the shim populates in
   one call count one each, without a trap); peak RSS (the engine's ru_maxrss). Targets
   (shim rows): >= 1.00x the best peer's rate, peak RSS <= 1.10x the best peer's, outputs
   identical. Under each table: the shim on glibc beside the rounds' best peers (up to
   $pair_peers, a line each, the best first), in $prounds pairs of adjacent runs with each,
   right after the rounds, each pair's first run alternating; the median of the pairs'
   ratios, their range and the pairs it was ahead in; then their geometric mean with its
   95% interval (Student's t on the ratios' logarithms) and what that says: ahead or behind
   beyond the noise, or a difference the noise explains. A round spans minutes, over which
   this machine's speed drifts by up to 20%; a pair's two runs share its state, but pairs
   made within minutes of each other share a drift too, so the interval is narrower than
   the truth (docs/performance.md, "Which differences the noise explains"). The rounds'
   ratios read a tie below 1.00x: their best peer is the fastest of five measured on the
   same noisy rounds; the pairs, run afterwards, do not.
""",
    "pair": """\

4. Pooled malloc+free hit (issue 3): one thread, malloc+free of a $pair_size-byte block (scratch-
   sized, so every pair after the first is a hit in the thread's cache). ns per pair: CPU time,
   best of $srounds interleaved runs of 2x10^6 pairs. Instructions: callgrind's count for 2N pairs
   minus N pairs, divided by N (N = $cg_n): per pair inside malloc and free (the whole count less
   that of the program's own functions, the loop), and per loop iteration (calls included).
   Targets: <= 25 ns and <= 100 instructions per pair.
""",
}

CAPTIONS["header"] = """\
scratch benchmarks: $cpus CPUs, transparent huge pages: $thp, $kernel
Every figure is measured in this run, over interleaved rounds (medians, or the best round for
the nanosecond microbenchmarks), each beside its target.
Comparison allocators: jemalloc $jemalloc, tcmalloc $tcmalloc, mimalloc $mimalloc.

"""


def caption(res, key):
    """Caption key with the run's settings filled in."""
    settings = dict(res.settings)
    for lib in ("jemalloc", "tcmalloc", "mimalloc"):
        settings[lib] = settings.get(lib) or "not installed"
    for name in ("ort_steps", "ort_long_steps", "torch_long_tokens", "prounds"):  # from before they were recorded
        settings.setdefault(name, "(not recorded)")
    settings.setdefault("pair_peers", "1")  # before, the pairs were with the best peer alone
    settings.setdefault("vrounds", settings.get("rounds", ""))  # before, table 1v ran $rounds
    settings.setdefault("engine_pin", "(where they ran is not recorded)")
    try:
        return string.Template(CAPTIONS[key]).substitute(settings)
    except KeyError as e:
        sys.exit("report.py: the results have no setting %s (a line 'set %s VALUE')"
                 % (e, e.args[0]))


def section(p, res, name):
    """Print section name: its caption, then its tables."""
    if name == "header":
        p.write(caption(res, "header"))
    elif name in ("decode", "vary"):
        p.write(caption(res, name))
        p.write(caption(res, "decode_legend"))
        p.write(caption(res, "part_a"))
        p.table(name + "-default")
        p.write(caption(res, "part_b"))
        p.table(name + "-main-alloc")
    elif name == "programs":
        for prog, (lines, status) in res.programs.items():
            p.write("\n== %s (prints its own table) ==\n" % prog)
            for line in lines:
                p.write(line + "\n")
            if status != "0":
                p.write("%s: failed with exit status %s\n" % (prog, status))
    else:
        p.write(caption(res, name))
        p.table(name)


def main(argv):
    args = argv[1:]
    sections = []
    table = None
    peer_of = None
    all_peers = False
    while len(args) > 1 and args[0] in ("--section", "--table", "--best-peer", "--peers"):
        if args[0] == "--section":
            sections.append(args[1])
        elif args[0] == "--table":
            table = args[1]
        else:
            peer_of = args[1]
            all_peers = args[0] == "--peers"
        args = args[2:]
    if args in (["-h"], ["--help"]):
        sys.stdout.write(__doc__)
        return 0
    if len(args) != 1 or args[0].startswith("-"):
        sys.stderr.write("usage: bench/report.py [--section NAME]... [--table TABLE] RESULTS\n"
                         "       bench/report.py --best-peer ENGINE-TABLE RESULTS\n"
                         "       bench/report.py --peers ENGINE-TABLE RESULTS\n")
        return 2
    rates = dict((e[0], e[2]) for e in ENGINES)
    if peer_of is not None and peer_of not in rates:
        sys.stderr.write("report.py: no such engine table: %s\n" % peer_of)
        return 2
    bad = [s for s in sections if s != "header" and s not in SECTIONS]
    if bad or (table is not None and table not in TABLES):
        sys.stderr.write("report.py: no such %s: %s\n" % (
            "section" if bad else "table", bad[0] if bad else table))
        return 2
    try:
        with open(args[0], "rb") as f:
            text = f.read().decode("utf-8", "surrogateescape")
    except OSError as e:
        sys.stderr.write("report.py: %s\n" % e)
        return 1
    res = Results(text)
    if peer_of is not None:
        # for run.sh: the engine's best peer so far (or its peers, the best
        # first), or nothing
        if all_peers:
            sys.stdout.write(" ".join(res.peers_by(peer_of, rates[peer_of])) + "\n")
        else:
            sys.stdout.write(res.best_peer(peer_of, rates[peer_of]) + "\n")
        return 0
    out = sys.stdout.buffer
    p = Printer(res, lambda s: out.write(s.encode("utf-8", "surrogateescape")))
    try:
        if table is not None:
            p.table(table)
        else:
            for name in sections or ["header"] + res.sections:
                section(p, res, name)
        out.flush()
    except BrokenPipeError:  # e.g. into head: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), out.fileno())
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
