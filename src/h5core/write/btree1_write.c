/*
 * btree1_write.c - the appending writer of version 1 B-tree chunk indexes
 * (spec III.A.1 "Version 1 B-trees", node type 1; layout messages v1-v3).
 *
 * The nodes an append changes are loaded into memory (root to leaf, on
 * demand), changed there with libhdf5's rules (H5B.c H5B__insert_helper,
 * H5B__split; H5Dbtree.c H5D__btree_insert, H5D__btree_new_node):
 *  - key i of a leaf is the left key of chunk i (chunk size, filter mask,
 *    offsets); key n, the right key, is "the next chunk": for the last chunk
 *    of the tree its offsets plus one chunk in every dimension, size 0;
 *  - key i of an internal node is key 0 of child i's subtree, key n the
 *    right key of its last child;
 *  - a full node (2K entries) splits before an insert: the rightmost node of
 *    a level keeps 90% of its entries, the leftmost 10%, others half.
 * Then every changed node is written as a NEW node past the old end of
 * file (copy-on-write, doc/APPEND.md), up to a new root; the caller
 * switches the layout message to the new root. libhdf5 instead keeps the
 * root in place; either is valid, the layout holds the root's address.
 * Sibling pointers of unchanged neighbours of copied nodes are patched in
 * place after the switch (h5_bt1w_patch): readers never follow them, and
 * both the old and the new target are intact nodes.
 * A punched chunk's record is taken out of its leaf (h5_bt1w_remove,
 * issue 65); a node it empties leaves its parent (and a parent so emptied
 * its own), its neighbours rewritten with sibling pointers past it, as
 * libhdf5's H5B__remove_helper takes an emptied node out (issue 81: a
 * truncate of 200,000 one-row chunks kept every leaf, 7.5 MB, and wrote
 * the fill value into the last chunk of each instead of removing it).
 */
#include <limits.h>

#include "base.h"
#include "ordered.h"
#include "rd.h"
#include "cache.h"
#include "file.h"
#include "btree1.h"
#include "chunk_rec.h"
#include "btree1_write.h"
#include "space.h"
#include "cidx_write.h"
#include "layout.h"
#include "dataset.h"

typedef struct bw_node {
	uint64_t addr;          /* on disk; UNDEF for a node made by a split */
	uint64_t naddr;         /* new address (dirty nodes, after h5_bt1w_write) */
	unsigned level, n, pos; /* pos: index in parent */
	bool dirty;
	bool dropped;           /* taken out of the tree (emptied): never written, its old copy freed */
	struct bw_node *parent;
	uint32_t *ksize, *kmask;        /* n + 1 keys */
	uint64_t *kscaled;              /* (n + 1) * nd scaled offsets */
	uint64_t *child;                /* leaf: chunk address; internal: node address */
	struct bw_node **kid;           /* internal: loaded children (or NULL) */
	struct bw_node *all_next;       /* every node of the writer, for freeing */
} bw_node;

typedef struct bw_patch {
	uint64_t addr;          /* the field */
	uint64_t val;
} bw_patch;

struct h5_bt1w {
	h5_file *f;
	unsigned nd;            /* rank + 1 (element size dimension) */
	uint64_t dim[H5_MAX_RANK + 1];
	unsigned twok;
	bw_node *root;
	bw_node *all;
	bool changed;
	uint64_t root_addr;     /* on disk before, new after write */
	bw_patch *patch;
	size_t npatch, cpatch;
};

/* III.A.1: libhdf5 allocates every node for 2K entries and 2K + 1 keys. */
static size_t node_size(const h5_fmt *fmt, unsigned nd, unsigned twok)
{
	return 8 + 2 * (size_t)fmt->sizeof_addr + (size_t)twok * fmt->sizeof_addr +
	       ((size_t)twok + 1) * (8 + 8 * (size_t)nd);
}

static int key_cmp(const h5_bt1w *w, const uint64_t *a, const uint64_t *b)
{
	for (unsigned i = 0; i < w->nd; i++)
		if (a[i] != b[i])
			return a[i] < b[i] ? -1 : 1;
	return 0;
}

