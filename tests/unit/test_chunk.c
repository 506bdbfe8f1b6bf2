/* test_chunk.c - chunk indexes (earray.c, farray.c, chunk.c). */
#include "testutil.h"
#include "array.h"
#include "cidx.h"
#include "cidx_write.h"
#include "source.h"
#include "base.h"
#include "rd.h"
#include "checksum.h"
#include "cache.h"
#include "file.h"
#include "layout.h"
#include "chunk_rec.h"
#include "dataset.h"
#include "chunk.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- extensible array geometry (extensible-array-reference.md) ----------- */

static h5_ea_geom geom_default(void)
{
	h5_ea_geom g;

	ck_assert_int_eq(h5_ea_geom_init(&g, 32, 4, 16, 4, 10), 0);
	return g;
}

START_TEST(ea_geom_reference_table)
{
	h5_ea_geom g = geom_default();
	/* super block: ndblks, dblk_nelmts, start_idx, start_dblk (from the reference) */
	static const uint64_t tab[][4] = {
		{ 1, 16, 0, 0 },   { 1, 32, 16, 1 },  { 2, 32, 48, 2 },  { 2, 64, 112, 4 },
		{ 4, 64, 240, 6 }, { 4, 128, 496, 10 }, { 8, 128, 1008, 14 },
	};

	ck_assert_uint_eq(g.nsblks, 29);
	ck_assert_uint_eq(g.iblock_nsblks, 4);
	ck_assert_uint_eq(g.ndblk_addrs, 6);
	ck_assert_uint_eq(g.nsblk_addrs, 25);
	ck_assert_uint_eq(g.arr_off_size, 4);
	ck_assert_uint_eq(g.dblk_page_nelmts, 1024);
	for (unsigned u = 0; u < 7; u++) {
		ck_assert_uint_eq(g.sb_ndblks[u], tab[u][0]);
		ck_assert_uint_eq(g.sb_dblk_nelmts[u], tab[u][1]);
		ck_assert_uint_eq(g.sb_start_idx[u], tab[u][2]);
		ck_assert_uint_eq(g.sb_start_dblk[u], tab[u][3]);
	}
	ck_assert_uint_eq(g.sb_ndblks[11], 32);
	ck_assert_uint_eq(g.sb_dblk_nelmts[11], 1024);
	ck_assert_uint_eq(g.sb_start_idx[11], 32752);
	ck_assert_uint_eq(g.sb_ndblks[12], 64);
	ck_assert_uint_eq(g.sb_dblk_nelmts[12], 1024);
	ck_assert_uint_eq(g.sb_start_idx[12], 65520);
	ck_assert_uint_eq(g.sb_ndblks[13], 64);
	ck_assert_uint_eq(g.sb_dblk_nelmts[13], 2048);
	ck_assert_uint_eq(g.sb_start_idx[13], 131056);
	/* data blocks in file order: 16, 32, 32, 64, 64, 128 (the defect the reference records) */
	ck_assert_uint_eq(g.sb_dblk_nelmts[2], 32);
	/* paging starts at super block 13, exactly */
	ck_assert_uint_eq(h5_ea_dblk_npages(&g, 12), 0);
	ck_assert_uint_eq(h5_ea_dblk_npages(&g, 13), 2);
	ck_assert_uint_eq(h5_ea_page_init_size(&g, 13), 1);
	/* start_dblk keeps accumulating ndblks */
	for (unsigned u = 1; u < g.nsblks; u++)
		ck_assert_uint_eq(g.sb_start_dblk[u], g.sb_start_dblk[u - 1] + g.sb_ndblks[u - 1]);
	/* block offsets of the worked example's six index-block data blocks */
	ck_assert_uint_eq(h5_ea_dblock_off(&g, 0, 0), 0);
	ck_assert_uint_eq(h5_ea_dblock_off(&g, 1, 1), 48);
	ck_assert_uint_eq(h5_ea_dblock_off(&g, 2, 2), 112);
	ck_assert_uint_eq(h5_ea_dblock_off(&g, 2, 3), 144);
	ck_assert_uint_eq(h5_ea_dblock_off(&g, 3, 4), 368);
	ck_assert_uint_eq(h5_ea_dblock_off(&g, 3, 5), 432);
}
END_TEST

START_TEST(ea_geom_rejects_bad_params)
{
	h5_ea_geom g;

	ck_assert_int_eq(h5_ea_geom_init(&g, 0, 4, 16, 4, 10), H5_ERR_FORMAT);
	ck_assert_int_eq(h5_ea_geom_init(&g, 65, 4, 16, 4, 10), H5_ERR_FORMAT);
	ck_assert_int_eq(h5_ea_geom_init(&g, 32, 0, 16, 4, 10), H5_ERR_FORMAT);
	ck_assert_int_eq(h5_ea_geom_init(&g, 32, 4, 12, 4, 10), H5_ERR_FORMAT);  /* not a power of two */
	ck_assert_int_eq(h5_ea_geom_init(&g, 32, 4, 0, 4, 10), H5_ERR_FORMAT);
	ck_assert_int_eq(h5_ea_geom_init(&g, 32, 4, 16, 3, 10), H5_ERR_FORMAT);
	ck_assert_int_eq(h5_ea_geom_init(&g, 32, 4, 16, 1, 10), H5_ERR_FORMAT);
	ck_assert_int_eq(h5_ea_geom_init(&g, 32, 4, 16, 4, 0), H5_ERR_FORMAT);
	ck_assert_int_eq(h5_ea_geom_init(&g, 32, 4, 16, 4, 33), H5_ERR_FORMAT);
	ck_assert_int_eq(h5_ea_geom_init(&g, 3, 4, 16, 4, 2), H5_ERR_FORMAT);    /* blocks bigger than the array */
	ck_assert_int_eq(h5_ea_geom_init(&g, 4, 4, 2, 128, 2), H5_ERR_FORMAT);   /* index block > super blocks */
	ck_assert_int_eq(h5_ea_geom_init(&g, 64, 255, 1, 2, 64), H5_ERR_FORMAT); /* 65 super blocks */
	/* the largest legal geometry works without overflow */
	ck_assert_int_eq(h5_ea_geom_init(&g, 64, 255, 2, 128, 64), 0);
	ck_assert_uint_eq(g.nsblks, 64);
	ck_assert_uint_eq(g.dblk_page_nelmts, UINT64_MAX);
	ck_assert_uint_eq(h5_ea_dblk_npages(&g, 63), 0);
}
END_TEST

START_TEST(ea_locate_indices)
{
	h5_ea_geom g = geom_default();
	h5_ea_loc l;

	for (uint64_t i = 0; i < 4; i++) {
		ck_assert_int_eq(h5_ea_locate(&l, &g, i), 0);
		ck_assert(l.in_iblock);
		ck_assert_uint_eq(l.elmt, i);
	}
	ck_assert_int_eq(h5_ea_locate(&l, &g, 4), 0);
	ck_assert(!l.in_iblock && !l.via_sblock && !l.paged);
	ck_assert_uint_eq(l.sblk_idx, 0);
	ck_assert_uint_eq(l.dblk_idx, 0);
	ck_assert_uint_eq(l.elmt, 0);

	ck_assert_int_eq(h5_ea_locate(&l, &g, 19), 0);
	ck_assert_uint_eq(l.sblk_idx, 0);
	ck_assert_uint_eq(l.dblk_idx, 0);
	ck_assert_uint_eq(l.elmt, 15);

	ck_assert_int_eq(h5_ea_locate(&l, &g, 20), 0);
	ck_assert_uint_eq(l.sblk_idx, 1);
	ck_assert_uint_eq(l.dblk_idx, 1);
	ck_assert_uint_eq(l.elmt, 0);
	ck_assert_uint_eq(l.dblk_nelmts, 32);

	ck_assert_int_eq(h5_ea_locate(&l, &g, 243), 0); /* last element of the index block's data blocks */
	ck_assert(!l.via_sblock);
	ck_assert_uint_eq(l.sblk_idx, 3);
	ck_assert_uint_eq(l.dblk_idx, 5);
	ck_assert_uint_eq(l.elmt, 63);

	ck_assert_int_eq(h5_ea_locate(&l, &g, 244), 0); /* first element behind a super block */
	ck_assert(l.via_sblock);
	ck_assert_uint_eq(l.sblk_idx, 4);
	ck_assert_uint_eq(l.sblk_off, 0);
	ck_assert_uint_eq(l.dblk_idx, 0);
	ck_assert_uint_eq(l.elmt, 0);

	ck_assert_int_eq(h5_ea_locate(&l, &g, 499), 0);
	ck_assert(l.via_sblock);
	ck_assert_uint_eq(l.sblk_idx, 4);
	ck_assert_uint_eq(l.dblk_idx, 3);
	ck_assert_uint_eq(l.elmt, 63);

	ck_assert_int_eq(h5_ea_locate(&l, &g, 131059), 0); /* last unpaged element */
	ck_assert_uint_eq(l.sblk_idx, 12);
	ck_assert_uint_eq(l.sblk_off, 8);
	ck_assert_uint_eq(l.dblk_idx, 63);
	ck_assert_uint_eq(l.elmt, 1023);
	ck_assert(!l.paged);

	ck_assert_int_eq(h5_ea_locate(&l, &g, 131060), 0); /* first paged element */
	ck_assert_uint_eq(l.sblk_idx, 13);
	ck_assert_uint_eq(l.dblk_idx, 0);
	ck_assert(l.paged);
	ck_assert_uint_eq(l.page_idx, 0);
	ck_assert_uint_eq(l.page_elmt, 0);
	ck_assert_uint_eq(l.page_init_bit, 0);

	/* second page of the second data block of super block 13 */
	ck_assert_int_eq(h5_ea_locate(&l, &g, 131060 + 2048 + 1024 + 5), 0);
	ck_assert_uint_eq(l.dblk_idx, 1);
	ck_assert_uint_eq(l.page_idx, 1);
	ck_assert_uint_eq(l.page_elmt, 5);
	ck_assert_uint_eq(l.page_init_bit, 3);

	/* the last addressable element, and one past it */
	uint64_t cap = 4 + g.sb_start_idx[28] + g.sb_ndblks[28] * g.sb_dblk_nelmts[28];
	ck_assert_int_eq(h5_ea_locate(&l, &g, cap - 1), 0);
	ck_assert_uint_eq(l.sblk_idx, 28);
	ck_assert_int_eq(h5_ea_locate(&l, &g, cap), H5_ERR_RANGE);
	ck_assert_int_eq(h5_ea_locate(&l, &g, UINT64_MAX), H5_ERR_RANGE);
}
END_TEST

/* ---- hand-built arrays in a memory image ------------------------------------ */

static h5_file *fake_file(const uint8_t *buf, size_t len)
{
	h5_file *f = calloc(1, sizeof(*f));

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(h5_source_open_mem(&f->src, buf, len), 0);
	f->eof = len;
	f->fmt.sizeof_addr = 8;
	f->fmt.sizeof_size = 8;
	f->nthreads = 1;
	pthread_mutex_init(&f->write_lock, NULL);
	pthread_mutex_init(&f->fill_lock, NULL);
	ck_assert_int_eq(h5_cache_new(&f->meta, 1 << 20), 0);
	ck_assert_int_eq(h5_cache_new(&f->chunks, 1 << 20), 0);
	return f;
}

