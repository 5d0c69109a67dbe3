//! GGUF: only the key-value header is read (ggml's gguf.cpp, gguf_init_from_file, value types 0-12).

use std::collections::HashMap;

/// A metadata value. Every integer type is widened to i64 (a UINT64 above i64::MAX wraps, which no
/// tokenizer key holds); strings stay bytes, as llama.cpp keeps them.
pub enum Value {
    Int(i64),
    #[allow(dead_code)] // read for completeness: no tokenizer key is a float
    Float(f64),
    Bool(bool),
    Str(Vec<u8>),
    Array(Vec<Value>),
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: u64) -> Result<&'a [u8], String> {
        let rest = (self.buf.len() - self.pos) as u64;
        if n > rest {
            return Err(format!("truncated GGUF at byte {} (wants {} more, {} left)", self.pos, n, rest));
        }
        let bytes = &self.buf[self.pos..self.pos + n as usize];
        self.pos += n as usize;
        Ok(bytes)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N as u64)?);
        Ok(out)
    }

    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    fn string(&mut self) -> Result<Vec<u8>, String> {
        let n = self.u64()?;
        Ok(self.take(n)?.to_vec())
    }

    fn scalar(&mut self, kind: u32) -> Result<Value, String> {
        Ok(match kind {
            0 => Value::Int(i64::from(u8::from_le_bytes(self.array()?))),
            1 => Value::Int(i64::from(i8::from_le_bytes(self.array()?))),
            2 => Value::Int(i64::from(u16::from_le_bytes(self.array()?))),
            3 => Value::Int(i64::from(i16::from_le_bytes(self.array()?))),
            4 => Value::Int(i64::from(u32::from_le_bytes(self.array()?))),
            5 => Value::Int(i64::from(i32::from_le_bytes(self.array()?))),
            6 => Value::Float(f64::from(f32::from_le_bytes(self.array()?))),
            7 => Value::Bool(self.array::<1>()?[0] != 0),
            8 => Value::Str(self.string()?),
            10 => Value::Int(u64::from_le_bytes(self.array()?) as i64),
            11 => Value::Int(i64::from_le_bytes(self.array()?)),
            12 => Value::Float(f64::from_le_bytes(self.array()?)),
            _ => return Err(format!("unknown GGUF value type {} at byte {}", kind, self.pos)),
        })
    }
}

/// The key-value pairs of a GGUF file's header (the tensors are not read).
pub fn read(path: &str) -> Result<HashMap<String, Value>, String> {
    let buf = std::fs::read(path).map_err(|e| format!("{}: {}", path, e))?;
    if buf.len() < 4 || &buf[..4] != b"GGUF" {
        return Err(format!("{} is not a GGUF file", path));
    }
    let mut r = Reader { buf: &buf, pos: 4 };
    let read_all = |r: &mut Reader| -> Result<HashMap<String, Value>, String> {
        r.u32()?; // version
        r.u64()?; // tensor count
        let count = r.u64()?;
        let mut fields = HashMap::new();
        for _ in 0..count {
            let key = String::from_utf8_lossy(&r.string()?).into_owned();
            let kind = r.u32()?;
            let value = if kind == 9 {
                let item_kind = r.u32()?;
                let n = r.u64()?;
                // Each item takes a byte at least: a count beyond the file is an error, not an allocation.
                let mut items = Vec::with_capacity(n.min((r.buf.len() - r.pos) as u64) as usize);
                for _ in 0..n {
                    items.push(r.scalar(item_kind)?);
                }
                Value::Array(items)
            } else {
                r.scalar(kind)?
            };
            fields.insert(key, value);
        }
        Ok(fields)
    };
    read_all(&mut r).map_err(|e| format!("{}: {}", path, e))
}
