/* cli: dispatch of the client commands, their help texts, and what they share
 * (server and token resolution, -o, namespaces of references).
 * Owns: the table of commands: name, synopsis, options, examples. Help is printed
 * from the same tables the parser reads, so the two cannot disagree.
 * Must not: call an endpoint itself (the cmd_*.c files do) or exit(). */
#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <curl/curl.h>
#include "cli/cli.h"
#include "cli/cmd.h"
#include "cli/cmd_gpus.h"
#include "cli/cmd_report.h"
#include "cli/fmt.h"

static const gx_opt common_opts[] = {
    {"server", 0, "URL", "daemon address (default: $GPUAAS_SERVER, else " GX_CLI_DEFAULT_SERVER ")"},
    {"token", 0, "TOKEN", "API token (default: $GPUAAS_TOKEN)"},
    {"token-file", 0, "FILE", "read the API token from the first line of FILE"},
    {"help", 'h', NULL, "show this help and exit"},
    {0},
};
static const gx_opt output_opts[] = {
    {"output", 'o', "FORMAT", "table (default), wide, json or yaml"},
    {0},
};

static const gx_opt files_opts[] = {
    {"filename", 'f', "FILE", "manifest file (YAML or JSON, one or more documents); - reads stdin; repeat for more files"},
    {0},
};

