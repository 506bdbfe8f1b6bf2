/*
 * typeview.c - datatypes and attribute values as NumPy sees them, for
 * tools that write them in other formats (h5fs-ls --refs: Zarr metadata):
 * the kind of each type, its NumPy typestr (value.c's h5_value_typestr, the
 * one user.h5.dtype shows), compound members with their offsets, array
 * dimensions; and every attribute's type, shape and stored bytes. What the
 * value means in another format is the tool's business.
 */
#include "base.h"
#include "file.h"
#include "dspace.h"
#include "dtype.h"
#include "attr.h"
#include "value.h"
#include "dataset.h"

#include <string.h>

_Static_assert(H5_MAX_RANK <= 32, "h5_type_view.adims holds an array type's dimensions");

static int view_of(h5_type_view *out, const h5_dtype *t, unsigned depth)
{
	int rc;

	memset(out, 0, sizeof(*out));
	if (!t)
		return h5_err_set(H5_ERR_FORMAT, "no datatype");
	if (depth > H5_MAX_DTYPE_DEPTH)
		return h5_err_set(H5_ERR_LIMIT, "datatype nested deeper than %d levels", H5_MAX_DTYPE_DEPTH);
	out->size = t->size;
	rc = h5_dtype_has_vlen(t) && !(t->cls == H5T_VLEN && t->vlen_type == 1)
		? (out->typestr = strdup("|O")) ? 0 : H5_ERR_NOMEM
		: h5_value_typestr(&out->typestr, t);
	if (rc < 0)
		return rc == H5_ERR_NOMEM ? h5_err_set(rc, "out of memory") : rc;
	out->form = (h5_num_form)h5_value_num_form(t);
	out->converted = h5_dtype_conv_needed(t);
	switch (t->cls) {
	case H5T_INTEGER:
		/* a narrower precision or a bit offset: the values are the
		 * container's type once converted (dtype_conv.c) */
		out->kind = out->typestr[1] != 'V' ? H5_TYPE_NUMBER : H5_TYPE_OTHER;
		break;
	case H5T_FLOAT:
		/* x87 extended and quad precision have no portable NumPy type */
		out->kind = out->typestr[1] != 'V' && (t->size == 2 || t->size == 4 || t->size == 8)
			? H5_TYPE_NUMBER : H5_TYPE_OTHER;
		break;
	case H5T_COMPLEX:
		/* complex64/complex128 are NumPy numbers; a half pair is not */
		out->kind = out->typestr[1] == 'c' ? H5_TYPE_NUMBER : H5_TYPE_OTHER;
		break;
	case H5T_BITFIELD:
	case H5T_ENUM:
		out->kind = out->typestr[1] != 'V' ? H5_TYPE_NUMBER : H5_TYPE_OTHER;
		break;
	case H5T_STRING:
		out->kind = H5_TYPE_STRING;
		out->str_pad = t->str_pad;
		break;
	case H5T_VLEN:
		out->kind = t->vlen_type == 1 ? H5_TYPE_VSTRING : H5_TYPE_OTHER;
		break;
	case H5T_OPAQUE:
		out->kind = H5_TYPE_OPAQUE;
		break;
	case H5T_COMPOUND:
		out->kind = H5_TYPE_COMPOUND;
		out->members = calloc(t->nmembers ? t->nmembers : 1, sizeof(*out->members));
		if (!out->members)
			return h5_err_set(H5_ERR_NOMEM, "out of memory");
		for (size_t i = 0; i < t->nmembers; i++) {
			out->nmembers++;
			rc = view_of(&out->members[i], t->members[i].type, depth + 1);
			if (rc < 0)
				return rc;
			out->members[i].name = t->members[i].name ? t->members[i].name : "";
			out->members[i].offset = t->members[i].offset;
		}
		break;
	case H5T_ARRAY:
		out->kind = H5_TYPE_ARRAY;
		out->arank = t->arank;
		memcpy(out->adims, t->adims, t->arank * sizeof(t->adims[0]));
		out->members = calloc(1, sizeof(*out->members));
		if (!out->members)
			return h5_err_set(H5_ERR_NOMEM, "out of memory");
		out->nmembers = 1;
		return view_of(&out->members[0], t->base, depth + 1);
	default:
		out->kind = H5_TYPE_OTHER;
		break;
	}
	return 0;
}

void h5_type_view_clear(h5_type_view *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nmembers; i++)
		h5_type_view_clear(&t->members[i]);
	free(t->members);
	free(t->typestr);
	memset(t, 0, sizeof(*t));
}

int h5_dataset_type(h5_type_view *out, const h5_dataset *d)
{
	int rc = view_of(out, d->dtype, 0);

	if (rc < 0)
		h5_type_view_clear(out);
	return rc;
}

struct attr_walk {
	h5_file *f;
	uint64_t addr;
	h5_attr_value_cb cb;
	void *ud;
};

static int attr_value_cb(const char *name, size_t name_len, void *ud)
{
	struct attr_walk *w = ud;
	h5_attr_msg m = { 0 };
	h5_type_view tv = { 0 };
	h5_attr_value v = { 0 };
	uint8_t *raw = NULL;
	size_t raw_len = 0;
	uint64_t n = 0;
	int rc;

	rc = h5_attr_find(&m, w->f, w->addr, name, name_len);
	if (rc < 0)
		goto out;
	rc = view_of(&tv, m.dtype, 0);
	if (rc < 0)
		goto out;
	rc = h5_dspace_nelmts(&m.space, &n);
	if (rc < 0)
		goto out;
	/* variable-length strings come from the global heap; other types
	 * holding variable-length data stay as stored (references into it) */
	if (tv.kind == H5_TYPE_VSTRING && n) {
		rc = h5_value_raw(&raw, &raw_len, w->f, m.dtype, m.data, m.data_size, n);
		if (rc < 0)
			goto out;
	} else if (tv.converted && n && m.data && m.dtype->size && m.data_size / m.dtype->size >= n) {
		/* n-bit numbers: their values, as the typestr says (dtype_conv.c) */
		raw_len = (size_t)n * m.dtype->size;
		if (!(raw = malloc(raw_len))) {
			rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
			goto out;
		}
		memcpy(raw, m.data, raw_len);
		rc = h5_dtype_conv_values(m.dtype, raw, raw_len);
		if (rc < 0)
			goto out;
	}
	v.name = name;
	v.name_len = name_len;
	v.type = &tv;
	v.null_space = m.space.type == H5_SPACE_NULL;
	v.rank = m.space.type == H5_SPACE_SIMPLE ? m.space.rank : 0;
	v.dims = m.space.dims;
	v.nelmts = n;
	v.data = raw ? raw : m.data;
	v.size = raw ? raw_len : m.data_size;
	if (!raw && n && m.dtype->size && (m.data_size / m.dtype->size < n || !m.data)) {
		rc = h5_err_set(H5_ERR_FORMAT, "attribute %.*s: %zu bytes for %llu elements", (int)name_len, name,
				m.data_size, (unsigned long long)n);
		goto out;
	}
	rc = w->cb(&v, w->ud);
out:
	free(raw);
	h5_type_view_clear(&tv);
	h5_attr_msg_clear(&m);
	return rc;
}

int h5_attr_iterate_values(h5_file *f, uint64_t addr, h5_attr_value_cb cb, void *ud)
{
	struct attr_walk w = { f, addr, cb, ud };

	return h5_attr_iterate_names(f, addr, attr_value_cb, &w);
}
