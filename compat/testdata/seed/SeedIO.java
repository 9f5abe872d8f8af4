// SeedIO is the input and output of the article programs in this directory
// (Article000.java ... Article004.java), each the Java ring of one of chash's seed
// articles. A program reads its servers, one name per line, from the UTF-8 file
// named by its first argument, and its keys from standard input: one key per line
// ("\n" ends a line, and nothing else is stripped), each decoded as
// new String(bytes, UTF_8) decodes it, which is how hashfn.JavaFNV1_32 and
// hashfn.JavaHashCode read a key's bytes. For each key it prints one line,
// "HASH<TAB>SERVER", HASH being the key's hash as the article computes it.
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;

final class SeedIO {
    private SeedIO() {}

    static List<String> servers(String path) throws IOException {
        List<String> out = new ArrayList<>();
        for (String s : Files.readAllLines(Paths.get(path), StandardCharsets.UTF_8))
            if (!s.isEmpty())
                out.add(s);
        return out;
    }

    static List<String> keys() throws IOException {
        byte[] in = System.in.readAllBytes();
        List<String> keys = new ArrayList<>();
        int start = 0;
        for (int i = 0; i < in.length; i++) {
            if (in[i] == '\n') {
                keys.add(new String(in, start, i - start, StandardCharsets.UTF_8));
                start = i + 1;
            }
        }
        if (start < in.length)
            keys.add(new String(in, start, in.length - start, StandardCharsets.UTF_8));
        return keys;
    }

    static PrintStream out() {
        return new PrintStream(new BufferedOutputStream(System.out, 1 << 16), false, StandardCharsets.UTF_8);
    }
}
