/* test_vds.c - dataspace selections (sel.c) and virtual dataset mappings
 * (vds.c) on hand-built encodings; the mapping arithmetic is checked
 * against a brute-force enumeration of the selections. */
#include "testutil.h"

#include "vds.h"
#include "base.h"
#include "rd.h"
#include "dataset.h"

/* ---- encoders for the selection formats --------------------------------- */

static void enc_all(tbuf *b)
{
	tb_u32(b, H5_SEL_ALL);
	tb_u32(b, 1);
	tb_zero(b, 8);
}

/* version 2 regular hyperslab (8-byte values) */
static void enc_reg2(tbuf *b, unsigned rank, const uint64_t *start, const uint64_t *stride, const uint64_t *count,
		     const uint64_t *block)
{
	tb_u32(b, H5_SEL_HYPER);
	tb_u32(b, 2);
	tb_u8(b, 1);
	tb_u32(b, 4 + 32 * rank);
	tb_u32(b, rank);
	for (unsigned d = 0; d < rank; d++) {
		tb_u64(b, start[d]);
		tb_u64(b, stride[d]);
		tb_u64(b, count[d]);
		tb_u64(b, block[d]);
	}
}

/* version 3 regular hyperslab with 4-byte values */
static void enc_reg3_4(tbuf *b, unsigned rank, const uint64_t *start, const uint64_t *stride,
		       const uint64_t *count, const uint64_t *block)
{
	tb_u32(b, H5_SEL_HYPER);
	tb_u32(b, 3);
	tb_u8(b, 1);
	tb_u8(b, 4);
	tb_u32(b, rank);
	for (unsigned d = 0; d < rank; d++) {
		tb_u32(b, (uint32_t)start[d]);
		tb_u32(b, (uint32_t)stride[d]);
		tb_u32(b, count[d] == H5_UNLIMITED ? 0xffffffffu : (uint32_t)count[d]);
		tb_u32(b, block[d] == H5_UNLIMITED ? 0xffffffffu : (uint32_t)block[d]);
	}
}

/* version 1 irregular hyperslab: nb blocks of (lo[rank], hi[rank]) */
static void enc_irr1(tbuf *b, unsigned rank, size_t nb, const uint64_t *lohi)
{
	tb_u32(b, H5_SEL_HYPER);
	tb_u32(b, 1);
	tb_u32(b, 0);
	tb_u32(b, (uint32_t)(8 + nb * rank * 8));
	tb_u32(b, rank);
	tb_u32(b, (uint32_t)nb);
	for (size_t i = 0; i < nb * rank * 2; i++)
		tb_u32(b, (uint32_t)lohi[i]);
}

static void enc_points1(tbuf *b, unsigned rank, size_t n, const uint64_t *pts)
{
	tb_u32(b, H5_SEL_POINTS);
	tb_u32(b, 1);
	tb_u32(b, 0);
	tb_u32(b, (uint32_t)(8 + n * rank * 4));
	tb_u32(b, rank);
	tb_u32(b, (uint32_t)n);
	for (size_t i = 0; i < n * rank; i++)
		tb_u32(b, (uint32_t)pts[i]);
}

static void decode_ok(h5_sel *s, tbuf *b)
{
	h5_rd r;

	h5_rd_init(&r, b->p, b->len);
	ck_assert_msg(h5_sel_decode(s, &r) == 0, "%s", h5_err_msg());
	ck_assert_uint_eq(h5_rd_left(&r), 0);
}

/* Every element of a 2-D extent: locate() agrees with a brute-force
 * "selected" predicate and with the row-major (or listed) ordinal, and
 * coord() inverts locate(). */
typedef bool (*pred_fn)(const uint64_t *c);

