/*
 * attr.c - attributes (IV.A.2.m "Attribute Message") and their storage, and
 * their values.
 *
 * An object keeps its attributes either as Attribute messages in its own
 * header ("compact") or, once there are many or they are large, "dense": an
 * Attribute Info message (IV.A.2.v) names a fractal heap holding the
 * messages and a v2 B-tree of type 8 indexing them by the lookup3 hash of
 * the name (III.A.2). A message itself may be shared (flag bit 1 in the
 * header, or in the B-tree record): then its body is a shared message
 * reference resolved by h5_msg_read().
 *
 * Values are given as text (value.c) or as stored; what they are called
 * as extended attributes is the daemon's and tools' business
 * (src/common/xattrs.c).
 */
#include "base.h"
#include "rd.h"
#include "file.h"
#include "ohdr.h"
#include "dspace.h"
#include "dtype.h"
#include "attr.h"
#include "value.h"
#include "dense.h"

#include <stdio.h>

#define ATTR_FLAG_TYPE_SHARED 0x01
#define ATTR_FLAG_SPACE_SHARED 0x02
#define AINFO_TRACK_CORDER 0x01
#define AINFO_INDEX_CORDER 0x02

/* ---- the Attribute message ----------------------------------------------- */

void h5_attr_msg_clear(h5_attr_msg *a)
{
	free(a->name);
	h5_dtype_free(a->dtype);
	free(a->data);
	memset(a, 0, sizeof(*a));
}


int h5_attr_hdr_decode(h5_attr_hdr *h, const uint8_t *buf, size_t len)
{
	h5_rd r;
	size_t name_sz, dt_sz, ds_sz;

	memset(h, 0, sizeof(*h));
	h5_rd_init(&r, buf, len);
	h->version = h5_rd_u8(&r);
	h->flags = h5_rd_u8(&r);
	h->name_size = h5_rd_u16(&r);
	h->dt_size = h5_rd_u16(&r);
	h->ds_size = h5_rd_u16(&r);
	if (h->version == 3)
		h->cset = h5_rd_u8(&r);
	if (!h5_rd_ok(&r))
		return h5_err_set(H5_ERR_FORMAT, "attribute message: %zu bytes is too short", len);
	if (h->version < 1 || h->version > 3)
		return h5_err_set(H5_ERR_FORMAT, "attribute message: bad version %u", h->version);
	if (h->version == 1 ? h->flags != 0 : (h->flags & ~(ATTR_FLAG_TYPE_SHARED | ATTR_FLAG_SPACE_SHARED)))
		return h5_err_set(H5_ERR_FORMAT, "attribute message v%u: unknown flags 0x%02x", h->version, h->flags);
	if (h->version == 3 && h->cset > 1)
		return h5_err_set(H5_ERR_FORMAT, "attribute message: unknown name character set %u", h->cset);
	if (h->name_size == 0)
		return h5_err_set(H5_ERR_FORMAT, "attribute message: name size 0 (no room for its NUL)");
	name_sz = h->version == 1 ? (size_t)h5_align8(h->name_size) : h->name_size;
	dt_sz = h->version == 1 ? (size_t)h5_align8(h->dt_size) : h->dt_size;
	ds_sz = h->version == 1 ? (size_t)h5_align8(h->ds_size) : h->ds_size;
	h->name = h5_rd_bytes(&r, name_sz);
	h->dt = h5_rd_bytes(&r, dt_sz);
	h->ds = h5_rd_bytes(&r, ds_sz);
	if (!h5_rd_ok(&r))
		return h5_err_set(H5_ERR_FORMAT, "attribute message: name (%zu), datatype (%zu) and dataspace (%zu) "
				  "fields run past its %zu bytes", h->name_size, h->dt_size, h->ds_size, len);
	/* A NUL inside the name is kept (name_len counts it): such a name can
	 * be no xattr name, so the xattr list (src/common/xattrs.c) leaves it
	 * out, and the siblings of a hostile attribute stay readable. */
	if (h->name[h->name_size - 1] != '\0')
		return h5_err_set(H5_ERR_FORMAT, "attribute message: name of %zu bytes is not NUL-terminated",
				  h->name_size);
	h->data = buf + r.pos;
	h->data_left = h5_rd_left(&r);
	return 0;
}

