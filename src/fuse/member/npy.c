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
 * it and NAME, or NAME: never a dataset with bytes missing. A stream that
 * ends early, is not NPY, or is an NPY h5fs does not take (Fortran order,
 * a structured or string dtype) makes nothing: the write or close fails
 * (EINVAL, EOPNOTSUPP) with one log line and the placeholder goes. */
#include "member.h"
#include "npy.h"

#define HEAD_MAX (1 << 20)      /* an NPY header is at most 4 GiB long in 2.0; we take 1 MiB */

struct npy_pending {
	struct npy_pending *next;
	uint64_t addr;          /* the placeholder's object header */
	uint64_t group;         /* its group's */
	uint64_t parent;        /* the group's node */
	char *name;             /* NAME.npy */
};

struct npy_stream {
	bool placeholder_deleted;       /* np.save over NAME: its link went first */
	uint64_t group, parent;
	char *name;
	uint8_t *head;          /* the first bytes, until the header parses */
	size_t hlen;
	npy_header h;
	bool known, holding, done;
	bool demoted;           /* not a stream h5fs makes a dataset of: bytes (npy_demote) */
	bool has_mtime;         /* a time set on the placeholder: the dataset's (npy_set_mtime) */
	int64_t mtime;
	uint64_t made;          /* the dataset's header, once done */
	char why[160];
	int err;                /* kept: the next write, fsync and close fail with it */
	struct gen *g;          /* the generation it writes through (held) */
	h5_dset_writer *dw;
	pthread_mutex_t mu;
};

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

	pthread_mutex_lock(&fs->lock);
	for (pp = &fs->npy_pending; *pp; pp = &(*pp)->next)
		if ((*pp)->addr == addr) {
			p = *pp;
			*pp = p->next;
			break;
		}
	pthread_mutex_unlock(&fs->lock);
	if (!p)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (s) {
		s->group = p->group;
		s->parent = p->parent;
		s->name = p->name;
		s->g = g;
		gen_hold(g);
		pthread_mutex_init(&s->mu, NULL);
	} else {
		free(p->name);
	}
	free(p);
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
 * change, member/write.c wfile_follow), else ESTALE: another program
 * changed FILE since (logged). */
static int begin(h5fs *fs, struct npy_stream *s)
{
	struct gen *cur;
	int e = fs_write_begin(fs);

	if (e)
		return e;
	cur = gen_current(fs);
	if (cur->ver != s->g->ver) {
		fs_write_end(fs);
		gen_release(cur);
		h5fs_log(fs, LOG_ERR, "np.save %s: ESTALE: %s was changed by another program meanwhile",
			 show_path(s->name), h5_file_path(fs->f));
		return ESTALE;
	}
	gen_release(s->g);
	s->g = cur;
	return 0;
}

/* The header has parsed: the dataset's space, FILE's lock till the end. */
static int start(h5fs *fs, struct npy_stream *s)
{
	h5_dset_new d = { .rank = s->h.rank, .kind = s->h.kind, .size = s->h.itemsize,
			  .big_endian = s->h.big_endian };
	int e, rc;

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
	rc = h5_dset_writer_open(&s->dw, s->g->f, &d);
	if (rc == H5_ERR_LIMIT) {
		h5fs_log(fs, LOG_NOTICE, "np.save %s: %s: written uncompressed", show_path(s->name), h5_err_msg());
		d.chunked = 0;
		d.deflate = 0;
		rc = h5_dset_writer_open(&s->dw, s->g->f, &d);
	}
	if (rc == 0)
		rc = h5_dset_writer_put(s->dw, 0, s->head + s->h.data_offset, s->hlen - s->h.data_offset);
	if (rc < 0)
		return fail(fs, s, h5fs_errno(rc), h5_err_msg());
	s->known = true;
	free(s->head);
	s->head = NULL;
	return 0;
}

static int do_write(h5fs *fs, struct npy_stream *s, const char *buf, size_t size, off_t off)
{
	char why[160];
	int n, rc;

	if (s->err)
		return s->err;
	if (s->done || off < 0)
		return EPERM;
	if (s->known) {
		if ((uint64_t)off < s->h.data_offset)
			return fail(fs, s, EINVAL, "the header written again after the data began");
		rc = h5_dset_writer_put(s->dw, (uint64_t)off - s->h.data_offset, buf, size);
		return rc < 0 ? fail(fs, s, put_errno(rc), h5_err_msg()) : 0;
	}
	if ((size_t)off != s->hlen)
		return fail(fs, s, EINVAL, "the stream's first bytes written out of order");
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
	/* not NPY, or one h5fs does not take: the bytes themselves, as any
	 * other file's (the placeholder is that dataset: npy_demote) */
	if (n < 0 || (n > 0 && s->hlen >= HEAD_MAX)) {
		snprintf(s->why, sizeof(s->why), "%s", n < 0 ? why : "no NPY header within the first 1 MiB");
		s->demoted = true;
		return NPY_DEMOTE;
	}
	if (n > 0)
		return 0;       /* more to come */
	if ((rc = start(fs, s)) != 0)
		return rc;
	if (size && (rc = h5_dset_writer_put(s->dw, (uint64_t)off - s->h.data_offset, buf, size)) < 0)
		return fail(fs, s, put_errno(rc), h5_err_msg());
	return 0;
}

