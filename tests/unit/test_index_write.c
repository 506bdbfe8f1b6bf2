/* test_index_write.c - the chunk index writers (btree1_write.c,
 * btree2_write.c, farray_write.c, the EA writer in earray.c) through the
 * table append.c uses (h5_cidx_write_ops), read back through the readers
 * (h5_chunk_lookup). libhdf5 (h5py) makes empty datasets of each index
 * type; every record is set here, written as append.c writes it (new blocks
 * past the end of file, then the switch or the in-place commit), and every
 * chunk is looked up again: the records of a first session, then those of
 * a second session that replaces some and grows the grid. Then libhdf5
 * reads indexes the writers rewrote over chunks h5py wrote (fixed and
 * extensible arrays, v2 B-tree in place; a v1 B-tree with the layout
 * switched to its new root). The chunk addresses are made up
 * (never read: only the index is under test). */
#include "testutil.h"
#include "cidx.h"
#include "cidx_write.h"
#include "space.h"
#include "base.h"
#include "rd.h"
#include "cache.h"
#include "file.h"
#include "superblock.h"
#include "ohdr.h"
#include "layout.h"
#include "chunk_rec.h"
#include "dataset.h"
#include "chunk.h"

static char tmpdir[64];

static void setup(void)
{
	strcpy(tmpdir, "/tmp/h5fs-test-idxw-XXXXXX");
}

static void teardown(void)
{
	test_tmp_remove(tmpdir);
}

/* old.h5: libhdf5's earliest format (v1 B-trees); new.h5: "latest" (fixed
 * and extensible arrays, v2 B-trees). No chunk is written: every index
 * starts undefined, as a fresh dataset's does. */
static const char gen_script[] =
	"import sys\n"
	"try:\n"
	"    import h5py\n"
	"except ImportError:\n"
	"    sys.exit(77)\n"
	"d = sys.argv[1]\n"
	"with h5py.File(d + '/old.h5', 'w') as f:\n"
	"    f.create_dataset('bt1', shape=(0,), maxshape=(None,), chunks=(4,), dtype='<i4')\n"
	"    f.create_dataset('bt1z', shape=(0, 6), maxshape=(None, 6), chunks=(2, 3), dtype='<i2',\n"
	"                     compression='gzip')\n"
	"with h5py.File(d + '/new.h5', 'w', libver='latest') as f:\n"
	"    f.create_dataset('fa', shape=(8000,), chunks=(4,), dtype='<i4')\n"
	"    f.create_dataset('faz', shape=(64,), chunks=(4,), dtype='<f8', compression='gzip')\n"
	"    f.create_dataset('bt2', shape=(0, 0), maxshape=(None, None), chunks=(2, 2), dtype='<i4')\n"
	"    f.create_dataset('bt2z', shape=(0, 0), maxshape=(None, None), chunks=(2, 2), dtype='<i4',\n"
	"                     compression='gzip', shuffle=True)\n"
	"    f.create_dataset('ea', shape=(0,), maxshape=(None,), chunks=(4,), dtype='<i4')\n"
	"    f.create_dataset('eaz', shape=(0, 3), maxshape=(None, 3), chunks=(2, 3), dtype='<u1',\n"
	"                     compression='gzip')\n";

/* 0: made; 77: no h5py (the test returns: the writers are then covered by
 * the byte-built files of test_append.c for the EA only). */
static int make_files(void)
{
	int st = test_py_run(tmpdir, gen_script, NULL);

	if (st == 77 || st == TEST_PY_NO_PYTHON) {
		fprintf(stderr, "test_index_write: no /usr/bin/python3 with h5py: skipped\n");
		return 77;
	}
	ck_assert_msg(st == 0, "h5py generator failed: %d", st);
	return 0;
}

typedef struct fixture {
	h5_file *f;
	h5_dataset *d;
} fixture;

