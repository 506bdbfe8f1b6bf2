/*
 * obj_refcount.c - the reference count of an object header (spec
 * IV.A.1.a: a v1 header's "Object Reference Count"; IV.A.2.w: a v2
 * header's Reference Count message, absent while the count is 1), changed
 * by a hard link or a move (link_move.c) and by a link's removal
 * (link_write.c): one header edit (ohdr_edit.h), apart from both.
 */
#include "base.h"
#include "rd.h"
#include "file.h"
#include "ohdr.h"
#include "ohdr_edit.h"
#include "link_store.h"

int h5_obj_refcount_add(h5_file *f, uint64_t addr, int delta)
{
	h5_ohdr_change c = { 0 };
	const h5_msg *m = NULL;
	uint64_t field = H5_ADDR_UNDEF;
	uint32_t n;
	uint8_t v[5];
	int rc = h5_ohdr_change_open(&c, f, addr);

	if (rc < 0)
		goto out;
	n = c.e.oh->refcount ? c.e.oh->refcount : 1;
	if (delta < 0 && n <= (uint32_t)-delta)
		goto out;       /* never below 1: the last link's removal is no count's business */
	n = (uint32_t)((int64_t)n + delta);
	if (c.e.oh->version == 1) {
		field = addr + 4;
	} else {
		for (size_t i = 0; i < c.e.oh->nmsgs; i++)
			if (c.e.oh->msgs[i].type == H5_MSG_REFCOUNT) {
				m = &c.e.oh->msgs[i];
				break;
			}
		if (m && ((m->flags & H5_MSG_FLAG_SHARED) || m->size < 5)) {
			rc = h5_err_set(H5_ERR_FORMAT, "object 0x%llx: a reference count message h5fs cannot change",
					(unsigned long long)addr);
			goto out;
		}
		if (m)
			field = m->addr + 1;
	}
	if (h5_addr_defined(field)) {
		h5_le_encode(v, n, 4);
		rc = h5_ohdr_aux(&c, field, v, 4);
		c.main = h5_ohdr_chunk_of(c.e.oh, field);
	} else {
		/* a v2 header at count 1 has no message: add one (version 0) */
		v[0] = 0;
		h5_le_encode(v + 1, n, 4);
		rc = h5_ohdr_put(&c, f, SIZE_MAX, H5_MSG_REFCOUNT, 0, 0, v, 5);
	}
	if (rc == 0)
		rc = h5_ohdr_commit(&c, f, false);
out:
	h5_ohdr_change_close(&c);
	return rc;
}
