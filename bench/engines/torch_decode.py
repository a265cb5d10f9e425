# torch_decode.py - eager PyTorch CPU decoding of a small GPT-style model:
# the K/V caches of every layer grow by torch.cat each token, as a plain
# Hugging Face style loop does, so the large temporaries vary and grow.
#
#   python3 torch_decode.py BATCH TOKENS WARMUP
#
# Prints one line for bench/engine: "engine tok_s=... cpu_tok_ms=...
# faults_step=... out=..." (tokens per second, CPU ms per token and page
# faults per step after WARMUP tokens, and a hash of the tokens decoded,
# which must not depend on the allocator).
import hashlib
import resource
import sys
import time

import torch

batch, tokens, warmup = (int(a) for a in sys.argv[1:4])
torch.manual_seed(1)
torch.set_num_threads(2)
dim, heads, layers, vocab, prompt = 512, 8, 6, 8192, 64
hd = dim // heads


class Layer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.o = torch.nn.Linear(dim, dim)
        self.n1 = torch.nn.LayerNorm(dim)
        self.n2 = torch.nn.LayerNorm(dim)
        self.up = torch.nn.Linear(dim, 4 * dim)
        self.down = torch.nn.Linear(4 * dim, dim)

    def forward(self, x, cache):
        b, t, _ = x.shape
        q, k, v = self.qkv(self.n1(x)).split(dim, -1)
        q = q.view(b, t, heads, hd).transpose(1, 2)
        k = k.view(b, t, heads, hd).transpose(1, 2)
        v = v.view(b, t, heads, hd).transpose(1, 2)
        if cache is not None:
            k = torch.cat([cache[0], k], 2)
            v = torch.cat([cache[1], v], 2)
        a = (q @ k.transpose(-1, -2)) / hd ** 0.5
        if t > 1:
            a = a + torch.full((t, t), float("-inf")).triu(1)
        y = (a.softmax(-1) @ v).transpose(1, 2).reshape(b, t, dim)
        x = x + self.o(y)
        x = x + self.down(torch.nn.functional.gelu(self.up(self.n2(x))))
        return x, (k, v)


emb = torch.nn.Embedding(vocab, dim)
blocks = [Layer() for _ in range(layers)]
head = torch.nn.Linear(dim, vocab)
digest = hashlib.sha256()
with torch.inference_mode():
    tok = torch.randint(0, vocab, (batch, prompt))
    caches = [None] * layers
    for step in range(tokens):
        if step == warmup:
            t0, c0 = time.perf_counter(), time.process_time()
            f0 = resource.getrusage(resource.RUSAGE_SELF)
        x = emb(tok)
        for i, layer in enumerate(blocks):
            x, caches[i] = layer(x, caches[i])
        tok = head(x[:, -1]).argmax(-1, keepdim=True)
        digest.update(tok.numpy().tobytes())
    dt, dc = time.perf_counter() - t0, time.process_time() - c0
    f1 = resource.getrusage(resource.RUSAGE_SELF)
n = batch * (tokens - warmup)
flt = (f1.ru_minflt + f1.ru_majflt - f0.ru_minflt - f0.ru_majflt) / (tokens - warmup)
print(f"engine tok_s={n / dt:.3f} cpu_tok_ms={1000 * dc / n:.4f} faults_step={flt:.1f} "
      f"out={digest.hexdigest()[:16]}")
