/*
 * btree1.c - version 1 B-tree nodes (spec III.A.1 "Version 1 B-trees").
 *
 * Two trees use this format: type 0 indexes an old-style group's symbol
 * table nodes (keys are local heap offsets of names), type 1 indexes the
 * chunks of a layout v1-v3 chunked dataset (keys are chunk size, filter mask
 * and chunk offsets). Nodes carry no checksum, so a node is only trusted
 * after its signature, type, level and entry count check out; walking the
 * tree (group.c, chunk.c) must bound depth and detect loops itself.
 */
#include "base.h"
#include "rd.h"
#include "cache.h"
#include "file.h"
#include "btree1.h"

/* Cached node plus the cache entry it belongs to (see h5_bt1_release). */
struct bt1_obj {
	h5_bt1_node pub;
	void *ent;
};

struct bt1_load_ud {
	h5_file *f;
	uint64_t addr;
	unsigned ndims;
};

/* Signature, type, level, entries used, left and right sibling. */
static size_t bt1_hdr_size(const h5_fmt *fmt)
{
	return 8 + 2 * (size_t)fmt->sizeof_addr;
}

/* Bytes of one key; 0 for an impossible chunk rank. */
static size_t bt1_key_size(const h5_fmt *fmt, unsigned ndims)
{
	if (ndims == 0)
		return fmt->sizeof_size;
	return 4 + 4 + 8 * (size_t)ndims;
}

void h5_bt1_free(h5_bt1_node *n)
{
	if (!n)
		return;
	free(n->child);
	free(n->name_off);
	free(n->chunk_size);
	free(n->filter_mask);
	free(n->offsets);
	free((struct bt1_obj *)n);
}

int h5_bt1_decode(h5_bt1_node **out, const h5_fmt *fmt, unsigned chunk_ndims_plus1,
		  const uint8_t *buf, size_t len)
{
	h5_rd r;
	const uint8_t *sig;
	uint8_t type, level;
	uint16_t n;
	size_t ksize, need;
	unsigned want_type = chunk_ndims_plus1 ? 1 : 0;
	struct bt1_obj *o = NULL;
	h5_bt1_node *nd;
	int rc = 0;

	*out = NULL;
	if (chunk_ndims_plus1 > H5_MAX_RANK + 1)
		return h5_err_set(H5_ERR_FORMAT, "v1 B-tree: chunk rank %u too large", chunk_ndims_plus1);
	h5_rd_init(&r, buf, len);
	sig = h5_rd_bytes(&r, 4);
	type = h5_rd_u8(&r);
	level = h5_rd_u8(&r);
	n = h5_rd_u16(&r);
	if (!h5_rd_ok(&r))
		return h5_err_set(H5_ERR_FORMAT, "v1 B-tree node truncated");
	if (memcmp(sig, "TREE", 4) != 0)
		return h5_err_set(H5_ERR_FORMAT, "v1 B-tree node: bad signature");
	if (type != want_type)
		return h5_err_set(H5_ERR_FORMAT, "v1 B-tree node: type %u, expected %u (%s)", type,
				  want_type, want_type ? "chunks" : "group");
	if (level >= H5_MAX_BTREE_DEPTH)
		return h5_err_set(H5_ERR_FORMAT, "v1 B-tree node: level %u too deep", level);
	ksize = bt1_key_size(fmt, chunk_ndims_plus1);
	/* hdr + n * (key + child) + key: n is 16 bits, so no overflow in size_t. */
	need = bt1_hdr_size(fmt) + (size_t)n * (ksize + fmt->sizeof_addr) + ksize;
	if (need > len)
		return h5_err_set(H5_ERR_FORMAT, "v1 B-tree node: %u entries need %zu bytes, have %zu", n,
				  need, len);
	o = calloc(1, sizeof(*o));
	if (!o)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	nd = &o->pub;
	nd->type = type;
	nd->level = level;
	nd->n = n;
	nd->ndims = chunk_ndims_plus1;
	nd->addr = H5_ADDR_UNDEF;
	nd->left = h5_rd_addr(&r, fmt);
	nd->right = h5_rd_addr(&r, fmt);
	nd->child = calloc(n ? n : 1, sizeof(*nd->child));
	if (type == 0) {
		nd->name_off = calloc((size_t)n + 1, sizeof(*nd->name_off));
	} else {
		nd->chunk_size = calloc((size_t)n + 1, sizeof(*nd->chunk_size));
		nd->filter_mask = calloc((size_t)n + 1, sizeof(*nd->filter_mask));
		nd->offsets = calloc(((size_t)n + 1) * chunk_ndims_plus1, sizeof(*nd->offsets));
	}
	if (!nd->child || (type == 0 ? !nd->name_off : (!nd->chunk_size || !nd->filter_mask || !nd->offsets))) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
		goto out;
	}
	/* Keys and children interleave: key0 child0 key1 ... child[n-1] key[n]. */
	for (size_t i = 0; i <= n; i++) {
		if (type == 0) {
			nd->name_off[i] = h5_rd_uint(&r, fmt->sizeof_size);
		} else {
			nd->chunk_size[i] = h5_rd_u32(&r);
			nd->filter_mask[i] = h5_rd_u32(&r);
			for (unsigned d = 0; d < chunk_ndims_plus1; d++)
				nd->offsets[i * chunk_ndims_plus1 + d] = h5_rd_u64(&r);
		}
		if (i < n) {
			nd->child[i] = h5_rd_addr(&r, fmt);
			if (!h5_addr_defined(nd->child[i]) && h5_rd_ok(&r)) {
				rc = h5_err_set(H5_ERR_FORMAT, "v1 B-tree node: child %zu address undefined", i);
				goto out;
			}
		}
	}
	if (!h5_rd_ok(&r)) {
		rc = h5_err_set(H5_ERR_FORMAT, "v1 B-tree node truncated");
		goto out;
	}
	*out = nd;
	o = NULL;
