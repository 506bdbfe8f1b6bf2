/*
 * btree2_write.c - the appending writer of version 2 B-tree chunk indexes
 * (spec III.A.2 "Version 2 B-trees", record types 10 and 11: chunks of
 * datasets with several unlimited dimensions; libhdf5's H5B2*.c and
 * H5Dbtree2.c).
 *
 * Records are keyed by their scaled chunk coordinates (H5D__bt2_compare).
 * The nodes an append changes are loaded into memory (root to leaf, on
 * demand) and changed there: a record with the same key is replaced (a
 * rewritten partial chunk), a new one inserted in a leaf; a node holding
 * more than its depth's maximum splits, its middle record moving up to the
 * parent (libhdf5's H5B2__split1), a root split adding a level
 * (H5B2__split_root). An insert at the right end of a level keeps the left
 * node full and starts the right one with the new record, so appended
 * trees stay full instead of half full. Internal nodes carry each child's
 * record count and, above the twig level, its subtree total; these are
 * recomputed for every changed node.
 *
 * Then every changed node is written as a NEW node (node_size bytes, as
 * libhdf5 allocates them) past the old end of file or in space freed
 * (copy-on-write, doc/APPEND.md; the old copies freed after the commit),
 * and the header (root address, root record count, depth,
 * total records, checksum) is rewritten in place in one write: the switch.
 * A dataset without a tree gets a new header, which the layout message is
 * then pointed at.
 */
#include "array.h"
#include "btree2_int.h"
#include "base.h"
#include "rd.h"
#include "checksum.h"
#include "cache.h"
#include "file.h"
#include "layout.h"
#include "btree2.h"
#include "chunk_rec.h"
#include "dataset.h"
#include "btree2_write.h"
#include "space.h"
#include "cidx_write.h"

typedef struct b2_node {
	uint64_t addr;          /* on disk; UNDEF: made by a split */
	uint64_t naddr;         /* new address (dirty nodes, once written) */
	unsigned depth, n, pos; /* pos: index in parent */
	bool dirty;
	struct b2_node *parent;
	uint8_t *recs;          /* up to max + 1 records while splitting */
	uint64_t *child;        /* internal: node address (UNDEF: new node in kid) */
	uint64_t *cnrec, *ctotal; /* as read; kept for children not loaded */
	struct b2_node **kid;
	struct b2_node *all_next;
} b2_node;

struct h5_bt2w {
	h5_file *f;
	h5_bt2 *bt;             /* the tree on disk (NULL: none yet) */
	bt2_hdr h;              /* working header; lv[] grows with the depth */
	bool hdr_new;
	uint64_t old_hdr;       /* a header copied (spanned a page), freed after the commit */
	unsigned rank;
	unsigned client, elmt_size; /* chunk address (+ size + mask) part of a record */
	b2_node *root, *all;
	bool changed;
};

static unsigned max_nrec(const h5_bt2w *w, unsigned depth)
{
	return w->h.lv[depth].max_nrec;
}

static uint8_t *rec_at(const h5_bt2w *w, const b2_node *x, unsigned i)
{
	return x->recs + (size_t)i * w->h.rec_size;
}

/* H5D__bt2_compare: the scaled coordinates at the end of the record. */
static int rec_cmp(const h5_bt2w *w, const uint64_t *key, const uint8_t *rec)
{
	const uint8_t *p = rec + w->h.rec_size - 8u * w->rank;

	for (unsigned i = 0; i < w->rank; i++, p += 8) {
		uint64_t v = h5_le_decode(p, 8);

		if (key[i] != v)
			return key[i] < v ? -1 : 1;
	}
	return 0;
}

static b2_node *node_new(h5_bt2w *w, unsigned depth)
{
	b2_node *x = calloc(1, sizeof(*x));
	/* the widest level bounds every node's arrays, plus one while splitting */
	size_t cap = 2;

	if (!x)
		return NULL;
	for (unsigned d = 0; d <= w->h.depth + 1u && d <= (unsigned)H5_MAX_BTREE_DEPTH; d++)
		if (w->h.lv[d].max_nrec + 2u > cap)
			cap = w->h.lv[d].max_nrec + 2u;
	x->all_next = w->all;
	w->all = x;
	x->recs = calloc(cap, w->h.rec_size);
	x->child = calloc(cap, sizeof(*x->child));
	x->cnrec = calloc(cap, sizeof(*x->cnrec));
	x->ctotal = calloc(cap, sizeof(*x->ctotal));
	x->kid = calloc(cap, sizeof(*x->kid));
	if (!x->recs || !x->child || !x->cnrec || !x->ctotal || !x->kid)
		return NULL;
	x->addr = x->naddr = H5_ADDR_UNDEF;
	x->depth = depth;
	return x;
}

