/* sel.c - dataspace selections (spec III.F "Dataspace Selection"; the
 * version 2 and 3 encodings follow libhdf5's H5S__hyper_deserialize and
 * H5S__point_deserialize, which the specification does not describe).
 */
#define _GNU_SOURCE /* qsort_r */
#include "sel.h"
#include "base.h"
#include "rd.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HYPER_REGULAR 0x01

static int sel_err(const char *what)
{
	return h5_err_set(H5_ERR_FORMAT, "dataspace selection: %s", what);
}

/* A value of enc bytes; in the 2- and 4-byte encodings all ones stands for
 * H5S_UNLIMITED where unlimited values are allowed (counts and blocks). */
static uint64_t rd_enc(h5_rd *r, unsigned enc, bool unlim)
{
	uint64_t v = h5_rd_uint(r, enc);

	if (unlim && enc < 8 && v == (enc == 2 ? UINT64_C(0xffff) : UINT64_C(0xffffffff)))
		return H5_UNLIMITED;
	return v;
}

static uint64_t sat_mul(uint64_t a, uint64_t b)
{
	uint64_t r;

	return h5_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

static uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* Lexicographic comparison of two coordinates (row-major order). */
static int coord_cmp(const uint64_t *a, const uint64_t *b, unsigned rank)
{
	for (unsigned d = 0; d < rank; d++)
		if (a[d] != b[d])
			return a[d] < b[d] ? -1 : 1;
	return 0;
}

static int run_cmp(const void *pa, const void *pb, void *arg)
{
	const h5_sel *s = arg;
	size_t a = *(const size_t *)pa, b = *(const size_t *)pb;

	return coord_cmp(&s->run_coord[a * s->rank], &s->run_coord[b * s->rank], s->rank);
}

static int runs_alloc(h5_sel *s, size_t n)
{
	if (n > H5_SEL_MAX_RUNS)
		return h5_err_set(H5_ERR_LIMIT, "dataspace selection: more than %zu runs", (size_t)H5_SEL_MAX_RUNS);
	s->run_coord = calloc(n ? n * s->rank : 1, sizeof(uint64_t));
	s->run_len = calloc(n ? n : 1, sizeof(uint64_t));
	s->run_ord = calloc(n ? n : 1, sizeof(uint64_t));
	s->by_pos = calloc(n ? n : 1, sizeof(size_t));
	if (!s->run_coord || !s->run_len || !s->run_ord || !s->by_pos)
		return h5_err_set(H5_ERR_NOMEM, "dataspace selection: out of memory for %zu runs", n);
	s->nruns = n;
	return 0;
}

static void by_pos_sort(h5_sel *s)
{
	for (size_t i = 0; i < s->nruns; i++)
		s->by_pos[i] = i;
	qsort_r(s->by_pos, s->nruns, sizeof(size_t), run_cmp, s);
}

/* Points (version 1: 4-byte values after 8 reserved bytes; version 2: an
 * encoding size byte). Iterated in the order listed. */
static int decode_points(h5_sel *s, h5_rd *r, uint32_t version)
{
	unsigned enc;
	uint64_t n, total;
	int rc;

	if (version == 1) {
		h5_rd_skip(r, 8);
		enc = 4;
	} else if (version == 2) {
		enc = h5_rd_u8(r);
	} else {
		return sel_err("unsupported point selection version");
	}
	if (enc != 2 && enc != 4 && enc != 8)
		return sel_err("bad encoding size");
	s->rank = h5_rd_u32(r);
	if (!h5_rd_ok(r) || s->rank == 0 || s->rank > H5_MAX_RANK)
		return sel_err("bad point selection rank");
	n = rd_enc(r, enc, false);
	if (!h5_rd_ok(r) || n > H5_SEL_MAX_RUNS || h5_mul_overflow(n, (uint64_t)s->rank * enc, &total) ||
	    !h5_rd_need(r, (size_t)total))
		return sel_err("point list truncated or too long");
	if ((rc = runs_alloc(s, (size_t)n)) < 0)
		return rc;
	for (size_t i = 0; i < s->nruns; i++) {
		for (unsigned d = 0; d < s->rank; d++)
			s->run_coord[i * s->rank + d] = rd_enc(r, enc, false);
		s->run_len[i] = 1;
		s->run_ord[i] = i;
	}
	s->nelem = n;
	by_pos_sort(s);
	return 0;
}

/* Irregular hyperslab: a union of blocks, iterated in row-major order. It is
 * expanded to runs along the last dimension, sorted, and overlapping runs of
 * one row merged. */
static int expand_blocks(h5_sel *s, const uint64_t *lo, const uint64_t *hi, size_t nblocks)
{
	unsigned rank = s->rank, last = rank - 1;
	uint64_t total = 0, ord = 0;
	size_t k = 0, w;
	uint64_t *tmp_coord;
	int rc;

	for (size_t b = 0; b < nblocks; b++) {
		uint64_t rows = 1;

		for (unsigned d = 0; d < rank; d++)
			if (hi[b * rank + d] < lo[b * rank + d] || hi[b * rank + d] == UINT64_MAX)
				return sel_err("hyperslab block ends before it starts");
		for (unsigned d = 0; d < last; d++)
			rows = sat_mul(rows, hi[b * rank + d] - lo[b * rank + d] + 1);
		if (h5_add_overflow(total, rows, &total) || total > H5_SEL_MAX_RUNS)
			return h5_err_set(H5_ERR_LIMIT, "dataspace selection: more than %zu runs",
					  (size_t)H5_SEL_MAX_RUNS);
	}
	if ((rc = runs_alloc(s, (size_t)total)) < 0)
		return rc;
	for (size_t b = 0; b < nblocks; b++) {
		uint64_t c[H5_MAX_RANK];

		memcpy(c, &lo[b * rank], rank * sizeof(uint64_t));
		for (;;) {
			memcpy(&s->run_coord[k * rank], c, rank * sizeof(uint64_t));
			s->run_len[k++] = hi[b * rank + last] - lo[b * rank + last] + 1;
			/* next row of this block (odometer over the outer dimensions) */
			int d = (int)last - 1;

			while (d >= 0 && c[d] == hi[b * rank + (unsigned)d]) {
				c[d] = lo[b * rank + (unsigned)d];
				d--;
			}
			if (d < 0)
				break;
			c[d]++;
		}
	}
	by_pos_sort(s);
	/* rewrite the runs in row-major order, merging overlaps in a row */
	tmp_coord = malloc(total ? total * rank * sizeof(uint64_t) : 1);
	uint64_t *tmp_len = malloc(total ? total * sizeof(uint64_t) : 1);

	if (!tmp_coord || !tmp_len) {
		free(tmp_coord);
		free(tmp_len);
		return h5_err_set(H5_ERR_NOMEM, "dataspace selection: out of memory");
	}
	w = 0;
	for (size_t i = 0; i < s->nruns; i++) {
		const uint64_t *c = &s->run_coord[s->by_pos[i] * rank];
		uint64_t len = s->run_len[s->by_pos[i]];

		if (w > 0) {
			uint64_t *pc = &tmp_coord[(w - 1) * rank];

			if (coord_cmp(pc, c, last) == 0 && c[last] <= pc[last] + tmp_len[w - 1]) {
				uint64_t end = c[last] + len;

				if (end > pc[last] + tmp_len[w - 1])
					tmp_len[w - 1] = end - pc[last];
				continue;
			}
		}
		memcpy(&tmp_coord[w * rank], c, rank * sizeof(uint64_t));
		tmp_len[w++] = len;
	}
	free(s->run_coord);
	free(s->run_len);
	s->run_coord = tmp_coord;
	s->run_len = tmp_len;
	s->nruns = w;
	for (size_t i = 0; i < w; i++) {
		s->by_pos[i] = i;
		s->run_ord[i] = ord;
		if (h5_add_overflow(ord, s->run_len[i], &ord))
			return sel_err("selection too large");
	}
	s->nelem = ord;
	return 0;
}

static int set_regular_dim(h5_sel *s, unsigned d, uint64_t start, uint64_t stride, uint64_t count, uint64_t block)
{
	h5_sel_dim *m = &s->dim[d];

	if (count == H5_UNLIMITED || block == H5_UNLIMITED) {
		if (count == H5_UNLIMITED && block == H5_UNLIMITED)
			return sel_err("count and block both unlimited");
		if (s->unlim_dim >= 0)
			return sel_err("more than one unlimited dimension");
		if (block == H5_UNLIMITED && count != 1)
			return sel_err("unlimited block with a count other than 1");
		s->unlim_dim = (int)d;
	}
	if (count != 1 && count != 0 && (stride == 0 || stride < block))
		return sel_err("hyperslab blocks overlap");
	m->start = start;
	m->stride_stored = stride;
	m->stride = count > 1 ? stride : (block == H5_UNLIMITED || block == 0 ? 1 : block);
	m->count = count;
	m->block = block;
	m->n = count == H5_UNLIMITED || block == H5_UNLIMITED ? H5_UNLIMITED : sat_mul(count, block);
	if (m->n == UINT64_MAX && s->unlim_dim != (int)d)
		return sel_err("hyperslab too large");
	/* the largest coordinate must be representable */
	if (m->n != H5_UNLIMITED && m->n > 0) {
		uint64_t end;

		if (h5_mul_overflow((m->n - 1) / m->block, m->stride, &end) || h5_add_overflow(end, start, &end) ||
		    h5_add_overflow(end, m->block, &end))
			return sel_err("hyperslab beyond any extent");
	}
	return 0;
}

static int decode_hyper(h5_sel *s, h5_rd *r, uint32_t version)
{
	uint8_t flags = 0;
	unsigned enc;
	int rc = 0;

	if (version == 1) {
		h5_rd_skip(r, 8);
		enc = 4;
	} else if (version == 2 || version == 3) {
		flags = h5_rd_u8(r);
		if (version == 3) {
			enc = h5_rd_u8(r);
		} else {
			h5_rd_skip(r, 4);
			enc = 8;
		}
		if (flags & ~HYPER_REGULAR)
			return sel_err("unknown hyperslab flags");
	} else {
		return sel_err("unsupported hyperslab selection version");
	}
	if (enc != 2 && enc != 4 && enc != 8)
		return sel_err("bad encoding size");
	s->rank = h5_rd_u32(r);
	if (!h5_rd_ok(r) || s->rank == 0 || s->rank > H5_MAX_RANK)
		return sel_err("bad hyperslab rank");
	if (flags & HYPER_REGULAR) {
		s->regular = true;
		for (unsigned d = 0; d < s->rank && rc == 0; d++) {
			uint64_t start = rd_enc(r, enc, false), stride = rd_enc(r, enc, false);
			uint64_t count = rd_enc(r, enc, true), block = rd_enc(r, enc, true);

			if (!h5_rd_ok(r))
				return sel_err("hyperslab truncated");
			rc = set_regular_dim(s, d, start, stride, count, block);
		}
		return rc;
	}
	uint64_t nb = rd_enc(r, enc, false), bytes;

	if (!h5_rd_ok(r) || nb > H5_SEL_MAX_RUNS || h5_mul_overflow(nb, (uint64_t)s->rank * 2 * enc, &bytes) ||
	    !h5_rd_need(r, (size_t)bytes))
		return sel_err("hyperslab block list truncated or too long");
	uint64_t *lo = malloc(nb ? nb * s->rank * sizeof(uint64_t) : 1);
	uint64_t *hi = malloc(nb ? nb * s->rank * sizeof(uint64_t) : 1);

	if (!lo || !hi) {
		rc = h5_err_set(H5_ERR_NOMEM, "dataspace selection: out of memory");
		goto out;
	}
	for (size_t b = 0; b < nb; b++) {
		for (unsigned d = 0; d < s->rank; d++)
			lo[b * s->rank + d] = rd_enc(r, enc, false);
		for (unsigned d = 0; d < s->rank; d++)
			hi[b * s->rank + d] = rd_enc(r, enc, false);
	}
	if (nb == 1) {
		/* one block is a regular hyperslab: arithmetic, no table */
		s->regular = true;
		for (unsigned d = 0; d < s->rank && rc == 0; d++) {
			if (hi[d] < lo[d] || hi[d] == UINT64_MAX)
				rc = sel_err("hyperslab block ends before it starts");
			else
				rc = set_regular_dim(s, d, lo[d], 1, 1, hi[d] - lo[d] + 1);
		}
	} else {
		rc = expand_blocks(s, lo, hi, (size_t)nb);
	}
out:
	free(lo);
	free(hi);
	return rc;
}

static int regular_nelem(h5_sel *s)
{
	uint64_t n = 1;

	for (unsigned d = 0; d < s->rank; d++)
		if (h5_mul_overflow(n, s->dim[d].n, &n))
			return sel_err("selection too large");
	s->nelem = n;
	return 0;
}

int h5_sel_decode(h5_sel *out, h5_rd *r)
{
	uint32_t type, version;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	out->unlim_dim = -1;
	type = h5_rd_u32(r);
	version = h5_rd_u32(r);
	if (!h5_rd_ok(r))
		return sel_err("truncated");
	out->type = (uint8_t)type;
	switch (type) {
	case H5_SEL_NONE:
	case H5_SEL_ALL:
		if (version != 1)
			return sel_err("unsupported all/none selection version");
		h5_rd_skip(r, 8);
		out->regular = type == H5_SEL_ALL;
		break;
	case H5_SEL_POINTS:
		rc = decode_points(out, r, version);
		break;
	case H5_SEL_HYPER:
		rc = decode_hyper(out, r, version);
		break;
	default:
		return sel_err("unknown selection type");
	}
	if (rc == 0 && !h5_rd_ok(r))
		rc = sel_err("truncated");
	if (rc == 0 && out->regular && out->unlim_dim < 0 && out->rank)
		rc = regular_nelem(out);
	if (rc < 0)
		h5_sel_free(out);
	return rc;
}

void h5_sel_free(h5_sel *s)
{
	if (!s)
		return;
	free(s->run_coord);
	free(s->run_len);
	free(s->run_ord);
	free(s->by_pos);
	s->run_coord = s->run_len = s->run_ord = NULL;
	s->by_pos = NULL;
	s->nruns = 0;
}

int h5_sel_copy(h5_sel *out, const h5_sel *src)
{
	*out = *src;
	out->run_coord = out->run_len = out->run_ord = NULL;
	out->by_pos = NULL;
	out->nruns = 0;
	if (!src->nruns)
		return 0;
	if (runs_alloc(out, src->nruns) < 0)
		return h5_err_set(H5_ERR_NOMEM, "dataspace selection: out of memory");
	memcpy(out->run_coord, src->run_coord, src->nruns * src->rank * sizeof(uint64_t));
	memcpy(out->run_len, src->run_len, src->nruns * sizeof(uint64_t));
	memcpy(out->run_ord, src->run_ord, src->nruns * sizeof(uint64_t));
	memcpy(out->by_pos, src->by_pos, src->nruns * sizeof(size_t));
	return 0;
}

void h5_sel_bounds(uint64_t *lo, uint64_t *hi, const h5_sel *s, unsigned d)
{
	*lo = *hi = 0;
	if (s->regular) {
		const h5_sel_dim *m = &s->dim[d];

		if (m->n == 0)
			return;
		*lo = m->start;
		*hi = m->n == H5_UNLIMITED ? H5_UNLIMITED :
		      m->start + ((m->n - 1) / m->block) * m->stride + (m->n - 1) % m->block + 1;
		return;
	}
	for (size_t i = 0; i < s->nruns; i++) {
		uint64_t a = s->run_coord[i * s->rank + d];
		uint64_t b = a + (d == s->rank - 1 ? s->run_len[i] : 1);

		if (i == 0 || a < *lo)
			*lo = a;
		if (b > *hi)
			*hi = b;
	}
}

int h5_sel_set_extent(h5_sel *s, unsigned rank, const uint64_t *dims)
{
	memcpy(s->ext, dims, rank * sizeof(uint64_t));
	if (s->type == H5_SEL_ALL) {
		s->rank = rank;
		for (unsigned d = 0; d < rank; d++) {
			s->dim[d] = (h5_sel_dim){ 0, dims[d] ? dims[d] : 1, 1, dims[d], dims[d], 1 };
		}
		return regular_nelem(s);
	}
	if (s->type == H5_SEL_NONE) {
		s->rank = rank;
		s->nelem = 0;
		return 0;
	}
	if (s->rank != rank)
		return h5_err_set(H5_ERR_FORMAT, "selection of rank %u for a dataspace of rank %u", s->rank, rank);
	for (unsigned d = 0; d < rank; d++) {
		uint64_t lo, hi;

		if ((int)d == s->unlim_dim && s->dim[d].n == H5_UNLIMITED)
			continue;
		h5_sel_bounds(&lo, &hi, s, d);
		if (hi > dims[d])
			return h5_err_set(H5_ERR_FORMAT,
					  "selection reaches %llu in dimension %u, beyond the extent %llu",
					  (unsigned long long)hi, d, (unsigned long long)dims[d]);
	}
	return s->regular ? regular_nelem(s) : 0;
}

uint64_t h5_sel_count_below(const h5_sel *s, unsigned d, uint64_t limit)
{
	const h5_sel_dim *m = &s->dim[d];
	uint64_t k, rem, v;

	if (!s->regular || limit <= m->start)
		return 0;
	if (m->block == H5_UNLIMITED)
		return limit - m->start;
	k = (limit - m->start) / m->stride;
	rem = (limit - m->start) % m->stride;
	v = sat_mul(k, m->block);
	v = v > UINT64_MAX - min64(rem, m->block) ? UINT64_MAX : v + min64(rem, m->block);
	return min64(v, m->n);
}

int h5_sel_clip(h5_sel *s, uint64_t n)
{
	h5_sel_dim *m;

	if (s->unlim_dim < 0)
		return 0;
	m = &s->dim[s->unlim_dim];
	if (m->block == H5_UNLIMITED) {
		m->block = n;
		m->count = 1;
		m->stride = n ? n : 1;
	} else {
		m->count = m->block ? n / m->block + (n % m->block != 0) : 0;
	}
	m->n = n;
	return regular_nelem(s);
}

uint64_t h5_sel_clip_extent(const h5_sel *s, uint64_t n)
{
	const h5_sel_dim *m;
	uint64_t count, rem;

	if (s->unlim_dim < 0 || n == 0)
		return 0;
	m = &s->dim[s->unlim_dim];
	if (m->block == H5_UNLIMITED)
		return m->start + n;
	count = n / m->block;
	rem = n % m->block;
	if (rem)
		return m->start + count * m->stride + rem;
	return m->start + (count - 1) * m->stride + m->block;
}

/* Index of coordinate c among the selected coordinates of dimension m. */
static bool dim_index(uint64_t *idx, const h5_sel_dim *m, uint64_t c)
{
	uint64_t k, r;

	if (c < m->start)
		return false;
	k = (c - m->start) / m->stride;
	r = (c - m->start) % m->stride;
	if (r >= m->block)
		return false;
	*idx = k * m->block + r;
	return *idx < m->n;
}

/* Consecutive selected indices of dimension m from index idx on, which are
 * also consecutive coordinates. */
static uint64_t dim_run(const h5_sel_dim *m, uint64_t idx)
{
	if (m->stride == m->block)
		return m->n - idx;
	return min64(m->block - idx % m->block, m->n - idx);
}

/* Dimension d selected whole: every coordinate of the extent, in order. */
static bool dim_full(const h5_sel *s, unsigned d)
{
	const h5_sel_dim *m = &s->dim[d];

	return m->start == 0 && m->n == s->ext[d] && (m->stride == m->block || m->n <= m->block);
}

/* A run of n elements along the last dimension that reaches the end of its
 * row continues into the next rows while the inner dimensions are
 * selected whole: the elements stay consecutive in both orders. */
static uint64_t extend_run(const h5_sel *s, const uint64_t *idx, uint64_t n)
{
	unsigned last = s->rank - 1;
	uint64_t span;

	if (!s->ext[last] || !dim_full(s, last))
		return n;
	span = s->ext[last];
	for (unsigned d = last; d-- > 0;) {
		uint64_t rem = dim_run(&s->dim[d], idx[d]), add;

		if (h5_mul_overflow(rem - 1, span, &add) || h5_add_overflow(n, add, &n))
			return n;
		if (!dim_full(s, d) || h5_mul_overflow(span, s->ext[d], &span))
			break;
	}
	return n;
}

static bool locate_regular(uint64_t *ord, uint64_t *n, const h5_sel *s, const uint64_t *coord)
{
	unsigned last = s->rank - 1;
	const h5_sel_dim *m = &s->dim[last];
	uint64_t o = 0, idx, c = coord[last], k, r, idxs[H5_MAX_RANK];

	for (unsigned d = 0; d < last; d++) {
		if (!dim_index(&idx, &s->dim[d], coord[d])) {
			*n = UINT64_MAX;
			return false;
		}
		idxs[d] = idx;
		o = o * s->dim[d].n + idx;
	}
	if (m->n == 0) {
		*n = UINT64_MAX;
		return false;
	}
	if (c < m->start) {
		*n = m->start - c;
		return false;
	}
	k = (c - m->start) / m->stride;
	r = (c - m->start) % m->stride;
	if (k > (m->n - 1) / m->block) {
		*n = UINT64_MAX;
		return false;
	}
	if (r >= m->block) {
		*n = (k + 1) * m->block < m->n ? m->stride - r : UINT64_MAX;
		return false;
	}
	idx = k * m->block + r;
	if (idx >= m->n) {
		*n = UINT64_MAX;
		return false;
	}
	*ord = o * m->n + idx;
	*n = m->stride == m->block ? m->n - idx : min64(m->block - r, m->n - idx);
	if (c + *n == s->ext[last])
		*n = extend_run(s, idxs, *n);
	return true;
}

static bool locate_runs(uint64_t *ord, uint64_t *n, const h5_sel *s, const uint64_t *coord)
{
	unsigned rank = s->rank, last = rank - 1;
	size_t lo = 0, hi = s->nruns, at;
	const uint64_t *rc;

	/* the last run (in position order) starting at or before coord */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (coord_cmp(&s->run_coord[s->by_pos[mid] * rank], coord, rank) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo > 0) {
		at = s->by_pos[lo - 1];
		rc = &s->run_coord[at * rank];
		if (coord_cmp(rc, coord, last) == 0 && coord[last] < rc[last] + s->run_len[at]) {
			*ord = s->run_ord[at] + (coord[last] - rc[last]);
			*n = s->run_len[at] - (coord[last] - rc[last]);
			return true;
		}
	}
	*n = UINT64_MAX;
	if (lo < s->nruns) {
		rc = &s->run_coord[s->by_pos[lo] * rank];
		if (coord_cmp(rc, coord, last) == 0)
			*n = rc[last] - coord[last];
	}
	return false;
}

bool h5_sel_locate(uint64_t *ord, uint64_t *n, const h5_sel *s, const uint64_t *coord)
{
	if (s->type == H5_SEL_NONE || s->rank == 0) {
		*n = UINT64_MAX;
		return false;
	}
	return s->regular ? locate_regular(ord, n, s, coord) : locate_runs(ord, n, s, coord);
}

void h5_sel_coord(uint64_t *coord, uint64_t *n, const h5_sel *s, uint64_t ord)
{
	unsigned last = s->rank - 1;

	if (s->regular) {
		uint64_t idx[H5_MAX_RANK];
		const h5_sel_dim *m = &s->dim[last];

		for (unsigned d = s->rank; d-- > 0;) {
			idx[d] = ord % s->dim[d].n;
			ord /= s->dim[d].n;
			coord[d] = s->dim[d].start + (idx[d] / s->dim[d].block) * s->dim[d].stride +
				   idx[d] % s->dim[d].block;
		}
		*n = m->stride == m->block ? m->n - idx[last] :
		     min64(m->block - idx[last] % m->block, m->n - idx[last]);
		if (coord[last] + *n == s->ext[last])
			*n = extend_run(s, idx, *n);
		return;
	}
	/* runs are in ordinal order */
	size_t lo = 0, hi = s->nruns;

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->run_ord[mid] <= ord)
			lo = mid;
		else
			hi = mid;
	}
	memcpy(coord, &s->run_coord[lo * s->rank], s->rank * sizeof(uint64_t));
	coord[last] += ord - s->run_ord[lo];
	*n = s->run_len[lo] - (ord - s->run_ord[lo]);
}

