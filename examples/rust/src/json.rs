//! Just enough JSON and base64 for the line protocol, by hand (the port takes no crates).

/// A JSON value. Objects keep their keys in order (answers are written as built).
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    /// A number written without a fraction or an exponent that fits an i64.
    Int(i64),
    Float(f64),
    Str(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(fields) => fields.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Json::Int(n) => Some(*n),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Json::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[Json]> {
        match self {
            Json::Array(items) => Some(items),
            _ => None,
        }
    }

    /// An object from `(key, value)` pairs.
    pub fn object<const N: usize>(fields: [(&str, Json); N]) -> Json {
        Json::Object(fields.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
    }

    /// The value as one line of JSON (no newline inside: strings escape theirs).
    pub fn to_line(&self) -> String {
        let mut out = String::new();
        write(self, &mut out);
        out
    }
}

impl From<bool> for Json {
    fn from(b: bool) -> Json {
        Json::Bool(b)
    }
}

impl From<i64> for Json {
    fn from(n: i64) -> Json {
        Json::Int(n)
    }
}

impl From<&str> for Json {
    fn from(s: &str) -> Json {
        Json::Str(s.to_string())
    }
}

impl From<String> for Json {
    fn from(s: String) -> Json {
        Json::Str(s)
    }
}

impl<T: Into<Json>> From<Vec<T>> for Json {
    fn from(items: Vec<T>) -> Json {
        Json::Array(items.into_iter().map(Into::into).collect())
    }
}

fn write(value: &Json, out: &mut String) {
    match value {
        Json::Null => out.push_str("null"),
        Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Json::Int(n) => out.push_str(&n.to_string()),
        Json::Float(x) if x.is_finite() => out.push_str(&format!("{:?}", x)),
        Json::Float(_) => out.push_str("null"), // JSON has no NaN or infinity
        Json::Str(s) => write_string(s, out),
        Json::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write(item, out);
            }
            out.push(']');
        }
        Json::Object(fields) => {
            out.push('{');
            for (i, (key, item)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_string(key, out);
                out.push_str(": ");
                write(item, out);
            }
            out.push('}');
        }
    }
}

fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            // The other controls, and the two separators some JSON readers take for line ends.
            c if (c as u32) < 0x20 || c == '\u{2028}' || c == '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Parse one JSON value (the whole of `text`, surrounding whitespace aside).