static int node_load(b2_node **out, h5_bt2w *w, uint64_t addr, unsigned depth, unsigned nrec, uint64_t total)
{
	const bt2_node *n;
	h5_cache_ref ref;
	b2_node *x;
	int rc;

	*out = NULL;
	rc = h5_bt2_node_get(&n, &ref, w->bt, addr, depth, nrec, total);
	if (rc < 0)
		return rc;
	x = node_new(w, depth);
	if (!x) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
		goto out;
	}
	x->addr = addr;
	x->n = n->nrec;
	memcpy(x->recs, n->recs, (size_t)n->nrec * w->h.rec_size);
	for (unsigned i = 0; depth > 0 && i <= n->nrec; i++) {
		x->child[i] = n->child[i];
		x->cnrec[i] = n->child_nrec[i];
		x->ctotal[i] = n->child_total[i];
	}
	*out = x;
out:
	h5_cache_release(w->f->meta, &ref);
	return rc;
}

static int kid_get(b2_node **out, h5_bt2w *w, b2_node *x, unsigned i)
{
	int rc;

	if (!x->kid[i]) {
		rc = node_load(&x->kid[i], w, x->child[i], x->depth - 1, (unsigned)x->cnrec[i], x->ctotal[i]);
		if (rc < 0)
			return rc;
		x->kid[i]->parent = x;
		x->kid[i]->pos = i;
	}
	*out = x->kid[i];
	return 0;
}

static void mark(h5_bt2w *w, b2_node *x)
{
	w->changed = true;
	for (; x; x = x->parent)
		x->dirty = true;
}

/* Insert record rec at i of x, with child y right of it (internal). */
static void put(h5_bt2w *w, b2_node *x, unsigned i, const uint8_t *rec, b2_node *y)
{
	size_t rs = w->h.rec_size;

	memmove(rec_at(w, x, i + 1), rec_at(w, x, i), (size_t)(x->n - i) * rs);
	memcpy(rec_at(w, x, i), rec, rs);
	if (x->depth > 0) {
		for (unsigned j = x->n + 1; j > i + 1; j--) {
			x->child[j] = x->child[j - 1];
			x->cnrec[j] = x->cnrec[j - 1];
			x->ctotal[j] = x->ctotal[j - 1];
			x->kid[j] = x->kid[j - 1];
			if (x->kid[j])
				x->kid[j]->pos = j;
		}
		x->child[i + 1] = H5_ADDR_UNDEF;
		x->kid[i + 1] = y;
		y->parent = x;
		y->pos = i + 1;
	}
	x->n++;
}

/* x holds one record too many (the last insert was at `at`): split it. */
static int split(h5_bt2w *w, b2_node *x, unsigned at)
{
	size_t rs = w->h.rec_size;
	unsigned sp, nr;
	uint8_t mid[512];
	b2_node *y, *p;

	if (rs > sizeof(mid))
		return h5_err_set(H5_ERR_UNSUPPORTED, "v2 B-tree records of %zu bytes", rs);
	/* at the right end of the rightmost node: keep x full */
	sp = at + 1 == x->n && (!x->parent || (x->pos == x->parent->n)) ? x->n - 2 : x->n / 2;
	nr = x->n - sp - 1;
	y = node_new(w, x->depth);
	if (!y)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	memcpy(mid, rec_at(w, x, sp), rs);
	memcpy(y->recs, rec_at(w, x, sp + 1), (size_t)nr * rs);
	for (unsigned j = 0; x->depth > 0 && j <= nr; j++) {
		unsigned s = sp + 1 + j;

		y->child[j] = x->child[s];
		y->cnrec[j] = x->cnrec[s];
		y->ctotal[j] = x->ctotal[s];
		y->kid[j] = x->kid[s];
		if (y->kid[j]) {
			y->kid[j]->parent = y;
			y->kid[j]->pos = j;
		}
		x->kid[s] = NULL;
	}
	y->n = nr;
	x->n = sp;
	p = x->parent;
	if (!p) {
		/* H5B2__split_root: a new root one level up */
		if (w->h.depth + 1 > H5_MAX_BTREE_DEPTH)
			return h5_err_set(H5_ERR_LIMIT, "v2 B-tree deeper than %u levels", H5_MAX_BTREE_DEPTH);
		int rc;

		w->h.depth++;
		rc = h5_bt2_init_levels(&w->h);
		if (rc < 0)
			return rc;
		p = node_new(w, x->depth + 1);
		if (!p)
			return h5_err_set(H5_ERR_NOMEM, "out of memory");
		p->child[0] = x->addr;
		p->kid[0] = x;
		x->parent = p;
		x->pos = 0;
		w->root = p;
	}
	put(w, p, x->pos, mid, y);
	mark(w, x);
	mark(w, y);
	if (p->n > max_nrec(w, p->depth))
		return split(w, p, x->pos);
	return 0;
}

