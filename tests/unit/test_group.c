/*
 * test_group.c - local heaps, symbol table nodes, v1 B-trees, link messages
 * and group iteration/lookup.
 *
 * Three layers of tests:
 *  1. pure decoders on hand-built buffers (valid, truncated, corrupted);
 *  2. an old-style group built by hand in a memory image, walked through the
 *     public API, including hostile variants (loops, bad levels, bad heaps);
 *  3. files written by h5py at test time (symbol tables with a multi-level
 *     B-tree, compact and dense groups, soft/external/hard links) and corpus
 *     files, compared against what h5py lists.
 */
#include "testutil.h"
#include "source.h"
#include "base.h"
#include "rd.h"
#include "checksum.h"
#include "cache.h"
#include "file.h"
#include "ohdr.h"
#include "layout.h"
#include "linkmsg.h"
#include "lheap.h"
#include "snod.h"
#include "btree1.h"
#include "group.h"

#include <errno.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const h5_fmt fmt88 = { 8, 8 };
static const h5_fmt fmt44 = { 4, 4 };

/* Pad b with zeros up to offset off (structures are placed at fixed spots). */
static void tb_at(tbuf *b, size_t off)
{
	ck_assert_uint_le(b->len, off);
	tb_zero(b, off - b->len);
}

/* ======================================================================
 * 1. decoders
 * ====================================================================== */

/* ---- local heap -------------------------------------------------------- */

static void build_heap_hdr(tbuf *b, const h5_fmt *fmt, uint64_t size, uint64_t free_off, uint64_t data)
{
	tb_str(b, "HEAP");
	tb_u8(b, 0);
	tb_zero(b, 3);
	tb_uint(b, size, fmt->sizeof_size);
	tb_uint(b, free_off, fmt->sizeof_size);
	tb_uint(b, data, fmt->sizeof_addr);
}

START_TEST(lheap_decode_ok)
{
	tbuf b = { 0 };
	h5_lheap h;

	build_heap_hdr(&b, &fmt88, 88, UINT64_MAX, 0x1234);
	ck_assert_int_eq(h5_lheap_decode(&h, &fmt88, b.p, b.len), 0);
	ck_assert_uint_eq(h.size, 88);
	ck_assert_uint_eq(h.data_addr, 0x1234);
	ck_assert_uint_eq(h.free_off, H5_ADDR_UNDEF);
	ck_assert_ptr_null(h.data);
	tb_free(&b);

	build_heap_hdr(&b, &fmt44, 40, 16, 0x80);
	ck_assert_int_eq(h5_lheap_decode(&h, &fmt44, b.p, b.len), 0);
	ck_assert_uint_eq(h.size, 40);
	ck_assert_uint_eq(h.free_off, 16);
	ck_assert_uint_eq(h.data_addr, 0x80);
	/* all-ones free list in 4-byte lengths is "none" too */
	tb_free(&b);
	build_heap_hdr(&b, &fmt44, 40, 0xffffffff, 0x80);
	ck_assert_int_eq(h5_lheap_decode(&h, &fmt44, b.p, b.len), 0);
	ck_assert_uint_eq(h.free_off, H5_ADDR_UNDEF);
	tb_free(&b);
}
END_TEST

START_TEST(lheap_decode_bad)
{
	tbuf b = { 0 };
	h5_lheap h;

	build_heap_hdr(&b, &fmt88, 88, UINT64_MAX, 0x1234);
	/* every truncation fails */
	for (size_t l = 0; l < b.len; l++)
		ck_assert_int_eq(h5_lheap_decode(&h, &fmt88, b.p, l), H5_ERR_FORMAT);
	b.p[0] = 'X';
	ck_assert_int_eq(h5_lheap_decode(&h, &fmt88, b.p, b.len), H5_ERR_FORMAT);
	b.p[0] = 'H';
	b.p[4] = 1;
	ck_assert_int_eq(h5_lheap_decode(&h, &fmt88, b.p, b.len), H5_ERR_FORMAT);
	tb_free(&b);
	/* data but no data address */
	build_heap_hdr(&b, &fmt88, 88, UINT64_MAX, UINT64_MAX);
	ck_assert_int_eq(h5_lheap_decode(&h, &fmt88, b.p, b.len), H5_ERR_FORMAT);
	tb_free(&b);
}
END_TEST

START_TEST(lheap_string_bounds)
{
	uint8_t data[16] = "\0abc\0defg\0xyzXYZ"; /* last 6 bytes unterminated */
	h5_lheap h = { .size = 16, .data = data };

	ck_assert_str_eq(h5_lheap_string(&h, 0), "");
	ck_assert_str_eq(h5_lheap_string(&h, 1), "abc");
	ck_assert_str_eq(h5_lheap_string(&h, 3), "c");
	ck_assert_str_eq(h5_lheap_string(&h, 5), "defg");
	ck_assert_ptr_null(h5_lheap_string(&h, 10)); /* runs off the end */
	ck_assert_ptr_null(h5_lheap_string(&h, 15));
	ck_assert_ptr_null(h5_lheap_string(&h, 16));
	ck_assert_ptr_null(h5_lheap_string(&h, UINT64_MAX));
	h.size = 0;
	ck_assert_ptr_null(h5_lheap_string(&h, 0));
	ck_assert_ptr_null(h5_lheap_string(NULL, 0));
}
END_TEST

/* ---- symbol table entries and nodes ------------------------------------ */

static void build_entry(tbuf *b, const h5_fmt *fmt, uint64_t name_off, uint64_t obj, uint32_t ctype,
			uint64_t s1, uint64_t s2)
{
	size_t start;

	tb_uint(b, name_off, fmt->sizeof_size);   /* a length (H5G_ent_decode) */
	tb_uint(b, obj, fmt->sizeof_addr);
	tb_u32(b, ctype);
	tb_u32(b, 0);
	start = b->len;
	if (ctype == 1) {
		tb_uint(b, s1, fmt->sizeof_addr);
		tb_uint(b, s2, fmt->sizeof_addr);
	} else if (ctype == 2) {
		tb_u32(b, (uint32_t)s1);
	}
	tb_zero(b, 16 - (b->len - start));
}

static void build_snod_hdr(tbuf *b, unsigned n)
{
	tb_str(b, "SNOD");
	tb_u8(b, 1);
	tb_u8(b, 0);
	tb_u16(b, (uint16_t)n);
}

START_TEST(symentry_decode_types)
{
	tbuf b = { 0 };
	h5_snod_entry e;
	h5_rd r;

	build_entry(&b, &fmt88, 8, 0x800, 0, 0, 0);
	build_entry(&b, &fmt88, 16, 0x900, 1, 0x1000, 0x2000);
	build_entry(&b, &fmt88, 24, UINT64_MAX, 2, 40, 0);
	ck_assert_uint_eq(b.len, 3 * 40);
	h5_rd_init(&r, b.p, b.len);
	ck_assert_int_eq(h5_symentry_decode(&e, &r, &fmt88), 0);
	ck_assert_uint_eq(e.name_off, 8);
	ck_assert_uint_eq(e.obj_addr, 0x800);
	ck_assert_uint_eq(e.cache_type, 0);
	ck_assert_int_eq(h5_symentry_decode(&e, &r, &fmt88), 0);
	ck_assert_uint_eq(e.cache_type, 1);
	ck_assert_uint_eq(e.btree_addr, 0x1000);
	ck_assert_uint_eq(e.heap_addr, 0x2000);
	ck_assert_int_eq(h5_symentry_decode(&e, &r, &fmt88), 0);
	ck_assert_uint_eq(e.cache_type, 2);
	ck_assert_uint_eq(e.obj_addr, H5_ADDR_UNDEF);
	ck_assert_uint_eq(e.link_off, 40);
	ck_assert_uint_eq(h5_rd_left(&r), 0);
	/* past the end */
	ck_assert_int_eq(h5_symentry_decode(&e, &r, &fmt88), H5_ERR_FORMAT);
	tb_free(&b);

	/* 4-byte addresses: entry is 32 bytes */
	build_entry(&b, &fmt44, 8, 0x800, 1, 0x40, 0x80);
	ck_assert_uint_eq(b.len, 32);
	h5_rd_init(&r, b.p, b.len);
	ck_assert_int_eq(h5_symentry_decode(&e, &r, &fmt44), 0);
	ck_assert_uint_eq(e.btree_addr, 0x40);
	ck_assert_uint_eq(e.heap_addr, 0x80);
	/* truncated by one byte */
	h5_rd_init(&r, b.p, b.len - 1);
	ck_assert_int_eq(h5_symentry_decode(&e, &r, &fmt44), H5_ERR_FORMAT);
	/* unknown cache type */
	b.p[8] = 3;
	h5_rd_init(&r, b.p, b.len);
	ck_assert_int_eq(h5_symentry_decode(&e, &r, &fmt44), H5_ERR_FORMAT);
	tb_free(&b);
}
END_TEST

START_TEST(snod_decode_ok_and_bad)
{
	tbuf b = { 0 };
	h5_snod s;

	build_snod_hdr(&b, 3);
	build_entry(&b, &fmt88, 8, 0x800, 0, 0, 0);
	build_entry(&b, &fmt88, 16, 0x900, 1, 0x1000, 0x2000);
	build_entry(&b, &fmt88, 24, UINT64_MAX, 2, 40, 0);
	tb_zero(&b, 5 * 40); /* unused slots up to 2K = 8 */
	ck_assert_int_eq(h5_snod_decode(&s, &fmt88, 4, b.p, b.len), 0);
	ck_assert_uint_eq(s.n, 3);
	ck_assert_uint_eq(s.e[0].obj_addr, 0x800);
	ck_assert_uint_eq(s.e[1].heap_addr, 0x2000);
	ck_assert_uint_eq(s.e[2].link_off, 40);
	h5_snod_clear(&s);
	ck_assert_ptr_null(s.e);

	/* only the used entries need to be present */
	ck_assert_int_eq(h5_snod_decode(&s, &fmt88, 4, b.p, 8 + 3 * 40), 0);
	h5_snod_clear(&s);
	ck_assert_int_eq(h5_snod_decode(&s, &fmt88, 4, b.p, 8 + 3 * 40 - 1), H5_ERR_FORMAT);
	ck_assert_ptr_null(s.e);
	for (size_t l = 0; l < 8; l++)
		ck_assert_int_eq(h5_snod_decode(&s, &fmt88, 4, b.p, l), H5_ERR_FORMAT);
	/* more symbols than 2K (K=1 -> 2) */
	ck_assert_int_eq(h5_snod_decode(&s, &fmt88, 1, b.p, b.len), H5_ERR_FORMAT);
	ck_assert_int_eq(h5_snod_decode(&s, &fmt88, 0, b.p, b.len), H5_ERR_FORMAT);
	/* bad signature / version */
	b.p[0] = 's';
	ck_assert_int_eq(h5_snod_decode(&s, &fmt88, 4, b.p, b.len), H5_ERR_FORMAT);
	b.p[0] = 'S';
	b.p[4] = 0;
	ck_assert_int_eq(h5_snod_decode(&s, &fmt88, 4, b.p, b.len), H5_ERR_FORMAT);
	b.p[4] = 1;
	/* a bad entry in the middle */
	b.p[8 + 40 + 16] = 7;
	ck_assert_int_eq(h5_snod_decode(&s, &fmt88, 4, b.p, b.len), H5_ERR_FORMAT);
	ck_assert_ptr_null(s.e);
	tb_free(&b);

	/* an empty node */
	build_snod_hdr(&b, 0);
	ck_assert_int_eq(h5_snod_decode(&s, &fmt88, 4, b.p, b.len), 0);
	ck_assert_uint_eq(s.n, 0);
	h5_snod_clear(&s);
	tb_free(&b);
}
END_TEST

