//! Makes the `unicode_tables` module from unicode_ranges.txt, the data gen_tables.py writes from
//! llama.cpp b11192's src/unicode-data.cpp: a Rust constant a table, each a slice of sorted,
//! disjoint, inclusive code point ranges. The tables are kept as data, not as generated source, and
//! made into code here, where cargo builds the crate (src/main.rs includes the result).

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;

const DATA: &str = "unicode_ranges.txt";

fn main() {
    println!("cargo:rerun-if-changed={}", DATA);
    let text = fs::read_to_string(DATA).expect("unicode_ranges.txt: run `python examples/rust/gen_tables.py`");
    let mut tables: Vec<(String, String, Vec<String>)> = Vec::new();
    for line in text.lines().filter(|line| !line.is_empty() && !line.starts_with('#')) {
        if let Some(head) = line.strip_prefix("= ") {
            let (name, doc) = head.split_once(' ').expect("a table line is `= NAME doc`");
            tables.push((name.to_string(), doc.to_string(), Vec::new()));
            continue;
        }
        let (lo, hi) = line.split_once(' ').expect("a range line is `LO HI`");
        let table = tables.last_mut().expect("a range before any `= NAME` line");
        table.2.push(format!("(0x{}, 0x{})", lo, hi));
    }
    let mut source = String::new();
    for (name, doc, ranges) in &tables {
        let _ = writeln!(source, "/// {} ({} ranges).", doc, ranges.len());
        let _ = writeln!(source, "pub const {}: &[(u32, u32)] = &[{}];", name, ranges.join(", "));
    }
    let out = Path::new(&env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("unicode_tables.rs");
    fs::write(out, source).expect("writing the unicode tables into OUT_DIR");
}
