/* rename_keep.c - a rename over a dataset keeps what it replaces (issue
 * 71 item 4; man h5fs MODIFYING "replacements"): `sed -i` and editors
 * write the new text into a temporary file, which the mount makes a
 * growable 1-D uint8 dataset (link.c member_create), and rename it over
 * the original. Moved as it is, the bytes would replace a string or
 * number dataset with bytes and its attributes would go: a silent change
 * of type.
 *
 * So a byte dataset renamed over a dataset of another type is made a new
 * dataset of that type from its bytes, when they fit: variable-length
 * strings one per line (each ended by a newline, as the mount shows them:
 * a 1-D dataset takes any number of lines, a larger one as many as it
 * holds), numbers byte for byte when the sizes are equal (the same
 * shape). The replaced dataset's attributes are set on it, then it is
 * renamed over the original (one commit in a compact group: link.c's
 * crash states) and the temporary name removed. Anything that does not
 * fit (another count of lines, another size, a type or an attribute h5fs
 * cannot make again: compounds, references, dimension scales) is refused
 * with EPERM and a log line saying why, before anything is written: FILE
 * unchanged. The new dataset is contiguous: chunks, filters and the fill
 * value of the old one are not kept (type, shape and attributes are).
 *
 * Crash states: the original alone, with the temporary file; also a
 * dataset under the hidden name ".NAME.h5fs-keep" (the new one, its
 * attributes being set), which h5fs removes at the next such rename; the
 * new dataset under NAME with the temporary file; NAME alone. */
#include "member.h"
#include "npystream.h"
#include "retype.h"
#include "resize.h"

#include <inttypes.h>

#define KEEP_MAX ((uint64_t)256 << 20)    /* bytes of text or numbers read in memory at most */
#define KEEP_SUFFIX ".h5fs-keep"

/* The attribute copy: what each attribute of the replaced dataset is
 * made again as (a scalar string, or numbers of a NumPy type). */
struct keep_attrs {
	char why[200];            /* the first attribute h5fs cannot make again */
	size_t n;
};

static int attr_makeable(const h5_attr_value *a, void *ud)
{
	struct keep_attrs *k = ud;
	const h5_type_view *t = a->type;
	const char *ts = t->typestr ? t->typestr : "";

	k->n++;
	if (strlen(a->name) != a->name_len)
		snprintf(k->why, sizeof(k->why), "an attribute's name holds a NUL byte");
	else if (a->null_space)
		snprintf(k->why, sizeof(k->why), "attribute %s has no dataspace", a->name);
	else if (t->kind == H5_TYPE_VSTRING && a->rank == 0)
		return 0;
	else if (t->kind == H5_TYPE_STRING && a->rank == 0 && t->str_pad != 2)
		return 0;
	else if (t->kind == H5_TYPE_NUMBER && t->form == H5_FORM_PLAIN && strlen(ts) == 3 &&
		 strchr("<>|", ts[0]) && strchr("iuf", ts[1]) && strchr("1248", ts[2]) &&
		 (a->rank == 0 || (a->rank == 1 && a->nelmts > 1)))
		return 0;
	else
		snprintf(k->why, sizeof(k->why), "attribute %s is of a type or shape h5fs cannot make again (%s, rank %u)",
			 a->name, ts[0] ? ts : "no NumPy type", a->rank);
	return 1;       /* stop: refused */
}

struct copy_ctx {
	h5_file *f;
	uint64_t from, to;
	int rc;
};

static int attr_copy(const h5_attr_value *a, void *ud)
{
	struct copy_ctx *c = ud;
	const h5_type_view *t = a->type;

	if (t->kind == H5_TYPE_VSTRING) {
		size_t len = strnlen((const char *)a->data, a->size);

		/* a new name: a scalar variable-length UTF-8 string */
		c->rc = h5_attr_write(c->f, c->to, a->name, a->name_len, a->data, len, 0);
	} else if (t->kind == H5_TYPE_STRING) {
		size_t len = strnlen((const char *)a->data, a->size < t->size ? a->size : t->size);

		c->rc = h5_attr_create_str(c->f, c->to, a->name, a->name_len, (const char *)a->data, len, t->size,
					   t->str_pad == 0 ? H5_FSTR_NULLTERM : H5_FSTR_NULLPAD);
	} else {
		char *text = NULL;
		size_t len = 0;
		const char *ts = t->typestr[0] == '|' ? t->typestr + 1 : t->typestr;

		/* the text the xattr shows, which parses back to the same values */
		c->rc = h5_attr_value_get((void **)&text, &len, c->f, c->from, a->name, a->name_len, 0);
		if (c->rc == 0)
			c->rc = h5_attr_create_typed(c->f, c->to, a->name, a->name_len, ts, text, len);
		free(text);
	}
	return c->rc < 0;
}

