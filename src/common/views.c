/* views.c - the kinds of views, their names, the NPY header, and the views
 * that are a prefix followed by the dataset's own bytes (NPY, TIFF, one
 * frame of a stack): reads past the prefix are the dataset's read plan
 * (spliced where it has plain bytes). views.h says what each is. */
#include "views.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
	const char *suffix, *name;
} kinds[] = {
	[VW_NONE] = { "", "" },
	[VW_NPY] = { ".npy", "npy" },
	[VW_CSV] = { ".csv", "csv" },
	[VW_TIFF] = { ".tiff", "tiff" },
	[VW_PNG] = { ".png", "png" },
	[VW_FRAMES] = { ".frames", "frames" },
	[VW_FRAME] = { "", "frame" },
};

enum vw_kind vw_kind_of_name(const char *name, size_t *base_len)
{
	size_t n = strlen(name);

	for (int k = VW_NPY; k <= VW_FRAMES; k++) {
		size_t s = strlen(kinds[k].suffix);

		if (n > s && memcmp(name + n - s, kinds[k].suffix, s) == 0) {
			*base_len = n - s;
			return (enum vw_kind)k;
		}
	}
	*base_len = n;
	return VW_NONE;
}

const char *vw_suffix(enum vw_kind k)
{
	return k >= VW_NONE && k <= VW_FRAME ? kinds[k].suffix : "";
}

const char *vw_name(enum vw_kind k)
{
	return k >= VW_NONE && k <= VW_FRAME ? kinds[k].name : "";
}

int vw_parse_list(unsigned *mask, const char *list)
{
	const char *p = list;

	*mask = 0;
	if (!list || !*list || strcmp(list, "all") == 0) {
		*mask = VW_LISTABLE;
		return 0;
	}
	while (*p) {
		size_t n = strcspn(p, ",:");
		int k, found = 0;

		for (k = VW_NPY; k <= VW_FRAMES; k++)
			if (strlen(kinds[k].name) == n && memcmp(p, kinds[k].name, n) == 0) {
				*mask |= VW_BIT(k);
				found = 1;
			}
		if (!found)
			return -1;
		p += n;
		if (*p)
			p++;
	}
	return 0;
}

/* ---- frames ------------------------------------------------------------------ */

static unsigned frame_digits(uint64_t n)
{
	unsigned d = 6;
	uint64_t lim = 1000000;

	/* the largest index is n - 1 */
	while (n > lim && d < 20) {
		d++;
		lim = lim > UINT64_MAX / 10 ? UINT64_MAX : lim * 10;
	}
	return d;
}

void vw_frame_name(char *buf, size_t size, uint64_t i, uint64_t n)
{
	snprintf(buf, size, "%0*llu.tiff", (int)frame_digits(n), (unsigned long long)i);
}

