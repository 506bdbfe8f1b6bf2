/* npy.c - np.save through a read-write mount (issue 32 item 2; man h5fs
 * MODIFYING, doc/MODIFY.md "New datasets").
 *
 * create(2) of NAME.npy (member_create) makes what the kernel needs to
 * write to: a placeholder, an empty growable uint8 dataset named NAME.npy,
 * registered here. The handle that opens it writes an NPY stream
 * (src/common/npy.c): its first bytes are kept until the header parses
 * (format 1.0, 2.0 or 3.0; numeric dtypes, C order), which gives the
 * dtype and shape; the data's space is then taken at once and filled in
 * order (write/dset_create.c h5_dset_writer). When the last byte is in,
 * the flush of close (or fsync) makes dataset NAME (one commit: header and
 * link after the data) and removes the placeholder (a second commit):
 * `ls` shows NAME, np.load(NAME.npy) of a view of it, h5py f["NAME"].
 *
 * A crash leaves the placeholder alone (an empty dataset NAME.npy), or
 * it and NAME, or NAME: never a dataset with bytes missing. Every dtype
 * h5py stores is stored as h5py does (numbers, bool, complex, bytes S<n>,
 * structured dtypes: the engine's descr, write/dset_create.c); a
 * Fortran-ordered array (at most 256 MiB) is kept till its last byte and
 * written in C order. A stream that ends early, or an NPY h5fs does not
 * take (objects, unicode, datetimes: what h5py cannot store either) makes
 * nothing: the write or close fails (EINVAL, EOPNOTSUPP) with one log
 * line and the placeholder goes. A stream that is no NPY is its bytes
 * (npy_demote). */
#include "commit.h"
#include "npy.h"
#include "npystream.h"
#include "owner.h"

#include "npy_int.h"

/* ---- np.save's streams, a kind of the commit layer (commit/sched.c) ----
 * A stream's bytes go to their place in FILE as they come, before the
 * write that brings them is answered (a full disk is that write's
 * ENOSPC: nothing answered waits for space; not reserved through
 * h5_file_reserve: see doc/DESIGN.md "The commit layer"). Nothing is
 * kept but the header's
 * first bytes, or a Fortran-ordered or unicode array (FORTRAN_MAX at
 * most), so the kind has no bound of bytes (max_bytes 0). What is pending
 * is a stream whose every byte is in and whose dataset is not made yet:
 * its descriptor's close or fsync makes it (npy_flush), or this kind
 * NPY_IDLE_MS after its last byte when the descriptor stays open (FILE's
 * lock, which the stream holds from its header on, then given back), and
 * every sync (fs_meta_sync: COMMIT_STREAMS) at once. A stream's own
 * failure stays its own (told by its descriptor's close), never a
 * barrier's or a sync's. */
#define NPY_IDLE_MS 1000

struct npy_kind {
	struct commit_slot t;   /* t.mu: the list, the counts */
	struct npy_stream *open;        /* taken, not released or demoted */
	size_t complete;        /* of them counted */
};

/* Every counted stream's dataset made (t.mu held). */
static void kind_make(struct npy_kind *k)
{
	for (struct npy_stream *s = k->open; s && k->complete; s = s->knext) {
		if (!s->counted)
			continue;
		s->counted = false;
		k->complete--;
		(void)npy_flush(k->t.fs, s, false);       /* (its error: s->err, its close's) */
	}
}

static size_t kind_count(void *owner)
{
	return ((struct npy_kind *)owner)->complete;
}

static int kind_commit(void *owner)
{
	kind_make(owner);
	return 0;
}

static int kind_flush(void *owner)
{
	struct npy_kind *k = owner;

	pthread_mutex_lock(&k->t.mu);
	kind_make(k);
	pthread_mutex_unlock(&k->t.mu);
	return 0;
}

static int kind_admit(h5fs *fs, const struct commit_ask *q);

const struct commit_kind npy_kind_desc = {
	.name = "np.save streams", .key = "STREAMS", .bit = COMMIT_STREAMS,
	.policy = { .idle_ms = NPY_IDLE_MS, .max_ms = NPY_IDLE_MS },
	.count = kind_count, .commit = kind_commit, .flush = kind_flush, .settle = fs_meta_settle,
	.stop = npy_kind_stop, .admit = kind_admit,
};

