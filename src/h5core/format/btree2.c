/*
 * btree2.c - version 2 B-trees (spec III.A.2 "Version 2 B-trees").
 *
 * A v2 B-tree is a header (BTHD) naming the root node, its depth and the
 * record count of the root; internal nodes (BTIN) hold records plus one
 * more child pointer than records, each pointer carrying the child's own
 * record count and (above the twig level) the count of its whole subtree;
 * leaves (BTLF) hold records only. A node's record count is never stored in
 * the node itself: it comes from the pointer that leads to it, so every
 * node is loaded knowing its depth, record count and subtree total.
 *
 * Records are handed to callers raw (rec, record_size); what they mean
 * depends on the tree type and is decoded by the callers (group.c, attr.c,
 * chunk.c, fheap.c).
 *
 * The header and nodes are cached in f->meta (H5_CK_BT2_HDR / H5_CK_BT2_NODE,
 * keyed by address). A cached node remembers the header, depth, record count
 * and subtree total it was loaded with; a pointer that disagrees (a hostile
 * file pointing a child at its ancestor or at a node of another tree) is a
 * format error rather than a reinterpretation of the cached bytes.
 */
#include "btree2_int.h"
#include "base.h"
#include "rd.h"
#include "checksum.h"
#include "cache.h"
#include "file.h"
#include "btree2.h"

/* libhdf5's H5VM_limit_enc_size: bytes needed to store values up to limit. */
uint8_t h5_bt2_enc_size(uint64_t limit)
{
	unsigned bits = 0;

	while (limit >>= 1)
		bits++;
	return (uint8_t)(bits / 8 + 1);
}

size_t h5_bt2_hdr_size(const h5_fmt *fmt)
{
	return BT2_PREFIX_SIZE + 4 + 2 + 2 + 1 + 1 + fmt->sizeof_addr + 2 + fmt->sizeof_size;
}

/* Pointer size in an internal node at depth d (H5B2_INT_POINTER_SIZE). */
unsigned h5_bt2_ptr_size(const bt2_hdr *h, unsigned d)
{
	return (unsigned)h->fmt.sizeof_addr + h->max_nrec_size + h->lv[d - 1].cum_max_nrec_size;
}

/* Per-depth capacities exactly as libhdf5's H5B2__hdr_init computes them:
 * the field widths inside internal nodes depend on them, so an off-by-one
 * here would misread every internal node. */
int h5_bt2_init_levels(bt2_hdr *h)
{
	uint64_t leaf_max;

	if (h->rec_size == 0)
		return h5_err_set(H5_ERR_FORMAT, "v2 B-tree header at 0x%llx: record size is 0",
				  (unsigned long long)h->addr);
	if (h->node_size <= BT2_PREFIX_SIZE)
		return h5_err_set(H5_ERR_FORMAT, "v2 B-tree header at 0x%llx: node size %u is too small",
				  (unsigned long long)h->addr, h->node_size);
	leaf_max = (h->node_size - BT2_PREFIX_SIZE) / h->rec_size;
	if (leaf_max == 0)
		return h5_err_set(H5_ERR_FORMAT, "v2 B-tree header at 0x%llx: %u-byte nodes cannot hold a %u-byte record",
				  (unsigned long long)h->addr, h->node_size, h->rec_size);
	if (leaf_max > BT2_MAX_NREC)
		return h5_err_set(H5_ERR_UNSUPPORTED, "v2 B-tree header at 0x%llx: %llu records per node exceeds 65535",
				  (unsigned long long)h->addr, (unsigned long long)leaf_max);
	h->lv[0].max_nrec = (uint32_t)leaf_max;
	h->lv[0].cum_max_nrec = leaf_max;
	h->lv[0].cum_max_nrec_size = 0;
	h->max_nrec_size = h5_bt2_enc_size(leaf_max);
	for (unsigned d = 1; d <= h->depth; d++) {
		unsigned ptr = h5_bt2_ptr_size(h, d);
		uint64_t fixed = (uint64_t)BT2_PREFIX_SIZE + ptr;
		uint64_t n, cum;

		if (h->node_size < fixed)
			return h5_err_set(H5_ERR_FORMAT, "v2 B-tree header at 0x%llx: %u-byte nodes too small for depth %u",
					  (unsigned long long)h->addr, h->node_size, d);
		n = (h->node_size - fixed) / ((uint64_t)h->rec_size + ptr);
		if (n == 0)
			return h5_err_set(H5_ERR_FORMAT, "v2 B-tree header at 0x%llx: internal nodes at depth %u hold no records",
					  (unsigned long long)h->addr, d);
		h->lv[d].max_nrec = (uint32_t)n;
		/* cum = (n + 1) * below + n, saturating: a saturated count can
		 * only describe a tree larger than any file, and its field
		 * width is then the maximum of 8 bytes anyway. */
		if (h5_mul_overflow(n + 1, h->lv[d - 1].cum_max_nrec, &cum) || h5_add_overflow(cum, n, &cum))
			cum = UINT64_MAX;
		h->lv[d].cum_max_nrec = cum;
		h->lv[d].cum_max_nrec_size = h5_bt2_enc_size(cum);
	}
	return 0;
}

