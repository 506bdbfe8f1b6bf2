/*
 * fltdig.c - the shortest decimal digits of IEEE doubles and singles.
 *
 * The text of a float (attributes, the .csv view) is the shortest count of
 * significant digits d such that v rounded to d digits reads back as v,
 * probed from the count most measured values need (16 digits; 8 for a
 * single) down to 15 (6) while texts read back, or up to 17 (9), which
 * always do (at 15 (6) digits and fewer the decimals are spaced far wider
 * than the format's values, so rounding v to 15 lands on the shortest).
 * h5_fltdig_slow does it with printf and strtod, a microsecond per value;
 * h5_fltdig with exact integers, the same decisions: the .csv view formats
 * millions of values (bench/README.md, issue 63).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fltdig.h"

typedef unsigned __int128 u128;

/* "%.*e" text to its digits (trailing zeros dropped) and exponent. */
static int e_digits(char *digits, int *exp10, const char *txt)
{
	const char *p = txt;
	int nd = 0;

	if (*p == '-')
		p++;
	for (; *p && *p != 'e'; p++)
		if (*p >= '0' && *p <= '9' && nd < H5_FLTDIG_MAX - 1)
			digits[nd++] = *p;
	*exp10 = *p == 'e' ? atoi(p + 1) : 0;
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	digits[nd] = '\0';
	return nd;
}

static bool reads_back(const char *txt, double v, bool single)
{
	return single ? strtof(txt, NULL) == (float)v : strtod(txt, NULL) == v;
}

int h5_fltdig_slow(char *digits, int *exp10, double v, bool single)
{
	char txt[40], shorter[40];
	int lo = single ? 6 : 15, hi = single ? 9 : 17, d = single ? 8 : 16;

	/* a text of d digits that reads back means every longer one does (a
	 * longer rounding is no farther from v) */
	snprintf(txt, sizeof(txt), "%.*e", d - 1, v);
	if (!reads_back(txt, v, single)) {
		for (d++; d < hi; d++) {
			snprintf(txt, sizeof(txt), "%.*e", d - 1, v);
			if (reads_back(txt, v, single))
				return e_digits(digits, exp10, txt);
		}
		snprintf(txt, sizeof(txt), "%.*e", hi - 1, v);
		return e_digits(digits, exp10, txt);
	}
	while (d > lo) {
		snprintf(shorter, sizeof(shorter), "%.*e", d - 2, v);
		if (!reads_back(shorter, v, single))
			break;
		memcpy(txt, shorter, sizeof(txt));
		d--;
	}
	return e_digits(digits, exp10, txt);
}

static const uint64_t pow10_tab[] = {
	1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL, 10000000ULL, 100000000ULL,
	1000000000ULL, 10000000000ULL, 100000000000ULL, 1000000000000ULL, 10000000000000ULL,
	100000000000000ULL, 1000000000000000ULL, 10000000000000000ULL, 100000000000000000ULL,
};

#define POW5_MAX 27     /* 5^27 < 2^63: f * 5^k * 4 < 2^118 */

static const uint64_t pow5_tab[POW5_MAX + 1] = {
	1ULL, 5ULL, 25ULL, 125ULL, 625ULL, 3125ULL, 15625ULL, 78125ULL, 390625ULL, 1953125ULL,
	9765625ULL, 48828125ULL, 244140625ULL, 1220703125ULL, 6103515625ULL, 30517578125ULL,
	152587890625ULL, 762939453125ULL, 3814697265625ULL, 19073486328125ULL, 95367431640625ULL,
	476837158203125ULL, 2384185791015625ULL, 11920928955078125ULL, 59604644775390625ULL,
	298023223876953125ULL, 1490116119384765625ULL, 7450580596923828125ULL,
};

/* The value v = f * 2^e scaled by 10^k to X = v * 10^k, D digits before
 * the point, is held exactly as X' = X * 2^sh = f * 5^k * 4 (sh = 2 - k - e):
 * a unit of X' is a quarter of v's ulp scaled, so the half-ulps either side
 * (v's rounding interval, where strtod lands on v) are whole units too. */
