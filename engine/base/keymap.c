/* keymap — fixed-width integer keys to dense ids (keymap.h). */
#include "keymap.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

struct gl_keymap {
    size_t words;
    int64_t *keys;   /* count × words, in id order */
    int32_t count, cap;
    int32_t *slots;  /* open addressing, -1 = empty */
    uint32_t nslots; /* a power of two */
};

/* A multiply-xorshift mix a word at a time: the keys hold addresses and
 * small integers, so FNV's byte loop would be most of a lookup's cost. */
static uint32_t key_hash(const int64_t *k, size_t words)
{
    uint64_t h = GL_HASH_SEED;
    for (size_t i = 0; i < words; i++) {
        h ^= (uint64_t)k[i];
        h *= 0x9e3779b97f4a7c15ULL;
        h ^= h >> 29;
    }
    return (uint32_t)(h ^ (h >> 32));
}

static uint32_t find_slot(const struct gl_keymap *m, const int64_t *k)
{
    uint32_t mask = m->nslots - 1, i = key_hash(k, m->words) & mask;
    size_t bytes = m->words * sizeof *k;
    while (m->slots[i] >= 0 && memcmp(m->keys + (size_t)m->slots[i] * m->words, k, bytes))
        i = (i + 1) & mask;
    return i;
}

struct gl_keymap *gl_keymap_new(size_t words)
{
    struct gl_keymap *m = gl_xcalloc(1, sizeof *m);
    m->words = words ? words : 1;
    m->nslots = 64;
    m->slots = gl_xrealloc(NULL, m->nslots * sizeof *m->slots);
    memset(m->slots, 0xff, m->nslots * sizeof *m->slots);
    return m;
}

void gl_keymap_free(struct gl_keymap *m)
{
    if (!m)
        return;
    free(m->keys);
    free(m->slots);
    free(m);
}

void gl_keymap_clear(struct gl_keymap *m)
{
    m->count = 0;
    memset(m->slots, 0xff, m->nslots * sizeof *m->slots);
}

int32_t gl_keymap_count(const struct gl_keymap *m)
{
    return m->count;
}

int32_t gl_keymap_xget(struct gl_keymap *m, const int64_t *key)
{
    uint32_t i = find_slot(m, key);
    if (m->slots[i] >= 0)
        return m->slots[i];
    if ((uint32_t)(m->count + 1) * 2 > m->nslots) { /* at most half full */
        m->nslots *= 2;
        m->slots = gl_xrealloc(m->slots, m->nslots * sizeof *m->slots);
        memset(m->slots, 0xff, m->nslots * sizeof *m->slots);
        for (int32_t id = 0; id < m->count; id++)
            m->slots[find_slot(m, m->keys + (size_t)id * m->words)] = id;
        i = find_slot(m, key);
    }
    if (m->count == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 64;
        m->keys = gl_xrealloc(m->keys, (size_t)m->cap * m->words * sizeof *m->keys);
    }
    memcpy(m->keys + (size_t)m->count * m->words, key, m->words * sizeof *key);
    m->slots[i] = m->count;
    return m->count++;
}