/* s in the mount's kind, registered at the first stream (under fs->lock,
 * as xbatch.c's: no flush after it misses it); unregistered (ESHUTDOWN,
 * ENOMEM): s is made by its close alone, as before there was a kind. */
static void kind_join(h5fs *fs, struct npy_stream *s)
{
	struct npy_kind *k;

	pthread_mutex_lock(&fs->lock);
	k = fs->npy_kind;
	if (!k && (k = commit_kind_new_locked(fs, sizeof(*k), offsetof(struct npy_kind, t), &npy_kind_desc)) != NULL)
		fs->npy_kind = k;
	pthread_mutex_unlock(&fs->lock);
	if (!k)
		return;
	pthread_mutex_lock(&k->t.mu);
	s->knext = k->open;
	k->open = s;
	s->listed = true;
	s->kind = k;
	pthread_mutex_unlock(&k->t.mu);
}

/* s's every byte is in (no lock held): counted, due NPY_IDLE_MS later. */
static void kind_mark(struct npy_stream *s)
{
	struct npy_kind *k = s->kind;

	if (!k)
		return;
	pthread_mutex_lock(&k->t.mu);
	if (s->listed && !s->counted) {
		s->counted = true;
		k->complete++;
		commit_changed(&k->t, k->complete == 1);
	}
	pthread_mutex_unlock(&k->t.mu);
}

/* s out of its kind before it is freed (release, demote): the kind's
 * commit, under t.mu, then no longer sees it. */
static void kind_leave(struct npy_stream *s)
{
	struct npy_kind *k = s->kind;

	if (!k)
		return;
	pthread_mutex_lock(&k->t.mu);
	for (struct npy_stream **pp = &k->open; s->listed && *pp; pp = &(*pp)->knext)
		if (*pp == s) {
			*pp = s->knext;
			if (s->counted)
				k->complete--;
			s->listed = s->counted = false;
			break;
		}
	pthread_mutex_unlock(&k->t.mu);
	s->kind = NULL;
}

void npy_kind_stop(h5fs *fs)
{
	struct npy_kind *k;

	pthread_mutex_lock(&fs->lock);
	k = fs->npy_kind;
	fs->npy_kind = NULL;
	pthread_mutex_unlock(&fs->lock);
	if (!k)
		return;
	/* (no request left: complete streams still open made now, before
	 * the unmount's last sync; the others are given up by their
	 * release, setup.c handles_free) */
	pthread_mutex_lock(&k->t.mu);
	kind_make(k);
	for (struct npy_stream *s = k->open; s; s = s->knext) {
		s->listed = s->counted = false;
		s->kind = NULL;
	}
	k->open = NULL;
	k->complete = 0;
	pthread_mutex_unlock(&k->t.mu);
	commit_slot_stop(&k->t);
	free(k);
}

void npy_pending_add(h5fs *fs, uint64_t addr, uint64_t group, uint64_t parent, const char *name)
{
	struct npy_pending *p = calloc(1, sizeof(*p));

	if (!p || !(p->name = strdup(name))) {
		free(p);
		return;         /* out of memory: the placeholder stays a plain dataset */
	}
	p->addr = addr;
	p->group = group;
	p->parent = parent;
	pthread_mutex_lock(&fs->lock);
	p->next = fs->npy_pending;
	fs->npy_pending = p;
	pthread_mutex_unlock(&fs->lock);
}

struct npy_stream *npy_stream_take(h5fs *fs, uint64_t addr, struct gen *g)
{
	struct npy_pending **pp, *p = NULL;
	struct npy_stream *s;

	/* taken and listed open in one hold of fs->lock: a rename of the
	 * placeholder finds it in one list or the other (npy_move.c) */
	pthread_mutex_lock(&fs->lock);
again:
	for (pp = &fs->npy_pending; *pp; pp = &(*pp)->next)
		if ((*pp)->addr == addr) {
			if ((*pp)->holds) {
				/* renamed right now: taken with its new name */
				pthread_cond_wait(&fs->idle_cv, &fs->lock);
				goto again;
			}
			p = *pp;
			*pp = p->next;
			break;
		}
	s = p ? calloc(1, sizeof(*s)) : NULL;
	if (s) {
		s->addr = p->addr;
		s->group = p->group;
		s->parent = p->parent;
		s->name = p->name;
		s->g = g;
		gen_hold(g);
		pthread_mutex_init(&s->mu, NULL);
		s->tnext = fs->npy_taken;
		fs->npy_taken = s;
	} else if (p) {
		free(p->name);
	}
	pthread_mutex_unlock(&fs->lock);
	free(p);
	if (s)
		kind_join(fs, s);
	return s;
}

