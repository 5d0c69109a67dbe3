// A tokenizer port in Go, gated by tokconf over the line protocol, version 2 (docs/line-protocol.md):
//
//	go build -o tokconf-go-adapter ./examples/go
//	tokconf check --impl 'cmd:./tokconf-go-adapter' --vocab gpt-2
//
// The same port as examples/node, in a compiled language with the standard library only: llama.cpp's
// byte-level BPE for vocabularies with the `gpt2` tokenizer model and the GPT-2 pre-tokenizer
// (tokenizer.ggml.pre "gpt-2"), written from llama.cpp's src/llama-vocab.cpp and src/unicode.cpp:
// a GGUF reader, the special-token split, the GPT-2 word split, BPE merges, the vocab facts,
// token_to_piece and detokenize. Standard output is for protocol answers only; log to stderr.
//
// Letter and number classes come from Go's `unicode` tables (`unicode.IsLetter` is \p{L},
// `unicode.IsNumber` is \p{N}), whose Unicode version may be older than llama.cpp's: the letters
// and numbers assigned since Unicode 13 (Go 1.19) are taken from llama.cpp's tables instead
// (newerClasses), or a port on Go 1.19 fails the gpt-2 recording's U+1E7E8.
//
// `--plant-bug nel-not-space` plants the bug a port using a language's own whitespace class has
// (U+0085 is not whitespace), so tokconf's tests can show the gate catches it.
package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

var plantBug = flag.String("plant-bug", "", "nel-not-space")

// ---------------------------------------------------------------------------------------------
// GGUF: only the key-value header is read (gguf.cpp's gguf_init_from_file, types 0-12).

type reader struct {
	buf []byte
	pos int
}

func (r *reader) need(n int) {
	if n < 0 || r.pos+n > len(r.buf) {
		panic(fmt.Errorf("truncated GGUF at byte %d", r.pos))
	}
}
func (r *reader) u32() uint32 {
	r.need(4)
	r.pos += 4
	return binary.LittleEndian.Uint32(r.buf[r.pos-4:])
}
func (r *reader) u64() uint64 {
	r.need(8)
	r.pos += 8
	return binary.LittleEndian.Uint64(r.buf[r.pos-8:])
}
func (r *reader) str() string {
	n := int(r.u64())
	r.need(n)
	r.pos += n
	return string(r.buf[r.pos-n : r.pos])
}

func (r *reader) scalar(kind uint32) any {
	switch kind {
	case 0:
		r.need(1)
		r.pos++
		return int64(r.buf[r.pos-1])
	case 1:
		r.need(1)
		r.pos++
		return int64(int8(r.buf[r.pos-1]))
	case 2:
		r.need(2)
		r.pos += 2
		return int64(binary.LittleEndian.Uint16(r.buf[r.pos-2:]))
	case 3:
		r.need(2)
		r.pos += 2
		return int64(int16(binary.LittleEndian.Uint16(r.buf[r.pos-2:])))
	case 4:
		return int64(r.u32())
	case 5:
		return int64(int32(r.u32()))
	case 6:
		return float64(math.Float32frombits(r.u32()))
	case 7:
		r.need(1)
		r.pos++
		return r.buf[r.pos-1] != 0
	case 8:
		return r.str()
	case 10:
		return int64(r.u64())
	case 11:
		return int64(r.u64())
	case 12:
		return math.Float64frombits(r.u64())
	}
	panic(fmt.Errorf("unknown GGUF value type %d", kind))
}

func readGGUF(path string) (fields map[string]any, err error) {
	buf, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s: %v", path, p)
		}
	}()
	if len(buf) < 4 || string(buf[:4]) != "GGUF" {
		return nil, fmt.Errorf("%s is not a GGUF file", path)
	}
	r := &reader{buf: buf, pos: 4}
	r.u32() // version
	r.u64() // tensor count
	count := r.u64()
	fields = map[string]any{}
	for i := uint64(0); i < count; i++ {
		key := r.str()
		kind := r.u32()
		if kind == 9 {
			itemKind := r.u32()
			n := r.u64()
			items := make([]any, 0, n)
			for j := uint64(0); j < n; j++ {
				items = append(items, r.scalar(itemKind))
			}
			fields[key] = items
		} else {
			fields[key] = r.scalar(kind)
		}
	}
	return fields, nil
}