static void check_against(const h5_sel *s, const uint64_t *dims, pred_fn pred)
{
	uint64_t expect_ord = 0;
	uint64_t c[2];

	for (c[0] = 0; c[0] < dims[0]; c[0]++)
		for (c[1] = 0; c[1] < dims[1]; c[1]++) {
			uint64_t ord = 0, n = 0, back[2], bn;
			bool sel = h5_sel_locate(&ord, &n, s, c);

			ck_assert_msg(sel == pred(c), "(%llu,%llu): locate %d", (unsigned long long)c[0],
				      (unsigned long long)c[1], sel);
			if (sel) {
				ck_assert_uint_eq(ord, expect_ord);
				expect_ord++;
				h5_sel_coord(back, &bn, s, ord);
				ck_assert_uint_eq(back[0], c[0]);
				ck_assert_uint_eq(back[1], c[1]);
				ck_assert_uint_ge(n, 1);
				ck_assert_uint_ge(bn, 1);
				/* the run really is selected, ordinals consecutive */
				for (uint64_t k = 1; k < n && c[1] + k < dims[1]; k++) {
					uint64_t c2[2] = { c[0], c[1] + k }, o2, n2;

					ck_assert(h5_sel_locate(&o2, &n2, s, c2));
					ck_assert_uint_eq(o2, ord + k);
				}
			} else if (n != UINT64_MAX) {
				uint64_t c2[2] = { c[0], c[1] + n }, o2, n2;

				for (uint64_t k = 1; k < n; k++) {
					uint64_t c3[2] = { c[0], c[1] + k };

					ck_assert(!pred(c3));
				}
				ck_assert(h5_sel_locate(&o2, &n2, s, c2));
			}
		}
	ck_assert_uint_eq(expect_ord, s->nelem);
}

static bool pred_reg(const uint64_t *c)
{
	/* start (1,2) stride (3,4) count (3,2) block (2,3) */
	return c[0] >= 1 && (c[0] - 1) % 3 < 2 && (c[0] - 1) / 3 < 3 && c[1] >= 2 && (c[1] - 2) % 4 < 3 &&
	       (c[1] - 2) / 4 < 2;
}

START_TEST(test_regular)
{
	uint64_t start[2] = { 1, 2 }, stride[2] = { 3, 4 }, count[2] = { 3, 2 }, block[2] = { 2, 3 };
	uint64_t dims[2] = { 12, 12 };
	tbuf b = { 0 };
	h5_sel s;

	enc_reg2(&b, 2, start, stride, count, block);
	decode_ok(&s, &b);
	ck_assert(s.regular);
	ck_assert_int_eq(s.unlim_dim, -1);
	ck_assert_int_eq(h5_sel_set_extent(&s, 2, dims), 0);
	ck_assert_uint_eq(s.nelem, 36);
	check_against(&s, dims, pred_reg);
	/* outside a 9x9 extent (rows reach 9) */
	dims[0] = 8;
	ck_assert_int_eq(h5_sel_set_extent(&s, 2, dims), H5_ERR_FORMAT);
	h5_sel_free(&s);
	tb_free(&b);

	/* the same in the version 3, 4-byte encoding */
	enc_reg3_4(&b, 2, start, stride, count, block);
	decode_ok(&s, &b);
	dims[0] = 12;
	ck_assert_int_eq(h5_sel_set_extent(&s, 2, dims), 0);
	check_against(&s, dims, pred_reg);
	h5_sel_free(&s);
	tb_free(&b);
}
END_TEST

static bool pred_irr(const uint64_t *c)
{
	/* blocks rows 1..3 cols 1..2 and rows 2..5 cols 4..6, plus row 2 cols 2..4 (overlaps) */
	return (c[0] >= 1 && c[0] <= 3 && c[1] >= 1 && c[1] <= 2) ||
	       (c[0] >= 2 && c[0] <= 5 && c[1] >= 4 && c[1] <= 6) || (c[0] == 2 && c[1] >= 2 && c[1] <= 4);
}

START_TEST(test_irregular)
{
	const uint64_t lohi[] = { 1, 1, 3, 2, 2, 4, 5, 6, 2, 2, 2, 4 };
	uint64_t dims[2] = { 7, 8 };
	tbuf b = { 0 };
	h5_sel s;

	enc_irr1(&b, 2, 3, lohi);
	decode_ok(&s, &b);
	ck_assert(!s.regular);
	ck_assert_int_eq(h5_sel_set_extent(&s, 2, dims), 0);
	check_against(&s, dims, pred_irr);
	h5_sel_free(&s);
	tb_free(&b);
}
END_TEST

