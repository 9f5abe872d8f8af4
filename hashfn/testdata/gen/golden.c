/*
 * golden.c prints the golden vectors of package hashfn (../golden.tsv), computed
 * by the C code that defines each hash. gen.sh builds it against twemproxy 0.5.0's
 * own src/hashkit (the reference for twemproxy's twelve names), Debian's
 * libhashkit (libmemcached 1.1.4) and zlib (cross-checks), and libxxhash (xxh64).
 * It is not part of the Go build.
 *
 * Output: comment lines ("# ...") reporting the cross-checks, then one line per
 * (function, key): name TAB key TAB 0x%08x. A key is written Go-quoted ("...",
 * with \" \\ and \xNN escapes) when it is at most 40 bytes long or all printable
 * ASCII, else as hex:<lowercase hex>. With -k it prints only the keys (the key
 * column, TAB, the key in hex), for the Java half of gen.sh.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libhashkit-1.0/hashkit.h>
#include <xxhash.h>
#include <zlib.h>

/* twemproxy 0.5.0, src/hashkit/nc_hashkit.h */
uint32_t hash_one_at_a_time(const char *key, size_t key_length);
uint32_t hash_md5(const char *key, size_t key_length);
uint32_t hash_crc16(const char *key, size_t key_length);
uint32_t hash_crc32(const char *key, size_t key_length);
uint32_t hash_crc32a(const char *key, size_t key_length);
uint32_t hash_fnv1_64(const char *key, size_t key_length);
uint32_t hash_fnv1a_64(const char *key, size_t key_length);
uint32_t hash_fnv1_32(const char *key, size_t key_length);
uint32_t hash_fnv1a_32(const char *key, size_t key_length);
uint32_t hash_hsieh(const char *key, size_t key_length);
uint32_t hash_jenkins(const char *key, size_t length);
uint32_t hash_murmur(const char *key, size_t length);

struct key {
	unsigned char *p;
	size_t n;
};

static struct key keys[512];
static size_t nkeys;

static void add(const void *p, size_t n)
{
	if (nkeys == sizeof(keys) / sizeof(keys[0])) {
		fprintf(stderr, "golden: too many keys\n");
		exit(1);
	}
	keys[nkeys].p = malloc(n + 1);
	memcpy(keys[nkeys].p, p, n);
	keys[nkeys].n = n;
	nkeys++;
}

static void adds(const char *s) { add(s, strlen(s)); }

/* keys_init fills keys[]: every tail length of every block size (1..26 bytes),
 * bytes >= 0x80 at every position of a 16-byte key, UTF-8 (valid and not), NULs
 * and long keys. */
