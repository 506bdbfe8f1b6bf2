/* dataset.c - opening a dataset and reading its raw bytes.
 *
 * A dataset reads as the C-order byte stream of its elements, exactly as
 * stored (no type conversion). The object header gives the dataspace,
 * datatype, layout, fill value, filter pipeline and external file list
 * (spec IV.A.2.b-IV.A.2.l); the layout (IV.A.2.i) decides where the bytes live:
 * inside the layout message (compact), one block of the file (contiguous),
 * other files (external, IV.A.2.h), or chunks behind an index (chunk.c).
 * Storage that was never written reads as the fill value.
 *
 * Reads never materialise more than the requested window: a contiguous
 * read is one h5_file_read() of exactly that window. */
#include "internal.h"

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

/* Variable-length data as text (below). */
typedef struct h5_vtext h5_vtext;
static int vt_new(h5_vtext **out);
static void vt_free(h5_vtext *vt);
static int vt_ensure(h5_vtext **out, h5_dataset *d);
static uint64_t vt_size(const h5_vtext *vt);

static bool dtype_has_vlen(const h5_dtype *t, unsigned depth)
{
	size_t i;

	if (!t || depth > H5_MAX_DTYPE_DEPTH)
		return false;
	if (t->cls == H5T_VLEN)
		return true;
	if (t->cls == H5T_COMPOUND) {
		for (i = 0; i < t->nmembers; i++)
			if (t->members && dtype_has_vlen(t->members[i].type, depth + 1))
				return true;
	}
	return (t->cls == H5T_ARRAY || t->cls == H5T_ENUM) && dtype_has_vlen(t->base, depth + 1);
}

/* One element of fill: the stored value, or NULL meaning zeros when the
 * value is undefined, the library default or all zero (IV.A.2.e, IV.A.2.f).
 * Zeros need no buffer, so a huge element type (an array of 16M doubles)
 * with default fill costs nothing; a stored value is bounded by the file. */
static int ds_init_fill(h5_dataset *d)
{
	uint32_t esize = d->dtype->size;
	size_t i;

	d->fill_elem = NULL;
	if (!d->fill.defined || d->fill.size == 0 || !d->fill.value)
		return 0;
	if (d->fill.size != esize)
		return h5_err_set(H5_ERR_FORMAT, "fill value is %zu bytes but the datatype is %u bytes",
				  d->fill.size, (unsigned)esize);
	for (i = 0; i < esize && d->fill.value[i] == 0; i++)
		;
	if (i == esize)
		return 0;
	d->fill_elem = malloc(esize);
	if (!d->fill_elem)
		return h5_err_set(H5_ERR_NOMEM, "out of memory for a %u-byte fill value", (unsigned)esize);
	memcpy(d->fill_elem, d->fill.value, esize);
	return 0;
}

/* Directory part of the HDF5 file's path, to resolve external file names
 * the way h5py users expect (next to the file, not the daemon's cwd). */
static int efl_resolve(char **out, const char *h5path, const char *name)
{
	const char *slash = strrchr(h5path, '/');
	size_t dlen = slash ? (size_t)(slash - h5path) : 0;
	size_t nlen = strlen(name);
	char *p;

	*out = NULL;
	if (name[0] == '/' || !slash) {
		p = strdup(name);
	} else {
		p = malloc(dlen + 1 + nlen + 1);
		if (p) {
			memcpy(p, h5path, dlen);
			p[dlen] = '/';
			memcpy(p + dlen + 1, name, nlen + 1);
		}
	}
	if (!p)
		return h5_err_set(H5_ERR_NOMEM, "out of memory resolving external file name");
	*out = p;
	return 0;
}

/* Whether an external file name may reach outside FILE's directory tree:
 * absolute, or with a ".." component. libhdf5 follows any name, which lets
 * a hostile file make a daemon running as root read any file on the
 * system; such names are only followed with -o efl_any. */
static bool efl_name_escapes(const char *name)
{
	const char *p = name;

	if (name[0] == '/')
		return true;
	while (*p) {
		size_t len = strcspn(p, "/");

		if (len == 2 && p[0] == '.' && p[1] == '.')
			return true;
		p += len;
		p += strspn(p, "/");
	}
	return false;
}

/* External storage (IV.A.2.h): names come from the local heap; the logical
 * stream is the concatenation of the segments in list order. */
