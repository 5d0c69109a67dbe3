// A `cmd:` adapter (line protocol 2) for JavaScript tokenizer libraries from npm, resolved from the
// folder NODE_MODULES names (never this repository's dependencies; benchmarks/explain.py --real-npm):
//
//   cmd:node benchmarks/real_libraries/js_adapter.mjs hf-tokenizers TOKENIZER_JSON   (@huggingface/tokenizers)
//   cmd:node benchmarks/real_libraries/js_adapter.mjs gpt-tokenizer r50k_base        (gpt-tokenizer)
//   cmd:node benchmarks/real_libraries/js_adapter.mjs llama3-tokenizer-js            (its baked-in Llama 3 vocabulary)
//   cmd:node benchmarks/real_libraries/js_adapter.mjs gpt-3-encoder                  (its baked-in GPT-2 vocabulary)
//   cmd:node benchmarks/real_libraries/js_adapter.mjs llama-tokenizer-js             (its baked-in LLaMA vocabulary)
//   cmd:node benchmarks/real_libraries/js_adapter.mjs gpt3-tokenizer                 (its baked-in GPT-2 vocabulary)
//
// Strings in, so inputs that are not UTF-8 are declined (`invalid-utf8`), decoded strictly and
// keeping a leading U+FEFF. @huggingface/tokenizers: parse_special off is `split_special_tokens`
// in the tokenizer config, add_special is `add_special_tokens`. gpt-tokenizer: parse_special on is
// `allowedSpecial: "all"`, off `disallowedSpecial: new Set()` (special texts encoded as text).
// llama3-tokenizer-js: add_special is its default `{bos: true, eos: true}` (off: both false); parse_special
// off passes a `specialTokenRegex` that matches nowhere. gpt-3-encoder: `encode(text)`, which adds nothing and
// parses no special token, whatever is asked. llama-tokenizer-js: `encode(text, add_bos_token, true)`
// (add_special is its BOS; it always adds the preceding space) and parses no special token. gpt3-tokenizer:
// `new GPT3Tokenizer({type: "gpt3"}).encode(text).bpe`, which adds nothing and parses no special token.
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import readline from "node:readline";

const [library, arg] = process.argv.slice(2);
const modules = process.env.NODE_MODULES;
const require = createRequire(join(modules, "noop.js"));
const load = async (name, sub) => {
  const module = await import(pathToFileURL(require.resolve(sub ? `${name}/${sub}` : name)).href);
  return module.encode || module.Tokenizer ? module : module.default;  // a CommonJS build: its exports
};
const version = (name) => JSON.parse(readFileSync(join(modules, name, "package.json"), "utf8")).version;

let encode;
if (library === "hf-tokenizers") {
  const module = await load("@huggingface/tokenizers");
  const Tokenizer = module.Tokenizer ?? module.default.Tokenizer;
  const json = JSON.parse(readFileSync(arg, "utf8"));
  const parsing = new Tokenizer(json, { split_special_tokens: false });
  const plain = new Tokenizer(json, { split_special_tokens: true });
  encode = (text, addSpecial, parseSpecial) =>
    (parseSpecial ? parsing : plain).encode(text, { add_special_tokens: addSpecial }).ids;
} else if (library === "gpt-tokenizer") {
  const api = await load("gpt-tokenizer", `encoding/${arg}`);
  encode = (text, addSpecial, parseSpecial) =>
    api.encode(text, parseSpecial ? { allowedSpecial: "all" } : { disallowedSpecial: new Set() });
} else if (library === "llama3-tokenizer-js") {
  const tokenizer = await load("llama3-tokenizer-js");
  const nothing = /(?!)/g; // its `specialTokenRegex` option: a regex that matches nowhere parses no special token
  encode = (text, addSpecial, parseSpecial) =>
    tokenizer.encode(text, {
      ...(addSpecial ? { bos: true, eos: true } : { bos: false, eos: false }), // add_special: its default, both
      ...(parseSpecial ? {} : { specialTokenRegex: nothing }),
    });
} else if (library === "llama-tokenizer-js") {
  const tokenizer = await load("llama-tokenizer-js");
  encode = (text, addSpecial) => tokenizer.encode(text, addSpecial, true) ?? [];
} else if (library === "gpt-3-encoder") {
  const api = await load("gpt-3-encoder");
  encode = (text) => api.encode(text);
} else if (library === "gpt3-tokenizer") {
  const module = await load("gpt3-tokenizer");
  const tokenizer = new (module.default ?? module)({ type: "gpt3" });
  encode = (text) => tokenizer.encode(text).bpe;
} else {
  throw new Error(`unknown library ${library}`);
}
const packageName = { "hf-tokenizers": "@huggingface/tokenizers" }[library] ?? library;
const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

const lines = readline.createInterface({ input: process.stdin });
for await (const line of lines) {
  const request = JSON.parse(line);
  let answer;
  if (request.op === "hello") {
    answer = { protocol: 2, name: packageName, version: version(packageName), vocab_types: ["bpe", "spm", "wpm", "ugm"],
               unsupported: ["invalid-utf8"] };
  } else if (request.op === "load") {
    answer = { ok: true, ops: [] };
  } else if (request.op === "encode") {
    let text = null;
    try {
      text = decoder.decode(Buffer.from(request.text_b64, "base64"));
    } catch {
      answer = { unsupported: "invalid-utf8" };
    }
    if (text !== null) {
      try {
        answer = { ids: Array.from(encode(text, request.add_special, request.parse_special), Number) };
      } catch (error) {
        answer = { fault: `${error?.name}: ${error?.message}` };
      }
    }
  } else {
    answer = { fault: `unknown op ${request.op}` };
  }
  process.stdout.write(JSON.stringify({ id: request.id, ...answer }) + "\n");
}