static void put_cksum_at(tbuf *b, size_t from)
{
	h5_le_encode(b->p + b->len - 4, h5_checksum_metadata(b->p + from, b->len - 4 - from), 4);
}

/* Filtered element: address, 2-byte size, mask. */
static void put_felmt(tbuf *b, uint64_t idx)
{
	tb_u64(b, 0x1000 + idx * 0x10);
	tb_u16(b, (uint16_t)(100 + idx));
	tb_u32(b, (uint32_t)(idx & 1));
}

enum {
	EA_OK = 0, EA_BAD_HDR_CKSUM, EA_BAD_IB_OWNER, EA_BAD_SB_OFF, EA_BAD_PAGE_CKSUM, EA_BAD_DB_OWNER,
	EA_BAD_DB_OFF, EA_BAD_SIG
};

#define EA_HDR 0x10
#define EA_IB 0x100
#define EA_DB0 0x200
#define EA_SB3 0x300
#define EA_DB3 0x400

/* EA with max_bits 8, 2 index block elements, data blocks of >= 2,
 * 2 pointers per super block and 4-element pages (so super block 3's
 * 8-element data blocks are paged), filtered elements of 14 bytes.
 * Elements 0..3 and 16..19 are set; 4..15 and 20..31 are not allocated. */
static tbuf build_ea(int variant)
{
	tbuf b = { 0 };
	size_t at;

	tb_zero(&b, EA_HDR);
	/* EAHD */
	at = b.len;
	tb_str(&b, variant == EA_BAD_SIG ? "EAHX" : "EAHD");
	tb_u8(&b, 0);
	tb_u8(&b, 1);  /* filtered chunks */
	tb_u8(&b, 14); /* 8 + 2 + 4 */
	tb_u8(&b, 8);
	tb_u8(&b, 2);
	tb_u8(&b, 2);
	tb_u8(&b, 2);
	tb_u8(&b, 2);
	for (int i = 0; i < 4; i++)
		tb_u64(&b, 0);
	tb_u64(&b, 32); /* max index set */
	tb_u64(&b, 8);
	tb_u64(&b, EA_IB);
	tb_checksum(&b, at);
	if (variant == EA_BAD_HDR_CKSUM)
		b.p[at + 20] ^= 1;
	/* EAIB: 2 elements, dblk addrs for super blocks 0 and 1, 6 sblk addrs */
	tb_zero(&b, EA_IB - b.len);
	at = b.len;
	tb_str(&b, "EAIB");
	tb_u8(&b, 0);
	tb_u8(&b, 1);
	tb_u64(&b, variant == EA_BAD_IB_OWNER ? EA_HDR + 1 : EA_HDR);
	put_felmt(&b, 0);
	put_felmt(&b, 1);
	tb_u64(&b, EA_DB0);
	tb_u64(&b, UINT64_MAX);       /* super block 1's data block: never allocated */
	tb_u64(&b, UINT64_MAX);       /* super block 2 */
	tb_u64(&b, EA_SB3);           /* super block 3 */
	for (int i = 0; i < 4; i++)
		tb_u64(&b, UINT64_MAX);
	tb_checksum(&b, at);
	/* EADB of super block 0: elements 2 and 3, block offset 0 */
	tb_zero(&b, EA_DB0 - b.len);
	at = b.len;
	tb_str(&b, "EADB");
	tb_u8(&b, 0);
	tb_u8(&b, 1);
	tb_u64(&b, variant == EA_BAD_DB_OWNER ? 0x999 : EA_HDR);
	tb_u8(&b, variant == EA_BAD_DB_OFF ? 1 : 0);
	put_felmt(&b, 2);
	put_felmt(&b, 3);
	tb_checksum(&b, at);
	/* EASB of super block 3: start_idx 14, bitmap 2 x 1 byte, 2 data blocks */
	tb_zero(&b, EA_SB3 - b.len);
	at = b.len;
	tb_str(&b, "EASB");
	tb_u8(&b, 0);
	tb_u8(&b, 1);
	tb_u64(&b, EA_HDR);
	tb_u8(&b, variant == EA_BAD_SB_OFF ? 15 : 14);
	tb_u8(&b, 0x80); /* flat bitmap: data block 0 page 0 only */
	tb_u8(&b, 0x00);
	tb_u64(&b, EA_DB3);
	tb_u64(&b, UINT64_MAX);
	tb_checksum(&b, at);
	/* paged EADB: prefix only (block offset 14 + 0 * 8), then two pages */
	tb_zero(&b, EA_DB3 - b.len);
	at = b.len;
	tb_str(&b, "EADB");
	tb_u8(&b, 0);
	tb_u8(&b, 1);
	tb_u64(&b, EA_HDR);
	tb_u8(&b, 14);
	tb_checksum(&b, at);
	at = b.len;
	for (uint64_t i = 16; i < 20; i++)
		put_felmt(&b, i);
	tb_checksum(&b, at);
	if (variant == EA_BAD_PAGE_CKSUM)
		b.p[at + 3] ^= 0x40;
	tb_zero(&b, 4 * 14 + 4); /* page 1: uninitialized garbage (zeros) */
	return b;
}

START_TEST(ea_hand_built_lookup)
{
	tbuf b = build_ea(EA_OK);
	h5_file *f = fake_file(b.p, b.len);
	h5_chunk_rec r;
	const h5_ea_hdr *h;
	h5_cache_ref ref;

	ck_assert_int_eq(h5_ea_hdr_get(&h, &ref, f, EA_HDR), 0);
	ck_assert_uint_eq(h->g.nsblks, 8);
	ck_assert_uint_eq(h->g.iblock_nsblks, 2);
	ck_assert_uint_eq(h->g.ndblk_addrs, 2);
	ck_assert_uint_eq(h->g.nsblk_addrs, 6);
	ck_assert_uint_eq(h->g.arr_off_size, 1);
	ck_assert_uint_eq(h5_ea_dblk_npages(&h->g, 3), 2);
	ck_assert_uint_eq(h5_ea_page_addr(h, &f->fmt, EA_DB3, 1), EA_DB3 + 19 + 60);
	h5_cache_release(f->meta, &ref);

	for (uint64_t i = 0; i < 40; i++) {
		bool set = i < 4 || (i >= 16 && i < 20);

		ck_assert_int_eq(h5_ea_lookup(&r, f, EA_HDR, i), 0);
		if (set) {
			ck_assert_uint_eq(r.addr, 0x1000 + i * 0x10);
			ck_assert_uint_eq(r.size, 100 + i);
			ck_assert_uint_eq(r.filter_mask, i & 1);
		} else {
			ck_assert_uint_eq(r.addr, H5_ADDR_UNDEF);
		}
	}
	h5_file_close(f);
	tb_free(&b);
}
END_TEST

struct visit_log {
	uint64_t idx[64];
	h5_chunk_rec rec[64];
	unsigned n;
	unsigned stop_after;
};

static int visit_cb(uint64_t idx, const h5_chunk_rec *rec, void *ud)
{
	struct visit_log *v = ud;

	ck_assert_uint_lt(v->n, 64);
	v->idx[v->n] = idx;
	v->rec[v->n++] = *rec;
	return v->stop_after && v->n == v->stop_after ? 42 : 0;
}

START_TEST(ea_hand_built_iterate)
{
	tbuf b = build_ea(EA_OK);
	h5_file *f = fake_file(b.p, b.len);
	struct visit_log v = { 0 };
	static const uint64_t want[] = { 0, 1, 2, 3, 16, 17, 18, 19 };

	ck_assert_int_eq(h5_ea_iterate(f, EA_HDR, visit_cb, &v), 0);
	ck_assert_uint_eq(v.n, 8);
	for (unsigned i = 0; i < 8; i++) {
		ck_assert_uint_eq(v.idx[i], want[i]);
		ck_assert_uint_eq(v.rec[i].size, 100 + want[i]);
	}
	memset(&v, 0, sizeof(v));
	v.stop_after = 3;
	ck_assert_int_eq(h5_ea_iterate(f, EA_HDR, visit_cb, &v), 42);
	ck_assert_uint_eq(v.n, 3);
	h5_file_close(f);
	tb_free(&b);
}
END_TEST

START_TEST(ea_hand_built_corrupt)
{
	static const struct {
		int variant;
		uint64_t idx;
		int want;
	} cases[] = {
		{ EA_BAD_SIG, 0, H5_ERR_FORMAT },
		{ EA_BAD_HDR_CKSUM, 0, H5_ERR_CHECKSUM },
		{ EA_BAD_IB_OWNER, 0, H5_ERR_FORMAT },
		{ EA_BAD_SB_OFF, 16, H5_ERR_FORMAT },
		{ EA_BAD_PAGE_CKSUM, 17, H5_ERR_CHECKSUM },
		{ EA_BAD_DB_OWNER, 2, H5_ERR_FORMAT },
		{ EA_BAD_DB_OFF, 3, H5_ERR_FORMAT },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		tbuf b = build_ea(cases[i].variant);
		h5_file *f = fake_file(b.p, b.len);
		h5_chunk_rec r;
		struct visit_log v = { 0 };

		ck_assert_int_eq(h5_ea_lookup(&r, f, EA_HDR, cases[i].idx), cases[i].want);
		ck_assert_int_eq(h5_ea_iterate(f, EA_HDR, visit_cb, &v), cases[i].want);
		/* the damage is local: a lookup elsewhere still works */
		if (cases[i].variant == EA_BAD_PAGE_CKSUM || cases[i].variant == EA_BAD_SB_OFF) {
			ck_assert_int_eq(h5_ea_lookup(&r, f, EA_HDR, 2), 0);
			ck_assert_uint_eq(r.addr, 0x1000 + 2 * 0x10);
		}
		h5_file_close(f);
		tb_free(&b);
	}
}
END_TEST