/* Pure decoder of a BTHD image (exactly h5_bt2_hdr_size() bytes or more). */
static int bt2_hdr_decode(bt2_hdr *h, const h5_fmt *fmt, uint64_t addr, const uint8_t *buf, size_t len)
{
	size_t hsize = h5_bt2_hdr_size(fmt);
	const uint8_t *sig;
	uint8_t version;
	h5_rd r;
	int rc;

	memset(h, 0, sizeof(*h));
	h->addr = addr;
	h->fmt = *fmt;
	if (len < hsize)
		return h5_err_set(H5_ERR_FORMAT, "v2 B-tree header at 0x%llx: truncated (%zu of %zu bytes)",
				  (unsigned long long)addr, len, hsize);
	h5_rd_init(&r, buf, hsize);
	sig = h5_rd_bytes(&r, 4);
	if (!sig || memcmp(sig, "BTHD", 4) != 0)
		return h5_err_set(H5_ERR_FORMAT, "v2 B-tree header at 0x%llx: bad signature", (unsigned long long)addr);
	version = h5_rd_u8(&r);
	if (version != 0)
		return h5_err_set(H5_ERR_FORMAT, "v2 B-tree header at 0x%llx: unsupported version %u",
				  (unsigned long long)addr, version);
	rc = h5_checksum_verify(buf, hsize, "v2 B-tree header", addr);
	if (rc < 0)
		return rc;
	h->type = h5_rd_u8(&r);
	h->node_size = h5_rd_u32(&r);
	h->rec_size = h5_rd_u16(&r);
	h->depth = h5_rd_u16(&r);
	h->split_pct = h5_rd_u8(&r);
	h->merge_pct = h5_rd_u8(&r);
	h->root_addr = h5_rd_addr(&r, fmt);
	h->root_nrec = h5_rd_u16(&r);
	h->total_nrec = h5_rd_uint(&r, fmt->sizeof_size);
	if (!h5_rd_ok(&r))
		return h5_err_set(H5_ERR_FORMAT, "v2 B-tree header at 0x%llx: truncated", (unsigned long long)addr);
	/* Type 0 is libhdf5's test-only tree; anything above 11 is unknown. */
	if (h->type == 0 || h->type > 11)
		return h5_err_set(H5_ERR_FORMAT, "v2 B-tree header at 0x%llx: unknown tree type %u",
				  (unsigned long long)addr, h->type);
	if (h->depth > H5_MAX_BTREE_DEPTH)
		return h5_err_set(H5_ERR_LIMIT, "v2 B-tree header at 0x%llx: depth %u exceeds the limit of %u",
				  (unsigned long long)addr, h->depth, H5_MAX_BTREE_DEPTH);
	rc = h5_bt2_init_levels(h);
	if (rc < 0)
		return rc;
	if (!h5_addr_defined(h->root_addr)) {
		if (h->total_nrec != 0 || h->root_nrec != 0)
			return h5_err_set(H5_ERR_FORMAT, "v2 B-tree header at 0x%llx: %llu records but no root node",
					  (unsigned long long)addr, (unsigned long long)h->total_nrec);
		return 0;
	}
	if (h->root_nrec > h->lv[h->depth].max_nrec)
		return h5_err_set(H5_ERR_FORMAT, "v2 B-tree header at 0x%llx: root holds %u records, at most %u fit",
				  (unsigned long long)addr, h->root_nrec, h->lv[h->depth].max_nrec);
	if (h->total_nrec < h->root_nrec || h->total_nrec > h->lv[h->depth].cum_max_nrec ||
	    (h->depth == 0 && h->total_nrec != h->root_nrec))
		return h5_err_set(H5_ERR_FORMAT, "v2 B-tree header at 0x%llx: %llu records inconsistent with root (%u records, depth %u)",
				  (unsigned long long)addr, (unsigned long long)h->total_nrec, h->root_nrec, h->depth);
	return 0;
}

