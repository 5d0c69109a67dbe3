//! A tokenizer port in Rust, gated by tokconf over the line protocol, version 2
//! (docs/line-protocol.md):
//!
//!     cargo build --release --manifest-path examples/rust/Cargo.toml
//!     tokconf check --impl 'cmd:examples/rust/target/release/tokconf-rust-adapter' --vocab gpt-2
//!
//! The same port as examples/go and examples/node, in Rust with the standard library only (no
//! crates; it builds with Debian's rustc 1.63): llama.cpp's byte-level BPE for vocabularies with the
//! `gpt2` tokenizer model and the GPT-2 pre-tokenizer (tokenizer.ggml.pre "gpt-2"), written from
//! llama.cpp's src/llama-vocab.cpp and src/unicode.cpp:
//!
//! - `gguf`: a GGUF reader (the key-value header only),
//! - `unicode`: unicode_cpts_from_utf8, unicode_cpt_to_utf8 and unicode_regex_split_custom_gpt2,
//!   the GPT-2 word split, with llama.cpp's own letter, number and whitespace classes
//!   (`unicode_tables`, made by build.rs from unicode_ranges.txt, the data gen_tables.py writes from
//!   the pinned build's unicode-data.cpp: Rust's standard library has no \p{L}, and
//!   `char::is_alphabetic` is another property),
//! - `vocab`: llama_vocab::impl::load (the vocab facts), tokenizer_st_partition (the special-token
//!   split), llm_tokenizer_bpe_session (BPE merges), token_to_piece and detokenize,
//! - `json`: JSON lines and base64, by hand,
//! - this file: the protocol. Standard output is for protocol answers only; logging goes to stderr.
//!
//! Each request runs under `catch_unwind`: a panic in the port is answered as a `fault` (that
//! request's check is an error, the program goes on), never a crash or a wrong `error`. A
//! vocabulary it does not serve is declined (`ok: false`, unsupported); one it cannot read is a
//! `fault` (every case an error). `error` is kept for llama.cpp's own refusal: a code point above
//! U+10FFFF, on which b11192's BPE tokenizer aborts.
//!
//! Where it could differ from llama.cpp: nowhere known. The letter, number and whitespace classes
//! are llama.cpp's own, so a newer or older Unicode in Rust cannot move them. `cargo test` runs
//! the unit tests of the JSON, base64 and detokenize clean-up code.
//!
//! `--plant-bug NAME` plants a bug a real port could have, so tokconf's tests can show the gate
//! catches it: `nel-not-space` (U+0085 is not whitespace, as with JavaScript's `\s` or C's
//! `isspace`), `eos-plus-one` (the EOS fact is off by one) or `no-clean-spaces` (detokenize skips
//! the clean-up passes, so " ," stays " ,").

mod gguf;
mod json;
mod unicode;
mod unicode_tables {
    //! llama.cpp's letter, number and whitespace classes, made by build.rs from unicode_ranges.txt.
    include!(concat!(env!("OUT_DIR"), "/unicode_tables.rs"));
}
mod vocab;

use std::io::{self, BufRead, Write};
use std::panic::{self, AssertUnwindSafe};
use std::process;

use json::{base64_decode, base64_encode, Json};
use vocab::{LoadError, Token, Vocab};

const NAME: &str = "gpt2-rust-example";

/// A bug planted on purpose (`--plant-bug NAME`), for tokconf's own tests of the gate.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum PlantedBug {
    NelNotSpace,
    EosPlusOne,
    NoCleanSpaces,
}