/* ---- v1 B-tree nodes --------------------------------------------------- */

static void build_tree_hdr(tbuf *b, const h5_fmt *fmt, unsigned type, unsigned level, unsigned n,
			   uint64_t left, uint64_t right)
{
	tb_str(b, "TREE");
	tb_u8(b, (uint8_t)type);
	tb_u8(b, (uint8_t)level);
	tb_u16(b, (uint16_t)n);
	tb_uint(b, left, fmt->sizeof_addr);
	tb_uint(b, right, fmt->sizeof_addr);
}

/* Type 0 node: keys[n+1] heap offsets, children[n]. */
static void build_tree0(tbuf *b, const h5_fmt *fmt, unsigned level, unsigned n, const uint64_t *keys,
			const uint64_t *child, uint64_t left, uint64_t right)
{
	build_tree_hdr(b, fmt, 0, level, n, left, right);
	for (unsigned i = 0; i <= n; i++) {
		tb_uint(b, keys[i], fmt->sizeof_size);
		if (i < n)
			tb_uint(b, child[i], fmt->sizeof_addr);
	}
}

START_TEST(bt1_decode_group)
{
	tbuf b = { 0 };
	uint64_t keys[3] = { 0, 8, 24 }, child[2] = { 0x400, 0x600 };
	h5_bt1_node *n = NULL;

	build_tree0(&b, &fmt88, 0, 2, keys, child, UINT64_MAX, 0x9000);
	ck_assert_uint_eq(b.len, 24 + 2 * 16 + 8);
	ck_assert_int_eq(h5_bt1_decode(&n, &fmt88, 0, b.p, b.len), 0);
	ck_assert_uint_eq(n->type, 0);
	ck_assert_uint_eq(n->level, 0);
	ck_assert_uint_eq(n->n, 2);
	ck_assert_uint_eq(n->left, H5_ADDR_UNDEF);
	ck_assert_uint_eq(n->right, 0x9000);
	ck_assert_uint_eq(n->name_off[0], 0);
	ck_assert_uint_eq(n->name_off[1], 8);
	ck_assert_uint_eq(n->name_off[2], 24);
	ck_assert_uint_eq(n->child[0], 0x400);
	ck_assert_uint_eq(n->child[1], 0x600);
	ck_assert_ptr_null(n->offsets);
	h5_bt1_free(n);

	/* every truncation fails and allocates nothing visible */
	for (size_t l = 0; l < b.len; l++) {
		n = (h5_bt1_node *)1;
		ck_assert_int_eq(h5_bt1_decode(&n, &fmt88, 0, b.p, l), H5_ERR_FORMAT);
		ck_assert_ptr_null(n);
	}
	/* caller expects a chunk tree */
	ck_assert_int_eq(h5_bt1_decode(&n, &fmt88, 3, b.p, b.len), H5_ERR_FORMAT);
	/* bad signature */
	b.p[3] = 'X';
	ck_assert_int_eq(h5_bt1_decode(&n, &fmt88, 0, b.p, b.len), H5_ERR_FORMAT);
	b.p[3] = 'E';
	/* absurd level */
	b.p[5] = 200;
	ck_assert_int_eq(h5_bt1_decode(&n, &fmt88, 0, b.p, b.len), H5_ERR_FORMAT);
	b.p[5] = 0;
	/* an undefined child pointer */
	memset(b.p + 24 + 8, 0xff, 8);
	ck_assert_int_eq(h5_bt1_decode(&n, &fmt88, 0, b.p, b.len), H5_ERR_FORMAT);
	tb_free(&b);

	/* 4-byte offsets and lengths, empty root */
	build_tree0(&b, &fmt44, 0, 0, keys, child, 0xffffffff, 0xffffffff);
	ck_assert_uint_eq(b.len, 16 + 4);
	ck_assert_int_eq(h5_bt1_decode(&n, &fmt44, 0, b.p, b.len), 0);
	ck_assert_uint_eq(n->n, 0);
	ck_assert_uint_eq(n->left, H5_ADDR_UNDEF);
	h5_bt1_free(n);
	tb_free(&b);
}
END_TEST

START_TEST(bt1_decode_chunk)
{
	tbuf b = { 0 };
	h5_bt1_node *n = NULL;
	const unsigned nd = 3; /* rank 2 + 1 */

	build_tree_hdr(&b, &fmt88, 1, 0, 2, 0x100, UINT64_MAX);
	/* key 0 */
	tb_u32(&b, 400);
	tb_u32(&b, 0);
	tb_u64(&b, 0);
	tb_u64(&b, 0);
	tb_u64(&b, 0);
	tb_u64(&b, 0x5000);
	/* key 1 */
	tb_u32(&b, 380);
	tb_u32(&b, 2);
	tb_u64(&b, 0);
	tb_u64(&b, 10);
	tb_u64(&b, 0);
	tb_u64(&b, 0x6000);
	/* key 2: the "past the end" key */
	tb_u32(&b, 0);
	tb_u32(&b, 0);
	tb_u64(&b, 10);
	tb_u64(&b, 0);
	tb_u64(&b, 0);
	ck_assert_int_eq(h5_bt1_decode(&n, &fmt88, nd, b.p, b.len), 0);
	ck_assert_uint_eq(n->type, 1);
	ck_assert_uint_eq(n->n, 2);
	ck_assert_uint_eq(n->ndims, 3);
	ck_assert_uint_eq(n->left, 0x100);
	ck_assert_uint_eq(n->chunk_size[0], 400);
	ck_assert_uint_eq(n->chunk_size[1], 380);
	ck_assert_uint_eq(n->filter_mask[1], 2);
	ck_assert_uint_eq(n->offsets[1 * nd + 1], 10);
	ck_assert_uint_eq(n->offsets[2 * nd + 0], 10);
	ck_assert_uint_eq(n->child[0], 0x5000);
	ck_assert_uint_eq(n->child[1], 0x6000);
	ck_assert_ptr_null(n->name_off);
	h5_bt1_free(n);

	for (size_t l = 0; l < b.len; l++)
		ck_assert_int_eq(h5_bt1_decode(&n, &fmt88, nd, b.p, l), H5_ERR_FORMAT);
	/* caller expects a group tree */
	ck_assert_int_eq(h5_bt1_decode(&n, &fmt88, 0, b.p, b.len), H5_ERR_FORMAT);
	/* a wrong rank makes the keys longer than the buffer */
	ck_assert_int_eq(h5_bt1_decode(&n, &fmt88, 4, b.p, b.len), H5_ERR_FORMAT);
	ck_assert_int_eq(h5_bt1_decode(&n, &fmt88, H5_MAX_RANK + 2, b.p, b.len), H5_ERR_FORMAT);
	/* unknown node type */
	b.p[4] = 2;
	ck_assert_int_eq(h5_bt1_decode(&n, &fmt88, nd, b.p, b.len), H5_ERR_FORMAT);
	tb_free(&b);
}
END_TEST

/* ---- link messages ----------------------------------------------------- */

/* Link message with a name-length field of 2^lsz bytes. */
static void build_link(tbuf *b, unsigned lsz, int ltype, int64_t corder, int cset, const char *name,
		       size_t name_len)
{
	uint8_t flags = (uint8_t)lsz;

	if (ltype >= 0)
		flags |= 0x08;
	if (corder >= 0)
		flags |= 0x04;
	if (cset >= 0)
		flags |= 0x10;
	tb_u8(b, 1);
	tb_u8(b, flags);
	if (ltype >= 0)
		tb_u8(b, (uint8_t)ltype);
	if (corder >= 0)
		tb_u64(b, (uint64_t)corder);
	if (cset >= 0)
		tb_u8(b, (uint8_t)cset);
	tb_uint(b, name_len, 1u << lsz);
	tb_put(b, name, name_len);
}

START_TEST(link_decode_hard_all_name_sizes)
{
	for (unsigned lsz = 0; lsz < 4; lsz++) {
		tbuf b = { 0 };
		h5_link l;

		build_link(&b, lsz, -1, -1, -1, "dset", 4);
		tb_u64(&b, 0x1234);
		ck_assert_int_eq(h5_link_decode(&l, b.p, b.len, &fmt88), 0);
		ck_assert_str_eq(l.name, "dset");
		ck_assert_uint_eq(l.name_len, 4);
		ck_assert_int_eq(l.type, H5_LINK_HARD);
		ck_assert_uint_eq(l.addr, 0x1234);
		ck_assert_int_eq(l.has_corder, 0);
		ck_assert_uint_eq(l.cset, 0);
		h5_link_clear(&l);
		ck_assert_ptr_null(l.name);
		/* any truncation fails */
		for (size_t n = 0; n < b.len; n++)
			ck_assert_int_eq(h5_link_decode(&l, b.p, n, &fmt88), H5_ERR_FORMAT);
		tb_free(&b);
	}
}
END_TEST

