//! The vocabulary (llama_vocab::impl::load) and byte-level BPE (llm_tokenizer_bpe_session), with
//! token_to_piece and detokenize, from llama.cpp's src/llama-vocab.cpp.

use std::collections::HashMap;

use crate::gguf::{self, Value};
use crate::unicode::{self, append_utf8, code_points, split_gpt2};
use crate::PlantedBug;

/// A token id, as llama.cpp's `llama_token`.
pub type Token = i32;

// llama_token_attr.
const ATTR_UNKNOWN: u32 = 1 << 0;
const ATTR_UNUSED: u32 = 1 << 1;
const ATTR_NORMAL: u32 = 1 << 2;
const ATTR_CONTROL: u32 = 1 << 3;
const ATTR_USER_DEFINED: u32 = 1 << 4;
const ATTR_BYTE: u32 = 1 << 5;

/// tokenizer.ggml.token_type (llama_token_type) to attributes; any other type is UNDEFINED (0).
fn attr_of_type(kind: i64) -> u32 {
    match kind {
        1 => ATTR_NORMAL,
        2 => ATTR_UNKNOWN,
        3 => ATTR_CONTROL,
        4 => ATTR_USER_DEFINED,
        5 => ATTR_UNUSED,
        6 => ATTR_BYTE,
        _ => 0,
    }
}

/// The texts llama.cpp makes end-of-generation tokens (and control tokens) wherever it finds them.
#[rustfmt::skip]
const EOG_TEXTS: &[&str] = &[
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>", "<end_of_turn>",
    "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>",
    "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>", "<｜end▁of▁sentence｜>", "[e~[",
];

pub struct Vocab {
    tokens: Vec<Vec<u8>>,
    ids: HashMap<Vec<u8>, Token>,
    attrs: Vec<u32>,
    /// bpe_ranks, keyed by the merge's own text, "left right": byte-level symbols never hold a
    /// space (U+0020 stands as U+0120), so the pair is unambiguous.
    ranks: HashMap<Vec<u8>, usize>,
    pub bos: Token,
    pub eos: Token,
    pub add_bos: bool,
    pub add_eos: bool,
    pub add_sep: bool, // llama_vocab_get_add_sep: false for gpt-2's pre unless the GGUF says otherwise
    pub eog: Vec<Token>,
    /// cache_special_tokens: control, user-defined and unknown tokens, longest text first.
    specials: Vec<Token>,
    /// The UTF-8 of the code point standing for each byte, and back (unicode_byte_to_utf8 and
    /// unicode_utf8_to_byte).
    byte_to_char: Vec<Vec<u8>>,
    char_to_byte: HashMap<u32, u8>,
    /// Words already merged: their ids.
    cache: HashMap<Vec<u8>, Vec<Token>>,
    bug: Option<PlantedBug>,
}

/// What loading a vocabulary can say: the port declines it (`ok: false`), or broke on it (`fault`).
pub enum LoadError {
    Declined(String),
    Broke(String),
}

fn string_field<'a>(fields: &'a HashMap<String, Value>, key: &str) -> Option<&'a [u8]> {
    match fields.get(key) {
        Some(Value::Str(s)) => Some(s),
        _ => None,
    }
}

fn int_field(fields: &HashMap<String, Value>, key: &str) -> Option<i64> {
    match fields.get(key) {
        Some(Value::Int(n)) => Some(*n),
        _ => None,
    }
}

fn bool_field(fields: &HashMap<String, Value>, key: &str) -> Option<bool> {
    match fields.get(key) {
        Some(Value::Bool(b)) => Some(*b),
        _ => None,
    }
}

fn array_field<'a>(fields: &'a HashMap<String, Value>, key: &str) -> &'a [Value] {
    match fields.get(key) {
        Some(Value::Array(items)) => items,
        _ => &[],
    }
}

