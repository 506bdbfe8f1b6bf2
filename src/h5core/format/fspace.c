/* fspace.c - free-space manager headers (spec III.H "Disk Format: Level 1H
 * - Free-space Manager"): a fractal heap's (client 0) and, when libhdf5
 * persists them (the superblock extension's File Space Info message), the
 * file's (client 1). Decoded for what they occupy and track. */
#include "base.h"
#include "rd.h"
#include "checksum.h"
#include "file.h"
#include "fspace.h"

size_t h5_fspace_hdr_size(const h5_fmt *fmt)
{
	/* signature, version, client, 4 lengths (space, sections, serialized,
	 * un-serialized), then 2 bytes each: classes, shrink and expand
	 * percents, address space bits; max section size, section list
	 * address, its used and allocated sizes, checksum */
	return 4 + 1 + 1 + 4 * (size_t)fmt->sizeof_size + 4 * 2 + fmt->sizeof_size + fmt->sizeof_addr +
	       2 * (size_t)fmt->sizeof_size + 4;
}

int h5_fspace_hdr_decode(h5_fspace_hdr *out, const h5_fmt *fmt, uint64_t addr, const uint8_t *buf, size_t len)
{
	size_t size = h5_fspace_hdr_size(fmt);
	unsigned long long a = (unsigned long long)addr;
	uint8_t version;
	h5_rd r;
	int rc;

	memset(out, 0, sizeof(*out));
	if (len < size)
		return h5_err_set(H5_ERR_FORMAT, "free-space manager at 0x%llx: truncated (%zu of %zu bytes)", a, len,
				  size);
	if (memcmp(buf, "FSHD", 4) != 0)
		return h5_err_set(H5_ERR_FORMAT, "free-space manager at 0x%llx: bad signature", a);
	rc = h5_checksum_verify(buf, size, "free-space manager header", addr);
	if (rc < 0)
		return rc;
	h5_rd_init(&r, buf, size);
	h5_rd_skip(&r, 4);
	version = h5_rd_u8(&r);
	out->client = h5_rd_u8(&r);
	out->tot_space = h5_rd_size(&r, fmt);
	out->nsects = h5_rd_size(&r, fmt);
	h5_rd_skip(&r, 2u * fmt->sizeof_size + 4 * 2 + fmt->sizeof_size);
	out->sect_addr = h5_rd_addr(&r, fmt);
	out->sect_used = h5_rd_size(&r, fmt);
	out->sect_alloc = h5_rd_size(&r, fmt);
	if (!h5_rd_ok(&r))
		return h5_err_set(H5_ERR_FORMAT, "free-space manager at 0x%llx: truncated", a);
	if (version != 0 || out->client > H5_FS_CLIENT_FILE)
		return h5_err_set(H5_ERR_UNSUPPORTED, "free-space manager at 0x%llx: version %u, client %u", a,
				  version, out->client);
	if (out->sect_used > out->sect_alloc)
		return h5_err_set(H5_ERR_FORMAT, "free-space manager at 0x%llx: section list uses %llu of %llu bytes",
				  a, (unsigned long long)out->sect_used, (unsigned long long)out->sect_alloc);
	return 0;
}

int h5_fspace_blocks(h5_fspace_hdr *out, h5_file *f, uint64_t addr, h5_block_cb cb, void *ud)
{
	size_t size = h5_fspace_hdr_size(&f->fmt);
	h5_fspace_hdr h;
	uint8_t *buf = NULL;
	int rc;

	rc = h5_file_read_alloc(&buf, f, addr, size);
	if (rc < 0)
		goto out;
	rc = h5_fspace_hdr_decode(&h, &f->fmt, addr, buf, size);
	if (rc < 0)
		goto out;
	rc = cb(addr, size, ud);
	if (rc == 0 && h5_addr_defined(h.sect_addr) && h.sect_alloc)
		rc = cb(h.sect_addr, h.sect_alloc, ud);
	if (out)
		*out = h;
out:
	free(buf);
	return rc;
}
