/* test_fheap.c - fractal heaps (fheap.c): hand-built heaps (root direct
 * block, root indirect block with a nested indirect block, tiny and huge
 * objects) and their hostile variants, and the heaps libhdf5 writes for
 * dense groups and dense attributes in files made by h5py at test time. */
#include "testutil.h"

#include <inttypes.h>
#include <sys/wait.h>
#include <unistd.h>

#define HEAPFIX_PREFIX "/tmp/h5fs-fh-"
#include "heap_fixtures.h"
#include "base.h"
#include "rd.h"
#include "checksum.h"
#include "file.h"
#include "fheap.h"
#include "btree2.h"


/* ---- B-tree record collection -------------------------------------------- */

typedef struct recs_t {
	uint8_t *p;
	size_t n, cap, size;
} recs_t;

static int collect_cb(const uint8_t *rec, size_t len, void *ud)
{
	recs_t *r = ud;

	if (r->size == 0)
		r->size = len;
	ck_assert_uint_eq(len, r->size);
	if (r->n == r->cap) {
		r->cap = r->cap * 2 + 64;
		r->p = realloc(r->p, r->cap * r->size);
		ck_assert_ptr_nonnull(r->p);
	}
	memcpy(r->p + r->n * r->size, rec, len);
	r->n++;
	return 0;
}

/* ---- hand-built heaps ----------------------------------------------------
 * Width 4, 64-byte starting blocks, 128-byte largest direct blocks, a
 * 16-bit heap address space (2-byte offsets) and 100-byte managed objects
 * (1-byte lengths): managed IDs are 1+2+1 = 4 bytes. Checksummed direct
 * blocks have a 4+1+8+2+4 = 19-byte prefix. Rows 0 and 1 hold 64-byte
 * blocks at heap offsets 0 and 256, row 2 128-byte blocks at 512, row 3 is
 * the first row of indirect blocks (256 bytes each, at 1024), each with a
 * single row of four 64-byte direct blocks. */

#define HP_ADDR 16              /* heap header address in every image */
#define HP_HDR_SIZE 146
#define HP_PREFIX 19

typedef struct hp_params {
	uint16_t id_len;
	uint8_t flags;
	uint32_t max_man;
	uint64_t huge_bt2;
	uint64_t man_size;
	uint16_t width;
	uint64_t start, max_direct;
	uint16_t bits;
	uint64_t root;
	uint16_t root_rows;
} hp_params;

static hp_params hp_default(void)
{
	hp_params p = { .id_len = 4, .flags = 0x02, .max_man = 100, .huge_bt2 = H5_ADDR_UNDEF, .man_size = 2048,
			.width = 4, .start = 64, .max_direct = 128, .bits = 16, .root = H5_ADDR_UNDEF, .root_rows = 0 };
	return p;
}

/* Write the FRHP header at HP_ADDR (space reserved by hp_begin). */
static void hp_put_hdr(tbuf *b, const hp_params *p)
{
	tbuf h = { 0 };

	tb_str(&h, "FRHP");
	tb_u8(&h, 0);
	tb_u16(&h, p->id_len);
	tb_u16(&h, 0);
	tb_u8(&h, p->flags);
	tb_u32(&h, p->max_man);
	tb_u64(&h, 3);                  /* next huge ID */
	tb_u64(&h, p->huge_bt2);
	tb_u64(&h, 0);                  /* free space */
	tb_u64(&h, H5_ADDR_UNDEF);      /* free-space manager */
	tb_u64(&h, p->man_size);
	tb_u64(&h, p->man_size);
	tb_u64(&h, 0);
	tb_u64(&h, 4);                  /* managed objects */
	tb_u64(&h, 0);
	tb_u64(&h, 2);
	tb_u64(&h, 0);
	tb_u64(&h, 0);
	tb_u16(&h, p->width);
	tb_u64(&h, p->start);
	tb_u64(&h, p->max_direct);
	tb_u16(&h, p->bits);
	tb_u16(&h, 1);
	tb_u64(&h, p->root);
	tb_u16(&h, p->root_rows);
	tb_checksum(&h, 0);
	ck_assert_uint_eq(h.len, HP_HDR_SIZE);
	memcpy(b->p + HP_ADDR, h.p, h.len);
	tb_free(&h);
}

static void hp_begin(tbuf *b)
{
	memset(b, 0, sizeof(*b));
	tb_zero(b, HP_ADDR + HP_HDR_SIZE);
}

static uint64_t hp_put_dblock(tbuf *b, uint64_t block_off, size_t size)
{
	uint64_t addr = b->len;

	tb_str(b, "FHDB");
	tb_u8(b, 0);
	tb_u64(b, HP_ADDR);
	tb_u16(b, (uint16_t)block_off);
	tb_u32(b, 0);
	tb_zero(b, size - HP_PREFIX);
	return addr;
}

static void hp_put_obj(tbuf *b, uint64_t dblock, size_t blk_off, const void *data, size_t len)
{
	memcpy(b->p + dblock + blk_off, data, len);
}

/* Checksum of a direct block: the whole block with its checksum field zeroed. */
static void hp_seal(uint8_t *img, uint64_t dblock, size_t size)
{
	memset(img + dblock + 15, 0, 4);
	h5_le_encode(img + dblock + 15, h5_checksum_metadata(img + dblock, size), 4);
}

static uint64_t hp_put_iblock(tbuf *b, uint64_t block_off, const uint64_t *ents, size_t n)
{
	uint64_t addr = b->len;

	tb_str(b, "FHIB");
	tb_u8(b, 0);
	tb_u64(b, HP_ADDR);
	tb_u16(b, (uint16_t)block_off);
	for (size_t i = 0; i < n; i++)
		tb_u64(b, ents[i]);
	tb_checksum(b, addr);
	return addr;
}

