/*
 * cf_time.c - CF time units and their re-encoding (cf_time.h).
 *
 * A time coordinate's values count units since a reference date of a
 * calendar (CF conventions 4.4; the date as udunits reads it:
 * "Y-M-D[( |T)h[:m[:s[.frac]]]][ ][Z|UTC|+hh[:mm]]"). Two files' units
 * of one calendar are combined exactly: the reference dates' distance
 * is whole days of that calendar (4.4.1: day counts per calendar below)
 * plus nanoseconds, in 128-bit integers; months and years are refused,
 * as their length is not fixed (udunits' "month" is a twelfth of a
 * tropical year, which no one means).
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "cf_time.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define NS_PER_S 1000000000LL
#define NS_PER_DAY (86400LL * NS_PER_S)

static const struct {
	const char *name;
	int64_t ns;
} units_tab[] = {
	{ "days", NS_PER_DAY }, { "day", NS_PER_DAY }, { "d", NS_PER_DAY },
	{ "hours", 3600 * NS_PER_S }, { "hour", 3600 * NS_PER_S }, { "hr", 3600 * NS_PER_S },
	{ "hrs", 3600 * NS_PER_S }, { "h", 3600 * NS_PER_S },
	{ "minutes", 60 * NS_PER_S }, { "minute", 60 * NS_PER_S }, { "min", 60 * NS_PER_S },
	{ "mins", 60 * NS_PER_S },
	{ "seconds", NS_PER_S }, { "second", NS_PER_S }, { "sec", NS_PER_S }, { "secs", NS_PER_S },
	{ "s", NS_PER_S },
	{ "milliseconds", 1000000 }, { "millisecond", 1000000 }, { "msec", 1000000 }, { "msecs", 1000000 },
	{ "ms", 1000000 },
	{ "microseconds", 1000 }, { "microsecond", 1000 }, { "usec", 1000 }, { "usecs", 1000 }, { "us", 1000 },
	{ "nanoseconds", 1 }, { "nanosecond", 1 }, { "nsec", 1 }, { "ns", 1 },
};

static const struct {
	const char *name;
	enum cf_calendar cal;
} cal_tab[] = {
	{ "standard", CF_CAL_STANDARD }, { "gregorian", CF_CAL_STANDARD },
	{ "proleptic_gregorian", CF_CAL_PROLEPTIC }, { "julian", CF_CAL_JULIAN },
	{ "noleap", CF_CAL_NOLEAP }, { "365_day", CF_CAL_NOLEAP },
	{ "all_leap", CF_CAL_ALL_LEAP }, { "366_day", CF_CAL_ALL_LEAP },
	{ "360_day", CF_CAL_360_DAY },
};

static const int cum_days[13] = { 0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334, 365 };

/* calendar NULL or "": CF's default, "standard". */
static int calendar_parse(enum cf_calendar *c, const char *calendar)
{
	if (!calendar || !*calendar) {
		*c = CF_CAL_STANDARD;
		return 0;
	}
	for (size_t i = 0; i < sizeof(cal_tab) / sizeof(cal_tab[0]); i++)
		if (strcasecmp(calendar, cal_tab[i].name) == 0) {
			*c = cal_tab[i].cal;
			return 0;
		}
	return -1;
}

int cf_same_calendar(const char *a, const char *b)
{
	enum cf_calendar x, y;

	if (calendar_parse(&x, a) < 0 || calendar_parse(&y, b) < 0)
		return strcasecmp(a ? a : "", b ? b : "") == 0;
	return x == y;
}

static int before_gregorian(int64_t y, int m, int d)
{
	return y < 1582 || (y == 1582 && (m < 10 || (m == 10 && d < 15)));
}

