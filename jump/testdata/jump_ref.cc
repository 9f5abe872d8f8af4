// jump_ref prints golden vectors for package jump's Hash: the function below is
// JumpConsistentHash exactly as printed in Lamping and Veach, "A Fast, Minimal
// Memory, Consistent Hash Algorithm" (arXiv:1406.2294), Figure 1.
#include <cstdint>
#include <cstdio>

int32_t JumpConsistentHash(uint64_t key, int32_t num_buckets) {
    int64_t b = -1, j = 0;
    while (j < num_buckets) {
        b = j;
        key = key * 2862933555777941757ULL + 1;
        j = (b + 1) * (double(1LL << 31) / double((key >> 33) + 1));
    }
    return b;
}

// Keys: the SplitMix64 sequence from seed 0, plus a few edge values.
static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

int main() {
    const int32_t ns[] = {1, 2, 3, 7, 10, 100, 1000, 65536, 1000000, 2147483647};
    uint64_t keys[40] = {0, 1, 2, 0xFFFFFFFFFFFFFFFFULL, 0x8000000000000000ULL, 0xDEADBEEF, 12345678901234567ULL};
    uint64_t s = 0;
    for (int i = 7; i < 40; i++) keys[i] = splitmix(&s);
    for (uint64_t k : keys)
        for (int32_t n : ns)
            printf("%016llx %d %d\n", (unsigned long long)k, n, JumpConsistentHash(k, n));
}
