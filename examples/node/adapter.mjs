#!/usr/bin/env node
// A tokenizer port in JavaScript, gated by tokconf over the line protocol, version 2
// (docs/line-protocol.md):
//
//     tokconf check --impl 'cmd:node examples/node/adapter.mjs' --vocab gpt-2
//
// It is a small but complete port of llama.cpp's byte-level BPE for vocabularies with the `gpt2`
// tokenizer model and the GPT-2 pre-tokenizer (tokenizer.ggml.pre "gpt-2"), written from
// llama.cpp's src/llama-vocab.cpp and src/unicode.cpp, with no dependencies: a GGUF reader, the
// special-token split, the GPT-2 word split, BPE merges, the vocab facts, token_to_piece and
// detokenize. Start a port in another language from it: read a JSON line, answer a JSON line,
// and log to stderr only (stdout is for answers).
//
// Where it can differ from llama.cpp, it says so: Unicode letter and number classes come from
// Node's own tables (`\p{L}`, `\p{N}`), whose Unicode version may differ from llama.cpp's.
//
// `--plant-bug NAME` plants a bug a real port could have, so tokconf's tests can show the gate
// catches it: `nel-not-space` (U+0085 is not whitespace, as JavaScript's `\s` says) or
// `eos-plus-one` (the EOS fact is off by one).

import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";

const PLANTED = (() => {
  const at = process.argv.indexOf("--plant-bug");
  return at > 0 ? process.argv[at + 1] : null;
})();

// ---------------------------------------------------------------------------------------------
// GGUF: only the key-value header is read (gguf.cpp's gguf_init_from_file, types 0-12).

function readGguf(path) {
  const buf = readFileSync(path);
  let pos = 0;
  const need = (n) => {
    if (pos + n > buf.length) throw new Error(`truncated GGUF at byte ${pos}`);
  };
  const u32 = () => (need(4), (pos += 4), buf.readUInt32LE(pos - 4));
  const u64 = () => (need(8), (pos += 8), Number(buf.readBigUInt64LE(pos - 8)));
  const str = () => {
    const n = u64();
    need(n);
    pos += n;
    return buf.toString("utf8", pos - n, pos);
  };
  const scalar = {
    0: () => (need(1), buf.readUInt8(pos++)),
    1: () => (need(1), buf.readInt8(pos++)),
    2: () => (need(2), (pos += 2), buf.readUInt16LE(pos - 2)),
    3: () => (need(2), (pos += 2), buf.readInt16LE(pos - 2)),
    4: u32,
    5: () => (need(4), (pos += 4), buf.readInt32LE(pos - 4)),
    6: () => (need(4), (pos += 4), buf.readFloatLE(pos - 4)),
    7: () => (need(1), buf.readUInt8(pos++) !== 0),
    8: str,
    10: u64,
    11: () => (need(8), (pos += 8), Number(buf.readBigInt64LE(pos - 8))),
    12: () => (need(8), (pos += 8), buf.readDoubleLE(pos - 8)),
  };
  const value = (type) => {
    if (type === 9) {
      const itemType = u32();
      const n = u64();
      if (!scalar[itemType]) throw new Error(`unsupported GGUF array type ${itemType}`);
      const items = new Array(n);
      for (let i = 0; i < n; i++) items[i] = scalar[itemType]();
      return items;
    }
    if (!scalar[type]) throw new Error(`unknown GGUF value type ${type}`);
    return scalar[type]();
  };
  if (buf.toString("latin1", 0, 4) !== "GGUF") throw new Error(`${path} is not a GGUF file`);
  pos = 4;
  u32(); // version
  u64(); // tensor count
  const kvCount = u64();
  const fields = {};
  for (let i = 0; i < kvCount; i++) {
    const key = str();
    fields[key] = value(u32());
  }
  return fields;
}

// ---------------------------------------------------------------------------------------------
// Code points and their classes (unicode.cpp).

