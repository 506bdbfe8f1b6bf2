/* object.c - what kind of object an object header describes, and its
 * stat-like facts (link count, times, attribute count). */
#include "base.h"
#include "rd.h"
#include "file.h"
#include "ohdr.h"
#include "btree2.h"
#include "birthtag.h"

/* Kind from the messages present (IV.A.2): a layout message makes a
 * dataset; symbol table, link info or link messages a group (an empty
 * new-style group may have only link info/group info, and the root group is
 * a group whatever it holds); a datatype message without a layout is a
 * committed datatype. */
static h5_obj_kind obj_kind(const h5_file *f, const h5_ohdr *oh)
{
	if (h5_ohdr_find(oh, H5_MSG_LAYOUT))
		return H5_OBJ_DATASET;
	if (h5_ohdr_find(oh, H5_MSG_STAB) || h5_ohdr_find(oh, H5_MSG_LINFO) || h5_ohdr_find(oh, H5_MSG_LINK) ||
	    oh->addr == f->root_addr)
		return H5_OBJ_GROUP;
	if (h5_ohdr_find(oh, H5_MSG_DTYPE))
		return H5_OBJ_DATATYPE;
	return H5_OBJ_UNKNOWN;
}

/* Dense attribute storage (IV.A.2.v "Attribute Info"): attributes live in a
 * fractal heap indexed by a name v2 B-tree whose record count is the number
 * of dense attributes. Returns 0 and *n = 0 when storage is compact. */
static int obj_dense_nattrs(uint64_t *n, h5_file *f, const h5_ohdr *oh, const h5_msg *m)
{
	uint64_t fheap_addr, name_bt2;
	uint8_t version, flags;
	h5_bt2 *bt = NULL;
	h5_rd r;
	int rc;

	*n = 0;
	h5_rd_init(&r, m->data, m->size);
	version = h5_rd_u8(&r);
	flags = h5_rd_u8(&r);
	if (flags & 0x01)
		h5_rd_u16(&r);
	fheap_addr = h5_rd_addr(&r, &f->fmt);
	name_bt2 = h5_rd_addr(&r, &f->fmt);
	if (!h5_rd_ok(&r) || version != 0 || (flags & ~0x03))
		return h5_err_set(H5_ERR_FORMAT, "object header 0x%llx: bad attribute info message (version %u, flags 0x%x, "
				  "%u bytes)", (unsigned long long)oh->addr, version, flags, m->size);
	if (!h5_addr_defined(fheap_addr) || !h5_addr_defined(name_bt2))
		return 0;
	rc = h5_bt2_open(&bt, f, name_bt2);
	if (rc < 0)
		return h5_err_wrap(rc, "attribute name index of object 0x%llx: ", (unsigned long long)oh->addr);
	*n = h5_bt2_nrecords(bt);
	h5_bt2_close(bt);
	return 0;
}

void h5_obj_prefetch(h5_file *f, uint64_t addr)
{
	h5_ohdr_prefetch(f, addr);
}

/* *out from the header oh at addr: 0, or a negative h5_err (*out zeroed) */
int h5_obj_info_of(h5_obj_info *out, h5_file *f, const h5_ohdr *oh, uint64_t addr)
{
	const h5_msg *ainfo;
	uint64_t dense = 0;
	int64_t mtime;
	int rc;

	out->kind = obj_kind(f, oh);
	out->addr = addr;
	out->nlink = oh->refcount;
	out->tag = h5_ohdr_birthtag(oh);
	if (h5_ohdr_has_mtime(oh)) {
		rc = h5_ohdr_mtime(oh, &mtime);
		if (rc < 0)
			goto out;
		out->has_mtime = 1;
		out->mtime = mtime;
	}
	rc = 0;
	if (oh->has_times) {
		out->has_times = 1;
		out->atime = oh->atime;
		out->ctime = oh->ctime;
		out->btime = oh->btime;
	}
	/* Compact attributes are messages; dense ones are counted by their
	 * name index. libhdf5 never keeps both, but counting both is exact
	 * either way. */
	out->nattrs = h5_ohdr_count(oh, H5_MSG_ATTR);
	ainfo = h5_ohdr_find(oh, H5_MSG_AINFO);
	if (ainfo) {
		rc = obj_dense_nattrs(&dense, f, oh, ainfo);
		if (rc < 0)
			goto out;
		out->nattrs += dense;
	}
out:
	if (rc < 0)
		memset(out, 0, sizeof(*out));
	return rc;
}

int h5_obj_info_get(h5_obj_info *out, h5_file *f, uint64_t addr)
{
	h5_ohdr *oh = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = h5_ohdr_get(&oh, f, addr);
	if (rc < 0)
		return rc;
	rc = h5_obj_info_of(out, f, oh, addr);
	h5_ohdr_release(f, oh);
	return rc;
}
