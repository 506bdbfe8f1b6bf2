/* test_superblock.c - checksums (checksum.c) and the superblock decoder and
 * loader (superblock.c): built images of every version, user blocks, the
 * superblock extension with its shared message table, and h5py files. */
#include "testutil.h"
#include "base.h"
#include "rd.h"
#include "checksum.h"
#include "file.h"
#include "superblock.h"
#include "ohdr.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static const uint8_t SIG[8] = { 0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n' };

/* ---- helpers ---------------------------------------------------------- */

static void fresh_file(h5_file *f)
{
	memset(f, 0, sizeof(*f));
	f->root_addr = f->ext_addr = f->sohm_addr = H5_ADDR_UNDEF;
	f->sym_leaf_k = 4;
	f->btree_k = 16;
	f->chunk_btree_k = 32;
}

/* Superblock v0/v1 (II.A) with addresses of width a, lengths of width s. */
static void sb01(tbuf *b, unsigned version, unsigned a, unsigned s, uint64_t base, uint64_t eof,
		 uint64_t root, uint32_t cache_type, uint64_t bt, uint64_t heap)
{
	uint64_t undef = a == 8 ? UINT64_MAX : (UINT64_C(1) << (8 * a)) - 1;

	tb_put(b, SIG, 8);
	tb_u8(b, (uint8_t)version);
	tb_u8(b, 0);
	tb_u8(b, 0);
	tb_u8(b, 0);
	tb_u8(b, 0);
	tb_u8(b, (uint8_t)a);
	tb_u8(b, (uint8_t)s);
	tb_u8(b, 0);
	tb_u16(b, 5);   /* leaf K */
	tb_u16(b, 17);  /* internal K */
	tb_u32(b, 0);
	if (version == 1) {
		tb_u16(b, 33);
		tb_u16(b, 0);
	}
	tb_uint(b, base, a);
	tb_uint(b, undef, a);  /* free space */
	tb_uint(b, eof, a);
	tb_uint(b, undef, a);  /* driver info */
	/* root symbol table entry: the name offset has the width of a length
	 * (H5G_ent_decode) */
	tb_uint(b, 0, s);
	tb_uint(b, root, a);
	tb_u32(b, cache_type);
	tb_u32(b, 0);
	if (cache_type == 1) {
		tb_uint(b, bt, a);
		tb_uint(b, heap, a);
		tb_zero(b, 16 - 2 * a);
	} else {
		tb_zero(b, 16);
	}
}

/* Superblock v2/v3 with 8-byte addresses (48 bytes). */
static void sb23(tbuf *b, unsigned version, uint64_t base, uint64_t ext, uint64_t eof, uint64_t root)
{
	size_t start = b->len;

	tb_put(b, SIG, 8);
	tb_u8(b, (uint8_t)version);
	tb_u8(b, 8);
	tb_u8(b, 8);
	tb_u8(b, 0);
	tb_u64(b, base);
	tb_u64(b, ext);
	tb_u64(b, eof);
	tb_u64(b, root);
	tb_checksum(b, start);
}

/* A per-test temp directory for h5py-generated files. */
static char tmpdir[256];

static const char *make_tmpdir(void)
{
	if (!tmpdir[0]) {
		snprintf(tmpdir, sizeof(tmpdir), "/tmp/h5fs_sb_XXXXXX");
		ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	}
	return tmpdir;
}

/* Run a Python script with h5py; false (test skipped) if h5py is missing. */
/* Remove the temp directory (and forget it, for CK_FORK=no runs). */
static void rm_tmpdir(void)
{
	test_tmp_remove(tmpdir);
	tmpdir[0] = 0;
}

