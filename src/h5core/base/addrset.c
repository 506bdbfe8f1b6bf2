/* addrset.c - a set of file addresses (addrset.h), a keytab.c table
 * keyed by address + 1 (its key 0 is a free slot). */
#include "base.h"
#include "addrset.h"

void h5_addrset_free(h5_addrset *s)
{
	h5_keytab_free(&s->t);
}

int h5_addrset_add(h5_addrset *s, uint64_t addr)
{
	void *e;

	if (addr == H5_ADDR_UNDEF)
		return 1;       /* (no structure there: never met twice) */
	if (!s->t.esize)
		s->t = H5_KEYTAB(uint64_t);
	return h5_keytab_get(&e, &s->t, addr + 1);
}
