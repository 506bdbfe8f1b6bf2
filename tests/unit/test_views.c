/* test_views.c - the views of datasets (src/common/views*.c): names and
 * frame names, the NPY header (NumPy's format: versions, alignment, the
 * descr of compounds with padding, nesting and array members), CSV cells,
 * the TIFF prefix (walked back by a small reader here: every IFD, tag and
 * strip, classic and BigTIFF), the PNG parts (every chunk's CRC, the zlib
 * stream inflated back), and views of datasets h5py writes read whole and
 * in windows at odd offsets (the CSV text against the expected text the
 * generator writes by the rules of doc/h5fs.1). */
#define _GNU_SOURCE
#include "config.h"
#include "testutil.h"
#include "views.h"

#include <zlib.h>
#ifdef HAVE_TEST_LIBPNG
#include <png.h>
#endif

static char tmpdir[64];

static void setup(void)
{
	strcpy(tmpdir, "/tmp/h5fs-test-views-XXXXXX");
}

static void teardown(void)
{
	test_tmp_remove(tmpdir);
}

START_TEST(names)
{
	size_t bl;
	uint64_t i;
	unsigned m;
	char buf[40];

	ck_assert_int_eq(vw_kind_of_name("a.npy", &bl), VW_NPY);
	ck_assert_uint_eq(bl, 1);
	ck_assert_int_eq(vw_kind_of_name("a.b.tiff", &bl), VW_TIFF);
	ck_assert_uint_eq(bl, 3);
	ck_assert_int_eq(vw_kind_of_name("x.frames", &bl), VW_FRAMES);
	ck_assert_int_eq(vw_kind_of_name(".npy", &bl), VW_NONE);
	ck_assert_int_eq(vw_kind_of_name("a.tif", &bl), VW_NONE);
	ck_assert_int_eq(vw_kind_of_name("a.NPY", &bl), VW_NONE);
	vw_frame_name(buf, sizeof(buf), 12, 100);
	ck_assert_str_eq(buf, "000012.tiff");
	vw_frame_name(buf, sizeof(buf), 999999, 1000000);
	ck_assert_str_eq(buf, "999999.tiff");
	vw_frame_name(buf, sizeof(buf), 5, 1000001);
	ck_assert_str_eq(buf, "0000005.tiff");
	ck_assert_int_eq(vw_frame_index(&i, "000012.tiff", 100), 0);
	ck_assert_uint_eq(i, 12);
	ck_assert_int_eq(vw_frame_index(&i, "000100.tiff", 100), -1);
	ck_assert_int_eq(vw_frame_index(&i, "12.tiff", 100), -1);
	ck_assert_int_eq(vw_frame_index(&i, "0000012.tiff", 100), -1);
	ck_assert_int_eq(vw_frame_index(&i, "00001a.tiff", 100), -1);
	ck_assert_int_eq(vw_frame_index(&i, "0000005.tiff", 1000001), 0);
	ck_assert_uint_eq(i, 5);
	ck_assert_int_eq(vw_parse_list(&m, NULL), 0);
	ck_assert_uint_eq(m, VW_LISTABLE);
	ck_assert_int_eq(vw_parse_list(&m, "npy,frames"), 0);
	ck_assert_uint_eq(m, VW_BIT(VW_NPY) | VW_BIT(VW_FRAMES));
	ck_assert_int_eq(vw_parse_list(&m, "npy,gif"), -1);
	ck_assert_str_eq(vw_name(VW_FRAME), "frame");
}
END_TEST

static h5_type_view num(const char *ts, unsigned size)
{
	h5_type_view t;

	memset(&t, 0, sizeof(t));
	t.kind = H5_TYPE_NUMBER;
	t.size = size;
	t.typestr = (char *)ts;
	return t;
}

/* The header's dict (between the length field and the padding). */
static void check_npy(const char *h, size_t len, int version, const char *dict)
{
	size_t pre = version == 1 ? 10 : 12, hl = 0;

	ck_assert_uint_eq(len % 64, 0);
	ck_assert_int_eq(memcmp(h, "\x93NUMPY", 6), 0);
	ck_assert_int_eq(h[6], version);
	ck_assert_int_eq(h[7], 0);
	for (size_t i = 0; i < pre - 8; i++)
		hl |= (size_t)(uint8_t)h[8 + i] << (8 * i);
	ck_assert_uint_eq(hl + pre, len);
	ck_assert_int_eq(h[len - 1], '\n');
	ck_assert_int_eq(memcmp(h + pre, dict, strlen(dict)), 0);
	if (dict[strlen(dict) - 1] != '}')
		return;         /* the start of it only */
	for (size_t i = pre + strlen(dict); i < len - 1; i++)
		ck_assert_int_eq(h[i], ' ');
}