START_TEST(link_decode_fields)
{
	tbuf b = { 0 };
	h5_link l;
	const char nul_name[5] = { 'a', 0, 'b', 'c', 'd' };

	/* explicit hard type, creation order, UTF-8, 4-byte addresses */
	build_link(&b, 0, 0, 42, 1, "\xc3\xa9t\xc3\xa9", 6);
	tb_u32(&b, 0x800);
	ck_assert_int_eq(h5_link_decode(&l, b.p, b.len, &fmt44), 0);
	ck_assert_str_eq(l.name, "\xc3\xa9t\xc3\xa9");
	ck_assert_int_eq(l.has_corder, 1);
	ck_assert_int_eq(l.corder, 42);
	ck_assert_uint_eq(l.cset, 1);
	ck_assert_uint_eq(l.addr, 0x800);
	h5_link_clear(&l);
	tb_free(&b);

	/* names keep embedded NULs: name_len is authoritative */
	build_link(&b, 1, -1, -1, -1, nul_name, 5);
	tb_u64(&b, 0x99);
	ck_assert_int_eq(h5_link_decode(&l, b.p, b.len, &fmt88), 0);
	ck_assert_uint_eq(l.name_len, 5);
	ck_assert_int_eq(memcmp(l.name, nul_name, 5), 0);
	ck_assert_int_eq(l.name[5], 0);
	h5_link_clear(&l);
	tb_free(&b);

	/* a long name needing the 2-byte length */
	{
		char big[300];

		memset(big, 'x', sizeof(big));
		build_link(&b, 1, -1, -1, -1, big, sizeof(big));
		tb_u64(&b, 0x99);
		ck_assert_int_eq(h5_link_decode(&l, b.p, b.len, &fmt88), 0);
		ck_assert_uint_eq(l.name_len, 300);
		ck_assert_uint_eq(strlen(l.name), 300);
		h5_link_clear(&l);
		tb_free(&b);
	}
}
END_TEST

START_TEST(link_decode_soft_external)
{
	tbuf b = { 0 };
	h5_link l;

	build_link(&b, 0, 1, -1, -1, "sl", 2);
	tb_u16(&b, 9);
	tb_str(&b, "/a/b/cdef");
	ck_assert_int_eq(h5_link_decode(&l, b.p, b.len, &fmt88), 0);
	ck_assert_int_eq(l.type, H5_LINK_SOFT);
	ck_assert_str_eq(l.target, "/a/b/cdef");
	ck_assert_uint_eq(l.addr, H5_ADDR_UNDEF);
	h5_link_clear(&l);
	for (size_t n = 0; n < b.len; n++)
		ck_assert_int_eq(h5_link_decode(&l, b.p, n, &fmt88), H5_ERR_FORMAT);
	tb_free(&b);

	/* empty soft link value */
	build_link(&b, 0, 1, -1, -1, "sl", 2);
	tb_u16(&b, 0);
	ck_assert_int_eq(h5_link_decode(&l, b.p, b.len, &fmt88), H5_ERR_FORMAT);
	tb_free(&b);

	build_link(&b, 0, 64, 7, -1, "ext", 3);
	tb_u16(&b, 1 + 9 + 5);
	tb_u8(&b, 0);
	tb_put(&b, "other.h5\0/x/y\0", 14);
	ck_assert_int_eq(h5_link_decode(&l, b.p, b.len, &fmt88), 0);
	ck_assert_int_eq(l.type, H5_LINK_EXTERNAL);
	ck_assert_str_eq(l.ext_file, "other.h5");
	ck_assert_str_eq(l.ext_path, "/x/y");
	ck_assert_int_eq(l.corder, 7);
	h5_link_clear(&l);
	for (size_t n = 0; n < b.len; n++)
		ck_assert_int_eq(h5_link_decode(&l, b.p, n, &fmt88), H5_ERR_FORMAT);
	/* path not terminated inside the value */
	b.p[b.len - 1] = 'z';
	ck_assert_int_eq(h5_link_decode(&l, b.p, b.len, &fmt88), H5_ERR_FORMAT);
	b.p[b.len - 1] = 0;
	/* version 1 of the external value */
	b.p[b.len - 15] = 0x10;
	ck_assert_int_eq(h5_link_decode(&l, b.p, b.len, &fmt88), H5_ERR_FORMAT);
	b.p[b.len - 15] = 0x01;
	ck_assert_int_eq(h5_link_decode(&l, b.p, b.len, &fmt88), H5_ERR_FORMAT);
	tb_free(&b);

	/* file name not terminated: value ends right after it */
	build_link(&b, 0, 64, -1, -1, "ext", 3);
	tb_u16(&b, 1 + 8);
	tb_u8(&b, 0);
	tb_put(&b, "other.h5", 8);
	ck_assert_int_eq(h5_link_decode(&l, b.p, b.len, &fmt88), H5_ERR_FORMAT);
	tb_free(&b);
}
END_TEST

START_TEST(link_decode_bad)
{
	tbuf b = { 0 };
	h5_link l;

	/* user-defined type: valid HDF5 we cannot represent */
	build_link(&b, 0, 187, -1, -1, "ud", 2);
	tb_u16(&b, 3);
	tb_str(&b, "abc");
	ck_assert_int_eq(h5_link_decode(&l, b.p, b.len, &fmt88), H5_ERR_UNSUPPORTED);
	ck_assert_ptr_null(l.name);
	tb_free(&b);
	/* reserved type */
	build_link(&b, 0, 5, -1, -1, "rs", 2);
	tb_u16(&b, 0);
	ck_assert_int_eq(h5_link_decode(&l, b.p, b.len, &fmt88), H5_ERR_FORMAT);
	tb_free(&b);
	/* bad version, reserved flag bits, bad cset, empty name */
	build_link(&b, 0, -1, -1, -1, "h", 1);
	tb_u64(&b, 0x10);
	ck_assert_int_eq(h5_link_decode(&l, b.p, b.len, &fmt88), 0);
	h5_link_clear(&l);
	b.p[0] = 2;
	ck_assert_int_eq(h5_link_decode(&l, b.p, b.len, &fmt88), H5_ERR_FORMAT);
	b.p[0] = 1;
	b.p[1] |= 0x20;
	ck_assert_int_eq(h5_link_decode(&l, b.p, b.len, &fmt88), H5_ERR_FORMAT);
	b.p[1] &= (uint8_t)~0x20;
	/* empty name: decoded (callers that show names skip it, so one
	 * hostile link does not hide its siblings) */
	b.p[2] = 0;
	ck_assert_int_eq(h5_link_decode(&l, b.p, b.len, &fmt88), 0);
	ck_assert_uint_eq(l.name_len, 0);
	ck_assert_str_eq(l.name, "");
	h5_link_clear(&l);
	b.p[2] = 1;
	/* name length pointing past the end */
	b.p[2] = 200;
	ck_assert_int_eq(h5_link_decode(&l, b.p, b.len, &fmt88), H5_ERR_FORMAT);
	tb_free(&b);
	build_link(&b, 0, -1, -1, 2, "h", 1);
	tb_u64(&b, 0x10);
	ck_assert_int_eq(h5_link_decode(&l, b.p, b.len, &fmt88), H5_ERR_FORMAT);
	tb_free(&b);
	/* 8-byte name length with a huge value */
	build_link(&b, 3, -1, -1, -1, "h", 1);
	tb_u64(&b, 0x10);
	ck_assert_int_eq(h5_link_decode(&l, b.p, b.len, &fmt88), 0);
	h5_link_clear(&l);
	h5_le_encode(b.p + 2, UINT64_MAX - 2, 8);
	ck_assert_int_eq(h5_link_decode(&l, b.p, b.len, &fmt88), H5_ERR_FORMAT);
	tb_free(&b);
	/* hard link to the undefined address */
	build_link(&b, 0, -1, -1, -1, "h", 1);
	tb_u64(&b, UINT64_MAX);
	ck_assert_int_eq(h5_link_decode(&l, b.p, b.len, &fmt88), H5_ERR_FORMAT);
	ck_assert_ptr_null(l.name);
	tb_free(&b);
}
END_TEST

START_TEST(linfo_stab_decode)
{
	tbuf b = { 0 };
	h5_linfo li;
	h5_stab st;

	tb_u8(&b, 0);
	tb_u8(&b, 0);
	tb_u64(&b, UINT64_MAX);
	tb_u64(&b, UINT64_MAX);
	ck_assert_int_eq(h5_linfo_decode(&li, &fmt88, b.p, b.len), 0);
	ck_assert(!li.track_corder && !li.index_corder);
	ck_assert_uint_eq(li.fheap_addr, H5_ADDR_UNDEF);
	ck_assert_uint_eq(li.name_bt2_addr, H5_ADDR_UNDEF);
	ck_assert_uint_eq(li.corder_bt2_addr, H5_ADDR_UNDEF);
	tb_free(&b);

	tb_u8(&b, 0);
	tb_u8(&b, 3);
	tb_u64(&b, 99);
	tb_u64(&b, 0x100);
	tb_u64(&b, 0x200);
	tb_u64(&b, 0x300);
	ck_assert_int_eq(h5_linfo_decode(&li, &fmt88, b.p, b.len), 0);
	ck_assert(li.track_corder && li.index_corder);
	ck_assert_int_eq(li.max_corder, 99);
	ck_assert_uint_eq(li.fheap_addr, 0x100);
	ck_assert_uint_eq(li.name_bt2_addr, 0x200);
	ck_assert_uint_eq(li.corder_bt2_addr, 0x300);
	for (size_t n = 0; n < b.len; n++)
		ck_assert_int_eq(h5_linfo_decode(&li, &fmt88, b.p, n), H5_ERR_FORMAT);
	b.p[0] = 1;
	ck_assert_int_eq(h5_linfo_decode(&li, &fmt88, b.p, b.len), H5_ERR_FORMAT);
	b.p[0] = 0;
	b.p[1] = 0x7;
	ck_assert_int_eq(h5_linfo_decode(&li, &fmt88, b.p, b.len), H5_ERR_FORMAT);
	/* heap without name index */
	b.p[1] = 3;
	memset(b.p + 2 + 16, 0xff, 8);
	ck_assert_int_eq(h5_linfo_decode(&li, &fmt88, b.p, b.len), H5_ERR_FORMAT);
	tb_free(&b);

	tb_u32(&b, 0x100);
	tb_u32(&b, 0x200);
	ck_assert_int_eq(h5_stab_decode(&st, &fmt44, b.p, b.len), 0);
	ck_assert_uint_eq(st.btree_addr, 0x100);
	ck_assert_uint_eq(st.heap_addr, 0x200);
	ck_assert_int_eq(h5_stab_decode(&st, &fmt44, b.p, 7), H5_ERR_FORMAT);
	ck_assert_int_eq(h5_stab_decode(&st, &fmt88, b.p, b.len), H5_ERR_FORMAT);
	memset(b.p, 0xff, 4);
	ck_assert_int_eq(h5_stab_decode(&st, &fmt44, b.p, b.len), H5_ERR_FORMAT);
	tb_free(&b);
}
END_TEST

