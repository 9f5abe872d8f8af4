// SeedRing is the seed articles' ring (TreeMap<Integer, String>, the FNV1_32_HASH
// getHash, virtual nodes "NAME&&VN" + i), used to produce golden files for chash's
// compat.Seed. It reads server names from the file named by args[0], keys (one per
// line, UTF-8) from standard input, and prints "key<TAB>server" per key. With
// args[1] = number of virtual nodes (0: the server name alone). A key past the last
// point wraps to the first, as the 003 article's version does.
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.util.*;

public class SeedRing {
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

    public static void main(String[] args) throws IOException {
        List<String> servers = Files.readAllLines(Paths.get(args[0]), StandardCharsets.UTF_8);
        int vnodes = Integer.parseInt(args[1]);
        TreeMap<Integer, String> ring = new TreeMap<>();
        for (String s : servers) {
            if (s.isEmpty()) continue;
            if (vnodes == 0) {
                ring.put(getHash(s), s);
            } else {
                for (int i = 0; i < vnodes; i++)
                    ring.put(getHash(s + "&&VN" + i), s);
            }
        }
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(new BufferedOutputStream(System.out), false, "UTF-8");
        String key;
        while ((key = in.readLine()) != null) {
            int h = getHash(key);
            SortedMap<Integer, String> tail = ring.tailMap(h);
            String server = tail.isEmpty() ? ring.get(ring.firstKey()) : tail.get(tail.firstKey());
            out.println(key + "\t" + h + "\t" + server);
        }
        out.flush();
    }
}