static int month_days(enum cf_calendar c, int64_t y, int m, int d)
{
	int leap;

	if (c == CF_CAL_360_DAY)
		return 30;
	if (m != 2)
		return cum_days[m] - cum_days[m - 1];
	switch (c) {
	case CF_CAL_NOLEAP:
		leap = 0;
		break;
	case CF_CAL_ALL_LEAP:
		leap = 1;
		break;
	case CF_CAL_JULIAN:
		leap = y % 4 == 0;
		break;
	case CF_CAL_STANDARD:
		if (before_gregorian(y, m, d)) {
			leap = y % 4 == 0;
			break;
		}
		/* fall through */
	default:
		leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	}
	return 28 + leap;
}

/* Julian day numbers (y >= 1): the Gregorian and the Julian calendar's. */
static int64_t jdn(int64_t y, int m, int d, int gregorian)
{
	int64_t a = (14 - m) / 12, yy = y + 4800 - a, mm = m + 12 * a - 3;
	int64_t n = d + (153 * mm + 2) / 5 + 365 * yy + yy / 4;

	return gregorian ? n - yy / 100 + yy / 400 - 32045 : n - 32083;
}

/* The day (y, m, d) of calendar c as a count of days: the origin is the
 * calendar's own; only differences within one calendar mean anything. */
static int64_t day_number(enum cf_calendar c, int64_t y, int m, int d)
{
	switch (c) {
	case CF_CAL_PROLEPTIC:
		return jdn(y, m, d, 1);
	case CF_CAL_JULIAN:
		return jdn(y, m, d, 0);
	case CF_CAL_STANDARD:
		/* the mixed calendar: Julian days before 1582-10-15, the
		 * Julian day numbers continuing across the switch */
		return jdn(y, m, d, !before_gregorian(y, m, d));
	case CF_CAL_NOLEAP:
		return y * 365 + cum_days[m - 1] + d - 1;
	case CF_CAL_ALL_LEAP:
		return y * 366 + cum_days[m - 1] + (m > 2) + d - 1;
	default:
		return y * 360 + (m - 1) * 30 + d - 1;
	}
}

/* Digits at *p (at most max) as a number: the count read, 0 for none. */
static int digits(int64_t *v, const char **p, int max)
{
	int n = 0;

	*v = 0;
	while (n < max && isdigit((unsigned char)**p)) {
		*v = *v * 10 + (**p - '0');
		(*p)++;
		n++;
	}
	return n;
}

static void skip_space(const char **p)
{
	while (**p == ' ' || **p == '\t')
		(*p)++;
}

/* A time zone: "Z", "UTC", "GMT", or +-h[h][[:]mm]; its offset east of
 * UTC in *off_ns. 0, 1 (none there), or -1. */
static int zone(int64_t *off_ns, const char **p)
{
	int64_t h, mi = 0;
	int sign;

	*off_ns = 0;
	if (**p == 'Z' || **p == 'z') {
		(*p)++;
		return 0;
	}
	if (strncasecmp(*p, "UTC", 3) == 0 || strncasecmp(*p, "GMT", 3) == 0) {
		*p += 3;
		return 0;
	}
	if (**p != '+' && **p != '-')
		return 1;
	sign = **p == '-' ? -1 : 1;
	(*p)++;
	if (digits(&h, p, 2) == 0)
		return -1;
	if (**p == ':')
		(*p)++;
	if (isdigit((unsigned char)**p) && digits(&mi, p, 2) != 2)
		return -1;
	if (h > 14 || mi > 59)
		return -1;
	*off_ns = sign * (h * 3600 + mi * 60) * NS_PER_S;
	return 0;
}