// unicode_cpt_flags' whitespace: Unicode White_Space. Not JavaScript's `\s`, which adds U+FEFF
// and leaves out U+0085.
const WHITESPACE = new Set([
  0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x20, 0x85, 0xa0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004,
  0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000,
]);
if (PLANTED === "nel-not-space") WHITESPACE.delete(0x85);

const LETTER = /^\p{L}$/u;
const NUMBER = /^\p{N}$/u;

class InvalidCodepoint extends Error {}

// unicode_cpts_from_utf8: the lead byte decides the length, continuation bytes are only checked
// for their top bits; anything else costs one byte and gives U+FFFD.
function codePoints(bytes) {
  const out = [];
  for (let pos = 0; pos < bytes.length; ) {
    const lead = bytes[pos];
    let length = 0;
    let value = 0;
    if (lead < 0x80) {
      out.push(lead);
      pos += 1;
      continue;
    } else if ((lead & 0xe0) === 0xc0) [length, value] = [2, lead & 0x1f];
    else if ((lead & 0xf0) === 0xe0) [length, value] = [3, lead & 0x0f];
    else if ((lead & 0xf8) === 0xf0) [length, value] = [4, lead & 0x07];
    let ok = length > 0 && pos + length <= bytes.length;
    for (let i = 1; ok && i < length; i++) ok = (bytes[pos + i] & 0xc0) === 0x80;
    if (!ok) {
      out.push(0xfffd);
      pos += 1;
      continue;
    }
    for (let i = 1; i < length; i++) value = (value << 6) | (bytes[pos + i] & 0x3f);
    out.push(value);
    pos += length;
  }
  return out;
}

// unicode_cpt_to_utf8, which throws above U+10FFFF (llama.cpp b11192 then aborts: refuse).
function utf8(cpt, out) {
  if (cpt < 0x80) out.push(cpt);
  else if (cpt < 0x800) out.push(0xc0 | (cpt >> 6), 0x80 | (cpt & 0x3f));
  else if (cpt < 0x10000) out.push(0xe0 | (cpt >> 12), 0x80 | ((cpt >> 6) & 0x3f), 0x80 | (cpt & 0x3f));
  else if (cpt <= 0x10ffff)
    out.push(0xf0 | (cpt >> 18), 0x80 | ((cpt >> 12) & 0x3f), 0x80 | ((cpt >> 6) & 0x3f), 0x80 | (cpt & 0x3f));
  else throw new InvalidCodepoint(`invalid codepoint 0x${cpt.toString(16).toUpperCase()}`);
}

const OUT = -1; // beyond the fragment: no class at all
function classes(cpt) {
  if (cpt === OUT) return { letter: false, number: false, space: false, any: false };
  const ch = cpt <= 0x10ffff ? String.fromCodePoint(cpt) : "";
  return { letter: LETTER.test(ch), number: NUMBER.test(ch), space: WHITESPACE.has(cpt), any: true };
}

// unicode_regex_split_custom_gpt2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
function splitGpt2(cpts) {
  const words = [];
  const at = (i) => (i < cpts.length ? cpts[i] : OUT);
  const cls = (i) => classes(at(i));
  let start = 0;
  const add = (end) => {
    if (end > start) words.push(cpts.slice(start, end));
    start = end;
  };
  const isChar = (i, c) => at(i) === c.codePointAt(0);
  for (let pos = 0; pos < cpts.length; ) {
    const cpt = at(pos);
    if (cpt === 0x27 && pos + 1 < cpts.length) {
      if ("stmd".split("").some((c) => isChar(pos + 1, c))) {
        add((pos += 2));
        continue;
      }
      if (pos + 2 < cpts.length && ["re", "ve", "ll"].some((p) => isChar(pos + 1, p[0]) && isChar(pos + 2, p[1]))) {
        add((pos += 3));
        continue;
      }
    }
    let c = cpt === 0x20 ? cls(pos + 1) : cls(pos);
    const run = (test) => {
      pos += cpt === 0x20 ? 1 : 0;
      while (test(c)) c = cls(++pos);
      add(pos);
    };
    if (c.letter) {
      run((k) => k.letter);
      continue;
    }
    if (c.number) {
      run((k) => k.number);
      continue;
    }
    if (!(c.space || c.letter || c.number) && c.any) {
      run((k) => !(k.space || k.letter || k.number) && k.any);
      continue;
    }
    let spaces = 0;
    while (cls(pos + spaces).space) spaces++;
    if (spaces > 1 && at(pos + spaces) !== OUT) {
      add((pos += spaces - 1));
      continue;
    }
    if (spaces > 0) {
      add((pos += spaces));
      continue;
    }
    add(++pos);
  }
  return words;
}

