/*
 * xattrs.c - HDF5 attributes and dataset metadata as extended attributes
 * (xattrs.h): the names, the vocabulary of the reserved user.h5.* keys and
 * their texts, built from what the engine gives (h5core.h).
 */
#include <config.h>

#include "xattrs.h"
#include "h5util.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Linux limit on an xattr name (XATTR_NAME_MAX): longer ones cannot be asked for. */
#define XATTR_NAME_MAX_LEN 255

#define XATTR_USER "user."
#define XATTR_RESERVED "user.h5."
#define XATTR_ESCAPED "user.h5.attr."

/* The reserved keys, in the order they are listed. */
static const char *const meta_keys[] = {
	"dtype", "shape", "maxshape", "chunks", "filters", "fill", "layout", "descr", "text"
};
#define NKEYS (sizeof(meta_keys) / sizeof(meta_keys[0]))

static bool has_prefix(const char *s, size_t len, const char *pfx)
{
	size_t n = strlen(pfx);

	return len >= n && memcmp(s, pfx, n) == 0;
}

/* ---- text: the string builder of h5util.h ---- */

/* name and its NUL appended to a NUL-separated list */
static int sb_add_name(h5_sb *b, const char *pfx, const char *name, size_t len)
{
	int rc = h5_sb_puts(b, pfx);

	if (rc == 0)
		rc = h5_sb_put(b, name, len);
	if (rc == 0)
		b->len++;       /* keep the NUL h5_sb_put wrote */
	return rc;
}

/* ---- names ------------------------------------------------------------------ */

/* xattr name of attribute NAME: user.NAME, or user.h5.attr.NAME for names
 * in the reserved "h5." space. */
static const char *attr_prefix(const char *name, size_t len)
{
	return has_prefix(name, len, "h5.") ? XATTR_ESCAPED : XATTR_USER;
}

/* Is attribute NAME listed (and so readable back) as an xattr? An empty
 * name ("user.") or one beyond the kernel's xattr name limit could be
 * listed but never read back: left out. */
static bool listable(const char *name, size_t len)
{
	return len != 0 && !memchr(name, 0, len) && strlen(attr_prefix(name, len)) + len <= XATTR_NAME_MAX_LEN;
}

/* ---- user.h5.* texts --------------------------------------------------------- */

static int put_dims(h5_sb *b, unsigned rank, const uint64_t *dims)
{
	int rc = 0;

	for (unsigned i = 0; i < rank && rc == 0; i++) {
		if (dims[i] == UINT64_MAX)
			rc = h5_sb_printf(b, "%sinf", i ? "," : "");
		else
			rc = h5_sb_printf(b, "%s%llu", i ? "," : "", (unsigned long long)dims[i]);
	}
	return rc;
}

/* The names NumPy users know these by (ml_dtypes: bfloat16, float8_e4m3fn,
 * float8_e5m2; a pair of halves is PyTorch's complex32). */
const char *xa_form_name(h5_num_form form)
{
	switch (form) {
	case H5_FORM_BFLOAT16: return "bfloat16";
	case H5_FORM_FLOAT8_E4M3: return "float8_e4m3fn";
	case H5_FORM_FLOAT8_E5M2: return "float8_e5m2";
	case H5_FORM_COMPLEX_HALF: return "complex32";
	case H5_FORM_FLOAT6_E2M3: return "float6_e2m3fn";
	case H5_FORM_FLOAT6_E3M2: return "float6_e3m2fn";
	case H5_FORM_FLOAT4_E2M1: return "float4_e2m1fn";
	default: return NULL;
	}
}

/* A text the engine made: its outcome as ours. */
static int put_text(h5_sb *b, const h5_meta_text *t)
{
	if (t->rc == H5_ERR_NOTFOUND)
		return H5_ERR_NOTFOUND;
	if (t->rc < 0)
		return h5_err_set(t->rc, "%s", t->msg ? t->msg : h5_err_name(t->rc));
	return h5_sb_put(b, t->text, t->len);
}