START_TEST(ea_decoders_truncated_and_encode_roundtrip)
{
	tbuf b = build_ea(EA_OK);
	h5_fmt fmt = { 8, 8 };
	h5_ea_hdr h;
	h5_ea_iblock *ib;
	h5_ea_sblock *sb;
	h5_ea_dblock *db;
	uint8_t out[256];
	size_t hs = h5_ea_hdr_size(&fmt);

	/* every truncation of the header fails cleanly */
	for (size_t n = 0; n < hs; n++)
		ck_assert_int_eq(h5_ea_hdr_decode(&h, &fmt, EA_HDR, b.p + EA_HDR, n), H5_ERR_FORMAT);
	ck_assert_int_eq(h5_ea_hdr_decode(&h, &fmt, EA_HDR, b.p + EA_HDR, hs), 0);
	ck_assert_uint_eq(h.max_idx_set, 32);
	ck_assert_uint_eq(h.iblock_addr, EA_IB);
	/* a header back-pointer check needs the right address */
	ck_assert_int_eq(h5_ea_iblock_decode(&ib, &h, &fmt, EA_IB, b.p + EA_IB, (size_t)h5_ea_iblock_size(&h, &fmt) - 1),
			 H5_ERR_FORMAT);
	ck_assert_int_eq(h5_ea_iblock_decode(&ib, &h, &fmt, EA_IB, b.p + EA_IB, (size_t)h5_ea_iblock_size(&h, &fmt)), 0);
	ck_assert_uint_eq(ib->dblk_addrs[0], EA_DB0);
	ck_assert_uint_eq(ib->dblk_addrs[1], H5_ADDR_UNDEF);
	ck_assert_uint_eq(ib->sblk_addrs[1], EA_SB3);

	/* encoders reproduce the hand-built bytes exactly */
	ck_assert_int_eq(h5_ea_hdr_encode(out, hs, &fmt, &h), 0);
	ck_assert_mem_eq(out, b.p + EA_HDR, hs);
	ck_assert_int_eq(h5_ea_hdr_encode(out, hs + 1, &fmt, &h), H5_ERR_INVAL);
	ck_assert_int_eq(h5_ea_iblock_encode(out, (size_t)h5_ea_iblock_size(&h, &fmt), &h, &fmt, ib), 0);
	ck_assert_mem_eq(out, b.p + EA_IB, (size_t)h5_ea_iblock_size(&h, &fmt));

	ck_assert_uint_eq(h5_ea_sblock_size(&h, &fmt, 3), 6 + 8 + 1 + 2 + 16 + 4);
	/* super block 1 lives in the index block; 2 has another size (no bitmap) */
	ck_assert_int_eq(h5_ea_sblock_decode(&sb, &h, &fmt, EA_SB3, 1, b.p + EA_SB3, 64), H5_ERR_FORMAT);
	ck_assert_int_eq(h5_ea_sblock_decode(&sb, &h, &fmt, EA_SB3, 2, b.p + EA_SB3, 64), H5_ERR_CHECKSUM);
	ck_assert_int_eq(h5_ea_sblock_decode(&sb, &h, &fmt, EA_SB3, 3, b.p + EA_SB3, 64), 0);
	ck_assert_uint_eq(sb->npages, 2);
	ck_assert_uint_eq(sb->page_init[0], 0x80);
	ck_assert_int_eq(h5_ea_sblock_encode(out, 37, &h, &fmt, sb), 0);
	ck_assert_mem_eq(out, b.p + EA_SB3, 37);

	ck_assert_uint_eq(h5_ea_dblock_size(&h, &fmt, 2), 6 + 8 + 1 + 28 + 4);
	ck_assert_uint_eq(h5_ea_dblock_size(&h, &fmt, 8), 6 + 8 + 1 + 4); /* paged: prefix only */
	ck_assert_uint_eq(h5_ea_dblock_alloc_size(&h, &fmt, 8), 19 + 2 * 60);
	ck_assert_int_eq(h5_ea_dblock_decode(&db, &h, &fmt, EA_DB0, 2, 0, b.p + EA_DB0, 47), 0);
	ck_assert_uint_eq(h5_le_decode(db->elmts + 14, 8), 0x1000 + 3 * 0x10);
	ck_assert_int_eq(h5_ea_dblock_encode(out, 47, &h, &fmt, db), 0);
	ck_assert_mem_eq(out, b.p + EA_DB0, 47);
	h5_ea_dblock_free(db);
	/* wrong expected block offset */
	ck_assert_int_eq(h5_ea_dblock_decode(&db, &h, &fmt, EA_DB0, 2, 2, b.p + EA_DB0, 47), H5_ERR_FORMAT);
	/* a data block claiming another header */
	h5_ea_hdr other = h;
	other.addr = EA_HDR + 8;
	ck_assert_int_eq(h5_ea_dblock_decode(&db, &other, &fmt, EA_DB0, 2, 0, b.p + EA_DB0, 47), H5_ERR_FORMAT);
	/* page verify / encode */
	ck_assert_int_eq(h5_ea_page_verify(&h, EA_DB3 + 19, b.p + EA_DB3 + 19, 60), 0);
	ck_assert_int_eq(h5_ea_page_verify(&h, EA_DB3 + 19, b.p + EA_DB3 + 19, 59), H5_ERR_FORMAT);
	ck_assert_int_eq(h5_ea_page_encode(out, 60, &h, b.p + EA_DB3 + 19), 0);
	ck_assert_mem_eq(out, b.p + EA_DB3 + 19, 60);

	/* a header with max_idx_set beyond the capacity is refused */
	{
		tbuf c = { 0 };

		tb_put(&c, b.p + EA_HDR, hs);
		h5_le_encode(c.p + 12 + 4 * 8, 100000, 8);
		put_cksum_at(&c, 0);
		ck_assert_int_eq(h5_ea_hdr_decode(&h, &fmt, EA_HDR, c.p, c.len), H5_ERR_FORMAT);
		/* client 1 with an element too small to hold a size */
		memcpy(c.p, b.p + EA_HDR, hs);
		c.p[6] = 12;
		put_cksum_at(&c, 0);
		ck_assert_int_eq(h5_ea_hdr_decode(&h, &fmt, EA_HDR, c.p, c.len), H5_ERR_FORMAT);
		/* unknown client */
		memcpy(c.p, b.p + EA_HDR, hs);
		c.p[5] = 2;
		put_cksum_at(&c, 0);
		ck_assert_int_eq(h5_ea_hdr_decode(&h, &fmt, EA_HDR, c.p, c.len), H5_ERR_FORMAT);
		/* version 1 */
		memcpy(c.p, b.p + EA_HDR, hs);
		c.p[4] = 1;
		put_cksum_at(&c, 0);
		ck_assert_int_eq(h5_ea_hdr_decode(&h, &fmt, EA_HDR, c.p, c.len), H5_ERR_FORMAT);
		tb_free(&c);
	}
	h5_ea_iblock_free(ib);
	h5_ea_sblock_free(sb);
	tb_free(&b);
}
END_TEST

/* ---- fixed array --------------------------------------------------------------- */

#define FA_HDR 0x20
#define FA_DB 0x80

enum { FA_OK = 0, FA_BAD_OWNER, FA_BAD_PAGE_CKSUM, FA_BAD_DB_CKSUM, FA_SHORT };

/* 10 filtered entries, 4 per page: pages of 4, 4 and 2; page 1 never initialized. */
static tbuf build_fa(int variant)
{
	tbuf b = { 0 };
	size_t at;

	tb_zero(&b, FA_HDR);
	at = b.len;
	tb_str(&b, "FAHD");
	tb_u8(&b, 0);
	tb_u8(&b, 1);
	tb_u8(&b, 14);
	tb_u8(&b, 2);
	tb_u64(&b, 10);
	tb_u64(&b, FA_DB);
	tb_checksum(&b, at);
	tb_zero(&b, FA_DB - b.len);
	at = b.len;
	tb_str(&b, "FADB");
	tb_u8(&b, 0);
	tb_u8(&b, 1);
	tb_u64(&b, variant == FA_BAD_OWNER ? FA_HDR + 2 : FA_HDR);
	tb_u8(&b, 0xA0); /* pages 0 and 2 */
	tb_checksum(&b, at);
	if (variant == FA_BAD_DB_CKSUM)
		b.p[at + 14] ^= 0x01;
	at = b.len;
	for (uint64_t i = 0; i < 4; i++)
		put_felmt(&b, i);
	tb_checksum(&b, at);
	tb_zero(&b, 4 * 14 + 4);
	at = b.len;
	for (uint64_t i = 8; i < 10; i++)
		if (i == 9) { /* never written */
			tb_u64(&b, UINT64_MAX);
			tb_zero(&b, 6);
		} else {
			put_felmt(&b, i);
		}
	if (variant == FA_SHORT) /* the file ends inside the last page */
		return b;
	tb_checksum(&b, at);
	if (variant == FA_BAD_PAGE_CKSUM)
		b.p[at] ^= 0x01;
	return b;
}

START_TEST(fa_paging_math)
{
	tbuf b = build_fa(FA_OK);
	h5_fmt fmt = { 8, 8 };
	h5_fa_hdr h;

	ck_assert_int_eq(h5_fa_hdr_decode(&h, &fmt, FA_HDR, b.p + FA_HDR, h5_fa_hdr_size(&fmt)), 0);
	ck_assert_uint_eq(h.nelmts, 10);
	ck_assert_uint_eq(h.page_nelmts, 4);
	ck_assert_uint_eq(h.npages, 3);
	ck_assert_uint_eq(h.page_init_size, 1);
	ck_assert_uint_eq(h5_fa_page_nelmts(&h, 0), 4);
	ck_assert_uint_eq(h5_fa_page_nelmts(&h, 2), 2);
	ck_assert_uint_eq(h5_fa_page_nelmts(&h, 3), 0);
	ck_assert_uint_eq(h5_fa_dblock_size(&h, &fmt), 6 + 8 + 1 + 4);
	ck_assert_uint_eq(h5_fa_page_addr(&h, &fmt, 0), FA_DB + 19);
	ck_assert_uint_eq(h5_fa_page_addr(&h, &fmt, 2), FA_DB + 19 + 2 * 60);
	ck_assert_uint_eq(h5_fa_page_addr(&h, &fmt, 3), H5_ADDR_UNDEF);
	ck_assert_uint_eq(h5_fa_dblock_alloc_size(&h, &fmt), 19 + 60 + 60 + 32);

	/* libhdf5 defaults: 1200 chunks, 10 page bits -> 2 pages, the last of 176 */
	h.nelmts = 1200;
	h.page_bits = 10;
	{
		uint8_t img[64];

		ck_assert_int_eq(h5_fa_hdr_encode(img, h5_fa_hdr_size(&fmt), &fmt, &h), 0);
		ck_assert_int_eq(h5_fa_hdr_decode(&h, &fmt, FA_HDR, img, h5_fa_hdr_size(&fmt)), 0);
		ck_assert_uint_eq(h.npages, 2);
		ck_assert_uint_eq(h5_fa_page_nelmts(&h, 1), 176);
		/* exactly one page's worth is not paged */
		h.nelmts = 1024;
		ck_assert_int_eq(h5_fa_hdr_encode(img, h5_fa_hdr_size(&fmt), &fmt, &h), 0);
		ck_assert_int_eq(h5_fa_hdr_decode(&h, &fmt, FA_HDR, img, h5_fa_hdr_size(&fmt)), 0);
		ck_assert_uint_eq(h.npages, 0);
		ck_assert_uint_eq(h5_fa_dblock_size(&h, &fmt), 6 + 8 + 1024 * 14 + 4);
		/* page bits 0 are refused, as libhdf5 does */
		h.page_bits = 0;
		ck_assert_int_eq(h5_fa_hdr_encode(img, h5_fa_hdr_size(&fmt), &fmt, &h), 0);
		ck_assert_int_eq(h5_fa_hdr_decode(&h, &fmt, FA_HDR, img, h5_fa_hdr_size(&fmt)), H5_ERR_FORMAT);
	}
	tb_free(&b);
}
END_TEST

