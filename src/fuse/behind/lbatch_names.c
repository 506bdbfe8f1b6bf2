/*
 * lbatch_names.c - the pending names of the batch of new files
 * (lbatch.c) looked up through an open-addressed index of them
 * (lbatch_int.h nm_idx): every lookup of a name in the batch's group
 * that FILE has not (the kernel's LOOKUP before a create, mkdir's and
 * create's EEXIST checks, the entry after the create) scanned up to
 * LB_MAX_ITEMS names with strcmp, a batch's cost quadratic in its
 * creates (11% of create(2)'s daemon samples, issue 82 item 2).
 */
#include "commit.h"
#include "batch.h"
#include "lbatch_int.h"
#include "hash.h"

/* t.mu held: names indexed up to count (nm_idx), or false (out of
 * memory: the caller scans) */
static bool names_index_locked(struct lbatch *lb)
{
	size_t cap = lb->nm_idx_cap ? lb->nm_idx_cap : 256;

	if (lb->nm_idx_ok && (2 * lb->count > lb->nm_idx_cap || lb->nm_indexed > lb->count))
		lb->nm_idx_ok = false;
	if (!lb->nm_idx_ok) {
		while (2 * lb->count > cap)
			cap *= 2;
		if (cap != lb->nm_idx_cap) {
			uint32_t *ni = calloc(cap, sizeof(*ni));

			if (!ni)
				return false;
			free(lb->nm_idx);
			lb->nm_idx = ni;
			lb->nm_idx_cap = cap;
		} else {
			memset(lb->nm_idx, 0, cap * sizeof(*lb->nm_idx));
		}
		lb->nm_indexed = 0;
		lb->nm_idx_ok = true;
	}
	for (; lb->nm_indexed < lb->count; lb->nm_indexed++)
		hash_slot_put(lb->nm_idx, lb->nm_idx_cap, lb->names[lb->nm_indexed], lb->nm_indexed);
	return true;
}

bool lb_pending_locked(struct lbatch *lb, const char *name, uint64_t *addr)
{
	size_t first = SIZE_MAX;

	if (!names_index_locked(lb)) {
		for (size_t i = 0; i < lb->count && first == SIZE_MAX; i++)
			if (strcmp(lb->names[i], name) == 0)
				first = i;
	} else {
		/* (the first of its name, as the list's scan gave it) */
		for (size_t b = hash_name(0, name, lb->nm_idx_cap); lb->nm_idx[b]; b = (b + 1) & (lb->nm_idx_cap - 1)) {
			size_t i = lb->nm_idx[b] - 1;

			if (i < first && strcmp(lb->names[i], name) == 0)
				first = i;
		}
	}
	if (first != SIZE_MAX && addr)
		*addr = lb->addrs[first];
	return first != SIZE_MAX;
}