static fixture open_ds(const char *file, const char *name, uint8_t idx_type)
{
	char path[128];
	h5_open_opts o = { .writable = 1 };
	fixture x = { 0 };
	h5_link l;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, file);
	ck_assert_msg(h5_file_open(&x.f, path, &o) == 0, "%s: %s", path, h5_err_msg());
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(h5_group_lookup(&l, x.f, h5_file_root(x.f), name), 0);
	ck_assert_msg(h5_dataset_open(&x.d, x.f, l.addr) == 0, "%s: %s", name, h5_err_msg());
	h5_link_clear(&l);
	ck_assert_uint_eq(x.d->layout.cls, H5_LAYOUT_CHUNKED);
	ck_assert_uint_eq(x.d->layout.idx_type, idx_type);
	ck_assert(!h5_addr_defined(x.d->layout.idx_addr));
	return x;
}

static void close_ds(fixture *x)
{
	h5_dataset_close(x->d);
	h5_file_close(x->f);
}

/* The record chunk `sc` gets in session `gen`: addresses and sizes that
 * differ per chunk and per session; filter masks only where filtered. */
static uint64_t key_of(const h5_dataset *d, const uint64_t *sc)
{
	uint64_t k = 0;

	for (unsigned i = 0; i < d->space.rank; i++)
		k = k * 1000 + sc[i];
	return k;
}

static h5_chunk_rec rec_of(const h5_dataset *d, const uint64_t *sc, unsigned gen)
{
	uint64_t k = key_of(d, sc);
	h5_chunk_rec r = { 0x100000 + 64 * k + ((uint64_t)gen << 32), d->chunk_bytes, 0 };

	if (d->pline.n) {
		r.size = 10 + k % 97 + gen;
		r.filter_mask = k % 5 == 0 ? 1 : 0;
	}
	return r;
}

/* Which chunks session 1 rewrites. */
static bool touched(const h5_dataset *d, const uint64_t *sc)
{
	return key_of(d, sc) % 7 == 3;
}

/* Visit the chunks of a grid of n[] chunks, row-major. */
static bool next_cell(uint64_t *sc, const uint64_t *n, unsigned rank)
{
	for (unsigned i = rank; i-- > 0;) {
		if (++sc[i] < n[i])
			return true;
		sc[i] = 0;
	}
	return false;
}

static void set_grid(h5_dataset *d, const uint64_t *n)
{
	for (unsigned i = 0; i < d->space.rank; i++)
		d->space.dims[i] = n[i] * d->layout.chunk[i];
}

/* One write session as append.c runs it: set the records of the chunks of
 * grid n (all in session 0; in later ones the touched chunks and those
 * outside grid `was`), write the new blocks past the end of file, then point
 * the (in-memory) layout at a new index or commit in place. Returns the
 * index address before the session. */