START_TEST(fa_hand_built_lookup)
{
	tbuf b = build_fa(FA_OK);
	h5_file *f = fake_file(b.p, b.len);
	h5_chunk_rec r;
	struct visit_log v = { 0 };

	for (uint64_t i = 0; i < 10; i++) {
		ck_assert_int_eq(h5_fa_lookup(&r, f, FA_HDR, i), 0);
		if (i < 4 || i == 8) {
			ck_assert_uint_eq(r.addr, 0x1000 + i * 0x10);
			ck_assert_uint_eq(r.size, 100 + i);
			ck_assert_uint_eq(r.filter_mask, i & 1);
		} else {
			ck_assert_uint_eq(r.addr, H5_ADDR_UNDEF);
		}
	}
	ck_assert_int_eq(h5_fa_lookup(&r, f, FA_HDR, 10), H5_ERR_FORMAT);
	ck_assert_int_eq(h5_fa_iterate(f, FA_HDR, visit_cb, &v), 0);
	ck_assert_uint_eq(v.n, 5);
	ck_assert_uint_eq(v.idx[4], 8);
	h5_file_close(f);
	tb_free(&b);

	static const struct {
		int variant;
		uint64_t idx;
		int want;
	} cases[] = {
		{ FA_BAD_OWNER, 0, H5_ERR_FORMAT },
		{ FA_BAD_DB_CKSUM, 0, H5_ERR_CHECKSUM },
		{ FA_BAD_PAGE_CKSUM, 8, H5_ERR_CHECKSUM },
		{ FA_SHORT, 8, H5_ERR_FORMAT },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		b = build_fa(cases[i].variant);
		f = fake_file(b.p, b.len);
		memset(&v, 0, sizeof(v));
		ck_assert_int_eq(h5_fa_lookup(&r, f, FA_HDR, cases[i].idx), cases[i].want);
		ck_assert_int_eq(h5_fa_iterate(f, FA_HDR, visit_cb, &v), cases[i].want);
		h5_file_close(f);
		tb_free(&b);
	}
}
END_TEST

START_TEST(chunk_elmt_codec)
{
	h5_fmt fmt = { 4, 8 };
	uint8_t p[16];
	h5_chunk_rec in = { 0x12345678, 0x3abc, 5 }, out;

	ck_assert_int_eq(h5_chunk_elmt_check(&fmt, 0, 4), 0);
	ck_assert_int_eq(h5_chunk_elmt_check(&fmt, 0, 8), H5_ERR_FORMAT);
	ck_assert_int_eq(h5_chunk_elmt_check(&fmt, 1, 9), 0);
	ck_assert_int_eq(h5_chunk_elmt_check(&fmt, 1, 16), 0);
	ck_assert_int_eq(h5_chunk_elmt_check(&fmt, 1, 8), H5_ERR_FORMAT);
	ck_assert_int_eq(h5_chunk_elmt_check(&fmt, 1, 17), H5_ERR_FORMAT);
	ck_assert_int_eq(h5_chunk_elmt_check(&fmt, 3, 4), H5_ERR_FORMAT);
	h5_chunk_elmt_encode(p, &fmt, 1, 10, &in);
	ck_assert_uint_eq(p[4], 0xbc);
	ck_assert_uint_eq(p[5], 0x3a);
	h5_chunk_elmt_decode(&out, &fmt, 1, 10, p);
	ck_assert_uint_eq(out.addr, in.addr);
	ck_assert_uint_eq(out.size, in.size);
	ck_assert_uint_eq(out.filter_mask, 5);
	memset(p, 0xff, 4);
	h5_chunk_elmt_decode(&out, &fmt, 0, 4, p);
	ck_assert_uint_eq(out.addr, H5_ADDR_UNDEF);
	ck_assert_uint_eq(out.size, 0);
	/* libhdf5's chunk-size width: 1 + (log2(size) + 8) / 8 */
	ck_assert_uint_eq(h5_chunk_size_len(1), 2);
	ck_assert_uint_eq(h5_chunk_size_len(255), 2);
	ck_assert_uint_eq(h5_chunk_size_len(256), 3);
	ck_assert_uint_eq(h5_chunk_size_len(65536), 4);
	ck_assert_uint_eq(h5_chunk_size_len(UINT64_MAX), 8);
}
END_TEST

/* ---- end to end against files written by h5py -------------------------------- */

static const char gen_script[] =
	"import sys, os, itertools\n"
	"try:\n"
	"    import h5py, numpy as np\n"
	"except ImportError:\n"
	"    sys.exit(77)\n"
	"out = sys.argv[1]\n"
	"man = open(os.path.join(out, 'manifest.txt'), 'w')\n"
	"rng = np.random.default_rng(7)\n"
	"def rnd(shape, dt):\n"
	"    return (rng.integers(0, 100000, size=shape) % 251).astype(dt) if np.dtype(dt).kind in 'iu' else rng.random(shape).astype(dt)\n"
	"def record(fname, ds, coords=None):\n"
	"    addr = h5py.h5o.get_info(ds.id).addr\n"
	"    b = ds[()].tobytes()\n"
	"    bn = os.path.join(out, os.path.basename(fname) + '_' + ds.name.strip('/') + '.bin')\n"
	"    open(bn, 'wb').write(b)\n"
	"    if coords is None:\n"
	"        coords = itertools.product(*[range((s + c - 1) // c) for s, c in zip(ds.shape, ds.chunks)])\n"
	"    lines = []\n"
	"    for sc in coords:\n"
	"        si = ds.id.get_chunk_info_by_coord(tuple(s * c for s, c in zip(sc, ds.chunks)))\n"
	"        lines.append('C %s %d %d %d' % (' '.join(map(str, sc)), -1 if si.byte_offset is None else si.byte_offset,\n"
	"                     si.size, si.filter_mask if si.byte_offset is not None else 0))\n"
	"    alloc = sum(ds.id.get_chunk_info(i).size for i in range(ds.id.get_num_chunks()))\n"
	"    man.write('D %s %s %d %d %s %d %d %d\\n' % (fname, ds.name, addr, len(b), bn, len(ds.shape), len(lines), alloc))\n"
	"    man.write(''.join(l + '\\n' for l in lines))\n"
	"def mk(f, name, shape, chunks, dt, fill, maxshape=None, region=None, **kw):\n"
	"    d = f.create_dataset(name, shape, chunks=chunks, dtype=dt, fillvalue=fill, maxshape=maxshape, **kw)\n"
	"    if region is None:\n"
	"        d[...] = rnd(shape, dt)\n"
	"    else:\n"
	"        for r in region:\n"
	"            d[r] = rnd(d[r].shape, dt)\n"
	"    return d\n"
	"fn = os.path.join(out, 'latest.h5')\n"
	"with h5py.File(fn, 'w', libver='latest') as f:\n"
	"    ds = []\n"
	"    ds.append(mk(f, 'fa_paged', (40, 30), (1, 1), 'i2', -1, region=[np.s_[0:30, :], np.s_[39, 29]]))\n"
	"    ds.append(mk(f, 'fa_edge', (10, 7), (3, 4), 'i4', -1, region=[np.s_[0:5, :]]))\n"
	"    ds.append(mk(f, 'fa_maxbig', (10, 10), (3, 4), 'i4', -1, maxshape=(20, 12), region=[np.s_[2:9, 3:10]]))\n"
	"    ds.append(mk(f, 'fa_3d', (5, 6, 7), (2, 4, 3), 'u1', 9, region=[np.s_[0:3, 1:5, :], np.s_[4, 5, 6]]))\n"
	"    ds.append(mk(f, 'fa_gzip', (100, 50), (7, 9), 'f8', -1, region=[np.s_[0:60, :]], compression='gzip'))\n"
	"    ds.append(mk(f, 'fa_shuf', (100, 50), (7, 9), 'i4', -1, region=[np.s_[10:100, 5:45]], compression='gzip', shuffle=True))\n"
	"    ds.append(mk(f, 'fa_fletch', (33,), (5,), 'i4', -1, fletcher32=True))\n"
	"    ds.append(mk(f, 'ea_500', (500,), (1,), 'i4', -1, maxshape=(None,)))\n"
	"    ds.append(mk(f, 'ea_gzip', (2000,), (2,), 'i8', -1, maxshape=(None,), region=[np.s_[0:1500], np.s_[1600:2000]], compression='gzip', shuffle=True))\n"
	"    ds.append(mk(f, 'ea_swz', (6, 50), (4, 3), 'i2', -1, maxshape=(6, None), region=[np.s_[0:5, 0:40], np.s_[5, 49]]))\n"
	"    ds.append(mk(f, 'ea_dim0', (20, 7), (3, 3), 'i4', -1, maxshape=(None, 10), region=[np.s_[0:17, :]]))\n"
	"    ds.append(mk(f, 'bt2', (20, 30), (3, 4), 'i4', -1, maxshape=(None, None), region=[np.s_[0:11, 0:19], np.s_[19, 29]]))\n"
	"    ds.append(mk(f, 'bt2_gzip', (200, 100), (5, 5), 'i4', -1, maxshape=(None, None), region=[np.s_[0:150, :], np.s_[180:, 50:]], compression='gzip', shuffle=True))\n"
	"    ds.append(mk(f, 'single', (10, 12), (10, 12), 'i4', -1))\n"
	"    ds.append(mk(f, 'single_gzip', (10, 12), (10, 12), 'i4', -1, compression='gzip'))\n"
	"    ds.append(f.create_dataset('single_empty', (4, 4), chunks=(4, 4), dtype='i2', fillvalue=-3))\n"
	"    ds.append(f.create_dataset('fa_empty', (40, 4), chunks=(4, 4), dtype='i2', fillvalue=5))\n"
	"    for name, maxd in (('implicit', (10, 9)), ('implicit_max', (16, 13))):\n"
	"        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)\n"
	"        dcpl.set_chunk((4, 4))\n"
	"        dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)\n"
	"        dcpl.set_fill_value(np.array(-1, dtype='i4'))\n"
	"        h5py.h5d.create(f.id, name.encode(), h5py.h5t.STD_I32LE, h5py.h5s.create_simple((10, 9), maxd), dcpl=dcpl)\n"
	"        d = f[name]\n"
	"        d[1:6, 2:7] = rnd((5, 5), 'i4')\n"
	"        ds.append(d)\n"
	"    for d in ds:\n"
	"        record(fn, d, [] if d.name == '/ea_swz' else None)\n"
	"    d = f.create_dataset('ea_paged', (140000,), chunks=(1,), dtype='u1', fillvalue=7, maxshape=(None,))\n"
	"    for r in (np.s_[0:10], np.s_[131000:131100], np.s_[131060:131070], np.s_[133200:133210], np.s_[139999]):\n"
	"        d[r] = rnd(d[r].shape, 'u1')\n"
	"    sample = list(range(0, 30)) + list(range(130990, 131110)) + list(range(132070, 132100)) + list(range(133100, 133220)) + list(range(139980, 140000))\n"
	"    sample += [int(x) for x in rng.integers(0, 140000, size=200)]\n"
	"    record(fn, d, [(x,) for x in sample])\n"
	"fn = os.path.join(out, 'earliest.h5')\n"
	"with h5py.File(fn, 'w', libver='earliest') as f:\n"
	"    ds = []\n"
	"    ds.append(mk(f, 'bt1_big', (2000,), (1,), 'i2', -1, region=[np.s_[0:1000], np.s_[1100:2000]]))\n"
	"    ds.append(mk(f, 'bt1_2d', (50, 60), (2, 3), 'f4', -1, region=[np.s_[0:40, 0:50], np.s_[49, 59]]))\n"
	"    ds.append(mk(f, 'bt1_gzip', (50, 60), (4, 7), 'i4', -1, region=[np.s_[0:45, 3:60]], compression='gzip', shuffle=True, fletcher32=True))\n"
	"    ds.append(mk(f, 'bt1_3d', (7, 9, 11), (3, 4, 5), 'i2', -1, maxshape=(None, None, None), region=[np.s_[0:5, :, 2:9]]))\n"
	"    ds.append(mk(f, 'bt1_unlim', (300, 3), (2, 2), 'u2', 0, maxshape=(None, 3)))\n"
	"    for d in ds:\n"
	"        record(fn, d)\n"
	"man.close()\n";

