/* root: the composition root (see root.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>
#include <curl/curl.h>
#include "daemon/root.h"
#include "gpu/runtime.h"
#include "ops/idle.h"

#define STREAM_POLL_MS 250

/* Every gateway stream holds two descriptors (client, upstream): 1,000 streams need
 * more than the usual soft limit of 1,024. */
static void raise_nofile(void)
{
    struct rlimit rl;
    if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max && rl.rlim_cur < 65536) {
        rl.rlim_cur = rl.rlim_max < 65536 ? rl.rlim_max : 65536;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

static int64_t env_ms(const char *name)
{
    const char *v = getenv(name);
    return v && atoi(v) > 0 ? atoi(v) : 0;
}

/* The gateway's knobs for tests and A/B runs: GPUAAS_GATEWAY_HEARTBEAT_MS, _SCRAPE_MS,
 * _UPSTREAM=curl, _KEY_CAPS=ACTIVE,PER_USER,ENDED_HELD (docs/development.md). */
static void gateway_env(gx_maas_env *m)
{
    m->heartbeat_ms = env_ms("GPUAAS_GATEWAY_HEARTBEAT_MS");
    m->scrape_ms = env_ms("GPUAAS_GATEWAY_SCRAPE_MS");
    const char *up = getenv("GPUAAS_GATEWAY_UPSTREAM");
    m->upstream_curl_only = up && !strcmp(up, "curl");
    const char *caps = getenv("GPUAAS_GATEWAY_KEY_CAPS");
    if (caps && sscanf(caps, "%ld,%ld,%ld", &m->key_caps[0], &m->key_caps[1], &m->key_caps[2]) != 3)
        fprintf(stderr, "gpuaas serve: GPUAAS_GATEWAY_KEY_CAPS=%s is not ACTIVE,PER_USER,ENDED_HELD; ignored\n", caps);
}

void gx_root_env(gx_config *cfg)
{
    /* crash tests (tests/integration/crash_consistency.sh) widen the start-to-record window */
    cfg->run.start_delay_ms = (int)env_ms("GPUAAS_TEST_START_DELAY_MS");
    /* the sandbox's bwrap, with no fallback when it is not there: tests name a fake one,
     * or a missing one to see the daemon start without a sandbox */
    const char *bwrap = getenv("GPUAAS_BWRAP");
    if (!bwrap) return;
    if (strlen(bwrap) >= sizeof cfg->run.bwrap) bwrap = "(too long)";   /* not absolute: none, as a cut path must be */
    snprintf(cfg->run.bwrap, sizeof cfg->run.bwrap, "%s", bwrap);
}

/* The portal asks the gateway through these (portal.h: gx_portal_env). */
static int tier_open(void *ud, const char *tier, const gx_user *u, const char *ns)
{
    return gx_maas_tier_open(ud, tier, u, ns);
}
static json_t *model_status(void *ud, const char *name) { return gx_maas_model_status(ud, name); }
static const gx_user *portal_session(void *ud, gx_req *req) { return gx_portal_api_user(ud, req); }
static void maas_resource(void *ud, const gx_user *u, gx_req *req, gx_resp *resp, char **seg, int nseg)
{
    gx_maas_api(ud, u, req, resp, seg, nseg);
}

static int register_kinds(gx_daemon *d, const gx_kind *k, size_t n, gx_err *err)
{
    for (size_t i = 0; i < n; i++)
        if (gx_d_register_kind(d, &k[i])) return gx_errf(err, 500, "", "cannot register kind %s", k[i].kind);
    return 0;
}

int gx_root_front_doors(gx_root *r, gx_err *err)
{
    gx_daemon *d = &r->d;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    raise_nofile();
    /* {bindir} in a model server's command: the folder of this binary */
    static char bindir[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", bindir, sizeof bindir - 1);
    bindir[n > 0 ? n : 0] = 0;
    char *slash = strrchr(bindir, '/');
    if (slash) *slash = 0;
    gx_maas_env me = {.loop = d->loop, .store = d->store, .ops = d, .data_dir = d->cfg.data_dir, .bin_dir = bindir};
    gateway_env(&me);
    if (!(r->maas = gx_maas_new(&me, err))) return -1;
    gx_portal_env pe = {.loop = d->loop, .store = d->store, .auth = d->auth, .ops = d,
                        .tier_open = tier_open, .model_status = model_status, .models_ud = r->maas};
    if (!(r->portal = gx_portal_new(&pe))) return gx_errf(err, 500, "", "cannot start the portal");
    gx_api_env ae = {.ops = d, .loop = d->loop, .auth = d->auth, .session = portal_session, .session_ud = r->portal};
    r->api = gx_api_new(&ae);
    static const char *const gateway_collections[] = {"keys", "models", "tiers", "usage"};
    for (size_t i = 0; i < 4; i++) gx_api_mount(r->api, gateway_collections[i], maas_resource, r->maas);
    /* the order of kinds is the order of application: queues before what names them */
    gx_kind k[2];
    gx_d_register_engine_kinds(d);
    if (register_kinds(d, k, gx_maas_kinds(r->maas, k), err)) return -1;
    if (register_kinds(d, k, gx_portal_kinds(r->portal, k), err)) return -1;
    /* fleet mode (docs/fleet.md): the Fleet kind; GPUAAS_FLEET_RETAIN_MS shortens how long
     * a finished request stays in git, for tests (docs/development.md) */
    gx_d_fleet_register(d, env_ms("GPUAAS_FLEET_RETAIN_MS"));
    gx_d_idle_register(d);   /* IdlePolicy (ops/idle.c) and its /metrics lines */
    gx_hooks h = gx_maas_hooks(r->maas);
    gx_d_register_hooks(d, &h);
    h = gx_portal_hooks(r->portal);
    gx_d_register_hooks(d, &h);
    return 0;
}

static int mount_v1(void *ud, gx_req *req, gx_resp *resp)
{
    gx_maas_v1(ud, req, resp);
    return 1;
}
static int mount_portal(void *ud, gx_req *req, gx_resp *resp) { return gx_portal_route(ud, req, resp); }

/* The HTTP server's barrier reads the store's commit count... */
static uint64_t commits(void *ud) { return gx_store_committed(ud); }

/* ...and the store's fsync thread says when they are on the disk: held answers go. */
static void on_synced(gx_loop *l, int fd, uint32_t ev, void *ud)
{
    (void)l; (void)fd; (void)ev;
    gx_daemon *d = ud;
    gx_store_sync_drain(d->store);
    gx_http_release(d->http, gx_store_synced(d->store));
}

int gx_root_listen(gx_root *r, gx_err *err)
{
    gx_daemon *d = &r->d;
    /* first match wins: the probes, the OpenAI API, the REST API, then the portal's pages */
    gx_mux_mount(&r->mux, "=/healthz", gx_api_probes, r->api);
    gx_mux_mount(&r->mux, "=/health", gx_api_probes, r->api);
    gx_mux_mount(&r->mux, "=/readyz", gx_api_probes, r->api);
    gx_mux_mount(&r->mux, "=/metrics", gx_api_probes, r->api);
    gx_mux_mount(&r->mux, "/v1/", mount_v1, r->maas);
    gx_mux_mount(&r->mux, "/api/", gx_api_route, r->api);
    gx_mux_mount(&r->mux, "/", mount_portal, r->portal);
    d->mux = &r->mux;
    gx_http_limits lim = {.body_bytes = d->cfg.max_body_bytes, .conns = (int)d->cfg.max_conns,
                          .conns_per_addr = (int)d->cfg.max_conns_per_addr};
    if (!(d->http = gx_http_start(d->loop, d->cfg.listen_host, d->cfg.listen_port, &lim, gx_mux_route, &r->mux, err)))
        return -1;
    /* group commit (store/sync.c): an answer after a change waits for its fsync */
    int sfd = gx_store_sync_fd(d->store);
    if (sfd >= 0 && !gx_loop_watch(d->loop, sfd, EPOLLIN, on_synced, d))
        gx_http_set_barrier(d->http, commits, d->store);
    gx_maas_attach_http(r->maas, d->http);
    return 0;
}

int64_t gx_root_prepare(gx_loop *l, void *ud)
{
    gx_root *r = ud;
    gx_daemon *d = &r->d;
    int64_t sleep = gx_d_tick(d);
    int64_t gs = gx_gpu_rt_tick(d->gpu, gx_loop_now(l));   /* GPU samples (utilisation history) */
    if (gs >= 0 && (sleep < 0 || gs < sleep)) sleep = gs;
    gx_http_run(d->http);
    /* the gateway: transfers done resume their requests (answered at once); http_run
     * does the cleanup after them; answers may start transfers, whose timer the
     * second tick arms */
    gx_maas_tick(r->maas);
    gx_http_run(d->http);
    int64_t g = gx_maas_tick(r->maas);
    if (g >= 0 && (sleep < 0 || g < sleep)) sleep = g;
    int64_t t = gx_http_timeout(d->http);
    if (t >= 0 && (sleep < 0 || t < sleep)) sleep = t;
    /* Followers of logs: let their readers look again every STREAM_POLL_MS. */
    if (gx_http_stream_count(d->http) > 0) {
        int64_t now = gx_loop_mono(l);
        if (now - r->streams_polled_at >= STREAM_POLL_MS) {
            r->streams_polled_at = now;
            gx_http_wake_streams(d->http);
            gx_http_run(d->http);
        }
        if (sleep < 0 || sleep > STREAM_POLL_MS) sleep = STREAM_POLL_MS;
    }
    return sleep;
}

/* A stop sends the answers the barrier holds once their changes are on the disk
 * (bounded: a disk that fails leaves them unsent, as a crash would). */
void gx_root_shutdown(gx_root *r)
{
    gx_daemon *d = &r->d;
    int sfd = gx_store_sync_fd(d->store);
    if (d->http && sfd >= 0) {
        for (int i = 0; i < 50 && gx_http_held(d->http) > 0; i++) {
            struct pollfd p = {.fd = sfd, .events = POLLIN};
            poll(&p, 1, 100);
            gx_store_sync_drain(d->store);
            gx_http_release(d->http, gx_store_synced(d->store));
        }
        gx_http_run(d->http);
        gx_loop_unwatch(d->loop, sfd);
    }
    gx_maas_shutdown(r->maas);
}

void gx_root_free(gx_root *r)
{
    int curl = r->maas != NULL;
    gx_maas_free(r->maas);
    if (curl) curl_global_cleanup();
    gx_portal_free(r->portal);
    gx_api_free(r->api);
    r->maas = NULL;
    r->portal = NULL;
    r->api = NULL;
}
