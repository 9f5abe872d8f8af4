// Article001 is the ring of seed article 001_37c3335863982e2d.txt (Java實現一致性Hash
// 算法詳情): its ConsistentHash<T>, Hash<T> and Utils, as printed there, built with
// ConsistentHash(REPLICAS, Utils::rehash) (REPLICAS is 3 in the no-argument
// constructor) and given the servers by add, one at a time in list order as the
// article's main adds 192.168.2.109 after the first three.
//
// Usage: java Article001 SERVERS REPLICAS < KEYS (see SeedIO.java)
import java.io.IOException;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

public class Article001 {
    public static class ConsistentHash<T> {
        // 自定義hash方法
        private Hash<Object> hashMethod;
        // 創建hash映射，虛擬節點映射真實節點
        private final Map<Integer, T> hashMap = new ConcurrentHashMap<>();
        // 將所有的hash保存起來
        private List<Integer> keys = new ArrayList<>();
        // 默認虛擬節點數量
        private final int replicas;

        public ConsistentHash() {
            this(3, Utils::rehash);
        }

        public ConsistentHash(int replicas, Hash<Object> hashMethod) {
            this.replicas = replicas;
            this.hashMethod = hashMethod;
        }

        @SafeVarargs
        public final void add(T... keys) {
            for (T key : keys) {
                for (int i = 0; i < this.replicas; i++) {
                    int hash = this.hashMethod.hash(i + ":" + key.toString());
                    this.keys.add(hash);
                    this.hashMap.put(hash, key);
                }
            }
            Collections.sort(this.keys);
        }

        public T get(Object key) {
            Objects.requireNonNull(key, "key不能為空");
            int hash = this.hashMethod.hash(key);
            int idx = Utils.search(this.keys.size(), h -> this.keys.get(h) >= hash);
            return this.hashMap.get(this.keys.get(idx % this.keys.size()));
        }
    }

    @FunctionalInterface
    public static interface Hash<T> {
        int hash(T t);
    }

    public static class Utils {
        static final int HASH_BITS = 0x7fffffff;

        public static int search(int len, Function<Integer, Boolean> f) {
            int i = 0, j = len;
            while (i < j) {
                int h = (i + j) >> 1; // "長度除于2"
                if (f.apply(h)) {
                    j = h;
                } else {
                    i = h + 1;
                }
            }
            return i;
        }

        public static int rehash(Object o) {
            int h = o.hashCode();
            return (h ^ (h >>> 16)) & HASH_BITS;
        }
    }

    public static void main(String[] args) throws IOException {
        List<String> servers = SeedIO.servers(args[0]);
        ConsistentHash<String> consistentHash = new ConsistentHash<>(Integer.parseInt(args[1]), Utils::rehash);
        for (String s : servers)
            consistentHash.add(s);
        PrintStream out = SeedIO.out();
        for (String key : SeedIO.keys())
            out.println(Utils.rehash(key) + "\t" + consistentHash.get(key));
        out.flush();
    }
}
