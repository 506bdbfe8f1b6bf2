/* test_ohdr.c - object headers (ohdr.c) and object info (object.c):
 * built v1/v2 headers with continuations, corruptions, cycles and limits,
 * shared messages, modification times; h5py files end to end; and a walk
 * over every file of the corpus. */
#define _GNU_SOURCE /* nftw */
#include "testutil.h"
#include "base.h"
#include "rd.h"
#include "checksum.h"
#include "cache.h"
#include "file.h"
#include "ohdr.h"

#include <ftw.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const uint8_t SIG[8] = { 0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n' };

/* ---- image builders -------------------------------------------------- */

typedef struct tmsg {
	uint16_t type;
	uint8_t flags;
	const void *data;
	uint16_t size;
	uint16_t crt;           /* v2 with creation order */
} tmsg;

/* Start an image: a v3 superblock (8-byte addresses) whose root is set by
 * img_finish. Objects are appended after it at b->len. */
static void img_start(tbuf *b)
{
	tb_put(b, SIG, 8);
	tb_u8(b, 3);
	tb_u8(b, 8);
	tb_u8(b, 8);
	tb_u8(b, 0);
	tb_u64(b, 0);
	tb_u64(b, UINT64_MAX);
	tb_u64(b, 0);   /* EOF: patched */
	tb_u64(b, 0);   /* root: patched */
	tb_u32(b, 0);   /* checksum: patched */
}

static h5_file *img_open(tbuf *b, uint64_t root)
{
	h5_file *f;

	h5_le_encode(b->p + 28, b->len, 8);
	h5_le_encode(b->p + 36, root, 8);
	h5_le_encode(b->p + 44, h5_checksum_metadata(b->p, 44), 4);
	ck_assert_msg(h5_file_open_mem(&f, b->p, b->len, NULL) == 0, "%s", h5_err_msg());
	return f;
}

static size_t v1_msgs_size(const tmsg *m, size_t n)
{
	size_t s = 0;

	for (size_t i = 0; i < n; i++)
		s += 8 + ((m[i].size + 7u) & ~7u);
	return s;
}

static void v1_msgs(tbuf *b, const tmsg *m, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint16_t padded = (uint16_t)((m[i].size + 7u) & ~7u);

		tb_u16(b, m[i].type);
		tb_u16(b, padded);
		tb_u8(b, m[i].flags);
		tb_zero(b, 3);
		tb_put(b, m[i].data, m[i].size);
		tb_zero(b, padded - m[i].size);
	}
}

/* IV.A.1.a: 16-byte prefix then the messages of chunk 0. */
static void v1_hdr(tbuf *b, uint32_t refcount, const tmsg *m, size_t n)
{
	tb_u8(b, 1);
	tb_u8(b, 0);
	tb_u16(b, (uint16_t)n);
	tb_u32(b, refcount);
	tb_u32(b, (uint32_t)v1_msgs_size(m, n));
	tb_zero(b, 4);
	v1_msgs(b, m, n);
}

static size_t v2_msgs_size(uint8_t flags, const tmsg *m, size_t n)
{
	size_t s = 0;

	for (size_t i = 0; i < n; i++)
		s += ((flags & 0x04) ? 6 : 4) + m[i].size;
	return s;
}

static void v2_msgs(tbuf *b, uint8_t flags, const tmsg *m, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		tb_u8(b, (uint8_t)m[i].type);
		tb_u16(b, m[i].size);
		tb_u8(b, m[i].flags);
		if (flags & 0x04)
			tb_u16(b, m[i].crt);
		tb_put(b, m[i].data, m[i].size);
	}
}

/* IV.A.1.b: "OHDR", version, flags, [times], [phase change], chunk 0 size,
 * messages, gap, checksum. */
static void v2_hdr(tbuf *b, uint8_t flags, const uint32_t *times, const tmsg *m, size_t n, size_t gap)
{
	size_t start = b->len;

	tb_str(b, "OHDR");
	tb_u8(b, 2);
	tb_u8(b, flags);
	if (flags & 0x20)
		for (int i = 0; i < 4; i++)
			tb_u32(b, times[i]);
	if (flags & 0x10) {
		tb_u16(b, 12);
		tb_u16(b, 10);
	}
	tb_uint(b, v2_msgs_size(flags, m, n) + gap, 1u << (flags & 3));
	v2_msgs(b, flags, m, n);
	tb_zero(b, gap);
	tb_checksum(b, start);
}

static void v2_cont(tbuf *b, uint8_t flags, const tmsg *m, size_t n, size_t gap)
{
	size_t start = b->len;

	tb_str(b, "OCHK");
	v2_msgs(b, flags, m, n);
	tb_zero(b, gap);
	tb_checksum(b, start);
}

static size_t v2_cont_size(uint8_t flags, const tmsg *m, size_t n, size_t gap)
{
	return 8 + v2_msgs_size(flags, m, n) + gap;
}

static void cont_body(uint8_t out[16], uint64_t addr, uint64_t len)
{
	h5_le_encode(out, addr, 8);
	h5_le_encode(out + 8, len, 8);
}

