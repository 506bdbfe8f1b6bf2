/* idmap.c - (slot, local id) <-> global id (idmap.h): two chained hash
 * tables over one set of entries, doubled when full. */
#include "idmap.h"

#include "hash.h"

#include <stdlib.h>
#include <string.h>

static uint64_t epoch_key(uint64_t local, uint64_t epoch)
{
	return local < ((uint64_t)1 << 48) ? 0 : epoch;
}

static size_t lkey_hash(uint32_t slot, uint64_t ek, uint64_t local, size_t cap)
{
	return hash_u64(local ^ ((uint64_t)slot * 0x9e3779b97f4a7c15ULL) ^ (ek << 17), cap);
}

int idmap_init(struct idmap *im, uint64_t first)
{
	memset(im, 0, sizeof(*im));
	im->cap = 1024;
	im->next = first;
	im->by_g = calloc(im->cap, sizeof(*im->by_g));
	im->by_l = calloc(im->cap, sizeof(*im->by_l));
	if (!im->by_g || !im->by_l) {
		idmap_free(im);
		return -1;
	}
	return 0;
}

void idmap_free(struct idmap *im)
{
	size_t i;

	for (i = 0; im->by_g && i < im->cap; i++) {
		struct gid *x = im->by_g[i], *nx;

		for (; x; x = nx) {
			nx = x->next_g;
			free(x->name);
			free(x);
		}
	}
	free(im->by_g);
	free(im->by_l);
	memset(im, 0, sizeof(*im));
}

/* Double both tables when full; on allocation failure keep them (longer
 * chains, still correct). */
static void grow(struct idmap *im)
{
	size_t ncap, i;
	struct gid **bg, **bl;

	if (im->n < im->cap)
		return;
	ncap = im->cap * 2;
	bg = calloc(ncap, sizeof(*bg));
	bl = calloc(ncap, sizeof(*bl));
	if (!bg || !bl) {
		free(bg);
		free(bl);
		return;
	}
	for (i = 0; i < im->cap; i++) {
		struct gid *x, *nx;

		for (x = im->by_g[i]; x; x = nx) {
			size_t b = hash_u64(x->g, ncap);

			nx = x->next_g;
			x->next_g = bg[b];
			bg[b] = x;
		}
		for (x = im->by_l[i]; x; x = nx) {
			size_t b = lkey_hash(x->slot, x->ekey, x->local, ncap);

			nx = x->next_l;
			x->next_l = bl[b];
			bl[b] = x;
		}
	}
	free(im->by_g);
	free(im->by_l);
	im->by_g = bg;
	im->by_l = bl;
	im->cap = ncap;
}

struct gid *idmap_by_global(const struct idmap *im, uint64_t g)
{
	struct gid *x = im->by_g[hash_u64(g, im->cap)];

	while (x && x->g != g)
		x = x->next_g;
	return x;
}

struct gid *idmap_by_local(const struct idmap *im, uint32_t slot, uint64_t local, uint64_t epoch)
{
	uint64_t ek = epoch_key(local, epoch);
	struct gid *x = im->by_l[lkey_hash(slot, ek, local, im->cap)];

	while (x && !(x->slot == slot && x->local == local && x->ekey == ek))
		x = x->next_l;
	return x;
}

void idmap_each(const struct idmap *im, uint32_t slot, void (*fn)(void *arg, const struct gid *x), void *arg)
{
	for (size_t i = 0; i < im->cap; i++)
		for (const struct gid *x = im->by_g[i]; x; x = x->next_g)
			if (x->slot == slot)
				fn(arg, x);
}

static void unlink_local(struct idmap *im, struct gid *x)
{
	struct gid **pp = &im->by_l[lkey_hash(x->slot, x->ekey, x->local, im->cap)];

	while (*pp && *pp != x)
		pp = &(*pp)->next_l;
	if (*pp)
		*pp = x->next_l;
}

static void link_local(struct idmap *im, struct gid *x)
{
	size_t b = lkey_hash(x->slot, x->ekey, x->local, im->cap);

	x->next_l = im->by_l[b];
	im->by_l[b] = x;
}

struct gid *idmap_get(struct idmap *im, uint32_t slot, uint64_t local, uint64_t epoch, uint64_t parent,
		      const char *name, int made)
{
	struct gid *x = idmap_by_local(im, slot, local, epoch);
	size_t b;

	if (x) {
		if (!x->name && name && (x->name = strdup(name)) != NULL)
			x->parent = parent;
		if (made)
			x->epoch = epoch;
		return x;
	}
	x = calloc(1, sizeof(*x));
	if (!x || (name && !(x->name = strdup(name)))) {
		free(x);
		return NULL;
	}
	x->g = im->next++;
	x->slot = slot;
	x->local = local;
	/* named only: not resolved in any epoch yet (0 is before the first) */
	x->epoch = made ? epoch : 0;
	x->ekey = epoch_key(local, epoch);
	x->parent = parent;
	grow(im);
	b = hash_u64(x->g, im->cap);
	x->next_g = im->by_g[b];
	im->by_g[b] = x;
	link_local(im, x);
	im->n++;
	return x;
}

void idmap_rebind(struct idmap *im, struct gid *x, uint64_t local, uint64_t epoch)
{
	unlink_local(im, x);
	x->local = local;
	x->epoch = epoch;
	x->ekey = epoch_key(local, epoch);
	if (!idmap_by_local(im, x->slot, local, epoch))
		link_local(im, x);
}