static uint64_t write_session(fixture *x, const uint64_t *n, const uint64_t *was, unsigned gen)
{
	h5_dataset *d = x->d;
	const h5_cidx_write_ops *wo = h5_cidx_write_ops_of(d->layout.idx_type);
	h5_chunk_index *ci;
	uint64_t sc[H5_MAX_RANK] = { 0 }, old = d->layout.idx_addr, end = x->f->eoa, eoa = end;
	void *w;
	size_t nset = 0;

	ck_assert_ptr_nonnull(wo);
	set_grid(d, n);
	ck_assert_msg(h5_chunk_index_open(&ci, d) == 0, "%s", h5_err_msg());
	ck_assert_msg(wo->open(&w, x->f, d, old) == 0, "writer open: %s", h5_err_msg());
	do {
		bool outside = false;
		uint64_t idx;
		h5_chunk_rec r = rec_of(d, sc, gen);

		for (unsigned i = 0; was && i < d->space.rank; i++)
			outside |= sc[i] >= was[i];
		if (gen > 0 && !outside && !touched(d, sc))
			continue;
		ck_assert_int_eq(h5_cidx_linear(&idx, ci, sc), 0);
		ck_assert_msg(wo->set(w, sc, idx, &r) == 0, "set %llu: %s", (unsigned long long)key_of(d, sc),
			      h5_err_msg());
		nset++;
	} while (next_cell(sc, n, d->space.rank));
	ck_assert_uint_gt(nset, 0);
	ck_assert_msg(wo->write(w) == 0, "write: %s", h5_err_msg());
	end = h5_space_end(x->f);
	/* copy-on-write: everything new lies past the old end of file */
	ck_assert_uint_gt(end, eoa);
	x->f->eoa = end;   /* append.c's superblock step, in memory */
	if (wo->addr_is_new(w)) {
		d->layout.idx_addr = wo->addr(w);
		ck_assert_uint_ge(d->layout.idx_addr, eoa);
		if (wo->switched)
			ck_assert_msg(wo->switched(w) == 0, "switched: %s", h5_err_msg());
	} else {
		ck_assert(h5_addr_defined(old));
		ck_assert_uint_eq(wo->addr(w), old);
		ck_assert_msg(wo->commit(w) == 0, "commit: %s", h5_err_msg());
	}
	wo->invalidate(w);
	wo->free(w);
	h5_chunk_index_close(ci);
	return old;
}

/* Every chunk of grid n through the reader: session gen's record where it
 * rewrote the chunk (or the chunk is outside grid `was`), else session 0's;
 * chunks past grid n in an unlimited dimension are unallocated. */
static void verify(fixture *x, const uint64_t *n, const uint64_t *was, unsigned gen)
{
	h5_dataset *d = x->d;
	h5_chunk_index *ci;
	uint64_t sc[H5_MAX_RANK] = { 0 }, grown[H5_MAX_RANK];
	size_t nchecked = 0;

	for (unsigned i = 0; i < d->space.rank; i++)
		grown[i] = n[i] + (d->space.maxdims[i] == H5_UNLIMITED ? 2 : 0);
	set_grid(d, grown);
	ck_assert_msg(h5_chunk_index_open(&ci, d) == 0, "%s", h5_err_msg());
	do {
		h5_chunk_rec got, want;
		bool outside = false, beyond = false;

		for (unsigned i = 0; i < d->space.rank; i++) {
			outside |= was && sc[i] >= was[i];
			beyond |= sc[i] >= n[i];
		}
		want = rec_of(d, sc, gen > 0 && (outside || touched(d, sc)) ? gen : 0);
		ck_assert_msg(h5_chunk_lookup(&got, ci, sc) == 0, "lookup %llu: %s",
			      (unsigned long long)key_of(d, sc), h5_err_msg());
		if (beyond) {
			ck_assert_msg(!h5_addr_defined(got.addr), "chunk %llu past the grid has an address",
				      (unsigned long long)key_of(d, sc));
			continue;
		}
		ck_assert_msg(got.addr == want.addr, "chunk %llu: address 0x%llx, want 0x%llx",
			      (unsigned long long)key_of(d, sc), (unsigned long long)got.addr,
			      (unsigned long long)want.addr);
		if (d->pline.n) {
			ck_assert_uint_eq(got.size, want.size);
			ck_assert_uint_eq(got.filter_mask, want.filter_mask);
		}
		nchecked++;
	} while (next_cell(sc, grown, d->space.rank));
	h5_chunk_index_close(ci);
	set_grid(d, n);
	ck_assert_uint_gt(nchecked, 0);
}

/* Session 0 over grid n0, session 1 rewriting some chunks over grid n1
 * (n1 == n0 for a fixed array); both read back after each. */
