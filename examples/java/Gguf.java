import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * GGUF: only the key-value header is read (gguf.cpp's gguf_init_from_file, value types 0-12), from a
 * little-endian memory mapping of the file. Integers come back as Long, floats as Double, bools as
 * Boolean, strings as String (decoded from UTF-8) and arrays as List.
 */
final class Gguf {
    private final ByteBuffer buf;

    private Gguf(ByteBuffer buf) {
        this.buf = buf;
    }

    static Map<String, Object> readHeader(Path path) throws IOException {
        ByteBuffer buf;
        try (FileChannel file = FileChannel.open(path, StandardOpenOption.READ)) {
            // The header is at the front: a model file's tensors may lie beyond what one mapping holds.
            long size = Math.min(file.size(), Integer.MAX_VALUE);
            buf = file.map(FileChannel.MapMode.READ_ONLY, 0, size).order(ByteOrder.LITTLE_ENDIAN);
        }
        byte[] magic = new byte[Math.min(4, buf.remaining())];
        buf.get(magic);
        if (!"GGUF".equals(new String(magic, StandardCharsets.ISO_8859_1))) {
            throw new IOException(path + " is not a GGUF file");
        }
        Gguf r = new Gguf(buf);
        r.u32(); // version
        r.u64(); // tensor count
        long count = r.u64();
        Map<String, Object> fields = new HashMap<>();
        for (long i = 0; i < count; i++) {
            String key = r.str();
            int kind = r.u32();
            if (kind == 9) {
                int itemKind = r.u32();
                long n = r.u64();
                r.need(n); // every item takes a byte at least: a corrupt count fails here, not in `new`
                List<Object> items = new ArrayList<>((int) n);
                for (long j = 0; j < n; j++) {
                    items.add(r.scalar(itemKind));
                }
                fields.put(key, items);
            } else {
                fields.put(key, r.scalar(kind));
            }
        }
        return fields;
    }

    /** The buffer, once it holds `n` more bytes: a truncated file fails here, not in a read. */
    private ByteBuffer need(long n) throws IOException {
        if (n < 0 || n > buf.remaining()) {
            throw new IOException("truncated GGUF at byte " + buf.position());
        }
        return buf;
    }

    private int u32() throws IOException {
        return need(4).getInt();
    }

    private long u64() throws IOException {
        return need(8).getLong();
    }

    private String str() throws IOException {
        long n = u64();
        need(n);
        byte[] bytes = new byte[(int) n];
        buf.get(bytes);
        return new String(bytes, StandardCharsets.UTF_8);
    }

    private Object scalar(int kind) throws IOException {
        switch (kind) {
            case 0: // uint8
                return (long) Byte.toUnsignedInt(need(1).get());
            case 1: // int8
                return (long) need(1).get();
            case 2: // uint16
                return (long) Short.toUnsignedInt(need(2).getShort());
            case 3: // int16
                return (long) need(2).getShort();
            case 4: // uint32
                return Integer.toUnsignedLong(u32());
            case 5: // int32
                return (long) u32();
            case 6: // float32
                return (double) need(4).getFloat();
            case 7: // bool
                return need(1).get() != 0;
            case 8: // string
                return str();
            case 10: // uint64 (as a Java long: only ids and counts are read, all far below 2^63)
            case 11: // int64
                return u64();
            case 12: // float64
                return need(8).getDouble();
            default:
                throw new IOException("unknown GGUF value type " + kind);
        }
    }
}
