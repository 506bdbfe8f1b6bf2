/* owner.h - which library's conventions an HDF5 file follows, so that a
 * change through the mount is made as that library makes it (issue 57):
 * netCDF-4 (enhanced or classic model) or plain HDF5 (h5py's ways). */
#ifndef H5FS_OWNER_H
#define H5FS_OWNER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "h5core.h"

enum own_kind {
	OWN_HDF5 = 0,           /* no owner recognised: as h5py writes */
	OWN_NC4,                /* netCDF-4, the enhanced model */
	OWN_NC4_CLASSIC         /* netCDF-4 classic model (_nc3_strict) */
};

/* The owner of the file f: netCDF-4 by the root's _NCProperties (every
 * netCDF-C since 4.4.1, h5netcdf) or, for older files or one whose
 * _NCProperties went, a variable or dimension of netCDF's among the
 * root's first links (_Netcdf4Dimid, _Netcdf4Coordinates, or the NAME of
 * a dimension without a variable); its classic model by the root's
 * _nc3_strict. Errors reading say OWN_HDF5. The answer is kept per file
 * while its h5_file_attr_epoch stays (no attribute written, no link of
 * the root changed): asked again, it costs a lock and a compare. */
enum own_kind own_detect(h5_file *f);
/* Whether own_detect(f) is OWN_NC4_CLASSIC, without its walk of the
 * root's links (up to 64 objects' attributes read: per mkdir, the cost of
 * the call itself; issue 82 item 2) */
bool own_classic(h5_file *f);
const char *own_name(enum own_kind k);

/* How a new text attribute (setfattr -n user.NAME on a name not there) is
 * made in a file of kind k: H5_FSTR_NULLTERM in netCDF-4 files (NC_CHAR,
 * as netCDF-C's nc_put_att_text writes text), H5_FSTR_NONE elsewhere (a
 * variable-length UTF-8 string, h5py's str). */
enum h5_fstr own_new_text(enum own_kind k);

/* A user.h5.new.TYPE.NAME type: "S<n>" or "S" (a fixed-length string of n
 * bytes, of the text's length): 1 with *width (0: the text's) and *pad (in
 * netCDF-4 files NC_CHAR's null-terminated padding, else h5py's
 * null-padded numpy.bytes_); 0 for a number type; H5_ERR_INVAL (message
 * set) for S followed by anything but a size 1..65535. */
int own_fstr_type(size_t *width, enum h5_fstr *pad, enum own_kind k, const char *typestr);

/* Whether a new attribute of the NumPy number type typestr may be made in
 * a file of kind k: 0, or H5_ERR_INVAL with the reason (the classic model
 * has no unsigned or 64-bit integers; no netCDF type is a 2-byte float). */
int own_type_check(enum own_kind k, const char *typestr);

/* (ncdims.c) The netCDF dimension ids one mount gives in a file: a new
 * dimension's _Netcdf4Dimid is decided under mu, one more than the largest
 * of FILE's (a walk from its root) and of those this mount gave (high),
 * which covers the dimensions made in groups and new files whose links are
 * still in a batch (lbatch.c), where no walk reaches them: a cp -r into
 * two new groups gave two dimensions one id, and netCDF-C then mixed them
 * up ("Start+count exceeds dimension bound", issue 83 item 2). Every
 * attachment and detachment of the file runs under mu, so two of them
 * never pick one id or one new name "dim_N" in a group. */
struct nc_ids {
	pthread_mutex_t mu;
	long long high;         /* the largest id this mount gave; -1: none */
};

void nc_ids_init(struct nc_ids *ids);
void nc_ids_destroy(struct nc_ids *ids);

/* (ncdims.c) The new variable var (shape[0..rank)) of group grp_path of
 * a netCDF-4 file on netCDF dimensions: each axis on the one dimension of
 * its length in the nearest group (the variable's, then those above)
 * holding any; else on a new dimension made as netCDF-C makes one
 * ("dim_N" in the variable's group, as xarray names an unnamed axis; why gets their names, why[0]
 * NUL on entry); a variable that grows (grows: its first axis
 * unlimited, a copied file's bytes) on a new unlimited dimension of its
 * own; attached as H5DSattach_scale does (h5_ds_attach_new).
 * Several commits (the dimensions, the scales' lists, the variable's).
 * H5_ERR_NOTFOUND for a scalar. The caller holds FILE's lock.
 * grp: the group's header when the caller has it (else UINT64_MAX: looked
 * up by grp_path): a group made by mkdir is linked with the link batch, so
 * its path (and those of new groups above it) may not resolve yet; such
 * groups above are passed over as scopes. ids: the mount's (above; NULL,
 * none: FILE's largest alone decides). */
int nc_attach_var(h5_file *f, struct nc_ids *ids, const char *grp_path, uint64_t grp, uint64_t var, unsigned rank,
		  const uint64_t *shape, bool grows, char *why, size_t whylen);

/* The variable var (its last link in group grp removed, or to be) taken
 * off its netCDF dimensions (h5_ds_detach); a dimension that named only
 * it and was made for a copied file's bytes (an unlimited dim_N of
 * grp, of length 0) removed too. 0 when it had none. */
int nc_detach_var(h5_file *f, struct nc_ids *ids, uint64_t grp, uint64_t var);

#endif
