/* vds.c - virtual dataset mappings (spec III.F "Global Heap Block for
 * Virtual Dataset", IV.A.2.i layout class 3) and reads through them. The
 * extent rules follow libhdf5's H5D__virtual_set_extent_unlim with the
 * default view (last available) and printf gap 0.
 */
#include "vds.h"
#include "base.h"
#include "rd.h"
#include "checksum.h"
#include "dataset.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A NUL-terminated string inside the block, copied. */
static int rd_string(char **out, h5_rd *r)
{
	size_t left = h5_rd_left(r);
	const uint8_t *p = r->p + r->pos;
	const uint8_t *nul = left ? memchr(p, 0, left) : NULL;
	size_t n;

	*out = NULL;
	if (!nul)
		return h5_err_set(H5_ERR_FORMAT, "virtual dataset mapping: unterminated source name");
	n = (size_t)(nul - p);
	*out = malloc(n + 1);
	if (!*out)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	memcpy(*out, p, n + 1);
	h5_rd_skip(r, n + 1);
	return 0;
}

/* Does the name use "%b"? Any other '%' sequence than "%b" and "%%" is an
 * error, as in libhdf5's H5D__virtual_parse_source_name. */
static int name_printf(bool *uses, const char *s)
{
	*uses = false;
	for (; *s; s++) {
		if (*s != '%')
			continue;
		if (s[1] == 'b')
			*uses = true;
		else if (s[1] != '%')
			return h5_err_set(H5_ERR_FORMAT, "virtual dataset source name: bad format specifier '%%%c'",
					  s[1] ? s[1] : '0');
		s++;
	}
	return 0;
}

int h5_vds_source_name(char **out, const char *pattern, uint64_t block)
{
	char num[24];
	size_t n = 0, nlen = (size_t)snprintf(num, sizeof(num), "%llu", (unsigned long long)block);
	char *o;

	for (const char *s = pattern; *s; s++, n++)
		if (*s == '%' && s[1] == 'b') {
			n += nlen - 1;
			s++;
		} else if (*s == '%' && s[1] == '%') {
			s++;
		}
	o = malloc(n + 1);
	if (!o)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	*out = o;
	for (const char *s = pattern; *s; s++) {
		if (*s == '%' && s[1] == 'b') {
			memcpy(o, num, nlen);
			o += nlen;
			s++;
		} else {
			*o++ = *s;
			if (*s == '%' && s[1] == '%')
				s++;
		}
	}
	*o = 0;
	return 0;
}

/* Version 1 flags of a mapping (III.F, format 4.0). */
#define VDS_SHARED_FILE 0x01    /* the file name is the index of an earlier mapping's */
#define VDS_SHARED_DSET 0x02    /* the dataset name likewise */
#define VDS_SAME_FILE 0x04      /* the source is in this file: no file name */

/* A name of mapping i: a string, or (shared) a Size of Lengths index of an
 * earlier mapping whose name it is (which == 0: file, 1: dataset). */
static int rd_name(char **out, h5_rd *r, const h5_fmt *fmt, bool shared, const h5_vds *v, size_t i, int which)
{
	uint64_t k;
	const char *src;

	if (!shared)
		return rd_string(out, r);
	k = h5_rd_size(r, fmt);
	if (!h5_rd_ok(r))
		return h5_err_set(H5_ERR_FORMAT, "virtual dataset mapping: truncated");
	if (k >= i)
		return h5_err_set(H5_ERR_FORMAT, "virtual dataset mapping %zu: shared %s name of mapping %llu, "
				  "not an earlier one", i, which ? "dataset" : "file", (unsigned long long)k);
	src = which ? v->map[k].dset : v->map[k].file;
	*out = strdup(src);
	return *out ? 0 : h5_err_set(H5_ERR_NOMEM, "out of memory");
}

