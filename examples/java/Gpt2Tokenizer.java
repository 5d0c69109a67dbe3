import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.IntPredicate;

/**
 * llama.cpp's byte-level BPE for vocabularies with the `gpt2` tokenizer model and the GPT-2
 * pre-tokenizer, written from src/llama-vocab.cpp and src/unicode.cpp (b11192): the vocabulary and
 * its facts (llama_vocab::impl::load), the special-token split (tokenizer_st_partition), the GPT-2
 * word split (unicode_regex_split_custom_gpt2), BPE merges (llm_tokenizer_bpe_session),
 * llama_token_to_piece and llama_detokenize.
 *
 * Input is bytes, never a Java String: inputs may be invalid UTF-8, which llama.cpp decodes its own
 * way (codePoints below), and a String would have replaced those bytes before the port saw them.
 */
final class Gpt2Tokenizer {
    /** llama.cpp refuses the input (it aborts, in b11192): answered as an `error`, a refusal. */
    static final class InvalidCodepoint extends Exception {
        private static final long serialVersionUID = 1L;

        InvalidCodepoint(int cpt) {
            super(String.format("invalid codepoint 0x%X", cpt));
        }
    }

    /** The vocabulary is not one this port serves: answered `ok: false`, unsupported. */
    static final class Unsupported extends Exception {
        private static final long serialVersionUID = 1L;

        Unsupported(String reason) {
            super(reason);
        }
    }

    // -----------------------------------------------------------------------------------------
    // Code points and their classes (unicode.cpp).

    // unicode_cpt_flags' whitespace: Unicode White_Space, sorted (binary search). Not
    // Character.isWhitespace, which leaves out U+0085, U+00A0, U+2007 and U+202F and adds
    // U+001C-U+001F.
    private static final int[] WHITESPACE = {
        0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x20, 0x85, 0xa0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004,
        0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000,
    };

    // A code point's classes, as bits; ANY is "a code point at all" (beyond the fragment: none).
    private static final int LETTER = 1, NUMBER = 2, SPACE = 4, ANY = 8;

    /**
     * unicode_cpts_from_utf8: the lead byte decides the length, continuation bytes are only checked
     * for their top bits; anything else costs one byte and gives U+FFFD. (So 0xF4 0x90 0x80 0x80
     * decodes to U+110000, which the BPE step then refuses, and surrogates decode as themselves.)
     */
    static int[] codePoints(byte[] data) {
        int[] out = new int[data.length];
        int n = 0;
        for (int pos = 0; pos < data.length; ) {
            int lead = data[pos] & 0xff;
            int length = 0, value = 0;
            if (lead < 0x80) {
                out[n++] = lead;
                pos++;
                continue;
            } else if ((lead & 0xe0) == 0xc0) {
                length = 2;
                value = lead & 0x1f;
            } else if ((lead & 0xf0) == 0xe0) {
                length = 3;
                value = lead & 0x0f;
            } else if ((lead & 0xf8) == 0xf0) {
                length = 4;
                value = lead & 0x07;
            }
            boolean ok = length > 0 && pos + length <= data.length;
            for (int i = 1; ok && i < length; i++) {
                ok = (data[pos + i] & 0xc0) == 0x80;
            }
            if (!ok) {
                out[n++] = 0xfffd;
                pos++;
                continue;
            }
            for (int i = 1; i < length; i++) {
                value = value << 6 | (data[pos + i] & 0x3f);
            }
            out[n++] = value;
            pos += length;
        }
        return Arrays.copyOf(out, n);
    }

