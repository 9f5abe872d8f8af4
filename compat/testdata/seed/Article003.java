// Article003 is the ring of seed article 003_4e018a8b45ca771b.txt (一致性哈希算法):
// its ConsistentHashingWithoutVirtualNode, one point per server at getHash(server),
// with the article's getHash and getServer (which wraps past the last point). The
// article's copy lost its "+" signs ("hash = hash << 13", "i )"); they are put back
// as in the 000 article's getHash, which it copies.
//
// Usage: java Article003 SERVERS < KEYS (see SeedIO.java)
import java.io.IOException;
import java.io.PrintStream;
import java.util.List;
import java.util.SortedMap;
import java.util.TreeMap;

public class Article003 {
    // key表示服務器的hash值，value表示服務器
    private static final SortedMap<Integer, String> sortedMap = new TreeMap<Integer, String>();

    // 得到應當路由到的結點
    private static String getServer(String key) {
        // 得到該key的hash值
        int hash = getHash(key);
        // 得到大於該Hash值的所有Map
        SortedMap<Integer, String> subMap = sortedMap.tailMap(hash);
        if (subMap.isEmpty()) {
            // 如果沒有比該key的hash值大的，則從第一個node開始
            Integer i = sortedMap.firstKey();
            // 返回對應的服務器
            return sortedMap.get(i);
        } else {
            // 第一個Key就是順時針過去離node最近的那個結點
            Integer i = subMap.firstKey();
            // 返回對應的服務器
            return subMap.get(i);
        }
    }

    // 使用FNV1_32_HASH算法計算服務器的Hash值
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

    public static void main(String[] args) throws IOException {
        List<String> servers = SeedIO.servers(args[0]);
        for (int i = 0; i < servers.size(); i++) {
            int hash = getHash(servers.get(i));
            sortedMap.put(hash, servers.get(i));
        }
        PrintStream out = SeedIO.out();
        for (String key : SeedIO.keys())
            out.println(getHash(key) + "\t" + getServer(key));
        out.flush();
    }
}