/* ---- encoders, the mirror of the decoders (btree2_enc.c, write/btree2_write.c) ---- */

void h5_bt2_hdr_encode(uint8_t *buf, const bt2_hdr *h)
{
	uint8_t *p = buf;

	memcpy(p, "BTHD", 4);
	p[4] = 0;
	p[5] = h->type;
	h5_le_encode(p + 6, h->node_size, 4);
	h5_le_encode(p + 10, h->rec_size, 2);
	h5_le_encode(p + 12, h->depth, 2);
	p[14] = h->split_pct;
	p[15] = h->merge_pct;
	p += 16;
	h5_le_encode(p, h->root_addr, h->fmt.sizeof_addr);
	p += h->fmt.sizeof_addr;
	h5_le_encode(p, h->root_nrec, 2);
	p += 2;
	h5_le_encode(p, h->total_nrec, h->fmt.sizeof_size);
	p += h->fmt.sizeof_size;
	h5_le_encode(p, h5_checksum_metadata(buf, (size_t)(p - buf)), 4);
}

uint8_t *h5_bt2_node_begin(uint8_t *buf, const bt2_hdr *h, unsigned depth)
{
	memcpy(buf, depth ? "BTIN" : "BTLF", 4);
	buf[4] = 0;
	buf[5] = h->type;
	return buf + 6;
}

uint8_t *h5_bt2_ptr_encode(uint8_t *p, const bt2_hdr *h, unsigned depth, uint64_t addr, uint64_t nrec,
			   uint64_t total)
{
	h5_le_encode(p, addr, h->fmt.sizeof_addr);
	p += h->fmt.sizeof_addr;
	h5_le_encode(p, nrec, h->max_nrec_size);
	p += h->max_nrec_size;
	if (depth > 1) {
		h5_le_encode(p, total, h->lv[depth - 1].cum_max_nrec_size);
		p += h->lv[depth - 1].cum_max_nrec_size;
	}
	return p;
}

void h5_bt2_node_end(uint8_t *buf, uint8_t *end)
{
	h5_le_encode(end, h5_checksum_metadata(buf, (size_t)(end - buf)), 4);
}

static void bt2_node_free(void *obj)
{
	bt2_node *n = obj;

	if (!n)
		return;
	free(n->recs);
	free(n->child);
	free(n->child_nrec);
	free(n->child_total);
	free(n);
}

/* On-disk bytes of a node at depth with nrec records (checksum included). */
uint64_t h5_bt2_node_bytes(const bt2_hdr *h, unsigned depth, unsigned nrec)
{
	uint64_t n = BT2_PREFIX_SIZE + (uint64_t)nrec * h->rec_size;

	if (depth > 0)
		n += ((uint64_t)nrec + 1) * h5_bt2_ptr_size(h, depth);
	return n;
}