static uint64_t *kat(const h5_bt1w *w, const bw_node *x, unsigned i)
{
	return x->kscaled + (size_t)i * w->nd;
}

static bw_node *node_new(h5_bt1w *w, unsigned level)
{
	bw_node *x = calloc(1, sizeof(*x));
	size_t k = (size_t)w->twok + 2;

	if (!x)
		return NULL;
	x->ksize = calloc(k, sizeof(*x->ksize));
	x->kmask = calloc(k, sizeof(*x->kmask));
	x->kscaled = calloc(k * w->nd, sizeof(*x->kscaled));
	x->child = calloc(k, sizeof(*x->child));
	x->kid = calloc(k, sizeof(*x->kid));
	x->all_next = w->all;
	w->all = x;
	if (!x->ksize || !x->kmask || !x->kscaled || !x->child || !x->kid)
		return NULL;
	x->addr = x->naddr = H5_ADDR_UNDEF;
	x->level = level;
	return x;
}

static void key_copy(h5_bt1w *w, bw_node *dst, unsigned di, const bw_node *src, unsigned si)
{
	dst->ksize[di] = src->ksize[si];
	dst->kmask[di] = src->kmask[si];
	memcpy(kat(w, dst, di), kat(w, src, si), w->nd * sizeof(uint64_t));
}

/* Load node `addr` expected at `level` (UINT_MAX: any, for the root). */
static int node_load(bw_node **out, h5_bt1w *w, uint64_t addr, unsigned level)
{
	h5_bt1_node *b = NULL;
	bw_node *x;
	int rc;

	*out = NULL;
	rc = h5_bt1_get(&b, w->f, addr, w->nd);
	if (rc < 0)
		return rc;
	if ((level != UINT_MAX && b->level != level) || b->n > w->twok || (b->n == 0 && b->level > 0)) {
		rc = h5_err_set(H5_ERR_FORMAT, "v1 B-tree node at 0x%llx: level %u, %u entries unexpected",
				(unsigned long long)addr, b->level, b->n);
		goto out;
	}
	x = node_new(w, b->level);
	if (!x) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
		goto out;
	}
	x->addr = addr;
	x->n = b->n;
	for (unsigned i = 0; i <= b->n; i++) {
		x->ksize[i] = (uint32_t)b->chunk_size[i];
		x->kmask[i] = b->filter_mask[i];
		for (unsigned d = 0; d < w->nd; d++) {
			uint64_t off = b->offsets[(size_t)i * w->nd + d];

			if (off % w->dim[d]) {
				rc = h5_err_set(H5_ERR_FORMAT, "v1 B-tree node at 0x%llx: key %u offset %llu not on a chunk",
						(unsigned long long)addr, i, (unsigned long long)off);
				goto out;
			}
			kat(w, x, i)[d] = off / w->dim[d];
		}
		if (i < b->n)
			x->child[i] = b->child[i];
	}
	*out = x;
out:
	h5_bt1_release(w->f, b);
	return rc;
}

/* Child i of internal node x, loaded. */
static int kid_get(bw_node **out, h5_bt1w *w, bw_node *x, unsigned i)
{
	int rc;

	if (!x->kid[i]) {
		rc = node_load(&x->kid[i], w, x->child[i], x->level - 1);
		if (rc < 0)
			return rc;
		x->kid[i]->parent = x;
		x->kid[i]->pos = i;
	}
	*out = x->kid[i];
	return 0;
}

/* The node to the right (dir 1) or left (dir -1) of x on its level. */
static int neighbour(bw_node **out, h5_bt1w *w, bw_node *x, int dir)
{
	bw_node *p = x->parent, *pn;
	int rc;

	*out = NULL;
	if (!p)
		return 0;
	if (dir > 0 ? x->pos + 1 < p->n : x->pos > 0)
		return kid_get(out, w, p, dir > 0 ? x->pos + 1 : x->pos - 1);
	rc = neighbour(&pn, w, p, dir);
	if (rc < 0 || !pn)
		return rc;
	if (pn->n == 0)
		return h5_err_set(H5_ERR_FORMAT, "v1 B-tree: empty internal node");
	return kid_get(out, w, pn, dir > 0 ? 0 : pn->n - 1);
}

