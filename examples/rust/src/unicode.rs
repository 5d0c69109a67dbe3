//! Code points and their classes, as llama.cpp's src/unicode.cpp sees them.

use crate::unicode_tables::{LETTER, NUMBER, WHITESPACE};

/// unicode_cpts_from_utf8 (through unicode_cpt_from_utf8): the lead byte decides the length,
/// continuation bytes are only checked for their top bits (so overlong forms and surrogates decode,
/// and `F4 90 80 80` is 0x110000); anything else costs one byte and gives U+FFFD.
pub fn code_points(data: &[u8]) -> Vec<u32> {
    let mut out = Vec::with_capacity(data.len());
    let mut pos = 0;
    while pos < data.len() {
        let lead = data[pos];
        let (length, mut value) = match lead {
            _ if lead < 0x80 => (1, u32::from(lead)),
            _ if lead & 0xe0 == 0xc0 => (2, u32::from(lead & 0x1f)),
            _ if lead & 0xf0 == 0xe0 => (3, u32::from(lead & 0x0f)),
            _ if lead & 0xf8 == 0xf0 => (4, u32::from(lead & 0x07)),
            _ => (0, 0), // a continuation byte, or 0xF8 and above
        };
        let fits = length > 0 && pos + length <= data.len();
        if !fits || !data[pos + 1..pos + length].iter().all(|b| b & 0xc0 == 0x80) {
            out.push(0xfffd);
            pos += 1;
            continue;
        }
        for b in &data[pos + 1..pos + length] {
            value = value << 6 | u32::from(b & 0x3f);
        }
        out.push(value);
        pos += length;
    }
    out
}

/// unicode_cpt_to_utf8, which throws `invalid codepoint` above U+10FFFF (llama.cpp b11192's BPE
/// tokenizer then aborts: the port refuses the input). Surrogates are encoded as three bytes, as
/// llama.cpp does (Rust's `char` could not hold them).
pub fn append_utf8(out: &mut Vec<u8>, c: u32) -> Result<(), String> {
    match c {
        0..=0x7f => out.push(c as u8),
        0x80..=0x7ff => out.extend_from_slice(&[0xc0 | (c >> 6) as u8, 0x80 | (c & 0x3f) as u8]),
        0x800..=0xffff => {
            out.extend_from_slice(&[0xe0 | (c >> 12) as u8, 0x80 | (c >> 6 & 0x3f) as u8, 0x80 | (c & 0x3f) as u8])
        }
        0x10000..=0x10ffff => out.extend_from_slice(&[
            0xf0 | (c >> 18) as u8,
            0x80 | (c >> 12 & 0x3f) as u8,
            0x80 | (c >> 6 & 0x3f) as u8,
            0x80 | (c & 0x3f) as u8,
        ]),
        _ => return Err(format!("invalid codepoint 0x{:X}", c)),
    }
    Ok(())
}

