# numpy_temps.py - numpy elementwise expressions over 64 MiB float32 arrays:
# every step makes temporaries of the arrays' size, and of a slice's, as
# array code does, and frees them at once.
#
#   python3 numpy_temps.py STEPS WARMUP
#
# Prints "engine it_s=... cpu_it_ms=... faults_step=... out=..." for
# bench/engine (see torch_decode.py).
import hashlib
import resource
import sys
import time

import numpy as np

steps, warmup = (int(a) for a in sys.argv[1:3])
rng = np.random.default_rng(1)
a = rng.random((4096, 4096), dtype=np.float32)
b = rng.random((4096, 4096), dtype=np.float32)
acc = np.zeros(4096, dtype=np.float64)
for step in range(steps):
    if step == warmup:
        t0, c0 = time.perf_counter(), time.process_time()
        f0 = resource.getrusage(resource.RUSAGE_SELF)
    c = np.sqrt(a * a + b * b)  # three temporaries of 64 MiB
    d = (c - a.mean(axis=0)) / (b.std(axis=0) + 1.0)  # a broadcast, two more
    e = d[: 1024 + 256 * (step % 8)] * 0.5  # a slice's temporary, of varying size
    acc += e.sum(axis=0)
dt, dc = time.perf_counter() - t0, time.process_time() - c0
f1 = resource.getrusage(resource.RUSAGE_SELF)
n = steps - warmup
flt = (f1.ru_minflt + f1.ru_majflt - f0.ru_minflt - f0.ru_majflt) / n
out = hashlib.sha256(acc.tobytes()).hexdigest()[:16]
print(f"engine it_s={n / dt:.3f} cpu_it_ms={1000 * dc / n:.4f} faults_step={flt:.1f} out={out}")