// ---------------------------------------------------------------------------------------------
// The vocabulary (llama_vocab::impl::load) and byte-level BPE (llm_tokenizer_bpe_session).

const ATTR = { UNKNOWN: 1, UNUSED: 2, NORMAL: 4, CONTROL: 8, USER_DEFINED: 16, BYTE: 32 };
const TYPE_TO_ATTR = [0, ATTR.NORMAL, ATTR.UNKNOWN, ATTR.CONTROL, ATTR.USER_DEFINED, ATTR.UNUSED, ATTR.BYTE];
const EOG_TEXTS = new Set([
  "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>", "<end_of_turn>",
  "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>",
  "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>", "<｜end▁of▁sentence｜>", "[e~[",
]);

// unicode_byte_to_utf8: printable bytes stand for themselves, the others for U+0100 upwards.
const BYTE_TO_CHAR = [];
const CHAR_TO_BYTE = new Map();
{
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    BYTE_TO_CHAR[b] = String.fromCodePoint(printable ? b : 256 + extra++);
    CHAR_TO_BYTE.set(BYTE_TO_CHAR[b], b);
  }
}

class Vocab {
  constructor(path) {
    const f = readGguf(path);
    if (f["tokenizer.ggml.model"] !== "gpt2" || f["tokenizer.ggml.pre"] !== "gpt-2")
      throw new Error(`only gpt2 vocabularies with the gpt-2 pre-tokenizer (this one: ` +
        `${f["tokenizer.ggml.model"]}, ${f["tokenizer.ggml.pre"]})`);
    this.tokens = f["tokenizer.ggml.tokens"];
    this.ids = new Map(this.tokens.map((t, i) => [t, i]));
    const types = f["tokenizer.ggml.token_type"] ?? this.tokens.map(() => 1);
    this.attrs = types.map((t) => TYPE_TO_ATTR[t] ?? 0);
    this.ranks = new Map();
    (f["tokenizer.ggml.merges"] ?? []).forEach((m, rank) => {
      const cut = m.indexOf(" ", 1);
      if (cut > 0 && !this.ranks.has(m)) this.ranks.set(m, rank);
    });
    this.bos = f["tokenizer.ggml.bos_token_id"] ?? 11;
    this.eos = f["tokenizer.ggml.eos_token_id"] ?? 11;
    if (PLANTED === "eos-plus-one") this.eos += 1;
    this.addBos = f["tokenizer.ggml.add_bos_token"] ?? false;
    this.addEos = f["tokenizer.ggml.add_eos_token"] ?? false;
    this.addSep = f["tokenizer.ggml.add_sep_token"] ?? false; // llama_vocab_get_add_sep: false for gpt-2's pre
    const eog = new Set(this.eos >= 0 && this.eos < this.tokens.length ? [this.eos] : []);
    for (const text of EOG_TEXTS) {
      const id = this.ids.get(text);
      if (id !== undefined) {
        eog.add(id);
        this.attrs[id] |= ATTR.CONTROL; // "control-looking token ... will be overridden"
      }
    }
    this.eog = [...eog].sort((a, b) => a - b);
    // cache_special_tokens: control, user-defined and unknown tokens, longest text first.
    const special = this.attrs.flatMap((a, i) => (a & (ATTR.CONTROL | ATTR.USER_DEFINED | ATTR.UNKNOWN) ? [i] : []));
    this.specials = special
      .map((i) => [i, Buffer.from(this.tokens[i], "utf8")])
      .filter(([, text]) => text.length > 0)
      .sort((a, b) => b[1].length - a[1].length || a[0] - b[0]);
    this.cache = new Map();
  }