int vw_frame_index(uint64_t *i, const char *name, uint64_t n)
{
	unsigned d = frame_digits(n);
	uint64_t v = 0;
	size_t k;

	if (strlen(name) != d + 5 || strcmp(name + d, ".tiff") != 0)
		return -1;
	for (k = 0; k < d; k++) {
		if (name[k] < '0' || name[k] > '9' || v > (UINT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (uint64_t)(name[k] - '0');
	}
	if (v >= n)
		return -1;
	*i = v;
	return 0;
}

/* ---- the NPY header ---------------------------------------------------------- */

/* A Python string literal of n bytes (UTF-8 kept; *utf8 set when any). */
static int py_str(char **b, size_t *len, size_t *cap, const char *s, size_t n, bool *utf8)
{
	char tmp[8];
	int rc = vw_buf_put(b, len, cap, "'", 1);

	for (size_t i = 0; i < n && rc == 0; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '\'' || c == '\\') {
			tmp[0] = '\\';
			tmp[1] = (char)c;
			rc = vw_buf_put(b, len, cap, tmp, 2);
		} else if (c < 0x20 || c == 0x7f) {
			snprintf(tmp, sizeof(tmp), "\\x%02x", c);
			rc = vw_buf_put(b, len, cap, tmp, 4);
		} else {
			if (c >= 0x80)
				*utf8 = true;
			tmp[0] = (char)c;
			rc = vw_buf_put(b, len, cap, tmp, 1);
		}
	}
	return rc ? rc : vw_buf_put(b, len, cap, "'", 1);
}

static int put(char **b, size_t *len, size_t *cap, const char *s)
{
	return vw_buf_put(b, len, cap, s, strlen(s));
}

static int put_dims(char **b, size_t *len, size_t *cap, const uint64_t *d1, unsigned n1, const uint32_t *d2,
		    unsigned n2)
{
	char num[32];
	unsigned n = n1 + n2;
	int rc = put(b, len, cap, "(");

	for (unsigned i = 0; i < n && rc == 0; i++) {
		snprintf(num, sizeof(num), "%s%llu", i ? ", " : "",
			 (unsigned long long)(i < n1 ? d1[i] : d2[i - n1]));
		rc = put(b, len, cap, num);
	}
	if (rc == 0 && n == 1)
		rc = put(b, len, cap, ",");
	return rc ? rc : put(b, len, cap, ")");
}

static int cmp_member(const void *a, const void *b)
{
	const h5_type_view *x = *(const h5_type_view *const *)a, *y = *(const h5_type_view *const *)b;

	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static int descr_of(char **b, size_t *len, size_t *cap, const h5_type_view *t, bool *utf8, unsigned depth);

/* A compound's list: fields in offset order, gaps as ('', '|Vn'). */
static int descr_compound(char **b, size_t *len, size_t *cap, const h5_type_view *t, bool *utf8, unsigned depth)
{
	const h5_type_view **m = calloc(t->nmembers ? t->nmembers : 1, sizeof(*m));
	uint32_t at = 0;
	char pad[48];
	int rc = 0;

	if (!m)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < t->nmembers; i++)
		m[i] = &t->members[i];
	qsort(m, t->nmembers, sizeof(*m), cmp_member);
	rc = put(b, len, cap, "[");
	for (size_t i = 0; i < t->nmembers && rc == 0; i++) {
		const h5_type_view *f = m[i];

		if (f->offset < at || f->offset + (uint64_t)f->size > t->size) {
			rc = h5_err_set(H5_ERR_NOTFOUND, "overlapping compound members: no NumPy dtype");
			break;
		}
		if (f->offset > at) {
			snprintf(pad, sizeof(pad), "('', '|V%u'), ", (unsigned)(f->offset - at));
			rc = put(b, len, cap, pad);
		}
		if (rc == 0)
			rc = put(b, len, cap, "(");
		if (rc == 0)
			rc = py_str(b, len, cap, f->name ? f->name : "", f->name ? strlen(f->name) : 0, utf8);
		if (rc == 0)
			rc = put(b, len, cap, ", ");
		if (rc == 0 && f->kind == H5_TYPE_ARRAY) {
			const h5_type_view *base = f;
			uint32_t dims[64];
			unsigned nd = 0;

			while (base->kind == H5_TYPE_ARRAY && base->nmembers == 1 && nd + base->arank <= 64) {
				memcpy(dims + nd, base->adims, base->arank * sizeof(*dims));
				nd += base->arank;
				base = &base->members[0];
			}
			rc = descr_of(b, len, cap, base, utf8, depth + 1);
			if (rc == 0)
				rc = put(b, len, cap, ", ");
			if (rc == 0)
				rc = put_dims(b, len, cap, NULL, 0, dims, nd);
		} else if (rc == 0) {
			rc = descr_of(b, len, cap, f, utf8, depth + 1);
		}
		if (rc == 0)
			rc = put(b, len, cap, "), ");
		at = f->offset + f->size;
	}
	if (rc == 0 && at < t->size) {
		snprintf(pad, sizeof(pad), "('', '|V%u')", (unsigned)(t->size - at));
		rc = put(b, len, cap, pad);
	}
	if (rc == 0)
		rc = put(b, len, cap, "]");
	free(m);
	return rc;
}

static int descr_of(char **b, size_t *len, size_t *cap, const h5_type_view *t, bool *utf8, unsigned depth)
{
	if (depth > 32)
		return h5_err_set(H5_ERR_LIMIT, "type nested too deeply for NPY");
	if (t->kind == H5_TYPE_VSTRING || strchr(t->typestr, 'O'))
		return h5_err_set(H5_ERR_NOTFOUND, "variable-length data: no NPY");
	if (t->kind == H5_TYPE_COMPOUND)
		return descr_compound(b, len, cap, t, utf8, depth);
	if (t->kind == H5_TYPE_ARRAY)
		return h5_err_set(H5_ERR_NOTFOUND, "array type where NPY takes none");
	return py_str(b, len, cap, t->typestr, strlen(t->typestr), utf8);
}

int vw_npy_header(char **out, size_t *out_len, const h5_type_view *t, unsigned rank, const uint64_t *dims)
{
	const h5_type_view *base = t;
	uint32_t adims[64];
	unsigned nad = 0;
	char *b = NULL, *h = NULL;
	size_t len = 0, cap = 0, pre, total;
	bool utf8 = false;
	int rc;

	*out = NULL;
	*out_len = 0;
	/* an array type's dimensions join the shape (h5py reads it so) */
	while (base->kind == H5_TYPE_ARRAY && base->nmembers == 1 && nad + base->arank <= 64) {
		memcpy(adims + nad, base->adims, base->arank * sizeof(*adims));
		nad += base->arank;
		base = &base->members[0];
	}
	rc = put(&b, &len, &cap, "{'descr': ");
	if (rc == 0)
		rc = descr_of(&b, &len, &cap, base, &utf8, 0);
	if (rc == 0)
		rc = put(&b, &len, &cap, ", 'fortran_order': False, 'shape': ");
	if (rc == 0)
		rc = put_dims(&b, &len, &cap, dims, rank, adims, nad);
	if (rc == 0)
		rc = put(&b, &len, &cap, ", }");
	if (rc < 0)
		goto out;
	/* version 1.0 counts the header in 16 bits; 3.0 is 2.0 in UTF-8 */
	pre = len + 1 + 10 <= 65535 && !utf8 ? 10 : 12;
	total = (pre + len + 1 + 63) / 64 * 64;
	h = malloc(total);
	if (!h) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
		goto out;
	}
	memcpy(h, "\x93NUMPY", 6);
	h[6] = (char)(pre == 10 ? 1 : utf8 ? 3 : 2);
	h[7] = 0;
	{
		uint64_t hl = total - pre;

		for (size_t i = 0; i < pre - 8; i++)
			h[8 + i] = (char)(hl >> (8 * i));
	}
	memcpy(h + pre, b, len);
	memset(h + pre + len, ' ', total - pre - len - 1);
	h[total - 1] = '\n';
	*out = h;
	*out_len = total;
out:
	free(b);
	return rc;
}