/* x changed: it and its ancestors are rewritten; the parents' keys follow
 * x's left key, and the right key when x is the last child. */
static void mark(h5_bt1w *w, bw_node *x)
{
	w->changed = true;
	for (; x; x = x->parent) {
		bw_node *p = x->parent;

		x->dirty = true;
		if (!p)
			break;
		key_copy(w, p, x->pos, x, 0);
		if (x->pos + 1 == p->n)
			key_copy(w, p, p->n, x, x->n);
	}
}

/* Open a gap at position i (keys i.. and children i.. move right; the
 * right key n too: a gap before the end keeps it). */
static void open_gap(h5_bt1w *w, bw_node *x, unsigned i)
{
	for (unsigned j = x->n + 1; j > i; j--)
		key_copy(w, x, j, x, j - 1);
	for (unsigned j = x->n; j > i; j--) {
		x->child[j] = x->child[j - 1];
		x->kid[j] = x->kid[j - 1];
		if (x->kid[j])
			x->kid[j]->pos = j;
	}
	x->n++;
}

static int split(bw_node **right, h5_bt1w *w, bw_node *x, unsigned at);

/* Insert child y (a new node of x's level - 1) right of child `at` of x. */
static int insert_kid(h5_bt1w *w, bw_node *x, unsigned at, bw_node *y)
{
	unsigned i = at + 1;
	int rc;

	if (x->n >= w->twok) {
		bw_node *r;

		rc = split(&r, w, x, i);
		if (rc < 0)
			return rc;
		if (i > x->n) {
			i -= x->n;
			x = r;
		}
	}
	open_gap(w, x, i);
	key_copy(w, x, i, y, 0);
	x->child[i] = H5_ADDR_UNDEF;
	x->kid[i] = y;
	y->parent = x;
	y->pos = i;
	mark(w, y);
	return 0;
}

/* Split full node x before inserting at position `at`: x keeps nleft
 * entries, a new node right of it takes the rest (H5B__split's ratios). */
static int split(bw_node **right, h5_bt1w *w, bw_node *x, unsigned at)
{
	bw_node *l, *r, *y;
	unsigned nleft, nright;
	int rc;

	*right = NULL;
	rc = neighbour(&r, w, x, 1);
	if (rc == 0)
		rc = neighbour(&l, w, x, -1);
	if (rc < 0)
		return rc;
	if (!r)
		nleft = (unsigned)(w->twok * 0.9);
	else if (!l)
		nleft = (unsigned)(w->twok * 0.1);
	else
		nleft = w->twok / 2;
	if (at < nleft && nleft == w->twok)
		nleft--;
	else if (at >= nleft && nleft == 0)
		nleft++;
	nright = x->n - nleft;
	y = node_new(w, x->level);
	if (!y)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	for (unsigned j = 0; j <= nright; j++)
		key_copy(w, y, j, x, nleft + j);
	for (unsigned j = 0; j < nright; j++) {
		y->child[j] = x->child[nleft + j];
		y->kid[j] = x->kid[nleft + j];
		if (y->kid[j]) {
			y->kid[j]->parent = y;
			y->kid[j]->pos = j;
		}
		x->kid[nleft + j] = NULL;
	}
	y->n = nright;
	x->n = nleft;
	if (!x->parent) {
		/* a new root above x and y */
		bw_node *nr = node_new(w, x->level + 1);

		if (!nr)
			return h5_err_set(H5_ERR_NOMEM, "out of memory");
		nr->n = 1;
		nr->child[0] = x->addr;
		nr->kid[0] = x;
		key_copy(w, nr, 0, x, 0);
		key_copy(w, nr, 1, y, nright);
		x->parent = nr;
		x->pos = 0;
		w->root = nr;
	}
	mark(w, x);
	rc = insert_kid(w, x->parent, x->pos, y);
	*right = y;
	return rc;
}