    /**
     * unicode_cpt_to_utf8, which throws above U+10FFFF (llama.cpp b11192 then aborts: refuse).
     * Surrogates are encoded as three bytes, as llama.cpp does (Java's own encoder would not).
     */
    static void appendUtf8(ByteArrayOutputStream out, int c) throws InvalidCodepoint {
        if (c < 0x80) {
            out.write(c);
        } else if (c < 0x800) {
            out.write(0xc0 | c >> 6);
            out.write(0x80 | c & 0x3f);
        } else if (c < 0x10000) {
            out.write(0xe0 | c >> 12);
            out.write(0x80 | c >> 6 & 0x3f);
            out.write(0x80 | c & 0x3f);
        } else if (c <= 0x10ffff) {
            out.write(0xf0 | c >> 18);
            out.write(0x80 | c >> 12 & 0x3f);
            out.write(0x80 | c >> 6 & 0x3f);
            out.write(0x80 | c & 0x3f);
        } else {
            throw new InvalidCodepoint(c);
        }
    }

    /**
     * \p{L} and \p{N} from Character.getType, whose tables are the JDK's Unicode version (Java 17:
     * Unicode 13), older than llama.cpp's: the letters and numbers assigned since are taken from
     * llama.cpp's tables instead (NEWER_CLASSES), or Java 17 fails the gpt-2 recording's U+1E7E8.
     * Above U+10FFFF getType says UNASSIGNED: such a code point is "other", as in llama.cpp, until
     * encoding refuses it.
     */
    private int classOf(int cpt) {
        int classes = ANY;
        int newer = newerClass(cpt);
        if (newer != 0) {
            classes |= newer;
        } else switch (Character.getType(cpt)) {
            case Character.UPPERCASE_LETTER:
            case Character.LOWERCASE_LETTER:
            case Character.TITLECASE_LETTER:
            case Character.MODIFIER_LETTER:
            case Character.OTHER_LETTER:
                classes |= LETTER;
                break;
            case Character.DECIMAL_DIGIT_NUMBER:
            case Character.LETTER_NUMBER:
            case Character.OTHER_NUMBER:
                classes |= NUMBER;
                break;
            default:
                break;
        }
        if (Arrays.binarySearch(WHITESPACE, cpt) >= 0 && !(nelNotSpace && cpt == 0x85)) {
            classes |= SPACE;
        }
        return classes;
    }

    /**
     * The code points llama.cpp b11192's tables (unicode-data.cpp) class as letters or numbers that
     * Unicode 13 (Java 17's Character, Go 1.19's unicode) leaves unassigned: scripts and letters added
     * in Unicode 14 and 15, as first, last, class. tokconf's recordings hold one (U+1E7E8 before a
     * contraction, in corpora/strength.yaml). Made by comparing every code point's class under
     * Java 17 with llama.cpp's table; a newer JDK agrees with them.
     */
    private static final int[] NEWER_CLASSES = {
        0x870, 0x887, LETTER, 0x889, 0x88E, LETTER, 0x8B5, 0x8B5, LETTER, 0x8C8, 0x8C9, LETTER,
        0xC5D, 0xC5D, LETTER, 0xCDD, 0xCDD, LETTER, 0x170D, 0x170D, LETTER, 0x171F, 0x171F, LETTER,
        0x1B4C, 0x1B4C, LETTER, 0x2C2F, 0x2C2F, LETTER, 0x2C5F, 0x2C5F, LETTER, 0x9FFD, 0x9FFF, LETTER,
        0xA7C0, 0xA7C1, LETTER, 0xA7D0, 0xA7D1, LETTER, 0xA7D3, 0xA7D3, LETTER, 0xA7D5, 0xA7D9, LETTER,
        0xA7F2, 0xA7F4, LETTER, 0x10570, 0x1057A, LETTER, 0x1057C, 0x1058A, LETTER, 0x1058C, 0x10592, LETTER,
        0x10594, 0x10595, LETTER, 0x10597, 0x105A1, LETTER, 0x105A3, 0x105B1, LETTER,
        0x105B3, 0x105B9, LETTER, 0x105BB, 0x105BC, LETTER, 0x10780, 0x10785, LETTER,
        0x10787, 0x107B0, LETTER, 0x107B2, 0x107BA, LETTER, 0x10F70, 0x10F81, LETTER,
        0x11071, 0x11072, LETTER, 0x11075, 0x11075, LETTER, 0x1123F, 0x11240, LETTER,
        0x11740, 0x11746, LETTER, 0x11AB0, 0x11ABF, LETTER, 0x11F02, 0x11F02, LETTER,
        0x11F04, 0x11F10, LETTER, 0x11F12, 0x11F33, LETTER, 0x11F50, 0x11F59, NUMBER,
        0x12F90, 0x12FF0, LETTER, 0x1342F, 0x1342F, LETTER, 0x13441, 0x13446, LETTER,
        0x16A70, 0x16ABE, LETTER, 0x16AC0, 0x16AC9, NUMBER, 0x1AFF0, 0x1AFF3, LETTER,
        0x1AFF5, 0x1AFFB, LETTER, 0x1AFFD, 0x1AFFE, LETTER, 0x1B11F, 0x1B122, LETTER,
        0x1B132, 0x1B132, LETTER, 0x1B155, 0x1B155, LETTER, 0x1D2C0, 0x1D2D3, NUMBER,
        0x1DF00, 0x1DF1E, LETTER, 0x1DF25, 0x1DF2A, LETTER, 0x1E030, 0x1E06D, LETTER,
        0x1E290, 0x1E2AD, LETTER, 0x1E4D0, 0x1E4EB, LETTER, 0x1E4F0, 0x1E4F9, NUMBER,
        0x1E7E0, 0x1E7E6, LETTER, 0x1E7E8, 0x1E7EB, LETTER, 0x1E7ED, 0x1E7EE, LETTER,
        0x1E7F0, 0x1E7FE, LETTER, 0x2A6DE, 0x2A6DF, LETTER, 0x2B735, 0x2B739, LETTER,
        0x2EBF0, 0x2EE5D, LETTER, 0x31350, 0x323AF, LETTER,
    };

