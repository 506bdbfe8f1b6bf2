/* held.h - cached objects handed out as a bare pointer: local heaps
 * (lheap.c) and symbol table nodes (snod.c). Their callers keep only the
 * pointer, so the object remembers its cache entry and gives it back from
 * the pointer alone (h5_lheap_release, h5_snod_release). */
#ifndef H5_HELD_H
#define H5_HELD_H

#include "base.h"
#include "file.h"

/* What a held object's loader (an h5_cache_load_fn) gets as its ud. */
typedef struct h5_held_load {
	h5_file *f;
	uint64_t addr;
} h5_held_load;

/* The object at addr, cached under kind and loaded by load() when
 * missing; the object keeps its entry in a void * at ent_off (offsetof).
 * what names the structure in errors ("local heap"). */
int h5_held_get(void **out, h5_file *f, uint32_t kind, uint64_t addr, const char *what, size_t ent_off,
		h5_cache_load_fn load, h5_cache_free_fn free_fn);
/* Gives back what h5_held_get handed out (NULL: nothing). */
void h5_held_release(h5_file *f, void *obj, size_t ent_off);

#endif
