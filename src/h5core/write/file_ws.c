/* file_ws.c - a file's write state (file_ws.h): made by the first writer,
 * freed when FILE closes (file/open.c calls f->ws_free: it cannot include
 * write/). */
#include "file_ws.h"

#include <stdio.h>
#include <stdlib.h>

static void ws_free(struct h5_wstate *w)
{
	if (!w)
		return;
	h5_freesp_clear(&w->freesp);
	h5_freesp_clear(&w->marks);
	h5_freesp_clear(&w->lheap_names);
	free(w->quar);
	free(w->owned);
	free(w->loose);
	if (w->gpool)
		w->gpool_free(w->gpool);
	free(w);
}

struct h5_wstate *h5_ws_make(const h5_file *f)
{
	h5_file *m = (h5_file *)f;      /* the pointer is set once, atomically */
	struct h5_wstate *w = calloc(1, sizeof(*w)), *had = NULL;

	if (!w) {
		/* a writer has no way to report this (the state is read by
		 * void and const functions: space.h); dying here is what a
		 * kill -9 is, which every commit survives */
		fprintf(stderr, "h5core: out of memory for a file's write state\n");
		abort();
	}
	w->freesp.merge = true;         /* (no one pops FILE's free space by address) */
	/* the same for every maker; atomic, as makers may race */
	__atomic_store_n(&m->ws_free, ws_free, __ATOMIC_RELEASE);
	if (!__atomic_compare_exchange_n(&m->ws, &had, w, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		free(w);
		return had;
	}
	return w;
}