/* Pure decoder of a BTIN/BTLF image of exactly h5_bt2_node_bytes() bytes. */
static int bt2_node_decode(bt2_node **out, const bt2_hdr *h, uint64_t addr, unsigned depth, unsigned nrec,
			   const uint8_t *buf, size_t len)
{
	const char *what = depth > 0 ? "v2 B-tree internal node" : "v2 B-tree leaf node";
	const uint8_t *sig, *recs;
	bt2_node *n = NULL;
	uint8_t version, type;
	uint64_t need = h5_bt2_node_bytes(h, depth, nrec);
	h5_rd r;
	int rc;

	*out = NULL;
	if (len < need)
		return h5_err_set(H5_ERR_FORMAT, "%s at 0x%llx: truncated (%zu of %llu bytes)", what,
				  (unsigned long long)addr, len, (unsigned long long)need);
	h5_rd_init(&r, buf, (size_t)need);
	sig = h5_rd_bytes(&r, 4);
	if (!sig || memcmp(sig, depth > 0 ? "BTIN" : "BTLF", 4) != 0)
		return h5_err_set(H5_ERR_FORMAT, "%s at 0x%llx: bad signature", what, (unsigned long long)addr);
	version = h5_rd_u8(&r);
	type = h5_rd_u8(&r);
	if (version != 0)
		return h5_err_set(H5_ERR_FORMAT, "%s at 0x%llx: unsupported version %u", what,
				  (unsigned long long)addr, version);
	if (type != h->type)
		return h5_err_set(H5_ERR_FORMAT, "%s at 0x%llx: type %u differs from the header's type %u", what,
				  (unsigned long long)addr, type, h->type);
	/* The checksum covers only the used part of the node; the rest of
	 * the node_size allocation is never read. */
	rc = h5_checksum_verify(buf, (size_t)need, what, addr);
	if (rc < 0)
		return rc;
	n = calloc(1, sizeof(*n));
	if (!n)
		return h5_err_set(H5_ERR_NOMEM, "out of memory decoding %s", what);
	n->addr = addr;
	n->hdr_addr = h->addr;
	n->depth = (uint16_t)depth;
	n->nrec = (uint16_t)nrec;
	n->rec_size = h->rec_size;
	n->total = nrec;
	n->recs = malloc(nrec ? (size_t)nrec * h->rec_size : 1);
	if (!n->recs) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory decoding %s", what);
		goto out;
	}
	recs = h5_rd_bytes(&r, (size_t)nrec * h->rec_size);
	if (recs && nrec)
		memcpy(n->recs, recs, (size_t)nrec * h->rec_size);
	if (depth > 0) {
		const bt2_level *below = &h->lv[depth - 1];

		n->child = malloc(((size_t)nrec + 1) * sizeof(*n->child));
		n->child_nrec = malloc(((size_t)nrec + 1) * sizeof(*n->child_nrec));
		n->child_total = malloc(((size_t)nrec + 1) * sizeof(*n->child_total));
		if (!n->child || !n->child_nrec || !n->child_total) {
			rc = h5_err_set(H5_ERR_NOMEM, "out of memory decoding %s", what);
			goto out;
		}
		for (unsigned i = 0; i <= nrec; i++) {
			uint64_t caddr = h5_rd_addr(&r, &h->fmt);
			uint64_t cn = h5_rd_uint(&r, h->max_nrec_size);
			uint64_t ct = depth > 1 ? h5_rd_uint(&r, below->cum_max_nrec_size) : cn;

			if (!h5_rd_ok(&r))
				break;
			if (!h5_addr_defined(caddr)) {
				rc = h5_err_set(H5_ERR_FORMAT, "%s at 0x%llx: child %u has an undefined address", what,
						(unsigned long long)addr, i);
				goto out;
			}
			if (cn > below->max_nrec || ct < cn || ct > below->cum_max_nrec) {
				rc = h5_err_set(H5_ERR_FORMAT, "%s at 0x%llx: child %u claims %llu records (%llu in subtree), at most %u fit",
						what, (unsigned long long)addr, i, (unsigned long long)cn,
						(unsigned long long)ct, below->max_nrec);
				goto out;
			}
			n->child[i] = caddr;
			n->child_nrec[i] = (uint16_t)cn;
			n->child_total[i] = ct;
			if (h5_add_overflow(n->total, ct, &n->total)) {
				rc = h5_err_set(H5_ERR_FORMAT, "%s at 0x%llx: subtree record counts overflow", what,
						(unsigned long long)addr);
				goto out;
			}
		}
	}
	if (!h5_rd_ok(&r)) {
		rc = h5_err_set(H5_ERR_FORMAT, "%s at 0x%llx: truncated", what, (unsigned long long)addr);
		goto out;
	}
	*out = n;
	n = NULL;
	rc = 0;