/* keep_attrs_copy (npystream.h): rename_keep's check and copy, but the
 * attributes named in skip. */
struct skip_ctx {
	const char *const *skip;
	int (*fn)(const h5_attr_value *, void *);
	void *ud;
};

static int skipping(const h5_attr_value *a, void *ud)
{
	struct skip_ctx *s = ud;

	for (size_t i = 0; s->skip && s->skip[i]; i++)
		if (strlen(s->skip[i]) == a->name_len && memcmp(s->skip[i], a->name, a->name_len) == 0)
			return 0;
	return s->fn(a, s->ud);
}

int keep_attrs_copy(h5_file *f, uint64_t from, uint64_t to, const char *const *skip)
{
	struct keep_attrs ka = { "", 0 };
	struct skip_ctx s = { skip, attr_makeable, &ka };
	struct copy_ctx c = { f, from, to, 0 };
	int rc = h5_attr_iterate_values(f, from, skipping, &s);

	if (rc < 0)
		return rc;
	if (ka.why[0])
		return h5_err_set(H5_ERR_UNSUPPORTED, "%s", ka.why);
	s.fn = attr_copy;
	s.ud = &c;
	rc = h5_attr_iterate_values(f, from, skipping, &s);
	return rc < 0 ? rc : c.rc < 0 ? c.rc : 0;
}

/* The lines of text (n of them, each ended by a newline; a last one
 * without), as pointers into text: 0, or why not (a NUL byte). */
static const char *split_lines(const char ***s, size_t **l, size_t *n, const char *text, size_t len)
{
	size_t cap = 0;

	*s = NULL;
	*l = NULL;
	*n = 0;
	if (memchr(text, 0, len))
		return "the new text holds a NUL byte, which no string holds";
	for (size_t at = 0; at < len;) {
		const char *nl = memchr(text + at, '\n', len - at);
		size_t e = nl ? (size_t)(nl - text) : len;

		if (*n == cap) {
			size_t nc = cap ? cap * 2 : 64;
			const char **ns = realloc(*s, nc * sizeof(**s));
			size_t *nlv = ns ? realloc(*l, nc * sizeof(**l)) : NULL;

			if (ns)
				*s = ns;
			if (!ns || !nlv)
				return "out of memory";
			*l = nlv;
			cap = nc;
		}
		(*s)[*n] = text + at;
		(*l)[*n] = e - at;
		(*n)++;
		at = e + 1;
	}
	return NULL;
}

static uint64_t elements(const h5_dataset_info *di)
{
	uint64_t n = 1;

	for (unsigned i = 0; di->shape == H5_SHAPE_SIMPLE && i < di->rank; i++)
		n *= di->dims[i];
	return di->shape == H5_SHAPE_NULL ? 0 : n;
}

int keep_strings_make(uint64_t *made, uint64_t *count, h5_file *f, h5_dataset *sd, unsigned rank, const uint64_t *dims,
		      uint64_t grp, const char *name, size_t nlen)
{
	uint64_t size = h5_dataset_size(sd), want = 1;
	const char *why = NULL, **lines = NULL;
	size_t *lens = NULL, nlines = 0;
	h5_dset_new dn = { .rank = rank, .vstr = 1, .size = h5_file_vlen_size(f) };
	h5_dset_writer *w = NULL;
	uint8_t *el = NULL;
	char *buf = NULL;
	int rc = 0;

	*made = UINT64_MAX;
	*count = 0;
	if (size > KEEP_MAX || rank > sizeof(dn.dims) / sizeof(dn.dims[0]))
		return h5_err_set(H5_ERR_INVAL, "its text is over 256 MiB, or its shape of too many dimensions");
	if (!(buf = malloc(size ? (size_t)size : 1)))
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	if (size && h5_dataset_read(sd, buf, 0, (size_t)size) < 0)
		rc = h5_err_set(H5_ERR_IO, "its bytes not read: %s", h5_err_msg());
	if (rc == 0 && (why = split_lines(&lines, &lens, &nlines, buf, (size_t)size)) != NULL)
		rc = h5_err_set(H5_ERR_INVAL, "%s", why);
	for (unsigned i = 0; i < rank; i++)
		want *= dims[i];
	/* (1-D: as many strings as lines, as rename_keep makes them) */
	if (rc == 0 && rank != 1 && nlines != want)
		rc = h5_err_set(H5_ERR_INVAL, "its text has %zu lines, its shape holds %" PRIu64 " strings", nlines,
				want);
	memcpy(dn.dims, dims, rank * sizeof(*dims));
	if (rank == 1)
		dn.dims[0] = nlines;
	if (rc == 0)
		rc = h5_dset_writer_open(&w, f, &dn);
	if (rc == 0 && nlines && (rc = h5_dset_vstr_elements(&el, f, lines, lens, nlines)) == 0)
		rc = h5_dset_writer_put(w, 0, el, nlines * h5_file_vlen_size(f));
	if (rc == 0)
		rc = h5_dset_writer_commit(made, w, grp, name, nlen);
	if (rc == 0)
		*count = nlines;
	h5_dset_writer_free(w);
	free(el);
	free(lines);
	free(lens);
	free(buf);
	return rc;
}

