import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Just enough JSON for the line protocol, by hand (the JDK has no JSON library). Requests are one
 * object per line, flat but for `load`'s `special_ids`; numbers come back as Long (or Double with a
 * fraction or exponent), objects as Map, arrays as List. Answers are written with every character
 * outside printable ASCII escaped, so an answer line is ASCII whatever an error message holds.
 */
final class Json {
    private final String text;
    private int pos;

    private Json(String text) {
        this.text = text;
    }

    /** The JSON object `line` holds; IllegalArgumentException if it is not one. */
    @SuppressWarnings("unchecked")
    static Map<String, Object> parseObject(String line) {
        Json parser = new Json(line);
        Object value = parser.value();
        parser.skipBlanks();
        if (!(value instanceof Map) || parser.pos != line.length()) {
            throw new IllegalArgumentException("not one JSON object");
        }
        return (Map<String, Object>) value;
    }

    private Object value() {
        skipBlanks();
        char c = peek();
        if (c == '{') {
            Map<String, Object> object = new LinkedHashMap<>();
            if (!opensEmpty('}')) {
                do {
                    skipBlanks();
                    String key = string();
                    skipBlanks();
                    expect(':');
                    object.put(key, value());
                    skipBlanks();
                } while (accept(','));
                expect('}');
            }
            return object;
        }
        if (c == '[') {
            List<Object> array = new ArrayList<>();
            if (!opensEmpty(']')) {
                do {
                    array.add(value());
                    skipBlanks();
                } while (accept(','));
                expect(']');
            }
            return array;
        }
        if (c == '"') {
            return string();
        }
        if (text.startsWith("true", pos)) {
            pos += 4;
            return Boolean.TRUE;
        }
        if (text.startsWith("false", pos)) {
            pos += 5;
            return Boolean.FALSE;
        }
        if (text.startsWith("null", pos)) {
            pos += 4;
            return null;
        }
        return number();
    }

    private Object number() {
        int start = pos;
        while (pos < text.length() && "+-0123456789.eE".indexOf(text.charAt(pos)) >= 0) {
            pos++;
        }
        String digits = text.substring(start, pos);
        if (digits.isEmpty()) {
            throw new IllegalArgumentException("unexpected character at " + start);
        }
        boolean integral = digits.chars().noneMatch(ch -> ch == '.' || ch == 'e' || ch == 'E');
        return integral ? (Object) Long.parseLong(digits) : (Object) Double.parseDouble(digits);
    }

    private String string() {
        expect('"');
        StringBuilder out = new StringBuilder();
        for (char c; (c = next()) != '"'; ) {
            if (c != '\\') {
                out.append(c);
                continue;
            }
            char escaped = next();
            switch (escaped) {
                case 'b': out.append('\b'); break;
                case 'f': out.append('\f'); break;
                case 'n': out.append('\n'); break;
                case 'r': out.append('\r'); break;
                case 't': out.append('\t'); break;
                case 'u':
                    if (pos + 4 > text.length()) {
                        throw new IllegalArgumentException("truncated \\u escape");
                    }
                    out.append((char) Integer.parseInt(text.substring(pos, pos + 4), 16));
                    pos += 4;
                    break;
                default: out.append(escaped); // \" \\ \/
            }
        }
        return out.toString();
    }

    private void skipBlanks() {
        while (pos < text.length() && " \t\r\n".indexOf(text.charAt(pos)) >= 0) {
            pos++;
        }
    }

    private char peek() {
        if (pos >= text.length()) {
            throw new IllegalArgumentException("unexpected end of line");
        }
        return text.charAt(pos);
    }

    private char next() {
        char c = peek();
        pos++;
        return c;
    }

    /** Past a container's opening bracket: whether it closes at once (`{}`, `[]`), the close taken. */
    private boolean opensEmpty(char close) {
        pos++;
        skipBlanks();
        return accept(close);
    }

    private boolean accept(char c) {
        if (pos < text.length() && text.charAt(pos) == c) {
            pos++;
            return true;
        }
        return false;
    }

    private void expect(char c) {
        if (!accept(c)) {
            throw new IllegalArgumentException("expected '" + c + "' at " + pos);
        }
    }

    // -----------------------------------------------------------------------------------------

    /** `value` as JSON: Map, Iterable, int[], String, Number, Boolean or null. */
    static String write(Object value) {
        StringBuilder out = new StringBuilder();
        write(out, value);
        return out.toString();
    }

    private static void write(StringBuilder out, Object value) {
        if (value == null) {
            out.append("null");
        } else if (value instanceof String) {
            writeString(out, (String) value);
        } else if (value instanceof Number || value instanceof Boolean) {
            out.append(value);
        } else if (value instanceof int[]) {
            out.append('[');
            int[] items = (int[]) value;
            for (int i = 0; i < items.length; i++) {
                out.append(i > 0 ? "," : "").append(items[i]);
            }
            out.append(']');
        } else if (value instanceof Iterable) {
            out.append('[');
            String comma = "";
            for (Object item : (Iterable<?>) value) {
                out.append(comma);
                write(out, item);
                comma = ",";
            }
            out.append(']');
        } else if (value instanceof Map) {
            out.append('{');
            String comma = "";
            for (Map.Entry<?, ?> entry : ((Map<?, ?>) value).entrySet()) {
                out.append(comma);
                writeString(out, String.valueOf(entry.getKey()));
                out.append(':');
                write(out, entry.getValue());
                comma = ",";
            }
            out.append('}');
        } else {
            throw new IllegalArgumentException("cannot write " + value.getClass() + " as JSON");
        }
    }

    private static void writeString(StringBuilder out, String s) {
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c >= 0x20 && c < 0x7f) {
                out.append(c);
            } else {
                out.append(String.format("\\u%04x", (int) c)); // a surrogate pair becomes two escapes
            }
        }
        out.append('"');
    }
}