out:
	if (o)
		h5_bt1_free(&o->pub);
	return rc;
}

size_t h5_bt1_node_size(const h5_fmt *fmt, unsigned k, unsigned chunk_ndims_plus1)
{
	return bt1_hdr_size(fmt) + 2 * (size_t)k * fmt->sizeof_addr +
	       (2 * (size_t)k + 1) * bt1_key_size(fmt, chunk_ndims_plus1);
}

size_t h5_bt1_group_size(const h5_fmt *fmt, unsigned k)
{
	return h5_bt1_node_size(fmt, k, 0);
}

int h5_bt1_group_encode(uint8_t *buf, size_t len, const h5_fmt *fmt, unsigned k, unsigned level, uint64_t left,
			uint64_t right, const uint64_t *keys, const uint64_t *child, unsigned n)
{
	size_t p = bt1_hdr_size(fmt);

	if (n > 2 * k || level >= H5_MAX_BTREE_DEPTH || len < h5_bt1_group_size(fmt, k))
		return h5_err_set(H5_ERR_INVAL, "v1 B-tree node: %u children do not fit 2K = %u", n, 2 * k);
	memset(buf, 0, h5_bt1_group_size(fmt, k));
	memcpy(buf, "TREE", 4);
	buf[4] = 0;             /* group node */
	buf[5] = (uint8_t)level;
	h5_le_encode(buf + 6, n, 2);
	h5_le_encode(buf + 8, left, fmt->sizeof_addr);
	h5_le_encode(buf + 8 + fmt->sizeof_addr, right, fmt->sizeof_addr);
	for (unsigned i = 0; i <= n; i++) {
		h5_le_encode(buf + p, keys[i], fmt->sizeof_size);
		p += fmt->sizeof_size;
		if (i < n) {
			h5_le_encode(buf + p, child[i], fmt->sizeof_addr);
			p += fmt->sizeof_addr;
		}
	}
	return 0;
}

static void bt1_cache_free(void *obj)
{
	h5_bt1_free(obj);
}