static bool run_h5py(const char *script)
{
	char path[512], cmd[1024];
	FILE *fp;

	if (system("/usr/bin/python3 -c 'import h5py' >/dev/null 2>&1") != 0) {
		fprintf(stderr, "SKIP: /usr/bin/python3 with h5py not available\n");
		return false;
	}
	snprintf(path, sizeof(path), "%s/gen.py", make_tmpdir());
	fp = fopen(path, "w");
	ck_assert_ptr_nonnull(fp);
	fputs(script, fp);
	fclose(fp);
	snprintf(cmd, sizeof(cmd), "cd %s && /usr/bin/python3 gen.py", make_tmpdir());
	ck_assert_int_eq(system(cmd), 0);
	return true;
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	uint8_t *buf;
	long n;

	ck_assert_ptr_nonnull(fp);
	fseek(fp, 0, SEEK_END);
	n = ftell(fp);
	fseek(fp, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(fread(buf, 1, (size_t)n, fp), (size_t)n);
	fclose(fp);
	*len = (size_t)n;
	return buf;
}

/* ---- checksums -------------------------------------------------------- */

START_TEST(lookup3_vectors)
{
	/* reference values from Bob Jenkins' lookup3.c driver5() */
	const char *s = "Four score and seven years ago";

	ck_assert_uint_eq(h5_checksum_lookup3("", 0, 0), 0xdeadbeefu);
	ck_assert_uint_eq(h5_checksum_lookup3("", 0, 0xdeadbeef), 0xbd5b7ddeu);
	ck_assert_uint_eq(h5_checksum_lookup3(s, 30, 0), 0x17770551u);
	ck_assert_uint_eq(h5_checksum_lookup3(s, 30, 1), 0xcd628161u);
	ck_assert_uint_eq(h5_checksum_metadata(s, 30), 0x17770551u);
}
END_TEST

START_TEST(lookup3_all_tail_lengths)
{
	/* every tail length 0..12 plus multi-block inputs hash differently,
	 * and a single flipped bit always changes the hash */
	uint8_t buf[40];
	uint32_t seen[41];

	for (unsigned i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 7 + 1);
	for (unsigned n = 0; n <= 40; n++) {
		seen[n] = h5_checksum_lookup3(buf, n, 0);
		for (unsigned j = 0; j < n; j++)
			ck_assert_uint_ne(seen[n], seen[j]);
		if (n) {
			buf[n - 1] ^= 0x10;
			ck_assert_uint_ne(h5_checksum_lookup3(buf, n, 0), seen[n]);
			buf[n - 1] ^= 0x10;
		}
	}
}
END_TEST

START_TEST(fletcher32_vectors)
{
	const uint8_t two[] = { 0x01, 0x02 };
	const uint8_t three[] = { 0x01, 0x02, 0x03 };
	uint8_t big[2000];

	/* hand-computed: big-endian 16-bit words; odd byte is a high byte */
	ck_assert_uint_eq(h5_checksum_fletcher32(two, 2), 0x01020102u);
	ck_assert_uint_eq(h5_checksum_fletcher32(three, 3), 0x05040402u);
	ck_assert_uint_eq(h5_checksum_fletcher32(two, 0), 0u);
	/* 0xff bytes: every word is 0xffff, which folds to 0 or 0xffff but
	 * must not overflow across the 360-word batches */
	memset(big, 0xff, sizeof(big));
	{
		uint32_t c = h5_checksum_fletcher32(big, sizeof(big));

		ck_assert_uint_le(c & 0xffff, 0xffff);
		ck_assert_uint_ne(c, h5_checksum_fletcher32(big, sizeof(big) - 1));
	}
}
END_TEST

START_TEST(fletcher32_h5py_chunks)
{
	/* The Fletcher-32 filter appends H5_checksum_fletcher32 of the chunk,
	 * little-endian: check odd and even chunk sizes written by libhdf5. */
	static const char *script =
		"import h5py, numpy as np\n"
		"with h5py.File('fl.h5', 'w') as f:\n"
		"    for n in (1, 7, 8, 1001, 4096):\n"
		"        d = f.create_dataset('d%d' % n, data=(np.arange(n) * 37 % 251).astype('u1'),\n"
		"                             chunks=(n,), fletcher32=True)\n"
		"        open('chunk%d.bin' % n, 'wb').write(d.id.read_direct_chunk((0,))[1])\n";
	const unsigned sizes[] = { 1, 7, 8, 1001, 4096 };

	if (!run_h5py(script))
		return;
	for (unsigned i = 0; i < 5; i++) {
		char path[512];
		size_t len;
		uint8_t *buf;

		snprintf(path, sizeof(path), "%s/chunk%u.bin", make_tmpdir(), sizes[i]);
		buf = slurp(path, &len);
		ck_assert_uint_eq(len, sizes[i] + 4);
		ck_assert_uint_eq(h5_checksum_fletcher32(buf, len - 4), (uint32_t)h5_le_decode(buf + len - 4, 4));
		free(buf);
	}
	rm_tmpdir();
}
END_TEST

START_TEST(checksum_verify)
{
	tbuf b = { 0 };

	tb_str(&b, "OHDR some block contents");
	tb_checksum(&b, 0);
	ck_assert_int_eq(h5_checksum_verify(b.p, b.len, "test block", 0x40), 0);
	b.p[3] ^= 1;
	ck_assert_int_eq(h5_checksum_verify(b.p, b.len, "test block", 0x40), H5_ERR_CHECKSUM);
	ck_assert_ptr_nonnull(strstr(h5_err_msg(), "test block"));
	ck_assert_ptr_nonnull(strstr(h5_err_msg(), "0x40"));
	b.p[3] ^= 1;
	b.p[b.len - 1] ^= 0x80; /* the stored checksum itself */
	ck_assert_int_eq(h5_checksum_verify(b.p, b.len, "test block", 0x40), H5_ERR_CHECKSUM);
	ck_assert_int_eq(h5_checksum_verify(b.p, 3, "test block", 0), H5_ERR_FORMAT);
	/* 4 bytes: checksum of nothing */
	{
		uint8_t e[4];

		h5_le_encode(e, 0xdeadbeef, 4);
		ck_assert_int_eq(h5_checksum_verify(e, 4, "empty", 0), 0);
	}
	tb_free(&b);
}
END_TEST

/* ---- decoder: built images ------------------------------------------- */

START_TEST(decode_v0)
{
	tbuf b = { 0 };
	h5_file f;

	sb01(&b, 0, 8, 8, 0, 4096, 0x60, 1, 0x88, 0x2a8);
	ck_assert_uint_eq(b.len, 96);
	fresh_file(&f);
	ck_assert_int_eq(h5_superblock_decode(&f, b.p, b.len), 0);
	ck_assert_int_eq(f.sb_version, 0);
	ck_assert_uint_eq(f.fmt.sizeof_addr, 8);
	ck_assert_uint_eq(f.fmt.sizeof_size, 8);
	ck_assert_uint_eq(f.sym_leaf_k, 5);
	ck_assert_uint_eq(f.btree_k, 17);
	ck_assert_uint_eq(f.chunk_btree_k, 32); /* v0 has no field: default stays */
	ck_assert_uint_eq(f.eoa, 4096);
	ck_assert_uint_eq(f.eoa_field_off, 40);
	ck_assert_uint_eq(f.root_addr, 0x60);
	ck_assert(f.root_stab_cached);
	ck_assert_uint_eq(f.root_btree_addr, 0x88);
	ck_assert_uint_eq(f.root_heap_addr, 0x2a8);
	ck_assert_uint_eq(f.ext_addr, H5_ADDR_UNDEF);
	/* every truncation is an error, never a read past the end */
	for (size_t n = 8; n < b.len; n++) {
		fresh_file(&f);
		ck_assert_int_eq(h5_superblock_decode(&f, b.p, n), H5_ERR_FORMAT);
	}
	tb_free(&b);
}
END_TEST

START_TEST(decode_v1_small_offsets)
{
	tbuf b = { 0 };
	h5_file f;

	/* 4-byte addresses, 2-byte lengths; cache type 0 */
	sb01(&b, 1, 4, 2, 0, 1000, 0x40, 0, 0, 0);
	fresh_file(&f);
	ck_assert_int_eq(h5_superblock_decode(&f, b.p, b.len), 0);
	ck_assert_int_eq(f.sb_version, 1);
	ck_assert_uint_eq(f.fmt.sizeof_addr, 4);
	ck_assert_uint_eq(f.fmt.sizeof_size, 2);
	ck_assert_uint_eq(f.chunk_btree_k, 33);
	ck_assert_uint_eq(f.eoa, 1000);
	ck_assert_uint_eq(f.eoa_field_off, 28 + 8);
	ck_assert_uint_eq(f.root_addr, 0x40);
	ck_assert(!f.root_stab_cached);
	ck_assert_uint_eq(f.root_btree_addr, H5_ADDR_UNDEF);
	tb_free(&b);

	/* 2-byte addresses */
	sb01(&b, 0, 2, 4, 0, 0x1234, 0x30, 1, 0x100, 0x200);
	fresh_file(&f);
	ck_assert_int_eq(h5_superblock_decode(&f, b.p, b.len), 0);
	ck_assert_uint_eq(f.eoa, 0x1234);
	ck_assert_uint_eq(f.root_heap_addr, 0x200);
	tb_free(&b);
}
END_TEST

START_TEST(decode_base_address)
{
	tbuf b = { 0 };
	h5_file f;

	/* libhdf5 with a 512-byte user block stores base 512 and an absolute
	 * EOF; addresses stay relative to the signature */
	sb01(&b, 0, 8, 8, 512, 2600, 0x60, 0, 0, 0);
	fresh_file(&f);
	f.base = 512;
	ck_assert_int_eq(h5_superblock_decode(&f, b.p, b.len), 0);
	ck_assert_uint_eq(f.eoa, 2088);
	ck_assert_uint_eq(f.sb_base_field, 512);
	ck_assert_uint_eq(f.eoa_field_off, 512 + 40);
	tb_free(&b);

	/* EOF below the base is corrupt */
	sb01(&b, 0, 8, 8, 512, 100, 0x60, 0, 0, 0);
	fresh_file(&f);
	ck_assert_int_eq(h5_superblock_decode(&f, b.p, b.len), H5_ERR_FORMAT);
	tb_free(&b);
}
END_TEST

START_TEST(decode_v0_errors)
{
	tbuf b = { 0 };
	h5_file f;

	sb01(&b, 0, 8, 8, 0, 4096, 0x60, 0, 0, 0);
	fresh_file(&f);
	b.p[13] = 3; /* size of offsets */
	ck_assert_int_eq(h5_superblock_decode(&f, b.p, b.len), H5_ERR_UNSUPPORTED);
	b.p[13] = 8;
	b.p[14] = 16; /* size of lengths */
	ck_assert_int_eq(h5_superblock_decode(&f, b.p, b.len), H5_ERR_UNSUPPORTED);
	b.p[14] = 8;
	b.p[8] = 4; /* superblock version */
	ck_assert_int_eq(h5_superblock_decode(&f, b.p, b.len), H5_ERR_UNSUPPORTED);
	b.p[8] = 0;
	b.p[9] = 1; /* free-space version */
	ck_assert_int_eq(h5_superblock_decode(&f, b.p, b.len), H5_ERR_UNSUPPORTED);
	b.p[9] = 0;
	b.p[16] = b.p[17] = 0; /* leaf K = 0 */
	ck_assert_int_eq(h5_superblock_decode(&f, b.p, b.len), H5_ERR_FORMAT);
	b.p[16] = 4;
	b.p[0] = 0x88; /* signature */
	ck_assert_int_eq(h5_superblock_decode(&f, b.p, b.len), H5_ERR_NOTHDF5);
	ck_assert_ptr_nonnull(strstr(h5_err_msg(), "no HDF5 signature"));
	b.p[0] = 0x89;
	ck_assert_int_eq(h5_superblock_decode(&f, b.p, 5), H5_ERR_NOTHDF5);
	ck_assert_int_eq(h5_superblock_decode(&f, b.p, b.len), 0);
	/* root object header address undefined */
	memset(b.p + 64, 0xff, 8);
	ck_assert_int_eq(h5_superblock_decode(&f, b.p, b.len), H5_ERR_FORMAT);
	tb_free(&b);
}
END_TEST

START_TEST(decode_v2_v3)
{
	for (unsigned v = 2; v <= 3; v++) {
		tbuf b = { 0 };
		h5_file f;

		sb23(&b, v, 0, H5_ADDR_UNDEF, 2088, 0x30);
		ck_assert_uint_eq(b.len, 48);
		fresh_file(&f);
		ck_assert_int_eq(h5_superblock_decode(&f, b.p, b.len), 0);
		ck_assert_int_eq(f.sb_version, (int)v);
		ck_assert_uint_eq(f.eoa, 2088);
		ck_assert_uint_eq(f.eoa_field_off, 28);
		ck_assert_uint_eq(f.root_addr, 0x30);
		ck_assert_uint_eq(f.ext_addr, H5_ADDR_UNDEF);
		ck_assert(!f.root_stab_cached);
		/* checksum: any flipped byte before it is caught */
		for (size_t i = 8; i < 44; i++) {
			b.p[i] ^= 0x04;
			fresh_file(&f);
			ck_assert_int_eq(h5_superblock_decode(&f, b.p, b.len),
					 i == 8 ? H5_ERR_UNSUPPORTED /* version 6/7 */ :
					 (i == 9 || i == 10) ? H5_ERR_UNSUPPORTED /* size 12 */ : H5_ERR_CHECKSUM);
			b.p[i] ^= 0x04;
		}
		for (size_t n = 9; n < b.len; n++) {
			fresh_file(&f);
			ck_assert_int_eq(h5_superblock_decode(&f, b.p, n), H5_ERR_FORMAT);
		}
		tb_free(&b);
	}
}
END_TEST

START_TEST(decode_v2_small_offsets)
{
	tbuf b = { 0 };
	h5_file f;

	tb_put(&b, SIG, 8);
	tb_u8(&b, 2);
	tb_u8(&b, 4);
	tb_u8(&b, 4);
	tb_u8(&b, 0);
	tb_u32(&b, 0);
	tb_u32(&b, 0x100);
	tb_u32(&b, 0x800);
	tb_u32(&b, 0x20);
	tb_checksum(&b, 0);
	fresh_file(&f);
	ck_assert_int_eq(h5_superblock_decode(&f, b.p, b.len), 0);
	ck_assert_uint_eq(f.ext_addr, 0x100);
	ck_assert_uint_eq(f.eoa, 0x800);
	ck_assert_uint_eq(f.root_addr, 0x20);
	ck_assert_uint_eq(f.eoa_field_off, 20);
	tb_free(&b);
}
END_TEST

/* ---- loader: user blocks, extension ----------------------------------- */

START_TEST(read_userblock_mem)
{
	tbuf b = { 0 };
	h5_file *f;

	tb_zero(&b, 1024);               /* user block of 1024 (512 has no signature) */
	sb23(&b, 3, 1024, H5_ADDR_UNDEF, 1024 + 200, 0x30);
	tb_zero(&b, 200 - 48);
	ck_assert_int_eq(h5_file_open_mem(&f, b.p, b.len, NULL), 0);
	ck_assert_uint_eq(h5_file_userblock(f), 1024);
	ck_assert_uint_eq(f->eof, 200);
	ck_assert_uint_eq(f->eoa, 200);
	ck_assert_uint_eq(f->eoa_field_off, 1024 + 28);
	ck_assert_uint_eq(h5_file_root(f), 0x30);
	ck_assert_int_eq(h5_file_sb_version(f), 3);
	h5_file_close(f);

	/* trailing bytes past the stored EOF are not addressable */
	tb_zero(&b, 100);
	ck_assert_int_eq(h5_file_open_mem(&f, b.p, b.len, NULL), 0);
	ck_assert_uint_eq(f->eof, 200);
	h5_file_close(f);

	/* a signature at 768 is not a valid position */
	memset(b.p, 0, b.len);
	memcpy(b.p + 768, SIG, 8);
	ck_assert_int_eq(h5_file_open_mem(&f, b.p, b.len, NULL), H5_ERR_NOTHDF5);
	ck_assert_int_eq(h5_file_open_mem(&f, b.p, 7, NULL), H5_ERR_NOTHDF5);
	ck_assert_int_eq(h5_file_open_mem(&f, b.p, 0, NULL), H5_ERR_NOTHDF5);
	tb_free(&b);
}
END_TEST

START_TEST(read_truncated_superblock)
{
	tbuf b = { 0 };
	h5_file *f;

	tb_zero(&b, 512);
	sb01(&b, 0, 8, 8, 0, 96, 0x60, 0, 0, 0);
	/* the file ends inside the root symbol table entry */
	ck_assert_int_eq(h5_file_open_mem(&f, b.p, b.len - 10, NULL), H5_ERR_FORMAT);
	ck_assert_int_eq(h5_file_open_mem(&f, b.p, b.len, NULL), 0);
	ck_assert_uint_eq(h5_file_userblock(f), 512);
	/* stored base 0 while found at 512: file moved behind a user block */
	ck_assert_uint_eq(f->eoa, 96);
	h5_file_close(f);
	tb_free(&b);
}
END_TEST

/* h5_file_check_truncated: libhdf5's check and words (H5F__super_read). */
START_TEST(check_truncated)
{
	tbuf b = { 0 };
	h5_file *f;

	sb23(&b, 3, 0, H5_ADDR_UNDEF, 300, 0x30);
	tb_zero(&b, 300 - 48);
	ck_assert_int_eq(h5_file_open_mem(&f, b.p, b.len, NULL), 0);
	ck_assert_int_eq(h5_file_check_truncated(f), 0);
	h5_file_close(f);
	/* bytes past the end of allocated space are no truncation */
	tb_zero(&b, 10);
	ck_assert_int_eq(h5_file_open_mem(&f, b.p, b.len, NULL), 0);
	ck_assert_int_eq(h5_file_check_truncated(f), 0);
	h5_file_close(f);
	/* one byte short: refused, naming both sizes */
	ck_assert_int_eq(h5_file_open_mem(&f, b.p, 299, NULL), 0);
	ck_assert_int_eq(h5_file_check_truncated(f), H5_ERR_FORMAT);
	ck_assert_msg(strstr(h5_err_msg(), "truncated file: eof = 299, stored_eof = 300") != NULL, "%s",
		      h5_err_msg());
	h5_file_close(f);
	tb_free(&b);

	/* behind a user block of 512: eof counts from the superblock */
	tb_zero(&b, 512);
	sb23(&b, 3, 512, H5_ADDR_UNDEF, 512 + 300, 0x30);
	tb_zero(&b, 300 - 48);
	ck_assert_int_eq(h5_file_open_mem(&f, b.p, b.len, NULL), 0);
	ck_assert_int_eq(h5_file_check_truncated(f), 0);
	h5_file_close(f);
	ck_assert_int_eq(h5_file_open_mem(&f, b.p, 512 + 200, NULL), 0);
	ck_assert_int_eq(h5_file_check_truncated(f), H5_ERR_FORMAT);
	ck_assert_msg(strstr(h5_err_msg(), "eof = 200, sblock->base_addr = 512, stored_eof = 812") != NULL, "%s",
		      h5_err_msg());
	h5_file_close(f);
	tb_free(&b);
}
END_TEST

/* A writable FILE opened with lazy_lock: locked only between h5_file_lock
 * and h5_file_unlock (libhdf5's flock), written only then, and another
 * program's change told from a rewrite of the same bytes. */
START_TEST(lazy_lock)
{
	char path[] = "/tmp/h5core-lock-XXXXXX";
	h5_open_opts o = { .writable = 1, .lazy_lock = 1, .cache_bytes = 1 << 20, .nthreads = 1 };
	tbuf b = { 0 };
	h5_file *f;
	uint8_t one = 0x55, old;
	struct timespec later[2] = { { 0, UTIME_NOW }, { 2000000000, 0 } };
	int fd = mkstemp(path), other;

	ck_assert_int_ge(fd, 0);
	sb23(&b, 3, 0, H5_ADDR_UNDEF, 300, 0x30);
	tb_zero(&b, 300 - 48);
	ck_assert_int_eq(write(fd, b.p, b.len), (ssize_t)b.len);
	close(fd);
	ck_assert_int_eq(h5_file_open(&f, path, &o), 0);
	other = open(path, O_RDWR);
	ck_assert_int_ge(other, 0);
	/* not locked: others lock it, the engine writes nothing */
	ck_assert_int_eq(flock(other, LOCK_SH | LOCK_NB), 0);
	ck_assert_int_eq(h5_file_lock(f), H5_ERR_BUSY);
	ck_assert_int_eq(flock(other, LOCK_UN), 0);
	ck_assert_int_eq(h5_file_write(f, 290, &one, 1), H5_ERR_BUSY);
	/* locked: others cannot, the engine writes; unlocked: its own write
	 * is no change */
	ck_assert_int_eq(h5_file_lock(f), 0);
	ck_assert_int_eq(flock(other, LOCK_SH | LOCK_NB), -1);
	ck_assert_int_eq(h5_file_changed_by_others(f), 0);
	ck_assert_int_eq(h5_file_write(f, 290, &one, 1), 0);
	h5_file_unlock(f);
	ck_assert_int_eq(flock(other, LOCK_EX | LOCK_NB), 0);
	ck_assert_int_eq(flock(other, LOCK_UN), 0);
	ck_assert_int_eq(h5_file_lock(f), 0);
	ck_assert_int_eq(h5_file_changed_by_others(f), 0);
	h5_file_unlock(f);
	/* times moved over the same bytes (libhdf5 opened r+ and closed it) */
	ck_assert_int_eq(futimens(other, later), 0);
	ck_assert_int_eq(h5_file_changed_by_others(f), 0);
	/* a byte changed, same size: a change */
	ck_assert_int_eq(pread(other, &old, 1, 100), 1);
	old ^= 0xff;
	ck_assert_int_eq(pwrite(other, &old, 1, 100), 1);
	ck_assert_int_eq(h5_file_changed_by_others(f), 1);
	/* and another size */
	ck_assert_int_eq(ftruncate(other, 400), 0);
	ck_assert_int_eq(h5_file_changed_by_others(f), 1);
	close(other);
	h5_file_close(f);
	unlink(path);
	tb_free(&b);
}
END_TEST

/* A v2 object header (no times, 1-byte chunk size) holding messages. */
typedef struct tmsg {
	uint8_t type;
	const uint8_t *data;
	uint16_t size;
} tmsg;

static void ohdr2(tbuf *b, const tmsg *m, size_t n)
{
	size_t start = b->len, body = 0;

	for (size_t i = 0; i < n; i++)
		body += 4 + m[i].size;
	tb_str(b, "OHDR");
	tb_u8(b, 2);
	tb_u8(b, 0);
	tb_u8(b, (uint8_t)body);
	for (size_t i = 0; i < n; i++) {
		tb_u8(b, m[i].type);
		tb_u16(b, m[i].size);
		tb_u8(b, 0);
		tb_put(b, m[i].data, m[i].size);
	}
	tb_checksum(b, start);
}

/* image: sb v3 | ext ohdr at 0x30 | SMTB | padding; returns with eof patched */
static void build_ext_file(tbuf *b, const uint8_t *drv_id, bool bad_smtb)
{
	uint8_t shm[10], btk[7], drv[17];
	tbuf ext = { 0 }, smtb = { 0 };
	tmsg m[3];
	size_t nm = 0;
	uint64_t smtb_addr;

	/* SHMESG: version 0, address, 2 indexes (address patched below) */
	shm[0] = 0;
	shm[9] = 2;
	btk[0] = 0;
	h5_le_encode(btk + 1, 64, 2);
	h5_le_encode(btk + 3, 20, 2);
	h5_le_encode(btk + 5, 6, 2);
	m[nm++] = (tmsg){ H5_MSG_SHMESG, shm, sizeof(shm) };
	m[nm++] = (tmsg){ H5_MSG_BTREEK, btk, sizeof(btk) };
	if (drv_id) {
		drv[0] = 0;
		memcpy(drv + 1, drv_id, 8);
		h5_le_encode(drv + 9, 0, 8);
		m[nm++] = (tmsg){ H5_MSG_DRVINFO, drv, sizeof(drv) };
	}
	/* the extension header's size does not depend on the address value */
	ohdr2(&ext, m, nm);
	smtb_addr = 0x30 + ext.len;
	h5_le_encode(shm + 1, smtb_addr, 8);
	tb_free(&ext);
	ohdr2(&ext, m, nm);

	tb_str(&smtb, "SMTB");
	for (unsigned i = 0; i < 2; i++) {
		tb_u8(&smtb, 0);                 /* version */
		tb_u8(&smtb, (uint8_t)i);        /* list / btree */
		tb_u16(&smtb, i ? 0x12 : 0x0d);  /* message types */
		tb_u32(&smtb, 40 + i);           /* min size */
		tb_u16(&smtb, 50);
		tb_u16(&smtb, 40);
		tb_u16(&smtb, (uint16_t)(3 + i)); /* no padding: libhdf5 packs */
		tb_u64(&smtb, 0x1000 + i);
		tb_u64(&smtb, 0x2000 + i);
	}
	tb_checksum(&smtb, 0);
	if (bad_smtb)
		smtb.p[7] ^= 1;

	sb23(b, 3, 0, 0x30, 0, 0x30);
	tb_put(b, ext.p, ext.len);
	tb_put(b, smtb.p, smtb.len);
	tb_zero(b, 64);
	/* patch EOF and re-checksum the superblock */
	h5_le_encode(b->p + 28, b->len, 8);
	h5_le_encode(b->p + 44, h5_checksum_metadata(b->p, 44), 4);
	tb_free(&ext);
	tb_free(&smtb);
}

START_TEST(read_extension_smtb)
{
	tbuf b = { 0 };
	h5_file *f;

	build_ext_file(&b, NULL, false);
	ck_assert_int_eq(h5_file_open_mem(&f, b.p, b.len, NULL), 0);
	ck_assert_uint_eq(f->ext_addr, 0x30);
	ck_assert_uint_ne(f->sohm_addr, H5_ADDR_UNDEF);
	ck_assert_uint_eq(f->sohm_nindexes, 2);
	ck_assert_uint_eq(f->sohm_index[0].index_type, 0);
	ck_assert_uint_eq(f->sohm_index[0].mesg_types, 0x0d);
	ck_assert_uint_eq(f->sohm_index[0].min_mesg_size, 40);
	ck_assert_uint_eq(f->sohm_index[0].nmesgs, 3);
	ck_assert_uint_eq(f->sohm_index[0].index_addr, 0x1000);
	ck_assert_uint_eq(f->sohm_index[0].heap_addr, 0x2000);
	ck_assert_uint_eq(f->sohm_index[1].index_type, 1);
	ck_assert_uint_eq(f->sohm_index[1].mesg_types, 0x12);
	ck_assert_uint_eq(f->sohm_index[1].heap_addr, 0x2001);
	ck_assert_uint_eq(f->chunk_btree_k, 64);
	ck_assert_uint_eq(f->btree_k, 20);
	ck_assert_uint_eq(f->sym_leaf_k, 6);
	h5_file_close(f);
	tb_free(&b);

	build_ext_file(&b, NULL, true);
	ck_assert_int_eq(h5_file_open_mem(&f, b.p, b.len, NULL), H5_ERR_CHECKSUM);
	ck_assert_ptr_nonnull(strstr(h5_err_msg(), "shared message table"));
	tb_free(&b);

	build_ext_file(&b, (const uint8_t *)"NCSAmult", false);
	ck_assert_int_eq(h5_file_open_mem(&f, b.p, b.len, NULL), H5_ERR_UNSUPPORTED);
	tb_free(&b);
	build_ext_file(&b, (const uint8_t *)"NCSAfami", false);
	ck_assert_int_eq(h5_file_open_mem(&f, b.p, b.len, NULL), 0);
	h5_file_close(f);
	tb_free(&b);

	/* extension address pointing outside the file */
	build_ext_file(&b, NULL, false);
	h5_le_encode(b.p + 20, 0x100000, 8);
	h5_le_encode(b.p + 44, h5_checksum_metadata(b.p, 44), 4);
	ck_assert_int_eq(h5_file_open_mem(&f, b.p, b.len, NULL), H5_ERR_FORMAT);
	tb_free(&b);
}
END_TEST

/* ---- h5py files -------------------------------------------------------- */

START_TEST(h5py_files)
{
	static const char *script =
		"import h5py, numpy as np\n"
		"cases = [('e.h5', 0, 'earliest'), ('l.h5', 0, 'latest'),\n"
		"         ('ue.h5', 512, 'earliest'), ('ul.h5', 512, 'latest'), ('ul4k.h5', 4096, 'latest')]\n"
		"with open('expect.txt', 'w') as out:\n"
		"    for name, ub, lv in cases:\n"
		"        with h5py.File(name, 'w', userblock_size=ub, libver=lv) as f:\n"
		"            f['x'] = np.arange(10)\n"
		"        with h5py.File(name, 'r') as f:\n"
		"            root = h5py.h5o.get_info(f['/'].id).addr\n"
		"        out.write('%s %d %d %d\\n' % (name, ub, root, 0 if lv == 'earliest' else 3))\n";
	char path[600], name[64];
	FILE *fp;
	int ncase = 0;

	if (!run_h5py(script))
		return;
	snprintf(path, sizeof(path), "%s/expect.txt", make_tmpdir());
	fp = fopen(path, "r");
	ck_assert_ptr_nonnull(fp);
	for (;;) {
		unsigned long long ub, root;
		int sbv;
		struct stat st;
		h5_file *f;
		h5_ohdr *oh;
		uint8_t eofbuf[8];
		int fd;

		if (fscanf(fp, "%63s %llu %llu %d", name, &ub, &root, &sbv) != 4)
			break;
		ncase++;
		snprintf(path, sizeof(path), "%s/%s", make_tmpdir(), name);
		ck_assert_msg(h5_file_open(&f, path, NULL) == 0, "%s: %s", name, h5_err_msg());
		ck_assert_uint_eq(h5_file_userblock(f), ub);
		ck_assert_uint_eq(h5_file_root(f), root);
		ck_assert_int_eq(h5_file_sb_version(f), sbv);
		/* the EOF field holds base + eoa, and eoa is the file's length */
		fd = open(path, O_RDONLY);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(pread(fd, eofbuf, 8, (off_t)f->eoa_field_off), 8);
		close(fd);
		ck_assert_uint_eq(h5_le_decode(eofbuf, 8), f->eoa + f->sb_base_field);
		ck_assert_int_eq(stat(path, &st), 0);
		ck_assert_uint_eq(f->eoa + ub, (uint64_t)st.st_size);
		ck_assert_msg(h5_ohdr_load(&oh, f, h5_file_root(f)) == 0, "%s: %s", name, h5_err_msg());
		ck_assert_uint_eq(oh->version, h5_file_sb_version(f) == 0 ? 1 : 2);
		h5_ohdr_free(oh);
		h5_file_close(f);
	}
	fclose(fp);
	ck_assert_int_eq(ncase, 5);
	rm_tmpdir();
}
END_TEST

/* The file space info message of a paged-aggregation file gives its page
 * size (the remote source fetches whole pages); other files have none. */
START_TEST(fsinfo_page_size)
{
	static const char *script =
		"import h5py, numpy as np\n"
		"with h5py.File('paged.h5', 'w', libver='latest', fs_strategy='page', fs_page_size=65536) as f:\n"
		"    f['x'] = np.arange(10)\n"
		"with h5py.File('fsm.h5', 'w', libver='latest', fs_strategy='fsm', fs_persist=True) as f:\n"
		"    f['x'] = np.arange(10)\n"
		"with h5py.File('plain.h5', 'w', libver='latest') as f:\n"
		"    f['x'] = np.arange(10)\n";
	static const struct { const char *name; uint64_t page; } cases[] = {
		{ "paged.h5", 65536 }, { "fsm.h5", 0 }, { "plain.h5", 0 },
	};
	char path[600];

	if (!run_h5py(script))
		return;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		h5_file *f;

		snprintf(path, sizeof(path), "%s/%s", make_tmpdir(), cases[i].name);
		ck_assert_msg(h5_file_open(&f, path, NULL) == 0, "%s: %s", cases[i].name, h5_err_msg());
		ck_assert_uint_eq(f->fs_page_size, cases[i].page);
		h5_file_close(f);
	}
	rm_tmpdir();
}
END_TEST

