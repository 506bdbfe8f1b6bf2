/* dataset.c - opening a dataset and reading its raw bytes.
 *
 * A dataset reads as the C-order byte stream of its elements, exactly as
 * stored (no type conversion). The object header gives the dataspace,
 * datatype, layout, fill value, filter pipeline and external file list
 * (spec IV.A.2.b-IV.A.2.l); the layout (IV.A.2.i) decides where the bytes live:
 * inside the layout message (compact), one block of the file (contiguous),
 * other files (external, IV.A.2.h), or chunks behind an index (chunk.c),
 * each a table entry (layout_ops.h, layout_<name>.c) this file dispatches
 * through. Storage that was never written reads as the fill value. The
 * read plan (what a reply is made of) is plan.c's. */
#include "source.h"
#include "base.h"
#include "file.h"
#include "ohdr.h"
#include "dspace.h"
#include "dtype.h"
#include "fillval.h"
#include "layout.h"
#include "pline.h"
#include "efl.h"
#include "lheap.h"
#include "dataset.h"
#include "vlen.h"
#include "chunk.h"
#include "layout_ops.h"
#include "cidx.h" /* filtered: which pin applies */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

/* Decode one message of `type` (following a shared-message reference).
 * Returns H5_ERR_NOTFOUND when the header has no such message. */
typedef int (*ds_decode_fn)(void *out, h5_dataset *d, uint16_t type, const uint8_t *buf, size_t len);

static int ds_read_msg(h5_dataset *d, const h5_ohdr *oh, uint16_t type, ds_decode_fn decode, void *out,
		       const char *what)
{
	const h5_msg *m = h5_ohdr_find(oh, type);
	const uint8_t *data = NULL;
	size_t len = 0;
	void *owned = NULL;
	int rc;

	if (!m)
		return H5_ERR_NOTFOUND;
	rc = h5_msg_read(&data, &len, &owned, d->f, m);
	if (rc < 0) {
		h5_err_wrap(rc, "%s message: ", what);
		goto out;
	}
	rc = decode(out, d, type, data, len);
	if (rc < 0)
		h5_err_wrap(rc, "%s message: ", what);
out:
	free(owned);
	return rc;
}

static int dec_dspace(void *out, h5_dataset *d, uint16_t type, const uint8_t *buf, size_t len)
{
	return h5_dspace_decode(out, &d->f->fmt, buf, len);
}

static int dec_dtype(void *out, h5_dataset *d, uint16_t type, const uint8_t *buf, size_t len)
{
	return h5_dtype_decode(out, buf, len, NULL);
}

static int dec_layout(void *out, h5_dataset *d, uint16_t type, const uint8_t *buf, size_t len)
{
	return h5_layout_decode(out, &d->f->fmt, buf, len);
}

static int dec_fill(void *out, h5_dataset *d, uint16_t type, const uint8_t *buf, size_t len)
{
	return h5_fill_decode(out, type, buf, len);
}

static int dec_pline(void *out, h5_dataset *d, uint16_t type, const uint8_t *buf, size_t len)
{
	return h5_pline_decode(out, buf, len);
}

static int dec_efl(void *out, h5_dataset *d, uint16_t type, const uint8_t *buf, size_t len)
{
	return h5_efl_decode(out, &d->f->fmt, buf, len);
}

/* Per-layout checks that the storage can hold nbytes, and what reads
 * need opened (IV.A.2.i): the layout's table entry (layout_ops.h). */
static int ds_init_layout(h5_dataset *d)
{
	d->lops = h5_layout_ops_of(d);
	if (!d->lops)
		return h5_err_set(H5_ERR_FORMAT, "unknown layout class %u", (unsigned)d->layout.cls);
	return d->lops->init(d);
}

/* The messages that describe a dataset (IV.A.2): dataspace, datatype and
 * layout (required), fill value and filter pipeline (optional) and, when
 * efl is set, the external file list. Decoded here once for reads
 * (h5_dataset_open) and for the user.h5.* xattrs (value.c); only d->f is
 * read, and h5_dataset_msgs_clear frees what was decoded. */
