// llama.cpp's logits for a list of token ids: the external oracle of tests/e2e/llamacpp_*.py.
//   node llamacpp_logits.mjs MODEL.gguf IDS.txt POS[,POS...] OUT.json [GREEDY_N]
// Runs the ids as one sequence from position 0 and writes {"POS": [logit of token 0, 1, ...]}
// for each asked position; with GREEDY_N, also "greedy": the GREEDY_N token ids llama.cpp's
// greedy sampling (temperature 0) then generates from there. llama.cpp is node-llama-cpp's prebuilt CPU build, found under
// $KILN_NODE_ORACLES (scripts/install-deps.sh puts it there). The KV cache is f32 and flash
// attention off, so the only differences from kiln's fp32 reference are in summation order.
import fs from "node:fs";
import path from "node:path";
import {pathToFileURL} from "node:url";

const [modelPath, idsPath, positionsArg, outPath, greedyArg] = process.argv.slice(2);
const oracles = process.env.KILN_NODE_ORACLES;
const {getLlama} = await import(pathToFileURL(
    path.join(oracles, "node_modules", "node-llama-cpp", "dist", "index.js")).href);

const ids = fs.readFileSync(idsPath, "utf8").split(/[\s,]+/).filter(Boolean).map(Number);
const wanted = new Set(positionsArg.split(",").map(Number));
const llama = await getLlama({gpu: false, build: "never", logLevel: "error", maxThreads: 2});
const model = await llama.loadModel({modelPath, gpuLayers: 0});
const greedyN = Number(greedyArg ?? 0);
const context = await model.createContext({
  contextSize: ids.length + greedyN, batchSize: 512, sequences: 1, flashAttention: false,
  experimentalKvCacheKeyType: "F32", experimentalKvCacheValueType: "F32",
});
const sequence = context.getSequence();
if (greedyN > 0)
  wanted.add(ids.length - 1);
const input = ids.map((id, pos) => wanted.has(pos) ? [id, {generateNext: {logits: true}}] : id);
const results = await sequence.controlledEvaluate(input);
const out = {};
for (const pos of wanted) {
  const logits = results[pos]?.next?.logits;
  if (!logits)
    throw new Error(`llama.cpp returned no logits at position ${pos}`);
  const row = new Array(logits.size);
  for (const [token, value] of logits)
    row[token] = value;
  out[pos] = row;
}
if (greedyN > 0) {
  // the last prompt logits pick the first token; each generated token is then evaluated
  const greedy = [];
  let logits = results[ids.length - 1]?.next?.logits;
  for (let i = 0; i < greedyN; ++i) {
    if (!logits)
      throw new Error(`llama.cpp returned no logits for greedy token ${i}`);
    let best = -1, bestValue = -Infinity;
    for (const [token, value] of logits)
      if (value > bestValue || (value === bestValue && token < best))
        best = token, bestValue = value;
    greedy.push(best);
    if (i + 1 < greedyN)
      logits = (await sequence.controlledEvaluate([[best, {generateNext: {logits: true}}]]))[0]
          ?.next?.logits;
  }
  out.greedy = greedy;
}
fs.writeFileSync(outPath, JSON.stringify(out));
await context.dispose();
await model.dispose();