int h5_vds_decode(h5_vds **out, const uint8_t *buf, size_t len, const h5_fmt *fmt)
{
	h5_vds *v = NULL;
	h5_rd r;
	uint64_t n;
	uint32_t stored;
	unsigned version;
	int rc = 0;

	*out = NULL;
	h5_rd_init(&r, buf, len);
	/* version 0, or 1 (HDF5 2.x under a lower bound of 2.0): a flags byte
	 * before each mapping, names shared by index, a same-file bit */
	version = h5_rd_u8(&r);
	if (version > 1)
		return h5_err_set(H5_ERR_FORMAT, "virtual dataset mapping: unsupported encoding version %u",
				  len ? buf[0] : 0);
	n = h5_rd_size(&r, fmt);
	if (!h5_rd_ok(&r))
		return h5_err_set(H5_ERR_FORMAT, "virtual dataset mapping: truncated");
	/* every entry takes at least 2 names + 2 selections of 16 bytes */
	if (n > H5_VDS_MAX_MAPPINGS || n > len / 34)
		return h5_err_set(H5_ERR_LIMIT, "virtual dataset with %llu mappings", (unsigned long long)n);
	v = calloc(1, sizeof(*v));
	if (!v || !(v->map = calloc(n ? (size_t)n : 1, sizeof(*v->map)))) {
		free(v);
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		h5_vds_map *m = &v->map[i];
		bool pf, pd;

		unsigned flags = 0;

		v->n = i + 1;
		if (version == 1) {
			flags = h5_rd_u8(&r);
			if (!h5_rd_ok(&r)) {
				rc = h5_err_set(H5_ERR_FORMAT, "virtual dataset mapping: truncated");
				goto out;
			}
			if (flags & ~(unsigned)(VDS_SHARED_FILE | VDS_SHARED_DSET | VDS_SAME_FILE)) {
				rc = h5_err_set(H5_ERR_FORMAT, "virtual dataset mapping %zu: reserved flags 0x%02x", i,
						flags);
				goto out;
			}
		}
		/* the same file is "." as version 0 names it */
		if (flags & VDS_SAME_FILE)
			rc = (m->file = strdup(".")) ? 0 : h5_err_set(H5_ERR_NOMEM, "out of memory");
		else
			rc = rd_name(&m->file, &r, fmt, flags & VDS_SHARED_FILE, v, i, 0);
		if (rc < 0 || (rc = rd_name(&m->dset, &r, fmt, flags & VDS_SHARED_DSET, v, i, 1)) < 0 ||
		    (rc = h5_sel_decode(&m->src, &r)) < 0 || (rc = h5_sel_decode(&m->virt, &r)) < 0)
			goto out;
		if ((rc = name_printf(&pf, m->file)) < 0 || (rc = name_printf(&pd, m->dset)) < 0)
			goto out;
		m->printf_names = pf || pd;
		if (m->src.type == H5_SEL_NONE || m->virt.type == H5_SEL_NONE) {
			rc = h5_err_set(H5_ERR_FORMAT, "virtual dataset mapping %zu: empty selection", i);
			goto out;
		}
		if (m->printf_names ? m->src.unlim_dim >= 0 || m->virt.unlim_dim < 0 ||
				      m->virt.dim[m->virt.unlim_dim].count != H5_UNLIMITED :
				      (m->src.unlim_dim >= 0) != (m->virt.unlim_dim >= 0)) {
			rc = h5_err_set(H5_ERR_FORMAT, "virtual dataset mapping %zu: unlimited selections do not match", i);
			goto out;
		}
	}
	if (!h5_rd_need(&r, 4)) {
		rc = h5_err_set(H5_ERR_FORMAT, "virtual dataset mapping: truncated");
		goto out;
	}
	stored = (uint32_t)h5_le_decode(r.p + r.pos, 4);
	if (stored != h5_checksum_metadata(buf, r.pos)) {
		rc = h5_err_set(H5_ERR_FORMAT, "virtual dataset mapping: checksum mismatch");
		goto out;
	}
	*out = v;
	v = NULL;
out:
	h5_vds_free(v);
	return rc;
}

void h5_vds_free(h5_vds *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->n; i++) {
		free(v->map[i].file);
		free(v->map[i].dset);
		h5_sel_free(&v->map[i].src);
		h5_sel_free(&v->map[i].virt);
	}
	free(v->map);
	free(v);
}

/* ---- resolving against the sources ---------------------------------------- */

static int view_add(h5_vds_view *w, size_t *cap, h5_vds_src **out)
{
	if (w->nsrc == *cap) {
		size_t nc = *cap ? *cap * 2 : 8;
		h5_vds_src *p = realloc(w->src, nc * sizeof(*p));

		if (!p)
			return h5_err_set(H5_ERR_NOMEM, "out of memory");
		w->src = p;
		*cap = nc;
	}
	*out = &w->src[w->nsrc++];
	memset(*out, 0, sizeof(**out));
	(*out)->src.unlim_dim = (*out)->virt.unlim_dim = -1;
	return 0;
}

