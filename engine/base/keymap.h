/*
 * keymap — dense ids 0..n-1 for keys of a fixed number of int64 words (the
 * binary twin of util.h's string interning): a key built per row from
 * integers and interned-string addresses is compared word by word, never
 * printed into text first. The table copies each key; ids are insertion
 * order.
 */
#ifndef GL_KEYMAP_H
#define GL_KEYMAP_H

#include <stddef.h>
#include <stdint.h>

struct gl_keymap;
/* words: the int64s of every key (at least 1). */
struct gl_keymap *gl_keymap_new(size_t words);
void gl_keymap_free(struct gl_keymap *m);
/* key's id, added as the next id when new; aborts when memory runs out (as
 * gl_xrealloc). */
int32_t gl_keymap_xget(struct gl_keymap *m, const int64_t *key);
int32_t gl_keymap_count(const struct gl_keymap *m);
/* Forgets every key (ids start at 0 again), keeping the memory. */
void gl_keymap_clear(struct gl_keymap *m);

#endif
