// Article002 is the ring of seed article 002_928219273e2ab314.txt (一致性 hash): its
// ConsistentHash(numberOfReplicas, nodes), virtual nodes node + "#" + i, and
// getNode. The article's copy lost its generics and part of getHash; getHash is
// the FNV1_32_HASH of the other articles, which it names, declared "long" as there
// (an int widened to long sorts as the int does), and circle is a
// SortedMap<Long, String>.
//
// Usage: java Article002 SERVERS NUMBER_OF_REPLICAS < KEYS (see SeedIO.java)
import java.io.IOException;
import java.io.PrintStream;
import java.util.Collection;
import java.util.SortedMap;
import java.util.TreeMap;

public class Article002 {
    public static class ConsistentHash {
        private final int numberOfReplicas; // 虛擬節點數目
        // 哈希環，key為虛擬節點的哈希值，value為實際節點
        private final SortedMap<Long, String> circle = new TreeMap<>();

        public ConsistentHash(int numberOfReplicas, Collection<String> nodes) {
            this.numberOfReplicas = numberOfReplicas;
            for (String node : nodes) {
                addNode(node);
            }
        }

        // 添加節點
        public void addNode(String node) {
            for (int i = 0; i < numberOfReplicas; i++) {
                String virtualNode = node + "#" + i;
                long hash = getHash(virtualNode);
                circle.put(hash, node);
            }
        }

        // 獲取數據應該存儲的節點
        public String getNode(String key) {
            if (circle.isEmpty()) {
                return null;
            }
            // 計算 key 的哈希值
            long hash = getHash(key);
            // 如果沒有大於等於該 hash 值的節點，則返回第一個節點
            if (!circle.containsKey(hash)) {
                SortedMap<Long, String> tailMap = circle.tailMap(hash);
                hash = tailMap.isEmpty() ? circle.firstKey() : tailMap.firstKey();
            }
            return circle.get(hash);
        }

        // FNV1_32_HASH 算法
        static long getHash(String str) {
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
    }

    public static void main(String[] args) throws IOException {
        ConsistentHash ring = new ConsistentHash(Integer.parseInt(args[1]), SeedIO.servers(args[0]));
        PrintStream out = SeedIO.out();
        for (String key : SeedIO.keys())
            out.println(ConsistentHash.getHash(key) + "\t" + ring.getNode(key));
        out.flush();
    }
}
