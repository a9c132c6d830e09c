/* test_fleet_watch: fleet/kubewatch.c on a real gx_loop against tests/fakes/fake_kube.py
 * over loopback HTTP(S). A real kube-apiserver cannot be installed on these machines, so
 * every test here talks to that fake, which speaks the real protocol (paged lists with
 * resourceVersion, chunked watch events split mid-line, bookmarks, 410 Gone, bearer
 * tokens, TLS client certificates) and lets the test change objects, break watches and
 * compact history through its control API. */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>
#include "fleet/kubewatch.h"
#include "net/loop.h"

static char dir[64];
static pid_t fake = -1;
static int port;
static int tls;   /* the fake serves HTTPS (certificates in dir) */

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/gx-kwatch-XXXXXX");
    cr_assert(mkdtemp(dir));
    tls = 0;
}

static void teardown(void)
{
    if (fake > 0) {
        kill(fake, SIGKILL);
        waitpid(fake, NULL, 0);
        fake = -1;
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd)) {}
}

TestSuite(fleet_watch, .init = setup, .fini = teardown, .timeout = 90);

/* Start the fake with args (NULL-terminated); its first line of output is its port. */
static void start_fake(const char *const *args)
{
    int p[2];
    cr_assert_eq(pipe(p), 0);
    const char *py = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
    const char *argv[24] = {py, "tests/fakes/fake_kube.py"};
    size_t n = 2;
    for (size_t i = 0; args && args[i] && n < 23; i++) argv[n++] = args[i];
    argv[n] = NULL;
    fake = fork();
    cr_assert(fake >= 0);
    if (fake == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);   /* a test killed on timeout leaves no fake behind */
        char log[128];
        snprintf(log, sizeof log, "%s/fake.log", dir);
        int lf = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (lf >= 0) dup2(lf, 2);
        dup2(p[1], 1);
        close(p[0]);
        close(p[1]);
        execvp(py, (char *const *)argv);
        _exit(127);
    }
    close(p[1]);
    char buf[32] = "";
    size_t got = 0;
    struct pollfd pf = {p[0], POLLIN, 0};
    while (got < sizeof buf - 1 && !strchr(buf, '\n') && poll(&pf, 1, 30000) > 0) {
        ssize_t r = read(p[0], buf + got, sizeof buf - 1 - got);
        if (r <= 0) break;
        got += (size_t)r;
        buf[got] = 0;
    }
    close(p[0]);
    port = atoi(buf);
    cr_assert(port > 0, "fake_kube.py did not start (is python3 there?)");
}

static size_t sink(char *p, size_t s, size_t n, void *ud)
{
    char *out = ud;
    size_t len = s * n, have = strlen(out);
    if (have + len < 4096) { memcpy(out + have, p, len); out[have + len] = 0; }
    return len;
}

/* A call to the fake's control API (blocking: the loop is not running meanwhile). */
static void control(const char *what, const char *body, char *out)
{
    char url[128], local[4096] = "";
    if (!out) out = local;
    out[0] = 0;
    snprintf(url, sizeof url, "%s://127.0.0.1:%d/_control/%s", tls ? "https" : "http", port, what);
    CURL *e = curl_easy_init();
    curl_easy_setopt(e, CURLOPT_URL, url);
    if (body) curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, out);
    if (tls) {
        char ca[128];
        snprintf(ca, sizeof ca, "%s/ca.pem", dir);
        curl_easy_setopt(e, CURLOPT_CAINFO, ca);
    }
    CURLcode rc = curl_easy_perform(e);
    long code = 0;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(e);
    cr_assert(rc == CURLE_OK && code == 200, "control %s: %s, HTTP %ld: %s", what, curl_easy_strerror(rc), code, out);
}

static int lists_done(void)
{
    char out[4096];
    control("stats", NULL, out);
    json_t *j = json_loads(out, 0, NULL);
    int n = (int)json_integer_value(json_object_get(j, "lists"));
    json_decref(j);
    return n;
}

static void put(const char *resource, const char *obj)
{
    char b[4096];
    snprintf(b, sizeof b, "{\"resource\":\"%s\",\"object\":%s}", resource, obj);
    control("put", b, NULL);
}

#define WAITING "[{\"type\":\"QuotaReserved\",\"status\":\"False\",\"reason\":\"Pending\",\"message\":" \
                "\"couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor h100, 1 more needed\"}]"
#define ADMITTED "[{\"type\":\"QuotaReserved\",\"status\":\"True\",\"reason\":\"QuotaReserved\"}," \
                 "{\"type\":\"Admitted\",\"status\":\"True\",\"reason\":\"Admitted\",\"message\":\"The workload is admitted\"}]"
