/*
 * loose.c - objects made and not linked yet (loose.h). A short list: the
 * daemon links its batch within 100 ms, at most a few thousand objects.
 */
#include "loose.h"

int h5_loose_add(h5_file *f, uint64_t addr, uint64_t start)
{
	if (f->nloose == f->cloose) {
		size_t nc = f->cloose ? 2 * f->cloose : 64;
		uint64_t *nv = realloc(f->loose, nc * sizeof(*nv));

		if (!nv)
			return h5_err_set(H5_ERR_NOMEM, "out of memory");
		f->loose = nv;
		f->cloose = nc;
	}
	if (f->nloose == 0 || start < f->loose_start)
		f->loose_start = start;
	f->loose[f->nloose++] = addr;
	return 0;
}

void h5_loose_drop(h5_file *f, uint64_t addr)
{
	for (size_t i = 0; i < f->nloose; i++)
		if (f->loose[i] == addr) {
			f->loose[i] = f->loose[--f->nloose];
			return;
		}
}

bool h5_loose_enter(h5_file *f, uint64_t addr)
{
	for (size_t i = 0; i < f->nloose; i++)
		if (f->loose[i] == addr) {
			__atomic_store_n(&f->loose_on, true, __ATOMIC_RELEASE);
			return true;
		}
	return false;
}

void h5_loose_leave(h5_file *f, bool entered)
{
	if (entered)
		__atomic_store_n(&f->loose_on, false, __ATOMIC_RELEASE);
}
