/* retype.c - a byte dataset given back its type and shape by the
 * user.h5.* xattrs a copy sets (issue 72 item 2; man h5fs MODIFYING
 * "types set back").
 *
 * tar --xattrs -x and cp -a into a new name create the file (a growable
 * 1-D uint8 dataset, link.c member_create), write its bytes and set
 * every xattr they read from the original, user.h5.dtype and
 * user.h5.shape among them: tar before the bytes, cp -a after them, both
 * on the open descriptor; rsync -X on the closed temporary file, in
 * sorted order; each in the order the source lists them (tmpfs: the
 * shape before the dtype; issue 83 item 3). Any description key set on
 * a 1-D |u1 dataset of one link (to a value it does not show; a dtype
 * even then) starts a request on its node (struct retype): dtype, shape
 * and a compound's descr recorded, a second other value of one a
 * conflict refused (the first kept), chunks and a deflate filter
 * recorded (the new dataset chunked and gzip'd so when they fit it), the
 * other storage keys (maxshape, fill, layout, text) accepted and
 * changing nothing (the new dataset is made as np.save makes one:
 * contiguous, or chunked with -o compress). With no dtype the dtype is the bytes' own, |u1: a
 * uint8 image comes back with its shape. The dataset is made again with
 * that type and shape from its bytes once complete (a shape, a dtype or
 * none, a compound's descr): at the last close of its descriptors, or at
 * once on a dataset no descriptor has open when the byte count is
 * exactly what they take (a shape alone that |u1 does not fit, or on an
 * empty file, waits for its dtype; a 1-byte dtype after a shape alone
 * made it |u1 makes it again: retype_provisional). A close before the
 * shape came leaves the request waiting for it: the kernel's release of
 * rsync's descriptor, sent after close(2) returned, can come between
 * rsync's setxattrs of dtype and shape (made 1-D then, the shape was
 * lost: test_rename_keep "close, set, rename at once", 2 of 200 under
 * ASan). Variable-length strings (|O) are made from lines
 * (rename_keep.c keep_strings_make). A refusal is decided at the
 * setxattr, before its answer, with one log line: a dtype h5fs does not
 * make from bytes (variable-length values, ml_dtypes' floats, unicode)
 * or a shape it does not read (the dataset stays bytes), a conflict,
 * bytes that do not fit when that is known then (no descriptor open, or
 * more bytes already written than they take: fits_now); fewer bytes
 * through an open descriptor are found at the close, which cannot fail
 * any more (the log line says so).
 *
 * Making it again is rename_keep.c's way: the new dataset under the
 * hidden name ".NAME.h5fs-keep" (npy_rename.c npy_make_from: data, then
 * header and link, one commit), the byte dataset's attributes set on it,
 * its modification time kept, then moved over NAME (one commit), the
 * bytes' storage freed once nothing reads them. Crash states: the bytes
 * alone, with the hidden dataset (removed at the next such change), the
 * typed dataset alone. Its inode number is the new header's: the
 * kernel's entry of NAME is dropped, so the next lookup finds it. */
#include "member.h"
#include "npystream.h"
#include "retype.h"
#include "resize.h"
#include "handle.h"
#include "npy.h"
#include "owner.h"

#include <inttypes.h>

#define KEEP_SUFFIX ".h5fs-keep"

struct retype {
	bool has_shape, has_descr;
	bool values;            /* user.h5.text values: not strings */
	bool made;              /* made: the node's object is gone (retype_gone) */
	/* user.h5.chunks (honoured when of the shape's rank) and whether
	 * user.h5.filters named deflate: PyTables reads a CArray only
	 * chunked (a contiguous one crashed it) */
	unsigned chunk_rank;
	uint64_t chunk[NPY_MAX_RANK];
	bool deflate;
	bool settled;           /* made, or refused (logged): nothing more to do */
	bool deciding;          /* a setxattr waits for the last close's RELEASE to decide it (retype_note) */
	unsigned rank;
	uint64_t dims[NPY_MAX_RANK];
	char dtype[64];
	char descr[NPY_DESCR_MAX];
};