  // tokenizer_st_partition: cut special-token texts out of the raw bytes. Control and unknown
  // tokens only with parse_special; user-defined ones always.
  partition(bytes, parseSpecial) {
    let fragments = bytes.length ? [bytes] : [];
    for (const [id, text] of this.specials) {
      if (!parseSpecial && this.attrs[id] & (ATTR.CONTROL | ATTR.UNKNOWN)) continue;
      const next = [];
      for (const fragment of fragments) {
        if (typeof fragment === "number") {
          next.push(fragment);
          continue;
        }
        let rest = fragment;
        for (let at; (at = rest.indexOf(text)) >= 0; rest = rest.subarray(at + text.length)) {
          if (at > 0) next.push(rest.subarray(0, at));
          next.push(id);
        }
        if (rest.length) next.push(rest);
      }
      fragments = next;
    }
    return fragments;
  }

  encode(bytes, addSpecial, parseSpecial) {
    const out = addSpecial && this.addBos ? [this.bos] : [];
    for (const fragment of this.partition(bytes, parseSpecial)) {
      if (typeof fragment === "number") out.push(fragment);
      else for (const word of splitGpt2(codePoints(fragment))) out.push(...this.encodeWord(word));
    }
    if (addSpecial && this.addEos) out.push(this.eos);
    return out;
  }

  encodeWord(cpts) {
    const bytes = [];
    for (const cpt of cpts) utf8(cpt, bytes);
    const word = bytes.map((b) => BYTE_TO_CHAR[b]).join("");
    const cached = this.cache.get(word);
    if (cached) return cached;
    const symbols = [...word];
    // Merge the pair with the lowest rank, the leftmost on ties, until none is left. pairRanks[i] is
    // the rank of symbols i and i+1; a merge changes only its neighbours' ranks, so only those are
    // looked up again (looking every pair up on every merge is quadratic in lookups on a long word).
    const rankOf = (i) => this.ranks.get(symbols[i] + " " + symbols[i + 1]) ?? Infinity;
    const pairRanks = symbols.slice(1).map((_, i) => rankOf(i));
    for (;;) {
      let best = -1;
      let bestRank = Infinity;
      for (let i = 0; i < pairRanks.length; i++) {
        if (pairRanks[i] < bestRank) [best, bestRank] = [i, pairRanks[i]];
      }
      if (best < 0) break;
      symbols.splice(best, 2, symbols[best] + symbols[best + 1]);
      pairRanks.splice(best, 1);
      if (best > 0) pairRanks[best - 1] = rankOf(best - 1);
      if (best < pairRanks.length) pairRanks[best] = rankOf(best);
    }
    const ids = [];
    for (const symbol of symbols) {
      const id = this.ids.get(symbol);
      if (id !== undefined) ids.push(id);
      else for (const ch of symbol) if (this.ids.has(ch)) ids.push(this.ids.get(ch)); // byte fallback
    }
    this.cache.set(word, ids);
    return ids;
  }

  // llama_token_to_piece (lstrip 0).
  piece(id, special) {
    const attr = this.attrs[id];
    if (!special && attr & (ATTR.UNKNOWN | ATTR.CONTROL)) return Buffer.alloc(0);
    const text = this.tokens[id];
    if (attr & (ATTR.UNKNOWN | ATTR.CONTROL | ATTR.USER_DEFINED)) return Buffer.from(text, "utf8");
    if (attr & ATTR.NORMAL) {
      const out = [];
      for (const ch of text) {
        const b = CHAR_TO_BYTE.get(ch);
        if (b !== undefined) out.push(b);
        else out.push(...Buffer.from(`[UNK_BYTE_0x${Buffer.from(ch, "utf8").toString("hex")}${text}]`, "utf8"));
      }
      return Buffer.from(out);
    }
    if (attr & ATTR.BYTE) return Buffer.from([parseInt(text.slice(3, 5), 16)]);
    return Buffer.alloc(0);
  }

