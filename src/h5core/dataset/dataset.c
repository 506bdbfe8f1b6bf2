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

	if (!d->f->real_path) {
		rc = h5_err_set(H5_ERR_UNSUPPORTED, "external data files are only read next to a local FILE");
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
	 * the dataset reads as text (vlen.c), measured on demand. */
	d->has_vlen = h5_dtype_has_vlen(d->dtype);
	if (d->has_vlen) {
		rc = h5_vtext_new(&d->vtext);
		if (rc < 0)
			return rc;
	}
	if (h5_mul_overflow(d->nelmts, esize, &d->nbytes) || d->nbytes > (uint64_t)INT64_MAX)
		return h5_err_set(H5_ERR_LIMIT, "dataset size overflows (%llu elements of %llu bytes)",
				  (unsigned long long)d->nelmts, (unsigned long long)esize);
	rc = h5_fill_elem(&d->fill_elem, &d->fill, d->dtype->size);
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
	h5_dataset_msgs_clear(d);
	free(d->fill_elem);
	h5_vtext_free(d->vtext);
	free(d);
}

uint64_t h5_dataset_size(const h5_dataset *d)
{
	h5_vtext *vt;

	if (!d->has_vlen)
		return d->nbytes;
	/* The text is measured once, under the index's lock; the dataset
	 * itself is not changed (const is kept for every other field). */
	if (h5_vtext_ensure(&vt, (h5_dataset *)d) == 0)
		return h5_vtext_size(vt);
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
int h5_dataset_read_raw(h5_dataset *d, uint8_t *buf, uint64_t off, size_t len)
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
			h5_file_extent_hint(d->f, d->layout.addr, d->layout.addr + d->nbytes);
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

int h5_dataset_read(h5_dataset *d, void *buf, uint64_t off, size_t len)
{
	uint64_t end, size = d->nbytes;
	h5_vtext *vt = NULL;
	int rc;

	if (d->has_vlen) {
		rc = h5_vtext_ensure(&vt, d);
		if (rc < 0)
			return h5_err_wrap(rc, "dataset at 0x%llx: ", (unsigned long long)d->addr);
		size = h5_vtext_size(vt);
	}
	if (h5_add_overflow(off, len, &end) || end > size)
		return h5_err_set(H5_ERR_INVAL, "read of %zu bytes at %llu is past the end of the dataset "
				  "(%llu bytes)", len, (unsigned long long)off, (unsigned long long)size);
	if (len == 0)
		return 0;
	rc = vt ? h5_vtext_read(d, vt, buf, off, len) : h5_dataset_read_raw(d, buf, off, len);
	if (rc < 0)
		return h5_err_wrap(rc, "dataset at 0x%llx: ", (unsigned long long)d->addr);
	return 0;
}

/* Where the bytes [off, off+len) lie in FILE (h5_dataset_extents without
 * the descriptor, which h5_dataset_pin does not need). */
static int plain_extents(h5_extent *out, size_t max, size_t *n, h5_dataset *d, uint64_t off, size_t len)
{
	*n = 0;
	if (d->has_vlen)
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

int h5_dataset_extents(h5_extent *out, size_t max, size_t *n, h5_dataset *d, uint64_t off, size_t len)
{
	uint64_t end;

	*n = 0;
	if (h5_add_overflow(off, len, &end) || end > d->nbytes)
		return h5_err_set(H5_ERR_INVAL, "window of %zu bytes at %llu is past the end of the dataset", len,
				  (unsigned long long)off);
	if (h5_file_fd(d->f) < 0)
		return h5_err_set(H5_ERR_UNSUPPORTED, "not stored as plain bytes of FILE");
	return plain_extents(out, max, n, d, off, len);
}

/* h5_dataset_pin of plain bytes of a FILE without a descriptor: each
 * piece of FILE pinned in the byte source's cache. */
static int pin_source(h5_pin *out, h5_dataset *d, uint64_t off, size_t len)
{
	h5_source *src = d->f->src;
	h5_extent *ext = NULL;
	size_t next = 0;
	int rc;

	if (!src->ops->pin || d->layout.cls == H5_LAYOUT_VIRTUAL)
		return h5_err_set(H5_ERR_UNSUPPORTED, "the byte source does not pin");
	ext = malloc(H5_PIN_MAX * sizeof(*ext));
	if (!ext)
		return h5_err_set(H5_ERR_NOMEM, "out of memory pinning a window");
	rc = plain_extents(ext, H5_PIN_MAX, &next, d, off, len);
	/* a contiguous dataset: read ahead of a cat no further than its end */
	if (rc == 0 && d->layout.cls == H5_LAYOUT_CONTIGUOUS)
		h5_file_extent_hint(d->f, d->layout.addr, d->layout.addr + d->nbytes);
	out->src = src;
	/* next <= H5_PIN_MAX: one hold each fits src_held */
	for (size_t i = 0; rc == 0 && i < next; i++) {
		size_t k = 0;

		rc = src->ops->pin(src, ext[i].file_off, (size_t)ext[i].len, out->iov + out->niov,
				   H5_PIN_MAX - out->niov, &k, &out->src_held[out->nsrc_held]);
		if (rc == 0) {
			out->nsrc_held++;
			out->niov += k;
		}
	}
	if (rc < 0)
		h5_pin_release(out);
	free(ext);
	return rc;
}

int h5_dataset_pin(h5_pin *out, h5_dataset *d, uint64_t off, size_t len)
{
	uint64_t end;

	out->niov = 0;
	out->nheld = 0;
	out->nsrc_held = 0;
	out->cache = NULL;
	out->src = NULL;
	if (h5_add_overflow(off, len, &end) || end > d->nbytes)
		return h5_err_set(H5_ERR_INVAL, "window of %zu bytes at %llu is past the end of the dataset", len,
				  (unsigned long long)off);
	if (d->has_vlen)
		return h5_err_set(H5_ERR_UNSUPPORTED, "variable-length data is converted");
	if (d->layout.cls == H5_LAYOUT_CHUNKED && d->cidx && d->cidx->filtered)
		return h5_chunk_pin(out, d, off, len);
	/* plain bytes: a local FILE splices them instead (h5_dataset_extents) */
	if (h5_file_fd(d->f) >= 0)
		return h5_err_set(H5_ERR_UNSUPPORTED, "plain bytes of a local FILE are spliced");
	return pin_source(out, d, off, len);
}