START_TEST(npy_header)
{
	h5_type_view t = num("<f8", 8), c, m[4], arr, vs;
	uint64_t dims[2] = { 3, 4 };
	char *h;
	size_t len;

	ck_assert_int_eq(vw_npy_header(&h, &len, &t, 2, dims), 0);
	check_npy(h, len, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }");
	free(h);
	ck_assert_int_eq(vw_npy_header(&h, &len, &t, 1, dims), 0);
	check_npy(h, len, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }");
	free(h);
	ck_assert_int_eq(vw_npy_header(&h, &len, &t, 0, NULL), 0);
	check_npy(h, len, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }");
	free(h);

	/* members out of order, a gap, trailing padding, an array member,
	 * a quote in a name */
	memset(&c, 0, sizeof(c));
	c.kind = H5_TYPE_COMPOUND;
	c.size = 40;
	c.typestr = "|V40";
	m[0] = num(">i2", 2);
	m[0].name = "b";
	m[0].offset = 8;
	m[1] = num("|u1", 1);
	m[1].name = "it's";
	m[1].offset = 0;
	memset(&arr, 0, sizeof(arr));
	arr = num("<f4", 4);
	memset(&m[2], 0, sizeof(m[2]));
	m[2].kind = H5_TYPE_ARRAY;
	m[2].size = 24;
	m[2].typestr = "|V24";
	m[2].name = "a";
	m[2].offset = 12;
	m[2].arank = 2;
	m[2].adims[0] = 2;
	m[2].adims[1] = 3;
	m[2].nmembers = 1;
	m[2].members = &arr;
	c.nmembers = 3;
	c.members = m;
	ck_assert_int_eq(vw_npy_header(&h, &len, &c, 1, dims), 0);
	check_npy(h, len, 1, "{'descr': [('it\\'s', '|u1'), ('', '|V7'), ('b', '>i2'), ('', '|V2'), "
		  "('a', '<f4', (2, 3)), ('', '|V4')], 'fortran_order': False, 'shape': (3,), }");
	free(h);
	/* an array type: its dimensions join the shape */
	ck_assert_int_eq(vw_npy_header(&h, &len, &m[2], 2, dims), 0);
	check_npy(h, len, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4, 2, 3), }");
	free(h);
	/* overlapping members: no NPY */
	m[0].offset = 0;
	ck_assert_int_eq(vw_npy_header(&h, &len, &c, 1, dims), H5_ERR_NOTFOUND);
	m[0].offset = 8;
	/* UTF-8 names: version 3.0 */
	m[0].name = "\xc3\xa9t\xc3\xa9";
	ck_assert_int_eq(vw_npy_header(&h, &len, &c, 1, dims), 0);
	ck_assert_int_eq(h[6], 3);
	/* the header is bytes, not a C string: no NUL after its newline */
	ck_assert_ptr_nonnull(memmem(h + 12, len - 12, "('\xc3\xa9t\xc3\xa9', '>i2')",
				     strlen("('\xc3\xa9t\xc3\xa9', '>i2')")));
	free(h);
	/* variable-length data: no NPY */
	vs = num("|O", 16);
	vs.kind = H5_TYPE_VSTRING;
	ck_assert_int_eq(vw_npy_header(&h, &len, &vs, 1, dims), H5_ERR_NOTFOUND);
}
END_TEST

START_TEST(npy_header_v2)
{
	enum { N = 6000 };
	h5_type_view c, *m = calloc(N, sizeof(*m));
	static char fname[N][8];
	uint64_t d = 2;
	char *h;
	size_t len;

	ck_assert_ptr_nonnull(m);
	memset(&c, 0, sizeof(c));
	c.kind = H5_TYPE_COMPOUND;
	c.size = N;
	c.typestr = "|V6000";
	for (int i = 0; i < N; i++) {
		m[i] = num("|u1", 1);
		snprintf(fname[i], sizeof(fname[i]), "f%d", i);
		m[i].name = fname[i];
		m[i].offset = (uint32_t)i;
	}
	c.nmembers = N;
	c.members = m;
	ck_assert_int_eq(vw_npy_header(&h, &len, &c, 1, &d), 0);
	ck_assert_uint_gt(len, 65535);
	ck_assert_int_eq(h[6], 2);
	check_npy(h, len, 2, "{'descr': [('f0', '|u1'), ('f1', '|u1'), ");
	free(h);
	free(m);
}
END_TEST

START_TEST(csv_cells)
{
	char *b = NULL;
	size_t len = 0, cap = 0;

	ck_assert_int_eq(vw_csv_cell(&b, &len, &cap, "1.5", 3), 0);
	ck_assert_int_eq(vw_buf_put(&b, &len, &cap, ",", 1), 0);
	ck_assert_int_eq(vw_csv_cell(&b, &len, &cap, "a,b", 3), 0);
	ck_assert_int_eq(vw_buf_put(&b, &len, &cap, ",", 1), 0);
	ck_assert_int_eq(vw_csv_cell(&b, &len, &cap, "say \"hi\"", 8), 0);
	ck_assert_int_eq(vw_buf_put(&b, &len, &cap, ",", 1), 0);
	ck_assert_int_eq(vw_csv_cell(&b, &len, &cap, "two\nlines", 9), 0);
	ck_assert_int_eq(vw_buf_put(&b, &len, &cap, ",", 1), 0);
	ck_assert_int_eq(vw_csv_cell(&b, &len, &cap, "", 0), 0);
	ck_assert_str_eq(b, "1.5,\"a,b\",\"say \"\"hi\"\"\",\"two\nlines\",");
	ck_assert_uint_eq(len, strlen(b));
	free(b);
}
END_TEST