static const gx_opt submit_opts[] = {
    {"filename", 'f', "FILE", "manifest file (YAML or JSON, one or more documents); - reads stdin; repeat for more files"},
    {"cluster", 0, "NAME", "send the Jobs to cluster NAME of the Fleet (gpuaas clusters) instead of running them here"},
    {0},
};
static const gx_opt ls_opts[] = {
    {"namespace", 'n', "NS", "only workloads of namespace NS (default: $GPUAAS_NAMESPACE, else all you can see)"},
    {"all-namespaces", 'A', NULL, "every namespace you can see (ignores $GPUAAS_NAMESPACE)"},
    {"state", 0, "S", "only this state: Pending, Admitted, Finished, Deactivated, or phase Running, Succeeded, Failed, Terminating"},
    {"queue", 0, "Q", "only workloads of LocalQueue Q"},
    {"cluster-queue", 0, "CQ", "only workloads of ClusterQueue CQ"},
    {0},
};
static const gx_opt ns_opts[] = {
    {"namespace", 'n', "NS", "namespace of a NAME given without NS/ (default: $GPUAAS_NAMESPACE, else your only namespace)"},
    {0},
};
static const gx_opt logs_opts[] = {
    {"namespace", 'n', "NS", "namespace of a NAME given without NS/ (default: $GPUAAS_NAMESPACE, else your only namespace)"},
    {"follow", 'f', NULL, "keep streaming new output until the workload ends (Ctrl-C stops)"},
    {"pod", 0, "N", "only pod N (0-based index)"},
    {0},
};
static const gx_opt report_opts[] = {   /* its own -o: csv is the report's alone (cmd_report.c) */
    {"since", 0, "D", "the window: a duration back from now (7d, 36h) or an RFC 3339 time (default 7d)"},
    {"by", 0, "KEY", "one row per namespace or per class (GPU model); default: per namespace and class"},
    {"namespace", 'n', "NS", "only namespace NS (a user sees only their own namespaces anyway)"},
    {"output", 'o', "FORMAT", "table (default), json or csv"},
    {0},
};
static const gx_opt queues_opts[] = {
    {"namespace", 'n', "NS", "only LocalQueues of namespace NS"},
    {0},
};
static const gx_opt get_opts[] = {
    {"namespace", 'n', "NS", "namespace (localqueues, workloads)"},
    {0},
};
static const gx_opt users_create_opts[] = {
    {"namespaces", 0, "A,B", "namespaces the user may use (comma-separated)"},
    {"admin", 0, NULL, "make the user an administrator (all namespaces, apply, user management)"},
    {0},
};
static const gx_opt no_opts[] = {{0}};
static const gx_opt reserve_opts[] = {   /* reserve (cmd_reserve.c) */
    {"namespace", 'n', "NS", "the namespace that owns the booking (default: $GPUAAS_NAMESPACE)"},
    {"cluster-queue", 0, "CQ", "the ClusterQueue whose workloads use the booking"},
    {"flavor", 0, "F", "the ResourceFlavor of the GPUs booked"},
    {"gpus", 0, "N", "how many GPUs (nvidia.com/gpu)"},
    {"start", 0, "T", "the window's start, RFC 3339 (2026-12-07T09:00:00+01:00)"},
    {"end", 0, "T", "the window's end, RFC 3339"},
    {"weekly", 0, "DAYS", "repeat weekly on these days (Mon,Wed), at the same local times"},
    {"tz", 0, "ZONE", "the time zone of --weekly (Europe/Paris; default UTC)"},
    {"lead-time", 0, "D", "from start - D only jobs that end by start may use the booked GPUs (10m)"},
    {"no-show", 0, "D", "release an occurrence nothing uses D after its start (15m)"},
    {0},
};
static const gx_opt reservations_opts[] = {
    {"namespace", 'n', "NS", "only bookings owned by namespace NS"},
    {"from", 0, "T", "the window's start, RFC 3339 (default now)"},
    {"to", 0, "T", "the window's end, RFC 3339 (default from + 7 days)"},
    {0},
};
static const gx_opt verdict_opts[] = {   /* approve, reject */
    {"namespace", 'n', "NS", "namespace of a NAME given without NS/ (default: $GPUAAS_NAMESPACE, else your only namespace)"},
    {"message", 'm', "TEXT", "why (required for reject: the workload's user sees it)"},
    {"check", 0, "NAME", "the admission check to set (default: every gpuaas.dev/approval check of the workload)"},
    {0},
};
static const gx_opt drain_opts[] = {
    {"namespace", 'n', "NS", "only the workloads of namespace NS (without it: every namespace, admin only)"},
    {"timeout", 0, "DURATION", "how long to wait for everything to stop, such as 30s, 5m (default 5m)"},
    {0},
};
static const gx_opt mig_apply_opts[] = {
    {"node", 0, "N", "the node (default: the only one)"},
    {"filename", 'f', "FILE", "a mig-parted file to take CONFIG from (default: the daemon's inventory.migConfig)"},
    {0},
};
/* the gateway's commands (cmd_keys.c) */
int gx_cli_run_keys_create(gx_cli_ctx *c);
int gx_cli_run_keys_ls(gx_cli_ctx *c);
int gx_cli_run_keys_revoke(gx_cli_ctx *c);
int gx_cli_run_models(gx_cli_ctx *c);
int gx_cli_run_usage(gx_cli_ctx *c);
static const gx_opt keys_create_opts[] = {
    {"tier", 0, "TIER", "the tier whose limits the key gets (required)"},
    {"expires", 0, "DURATION", "lifetime such as 30d, 12h (default and maximum: the tier's maxKeyLifetime)"},
    {"namespace", 'n', "NS", "namespace the key's usage is billed to (default: your first namespace)"},
    {0},
};
static const gx_opt keys_ls_opts[] = {
    {"all", 0, NULL, "every user's keys (admin)"},
    {0},
};
static const gx_opt usage_opts[] = {
    {"group-by", 0, "G", "key (default), user, namespace, model or tier"},
    {"since", 0, "DURATION", "how far back, such as 1h, 7d (default 24h)"},
    {"user", 0, "NAME", "only this user's usage (admin; a user always sees their own)"},
    {0},
};

#define REF_DETAILS "A workload is named NS/NAME, or NAME with -n NS.\n"

