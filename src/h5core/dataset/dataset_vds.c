/* dataset_vds.c - virtual datasets in the dataset layer: the mapping list
 * read from the global heap (layout class 3, IV.A.2.i), its sources opened
 * as datasets of related files (related.c, "." being this file), and reads
 * answered by vds.c. Sources are opened when the virtual dataset is, as
 * libhdf5 does to learn the extent of unlimited mappings, and stay open
 * with it - unless descriptors are scarce: when a source's file cannot be
 * opened because the caller's descriptor gate (h5_open_opts.fd_gate: a
 * collection's -o max_files) refuses it, or the process is out of
 * descriptors (EMFILE), the virtual dataset turns "scarce": the sources
 * opened so far are closed, each source is then opened only to learn its
 * extent and type, and again for each read of it, one at a time, so that
 * a dataset with more sources than descriptors reads instead of failing
 * (its read plan then reads instead of naming the sources' extents: no
 * descriptor of a source outlives the read that opened it).
 */
#include "base.h"
#include "file.h"
#include "dspace.h"
#include "dtype.h"
#include "gheap.h"
#include "related.h"
#include "dataset.h"
#include "layout_ops.h"
#include "vds.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A virtual dataset whose sources are virtual datasets, and so on: bounded,
 * so a file that maps itself (A -> B -> A) is an error, not a recursion. */
#define VDS_MAX_DEPTH 8
static __thread unsigned vds_depth;
/* The virtual datasets being opened on this thread, outermost first: one
 * met again is a cycle (a.h5:/v from b.h5:/v from a.h5:/v), refused at
 * once rather than after VDS_MAX_DEPTH levels - each a related file's
 * open (an indexed remount of a collection opened such a pair 17 times
 * for one `ls`, issue 45 item 3). */
static __thread struct vds_open_ent {
	const h5_file *f;
	uint64_t addr;
} vds_opening[VDS_MAX_DEPTH + 1];
static __thread unsigned vds_nopening;

typedef struct vsrc {
	h5_dataset *vd;         /* the virtual dataset */
	char *file, *dset;      /* as the mapping names them ("." this file) */
	h5_file *f;             /* NULL: the virtual dataset's own file, or closed */
	h5_dataset *d;          /* NULL: closed (scarce) */
	size_t swap;            /* element size to byte-swap (other byte order), or 0 */
	pthread_mutex_t mu;     /* scarce: one read at a time opens it */
} vsrc;

/* The sources of one virtual dataset that have a file of their own. */
struct vds_srcs {
	bool scarce;
	vsrc **v;
	size_t n, cap;
};

/* Same type, so the source's bytes are the virtual dataset's bytes. The
 * one conversion h5fs makes is the byte order of a number (a big-endian
 * source of a little-endian virtual dataset, as detector files have);
 * libhdf5 would also convert between numeric types. */
static bool swappable(const h5_dtype *a, const h5_dtype *b)
{
	return (a->cls == H5T_INTEGER || a->cls == H5T_FLOAT) && a->cls == b->cls && a->size == b->size &&
	       a->size > 1 && a->big_endian != b->big_endian && (a->bits ^ b->bits) == 1 &&
	       a->bit_offset == b->bit_offset && a->precision == b->precision && a->exp_bias == b->exp_bias &&
	       a->sign_loc == b->sign_loc && a->exp_loc == b->exp_loc && a->exp_size == b->exp_size &&
	       a->mant_loc == b->mant_loc && a->mant_size == b->mant_size;
}

static bool dtype_same(const h5_dtype *a, const h5_dtype *b, unsigned depth)
{
	if (depth > H5_MAX_DTYPE_DEPTH || a->cls != b->cls || a->size != b->size || a->bits != b->bits ||
	    a->bit_offset != b->bit_offset || a->precision != b->precision || a->exp_bias != b->exp_bias ||
	    a->sign_loc != b->sign_loc || a->exp_loc != b->exp_loc || a->exp_size != b->exp_size ||
	    a->mant_loc != b->mant_loc || a->mant_size != b->mant_size || a->nmembers != b->nmembers ||
	    a->arank != b->arank || !a->base != !b->base)
		return false;
	for (unsigned i = 0; i < a->arank; i++)
		if (a->adims[i] != b->adims[i])
			return false;
	if (a->members && b->members)
		for (size_t i = 0; i < a->nmembers; i++)
			if (a->members[i].offset != b->members[i].offset ||
			    strcmp(a->members[i].name, b->members[i].name) != 0 ||
			    !dtype_same(a->members[i].type, b->members[i].type, depth + 1))
				return false;
	return !a->base || dtype_same(a->base, b->base, depth + 1);
}

