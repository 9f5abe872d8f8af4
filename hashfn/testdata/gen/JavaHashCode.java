// JavaHashCode prints the java_hashcode and java_hashcode_spread golden vectors of
// package hashfn: Java's own String.hashCode() and seed article 001's
// Utils.rehash(Object) (see compat.SeedArticle001), applied to new String(key,
// UTF_8), which is how hashfn.JavaHashCode reads its bytes. It reads "keycolumn TAB hex"
// lines (golden -k) on standard input and prints "NAME TAB keycolumn TAB 0x%08x"
// lines, all java_hashcode lines first.
// Run by gen.sh as: java JavaHashCode.java
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

public class JavaHashCode {
    // Seed article 001, Utils: "int类型的最大数据" and rehash, as printed there.
    static final int HASH_BITS = 0x7fffffff;

    static int rehash(Object o) {
        int h = o.hashCode();
        return (h ^ (h >>> 16)) & HASH_BITS;
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        List<String> cols = new ArrayList<>();
        List<String> keys = new ArrayList<>();
        for (String line; (line = in.readLine()) != null; ) {
            int tab = line.lastIndexOf('\t');
            String hex = line.substring(tab + 1);
            byte[] key = new byte[hex.length() / 2];
            for (int i = 0; i < key.length; i++)
                key[i] = (byte) Integer.parseInt(hex.substring(2 * i, 2 * i + 2), 16);
            cols.add(line.substring(0, tab));
            keys.add(new String(key, StandardCharsets.UTF_8));
        }
        for (int i = 0; i < keys.size(); i++)
            System.out.printf("java_hashcode\t%s\t0x%08x%n", cols.get(i), keys.get(i).hashCode());
        for (int i = 0; i < keys.size(); i++)
            System.out.printf("java_hashcode_spread\t%s\t0x%08x%n", cols.get(i), rehash(keys.get(i)));
    }
}