START_TEST(test_points)
{
	/* listed out of order: ordinals follow the list */
	const uint64_t pts[] = { 3, 1, 0, 2, 3, 0 };
	uint64_t dims[2] = { 4, 4 }, c[2], n, ord;
	tbuf b = { 0 };
	h5_sel s;

	enc_points1(&b, 2, 3, pts);
	decode_ok(&s, &b);
	ck_assert_int_eq(h5_sel_set_extent(&s, 2, dims), 0);
	ck_assert_uint_eq(s.nelem, 3);
	for (uint64_t i = 0; i < 3; i++) {
		h5_sel_coord(c, &n, &s, i);
		ck_assert_uint_eq(c[0], pts[2 * i]);
		ck_assert_uint_eq(c[1], pts[2 * i + 1]);
		ck_assert(h5_sel_locate(&ord, &n, &s, c));
		ck_assert_uint_eq(ord, i);
	}
	c[0] = 3;
	c[1] = 2;
	ck_assert(!h5_sel_locate(&ord, &n, &s, c));
	ck_assert_uint_eq(n, UINT64_MAX);
	h5_sel_free(&s);
	tb_free(&b);
}
END_TEST

START_TEST(test_unlimited)
{
	/* count unlimited: blocks of 2 every 5 from 1 */
	uint64_t start[1] = { 1 }, stride[1] = { 5 }, count[1] = { H5_UNLIMITED }, block[1] = { 2 };
	tbuf b = { 0 };
	h5_sel s;

	enc_reg2(&b, 1, start, stride, count, block);
	decode_ok(&s, &b);
	ck_assert_int_eq(s.unlim_dim, 0);
	/* coordinates below 14: 1,2, 6,7, 11,12 */
	ck_assert_uint_eq(h5_sel_count_below(&s, 0, 14), 6);
	ck_assert_uint_eq(h5_sel_count_below(&s, 0, 12), 5);
	ck_assert_uint_eq(h5_sel_count_below(&s, 0, 1), 0);
	/* libhdf5's clip extent: 5 elements end inside the third block */
	ck_assert_uint_eq(h5_sel_clip_extent(&s, 5), 12);
	ck_assert_uint_eq(h5_sel_clip_extent(&s, 6), 13);
	ck_assert_uint_eq(h5_sel_clip_extent(&s, 0), 0);
	ck_assert_int_eq(h5_sel_clip(&s, 5), 0);
	ck_assert_uint_eq(s.nelem, 5);
	h5_sel_free(&s);
	tb_free(&b);

	/* block unlimited, 4-byte encoding */
	start[0] = 3;
	stride[0] = 1;
	count[0] = 1;
	block[0] = H5_UNLIMITED;
	enc_reg3_4(&b, 1, start, stride, count, block);
	decode_ok(&s, &b);
	ck_assert_int_eq(s.unlim_dim, 0);
	ck_assert_uint_eq(h5_sel_count_below(&s, 0, 10), 7);
	ck_assert_uint_eq(h5_sel_clip_extent(&s, 7), 10);
	h5_sel_free(&s);
	tb_free(&b);
}
END_TEST

START_TEST(test_hostile_selections)
{
	tbuf b = { 0 };
	h5_sel s;
	h5_rd r;
	uint64_t start[2] = { 0, 0 }, stride[2] = { 1, 1 }, count[2] = { 4, 1 }, block[2] = { 2, 1 };

	/* overlapping blocks (stride < block) */
	enc_reg2(&b, 2, start, stride, count, block);
	h5_rd_init(&r, b.p, b.len);
	ck_assert_int_eq(h5_sel_decode(&s, &r), H5_ERR_FORMAT);
	tb_free(&b);
	/* a block list claiming 2^31 blocks in a few bytes */
	tb_u32(&b, H5_SEL_HYPER);
	tb_u32(&b, 1);
	tb_zero(&b, 8);
	tb_u32(&b, 2);
	tb_u32(&b, 0x80000000u);
	h5_rd_init(&r, b.p, b.len);
	ck_assert_int_lt(h5_sel_decode(&s, &r), 0);
	tb_free(&b);
	/* irregular blocks that would expand to more runs than allowed */
	{
		const uint64_t lohi[] = { 0, 0, 0xfffffff, 1, 0, 5, 0xfffffff, 6 };

		enc_irr1(&b, 2, 2, lohi);
		h5_rd_init(&r, b.p, b.len);
		ck_assert_int_eq(h5_sel_decode(&s, &r), H5_ERR_LIMIT);
		tb_free(&b);
	}
	/* unknown type, truncated */
	tb_u32(&b, 9);
	tb_u32(&b, 1);
	h5_rd_init(&r, b.p, b.len);
	ck_assert_int_lt(h5_sel_decode(&s, &r), 0);
	tb_free(&b);
	tb_u32(&b, H5_SEL_ALL);
	h5_rd_init(&r, b.p, b.len);
	ck_assert_int_lt(h5_sel_decode(&s, &r), 0);
	tb_free(&b);
}
END_TEST