pub fn parse(text: &str) -> Result<Json, String> {
    let mut p = Parser { s: text.as_bytes(), pos: 0 };
    let value = p.value(0)?;
    p.skip_space();
    if p.pos != p.s.len() {
        return Err(format!("unexpected {:?} after the value at byte {}", p.s[p.pos] as char, p.pos));
    }
    Ok(value)
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    fn skip_space(&mut self) {
        while self.pos < self.s.len() && b" \t\r\n".contains(&self.s[self.pos]) {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_space();
        self.s.get(self.pos).copied()
    }

    fn expect(&mut self, byte: u8) -> Result<(), String> {
        if self.peek() == Some(byte) {
            self.pos += 1;
            Ok(())
        } else {
            Err(format!("expected {:?} at byte {}", byte as char, self.pos))
        }
    }

    /// Past a container's opening bracket: whether it closes at once (`{}`, `[]`), the close taken.
    fn opens_empty(&mut self, close: u8) -> bool {
        self.pos += 1;
        let empty = self.peek() == Some(close);
        if empty {
            self.pos += 1;
        }
        empty
    }

    /// After a container's item: a comma (false, more to come) or its close (true), taken.
    fn closes(&mut self, close: u8) -> Result<bool, String> {
        match self.peek() {
            Some(b',') => {
                self.pos += 1;
                Ok(false)
            }
            Some(byte) if byte == close => {
                self.pos += 1;
                Ok(true)
            }
            _ => Err(format!("expected ',' or {:?} at byte {}", close as char, self.pos)),
        }
    }

    fn literal(&mut self, word: &str, value: Json) -> Result<Json, String> {
        if self.s[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(value)
        } else {
            Err(format!("unexpected input at byte {}", self.pos))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Json, String> {
        if depth > 64 {
            return Err("nested too deep".to_string());
        }
        match self.peek() {
            None => Err("unexpected end of input".to_string()),
            Some(b'{') => {
                let mut fields = Vec::new();
                let mut done = self.opens_empty(b'}');
                while !done {
                    if self.peek() != Some(b'"') {
                        return Err(format!("expected a key at byte {}", self.pos));
                    }
                    let key = self.string()?;
                    self.expect(b':')?;
                    fields.push((key, self.value(depth + 1)?));
                    done = self.closes(b'}')?;
                }
                Ok(Json::Object(fields))
            }
            Some(b'[') => {
                let mut items = Vec::new();
                let mut done = self.opens_empty(b']');
                while !done {
                    items.push(self.value(depth + 1)?);
                    done = self.closes(b']')?;
                }
                Ok(Json::Array(items))
            }
            Some(b'"') => Ok(Json::Str(self.string()?)),
            Some(b't') => self.literal("true", Json::Bool(true)),
            Some(b'f') => self.literal("false", Json::Bool(false)),
            Some(b'n') => self.literal("null", Json::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(other) => Err(format!("unexpected {:?} at byte {}", other as char, self.pos)),
        }
    }

    fn number(&mut self) -> Result<Json, String> {
        let start = self.pos;
        let mut integral = true;
        while let Some(&b) = self.s.get(self.pos) {
            match b {
                b'0'..=b'9' | b'-' | b'+' => {}
                b'.' | b'e' | b'E' => integral = false,
                _ => break,
            }
            self.pos += 1;
        }
        let text = std::str::from_utf8(&self.s[start..self.pos]).unwrap_or_default();
        if integral {
            if let Ok(n) = text.parse::<i64>() {
                return Ok(Json::Int(n));
            }
        }
        text.parse::<f64>().map(Json::Float).map_err(|_| format!("bad number {:?} at byte {}", text, start))
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let digits = self.s.get(self.pos..self.pos + 4).ok_or("truncated \\u escape")?;
        let text = std::str::from_utf8(digits).map_err(|_| "bad \\u escape")?;
        let value = u32::from_str_radix(text, 16).map_err(|_| format!("bad \\u escape {:?}", text))?;
        self.pos += 4;
        Ok(value)
    }

    /// A string, at its opening quote. Raw bytes are copied (the line is UTF-8 already); `\uD83D\uDE00`
    /// pairs are joined, and a lone surrogate (which a Rust string cannot hold) becomes U+FFFD.
    fn string(&mut self) -> Result<String, String> {
        self.pos += 1;
        let mut out: Vec<u8> = Vec::new();
        loop {
            let b = *self.s.get(self.pos).ok_or("unterminated string")?;
            self.pos += 1;
            match b {
                b'"' => break,
                b'\\' => {
                    let escape = *self.s.get(self.pos).ok_or("unterminated string")?;
                    self.pos += 1;
                    let c = match escape {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let mut cpt = self.hex4()?;
                            if (0xd800..0xdc00).contains(&cpt) && self.s[self.pos..].starts_with(b"\\u") {
                                let save = self.pos;
                                self.pos += 2;
                                let low = self.hex4()?;
                                if (0xdc00..0xe000).contains(&low) {
                                    cpt = 0x10000 + ((cpt - 0xd800) << 10) + (low - 0xdc00);
                                } else {
                                    self.pos = save; // not a pair: the next escape stands alone
                                }
                            }
                            char::from_u32(cpt).unwrap_or('\u{fffd}')
                        }
                        other => return Err(format!("bad escape \\{} at byte {}", other as char, self.pos - 1)),
                    };
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
                b if b < 0x20 => return Err(format!("raw control byte 0x{:02x} in a string", b)),
                b => out.push(b),
            }
        }
        String::from_utf8(out).map_err(|e| e.to_string())
    }
}

// ---------------------------------------------------------------------------------------------
// Base64 (RFC 4648, standard alphabet, padded): `text_b64` and the answers' `*_b64`.

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

pub fn base64_encode(data: &[u8]) -> String {
    let mut out = String::with_capacity((data.len() + 2) / 3 * 4);
    for chunk in data.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 0x3f) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

pub fn base64_decode(text: &str) -> Result<Vec<u8>, String> {
    let bytes = text.as_bytes();
    if bytes.len() % 4 != 0 {
        return Err(format!("base64 of length {} (not a multiple of 4)", bytes.len()));
    }
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    for (at, quad) in bytes.chunks(4).enumerate() {
        let last = at + 1 == bytes.len() / 4;
        let pad = quad.iter().rev().take_while(|&&b| b == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return Err("misplaced '=' in base64".to_string());
        }
        let mut n = 0u32;
        for &b in &quad[..4 - pad] {
            let digit =
                ALPHABET.iter().position(|&a| a == b).ok_or_else(|| format!("{:?} is not base64", b as char))?;
            n = n << 6 | digit as u32;
        }
        n <<= 6 * pad as u32;
        out.extend_from_slice(&[(n >> 16) as u8, (n >> 8) as u8, n as u8][..3 - pad]);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips() {
        for data in [&b""[..], b"f", b"fo", b"foo", b"foob", b"fooba", b"foobar", b"\x00\xff\x85"] {
            let text = base64_encode(data);
            assert_eq!(base64_decode(&text).unwrap(), data);
        }
        assert_eq!(base64_encode(b"Hello world"), "SGVsbG8gd29ybGQ=");
        assert!(base64_decode("SGVsbG8=d29y").is_err());
    }

    #[test]
    fn json_parses_a_request_and_writes_an_answer() {
        let r = parse(
            r#"{"op": "encode", "id": 7, "ids": [1, 2], "text_b64": "\u00e9\ud83d\ude00\n", "x": null, "f": 1.5}"#,
        )
        .unwrap();
        assert_eq!(r.get("id").and_then(Json::as_i64), Some(7));
        assert_eq!(r.get("text_b64").and_then(Json::as_str), Some("é😀\n"));
        assert_eq!(r.get("f"), Some(&Json::Float(1.5)));
        let answer = Json::object([("error", "a \"quoted\"\nline".into()), ("id", Json::Int(7))]);
        assert_eq!(answer.to_line(), r#"{"error": "a \"quoted\"\nline", "id": 7}"#);
        assert!(parse("{\"id\": 1} trailing").is_err());
        let empty = parse(r#"{"a": [], "b": {}, "c": [[1], {"d": 2}]}"#).unwrap();
        assert_eq!(empty.get("a"), Some(&Json::Array(vec![])));
        assert_eq!(empty.get("b"), Some(&Json::Object(vec![])));
        for bad in [r#"{"a": [1 2]}"#, r#"{"a": 1,}"#, "[1,]", r#"{"a": 1"#, r#"{"a" 1}"#] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