int h5_bt1w_open(h5_bt1w **out, h5_file *f, uint64_t root, unsigned rank, const uint64_t *chunk,
		 uint32_t esize)
{
	h5_bt1w *w;
	int rc = 0;

	*out = NULL;
	if (rank == 0 || rank > H5_MAX_RANK || esize == 0)
		return h5_err_set(H5_ERR_INVAL, "v1 B-tree writer: rank %u, element size %u", rank, esize);
	w = calloc(1, sizeof(*w));
	if (!w)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	w->f = f;
	w->nd = rank + 1;
	for (unsigned i = 0; i < rank; i++)
		w->dim[i] = chunk[i];
	w->dim[rank] = esize;
	/* III.A.1: a chunk node holds up to 2K entries, K the superblock's
	 * "Indexed Storage Internal Node K" */
	w->twok = 2u * (f->chunk_btree_k ? f->chunk_btree_k : 32);
	w->root_addr = root;
	if (h5_addr_defined(root))
		rc = node_load(&w->root, w, root, UINT_MAX);
	if (rc < 0) {
		h5_bt1w_free(w);
		return rc;
	}
	*out = w;
	return 0;
}

/* The leaf entry for key k: *out the leaf (loaded down from the root),
 * *at the last entry whose left key is <= k (the first if none). */
static int descend(bw_node **out, unsigned *at, h5_bt1w *w, const uint64_t *k)
{
	bw_node *x = w->root;
	unsigned i;
	int rc;

	for (;;) {
		for (i = x->n; i > 0 && key_cmp(w, kat(w, x, i - 1), k) > 0; i--)
			;
		i = i ? i - 1 : 0;
		if (x->level == 0)
			break;
		rc = kid_get(&x, w, x, i);
		if (rc < 0)
			return rc;
	}
	*out = x;
	*at = i;
	return 0;
}

/* Set the record of the chunk at scaled offsets sc[0..rank-1]: replace it
 * when present, else insert it (appends: at the right end). */
int h5_bt1w_set(h5_bt1w *w, const uint64_t *sc, const h5_chunk_rec *rec)
{
	uint64_t k[H5_MAX_RANK + 1];
	bw_node *x;
	unsigned i = 0;
	bool right_end = true;
	int rc;

	if (rec->size == 0 || rec->size > UINT32_MAX)
		return h5_err_set(H5_ERR_LIMIT, "chunk of %llu bytes cannot be indexed by a v1 B-tree",
				  (unsigned long long)rec->size);
	memcpy(k, sc, (w->nd - 1) * sizeof(uint64_t));
	k[w->nd - 1] = 0;
	if (!w->root) {
		x = node_new(w, 0);
		if (!x)
			return h5_err_set(H5_ERR_NOMEM, "out of memory");
		w->root = x;
		x->n = 1;
		memcpy(kat(w, x, 0), k, sizeof(uint64_t) * w->nd);
		goto fill;
	}
	rc = descend(&x, &i, w, k);
	if (rc < 0)
		return rc;
	if (x->n && key_cmp(w, kat(w, x, i), k) == 0) {
		memcpy(kat(w, x, i), k, sizeof(uint64_t) * w->nd);
		goto set;
	}
	if (x->n && key_cmp(w, kat(w, x, i), k) < 0)
		i++;
	if (x->n >= w->twok) {
		bw_node *r;

		rc = split(&r, w, x, i);
		if (rc < 0)
			return rc;
		if (i > x->n) {
			i -= x->n;
			x = r;
		}
	}
	open_gap(w, x, i);
	memcpy(kat(w, x, i), k, sizeof(uint64_t) * w->nd);
	/* H5B__insert_helper: a key at or past the right key goes right-most */
	right_end = i + 1 == x->n && key_cmp(w, k, kat(w, x, x->n)) >= 0;
fill:
	if (right_end) {
		/* H5D__btree_new_node: the right key is the next chunk, size 0 */
		for (unsigned d = 0; d < w->nd; d++)
			kat(w, x, i + 1)[d] = k[d] + 1;
		x->ksize[i + 1] = 0;
		x->kmask[i + 1] = 0;
	}
set:
	x->ksize[i] = (uint32_t)rec->size;
	x->kmask[i] = rec->filter_mask;
	x->child[i] = rec->addr;
	mark(w, x);
	return 0;
}