/* ---- a small TIFF reader -------------------------------------------------- */

struct rd {
	const uint8_t *p;
	size_t n;
	bool be;
};

static uint64_t get(const struct rd *r, uint64_t off, unsigned n)
{
	uint64_t v = 0;

	ck_assert_uint_le(off + n, r->n);
	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)r->p[off + (r->be ? n - 1 - i : i)] << (8 * i);
	return v;
}

/* The value of tag in the IFD at off: its count and the value or, for
 * arrays, element idx. */
static uint64_t tag_val(const struct rd *r, bool big, uint64_t ifd, unsigned tag, uint64_t idx, uint64_t *count)
{
	uint64_t n = get(r, ifd, big ? 8 : 2), e = ifd + (big ? 8 : 2);
	unsigned es = big ? 20 : 12, cs = big ? 8 : 4;
	unsigned last = 0;

	for (uint64_t i = 0; i < n; i++, e += es) {
		unsigned t = (unsigned)get(r, e, 2), type = (unsigned)get(r, e + 2, 2);
		unsigned sz = type == 3 ? 2 : type == 4 ? 4 : type == 5 ? 8 : type == 16 ? 8 : 0;
		uint64_t c = get(r, e + 4, cs), at;

		ck_assert_uint_gt(t, last);     /* ascending tags */
		last = t;
		ck_assert_uint_ne(sz, 0);
		if (t != tag)
			continue;
		*count = c;
		at = c * sz <= cs ? e + 4 + cs : get(r, e + 4 + cs, cs);
		ck_assert_uint_eq(at % 2, 0);   /* word-aligned */
		if (type == 5)
			return get(r, at + idx * 8, 4) * 1000 + get(r, at + idx * 8 + 4, 4);
		return get(r, at + idx * sz, sz);
	}
	ck_abort_msg("tag %u missing", tag);
	return 0;
}

static void check_tiff(uint64_t n, uint64_t h, uint64_t w, unsigned bytes, unsigned format, bool be, bool big)
{
	struct vw_tiff t;
	uint8_t *p, *q;
	struct rd r;
	uint64_t ifd, page = 0, cnt;

	ck_assert_int_eq(vw_tiff_layout(&t, n, h, w, bytes, format, be, big), 0);
	ck_assert(t.big == big);
	ck_assert_uint_eq(t.size, t.prefix + n * h * w * bytes);
	p = malloc(t.prefix);
	q = malloc(t.prefix);
	ck_assert_int_eq(vw_tiff_prefix(&t, p, 0, t.prefix), 0);
	/* windows at odd offsets give the same bytes */
	for (uint64_t off = 0; off < t.prefix; off += 37) {
		size_t len = (size_t)(off % 101 + 1);

		if (off + len > t.prefix)
			len = (size_t)(t.prefix - off);
		memset(q, 0xee, len);
		ck_assert_int_eq(vw_tiff_prefix(&t, q, off, len), 0);
		ck_assert_int_eq(memcmp(q, p + off, len), 0);
	}
	r.p = p;
	r.n = (size_t)t.prefix;
	r.be = be && bytes > 1;
	ck_assert_int_eq(p[0], r.be ? 'M' : 'I');
	ck_assert_uint_eq(get(&r, 2, 2), big ? 43 : 42);
	ifd = big ? get(&r, 8, 8) : get(&r, 4, 4);
	while (ifd) {
		uint64_t ns, rps, data = t.prefix + page * h * w * bytes, at = data;

		ck_assert_uint_eq(tag_val(&r, big, ifd, 256, 0, &cnt), w);
		ck_assert_uint_eq(tag_val(&r, big, ifd, 257, 0, &cnt), h);
		ck_assert_uint_eq(tag_val(&r, big, ifd, 258, 0, &cnt), bytes * 8);
		ck_assert_uint_eq(tag_val(&r, big, ifd, 259, 0, &cnt), 1);
		ck_assert_uint_eq(tag_val(&r, big, ifd, 262, 0, &cnt), 1);
		ck_assert_uint_eq(tag_val(&r, big, ifd, 277, 0, &cnt), 1);
		ck_assert_uint_eq(tag_val(&r, big, ifd, 282, 0, &cnt), 1001);
		ck_assert_uint_eq(tag_val(&r, big, ifd, 339, 0, &cnt), format);
		rps = tag_val(&r, big, ifd, 278, 0, &cnt);
		tag_val(&r, big, ifd, 273, 0, &ns);
		ck_assert_uint_eq(ns, (h + rps - 1) / rps);
		/* the strips tile the page, in order */
		for (uint64_t s = 0; s < ns; s++) {
			uint64_t so = tag_val(&r, big, ifd, 273, s, &cnt), sc = tag_val(&r, big, ifd, 279, s, &cnt);

			ck_assert_uint_eq(so, at);
			ck_assert_uint_eq(sc % (w * bytes), 0);
			at += sc;
		}
		ck_assert_uint_eq(at, data + h * w * bytes);
		page++;
		{
			uint64_t e = ifd + (big ? 8 : 2) + get(&r, ifd, big ? 8 : 2) * (big ? 20 : 12);

			ifd = get(&r, e, big ? 8 : 4);
		}
	}
	ck_assert_uint_eq(page, n);
	free(p);
	free(q);
}

