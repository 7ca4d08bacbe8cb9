// llama.cpp on the same machine and prompt as `kiln-run bench -p 64 -n 32 -r R --threads T`:
// a 64-token prompt of the same ids (3 + 7919 i mod vocab; kiln's first is BOS when the model
// has one), then 32 greedy decode steps, on a fresh sequence per repetition; prints the
// median [min-max] of prefill and decode tok/s. llama.cpp is node-llama-cpp's prebuilt CPU
// build (npm; it loads the ggml CPU variant for the machine and repacks Q4_0 for AVX2 itself),
// so nothing is compiled here. Decode time includes node-llama-cpp's per-token JavaScript
// and greedy sampling.
//   mkdir /tmp/llb && cd /tmp/llb && npm init -y && npm install node-llama-cpp@3.22.1
//   cp <repo>/tests/bench/llamacpp/bench.mjs . && node bench.mjs MODEL.gguf [R=5] [T=2] [VOCAB]
// (VOCAB: the model's vocabulary size, 32000 for the TinyLlama shape)
import {getLlama} from "node-llama-cpp";

const [modelPath, repsArg = "5", threadsArg = "2", vocabArg = "32000"] = process.argv.slice(2);
const reps = Number(repsArg), threads = Number(threadsArg), vocab = Number(vocabArg);
const llama = await getLlama({gpu: false, build: "never", maxThreads: threads, logLevel: "error"});
const model = await llama.loadModel({modelPath, gpuLayers: 0, useMmap: true});
const ctx = await model.createContext({contextSize: 512, batchSize: 512, sequences: 1,
                                       threads: {ideal: threads, min: threads}});
const seq = ctx.getSequence();
const prompt = [];
for (let i = 0; i < 64; ++i)
  prompt.push((3 + i * 7919) % vocab);
if (model.tokens.bos !== null)
  prompt[0] = model.tokens.bos;

const prefill = [], decode = [];
for (let r = 0; r < reps; ++r) {
  await seq.clearHistory();
  let t0 = performance.now();
  await seq.evaluateWithoutGeneratingNewTokens(prompt);
  prefill.push(64 / ((performance.now() - t0) / 1e3));
  // evaluate() decodes the given token, then each generated one: 32 steps, 32 tokens
  let n = 0;
  t0 = performance.now();
  for await (const token of seq.evaluate([prompt[63]], {temperature: 0}))
    if (++n >= 32)
      break;
  decode.push(n / ((performance.now() - t0) / 1e3));
}
const median = a => [...a].sort((x, y) => x - y)[a.length >> 1];
const range = a => `[${Math.min(...a).toFixed(1)}-${Math.max(...a).toFixed(1)}]`;
console.log(`llama.cpp ${modelPath}: ${threads} threads, prefill ${median(prefill).toFixed(2)} ` +
            `tok/s ${range(prefill)}, decode ${median(decode).toFixed(2)} tok/s ${range(decode)}`);
await ctx.dispose();
await model.dispose();
