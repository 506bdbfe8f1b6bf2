/* keytab.c - a table keyed by a non-zero 64-bit number (keytab.h). */
#include "base.h"
#include "keytab.h"

static size_t keytab_hash(uint64_t k, size_t cap)
{
	k ^= k >> 33;
	k *= UINT64_C(0xff51afd7ed558ccd);
	k ^= k >> 33;
	return (size_t)k & (cap - 1);
}

static uint64_t key_at(const h5_keytab *t, const unsigned char *slots, size_t i)
{
	uint64_t k;

	memcpy(&k, slots + i * t->esize, sizeof(k));
	return k;
}

static int keytab_grow(h5_keytab *t)
{
	size_t ncap = t->cap ? t->cap * 2 : 64;
	unsigned char *ns = calloc(ncap, t->esize);

	if (!ns)
		return h5_err_set(H5_ERR_NOMEM, "out of memory for a table of %zu entries", ncap);
	for (size_t i = 0; i < t->cap; i++) {
		uint64_t k = key_at(t, t->slots, i);
		size_t j;

		if (!k)
			continue;
		for (j = keytab_hash(k, ncap); key_at(t, ns, j); j = (j + 1) & (ncap - 1))
			;
		memcpy(ns + j * t->esize, t->slots + i * t->esize, t->esize);
	}
	free(t->slots);
	t->slots = ns;
	t->cap = ncap;
	return 0;
}

int h5_keytab_get(void **out, h5_keytab *t, uint64_t key)
{
	size_t j;
	uint64_t k;
	int rc;

	*out = NULL;
	if (t->esize < sizeof(uint64_t) || !key)
		return h5_err_set(H5_ERR_INVAL, "keytab: entry of %zu bytes, key %llu", t->esize,
				  (unsigned long long)key);
	if (2 * (t->n + 1) > t->cap && (rc = keytab_grow(t)) < 0)
		return rc;
	for (j = keytab_hash(key, t->cap); (k = key_at(t, t->slots, j)) != 0; j = (j + 1) & (t->cap - 1))
		if (k == key) {
			*out = t->slots + j * t->esize;
			return 0;
		}
	memcpy(t->slots + j * t->esize, &key, sizeof(key));
	t->n++;
	*out = t->slots + j * t->esize;
	return 1;
}

void *h5_keytab_slot(const h5_keytab *t, size_t i)
{
	return i < t->cap && key_at(t, t->slots, i) ? t->slots + i * t->esize : NULL;
}

void h5_keytab_clear(h5_keytab *t)
{
	if (t->slots)
		memset(t->slots, 0, t->cap * t->esize);
	t->n = 0;
}

void h5_keytab_free(h5_keytab *t)
{
	free(t->slots);
	t->slots = NULL;
	t->cap = t->n = 0;
}