START_TEST(tiff_layout)
{
	check_tiff(1, 3, 4, 8, 3, false, false);
	check_tiff(5, 40, 30, 2, 1, true, false);
	check_tiff(3, 1000, 300, 4, 2, false, false);   /* several strips */
	check_tiff(3, 1000, 300, 4, 2, true, true);     /* BigTIFF */
	check_tiff(2, 7, 70000, 1, 1, false, false);    /* rows over 64 KiB */
	check_tiff(1, 1, 1, 1, 1, false, true);
}
END_TEST

START_TEST(tiff_big_when_needed)
{
	struct vw_tiff t;

	/* 5 GiB of samples: offsets need 64 bits */
	ck_assert_int_eq(vw_tiff_layout(&t, 5, 1024, 1024 * 256, 4, 3, false, false), 0);
	ck_assert(t.big);
	ck_assert_int_eq(vw_tiff_layout(&t, 3, 1024, 1024 * 256, 4, 3, false, false), 0);
	ck_assert(!t.big);
	ck_assert_int_eq(vw_tiff_layout(&t, 1, 0, 4, 1, 1, false, false), H5_ERR_NOTFOUND);
	ck_assert_int_eq(vw_tiff_layout(&t, 1, 4, 4, 3, 1, false, false), H5_ERR_NOTFOUND);
}
END_TEST

/* ---- PNG ------------------------------------------------------------------ */

START_TEST(png_parts)
{
	struct vw_png p;
	uint64_t h = 300, w = 250;
	unsigned c = 3;
	uint8_t *stream, *file, *idat, *out;
	size_t nidat = 0;
	uLongf outlen;
	uLong ad = adler32(0L, Z_NULL, 0);

	ck_assert_int_eq(vw_png_layout(&p, h, w, c, 8), 0);
	ck_assert_uint_eq(p.nblocks, 4);
	stream = malloc(p.stream);
	for (uint64_t i = 0; i < p.stream; i++)
		stream[i] = i % p.row == 0 ? 0 : (uint8_t)(i * 7);
	file = malloc(p.size);
	vw_png_head(&p, file, 0, (size_t)vw_png_block_off(&p, 0));
	for (uint64_t k = 0; k < p.nblocks; k++) {
		uint64_t a = k * VW_PNG_BLOCK, b = a + VW_PNG_BLOCK < p.stream ? a + VW_PNG_BLOCK : p.stream;
		uint32_t bad;

		vw_png_block(&p, file + vw_png_block_off(&p, k), k, stream + a, (size_t)(b - a), &bad);
		ck_assert_uint_eq(bad, adler32(adler32(0L, Z_NULL, 0), stream + a, (uInt)(b - a)));
		ad = adler32_combine(ad, bad, (z_off_t)(b - a));
	}
	ck_assert_uint_eq(ad, adler32(adler32(0L, Z_NULL, 0), stream, (uInt)p.stream));
	vw_png_tail(&p, file + vw_png_block_off(&p, p.nblocks), 0, 28, (uint32_t)ad);
	/* walk the chunks: lengths, CRCs, the IDAT data inflated back */
	ck_assert_int_eq(memcmp(file, "\x89PNG\r\n\x1a\n", 8), 0);
	idat = malloc(p.size);
	for (uint64_t at = 8; at < p.size;) {
		uint32_t len = (uint32_t)file[at] << 24 | (uint32_t)file[at + 1] << 16 | (uint32_t)file[at + 2] << 8 |
			       file[at + 3];
		uint32_t crc = (uint32_t)file[at + 8 + len] << 24 | (uint32_t)file[at + 9 + len] << 16 |
			       (uint32_t)file[at + 10 + len] << 8 | file[at + 11 + len];

		ck_assert_uint_eq(crc, crc32(0L, file + at + 4, len + 4));
		if (memcmp(file + at + 4, "IDAT", 4) == 0) {
			memcpy(idat + nidat, file + at + 8, len);
			nidat += len;
		}
		if (memcmp(file + at + 4, "IHDR", 4) == 0) {
			ck_assert_uint_eq(file[at + 8 + 8], 8);
			ck_assert_uint_eq(file[at + 8 + 9], 2);
		}
		at += 12 + len;
		if (at == p.size)
			ck_assert_int_eq(memcmp(file + at - 8, "IEND", 4), 0);
	}
	out = malloc(p.stream);
	outlen = (uLongf)p.stream;
	ck_assert_int_eq(uncompress(out, &outlen, idat, (uLong)nidat), Z_OK);
	ck_assert_uint_eq(outlen, p.stream);
	ck_assert_int_eq(memcmp(out, stream, p.stream), 0);
	ck_assert_int_eq(vw_png_layout(&p, 2, 2, 2, 8), H5_ERR_NOTFOUND);
	free(stream);
	free(file);
	free(idat);
	free(out);
}
END_TEST