/* ======================================================================
 * 2. a hand-built old-style group in a memory image
 * ====================================================================== */

#define IMG_OHDR 0x100
#define IMG_ROOT 0x200
#define IMG_HEAP 0x300
#define IMG_HEAPDATA 0x340
#define IMG_SNOD1 0x600
#define IMG_SNOD2 0x800
#define IMG_LEAF1 0xa00
#define IMG_LEAF2 0xb00
#define IMG_END 0x1000

static const char *const img_names[12] = {
	"alpha", "bravo", "charlie", "delta", "echo", "foxtrot",
	"golf", "hotel", "india", "juliet", "kilo", "lima",
};

struct img {
	tbuf b;
	uint64_t name_off[12];
	uint64_t target_off; /* "/alpha", value of the soft link "echo" */
	size_t heap_size;
};

/* obj address of name i (echo is a soft link) */
static uint64_t img_obj(unsigned i) { return 0x5000 + 0x10 * i; }

/* two_level: root at level 1 over two level-0 nodes, else a single leaf
 * root with both SNODs as children. */
static void img_build(struct img *im, bool two_level)
{
	tbuf *b = &im->b;
	uint8_t heap[0x200] = { 0 };
	size_t hp = 8;

	memset(im, 0, sizeof(*im));
	for (unsigned i = 0; i < 12; i++) {
		im->name_off[i] = hp;
		memcpy(heap + hp, img_names[i], strlen(img_names[i]) + 1);
		hp += (strlen(img_names[i]) + 1 + 7) & ~(size_t)7;
	}
	im->target_off = hp;
	memcpy(heap + hp, "/alpha", 7);
	hp += 8;
	im->heap_size = hp;

	tb_at(b, IMG_OHDR);
	/* v1 object header: one STAB message */
	tb_u8(b, 1);
	tb_u8(b, 0);
	tb_u16(b, 1);
	tb_u32(b, 1);
	tb_u32(b, 8 + 16);
	tb_u32(b, 0);
	tb_u16(b, H5_MSG_STAB);
	tb_u16(b, 16);
	tb_u8(b, 0);
	tb_zero(b, 3);
	tb_u64(b, IMG_ROOT);
	tb_u64(b, IMG_HEAP);

	tb_at(b, IMG_ROOT);
	if (two_level) {
		uint64_t keys[3] = { 0, im->name_off[5], im->name_off[11] };
		uint64_t child[2] = { IMG_LEAF1, IMG_LEAF2 };

		build_tree0(b, &fmt88, 1, 2, keys, child, UINT64_MAX, UINT64_MAX);
	} else {
		uint64_t keys[3] = { 0, im->name_off[5], im->name_off[11] };
		uint64_t child[2] = { IMG_SNOD1, IMG_SNOD2 };

		build_tree0(b, &fmt88, 0, 2, keys, child, UINT64_MAX, UINT64_MAX);
	}

	tb_at(b, IMG_HEAP);
	build_heap_hdr(b, &fmt88, im->heap_size, UINT64_MAX, IMG_HEAPDATA);
	tb_at(b, IMG_HEAPDATA);
	tb_put(b, heap, im->heap_size);

	for (unsigned s = 0; s < 2; s++) {
		tb_at(b, s ? IMG_SNOD2 : IMG_SNOD1);
		build_snod_hdr(b, 6);
		for (unsigned i = 6 * s; i < 6 * s + 6; i++) {
			if (i == 4)
				build_entry(b, &fmt88, im->name_off[i], UINT64_MAX, 2, im->target_off, 0);
			else
				build_entry(b, &fmt88, im->name_off[i], img_obj(i), 0, 0, 0);
		}
		tb_zero(b, 2 * 40); /* 2K = 8 slots */
	}
	if (two_level) {
		uint64_t k1[2] = { 0, im->name_off[5] }, c1[1] = { IMG_SNOD1 };
		uint64_t k2[2] = { im->name_off[5], im->name_off[11] }, c2[1] = { IMG_SNOD2 };

		tb_at(b, IMG_LEAF1);
		build_tree0(b, &fmt88, 0, 1, k1, c1, UINT64_MAX, IMG_LEAF2);
		tb_at(b, IMG_LEAF2);
		build_tree0(b, &fmt88, 0, 1, k2, c2, IMG_LEAF1, UINT64_MAX);
	}
	tb_at(b, IMG_END);
}

static h5_file *fake_file(const uint8_t *buf, size_t len)
{
	h5_file *f = calloc(1, sizeof(*f));

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(h5_source_open_mem(&f->src, buf, len), 0);
	f->eof = len;
	f->path = strdup("<test>");
	f->fmt = fmt88;
	f->sb_version = 0;
	f->sym_leaf_k = 4;
	f->btree_k = 16;
	f->chunk_btree_k = 32;
	f->root_addr = IMG_OHDR;
	f->ext_addr = H5_ADDR_UNDEF;
	f->sohm_addr = H5_ADDR_UNDEF;
	f->root_btree_addr = H5_ADDR_UNDEF;
	f->root_heap_addr = H5_ADDR_UNDEF;
	f->nthreads = 1;
	pthread_mutex_init(&f->write_lock, NULL);
	pthread_mutex_init(&f->fill_lock, NULL);
	ck_assert_int_eq(h5_cache_new(&f->meta, 1 << 20), 0);
	ck_assert_int_eq(h5_cache_new(&f->chunks, 1 << 20), 0);
	return f;
}

/* Collects "name=H:addr" / "name=S:target" joined by spaces. */
struct collect {
	char buf[4096];
	size_t n;
	int stop_after;
};

static int collect_cb(const h5_link *l, void *ud)
{
	struct collect *c = ud;
	size_t room = sizeof(c->buf) - strlen(c->buf);

	if (l->type == H5_LINK_HARD)
		snprintf(c->buf + strlen(c->buf), room, "%s=H:%llx ", l->name, (unsigned long long)l->addr);
	else if (l->type == H5_LINK_SOFT)
		snprintf(c->buf + strlen(c->buf), room, "%s=S:%s ", l->name, l->target);
	else
		snprintf(c->buf + strlen(c->buf), room, "%s=E:%s:%s ", l->name, l->ext_file, l->ext_path);
	c->n++;
	if (c->stop_after && (int)c->n == c->stop_after)
		return 77;
	return 0;
}

static const char *img_expected(void)
{
	static char exp[1024];

	exp[0] = 0;
	for (unsigned i = 0; i < 12; i++) {
		if (i == 4)
			snprintf(exp + strlen(exp), sizeof(exp) - strlen(exp), "%s=S:/alpha ", img_names[i]);
		else
			snprintf(exp + strlen(exp), sizeof(exp) - strlen(exp), "%s=H:%llx ", img_names[i],
				 (unsigned long long)img_obj(i));
	}
	return exp;
}

static int img_iterate(const struct img *im, struct collect *c)
{
	h5_file *f = fake_file(im->b.p, im->b.len);
	int rc;

	memset(c, 0, sizeof(*c));
	rc = h5_group_iterate(f, IMG_OHDR, collect_cb, c);
	h5_file_close(f);
	return rc;
}

START_TEST(img_iterate_and_lookup)
{
	for (int two = 0; two < 2; two++) {
		struct img im;
		struct collect c;
		h5_file *f;
		h5_link l;

		img_build(&im, two);
		ck_assert_int_eq(img_iterate(&im, &c), 0);
		ck_assert_str_eq(c.buf, img_expected());

		f = fake_file(im.b.p, im.b.len);
		for (unsigned i = 0; i < 12; i++) {
			ck_assert_msg(h5_group_lookup(&l, f, IMG_OHDR, img_names[i]) == 0, "%s: %s", img_names[i],
				      h5_err_msg());
			ck_assert_str_eq(l.name, img_names[i]);
			if (i == 4) {
				ck_assert_int_eq(l.type, H5_LINK_SOFT);
				ck_assert_str_eq(l.target, "/alpha");
			} else {
				ck_assert_int_eq(l.type, H5_LINK_HARD);
				ck_assert_uint_eq(l.addr, img_obj(i));
			}
			h5_link_clear(&l);
		}
		/* before the first, between nodes, inside a node, after the last */
		const char *missing[] = { "a", "aaa", "foxtrotx", "g", "golfa", "zulu", "lima0", "" };
		for (unsigned i = 0; i < sizeof(missing) / sizeof(*missing); i++)
			ck_assert_int_eq(h5_group_lookup(&l, f, IMG_OHDR, missing[i]), H5_ERR_NOTFOUND);
		/* a non-group object */
		ck_assert_int_ne(h5_group_iterate(f, IMG_HEAP, collect_cb, &c), 0);
		h5_file_close(f);

		/* the callback's non-zero value stops the walk and is returned */
		f = fake_file(im.b.p, im.b.len);
		memset(&c, 0, sizeof(c));
		c.stop_after = 7;
		ck_assert_int_eq(h5_group_iterate(f, IMG_OHDR, collect_cb, &c), 77);
		ck_assert_uint_eq(c.n, 7);
		h5_file_close(f);
		tb_free(&im.b);
	}
}
END_TEST

/* fake_file over the image written to a file at path: a byte source with
 * a descriptor, which a group's walk reads its nodes through a window of
 * (snod.c h5_snod_walk_get); the memory image's has none (plain reads) */
static h5_file *fake_file_at(const char *path, const uint8_t *buf, size_t len)
{
	h5_file *f = fake_file(buf, len);
	FILE *fp = fopen(path, "wb");

	ck_assert_ptr_nonnull(fp);
	ck_assert_uint_eq(fwrite(buf, 1, len, fp), len);
	ck_assert_int_eq(fclose(fp), 0);
	h5_source_close(f->src);
	ck_assert_int_eq(h5_source_open(&f->src, path, NULL), 0);
	ck_assert_int_ge(h5_file_fd(f), 0);
	return f;
}

/* A walk through the window lists what the plain reads list, one and two
 * levels; a node cut short by the file's end is an error naming it, and
 * nothing is read past the end */
