// llama.cpp's token ids for text files: the external oracle of tests/e2e/llamacpp_tokenizer.py.
//   node llamacpp_tokenize.mjs MODEL.gguf OUT.json TEXT...
// Loads only the vocabulary and writes {"TEXT": [ids...]} (no BOS; special-token text is
// parsed as the special token, as Hugging Face does). node-llama-cpp under $KILN_NODE_ORACLES.
import fs from "node:fs";
import path from "node:path";
import {pathToFileURL} from "node:url";

const [modelPath, outPath, ...texts] = process.argv.slice(2);
const {getLlama} = await import(pathToFileURL(path.join(
    process.env.KILN_NODE_ORACLES, "node_modules", "node-llama-cpp", "dist", "index.js")).href);
const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
const model = await llama.loadModel({modelPath, vocabOnly: true});
const out = {};
for (const t of texts)
  out[t] = Array.from(model.tokenize(fs.readFileSync(t, "utf8"), true));
fs.writeFileSync(outPath, JSON.stringify(out));
await model.dispose();
