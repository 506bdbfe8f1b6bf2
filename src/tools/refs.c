/*
 * refs.c - h5fs-ls --refs: the chunk references kerchunk writes (its
 * version 1 JSON, {"version": 1, "refs": {...}}), from the engine's own
 * walk of each chunk index (h5_dataset_chunks), so that zarr reads the
 * datasets through fsspec's ReferenceFileSystem without libhdf5.
 *
 * Groups become Zarr v2 groups (.zgroup, .zattrs), datasets arrays
 * (.zarray, .zattrs, one [url, offset, length] per allocated chunk; small
 * chunks inlined as "base64:..."). Datasets whose values h5py reads
 * converted (fixed strings not null-padded) are written inline, as h5py
 * reads them, up to CONVERTED_MAX bytes. What Zarr v2 cannot express
 * (variable-length data, references, compounds with fields out of order,
 * filters without a numcodecs 0.11 codec, chunks stored with a filter
 * skipped, virtual or external storage) is skipped with one line on
 * stderr per dataset, never written wrongly. What the walk finds goes to
 * a sink (refs.h): refs_write's prints each entry as it is made
 * (refs_emit.c): nothing holds the whole document, so a dataset of
 * millions of chunks streams. Every line on stderr names FILE, then the
 * object.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "refs.h"
#include "refs_emit.h"
#include "h5util.h"
#include "tool_exit.h"
#include "json.h"
#include "linkvec.h"
#include "zarr_meta.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_DEPTH 64              /* groups nested deeper are not written (a cycle, or hostile) */
#define PROGRESS_EVERY_NS 500000000LL
#define CONVERTED_MAX ((uint64_t)64 << 20)   /* bytes of a converted dataset inlined at most */
#define CONVERTED_PIECE ((uint64_t)1 << 20)  /* bytes of one inlined chunk of one, about */

/* ---- the document ----------------------------------------------------------------- */

struct refs {
	const refs_opts *o;
	h5_file *f;               /* the file being walked (external links change it) */
	const char *url;          /* its URL in references */
	const refs_sink *s;
	unsigned nskipped, nerr;
	uint64_t anc[MAX_DEPTH];  /* groups being written: a link back is a cycle */
	unsigned nanc;
	int tty;                  /* stderr is a terminal: progress lines */
	uint64_t nchunks;
	struct timespec last;
	int progress_shown;
};

static void sink_meta(struct refs *R, const char *prefix, const char *name, struct jb *val)
{
	jb_done(val);
	if (val->nomem || R->s->meta(R->s->u, prefix, name, val->p) < 0)
		R->nerr++;
}

static void progress(struct refs *R, const char *path, int done)
{
	struct timespec now;

	if (!R->tty || R->o->no_progress)
		return;
	if (done) {
		if (R->progress_shown)
			fputs("\r\033[K", stderr);
		R->progress_shown = 0;
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &now);
	if ((now.tv_sec - R->last.tv_sec) * 1000000000LL + (now.tv_nsec - R->last.tv_nsec) < PROGRESS_EVERY_NS)
		return;
	R->last = now;
	fprintf(stderr, "\r\033[Kh5fs-ls: %" PRIu64 " chunks referenced (%s)", R->nchunks, path);
	R->progress_shown = 1;
}

