/*
 * libmemcached.c routes keys with the real libmemcached, for chash's compat tests.
 *
 * usage: libmemcached MODE HASH HOST:PORT:WEIGHT... <keys
 *
 *   MODE  ketama           MEMCACHED_BEHAVIOR_KETAMA (unweighted unless a weight is > 1)
 *         ketama_weighted  MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED (key hash MD5, weighted ring)
 *   HASH  default, md5, crc, fnv1_64, fnv1a_64, fnv1_32, fnv1a_32, hsieh, murmur,
 *         jenkins: MEMCACHED_BEHAVIOR_HASH, or "-" to leave it alone
 *
 * Behaviours are set before the servers are added: libmemcached builds its continuum
 * when a server is added and does not rebuild it when the hash changes. For every key
 * on stdin (one per line) it stores the key (value = key) and prints the host:port of
 * memcached_server_by_key; the caller checks that the key landed there.
 *
 * Build: cc -o libmemcached libmemcached.c $(pkg-config --cflags --libs libmemcached)
 */
#include <libmemcached/memcached.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char *what, memcached_st *m, memcached_return_t rc) {
	fprintf(stderr, "libmemcached: %s: %s\n", what, m ? memcached_strerror(m, rc) : "");
	exit(1);
}

static memcached_hash_t hash_named(const char *name) {
	static const struct {
		const char *name;
		memcached_hash_t h;
	} hashes[] = {
		{"default", MEMCACHED_HASH_DEFAULT}, {"md5", MEMCACHED_HASH_MD5},
		{"crc", MEMCACHED_HASH_CRC},         {"fnv1_64", MEMCACHED_HASH_FNV1_64},
		{"fnv1a_64", MEMCACHED_HASH_FNV1A_64}, {"fnv1_32", MEMCACHED_HASH_FNV1_32},
		{"fnv1a_32", MEMCACHED_HASH_FNV1A_32}, {"hsieh", MEMCACHED_HASH_HSIEH},
		{"murmur", MEMCACHED_HASH_MURMUR},   {"jenkins", MEMCACHED_HASH_JENKINS},
	};
	for (size_t i = 0; i < sizeof hashes / sizeof hashes[0]; i++)
		if (strcmp(name, hashes[i].name) == 0) return hashes[i].h;
	fprintf(stderr, "libmemcached: unknown hash %s\n", name);
	exit(2);
}

int main(int argc, char **argv) {
	if (argc < 4) {
		fprintf(stderr, "usage: libmemcached MODE HASH HOST:PORT:WEIGHT... <keys\n");
		return 2;
	}
	memcached_st *m = memcached_create(NULL);
	memcached_return_t rc;
	if (strcmp(argv[1], "ketama") == 0)
		rc = memcached_behavior_set(m, MEMCACHED_BEHAVIOR_KETAMA, 1);
	else if (strcmp(argv[1], "ketama_weighted") == 0)
		rc = memcached_behavior_set(m, MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED, 1);
	else {
		fprintf(stderr, "libmemcached: unknown mode %s\n", argv[1]);
		return 2;
	}
	if (rc != MEMCACHED_SUCCESS) die("mode", m, rc);
	if (strcmp(argv[2], "-") != 0) {
		rc = memcached_behavior_set(m, MEMCACHED_BEHAVIOR_HASH, hash_named(argv[2]));
		if (rc != MEMCACHED_SUCCESS) die(argv[2], m, rc);
	}
	for (int i = 3; i < argc; i++) {
		char *spec = strdup(argv[i]);
		char *w = strrchr(spec, ':');
		if (w == NULL) die("server HOST:PORT:WEIGHT", NULL, 0);
		*w++ = 0;
		char *p = strrchr(spec, ':');
		if (p == NULL) die("server HOST:PORT:WEIGHT", NULL, 0);
		*p++ = 0;
		rc = memcached_server_add_with_weight(m, spec, (in_port_t)atoi(p), (uint32_t)atoi(w));
		if (rc != MEMCACHED_SUCCESS) die(argv[i], m, rc);
		free(spec);
	}
	char line[4096];
	while (fgets(line, sizeof line, stdin) != NULL) {
		size_t n = strcspn(line, "\n");
		line[n] = 0;
		rc = memcached_set(m, line, n, line, n, 0, 0);
		if (rc != MEMCACHED_SUCCESS) die(line, m, rc);
		const memcached_instance_st *s = memcached_server_by_key(m, line, n, &rc);
		if (s == NULL) die("server_by_key", m, rc);
		printf("%s:%u\n", memcached_server_name(s), (unsigned)memcached_server_port(s));
	}
	memcached_free(m);
	return 0;
}
