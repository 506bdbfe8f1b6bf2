/* space_report.c - where FILE's bytes go (h5_space_report_get): every
 * extent the structures reachable from the superblock use, so that what
 * lies below the end of allocation and nothing uses shows. libhdf5 never
 * gives back space a change freed unless it persists free space, and
 * neither does a read-write mount (doc/MODIFY.md): that space is the
 * "unreferenced" bytes, which h5repack reclaims.
 *
 * Reached: the superblock (II.A), its driver information block (II.B),
 * the superblock extension's header (II.C), the shared message table with
 * its indexes and heaps (III.I), the file's persisted free-space managers
 * (III.H); from the root group through hard links, every object header
 * once (IV.A.1: every chunk), symbol tables (III.A.1, III.B, III.D), dense
 * link and attribute storage (III.G fractal heaps, III.A.2 v2 B-trees),
 * data layouts (IV.A.2.i: contiguous data, chunk indexes and chunks), the
 * external file list's local heap (IV.A.2.h), and the global heap
 * collections (III.E) that variable-length data and region references of
 * datasets and attributes point into. Objects only references reach are
 * not followed. The extents are merged by space_extents.c. */
#include "base.h"
#include "addrset.h"
#include "file.h"
#include "ohdr.h"
#include "superblock.h"
#include "btree2.h"
#include "fheap.h"
#include "fspace.h"
#include "lheap.h"
#include "linkmsg.h"
#include "group.h"
#include "dense.h"
#include "attr.h"
#include "dtype.h"
#include "value.h"
#include "gheap.h"
#include "layout.h"
#include "dataset.h"
#include "cidx.h"
#include "space_report.h"
#include "freemark.h"

/* Bytes of variable-length references read at a time. */
#define SW_WINDOW ((size_t)1 << 20)

typedef struct space_walk {
	h5_file *f;
	h5_space_list ext;
	h5_addrset objs;        /* object headers walked */
	h5_addrset gcols;       /* global heap collections counted */
	uint64_t *todo;         /* object headers reached, not walked yet */
	size_t ntodo, captodo;
	uint64_t obj;           /* the object being walked (its attributes) */
	uint64_t tracked_free;
	uint64_t skipped;
} space_walk;

static int add_meta(uint64_t addr, uint64_t len, void *ud)
{
	return h5_space_list_add(&((space_walk *)ud)->ext, addr, len, H5_SPACE_META);
}

static int add_raw(space_walk *w, uint64_t addr, uint64_t len)
{
	return h5_space_list_add(&w->ext, addr, len, H5_SPACE_RAW);
}

/* A global heap collection is counted whole, once, however many values
 * point into it. */
static int add_gcol(uint64_t coll_addr, void *ud)
{
	space_walk *w = ud;
	uint64_t size;
	int rc = h5_addrset_add(&w->gcols, coll_addr);

	if (rc <= 0)
		return rc;
	rc = h5_gheap_coll_size(&size, w->f, coll_addr);
	return rc < 0 ? rc : add_meta(coll_addr, size, w);
}

static int todo_push(space_walk *w, uint64_t addr)
{
	if (w->ntodo == w->captodo) {
		size_t ncap = w->captodo ? w->captodo * 2 : 64;
		uint64_t *n = realloc(w->todo, ncap * sizeof(*n));

		if (!n)
			return h5_err_set(H5_ERR_NOMEM, "out of memory");
		w->todo = n;
		w->captodo = ncap;
	}
	w->todo[w->ntodo++] = addr;
	return 0;
}

static int ohdr_chunks(space_walk *w, const h5_ohdr *oh)
{
	int rc = 0;

	for (size_t i = 0; i < oh->nchunks && rc == 0; i++)
		rc = add_meta(oh->chunks[i].addr, oh->chunks[i].len, w);
	return rc;
}

/* ---- file-wide structures ------------------------------------------------ */

static int fheap_blocks_at(space_walk *w, uint64_t addr)
{
	h5_fheap *h = NULL;
	int rc = h5_fheap_open(&h, w->f, addr);

	if (rc == 0)
		rc = h5_fheap_blocks(h, add_meta, w);
	h5_fheap_close(h);
	return rc;
}

