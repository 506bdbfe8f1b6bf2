/* test_append.c - the extensible array writer (earray_write.c) and appending rows
 * (append.c), on files built here byte by byte: a v2 superblock and one
 * dataset object header (no libhdf5 needed). When /usr/bin/python3 has
 * h5py, the appended file is also read back by libhdf5. */
#include "testutil.h"
#include "array.h"
#include "earray_write.h"
#include "space.h"
#include "base.h"
#include "rd.h"
#include "checksum.h"
#include "cache.h"
#include "file.h"
#include "ohdr.h"
#include "layout.h"
#include "chunk_rec.h"
#include "dataset.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define SB_SIZE 48
#define DS_ADDR 48

static char tmpdir[64];

static void setup(void)
{
	strcpy(tmpdir, "/tmp/h5fs-test-append-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown(void)
{
	test_tmp_remove(tmpdir);
}

static void msg(tbuf *b, uint8_t type, const tbuf *body)
{
	tb_u8(b, type);
	tb_u16(b, (uint16_t)body->len);
	tb_u8(b, 0);
	tb_put(b, body->p, body->len);
}

enum { DS_UNLIMITED = 0, DS_FIXEDMAX = 1, DS_BTREE2 = 2 };

/* One int32 dataset, rank 1, `rows` rows (no storage yet: a dataset whose
 * rows are all fill), chunks of `chunk` rows, extensible array index. */
static tbuf build_file(int variant, uint64_t rows, uint32_t chunk, int with_mtime)
{
	tbuf b = { 0 }, oh = { 0 }, m = { 0 };
	size_t start;

	tb_sb2_start(&b, DS_ADDR);       /* "root": the dataset (never read as a group here) */
	/* dataspace v2: rank 1, max dims present */
	tb_u8(&m, 2); tb_u8(&m, 1); tb_u8(&m, 1); tb_u8(&m, 1);
	tb_u64(&m, rows);
	tb_u64(&m, variant == DS_FIXEDMAX ? rows + 100 : UINT64_MAX);
	msg(&oh, H5_MSG_DSPACE, &m);
	m.len = 0;
	/* datatype: fixed-point v1, little-endian signed, 4 bytes, 32 bits */
	tb_u8(&m, 0x10); tb_u8(&m, 0x08); tb_u8(&m, 0); tb_u8(&m, 0);
	tb_u32(&m, 4);
	tb_u16(&m, 0); tb_u16(&m, 32);
	msg(&oh, H5_MSG_DTYPE, &m);
	m.len = 0;
	/* layout v4, chunked: rank + 1 dims of 4 bytes, then the index */
	tb_u8(&m, 4); tb_u8(&m, 2); tb_u8(&m, 0); tb_u8(&m, 2); tb_u8(&m, 4);
	tb_u32(&m, chunk);
	tb_u32(&m, 4);
	if (variant == DS_BTREE2) {
		tb_u8(&m, H5_CIDX_BTREE2);
		tb_u32(&m, 2048); tb_u8(&m, 100); tb_u8(&m, 40);
	} else {
		tb_u8(&m, H5_CIDX_EARRAY);
		tb_u8(&m, 32); tb_u8(&m, 4); tb_u8(&m, 4); tb_u8(&m, 16); tb_u8(&m, 10);
	}
	tb_u64(&m, UINT64_MAX);
	msg(&oh, H5_MSG_LAYOUT, &m);
	m.len = 0;
	if (with_mtime) {
		tb_u8(&m, 1); tb_zero(&m, 3); tb_u32(&m, 1000);
		msg(&oh, H5_MSG_MTIME, &m);
	}
	start = b.len;
	tb_str(&b, "OHDR");
	tb_u8(&b, 2);
	tb_u8(&b, 0x01);            /* chunk 0 size in 2 bytes */
	tb_u16(&b, (uint16_t)oh.len);
	tb_put(&b, oh.p, oh.len);
	tb_checksum(&b, start);
	tb_sb2_finish(&b);
	tb_free(&oh);
	tb_free(&m);
	return b;
}

static char *write_file(const char *name, const tbuf *b)
{
	char *path = malloc(strlen(tmpdir) + strlen(name) + 2);

	ck_assert_ptr_nonnull(path);
	sprintf(path, "%s/%s", tmpdir, name);
	test_write_file(path, b);
	return path;
}

static h5_file *open_file(const char *path, int writable)
{
	return test_open(path, (h5_open_opts){ .writable = writable });
}

static uint8_t *slurp(const char *path, size_t *len)
{
	struct stat st;
	uint8_t *p;
	FILE *fp = fopen(path, "rb");

	ck_assert_ptr_nonnull(fp);
	ck_assert_int_eq(fstat(fileno(fp), &st), 0);
	p = malloc((size_t)st.st_size + 1);
	ck_assert_ptr_nonnull(p);
	*len = fread(p, 1, (size_t)st.st_size, fp);
	fclose(fp);
	return p;
}

/* ---- the EA writer against the reference geometry ------------------------------ */

static const h5_ea_cparam default_cp = { H5_ARR_CLIENT_CHUNK, 8, 32, 4, 16, 4, 10 };

/* A new array holding elements [0, n) with chunk address base + 4 i. */
static uint64_t new_array(h5_file *f, uint64_t n, uint64_t base)
{
	h5_eaw *w;
	uint64_t eoa = f->eoa, hdr;

	ck_assert_int_eq(h5_eaw_open(&w, f, H5_ADDR_UNDEF, &default_cp), 0);
	for (uint64_t i = 0; i < n; i++) {
		h5_chunk_rec r = { base + 4 * i, 0, 0 };

		ck_assert_msg(h5_eaw_set(w, i, &r) == 0, "set %llu: %s", (unsigned long long)i, h5_err_msg());
	}
	ck_assert_msg(h5_eaw_write(w) == 0, "%s", h5_err_msg());
	eoa = h5_space_end(f);
	ck_assert(h5_eaw_hdr_is_new(w));
	hdr = h5_eaw_hdr(w)->addr;
	ck_assert_uint_eq(hdr, f->eoa);  /* the header is placed first */
	h5_eaw_free(w);
	f->eoa = eoa;
	return hdr;
}

START_TEST(writer_worked_example)
{
	tbuf b = build_file(DS_UNLIMITED, 0, 4, 0);
	char *path = write_file("ea500.h5", &b);
	h5_file *f = open_file(path, 1);
	const h5_ea_hdr *h;
	h5_cache_ref ref;
	h5_ea_iblock *ib;
	h5_ea_sblock *sb;
	uint8_t *buf;
	static const uint64_t offs[6] = { 0, 48, 112, 144, 368, 432 };
	uint64_t hdr = new_array(f, 500, 0x800);

	ck_assert_int_eq(h5_ea_hdr_get(&h, &ref, f, hdr), 0);
	/* the counters libhdf5 writes for 500 chunks (extensible-array-reference.md) */
	ck_assert_uint_eq(h->nsblks_created, 1);
	ck_assert_uint_eq(h->sblks_size, 54);
	ck_assert_uint_eq(h->ndblks_created, 10);
	ck_assert_uint_eq(h->dblks_size, 4188);
	ck_assert_uint_eq(h->max_idx_set, 500);
	ck_assert_uint_eq(h->nelmts, 500);
	ck_assert_int_eq(h5_file_read_alloc(&buf, f, h->iblock_addr, (size_t)h5_ea_iblock_size(h, &f->fmt)), 0);
	ck_assert_int_eq(h5_ea_iblock_decode(&ib, h, &f->fmt, h->iblock_addr, buf,
					     (size_t)h5_ea_iblock_size(h, &f->fmt)), 0);
	free(buf);
	/* index-block data blocks carry libhdf5's "inflated" block offsets: the
	 * decoder checks each against the expected value */
	for (unsigned d = 0; d < 6; d++) {
		unsigned u = d == 0 ? 0 : d == 1 ? 1 : d < 4 ? 2 : 3;
		uint64_t n = h->g.sb_dblk_nelmts[u], size = h5_ea_dblock_size(h, &f->fmt, n);
		h5_ea_dblock *db;

		ck_assert_uint_eq(h5_ea_dblock_off(&h->g, u, d), offs[d]);
		ck_assert(h5_addr_defined(ib->dblk_addrs[d]));
		ck_assert_int_eq(h5_file_read_alloc(&buf, f, ib->dblk_addrs[d], (size_t)size), 0);
		ck_assert_msg(h5_ea_dblock_decode(&db, h, &f->fmt, ib->dblk_addrs[d], n, offs[d], buf, (size_t)size) == 0,
			      "%s", h5_err_msg());
		ck_assert_uint_eq(db->block_off, offs[d]);
		h5_ea_dblock_free(db);
		free(buf);
	}
	/* chunks 244..499: one super block (index 4) of 4 data blocks */
	ck_assert(h5_addr_defined(ib->sblk_addrs[0]));
	for (unsigned s = 1; s < h->g.nsblk_addrs; s++)
		ck_assert(!h5_addr_defined(ib->sblk_addrs[s]));
	ck_assert_int_eq(h5_file_read_alloc(&buf, f, ib->sblk_addrs[0], 54), 0);
	ck_assert_int_eq(h5_ea_sblock_decode(&sb, h, &f->fmt, ib->sblk_addrs[0], 4, buf, 54), 0);
	ck_assert_uint_eq(sb->block_off, 240);
	for (unsigned d = 0; d < 4; d++)
		ck_assert(h5_addr_defined(sb->dblk_addrs[d]));
	h5_ea_sblock_free(sb);
	free(buf);
	h5_ea_iblock_free(ib);
	h5_cache_release(f->meta, &ref);
	for (uint64_t i = 0; i < 510; i++) {
		h5_chunk_rec r;

		ck_assert_int_eq(h5_ea_lookup(&r, f, hdr, i), 0);
		ck_assert_uint_eq(r.addr, i < 500 ? 0x800 + 4 * i : H5_ADDR_UNDEF);
	}
	h5_file_close(f);
	free(path);
	tb_free(&b);
}
END_TEST

START_TEST(writer_paged_blocks)
{
	tbuf b = build_file(DS_UNLIMITED, 0, 4, 0);
	char *path = write_file("paged.h5", &b);
	h5_file *f = open_file(path, 1);
	const h5_ea_hdr *h;
	h5_cache_ref ref;
	h5_ea_geom g;
	h5_ea_loc loc;
	h5_ea_iblock *ib;
	h5_ea_sblock *sb;
	uint8_t *buf;
	uint64_t hdr = new_array(f, 131101, 0x100000), size;
	h5_chunk_rec r;

	/* chunk 131,060 is the first in a paged data block (super block 13) */
	ck_assert_int_eq(h5_ea_geom_init(&g, 32, 4, 16, 4, 10), 0);
	ck_assert_int_eq(h5_ea_locate(&loc, &g, 131059), 0);
	ck_assert(!loc.paged);
	ck_assert_int_eq(h5_ea_locate(&loc, &g, 131060), 0);
	ck_assert(loc.paged);
	ck_assert_uint_eq(loc.sblk_idx, 13);
	ck_assert_int_eq(h5_ea_hdr_get(&h, &ref, f, hdr), 0);
	ck_assert_uint_eq(h->max_idx_set, 131101);
	ck_assert_uint_eq(h->nsblks_created, 10);   /* super blocks 4..13 */
	ck_assert_uint_eq(h5_ea_dblock_alloc_size(h, &f->fmt, 2048), 18 + 4 + 2 * (1024 * 8 + 4));
	size = h5_ea_iblock_size(h, &f->fmt);
	ck_assert_int_eq(h5_file_read_alloc(&buf, f, h->iblock_addr, (size_t)size), 0);
	ck_assert_int_eq(h5_ea_iblock_decode(&ib, h, &f->fmt, h->iblock_addr, buf, (size_t)size), 0);
	free(buf);
	size = h5_ea_sblock_size(h, &f->fmt, 13);
	ck_assert_int_eq(h5_file_read_alloc(&buf, f, ib->sblk_addrs[9], (size_t)size), 0);
	ck_assert_int_eq(h5_ea_sblock_decode(&sb, h, &f->fmt, ib->sblk_addrs[9], 13, buf, (size_t)size), 0);
	/* elements 131060..131100 all lie in page 0 of data block 0 */
	ck_assert_uint_eq(sb->npages, 2);
	ck_assert_uint_eq(sb->page_init[0], 0x80);
	for (uint64_t i = 1; i < sb->ndblks * sb->page_init_size; i++)
		ck_assert_uint_eq(sb->page_init[i], 0);
	ck_assert(h5_addr_defined(sb->dblk_addrs[0]));
	ck_assert(!h5_addr_defined(sb->dblk_addrs[1]));
	h5_ea_sblock_free(sb);
	h5_ea_iblock_free(ib);
	free(buf);
	h5_cache_release(f->meta, &ref);
	for (uint64_t i = 131000; i < 131200; i++) {
		ck_assert_int_eq(h5_ea_lookup(&r, f, hdr, i), 0);
		ck_assert_uint_eq(r.addr, i < 131101 ? 0x100000 + 4 * i : H5_ADDR_UNDEF);
	}
	h5_file_close(f);
	free(path);
	tb_free(&b);
}
END_TEST

/* A second writer copies what it changes: the old index block (and data
 * block) stay intact on disk, and only the header points elsewhere. */
START_TEST(writer_copy_on_write)
{
	tbuf b = build_file(DS_UNLIMITED, 0, 4, 0);
	char *path = write_file("cow.h5", &b);
	h5_file *f = open_file(path, 1);
	const h5_ea_hdr *h;
	h5_cache_ref ref;
	h5_eaw *w;
	uint64_t hdr = new_array(f, 100, 0x1000), old_ib, eoa, end0;
	uint8_t *before, *after;
	size_t ibsize;
	h5_chunk_rec r = { 0x9000, 0, 0 };

	ck_assert_int_eq(h5_ea_hdr_get(&h, &ref, f, hdr), 0);
	old_ib = h->iblock_addr;
	ibsize = (size_t)h5_ea_iblock_size(h, &f->fmt);
	h5_cache_release(f->meta, &ref);
	ck_assert_int_eq(h5_file_read_alloc(&before, f, old_ib, ibsize), 0);
	end0 = eoa = f->eoa;
	ck_assert_int_eq(h5_eaw_open(&w, f, hdr, &default_cp), 0);
	ck_assert(!h5_eaw_hdr_is_new(w));
	ck_assert_int_eq(h5_eaw_set(w, 3, &r), 0);      /* in the index block */
	ck_assert_int_eq(h5_eaw_set(w, 100, &r), 0);    /* an existing data block */
	ck_assert_int_eq(h5_eaw_write(w), 0);
	eoa = h5_space_end(f);
	ck_assert_uint_gt(eoa, end0);
	/* before the commit the array on disk is the old one */
	h5_eaw_invalidate(w);
	ck_assert_int_eq(h5_ea_lookup(&r, f, hdr, 3), 0);
	ck_assert_uint_eq(r.addr, 0x1000 + 12);
	ck_assert_int_eq(h5_eaw_commit(w), 0);
	ck_assert_int_eq(h5_eaw_set(w, 5, &r), H5_ERR_INVAL);  /* after write */
	h5_eaw_invalidate(w);
	h5_eaw_free(w);
	f->eoa = eoa;
	ck_assert_int_eq(h5_ea_hdr_get(&h, &ref, f, hdr), 0);
	ck_assert_uint_ne(h->iblock_addr, old_ib);
	ck_assert_uint_ge(h->iblock_addr, end0);
	ck_assert_uint_eq(h->max_idx_set, 101);
	ck_assert_uint_eq(h->ndblks_created, 4);   /* unchanged by copies: 16 + 32 + 32 + 32 elements */
	h5_cache_release(f->meta, &ref);
	ck_assert_int_eq(h5_file_read_alloc(&after, f, old_ib, ibsize), 0);
	ck_assert_mem_eq(before, after, ibsize);
	ck_assert_int_eq(h5_ea_lookup(&r, f, hdr, 3), 0);
	ck_assert_uint_eq(r.addr, 0x9000);
	ck_assert_int_eq(h5_ea_lookup(&r, f, hdr, 99), 0);
	ck_assert_uint_eq(r.addr, 0x1000 + 4 * 99);
	ck_assert_int_eq(h5_ea_lookup(&r, f, hdr, 100), 0);
	ck_assert_uint_eq(r.addr, 0x9000);
	free(before);
	free(after);
	h5_file_close(f);
	free(path);
	tb_free(&b);
}
END_TEST

START_TEST(writer_refuses)
{
	tbuf b = build_file(DS_UNLIMITED, 0, 4, 0);
	char *path = write_file("ref.h5", &b);
	h5_file *f = open_file(path, 1), *ro;
	h5_eaw *w;
	h5_ea_cparam cp = default_cp;
	uint64_t hdr = new_array(f, 10, 0x1000), eoa = f->eoa;
	h5_chunk_rec undef = { H5_ADDR_UNDEF, 0, 0 }, r = { 0x10, 0, 0 };
	uint8_t bad = 0;

	ck_assert_int_eq(h5_eaw_open(&w, f, hdr, &default_cp), 0);
	/* an undefined address is a chunk not stored: a punched hole's (issue 65) */
	ck_assert_int_eq(h5_eaw_set(w, 1, &undef), 0);
	ck_assert_int_eq(h5_eaw_set(w, UINT64_C(1) << 32, &r), H5_ERR_LIMIT);
	ck_assert_int_eq(h5_eaw_commit(w), H5_ERR_INVAL);      /* before write */
	h5_eaw_free(w);
	/* parameters that differ from the header's */
	cp.elmt_size = 13;
	cp.client = H5_ARR_CLIENT_FILT_CHUNK;
	ck_assert_int_eq(h5_eaw_open(&w, f, hdr, &cp), H5_ERR_FORMAT);
	cp = default_cp;
	cp.elmt_size = 3;   /* impossible for unfiltered chunks */
	ck_assert_int_eq(h5_eaw_open(&w, f, H5_ADDR_UNDEF, &cp), H5_ERR_FORMAT);
	/* a corrupted header is not written over */
	ck_assert_int_eq(h5_file_read(f, hdr + 20, &bad, 1), 0);
	bad ^= 0xff;
	ck_assert_int_eq(h5_file_write(f, hdr + 20, &bad, 1), 0);
	h5_cache_invalidate(f->meta, H5_CK_EA_HDR, hdr);
	ck_assert_int_ne(h5_eaw_open(&w, f, hdr, &default_cp), 0);
	h5_file_close(f);
	/* read-only file */
	ro = open_file(path, 0);
	ck_assert_int_eq(h5_eaw_open(&w, ro, H5_ADDR_UNDEF, &default_cp), H5_ERR_ROFS);
	ck_assert_uint_gt(eoa, 0);
	h5_file_close(ro);
	free(path);
	tb_free(&b);
}
END_TEST

/* ---- appending rows ---------------------------------------------------------------- */

static void read_back(const char *path, int32_t *out, uint64_t nrows)
{
	h5_file *f = open_file(path, 0);
	h5_dataset *d;

	ck_assert_msg(h5_dataset_open(&d, f, DS_ADDR) == 0, "%s", h5_err_msg());
	ck_assert_uint_eq(h5_dataset_size(d), nrows * 4);
	ck_assert_msg(h5_dataset_read(d, out, 0, (size_t)nrows * 4) == 0, "%s", h5_err_msg());
	h5_dataset_close(d);
	h5_file_close(f);
}

/* Run a Python script with /usr/bin/python3 (from its own dir under
 * tmpdir, after a prelude importing sys, h5py and numpy as np): its exit
 * status, 77 when h5py (or Python) is not there. */
static int run_py(const char *script)
{
	static const char prelude[] = "import sys\ntry:\n    import h5py, numpy as np\nexcept ImportError:\n    sys.exit(77)\n";
	char dir[128], *text = malloc(sizeof(prelude) + strlen(script));
	int st;

	ck_assert_ptr_nonnull(text);
	memcpy(text, prelude, sizeof(prelude) - 1);
	strcpy(text + sizeof(prelude) - 1, script);
	snprintf(dir, sizeof(dir), "%s/pyXXXXXX", tmpdir);
	st = test_py_run(dir, text, NULL);
	free(text);
	if (st == TEST_PY_NO_PYTHON)
		return 77;
	ck_assert_msg(st != TEST_PY_NO_DIR && st != TEST_PY_NO_SCRIPT, "cannot write a script under %s", tmpdir);
	return st < 0 ? 1 : st;
}

/* A file libhdf5 made (2-D, shuffle+deflate+fletcher32, rows already in a
 * partial chunk), grown here, read back by libhdf5. */
START_TEST(append_h5py_roundtrip)
{
	char script[2048], path[128];
	h5_file *f;
	h5_link l;
	h5_appender *a;
	double rows[40 * 3];
	int rc;

	snprintf(path, sizeof(path), "%s/py.h5", tmpdir);
	snprintf(script, sizeof(script),
		 "with h5py.File('%s', 'w', libver='latest') as f:\n"
		 "    d = f.create_dataset('m', shape=(5, 3), maxshape=(None, 3), chunks=(4, 2), dtype='<f8',\n"
		 "                         compression='gzip', shuffle=True, fletcher32=True, fillvalue=-1)\n"
		 "    d[:] = np.arange(15).reshape(5, 3)\n", path);
	rc = run_py(script);
	if (rc == 77)
		return;   /* no h5py: covered by the crafted files above */
	ck_assert_int_eq(rc, 0);
	for (int i = 0; i < 40 * 3; i++)
		rows[i] = 15 + i;
	f = open_file(path, 1);
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(h5_group_lookup(&l, f, h5_file_root(f), "m"), 0);
	ck_assert_msg(h5_append_open(&a, f, l.addr) == 0, "%s", h5_err_msg());
	ck_assert_int_eq(h5_append_write(a, rows, 7 * 24), 0);
	ck_assert_int_eq(h5_append_flush(a), 0);
	ck_assert_int_eq(h5_append_write(a, rows + 21, 33 * 24), 0);
	ck_assert_int_eq(h5_append_close(a, NULL), 0);
	h5_link_clear(&l);
	h5_file_close(f);
	snprintf(script, sizeof(script),
		 "with h5py.File('%s', 'r') as f:\n"
		 "    x = f['m'][()]\n"
		 "sys.exit(0 if x.shape == (45, 3) and (x.ravel() == np.arange(135)).all() else 1)\n", path);
	ck_assert_int_eq(run_py(script), 0);
}
END_TEST

START_TEST(append_rows_in_odd_pieces)
{
	tbuf b = build_file(DS_UNLIMITED, 0, 5, 1);
	char *path = write_file("rows.h5", &b);
	h5_file *f = open_file(path, 1);
	h5_appender *a;
	int32_t rows[203], got[203];
	size_t partial = 99;
	uint64_t size0;

	for (int i = 0; i < 203; i++)
		rows[i] = i * 3 - 100;
	ck_assert_msg(h5_append_open(&a, f, DS_ADDR) == 0, "%s", h5_err_msg());
	ck_assert_uint_eq(h5_append_row_bytes(a), 4);
	ck_assert_uint_eq(h5_append_committed(a), 0);
	/* 7 bytes at a time: rows straddle writes */
	for (size_t off = 0; off < 100 * 4; off += 7) {
		size_t n = 100 * 4 - off < 7 ? 100 * 4 - off : 7;

		ck_assert_int_eq(h5_append_write(a, (uint8_t *)rows + off, n), 0);
	}
	ck_assert_uint_eq(h5_append_size(a), 400);
	ck_assert_int_eq(h5_append_flush(a), 0);
	ck_assert_uint_eq(h5_append_committed(a), 400);
	ck_assert_int_eq(h5_append_close(a, &partial), 0);
	ck_assert_uint_eq(partial, 0);
	h5_file_close(f);
	read_back(path, got, 100);
	ck_assert_mem_eq(got, rows, 400);

	/* again, starting inside a partly filled chunk (100 % 5 == 0, so use 3 rows first) */
	f = open_file(path, 1);
	ck_assert_int_eq(h5_append_open(&a, f, DS_ADDR), 0);
	ck_assert_int_eq(h5_append_write(a, rows + 100, 12), 0);
	ck_assert_int_eq(h5_append_flush(a), 0);
	ck_assert_int_eq(h5_append_write(a, rows + 103, 100 * 4), 0);
	/* a trailing partial row is refused, the whole rows before it stay */
	ck_assert_int_eq(h5_append_write(a, rows + 203 - 1, 2), 0);
	ck_assert_int_eq(h5_append_close(a, &partial), H5_ERR_INVAL);
	ck_assert_uint_eq(partial, 2);
	h5_file_close(f);
	read_back(path, got, 203);
	ck_assert_mem_eq(got, rows, 203 * 4);

	/* a partial row alone changes nothing */
	{
		size_t len0, len1;
		uint8_t *img0 = slurp(path, &len0), *img1;

		f = open_file(path, 1);
		ck_assert_int_eq(h5_append_open(&a, f, DS_ADDR), 0);
		size0 = h5_append_committed(a);
		ck_assert_uint_eq(size0, 203 * 4);
		ck_assert_int_eq(h5_append_write(a, "ab", 2), 0);
		ck_assert_int_eq(h5_append_flush(a), 0);
		ck_assert_uint_eq(h5_append_pending(a), 2);
		ck_assert_int_eq(h5_append_close(a, &partial), H5_ERR_INVAL);
		h5_file_close(f);
		img1 = slurp(path, &len1);
		ck_assert_uint_eq(len0, len1);
		ck_assert_mem_eq(img0, img1, len0);
		free(img0);
		free(img1);
	}
	free(path);
	tb_free(&b);
}
END_TEST

/* The superblock's EOF covers what was written, its checksum holds, and
 * the modification time message moved. */
START_TEST(append_updates_superblock_and_mtime)
{
	tbuf b = build_file(DS_UNLIMITED, 0, 4, 1);
	char *path = write_file("sb.h5", &b);
	h5_file *f = open_file(path, 1);
	h5_appender *a;
	h5_dataset *d;
	int32_t rows[9] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
	size_t len;
	uint8_t *img;
	int64_t mt;

	ck_assert_int_eq(h5_append_open(&a, f, DS_ADDR), 0);
	ck_assert_int_eq(h5_append_write(a, rows, sizeof(rows)), 0);
	ck_assert_int_eq(h5_append_close(a, NULL), 0);
	h5_file_close(f);
	img = slurp(path, &len);
	ck_assert_uint_eq(h5_le_decode(img + 28, 8), len);
	ck_assert_uint_eq(h5_le_decode(img + 44, 4), h5_checksum_metadata(img, 44));
	free(img);
	f = open_file(path, 0);
	ck_assert_int_eq(h5_dataset_open(&d, f, DS_ADDR), 0);
	ck_assert_int_eq(h5_dataset_mtime(d, &mt), 0);
	ck_assert_int_gt(mt, 1000);
	ck_assert_uint_eq(d->space.dims[0], 9);
	h5_dataset_close(d);
	h5_file_close(f);
	free(path);
	tb_free(&b);
}
END_TEST

START_TEST(append_refusals)
{
	tbuf fixed = build_file(DS_FIXEDMAX, 3, 4, 0), bt2 = build_file(DS_BTREE2, 0, 4, 0);
	tbuf ok = build_file(DS_UNLIMITED, 0, 4, 0);
	char *p1 = write_file("fixed.h5", &fixed), *p2 = write_file("bt2.h5", &bt2), *p3 = write_file("ok.h5", &ok);
	h5_file *f;
	h5_appender *a = NULL;

	f = open_file(p1, 1);
	ck_assert_int_eq(h5_append_open(&a, f, DS_ADDR), H5_ERR_PERM);
	ck_assert_ptr_null(a);
	h5_file_close(f);
	f = open_file(p3, 0);   /* read-only */
	ck_assert_int_eq(h5_append_open(&a, f, DS_ADDR), H5_ERR_ROFS);
	h5_file_close(f);
	f = open_file(p2, 1);   /* v2 B-tree chunk index: grows (nothing written yet) */
	ck_assert_int_eq(h5_append_open(&a, f, DS_ADDR), 0);
	ck_assert_ptr_nonnull(a);
	ck_assert_int_eq(h5_append_close(a, NULL), 0);
	a = NULL;
	h5_file_close(f);
	free(p1);
	free(p2);
	free(p3);
	tb_free(&fixed);
	tb_free(&bt2);
	tb_free(&ok);
}
END_TEST

/* h5_dataset_chunked: the question the daemon asks before h5_append_check
 * (node.c obj_fill) sets no error, and a dataset it says no to is one
 * h5_append_check refuses (so asking it first changes no answer) */
START_TEST(append_chunked_first)
{
	tbuf ok = build_file(DS_UNLIMITED, 0, 4, 0);
	char *p = write_file("chunked.h5", &ok);
	h5_file *f = open_file(p, 1);
	h5_dataset *d;

	ck_assert_msg(h5_dataset_open(&d, f, DS_ADDR) == 0, "%s", h5_err_msg());
	h5_err_clear();
	ck_assert_int_eq(h5_dataset_chunked(d), 1);
	ck_assert_int_eq(h5_err_code(), 0);
	ck_assert_int_eq(h5_append_check(d), 0);
	d->layout.cls = H5_LAYOUT_CONTIGUOUS;
	ck_assert_int_eq(h5_dataset_chunked(d), 0);
	ck_assert_int_eq(h5_err_code(), 0);
	ck_assert_int_eq(h5_append_check(d), H5_ERR_PERM);
	d->layout.cls = H5_LAYOUT_COMPACT;
	ck_assert_int_eq(h5_dataset_chunked(d), 0);
	ck_assert_int_eq(h5_append_check(d), H5_ERR_PERM);
	d->layout.cls = H5_LAYOUT_CHUNKED;
	h5_err_clear();
	h5_dataset_close(d);
	h5_file_close(f);
	free(p);
	tb_free(&ok);
}
END_TEST

/* ---- streaming: staged rows, periodic commits, shared streams ---------------- */

/* Rows dims[0] holds on disk, as another reader opening the file sees it. */
static uint64_t rows_on_disk(const char *path)
{
	h5_file *f = open_file(path, 0);
	h5_dataset *d;
	uint64_t n;

	ck_assert_msg(h5_dataset_open(&d, f, DS_ADDR) == 0, "%s", h5_err_msg());
	n = d->space.dims[0];
	h5_dataset_close(d);
	h5_file_close(f);
	return n;
}

static uint64_t file_len(const char *path)
{
	struct stat st;

	ck_assert_int_eq(stat(path, &st), 0);
	return (uint64_t)st.st_size;
}

static uint64_t sb_eof(const char *path)
{
	size_t len;
	uint8_t *img = slurp(path, &len);
	uint64_t v;

	ck_assert_uint_ge(len, 48);
	ck_assert_uint_eq(h5_le_decode(img + 44, 4), h5_checksum_metadata(img, 44));
	v = h5_le_decode(img + 28, 8);
	free(img);
	return v;
}

/* Rows are written beyond the end of allocated space as they arrive and
 * stay invisible until a commit; a periodic commit covers whole chunk
 * rows only and reserves space ahead (FILE extended, EOF beyond the data);
 * close gives the reserve back: EOF == FILE's length again. */
START_TEST(append_stream_then_commit)
{
	tbuf b = build_file(DS_UNLIMITED, 0, 4, 1);
	char *path = write_file("stream.h5", &b);
	uint64_t len0 = file_len(path), eof0 = sb_eof(path), n;
	h5_file *f;
	h5_appender *a;
	int32_t *rows, *got;
	const uint64_t total = 40000;   /* 160,000 bytes, 10,000 chunk rows */

	rows = malloc(total * 4);
	got = malloc(total * 4);
	ck_assert_ptr_nonnull(rows);
	ck_assert_ptr_nonnull(got);
	for (uint64_t i = 0; i < total; i++)
		rows[i] = (int32_t)(i * 7 + 1);
	ck_assert_uint_eq(len0, eof0);
	/* commit every 64 KiB; batches of 32 KiB (2,048 chunk rows) */
	setenv("H5FS_APPEND_COMMIT_BYTES", "65536", 1);
	setenv("H5FS_APPEND_COMMIT_MS", "100000", 1);
	f = open_file(path, 1);
	ck_assert_int_eq(h5_append_open(&a, f, DS_ADDR), 0);
	unsetenv("H5FS_APPEND_COMMIT_BYTES");
	unsetenv("H5FS_APPEND_COMMIT_MS");
	/* 40,000 bytes: one batch staged, nothing committed */
	ck_assert_int_eq(h5_append_write(a, rows, 40000), 0);
	ck_assert_uint_eq(h5_append_committed(a), 0);
	ck_assert_uint_eq(h5_append_size(a), 40000);
	ck_assert_uint_eq(h5_append_pending(a), 40000);
	ck_assert_uint_eq(rows_on_disk(path), 0);
	ck_assert_uint_eq(sb_eof(path), eof0);
	ck_assert_uint_ge(file_len(path), eof0 + 32768);   /* staged beyond the EOF */
	/* past 64 KiB: a commit of the complete chunk rows staged so far */
	ck_assert_int_eq(h5_append_write(a, (uint8_t *)rows + 40000, 30002), 0);
	n = h5_append_committed(a);
	ck_assert_uint_gt(n, 0);
	ck_assert_uint_eq(n % 16, 0);                      /* whole chunk rows */
	ck_assert_uint_le(n, 70000);
	ck_assert_uint_eq(rows_on_disk(path), n / 4);
	ck_assert_uint_ge(sb_eof(path), eof0 + (1u << 20)); /* at least 1 MiB reserved */
	ck_assert_uint_eq(sb_eof(path), file_len(path));   /* FILE extended to the reserve */
	read_back(path, got, n / 4);
	ck_assert_mem_eq(got, rows, (size_t)n);
	/* the rest, with the 2 bytes of a partial row completed first */
	ck_assert_int_eq(h5_append_write(a, (uint8_t *)rows + 70002, total * 4 - 70002), 0);
	ck_assert_int_eq(h5_append_close(a, NULL), 0);
	h5_file_close(f);
	ck_assert_uint_eq(sb_eof(path), file_len(path));   /* reserve given back */
	read_back(path, got, total);
	ck_assert_mem_eq(got, rows, total * 4);
	free(rows);
	free(got);
	free(path);
	tb_free(&b);
}
END_TEST

/* Two appenders of one dataset share its stream: whole rows land in the
 * order they complete, each keeps its own partial row. */
START_TEST(append_two_handles)
{
	tbuf b = build_file(DS_UNLIMITED, 3, 4, 0);
	char *path = write_file("two.h5", &b);
	h5_file *f = open_file(path, 1);
	h5_appender *a, *c;
	int32_t v[5] = { 10, 20, 30, 40, 50 }, got[8];
	const int32_t want[8] = { 0, 0, 0, 10, 30, 40, 20, 50 };
	size_t partial = 9;

	ck_assert_int_eq(h5_append_open(&a, f, DS_ADDR), 0);
	ck_assert_int_eq(h5_append_open(&c, f, DS_ADDR), 0);
	ck_assert_int_eq(h5_append_write(a, v, 6), 0);               /* row 10 and half of 20 */
	ck_assert_int_eq(h5_append_write(c, v + 2, 8), 0);           /* 30, 40 */
	ck_assert_uint_eq(h5_append_size(c), 6 * 4);
	ck_assert_uint_eq(h5_append_size(a), 6 * 4 + 2);
	ck_assert_int_eq(h5_append_write(a, (uint8_t *)v + 6, 2), 0); /* 20 complete */
	ck_assert_int_eq(h5_append_flush(c), 0);                     /* commits a's rows too */
	ck_assert_uint_eq(h5_append_committed(a), 7 * 4);
	ck_assert_uint_eq(rows_on_disk(path), 7);
	ck_assert_int_eq(h5_append_write(c, v + 4, 4), 0);
	ck_assert_int_eq(h5_append_write(a, "xy", 2), 0);
	ck_assert_int_eq(h5_append_close(c, &partial), 0);
	ck_assert_uint_eq(partial, 0);
	ck_assert_int_eq(h5_append_close(a, &partial), H5_ERR_INVAL);
	ck_assert_uint_eq(partial, 2);
	h5_file_close(f);
	read_back(path, got, 8);
	/* rows 0..2 were fill (no storage): the fill value is 0 */
	ck_assert_mem_eq(got, want, sizeof(want));
	free(path);
	tb_free(&b);
}
END_TEST

/* An overwrite's commit that meets rows the dataset's stream has not
 * committed takes them into its own commit (issue 81 item 3): the bytes
 * written over those rows land on them, dims[0] says every row, and the
 * stream holds nothing after it and goes on from there. */
START_TEST(overwrite_joins_stream_rows)
{
	tbuf b = build_file(DS_UNLIMITED, 3, 4, 0);
	char *path = write_file("join.h5", &b);
	h5_file *f;
	h5_appender *a;
	h5_overwriter *w;
	int32_t rows[8], got[12], want[12] = { 0 }, patch[2] = { -5, -6 }, more = 77;

	for (int i = 0; i < 8; i++)
		want[3 + i] = rows[i] = 100 + i;
	setenv("H5FS_APPEND_COMMIT_MS", "100000", 1);
	f = open_file(path, 1);
	ck_assert_int_eq(h5_append_open(&a, f, DS_ADDR), 0);
	unsetenv("H5FS_APPEND_COMMIT_MS");
	ck_assert_int_eq(h5_append_write(a, rows, sizeof(rows)), 0);   /* rows 3..10 */
	ck_assert_uint_eq(rows_on_disk(path), 3);
	ck_assert_int_eq(h5_overwrite_open(&w, f, DS_ADDR), 0);
	/* over rows 6 and 9, appended, not committed: kept past the end (9
	 * in the chunk row left partly filled, which the stream holds) */
	ck_assert_int_eq(h5_overwrite_put(w, 6 * 4, &patch[0], 4), 0);
	ck_assert_int_eq(h5_overwrite_put(w, 9 * 4, &patch[1], 4), 0);
	ck_assert_msg(h5_overwrite_commit(w, 1, 1) == 0, "%s", h5_err_msg());
	ck_assert_uint_eq(rows_on_disk(path), 11);
	ck_assert_uint_eq(h5_append_committed(a), 11 * 4);
	ck_assert_uint_eq(h5_append_pending(a), 0);
	want[6] = -5;
	want[9] = -6;
	read_back(path, got, 11);
	ck_assert_mem_eq(got, want, 11 * 4);
	/* the stream goes on from the new end (its partly filled chunk row
	 * read again, the patched bytes among them) */
	ck_assert_int_eq(h5_append_write(a, &more, 4), 0);
	ck_assert_int_eq(h5_append_close(a, NULL), 0);
	h5_overwrite_close(w);
	h5_file_close(f);
	want[11] = 77;
	read_back(path, got, 12);
	ck_assert_mem_eq(got, want, sizeof(want));
	free(path);
	tb_free(&b);
}
END_TEST

/* truncate(2) up through the overwriter: dims[0] raised at the commit,
 * nothing written (FILE keeps its length), the new rows the fill value;
 * not whole rows, EINVAL; a dataset that cannot grow, refused. */
START_TEST(overwrite_resize_grows)
{
	tbuf b = build_file(DS_UNLIMITED, 3, 4, 0), fx = build_file(DS_FIXEDMAX, 3, 4, 0);
	char *path = write_file("grow.h5", &b), *pfx = write_file("growfx.h5", &fx);
	uint64_t len0 = file_len(path);
	h5_file *f = open_file(path, 1);
	h5_overwriter *w;
	int32_t got[1000];

	ck_assert_int_eq(h5_overwrite_open(&w, f, DS_ADDR), 0);
	ck_assert_int_eq(h5_overwrite_resize(w, 1000 * 4 + 2), H5_ERR_INVAL);
	h5_err_clear();
	ck_assert_msg(h5_overwrite_resize(w, 1000 * 4) == 0, "%s", h5_err_msg());
	ck_assert_msg(h5_overwrite_commit(w, 1, 1) == 0, "%s", h5_err_msg());
	h5_overwrite_close(w);
	h5_file_close(f);
	ck_assert_uint_eq(rows_on_disk(path), 1000);
	ck_assert_uint_eq(file_len(path), len0);
	read_back(path, got, 1000);
	for (int i = 0; i < 1000; i++)
		ck_assert_int_eq(got[i], 0);
	/* an extensible array over a dimension 0 with a fixed maximum cannot
	 * grow (h5_append_check): refused before anything is written */
	f = open_file(pfx, 1);
	ck_assert_int_eq(h5_overwrite_open(&w, f, DS_ADDR), 0);
	ck_assert_int_eq(h5_overwrite_resize(w, 50 * 4), H5_ERR_PERM);
	h5_err_clear();
	ck_assert_msg(h5_overwrite_commit(w, 1, 1) == 0, "%s", h5_err_msg());
	h5_overwrite_close(w);
	h5_file_close(f);
	ck_assert_uint_eq(rows_on_disk(pfx), 3);
	free(path);
	free(pfx);
	tb_free(&b);
	tb_free(&fx);
}
END_TEST

/* A process that dies with rows staged and a periodic commit behind it
 * (space reserved, dims[0] not fsync'd) leaves a file that reads the
 * committed rows exactly; the next appender continues after them. */
START_TEST(append_killed_while_streaming)
{
	tbuf b = build_file(DS_UNLIMITED, 0, 3, 1);
	char *path = write_file("kill.h5", &b);
	int fds[2], st;
	uint64_t committed = 0, n;
	int32_t *rows = malloc(60000 * 4), *got = malloc(60000 * 4);
	pid_t pid;

	ck_assert_ptr_nonnull(rows);
	ck_assert_ptr_nonnull(got);
	for (int i = 0; i < 60000; i++)
		rows[i] = i ^ 0x5a5a;
	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		h5_file *f;
		h5_appender *a;

		setenv("H5FS_APPEND_COMMIT_BYTES", "100000", 1);
		f = open_file(path, 1);
		if (h5_append_open(&a, f, DS_ADDR) != 0)
			_exit(2);
		for (int i = 0; i < 60000; i += 999)
			if (h5_append_write(a, rows + i, (size_t)(60000 - i < 999 ? 60000 - i : 999) * 4) != 0)
				_exit(3);
		committed = h5_append_committed(a);
		if (write(fds[1], &committed, sizeof(committed)) != sizeof(committed))
			_exit(4);
		_exit(0);   /* no close, no flush: as kill -9 */
	}
	close(fds[1]);
	ck_assert_int_eq(read(fds[0], &committed, sizeof(committed)), (ssize_t)sizeof(committed));
	close(fds[0]);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	ck_assert_uint_gt(committed, 0);
	ck_assert_uint_lt(committed, 60000 * 4);
	n = rows_on_disk(path);
	ck_assert_uint_eq(n * 4, committed);
	ck_assert_uint_le(sb_eof(path), file_len(path));
	read_back(path, got, n);
	ck_assert_mem_eq(got, rows, (size_t)committed);
	/* and it grows on from there */
	{
		h5_file *f = open_file(path, 1);
		h5_appender *a;

		ck_assert_int_eq(h5_append_open(&a, f, DS_ADDR), 0);
		ck_assert_int_eq(h5_append_write(a, rows + n, (size_t)(60000 - n) * 4), 0);
		ck_assert_int_eq(h5_append_close(a, NULL), 0);
		h5_file_close(f);
	}
	read_back(path, got, 60000);
	ck_assert_mem_eq(got, rows, 60000 * 4);
	ck_assert_uint_eq(sb_eof(path), file_len(path));
	free(rows);
	free(got);
	free(path);
	tb_free(&b);
}
END_TEST

/* Filtered chunks built on several threads decode to the rows written, in
 * libhdf5 too, and equal what one thread builds. */
START_TEST(append_filtered_threads)
{
	char script[1024], p1[128], p4[128];
	int32_t *rows = malloc((size_t)1 << 22);
	const size_t n = ((size_t)1 << 22) / 4;
	int rc;

	ck_assert_ptr_nonnull(rows);
	for (size_t i = 0; i < n; i++)
		rows[i] = (int32_t)(i / 3) ^ (int32_t)(i * 2654435761u >> 24);
	snprintf(p1, sizeof(p1), "%s/t1.h5", tmpdir);
	snprintf(p4, sizeof(p4), "%s/t4.h5", tmpdir);
	snprintf(script, sizeof(script),
		 "for p in ('%s', '%s'):\n"
		 "    with h5py.File(p, 'w', libver='latest') as f:\n"
		 "        f.create_dataset('x', shape=(5,), maxshape=(None,), chunks=(4096,), dtype='<i4',\n"
		 "                         compression='gzip', shuffle=True, data=np.arange(5, dtype='<i4'))\n",
		 p1, p4);
	rc = run_py(script);
	if (rc == 77) {
		free(rows);
		return;
	}
	ck_assert_int_eq(rc, 0);
	for (int k = 0; k < 2; k++) {
		h5_open_opts o = { .writable = 1, .nthreads = k ? 4 : 1 };
		h5_file *f = NULL;
		h5_appender *a;
		h5_link l;

		ck_assert_int_eq(h5_file_open(&f, k ? p4 : p1, &o), 0);
		memset(&l, 0, sizeof(l));
		ck_assert_int_eq(h5_group_lookup(&l, f, h5_file_root(f), "x"), 0);
		ck_assert_msg(h5_append_open(&a, f, l.addr) == 0, "%s", h5_err_msg());
		for (size_t off = 0; off < n * 4; off += 131072)
			ck_assert_msg(h5_append_write(a, (uint8_t *)rows + off, 131072) == 0, "%s", h5_err_msg());
		ck_assert_int_eq(h5_append_close(a, NULL), 0);
		h5_link_clear(&l);
		h5_file_close(f);
	}
	{
		FILE *fp;

		snprintf(script, sizeof(script), "%s/rows.bin", tmpdir);
		fp = fopen(script, "wb");
		ck_assert_ptr_nonnull(fp);
		ck_assert_uint_eq(fwrite(rows, 4, n, fp), n);
		fclose(fp);
	}
	snprintf(script, sizeof(script),
		 "want = np.concatenate([np.arange(5, dtype='<i4'), np.fromfile('%s/rows.bin', dtype='<i4')])\n"
		 "for p in ('%s', '%s'):\n"
		 "    with h5py.File(p, 'r') as f:\n"
		 "        x = f['x'][()]\n"
		 "        if x.shape != want.shape or (x != want).any():\n"
		 "            sys.exit(1)\n", tmpdir, p1, p4);
	ck_assert_int_eq(run_py(script), 0);
	free(rows);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("append");
	TCase *tc = tcase_create("writer");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, writer_worked_example);
	tcase_add_test(tc, writer_paged_blocks);
	tcase_add_test(tc, writer_copy_on_write);
	tcase_add_test(tc, writer_refuses);
	suite_add_tcase(s, tc);
	tc = tcase_create("append");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, append_rows_in_odd_pieces);
	tcase_add_test(tc, append_updates_superblock_and_mtime);
	tcase_add_test(tc, append_refusals);
	tcase_add_test(tc, append_chunked_first);
	tcase_add_test(tc, append_h5py_roundtrip);
	tcase_add_test(tc, append_stream_then_commit);
	tcase_add_test(tc, append_two_handles);
	tcase_add_test(tc, overwrite_joins_stream_rows);
	tcase_add_test(tc, overwrite_resize_grows);
	tcase_add_test(tc, append_killed_while_streaming);
	tcase_add_test(tc, append_filtered_threads);
	suite_add_tcase(s, tc);
	return s;
}

H5_TEST_MAIN(make_suite)