out:
	bt2_node_free(n);
	return rc;
}

/* bt2_hdr_decode for h5_file_load_block(), which allocated *obj. */
static int bt2_hdr_dec(void **obj, size_t *cost, const uint8_t *buf, size_t len, const h5_block_load *b)
{
	bt2_hdr *h = *obj;
	int rc;

	(void)cost;
	rc = bt2_hdr_decode(h, &b->f->fmt, b->addr, buf, len);
	if (rc < 0)
		return rc;
	/* Every record occupies rec_size distinct bytes of some node, so a
	 * count the file could not hold is a lie meant to make iteration
	 * run forever over shared nodes. */
	if (h->total_nrec > h5_file_eof(b->f) / h->rec_size)
		return h5_err_set(H5_ERR_FORMAT, "v2 B-tree header at 0x%llx: %llu records cannot fit in the file",
				  (unsigned long long)b->addr, (unsigned long long)h->total_nrec);
	return 0;
}

struct bt2_node_ud {
	h5_block_load b;            /* first: what h5_file_load_block() sees */
	const bt2_hdr *hdr;
	unsigned depth, nrec;
};

static int bt2_node_dec(void **obj, size_t *cost, const uint8_t *buf, size_t len, const h5_block_load *b)
{
	const struct bt2_node_ud *ud = (const struct bt2_node_ud *)b;

	*cost = sizeof(bt2_node) + len * 2;
	return bt2_node_decode((bt2_node **)obj, ud->hdr, b->addr, ud->depth, ud->nrec, buf, len);
}

static int bt2_node_load(void **obj, size_t *cost, void *udp)
{
	struct bt2_node_ud *ud = udp;

	/* checked before reading; never 0 (the prefix alone is BT2_PREFIX_SIZE) */
	ud->b.size = h5_bt2_node_bytes(ud->hdr, ud->depth, ud->nrec);
	if (ud->b.size > ud->hdr->node_size)
		return h5_err_set(H5_ERR_FORMAT, "v2 B-tree node at 0x%llx: %u records need %llu bytes, nodes are %u",
				  (unsigned long long)ud->b.addr, ud->nrec, (unsigned long long)ud->b.size,
				  ud->hdr->node_size);
	return h5_file_load_block(obj, cost, &ud->b);
}

/* Fetch the node a pointer (addr, depth, nrec, total) leads to, and check
 * the cached node is that node. */
