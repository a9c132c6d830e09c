/* serve: `gpuaas serve`, the daemon's start, main loop and orderly stop.
 * Owns: flags, the data directory (and its lock), the order of start-up (store,
 * users, objects, inventory, recovery, then the listener), signals.
 * Must not: hold request logic (routes.c) or workload logic (workloads.c).
 * Stopping the daemon leaves workload processes running: the next start re-adopts
 * them (docs/operations.md). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>
#include "daemon/root.h"
#include "daemon/serve.h"
#include "gpu/runtime.h"
#include "lib/opts.h"
#include "lib/path.h"
#include "lib/yaml.h"

static const gx_opt serve_opts[] = {
    {"config", 0, "FILE", "server configuration (gpuaas.yaml, see docs/configuration.md)"},
    {"listen", 0, "HOST:PORT", "address to listen on (default 127.0.0.1:8080; port 0 = any free port)"},
    {"data-dir", 0, "DIR", "where the database, logs and run records live (default ./data)"},
    {"rotate-admin-token", 0, NULL, "replace the admin's token with a new one and print it"},
    {"help", 'h', NULL, "this help"},
    {NULL, 0, NULL, NULL},
};
static const gx_opt *const serve_sets[] = {serve_opts, NULL};

static void usage(FILE *f)
{
    fputs("usage: gpuaas serve [--config FILE] [--listen HOST:PORT] [--data-dir DIR] [--rotate-admin-token]\n"
          "\n"
          "Run the gpuaas daemon: the REST API, the queues and the workload processes.\n"
          "\n", f);
    gx_opts_usage(f, serve_sets);
    fputs("\n"
          "On its first start it creates the admin user and prints its token once.\n"
          "It writes DIR/serve.json with the URL it listens on.\n"
          "\n"
          "Example:\n"
          "  gpuaas serve --config examples/demo/gpuaas.yaml\n", f);
}

static int ensure_dir(const char *p, gx_err *err)
{
    if (gx_mkdirs(p, 0700)) return gx_errf(err, 500, "dataDir", "cannot create %s: %s", p, strerror(errno));
    return 0;
}

_Static_assert(GX_DATA_DIR_MAX + sizeof "/run/" + GX_WLKEY_MAX + sizeof "/g-2147483648-p-2147483648.exit" <= PATH_MAX,
               "a pod's files under the data directory must fit PATH_MAX");

/* DIR/leaf into out. The data directory is at most GX_DATA_DIR_MAX bytes (checked at
 * start), so this fails only if a leaf grows past that margin. */
static int data_path(char *out, size_t n, const char *dir, const char *leaf, gx_err *err)
{
    int w = snprintf(out, n, "%s/%s", dir, leaf);
    if (w < 0 || (size_t)w >= n) return gx_errf(err, 500, "dataDir", "%s/%s is longer than %zu bytes", dir, leaf, n - 1);
    return 0;
}

/* One daemon per data directory: a second one would double-start every workload. */
static int lock_data_dir(const char *dir, gx_err *err)
{
    char p[PATH_MAX];
    if (data_path(p, sizeof p, dir, "gpuaas.lock", err)) return -1;
    int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return gx_errf(err, 500, "dataDir", "cannot open %s: %s", p, strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        char pid[32] = "";
        ssize_t n = read(fd, pid, sizeof pid - 1);
        if (n > 0) pid[n] = 0;
        close(fd);
        return gx_errf(err, 409, "dataDir", "another gpuaas serve (pid %s) is using %s", n > 0 ? pid : "?", dir);
    }
    if (ftruncate(fd, 0) == 0) dprintf(fd, "%d\n", (int)getpid());
    return fd; /* kept open (and locked) for the life of the process */
}

static void on_signal(gx_loop *l, int fd, uint32_t ev, void *ud)
{
    (void)ev; (void)ud;
    struct signalfd_siginfo si;
    while (read(fd, &si, sizeof si) == (ssize_t)sizeof si) {
        fprintf(stderr, "gpuaas: %s received, stopping (workloads keep running and are re-adopted at the next start)\n",
                strsignal((int)si.ssi_signo));
        gx_loop_stop(l);
    }
}

static int apply_file(gx_daemon *d, const char *path, gx_err *err)
{
    size_t len;
    char *buf = gx_read_file(path, 4 << 20, &len, err);
    if (!buf) return -1;
    gx_yaml_docs docs;
    int rc = gx_manifest_parse(buf, len, &docs, err);
    free(buf);
    if (rc) return -1;
    json_t *res = NULL;
    rc = gx_d_apply(d, &docs, &res, err);
    gx_yaml_docs_free(&docs);
    json_decref(res);
    return rc;
}

