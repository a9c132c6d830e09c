/* alloc: the aborting allocators (see alloc.h for why gpuaas aborts on exhaustion). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "lib/alloc.h"

static atomic_uint_fast64_t calls;

/* The message is written with write(2): stdio may itself need memory. */
_Noreturn void gx_alloc_fail(size_t n)
{
    char msg[96];
    int len = snprintf(msg, sizeof msg, "gpuaas: out of memory (%zu bytes); aborting\n", n);
    if (len > 0) {
        ssize_t w = write(2, msg, (size_t)len < sizeof msg ? (size_t)len : sizeof msg - 1);
        (void)w;
    }
    abort();
}

void *gx_xmalloc(size_t n)
{
    atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed);
    void *p = malloc(n ? n : 1);
    if (!p) gx_alloc_fail(n);
    return p;
}

void *gx_xcalloc(size_t count, size_t size)
{
    atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed);
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) gx_alloc_fail(count * size);
    return p;
}

void *gx_xrealloc(void *p, size_t n)
{
    atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed);
    void *q = realloc(p, n ? n : 1);
    if (!q) gx_alloc_fail(n);
    return q;
}

void *gx_xreallocarray(void *p, size_t count, size_t size)
{
    if (size && count > SIZE_MAX / size) gx_alloc_fail(SIZE_MAX);
    return gx_xrealloc(p, count * size);
}

char *gx_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(gx_xmalloc(n), s, n);
}

char *gx_xstrndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *d = gx_xmalloc(len + 1);
    memcpy(d, s, len);
    d[len] = 0;
    return d;
}

void *gx_xgrow(void *p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap) return p;
    size_t c = *cap ? *cap : 8;
    while (c < need) {
        if (c > SIZE_MAX / 2) gx_alloc_fail(SIZE_MAX);
        c *= 2;
    }
    p = gx_xreallocarray(p, c, size);
    *cap = c;
    return p;
}

uint64_t gx_alloc_calls(void) { return atomic_load_explicit(&calls, memory_order_relaxed); }