/* ---- VDS blocks and reads through in-memory sources ------------------------- */

/* Two sources, 1-D int32 arrays of 10 elements valued 100*id + i. */
typedef struct msrc {
	int id;
	uint64_t n;
} msrc;

static int nopen, nclose;

static int m_open(void **h, unsigned *rank, uint64_t *dims, void *ctx, const char *file, const char *dset)
{
	msrc *m;

	(void)ctx;
	if (strcmp(dset, "/d") != 0 || strncmp(file, "src", 3) != 0 || file[3] < '0' || file[3] > '9' || file[4])
		return 1;
	if (file[3] - '0' >= 3)     /* src0..src2 exist */
		return 1;
	m = malloc(sizeof(*m));
	m->id = file[3] - '0';
	m->n = 10 + (uint64_t)m->id; /* sizes 10, 11, 12 */
	*h = m;
	*rank = 1;
	dims[0] = m->n;
	nopen++;
	return 0;
}

static int m_read(void *h, void *buf, uint64_t off, size_t len)
{
	msrc *m = h;
	int32_t *o = buf;

	ck_assert_uint_eq(off % 4, 0);
	ck_assert_uint_eq(len % 4, 0);
	ck_assert_uint_le(off / 4 + len / 4, m->n);
	for (size_t i = 0; i < len / 4; i++)
		o[i] = 100 * m->id + (int32_t)(off / 4 + i);
	return 0;
}

static void m_close(void *h)
{
	nclose++;
	free(h);
}

static const h5_vds_source_ops mops = { m_open, m_read, m_close };

static void vds_block(tbuf *b, size_t n, const char *const *files, void (*sel)(tbuf *, size_t, int))
{
	tb_u8(b, 0);
	tb_u64(b, n);
	for (size_t i = 0; i < n; i++) {
		tb_put(b, files[i], strlen(files[i]) + 1);
		tb_put(b, "/d", 3);
		sel(b, i, 0);
		sel(b, i, 1);
	}
	tb_checksum(b, 0);
}

/* mapping i: all of source i -> virtual [12*i, 12*i + 10) */
static void sel_fixed(tbuf *b, size_t i, int virt)
{
	uint64_t start = 12 * i, one = 1, count = 1, block = 10;

	if (!virt) {
		uint64_t z = 0;

		enc_reg2(b, 1, &z, &one, &count, &block);
		return;
	}
	enc_reg2(b, 1, &start, &one, &count, &block);
}

START_TEST(test_vds_fixed)
{
	const char *files[] = { "src0", "src1", "missing" };
	const h5_fmt fmt = { 8, 8 };
	uint64_t dims[1] = { 36 }, maxd[1] = { 36 };
	int32_t out[36], fill = -1;
	h5_vds *v;
	h5_vds_view *w;
	tbuf b = { 0 };

	vds_block(&b, 3, files, sel_fixed);
	ck_assert_msg(h5_vds_decode(&v, b.p, b.len, &fmt) == 0, "%s", h5_err_msg());
	ck_assert_uint_eq(v->n, 3);
	ck_assert_str_eq(v->map[2].file, "missing");
	nopen = nclose = 0;
	ck_assert_msg(h5_vds_resolve(&w, v, 1, dims, maxd, &mops, NULL) == 0, "%s", h5_err_msg());
	ck_assert_int_eq(nopen, 2);
	ck_assert_uint_eq(w->dims[0], 36);
	ck_assert_int_eq(h5_vds_read(w, out, 0, sizeof(out), 4, (const uint8_t *)&fill), 0);
	for (int i = 0; i < 36; i++) {
		int m = i / 12, k = i % 12;
		int32_t want = (m < 2 && k < 10) ? 100 * m + k : -1;

		ck_assert_msg(out[i] == want, "element %d: %d, want %d", i, out[i], want);
	}
	/* an unaligned read inside one element and across a mapping edge */
	{
		uint8_t part[7];

		ck_assert_int_eq(h5_vds_read(w, part, 4 * 9 + 1, 7, 4, (const uint8_t *)&fill), 0);
		ck_assert_int_eq(memcmp(part, (uint8_t *)out + 37, 7), 0);
	}
	h5_vds_view_free(w);
	ck_assert_int_eq(nclose, 2);
	h5_vds_free(v);
	/* a corrupted checksum */
	b.p[5] ^= 1;
	ck_assert_int_eq(h5_vds_decode(&v, b.p, b.len, &fmt) < 0 ? 0 : 1, 0);
	h5_vds_free(v);
	tb_free(&b);
}
END_TEST