  // llama_detokenize, with the GPT-2 pre-tokenizer's clean_spaces passes.
  detokenize(ids, removeSpecial, unparseSpecial) {
    if (removeSpecial && this.addBos && ids.length && ids[0] === this.bos) ids = ids.slice(1);
    if (removeSpecial && this.addEos && ids.length && ids[ids.length - 1] === this.eos) ids = ids.slice(0, -1);
    const text = Buffer.concat(ids.map((id) => this.piece(id, unparseSpecial)));
    return cleanSpaces(text);
  }
}

// The three clean-up passes of llama_vocab::impl::detokenize, each rewriting the buffer in place.
function cleanSpaces(text) {
  let size = text.length;
  const pass = (drop) => {
    let total = size ? 1 : 0;
    for (let i = 1; i < size; i++) {
      const skip = drop(i);
      if (skip === "next") {
        total -= 1;
        text[total++] = text[i];
        i += 1;
        text[i] = 0; // "remove next space": llama.cpp writes a NUL ahead of itself
        continue;
      }
      if (skip) total -= 1;
      text[total++] = text[i];
    }
    size = total;
  };
  const SPACE = 0x20;
  const QUOTE = 0x27;
  pass((i) => text[i - 1] === SPACE && "?!.,".includes(String.fromCharCode(text[i])));
  pass((i) => (text[i] === QUOTE && i + 1 < size && text[i - 1] === SPACE && text[i + 1] === SPACE ? "next" : false));
  pass((i) => {
    if (!(text[i - 1] === SPACE && text[i] === QUOTE && i + 1 < size)) return false;
    const a = text[i + 1];
    const b = i + 2 < size ? text[i + 2] : -1;
    return a === 0x73 || a === 0x6d || (b >= 0 && ((a === 0x72 && b === 0x65) || (a === 0x76 && b === 0x65)));
  });
  return text.subarray(0, size);
}

// ---------------------------------------------------------------------------------------------
// The line protocol.

let vocab = null;

function answer(request) {
  switch (request.op) {
    case "hello":
      return { protocol: 2, name: "gpt2-node-example", version: "1", vocab_types: ["bpe"] };
    case "load":
      try {
        vocab = new Vocab(request.path);
      } catch (error) {
        vocab = null;
        return { ok: false, error: String(error.message) };
      }
      return { ok: true, ops: ["facts", "token_to_piece", "detokenize"] };
    case "encode": {
      const bytes = Buffer.from(request.text_b64, "base64"); // bytes, not a string: inputs may be invalid UTF-8
      try {
        return { ids: vocab.encode(bytes, request.add_special, request.parse_special) };
      } catch (error) {
        if (error instanceof InvalidCodepoint) return { error: error.message };
        throw error;
      }
    }
    case "facts":
      return {
        facts: { add_bos: vocab.addBos, add_eos: vocab.addEos, add_sep: vocab.addSep, bos: vocab.bos, eos: vocab.eos, eog_ids: vocab.eog },
      };
    case "token_to_piece":
      return { pieces_b64: request.ids.map((id) => vocab.piece(id, request.special).toString("base64")) };
    case "detokenize":
      return {
        text_b64: vocab.detokenize(request.ids, request.remove_special, request.unparse_special).toString("base64"),
      };
    default:
      return { error: `unknown op ${request.op}` };
  }
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on("line", (line) => {
  const request = JSON.parse(line);
  process.stdout.write(JSON.stringify({ ...answer(request), id: request.id }) + "\n");
});