/* n->retype's fields (one lock for all: a request is rare and short) */
static pthread_mutex_t rt_mu = PTHREAD_MUTEX_INITIALIZER;
/* Making one is several commits (the hidden dataset, its attributes, the
 * move over NAME), at a release, which no kernel lock of the directory
 * covers: renames and removals (which the kernel's directory locks keep
 * apart otherwise) wait for it (shared), and so does an open of a node
 * with a request, which then finds the bytes' storage gone (ESTALE: the
 * kernel looks the name up again). Taken before commit_begin in both. */
static pthread_rwlock_t names_lk = PTHREAD_RWLOCK_INITIALIZER;

void retype_names_hold(bool on)
{
	if (on)
		pthread_rwlock_rdlock(&names_lk);
	else
		pthread_rwlock_unlock(&names_lk);
}

/* The datasets made last (their file and header): a rename of one
 * (rsync -X renames its temporary file after its close, whose release
 * made it) drops the kernel's entry of the new name, which names the
 * bytes' inode (member_rename, retype_made). */
#define MADE_RING 64
static struct {
	const h5_file *f;
	const h5fs *fs;
	uint64_t addr;
	bool u1;                /* made |u1 of a shape alone (no dtype came) */
} made_ring[MADE_RING];
static unsigned made_next;

static void made_note(const h5fs *fs, const h5_file *f, uint64_t addr, bool u1)
{
	unsigned i;

	pthread_mutex_lock(&rt_mu);
	i = made_next++ % MADE_RING;
	made_ring[i].f = f;
	made_ring[i].fs = fs;
	made_ring[i].addr = addr;
	made_ring[i].u1 = u1;
	pthread_mutex_unlock(&rt_mu);
}

bool retype_provisional(const h5fs *fs, uint64_t addr)
{
	bool hit = false;

	pthread_mutex_lock(&rt_mu);
	for (unsigned i = 0; i < MADE_RING && !hit; i++)
		hit = made_ring[i].fs == fs && made_ring[i].addr == addr && made_ring[i].u1;
	pthread_mutex_unlock(&rt_mu);
	return hit;
}

bool retype_made(const h5_file *f, uint64_t addr)
{
	bool hit = false;

	pthread_mutex_lock(&rt_mu);
	for (unsigned i = 0; i < MADE_RING && !hit; i++)
		hit = made_ring[i].f == f && made_ring[i].addr == addr;
	pthread_mutex_unlock(&rt_mu);
	return hit;
}

/* The request's dtype: the one set, else the bytes' own (|u1: a byte
 * array of another shape, whose user.h5.dtype shows already, so a copy
 * sets it as no change, or in an order after its shape) */
static const char *dtype_of(const struct retype *rq)
{
	return rq->dtype[0] ? rq->dtype : "|u1";
}

/* The NPY header the request (complete: take) describes, as np.save would
 * write it, for size bytes: 0, or why not in why. */
