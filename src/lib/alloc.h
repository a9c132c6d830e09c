/* alloc: the one allocation policy. gpuaas does not try to limp on without memory:
 * an allocation that fails means the process is being starved, and a half-applied
 * change is worse than a restart (state is durable in SQLite, pods are re-adopted).
 * So every allocation either checks its result where the caller has a better answer
 * (refuse one request with 503, say), or goes through these wrappers, which count
 * and abort in one place with one message.
 * Owns: gx_xmalloc & co, the process-wide allocation counter.
 * Must not: free or track pointers (the counter counts calls, not live blocks). */
#ifndef GX_ALLOC_H
#define GX_ALLOC_H
#include <stddef.h>
#include <stdint.h>

/* Never NULL: size 0 allocates one byte so callers need no special case. */
void *gx_xmalloc(size_t n);
void *gx_xcalloc(size_t count, size_t size);
void *gx_xrealloc(void *p, size_t n);
/* count * size with the overflow check realloc lacks (reallocarray's contract). */
void *gx_xreallocarray(void *p, size_t count, size_t size);
char *gx_xstrdup(const char *s);
char *gx_xstrndup(const char *s, size_t n);

/* Grow an array to hold at least `need` elements, doubling from 8: the one way every
 * growable array here grows. *cap is updated; returns the (possibly moved) array. */
void *gx_xgrow(void *p, size_t *cap, size_t need, size_t size);

/* Calls through the wrappers since start (for tests and /metrics). */
uint64_t gx_alloc_calls(void);

/* Where an unchecked allocation would otherwise be: the one abort, with its size. */
_Noreturn void gx_alloc_fail(size_t n);

#endif