/* ---- which views a dataset has ------------------------------------------------ */

/* A number TIFF holds: its sample bytes, SampleFormat and byte order. */
static bool tiff_sample(const h5_type_view *t, unsigned *bytes, unsigned *format, bool *be)
{
	char c;

	if (t->kind != H5_TYPE_NUMBER || !t->typestr || strlen(t->typestr) < 3)
		return false;
	c = t->typestr[1];
	if (t->size != 1 && t->size != 2 && t->size != 4 && t->size != 8)
		return false;
	*bytes = t->size;
	*be = t->typestr[0] == '>';
	switch (c) {
	case 'u':
	case 'b':
		*format = 1;
		return true;
	case 'i':
		*format = 2;
		return true;
	case 'f':
		*format = 3;
		return t->size >= 2;
	default:
		return false;
	}
}

struct shape {
	h5_type_view t;
	int kind;               /* h5_shape_kind */
	unsigned rank;
	const uint64_t *dims;
};

static int shape_of(struct shape *s, h5_dataset *d)
{
	int rc;

	memset(s, 0, sizeof(*s));
	rc = h5_dataset_type(&s->t, d);
	if (rc < 0)
		return rc;
	s->kind = h5_dataset_shape(&s->rank, &s->dims, d);
	return 0;
}

static bool npy_can(const struct shape *s)
{
	return s->kind != H5_SHAPE_NULL && !strchr(s->t.typestr, 'O');
}

