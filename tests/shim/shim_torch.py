# shim_torch.py - CPU inference of a small, randomly initialised model with
# a fixed seed; prints a hash of every output tensor, so two runs can be
# compared bit for bit (shim_torch.test runs it with and without the shim).
import hashlib
import sys

import torch

torch.manual_seed(1234)
torch.set_num_threads(2)


class Block(torch.nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.attn = torch.nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm1 = torch.nn.LayerNorm(dim)
        self.norm2 = torch.nn.LayerNorm(dim)
        self.mlp = torch.nn.Sequential(
            torch.nn.Linear(dim, 4 * dim), torch.nn.GELU(), torch.nn.Linear(4 * dim, dim))

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


# Activations and logits of 64 KiB to 1 MiB: the pools' range, kept small
# so that the test stays short on a loaded two-core machine.
dim, heads, layers, vocab = 64, 2, 2, 512
model = torch.nn.Sequential(
    torch.nn.Embedding(vocab, dim),
    *[Block(dim, heads) for _ in range(layers)],
    torch.nn.Linear(dim, vocab)).eval()

digest = hashlib.sha256()
with torch.inference_mode():
    for step in range(4):
        tokens = torch.randint(0, vocab, (4, 48 + 16 * step))
        logits = model(tokens)
        digest.update(logits.contiguous().numpy().tobytes())
        print(step, tuple(logits.shape), hashlib.sha256(logits.numpy().tobytes()).hexdigest()[:16])
print("all", digest.hexdigest())
sys.exit(0)