static const gx_cli_cmd commands[] = {
    {"apply", "-f FILE [-f FILE...]", "create or update Kueue objects (queues, flavors, cohorts, priority classes, nodes) from files",
     /* the kinds: tests/integration/first_hour.sh checks this list against the daemon's */
     "Kinds: ResourceFlavor, Cohort, ClusterQueue, LocalQueue, WorkloadPriorityClass,\n"
     "AdmissionCheck (Kueue's; a v1 List of them too, as `get -o yaml` prints),\n"
     "Node (the simulated inventory), Reservation (a booking of a ClusterQueue's quota),\n"
     "Tier and Model (the gateway's), Template and PortalConfig (the portal's), IdlePolicy\n"
     "(idle GPUs: docs/queueing.md), Fleet (the clusters of fleet mode: docs/fleet.md).\n"
     "Sends the documents to POST /api/v1/apply. Several YAML files go in one request, so\n"
     "either all of them are applied or none; when one of them is JSON, each file is sent\n"
     "on its own, in order. Admin only. A file may be at most 4 MiB.\n",
     "gpuaas apply -f examples/demo/queues.yaml\ncat flavors.yaml | gpuaas apply -f -\n",
     files_opts, 1, 0, 0, gx_cli_run_apply},
    {"submit", "-f FILE [-f FILE...] [--cluster NAME]", "submit batch/v1 Jobs or Kueue Workloads to their queues",
     "Sends the documents to POST /api/v1/workloads and prints where each one stands.\n"
     "The LocalQueue is the Job's kueue.x-k8s.io/queue-name label. Files as for apply.\n"
     "With --cluster, Jobs go to that cluster of the Fleet: committed to its git folder (docs/fleet.md).\n",
     "gpuaas submit -f examples/demo/job.yaml\ngpuaas submit -f job.yaml --cluster gpu-b\n", submit_opts, 1, 0, 0,
     gx_cli_run_submit},
    {"clusters", "", "list the Fleet's clusters you may send work to, with their requests and status read-back",
     NULL, "gpuaas clusters\ngpuaas clusters -o json\n", no_opts, 1, 0, 0, gx_cli_run_clusters},
    {"ls", "[-n NS | -A] [--state S] [--queue Q]", "list workloads with their state, queue position and why they wait",
     "Columns: NAMESPACE NAME QUEUE PRIORITY STATE AGE GPUS POSITION REASON. STATE is the\n"
     "phase (Running, Succeeded, ...); REASON says why a pending workload waits.\n"
     "-o wide adds CLUSTERQUEUE and PRIORITYCLASS and does not shorten REASON.\n",
     "gpuaas ls\ngpuaas ls -n team-a --state Pending\ngpuaas ls -A --queue main -o json\n",
     ls_opts, 1, 0, 0, gx_cli_run_ls},
    {"show", "NS/NAME", "describe one workload: queue, state, pods and devices, conditions",
     REF_DETAILS, "gpuaas show team-a/train-1\ngpuaas show train-1 -n team-a -o yaml\n",
     ns_opts, 1, 1, 1, gx_cli_run_show},
    {"logs", "NS/NAME", "print a workload's output (all pods, or one with --pod)",
     REF_DETAILS "With -f the output is streamed as it is written until the workload ends.\n",
     "gpuaas logs team-a/train-1\ngpuaas logs -f --pod 0 team-a/train-1\n",
     logs_opts, 0, 1, 1, gx_cli_run_logs},
    {"cancel", "NS/NAME [NS/NAME...]", "cancel workloads (they become Deactivated)",
     REF_DETAILS "Every workload named is cancelled even when one fails; the exit status is 1 if any failed.\n",
     "gpuaas cancel team-a/train-1\ngpuaas cancel -n team-a train-1 train-2\n",
     ns_opts, 1, 1, -1, gx_cli_run_cancel},
    {"approve", "NS/NAME [--message TEXT] [--check NAME]", "approve a workload waiting for an admission check (admin)",
     REF_DETAILS "A ClusterQueue with an AdmissionCheck of controller gpuaas.dev/approval holds a workload's\n"
     "quota and keeps it Pending until an admin approves it; it then starts at the next pass.\n"
     "--check sets one named check Ready instead, also one whose controller gpuaas does not run.\n",
     "gpuaas approve team-a/train-1\ngpuaas approve team-a/train-1 --check provisioning\n",
     verdict_opts, 1, 1, 1, gx_cli_run_approve},
    {"reject", "NS/NAME --message TEXT [--check NAME]", "reject a workload waiting for an admission check (admin)",
     REF_DETAILS "The check becomes Rejected and the workload Deactivated (Evicted, reason Deactivated) with\n"
     "the message as its reason; it is not restarted.\n",
     "gpuaas reject team-a/train-1 --message \"no budget left this month\"\n",
     verdict_opts, 1, 1, 1, gx_cli_run_reject},
    {"delete", "NS/NAME [NS/NAME...]", "delete finished workloads from the record (their logs too)",
     REF_DETAILS "Only a finished or cancelled workload can be deleted (cancel a running one first). This\n"
     "makes room under limits.maxWorkloads. Each is tried; the exit status is 1 if any failed.\n",
     "gpuaas delete team-a/train-1\ngpuaas delete -n team-a train-1 train-2\n",
     ns_opts, 0, 1, -1, gx_cli_run_delete},
    {"drain", "[-n NS] [--timeout 5m]", "cancel every workload (or a namespace's) and wait until none runs",
     "Cancels every pending and running workload, then waits until they have stopped\n"
     "(SIGTERM, then SIGKILL after each one's grace period), cancelling what is submitted\n"
     "meanwhile. Without -n it drains every namespace (admin only). Stopping the daemon\n"
     "does not stop running pods (they are re-adopted at the next start): drain first to\n"
     "stop everything. Exit status 1 when something still runs at the timeout.\n",
     "gpuaas drain\ngpuaas drain -n team-a --timeout 30s\n", drain_opts, 0, 0, 0, gx_cli_run_drain},
    {"queues", "", "show ClusterQueues (quota and usage per flavor/resource) and LocalQueues",
     "-o wide adds the borrowing and lending limits and whether the queue is active.\n",
     "gpuaas queues\ngpuaas queues -n team-a -o yaml\n", queues_opts, 1, 0, 0, gx_cli_run_queues},
    {"gpus", "", "list the GPUs of every node and the workloads using them",
     "Columns: NODE INDEX MODEL MEMORY MODE SLICES UTIL MEM-USED WORKLOADS; -o wide adds UUID.\n"
     "gpuaas gpus mig apply CONFIG re-lays out a node's MIG devices (admin; see its --help).\n",
     "gpuaas gpus\ngpuaas gpus -o wide\ngpuaas gpus -o json\n", no_opts, 1, 0, 0, gx_cli_run_gpus},
    {"report", "[--since 7d] [--by namespace|class] [-o table|json|csv]",
     "GPU-hours allocated and busy, reclaimed, booked and unused, queue waits (per namespace and class)",
     "Over [since, now). Admins see every namespace, users their own. Hours have two decimals;\n"
     "-o json and -o csv add the exact GPU-milliseconds. See docs/operations.md, \"Utilisation reports\".\n",
     "gpuaas report\ngpuaas report --since 30d --by namespace\ngpuaas report --since 2026-12-01T00:00:00Z -o csv\n",
     report_opts, 0, 0, 0, gx_cli_run_report},
    {"reserve", "NAME -n NS --cluster-queue CQ --flavor F --gpus N --start T --end T [--weekly Mon,Wed --tz ZONE]",
     "book GPUs of a ClusterQueue for a time window (kind Reservation)",
     "A user books for their own namespaces, on a ClusterQueue one of its LocalQueues points at.\n"
     "A booking that does not fit is refused (exit 1) with the bookings it conflicts with and\n"
     "the nearest free windows of the same length; booking limits are the admins' (see\n"
     "docs/configuration.md). The same name books again in place. See docs/queueing.md, \"Reservations\".\n",
     "gpuaas reserve demo -n team-a --cluster-queue team-a --flavor h100 --gpus 2 \\\n"
     "    --start 2026-12-07T09:00:00+01:00 --end 2026-12-07T17:00:00+01:00\n"
     "gpuaas reserve standup -n team-a --cluster-queue team-a --flavor h100 --gpus 1 --start 2026-12-07T09:00:00+01:00 \\\n"
     "    --end 2026-12-07T10:00:00+01:00 --weekly Mon,Wed --tz Europe/Paris --no-show 15m\n",
     reserve_opts, 1, 1, 1, gx_cli_run_reserve},
    {"reservations", "[-n NS] [--from T --to T]", "list the bookings of a window (default the next 7 days)",
     "Columns: NAMESPACE NAME QUEUE GPUS NEXT-START NEXT-END PHASE. Every booking's window is\n"
     "shown; another namespace's booking shows - for its namespace and name. Times are UTC.\n",
     "gpuaas reservations\ngpuaas reservations -n team-a --from 2026-12-07T00:00:00Z --to 2026-12-14T00:00:00Z -o json\n",
     reservations_opts, 1, 0, 0, gx_cli_run_reservations},
    {"unreserve", "NS/NAME", "cancel a booking (its namespace's members or an admin)", NULL,
     "gpuaas unreserve team-a/demo\n", no_opts, 0, 1, 1, gx_cli_run_unreserve},
    {"gpus mig apply", "CONFIG [--node N] [-f FILE]", "re-lay out a node's MIG devices from a mig-parted config (admin)",
     "CONFIG names an entry of mig-parted's mig-configs: of the daemon's inventory.migConfig file,\n"
     "or of FILE when -f is given. Every GPU of the node must be idle; a layout that does not\n"
     "fit is refused with the reason and changes nothing. On real GPUs this destroys and\n"
     "creates MIG instances through NVML (root, idle GPUs); simulated GPUs take the new layout\n"
     "until the next start.\n",
     "gpuaas gpus mig apply all-1g.10gb\ngpuaas gpus mig apply all-balanced --node gpu-1 -f mig-parted.yaml\n",
     mig_apply_opts, 1, 1, 1, gx_cli_run_gpus_mig_apply},
    {"get", "KIND [NAME]", "list objects of one kind, or one object by name",
     "KIND is clusterqueues (cq), localqueues (lq), resourceflavors (rf), cohorts (co),\n"
     "workloadpriorityclasses (wpc), admissionchecks (ac), workloads (wl), nodes (no), users, the portal's\n"
     "templates (tpl), or the gateway's tiers and models; singular forms work too.\n"
     "A LocalQueue or workload NAME may be written NS/NAME.\n",
     "gpuaas get cq\ngpuaas get rf h100 -o yaml\ngpuaas get lq -n team-a\ngpuaas get tiers\ngpuaas get templates\n",
     get_opts, 1, 1, 2, gx_cli_run_get},
    {"users create", "NAME --namespaces A,B [--admin]", "create a user and print its token (admin)",
     "The token is printed once and cannot be shown again.\n",
     "gpuaas users create alice --namespaces team-a,team-b\n",
     users_create_opts, 1, 1, 1, gx_cli_run_users_create},
    {"users ls", "", "list users (admin)", NULL, "gpuaas users ls\n", no_opts, 1, 0, 0, gx_cli_run_users_ls},
    {"users delete", "NAME", "delete a user; its tokens stop working at once (admin)", NULL,
     "gpuaas users delete alice\n", no_opts, 1, 1, 1, gx_cli_run_users_delete},
    {"keys create", "NAME --tier TIER [--expires 30d]", "create an API key for the OpenAI-compatible gateway and print it once",
     "The key (gpa_<id>_<secret>) is printed once and cannot be shown again. Use it with any\n"
     "OpenAI client: base URL <server>/v1, API key the printed key.\n",
     "gpuaas keys create laptop --tier free --expires 7d\n", keys_create_opts, 1, 1, 1, gx_cli_run_keys_create},
    {"keys ls", "[--all]", "list your API keys (id, tier, state, expiry)", NULL, "gpuaas keys ls\n",
     keys_ls_opts, 1, 0, 0, gx_cli_run_keys_ls},
    {"keys revoke", "ID [ID...]", "revoke API keys; they stop working on the very next request", NULL,
     "gpuaas keys revoke 3f9a0c1b2d4e\n", no_opts, 1, 1, -1, gx_cli_run_keys_revoke},
    {"models", "", "list the gateway's models: served names, tiers, backend, readiness", NULL,
     "gpuaas models\ngpuaas models -o json\n", no_opts, 1, 0, 0, gx_cli_run_models},
    {"usage", "[--group-by key|user|namespace|model|tier] [--since 24h] [--user NAME]",
     "show tokens and requests used through the gateway",
     "A user sees their own usage; an admin sees everyone's, or one user's with --user.\n",
     "gpuaas usage\ngpuaas usage --group-by model --since 7d\ngpuaas usage --user alice --group-by model\n",
     usage_opts, 1, 0, 0, gx_cli_run_usage},
    {"whoami", "", "show who the token belongs to and what it may do", NULL,
     "gpuaas whoami\nGPUAAS_TOKEN=gpt_... gpuaas whoami -o json\n", no_opts, 1, 0, 0, gx_cli_run_whoami},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void sets_of(const gx_cli_cmd *cmd, const gx_opt *sets[4])
{
    int n = 0;
    sets[n++] = cmd->opts;
    if (cmd->output) sets[n++] = output_opts;
    sets[n++] = common_opts;
    sets[n] = NULL;
}

static void print_indented(FILE *f, const char *text, const char *indent)
{
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t l = nl ? (size_t)(nl - p) : strlen(p);
        fprintf(f, "%s%.*s\n", indent, (int)l, p);
        p += l + (nl != NULL);
    }
}