static int ds_init_efl(h5_dataset *d)
{
	h5_lheap *heap = NULL;
	uint64_t total = 0;
	size_t i;
	int rc = 0;

	if (d->f->mem) {
		rc = h5_err_set(H5_ERR_UNSUPPORTED, "external data files are not read for in-memory images");
		goto out;
	}
	if (d->layout.cls != H5_LAYOUT_CONTIGUOUS) {
		rc = h5_err_set(H5_ERR_FORMAT, "external file list with a non-contiguous layout (class %u)",
				(unsigned)d->layout.cls);
		goto out;
	}
	for (i = 0; i < d->efl.n; i++) {
		const h5_efl_entry *e = &d->efl.e[i];
		uint64_t end;

		if (e->size == H5_UNLIMITED) {
			if (i + 1 != d->efl.n) {
				rc = h5_err_set(H5_ERR_FORMAT, "external file list: only the last of %zu segments "
						"may be unlimited (segment %zu)", d->efl.n, i);
				goto out;
			}
			total = H5_UNLIMITED;
			continue;
		}
		if (h5_add_overflow(e->offset, e->size, &end) || end > (uint64_t)INT64_MAX ||
		    h5_add_overflow(total, e->size, &total)) {
			rc = h5_err_set(H5_ERR_FORMAT, "external file list: segment %zu (offset %llu, size %llu) "
					"overflows", i, (unsigned long long)e->offset, (unsigned long long)e->size);
			goto out;
		}
	}
	if (total < d->nbytes) {
		rc = h5_err_set(H5_ERR_FORMAT, "external file list holds %llu bytes but the dataset needs %llu",
				(unsigned long long)total, (unsigned long long)d->nbytes);
		goto out;
	}
	if (d->efl.n == 0)
		goto out;
	d->efl_paths = calloc(d->efl.n, sizeof(*d->efl_paths));
	if (!d->efl_paths) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory for the external file list");
		goto out;
	}
	rc = h5_lheap_get(&heap, d->f, d->efl.heap_addr);
	if (rc < 0) {
		h5_err_wrap(rc, "external file list heap: ");
		goto out;
	}
	for (i = 0; i < d->efl.n; i++) {
		const char *name = h5_lheap_string(heap, d->efl.e[i].name_off);

		if (!name || !*name) {
			rc = h5_err_set(H5_ERR_FORMAT, "external file list: bad name offset %llu in local heap 0x%llx",
					(unsigned long long)d->efl.e[i].name_off,
					(unsigned long long)d->efl.heap_addr);
			goto out;
		}
		if (!d->f->efl_any && efl_name_escapes(name)) {
			rc = h5_err_set(H5_ERR_UNSUPPORTED, "external file \"%.200s\" is absolute or contains \"..\": "
					"not followed (mount with -o efl_any to allow)", name);
			goto out;
		}
		rc = efl_resolve(&d->efl_paths[i], h5_file_path(d->f), name);
		if (rc < 0)
			goto out;
	}
out:
	if (heap)
		h5_lheap_release(d->f, heap);
	return rc;
}