/* ---- views of datasets ------------------------------------------------------ */

/* NAME.csv: the expected CSV text (numbers by doc/h5fs.1's rules:
 * integers in decimal, floats as Python's repr() of the shortest decimal
 * of the stored width). */
static const char gen_script[] =
	"import sys\n"
	"try:\n"
	"    import h5py, numpy as np\n"
	"except ImportError:\n"
	"    sys.exit(77)\n"
	"d = sys.argv[1]\n"
	"def num(v):\n"
	"    if isinstance(v, (np.floating, float)):\n"
	"        return repr(float(np.format_float_positional(v, unique=True, trim='-')))\n"
	"    return str(int(v))\n"
	"def cell(s):\n"
	"    return '\"' + s.replace('\"', '\"\"') + '\"' if any(c in s for c in ',\"\\n\\r') else s\n"
	"rng = np.random.default_rng(5)\n"
	"with h5py.File(d + '/v.h5', 'w') as f:\n"
	"    a = (rng.standard_normal((700, 3)) * 10.0 ** rng.integers(-6, 20, (700, 3))).astype('<f8')\n"
	"    a[0, 0] = 1.0; a[1, 1] = -0.0; a[2, 2] = 1e16\n"
	"    f.create_dataset('f8', data=a, chunks=(64, 3), compression='gzip')\n"
	"    open(d + '/f8.csv', 'w').write(''.join(','.join(num(v) for v in r) + '\\n' for r in a))\n"
	"    b = rng.standard_normal(600).astype('>f4')\n"
	"    f['f4'] = b\n"
	"    open(d + '/f4.csv', 'w').write(''.join(num(v) + '\\n' for v in b))\n"
	"    t = np.zeros(900, dtype=[('id', '<i8'), ('na,me', 'S6'), ('v', '<u2')])\n"
	"    t['id'] = np.arange(900) * -3; t['v'] = np.arange(900) % 65536\n"
	"    t['na,me'] = [('n%d' % i + (',' if i % 7 == 0 else '') + ('\"' if i % 11 == 0 else '')).encode()[:6] for i in range(900)]\n"
	"    f['t'] = t\n"
	"    rows = ['id,\"na,me\",v'] + [','.join([str(r['id']), cell(r['na,me'].decode()), str(r['v'])]) for r in t]\n"
	"    open(d + '/t.csv', 'w').write('\\n'.join(rows) + '\\n')\n"
	"    f['img16'] = rng.integers(0, 65536, (97, 301)).astype('<u2')\n"
	"    f.create_dataset('stack', data=rng.integers(-2**31, 2**31, (4, 33, 45)).astype('>i4'), chunks=(1, 11, 45), compression='gzip')\n"
	"    f['s'] = h5py.Empty('f4')\n";

struct fix {
	h5_file *f;
	h5_dataset *d;
};

static int open_ds(struct fix *x, const char *name)
{
	char path[256];
	h5_link l;

	if (!tmpdir[0] || strstr(tmpdir, "XXXXXX")) {
		int st = test_py_run(tmpdir, gen_script, NULL);

		if (st == 77 || st == TEST_PY_NO_PYTHON) {
			fprintf(stderr, "test_views: no /usr/bin/python3 with h5py: skipped\n");
			return 77;
		}
		ck_assert_msg(st == 0, "h5py generator failed: %d", st);
	}
	snprintf(path, sizeof(path), "%s/v.h5", tmpdir);
	ck_assert_msg(h5_file_open(&x->f, path, NULL) == 0, "%s", h5_err_msg());
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(h5_group_lookup(&l, x->f, h5_file_root(x->f), name), 0);
	ck_assert_msg(h5_dataset_open(&x->d, x->f, l.addr) == 0, "%s", h5_err_msg());
	h5_link_clear(&l);
	return 0;
}

static void close_ds(struct fix *x)
{
	h5_dataset_close(x->d);
	h5_file_close(x->f);
}

static uint8_t *slurp(const char *name, size_t *len)
{
	char path[256];
	FILE *fp;
	uint8_t *p;
	long n;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	fp = fopen(path, "rb");
	ck_assert_msg(fp != NULL, "%s", path);
	fseek(fp, 0, SEEK_END);
	n = ftell(fp);
	rewind(fp);
	p = malloc((size_t)n + 1);
	ck_assert_uint_eq(fread(p, 1, (size_t)n, fp), (size_t)n);
	fclose(fp);
	*len = (size_t)n;
	return p;
}