static bool tiff_can(const struct shape *s, bool frames)
{
	unsigned b, f;
	bool be;

	if (s->kind != H5_SHAPE_SIMPLE || !tiff_sample(&s->t, &b, &f, &be))
		return false;
	if (frames)
		return s->rank == 3 && s->dims[1] && s->dims[2];
	return (s->rank == 2 && s->dims[0] && s->dims[1]) ||
	       (s->rank == 3 && s->dims[0] && s->dims[1] && s->dims[2]);
}

unsigned vw_kinds(h5_dataset *d)
{
	struct shape s;
	unsigned m = 0;

	if (shape_of(&s, d) < 0) {
		h5_err_clear();
		return 0;
	}
	if (npy_can(&s))
		m |= VW_BIT(VW_NPY);
	if (s.kind == H5_SHAPE_SIMPLE && vw_csv_can(&s.t, s.rank))
		m |= VW_BIT(VW_CSV);
	if (tiff_can(&s, false))
		m |= VW_BIT(VW_TIFF);
	if (tiff_can(&s, true))
		m |= VW_BIT(VW_FRAMES);
	if (s.kind == H5_SHAPE_SIMPLE && vw_png_can(&s.t, s.rank, s.dims))
		m |= VW_BIT(VW_PNG);
	h5_type_view_clear(&s.t);
	return m;
}

int vw_frame_count(uint64_t *n, h5_dataset *d)
{
	struct shape s;
	int rc = shape_of(&s, d);

	if (rc < 0)
		return rc;
	if (tiff_can(&s, true))
		*n = s.dims[0];
	else
		rc = h5_err_set(H5_ERR_NOTFOUND, "not an (N, H, W) stack of numbers");
	h5_type_view_clear(&s.t);
	return rc;
}

/* ---- a prefix, then the dataset's own bytes (NPY, TIFF, a frame) --------------- */

struct prefixed {
	enum vw_kind kind;
	uint8_t *hdr;           /* NPY: the header */
	struct vw_tiff tiff;    /* TIFF and frames */
	uint64_t prefix;        /* bytes before the data */
	uint64_t data_off;      /* where in the dataset's bytes the data start */
	uint64_t size;
};

static void prefixed_free(void *p)
{
	struct prefixed *v = p;

	if (v)
		free(v->hdr);
	free(v);
}

static uint64_t prefixed_size(const h5_dataset *d)
{
	const struct prefixed *v = h5_dataset_view_state(d);

	return v ? v->size : 0;
}

static int prefixed_read(h5_dataset *d, void *buf, uint64_t off, size_t len)
{
	const struct prefixed *v = h5_dataset_view_state(d);
	uint8_t *b = buf;
	size_t k = 0;
	int rc;

	if (!v || off > v->size || len > v->size - off)
		return h5_err_set(H5_ERR_INVAL, "read of %zu bytes at %llu is past the end of the view", len,
				  (unsigned long long)off);
	if (off < v->prefix) {
		k = v->prefix - off < len ? (size_t)(v->prefix - off) : len;
		if (v->kind == VW_NPY)
			memcpy(b, v->hdr + off, k);
		else if ((rc = vw_tiff_prefix(&v->tiff, b, off, k)) < 0)
			return rc;
	}
	if (k == len)
		return 0;
	return h5_dataset_values_view(d)->read(d, b + k, v->data_off + (off + k - v->prefix), len - k);
}