// ---------------------------------------------------------------------------------------------
// Code points and their classes (unicode.cpp).

// unicode_cpt_flags' whitespace: Unicode White_Space (Go's unicode.IsSpace also says so for these).
var whitespace = map[rune]bool{
	0x09: true, 0x0a: true, 0x0b: true, 0x0c: true, 0x0d: true, 0x20: true, 0x85: true, 0xa0: true,
	0x1680: true, 0x2000: true, 0x2001: true, 0x2002: true, 0x2003: true, 0x2004: true, 0x2005: true,
	0x2006: true, 0x2007: true, 0x2008: true, 0x2009: true, 0x200a: true, 0x2028: true, 0x2029: true,
	0x202f: true, 0x205f: true, 0x3000: true,
}

var errInvalidCodepoint = errors.New("invalid codepoint")

// unicode_cpts_from_utf8: the lead byte decides the length, continuation bytes are only checked for
// their top bits; anything else costs one byte and gives U+FFFD.
func codePoints(data []byte) []rune {
	out := make([]rune, 0, len(data))
	for pos := 0; pos < len(data); {
		lead := data[pos]
		length, value := 0, rune(0)
		switch {
		case lead < 0x80:
			out = append(out, rune(lead))
			pos++
			continue
		case lead&0xe0 == 0xc0:
			length, value = 2, rune(lead&0x1f)
		case lead&0xf0 == 0xe0:
			length, value = 3, rune(lead&0x0f)
		case lead&0xf8 == 0xf0:
			length, value = 4, rune(lead&0x07)
		}
		ok := length > 0 && pos+length <= len(data)
		for i := 1; ok && i < length; i++ {
			ok = data[pos+i]&0xc0 == 0x80
		}
		if !ok {
			out = append(out, 0xfffd)
			pos++
			continue
		}
		for i := 1; i < length; i++ {
			value = value<<6 | rune(data[pos+i]&0x3f)
		}
		out = append(out, value)
		pos += length
	}
	return out
}

// unicode_cpt_to_utf8, which throws above U+10FFFF (llama.cpp b11192 then aborts: refuse).
// Surrogates are encoded as three bytes, as llama.cpp does (Go's utf8 package would not).
func appendUTF8(out []byte, c rune) ([]byte, error) {
	switch {
	case c < 0x80:
		return append(out, byte(c)), nil
	case c < 0x800:
		return append(out, 0xc0|byte(c>>6), 0x80|byte(c&0x3f)), nil
	case c < 0x10000:
		return append(out, 0xe0|byte(c>>12), 0x80|byte(c>>6&0x3f), 0x80|byte(c&0x3f)), nil
	case c <= 0x10ffff:
		return append(out, 0xf0|byte(c>>18), 0x80|byte(c>>12&0x3f), 0x80|byte(c>>6&0x3f), 0x80|byte(c&0x3f)), nil
	}
	return out, fmt.Errorf("%w 0x%X", errInvalidCodepoint, c)
}

type classes struct{ letter, number, space, any bool }

func classOf(cpts []rune, i int) classes {
	if i >= len(cpts) {
		return classes{} // beyond the fragment: no class at all
	}
	c := cpts[i]
	space := whitespace[c] && !(*plantBug == "nel-not-space" && c == 0x85)
	letter, number := unicode.IsLetter(c), unicode.IsNumber(c)
	if class, ok := sinceUnicode13(c); ok {
		letter, number = class == letterClass, class == numberClass
	}
	return classes{letter: letter, number: number, space: space, any: true}
}

const (
	letterClass = iota
	numberClass
)

