/* npy_rename.c - a stream written under another name and renamed to
 * NAME.npy becomes dataset NAME (issue 47 item 1; man h5fs MODIFYING "New
 * datasets"): rsync writes `.c.npy.AbCdEf` (mkstemp) and renames it to
 * c.npy, editors and `sed -i` write a temporary file and rename it over;
 * the tree must be the one np.save or cp into c.npy makes.
 *
 * The temporary file was made as any new name is (link.c member_create):
 * a growable 1-D uint8 dataset holding the bytes. At the rename, when the
 * new name ends in .npy and those bytes are one whole NPY stream h5fs
 * takes (src/common/npy.c), dataset NAME is made from them exactly as
 * np.save's stream makes it (write/dset_create.c h5_dset_writer: data,
 * then header and link, one commit), and the temporary name is removed
 * (a second commit). A dataset NAME already there is replaced: removed
 * just before (its own commit). Crash states: the temporary dataset alone
 * (nothing renamed), it and NAME, NAME alone; replacing, also the
 * temporary dataset without NAME (its bytes are all there). Anything else
 * (not NPY, cut short, a dtype h5fs does not take) is an ordinary rename:
 * a uint8 dataset NAME.npy, what cp of such a file makes.
 *
 * The kernel moved its entry of the old name to NAME.npy when we answer;
 * that entry names the temporary dataset, which is gone: it is dropped
 * after the answer (queued for kit/notify.c's thread: the kernel holds
 * the directory while the rename is answered). */
#include "commit.h"
#include "npy.h"
#include "npystream.h"
#include "owner.h"

#define PIECE ((size_t)4 << 20)
#define HEAD_MAX ((size_t)1 << 20)

/* The NPY header of the bytes of dataset d (rank 1, one-byte elements),
 * when they are exactly one stream h5fs takes: 1, else 0. */
static int stream_header(npy_header *h, h5_dataset *d)
{
	h5_type_view t;
	unsigned rank;
	const uint64_t *dims;
	uint64_t size = h5_dataset_size(d);
	uint8_t *head;
	size_t n = size < HEAD_MAX ? (size_t)size : HEAD_MAX;
	char why[160];
	int ok = 0;

	memset(&t, 0, sizeof(t));
	if (h5_dataset_shape(&rank, &dims, d) < 0 || rank != 1 || h5_dataset_type(&t, d) < 0 || t.size != 1 ||
	    t.kind != H5_TYPE_NUMBER || size < NPY_MIN_BYTES) {
		h5_type_view_clear(&t);
		h5_err_clear();
		return 0;
	}
	h5_type_view_clear(&t);
	head = malloc(n);
	if (head && h5_dataset_read(d, head, 0, n) == 0 && npy_parse(h, head, n, why, sizeof(why)) == 0 &&
	    h->data_offset + h->nbytes == size && !h->fortran && h->kind != 'U')
		ok = 1;         /* (a Fortran-ordered or unicode one stays bytes: npy.c's stream converts them) */
	h5_err_clear();
	free(head);
	return ok;
}

/* Dataset NAME (of newname NAME.npy) in group made of d's stream: 0 or an
 * h5_err. Under FILE's lock. (Also retype.c's, its header made up.) */
int npy_make_from(uint64_t *made, h5fs *fs, h5_file *f, h5_dataset *d, const npy_header *h,
		  const uint64_t *chunk, unsigned deflate, uint64_t group, const char *nm, size_t nlen)
{
	h5_dset_new dn = { .rank = h->rank, .kind = h->kind, .size = h->itemsize, .big_endian = h->big_endian };

	if (h->kind == 'S' || h->kind == 'V') {
		dn.descr = h->descr;    /* as npy.c's stream: h5py's strings, compounds */
		dn.descr_len = h->descr_len;
	}
	h5_dset_writer *w = NULL;
	uint8_t *buf = malloc(PIECE);
	uint64_t addr, off;
	int64_t mt;
	int rc;

	if (!buf)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	memcpy(dn.dims, h->shape, sizeof(uint64_t) * h->rank);
	/* -o compress: as npy.c's stream (a scalar or empty array stays
	 * contiguous); the chunks and gzip a copy's xattrs gave (retype.c) */
	if ((fs->cfg.compress || chunk) && h->rank > 0 && h->nbytes > 0) {
		dn.chunked = 1;
		dn.deflate = fs->cfg.compress;
		dn.filter = fs->cfg.compress_filter;
		if (deflate && !fs->cfg.compress)
			dn.deflate = deflate;
		if (chunk)
			memcpy(dn.chunk, chunk, sizeof(uint64_t) * h->rank);
	}
	rc = h5_dset_writer_open(&w, f, &dn);
	if (rc == H5_ERR_LIMIT || (chunk && rc == H5_ERR_INVAL)) {
		h5_err_clear();
		dn.chunked = 0;
		dn.deflate = 0;
		dn.filter = 0;
		rc = h5_dset_writer_open(&w, f, &dn);
	}
	for (off = 0; rc == 0 && off < h->nbytes; off += PIECE) {
		size_t n = h->nbytes - off < PIECE ? (size_t)(h->nbytes - off) : PIECE;

		rc = h5_dataset_read(d, buf, h->data_offset + off, n);
		if (rc == 0)
			rc = h5_dset_writer_put(w, off, buf, n);
	}
	if (rc == 0)
		rc = h5_dset_writer_commit(&addr, w, group, nm, nlen);
	if (rc == 0)
		*made = addr;
	/* the time set on the stream (rsync -t, cp -p set it before the
	 * rename) is the new dataset's: a second rsync then finds it equal */
	if (rc == 0 && h5_dataset_mtime(d, &mt) == 0 && h5_obj_mtime_set(f, addr, mt) < 0) {
		h5fs_log(fs, LOG_DEBUG, "%s: the modification time not kept: %s", nm, h5_err_msg());
		h5_err_clear();
	}
	h5_dset_writer_free(w);
	free(buf);
	return rc;
}