/* The gate refused a descriptor, or the process has none left. */
static bool out_of_descriptors(int rc, int e)
{
	return rc == H5_ERR_LIMIT || rc == H5_ERR_NOFD || (rc == H5_ERR_IO && (e == EMFILE || e == ENFILE));
}

static void src_detach(vsrc *s)
{
	h5_dataset_close(s->d);
	h5_related_release(s->f);
	s->d = NULL;
	s->f = NULL;
}

/* Open s's file (a related file) and dataset: 0, 1 (no such dataset), or
 * a negative h5_err. */
static int src_attach(vsrc *s)
{
	uint64_t addr;
	int rc;

	if (strcmp(s->file, ".") != 0) {
		errno = 0;
		/* while the dataset opens with every source kept, no wait for
		 * a descriptor: it turns scarce instead (src_attach_room), as
		 * the request that would let go of one may be waiting for one
		 * of the descriptors this dataset holds */
		rc = h5_related_open(&s->f, s->vd->f, s->file,
				     s->vd->vsrcs->scarce ? H5_RELATED_VDS : H5_RELATED_VDS | H5_RELATED_NOWAIT);
		if (rc == H5_ERR_PERM) {
			/* refused (outside FILE's tree): the dataset is unreadable, EIO */
			char *msg = strdup(h5_err_msg());

			rc = h5_err_set(H5_ERR_UNSUPPORTED, "source file %s", msg ? msg : s->file);
			free(msg);
		}
		if (rc != 0)
			return rc < 0 ? h5_err_wrap(rc, "source file %.200s: ", s->file) : 1;
	}
	rc = h5_path_lookup(&addr, s->f ? s->f : s->vd->f, s->dset);
	if (rc == H5_ERR_NOTFOUND) {
		h5_err_clear();
		src_detach(s);
		return 1;
	}
	if (rc == 0) {
		vds_depth++;
		rc = h5_dataset_open(&s->d, s->f ? s->f : s->vd->f, addr);
		vds_depth--;
	}
	if (rc < 0)
		src_detach(s);
	return rc;
}

/* src_attach; out of descriptors, the virtual dataset turns scarce (its
 * other sources closed: nothing has read them yet, the dataset being
 * opened) and s is tried once more. */
static int src_attach_room(vsrc *s)
{
	struct vds_srcs *vs = s->vd->vsrcs;
	int rc = src_attach(s), e = errno;

	if (rc < 0 && out_of_descriptors(rc, e) && !vs->scarce) {
		vs->scarce = true;
		for (size_t i = 0; i < vs->n; i++)
			src_detach(vs->v[i]);
		h5_err_clear();
		rc = src_attach(s);
	}
	return rc;
}

static void vsrc_close(void *h)
{
	vsrc *s = h;

	src_detach(s);
	pthread_mutex_destroy(&s->mu);
	free(s->file);
	free(s->dset);
	free(s);
}

