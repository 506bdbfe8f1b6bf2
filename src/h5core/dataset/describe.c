/*
 * describe.c - a dataset described for people (h5_dataset_describe): the
 * datatype as text, shape, layout, chunk index, filters, external storage
 * and sizes, in the vocabulary of the user.h5.* xattrs. h5fs-ls prints
 * this; it needs no internal header.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "base.h"
#include "strbuf.h"
#include "dspace.h"
#include "dtype.h"
#include "layout.h"
#include "pline.h"
#include "filter.h"
#include "value.h"
#include "dataset.h"
#include "cidx.h"
#include "vds.h"

#include <inttypes.h>

/* Compact text of a datatype: "int32le", "string[10,ascii,nullterm]",
 * "compound[8]{a@0:float32le,b@4:uint32le}", ... (doc/h5fs-ls.1). */
static int dtype_text(h5_sb *s, const h5_dtype *t, int depth)
{
	const char *order;
	size_t i;
	int rc = 0;

	if (!t || depth > H5_MAX_DTYPE_DEPTH)
		return h5_sb_puts(s, "?");
	order = t->size <= 1 ? "" : t->big_endian ? "be" : "le";
	switch (t->cls) {
	case H5T_INTEGER:
		rc = h5_sb_printf(s, "%sint%u%s", t->is_signed ? "" : "u", t->size * 8, order);
		/* n-bit: the bits stored (shown as values of the container's type) */
		if (rc == 0 && (t->precision != t->size * 8 || t->bit_offset))
			rc = h5_sb_printf(s, "(%u@%u)", t->precision, t->bit_offset);
		return rc;
	case H5T_FLOAT:
		/* IEEE needs no more words; other layouts say which they are */
		rc = h5_sb_printf(s, "float%u%s", t->size * 8, order);
		if (rc == 0 && h5_dtype_float_kind(t) == H5_FLOAT_X87)
			rc = h5_sb_puts(s, "(x87)");
		else if (rc == 0 && h5_dtype_float_kind(t) == H5_FLOAT_BF16)
			rc = h5_sb_puts(s, "(bfloat16)");
		else if (rc == 0 && h5_dtype_float_kind(t) == H5_FLOAT_E4M3)
			rc = h5_sb_puts(s, "(e4m3)");
		else if (rc == 0 && h5_dtype_float_kind(t) == H5_FLOAT_E5M2)
			rc = h5_sb_puts(s, "(e5m2)");
		else if (rc == 0 && h5_dtype_float_kind(t) == H5_FLOAT_E2M3)
			rc = h5_sb_puts(s, "(e2m3)");
		else if (rc == 0 && h5_dtype_float_kind(t) == H5_FLOAT_E3M2)
			rc = h5_sb_puts(s, "(e3m2)");
		else if (rc == 0 && h5_dtype_float_kind(t) == H5_FLOAT_E2M1)
			rc = h5_sb_puts(s, "(e2m1)");
		else if (rc == 0 && h5_dtype_float_kind(t) == H5_FLOAT_OTHER)
			rc = h5_sb_printf(s, "(sign@%u,exp@%u:%u,mant@%u:%u)", t->sign_loc, t->exp_loc, t->exp_size,
					  t->mant_loc, t->mant_size);
		return rc;
	case H5T_TIME:
		return h5_sb_printf(s, "time%u%s", t->size * 8, order);
	case H5T_BITFIELD:
		rc = h5_sb_printf(s, "bitfield%u%s", t->size * 8, order);
		if (rc == 0 && (t->precision != t->size * 8 || t->bit_offset))
			rc = h5_sb_printf(s, "(%u@%u)", t->precision, t->bit_offset);
		return rc;
	case H5T_STRING:
		return h5_sb_printf(s, "string[%u,%s,%s]", t->size, t->cset ? "utf8" : "ascii",
				    t->str_pad == 0 ? "nullterm" : t->str_pad == 1 ? "nullpad" : "spacepad");
	case H5T_OPAQUE:
		rc = h5_sb_printf(s, "opaque[%u]", t->size);
		if (rc == 0 && t->tag && *t->tag) {
			rc = h5_sb_puts(s, "(");
			if (rc == 0)
				rc = h5_sb_puts(s, t->tag);
			if (rc == 0)
				rc = h5_sb_puts(s, ")");
		}
		return rc;
	case H5T_REFERENCE:
		return h5_sb_printf(s, "reference(%s)",
				    t->ref_type == 0 ? "object" : t->ref_type == 1 ? "region" : "other");
	case H5T_ENUM:
		rc = h5_sb_puts(s, "enum<");
		if (rc == 0)
			rc = dtype_text(s, t->base, depth + 1);
		return rc ? rc : h5_sb_printf(s, ">{%zu}", t->nmembers);
	case H5T_VLEN:
		if (t->vlen_type == 1)
			return h5_sb_printf(s, "vlen-string(%s)", t->cset ? "utf8" : "ascii");
		rc = h5_sb_puts(s, "vlen<");
		if (rc == 0)
			rc = dtype_text(s, t->base, depth + 1);
		return rc ? rc : h5_sb_puts(s, ">");
	case H5T_ARRAY:
		rc = h5_sb_puts(s, "array[");
		for (i = 0; i < t->arank && rc == 0; i++)
			rc = h5_sb_printf(s, "%s%" PRIu32, i ? "," : "", t->adims[i]);
		if (rc == 0)
			rc = h5_sb_puts(s, "]<");
		if (rc == 0)
			rc = dtype_text(s, t->base, depth + 1);
		return rc ? rc : h5_sb_puts(s, ">");
	case H5T_COMPLEX:
		rc = h5_sb_puts(s, "complex<");
		if (rc == 0)
			rc = dtype_text(s, t->base, depth + 1);
		return rc ? rc : h5_sb_puts(s, ">");
	case H5T_COMPOUND:
		rc = h5_sb_printf(s, "compound[%u]{", t->size);
		for (i = 0; i < t->nmembers && rc == 0; i++) {
			const char *name = t->members[i].name ? t->members[i].name : "?";

			rc = h5_sb_puts(s, i ? "," : "");
			if (rc == 0)
				rc = h5_sb_puts(s, name);
			if (rc == 0)
				rc = h5_sb_printf(s, "@%" PRIu32 ":", t->members[i].offset);
			if (rc == 0)
				rc = dtype_text(s, t->members[i].type, depth + 1);
		}
		return rc ? rc : h5_sb_puts(s, "}");
	default:
		return h5_sb_printf(s, "class%d[%u]", (int)t->cls, t->size);
	}
}