/* The whole view, then windows at odd offsets through read and map. */
static uint8_t *read_view(h5_dataset *d, const h5_view_ops *ops, uint64_t *size)
{
	uint64_t n = ops->size(d);
	uint8_t *all = malloc(n + 1), *w = malloc(70001);

	ck_assert_msg(ops->read(d, all, 0, (size_t)n) == 0, "%s", h5_err_msg());
	for (uint64_t off = 0; off < n; off += 1 + off / 3 + 7919 % (off + 3)) {
		size_t len = (size_t)(off * 31 % 70000 + 1);
		h5_read_plan pl;

		if (off + len > n)
			len = (size_t)(n - off);
		memset(w, 0, len);
		ck_assert_msg(ops->read(d, w, off, len) == 0, "%s", h5_err_msg());
		ck_assert_msg(memcmp(w, all + off, len) == 0, "read [%llu+%zu]", (unsigned long long)off, len);
		ck_assert_msg(ops->map(&pl, d, off, len, H5_MAP_NO_SPLICE) == 0, "%s", h5_err_msg());
		if (pl.kind == H5_PLAN_BUFFER) {
			ck_assert_uint_eq(pl.len, len);
			ck_assert_int_eq(memcmp(pl.buf, all + off, len), 0);
		} else if (pl.kind == H5_PLAN_PINNED) {
			size_t at = 0;

			for (size_t i = 0; i < pl.pin.niov; i++) {
				ck_assert_int_eq(memcmp(pl.pin.iov[i].iov_base, all + off + at, pl.pin.iov[i].iov_len), 0);
				at += pl.pin.iov[i].iov_len;
			}
			ck_assert_uint_eq(at, len);
		}
		h5_read_plan_release(&pl);
	}
	free(w);
	*size = n;
	return all;
}

static void check_csv(const char *name)
{
	struct fix x;
	const h5_view_ops *ops;
	uint8_t *got, *want;
	uint64_t n;
	size_t wn;
	char file[64];

	if (open_ds(&x, name) == 77)
		return;
	ck_assert_msg(vw_open(&ops, x.d, VW_CSV, 0) == 0, "%s", h5_err_msg());
	got = read_view(x.d, ops, &n);
	snprintf(file, sizeof(file), "%s.csv", name);
	want = slurp(file, &wn);
	ck_assert_uint_eq(n, wn);
	for (size_t i = 0; i < wn; i++)
		ck_assert_msg(got[i] == want[i], "%s: first difference at %zu: ...%.40s", name, i,
			      (char *)want + (i > 20 ? i - 20 : 0));
	free(got);
	free(want);
	close_ds(&x);
}

START_TEST(csv_views)
{
	check_csv("f8");
	check_csv("f4");
	check_csv("t");
}
END_TEST

/* Rows in as text (issue 83 item 4): the view's own text parsed back
 * gives the dataset's bytes (floats of every magnitude, -0.0, a table's
 * quoted strings, its header skipped); records cut anywhere wait for the
 * rest; a bad record refuses the whole text and leaves c as before. */
static void check_csv_in(const char *name)
{
	struct fix x;
	const h5_view_ops *ops;
	struct vw_csv_in *c = NULL;
	uint8_t *text, *raw, *rows = NULL;
	uint64_t n, rn;
	size_t nb = 0, used = 0, cut;

	if (open_ds(&x, name) == 77)
		return;
	ck_assert_int_eq(vw_open(&ops, x.d, VW_CSV, 0), 0);
	text = read_view(x.d, ops, &n);
	rn = h5_view_raw.size(x.d);
	raw = malloc(rn);
	ck_assert_int_eq(h5_view_raw.read(x.d, raw, 0, rn), 0);
	ck_assert_msg(vw_csv_in_new(&c, x.d) == 0, "%s", h5_err_msg());
	ck_assert_msg(vw_csv_in_parse(c, &rows, &nb, &used, (char *)text, n, true) == 0, "%s: %s", name, h5_err_msg());
	ck_assert_uint_eq(used, n);
	ck_assert_uint_eq(nb, rn);
	ck_assert_msg(memcmp(rows, raw, rn) == 0, "%s: the text parsed back differs", name);
	free(rows);
	vw_csv_in_free(c);
	/* cut in the middle of a record: the rows before it, the rest kept */
	ck_assert_int_eq(vw_csv_in_new(&c, x.d), 0);
	cut = (size_t)n / 2 + 3;
	ck_assert_int_eq(vw_csv_in_parse(c, &rows, &nb, &used, (char *)text, cut, false), 0);
	ck_assert_uint_lt(used, cut);
	ck_assert_int_eq(nb % vw_csv_in_row_bytes(c), 0);
	ck_assert_int_eq(memcmp(rows, raw, nb), 0);
	free(rows);
	{
		size_t first = nb;

		ck_assert_int_eq(vw_csv_in_parse(c, &rows, &nb, &used, (char *)text + (n / 2 + 3 - (cut - used)),
						 n - (n / 2 + 3 - (cut - used)), true), 0);
		ck_assert_uint_eq(first + nb, rn);
		ck_assert_int_eq(memcmp(rows, raw + first, nb), 0);
		free(rows);
	}
	vw_csv_in_free(c);
	free(text);
	free(raw);
	close_ds(&x);
}