static int header_of(npy_header *h, const struct retype *rq, uint64_t size, char *why, size_t wlen)
{
	static const char magic[8] = { '\x93', 'N', 'U', 'M', 'P', 'Y', 1, 0 };
	size_t cap = sizeof(rq->descr) + 1024, len;
	char *buf = malloc(cap), *d = buf + 10;
	const char *dt = dtype_of(rq);
	int n, rc;

	if (!buf) {
		snprintf(why, wlen, "out of memory");
		return -ENOMEM;
	}
	memcpy(buf, magic, 8);
	if (dt[1] == 'V' && !rq->has_descr) {
		free(buf);
		snprintf(why, wlen, "dtype %s without user.h5.descr", dt);
		return -EINVAL;
	}
	n = rq->has_descr && dt[1] == 'V'
		    ? snprintf(d, cap - 11, "{'descr': %s, 'fortran_order': False, 'shape': (", rq->descr)
		    : snprintf(d, cap - 11, "{'descr': '%s', 'fortran_order': False, 'shape': (", dt);
	for (unsigned i = 0; i < rq->rank; i++)
		n += snprintf(d + n, cap - 11 - (size_t)n, "%" PRIu64 ",", rq->dims[i]);
	n += snprintf(d + n, cap - 11 - (size_t)n, "), }\n");
	len = (size_t)n;
	buf[8] = (char)(len & 0xff);
	buf[9] = (char)(len >> 8);
	rc = len < 65536 ? npy_parse(h, (const uint8_t *)buf, 10 + len, why, wlen) : -EINVAL;
	free(buf);
	if (rc == 0 && (h->kind == 'U' || h->itemsize == 0))
		rc = -EOPNOTSUPP, snprintf(why, wlen, "dtype %s: unicode is stored as variable-length strings, "
				      "which are not made from bytes", dt);
	if (rc != 0)
		return rc < 0 ? rc : -EINVAL;
	if (h->nbytes != size) {
		snprintf(why, wlen, "its %" PRIu64 " bytes are not the %" PRIu64 " that %s of its shape takes", size,
			 h->nbytes, dt);
		return -EINVAL;
	}
	h->data_offset = 0;
	return 0;
}

/* Whether a value parses as user.h5.shape shows one: 0 (rank, dims), or
 * -1 ("null", "inf", anything else). */
static int parse_shape(unsigned *rank, uint64_t *dims, const char *v, size_t len)
{
	size_t i = 0;

	*rank = 0;
	while (len && (v[len - 1] == '\0' || v[len - 1] == '\n'))
		len--;
	while (i < len) {
		uint64_t x = 0;
		size_t s = i;

		for (; i < len && v[i] >= '0' && v[i] <= '9'; i++) {
			if (x > (UINT64_MAX - 9) / 10)
				return -1;
			x = x * 10 + (uint64_t)(v[i] - '0');
		}
		if (i == s || *rank == NPY_MAX_RANK || (i < len && v[i] != ','))
			return -1;
		dims[(*rank)++] = x;
		if (i < len && ++i == len)
			return -1;      /* a trailing comma */
	}
	return 0;
}

/* The request made: the byte dataset's link in its group followed to the
 * typed dataset. 0, or an errno (logged once). Takes FILE's lock.
 * from_set: asked by the setxattr that completed it, no descriptor open:
 * an empty dataset (tar sets the xattrs before it writes) and a shape
 * without a dtype that |u1 does not fit (a dtype may follow) wait. */