/* Per-layout checks that the storage can hold nbytes (IV.A.2.i). */
static int ds_init_layout(h5_dataset *d)
{
	h5_layout *l = &d->layout;
	uint64_t cb;
	unsigned i;
	int rc;

	switch (l->cls) {
	case H5_LAYOUT_COMPACT:
		if (d->efl.n)
			return h5_err_set(H5_ERR_FORMAT, "compact layout with an external file list");
		if (l->compact_size < d->nbytes || (l->compact_size && !l->compact))
			return h5_err_set(H5_ERR_FORMAT, "compact data is %zu bytes but the dataset needs %llu",
					  l->compact_size, (unsigned long long)d->nbytes);
		return 0;
	case H5_LAYOUT_CONTIGUOUS:
		if (d->efl.n)
			return ds_init_efl(d);
		/* Layout v1/v2 store no size (dimensions were 32-bit there):
		 * libhdf5 derives it from the dataspace, so do we. */
		if (l->version < 3)
			l->size = d->nbytes;
		if (!h5_addr_defined(l->addr))
			return 0;
		if (l->size < d->nbytes)
			return h5_err_set(H5_ERR_FORMAT, "contiguous storage at 0x%llx is %llu bytes but the "
					  "dataset needs %llu", (unsigned long long)l->addr,
					  (unsigned long long)l->size, (unsigned long long)d->nbytes);
		if (!h5_file_range_ok(d->f, l->addr, d->nbytes))
			return h5_err_set(H5_ERR_FORMAT, "contiguous storage 0x%llx+%llu lies outside the file "
					  "(%llu bytes)", (unsigned long long)l->addr,
					  (unsigned long long)d->nbytes, (unsigned long long)h5_file_eof(d->f));
		return 0;
	case H5_LAYOUT_CHUNKED:
		if (d->efl.n)
			return h5_err_set(H5_ERR_FORMAT, "chunked layout with an external file list");
		if (l->ndims != d->space.rank || l->ndims == 0)
			return h5_err_set(H5_ERR_FORMAT, "chunked layout has %u dimensions but the dataspace "
					  "has rank %u", l->ndims, d->space.rank);
		cb = d->dtype->size;
		for (i = 0; i < l->ndims; i++) {
			if (l->chunk[i] == 0)
				return h5_err_set(H5_ERR_FORMAT, "chunk dimension %u is zero", i);
			if (h5_mul_overflow(cb, l->chunk[i], &cb) || cb > (uint64_t)SIZE_MAX / 2)
				return h5_err_set(H5_ERR_LIMIT, "chunk size overflows");
		}
		d->chunk_bytes = cb;
		rc = h5_chunk_index_open(&d->cidx, d);
		if (rc < 0)
			return h5_err_wrap(rc, "chunk index: ");
		return 0;
	case H5_LAYOUT_VIRTUAL:
		return h5_dataset_vds_open(d);
	default:
		return h5_err_set(H5_ERR_FORMAT, "unknown layout class %u", (unsigned)l->cls);
	}
}

