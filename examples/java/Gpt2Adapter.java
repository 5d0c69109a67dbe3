// A tokenizer port in Java, gated by tokconf over the line protocol, version 2 (docs/line-protocol.md):
//
//     javac -d out examples/java/*.java
//     tokconf check --impl 'cmd:java -cp out Gpt2Adapter' --vocab gpt-2
//
// (`java -XX:TieredStopAtLevel=1 -cp out Gpt2Adapter` is quicker for a check: it leaves out the
// JVM's optimizing compiler, whose compile time a run of a few seconds never earns back.)
//
// The same port as examples/node and examples/go, with the JDK only (Java 17, no jars, no build
// tool): llama.cpp's byte-level BPE for vocabularies with the `gpt2` tokenizer model and the GPT-2
// pre-tokenizer (tokenizer.ggml.pre "gpt-2"), written from llama.cpp's src/llama-vocab.cpp and
// src/unicode.cpp. The files:
//
//   Gpt2Adapter.java    the line protocol: read a JSON line, answer a JSON line (this file)
//   Gpt2Tokenizer.java  the port: special-token split, GPT-2 word split, BPE, facts, decoding
//   Gguf.java           a GGUF reader (the key-value header, memory-mapped, little-endian)
//   Json.java           just enough JSON, by hand (the JDK has none)
//
// Standard output is for protocol answers only: the answers get their own stream on file descriptor
// 1, and System.out is pointed at standard error, so a stray println lands in the log tokconf keeps
// instead of between the answers. A bug in the port (any exception) is answered as a `fault`, that
// request's error, and the program goes on; an `error` is kept for what llama.cpp refuses too (a
// code point above U+10FFFF), since an `error` passes wherever llama.cpp refuses.
//
// Letter and number classes come from Character.getType, whose Unicode version (Java 17: 13) is
// older than llama.cpp's, so the letters and numbers assigned since come from llama.cpp's tables
// (Gpt2Tokenizer.NEWER_CLASSES); whitespace is Unicode White_Space, as llama.cpp has it, not
// Character.isWhitespace.
//
// `--plant-bug NAME` plants a bug a real port could have, so tokconf's tests can show the gate
// catches it: `nel-not-space` (U+0085 is not whitespace, as for Character.isWhitespace) or
// `no-clean-spaces` (detokenize forgets llama.cpp's clean_spaces passes, so " ." stays " .").

import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Base64;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

public final class Gpt2Adapter {
    private static final Set<String> BUGS = Set.of("nel-not-space", "no-clean-spaces");

    private final Set<String> plantedBugs;
    private Gpt2Tokenizer vocab; // the loaded vocabulary, or null

    private Gpt2Adapter(Set<String> plantedBugs) {
        this.plantedBugs = plantedBugs;
    }

    /** The answer to one request, without its id. */
    private Map<String, Object> answer(Map<String, Object> request) {
        Map<String, Object> answer = new LinkedHashMap<>();
        String op = String.valueOf(request.get("op"));
        try {
            switch (op) {
                case "hello":
                    answer.put("protocol", 2);
                    answer.put("name", "gpt2-java-example");
                    answer.put("version", "1");
                    answer.put("vocab_types", List.of("bpe"));
                    break;
                case "load":
                    vocab = null;
                    try {
                        vocab = new Gpt2Tokenizer(Path.of((String) request.get("path")), plantedBugs);
                    } catch (Gpt2Tokenizer.Unsupported declined) {
                        answer.put("ok", false);
                        answer.put("error", declined.getMessage());
                        break;
                    }
                    answer.put("ok", true);
                    answer.put("ops", List.of("facts", "token_to_piece", "detokenize"));
                    // What was loaded: if llama.cpp loaded something else, tokconf says so once.
                    answer.put("n_tokens", vocab.tokens.length);
                    break;
                case "encode":
                    // Bytes, never a String: inputs may be invalid UTF-8.
                    byte[] data = Base64.getDecoder().decode((String) request.get("text_b64"));
                    try {
                        answer.put("ids", loaded().encode(data, flag(request, "add_special"), flag(request, "parse_special")));
                    } catch (Gpt2Tokenizer.InvalidCodepoint refused) {
                        answer.put("error", refused.getMessage());
                    }
                    break;
                case "facts":
                    Map<String, Object> facts = new LinkedHashMap<>();
                    facts.put("add_bos", loaded().addBos);
                    facts.put("add_eos", loaded().addEos);
                    facts.put("add_sep", loaded().addSep);
                    facts.put("bos", loaded().bos);
                    facts.put("eos", loaded().eos);
                    facts.put("eog_ids", loaded().eog);
                    answer.put("facts", facts);
                    break;
                case "token_to_piece":
                    int[] ids = ids(request);
                    String[] pieces = new String[ids.length];
                    for (int i = 0; i < ids.length; i++) {
                        pieces[i] = base64(loaded().piece(ids[i], flag(request, "special")));
                    }
                    answer.put("pieces_b64", List.of(pieces));
                    break;
                case "detokenize":
                    byte[] text = loaded().detokenize(
                        ids(request), flag(request, "remove_special"), flag(request, "unparse_special"));
                    answer.put("text_b64", base64(text));
                    break;
                default:
                    answer.put("error", "unknown op " + op);
                    break;
            }
        } catch (Exception broke) { // a bug in the port: this request's error, and the program goes on
            System.err.println("fault in " + op + ":");
            broke.printStackTrace();
            answer.clear();
            answer.put("fault", broke.toString());
        }
        return answer;
    }

    private Gpt2Tokenizer loaded() {
        if (vocab == null) {
            throw new IllegalStateException("no vocabulary loaded");
        }
        return vocab;
    }

    private static boolean flag(Map<String, Object> request, String key) {
        return Boolean.TRUE.equals(request.get(key));
    }

    private static int[] ids(Map<String, Object> request) {
        List<?> ids = (List<?>) request.get("ids");
        return ids.stream().mapToInt(id -> Math.toIntExact((Long) id)).toArray();
    }

    private static String base64(byte[] bytes) {
        return Base64.getEncoder().encodeToString(bytes);
    }

    public static void main(String[] args) throws IOException {
        Set<String> plantedBugs = new HashSet<>();
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--plant-bug") && i + 1 < args.length && BUGS.contains(args[i + 1])) {
                plantedBugs.add(args[++i]);
            } else {
                System.err.println("usage: java Gpt2Adapter [--plant-bug " + String.join("|", BUGS) + "]...");
                System.exit(2);
            }
        }
        OutputStream answers = new BufferedOutputStream(new FileOutputStream(FileDescriptor.out), 1 << 16);
        System.setOut(System.err);
        BufferedReader requests = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8), 1 << 20);
        Gpt2Adapter adapter = new Gpt2Adapter(plantedBugs);
        for (String line; (line = requests.readLine()) != null; ) {
            if (line.isBlank()) {
                continue;
            }
            Map<String, Object> request;
            try {
                request = Json.parseObject(line);
            } catch (IllegalArgumentException notJson) {
                System.err.println("not a JSON request (" + notJson.getMessage() + "): " + line);
                System.exit(2);
                return;
            }
            Map<String, Object> answer = new LinkedHashMap<>();
            answer.put("id", request.get("id"));
            answer.putAll(adapter.answer(request));
            answers.write((Json.write(answer) + "\n").getBytes(StandardCharsets.US_ASCII)); // one piece
            answers.flush();
        }
        // End of input: the run is over.
    }
}
