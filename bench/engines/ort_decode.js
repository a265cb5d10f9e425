// ort_decode.js - a decode loop over ONNX Runtime (onnxruntime-node from
// npm, CPU, with its arena on as by default): every token, the past K/V go
// in and the grown K/V come out, as a generation loop over an exported
// decoder does.
//
//   node ort_decode.js MODEL.onnx BATCH TOKENS WARMUP
//
// Prints "engine tok_s=... cpu_tok_ms=... faults_step=... out=..." for
// bench/engine (see torch_decode.py).
'use strict';
const ort = require('onnxruntime-node');
const crypto = require('crypto');

const [model, batchArg, tokensArg, warmupArg] = process.argv.slice(2);
const batch = +batchArg, tokens = +tokensArg, warmup = +warmupArg;
const layers = 6, heads = 8, hd = 64, vocab = 8192, prompt = 64;

async function main() {
  const session = await ort.InferenceSession.create(
      model, {intraOpNumThreads: 2, interOpNumThreads: 1});
  const past = {};
  for (let i = 0; i < 2 * layers; i++)
    past['p' + i] = new ort.Tensor('float32', new Float32Array(0), [batch, heads, 0, hd]);
  let tok = new BigInt64Array(batch * prompt);
  for (let i = 0; i < tok.length; i++) tok[i] = BigInt((i * 7919) % vocab);
  const digest = crypto.createHash('sha256');
  let t0 = 0n, c0 = 0, f0 = 0;
  for (let step = 0; step < tokens; step++) {
    if (step === warmup) {
      t0 = process.hrtime.bigint();
      const u = process.cpuUsage();
      c0 = u.user + u.system;
      const r = process.resourceUsage();
      f0 = r.minorPageFault + r.majorPageFault;
    }
    const feeds = {tok: new ort.Tensor('int64', tok, [batch, tok.length / batch]), ...past};
    const out = await session.run(feeds);
    const logits = out.logits.data, next = new BigInt64Array(batch);
    for (let b = 0; b < batch; b++) {
      let best = 0;
      for (let v = 1; v < vocab; v++)
        if (logits[b * vocab + v] > logits[b * vocab + best]) best = v;
      next[b] = BigInt(best);
    }
    digest.update(Buffer.from(next.buffer));
    for (let i = 0; i < 2 * layers; i++) past['p' + i] = out['o' + i];
    tok = next;
  }
  const dt = Number(process.hrtime.bigint() - t0) / 1e9;
  const u = process.cpuUsage(), dc = (u.user + u.system - c0) / 1e6;
  const r = process.resourceUsage();
  const n = batch * (tokens - warmup);
  const flt = (r.minorPageFault + r.majorPageFault - f0) / (tokens - warmup);
  console.log(`engine tok_s=${(n / dt).toFixed(3)} cpu_tok_ms=${(1000 * dc / n).toFixed(4)} ` +
              `faults_step=${flt.toFixed(1)} out=${digest.digest('hex').slice(0, 16)}`);
}
main().catch((e) => {
  console.error(`ort_decode: ${e.message}`);
  process.exit(1);
});
