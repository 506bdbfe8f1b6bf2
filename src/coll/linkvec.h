/* linkvec.h - a group's links copied out of h5_group_iterate's callback,
 * so a walk can go into each child while the iteration is over (the
 * collection library's catalog, ccat.c; h5fs-ls and --refs, refs.c). */
#ifndef H5FS_LINKVEC_H
#define H5FS_LINKVEC_H

#include "h5core.h"

typedef struct linkvec {
	h5_link *v;
	size_t n, cap;
	int nomem;      /* a copy failed: v[0..n) holds what was copied */
} linkvec;

/* The links of the group at addr of f, in the engine's order: the return of
 * h5_group_iterate (0 or a negative h5_err), lv->nomem when out of memory.
 * linkvec_clear() in any case. */
int linkvec_collect(linkvec *lv, h5_file *f, uint64_t addr);
void linkvec_clear(linkvec *lv);

#endif