typedef struct tds {
	char file[512], name[128], bin[512];
	uint64_t addr, nbytes, alloc;
	unsigned rank;
	size_t nrec;
	uint64_t (*scaled)[H5_MAX_RANK];
	int64_t *addrs;
	uint64_t *sizes;
	uint32_t *masks;
} tds;

static char *tmpdir_path;

static void cleanup_tmp(void)
{
	if (!tmpdir_path)
		return;
	test_tmp_remove(tmpdir_path);
	free(tmpdir_path);
	tmpdir_path = NULL;
}

/* The generator runs once, in the parent process (an unchecked fixture),
 * because Check forks every test. gen_state: 0 ok, 77 skip, -1 failed. */
static int gen_state = -1;

static void gen_setup(void)
{
	char tmpl[] = "/tmp/h5chunkXXXXXX";
	static int done;
	int st;

	/* once for both h5py cases (the single-threaded one may be left out
	 * by its tag: make_suite) */
	if (done)
		return;
	done = 1;
	st = test_py_run(tmpl, gen_script, NULL);

	if (tmpl[0])
		tmpdir_path = strdup(tmpl);
	if (st == TEST_PY_NO_PYTHON)
		gen_state = 77;
	else if (st == 0 || st == 77)
		gen_state = st;
}

static int generate(void)
{
	ck_assert_msg(gen_state >= 0, "the h5py generator failed");
	return gen_state;
}

static size_t load_manifest(tds **out)
{
	char path[600], line[1024];
	FILE *fp;
	tds *v = NULL;
	size_t n = 0;

	snprintf(path, sizeof(path), "%s/manifest.txt", tmpdir_path);
	fp = fopen(path, "r");
	ck_assert_ptr_nonnull(fp);
	while (fgets(line, sizeof(line), fp)) {
		tds *d;

		ck_assert(line[0] == 'D');
		v = realloc(v, (n + 1) * sizeof(*v));
		d = &v[n++];
		memset(d, 0, sizeof(*d));
		ck_assert_int_eq(sscanf(line, "D %511s %127s %llu %llu %511s %u %zu %llu", d->file, d->name,
					(unsigned long long *)&d->addr, (unsigned long long *)&d->nbytes, d->bin,
					&d->rank, &d->nrec, (unsigned long long *)&d->alloc),
				 8);
		d->scaled = calloc(d->nrec, sizeof(*d->scaled));
		d->addrs = calloc(d->nrec, sizeof(*d->addrs));
		d->sizes = calloc(d->nrec, sizeof(*d->sizes));
		d->masks = calloc(d->nrec, sizeof(*d->masks));
		for (size_t i = 0; i < d->nrec; i++) {
			char *p = line + 2, *e;

			ck_assert_ptr_nonnull(fgets(line, sizeof(line), fp));
			ck_assert(line[0] == 'C');
			for (unsigned k = 0; k < d->rank; k++, p = e)
				d->scaled[i][k] = strtoull(p, &e, 10);
			d->addrs[i] = strtoll(p, &e, 10);
			p = e;
			d->sizes[i] = strtoull(p, &e, 10);
			p = e;
			d->masks[i] = (uint32_t)strtoul(p, &e, 10);
		}
	}
	fclose(fp);
	*out = v;
	return n;
}

static void free_manifest(tds *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].scaled);
		free(v[i].addrs);
		free(v[i].sizes);
		free(v[i].masks);
	}
	free(v);
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	struct stat st;
	uint8_t *p;

	ck_assert_ptr_nonnull(fp);
	ck_assert_int_eq(fstat(fileno(fp), &st), 0);
	p = malloc(st.st_size ? (size_t)st.st_size : 1);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(fread(p, 1, (size_t)st.st_size, fp), (size_t)st.st_size);
	fclose(fp);
	*len = (size_t)st.st_size;
	return p;
}

/* h5_dataset_extents: a window that maps gives, read from FILE piece by
 * piece, exactly the dataset's bytes; filtered datasets never map (nor do
 * windows touching unwritten chunks, or the bytes would differ from the
 * fill value h5py wrote to want). Returns how many windows mapped. */
static size_t check_extents(const tds *t, h5_file *f, h5_dataset *d, const uint8_t *want, size_t blen,
			    unsigned *seed)
{
	int fd = h5_file_fd(f);
	size_t mapped = 0;
	uint8_t *buf = malloc(blen + 1);

	ck_assert_ptr_nonnull(buf);
	ck_assert_int_ge(fd, 0);
	for (int w = 0; w < 40 && blen > 0; w++) {
		size_t off = w == 0 ? 0 : (size_t)rand_r(seed) % blen;
		size_t len = w == 0 ? blen : (size_t)rand_r(seed) % (blen - off + 1), n = 0, got = 0;
		h5_extent ext[64];
		int rc;

		rc = h5_dataset_extents(ext, 64, &n, d, off, len);
		if (d->pline.n > 0 && len > 0) {
			ck_assert_msg(rc == H5_ERR_UNSUPPORTED, "%s: filtered window %zu+%zu mapped (%d)", t->name, off,
				      len, rc);
			continue;
		}
		if (rc != 0) {
			ck_assert_msg(rc == H5_ERR_UNSUPPORTED || rc == H5_ERR_LIMIT, "%s: extents %zu+%zu: %s",
				      t->name, off, len, h5_err_msg());
			continue;
		}
		ck_assert_uint_le(n, 64);
		for (size_t i = 0; i < n; i++) {
			ck_assert_uint_le(got + ext[i].len, len);
			ck_assert_int_eq(pread(fd, buf + got, (size_t)ext[i].len, (off_t)ext[i].file_off),
					 (ssize_t)ext[i].len);
			got += (size_t)ext[i].len;
		}
		ck_assert_msg(got == len, "%s: pieces of %zu+%zu cover %zu bytes", t->name, off, len, got);
		ck_assert_msg(memcmp(buf, want + off, len) == 0, "%s: mapped window %zu+%zu differs", t->name,
			      off, len);
		mapped++;
	}
	ck_assert_int_eq(h5_dataset_extents(NULL, 0, &(size_t){ 0 }, d, blen, 1), H5_ERR_INVAL);
	free(buf);
	return mapped;
}

/* h5_dataset_pin: a window of a filtered dataset whose chunks are all
 * written comes back as pieces of decoded chunks that tile it, equal to
 * the bytes; anything else is refused (UNSUPPORTED or LIMIT) holding
 * nothing. Returns how many windows were pinned. */
/* The pinned pieces of window [off, off+len), in order, are its bytes
 * of want and cover it exactly. */
static void check_pieces(const h5_pin *pin, const uint8_t *want, size_t off, size_t len, const char *name)
{
	size_t got = 0;

	ck_assert_uint_le(pin->niov, H5_PIN_MAX);
	for (size_t i = 0; i < pin->niov; i++) {
		ck_assert_uint_le(got + pin->iov[i].iov_len, len);
		ck_assert_msg(memcmp(pin->iov[i].iov_base, want + off + got, pin->iov[i].iov_len) == 0,
			      "%s: pinned window %zu+%zu differs in piece %zu", name, off, len, i);
		got += pin->iov[i].iov_len;
	}
	ck_assert_msg(got == len, "%s: pieces of %zu+%zu cover %zu bytes", name, off, len, got);
}

static size_t check_pins(const tds *t, h5_dataset *d, const uint8_t *want, size_t blen, unsigned *seed)
{
	size_t pinned = 0;

	for (int w = 0; w < 40 && blen > 0; w++) {
		size_t off = w == 0 ? 0 : (size_t)rand_r(seed) % blen;
		size_t len = w == 0 ? blen : (size_t)rand_r(seed) % (w < 20 ? 64 : blen - off + 1);
		h5_pin pin;
		int rc;

		if (len > blen - off)
			len = blen - off;
		rc = h5_dataset_pin(&pin, d, off, len);
		if (rc != 0) {
			ck_assert_msg(rc == H5_ERR_UNSUPPORTED || rc == H5_ERR_LIMIT, "%s: pin %zu+%zu: %s", t->name,
				      off, len, h5_err_msg());
			ck_assert_msg(pin.nheld == 0 && pin.niov == 0, "%s: a failed pin holds chunks", t->name);
			ck_assert_msg(d->pline.n > 0 || rc == H5_ERR_UNSUPPORTED, "%s: unfiltered pin: %d", t->name,
				      rc);
			continue;
		}
		ck_assert_msg(d->pline.n > 0, "%s: an unfiltered window was pinned", t->name);
		check_pieces(&pin, want, off, len, t->name);
		h5_pin_release(&pin);
		ck_assert_uint_eq(pin.nheld, 0);
		pinned++;
	}
	return pinned;
}

/* h5_dataset_chunks: every allocated chunk h5py reports (H5Dget_chunk_info
 * per coordinate) exactly once, with its file offset, stored size and
 * filter mask, and nothing else. ea_swz (no chunk list, see check_all):
 * each chunk walked is the one a lookup of its coordinates finds, and the
 * sizes add up to the allocated bytes. */
struct walk_ck {
	const tds *t;
	h5_dataset *d;
	unsigned char *seen;
	size_t n;
	uint64_t bytes;
};

