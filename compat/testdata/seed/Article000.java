// Article000 is the ring of seed article 000_e9707e8ab86841d9.txt (对一致性Hash算法，
// Java代码实现的深入研究): with VIRTUAL_NODES above 0 its
// ConsistentHashingWithVirtualNode, with 0 its ConsistentHashingWithoutVirtualNode,
// with the article's getHash and getServer. Both programs' getServer throw
// NoSuchElementException for a key whose hash is past the last point; this
// program then prints the first point's server and a third column, "throws".
//
// Usage: java Article000 SERVERS VIRTUAL_NODES < KEYS (see SeedIO.java)
import java.io.IOException;
import java.io.PrintStream;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.SortedMap;
import java.util.TreeMap;

public class Article000 {
    private static final SortedMap<Integer, String> virtualNodes = new TreeMap<Integer, String>();
    private static int VIRTUAL_NODES;

    // The article's getHash: "使用FNV1_32_HASH算法計算服務器的Hash值".
    private static int getHash(String str) {
        final int p = 16777619;
        int hash = (int) 2166136261L;
        for (int i = 0; i < str.length(); i++)
            hash = (hash ^ str.charAt(i)) * p;
        hash += hash << 13;
        hash ^= hash >> 7;
        hash += hash << 3;
        hash ^= hash >> 17;
        hash += hash << 5;

        // 如果算出來的值為負數則取其絕對值
        if (hash < 0)
            hash = Math.abs(hash);
        return hash;
    }

    private static String getServer(String node) {
        int hash = getHash(node);
        SortedMap<Integer, String> subMap = virtualNodes.tailMap(hash);
        Integer i = subMap.firstKey();
        String virtualNode = subMap.get(i);
        if (VIRTUAL_NODES == 0)
            return virtualNode; // version 1 maps hashes to servers
        return virtualNode.substring(0, virtualNode.indexOf("&&"));
    }

    public static void main(String[] args) throws IOException {
        List<String> realNodes = SeedIO.servers(args[0]);
        VIRTUAL_NODES = Integer.parseInt(args[1]);
        for (String str : realNodes) {
            if (VIRTUAL_NODES == 0) {
                virtualNodes.put(getHash(str), str);
                continue;
            }
            for (int i = 0; i < VIRTUAL_NODES; i++) {
                String virtualNodeName = str + "&&VN" + String.valueOf(i);
                int hash = getHash(virtualNodeName);
                virtualNodes.put(hash, virtualNodeName);
            }
        }
        PrintStream out = SeedIO.out();
        for (String key : SeedIO.keys()) {
            try {
                out.println(getHash(key) + "\t" + getServer(key));
            } catch (NoSuchElementException e) {
                String first = virtualNodes.get(virtualNodes.firstKey());
                if (VIRTUAL_NODES > 0)
                    first = first.substring(0, first.indexOf("&&"));
                out.println(getHash(key) + "\t" + first + "\tthrows");
            }
        }
        out.flush();
    }
}