impl PlantedBug {
    const ALL: [(&'static str, PlantedBug); 3] = [
        ("nel-not-space", PlantedBug::NelNotSpace),
        ("eos-plus-one", PlantedBug::EosPlusOne),
        ("no-clean-spaces", PlantedBug::NoCleanSpaces),
    ];

    fn parse(name: &str) -> Option<PlantedBug> {
        PlantedBug::ALL.iter().find(|(n, _)| *n == name).map(|&(_, bug)| bug)
    }
}

/// The program's state: the planted bug, and the vocabulary loaded last.
struct Adapter {
    bug: Option<PlantedBug>,
    vocab: Option<Vocab>,
}

/// A request's fields, or why the request is malformed (a `fault`: tokconf sent what the port did
/// not expect, which is a bug on one side or the other, never a refusal of the input).
struct Request<'a>(&'a Json);

impl Request<'_> {
    fn str(&self, key: &str) -> Result<&str, String> {
        self.0.get(key).and_then(Json::as_str).ok_or_else(|| format!("the request has no string `{}`", key))
    }

    fn flag(&self, key: &str) -> Result<bool, String> {
        match self.0.get(key) {
            None => Ok(false),
            Some(value) => value.as_bool().ok_or_else(|| format!("`{}` is not a boolean", key)),
        }
    }

    fn ids(&self) -> Result<Vec<Token>, String> {
        let items = self.0.get("ids").and_then(Json::as_array).ok_or("the request has no list `ids`")?;
        items
            .iter()
            .map(|item| match item.as_i64() {
                Some(id) if (0..=i64::from(Token::MAX)).contains(&id) => Ok(id as Token),
                _ => Err(format!("{} is not a token id", item.to_line())),
            })
            .collect()
    }
}

/// An answer's fields, in order (`id` is added last).
type Fields = Vec<(String, Json)>;

fn fields<const N: usize>(pairs: [(&str, Json); N]) -> Fields {
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

fn ids_json(ids: &[Token]) -> Json {
    Json::Array(ids.iter().map(|&id| Json::Int(i64::from(id))).collect())
}

impl Adapter {
    /// The answer's fields (without `id`), or `Err(reason)` for a `fault`.
    fn answer(&mut self, request: &Json) -> Result<Fields, String> {
        let r = Request(request);
        let op = r.str("op")?;
        match op {
            "hello" => {
                // Inputs are tokenized as bytes, so no class of input is unsupported.
                return Ok(fields([
                    ("protocol", Json::Int(2)),
                    ("name", NAME.into()),
                    ("version", env!("CARGO_PKG_VERSION").into()),
                    ("vocab_types", vec!["bpe"].into()),
                ]));
            }
            "load" => {
                self.vocab = None;
                return match Vocab::load(r.str("path")?, self.bug) {
                    Ok(vocab) => {
                        // n_tokens lets tokconf tell a misread vocabulary at once (one error, not
                        // thousands of failures).
                        let n_tokens = vocab.n_tokens() as i64;
                        self.vocab = Some(vocab);
                        Ok(fields([
                            ("ok", true.into()),
                            ("ops", vec!["facts", "token_to_piece", "detokenize"].into()),
                            ("n_tokens", n_tokens.into()),
                        ]))
                    }
                    Err(LoadError::Declined(reason)) => Ok(fields([("ok", false.into()), ("error", reason.into())])),
                    Err(LoadError::Broke(reason)) => Err(reason),
                };
            }
            _ => {}
        }
        let vocab = self.vocab.as_mut().ok_or("no vocabulary loaded")?;
        match op {
            "encode" => {
                // Bytes, not a string: inputs may be invalid UTF-8, and are tokenized as they are.
                let data = base64_decode(r.str("text_b64")?)?;
                match vocab.encode(&data, r.flag("add_special")?, r.flag("parse_special")?) {
                    Ok(ids) => Ok(fields([("ids", ids_json(&ids))])),
                    // llama.cpp aborts on a code point above U+10FFFF: refuse, as the recording does.
                    Err(reason) => Ok(fields([("error", reason.into())])),
                }
            }
            "facts" => Ok(fields([(
                "facts",
                Json::object([
                    ("add_bos", vocab.add_bos.into()),
                    ("add_eos", vocab.add_eos.into()),
                    ("add_sep", vocab.add_sep.into()),
                    ("bos", i64::from(vocab.bos).into()),
                    ("eos", i64::from(vocab.eos).into()),
                    ("eog_ids", ids_json(&vocab.eog)),
                ]),
            )])),
            "token_to_piece" => {
                let special = r.flag("special")?;
                let mut pieces = Vec::new();
                for id in r.ids()? {
                    pieces.push(Json::Str(base64_encode(&vocab.piece(id, special)?)));
                }
                Ok(fields([("pieces_b64", Json::Array(pieces))]))
            }
            "detokenize" => {
                let text = vocab.detokenize(&r.ids()?, r.flag("remove_special")?, r.flag("unparse_special")?)?;
                Ok(fields([("text_b64", base64_encode(&text).into())]))
            }
            _ => Err(format!("unknown op {:?}", op)),
        }
    }
}

/// What a panic carried, as text.
fn panic_reason(payload: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        format!("panic: {}", s)
    } else if let Some(s) = payload.downcast_ref::<String>() {
        format!("panic: {}", s)
    } else {
        "panic".to_string()
    }
}

