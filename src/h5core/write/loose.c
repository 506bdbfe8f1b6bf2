/*
 * loose.c - objects made and not linked yet (loose.h). A short list: the
 * daemon links its batch within 100 ms, at most a few thousand objects.
 */
#include "loose.h"
#include "file_ws.h"

int h5_loose_add(h5_file *f, uint64_t addr, uint64_t start)
{
	struct h5_wstate *ws = h5_ws(f);

	if (ws->nloose == ws->cloose) {
		size_t nc = ws->cloose ? 2 * ws->cloose : 64;
		uint64_t *nv = realloc(ws->loose, nc * sizeof(*nv));

		if (!nv)
			return h5_err_set(H5_ERR_NOMEM, "out of memory");
		ws->loose = nv;
		ws->cloose = nc;
	}
	if (ws->nloose == 0 || start < ws->loose_start)
		ws->loose_start = start;
	ws->loose[ws->nloose++] = addr;
	return 0;
}

void h5_loose_drop(h5_file *f, uint64_t addr)
{
	struct h5_wstate *ws = h5_ws(f);

	for (size_t i = 0; i < ws->nloose; i++)
		if (ws->loose[i] == addr) {
			ws->loose[i] = ws->loose[--ws->nloose];
			return;
		}
}

bool h5_loose_enter(h5_file *f, uint64_t addr)
{
	for (size_t i = 0; i < h5_ws(f)->nloose; i++)
		if (h5_ws(f)->loose[i] == addr) {
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