static const char *dtype_class_name(const h5_dtype *t)
{
	static const char *const names[] = {
		"integer", "float", "time", "string", "bitfield", "opaque",
		"compound", "reference", "enum", "vlen", "array", "complex"
	};

	if (t && (unsigned)t->cls < sizeof(names) / sizeof(names[0]))
		return names[t->cls];
	return "unknown";
}

static int maxshape_differs(const h5_dspace *sp)
{
	unsigned i;

	if (sp->type != H5_SPACE_SIMPLE || !sp->has_max)
		return 0;
	for (i = 0; i < sp->rank; i++)
		if (sp->maxdims[i] != sp->dims[i])
			return 1;
	return 0;
}

int h5_dataset_describe(h5_dataset_info *out, h5_dataset *d)
{
	return h5_dataset_describe_flags(out, d, 0);
}

int h5_dataset_describe_flags(h5_dataset_info *out, h5_dataset *d, unsigned flags)
{
	h5_sb ty = { 0 };
	size_t len, i;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = dtype_text(&ty, d->dtype, 0);
	if (rc == 0)
		rc = h5_sb_finish(&out->dtype_text, &len, &ty);
	if (rc < 0)
		goto out;
	out->dtype_class = dtype_class_name(d->dtype);
	out->dtype_size = d->dtype ? d->dtype->size : 0;
	out->dtype_form = d->dtype ? h5_value_num_form(d->dtype) : 0;
	/* as user.h5.dtype shows it; a type it cannot express has none */
	if (!d->dtype || h5_value_typestr(&out->dtype_numpy, d->dtype) < 0) {
		out->dtype_numpy = NULL;
		h5_err_clear();
	}
	out->shape = d->space.type == H5_SPACE_NULL ? H5_SHAPE_NULL :
		     d->space.type == H5_SPACE_SCALAR ? H5_SHAPE_SCALAR : H5_SHAPE_SIMPLE;
	out->rank = d->space.rank;
	out->dims = d->space.dims;
	out->maxdims = d->space.maxdims;
	out->has_maxshape = maxshape_differs(&d->space);
	out->layout = h5_layout_class_name(d->layout.cls);
	if (d->layout.cls == H5_LAYOUT_CHUNKED) {
		out->chunk_rank = d->layout.ndims;
		out->chunk = d->layout.chunk;
		out->index = h5_layout_index_name(d->layout.idx_type);
	}
	out->n_external = d->efl.n;
	if (d->vds && d->vds->n) {
		out->mappings = calloc(d->vds->n, sizeof(*out->mappings));
		if (!out->mappings) {
			rc = h5_err_set(H5_ERR_NOMEM, "out of memory describing a dataset");
			goto out;
		}
		out->nmappings = d->vds->n;
		for (i = 0; i < d->vds->n; i++) {
			const h5_vds_map *m = &d->vds->map[i];
			h5_mapping_info *mi = &out->mappings[i];

			mi->file = m->file;
			mi->dataset = m->dset;
			if ((rc = h5_sel_text(&mi->virt_sel, &m->virt)) < 0 ||
			    (rc = h5_sel_text(&mi->src_sel, &m->src)) < 0)
				goto out;
		}
	}
	if (d->pline.n) {
		out->filters = calloc(d->pline.n, sizeof(*out->filters));
		if (!out->filters) {
			rc = h5_err_set(H5_ERR_NOMEM, "out of memory describing a dataset");
			goto out;
		}
	}
	out->nfilters = d->pline.n;
	for (i = 0; i < d->pline.n; i++) {
		const h5_filter *fl = &d->pline.filters[i];
		h5_filter_info *fi = &out->filters[i];

		fi->id = fl->id;
		fi->name = fl->name ? fl->name : h5_filter_name(fl->id);
		fi->optional = (fl->flags & 1) != 0;
		fi->available = h5_filter_available(fl->id);
		fi->ncd = fl->ncd;
		fi->cd = fl->cd;
	}
	out->logical_size = h5_dataset_size(d);
	/* a walk of the whole chunk index: not for a caller that has no use
	 * for it (h5fs-ls --refs walks the index once itself) */
	out->allocated_size = flags & H5_DESCRIBE_NO_ALLOCATED ? UINT64_MAX : h5_dataset_allocated(d);
out:
	free(ty.p);
	if (rc < 0)
		h5_dataset_info_clear(out);
	return rc;
}

void h5_dataset_info_clear(h5_dataset_info *info)
{
	if (!info)
		return;
	free(info->dtype_text);
	free(info->dtype_numpy);
	free(info->filters);
	for (size_t i = 0; i < info->nmappings; i++) {
		free(info->mappings[i].virt_sel);
		free(info->mappings[i].src_sel);
	}
	free(info->mappings);
	memset(info, 0, sizeof(*info));
}