static int open_src(h5_vds_src *s, const h5_vds_view *w, void *ctx, const char *file, const char *dset)
{
	int rc = w->ops->open(&s->handle, &s->src_rank, s->src_dims, ctx, file, dset);

	if (rc == 1) {
		s->handle = NULL;
		return 0;
	}
	return rc;
}

/* A printf mapping: sources for blocks 0, 1, ... until one is missing. */
static int resolve_printf(h5_vds_view *w, size_t *cap, const h5_vds_map *m, void *ctx, uint64_t *clip)
{
	int u = m->virt.unlim_dim;
	int rc = 0;

	*clip = 0;
	for (uint64_t j = 0; j < H5_VDS_MAX_PRINTF; j++) {
		char *file = NULL, *dset = NULL;
		h5_vds_src *s;
		h5_sel_dim *d;

		if ((rc = h5_vds_source_name(&file, m->file, j)) < 0 ||
		    (rc = h5_vds_source_name(&dset, m->dset, j)) < 0 || (rc = view_add(w, cap, &s)) < 0) {
			free(file);
			free(dset);
			return rc;
		}
		rc = open_src(s, w, ctx, file, dset);
		free(file);
		free(dset);
		if (rc < 0 || !s->handle) {
			w->nsrc--;
			return rc;
		}
		if ((rc = h5_sel_copy(&s->virt, &m->virt)) < 0 || (rc = h5_sel_copy(&s->src, &m->src)) < 0)
			return rc;
		/* block j of the virtual selection */
		d = &s->virt.dim[u];
		d->start += j * d->stride;
		d->count = 1;
		d->n = d->block;
		s->virt.unlim_dim = -1;
		*clip = d->start + d->block;
		if ((rc = h5_sel_set_extent(&s->src, s->src_rank, s->src_dims)) < 0)
			return rc;
	}
	return h5_err_set(H5_ERR_LIMIT, "virtual dataset: more than %llu printf-named sources",
			  (unsigned long long)H5_VDS_MAX_PRINTF);
}

static int resolve_one(h5_vds_view *w, size_t *cap, const h5_vds_map *m, void *ctx, uint64_t *clip)
{
	h5_vds_src *s;
	int rc;

	if (m->printf_names)
		return resolve_printf(w, cap, m, ctx, clip);
	if ((rc = view_add(w, cap, &s)) < 0)
		return rc;
	if ((rc = h5_sel_copy(&s->virt, &m->virt)) < 0 || (rc = h5_sel_copy(&s->src, &m->src)) < 0 ||
	    (rc = open_src(s, w, ctx, m->file, m->dset)) < 0)
		return rc;
	if (m->virt.unlim_dim >= 0) {
		uint64_t n = 0;

		if (s->handle) {
			if ((unsigned)m->src.unlim_dim >= s->src_rank)
				return h5_err_set(H5_ERR_FORMAT, "virtual dataset: source %s has rank %u", m->dset,
						  s->src_rank);
			n = h5_sel_count_below(&s->src, (unsigned)m->src.unlim_dim, s->src_dims[m->src.unlim_dim]);
		}
		*clip = h5_sel_clip_extent(&s->virt, n);
		if ((rc = h5_sel_clip(&s->src, n)) < 0 || (rc = h5_sel_clip(&s->virt, n)) < 0)
			return rc;
	}
	if (s->handle && (rc = h5_sel_set_extent(&s->src, s->src_rank, s->src_dims)) < 0)
		return h5_err_wrap(rc, "virtual dataset source %s: ", m->dset);
	return 0;
}