// The code points llama.cpp b11192's tables (unicode-data.cpp) class as letters or numbers that
// Unicode 13 (Go 1.19's `unicode`, Java 17's Character) leaves unassigned: scripts and letters
// added in Unicode 14 and 15. tokconf's recordings hold one (U+1E7E8 before a contraction, in
// corpora/strength.yaml), which Go 1.19's tables alone got wrong. Made by comparing every code
// point's class under Go 1.19 with llama.cpp's table; a newer Go agrees with them.
var newerClasses = []struct {
	first, last rune
	class       int
}{
	{0x870, 0x887, letterClass}, {0x889, 0x88E, letterClass}, {0x8B5, 0x8B5, letterClass},
	{0x8C8, 0x8C9, letterClass}, {0xC5D, 0xC5D, letterClass}, {0xCDD, 0xCDD, letterClass},
	{0x170D, 0x170D, letterClass}, {0x171F, 0x171F, letterClass}, {0x1B4C, 0x1B4C, letterClass},
	{0x2C2F, 0x2C2F, letterClass}, {0x2C5F, 0x2C5F, letterClass}, {0x9FFD, 0x9FFF, letterClass},
	{0xA7C0, 0xA7C1, letterClass}, {0xA7D0, 0xA7D1, letterClass}, {0xA7D3, 0xA7D3, letterClass},
	{0xA7D5, 0xA7D9, letterClass}, {0xA7F2, 0xA7F4, letterClass}, {0x10570, 0x1057A, letterClass},
	{0x1057C, 0x1058A, letterClass}, {0x1058C, 0x10592, letterClass}, {0x10594, 0x10595, letterClass},
	{0x10597, 0x105A1, letterClass}, {0x105A3, 0x105B1, letterClass}, {0x105B3, 0x105B9, letterClass},
	{0x105BB, 0x105BC, letterClass}, {0x10780, 0x10785, letterClass}, {0x10787, 0x107B0, letterClass},
	{0x107B2, 0x107BA, letterClass}, {0x10F70, 0x10F81, letterClass}, {0x11071, 0x11072, letterClass},
	{0x11075, 0x11075, letterClass}, {0x1123F, 0x11240, letterClass}, {0x11740, 0x11746, letterClass},
	{0x11AB0, 0x11ABF, letterClass}, {0x11F02, 0x11F02, letterClass}, {0x11F04, 0x11F10, letterClass},
	{0x11F12, 0x11F33, letterClass}, {0x11F50, 0x11F59, numberClass}, {0x12F90, 0x12FF0, letterClass},
	{0x1342F, 0x1342F, letterClass}, {0x13441, 0x13446, letterClass}, {0x16A70, 0x16ABE, letterClass},
	{0x16AC0, 0x16AC9, numberClass}, {0x1AFF0, 0x1AFF3, letterClass}, {0x1AFF5, 0x1AFFB, letterClass},
	{0x1AFFD, 0x1AFFE, letterClass}, {0x1B11F, 0x1B122, letterClass}, {0x1B132, 0x1B132, letterClass},
	{0x1B155, 0x1B155, letterClass}, {0x1D2C0, 0x1D2D3, numberClass}, {0x1DF00, 0x1DF1E, letterClass},
	{0x1DF25, 0x1DF2A, letterClass}, {0x1E030, 0x1E06D, letterClass}, {0x1E290, 0x1E2AD, letterClass},
	{0x1E4D0, 0x1E4EB, letterClass}, {0x1E4F0, 0x1E4F9, numberClass}, {0x1E7E0, 0x1E7E6, letterClass},
	{0x1E7E8, 0x1E7EB, letterClass}, {0x1E7ED, 0x1E7EE, letterClass}, {0x1E7F0, 0x1E7FE, letterClass},
	{0x2A6DE, 0x2A6DF, letterClass}, {0x2B735, 0x2B739, letterClass}, {0x2EBF0, 0x2EE5D, letterClass},
	{0x31350, 0x323AF, letterClass},
}

func sinceUnicode13(c rune) (int, bool) {
	i := sort.Search(len(newerClasses), func(i int) bool { return newerClasses[i].last >= c })
	if i < len(newerClasses) && newerClasses[i].first <= c {
		return newerClasses[i].class, true
	}
	return 0, false
}

