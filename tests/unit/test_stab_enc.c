/* test_stab_enc.c - the encoders of a symbol-table group's structures
 * (format/snod.c, format/btree1.c, format/lheap.c; used by
 * write/link_stab.c) against the bytes h5py 3 / libhdf5 1.10 wrote for
 * f.create_group('g'); f.create_dataset('x', data=[1, 2]);
 * f['s'] = h5py.SoftLink('/x') in a file of the default (earliest) format,
 * and decoded back by the readers in both offset sizes. */
#include "testutil.h"
#include "snod.h"
#include "btree1.h"
#include "lheap.h"

static const h5_fmt FMT = { 8, 8 };
static const h5_fmt FMT44 = { 4, 4 };

static size_t unhex(uint8_t *out, const char *hex)
{
	size_t n = 0;

	for (; hex[0] && hex[1]; hex += 2) {
		unsigned v;

		ck_assert_int_eq(sscanf(hex, "%2x", &v), 1);
		out[n++] = (uint8_t)v;
	}
	return n;
}

/* The root's SNOD: "g" (a group, its symbol table cached), "s" (a soft
 * link, its value's heap offset cached), "x" (a dataset). */
static const char SNOD_HEX[] =
	"534e4f4401000300"
	"0800000000000000" "2003000000000000" "0100000000000000" "4803000000000000" "6805000000000000"
	"1800000000000000" "ffffffffffffffff" "0200000000000000" "2000000000000000" "0000000000000000"
	"1000000000000000" "2807000000000000" "0000000000000000" "0000000000000000" "0000000000000000";

static const h5_snod_entry ENTRIES[3] = {
	{ .name_off = 8, .obj_addr = 0x320, .cache_type = 1, .btree_addr = 0x348, .heap_addr = 0x568 },
	{ .name_off = 0x18, .obj_addr = UINT64_MAX, .cache_type = 2, .link_off = 0x20 },
	{ .name_off = 0x10, .obj_addr = 0x728, .cache_type = 0 },
};

START_TEST(snod_as_libhdf5)
{
	uint8_t want[512], got[512];
	size_t n = unhex(want, SNOD_HEX), len = h5_snod_size(&FMT, 4);
	h5_snod back;

	ck_assert_uint_eq(len, 8 + 8 * 40);
	ck_assert_int_eq(h5_snod_encode(got, len, &FMT, 4, ENTRIES, 3), 0);
	ck_assert_mem_eq(got, want, n);
	for (size_t i = n; i < len; i++)
		ck_assert_uint_eq(got[i], 0);
	ck_assert_int_eq(h5_snod_decode(&back, &FMT, 4, got, len), 0);
	ck_assert_uint_eq(back.n, 3);
	ck_assert_uint_eq(back.e[0].heap_addr, 0x568);
	ck_assert_uint_eq(back.e[1].link_off, 0x20);
	ck_assert_uint_eq(back.e[2].obj_addr, 0x728);
	h5_snod_clear(&back);
	/* more than 2K entries, or a short buffer: refused */
	ck_assert_int_eq(h5_snod_encode(got, len, &FMT, 1, ENTRIES, 3), H5_ERR_INVAL);
	ck_assert_int_eq(h5_snod_encode(got, len - 1, &FMT, 4, ENTRIES, 3), H5_ERR_INVAL);
}
END_TEST

START_TEST(snod_small_offsets)
{
	h5_snod_entry e = { .name_off = 0x40, .obj_addr = 0x1234, .cache_type = 1, .btree_addr = 0x99,
			    .heap_addr = 0x77 };
	uint8_t buf[512];
	size_t len = h5_snod_size(&FMT44, 2);
	h5_snod back;

	ck_assert_uint_eq(h5_symentry_size(&FMT44), 4 + 4 + 8 + 16);
	ck_assert_int_eq(h5_snod_encode(buf, len, &FMT44, 2, &e, 1), 0);
	ck_assert_int_eq(h5_snod_decode(&back, &FMT44, 2, buf, len), 0);
	ck_assert_uint_eq(back.n, 1);
	ck_assert_uint_eq(back.e[0].name_off, 0x40);
	ck_assert_uint_eq(back.e[0].obj_addr, 0x1234);
	ck_assert_uint_eq(back.e[0].btree_addr, 0x99);
	ck_assert_uint_eq(back.e[0].heap_addr, 0x77);
	h5_snod_clear(&back);
}
END_TEST