int h5_dataset_msgs_decode(h5_dataset *d, const h5_ohdr *oh, bool efl)
{
	int rc;

	rc = ds_read_msg(d, oh, H5_MSG_DSPACE, dec_dspace, &d->space, "dataspace");
	if (rc == H5_ERR_NOTFOUND)
		return h5_err_set(H5_ERR_FORMAT, "no dataspace message: not a dataset");
	if (rc < 0)
		return rc;
	rc = ds_read_msg(d, oh, H5_MSG_DTYPE, dec_dtype, &d->dtype, "datatype");
	if (rc == H5_ERR_NOTFOUND)
		return h5_err_set(H5_ERR_FORMAT, "no datatype message: not a dataset");
	if (rc < 0)
		return rc;
	rc = ds_read_msg(d, oh, H5_MSG_LAYOUT, dec_layout, &d->layout, "layout");
	if (rc == H5_ERR_NOTFOUND)
		return h5_err_set(H5_ERR_FORMAT, "no layout message: not a dataset");
	if (rc < 0)
		return rc;
	rc = ds_read_msg(d, oh, H5_MSG_FILL, dec_fill, &d->fill, "fill value");
	if (rc == H5_ERR_NOTFOUND)
		rc = ds_read_msg(d, oh, H5_MSG_FILL_OLD, dec_fill, &d->fill, "old fill value");
	if (rc < 0 && rc != H5_ERR_NOTFOUND)
		return rc;
	rc = ds_read_msg(d, oh, H5_MSG_PLINE, dec_pline, &d->pline, "filter pipeline");
	if (rc < 0 && rc != H5_ERR_NOTFOUND)
		return rc;
	if (efl) {
		rc = ds_read_msg(d, oh, H5_MSG_EFL, dec_efl, &d->efl, "external file list");
		if (rc < 0 && rc != H5_ERR_NOTFOUND)
			return rc;
	}
	h5_err_clear();
	return 0;
}

void h5_dataset_msgs_clear(h5_dataset *d)
{
	h5_dtype_free(d->dtype);
	d->dtype = NULL;
	h5_layout_clear(&d->layout);
	h5_fill_clear(&d->fill);
	h5_pline_clear(&d->pline);
	h5_efl_clear(&d->efl);
}

static int ds_open(h5_dataset *d, const h5_ohdr *oh)
{
	uint64_t esize;
	int64_t mtime;
	int rc;

	rc = h5_dataset_msgs_decode(d, oh, true);
	if (rc < 0)
		return rc;
	if (h5_ohdr_has_mtime(oh) && h5_ohdr_mtime(oh, &mtime) == 0) {
		d->has_mtime = true;
		d->mtime = mtime;
	}
	h5_err_clear();

	esize = d->dtype->size;
	rc = h5_dspace_nelmts(&d->space, &d->nelmts);
	if (rc < 0)
		return rc;
	/* Variable-length elements are heap references of dtype->size bytes:
	 * nbytes stays the size of those references (what the layout stores);
	 * such a dataset shows as text by default (view.c). */
	d->has_vlen = h5_dtype_has_vlen(d->dtype);
	d->conv = !d->has_vlen && h5_dtype_conv_needed(d->dtype);
	if (h5_mul_overflow(d->nelmts, esize, &d->nbytes) || d->nbytes > (uint64_t)INT64_MAX)
		return h5_err_set(H5_ERR_LIMIT, "dataset size overflows (%llu elements of %llu bytes)",
				  (unsigned long long)d->nelmts, (unsigned long long)esize);
	rc = h5_fill_elem(&d->fill_elem, &d->fill, d->dtype->size);
	if (rc < 0)
		return rc;
	return ds_init_layout(d);
}

/* h5_dataset_open_oh into w's spare memory when it has one */
static int ds_open_oh_in(h5_dataset **out, h5_file *f, uint64_t addr, const h5_ohdr *oh, h5_window *w)
{
	h5_dataset *d = NULL;
	int rc;

	*out = NULL;
	if (w && w->spare) {
		d = w->spare;
		w->spare = NULL;
		memset(d, 0, sizeof(*d));
	} else {
		d = calloc(1, sizeof(*d));
	}
	if (!d)
		return h5_err_set(H5_ERR_NOMEM, "out of memory opening dataset");
	d->f = f;
	d->addr = addr;
	rc = ds_open(d, oh);
	if (rc < 0) {
		h5_err_wrap(rc, "dataset at 0x%llx: ", (unsigned long long)addr);
		h5_dataset_close_once(d, w);
		return rc;
	}
	*out = d;
	return 0;
}