/* One key's value into b; H5_ERR_NOTFOUND when it does not apply. */
static int meta_value(h5_sb *b, const h5_dset_meta *m, const char *key)
{
	int rc;

	/* A type holding variable-length data reads as text: there is no
	 * element layout to describe, whatever the outer class. */
	if (strcmp(key, "dtype") == 0) {
		if (m->has_vlen)
			return h5_sb_puts(b, "|O");
		if (m->form != H5_FORM_PLAIN && m->typestr.rc == 0)
			return h5_sb_puts(b, xa_form_name(m->form));
		return put_text(b, &m->typestr);
	}
	if (strcmp(key, "text") == 0) {
		if (!m->has_vlen)
			return H5_ERR_NOTFOUND;
		return h5_sb_puts(b, m->vlen_strings ? "strings" : "values");
	}
	if (strcmp(key, "shape") == 0 || strcmp(key, "maxshape") == 0) {
		if (m->shape == H5_SHAPE_NULL)
			return h5_sb_puts(b, "null");
		if (m->shape == H5_SHAPE_SCALAR)
			return h5_sb_put(b, "", 0);
		return put_dims(b, m->rank, key[0] == 's' ? m->dims : m->maxdims);
	}
	if (strcmp(key, "chunks") == 0) {
		if (!m->chunk)
			return H5_ERR_NOTFOUND;
		return put_dims(b, m->chunk_rank, m->chunk);
	}
	if (strcmp(key, "filters") == 0) {
		if (m->nfilters == 0)
			return H5_ERR_NOTFOUND;
		for (size_t i = 0; i < m->nfilters; i++) {
			rc = i ? h5_sb_put(b, ",", 1) : 0;
			if (rc == 0)
				rc = m->filters[i].name ? h5_sb_puts(b, m->filters[i].name)
							: h5_sb_printf(b, "%u", m->filters[i].id);
			if (rc < 0)
				return rc;
		}
		return 0;
	}
	if (strcmp(key, "fill") == 0)
		return put_text(b, &m->fill);
	if (strcmp(key, "layout") == 0) {
		if (m->external)
			return h5_sb_puts(b, "external");
		if (m->chunk)
			return h5_sb_printf(b, "chunked:%s", m->index);
		if (strcmp(m->layout, "unknown") == 0)
			return h5_sb_printf(b, "class%u", m->layout_class);
		return h5_sb_puts(b, m->layout);
	}
	if (strcmp(key, "descr") == 0)
		return put_text(b, &m->descr);
	return H5_ERR_NOTFOUND;
}

/* The keys that apply to the dataset m, with their values (val[i] of
 * len[i] bytes, malloc'd): a listing leaves out a value too large or
 * impossible to show, so the other keys stay visible; asking for it
 * (xa_get) reports why. */
typedef struct meta_vals {
	size_t n;
	const char *key[NKEYS];
	char *val[NKEYS];
	size_t len[NKEYS];
} meta_vals;

static void meta_vals_clear(meta_vals *v)
{
	for (size_t i = 0; i < v->n; i++)
		free(v->val[i]);
	memset(v, 0, sizeof(*v));
}

static int meta_vals_get(meta_vals *out, const h5_dset_meta *m)
{
	int rc = 0;

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; m->is_dataset && i < NKEYS; i++) {
		h5_sb b = { 0 };

		rc = meta_value(&b, m, meta_keys[i]);
		if (rc == 0 && !b.p)
			rc = h5_sb_put(&b, "", 0);
		if (rc == 0) {
			out->key[out->n] = meta_keys[i];
			out->val[out->n] = b.p;
			out->len[out->n++] = b.len;
			continue;
		}
		free(b.p);
		if (rc == H5_ERR_NOTFOUND || rc == H5_ERR_LIMIT || rc == H5_ERR_UNSUPPORTED) {
			h5_err_clear();
			rc = 0;
			continue;
		}
		h5_err_wrap(rc, "user.h5.%s: ", meta_keys[i]);
		meta_vals_clear(out);
		break;
	}
	return rc;
}

/* ---- the list ------------------------------------------------------------------ */

static int names_cb(const char *name, size_t len, void *ud)
{
	return listable(name, len) ? sb_add_name(ud, attr_prefix(name, len), name, len) : 0;
}

int xa_list(char **out, size_t *len, h5_file *f, uint64_t addr)
{
	h5_dset_meta m;
	meta_vals mv = { 0 };
	h5_sb b = { 0 };
	int rc;

	*out = NULL;
	*len = 0;
	/* which keys apply does not depend on a virtual dataset's sources */
	rc = h5_dataset_meta(&m, f, addr, 0);
	if (rc < 0)
		return rc;
	rc = meta_vals_get(&mv, &m);
	for (size_t i = 0; rc == 0 && i < mv.n; i++)
		rc = sb_add_name(&b, XATTR_RESERVED, mv.key[i], strlen(mv.key[i]));
	if (rc == 0)
		rc = h5_attr_iterate_names(f, addr, names_cb, &b);
	/* no names: still a buffer, so callers need not special-case it */
	if (rc == 0 && !b.p && !(b.p = malloc(1)))
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory listing extended attributes");
	meta_vals_clear(&mv);
	h5_dataset_meta_clear(&m);
	if (rc < 0) {
		free(b.p);
		return rc;
	}
	*out = b.p;
	*len = b.len;
	return 0;
}