static void rec_encode(const h5_bt2w *w, uint8_t *p, const uint64_t *scaled, const h5_chunk_rec *rec)
{
	h5_chunk_elmt_encode(p, &w->f->fmt, w->client, w->elmt_size, rec);
	p += w->elmt_size;
	for (unsigned i = 0; i < w->rank; i++, p += 8)
		h5_le_encode(p, scaled[i], 8);
}

int h5_bt2w_set(h5_bt2w *w, const uint64_t *scaled, const h5_chunk_rec *rec)
{
	uint8_t r[512];
	b2_node *x;
	unsigned i;
	int c = 1, rc;

	if (w->h.rec_size > sizeof(r))
		return h5_err_set(H5_ERR_UNSUPPORTED, "v2 B-tree records of %u bytes", w->h.rec_size);
	rec_encode(w, r, scaled, rec);
	if (!w->root) {
		x = node_new(w, 0);
		if (!x)
			return h5_err_set(H5_ERR_NOMEM, "out of memory");
		w->root = x;
		w->h.depth = 0;
		put(w, x, 0, r, NULL);
		mark(w, x);
		return 0;
	}
	x = w->root;
	for (;;) {
		for (i = 0; i < x->n && (c = rec_cmp(w, scaled, rec_at(w, x, i))) > 0; i++)
			;
		if (i < x->n && c == 0) {
			memcpy(rec_at(w, x, i), r, w->h.rec_size);
			mark(w, x);
			return 0;
		}
		if (x->depth == 0)
			break;
		rc = kid_get(&x, w, x, i);
		if (rc < 0)
			return rc;
	}
	put(w, x, i, r, NULL);
	mark(w, x);
	return x->n > max_nrec(w, 0) ? split(w, x, i) : 0;
}

static uint64_t node_total(const b2_node *x)
{
	uint64_t t = x->n;

	for (unsigned i = 0; x->depth > 0 && i <= x->n; i++)
		t += x->kid[i] ? node_total(x->kid[i]) : x->ctotal[i];
	return t;
}

static void node_encode(const h5_bt2w *w, uint8_t *buf, const b2_node *x)
{
	const bt2_hdr *h = &w->h;
	uint8_t *p = h5_bt2_node_begin(buf, h, x->depth);

	memcpy(p, x->recs, (size_t)x->n * h->rec_size);
	p += (size_t)x->n * h->rec_size;
	for (unsigned i = 0; x->depth > 0 && i <= x->n; i++) {
		const b2_node *k = x->kid[i];

		p = h5_bt2_ptr_encode(p, h, x->depth, k ? (k->dirty ? k->naddr : k->addr) : x->child[i],
				      k ? k->n : x->cnrec[i], k ? node_total(k) : x->ctotal[i]);
	}
	h5_bt2_node_end(buf, p);
}