static void cmd_usage(FILE *f, const gx_cli_cmd *cmd)
{
    const gx_opt *sets[4];
    sets_of(cmd, sets);
    fprintf(f, "usage: gpuaas %s%s%s [options]\n\n", cmd->name, *cmd->synopsis ? " " : "", cmd->synopsis);
    fprintf(f, "%c%s.\n", toupper((unsigned char)cmd->summary[0]), cmd->summary + 1);
    if (cmd->details) {
        fputc('\n', f);
        print_indented(f, cmd->details, "");
    }
    fputc('\n', f);
    gx_opts_usage(f, sets);
    fputs("\nEnvironment: GPUAAS_SERVER, GPUAAS_TOKEN, GPUAAS_NAMESPACE.\n\nExamples:\n", f);
    print_indented(f, cmd->examples, "  ");
}

void gx_cli_usage(FILE *f)
{
    int users_done = 0, keys_done = 0;
    for (size_t i = 0; i < NCOMMANDS; i++) {
        const gx_cli_cmd *c = &commands[i];
        if (!strncmp(c->name, "keys ", 5)) {
            if (!keys_done++) fprintf(f, "  %-12s %s\n", "keys", "create, list and revoke your API keys for the OpenAI-compatible gateway");
            continue;
        }
        if (!strncmp(c->name, "users ", 6)) {
            if (!users_done++) fprintf(f, "  %-12s %s\n", "users", "create, list and delete users and their tokens (admin)");
            continue;
        }
        fprintf(f, "  %-12s %s\n", c->name, c->summary);
    }
}