START_TEST(csv_in)
{
	struct fix x;
	struct vw_csv_in *c = NULL;
	uint8_t *rows = NULL;
	size_t nb = 0, used = 0;
	double want[9] = { 1.5, 2, 0, -0.0, 1e16, 1, 3, 4, 5 };
	const char *good = "1.5,2,0\r\n-0.0,\"1e16\",1\n 3 ,4,5\n";

	check_csv_in("f8");
	check_csv_in("f4");
	check_csv_in("t");
	if (open_ds(&x, "f8") == 77)       /* (700, 3) */
		return;
	ck_assert_int_eq(vw_csv_in_new(&c, x.d), 0);
	/* CRLF, a quoted number, white space around one */
	ck_assert_msg(vw_csv_in_parse(c, &rows, &nb, &used, good, strlen(good), false) == 0, "%s", h5_err_msg());
	ck_assert_uint_eq(used, strlen(good));
	ck_assert_uint_eq(nb, sizeof(want));
	ck_assert_int_eq(memcmp(rows, want, nb), 0);
	free(rows);
	/* a bad third line: nothing given, and the line named */
	ck_assert_int_eq(vw_csv_in_parse(c, &rows, &nb, &used, "1,2,3\n3,4,5\n5,x,6\n", 18, false), H5_ERR_INVAL);
	ck_assert_ptr_null(rows);
	ck_assert_msg(strstr(h5_err_msg(), "line 6, cell 2"), "%s", h5_err_msg());
	ck_assert_int_eq(vw_csv_in_parse(c, &rows, &nb, &used, "1,2,3,4\n", 8, false), H5_ERR_INVAL);
	ck_assert_int_eq(vw_csv_in_parse(c, &rows, &nb, &used, "1,2\n", 4, false), H5_ERR_INVAL);
	ck_assert_int_eq(vw_csv_in_parse(c, &rows, &nb, &used, "\"1,2,3\n", 7, true), H5_ERR_INVAL);
	/* an unended record waits, unless the text ends there */
	ck_assert_int_eq(vw_csv_in_parse(c, &rows, &nb, &used, "7,8,9", 5, false), 0);
	ck_assert_uint_eq(used, 0);
	ck_assert_uint_eq(nb, 0);
	free(rows);
	ck_assert_int_eq(vw_csv_in_parse(c, &rows, &nb, &used, "7,8,9", 5, true), 0);
	ck_assert_uint_eq(nb, 24);
	free(rows);
	vw_csv_in_free(c);
	close_ds(&x);
}
END_TEST

START_TEST(prefixed_views)
{
	struct fix x;
	const h5_view_ops *ops;
	uint8_t *got, *raw;
	uint64_t n, rn;
	struct vw_tiff t;

	if (open_ds(&x, "stack") == 77)
		return;
	rn = h5_view_raw.size(x.d);
	raw = malloc(rn);
	ck_assert_int_eq(h5_view_raw.read(x.d, raw, 0, rn), 0);
	ck_assert_uint_eq(vw_kinds(x.d), VW_BIT(VW_NPY) | VW_BIT(VW_TIFF) | VW_BIT(VW_FRAMES));
	ck_assert_int_eq(vw_open(&ops, x.d, VW_NPY, 0), 0);
	got = read_view(x.d, ops, &n);
	ck_assert_uint_eq(n % 64, rn % 64);
	ck_assert_int_eq(memcmp(got + (n - rn), raw, rn), 0);
	ck_assert_ptr_nonnull(memmem(got, 128, "'descr': '>i4'", 14));
	free(got);
	ck_assert_int_eq(vw_open(&ops, x.d, VW_TIFF, 0), 0);
	got = read_view(x.d, ops, &n);
	ck_assert_int_eq(vw_tiff_layout(&t, 4, 33, 45, 4, 2, true, false), 0);
	ck_assert_uint_eq(n, t.size);
	ck_assert_int_eq(memcmp(got, "MM", 2), 0);
	ck_assert_int_eq(memcmp(got + t.prefix, raw, rn), 0);
	free(got);
	ck_assert_int_eq(vw_open(&ops, x.d, VW_FRAME, 2), 0);
	got = read_view(x.d, ops, &n);
	ck_assert_int_eq(vw_tiff_layout(&t, 1, 33, 45, 4, 2, true, false), 0);
	ck_assert_uint_eq(n, t.size);
	ck_assert_int_eq(memcmp(got + t.prefix, raw + 2 * 33 * 45 * 4, 33 * 45 * 4), 0);
	free(got);
	ck_assert_int_eq(vw_open(&ops, x.d, VW_FRAME, 4), H5_ERR_NOTFOUND);
	ck_assert_int_eq(vw_open(&ops, x.d, VW_PNG, 0), H5_ERR_NOTFOUND);
	ck_assert_int_eq(vw_open(&ops, x.d, VW_CSV, 0), H5_ERR_NOTFOUND);
	free(raw);
	close_ds(&x);
	/* a null dataspace has none */
	if (open_ds(&x, "s") == 77)
		return;
	ck_assert_uint_eq(vw_kinds(x.d), 0);
	ck_assert_int_eq(vw_open(&ops, x.d, VW_NPY, 0), H5_ERR_NOTFOUND);
	close_ds(&x);
}
END_TEST

