/* filter_nbit.c - n-bit (5): packed significant bits (spec IV.A.2.l; filter.c runs the pipeline). */
#include "filter_impl.h"
#include "base.h"
#include "pline.h"
#include "filter.h"

/* H5Znbit.c.  cd values: [0] number of cd values, [1] "no need to compress",
 * [2] elements in the chunk, then the datatype description starting with a
 * class code at [3]:
 *   atomic (1):   size, byte order (0 LE, 1 BE), precision, bit offset
 *   array (2):    size, then the base type's description
 *   compound (3): size, nmembers, then per member: offset, description
 *   no-op (4):    size (bytes copied as they are)
 * Each element is packed MSB first, only its `precision` significant bits.
 * The walk below mirrors libhdf5's, including its parameter index handling
 * (an array of arrays/compounds rewinds the index to its base description),
 * but every cd read, size and output offset is bounds-checked. */

enum { NBIT_ATOMIC = 1, NBIT_ARRAY = 2, NBIT_COMPOUND = 3, NBIT_NOOPTYPE = 4 };

/* One walk of the datatype description serves both ways: decoding reads
 * the packed bits (br) into out, encoding (enc) reads the elements from
 * out and packs them (bw), byte for byte in the same order. */
typedef struct nbit_ctx {
	const uint32_t *cd;
	size_t ncd;
	bitrd br;
	bool enc;
	bitwr bw;
	uint8_t *out;
	size_t out_len;
} nbit_ctx;

typedef struct nbit_atomic {
	uint32_t size, order, precision, offset;
} nbit_atomic;

static int nbit_parm(uint32_t *v, const nbit_ctx *c, size_t *idx)
{
	if (*idx >= c->ncd)
		return h5_err_set(H5_ERR_FORMAT, "nbit: datatype description runs past the %zu cd values", c->ncd);
	*v = c->cd[(*idx)++];
	return 0;
}

static int nbit_peek(uint32_t *v, const nbit_ctx *c, size_t idx)
{
	return nbit_parm(v, c, &idx);
}

static int nbit_atomic_check(const nbit_atomic *p)
{
	if (p->size == 0 || p->precision == 0 || p->order > 1 ||
	    (uint64_t)p->precision + p->offset > (uint64_t)p->size * 8)
		return h5_err_set(H5_ERR_FORMAT, "nbit: invalid atomic type (size %u, order %u, precision %u, offset %u)",
				  p->size, p->order, p->precision, p->offset);
	return 0;
}

static int nbit_out_check(const nbit_ctx *c, size_t off, uint64_t size)
{
	if (off > c->out_len || size > c->out_len - off)
		return h5_err_set(H5_ERR_FORMAT, "nbit: datatype description writes past the element");
	return 0;
}

/* H5Z__nbit_decompress_one_byte: byte k of the element gets dat_len bits
 * at bit dat_offset (H5Z__nbit_compress_one_byte: they are packed). */
static void nbit_one_byte(nbit_ctx *c, size_t off, unsigned k, unsigned begin_i, unsigned end_i,
			  const nbit_atomic *p, unsigned dtype_len)
{
	unsigned dat_len, dat_offset = 0;

	if (begin_i != end_i) {
		if (k == begin_i) {
			dat_len = 8 - (dtype_len - p->precision - p->offset) % 8;
		} else if (k == end_i) {
			dat_len = 8 - p->offset % 8;
			dat_offset = 8 - dat_len;
		} else {
			dat_len = 8;
		}
	} else {
		dat_offset = p->offset % 8;
		dat_len = p->precision;
	}
	if (c->enc)
		bw_put(&c->bw, (uint64_t)(c->out[off + k] >> dat_offset) & ((1u << dat_len) - 1), dat_len);
	else
		c->out[off + k] = (uint8_t)(br_get(&c->br, dat_len) << dat_offset);
}