void npy_pending_free(h5fs *fs)
{
	while (fs->npy_pending) {
		struct npy_pending *p = fs->npy_pending;

		fs->npy_pending = p->next;
		free(p->name);
		free(p);
	}
}

/* A put's error: past the declared end EFBIG, out of order EINVAL, a full
 * disk or a failing one what it is (ENOSPC, EIO), as for any file. */
static int put_errno(int rc)
{
	return rc == H5_ERR_RANGE ? EFBIG : rc == H5_ERR_INVAL ? EINVAL : h5fs_errno(rc);
}

static int fail(h5fs *fs, struct npy_stream *s, int e, const char *why)
{
	h5fs_log(fs, LOG_NOTICE, "np.save %s: %s: no dataset made", show_path(s->name), why);
	s->err = e;
	return e;
}

/* FILE's lock for the stream, taken on the current generation when it is
 * the version of FILE the placeholder was made in (opened anew without a
 * change, behind/write.c wfile_follow), else ESTALE: another program
 * changed FILE since (logged). */
static int begin(h5fs *fs, struct npy_stream *s)
{
	struct gen *cur;
	int e = commit_begin(NULL, fs, NULL, COMMIT_FILE, NULL);

	if (e)
		return e;
	cur = gen_current(fs);
	if (cur->ver != s->g->ver) {
		commit_end(fs, NULL, false);
		gen_release(cur);
		h5fs_log(fs, LOG_ERR, "np.save %s: ESTALE: %s was changed by another program meanwhile",
			 show_path(s->name), h5_file_path(fs->f));
		return ESTALE;
	}
	gen_release(s->g);
	s->g = cur;
	return 0;
}

#define FORTRAN_MAX ((uint64_t)256 << 20)

/* A unicode array (in C order in s->fbuf) as h5py's variable-length
 * UTF-8 strings: the strings into new global heap collections, their
 * elements to the writer (write/dset_vstr.c). */
static int put_unicode(struct npy_stream *s)
{
	size_t n = (size_t)s->h.nelmts, chars = s->h.itemsize / 4;
	char *text = malloc(n * chars * 4 + 1);
	const char **str = calloc(n ? n : 1, sizeof(*str));
	size_t *len = calloc(n ? n : 1, sizeof(*len)), at = 0;
	uint8_t *el = NULL;
	int rc = 0;

	if (!text || !str || !len)
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
	for (size_t i = 0; rc == 0 && i < n; i++) {
		long l = npy_utf8_of(text + at, s->fbuf + i * s->h.itemsize, chars, s->h.big_endian);

		if (l < 0)
			rc = h5_err_set(H5_ERR_INVAL, "element %zu holds a code point no UTF-8 string holds", i);
		str[i] = text + at;
		len[i] = l < 0 ? 0 : (size_t)l;
		at += len[i];
	}
	if (rc == 0)
		rc = h5_dset_vstr_elements(&el, s->g->f, str, len, n);
	if (rc == 0)
		rc = h5_dset_writer_put(s->dw, 0, el, n * h5_file_vlen_size(s->g->f));
	free(el);
	free(text);
	free(str);
	free(len);
	return rc;
}

/* Data bytes at off of the stream's data: to the writer, or (Fortran
 * order, unicode) kept, and written in C order (unicode: as strings)
 * once all are in. */
