/* cli_num_to_ll, the one checked number-to-integer conversion: exact integers in range pass;
 * NaN, ±Inf, fractions and values outside the range (the int64 edges included) fail with a reason
 * that names the value. */
#include "cli/cli.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static int n_fail;
static void ok(int cond, const char *name) {
    printf("%s - %s\n", cond ? "ok" : "not ok", name);
    n_fail += !cond;
}

static int conv(double x, long long lo, long long hi, long long *v, char *why) {
    return cli_num_to_ll(x, lo, hi, v, why, 128);
}

int main(void) {
    long long v = 0;
    char why[128] = "";
    ok(conv(12.0, 0, 100, &v, why) == 0 && v == 12, "12.0 in [0, 100] is 12");
    ok(conv(-3.0, -5, 5, &v, why) == 0 && v == -3, "-3.0 in [-5, 5] is -3");
    ok(conv(-9223372036854775808.0, LLONG_MIN, LLONG_MAX, &v, why) == 0 && v == LLONG_MIN, "-2^63 is LLONG_MIN");
    ok(conv(9007199254740992.0, 0, LLONG_MAX, &v, why) == 0 && v == 9007199254740992LL, "2^53 exactly");
    ok(conv(1.5, 0, 100, &v, why) < 0 && strstr(why, "1.5 is not an integer"), "1.5 is not an integer");
    ok(conv(NAN, 0, 100, &v, why) < 0 && strstr(why, "NaN"), "NaN is refused, by name");
    ok(conv(INFINITY, 0, LLONG_MAX, &v, why) < 0 && strstr(why, "out of range"), "+Inf is out of range");
    ok(conv(-INFINITY, LLONG_MIN, 0, &v, why) < 0 && strstr(why, "out of range"), "-Inf is out of range");
    ok(conv(9223372036854775808.0, LLONG_MIN, LLONG_MAX, &v, why) < 0, "2^63 does not fit int64");
    ok(conv(4294967596.0, -INT_MAX, INT_MAX, &v, why) < 0 && strstr(why, "4294967596 is out of range [-2147483647, 2147483647]"),
       "2^32+300 is out of int range, value and range named");
    ok(conv(101.0, 0, 100, &v, why) < 0 && strstr(why, "out of range [0, 100]"), "101 is above [0, 100]");
    ok(conv(1e300, 0, 100, &v, why) < 0, "1e300 is out of range");
    v = 77;
    conv(0.5, 0, 1, &v, why);
    ok(v == 77, "a refused value leaves *out alone");
    return n_fail != 0;
}
