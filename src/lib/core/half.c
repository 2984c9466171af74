/* half: binary16 and bfloat16 → float32 (see half.h). */
#include "half.h"

#include <string.h>

float half_bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* IEEE binary16: sign, 5-bit exponent (bias 15), 10-bit fraction. Subnormals are
 * fraction·2^-24; exponent 31 is infinity (fraction 0) or NaN. */
float half_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, frac = h & 0x3ff, u;
    if (exp == 0) {
        float f = (float)frac * 0x1p-24f;
        return sign ? -f : f;
    }
    if (exp == 31)
        u = sign | 0x7f800000u | (frac << 13);
    else
        u = sign | ((exp + 112) << 23) | (frac << 13);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