impl Vocab {
    pub fn load(path: &str, bug: Option<PlantedBug>) -> Result<Vocab, LoadError> {
        let fields = gguf::read(path).map_err(LoadError::Broke)?;
        let model = string_field(&fields, "tokenizer.ggml.model");
        let pre = string_field(&fields, "tokenizer.ggml.pre");
        if model != Some(b"gpt2") || pre != Some(b"gpt-2") {
            let show =
                |s: Option<&[u8]>| s.map_or_else(|| "none".to_string(), |s| String::from_utf8_lossy(s).into_owned());
            return Err(LoadError::Declined(format!(
                "only gpt2 vocabularies with the gpt-2 pre-tokenizer (this one: {}, {})",
                show(model),
                show(pre)
            )));
        }

        let mut tokens = Vec::new();
        for (i, item) in array_field(&fields, "tokenizer.ggml.tokens").iter().enumerate() {
            match item {
                Value::Str(text) if text.is_empty() => tokens.push(format!("[EMPTY_{}]", i).into_bytes()),
                Value::Str(text) => tokens.push(text.clone()),
                _ => return Err(LoadError::Broke(format!("token {} is not a string", i))),
            }
        }
        if tokens.is_empty() {
            return Err(LoadError::Broke("no tokenizer.ggml.tokens".to_string()));
        }
        let n_tokens = tokens.len();
        let ids: HashMap<Vec<u8>, Token> = tokens.iter().enumerate().map(|(i, t)| (t.clone(), i as Token)).collect();
        let types = array_field(&fields, "tokenizer.ggml.token_type");
        let mut attrs: Vec<u32> = (0..n_tokens)
            .map(|i| match types.get(i) {
                Some(Value::Int(kind)) => attr_of_type(*kind),
                _ if types.is_empty() => ATTR_NORMAL,
                _ => 0,
            })
            .collect();

        // bpe_ranks: the first rank of each merge; a line without a space after its first byte is
        // llama.cpp's ("", "") pair, which no symbol pair matches.
        let mut ranks = HashMap::new();
        for (rank, item) in array_field(&fields, "tokenizer.ggml.merges").iter().enumerate() {
            if let Value::Str(line) = item {
                if line.len() > 1 && line[1..].contains(&b' ') {
                    ranks.entry(line.clone()).or_insert(rank);
                }
            }
        }

        // The gpt2 model's default special tokens (11), dropped when out of range, then the GGUF's
        // own where in range.
        let special_id = |key: &str| -> Token {
            let mut id: Token = if 11 < n_tokens { 11 } else { -1 };
            if let Some(n) = int_field(&fields, key) {
                if n >= 0 && (n as usize) < n_tokens {
                    id = n as Token;
                }
            }
            id
        };
        let bos = special_id("tokenizer.ggml.bos_token_id");
        let mut eos = special_id("tokenizer.ggml.eos_token_id");
        if bug == Some(PlantedBug::EosPlusOne) {
            eos += 1;
        }

        // special_eog_ids: the EOG texts (made control tokens: "control-looking token ... will be
        // overridden"), and the EOS token.
        let mut eog = Vec::new();
        for text in EOG_TEXTS {
            if let Some(&id) = ids.get(text.as_bytes()) {
                eog.push(id);
                attrs[id as usize] |= ATTR_CONTROL;
            }
        }
        if eos >= 0 && (eos as usize) < n_tokens {
            eog.push(eos);
        }
        eog.sort_unstable();
        eog.dedup();

        let mut specials: Vec<Token> = (0..n_tokens)
            .filter(|&i| attrs[i] & (ATTR_CONTROL | ATTR_USER_DEFINED | ATTR_UNKNOWN) != 0)
            .map(|i| i as Token)
            .collect();
        specials.sort_by_key(|&id| std::cmp::Reverse(tokens[id as usize].len())); // stable: ties by id

        let map = unicode::byte_to_char();
        let mut byte_to_char = Vec::with_capacity(256);
        let mut char_to_byte = HashMap::new();
        for (b, &c) in map.iter().enumerate() {
            let mut utf8 = Vec::new();
            append_utf8(&mut utf8, c).expect("below U+0200");
            byte_to_char.push(utf8);
            char_to_byte.insert(c, b as u8);
        }

        Ok(Vocab {
            tokens,
            ids,
            attrs,
            ranks,
            bos,
            eos,
            add_bos: bool_field(&fields, "tokenizer.ggml.add_bos_token").unwrap_or(false),
            add_eos: bool_field(&fields, "tokenizer.ggml.add_eos_token").unwrap_or(false),
            add_sep: bool_field(&fields, "tokenizer.ggml.add_sep_token").unwrap_or(false),
            eog,
            specials,
            byte_to_char,
            char_to_byte,
            cache: HashMap::new(),
            bug,
        })
    }

