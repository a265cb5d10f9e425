# shim_threads.py - threads that allocate bytes, lists and dicts of many
# sizes (small objects and buffers in the pools' range), hand them to each
# other through a queue and hash them; prints a deterministic digest.
import hashlib
import queue
import threading

NTHREADS = 8
q = queue.Queue()
results = [None] * NTHREADS


def produce(i):
    out = []
    for j in range(200):
        n = (j * 7919 + i * 104729) % (3 << 20) + 1
        buf = bytearray(n)
        buf[0] = j & 0xFF
        buf[-1] = i & 0xFF
        out.append(bytes(buf[:64]) + bytes(buf[-64:]))
        q.put((i, j, bytes(buf)))
        d = {k: str(k) * 3 for k in range(j % 50)}
        out.append(repr(sorted(d.items())[:3]).encode())
    results[i] = hashlib.sha256(b"".join(out)).hexdigest()


threads = [threading.Thread(target=produce, args=(i,)) for i in range(NTHREADS)]
for t in threads:
    t.start()
seen = hashlib.sha256()
items = []
done = 0
while done < NTHREADS * 200:
    i, j, b = q.get()
    items.append((i, j, len(b), hashlib.sha256(b).hexdigest()))
    done += 1
for t in threads:
    t.join()
for it in sorted(items):
    seen.update(repr(it).encode())
print("threads", results)
print("queue", seen.hexdigest())