START_TEST(v2_superblock_real_checksum)
{
	static const char *script =
		"import h5py\n"
		"h5py.File('v3.h5', 'w', libver='latest').close()\n";
	char path[600];
	uint8_t *buf;
	size_t len;

	if (!run_h5py(script))
		return;
	snprintf(path, sizeof(path), "%s/v3.h5", make_tmpdir());
	buf = slurp(path, &len);
	ck_assert_uint_ge(len, 48);
	ck_assert_uint_eq(buf[8], 3);
	ck_assert_uint_eq(h5_checksum_metadata(buf, 44), (uint32_t)h5_le_decode(buf + 44, 4));
	ck_assert_int_eq(h5_checksum_verify(buf, 48, "superblock", 0), 0);
	free(buf);
	rm_tmpdir();
}
END_TEST

/* Corpus files with unusual superblocks, as listed in the catalog. */
START_TEST(corpus_superblocks)
{
	static const struct {
		const char *path;
		int version;
		uint64_t userblock;
		unsigned sizeof_addr, sizeof_size;
		int sohm_nindexes;
	} cases[] = {
		{ "test/testfiles/tsizeslheap.h5", 0, 0, 4, 4, 0 },
		{ "tools/test/h5jam/testfiles/twithub.h5", 0, 512, 8, 8, 0 },
		{ "tools/test/misc/testfiles/h5clear_fsm_persist_user_equal.h5", 2, 512, 8, 8, 0 },
		{ "test/testfiles/h5fc_ext2_sf.h5", -1, 0, 8, 8, 4 },
		{ "tools/test/misc/testfiles/h5clear_sec2_v2.h5", -1, 0, 8, 8, 1 },
	};
	const char *dir = test_corpus_dir();
	int found = 0;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char path[4096];
		h5_file *f;
		h5_ohdr *oh;

		snprintf(path, sizeof(path), "%s/%s", dir, cases[i].path);
		if (access(path, R_OK) != 0)
			continue;
		found++;
		ck_assert_msg(h5_file_open(&f, path, NULL) == 0, "%s: %s", path, h5_err_msg());
		if (cases[i].version >= 0)
			ck_assert_int_eq(h5_file_sb_version(f), cases[i].version);
		ck_assert_uint_eq(h5_file_userblock(f), cases[i].userblock);
		ck_assert_uint_eq(f->fmt.sizeof_addr, cases[i].sizeof_addr);
		ck_assert_uint_eq(f->fmt.sizeof_size, cases[i].sizeof_size);
		ck_assert_int_eq((int)f->sohm_nindexes, cases[i].sohm_nindexes);
		ck_assert_msg(h5_ohdr_load(&oh, f, h5_file_root(f)) == 0, "%s: %s", path, h5_err_msg());
		h5_ohdr_free(oh);
		h5_file_close(f);
	}
	if (!found)
		fprintf(stderr, "SKIP: corpus not found at %s\n", dir);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("superblock");
	TCase *tc = tcase_create("checksum");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, lookup3_vectors);
	tcase_add_test(tc, lookup3_all_tail_lengths);
	tcase_add_test(tc, fletcher32_vectors);
	tcase_add_test(tc, fletcher32_h5py_chunks);
	tcase_add_test(tc, checksum_verify);
	tcase_add_test(tc, v2_superblock_real_checksum);
	suite_add_tcase(s, tc);

	tc = tcase_create("superblock");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, decode_v0);
	tcase_add_test(tc, decode_v1_small_offsets);
	tcase_add_test(tc, decode_base_address);
	tcase_add_test(tc, decode_v0_errors);
	tcase_add_test(tc, decode_v2_v3);
	tcase_add_test(tc, decode_v2_small_offsets);
	tcase_add_test(tc, read_userblock_mem);
	tcase_add_test(tc, read_truncated_superblock);
	tcase_add_test(tc, check_truncated);
	tcase_add_test(tc, lazy_lock);
	tcase_add_test(tc, read_extension_smtb);
	tcase_add_test(tc, h5py_files);
	tcase_add_test(tc, fsinfo_page_size);
	tcase_add_test(tc, corpus_superblocks);
	suite_add_tcase(s, tc);
	return s;
}

H5_TEST_MAIN(make_suite)