static void refix(uint8_t *img, uint64_t addr, size_t len)
{
	h5_le_encode(img + addr + len - 4, h5_checksum_metadata(img + addr, len - 4), 4);
}

static void mid(uint8_t *id, uint64_t off, uint64_t len)
{
	id[0] = 0x00;
	h5_le_encode(id + 1, off, 2);
	id[3] = (uint8_t)len;
}

/* Read an object, expecting success and the given bytes. */
static void expect_obj(h5_fheap *h, const uint8_t *id, size_t id_len, const void *want, size_t want_len)
{
	uint8_t *obj = NULL;
	size_t len = 0;
	int rc = h5_fheap_read(&obj, &len, h, id, id_len);

	ck_assert_msg(rc == 0, "read failed: %d %s", rc, h5_err_msg());
	ck_assert_uint_eq(len, want_len);
	ck_assert_mem_eq(obj, want, want_len);
	free(obj);
}

static int read_rc(h5_fheap *h, const uint8_t *id, size_t id_len)
{
	uint8_t *obj = NULL;
	size_t len = 0;
	int rc = h5_fheap_read(&obj, &len, h, id, id_len);

	if (rc == 0)
		free(obj);
	else
		ck_assert_ptr_null(obj);
	return rc;
}

START_TEST(t_hand_root_direct)
{
	tbuf b;
	hp_params p = hp_default();
	uint64_t d;
	uint8_t id[4];
	h5_file *f;
	h5_fheap *h;

	hp_begin(&b);
	d = hp_put_dblock(&b, 0, 64);
	hp_put_obj(&b, d, HP_PREFIX, "hello", 5);
	hp_put_obj(&b, d, 59, "12345", 5);
	hp_seal(b.p, d, 64);
	p.root = d;
	p.man_size = 64;
	hp_put_hdr(&b, &p);
	f = mem_file(b.p, b.len);
	ck_assert_int_eq(h5_fheap_open(&h, f, HP_ADDR), 0);
	ck_assert_uint_eq(h5_fheap_id_len(h), 4);
	mid(id, HP_PREFIX, 5);
	expect_obj(h, id, 4, "hello", 5);
	mid(id, 59, 5);     /* ends exactly at the block's end */
	expect_obj(h, id, 4, "12345", 5);
	/* managed IDs that cannot be right */
	mid(id, 0, 5);
	ck_assert_int_eq(read_rc(h, id, 4), H5_ERR_FORMAT);
	mid(id, 10, 5);     /* inside the block prefix */
	ck_assert_int_eq(read_rc(h, id, 4), H5_ERR_FORMAT);
	mid(id, 60, 5);     /* overruns the block */
	ck_assert_int_eq(read_rc(h, id, 4), H5_ERR_FORMAT);
	mid(id, HP_PREFIX, 0);
	ck_assert_int_eq(read_rc(h, id, 4), H5_ERR_FORMAT);
	mid(id, HP_PREFIX, 101); /* larger than a managed object may be */
	ck_assert_int_eq(read_rc(h, id, 4), H5_ERR_FORMAT);
	mid(id, 65, 5);     /* beyond the managed space */
	ck_assert_int_eq(read_rc(h, id, 4), H5_ERR_FORMAT);
	mid(id, HP_PREFIX, 5);
	ck_assert_int_eq(read_rc(h, id, 3), H5_ERR_FORMAT);   /* ID too short */
	id[0] = 0x40;       /* ID version 1 */
	ck_assert_int_eq(read_rc(h, id, 4), H5_ERR_FORMAT);
	id[0] = 0x30;       /* ID type 3 */
	ck_assert_int_eq(read_rc(h, id, 4), H5_ERR_FORMAT);
	ck_assert_int_eq(read_rc(h, id, 0), H5_ERR_INVAL);
	h5_fheap_close(h);
	h5_file_close(f);
	tb_free(&b);
}
END_TEST

typedef struct hand_heap {
	tbuf b;
	uint64_t root, child, d[4];
} hand_heap;

static const char obj_d2[90] = "a ninety-byte object in the 128-byte direct block of row two ..........................";

/* Root indirect block (4 rows): entry 0 (row 0) D0 at heap offset 0,
 * entry 5 (row 1, col 1) D1 at 320, entry 8 (row 2) D2 at 512, entry 13
 * (row 3, col 1) a child indirect block at 1280 whose entry 2 is D3 at 1408. */
static void build_hand_heap(hand_heap *t)
{
	hp_params p = hp_default();
	uint64_t root_ents[16], child_ents[4];

	hp_begin(&t->b);
	t->d[0] = hp_put_dblock(&t->b, 0, 64);
	hp_put_obj(&t->b, t->d[0], HP_PREFIX, "alpha", 5);
	hp_seal(t->b.p, t->d[0], 64);
	t->d[1] = hp_put_dblock(&t->b, 320, 64);
	hp_put_obj(&t->b, t->d[1], 30, "bravo!", 6);
	hp_seal(t->b.p, t->d[1], 64);
	t->d[2] = hp_put_dblock(&t->b, 512, 128);
	hp_put_obj(&t->b, t->d[2], HP_PREFIX, obj_d2, 90);
	hp_seal(t->b.p, t->d[2], 128);
	t->d[3] = hp_put_dblock(&t->b, 1408, 64);
	hp_put_obj(&t->b, t->d[3], 40, "delta", 5);
	hp_seal(t->b.p, t->d[3], 64);
	for (int i = 0; i < 4; i++)
		child_ents[i] = H5_ADDR_UNDEF;
	child_ents[2] = t->d[3];
	t->child = hp_put_iblock(&t->b, 1280, child_ents, 4);
	for (int i = 0; i < 16; i++)
		root_ents[i] = H5_ADDR_UNDEF;
	root_ents[0] = t->d[0];
	root_ents[5] = t->d[1];
	root_ents[8] = t->d[2];
	root_ents[13] = t->child;
	t->root = hp_put_iblock(&t->b, 0, root_ents, 16);
	p.root = t->root;
	p.root_rows = 4;
	hp_put_hdr(&t->b, &p);
}