/// Whether `c` lies in one of a table's sorted, disjoint, inclusive ranges.
fn in_table(table: &[(u32, u32)], c: u32) -> bool {
    table
        .binary_search_by(|&(lo, hi)| {
            if hi < c {
                std::cmp::Ordering::Less
            } else if lo > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// \p{L}, from llama.cpp's own tables (not `char::is_alphabetic`, which is the Alphabetic property).
pub fn is_letter(c: u32) -> bool {
    in_table(LETTER, c)
}

/// \p{N}, from llama.cpp's own tables.
pub fn is_number(c: u32) -> bool {
    in_table(NUMBER, c)
}

/// unicode_cpt_flags' is_whitespace: Unicode White_Space, which holds U+0085 (NEXT LINE) and not
/// U+FEFF. (Rust's `char::is_whitespace` agrees; JavaScript's `\s` and C's `isspace` do not.)
pub fn is_whitespace(c: u32) -> bool {
    in_table(WHITESPACE, c)
}

/// The flags unicode_regex_split_custom_gpt2 asks about. `any` is `flags.as_uint() != 0`: true for
/// every code point of the fragment (llama.cpp's table has a category for each, and answers
/// UNDEFINED above U+10FFFF), false beyond it.
#[derive(Clone, Copy, Default)]
struct Flags {
    letter: bool,
    number: bool,
    space: bool,
    any: bool,
}

impl Flags {
    /// The class of `[^\s\p{L}\p{N}]`.
    fn other(self) -> bool {
        !(self.space || self.letter || self.number) && self.any
    }
}

/// unicode_regex_split_custom_gpt2, the hand-written form of GPT-2's pattern
/// `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`:
/// the words of a fragment, as ranges of `cpts`. `is_space` is the whitespace class (`is_whitespace`;
/// the planted bug `nel-not-space` gives another).
pub fn split_gpt2(cpts: &[u32], is_space: &dyn Fn(u32) -> bool) -> Vec<(usize, usize)> {
    let n = cpts.len();
    let flags = |i: usize| -> Flags {
        if i >= n {
            return Flags::default(); // beyond the fragment: no class at all
        }
        let c = cpts[i];
        Flags { letter: is_letter(c), number: is_number(c), space: is_space(c), any: true }
    };
    let mut words = Vec::new();
    let mut start = 0;
    let mut add = |end: usize| {
        if end > start {
            words.push((start, end));
        }
        start = end;
    };
    let mut pos = 0;
    while pos < n {
        let c = cpts[pos];
        // 's|'t|'re|'ve|'m|'ll|'d
        if c == u32::from(b'\'') && pos + 1 < n {
            let next = cpts[pos + 1];
            if [b's', b't', b'm', b'd'].iter().any(|&b| next == u32::from(b)) {
                pos += 2;
                add(pos);
                continue;
            }
            if pos + 2 < n {
                let is = |a: u8, b: u8| (next, cpts[pos + 2]) == (u32::from(a), u32::from(b));
                if is(b'r', b'e') || is(b'v', b'e') || is(b'l', b'l') {
                    pos += 3;
                    add(pos);
                    continue;
                }
            }
        }
        // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: an optional space, then a run of one class.
        let space_first = c == u32::from(b' ');
        let mut k = if space_first { flags(pos + 1) } else { flags(pos) };
        let class: Option<fn(Flags) -> bool> = if k.letter {
            Some(|k| k.letter)
        } else if k.number {
            Some(|k| k.number)
        } else if k.other() {
            Some(Flags::other)
        } else {
            None
        };
        if let Some(in_class) = class {
            if space_first {
                pos += 1;
            }
            while in_class(k) {
                pos += 1;
                k = flags(pos);
            }
            add(pos);
            continue;
        }
        // `\s+(?!\S)`: a run of whitespace but its last one, when something follows; else `\s+`.
        let mut spaces = 0;
        while flags(pos + spaces).space {
            spaces += 1;
        }
        if spaces > 1 && pos + spaces < n {
            pos += spaces - 1;
            add(pos);
            continue;
        }
        if spaces > 0 {
            pos += spaces;
            add(pos);
            continue;
        }
        pos += 1; // no pattern matches (cannot happen with llama.cpp's tables): one code point
        add(pos);
    }
    words
}

/// unicode_byte_to_utf8's map: printable bytes stand for themselves, the others for U+0100
/// upwards, in order. `BYTE_TO_CHAR[b]` is the code point standing for byte `b`.
pub fn byte_to_char() -> [u32; 256] {
    let mut map = [0u32; 256];
    let mut extra = 0;
    for (b, slot) in map.iter_mut().enumerate() {
        let printable = (0x21..=0x7e).contains(&b) || (0xa1..=0xac).contains(&b) || (0xae..=0xff).contains(&b);
        *slot = if printable {
            b as u32
        } else {
            extra += 1;
            255 + extra
        };
    }
    map
}