/* Version 1 (III.F, format 4.0): a flags byte per mapping; names shared
 * by the index of an earlier mapping; the same-file bit (no file name). */
START_TEST(test_vds_block_v1)
{
	const h5_fmt fmt = { 8, 8 };
	h5_vds *v;
	tbuf b = { 0 };

	tb_u8(&b, 1);
	tb_u64(&b, 3);
	tb_u8(&b, 0);                   /* 0: src0 /d */
	tb_put(&b, "src0", 5);
	tb_put(&b, "/d", 3);
	sel_fixed(&b, 0, 0);
	sel_fixed(&b, 0, 1);
	tb_u8(&b, 0x03);                /* 1: both names of mapping 0 */
	tb_u64(&b, 0);
	tb_u64(&b, 0);
	sel_fixed(&b, 1, 0);
	sel_fixed(&b, 1, 1);
	tb_u8(&b, 0x04 | 0x02);         /* 2: this file, the dataset name of 1 */
	tb_u64(&b, 1);
	sel_fixed(&b, 2, 0);
	sel_fixed(&b, 2, 1);
	tb_checksum(&b, 0);
	ck_assert_msg(h5_vds_decode(&v, b.p, b.len, &fmt) == 0, "%s", h5_err_msg());
	ck_assert_uint_eq(v->n, 3);
	ck_assert_str_eq(v->map[1].file, "src0");
	ck_assert_str_eq(v->map[1].dset, "/d");
	ck_assert_str_eq(v->map[2].file, ".");
	ck_assert_str_eq(v->map[2].dset, "/d");
	ck_assert_uint_eq(v->map[2].virt.dim[0].start, 24);
	h5_vds_free(v);
	tb_free(&b);

	/* a shared name of the mapping itself (or a later one); reserved flags;
	 * version 2 */
	for (int k = 0; k < 3; k++) {
		tb_u8(&b, k == 2 ? 2 : 1);
		tb_u64(&b, 1);
		tb_u8(&b, k == 0 ? 0x01 : k == 1 ? 0x08 : 0);
		if (k == 0)
			tb_u64(&b, 0);
		else
			tb_put(&b, "src0", 5);
		tb_put(&b, "/d", 3);
		sel_fixed(&b, 0, 0);
		sel_fixed(&b, 0, 1);
		tb_checksum(&b, 0);
		v = NULL;
		ck_assert_int_eq(h5_vds_decode(&v, b.p, b.len, &fmt), H5_ERR_FORMAT);
		ck_assert_ptr_null(v);
		tb_free(&b);
	}
}
END_TEST

/* one printf mapping: block j (of 4 every 5) <- all of src<j>, count unlimited */
static void sel_printf(tbuf *b, size_t i, int virt)
{
	uint64_t start = 0, stride = 5, count = H5_UNLIMITED, block = 4, one = 1, four = 4;

	(void)i;
	if (!virt)
		enc_reg2(b, 1, &start, &one, &one, &four);
	else
		enc_reg2(b, 1, &start, &stride, &count, &block);
}

START_TEST(test_vds_printf)
{
	const char *files[] = { "src%b" };
	const h5_fmt fmt = { 8, 8 };
	uint64_t dims[1] = { 2 }, maxd[1] = { H5_UNLIMITED };
	int32_t out[14];
	h5_vds *v;
	h5_vds_view *w;
	tbuf b = { 0 };
	char *name;

	ck_assert_int_eq(h5_vds_source_name(&name, "a%%b%b_%b", 12), 0);
	ck_assert_str_eq(name, "a%b12_12");
	free(name);
	vds_block(&b, 1, files, sel_printf);
	ck_assert_msg(h5_vds_decode(&v, b.p, b.len, &fmt) == 0, "%s", h5_err_msg());
	ck_assert(v->map[0].printf_names);
	ck_assert_msg(h5_vds_resolve(&w, v, 1, dims, maxd, &mops, NULL) == 0, "%s", h5_err_msg());
	/* src0..src2 found: the extent ends with block 2 (10 + 4) */
	ck_assert_uint_eq(w->dims[0], 14);
	ck_assert_uint_eq(w->nsrc, 3);
	ck_assert_int_eq(h5_vds_read(w, out, 0, sizeof(out), 4, NULL), 0);
	for (int i = 0; i < 14; i++) {
		int j = i / 5, k = i % 5;
		int32_t want = k < 4 ? 100 * j + k : 0;

		ck_assert_msg(out[i] == want, "element %d: %d, want %d", i, out[i], want);
	}
	h5_vds_view_free(w);
	h5_vds_free(v);
	tb_free(&b);
}
END_TEST