/* The datatype or dataspace field, which for v2/v3 may be a shared message
 * reference (committed datatype, or the SOHM heap): resolved by
 * h5_msg_read() as if it were a shared header message of that type. */
static int attr_field(const uint8_t **data, size_t *len, void **owned, h5_file *f, uint16_t type,
		      bool shared, const uint8_t *p, size_t n)
{
	h5_msg m;

	*owned = NULL;
	if (!shared) {
		*data = p;
		*len = n;
		return 0;
	}
	if (!f)
		return h5_err_set(H5_ERR_INVAL, "attribute message: shared %s needs the file",
				  type == H5_MSG_DTYPE ? "datatype" : "dataspace");
	memset(&m, 0, sizeof(m));
	m.type = type;
	m.flags = H5_MSG_FLAG_SHARED;
	m.size = (uint32_t)n;
	m.data = p;
	m.addr = H5_ADDR_UNDEF;
	return h5_msg_read(data, len, owned, f, &m);
}

int h5_attr_decode(h5_attr_msg *out, h5_file *f, const h5_fmt *fmt, const uint8_t *buf, size_t len)
{
	const uint8_t *dt, *ds;
	size_t dt_len, ds_len;
	void *dt_owned = NULL, *ds_owned = NULL;
	uint64_t nelmts, size;
	h5_attr_hdr h;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = h5_attr_hdr_decode(&h, buf, len);
	if (rc < 0)
		return rc;
	out->cset = h.cset;
	out->name_len = h.name_size - 1;
	out->name = malloc(h.name_size);
	if (!out->name) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory decoding an attribute");
		goto out;
	}
	memcpy(out->name, h.name, h.name_size);

	rc = attr_field(&dt, &dt_len, &dt_owned, f, H5_MSG_DTYPE, h.flags & ATTR_FLAG_TYPE_SHARED, h.dt, h.dt_size);
	if (rc == 0)
		rc = h5_dtype_decode(&out->dtype, dt, dt_len, NULL);
	if (rc < 0) {
		h5_err_wrap(rc, "attribute \"%s\": datatype: ", out->name);
		goto out;
	}
	rc = attr_field(&ds, &ds_len, &ds_owned, f, H5_MSG_DSPACE, h.flags & ATTR_FLAG_SPACE_SHARED, h.ds, h.ds_size);
	if (rc == 0)
		rc = h5_dspace_decode(&out->space, fmt, ds, ds_len);
	if (rc == 0)
		rc = h5_dspace_nelmts(&out->space, &nelmts);
	if (rc < 0) {
		h5_err_wrap(rc, "attribute \"%s\": dataspace: ", out->name);
		goto out;
	}
	/* The data is exactly nelmts elements; v1 messages may carry padding. */
	if (h5_mul_overflow(nelmts, out->dtype->size, &size) || size > h.data_left) {
		rc = h5_err_set(H5_ERR_FORMAT, "attribute \"%s\": %llu elements of %u bytes do not fit in the %zu "
				"bytes left in its message", out->name, (unsigned long long)nelmts,
				out->dtype->size, h.data_left);
		goto out;
	}
	out->data_size = (size_t)size;
	out->data = malloc(size ? (size_t)size : 1);
	if (!out->data) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory for attribute \"%s\" (%llu bytes)", out->name,
				(unsigned long long)size);
		goto out;
	}
	memcpy(out->data, h.data, (size_t)size);
out:
	free(dt_owned);
	free(ds_owned);
	if (rc < 0)
		h5_attr_msg_clear(out);
	return rc;
}

/* ---- attribute storage of an object --------------------------------------- */

typedef struct ainfo {
	bool present;
	uint8_t flags;
	uint64_t fheap_addr, name_bt2_addr, corder_bt2_addr;
} ainfo;