int h5_bt2_node_get(const bt2_node **out, h5_cache_ref *ref, h5_bt2 *bt, uint64_t addr, unsigned depth,
			unsigned nrec, uint64_t total)
{
	struct bt2_node_ud ud = { { bt->pin.f, addr, 0, "v2 B-tree node", 0, bt2_node_dec }, bt->hdr, depth,
				  nrec };
	const bt2_node *n;
	int rc;

	*out = NULL;
	if (addr == bt->hdr->addr)
		return h5_err_set(H5_ERR_LOOP, "v2 B-tree at 0x%llx: node pointer leads back to the header",
				  (unsigned long long)bt->hdr->addr);
	rc = h5_cache_get(ref, bt->pin.f->meta, H5_CK_BT2_NODE, addr, bt2_node_load, bt2_node_free, &ud);
	if (rc < 0)
		return rc;
	n = ref->obj;
	if (n->hdr_addr != bt->hdr->addr || n->depth != depth || n->nrec != nrec) {
		rc = h5_err_set(H5_ERR_LOOP, "v2 B-tree at 0x%llx: node 0x%llx reached as depth %u with %u records, "
				"but it is depth %u with %u records (of tree 0x%llx)",
				(unsigned long long)bt->hdr->addr, (unsigned long long)addr, depth, nrec, n->depth,
				n->nrec, (unsigned long long)n->hdr_addr);
		h5_cache_release(bt->pin.f->meta, ref);
		return rc;
	}
	if (n->total != total) {
		rc = h5_err_set(H5_ERR_FORMAT, "v2 B-tree at 0x%llx: node 0x%llx holds %llu records in its subtree, "
				"its parent says %llu", (unsigned long long)bt->hdr->addr, (unsigned long long)addr,
				(unsigned long long)n->total, (unsigned long long)total);
		h5_cache_release(bt->pin.f->meta, ref);
		return rc;
	}
	*out = n;
	return 0;
}

static void bt2_hdr_free(void *obj)
{
	free(obj);
}

int h5_bt2_open(h5_bt2 **out, h5_file *f, uint64_t addr)
{
	h5_block_load b = { f, addr, h5_bt2_hdr_size(&f->fmt), "v2 B-tree header", sizeof(bt2_hdr), bt2_hdr_dec };
	h5_pinned *p;
	int rc = h5_pinned_open(&p, sizeof(h5_bt2), "v2 B-tree", H5_CK_BT2_HDR,
				 h5_file_load_block, bt2_hdr_free, &b);

	*out = (h5_bt2 *)p; /* pin is the first member */
	if (p)
		(*out)->hdr = p->ref.obj;
	return rc;
}

void h5_bt2_close(h5_bt2 *bt) { h5_pinned_close(bt ? &bt->pin : NULL); }

uint8_t h5_bt2_type(const h5_bt2 *bt) { return bt->hdr->type; }
uint32_t h5_bt2_record_size(const h5_bt2 *bt) { return bt->hdr->rec_size; }
uint64_t h5_bt2_nrecords(const h5_bt2 *bt) { return bt->hdr->total_nrec; }

/* Records in key order to cb, and (blk) every node with the node_size
 * bytes libhdf5 allocates for it (H5B2__create_leaf, H5B2__split_root),
 * whatever its records use; either may be NULL. */
static int bt2_iter_node(h5_bt2 *bt, uint64_t addr, unsigned depth, unsigned nrec, uint64_t total,
			 h5_bt2_rec_cb cb, h5_block_cb blk, void *ud)
{
	h5_cache_ref ref;
	const bt2_node *n;
	int rc;

	rc = h5_bt2_node_get(&n, &ref, bt, addr, depth, nrec, total);
	if (rc < 0)
		return rc;
	if (blk) {
		rc = blk(addr, bt->hdr->node_size, ud);
		if (rc != 0)
			goto out;
	}
	for (unsigned i = 0; i <= n->nrec; i++) {
		if (depth > 0) {
			rc = bt2_iter_node(bt, n->child[i], depth - 1, n->child_nrec[i], n->child_total[i], cb, blk,
					   ud);
			if (rc != 0)
				goto out;
		}
		if (i == n->nrec || !cb)
			continue;
		rc = cb(n->recs + (size_t)i * n->rec_size, n->rec_size, ud);
		if (rc != 0)
			goto out;
	}
	rc = 0;
out:
	h5_cache_release(bt->pin.f->meta, &ref);
	return rc;
}

int h5_bt2_iterate(h5_bt2 *bt, h5_bt2_rec_cb cb, void *ud)
{
	const bt2_hdr *h = bt->hdr;

	if (!h5_addr_defined(h->root_addr))
		return 0;
	return bt2_iter_node(bt, h->root_addr, h->depth, h->root_nrec, h->total_nrec, cb, NULL, ud);
}

