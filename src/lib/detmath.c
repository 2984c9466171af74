/* detmath: the correctly rounded scalars of detmath.h. */
#include "detmath.h"

#include <mpfr.h>


double det_pow(double x, double y) {
    mpfr_t a, b;
    mpfr_inits2(53, a, b, (mpfr_ptr)0);
    mpfr_set_d(a, x, MPFR_RNDN);
    mpfr_set_d(b, y, MPFR_RNDN);
    mpfr_pow(a, a, b, MPFR_RNDN);
    double r = mpfr_get_d(a, MPFR_RNDN);
    mpfr_clears(a, b, (mpfr_ptr)0);
    return r;
}

double det_cos(double x) {
    mpfr_t a;
    mpfr_init2(a, 53);
    mpfr_set_d(a, x, MPFR_RNDN);
    mpfr_cos(a, a, MPFR_RNDN);
    double r = mpfr_get_d(a, MPFR_RNDN);
    mpfr_clear(a);
    return r;
}

/* MPFR at 24 bits rounds straight to the float result (one rounding, no double rounding). */
static float mpfr_flt(int (*f)(mpfr_ptr, mpfr_srcptr, mpfr_rnd_t), float x) {
    mpfr_t a;
    mpfr_init2(a, 24);
    mpfr_set_flt(a, x, MPFR_RNDN);
    f(a, a, MPFR_RNDN);
    float r = mpfr_get_flt(a, MPFR_RNDN);
    mpfr_clear(a);
    return r;
}

float det_sinf(float x) { return mpfr_flt(mpfr_sin, x); }
float det_cosf(float x) { return mpfr_flt(mpfr_cos, x); }