static int walk_ck_cb(const h5_chunk_loc *c, void *ud)
{
	struct walk_ck *w = ud;
	const tds *t = w->t;
	size_t k;

	ck_assert_uint_eq(c->rank, t->rank);
	w->bytes += c->size;
	if (t->nrec == 0) {
		uint64_t scaled[H5_MAX_RANK];
		h5_chunk_rec r;

		for (unsigned i = 0; i < c->rank; i++)
			scaled[i] = c->offset[i] / w->d->layout.chunk[i];
		ck_assert_int_eq(h5_chunk_lookup(&r, w->d->cidx, scaled), 0);
		ck_assert_uint_eq(c->file_off, r.addr);
		ck_assert_uint_eq(c->size, r.size);
		ck_assert_uint_eq(c->filter_mask, r.filter_mask);
		w->n++;
		return 0;
	}
	for (k = 0; k < t->nrec; k++) {
		unsigned i;

		for (i = 0; i < t->rank && c->offset[i] == t->scaled[k][i] * w->d->layout.chunk[i]; i++)
			;
		if (i == t->rank)
			break;
	}
	ck_assert_msg(k < t->nrec && t->addrs[k] >= 0, "%s: walk gave a chunk h5py does not have", t->name);
	ck_assert_msg(!w->seen[k], "%s: chunk %zu walked twice", t->name, k);
	w->seen[k] = 1;
	w->n++;
	ck_assert_uint_eq(c->file_off, (uint64_t)t->addrs[k]);
	ck_assert_uint_eq(c->size, t->sizes[k]);
	ck_assert_uint_eq(c->filter_mask, t->masks[k]);
	return 0;
}

static void check_walk(const tds *t, h5_dataset *d)
{
	struct walk_ck w = { t, d, calloc(t->nrec + 1, 1), 0, 0 };
	size_t want = 0;

	ck_assert_ptr_nonnull(w.seen);
	ck_assert_msg(h5_dataset_chunks(d, walk_ck_cb, &w) == 0, "%s: %s", t->name, h5_err_msg());
	for (size_t k = 0; k < t->nrec; k++)
		want += t->addrs[k] >= 0;
	if (t->nrec)
		ck_assert_msg(w.n == want, "%s: walked %zu chunks, h5py has %zu", t->name, w.n, want);
	else
		ck_assert_msg(w.n > 0, "%s: no chunk walked", t->name);
	ck_assert_uint_eq(w.bytes, h5_dataset_allocated(d));
	free(w.seen);
}

/* Compare lookups, allocated bytes, whole reads and random windows of every
 * dataset. ea_swz (unlimited dimension not first) lists no chunks: HDF5
 * 1.10.8's H5Dget_chunk_info_by_coord linearises swizzled coordinates
 * differently from its own read path, so only its bytes are compared (they
 * are random per chunk, so a wrong mapping shows). */
static void check_all(unsigned nthreads)
{
	tds *v;
	size_t n;
	unsigned seed = 12345;

	if (generate() == 77) {
		fprintf(stderr, "test_chunk: h5py not available, end-to-end tests skipped\n");
		return;
	}
	n = load_manifest(&v);
	ck_assert_uint_ge(n, 20);
	for (size_t i = 0; i < n; i++) {
		tds *t = &v[i];
		h5_open_opts o = { .nthreads = nthreads };
		h5_file *f;
		h5_dataset *d;
		size_t blen;
		uint8_t *want = slurp(t->bin, &blen), *got;
		uint64_t a;

		ck_assert_msg(h5_file_open(&f, t->file, &o) == 0, "%s: %s", t->file, h5_err_msg());
		ck_assert_msg(h5_dataset_open(&d, f, t->addr) == 0, "%s: %s", t->name, h5_err_msg());
		ck_assert_uint_eq(blen, t->nbytes);
		ck_assert_uint_eq(h5_dataset_size(d), t->nbytes);
		for (size_t k = 0; k < t->nrec; k++) {
			h5_chunk_rec r;

			ck_assert_msg(h5_chunk_lookup(&r, d->cidx, t->scaled[k]) == 0, "%s: %s", t->name, h5_err_msg());
			if (t->addrs[k] < 0) {
				ck_assert_msg(r.addr == H5_ADDR_UNDEF, "%s chunk %zu: got 0x%llx, want unallocated",
					      t->name, k, (unsigned long long)r.addr);
				continue;
			}
			ck_assert_msg(r.addr == (uint64_t)t->addrs[k], "%s chunk %zu: addr 0x%llx want 0x%llx", t->name,
				      k, (unsigned long long)r.addr, (unsigned long long)t->addrs[k]);
			ck_assert_msg(r.size == t->sizes[k], "%s chunk %zu: size %llu want %llu", t->name, k,
				      (unsigned long long)r.size, (unsigned long long)t->sizes[k]);
			ck_assert_uint_eq(r.filter_mask, t->masks[k]);
		}
		ck_assert_int_eq(h5_chunk_allocated(&a, d->cidx), 0);
		ck_assert_msg(a == t->alloc, "%s: allocated %llu, want %llu", t->name, (unsigned long long)a,
			      (unsigned long long)t->alloc);
		ck_assert_uint_eq(h5_dataset_allocated(d), a);
		check_walk(t, d);
		got = malloc(blen + 1);
		ck_assert_ptr_nonnull(got);
		ck_assert_msg(h5_dataset_read(d, got, 0, blen) == 0, "%s: %s", t->name, h5_err_msg());
		ck_assert_msg(memcmp(got, want, blen) == 0, "%s: whole read differs", t->name);
		for (int w = 0; w < 60 && blen > 0; w++) {
			size_t off = (size_t)rand_r(&seed) % blen;
			size_t len = (size_t)rand_r(&seed) % (w < 30 ? 16 : blen - off + 1);

			if (len > blen - off)
				len = blen - off;
			memset(got, 0xEE, len + 1);
			ck_assert_msg(h5_dataset_read(d, got, off, len) == 0, "%s: %s", t->name, h5_err_msg());
			ck_assert_msg(memcmp(got, want + off, len) == 0, "%s: window %zu+%zu differs", t->name, off,
				      len);
			ck_assert_uint_eq(got[len], 0xEE); /* nothing written past the window */
		}
		ck_assert_int_eq(h5_dataset_read(d, got, blen, 1), H5_ERR_INVAL);
		/* sequential windows: with nthreads > 1 the reads after the first
		 * schedule the next chunk rows for the prefetch workers */
		for (size_t off = 0, step = blen / 13 + 1; off < blen; off += step) {
			size_t len = step < blen - off ? step : blen - off;

			ck_assert_msg(h5_dataset_read(d, got, off, len) == 0, "%s: %s", t->name, h5_err_msg());
			ck_assert_msg(memcmp(got, want + off, len) == 0, "%s: sequential %zu+%zu differs", t->name,
				      off, len);
		}
		{
			size_t mapped = check_extents(t, f, d, want, blen, &seed);

			/* one written, unfiltered chunk: every window maps */
			if (strcmp(t->name, "/single") == 0)
				ck_assert_msg(mapped == 40, "%s: %zu of 40 windows mapped", t->name, mapped);
		}
		{
			size_t pinned = check_pins(t, d, want, blen, &seed);

			/* filtered, every chunk written: every window pins */
			if (strcmp(t->name, "/single_gzip") == 0 || strcmp(t->name, "/fa_fletch") == 0)
				ck_assert_msg(pinned == 40, "%s: %zu of 40 windows pinned", t->name, pinned);
		}
		free(got);
		free(want);
		h5_dataset_close(d);
		h5_file_close(f);
	}
	free_manifest(v, n);
}

START_TEST(h5py_all_indexes_serial)
{
	check_all(1);
}
END_TEST

START_TEST(h5py_all_indexes_threaded)
{
	check_all(4);
}
END_TEST

static tds *find_ds(tds *v, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i].name, name) == 0)
			return &v[i];
	ck_abort_msg("dataset %s not generated", name);
	return NULL;
}

static int probe_load(void **obj, size_t *cost, void *ud)
{
	(void)obj;
	(void)cost;
	*(int *)ud = 1;
	return h5_err_set(H5_ERR_NOTFOUND, "probe: not cached");
}

/* How many of t's chunks are in f's cache (probing runs no decode). */
static size_t count_cached(h5_file *f, const tds *t)
{
	size_t cached = 0;

	for (size_t k = 0; k < t->nrec; k++) {
		h5_cache_ref ref;
		int called = 0;

		if (t->addrs[k] < 0)
			continue;
		if (h5_cache_get(&ref, f->chunks, H5_CK_CHUNK, (uint64_t)t->addrs[k], probe_load, NULL, &called) == 0) {
			h5_cache_release(f->chunks, &ref);
			cached++;
		}
	}
	return cached;
}

/* A one-element read decodes one chunk, not the dataset. */
START_TEST(h5py_small_read_decodes_one_chunk)
{
	tds *v, *t;
	size_t n;
	h5_file *f;
	h5_dataset *d;
	uint8_t e[4];

	if (generate() == 77)
		return;
	n = load_manifest(&v);
	t = find_ds(v, n, "/bt1_gzip");
	/* one thread: no prefetching either */
	ck_assert_int_eq(h5_file_open(&f, t->file, &(h5_open_opts){ .nthreads = 1 }), 0);
	ck_assert_int_eq(h5_dataset_open(&d, f, t->addr), 0);
	{
		/* metadata shares the cache (file.c): load the index nodes the
		 * read needs first, so what the read adds is the chunk alone */
		const uint64_t sc[2] = { 10 / 4, 20 / 7 };
		h5_chunk_rec r;
		size_t used0;

		ck_assert_int_eq(h5_chunk_lookup(&r, d->cidx, sc), 0);
		used0 = h5_cache_used(f->chunks);
		ck_assert_int_eq(h5_dataset_read(d, e, 4 * (60 * 10 + 20), 4), 0);
		ck_assert_uint_gt(h5_cache_used(f->chunks), used0);
		ck_assert_uint_le(h5_cache_used(f->chunks), used0 + d->chunk_bytes + 256);
	}
	/* unfiltered chunks are read in place and never cached */
	h5_dataset_close(d);
	t = find_ds(v, n, "/bt1_2d");
	ck_assert_int_eq(h5_dataset_open(&d, f, t->addr), 0);
	{
		uint8_t *all = malloc(t->nbytes);
		size_t probed = 0;

		ck_assert_int_eq(h5_dataset_read(d, all, 0, t->nbytes), 0);
		/* no chunk of it is in the cache: asking for one runs the loader */
		for (size_t k = 0; k < t->nrec; k++)
			probed += t->addrs[k] >= 0;
		ck_assert_uint_gt(probed, 0);
		ck_assert_uint_eq(count_cached(f, t), 0);
		free(all);
	}
	h5_dataset_close(d);
	h5_file_close(f);
	free_manifest(v, n);
}
END_TEST

/* Several FUSE-like threads reading filtered datasets at once, through a
 * cache small enough to evict constantly, each read itself parallel. */
struct conc_ds {
	h5_dataset *d;
	uint8_t *want;
	size_t len;
};

struct conc_arg {
	struct conc_ds *ds;
	unsigned nds, seed;
	int bad;
	char msg[256];
};

static void *conc_reader(void *p)
{
	struct conc_arg *a = p;
	uint8_t *got = malloc(1 << 20);

	for (int i = 0; i < 200 && got && !a->bad; i++) {
		struct conc_ds *c = &a->ds[rand_r(&a->seed) % a->nds];
		size_t off = (size_t)rand_r(&a->seed) % c->len;
		size_t len = (size_t)rand_r(&a->seed) % (c->len - off + 1);

		if (h5_dataset_read(c->d, got, off, len) != 0) {
			snprintf(a->msg, sizeof(a->msg), "read failed: %s", h5_err_msg());
			a->bad = 1;
		} else if (memcmp(got, c->want + off, len) != 0) {
			snprintf(a->msg, sizeof(a->msg), "window %zu+%zu differs", off, len);
			a->bad = 1;
		}
	}
	free(got);
	return NULL;
}