/* (queued: kit/notify.c's one thread issues them, after this rename is
 * answered - the kernel holds the directory until then) */
void npy_inval_after_reply(h5fs *fs, uint64_t parent, const char *a, const char *b)
{
	if (!fs->se)
		return;
	if (a)
		notify_inval_entry(fs->se, fs_ino_out(fs, parent), a, strlen(a));
	if (b)
		notify_inval_entry(fs->se, fs_ino_out(fs, parent), b, strlen(b));
}

/* In a netCDF-4 file: the variable replaced and the stream's bytes (their
 * last links gone) off their dimensions (a dimension made for the bytes
 * goes too), the new variable on netCDF dimensions, as np.save's (npy.c);
 * failures logged, the rename stands. */
static void netcdf_vars(h5fs *fs, h5_file *f, const struct node *np, uint64_t dgroup, uint64_t sgroup, uint64_t made,
			const npy_header *h, uint64_t replaced, uint64_t bytes)
{
	char why[160] = "";
	int rc = 0;

	if (own_detect(f) == OWN_HDF5)
		return;
	if (replaced != UINT64_MAX)
		rc = nc_detach_var(f, &fs->nc_ids, dgroup, replaced);
	if (rc == 0)
		rc = nc_detach_var(f, &fs->nc_ids, sgroup, bytes);
	if (rc == 0 && h->rank > 0)
		rc = nc_attach_var(f, &fs->nc_ids, np->path, dgroup, made, h->rank, h->shape, false, why, sizeof(why));
	if (rc < 0)
		h5fs_log(fs, LOG_ERR, "rename into %s: netCDF dimensions not updated: %s", np->path, h5_err_msg());
	h5_err_clear();
}

int npy_rename(int *done, h5fs *fs, h5_file *f, const struct node *p, uint64_t sgroup, const char *name,
	       const h5_link *src, const struct node *np, uint64_t dgroup, const char *newname)
{
	size_t len = strlen(newname);
	h5_dataset *d = NULL;
	npy_header h;
	h5_link old = { 0 };
	char *nm = NULL;
	uint64_t made = UINT64_MAX;
	bool replaced = false;
	int e = 0, rc;

	*done = 0;
	if (len <= 4 || strcmp(newname + len - 4, ".npy") != 0 || src->type != H5_LINK_HARD)
		return 0;
	if (h5_dataset_open(&d, f, src->addr) < 0 || !stream_header(&h, d)) {
		h5_err_clear();
		goto out;       /* an ordinary rename */
	}
	nm = strndup(newname, len - 4);
	if (!nm) {
		e = ENOMEM;
		goto out;
	}
	rc = h5_group_lookup(&old, f, dgroup, nm);
	h5_err_clear();
	if (rc == 0) {
		h5_obj_info info;

		replaced = old.type == H5_LINK_HARD && h5_obj_info_get(&info, f, old.addr) == 0 &&
			   info.kind == H5_OBJ_DATASET && info.nlink == 1;
		h5_err_clear();
		if (old.type == H5_LINK_HARD && h5_obj_info_get(&info, f, old.addr) == 0 && info.kind == H5_OBJ_GROUP) {
			h5fs_log(fs, LOG_NOTICE, "rename %s/%s to %s: EISDIR: %s is a group", strcmp(p->path, "/") ? p->path : "",
				 name, newname, nm);
			e = EISDIR;
			goto out;
		}
		rc = h5_link_delete(f, dgroup, nm, len - 4, 2);
		if (rc < 0) {
			e = h5err_logged(fs, rc, "rename (replacing)", np->path, nm, UINT64_MAX);
			goto out;
		}
		synth_forget(fs, np->ino, nm);
	}
	rc = npy_make_from(&made, fs, f, d, &h, NULL, 0, dgroup, nm, len - 4);
	if (rc == 0)
		rc = h5_link_delete(f, sgroup, name, strlen(name), 2);
	if (rc < 0) {
		e = h5err_logged(fs, rc, "rename (an NPY stream made a dataset)", np->path, nm, UINT64_MAX);
		goto out;
	}
	netcdf_vars(fs, f, np, dgroup, sgroup, made, &h, replaced ? old.addr : UINT64_MAX, src->addr);
	synth_forget(fs, p->ino, name);
	npy_inval_after_reply(fs, np->ino, newname, nm);
	h5fs_log(fs, LOG_INFO, "%s/%s renamed to %s: its NPY stream made dataset %s", strcmp(p->path, "/") ? p->path : "",
		 name, newname, nm);
	*done = 1;
out:
	h5_link_clear(&old);
	h5_dataset_close(d);
	free(nm);
	return e;
}
