/* view.c - how a dataset's bytes are shown (h5core.h h5_view_ops): the
 * stored element bytes as they are ("raw", mapped by the layout into a
 * read plan, plan.c), or the elements of a type holding variable-length
 * data as text, one line per element ("text", vlen.c: heap references are
 * meaningless outside the file), or numbers stored at a bit offset or
 * precision as values of their container's type ("values",
 * format/dtype_conv.c: the bits are not what the typestr says). A daemon node holds its view; the
 * dataset itself has no notion of how it is shown. */
#include "layout_ops.h"
#include "vlen.h"
#include "value.h"
#include "dtype.h"

#include <stdint.h>
#include <string.h>

static uint64_t raw_size(const h5_dataset *d)
{
	return d->nbytes;
}

static int raw_read(h5_dataset *d, void *buf, uint64_t off, size_t len)
{
	uint64_t end;
	int rc;

	if (h5_add_overflow(off, len, &end) || end > d->nbytes)
		return h5_err_set(H5_ERR_INVAL, "read of %zu bytes at %llu is past the end of the dataset "
				  "(%llu bytes)", len, (unsigned long long)off, (unsigned long long)d->nbytes);
	if (len == 0)
		return 0;
	rc = h5_dataset_read_raw(d, buf, off, len);
	if (rc < 0)
		return h5_err_wrap(rc, "dataset at 0x%llx: ", (unsigned long long)d->addr);
	return 0;
}

const h5_view_ops h5_view_raw = {
	.name = "raw",
	.size = raw_size,
	.read = raw_read,
	.map = h5_plan_map_raw,
};

/* Whole elements are converted: the window widened to them, read into a
 * buffer of its own when it was not whole already. */
static int values_read(h5_dataset *d, void *buf, uint64_t off, size_t len)
{
	uint64_t es = d->dtype->size, a0, a1, end;
	uint8_t *tmp;
	int rc;

	if (h5_add_overflow(off, len, &end) || end > d->nbytes)
		return raw_read(d, buf, off, len);      /* (which says why) */
	if (len == 0)
		return 0;
	a0 = off - off % es;
	a1 = end % es ? end + (es - end % es) : end;
	if (a0 == off && a1 == end) {
		rc = raw_read(d, buf, off, len);
		return rc < 0 ? rc : h5_dtype_conv_values(d->dtype, buf, len);
	}
	if (a1 - a0 > SIZE_MAX || !(tmp = h5_buf_alloc((size_t)(a1 - a0))))
		return h5_err_set(H5_ERR_NOMEM, "out of memory for a read of %zu bytes", len);
	rc = raw_read(d, tmp, a0, (size_t)(a1 - a0));
	if (rc == 0)
		rc = h5_dtype_conv_values(d->dtype, tmp, (size_t)(a1 - a0));
	if (rc == 0)
		memcpy(buf, tmp + (off - a0), len);
	h5_buf_free(tmp);
	return rc;
}

/* Converted bytes are made, never stored as they are shown: a buffer. */
static int values_map(h5_read_plan *out, h5_dataset *d, uint64_t off, size_t len, unsigned flags)
{
	(void)flags;
	return h5_view_map_made(out, d, off, len, values_read);
}

const h5_view_ops h5_view_values = {
	.name = "values",
	.size = raw_size,
	.read = values_read,
	.map = values_map,
};

static uint64_t text_size(const h5_dataset *d)
{
	h5_vtext *vt;

	/* The text is measured once, under its own lock; the dataset is not
	 * changed otherwise (const is kept for every other field). */
	if (h5_vtext_ensure(&vt, (h5_dataset *)d) == 0)
		return h5_vtext_size(vt);
	/* Every element is at least its newline: a size the reads can reach,
	 * so they report the error instead of an empty file pretending. */
	return d->nelmts;
}

static int text_read(h5_dataset *d, void *buf, uint64_t off, size_t len)
{
	h5_vtext *vt;
	uint64_t end;
	int rc;

	rc = h5_vtext_ensure(&vt, d);
	if (rc < 0)
		return h5_err_wrap(rc, "dataset at 0x%llx: ", (unsigned long long)d->addr);
	if (h5_add_overflow(off, len, &end) || end > h5_vtext_size(vt))
		return h5_err_set(H5_ERR_INVAL, "read of %zu bytes at %llu is past the end of the dataset "
				  "(%llu bytes)", len, (unsigned long long)off,
				  (unsigned long long)h5_vtext_size(vt));
	if (len == 0)
		return 0;
	rc = h5_vtext_read(d, vt, buf, off, len);
	if (rc < 0)
		return h5_err_wrap(rc, "dataset at 0x%llx: ", (unsigned long long)d->addr);
	return 0;
}