static void describe_inventory(gx_daemon *d)
{
    json_t *nodes = gx_engine_nodes(d->eng);
    size_t i;
    json_t *n;
    int gpus = 0;
    json_array_foreach(nodes, i, n) gpus += (int)json_array_size(json_object_get(n, "gpus"));
    fprintf(stderr, "  inventory: %s, %zu node%s, %d GPU%s\n", d->cfg.inventory, json_array_size(nodes),
            json_array_size(nodes) == 1 ? "" : "s", gpus, gpus == 1 ? "" : "s");
    json_array_foreach(nodes, i, n) {
        fprintf(stderr, "    %s:", json_string_value(json_object_get(n, "name")));
        size_t k;
        json_t *g;
        json_array_foreach(json_object_get(n, "gpus"), k, g)
            fprintf(stderr, " %s", json_string_value(json_object_get(g, "model")) ?: "GPU");
        fputc('\n', stderr);
    }
    json_decref(nodes);
}

static int parse_args(int argc, char **argv, gx_config *cfg, int *rotate)
{
    gx_opt_args a;
    if (gx_opts_parse(serve_sets, argc, argv, &a)) {
        fprintf(stderr, "gpuaas serve: %s\n", a.err);
        usage(stderr);
        gx_opts_free(&a);
        return 2;
    }
    if (gx_opt_has(&a, "help")) { usage(stdout); gx_opts_free(&a); return 1; }
    if (a.npos) {
        fprintf(stderr, "gpuaas serve: unexpected argument '%s'\n", a.pos[0]);
        usage(stderr);
        gx_opts_free(&a);
        return 2;
    }
    const char *config = gx_opt_get(&a, "config"), *listen = gx_opt_get(&a, "listen"), *data = gx_opt_get(&a, "data-dir");
    *rotate = gx_opt_has(&a, "rotate-admin-token");
    gx_opts_free(&a);   /* the values point into argv, which outlives this */
    gx_err e;
    gx_err_clear(&e);
    char buf[1024];
    if (config && gx_config_load(cfg, config, &e)) {
        fprintf(stderr, "gpuaas serve: %s\n", gx_err_str(&e, config, buf, sizeof buf));
        return 2;
    }
    if (listen && gx_config_set_listen(cfg, listen, &e)) {
        fprintf(stderr, "gpuaas serve: --listen: %s\n", e.msg);
        return 2;
    }
    if (data && strlen(data) > GX_DATA_DIR_MAX) {
        fprintf(stderr, "gpuaas serve: --data-dir: the path is longer than %d bytes\n", GX_DATA_DIR_MAX);
        return 2;
    }
    if (data) snprintf(cfg->data_dir, sizeof cfg->data_dir, "%s", data);
    return 0;
}