int h5_vds_resolve(h5_vds_view **out, const h5_vds *v, unsigned rank, const uint64_t *dims,
		   const uint64_t *maxdims, const h5_vds_source_ops *ops, void *ctx)
{
	h5_vds_view *w;
	uint64_t new_dims[H5_MAX_RANK], min_dims[H5_MAX_RANK];
	bool set[H5_MAX_RANK] = { false };
	size_t cap = 0;
	int rc = 0;

	*out = NULL;
	if (rank == 0 || rank > H5_MAX_RANK)
		return h5_err_set(H5_ERR_FORMAT, "virtual dataset of rank %u", rank);
	w = calloc(1, sizeof(*w));
	if (!w)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	w->rank = rank;
	w->ops = ops;
	memset(min_dims, 0, sizeof(min_dims));
	for (size_t i = 0; i < v->n; i++) {
		const h5_vds_map *m = &v->map[i];
		uint64_t clip = 0;
		int u = m->virt.unlim_dim;

		if (m->virt.type != H5_SEL_ALL && m->virt.rank != rank) {
			rc = h5_err_set(H5_ERR_FORMAT, "virtual dataset mapping %zu: selection of rank %u in a rank %u dataset",
					i, m->virt.rank, rank);
			goto out;
		}
		if ((rc = resolve_one(w, &cap, m, ctx, &clip)) < 0)
			goto out;
		/* H5D__virtual_update_min_dims: what the bounded mappings need */
		for (unsigned d = 0; d < rank && m->virt.type != H5_SEL_ALL; d++) {
			uint64_t lo, hi;

			h5_sel_bounds(&lo, &hi, &m->virt, d);
			if ((int)d == u)
				hi = lo;
			if (hi > min_dims[d])
				min_dims[d] = hi;
		}
		if (u >= 0 && (!set[u] || clip > new_dims[u])) {
			new_dims[u] = clip;
			set[u] = true;
		}
	}
	for (unsigned d = 0; d < rank; d++) {
		w->dims[d] = set[d] ? new_dims[d] : dims[d];
		if (w->dims[d] < min_dims[d])
			w->dims[d] = min_dims[d];
		if (maxdims && maxdims[d] != H5_UNLIMITED && w->dims[d] > maxdims[d]) {
			rc = h5_err_set(H5_ERR_FORMAT, "virtual dataset: extent %llu exceeds the maximum %llu in dimension %u",
					(unsigned long long)w->dims[d], (unsigned long long)maxdims[d], d);
			goto out;
		}
	}
	for (size_t i = 0; i < w->nsrc; i++) {
		h5_vds_src *s = &w->src[i];

		if ((rc = h5_sel_set_extent(&s->virt, rank, w->dims)) < 0)
			goto out;
		if (s->handle && s->virt.nelem != s->src.nelem) {
			rc = h5_err_set(H5_ERR_FORMAT, "virtual dataset: a mapping selects %llu virtual and %llu source elements",
					(unsigned long long)s->virt.nelem, (unsigned long long)s->src.nelem);
			goto out;
		}
		for (unsigned d = 0; d < rank; d++)
			h5_sel_bounds(&s->lo[d], &s->hi[d], &s->virt, d);
	}
out:
	if (rc < 0) {
		h5_vds_view_free(w);
		return rc;
	}
	*out = w;
	return 0;
}

void h5_vds_view_free(h5_vds_view *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->nsrc; i++) {
		if (w->src[i].handle)
			w->ops->close(w->src[i].handle);
		h5_sel_free(&w->src[i].virt);
		h5_sel_free(&w->src[i].src);
	}
	free(w->src);
	free(w);
}

/* ---- reading ------------------------------------------------------------- */

static void fill_elems(uint8_t *dst, uint64_t n, size_t esize, const uint8_t *fill)
{
	if (!fill) {
		memset(dst, 0, (size_t)n * esize);
		return;
	}
	for (uint64_t i = 0; i < n; i++)
		memcpy(dst + i * esize, fill, esize);
}

static void unravel(uint64_t *coord, uint64_t e, const uint64_t *dims, unsigned rank)
{
	for (unsigned d = rank; d-- > 0;) {
		coord[d] = e % dims[d];
		e /= dims[d];
	}
}

/* Move c to the first coordinate at or after it (row-major) inside the
 * bounding box of source s; false when there is none. */
static bool box_next(uint64_t *c, const h5_vds_src *s, unsigned rank)
{
	for (unsigned d = 0; d < rank; d++) {
		if (c[d] < s->lo[d]) {
			for (unsigned k = d; k < rank; k++)
				c[k] = s->lo[k];
			return true;
		}
		if (c[d] >= s->hi[d]) {
			int k = (int)d - 1;

			for (;;) {
				if (k < 0)
					return false;
				if (++c[k] < s->hi[k])
					break;
				k--;
			}
			for (unsigned j = (unsigned)k + 1; j < rank; j++)
				c[j] = s->lo[j];
			return true;
		}
	}
	return true;
}