static int bt1_load(void **obj, size_t *cost, void *udp)
{
	struct bt1_load_ud *ud = udp;
	h5_file *f = ud->f;
	uint8_t hdr[8 + 2 * 8];
	uint8_t *buf = NULL;
	h5_bt1_node *nd = NULL;
	size_t hlen = bt1_hdr_size(&f->fmt);
	size_t ksize = bt1_key_size(&f->fmt, ud->ndims);
	unsigned k, n;
	size_t len;
	int rc;

	*obj = NULL;
	/* Step 1: the header says how many entries are used, so step 2 reads
	 * only those instead of the full 2K-entry node. */
	rc = h5_file_read(f, ud->addr, hdr, hlen);
	if (rc < 0)
		goto out;
	n = h5_le_decode(hdr + 6, 2);
	/* III.A.1: K for group nodes is "Group Internal Node K", for chunk
	 * nodes "Indexed Storage Internal Node K". libhdf5 rejects more than
	 * 2K children, and so do we: it is what bounds a node's size. */
	k = ud->ndims ? f->chunk_btree_k : f->btree_k;
	if (n > 2 * k) {
		rc = h5_err_set(H5_ERR_FORMAT, "%u entries used exceed 2K = %u", n, 2 * k);
		goto out;
	}
	len = hlen + (size_t)n * (ksize + f->fmt.sizeof_addr) + ksize;
	rc = h5_file_read_alloc(&buf, f, ud->addr, len);
	if (rc < 0)
		goto out;
	rc = h5_bt1_decode(&nd, &f->fmt, ud->ndims, buf, len);
	if (rc < 0)
		goto out;
	nd->addr = ud->addr;
	for (unsigned i = 0; i < nd->n; i++) {
		/* A child pointer to itself is the shortest loop; deeper ones are
		 * caught by the level check of the walkers. */
		if (nd->child[i] == ud->addr || (nd->level > 0 && !h5_file_range_ok(f, nd->child[i], hlen))) {
			rc = h5_err_set(H5_ERR_FORMAT, "child %u address 0x%llx invalid", i,
					(unsigned long long)nd->child[i]);
			goto out;
		}
	}
	*obj = nd;
	*cost = sizeof(struct bt1_obj) + len * 2;
	nd = NULL;
out:
	if (rc < 0)
		rc = h5_err_wrap(rc, "v1 B-tree node at 0x%llx: ", (unsigned long long)ud->addr);
	free(buf);
	h5_bt1_free(nd);
	return rc;
}

int h5_bt1_get(h5_bt1_node **out, h5_file *f, uint64_t addr, unsigned chunk_ndims_plus1)
{
	struct bt1_load_ud ud = { f, addr, chunk_ndims_plus1 };
	h5_cache_ref ref;
	struct bt1_obj *o;
	h5_bt1_node *nd;
	unsigned want_type = chunk_ndims_plus1 ? 1 : 0;
	int rc;

	*out = NULL;
	if (!h5_addr_defined(addr))
		return h5_err_set(H5_ERR_FORMAT, "v1 B-tree node address is undefined");
	if (chunk_ndims_plus1 > H5_MAX_RANK + 1)
		return h5_err_set(H5_ERR_INVAL, "v1 B-tree: chunk rank %u too large", chunk_ndims_plus1);
	rc = h5_cache_get(&ref, f->meta, H5_CK_BT1, addr, bt1_load, bt1_cache_free, &ud);
	if (rc < 0)
		return rc;
	o = ref.obj;
	__atomic_store_n(&o->ent, ref.ent, __ATOMIC_RELEASE);
	nd = &o->pub;
	/* The cache is keyed by address only: a hostile file can point a group
	 * and a dataset (or two datasets of different rank) at one node. */
	if (nd->type != want_type || nd->ndims != chunk_ndims_plus1) {
		unsigned got_type = nd->type, got_ndims = nd->ndims;

		h5_bt1_release(f, nd);
		return h5_err_set(H5_ERR_FORMAT, "v1 B-tree node at 0x%llx: type %u/rank+1 %u, expected %u/%u",
				  (unsigned long long)addr, got_type, got_ndims, want_type, chunk_ndims_plus1);
	}
	*out = nd;
	return 0;
}

void h5_bt1_release(h5_file *f, h5_bt1_node *n)
{
	struct bt1_obj *o = (struct bt1_obj *)n;
	h5_cache_ref ref;

	if (!n)
		return;
	ref.obj = o;
	ref.ent = __atomic_load_n(&o->ent, __ATOMIC_ACQUIRE);
	h5_cache_release(f->meta, &ref);
}