/* III.I: the table, each index (a record list allocated for list_max
 * records, or a v2 B-tree of type 7) and the fractal heap it keeps the
 * shared messages in. */
static int walk_sohm(space_walk *w)
{
	h5_file *f = w->f;
	int rc;

	if (!h5_addr_defined(f->sohm_addr))
		return 0;
	rc = add_meta(f->sohm_addr, h5_sohm_table_size(&f->fmt, f->sohm_nindexes), w);
	for (unsigned i = 0; i < f->sohm_nindexes && rc == 0; i++) {
		const h5_sohm_index *ix = &f->sohm_index[i];

		if (h5_addr_defined(ix->index_addr))
			rc = ix->index_type == 0 ? add_meta(ix->index_addr, h5_sohm_list_size(&f->fmt, ix->list_max), w)
						 : h5_bt2_blocks_at(f, ix->index_addr, add_meta, w);
		if (rc == 0 && h5_addr_defined(ix->heap_addr))
			rc = fheap_blocks_at(w, ix->heap_addr);
	}
	return rc < 0 ? h5_err_wrap(rc, "shared message table: ") : rc;
}

static int walk_superblock(space_walk *w)
{
	h5_file *f = w->f;
	h5_ohdr *oh = NULL;
	int rc;

	rc = add_meta(0, f->sb_size, w);
	if (rc == 0 && h5_addr_defined(f->drvinfo_addr))
		rc = add_meta(f->drvinfo_addr, f->drvinfo_size, w);
	if (rc == 0 && h5_addr_defined(f->ext_addr)) {
		rc = h5_ohdr_get(&oh, f, f->ext_addr);
		if (rc < 0)
			return h5_err_wrap(rc, "superblock extension: ");
		rc = ohdr_chunks(w, oh);
		h5_ohdr_release(f, oh);
	}
	if (rc == 0)
		rc = walk_sohm(w);
	/* the file's own managers list free space (client 1); a heap's
	 * (client 0) lists space inside the heap's blocks */
	for (unsigned i = 0; i < f->nfsm && rc == 0; i++) {
		h5_fspace_hdr h;

		/* a manager named outside the file is none: libhdf5
		 * pre-releases wrote File Space Info messages of another layout
		 * (the corpus's paged_*.h5), and h5clear's tests cut the end of
		 * allocation below one; libhdf5 loads neither */
		if (!h5_file_range_ok(f, f->fsm_addr[i], h5_fspace_hdr_size(&f->fmt))) {
			w->skipped++;
			continue;
		}
		rc = h5_fspace_blocks(&h, f, f->fsm_addr[i], add_meta, w);
		if (rc == 0 && h.client == H5_FS_CLIENT_FILE)
			w->tracked_free += h.tot_space;
	}
	return rc;
}

/* ---- objects ------------------------------------------------------------- */

/* What a damaged attribute holds (its message, or the object's
 * attribute list, does not decode, in a file h5fs-ls lists all the same)
 * is no reference the walk can follow: its bytes are its header's,
 * already counted; it is skipped. */
static int skip_damaged(space_walk *w, int rc)
{
	if (rc != H5_ERR_FORMAT && rc != H5_ERR_UNSUPPORTED && rc != H5_ERR_LIMIT)
		return rc;
	h5_err_clear();
	w->skipped++;
	return 0;
}

static int attr_refs_cb(const char *name, size_t len, void *ud)
{
	space_walk *w = ud;
	h5_attr_msg a;
	int rc = h5_attr_find(&a, w->f, w->obj, name, len);

	if (rc < 0)
		return skip_damaged(w, rc);
	if (a.dtype->size)
		rc = h5_value_heap_refs(w->f, a.dtype, a.data, a.data_size, a.data_size / a.dtype->size, add_gcol, w);
	h5_attr_msg_clear(&a);
	return rc;
}

static int link_cb(const h5_link *l, void *ud)
{
	return l->type == H5_LINK_HARD ? todo_push(ud, l->addr) : 0;
}