#ifdef HAVE_TEST_LIBPNG
struct mem {
	const uint8_t *p;
	size_t n, at;
};

static void mem_read(png_structp png, png_bytep out, png_size_t n)
{
	struct mem *m = png_get_io_ptr(png);

	if (m->at + n > m->n)
		png_error(png, "read past the end");
	memcpy(out, m->p + m->at, n);
	m->at += n;
}

/* libpng decodes the PNG (CRCs, the zlib stream and its Adler-32 checked)
 * into rows of 16-bit samples in host order: 0, or why not. */
static const char *libpng_decode(const uint8_t *png, size_t n, uint16_t *out, uint32_t h, uint32_t w)
{
	static char why[128];
	png_structp p = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
	png_infop info = png_create_info_struct(p);
	struct mem m = { png, n, 0 };
	const char *rc = NULL;

	if (setjmp(png_jmpbuf(p))) {
		snprintf(why, sizeof(why), "libpng failed");
		rc = why;
		goto out;
	}
	png_set_read_fn(p, &m, mem_read);
	png_read_info(p, info);
	if (png_get_image_width(p, info) != w || png_get_image_height(p, info) != h ||
	    png_get_bit_depth(p, info) != 16 || png_get_color_type(p, info) != PNG_COLOR_TYPE_GRAY) {
		rc = "IHDR";
		goto out;
	}
	png_set_swap(p);        /* big-endian samples to the host's (little) order */
	for (uint32_t r = 0; r < h; r++)
		png_read_row(p, (png_bytep)(out + (size_t)r * w), NULL);
	png_read_end(p, NULL);
out:
	png_destroy_read_struct(&p, &info, NULL);
	return rc;
}
#endif

START_TEST(png_view)
{
	struct fix x;
	const h5_view_ops *ops;
	uint8_t *got, *raw, *idat, *out;
	uint64_t n, rn;
	size_t ni = 0;
	uLongf ol;

	if (open_ds(&x, "img16") == 77)
		return;
	rn = h5_view_raw.size(x.d);
	raw = malloc(rn);
	ck_assert_int_eq(h5_view_raw.read(x.d, raw, 0, rn), 0);
	ck_assert_int_eq(vw_open(&ops, x.d, VW_PNG, 0), 0);
	got = read_view(x.d, ops, &n);
	idat = malloc(n);
	for (uint64_t at = 8; at < n;) {
		uint32_t len = (uint32_t)got[at] << 24 | (uint32_t)got[at + 1] << 16 | (uint32_t)got[at + 2] << 8 |
			       got[at + 3];

		if (memcmp(got + at + 4, "IDAT", 4) == 0) {
			memcpy(idat + ni, got + at + 8, len);
			ni += len;
		}
		at += 12 + len;
	}
	ol = 97 * (1 + 301 * 2);
	out = malloc(ol);
	ck_assert_int_eq(uncompress(out, &ol, idat, (uLong)ni), Z_OK);
	for (uint64_t r = 0; r < 97; r++) {
		ck_assert_int_eq(out[r * 603], 0);
		for (uint64_t c = 0; c < 301; c++) {
			/* big-endian samples of the little-endian dataset */
			ck_assert_int_eq(out[r * 603 + 1 + 2 * c], raw[(r * 301 + c) * 2 + 1]);
			ck_assert_int_eq(out[r * 603 + 2 + 2 * c], raw[(r * 301 + c) * 2]);
		}
	}
#ifdef HAVE_TEST_LIBPNG
	{
		uint16_t *px = malloc(97 * 301 * 2);
		const char *why = libpng_decode(got, n, px, 97, 301);

		ck_assert_msg(why == NULL, "libpng: %s", why);
		ck_assert_int_eq(memcmp(px, raw, 97 * 301 * 2), 0);     /* <u2 on a little-endian host */
		/* a flipped pixel byte: libpng finds the chunk's CRC wrong */
		got[200] ^= 1;  /* in block 0's samples */
		ck_assert_ptr_nonnull(libpng_decode(got, n, px, 97, 301));
		free(px);
	}
#else
	fprintf(stderr, "test_views: built without libpng: the PNG view is not decoded by it\n");
#endif
	free(got);
	free(idat);
	free(out);
	free(raw);
	close_ds(&x);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("views");
	TCase *tc = tcase_create("encoders");
	TCase *td = tcase_create("datasets");

	tcase_add_test(tc, names);
	tcase_add_test(tc, npy_header);
	tcase_add_test(tc, npy_header_v2);
	tcase_add_test(tc, csv_cells);
	tcase_add_test(tc, tiff_layout);
	tcase_add_test(tc, tiff_big_when_needed);
	tcase_add_test(tc, png_parts);
	suite_add_tcase(s, tc);
	tcase_add_checked_fixture(td, setup, teardown);
	tcase_set_timeout(td, 120);
	tcase_add_test(td, csv_views);
	tcase_add_test(td, csv_in);
	tcase_add_test(td, prefixed_views);
	tcase_add_test(td, png_view);
	suite_add_tcase(s, td);
	return s;
}

H5_TEST_MAIN(make_suite)
