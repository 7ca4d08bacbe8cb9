// Hugging Face's own Jinja (@huggingface/jinja, what transformers.js renders chat templates
// with) on chat templates: the external oracle of tests/e2e/chat_templates.py.
//   node chat_template_oracle.mjs CASES.json OUT.json
// CASES: [{template, bos_token, eos_token, messages, add_generation_prompt}]; OUT: the
// rendered texts, or {"error": message} where the template raises. Under $KILN_NODE_ORACLES.
import fs from "node:fs";
import path from "node:path";
import {pathToFileURL} from "node:url";

const [casesPath, outPath] = process.argv.slice(2);
const {Template} = await import(pathToFileURL(path.join(
    process.env.KILN_NODE_ORACLES, "node_modules", "@huggingface", "jinja", "dist",
    "index.js")).href);
const out = JSON.parse(fs.readFileSync(casesPath, "utf8")).map(c => {
  try {
    return new Template(c.template).render({
      messages: c.messages, bos_token: c.bos_token, eos_token: c.eos_token,
      add_generation_prompt: c.add_generation_prompt,
    });
  } catch (e) {
    return {error: String(e.message || e)};
  }
});
fs.writeFileSync(outPath, JSON.stringify(out));
