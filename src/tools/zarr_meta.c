/*
 * zarr_meta.c - the Zarr v2 metadata of a dataset for h5fs-ls --refs:
 * dtype (NumPy typestrs, compounds as [name, typestr(, shape)] lists),
 * fill_value as zarr encodes it, and the filter pipeline as numcodecs 0.11
 * configs (zarr_meta.h). Which HDF5 filters decode equal through which
 * codec is decided here.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "zarr_meta.h"

#include <inttypes.h>
#include <string.h>

/* The Zarr v2 dtype of t (a typestr, or a list for compounds); NULL and a
 * reason when there is none. */
/* h5py reads a compound of two equal floats named r and i as complex. */
static int is_complex(const h5_type_view *t)
{
	const h5_type_view *m = t->members;

	return t->kind == H5_TYPE_COMPOUND && t->nmembers == 2 && m[0].kind == H5_TYPE_NUMBER &&
	       m[0].typestr[1] == 'f' && strcmp(m[0].typestr, m[1].typestr) == 0 && strcmp(m[0].name, "r") == 0 &&
	       strcmp(m[1].name, "i") == 0 && m[0].offset == 0 && m[1].offset == m[0].size &&
	       t->size == 2 * m[0].size && m[0].size >= 4;
}

const char *zarr_dtype(struct jb *b, const h5_type_view *t, int top)
{
	if (is_complex(t)) {
		jb_printf(b, "\"%cc%u\"", t->members[0].typestr[0], t->size);
		return NULL;
	}
	switch (t->kind) {
	case H5_TYPE_STRING:
		/* null-terminated and space-padded ones are read as HDF5
		 * converts them (zarr_convert): their chunks are inlined */
	case H5_TYPE_NUMBER:
	case H5_TYPE_OPAQUE:
		jb_printf(b, "\"%s\"", t->typestr);
		return NULL;
	case H5_TYPE_COMPOUND: {
		uint64_t off = 0;
		int n = 0;

		/* the list form lays the fields out in its order: padding is
		 * a field with no name ("", "|V<gap>"), as NumPy's descr and
		 * kerchunk write it; fields out of order have no such form */
		for (size_t i = 0; i < t->nmembers; i++) {
			if (t->members[i].offset < off)
				return "compound with fields out of order or overlapping";
			off = (uint64_t)t->members[i].offset + t->members[i].size;
		}
		if (off > t->size || !t->nmembers)
			return "compound with no fields, or fields past its size";
		jb_printf(b, "[");
		off = 0;
		for (size_t i = 0; i <= t->nmembers; i++) {
			const h5_type_view *m = &t->members[i < t->nmembers ? i : 0];
			const h5_type_view *base = m->kind == H5_TYPE_ARRAY ? &m->members[0] : m;
			uint64_t at = i < t->nmembers ? m->offset : t->size;
			const char *why;

			if (at > off)
				jb_printf(b, "%s[\"\", \"|V%" PRIu64 "\"]", n++ ? ", " : "", at - off);
			if (i == t->nmembers)
				break;
			off = at + m->size;
			if (!m->name[0])
				return "compound with a field without a name";
			jb_printf(b, "%s[", n++ ? ", " : "");
			jb_str(b, m->name, strlen(m->name));
			jb_printf(b, ", ");
			if (base->kind == H5_TYPE_ARRAY)
				return "nested array type";
			why = zarr_dtype(b, base, 0);
			if (why)
				return why;
			if (m->kind == H5_TYPE_ARRAY) {
				jb_printf(b, ", [");
				for (unsigned k = 0; k < m->arank; k++)
					jb_printf(b, "%s%" PRIu32, k ? ", " : "", m->adims[k]);
				jb_printf(b, "]");
			}
			jb_printf(b, "]");
		}
		jb_printf(b, "]");
		return NULL;
	}
	case H5_TYPE_ARRAY:
		/* an array type at the top is appended to the shape (as h5py reads it) */
		if (top && t->members[0].kind != H5_TYPE_ARRAY)
			return zarr_dtype(b, &t->members[0], 0);
		return "nested array type";
	case H5_TYPE_VSTRING:
		return "variable-length strings";
	default:
		return strcmp(t->typestr, "|O") == 0 ? "variable-length data" : "no Zarr v2 dtype for this type";
	}
}

/* Whether HDF5 reads values of t converted from the bytes stored:
 * fixed-length strings that are not null-padded (zarr_convert), and
 * numbers at a bit offset or precision (n-bit: the engine converts them,
 * h5_dataset_read, h5_dataset_values; no numcodecs codec shifts bits). */