static int make(h5fs *fs, struct node *n, struct retype *rq, bool from_set)
{
	/* (netCDF-C's reserved attributes of a dimension and a variable:
	 * the mount attaches the copy to netCDF dimensions itself, a copied
	 * CLASS made it a scale of no variable, "a REFERENCE_LIST of
	 * another layout"; elsewhere references as text are no references) */
	static const char *const nc_own[] = { "DIMENSION_LIST", "_Netcdf4Coordinates", "_Netcdf4Dimid",
					      "REFERENCE_LIST", "CLASS", "NAME", NULL };
	static const char *const h5_own[] = { "DIMENSION_LIST", "REFERENCE_LIST", NULL };
	struct node *p;
	char *path, *hidden;
	const char *name;
	size_t nlen, hlen;
	char why[240] = "";
	struct h5_gone *gone = NULL;
	h5_dataset *d = NULL;
	h5_obj_info info;
	h5_link l = { 0 }, left = { 0 };
	npy_header *h = malloc(sizeof(*h));
	uint64_t made = UINT64_MAX;
	struct use u;
	int e = 0, rc = 0, began = 0;
	bool quiet = false, strings;
	char *gpath = NULL;
	uint64_t grp = UINT64_MAX;
	uint64_t count = 0;
	h5_file *u_f = NULL;

	/* The name and directory are read under names_lk: a rename holds it
	 * (shared) while it moves the name, so one read before would name
	 * what the rename just moved away (rsync -X renames its temporary
	 * file while the kernel's release of it, which makes it here, is
	 * still on its way: the lookup missed and it stayed bytes, CI
	 * under ASan). */
	pthread_rwlock_wrlock(&names_lk);
	/* (a reference of our own: the kernel's FORGET of the directory may
	 * come on another thread meanwhile - from a release, ASan: a use
	 * after free at synth_forget, test_copy_back under load) */
	p = node_ref_existing(fs, __atomic_load_n(&n->parent, __ATOMIC_ACQUIRE));
	path = strdup(__atomic_load_n(&n->path, __ATOMIC_ACQUIRE));
	name = !path ? "" : strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	nlen = strlen(name);
	hlen = nlen + 1 + strlen(KEEP_SUFFIX);
	hidden = malloc(hlen + 1);
	if (!hidden || !h || !path) {
		e = ENOMEM;
		snprintf(why, sizeof(why), "out of memory");
		goto out;
	}
	snprintf(hidden, hlen + 1, ".%s" KEEP_SUFFIX, name);
	if (!rq->dtype[0] && rq->has_descr) {
		e = EPERM;
		snprintf(why, sizeof(why), "user.h5.descr was set without user.h5.dtype");
		goto out;
	}
	if (p && p->type != NT_DIR) {
		e = ESTALE;
		snprintf(why, sizeof(why), "its directory is no longer known");
		goto out;
	}
	/* (no node of the directory: the kernel forgot it before the
	 * release of its file came, which it sends after the file's last
	 * reference went; the group found by its path then) */
	gpath = p ? strdup(p->path) : name == path ? strdup("/") : strndup(path, (size_t)(name - 1 - path));
	if (!gpath) {
		e = ENOMEM;
		snprintf(why, sizeof(why), "out of memory");
		goto out;
	}
	if ((e = commit_begin(&u, fs, p ? p : n, COMMIT_ALL, "setxattr user.h5.dtype")) != 0) {
		snprintf(why, sizeof(why), "%s", strerror(e));
		goto out;
	}
	began = 1;
	grp = u.addr;
	if (!p && h5_path_lookup(&grp, u.f, gpath[0] ? gpath : "/") < 0) {
		h5_err_clear();
		e = ESTALE;
		snprintf(why, sizeof(why), "its directory %s is no longer there", show_path(gpath));
		goto out;
	}
	/* still the name's dataset, still bytes of one link */
	if (h5_group_lookup(&l, u.f, grp, name) < 0 || l.type != H5_LINK_HARD || l.addr != n->addr ||
	    h5_obj_info_get(&info, u.f, l.addr) < 0 || info.nlink != 1 || h5_dataset_open(&d, u.f, l.addr) < 0) {
		h5_err_clear();
		/* (renamed over another dataset meanwhile: rename_keep.c's
		 * rules made that; not a refusal of ours) */
		quiet = true;
		e = EPERM;
		snprintf(why, sizeof(why), "its name no longer leads to it, or it has other links");
		goto out;
	}
	/* variable-length strings: one a line (rename_keep.c), the rest
	 * byte for byte as np.save's stream is made */
	strings = strcmp(dtype_of(rq), "|O") == 0;
	rc = strings ? (h5_dataset_size(d) == 0 ? -EINVAL : 0) : header_of(h, rq, h5_dataset_size(d), why, sizeof(why));
	if ((!rq->dtype[0] && (rc < 0 || h5_dataset_size(d) == 0)) || (from_set && rc < 0 && h5_dataset_size(d) == 0)) {
		/* tar makes the file (mknod) and sets its xattrs before it
		 * opens it to write the bytes: their last close decides; a
		 * shape without a dtype waits for it, when |u1 does not fit
		 * or the file is empty (an empty array of any dtype fits),
		 * also at a close (the kernel's release of a descriptor comes
		 * after close(2) returned: between two setxattrs by name) */
		pthread_mutex_lock(&rt_mu);
		n->retype->settled = false;
		pthread_mutex_unlock(&rt_mu);
		goto out;
	}
	if (rc < 0) {
		e = EPERM;
		goto out;
	}
	if (h5_group_lookup(&left, u.f, grp, hidden) == 0 && h5_link_delete(u.f, grp, hidden, hlen, 2) < 0) {
		e = EPERM;
		snprintf(why, sizeof(why), "a dataset under its hidden name %s could not be removed", hidden);
		goto out;
	}
	h5_err_clear();
	rc = strings ? keep_strings_make(&made, &count, u.f, d, rq->rank, rq->dims, grp, hidden, hlen)
		     : npy_make_from(&made, fs, u.f, d, h, rq->chunk_rank && rq->chunk_rank == h->rank ? rq->chunk : NULL,
				     rq->deflate ? 4 : 0, grp, hidden, hlen);
	if (strings) {
		h->rank = rq->rank;
		memcpy(h->shape, rq->dims, rq->rank * sizeof(*h->shape));
		if (rq->rank == 1)
			h->shape[0] = count;
		h->nbytes = h5_dataset_size(d);
	}
	if (rc == 0)
		rc = keep_attrs_copy(u.f, l.addr, made, own_detect(u.f) == OWN_HDF5 ? h5_own : nc_own);
	/* a descriptor opened meanwhile (before names_lk) writes or reads the
	 * bytes: its last close decides */
	if (rc == 0 && __atomic_load_n(&n->opens, __ATOMIC_ACQUIRE)) {
		if (h5_link_delete(u.f, grp, hidden, hlen, 2) < 0)
			h5_err_clear();
		pthread_mutex_lock(&rt_mu);
		n->retype->settled = false;
		pthread_mutex_unlock(&rt_mu);
		goto out;
	}
	if (rc == 0)
		rc = h5_link_move_gone(u.f, grp, hidden, hlen, grp, name, nlen, &gone);
	if (rc < 0) {
		e = rc == H5_ERR_UNSUPPORTED || (strings && rc == H5_ERR_INVAL) ? EPERM : h5fs_errno(rc);
		snprintf(why, sizeof(why), "%s", h5_err_msg());
		if (made != UINT64_MAX && h5_link_delete(u.f, grp, hidden, hlen, 2) < 0)
			h5_err_clear();
		goto out;
	}
	/* in a netCDF-4 file: the bytes' dimension off, the variable on
	 * netCDF dimensions of its shape, as np.save's (npy.c attach_dims) */
	if (own_detect(u.f) != OWN_HDF5) {
		char nwhy[160] = "";

		rc = nc_detach_var(u.f, &fs->nc_ids, grp, l.addr);
		if (rc == 0 && h->rank > 0)
			rc = nc_attach_var(u.f, &fs->nc_ids, gpath[0] ? gpath : "/", grp, made, h->rank, h->shape, false, nwhy, sizeof(nwhy));
		if (rc < 0)
			h5fs_log(fs, LOG_ERR, "%s: made %s, its netCDF dimensions not updated: %s", show_path(path),
				 dtype_of(rq), h5_err_msg());
		h5_err_clear();
	}
	if (gone)
		gone_keep(fs, u.g, u.f, l.addr, gone);
	gone = NULL;
	if (p) {
		synth_forget(fs, p->ino, name);
		npy_inval_after_reply(fs, p->ino, name, NULL);
	}
	u_f = u.f;
	h5fs_log(fs, LOG_INFO, "%s: made %s of %u dimensions from its %" PRIu64 " bytes (user.h5.dtype and shape set back)",
		 show_path(path), dtype_of(rq), h->rank, h->nbytes);
out:
	if (began) {
		pthread_rwlock_wrlock(&n->lk);
		xattr_cache_drop(n);
		pthread_rwlock_unlock(&n->lk);
		commit_end(fs, &u, true);
	}
	pthread_rwlock_unlock(&names_lk);
	if (e)
		h5fs_log(fs, quiet ? LOG_DEBUG : LOG_NOTICE, "%s: user.h5.dtype %s not given back: %s; it stays bytes (|u1)",
			 show_path(path ? path : n->path), rq->dtype[0] ? rq->dtype : "(none: |u1)", why);
	else if (u_f) {
		made_note(fs, u_f, made, !rq->dtype[0]);
		pthread_mutex_lock(&rt_mu);
		n->retype->made = true;
		pthread_mutex_unlock(&rt_mu);
	}
	free(path);
	free(gpath);
	h5_gone_discard(gone);
	h5_link_clear(&l);
	h5_link_clear(&left);
	h5_dataset_close(d);
	free(hidden);
	free(h);
	if (p)
		node_unref(fs, p->ino, 1);
	return e;
}