#define ROOT_IB_SIZE (15 + 16 * 8 + 4)
#define CHILD_IB_SIZE (15 + 4 * 8 + 4)

static const struct {
	uint64_t off;
	size_t len;
	const char *data;
} hand_objs[] = {
	{ HP_PREFIX, 5, "alpha" },
	{ 320 + 30, 6, "bravo!" },
	{ 512 + HP_PREFIX, 90, obj_d2 },
	{ 1408 + 40, 5, "delta" },
};

/* Read all four objects of a (possibly damaged) hand heap image; return
 * the first error, 0 if every object read back intact. */
static int walk_heap(const uint8_t *img, size_t len)
{
	h5_file *f = mem_file(img, len);
	h5_fheap *h = NULL;
	int rc;

	rc = h5_fheap_open(&h, f, HP_ADDR);
	for (size_t i = 0; rc == 0 && i < 4; i++) {
		uint8_t id[4], *obj = NULL;
		size_t olen = 0;

		mid(id, hand_objs[i].off, hand_objs[i].len);
		rc = h5_fheap_read(&obj, &olen, h, id, 4);
		if (rc == 0 && (olen != hand_objs[i].len || memcmp(obj, hand_objs[i].data, olen) != 0))
			rc = 1; /* wrong bytes: the one outcome never allowed */
		free(obj);
	}
	h5_fheap_close(h);
	h5_file_close(f);
	return rc;
}

START_TEST(t_hand_indirect)
{
	hand_heap t;
	h5_file *f;
	h5_fheap *h;
	uint8_t id[4];

	build_hand_heap(&t);
	ck_assert_int_eq(walk_heap(t.b.p, t.b.len), 0);
	f = mem_file(t.b.p, t.b.len);
	ck_assert_int_eq(h5_fheap_open(&h, f, HP_ADDR), 0);
	for (int pass = 0; pass < 2; pass++) /* second pass: from the cache */
		for (size_t i = 0; i < 4; i++) {
			mid(id, hand_objs[i].off, hand_objs[i].len);
			expect_obj(h, id, 4, hand_objs[i].data, hand_objs[i].len);
		}
	mid(id, 64 + HP_PREFIX, 5);     /* row 0, col 1: never allocated */
	ck_assert_int_eq(read_rc(h, id, 4), H5_ERR_FORMAT);
	mid(id, 1280 + HP_PREFIX, 5);   /* child indirect block, entry 0: unallocated */
	ck_assert_int_eq(read_rc(h, id, 4), H5_ERR_FORMAT);
	mid(id, 1024 + HP_PREFIX, 5);   /* row 3, col 0: no indirect block */
	ck_assert_int_eq(read_rc(h, id, 4), H5_ERR_FORMAT);
	mid(id, 2048 + HP_PREFIX, 5);   /* row 4: beyond the root's 4 rows (and man_size) */
	ck_assert_int_eq(read_rc(h, id, 4), H5_ERR_FORMAT);
	h5_fheap_close(h);
	h5_file_close(f);
	tb_free(&t.b);
}
END_TEST

START_TEST(t_hand_tiny)
{
	tbuf b;
	hp_params p = hp_default();
	h5_file *f;
	h5_fheap *h;
	uint8_t id[20];

	/* 4-byte IDs: the 'normal' form, 4 bits of length */
	hp_begin(&b);
	hp_put_hdr(&b, &p);
	f = mem_file(b.p, b.len);
	ck_assert_int_eq(h5_fheap_open(&h, f, HP_ADDR), 0);
	memcpy(id, "\x22" "abc", 4);
	expect_obj(h, id, 4, "abc", 3);
	memcpy(id, "\x20" "z", 2);
	expect_obj(h, id, 2, "z", 1);
	id[0] = 0x23;       /* 4 bytes do not fit in a 4-byte ID */
	ck_assert_int_eq(read_rc(h, id, 4), H5_ERR_FORMAT);
	id[0] = 0x22;
	ck_assert_int_eq(read_rc(h, id, 3), H5_ERR_FORMAT);
	/* an empty heap has no managed objects */
	mid(id, HP_PREFIX, 5);
	ck_assert_int_eq(read_rc(h, id, 4), H5_ERR_FORMAT);
	h5_fheap_close(h);
	h5_file_close(f);
	tb_free(&b);

	/* 18-byte IDs: the largest with the 'normal' form (16 bytes, 4 bits) */
	hp_begin(&b);
	p.id_len = 18;
	hp_put_hdr(&b, &p);
	f = mem_file(b.p, b.len);
	ck_assert_int_eq(h5_fheap_open(&h, f, HP_ADDR), 0);
	id[0] = 0x2F;
	memcpy(id + 1, "sixteen bytes ok", 16);
	expect_obj(h, id, 18, "sixteen bytes ok", 16);
	h5_fheap_close(h);
	h5_file_close(f);
	tb_free(&b);

	/* 20-byte IDs: the 'extended' form, 12 bits of length */
	hp_begin(&b);
	p.id_len = 20;
	hp_put_hdr(&b, &p);
	f = mem_file(b.p, b.len);
	ck_assert_int_eq(h5_fheap_open(&h, f, HP_ADDR), 0);
	id[0] = 0x20;
	id[1] = 17;         /* 18 bytes */
	memcpy(id + 2, "eighteen bytes ok!", 18);
	expect_obj(h, id, 20, "eighteen bytes ok!", 18);
	id[1] = 18;
	ck_assert_int_eq(read_rc(h, id, 20), H5_ERR_FORMAT);
	id[0] = 0x21;       /* 0x100 + 17: far too long */
	id[1] = 17;
	ck_assert_int_eq(read_rc(h, id, 20), H5_ERR_FORMAT);
	ck_assert_int_eq(read_rc(h, id, 1), H5_ERR_FORMAT);
	h5_fheap_close(h);
	h5_file_close(f);
	tb_free(&b);
}
END_TEST