/* Close entry i's place (keys i+1.. and children i+1.. move left; the
 * right key n too). */
static void close_gap(h5_bt1w *w, bw_node *x, unsigned i)
{
	for (unsigned j = i; j < x->n; j++)
		key_copy(w, x, j, x, j + 1);
	for (unsigned j = i; j + 1 < x->n; j++) {
		x->child[j] = x->child[j + 1];
		x->kid[j] = x->kid[j + 1];
		if (x->kid[j])
			x->kid[j]->pos = j;
	}
	x->n--;
}

/* Node x (not the root), emptied, out of the tree: its neighbours on its
 * level rewritten (their sibling pointers then skip it), its parent's
 * entry closed, and a parent so emptied out too. A root left with no
 * entry becomes an empty leaf (as a new chunked dataset's). */
static int drop_node(h5_bt1w *w, bw_node *x)
{
	bw_node *l = NULL, *r = NULL, *p = x->parent;
	int rc = neighbour(&l, w, x, -1);

	if (rc == 0)
		rc = neighbour(&r, w, x, 1);
	if (rc < 0)
		return rc;
	close_gap(w, p, x->pos);
	x->dropped = true;
	x->dirty = false;
	x->parent = NULL;
	if (l)
		mark(w, l);
	if (r)
		mark(w, r);
	if (p->n == 0 && p != w->root)
		return drop_node(w, p);
	if (p->n == 0)
		p->level = 0;   /* the root, empty: a leaf */
	mark(w, p);
	return 0;
}

int h5_bt1w_remove(h5_bt1w *w, const uint64_t *sc)
{
	uint64_t k[H5_MAX_RANK + 1];
	bw_node *x;
	unsigned i;
	int rc;

	if (!w->root)
		return 0;
	memcpy(k, sc, (w->nd - 1) * sizeof(uint64_t));
	k[w->nd - 1] = 0;
	rc = descend(&x, &i, w, k);
	if (rc < 0)
		return rc;
	if (!x->n || key_cmp(w, kat(w, x, i), k) != 0)
		return 0;       /* not stored */
	/* (a gap, as a chunk never written leaves: H5D__btree_found looks
	 * for the exact left key; the parents' keys follow key 0, mark) */
	close_gap(w, x, i);
	if (x->n == 0 && x != w->root)
		return drop_node(w, x);
	mark(w, x);
	return 0;
}

static uint64_t final_addr(const bw_node *x)
{
	return x->dirty ? x->naddr : x->addr;
}

static int add_patch(h5_bt1w *w, uint64_t addr, uint64_t val)
{
	if (w->npatch == w->cpatch) {
		size_t nc = w->cpatch ? 2 * w->cpatch : 8;
		bw_patch *p = realloc(w->patch, nc * sizeof(*p));

		if (!p)
			return h5_err_set(H5_ERR_NOMEM, "out of memory");
		w->patch = p;
		w->cpatch = nc;
	}
	w->patch[w->npatch].addr = addr;
	w->patch[w->npatch++].val = val;
	return 0;
}