static int put(struct npy_stream *s, uint64_t off, const void *buf, size_t len)
{
	uint8_t *c;
	int rc;

	if (!s->fbuf)
		return h5_dset_writer_put(s->dw, off, buf, len);
	if (off != s->fgot)
		return h5_err_set(H5_ERR_INVAL, "a Fortran-ordered array written out of order");
	if (len > s->h.nbytes - s->fgot)
		return h5_err_set(H5_ERR_RANGE, "past the array's end");
	memcpy(s->fbuf + off, buf, len);
	s->fgot += len;
	if (s->fgot < s->h.nbytes || len == 0)
		return 0;
	if (s->h.fortran) {
		if (!(c = malloc(s->h.nbytes)))
			return h5_err_set(H5_ERR_NOMEM, "out of memory");
		npy_to_c_order(c, s->fbuf, &s->h);
		free(s->fbuf);
		s->fbuf = c;
	}
	rc = s->h.kind == 'U' ? put_unicode(s) : h5_dset_writer_put(s->dw, 0, s->fbuf, s->h.nbytes);
	free(s->fbuf);
	s->fbuf = NULL;
	return rc;
}

/* The header has parsed: the dataset's space, FILE's lock till the end. */
static int start(h5fs *fs, struct npy_stream *s)
{
	h5_dset_new d = { .rank = s->h.rank, .kind = s->h.kind, .size = s->h.itemsize,
			  .big_endian = s->h.big_endian };
	int e, rc;

	/* a netCDF-4 classic model file takes only the classic model's
	 * types (NC_BYTE, NC_SHORT, NC_INT, NC_FLOAT, NC_DOUBLE): netCDF-C
	 * refuses to copy one holding any other (issue 57) */
	if (own_classic(s->g->f) &&
	    !((s->h.kind == 'i' && s->h.itemsize <= 4) || (s->h.kind == 'f' && s->h.itemsize >= 4))) {
		char why[96];

		snprintf(why, sizeof(why), "a netCDF-4 classic model file has no type %c%u (only i1, i2, i4, f4, f8)",
			 s->h.kind, s->h.itemsize);
		return fail(fs, s, EOPNOTSUPP, why);
	}
	/* bytes and structured dtypes: as h5py stores them (the engine's
	 * descr: strings, compounds) */
	if (s->h.kind == 'S' || s->h.kind == 'V') {
		d.descr = s->h.descr;
		d.descr_len = s->h.descr_len;
	}
	/* Fortran order: the data is kept till it is all in, then written
	 * in C order (h5py stores the array, not its memory order); unicode
	 * too, then made UTF-8 strings (h5py's string_dtype) */
	if (s->h.fortran || s->h.kind == 'U') {
		if (s->h.nbytes > FORTRAN_MAX)
			return fail(fs, s, EFBIG, s->h.fortran ? "a Fortran-ordered array of over 256 MiB (save "
				    "np.ascontiguousarray(a) instead)" : "a unicode array of over 256 MiB");
		if (!(s->fbuf = malloc(s->h.nbytes ? s->h.nbytes : 1)))
			return fail(fs, s, ENOMEM, "out of memory");
	}

	uint64_t n = s->h.itemsize;

	memcpy(d.dims, s->h.shape, sizeof(uint64_t) * s->h.rank);
	for (unsigned i = 0; i < s->h.rank; i++)
		n *= s->h.shape[i];
	/* -o compress: chunked as h5py guesses and compressed, as
	 * create_dataset(compression="gzip" or a plugin's id) makes it; a scalar or an empty
	 * array stays contiguous (h5py refuses to compress a scalar) */
	if (fs->cfg.compress && s->h.rank > 0 && n > 0) {
		d.chunked = 1;
		d.deflate = fs->cfg.compress;
		d.filter = fs->cfg.compress_filter;
	}
	e = begin(fs, s);
	if (e)
		return s->err = e;      /* logged */
	s->holding = true;
	if (s->h.kind == 'U') {
		d.vstr = 1;
		d.size = h5_file_vlen_size(s->g->f);
	}
	rc = h5_dset_writer_open(&s->dw, s->g->f, &d);
	if (rc == H5_ERR_LIMIT) {
		h5fs_log(fs, LOG_NOTICE, "np.save %s: %s: written uncompressed", show_path(s->name), h5_err_msg());
		d.chunked = 0;
		d.deflate = 0;
		rc = h5_dset_writer_open(&s->dw, s->g->f, &d);
	}
	if (rc == 0)
		rc = put(s, 0, s->head + s->h.data_offset, s->hlen - s->h.data_offset);
	if (rc < 0)
		return fail(fs, s, h5fs_errno(rc), h5_err_msg());
	s->known = true;
	free(s->head);
	s->head = NULL;
	return 0;
}