static const uint8_t DATA8[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
static const uint8_t DATA16[16] = { 9, 9, 9, 9, 9, 9, 9, 9, 8, 8, 8, 8, 8, 8, 8, 8 };

/* ---- version 1 ------------------------------------------------------- */

START_TEST(v1_with_continuation)
{
	tbuf b = { 0 };
	uint8_t cont[16], mt[8] = { 1, 0, 0, 0 };
	tmsg m0[3], m1[2];
	uint64_t H, C;
	size_t c_len;
	h5_file *f;
	h5_ohdr *oh;
	int64_t t;

	img_start(&b);
	H = b.len;
	h5_le_encode(mt + 4, 1700000000, 4);
	m1[0] = (tmsg){ H5_MSG_ATTR, 0, DATA16, 16, 0 };
	m1[1] = (tmsg){ H5_MSG_NIL, 0, DATA8, 8, 0 };
	c_len = v1_msgs_size(m1, 2);
	m0[0] = (tmsg){ H5_MSG_DSPACE, 1, DATA8, 5, 0 };
	m0[1] = (tmsg){ H5_MSG_CONT, 0, cont, 16, 0 };
	m0[2] = (tmsg){ H5_MSG_MTIME, 0, mt, 8, 0 };
	C = H + 16 + v1_msgs_size(m0, 3) + 24; /* leave a hole */
	cont_body(cont, C, c_len);
	v1_hdr(&b, 3, m0, 3);
	tb_zero(&b, 24);
	ck_assert_uint_eq(b.len, C);
	v1_msgs(&b, m1, 2);
	f = img_open(&b, H);

	ck_assert_msg(h5_ohdr_load(&oh, f, H) == 0, "%s", h5_err_msg());
	ck_assert_uint_eq(oh->version, 1);
	ck_assert_uint_eq(oh->addr, H);
	ck_assert_uint_eq(oh->refcount, 3);
	ck_assert_uint_eq(oh->nchunks, 2);
	ck_assert_uint_eq(oh->chunks[0].addr, H);
	ck_assert_uint_eq(oh->chunks[0].len, 16 + v1_msgs_size(m0, 3));
	ck_assert_uint_eq(oh->chunks[1].addr, C);
	ck_assert_uint_eq(oh->chunks[1].len, c_len);
	ck_assert_uint_eq(oh->nmsgs, 5);
	ck_assert_uint_eq(oh->msgs[0].type, H5_MSG_DSPACE);
	ck_assert_uint_eq(oh->msgs[0].flags, 1);
	ck_assert_uint_eq(oh->msgs[0].size, 8); /* padded size as stored */
	ck_assert_uint_eq(oh->msgs[0].addr, H + 16 + 8);
	ck_assert_mem_eq(oh->msgs[0].data, DATA8, 5);
	ck_assert_uint_eq(oh->msgs[1].type, H5_MSG_CONT);
	ck_assert_uint_eq(oh->msgs[2].type, H5_MSG_MTIME);
	ck_assert_uint_eq(oh->msgs[3].type, H5_MSG_ATTR);
	ck_assert_uint_eq(oh->msgs[3].chunk, 1);
	ck_assert_uint_eq(oh->msgs[3].addr, C + 8);
	ck_assert_mem_eq(oh->msgs[3].data, DATA16, 16);
	ck_assert_mem_eq(oh->msgs[3].data, b.p + C + 8, 16);
	ck_assert_uint_eq(oh->msgs[4].type, H5_MSG_NIL);
	/* each message's bytes inside its own chunk's buffer (the header
	 * is packed into one block at load: ohdr.c ohdr_pack), at the
	 * offset of its address in the chunk */
	for (size_t i = 0; i < oh->nmsgs; i++) {
		const h5_ohdr_chunk *c = &oh->chunks[oh->msgs[i].chunk];

		ck_assert_ptr_eq(oh->msgs[i].data, c->buf + (oh->msgs[i].addr - c->addr));
		ck_assert_uint_le(oh->msgs[i].addr - c->addr + oh->msgs[i].size, c->len);
	}
	ck_assert_ptr_eq(h5_ohdr_find(oh, H5_MSG_ATTR), &oh->msgs[3]);
	ck_assert_ptr_null(h5_ohdr_find(oh, H5_MSG_LAYOUT));
	ck_assert_uint_eq(h5_ohdr_count(oh, H5_MSG_ATTR), 1);
	ck_assert_uint_eq(h5_ohdr_count(oh, H5_MSG_DTYPE), 0);
	ck_assert(h5_ohdr_has_mtime(oh));
	ck_assert_int_eq(h5_ohdr_mtime(oh, &t), 0);
	ck_assert_int_eq(t, 1700000000);
	ck_assert(!oh->has_times);
	h5_ohdr_free(oh);

	/* every truncation of the file inside the header or the chunk fails */
	for (size_t n = H; n < b.len; n++) {
		h5_file *tf;

		h5_le_encode(b.p + 28, n, 8);
		h5_le_encode(b.p + 44, h5_checksum_metadata(b.p, 44), 4);
		ck_assert_int_eq(h5_file_open_mem(&tf, b.p, n, NULL), 0);
		ck_assert_int_eq(h5_ohdr_load(&oh, tf, H), H5_ERR_FORMAT);
		ck_assert_ptr_null(oh);
		h5_file_close(tf);
	}
	h5_file_close(f);
	tb_free(&b);
}
END_TEST

START_TEST(v1_malformed)
{
	tbuf b = { 0 };
	tmsg m[2] = { { H5_MSG_DSPACE, 0, DATA8, 8, 0 }, { H5_MSG_NIL, 0, DATA16, 16, 0 } };
	uint64_t H;
	h5_file *f;
	h5_ohdr *oh;

	img_start(&b);
	H = b.len;
	v1_hdr(&b, 1, m, 2);
	tb_zero(&b, 64);
	f = img_open(&b, H);
	ck_assert_int_eq(h5_ohdr_load(&oh, f, H), 0);
	h5_ohdr_free(oh);

	/* message size not a multiple of 8 */
	b.p[H + 16 + 2] = 7;
	ck_assert_int_eq(h5_ohdr_load(&oh, f, H), H5_ERR_FORMAT);
	/* message runs past the end of the chunk */
	b.p[H + 16 + 2] = 48;
	ck_assert_int_eq(h5_ohdr_load(&oh, f, H), H5_ERR_FORMAT);
	ck_assert_ptr_nonnull(strstr(h5_err_msg(), "past the end"));
	b.p[H + 16 + 2] = 8;
	/* chunk size leaves 4 stray bytes */
	h5_le_encode(b.p + H + 8, 40 + 4, 4);
	ck_assert_int_eq(h5_ohdr_load(&oh, f, H), H5_ERR_FORMAT);
	/* chunk size past the end of the file */
	h5_le_encode(b.p + H + 8, 0x100000, 4);
	ck_assert_int_eq(h5_ohdr_load(&oh, f, H), H5_ERR_FORMAT);
	h5_le_encode(b.p + H + 8, 40, 4);
	/* bad version */
	b.p[H] = 3;
	ck_assert_int_eq(h5_ohdr_load(&oh, f, H), H5_ERR_FORMAT);
	b.p[H] = 1;
	/* unknown message type that must be understood */
	h5_le_encode(b.p + H + 16, 0x40, 2);
	b.p[H + 16 + 4] = 0x80;
	ck_assert_int_eq(h5_ohdr_load(&oh, f, H), H5_ERR_UNSUPPORTED);
	b.p[H + 16 + 4] = 0x00; /* merely unknown: kept */
	ck_assert_int_eq(h5_ohdr_load(&oh, f, H), 0);
	ck_assert_uint_eq(oh->msgs[0].type, 0x40);
	h5_ohdr_free(oh);
	/* addresses outside the file */
	ck_assert_int_eq(h5_ohdr_load(&oh, f, b.len), H5_ERR_FORMAT);
	ck_assert_int_eq(h5_ohdr_load(&oh, f, H5_ADDR_UNDEF), H5_ERR_FORMAT);
	ck_assert_int_eq(h5_ohdr_load(&oh, f, b.len - 3), H5_ERR_FORMAT);
	h5_file_close(f);
	tb_free(&b);
}
END_TEST

/* A header at H whose continuation goes to C1; chunk C1 continues to
 * `next` (len next_len). Returns the load result. */
static int load_cont_chain(uint64_t next_rel, int next_kind, uint64_t next_len)
{
	tbuf b = { 0 };
	uint8_t c0[16], c1[16];
	tmsg m0 = { H5_MSG_CONT, 0, c0, 16, 0 }, m1 = { H5_MSG_CONT, 0, c1, 16, 0 };
	uint64_t H, C1, target;
	h5_file *f;
	h5_ohdr *oh = NULL;
	int rc;

	img_start(&b);
	H = b.len;
	C1 = H + 16 + 24;
	/* next_kind: 0 = address relative to C1, 1 = the header itself */
	target = next_kind == 1 ? H : C1 + next_rel;
	cont_body(c0, C1, 24);
	cont_body(c1, target, next_len);
	v1_hdr(&b, 1, &m0, 1);
	v1_msgs(&b, &m1, 1);
	tb_zero(&b, 256);
	f = img_open(&b, H);
	rc = h5_ohdr_load(&oh, f, H);
	if (rc == 0)
		h5_ohdr_free(oh);
	else
		ck_assert_ptr_null(oh);
	h5_file_close(f);
	tb_free(&b);
	return rc;
}

START_TEST(continuation_cycles)
{
	/* chunk continues to itself */
	ck_assert_int_eq(load_cont_chain(0, 0, 24), H5_ERR_LOOP);
	/* chunk continues back to the header */
	ck_assert_int_eq(load_cont_chain(0, 1, 24), H5_ERR_LOOP);
	/* chunk overlapping the previous one */
	ck_assert_int_eq(load_cont_chain(8, 0, 24), H5_ERR_FORMAT);
	/* to a chunk past the end of the file */
	ck_assert_int_eq(load_cont_chain(1 << 20, 0, 24), H5_ERR_FORMAT);
	/* zero length */
	ck_assert_int_eq(load_cont_chain(24, 0, 0), H5_ERR_FORMAT);
	/* huge length */
	ck_assert_int_eq(load_cont_chain(24, 0, UINT64_MAX - 8), H5_ERR_FORMAT);
	/* a valid third chunk of zeros (three empty NIL messages) */
	ck_assert_int_eq(load_cont_chain(24, 0, 24), 0);
}
END_TEST

START_TEST(continuation_two_chunk_cycle)
{
	tbuf b = { 0 };
	uint8_t c0[16], c1[16], c2[16];
	tmsg m0 = { H5_MSG_CONT, 0, c0, 16, 0 }, m1 = { H5_MSG_CONT, 0, c1, 16, 0 }, m2 = { H5_MSG_CONT, 0, c2, 16, 0 };
	uint64_t H, C1, C2;
	h5_file *f;
	h5_ohdr *oh;

	img_start(&b);
	H = b.len;
	C1 = H + 40;
	C2 = C1 + 24;
	cont_body(c0, C1, 24);
	cont_body(c1, C2, 24);
	cont_body(c2, C1, 24);
	v1_hdr(&b, 1, &m0, 1);
	v1_msgs(&b, &m1, 1);
	v1_msgs(&b, &m2, 1);
	f = img_open(&b, H);
	ck_assert_int_eq(h5_ohdr_load(&oh, f, H), H5_ERR_LOOP);
	h5_file_close(f);
	tb_free(&b);
}
END_TEST

START_TEST(continuation_chunk_limit)
{
	tbuf b = { 0 };
	uint8_t c[16];
	tmsg m = { H5_MSG_CONT, 0, c, 16, 0 };
	const unsigned nchunks = H5_MAX_OHDR_CHUNKS + 5;
	uint64_t H;
	h5_file *f;
	h5_ohdr *oh;

	img_start(&b);
	H = b.len;
	cont_body(c, H + 40, 24);
	v1_hdr(&b, 1, &m, 1);
	for (unsigned i = 0; i < nchunks; i++) {
		cont_body(c, b.len + 24, 24);
		v1_msgs(&b, &m, 1);
	}
	tb_zero(&b, 24);
	f = img_open(&b, H);
	ck_assert_int_eq(h5_ohdr_load(&oh, f, H), H5_ERR_LIMIT);
	h5_file_close(f);

	/* exactly at the limit is fine: end the chain at chunk MAX-1 */
	{
		size_t last = H + 40 + (size_t)(H5_MAX_OHDR_CHUNKS - 2) * 24;

		memset(b.p + last, 0, 24); /* three empty NIL messages */
		f = img_open(&b, H);
		ck_assert_msg(h5_ohdr_load(&oh, f, H) == 0, "%s", h5_err_msg());
		ck_assert_uint_eq(oh->nchunks, H5_MAX_OHDR_CHUNKS);
		h5_ohdr_free(oh);
		h5_file_close(f);
	}
	tb_free(&b);
}
END_TEST

/* ---- version 2 ------------------------------------------------------- */

/* Builds: sb | OHDR(flags) at H with DTYPE, REFCOUNT(7), CONT->C | OCHK at C
 * with ATTR, ATTR and a gap of `gap` bytes. */
static void build_v2(tbuf *b, uint8_t flags, size_t gap, uint64_t *H, uint64_t *C, size_t *c_len)
{
	static const uint32_t times[4] = { 1600000001, 1600000002, 1600000003, 1600000004 };
	static uint8_t rc_body[5] = { 0, 7, 0, 0, 0 };
	static uint8_t cont[16];
	tmsg m0[3] = {
		{ H5_MSG_DTYPE, 1, DATA8, 8, 0 },
		{ H5_MSG_REFCOUNT, 0, rc_body, 5, 0 },
		{ H5_MSG_CONT, 0, cont, 16, 0 },
	};
	tmsg m1[2] = {
		{ H5_MSG_ATTR, 0, DATA16, 16, 5 },
		{ H5_MSG_ATTR, 0, DATA8, 3, 6 },
	};
	size_t hdr_len;

	img_start(b);
	*H = b->len;
	/* prefix + chunk 0 messages + checksum */
	hdr_len = 6 + ((flags & 0x20) ? 16 : 0) + ((flags & 0x10) ? 4 : 0) + (1u << (flags & 3)) +
		  v2_msgs_size(flags, m0, 3) + 4;
	*C = *H + hdr_len;
	*c_len = v2_cont_size(flags, m1, 2, gap);
	cont_body(cont, *C, *c_len);
	v2_hdr(b, flags, times, m0, 3, 0);
	ck_assert_uint_eq(b->len, *C);
	v2_cont(b, flags, m1, 2, gap);
	tb_zero(b, 16);
}

START_TEST(v2_with_continuation)
{
	const uint8_t variants[] = { 0x00, 0x01, 0x02, 0x03, 0x04, 0x20, 0x10, 0x35, 0x3e };

	for (size_t v = 0; v < sizeof(variants); v++) {
		uint8_t flags = variants[v];
		size_t hdrsz = (flags & 0x04) ? 6 : 4;

		for (size_t gap = 0; gap < hdrsz; gap++) {
			tbuf b = { 0 };
			uint64_t H, C;
			size_t c_len;
			h5_file *f;
			h5_ohdr *oh;
			int64_t t;

			build_v2(&b, flags, gap, &H, &C, &c_len);
			f = img_open(&b, H);
			ck_assert_msg(h5_ohdr_load(&oh, f, H) == 0, "flags 0x%x gap %zu: %s", flags, gap, h5_err_msg());
			ck_assert_uint_eq(oh->version, 2);
			ck_assert_uint_eq(oh->flags, flags);
			ck_assert_uint_eq(oh->refcount, 7);
			ck_assert_uint_eq(oh->nchunks, 2);
			ck_assert_uint_eq(oh->chunks[1].addr, C);
			ck_assert_uint_eq(oh->chunks[1].len, c_len);
			ck_assert_uint_eq(oh->nmsgs, 5);
			ck_assert_uint_eq(oh->msgs[0].type, H5_MSG_DTYPE);
			ck_assert_uint_eq(oh->msgs[0].flags, 1);
			ck_assert_uint_eq(oh->msgs[0].size, 8);
			ck_assert_mem_eq(oh->msgs[0].data, DATA8, 8);
			ck_assert_uint_eq(oh->msgs[3].type, H5_MSG_ATTR);
			ck_assert_uint_eq(oh->msgs[3].chunk, 1);
			ck_assert_uint_eq(oh->msgs[3].addr, C + 4 + hdrsz);
			ck_assert_mem_eq(oh->msgs[3].data, b.p + C + 4 + hdrsz, 16);
			ck_assert_uint_eq(oh->msgs[4].size, 3);
			ck_assert_mem_eq(oh->msgs[4].data, DATA8, 3);
			if (flags & 0x04) {
				ck_assert_uint_eq(oh->msgs[3].crt_order, 5);
				ck_assert_uint_eq(oh->msgs[4].crt_order, 6);
			}
			ck_assert_uint_eq(h5_ohdr_count(oh, H5_MSG_ATTR), 2);
			if (flags & 0x20) {
				ck_assert(oh->has_times);
				ck_assert_uint_eq(oh->atime, 1600000001);
				ck_assert_uint_eq(oh->mtime, 1600000002);
				ck_assert_uint_eq(oh->ctime, 1600000003);
				ck_assert_uint_eq(oh->btime, 1600000004);
				ck_assert(h5_ohdr_has_mtime(oh));
				ck_assert_int_eq(h5_ohdr_mtime(oh, &t), 0);
				ck_assert_int_eq(t, 1600000002);
			} else {
				ck_assert(!oh->has_times);
				/* (h5_obj_info_get asks this first, not the error) */
				ck_assert(!h5_ohdr_has_mtime(oh));
				ck_assert_int_eq(h5_ohdr_mtime(oh, &t), H5_ERR_NOTFOUND);
			}
			h5_ohdr_free(oh);
			h5_file_close(f);
			tb_free(&b);
		}
	}
}
END_TEST

START_TEST(v2_corruption)
{
	tbuf b = { 0 };
	uint64_t H, C;
	size_t c_len, hdr_end;
	h5_file *f;
	h5_ohdr *oh;

	build_v2(&b, 0x20, 1, &H, &C, &c_len);
	f = img_open(&b, H);
	ck_assert_int_eq(h5_ohdr_load(&oh, f, H), 0);
	h5_ohdr_free(oh);

	/* any flipped byte in either chunk: checksum (or, for the signature,
	 * version, flags and size fields, a format error) - never success */
	for (uint64_t i = H; i < C + c_len; i++) {
		int rc;

		b.p[i] ^= 0x01;
		rc = h5_ohdr_load(&oh, f, H);
		ck_assert_msg(rc == H5_ERR_CHECKSUM || rc == H5_ERR_FORMAT || rc == H5_ERR_UNSUPPORTED,
			      "byte %llu: rc %d", (unsigned long long)(i - H), rc);
		if (i >= H + 8 && i < C - 4 && i != H + 6 + 16)
			ck_assert_int_eq(rc, H5_ERR_CHECKSUM);
		b.p[i] ^= 0x01;
	}
	ck_assert_int_eq(h5_ohdr_load(&oh, f, H), 0);
	h5_ohdr_free(oh);

	/* OCHK signature with a valid checksum */
	b.p[C + 1] = 'X';
	h5_le_encode(b.p + C + c_len - 4, h5_checksum_metadata(b.p + C, c_len - 4), 4);
	ck_assert_int_eq(h5_ohdr_load(&oh, f, H), H5_ERR_FORMAT);
	ck_assert_ptr_nonnull(strstr(h5_err_msg(), "OCHK"));
	b.p[C + 1] = 'C';
	h5_le_encode(b.p + C + c_len - 4, h5_checksum_metadata(b.p + C, c_len - 4), 4);

	/* re-checksummed semantic errors in chunk 0 */
	hdr_end = C - 4;
	b.p[H + 5] |= 0x40; /* reserved flag */
	h5_le_encode(b.p + hdr_end, h5_checksum_metadata(b.p + H, hdr_end - H), 4);
	ck_assert_int_eq(h5_ohdr_load(&oh, f, H), H5_ERR_FORMAT);
	b.p[H + 5] &= (uint8_t)~0x40;
	b.p[H + 4] = 3; /* version */
	h5_le_encode(b.p + hdr_end, h5_checksum_metadata(b.p + H, hdr_end - H), 4);
	ck_assert_int_eq(h5_ohdr_load(&oh, f, H), H5_ERR_UNSUPPORTED);
	b.p[H + 4] = 2;
	/* first message claims more bytes than the chunk holds */
	h5_le_encode(b.p + H + 6 + 16 + 1 + 1, 200, 2);
	h5_le_encode(b.p + hdr_end, h5_checksum_metadata(b.p + H, hdr_end - H), 4);
	ck_assert_int_eq(h5_ohdr_load(&oh, f, H), H5_ERR_FORMAT);
	h5_le_encode(b.p + H + 6 + 16 + 1 + 1, 8, 2);
	h5_le_encode(b.p + hdr_end, h5_checksum_metadata(b.p + H, hdr_end - H), 4);
	ck_assert_int_eq(h5_ohdr_load(&oh, f, H), 0);
	h5_ohdr_free(oh);
	h5_file_close(f);
	tb_free(&b);
}
END_TEST

START_TEST(v2_phase_change_and_refcount)
{
	tbuf b = { 0 };
	uint8_t rc_body[5] = { 0, 2, 0, 0, 0 };
	tmsg m = { H5_MSG_REFCOUNT, 0, rc_body, 5, 0 };
	uint64_t H;
	h5_file *f;
	h5_ohdr *oh;

	img_start(&b);
	H = b.len;
	v2_hdr(&b, 0x10, NULL, &m, 1, 0);
	f = img_open(&b, H);
	ck_assert_int_eq(h5_ohdr_load(&oh, f, H), 0);
	ck_assert_uint_eq(oh->refcount, 2);
	h5_ohdr_free(oh);
	/* max compact (12) below min dense: swap them */
	h5_le_encode(b.p + H + 6, 9, 2);
	h5_le_encode(b.p + b.len - 4, h5_checksum_metadata(b.p + H, b.len - 4 - H), 4);
	ck_assert_int_eq(h5_ohdr_load(&oh, f, H), H5_ERR_FORMAT);
	h5_le_encode(b.p + H + 6, 12, 2);
	/* refcount message version 1 */
	b.p[H + 6 + 4 + 1 + 4] = 1;
	h5_le_encode(b.p + b.len - 4, h5_checksum_metadata(b.p + H, b.len - 4 - H), 4);
	ck_assert_int_eq(h5_ohdr_load(&oh, f, H), H5_ERR_FORMAT);
	h5_file_close(f);
	tb_free(&b);

	/* no refcount message: 1 */
	img_start(&b);
	H = b.len;
	m = (tmsg){ H5_MSG_NIL, 0, DATA8, 2, 0 };
	v2_hdr(&b, 0, NULL, &m, 1, 0);
	f = img_open(&b, H);
	ck_assert_int_eq(h5_ohdr_load(&oh, f, H), 0);
	ck_assert_uint_eq(oh->refcount, 1);
	h5_ohdr_free(oh);
	h5_file_close(f);
	tb_free(&b);
}
END_TEST

START_TEST(v2_ochk_self_cycle)
{
	tbuf b = { 0 };
	uint8_t c0[16], c1[16];
	tmsg m0 = { H5_MSG_CONT, 0, c0, 16, 0 }, m1 = { H5_MSG_CONT, 0, c1, 16, 0 };
	uint64_t H, C;
	size_t c_len = v2_cont_size(0, &m1, 1, 0);
	h5_file *f;
	h5_ohdr *oh;

	img_start(&b);
	H = b.len;
	C = H + 7 + v2_msgs_size(0, &m0, 1) + 4;
	cont_body(c0, C, c_len);
	cont_body(c1, C, c_len);
	v2_hdr(&b, 0, NULL, &m0, 1, 0);
	ck_assert_uint_eq(b.len, C);
	v2_cont(&b, 0, &m1, 1, 0);
	f = img_open(&b, H);
	ck_assert_int_eq(h5_ohdr_load(&oh, f, H), H5_ERR_LOOP);
	h5_file_close(f);
	tb_free(&b);

	/* a v2 continuation too short for OCHK + checksum */
	img_start(&b);
	H = b.len;
	cont_body(c0, H + 100, 6);
	v2_hdr(&b, 0, NULL, &m0, 1, 0);
	tb_zero(&b, 200);
	f = img_open(&b, H);
	ck_assert_int_eq(h5_ohdr_load(&oh, f, H), H5_ERR_FORMAT);
	h5_file_close(f);
	tb_free(&b);
}
END_TEST

/* ---- modification times ----------------------------------------------- */

static int mtime_of(uint16_t type, const void *body, uint16_t size, int64_t *t)
{
	tbuf b = { 0 };
	tmsg m = { type, 0, body, size, 0 };
	uint64_t H;
	h5_file *f;
	h5_ohdr *oh;
	int rc;

	img_start(&b);
	H = b.len;
	v1_hdr(&b, 1, &m, 1);
	f = img_open(&b, H);
	ck_assert_int_eq(h5_ohdr_load(&oh, f, H), 0);
	rc = h5_ohdr_mtime(oh, t);
	/* a message of either kind, well formed or not, is one; none is
	 * NOTFOUND (h5_obj_info_get asks this first, not the error) */
	ck_assert(h5_ohdr_has_mtime(oh) == (rc != H5_ERR_NOTFOUND));
	h5_ohdr_free(oh);
	h5_file_close(f);
	tb_free(&b);
	return rc;
}

START_TEST(mtime_messages)
{
	uint8_t mt[8] = { 1, 0, 0, 0, 0, 0, 0, 0 };
	int64_t t = 0;

	ck_assert_int_eq(mtime_of(H5_MSG_MTIME_OLD, "20240102030405\0\0", 16, &t), 0);
	ck_assert_int_eq(t, 1704164645);
	ck_assert_int_eq(mtime_of(H5_MSG_MTIME_OLD, "20000229120000\0\0", 16, &t), 0);
	ck_assert_int_eq(t, 951825600);
	ck_assert_int_eq(mtime_of(H5_MSG_MTIME_OLD, "19700101000000\0\0", 16, &t), 0);
	ck_assert_int_eq(t, 0);
	ck_assert_int_eq(mtime_of(H5_MSG_MTIME_OLD, "2024AB02030405\0\0", 16, &t), H5_ERR_FORMAT);
	ck_assert_int_eq(mtime_of(H5_MSG_MTIME_OLD, "20241302030405\0\0", 16, &t), H5_ERR_FORMAT);
	ck_assert_int_eq(mtime_of(H5_MSG_MTIME_OLD, "2024010203\0\0\0\0\0\0", 8, &t), H5_ERR_FORMAT);
	h5_le_encode(mt + 4, 0xfffffff0u, 4);
	ck_assert_int_eq(mtime_of(H5_MSG_MTIME, mt, 8, &t), 0);
	ck_assert_int_eq(t, 0xfffffff0LL);
	mt[0] = 2;
	ck_assert_int_eq(mtime_of(H5_MSG_MTIME, mt, 8, &t), H5_ERR_FORMAT);
	ck_assert_int_eq(mtime_of(H5_MSG_NIL, mt, 8, &t), H5_ERR_NOTFOUND);
}
END_TEST

/* ---- shared messages -------------------------------------------------- */

/* Image: T (v1 header, DTYPE with DTYPE_BODY) | D (v1 header, DTYPE shared
 * with `shared` body) | L (v1 header whose shared DTYPE points at itself) */
static const uint8_t DTYPE_BODY[12] = { 0x10, 0x08, 0, 0, 4, 0, 0, 0, 0, 0, 32, 0 };

static int read_shared(const uint8_t *shared, uint16_t size, bool self, const uint8_t **data, size_t *len,
		       uint8_t *copy, size_t copy_cap)
{
	tbuf b = { 0 };
	tmsg mt = { H5_MSG_DTYPE, 1, DTYPE_BODY, sizeof(DTYPE_BODY), 0 };
	uint8_t body[32];
	tmsg md = { H5_MSG_DTYPE, H5_MSG_FLAG_SHARED, body, size, 0 };
	uint64_t T, D;
	h5_file *f;
	h5_ohdr *oh;
	void *owned = NULL;
	int rc;

	img_start(&b);
	T = b.len;
	v1_hdr(&b, 1, &mt, 1);
	D = b.len;
	memcpy(body, shared, size);
	/* patch the address placeholder 0xAA.. with T (or D for the self loop) */
	for (unsigned i = 0; i + 8 <= size; i++) {
		if (body[i] == 0xAA && body[i + 1] == 0xAA) {
			h5_le_encode(body + i, self ? D : T, 8);
			break;
		}
	}
	v1_hdr(&b, 1, &md, 1);
	f = img_open(&b, T);
	ck_assert_int_eq(h5_ohdr_get(&oh, f, D), 0);
	rc = h5_msg_read(data, len, &owned, f, h5_ohdr_find(oh, H5_MSG_DTYPE));
	if (rc == 0) {
		ck_assert_ptr_nonnull(owned);
		ck_assert_ptr_eq(owned, *data);
		ck_assert_uint_le(*len, copy_cap);
		memcpy(copy, *data, *len);
		*data = copy;
	} else {
		ck_assert_ptr_null(owned);
	}
	free(owned);
	h5_ohdr_release(f, oh);
	h5_file_close(f);
	tb_free(&b);
	return rc;
}

START_TEST(shared_committed)
{
	/* v1: 6 reserved bytes, then HDF5 1.6's symbol table entry: a name
	 * offset (ignored; libhdf5's H5O__shared_decode skips it) and the address */
	static const uint8_t v1[24] = { 1, 0, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 0, 0, 0, 0,
					0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA };
	static const uint8_t v2[10] = { 2, 0, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA };
	static const uint8_t v3[10] = { 3, 2, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA };
	static const uint8_t v3_here[10] = { 3, 0, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA };
	static const uint8_t v3_sohm[10] = { 3, 1, 1, 2, 3, 4, 5, 6, 7, 8 };
	static const uint8_t v4[10] = { 4, 2, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA };
	static const uint8_t undef[10] = { 2, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	uint8_t copy[64];
	const uint8_t *data;
	size_t len;

	ck_assert_int_eq(read_shared(v1, sizeof(v1), false, &data, &len, copy, sizeof(copy)), 0);
	ck_assert_uint_eq(len, 16); /* v1 messages are padded to 8 */
	ck_assert_mem_eq(data, DTYPE_BODY, sizeof(DTYPE_BODY));
	ck_assert_int_eq(read_shared(v2, sizeof(v2), false, &data, &len, copy, sizeof(copy)), 0);
	ck_assert_mem_eq(data, DTYPE_BODY, sizeof(DTYPE_BODY));
	ck_assert_int_eq(read_shared(v3, sizeof(v3), false, &data, &len, copy, sizeof(copy)), 0);
	ck_assert_mem_eq(data, DTYPE_BODY, sizeof(DTYPE_BODY));
	/* message shared with itself: the chain is cut */
	ck_assert_int_eq(read_shared(v3, sizeof(v3), true, &data, &len, copy, sizeof(copy)), H5_ERR_LOOP);
	ck_assert_int_eq(read_shared(v3_here, sizeof(v3_here), false, &data, &len, copy, sizeof(copy)),
			 H5_ERR_FORMAT);
	/* in the SOHM heap, but the file has no shared message table */
	ck_assert_int_eq(read_shared(v3_sohm, sizeof(v3_sohm), false, &data, &len, copy, sizeof(copy)),
			 H5_ERR_FORMAT);
	ck_assert_int_eq(read_shared(v4, sizeof(v4), false, &data, &len, copy, sizeof(copy)), H5_ERR_FORMAT);
	ck_assert_int_eq(read_shared(undef, sizeof(undef), false, &data, &len, copy, sizeof(copy)), H5_ERR_FORMAT);
	/* truncated shared message */
	ck_assert_int_eq(read_shared(v2, 6, false, &data, &len, copy, sizeof(copy)), H5_ERR_FORMAT);
}
END_TEST

START_TEST(msg_read_unshared_and_cache)
{
	tbuf b = { 0 };
	tmsg m = { H5_MSG_DTYPE, 0, DTYPE_BODY, sizeof(DTYPE_BODY), 0 };
	uint64_t H;
	h5_file *f;
	h5_ohdr *a, *a2;
	const uint8_t *data;
	size_t len;
	void *owned = (void *)1;

	img_start(&b);
	H = b.len;
	v1_hdr(&b, 1, &m, 1);
	f = img_open(&b, H);
	ck_assert_int_eq(h5_ohdr_get(&a, f, H), 0);
	ck_assert_int_eq(h5_ohdr_get(&a2, f, H), 0);
	ck_assert_ptr_eq(a, a2); /* one cached copy */
	ck_assert_uint_gt(h5_cache_used(f->meta), 0);
	ck_assert_int_eq(h5_msg_read(&data, &len, &owned, f, &a->msgs[0]), 0);
	ck_assert_ptr_null(owned);
	ck_assert_ptr_eq(data, a->msgs[0].data);
	ck_assert_uint_eq(len, 16);
	h5_ohdr_release(f, a);
	h5_ohdr_release(f, a2);
	ck_assert_int_eq(h5_ohdr_get(&a, f, b.len + 100), H5_ERR_FORMAT);
	ck_assert_int_eq(h5_ohdr_get(&a, f, H5_ADDR_UNDEF), H5_ERR_FORMAT);
	h5_file_close(f);
	tb_free(&b);
}
END_TEST

/* ---- object info ------------------------------------------------------ */

START_TEST(obj_info_kinds)
{
	tbuf b = { 0 };
	static const uint32_t times[4] = { 11, 22, 33, 44 };
	uint8_t rc5[5] = { 0, 5, 0, 0, 0 };
	tmsg root[1] = { { H5_MSG_NIL, 0, DATA8, 8, 0 } };
	tmsg dset[4] = { { H5_MSG_DTYPE, 1, DATA8, 8, 0 }, { H5_MSG_LAYOUT, 0, DATA8, 8, 0 },
			 { H5_MSG_ATTR, 0, DATA8, 8, 0 }, { H5_MSG_ATTR, 0, DATA16, 16, 0 } };
	tmsg dtype[1] = { { H5_MSG_DTYPE, 1, DATA8, 8, 0 } };
	tmsg grp[2] = { { H5_MSG_LINFO, 0, DATA8, 8, 0 }, { H5_MSG_REFCOUNT, 0, rc5, 5, 0 } };
	tmsg other[1] = { { H5_MSG_NIL, 0, DATA8, 8, 0 } };
	tmsg stab[1] = { { H5_MSG_STAB, 0, DATA16, 16, 0 } };
	uint64_t R, D, T, G, O, S;
	h5_obj_info info;
	h5_file *f;

	img_start(&b);
	R = b.len;
	v1_hdr(&b, 1, root, 1);
	D = b.len;
	v1_hdr(&b, 2, dset, 4);
	T = b.len;
	v1_hdr(&b, 1, dtype, 1);
	G = b.len;
	v2_hdr(&b, 0x20, times, grp, 2, 0);
	O = b.len;
	v1_hdr(&b, 1, other, 1);
	S = b.len;
	v1_hdr(&b, 1, stab, 1);
	f = img_open(&b, R);

	ck_assert_int_eq(h5_obj_info_get(&info, f, R), 0);
	ck_assert_int_eq(info.kind, H5_OBJ_GROUP);
	ck_assert_uint_eq(info.addr, R);
	ck_assert_int_eq(h5_obj_info_get(&info, f, D), 0);
	ck_assert_int_eq(info.kind, H5_OBJ_DATASET);
	ck_assert_uint_eq(info.nlink, 2);
	ck_assert_uint_eq(info.nattrs, 2);
	ck_assert_int_eq(info.has_mtime, 0);
	ck_assert_int_eq(h5_obj_info_get(&info, f, T), 0);
	ck_assert_int_eq(info.kind, H5_OBJ_DATATYPE);
	ck_assert_int_eq(h5_obj_info_get(&info, f, G), 0);
	ck_assert_int_eq(info.kind, H5_OBJ_GROUP);
	ck_assert_uint_eq(info.nlink, 5);
	ck_assert_int_eq(info.has_times, 1);
	ck_assert_int_eq(info.has_mtime, 1);
	ck_assert_int_eq(info.mtime, 22);
	ck_assert_int_eq(info.atime, 11);
	ck_assert_int_eq(info.ctime, 33);
	ck_assert_int_eq(info.btime, 44);
	ck_assert_uint_eq(info.nattrs, 0);
	ck_assert_int_eq(h5_obj_info_get(&info, f, O), 0);
	ck_assert_int_eq(info.kind, H5_OBJ_UNKNOWN);
	ck_assert_int_eq(h5_obj_info_get(&info, f, S), 0);
	ck_assert_int_eq(info.kind, H5_OBJ_GROUP);
	ck_assert_int_eq(h5_obj_info_get(&info, f, b.len), H5_ERR_FORMAT);
	h5_file_close(f);
	tb_free(&b);
}
END_TEST

/* ---- h5py files --------------------------------------------------------- */

static char tmpdir[256];

static const char *make_tmpdir(void)
{
	if (!tmpdir[0]) {
		snprintf(tmpdir, sizeof(tmpdir), "/tmp/h5fs_ohdr_XXXXXX");
		ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	}
	return tmpdir;
}

/* Remove the temp directory (and forget it, for CK_FORK=no runs). */
static void rm_tmpdir(void)
{
	test_tmp_remove(tmpdir);
	tmpdir[0] = 0;
}

static bool run_h5py(const char *script)
{
	char path[512], cmd[1024];
	FILE *fp;

	if (system("/usr/bin/python3 -c 'import h5py' >/dev/null 2>&1") != 0) {
		fprintf(stderr, "SKIP: /usr/bin/python3 with h5py not available\n");
		return false;
	}
	snprintf(path, sizeof(path), "%s/gen.py", make_tmpdir());
	fp = fopen(path, "w");
	ck_assert_ptr_nonnull(fp);
	fputs(script, fp);
	fclose(fp);
	snprintf(cmd, sizeof(cmd), "cd %s && /usr/bin/python3 gen.py", make_tmpdir());
	ck_assert_int_eq(system(cmd), 0);
	return true;
}

/* For every object: address, kind, link count and attribute count as
 * libhdf5 reports them; for committed-datatype datasets, also the named
 * type's address so the shared datatype message can be compared. */
static const char *H5PY_SCRIPT =
	"import h5py, numpy as np\n"
	"out = open('expect.txt', 'w')\n"
	"for lv in ('earliest', 'latest'):\n"
	"    name = 'obj_%s.h5' % lv\n"
	"    with h5py.File(name, 'w', libver=lv) as f:\n"
	"        g = f.create_group('g')\n"
	"        d = g.create_dataset('d', data=np.arange(100, dtype='f8'), track_times=True)\n"
	"        for i in range(3): d.attrs['a%d' % i] = i\n"
	"        f['t'] = np.dtype([('x', 'i4'), ('y', 'f8')])\n"
	"        f.create_dataset('ct', shape=(4,), dtype=f['t'], track_times=True)\n"
	"        f['hard2'] = d\n"
	"        big = f.create_group('many_attrs')\n"
	"        for i in range(40): big.attrs['attr%02d' % i] = np.arange(i + 1)\n"
	"        # grow a header after creation: continuation chunks (kept compact)\n"
	"        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)\n"
	"        dcpl.set_attr_phase_change(100, 0)\n"
	"        dcpl.set_obj_track_times(True)\n"
	"        h5py.h5d.create(f.id, b'grow', h5py.h5t.NATIVE_INT32, h5py.h5s.create_simple((3,)), dcpl=dcpl)\n"
	"        e = f['grow']\n"
	"        for i in range(30): e.attrs['x%02d' % i] = 'v' * 60\n"
	"    with h5py.File(name, 'r') as f:\n"
	"        def visit(n, o):\n"
	"            i = h5py.h5o.get_info(o.id)\n"
	"            extra = h5py.h5o.get_info(f['t'].id).addr if n == 'ct' else 0\n"
	"            out.write('%s %d %d %d %d %d\\n' % (name, i.addr, i.type, i.rc, len(o.attrs), extra))\n"
	"        visit('/', f)\n"
	"        f.visititems(visit)\n"
	"out.close()\n";

START_TEST(h5py_objects)
{
	char path[600], prev[64] = "", name[64];
	h5_file *f = NULL;
	FILE *fp;
	int nobj = 0, ncommitted = 0, nonce = 0;
	h5_window win = { 0 };

	if (!run_h5py(H5PY_SCRIPT))
		return;
	snprintf(path, sizeof(path), "%s/expect.txt", make_tmpdir());
	fp = fopen(path, "r");
	ck_assert_ptr_nonnull(fp);
	for (;;) {
		unsigned long long addr, nattrs, type_addr;
		int type, rc;
		h5_obj_info info, once;
		h5_dataset *ds;
		bool held;
		h5_ohdr *oh;

		if (fscanf(fp, "%63s %llu %d %d %llu %llu", name, &addr, &type, &rc, &nattrs, &type_addr) != 6)
			break;
		if (strcmp(name, prev) != 0) {
			h5_window_clear(&win);  /* (another file at f's address, maybe) */
			if (f)
				h5_file_close(f);
			snprintf(path, sizeof(path), "%s/%s", make_tmpdir(), name);
			ck_assert_msg(h5_file_open(&f, path, NULL) == 0, "%s: %s", name, h5_err_msg());
			snprintf(prev, sizeof(prev), "%s", name);
		}
		nobj++;
		/* a header read once (a listing's, issue 82): not kept in the
		 * cache, the same facts as h5_obj_info_get and h5_dataset_open's */
		{
			/* the window's bytes are the file's: at the header, and
			 * just past it (inside the window now, or moved) */
			uint8_t a[64], b[64];

			ck_assert_int_eq(h5_file_read_window(&win, f, addr, a, sizeof(a)), 0);
			ck_assert_ptr_eq(win.f, f);     /* (a local file: a window) */
			ck_assert_int_eq(h5_file_read(f, addr, b, sizeof(b)), 0);
			ck_assert_mem_eq(a, b, sizeof(a));
			ck_assert_int_eq(h5_file_read_window(&win, f, addr + 200, a, 8), 0);
			ck_assert_int_eq(h5_file_read(f, addr + 200, b, 8), 0);
			ck_assert_mem_eq(a, b, 8);
		}
		held = h5_cache_holds(f->meta, H5_CK_OHDR, addr);      /* (the root's, at open) */
		ck_assert_msg(h5_obj_open_once(&once, &ds, f, addr, &win) == 0, "%s 0x%llx: %s", name, addr,
			      h5_err_msg());
		ck_assert(h5_cache_holds(f->meta, H5_CK_OHDR, addr) == held);
		nonce += !held;
		ck_assert_msg(h5_obj_info_get(&info, f, addr) == 0, "%s 0x%llx: %s", name, addr, h5_err_msg());
		ck_assert(h5_cache_holds(f->meta, H5_CK_OHDR, addr));
		ck_assert_int_eq(once.kind, info.kind);
		ck_assert_uint_eq(once.nlink, info.nlink);
		ck_assert_uint_eq(once.nattrs, info.nattrs);
		ck_assert_int_eq(once.has_mtime, info.has_mtime);
		ck_assert_int_eq(once.mtime, info.mtime);
		ck_assert_uint_eq(once.tag, info.tag);
		ck_assert_int_eq(ds != NULL, info.kind == H5_OBJ_DATASET);
		if (ds) {
			h5_dataset *d2;

			ck_assert_int_eq(h5_dataset_open(&d2, f, addr), 0);
			ck_assert_uint_eq(h5_dataset_size(ds), h5_dataset_size(d2));
			ck_assert_uint_eq(h5_dataset_allocated(ds), h5_dataset_allocated(d2));
			h5_dataset_close(d2);
			h5_dataset_close(ds);
		}
		/* held now: read past the cache all the same, which keeps its copy */
		ck_assert_int_eq(h5_obj_open_once(&once, &ds, f, addr, NULL), 0);
		ck_assert_int_eq(once.kind, info.kind);
		ck_assert(h5_cache_holds(f->meta, H5_CK_OHDR, addr));
		h5_dataset_close(ds);
		/* H5O_TYPE_GROUP 0, DATASET 1, NAMED_DATATYPE 2 */
		ck_assert_int_eq(info.kind, type == 0 ? H5_OBJ_GROUP : type == 1 ? H5_OBJ_DATASET : H5_OBJ_DATATYPE);
		ck_assert_uint_eq(info.nlink, (unsigned)rc);
		ck_assert_msg(info.nattrs == nattrs, "%s 0x%llx: nattrs %llu, expected %llu", name, addr,
			      (unsigned long long)info.nattrs, nattrs);
		if (type == 1) {
			ck_assert_int_eq(info.has_mtime, 1);
			ck_assert_int_lt(llabs(info.mtime - (int64_t)time(NULL)), 86400);
		}
		ck_assert_int_eq(h5_ohdr_get(&oh, f, addr), 0);
		if (type_addr) {
			/* the dataset's datatype message is committed: it must read
			 * back as the named type's own datatype message */
			const h5_msg *m = h5_ohdr_find(oh, H5_MSG_DTYPE);
			h5_ohdr *t;
			const uint8_t *data;
			size_t len;
			void *owned;

			ck_assert_ptr_nonnull(m);
			ck_assert(m->flags & H5_MSG_FLAG_SHARED);
			ck_assert_int_eq(h5_msg_read(&data, &len, &owned, f, m), 0);
			ck_assert_ptr_nonnull(owned);
			ck_assert_int_eq(h5_ohdr_get(&t, f, type_addr), 0);
			ck_assert_uint_eq(len, h5_ohdr_find(t, H5_MSG_DTYPE)->size);
			ck_assert_mem_eq(data, h5_ohdr_find(t, H5_MSG_DTYPE)->data, len);
			h5_ohdr_release(f, t);
			free(owned);
			ncommitted++;
		}
		h5_ohdr_release(f, oh);
	}
	if (f)
		h5_file_close(f);
	fclose(fp);
	ck_assert_int_eq(nobj, 2 * 7);
	ck_assert_int_eq(ncommitted, 2);
	ck_assert_int_ge(nonce, nobj - 2);     /* all but the roots read past the cache */
	h5_window_clear(&win);
	rm_tmpdir();
}
END_TEST

START_TEST(h5py_continuations)
{
	/* the 'grow' dataset's header overflowed into continuation chunks */
	char path[600];
	h5_file *f;
	int found = 0;

	if (!run_h5py(H5PY_SCRIPT))
		return;
	for (int v = 0; v < 2; v++) {
		FILE *fp;
		char name[64];
		unsigned long long addr, a2, a3, a4, a5;

		snprintf(path, sizeof(path), "%s/expect.txt", make_tmpdir());
		fp = fopen(path, "r");
		ck_assert_ptr_nonnull(fp);
		snprintf(path, sizeof(path), "%s/obj_%s.h5", make_tmpdir(), v ? "latest" : "earliest");
		ck_assert_int_eq(h5_file_open(&f, path, NULL), 0);
		/* find an object with 30 attributes: the grown dataset */
		while (fscanf(fp, "%63s %llu %llu %llu %llu %llu", name, &addr, &a2, &a3, &a4, &a5) == 6) {
			h5_ohdr *oh;

			if (!strstr(path, name) || a4 != 30)
				continue;
			ck_assert_int_eq(h5_ohdr_load(&oh, f, addr), 0);
			ck_assert_uint_gt(oh->nchunks, 1);
			ck_assert_uint_ge(h5_ohdr_count(oh, H5_MSG_CONT), 1);
			ck_assert_uint_eq(h5_ohdr_count(oh, H5_MSG_ATTR), 30);
			for (size_t i = 0; i < oh->nmsgs; i++) {
				const h5_msg *m = &oh->msgs[i];

				/* the recorded address really is the message data */
				ck_assert_ptr_eq(m->data, oh->chunks[m->chunk].buf + (m->addr - oh->chunks[m->chunk].addr));
			}
			h5_ohdr_free(oh);
			found++;
		}
		fclose(fp);
		h5_file_close(f);
	}
	ck_assert_int_eq(found, 2);
	rm_tmpdir();
}
END_TEST

/* Messages shared through the SOHM heap (III.I). h5py cannot ask for a
 * shared message table, so the script sets it on the creation property
 * list through libhdf5 itself (ctypes, same library instance as h5py). A
 * second file without the table holds the same objects unshared: each
 * shared message must read back as the unshared encoding. */
START_TEST(h5py_sohm)
{
	static const char *script =
		"import h5py, ctypes, numpy as np\n"
		"lib = ctypes.CDLL('libhdf5_serial.so.103')\n"
		"def fill(f):\n"
		"    dt = np.dtype([('a%d' % i, 'f8') for i in range(10)])\n"
		"    for i in range(3):\n"
		"        d = f.create_dataset('d%d' % i, shape=(5, 7), dtype=dt)\n"
		"        d.attrs['note'] = np.arange(20)\n"
		"fcpl = h5py.h5p.create(h5py.h5p.FILE_CREATE)\n"
		"assert lib.H5Pset_shared_mesg_nindexes(ctypes.c_int64(fcpl.id), 1) >= 0\n"
		"assert lib.H5Pset_shared_mesg_index(ctypes.c_int64(fcpl.id), 0, 0x1f, 8) >= 0\n"
		"with h5py.File(h5py.h5f.create(b'sohm.h5', h5py.h5f.ACC_TRUNC, fcpl=fcpl)) as f: fill(f)\n"
		"with h5py.File('plain.h5', 'w') as f: fill(f)\n"
		"with open('sohm.txt', 'w') as out:\n"
		"    for fn in ('sohm.h5', 'plain.h5'):\n"
		"        with h5py.File(fn, 'r') as f:\n"
		"            out.write(' '.join(str(h5py.h5o.get_info(f['d%d' % i].id).addr) for i in range(3)) + '\\n')\n";
	const uint16_t types[3] = { H5_MSG_DTYPE, H5_MSG_DSPACE, H5_MSG_ATTR };
	unsigned long long sa[3], pa[3];
	char path[600];
	h5_file *fs, *fp;
	FILE *in;
	int nshared[3] = { 0, 0, 0 };

	/* the ctypes route needs the Debian libhdf5 soname h5py uses */
	if (system("/usr/bin/python3 -c \"import ctypes; ctypes.CDLL('libhdf5_serial.so.103')\" 2>/dev/null") != 0) {
		fprintf(stderr, "SKIP: libhdf5_serial.so.103 not loadable\n");
		return;
	}
	if (!run_h5py(script))
		return;
	snprintf(path, sizeof(path), "%s/sohm.txt", make_tmpdir());
	in = fopen(path, "r");
	ck_assert_ptr_nonnull(in);
	ck_assert_int_eq(fscanf(in, "%llu %llu %llu %llu %llu %llu", &sa[0], &sa[1], &sa[2], &pa[0], &pa[1], &pa[2]), 6);
	fclose(in);
	snprintf(path, sizeof(path), "%s/sohm.h5", make_tmpdir());
	ck_assert_msg(h5_file_open(&fs, path, NULL) == 0, "%s", h5_err_msg());
	ck_assert_uint_eq(fs->sohm_nindexes, 1);
	ck_assert_uint_eq(fs->sohm_index[0].mesg_types, 0x1f);
	snprintf(path, sizeof(path), "%s/plain.h5", make_tmpdir());
	ck_assert_int_eq(h5_file_open(&fp, path, NULL), 0);
	ck_assert_uint_eq(fp->sohm_nindexes, 0);

	for (int i = 0; i < 3; i++) {
		h5_ohdr *so, *po;

		ck_assert_int_eq(h5_ohdr_get(&so, fs, sa[i]), 0);
		ck_assert_int_eq(h5_ohdr_get(&po, fp, pa[i]), 0);
		for (int t = 0; t < 3; t++) {
			const h5_msg *sm = h5_ohdr_find(so, types[t]), *pm = h5_ohdr_find(po, types[t]);
			const uint8_t *data;
			size_t len;
			void *owned;

			ck_assert_ptr_nonnull(sm);
			ck_assert_ptr_nonnull(pm);
			ck_assert(!(pm->flags & H5_MSG_FLAG_SHARED));
			if (!(sm->flags & H5_MSG_FLAG_SHARED))
				continue; /* the first use may stay in its header */
			/* shared message v3, type 1: in the heap */
			ck_assert_uint_eq(sm->data[0], 3);
			if (sm->data[1] != 1)
				continue;
			ck_assert_msg(h5_msg_read(&data, &len, &owned, fs, sm) == 0, "%s", h5_err_msg());
			ck_assert_ptr_nonnull(owned);
			/* v1 headers pad the unshared copy to 8 bytes */
			ck_assert_uint_le(len, pm->size);
			ck_assert_uint_gt(len + 8, pm->size);
			ck_assert_mem_eq(data, pm->data, len);
			free(owned);
			nshared[t]++;
		}
		h5_ohdr_release(fs, so);
		h5_ohdr_release(fp, po);
	}
	/* libhdf5 leaves the first user of a message in its header (marked
	 * shareable) and shares the datatype and dataspace of the others */
	ck_assert_int_ge(nshared[0], 2);
	ck_assert_int_ge(nshared[1], 2);
	h5_file_close(fs);
	h5_file_close(fp);
	rm_tmpdir();
}
END_TEST

/* ---- the corpus ----------------------------------------------------------- */

/* Catalog: path -> whether libhdf5 opens it ("yes") and whether it then
 * fails to open the root group ("open root" in the notes). */
typedef struct catalog {
	char **path;
	bool *opens;
	bool *root_bad;
	size_t n;
} catalog;

static void catalog_load(catalog *c, const char *dir)
{
	char path[4200], line[65536];
	FILE *fp;

	memset(c, 0, sizeof(*c));
	snprintf(path, sizeof(path), "%s-catalog.tsv", dir);
	fp = fopen(path, "r");
	if (!fp)
		return;
	while (fgets(line, sizeof(line), fp)) {
		char *t1 = strchr(line, '\t'), *t2, *t3, *notes = NULL;
		int col = 3;

		if (!t1)
			continue;
		*t1 = 0;
		t2 = strchr(t1 + 1, '\t');
		if (!t2)
			continue;
		t3 = strchr(t2 + 1, '\t');
		if (!t3)
			continue;
		*t3 = 0;
		/* notes are the 14th column */
		for (char *p = t3 + 1; p && col < 13; col++) {
			p = strchr(p, '\t');
			if (p)
				p++;
			notes = p;
		}
		c->path = realloc(c->path, (c->n + 1) * sizeof(*c->path));
		c->opens = realloc(c->opens, (c->n + 1) * sizeof(*c->opens));
		c->root_bad = realloc(c->root_bad, (c->n + 1) * sizeof(*c->root_bad));
		c->path[c->n] = strdup(line);
		c->opens[c->n] = strcmp(t2 + 1, "yes") == 0;
		c->root_bad[c->n] = notes && strstr(notes, "open root") != NULL;
		c->n++;
	}
	fclose(fp);
}

/* 1: libhdf5 opens the file and its root; 2: opens the file only;
 * 0: does not open it; -1: not in the catalog. */
static int catalog_opens(const catalog *c, const char *rel)
{
	for (size_t i = 0; i < c->n; i++)
		if (strcmp(c->path[i], rel) == 0)
			return c->opens[i] ? (c->root_bad[i] ? 2 : 1) : 0;
	return -1;
}

static catalog walk_cat;
static size_t walk_root_len;
static int walk_files, walk_opened, walk_yes_failed, walk_unsupported;

static int walk_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	const char *rel = path + walk_root_len + 1;
	h5_file *f;
	h5_ohdr *oh;
	h5_obj_info info;
	int rc, yes;

	(void)st;
	(void)ftw;
	if (type != FTW_F)
		return 0;
	walk_files++;
	yes = catalog_opens(&walk_cat, rel);
	rc = h5_file_open(&f, path, NULL);
	if (rc < 0) {
		ck_assert_int_lt(rc, 0);
		ck_assert_int_ge(rc, H5_ERR_LAST);
		if (rc == H5_ERR_UNSUPPORTED && yes >= 1) {
			/* valid HDF5 using a feature we refuse: must say so */
			fprintf(stderr, "corpus: %s: unsupported: %s\n", rel, h5_err_msg());
			/* the only feature of openable corpus files we refuse */
			ck_assert_msg(strstr(h5_err_msg(), "metadata cache image") != NULL, "%s: %s", rel, h5_err_msg());
			walk_unsupported++;
		} else if (yes >= 1) {
			fprintf(stderr, "corpus: %s: libhdf5 opens it, we fail: %s\n", rel, h5_err_msg());
			walk_yes_failed++;
		}
		return 0;
	}
	walk_opened++;
	rc = h5_ohdr_load(&oh, f, h5_file_root(f));
	if (rc == 0) {
		ck_assert_uint_ge(oh->nchunks, 1);
		h5_ohdr_free(oh);
		rc = h5_obj_info_get(&info, f, h5_file_root(f));
		if (rc == 0)
			ck_assert_int_eq(info.kind, H5_OBJ_GROUP);
	}
	if (rc < 0) {
		ck_assert_int_ge(rc, H5_ERR_LAST);
		if (yes == 1) {
			fprintf(stderr, "corpus: %s: root object header: %s\n", rel, h5_err_msg());
			walk_yes_failed++;
		}
	}
	h5_file_close(f);
	return 0;
}

START_TEST(corpus_walk)
{
	const char *dir = test_corpus_dir();
	struct stat st;

	if (stat(dir, &st) != 0) {
		fprintf(stderr, "SKIP: corpus not found at %s\n", dir);
		return;
	}
	catalog_load(&walk_cat, dir);
	walk_root_len = strlen(dir);
	walk_files = walk_opened = walk_yes_failed = walk_unsupported = 0;
	ck_assert_int_eq(nftw(dir, walk_one, 16, FTW_PHYS), 0);
	fprintf(stderr, "corpus: %d files, %d opened, %d unsupported, %d catalog-openable failures "
		"(catalog %zu entries)\n", walk_files, walk_opened, walk_unsupported, walk_yes_failed, walk_cat.n);
	ck_assert_int_gt(walk_files, 0);
	ck_assert_int_eq(walk_yes_failed, 0);
	for (size_t i = 0; i < walk_cat.n; i++)
		free(walk_cat.path[i]);
	free(walk_cat.path);
	free(walk_cat.opens);
	free(walk_cat.root_bad);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("ohdr");
	TCase *tc = tcase_create("ohdr");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, v1_with_continuation);
	tcase_add_test(tc, v1_malformed);
	tcase_add_test(tc, continuation_cycles);
	tcase_add_test(tc, continuation_two_chunk_cycle);
	tcase_add_test(tc, continuation_chunk_limit);
	tcase_add_test(tc, v2_with_continuation);
	tcase_add_test(tc, v2_corruption);
	tcase_add_test(tc, v2_phase_change_and_refcount);
	tcase_add_test(tc, v2_ochk_self_cycle);
	tcase_add_test(tc, mtime_messages);
	tcase_add_test(tc, shared_committed);
	tcase_add_test(tc, msg_read_unshared_and_cache);
	tcase_add_test(tc, obj_info_kinds);
	suite_add_tcase(s, tc);

	tc = tcase_create("files");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, h5py_objects);
	tcase_add_test(tc, h5py_continuations);
	tcase_add_test(tc, h5py_sohm);
	tcase_add_test(tc, corpus_walk);
	suite_add_tcase(s, tc);
	return s;
}

H5_TEST_MAIN(make_suite)
