/* First-touch rate of fresh anonymous memory (the kernel zeroing each page as it is faulted in),
 * with 4 KiB pages or MADV_HUGEPAGE, from 1 or T threads each touching its share, three rounds
 * each (the first round's pages may be new to the machine, the later ones' come back from the
 * kernel's free lists); then memset over the touched memory for comparison.
 * Build: gcc -O2 -pthread -static -o touch_rate touch_rate.c; run: touch_rate MIB THREADS... */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
struct share { char *p; size_t n; };
static void *touch(void *a) { struct share *s = a; for (size_t i = 0; i < s->n; i += 4096) s->p[i] = 1; return 0; }

int main(int argc, char **argv) {
    size_t n = (size_t)atol(argv[1]) << 20;
    for (int k = 2; k < argc; k++) for (int huge = 0; huge < 2; huge++) for (int r = 0; r < 3; r++) {
        int t = atoi(argv[k]);
        char *p = mmap(0, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (huge) madvise(p, n, MADV_HUGEPAGE);
        pthread_t th[256]; struct share s[256];
        double t0 = now();
        for (int i = 0; i < t; i++) { s[i].p = p + n / t * i; s[i].n = i == t - 1 ? n - n / t * i : n / t; pthread_create(&th[i], 0, touch, &s[i]); }
        for (int i = 0; i < t; i++) pthread_join(th[i], 0);
        double a = now() - t0; t0 = now(); memset(p, 2, n); double b = now() - t0;
        printf("%zu MiB, %2d threads, %s pages, round %d: first touch %.0f ms (%.1f GB/s); memset after %.0f ms (%.1f GB/s)\n", n >> 20, t, huge ? "huge" : "4 KiB", r + 1, a * 1e3, n / a / 1e9, b * 1e3, n / b / 1e9);
        munmap(p, n);
    }
    return 0;
}
