/* mux: prefix dispatch for the HTTP server (see mux.h). */
#include <string.h>
#include "net/mux.h"

int gx_mux_mount(gx_mux *x, const char *prefix, gx_mount_fn fn, void *ud)
{
    if (x->n == GX_MUX_MAX) return -1;
    int exact = prefix[0] == '=';
    x->m[x->n].prefix = exact ? prefix + 1 : prefix;
    x->m[x->n].exact = exact;
    x->m[x->n].fn = fn;
    x->m[x->n].ud = ud;
    x->n++;
    return 0;
}

void gx_mux_route(gx_req *req, gx_resp *resp, void *mux)
{
    gx_mux *x = mux;
    x->requests++;
    for (int i = 0; i < x->n; i++) {
        const char *p = x->m[i].prefix;
        int hit = x->m[i].exact ? !strcmp(req->path, p) : !strncmp(req->path, p, strlen(p));
        if (hit && x->m[i].fn(x->m[i].ud, req, resp)) return;
    }
    gx_resp_errorf(resp, 404, "no such path %s (the API is under /api/v1)", req->path);
}
