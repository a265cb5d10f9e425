# strace_fds.py - checks an `strace -f -e trace=desc,ipc` log of host_fds mark
# (shim_strace.test) against the rules of libscratch-preload(7), "What the
# host can observe":
#
#   python3 strace_fds.py LOG RUN_DIR
#
# host_fds writes a marker to fd -1 after every call it makes into the
# allocator and at each stage of its life, so the markers cut each
# thread's calls into pieces that belong to no call of the host's: a
# malloc, a free, the loader and the constructors before main, the fork
# handlers before fork returns in the child, the destructors at exit. In
# every piece:
#   - each call is one of the documented ones (CALLS, PATHS below);
#   - every descriptor it uses was opened in that same piece, on that
#     thread (AT_FDCWD and -1, the anonymous mmap, excepted);
#   - every descriptor it opened is closed again before the piece ends.
# Prints what the pieces did, one "count kind" line per kind of call, and
# the markers per process; exits 1 with the violations on stderr.
import collections
import re
import sys

MARK = "host_fds: "
# Descriptor-taking calls a piece may make, and which argument is the fd.
CALLS = {"read": 0, "pread64": 0, "write": 0, "pwrite64": 0, "close": 0,
         "newfstatat": 0, "fstat": 0, "ftruncate": 0, "getdents64": 0,
         "unlinkat": 0, "openat": 0, "open": None, "mmap": 4, "memfd_create": None}
# Files a piece may open by name: the loader's, libscratch's procfs reads
# (the run directory is checked apart), glibc's sysconf(_SC_NPROCESSORS_*)
# that os.c calls, the decay thread's node CPU lists (per_node, two nodes
# or more), jemalloc's start-up reads.
PATHS = [r"/etc/ld\.so\.cache", r".*\.so(\.[0-9.]+)?",
         r"/proc/self/(stat|cmdline|statm)", r"/proc/self/task/[0-9]+/comm",
         r"/sys/devices/system/cpu/(online|possible)",
         r"/sys/devices/system/node/node[0-9]+/cpulist",
         r"/sys/kernel/mm/transparent_hugepage/enabled",
         r"/proc/sys/vm/overcommit_memory"]
LINE = re.compile(r"^(\d+) +(\w+)\((.*)\) += (-?\d+|\?|0x[0-9a-f]+)")


def calls(lines, bad):
    """(pid, name, args, ret) per call, with unfinished calls joined; lines
    it cannot read go to bad."""
    pending = {}
    for line in lines:
        line = line.rstrip("\n")
        m = re.match(r"^(\d+) +(.*)$", line)
        if m and m.group(2).startswith(("---", "+++")):
            continue
        if not m:
            bad.append("unreadable line: " + line[:160])
            continue
        pid, rest = m.groups()
        if rest.endswith("<unfinished ...>"):
            pending[pid] = rest[:-len("<unfinished ...>")]
            continue
        r = re.match(r"^<\.\.\. \w+ resumed>(.*)$", rest)
        if r:
            rest = pending.pop(pid, "?(") + r.group(1)
        c = LINE.match(pid + " " + rest)
        if c:
            yield c.group(1), c.group(2), c.group(3), c.group(4)
        else:
            bad.append("unreadable call: " + line[:160])


def split_args(args):
    """Top-level comma-separated arguments (strings and braces kept whole)."""
    out, depth, cur, quoted = [], 0, "", False
    for i, ch in enumerate(args):
        if quoted:
            quoted = not (ch == '"' and args[i - 1] != "\\")
        elif ch == '"':
            quoted = True
        elif ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        cur += ch
    return out + [cur.strip()]


