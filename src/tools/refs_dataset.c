/*
 * refs_dataset.c - h5fs-ls --refs: a dataset as a Zarr v2 array (refs.c
 * says what the document is): its .zarray (dtype, filters as numcodecs
 * codecs, fill value), one [url, offset, length] per allocated chunk from
 * the engine's walk of the chunk index (small chunks inlined), values
 * h5py reads converted written inline, and what Zarr v2 cannot express
 * skipped with one line.
 *
 * The fill value follows netCDF's rule, as xarray reads it: Zarr's
 * "fill_value" becomes the variable's _FillValue there (masked, integers
 * made floats), so it is null unless the dataset has a _FillValue
 * attribute. With null, Zarr leaves a missing chunk's elements undefined:
 * a dataset with unwritten chunks gets them inline (its fill value's
 * bytes, as HDF5 reads them) when unfiltered and small enough (fill_fits:
 * no more text than its written chunks' entries, or --fill=exact up to
 * FILL_MAX), else keeps its fill value (correct bytes; xarray masks them).
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "refs_int.h"
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

#define CONVERTED_MAX ((uint64_t)64 << 20)   /* bytes of a converted dataset inlined at most */
#define CONVERTED_PIECE ((uint64_t)1 << 20)  /* bytes of one inlined chunk of one, about */
#define FILL_MAX ((uint64_t)64 << 20)        /* bytes of unwritten chunks inlined at most (--fill=exact) */
#define FILL_FLOOR 4096                      /* inline text of unwritten chunks always allowed */
#define ENTRY_KEY 24                         /* a chunk entry's key and JSON around it, about */
#define GRID_MAX ((uint64_t)1 << 22)         /* chunks of a grid whose unwritten ones are inlined */

/* ---- datasets -------------------------------------------------------------------- */

struct chunk_ctx {
	struct refs *R;
	const char *prefix;       /* "a/b/ds/" */
	const char *path;
	const uint64_t *chunk;    /* chunk dims (rank entries) */
	unsigned rank, extra;     /* extra: array type dims appended (chunk index 0) */
	int check_only;
	int masked;               /* a chunk with a skipped filter was met */
	uint64_t count;           /* check_only: chunks met inside grid */
	uint8_t *present;         /* a bit per chunk of the grid (C order), or NULL */
	const uint64_t *grid;     /* chunks per dimension (rank), or NULL */
};

/* Whether the chunk at offset lies inside x's grid (an index may hold
 * chunks past a dataset's extent: shrunk, or written so). */
static int in_grid(const struct chunk_ctx *x, const uint64_t *offset)
{
	for (unsigned i = 0; x->grid && i < x->rank; i++)
		if (offset[i] / x->chunk[i] >= x->grid[i])
			return 0;
	return 1;
}

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
		x->count += (uint64_t)in_grid(x, c->offset);
		if (c->filter_mask) {
			x->masked = 1;
			return 1;
		}
		return 0;
	}
	for (unsigned i = 0; i < x->rank; i++)
		idx[i] = c->offset[i] / x->chunk[i];
	if (x->present && in_grid(x, c->offset)) {
		uint64_t lin = 0;

		for (unsigned i = 0; i < x->rank; i++)
			lin = lin * x->grid[i] + idx[i];
		x->present[lin / 8] |= (uint8_t)(1u << (lin % 8));
	}
	for (unsigned i = 0; i < x->extra; i++)
		idx[x->rank + i] = 0;
	if (put_chunk_ref(x->R, x->prefix, idx, x->rank + x->extra, c->file_off, c->size) < 0)
		return h5_err_set(H5_ERR_IO, "cannot read the chunk at %" PRIu64 " to inline it", c->file_off);
	x->R->nchunks++;
	if ((x->R->nchunks & 1023) == 0)
		refs_progress(x->R, x->path, 0);
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

/* The chunks of a grid (grid[0..rank)) the walk did not meet (present:
 * their bits clear; NULL: all of them), each given inline as chunk
 * elements of fill (esize bytes each, n a chunk). */