int h5_bt2w_open(h5_bt2w **out, h5_file *f, const h5_dataset *d, uint64_t idx_addr)
{
	const h5_layout *l = &d->layout;
	h5_bt2w *w;
	int rc = 0;

	*out = NULL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	w->f = f;
	w->old_hdr = H5_ADDR_UNDEF;
	w->rank = l->ndims;
	w->client = d->pline.n ? H5_ARR_CLIENT_FILT_CHUNK : H5_ARR_CLIENT_CHUNK;
	/* H5D__bt2_idx_create: filtered records carry the chunk size in
	 * 1 + (log2(chunk bytes) + 8) / 8 bytes (layout version 5: Size of
	 * Lengths bytes), and a filter mask */
	w->elmt_size = f->fmt.sizeof_addr +
		       (d->pline.n ? h5_chunk_size_len_v(&f->fmt, l->version, d->chunk_bytes) + 4 : 0);
	if (h5_addr_defined(idx_addr)) {
		rc = h5_bt2_open(&w->bt, f, idx_addr);
		if (rc == 0) {
			unsigned stored;

			w->h = *w->bt->hdr;
			stored = w->h.rec_size > 8u * w->rank ? w->h.rec_size - 8u * w->rank : 0;
			if (w->h.type != (d->pline.n ? 11 : 10) ||
			    h5_chunk_elmt_size_ok(&f->fmt, l->version, d->pline.n != 0, d->chunk_bytes, stored) < 0)
				rc = h5_err_set(H5_ERR_FORMAT, "v2 B-tree at 0x%llx: record type %u size %u, expected %u",
						(unsigned long long)idx_addr, w->h.type, w->h.rec_size,
						w->elmt_size + 8u * w->rank);
			else
				w->elmt_size = stored; /* records are rewritten as wide as they are stored */
		}
		if (rc == 0 && h5_addr_defined(w->h.root_addr))
			rc = node_load(&w->root, w, w->h.root_addr, w->h.depth, w->h.root_nrec, w->h.total_nrec);
	} else {
		w->hdr_new = true;
		w->h.addr = H5_ADDR_UNDEF;
		w->h.type = d->pline.n ? 11 : 10;
		w->h.node_size = l->bt2_node_size;
		w->h.rec_size = (uint16_t)(w->elmt_size + 8u * w->rank);
		w->h.split_pct = l->bt2_split;
		w->h.merge_pct = l->bt2_merge;
		w->h.root_addr = H5_ADDR_UNDEF;
		w->h.fmt = f->fmt;
		rc = h5_bt2_init_levels(&w->h);
	}
	if (rc < 0) {
		h5_bt2w_free(w);
		return rc;
	}
	*out = w;
	return 0;
}

int h5_bt2w_write(h5_bt2w *w)
{
	size_t ns = w->h.node_size, hs = h5_bt2_hdr_size(&w->f->fmt), cnt = 0, len;
	uint64_t start, a;
	uint8_t *buf;
	int rc;

	if (!w->changed)
		return 0;
	for (b2_node *x = w->all; x; x = x->all_next)
		if (x->dirty) {
			if (h5_bt2_node_bytes(&w->h, x->depth, x->n) > ns)
				return h5_err_set(H5_ERR_INVAL, "v2 B-tree writer: node overflow");
			cnt++;
		}
	/* A header spanning a page is not rewritten in place (its checksum
	 * torn: the index unreadable): it is copied with the nodes and the
	 * layout message switched to the copy (txn.c h5_txn_switch), an
	 * ordered copy as the symbol-table root's (link_stab.c); no node
	 * holds the header's address (III.A.2: BTIN, BTLF) */
	if (!w->hdr_new && h5_addr_defined(w->h.addr) && h5_space_spans_page(w->h.addr, hs)) {
		w->old_hdr = w->h.addr;
		w->hdr_new = true;
	}
	/* every changed node, then a new header, in new space or space freed
	 * once no reader sees it (space.c h5_space_take: written whole below);
	 * the nodes they replace are freed after the commit (h5_bt2w_freed) */
	len = cnt * ns + (w->hdr_new ? hs : 0);
	rc = h5_space_take(&start, w->f, len);
	if (rc < 0)
		return rc;
	a = start;
	/* the new header first when after the nodes it would span a page
	 * (the next commit would copy it again) */
	if (w->hdr_new && h5_space_spans_page(start + cnt * ns, hs) && !h5_space_spans_page(start, hs)) {
		w->h.addr = start;
		a += hs;
	}
	for (b2_node *x = w->all; x; x = x->all_next)
		if (x->dirty) {
			x->naddr = a;
			a += ns;
		}
	if (w->hdr_new && w->h.addr != start)
		w->h.addr = a;
	buf = calloc(1, len);
	if (!buf)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	for (b2_node *x = w->all; x; x = x->all_next)
		if (x->dirty)
			node_encode(w, buf + (x->naddr - start), x);
	w->h.root_addr = w->root->naddr;
	w->h.root_nrec = (uint16_t)w->root->n;
	w->h.total_nrec = node_total(w->root);
	if (w->hdr_new)
		h5_bt2_hdr_encode(buf + (w->h.addr - start), &w->h);
	rc = h5_file_write(w->f, start, buf, len);
	free(buf);
	return rc;
}