/* ---- one value ----------------------------------------------------------------- */

static int dup_value(void **out, size_t *len, const void *p, size_t n)
{
	char *c = malloc(n + 1);

	if (!c)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	memcpy(c, p, n);
	c[n] = '\0';
	*out = c;
	*len = n;
	return 0;
}

/* user.h5.KEY of the object at addr */
static int meta_get(void **out, size_t *len, h5_file *f, uint64_t addr, const char *key)
{
	h5_dset_meta m;
	h5_sb b = { 0 };
	size_t i;
	int rc;

	for (i = 0; i < NKEYS && strcmp(key, meta_keys[i]) != 0; i++)
		;
	if (i == NKEYS)
		return h5_err_set(H5_ERR_NOTFOUND, "no reserved attribute user.h5.%s", key);
	/* a virtual dataset's shape is what its sources give it now */
	rc = h5_dataset_meta(&m, f, addr, strcmp(key, "shape") == 0);
	if (rc < 0)
		return rc;
	if (!m.is_dataset) {
		rc = h5_err_set(H5_ERR_NOTFOUND, "object 0x%llx is not a dataset: no user.h5.%s",
				(unsigned long long)addr, key);
		goto out;
	}
	rc = meta_value(&b, &m, key);
	if (rc == H5_ERR_NOTFOUND)
		rc = h5_err_set(H5_ERR_NOTFOUND, "user.h5.%s does not apply to dataset 0x%llx", key,
				(unsigned long long)addr);
	else if (rc < 0)
		h5_err_wrap(rc, "user.h5.%s: ", key);
	if (rc == 0)
		rc = dup_value(out, len, b.p ? b.p : "", b.len);
out:
	free(b.p);
	h5_dataset_meta_clear(&m);
	return rc;
}

int xa_get(void **out, size_t *len, h5_file *f, uint64_t addr, const char *name, int raw)
{
	size_t nlen = strlen(name);
	const char *aname;

	*out = NULL;
	*len = 0;
	if (has_prefix(name, nlen, XATTR_ESCAPED) &&
	    has_prefix(name + strlen(XATTR_ESCAPED), nlen - strlen(XATTR_ESCAPED), "h5."))
		aname = name + strlen(XATTR_ESCAPED);
	else if (has_prefix(name, nlen, XATTR_RESERVED))
		return meta_get(out, len, f, addr, name + strlen(XATTR_RESERVED));
	else if (has_prefix(name, nlen, XATTR_USER))
		aname = name + strlen(XATTR_USER);
	else
		return h5_err_set(H5_ERR_NOTFOUND, "no extended attribute \"%s\" (HDF5 attributes are user.*)",
				  name);
	return h5_attr_value_get(out, len, f, addr, aname, strlen(aname), raw);
}

/* ---- every xattr at once ---------------------------------------------------------- */

void xa_set_free(xa_set *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i].val);
	free(s->v);
	free(s->list);
	free(s);
}

/* Entry n of s: the name at *pos of s->list, and the value (owned) or
 * NULL; *pos moves to the next name. */
static void set_entry(xa_set *s, size_t *pos, void *val, size_t len)
{
	xa_ent *e = &s->v[s->n++];

	e->name = s->list + *pos;
	e->val = val;
	e->len = val ? len : 0;
	*pos += strlen(e->name) + 1;
	s->bytes += sizeof(*e) + (val ? len + 1 : 0);
}