static int ds_open(h5_dataset *d, const h5_ohdr *oh)
{
	uint64_t esize;
	int64_t mtime;
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
	rc = ds_read_msg(d, oh, H5_MSG_EFL, dec_efl, &d->efl, "external file list");
	if (rc < 0 && rc != H5_ERR_NOTFOUND)
		return rc;
	if (h5_ohdr_mtime(oh, &mtime) == 0) {
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
	 * the dataset reads as text (vt_* below), measured on demand. */
	d->has_vlen = dtype_has_vlen(d->dtype, 0);
	if (d->has_vlen) {
		rc = vt_new(&d->vtext);
		if (rc < 0)
			return rc;
	}
	if (h5_mul_overflow(d->nelmts, esize, &d->nbytes) || d->nbytes > (uint64_t)INT64_MAX)
		return h5_err_set(H5_ERR_LIMIT, "dataset size overflows (%llu elements of %llu bytes)",
				  (unsigned long long)d->nelmts, (unsigned long long)esize);
	rc = ds_init_fill(d);
	if (rc < 0)
		return rc;
	return ds_init_layout(d);
}

int h5_dataset_open(h5_dataset **out, h5_file *f, uint64_t addr)
{
	h5_dataset *d = NULL;
	h5_ohdr *oh = NULL;
	int rc;

	*out = NULL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return h5_err_set(H5_ERR_NOMEM, "out of memory opening dataset");
	d->f = f;
	d->addr = addr;
	rc = h5_ohdr_get(&oh, f, addr);
	if (rc < 0)
		goto out;
	rc = ds_open(d, oh);
out:
	if (oh)
		h5_ohdr_release(f, oh);
	if (rc < 0) {
		h5_err_wrap(rc, "dataset at 0x%llx: ", (unsigned long long)addr);
		h5_dataset_close(d);
		return rc;
	}
	*out = d;
	return 0;
}

void h5_dataset_close(h5_dataset *d)
{
	size_t i;

	if (!d)
		return;
	if (d->cidx)
		h5_chunk_index_close(d->cidx);
	h5_dataset_vds_close(d);
	if (d->efl_paths) {
		for (i = 0; i < d->efl.n; i++)
			free(d->efl_paths[i]);
		free(d->efl_paths);
	}
	h5_dtype_free(d->dtype);
	h5_layout_clear(&d->layout);
	h5_fill_clear(&d->fill);
	h5_pline_clear(&d->pline);
	h5_efl_clear(&d->efl);
	free(d->fill_elem);
	vt_free(d->vtext);
	free(d);
}

uint64_t h5_dataset_size(const h5_dataset *d)
{
	h5_vtext *vt;

	if (!d->has_vlen)
		return d->nbytes;
	/* The text is measured once, under the index's lock; the dataset
	 * itself is not changed (const is kept for every other field). */
	if (vt_ensure(&vt, (h5_dataset *)d) == 0)
		return vt_size(vt);
	/* Every element is at least its newline: a size the reads can reach,
	 * so they report the error instead of an empty file pretending. */
	return d->nelmts;
}

uint64_t h5_dataset_allocated(const h5_dataset *d)
{
	uint64_t sum = 0, v;
	size_t i;

	switch (d->layout.cls) {
	case H5_LAYOUT_COMPACT:
		return d->layout.compact_size;
	case H5_LAYOUT_CONTIGUOUS:
		if (d->efl.n) {
			for (i = 0; i < d->efl.n; i++) {
				/* an unlimited segment holds what the dataset needs */
				if (d->efl.e[i].size == H5_UNLIMITED)
					return sum > d->nbytes ? sum : d->nbytes;
				if (h5_add_overflow(sum, d->efl.e[i].size, &sum))
					return UINT64_MAX;
			}
			return sum;
		}
		if (!h5_addr_defined(d->layout.addr))
			return 0;
		/* a stored size past the end of the file (only nbytes of it are
		 * ever read, and those were checked) must not show as blocks */
		return h5_file_range_ok(d->f, d->layout.addr, d->layout.size) ? d->layout.size : d->nbytes;
	case H5_LAYOUT_CHUNKED:
		if (d->cidx && h5_chunk_allocated(&v, d->cidx) == 0)
			return v;
		return 0;
	default:
		return 0;
	}
}

int h5_dataset_mtime(const h5_dataset *d, int64_t *mtime)
{
	if (!d->has_mtime)
		return h5_err_set(H5_ERR_NOTFOUND, "dataset at 0x%llx records no modification time",
				  (unsigned long long)d->addr);
	*mtime = d->mtime;
	return 0;
}

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

/* Read [off, off+len) of the external-file stream. Files are opened per
 * read: nothing to leak or exhaust when thousands of datasets are open. */
static int efl_read(h5_dataset *d, uint8_t *buf, uint64_t off, size_t len)
{
	uint64_t seg_start = 0;
	size_t i, done = 0;
	int rc = 0;

	for (i = 0; i < d->efl.n && done < len; i++) {
		const h5_efl_entry *e = &d->efl.e[i];
		uint64_t seg_len = e->size, pos = off + done, within, want;
		const char *path = d->efl_paths[i];
		struct stat st;
		int fd;

		if (seg_len != H5_UNLIMITED && pos >= seg_start + seg_len) {
			seg_start += seg_len;
			continue;
		}
		within = pos - seg_start;
		want = len - done;
		if (seg_len != H5_UNLIMITED && want > seg_len - within)
			want = seg_len - within;
		if (e->offset + within > (uint64_t)INT64_MAX - want)
			return h5_err_set(H5_ERR_FORMAT, "external file %s: offset overflows", path);
		/* O_NONBLOCK: a name that leads to a FIFO must not hang the daemon */
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0)
			return h5_err_set(H5_ERR_IO, "external file %s: %s", path, strerror(errno));
		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
			close(fd);
			return h5_err_set(H5_ERR_IO, "external file %s: not a regular file", path);
		}
		while (want > 0) {
			ssize_t n = pread(fd, buf + done, (size_t)want, (off_t)(e->offset + within));

			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				rc = h5_err_set(H5_ERR_IO, "external file %s: read at %llu: %s", path,
						(unsigned long long)(e->offset + within), strerror(errno));
				break;
			}
			if (n == 0) {
				rc = h5_err_set(H5_ERR_IO, "external file %s is too short: ends before byte %llu "
						"of segment %zu", path, (unsigned long long)(e->offset + within), i);
				break;
			}
			done += (size_t)n;
			within += (uint64_t)n;
			want -= (uint64_t)n;
		}
		close(fd);
		if (rc < 0)
			return rc;
		if (seg_len != H5_UNLIMITED)
			seg_start += seg_len;
	}
	if (done < len)
		return h5_err_set(H5_ERR_FORMAT, "external file list ends before byte %llu",
				  (unsigned long long)(off + done));
	return 0;
}

/* The stored element bytes [off, off+len) (heap references for
 * variable-length types); off+len <= d->nbytes. */