/* The root's B-tree node (K 16): one child, the SNOD; key 0 the empty
 * name, key 1 "x", the last name. */
START_TEST(bt1_group_as_libhdf5)
{
	static const char hex[] = "5452454500000100ffffffffffffffffffffffffffffffff"
				  "0000000000000000e0050000000000001000000000000000";
	uint64_t keys[2] = { 0, 0x10 }, child[1] = { 0x5e0 };
	uint8_t want[64], got[1024];
	size_t n = unhex(want, hex), len = h5_bt1_group_size(&FMT, 16);
	h5_bt1_node *nd = NULL;

	ck_assert_uint_eq(len, 544);
	ck_assert_int_eq(h5_bt1_group_encode(got, len, &FMT, 16, 0, UINT64_MAX, UINT64_MAX, keys, child, 1), 0);
	ck_assert_mem_eq(got, want, n);
	for (size_t i = n; i < len; i++)
		ck_assert_uint_eq(got[i], 0);
	ck_assert_int_eq(h5_bt1_decode(&nd, &FMT, 0, got, len), 0);
	ck_assert_uint_eq(nd->n, 1);
	ck_assert_uint_eq(nd->child[0], 0x5e0);
	ck_assert_uint_eq(nd->name_off[1], 0x10);
	h5_bt1_free(nd);
	/* an empty root (a new group) and a full one */
	ck_assert_int_eq(h5_bt1_group_encode(got, len, &FMT, 16, 0, UINT64_MAX, UINT64_MAX, keys, NULL, 0), 0);
	ck_assert_uint_eq(got[6], 0);
	{
		uint64_t k[34], c[33];

		for (int i = 0; i < 34; i++)
			k[i] = (uint64_t)i * 8;
		for (int i = 0; i < 33; i++)
			c[i] = 0x1000 + (uint64_t)i;
		ck_assert_int_eq(h5_bt1_group_encode(got, len, &FMT, 16, 2, 0x10, 0x20, k, c, 32), 0);
		ck_assert_int_eq(h5_bt1_decode(&nd, &FMT, 0, got, len), 0);
		ck_assert_uint_eq(nd->level, 2);
		ck_assert_uint_eq(nd->left, 0x10);
		ck_assert_uint_eq(nd->child[31], 0x1000 + 31);
		ck_assert_uint_eq(nd->name_off[32], 32 * 8);
		h5_bt1_free(nd);
		ck_assert_int_eq(h5_bt1_group_encode(got, len, &FMT, 16, 0, 0, 0, k, c, 33), H5_ERR_INVAL);
	}
}
END_TEST

/* The new group's local heap: 88 bytes, the empty name, one free block
 * (its next offset 1, libhdf5's "none"). */
START_TEST(lheap_hdr_as_libhdf5)
{
	static const char hex[] = "4845415000000000580000000000000008000000000000008805000000000000";
	uint8_t want[32], got[32];
	h5_lheap h;

	ck_assert_uint_eq(unhex(want, hex), 32);
	ck_assert_uint_eq(h5_lheap_hdr_size(&FMT), 32);
	h5_lheap_hdr_encode(got, &FMT, 88, 8, 0x588);
	ck_assert_mem_eq(got, want, 32);
	ck_assert_int_eq(h5_lheap_decode(&h, &FMT, got, 32), 0);
	ck_assert_uint_eq(h.size, 88);
	ck_assert_uint_eq(h.free_off, 8);
	ck_assert_uint_eq(h.data_addr, 0x588);
	h5_lheap_hdr_encode(got, &FMT44, 64, H5_LHEAP_FREE_NULL, 0x200);
	ck_assert_int_eq(h5_lheap_decode(&h, &FMT44, got, h5_lheap_hdr_size(&FMT44)), 0);
	ck_assert_uint_eq(h.size, 64);
	ck_assert_uint_eq(h.data_addr, 0x200);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("stab_enc");
	TCase *tc = tcase_create("encoders");

	tcase_add_test(tc, snod_as_libhdf5);
	tcase_add_test(tc, snod_small_offsets);
	tcase_add_test(tc, bt1_group_as_libhdf5);
	tcase_add_test(tc, lheap_hdr_as_libhdf5);
	suite_add_tcase(s, tc);
	return s;
}

H5_TEST_MAIN(make_suite)