#define FINISHED "[{\"type\":\"Admitted\",\"status\":\"True\"},{\"type\":\"Finished\",\"status\":\"True\"," \
                 "\"reason\":\"Succeeded\",\"message\":\"Job finished successfully\"}]"

static void put_wl(const char *name, const char *job, const char *conds)
{
    char b[2048];
    snprintf(b, sizeof b,
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"team-a\",\"ownerReferences\":[{\"kind\":\"Job\",\"name\":\"%s\"}]},"
             "\"spec\":{\"queueName\":\"main\",\"priority\":0},\"status\":{\"conditions\":%s}}",
             name, job, conds);
    put("workloads", b);
}

static void put_job(const char *name, const char *status)
{
    char b[1024];
    snprintf(b, sizeof b, "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"team-a\"},\"spec\":{\"suspend\":false},\"status\":%s}",
             name, status);
    put("jobs", b);
}

/* The kubeconfig for the fake: user lines (YAML under "user:") and cluster extras. */
static const char *kubeconfig(const char *user, const char *cluster_extra)
{
    static char path[128];
    snprintf(path, sizeof path, "%s/kube.yaml", dir);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fprintf(f, "apiVersion: v1\nkind: Config\ncurrent-context: fake\n"
               "clusters:\n- name: fake\n  cluster:\n    server: %s://127.0.0.1:%d\n%s"
               "users:\n- name: u\n  user:\n%s"
               "contexts:\n- name: fake\n  context: {cluster: fake, user: u}\n",
            tls ? "https" : "http", port, cluster_extra ? cluster_extra : "", user);
    fclose(f);
    return path;
}

/* ---- running the loop until something is seen ----------------------------------------- */

typedef int (*pred_fn)(const gx_fleet_status *st, const void *arg);
static struct { pred_fn f; const void *arg; const gx_fleet_status *st; int ok; int64_t deadline; } W;

static void tick(gx_loop *l, void *ud)
{
    (void)ud;
    if (W.f(W.st, W.arg)) { W.ok = 1; gx_loop_stop(l); return; }
    if (gx_loop_mono(l) > W.deadline) { gx_loop_stop(l); return; }
    gx_loop_at(l, gx_loop_mono(l) + 20, tick, NULL);
}

/* Run l until f(st, arg) holds (1) or ms pass (0). */
static int run_until(gx_loop *l, const gx_fleet_status *st, pred_fn f, const void *arg, int64_t ms)
{
    W.f = f; W.arg = arg; W.st = st; W.ok = 0;
    gx_loop_update_time(l);
    W.deadline = gx_loop_mono(l) + ms;
    uint64_t id = gx_loop_at(l, gx_loop_mono(l), tick, NULL);
    gx_loop_run(l);
    gx_loop_cancel(l, id);
    return W.ok;
}

typedef struct { const char *job, *field, *want; } field_is;

/* The view of a job has field == want (want NULL: there is no view). */
static int view_has(const gx_fleet_status *st, const void *arg)
{
    const field_is *q = arg;
    json_t *v = gx_fleet_status_job(st, "c1", "team-a", q->job);
    int ok = !q->want ? !v : v && json_string_value(json_object_get(v, q->field)) &&
                                 !strcmp(json_string_value(json_object_get(v, q->field)), q->want);
    json_decref(v);
    return ok;
}

static void expect(gx_loop *l, const gx_fleet_status *st, const char *job, const char *field, const char *want)
{
    field_is q = {job, field, want};
    if (run_until(l, st, view_has, &q, 20000)) return;
    json_t *v = gx_fleet_status_job(st, "c1", "team-a", job), *c = gx_fleet_status_cluster(st, "c1");
    char *vs = v ? json_dumps(v, 0) : NULL, *cs = c ? json_dumps(c, 0) : NULL;
    cr_assert_fail("job %s: %s never became %s; view %s; cluster %s", job, field, want ? want : "(gone)",
                   vs ? vs : "null", cs ? cs : "null");
}

static int connected_is(const gx_fleet_status *st, const void *arg)
{
    json_t *c = gx_fleet_status_cluster(st, "c1");
    int ok = c && json_is_true(json_object_get(c, "connected")) == (arg != NULL);
    ok = ok && (arg != NULL || json_is_string(json_object_get(c, "lastError")));
    json_decref(c);
    return ok;
}

static gx_kube_watch *watch(gx_loop *l, gx_fleet_status *st, const char *kcfg)
{
    gx_err e;
    gx_kube_watch *w = gx_kube_watch_new(l, "c1", kcfg, NULL, st, &e);
    cr_assert(w, "%s: %s", e.field, e.msg);
    return w;
}