START_TEST(h5py_concurrent_readers)
{
	static const char *names[] = { "/fa_gzip", "/ea_gzip", "/bt2_gzip", "/bt1_gzip", "/fa_shuf", "/bt1_2d" };
	struct conc_ds ds[6];
	struct conc_arg args[4];
	pthread_t tid[4];
	h5_open_opts o = { .nthreads = 3, .cache_bytes = 64 << 10 };
	tds *v;
	size_t n;
	h5_file *f[2] = { NULL, NULL };

	if (generate() == 77)
		return;
	n = load_manifest(&v);
	for (unsigned i = 0; i < 6; i++) {
		tds *t = find_ds(v, n, names[i]);
		unsigned k = strstr(t->file, "earliest") != NULL;

		if (!f[k])
			ck_assert_int_eq(h5_file_open(&f[k], t->file, &o), 0);
		ck_assert_int_eq(h5_dataset_open(&ds[i].d, f[k], t->addr), 0);
		ds[i].want = slurp(t->bin, &ds[i].len);
	}
	for (unsigned i = 0; i < 4; i++) {
		args[i] = (struct conc_arg){ .ds = ds, .nds = 6, .seed = 1000 + i };
		ck_assert_int_eq(pthread_create(&tid[i], NULL, conc_reader, &args[i]), 0);
	}
	for (unsigned i = 0; i < 4; i++) {
		pthread_join(tid[i], NULL);
		ck_assert_msg(!args[i].bad, "reader %u: %s", i, args[i].msg);
	}
	for (unsigned i = 0; i < 6; i++) {
		h5_dataset_close(ds[i].d);
		free(ds[i].want);
	}
	h5_file_close(f[0]);
	h5_file_close(f[1]);
	free_manifest(v, n);
}
END_TEST

/* Corrupting one chunk of a compressed dataset fails reads of that chunk
 * only, with an error instead of wrong bytes. */
START_TEST(h5py_corrupt_chunk)
{
	tds *v, *t;
	size_t n, flen, k;
	uint8_t *img, *buf;
	h5_file *f;
	h5_dataset *d;

	if (generate() == 77)
		return;
	n = load_manifest(&v);
	t = find_ds(v, n, "/fa_gzip");
	img = slurp(t->file, &flen);
	for (k = 0; k < t->nrec && t->addrs[k] < 0; k++)
		;
	ck_assert_uint_lt(k, t->nrec);
	/* chunk (0,0): scramble its deflate stream */
	memset(img + t->addrs[k] + 2, 0x55, (size_t)t->sizes[k] - 4);
	ck_assert_int_eq(h5_file_open_mem(&f, img, flen, NULL), 0);
	ck_assert_int_eq(h5_dataset_open(&d, f, t->addr), 0);
	buf = malloc(t->nbytes);
	ck_assert_int_lt(h5_dataset_read(d, buf, 0, 8), 0);
	ck_assert_int_lt(h5_dataset_read(d, buf, 0, t->nbytes), 0);
	/* a chunk elsewhere (row 50, column 40) still reads */
	ck_assert_int_eq(h5_dataset_read(d, buf, 8 * (50 * 50 + 40), 8), 0);
	{
		h5_pin pin;

		/* pinning reports the damage itself, holding nothing */
		ck_assert_int_eq(h5_dataset_pin(&pin, d, 0, 8), H5_ERR_FORMAT);
		ck_assert_uint_eq(pin.nheld, 0);
	}
	free(buf);
	h5_dataset_close(d);
	h5_file_close(f);
	free(img);
	free_manifest(v, n);
}
END_TEST

/* Drop-behind: a sequential stream leaves at most drop_keep decoded chunks
 * behind it in the cache (the kernel keeps those bytes); scattered reads
 * keep what they decoded. */
START_TEST(h5py_stream_drops_behind)
{
	tds *v, *t;
	size_t n, blen, win = 1000;
	h5_file *f;
	h5_dataset *d;
	uint8_t *want, *buf;

	if (generate() == 77)
		return;
	n = load_manifest(&v);
	t = find_ds(v, n, "/bt2_gzip");         /* 40 x 20 chunks of 100 bytes */
	want = slurp(t->bin, &blen);
	buf = malloc(blen);
	ck_assert_int_eq(h5_file_open(&f, t->file, &(h5_open_opts){ .nthreads = 1 }), 0);
	ck_assert_int_eq(h5_dataset_open(&d, f, t->addr), 0);
	ck_assert_uint_lt(d->cidx->drop_keep, t->nrec);
	for (size_t off = 0; off < blen; off += win) {
		size_t len = win < blen - off ? win : blen - off;

		ck_assert_int_eq(h5_dataset_read(d, buf + off, off, len), 0);
	}
	ck_assert_int_eq(memcmp(buf, want, blen), 0);
	ck_assert_uint_le(count_cached(f, t), d->cidx->drop_keep);
	ck_assert_uint_gt(count_cached(f, t), 0);
	/* backwards, window by window: never a stream, everything stays */
	for (size_t off = blen; off > 0;) {
		size_t len = off % win ? off % win : win;

		off -= len;
		ck_assert_int_eq(h5_dataset_read(d, buf + off, off, len), 0);
	}
	ck_assert_int_eq(memcmp(buf, want, blen), 0);
	{
		size_t allocated = 0;

		for (size_t k = 0; k < t->nrec; k++)
			allocated += t->addrs[k] >= 0;
		ck_assert_uint_eq(count_cached(f, t), allocated);
	}
	free(buf);
	free(want);
	h5_dataset_close(d);
	h5_file_close(f);
	free_manifest(v, n);
}
END_TEST

/* Pinned chunks stay valid while other reads push everything else out of a
 * cache far smaller than the dataset, and are cached again after release. */
START_TEST(h5py_pin_survives_eviction)
{
	tds *v, *t;
	size_t n, blen;
	h5_file *f;
	h5_dataset *d;
	h5_pin pin;
	uint8_t *want, *buf;

	if (generate() == 77)
		return;
	n = load_manifest(&v);
	t = find_ds(v, n, "/bt2_gzip");
	want = slurp(t->bin, &blen);
	ck_assert_int_eq(h5_file_open(&f, t->file, &(h5_open_opts){ .nthreads = 2, .cache_bytes = 4096 }), 0);
	ck_assert_int_eq(h5_dataset_open(&d, f, t->addr), 0);
	/* row 3, columns 10..14: inside chunk (0, 2) */
	ck_assert_int_eq(h5_dataset_pin(&pin, d, 4 * (3 * 100 + 10), 20), 0);
	ck_assert_uint_eq(pin.niov, 1);
	buf = malloc(blen);
	ck_assert_int_eq(h5_dataset_read(d, buf, 0, blen), 0);
	ck_assert_int_eq(memcmp(buf, want, blen), 0);
	ck_assert_int_eq(memcmp(pin.iov[0].iov_base, want + 4 * (3 * 100 + 10), 20), 0);
	h5_pin_release(&pin);
	ck_assert_int_eq(h5_dataset_read(d, buf, 0, blen), 0);
	ck_assert_int_eq(memcmp(buf, want, blen), 0);
	free(buf);
	free(want);
	h5_dataset_close(d);
	h5_file_close(f);
	free_manifest(v, n);
}
END_TEST

/* The memory source (source_mem.c) plus pin/unpin, as the remote
 * sources offer them (they have no descriptor either), counting its live
 * holds. One at a time: the test is single-threaded. */
static const uint8_t *pin_img;
static int pin_live;
static h5_source_ops pin_src_ops;

/* Two pieces a range (its halves), so pieces from several holds merge
 * into one iovec list in the right order. */
static int pin_src_pin(h5_source *s, uint64_t off, size_t len, struct iovec *iov, size_t max, size_t *n,
		       void **hold)
{
	*n = 0;
	*hold = NULL;
	if (off > s->size || len > s->size - off)
		return h5_err_set(H5_ERR_FORMAT, "unexpected end of file");
	if (max < 2)
		return h5_err_set(H5_ERR_LIMIT, "no room");
	iov[0].iov_base = (void *)(uintptr_t)(pin_img + off);
	iov[0].iov_len = len / 2;
	iov[1].iov_base = (void *)(uintptr_t)(pin_img + off + len / 2);
	iov[1].iov_len = len - len / 2;
	*n = 2;
	*hold = &pin_live;
	pin_live++;
	return 0;
}

static void pin_src_unpin(h5_source *s, void *hold)
{
	(void)s;
	(*(int *)hold)--;
}

static h5_source *pin_src_open(const uint8_t *img, size_t len)
{
	h5_source *s;

	ck_assert_int_eq(h5_source_open_mem(&s, img, len), 0);
	pin_src_ops = *s->ops;
	pin_src_ops.name = "pin-test";
	pin_src_ops.pin = pin_src_pin;
	pin_src_ops.unpin = pin_src_unpin;
	s->ops = &pin_src_ops;
	pin_img = img;
	pin_live = 0;
	return s;
}

/* h5_dataset_pin of a FILE without a descriptor: contiguous and
 * unfiltered chunked windows come back as pieces of the source's memory
 * equal to the bytes, every hold released with the pin; filtered ones
 * still pin decoded chunks; nothing is held after a refusal. */
START_TEST(h5py_pin_from_source)
{
	tds *v;
	size_t n, pinned_plain = 0;
	unsigned seed = 151;

	if (generate() == 77)
		return;
	n = load_manifest(&v);
	for (size_t i = 0; i < n; i++) {
		tds *t = &v[i];
		size_t flen, blen;
		uint8_t *img = slurp(t->file, &flen), *want = slurp(t->bin, &blen);
		h5_file *f;
		h5_dataset *d;

		ck_assert_int_eq(h5_file_open_source(&f, pin_src_open(img, flen), t->file, NULL), 0);
		ck_assert_msg(h5_dataset_open(&d, f, t->addr) == 0, "%s: %s", t->name, h5_err_msg());
		for (int w = 0; w < 30 && blen > 0; w++) {
			size_t off = w == 0 ? 0 : (size_t)rand_r(&seed) % blen;
			size_t len = w == 0 ? blen : (size_t)rand_r(&seed) % (w < 15 ? 64 : blen - off + 1);
			h5_pin pin;
			int rc;

			if (len > blen - off)
				len = blen - off;
			rc = h5_dataset_pin(&pin, d, off, len);
			if (rc != 0) {
				ck_assert_msg(rc == H5_ERR_UNSUPPORTED || rc == H5_ERR_LIMIT, "%s: pin %zu+%zu: %s",
					      t->name, off, len, h5_err_msg());
				ck_assert_msg(pin.nheld == 0 && pin.nsrc_held == 0 && pin.niov == 0 && pin_live == 0,
					      "%s: a failed pin holds something", t->name);
				continue;
			}
			ck_assert_msg(d->pline.n > 0 || (size_t)pin_live == pin.nsrc_held, "%s: holds", t->name);
			check_pieces(&pin, want, off, len, t->name);
			h5_pin_release(&pin);
			ck_assert_int_eq(pin_live, 0);
			pinned_plain += d->pline.n == 0 && len > 0;
		}
		h5_dataset_close(d);
		h5_file_close(f);
		free(img);
		free(want);
	}
	/* the manifest has unfiltered datasets of several index types */
	ck_assert_uint_gt(pinned_plain, 20);
	free_manifest(v, n);
}
END_TEST