fn usage() -> ! {
    let bugs: Vec<&str> = PlantedBug::ALL.iter().map(|(name, _)| *name).collect();
    eprintln!("usage: tokconf-rust-adapter [--plant-bug {}]", bugs.join("|"));
    eprintln!("Speaks tokconf's line protocol 2 on stdin/stdout (docs/line-protocol.md).");
    process::exit(2);
}

fn parse_args() -> Option<PlantedBug> {
    let mut bug = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let name = if arg == "--plant-bug" {
            args.next().unwrap_or_else(|| usage())
        } else if let Some(name) = arg.strip_prefix("--plant-bug=") {
            name.to_string()
        } else {
            usage()
        };
        bug = Some(PlantedBug::parse(&name).unwrap_or_else(|| usage()));
    }
    bug
}

fn main() {
    let bug = parse_args();
    if let Some(bug) = bug {
        eprintln!("{}: planted bug {:?}", NAME, bug);
    }
    let mut adapter = Adapter { bug, vocab: None };
    let stdin = io::stdin();
    let mut input = io::BufReader::with_capacity(1 << 20, stdin.lock());
    let stdout = io::stdout();
    let mut output = stdout.lock();
    let mut line = Vec::new();
    loop {
        line.clear();
        match input.read_until(b'\n', &mut line) {
            Ok(0) => return, // tokconf closed our input: the run is over
            Ok(_) => {}
            Err(e) => {
                eprintln!("{}: reading stdin: {}", NAME, e);
                process::exit(1);
            }
        }
        let text = String::from_utf8_lossy(&line);
        if text.trim().is_empty() {
            continue;
        }
        // A line that is not a request with an id cannot be answered: say why on stderr and stop.
        let request = match json::parse(&text) {
            Ok(request) => request,
            Err(e) => {
                eprintln!("{}: not a JSON request ({}): {}", NAME, e, text.trim_end());
                process::exit(2);
            }
        };
        let id = match request.get("id").and_then(Json::as_i64) {
            Some(id) => id,
            None => {
                eprintln!("{}: a request without an integer id: {}", NAME, text.trim_end());
                process::exit(2);
            }
        };
        let mut answer = match panic::catch_unwind(AssertUnwindSafe(|| adapter.answer(&request))) {
            Ok(Ok(answer)) => answer,
            Ok(Err(reason)) => fields([("fault", reason.into())]),
            Err(payload) => fields([("fault", panic_reason(payload).into())]),
        };
        answer.push(("id".to_string(), Json::Int(id)));
        // One write per answer, then flush: tokconf reads a line per request.
        let mut out = Json::Object(answer).to_line();
        out.push('\n');
        if let Err(e) = output.write_all(out.as_bytes()).and_then(|_| output.flush()) {
            eprintln!("{}: writing stdout: {}", NAME, e);
            process::exit(1);
        }
    }
}