static void keys_init(void)
{
	static const char alpha[] = "abcdefghijklmnopqrstuvwxyz";
	static const unsigned char high[16] = {
		0x80, 0xff, 0xfe, 0x81, 0xc3, 0xa9, 0xe4, 0xb8,
		0xad, 0x90, 0xa0, 0xb0, 0xc0, 0xd0, 0xe0, 0xf0,
	};
	static unsigned char buf[1024];
	size_t i;

	add("", 0);
	for (i = 1; i <= 26; i++)
		add(alpha, i);
	for (i = 1; i <= 16; i++)
		add(high, i);
	adds("123456789");
	adds("foo");
	adds("foobar");
	adds("hello world");
	adds("key:1");
	adds("user:1000");
	adds("{user1}:a");
	adds("10.0.0.1");
	adds("10.0.0.1-0");
	adds("10.0.0.1:11212-159");
	adds("The quick brown fox jumps over the lazy dog");
	add("\0", 1);
	add("a\0b", 3);
	add("\0\0\0\0", 4);
	adds("ab\xff");              /* hsieh: sign-extended third tail byte */
	adds("abcd\x7f");
	adds("\x7f\x80");
	adds("caf\xc3\xa9");         /* "café" */
	adds("\xe4\xb8\xad\xe6\x96\x87\xe9\x94\xae"); /* three CJK characters */
	adds("\xf0\x9f\x98\x80");    /* U+1F600: a surrogate pair in UTF-16 */
	adds("x\xf0\x9f\x98\x80y");
	adds("ab\xff" "c");          /* invalid UTF-8 */
	adds("\xe4\xb8");            /* truncated UTF-8 */
	adds("\xed\xa0\x80");        /* an encoded surrogate: invalid UTF-8 */
	adds("\xc0\xaf");            /* overlong: invalid UTF-8 */
	adds("\xe0\x80\xaf");        /* overlong */
	adds("\xc2");                /* cut short */
	adds("\xf0\x9f\x98");        /* cut short */
	adds("\xf0\x9f\x98" "A");     /* cut short, then ASCII */
	adds("\xf4\x90\x80\x80");    /* above U+10FFFF */
	adds("\xf8\x88\x80\x80");    /* five-byte form */
	adds("\xed\x9f\xbf");        /* U+D7FF, the last before the surrogates */
	adds("\xef\xbf\xbd");        /* U+FFFD itself */
	adds("\xf4\x8f\xbf\xbf");    /* U+10FFFF */
	for (i = 0; i < 256; i++)
		buf[i] = (unsigned char)i;
	add(buf, 256);
	for (i = 0; i < 256; i++)
		buf[i] = (unsigned char)(255 - i);
	add(buf, 256);
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)alpha[(i * 7) % 26];
	add(buf, 100);
	add(buf, 1000);
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)((i * 131 + 17) >> 3);
	add(buf, 1023);
}

static void print_key(const struct key *k)
{
	size_t i;
	int printable = 1;

	for (i = 0; i < k->n; i++)
		if (k->p[i] < 0x20 || k->p[i] > 0x7e)
			printable = 0;
	if (k->n > 40 && !printable) {
		fputs("hex:", stdout);
		for (i = 0; i < k->n; i++)
			printf("%02x", k->p[i]);
		return;
	}
	putchar('"');
	for (i = 0; i < k->n; i++) {
		unsigned char c = k->p[i];
		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c >= 0x20 && c <= 0x7e)
			putchar(c);
		else
			printf("\\x%02x", c);
	}
	putchar('"');
}

typedef uint32_t (*hashfn)(const char *, size_t);

static uint32_t zlib_crc32(const char *p, size_t n)
{
	return (uint32_t)crc32(0L, (const Bytef *)p, (uInt)n);
}

static uint32_t xxh64(const char *p, size_t n)
{
	return (uint32_t)XXH64(p, n, 0);
}

struct fn {
	const char *name;
	hashfn ref;          /* produces the golden value */
	const char *refname;
	hashfn cross;        /* another implementation to compare, or NULL */
	const char *crossname;
	int algo;            /* libhashkit_has_algorithm argument for cross, or -1 */
};

static const struct fn fns[] = {
	{"md5", hash_md5, "twemproxy", libhashkit_md5, "libhashkit", HASHKIT_HASH_MD5},
	{"crc16", hash_crc16, "twemproxy", NULL, NULL, -1},
	{"crc32", hash_crc32, "twemproxy", libhashkit_crc32, "libhashkit", HASHKIT_HASH_CRC},
	{"crc32a", hash_crc32a, "twemproxy", zlib_crc32, "zlib crc32()", -1},
	{"fnv1_32", hash_fnv1_32, "twemproxy", libhashkit_fnv1_32, "libhashkit", HASHKIT_HASH_FNV1_32},
	{"fnv1a_32", hash_fnv1a_32, "twemproxy", libhashkit_fnv1a_32, "libhashkit", HASHKIT_HASH_FNV1A_32},
	{"fnv1_64", hash_fnv1_64, "twemproxy", libhashkit_fnv1_64, "libhashkit", HASHKIT_HASH_FNV1_64},
	{"fnv1a_64", hash_fnv1a_64, "twemproxy", libhashkit_fnv1a_64, "libhashkit", HASHKIT_HASH_FNV1A_64},
	{"hsieh", hash_hsieh, "twemproxy", libhashkit_hsieh, "libhashkit", HASHKIT_HASH_HSIEH},
	{"jenkins", hash_jenkins, "twemproxy", libhashkit_jenkins, "libhashkit", HASHKIT_HASH_JENKINS},
	{"murmur", hash_murmur, "twemproxy", libhashkit_murmur, "libhashkit", HASHKIT_HASH_MURMUR},
	{"one_at_a_time", hash_one_at_a_time, "twemproxy", libhashkit_one_at_a_time, "libhashkit", HASHKIT_HASH_DEFAULT},
	{"xxh64", xxh64, "libxxhash XXH64(key, len, 0), low 32 bits", NULL, NULL, -1},
};

