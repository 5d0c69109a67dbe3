// A `cmd:` adapter (line protocol 2) for ollama's own Go tokenizers (its `tokenizer/` package, v0.24.0,
// the last release whose Go engine tokenized GGUF models), called unchanged. Written for tokconf's
// benchmarks/explain.py; it holds no ollama code. The vocabulary is built from the GGUF as ollama's
// model packages build it (model/models/llama, qwen3next, bert, nomicbert): SentencePiece for `llama`,
// WordPiece (lowercasing) for `bert` and `t5`, byte-level BPE for `gpt2` with the pre-tokenizer regex
// model/models/llama/model.go picks by `tokenizer.ggml.pre` (`default`: the package's GPT-2 regex;
// `qwen2`, `qwen35`: Qwen2's; `refact`: its two; any other: the Llama 3 style one).
//
// ollama's Encode always parses special tokens and takes a Go string: parse_special off on a text
// holding a special token's text is declined (`special-text`); invalid UTF-8 is passed on as it is
// (Go strings are bytes). add_special is Encode's addSpecial.
//
// Build (see benchmarks/real_libraries/README.md): a go.mod beside this file whose `replace` points
// github.com/ollama/ollama at a checkout of tag v0.24.0, then `go build -o ollama-adapter .`.
package main

import (
	"bufio"
	"cmp"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ollama/ollama/tokenizer"
)

type gguf map[string]any

func readGGUF(path string) (gguf, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	var magic [4]byte
	if _, err := io.ReadFull(r, magic[:]); err != nil || string(magic[:]) != "GGUF" {
		return nil, fmt.Errorf("not a GGUF file")
	}
	var version uint32
	var nTensors, nKV uint64
	binary.Read(r, binary.LittleEndian, &version)
	binary.Read(r, binary.LittleEndian, &nTensors)
	binary.Read(r, binary.LittleEndian, &nKV)
	str := func() (string, error) {
		var n uint64
		if err := binary.Read(r, binary.LittleEndian, &n); err != nil {
			return "", err
		}
		b := make([]byte, n)
		_, err := io.ReadFull(r, b)
		return string(b), err
	}
	var value func(t uint32) (any, error)
	value = func(t uint32) (any, error) {
		switch t {
		case 0, 1:
			return widened[uint8](r)
		case 2, 3:
			return widened[uint16](r)
		case 4:
			return widened[uint32](r)
		case 5:
			return widened[int32](r)
		case 6:
			return read[float32](r)
		case 7:
			v, err := read[uint8](r)
			return v != 0, err
		case 8:
			return str()
		case 9:
			var et uint32
			var n uint64
			binary.Read(r, binary.LittleEndian, &et)
			if err := binary.Read(r, binary.LittleEndian, &n); err != nil {
				return nil, err
			}
			out := make([]any, n)
			for i := range out {
				v, err := value(et)
				if err != nil {
					return nil, err
				}
				out[i] = v
			}
			return out, nil
		case 10, 11:
			return read[int64](r)
		case 12:
			v, err := read[float64](r)
			return float32(v), err
		}
		return nil, fmt.Errorf("unknown GGUF type %d", t)
	}
	kv := gguf{}
	for range nKV {
		key, err := str()
		if err != nil {
			return nil, err
		}
		var t uint32
		binary.Read(r, binary.LittleEndian, &t)
		v, err := value(t)
		if err != nil {
			return nil, err
		}
		kv[key] = v
	}
	return kv, nil
}

func (g gguf) str(k, def string) string {
	if v, ok := g[k].(string); ok {
		return v
	}
	return def
}
func (g gguf) uint(k string) int64 {
	if v, ok := g[k].(int64); ok {
		return v
	}
	return 0
}
func (g gguf) flag(k string, def bool) bool {
	if v, ok := g[k].(bool); ok {
		return v
	}
	return def
}

// read reads one little-endian value of type T.
func read[T any](r io.Reader) (T, error) {
	var v T
	err := binary.Read(r, binary.LittleEndian, &v)
	return v, err
}

// widened reads an integer of type T as the int64 the vocabulary's fields are read as.
func widened[T uint8 | uint16 | uint32 | int32](r io.Reader) (any, error) {
	v, err := read[T](r)
	return int64(v), err
}

// list reads an array value, each element converted by conv (a missing key: an empty list).
func list[T any](g gguf, k string, conv func(any) T) []T {
	arr, _ := g[k].([]any)
	out := make([]T, len(arr))
	for i, v := range arr {
		out[i] = conv(v)
	}
	return out
}
func asString(v any) string {
	s, _ := v.(string)
	return s
}
func asInt32(v any) int32 {
	n, _ := v.(int64)
	return int32(n)
}
func asFloat32(v any) float32 {
	f, _ := v.(float32)
	return f
}

const llamaStyle = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
const qwen2 = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"