class Checker:
    def __init__(self, run_dir):
        self.run_dir = run_dir.rstrip("/")
        self.bad = []
        self.kinds = collections.Counter()
        self.marks = collections.defaultdict(list)
        self.open = {}  # pid -> {fd: what}; pieces are per thread

    def fail(self, pid, why, call):
        self.bad.append("%s: %s: %s" % (pid, why, call[:160]))

    def path_kind(self, dirfd, path, flags):
        """(kind of call, name of the descriptor) of a documented open, or
        None. dirfd: the name of the directory descriptor it is relative to."""
        run = re.escape(self.run_dir)
        if dirfd is not None:
            if dirfd == "the run directory" and re.fullmatch(r"\.?[0-9]+-[0-9]+\.(seg|tmp)", path):
                return "openat a stale file (sweep)", "a stale file"
            return None
        if path == self.run_dir and "O_DIRECTORY" in flags:
            return "open the run directory (sweep)", "the run directory"
        if re.fullmatch(run + r"/\.[0-9]+-[0-9]+\.tmp", path):
            if all(f in flags for f in ("O_CREAT", "O_EXCL", "O_NOFOLLOW")):
                return "open a new segment .tmp (O_EXCL)", "the new segment"
            return None
        for p in PATHS:
            if re.fullmatch(p, path):
                if ".so" in path:
                    return "open a library or ld.so.cache (the loader)", "a library"
                path = re.sub(r"/[0-9]+/", "/TID/", path)
                return "open " + path, path
        return None

    def end_piece(self, pid):
        for fd, what in self.open.pop(pid, {}).items():
            self.fail(pid, "fd %s (%s) still open when the call returned" % (fd, what), "")

    def call(self, pid, name, args, ret):
        text = "%s(%s) = %s" % (name, args, ret)
        if name == "write" and args.startswith('-1, "' + MARK):
            self.end_piece(pid)
            self.marks[pid].append(args.split('"')[1][len(MARK):])
            return
        if name == "write" and args.startswith('2, "scratch: '):
            self.kinds["write a message to stderr"] += 1
            return
        if name not in CALLS:
            self.fail(pid, "not a documented call", text)
            return
        fds = self.open.setdefault(pid, {})
        a = split_args(args)
        used = a[CALLS[name]] if CALLS[name] is not None else "-1"
        if used == "AT_FDCWD":
            used = "-1"
        if used != "-1" and used not in fds:
            self.fail(pid, "uses fd %s, which this call did not open" % used, text)
        elif name in ("openat", "open", "memfd_create"):
            self.opened(pid, name, a, ret, fds, text)
        elif used == "-1":
            self.kinds["%s without a descriptor" % name] += 1
        else:
            self.kinds["%s on %s" % (name, fds[used])] += 1
            if name == "close":
                del fds[used]

    def opened(self, pid, name, a, ret, fds, text):
        if name == "memfd_create":
            what = None
            if a[0] == '"scratch-segment"':
                what = "memfd_create a segment (no run directory)", "the segment memfd"
        elif name == "open":
            what = self.path_kind(None, a[0].strip('"'), a[1])
        else:
            dirfd = fds.get(a[0]) if a[0] != "AT_FDCWD" else None
            what = self.path_kind(dirfd, a[1].strip('"'), a[2])
        if what is None:
            self.fail(pid, "opens an undocumented file", text)
            return
        self.kinds[what[0]] += 1
        if ret.isdigit():
            fds[ret] = what[1]


def main():
    log, run_dir = sys.argv[1], sys.argv[2]
    ck = Checker(run_dir)
    with open(log, errors="replace") as f:
        for pid, name, args, ret in calls(f, ck.bad):
            ck.call(pid, name, args, ret)
    for pid in list(ck.open):
        ck.end_piece(pid)
    for kind, n in sorted(ck.kinds.items()):
        print("%6d %s" % (n, kind))
    # The host's own view, in the order its processes started.
    stages = [m for ms in ck.marks.values() for m in ms if m != "call"]
    marked = sum(m == "call" for ms in ck.marks.values() for m in ms)
    print("stages: %s; %d calls marked" % (", ".join(stages), marked))
    for b in ck.bad[:40]:
        print("strace_fds: " + b, file=sys.stderr)
    if len(ck.bad) > 40:
        print("strace_fds: ... %d violations in all" % len(ck.bad), file=sys.stderr)
    return 1 if ck.bad else 0


if __name__ == "__main__":
    sys.exit(main())
