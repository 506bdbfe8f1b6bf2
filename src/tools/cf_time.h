/* cf_time.h - CF time coordinates ("UNIT since DATE", a calendar) for
 * h5fs-ls --refs --concat (cf_time.c): the files of a series each say
 * their own units (xarray's default: "hours since <that day>"), and the
 * combination re-encodes every file's values in the first file's units,
 * as kerchunk's MultiZarrToZarr does with coo_map "cf:time", or refuses
 * where that cannot be exact. CF conventions 1.11, section 4.4 (time
 * coordinate) and 4.4.1 (calendars). No I/O. */
#ifndef H5FS_CF_TIME_H
#define H5FS_CF_TIME_H

#include <stddef.h>
#include <stdint.h>

enum cf_calendar {
	CF_CAL_STANDARD,          /* "standard", "gregorian" (Julian before 1582-10-15), or none */
	CF_CAL_PROLEPTIC,         /* "proleptic_gregorian" */
	CF_CAL_JULIAN,            /* "julian" */
	CF_CAL_NOLEAP,            /* "noleap", "365_day" */
	CF_CAL_ALL_LEAP,          /* "all_leap", "366_day" */
	CF_CAL_360_DAY            /* "360_day" */
};

/* Units of time since a reference instant. */
typedef struct cf_units {
	enum cf_calendar cal;
	int64_t unit_ns;          /* one unit in nanoseconds (days: 86400e9) */
	int64_t day;              /* the reference day, counted in cal from an origin of its own */
	int64_t day_ns;           /* and the time of day (its time zone taken out): [-14 h, 38 h) */
} cf_units;

/* units (and calendar, NULL: standard) as CF time: 0; 1 when units is
 * not "UNIT since DATE" at all (a quantity that is not time); or -1
 * with why[] saying what is not supported (months or years since, an
 * unknown calendar, a date the calendar does not have). */
int cf_units_parse(cf_units *u, const char *units, const char *calendar, char *why, size_t cap);

/* Whether two calendars are one (their names may differ: "gregorian"
 * and "standard"). */
int cf_same_calendar(const char *a, const char *b);

/* n values of Zarr dtype typestr ("<i8", ">f4", ...) at p, in units
 * from, rewritten in place in units to (the same calendar): 0, or -1
 * with why[] naming the first value that has no exact form in to's
 * units and that dtype (out: a whole copy is the caller's, as a refusal
 * leaves p partly rewritten). NaN stays NaN. */
int cf_recode(uint8_t *p, uint64_t n, const char *typestr, const cf_units *from, const cf_units *to, char *why,
	      size_t cap);

/* The instant of value v in units u as seconds since 1970-01-01 of u's
 * calendar: an order for a collection's members, not a value written. */
double cf_seconds(const cf_units *u, double v);

#endif