START_TEST(t_hand_huge)
{
	tbuf b;
	hp_params p = hp_default();
	uint8_t blob1[300], blob2[200], id[20], rec[2][24];
	uint64_t a1, a2, leaf, bt;
	h5_file *f;
	h5_fheap *h;

	for (size_t i = 0; i < sizeof(blob1); i++)
		blob1[i] = (uint8_t)(i * 7);
	for (size_t i = 0; i < sizeof(blob2); i++)
		blob2[i] = (uint8_t)(i * 13 + 1);
	hp_begin(&b);
	a1 = b.len;
	tb_put(&b, blob1, sizeof(blob1));
	a2 = b.len;
	tb_put(&b, blob2, sizeof(blob2));
	/* huge-object B-tree, type 1: address, length, object number */
	h5_le_encode(rec[0], a1, 8);
	h5_le_encode(rec[0] + 8, sizeof(blob1), 8);
	h5_le_encode(rec[0] + 16, 1, 8);
	h5_le_encode(rec[1], a2, 8);
	h5_le_encode(rec[1] + 8, sizeof(blob2), 8);
	h5_le_encode(rec[1] + 16, 2, 8);
	leaf = b.len;
	tb_str(&b, "BTLF");
	tb_u8(&b, 0);
	tb_u8(&b, 1);
	tb_put(&b, rec, sizeof(rec));
	tb_checksum(&b, leaf);
	bt = b.len;
	tb_str(&b, "BTHD");
	tb_u8(&b, 0);
	tb_u8(&b, 1);
	tb_u32(&b, 512);
	tb_u16(&b, 24);
	tb_u16(&b, 0);
	tb_u8(&b, 100);
	tb_u8(&b, 40);
	tb_u64(&b, leaf);
	tb_u16(&b, 2);
	tb_u64(&b, 2);
	tb_checksum(&b, bt);
	p.huge_bt2 = bt;
	hp_put_hdr(&b, &p);
	f = mem_file(b.p, b.len);
	ck_assert_int_eq(h5_fheap_open(&h, f, HP_ADDR), 0);
	/* 4-byte IDs cannot hold address and length: 3-byte object numbers */
	memcpy(id, "\x10\x02\x00\x00", 4);
	expect_obj(h, id, 4, blob2, sizeof(blob2));
	memcpy(id, "\x10\x01\x00\x00", 4);
	expect_obj(h, id, 4, blob1, sizeof(blob1));
	memcpy(id, "\x10\x03\x00\x00", 4);
	ck_assert_int_eq(read_rc(h, id, 4), H5_ERR_FORMAT);
	ck_assert_int_eq(read_rc(h, id, 3), H5_ERR_FORMAT);
	h5_fheap_close(h);
	h5_file_close(f);

	/* a record pointing past the end of the file */
	{
		uint8_t *img = malloc(b.len);

		memcpy(img, b.p, b.len);
		h5_le_encode(img + leaf + 6 + 24 + 8, 1u << 20, 8);
		refix(img, leaf, 6 + 48 + 4);
		f = mem_file(img, b.len);
		ck_assert_int_eq(h5_fheap_open(&h, f, HP_ADDR), 0);
		memcpy(id, "\x10\x02\x00\x00", 4);
		ck_assert_int_eq(read_rc(h, id, 4), H5_ERR_FORMAT);
		h5_fheap_close(h);
		h5_file_close(f);
		free(img);
	}

	/* 20-byte IDs hold address and length directly: no B-tree needed */
	p.id_len = 20;
	p.huge_bt2 = H5_ADDR_UNDEF;
	hp_put_hdr(&b, &p);
	f = mem_file(b.p, b.len);
	ck_assert_int_eq(h5_fheap_open(&h, f, HP_ADDR), 0);
	memset(id, 0, sizeof(id));
	id[0] = 0x10;
	h5_le_encode(id + 1, a2, 8);
	h5_le_encode(id + 9, sizeof(blob2), 8);
	expect_obj(h, id, 20, blob2, sizeof(blob2));
	h5_le_encode(id + 9, b.len, 8);    /* runs past the end of the file */
	ck_assert_int_eq(read_rc(h, id, 20), H5_ERR_FORMAT);
	h5_le_encode(id + 1, H5_ADDR_UNDEF, 8);
	ck_assert_int_eq(read_rc(h, id, 20), H5_ERR_FORMAT);
	ck_assert_int_eq(read_rc(h, id, 12), H5_ERR_FORMAT);
	h5_fheap_close(h);
	h5_file_close(f);
	tb_free(&b);
}
END_TEST