/* The reference date at p into u (u->cal set): 0, or -1. */
static int date_parse(cf_units *u, const char *p, char *why, size_t cap)
{
	int64_t y, m, d, h = 0, mi = 0, s = 0, frac = 0, off = 0;
	int nd;

	if (digits(&y, &p, 6) == 0 || *p++ != '-' || digits(&m, &p, 2) == 0 || *p++ != '-' ||
	    digits(&d, &p, 2) == 0)
		goto bad;
	if (*p == 'T' || *p == ' ' || *p == '\t') {
		const char *q = p + 1;

		skip_space(&q);
		if (isdigit((unsigned char)*q)) {
			p = q;
			if (digits(&h, &p, 2) == 0)
				goto bad;
			if (*p == ':' && (p++, digits(&mi, &p, 2) == 0))
				goto bad;
			if (*p == ':' && (p++, digits(&s, &p, 2) == 0))
				goto bad;
			if (*p == '.') {
				int64_t scale = NS_PER_S / 10;

				for (p++; isdigit((unsigned char)*p); p++, scale /= 10)
					frac += (*p - '0') * scale;
			}
		}
	}
	skip_space(&p);
	if (zone(&off, &p) < 0)
		goto bad;
	skip_space(&p);
	if (*p)
		goto bad;
	if (m < 1 || m > 12 || h > 23 || mi > 59 || s > 60)
		goto bad;
	if (y < 1) {
		snprintf(why, cap, "a reference year before 1 is not supported");
		return -1;
	}
	nd = month_days(u->cal, y, (int)m, (int)d);
	if (d < 1 || d > nd || (u->cal == CF_CAL_STANDARD && y == 1582 && m == 10 && d > 4 && d < 15)) {
		snprintf(why, cap, "its calendar has no day %" PRId64 "-%02d-%02d", y, (int)m, (int)d);
		return -1;
	}
	u->day = day_number(u->cal, y, (int)m, (int)d);
	u->day_ns = ((h * 60 + mi) * 60 + s) * NS_PER_S + frac - off;
	return 0;
bad:
	snprintf(why, cap, "cannot read its reference date");
	return -1;
}

int cf_units_parse(cf_units *u, const char *units, const char *calendar, char *why, size_t cap)
{
	const char *p = units, *w;
	size_t wl;

	memset(u, 0, sizeof(*u));
	if (!units)
		return 1;
	skip_space(&p);
	for (w = p; isalpha((unsigned char)*p) || *p == '_'; p++)
		;
	wl = (size_t)(p - w);
	skip_space(&p);
	if (!wl || strncasecmp(p, "since", 5) != 0 || (p[5] != ' ' && p[5] != '\t'))
		return 1;
	p += 5;
	skip_space(&p);
	for (size_t i = 0; i < sizeof(units_tab) / sizeof(units_tab[0]); i++)
		if (strlen(units_tab[i].name) == wl && strncasecmp(w, units_tab[i].name, wl) == 0)
			u->unit_ns = units_tab[i].ns;
	if (!u->unit_ns) {
		snprintf(why, cap, "its unit \"%.*s\" %s", (int)(wl > 40 ? 40 : wl), w,
			 (wl >= 5 && (strncasecmp(w, "month", 5) == 0)) || (wl >= 4 && strncasecmp(w, "year", 4) == 0)
				 ? "has no fixed length" : "is not one of days, hours, minutes, seconds, ms, us, ns");
		return -1;
	}
	if (calendar_parse(&u->cal, calendar) < 0) {
		snprintf(why, cap, "its calendar \"%.40s\" is not one of CF's", calendar);
		return -1;
	}
	return date_parse(u, p, why, cap);
}

/* ---- values ------------------------------------------------------------------------ */

static int host_little(void)
{
	const uint16_t one = 1;

	return *(const uint8_t *)&one == 1;
}

static void load(uint8_t *dst, const uint8_t *src, unsigned size, int swap)
{
	for (unsigned i = 0; i < size; i++)
		dst[i] = swap ? src[size - 1 - i] : src[i];
}