static void encode(h5_bt1w *w, uint8_t *p, const bw_node *x, uint64_t left, uint64_t right)
{
	const h5_fmt *fmt = &w->f->fmt;

	memcpy(p, "TREE", 4);
	p[4] = 1;
	p[5] = (uint8_t)x->level;
	h5_le_encode(p + 6, x->n, 2);
	p += 8;
	h5_le_encode(p, left, fmt->sizeof_addr);
	p += fmt->sizeof_addr;
	h5_le_encode(p, right, fmt->sizeof_addr);
	p += fmt->sizeof_addr;
	for (unsigned i = 0; i <= x->n; i++) {
		h5_le_encode(p, x->ksize[i], 4);
		h5_le_encode(p + 4, x->kmask[i], 4);
		p += 8;
		for (unsigned d = 0; d < w->nd; d++, p += 8)
			h5_le_encode(p, kat(w, x, i)[d] * w->dim[d], 8);
		if (i < x->n) {
			h5_le_encode(p, x->level ? (x->kid[i] ? final_addr(x->kid[i]) : x->child[i]) : x->child[i],
				     fmt->sizeof_addr);
			p += fmt->sizeof_addr;
		}
	}
}

/* Write every changed node as a new node in new space (space.c); collect
 * the in-place sibling pointer patches for h5_bt1w_patch. */
int h5_bt1w_write(h5_bt1w *w)
{
	size_t nsz = node_size(&w->f->fmt, w->nd, w->twok), cnt = 0;
	uint64_t start, a;
	uint8_t *buf = NULL;
	unsigned sa = w->f->fmt.sizeof_addr;
	int rc = 0;

	if (!w->changed)
		return 0;
	for (bw_node *x = w->all; x; x = x->all_next)
		if (x->dirty)
			cnt++;
	rc = h5_space_take(&start, w->f, (uint64_t)cnt * nsz);  /* written whole below */
	if (rc < 0)
		return rc;
	a = start;
	for (bw_node *x = w->all; x; x = x->all_next)
		if (x->dirty) {
			x->naddr = a;
			a += nsz;
		}
	buf = calloc(cnt, nsz);
	if (!buf)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	/* neighbours are loaded (and may be added to w->all, at its head) while
	 * walking: they are clean, so the walk over dirty nodes stays valid */
	for (bw_node *x = w->all; x; x = x->all_next) {
		bw_node *l = NULL, *r = NULL;

		if (!x->dirty)
			continue;
		rc = neighbour(&l, w, x, -1);
		if (rc == 0)
			rc = neighbour(&r, w, x, 1);
		if (rc < 0)
			goto out;
		if (l && !l->dirty)
			rc = add_patch(w, l->addr + 8 + sa, x->naddr);
		if (rc == 0 && r && !r->dirty)
			rc = add_patch(w, r->addr + 8, x->naddr);
		if (rc < 0)
			goto out;
		encode(w, buf + (x->naddr - start), x, l ? final_addr(l) : H5_ADDR_UNDEF,
		       r ? final_addr(r) : H5_ADDR_UNDEF);
	}
	rc = h5_file_write(w->f, start, buf, cnt * nsz);
	if (rc < 0)
		goto out;
	w->root_addr = w->root->naddr;
out:
	free(buf);
	return rc;
}

uint64_t h5_bt1w_root(const h5_bt1w *w)
{
	return w->root_addr;
}

/* After the switch: unchanged neighbours of copied nodes point at the
 * copies (libhdf5 follows sibling pointers when it splits a node). */