START_TEST(img_iterate_window)
{
	char path[] = "/tmp/h5fs_test_group_win_XXXXXX";
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	close(fd);
	for (int two = 0; two < 2; two++) {
		struct img im;
		struct collect c = { 0 };
		h5_file *f;

		img_build(&im, two);
		f = fake_file_at(path, im.b.p, im.b.len);
		ck_assert_msg(h5_group_iterate(f, IMG_OHDR, collect_cb, &c) == 0, "%s", h5_err_msg());
		ck_assert_str_eq(c.buf, img_expected());
		h5_file_close(f);
		/* the second node cut 100 bytes in (one level: the leaves
		 * past it are the two-level image's) */
		if (!two) {
			f = fake_file_at(path, im.b.p, IMG_SNOD2 + 100);
			memset(&c, 0, sizeof(c));
			ck_assert_int_eq(h5_group_iterate(f, IMG_OHDR, collect_cb, &c), H5_ERR_FORMAT);
			ck_assert_msg(strstr(h5_err_msg(), "SNOD at 0x800") != NULL, "%s", h5_err_msg());
			ck_assert_uint_eq(c.n, 6);      /* (the first node's links) */
			h5_file_close(f);
		}
		tb_free(&im.b);
	}
	unlink(path);
}
END_TEST

/* The v0/v1 root whose header lacks a STAB message: use the superblock's
 * cached scratch-pad addresses. */
START_TEST(img_root_cached_stab)
{
	struct img im;
	struct collect c = { 0 };
	h5_file *f;
	h5_link l;

	img_build(&im, true);
	/* turn the STAB message into a NIL message */
	h5_le_encode(im.b.p + IMG_OHDR + 16, H5_MSG_NIL, 2);
	f = fake_file(im.b.p, im.b.len);
	ck_assert_int_ne(h5_group_iterate(f, IMG_OHDR, collect_cb, &c), 0);
	f->root_stab_cached = true;
	f->root_btree_addr = IMG_ROOT;
	f->root_heap_addr = IMG_HEAP;
	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(h5_group_iterate(f, IMG_OHDR, collect_cb, &c), 0);
	ck_assert_str_eq(c.buf, img_expected());
	ck_assert_int_eq(h5_group_lookup(&l, f, IMG_OHDR, "kilo"), 0);
	ck_assert_uint_eq(l.addr, img_obj(10));
	h5_link_clear(&l);
	h5_file_close(f);
	tb_free(&im.b);
}
END_TEST

/* Each corruption must give a clean error from both iterate and lookup. */
static void img_expect_fail(const struct img *im, const char *lookup_name, int want)
{
	struct collect c;
	h5_file *f;
	h5_link l;
	int rc;

	rc = img_iterate(im, &c);
	ck_assert_msg(rc == want, "iterate: %d (%s), want %d", rc, h5_err_msg(), want);
	if (lookup_name) {
		f = fake_file(im->b.p, im->b.len);
		rc = h5_group_lookup(&l, f, IMG_OHDR, lookup_name);
		ck_assert_msg(rc < 0 && rc != H5_ERR_NOTFOUND, "lookup %s: %d", lookup_name, rc);
		ck_assert_ptr_null(l.name);
		h5_file_close(f);
	}
}

START_TEST(img_hostile)
{
	struct img im;

	/* root child pointing back at the root */
	img_build(&im, true);
	h5_le_encode(im.b.p + IMG_ROOT + 24 + 8, IMG_ROOT, 8);
	img_expect_fail(&im, "alpha", H5_ERR_FORMAT);
	tb_free(&im.b);

	/* both root children are the same level-0 node: shared subtree */
	img_build(&im, true);
	h5_le_encode(im.b.p + IMG_ROOT + 24 + 16 + 8, IMG_LEAF1, 8);
	img_expect_fail(&im, NULL, H5_ERR_LOOP);
	tb_free(&im.b);

	/* a leaf claiming level 1 under a level-1 root (cycle through levels) */
	img_build(&im, true);
	im.b.p[IMG_LEAF2 + 5] = 1;
	img_expect_fail(&im, "kilo", H5_ERR_FORMAT);
	tb_free(&im.b);

	/* shared subtree of empty leaves: no SNOD is ever reached twice, the
	 * node set alone must catch it */
	img_build(&im, true);
	h5_le_encode(im.b.p + IMG_ROOT + 24 + 16 + 8, IMG_LEAF1, 8);
	h5_le_encode(im.b.p + IMG_LEAF1 + 6, 0, 2);
	img_expect_fail(&im, NULL, H5_ERR_LOOP);
	tb_free(&im.b);

	/* a cycle through the levels: a "leaf" at level 1 pointing back at the
	 * root; without the level check lookup would never end */
	img_build(&im, true);
	im.b.p[IMG_LEAF2 + 5] = 1;
	h5_le_encode(im.b.p + IMG_LEAF2 + 24 + 8, IMG_ROOT, 8);
	img_expect_fail(&im, "kilo", H5_ERR_FORMAT);
	tb_free(&im.b);

	/* both leaf children are the same SNOD */
	img_build(&im, false);
	h5_le_encode(im.b.p + IMG_ROOT + 24 + 16 + 8, IMG_SNOD1, 8);
	img_expect_fail(&im, NULL, H5_ERR_LOOP);
	tb_free(&im.b);

	/* too many entries used: 33 > 2K = 32 */
	img_build(&im, false);
	h5_le_encode(im.b.p + IMG_ROOT + 6, 33, 2);
	img_expect_fail(&im, "alpha", H5_ERR_FORMAT);
	tb_free(&im.b);

	/* wrong B-tree node type */
	img_build(&im, false);
	im.b.p[IMG_ROOT + 4] = 1;
	img_expect_fail(&im, "alpha", H5_ERR_FORMAT);
	tb_free(&im.b);

	/* SNOD with 9 > 2K = 8 symbols */
	img_build(&im, false);
	h5_le_encode(im.b.p + IMG_SNOD2 + 6, 9, 2);
	img_expect_fail(&im, "kilo", H5_ERR_FORMAT);
	tb_free(&im.b);

	/* SNOD bad signature */
	img_build(&im, false);
	im.b.p[IMG_SNOD1] = 'X';
	img_expect_fail(&im, "bravo", H5_ERR_FORMAT);
	tb_free(&im.b);

	/* a name offset outside the heap */
	img_build(&im, false);
	h5_le_encode(im.b.p + IMG_SNOD1 + 8 + 40, 0x10000, 8);
	img_expect_fail(&im, NULL, H5_ERR_FORMAT);
	tb_free(&im.b);

	/* heap cut so that "lima" is not terminated inside it */
	img_build(&im, false);
	h5_le_encode(im.b.p + IMG_HEAP + 8, im.name_off[11] + 3, 8);
	img_expect_fail(&im, "lima", H5_ERR_FORMAT);
	tb_free(&im.b);

	/* heap data segment larger than the file */
	img_build(&im, false);
	h5_le_encode(im.b.p + IMG_HEAP + 8, UINT64_C(1) << 40, 8);
	img_expect_fail(&im, "alpha", H5_ERR_FORMAT);
	tb_free(&im.b);

	/* heap bad signature */
	img_build(&im, false);
	im.b.p[IMG_HEAP] = 'h';
	img_expect_fail(&im, "alpha", H5_ERR_FORMAT);
	tb_free(&im.b);

	/* soft link value offset outside the heap */
	img_build(&im, false);
	h5_le_encode(im.b.p + IMG_SNOD1 + 8 + 4 * 40 + 24, 0x7000, 4);
	img_expect_fail(&im, "echo", H5_ERR_FORMAT);
	tb_free(&im.b);

	/* B-tree node beyond the end of the file */
	img_build(&im, false);
	h5_le_encode(im.b.p + IMG_OHDR + 24, IMG_END - 10, 8);
	img_expect_fail(&im, "alpha", H5_ERR_FORMAT);
	tb_free(&im.b);
}
END_TEST

/* Loader-level checks on the cached node getters. */
START_TEST(img_loaders)
{
	struct img im;
	h5_file *f;
	h5_bt1_node *n, *n2;
	h5_lheap *h;
	h5_snod *s;

	img_build(&im, true);
	f = fake_file(im.b.p, im.b.len);
	ck_assert_int_eq(h5_bt1_get(&n, f, IMG_ROOT, 0), 0);
	ck_assert_uint_eq(n->addr, IMG_ROOT);
	ck_assert_uint_eq(n->level, 1);
	ck_assert_uint_eq(n->n, 2);
	/* cached: same object the second time */
	ck_assert_int_eq(h5_bt1_get(&n2, f, IMG_ROOT, 0), 0);
	ck_assert_ptr_eq(n, n2);
	h5_bt1_release(f, n2);
	/* the cached group node asked for as a chunk node */
	ck_assert_int_eq(h5_bt1_get(&n2, f, IMG_ROOT, 3), H5_ERR_FORMAT);
	h5_bt1_release(f, n);
	ck_assert_int_eq(h5_bt1_get(&n, f, IMG_LEAF2, 0), 0);
	ck_assert_uint_eq(n->left, IMG_LEAF1);
	ck_assert_uint_eq(n->right, H5_ADDR_UNDEF);
	h5_bt1_release(f, n);
	ck_assert_int_eq(h5_bt1_get(&n, f, IMG_SNOD1, 0), H5_ERR_FORMAT);
	h5_file_close(f);
	/* entries used is checked against 2K from the superblock: the leaves
	 * hold 1 entry, the root 2 */
	f = fake_file(im.b.p, im.b.len);
	f->btree_k = 0;
	ck_assert_int_eq(h5_bt1_get(&n, f, IMG_LEAF1, 0), H5_ERR_FORMAT);
	f->btree_k = 1;
	ck_assert_int_eq(h5_bt1_get(&n, f, IMG_ROOT, 0), 0);
	h5_bt1_release(f, n);
	/* the chunk K is used for chunk trees, not the group K */
	f->btree_k = 16;
	f->chunk_btree_k = 0;
	ck_assert_int_eq(h5_bt1_get(&n, f, IMG_LEAF2, 0), 0);
	h5_bt1_release(f, n);
	h5_file_close(f);
	f = fake_file(im.b.p, im.b.len);
	ck_assert_int_eq(h5_bt1_get(&n, f, IMG_END - 4, 0), H5_ERR_FORMAT);
	ck_assert_int_eq(h5_bt1_get(&n, f, H5_ADDR_UNDEF, 0), H5_ERR_FORMAT);

	ck_assert_int_eq(h5_lheap_get(&h, f, IMG_HEAP), 0);
	ck_assert_uint_eq(h->size, im.heap_size);
	ck_assert_uint_eq(h->data_addr, IMG_HEAPDATA);
	ck_assert_str_eq(h5_lheap_string(h, im.name_off[3]), "delta");
	h5_lheap_release(f, h);
	ck_assert_int_eq(h5_lheap_get(&h, f, IMG_ROOT), H5_ERR_FORMAT);

	ck_assert_int_eq(h5_snod_get(&s, f, IMG_SNOD2), 0);
	ck_assert_uint_eq(s->n, 6);
	ck_assert_uint_eq(s->e[0].obj_addr, img_obj(6));
	h5_snod_release(f, s);
	/* an SNOD whose 2K slots would run past the end of the file */
	ck_assert_int_eq(h5_snod_get(&s, f, IMG_END - 100), H5_ERR_FORMAT);
	h5_file_close(f);
	tb_free(&im.b);
}
END_TEST

