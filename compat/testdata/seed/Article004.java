// Article004 is the ring of seed article 004_a30ec39aea443aa7.txt (Consistenthash
// consistent Hash): its ConsistentHash<T>(hashFunction, numberOfReplicas, nodes),
// virtual nodes at hashFunction.hash(node.toString() + i), and get. The article
// leaves the HashFunction to the caller; HASH picks one, named as chash names it:
//   java_hashcode         o.toString().hashCode()
//   java_hashcode_spread  the 001 article's rehash of it
//   java_fnv1_32          the FNV1_32_HASH getHash of the 000 article
//   md5                   ketama's: the first 4 bytes of MD5(UTF-8 bytes), little-endian
//
// Usage: java Article004 SERVERS NUMBER_OF_REPLICAS HASH < KEYS (see SeedIO.java)
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Collection;
import java.util.SortedMap;
import java.util.TreeMap;

public class Article004 {
    public interface HashFunction {
        int hash(Object key);
    }

    public static class ConsistentHash<T> {
        private final HashFunction hashFunction; // hash algorithm
        private final int numberOfReplicas; // virtual node number
        private final SortedMap<Integer, T> circle = new TreeMap<Integer, T>();

        public ConsistentHash(HashFunction hashFunction, int numberOfReplicas, Collection<T> nodes) {
            this.hashFunction = hashFunction;
            this.numberOfReplicas = numberOfReplicas;
            for (T node : nodes) {
                add(node);
            }
        }

        public void add(T node) {
            for (int i = 0; i < numberOfReplicas; i++) {
                circle.put(hashFunction.hash(node.toString() + i), node);
            }
        }

        public void remove(T node) {
            for (int i = 0; i < numberOfReplicas; i++) {
                circle.remove(hashFunction.hash(node.toString() + i));
            }
        }

        public T get(Object key) {
            if (circle.isEmpty()) {
                return null;
            }
            int hash = hashFunction.hash(key);
            if (!circle.containsKey(hash)) {
                SortedMap<Integer, T> tailMap = circle.tailMap(hash);
                hash = tailMap.isEmpty() ? circle.firstKey() : tailMap.firstKey();
            }
            return circle.get(hash);
        }
    }

    static int fnv1_32(String str) {
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

    static int md5(String str) {
        try {
            byte[] d = MessageDigest.getInstance("MD5").digest(str.getBytes(StandardCharsets.UTF_8));
            return (d[3] & 0xff) << 24 | (d[2] & 0xff) << 16 | (d[1] & 0xff) << 8 | (d[0] & 0xff);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    static HashFunction byName(String name) {
        switch (name) {
        case "java_hashcode":
            return o -> o.toString().hashCode();
        case "java_hashcode_spread":
            return o -> {
                int h = o.toString().hashCode();
                return (h ^ (h >>> 16)) & 0x7fffffff;
            };
        case "java_fnv1_32":
            return o -> fnv1_32(o.toString());
        case "md5":
            return o -> md5(o.toString());
        }
        throw new IllegalArgumentException("unknown hash " + name);
    }

    public static void main(String[] args) throws IOException {
        HashFunction f = byName(args[2]);
        ConsistentHash<String> ring = new ConsistentHash<>(f, Integer.parseInt(args[1]), SeedIO.servers(args[0]));
        PrintStream out = SeedIO.out();
        for (String key : SeedIO.keys())
            out.println(f.hash(key) + "\t" + ring.get(key));
        out.flush();
    }
}