// unicode_regex_split_custom_gpt2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
func splitGPT2(cpts []rune) [][]rune {
	var words [][]rune
	start := 0
	add := func(end int) {
		if end > start {
			words = append(words, cpts[start:end])
		}
		start = end
	}
	at := func(i int) rune {
		if i < len(cpts) {
			return cpts[i]
		}
		return -1
	}
	for pos := 0; pos < len(cpts); {
		c := cpts[pos]
		if c == '\'' && pos+1 < len(cpts) {
			next := at(pos + 1)
			if next == 's' || next == 't' || next == 'm' || next == 'd' {
				pos += 2
				add(pos)
				continue
			}
			if pos+2 < len(cpts) {
				pair := string([]rune{next, at(pos + 2)})
				if pair == "re" || pair == "ve" || pair == "ll" {
					pos += 3
					add(pos)
					continue
				}
			}
		}
		k := classOf(cpts, pos)
		if c == ' ' {
			k = classOf(cpts, pos+1)
		}
		run := func(test func(classes) bool) {
			if c == ' ' {
				pos++
			}
			for test(k) {
				pos++
				k = classOf(cpts, pos)
			}
			add(pos)
		}
		if k.letter {
			run(func(k classes) bool { return k.letter })
			continue
		}
		if k.number {
			run(func(k classes) bool { return k.number })
			continue
		}
		if !(k.space || k.letter || k.number) && k.any {
			run(func(k classes) bool { return !(k.space || k.letter || k.number) && k.any })
			continue
		}
		spaces := 0
		for classOf(cpts, pos+spaces).space {
			spaces++
		}
		if spaces > 1 && pos+spaces < len(cpts) {
			pos += spaces - 1
			add(pos)
			continue
		}
		if spaces > 0 {
			pos += spaces
			add(pos)
			continue
		}
		pos++
		add(pos)
	}
	return words
}

// ---------------------------------------------------------------------------------------------
// The vocabulary (llama_vocab::impl::load) and byte-level BPE (llm_tokenizer_bpe_session).

const (
	attrUnknown     = 1
	attrUnused      = 2
	attrNormal      = 4
	attrControl     = 8
	attrUserDefined = 16
	attrByte        = 32
)

var typeToAttr = []int{0, attrNormal, attrUnknown, attrControl, attrUserDefined, attrUnused, attrByte}

var eogTexts = []string{
	"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>", "<end_of_turn>",
	"<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>",
	"<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>", "<｜end▁of▁sentence｜>", "[e~[",
}

// unicode_byte_to_utf8: printable bytes stand for themselves, the others for U+0100 upwards.
var byteToRune [256]rune
var runeToByte = map[rune]byte{}

func init() {
	extra := rune(0)
	for b := 0; b < 256; b++ {
		printable := (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff)
		if printable {
			byteToRune[b] = rune(b)
		} else {
			byteToRune[b] = 256 + extra
			extra++
		}
		runeToByte[byteToRune[b]] = byte(b)
	}
}

type special struct {
	id   int
	text []byte
}

type vocab struct {
	tokens         []string
	ids            map[string]int
	attrs          []int
	ranks          map[string]int
	bos, eos       int
	addBos, addEos bool
	addSep         bool // llama_vocab_get_add_sep: false for gpt-2's pre unless the GGUF says otherwise
	eog            []int
	specials       []special
	cache          map[string][]int
}

func intField(f map[string]any, key string, fallback int) int {
	if v, ok := f[key].(int64); ok {
		return int(v)
	}
	return fallback
}

func boolField(f map[string]any, key string) bool {
	v, _ := f[key].(bool)
	return v
}