START_TEST(t_hand_corrupt)
{
	hand_heap t;
	uint8_t *img;
	size_t len;
	int rc;

	build_hand_heap(&t);
	len = t.b.len;
	img = malloc(len);
	ck_assert_ptr_nonnull(img);
#define RESET() memcpy(img, t.b.p, len)
#define HDR_EDIT(off, val, n)                                   \
	do {                                                    \
		RESET();                                        \
		h5_le_encode(img + HP_ADDR + (off), (val), (n)); \
		refix(img, HP_ADDR, HP_HDR_SIZE);               \
	} while (0)
	/* header */
	RESET();
	img[HP_ADDR + 40] ^= 1;
	ck_assert_int_eq(walk_heap(img, len), H5_ERR_CHECKSUM);
	RESET();
	img[HP_ADDR + 1] = 'x';
	ck_assert_int_eq(walk_heap(img, len), H5_ERR_FORMAT);
	HDR_EDIT(4, 1, 1);                      /* version */
	ck_assert_int_eq(walk_heap(img, len), H5_ERR_FORMAT);
	HDR_EDIT(110, 3, 2);                    /* width not a power of two */
	ck_assert_int_eq(walk_heap(img, len), H5_ERR_FORMAT);
	HDR_EDIT(112, 0, 8);                    /* starting block size 0 */
	ck_assert_int_eq(walk_heap(img, len), H5_ERR_FORMAT);
	HDR_EDIT(112, 16, 8);                   /* blocks smaller than their prefix */
	ck_assert_int_eq(walk_heap(img, len), H5_ERR_FORMAT);
	HDR_EDIT(120, 32, 8);                   /* max direct < starting size */
	ck_assert_int_eq(walk_heap(img, len), H5_ERR_FORMAT);
	HDR_EDIT(128, 65, 2);                   /* 65-bit heap */
	ck_assert_int_eq(walk_heap(img, len), H5_ERR_FORMAT);
	HDR_EDIT(140, 10, 2);                   /* more root rows than a 16-bit heap has */
	ck_assert_int_eq(walk_heap(img, len), H5_ERR_FORMAT);
	HDR_EDIT(140, 3, 2);                    /* root read with 3 rows: wrong size, bad checksum */
	ck_assert_int_lt(walk_heap(img, len), 0);
	HDR_EDIT(140, 0, 2);                    /* root taken for a direct block */
	ck_assert_int_lt(walk_heap(img, len), 0);
	HDR_EDIT(7, 0, 2);                      /* still consistent: filter length 0 */
	ck_assert_int_eq(walk_heap(img, len), 0);
	ck_assert_int_lt(walk_heap(t.b.p, HP_ADDR + 100), 0);  /* truncated header */
	ck_assert_int_lt(walk_heap(t.b.p, t.d[3] + 30), 0);    /* truncated heap */

	/* direct block: checksum, signature, heap back-pointer, block offset */
	RESET();
	img[t.d[1] + 50] ^= 0x80;
	ck_assert_int_eq(walk_heap(img, len), H5_ERR_CHECKSUM);
	RESET();
	img[t.d[1]] = 'G';
	ck_assert_int_eq(walk_heap(img, len), H5_ERR_FORMAT);
	RESET();
	h5_le_encode(img + t.d[1] + 5, HP_ADDR + 1, 8);
	hp_seal(img, t.d[1], 64);
	ck_assert_int_eq(walk_heap(img, len), H5_ERR_FORMAT);
	RESET();
	h5_le_encode(img + t.d[1] + 13, 256, 2);
	hp_seal(img, t.d[1], 64);
	ck_assert_int_eq(walk_heap(img, len), H5_ERR_FORMAT);

	/* indirect blocks */
	RESET();
	img[t.child + 20] ^= 4;
	ck_assert_int_eq(walk_heap(img, len), H5_ERR_CHECKSUM);
	RESET();
	h5_le_encode(img + t.child + 5, 999, 8);
	refix(img, t.child, CHILD_IB_SIZE);
	ck_assert_int_eq(walk_heap(img, len), H5_ERR_FORMAT);
	RESET();
	h5_le_encode(img + t.child + 13, 1024, 2);
	refix(img, t.child, CHILD_IB_SIZE);
	ck_assert_int_eq(walk_heap(img, len), H5_ERR_FORMAT);

	/* cycles and confusion: the child indirect block is the root itself, a
	 * direct block; a direct entry points at an indirect block or at a
	 * direct block of another size */
	RESET();
	h5_le_encode(img + t.root + 15 + 13 * 8, t.root, 8);
	refix(img, t.root, ROOT_IB_SIZE);
	rc = walk_heap(img, len);
	ck_assert_msg(rc == H5_ERR_LOOP || rc == H5_ERR_FORMAT, "rc %d", rc);
	RESET();
	h5_le_encode(img + t.root + 15 + 13 * 8, t.d[2], 8);
	refix(img, t.root, ROOT_IB_SIZE);
	rc = walk_heap(img, len);
	ck_assert_msg(rc < 0, "rc %d", rc);
	RESET();
	h5_le_encode(img + t.root + 15 + 8 * 8, t.child, 8);
	refix(img, t.root, ROOT_IB_SIZE);
	ck_assert_int_lt(walk_heap(img, len), 0);
	RESET();
	h5_le_encode(img + t.root + 15 + 8 * 8, t.d[0], 8);  /* 64-byte block used as 128 */
	refix(img, t.root, ROOT_IB_SIZE);
	ck_assert_int_lt(walk_heap(img, len), 0);
	RESET();
	h5_le_encode(img + t.child + 15 + 2 * 8, t.d[3] + 1000000, 8); /* past the end */
	refix(img, t.child, CHILD_IB_SIZE);
	ck_assert_int_eq(walk_heap(img, len), H5_ERR_FORMAT);
#undef HDR_EDIT
#undef RESET
	free(img);
	tb_free(&t.b);
}
END_TEST

/* Every byte of the hand heap flipped in turn: an error each time (every
 * byte is covered by a checksum), never a crash or wrong bytes. */
START_TEST(t_hand_flip_every_byte)
{
	hand_heap t;
	uint8_t *img;

	build_hand_heap(&t);
	img = malloc(t.b.len);
	ck_assert_ptr_nonnull(img);
	for (size_t i = HP_ADDR; i < t.b.len; i++) {
		int rc;

		memcpy(img, t.b.p, t.b.len);
		img[i] ^= 0x5A;
		rc = walk_heap(img, t.b.len);
		ck_assert_msg(rc < 0, "flipping byte %zu: rc %d", i, rc);
	}
	free(img);
	tb_free(&t.b);
}
END_TEST