static int ds_read_raw(h5_dataset *d, uint8_t *buf, uint64_t off, size_t len)
{
	int rc;

	switch (d->layout.cls) {
	case H5_LAYOUT_COMPACT:
		memcpy(buf, d->layout.compact + off, len);
		return 0;
	case H5_LAYOUT_CONTIGUOUS:
		if (d->efl.n) {
			rc = efl_read(d, buf, off, len);
		} else if (!h5_addr_defined(d->layout.addr)) {
			h5_dataset_fill(d, buf, off, len);
			return 0;
		} else {
			rc = h5_file_read(d->f, d->layout.addr + off, buf, len);
		}
		break;
	case H5_LAYOUT_CHUNKED:
		rc = h5_chunk_read(d, buf, off, len);
		break;
	case H5_LAYOUT_VIRTUAL:
		rc = h5_dataset_vds_read(d, buf, off, len);
		break;
	default:
		return h5_err_set(H5_ERR_FORMAT, "unknown layout class %u", (unsigned)d->layout.cls);
	}
	return rc;
}

/* ---- variable-length data as text ---------------------------------------
 * Elements of a type holding variable-length data are references into the
 * global heap (III.E) - meaningless outside the file - so such a dataset
 * reads as text (doc/h5fs.1, MAPPING): one line per element in C order,
 * each ended by "\n". A variable-length string gives its bytes verbatim
 * (a string containing "\n" spans several lines); any other type gives its
 * value in the text rules of attributes (h5_value_text), where nested
 * strings are quoted and escaped, so it stays on one line.
 *
 * The size is known only once every element has been measured. That is
 * done once, on the first size query or read, and leaves a sparse index:
 * the text offset of every stride-th element. A read then decodes at most
 * stride - 1 elements before its window and only the elements it spans.
 * Strings are measured from their stored length, without reading the
 * heap; other types must be rendered, but a run of consecutive elements
 * with the same stored bytes (fill values, repeated records) is rendered
 * once. */

#define VT_STRIDE 1024                    /* elements between two index marks */
#define VT_MAX_MARKS ((uint64_t)1 << 20)  /* 8 MiB of index at most: the stride grows beyond */
#define VT_MAX_ELMTS ((uint64_t)1 << 30)  /* measuring more would stall a lookup for long */
#define VT_BATCH_BYTES ((size_t)64 << 10) /* stored bytes decoded per step */

struct h5_vtext {
	pthread_mutex_t lock;   /* held while measuring; then everything is read-only */
	bool ready;
	int err;                /* a deterministic failure of the measurement, kept */
	char *err_msg;
	uint64_t size;          /* bytes of text */
	uint64_t stride;
	uint64_t nmarks;
	uint64_t *marks;        /* marks[k]: text offset of element k * stride */
};

static int vt_new(h5_vtext **out)
{
	h5_vtext *vt = calloc(1, sizeof(*vt));

	*out = NULL;
	if (!vt)
		return h5_err_set(H5_ERR_NOMEM, "out of memory for a text index");
	if (pthread_mutex_init(&vt->lock, NULL) != 0) {
		free(vt);
		return h5_err_set(H5_ERR_NOMEM, "cannot create the lock of a text index");
	}
	*out = vt;
	return 0;
}

static void vt_free(h5_vtext *vt)
{
	if (!vt)
		return;
	pthread_mutex_destroy(&vt->lock);
	free(vt->marks);
	free(vt->err_msg);
	free(vt);
}

static bool vt_is_string(const h5_dataset *d)
{
	return d->dtype->cls == H5T_VLEN && d->dtype->vlen_type == 1;
}

/* A variable-length string element: 4-byte length, then the global heap ID
 * (collection address, 4-byte object index), IV.A.2.d class 9. */
typedef struct vt_str {
	uint32_t len;           /* bytes; 0 for a null string */
	uint64_t addr;
	uint32_t index;
} vt_str;

static void vt_str_decode(vt_str *out, const h5_dataset *d, const uint8_t *p)
{
	unsigned sa = d->f->fmt.sizeof_addr;

	out->len = (uint32_t)h5_le_decode(p, 4);
	out->addr = h5_le_decode(p + 4, sa);
	out->index = (uint32_t)h5_le_decode(p + 4 + sa, 4);
	/* address 0 is a null string whatever the length says, as libhdf5
	 * decides (H5T__vlen_disk_isnull) */
	if (out->addr == 0)
		out->len = 0;
}

/* Just the text length of a string element: measuring every element of a
 * large dataset is this loop, so it avoids the general decoder. */
static inline uint32_t vt_str_len(unsigned sizeof_addr, const uint8_t *p)
{
	uint32_t len = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
	uint8_t addr_bits = 0;

	for (unsigned i = 0; i < sizeof_addr; i++)
		addr_bits |= p[4 + i];
	return addr_bits ? len : 0;   /* address 0: null, as vt_str_decode */
}