static int nbit_one_atomic(nbit_ctx *c, size_t off, const nbit_atomic *p)
{
	unsigned dtype_len = p->size * 8, begin_i, end_i;
	int rc;

	if ((rc = nbit_out_check(c, off, p->size)) < 0)
		return rc;
	if (p->order == 0) {
		begin_i = (p->precision + p->offset) / 8 - ((p->precision + p->offset) % 8 == 0);
		end_i = p->offset / 8;
		for (unsigned k = begin_i + 1; k-- > end_i;)
			nbit_one_byte(c, off, k, begin_i, end_i, p, dtype_len);
	} else {
		begin_i = (dtype_len - p->precision - p->offset) / 8;
		end_i = (dtype_len - p->offset) / 8 - (p->offset % 8 == 0);
		for (unsigned k = begin_i; k <= end_i; k++)
			nbit_one_byte(c, off, k, begin_i, end_i, p, dtype_len);
	}
	if (c->br.bad)
		return h5_err_set(H5_ERR_FORMAT, "nbit: packed data truncated (%zu bytes)", c->br.len);
	return 0;
}

static int nbit_one_nooptype(nbit_ctx *c, size_t off, uint32_t size)
{
	int rc;

	if ((rc = nbit_out_check(c, off, size)) < 0)
		return rc;
	for (uint32_t i = 0; i < size; i++) {
		if (c->enc)
			bw_put(&c->bw, c->out[off + i], 8);
		else
			c->out[off + i] = (uint8_t)br_get(&c->br, 8);
	}
	if (c->br.bad)
		return h5_err_set(H5_ERR_FORMAT, "nbit: packed data truncated (%zu bytes)", c->br.len);
	return 0;
}

static int nbit_read_atomic(nbit_atomic *p, const nbit_ctx *c, size_t *idx, bool have_size)
{
	int rc = 0;

	if (!have_size)
		rc = nbit_parm(&p->size, c, idx);
	if (rc == 0)
		rc = nbit_parm(&p->order, c, idx);
	if (rc == 0)
		rc = nbit_parm(&p->precision, c, idx);
	if (rc == 0)
		rc = nbit_parm(&p->offset, c, idx);
	if (rc == 0)
		rc = nbit_atomic_check(p);
	return rc;
}

static int nbit_one_compound(nbit_ctx *c, size_t off, size_t *idx, unsigned depth);

/* H5Z__nbit_decompress_one_array; *idx points at the array's size. */
static int nbit_one_array(nbit_ctx *c, size_t off, size_t *idx, unsigned depth)
{
	uint32_t total = 0, base_class = 0, base_size = 0;
	size_t begin;
	nbit_atomic p;
	int rc;

	if (depth > H5_MAX_DTYPE_DEPTH)
		return h5_err_set(H5_ERR_LIMIT, "nbit: datatype nested deeper than %d", H5_MAX_DTYPE_DEPTH);
	if ((rc = nbit_parm(&total, c, idx)) < 0 || (rc = nbit_parm(&base_class, c, idx)) < 0)
		return rc;
	if ((rc = nbit_out_check(c, off, total)) < 0)
		return rc;
	switch (base_class) {
	case NBIT_ATOMIC:
		if ((rc = nbit_read_atomic(&p, c, idx, false)) < 0)
			return rc;
		for (uint32_t i = 0; i < total / p.size; i++)
			if ((rc = nbit_one_atomic(c, off + (size_t)i * p.size, &p)) < 0)
				return rc;
		return 0;
	case NBIT_ARRAY:
	case NBIT_COMPOUND:
		if ((rc = nbit_peek(&base_size, c, *idx)) < 0)
			return rc;
		if (base_size == 0)
			return h5_err_set(H5_ERR_FORMAT, "nbit: array base type of size 0");
		begin = *idx;
		for (uint32_t i = 0; i < total / base_size; i++) {
			size_t eoff = off + (size_t)i * base_size;

			rc = base_class == NBIT_ARRAY ? nbit_one_array(c, eoff, idx, depth + 1)
						      : nbit_one_compound(c, eoff, idx, depth + 1);
			if (rc < 0)
				return rc;
			*idx = begin;
		}
		return 0;
	case NBIT_NOOPTYPE:
		(*idx)++;       /* the no-op type's own size: total is used */
		return nbit_one_nooptype(c, off, total);
	default:
		return h5_err_set(H5_ERR_FORMAT, "nbit: invalid array base class %u", base_class);
	}
}

