/* decode_common.c - what the decode floors of bench/ share (decode_floor,
 * fuse_decode_floor): the chunk list loaded into memory and the unshuffle.
 * Built with each: cc -O2 FLOOR.c decode_common.c -ldeflate ...
 */
#define _GNU_SOURCE
#include "decode_common.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

struct dchunk *chunks;
size_t nchunks;

/* Byte i of element j: src[i * n + j] -> dst[j * es + i]. Sixteen elements
 * a step with SSE2 unpacks for 4- and 8-byte elements (the benchmark's
 * int32 and the float64 case), a plain loop for the rest. */
void unshuffle(uint8_t *dst, const uint8_t *src, size_t len, size_t es)
{
	size_t n = len / es, j = 0;

#if defined(__SSE2__)
	if (es == 4) {
		for (; j + 16 <= n; j += 16) {
			__m128i a = _mm_loadu_si128((const __m128i *)(src + j));
			__m128i b = _mm_loadu_si128((const __m128i *)(src + n + j));
			__m128i c = _mm_loadu_si128((const __m128i *)(src + 2 * n + j));
			__m128i d = _mm_loadu_si128((const __m128i *)(src + 3 * n + j));
			__m128i ab0 = _mm_unpacklo_epi8(a, b), ab1 = _mm_unpackhi_epi8(a, b);
			__m128i cd0 = _mm_unpacklo_epi8(c, d), cd1 = _mm_unpackhi_epi8(c, d);
			uint8_t *o = dst + 4 * j;

			_mm_storeu_si128((__m128i *)o, _mm_unpacklo_epi16(ab0, cd0));
			_mm_storeu_si128((__m128i *)(o + 16), _mm_unpackhi_epi16(ab0, cd0));
			_mm_storeu_si128((__m128i *)(o + 32), _mm_unpacklo_epi16(ab1, cd1));
			_mm_storeu_si128((__m128i *)(o + 48), _mm_unpackhi_epi16(ab1, cd1));
		}
	} else if (es == 8) {
		for (; j + 16 <= n; j += 16) {
			__m128i p[8], q[8], lo[4], hi[4];

			for (unsigned k = 0; k < 8; k++)
				p[k] = _mm_loadu_si128((const __m128i *)(src + k * n + j));
			for (unsigned k = 0; k < 4; k++) {
				q[2 * k] = _mm_unpacklo_epi8(p[2 * k], p[2 * k + 1]);
				q[2 * k + 1] = _mm_unpackhi_epi8(p[2 * k], p[2 * k + 1]);
			}
			/* lo[m]: bytes 0-3 of elements 4m..4m+3; hi[m]: bytes 4-7 */
			for (unsigned h = 0; h < 2; h++) {
				lo[2 * h] = _mm_unpacklo_epi16(q[h], q[2 + h]);
				lo[2 * h + 1] = _mm_unpackhi_epi16(q[h], q[2 + h]);
				hi[2 * h] = _mm_unpacklo_epi16(q[4 + h], q[6 + h]);
				hi[2 * h + 1] = _mm_unpackhi_epi16(q[4 + h], q[6 + h]);
			}
			for (unsigned m = 0; m < 4; m++) {
				uint8_t *o = dst + 8 * (j + 4 * m);

				_mm_storeu_si128((__m128i *)o, _mm_unpacklo_epi32(lo[m], hi[m]));
				_mm_storeu_si128((__m128i *)(o + 16), _mm_unpackhi_epi32(lo[m], hi[m]));
			}
		}
	}
#endif
	for (; j < n; j++)
		for (size_t i = 0; i < es; i++)
			dst[j * es + i] = src[i * n + j];
	memcpy(dst + n * es, src + n * es, len - n * es);
}

int load_chunks(const char *path, FILE *list)
{
	int fd = open(path, O_RDONLY);
	size_t cap = 0;
	unsigned long long off, size;

	if (fd < 0) {
		perror(path);
		return -1;
	}
	while (fscanf(list, "%llu %llu", &off, &size) == 2) {
		if (nchunks == cap) {
			cap = cap ? 2 * cap : 1024;
			chunks = realloc(chunks, cap * sizeof(*chunks));
			if (!chunks)
				return -1;
		}
		chunks[nchunks].off = off;
		chunks[nchunks].size = size;
		chunks[nchunks].z = malloc(size ? size : 1);
		if (!chunks[nchunks].z || pread(fd, chunks[nchunks].z, size, off) != (ssize_t)size) {
			fprintf(stderr, "%s: cannot read chunk %zu (%llu bytes at %llu)\n",
				path, nchunks, size, off);
			close(fd);
			return -1;
		}
		nchunks++;
	}
	close(fd);
	return nchunks ? 0 : -1;
}