#define NFNS (sizeof(fns) / sizeof(fns[0]))

/* hash runs f on a copy of k at each of the four alignments (twemproxy's jenkins
 * and murmur read words; all alignments must agree) and returns the value. */
static uint32_t hash(const struct fn *fn, hashfn f, const struct key *k)
{
	static unsigned char buf[1024 + 8];
	uint32_t h = 0;
	int off;

	if (k->n > sizeof(buf) - 4) {
		fprintf(stderr, "golden: key of %zu bytes is too long\n", k->n);
		exit(1);
	}

	for (off = 0; off < 4; off++) {
		uint32_t v;
		memcpy(buf + off, k->p, k->n);
		v = f((const char *)buf + off, k->n);
		if (off == 0)
			h = v;
		else if (v != h) {
			fprintf(stderr, "golden: %s gives 0x%08x at alignment %d, 0x%08x at 0\n",
			        fn->name, v, off, h);
			exit(1);
		}
	}
	return h;
}

int main(int argc, char **argv)
{
	static uint32_t values[NFNS][512];
	size_t i, j;

	keys_init();
	if (argc > 1 && strcmp(argv[1], "-k") == 0) {
		for (j = 0; j < nkeys; j++) {
			size_t b;
			print_key(&keys[j]);
			putchar('\t');
			for (b = 0; b < keys[j].n; b++)
				printf("%02x", keys[j].p[b]);
			putchar('\n');
		}
		return 0;
	}
	for (i = 0; i < NFNS; i++)
		for (j = 0; j < nkeys; j++)
			values[i][j] = hash(&fns[i], fns[i].ref, &keys[j]);

	printf("# %zu keys; golden values from %s except where named:\n", nkeys, fns[0].refname);
	for (i = 0; i < NFNS; i++) {
		size_t diff = 0, firstdiff = 0;
		if (strcmp(fns[i].refname, fns[0].refname) != 0)
			printf("#   %s: from %s\n", fns[i].name, fns[i].refname);
		if (fns[i].cross == NULL)
			continue;
		if (fns[i].algo >= 0 && !libhashkit_has_algorithm((hashkit_hash_algorithm_t)fns[i].algo)) {
			printf("#   %s: no cross-check: this %s was built without it\n",
			       fns[i].name, fns[i].crossname);
			continue;
		}
		for (j = 0; j < nkeys; j++)
			if (hash(&fns[i], fns[i].cross, &keys[j]) != values[i][j])
				if (diff++ == 0)
					firstdiff = j;
		if (diff == 0) {
			printf("#   %s: %s agrees on every key\n", fns[i].name, fns[i].crossname);
		} else {
			printf("#   %s: %s DIFFERS on %zu keys, first ", fns[i].name,
			       fns[i].crossname, diff);
			print_key(&keys[firstdiff]);
			putchar('\n');
		}
	}
	for (i = 0; i < NFNS; i++)
		for (j = 0; j < nkeys; j++) {
			printf("%s\t", fns[i].name);
			print_key(&keys[j]);
			printf("\t0x%08x\n", values[i][j]);
		}
	return 0;
}
