/*
 * btree2_enc.c - a whole version 2 B-tree encoded from its sorted records
 * (spec III.A.2 "Version 2 B-trees": the header BTHD, internal nodes BTIN
 * and leaves BTLF), the mirror of btree2.c's decoders. For writers that
 * replace a small tree rather than change it in place (dense link and
 * attribute storage, write/dense_write.c): one image, at an address the
 * caller gives, that no reader sees until something points at it.
 *
 * The tree has the least depth that holds the records; each internal node
 * spreads its records evenly over the fewest children that hold them, so
 * every node is at least about half full, as libhdf5 keeps its nodes
 * (H5B2__split1 and the merges of H5B2__remove), and libhdf5 can go on
 * inserting and removing in it. Each node takes node_size bytes, as
 * libhdf5 allocates them (H5B2__create_leaf, H5B2__create_internal).
 */
#include "btree2_int.h"
#include "base.h"
#include "file.h"
#include "btree2.h"

int h5_bt2_params_get(h5_bt2_params *p, const h5_bt2 *bt)
{
	const bt2_hdr *h = bt->hdr;

	*p = (h5_bt2_params){ .type = h->type, .node_size = h->node_size, .rec_size = h->rec_size,
			      .split_pct = h->split_pct, .merge_pct = h->merge_pct };
	return 0;
}

typedef struct b2e {
	bt2_hdr h;
	const uint8_t *recs;
	uint64_t base;
	uint8_t *img;
	size_t len, cap;
} b2e;

/* node_size zeroed bytes at the image's end: *addr in the file. */
static int node_room(uint8_t **p, uint64_t *addr, b2e *e)
{
	size_t want = e->len + e->h.node_size;

	if (want > e->cap) {
		size_t cap = e->cap ? e->cap * 2 : 4096;
		uint8_t *n;

		while (cap < want)
			cap *= 2;
		n = realloc(e->img, cap);
		if (!n)
			return h5_err_set(H5_ERR_NOMEM, "out of memory encoding a v2 B-tree");
		e->img = n;
		e->cap = cap;
	}
	*p = e->img + e->len;
	memset(*p, 0, e->h.node_size);
	*addr = e->base + e->len;
	e->len = want;
	return 0;
}

/* Records [first, first + n) as a subtree of the given depth: *addr, and
 * the record count of its top node. Children first, so a node's pointers
 * are known when it is encoded. */
static int build(uint64_t *addr, unsigned *nrec, b2e *e, unsigned depth, size_t first, size_t n)
{
	const bt2_hdr *h = &e->h;
	uint64_t below, *caddr = NULL;
	unsigned *cnrec = NULL;
	size_t *csize = NULL, k, q, at;
	uint8_t *p, *node;
	int rc = 0;

	if (depth == 0) {
		if (n > h->lv[0].max_nrec)
			return h5_err_set(H5_ERR_INVAL, "v2 B-tree encoder: %zu records overflow a leaf", n);
		rc = node_room(&node, addr, e);
		if (rc < 0)
			return rc;
		p = h5_bt2_node_begin(node, h, 0);
		memcpy(p, e->recs + first * h->rec_size, n * h->rec_size);
		h5_bt2_node_end(node, p + n * h->rec_size);
		*nrec = (unsigned)n;
		return 0;
	}
	/* the fewest children (k, with k - 1 records between them) holding n */
	below = h->lv[depth - 1].cum_max_nrec;
	k = (size_t)((n + 1 + below) / (below + 1));
	if (k < 2)
		k = 2;
	if (k > (size_t)h->lv[depth].max_nrec + 1 || n < k - 1)
		return h5_err_set(H5_ERR_INVAL, "v2 B-tree encoder: %zu records do not fit depth %u", n, depth);
	caddr = malloc(k * sizeof(*caddr));
	cnrec = malloc(k * sizeof(*cnrec));
	csize = malloc(k * sizeof(*csize));
	if (!caddr || !cnrec || !csize) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory encoding a v2 B-tree");
		goto out;
	}
	q = n - (k - 1);
	at = first;
	for (size_t i = 0; i < k; i++) {
		csize[i] = q / k + (i < q % k);
		rc = build(&caddr[i], &cnrec[i], e, depth - 1, at, csize[i]);
		if (rc < 0)
			goto out;
		at += csize[i] + 1;     /* the separator after child i */
	}
	rc = node_room(&node, addr, e);
	if (rc < 0)
		goto out;
	p = h5_bt2_node_begin(node, h, depth);
	at = first;
	for (size_t i = 0; i + 1 < k; i++) {
		at += csize[i];
		memcpy(p, e->recs + at * h->rec_size, h->rec_size);
		p += h->rec_size;
		at++;
	}
	for (size_t i = 0; i < k; i++)
		p = h5_bt2_ptr_encode(p, h, depth, caddr[i], cnrec[i], csize[i]);
	h5_bt2_node_end(node, p);
	*nrec = (unsigned)(k - 1);
out:
	free(caddr);
	free(cnrec);
	free(csize);
	return rc;
}

int h5_bt2_build(uint8_t **img, size_t *len, const h5_bt2_params *p, const h5_fmt *fmt, uint64_t base,
		 const uint8_t *recs, size_t n)
{
	b2e e = { .recs = recs, .base = base };
	size_t hsz = h5_bt2_hdr_size(fmt);
	unsigned root_nrec = 0, depth = 0;
	int rc;

	*img = NULL;
	*len = 0;
	e.h = (bt2_hdr){ .addr = base, .type = p->type, .node_size = p->node_size, .rec_size = p->rec_size,
			 .split_pct = p->split_pct, .merge_pct = p->merge_pct, .fmt = *fmt, .depth = H5_MAX_BTREE_DEPTH };
	rc = h5_bt2_init_levels(&e.h);
	if (rc < 0)
		return rc;
	while (depth < H5_MAX_BTREE_DEPTH && e.h.lv[depth].cum_max_nrec < n)
		depth++;
	if (e.h.lv[depth].cum_max_nrec < n)
		return h5_err_set(H5_ERR_LIMIT, "v2 B-tree encoder: %zu records are too many", n);
	/* the header first, the nodes after it */
	e.cap = hsz + 4096;
	e.img = calloc(1, e.cap);
	if (!e.img)
		return h5_err_set(H5_ERR_NOMEM, "out of memory encoding a v2 B-tree");
	e.len = hsz;
	e.h.root_addr = H5_ADDR_UNDEF;
	if (n > 0) {
		rc = build(&e.h.root_addr, &root_nrec, &e, depth, 0, n);
		if (rc < 0)
			goto out;
	}
	e.h.depth = (uint16_t)depth;
	e.h.root_nrec = (uint16_t)root_nrec;
	e.h.total_nrec = n;
	h5_bt2_hdr_encode(e.img, &e.h);
	*img = e.img;
	*len = e.len;
	e.img = NULL;
out:
	free(e.img);
	return rc;
}