static int vsrc_open(void **handle, unsigned *rank, uint64_t *dims, void *ctx, const char *file, const char *dset)
{
	h5_dataset *vd = ctx;
	struct vds_srcs *vs = vd->vsrcs;
	vsrc *s;
	int rc;

	*handle = NULL;
	if (vs->n == vs->cap) {
		size_t ncap = vs->cap ? vs->cap * 2 : 8;
		vsrc **nv = realloc(vs->v, ncap * sizeof(*nv));

		if (!nv)
			return h5_err_set(H5_ERR_NOMEM, "out of memory");
		vs->v = nv;
		vs->cap = ncap;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	s->vd = vd;
	pthread_mutex_init(&s->mu, NULL);
	s->file = strdup(file);
	s->dset = strdup(dset);
	if (!s->file || !s->dset) {
		vsrc_close(s);
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	}
	rc = src_attach_room(s);
	if (rc != 0) {
		vsrc_close(s);
		return rc;
	}
	if (!s->d->has_vlen && swappable(s->d->dtype, vd->dtype))
		s->swap = vd->dtype->size;
	else if (s->d->has_vlen || !dtype_same(s->d->dtype, vd->dtype, 0))
		rc = h5_err_set(H5_ERR_UNSUPPORTED, "its datatype differs from the virtual dataset's "
				"(h5fs does not convert types)");
	if (rc < 0) {
		h5_err_wrap(rc, "source %.200s:%.200s: ", file, dset);
		vsrc_close(s);
		return rc;
	}
	*rank = s->d->space.rank;
	memcpy(dims, s->d->space.dims, sizeof(uint64_t) * s->d->space.rank);
	if (s->f) {
		vs->v[vs->n++] = s;
		if (vs->scarce)
			src_detach(s);  /* opened again by each read */
	}
	*handle = s;
	return 0;
}

static int vsrc_read(void *h, void *buf, uint64_t off, size_t len)
{
	vsrc *s = h;
	bool scarce = s->vd->vsrcs->scarce && strcmp(s->file, ".") != 0;
	int rc = 0;

	if (scarce) {
		pthread_mutex_lock(&s->mu);
		rc = src_attach(s);
		if (rc > 0)
			rc = h5_err_set(H5_ERR_NOTFOUND, "source %.200s:%.200s: gone since the virtual dataset "
					"was opened", s->file, s->dset);
	}
	if (rc == 0)
		rc = h5_dataset_read(s->d, buf, off, len);
	if (scarce) {
		src_detach(s);
		pthread_mutex_unlock(&s->mu);
	}
	/* vds.c reads whole elements */
	if (rc == 0 && s->swap)
		for (uint8_t *p = buf, *end = p + len; p + s->swap <= end; p += s->swap)
			for (size_t i = 0; i < s->swap / 2; i++) {
				uint8_t t = p[i];

				p[i] = p[s->swap - 1 - i];
				p[s->swap - 1 - i] = t;
			}
	return rc;
}

static const h5_vds_source_ops vsrc_ops = { vsrc_open, vsrc_read, vsrc_close };

static int vds_open(h5_dataset *d);

int h5_dataset_vds_open(h5_dataset *d)
{
	int rc;

	for (unsigned i = 0; i < vds_nopening; i++)
		if (vds_opening[i].f == d->f && vds_opening[i].addr == d->addr)
			return h5_err_set(H5_ERR_LOOP, "virtual dataset at 0x%llx nested in itself: its sources lead "
					  "back to it (a cycle)", (unsigned long long)d->addr);
	if (vds_nopening > VDS_MAX_DEPTH)
		return h5_err_set(H5_ERR_LOOP, "virtual datasets nested more than %d deep (a cycle?)", VDS_MAX_DEPTH);
	vds_opening[vds_nopening].f = d->f;
	vds_opening[vds_nopening++].addr = d->addr;
	rc = vds_open(d);
	vds_nopening--;
	return rc;
}

static int vds_open(h5_dataset *d)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	int rc;

	if (d->efl.n)
		return h5_err_set(H5_ERR_FORMAT, "virtual layout with an external file list");
	if (d->has_vlen)
		return h5_err_set(H5_ERR_UNSUPPORTED, "virtual dataset of a variable-length type");
	if (d->space.rank == 0)
		return h5_err_set(H5_ERR_FORMAT, "virtual dataset without a simple dataspace");
	if (vds_depth >= VDS_MAX_DEPTH)
		return h5_err_set(H5_ERR_LOOP, "virtual datasets nested more than %d deep (a cycle?)", VDS_MAX_DEPTH);
	rc = h5_gheap_read(&buf, &len, d->f, d->layout.vds_heap_addr, d->layout.vds_heap_index);
	if (rc < 0)
		return h5_err_wrap(rc, "virtual dataset mappings: ");
	rc = h5_vds_decode(&d->vds, buf, len, &d->f->fmt);
	free(buf);
	if (rc < 0)
		return rc;
	if (!(d->vsrcs = calloc(1, sizeof(*d->vsrcs))))
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	rc = h5_vds_resolve(&d->vview, d->vds, d->space.rank, d->space.dims,
			    d->space.has_max ? d->space.maxdims : NULL, &vsrc_ops, d);
	if (rc < 0)
		return rc;
	/* the extent the sources give it now, as h5py sees it */
	memcpy(d->space.dims, d->vview->dims, sizeof(uint64_t) * d->space.rank);
	rc = h5_dspace_nelmts(&d->space, &d->nelmts);
	if (rc < 0)
		return rc;
	if (h5_mul_overflow(d->nelmts, d->dtype->size, &d->nbytes) || d->nbytes > (uint64_t)INT64_MAX)
		return h5_err_set(H5_ERR_LIMIT, "virtual dataset size overflows");
	return 0;
}