int npy_write(h5fs *fs, struct npy_stream *s, const char *buf, size_t size, off_t off)
{
	int e;

	pthread_mutex_lock(&s->mu);
	e = do_write(fs, s, buf, size, off);
	pthread_mutex_unlock(&s->mu);
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
		fs_write_end(fs);
	}
	pthread_mutex_unlock(&s->mu);
	return e;
}

void npy_demote(h5fs *fs, struct npy_stream *s, uint8_t **head, size_t *hlen)
{
	h5fs_log(fs, LOG_INFO, "%s: %s: kept as bytes (a uint8 dataset of that name)", show_path(s->name), s->why);
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
	rc = s->holding && !s->placeholder_deleted ? h5_link_delete(s->g->f, s->group, base, strlen(base), 2) : 0;
	if (rc < 0)
		h5fs_log(fs, LOG_ERR, "np.save %s: removing the placeholder: %s", show_path(s->name), h5_err_msg());
	synth_forget(fs, s->parent, base);
	if (s->holding)
		fs_write_end(fs);
	s->holding = false;
	if (fs->se) {
		fuse_lowlevel_notify_inval_entry(fs->se, fs_ino_out(fs, s->parent), base, strlen(base));
		if (made)
			fuse_lowlevel_notify_inval_entry(fs->se, fs_ino_out(fs, s->parent), made, strlen(made));
	}
}

/* Whether NAME is a dataset (not a group) in the stream's group: the
 * stream then replaces it (np.save again, views.c npy_over). */
static bool replaces(struct npy_stream *s, const char *name)
{
	h5_obj_info info;
	h5_link l = { 0 };
	bool r;

	r = h5_group_lookup(&l, s->g->f, s->group, name) == 0 && l.type == H5_LINK_HARD &&
	    h5_obj_info_get(&info, s->g->f, l.addr) == 0 && info.kind == H5_OBJ_DATASET;
	h5_link_clear(&l);
	h5_err_clear();
	return r;
}

/* close's flush and fsync: the dataset made once every byte is in.
 * Before that nothing is made (a dup'd descriptor may still write: the
 * last close decides, npy_release), but close says the stream is not
 * complete (closing: EINVAL). */
int npy_flush(h5fs *fs, struct npy_stream *s, bool closing)
{
	const char *base;
	char *made = NULL;
	bool over;
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
	if (s->err || s->done || !s->known || h5_dset_writer_missing(s->dw))
		goto out;
	base = strrchr(s->name, '/');
	base = base ? base + 1 : s->name;
	blen = strlen(base) - 4;        /* NAME of NAME.npy */
	made = strndup(base, blen);
	if (!made) {
		e = fail(fs, s, ENOMEM, "out of memory");
		goto out;
	}
	over = replaces(s, made);
	if (over) {
		/* np.save over dataset NAME (views.c npy_over): the placeholder
		 * goes, the dataset is made under its name NAME.npy, then moved
		 * over NAME (h5_link_move replaces it). Each step one commit: a
		 * crash leaves the old NAME (and the placeholder, or not), or
		 * the old NAME and the whole new array as NAME.npy, or the new
		 * NAME. */
		rc = h5_link_delete(s->g->f, s->group, base, strlen(base), 2);
		if (rc == 0)
			rc = h5_dset_writer_commit(&addr, s->dw, s->group, base, strlen(base));
		if (rc == 0)
			rc = h5_link_move(s->g->f, s->group, base, strlen(base), s->group, made, blen);
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
	if (over)
		s->placeholder_deleted = true;
	placeholder_gone(fs, s, made);
out:
	free(made);
	e = e ? e : s->err;
	pthread_mutex_unlock(&s->mu);
	return e;
}

/* The last close: a stream that did not end makes nothing. */
void npy_release(h5fs *fs, struct npy_stream *s)
{
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
		placeholder_gone(fs, s, NULL);
	}
	h5_dset_writer_free(s->dw);
	gen_release(s->g);
	pthread_mutex_destroy(&s->mu);
	free(s->head);
	free(s->name);
	free(s);
}
