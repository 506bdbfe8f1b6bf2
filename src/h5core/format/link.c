/*
 * link.c - the messages of new-style groups: Link (IV.A.2.g), Link Info
 * (IV.A.2.c), and the old-style Symbol Table message (IV.A.2.r).
 *
 * A link message is found either in a group's object header (compact
 * storage) or as an object in the group's fractal heap (dense storage); the
 * same decoder serves both.
 */
#include "base.h"
#include "rd.h"
#include "linkmsg.h"

#define LINK_FLAG_NAME_SIZE 0x03
#define LINK_FLAG_CORDER 0x04
#define LINK_FLAG_TYPE 0x08
#define LINK_FLAG_CSET 0x10
#define LINK_FLAGS_ALL 0x1f

#define LINFO_FLAG_TRACK 0x01
#define LINFO_FLAG_INDEX 0x02

/* Copy n bytes into a fresh NUL-terminated string. */
static char *link_strndup(const uint8_t *p, size_t n)
{
	char *s = malloc(n + 1);

	if (!s)
		return NULL;
	memcpy(s, p, n);
	s[n] = '\0';
	return s;
}

void h5_link_clear(h5_link *l)
{
	if (!l)
		return;
	free(l->name);
	free(l->target);
	free(l->ext_file);
	free(l->ext_path);
	memset(l, 0, sizeof(*l));
	l->addr = H5_ADDR_UNDEF;
}

/* External link value: version/flags byte, then "file\0path\0" (IV.A.2.g). */
static int link_decode_external(h5_link *out, const uint8_t *v, size_t vlen)
{
	const uint8_t *file, *path, *nul;
	size_t rest;

	if (vlen < 1)
		return h5_err_set(H5_ERR_FORMAT, "external link: empty value");
	if ((v[0] >> 4) != 0)
		return h5_err_set(H5_ERR_FORMAT, "external link: unsupported version %u", v[0] >> 4);
	if ((v[0] & 0x0f) != 0)
		return h5_err_set(H5_ERR_FORMAT, "external link: unknown flags 0x%x", v[0] & 0x0f);
	file = v + 1;
	rest = vlen - 1;
	nul = memchr(file, '\0', rest);
	if (!nul)
		return h5_err_set(H5_ERR_FORMAT, "external link: file name not terminated");
	path = nul + 1;
	rest -= (size_t)(path - file);
	nul = memchr(path, '\0', rest);
	if (!nul)
		return h5_err_set(H5_ERR_FORMAT, "external link: object path not terminated");
	out->ext_file = link_strndup(file, (size_t)(path - 1 - file));
	out->ext_path = link_strndup(path, (size_t)(nul - path));
	if (!out->ext_file || !out->ext_path)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	return 0;
}