/* IV.A.2.v: version 0, flags, [max creation index], heap, name index, [creation order index]. */
static int ainfo_get(ainfo *out, h5_file *f, const h5_ohdr *oh)
{
	const h5_msg *m = h5_ohdr_find(oh, H5_MSG_AINFO);
	const uint8_t *data;
	size_t len;
	void *owned = NULL;
	uint8_t version;
	h5_rd r;
	int rc;

	memset(out, 0, sizeof(*out));
	out->fheap_addr = out->name_bt2_addr = out->corder_bt2_addr = H5_ADDR_UNDEF;
	if (!m)
		return 0;
	rc = h5_msg_read(&data, &len, &owned, f, m);
	if (rc < 0)
		return h5_err_wrap(rc, "object 0x%llx: attribute info message: ", (unsigned long long)oh->addr);
	h5_rd_init(&r, data, len);
	version = h5_rd_u8(&r);
	out->flags = h5_rd_u8(&r);
	if (out->flags & AINFO_TRACK_CORDER)
		h5_rd_u16(&r);
	out->fheap_addr = h5_rd_addr(&r, &f->fmt);
	out->name_bt2_addr = h5_rd_addr(&r, &f->fmt);
	if (out->flags & AINFO_INDEX_CORDER)
		out->corder_bt2_addr = h5_rd_addr(&r, &f->fmt);
	free(owned);
	if (!h5_rd_ok(&r) || version != 0 || (out->flags & ~(AINFO_TRACK_CORDER | AINFO_INDEX_CORDER)))
		return h5_err_set(H5_ERR_FORMAT, "object 0x%llx: bad attribute info message (version %u, flags 0x%02x, "
				  "%zu bytes)", (unsigned long long)oh->addr, version, out->flags, len);
	if (h5_addr_defined(out->fheap_addr) != h5_addr_defined(out->name_bt2_addr))
		return h5_err_set(H5_ERR_FORMAT, "object 0x%llx: attribute info names a fractal heap or a name index "
				  "but not both", (unsigned long long)oh->addr);
	out->present = true;
	return 0;
}

static bool ainfo_dense(const ainfo *ai)
{
	return ai->present && h5_addr_defined(ai->fheap_addr);
}

/* The body of an Attribute message that may be a shared reference. */
static int attr_body(const uint8_t **data, size_t *len, void **owned, h5_file *f, const uint8_t *p, size_t n,
		     uint8_t msg_flags)
{
	h5_msg m;

	memset(&m, 0, sizeof(m));
	m.type = H5_MSG_ATTR;
	m.flags = msg_flags & H5_MSG_FLAG_SHARED;
	m.size = (uint32_t)n;
	m.data = p;
	m.addr = H5_ADDR_UNDEF;
	return h5_msg_read(data, len, owned, f, &m);
}

/* Dense storage (dense.c): the message a type 8 record points to; *owned
 * must be freed. */
static int dense_rec_body(const uint8_t **data, size_t *len, void **owned, h5_file *f, const h5_dense_rec *r)
{
	*owned = NULL;
	return attr_body(data, len, owned, f, r->obj, r->obj_len, r->flags);
}

static int dense_open(h5_dense *d, h5_file *f, const ainfo *ai)
{
	int rc = h5_dense_open(d, f, H5_DENSE_ATTRS, ai->fheap_addr, ai->name_bt2_addr);

	return rc < 0 ? h5_err_wrap(rc, "dense attribute storage: ") : 0;
}

int h5_attr_dense_blocks(h5_file *f, const h5_ohdr *oh, h5_block_cb cb, void *ud)
{
	ainfo ai;
	int rc = ainfo_get(&ai, f, oh);

	if (rc < 0 || !ainfo_dense(&ai))
		return rc;
	rc = h5_dense_blocks(f, H5_DENSE_ATTRS, ai.fheap_addr, ai.name_bt2_addr, ai.corder_bt2_addr, cb, ud);
	return rc < 0 ? h5_err_wrap(rc, "object 0x%llx: dense attribute storage: ", (unsigned long long)oh->addr)
		      : rc;
}

/* ---- listing names --------------------------------------------------------- */

typedef struct name_ent {
	char *name;
	size_t len;
	uint64_t corder;
} name_ent;