/* The memory source plus ranges_hint, recording what a stream hints
 * (chunk_stream.c's remote read-ahead). */
#define RA_REC_MAX 4096
static struct { uint64_t off, len; bool restart; } ra_rec[RA_REC_MAX];
static size_t ra_nrec;
static h5_source_ops ra_src_ops;

static void ra_src_hint(h5_source *s, const h5_range *r, size_t n, bool restart)
{
	(void)s;
	for (size_t i = 0; i < n || (restart && i == 0); i++) {
		ck_assert_uint_lt(ra_nrec, RA_REC_MAX);
		ra_rec[ra_nrec].off = i < n ? r[i].off : 0;
		ra_rec[ra_nrec].len = i < n ? r[i].len : 0;
		ra_rec[ra_nrec++].restart = restart && i == 0;
	}
}

static h5_source *ra_src_open(const uint8_t *img, size_t len)
{
	h5_source *s;

	ck_assert_int_eq(h5_source_open_mem(&s, img, len), 0);
	ra_src_ops = *s->ops;
	ra_src_ops.name = "ra-test";
	ra_src_ops.ranges_hint = ra_src_hint;
	s->ops = &ra_src_ops;
	ra_nrec = 0;
	return s;
}

/* A sequential pass over a filtered chunked dataset of a source with
 * ranges_hint hints every allocated chunk once, in row-major order (the
 * order a C-order stream needs them), starting with one restart; a jump
 * back within the largest window does not restart (reads come out of
 * order), one further back restarts at the chunk row jumped to. */
START_TEST(h5py_stream_hints_chunks)
{
	tds *v;
	size_t n, checked = 0;

	if (generate() == 77)
		return;
	n = load_manifest(&v);
	for (size_t i = 0; i < n; i++) {
		tds *t = &v[i];
		size_t flen, blen, step = 4096, k = 0;
		uint8_t *img = slurp(t->file, &flen), *want = slurp(t->bin, &blen), *buf;
		uint64_t total = 1, scaled[H5_MAX_RANK], rowspan;
		h5_chunk_index *ci;
		h5_file *f;
		h5_dataset *d;

		ck_assert_int_eq(h5_file_open_source(&f, ra_src_open(img, flen), t->file, NULL), 0);
		ck_assert_msg(h5_dataset_open(&d, f, t->addr) == 0, "%s: %s", t->name, h5_err_msg());
		ci = d->cidx;
		if (!ci || !ci->filtered || blen < 2 * step) {
			h5_dataset_close(d);
			h5_file_close(f);
			free(img);
			free(want);
			continue;
		}
		buf = malloc(step);
		for (size_t off = 0; off < blen; off += step) {
			size_t len = blen - off < step ? blen - off : step;

			ck_assert_int_eq(h5_dataset_read(d, buf, off, len), 0);
			ck_assert_mem_eq(buf, want + off, len);
		}
		/* what was hinted: every allocated chunk, in row-major order */
		for (unsigned r = 0; r < ci->rank; r++)
			total *= ci->nchunks[r];
		ck_assert_msg(ra_nrec > 0 && ra_rec[0].restart, "%s: no hint, or the first not a restart", t->name);
		for (uint64_t c = 0; c < total; c++) {
			uint64_t rest = c;
			h5_chunk_rec rec;

			for (unsigned r = ci->rank; r-- > 0;) {
				scaled[r] = rest % ci->nchunks[r];
				rest /= ci->nchunks[r];
			}
			ck_assert_int_eq(h5_chunk_lookup(&rec, ci, scaled), 0);
			if (!h5_addr_defined(rec.addr))
				continue;
			while (k < ra_nrec && ra_rec[k].len == 0)
				k++;
			ck_assert_msg(k < ra_nrec, "%s: chunk %llu not hinted", t->name, (unsigned long long)c);
			ck_assert_msg(ra_rec[k].off == f->base + rec.addr && ra_rec[k].len == rec.size,
				      "%s: hint %zu is not chunk %llu", t->name, k, (unsigned long long)c);
			ck_assert_msg(k == 0 || !ra_rec[k].restart, "%s: a restart in a sequential pass", t->name);
			k++;
		}
		ck_assert_msg(k == ra_nrec, "%s: %zu hints for fewer chunks", t->name, ra_nrec);
		/* a jump back to the middle restarts there */
		rowspan = (uint64_t)ci->esize * ci->chunk[0];
		for (unsigned r = 1; r < ci->rank; r++)
			rowspan *= ci->dims[r];
		if (ci->nchunks[0] >= 4 && rowspan >= 4) {
			uint64_t at = ci->nchunks[0] / 2 * rowspan;
			h5_chunk_rec rec;

			step = rowspan / 4 < 4096 ? rowspan / 4 : 4096; /* two reads inside the row */

			memset(scaled, 0, sizeof(scaled));
			scaled[0] = ci->nchunks[0] / 2;
			ck_assert_int_eq(h5_chunk_lookup(&rec, ci, scaled), 0);
			ra_nrec = 0;
			for (uint64_t off = at; off < at + 2 * step && off < blen; off += step)
				ck_assert_int_eq(h5_dataset_read(d, buf, off, blen - off < step ? blen - off : step), 0);
			/* back by more than the largest window (64 MiB of decoded
			 * chunks, chunk_stream.c RA_MAX) restarts there; less is a
			 * read out of order (FUSE threads serve the kernel's
			 * readahead in any order), hinted moments ago: no restart.
			 * Forward jumps: test_remote_chunked.py (16 MiB in, 48 MiB on) */
			if (blen - at > ((uint64_t)64 << 20) + 2 * rowspan) {
				ck_assert_msg(ra_nrec > 0 && ra_rec[0].restart, "%s: the jump did not restart", t->name);
				if (h5_addr_defined(rec.addr))
					ck_assert_msg(ra_rec[0].off == f->base + rec.addr,
						      "%s: the restart is not at the jump", t->name);
			} else {
				for (size_t j = 0; j < ra_nrec; j++)
					ck_assert_msg(!ra_rec[j].restart, "%s: a read back within the window restarted",
						      t->name);
			}
		}
		checked++;
		free(buf);
		h5_dataset_close(d);
		h5_file_close(f);
		free(img);
		free(want);
	}
	ck_assert_uint_gt(checked, 0);
	free_manifest(v, n);
}
END_TEST

/* The chunk index tables: every index type has its entry in cidx.c's, with
 * a name, open, lookup and allocated, and in the writers' (cidx_write.c)
 * its append write operations (an index whose chunks have fixed places
 * needs no layout field). */
START_TEST(cidx_table_complete)
{
	static const struct { unsigned type; const char *name; bool writes; } want[] = {
		{ H5_CIDX_BTREE1, "btree1", true }, { H5_CIDX_SINGLE, "single", true },
		{ H5_CIDX_IMPLICIT, "implicit", true }, { H5_CIDX_FARRAY, "farray", true },
		{ H5_CIDX_EARRAY, "earray", true }, { H5_CIDX_BTREE2, "btree2", true },
	};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const h5_cidx_ops *o = h5_cidx_ops_of(want[i].type);
		const h5_cidx_write_ops *w = h5_cidx_write_ops_of(want[i].type);

		ck_assert_ptr_nonnull(o);
		ck_assert_uint_eq(o->type, want[i].type);
		ck_assert_str_eq(o->name, want[i].name);
		ck_assert_str_eq(h5_layout_index_name(want[i].type), want[i].name);
		ck_assert_ptr_nonnull(o->open);
		ck_assert_ptr_nonnull(o->lookup);
		ck_assert_ptr_nonnull(o->allocated);
		ck_assert_int_eq(w != NULL, want[i].writes);
		if (w) {
			ck_assert_ptr_nonnull(w->open);
			ck_assert_ptr_nonnull(w->set);
			ck_assert_ptr_nonnull(w->write);
			ck_assert_ptr_nonnull(w->addr);
			ck_assert_ptr_nonnull(w->addr_is_new);
			ck_assert(w->addr_field != NULL || w->place != NULL);
			ck_assert_ptr_nonnull(w->commit);
			ck_assert_ptr_nonnull(w->invalidate);
			ck_assert_ptr_nonnull(w->free);
		}
	}
	ck_assert_ptr_null(h5_cidx_ops_of(99));
	ck_assert_ptr_null(h5_cidx_write_ops_of(99));
	ck_assert_str_eq(h5_layout_index_name(99), "unknown");
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("chunk");
	TCase *tc = tcase_create("arrays");
	TCase *te = tcase_create("h5py");
	TCase *ts = tcase_create("h5py_serial");

	tcase_add_test(tc, cidx_table_complete);
	tcase_add_test(tc, ea_geom_reference_table);
	tcase_add_test(tc, ea_geom_rejects_bad_params);
	tcase_add_test(tc, ea_locate_indices);
	tcase_add_test(tc, ea_hand_built_lookup);
	tcase_add_test(tc, ea_hand_built_iterate);
	tcase_add_test(tc, ea_hand_built_corrupt);
	tcase_add_test(tc, ea_decoders_truncated_and_encode_roundtrip);
	tcase_add_test(tc, fa_paging_math);
	tcase_add_test(tc, fa_hand_built_lookup);
	tcase_add_test(tc, chunk_elmt_codec);
	suite_add_tcase(s, tc);
	/* The case that starts no thread (nthreads 1), tagged so that the
	 * TSan make check leaves it out (run-sanitizers.sh CK_EXCLUDE_TAGS:
	 * TSan finds nothing without a second thread; ASan's and the plain
	 * make check run it). Before "h5py", whose teardown removes the
	 * files both read. */
	tcase_set_tags(ts, "nothreads");
	tcase_set_timeout(ts, 300);
	tcase_add_unchecked_fixture(ts, gen_setup, NULL);
	tcase_add_test(ts, h5py_all_indexes_serial);
	suite_add_tcase(s, ts);
	tcase_set_timeout(te, 300);
	tcase_add_unchecked_fixture(te, gen_setup, cleanup_tmp);
	tcase_add_test(te, h5py_pin_survives_eviction);
	tcase_add_test(te, h5py_pin_from_source);
	tcase_add_test(te, h5py_stream_drops_behind);
	tcase_add_test(te, h5py_stream_hints_chunks);
	tcase_add_test(te, h5py_all_indexes_threaded);
	tcase_add_test(te, h5py_small_read_decodes_one_chunk);
	tcase_add_test(te, h5py_corrupt_chunk);
	tcase_add_test(te, h5py_concurrent_readers);
	suite_add_tcase(s, te);
	return s;
}

H5_TEST_MAIN(make_suite)