/* Text of one element without its newline: *txt is malloc'd (NULL for an
 * empty string). */
static int vt_elem_text(uint8_t **txt, size_t *len, h5_dataset *d, const uint8_t *p)
{
	uint8_t *obj = NULL;
	size_t olen = 0;
	vt_str s;
	int rc;

	*txt = NULL;
	*len = 0;
	if (!vt_is_string(d)) {
		char *t = NULL;

		rc = h5_value_text(&t, len, d->f, d->dtype, p, d->dtype->size, 1);
		*txt = (uint8_t *)t;
		return rc;
	}
	vt_str_decode(&s, d, p);
	if (s.len == 0)
		return 0;
	rc = h5_gheap_read(&obj, &olen, d->f, s.addr, s.index);
	if (rc < 0)
		return h5_err_wrap(rc, "variable-length string: ");
	if (olen < s.len) {
		free(obj);
		return h5_err_set(H5_ERR_FORMAT, "variable-length string of %u bytes, but its global heap object "
				  "0x%llx/%u has %zu", s.len, (unsigned long long)s.addr, s.index, olen);
	}
	*txt = obj;
	*len = s.len;
	return 0;
}

/* The last element rendered, reused while the stored bytes repeat. */
typedef struct vt_memo {
	uint8_t *raw;           /* esize bytes */
	bool valid;
	uint8_t *txt;
	size_t len;
} vt_memo;

static void vt_memo_clear(vt_memo *m)
{
	free(m->raw);
	free(m->txt);
}

/* Text of the element at p, through the memo (non-string types). The text
 * stays owned by the memo. */
static int vt_memo_text(const uint8_t **txt, size_t *len, vt_memo *m, h5_dataset *d, const uint8_t *p)
{
	size_t esize = d->dtype->size;
	int rc;

	if (!m->valid || memcmp(m->raw, p, esize) != 0) {
		free(m->txt);
		m->txt = NULL;
		m->valid = false;
		rc = vt_elem_text(&m->txt, &m->len, d, p);
		if (rc < 0)
			return rc;
		memcpy(m->raw, p, esize);
		m->valid = true;
	}
	*txt = m->txt;
	*len = m->len;
	return 0;
}

/* Elements per step and the buffers for one pass over the elements. */
static int vt_buffers(uint8_t **batch, uint64_t *per, vt_memo *memo, const h5_dataset *d)
{
	uint64_t esize = d->dtype->size;
	size_t need = 4 + (size_t)d->f->fmt.sizeof_addr + 4;

	*batch = NULL;
	memset(memo, 0, sizeof(*memo));
	if (esize == 0 || esize > H5_VALUE_MAX_TEXT)
		return h5_err_set(H5_ERR_LIMIT, "elements of %llu bytes cannot be shown as text",
				  (unsigned long long)esize);
	if (vt_is_string(d) && esize < need)
		return h5_err_set(H5_ERR_FORMAT, "variable-length string type of %llu bytes cannot hold a heap "
				  "reference (%zu bytes)", (unsigned long long)esize, need);
	*per = VT_BATCH_BYTES / esize ? VT_BATCH_BYTES / esize : 1;
	*batch = malloc((size_t)(*per * esize));
	memo->raw = malloc((size_t)esize);
	if (!*batch || !memo->raw) {
		free(*batch);
		*batch = NULL;
		free(memo->raw);
		memo->raw = NULL;
		return h5_err_set(H5_ERR_NOMEM, "out of memory decoding variable-length elements");
	}
	return 0;
}