    pub fn n_tokens(&self) -> usize {
        self.tokens.len()
    }

    fn attr(&self, id: Token) -> Result<u32, String> {
        // id_to_token.at(id): llama.cpp throws out_of_range; here it is the request's fault.
        usize::try_from(id)
            .ok()
            .and_then(|i| self.attrs.get(i).copied())
            .ok_or_else(|| format!("token id {} out of range (the vocabulary has {})", id, self.tokens.len()))
    }

    /// llama_tokenize (llama_vocab::impl::tokenize, LLAMA_VOCAB_TYPE_BPE): BOS, the fragments,
    /// EOS. `Err` is llama.cpp's abort on a code point above U+10FFFF: the port refuses the input.
    pub fn encode(&mut self, data: &[u8], add_special: bool, parse_special: bool) -> Result<Vec<Token>, String> {
        let mut out = Vec::new();
        if add_special && self.add_bos {
            out.push(self.bos);
        }
        for fragment in self.partition(data, parse_special) {
            match fragment {
                Fragment::Token(id) => out.push(id),
                Fragment::Text(text) => {
                    let cpts = code_points(text);
                    let nel_not_space = self.bug == Some(PlantedBug::NelNotSpace);
                    let is_space = |c: u32| unicode::is_whitespace(c) && !(nel_not_space && c == 0x85);
                    for (start, end) in split_gpt2(&cpts, &is_space) {
                        let ids = self.encode_word(&cpts[start..end])?;
                        out.extend_from_slice(&ids);
                    }
                }
            }
        }
        if add_special && self.add_eos {
            out.push(self.eos);
        }
        Ok(out)
    }