int h5_view_map_made(h5_read_plan *out, h5_dataset *d, uint64_t off, size_t len,
		     int (*read)(h5_dataset *d, void *buf, uint64_t off, size_t len))
{
	int rc;

	h5_plan_init(out, d);
	if (len == 0)
		return read(d, NULL, off, 0);
	if (!h5_plan_buffer(out, len))
		return h5_err_set(H5_ERR_NOMEM, "out of memory for a read of %zu bytes", len);
	rc = read(d, out->buf, off, len);
	if (rc < 0)
		h5_read_plan_release(out);
	return rc;
}

/* Text is made, never stored: always a buffer. */
static int text_map(h5_read_plan *out, h5_dataset *d, uint64_t off, size_t len, unsigned flags)
{
	(void)flags;
	return h5_view_map_made(out, d, off, len, text_read);
}

const h5_view_ops h5_view_text = {
	.name = "text",
	.size = text_size,
	.read = text_read,
	.map = text_map,
};

const h5_view_ops *h5_dataset_view(const h5_dataset *d)
{
	return d->has_vlen ? &h5_view_text : d->conv ? &h5_view_values : &h5_view_raw;
}

const h5_view_ops *h5_dataset_values_view(const h5_dataset *d)
{
	return d->conv ? &h5_view_values : &h5_view_raw;
}

int h5_dataset_converted(const h5_dataset *d)
{
	return d->conv;
}

int h5_dataset_values(const h5_dataset *d, void *buf, size_t len)
{
	return d->conv ? h5_dtype_conv_values(d->dtype, buf, len) : 0;
}

uint64_t h5_dataset_size(const h5_dataset *d)
{
	return h5_dataset_view(d)->size(d);
}

int h5_dataset_read(h5_dataset *d, void *buf, uint64_t off, size_t len)
{
	return h5_dataset_view(d)->read(d, buf, off, len);
}

int h5_dataset_map(h5_read_plan *out, h5_dataset *d, uint64_t off, size_t len, unsigned flags)
{
	return h5_dataset_view(d)->map(out, d, off, len, flags);
}

void h5_dataset_set_view_state(h5_dataset *d, void *state, void (*fr)(void *))
{
	if (d->vstate_free)
		d->vstate_free(d->vstate);
	d->vstate = state;
	d->vstate_free = fr;
}

void *h5_dataset_view_state(const h5_dataset *d)
{
	return d->vstate;
}

int h5_dataset_shape(unsigned *rank, const uint64_t **dims, const h5_dataset *d)
{
	*rank = 0;
	*dims = NULL;
	if (d->space.type == H5_SPACE_NULL)
		return H5_SHAPE_NULL;
	if (d->space.type == H5_SPACE_SCALAR)
		return H5_SHAPE_SCALAR;
	*rank = d->space.rank;
	*dims = d->space.dims;
	return H5_SHAPE_SIMPLE;
}

int h5_dataset_elem_text(char **out, size_t *len, h5_dataset *d, int member, const uint8_t *elem)
{
	const h5_dtype *t = d->dtype;

	*out = NULL;
	*len = 0;
	if (member >= 0) {
		if (t->cls != H5T_COMPOUND || (size_t)member >= t->nmembers)
			return h5_err_set(H5_ERR_INVAL, "no member %d in the type of dataset at 0x%llx", member,
					  (unsigned long long)d->addr);
		elem += t->members[member].offset;
		t = t->members[member].type;
	}
	return h5_value_text(out, len, d->f, t, elem, t->size, 1);
}

/* The column's type: the element's (member -1) or a compound member's,
 * and its offset in the element; NULL for no such member. */
static const h5_dtype *column_type(const h5_dataset *d, int member, uint32_t *off)
{
	const h5_dtype *t = d->dtype;

	*off = 0;
	if (member < 0)
		return t;
	if (t->cls != H5T_COMPOUND || (size_t)member >= t->nmembers)
		return NULL;
	*off = t->members[member].offset;
	return t->members[member].type;
}

int h5_dataset_elem_parsable(const h5_dataset *d, int member)
{
	uint32_t off;
	const h5_dtype *t = column_type(d, member, &off);

	if (!t)
		return h5_err_set(H5_ERR_INVAL, "no member %d in the type of dataset at 0x%llx", member,
				  (unsigned long long)d->addr);
	if (!h5_value_cell_parsable(t) || (t->cls == H5T_INTEGER && (t->bit_offset || t->precision != t->size * 8)))
		return h5_err_set(H5_ERR_UNSUPPORTED, "%s%s%s of datatype class %d cannot be set from text",
				  member >= 0 ? "member " : "values", member >= 0 ? d->dtype->members[member].name : "",
				  member >= 0 ? "'s values" : "", (int)t->cls);
	return 0;
}

int h5_dataset_elem_parse(uint8_t *elem, const h5_dataset *d, int member, const char *text, size_t len)
{
	uint32_t off;
	const h5_dtype *t = column_type(d, member, &off);

	if (!t)
		return h5_err_set(H5_ERR_INVAL, "no member %d in the type of dataset at 0x%llx", member,
				  (unsigned long long)d->addr);
	return h5_value_parse_cell(elem + off, t, text, len);
}