int64_t gx_cli_now(const gx_cli_ctx *c)
{
    return c->http.date_ms ? c->http.date_ms : c->local_now_ms;
}

int gx_cli_usage_error(const gx_cli_ctx *c, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "gpuaas %s: ", c->cmd->name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    /* A mistake gets the one line that shows the right form, not the whole help, which
     * would push the message itself off the screen. */
    const gx_cli_cmd *cmd = c->cmd;
    fprintf(stderr, "\nusage: gpuaas %s%s%s [options]\nsee gpuaas %s --help\n", cmd->name, *cmd->synopsis ? " " : "",
            cmd->synopsis, cmd->name);
    return 2;
}

const char *gx_cli_list_ns(const gx_cli_ctx *c)
{
    const char *ns = gx_opt_get(&c->args, "namespace");
    if (ns && *ns) return ns;
    if (gx_opt_has(&c->args, "all-namespaces")) return NULL;
    const char *env = getenv("GPUAAS_NAMESPACE");
    return env && *env ? env : NULL;
}

int gx_cli_ref(gx_cli_ctx *c, const char *arg, char *ns, size_t nsn, char *name, size_t namen)
{
    char err[256];
    const char *flag = gx_opt_get(&c->args, "namespace");
    if (gx_cli_parse_ref(arg, flag, getenv("GPUAAS_NAMESPACE"), ns, nsn, name, namen, err, sizeof err))
        return gx_cli_usage_error(c, "%s", err);
    if (*ns) return 0;
    /* A user with one namespace should not have to type it. */
    if (!c->whoami && !(c->whoami = gx_cli_get(&c->http, "/api/v1/whoami"))) return 1;
    const json_t *nss = json_object_get(c->whoami, "namespaces");
    if (json_array_size(nss) == 1 && json_is_string(json_array_get(nss, 0))) {
        snprintf(ns, nsn, "%s", json_string_value(json_array_get(nss, 0)));
        return 0;
    }
    return gx_cli_usage_error(c, "which namespace is %s in? write NS/%s or pass -n NS (or set GPUAAS_NAMESPACE)", arg, arg);
}