/* A write the stream's kind admits (commit_ask, after the pager's
 * table; under s->mu), before anything of it is kept: a stream that
 * failed answers its errno again; one whose dataset is made, or a
 * negative offset, EPERM; the header written again after the data began,
 * or the first bytes out of order, EINVAL (the stream fails with it,
 * logged). Its space is the engine writer's, decided before the answer
 * as each byte is placed (put: ENOSPC). */
struct npy_ask {
	struct npy_stream *s;
	off_t off;
};

static int kind_admit(h5fs *fs, const struct commit_ask *q)
{
	const struct npy_ask *a = q->arg;
	struct npy_stream *s = a->s;

	if (s->err)
		return s->err;
	if (s->done || a->off < 0)
		return EPERM;
	if (s->known && (uint64_t)a->off < s->h.data_offset)
		return fail(fs, s, EINVAL, "the header written again after the data began");
	if (!s->known && (size_t)a->off != s->hlen)
		return fail(fs, s, EINVAL, "the stream's first bytes written out of order");
	return 0;
}

static int do_write(h5fs *fs, struct npy_stream *s, const char *buf, size_t size, off_t off)
{
	struct npy_ask a = { s, off };
	char why[160];
	int n, rc = commit_ask(fs, &(struct commit_ask){ .op = PAGER_WRITE, .kind = COMMIT_STREAMS, .what = "write",
							 .path = s->name, .arg = &a });

	if (rc)
		return rc;
	if (s->known) {
		rc = put(s, (uint64_t)off - s->h.data_offset, buf, size);
		return rc < 0 ? fail(fs, s, put_errno(rc), h5_err_msg()) : 0;
	}
	if (size > HEAD_MAX - s->hlen) {
		uint8_t *nh;

		/* the header parses within 1 MiB or not at all: keep what it needs */
		n = npy_parse(&s->h, s->head, s->hlen, why, sizeof(why));
		if (n == 0 || n < 0 || s->hlen >= HEAD_MAX)
			goto parsed;
		nh = realloc(s->head, HEAD_MAX);
		if (!nh)
			return fail(fs, s, ENOMEM, "out of memory");
		s->head = nh;
		memcpy(s->head + s->hlen, buf, HEAD_MAX - s->hlen);
		buf += HEAD_MAX - s->hlen;
		size -= HEAD_MAX - s->hlen;
		off += (off_t)(HEAD_MAX - s->hlen);
		s->hlen = HEAD_MAX;
	} else {
		uint8_t *nh = realloc(s->head, s->hlen + size);

		if (!nh)
			return fail(fs, s, ENOMEM, "out of memory");
		s->head = nh;
		memcpy(s->head + s->hlen, buf, size);
		s->hlen += size;
		size = 0;
	}
	n = npy_parse(&s->h, s->head, s->hlen, why, sizeof(why));
parsed:
	/* an NPY stream of what h5py cannot store (or a broken one):
	 * refused, never bytes under the name NAME.npy (issue 57) */
	if (n < 0 && s->hlen >= 6 && memcmp(s->head, "\x93NUMPY", 6) == 0)
		return fail(fs, s, n == -EINVAL ? EINVAL : EOPNOTSUPP, why);
	/* not NPY: the bytes themselves, as any other file's (the
	 * placeholder is that dataset: npy_demote); but a netCDF-4 classic
	 * model file holds no bytes (NC_UBYTE), as create refuses (link.c) */
	if ((n < 0 || (n > 0 && s->hlen >= HEAD_MAX)) && own_classic(s->g->f))
		return fail(fs, s, EPERM, "not an NPY stream, and a netCDF-4 classic model file holds no bytes (NC_UBYTE)");
	if (n < 0 || (n > 0 && s->hlen >= HEAD_MAX)) {
		snprintf(s->why, sizeof(s->why), "%s", n < 0 ? why : "no NPY header within the first 1 MiB");
		s->demoted = true;
		return NPY_DEMOTE;
	}
	if (n > 0)
		return 0;       /* more to come */
	if ((rc = start(fs, s)) != 0)
		return rc;
	if (size && (rc = put(s, (uint64_t)off - s->h.data_offset, buf, size)) < 0)
		return fail(fs, s, put_errno(rc), h5_err_msg());
	return 0;
}