/* ---- real files: dense groups and dense attributes ------------------------ */

/* The name inside a link message (spec IV.A.2.g); *corder if stored, and
 * *tlen the length of a soft link's target (SIZE_MAX for other links). */
static bool link_msg_name(const uint8_t *msg, size_t len, char *name, size_t cap, int64_t *corder, size_t *tlen)
{
	h5_rd r;
	uint8_t flags, type = 0;
	uint64_t nlen;
	const uint8_t *p;

	h5_rd_init(&r, msg, len);
	if (h5_rd_u8(&r) != 1)
		return false;
	flags = h5_rd_u8(&r);
	if (flags & 0x08)
		type = h5_rd_u8(&r);
	*corder = -1;
	if (flags & 0x04)
		*corder = (int64_t)h5_rd_u64(&r);
	if (flags & 0x10)
		h5_rd_u8(&r);
	nlen = h5_rd_uint(&r, 1u << (flags & 3));
	p = h5_rd_bytes(&r, (size_t)nlen);
	if (!p || nlen + 1 > cap)
		return false;
	memcpy(name, p, (size_t)nlen);
	name[nlen] = 0;
	*tlen = SIZE_MAX;
	if (type == 1) {
		*tlen = h5_rd_u16(&r);
		if (!h5_rd_bytes(&r, *tlen))
			return false;
	}
	return h5_rd_ok(&r);
}

typedef struct name_walk {
	h5_fheap *h;
	size_t id_off, id_len;  /* heap ID position in the B-tree record */
	size_t hash_off;        /* name hash position, or SIZE_MAX */
	bool attr;
	unsigned long n;
	unsigned char *seen;
	unsigned long count;
	const char *group;
	int64_t *corders;       /* optional: link creation order by index */
	unsigned huge;          /* huge objects met */
} name_walk;

/* Index of a generated name, or -1. */
static long name_index(const name_walk *w, const char *name)
{
	char buf[64];
	char *end;
	unsigned long i;

	if (!strcmp(w->group, "gcoll")) {
		for (size_t k = 0; k < g_ncoll; k++)
			if (!strcmp(g_coll[k], name))
				return (long)k;
		return -1;
	}
	if (name[0] != (w->attr ? 'a' : 'n'))
		return -1;
	i = strtoul(name + (w->attr ? 4 : 1), &end, 10);
	if (i >= w->n)
		return -1;
	if (w->attr)
		snprintf(buf, sizeof(buf), "attr%lu", i);
	else
		lname(i, buf, sizeof(buf));
	return strcmp(buf, name) == 0 ? (long)i : -1;
}

/* The name inside an attribute message (spec IV.A.2.m, versions 1-3). */
static bool attr_msg_name(const uint8_t *msg, size_t len, char *name, size_t cap)
{
	h5_rd r;
	uint8_t version;
	uint16_t nlen;
	const uint8_t *p;

	h5_rd_init(&r, msg, len);
	version = h5_rd_u8(&r);
	h5_rd_u8(&r);
	nlen = h5_rd_u16(&r);
	h5_rd_u16(&r);
	h5_rd_u16(&r);
	if (version == 3)
		h5_rd_u8(&r);
	p = h5_rd_bytes(&r, nlen);
	if (!p || nlen == 0 || nlen > cap || p[nlen - 1] != 0)
		return false;
	memcpy(name, p, nlen);
	return true;
}

static int name_walk_cb(const uint8_t *rec, size_t len, void *ud)
{
	name_walk *w = ud;
	uint8_t *obj = NULL;
	size_t olen = 0;
	char name[256];
	int64_t corder = -1;
	size_t tlen = 0;
	long i;
	int rc;

	ck_assert_uint_ge(len, w->id_off + w->id_len);
	rc = h5_fheap_read(&obj, &olen, w->h, rec + w->id_off, w->id_len);
	ck_assert_msg(rc == 0, "%s: heap read failed: %s", w->group, h5_err_msg());
	if (w->attr)
		ck_assert(attr_msg_name(obj, olen, name, sizeof(name)));
	else
		ck_assert(link_msg_name(obj, olen, name, sizeof(name), &corder, &tlen));
	i = name_index(w, name);
	ck_assert_msg(i >= 0, "%s: unexpected name '%s'", w->group, name);
	/* in the filtered heaps, link 7's 6000-byte target makes it a huge object */
	if (w->group[0] == 'f' && i == 7) {
		ck_assert_uint_eq(tlen, 6001);
		ck_assert_uint_eq(rec[w->id_off] & 0x30, 0x10);
		w->huge++;
	}
	ck_assert_msg(!w->seen[i], "%s: name '%s' twice", w->group, name);
	w->seen[i] = 1;
	if (w->corders)
		w->corders[i] = corder;
	if (w->hash_off != SIZE_MAX)
		ck_assert_uint_eq(h5_le_decode(rec + w->hash_off, 4), h5_checksum_lookup3(name, strlen(name), 0));
	w->count++;
	free(obj);
	return 0;
}