typedef struct name_list {
	name_ent *v;
	size_t n, cap;
	bool by_corder;
} name_list;

static void name_list_free(name_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].name);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

/* Add the name of the attribute message body (data, len). */
static int name_list_add(name_list *l, const uint8_t *data, size_t len, uint64_t corder)
{
	h5_attr_hdr h;
	int rc;

	rc = h5_attr_hdr_decode(&h, data, len);
	if (rc < 0)
		return rc;
	if (l->n == l->cap) {
		size_t ncap = l->cap ? l->cap * 2 : 16;
		name_ent *nv = realloc(l->v, ncap * sizeof(*nv));

		if (!nv)
			return h5_err_set(H5_ERR_NOMEM, "out of memory listing attributes");
		l->v = nv;
		l->cap = ncap;
	}
	l->v[l->n].name = malloc(h.name_size);
	if (!l->v[l->n].name)
		return h5_err_set(H5_ERR_NOMEM, "out of memory listing attributes");
	memcpy(l->v[l->n].name, h.name, h.name_size);
	l->v[l->n].len = h.name_size - 1;
	l->v[l->n].corder = corder;
	l->n++;
	return 0;
}

static int name_cmp(const void *a, const void *b)
{
	const name_ent *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->name, y->name, n);

	if (c)
		return c;
	return (x->len > y->len) - (x->len < y->len);
}

static int corder_cmp(const void *a, const void *b)
{
	const name_ent *x = a, *y = b;

	if (x->corder != y->corder)
		return x->corder < y->corder ? -1 : 1;
	return name_cmp(a, b);
}

struct dense_list_ctx {
	h5_file *f;
	name_list *l;
};

static int dense_list_cb(const h5_dense_rec *r, void *udp)
{
	struct dense_list_ctx *c = udp;
	const uint8_t *data;
	size_t dlen;
	void *owned = NULL;
	int rc;

	rc = dense_rec_body(&data, &dlen, &owned, c->f, r);
	if (rc == 0)
		rc = name_list_add(c->l, data, dlen, r->corder);
	free(owned);
	return rc;
}

/* Every attribute name of the object, sorted the way h5py lists them: by
 * creation order when it is tracked, else by name. */
static int collect_names(name_list *l, h5_file *f, const h5_ohdr *oh)
{
	ainfo ai;
	int rc;

	memset(l, 0, sizeof(*l));
	rc = ainfo_get(&ai, f, oh);
	if (rc < 0)
		return rc;
	l->by_corder = ai.present && (ai.flags & AINFO_TRACK_CORDER);
	for (size_t i = 0; i < oh->nmsgs; i++) {
		const h5_msg *m = &oh->msgs[i];
		const uint8_t *data;
		size_t len;
		void *owned = NULL;

		if (m->type != H5_MSG_ATTR)
			continue;
		rc = h5_msg_read(&data, &len, &owned, f, m);
		if (rc == 0)
			rc = name_list_add(l, data, len, m->crt_order);
		free(owned);
		if (rc < 0)
			return h5_err_wrap(rc, "object 0x%llx: attribute message at 0x%llx: ",
					   (unsigned long long)oh->addr, (unsigned long long)m->addr);
	}
	if (ainfo_dense(&ai)) {
		struct dense_list_ctx c = { f, l };
		h5_dense d;

		rc = dense_open(&d, f, &ai);
		if (rc < 0)
			return h5_err_wrap(rc, "object 0x%llx: ", (unsigned long long)oh->addr);
		rc = h5_dense_iterate(&d, dense_list_cb, &c);
		h5_dense_close(&d);
		if (rc < 0)
			return h5_err_wrap(rc, "object 0x%llx: ", (unsigned long long)oh->addr);
	}
	if (l->n > 1)
		qsort(l->v, l->n, sizeof(*l->v), l->by_corder ? corder_cmp : name_cmp);
	return 0;
}