/* Measure every element: the text size and the index marks. */
static int vt_build(h5_vtext *vt, h5_dataset *d)
{
	uint64_t esize = d->dtype->size, n = d->nelmts, per = 1, stride = VT_STRIDE, nmarks, total = 0;
	uint8_t *batch = NULL;
	uint64_t *marks = NULL;
	vt_memo memo;
	bool str = vt_is_string(d);
	int rc;

	rc = vt_buffers(&batch, &per, &memo, d);
	if (rc < 0)
		goto out;
	if (n > VT_MAX_ELMTS) {
		rc = h5_err_set(H5_ERR_LIMIT, "%llu variable-length elements: more than %llu cannot be shown as "
				"text", (unsigned long long)n, (unsigned long long)VT_MAX_ELMTS);
		goto out;
	}
	if (n / stride >= VT_MAX_MARKS)
		stride = n / VT_MAX_MARKS + 1;
	nmarks = n ? (n - 1) / stride + 1 : 0;
	marks = malloc((size_t)(nmarks ? nmarks : 1) * sizeof(*marks));
	if (!marks) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory for a text index of %llu entries",
				(unsigned long long)nmarks);
		goto out;
	}
	for (uint64_t i = 0; i < n; i += per) {
		uint64_t cnt = n - i < per ? n - i : per;

		rc = ds_read_raw(d, batch, i * esize, (size_t)(cnt * esize));
		if (rc < 0)
			goto out;
		for (uint64_t j = 0; j < cnt; j++) {
			const uint8_t *p = batch + j * esize;
			size_t len;

			if ((i + j) % stride == 0)
				marks[(i + j) / stride] = total;
			if (str) {
				len = vt_str_len(d->f->fmt.sizeof_addr, p);
			} else {
				const uint8_t *txt;

				rc = vt_memo_text(&txt, &len, &memo, d, p);
				if (rc < 0) {
					h5_err_wrap(rc, "element %llu: ", (unsigned long long)(i + j));
					goto out;
				}
			}
			if (h5_add_overflow(total, (uint64_t)len + 1, &total) || total > (uint64_t)INT64_MAX) {
				rc = h5_err_set(H5_ERR_LIMIT, "the text of the elements exceeds 2^63-1 bytes");
				goto out;
			}
		}
	}
	vt->size = total;
	vt->stride = stride;
	vt->nmarks = nmarks;
	vt->marks = marks;
	marks = NULL;
	vt->ready = true;
out:
	free(marks);
	free(batch);
	vt_memo_clear(&memo);
	return rc;
}

/* The measured text of d, measuring it on first use. A failure that would
 * recur (a damaged heap, a limit) is kept and reported again without
 * measuring again; memory or I/O failures are retried next time. */
static int vt_ensure(h5_vtext **out, h5_dataset *d)
{
	h5_vtext *vt = d->vtext;
	int rc = 0;

	*out = NULL;
	if (!vt)
		return h5_err_set(H5_ERR_INVAL, "internal: dataset at 0x%llx has no text index",
				  (unsigned long long)d->addr);
	pthread_mutex_lock(&vt->lock);
	if (!vt->ready) {
		if (vt->err) {
			rc = h5_err_set(vt->err, "%s", vt->err_msg ? vt->err_msg : "variable-length data unreadable");
		} else {
			rc = vt_build(vt, d);
			if (rc < 0 && rc != H5_ERR_NOMEM && rc != H5_ERR_IO) {
				vt->err = rc;
				vt->err_msg = strdup(h5_err_msg());
			}
		}
	}
	pthread_mutex_unlock(&vt->lock);
	if (rc == 0)
		*out = vt;
	return rc;
}

static uint64_t vt_size(const h5_vtext *vt)
{
	return vt->size;
}

/* Copy the part of element text [pos, pos+len] (the newline at pos+len)
 * that falls in [off, end) to out (which holds [off, end)). */
static void vt_copy(uint8_t *out, uint64_t off, uint64_t end, uint64_t pos, const uint8_t *txt, size_t len)
{
	uint64_t from = pos > off ? pos : off;
	uint64_t to = pos + len + 1 < end ? pos + len + 1 : end;

	for (uint64_t b = from; b < to; ) {
		if (b < pos + len) {
			uint64_t stop = to < pos + len ? to : pos + len;

			memcpy(out + (b - off), txt + (b - pos), (size_t)(stop - b));
			b = stop;
		} else {
			out[b - off] = '\n';
			b++;
		}
	}
}

