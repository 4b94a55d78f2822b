/* Writing one new file through a shared mapping from T threads, each filling its share with
 * memset (the pages faulted in through the file system), against write() of 16 MiB pieces from
 * one thread: whether a tractogram written into a mapping by every core could pass one writing
 * thread's page-cache rate. The file is reserved first (fallocate: a full disk is an error there,
 * not a SIGBUS in a mapping). Three rounds each; each file unlinked after.
 * Build: gcc -O2 -pthread -static -o mmap_write_rate mmap_write_rate.c
 * Run:   mmap_write_rate FOLDER MIB THREADS... */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
struct share { char *p; size_t n; };
static void *fill(void *a) { struct share *s = a; memset(s->p, 7, s->n); return 0; }

int main(int argc, char **argv) {
    size_t n = (size_t)atol(argv[2]) << 20;
    char path[4096];
    snprintf(path, sizeof path, "%s/mmap-write-rate.bin", argv[1]);
    for (int r = 0; r < 3; r++) {
        int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
        size_t piece = 16 << 20; char *buf = malloc(piece); memset(buf, 7, piece);
        double t0 = now();
        for (size_t at = 0; at < n; at += piece) if (write(fd, buf, piece) != (ssize_t)piece) { perror("write"); return 1; }
        double a = now() - t0; t0 = now(); close(fd); double c = now() - t0;
        printf("write(), 1 thread, round %d: %.0f ms (%.2f GB/s), close %.0f ms\n", r + 1, a * 1e3, n / a / 1e9, c * 1e3);
        unlink(path); free(buf);
    }
    for (int k = 3; k < argc; k++) for (int r = 0; r < 3; r++) {
        int t = atoi(argv[k]);
        int fd = open(path, O_CREAT | O_EXCL | O_RDWR, 0644);
        double t0 = now();
        if (fallocate(fd, 0, 0, n) != 0) { perror("fallocate"); return 1; }
        double f = now() - t0;
        char *p = mmap(0, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) { perror("mmap"); return 1; }
        pthread_t th[256]; struct share s[256];
        t0 = now();
        for (int i = 0; i < t; i++) { s[i].p = p + n / t * i; s[i].n = i == t - 1 ? n - n / t * i : n / t; pthread_create(&th[i], 0, fill, &s[i]); }
        for (int i = 0; i < t; i++) pthread_join(th[i], 0);
        double a = now() - t0; t0 = now(); munmap(p, n); close(fd); double c = now() - t0;
        printf("mapping, %2d threads, round %d: fallocate %.0f ms, fill %.0f ms (%.2f GB/s), unmap and close %.0f ms; total %.2f GB/s\n", t, r + 1, f * 1e3, a * 1e3, n / a / 1e9, c * 1e3, n / (f + a + c) / 1e9);
        unlink(path);
    }
    return 0;
}
