/* filter_lzf.c - LZF (32000), as h5py writes it (spec IV.A.2.l; filter.c runs the pipeline). */
#include "filter_impl.h"
#include "pline.h"
#include "filter.h"

/* The h5py LZF filter stores a raw liblzf stream (when compression does not
 * pay, the optional filter fails at write time and the mask bit is set).
 * liblzf format: a control byte < 32 starts a literal run of ctrl+1 bytes;
 * otherwise len = ctrl >> 5 (7: plus the next byte) and a back reference of
 * len+2 bytes at distance ((ctrl & 31) << 8 | next byte) + 1. */
/* Output past the chunk's bound (done bytes) before ip, a control byte:
 * the rest of the stream walked without being written, to tell a damaged
 * chunk (the stream breaks further on) from one that really decodes to
 * more than the chunk. */
static int lzf_past(const uint8_t *ip, const uint8_t *ie, size_t done, size_t cap)
{
	size_t total = done;

	while (ip < ie) {
		unsigned ctrl = *ip++;

		if (ctrl < 32) {
			if ((size_t)ctrl + 1 > (size_t)(ie - ip))
				return h5_err_set(H5_ERR_FORMAT, "lzf: corrupt chunk data: a literal run past the end of "
						  "the stream, after output past the %zu bytes of the chunk", cap);
			ip += ctrl + 1;
			total += ctrl + 1;
		} else {
			size_t n = ctrl >> 5, dist = (size_t)(ctrl & 31) << 8;

			if (ip >= ie || (n == 7 && ie - ip < 2))
				return h5_err_set(H5_ERR_FORMAT, "lzf: corrupt chunk data: the stream is cut short, after "
						  "output past the %zu bytes of the chunk", cap);
			if (n == 7)
				n += *ip++;
			dist += (size_t)*ip++ + 1;
			if (dist > total)
				return h5_err_set(H5_ERR_FORMAT, "lzf: corrupt chunk data: a back reference before the "
						  "start of the output, after output past the %zu bytes of the chunk", cap);
			total += n + 2;
		}
	}
	return h5_err_set(H5_ERR_FORMAT, "lzf: decompression bomb: the stream decodes to %zu bytes, more than the "
			  "%zu bytes of the chunk", total, cap);
}

static int dec_lzf(uint8_t **buf, size_t *len, const h5_filter *f, fstage st)
{
	const uint8_t *ip = *buf, *ie = *buf + *len;
	uint8_t *out, *op;
	size_t cap = st.size;
	int rc = 0;

	(void)f;
	out = h5_buf_alloc(cap ? cap : 1);
	if (!out)
		return h5_err_set(H5_ERR_NOMEM, "lzf: out of memory");
	op = out;
	while (ip < ie) {
		unsigned ctrl = *ip++;

		if (ctrl < 32) {
			size_t n = ctrl + 1;

			if (n > cap - (size_t)(op - out)) {
				rc = lzf_past(ip - 1, ie, (size_t)(op - out), cap);
				goto out;
			}
			if (n > (size_t)(ie - ip)) {
				rc = h5_err_set(H5_ERR_FORMAT, "lzf: literal run past the end of the stream");
				goto out;
			}
			memcpy(op, ip, n);
			op += n;
			ip += n;
		} else {
			size_t n = ctrl >> 5, dist = (size_t)(ctrl & 31) << 8;

			if (ip >= ie)
				goto truncated;
			if (n == 7) {
				n += *ip++;
				if (ip >= ie)
					goto truncated;
			}
			dist += (size_t)*ip++ + 1;
			n += 2;
			if (dist > (size_t)(op - out)) {
				rc = h5_err_set(H5_ERR_FORMAT, "lzf: back reference before the start of the output");
				goto out;
			}
			if (n > cap - (size_t)(op - out)) {
				rc = lzf_past(ip, ie, (size_t)(op - out) + n, cap);
				goto out;
			}
			/* byte by byte: the copy may overlap itself */
			for (size_t i = 0; i < n; i++, op++)
				*op = *(op - dist);
		}
	}
	if (st.exact && (size_t)(op - out) != st.size) {
		rc = h5_err_set(H5_ERR_FORMAT, "lzf: stream decodes to %zu bytes, expected %zu", (size_t)(op - out), st.size);
		goto out;
	}
	swap_buf(buf, len, out, (size_t)(op - out));
	return 0;
truncated:
	rc = h5_err_set(H5_ERR_FORMAT, "lzf: back reference truncated at the end of the stream");
out:
	h5_buf_free(out);
	return rc;
}