/* Whether the request is complete: a shape, and a dtype (none: |u1) with
 * a compound's descr. Under rt_mu. */
static bool complete(const struct retype *rq)
{
	return rq->has_shape && (rq->dtype[0] ? rq->dtype[1] != 'V' || rq->has_descr : !rq->has_descr);
}

/* Take the request once it is complete, or NULL when there is none to
 * make yet or left to make. */
static struct retype *take(struct node *n, bool closing)
{
	struct retype *rq = NULL;

	pthread_mutex_lock(&rt_mu);
	if (n->retype && !n->retype->settled && !(closing && n->retype->deciding) && complete(n->retype)) {
		rq = malloc(sizeof(*rq));
		if (rq) {
			memcpy(rq, n->retype, sizeof(*rq));
			n->retype->settled = true;      /* made or refused: once */
		}
	}
	pthread_mutex_unlock(&rt_mu);
	return rq;
}

/* One description value into the request (under rt_mu): dtype, shape and
 * descr recorded, chunks and a deflate among the filters too (the
 * dataset is made with them when they fit it); the other storage keys
 * (maxshape, fill, layout, text) accepted and changing nothing (the
 * dataset is made as np.save makes one). EPERM with why: a dtype h5fs does not make from
 * bytes or a shape it does not read (the request then settled: it stays
 * bytes), or a second value of a key other than the first (a conflict:
 * refused, the first kept). */
