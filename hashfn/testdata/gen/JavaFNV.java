// JavaFNV prints the java_fnv1_32 golden vectors of package hashfn: the
// "FNV1_32_HASH" getHash(String) of the seed articles' Java rings (see
// compat.SeedArticle000), applied to new String(key, UTF_8), which is how
// hashfn.JavaFNV1_32 reads its bytes. It reads "keycolumn TAB hex" lines (golden -k)
// on standard input and prints "java_fnv1_32 TAB keycolumn TAB 0x%08x" lines.
// Run by gen.sh as: java JavaFNV.java
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;

public class JavaFNV {
    static int getHash(String str) {
        final int p = 16777619;
        int hash = (int) 2166136261L;
        for (int i = 0; i < str.length(); i++)
            hash = (hash ^ str.charAt(i)) * p;
        hash += hash << 13;
        hash ^= hash >> 7;
        hash += hash << 3;
        hash ^= hash >> 17;
        hash += hash << 5;
        if (hash < 0)
            hash = Math.abs(hash);
        return hash;
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        for (String line; (line = in.readLine()) != null; ) {
            int tab = line.lastIndexOf('\t');
            String hex = line.substring(tab + 1);
            byte[] key = new byte[hex.length() / 2];
            for (int i = 0; i < key.length; i++)
                key[i] = (byte) Integer.parseInt(hex.substring(2 * i, 2 * i + 2), 16);
            int h = getHash(new String(key, StandardCharsets.UTF_8));
            System.out.printf("java_fnv1_32\t%s\t0x%08x%n", line.substring(0, tab), h);
        }
    }
}