int h5_dataset_vds_read(h5_dataset *d, uint8_t *buf, uint64_t off, size_t len)
{
	return h5_vds_read(d->vview, buf, off, len, d->dtype->size, d->fill_elem);
}

void h5_dataset_vds_close(h5_dataset *d)
{
	h5_vds_view_free(d->vview);
	h5_vds_free(d->vds);
	d->vview = NULL;
	d->vds = NULL;
	if (d->vsrcs)
		free(d->vsrcs->v);
	free(d->vsrcs);
	d->vsrcs = NULL;
}

size_t h5_dataset_vds_count(const h5_dataset *d)
{
	return d->vds ? d->vds->n : 0;
}

/* ---- the read plan: the sources' own pieces ---------------------------------- */

struct cut_ud {
	h5_plan_build *b;
};

/* n bytes at src_off of source `handle` for window byte dst_off: its
 * source's pieces of a file, when that is all they are (fill of a source
 * is its own fill value, a decoded chunk its own cache's: read then). */
static int cut_piece(void *ud, void *handle, uint64_t dst_off, uint64_t src_off, size_t n)
{
	struct cut_ud *x = ud;
	h5_plan_build *b = x->b, *sub = NULL;
	vsrc *s = handle;
	int rc = 0;

	if (b->read)
		return 0;
	if (s->swap || (s->vd->vsrcs->scarce && strcmp(s->file, ".") != 0)) {
		/* converted; or scarce: the source is open only within a read */
		b->read = true;
		return 0;
	}
	sub = malloc(sizeof(*sub));
	if (!sub)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	rc = h5_plan_cut(sub, s->d, src_off, n, NULL, b->flags);
	if (rc < 0)
		goto out;
	for (size_t i = 0; i < sub->n && !b->read; i++) {
		h5_piece p = sub->pc[i];

		if (p.kind != H5_PIECE_EXTENT) {
			b->read = true;
			break;
		}
		p.ds = p.ds - src_off + b->off + dst_off;
		h5_plan_add(b, &p);
	}
	if (sub->read)
		b->read = true;
out:
	free(sub);
	return rc;
}

/* The virtual layout's map op: the pieces its sources store as plain
 * bytes, when they tile the window exactly (whole elements only:
 * page-sized requests of 1, 2, 4, 8-byte types); plan.c checks the tiling
 * (fill between mappings, or a later mapping over an earlier one, reads
 * the window instead). */
int h5_dataset_vds_cut(h5_plan_build *b)
{
	h5_dataset *d = b->d;
	size_t esize = d->dtype->size;
	struct cut_ud x = { b };
	int rc;

	if (!d->vview || b->off % esize || b->len % esize) {
		b->read = true;
		return 0;
	}
	rc = h5_vds_pieces(d->vview, b->off / esize, b->len / esize, esize, cut_piece, &x);
	if (rc < 0)
		return rc;
	b->overlap_reads = true;
	return 0;
}

int h5_dataset_vds_each_file(h5_dataset *d, int (*fn)(void *arg, const char *name, const struct stat *st),
			     void *arg)
{
	int rc = 0;

	for (size_t i = 0; d->vds && i < d->vds->n && rc == 0; i++) {
		const h5_vds_map *m = &d->vds->map[i];
		h5_file *sf = NULL;
		struct stat st;

		if (m->printf_names || strcmp(m->file, ".") == 0)
			continue;
		/* missing or refused: its elements read as fill, or EIO */
		if (h5_related_open(&sf, d->f, m->file, H5_RELATED_VDS) != 0) {
			h5_err_clear();
			continue;
		}
		if (sf != d->f && h5_file_fd(sf) >= 0 && fstat(h5_file_fd(sf), &st) == 0)
			rc = fn(arg, m->file, &st);
		h5_related_release(sf);
	}
	return rc;
}