static void seed(void)
{
    put("localqueues", "{\"metadata\":{\"name\":\"main\",\"namespace\":\"team-a\"},\"spec\":{\"clusterQueue\":\"cq\"}}");
    put("clusterqueues", "{\"metadata\":{\"name\":\"cq\"},\"spec\":{}}");
}

/* ---- the tests (each against fake_kube.py: no real kube-apiserver can run here) -------- */

Test(fleet_watch, pending_admitted_running_finished)
{
    const char *args[] = {"--token", "t0ken", NULL};
    start_fake(args);
    seed();
    put_job("train", "{}");
    put_wl("job-train-1", "train", WAITING);
    gx_loop *l = gx_loop_new();
    gx_fleet_status *st = gx_fleet_status_new();
    gx_kube_watch *w = watch(l, st, kubeconfig("    token: t0ken\n", NULL));
    expect(l, st, "train", "reason", "WaitingForQuota");   /* from the list */
    expect(l, st, "train", "clusterQueue", "cq");
    cr_assert(run_until(l, st, connected_is, "yes", 5000), "not connected");
    put_wl("job-train-1", "train", ADMITTED);            /* from the watch */
    expect(l, st, "train", "phase", "Admitted");
    put_job("train", "{\"active\":1}");
    expect(l, st, "train", "phase", "Running");
    put_job("train", "{\"succeeded\":1,\"conditions\":[{\"type\":\"Complete\",\"status\":\"True\"}]}");
    put_wl("job-train-1", "train", FINISHED);
    expect(l, st, "train", "phase", "Succeeded");
    cr_assert_eq(lists_done(), 4, "one list per resource, then only watches");
    json_t *c = gx_fleet_status_cluster(st, "c1");
    cr_assert(json_is_string(json_object_get(c, "lastEventAt")));
    json_decref(c);
    gx_kube_watch_free(w);
    gx_fleet_status_free(st);
    gx_loop_free(l);
}

Test(fleet_watch, a_broken_watch_resumes_without_losing_an_event)
{
    const char *args[] = {"--token", "t", NULL};
    start_fake(args);
    seed();
    put_wl("w1", "j1", WAITING);
    gx_loop *l = gx_loop_new();
    gx_fleet_status *st = gx_fleet_status_new();
    gx_kube_watch *w = watch(l, st, kubeconfig("    token: t\n", NULL));
    expect(l, st, "j1", "phase", "Pending");
    cr_assert(run_until(l, st, connected_is, "yes", 5000));
    /* drop every watch; while the client is away, w1 is admitted and w2 appears */
    control("hold-watches", "{}", NULL);
    control("break-watches", "{}", NULL);
    put_wl("w1", "j1", ADMITTED);
    put_wl("w2", "j2", WAITING);
    cr_assert(run_until(l, st, connected_is, NULL, 10000), "the break was not noticed");
    control("release-watches", "{}", NULL);
    expect(l, st, "j1", "phase", "Admitted");
    expect(l, st, "j2", "phase", "Pending");
    cr_assert(run_until(l, st, connected_is, "yes", 10000));
    cr_assert_eq(lists_done(), 4, "resumed from the last resourceVersion, not relisted");
    gx_kube_watch_free(w);
    gx_fleet_status_free(st);
    gx_loop_free(l);
}

Test(fleet_watch, gone_forces_a_relist_that_drops_what_was_deleted)
{
    const char *args[] = {"--token", "t", NULL};
    start_fake(args);
    seed();
    put_wl("w1", "j1", WAITING);
    put_wl("w2", "j2", WAITING);
    gx_loop *l = gx_loop_new();
    gx_fleet_status *st = gx_fleet_status_new();
    gx_kube_watch *w = watch(l, st, kubeconfig("    token: t\n", NULL));
    expect(l, st, "j2", "phase", "Pending");
    cr_assert(run_until(l, st, connected_is, "yes", 5000));
    control("hold-watches", "{}", NULL);
    control("break-watches", "{}", NULL);
    control("delete", "{\"resource\":\"workloads\",\"namespace\":\"team-a\",\"name\":\"w2\"}", NULL);
    control("compact", "{}", NULL);   /* the DELETED event is gone from history: 410 */
    cr_assert(run_until(l, st, connected_is, NULL, 10000));
    control("release-watches", "{}", NULL);
    expect(l, st, "j2", "phase", NULL);
    expect(l, st, "j1", "phase", "Pending");
    cr_assert_gt(lists_done(), 4, "no relist");
    gx_kube_watch_free(w);
    gx_fleet_status_free(st);
    gx_loop_free(l);
}