typedef struct fd_val {
	u128 x;         /* X' */
	int sh;         /* X = X' / 2^sh */
	u128 h_up, h_dn;/* half-ulp above and below v in units of X' */
	bool even;      /* f even: strtod's ties to even land on v */
} fd_val;

/* v rounded to d of its D digits ("%.*e": exact, ties to even), as N
 * (d digits, or 10^d on a carry); true if that text reads back as v. */
static bool fd_round(uint64_t *n, const fd_val *a, int D, int d)
{
	uint64_t q10 = pow10_tab[D - d], xi = (uint64_t)(a->x >> a->sh), nn = xi / q10;
	u128 q = (u128)q10 << a->sh, c = (u128)nn * q10 << a->sh, r = a->x - c, diff;

	if (2 * r > q || (2 * r == q && (nn & 1))) {
		nn++;
		c += q;
	}
	*n = nn;
	if (c >= a->x) {
		diff = c - a->x;
		return diff < a->h_up || (diff == a->h_up && a->even);
	}
	diff = a->x - c;
	return diff < a->h_dn || (diff == a->h_dn && a->even);
}

int h5_fltdig(char *digits, int *exp10, double v, bool single)
{
	int D = single ? 9 : 17, lo = single ? 6 : 15, hi = single ? 9 : 17, d = single ? 8 : 16;
	int e, e10, bexp, prec = single ? 24 : 53, nd;
	uint64_t f, n, pow5;
	fd_val a;

	if (single) {
		float x = (float)fabs(v);
		uint32_t b;

		memcpy(&b, &x, 4);
		bexp = (int)(b >> 23);
		f = b & 0x7fffffu;
		if (bexp == 0 || bexp == 0xff)
			return h5_fltdig_slow(digits, exp10, v, single);
		f |= 1u << 23;
		e = bexp - 150;
	} else {
		double x = fabs(v);
		uint64_t b;

		memcpy(&b, &x, 8);
		bexp = (int)(b >> 52);
		f = b & ((1ULL << 52) - 1);
		if (bexp == 0 || bexp == 0x7ff)
			return h5_fltdig_slow(digits, exp10, v, single);
		f |= 1ULL << 52;
		e = bexp - 1075;
	}
	/* floor(log10(2^(e + prec - 1))) (78913 / 2^18 ~ log10(2)): the
	 * decimal exponent of v or one less */
	e10 = ((e + prec - 1) * 78913) >> 18;
	for (int tries = 0;; tries++) {
		int k = D - 1 - e10;

		if (tries == 2 || k < 0 || k > POW5_MAX || 2 - k - e < 0 || 2 - k - e > 70)
			return h5_fltdig_slow(digits, exp10, v, single);
		pow5 = pow5_tab[k];
		a.x = (u128)f * pow5 << 2;
		a.sh = 2 - k - e;
		if (a.x < (u128)pow10_tab[D - 1] << a.sh) {
			e10--;
			continue;
		}
		if (a.x >= (u128)pow10_tab[D] << a.sh) {
			e10++;
			continue;
		}
		break;
	}
	a.h_up = (u128)pow5 * 2;
	/* at a power of two the value below is half as far */
	a.h_dn = f == (1ULL << (prec - 1)) && bexp > 1 ? (u128)pow5 : a.h_up;
	a.even = !(f & 1);

	if (!fd_round(&n, &a, D, d)) {
		/* 17 (9) digits: v's own digits rounded, always read back */
		d = hi;
		fd_round(&n, &a, D, d);
	} else {
		uint64_t m;

		while (d > lo && fd_round(&m, &a, D, d - 1)) {
			n = m;
			d--;
		}
	}
	if (n == pow10_tab[d]) {        /* 9.99..5 rounded up: 1.0 * 10^(e10+1) */
		n = pow10_tab[d - 1];
		e10++;
	}
	for (int i = d - 1; i >= 0; i--) {
		digits[i] = (char)('0' + n % 10);
		n /= 10;
	}
	nd = d;
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	digits[nd] = '\0';
	*exp10 = e10;
	return nd;
}
