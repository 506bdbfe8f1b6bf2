/*
 * nocsum.c - fuzzing aid: metadata checksums that do not match are
 * accepted, so mutated v2 structures (OHDR, BTHD, FRHP, EAHD, ...) reach the
 * decoders behind their checksum instead of stopping at it. Linked only into
 * fuzz_walk_nocsum and fixcsum with -Wl,--wrap=h5_checksum_verify; the
 * engine itself is unchanged. Anything found this way is reachable by a
 * file whose checksums are right: fixcsum writes that file.
 */
#include "nocsum.h"
#include "rd.h"
#include "checksum.h"

#include <string.h>

uint8_t *h5fuzz_fix_image;
size_t h5fuzz_fix_len;
unsigned h5fuzz_fixed;

int __real_h5_checksum_verify(const uint8_t *buf, size_t len, const char *what, uint64_t addr);
int __wrap_h5_checksum_verify(const uint8_t *buf, size_t len, const char *what, uint64_t addr);

/* In fix mode, store the right checksum into the image where the block was
 * read from: at addr past the user block (0, 512, 1024, ...), found by
 * comparing the checksummed bytes. */
static void fix_image(const uint8_t *buf, size_t len, uint64_t addr)
{
	uint64_t base, at;

	for (base = 0; base < h5fuzz_fix_len; base = base ? base * 2 : 512) {
		if (__builtin_add_overflow(base, addr, &at) || at > h5fuzz_fix_len || len > h5fuzz_fix_len - at)
			continue;
		if (memcmp(h5fuzz_fix_image + at, buf, len - 4) == 0) {
			h5_le_encode(h5fuzz_fix_image + at + len - 4, h5_checksum_metadata(buf, len - 4), 4);
			h5fuzz_fixed++;
			return;
		}
	}
}

int __wrap_h5_checksum_verify(const uint8_t *buf, size_t len, const char *what, uint64_t addr)
{
	int rc = __real_h5_checksum_verify(buf, len, what, addr);

	if (rc != H5_ERR_CHECKSUM)
		return rc;
	if (h5fuzz_fix_image)
		fix_image(buf, len, addr);
	h5_err_clear();
	return 0;
}
