/* cli/cmd: what every client command gets (the context) and the commands themselves.
 * Owns: the gx_cli_ctx contract between the dispatcher (cli.c) and the cmd_*.c files.
 * Must not: hold state beyond one command's run. */
#ifndef GX_CLI_CMD_H
#define GX_CLI_CMD_H
#include <stdint.h>
#include <jansson.h>
#include "cli/http.h"
#include "lib/opts.h"
#include "cli/table.h"

struct gx_cli_cmd;

typedef struct gx_cli_ctx {
    const struct gx_cli_cmd *cmd;
    gx_opt_args args;        /* parsed options and positional arguments */
    gx_cli_out out;          /* -o */
    gx_cli_http http;
    int64_t local_now_ms;    /* this machine's clock when the command started */
    json_t *whoami;          /* cached GET /whoami, NULL until asked */
} gx_cli_ctx;

typedef struct gx_cli_cmd {
    const char *name;        /* "ls", "users create" */
    const char *synopsis;    /* arguments after the name, for the usage line */
    const char *summary;     /* one line, for the command list */
    const char *details;     /* a paragraph or NULL */
    const char *examples;    /* one command per line */
    const gx_opt *opts;  /* this command's own options */
    int output;              /* takes -o */
    int min_pos, max_pos;    /* positional arguments allowed (max -1: any) */
    int (*run)(gx_cli_ctx *c);
} gx_cli_cmd;

/* "Now" for ages: the server's clock when an answer carried a Date header, else ours. */
int64_t gx_cli_now(const gx_cli_ctx *c);
/* Print "gpuaas CMD: <message>", the command's usage line and where its help is to
 * stderr; returns 2. */
int gx_cli_usage_error(const gx_cli_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Resolve a workload reference (NS/NAME, or NAME with -n / $GPUAAS_NAMESPACE / the
 * caller's only namespace). Returns 0, 1 after reporting an error, 2 after a usage error. */
int gx_cli_ref(gx_cli_ctx *c, const char *arg, char *ns, size_t nsn, char *name, size_t namen);
/* The -n namespace for listings: -n, else $GPUAAS_NAMESPACE unless -A; NULL for all. */
const char *gx_cli_list_ns(const gx_cli_ctx *c);
/* Print a JSON answer per -o json|yaml; returns the exit status. */
int gx_cli_print_json(const gx_cli_ctx *c, const json_t *v);

/* The commands (cmd_work.c, cmd_show.c, cmd_cluster.c, cmd_users.c). Each returns the
 * exit status: 0 done, 1 an error was reported, 2 a usage mistake was reported. */
int gx_cli_run_apply(gx_cli_ctx *c);
int gx_cli_run_submit(gx_cli_ctx *c);
int gx_cli_run_clusters(gx_cli_ctx *c);   /* cmd_work.c: GET /api/v1/clusters (docs/fleet.md) */
int gx_cli_run_ls(gx_cli_ctx *c);
int gx_cli_run_show(gx_cli_ctx *c);
int gx_cli_run_logs(gx_cli_ctx *c);
int gx_cli_run_cancel(gx_cli_ctx *c);
int gx_cli_run_approve(gx_cli_ctx *c);   /* cmd_approve.c: the gpuaas.dev/approval controller */
int gx_cli_run_reject(gx_cli_ctx *c);
int gx_cli_run_queues(gx_cli_ctx *c);
int gx_cli_run_gpus(gx_cli_ctx *c);
int gx_cli_run_get(gx_cli_ctx *c);
int gx_cli_run_users_create(gx_cli_ctx *c);
int gx_cli_run_users_ls(gx_cli_ctx *c);
int gx_cli_run_users_delete(gx_cli_ctx *c);
/* cmd_drain.c */
int gx_cli_run_drain(gx_cli_ctx *c);
int gx_cli_run_delete(gx_cli_ctx *c);
int gx_cli_run_whoami(gx_cli_ctx *c);
/* cmd_reserve.c: bookings (kind Reservation) */
int gx_cli_run_reserve(gx_cli_ctx *c);
int gx_cli_run_reservations(gx_cli_ctx *c);
int gx_cli_run_unreserve(gx_cli_ctx *c);

/* Send -f files to path (apply and submit): one request when they can be combined.
 * On success *answers holds one JSON answer per request sent. Returns 0, 1 (error
 * reported) or 2 (usage mistake reported). */
int gx_cli_send_files(gx_cli_ctx *c, const char *path, json_t **answers);

/* The items of several {"items":[...]} answers as one, printed per -o json|yaml. */
int gx_cli_print_items(gx_cli_ctx *c, const json_t *answers);
/* The ls table (or -o wide) of a JSON array of workloads. */
int gx_cli_print_workloads(gx_cli_ctx *c, const json_t *items);

/* Workload states and phases accepted by ls --state (case-insensitive). */
int gx_cli_state_kind(const char *s, const char **canon);

#endif