int npy_write(h5fs *fs, struct npy_stream *s, const char *buf, size_t size, off_t off)
{
	bool complete;
	int e;

	pthread_mutex_lock(&s->mu);
	e = do_write(fs, s, buf, size, off);
	complete = e == 0 && s->known && !s->done && !s->err && !h5_dset_writer_missing(s->dw);
	pthread_mutex_unlock(&s->mu);
	/* (after s->mu: the kind's commit takes t.mu, then s->mu) */
	if (complete)
		kind_mark(s);
	return e;
}

int npy_set_mtime(h5fs *fs, struct npy_stream *s, int64_t sec)
{
	int e = 0, rc;

	pthread_mutex_lock(&s->mu);
	if (!s->done) {
		s->has_mtime = true;
		s->mtime = sec;
	} else if ((e = begin(fs, s)) == 0) {
		rc = h5_obj_mtime_set(s->g->f, s->made, sec);
		if (rc < 0 && rc != H5_ERR_UNSUPPORTED && rc != H5_ERR_RANGE)
			e = h5err_logged(fs, rc, "utimens", s->name, NULL, s->made);
		h5_err_clear();
		fs_meta_changed(fs);
		commit_end(fs, NULL, false);
	}
	pthread_mutex_unlock(&s->mu);
	return e;
}

void npy_demote(h5fs *fs, struct npy_stream *s, uint8_t **head, size_t *hlen)
{
	/* bytes from now on: renamed as any file (a rename under way first) */
	npy_taken_leave(fs, s);
	kind_leave(s);
	h5fs_log(fs, LOG_INFO, "%s: %s: kept as bytes (a uint8 dataset of that name)", show_path(s->name), s->why);
	/* in a netCDF-4 file, bytes on a new unlimited dimension, as create
	 * makes a copied file's (link.c) */
	if (own_detect(s->g->f) == OWN_NC4 && begin(fs, s) == 0) {
		const char *base = strrchr(s->name, '/');
		size_t glen = base ? (size_t)(base - s->name) : 0;
		char *gp = strndup(s->name, glen), why[160] = "";
		uint64_t zero = 0;

		if (gp && nc_attach_var(s->g->f, &fs->nc_ids, gp[0] ? gp : "/", s->group, s->addr, 1, &zero, true, why, sizeof(why)) < 0)
			h5fs_log(fs, LOG_ERR, "%s: kept as bytes without a netCDF dimension: %s", show_path(s->name),
				 h5_err_msg());
		h5_err_clear();
		free(gp);
		fs_meta_changed(fs);
		commit_end(fs, NULL, false);
	}
	*head = s->head;
	*hlen = s->hlen;
	s->head = NULL;
	h5_dset_writer_free(s->dw);
	gen_release(s->g);
	pthread_mutex_destroy(&s->mu);
	free(s->name);
	free(s);
}

/* The placeholder removed, the kernel told; FILE's lock given back. */
static void placeholder_gone(h5fs *fs, struct npy_stream *s, const char *made)
{
	const char *base = strrchr(s->name, '/');
	int rc;

	base = base ? base + 1 : s->name;
	/* (FILE changed by another program: ESTALE, the placeholder stays) */
	if (!s->holding && begin(fs, s) == 0)
		s->holding = true;
	/* (by its address: renamed away, a new np.save's placeholder may
	 * have the name now) */
	rc = s->holding && !s->placeholder_deleted && npy_placeholder_at(s, base)
		     ? h5_link_delete(s->g->f, s->group, base, strlen(base), 2) : 0;
	if (rc < 0)
		h5fs_log(fs, LOG_ERR, "np.save %s: removing the placeholder: %s", show_path(s->name), h5_err_msg());
	synth_forget(fs, s->parent, base);
	if (s->holding)
		commit_end(fs, NULL, false);
	s->holding = false;
	if (fs->se) {
		notify_inval_entry(fs->se, fs_ino_out(fs, s->parent), base, strlen(base));
		if (made)
			notify_inval_entry(fs->se, fs_ino_out(fs, s->parent), made, strlen(made));
	}
}

/* Whether NAME is a dataset (not a group) in the stream's group: the
 * stream then replaces it (np.save again, views.c npy_over). */