static void two_sessions(const char *file, const char *name, uint8_t type, const uint64_t *n0, const uint64_t *n1)
{
	fixture x;
	uint64_t first;

	if (make_files() == 77)
		return;
	x = open_ds(file, name, type);
	write_session(&x, n0, NULL, 0);
	verify(&x, n0, NULL, 0);
	first = write_session(&x, n1, n0, 1);
	ck_assert(h5_addr_defined(first));
	verify(&x, n1, n0, 1);
	if (type == H5_CIDX_BTREE1) {
		/* the v1 B-tree writer copies every node it changes: the first
		 * session's tree is intact under its old root */
		uint64_t cur = x.d->layout.idx_addr;

		ck_assert_uint_ne(cur, first);
		x.d->layout.idx_addr = first;
		verify(&x, n0, NULL, 0);
		x.d->layout.idx_addr = cur;
	}
	close_ds(&x);
}

START_TEST(btree1_rank1_splits)
{
	/* 300 chunks: 64 entries a node (K = 32), so leaves split and the
	 * root becomes internal; then 120 more and every 7th replaced */
	static const uint64_t n0[1] = { 300 }, n1[1] = { 420 };

	two_sessions("old.h5", "bt1", H5_CIDX_BTREE1, n0, n1);
}
END_TEST

START_TEST(btree1_rank2_filtered)
{
	static const uint64_t n0[2] = { 90, 2 }, n1[2] = { 130, 2 };

	two_sessions("old.h5", "bt1z", H5_CIDX_BTREE1, n0, n1);
}
END_TEST

START_TEST(farray_paged)
{
	/* 2000 entries: more than one 1024-entry page */
	static const uint64_t n[1] = { 2000 };

	two_sessions("new.h5", "fa", H5_CIDX_FARRAY, n, n);
}
END_TEST

START_TEST(farray_filtered)
{
	static const uint64_t n[1] = { 16 };

	two_sessions("new.h5", "faz", H5_CIDX_FARRAY, n, n);
}
END_TEST

START_TEST(btree2_rank2)
{
	/* 900 records of 24 bytes in 2048-byte nodes: a tree of several levels */
	static const uint64_t n0[2] = { 30, 30 }, n1[2] = { 36, 31 };

	two_sessions("new.h5", "bt2", H5_CIDX_BTREE2, n0, n1);
}
END_TEST

START_TEST(btree2_filtered)
{
	static const uint64_t n0[2] = { 20, 20 }, n1[2] = { 25, 20 };

	two_sessions("new.h5", "bt2z", H5_CIDX_BTREE2, n0, n1);
}
END_TEST

START_TEST(earray_rank1)
{
	static const uint64_t n0[1] = { 500 }, n1[1] = { 700 };

	two_sessions("new.h5", "ea", H5_CIDX_EARRAY, n0, n1);
}
END_TEST

START_TEST(earray_filtered)
{
	static const uint64_t n0[2] = { 40, 1 }, n1[2] = { 300, 1 };

	two_sessions("new.h5", "eaz", H5_CIDX_EARRAY, n0, n1);
}
END_TEST

/* ---- libhdf5 reads what the writers committed in place --------------------
 * h5py writes every chunk (so each index exists on disk), the writers then
 * replace every 7th record and commit in place, as an append does when the
 * index's header stays where it is, or (v1 B-tree: a new root) switch the
 * layout message to the new index; the superblock's end of file covers
 * the new blocks first. libhdf5 (get_chunk_info_by_coord) must then see the
 * new records for those chunks and the old ones for the rest. */

/* append.c's switch: the layout message's index address, rewritten in a
 * private copy of the header and written back. */
