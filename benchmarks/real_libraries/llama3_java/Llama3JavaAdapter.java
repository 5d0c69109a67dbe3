// A `cmd:` adapter (line protocol 2) for llama3.java's own Llama 3 tokenizer (mukel/llama3.java, one file,
// Llama3.java, commit 8cf392d), called unchanged: the vocabulary is loaded by its ModelLoader from the GGUF
// (weights skipped), each input encoded by Tokenizer.encode(String), the entry point its ChatFormat uses.
// It sits in the library's package because ModelLoader and Tokenizer are package-private. It holds no
// llama3.java code. Build and run: benchmarks/real_libraries/README.md, "llama3.java".
//
// Tokenizer.encode takes a Java String: input that is not valid UTF-8 is declined (`invalid-utf8`). It parses
// no special token text (ChatFormat adds special tokens by id), so parse_special on is asked as off;
// add_special puts <|begin_of_text|> first by its id, as ChatFormat.encodeDialogPrompt does.
package com.llama4j;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Base64;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

public final class Llama3JavaAdapter {
    /** The value of one top-level key of a request (tokconf's requests hold each key used here once). */
    private static String field(String line, String key) {
        Matcher m = Pattern.compile("\"" + key + "\"\\s*:\\s*(\"((?:[^\"\\\\]|\\\\.)*)\"|[-\\w]+)").matcher(line);
        if (!m.find()) {
            return null;
        }
        return m.group(2) != null ? m.group(2).replace("\\\"", "\"").replace("\\\\", "\\") : m.group(1);
    }

    private static String quote(String text) {
        StringBuilder sb = new StringBuilder("\"");
        for (char c : text.toCharArray()) {
            sb.append(c == '"' || c == '\\' ? "\\" + c : c < 0x20 ? String.format("\\u%04x", (int) c) : c);
        }
        return sb.append('"').toString();
    }

    /**
     * A copy of the GGUF (in TMPDIR, the scratch tokconf's sandbox gives) zero-padded to 32 bytes: GGUF.loadModelImpl skips the padding before the tensor data,
     * which a vocabulary-only GGUF (no tensors) ends without, and stops at the end of the file there.
     */
    private static Path padded(Path gguf) throws IOException {
        String tmp = System.getenv().getOrDefault("TMPDIR", System.getProperty("java.io.tmpdir"));
        Path copy = Files.createTempFile(Path.of(tmp), "llama3java-", ".gguf");
        copy.toFile().deleteOnExit();
        byte[] data = Files.readAllBytes(gguf);
        Files.write(copy, Arrays.copyOf(data, (data.length + 31) / 32 * 32));
        return copy;
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Tokenizer tokenizer = null;
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            String id = field(line, "id");
            String answer;
            try {
                answer = switch (field(line, "op")) {
                    case "hello" -> "\"protocol\": 2, \"name\": \"llama3.java\", \"version\": \"8cf392d\", "
                            + "\"vocab_types\": [\"bpe\"], \"unsupported\": [\"invalid-utf8\"]";
                    case "load" -> {
                        try {
                            tokenizer = ModelLoader.loadModel(padded(Path.of(field(line, "path"))), 8192, false).tokenizer();
                            yield "\"ok\": true, \"ops\": []";
                        } catch (Exception e) {
                            tokenizer = null;
                            yield "\"ok\": false, \"error\": " + quote("llama3.java cannot load it: " + e);
                        }
                    }
                    case "encode" -> {
                        byte[] data = Base64.getDecoder().decode(field(line, "text_b64"));
                        String text;
                        try {
                            text = StandardCharsets.UTF_8.newDecoder().decode(ByteBuffer.wrap(data)).toString();
                        } catch (CharacterCodingException e) {
                            yield "\"unsupported\": \"invalid-utf8\"";
                        }
                        StringBuilder ids = new StringBuilder();
                        if ("true".equals(field(line, "add_special"))) {
                            ids.append(tokenizer.getSpecialTokens().get("<|begin_of_text|>"));
                        }
                        for (int token : tokenizer.encode(text)) {
                            ids.append(ids.isEmpty() ? "" : ",").append(token);
                        }
                        yield "\"ids\": [" + ids + "]";
                    }
                    default -> "\"fault\": " + quote("unknown op");
                };
            } catch (RuntimeException | StackOverflowError e) { // java.util.regex recurses per character matched
                answer = "\"fault\": " + quote(String.valueOf(e));
            }
            System.out.println("{\"id\": " + id + ", " + answer + "}");
            System.out.flush();
        }
    }
}