static int walk_group(space_walk *w, const h5_ohdr *oh, uint64_t addr)
{
	h5_group_storage gs;
	int rc = h5_group_storage_get(&gs, w->f, oh, addr);

	if (rc < 0)
		return rc;
	if (gs.form == H5_GROUP_STAB)
		rc = h5_group_stab_blocks(w->f, &gs.stab, add_meta, w);
	else if (gs.form == H5_GROUP_DENSE)
		rc = h5_dense_blocks(w->f, H5_DENSE_LINKS, gs.linfo.fheap_addr, gs.linfo.name_bt2_addr,
				     gs.linfo.corder_bt2_addr, add_meta, w);
	return rc < 0 ? rc : h5_group_iterate(w->f, addr, link_cb, w);
}

struct chunk_walk {
	space_walk *w;
	uint64_t chunk_bytes;
};

static int chunk_cb(const uint64_t *scaled, const h5_chunk_rec *rec, void *ud)
{
	struct chunk_walk *c = ud;

	(void)scaled;
	/* unfiltered chunks of the array indexes record no size: a full chunk */
	return add_raw(c->w, rec->addr, rec->size ? rec->size : c->chunk_bytes);
}

/* The index's own blocks (the table's blocks op) and every chunk it holds,
 * at its stored size. */
static int walk_chunks(space_walk *w, h5_dataset *d)
{
	h5_chunk_index *ci = d->cidx;
	struct chunk_walk c = { w, 0 };
	int rc = 0;

	if (!ci || !h5_addr_defined(d->layout.idx_addr))
		return 0;
	c.chunk_bytes = ci->chunk_bytes;
	if (ci->ops->blocks)
		rc = ci->ops->blocks(ci, add_meta, w);
	return rc < 0 ? rc : ci->ops->iterate(ci, chunk_cb, &c);
}

/* The heap references of every stored element, a window at a time. */
static int walk_data_refs(space_walk *w, h5_dataset *d)
{
	size_t esize = d->dtype->size, win;
	uint8_t *buf = NULL;
	int rc = 0;

	if (!esize)
		return 0;
	win = SW_WINDOW < esize ? esize : SW_WINDOW - SW_WINDOW % esize;
	buf = malloc(win);
	if (!buf)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	for (uint64_t off = 0; off < d->nbytes && rc == 0; off += win) {
		size_t n = d->nbytes - off < win ? (size_t)(d->nbytes - off) : win;

		rc = h5_dataset_read_raw(d, buf, off, n);
		if (rc == 0)
			rc = h5_value_heap_refs(w->f, d->dtype, buf, n, n / esize, add_gcol, w);
	}
	free(buf);
	return rc;
}

/* A dataset's storage. Its messages say what there is; the dataset is
 * opened (its chunk index) only for chunks, contiguous data and heap
 * references, so a virtual dataset's sources are never looked for. */
static int walk_dataset(space_walk *w, const h5_ohdr *oh, uint64_t addr)
{
	h5_dataset m = { .f = w->f };
	h5_dataset *d = NULL;
	bool contig, refs;
	int rc;

	rc = h5_dataset_msgs_decode(&m, oh, true);
	if (rc < 0)
		goto out;
	contig = m.layout.cls == H5_LAYOUT_CONTIGUOUS && !m.efl.n && h5_addr_defined(m.layout.addr);
	refs = m.layout.cls != H5_LAYOUT_VIRTUAL && h5_dtype_has_heap_refs(m.dtype);
	if (m.efl.n && h5_addr_defined(m.efl.heap_addr))
		rc = h5_lheap_blocks(w->f, m.efl.heap_addr, add_meta, w);
	if (rc == 0 && m.layout.cls == H5_LAYOUT_VIRTUAL && h5_addr_defined(m.layout.vds_heap_addr))
		rc = add_gcol(m.layout.vds_heap_addr, w);
	if (rc < 0 || !(contig || refs || m.layout.cls == H5_LAYOUT_CHUNKED))
		goto out;
	rc = h5_dataset_open(&d, w->f, addr);
	if (rc < 0)
		goto out;
	if (m.layout.cls == H5_LAYOUT_CHUNKED)
		rc = walk_chunks(w, d);
	else if (contig)
		rc = add_raw(w, d->layout.addr, h5_dataset_allocated(d));
	if (rc == 0 && refs)
		rc = walk_data_refs(w, d);
out:
	h5_dataset_close(d);
	h5_dataset_msgs_clear(&m);
	return rc;
}

