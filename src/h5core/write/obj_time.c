/*
 * obj_time.c - an object's modification time set (h5core.h "times"):
 * what touch, cp -p, rsync -t and tar x ask of utimensat(2), kept where
 * HDF5 has a place for it, as libhdf5's track-times writes it
 * (H5O_touch_oh):
 *   - the Modification Time message (spec IV.A.2.s, 0x0012: version 1,
 *     3 reserved bytes, 32-bit seconds since the epoch);
 *   - the old one (IV.A.2.o, 0x000E: "YYYYMMDDhhmmss", UTC);
 *   - a version 2 header's prefix times (IV.A.1.b, flag bit 5): access and
 *     modification set, as H5O_touch_oh sets them with change time.
 * Every place the header has is set. A version 1 header with none gets a
 * Modification Time message, as libhdf5 adds one to a header of a
 * time-tracking object (h5py's default for datasets is not to track); a
 * time the 32-bit message cannot hold (before 1970: tar of old files,
 * xfstests generic/258) the old message instead, replacing the new one
 * (libhdf5 reads the new one first, then the old: H5O_get_info). A
 * version 2 header without the times flag has no place (libhdf5 never
 * reads a message there: H5O_get_info takes v2 times from the prefix
 * alone): H5_ERR_UNSUPPORTED, and nothing is written.
 *
 * Each place is a field of 4 or 14 bytes rewritten in its chunk, or a new
 * message placed as an attribute's is (ohdr_edit.c): one commit, whose
 * crash states are the old time or the new one.
 */
#include "base.h"
#include "rd.h"
#include "file.h"
#include "ohdr.h"
#include "ohdr_edit.h"


/* A place of the header's times patched (a side change: h5_ohdr_aux); the
 * commit's one write is that of its chunk. */
static int aux_put(void *ud, uint64_t addr, const void *bytes, size_t n, size_t chunk)
{
	h5_ohdr_change *c = ud;

	c->main = chunk;
	return h5_ohdr_aux(c, addr, bytes, n);
}

/* The index of the header's (unshared) Modification Time message, or
 * SIZE_MAX */
static size_t new_msg_of(const h5_ohdr *oh)
{
	for (size_t i = 0; i < oh->nmsgs; i++)
		if (oh->msgs[i].type == H5_MSG_MTIME && !(oh->msgs[i].flags & H5_MSG_FLAG_SHARED))
			return i;
	return SIZE_MAX;
}

int h5_obj_mtime_set(h5_file *f, uint64_t addr, int64_t sec)
{
	h5_ohdr_change c = { 0 };
	unsigned places = 0, narrow = 0;
	uint8_t body[16] = { 1 };       /* version 1, reserved */
	bool fits = sec >= 0 && sec <= (int64_t)UINT32_MAX;
	size_t old;
	int rc;

	if (!h5_file_writable(f))
		return h5_err_set(H5_ERR_ROFS, "the file is open read-only");
	if (!fits && !h5_ohdr_old_time(body, sec))
		return h5_err_set(H5_ERR_RANGE, "time %lld has no 4-digit UTC year", (long long)sec);
	pthread_mutex_lock(&f->write_lock);
	rc = h5_ohdr_change_open(&c, f, addr);
	if (rc == 0)
		rc = h5_ohdr_time_places(&places, &narrow, c.e.oh, sec, 6, aux_put, &c);
	if (rc < 0)
		goto out;
	if (c.e.oh->version >= 2 && (narrow || !places)) {
		/* a v2 header's times are 32-bit, and libhdf5 never reads a
		 * message there */
		rc = narrow ? h5_err_set(H5_ERR_RANGE, "time %lld is outside a version 2 header's times "
					 "(0 to 2^32-1 s since 1970)", (long long)sec)
			    : h5_err_set(H5_ERR_UNSUPPORTED, "object 0x%llx records no times (a version 2 "
					 "header without them has no place for one)", (unsigned long long)addr);
		goto out;
	}
	if (narrow) {
		/* a time before 1970 or after 2106 in a version 1 header: the
		 * new message (32-bit) replaced by the old one (a date), which
		 * libhdf5 reads when the new one is absent (H5O_get_info) */
		old = new_msg_of(c.e.oh);
		if (places) {
			/* (the old message patched, the new one also there: two
			 * edits in one commit; libhdf5 writes one or the other) */
			rc = h5_err_set(H5_ERR_UNSUPPORTED, "object 0x%llx has both modification time messages",
					(unsigned long long)addr);
			goto out;
		}
		rc = h5_ohdr_put(&c, f, old, H5_MSG_MTIME_OLD, 0, 0, body, 16);
	} else if (places == 0) {
		/* (body is still { 1 } when the time fits: not touched above) */
		if (fits) {
			h5_le_encode(body + 4, (uint64_t)sec, 4);
			rc = h5_ohdr_put(&c, f, SIZE_MAX, H5_MSG_MTIME, 0, 0, body, 8);
		} else {
			rc = h5_ohdr_put(&c, f, SIZE_MAX, H5_MSG_MTIME_OLD, 0, 0, body, 16);
		}
	}
	if (rc == 0)
		rc = h5_ohdr_commit(&c, f, false);
out:
	h5_ohdr_change_close(&c);
	pthread_mutex_unlock(&f->write_lock);
	return rc;
}
