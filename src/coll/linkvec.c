/* linkvec.c - a group's links copied out of the iteration (linkvec.h). */
#include "linkvec.h"

#include <stdlib.h>
#include <string.h>

static int collect_cb(const h5_link *l, void *ud)
{
	linkvec *lv = ud;
	h5_link *c;

	if (lv->n == lv->cap) {
		size_t ncap = lv->cap ? lv->cap * 2 : 32;
		h5_link *n = realloc(lv->v, ncap * sizeof(*n));

		if (!n)
			return lv->nomem = 1;
		lv->v = n;
		lv->cap = ncap;
	}
	c = &lv->v[lv->n];
	*c = *l;
	c->name = malloc(l->name_len + 1);
	c->target = l->target ? strdup(l->target) : NULL;
	c->ext_file = l->ext_file ? strdup(l->ext_file) : NULL;
	c->ext_path = l->ext_path ? strdup(l->ext_path) : NULL;
	if (c->name)
		memcpy(c->name, l->name, l->name_len + 1);
	lv->n++;        /* counted even when half copied: linkvec_clear frees it */
	if (!c->name || (l->target && !c->target) || (l->ext_file && !c->ext_file) ||
	    (l->ext_path && !c->ext_path))
		return lv->nomem = 1;
	return 0;
}

int linkvec_collect(linkvec *lv, h5_file *f, uint64_t addr)
{
	memset(lv, 0, sizeof(*lv));
	return h5_group_iterate(f, addr, collect_cb, lv);
}

void linkvec_clear(linkvec *lv)
{
	for (size_t i = 0; i < lv->n; i++)
		h5_link_clear(&lv->v[i]);
	free(lv->v);
	memset(lv, 0, sizeof(*lv));
}
