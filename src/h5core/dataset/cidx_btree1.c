/* cidx_btree1.c - the version 1 B-tree chunk index (III.A.1, node type 1;
 * libhdf5's H5Dbtree.c). */
#include "cidx.h"
#include "base.h"
#include "file.h"
#include "layout.h"
#include "btree1.h"
#include "chunk_rec.h"
#include "dataset.h"

static int bt1_open(h5_chunk_index *ci, int nunlim, int unlim)
{
	(void)ci;
	(void)nunlim;
	(void)unlim;
	return 0;
}

/* III.A.1: the key offsets are element offsets; libhdf5 compares them
 * scaled by the chunk dimensions (H5D__btree_decode_key), the trailing one
 * by the element size. */
static uint64_t bt1_key_scaled(const h5_chunk_index *ci, const h5_bt1_node *n, unsigned key, unsigned dim)
{
	uint64_t v = n->offsets[(size_t)key * n->ndims + dim];

	return v / (dim < ci->rank ? ci->chunk[dim] : ci->bt1_elem);
}

static int bt1_cmp_key(const h5_chunk_index *ci, const uint64_t *scaled, const h5_bt1_node *n, unsigned key)
{
	for (unsigned i = 0; i <= ci->rank; i++) {
		uint64_t a = i < ci->rank ? scaled[i] : 0, b = bt1_key_scaled(ci, n, key, i);

		if (a != b)
			return a < b ? -1 : 1;
	}
	return 0;
}

/* H5B_find with H5D__btree_cmp3: child i covers key[i] <= chunk < key[i+1]. */
static int bt1_lookup(h5_chunk_rec *out, h5_chunk_index *ci, const uint64_t *scaled)
{
	uint64_t addr = ci->d->layout.idx_addr;
	int want_level = -1;
	int rc = 0;

	for (unsigned depth = 0;; depth++) {
		h5_bt1_node *n;
		unsigned lt = 0, rt, idx = 0;
		int cmp = 1;

		if (depth > H5_MAX_BTREE_DEPTH)
			return h5_err_set(H5_ERR_LOOP, "v1 B-tree at 0x%llx deeper than %d levels",
					  (unsigned long long)ci->d->layout.idx_addr, H5_MAX_BTREE_DEPTH);
		rc = h5_bt1_get(&n, ci->f, addr, ci->rank + 1);
		if (rc < 0)
			return rc;
		if (want_level >= 0 && n->level != want_level) {
			rc = h5_err_set(H5_ERR_FORMAT, "v1 B-tree node at 0x%llx: level %u, expected %d",
					(unsigned long long)addr, n->level, want_level);
			h5_bt1_release(ci->f, n);
			return rc;
		}
		rt = n->n;
		while (lt < rt && cmp) {
			idx = (lt + rt) / 2;
			if (bt1_cmp_key(ci, scaled, n, idx + 1) >= 0)
				cmp = 1;
			else if (bt1_cmp_key(ci, scaled, n, idx) < 0)
				cmp = -1;
			else
				cmp = 0;
			if (cmp < 0)
				rt = idx;
			else
				lt = idx + 1;
		}
		if (cmp != 0) {
			h5_bt1_release(ci->f, n);
			return 0; /* no child covers it: never written */
		}
		if (n->level == 0) {
			/* H5D__btree_found: only the chunk whose left key it is */
			if (bt1_cmp_key(ci, scaled, n, idx) == 0) {
				out->addr = n->child[idx];
				out->size = n->chunk_size[idx];
				out->filter_mask = n->filter_mask[idx];
			}
			h5_bt1_release(ci->f, n);
			return 0;
		}
		addr = n->child[idx];
		want_level = n->level - 1;
		h5_bt1_release(ci->f, n);
	}
}


/* Every node is visited once in a tree; a hostile DAG could revisit nodes
 * exponentially often, so visits are bounded by how many nodes fit the file.
 * Leaves hand each chunk's scaled key (its left key) and record to cb. */
struct bt1_walk {
	h5_chunk_index *ci;
	h5_cidx_iter_cb cb;     /* each chunk, or NULL */
	h5_block_cb blk;        /* each node, or NULL */
	void *ud;
	uint64_t budget;
};

static int bt1_walk(struct bt1_walk *w, uint64_t addr, int want_level, unsigned depth)
{
	h5_chunk_index *ci = w->ci;
	h5_bt1_node *n;
	int rc = 0;

	if (depth > H5_MAX_BTREE_DEPTH || w->budget == 0)
		return h5_err_set(H5_ERR_LOOP, "v1 B-tree at 0x%llx: too many nodes visited (loop?)",
				  (unsigned long long)ci->d->layout.idx_addr);
	w->budget--;
	rc = h5_bt1_get(&n, ci->f, addr, ci->rank + 1);
	if (rc < 0)
		return rc;
	if (want_level >= 0 && n->level != want_level) {
		rc = h5_err_set(H5_ERR_FORMAT, "v1 B-tree node at 0x%llx: level %u, expected %d",
				(unsigned long long)addr, n->level, want_level);
	} else {
		if (w->blk)
			rc = w->blk(addr, h5_bt1_node_size(&ci->f->fmt, ci->f->chunk_btree_k, ci->rank + 1), w->ud);
		/* every child node is walked: a remote source fetches them together */
		if (n->level > 0)
			h5_file_prefetch(ci->f, n->child, n->n);
		for (unsigned i = 0; i < n->n && rc == 0; i++) {
			if (n->level > 0) {
				rc = bt1_walk(w, n->child[i], n->level - 1, depth + 1);
			} else if (w->cb) {
				uint64_t scaled[H5_MAX_RANK];
				h5_chunk_rec r = { n->child[i], n->chunk_size[i], n->filter_mask[i] };

				for (unsigned k = 0; k < ci->rank; k++)
					scaled[k] = bt1_key_scaled(ci, n, i, k);
				rc = w->cb(scaled, &r, w->ud);
			}
		}
	}
	h5_bt1_release(ci->f, n);
	return rc;
}

static int bt1_walk_all(h5_chunk_index *ci, h5_cidx_iter_cb cb, h5_block_cb blk, void *ud)
{
	struct bt1_walk w = { ci, cb, blk, ud, h5_file_eof(ci->f) / (8 + 2u * ci->f->fmt.sizeof_addr) + 1 };

	return bt1_walk(&w, ci->d->layout.idx_addr, -1, 0);
}

static int bt1_iterate(h5_chunk_index *ci, h5_cidx_iter_cb cb, void *ud)
{
	return bt1_walk_all(ci, cb, NULL, ud);
}

static int bt1_blocks(h5_chunk_index *ci, h5_block_cb cb, void *ud)
{
	return bt1_walk_all(ci, NULL, cb, ud);
}

/* a v1 B-tree key holds every chunk's size, filtered or not */
static int bt1_sum_cb(const uint64_t *scaled, const h5_chunk_rec *rec, void *ud)
{
	(void)scaled;
	sum_add(ud, rec->size);
	return 0;
}

static int bt1_allocated(uint64_t *out, h5_chunk_index *ci)
{
	struct alloc_sum s = { ci, 0 };
	int rc = bt1_iterate(ci, bt1_sum_cb, &s);

	*out = s.total;
	return rc;
}

const h5_cidx_ops h5_cidx_btree1 = {
	.type = H5_CIDX_BTREE1,
	.name = "btree1",
	.open = bt1_open,
	.lookup = bt1_lookup,
	.allocated = bt1_allocated,
	.iterate = bt1_iterate,
	.blocks = bt1_blocks,
};