Test(fleet_watch, a_wrong_token_is_not_connected_with_the_401_named)
{
    const char *args[] = {"--token", "right", NULL};
    start_fake(args);
    gx_loop *l = gx_loop_new();
    gx_fleet_status *st = gx_fleet_status_new();
    gx_kube_watch *w = watch(l, st, kubeconfig("    token: wrong\n", NULL));
    cr_assert(run_until(l, st, connected_is, NULL, 10000));
    json_t *c = gx_fleet_status_cluster(st, "c1");
    const char *err = json_string_value(json_object_get(c, "lastError"));
    cr_assert(strstr(err, "401") && strstr(err, "Unauthorized"), "%s", err);
    cr_assert_null(strstr(err, "wrong"), "the token is in the error: %s", err);
    json_decref(c);
    gx_kube_watch_free(w);
    gx_fleet_status_free(st);
    gx_loop_free(l);
}

Test(fleet_watch, kueue_v1beta1_when_v1beta2_is_not_served_and_watches_that_time_out)
{
    const char *args[] = {"--kueue-versions", "v1beta1", "--watch-timeout", "1", NULL};
    start_fake(args);
    seed();
    gx_loop *l = gx_loop_new();
    gx_fleet_status *st = gx_fleet_status_new();
    gx_kube_watch *w = watch(l, st, kubeconfig("    {}\n", NULL));
    cr_assert(run_until(l, st, connected_is, "yes", 10000));
    usleep(1500 * 1000);   /* the first watches have ended normally meanwhile */
    put_wl("w1", "j1", WAITING);
    expect(l, st, "j1", "reason", "WaitingForQuota");
    cr_assert_eq(lists_done(), 4, "a watch that timed out is watched again, not relisted");
    gx_kube_watch_free(w);
    gx_fleet_status_free(st);
    gx_loop_free(l);
}

Test(fleet_watch, tls_with_a_client_certificate)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "cd %s && K='-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes' && "
             "openssl req -x509 $K -keyout ca.key -out ca.pem -days 2 -subj /CN=fake-ca && "
             "openssl req $K -keyout srv.key -out srv.csr -subj /CN=127.0.0.1 && "
             "echo subjectAltName=IP:127.0.0.1 > ext && "
             "openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem -days 2 -extfile ext && "
             "openssl req $K -keyout cli.key -out cli.csr -subj /CN=gpuaas && "
             "openssl x509 -req -in cli.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out cli.pem -days 2 && "
             "openssl base64 -A -in ca.pem > ca.b64 && openssl base64 -A -in cli.pem > cli.b64 && "
             "openssl base64 -A -in cli.key > key.b64",
             dir);
    cr_assert_eq(system(cmd), 0, "openssl could not make the test certificates");
    char cert[128], key[128], ca[128], user[8400], extra[4200];
    snprintf(cert, sizeof cert, "%s/srv.pem", dir);
    snprintf(key, sizeof key, "%s/srv.key", dir);
    snprintf(ca, sizeof ca, "%s/ca.pem", dir);
    const char *args[] = {"--tls-cert", cert, "--tls-key", key, "--client-ca", ca, NULL};
    start_fake(args);
    tls = 1;
    seed();
    put_wl("w1", "j1", WAITING);
    /* the CA and the client certificate as *-data (libcurl blobs) */
    char b64[3][4096];
    static const char *const names[] = {"ca.b64", "cli.b64", "key.b64"};
    for (int i = 0; i < 3; i++) {
        char p[128];
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        FILE *f = fopen(p, "r");
        cr_assert(f);
        size_t n = fread(b64[i], 1, sizeof b64[i] - 1, f);
        b64[i][n] = 0;
        fclose(f);
    }
    snprintf(extra, sizeof extra, "    certificate-authority-data: %s\n", b64[0]);
    snprintf(user, sizeof user, "    client-certificate-data: %s\n    client-key-data: %s\n", b64[1], b64[2]);
    gx_loop *l = gx_loop_new();
    gx_fleet_status *st = gx_fleet_status_new();
    gx_kube_watch *w = watch(l, st, kubeconfig(user, extra));
    expect(l, st, "j1", "reason", "WaitingForQuota");
    put_wl("w1", "j1", ADMITTED);
    expect(l, st, "j1", "phase", "Admitted");
    gx_kube_watch_free(w);
    gx_fleet_status_free(st);

    /* without the client certificate the fake answers 401 */
    st = gx_fleet_status_new();
    w = watch(l, st, kubeconfig("    {}\n", extra));
    cr_assert(run_until(l, st, connected_is, NULL, 10000));
    json_t *c = gx_fleet_status_cluster(st, "c1");
    cr_assert(strstr(json_string_value(json_object_get(c, "lastError")), "401"));
    json_decref(c);
    gx_kube_watch_free(w);
    gx_fleet_status_free(st);
    gx_loop_free(l);
}
