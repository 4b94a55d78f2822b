/* The tractogram's mapped writing taken apart (round 32 part i): one new file of MIB MiB written
 * through shared mappings of WIN MiB windows (each reserved by fallocate, mapped, filled by T
 * threads, unmapped), the fill being memset or memcpy from 1.2 MB heap pieces as the encoder's;
 * WIN = MIB is one mapping for the whole file. Three rounds each.
 * Build: gcc -O2 -pthread -static -o mmap_window_rate mmap_window_rate.c
 * Run:   mmap_window_rate FOLDER MIB THREADS WIN... */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PIECE (1200 * 1024)
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
struct job { char *dst; size_t n; int copy; char *src; };
static void *run(void *a) {
    struct job *j = a;
    for (size_t at = 0; at < j->n; at += PIECE) {
        size_t len = j->n - at < PIECE ? j->n - at : PIECE;
        if (j->copy) memcpy(j->dst + at, j->src, len); else memset(j->dst + at, 7, len);
    }
    return 0;
}

int main(int argc, char **argv) {
    size_t total = (size_t)atol(argv[2]) << 20;
    int t = atoi(argv[3]);
    char path[4096];
    snprintf(path, sizeof path, "%s/mmap-window-rate.bin", argv[1]);
    char *src[256];
    for (int i = 0; i < t; i++) { src[i] = malloc(PIECE); memset(src[i], 5, PIECE); }
    for (int k = 4; k < argc; k++) for (int copy = 0; copy < 2; copy++) for (int r = 0; r < 3; r++) {
        size_t win = (size_t)atol(argv[k]) << 20;
        int fd = open(path, O_CREAT | O_EXCL | O_RDWR, 0644);
        size_t end = 100; /* a header's worth, so windows start off a page boundary */
        if (pwrite(fd, "header", 6, 0) != 6) return 1;
        double t0 = now(), fa = 0, mm = 0, fill = 0, un = 0;
        for (size_t done = 0; done < total; done += win) {
            size_t n = total - done < win ? total - done : win;
            double a = now();
            if (fallocate(fd, 0, end, n) != 0) { perror("fallocate"); return 1; }
            double b = now();
            size_t start = end / 4096 * 4096, skip = end - start;
            char *p = mmap(0, skip + n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, start);
            if (p == MAP_FAILED) { perror("mmap"); return 1; }
            double c = now();
            pthread_t th[256]; struct job j[256];
            for (int i = 0; i < t; i++) { size_t s = n / t * i, e = i == t - 1 ? n : n / t * (i + 1); j[i] = (struct job){ p + skip + s, e - s, copy, src[i] }; pthread_create(&th[i], 0, run, &j[i]); }
            for (int i = 0; i < t; i++) pthread_join(th[i], 0);
            double d = now();
            munmap(p, skip + n);
            double e = now();
            fa += b - a; mm += c - b; fill += d - c; un += e - d; end += n;
        }
        double all = now() - t0;
        close(fd); unlink(path);
        printf("%zu MiB windows, %2d threads, %s, round %d: %.0f ms (%.2f GB/s): fallocate %.0f, mmap %.0f, fill %.0f, munmap %.0f ms\n", win >> 20, t, copy ? "memcpy" : "memset", r + 1, all * 1e3, total / all / 1e9, fa * 1e3, mm * 1e3, fill * 1e3, un * 1e3);
    }
    return 0;
}