static int record(struct retype *rq, const char *key, const char *value, size_t size, char *why, size_t wlen)
{
	bool dtype = strcmp(key, "dtype") == 0, descr = strcmp(key, "descr") == 0;
	uint64_t dims[NPY_MAX_RANK];
	unsigned rank;

	if ((dtype || descr) && (size >= (dtype ? sizeof(rq->dtype) : sizeof(rq->descr)) || memchr(value, 0, size))) {
		rq->settled = true;
		snprintf(why, wlen, "not a %s h5fs makes", key);
		return EPERM;
	}
	if (dtype) {
		npy_header *h;
		struct retype probe = { .has_shape = true, .rank = 1 };

		if (rq->dtype[0] && (strlen(rq->dtype) != size || memcmp(rq->dtype, value, size) != 0)) {
			snprintf(why, wlen, "user.h5.dtype %s was set already (kept)", rq->dtype);
			return EPERM;
		}
		memcpy(probe.dtype, value, size);
		/* a dtype h5fs does not make from bytes: refused now, once
		 * (|O: strings from lines, unless user.h5.text says values) */
		if (strcmp(probe.dtype, "|O") == 0 && rq->values) {
			rq->settled = true;
			snprintf(why, wlen, "variable-length values (user.h5.text values) are not made from bytes");
			return EPERM;
		}
		if (probe.dtype[1] != 'V' && strcmp(probe.dtype, "|O") != 0) {
			if (!(h = malloc(sizeof(*h)))) {
				snprintf(why, wlen, "out of memory");
				return ENOMEM;
			}
			if (header_of(h, &probe, 0, why, wlen) < 0) {
				rq->settled = true;
				free(h);
				return EPERM;
			}
			free(h);
		}
		memcpy(rq->dtype, probe.dtype, sizeof(rq->dtype));
	} else if (descr) {
		if (rq->has_descr && (strlen(rq->descr) != size || memcmp(rq->descr, value, size) != 0)) {
			snprintf(why, wlen, "another user.h5.descr was set already (kept)");
			return EPERM;
		}
		memcpy(rq->descr, value, size);
		rq->descr[size] = '\0';
		rq->has_descr = true;
	} else if (strcmp(key, "chunks") == 0) {
		if (parse_shape(&rank, dims, value, size) == 0 && rank > 0) {
			rq->chunk_rank = rank;
			memcpy(rq->chunk, dims, rank * sizeof(*dims));
		}
	} else if (strcmp(key, "filters") == 0) {
		/* (the names user.h5.filters shows, comma-separated; the
		 * level is not shown: h5py's default, 4) */
		for (size_t i = 0; i + 7 <= size; i++)
			if (memcmp(value + i, "deflate", 7) == 0 && (i == 0 || value[i - 1] == ',') &&
			    (i + 7 == size || value[i + 7] == ','))
				rq->deflate = true;
	} else if (strcmp(key, "text") == 0 && size == 6 && memcmp(value, "values", 6) == 0) {
		rq->values = true;
		if (strcmp(rq->dtype, "|O") == 0) {
			rq->settled = true;
			snprintf(why, wlen, "variable-length values are not made from bytes (strings are, one a line)");
			return EPERM;
		}
	} else if (strcmp(key, "shape") == 0) {
		if (parse_shape(&rank, dims, value, size) < 0) {
			rq->settled = true;
			snprintf(why, wlen, "not a shape h5fs makes (dimensions separated by commas)");
			return EPERM;
		}
		if (rq->has_shape && (rank != rq->rank || memcmp(dims, rq->dims, rank * sizeof(*dims)) != 0)) {
			snprintf(why, wlen, "another user.h5.shape was set already (kept)");
			return EPERM;
		}
		rq->rank = rank;
		memcpy(rq->dims, dims, rank * sizeof(*dims));
		rq->has_shape = true;
	}
	return 0;
}

