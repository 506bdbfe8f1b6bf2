/* superblock.c - locate and decode the superblock (spec II.A "Format
 * Signature and Superblock") and the superblock extension (II.C), including
 * the shared object header message table it points to (III.I). */
#include "base.h"
#include "rd.h"
#include "checksum.h"
#include "file.h"
#include "superblock.h"
#include "ohdr.h"
#include "snod.h"

static const uint8_t h5_signature[8] = { 0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n' };

/* Largest superblock image: version 1 with 8-byte addresses is 100 bytes. */
/* Metadata cache image message (libhdf5 1.10+, not in the format spec). */
#define SB_MSG_MDCI 0x0018
/* File space info message (IV.A.2.w) and its "paged aggregation" strategy */
#define SB_MSG_FSINFO 0x0017
#define SB_FSPACE_PAGE 1
#define SB_MAX_SIZE 128

/* Extra results of the decoder that only the loader needs. */
typedef struct sb_extra {
	uint64_t drvinfo_addr;  /* v0/v1 driver information block, or UNDEF */
} sb_extra;

static int sb_check_sizes(const h5_fmt *fmt)
{
	unsigned a = fmt->sizeof_addr, s = fmt->sizeof_size;

	/* libhdf5 also accepts 16 and 32, which nothing writes; our readers
	 * hold addresses and lengths in 64 bits. */
	if ((a != 2 && a != 4 && a != 8) || (s != 2 && s != 4 && s != 8))
		return h5_err_set(H5_ERR_UNSUPPORTED, "superblock: size of offsets %u / lengths %u not supported",
				  a, s);
	return 0;
}

/* Base address and EOF, common to all versions: addresses in the file are
 * relative to where the signature was found (f->base), and the stored EOF
 * is "base + eoa" with the *stored* base, so eoa = eof - stored base. This
 * also covers a file that was moved behind a user block without the base
 * field being rewritten (libhdf5 H5F__super_read adjusts the same way). */
static int sb_set_eoa(h5_file *f, uint64_t stored_base, uint64_t stored_eof, size_t eof_off)
{
	if (!h5_addr_defined(stored_base) || !h5_addr_defined(stored_eof))
		return h5_err_set(H5_ERR_FORMAT, "superblock: undefined base or end-of-file address");
	if (stored_eof < stored_base)
		return h5_err_set(H5_ERR_FORMAT, "superblock: end-of-file address 0x%llx below base address 0x%llx",
				  (unsigned long long)stored_eof, (unsigned long long)stored_base);
	f->sb_base_field = stored_base;
	f->eoa = stored_eof - stored_base;
	f->eoa_field_off = f->base + eof_off;
	return 0;
}

/* Versions 0 and 1 (II.A "Layout: Superblock (Versions 0 and 1)"). */
static int sb_decode_v01(h5_file *f, sb_extra *x, h5_rd *r, uint8_t version)
{
	h5_snod_entry root;
	uint8_t fs_vers, root_vers, shmsg_vers;
	uint64_t base, eof;
	size_t eof_off;
	int rc;

	fs_vers = h5_rd_u8(r);
	root_vers = h5_rd_u8(r);
	h5_rd_skip(r, 1);
	shmsg_vers = h5_rd_u8(r);
	f->fmt.sizeof_addr = h5_rd_u8(r);
	f->fmt.sizeof_size = h5_rd_u8(r);
	h5_rd_skip(r, 1);
	f->sym_leaf_k = h5_rd_u16(r);
	f->btree_k = h5_rd_u16(r);
	f->sb_flags = (uint8_t)h5_rd_u32(r);
	if (version == 1) {
		f->chunk_btree_k = h5_rd_u16(r);
		h5_rd_skip(r, 2);
	}
	if (!h5_rd_ok(r))
		return h5_err_set(H5_ERR_FORMAT, "superblock v%u truncated", version);
	if (fs_vers != 0 || root_vers != 0 || shmsg_vers != 0)
		return h5_err_set(H5_ERR_UNSUPPORTED,
				  "superblock v%u: free-space version %u, root entry version %u, "
				  "shared header version %u (only 0 is defined)",
				  version, fs_vers, root_vers, shmsg_vers);
	rc = sb_check_sizes(&f->fmt);
	if (rc < 0)
		return rc;
	if (f->sym_leaf_k == 0 || f->btree_k == 0 || f->chunk_btree_k == 0)
		return h5_err_set(H5_ERR_FORMAT, "superblock: B-tree K value of zero (leaf %u, internal %u, chunk %u)",
				  f->sym_leaf_k, f->btree_k, f->chunk_btree_k);

	base = h5_rd_addr(r, &f->fmt);
	h5_rd_addr(r, &f->fmt);          /* free-space info: never persistent in v0/v1 */
	eof_off = r->pos;
	eof = h5_rd_addr(r, &f->fmt);
	x->drvinfo_addr = h5_rd_addr(r, &f->fmt);
	if (!h5_rd_ok(r))
		return h5_err_set(H5_ERR_FORMAT, "superblock v%u truncated", version);
	rc = sb_set_eoa(f, base, eof, eof_off);
	if (rc < 0)
		return rc;

	/* The root group symbol table entry (III.C); its scratch pad caches the
	 * root group's B-tree and local heap when the cache type is 1. */
	rc = h5_symentry_decode(&root, r, &f->fmt);
	if (rc < 0)
		return h5_err_wrap(rc, "superblock root entry: ");
	if (!h5_addr_defined(root.obj_addr))
		return h5_err_set(H5_ERR_FORMAT, "superblock: root group object header address is undefined");
	if (root.cache_type == 2)
		return h5_err_set(H5_ERR_FORMAT, "superblock: root group entry is a soft link");
	f->sb_size = (uint32_t)r->pos;
	f->root_addr = root.obj_addr;
	f->root_stab_cached = root.cache_type == 1;
	f->root_btree_addr = root.cache_type == 1 ? root.btree_addr : H5_ADDR_UNDEF;
	f->root_heap_addr = root.cache_type == 1 ? root.heap_addr : H5_ADDR_UNDEF;
	return 0;
}

/* Versions 2 and 3 (II.A "Layout: Superblock (Versions 2 and 3)"). */
static int sb_decode_v23(h5_file *f, h5_rd *r, uint8_t version, const uint8_t *buf, size_t len)
{
	uint64_t base, eof;
	size_t eof_off, sb_len;
	int rc;

	f->fmt.sizeof_addr = h5_rd_u8(r);
	f->fmt.sizeof_size = h5_rd_u8(r);
	f->sb_flags = h5_rd_u8(r);
	if (!h5_rd_ok(r))
		return h5_err_set(H5_ERR_FORMAT, "superblock v%u truncated", version);
	rc = sb_check_sizes(&f->fmt);
	if (rc < 0)
		return rc;
	sb_len = 12 + 4 * (size_t)f->fmt.sizeof_addr + 4;
	if (len < sb_len)
		return h5_err_set(H5_ERR_FORMAT, "superblock v%u truncated (%zu of %zu bytes)", version, len, sb_len);
	rc = h5_checksum_verify(buf, sb_len, "superblock", 0);
	if (rc < 0)
		return rc;
	base = h5_rd_addr(r, &f->fmt);
	f->ext_addr = h5_rd_addr(r, &f->fmt);
	eof_off = r->pos;
	eof = h5_rd_addr(r, &f->fmt);
	f->root_addr = h5_rd_addr(r, &f->fmt);
	if (!h5_rd_ok(r))
		return h5_err_set(H5_ERR_FORMAT, "superblock v%u truncated", version);
	rc = sb_set_eoa(f, base, eof, eof_off);
	if (rc < 0)
		return rc;
	f->sb_size = (uint32_t)sb_len;
	if (!h5_addr_defined(f->root_addr))
		return h5_err_set(H5_ERR_FORMAT, "superblock: root group object header address is undefined");
	f->root_stab_cached = false;
	f->root_btree_addr = f->root_heap_addr = H5_ADDR_UNDEF;
	return 0;
}

static int sb_decode(h5_file *f, sb_extra *x, const uint8_t *buf, size_t len)
{
	h5_rd r;
	uint8_t version;

	x->drvinfo_addr = H5_ADDR_UNDEF;
	if (len < sizeof(h5_signature) || memcmp(buf, h5_signature, sizeof(h5_signature)) != 0)
		return h5_err_set(H5_ERR_NOTHDF5, "no HDF5 signature");
	h5_rd_init(&r, buf, len);
	h5_rd_skip(&r, sizeof(h5_signature));
	version = h5_rd_u8(&r);
	if (!h5_rd_ok(&r))
		return h5_err_set(H5_ERR_FORMAT, "superblock truncated");
	if (version > 3)
		return h5_err_set(H5_ERR_UNSUPPORTED, "superblock version %u not supported", version);
	f->sb_version = version;
	f->sb_addr = 0;
	f->drvinfo_addr = H5_ADDR_UNDEF;
	f->drvinfo_size = 0;
	f->nfsm = 0;
	f->ext_addr = H5_ADDR_UNDEF;
	if (version <= 1)
		return sb_decode_v01(f, x, &r, version);
	return sb_decode_v23(f, &r, version, buf, len);
}

int h5_superblock_decode(h5_file *f, const uint8_t *buf, size_t len)
{
	sb_extra x;

	return sb_decode(f, &x, buf, len);
}

/* The multi/split drivers scatter the address space over several files, so
 * addresses in this file would point at the wrong bytes: refuse them. The
 * family driver keeps one address space; its first member reads correctly
 * up to its own end (later reads fail as out-of-file). */
static int sb_check_driver(const uint8_t *id, uint64_t addr)
{
	if (memcmp(id, "NCSAmult", 8) == 0)
		return h5_err_set(H5_ERR_UNSUPPORTED, "driver info at 0x%llx: multi/split-driver files are not supported",
				  (unsigned long long)addr);
	return 0;
}

/* II.B "File Driver Info": version, 3 reserved, size, 8-byte identification. */
static int sb_read_drvinfo(h5_file *f, uint64_t addr)
{
	uint8_t hdr[16];
	int rc;

	rc = h5_file_read(f, addr, hdr, sizeof(hdr));
	if (rc < 0)
		return h5_err_wrap(rc, "driver info block: ");
	if (hdr[0] != 0)
		return h5_err_set(H5_ERR_UNSUPPORTED, "driver info block at 0x%llx: version %u not supported",
				  (unsigned long long)addr, hdr[0]);
	f->drvinfo_addr = addr;
	f->drvinfo_size = sizeof(hdr) + h5_le_decode(hdr + 4, 4);
	return sb_check_driver(hdr + 8, addr);
}

/* III.I "Shared Object Header Message Table": "SMTB", one 14 + 2*O byte
 * entry per index, checksum. The spec's table shows alignment space after
 * the message count, but libhdf5 (H5SMcache.c) packs the entries and so do
 * real files. */
size_t h5_sohm_table_size(const h5_fmt *fmt, unsigned nindexes)
{
	return 4 + nindexes * (14 + 2 * (size_t)fmt->sizeof_addr) + 4;
}

/* III.I "Shared Message Record List": "SMLI", room for list_max records
 * (libhdf5 allocates the list whole: H5SM_LIST_SIZE), checksum. A record
 * is the location byte, the hash, and the larger of a heap record
 * (reference count, 8-byte heap ID) and a header record (reserved, type,
 * creation index, address). */
size_t h5_sohm_list_size(const h5_fmt *fmt, unsigned list_max)
{
	size_t heap = 4 + 8, ohdr = 1 + 1 + 2 + (size_t)fmt->sizeof_addr;

	return 4 + list_max * (1 + 4 + (heap > ohdr ? heap : ohdr)) + 4;
}

static int sb_read_smtb(h5_file *f, unsigned nindexes)
{
	size_t len = h5_sohm_table_size(&f->fmt, nindexes);
	uint8_t *buf = NULL;
	h5_rd r;
	int rc;

	if (nindexes == 0 || nindexes > H5_SOHM_MAX_INDEXES)
		return h5_err_set(H5_ERR_FORMAT, "shared message table at 0x%llx: %u indexes (1..%u allowed)",
				  (unsigned long long)f->sohm_addr, nindexes, H5_SOHM_MAX_INDEXES);
	rc = h5_file_read_alloc(&buf, f, f->sohm_addr, len);
	if (rc < 0)
		goto out;
	if (memcmp(buf, "SMTB", 4) != 0) {
		rc = h5_err_set(H5_ERR_FORMAT, "shared message table at 0x%llx: bad signature",
				(unsigned long long)f->sohm_addr);
		goto out;
	}
	rc = h5_checksum_verify(buf, len, "shared message table", f->sohm_addr);
	if (rc < 0)
		goto out;
	h5_rd_init(&r, buf, len - 4);
	h5_rd_skip(&r, 4);
	for (unsigned i = 0; i < nindexes; i++) {
		h5_sohm_index *ix = &f->sohm_index[i];
		uint8_t version = h5_rd_u8(&r);

		ix->index_type = h5_rd_u8(&r);
		ix->mesg_types = h5_rd_u16(&r);
		ix->min_mesg_size = h5_rd_u32(&r);
		ix->list_max = h5_rd_u16(&r);
		ix->btree_min = h5_rd_u16(&r);
		ix->nmesgs = h5_rd_u16(&r);
		ix->index_addr = h5_rd_addr(&r, &f->fmt);
		ix->heap_addr = h5_rd_addr(&r, &f->fmt);
		if (version != 0 || ix->index_type > 1) {
			rc = h5_err_set(H5_ERR_UNSUPPORTED, "shared message table at 0x%llx: index %u has version %u, "
					"type %u", (unsigned long long)f->sohm_addr, i, version, ix->index_type);
			goto out;
		}
	}
	if (!h5_rd_ok(&r)) {
		rc = h5_err_set(H5_ERR_FORMAT, "shared message table at 0x%llx truncated",
				(unsigned long long)f->sohm_addr);
		goto out;
	}
	f->sohm_nindexes = nindexes;
out:
	free(buf);
	return rc;
}

/* The File Space Info message (not in the format spec; libhdf5's
 * H5Ofsinfo.c). Version 0: strategy, threshold, and with strategy 1
 * ("all persist") the addresses of 6 free-space managers. Version 1:
 * strategy, persist, threshold, page size, page end threshold, EOA before
 * the managers, and when persisting 12 addresses. Both are hints (the
 * page size to the source, the managers to the space report): a message
 * we cannot read is ignored. */
static void sb_fsinfo(h5_file *f, h5_rd *r)
{
	uint8_t version = h5_rd_u8(r), strategy = h5_rd_u8(r);
	bool persist;
	uint64_t page = 0;
	unsigned n;

	if (version == 0) {
		h5_rd_size(r, &f->fmt);
		persist = strategy == 1;
		n = 6;
	} else if (version == 1) {
		persist = h5_rd_u8(r) != 0;
		h5_rd_size(r, &f->fmt);
		page = h5_rd_size(r, &f->fmt);
		h5_rd_u16(r);
		h5_rd_addr(r, &f->fmt);
		n = 12;
	} else {
		return;
	}
	if (!h5_rd_ok(r))
		return;
	if (version == 1 && strategy == SB_FSPACE_PAGE && page >= 512)
		f->fs_page_size = page;
	for (unsigned i = 0; persist && i < n; i++) {
		uint64_t a = h5_rd_addr(r, &f->fmt);

		if (h5_rd_ok(r) && h5_addr_defined(a) && f->nfsm < H5_FSM_MAX)
			f->fsm_addr[f->nfsm++] = a;
	}
}

/* II.C "Superblock Extension": an object header holding file-wide
 * messages. We need the shared message table, non-default B-tree K values
 * and the driver (to refuse multi-file layouts). */
static int sb_read_extension(h5_file *f)
{
	h5_ohdr *oh = NULL;
	unsigned nindexes = 0;
	int rc;

	rc = h5_ohdr_load(&oh, f, f->ext_addr);
	if (rc < 0)
		goto out;
	for (size_t i = 0; i < oh->nmsgs; i++) {
		const h5_msg *m = &oh->msgs[i];
		h5_rd r;

		h5_rd_init(&r, m->data, m->size);
		switch (m->type) {
		case H5_MSG_SHMESG: { /* IV.A.2.p: version, table address, number of indices */
			uint8_t version = h5_rd_u8(&r);

			f->sohm_addr = h5_rd_addr(&r, &f->fmt);
			nindexes = h5_rd_u8(&r);
			if (!h5_rd_ok(&r) || version != 0 || !h5_addr_defined(f->sohm_addr)) {
				rc = h5_err_set(H5_ERR_FORMAT, "shared message table message: bad version %u, "
						"size %u or address", version, m->size);
				goto out;
			}
			break;
		}
		case H5_MSG_BTREEK: { /* IV.A.2.t: version, chunk K, group internal K, group leaf K */
			uint8_t version = h5_rd_u8(&r);
			uint16_t chunk_k = h5_rd_u16(&r), btree_k = h5_rd_u16(&r), leaf_k = h5_rd_u16(&r);

			if (!h5_rd_ok(&r) || version != 0 || !chunk_k || !btree_k || !leaf_k) {
				rc = h5_err_set(H5_ERR_FORMAT, "B-tree K values message: bad version %u, size %u "
						"or zero K", version, m->size);
				goto out;
			}
			f->chunk_btree_k = chunk_k;
			f->btree_k = btree_k;
			f->sym_leaf_k = leaf_k;
			break;
		}
		case H5_MSG_DRVINFO: { /* IV.A.2.u: version, 8-byte id, size, info */
			uint8_t version = h5_rd_u8(&r);
			const uint8_t *id = h5_rd_bytes(&r, 8);

			if (!h5_rd_ok(&r) || version != 0) {
				rc = h5_err_set(H5_ERR_FORMAT, "driver info message: bad version %u or size %u",
						version, m->size);
				goto out;
			}
			rc = sb_check_driver(id, m->addr);
			if (rc < 0)
				goto out;
			break;
		}
		case SB_MSG_FSINFO:
			sb_fsinfo(f, &r);
			break;
		case SB_MSG_MDCI:
			/* libhdf5 left (some) metadata in a cache image instead of
			 * at its addresses; what is there may be stale or absent. */
			rc = h5_err_set(H5_ERR_UNSUPPORTED, "file has a metadata cache image (run h5clear -m "
					"or reopen with libhdf5 read-write); not supported");
			goto out;
		default:
			break;
		}
	}
	/* a remote source fetches whole pages: metadata pages hold
	 * metadata only, so one request brings a page's worth of it */
	if (f->fs_page_size && f->src && f->src->ops->page_hint)
		f->src->ops->page_hint(f->src, f->base, f->fs_page_size);
	if (h5_addr_defined(f->sohm_addr))
		rc = sb_read_smtb(f, nindexes);
out:
	h5_ohdr_free(oh);
	if (rc < 0)
		rc = h5_err_wrap(rc, "superblock extension at 0x%llx: ", (unsigned long long)f->ext_addr);
	return rc;
}

int h5_superblock_read(h5_file *f)
{
	uint8_t buf[SB_MAX_SIZE];
	uint64_t pos = 0, file_size = f->eof;
	bool found = false;
	sb_extra x;
	size_t n;
	int rc;

	/* II.A: the signature sits at 0, 512, 1024, 2048, ... (a user block of
	 * that size precedes it). f->base is 0 here, so reads are absolute. */
	f->base = 0;
	while (pos <= file_size && file_size - pos >= sizeof(h5_signature)) {
		rc = h5_file_read(f, pos, buf, sizeof(h5_signature));
		if (rc < 0)
			return rc;
		if (memcmp(buf, h5_signature, sizeof(h5_signature)) == 0) {
			found = true;
			break;
		}
		if (pos > UINT64_MAX / 2)
			break;
		pos = pos ? pos * 2 : 512;
	}
	if (!found)
		return h5_err_set(H5_ERR_NOTHDF5, "no HDF5 signature");

	n = file_size - pos < sizeof(buf) ? (size_t)(file_size - pos) : sizeof(buf);
	rc = h5_file_read(f, pos, buf, n);
	if (rc < 0)
		return rc;
	f->base = pos;
	f->eof = file_size - pos;
	rc = sb_decode(f, &x, buf, n);
	if (rc < 0)
		return rc;
	/* Addresses at or past the end of allocated space are invalid (libhdf5
	 * refuses to read there); trailing bytes after it belong to no object.
	 * But a SWMR writer (status flag, II.A) does not rewrite the stored
	 * end of file as it allocates: like libhdf5's SWMR reader, read up to
	 * the file's size then. */
	if (f->eoa < f->eof && !h5_file_swmr(f))
		f->eof = f->eoa;
	if (h5_addr_defined(x.drvinfo_addr)) {
		rc = sb_read_drvinfo(f, x.drvinfo_addr);
		if (rc < 0)
			return rc;
	}
	if (h5_addr_defined(f->ext_addr)) {
		rc = sb_read_extension(f);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Rewrite the superblock's end-of-file address (II.A) with eoa (relative
 * to the base address), checksum included for v2/v3; used by appends. */
int h5_superblock_write_eoa(h5_file *f, uint64_t eoa)
{
	uint64_t rel = f->eoa_field_off - f->base, stored;
	uint8_t sb[12 + 4 * 8 + 4];
	size_t sb_len;
	int rc;

	if (h5_add_overflow(eoa, f->sb_base_field, &stored))
		return h5_err_set(H5_ERR_LIMIT, "end-of-file address overflows");
	if (f->sb_version <= 1) {
		uint8_t v[8];

		h5_le_encode(v, stored, f->fmt.sizeof_addr);
		return h5_file_write(f, rel, v, f->fmt.sizeof_addr);
	}
	/* v2/v3 (II.A): the EOF address, root address and checksum end the
	 * superblock; they are rewritten in one piece */
	sb_len = 12 + 4 * (size_t)f->fmt.sizeof_addr + 4;
	rc = h5_file_read(f, 0, sb, sb_len);
	if (rc < 0)
		return rc;
	if (rel >= sb_len)
		return h5_err_set(H5_ERR_FORMAT, "superblock: EOF field outside the superblock");
	h5_le_encode(sb + rel, stored, f->fmt.sizeof_addr);
	h5_le_encode(sb + sb_len - 4, h5_checksum_metadata(sb, sb_len - 4), 4);
	return h5_file_write(f, rel, sb + rel, sb_len - (size_t)rel);
}