int h5_attr_iterate_names(h5_file *f, uint64_t addr, h5_attr_name_cb cb, void *ud)
{
	h5_ohdr *oh = NULL;
	name_list l = { 0 };
	int rc;

	rc = h5_ohdr_get(&oh, f, addr);
	if (rc < 0)
		return rc;
	rc = collect_names(&l, f, oh);
	h5_ohdr_release(f, oh);
	for (size_t i = 0; rc == 0 && i < l.n; i++)
		rc = cb(l.v[i].name, l.v[i].len, ud);
	name_list_free(&l);
	return rc;
}

/* ---- finding one attribute ------------------------------------------------- */

struct dense_find_ctx {
	h5_file *f;
	const char *name;
	size_t name_len;
	h5_attr_msg *out;
};

/* A record with the right hash: decode its message; a different name is a
 * hash collision, so the search goes on. */
static int dense_find_found(const h5_dense_rec *r, void *udp)
{
	struct dense_find_ctx *c = udp;
	const uint8_t *data;
	size_t dlen;
	void *owned = NULL;
	h5_attr_hdr h;
	int rc;

	rc = dense_rec_body(&data, &dlen, &owned, c->f, r);
	if (rc == 0)
		rc = h5_attr_hdr_decode(&h, data, dlen);
	if (rc == 0 && (h.name_size - 1 != c->name_len || memcmp(h.name, c->name, c->name_len) != 0))
		rc = H5_ERR_NOTFOUND;
	else if (rc == 0)
		rc = h5_attr_decode(c->out, c->f, &c->f->fmt, data, dlen);
	free(owned);
	return rc;
}

static int find_in(h5_attr_msg *out, h5_file *f, const h5_ohdr *oh, const char *name, size_t name_len)
{
	ainfo ai;
	int rc;

	rc = ainfo_get(&ai, f, oh);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < oh->nmsgs; i++) {
		const h5_msg *m = &oh->msgs[i];
		const uint8_t *data;
		size_t len;
		void *owned = NULL;
		h5_attr_hdr h;

		if (m->type != H5_MSG_ATTR)
			continue;
		rc = h5_msg_read(&data, &len, &owned, f, m);
		/* bytes 2-3 of every version (IV.A.2.m) are the name's size,
		 * its NUL counted: a name of another length is passed by
		 * undecoded (own_detect looks three names up in each of the
		 * root's objects per create(2): a group of 2,000 attributes
		 * decoded 6,000 message headers a call, issue 82 item 2) */
		if (rc == 0 && len >= 4 && ((size_t)data[2] | (size_t)data[3] << 8) != name_len + 1) {
			free(owned);
			continue;
		}
		if (rc == 0)
			rc = h5_attr_hdr_decode(&h, data, len);
		if (rc == 0 && h.name_size - 1 == name_len && memcmp(h.name, name, name_len) == 0) {
			rc = h5_attr_decode(out, f, &f->fmt, data, len);
			free(owned);
			return rc;
		}
		free(owned);
		if (rc < 0)
			return h5_err_wrap(rc, "object 0x%llx: attribute message at 0x%llx: ",
					   (unsigned long long)oh->addr, (unsigned long long)m->addr);
	}
	if (ainfo_dense(&ai)) {
		struct dense_find_ctx c = { f, name, name_len, out };
		h5_dense d;

		rc = dense_open(&d, f, &ai);
		if (rc < 0)
			return rc;
		rc = h5_dense_find(&d, name, name_len, dense_find_found, &c);
		h5_dense_close(&d);
		if (rc != H5_ERR_NOTFOUND)
			return rc;
	}
	return h5_err_set(H5_ERR_NOTFOUND, "object 0x%llx has no attribute \"%.*s\"", (unsigned long long)oh->addr,
			  (int)(name_len > 200 ? 200 : name_len), name);
}

int h5_attr_find(h5_attr_msg *out, h5_file *f, uint64_t addr, const char *name, size_t name_len)
{
	h5_ohdr *oh = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = h5_ohdr_get(&oh, f, addr);
	if (rc < 0)
		return rc;
	rc = find_in(out, f, oh, name, name_len);
	h5_ohdr_release(f, oh);
	return rc;
}