/* [off, off+len) of the text; the caller checked off+len <= vt->size. */
static int vt_read(h5_dataset *d, const h5_vtext *vt, uint8_t *out, uint64_t off, size_t len)
{
	uint64_t esize = d->dtype->size, n = d->nelmts, per = 1, end = off + len, pos, idx;
	size_t lo = 0, hi = (size_t)vt->nmarks;
	uint8_t *batch = NULL;
	vt_memo memo;
	bool str = vt_is_string(d);
	int rc;

	rc = vt_buffers(&batch, &per, &memo, d);
	if (rc < 0)
		goto out;
	if (vt->nmarks == 0) {
		rc = h5_err_set(H5_ERR_INVAL, "read of %zu bytes from a dataset without elements", len);
		goto out;
	}
	/* the last mark at or before off */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (vt->marks[mid] <= off)
			lo = mid;
		else
			hi = mid;
	}
	idx = (uint64_t)lo * vt->stride;
	pos = vt->marks[lo];
	while (pos < end) {
		uint64_t cnt;

		if (idx >= n) {
			rc = h5_err_set(H5_ERR_FORMAT, "the elements' text ends at byte %llu, before the %llu "
					"measured", (unsigned long long)pos, (unsigned long long)vt->size);
			goto out;
		}
		cnt = n - idx < per ? n - idx : per;
		rc = ds_read_raw(d, batch, idx * esize, (size_t)(cnt * esize));
		if (rc < 0)
			goto out;
		for (uint64_t j = 0; j < cnt && pos < end; j++, idx++) {
			const uint8_t *p = batch + j * esize;
			const uint8_t *txt;
			uint8_t *owned = NULL;
			size_t tlen;

			if (str) {
				/* strings are measured without the heap: skip the
				 * ones before the window that way */
				uint32_t slen = vt_str_len(d->f->fmt.sizeof_addr, p);

				if (pos + slen + 1 <= off) {
					pos += (uint64_t)slen + 1;
					continue;
				}
				rc = vt_elem_text(&owned, &tlen, d, p);
				txt = owned;
			} else {
				rc = vt_memo_text(&txt, &tlen, &memo, d, p);
			}
			if (rc < 0) {
				h5_err_wrap(rc, "element %llu: ", (unsigned long long)idx);
				goto out;
			}
			vt_copy(out, off, end, pos, txt, tlen);
			pos += (uint64_t)tlen + 1;
			free(owned);
		}
	}
out:
	free(batch);
	vt_memo_clear(&memo);
	return rc;
}

int h5_dataset_read(h5_dataset *d, void *buf, uint64_t off, size_t len)
{
	uint64_t end, size = d->nbytes;
	h5_vtext *vt = NULL;
	int rc;

	if (d->has_vlen) {
		rc = vt_ensure(&vt, d);
		if (rc < 0)
			return h5_err_wrap(rc, "dataset at 0x%llx: ", (unsigned long long)d->addr);
		size = vt->size;
	}
	if (h5_add_overflow(off, len, &end) || end > size)
		return h5_err_set(H5_ERR_INVAL, "read of %zu bytes at %llu is past the end of the dataset "
				  "(%llu bytes)", len, (unsigned long long)off, (unsigned long long)size);
	if (len == 0)
		return 0;
	rc = vt ? vt_read(d, vt, buf, off, len) : ds_read_raw(d, buf, off, len);
	if (rc < 0)
		return h5_err_wrap(rc, "dataset at 0x%llx: ", (unsigned long long)d->addr);
	return 0;
}

int h5_dataset_extents(h5_extent *out, size_t max, size_t *n, h5_dataset *d, uint64_t off, size_t len)
{
	uint64_t end;

	*n = 0;
	if (h5_add_overflow(off, len, &end) || end > d->nbytes)
		return h5_err_set(H5_ERR_INVAL, "window of %zu bytes at %llu is past the end of the dataset", len,
				  (unsigned long long)off);
	if (d->has_vlen || h5_file_fd(d->f) < 0)
		return h5_err_set(H5_ERR_UNSUPPORTED, "not stored as plain bytes of FILE");
	if (len == 0)
		return 0;
	switch (d->layout.cls) {
	case H5_LAYOUT_CONTIGUOUS:
		if (d->efl.n || !h5_addr_defined(d->layout.addr))
			return h5_err_set(H5_ERR_UNSUPPORTED, "external or unallocated storage");
		if (max == 0)
			return h5_err_set(H5_ERR_LIMIT, "no room for a piece");
		/* the whole storage was checked against the file at open, and
		 * the file only grows */
		out[0].file_off = d->f->base + d->layout.addr + off;
		out[0].len = len;
		out[0].fd = h5_file_fd(d->f);
		*n = 1;
		return 0;
	case H5_LAYOUT_CHUNKED:
		return h5_chunk_extents(out, max, n, d, off, len);
	case H5_LAYOUT_VIRTUAL:
		return h5_dataset_vds_extents(out, max, n, d, off, len);
	default:
		return h5_err_set(H5_ERR_UNSUPPORTED, "layout class %u is not mapped", (unsigned)d->layout.cls);
	}
}
