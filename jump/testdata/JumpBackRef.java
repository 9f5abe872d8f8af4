// JumpBackRef prints golden vectors for package jump's Back. getBucket is a
// line-for-line Java rendering of hash4j's ConsistentJumpBackBucketHasher with
// the SplitMix64 generator (hash4j 0.2x, Apache-2.0), kept in Java so that Java's
// shift and sign rules, not Go's, decide every intermediate value.
public class JumpBackRef {
    static final long GOLDEN = 0x9e3779b97f4a7c15L;

    static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }

    static int getBucket(long hash, int numBuckets) {
        if (numBuckets <= 1) return 0;
        long state = hash + GOLDEN;
        long r0 = mix(state);
        int x = ((int) (r0 ^ (r0 >>> 32))) & (0xFFFFFFFF >>> Integer.numberOfLeadingZeros(numBuckets - 1));
        while (x != 0) {
            int lo = 1 << ~Integer.numberOfLeadingZeros(x);
            int b = lo + ((int) (r0 >>> (Integer.bitCount(x) << 5)) & (lo - 1));
            if (b < numBuckets) return b;
            int mask = (lo << 1) - 1;
            boolean none = false;
            while (!none) {
                state += GOLDEN;
                long r1 = mix(state);
                b = (int) r1 & mask;
                if (b < lo) break;
                if (b < numBuckets) return b;
                b = (int) (r1 >>> 32) & mask;
                if (b < lo) break;
                if (b < numBuckets) return b;
            }
            x ^= lo;
        }
        return 0;
    }

    public static void main(String[] args) {
        int[] ns = {1, 2, 3, 7, 10, 100, 1000, 65536, 1000000, 2147483647};
        long[] keys = new long[40];
        long[] edge = {0, 1, 2, -1L, 0x8000000000000000L, 0xDEADBEEFL, 12345678901234567L};
        System.arraycopy(edge, 0, keys, 0, edge.length);
        long s = 0;
        for (int i = edge.length; i < keys.length; i++) { s += GOLDEN; keys[i] = mix(s); }
        for (long k : keys)
            for (int n : ns)
                System.out.printf("%016x %d %d%n", k, n, getBucket(k, n));
    }
}