int h5_link_decode(h5_link *out, const uint8_t *buf, size_t len, const h5_fmt *fmt)
{
	h5_rd r;
	uint8_t version, flags, ltype = H5_LINK_HARD;
	uint64_t name_len;
	const uint8_t *name, *val;
	uint16_t vlen;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	out->addr = H5_ADDR_UNDEF;
	h5_rd_init(&r, buf, len);
	version = h5_rd_u8(&r);
	flags = h5_rd_u8(&r);
	if (!h5_rd_ok(&r))
		return h5_err_set(H5_ERR_FORMAT, "link message truncated");
	if (version != 1)
		return h5_err_set(H5_ERR_FORMAT, "link message: unsupported version %u", version);
	if (flags & ~LINK_FLAGS_ALL)
		return h5_err_set(H5_ERR_FORMAT, "link message: unknown flags 0x%02x", flags);
	if (flags & LINK_FLAG_TYPE)
		ltype = h5_rd_u8(&r);
	if (flags & LINK_FLAG_CORDER) {
		out->has_corder = 1;
		out->corder = (int64_t)h5_rd_u64(&r);
	}
	if (flags & LINK_FLAG_CSET)
		out->cset = h5_rd_u8(&r);
	name_len = h5_rd_uint(&r, 1u << (flags & LINK_FLAG_NAME_SIZE));
	if (!h5_rd_ok(&r))
		return h5_err_set(H5_ERR_FORMAT, "link message truncated");
	if (out->cset > 1)
		return h5_err_set(H5_ERR_FORMAT, "link message: unknown character set %u", out->cset);
	/* An empty name (like ".", ".." or one holding "/" or NUL) is decoded:
	 * callers that show names skip it, so one bad link does not hide its
	 * siblings. */
	if (name_len > h5_rd_left(&r))
		return h5_err_set(H5_ERR_FORMAT, "link message: name length %llu exceeds the message",
				  (unsigned long long)name_len);
	/* Types 2-63 are reserved for HDF5 itself; 65-255 are user-defined
	 * classes whose data only their registering application understands. */
	if (ltype != H5_LINK_HARD && ltype != H5_LINK_SOFT && ltype != H5_LINK_EXTERNAL) {
		if (ltype < 64)
			return h5_err_set(H5_ERR_FORMAT, "link message: reserved link type %u", ltype);
		return h5_err_set(H5_ERR_UNSUPPORTED, "link message: user-defined link type %u", ltype);
	}
	name = h5_rd_bytes(&r, (size_t)name_len);
	out->name = link_strndup(name, (size_t)name_len);
	if (!out->name) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
		goto out;
	}
	out->name_len = (size_t)name_len;
	out->type = (h5_link_type)ltype;
	if (ltype == H5_LINK_HARD) {
		out->addr = h5_rd_addr(&r, fmt);
		if (!h5_rd_ok(&r)) {
			rc = h5_err_set(H5_ERR_FORMAT, "link message: hard link address truncated");
			goto out;
		}
		if (!h5_addr_defined(out->addr)) {
			rc = h5_err_set(H5_ERR_FORMAT, "link message: hard link to undefined address");
			goto out;
		}
		goto out;
	}
	vlen = h5_rd_u16(&r);
	val = h5_rd_bytes(&r, vlen);
	if (!h5_rd_ok(&r)) {
		rc = h5_err_set(H5_ERR_FORMAT, "link message: link value truncated");
		goto out;
	}
	if (ltype == H5_LINK_SOFT) {
		if (vlen == 0) {
			rc = h5_err_set(H5_ERR_FORMAT, "link message: empty soft link value");
			goto out;
		}
		out->target = link_strndup(val, vlen);
		if (!out->target)
			rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
		goto out;
	}
	rc = link_decode_external(out, val, vlen);
out:
	if (rc < 0) {
		if (out->name)
			rc = h5_err_wrap(rc, "link \"%.*s\": ", (int)(out->name_len > 64 ? 64 : out->name_len),
					 out->name);
		h5_link_clear(out);
	}
	return rc;
}

int h5_linfo_decode(h5_linfo *out, const h5_fmt *fmt, const uint8_t *buf, size_t len)
{
	h5_rd r;
	uint8_t version, flags;

	memset(out, 0, sizeof(*out));
	h5_rd_init(&r, buf, len);
	version = h5_rd_u8(&r);
	flags = h5_rd_u8(&r);
	if (!h5_rd_ok(&r))
		return h5_err_set(H5_ERR_FORMAT, "link info message truncated");
	if (version != 0)
		return h5_err_set(H5_ERR_FORMAT, "link info message: unsupported version %u", version);
	if (flags & ~(LINFO_FLAG_TRACK | LINFO_FLAG_INDEX))
		return h5_err_set(H5_ERR_FORMAT, "link info message: unknown flags 0x%02x", flags);
	out->track_corder = (flags & LINFO_FLAG_TRACK) != 0;
	out->index_corder = (flags & LINFO_FLAG_INDEX) != 0;
	out->max_corder = out->track_corder ? (int64_t)h5_rd_u64(&r) : 0;
	out->fheap_addr = h5_rd_addr(&r, fmt);
	out->name_bt2_addr = h5_rd_addr(&r, fmt);
	out->corder_bt2_addr = out->index_corder ? h5_rd_addr(&r, fmt) : H5_ADDR_UNDEF;
	if (!h5_rd_ok(&r))
		return h5_err_set(H5_ERR_FORMAT, "link info message truncated");
	/* Dense storage needs both the heap and the name index. */
	if (h5_addr_defined(out->fheap_addr) != h5_addr_defined(out->name_bt2_addr))
		return h5_err_set(H5_ERR_FORMAT, "link info message: fractal heap and name index must both be set");
	return 0;
}

int h5_stab_decode(h5_stab *out, const h5_fmt *fmt, const uint8_t *buf, size_t len)
{
	h5_rd r;

	h5_rd_init(&r, buf, len);
	out->btree_addr = h5_rd_addr(&r, fmt);
	out->heap_addr = h5_rd_addr(&r, fmt);
	if (!h5_rd_ok(&r))
		return h5_err_set(H5_ERR_FORMAT, "symbol table message truncated");
	if (!h5_addr_defined(out->btree_addr) || !h5_addr_defined(out->heap_addr))
		return h5_err_set(H5_ERR_FORMAT, "symbol table message: undefined B-tree or heap address");
	return 0;
}