START_TEST(t_real_link_names)
{
	static const char *groups[] = { "g200", "gorder", "g10k", "g100k", "gcoll", "fz", "fz20" };

	if (!have_files())
		return;
	for (size_t g = 0; g < (g_nofilter ? 5u : 7u); g++) {
		const idxset *s = find_set("links", groups[g]);
		file_img im;
		h5_bt2 *bt;
		name_walk w = { .id_off = 4, .id_len = 7, .hash_off = 0, .n = s->n, .group = groups[g] };

		img_open(&im, s->file);
		ck_assert_int_eq(h5_fheap_open(&w.h, im.f, s->heap), 0);
		ck_assert_uint_eq(h5_fheap_id_len(w.h), 7);
		w.seen = calloc(s->n, 1);
		w.corders = calloc(s->n, sizeof(*w.corders));
		ck_assert_int_eq(h5_bt2_open(&bt, im.f, s->name_bt2), 0);
		ck_assert_uint_eq(h5_bt2_type(bt), 5);
		ck_assert_int_eq(h5_bt2_iterate(bt, name_walk_cb, &w), 0);
		ck_assert_uint_eq(w.count, s->n);
		ck_assert_uint_eq(w.huge, groups[g][0] == 'f' ? 1 : 0);
		h5_bt2_close(bt);
		/* with creation order tracked, the type 6 index leads to the
		 * same messages, in creation order, each carrying its value */
		if (h5_addr_defined(s->corder_bt2)) {
			int64_t *by_name = w.corders;

			w.corders = calloc(s->n, sizeof(*w.corders));
			memset(w.seen, 0, s->n);
			w.count = 0;
			w.hash_off = SIZE_MAX;
			w.id_off = 8;
			ck_assert_int_eq(h5_bt2_open(&bt, im.f, s->corder_bt2), 0);
			ck_assert_uint_eq(h5_bt2_type(bt), 6);
			ck_assert_int_eq(h5_bt2_iterate(bt, name_walk_cb, &w), 0);
			ck_assert_uint_eq(w.count, s->n);
			for (unsigned long i = 0; i < s->n; i++) {
				ck_assert_int_eq(by_name[i], (int64_t)i);
				ck_assert_int_eq(w.corders[i], (int64_t)i);
			}
			h5_bt2_close(bt);
			free(by_name);
		}
		free(w.corders);
		free(w.seen);
		h5_fheap_close(w.h);
		img_close(&im);
	}
}
END_TEST

/* Name lookup as group.c does it: B-tree search by hash, then the heap
 * object decides whether the hash match is the name (collisions). */
typedef struct lookup {
	h5_fheap *h;
	const char *name;
	uint32_t hash;
	unsigned offered;
} lookup;

static int lookup_cmp(const void *key, const uint8_t *rec, size_t len, void *ud)
{
	const lookup *l = key;
	uint32_t h = (uint32_t)h5_le_decode(rec, 4);

	(void)len;
	(void)ud;
	return l->hash < h ? -1 : l->hash > h ? 1 : 0;
}

static int lookup_found(const uint8_t *rec, size_t len, void *ud)
{
	lookup *l = ud;
	uint8_t *obj = NULL;
	size_t olen;
	char name[256];
	int64_t corder;
	size_t tlen;
	int rc;

	(void)len;
	l->offered++;
	rc = h5_fheap_read(&obj, &olen, l->h, rec + 4, 7);
	if (rc < 0)
		return rc;
	rc = link_msg_name(obj, olen, name, sizeof(name), &corder, &tlen) && strcmp(name, l->name) == 0 ? 1
													    : H5_ERR_NOTFOUND;
	free(obj);
	return rc;
}

START_TEST(t_real_link_lookup)
{
	static const char *groups[] = { "g200", "g100k", "gcoll", "fz" };
	char name[64];

	if (!have_files())
		return;
	for (size_t g = 0; g < (g_nofilter ? 3u : 4u); g++) {
		const idxset *s = find_set("links", groups[g]);
		file_img im;
		h5_bt2 *bt;
		lookup l;
		unsigned long collisions = 0;

		img_open(&im, s->file);
		ck_assert_int_eq(h5_fheap_open(&l.h, im.f, s->heap), 0);
		ck_assert_int_eq(h5_bt2_open(&bt, im.f, s->name_bt2), 0);
		for (unsigned long i = 0; i < s->n; i++) {
			if (!strcmp(groups[g], "gcoll"))
				snprintf(name, sizeof(name), "%s", g_coll[i]);
			else
				lname(i, name, sizeof(name));
			l.name = name;
			l.hash = h5_checksum_lookup3(name, strlen(name), 0);
			l.offered = 0;
			ck_assert_msg(h5_bt2_find(bt, lookup_cmp, &l, lookup_found, &l) == 1, "%s: '%s' not found: %s",
				      groups[g], name, h5_err_msg());
			if (l.offered > 1)
				collisions++;
		}
		/* in the colliding group, half the names are found only after
		 * rejecting their twin */
		if (!strcmp(groups[g], "gcoll"))
			ck_assert_uint_ge(collisions, g_ncoll / 2);
		l.name = "no-such-link";
		l.hash = h5_checksum_lookup3(l.name, strlen(l.name), 0);
		ck_assert_int_eq(h5_bt2_find(bt, lookup_cmp, &l, lookup_found, &l), H5_ERR_NOTFOUND);
		/* a colliding name that is not in the group (only its twin is) */
		if (!strcmp(groups[g], "g200")) {
			l.name = g_coll[0];
			l.hash = h5_checksum_lookup3(l.name, strlen(l.name), 0);
			ck_assert_int_eq(h5_bt2_find(bt, lookup_cmp, &l, lookup_found, &l), H5_ERR_NOTFOUND);
		}
		h5_bt2_close(bt);
		h5_fheap_close(l.h);
		img_close(&im);
	}
}
END_TEST

