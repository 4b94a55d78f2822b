/* rng.h: the combined Tausworthe generator paper 003 uses to make its random numbers on the
 * device (GPU Gems 3, ch. 37): three Tausworthe components with L'Ecuyer's taus88 parameters
 * and one LCG, xor-combined. A stream is four 32-bit words; the three Tausworthe words must be
 * >= 128 or the component degenerates. Written bit for bit again in src/bedpost/rng.rs, so a
 * stream yields the same uniforms on every backend. */
#ifndef NP_RNG_H
#define NP_RNG_H

NP_FN np_uint np_taus_step(np_uint z, int s1, int s2, int s3, np_uint m)
{
    np_uint b = ((z << s1) ^ z) >> s2;
    return ((z & m) << s3) ^ b;
}

/* The next 32 random bits of the stream s[0..3]. */
NP_FN np_uint np_rng_next(np_uint *s)
{
    s[0] = np_taus_step(s[0], 13, 19, 12, 4294967294u);
    s[1] = np_taus_step(s[1], 2, 25, 4, 4294967288u);
    s[2] = np_taus_step(s[2], 3, 11, 17, 4294967280u);
    s[3] = 1664525u * s[3] + 1013904223u;
    return s[0] ^ s[1] ^ s[2] ^ s[3];
}

/* Uniform in (0, 1): the top 24 bits, centred. Every value is exact in float32 (so backends
 * agree to the bit) and none is 0, so its logarithm is finite. */
NP_FN float np_rng_uniform(np_uint *s)
{
    return ((float)(np_rng_next(s) >> 8) + 0.5f) * 5.9604644775390625e-8f;
}

/* A standard normal by Box-Muller. The pair's sine half is dropped so that every draw takes
 * exactly two uniforms: a stream's position then depends only on how many draws were made. */
NP_FN float np_rng_gauss(np_uint *s)
{
    float u1 = np_rng_uniform(s);
    float u2 = np_rng_uniform(s);
    return np_sqrt(-2.0f * np_log(u1)) * np_cos(2.0f * NP_PI_F * u2);
}

#endif