func loadVocab(path string) (*vocab, error) {
	f, err := readGGUF(path)
	if err != nil {
		return nil, err
	}
	if f["tokenizer.ggml.model"] != "gpt2" || f["tokenizer.ggml.pre"] != "gpt-2" {
		return nil, fmt.Errorf("only gpt2 vocabularies with the gpt-2 pre-tokenizer (this one: %v, %v)",
			f["tokenizer.ggml.model"], f["tokenizer.ggml.pre"])
	}
	raw, _ := f["tokenizer.ggml.tokens"].([]any)
	v := &vocab{ids: map[string]int{}, ranks: map[string]int{}, cache: map[string][]int{}}
	for i, t := range raw {
		text, _ := t.(string)
		v.tokens = append(v.tokens, text)
		v.ids[text] = i
	}
	types, _ := f["tokenizer.ggml.token_type"].([]any)
	for i := range v.tokens {
		attr := attrNormal
		if i < len(types) {
			if t, ok := types[i].(int64); ok && t >= 0 && int(t) < len(typeToAttr) {
				attr = typeToAttr[t]
			}
		}
		v.attrs = append(v.attrs, attr)
	}
	merges, _ := f["tokenizer.ggml.merges"].([]any)
	for rank, m := range merges {
		line, _ := m.(string)
		if len(line) > 1 && strings.Contains(line[1:], " ") {
			if _, seen := v.ranks[line]; !seen {
				v.ranks[line] = rank
			}
		}
	}
	v.bos = intField(f, "tokenizer.ggml.bos_token_id", 11)
	v.eos = intField(f, "tokenizer.ggml.eos_token_id", 11)
	v.addBos = boolField(f, "tokenizer.ggml.add_bos_token")
	v.addEos = boolField(f, "tokenizer.ggml.add_eos_token")
	v.addSep = boolField(f, "tokenizer.ggml.add_sep_token")
	eog := map[int]bool{}
	if v.eos >= 0 && v.eos < len(v.tokens) {
		eog[v.eos] = true
	}
	for _, text := range eogTexts {
		if id, ok := v.ids[text]; ok {
			eog[id] = true
			v.attrs[id] |= attrControl // "control-looking token ... will be overridden"
		}
	}
	for id := range eog {
		v.eog = append(v.eog, id)
	}
	sort.Ints(v.eog)
	// cache_special_tokens: control, user-defined and unknown tokens, longest text first.
	for i, a := range v.attrs {
		if a&(attrControl|attrUserDefined|attrUnknown) != 0 && v.tokens[i] != "" {
			v.specials = append(v.specials, special{i, []byte(v.tokens[i])})
		}
	}
	sort.SliceStable(v.specials, func(a, b int) bool { return len(v.specials[a].text) > len(v.specials[b].text) })
	return v, nil
}

// A fragment is raw bytes, or a special token (id >= 0).
type fragment struct {
	id   int
	text []byte
}

// tokenizer_st_partition: cut special-token texts out of the raw bytes. Control and unknown tokens
// only with parse_special; user-defined ones always.
func (v *vocab) partition(data []byte, parseSpecial bool) []fragment {
	var fragments []fragment
	if len(data) > 0 {
		fragments = append(fragments, fragment{-1, data})
	}
	for _, s := range v.specials {
		if !parseSpecial && v.attrs[s.id]&(attrControl|attrUnknown) != 0 {
			continue
		}
		var next []fragment
		for _, f := range fragments {
			if f.id >= 0 {
				next = append(next, f)
				continue
			}
			rest := f.text
			for {
				at := bytes.Index(rest, s.text)
				if at < 0 {
					break
				}
				if at > 0 {
					next = append(next, fragment{-1, rest[:at]})
				}
				next = append(next, fragment{s.id, nil})
				rest = rest[at+len(s.text):]
			}
			if len(rest) > 0 {
				next = append(next, fragment{-1, rest})
			}
		}
		fragments = next
	}
	return fragments
}

func (v *vocab) encode(data []byte, addSpecial, parseSpecial bool) ([]int, error) {
	out := []int{}
	if addSpecial && v.addBos {
		out = append(out, v.bos)
	}
	for _, f := range v.partition(data, parseSpecial) {
		if f.id >= 0 {
			out = append(out, f.id)
			continue
		}
		for _, word := range splitGPT2(codePoints(f.text)) {
			ids, err := v.encodeWord(word)
			if err != nil {
				return nil, err
			}
			out = append(out, ids...)
		}
	}
	if addSpecial && v.addEos {
		out = append(out, v.eos)
	}
	return out, nil
}