    private static int newerClass(int cpt) {
        int low = 0, high = NEWER_CLASSES.length / 3 - 1;
        while (low <= high) {
            int middle = (low + high) >>> 1;
            if (cpt < NEWER_CLASSES[3 * middle]) {
                high = middle - 1;
            } else if (cpt > NEWER_CLASSES[3 * middle + 1]) {
                low = middle + 1;
            } else {
                return NEWER_CLASSES[3 * middle + 2];
            }
        }
        return 0;
    }

    private static boolean isOther(int classes) {
        return (classes & ANY) != 0 && (classes & (LETTER | NUMBER | SPACE)) == 0;
    }

    /**
     * unicode_regex_split_custom_gpt2, the hand-written form of GPT-2's regex
     * 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
     */
    List<int[]> splitGpt2(int[] cpts) {
        int n = cpts.length;
        int[] classes = new int[n + 1]; // classes[n] == 0: beyond the fragment, no class at all
        for (int i = 0; i < n; i++) {
            classes[i] = classOf(cpts[i]);
        }
        List<int[]> words = new ArrayList<>();
        for (int pos = 0; pos < n; ) { // each turn takes one word, cpts[start..pos)
            int start = pos;
            int c = cpts[pos];
            if (c == '\'' && pos + 1 < n) { // the contractions: 's 't 'm 'd, then 're 've 'll
                int next = cpts[pos + 1];
                if (next == 's' || next == 't' || next == 'm' || next == 'd') {
                    pos += 2;
                    words.add(Arrays.copyOfRange(cpts, start, pos));
                    continue;
                }
                if (pos + 2 < n) {
                    int after = cpts[pos + 2];
                    if ((next == 'r' || next == 'v') && after == 'e' || next == 'l' && after == 'l') {
                        pos += 3;
                        words.add(Arrays.copyOfRange(cpts, start, pos));
                        continue;
                    }
                }
            }
            // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: the class of what follows an optional space.
            int k = c == ' ' ? classes[pos + 1] : classes[pos];
            IntPredicate same = null;
            if ((k & LETTER) != 0) {
                same = x -> (x & LETTER) != 0;
            } else if ((k & NUMBER) != 0) {
                same = x -> (x & NUMBER) != 0;
            } else if (isOther(k)) {
                same = Gpt2Tokenizer::isOther;
            }
            if (same != null) {
                if (c == ' ') {
                    pos++;
                }
                while (same.test(classes[pos])) {
                    pos++;
                }
                words.add(Arrays.copyOfRange(cpts, start, pos));
                continue;
            }
            // `\s+(?!\S)`: a run of whitespace but its last, if something follows; else `\s+`.
            int spaces = 0;
            while ((classes[pos + spaces] & SPACE) != 0) {
                spaces++;
            }
            if (spaces > 1 && pos + spaces < n) {
                pos += spaces - 1;
            } else if (spaces > 0) {
                pos += spaces;
            } else {
                pos++; // no match: one code point (llama.cpp's fallback; every code point has a class)
            }
            words.add(Arrays.copyOfRange(cpts, start, pos));
        }
        return words;
    }

