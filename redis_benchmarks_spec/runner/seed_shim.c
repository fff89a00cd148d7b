/* Pins the randomness a counted run's processes draw (redis_benchmarks_spec/runner/seeds.py).
 *
 * Loaded with LD_PRELOAD into redis-server (under valgrind too) and the client when
 * RBS_SEED is set: srandom()/srand() take a seed made from RBS_SEED instead of their argument
 * (redis-benchmark's __rand_int__ keys, the skiplist levels of sorted sets), and reading
 * /dev/urandom with fopen() reads bytes made from RBS_SEED (Redis's getRandomBytes: the
 * dict hash seed, run ids). Without RBS_SEED every call is the C library's.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int seeded(unsigned long *out) {
    const char *s = getenv("RBS_SEED");
    unsigned long h = 1469598103934665603UL;
    if (s == NULL || *s == '\0') return 0;
    for (; *s; s++) { h ^= (unsigned char)*s; h *= 1099511628211UL; }
    *out = h;
    return 1;
}

void srandom(unsigned int x) {
    static void (*real)(unsigned int);
    unsigned long h;
    if (!real) real = (void (*)(unsigned int))dlsym(RTLD_NEXT, "srandom");
    real(seeded(&h) ? (unsigned int)h : x);
}

void srand(unsigned int x) {
    static void (*real)(unsigned int);
    unsigned long h;
    if (!real) real = (void (*)(unsigned int))dlsym(RTLD_NEXT, "srand");
    real(seeded(&h) ? (unsigned int)(h >> 7) : x);
}

static unsigned char bytes[4096];

static FILE *urandom(const char *path) {
    unsigned long h;
    if (path == NULL || strcmp(path, "/dev/urandom") != 0 || !seeded(&h)) return NULL;
    for (size_t i = 0; i < sizeof bytes; i++) {
        h ^= h << 13; h ^= h >> 7; h ^= h << 17;
        bytes[i] = (unsigned char)(h >> 24);
    }
    return fmemopen(bytes, sizeof bytes, "r");
}

FILE *fopen(const char *path, const char *mode) {
    static FILE *(*real)(const char *, const char *);
    FILE *f = urandom(path);
    if (f) return f;
    if (!real) real = (FILE *(*)(const char *, const char *))dlsym(RTLD_NEXT, "fopen");
    return real(path, mode);
}

FILE *fopen64(const char *path, const char *mode) {
    static FILE *(*real)(const char *, const char *);
    FILE *f = urandom(path);
    if (f) return f;
    if (!real) real = (FILE *(*)(const char *, const char *))dlsym(RTLD_NEXT, "fopen64");
    return real(path, mode);
}