/* ======================================================================
 * 3. files written by h5py, and corpus files
 * ====================================================================== */

static char py_dir[256];
static int py_ok;

static const char py_script[] =
	"import sys, os, random\n"
	"try:\n"
	"    import h5py, numpy as np\n"
	"except Exception:\n"
	"    sys.exit(3)\n"
	"out = sys.argv[1]\n"
	"ca, cb = sys.argv[2], sys.argv[3]\n"
	"corpus = sys.argv[4:]\n"
	"rnd = random.Random(1234)\n"
	"def hx(b):\n"
	"    return b.hex() if b else '-'\n"
	"def dump(path, outname):\n"
	"    with h5py.File(path, 'r') as f, open(outname, 'w') as o:\n"
	"        groups = ['/']\n"
	"        def v(n, obj):\n"
	"            if isinstance(obj, h5py.Group):\n"
	"                groups.append('/' + n)\n"
	"        try:\n"
	"            f.visititems(v)\n"
	"        except Exception:\n"
	"            pass\n"
	"        for gp in groups:\n"
	"            try:\n"
	"                g = f[gp]\n"
	"                names = []\n"
	"                g.id.links.iterate(lambda n: names.append(n))\n"
	"                lines = []\n"
	"                for n in sorted(names):\n"
	"                    li = g.id.links.get_info(n)\n"
	"                    if li.type == h5py.h5l.TYPE_HARD:\n"
	"                        lines.append('%s H %d' % (hx(n), li.u))\n"
	"                    elif li.type == h5py.h5l.TYPE_SOFT:\n"
	"                        lines.append('%s S %s' % (hx(n), hx(g.id.links.get_val(n))))\n"
	"                    elif li.type == h5py.h5l.TYPE_EXTERNAL:\n"
	"                        fn, p = g.id.links.get_val(n)\n"
	"                        lines.append('%s E %s %s' % (hx(n), hx(fn), hx(p)))\n"
	"            except Exception:\n"
	"                continue\n"
	"            o.write('G %s %d\\n' % (hx(gp.encode()), len(lines)))\n"
	"            for l in lines:\n"
	"                o.write(l + '\\n')\n"
	"def names(n, prefix):\n"
	"    s = set()\n"
	"    while len(s) < n:\n"
	"        s.add('%s%d' % (prefix, rnd.randrange(10**9)))\n"
	"    l = list(s)\n"
	"    rnd.shuffle(l)\n"
	"    return l\n"
	"# --- old-style groups (libver earliest, h5py's default) ---\n"
	"with h5py.File(os.path.join(out, 'earliest.h5'), 'w') as f:\n"
	"    big = f.create_group('big')\n"
	"    for n in names(1000, 'g'):\n"
	"        big.create_group(n)\n"
	"    ln = f.create_group('links')\n"
	"    d = ln.create_dataset('data', data=np.arange(10))\n"
	"    ln['alias'] = d\n"
	"    ln['soft'] = h5py.SoftLink('/links/data')\n"
	"    ln['dangling'] = h5py.SoftLink('/nowhere/at all')\n"
	"    ln.create_group('sub with space').create_group('deeper')\n"
	"    f.create_group('empty')\n"
	"dump(os.path.join(out, 'earliest.h5'), os.path.join(out, 'earliest.txt'))\n"
	"# --- a v1 B-tree of type 1: chunks of a layout v3 dataset ---\n"
	"with h5py.File(os.path.join(out, 'chunked.h5'), 'w') as f:\n"
	"    ds = f.create_dataset('chunked', shape=(200, 190), chunks=(10, 10), dtype='i4',\n"
	"                          compression='gzip')\n"
	"    ds[:, :] = np.arange(200 * 190, dtype='i4').reshape(200, 190)\n"
	"    ds[0:10, 0:10] = 0\n"
	"    with open(os.path.join(out, 'chunks.txt'), 'w') as o:\n"
	"        for i in range(ds.id.get_num_chunks()):\n"
	"            ci = ds.id.get_chunk_info(i)\n"
	"            o.write('%d %d %d %d %d\\n' % (ci.chunk_offset[0], ci.chunk_offset[1],\n"
	"                    ci.byte_offset, ci.size, ci.filter_mask))\n"
	"# --- new-style groups ---\n"
	"with h5py.File(os.path.join(out, 'latest.h5'), 'w', libver='latest') as f:\n"
	"    c = f.create_group('compact')\n"
	"    d = c.create_dataset('data', data=np.arange(10))\n"
	"    c['alias'] = d\n"
	"    c['soft'] = h5py.SoftLink('/compact/data')\n"
	"    c['ext'] = h5py.ExternalLink('other.h5', '/x/y')\n"
	"    c.create_group('sub')\n"
	"    c['n' + 'L' * 300] = d\n"
	"    c['\\u00e9t\\u00e9'] = d\n"
	"    f.create_group('empty')\n"
	"    m = f.create_group('dense_mixed')\n"
	"    for i, n in enumerate(names(40, 'm')):\n"
	"        if i % 3 == 0:\n"
	"            m[n] = h5py.SoftLink('/target/' + n)\n"
	"        elif i % 3 == 1:\n"
	"            m[n] = h5py.ExternalLink('f%d.h5' % i, '/p/' + n)\n"
	"        else:\n"
	"            m[n] = d\n"
	"    m['\\u65e5\\u672c'] = d\n"
	"    t = f.create_group('tracked', track_order=True)\n"
	"    for n in names(50, 't'):\n"
	"        t.create_group(n)\n"
	"    ds = f.create_dataset('targets', data=np.arange(3))\n"
	"    g = f.create_group('dense')\n"
	"    dn = names(100000, 'n')\n"
	"    for n in dn:\n"
	"        g[n] = ds\n"
	"    with open(os.path.join(out, 'lookups.txt'), 'w') as o:\n"
	"        addr = g.id.links.get_info(dn[0].encode()).u\n"
	"        for n in rnd.sample(dn, 1000):\n"
	"            o.write('%s %d\\n' % (n.encode().hex(), addr))\n"
	"dump(os.path.join(out, 'latest.h5'), os.path.join(out, 'latest.txt'))\n"
	"# --- two names with the same lookup3 hash in dense groups ---\n"
	"with h5py.File(os.path.join(out, 'collide.h5'), 'w', libver='latest') as f:\n"
	"    d1 = f.create_dataset('d1', data=1)\n"
	"    d2 = f.create_dataset('d2', data=2)\n"
	"    for gname, members in (('one', [ca]), ('both', [ca, cb])):\n"
	"        g = f.create_group(gname)\n"
	"        for i in range(20):\n"
	"            g['filler%d' % i] = d2\n"
	"        for i, n in enumerate(members):\n"
	"            g[n] = d1 if i == 0 else d2\n"
	"dump(os.path.join(out, 'collide.h5'), os.path.join(out, 'collide.txt'))\n"
	"for i, p in enumerate(corpus):\n"
	"    try:\n"
	"        dump(p, os.path.join(out, 'corpus%d.txt' % i))\n"
	"    except Exception:\n"
	"        pass\n";

static const char *const corpus_files[] = {
	"HDF5Examples/C/H5G/h5ex_g_traverse.h5",
	"HDF5Examples/C/H5G/h5ex_g_iterate.h5",
	"tools/test/h5dump/testfiles/tall.h5",
	"tools/test/h5dump/testfiles/tslink.h5",
	"tools/test/h5dump/testfiles/tsoftlinks.h5",
	"tools/test/h5dump/testfiles/textlinksrc.h5",
	"tools/test/h5dump/testfiles/tudlink.h5",
	"tools/test/h5dump/testfiles/tordergr.h5",
	"tools/test/h5dump/testfiles/tfcontents1.h5",
	"tools/test/h5dump/testfiles/xml/tmany.h5",
	"tools/test/h5dump/testfiles/xml/tloop2.h5",
	"tools/test/h5diff/testfiles/h5diff_danglelinks1.h5",
	"tools/test/h5diff/testfiles/h5diff_grp_recurse1.h5",
	"tools/test/h5diff/testfiles/h5diff_types.h5",
	"tools/test/h5copy/testfiles/h5copytst.h5",
	"tools/test/h5repack/testfiles/h5repack_objs.h5",
	"hl/test/testfiles/test_ld.h5",
	"test/testfiles/group_old.h5",
	"test/testfiles/le_extlink1.h5",
	"test/testfiles/be_extlink2.h5",
};
#define NCORPUS (sizeof(corpus_files) / sizeof(*corpus_files))

static char coll_a[32], coll_b[32];

static void py_setup(void)
{
	char args[8192];
	int rc;

	py_ok = 0;
	if (!test_hash_collision(coll_a, coll_b, sizeof(coll_a)))
		return;
	snprintf(args, sizeof(args), "%s %s", coll_a, coll_b);
	for (size_t i = 0; i < NCORPUS; i++) {
		size_t l = strlen(args);

		snprintf(args + l, sizeof(args) - l, " '%s/%s'", test_corpus_dir(), corpus_files[i]);
	}
	snprintf(py_dir, sizeof(py_dir), "/tmp/h5fs_test_group_XXXXXX");
	rc = test_py_run(py_dir, py_script, args);
	if (rc == TEST_PY_NO_PYTHON || rc == TEST_PY_NO_DIR || rc == TEST_PY_NO_SCRIPT)
		return;
	if (rc != 0) {
		fprintf(stderr, "test_group: h5py generator unavailable (status %d): skipping h5py tests\n", rc);
		return;
	}
	py_ok = 1;
}

static void py_teardown(void)
{
	test_tmp_remove(py_dir);
}