int zarr_converted(const h5_type_view *t)
{
	if (t->converted)
		return 1;
	if (t->kind == H5_TYPE_STRING)
		return t->str_pad != 1;
	if (t->kind == H5_TYPE_COMPOUND || t->kind == H5_TYPE_ARRAY)
		for (size_t i = 0; i < t->nmembers; i++)
			if (zarr_converted(&t->members[i]))
				return 1;
	return 0;
}

/* One element at p made what libhdf5's string conversion (H5T__conv_s_s,
 * as h5py over libhdf5 1.10 reads it) gives h5py, whose |S type is
 * null-padded: a null-terminated string ends at its first NUL (a full
 * field is kept whole), a space-padded one loses its trailing spaces; the
 * rest of the field is NULs. */
void zarr_convert(const h5_type_view *t, uint8_t *p)
{
	switch (t->kind) {
	case H5_TYPE_STRING: {
		size_t n = 0;

		if (t->str_pad == 0) {
			while (n < t->size && p[n])
				n++;
		} else if (t->str_pad == 2) {
			n = t->size;
			while (n && p[n - 1] == ' ')
				n--;
		} else {
			return;
		}
		memset(p + n, 0, t->size - n);
		break;
	}
	case H5_TYPE_COMPOUND:
		for (size_t i = 0; i < t->nmembers; i++)
			zarr_convert(&t->members[i], p + t->members[i].offset);
		break;
	case H5_TYPE_ARRAY: {
		uint64_t n = 1;

		for (unsigned k = 0; k < t->arank; k++)
			n *= t->adims[k];
		for (uint64_t k = 0; k < n; k++)
			zarr_convert(&t->members[0], p + k * t->members[0].size);
		break;
	}
	default:
		break;
	}
}

/* The fill value as zarr's .zarray writes it: numbers (NaN, Infinity as
 * strings), booleans, base64 of the bytes for strings and compounds. */
void zarr_fill(struct jb *b, const h5_type_view *t, const uint8_t *fill)
{
	if (is_complex(t)) {
		jb_printf(b, "[");
		json_number(b, t->members[0].typestr, fill, 1);
		jb_printf(b, ", ");
		json_number(b, t->members[1].typestr, fill + t->members[1].offset, 1);
		jb_printf(b, "]");
	} else if (t->kind == H5_TYPE_NUMBER)
		json_number(b, t->typestr, fill, 1);
	else {
		jb_printf(b, "\"");
		jb_base64(b, fill, t->size);
		jb_printf(b, "\"");
	}
}

/* The pipeline as numcodecs configs, HDF5's order (zarr applies filters
 * in list order when writing, in reverse when reading, as HDF5 does). */
const char *zarr_filters(struct jb *b, const h5_dataset_info *di, unsigned esize)
{
	jb_printf(b, "[");
	for (size_t i = 0; i < di->nfilters; i++) {
		const h5_filter_info *fi = &di->filters[i];
		const uint32_t *cd = fi->cd;

		jb_printf(b, "%s", i ? ", " : "");
		switch (fi->id) {
		case 1:
			jb_printf(b, "{\"id\": \"zlib\", \"level\": %u}", fi->ncd ? cd[0] : 6);
			break;
		case 2:
			jb_printf(b, "{\"id\": \"shuffle\", \"elementsize\": %u}", fi->ncd ? cd[0] : esize);
			break;
		case 307:
			jb_printf(b, "{\"id\": \"bz2\", \"level\": %u}", fi->ncd && cd[0] >= 1 && cd[0] <= 9 ? cd[0] : 9);
			break;
		case 32015:
			jb_printf(b, "{\"id\": \"zstd\", \"level\": %d}", fi->ncd ? (int)cd[0] : 0);
			break;
		case 32001: {
			/* cd: 4 clevel, 5 shuffle, 6 compressor code; a blosc
			 * frame describes itself, so decoding needs none of them */
			static const char *const cname[] = { "blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd" };
			unsigned code = fi->ncd > 6 ? cd[6] : 0;

			jb_printf(b, "{\"id\": \"blosc\", \"cname\": \"%s\", \"clevel\": %u, \"shuffle\": %u, \"blocksize\": 0}",
				  code < 6 ? cname[code] : "blosclz", fi->ncd > 4 ? cd[4] : 5, fi->ncd > 5 ? cd[5] : 1);
			break;
		}
		case 3:
			return "fletcher32 (numcodecs 0.11 has no such codec)";
		case 32004:
			return "lz4 (HDF5's lz4 framing is not numcodecs' LZ4)";
		case 5:
			return "nbit (no numcodecs codec)";
		case 6:
			return "scaleoffset (no numcodecs codec)";
		default:
			return "a filter with no numcodecs codec";
		}
	}
	jb_printf(b, "]");
	return NULL;
}

