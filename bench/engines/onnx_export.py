# onnx_export.py - write the decoder of torch_decode.py, with its K/V cache
# as inputs and outputs, as an ONNX model for ort_decode.js.
#
#   python3 onnx_export.py MODEL.onnx
import sys

import torch

torch.manual_seed(1)
dim, heads, layers, vocab = 512, 8, 6, 8192
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

    def forward(self, x, pk, pv):
        b, t, _ = x.shape
        q, k, v = self.qkv(self.n1(x)).split(dim, -1)
        q = q.view(b, t, heads, hd).transpose(1, 2)
        k = torch.cat([pk, k.view(b, t, heads, hd).transpose(1, 2)], 2)
        v = torch.cat([pv, v.view(b, t, heads, hd).transpose(1, 2)], 2)
        a = (q @ k.transpose(-1, -2)) / hd ** 0.5
        y = (a.softmax(-1) @ v).transpose(1, 2).reshape(b, t, dim)
        x = x + self.o(y)
        x = x + self.down(torch.nn.functional.gelu(self.up(self.n2(x))))
        return x, k, v


class Decoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, dim)
        self.blocks = torch.nn.ModuleList([Layer() for _ in range(layers)])
        self.head = torch.nn.Linear(dim, vocab)

    def forward(self, tok, *past):
        x = self.emb(tok)
        kv = []
        for i, layer in enumerate(self.blocks):
            x, k, v = layer(x, past[2 * i], past[2 * i + 1])
            kv += [k, v]
        return (self.head(x[:, -1]), *kv)


past = [torch.zeros(1, heads, 1, hd) for _ in range(2 * layers)]
ins = ["tok"] + [f"p{i}" for i in range(2 * layers)]
outs = ["logits"] + [f"o{i}" for i in range(2 * layers)]
axes = {"tok": {0: "b", 1: "t"}}
axes.update({f"p{i}": {0: "b", 2: "past"} for i in range(2 * layers)})
axes.update({f"o{i}": {0: "b", 2: "total"} for i in range(2 * layers)})
torch.onnx.export(Decoder().eval(), (torch.zeros(1, 1, dtype=torch.long), *past), sys.argv[1],
                  input_names=ins, output_names=outs, dynamic_axes=axes, opset_version=14)