START_TEST(t_real_attrs)
{
	static const char *objs[] = { "a50", "ord", "big" };

	if (!have_files())
		return;
	for (size_t o = 0; o < 3; o++) {
		const idxset *s = find_set("attrs", objs[o]);
		file_img im;
		h5_bt2 *bt;
		name_walk w = { .id_off = 0, .id_len = 8, .hash_off = 13, .attr = true, .n = 50, .group = objs[o] };

		img_open(&im, s->file);
		ck_assert_int_eq(h5_fheap_open(&w.h, im.f, s->heap), 0);
		ck_assert_uint_eq(h5_fheap_id_len(w.h), 8);
		w.seen = calloc(w.n, 1);
		ck_assert_int_eq(h5_bt2_open(&bt, im.f, s->name_bt2), 0);
		if (strcmp(objs[o], "big") != 0) {
			ck_assert_int_eq(h5_bt2_iterate(bt, name_walk_cb, &w), 0);
			ck_assert_uint_eq(w.count, s->n);
		} else {
			recs_t r = { 0 };

			/* "attr0" is a managed object, "huge" (100 KiB of
			 * int32 0..25599) goes to the huge-object B-tree */
			ck_assert_int_eq(h5_bt2_iterate(bt, collect_cb, &r), 0);
			ck_assert_uint_eq(r.n, 2);
			for (size_t i = 0; i < 2; i++) {
				const uint8_t *id = r.p + i * r.size;
				uint8_t *obj = NULL;
				size_t olen = 0;
				char name[64];

				ck_assert_int_eq(h5_fheap_read(&obj, &olen, w.h, id, 8), 0);
				ck_assert(attr_msg_name(obj, olen, name, sizeof(name)));
				if (!strcmp(name, "huge")) {
					ck_assert_uint_eq(id[0] & 0x30, 0x10);
					ck_assert_uint_gt(olen, 102400);
					for (uint32_t k = 0; k < 25600; k++)
						ck_assert_uint_eq(h5_le_decode(obj + olen - 102400 + 4 * k, 4), k);
				} else {
					ck_assert_str_eq(name, "attr0");
					ck_assert_uint_eq(id[0] & 0x30, 0x00);
				}
				free(obj);
			}
			free(r.p);
		}
		h5_bt2_close(bt);
		free(w.seen);
		h5_fheap_close(w.h);
		img_close(&im);
	}
}
END_TEST

/* Damage to a real heap: a flipped byte in a direct block or an indirect
 * block of the 100000-link heap is reported, never returned as data. */
START_TEST(t_real_corrupt)
{
	const idxset *s;
	file_img im;
	unsigned dblocks = 0, iblocks = 0;

	if (!have_files())
		return;
	s = find_set("links", "g100k");
	img_open(&im, s->file);
	for (size_t off = 0; off + 64 < im.len && (dblocks < 6 || iblocks < 3); off++) {
		bool is_d = memcmp(im.buf + off, "FHDB", 4) == 0, is_i = memcmp(im.buf + off, "FHIB", 4) == 0;
		uint8_t *copy;
		h5_file *f;
		h5_fheap *h;
		h5_bt2 *bt;
		name_walk w = { .id_off = 4, .id_len = 7, .hash_off = 0, .n = s->n, .group = "g100k" };
		int rc;

		if ((!is_d && !is_i) || h5_le_decode(im.buf + off + 5, 8) != s->heap)
			continue;
		if ((is_d && dblocks >= 6) || (is_i && iblocks >= 3))
			continue;
		copy = malloc(im.len);
		ck_assert_ptr_nonnull(copy);
		memcpy(copy, im.buf, im.len);
		copy[off + 30] ^= 0x01;
		f = mem_file(copy, im.len);
		ck_assert_int_eq(h5_fheap_open(&h, f, s->heap), 0);
		w.h = h;
		w.seen = calloc(s->n, 1);
		ck_assert_int_eq(h5_bt2_open(&bt, f, s->name_bt2), 0);
		/* the walk's callback asserts on any failed read, so read by hand */
		{
			recs_t r = { 0 };

			ck_assert_int_eq(h5_bt2_iterate(bt, collect_cb, &r), 0);
			rc = 0;
			for (size_t i = 0; i < r.n && rc == 0; i++) {
				uint8_t *obj = NULL;
				size_t olen;

				rc = h5_fheap_read(&obj, &olen, h, r.p + i * r.size + 4, 7);
				free(obj);
			}
			free(r.p);
		}
		ck_assert_msg(rc == H5_ERR_CHECKSUM, "flip in %s at 0x%zx: rc %d (%s)", is_d ? "FHDB" : "FHIB", off, rc,
			      h5_err_msg());
		if (is_d)
			dblocks++;
		else
			iblocks++;
		h5_bt2_close(bt);
		free(w.seen);
		h5_fheap_close(h);
		h5_file_close(f);
		free(copy);
	}
	ck_assert_uint_eq(dblocks, 6);
	ck_assert_uint_eq(iblocks, 3);
	/* truncated file: heap blocks past the cut cannot be read */
	{
		h5_file *f = mem_file(im.buf, (size_t)s->heap + 200);
		h5_fheap *h;
		uint8_t id[7] = { 0 }, *obj = NULL;
		size_t olen;

		ck_assert_int_eq(h5_fheap_open(&h, f, s->heap), 0);
		h5_le_encode(id + 1, 600000, 4);
		id[5] = 20;
		ck_assert_int_lt(h5_fheap_read(&obj, &olen, h, id, 7), 0);
		ck_assert_ptr_null(obj);
		h5_fheap_close(h);
		h5_file_close(f);
	}
	img_close(&im);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("fheap");
	TCase *hand = tcase_create("hand-built");
	TCase *real = tcase_create("h5py files");

	tcase_add_test(hand, t_hand_root_direct);
	tcase_add_test(hand, t_hand_indirect);
	tcase_add_test(hand, t_hand_tiny);
	tcase_add_test(hand, t_hand_huge);
	tcase_add_test(hand, t_hand_corrupt);
	tcase_add_test(hand, t_hand_flip_every_byte);
	suite_add_tcase(s, hand);
	tcase_add_unchecked_fixture(real, gen_setup, gen_teardown);
	tcase_set_timeout(real, 120);
	tcase_add_test(real, t_real_link_names);
	tcase_add_test(real, t_real_link_lookup);
	tcase_add_test(real, t_real_attrs);
	tcase_add_test(real, t_real_corrupt);
	suite_add_tcase(s, real);
	return s;
}

H5_TEST_MAIN(make_suite)