int gx_cli_print_json(const gx_cli_ctx *c, const json_t *v)
{
    if (gx_cli_out_print(stdout, c->out, v)) {
        fprintf(stderr, "error: cannot format the answer as %s\n", c->out == GX_CLI_OUT_YAML ? "YAML" : "JSON");
        return 1;
    }
    return 0;
}

/* "users" (or "keys") alone or with --help: the subcommands. */
static int group_usage(FILE *f, const char *group, int rc)
{
    fprintf(f, "usage: gpuaas %s\n\n", !strcmp(group, "keys") ? "keys create|ls|revoke ..." : "users create|ls|delete ...");
    size_t gl = strlen(group);
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (!strncmp(commands[i].name, group, gl) && commands[i].name[gl] == ' ')
            fprintf(f, "  gpuaas %-14s %s\n", commands[i].name, commands[i].summary);
    fputs("\nEach takes --help.\n", f);
    return rc;
}

static const gx_cli_cmd *lookup(int *argc, char ***argv, int *rc)
{
    const char *name = (*argv)[0];
    char full[64];
    const char *group = !strcmp(name, "users") ? "users" : !strcmp(name, "keys") ? "keys" : NULL;
    /* "gpus mig apply": the one three-word command */
    if (!strcmp(name, "gpus") && *argc >= 3 && !strcmp((*argv)[1], "mig") && !strcmp((*argv)[2], "apply")) {
        *argc -= 2;
        *argv += 2;
        name = "gpus mig apply";
    }
    /* "gpus mig" with anything but apply: say what there is (MIG has one command) */
    if (!strcmp(name, "gpus") && *argc >= 2 && !strcmp((*argv)[1], "mig")) {
        int help = *argc >= 3 && (!strcmp((*argv)[2], "--help") || !strcmp((*argv)[2], "-h"));
        if (*argc >= 3 && !help) fprintf(stderr, "gpuaas gpus mig: unknown subcommand '%s'\n", (*argv)[2]);
        else if (!help) fputs("gpuaas gpus mig: missing subcommand\n", stderr);
        fputs("usage: gpuaas gpus mig apply CONFIG [--node N] [-f FILE]\nsee gpuaas gpus mig apply --help\n", help ? stdout : stderr);
        *rc = help ? 0 : 2;
        return NULL;
    }
    if (group) {
        if (*argc < 2) { *rc = group_usage(stderr, group, 2); return NULL; }
        const char *sub = (*argv)[1];
        if (!strcmp(sub, "-h") || !strcmp(sub, "--help") || !strcmp(sub, "help")) { *rc = group_usage(stdout, group, 0); return NULL; }
        if (!strcmp(sub, "list")) sub = "ls";
        if (!strcmp(sub, "rm")) sub = !strcmp(group, "keys") ? "revoke" : "delete";
        snprintf(full, sizeof full, "%s %s", group, sub);
        name = full;
        (*argc)--;
        (*argv)++;
    }
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (!strcmp(commands[i].name, name)) return &commands[i];
    if (name == full) {
        fprintf(stderr, "gpuaas %s: unknown subcommand '%s'\n\n", group, (*argv)[0]);
        *rc = group_usage(stderr, group, 2);
        return NULL;
    }
    *rc = -1;
    return NULL;
}