/* unlimited (block) mapping: virtual [2, ...) <- source src1 [1, ...) */
static void sel_unlim(tbuf *b, size_t i, int virt)
{
	uint64_t start = virt ? 2 : 1, one = 1, block = H5_UNLIMITED;

	(void)i;
	enc_reg2(b, 1, &start, &one, &one, &block);
}

START_TEST(test_vds_unlimited)
{
	const char *files[] = { "src1" };
	const h5_fmt fmt = { 8, 8 };
	uint64_t dims[1] = { 5 }, maxd[1] = { H5_UNLIMITED };
	int32_t out[12];
	h5_vds *v;
	h5_vds_view *w;
	tbuf b = { 0 };

	vds_block(&b, 1, files, sel_unlim);
	ck_assert_msg(h5_vds_decode(&v, b.p, b.len, &fmt) == 0, "%s", h5_err_msg());
	ck_assert_msg(h5_vds_resolve(&w, v, 1, dims, maxd, &mops, NULL) == 0, "%s", h5_err_msg());
	/* src1 has 11 elements: 10 from 1 on -> virtual 2..11 */
	ck_assert_uint_eq(w->dims[0], 12);
	ck_assert_int_eq(h5_vds_read(w, out, 0, sizeof(out), 4, NULL), 0);
	for (int i = 0; i < 12; i++)
		ck_assert_int_eq(out[i], i < 2 ? 0 : 100 + (i - 1));
	h5_vds_view_free(w);
	h5_vds_free(v);
	tb_free(&b);
}
END_TEST

START_TEST(test_vds_hostile)
{
	const h5_fmt fmt = { 8, 8 };
	tbuf b = { 0 };
	h5_vds *v;

	/* a billion mappings in a few bytes */
	tb_u8(&b, 0);
	tb_u64(&b, 1000000000);
	tb_zero(&b, 40);
	ck_assert_int_lt(h5_vds_decode(&v, b.p, b.len, &fmt), 0);
	tb_free(&b);
	/* version 3 encoding (unknown; 1 is format 4.0's, test_vds_block_v1) */
	tb_u8(&b, 3);
	tb_u64(&b, 0);
	tb_checksum(&b, 0);
	ck_assert_int_lt(h5_vds_decode(&v, b.p, b.len, &fmt), 0);
	tb_free(&b);
	/* unterminated name */
	tb_u8(&b, 0);
	tb_u64(&b, 1);
	tb_str(&b, "abcdefghijklmnopqrstuvwxyzabcdefghijklmnop");
	ck_assert_int_lt(h5_vds_decode(&v, b.p, b.len, &fmt), 0);
	tb_free(&b);
	/* a bad printf specifier */
	tb_u8(&b, 0);
	tb_u64(&b, 1);
	tb_put(&b, "f%d", 4);
	tb_put(&b, "/d", 3);
	enc_all(&b);
	enc_all(&b);
	tb_checksum(&b, 0);
	ck_assert_int_eq(h5_vds_decode(&v, b.p, b.len, &fmt), H5_ERR_FORMAT);
	tb_free(&b);
}
END_TEST

static Suite *vds_suite(void)
{
	Suite *s = suite_create("vds");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_regular);
	tcase_add_test(tc, test_vds_block_v1);
	tcase_add_test(tc, test_irregular);
	tcase_add_test(tc, test_points);
	tcase_add_test(tc, test_unlimited);
	tcase_add_test(tc, test_hostile_selections);
	tcase_add_test(tc, test_vds_fixed);
	tcase_add_test(tc, test_vds_printf);
	tcase_add_test(tc, test_vds_unlimited);
	tcase_add_test(tc, test_vds_hostile);
	suite_add_tcase(s, tc);
	return s;
}

H5_TEST_MAIN(vds_suite)
