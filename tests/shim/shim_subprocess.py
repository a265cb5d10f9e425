# shim_subprocess.py - spawns children (python itself, sort, a shell
# pipeline) through subprocess and a pool of processes, passing large data
# through pipes; prints what they returned. The children inherit
# LD_PRELOAD, so they run under the shim too.
import hashlib
import subprocess
import sys

data = b"".join(b"%08d line of text %d\n" % ((i * 7919) % 100003, i) for i in range(60000))
out = subprocess.run(["sort"], input=data, capture_output=True, check=True,
                     env={"LC_ALL": "C", **__import__("os").environ}).stdout
print("sort", len(out), hashlib.sha256(out).hexdigest())

child = subprocess.run(
    [sys.executable, "-c",
     "import sys, hashlib; b = sys.stdin.buffer.read(); "
     "x = [bytes(n) for n in range(60000, 70000, 997)]; "
     "print(len(b), hashlib.sha256(b + b''.join(x)).hexdigest())"],
    input=data * 4, capture_output=True, check=True)
print("python", child.stdout.decode().strip())

sh = subprocess.run("seq 1 200000 | awk '{ s += $1 } END { print s }'", shell=True,
                    capture_output=True, check=True)
print("shell", sh.stdout.decode().strip())

procs = [subprocess.Popen([sys.executable, "-c", "print(sum(range(%d)))" % (10 ** 5 * k)],
                          stdout=subprocess.PIPE) for k in range(1, 5)]
print("popen", [p.communicate()[0].decode().strip() for p in procs],
      [p.returncode for p in procs])
rc = subprocess.run([sys.executable, "-c", "import sys; sys.exit(3)"]).returncode
print("exit status", rc)