/* h5_attr_which's answer for a header's compact attributes, kept with
 * the header (h5_ohdr.which): create(2) asks own_detect, which asks this
 * of each of the root's first objects; one of 2,000 attributes was a
 * pass over all of them per create (issue 82 item 2). The names asked
 * are kept whole, so another set of names is told apart exactly; the
 * first set asked of a header is the one kept. */
struct which_memo {
	uint32_t mask;
	size_t n, len;
	char names[];           /* the names, each with its NUL */
};

static bool which_memo_get(uint32_t *mask, const h5_ohdr *oh, const char *const *names, const size_t *lens,
			   size_t n)
{
	const struct which_memo *w = __atomic_load_n(&oh->which, __ATOMIC_ACQUIRE);
	size_t off = 0;

	if (!w || w->n != n)
		return false;
	for (size_t k = 0; k < n; k++) {
		if (w->len - off < lens[k] + 1 || memcmp(w->names + off, names[k], lens[k] + 1) != 0)
			return false;
		off += lens[k] + 1;
	}
	*mask = w->mask;
	return true;
}

static void which_memo_put(h5_ohdr *oh, const char *const *names, const size_t *lens, size_t n, uint32_t mask)
{
	struct which_memo *w;
	void *none = NULL;
	size_t len = 0, off = 0;

	for (size_t k = 0; k < n; k++)
		len += lens[k] + 1;
	w = malloc(sizeof(*w) + len);
	if (!w)
		return;         /* (only not kept) */
	w->mask = mask;
	w->n = n;
	w->len = len;
	for (size_t k = 0; k < n; k++) {
		memcpy(w->names + off, names[k], lens[k] + 1);
		off += lens[k] + 1;
	}
	if (!__atomic_compare_exchange_n(&oh->which, &none, w, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		free(w);        /* another set was kept first */
}

int h5_attr_which(uint32_t *mask, h5_file *f, uint64_t addr, const char *const *names, size_t n)
{
	h5_ohdr *oh = NULL;
	size_t lens[32];
	ainfo ai;
	bool known, shared = false;
	int rc;

	*mask = 0;
	if (n > 32)
		return h5_err_set(H5_ERR_INVAL, "h5_attr_which: %zu names (32 at most)", n);
	for (size_t k = 0; k < n; k++)
		lens[k] = strlen(names[k]);
	rc = h5_ohdr_get(&oh, f, addr);
	if (rc < 0)
		return rc;
	rc = ainfo_get(&ai, f, oh);
	known = rc == 0 && which_memo_get(mask, oh, names, lens, n);
	for (size_t i = 0; rc == 0 && !known && i < oh->nmsgs; i++) {
		const h5_msg *m = &oh->msgs[i];
		const uint8_t *data = NULL;
		size_t len = 0, size;
		void *owned = NULL;
		bool cand = false;
		h5_attr_hdr h;

		if (m->type != H5_MSG_ATTR)
			continue;
		/* (a shared message's bytes are elsewhere: not kept) */
		shared = shared || (m->flags & H5_MSG_FLAG_SHARED);
		rc = h5_msg_read(&data, &len, &owned, f, m);
		/* decoded only when its name size (where every version has it,
		 * as find_in) is one of the names' (or too short: the decoder
		 * says so) */
		if (rc == 0 && len >= 4) {
			size = (size_t)data[2] | (size_t)data[3] << 8;
			for (size_t k = 0; k < n; k++)
				cand = cand || lens[k] + 1 == size;
		} else if (rc == 0) {
			cand = true;
		}
		if (rc == 0 && cand)
			rc = h5_attr_hdr_decode(&h, data, len);
		for (size_t k = 0; rc == 0 && cand && k < n; k++)
			if (h.name_size - 1 == lens[k] && memcmp(h.name, names[k], lens[k]) == 0)
				*mask |= (uint32_t)1 << k;
		free(owned);
		if (rc < 0)
			rc = h5_err_wrap(rc, "object 0x%llx: attribute message at 0x%llx: ", (unsigned long long)oh->addr,
					 (unsigned long long)m->addr);
	}
	if (rc == 0 && !known && !shared)
		which_memo_put(oh, names, lens, n, *mask);
	for (size_t k = 0; rc == 0 && ainfo_dense(&ai) && k < n; k++) {
		h5_attr_msg a;

		if (*mask & ((uint32_t)1 << k))
			continue;
		memset(&a, 0, sizeof(a));
		rc = find_in(&a, f, oh, names[k], lens[k]);
		h5_attr_msg_clear(&a);
		if (rc == 0)
			*mask |= (uint32_t)1 << k;
		else if (rc == H5_ERR_NOTFOUND) {
			h5_err_clear();
			rc = 0;
		}
	}
	h5_ohdr_release(f, oh);
	return rc;
}

/* ---- values ------------------------------------------------------------------ */

/* The value of attribute a as h5_attr_value_get gives it. */
static int attr_value(void **out, size_t *len, h5_file *f, const h5_attr_msg *a, int raw)
{
	uint64_t nelmts = 0;
	int rc;

	rc = h5_dspace_nelmts(&a->space, &nelmts);
	if (rc == 0 && raw)
		rc = h5_value_raw((uint8_t **)out, len, f, a->dtype, a->data, a->data_size, nelmts);
	else if (rc == 0)
		rc = h5_value_text((char **)out, len, f, a->dtype, a->data, a->data_size, nelmts);
	if (rc < 0)
		h5_err_wrap(rc, "attribute \"%s\": ", a->name);
	return rc;
}

int h5_attr_value_get(void **out, size_t *len, h5_file *f, uint64_t addr, const char *name, size_t name_len,
		      int raw)
{
	h5_attr_msg a;
	int rc;

	*out = NULL;
	*len = 0;
	memset(&a, 0, sizeof(a));
	rc = h5_attr_find(&a, f, addr, name, name_len);
	if (rc < 0)
		return rc;
	rc = attr_value(out, len, f, &a, raw);
	h5_attr_msg_clear(&a);
	return rc;
}

/* ---- every attribute at once ---------------------------------------------------- */

void h5_attr_set_free(h5_attr_set *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++) {
		free((char *)s->v[i].name);
		free(s->v[i].val);
	}
	free(s->v);
	free(s);
}

int h5_attr_all(h5_attr_set **out, h5_file *f, uint64_t addr, int raw, size_t max_value, size_t max_attrs)
{
	h5_attr_set *s = NULL;
	h5_ohdr *oh = NULL;
	name_list l = { 0 };
	int rc;

	*out = NULL;
	rc = h5_ohdr_get(&oh, f, addr);
	if (rc < 0)
		return rc;
	rc = collect_names(&l, f, oh);
	if (rc < 0)
		goto out;
	if (l.n > max_attrs) {
		rc = h5_err_set(H5_ERR_LIMIT, "object 0x%llx has %zu attributes, more than %zu",
				(unsigned long long)addr, l.n, max_attrs);
		goto out;
	}
	s = calloc(1, sizeof(*s));
	if (s)
		s->v = calloc(l.n + 1, sizeof(*s->v));
	if (!s || !s->v) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory reading attributes");
		goto out;
	}
	for (size_t i = 0; i < l.n; i++) {
		h5_attr_ent *e = &s->v[s->n++];
		h5_attr_msg a;

		/* the list's name (NUL-terminated as stored) moves to the set */
		e->name = l.v[i].name;
		e->name_len = l.v[i].len;
		l.v[i].name = NULL;
		/* found as h5_attr_value_get finds it (the first of equal
		 * names); a value that fails or is too large is left for
		 * h5_attr_value_get, which says why */
		if (!memchr(e->name, 0, e->name_len) && find_in(&a, f, oh, e->name, e->name_len) == 0) {
			if (a.data_size <= max_value && attr_value(&e->val, &e->len, f, &a, raw) == 0 &&
			    e->len > max_value) {
				free(e->val);
				e->val = NULL;
			}
			if (!e->val)
				e->len = 0;
			h5_attr_msg_clear(&a);
		}
		h5_err_clear();
	}
	*out = s;
	s = NULL;
out:
	h5_ohdr_release(f, oh);
	name_list_free(&l);
	h5_attr_set_free(s);
	return rc;
}