func (v *vocab) encodeWord(cpts []rune) ([]int, error) {
	var raw []byte
	var err error
	for _, c := range cpts {
		if raw, err = appendUTF8(raw, c); err != nil {
			return nil, err
		}
	}
	symbols := make([]string, len(raw))
	for i, b := range raw {
		symbols[i] = string(byteToRune[b])
	}
	key := strings.Join(symbols, "")
	if ids, ok := v.cache[key]; ok {
		return ids, nil
	}
	// Merge the pair with the lowest rank, the leftmost on ties, until none is left. pairRanks[i] is
	// the rank of symbols i and i+1; a merge changes only its neighbours' ranks, so only those are
	// looked up again (looking every pair up on every merge is quadratic in lookups on a long word).
	rankOf := func(i int) int {
		if rank, ok := v.ranks[symbols[i]+" "+symbols[i+1]]; ok {
			return rank
		}
		return math.MaxInt
	}
	var pairRanks []int
	for i := 0; i+1 < len(symbols); i++ {
		pairRanks = append(pairRanks, rankOf(i))
	}
	for {
		best, bestRank := -1, math.MaxInt
		for i, rank := range pairRanks {
			if rank < bestRank {
				best, bestRank = i, rank
			}
		}
		if best < 0 {
			break
		}
		symbols[best] += symbols[best+1]
		symbols = append(symbols[:best+1], symbols[best+2:]...)
		pairRanks = append(pairRanks[:best], pairRanks[best+1:]...)
		if best > 0 {
			pairRanks[best-1] = rankOf(best - 1)
		}
		if best < len(pairRanks) {
			pairRanks[best] = rankOf(best)
		}
	}
	ids := []int{}
	for _, s := range symbols {
		if id, ok := v.ids[s]; ok {
			ids = append(ids, id)
			continue
		}
		for _, r := range s { // byte fallback
			if id, ok := v.ids[string(r)]; ok {
				ids = append(ids, id)
			}
		}
	}
	v.cache[key] = ids
	return ids, nil
}

// llama_token_to_piece (lstrip 0).
func (v *vocab) piece(id int, special bool) []byte {
	attr := v.attrs[id]
	if !special && attr&(attrUnknown|attrControl) != 0 {
		return nil
	}
	text := v.tokens[id]
	if attr&(attrUnknown|attrControl|attrUserDefined) != 0 {
		return []byte(text)
	}
	if attr&attrNormal != 0 {
		var out []byte
		for _, r := range text {
			if b, ok := runeToByte[r]; ok {
				out = append(out, b)
			} else {
				var one [4]byte
				n := utf8.EncodeRune(one[:], r)
				out = append(out, fmt.Sprintf("[UNK_BYTE_0x%x%s]", one[:n], text)...)
			}
		}
		return out
	}
	if attr&attrByte != 0 && len(text) >= 5 {
		var b byte
		fmt.Sscanf(text[3:5], "%02X", &b)
		return []byte{b}
	}
	return nil
}

// llama_detokenize, with the GPT-2 pre-tokenizer's clean_spaces passes.
func (v *vocab) detokenize(ids []int, removeSpecial, unparseSpecial bool) []byte {
	if removeSpecial && v.addBos && len(ids) > 0 && ids[0] == v.bos {
		ids = ids[1:]
	}
	if removeSpecial && v.addEos && len(ids) > 0 && ids[len(ids)-1] == v.eos {
		ids = ids[:len(ids)-1]
	}
	var text []byte
	for _, id := range ids {
		text = append(text, v.piece(id, unparseSpecial)...)
	}
	return cleanSpaces(text)
}