static int put_unwritten(struct refs *R, const char *prefix, const uint64_t *grid, unsigned rank, unsigned extra,
			 const uint8_t *present, const uint8_t *fill, uint64_t esize, uint64_t n)
{
	uint64_t total = 1, idx[64] = { 0 };
	uint8_t *buf = malloc(n && esize ? (size_t)(n * esize) : 1);
	int rc = 0;

	if (!buf)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	for (uint64_t k = 0; k < n; k++)
		memcpy(buf + k * esize, fill, (size_t)esize);
	for (unsigned i = 0; i < rank; i++)
		total *= grid[i];
	for (uint64_t lin = 0; lin < total && rc == 0; lin++) {
		uint64_t r = lin;

		if (present && (present[lin / 8] >> (lin % 8)) & 1)
			continue;
		for (unsigned i = rank; i-- > 0;) {
			idx[i] = r % grid[i];
			r /= grid[i];
		}
		if (R->s->chunk(R->s->u, prefix, idx, rank + extra, R->url, 0, n * esize, buf) < 0)
			rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
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
	if (*conv && h5_dataset_size(d) > CONVERTED_MAX && tv->converted)
		return "numbers at a bit offset or precision (n-bit: their values are converted from the bits "
		       "stored, and converted bytes are inlined only up to 64 MiB)";
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

static uint64_t grid_total(const uint64_t *grid, unsigned rank)
{
	uint64_t t = 1;

	for (unsigned i = 0; i < rank; i++)
		t = grid[i] && t > UINT64_MAX / grid[i] ? UINT64_MAX : t * grid[i];
	return t;
}

/* Elements of a chunk over the dataspace's dimensions. */
static uint64_t grid_chunk(const uint64_t *chunks, unsigned rank)
{
	uint64_t n = 1;

	for (unsigned i = 0; i < rank; i++)
		n *= chunks[i];
	return n;
}

/* Whether n unwritten chunks of bytes each may go inline beside met
 * written ones: by default only while their text (base64) is no larger
 * than the written chunks' entries, or FILL_FLOOR, so that references stay
 * proportional to what was written (issue 72: a sparse dataset's fill
 * made gigabytes of references); --fill=exact up to FILL_MAX. */
static int fill_fits(const struct refs *R, uint64_t n, uint64_t met, uint64_t bytes)
{
	uint64_t each, budget;

	if (!bytes)
		return 0;
	if (R->o->fill_exact)
		return n <= FILL_MAX / bytes;
	if (bytes > FILL_MAX)
		return 0;
	each = (bytes + 2) / 3 * 4 + ENTRY_KEY;
	budget = (uint64_t)((R->url ? strlen(R->url) : 0) + 2 * ENTRY_KEY);
	budget = met > FILL_MAX / budget ? FILL_MAX : met * budget;
	if (budget < FILL_FLOOR)
		budget = FILL_FLOOR;
	return n <= budget / each;
}

/* The chunks of the dataset's own grid the walk meets, counted into *met
 * unless counted already; -1 when unknown (a chunk stored with a filter
 * skipped, or a walk that fails: the walk that writes says it). */
static int count_met(uint64_t *met, struct refs *R, h5_dataset *d, const h5_dataset_info *di, unsigned rank,
		     unsigned extra)
{
	uint64_t hgrid[64];
	struct chunk_ctx x = { R, "", "", di->chunk, rank, extra, 1, 0, 0, NULL, hgrid };

	if (*met != UINT64_MAX)
		return 0;
	for (unsigned i = 0; i < rank; i++)
		hgrid[i] = di->dims[i] / di->chunk[i] + (di->dims[i] % di->chunk[i] != 0);
	if (h5_dataset_chunks(d, chunk_cb, &x) < 0) {
		h5_err_clear();
		return -1;
	}
	if (x.masked)
		return -1;
	*met = x.count;
	return 0;
}

/* Whether nothing of the dataset's storage is allocated: contiguous never
 * written, or chunked without a chunk (compact storage is in the header). */
static int unallocated(uint64_t *met, struct refs *R, h5_dataset *d, const h5_dataset_info *di,
		       const h5_storage *st, unsigned rank, unsigned extra)
{
	if (strcmp(di->layout, "contiguous") == 0)
		return st->contig_off == UINT64_MAX && !st->n_external;
	if (strcmp(di->layout, "chunked") != 0 || count_met(met, R, d, di, rank, extra) < 0)
		return 0;
	return *met == 0;
}

/* netCDF's rule (the header comment): whether "fill_value" can be null,
 * and *unwritten when chunks must be given inline for it (grid: the chunk
 * grid; *met: chunks the walk meets, counted here if not yet). */
static int fill_rule(int *unwritten, uint64_t *met, uint64_t *grid, struct refs *R, h5_dataset *d,
		     const h5_dataset_info *di, const h5_storage *st, const uint64_t *shape, const uint64_t *chunks,
		     unsigned rank, unsigned extra, uint64_t esize, int conv)
{
	uint64_t total, bytes;

	*unwritten = 0;
	if (conv || strcmp(di->layout, "compact") == 0)
		return 1;       /* every element is given */
	for (unsigned i = 0; i < rank; i++)
		grid[i] = shape[i] / chunks[i] + (shape[i] % chunks[i] != 0);
	total = grid_total(grid, rank);
	bytes = grid_chunk(chunks, rank + extra) * esize;
	if (strcmp(di->layout, "contiguous") == 0) {
		if (st->contig_off != UINT64_MAX)
			return 1;
		*unwritten = total && total <= GRID_MAX && fill_fits(R, total, 0, bytes);
		return *unwritten || total == 0;
	}
	if (strcmp(di->layout, "chunked") != 0)
		return 0;
	if (count_met(met, R, d, di, rank, extra) < 0)
		return 0;
	if (*met >= total)
		return 1;
	*unwritten = !di->nfilters && total <= GRID_MAX && fill_fits(R, total - *met, *met, bytes);
	return *unwritten;
}

void refs_put_dataset(struct refs *R, const char *prefix, const char *path, uint64_t addr)
{
	h5_dataset *d = NULL;
	h5_dataset_info di;
	h5_storage st;
	h5_type_view tv = { 0 };
	struct jb zdt = { 0 }, zfl = { 0 }, zfill = { 0 };
	struct refs_attrs ac;
	const char *why = NULL;
	const h5_type_view *et;    /* the element type zarr sees */
	uint8_t *zeros = NULL, *cfill = NULL;
	const uint8_t *fill;
	uint64_t shape[64], chunks[64], esize;
	unsigned rank, extra = 0;
	int have_di = 0, have_ac = 0, rc, conv = 0, nofill = 0, unwritten = 0;
	/* chunks the walk met inside the dataset's own grid hgrid (UINT64_MAX:
	 * not counted), and the grid of the array written */
	uint64_t met = UINT64_MAX, grid[64], hgrid[64];
	uint8_t *present = NULL;

	rc = h5_dataset_open(&d, R->f, addr);
	/* allocated_size unused: the chunks are walked below, once */
	if (rc == 0 && (rc = h5_dataset_describe_flags(&di, d, H5_DESCRIBE_NO_ALLOCATED)) == 0)
		have_di = 1;
	if (rc == 0)
		rc = h5_dataset_storage(&st, d);
	if (rc == 0)
		rc = h5_dataset_type(&tv, d);
	if (rc < 0) {
		refs_note(R, "%s: %s", path, h5_err_msg());
		R->nerr++;
		goto out;
	}
	et = tv.kind == H5_TYPE_ARRAY ? &tv.members[0] : &tv;
	fill = st.fill;
	if (!fill && !(fill = zeros = calloc(1, tv.size ? tv.size : 1))) {
		refs_note(R, "%s: out of memory", path);
		R->nerr++;
		goto out;
	}
	why = zarr_form(&zdt, &zfl, &conv, d, &di, &st, &tv, fill);
	if (tv.kind == H5_TYPE_ARRAY)
		extra = tv.arank;
	rank = di.shape == H5_SHAPE_SIMPLE ? di.rank : 0;
	if (!why && strcmp(di.layout, "chunked") == 0 && di.nfilters && !conv) {
		struct chunk_ctx x = { R, prefix, path, di.chunk, rank, extra, 1, 0, 0, NULL, hgrid };

		for (unsigned i = 0; i < rank && i < 64; i++)
			hgrid[i] = di.dims[i] / di.chunk[i] + (di.dims[i] % di.chunk[i] != 0);

		if (st.edge_unfiltered && has_partial_edge(&di)) {
			why = "partial edge chunks stored unfiltered";
		} else if ((rc = h5_dataset_chunks(d, chunk_cb, &x)) < 0) {
			/* a corrupt file, not a dataset without a Zarr form */
			refs_note(R, "%s: %s", path, h5_err_msg());
			R->nerr++;
			goto out;
		} else if (x.masked) {
			why = "a chunk was stored with a filter skipped";
		}
		met = x.count;
	}
	if (why) {
		refs_note(R, "%s: dataset skipped: %s", path, why);
		R->nskipped++;
		goto out;
	}
	esize = et->size;
	/* a variable shorter than its unlimited netCDF dimension: that long,
	 * the rows past its end its fill value (missing chunks), as
	 * netCDF-C reads it (refs_dims.c) */
	for (unsigned i = 0; i < rank; i++)
		shape[i] = !conv && !extra && strcmp(di.layout, "chunked") == 0 && di.maxdims &&
				   di.maxdims[i] == UINT64_MAX ? refs_dims_extent(R, addr, rank, i, di.dims[i])
							       : di.dims[i];
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
			refs_note(R, "%s: out of memory", path);
			R->nerr++;
			goto out;
		}
		memcpy(cfill, fill, tv.size);
		if (h5_dataset_values(d, cfill, tv.size) < 0) {
			refs_note(R, "%s: %s", path, h5_err_msg());
			R->nerr++;
			goto out;
		}
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
	/* an array type's dimensions have no names: none are made up */
	refs_attrs_build(R, &ac, extra ? NULL : prefix, path, addr, (int)rank,
			 R->nanc ? R->anc[R->nanc - 1] : h5_file_root(R->f));
	have_ac = 1;
	/* a netCDF dimension without a variable: no variable in netCDF (nor
	 * xarray), its length in the arrays along it */
	if (ac.nc_dim_only)
		goto out;
	/* storage never allocated, in a file that is not netCDF-4, of a
	 * dataset with a fill value of its own: no chunk key and that fill
	 * value in .zarray, whatever --inline and --fill say, as kerchunk
	 * writes it and Zarr readers fill missing chunks (issue 83 item 6);
	 * netCDF-C's reading (the rule above) for netCDF-4 files */
	if (!ac.has_fill && !conv && !R->nc4 && st.fill_defined &&
	    unallocated(&met, R, d, &di, &st, rank, extra))
		nofill = 0;
	else
		nofill = !ac.has_fill && fill_rule(&unwritten, &met, grid, R, d, &di, &st, shape, chunks, rank,
						     extra, et->size, conv);
	if (nofill)
		jb_printf(&zfill, "null");
	else
		zarr_fill(&zfill, et, fill);
	if (unwritten && met != UINT64_MAX && !(present = calloc(1, (size_t)((grid_total(grid, rank) + 7) / 8)))) {
		refs_note(R, "%s: out of memory", path);
		R->nerr++;
		goto out;
	}
	jb_done(&zdt);
	jb_done(&zfl);
	jb_done(&zfill);
	if (zdt.nomem || zfl.nomem || zfill.nomem) {
		refs_note(R, "%s: out of memory", path);
		R->nerr++;
		goto out;
	}
	{
		refs_array a = { .path = path, .d = d, .type = et, .rank = rank + extra, .h5rank = rank,
				 .shape = shape, .chunks = chunks, .dtype = zdt.p, .filters = zfl.p, .fill = zfill.p,
				 .dims = ac.names[0] ? ac.names : NULL, .values = conv, .units = ac.units,
				 .calendar = ac.calendar };

		if (R->s->array(R->s->u, prefix, &a) < 0) {
			R->nerr++;
			goto out;
		}
	}
	refs_attrs_put(R, &ac, prefix);
	if (conv) {
		rc = put_converted(R, prefix, d, &tv, di.dims, rank, extra, rank ? chunks[0] : 1, fill);
	} else if (strcmp(di.layout, "chunked") == 0) {
		struct chunk_ctx x = { R, prefix, path, di.chunk, rank, extra, 0, 0, 0, present, grid };

		rc = h5_dataset_chunks(d, chunk_cb, &x);
		if (rc == 0 && unwritten)
			rc = put_unwritten(R, prefix, grid, rank, extra, present, fill, tv.size, grid_chunk(chunks, rank));
	} else if (strcmp(di.layout, "compact") == 0) {
		uint64_t zero[64] = { 0 };

		if (R->s->chunk(R->s->u, prefix, zero, rank + extra, R->url, 0, st.compact_size, st.compact) < 0)
			rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
	} else if (unwritten) {
		/* contiguous, never written */
		rc = put_unwritten(R, prefix, grid, rank, extra, NULL, fill, tv.size, grid_chunk(chunks, rank));
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
		refs_note(R, "%s: chunk references incomplete: %s", path, h5_err_msg());
		R->nerr++;
	}
out:
	if (have_ac)
		refs_attrs_free(&ac);
	free(zeros);
	free(cfill);
	free(present);
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