// controlTexts are the texts of the vocabulary's control tokens: the special texts a text asked with
// parse_special off may hold (user-defined ones llama.cpp parses in every mode, as ollama does).
func controlTexts(vocab *tokenizer.Vocabulary) []string {
	var out []string
	for i, t := range vocab.Types {
		if t == tokenizer.TOKEN_TYPE_CONTROL && vocab.Values[i] != "" {
			out = append(out, vocab.Values[i])
		}
	}
	return out
}

// load builds the tokenizer as ollama's model package for this tokenizer model does.
func load(g gguf) (tokenizer.Tokenizer, []string, error) {
	eos := append([]int32{int32(g.uint("tokenizer.ggml.eos_token_id"))}, list(g, "tokenizer.ggml.eos_token_ids", asInt32)...)
	vocab := &tokenizer.Vocabulary{
		Values: list(g, "tokenizer.ggml.tokens", asString),
		Scores: list(g, "tokenizer.ggml.scores", asFloat32),
		Types:  list(g, "tokenizer.ggml.token_type", asInt32),
		Merges: list(g, "tokenizer.ggml.merges", asString),
		AddBOS: g.flag("tokenizer.ggml.add_bos_token", true),
		BOS:    []int32{int32(g.uint("tokenizer.ggml.bos_token_id"))},
		AddEOS: g.flag("tokenizer.ggml.add_eos_token", false),
		EOS:    eos,
	}
	switch model := g.str("tokenizer.ggml.model", ""); model {
	case "llama":
		return tokenizer.NewSentencePiece(vocab), controlTexts(vocab), nil
	case "bert", "t5": // model/models/bert/embed.go and nomicbert/model.go: WordPiece, [CLS] and [SEP]
		vocab.AddEOS = g.flag("tokenizer.ggml.add_eos_token", true)
		vocab.BOS = []int32{int32(cmp.Or(g.uint("tokenizer.ggml.cls_token_id"), g.uint("tokenizer.ggml.bos_token_id")))}
		vocab.EOS = []int32{int32(cmp.Or(g.uint("tokenizer.ggml.separator_token_id"), g.uint("tokenizer.ggml.seperator_token_id"), g.uint("tokenizer.ggml.eos_token_id")))}
		return tokenizer.NewWordPiece(vocab, true), controlTexts(vocab), nil
	case "gpt2":
		var pre []string
		switch g.str("tokenizer.ggml.pre", "default") {
		case "default":
		case "qwen2", "qwen35":
			vocab.AddBOS = g.flag("tokenizer.ggml.add_bos_token", false) // qwen3next/model.go
			pre = []string{qwen2}
		case "refact":
			pre = []string{`\p{N}`, `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`}
		default:
			pre = []string{llamaStyle}
		}
		return tokenizer.NewBytePairEncoding(vocab, pre...), controlTexts(vocab), nil
	default:
		return nil, nil, fmt.Errorf("tokenizer model %q: ollama has no Go tokenizer for it", model)
	}
}

func main() {
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	var tok tokenizer.Tokenizer
	var specials []string
	for {
		line, err := in.ReadBytes('\n')
		if len(line) == 0 && err != nil {
			return
		}
		var req map[string]any
		if json.Unmarshal(line, &req) != nil {
			continue
		}
		answer := map[string]any{"id": req["id"]}
		func() {
			defer func() {
				if r := recover(); r != nil {
					answer["fault"] = fmt.Sprint("panic: ", r)
				}
			}()
			switch req["op"] {
			case "hello":
				answer["protocol"] = 2
				answer["name"] = "ollama-tokenizer"
				answer["version"] = "0.24.0"
				answer["vocab_types"] = []string{"spm", "bpe", "wpm", "ugm"}
				answer["unsupported"] = []string{"special-text"}
			case "load":
				g, err := readGGUF(req["path"].(string))
				if err == nil {
					tok, specials, err = load(g)
				}
				if err != nil {
					answer["ok"] = false
					answer["reason"] = err.Error()
				} else {
					answer["ok"] = true
					answer["ops"] = []string{}
				}
			case "encode":
				data, _ := base64.StdEncoding.DecodeString(req["text_b64"].(string))
				text := string(data)
				if parse, _ := req["parse_special"].(bool); !parse {
					for _, s := range specials {
						if s != "" && strings.Contains(text, s) {
							answer["unsupported"] = "special-text"
							return
						}
					}
				}
				add, _ := req["add_special"].(bool)
				ids, err := tok.Encode(text, add)
				if err != nil {
					answer["fault"] = err.Error()
					return
				}
				if ids == nil {
					ids = []int32{}
				}
				answer["ids"] = ids
			default:
				answer["fault"] = fmt.Sprintf("unknown op %v", req["op"])
			}
		}()
		b, _ := json.Marshal(answer)
		out.Write(append(b, '\n'))
		out.Flush()
	}
}