int xa_all(xa_set **out, h5_file *f, uint64_t addr, int raw, size_t max_value, size_t max_names)
{
	h5_attr_set *as = NULL;
	meta_vals mv = { 0 };
	h5_dset_meta m;
	xa_set *s = NULL;
	h5_sb b = { 0 };
	size_t pos = 0;
	int rc;

	*out = NULL;
	/* a virtual dataset's shape is left to xa_get: it depends on its
	 * sources, not FILE alone, so the stored one does for the list */
	rc = h5_dataset_meta(&m, f, addr, 0);
	if (rc < 0)
		return rc;
	rc = meta_vals_get(&mv, &m);
	if (rc < 0)
		goto out;
	if (mv.n > max_names) {
		rc = h5_err_set(H5_ERR_LIMIT, "object 0x%llx has %zu xattrs, more than %zu", (unsigned long long)addr,
				mv.n, max_names);
		goto out;
	}
	rc = h5_attr_all(&as, f, addr, raw, max_value, max_names - mv.n);
	if (rc < 0)
		goto out;
	for (size_t i = 0; rc == 0 && i < mv.n; i++)
		rc = sb_add_name(&b, XATTR_RESERVED, mv.key[i], strlen(mv.key[i]));
	for (size_t i = 0; rc == 0 && i < as->n; i++)
		if (listable(as->v[i].name, as->v[i].name_len))
			rc = sb_add_name(&b, attr_prefix(as->v[i].name, as->v[i].name_len), as->v[i].name,
					   as->v[i].name_len);
	if (rc == 0 && !b.p && !(b.p = malloc(1)))
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory listing extended attributes");
	if (rc < 0)
		goto out;
	s = calloc(1, sizeof(*s));
	if (s)
		s->v = calloc(mv.n + as->n + 1, sizeof(*s->v));
	if (!s || !s->v) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory reading extended attributes");
		goto out;
	}
	s->list = b.p;
	s->list_len = b.len;
	s->bytes = sizeof(*s) + b.len;
	b.p = NULL;
	for (size_t i = 0; i < mv.n; i++) {
		bool volatile_val = m.is_virtual && strcmp(mv.key[i], "shape") == 0;
		void *val = NULL;
		size_t len = 0;

		if (!volatile_val && mv.len[i] <= max_value) {
			/* the text moves to the set */
			val = mv.val[i];
			len = mv.len[i];
			mv.val[i] = NULL;
		}
		set_entry(s, &pos, val, len);
	}
	for (size_t i = 0; i < as->n; i++) {
		h5_attr_ent *e = &as->v[i];

		if (!listable(e->name, e->name_len))
			continue;
		set_entry(s, &pos, e->val, e->len);
		e->val = NULL;
	}
	*out = s;
	s = NULL;
out:
	h5_attr_set_free(as);
	meta_vals_clear(&mv);
	h5_dataset_meta_clear(&m);
	free(b.p);
	xa_set_free(s);
	return rc;
}

/* ---- names written ----------------------------------------------------------- */

bool xa_meta_key(const char *key)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (strcmp(key, meta_keys[i]) == 0)
			return true;
	return false;
}

#define XATTR_NEW "user.h5.new."

enum xa_write_kind xa_write_name(const char *name, char attr[256], size_t *len, char typestr[8])
{
	size_t n = strlen(name);
	const char *a;

	attr[0] = '\0';
	*len = 0;
	typestr[0] = '\0';
	if (n > XATTR_NAME_MAX_LEN)
		return XA_W_OTHER;
	if (has_prefix(name, n, XATTR_ESCAPED)) {
		/* user.h5.attr.h5.X, as attribute h5.X is listed, is that
		 * attribute (a copy sets back what it listed: issue 83 item
		 * 3); user.h5.attr.X, X not starting "h5.", is h5.X too */
		a = name + strlen(XATTR_ESCAPED);
		*len = (size_t)snprintf(attr, 256, "%s%s", has_prefix(a, strlen(a), "h5.") ? "" : "h5.", a);
		return *len > 3 ? XA_W_ATTR : XA_W_OTHER;
	}
	if (has_prefix(name, n, XATTR_NEW)) {
		const char *t = name + strlen(XATTR_NEW), *dot = strchr(t, '.');

		if (!dot || dot == t || (size_t)(dot - t) >= 8 || !dot[1])
			return XA_W_OTHER;
		memcpy(typestr, t, (size_t)(dot - t));
		typestr[dot - t] = '\0';
		*len = (size_t)snprintf(attr, 256, "%s", dot + 1);
		return XA_W_TYPED;
	}
	if (has_prefix(name, n, XATTR_RESERVED))
		return XA_W_RESERVED;
	if (!has_prefix(name, n, XATTR_USER) || n == strlen(XATTR_USER))
		return XA_W_OTHER;
	*len = (size_t)snprintf(attr, 256, "%s", name + strlen(XATTR_USER));
	return XA_W_ATTR;
}