/* Our own LZF packer, in the format above (greedy, one hash of the next
 * three bytes, matches of 3..264 bytes at distances 1..8192).  h5py's
 * filter gives liblzf an output as long as the input: when the stream
 * would not fit the filter fails and, being optional, the chunk is stored
 * unfiltered with its mask bit set.  0: does not fit. */
#define LZF_HLOG 14
#define LZF_MAX_LIT 32
#define LZF_MAX_OFF 8192
#define LZF_MAX_REF (2 + 7 + 255)

static inline uint32_t lzf_hash(const uint8_t *p)
{
	return (((uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2]) * UINT32_C(2654435761)) >> (32 - LZF_HLOG);
}

/* Literal run in[from, to) as runs of at most 32 bytes; false: no room. */
static bool lzf_lits(uint8_t *out, size_t cap, size_t *op, const uint8_t *in, size_t from, size_t to)
{
	while (from < to) {
		size_t n = to - from < LZF_MAX_LIT ? to - from : LZF_MAX_LIT;

		if (cap - *op < n + 1)
			return false;
		out[(*op)++] = (uint8_t)(n - 1);
		memcpy(out + *op, in + from, n);
		*op += n;
		from += n;
	}
	return true;
}

static size_t lzf_pack(uint8_t *out, size_t cap, const uint8_t *in, size_t n, size_t *tab)
{
	size_t ip = 0, ls = 0, op = 0;

	while (n >= 3 && ip < n - 2) {
		uint32_t h = lzf_hash(in + ip);
		size_t ref = tab[h], r, ml, max, lcode, off;

		tab[h] = ip + 1;
		if (!ref || ip - (ref - 1) > LZF_MAX_OFF || memcmp(in + ref - 1, in + ip, 3) != 0) {
			ip++;
			continue;
		}
		r = ref - 1;
		max = n - ip < LZF_MAX_REF ? n - ip : LZF_MAX_REF;
		for (ml = 3; ml < max && in[r + ml] == in[ip + ml]; ml++)
			;
		if (!lzf_lits(out, cap, &op, in, ls, ip))
			return 0;
		lcode = ml - 2;
		off = ip - r - 1;
		if (cap - op < (lcode >= 7 ? 3u : 2u))
			return 0;
		out[op++] = (uint8_t)((lcode >= 7 ? 7 : lcode) << 5 | off >> 8);
		if (lcode >= 7)
			out[op++] = (uint8_t)(lcode - 7);
		out[op++] = (uint8_t)off;
		/* the positions inside the match are candidates too */
		for (size_t p = ip + 1; p < ip + ml && p < n - 2; p++)
			tab[lzf_hash(in + p)] = p + 1;
		ip += ml;
		ls = ip;
	}
	if (!lzf_lits(out, cap, &op, in, ls, n))
		return 0;
	return op;
}

static int enc_lzf(uint8_t **buf, size_t *len, const h5_filter *f)
{
	size_t *tab, got;
	uint8_t *out;

	(void)f;
	tab = calloc((size_t)1 << LZF_HLOG, sizeof(*tab));
	out = h5_buf_alloc(*len ? *len : 1);
	if (!tab || !out) {
		free(tab);
		h5_buf_free(out);
		return h5_err_set(H5_ERR_NOMEM, "lzf: out of memory");
	}
	got = lzf_pack(out, *len, *buf, *len, tab);
	free(tab);
	if (got == 0) {
		h5_buf_free(out);
		return h5_err_set(H5_ERR_LIMIT, "lzf: does not compress");
	}
	swap_buf(buf, len, out, got);
	return 0;
}

const h5_filter_class h5_filter_lzf = {
	.id = H5_FILTER_LZF,
	.name = "lzf",
	.size = H5_FSIZE_BOUND,
	.decode = dec_lzf,
	.encode = enc_lzf,
};