int cf_recode(uint8_t *p, uint64_t n, const char *typestr, const cf_units *from, const cf_units *to, char *why,
	      size_t cap)
{
	char kind;
	unsigned size;
	int swap;
	__int128 shift = (__int128)(from->day - to->day) * NS_PER_DAY + (from->day_ns - to->day_ns);

	if (!typestr || strlen(typestr) < 3 || !strchr("<>|=", typestr[0]))
		goto type;
	kind = typestr[1];
	size = (unsigned)atoi(typestr + 2);
	swap = (typestr[0] == '<' && !host_little()) || (typestr[0] == '>' && host_little());
	if (!((kind == 'i' || kind == 'u') && (size == 1 || size == 2 || size == 4 || size == 8)) &&
	    !(kind == 'f' && (size == 4 || size == 8)))
		goto type;
	for (uint64_t k = 0; k < n; k++) {
		uint8_t *q = p + k * size, b[8];

		load(b, q, size, swap);
		if (kind == 'f') {
			long double v = size == 4 ? (long double)*(float *)b : (long double)*(double *)b, x, r;

			if (isnan(v) || isinf(v))
				continue;       /* missing, and infinities: no instant to move */
			x = v * from->unit_ns + (long double)shift;
			r = x / to->unit_ns;
			if (size == 4) {
				float f = (float)r;

				if (roundl((long double)f * to->unit_ns) != roundl(x))
					goto inexact_f;
				memcpy(b, &f, 4);
			} else {
				double dv = (double)r;

				if (roundl((long double)dv * to->unit_ns) != roundl(x))
					goto inexact_f;
				memcpy(b, &dv, 8);
			}
			load(q, b, size, swap);
			continue;
inexact_f:
			snprintf(why, cap, "its value %.17Lg (element %" PRIu64 ") has no exact %s form in the first "
				 "file's units", v, k, typestr);
			return -1;
		} else {
			__int128 v, x, r, lo, hi;

			if (kind == 'u') {
				uint64_t u = 0;

				memcpy(&u, b, size);      /* little-endian host: the low bytes */
				if (!host_little())
					u >>= 8 * (8 - size);
				v = u;
				lo = 0;
				hi = size == 8 ? (__int128)UINT64_MAX : ((__int128)1 << (8 * size)) - 1;
			} else {
				int64_t s = 0;

				switch (size) {
				case 1: s = *(int8_t *)b; break;
				case 2: s = *(int16_t *)b; break;
				case 4: s = *(int32_t *)b; break;
				default: s = *(int64_t *)b; break;
				}
				v = s;
				hi = ((__int128)1 << (8 * size - 1)) - 1;
				lo = -hi - 1;
			}
			x = v * from->unit_ns + shift;
			r = x / to->unit_ns;
			if (x % to->unit_ns != 0 || r < lo || r > hi) {
				snprintf(why, cap, "its value %s%" PRIu64 " (element %" PRIu64 ") is %s in the first file's "
					 "units", v < 0 ? "-" : "", (uint64_t)(v < 0 ? -v : v), k,
					 x % to->unit_ns ? "not a whole number" : "out of its dtype's range");
				return -1;
			}
			if (kind == 'u') {
				uint64_t u = (uint64_t)r;

				if (!host_little())
					u <<= 8 * (8 - size);
				memcpy(b, &u, size);
			} else {
				int64_t s = (int64_t)r;

				switch (size) {
				case 1: { int8_t t = (int8_t)s; memcpy(b, &t, 1); break; }
				case 2: { int16_t t = (int16_t)s; memcpy(b, &t, 2); break; }
				case 4: { int32_t t = (int32_t)s; memcpy(b, &t, 4); break; }
				default: memcpy(b, &s, 8); break;
				}
			}
			load(q, b, size, swap);
		}
	}
	return 0;
type:
	snprintf(why, cap, "its dtype %s is not a number CF time can be rewritten in", typestr ? typestr : "?");
	return -1;
}

double cf_seconds(const cf_units *u, double v)
{
	int64_t epoch = day_number(u->cal, 1970, 1, 1);

	return (double)((long double)(u->day - epoch) * 86400 + (long double)u->day_ns / NS_PER_S +
			(long double)v * u->unit_ns / NS_PER_S);
}
