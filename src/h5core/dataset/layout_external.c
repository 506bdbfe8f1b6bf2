/* layout_external.c - external storage (spec IV.A.2.h, with a contiguous
 * layout, IV.A.2.i): the logical stream is the concatenation of segments
 * of other files, named in the local heap, in list order. The files are
 * read through the local byte source (source_local.c), opened per read:
 * nothing to leak or exhaust when thousands of datasets are open. They
 * are found beside the file naming them and opened beneath FILE's tree
 * (related.c h5_related_open_data: no symlink or ".." leads out). */
#include "layout_ops.h"
#include "source_impl.h"
#include "lheap.h"
#include "related.h"

#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* The segments must hold nbytes (only the last may be unlimited); names
 * resolved once, here. */
static int efl_init(h5_dataset *d)
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
		d->efl_paths[i] = strdup(name);
		if (!d->efl_paths[i]) {
			rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
			goto out;
		}
	}
out:
	if (heap)
		h5_lheap_release(d->f, heap);
	return rc;
}

static void efl_close(h5_dataset *d)
{
	if (d->efl_paths) {
		for (size_t i = 0; i < d->efl.n; i++)
			free(d->efl_paths[i]);
		free(d->efl_paths);
		d->efl_paths = NULL;
	}
}

static uint64_t efl_allocated(const h5_dataset *d)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < d->efl.n; i++) {
		/* an unlimited segment holds what the dataset needs */
		if (d->efl.e[i].size == H5_UNLIMITED)
			return sum > d->nbytes ? sum : d->nbytes;
		if (h5_add_overflow(sum, d->efl.e[i].size, &sum))
			return UINT64_MAX;
	}
	return sum;
}

/* want bytes at `at` of external file i, through the local byte source:
 * a regular file only, opened without blocking (a FIFO must not hang). */
static int efl_read_file(h5_dataset *d, size_t i, uint8_t *buf, uint64_t at, uint64_t want)
{
	const h5_source_opts opts = { .data_file = true };
	const char *path = d->efl_paths[i];
	h5_source *s = NULL;
	int fd, rc;

	rc = h5_related_open_data(&fd, d->f, path);
	if (rc == 0)
		rc = h5_source_local_adopt(&s, fd, path, &opts);
	if (rc < 0) {
		h5_err_wrap(rc, "external file: ");
		goto out;
	}
	if (at + want > s->size) {
		rc = h5_err_set(H5_ERR_IO, "external file %s is too short: ends before byte %llu of segment %zu",
				path, (unsigned long long)(s->size > at ? s->size : at), i);
		goto out;
	}
	/* a file cut shorter since: its fault, not FILE's format */
	rc = s->ops->read(s, at, buf, (size_t)want);
	if (rc < 0)
		rc = h5_err_wrap(H5_ERR_IO, "external file %s: ", path);
out:
	h5_source_close(s);
	return rc;
}

/* Read [off, off+len) of the external-file stream. */
static int efl_read(h5_dataset *d, uint8_t *buf, uint64_t off, size_t len)
{
	uint64_t seg_start = 0;
	size_t i, done = 0;
	int rc;

	for (i = 0; i < d->efl.n && done < len; i++) {
		const h5_efl_entry *e = &d->efl.e[i];
		uint64_t seg_len = e->size, pos = off + done, within, want;

		if (seg_len != H5_UNLIMITED && pos >= seg_start + seg_len) {
			seg_start += seg_len;
			continue;
		}
		within = pos - seg_start;
		want = len - done;
		if (seg_len != H5_UNLIMITED && want > seg_len - within)
			want = seg_len - within;
		if (e->offset + within > (uint64_t)INT64_MAX - want)
			return h5_err_set(H5_ERR_FORMAT, "external file %s: offset overflows", d->efl_paths[i]);
		rc = efl_read_file(d, i, buf + done, e->offset + within, want);
		if (rc < 0)
			return rc;
		done += (size_t)want;
		if (seg_len != H5_UNLIMITED)
			seg_start += seg_len;
	}
	if (done < len)
		return h5_err_set(H5_ERR_FORMAT, "external file list ends before byte %llu",
				  (unsigned long long)(off + done));
	return 0;
}

/* Other files' bytes: read, never spliced (their descriptors are not
 * kept open). */
static int efl_map(h5_plan_build *b)
{
	b->read = true;
	return 0;
}

const h5_layout_ops h5_layout_external = {
	.name = "external",
	.init = efl_init,
	.close = efl_close,
	.allocated = efl_allocated,
	.read = efl_read,
	.map = efl_map,
};

int h5_dataset_each_file(h5_dataset *d, int (*fn)(void *arg, const char *name, const struct stat *st), void *arg)
{
	struct stat st;
	int rc = 0;

	/* a dataset of a file reached by an external link */
	if (d->f->top && h5_file_fd(d->f) >= 0 && fstat(h5_file_fd(d->f), &st) == 0 &&
	    (rc = fn(arg, h5_file_path(d->f), &st)) != 0)
		return rc;
	if (d->vds)
		return h5_dataset_vds_each_file(d, fn, arg);
	if (d->lops != &h5_layout_external || !d->efl_paths)
		return 0;
	for (size_t i = 0; i < d->efl.n && rc == 0; i++) {
		int fd;

		/* one that cannot be opened is skipped: its reads fail anyway */
		if (h5_related_open_data(&fd, d->f, d->efl_paths[i]) < 0) {
			h5_err_clear();
			continue;
		}
		if (fstat(fd, &st) == 0)
			rc = fn(arg, d->efl_paths[i], &st);
		close(fd);
	}
	return rc;
}