int h5_bt2_blocks(h5_bt2 *bt, h5_block_cb cb, void *ud)
{
	const bt2_hdr *h = bt->hdr;
	int rc = cb(h->addr, h5_bt2_hdr_size(&h->fmt), ud);

	if (rc != 0 || !h5_addr_defined(h->root_addr))
		return rc;
	return bt2_iter_node(bt, h->root_addr, h->depth, h->root_nrec, h->total_nrec, NULL, cb, ud);
}

int h5_bt2_blocks_at(h5_file *f, uint64_t addr, h5_block_cb cb, void *ud)
{
	h5_bt2 *bt = NULL;
	int rc = h5_bt2_open(&bt, f, addr);

	if (rc == 0)
		rc = h5_bt2_blocks(bt, cb, ud);
	h5_bt2_close(bt);
	return rc;
}

/* Name-hash trees (links, attributes, shared messages) may hold several
 * records whose keys compare equal; every other type has unique keys. */
static bool bt2_dup_keys(uint8_t type)
{
	return type == 5 || type == 7 || type == 8;
}

struct bt2_find_args {
	h5_bt2_cmp_fn cmp;
	const void *key;
	h5_bt2_rec_cb found;
	void *ud;
	bool dup;
};

/* Visit, in key order, every record of the subtree that compares equal to
 * the key, until found() accepts one. Children left of the first record not
 * below the key hold only smaller keys, so one binary search per node finds
 * where equal records can start; with duplicate keys they can continue into
 * the next children and records. */
static int bt2_find_node(h5_bt2 *bt, uint64_t addr, unsigned depth, unsigned nrec, uint64_t total,
			 const struct bt2_find_args *a)
{
	h5_cache_ref ref;
	const bt2_node *n;
	unsigned lo, hi;
	int rc;

	rc = h5_bt2_node_get(&n, &ref, bt, addr, depth, nrec, total);
	if (rc < 0)
		return rc;
	lo = 0;
	hi = n->nrec;
	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;

		if (a->cmp(a->key, n->recs + (size_t)mid * n->rec_size, n->rec_size, a->ud) > 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (unsigned i = lo;; i++) {
		int c = i < n->nrec ? a->cmp(a->key, n->recs + (size_t)i * n->rec_size, n->rec_size, a->ud) : -1;

		if (c > 0)
			break; /* unsorted node (corrupt): nothing equal can follow */
		if (depth > 0 && (c < 0 || a->dup)) {
			rc = bt2_find_node(bt, n->child[i], depth - 1, n->child_nrec[i], n->child_total[i], a);
			if (rc != H5_ERR_NOTFOUND)
				goto out;
		}
		if (c != 0)
			break;
		rc = a->found(n->recs + (size_t)i * n->rec_size, n->rec_size, a->ud);
		if (rc != H5_ERR_NOTFOUND || !a->dup)
			goto out;
	}
	rc = H5_ERR_NOTFOUND;
out:
	h5_cache_release(bt->pin.f->meta, &ref);
	return rc;
}

int h5_bt2_find(h5_bt2 *bt, h5_bt2_cmp_fn cmp, const void *key, h5_bt2_rec_cb found, void *ud)
{
	const bt2_hdr *h = bt->hdr;
	struct bt2_find_args a = { cmp, key, found, ud, bt2_dup_keys(h->type) };
	int rc;

	if (!h5_addr_defined(h->root_addr))
		rc = H5_ERR_NOTFOUND;
	else
		rc = bt2_find_node(bt, h->root_addr, h->depth, h->root_nrec, h->total_nrec, &a);
	if (rc == H5_ERR_NOTFOUND)
		return h5_err_set(H5_ERR_NOTFOUND, "no matching record in v2 B-tree at 0x%llx",
				  (unsigned long long)h->addr);
	return rc;
}