static bool replaces(struct npy_stream *s, const char *name, uint64_t *old, bool *last)
{
	h5_obj_info info;
	h5_link l = { 0 };
	bool r;

	r = h5_group_lookup(&l, s->g->f, s->group, name) == 0 && l.type == H5_LINK_HARD &&
	    h5_obj_info_get(&info, s->g->f, l.addr) == 0 && info.kind == H5_OBJ_DATASET;
	*old = r ? l.addr : UINT64_MAX;
	*last = r && info.nlink == 1;
	h5_link_clear(&l);
	h5_err_clear();
	return r;
}

/* In a netCDF-4 file the new variable goes on netCDF dimensions (one of
 * each axis's length, else a new one: src/common/ncdims.c), as netCDF's
 * tools and xarray's h5netcdf engine need; a failure leaves it without
 * (netCDF-C then shows phony dimensions), logged. */
static void attach_dims(h5fs *fs, struct npy_stream *s, const char *base)
{
	size_t glen = (size_t)(base - s->name);
	char *gp, why[160] = "";
	int rc;

	if (s->h.rank == 0 || own_detect(s->g->f) == OWN_HDF5)
		return;
	gp = strndup(s->name, glen > 1 ? glen - 1 : glen);
	if (!gp)
		return;
	rc = nc_attach_var(s->g->f, &fs->nc_ids, gp[0] ? gp : "/", s->group, s->made, s->h.rank, s->h.shape, false, why, sizeof(why));
	fs_meta_changed(fs);    /* attribute changes: synced by fsync, idle, unmount */
	if (rc < 0)
		h5fs_log(fs, LOG_ERR, "np.save %s: made without netCDF dimensions: %s", show_path(s->name), h5_err_msg());
	else if (why[0])
		h5fs_log(fs, LOG_INFO, "np.save %s: %s", show_path(s->name), why);
	h5_err_clear();
	free(gp);
}

/* close's flush and fsync: the dataset made once every byte is in.
 * Before that nothing is made (a dup'd descriptor may still write: the
 * last close decides, npy_release), but close says the stream is not
 * complete (closing: EINVAL). */
