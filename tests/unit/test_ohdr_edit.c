/* test_ohdr_edit.c - object header editing (write/ohdr_edit.c) on files
 * built here byte by byte (a v2 superblock whose root is a v1 or v2 object
 * header of chosen messages), each result read back through the decoder
 * (ohdr.c: signatures, checksums, continuation chains): a message into NIL
 * space, into a v2 chunk's gap, a replacement growing over the NIL after
 * it, a removal, a new continuation chunk whose continuation message goes
 * into NIL space or into the place of a message moved aside, the v1
 * prefix's message count; and the encoders and the text parser that
 * attribute writes use (attr_enc.c, dtype_enc.c, dspace_enc.c,
 * value_parse.c), round-tripped through their decoders. */
#include "testutil.h"
#include "ohdr_edit.h"
#include "space.h"
#include "base.h"
#include "rd.h"
#include "checksum.h"
#include "file.h"
#include "ohdr.h"
#include "birthtag.h"
#include "attr.h"
#include "dtype.h"
#include "dspace.h"
#include "value.h"
#include "h5core.h"
#include "file_ws.h"
#include "gslot.h"
#include "group.h"

#define SB_SIZE 48
#define MT_COMMENT 0x0D

static char tmpdir[64];
static char path[128];

static void setup(void)
{
	strcpy(tmpdir, "/tmp/h5fs-test-ohdr-edit-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown(void)
{
	test_tmp_remove(tmpdir);
}

/* A message of the header being built: type, body (NUL-terminated text
 * or zeros), total size of the body. */
typedef struct tmsg {
	uint8_t type;
	const char *text;
	size_t size;
} tmsg;

/* Superblock v2 and a root header of version `ver` holding msgs, then
 * `gap` zero bytes (v2: a gap). */
static void make_file(int ver, const tmsg *msgs, size_t n, size_t gap)
{
	tbuf b = { 0 };
	size_t body = gap;

	for (size_t i = 0; i < n; i++)
		body += (ver == 1 ? 8 : 4) + msgs[i].size;
	tb_sb2_start(&b, SB_SIZE);
	if (ver == 1) {
		tb_u8(&b, 1);
		tb_u8(&b, 0);
		tb_u16(&b, (uint16_t)n);
		tb_u32(&b, 1);
		tb_u32(&b, (uint32_t)body);
		tb_zero(&b, 4);
	} else {
		tb_str(&b, "OHDR");
		tb_u8(&b, 2);
		tb_u8(&b, 0x01);    /* chunk 0 size in 2 bytes */
		tb_u16(&b, (uint16_t)body);
	}
	for (size_t i = 0; i < n; i++) {
		size_t tl = msgs[i].text ? strlen(msgs[i].text) + 1 : 0;

		if (ver == 1) {
			tb_u16(&b, msgs[i].type);
			tb_u16(&b, (uint16_t)msgs[i].size);
			tb_zero(&b, 4);
		} else {
			tb_u8(&b, msgs[i].type);
			tb_u16(&b, (uint16_t)msgs[i].size);
			tb_u8(&b, 0);
		}
		if (tl)
			tb_put(&b, msgs[i].text, tl);
		tb_zero(&b, msgs[i].size - tl);
	}
	tb_zero(&b, gap);
	if (ver == 2)
		tb_checksum(&b, SB_SIZE);
	tb_sb2_finish(&b);
	snprintf(path, sizeof(path), "%s/f.h5", tmpdir);
	test_write_file(path, &b);
	tb_free(&b);
}

static h5_file *open_file(int writable)
{
	return test_open(path, (h5_open_opts){ .writable = writable });
}

/* One change committed on a fresh open; rc returned. */
static int change(size_t old, const char *text, size_t pad)
{
	h5_file *f = open_file(1);
	h5_ohdr_change c;
	char body[2048] = { 0 };
	size_t len = text ? strlen(text) + 1 + pad : 0;
	int rc;

	if (text)
		memcpy(body, text, strlen(text) + 1);
	pthread_mutex_lock(&f->write_lock);
	rc = h5_ohdr_change_open(&c, f, SB_SIZE);
	if (rc == 0)
		rc = h5_ohdr_put(&c, f, old, MT_COMMENT, 0, 0, text ? body : NULL, len);
	if (rc == 0)
		rc = h5_ohdr_commit(&c, f, true);
	h5_ohdr_change_close(&c);
	pthread_mutex_unlock(&f->write_lock);
	h5_file_close(f);
	return rc;
}

/* The comment texts of the root header as a fresh open decodes them, in
 * header order, joined by '|'; *nchunks, *nnil. */
static void read_back(char *out, size_t cap, size_t *nchunks, size_t *nnil, unsigned *v1_count)
{
	h5_file *f = open_file(0);
	h5_ohdr *oh = NULL;

	ck_assert_msg(h5_ohdr_load(&oh, f, SB_SIZE) == 0, "%s", h5_err_msg());
	out[0] = '\0';
	*nnil = 0;
	for (size_t i = 0; i < oh->nmsgs; i++) {
		if (oh->msgs[i].type == MT_COMMENT) {
			if (out[0])
				strncat(out, "|", cap - strlen(out) - 1);
			strncat(out, (const char *)oh->msgs[i].data, cap - strlen(out) - 1);
		}
		*nnil += oh->msgs[i].type == H5_MSG_NIL;
	}
	*nchunks = oh->nchunks;
	if (v1_count)
		*v1_count = oh->version == 1 ? (unsigned)h5_le_decode(oh->chunks[0].buf + 2, 2) == oh->nmsgs : 1;
	h5_ohdr_free(oh);
	h5_file_close(f);
}

#define CHECK(want, chunks) do {                                                        \
		char got[512];                                                          \
		size_t nc, nn;                                                          \
		unsigned cnt;                                                           \
		read_back(got, sizeof(got), &nc, &nn, &cnt);                            \
		ck_assert_str_eq(got, want);                                            \
		ck_assert_uint_eq(nc, chunks);                                          \
		ck_assert_uint_eq(cnt, 1);                                              \
	} while (0)

static void into_nil(int ver)
{
	tmsg m[] = { { MT_COMMENT, "first", 8 }, { H5_MSG_NIL, NULL, 48 } };

	make_file(ver, m, 2, 0);
	ck_assert_int_eq(change(SIZE_MAX, "second", 0), 0);
	CHECK("first|second", 1);
	/* the second grows over the NIL after it */
	ck_assert_int_eq(change(1, "second, longer", 0), 0);
	CHECK("first|second, longer", 1);
	/* the first cannot grow in place (the second follows it): it goes
	 * into the NIL space, its old place becomes NIL, in the same write */
	ck_assert_int_eq(change(0, "first, longer", 0), 0);
	CHECK("second, longer|first, longer", 1);
	/* remove (message 1: message 0 is the NIL the first left): a NIL of
	 * its size */
	ck_assert_int_eq(change(1, NULL, 0), 0);
	CHECK("first, longer", 1);
}

START_TEST(edit_v1_into_nil) { into_nil(1); }
END_TEST
START_TEST(edit_v2_into_nil) { into_nil(2); }
END_TEST

/* no free space: a new chunk; the continuation message takes the place
 * of the comment, which moves into the new chunk with the new message */
static void move_aside(int ver)
{
	tmsg m[] = { { MT_COMMENT, "a comment long enough", 24 } };

	make_file(ver, m, 1, ver == 2 ? 3 : 0);
	ck_assert_int_eq(change(SIZE_MAX, "new", 0), 0);
	CHECK("a comment long enough|new", 2);
	/* room is left: in chunk 0 (v2: the NIL left after the continuation
	 * message and the 3-byte gap), else in the new chunk */
	ck_assert_int_eq(change(SIZE_MAX, "third", 0), 0);
	if (ver == 2)
		CHECK("third|a comment long enough|new", 2);
	else
		CHECK("a comment long enough|new|third", 2);
	/* a message too large for that room: one more chunk, its
	 * continuation in free space */
	ck_assert_int_eq(change(SIZE_MAX, "big", 1000), 0);
	if (ver == 2)
		CHECK("third|a comment long enough|new|big", 3);
	else
		CHECK("a comment long enough|new|third|big", 3);
}

START_TEST(edit_v1_move_aside) { move_aside(1); }
END_TEST
START_TEST(edit_v2_move_aside) { move_aside(2); }
END_TEST

/* v2: a NIL too small for the message but large enough for a
 * continuation message (4 + 16 bytes); the chunk's 2-byte gap joins it */
START_TEST(edit_v2_cont_in_nil_and_gap)
{
	tmsg m[] = { { MT_COMMENT, "keep", 8 }, { H5_MSG_NIL, NULL, 14 } };

	make_file(2, m, 2, 2);
	ck_assert_int_eq(change(SIZE_MAX, "a message of more than twenty bytes", 0), 0);
	CHECK("keep|a message of more than twenty bytes", 2);
}
END_TEST

/* h5_ohdr_put_many: every new message in one new chunk, its
 * continuation message in free space (v1, v2) or, without any, in the
 * place of a message moved into that chunk; then a later single put */
static void put_many(int ver, bool room)
{
	tmsg with_room[] = { { MT_COMMENT, "old", 8 }, { H5_MSG_NIL, NULL, 40 } };
	tmsg no_room[] = { { MT_COMMENT, "a comment long enough", 24 } };
	const char *texts[] = { "one", "two, longer", "three" };
	h5_ohdr_new_msg nm[3];
	h5_ohdr_change c;
	h5_file *f;
	int rc;

	make_file(ver, room ? with_room : no_room, room ? 2 : 1, 0);
	for (int i = 0; i < 3; i++)
		nm[i] = (h5_ohdr_new_msg){ .type = MT_COMMENT, .body = texts[i], .len = strlen(texts[i]) + 1 };
	f = open_file(1);
	pthread_mutex_lock(&f->write_lock);
	rc = h5_ohdr_change_open(&c, f, SB_SIZE);
	if (rc == 0)
		rc = h5_ohdr_put_many(&c, f, nm, 3);
	/* one of the two per change */
	if (rc == 0)
		ck_assert_int_eq(h5_ohdr_put(&c, f, SIZE_MAX, MT_COMMENT, 0, 0, "x", 2), H5_ERR_INVAL);
	h5_err_clear();
	if (rc == 0)
		rc = h5_ohdr_commit_cow(&c, f, true);
	h5_ohdr_change_close(&c);
	pthread_mutex_unlock(&f->write_lock);
	h5_file_close(f);
	ck_assert_msg(rc == 0, "%s", h5_err_msg());
	if (room)
		CHECK("old|one|two, longer|three", 2);
	else
		CHECK("a comment long enough|one|two, longer|three", 2);
	ck_assert_int_eq(change(SIZE_MAX, "four", 0), 0);
}

START_TEST(edit_v1_put_many) { put_many(1, true); put_many(1, false); }
END_TEST
START_TEST(edit_v2_put_many) { put_many(2, true); put_many(2, false); }
END_TEST

/* h5_ohdr_put_new (the attribute batch's new names): all in free space
 * of one chunk when it holds them, else one new chunk as put_many; one
 * h5_ohdr_commit */
static void put_new(int ver, bool room)
{
	tmsg with_room[] = { { MT_COMMENT, "old", 8 }, { H5_MSG_NIL, NULL, 96 } };
	tmsg no_room[] = { { MT_COMMENT, "a comment long enough", 24 } };
	const char *texts[] = { "one", "two, longer", "three" };
	h5_ohdr_new_msg nm[3];
	h5_ohdr_change c;
	h5_file *f;
	int rc;

	make_file(ver, room ? with_room : no_room, room ? 2 : 1, 0);
	for (int i = 0; i < 3; i++)
		nm[i] = (h5_ohdr_new_msg){ .type = MT_COMMENT, .body = texts[i], .len = strlen(texts[i]) + 1 };
	f = open_file(1);
	pthread_mutex_lock(&f->write_lock);
	rc = h5_ohdr_change_open(&c, f, SB_SIZE);
	if (rc == 0)
		rc = h5_ohdr_put_new(&c, f, nm, 3);
	if (rc == 0)
		rc = h5_ohdr_commit(&c, f, true);
	h5_ohdr_change_close(&c);
	pthread_mutex_unlock(&f->write_lock);
	h5_file_close(f);
	ck_assert_msg(rc == 0, "%s", h5_err_msg());
	if (room)
		CHECK("old|one|two, longer|three", 1);
	else
		CHECK("a comment long enough|one|two, longer|three", 2);
	ck_assert_int_eq(change(SIZE_MAX, "four", 0), 0);
}

START_TEST(edit_v1_put_new) { put_new(1, true); put_new(1, false); }
END_TEST
START_TEST(edit_v2_put_new) { put_new(2, true); put_new(2, false); }
END_TEST

/* no single message's place holds the continuation message (v2: 4 + 16
 * bytes; v1: 8 + 16), only two in a row do: both move into the new chunk
 * (issue 65: a libver="latest" group's first chunk of short links, mkdir
 * ENOSPC under fsstress); v1's message count follows */
static void move_two(int ver)
{
	size_t sz = ver == 2 ? 13 : 8;
	tmsg m[] = { { MT_COMMENT, "a", sz }, { MT_COMMENT, "b", sz }, { MT_COMMENT, "c", sz },
		     { MT_COMMENT, "d", sz } };

	make_file(ver, m, 4, ver == 2 ? 2 : 0);
	ck_assert_int_eq(change(SIZE_MAX, "new", 0), 0);
	CHECK("c|d|a|b|new", 2);
	ck_assert_int_eq(change(SIZE_MAX, "more", 0), 0);
}

START_TEST(edit_v1_move_two) { move_two(1); }
END_TEST
START_TEST(edit_v2_move_two) { move_two(2); }
END_TEST

/* nothing to move aside (only a message smaller than a continuation
 * message): refused, the file unchanged */
/* The root header's birth tag (birthtag.h) as a fresh open reads it;
 * *chunk0: the bytes of chunk 0's messages (prefixes included) */
static uint32_t tag_back(size_t *chunk0)
{
	h5_file *f = open_file(0);
	h5_ohdr *oh = NULL;
	uint32_t t;

	ck_assert_msg(h5_ohdr_load(&oh, f, SB_SIZE) == 0, "%s", h5_err_msg());
	t = h5_ohdr_birthtag(oh);
	*chunk0 = 0;
	for (size_t i = 0; i < oh->nmsgs; i++)
		if (oh->msgs[i].chunk == 0)
			*chunk0 += (oh->version == 1 ? 8 : 4) + oh->msgs[i].size;
	h5_ohdr_free(oh);
	h5_file_close(f);
	return t;
}

/* A birth tag is no free space: messages put, grown, removed and moved
 * aside around it leave it, and a v2 chunk whose only NIL message it is
 * merges its gap into it, keeping the tag (libhdf5 1.10 refuses a gap
 * beside a NIL message) */
static void tag_kept(int ver)
{
	tmsg m[] = { { MT_COMMENT, "first", 8 }, { H5_MSG_NIL, "h5fT\x04\x03\x02\x01", 16 }, { H5_MSG_NIL, NULL, 48 } };
	tmsg m2[] = { { MT_COMMENT, "a comment, 15ch", 16 }, { H5_MSG_NIL, "h5fT\x04\x03\x02\x01", 16 } };
	size_t c0;
	uint8_t b[H5_BIRTHTAG_LEN];

	h5_birthtag_encode(b, 0x01020304);
	ck_assert_uint_eq(h5_birthtag_decode(b, sizeof(b)), 0x01020304);
	ck_assert_uint_eq(h5_birthtag_decode(b, sizeof(b) - 1), 0);
	ck_assert_uint_ne(h5_birthtag_new(), 0);
	make_file(ver, m, 3, 0);
	ck_assert_uint_eq(tag_back(&c0), 0x01020304);
	ck_assert_int_eq(change(SIZE_MAX, "second", 0), 0);
	CHECK("first|second", 1);
	ck_assert_int_eq(change(0, "first, longer", 0), 0);
	CHECK("second|first, longer", 1);
	ck_assert_uint_eq(tag_back(&c0), 0x01020304);
	ck_assert_int_eq(change(SIZE_MAX, "big", 1000), 0);
	CHECK("second|first, longer|big", 2);
	ck_assert_uint_eq(tag_back(&c0), 0x01020304);
	if (ver != 2)
		return;
	/* no free space but the tag: the comment moves aside, the
	 * continuation message takes exactly its place, the 3-byte gap
	 * joins the tag */
	make_file(ver, m2, 2, 3);
	ck_assert_int_eq(change(SIZE_MAX, "new", 0), 0);
	CHECK("a comment, 15ch|new", 2);
	ck_assert_uint_eq(tag_back(&c0), 0x01020304);
	ck_assert_uint_eq(c0, 4 + 16 + 4 + 16 + 3);
}

START_TEST(edit_v1_tag_kept) { tag_kept(1); }
END_TEST
START_TEST(edit_v2_tag_kept) { tag_kept(2); }
END_TEST

START_TEST(edit_nospace)
{
	tmsg m[] = { { MT_COMMENT, "x", 8 } };

	make_file(2, m, 1, 0);
	ck_assert_int_eq(change(SIZE_MAX, "does not fit", 0), H5_ERR_NOSPC);
	CHECK("x", 1);
}
END_TEST

/* ---- encoders and the text parser ----------------------------------------------- */

START_TEST(enc_number_types)
{
	static const struct { char k; unsigned size; bool big; } cases[] = {
		{ 'i', 1, false }, { 'u', 2, true }, { 'i', 4, false }, { 'u', 8, false },
		{ 'f', 2, false }, { 'f', 4, true }, { 'f', 8, false },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint8_t b[32];
		size_t n;
		h5_dtype *t = NULL;

		ck_assert_int_eq(h5_dtype_encode_number(b, &n, cases[i].k, cases[i].size, cases[i].big), 0);
		ck_assert_int_eq(h5_dtype_decode(&t, b, n, NULL), 0);
		ck_assert_uint_eq(t->size, cases[i].size);
		ck_assert_int_eq(t->big_endian, cases[i].big);
		ck_assert_int_eq(t->cls, cases[i].k == 'f' ? H5T_FLOAT : H5T_INTEGER);
		if (cases[i].k == 'f')
			ck_assert_int_eq(h5_dtype_float_kind(t), H5_FLOAT_IEEE);
		else
			ck_assert_int_eq(t->is_signed, cases[i].k == 'i');
		h5_dtype_free(t);
	}
	ck_assert_int_eq(h5_dtype_encode_number((uint8_t[32]){ 0 }, &(size_t){ 0 }, 'f', 1, false), H5_ERR_INVAL);
}
END_TEST

START_TEST(enc_attr_roundtrip)
{
	h5_fmt fmt = { .sizeof_addr = 8, .sizeof_size = 8 };
	uint8_t dt[32], ds[32], *msg = NULL;
	size_t dtl, dsl, ml;
	uint64_t dims[1] = { 3 };
	int32_t vals[3] = { 1, -2, 3 };
	h5_attr_hdr h = { .version = 1, .name = (const uint8_t *)"abc", .name_size = 4 };
	h5_attr_msg a;

	for (unsigned v = 1; v <= 3; v++) {
		ck_assert_int_eq(h5_dtype_encode_number(dt, &dtl, 'i', 4, false), 0);
		ck_assert_int_eq(h5_dspace_encode(ds, &dsl, sizeof(ds), &fmt, v == 1 ? 1 : 2, 1, dims), 0);
		h.version = (uint8_t)v;
		h.dt = dt;
		h.dt_size = dtl;
		h.ds = ds;
		h.ds_size = dsl;
		ck_assert_int_eq(h5_attr_encode(&msg, &ml, &h, (const uint8_t *)vals, sizeof(vals)), 0);
		ck_assert_msg(h5_attr_decode(&a, NULL, &fmt, msg, ml) == 0, "%s", h5_err_msg());
		ck_assert_str_eq(a.name, "abc");
		ck_assert_uint_eq(a.space.rank, 1);
		ck_assert_uint_eq(a.space.dims[0], 3);
		ck_assert_uint_eq(a.data_size, sizeof(vals));
		ck_assert_mem_eq(a.data, vals, sizeof(vals));
		h5_attr_msg_clear(&a);
		free(msg);
	}
	/* the variable-length string type h5py writes for a str */
	{
		h5_dtype *t = NULL;

		ck_assert_int_eq(h5_dtype_encode_vstr(dt, &dtl, 1), 0);
		ck_assert_int_eq(h5_dtype_decode(&t, dt, dtl, NULL), 0);
		ck_assert_int_eq(t->cls, H5T_VLEN);
		ck_assert_uint_eq(t->vlen_type, 1);
		ck_assert_uint_eq(t->cset, 1);
		ck_assert_uint_eq(t->size, 16);
		h5_dtype_free(t);
	}
}
END_TEST

static void parse_ok(char k, unsigned size, bool big, const char *text, uint64_t n, const void *want, size_t wl)
{
	uint8_t b[32], *out = NULL;
	size_t bl, ol;
	h5_dtype *t = NULL;

	ck_assert_int_eq(h5_dtype_encode_number(b, &bl, k, size, big), 0);
	ck_assert_int_eq(h5_dtype_decode(&t, b, bl, NULL), 0);
	ck_assert_msg(h5_value_parse(&out, &ol, t, text, strlen(text), n) == 0, "%s: %s", text, h5_err_msg());
	ck_assert_uint_eq(ol, wl);
	ck_assert_mem_eq(out, want, wl);
	free(out);
	h5_dtype_free(t);
}

static int parse_rc(char k, unsigned size, const char *text, uint64_t n)
{
	uint8_t b[32], *out = NULL;
	size_t bl, ol;
	h5_dtype *t = NULL;
	int rc;

	ck_assert_int_eq(h5_dtype_encode_number(b, &bl, k, size, false), 0);
	ck_assert_int_eq(h5_dtype_decode(&t, b, bl, NULL), 0);
	rc = h5_value_parse(&out, &ol, t, text, strlen(text), n);
	free(out);
	h5_dtype_free(t);
	return rc;
}

START_TEST(parse_numbers)
{
	double d[3] = { 1.5, -2.25, 1e-05 };
	float fl = 0.1f;

	parse_ok('i', 4, true, "258", 1, "\x00\x00\x01\x02", 4);
	parse_ok('i', 2, false, "-1, 2 ,3", 3, "\xff\xff\x02\x00\x03\x00", 6);
	parse_ok('u', 1, false, "255", 1, "\xff", 1);
	parse_ok('i', 8, false, "-9223372036854775808", 1, "\0\0\0\0\0\0\0\x80", 8);
	parse_ok('f', 8, false, "1.5, -2.25, 1e-05", 3, d, sizeof(d));
	parse_ok('f', 4, false, " 0.1 ", 1, &fl, 4);
	parse_ok('f', 2, false, "1.0, -2, 65504, inf", 4, "\x00\x3c\x00\xc0\xff\x7b\x00\x7c", 8);
	/* a finite number too large for its float: out of range, never inf
	 * (issue 47); 65519 still rounds to 65504; underflow rounds to 0 */
	ck_assert_int_eq(parse_rc('f', 2, "1e9", 1), H5_ERR_INVAL);
	ck_assert_int_eq(parse_rc('f', 2, "65520", 1), H5_ERR_INVAL);
	ck_assert_int_eq(parse_rc('f', 2, "-65520", 1), H5_ERR_INVAL);
	ck_assert_int_eq(parse_rc('f', 2, "65519", 1), 0);
	ck_assert_int_eq(parse_rc('f', 4, "1e39", 1), H5_ERR_INVAL);
	ck_assert_int_eq(parse_rc('f', 4, "3.4028234e38", 1), 0);
	ck_assert_int_eq(parse_rc('f', 8, "1e400", 1), H5_ERR_INVAL);
	ck_assert_int_eq(parse_rc('f', 8, "1e-400", 1), 0);
	ck_assert_int_eq(parse_rc('u', 1, "256", 1), H5_ERR_INVAL);
	ck_assert_int_eq(parse_rc('u', 4, "-1", 1), H5_ERR_INVAL);
	ck_assert_int_eq(parse_rc('i', 1, "-129", 1), H5_ERR_INVAL);
	ck_assert_int_eq(parse_rc('i', 4, "1.5", 1), H5_ERR_INVAL);
	ck_assert_int_eq(parse_rc('i', 4, "abc", 1), H5_ERR_INVAL);
	ck_assert_int_eq(parse_rc('i', 4, "1, 2", 3), H5_ERR_INVAL);
	ck_assert_int_eq(parse_rc('i', 4, "1, 2, 3, 4", 3), H5_ERR_INVAL);
	ck_assert_int_eq(parse_rc('i', 4, "1,", 1), H5_ERR_INVAL);
	ck_assert_int_eq(parse_rc('f', 8, "", 1), H5_ERR_INVAL);
	ck_assert_int_eq(parse_rc('f', 8, "nan, inf, -inf", 3), 0);
	ck_assert_int_eq(parse_rc('f', 8, "", 0), 0);
}
END_TEST

/* ---- adding links (link_write.c) on files h5py wrote -------------------------- */

static const char gen_links[] =
	"import sys, os\n"
	"try:\n"
	"    import h5py, numpy as np\n"
	"except ImportError:\n"
	"    sys.exit(77)\n"
	"d = sys.argv[1]\n"
	"if len(sys.argv) > 2:\n"
	"    with h5py.File(sys.argv[2], 'r') as f:\n"
	"        ok = (f['g/soft'][()].tolist() == list(range(4)) and f['g/alias'][()].tolist() == list(range(4))\n"
	"              and f['g'].get('soft', getlink=True).path == '/d' and f['t/x'][()].tolist() == list(range(4))\n"
	"              and list(f['t'].keys()) == ['a', 'x'] and '\u00e9t\u00e9' in f)\n"
	"    sys.exit(0 if ok else 1)\n"
	"with h5py.File(os.path.join(d, 'f.h5'), 'w', libver='latest') as f:\n"
	"    f.create_group('g')\n"
	"    f.create_dataset('d', data=np.arange(4))\n"
	"    t = f.create_group('t', track_order=True)\n"
	"    t['a'] = h5py.SoftLink('/d')\n"
	"with h5py.File(os.path.join(d, 'old.h5'), 'w') as f:\n"
	"    f.create_group('g')\n";

START_TEST(link_insert_compact)
{
	char dir[64] = "/tmp/h5fs-test-links-XXXXXX", fpath[128], old[128], args[300];
	uint64_t root, g, d, t;
	h5_file *f = NULL;
	h5_link l;
	int rc = test_py_run(dir, gen_links, NULL);

	if (rc == 77 || rc == TEST_PY_NO_PYTHON) {
		test_py_rmdir(dir);
		return;         /* no h5py: nothing to compare with */
	}
	ck_assert_int_eq(rc, 0);
	snprintf(fpath, sizeof(fpath), "%s/f.h5", dir);
	snprintf(old, sizeof(old), "%s/old.h5", dir);
	ck_assert_int_eq(h5_file_open(&f, fpath, &(h5_open_opts){ .writable = 1 }), 0);
	ck_assert_int_eq(h5_path_lookup(&root, f, "/"), 0);
	ck_assert_int_eq(h5_path_lookup(&g, f, "/g"), 0);
	ck_assert_int_eq(h5_path_lookup(&d, f, "/d"), 0);
	ck_assert_int_eq(h5_path_lookup(&t, f, "/t"), 0);
	ck_assert_int_eq(h5_link_insert(f, g, "soft", 4, H5_LINK_SOFT, 0, "/d", 0), 0);
	/* (a test of the message only: /d's reference count is not raised) */
	ck_assert_int_eq(h5_link_insert(f, g, "alias", 5, H5_LINK_HARD, d, NULL, 0), 0);
	ck_assert_int_eq(h5_link_insert(f, t, "x", 1, H5_LINK_SOFT, 0, "/d", 0), 0);
	ck_assert_int_eq(h5_link_insert(f, root, "\xc3\xa9t\xc3\xa9", 5, H5_LINK_SOFT, 0, "/g", 1), 0);
	ck_assert_int_eq(h5_link_insert(f, g, "soft", 4, H5_LINK_SOFT, 0, "/d", 0), H5_ERR_INVAL);
	ck_assert_int_eq(h5_group_lookup(&l, f, g, "alias"), 0);
	ck_assert_uint_eq(l.addr, d);
	h5_link_clear(&l);
	ck_assert_int_eq(h5_group_lookup(&l, f, t, "x"), 0);
	ck_assert_int_eq(l.has_corder, 1);
	ck_assert_int_eq(l.corder, 1);
	h5_link_clear(&l);
	h5_file_close(f);
	snprintf(args, sizeof(args), "'%s'", fpath);
	{
		char vdir[64] = "/tmp/h5fs-test-links-v-XXXXXX";

		ck_assert_int_eq(test_py_run(vdir, gen_links, args), 0);
		test_py_rmdir(vdir);
	}
	/* compact storage full (8 links): the 9th moves them to dense
	 * storage, as libhdf5 does; every link is found there after */
	ck_assert_int_eq(h5_file_open(&f, fpath, &(h5_open_opts){ .writable = 1 }), 0);
	for (int i = 0; i < 6; i++) {
		char n[8];

		snprintf(n, sizeof(n), "s%d", i);
		ck_assert_int_eq(h5_link_insert(f, g, n, strlen(n), H5_LINK_SOFT, 0, "/d", 0), 0);
	}
	ck_assert_int_eq(h5_link_insert(f, g, "s9", 2, H5_LINK_SOFT, 0, "/d", 0), 0);
	ck_assert_int_eq(h5_link_insert(f, g, "s9", 2, H5_LINK_SOFT, 0, "/d", 0), H5_ERR_INVAL);
	ck_assert_int_eq(h5_group_lookup(&l, f, g, "alias"), 0);
	ck_assert_uint_eq(l.addr, d);
	h5_link_clear(&l);
	for (int i = 0; i < 6; i++) {
		char n[8];

		snprintf(n, sizeof(n), "s%d", i);
		ck_assert_int_eq(h5_group_lookup(&l, f, g, n), 0);
		ck_assert_str_eq(l.target, "/d");
		h5_link_clear(&l);
	}
	ck_assert_int_eq(h5_link_delete(f, g, "s9", 2, 0), 0);
	ck_assert_int_eq(h5_group_lookup(&l, f, g, "s9"), H5_ERR_NOTFOUND);
	h5_file_close(f);
	/* a symbol-table group (write/link_stab.c): the link is there after,
	 * and a name it has is refused */
	ck_assert_int_eq(h5_file_open(&f, old, &(h5_open_opts){ .writable = 1 }), 0);
	ck_assert_int_eq(h5_path_lookup(&g, f, "/g"), 0);
	ck_assert_int_eq(h5_link_insert(f, g, "x", 1, H5_LINK_SOFT, 0, "/", 0), 0);
	ck_assert_int_eq(h5_link_insert(f, g, "x", 1, H5_LINK_SOFT, 0, "/", 0), H5_ERR_INVAL);
	ck_assert_int_eq(h5_group_lookup(&l, f, g, "x"), 0);
	ck_assert_int_eq(l.type, H5_LINK_SOFT);
	ck_assert_str_eq(l.target, "/");
	h5_link_clear(&l);
	h5_file_close(f);
	test_py_rmdir(dir);
}
END_TEST

/* The daemon's batches of mkdir and rmdir (issue 70): groups made loose,
 * linked in one batch, then most of them removed in one batch; the
 * check before refuses what rmdir refuses. Both forms. */
static void loose_groups(const char *hpath)
{
	char *names[40], buf[40][8];
	uint64_t g, addrs[40], t, sub;
	h5_file *f = NULL;
	h5_link l;
	h5_obj_info info;
	size_t done = 0;

	ck_assert_int_eq(h5_file_open(&f, hpath, &(h5_open_opts){ .writable = 1 }), 0);
	ck_assert_int_eq(h5_path_lookup(&g, f, "/g"), 0);
	for (int i = 0; i < 40; i++) {
		snprintf(buf[i], sizeof(buf[i]), "l%02d", i);
		names[i] = buf[i];
		ck_assert_int_eq(h5_group_create_loose(&addrs[i], f, g), 0);
		/* not linked yet */
		ck_assert_int_eq(h5_group_lookup(&l, f, g, names[i]), H5_ERR_NOTFOUND);
		h5_err_clear();
	}
	ck_assert_int_eq(h5_link_insert_batch(&done, f, g, names, addrs, 40), 0);
	ck_assert_uint_eq(done, 40);
	for (int i = 0; i < 40; i++) {
		ck_assert_int_eq(h5_group_lookup(&l, f, g, names[i]), 0);
		ck_assert_uint_eq(l.addr, addrs[i]);
		h5_link_clear(&l);
		ck_assert_int_eq(h5_obj_info_get(&info, f, addrs[i]), 0);
		ck_assert_int_eq(info.kind, H5_OBJ_GROUP);
	}
	ck_assert_int_eq(h5_group_create(&sub, f, addrs[39], "in", 2), 0);
	ck_assert_int_eq(h5_group_rmdir_check(&t, f, g, "l05"), 0);
	ck_assert_uint_eq(t, addrs[5]);
	ck_assert_int_eq(h5_group_rmdir_check(&t, f, g, "l39"), H5_ERR_PERM);
	h5_err_clear();
	ck_assert_int_eq(h5_group_rmdir_check(&t, f, g, "nope"), H5_ERR_NOTFOUND);
	h5_err_clear();
	/* a batch holding a name the group has: refused whole (a dense
	 * group's one commit, a symbol table's), nothing of it linked */
	{
		char *dup[2] = { "fresh", "l07" };
		uint64_t da[2];

		ck_assert_int_eq(h5_group_create_loose(&da[0], f, g), 0);
		ck_assert_int_eq(h5_group_create_loose(&da[1], f, g), 0);
		ck_assert_int_eq(h5_link_insert_batch(&done, f, g, dup, da, 2), H5_ERR_INVAL);
		h5_err_clear();
		ck_assert_uint_eq(done, 0);
		ck_assert_int_eq(h5_group_lookup(&l, f, g, "fresh"), H5_ERR_NOTFOUND);
		h5_err_clear();
		h5_dataset_loose_drop(f, da[0]);
		h5_dataset_loose_drop(f, da[1]);
	}
	ck_assert_int_eq(h5_link_remove_batch(&done, f, g, names, 30), 0);
	ck_assert_uint_eq(done, 30);
	h5_file_close(f);
	ck_assert_int_eq(h5_file_open(&f, hpath, NULL), 0);
	ck_assert_int_eq(h5_path_lookup(&g, f, "/g"), 0);
	for (int i = 0; i < 40; i++) {
		ck_assert_int_eq(h5_group_lookup(&l, f, g, names[i]), i < 30 ? H5_ERR_NOTFOUND : 0);
		h5_link_clear(&l);
		h5_err_clear();
	}
	ck_assert_int_eq(h5_path_lookup(&sub, f, "/g/l39/in"), 0);
	h5_file_close(f);
}

/* each(FILE) on gen_links' two files: old.h5 (symbol-table groups) and
 * f.h5 (compact links, going dense); nothing without h5py */
static void on_link_files(char *dir, void (*each)(const char *hpath))
{
	char hpath[128];
	int rc = test_py_run(dir, gen_links, NULL);

	if (rc == 77 || rc == TEST_PY_NO_PYTHON) {
		test_py_rmdir(dir);
		return;
	}
	ck_assert_int_eq(rc, 0);
	snprintf(hpath, sizeof(hpath), "%s/old.h5", dir);
	each(hpath);
	snprintf(hpath, sizeof(hpath), "%s/f.h5", dir);
	each(hpath);
	test_py_rmdir(dir);
}

START_TEST(group_batches)
{
	char dir[64] = "/tmp/h5fs-test-gbatch-XXXXXX";

	/* symbol table: one commit a batch; compact: a commit a link, then
	 * dense: one a batch */
	on_link_files(dir, loose_groups);
}
END_TEST

/* A new dataset's header is in the cache from its write on
 * (h5_ohdr_prime, write/dset_create.c: create(2)'s entry read it back),
 * decoded as a read of FILE decodes it: every field and message the
 * same as h5_ohdr_load's from FILE; the data written after (the first
 * rows) read as a fresh open reads them. */
static void primed_headers(const char *hpath)
{
	h5_dset_new d = { .rank = 1, .kind = 'u', .size = 1, .chunked = 1, .growable = 1, .chunk = { 4096 } };
	h5_file *f = NULL;
	h5_ohdr *a = NULL, *b = NULL;
	uint64_t addr;

	ck_assert_int_eq(h5_file_open(&f, hpath, &(h5_open_opts){ .writable = 1 }), 0);
	ck_assert_msg(h5_dataset_create_loose(&addr, f, &d) == 0, "%s", h5_err_msg());
	ck_assert(h5_cache_holds(f->meta, H5_CK_OHDR, addr));
	ck_assert_int_eq(h5_ohdr_get(&a, f, addr), 0);
	ck_assert_int_eq(h5_ohdr_load(&b, f, addr), 0);
	ck_assert_uint_eq(a->version, b->version);
	ck_assert_uint_eq(a->flags, b->flags);
	ck_assert_uint_eq(a->refcount, b->refcount);
	ck_assert_uint_eq(a->types, b->types);
	ck_assert_uint_eq(a->nchunks, b->nchunks);
	ck_assert_uint_eq(a->nmsgs, b->nmsgs);
	for (size_t i = 0; i < a->nmsgs; i++) {
		ck_assert_uint_eq(a->msgs[i].type, b->msgs[i].type);
		ck_assert_uint_eq(a->msgs[i].flags, b->msgs[i].flags);
		ck_assert_uint_eq(a->msgs[i].size, b->msgs[i].size);
		ck_assert_uint_eq(a->msgs[i].addr, b->msgs[i].addr);
		ck_assert_int_eq(memcmp(a->msgs[i].data, b->msgs[i].data, a->msgs[i].size), 0);
	}
	h5_ohdr_release(f, a);
	h5_ohdr_free(b);
	h5_dataset_loose_drop(f, addr);
	h5_file_close(f);
}

START_TEST(dataset_header_primed)
{
	char dir[64] = "/tmp/h5fs-test-primed-XXXXXX";

	/* a v1 header (h5py's default format) in both files: the engine
	 * writes its new datasets' headers so in either */
	on_link_files(dir, primed_headers);
}
END_TEST

/* mkdir's slots taken ahead (write/gslot.c, issue 70 item 3): the first
 * loose group is made under write_lock and fills the pool; the next are
 * written into its slots: distinct addresses, each a group with a birth
 * tag of its own; a slot written lowers the next link commit's stage
 * start to the allocation end before it; the batch links them all; the
 * slots left are freed at the compaction (unmount), the allocation end
 * dropping back below them; slots of a removed parent are freed too. */
static void slot_groups(const char *hpath)
{
	char *names[20], buf[20][8];
	uint64_t g, addrs[20], end_before, start, seq;
	uint32_t tags[20];
	h5_file *f = NULL;
	h5_ohdr *oh = NULL;
	h5_link l;
	size_t done = 0;

	ck_assert_int_eq(h5_file_open(&f, hpath, &(h5_open_opts){ .writable = 1 }), 0);
	ck_assert_int_eq(h5_path_lookup(&g, f, "/g"), 0);
	for (int i = 0; i < 20; i++) {
		snprintf(buf[i], sizeof(buf[i]), "s%02d", i);
		names[i] = buf[i];
		pthread_mutex_lock(&f->write_lock);
		end_before = h5_space_end(f);
		pthread_mutex_unlock(&f->write_lock);
		ck_assert_int_eq(h5_group_create_loose(&addrs[i], f, g), 0);
		if (i == 1) {
			/* from a slot the first one's fill took: below the end */
			ck_assert_uint_lt(addrs[i], end_before);
			pthread_mutex_lock(&f->write_lock);
			start = UINT64_MAX;
			h5_gslot_stage(f, &start, &seq);
			pthread_mutex_unlock(&f->write_lock);
			ck_assert_uint_le(start, addrs[i]);
		}
		ck_assert_int_eq(h5_ohdr_load(&oh, f, addrs[i]), 0);
		ck_assert(h5_ohdr_is_group(oh));
		tags[i] = h5_ohdr_birthtag(oh);
		ck_assert_uint_ne(tags[i], 0);
		h5_ohdr_free(oh);
		oh = NULL;
		for (int j = 0; j < i; j++) {
			ck_assert_uint_ne(addrs[j], addrs[i]);
			ck_assert_uint_ne(tags[j], tags[i]);
		}
	}
	ck_assert_int_eq(h5_link_insert_batch(&done, f, g, names, addrs, 20), 0);
	ck_assert_uint_eq(done, 20);
	for (int i = 0; i < 20; i++) {
		ck_assert_int_eq(h5_group_lookup(&l, f, g, names[i]), 0);
		ck_assert_uint_eq(l.addr, addrs[i]);
		h5_link_clear(&l);
	}
	/* the pool holds slots past the last group: the unmount's
	 * compaction frees them and FILE ends at or below where it did */
	pthread_mutex_lock(&f->write_lock);
	end_before = h5_space_end(f);
	pthread_mutex_unlock(&f->write_lock);
	ck_assert_int_eq(h5_file_compact(f), 0);
	pthread_mutex_lock(&f->write_lock);
	ck_assert_uint_le(h5_space_end(f), end_before);
	pthread_mutex_unlock(&f->write_lock);
	/* a slot of a parent removed is not handed out for its successor
	 * at that address: rmdir of a group that has a pool frees it */
	{
		uint64_t sub, in[2], t;
		char *one[1] = { "x" };

		ck_assert_int_eq(h5_path_lookup(&sub, f, "/g/s03"), 0);
		ck_assert_int_eq(h5_group_create_loose(&in[0], f, sub), 0);
		ck_assert_int_eq(h5_link_insert_batch(&done, f, sub, one, in, 1), 0);
		ck_assert_int_eq(h5_link_delete(f, sub, "x", 1, 1), 0);
		ck_assert_int_eq(h5_group_rmdir_check(&t, f, g, "s03"), 0);
		ck_assert_int_eq(h5_link_delete(f, g, "s03", 3, 1), 0);
		ck_assert_int_eq(h5_group_create_loose(&in[1], f, g), 0);
		ck_assert_int_eq(h5_ohdr_load(&oh, f, in[1]), 0);
		ck_assert(h5_ohdr_is_group(oh));
		h5_ohdr_free(oh);
		h5_dataset_loose_drop(f, in[1]);
	}
	h5_file_close(f);
	ck_assert_int_eq(h5_file_open(&f, hpath, NULL), 0);
	ck_assert_int_eq(h5_path_lookup(&g, f, "/g"), 0);
	for (int i = 0; i < 20; i++) {
		ck_assert_int_eq(h5_group_lookup(&l, f, g, names[i]), i == 3 ? H5_ERR_NOTFOUND : 0);
		h5_link_clear(&l);
		h5_err_clear();
	}
	h5_file_close(f);
}

START_TEST(group_slots)
{
	char dir[64] = "/tmp/h5fs-test-gslot-XXXXXX";

	on_link_files(dir, slot_groups);
}
END_TEST

/* The notes of what may move down at unmount (ohdr_edit.h): an object is
 * noted once per kind, a forgotten note's slot is taken first, and past
 * 32 the oldest goes; h5_ohdr_notes_each hands the notes of one kind on
 * until one moves, passing over one that fails. */
static unsigned seen_n;
static uint64_t seen[64];

static int note_fn(h5_file *f, uint64_t hdr)
{
	(void)f;
	seen[seen_n++] = hdr;
	if (hdr == 13)
		return h5_err_set(H5_ERR_FORMAT, "not a header any more");
	return hdr == 14 ? 1 : 0;
}

START_TEST(notes_ring)
{
	h5_file *f = calloc(1, sizeof(*f));
	unsigned cap = sizeof(h5_ws(f)->conts) / sizeof(h5_ws(f)->conts[0]), n;

	ck_assert_ptr_nonnull(f);
	h5_ohdr_note(f, H5_NOTE_GROUP, 10);
	h5_ohdr_note(f, H5_NOTE_GROUP, 10);
	h5_ohdr_note(f, H5_NOTE_ATTRS, 10);
	h5_ohdr_note(f, H5_NOTE_CONT, 10);
	h5_ohdr_note(f, H5_NOTE_CONT, 10);
	ck_assert_uint_eq(h5_ws(f)->nconts, 3);        /* once per (object, kind) */
	h5_ohdr_note(f, H5_NOTE_GROUP, 11);
	h5_ohdr_forget_conts(f, 10);
	h5_ohdr_note(f, H5_NOTE_GROUP, 12);
	ck_assert_uint_eq(h5_ws(f)->nconts, 4);        /* a forgotten slot taken */
	ck_assert_uint_eq(h5_ws(f)->conts[0].hdr, 12);
	for (uint64_t h = 100; h < 100 + 2 * cap; h++)
		h5_ohdr_note(f, H5_NOTE_CONT, h);
	ck_assert_uint_eq(h5_ws(f)->nconts, cap);
	n = 0;
	for (unsigned i = 0; i < cap; i++)
		n += h5_ws(f)->conts[i].hdr >= 100 + cap;      /* the newest kept */
	ck_assert_uint_ge(n, cap - 4);
	/* handed on by kind until one moved; a failing one passed over */
	f->ws_free(f->ws);      /* (what h5_file_close does with the write state) */
	memset(f, 0, sizeof(*f));
	for (uint64_t h = 12; h <= 15; h++)
		h5_ohdr_note(f, H5_NOTE_ATTRS, h);
	h5_ohdr_note(f, H5_NOTE_GROUP, 16);
	seen_n = 0;
	ck_assert_int_eq(h5_ohdr_notes_each(f, H5_NOTE_ATTRS, note_fn), 1);
	ck_assert_uint_eq(seen_n, 3);
	ck_assert_uint_eq(seen[0], 12);
	ck_assert_uint_eq(seen[1], 13);
	ck_assert_uint_eq(seen[2], 14);
	seen_n = 0;
	ck_assert_int_eq(h5_ohdr_notes_each(f, H5_NOTE_CONT, note_fn), 0);
	ck_assert_uint_eq(seen_n, 0);
	f->ws_free(f->ws);
	free(f);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("ohdr_edit");
	TCase *tc = tcase_create("ohdr_edit");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, edit_v1_into_nil);
	tcase_add_test(tc, edit_v2_into_nil);
	tcase_add_test(tc, edit_v1_move_aside);
	tcase_add_test(tc, edit_v2_move_aside);
	tcase_add_test(tc, edit_v2_cont_in_nil_and_gap);
	tcase_add_test(tc, edit_v1_put_many);
	tcase_add_test(tc, edit_v2_put_many);
	tcase_add_test(tc, edit_v1_put_new);
	tcase_add_test(tc, edit_v2_put_new);
	tcase_add_test(tc, edit_v1_move_two);
	tcase_add_test(tc, edit_v2_move_two);
	tcase_add_test(tc, edit_nospace);
	tcase_add_test(tc, edit_v1_tag_kept);
	tcase_add_test(tc, edit_v2_tag_kept);
	tcase_add_test(tc, enc_number_types);
	tcase_add_test(tc, enc_attr_roundtrip);
	tcase_add_test(tc, parse_numbers);
	tcase_add_test(tc, link_insert_compact);
	tcase_add_test(tc, group_batches);
	tcase_add_test(tc, group_slots);
	tcase_add_test(tc, dataset_header_primed);
	tcase_add_test(tc, notes_ring);
	suite_add_tcase(s, tc);
	return s;
}

H5_TEST_MAIN(make_suite)