static void switch_layout(fixture *x, const h5_cidx_write_ops *wo, uint64_t addr)
{
	h5_ohdr_edit e = { 0 };
	const h5_msg *lay;
	uint64_t field;
	uint8_t v[8];
	size_t c;

	ck_assert_int_eq(h5_ohdr_load(&e.oh, x->f, x->d->addr), 0);
	e.lo = malloc(e.oh->nchunks * sizeof(*e.lo));
	e.hi = calloc(e.oh->nchunks, sizeof(*e.hi));
	ck_assert(e.lo && e.hi);
	for (c = 0; c < e.oh->nchunks; c++)
		e.lo[c] = SIZE_MAX;
	lay = h5_ohdr_find(e.oh, H5_MSG_LAYOUT);
	ck_assert_ptr_nonnull(lay);
	ck_assert_int_eq(wo->addr_field(&field, lay, &x->f->fmt), 0);
	h5_le_encode(v, addr, x->f->fmt.sizeof_addr);
	ck_assert_int_eq(h5_ohdr_patch(&e, field, v, x->f->fmt.sizeof_addr), 0);
	c = h5_ohdr_chunk_of(e.oh, field);
	ck_assert_uint_ne(c, SIZE_MAX);
	ck_assert_msg(h5_ohdr_write_chunk(x->f, &e, c) == 0, "%s", h5_err_msg());
	h5_cache_invalidate(x->f->meta, H5_CK_OHDR, x->d->addr);
	h5_ohdr_free(e.oh);
	free(e.lo);
	free(e.hi);
}

static const char oracle_gen[] =
	"import sys, json\n"
	"try:\n"
	"    import h5py, numpy as np\n"
	"except ImportError:\n"
	"    sys.exit(77)\n"
	"d = sys.argv[1]\n"
	"with h5py.File(d + '/o.h5', 'w', libver='latest') as f:\n"
	"    f.create_dataset('fa', data=np.arange(8000, dtype='<i4'), chunks=(4,))\n"
	"    f.create_dataset('faz', data=np.arange(64, dtype='<f8'), chunks=(4,), compression='gzip')\n"
	"    f.create_dataset('ea', data=np.arange(400, dtype='<i4'), maxshape=(None,), chunks=(4,))\n"
	"    f.create_dataset('bt2', data=np.arange(400, dtype='<i4').reshape(20, 20), maxshape=(None, None),\n"
	"                     chunks=(2, 2), compression='gzip')\n"
	"    before = {}\n"
	"    for name in ('fa', 'faz', 'ea', 'bt2'):\n"
	"        ds = f[name]\n"
	"        before[name] = [[list(c.chunk_offset), c.byte_offset, c.size, c.filter_mask]\n"
	"                        for c in (ds.id.get_chunk_info(i) for i in range(ds.id.get_num_chunks()))]\n"
	"with h5py.File(d + '/o1.h5', 'w') as f:\n"
	"    ds = f.create_dataset('bt1z', data=np.arange(1200, dtype='<i2').reshape(200, 6), maxshape=(None, 6),\n"
	"                          chunks=(2, 3), compression='gzip')\n"
	"    before['bt1z'] = [[list(c.chunk_offset), c.byte_offset, c.size, c.filter_mask]\n"
	"                      for c in (ds.id.get_chunk_info(i) for i in range(ds.id.get_num_chunks()))]\n"
	"json.dump(before, open(d + '/before.json', 'w'))\n";

/* argv[2]: the dataset; DIR/expect.txt: "scaled... addr size mask" of the
 * chunks rewritten (scaled in chunks, rank numbers). */
static const char oracle_check[] =
	"import sys, json\n"
	"import h5py\n"
	"d, name, file = sys.argv[1], sys.argv[2], sys.argv[3]\n"
	"before = {tuple(c[0]): c[1:] for c in json.load(open(d + '/before.json'))[name]}\n"
	"with h5py.File(d + '/' + file, 'r') as f:\n"
	"    ds = f[name]\n"
	"    rank = len(ds.chunks)\n"
	"    want = dict(before)\n"
	"    for line in open(d + '/expect.txt'):\n"
	"        v = [int(x) for x in line.split()]\n"
	"        off = tuple(v[i] * ds.chunks[i] for i in range(rank))\n"
	"        want[off] = [v[rank], v[rank + 1] if ds.compression else want[off][1], v[rank + 2]]\n"
	"    bad = 0\n"
	"    for off, w in sorted(want.items()):\n"
	"        c = ds.id.get_chunk_info_by_coord(off)\n"
	"        if [c.byte_offset, c.size, c.filter_mask] != w:\n"
	"            bad += 1\n"
	"            if bad < 5:\n"
	"                print('chunk', off, 'libhdf5 reads', c.byte_offset, c.size, c.filter_mask, 'want', w)\n"
	"    print(name, len(want), 'chunks,', bad, 'wrong')\n"
	"sys.exit(1 if bad else 0)\n";