int npy_flush(h5fs *fs, struct npy_stream *s, bool closing)
{
	const char *base;
	char *made = NULL;
	bool over, plain, last = false, settle = false;
	uint64_t old = UINT64_MAX;
	struct h5_gone *gone = NULL;
	size_t blen;
	uint64_t addr;
	int e = 0, rc;

	pthread_mutex_lock(&s->mu);
	/* (nothing written: an empty file, which the placeholder is) */
	if (!s->err && !s->done && (!s->known || h5_dset_writer_missing(s->dw)) && !(!s->known && s->hlen == 0) &&
	    closing) {
		/* closed before its header's bytes came: nothing is made, and
		 * the space the header declared goes back now (the release
		 * comes later, after the writer's next np.save maybe) */
		e = fail(fs, s, EINVAL, "closed before the stream ended");
		h5_dset_writer_abandon(s->dw);
	}
	/* made already, by the kind's commit (kind_make) on another thread
	 * maybe, whose notifications may not be out yet: waited for below as
	 * if made here, else close returned before the kernel dropped the
	 * entry of NAME.npy, and np.load opened the view of the array
	 * replaced (test_truncate under load) */
	settle = s->done;
	if (s->err || s->done || !s->known || h5_dset_writer_missing(s->dw))
		goto out;
	/* renamed meanwhile (mv x.npy y.npy), the name is the new one (a
	 * rename holds mu: npy_move.c): the array lands there, as a local
	 * file's would */
	base = strrchr(s->name, '/');
	base = base ? base + 1 : s->name;
	plain = strlen(base) <= 4 || strcmp(base + strlen(base) - 4, ".npy") != 0;
	blen = plain ? strlen(base) : strlen(base) - 4;        /* NAME of NAME.npy */
	made = strndup(base, blen);
	if (!made) {
		e = fail(fs, s, ENOMEM, "out of memory");
		goto out;
	}
	/* a name with no .npy (renamed so): the array is that name */
	over = !plain && replaces(s, made, &old, &last);
	if (plain) {
		rc = h5_link_delete(s->g->f, s->group, base, strlen(base), 2);
		if (rc == 0)
			rc = h5_dset_writer_commit(&addr, s->dw, s->group, base, blen);
	} else if (over) {
		/* np.save over dataset NAME (views.c npy_over): the placeholder
		 * goes, the dataset is made under its name NAME.npy, then moved
		 * over NAME (h5_link_move replaces it). Each step one commit: a
		 * crash leaves the old NAME (and the placeholder, or not), or
		 * the old NAME and the whole new array as NAME.npy, or the new
		 * NAME. */
		rc = h5_link_delete(s->g->f, s->group, base, strlen(base), 2);
		if (rc == 0)
			rc = h5_dset_writer_commit(&addr, s->dw, s->group, base, strlen(base));
		if (rc == 0) {
			/* (a failure of the move leaves it under NAME.npy: its
			 * release removes it, npy_placeholder_at) */
			s->tmp_made = true;
			s->tmp_addr = addr;
			rc = h5_link_move_gone(s->g->f, s->group, base, strlen(base), s->group, made, blen, &gone);
		}
	} else {
		rc = h5_dset_writer_commit(&addr, s->dw, s->group, base, blen);
	}
	if (rc < 0) {
		e = fail(fs, s, h5fs_errno(rc), h5_err_msg());
		goto out;
	}
	s->done = true;
	s->made = addr;
	if (s->has_mtime && h5_obj_mtime_set(s->g->f, addr, s->mtime) < 0) {
		h5fs_log(fs, LOG_DEBUG, "np.save %s: the time set on it not kept: %s", show_path(s->name), h5_err_msg());
		h5_err_clear();
	}
	if (over || plain)
		s->placeholder_deleted = true;
	/* the variable replaced (its last link) off its netCDF dimensions,
	 * as rm takes one off (link.c) */
	if (over && last && own_detect(s->g->f) != OWN_HDF5 && (rc = nc_detach_var(s->g->f, &fs->nc_ids, s->group, old)) < 0)
		h5fs_log(fs, LOG_ERR, "np.save %s: the variable replaced is still named by its dimension scales: %s",
			 show_path(s->name), h5_err_msg());
	h5_err_clear();
	attach_dims(fs, s, base);
	placeholder_gone(fs, s, made);
	/* the replaced array's storage, freed once nothing reads it */
	if (gone)
		gone_keep(fs, s->g, s->g->f, old, gone);
	gone = NULL;
	settle = true;
out:
	h5_gone_discard(gone);
	free(made);
	e = e ? e : s->err;
	pthread_mutex_unlock(&s->mu);
	/* The close is answered once the kernel has dropped the placeholder's
	 * entry (queued to kit/notify.c's thread by placeholder_gone): else the
	 * next np.save of the same name, at once, opened the removed
	 * placeholder through the entry the kernel still held, and its array
	 * was lost (test_owners under load). Bounded: a notification held up
	 * past a second leaves that race open, logged. */
	if (settle && !notify_settle(1000))
		h5fs_log(fs, LOG_NOTICE, "np.save %s: the kernel was not told within 1 s that the placeholder went",
			 show_path(s->name));
	return e;
}

/* The last close: a stream that did not end makes nothing. */
void npy_release(h5fs *fs, struct npy_stream *s)
{
	kind_leave(s);
	(void)npy_flush(fs, s, false);
	if (!s->done && !s->err && !s->known && s->hlen == 0) {
		/* touch NAME.npy: an empty file, the placeholder (an empty uint8
		 * dataset NAME.npy), as any other empty file */
	} else if (!s->done) {
		if (!s->err)
			h5fs_log(fs, LOG_NOTICE, "np.save %s: the stream ended after %llu bytes%s: no dataset made",
				 show_path(s->name), (unsigned long long)(s->known ? s->h.data_offset + s->h.nbytes -
									 h5_dset_writer_missing(s->dw) : s->hlen),
				 s->known ? "" : ", before its header did");
		/* its space back first: the placeholder's removal commits, and
		 * what that allocates would leave the stream's space below it,
		 * kept (FILE 21 MB after a refused np.save of 20 MiB) */
		h5_dset_writer_abandon(s->dw);
		placeholder_gone(fs, s, NULL);
	}
	npy_taken_leave(fs, s);
	h5_dset_writer_free(s->dw);
	gen_release(s->g);
	pthread_mutex_destroy(&s->mu);
	free(s->head);
	free(s->fbuf);
	free(s->name);
	free(s);
}