    // -----------------------------------------------------------------------------------------
    // The vocabulary (llama_vocab::impl::load).

    // llama_token_attr, and what each tokenizer.ggml.token_type (llama_token_type) stands for.
    private static final int UNKNOWN = 1, UNUSED = 2, NORMAL = 4, CONTROL = 8, USER_DEFINED = 16, BYTE = 32;
    private static final int[] TYPE_TO_ATTR = {0, NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE};

    // The texts llama_vocab::impl::load takes for end-of-generation tokens.
    private static final List<String> EOG_TEXTS = List.of(
        "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>", "<end_of_turn>",
        "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>",
        "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>", "<｜end▁of▁sentence｜>", "[e~[");

    // unicode_byte_to_utf8: printable bytes stand for themselves, the others for U+0100 upwards.
    // Every one is a single UTF-16 char, so a BPE symbol's chars are its bytes.
    private static final char[] BYTE_TO_CHAR = new char[256];
    private static final int[] CHAR_TO_BYTE = new int[0x144]; // -1: no byte

    static {
        Arrays.fill(CHAR_TO_BYTE, -1);
        int extra = 0;
        for (int b = 0; b < 256; b++) {
            boolean printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
            BYTE_TO_CHAR[b] = (char) (printable ? b : 256 + extra++);
            CHAR_TO_BYTE[BYTE_TO_CHAR[b]] = b;
        }
    }

    private final boolean nelNotSpace; // planted bug: U+0085 is not whitespace
    private final boolean noCleanSpaces; // planted bug: detokenize skips the clean_spaces passes

    final String[] tokens;
    private final Map<String, Integer> ids = new HashMap<>();
    private final int[] attrs;
    private final Map<String, Integer> ranks = new HashMap<>();
    final int bos, eos;
    final boolean addBos, addEos, addSep; // addSep: llama_vocab_get_add_sep, false for gpt-2's pre
    final int[] eog;
    private final List<Map.Entry<Integer, byte[]>> specials = new ArrayList<>(); // id, text
    private final Map<String, int[]> cache = new HashMap<>();