int h5_dataset_row_bytes(uint64_t *rb, const h5_dataset *d)
{
	*rb = d->dtype->size;
	for (unsigned i = 1; i < d->space.rank; i++)
		if (h5_mul_overflow(*rb, d->space.dims[i], rb))
			return h5_err_set(H5_ERR_LIMIT, "rows of dimension 0 overflow");
	return 0;
}

int h5_dataset_open_oh(h5_dataset **out, h5_file *f, uint64_t addr, const h5_ohdr *oh)
{
	return ds_open_oh_in(out, f, addr, oh, NULL);
}

int h5_dataset_open(h5_dataset **out, h5_file *f, uint64_t addr)
{
	h5_ohdr *oh = NULL;
	int rc;

	*out = NULL;
	rc = h5_ohdr_get(&oh, f, addr);
	if (rc < 0)
		return h5_err_wrap(rc, "dataset at 0x%llx: ", (unsigned long long)addr);
	rc = h5_dataset_open_oh(out, f, addr, oh);
	h5_ohdr_release(f, oh);
	return rc;
}

/* what d holds let go, not d itself */
static void ds_release(h5_dataset *d)
{
	if (d->lops && d->lops->close)
		d->lops->close(d);
	h5_dataset_msgs_clear(d);
	free(d->fill_elem);
	h5_vtext_free(d->vtext);        /* the text view's state (vlen.c) */
	if (d->vstate_free)             /* another view's (view.c) */
		d->vstate_free(d->vstate);
}

void h5_dataset_close(h5_dataset *d)
{
	if (!d)
		return;
	ds_release(d);
	free(d);
}

void h5_dataset_close_once(h5_dataset *d, h5_window *w)
{
	if (!d)
		return;
	ds_release(d);
	if (w && !w->spare)
		w->spare = d;
	else
		free(d);
}

uint64_t h5_dataset_allocated(const h5_dataset *d)
{
	return d->lops->allocated(d);
}

int h5_dataset_chunked(const h5_dataset *d)
{
	return d->layout.cls == H5_LAYOUT_CHUNKED;
}

/* An absence, not a failure: no message is set, so that it never stands
 * for the cause of a later error that set none (issue 56: a failed dd into
 * an lz4 dataset was logged as "records no modification time"). */
int h5_dataset_mtime(const h5_dataset *d, int64_t *mtime)
{
	if (!d->has_mtime)
		return H5_ERR_NOTFOUND;
	*mtime = d->mtime;
	return 0;
}

/* The stored element bytes [off, off+len) (heap references for
 * variable-length types); off+len <= d->nbytes. */
int h5_dataset_read_raw(h5_dataset *d, uint8_t *buf, uint64_t off, size_t len)
{
	return d->lops->read(d, buf, off, len);
}

/* The fill stream of a dataset (its fill element, or zeros), by window. */
void h5_dataset_fill(const h5_dataset *d, uint8_t *buf, uint64_t off, size_t len)
{
	size_t esize = d->dtype->size, phase, n, done = 0;

	if (len == 0)
		return;
	if (esize == 0 || !d->fill_elem) {
		memset(buf, 0, len);
		return;
	}
	/* first (possibly partial) element, then whole copies, doubling the
	 * already-filled aligned prefix to keep it O(log n) memcpy calls */
	phase = (size_t)(off % esize);
	n = esize - phase < len ? esize - phase : len;
	memcpy(buf, d->fill_elem + phase, n);
	done = n;
	if (done == len)
		return;
	n = esize < len - done ? esize : len - done;
	memcpy(buf + done, d->fill_elem, n);
	{
		size_t start = done, have = n;

		done += n;
		while (done < len) {
			size_t k = have < len - done ? have : len - done;

			memcpy(buf + done, buf + start, k);
			done += k;
			have += k;
		}
	}
}

/* A listing's child read once (format/ohdr.c h5_ohdr_get_once): its
 * facts and, for a dataset, the dataset opened from the same header. */
int h5_obj_open_once(h5_obj_info *info, h5_dataset **ds, h5_file *f, uint64_t addr, h5_window *w)
{
	h5_ohdr *oh = NULL;
	int rc;

	memset(info, 0, sizeof(*info));
	*ds = NULL;
	rc = h5_ohdr_get_once(&oh, f, addr, w);
	if (rc < 0)
		return rc;
	rc = h5_obj_info_of(info, f, oh, addr);
	if (rc == 0 && info->kind == H5_OBJ_DATASET)
		rc = ds_open_oh_in(ds, f, addr, oh, w);
	h5_ohdr_release(f, oh);
	return rc;
}