static void hex_put(char *dst, size_t room, const uint8_t *p, size_t n)
{
	size_t o = 0;

	if (n == 0) {
		snprintf(dst, room, "-");
		return;
	}
	for (size_t i = 0; i < n && o + 3 <= room; i++, o += 2)
		snprintf(dst + o, room - o, "%02x", p[i]);
}

static size_t hex_get(uint8_t *dst, size_t room, const char *hex)
{
	size_t n = 0;

	if (strcmp(hex, "-") == 0)
		return 0;
	for (; hex[0] && hex[1] && n < room; hex += 2) {
		unsigned v;

		sscanf(hex, "%2x", &v);
		dst[n++] = (uint8_t)v;
	}
	return n;
}

/* Our line for a link, in the generator's format. */
static void link_line(char *out, size_t room, const h5_link *l)
{
	char name[2 * 1024 + 1], a[2 * 1024 + 1], b[2 * 1024 + 1];

	hex_put(name, sizeof(name), (const uint8_t *)l->name, l->name_len);
	if (l->type == H5_LINK_HARD) {
		snprintf(out, room, "%s H %llu", name, (unsigned long long)l->addr);
	} else if (l->type == H5_LINK_SOFT) {
		hex_put(a, sizeof(a), (const uint8_t *)l->target, strlen(l->target));
		snprintf(out, room, "%s S %s", name, a);
	} else {
		hex_put(a, sizeof(a), (const uint8_t *)l->ext_file, strlen(l->ext_file));
		hex_put(b, sizeof(b), (const uint8_t *)l->ext_path, strlen(l->ext_path));
		snprintf(out, room, "%s E %s %s", name, a, b);
	}
}

struct lines {
	char **v;
	size_t n, cap;
};

static void lines_add(struct lines *ls, const char *s)
{
	if (ls->n == ls->cap) {
		ls->cap = ls->cap ? 2 * ls->cap : 64;
		ls->v = realloc(ls->v, ls->cap * sizeof(*ls->v));
		ck_assert_ptr_nonnull(ls->v);
	}
	ls->v[ls->n] = strdup(s);
	ck_assert_ptr_nonnull(ls->v[ls->n]);
	ls->n++;
}

static void lines_free(struct lines *ls)
{
	for (size_t i = 0; i < ls->n; i++)
		free(ls->v[i]);
	free(ls->v);
	memset(ls, 0, sizeof(*ls));
}

static int lines_cb(const h5_link *l, void *ud)
{
	char line[8192];

	link_line(line, sizeof(line), l);
	lines_add(ud, line);
	return 0;
}