    Gpt2Tokenizer(Path path, Set<String> plantedBugs) throws IOException, Unsupported {
        nelNotSpace = plantedBugs.contains("nel-not-space");
        noCleanSpaces = plantedBugs.contains("no-clean-spaces");
        Map<String, Object> f = Gguf.readHeader(path);
        Object model = f.get("tokenizer.ggml.model"), pre = f.get("tokenizer.ggml.pre");
        if (!"gpt2".equals(model) || !"gpt-2".equals(pre)) {
            throw new Unsupported(String.format(
                "only gpt2 vocabularies with the gpt-2 pre-tokenizer (this one: %s, %s)", model, pre));
        }
        List<?> rawTokens = (List<?>) f.getOrDefault("tokenizer.ggml.tokens", List.of());
        tokens = new String[rawTokens.size()];
        for (int i = 0; i < tokens.length; i++) {
            tokens[i] = (String) rawTokens.get(i);
            ids.put(tokens[i], i); // a text seen twice is its last id, as in llama.cpp's token_to_id
        }
        List<?> types = (List<?>) f.getOrDefault("tokenizer.ggml.token_type", List.of());
        attrs = new int[tokens.length];
        for (int i = 0; i < tokens.length; i++) {
            attrs[i] = NORMAL;
            if (i < types.size() && types.get(i) instanceof Long) {
                long type = (Long) types.get(i);
                if (type >= 0 && type < TYPE_TO_ATTR.length) {
                    attrs[i] = TYPE_TO_ATTR[(int) type];
                }
            }
        }
        List<?> merges = (List<?>) f.getOrDefault("tokenizer.ggml.merges", List.of());
        for (int rank = 0; rank < merges.size(); rank++) {
            String line = (String) merges.get(rank);
            if (line.indexOf(' ', 1) > 0) { // "a b": the first space after the first character
                ranks.putIfAbsent(line, rank);
            }
        }
        bos = intField(f, "tokenizer.ggml.bos_token_id", 11); // llama.cpp's defaults for gpt2: 11
        eos = intField(f, "tokenizer.ggml.eos_token_id", 11);
        addBos = Boolean.TRUE.equals(f.get("tokenizer.ggml.add_bos_token"));
        addEos = Boolean.TRUE.equals(f.get("tokenizer.ggml.add_eos_token"));
        addSep = Boolean.TRUE.equals(f.get("tokenizer.ggml.add_sep_token"));
        TreeSet<Integer> eogIds = new TreeSet<>();
        if (eos >= 0 && eos < tokens.length) {
            eogIds.add(eos);
        }
        for (String text : EOG_TEXTS) {
            Integer id = ids.get(text);
            if (id != null) {
                eogIds.add(id);
                attrs[id] |= CONTROL; // "control-looking token ... will be overridden"
            }
        }
        eog = eogIds.stream().mapToInt(Integer::intValue).toArray();
        // cache_special_tokens: control, user-defined and unknown tokens, longest text (in bytes)
        // first; List.sort is stable, so ids in order among texts of one length.
        for (int i = 0; i < tokens.length; i++) {
            if ((attrs[i] & (CONTROL | USER_DEFINED | UNKNOWN)) != 0 && !tokens[i].isEmpty()) {
                specials.add(Map.entry(i, tokens[i].getBytes(StandardCharsets.UTF_8)));
            }
        }
        specials.sort(Comparator.comparingInt((Map.Entry<Integer, byte[]> s) -> s.getValue().length).reversed());
    }

    private static int intField(Map<String, Object> f, String key, int fallback) {
        Object value = f.get(key);
        return value instanceof Long ? (int) (long) (Long) value : fallback;
    }

    // -----------------------------------------------------------------------------------------
    // Encoding: tokenizer_st_partition, then the word split and BPE (llm_tokenizer_bpe_session).

    /** A piece of the input: raw bytes (id -1), or a special token cut out of it. */
    private record Fragment(int id, byte[] bytes) {}

    /**
     * tokenizer_st_partition: cut special-token texts out of the raw bytes, longest first. Control
     * and unknown tokens only with parse_special; user-defined ones always.
     */
    private List<Fragment> partition(byte[] data, boolean parseSpecial) {
        List<Fragment> fragments = new ArrayList<>();
        if (data.length > 0) {
            fragments.add(new Fragment(-1, data));
        }
        for (Map.Entry<Integer, byte[]> special : specials) {
            int id = special.getKey();
            byte[] text = special.getValue();
            if (!parseSpecial && (attrs[id] & (CONTROL | UNKNOWN)) != 0) {
                continue;
            }
            List<Fragment> next = new ArrayList<>();
            for (Fragment fragment : fragments) {
                if (fragment.id() >= 0) {
                    next.add(fragment);
                    continue;
                }
                byte[] raw = fragment.bytes();
                int from = 0;
                for (int at; (at = indexOf(raw, text, from)) >= 0; from = at + text.length) {
                    if (at > from) {
                        next.add(new Fragment(-1, Arrays.copyOfRange(raw, from, at)));
                    }
                    next.add(new Fragment(id, null));
                }
                if (from < raw.length) {
                    next.add(new Fragment(-1, Arrays.copyOfRange(raw, from, raw.length)));
                }
            }
            fragments = next;
        }
        return fragments;
    }