int h5_bt1w_patch(h5_bt1w *w)
{
	uint8_t v[8];
	int rc;

	for (size_t i = 0; i < w->npatch; i++) {
		h5_le_encode(v, w->patch[i].val, w->f->fmt.sizeof_addr);
		rc = h5_file_write_inplace(w->f, w->patch[i].addr, v, w->f->fmt.sizeof_addr);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Cached copies of nodes rewritten in place go. */
void h5_bt1w_invalidate(h5_bt1w *w)
{
	for (bw_node *x = w->all; x; x = x->all_next)
		if (h5_addr_defined(x->addr))
			h5_cache_invalidate(w->f->meta, H5_CK_BT1, x->addr);
}

/* After the commit: the nodes copied are referenced by nothing (their
 * neighbours' sibling pointers were patched before the commit's last
 * write, h5_bt1w_patch); they go to `to`. */
void h5_bt1w_freed(h5_bt1w *w, h5_freesp *to, uint64_t ticket)
{
	size_t nsz = node_size(&w->f->fmt, w->nd, w->twok);

	for (bw_node *x = w->all; x; x = x->all_next)
		if (h5_addr_defined(x->addr) && (x->dropped || (x->dirty && h5_addr_defined(x->naddr) &&
								 x->naddr != x->addr)))
			if (h5_freesp_add(to, x->addr, nsz, ticket) < 0)
				h5_err_clear();         /* leaked */
}

void h5_bt1w_free(h5_bt1w *w)
{
	bw_node *x, *nx;

	if (!w)
		return;
	for (x = w->all; x; x = nx) {
		nx = x->all_next;
		free(x->ksize);
		free(x->kmask);
		free(x->kscaled);
		free(x->child);
		free(x->kid);
		free(x);
	}
	free(w->patch);
	free(w);
}

/* ---- this writer as an entry of the writers' table (cidx_write.h) ---- */

typedef struct bt1w_ctx {
	h5_bt1w *w;
	uint64_t chunk_bytes;   /* unfiltered chunks: the size their keys hold */
	bool filtered;
} bt1w_ctx;

static int bt1w_open(void **out, h5_file *f, const h5_dataset *d, uint64_t idx_addr)
{
	bt1w_ctx *c = calloc(1, sizeof(*c));
	const h5_layout *l = &d->layout;
	int rc;

	*out = NULL;
	if (!c)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	c->chunk_bytes = d->chunk_bytes;
	c->filtered = d->pline.n != 0;
	rc = h5_bt1w_open(&c->w, f, idx_addr, l->ndims, l->chunk,
			  l->chunk_elem_size ? l->chunk_elem_size : (uint32_t)d->dtype->size);
	if (rc < 0) {
		free(c);
		return rc;
	}
	*out = c;
	return 0;
}

static int bt1w_set(void *w, const uint64_t *scaled, uint64_t idx, const h5_chunk_rec *rec)
{
	bt1w_ctx *c = w;
	h5_chunk_rec r = *rec;

	(void)idx;
	if (!h5_addr_defined(rec->addr))        /* a punched chunk */
		return h5_bt1w_remove(c->w, scaled);
	/* unfiltered chunks come without their size: a v1 B-tree key holds it */
	if (!c->filtered)
		r.size = c->chunk_bytes;
	return h5_bt1w_set(c->w, scaled, &r);
}

static int bt1w_write(void *w) { return h5_bt1w_write(((bt1w_ctx *)w)->w); }
static uint64_t bt1w_addr(void *w) { return h5_bt1w_root(((bt1w_ctx *)w)->w); }
/* every change copies the root: the layout message always switches */
static bool bt1w_addr_is_new(void *w) { (void)w; return true; }
static int bt1w_switched(void *w) { return h5_bt1w_patch(((bt1w_ctx *)w)->w); }
static int bt1w_commit(void *w) { (void)w; return 0; }
static void bt1w_invalidate(void *w) { h5_bt1w_invalidate(((bt1w_ctx *)w)->w); }
static void bt1w_freed(void *w, h5_freesp *to, uint64_t ticket) { h5_bt1w_freed(((bt1w_ctx *)w)->w, to, ticket); }

static void bt1w_free(void *w)
{
	bt1w_ctx *c = w;

	if (!c)
		return;
	h5_bt1w_free(c->w);
	free(c);
}

const h5_cidx_write_ops h5_cidx_write_btree1 = {
	.open = bt1w_open,
	.set = bt1w_set,
	.write = bt1w_write,
	.addr = bt1w_addr,
	.addr_is_new = bt1w_addr_is_new,
	.addr_field = h5_layout_bt1_addr_field,
	.switched = bt1w_switched,
	.commit = bt1w_commit,
	.freed = bt1w_freed,
	.invalidate = bt1w_invalidate,
	.free = bt1w_free,
};
