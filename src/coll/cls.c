/* cls.c - h5fs-ls's listings in the collection index (cls.h): table
 * ls_listing of cindex.c's schema, dropped with the member's other rows
 * (cindex_forget). */
#include "cls.h"
#include "cindex_int.h"

#include "h5core.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* The row's CRC: the key's fields and the body, so a row whose bytes
 * were damaged does not pass for another member's or stamp's. */
static uint32_t row_crc(const cindex_key *k, int form, unsigned nerr, const char *body, size_t len)
{
	uint8_t b[20];
	uint32_t crc = (uint32_t)crc32(0L, Z_NULL, 0);
	const char *et = k->etag ? k->etag : "";

	for (int i = 0; i < 8; i++) {
		b[i] = (uint8_t)(k->size >> (8 * i));
		b[8 + i] = (uint8_t)((uint64_t)k->mtime_ns >> (8 * i));
	}
	b[16] = (uint8_t)form;
	b[17] = (uint8_t)nerr;
	b[18] = (uint8_t)(nerr >> 8);
	b[19] = (uint8_t)(nerr >> 16);
	crc = (uint32_t)crc32(crc, b, sizeof(b));
	crc = (uint32_t)crc32(crc, (const Bytef *)k->member, (uInt)strlen(k->member));
	crc = (uint32_t)crc32(crc, (const Bytef *)et, (uInt)strlen(et));
	while (len) {
		uInt n = len > (1u << 30) ? 1u << 30 : (uInt)len;

		crc = (uint32_t)crc32(crc, (const Bytef *)body, n);
		body += n;
		len -= n;
	}
	return crc;
}

int cls_get(char **body, size_t *len, unsigned *nerr, cindex *ix, const cindex_key *k, int form)
{
	sqlite3_stmt *s = NULL;
	int rc, ret = 1;

	*body = NULL;
	*len = 0;
	*nerr = 0;
	pthread_mutex_lock(&ix->lock);
	rc = ix->db ? sqlite3_prepare_v2(ix->db, "SELECT size, mtime_ns, etag, crc, body, nerr FROM ls_listing"
				 " WHERE root = ?1 AND path = ?2 AND form = ?3", -1, &s, NULL) : SQLITE_MISUSE;
	if (rc == SQLITE_OK) {
		sqlite3_bind_text(s, 1, k->root, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 2, k->member, -1, SQLITE_STATIC);
		sqlite3_bind_int(s, 3, form);
		rc = sqlite3_step(s);
	}
	if (rc == SQLITE_ROW) {
		const char *et = (const char *)sqlite3_column_text(s, 2);
		const void *b = sqlite3_column_blob(s, 4);
		size_t n = (size_t)sqlite3_column_bytes(s, 4);
		unsigned ne = (unsigned)sqlite3_column_int64(s, 5);

		rc = SQLITE_DONE;
		if ((uint64_t)sqlite3_column_int64(s, 0) == k->size && sqlite3_column_int64(s, 1) == k->mtime_ns &&
		    strcmp(et ? et : "", k->etag ? k->etag : "") == 0) {
			if ((uint32_t)sqlite3_column_int64(s, 3) != row_crc(k, form, ne, b, n)) {
				cindex_note(ix, "%s: damaged listing of %s in the index: listed anew", ix->path,
					    k->member);
			} else if ((*body = malloc(n + 1)) == NULL) {
				ret = h5_err_set(H5_ERR_NOMEM, "out of memory");
			} else {
				if (n)
					memcpy(*body, b, n);
				(*body)[n] = 0;
				*len = n;
				*nerr = ne;
				ret = 0;
			}
		}
	}
	if (rc != SQLITE_DONE && rc != SQLITE_OK)
		ret = cindex_sql_err(ix, rc, "reading a listing");
	sqlite3_finalize(s);
	if (ret < 0 && cindex_damaged(rc))
		cindex_rebuild(ix, rc);
	pthread_mutex_unlock(&ix->lock);
	return ret;
}

int cls_put(cindex *ix, const cindex_key *k, int form, const char *body, size_t len, unsigned nerr)
{
	sqlite3_stmt *s = NULL;
	int rc, ret = 0;

	pthread_mutex_lock(&ix->lock);
	rc = ix->db ? sqlite3_prepare_v2(ix->db, "INSERT OR REPLACE INTO ls_listing(root, path, form, size, mtime_ns,"
				 " etag, crc, nerr, body) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)", -1, &s, NULL)
		    : SQLITE_MISUSE;
	if (rc == SQLITE_OK) {
		sqlite3_bind_text(s, 1, k->root, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 2, k->member, -1, SQLITE_STATIC);
		sqlite3_bind_int(s, 3, form);
		sqlite3_bind_int64(s, 4, (int64_t)k->size);
		sqlite3_bind_int64(s, 5, k->mtime_ns);
		sqlite3_bind_text(s, 6, k->etag ? k->etag : "", -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 7, row_crc(k, form, nerr, body, len));
		sqlite3_bind_int64(s, 8, nerr);
		sqlite3_bind_blob64(s, 9, len ? body : "", len, SQLITE_STATIC);
		rc = sqlite3_step(s);
	}
	if (rc != SQLITE_DONE)
		ret = cindex_sql_err(ix, rc, "recording a listing");
	sqlite3_finalize(s);
	if (ret < 0 && cindex_damaged(rc))
		cindex_rebuild(ix, rc);
	pthread_mutex_unlock(&ix->lock);
	return ret;
}