/* A complete request with its dtype on a node a descriptor holds open
 * (cp -a sets the xattrs after its last write, before its close): more
 * bytes there already than its type and shape take, or a descr that does
 * not parse, are refused now, not at the close (which cannot fail any
 * more): EPERM with why. Fewer bytes than it takes (a writer not done):
 * -1, which waits for the close (still_open first). An empty dataset (tar
 * writes after setting them) and a shape without its dtype yet (cp -a in
 * tmpfs's order) wait for the close too: 0. Under rt_mu. */
static int fits_now(const struct retype *rq, uint64_t size, char *why, size_t wlen)
{
	npy_header *h = calloc(1, sizeof(*h));
	int e = 0;

	if (!h)
		return 0;
	if (size && rq->dtype[0] && strcmp(rq->dtype, "|O") != 0 && header_of(h, rq, size, why, wlen) < 0)
		e = h->nbytes <= size ? EPERM : -1;
	free(h);
	return e;
}

/* The kernel sends a descriptor's RELEASE after close(2) has returned
 * (FLUSH is the close's request), and another worker may take the
 * setxattr that came after it first: `cat > bad; setfattr -n
 * user.h5.shape` then found the bytes "open" under load and was deferred
 * to that close, instead of refused (ASan CI, test_rename_keep). A
 * setxattr that completes a request the bytes do not fill (fits_now -1)
 * waits this long for the node's descriptors to go: true if one is still
 * open. */
#define RELEASE_WAIT_MS 100