    /// tokenizer_st_partition: cut special-token texts out of the raw bytes, longest token first.
    /// Control and unknown tokens only with parse_special; user-defined ones always.
    fn partition<'a>(&self, data: &'a [u8], parse_special: bool) -> Vec<Fragment<'a>> {
        let mut fragments = if data.is_empty() { vec![] } else { vec![Fragment::Text(data)] };
        for &id in &self.specials {
            if !parse_special && self.attrs[id as usize] & (ATTR_CONTROL | ATTR_UNKNOWN) != 0 {
                continue;
            }
            let special = &self.tokens[id as usize][..];
            let mut next = Vec::with_capacity(fragments.len());
            for fragment in fragments {
                let mut rest = match fragment {
                    Fragment::Text(text) => text,
                    token => {
                        next.push(token);
                        continue;
                    }
                };
                while let Some(at) = find(rest, special) {
                    if at > 0 {
                        next.push(Fragment::Text(&rest[..at]));
                    }
                    next.push(Fragment::Token(id));
                    rest = &rest[at + special.len()..];
                }
                if !rest.is_empty() {
                    next.push(Fragment::Text(rest));
                }
            }
            fragments = next;
        }
        fragments
    }

    /// One word through llm_tokenizer_bpe_session::tokenize: its bytes as the code points standing
    /// for them (unicode_regex_split's byte encoding), merged by rank.
    fn encode_word(&mut self, cpts: &[u32]) -> Result<Vec<Token>, String> {
        let mut raw = Vec::with_capacity(cpts.len());
        for &c in cpts {
            append_utf8(&mut raw, c)?;
        }
        let mut key = Vec::with_capacity(raw.len() * 2);
        for &b in &raw {
            key.extend_from_slice(&self.byte_to_char[b as usize]);
        }
        if let Some(ids) = self.cache.get(&key) {
            return Ok(ids.clone());
        }

        // Merge the pair with the lowest rank, the leftmost on ties (llm_bigram_bpe's queue order),
        // until none is left. pair_ranks[i] is the rank of symbols i and i+1; a merge changes only
        // its neighbours' ranks, so only those are looked up again (looking every pair up on every
        // merge is quadratic in lookups on a long word).
        let mut symbols: Vec<Vec<u8>> = raw.iter().map(|&b| self.byte_to_char[b as usize].clone()).collect();
        let mut pair = Vec::new();
        let mut rank_of = |symbols: &[Vec<u8>], i: usize| -> usize {
            pair.clear();
            pair.extend_from_slice(&symbols[i]);
            pair.push(b' ');
            pair.extend_from_slice(&symbols[i + 1]);
            self.ranks.get(&pair[..]).copied().unwrap_or(usize::MAX)
        };
        let mut pair_ranks: Vec<usize> = (0..symbols.len().saturating_sub(1)).map(|i| rank_of(&symbols, i)).collect();
        loop {
            let mut best = None;
            for (i, &rank) in pair_ranks.iter().enumerate() {
                if rank != usize::MAX && best.map_or(true, |(_, best_rank)| rank < best_rank) {
                    best = Some((i, rank));
                }
            }
            let i = match best {
                Some((i, _)) => i,
                None => break,
            };
            let right = symbols.remove(i + 1);
            symbols[i].extend_from_slice(&right);
            pair_ranks.remove(i);
            if i > 0 {
                pair_ranks[i - 1] = rank_of(&symbols, i - 1);
            }
            if i < pair_ranks.len() {
                pair_ranks[i] = rank_of(&symbols, i);
            }
        }

        let mut ids = Vec::with_capacity(symbols.len());
        for symbol in &symbols {
            match self.ids.get(symbol) {
                Some(&id) => ids.push(id),
                // Byte fallback: each byte of the symbol's text as a one-byte token, where there is one.
                None => ids.extend(symbol.iter().filter_map(|&b| self.ids.get(&[b][..]).copied())),
            }
        }
        self.cache.insert(key, ids.clone());
        Ok(ids)
    }

    /// llama_token_to_piece (lstrip 0), for a BPE vocabulary without escaped whitespace.
    pub fn piece(&self, id: Token, special: bool) -> Result<Vec<u8>, String> {
        let attr = self.attr(id)?;
        if !special && attr & (ATTR_UNKNOWN | ATTR_CONTROL) != 0 {
            return Ok(Vec::new());
        }
        let text = &self.tokens[id as usize];
        if attr & (ATTR_UNKNOWN | ATTR_CONTROL | ATTR_USER_DEFINED) != 0 {
            return Ok(text.clone());
        }
        if attr & ATTR_NORMAL != 0 {
            return Ok(self.decode_text(text));
        }
        if attr & ATTR_BYTE != 0 {
            // token_to_byte: the hex digits of "<0xXX>".
            let hex = text.get(3..5).and_then(|h| std::str::from_utf8(h).ok()).unwrap_or("");
            return Ok(vec![u8::from_str_radix(hex, 16).unwrap_or(0)]);
        }
        Ok(Vec::new())
    }

    /// llama_decode_text: each code point of the token back to the byte it stands for; one that
    /// stands for none is written as `[UNK_BYTE_0x<its UTF-8 in hex><the token's text>]`.
    fn decode_text(&self, text: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(text.len());
        for c in code_points(text) {
            match self.char_to_byte.get(&c) {
                Some(&b) => out.push(b),
                None => {
                    let mut utf8 = Vec::new();
                    let _ = append_utf8(&mut utf8, c); // code_points gives nothing above 0x1FFFFF
                    out.extend_from_slice(b"[UNK_BYTE_0x");
                    for b in utf8 {
                        out.extend_from_slice(format!("{:02x}", b).as_bytes());
                    }
                    out.extend_from_slice(text);
                    out.push(b']');
                }
            }
        }
        out
    }

    /// llama_detokenize (llama_vocab::impl::detokenize) with the gpt-2 pre-tokenizer's clean_spaces.
    pub fn detokenize(&self, ids: &[Token], remove_special: bool, unparse_special: bool) -> Result<Vec<u8>, String> {
        let mut ids = ids;
        if remove_special && self.add_bos && ids.first() == Some(&self.bos) {
            ids = &ids[1..];
        }
        if remove_special && self.add_eos && ids.last() == Some(&self.eos) {
            ids = &ids[..ids.len() - 1];
        }
        let mut text = Vec::new();
        for &id in ids {
            text.extend_from_slice(&self.piece(id, unparse_special)?);
        }
        if self.bug != Some(PlantedBug::NoCleanSpaces) {
            clean_spaces(&mut text);
        }
        Ok(text)
    }
}