static void note(struct refs *R, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void note(struct refs *R, const char *fmt, ...)
{
	va_list ap;
	struct jb b = { 0 };

	progress(R, "", 1);
	va_start(ap, fmt);
	jb_printf(&b, "h5fs-ls: %s: ", R->o->file ? R->o->file : R->o->url);
	if (h5_sb_vprintf(&b.sb, fmt, ap) < 0)
		b.nomem = 1;
	va_end(ap);
	jb_done(&b);
	R->s->note(R->s->u, b.nomem ? "h5fs-ls: out of memory" : b.p);
	free(b.p);
}

struct attrs_ctx {
	struct refs *R;
	const char *path;
	struct jb b;
	int n;
	int dimlist;              /* a DIMENSION_LIST attribute was met */
	int is_scale;             /* CLASS is "DIMENSION_SCALE" */
	char *names[64];          /* the _ARRAY_DIMENSIONS written, or none */
};

/* Variable-length strings (one NUL between two), each cut at a NUL of its
 * own, as lists nested over dims[level..rank). */
static void vstrings(struct jb *b, const char **p, const char *end, const uint64_t *dims, unsigned rank,
		     unsigned level)
{
	if (level == rank) {
		const char *nul = *p < end ? memchr(*p, 0, (size_t)(end - *p)) : NULL;
		size_t len = *p < end ? (nul ? (size_t)(nul - *p) : (size_t)(end - *p)) : 0;

		jb_str(b, *p < end ? *p : "", len);
		*p += len + 1;
		return;
	}
	jb_printf(b, "[");
	for (uint64_t i = 0; i < dims[level]; i++) {
		jb_printf(b, "%s", i ? ", " : "");
		vstrings(b, p, end, dims, rank, level + 1);
	}
	jb_printf(b, "]");
}

static int attr_cb(const h5_attr_value *a, void *ud)
{
	struct attrs_ctx *c = ud;
	struct jb *b = &c->b;
	const h5_type_view *t = a->type;

	if (t->kind == H5_TYPE_VSTRING) {
		uint64_t nul = 0;

		for (size_t i = 0; i < a->size; i++)
			nul += a->data[i] == 0;
		/* a string holding a NUL would shift every string after it */
		if (a->nelmts && nul != a->nelmts - 1) {
			note(c->R, "%s: attribute %s not written: a string holds a NUL byte", c->path, a->name);
			return 0;
		}
	}
	if (strcmp(a->name, "CLASS") == 0 && t->kind == H5_TYPE_STRING && a->rank == 0 &&
	    t->size >= 15 && memcmp(a->data, "DIMENSION_SCALE", 15) == 0)
		c->is_scale = 1;
	/* the dimension scale bookkeeping (references) becomes _ARRAY_DIMENSIONS */
	if (strcmp(a->name, "DIMENSION_LIST") == 0 || strcmp(a->name, "REFERENCE_LIST") == 0) {
		c->dimlist |= a->name[0] == 'D';
		if (!json_expressible(t))
			return 0;
	}
	if (strlen(a->name) != a->name_len || a->null_space ||
	    (t->kind != H5_TYPE_VSTRING && !json_expressible(t))) {
		note(c->R, "%s: attribute %s not written: %s", c->path, a->name,
		     a->null_space ? "null dataspace" : strlen(a->name) != a->name_len ? "name holds a NUL"
		     : "its type has no JSON form");
		return 0;
	}
	jb_printf(b, "%s", c->n++ ? ", " : "");
	jb_str(b, a->name, a->name_len);
	jb_printf(b, ": ");
	if (t->kind == H5_TYPE_VSTRING) {
		const char *p = (const char *)a->data;

		vstrings(b, &p, p + a->size, a->dims, a->rank, 0);
	} else if (a->rank == 0) {
		json_value(b, t, a->data);
	} else {
		uint64_t k = 0;

		json_nested(b, t, a->data, a->dims, a->rank, 0, &k);
	}
	return 0;
}

struct find_link {
	uint64_t addr;
	char *name;
};

static int find_link_cb(const h5_link *l, void *ud)
{
	struct find_link *fl = ud;

	if (l->type != H5_LINK_HARD || l->addr != fl->addr || strlen(l->name) != l->name_len)
		return 0;
	fl->name = strdup(l->name);
	return 1;
}

/* The name of the dimension scale at addr: a link to it in the dataset's
 * group, else in the root group (where netCDF-4 and h5py put them). */
static char *scale_name(struct refs *R, uint64_t group, uint64_t addr)
{
	struct find_link fl = { addr, NULL };

	h5_group_iterate(R->f, group, find_link_cb, &fl);
	if (!fl.name && group != h5_file_root(R->f))
		h5_group_iterate(R->f, h5_file_root(R->f), find_link_cb, &fl);
	h5_err_clear();
	return fl.name;
}

/* "_ARRAY_DIMENSIONS" (xarray's dimension names) where dimension scales
 * say them: a scale is its own dimension; a dataset with a DIMENSION_LIST
 * names the first scale attached to each dimension (that attribute's text,
 * h5fs's xattr rendering: "[obj:0xADDR], [obj:0xADDR]"). Nothing is
 * written unless every dimension has a name. */
static void put_dims(struct refs *R, struct attrs_ctx *c, uint64_t group, uint64_t addr, unsigned rank)
{
	const char *own = strrchr(c->path, '/');
	char *text = NULL, **names = c->names;
	size_t len = 0;
	unsigned i = 0;

	if (c->is_scale && rank == 1) {
		names[0] = strdup(own ? own + 1 : c->path);
		i = names[0] ? 1 : 0;
	} else if (!c->dimlist || rank == 0 || rank > 64 ||
		   h5_attr_value_get((void **)&text, &len, R->f, addr, "DIMENSION_LIST", 14, 0) < 0) {
		h5_err_clear();
		return;
	}
	for (const char *p = text; text && i < rank; i++) {
		const char *q = strstr(p, "obj:0x"), *end = strchr(p, ']');
		char *e;
		uint64_t a;

		if (!q || !end || q > end)
			break;
		a = strtoull(q + 6, &e, 16);
		if (!(names[i] = scale_name(R, group, a)))
			break;
		p = end + 1;
	}
	if (i == rank) {
		jb_printf(&c->b, "%s\"_ARRAY_DIMENSIONS\": [", c->n++ ? ", " : "");
		for (i = 0; i < rank; i++) {
			jb_printf(&c->b, "%s", i ? ", " : "");
			jb_str(&c->b, names[i], strlen(names[i]));
		}
		jb_printf(&c->b, "]");
	} else {
		for (i = 0; i < rank; i++) {
			free(names[i]);
			names[i] = NULL;
		}
	}
	free(text);
}

/* The attributes of the object at addr as .zattrs (attrs_put writes
 * them, when it has some); rank >= 0 for a dataset (_ARRAY_DIMENSIONS),
 * group: the group it was reached in. */
static void attrs_build(struct refs *R, struct attrs_ctx *c, const char *path, uint64_t addr, int rank,
			uint64_t group)
{
	int rc;

	memset(c, 0, sizeof(*c));
	c->R = R;
	c->path = path;
	jb_printf(&c->b, "{");
	rc = h5_attr_iterate_values(R->f, addr, attr_cb, c);
	if (rank >= 0)
		put_dims(R, c, group, addr, (unsigned)rank);
	jb_printf(&c->b, "}");
	if (rc < 0) {
		note(R, "%s: attributes: %s", path, h5_err_msg());
		R->nerr++;
	}
}

static void attrs_put(struct refs *R, struct attrs_ctx *c, const char *prefix)
{
	if (c->n)
		sink_meta(R, prefix, ".zattrs", &c->b);
}

static void attrs_free(struct attrs_ctx *c)
{
	jb_done(&c->b);
	free(c->b.p);
	for (unsigned i = 0; i < 64; i++)
		free(c->names[i]);
}

/* ---- datasets -------------------------------------------------------------------- */

struct chunk_ctx {
	struct refs *R;
	const char *prefix;       /* "a/b/ds/" */
	const char *path;
	const uint64_t *chunk;    /* chunk dims (rank entries) */
	unsigned rank, extra;     /* extra: array type dims appended (chunk index 0) */
	int check_only;
	int masked;               /* a chunk with a skipped filter was met */
};

/* A chunk in FILE to the sink: a reference, or its bytes when it is
 * smaller than --inline. */
static int put_chunk_ref(struct refs *R, const char *prefix, const uint64_t *idx, unsigned n, uint64_t off,
			 uint64_t size)
{
	uint8_t *buf;
	int rc;

	if (size >= R->o->inline_max)
		return R->s->chunk(R->s->u, prefix, idx, n, R->url, off, size, NULL);
	buf = malloc(size ? size : 1);
	if (!buf || h5_file_pread(R->f, buf, (size_t)size, off) < 0) {
		free(buf);
		return -1;
	}
	rc = R->s->chunk(R->s->u, prefix, idx, n, R->url, off, size, buf);
	free(buf);
	return rc;
}

static int chunk_cb(const h5_chunk_loc *c, void *ud)
{
	struct chunk_ctx *x = ud;
	uint64_t idx[64];

	if (x->check_only) {
		if (c->filter_mask) {
			x->masked = 1;
			return 1;
		}
		return 0;
	}
	for (unsigned i = 0; i < x->rank; i++)
		idx[i] = c->offset[i] / x->chunk[i];
	for (unsigned i = 0; i < x->extra; i++)
		idx[x->rank + i] = 0;
	if (put_chunk_ref(x->R, x->prefix, idx, x->rank + x->extra, c->file_off, c->size) < 0)
		return h5_err_set(H5_ERR_IO, "cannot read the chunk at %" PRIu64 " to inline it", c->file_off);
	x->R->nchunks++;
	if ((x->R->nchunks & 1023) == 0)
		progress(x->R, x->path, 0);
	return 0;
}

/* A partial edge chunk exists when a dimension is not a multiple of its chunk. */
static int has_partial_edge(const h5_dataset_info *di)
{
	for (unsigned i = 0; i < di->rank && i < di->chunk_rank; i++)
		if (di->chunk[i] && di->dims[i] % di->chunk[i])
			return 1;
	return 0;
}

/* Rows per piece of a contiguous dataset cut at --split: the largest
 * divisor of the row count within the budget (zarr wants every chunk whole). */
static uint64_t split_rows(uint64_t rows, uint64_t row_bytes, uint64_t budget)
{
	uint64_t want = row_bytes ? budget / row_bytes : rows;

	if (want >= rows || rows == 0)
		return rows ? rows : 1;
	for (uint64_t r = want ? want : 1; r > 1; r--)
		if (rows % r == 0)
			return r;
	return 1;
}

/* A dataset h5py reads converted (zarr_converted): its elements read
 * through the engine (every filter decoded), converted, and given as
 * chunks of `rows` rows along the first dimension, whole in the others
 * and in an array type's (extra) dimensions; the last chunk is filled up
 * with the fill value, as zarr wants every chunk whole. 0, or the
 * engine's error. */
static int put_converted(struct refs *R, const char *prefix, h5_dataset *d, const h5_type_view *tv,
			 const uint64_t *dims, unsigned rank, unsigned extra, uint64_t rows, const uint8_t *fill)
{
	uint64_t row = tv->size, nrows = rank ? dims[0] : 1, idx[64] = { 0 };
	uint8_t *buf = NULL;
	int rc = 0;

	for (unsigned i = 1; i < rank; i++)
		row *= dims[i];
	if (row == 0 || nrows == 0)
		return 0;       /* no elements: no chunks */
	buf = malloc((size_t)(rows * row));
	if (!buf)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	for (uint64_t r0 = 0; r0 < nrows && rc == 0; r0 += rows) {
		uint64_t n = nrows - r0 < rows ? nrows - r0 : rows;

		rc = h5_dataset_read(d, buf, r0 * row, (size_t)(n * row));
		if (rc < 0)
			break;
		for (uint64_t k = n * row; k < rows * row; k += tv->size)
			memcpy(buf + k, fill, tv->size);
		for (uint64_t k = 0; k < rows * row; k += tv->size)
			zarr_convert(tv, buf + k);
		idx[0] = r0 / rows;
		if (R->s->chunk(R->s->u, prefix, idx, rank + extra, R->url, 0, rows * row, buf) < 0)
			rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
		R->nchunks++;
	}
	free(buf);
	return rc;
}

/* Why the dataset has no Zarr form (NULL: it has one); dtype and filters
 * get .zarray's texts. */
static const char *zarr_form(struct jb *dtype, struct jb *filters, int *conv, h5_dataset *d,
			     const h5_dataset_info *di, const h5_storage *st, const h5_type_view *tv,
			     const uint8_t *fill)
{
	const h5_type_view *et = tv->kind == H5_TYPE_ARRAY ? &tv->members[0] : tv;
	const char *why = NULL;

	*conv = 0;
	if (di->shape == H5_SHAPE_NULL)
		return "null dataspace";
	if (st->is_virtual)
		return "virtual dataset";
	if (st->n_external)
		return "external storage";
	if (st->has_vlen)
		return "variable-length data";
	if ((why = zarr_dtype(dtype, tv, 1)) != NULL)
		return why;
	/* values h5py reads converted: written inline as it reads them, so
	 * only as many bytes as a reference file can sensibly hold */
	*conv = zarr_converted(tv);
	if (*conv && h5_dataset_size(d) > CONVERTED_MAX)
		return "fixed-length strings that are not null-padded (h5py reads them converted, and their "
		       "converted bytes are inlined only up to 64 MiB)";
	if (tv->kind == H5_TYPE_ARRAY) {
		/* one fill value per base element: all of them must agree */
		for (size_t k = et->size; k + et->size <= st->fill_size; k += et->size)
			if (memcmp(fill, fill + k, et->size) != 0)
				return "array type whose fill value differs per element";
	}
	if ((di->shape == H5_SHAPE_SIMPLE ? di->rank : 0) + (tv->kind == H5_TYPE_ARRAY ? tv->arank : 0) > 64)
		return "more than 64 dimensions";
	if (di->nfilters && !*conv)
		return zarr_filters(filters, di, et->size);
	jb_printf(filters, "null");
	return NULL;
}

static void put_dataset(struct refs *R, const char *prefix, const char *path, uint64_t addr)
{
	h5_dataset *d = NULL;
	h5_dataset_info di;
	h5_storage st;
	h5_type_view tv = { 0 };
	struct jb zdt = { 0 }, zfl = { 0 }, zfill = { 0 };
	struct attrs_ctx ac;
	const char *why = NULL;
	const h5_type_view *et;    /* the element type zarr sees */
	uint8_t *zeros = NULL, *cfill = NULL;
	const uint8_t *fill;
	uint64_t shape[64], chunks[64], esize;
	unsigned rank, extra = 0;
	int have_di = 0, have_ac = 0, rc, conv = 0;

	rc = h5_dataset_open(&d, R->f, addr);
	if (rc == 0 && (rc = h5_dataset_describe(&di, d)) == 0)
		have_di = 1;
	if (rc == 0)
		rc = h5_dataset_storage(&st, d);
	if (rc == 0)
		rc = h5_dataset_type(&tv, d);
	if (rc < 0) {
		note(R, "%s: %s", path, h5_err_msg());
		R->nerr++;
		goto out;
	}
	et = tv.kind == H5_TYPE_ARRAY ? &tv.members[0] : &tv;
	fill = st.fill;
	if (!fill && !(fill = zeros = calloc(1, tv.size ? tv.size : 1))) {
		note(R, "%s: out of memory", path);
		R->nerr++;
		goto out;
	}
	why = zarr_form(&zdt, &zfl, &conv, d, &di, &st, &tv, fill);
	if (tv.kind == H5_TYPE_ARRAY)
		extra = tv.arank;
	rank = di.shape == H5_SHAPE_SIMPLE ? di.rank : 0;
	if (!why && strcmp(di.layout, "chunked") == 0 && di.nfilters && !conv) {
		struct chunk_ctx x = { R, prefix, path, di.chunk, rank, extra, 1, 0 };

		if (st.edge_unfiltered && has_partial_edge(&di)) {
			why = "partial edge chunks stored unfiltered";
		} else if ((rc = h5_dataset_chunks(d, chunk_cb, &x)) < 0) {
			/* a corrupt file, not a dataset without a Zarr form */
			note(R, "%s: %s", path, h5_err_msg());
			R->nerr++;
			goto out;
		} else if (x.masked) {
			why = "a chunk was stored with a filter skipped";
		}
	}
	if (why) {
		note(R, "%s: dataset skipped: %s", path, why);
		R->nskipped++;
		goto out;
	}
	esize = et->size;
	for (unsigned i = 0; i < rank; i++)
		shape[i] = di.dims[i];
	for (unsigned i = 0; i < extra; i++)
		shape[rank + i] = tv.adims[i];
	if (conv) {
		/* pieces of whole rows, about CONVERTED_PIECE bytes each */
		uint64_t row = tv.size;

		for (unsigned i = 0; i < rank + extra; i++)
			chunks[i] = shape[i] ? shape[i] : 1;
		for (unsigned i = 1; i < rank; i++)
			row *= shape[i];
		if (rank && row && CONVERTED_PIECE / row < chunks[0])
			chunks[0] = CONVERTED_PIECE / row ? CONVERTED_PIECE / row : 1;
		if (!(cfill = malloc(tv.size ? tv.size : 1))) {
			note(R, "%s: out of memory", path);
			R->nerr++;
			goto out;
		}
		memcpy(cfill, fill, tv.size);
		zarr_convert(&tv, cfill);
		fill = cfill;
	} else if (strcmp(di.layout, "chunked") == 0) {
		for (unsigned i = 0; i < rank; i++)
			chunks[i] = di.chunk[i];
	} else {
		uint64_t row = esize;

		for (unsigned i = 0; i < rank + extra; i++)
			chunks[i] = shape[i] ? shape[i] : 1;
		for (unsigned i = 1; i < rank + extra; i++)
			row *= shape[i];
		if (rank && R->o->split_bytes && strcmp(di.layout, "contiguous") == 0)
			chunks[0] = split_rows(shape[0], row, R->o->split_bytes);
	}
	for (unsigned i = 0; i < extra; i++)
		chunks[rank + i] = tv.adims[i];
	zarr_fill(&zfill, et, fill);
	attrs_build(R, &ac, path, addr, (int)rank, R->nanc ? R->anc[R->nanc - 1] : h5_file_root(R->f));
	have_ac = 1;
	jb_done(&zdt);
	jb_done(&zfl);
	jb_done(&zfill);
	if (zdt.nomem || zfl.nomem || zfill.nomem) {
		note(R, "%s: out of memory", path);
		R->nerr++;
		goto out;
	}
	{
		refs_array a = { .path = path, .d = d, .type = et, .rank = rank + extra, .h5rank = rank,
				 .shape = shape, .chunks = chunks, .dtype = zdt.p, .filters = zfl.p, .fill = zfill.p,
				 .dims = ac.names[0] ? ac.names : NULL, .values = conv };

		if (R->s->array(R->s->u, prefix, &a) < 0) {
			R->nerr++;
			goto out;
		}
	}
	attrs_put(R, &ac, prefix);
	if (conv) {
		rc = put_converted(R, prefix, d, &tv, di.dims, rank, extra, rank ? chunks[0] : 1, fill);
	} else if (strcmp(di.layout, "chunked") == 0) {
		struct chunk_ctx x = { R, prefix, path, di.chunk, rank, extra, 0, 0 };

		rc = h5_dataset_chunks(d, chunk_cb, &x);
	} else if (strcmp(di.layout, "compact") == 0) {
		uint64_t zero[64] = { 0 };

		if (R->s->chunk(R->s->u, prefix, zero, rank + extra, R->url, 0, st.compact_size, st.compact) < 0)
			rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
	} else if (st.contig_off != UINT64_MAX) {
		uint64_t piece = esize, idx[64] = { 0 }, n;

		for (unsigned i = 0; i < rank + extra; i++)
			piece *= chunks[i];
		n = rank ? shape[0] / chunks[0] : 1;
		for (uint64_t k = 0; k < n && rc == 0; k++) {
			idx[0] = k;
			if (piece && (k + 1) * piece <= st.contig_size)
				rc = put_chunk_ref(R, prefix, idx, rank + extra, st.contig_off + k * piece, piece) < 0
					? h5_err_set(H5_ERR_IO, "cannot read contiguous data to inline it") : 0;
		}
	}
	if (rc < 0) {
		/* the document is already partly written: say so, count it */
		note(R, "%s: chunk references incomplete: %s", path, h5_err_msg());
		R->nerr++;
	}
out:
	if (have_ac)
		attrs_free(&ac);
	free(zeros);
	free(cfill);
	jb_done(&zdt);
	jb_done(&zfl);
	jb_done(&zfill);
	free(zdt.p);
	free(zfl.p);
	free(zfill.p);
	h5_type_view_clear(&tv);
	if (have_di)
		h5_dataset_info_clear(&di);
	h5_dataset_close(d);
}

/* ---- groups and links ------------------------------------------------------------ */

static void put_object(struct refs *R, const char *prefix, const char *path, uint64_t addr);

/* An external link, followed into its file when --follow-external (and
 * the file lies where h5fs would open it); chains of links are followed
 * as the mount follows them (h5_link_follow: libhdf5's limit, loops
 * refused). */
static void put_external(struct refs *R, const char *prefix, const char *path, const h5_link *l)
{
	h5_file *g = NULL, *saved_f = R->f;
	const char *saved_url = R->url;
	char *abs = NULL, *fpath = NULL;
	uint64_t addr;

	if (!R->o->follow_external) {
		note(R, "%s: external link to %s:%s not followed (--follow-external)", path, l->ext_file, l->ext_path);
		return;
	}
	if (h5_link_follow(&g, &addr, &fpath, R->f, l) < 0) {
		note(R, "%s: external link to %s:%s not followed: %s", path, l->ext_file, l->ext_path, h5_err_msg());
		return;
	}
	abs = strstr(h5_file_path(g), "://") ? strdup(h5_file_path(g)) : realpath(h5_file_path(g), NULL);
	R->f = g;
	R->url = abs ? abs : h5_file_path(g);
	put_object(R, prefix, path, addr);
	R->f = saved_f;
	R->url = saved_url;
	free(abs);
	free(fpath);
	h5_file_release_related(g);
}

static void put_group(struct refs *R, const char *prefix, const char *path, uint64_t addr)
{
	linkvec lv;
	struct jb zg = { 0 };
	struct attrs_ctx ac;
	int rc;

	jb_printf(&zg, "{\"zarr_format\": 2}");
	sink_meta(R, prefix, ".zgroup", &zg);
	free(zg.p);
	attrs_build(R, &ac, path, addr, -1, 0);
	attrs_put(R, &ac, prefix);
	attrs_free(&ac);
	rc = linkvec_collect(&lv, R->f, addr);
	if (rc < 0 || lv.nomem) {
		note(R, "%s: %s", path, lv.nomem ? "out of memory" : h5_err_msg());
		R->nerr++;
	}
	R->anc[R->nanc++] = addr;
	for (size_t i = 0; i < lv.n && !lv.nomem; i++) {
		const h5_link *l = &lv.v[i];
		size_t pl = strlen(prefix), nl = strlen(l->name);
		char *cp = malloc(pl + nl + 2), *cpath = h5_path_join(path, l->name);

		if (!cp || !cpath) {
			R->nerr++;
		} else if (nl != l->name_len || nl == 0 || strchr(l->name, '/') || strchr(l->name, '\\') ||
			   !strcmp(l->name, ".") ||
			   !strcmp(l->name, "..")) {
			note(R, "%s: a link name that cannot be a Zarr key is skipped", path);
		} else {
			sprintf(cp, "%s%s/", prefix, l->name);
			if (l->type == H5_LINK_HARD) {
				put_object(R, cp, cpath, l->addr);
			} else if (l->type == H5_LINK_SOFT) {
				uint64_t t;

				/* fsspec has no links: the target is written again
				 * here; a relative one is read from this group, as
				 * libhdf5 reads it (links on the way followed) */
				rc = l->target ? h5_path_lookup_from(&t, R->f, addr, l->target) : H5_ERR_NOTFOUND;
				if (rc == 0) {
					put_object(R, cp, cpath, t);
				} else if (rc == H5_ERR_NOTFOUND || rc == H5_ERR_LOOP) {
					note(R, "%s: soft link to %s not followed: %s", cpath, l->target ? l->target : "",
					     rc == H5_ERR_LOOP ? "a loop of links" : "it leads to no object");
				} else {
					/* a loop of links, or a corrupt group on the way */
					note(R, "%s: soft link to %s: %s", cpath, l->target, h5_err_msg());
					R->nerr++;
				}
				h5_err_clear();
			} else {
				put_external(R, cp, cpath, l);
			}
		}
		free(cp);
		free(cpath);
	}
	R->nanc--;
	linkvec_clear(&lv);
}

static void put_object(struct refs *R, const char *prefix, const char *path, uint64_t addr)
{
	h5_obj_info info;
	int rc = h5_obj_info_get(&info, R->f, addr);

	if (rc < 0) {
		note(R, "%s: %s", path, h5_err_msg());
		R->nerr++;
		return;
	}
	if (info.kind == H5_OBJ_DATASET) {
		put_dataset(R, prefix, path, addr);
	} else if (info.kind == H5_OBJ_GROUP) {
		for (unsigned i = 0; i < R->nanc; i++)
			if (R->anc[i] == addr) {
				note(R, "%s: link back to an enclosing group not written (a cycle)", path);
				return;
			}
		if (R->nanc == MAX_DEPTH) {
			note(R, "%s: groups nested deeper than %d not written", path, MAX_DEPTH);
			R->nerr++;
			return;
		}
		put_group(R, prefix, path, addr);
	}
	/* named datatypes have no Zarr form: nothing to write */
}

int refs_walk(h5_file *f, const char *path, uint64_t addr, const refs_opts *o, const refs_sink *s,
	      unsigned *nskipped, unsigned *nerr)
{
	struct refs R = { .o = o, .f = f, .url = o->url, .s = s };

	R.tty = !o->no_progress && isatty(STDERR_FILENO);
	clock_gettime(CLOCK_MONOTONIC, &R.last);
	put_object(&R, "", path, addr);
	progress(&R, "", 1);
	*nskipped = R.nskipped;
	*nerr = R.nerr;
	return 0;
}

/* ---- one file's document: the printing sink ------------------------------------- */

static int print_meta(void *u, const char *prefix, const char *name, const char *json)
{
	return rd_meta(u, prefix, name, json);
}

static int print_array(void *u, const char *prefix, const refs_array *a)
{
	struct jb za = { 0 };
	int rc;

	rd_zarray(&za, a->dtype, a->filters, a->rank, a->shape, a->chunks, a->fill);
	jb_done(&za);
	rc = za.nomem ? -1 : rd_meta(u, prefix, ".zarray", za.p);
	free(za.p);
	return rc;
}

static int print_chunk(void *u, const char *prefix, const uint64_t *idx, unsigned n, const char *url, uint64_t off,
		       uint64_t size, const uint8_t *data)
{
	char key[RD_KEY_MAX];

	rd_chunk_key(key, sizeof(key), idx, n);
	return data ? rd_inline(u, prefix, key, data, (size_t)size) : rd_ref(u, prefix, key, url, off, size);
}

static void print_note(void *u, const char *line)
{
	(void)u;
	fprintf(stderr, "%s\n", line);
}

int refs_write(h5_file *f, const char *path, uint64_t addr, const refs_opts *o)
{
	refs_doc w;
	refs_sink s = { &w, print_meta, print_array, print_chunk, print_note };
	unsigned nskipped = 0, nerr = 0;

	rd_begin(&w);
	refs_walk(f, path, addr, o, &s, &nskipped, &nerr);
	if (rd_end(&w) < 0) {
		fprintf(stderr, "h5fs-ls: writing the references failed\n");
		return TOOL_EXIT_PARTIAL;
	}
	if (nskipped)
		fprintf(stderr, "h5fs-ls: %s: %u dataset%s skipped (no Zarr v2 form)\n", o->file ? o->file : o->url,
			nskipped, nskipped == 1 ? "" : "s");
	if (nerr)
		return TOOL_EXIT_PARTIAL;
	return nskipped && o->strict ? TOOL_EXIT_PARTIAL : TOOL_EXIT_OK;
}