static uint64_t ravel(const uint64_t *c, const uint64_t *dims, unsigned rank)
{
	uint64_t e = 0;

	for (unsigned d = 0; d < rank; d++)
		e = e * dims[d] + c[d];
	return e;
}

/* Call fn for each piece source s provides of the elements [e0, e0+ne):
 * runs of consecutive elements (across rows when the selections take the
 * inner dimensions whole) are one piece each. */
static int visit_source(const h5_vds_view *w, const h5_vds_src *s, uint64_t e0, uint64_t ne, size_t esize,
			h5_vds_piece_fn fn, void *ud)
{
	unsigned last = w->rank - 1;
	uint64_t c[H5_MAX_RANK], sc[H5_MAX_RANK], e = e0, end = e0 + ne;

	while (e < end) {
		uint64_t ord, n, row_left;

		unravel(c, e, w->dims, w->rank);
		/* skip what lies outside the mapping's bounding box at once */
		if (!box_next(c, s, w->rank))
			break;
		e = ravel(c, w->dims, w->rank);
		if (e >= end)
			break;
		row_left = w->dims[last] - c[last];
		if (!h5_sel_locate(&ord, &n, &s->virt, c)) {
			e += n < row_left ? n : row_left;
			continue;
		}
		if (n > end - e)
			n = end - e;
		while (n > 0) {
			uint64_t sn, lin = 0, k;
			int rc;

			h5_sel_coord(sc, &sn, &s->src, ord);
			for (unsigned d = 0; d < s->src_rank; d++)
				lin = lin * s->src_dims[d] + sc[d];
			k = sn < n ? sn : n;
			rc = fn(ud, s->handle, (e - e0) * esize, lin * esize, (size_t)(k * esize));
			if (rc < 0)
				return rc;
			ord += k;
			e += k;
			n -= k;
		}
	}
	return 0;
}

int h5_vds_pieces(h5_vds_view *w, uint64_t e0, uint64_t ne, size_t esize, h5_vds_piece_fn fn, void *ud)
{
	/* mappings in order: a later one wins where two overlap, as libhdf5
	 * reads them one after another into the buffer */
	for (size_t i = 0; i < w->nsrc; i++) {
		int rc;

		if (!w->src[i].handle)
			continue;
		rc = visit_source(w, &w->src[i], e0, ne, esize, fn, ud);
		if (rc < 0)
			return rc;
	}
	return 0;
}

struct read_ud {
	const h5_vds_view *w;
	uint8_t *dst;
};

static int read_piece(void *ud, void *handle, uint64_t dst_off, uint64_t src_off, size_t n)
{
	struct read_ud *r = ud;

	return r->w->ops->read(handle, r->dst + dst_off, src_off, n);
}

static int read_elems(h5_vds_view *w, uint8_t *dst, uint64_t e0, uint64_t ne, size_t esize, const uint8_t *fill)
{
	struct read_ud r = { w, dst };

	fill_elems(dst, ne, esize, fill);
	return h5_vds_pieces(w, e0, ne, esize, read_piece, &r);
}

int h5_vds_read(h5_vds_view *w, void *buf, uint64_t off, size_t len, size_t esize, const uint8_t *fill)
{
	uint64_t e0, e1, total = 1;
	uint8_t *tmp;
	int rc;

	if (len == 0)
		return 0;
	if (esize == 0)
		return h5_err_set(H5_ERR_FORMAT, "virtual dataset with a zero-size datatype");
	for (unsigned d = 0; d < w->rank; d++)
		if (h5_mul_overflow(total, w->dims[d], &total))
			return h5_err_set(H5_ERR_FORMAT, "virtual dataset too large");
	e0 = off / esize;
	e1 = (off + len + esize - 1) / esize;
	if (e1 > total)
		return h5_err_set(H5_ERR_INVAL, "read past the end of the virtual dataset");
	if (off % esize == 0 && len % esize == 0)
		return read_elems(w, buf, e0, e1 - e0, esize, fill);
	/* a read that starts or ends inside an element */
	tmp = malloc((size_t)(e1 - e0) * esize);
	if (!tmp)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	rc = read_elems(w, tmp, e0, e1 - e0, esize, fill);
	if (rc == 0)
		memcpy(buf, tmp + (off - e0 * esize), len);
	free(tmp);
	return rc;
}