/* Resolve an absolute path with h5_group_lookup, component by component. */
static int resolve(uint64_t *addr, h5_file *f, const char *path)
{
	char buf[4096], *save = NULL, *tok;
	uint64_t a = h5_file_root(f);

	snprintf(buf, sizeof(buf), "%s", path);
	for (tok = strtok_r(buf, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
		h5_link l;
		int rc = h5_group_lookup(&l, f, a, tok);

		if (rc < 0)
			return rc;
		if (l.type != H5_LINK_HARD) {
			h5_link_clear(&l);
			return H5_ERR_INVAL;
		}
		a = l.addr;
		h5_link_clear(&l);
	}
	*addr = a;
	return 0;
}

/* Compare every group listed in dump file txt (of h5 file) with ours, and
 * look each listed name up. Returns the number of groups checked. */
static size_t check_dump(const char *h5, const char *txt, size_t max_lookups)
{
	FILE *fp = fopen(txt, "r");
	static char line[16384];
	h5_file *f = NULL;
	size_t ngroups = 0;
	int rc;

	ck_assert_msg(fp != NULL, "%s: %s", txt, strerror(errno));
	rc = h5_file_open(&f, h5, NULL);
	ck_assert_msg(rc == 0, "open %s: %s", h5, h5_err_msg());
	while (fgets(line, sizeof(line), fp)) {
		char hexpath[8192];
		uint8_t path[4096];
		size_t plen, nexp;
		struct lines got = { 0 }, want = { 0 };
		uint64_t gaddr;

		line[strcspn(line, "\n")] = 0;
		ck_assert_msg(sscanf(line, "G %8191s %zu", hexpath, &nexp) == 2, "bad line %s", line);
		plen = hex_get(path, sizeof(path) - 1, hexpath);
		path[plen] = 0;
		for (size_t i = 0; i < nexp; i++) {
			ck_assert_ptr_nonnull(fgets(line, sizeof(line), fp));
			line[strcspn(line, "\n")] = 0;
			lines_add(&want, line);
		}
		rc = resolve(&gaddr, f, (const char *)path);
		ck_assert_msg(rc == 0, "%s: resolve %s: %s", h5, path, h5_err_msg());
		rc = h5_group_iterate(f, gaddr, lines_cb, &got);
		ck_assert_msg(rc == 0, "%s: iterate %s: %s", h5, path, h5_err_msg());
		ck_assert_msg(got.n == want.n, "%s: group %s: %zu links, h5py has %zu", h5, path, got.n, want.n);
		for (size_t i = 0; i < got.n; i++)
			ck_assert_msg(strcmp(got.v[i], want.v[i]) == 0, "%s: group %s link %zu: ours '%.200s' h5py '%.200s'",
				      h5, path, i, got.v[i], want.v[i]);
		/* every listed name can be looked up to the same link */
		for (size_t i = 0; i < want.n && i < max_lookups; i++) {
			uint8_t name[4096];
			char hexname[8192], mine[8192];
			size_t nlen;
			h5_link l;

			sscanf(want.v[i], "%8191s", hexname);
			nlen = hex_get(name, sizeof(name) - 1, hexname);
			name[nlen] = 0;
			rc = h5_group_lookup(&l, f, gaddr, (const char *)name);
			ck_assert_msg(rc == 0, "%s: lookup %s in %s: %s", h5, name, path, h5_err_msg());
			link_line(mine, sizeof(mine), &l);
			ck_assert_str_eq(mine, want.v[i]);
			h5_link_clear(&l);
		}
		lines_free(&got);
		lines_free(&want);
		ngroups++;
	}
	fclose(fp);
	h5_file_close(f);
	return ngroups;
}

#define NEED_PY()                                                              \
	do {                                                                   \
		if (!py_ok) {                                                  \
			fprintf(stderr, "%s: skipped (no h5py)\n", __func__); \
			return;                                                \
		}                                                              \
	} while (0)

static void py_path(char *out, size_t room, const char *name)
{
	snprintf(out, room, "%s/%s", py_dir, name);
}

START_TEST(py_earliest_symbol_tables)
{
	char h5[400], txt[400];
	h5_file *f;
	uint64_t big, links;
	h5_bt1_node *n;
	h5_ohdr *oh;
	const h5_msg *m;
	h5_stab st;
	h5_link a, b;

	NEED_PY();
	py_path(h5, sizeof(h5), "earliest.h5");
	py_path(txt, sizeof(txt), "earliest.txt");
	ck_assert_uint_ge(check_dump(h5, txt, 5000), 6);

	ck_assert_int_eq(h5_file_open(&f, h5, NULL), 0);
	/* 1000 groups with K=16 need a B-tree of more than one level */
	ck_assert_int_eq(resolve(&big, f, "/big"), 0);
	ck_assert_int_eq(h5_ohdr_get(&oh, f, big), 0);
	ck_assert(h5_ohdr_is_group(oh));
	m = h5_ohdr_find(oh, H5_MSG_STAB);
	ck_assert_ptr_nonnull(m);
	ck_assert_int_eq(h5_stab_decode(&st, &f->fmt, m->data, m->size), 0);
	h5_ohdr_release(f, oh);
	ck_assert_int_eq(h5_bt1_get(&n, f, st.btree_addr, 0), 0);
	ck_assert_uint_ge(n->level, 1);
	h5_bt1_release(f, n);
	/* missing names */
	ck_assert_int_eq(h5_group_lookup(&a, f, big, "g"), H5_ERR_NOTFOUND);
	ck_assert_int_eq(h5_group_lookup(&a, f, big, "zzz"), H5_ERR_NOTFOUND);
	ck_assert_int_eq(h5_group_lookup(&a, f, big, "0"), H5_ERR_NOTFOUND);
	/* hard links to one object under two names; soft links from the heap */
	ck_assert_int_eq(resolve(&links, f, "/links"), 0);
	ck_assert_int_eq(h5_group_lookup(&a, f, links, "data"), 0);
	ck_assert_int_eq(h5_group_lookup(&b, f, links, "alias"), 0);
	ck_assert_uint_eq(a.addr, b.addr);
	h5_link_clear(&a);
	h5_link_clear(&b);
	ck_assert_int_eq(h5_group_lookup(&a, f, links, "soft"), 0);
	ck_assert_int_eq(a.type, H5_LINK_SOFT);
	ck_assert_str_eq(a.target, "/links/data");
	h5_link_clear(&a);
	ck_assert_int_eq(h5_group_lookup(&a, f, links, "dangling"), 0);
	ck_assert_str_eq(a.target, "/nowhere/at all");
	h5_link_clear(&a);
	h5_file_close(f);
}
END_TEST

START_TEST(py_latest_compact_dense)
{
	char h5[400], txt[400], lk[400], line[1024];
	h5_file *f;
	uint64_t g;
	h5_link a, b;
	FILE *fp;
	size_t nlook = 0;

	NEED_PY();
	py_path(h5, sizeof(h5), "latest.h5");
	py_path(txt, sizeof(txt), "latest.txt");
	py_path(lk, sizeof(lk), "lookups.txt");
	/* full listings (100,000 in /dense); lookups up to 5000 per group */
	ck_assert_uint_ge(check_dump(h5, txt, 5000), 6);

	ck_assert_int_eq(h5_file_open(&f, h5, NULL), 0);
	ck_assert_int_eq(resolve(&g, f, "/compact"), 0);
	ck_assert_int_eq(h5_group_lookup(&a, f, g, "data"), 0);
	ck_assert_int_eq(h5_group_lookup(&b, f, g, "alias"), 0);
	ck_assert_int_eq(a.type, H5_LINK_HARD);
	ck_assert_uint_eq(a.addr, b.addr);
	h5_link_clear(&a);
	h5_link_clear(&b);
	ck_assert_int_eq(h5_group_lookup(&a, f, g, "soft"), 0);
	ck_assert_str_eq(a.target, "/compact/data");
	h5_link_clear(&a);
	ck_assert_int_eq(h5_group_lookup(&a, f, g, "ext"), 0);
	ck_assert_int_eq(a.type, H5_LINK_EXTERNAL);
	ck_assert_str_eq(a.ext_file, "other.h5");
	ck_assert_str_eq(a.ext_path, "/x/y");
	h5_link_clear(&a);
	ck_assert_int_eq(h5_group_lookup(&a, f, g, "\xc3\xa9t\xc3\xa9"), 0);
	ck_assert_uint_eq(a.cset, 1);
	h5_link_clear(&a);
	ck_assert_int_eq(h5_group_lookup(&a, f, g, "missing"), H5_ERR_NOTFOUND);

	/* 1000 random names of the 100,000-link dense group */
	ck_assert_int_eq(resolve(&g, f, "/dense"), 0);
	fp = fopen(lk, "r");
	ck_assert_ptr_nonnull(fp);
	while (fgets(line, sizeof(line), fp)) {
		char hexname[512];
		uint8_t name[256];
		unsigned long long addr;
		size_t nlen;

		ck_assert_int_eq(sscanf(line, "%511s %llu", hexname, &addr), 2);
		nlen = hex_get(name, sizeof(name) - 1, hexname);
		name[nlen] = 0;
		ck_assert_msg(h5_group_lookup(&a, f, g, (const char *)name) == 0, "%s: %s", name, h5_err_msg());
		ck_assert_uint_eq(a.addr, addr);
		ck_assert_str_eq(a.name, (const char *)name);
		h5_link_clear(&a);
		/* a near miss must not be found */
		name[nlen] = 'x';
		name[nlen + 1] = 0;
		ck_assert_int_eq(h5_group_lookup(&a, f, g, (const char *)name), H5_ERR_NOTFOUND);
		nlook++;
	}
	fclose(fp);
	ck_assert_uint_eq(nlook, 1000);
	ck_assert_int_eq(h5_group_lookup(&a, f, g, "not-there"), H5_ERR_NOTFOUND);
	h5_file_close(f);
}
END_TEST

struct chunk_rec {
	uint64_t off[2], addr, size, mask;
};

static int chunk_rec_cmp(const void *a, const void *b)
{
	const struct chunk_rec *x = a, *y = b;

	if (x->off[0] != y->off[0])
		return x->off[0] < y->off[0] ? -1 : 1;
	if (x->off[1] != y->off[1])
		return x->off[1] < y->off[1] ? -1 : 1;
	return 0;
}

/* Walk a chunk B-tree left to right collecting the leaf entries. */
static void walk_chunks(h5_file *f, uint64_t addr, int level, struct chunk_rec *out, size_t *n, size_t max)
{
	h5_bt1_node *nd;

	ck_assert_msg(h5_bt1_get(&nd, f, addr, 3) == 0, "%s", h5_err_msg());
	if (level >= 0)
		ck_assert_int_eq(nd->level, level);
	for (unsigned i = 0; i < nd->n; i++) {
		if (nd->level > 0) {
			walk_chunks(f, nd->child[i], nd->level - 1, out, n, max);
			continue;
		}
		ck_assert_uint_lt(*n, max);
		out[*n].off[0] = nd->offsets[i * 3];
		out[*n].off[1] = nd->offsets[i * 3 + 1];
		ck_assert_uint_eq(nd->offsets[i * 3 + 2], 0);
		out[*n].addr = nd->child[i];
		out[*n].size = nd->chunk_size[i];
		out[*n].mask = nd->filter_mask[i];
		(*n)++;
	}
	h5_bt1_release(f, nd);
}

START_TEST(py_chunk_btree)
{
	char h5[400], txt[400];
	static struct chunk_rec got[1000], want[1000];
	size_t ngot = 0, nwant = 0;
	h5_file *f;
	h5_ohdr *oh;
	h5_layout lay;
	h5_bt1_node *root;
	uint64_t ds;
	const h5_msg *m;
	FILE *fp;
	unsigned long long v[5];

	NEED_PY();
	py_path(h5, sizeof(h5), "chunked.h5");
	py_path(txt, sizeof(txt), "chunks.txt");
	fp = fopen(txt, "r");
	ck_assert_ptr_nonnull(fp);
	while (fscanf(fp, "%llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4]) == 5) {
		ck_assert_uint_lt(nwant, 1000);
		want[nwant++] = (struct chunk_rec){ { v[0], v[1] }, v[2], v[3], v[4] };
	}
	fclose(fp);
	ck_assert_uint_eq(nwant, 20 * 19);

	ck_assert_int_eq(h5_file_open(&f, h5, NULL), 0);
	ck_assert_int_eq(resolve(&ds, f, "/chunked"), 0);
	ck_assert_int_eq(h5_ohdr_get(&oh, f, ds), 0);
	ck_assert(!h5_ohdr_is_group(oh));
	m = h5_ohdr_find(oh, H5_MSG_LAYOUT);
	ck_assert_ptr_nonnull(m);
	ck_assert_msg(h5_layout_decode(&lay, &f->fmt, m->data, m->size) == 0, "%s", h5_err_msg());
	h5_ohdr_release(f, oh);
	ck_assert_int_eq(lay.cls, H5_LAYOUT_CHUNKED);
	ck_assert_int_eq(lay.idx_type, H5_CIDX_BTREE1);
	ck_assert_uint_eq(lay.ndims, 2);
	/* 380 chunks, 2K = 64 per node: the root is an internal node */
	ck_assert_int_eq(h5_bt1_get(&root, f, lay.idx_addr, 3), 0);
	ck_assert_uint_ge(root->level, 1);
	h5_bt1_release(f, root);
	/* the same node asked for as a group node */
	ck_assert_int_eq(h5_bt1_get(&root, f, lay.idx_addr, 0), H5_ERR_FORMAT);
	walk_chunks(f, lay.idx_addr, -1, got, &ngot, 1000);
	ck_assert_uint_eq(ngot, nwant);
	qsort(got, ngot, sizeof(*got), chunk_rec_cmp);
	qsort(want, nwant, sizeof(*want), chunk_rec_cmp);
	for (size_t i = 0; i < ngot; i++) {
		ck_assert_uint_eq(got[i].off[0], want[i].off[0]);
		ck_assert_uint_eq(got[i].off[1], want[i].off[1]);
		ck_assert_uint_eq(got[i].addr, want[i].addr);
		ck_assert_uint_eq(got[i].size, want[i].size);
		ck_assert_uint_eq(got[i].mask, want[i].mask);
	}
	h5_layout_clear(&lay);
	h5_file_close(f);
}
END_TEST

START_TEST(py_hash_collision)
{
	char h5[400], txt[400];
	h5_file *f;
	uint64_t one, both;
	h5_link a, b;

	NEED_PY();
	ck_assert_uint_eq(h5_checksum_lookup3(coll_a, strlen(coll_a), 0),
			  h5_checksum_lookup3(coll_b, strlen(coll_b), 0));
	py_path(h5, sizeof(h5), "collide.h5");
	py_path(txt, sizeof(txt), "collide.txt");
	ck_assert_uint_ge(check_dump(h5, txt, 5000), 3);
	ck_assert_int_eq(h5_file_open(&f, h5, NULL), 0);
	ck_assert_int_eq(resolve(&one, f, "/one"), 0);
	ck_assert_int_eq(resolve(&both, f, "/both"), 0);
	/* same hash as a present name, but not present */
	ck_assert_int_eq(h5_group_lookup(&a, f, one, coll_b), H5_ERR_NOTFOUND);
	ck_assert_ptr_null(a.name);
	ck_assert_int_eq(h5_group_lookup(&a, f, one, coll_a), 0);
	h5_link_clear(&a);
	/* both present: each finds its own link */
	ck_assert_int_eq(h5_group_lookup(&a, f, both, coll_a), 0);
	ck_assert_int_eq(h5_group_lookup(&b, f, both, coll_b), 0);
	ck_assert_str_eq(a.name, coll_a);
	ck_assert_str_eq(b.name, coll_b);
	ck_assert_uint_ne(a.addr, b.addr);
	h5_link_clear(&a);
	h5_link_clear(&b);
	h5_file_close(f);
}
END_TEST

START_TEST(py_corpus_groups)
{
	size_t checked = 0;

	NEED_PY();
	for (size_t i = 0; i < NCORPUS; i++) {
		char h5[1024], txt[400], name[64];

		snprintf(h5, sizeof(h5), "%s/%s", test_corpus_dir(), corpus_files[i]);
		snprintf(name, sizeof(name), "corpus%zu.txt", i);
		py_path(txt, sizeof(txt), name);
		if (access(txt, R_OK) != 0)
			continue; /* not in this corpus, or h5py could not read it */
		ck_assert_uint_ge(check_dump(h5, txt, 5000), 1);
		checked++;
	}
	fprintf(stderr, "py_corpus_groups: %zu corpus files compared\n", checked);
	if (access(test_corpus_dir(), R_OK) == 0)
		ck_assert_uint_ge(checked, 10);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("group");
	TCase *tc = tcase_create("decoders");
	TCase *ti = tcase_create("image");
	TCase *tp = tcase_create("h5py");

	tcase_add_test(tc, lheap_decode_ok);
	tcase_add_test(tc, lheap_decode_bad);
	tcase_add_test(tc, lheap_string_bounds);
	tcase_add_test(tc, symentry_decode_types);
	tcase_add_test(tc, snod_decode_ok_and_bad);
	tcase_add_test(tc, bt1_decode_group);
	tcase_add_test(tc, bt1_decode_chunk);
	tcase_add_test(tc, link_decode_hard_all_name_sizes);
	tcase_add_test(tc, link_decode_fields);
	tcase_add_test(tc, link_decode_soft_external);
	tcase_add_test(tc, link_decode_bad);
	tcase_add_test(tc, linfo_stab_decode);
	suite_add_tcase(s, tc);

	tcase_add_test(ti, img_loaders);
	tcase_add_test(ti, img_iterate_and_lookup);
	tcase_add_test(ti, img_iterate_window);
	tcase_add_test(ti, img_root_cached_stab);
	tcase_add_test(ti, img_hostile);
	suite_add_tcase(s, ti);

	tcase_add_unchecked_fixture(tp, py_setup, py_teardown);
	tcase_set_timeout(tp, 300);
	tcase_add_test(tp, py_earliest_symbol_tables);
	tcase_add_test(tp, py_latest_compact_dense);
	tcase_add_test(tp, py_chunk_btree);
	tcase_add_test(tp, py_hash_collision);
	tcase_add_test(tp, py_corpus_groups);
	suite_add_tcase(s, tp);
	return s;
}

H5_TEST_MAIN(make_suite)