enum Fragment<'a> {
    Text(&'a [u8]),
    Token(Token),
}

/// The first position of `needle` in `haystack` (not empty).
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || needle.len() > haystack.len() {
        return None;
    }
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The three clean-up passes of llama_vocab::impl::detokenize, transcribed: each rewrites the
/// buffer in place, and the second writes a NUL ahead of itself (over the space after " ' "),
/// which the passes then read.
fn clean_spaces(text: &mut Vec<u8>) {
    // First pass: " ?", " !", " .", " ," lose their space.
    let total1 = text.len();
    let mut total = total1.min(1);
    for i in 1..total1 {
        let x = text[i];
        if text[i - 1] == b' ' && b"?!.,".contains(&x) {
            total -= 1;
        }
        text[total] = x;
        total += 1;
    }

    // Second pass: " ' " becomes "'".
    let total2 = total;
    total = total2.min(1);
    let mut i = 1;
    while i < total2 {
        let x = text[i];
        if x == b'\'' && i + 1 < total2 && text[i - 1] == b' ' && text[i + 1] == b' ' {
            total -= 1; // remove the space before
            i += 1;
            text[i] = 0; // "remove next space"
        }
        text[total] = x;
        total += 1;
        i += 1;
    }

    // Third pass: " 's", " 'm", " 're", " 've" lose their space (" 't", " 'd", " 'll" keep it).
    let total3 = total;
    total = total3.min(1);
    for i in 1..total3 {
        let x = text[i];
        if text[i - 1] == b' ' && x == b'\'' && i + 1 < total3 {
            let x1 = text[i + 1];
            if x1 == b's' || x1 == b'm' || (i + 2 < total3 && (x1 == b'r' || x1 == b'v') && text[i + 2] == b'e') {
                total -= 1;
            }
        }
        text[total] = x;
        total += 1;
    }
    text.truncate(total);
}

#[cfg(test)]
mod tests {
    use super::clean_spaces;

    fn cleaned(text: &str) -> String {
        let mut bytes = text.as_bytes().to_vec();
        clean_spaces(&mut bytes);
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn clean_spaces_follows_llama_cpp() {
        assert_eq!(cleaned("Hello , world !"), "Hello, world!");
        assert_eq!(cleaned("it 's we 're I 'm they 've"), "it's we're I'm they've");
        assert_eq!(cleaned("don 't she 'd we 'll"), "don 't she 'd we 'll");
        assert_eq!(cleaned("a ' b"), "a'b");
        // The NUL written over the space after the first " ' " hides it from the second.
        assert_eq!(cleaned("a ' ' b"), "a'' b");
        assert_eq!(cleaned(""), "");
    }
}
