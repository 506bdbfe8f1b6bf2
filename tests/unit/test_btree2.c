/* test_btree2.c - version 2 B-trees (btree2.c): hand-built trees, hostile
 * variants of them, and the indexes libhdf5 writes (link name / creation
 * order, attribute name / creation order, chunk indexes) in files made by
 * h5py at test time. */
#include "testutil.h"

#include <inttypes.h>
#include <sys/wait.h>
#include <unistd.h>

#define HEAPFIX_PREFIX "/tmp/h5fs-bt2-"
#include "heap_fixtures.h"
#include "base.h"
#include "rd.h"
#include "checksum.h"
#include "file.h"
#include "btree2.h"

/* ---- record collection -------------------------------------------------- */

typedef struct recs {
	uint8_t *p;
	size_t n, cap, size;
} recs;

static int collect_cb(const uint8_t *rec, size_t len, void *ud)
{
	recs *r = ud;

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

static int stop_after_cb(const uint8_t *rec, size_t len, void *ud)
{
	int *left = ud;

	(void)rec;
	(void)len;
	return --*left == 0 ? 42 : 0;
}

/* ---- hand-built trees ----------------------------------------------------
 * Node size 128 with 15-byte type 6 records (8-byte key + 7-byte heap ID):
 * leaves hold (128-10)/15 = 7 records, so "records in child" fields are one
 * byte; depth-1 nodes use 9-byte pointers and hold (128-19)/24 = 4 records,
 * a depth-1 subtree holds at most 5*7+4 = 39 records (one byte), so depth-2
 * pointers are 10 bytes and depth-2 nodes hold (128-20)/25 = 4 records. */

#define HB_NODE 128
#define HB_REC 15

static void rec6(uint8_t *out, uint64_t key)
{
	h5_le_encode(out, key, 8);
	for (int i = 0; i < 7; i++)
		out[8 + i] = (uint8_t)(key * 31 + (uint64_t)i);
}

static uint64_t put_leaf(tbuf *b, uint8_t type, const uint8_t *recs_, unsigned n, unsigned rec_size)
{
	uint64_t addr = b->len;

	tb_str(b, "BTLF");
	tb_u8(b, 0);
	tb_u8(b, type);
	tb_put(b, recs_, (size_t)n * rec_size);
	tb_checksum(b, addr);
	return addr;
}

static uint64_t put_int(tbuf *b, uint8_t type, const uint8_t *recs_, unsigned n, unsigned rec_size,
			const uint64_t *child, const unsigned *cn, const uint64_t *ct, unsigned tot_w)
{
	uint64_t addr = b->len;

	tb_str(b, "BTIN");
	tb_u8(b, 0);
	tb_u8(b, type);
	tb_put(b, recs_, (size_t)n * rec_size);
	for (unsigned i = 0; i <= n; i++) {
		tb_u64(b, child[i]);
		tb_u8(b, (uint8_t)cn[i]);
		if (tot_w)
			tb_uint(b, ct[i], tot_w);
	}
	tb_checksum(b, addr);
	return addr;
}

static uint64_t put_hdr(tbuf *b, uint8_t type, uint32_t node_size, uint16_t rec_size, uint16_t depth,
			uint64_t root, uint16_t root_nrec, uint64_t total)
{
	uint64_t addr = b->len;

	tb_str(b, "BTHD");
	tb_u8(b, 0);
	tb_u8(b, type);
	tb_u32(b, node_size);
	tb_u16(b, rec_size);
	tb_u16(b, depth);
	tb_u8(b, 100);
	tb_u8(b, 40);
	tb_u64(b, root);
	tb_u16(b, root_nrec);
	tb_u64(b, total);
	tb_checksum(b, addr);
	return addr;
}

#define HDR_SIZE (10 + 4 + 2 + 2 + 1 + 1 + SA + 2 + SS)

/* Recompute the checksum of the len-byte block at addr after an edit. */
static void refix(uint8_t *img, uint64_t addr, size_t len)
{
	h5_le_encode(img + addr + len - 4, h5_checksum_metadata(img + addr, len - 4), 4);
}

typedef struct hand_tree {
	tbuf b;
	uint64_t hdr, root, mid[2], leaf[6];
} hand_tree;

/* Keys 1..17: root [I0] 9 [I1]; I0 = [L0] 3 [L1] 6 [L2]; I1 = [L3] 12 [L4] 15 [L5];
 * leaves hold the two keys between. */
static void build_hand_tree(hand_tree *t)
{
	uint8_t r[4][HB_REC];
	uint64_t k = 1;
	unsigned two[3] = { 2, 2, 2 };
	uint64_t two64[3] = { 2, 2, 2 };

	memset(t, 0, sizeof(*t));
	tb_zero(&t->b, 16); /* nothing lives at address 0 */
	for (int l = 0; l < 6; l++) {
		rec6(r[0], k);
		rec6(r[1], k + 1);
		t->leaf[l] = put_leaf(&t->b, 6, r[0], 2, HB_REC);
		k += 3;
	}
	for (int m = 0; m < 2; m++) {
		uint64_t base = (uint64_t)m * 9;

		rec6(r[0], base + 3);
		rec6(r[1], base + 6);
		t->mid[m] = put_int(&t->b, 6, r[0], 2, HB_REC, &t->leaf[m * 3], two, two64, 0);
	}
	{
		unsigned cn[2] = { 2, 2 };
		uint64_t ct[2] = { 8, 8 };

		rec6(r[0], 9);
		t->root = put_int(&t->b, 6, r[0], 1, HB_REC, t->mid, cn, ct, 1);
	}
	t->hdr = put_hdr(&t->b, 6, HB_NODE, HB_REC, 2, t->root, 1, 17);
}

static int key_cmp(const void *key, const uint8_t *rec, size_t len, void *ud)
{
	uint64_t a = *(const uint64_t *)key, b = h5_le_decode(rec, 8);

	(void)len;
	(void)ud;
	return a < b ? -1 : a > b ? 1 : 0;
}

typedef struct found_ud {
	unsigned calls;
	int accept_at;          /* accept on this call (1-based), 0 = never */
	uint8_t last[32];
} found_ud;

static int found_cb(const uint8_t *rec, size_t len, void *udp)
{
	found_ud *ud = udp;

	ck_assert_uint_le(len, sizeof(ud->last));
	memcpy(ud->last, rec, len);
	ud->calls++;
	return (int)ud->calls == ud->accept_at ? 7 : H5_ERR_NOTFOUND;
}

START_TEST(t_hand_iterate_find)
{
	hand_tree t;
	h5_file *f;
	h5_bt2 *bt;
	recs r = { 0 };
	int left = 5;

	build_hand_tree(&t);
	f = mem_file(t.b.p, t.b.len);
	ck_assert_int_eq(h5_bt2_open(&bt, f, t.hdr), 0);
	ck_assert_uint_eq(h5_bt2_type(bt), 6);
	ck_assert_uint_eq(h5_bt2_record_size(bt), HB_REC);
	ck_assert_uint_eq(h5_bt2_nrecords(bt), 17);
	ck_assert_int_eq(h5_bt2_iterate(bt, collect_cb, &r), 0);
	ck_assert_uint_eq(r.n, 17);
	for (size_t i = 0; i < r.n; i++) {
		uint8_t want[HB_REC];

		rec6(want, i + 1);
		ck_assert_mem_eq(r.p + i * HB_REC, want, HB_REC);
	}
	/* a callback's non-zero value stops the walk and is returned */
	ck_assert_int_eq(h5_bt2_iterate(bt, stop_after_cb, &left), 42);
	for (uint64_t k = 0; k <= 18; k++) {
		found_ud ud = { .accept_at = 1 };
		int rc = h5_bt2_find(bt, key_cmp, &k, found_cb, &ud);

		if (k == 0 || k == 18) {
			ck_assert_int_eq(rc, H5_ERR_NOTFOUND);
			ck_assert_uint_eq(ud.calls, 0);
		} else {
			ck_assert_msg(rc == 7, "key %llu: rc %d (%s)", (unsigned long long)k, rc, h5_err_msg());
			ck_assert_uint_eq(h5_le_decode(ud.last, 8), k);
		}
	}
	/* unique keys: a rejected match ends the search */
	{
		uint64_t k = 9;
		found_ud ud = { .accept_at = 0 };

		ck_assert_int_eq(h5_bt2_find(bt, key_cmp, &k, found_cb, &ud), H5_ERR_NOTFOUND);
		ck_assert_uint_eq(ud.calls, 1);
	}
	h5_bt2_close(bt);
	h5_file_close(f);
	free(r.p);
	tb_free(&t.b);
}
END_TEST

/* Type 5 (link name hash): equal hashes spread over a leaf, the internal
 * record and the next leaf must all be offered to found(). Records are
 * 4-byte hash + 7-byte ID; 128-byte nodes: leaves hold 10, depth-1 nodes 5. */
static void rec5(uint8_t *out, uint32_t hash, uint8_t tag)
{
	h5_le_encode(out, hash, 4);
	memset(out + 4, tag, 7);
}

static int hash_cmp(const void *key, const uint8_t *rec, size_t len, void *ud)
{
	uint32_t a = *(const uint32_t *)key, b = (uint32_t)h5_le_decode(rec, 4);

	(void)len;
	(void)ud;
	return a < b ? -1 : a > b ? 1 : 0;
}

START_TEST(t_hand_duplicate_hashes)
{
	tbuf b = { 0 };
	uint8_t l0[3][11], l1[2][11], mid[11];
	uint64_t child[2];
	unsigned cn[2] = { 3, 2 };
	uint64_t ct[2] = { 3, 2 };
	uint64_t hdr;
	h5_file *f;
	h5_bt2 *bt;
	uint32_t key = 5;

	tb_zero(&b, 8);
	rec5(l0[0], 1, 'x');
	rec5(l0[1], 5, 'a');
	rec5(l0[2], 5, 'b');
	rec5(mid, 5, 'c');
	rec5(l1[0], 5, 'd');
	rec5(l1[1], 9, 'y');
	child[0] = put_leaf(&b, 5, l0[0], 3, 11);
	child[1] = put_leaf(&b, 5, l1[0], 2, 11);
	{
		uint64_t root = put_int(&b, 5, mid, 1, 11, child, cn, ct, 0);

		hdr = put_hdr(&b, 5, 128, 11, 1, root, 1, 6);
	}
	f = mem_file(b.p, b.len);
	ck_assert_int_eq(h5_bt2_open(&bt, f, hdr), 0);
	for (int accept = 0; accept <= 4; accept++) {
		found_ud ud = { .accept_at = accept };
		int rc = h5_bt2_find(bt, hash_cmp, &key, found_cb, &ud);

		if (accept == 0) {
			ck_assert_int_eq(rc, H5_ERR_NOTFOUND);
			ck_assert_uint_eq(ud.calls, 4);
		} else {
			ck_assert_int_eq(rc, 7);
			ck_assert_uint_eq(ud.calls, (unsigned)accept);
			ck_assert_uint_eq(ud.last[4], (uint8_t)("abcd"[accept - 1]));
		}
	}
	key = 9;
	{
		found_ud ud = { .accept_at = 1 };

		ck_assert_int_eq(h5_bt2_find(bt, hash_cmp, &key, found_cb, &ud), 7);
		ck_assert_uint_eq(ud.last[4], 'y');
	}
	key = 4;
	{
		found_ud ud = { .accept_at = 1 };

		ck_assert_int_eq(h5_bt2_find(bt, hash_cmp, &key, found_cb, &ud), H5_ERR_NOTFOUND);
		ck_assert_uint_eq(ud.calls, 0);
	}
	h5_bt2_close(bt);
	h5_file_close(f);
	tb_free(&b);
}
END_TEST

START_TEST(t_hand_empty)
{
	tbuf b = { 0 };
	uint64_t hdr, k = 1;
	h5_file *f;
	h5_bt2 *bt;
	recs r = { 0 };
	found_ud ud = { .accept_at = 1 };

	tb_zero(&b, 8);
	hdr = put_hdr(&b, 6, 512, HB_REC, 0, H5_ADDR_UNDEF, 0, 0);
	f = mem_file(b.p, b.len);
	ck_assert_int_eq(h5_bt2_open(&bt, f, hdr), 0);
	ck_assert_uint_eq(h5_bt2_nrecords(bt), 0);
	ck_assert_int_eq(h5_bt2_iterate(bt, collect_cb, &r), 0);
	ck_assert_uint_eq(r.n, 0);
	ck_assert_int_eq(h5_bt2_find(bt, key_cmp, &k, found_cb, &ud), H5_ERR_NOTFOUND);
	h5_bt2_close(bt);
	h5_file_close(f);
	tb_free(&b);
}
END_TEST

/* Open and walk a (possibly damaged) copy of the hand tree; return the
 * first error (0 if everything worked). Must never crash or hang. */
static int walk_image(const uint8_t *img, size_t len, uint64_t hdr)
{
	h5_file *f = mem_file(img, len);
	h5_bt2 *bt = NULL;
	recs r = { 0 };
	uint64_t k = 14;
	found_ud ud = { .accept_at = 1 };
	int rc;

	rc = h5_bt2_open(&bt, f, hdr);
	if (rc == 0) {
		rc = h5_bt2_iterate(bt, collect_cb, &r);
		if (rc == 0) {
			rc = h5_bt2_find(bt, key_cmp, &k, found_cb, &ud);
			if (rc == 7)
				rc = 0;
		}
		h5_bt2_close(bt);
	}
	free(r.p);
	h5_file_close(f);
	return rc;
}

START_TEST(t_hand_corrupt)
{
	hand_tree t;
	uint8_t *img;
	size_t len;
	size_t leaf_len = 6 + 2 * HB_REC + 4;
	size_t mid_len = 6 + 2 * HB_REC + 3 * 9 + 4;
	size_t root_len = 6 + 1 * HB_REC + 2 * 10 + 4;
	int rc;

	build_hand_tree(&t);
	len = t.b.len;
	img = malloc(len);
	ck_assert_ptr_nonnull(img);
	ck_assert_int_eq(walk_image(t.b.p, len, t.hdr), 0);

#define RESET() memcpy(img, t.b.p, len)
	/* header: checksum, signature, version, type, depth, counts, sizes */
	RESET();
	img[t.hdr + 20] ^= 1;
	ck_assert_int_eq(walk_image(img, len, t.hdr), H5_ERR_CHECKSUM);
	RESET();
	img[t.hdr] = 'X';
	ck_assert_int_eq(walk_image(img, len, t.hdr), H5_ERR_FORMAT);
	RESET();
	img[t.hdr + 4] = 1;
	refix(img, t.hdr, HDR_SIZE);
	ck_assert_int_eq(walk_image(img, len, t.hdr), H5_ERR_FORMAT);
	RESET();
	img[t.hdr + 5] = 0; /* test-only type */
	refix(img, t.hdr, HDR_SIZE);
	ck_assert_int_eq(walk_image(img, len, t.hdr), H5_ERR_FORMAT);
	RESET();
	h5_le_encode(img + t.hdr + 12, 65, 2); /* depth */
	refix(img, t.hdr, HDR_SIZE);
	ck_assert_int_eq(walk_image(img, len, t.hdr), H5_ERR_LIMIT);
	RESET();
	h5_le_encode(img + t.hdr + 6, 12, 4); /* node size too small */
	refix(img, t.hdr, HDR_SIZE);
	ck_assert_int_eq(walk_image(img, len, t.hdr), H5_ERR_FORMAT);
	RESET();
	h5_le_encode(img + t.hdr + 10, 0, 2); /* record size 0 */
	refix(img, t.hdr, HDR_SIZE);
	ck_assert_int_eq(walk_image(img, len, t.hdr), H5_ERR_FORMAT);
	RESET();
	h5_le_encode(img + t.hdr + 26, 1000, 8); /* more records than depth 2 can hold */
	refix(img, t.hdr, HDR_SIZE);
	ck_assert_int_eq(walk_image(img, len, t.hdr), H5_ERR_FORMAT);
	RESET();
	h5_le_encode(img + t.hdr + 26, 18, 8); /* total disagrees with the nodes */
	refix(img, t.hdr, HDR_SIZE);
	ck_assert_int_eq(walk_image(img, len, t.hdr), H5_ERR_FORMAT);
	RESET();
	h5_le_encode(img + t.hdr + 24, 5, 2); /* root claims more than fit */
	refix(img, t.hdr, HDR_SIZE);
	ck_assert_int_eq(walk_image(img, len, t.hdr), H5_ERR_FORMAT);
	RESET();
	h5_le_encode(img + t.hdr + 16, len + 100, 8); /* root past the end */
	refix(img, t.hdr, HDR_SIZE);
	ck_assert_int_eq(walk_image(img, len, t.hdr), H5_ERR_FORMAT);
	/* truncated image: the header itself, then a node, fall outside */
	ck_assert_int_lt(walk_image(t.b.p, t.hdr + 10, t.hdr), 0);

	/* leaf: checksum, signature, type */
	RESET();
	img[t.leaf[4] + 8] ^= 0x40;
	ck_assert_int_eq(walk_image(img, len, t.hdr), H5_ERR_CHECKSUM);
	RESET();
	memcpy(img + t.leaf[4], "BTIN", 4);
	refix(img, t.leaf[4], leaf_len);
	ck_assert_int_eq(walk_image(img, len, t.hdr), H5_ERR_FORMAT);
	RESET();
	img[t.leaf[4] + 5] = 5;
	refix(img, t.leaf[4], leaf_len);
	ck_assert_int_eq(walk_image(img, len, t.hdr), H5_ERR_FORMAT);

	/* internal node: child record count too large, subtree total wrong */
	RESET();
	img[t.mid[1] + 6 + 2 * HB_REC + 8] = 8; /* child 0 claims 8 records, leaves hold 7 */
	refix(img, t.mid[1], mid_len);
	ck_assert_int_eq(walk_image(img, len, t.hdr), H5_ERR_FORMAT);
	RESET();
	img[t.root + 6 + HB_REC + 9] = 9; /* root says I0 holds 9 */
	refix(img, t.root, root_len);
	ck_assert_int_eq(walk_image(img, len, t.hdr), H5_ERR_FORMAT);
	RESET();
	h5_le_encode(img + t.mid[0] + 6 + 2 * HB_REC, H5_ADDR_UNDEF, 8); /* undefined child */
	refix(img, t.mid[0], mid_len);
	ck_assert_int_eq(walk_image(img, len, t.hdr), H5_ERR_FORMAT);

	/* cycles: a depth-1 node pointing at the root, at itself, at the header */
	RESET();
	h5_le_encode(img + t.mid[1] + 6 + 2 * HB_REC + 9, t.root, 8);
	refix(img, t.mid[1], mid_len);
	rc = walk_image(img, len, t.hdr);
	ck_assert_msg(rc == H5_ERR_LOOP || rc == H5_ERR_FORMAT, "rc %d", rc);
	RESET();
	h5_le_encode(img + t.mid[1] + 6 + 2 * HB_REC + 9, t.mid[1], 8);
	refix(img, t.mid[1], mid_len);
	rc = walk_image(img, len, t.hdr);
	ck_assert_msg(rc == H5_ERR_LOOP || rc == H5_ERR_FORMAT, "rc %d", rc);
	RESET();
	h5_le_encode(img + t.root + 6 + HB_REC + 10, t.root, 8); /* root's child 1 is the root */
	refix(img, t.root, root_len);
	rc = walk_image(img, len, t.hdr);
	ck_assert_msg(rc == H5_ERR_LOOP || rc == H5_ERR_FORMAT, "rc %d", rc);
	RESET();
	h5_le_encode(img + t.root + 6 + HB_REC + 10, t.hdr, 8);
	refix(img, t.root, root_len);
	rc = walk_image(img, len, t.hdr);
	ck_assert_msg(rc == H5_ERR_LOOP || rc == H5_ERR_FORMAT, "rc %d", rc);
	/* two parents sharing one leaf while the totals still add up is not a
	 * cycle; it must just work (bounded by the header's record count) */
	RESET();
	h5_le_encode(img + t.mid[1] + 6 + 2 * HB_REC, t.leaf[0], 8);
	refix(img, t.mid[1], mid_len);
	ck_assert_int_eq(walk_image(img, len, t.hdr), 0);
#undef RESET
	free(img);
	tb_free(&t.b);
}
END_TEST

/* Every byte of the hand tree flipped in turn: errors, never crashes. */
START_TEST(t_hand_flip_every_byte)
{
	hand_tree t;
	uint8_t *img;
	unsigned errors = 0;

	build_hand_tree(&t);
	img = malloc(t.b.len);
	ck_assert_ptr_nonnull(img);
	for (size_t i = 16; i < t.b.len; i++) {
		memcpy(img, t.b.p, t.b.len);
		img[i] ^= 0xA5;
		if (walk_image(img, t.b.len, t.hdr) < 0)
			errors++;
	}
	/* every byte is covered by a checksum */
	ck_assert_uint_eq(errors, t.b.len - 16);
	free(img);
	tb_free(&t.b);
}
END_TEST

/* ---- real files ----------------------------------------------------------- */

static int count_cb(const uint8_t *rec, size_t len, void *ud)
{
	(void)rec;
	(void)len;
	++*(unsigned *)ud;
	return H5_ERR_NOTFOUND;
}

START_TEST(t_real_link_name_index)
{
	static const char *groups[] = { "g200", "gorder", "g10k", "g100k", "gcoll" };
	char name[64];
	unsigned long dup_hashes = 0;

	if (!have_files())
		return;
	for (size_t g = 0; g < 5; g++) {
		const idxset *s = find_set("links", groups[g]);
		file_img im;
		h5_bt2 *bt;
		recs r = { 0 };

		img_open(&im, s->file);
		ck_assert_int_eq(h5_bt2_open(&bt, im.f, s->name_bt2), 0);
		ck_assert_uint_eq(h5_bt2_type(bt), 5);
		ck_assert_uint_eq(h5_bt2_record_size(bt), 11);
		ck_assert_uint_eq(h5_bt2_nrecords(bt), s->n);
		ck_assert_int_eq(h5_bt2_iterate(bt, collect_cb, &r), 0);
		ck_assert_uint_eq(r.n, s->n);
		for (size_t i = 1; i < r.n; i++)
			ck_assert_uint_le(h5_le_decode(r.p + (i - 1) * 11, 4), h5_le_decode(r.p + i * 11, 4));
		/* every name's hash is found, and found() is offered exactly
		 * as many records as carry that hash */
		for (unsigned long i = 0; i < s->n; i++) {
			uint32_t hash;
			unsigned calls = 0, expect = 0;
			size_t lo = 0, hi = r.n;

			if (!strcmp(groups[g], "gcoll"))
				snprintf(name, sizeof(name), "%s", g_coll[i]);
			else
				lname(i, name, sizeof(name));
			hash = h5_checksum_lookup3(name, strlen(name), 0);
			while (lo < hi) {
				size_t mid = (lo + hi) / 2;

				if (h5_le_decode(r.p + mid * 11, 4) < hash)
					lo = mid + 1;
				else
					hi = mid;
			}
			while (lo < r.n && h5_le_decode(r.p + lo * 11, 4) == hash) {
				expect++;
				lo++;
			}
			ck_assert_uint_ge(expect, 1);
			if (expect > 1)
				dup_hashes++;
			ck_assert_int_eq(h5_bt2_find(bt, hash_cmp, &hash, count_cb, &calls), H5_ERR_NOTFOUND);
			ck_assert_msg(calls == expect, "%s: hash %08x offered %u times, %u records carry it",
				      name, hash, calls, expect);
		}
		h5_bt2_close(bt);
		free(r.p);
		img_close(&im);
	}
	/* the colliding names really did put equal hashes in the index */
	ck_assert_uint_ge(dup_hashes, g_ncoll);
}
END_TEST

static int u64_cmp(const void *key, const uint8_t *rec, size_t len, void *ud)
{
	uint64_t a = *(const uint64_t *)key, b = h5_le_decode(rec, 8);

	(void)len;
	(void)ud;
	return a < b ? -1 : a > b ? 1 : 0;
}

START_TEST(t_real_corder_indexes)
{
	if (!have_files())
		return;
	/* links: type 6 (8-byte creation order + 7-byte heap ID) */
	{
		const idxset *s = find_set("links", "gorder");
		file_img im;
		h5_bt2 *bt;
		recs r = { 0 };

		ck_assert(h5_addr_defined(s->corder_bt2));
		ck_assert(!h5_addr_defined(find_set("links", "g200")->corder_bt2));
		img_open(&im, s->file);
		ck_assert_int_eq(h5_bt2_open(&bt, im.f, s->corder_bt2), 0);
		ck_assert_uint_eq(h5_bt2_type(bt), 6);
		ck_assert_uint_eq(h5_bt2_record_size(bt), 15);
		ck_assert_int_eq(h5_bt2_iterate(bt, collect_cb, &r), 0);
		ck_assert_uint_eq(r.n, s->n);
		for (uint64_t i = 0; i < r.n; i++) {
			found_ud ud = { .accept_at = 1 };

			ck_assert_uint_eq(h5_le_decode(r.p + i * 15, 8), i);
			ck_assert_int_eq(h5_bt2_find(bt, u64_cmp, &i, found_cb, &ud), 7);
			ck_assert_mem_eq(ud.last, r.p + i * 15, 15);
		}
		{
			uint64_t k = s->n;
			found_ud ud = { .accept_at = 1 };

			ck_assert_int_eq(h5_bt2_find(bt, u64_cmp, &k, found_cb, &ud), H5_ERR_NOTFOUND);
		}
		h5_bt2_close(bt);
		free(r.p);
		img_close(&im);
	}
	/* attributes: type 8 name index (17-byte records) and type 9 creation order (13) */
	{
		static const char *objs[] = { "a50", "ord", "big" };

		for (size_t o = 0; o < 3; o++) {
			const idxset *s = find_set("attrs", objs[o]);
			file_img im;
			h5_bt2 *bt;
			recs r = { 0 };

			img_open(&im, s->file);
			ck_assert_int_eq(h5_bt2_open(&bt, im.f, s->name_bt2), 0);
			ck_assert_uint_eq(h5_bt2_type(bt), 8);
			ck_assert_uint_eq(h5_bt2_record_size(bt), 17);
			ck_assert_uint_eq(h5_bt2_nrecords(bt), s->n);
			ck_assert_int_eq(h5_bt2_iterate(bt, collect_cb, &r), 0);
			ck_assert_uint_eq(r.n, s->n);
			for (size_t i = 1; i < r.n; i++)
				ck_assert_uint_le(h5_le_decode(r.p + (i - 1) * 17 + 13, 4), h5_le_decode(r.p + i * 17 + 13, 4));
			h5_bt2_close(bt);
			free(r.p);
			if (h5_addr_defined(s->corder_bt2)) {
				memset(&r, 0, sizeof(r));
				ck_assert_int_eq(h5_bt2_open(&bt, im.f, s->corder_bt2), 0);
				ck_assert_uint_eq(h5_bt2_type(bt), 9);
				ck_assert_uint_eq(h5_bt2_record_size(bt), 13);
				ck_assert_int_eq(h5_bt2_iterate(bt, collect_cb, &r), 0);
				ck_assert_uint_eq(r.n, s->n);
				for (size_t i = 0; i < r.n; i++)
					ck_assert_uint_eq(h5_le_decode(r.p + i * 13 + 9, 4), i);
				h5_bt2_close(bt);
				free(r.p);
			}
			img_close(&im);
		}
	}
}
END_TEST

/* Chunk index records: address, [size, filter mask,] scaled offsets. */
typedef struct chunk_key {
	uint64_t s[2];
	size_t soff;            /* where the scaled offsets start in a record */
} chunk_key;

static int chunk_cmp(const void *key, const uint8_t *rec, size_t len, void *ud)
{
	const chunk_key *k = key;

	(void)ud;
	ck_assert_uint_ge(len, k->soff + 16);
	for (int d = 0; d < 2; d++) {
		uint64_t v = h5_le_decode(rec + k->soff + 8 * d, 8);

		if (k->s[d] != v)
			return k->s[d] < v ? -1 : 1;
	}
	return 0;
}

START_TEST(t_real_chunk_index)
{
	if (!have_files())
		return;
	for (size_t c = 0; c < g_nchk; c++) {
		const chunkset *s = &g_chk[c];
		file_img im;
		h5_bt2 *bt;
		recs r = { 0 };
		size_t soff, size_w = 0;

		ck_assert_int_eq(s->rank, 2);
		img_open(&im, s->file);
		ck_assert_int_eq(h5_bt2_open(&bt, im.f, s->bt2), 0);
		ck_assert_uint_eq(h5_bt2_type(bt), s->filtered ? 11 : 10);
		ck_assert_uint_eq(h5_bt2_nrecords(bt), s->n);
		if (s->filtered) {
			size_w = h5_bt2_record_size(bt) - SA - 4 - 16;
			ck_assert(size_w >= 1 && size_w <= 8);
			soff = SA + size_w + 4;
		} else {
			ck_assert_uint_eq(h5_bt2_record_size(bt), SA + 16);
			soff = SA;
		}
		ck_assert_int_eq(h5_bt2_iterate(bt, collect_cb, &r), 0);
		ck_assert_uint_eq(r.n, s->n);
		for (size_t i = 0; i < r.n; i++) {
			const uint8_t *rec = r.p + i * r.size;
			uint64_t s0 = h5_le_decode(rec + soff, 8), s1 = h5_le_decode(rec + soff + 8, 8);
			size_t j;

			if (i > 0) {
				chunk_key prev = { { h5_le_decode(rec - r.size + soff, 8),
						     h5_le_decode(rec - r.size + soff + 8, 8) }, soff };

				ck_assert_int_lt(chunk_cmp(&prev, rec, r.size, NULL), 0);
			}
			for (j = 0; j < s->n; j++)
				if (s->c[j].s[0] == s0 && s->c[j].s[1] == s1)
					break;
			ck_assert_msg(j < s->n, "%s: chunk (%llu,%llu) not reported by h5py", s->obj,
				      (unsigned long long)s0, (unsigned long long)s1);
			ck_assert_uint_eq(h5_le_decode(rec, SA), s->c[j].addr);
			if (s->filtered) {
				ck_assert_uint_eq(h5_le_decode(rec + SA, (unsigned)size_w), s->c[j].size);
				ck_assert_uint_eq(h5_le_decode(rec + SA + size_w, 4), s->c[j].mask);
			}
		}
		for (size_t j = 0; j < s->n; j++) {
			chunk_key k = { { s->c[j].s[0], s->c[j].s[1] }, soff };
			found_ud ud = { .accept_at = 1 };

			ck_assert_int_eq(h5_bt2_find(bt, chunk_cmp, &k, found_cb, &ud), 7);
			ck_assert_uint_eq(h5_le_decode(ud.last, SA), s->c[j].addr);
		}
		{
			chunk_key k = { { 1000, 1000 }, soff };
			found_ud ud = { .accept_at = 1 };

			ck_assert_int_eq(h5_bt2_find(bt, chunk_cmp, &k, found_cb, &ud), H5_ERR_NOTFOUND);
		}
		if (!strcmp(s->obj, "p2")) {
			chunk_key k = { { 0, 0 }, soff }; /* never written */
			found_ud ud = { .accept_at = 1 };

			ck_assert_int_eq(h5_bt2_find(bt, chunk_cmp, &k, found_cb, &ud), H5_ERR_NOTFOUND);
		}
		h5_bt2_close(bt);
		free(r.p);
		img_close(&im);
	}
}
END_TEST

/* A real multi-level tree, damaged: truncated file and a flipped byte in
 * every node along the way report errors. */
START_TEST(t_real_corrupt)
{
	const idxset *s;
	file_img im;
	h5_bt2 *bt;
	recs r = { 0 };
	unsigned checksum_errors = 0, tried = 0;

	if (!have_files())
		return;
	s = find_set("links", "g10k");
	img_open(&im, s->file);
	/* truncated: the nodes past the cut are outside the file */
	{
		h5_file *f = mem_file(im.buf, (size_t)s->name_bt2 + 200);
		int rc;

		rc = h5_bt2_open(&bt, f, s->name_bt2);
		if (rc == 0) {
			rc = h5_bt2_iterate(bt, collect_cb, &r);
			h5_bt2_close(bt);
		}
		ck_assert_int_lt(rc, 0);
		h5_file_close(f);
		free(r.p);
		memset(&r, 0, sizeof(r));
	}
	/* collect node addresses: flip a byte 40 bytes into every BTIN/BTLF
	 * block of this file and expect checksum failures while walking */
	for (size_t off = 0; off + 64 < im.len && tried < 64; off++) {
		uint8_t *copy;
		h5_file *f;
		int rc;

		if (memcmp(im.buf + off, "BTIN", 4) != 0 && memcmp(im.buf + off, "BTLF", 4) != 0)
			continue;
		if (im.buf[off + 5] != 5)
			continue;
		copy = malloc(im.len);
		ck_assert_ptr_nonnull(copy);
		memcpy(copy, im.buf, im.len);
		copy[off + 40] ^= 0x10;
		f = mem_file(copy, im.len);
		rc = h5_bt2_open(&bt, f, s->name_bt2);
		ck_assert_int_eq(rc, 0);
		rc = h5_bt2_iterate(bt, collect_cb, &r);
		h5_bt2_close(bt);
		r.n = 0;
		tried++;
		if (rc == H5_ERR_CHECKSUM)
			checksum_errors++;
		else
			ck_assert_int_eq(rc, 0); /* a node of another tree */
		h5_file_close(f);
		free(copy);
	}
	ck_assert_uint_gt(checksum_errors, 5);
	free(r.p);
	img_close(&im);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("btree2");
	TCase *hand = tcase_create("hand-built");
	TCase *real = tcase_create("h5py files");

	tcase_add_test(hand, t_hand_iterate_find);
	tcase_add_test(hand, t_hand_duplicate_hashes);
	tcase_add_test(hand, t_hand_empty);
	tcase_add_test(hand, t_hand_corrupt);
	tcase_add_test(hand, t_hand_flip_every_byte);
	suite_add_tcase(s, hand);
	tcase_add_unchecked_fixture(real, gen_setup, gen_teardown);
	tcase_set_timeout(real, 120);
	tcase_add_test(real, t_real_link_name_index);
	tcase_add_test(real, t_real_corder_indexes);
	tcase_add_test(real, t_real_chunk_index);
	tcase_add_test(real, t_real_corrupt);
	suite_add_tcase(s, real);
	return s;
}

H5_TEST_MAIN(make_suite)
