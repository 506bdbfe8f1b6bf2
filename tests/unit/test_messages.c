/* test_messages.c - the pure message decoders: dataspace, datatype, fill
 * value, data layout, filter pipeline, external file list.
 *
 * Two kinds of tests: hand-built buffers for every version and class,
 * including corrupt ones, and message bodies taken from real files
 * (messages_vectors.h, made by gen_messages.py) whose decoding must print
 * exactly what libhdf5 reports for them. */
#include <stdarg.h>

#include "testutil.h"
#include "messages_vectors.h"
#include "base.h"
#include "rd.h"
#include "ohdr.h"
#include "dspace.h"
#include "dtype.h"
#include "fillval.h"
#include "layout.h"
#include "pline.h"
#include "efl.h"
#include "array.h"

static const h5_fmt FMT88 = { 8, 8 };
static int decode_err(const uint8_t *p, size_t len);
static const h5_fmt FMT44 = { 4, 4 };

/* ---- a growable string for descriptions --------------------------------- */

typedef struct sbuf {
	char *s;
	size_t len, cap;
} sbuf;

__attribute__((format(printf, 2, 3)))
static void sb_printf(sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	ck_assert_int_ge(n, 0);
	if (b->len + (size_t)n + 1 > b->cap) {
		b->cap = (b->len + (size_t)n + 1) * 2;
		b->s = realloc(b->s, b->cap);
		ck_assert_ptr_nonnull(b->s);
	}
	va_start(ap, fmt);
	vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

static void sb_hex(sbuf *b, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sb_printf(b, "%02x", p[i]);
	if (!b->s)
		sb_printf(b, "%s", "");
}

static void sb_u64(sbuf *b, uint64_t v)
{
	if (v == UINT64_MAX)
		sb_printf(b, "U");
	else
		sb_printf(b, "%llu", (unsigned long long)v);
}

static void sb_free(sbuf *b)
{
	free(b->s);
	memset(b, 0, sizeof(*b));
}

/* ---- descriptions in the grammar of gen_messages.py ---------------------- */

static void desc_space(sbuf *b, const h5_dspace *s)
{
	if (s->type == H5_SPACE_SCALAR) {
		sb_printf(b, "scalar");
		return;
	}
	if (s->type == H5_SPACE_NULL) {
		sb_printf(b, "null");
		return;
	}
	sb_printf(b, "simple d=");
	for (unsigned i = 0; i < s->rank; i++) {
		sb_printf(b, "%s", i ? "," : "");
		sb_u64(b, s->dims[i]);
	}
	sb_printf(b, " m=");
	for (unsigned i = 0; i < s->rank; i++) {
		sb_printf(b, "%s", i ? "," : "");
		sb_u64(b, s->maxdims[i]);
	}
}

static const char *order_name(const h5_dtype *t)
{
	if (t->cls == H5T_FLOAT && (t->bits & 0x41) == 0x41)
		return "VAX";
	return t->big_endian ? "BE" : "LE";
}

/* An enum value as libhdf5 converts it to a native long long. */
static long long enum_value(const h5_dtype *t, size_t i)
{
	const h5_dtype *base = t->base;
	const uint8_t *p = t->enum_values + i * base->size;
	uint64_t v = 0;
	unsigned n = base->size > 8 ? 8 : base->size;

	for (unsigned k = 0; k < n; k++) {
		unsigned byte = base->big_endian ? base->size - 1 - k : k;
		v |= (uint64_t)p[byte] << (8 * k);
	}
	if (base->is_signed && n < 8 && (v >> (8 * n - 1)) & 1)
		v |= ~UINT64_C(0) << (8 * n);
	return (long long)v;
}

static void desc_type(sbuf *b, const h5_dtype *t)
{
	switch (t->cls) {
	case H5T_INTEGER:
		sb_printf(b, "i%u%s%so%up%u", t->size, order_name(t), t->is_signed ? "s" : "u",
			  t->bit_offset, t->precision);
		break;
	case H5T_FLOAT:
		sb_printf(b, "f%u%so%up%ue%u:%um%u:%us%ub%un%u", t->size, order_name(t), t->bit_offset,
			  t->precision, t->exp_loc, t->exp_size, t->mant_loc, t->mant_size, t->sign_loc,
			  t->exp_bias, t->norm);
		break;
	case H5T_TIME:
		sb_printf(b, "t%u%sp%u", t->size, order_name(t), t->precision);
		break;
	case H5T_STRING:
		sb_printf(b, "s%upad%ucs%u", t->size, t->str_pad, t->cset);
		break;
	case H5T_BITFIELD:
		sb_printf(b, "b%u%so%up%u", t->size, order_name(t), t->bit_offset, t->precision);
		break;
	case H5T_OPAQUE:
		sb_printf(b, "opaque%u'%s'", t->size, t->tag);
		break;
	case H5T_COMPOUND:
		sb_printf(b, "c%u{", t->size);
		for (size_t i = 0; i < t->nmembers; i++) {
			sb_printf(b, "%s%s@%u:", i ? ";" : "", t->members[i].name, t->members[i].offset);
			desc_type(b, t->members[i].type);
		}
		sb_printf(b, "}");
		break;
	case H5T_REFERENCE:
		sb_printf(b, "ref%ut%u", t->size, t->ref_type);
		break;
	case H5T_ENUM:
		sb_printf(b, "e%u(", t->size);
		desc_type(b, t->base);
		sb_printf(b, "){");
		for (size_t i = 0; i < t->nmembers; i++)
			sb_printf(b, "%s%s=%lld", i ? ";" : "", t->enum_names[i], enum_value(t, i));
		sb_printf(b, "}");
		break;
	case H5T_VLEN:
		if (t->vlen_type == 1) {
			sb_printf(b, "vstr%upad%ucs%u", t->size, t->str_pad, t->cset);
			break;
		}
		sb_printf(b, "vlen%u(", t->size);
		desc_type(b, t->base);
		sb_printf(b, ")");
		break;
	case H5T_ARRAY:
		sb_printf(b, "a%u[", t->size);
		for (unsigned i = 0; i < t->arank; i++)
			sb_printf(b, "%s%u", i ? "," : "", t->adims[i]);
		sb_printf(b, "](");
		desc_type(b, t->base);
		sb_printf(b, ")");
		break;
	case H5T_COMPLEX:
		sb_printf(b, "c%u(", t->size);
		desc_type(b, t->base);
		sb_printf(b, ")");
		break;
	}
}

static void desc_fill(sbuf *b, const h5_fill *fv, uint16_t type, bool value_unknown)
{
	if (type == H5_MSG_FILL_OLD)
		sb_printf(b, "old value=");
	else
		sb_printf(b, "alloc=%u time=%u value=", fv->alloc_time, fv->fill_time);
	if (value_unknown)
		sb_printf(b, "?");
	else if (fv->defined)
		sb_hex(b, fv->value, fv->size);
}

static void desc_layout(sbuf *b, const h5_layout *l, bool data_unknown)
{
	switch (l->cls) {
	case H5_LAYOUT_COMPACT:
		sb_printf(b, "compact n=%zu data=", l->compact_size);
		if (data_unknown)
			sb_printf(b, "?");
		else
			sb_hex(b, l->compact, l->compact_size);
		break;
	case H5_LAYOUT_CONTIGUOUS:
		sb_printf(b, "contig addr=");
		sb_u64(b, l->addr);
		if (l->version >= 3)
			sb_printf(b, " size=%llu", (unsigned long long)l->size);
		break;
	case H5_LAYOUT_CHUNKED:
		sb_printf(b, "chunked idx=%u chunk=", l->idx_type);
		for (unsigned i = 0; i < l->ndims; i++)
			sb_printf(b, "%s%llu", i ? "," : "", (unsigned long long)l->chunk[i]);
		sb_printf(b, " elem=%u", l->chunk_elem_size);
		switch (l->idx_type) {
		case H5_CIDX_SINGLE:
		case H5_CIDX_IMPLICIT:
			sb_printf(b, " addr=");
			sb_u64(b, l->idx_addr);
			if (l->idx_type == H5_CIDX_SINGLE && (l->flags & H5_LAYOUT_FLAG_SINGLE_FILTERED))
				sb_printf(b, " fsize=%llu mask=%u", (unsigned long long)l->single_size,
					  l->single_mask);
			break;
		case H5_CIDX_FARRAY:
			sb_printf(b, " fa=%u", l->fa_page_bits);
			break;
		case H5_CIDX_EARRAY:
			sb_printf(b, " ea=%u,%u,%u,%u,%u", l->ea_max_bits, l->ea_idx_elmts, l->ea_min_ptrs,
				  l->ea_min_elmts, l->ea_page_bits);
			break;
		case H5_CIDX_BTREE2:
			sb_printf(b, " bt2=%u,%u,%u", l->bt2_node_size, l->bt2_split, l->bt2_merge);
			break;
		}
		break;
	case H5_LAYOUT_VIRTUAL:
		sb_printf(b, "virtual");
		break;
	}
}

static void desc_pline(sbuf *b, const h5_pline *p)
{
	for (size_t i = 0; i < p->n; i++) {
		const h5_filter *f = &p->filters[i];

		sb_printf(b, "%s%u/%u/%s/[", i ? ";" : "", f->id, f->flags, f->name ? f->name : "");
		for (size_t j = 0; j < f->ncd; j++)
			sb_printf(b, "%s%u", j ? "," : "", f->cd[j]);
		sb_printf(b, "]");
	}
	if (!b->s)
		sb_printf(b, "%s", "");
}

static void desc_efl(sbuf *b, const h5_efl *e)
{
	sb_printf(b, "n=%zu ", e->n);
	for (size_t i = 0; i < e->n; i++) {
		sb_printf(b, "%s%llu+", i ? ";" : "", (unsigned long long)e->e[i].offset);
		sb_u64(b, e->e[i].size);
	}
}

/* Whether n bytes after a decoded message can be padding: less than the
 * 8-byte alignment of v1 object headers (old writers left garbage there), or
 * zeros (libhdf5 sometimes reserves more than a message needs). */
static bool is_padding(const uint8_t *p, size_t n)
{
	if (n < 8)
		return true;
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* Compare with an expectation in which '*' stands for any number (sizes
 * libhdf5 only reports in their in-memory form, see gen_messages.py). */
static bool desc_match(const char *got, const char *expect)
{
	while (*expect) {
		if (*expect == '*') {
			if (*got < '0' || *got > '9')
				return false;
			while (*got >= '0' && *got <= '9')
				got++;
			expect++;
		} else if (*got++ != *expect++) {
			return false;
		}
	}
	return *got == '\0';
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Decode one vector and describe it; returns the decoder's result. */
static int describe_vector(sbuf *b, const struct mv_vector *v)
{
	h5_fmt fmt = { v->sizeof_addr, v->sizeof_size };
	int ret;

	switch (v->type) {
	case H5_MSG_DSPACE: {
		h5_dspace s;
		ret = h5_dspace_decode(&s, &fmt, v->body, v->len);
		if (ret == 0)
			desc_space(b, &s);
		return ret;
	}
	case H5_MSG_DTYPE: {
		h5_dtype *t = NULL;
		size_t used = 0;
		ret = h5_dtype_decode(&t, v->body, v->len, &used);
		if (ret == 0) {
			/* Whatever follows the type is padding the writer left. */
			ck_assert_uint_le(used, v->len);
			ck_assert_msg(is_padding(v->body + used, v->len - used),
				      "%s:%s: datatype ends at %zu of %zu, then non-zero bytes",
				      v->file, v->dset, used, v->len);
			desc_type(b, t);
			h5_dtype_free(t);
		}
		return ret;
	}
	case H5_MSG_FILL:
	case H5_MSG_FILL_OLD: {
		h5_fill fv;
		ret = h5_fill_decode(&fv, v->type, v->body, v->len);
		if (ret == 0) {
			desc_fill(b, &fv, v->type, ends_with(v->expect, "value=?"));
			h5_fill_clear(&fv);
		}
		return ret;
	}
	case H5_MSG_LAYOUT: {
		h5_layout l;
		ret = h5_layout_decode(&l, &fmt, v->body, v->len);
		if (ret == 0) {
			desc_layout(b, &l, ends_with(v->expect, "data=?"));
			h5_layout_clear(&l);
		}
		return ret;
	}
	case H5_MSG_PLINE: {
		h5_pline p;
		ret = h5_pline_decode(&p, v->body, v->len);
		if (ret == 0) {
			desc_pline(b, &p);
			h5_pline_clear(&p);
		}
		return ret;
	}
	case H5_MSG_EFL: {
		h5_efl e;
		ret = h5_efl_decode(&e, &fmt, v->body, v->len);
		if (ret == 0) {
			desc_efl(b, &e);
			h5_efl_clear(&e);
		}
		return ret;
	}
	}
	ck_abort_msg("vector of unexpected message type 0x%x", v->type);
	return -1;
}

START_TEST(test_real_messages)
{
	size_t nfail = 0;
	size_t seen[16] = { 0 };

	ck_assert_uint_gt(MV_NVECTORS, 100);
	for (size_t i = 0; i < MV_NVECTORS; i++) {
		const struct mv_vector *v = &mv_vectors[i];
		sbuf b = { 0 };
		int ret = describe_vector(&b, v);

		if (ret != 0 || !desc_match(b.s ? b.s : "", v->expect)) {
			fprintf(stderr, "MISMATCH %s:%s msg 0x%x: ret %d (%s)\n  got    %s\n  expect %s\n",
				v->file, v->dset, v->type, ret, ret ? h5_err_msg() : "",
				b.s ? b.s : "", v->expect);
			nfail++;
		}
		seen[v->type & 15]++;
		sb_free(&b);
	}
	ck_assert_msg(nfail == 0, "%zu of %zu real messages decoded differently from libhdf5", nfail,
		      (size_t)MV_NVECTORS);
	/* The vectors must cover every message kind. */
	ck_assert_uint_gt(seen[H5_MSG_DSPACE], 0);
	ck_assert_uint_gt(seen[H5_MSG_DTYPE], 0);
	ck_assert_uint_gt(seen[H5_MSG_FILL], 0);
	ck_assert_uint_gt(seen[H5_MSG_FILL_OLD], 0);
	ck_assert_uint_gt(seen[H5_MSG_LAYOUT], 0);
	ck_assert_uint_gt(seen[H5_MSG_PLINE], 0);
	ck_assert_uint_gt(seen[H5_MSG_EFL], 0);
}
END_TEST

/* Truncated real messages must be rejected: every strict prefix of a
 * datatype (whose real length the decoder reports), and for the others the
 * shortest accepted prefix must be the message itself, give or take the
 * padding writers leave after it. */
START_TEST(test_real_messages_truncated)
{
	for (size_t i = 0; i < MV_NVECTORS; i++) {
		const struct mv_vector *v = &mv_vectors[i];
		struct mv_vector t = *v;
		size_t minlen;

		if (v->type == H5_MSG_DTYPE) {
			h5_dtype *dt = NULL;

			ck_assert_int_eq(h5_dtype_decode(&dt, v->body, v->len, &minlen), 0);
			h5_dtype_free(dt);
			for (size_t n = 0; n < minlen; n++) {
				/* a private copy, so reading past n is caught by ASan */
				uint8_t *copy = malloc(n ? n : 1);

				memcpy(copy, v->body, n);
				ck_assert_msg(decode_err(copy, n) < 0, "%s:%s dtype accepted at %zu of %zu bytes",
					      v->file, v->dset, n, minlen);
				free(copy);
			}
			continue;
		}
		for (minlen = 0; minlen <= v->len; minlen++) {
			uint8_t *copy = malloc(minlen ? minlen : 1);
			sbuf b = { 0 };
			int ret;

			memcpy(copy, v->body, minlen);
			t.body = copy;
			t.len = minlen;
			ret = describe_vector(&b, &t);
			sb_free(&b);
			free(copy);
			if (ret == 0)
				break;
		}
		ck_assert_msg(minlen <= v->len && is_padding(v->body + minlen, v->len - minlen),
			      "%s:%s msg 0x%x accepted at %zu of %zu bytes", v->file, v->dset, v->type,
			      minlen, v->len);
	}
}
END_TEST

/* ---- dataspace ------------------------------------------------------------ */

static void put_space_v1(tbuf *b, unsigned rank, uint8_t flags, const uint64_t *dims, const uint64_t *max)
{
	tb_u8(b, 1);
	tb_u8(b, (uint8_t)rank);
	tb_u8(b, flags);
	tb_zero(b, 5);
	for (unsigned i = 0; i < rank; i++)
		tb_u64(b, dims[i]);
	if (flags & 1)
		for (unsigned i = 0; i < rank; i++)
			tb_u64(b, max[i]);
}

START_TEST(test_dspace_v1)
{
	uint64_t dims[2] = { 3, 4 }, max[2] = { UINT64_MAX, 4 };
	tbuf b = { 0 };
	h5_dspace s;
	uint64_t n;

	put_space_v1(&b, 2, 1, dims, max);
	ck_assert_int_eq(h5_dspace_decode(&s, &FMT88, b.p, b.len), 0);
	ck_assert_int_eq(s.version, 1);
	ck_assert_int_eq(s.type, H5_SPACE_SIMPLE);
	ck_assert_uint_eq(s.rank, 2);
	ck_assert(s.has_max);
	ck_assert_uint_eq(s.dims[0], 3);
	ck_assert_uint_eq(s.dims[1], 4);
	ck_assert_uint_eq(s.maxdims[0], H5_UNLIMITED);
	ck_assert_uint_eq(s.maxdims[1], 4);
	ck_assert_int_eq(h5_dspace_nelmts(&s, &n), 0);
	ck_assert_uint_eq(n, 12);
	/* truncated by one byte */
	ck_assert_int_eq(h5_dspace_decode(&s, &FMT88, b.p, b.len - 1), H5_ERR_FORMAT);
	tb_free(&b);

	/* no max dims: maxdims = dims */
	put_space_v1(&b, 2, 0, dims, NULL);
	ck_assert_int_eq(h5_dspace_decode(&s, &FMT88, b.p, b.len), 0);
	ck_assert(!s.has_max);
	ck_assert_uint_eq(s.maxdims[0], 3);
	ck_assert_uint_eq(s.maxdims[1], 4);
	tb_free(&b);

	/* permutation indices present (bit 1): skipped, but must be there */
	put_space_v1(&b, 2, 2, dims, NULL);
	tb_u64(&b, 0);
	tb_u64(&b, 1);
	ck_assert_int_eq(h5_dspace_decode(&s, &FMT88, b.p, b.len), 0);
	ck_assert_int_eq(h5_dspace_decode(&s, &FMT88, b.p, b.len - 8), H5_ERR_FORMAT);
	tb_free(&b);

	/* rank 0 in v1 is a scalar */
	put_space_v1(&b, 0, 0, NULL, NULL);
	ck_assert_int_eq(h5_dspace_decode(&s, &FMT88, b.p, b.len), 0);
	ck_assert_int_eq(s.type, H5_SPACE_SCALAR);
	ck_assert_int_eq(h5_dspace_nelmts(&s, &n), 0);
	ck_assert_uint_eq(n, 1);
	/* v1 header is 8 bytes */
	ck_assert_int_eq(h5_dspace_decode(&s, &FMT88, b.p, 7), H5_ERR_FORMAT);
	tb_free(&b);
}
END_TEST

START_TEST(test_dspace_v2)
{
	tbuf b = { 0 };
	h5_dspace s;
	uint64_t n;

	/* simple, 4-byte lengths, all-ones max = unlimited */
	tb_u8(&b, 2); tb_u8(&b, 1); tb_u8(&b, 1); tb_u8(&b, 1);
	tb_u32(&b, 10);
	tb_u32(&b, 0xffffffffu);
	ck_assert_int_eq(h5_dspace_decode(&s, &FMT44, b.p, b.len), 0);
	ck_assert_int_eq(s.type, H5_SPACE_SIMPLE);
	ck_assert_uint_eq(s.dims[0], 10);
	ck_assert_uint_eq(s.maxdims[0], H5_UNLIMITED);
	tb_free(&b);

	/* null: no elements */
	tb_u8(&b, 2); tb_u8(&b, 0); tb_u8(&b, 0); tb_u8(&b, 2);
	ck_assert_int_eq(h5_dspace_decode(&s, &FMT88, b.p, b.len), 0);
	ck_assert_int_eq(s.type, H5_SPACE_NULL);
	ck_assert_int_eq(h5_dspace_nelmts(&s, &n), 0);
	ck_assert_uint_eq(n, 0);
	tb_free(&b);

	/* scalar */
	tb_u8(&b, 2); tb_u8(&b, 0); tb_u8(&b, 0); tb_u8(&b, 0);
	ck_assert_int_eq(h5_dspace_decode(&s, &FMT88, b.p, b.len), 0);
	ck_assert_int_eq(s.type, H5_SPACE_SCALAR);
	tb_free(&b);

	/* bad: unknown type, scalar with a rank, simple without, version 3 */
	tb_u8(&b, 2); tb_u8(&b, 0); tb_u8(&b, 0); tb_u8(&b, 3);
	ck_assert_int_eq(h5_dspace_decode(&s, &FMT88, b.p, b.len), H5_ERR_FORMAT);
	b.p[3] = 0; b.p[1] = 1; tb_u64(&b, 5);
	ck_assert_int_eq(h5_dspace_decode(&s, &FMT88, b.p, b.len), H5_ERR_FORMAT);
	b.p[3] = 1; b.p[1] = 0;
	ck_assert_int_eq(h5_dspace_decode(&s, &FMT88, b.p, b.len), H5_ERR_FORMAT);
	b.p[1] = 1; b.p[0] = 3;
	ck_assert_int_eq(h5_dspace_decode(&s, &FMT88, b.p, b.len), H5_ERR_FORMAT);
	b.p[0] = 2;
	ck_assert_int_eq(h5_dspace_decode(&s, &FMT88, b.p, b.len), 0);
	tb_free(&b);

	/* max smaller than current size */
	tb_u8(&b, 2); tb_u8(&b, 1); tb_u8(&b, 1); tb_u8(&b, 1);
	tb_u64(&b, 10);
	tb_u64(&b, 9);
	ck_assert_int_eq(h5_dspace_decode(&s, &FMT88, b.p, b.len), H5_ERR_FORMAT);
	tb_free(&b);
}
END_TEST

START_TEST(test_dspace_rank_and_overflow)
{
	uint64_t dims[33];
	tbuf b = { 0 };
	h5_dspace s;
	uint64_t n;

	for (int i = 0; i < 33; i++)
		dims[i] = 2;
	put_space_v1(&b, 33, 0, dims, NULL);
	ck_assert_int_eq(h5_dspace_decode(&s, &FMT88, b.p, b.len), H5_ERR_FORMAT);
	tb_free(&b);
	put_space_v1(&b, 32, 0, dims, NULL);
	ck_assert_int_eq(h5_dspace_decode(&s, &FMT88, b.p, b.len), 0);
	ck_assert_int_eq(h5_dspace_nelmts(&s, &n), 0);
	ck_assert_uint_eq(n, UINT64_C(1) << 32);
	tb_free(&b);

	/* 2^40 * 2^30 overflows */
	dims[0] = UINT64_C(1) << 40;
	dims[1] = UINT64_C(1) << 30;
	put_space_v1(&b, 2, 0, dims, NULL);
	ck_assert_int_eq(h5_dspace_decode(&s, &FMT88, b.p, b.len), 0);
	ck_assert_int_eq(h5_dspace_nelmts(&s, &n), H5_ERR_LIMIT);
	tb_free(&b);

	/* a zero dimension gives zero elements */
	dims[0] = 0;
	put_space_v1(&b, 2, 0, dims, NULL);
	ck_assert_int_eq(h5_dspace_decode(&s, &FMT88, b.p, b.len), 0);
	ck_assert_int_eq(h5_dspace_nelmts(&s, &n), 0);
	ck_assert_uint_eq(n, 0);
	tb_free(&b);
}
END_TEST

/* ---- datatype ------------------------------------------------------------- */

static void put_dt_hdr(tbuf *b, unsigned version, unsigned cls, uint32_t bits, uint32_t size)
{
	tb_u8(b, (uint8_t)(version << 4 | cls));
	tb_uint(b, bits, 3);
	tb_u32(b, size);
}

static void put_int(tbuf *b, unsigned version, uint32_t size, bool be, bool sgn)
{
	put_dt_hdr(b, version, H5T_INTEGER, (be ? 1 : 0) | (sgn ? 8 : 0), size);
	tb_u16(b, 0);
	tb_u16(b, (uint16_t)(size * 8));
}

static void put_name(tbuf *b, const char *name, bool padded)
{
	size_t n = strlen(name);
	tb_put(b, name, n + 1);
	if (padded)
		tb_zero(b, (n + 8) / 8 * 8 - (n + 1));
}

static h5_dtype *decode_ok(const tbuf *b, size_t expect_used)
{
	h5_dtype *t = NULL;
	size_t used = 0;
	int ret = h5_dtype_decode(&t, b->p, b->len, &used);

	ck_assert_msg(ret == 0, "decode failed: %s", h5_err_msg());
	ck_assert_uint_eq(used, expect_used);
	return t;
}

static int decode_err(const uint8_t *p, size_t len)
{
	h5_dtype *t = (h5_dtype *)(uintptr_t)1;
	size_t used = 99;
	int ret = h5_dtype_decode(&t, p, len, &used);

	ck_assert_int_lt(ret, 0);
	ck_assert_ptr_null(t);
	ck_assert_uint_eq(used, 0);
	return ret;
}

/* The description of a decoded buffer (test helper). */
static char *describe_dtype(const tbuf *b)
{
	h5_dtype *t = decode_ok(b, b->len);
	sbuf s = { 0 };

	desc_type(&s, t);
	h5_dtype_free(t);
	return s.s;
}

#define ck_dtype_desc(b, expect)                                      \
	do {                                                          \
		char *_d = describe_dtype(b);                         \
		ck_assert_str_eq(_d, expect);                         \
		free(_d);                                             \
	} while (0)

START_TEST(test_dtype_atomic)
{
	tbuf b = { 0 };

	put_int(&b, 1, 4, true, true);
	ck_dtype_desc(&b, "i4BEso0p32");
	/* every prefix is truncated */
	for (size_t n = 0; n < b.len; n++)
		ck_assert_int_eq(decode_err(b.p, n), H5_ERR_FORMAT);
	tb_free(&b);

	/* precision past the element */
	put_dt_hdr(&b, 1, H5T_INTEGER, 0, 2);
	tb_u16(&b, 4);
	tb_u16(&b, 16);
	ck_assert_int_eq(decode_err(b.p, b.len), H5_ERR_FORMAT);
	tb_free(&b);

	/* IEEE double, version 1; the same in version 4 */
	for (unsigned v = 1; v <= 4; v += 3) {
		put_dt_hdr(&b, v, H5T_FLOAT, 0x20 | (63 << 8), 8);
		tb_u16(&b, 0); tb_u16(&b, 64);
		tb_u8(&b, 52); tb_u8(&b, 11); tb_u8(&b, 0); tb_u8(&b, 52);
		tb_u32(&b, 1023);
		ck_dtype_desc(&b, "f8LEo0p64e52:11m0:52s63b1023n2");
		tb_free(&b);
	}
	/* VAX order needs version 3 and both order bits */
	put_dt_hdr(&b, 3, H5T_FLOAT, 0x41 | 0x20 | (31 << 8), 4);
	tb_u16(&b, 0); tb_u16(&b, 32);
	tb_u8(&b, 23); tb_u8(&b, 8); tb_u8(&b, 0); tb_u8(&b, 23);
	tb_u32(&b, 129);
	ck_dtype_desc(&b, "f4VAXo0p32e23:8m0:23s31b129n2");
	b.p[0] = 1 << 4 | H5T_FLOAT;
	ck_assert_int_eq(decode_err(b.p, b.len), H5_ERR_FORMAT);
	b.p[0] = 3 << 4 | H5T_FLOAT;
	b.p[1] = 0x40 | 0x20; /* bit 6 without bit 0: reserved */
	ck_assert_int_eq(decode_err(b.p, b.len), H5_ERR_FORMAT);
	b.p[1] = 0x21;
	b.p[12] = 30; /* exponent 30+8 past 32 bits */
	ck_assert_int_eq(decode_err(b.p, b.len), H5_ERR_FORMAT);
	tb_free(&b);

	/* time */
	put_dt_hdr(&b, 1, H5T_TIME, 1, 4);
	tb_u16(&b, 32);
	ck_dtype_desc(&b, "t4BEp32");
	tb_free(&b);

	/* string: space padded UTF-8 */
	put_dt_hdr(&b, 1, H5T_STRING, 0x12, 7);
	ck_dtype_desc(&b, "s7pad2cs1");
	tb_free(&b);

	/* bit field */
	put_dt_hdr(&b, 1, H5T_BITFIELD, 0, 1);
	tb_u16(&b, 2); tb_u16(&b, 5);
	ck_dtype_desc(&b, "b1LEo2p5");
	tb_free(&b);

	/* opaque: tag padded to 8 */
	put_dt_hdr(&b, 1, H5T_OPAQUE, 8, 3);
	tb_put(&b, "abc\0\0\0\0\0", 8);
	ck_dtype_desc(&b, "opaque3'abc'");
	ck_assert_int_eq(decode_err(b.p, b.len - 1), H5_ERR_FORMAT);
	tb_free(&b);
	/* a tag filling its field has no NUL */
	put_dt_hdr(&b, 1, H5T_OPAQUE, 8, 3);
	tb_put(&b, "12345678", 8);
	ck_dtype_desc(&b, "opaque3'12345678'");
	tb_free(&b);

	/* references */
	put_dt_hdr(&b, 1, H5T_REFERENCE, 1, 12);
	ck_dtype_desc(&b, "ref12t1");
	tb_free(&b);

	/* size 0, version 0, version 6 (5 is format 4.0's), class 11 below
	 * version 5, class 12 */
	put_dt_hdr(&b, 1, H5T_STRING, 0, 0);
	ck_assert_int_eq(decode_err(b.p, b.len), H5_ERR_FORMAT);
	b.p[4] = 1;
	b.p[0] = 0 << 4 | H5T_STRING;
	ck_assert_int_eq(decode_err(b.p, b.len), H5_ERR_FORMAT);
	b.p[0] = 6 << 4 | H5T_STRING;
	ck_assert_int_eq(decode_err(b.p, b.len), H5_ERR_FORMAT);
	b.p[0] = 1 << 4 | 11;
	ck_assert_int_eq(decode_err(b.p, b.len), H5_ERR_FORMAT);
	b.p[0] = 5 << 4 | 12;
	ck_assert_int_eq(decode_err(b.p, b.len), H5_ERR_FORMAT);
	tb_free(&b);

	/* NULL used pointer is allowed */
	put_int(&b, 1, 1, false, false);
	{
		h5_dtype *t = NULL;
		ck_assert_int_eq(h5_dtype_decode(&t, b.p, b.len, NULL), 0);
		h5_dtype_free(t);
	}
	tb_free(&b);
}
END_TEST

START_TEST(test_dtype_compound_v1)
{
	tbuf b = { 0 };
	h5_dtype *t;

	/* { int32 a @0; int16 b[2][3] @4 } size 16: the v1 array member */
	put_dt_hdr(&b, 1, H5T_COMPOUND, 2, 16);
	put_name(&b, "a", true);
	tb_u32(&b, 0);
	tb_u8(&b, 0); tb_zero(&b, 3); tb_zero(&b, 8); tb_zero(&b, 16);
	put_int(&b, 1, 4, false, true);
	put_name(&b, "bbbbbbbb", true); /* 8 chars: padded to 16 */
	tb_u32(&b, 4);
	tb_u8(&b, 2); tb_zero(&b, 3); tb_zero(&b, 8);
	tb_u32(&b, 2); tb_u32(&b, 3); tb_u32(&b, 0); tb_u32(&b, 0);
	put_int(&b, 1, 2, false, true);
	ck_dtype_desc(&b, "c16{a@0:i4LEso0p32;bbbbbbbb@4:a12[2,3](i2LEso0p16)}");
	t = decode_ok(&b, b.len);
	ck_assert_int_eq(t->members[1].type->cls, H5T_ARRAY);
	ck_assert_uint_eq(t->members[1].type->base->size, 2);
	h5_dtype_free(t);
	for (size_t n = 0; n < b.len; n++)
		decode_err(b.p, n);
	/* member past the end: compound size 15 */
	b.p[4] = 15;
	ck_assert_int_eq(decode_err(b.p, b.len), H5_ERR_FORMAT);
	b.p[4] = 16;
	/* five array dimensions */
	b.p[8 + 8 + 4 + 28 + 8 + 4 + 16 + 4] = 5;
	ck_assert_int_eq(decode_err(b.p, b.len), H5_ERR_FORMAT);
	tb_free(&b);
}
END_TEST

START_TEST(test_dtype_compound_v2_v3)
{
	tbuf b = { 0 };

	put_dt_hdr(&b, 2, H5T_COMPOUND, 2, 12);
	put_name(&b, "x", true);
	tb_u32(&b, 0);
	put_int(&b, 1, 4, false, false);
	put_name(&b, "y", true);
	tb_u32(&b, 4);
	put_dt_hdr(&b, 1, H5T_FLOAT, 0x20 | (63 << 8), 8);
	tb_u16(&b, 0); tb_u16(&b, 64);
	tb_u8(&b, 52); tb_u8(&b, 11); tb_u8(&b, 0); tb_u8(&b, 52);
	tb_u32(&b, 1023);
	ck_dtype_desc(&b, "c12{x@0:i4LEuo0p32;y@4:f8LEo0p64e52:11m0:52s63b1023n2}");
	/* name without its NUL within the message */
	ck_assert_int_eq(decode_err(b.p, 8 + 1), H5_ERR_FORMAT);
	/* name NUL found, but its padding runs past the end */
	ck_assert_int_eq(decode_err(b.p, 8 + 5), H5_ERR_FORMAT);
	tb_free(&b);

	/* v3: unpadded names, offsets sized by the compound size (300: 2 bytes) */
	put_dt_hdr(&b, 3, H5T_COMPOUND, 2, 300);
	put_name(&b, "lo", false);
	tb_u16(&b, 0);
	put_int(&b, 1, 4, false, true);
	put_name(&b, "hi", false);
	tb_u16(&b, 296);
	put_int(&b, 1, 4, false, true);
	ck_dtype_desc(&b, "c300{lo@0:i4LEso0p32;hi@296:i4LEso0p32}");
	b.p[8 + 3 + 2 + 12 + 3] = 41; /* hi @ 297: 297 + 4 > 300 */
	ck_assert_int_eq(decode_err(b.p, b.len), H5_ERR_FORMAT);
	tb_free(&b);

	/* v3 with size < 256: 1-byte offsets */
	put_dt_hdr(&b, 3, H5T_COMPOUND, 1, 255);
	put_name(&b, "", false);
	tb_u8(&b, 251);
	put_int(&b, 1, 4, false, true);
	ck_dtype_desc(&b, "c255{@251:i4LEso0p32}");
	tb_free(&b);

	/* no members; more members than the bytes could hold */
	put_dt_hdr(&b, 3, H5T_COMPOUND, 0, 4);
	ck_assert_int_eq(decode_err(b.p, b.len), H5_ERR_FORMAT);
	tb_free(&b);
	put_dt_hdr(&b, 3, H5T_COMPOUND, 0xffff, 4);
	tb_zero(&b, 100);
	ck_assert_int_eq(decode_err(b.p, b.len), H5_ERR_FORMAT);
	tb_free(&b);
}
END_TEST

START_TEST(test_dtype_enum)
{
	tbuf b = { 0 };

	/* v1/v2: padded names */
	for (unsigned v = 1; v <= 3; v++) {
		bool padded = v < 3;
		put_dt_hdr(&b, v, H5T_ENUM, 3, 2);
		put_int(&b, 1, 2, true, true);
		put_name(&b, "RED", padded);
		put_name(&b, "GREEN", padded);
		put_name(&b, "BLUE_BLUE", padded);
		tb_u8(&b, 0); tb_u8(&b, 1);
		tb_u8(&b, 0); tb_u8(&b, 2);
		tb_u8(&b, 0xff); tb_u8(&b, 0xfd);
		ck_dtype_desc(&b, "e2(i2BEso0p16){RED=1;GREEN=2;BLUE_BLUE=-3}");
		/* values truncated */
		ck_assert_int_eq(decode_err(b.p, b.len - 1), H5_ERR_FORMAT);
		tb_free(&b);
	}
	/* base size differs from the enum size */
	put_dt_hdr(&b, 3, H5T_ENUM, 1, 4);
	put_int(&b, 1, 2, false, true);
	put_name(&b, "A", false);
	tb_u16(&b, 1);
	ck_assert_int_eq(decode_err(b.p, b.len), H5_ERR_FORMAT);
	tb_free(&b);
	/* member count larger than the bytes left */
	put_dt_hdr(&b, 3, H5T_ENUM, 1000, 1);
	put_int(&b, 1, 1, false, true);
	tb_zero(&b, 50);
	ck_assert_int_eq(decode_err(b.p, b.len), H5_ERR_FORMAT);
	tb_free(&b);
	/* base that is not an integer */
	put_dt_hdr(&b, 3, H5T_ENUM, 1, 3);
	put_dt_hdr(&b, 1, H5T_STRING, 0, 3);
	put_name(&b, "A", false);
	tb_put(&b, "abc", 3);
	ck_assert_int_eq(decode_err(b.p, b.len), H5_ERR_FORMAT);
	tb_free(&b);
}
END_TEST

START_TEST(test_dtype_vlen_array)
{
	tbuf b = { 0 };

	/* vlen string, UTF-8, null-padded */
	put_dt_hdr(&b, 1, H5T_VLEN, 1 | (1 << 4) | (1 << 8), 16);
	put_int(&b, 1, 1, false, false);
	ck_dtype_desc(&b, "vstr16pad1cs1");
	tb_free(&b);
	/* vlen sequence of double-precision big-endian ints */
	put_dt_hdr(&b, 1, H5T_VLEN, 0, 16);
	put_int(&b, 1, 8, true, true);
	ck_dtype_desc(&b, "vlen16(i8BEso0p64)");
	/* base type missing */
	ck_assert_int_eq(decode_err(b.p, 8), H5_ERR_FORMAT);
	b.p[1] = 2; /* reserved vlen type */
	ck_assert_int_eq(decode_err(b.p, b.len), H5_ERR_FORMAT);
	tb_free(&b);

	/* array v2: reserved bytes and permutation indices */
	put_dt_hdr(&b, 2, H5T_ARRAY, 0, 24);
	tb_u8(&b, 2); tb_zero(&b, 3);
	tb_u32(&b, 2); tb_u32(&b, 3);
	tb_u32(&b, 0); tb_u32(&b, 1);
	put_int(&b, 1, 4, false, true);
	ck_dtype_desc(&b, "a24[2,3](i4LEso0p32)");
	tb_free(&b);
	/* array v3: none of those */
	put_dt_hdr(&b, 3, H5T_ARRAY, 0, 24);
	tb_u8(&b, 2);
	tb_u32(&b, 2); tb_u32(&b, 3);
	put_int(&b, 1, 4, false, true);
	ck_dtype_desc(&b, "a24[2,3](i4LEso0p32)");
	/* size that does not match the dimensions */
	b.p[4] = 25;
	ck_assert_int_eq(decode_err(b.p, b.len), H5_ERR_FORMAT);
	b.p[4] = 24;
	/* zero dimension */
	b.p[9] = 0;
	ck_assert_int_eq(decode_err(b.p, b.len), H5_ERR_FORMAT);
	b.p[9] = 2;
	/* rank 0 and rank 33 */
	b.p[8] = 0;
	ck_assert_int_eq(decode_err(b.p, b.len), H5_ERR_FORMAT);
	b.p[8] = 33;
	ck_assert_int_eq(decode_err(b.p, b.len), H5_ERR_FORMAT);
	b.p[8] = 2;
	/* array in a version 1 message */
	b.p[0] = 1 << 4 | H5T_ARRAY;
	ck_assert_int_eq(decode_err(b.p, b.len), H5_ERR_FORMAT);
	tb_free(&b);

	/* total size overflowing 32 bits */
	put_dt_hdr(&b, 3, H5T_ARRAY, 0, 0x10000);
	tb_u8(&b, 2);
	tb_u32(&b, 0x10000); tb_u32(&b, 0x10000);
	put_int(&b, 1, 4, false, true);
	ck_assert_int_eq(decode_err(b.p, b.len), H5_ERR_FORMAT);
	tb_free(&b);
}
END_TEST

/* n nested v3 arrays of one element around an int8: n + 1 levels. */
static void put_nested(tbuf *b, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		put_dt_hdr(b, 3, H5T_ARRAY, 0, 1);
		tb_u8(b, 1);
		tb_u32(b, 1);
	}
	put_int(b, 1, 1, false, true);
}

START_TEST(test_dtype_depth)
{
	tbuf b = { 0 };
	h5_dtype *t;

	/* 16 levels: the limit */
	put_nested(&b, H5_MAX_DTYPE_DEPTH - 1);
	t = decode_ok(&b, b.len);
	h5_dtype_free(t);
	tb_free(&b);
	/* 17 levels */
	put_nested(&b, H5_MAX_DTYPE_DEPTH);
	ck_assert_int_eq(decode_err(b.p, b.len), H5_ERR_LIMIT);
	tb_free(&b);
	/* far deeper (stack must not grow with the input) */
	put_nested(&b, 100000);
	ck_assert_int_eq(decode_err(b.p, b.len), H5_ERR_LIMIT);
	tb_free(&b);

	/* a compound of 17 levels fails after allocating its members: no leak */
	put_dt_hdr(&b, 3, H5T_COMPOUND, 2, 2);
	put_name(&b, "a", false);
	tb_u8(&b, 0);
	put_int(&b, 1, 1, false, true);
	put_name(&b, "b", false);
	tb_u8(&b, 1);
	put_nested(&b, H5_MAX_DTYPE_DEPTH - 1);
	ck_assert_int_eq(decode_err(b.p, b.len), H5_ERR_LIMIT);
	tb_free(&b);
}
END_TEST

/* Random corruption of a rich type must never crash or leak (ASan). */
START_TEST(test_dtype_fuzz)
{
	tbuf b = { 0 };
	uint32_t seed = 12345;

	put_dt_hdr(&b, 3, H5T_COMPOUND, 3, 40);
	put_name(&b, "e", false);
	tb_u8(&b, 0);
	put_dt_hdr(&b, 3, H5T_ENUM, 2, 2);
	put_int(&b, 1, 2, false, true);
	put_name(&b, "A", false);
	put_name(&b, "B", false);
	tb_u16(&b, 1); tb_u16(&b, 2);
	put_name(&b, "arr", false);
	tb_u8(&b, 8);
	put_dt_hdr(&b, 3, H5T_ARRAY, 0, 16);
	tb_u8(&b, 1);
	tb_u32(&b, 2);
	put_dt_hdr(&b, 1, H5T_VLEN, 0, 8);
	put_int(&b, 1, 1, false, false);
	put_name(&b, "o", false);
	tb_u8(&b, 24);
	put_dt_hdr(&b, 1, H5T_OPAQUE, 8, 16);
	tb_put(&b, "tag\0\0\0\0\0", 8);
	{
		h5_dtype *t = decode_ok(&b, b.len);
		h5_dtype_free(t);
	}
	for (int iter = 0; iter < 20000; iter++) {
		uint8_t *c = malloc(b.len);
		h5_dtype *t = NULL;
		size_t used;

		memcpy(c, b.p, b.len);
		for (int k = 0; k < 3; k++) {
			seed = seed * 1103515245 + 12345;
			c[(seed >> 8) % b.len] ^= (uint8_t)(1u << ((seed >> 4) & 7));
		}
		if (h5_dtype_decode(&t, c, b.len, &used) == 0) {
			ck_assert_uint_le(used, b.len);
			h5_dtype_free(t);
		} else {
			ck_assert_ptr_null(t);
		}
		free(c);
	}
	tb_free(&b);
}
END_TEST

/* ---- fill value ----------------------------------------------------------- */

START_TEST(test_fill)
{
	tbuf b = { 0 };
	h5_fill fv;

	/* old message */
	tb_u32(&b, 4);
	tb_u32(&b, 0xdeadbeef);
	ck_assert_int_eq(h5_fill_decode(&fv, H5_MSG_FILL_OLD, b.p, b.len), 0);
	ck_assert(fv.defined);
	ck_assert_uint_eq(fv.size, 4);
	ck_assert_uint_eq(h5_le_decode(fv.value, 4), 0xdeadbeef);
	/* the value is a copy */
	ck_assert_ptr_ne(fv.value, b.p + 4);
	h5_fill_clear(&fv);
	ck_assert_ptr_null(fv.value);
	ck_assert_int_eq(h5_fill_decode(&fv, H5_MSG_FILL_OLD, b.p, b.len - 1), H5_ERR_FORMAT);
	ck_assert_int_eq(h5_fill_decode(&fv, H5_MSG_FILL_OLD, b.p, 3), H5_ERR_FORMAT);
	tb_free(&b);

	/* v1: size always present, even when not defined */
	tb_u8(&b, 1); tb_u8(&b, 2); tb_u8(&b, 1); tb_u8(&b, 0);
	tb_u32(&b, 0);
	ck_assert_int_eq(h5_fill_decode(&fv, H5_MSG_FILL, b.p, b.len), 0);
	ck_assert(!fv.defined);
	ck_assert_uint_eq(fv.alloc_time, 2);
	ck_assert_uint_eq(fv.fill_time, 1);
	ck_assert_int_eq(h5_fill_decode(&fv, H5_MSG_FILL, b.p, 4), H5_ERR_FORMAT);
	tb_free(&b);

	/* v2 defined with a value; v2 undefined has no size */
	tb_u8(&b, 2); tb_u8(&b, 3); tb_u8(&b, 2); tb_u8(&b, 1);
	tb_u32(&b, 2);
	tb_u16(&b, 0x1234);
	ck_assert_int_eq(h5_fill_decode(&fv, H5_MSG_FILL, b.p, b.len), 0);
	ck_assert(fv.defined);
	ck_assert_uint_eq(fv.size, 2);
	ck_assert_uint_eq(fv.alloc_time, 3);
	ck_assert_uint_eq(h5_le_decode(fv.value, 2), 0x1234);
	h5_fill_clear(&fv);
	ck_assert_int_eq(h5_fill_decode(&fv, H5_MSG_FILL, b.p, b.len - 1), H5_ERR_FORMAT);
	b.p[3] = 0;
	ck_assert_int_eq(h5_fill_decode(&fv, H5_MSG_FILL, b.p, 4), 0);
	ck_assert(!fv.defined);
	/* value size larger than the message */
	b.p[3] = 1;
	b.p[4] = 0xff; b.p[5] = 0xff; b.p[6] = 0xff; b.p[7] = 0x7f;
	ck_assert_int_eq(h5_fill_decode(&fv, H5_MSG_FILL, b.p, b.len), H5_ERR_FORMAT);
	tb_free(&b);

	/* v3: flags pack alloc time (bits 0-1), fill time (2-3), undefined (4), defined (5) */
	tb_u8(&b, 3); tb_u8(&b, 0x20 | (2 << 2) | 1);
	tb_u32(&b, 1);
	tb_u8(&b, 0x7e);
	ck_assert_int_eq(h5_fill_decode(&fv, H5_MSG_FILL, b.p, b.len), 0);
	ck_assert_uint_eq(fv.version, 3);
	ck_assert_uint_eq(fv.alloc_time, 1);
	ck_assert_uint_eq(fv.fill_time, 2);
	ck_assert(fv.defined);
	ck_assert_uint_eq(fv.value[0], 0x7e);
	h5_fill_clear(&fv);
	b.p[1] = 0x10 | 2;
	ck_assert_int_eq(h5_fill_decode(&fv, H5_MSG_FILL, b.p, 2), 0);
	ck_assert(!fv.defined);
	ck_assert_uint_eq(fv.alloc_time, 2);
	b.p[1] = 0x30; /* undefined and defined */
	ck_assert_int_eq(h5_fill_decode(&fv, H5_MSG_FILL, b.p, b.len), H5_ERR_FORMAT);
	b.p[1] = 0x40; /* reserved bit */
	ck_assert_int_eq(h5_fill_decode(&fv, H5_MSG_FILL, b.p, b.len), H5_ERR_FORMAT);
	b.p[0] = 4;
	b.p[1] = 0;
	ck_assert_int_eq(h5_fill_decode(&fv, H5_MSG_FILL, b.p, b.len), H5_ERR_FORMAT);
	b.p[0] = 0;
	ck_assert_int_eq(h5_fill_decode(&fv, H5_MSG_FILL, b.p, b.len), H5_ERR_FORMAT);
	ck_assert_int_eq(h5_fill_decode(&fv, H5_MSG_FILL, b.p, 0), H5_ERR_FORMAT);
	ck_assert_int_eq(h5_fill_decode(&fv, H5_MSG_DTYPE, b.p, b.len), H5_ERR_INVAL);
	tb_free(&b);
}
END_TEST

/* ---- layout --------------------------------------------------------------- */

START_TEST(test_layout_v1_v2)
{
	tbuf b = { 0 };
	h5_layout l;

	/* v1 chunked: dimensionality 3 = rank 2 + element size */
	tb_u8(&b, 1); tb_u8(&b, 3); tb_u8(&b, H5_LAYOUT_CHUNKED); tb_zero(&b, 5);
	tb_u64(&b, 0x1000);
	tb_u32(&b, 10); tb_u32(&b, 20); tb_u32(&b, 8);
	ck_assert_int_eq(h5_layout_decode(&l, &FMT88, b.p, b.len), 0);
	ck_assert_uint_eq(l.cls, H5_LAYOUT_CHUNKED);
	ck_assert_uint_eq(l.idx_type, H5_CIDX_BTREE1);
	ck_assert_uint_eq(l.idx_addr, 0x1000);
	ck_assert_uint_eq(l.ndims, 2);
	ck_assert_uint_eq(l.chunk[0], 10);
	ck_assert_uint_eq(l.chunk[1], 20);
	ck_assert_uint_eq(l.chunk_elem_size, 8);
	h5_layout_clear(&l);
	ck_assert_int_eq(h5_layout_decode(&l, &FMT88, b.p, b.len - 1), H5_ERR_FORMAT);
	b.p[1] = 1; /* rank 0 chunked */
	ck_assert_int_eq(h5_layout_decode(&l, &FMT88, b.p, b.len), H5_ERR_FORMAT);
	b.p[1] = 0;
	ck_assert_int_eq(h5_layout_decode(&l, &FMT88, b.p, b.len), H5_ERR_FORMAT);
	b.p[1] = 3;
	b.p[2] = 3; /* virtual does not exist before v4 */
	ck_assert_int_eq(h5_layout_decode(&l, &FMT88, b.p, b.len), H5_ERR_FORMAT);
	tb_free(&b);

	/* v2 contiguous, never allocated */
	tb_u8(&b, 2); tb_u8(&b, 2); tb_u8(&b, H5_LAYOUT_CONTIGUOUS); tb_zero(&b, 5);
	tb_u32(&b, 0xffffffffu);
	tb_u32(&b, 100); tb_u32(&b, 4);
	ck_assert_int_eq(h5_layout_decode(&l, &FMT44, b.p, b.len), 0);
	ck_assert_uint_eq(l.cls, H5_LAYOUT_CONTIGUOUS);
	ck_assert_uint_eq(l.addr, H5_ADDR_UNDEF);
	ck_assert_uint_eq(l.size, 400);
	h5_layout_clear(&l);
	tb_free(&b);

	/* v1 compact: no address, dims, then size and data */
	tb_u8(&b, 1); tb_u8(&b, 2); tb_u8(&b, H5_LAYOUT_COMPACT); tb_zero(&b, 5);
	tb_u32(&b, 3); tb_u32(&b, 2);
	tb_u32(&b, 6);
	tb_put(&b, "abcdef", 6);
	ck_assert_int_eq(h5_layout_decode(&l, &FMT88, b.p, b.len), 0);
	ck_assert_uint_eq(l.cls, H5_LAYOUT_COMPACT);
	ck_assert_uint_eq(l.compact_size, 6);
	ck_assert_mem_eq(l.compact, "abcdef", 6);
	h5_layout_clear(&l);
	ck_assert_ptr_null(l.compact);
	ck_assert_int_eq(h5_layout_decode(&l, &FMT88, b.p, b.len - 1), H5_ERR_FORMAT);
	tb_free(&b);
}
END_TEST

START_TEST(test_layout_v3)
{
	tbuf b = { 0 };
	h5_layout l;

	tb_u8(&b, 3); tb_u8(&b, H5_LAYOUT_COMPACT);
	tb_u16(&b, 4);
	tb_u32(&b, 0x01020304);
	ck_assert_int_eq(h5_layout_decode(&l, &FMT88, b.p, b.len), 0);
	ck_assert_uint_eq(l.compact_size, 4);
	ck_assert_uint_eq(h5_le_decode(l.compact, 4), 0x01020304);
	h5_layout_clear(&l);
	ck_assert_int_eq(h5_layout_decode(&l, &FMT88, b.p, b.len - 1), H5_ERR_FORMAT);
	b.p[2] = 0xff; /* 255 bytes claimed, 4 present */
	ck_assert_int_eq(h5_layout_decode(&l, &FMT88, b.p, b.len), H5_ERR_FORMAT);
	tb_free(&b);

	tb_u8(&b, 3); tb_u8(&b, H5_LAYOUT_CONTIGUOUS);
	tb_u32(&b, 0x800);
	tb_u32(&b, 4000);
	ck_assert_int_eq(h5_layout_decode(&l, &FMT44, b.p, b.len), 0);
	ck_assert_uint_eq(l.addr, 0x800);
	ck_assert_uint_eq(l.size, 4000);
	ck_assert_int_eq(h5_layout_decode(&l, &FMT44, b.p, b.len - 1), H5_ERR_FORMAT);
	tb_free(&b);

	tb_u8(&b, 3); tb_u8(&b, H5_LAYOUT_CHUNKED);
	tb_u8(&b, 2);
	tb_u64(&b, UINT64_MAX);
	tb_u32(&b, 16); tb_u32(&b, 4);
	ck_assert_int_eq(h5_layout_decode(&l, &FMT88, b.p, b.len), 0);
	ck_assert_uint_eq(l.ndims, 1);
	ck_assert_uint_eq(l.chunk[0], 16);
	ck_assert_uint_eq(l.chunk_elem_size, 4);
	ck_assert_uint_eq(l.idx_addr, H5_ADDR_UNDEF);
	ck_assert_int_eq(h5_layout_decode(&l, &FMT88, b.p, b.len - 1), H5_ERR_FORMAT);
	b.p[b.len - 8] = 0; /* zero chunk dimension */
	ck_assert_int_eq(h5_layout_decode(&l, &FMT88, b.p, b.len), H5_ERR_FORMAT);
	b.p[b.len - 8] = 16;
	b.p[b.len - 4] = 0; /* zero element size */
	ck_assert_int_eq(h5_layout_decode(&l, &FMT88, b.p, b.len), H5_ERR_FORMAT);
	b.p[2] = 34; /* 33 dims + element size */
	ck_assert_int_eq(h5_layout_decode(&l, &FMT88, b.p, b.len), H5_ERR_FORMAT);
	b.p[1] = 4; /* bad class */
	ck_assert_int_eq(h5_layout_decode(&l, &FMT88, b.p, b.len), H5_ERR_FORMAT);
	b.p[0] = 6; /* bad version */
	ck_assert_int_eq(h5_layout_decode(&l, &FMT88, b.p, b.len), H5_ERR_FORMAT);
	b.p[0] = 0;
	ck_assert_int_eq(h5_layout_decode(&l, &FMT88, b.p, b.len), H5_ERR_FORMAT);
	ck_assert_int_eq(h5_layout_decode(&l, &FMT88, b.p, 0), H5_ERR_FORMAT);
	tb_free(&b);
}
END_TEST

/* A v4 chunked layout header: flags, 2 dims + element size, enc bytes. */
static void put_v4_chunked(tbuf *b, unsigned version, uint8_t flags, uint8_t enc, uint8_t idx)
{
	tb_u8(b, (uint8_t)version); tb_u8(b, H5_LAYOUT_CHUNKED);
	tb_u8(b, flags); tb_u8(b, 3); tb_u8(b, enc);
	tb_uint(b, 5, enc); tb_uint(b, 300, enc); tb_uint(b, 8, enc);
	tb_u8(b, idx);
}

START_TEST(test_layout_v4)
{
	tbuf b = { 0 };
	h5_layout l;

	for (unsigned v = 4; v <= 5; v++) {
		/* single chunk, filtered */
		put_v4_chunked(&b, v, H5_LAYOUT_FLAG_SINGLE_FILTERED, 2, H5_CIDX_SINGLE);
		tb_u64(&b, 1234);
		tb_u32(&b, 1);
		tb_u64(&b, 0x4000);
		ck_assert_int_eq(h5_layout_decode(&l, &FMT88, b.p, b.len), 0);
		ck_assert_uint_eq(l.version, v);
		ck_assert_uint_eq(l.ndims, 2);
		ck_assert_uint_eq(l.chunk[0], 5);
		ck_assert_uint_eq(l.chunk[1], 300);
		ck_assert_uint_eq(l.chunk_elem_size, 8);
		ck_assert_uint_eq(l.dim_enc_size, 2);
		ck_assert_uint_eq(l.idx_type, H5_CIDX_SINGLE);
		ck_assert_uint_eq(l.single_size, 1234);
		ck_assert_uint_eq(l.single_mask, 1);
		ck_assert_uint_eq(l.idx_addr, 0x4000);
		for (size_t n = 0; n < b.len; n++)
			ck_assert_int_eq(h5_layout_decode(&l, &FMT88, b.p, n), H5_ERR_FORMAT);
		{
			/* the writers find the index address in both versions */
			h5_msg m = { .size = (uint32_t)b.len, .data = b.p, .addr = 0x100 };
			uint64_t at = 0;

			ck_assert_int_eq(h5_layout_single_addr_field(&at, &m, &FMT88), 0);
			ck_assert_uint_eq(at, 0x100 + b.len - 8);
		}
		tb_free(&b);
	}
	/* filtered chunk index entries: version 4 sizes them from the chunk
	 * bytes, version 5 by Size of Lengths (and takes a stored width) */
	ck_assert_uint_eq(h5_chunk_size_len_v(&FMT88, 4, 2400), 3); /* 1 + (11 + 8) / 8 */
	ck_assert_uint_eq(h5_chunk_size_len_v(&FMT88, 5, 2400), 8);
	ck_assert_uint_eq(h5_chunk_size_len_v(&FMT44, 5, 2400), 4);
	ck_assert_int_eq(h5_chunk_elmt_size_ok(&FMT88, 4, true, 2400, 15), 0);
	ck_assert_int_eq(h5_chunk_elmt_size_ok(&FMT88, 4, true, 2400, 20), H5_ERR_FORMAT);
	ck_assert_int_eq(h5_chunk_elmt_size_ok(&FMT88, 5, true, 2400, 20), 0);
	ck_assert_int_eq(h5_chunk_elmt_size_ok(&FMT88, 5, true, 2400, 14), 0);
	ck_assert_int_eq(h5_chunk_elmt_size_ok(&FMT88, 5, true, 2400, 21), H5_ERR_FORMAT);
	ck_assert_int_eq(h5_chunk_elmt_size_ok(&FMT88, 5, false, 2400, 8), 0);
	ck_assert_int_eq(h5_chunk_elmt_size_ok(&FMT88, 5, false, 2400, 20), H5_ERR_FORMAT);

	/* single chunk, not filtered: no size/mask, 4-byte dimensions */
	put_v4_chunked(&b, 4, 0, 4, H5_CIDX_SINGLE);
	tb_u64(&b, 0x4000);
	ck_assert_int_eq(h5_layout_decode(&l, &FMT88, b.p, b.len), 0);
	ck_assert_uint_eq(l.chunk[1], 300);
	ck_assert_uint_eq(l.idx_addr, 0x4000);
	ck_assert_uint_eq(l.single_size, 0);
	ck_assert_int_eq(h5_layout_decode(&l, &FMT88, b.p, b.len - 1), H5_ERR_FORMAT);
	tb_free(&b);

	/* implicit */
	put_v4_chunked(&b, 4, 0, 8, H5_CIDX_IMPLICIT);
	tb_u64(&b, 0x5000);
	ck_assert_int_eq(h5_layout_decode(&l, &FMT88, b.p, b.len), 0);
	ck_assert_uint_eq(l.idx_type, H5_CIDX_IMPLICIT);
	ck_assert_uint_eq(l.idx_addr, 0x5000);
	tb_free(&b);

	/* fixed array */
	put_v4_chunked(&b, 4, H5_LAYOUT_FLAG_NO_FILTER_EDGE, 2, H5_CIDX_FARRAY);
	tb_u8(&b, 10);
	tb_u32(&b, 0x6000);
	ck_assert_int_eq(h5_layout_decode(&l, &FMT44, b.p, b.len), 0);
	ck_assert_uint_eq(l.fa_page_bits, 10);
	ck_assert_uint_eq(l.flags, H5_LAYOUT_FLAG_NO_FILTER_EDGE);
	ck_assert_uint_eq(l.idx_addr, 0x6000);
	b.p[b.len - 5] = 0;
	ck_assert_int_eq(h5_layout_decode(&l, &FMT44, b.p, b.len), H5_ERR_FORMAT);
	tb_free(&b);

	/* extensible array */
	put_v4_chunked(&b, 4, 0, 2, H5_CIDX_EARRAY);
	tb_u8(&b, 32); tb_u8(&b, 4); tb_u8(&b, 4); tb_u8(&b, 16); tb_u8(&b, 10);
	tb_u64(&b, 0x7000);
	ck_assert_int_eq(h5_layout_decode(&l, &FMT88, b.p, b.len), 0);
	ck_assert_uint_eq(l.ea_max_bits, 32);
	ck_assert_uint_eq(l.ea_idx_elmts, 4);
	ck_assert_uint_eq(l.ea_min_ptrs, 4);
	ck_assert_uint_eq(l.ea_min_elmts, 16);
	ck_assert_uint_eq(l.ea_page_bits, 10);
	ck_assert_uint_eq(l.idx_addr, 0x7000);
	b.p[b.len - 9] = 0;
	ck_assert_int_eq(h5_layout_decode(&l, &FMT88, b.p, b.len), H5_ERR_FORMAT);
	tb_free(&b);

	/* v2 B-tree */
	put_v4_chunked(&b, 4, 0, 2, H5_CIDX_BTREE2);
	tb_u32(&b, 2048); tb_u8(&b, 100); tb_u8(&b, 40);
	tb_u64(&b, UINT64_MAX);
	ck_assert_int_eq(h5_layout_decode(&l, &FMT88, b.p, b.len), 0);
	ck_assert_uint_eq(l.bt2_node_size, 2048);
	ck_assert_uint_eq(l.bt2_split, 100);
	ck_assert_uint_eq(l.bt2_merge, 40);
	ck_assert_uint_eq(l.idx_addr, H5_ADDR_UNDEF);
	tb_free(&b);

	/* bad index types (0: v1 B-tree never in v4; 6: unknown), flags, enc sizes */
	put_v4_chunked(&b, 4, 0, 2, 0);
	tb_u64(&b, 0);
	ck_assert_int_eq(h5_layout_decode(&l, &FMT88, b.p, b.len), H5_ERR_FORMAT);
	b.p[11] = 6;
	ck_assert_int_eq(h5_layout_decode(&l, &FMT88, b.p, b.len), H5_ERR_FORMAT);
	b.p[11] = H5_CIDX_IMPLICIT;
	ck_assert_int_eq(h5_layout_decode(&l, &FMT88, b.p, b.len), 0);
	b.p[2] = 4;
	ck_assert_int_eq(h5_layout_decode(&l, &FMT88, b.p, b.len), H5_ERR_FORMAT);
	b.p[2] = 0;
	b.p[4] = 0;
	ck_assert_int_eq(h5_layout_decode(&l, &FMT88, b.p, b.len), H5_ERR_FORMAT);
	b.p[4] = 9;
	ck_assert_int_eq(h5_layout_decode(&l, &FMT88, b.p, b.len), H5_ERR_FORMAT);
	tb_free(&b);

	/* virtual: global heap address and index */
	tb_u8(&b, 4); tb_u8(&b, H5_LAYOUT_VIRTUAL);
	tb_u64(&b, 0x9000);
	tb_u32(&b, 3);
	ck_assert_int_eq(h5_layout_decode(&l, &FMT88, b.p, b.len), 0);
	ck_assert_uint_eq(l.cls, H5_LAYOUT_VIRTUAL);
	ck_assert_uint_eq(l.vds_heap_addr, 0x9000);
	ck_assert_uint_eq(l.vds_heap_index, 3);
	ck_assert_int_eq(h5_layout_decode(&l, &FMT88, b.p, b.len - 1), H5_ERR_FORMAT);
	b.p[0] = 3;
	ck_assert_int_eq(h5_layout_decode(&l, &FMT88, b.p, b.len), H5_ERR_FORMAT);
	tb_free(&b);
}
END_TEST

/* ---- filter pipeline ------------------------------------------------------ */

START_TEST(test_pline_v1)
{
	tbuf b = { 0 };
	h5_pline p;

	tb_u8(&b, 1); tb_u8(&b, 2); tb_zero(&b, 6);
	/* deflate, name "deflate" (8 with NUL), 1 value + padding */
	tb_u16(&b, 1); tb_u16(&b, 8); tb_u16(&b, 0); tb_u16(&b, 1);
	tb_put(&b, "deflate", 8);
	tb_u32(&b, 6); tb_u32(&b, 0);
	/* user filter, no name, 2 values, optional */
	tb_u16(&b, 32000); tb_u16(&b, 0); tb_u16(&b, 1); tb_u16(&b, 2);
	tb_u32(&b, 7); tb_u32(&b, 8);
	ck_assert_int_eq(h5_pline_decode(&p, b.p, b.len), 0);
	ck_assert_uint_eq(p.version, 1);
	ck_assert_uint_eq(p.n, 2);
	ck_assert_uint_eq(p.filters[0].id, 1);
	ck_assert_str_eq(p.filters[0].name, "deflate");
	ck_assert_uint_eq(p.filters[0].ncd, 1);
	ck_assert_uint_eq(p.filters[0].cd[0], 6);
	ck_assert_uint_eq(p.filters[1].id, 32000);
	ck_assert_ptr_null(p.filters[1].name);
	ck_assert_uint_eq(p.filters[1].flags, 1);
	ck_assert_uint_eq(p.filters[1].ncd, 2);
	ck_assert_uint_eq(p.filters[1].cd[1], 8);
	h5_pline_clear(&p);
	ck_assert_ptr_null(p.filters);
	for (size_t n = 0; n < b.len; n++)
		ck_assert_int_eq(h5_pline_decode(&p, b.p, n), H5_ERR_FORMAT);
	/* name length not a multiple of 8 */
	b.p[10] = 7;
	ck_assert_int_eq(h5_pline_decode(&p, b.p, b.len), H5_ERR_FORMAT);
	b.p[10] = 8;
	/* client data count past the end */
	b.p[14] = 0xff;
	ck_assert_int_eq(h5_pline_decode(&p, b.p, b.len), H5_ERR_FORMAT);
	b.p[14] = 1;
	/* 33 filters */
	b.p[1] = 33;
	ck_assert_int_eq(h5_pline_decode(&p, b.p, b.len), H5_ERR_FORMAT);
	b.p[0] = 3;
	b.p[1] = 2;
	ck_assert_int_eq(h5_pline_decode(&p, b.p, b.len), H5_ERR_FORMAT);
	tb_free(&b);
}
END_TEST

START_TEST(test_pline_v2)
{
	tbuf b = { 0 };
	h5_pline p;

	tb_u8(&b, 2); tb_u8(&b, 3);
	/* shuffle: no name field for ids < 256 */
	tb_u16(&b, 2); tb_u16(&b, 0); tb_u16(&b, 1);
	tb_u32(&b, 4);
	/* user filter with a name (no padding in v2) */
	tb_u16(&b, 32015); tb_u16(&b, 5); tb_u16(&b, 0); tb_u16(&b, 0);
	tb_put(&b, "zstd", 5);
	/* fletcher32 with no values */
	tb_u16(&b, 3); tb_u16(&b, 0); tb_u16(&b, 0);
	ck_assert_int_eq(h5_pline_decode(&p, b.p, b.len), 0);
	ck_assert_uint_eq(p.n, 3);
	ck_assert_ptr_null(p.filters[0].name);
	ck_assert_uint_eq(p.filters[0].cd[0], 4);
	ck_assert_str_eq(p.filters[1].name, "zstd");
	ck_assert_uint_eq(p.filters[1].ncd, 0);
	ck_assert_ptr_null(p.filters[1].cd);
	ck_assert_uint_eq(p.filters[2].id, 3);
	h5_pline_clear(&p);
	for (size_t n = 0; n < b.len; n++)
		ck_assert_int_eq(h5_pline_decode(&p, b.p, n), H5_ERR_FORMAT);
	/* name without NUL: kept as the stored bytes */
	b.p[2 + 10 + 8 + 4] = 'X';
	ck_assert_int_eq(h5_pline_decode(&p, b.p, b.len), 0);
	ck_assert_str_eq(p.filters[1].name, "zstdX");
	h5_pline_clear(&p);
	tb_free(&b);

	/* empty pipeline */
	tb_u8(&b, 2); tb_u8(&b, 0);
	ck_assert_int_eq(h5_pline_decode(&p, b.p, b.len), 0);
	ck_assert_uint_eq(p.n, 0);
	h5_pline_clear(&p);
	tb_free(&b);
}
END_TEST

/* ---- external file list --------------------------------------------------- */

START_TEST(test_efl)
{
	tbuf b = { 0 };
	h5_efl e;

	tb_u8(&b, 1); tb_zero(&b, 3);
	tb_u16(&b, 4); tb_u16(&b, 2);
	tb_u64(&b, 0x300);
	tb_u64(&b, 8); tb_u64(&b, 0); tb_u64(&b, 400);
	tb_u64(&b, 24); tb_u64(&b, 16); tb_u64(&b, UINT64_MAX);
	ck_assert_int_eq(h5_efl_decode(&e, &FMT88, b.p, b.len), 0);
	ck_assert_uint_eq(e.heap_addr, 0x300);
	ck_assert_uint_eq(e.n, 2);
	ck_assert_uint_eq(e.e[0].name_off, 8);
	ck_assert_uint_eq(e.e[0].size, 400);
	ck_assert_uint_eq(e.e[1].name_off, 24);
	ck_assert_uint_eq(e.e[1].offset, 16);
	ck_assert_uint_eq(e.e[1].size, H5_UNLIMITED);
	h5_efl_clear(&e);
	ck_assert_ptr_null(e.e);
	for (size_t n = 0; n < b.len; n++)
		ck_assert_int_eq(h5_efl_decode(&e, &FMT88, b.p, n), H5_ERR_FORMAT);
	b.p[6] = 5; /* used > allocated */
	ck_assert_int_eq(h5_efl_decode(&e, &FMT88, b.p, b.len), H5_ERR_FORMAT);
	b.p[4] = 0xff; b.p[5] = 0xff; b.p[6] = 0xff; b.p[7] = 0xff; /* 65535 slots in 56 bytes */
	ck_assert_int_eq(h5_efl_decode(&e, &FMT88, b.p, b.len), H5_ERR_FORMAT);
	b.p[4] = 4; b.p[5] = 0; b.p[6] = 2; b.p[7] = 0;
	b.p[0] = 2;
	ck_assert_int_eq(h5_efl_decode(&e, &FMT88, b.p, b.len), H5_ERR_FORMAT);
	b.p[0] = 1;
	memset(b.p + 8, 0xff, 8); /* undefined heap */
	ck_assert_int_eq(h5_efl_decode(&e, &FMT88, b.p, b.len), H5_ERR_FORMAT);
	tb_free(&b);

	/* 4-byte sizes, no slots in use */
	tb_u8(&b, 1); tb_zero(&b, 3);
	tb_u16(&b, 0); tb_u16(&b, 0);
	tb_u32(&b, 0x100);
	ck_assert_int_eq(h5_efl_decode(&e, &FMT44, b.p, b.len), 0);
	ck_assert_uint_eq(e.n, 0);
	h5_efl_clear(&e);
	tb_free(&b);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("messages");
	TCase *tc = tcase_create("decoders");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_dspace_v1);
	tcase_add_test(tc, test_dspace_v2);
	tcase_add_test(tc, test_dspace_rank_and_overflow);
	tcase_add_test(tc, test_dtype_atomic);
	tcase_add_test(tc, test_dtype_compound_v1);
	tcase_add_test(tc, test_dtype_compound_v2_v3);
	tcase_add_test(tc, test_dtype_enum);
	tcase_add_test(tc, test_dtype_vlen_array);
	tcase_add_test(tc, test_dtype_depth);
	tcase_add_test(tc, test_dtype_fuzz);
	tcase_add_test(tc, test_fill);
	tcase_add_test(tc, test_layout_v1_v2);
	tcase_add_test(tc, test_layout_v3);
	tcase_add_test(tc, test_layout_v4);
	tcase_add_test(tc, test_pline_v1);
	tcase_add_test(tc, test_pline_v2);
	tcase_add_test(tc, test_efl);
	tcase_add_test(tc, test_real_messages);
	tcase_add_test(tc, test_real_messages_truncated);
	suite_add_tcase(s, tc);
	return s;
}

H5_TEST_MAIN(make_suite)
