/*
 * meta.c - what a dataset's object header says of it (h5_dataset_meta):
 * its datatype (NumPy typestr and descr, numpy.c), dataspace (IV.A.2.b),
 * layout and chunk index (IV.A.2.i), filter pipeline (IV.A.2.l), external
 * storage (IV.A.2.n) and fill value (IV.A.2.f, as text: value.c), decoded
 * from the header alone: no chunk index is read, no dataset opened (but
 * the current extent of a virtual dataset, when asked).
 *
 * Data, not presentation: the daemon and the tools name and format it
 * (user.h5.* xattrs, src/common/xattrs.c).
 */
#include "base.h"
#include "strbuf.h"
#include "file.h"
#include "ohdr.h"
#include "dspace.h"
#include "dtype.h"
#include "layout.h"
#include "pline.h"
#include "filter.h"
#include "value.h"
#include "dataset.h"
#include "cidx.h"

#include <stdio.h>

/* rc and, when it is an error other than "does not apply", its message:
 * the caller reports it only when that one text is asked for. */
static void text_set(h5_meta_text *t, int rc)
{
	t->rc = rc;
	if (rc < 0 && rc != H5_ERR_NOTFOUND)
		t->msg = strdup(h5_err_msg());
	h5_err_clear();
}

/* The stored fill value, or the library default of all zeros, as text. */
static int fill_text(char **out, size_t *len, h5_file *f, const h5_dataset *d)
{
	const h5_dtype *t = d->dtype;
	uint8_t *zero = NULL;
	const uint8_t *v;
	int rc;

	if (d->fill.defined && d->fill.value && d->fill.size == t->size) {
		v = d->fill.value;
	} else {
		/* every byte renders as at least one character */
		if (t->size > H5_VALUE_MAX_TEXT)
			return h5_err_set(H5_ERR_LIMIT, "a fill value of %u bytes exceeds the text limit", t->size);
		zero = calloc(1, t->size);
		if (!zero)
			return h5_err_set(H5_ERR_NOMEM, "out of memory for a fill value");
		v = zero;
	}
	rc = h5_value_text(out, len, f, t, v, t->size, 1);
	free(zero);
	return rc;
}

static void texts(h5_dset_meta *out, h5_file *f, const h5_dataset *d)
{
	const h5_dtype *t = d->dtype;
	int rc;

	rc = h5_value_typestr(&out->typestr.text, t);
	out->form = (h5_num_form)h5_value_num_form(t);
	if (rc == 0)
		out->typestr.len = strlen(out->typestr.text);
	text_set(&out->typestr, rc);
	rc = H5_ERR_NOTFOUND;
	if (t->cls == H5T_COMPOUND || t->cls == H5T_ARRAY)
		rc = h5_value_descr(&out->descr.text, t);
	if (rc == 0)
		out->descr.len = strlen(out->descr.text);
	text_set(&out->descr, rc);
	text_set(&out->fill, fill_text(&out->fill.text, &out->fill.len, f, d));
}

static int filters(h5_dset_meta *out, const h5_pline *p)
{
	if (p->n == 0)
		return 0;
	out->filters = calloc(p->n, sizeof(*out->filters));
	if (!out->filters)
		return h5_err_set(H5_ERR_NOMEM, "out of memory describing filters");
	for (size_t i = 0; i < p->n; i++) {
		const char *name = h5_filter_name(p->filters[i].id);

		out->filters[i].id = p->filters[i].id;
		out->filters[i].name = strcmp(name, "unknown") == 0 ? NULL : name;
	}
	out->nfilters = p->n;
	return 0;
}

void h5_dataset_meta_clear(h5_dset_meta *m)
{
	h5_meta_text *t[] = { &m->typestr, &m->descr, &m->fill };

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		free(t[i]->text);
		free(t[i]->msg);
	}
	free(m->filters);
	if (m->priv) {
		h5_dataset_msgs_clear(m->priv);
		free(m->priv);
	}
	memset(m, 0, sizeof(*m));
}

int h5_dataset_meta(h5_dset_meta *out, h5_file *f, uint64_t addr, int live_shape)
{
	h5_ohdr *oh = NULL;
	h5_dataset *d;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = h5_ohdr_get(&oh, f, addr);
	if (rc < 0)
		return rc;
	/* only datasets (a layout message, as object.c decides) have these */
	if (!h5_ohdr_find(oh, H5_MSG_LAYOUT))
		goto out;
	d = calloc(1, sizeof(*d));
	if (!d) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory describing a dataset");
		goto out;
	}
	out->priv = d;
	d->f = f;
	d->addr = addr;
	rc = h5_dataset_msgs_decode(d, oh, false);
	if (rc < 0) {
		h5_err_wrap(rc, "dataset 0x%llx, ", (unsigned long long)addr);
		goto out;
	}
	out->is_dataset = 1;
	out->has_vlen = h5_dtype_has_vlen(d->dtype);
	out->vlen_strings = d->dtype->cls == H5T_VLEN && d->dtype->vlen_type == 1;
	out->shape = d->space.type == H5_SPACE_NULL ? H5_SHAPE_NULL
		   : d->space.type == H5_SPACE_SCALAR ? H5_SHAPE_SCALAR : H5_SHAPE_SIMPLE;
	out->rank = out->shape == H5_SHAPE_SIMPLE ? d->space.rank : 0;
	out->dims = d->space.dims;
	out->maxdims = d->space.maxdims;
	out->layout_class = d->layout.cls;
	out->layout = h5_layout_class_name(d->layout.cls);
	out->is_virtual = d->layout.cls == H5_LAYOUT_VIRTUAL;
	out->external = h5_ohdr_find(oh, H5_MSG_EFL) != NULL;
	if (d->layout.cls == H5_LAYOUT_CHUNKED) {
		out->index = h5_layout_index_name(d->layout.version < 4 ? H5_CIDX_BTREE1 : d->layout.idx_type);
		out->chunk_rank = d->layout.ndims;
		out->chunk = d->layout.chunk;
	}
	/* A virtual dataset's shape is the extent its sources give it now
	 * (dataset_vds.c), as h5py shows it; when they cannot be read, the
	 * stored one (reads then report why). */
	if (live_shape && out->is_virtual && out->shape == H5_SHAPE_SIMPLE) {
		h5_dataset *vd = NULL;

		if (h5_dataset_open(&vd, f, addr) == 0 && vd->space.rank == d->space.rank)
			memcpy(d->space.dims, vd->space.dims, sizeof(uint64_t) * d->space.rank);
		h5_dataset_close(vd);
		h5_err_clear();
	}
	rc = filters(out, &d->pline);
	if (rc == 0)
		texts(out, f, d);
out:
	h5_ohdr_release(f, oh);
	if (rc < 0)
		h5_dataset_meta_clear(out);
	return rc;
}