/* H5Z__nbit_decompress_one_compound; *idx points at the compound's size. */
static int nbit_one_compound(nbit_ctx *c, size_t off, size_t *idx, unsigned depth)
{
	uint32_t size = 0, nmembers = 0, used = 0;
	int rc;

	if (depth > H5_MAX_DTYPE_DEPTH)
		return h5_err_set(H5_ERR_LIMIT, "nbit: datatype nested deeper than %d", H5_MAX_DTYPE_DEPTH);
	if ((rc = nbit_parm(&size, c, idx)) < 0 || (rc = nbit_parm(&nmembers, c, idx)) < 0)
		return rc;
	if ((rc = nbit_out_check(c, off, size)) < 0)
		return rc;
	for (uint32_t i = 0; i < nmembers; i++) {
		uint32_t moff = 0, mclass = 0, msize = 0;
		nbit_atomic p;

		if ((rc = nbit_parm(&moff, c, idx)) < 0 || (rc = nbit_parm(&mclass, c, idx)) < 0 ||
		    (rc = nbit_peek(&msize, c, *idx)) < 0)
			return rc;
		/* libhdf5 checks the member sizes add up to at most the compound;
		 * we also keep every member inside it and refuse empty members,
		 * which bounds the work by the output size. */
		if (msize == 0 || msize > size - used || moff > size || msize > size - moff)
			return h5_err_set(H5_ERR_FORMAT, "nbit: compound member %u (offset %u, size %u) outside the compound of %u bytes",
					  i, moff, msize, size);
		used += msize;
		switch (mclass) {
		case NBIT_ATOMIC:
			p.size = msize;
			(*idx)++;
			if ((rc = nbit_read_atomic(&p, c, idx, true)) < 0)
				return rc;
			rc = nbit_one_atomic(c, off + moff, &p);
			break;
		case NBIT_ARRAY:
			rc = nbit_one_array(c, off + moff, idx, depth + 1);
			break;
		case NBIT_COMPOUND:
			rc = nbit_one_compound(c, off + moff, idx, depth + 1);
			break;
		case NBIT_NOOPTYPE:
			(*idx)++;
			rc = nbit_one_nooptype(c, off + moff, msize);
			break;
		default:
			rc = h5_err_set(H5_ERR_FORMAT, "nbit: invalid compound member class %u", mclass);
			break;
		}
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Every element of the chunk through the description at cd[3]. */
static int nbit_walk(nbit_ctx *c, const h5_filter *f, uint32_t nelmts)
{
	uint32_t size = f->cd[4];
	int rc = 0;

	switch (f->cd[3]) {
	case NBIT_ATOMIC: {
		nbit_atomic p;
		size_t idx = 4;

		if ((rc = nbit_read_atomic(&p, c, &idx, false)) < 0)
			return rc;
		for (uint32_t i = 0; i < nelmts; i++)
			if ((rc = nbit_one_atomic(c, (size_t)i * p.size, &p)) < 0)
				return rc;
		break;
	}
	case NBIT_ARRAY:
	case NBIT_COMPOUND:
		for (uint32_t i = 0; i < nelmts; i++) {
			size_t idx = 4;

			rc = f->cd[3] == NBIT_ARRAY ? nbit_one_array(c, (size_t)i * size, &idx, 1)
						    : nbit_one_compound(c, (size_t)i * size, &idx, 1);
			if (rc < 0)
				return rc;
		}
		break;
	default:
		return h5_err_set(H5_ERR_FORMAT, "nbit: invalid datatype class %u", f->cd[3]);
	}
	return 0;
}

static int dec_nbit(uint8_t **buf, size_t *len, const h5_filter *f, fstage st)
{
	nbit_ctx c;
	uint64_t out_size;
	uint32_t nelmts, size;
	int rc = 0;

	if (f->ncd < 3 || f->cd[0] != f->ncd)
		return h5_err_set(H5_ERR_FORMAT, "nbit: cd value count %zu does not match cd[0]", f->ncd);
	if (f->cd[1])   /* full-precision type: the chunk was stored as is */
		return stage_check("nbit", *len, st);
	if (f->ncd < 5)
		return h5_err_set(H5_ERR_FORMAT, "nbit: %zu cd values are too few", f->ncd);
	nelmts = f->cd[2];
	size = f->cd[4];
	out_size = (uint64_t)nelmts * size;
	if (size == 0)
		return h5_err_set(H5_ERR_FORMAT, "nbit: datatype size 0");
	if ((rc = stage_check("nbit", out_size, st)) < 0)
		return rc;
	memset(&c, 0, sizeof(c));
	c.cd = f->cd;
	c.ncd = f->ncd;
	if (f->cd[3] == NBIT_ATOMIC) {
		/* Every element of an atomic type stores exactly `precision` bits:
		 * refuse a stream too short for the declared element count before
		 * allocating the (possibly huge) output. */
		nbit_atomic p;
		size_t idx = 4;

		if ((rc = nbit_read_atomic(&p, &c, &idx, false)) < 0)
			return rc;
		if ((uint64_t)nelmts * p.precision > (uint64_t)*len * 8)
			return h5_err_set(H5_ERR_FORMAT, "nbit: truncated: %zu input bytes cannot hold %u elements of %u bits",
					  *len, nelmts, p.precision);
	}
	c.out_len = (size_t)out_size;
	c.out = calloc(1, c.out_len ? c.out_len : 1);
	if (!c.out)
		return h5_err_set(H5_ERR_NOMEM, "nbit: out of memory for %zu bytes", c.out_len);
	br_init(&c.br, *buf, *len);
	if ((rc = nbit_walk(&c, f, nelmts)) < 0)
		goto out;
	swap_buf(buf, len, c.out, c.out_len);
	c.out = NULL;
out:
	free(c.out);
	return rc;
}

/* H5Z__filter_nbit's compression: a full-precision type (cd[1]) is stored
 * as is; else every element packed as the walk reads it, into a zeroed
 * buffer of which libhdf5 keeps the bytes up to and including the one its
 * bit cursor stands in (H5Z__nbit_compress's j + 1: one zero byte more
 * when the bits end on a byte boundary). */
static int enc_nbit(uint8_t **buf, size_t *len, const h5_filter *f)
{
	nbit_ctx c;
	uint8_t *out;
	int rc;

	if (f->ncd < 3 || f->cd[0] != f->ncd)
		return h5_err_set(H5_ERR_FORMAT, "nbit: cd value count %zu does not match cd[0]", f->ncd);
	if (f->cd[1])
		return 0;
	if (f->ncd < 5 || f->cd[4] == 0)
		return h5_err_set(H5_ERR_FORMAT, "nbit: %zu cd values are too few", f->ncd);
	if ((uint64_t)f->cd[2] * f->cd[4] != *len)
		return h5_err_set(H5_ERR_FORMAT, "nbit: chunk of %zu bytes, the cd values give %u elements of %u",
				  *len, f->cd[2], f->cd[4]);
	out = calloc(1, sat_add(*len, 1));
	if (!out)
		return h5_err_set(H5_ERR_NOMEM, "nbit: out of memory for %zu bytes", *len);
	memset(&c, 0, sizeof(c));
	c.cd = f->cd;
	c.ncd = f->ncd;
	c.enc = true;
	c.out = *buf;
	c.out_len = *len;
	bw_init(&c.bw, out);
	if ((rc = nbit_walk(&c, f, f->cd[2])) < 0) {
		free(out);
		return rc;
	}
	swap_buf(buf, len, out, c.bw.pos + 1);
	return 0;
}

const h5_filter_class h5_filter_nbit = {
	.id = H5_FILTER_NBIT,
	.name = "nbit",
	.size = H5_FSIZE_BOUND,
	.decode = dec_nbit,
	.encode = enc_nbit,
};