static void oracle_in_place(const char *file, const char *name, uint8_t type, const uint64_t *n)
{
	char path[128], sub[64], args[160];
	fixture x = { 0 };
	h5_open_opts o = { .writable = 1 };
	const h5_cidx_write_ops *wo;
	h5_chunk_index *ci;
	uint64_t sc[H5_MAX_RANK] = { 0 }, end, eoa, idx_before;
	h5_link l;
	void *w;
	FILE *fp;
	int st = test_py_run(tmpdir, oracle_gen, NULL);

	if (st == 77 || st == TEST_PY_NO_PYTHON) {
		fprintf(stderr, "test_index_write: no /usr/bin/python3 with h5py: skipped\n");
		return;
	}
	ck_assert_msg(st == 0, "h5py generator failed: %d", st);
	snprintf(path, sizeof(path), "%s/%s", tmpdir, file);
	ck_assert_msg(h5_file_open(&x.f, path, &o) == 0, "%s", h5_err_msg());
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(h5_group_lookup(&l, x.f, h5_file_root(x.f), name), 0);
	ck_assert_msg(h5_dataset_open(&x.d, x.f, l.addr) == 0, "%s", h5_err_msg());
	h5_link_clear(&l);
	ck_assert_uint_eq(x.d->layout.idx_type, type);
	idx_before = x.d->layout.idx_addr;
	ck_assert(h5_addr_defined(idx_before));
	wo = h5_cidx_write_ops_of(type);
	ck_assert_msg(h5_chunk_index_open(&ci, x.d) == 0, "%s", h5_err_msg());
	ck_assert_msg(wo->open(&w, x.f, x.d, idx_before) == 0, "%s", h5_err_msg());
	snprintf(sub, sizeof(sub), "%s/expect.txt", tmpdir);
	fp = fopen(sub, "w");
	ck_assert_ptr_nonnull(fp);
	do {
		uint64_t li;
		h5_chunk_rec r = rec_of(x.d, sc, 1);

		if (!touched(x.d, sc))
			continue;
		ck_assert_int_eq(h5_cidx_linear(&li, ci, sc), 0);
		ck_assert_msg(wo->set(w, sc, li, &r) == 0, "%s", h5_err_msg());
		for (unsigned i = 0; i < x.d->space.rank; i++)
			fprintf(fp, "%llu ", (unsigned long long)sc[i]);
		fprintf(fp, "%llu %llu %u\n", (unsigned long long)r.addr, (unsigned long long)r.size, r.filter_mask);
	} while (next_cell(sc, n, x.d->space.rank));
	ck_assert_int_eq(fclose(fp), 0);
	end = eoa = x.f->eoa;
	ck_assert_msg(wo->write(w) == 0, "%s", h5_err_msg());
	end = h5_space_end(x.f);
	ck_assert_uint_gt(end, eoa);
	/* append.c's order: the end of file first, then the switch */
	ck_assert_msg(h5_superblock_write_eoa(x.f, end) == 0, "%s", h5_err_msg());
	x.f->eoa = end;
	if (wo->addr_is_new(w)) {
		ck_assert_uint_eq(type, H5_CIDX_BTREE1);        /* the arrays and v2 trees stay put */
		switch_layout(&x, wo, wo->addr(w));
		if (wo->switched)
			ck_assert_msg(wo->switched(w) == 0, "switched: %s", h5_err_msg());
	} else {
		ck_assert_msg(wo->commit(w) == 0, "commit: %s", h5_err_msg());
	}
	ck_assert_int_eq(h5_file_sync(x.f), 0);
	wo->invalidate(w);
	wo->free(w);
	h5_chunk_index_close(ci);
	close_ds(&x);
	snprintf(args, sizeof(args), "'%s' %s %s", tmpdir, name, file);
	snprintf(path, sizeof(path), "%s/check.py", tmpdir);
	fp = fopen(path, "w");
	ck_assert_ptr_nonnull(fp);
	fputs(oracle_check, fp);
	ck_assert_int_eq(fclose(fp), 0);
	{
		char cmd[512];

		snprintf(cmd, sizeof(cmd), "/usr/bin/python3 '%s' %s", path, args);
		ck_assert_msg(system(cmd) == 0, "libhdf5 does not read the records written: %s", cmd);
	}
}

