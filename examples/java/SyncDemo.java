/*
 * SyncDemo - every way a JVM on Linux makes data durable, one per mode.
 *
 * syncshim has to catch the JDK's sync paths, which do not all end in
 * fsync: force(false) is fdatasync, "rwd"/DSYNC are open flags, a mapped
 * buffer's force() is msync, gathering and positional writes use writev
 * and pwrite64, and AsynchronousFileChannel writes from a pool thread.
 * Each mode exercises exactly one of them (OpenJDK 17 on Linux):
 *
 *   force-true    FileChannel.write + force(true)           -> write, fsync
 *   force-false   FileChannel.write + force(false)          -> write, fdatasync
 *   positional    FileChannel.write(buf, pos) + force(false) -> pwrite64, fdatasync
 *   gather        FileChannel.write(ByteBuffer[2]) + force(true) -> writev, fsync
 *   rws / rwd     RandomAccessFile "rws"/"rwd", plain writes -> open O_SYNC/O_DSYNC, write
 *   sync-open     FileChannel.open(..., SYNC), writes        -> open O_SYNC, write
 *   dsync-open    FileChannel.open(..., DSYNC), writes       -> open O_DSYNC, write
 *   mapped        MappedByteBuffer put + force()             -> msync(MS_SYNC)
 *   async         AsynchronousFileChannel write + force(true) -> pwrite64 (pool thread), fsync
 *
 * Usage: java -cp build/java SyncDemo MODE FILE COUNT [SIZE]
 * Data: 16-byte records, each its own file offset as 15 hex digits and
 * '\n' (the same as the C examples), so contents can be checked.
 * Exit: 0 ok, 1 an I/O error or wrong final size, 2 bad usage.
 */
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.AsynchronousFileChannel;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.Locale;
import java.util.concurrent.ExecutionException;

public final class SyncDemo {
    private static final String MODES =
            "force-true force-false positional gather rws rwd dsync-open sync-open mapped async";

    /** Thrown for a bad command line: exit 2. */
    private static final class UsageError extends Exception {
        private static final long serialVersionUID = 1L;

        UsageError(String msg) {
            super(msg);
        }
    }

    private final String mode;
    private final Path file;
    private final int count;
    private final int size;
    private final byte[] data;

    private SyncDemo(String mode, Path file, int count, int size) {
        this.mode = mode;
        this.file = file;
        this.count = count;
        this.size = size;
        this.data = new byte[size];
    }

    public static void main(String[] args) {
        SyncDemo demo;
        try {
            demo = parse(args);
        } catch (UsageError e) {
            System.err.println("SyncDemo: " + e.getMessage());
            System.err.println("usage: java SyncDemo MODE FILE COUNT [SIZE]");
            System.err.println("  MODE: " + MODES);
            System.exit(2);
            return;
        }
        try {
            long t0 = System.nanoTime();
            demo.run();
            double secs = (System.nanoTime() - t0) / 1e9;
            demo.verifySize();
            System.out.println("done " + demo.mode + " " + demo.count);
            System.out.println(String.format(Locale.ROOT,
                    "result: writes=%d seconds=%.3f writes_per_sec=%.1f size=%d bytes=%d mode=%s",
                    demo.count, secs, secs > 0 ? demo.count / secs : 0.0, demo.size,
                    demo.total(), demo.mode));
        } catch (Exception e) {
            Throwable t = e instanceof ExecutionException && e.getCause() != null
                    ? e.getCause() : e;
            System.err.println("SyncDemo: " + demo.mode + ": " + t);
            System.exit(1);
        }
    }

    private static SyncDemo parse(String[] args) throws UsageError {
        if (args.length < 3 || args.length > 4)
            throw new UsageError("expected MODE FILE COUNT [SIZE]");
        String mode = args[0];
        if (!(" " + MODES + " ").contains(" " + mode + " "))
            throw new UsageError("unknown mode '" + mode + "'");
        int count = parseInt(args[2], "COUNT", 0);
        int size = args.length == 4 ? parseInt(args[3], "SIZE", 1) : 4096;
        if (mode.equals("mapped") && (long) count * size > Integer.MAX_VALUE)
            throw new UsageError("mapped: COUNT*SIZE must fit in one mapping (< 2 GiB)");
        return new SyncDemo(mode, Paths.get(args[1]), count, size);
    }

    private static int parseInt(String s, String what, int min) throws UsageError {
        try {
            int v = Integer.parseInt(s);
            if (v < min)
                throw new UsageError(what + " must be >= " + min + ": " + s);
            return v;
        } catch (NumberFormatException e) {
            throw new UsageError("bad " + what + ": '" + s + "'");
        }
    }

    private long total() {
        return (long) count * size;
    }

    private static final byte[] HEX = "0123456789abcdef".getBytes();

    /** The content at file offset off, as the C examples write it. */
    private byte[] content(long off) {
        for (int i = 0; i < size; i++)
            data[i] = patternByte(off + i);
        return data;
    }