static int walk_object(space_walk *w, uint64_t addr)
{
	h5_ohdr *oh = NULL;
	int rc;

	rc = h5_ohdr_get(&oh, w->f, addr);
	if (rc < 0)
		return rc;
	w->obj = addr;
	rc = ohdr_chunks(w, oh);
	if (rc == 0)
		rc = h5_attr_dense_blocks(w->f, oh, add_meta, w);
	if (rc == 0)
		rc = skip_damaged(w, h5_attr_iterate_names(w->f, addr, attr_refs_cb, w));
	if (rc == 0 && h5_ohdr_is_group(oh))
		rc = walk_group(w, oh, addr);
	else if (rc == 0 && h5_ohdr_find(oh, H5_MSG_LAYOUT))
		rc = walk_dataset(w, oh, addr);
	h5_ohdr_release(w->f, oh);
	return rc;
}

/* A hole of [0, eoa): its bytes counted as punched, and the extent a
 * free marker in the block before it names (write/space_punch.c) as
 * marked free */
struct hole_ctx {
	h5_space_report *r;
	h5_file *f;
};

static int hole_count(void *ud, uint64_t h, uint64_t d)
{
	struct hole_ctx *c = ud;
	h5_space_report *r = c->r;
	uint8_t b[H5_FREEMARK_LEN];
	uint64_t len, a;

	r->punched += (d < r->eoa ? d : r->eoa) - h;
	if ((r->user_block + h) % H5_FREEMARK_BLOCK || h < H5_FREEMARK_BLOCK)
		return 0;
	a = h - H5_FREEMARK_BLOCK;
	if (h5_file_read(c->f, a, b, sizeof(b)) < 0) {
		h5_err_clear();
		return 0;
	}
	len = h5_freemark_decode(b, r->user_block, a, r->eoa);
	if (len && d >= a + len)
		r->marked_free += len;
	return 0;
}

int h5_space_report_get(h5_space_report *out, h5_file *f)
{
	space_walk w = { .f = f };
	h5_space_sums sums;
	uint64_t size = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = walk_superblock(&w);
	if (rc == 0)
		rc = todo_push(&w, f->root_addr);
	while (rc == 0 && w.ntodo) {
		uint64_t addr = w.todo[--w.ntodo];

		rc = h5_addrset_add(&w.objs, addr);
		if (rc <= 0)
			continue; /* walked already (rc 0), or rc < 0 ends the loop */
		rc = walk_object(&w, addr);
		if (rc < 0)
			rc = h5_err_wrap(rc, "object 0x%llx: ", (unsigned long long)addr);
	}
	if (rc == 0)
		rc = h5_file_size(f, &size);
	if (rc < 0)
		goto out;
	h5_space_merge(&sums, w.ext.v, w.ext.n, f->eoa);
	out->file_size = size;
	out->user_block = f->base;
	out->eoa = f->eoa;
	out->used = sums.used;
	out->meta = sums.by_kind[H5_SPACE_META];
	out->raw = sums.by_kind[H5_SPACE_RAW];
	out->past_eoa = sums.past_eoa;
	out->unreferenced = f->eoa - sums.used;
	out->tracked_free = w.tracked_free;
	out->skipped = w.skipped;
	out->objects = w.objs.t.n;
	out->extents = w.ext.n;
	out->disk = h5_file_disk_bytes(f);
	{
		struct hole_ctx c = { out, f };

		rc = h5_file_holes(f, 0, f->eoa, hole_count, &c);
	}
out:
	h5_space_list_free(&w.ext);
	h5_addrset_free(&w.objs);
	h5_addrset_free(&w.gcols);
	free(w.todo);
	return rc;
}