// The three clean-up passes of llama_vocab::impl::detokenize, each rewriting the buffer in place.
func cleanSpaces(text []byte) []byte {
	size := len(text)
	pass := func(drop func(i int) int) { // 0 keep, 1 drop the space before, 2 that and blank the next
		total := 0
		if size > 0 {
			total = 1
		}
		for i := 1; i < size; i++ {
			switch drop(i) {
			case 1:
				total--
			case 2:
				total--
				text[total] = text[i]
				total++
				i++
				text[i] = 0 // "remove next space": llama.cpp writes a NUL ahead of itself
				continue
			}
			text[total] = text[i]
			total++
		}
		size = total
	}
	pass(func(i int) int {
		if text[i-1] == ' ' && strings.IndexByte("?!.,", text[i]) >= 0 {
			return 1
		}
		return 0
	})
	pass(func(i int) int {
		if text[i] == '\'' && i+1 < size && text[i-1] == ' ' && text[i+1] == ' ' {
			return 2
		}
		return 0
	})
	pass(func(i int) int {
		if !(text[i-1] == ' ' && text[i] == '\'' && i+1 < size) {
			return 0
		}
		a := text[i+1]
		if a == 's' || a == 'm' || (i+2 < size && ((a == 'r' && text[i+2] == 'e') || (a == 'v' && text[i+2] == 'e'))) {
			return 1
		}
		return 0
	})
	return text[:size]
}

// ---------------------------------------------------------------------------------------------
// The line protocol.

type request struct {
	ID             int    `json:"id"`
	Op             string `json:"op"`
	Path           string `json:"path"`
	TextB64        string `json:"text_b64"`
	AddSpecial     bool   `json:"add_special"`
	ParseSpecial   bool   `json:"parse_special"`
	IDs            []int  `json:"ids"`
	Special        bool   `json:"special"`
	RemoveSpecial  bool   `json:"remove_special"`
	UnparseSpecial bool   `json:"unparse_special"`
}

var loaded *vocab

func answer(r request) map[string]any {
	switch r.Op {
	case "hello":
		return map[string]any{"protocol": 2, "name": "gpt2-go-example", "version": "1", "vocab_types": []string{"bpe"}}
	case "load":
		v, err := loadVocab(r.Path)
		loaded = v
		if err != nil {
			return map[string]any{"ok": false, "error": err.Error()}
		}
		return map[string]any{"ok": true, "ops": []string{"facts", "token_to_piece", "detokenize"}}
	}
	if loaded == nil {
		return map[string]any{"error": "no vocabulary loaded"}
	}
	switch r.Op {
	case "encode":
		data, err := base64.StdEncoding.DecodeString(r.TextB64) // bytes: inputs may be invalid UTF-8
		if err != nil {
			return map[string]any{"error": err.Error()}
		}
		ids, err := loaded.encode(data, r.AddSpecial, r.ParseSpecial)
		if err != nil {
			return map[string]any{"error": err.Error()}
		}
		return map[string]any{"ids": ids}
	case "facts":
		return map[string]any{"facts": map[string]any{
			"add_bos": loaded.addBos, "add_eos": loaded.addEos, "add_sep": loaded.addSep, "bos": loaded.bos, "eos": loaded.eos, "eog_ids": loaded.eog,
		}}
	case "token_to_piece":
		pieces := make([]string, len(r.IDs))
		for i, id := range r.IDs {
			pieces[i] = base64.StdEncoding.EncodeToString(loaded.piece(id, r.Special))
		}
		return map[string]any{"pieces_b64": pieces}
	case "detokenize":
		text := loaded.detokenize(r.IDs, r.RemoveSpecial, r.UnparseSpecial)
		return map[string]any{"text_b64": base64.StdEncoding.EncodeToString(text)}
	}
	return map[string]any{"error": "unknown op " + r.Op}
}

func main() {
	flag.Parse()
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			var r request
			if json.Unmarshal(line, &r) != nil {
				fmt.Fprintln(os.Stderr, "not a JSON request:", string(line))
				os.Exit(2)
			}
			a := answer(r)
			a["id"] = r.ID
			encoded, _ := json.Marshal(a)
			out.Write(append(encoded, '\n'))
			out.Flush()
		}
		if err != nil {
			return
		}
	}
}