static int wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return 1;
    return 0;
}

static int prepare(gx_cli_ctx *c, int argc, char **argv)
{
    const gx_opt *sets[4];
    sets_of(c->cmd, sets);
    if (gx_opts_parse(sets, argc, argv, &c->args)) return gx_cli_usage_error(c, "%s", c->args.err);
    int np = c->args.npos;
    if (np < c->cmd->min_pos)
        return gx_cli_usage_error(c, "missing argument (%s)", *c->cmd->synopsis ? c->cmd->synopsis : "none expected");
    if (c->cmd->max_pos >= 0 && np > c->cmd->max_pos)
        return gx_cli_usage_error(c, "unexpected argument '%s'", c->args.pos[c->cmd->max_pos]);
    if (c->cmd->output && gx_cli_out_parse(gx_opt_get(&c->args, "output"), &c->out))
        return gx_cli_usage_error(c, "unknown output format '%s' (table, wide, json, yaml)", gx_opt_get(&c->args, "output"));
    if (gx_opt_has(&c->args, "token") && gx_opt_has(&c->args, "token-file"))
        return gx_cli_usage_error(c, "give --token or --token-file, not both");
    char err[512];
    if (gx_cli_http_init(&c->http, gx_opt_get(&c->args, "server"), gx_opt_get(&c->args, "token"),
                         gx_opt_get(&c->args, "token-file"), err, sizeof err)) {
        fprintf(stderr, "error: %s\n", err);
        return 1;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    c->local_now_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    return 0;
}

int gx_cli_main(int argc, char **argv)
{
    int rc = 0;
    if (argc < 1) return -1;
    const gx_cli_cmd *cmd = lookup(&argc, &argv, &rc);
    if (!cmd) return rc;
    gx_cli_ctx c;
    memset(&c, 0, sizeof c);
    c.cmd = cmd;
    if (wants_help(argc, argv)) {
        cmd_usage(stdout, cmd);
        return 0;
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
        fprintf(stderr, "error: cannot initialise libcurl\n");
        return 1;
    }
    rc = prepare(&c, argc, argv);
    if (!rc) rc = cmd->run(&c);
    fflush(stdout);
    if (ferror(stdout) && !rc) {
        fprintf(stderr, "error: cannot write the output\n");
        rc = 1;
    }
    json_decref(c.whoami);
    gx_cli_http_free(&c.http);
    gx_opts_free(&c.args);
    curl_global_cleanup();
    return rc;
}