/* ---- text, for listings ------------------------------------------------- */

static int put(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int put(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(*buf + *len, *cap - *len, fmt, ap);
		va_end(ap);
		if (n < 0)
			return h5_err_set(H5_ERR_INVAL, "format error");
		if ((size_t)n < *cap - *len) {
			*len += (size_t)n;
			return 0;
		}
		char *p = realloc(*buf, *cap * 2 + (size_t)n);

		if (!p)
			return h5_err_set(H5_ERR_NOMEM, "out of memory");
		*buf = p;
		*cap = *cap * 2 + (size_t)n;
	}
}

static int put_vec(char **buf, size_t *len, size_t *cap, const char *name, const h5_sel *s, int which)
{
	int rc = put(buf, len, cap, "%s=[", name);

	for (unsigned d = 0; d < s->rank && rc == 0; d++) {
		const h5_sel_dim *m = &s->dim[d];
		uint64_t v = which == 0 ? m->start : which == 1 ? m->stride_stored : which == 2 ? m->count : m->block;

		if (v == H5_UNLIMITED)
			rc = put(buf, len, cap, "%sU", d ? "," : "");
		else
			rc = put(buf, len, cap, "%s%llu", d ? "," : "", (unsigned long long)v);
	}
	return rc ? rc : put(buf, len, cap, "]");
}

int h5_sel_text(char **out, const h5_sel *s)
{
	size_t len = 0, cap = 64;
	char *buf = malloc(cap);
	int rc;

	*out = NULL;
	if (!buf)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	buf[0] = 0;
	switch (s->type) {
	case H5_SEL_ALL: rc = put(&buf, &len, &cap, "all"); break;
	case H5_SEL_NONE: rc = put(&buf, &len, &cap, "none"); break;
	case H5_SEL_POINTS: rc = put(&buf, &len, &cap, "points(%zu)", s->nruns); break;
	default:
		if (!s->regular) {
			rc = put(&buf, &len, &cap, "blocks(%zu runs)", s->nruns);
			break;
		}
		rc = put(&buf, &len, &cap, "hyperslab(");
		for (int w = 0; w < 4 && rc == 0; w++) {
			static const char *const names[4] = { "start", "stride", "count", "block" };

			rc = put_vec(&buf, &len, &cap, names[w], s, w);
			if (rc == 0 && w < 3)
				rc = put(&buf, &len, &cap, ",");
		}
		if (rc == 0)
			rc = put(&buf, &len, &cap, ")");
		break;
	}
	if (rc < 0) {
		free(buf);
		return rc;
	}
	*out = buf;
	return 0;
}