uint64_t h5_bt2w_addr(const h5_bt2w *w) { return w->h.addr; }
bool h5_bt2w_addr_is_new(const h5_bt2w *w) { return w->hdr_new; }

/* The switch: the header in place, in one write with its checksum. */
int h5_bt2w_commit(h5_bt2w *w)
{
	uint8_t buf[64];
	size_t hs = h5_bt2_hdr_size(&w->f->fmt);

	if (w->hdr_new || !w->changed)
		return 0;
	h5_bt2_hdr_encode(buf, &w->h);
	return h5_file_write(w->f, w->h.addr, buf, hs);
}

/* After the commit: the nodes it copied, referenced no more (issue 65:
 * 300 overwrite commits of a 2-d dataset left 1.25 MB of old nodes). */
void h5_bt2w_freed(h5_bt2w *w, h5_freesp *to, uint64_t ticket)
{
	if (h5_addr_defined(w->old_hdr) && w->old_hdr != w->h.addr &&
	    h5_freesp_add(to, w->old_hdr, h5_bt2_hdr_size(&w->f->fmt), ticket) < 0)
		h5_err_clear();         /* leaked */
	for (b2_node *x = w->all; x; x = x->all_next)
		if (x->dirty && h5_addr_defined(x->addr) && h5_addr_defined(x->naddr) && x->naddr != x->addr &&
		    h5_freesp_add(to, x->addr, w->h.node_size, ticket) < 0)
			h5_err_clear();         /* leaked */
}

void h5_bt2w_invalidate(h5_bt2w *w)
{
	if (h5_addr_defined(w->h.addr))
		h5_cache_invalidate(w->f->meta, H5_CK_BT2_HDR, w->h.addr);
}

void h5_bt2w_free(h5_bt2w *w)
{
	b2_node *x, *nx;

	if (!w)
		return;
	for (x = w->all; x; x = nx) {
		nx = x->all_next;
		free(x->recs);
		free(x->child);
		free(x->cnrec);
		free(x->ctotal);
		free(x->kid);
		free(x);
	}
	h5_bt2_close(w->bt);
	free(w);
}

/* ---- this writer as an entry of the writers' table (cidx_write.h) ---- */

static int bt2w_open(void **w, h5_file *f, const h5_dataset *d, uint64_t idx_addr)
{
	return h5_bt2w_open((h5_bt2w **)w, f, d, idx_addr);
}

static int bt2w_set(void *w, const uint64_t *scaled, uint64_t idx, const h5_chunk_rec *rec)
{
	(void)idx;
	return h5_bt2w_set(w, scaled, rec);
}

static int bt2w_write(void *w) { return h5_bt2w_write(w); }
static uint64_t bt2w_addr(void *w) { return h5_bt2w_addr(w); }
static bool bt2w_addr_is_new(void *w) { return h5_bt2w_addr_is_new(w); }
static int bt2w_commit(void *w) { return h5_bt2w_commit(w); }
static void bt2w_invalidate(void *w) { h5_bt2w_invalidate(w); }
static void bt2w_freed(void *w, h5_freesp *to, uint64_t ticket) { h5_bt2w_freed(w, to, ticket); }
static void bt2w_free(void *w) { h5_bt2w_free(w); }

const h5_cidx_write_ops h5_cidx_write_btree2 = {
	.open = bt2w_open,
	.set = bt2w_set,
	.write = bt2w_write,
	.addr = bt2w_addr,
	.addr_is_new = bt2w_addr_is_new,
	.addr_field = h5_layout_bt2_addr_field,
	.commit = bt2w_commit,
	.freed = bt2w_freed,
	.invalidate = bt2w_invalidate,
	.free = bt2w_free,
};