int rename_keep(int *done, h5fs *fs, const struct use *nu, const struct node *p, uint64_t sgroup, const char *name,
		const h5_link *src, const struct node *np, const char *newname, const h5_link *dst)
{
	h5_file *f = nu->f;
	h5_dataset *sd = NULL, *dd = NULL;
	h5_dataset_info di = { 0 };
	h5_type_view st = { 0 }, dt = { 0 };
	h5_dset_new dn = { 0 };
	h5_dset_writer *w = NULL;
	h5_link old = { 0 };
	struct keep_attrs ka = { "", 0 };
	struct h5_gone *gone = NULL, *tmp_gone = NULL;
	const char *why = NULL, **lines = NULL;
	size_t *lens = NULL, nlines = 0, hlen;
	char *buf = NULL, *hidden = NULL;
	uint8_t *el = NULL;
	uint64_t size, made = UINT64_MAX;
	unsigned srank;
	const uint64_t *sdims;
	int e = 0, rc, have_di = 0, strings;

	*done = 0;
	if (src->type != H5_LINK_HARD || dst->type != H5_LINK_HARD || src->addr == dst->addr)
		return 0;
	/* the new bytes: a byte dataset, as a new file is made */
	if (h5_dataset_open(&sd, f, src->addr) < 0 || h5_dataset_shape(&srank, &sdims, sd) < 0 || srank != 1 ||
	    h5_dataset_type(&st, sd) < 0 || !st.typestr || strcmp(st.typestr, "|u1") != 0 ||
	    h5_dataset_open(&dd, f, dst->addr) < 0 || h5_dataset_type(&dt, dd) < 0 ||
	    h5_dataset_describe(&di, dd) < 0) {
		h5_err_clear();
		goto out;       /* not bytes over a dataset: an ordinary rename */
	}
	have_di = 1;
	if (dt.typestr && strcmp(dt.typestr, "|u1") == 0 && di.shape == H5_SHAPE_SIMPLE && di.rank == 1)
		goto out;       /* bytes over bytes: nothing to keep but the bytes */
	strings = dt.kind == H5_TYPE_VSTRING;
	size = h5_dataset_size(sd);
	if (!strings && !(dt.kind == H5_TYPE_NUMBER && dt.form == H5_FORM_PLAIN && dt.typestr &&
			  strlen(dt.typestr) == 3 && strchr("iuf", dt.typestr[1]))) {
		why = "its type is not one h5fs makes again from bytes (variable-length strings, integers and floats are)";
		goto refuse;
	}
	if (di.shape != H5_SHAPE_SIMPLE || di.rank == 0) {
		why = "it is a scalar or has no dataspace";
		goto refuse;
	}
	if (size > KEEP_MAX) {
		why = "the new bytes are over 256 MiB";
		goto refuse;
	}
	if (!strings && size != h5_dataset_size(dd)) {
		why = "the new bytes are not its size (its type and shape take exactly that many)";
		goto refuse;
	}
	h5_attr_iterate_values(f, dst->addr, attr_makeable, &ka);
	h5_err_clear();
	if (ka.why[0]) {
		why = ka.why;
		goto refuse;
	}
	if (!(buf = malloc(size ? (size_t)size : 1))) {
		e = ENOMEM;
		goto out;
	}
	if (size && h5_dataset_read(sd, buf, 0, (size_t)size) < 0) {
		e = h5err_logged(fs, H5_ERR_IO, "rename (keeping the replaced type)", np->path, newname, src->addr);
		goto out;
	}
	dn.rank = di.rank;
	memcpy(dn.dims, di.dims, sizeof(uint64_t) * di.rank);
	if (strings) {
		if ((why = split_lines(&lines, &lens, &nlines, buf, (size_t)size)) != NULL)
			goto refuse;
		if (di.rank == 1) {
			dn.dims[0] = nlines;
		} else if (nlines != elements(&di)) {
			snprintf(ka.why, sizeof(ka.why), "the new text has %zu lines, it holds %" PRIu64 " strings", nlines,
				 elements(&di));
			why = ka.why;
			goto refuse;
		}
		dn.vstr = 1;
		dn.size = h5_file_vlen_size(f);
	} else {
		dn.kind = dt.typestr[1];
		dn.size = dt.size;
		dn.big_endian = dt.typestr[0] == '>';
	}
	/* the new dataset under a hidden name first; one a crash left there
	 * is removed (nothing else makes such names) */
	hlen = strlen(newname) + 1 + strlen(KEEP_SUFFIX);
	if (!(hidden = malloc(hlen + 1))) {
		e = ENOMEM;
		goto out;
	}
	snprintf(hidden, hlen + 1, ".%s" KEEP_SUFFIX, newname);
	if (h5_group_lookup(&old, f, nu->addr, hidden) == 0 && h5_link_delete(f, nu->addr, hidden, hlen, 2) < 0) {
		why = "a dataset under its hidden name " KEEP_SUFFIX " could not be removed";
		goto refuse;
	}
	h5_err_clear();
	rc = h5_dset_writer_open(&w, f, &dn);
	if (rc == 0 && strings && nlines) {
		rc = h5_dset_vstr_elements(&el, f, lines, lens, nlines);
		if (rc == 0)
			rc = h5_dset_writer_put(w, 0, el, nlines * h5_file_vlen_size(f));
	} else if (rc == 0 && size) {
		rc = h5_dset_writer_put(w, 0, buf, (size_t)size);
	}
	if (rc == 0)
		rc = h5_dset_writer_commit(&made, w, nu->addr, hidden, hlen);
	if (rc == 0) {
		struct copy_ctx c = { f, dst->addr, made, 0 };

		rc = h5_attr_iterate_values(f, dst->addr, attr_copy, &c);
		if (rc == 0)
			rc = c.rc;
	}
	if (rc < 0) {
		e = h5err_logged(fs, rc, "rename (keeping the replaced type)", np->path, newname, dst->addr);
		if (made != UINT64_MAX && h5_link_delete(f, nu->addr, hidden, hlen, 2) < 0)
			h5_err_clear();
		goto out;
	}
	/* over the original (its storage freed once nothing reads it), then
	 * the temporary name */
	rc = h5_link_move_gone(f, nu->addr, hidden, hlen, nu->addr, newname, strlen(newname), &gone);
	if (rc == 0)
		rc = h5_link_delete_gone(f, sgroup, name, strlen(name), &tmp_gone);
	if (rc < 0) {
		e = h5err_logged(fs, rc, "rename (keeping the replaced type)", np->path, newname, dst->addr);
		goto out;
	}
	if (gone)
		gone_keep(fs, nu->g, f, dst->addr, gone);
	if (tmp_gone)
		gone_keep(fs, nu->g, f, src->addr, tmp_gone);
	synth_forget(fs, p->ino, name);
	synth_forget(fs, np->ino, newname);
	npy_inval_after_reply(fs, np->ino, newname, NULL);
	h5fs_log(fs, LOG_INFO, "%s/%s renamed over %s/%s: made %s %s again from its %s, its %zu attributes kept",
		 strcmp(p->path, "/") ? p->path : "", name, strcmp(np->path, "/") ? np->path : "", newname,
		 dt.typestr ? dt.typestr : "", strings ? "strings" : "numbers", strings ? "lines" : "bytes", ka.n);
	*done = 1;
	goto out;
refuse:
	h5fs_log(fs, LOG_NOTICE,
		 "rename %s/%s over %s/%s: EPERM: the new bytes would replace a %s dataset by bytes (|u1): %s; "
		 "nothing changed (remove %s first to replace it by bytes)",
		 strcmp(p->path, "/") ? p->path : "", name, strcmp(np->path, "/") ? np->path : "", newname,
		 dt.typestr ? dt.typestr : "typed", why, newname);
	e = EPERM;
out:
	h5_link_clear(&old);
	h5_dset_writer_free(w);
	free(el);
	free(lines);
	free(lens);
	free(buf);
	free(hidden);
	if (have_di)
		h5_dataset_info_clear(&di);
	h5_type_view_clear(&st);
	h5_type_view_clear(&dt);
	h5_dataset_close(sd);
	h5_dataset_close(dd);
	return e;
}
