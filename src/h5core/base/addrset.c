/* addrset.c - a set of file addresses (addrset.h), open addressing with
 * linear probing, grown to keep it at most half full. */
#include "base.h"
#include "addrset.h"

static size_t addr_hash(uint64_t a, size_t cap)
{
	a ^= a >> 33;
	a *= UINT64_C(0xff51afd7ed558ccd);
	a ^= a >> 33;
	return (size_t)a & (cap - 1);
}

void h5_addrset_free(h5_addrset *s)
{
	free(s->tab);
	memset(s, 0, sizeof(*s));
}

static int addrset_grow(h5_addrset *s)
{
	size_t ncap = s->cap ? s->cap * 2 : 64;
	uint64_t *nt = malloc(ncap * sizeof(*nt));

	if (!nt)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < ncap; i++)
		nt[i] = H5_ADDR_UNDEF;
	for (size_t i = 0; i < s->cap; i++) {
		size_t j;

		if (s->tab[i] == H5_ADDR_UNDEF)
			continue;
		for (j = addr_hash(s->tab[i], ncap); nt[j] != H5_ADDR_UNDEF; j = (j + 1) & (ncap - 1))
			;
		nt[j] = s->tab[i];
	}
	free(s->tab);
	s->tab = nt;
	s->cap = ncap;
	return 0;
}

int h5_addrset_add(h5_addrset *s, uint64_t addr)
{
	size_t j;
	int rc;

	if (2 * (s->n + 1) > s->cap) {
		rc = addrset_grow(s);
		if (rc < 0)
			return rc;
	}
	for (j = addr_hash(addr, s->cap); s->tab[j] != H5_ADDR_UNDEF; j = (j + 1) & (s->cap - 1))
		if (s->tab[j] == addr)
			return 0;
	s->tab[j] = addr;
	s->n++;
	return 1;
}
