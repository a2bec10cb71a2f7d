/* keymap — fixed-width integer keys to dense ids (keymap.h). */
#include "keymap.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

/* A slot keeps its key's hash: a probe past another key costs no compare. */
struct slot {
    int32_t id;
    uint32_t hash;
};

struct gl_keymap {
    size_t words;
    int64_t *keys;   /* count × words, in id order */
    int32_t count, cap;
    struct slot *slots; /* open addressing, id -1 = empty */
    uint32_t nslots;    /* a power of two */
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

static uint32_t find_slot(const struct gl_keymap *m, const int64_t *k, uint32_t h)
{
    uint32_t mask = m->nslots - 1, i = h & mask;
    size_t bytes = m->words * sizeof *k;
    for (const struct slot *sl; (sl = &m->slots[i])->id >= 0; i = (i + 1) & mask)
        if (sl->hash == h && !memcmp(m->keys + (size_t)sl->id * m->words, k, bytes))
            break;
    return i;
}

static void empty_slots(struct gl_keymap *m)
{
    for (uint32_t i = 0; i < m->nslots; i++)
        m->slots[i] = (struct slot){-1, 0};
}

struct gl_keymap *gl_keymap_new(size_t words)
{
    struct gl_keymap *m = gl_xcalloc(1, sizeof *m);
    m->words = words ? words : 1;
    m->nslots = 64;
    m->slots = gl_xrealloc(NULL, m->nslots * sizeof *m->slots);
    empty_slots(m);
    return m;
}

void gl_keymap_free(struct gl_keymap *m)
{
    if (m) /* the pointers are read into the array before any is freed */
        GL_FREE_EACH(m->keys, m->slots, m);
}

void gl_keymap_clear(struct gl_keymap *m)
{
    m->count = 0;
    empty_slots(m);
}

int32_t gl_keymap_count(const struct gl_keymap *m)
{
    return m->count;
}

int32_t gl_keymap_xget(struct gl_keymap *m, const int64_t *key)
{
    uint32_t h = key_hash(key, m->words), i = find_slot(m, key, h);
    if (m->slots[i].id >= 0)
        return m->slots[i].id;
    if ((uint32_t)(m->count + 1) * 2 > m->nslots) { /* at most half full */
        struct slot *old = m->slots;
        uint32_t n = m->nslots;
        m->nslots *= 2;
        m->slots = gl_xrealloc(NULL, m->nslots * sizeof *m->slots);
        empty_slots(m);
        for (uint32_t j = 0; j < n; j++)
            if (old[j].id >= 0) {
                uint32_t k = old[j].hash & (m->nslots - 1);
                while (m->slots[k].id >= 0)
                    k = (k + 1) & (m->nslots - 1);
                m->slots[k] = old[j];
            }
        free(old);
        i = find_slot(m, key, h);
    }
    if (m->count == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 64;
        m->keys = gl_xrealloc(m->keys, (size_t)m->cap * m->words * sizeof *m->keys);
    }
    memcpy(m->keys + (size_t)m->count * m->words, key, m->words * sizeof *key);
    m->slots[i] = (struct slot){m->count, h};
    return m->count++;
}