int gx_serve_main(int argc, char **argv)
{
    static gx_root root;   /* static: large, and alive as long as the process */
    memset(&root, 0, sizeof root);
    gx_daemon *d = &root.d;
    gx_config_defaults(&d->cfg);
    int rotate = 0;
    int rc = parse_args(argc, argv, &d->cfg, &rotate);
    if (rc) { gx_config_free(&d->cfg); return rc == 1 ? 0 : rc; }
    gx_root_env(&d->cfg);
    gx_err e;
    gx_err_clear(&e);
    char buf[1024];
    int status = 1, lockfd = -1, sfd = -1;
    char real[PATH_MAX];
    if (ensure_dir(d->cfg.data_dir, &e)) goto out;
    if (realpath(d->cfg.data_dir, real)) snprintf(d->cfg.data_dir, sizeof d->cfg.data_dir, "%s", real);
    /* the secrets' folder is root's alone (docs/security.md), even when it existed before */
    if (d->cfg.run.sandbox && chmod(d->cfg.data_dir, 0700) < 0)
        fprintf(stderr, "gpuaas serve: WARNING: cannot make %s mode 0700: %s\n", d->cfg.data_dir, strerror(errno));
    if (strlen(d->cfg.data_dir) > GX_DATA_DIR_MAX) {   /* a pod's paths under it must fit (see data_path) */
        gx_errf(&e, 422, "dataDir", "%s is longer than %d bytes", d->cfg.data_dir, GX_DATA_DIR_MAX);
        goto out;
    }
    if ((lockfd = lock_data_dir(d->cfg.data_dir, &e)) < 0) goto out;
    if (data_path(d->log_dir, sizeof d->log_dir, d->cfg.data_dir, "logs", &e) ||
        data_path(d->run_dir, sizeof d->run_dir, d->cfg.data_dir, "run", &e))
        goto out;
    if (ensure_dir(d->log_dir, &e) || ensure_dir(d->run_dir, &e)) goto out;
    d->objects = json_object();
    d->created = json_object();
    if (!(d->loop = gx_loop_new())) { gx_errf(&e, 500, "", "cannot create the event loop"); goto out; }
    if (!(d->store = gx_store_open(d->cfg.data_dir, &e))) goto out;
    if (!(d->auth = gx_auth_open(d->store, d->cfg.data_dir, &e))) goto out;
    char token[GX_TOKEN_MAX] = "";
    gx_engine_opts eo = {.fair_sharing = d->cfg.fair_sharing};
    d->eng = gx_engine_new(&eo);
    if (gx_root_front_doors(&root, &e)) goto out;
    if (gx_d_load_objects(d, &e)) goto out;
    size_t i;
    json_t *x;
    /* the GPU layer (src/gpu): NVML or the simulated nodes, with their sharing resolved */
    gx_gpu_config gc = {d->cfg.inventory, d->cfg.nvml_library, d->cfg.nodes, d->cfg.device_plugin,
                        d->cfg.device_plugin_default, d->cfg.mig_parted, d->cfg.mig_default};
    if (!(d->gpu = gx_gpu_rt_open(&gc, d->cfg.placement_policy, d->eng, stderr, &e))) goto out;
    json_t *inv_nodes = gx_gpu_rt_nodes(d->gpu);
    json_array_foreach(inv_nodes, i, x)
        if (gx_engine_apply(d->eng, x, &e)) {
            gx_err_prefix(&e, "");
            gx_err_wrap(&e, "inventory node %zu", i);
            json_decref(inv_nodes);
            goto out;
        }
    json_decref(inv_nodes);
    json_array_foreach(d->cfg.manifests, i, x)
        if (apply_file(d, json_string_value(x), &e)) {
            fprintf(stderr, "gpuaas serve: %s\n", gx_err_str(&e, json_string_value(x), buf, sizeof buf));
            goto out_quiet;
        }
    char mps_root[PATH_MAX];
    snprintf(mps_root, sizeof mps_root, "%s", d->cfg.mps_root[0] ? d->cfg.mps_root : d->cfg.data_dir);
    if (!d->cfg.mps_root[0]) strncat(mps_root, "/mps", sizeof mps_root - strlen(mps_root) - 1);
    gx_gpu_rt_start(d->gpu, d->cfg.data_dir, mps_root, stderr);
    if (!(d->box = gx_podbox_open(&d->cfg.run, d->cfg.data_dir, d->store, &e))) goto out;
    gx_exec_config xc = {d->loop, d->box, d->cfg.run.sandbox, d->log_dir, d->run_dir, d->gpu, gx_d_exec_hooks(d),
                         d->cfg.run.start_delay_ms, d->cfg.run.cuda_shim};
    d->exec = gx_exec_new(&xc);
    if (gx_d_recover(d, &e)) goto out;

    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    signal(SIGPIPE, SIG_IGN);
    sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    if (sfd < 0 || gx_loop_watch(d->loop, sfd, 0x001, on_signal, d)) { gx_errf(&e, 500, "", "signalfd failed"); goto out; }

    if (gx_root_listen(&root, &e)) goto out;
    /* The admin's token is created (or rotated) only once the daemon can serve: a first
     * start that fails (the port in use) must not store a token it never shows. No
     * request is read before the loop runs, so nobody can knock before the admin exists. */
    if (gx_auth_bootstrap(d->auth, rotate, token, gx_loop_now(d->loop), &e) < 0) goto out;
    d->ready = 1;
    char url[128];
    snprintf(url, sizeof url, "http://%s:%d", d->cfg.listen_host, gx_http_port(d->http));
    char sj[PATH_MAX];
    if (data_path(sj, sizeof sj, d->cfg.data_dir, "serve.json", &e)) goto out;
    FILE *f = fopen(sj, "w");
    if (f) {
        fprintf(f, "{\"url\": \"%s\", \"pid\": %d}\n", url, (int)getpid());
        fclose(f);
    }
    fprintf(stderr, "gpuaas serve: listening on %s\n", url);
    fprintf(stderr, "  portal:    %s/ (sign in with a token or a password)\n", url);
    fprintf(stderr, "  data:      %s (gpuaas.db, logs/)\n", d->cfg.data_dir);
    describe_inventory(d);
    gx_podbox_describe(d->box, stderr);
    fprintf(stderr, "  workloads: %zu recovered\n", gx_exec_count(d->exec));
    if (token[0]) {
        fprintf(stderr, "  admin token (shown once; keep it): %s\n", token);
        fprintf(stderr, "    export GPUAAS_SERVER=%s GPUAAS_TOKEN=%s\n", url, token);
    } else {
        fprintf(stderr, "  admin token: created at the first start (new one: gpuaas serve --rotate-admin-token)\n");
    }
    fflush(stderr);
    gx_loop_set_prepare(d->loop, gx_root_prepare, &root);
    gx_loop_run(d->loop);
    status = 0;
    goto cleanup;
out:
    fprintf(stderr, "gpuaas serve: %s\n", gx_err_str(&e, d->cfg.path[0] && e.line ? d->cfg.path : NULL, buf, sizeof buf));
out_quiet:
    status = 1;
cleanup:
    gx_root_shutdown(&root);
    if (d->http) gx_http_stop(d->http);
    gx_root_free(&root);
    if (sfd >= 0) close(sfd);
    gx_d_free_all(d);
    gx_podbox_free(d->box);
    gx_gpu_rt_close(d->gpu, stderr);
    gx_engine_free(d->eng);
    gx_auth_free(d->auth);
    gx_store_close(d->store);
    gx_loop_free(d->loop);
    json_decref(d->objects);
    json_decref(d->created);
    gx_config_free(&d->cfg);
    if (lockfd >= 0) close(lockfd);
    return status;
}
