/*
 * msg_mtime.c - an object's modification time (IV.A.2.o, the old ASCII
 * message 0x000E; IV.A.2.s, 0x0012; a v2 header's own times), decoded
 * from a loaded header (ohdr.c), with no I/O and no libc time zone.
 */
#include "base.h"
#include "rd.h"
#include "ohdr.h"

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
 * days_from_civil), so no libc time zone state is involved. */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static bool parse_digits(const uint8_t *p, unsigned n, unsigned *out)
{
	unsigned v = 0;

	for (unsigned i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return false;
		v = v * 10 + (unsigned)(p[i] - '0');
	}
	*out = v;
	return true;
}

/* IV.A.2.o: "YYYYMMDDhhmmss" in ASCII, UTC. */
static int mtime_old_decode(const h5_ohdr *oh, const h5_msg *m, int64_t *mtime)
{
	unsigned y, mo, d, h, mi, s;

	if (m->size < 14 || !parse_digits(m->data, 4, &y) || !parse_digits(m->data + 4, 2, &mo) ||
	    !parse_digits(m->data + 6, 2, &d) || !parse_digits(m->data + 8, 2, &h) ||
	    !parse_digits(m->data + 10, 2, &mi) || !parse_digits(m->data + 12, 2, &s) ||
	    mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60)
		return h5_err_set(H5_ERR_FORMAT, "object header 0x%llx: malformed old modification time message",
				  (unsigned long long)oh->addr);
	*mtime = days_from_civil(y, mo, d) * 86400 + (int64_t)h * 3600 + mi * 60 + s;
	return 0;
}

int h5_ohdr_mtime(const h5_ohdr *oh, int64_t *mtime)
{
	const h5_msg *m;

	/* IV.A.2.s: version 1, 3 reserved bytes, 32-bit seconds */
	m = h5_ohdr_find(oh, H5_MSG_MTIME);
	if (m) {
		if (m->size < 8 || m->data[0] != 1)
			return h5_err_set(H5_ERR_FORMAT, "object header 0x%llx: bad modification time message "
					  "(version %u, %u bytes)", (unsigned long long)oh->addr,
					  m->size ? m->data[0] : 0, m->size);
		*mtime = (int64_t)h5_le_decode(m->data + 4, 4);
		return 0;
	}
	m = h5_ohdr_find(oh, H5_MSG_MTIME_OLD);
	if (m)
		return mtime_old_decode(oh, m, mtime);
	if (oh->has_times) {
		*mtime = oh->mtime;
		return 0;
	}
	return h5_err_set(H5_ERR_NOTFOUND, "object header 0x%llx has no modification time",
			  (unsigned long long)oh->addr);
}

bool h5_ohdr_has_mtime(const h5_ohdr *oh)
{
	return oh->has_times || h5_ohdr_find(oh, H5_MSG_MTIME) || h5_ohdr_find(oh, H5_MSG_MTIME_OLD);
}