static bool still_open(struct node *n)
{
	for (int i = 0; i < RELEASE_WAIT_MS; i++) {
		if (!__atomic_load_n(&n->opens, __ATOMIC_ACQUIRE))
			return false;
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	return __atomic_load_n(&n->opens, __ATOMIC_ACQUIRE) != 0;
}

int retype_note(h5fs *fs, struct node *n, const char *key, const char *value, size_t size, bool bytes)
{
	struct retype *rq, *fresh = NULL;
	char why[240] = "";
	bool open_now, done, stays, wait;
	uint64_t bytes_now;
	int e = 0, fit;

	while (value && size && (value[size - 1] == '\0' || value[size - 1] == '\n'))
		size--;
	/* any description value set (not to what it shows) starts one on
	 * bytes: a copy sets them in its own order (tmpfs lists the shape
	 * first, rsync sorts the names) */
	if (value && bytes && !__atomic_load_n(&n->retype, __ATOMIC_ACQUIRE) && !(fresh = calloc(1, sizeof(*fresh))))
		return ENOMEM;
	pthread_rwlock_rdlock(&n->lk);
	bytes_now = (uint64_t)n->st.st_size;
	pthread_rwlock_unlock(&n->lk);
	pthread_mutex_lock(&rt_mu);
	if (!n->retype && fresh)
		n->retype = fresh, fresh = NULL;
	free(fresh);    /* (another thread's first: a concurrent setxattr) */
	rq = n->retype;
	if (!rq) {
		pthread_mutex_unlock(&rt_mu);
		return -1;
	}
	if (rq->settled || !value) {
		/* made or refused already (logged once): the rest changes
		 * nothing; removals (rsync -X removes the names the source has
		 * not: user.h5.chunks of the bytes) neither */
		pthread_mutex_unlock(&rt_mu);
		return 0;
	}
	e = record(rq, key, value, size, why, sizeof(why));
	open_now = __atomic_load_n(&n->opens, __ATOMIC_ACQUIRE) != 0;
	done = !e && complete(rq);
	if (done && strcmp(dtype_of(rq), "|u1") == 0 && rq->rank == 1 && rq->dims[0] == bytes_now) {
		/* what it is already (a flat uint8 array copied back): nothing
		 * to make */
		rq->settled = true;
		done = false;
	}
	fit = done && open_now ? fits_now(rq, bytes_now, why, sizeof(why)) : 0;
	wait = fit < 0;
	if (fit > 0) {
		rq->settled = true;
		e = fit;
	}
	stays = rq->settled;
	if (wait)
		rq->deciding = true;    /* (retype_closed leaves it to us meanwhile) */
	pthread_mutex_unlock(&rt_mu);
	if (wait) {
		open_now = still_open(n);
		pthread_mutex_lock(&rt_mu);
		n->retype->deciding = false;
		pthread_mutex_unlock(&rt_mu);
		if (open_now) {
			/* (its RELEASE since the last look: decided at close) */
			retype_closed(fs, n);
			return 0;
		}
	}
	if (e) {
		h5fs_log(fs, LOG_NOTICE, "setxattr %s user.h5.%s %.*s: %s: %s%s", show_path(n->path), key,
			 (int)(size < 64 ? size : 64), value, e == EPERM ? "EPERM" : strerror(e), why,
			 stays ? "; it stays bytes (|u1)" : "");
		return e;
	}
	/* no descriptor has it open (setfattr, tar before its bytes, rsync
	 * -X on its closed temporary file): made now once complete (an
	 * empty one waits for its bytes, a shape alone that |u1 does not
	 * fit for its dtype); else at the last close (retype_closed): cp -a
	 * sets them through its descriptor, and every user.* name after
	 * them must reach the bytes' dataset first */
	if (done && !open_now && (rq = take(n, false)) != NULL) {
		e = make(fs, n, rq, true);
		free(rq);
	}
	return e;
}

bool retype_gone(struct node *n)
{
	bool gone;

	if (!__atomic_load_n(&n->retype, __ATOMIC_ACQUIRE))
		return false;
	pthread_mutex_lock(&rt_mu);
	gone = n->retype->made;
	pthread_mutex_unlock(&rt_mu);
	return gone;
}

void retype_open_wait(struct node *n)
{
	if (__atomic_load_n(&n->retype, __ATOMIC_ACQUIRE)) {
		pthread_rwlock_rdlock(&names_lk);
		pthread_rwlock_unlock(&names_lk);
	}
}

void retype_closed(h5fs *fs, struct node *n)
{
	struct retype *rq;

	if (!__atomic_load_n(&n->retype, __ATOMIC_ACQUIRE) || __atomic_load_n(&n->opens, __ATOMIC_ACQUIRE) ||
	    wfile_writing_addr(fs, n->addr) || !(rq = take(n, true)))
		return;
	(void)make(fs, n, rq, false);
	free(rq);
}