    private static int indexOf(byte[] haystack, byte[] needle, int from) {
        outer:
        for (int i = from; i + needle.length <= haystack.length; i++) {
            for (int j = 0; j < needle.length; j++) {
                if (haystack[i + j] != needle[j]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }

    /** llama_tokenize: BOS/EOS as the vocabulary says when add_special, specials, then words. */
    int[] encode(byte[] data, boolean addSpecial, boolean parseSpecial) throws InvalidCodepoint {
        List<Integer> out = new ArrayList<>();
        if (addSpecial && addBos) {
            out.add(bos);
        }
        for (Fragment fragment : partition(data, parseSpecial)) {
            if (fragment.id() >= 0) {
                out.add(fragment.id());
                continue;
            }
            for (int[] word : splitGpt2(codePoints(fragment.bytes()))) {
                for (int id : encodeWord(word)) {
                    out.add(id);
                }
            }
        }
        if (addSpecial && addEos) {
            out.add(eos);
        }
        return out.stream().mapToInt(Integer::intValue).toArray();
    }

    private int[] encodeWord(int[] cpts) throws InvalidCodepoint {
        ByteArrayOutputStream raw = new ByteArrayOutputStream();
        for (int c : cpts) {
            appendUtf8(raw, c);
        }
        StringBuilder key = new StringBuilder();
        for (byte b : raw.toByteArray()) {
            key.append(BYTE_TO_CHAR[b & 0xff]);
        }
        String word = key.toString();
        int[] cached = cache.get(word);
        if (cached != null) {
            return cached;
        }
        // Merge the pair with the lowest rank, the leftmost on ties, until none is left.
        // pairRanks[i] is the rank of symbols i and i+1; a merge changes only its neighbours' ranks,
        // so only those are looked up again (looking every pair up on every merge is quadratic in
        // lookups on a long word).
        String[] symbols = new String[word.length()];
        for (int i = 0; i < symbols.length; i++) {
            symbols[i] = String.valueOf(word.charAt(i));
        }
        int count = symbols.length; // symbols[0..count) are the word's symbols, pairRanks[0..count-1)
        int[] pairRanks = new int[Math.max(count - 1, 0)];
        for (int i = 0; i + 1 < count; i++) {
            pairRanks[i] = rankOf(symbols[i], symbols[i + 1]);
        }
        while (true) {
            int best = -1, bestRank = Integer.MAX_VALUE;
            for (int i = 0; i + 1 < count; i++) {
                if (pairRanks[i] < bestRank) {
                    best = i;
                    bestRank = pairRanks[i];
                }
            }
            if (best < 0) {
                break;
            }
            symbols[best] += symbols[best + 1];
            System.arraycopy(symbols, best + 2, symbols, best + 1, count - best - 2);
            System.arraycopy(pairRanks, best + 1, pairRanks, best, count - best - 2);
            count--;
            if (best > 0) {
                pairRanks[best - 1] = rankOf(symbols[best - 1], symbols[best]);
            }
            if (best + 1 < count) {
                pairRanks[best] = rankOf(symbols[best], symbols[best + 1]);
            }
        }
        List<Integer> out = new ArrayList<>();
        for (String symbol : Arrays.copyOf(symbols, count)) {
            Integer id = ids.get(symbol);
            if (id != null) {
                out.add(id);
                continue;
            }
            for (char c : symbol.toCharArray()) { // byte fallback
                Integer byteId = ids.get(String.valueOf(c));
                if (byteId != null) {
                    out.add(byteId);
                }
            }
        }
        int[] result = out.stream().mapToInt(Integer::intValue).toArray();
        cache.put(word, result);
        return result;
    }

    private int rankOf(String left, String right) {
        return ranks.getOrDefault(left + " " + right, Integer.MAX_VALUE);
    }

    // -----------------------------------------------------------------------------------------
    // Decoding.

    /** llama_token_to_piece (lstrip 0): control and unknown tokens only with `special`. */
    byte[] piece(int id, boolean special) {
        int attr = attrs[id];
        if (!special && (attr & (UNKNOWN | CONTROL)) != 0) {
            return new byte[0];
        }
        String text = tokens[id];
        if ((attr & (UNKNOWN | CONTROL | USER_DEFINED)) != 0) {
            return text.getBytes(StandardCharsets.UTF_8);
        }
        if ((attr & NORMAL) != 0) { // llama_decode_text: each char back to its byte
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            text.codePoints().forEach(c -> {
                if (c < CHAR_TO_BYTE.length && CHAR_TO_BYTE[c] >= 0) {
                    out.write(CHAR_TO_BYTE[c]);
                } else {
                    StringBuilder unknown = new StringBuilder("[UNK_BYTE_0x");
                    for (byte b : new String(Character.toChars(c)).getBytes(StandardCharsets.UTF_8)) {
                        unknown.append(String.format("%02x", b & 0xff));
                    }
                    out.writeBytes(unknown.append(text).append(']').toString().getBytes(StandardCharsets.UTF_8));
                }
            });
            return out.toByteArray();
        }
        if ((attr & BYTE) != 0 && text.length() >= 5) { // "<0xAB>"
            return new byte[] {(byte) Integer.parseInt(text.substring(3, 5), 16)};
        }
        return new byte[0];
    }

    /** llama_detokenize, with the GPT-2 pre-tokenizer's clean_spaces passes. */
    byte[] detokenize(int[] ids, boolean removeSpecial, boolean unparseSpecial) {
        int from = 0, to = ids.length;
        if (removeSpecial && addBos && to > from && ids[from] == bos) {
            from++;
        }
        if (removeSpecial && addEos && to > from && ids[to - 1] == eos) {
            to--;
        }
        ByteArrayOutputStream text = new ByteArrayOutputStream();
        for (int i = from; i < to; i++) {
            text.writeBytes(piece(ids[i], unparseSpecial));
        }
        return noCleanSpaces ? text.toByteArray() : cleanSpaces(text.toByteArray());
    }

    // What a clean-up pass does at byte i: keep it, drop the space before it, or drop the space
    // before it and blank the byte after it.
    private static final int KEEP = 0, DROP_SPACE_BEFORE = 1, DROP_AND_BLANK_NEXT = 2;

    private interface Rule {
        int at(byte[] text, int i, int size);
    }

    /** The three clean-up passes of llama_vocab::impl::detokenize, each rewriting the buffer in place. */
    static byte[] cleanSpaces(byte[] text) {
        int size = text.length;
        // " ?", " !", " .", " ,": the space goes.
        size = pass(text, size, (t, i, n) -> t[i - 1] == ' ' && "?!.,".indexOf(t[i]) >= 0 ? DROP_SPACE_BEFORE : KEEP);
        // " ' ": both spaces go.
        size = pass(text, size, (t, i, n) ->
            t[i] == '\'' && i + 1 < n && t[i - 1] == ' ' && t[i + 1] == ' ' ? DROP_AND_BLANK_NEXT : KEEP);
        // " 's", " 'm", " 're", " 've": the space goes.
        size = pass(text, size, (t, i, n) -> {
            if (!(t[i - 1] == ' ' && t[i] == '\'' && i + 1 < n)) {
                return KEEP;
            }
            byte a = t[i + 1];
            boolean twoLetters = i + 2 < n && (a == 'r' || a == 'v') && t[i + 2] == 'e';
            return a == 's' || a == 'm' || twoLetters ? DROP_SPACE_BEFORE : KEEP;
        });
        return Arrays.copyOf(text, size);
    }

    private static int pass(byte[] text, int size, Rule rule) {
        int total = size > 0 ? 1 : 0;
        for (int i = 1; i < size; i++) {
            int action = rule.at(text, i, size);
            if (action != KEEP) {
                total--;
            }
            text[total++] = text[i];
            if (action == DROP_AND_BLANK_NEXT) {
                i++;
                text[i] = 0; // "remove next space": llama.cpp writes a NUL ahead of itself
            }
        }
        return total;
    }
}