START_TEST(oracle_farray)
{
	static const uint64_t n[1] = { 2000 };

	oracle_in_place("o.h5", "fa", H5_CIDX_FARRAY, n);
}
END_TEST

START_TEST(oracle_farray_filtered)
{
	static const uint64_t n[1] = { 16 };

	oracle_in_place("o.h5", "faz", H5_CIDX_FARRAY, n);
}
END_TEST

START_TEST(oracle_earray)
{
	static const uint64_t n[1] = { 100 };

	oracle_in_place("o.h5", "ea", H5_CIDX_EARRAY, n);
}
END_TEST

START_TEST(oracle_btree2_filtered)
{
	static const uint64_t n[2] = { 10, 10 };

	oracle_in_place("o.h5", "bt2", H5_CIDX_BTREE2, n);
}
END_TEST

START_TEST(oracle_btree1_filtered)
{
	/* 200 chunks: a root over several leaves; the writer copies the
	 * changed leaves and the root, the layout is switched to the new root */
	static const uint64_t n[2] = { 100, 2 };

	oracle_in_place("o1.h5", "bt1z", H5_CIDX_BTREE1, n);
}
END_TEST

/* A fixed array has an entry for every chunk of the maximum dimensions:
 * a record past them is refused, not written somewhere. */
START_TEST(farray_refuses_out_of_range)
{
	fixture x;
	const h5_cidx_write_ops *wo;
	void *w;
	uint64_t sc[1] = { 2000 };
	h5_chunk_rec r = { 0x1000, 0, 0 };

	if (make_files() == 77)
		return;
	x = open_ds("new.h5", "fa", H5_CIDX_FARRAY);
	wo = h5_cidx_write_ops_of(H5_CIDX_FARRAY);
	ck_assert_int_eq(wo->open(&w, x.f, x.d, H5_ADDR_UNDEF), 0);
	ck_assert_int_lt(wo->set(w, sc, 2000, &r), 0);
	ck_assert_int_lt(wo->set(w, sc, UINT64_MAX, &r), 0);
	wo->free(w);
	close_ds(&x);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("index_write");
	TCase *tc = tcase_create("writers");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, btree1_rank1_splits);
	tcase_add_test(tc, btree1_rank2_filtered);
	tcase_add_test(tc, farray_paged);
	tcase_add_test(tc, farray_filtered);
	tcase_add_test(tc, btree2_rank2);
	tcase_add_test(tc, btree2_filtered);
	tcase_add_test(tc, earray_rank1);
	tcase_add_test(tc, earray_filtered);
	tcase_add_test(tc, farray_refuses_out_of_range);
	suite_add_tcase(s, tc);
	tc = tcase_create("libhdf5");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, oracle_farray);
	tcase_add_test(tc, oracle_farray_filtered);
	tcase_add_test(tc, oracle_earray);
	tcase_add_test(tc, oracle_btree2_filtered);
	tcase_add_test(tc, oracle_btree1_filtered);
	suite_add_tcase(s, tc);
	return s;
}

H5_TEST_MAIN(make_suite)
