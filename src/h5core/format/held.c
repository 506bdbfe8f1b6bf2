/*
 * held.c - cached objects handed out as a bare pointer (held.h): local
 * heaps (III.D) and symbol table nodes (III.B), which groups hold while
 * they list or look up names.
 */
#include "held.h"

int h5_held_get(void **out, h5_file *f, uint32_t kind, uint64_t addr, const char *what, size_t ent_off,
		h5_cache_load_fn load, h5_cache_free_fn free_fn)
{
	h5_held_load ud = { f, addr };
	h5_cache_ref ref;
	int rc;

	*out = NULL;
	if (!h5_addr_defined(addr))
		return h5_err_set(H5_ERR_FORMAT, "%s address is undefined", what);
	rc = h5_cache_get(&ref, f->meta, kind, addr, load, free_fn, &ud);
	if (rc < 0)
		return rc;
	/* Every holder stores the same entry pointer; atomic so concurrent
	 * first users do not race on a plain write. */
	__atomic_store_n((void **)((char *)ref.obj + ent_off), ref.ent, __ATOMIC_RELEASE);
	*out = ref.obj;
	return 0;
}

void h5_held_release(h5_file *f, void *obj, size_t ent_off)
{
	h5_cache_ref ref;

	if (!obj)
		return;
	ref.obj = obj;
	ref.ent = __atomic_load_n((void **)((char *)obj + ent_off), __ATOMIC_ACQUIRE);
	h5_cache_release(f->meta, &ref);
}