    /** Byte o of the record at o & ~15: that offset in 15 hex digits, '\n'. */
    private static byte patternByte(long o) {
        int pos = (int) (o & 15);
        if (pos == 15)
            return '\n';
        return HEX[(int) (((o & ~15L) >>> (4 * (14 - pos))) & 15)];
    }

    private void run() throws Exception {
        switch (mode) {
            case "force-true": channelLoop(true, false, false); break;
            case "force-false": channelLoop(false, false, false); break;
            case "positional": channelLoop(false, true, false); break;
            case "gather": channelLoop(true, false, true); break;
            case "rws": randomAccessLoop("rws"); break;
            case "rwd": randomAccessLoop("rwd"); break;
            case "sync-open": syncOpenLoop(StandardOpenOption.SYNC); break;
            case "dsync-open": syncOpenLoop(StandardOpenOption.DSYNC); break;
            case "mapped": mappedLoop(); break;
            case "async": asyncLoop(); break;
            default: throw new IllegalStateException(mode);
        }
    }

    private static OpenOption[] createOpts(OpenOption... extra) {
        OpenOption[] base = {StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING};
        OpenOption[] all = new OpenOption[base.length + extra.length];
        System.arraycopy(base, 0, all, 0, base.length);
        System.arraycopy(extra, 0, all, base.length, extra.length);
        return all;
    }

    /**
     * FileChannel write then force. A direct buffer so the JDK hands it
     * to the write call as is; positional uses write(buf, pos) (pwrite64),
     * gather splits each record over two buffers (writev).
     */
    private void channelLoop(boolean metadata, boolean positional, boolean gather)
            throws IOException {
        ByteBuffer buf = ByteBuffer.allocateDirect(size);
        try (FileChannel ch = FileChannel.open(file, createOpts())) {
            for (int i = 0; i < count; i++) {
                long off = (long) i * size;
                buf.clear();
                buf.put(content(off)).flip();
                if (gather)
                    writeGather(ch, buf);
                else if (positional)
                    writePositional(ch, buf, off);
                else
                    writeAll(ch, buf);
                ch.force(metadata);
            }
        }
    }

    private static void writeAll(FileChannel ch, ByteBuffer buf) throws IOException {
        while (buf.hasRemaining())
            ch.write(buf);
    }

    private static void writePositional(FileChannel ch, ByteBuffer buf, long off)
            throws IOException {
        while (buf.hasRemaining())
            off += ch.write(buf, off);
    }

    /** Two slices of one record in one gathering write. */
    private static void writeGather(FileChannel ch, ByteBuffer buf) throws IOException {
        int half = buf.remaining() / 2;
        ByteBuffer a = buf.duplicate();
        a.limit(a.position() + half);
        ByteBuffer b = buf.duplicate();
        b.position(b.position() + half);
        ByteBuffer[] parts = {a, b};
        while (b.hasRemaining())
            ch.write(parts);
    }

    /** "rws"/"rwd" make the open O_SYNC/O_DSYNC; writes need no sync. */
    private void randomAccessLoop(String rafMode) throws IOException {
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), rafMode)) {
            raf.setLength(0); // "rw*" does not truncate; start empty like the others
            for (int i = 0; i < count; i++)
                raf.write(content((long) i * size));
        }
    }

    /** StandardOpenOption.SYNC/DSYNC: the same flags through NIO. */
    private void syncOpenLoop(StandardOpenOption flag) throws IOException {
        ByteBuffer buf = ByteBuffer.allocateDirect(size);
        try (FileChannel ch = FileChannel.open(file, createOpts(flag))) {
            for (int i = 0; i < count; i++) {
                buf.clear();
                buf.put(content((long) i * size)).flip();
                writeAll(ch, buf);
            }
        }
    }

    /** Map the whole file once; each record is a put then force (msync). */
    private void mappedLoop() throws IOException {
        try (FileChannel ch = FileChannel.open(file, createOpts(StandardOpenOption.READ))) {
            MappedByteBuffer map = ch.map(FileChannel.MapMode.READ_WRITE, 0, total());
            for (int i = 0; i < count; i++) {
                map.put(content((long) i * size));
                map.force();
            }
        }
    }

    /** Positional writes completed by the channel's pool thread. */
    private void asyncLoop() throws IOException, InterruptedException, ExecutionException {
        ByteBuffer buf = ByteBuffer.allocateDirect(size);
        try (AsynchronousFileChannel ch = AsynchronousFileChannel.open(file, createOpts())) {
            for (int i = 0; i < count; i++) {
                long off = (long) i * size;
                buf.clear();
                buf.put(content(off)).flip();
                while (buf.hasRemaining())
                    off += ch.write(buf, off).get();
                ch.force(true);
            }
        }
    }

    /** The file must be exactly COUNT*SIZE bytes (for mapped, the mapping). */
    private void verifySize() throws IOException {
        long have = Files.size(file);
        if (have != total())
            throw new IOException(file + " is " + have + " bytes, expected " + total());
    }
}