static int prefixed_map(h5_read_plan *out, h5_dataset *d, uint64_t off, size_t len, unsigned flags)
{
	const struct prefixed *v = h5_dataset_view_state(d);

	if (v && off >= v->prefix)  /* the dataset's own plan: splice, pins */
		return h5_dataset_values_view(d)->map(out, d, v->data_off + (off - v->prefix), len, flags);
	return h5_view_map_made(out, d, off, len, prefixed_read);
}

static const h5_view_ops prefixed_ops = {
	.name = "prefixed",
	.size = prefixed_size,
	.read = prefixed_read,
	.map = prefixed_map,
};

static int open_prefixed(struct prefixed *v, h5_dataset *d, const struct shape *s, uint64_t frame)
{
	unsigned bytes, format;
	uint64_t nbytes = h5_view_raw.size(d);
	bool be;
	int rc;

	if (v->kind == VW_NPY) {
		size_t hl;

		if (!npy_can(s))
			return h5_err_set(H5_ERR_NOTFOUND, "no NPY for this dataset");
		rc = vw_npy_header((char **)&v->hdr, &hl, &s->t, s->rank, s->dims);
		if (rc < 0)
			return rc;
		v->prefix = hl;
		v->size = hl + nbytes;
		return 0;
	}
	if (!tiff_can(s, v->kind == VW_FRAME) || !tiff_sample(&s->t, &bytes, &format, &be))
		return h5_err_set(H5_ERR_NOTFOUND, "no TIFF for this dataset");
	if (v->kind == VW_FRAME) {
		uint64_t page = s->dims[1] * s->dims[2] * bytes;

		if (frame >= s->dims[0])
			return h5_err_set(H5_ERR_NOTFOUND, "no frame %llu", (unsigned long long)frame);
		rc = vw_tiff_layout(&v->tiff, 1, s->dims[1], s->dims[2], bytes, format, be, false);
		v->data_off = frame * page;
	} else if (s->rank == 2) {
		rc = vw_tiff_layout(&v->tiff, 1, s->dims[0], s->dims[1], bytes, format, be, false);
	} else {
		rc = vw_tiff_layout(&v->tiff, s->dims[0], s->dims[1], s->dims[2], bytes, format, be, false);
	}
	if (rc < 0)
		return rc;
	v->prefix = v->tiff.prefix;
	v->size = v->tiff.size;
	return 0;
}

int vw_open(const h5_view_ops **ops, h5_dataset *d, enum vw_kind k, uint64_t frame)
{
	struct prefixed *v = NULL;
	struct shape s;
	int rc;

	*ops = NULL;
	rc = shape_of(&s, d);
	if (rc < 0)
		return rc;
	switch (k) {
	case VW_NPY:
	case VW_TIFF:
	case VW_FRAME:
		v = calloc(1, sizeof(*v));
		if (!v) {
			rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
			break;
		}
		v->kind = k;
		rc = open_prefixed(v, d, &s, frame);
		if (rc < 0) {
			prefixed_free(v);
			break;
		}
		h5_dataset_set_view_state(d, v, prefixed_free);
		*ops = &prefixed_ops;
		break;
	case VW_CSV:
		rc = s.kind == H5_SHAPE_SIMPLE && vw_csv_can(&s.t, s.rank)
			? vw_csv_open(ops, d, &s.t, s.rank, s.dims)
			: h5_err_set(H5_ERR_NOTFOUND, "no CSV for this dataset");
		break;
	case VW_PNG:
		rc = s.kind == H5_SHAPE_SIMPLE && vw_png_can(&s.t, s.rank, s.dims)
			? vw_png_open(ops, d, &s.t, s.rank, s.dims)
			: h5_err_set(H5_ERR_NOTFOUND, "no PNG for this dataset");
		break;
	default:
		rc = h5_err_set(H5_ERR_NOTFOUND, "no such view");
		break;
	}
	h5_type_view_clear(&s.t);
	return rc;
}
