/* gpuaas: one binary, many subcommands.
 * Owns: dispatch from argv[1] to the daemon (serve), the offline replays (sim) and
 * the CLI client commands (everything else, src/cli), and `render` (src/fleet). */
#include <stdio.h>
#include <string.h>
#include "daemon/serve.h"
#include "cli/cli.h"
#include "fleet/render_main.h"
#include "sim/sim.h"

static void usage(FILE *f)
{
    fputs("usage: gpuaas <command> [options]\n"
          "\n"
          "Server:\n"
          "  serve        run the daemon (gpuaas serve --help)\n"
          "\n"
          "Client (talk to a daemon over its REST API):\n", f);
    gx_cli_usage(f);
    fputs("\n"
          "Offline:\n"
          "  sim trace     replay a cluster trace through the placement code\n"
          "  sim scenario  replay a Kueue scenario on a virtual clock\n"
          "  render        write a fleet's Kubernetes objects for GitOps (gpuaas render --help)\n"
          "\n"
          "Every command takes --help.\n", f);
}

int main(int argc, char **argv)
{
    if (argc < 2) { usage(stderr); return 2; }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) { usage(stdout); return 0; }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) { puts("gpuaas 0.1.0"); return 0; }
    if (!strcmp(cmd, "serve")) return gx_serve_main(argc - 1, argv + 1);
    /* fleet mode: a fleet's objects rendered offline (src/fleet/render_main.c) */
    if (!strcmp(cmd, "render")) return gx_fleet_render_main(argc - 1, argv + 1);
    if (!strcmp(cmd, "sim")) {
        if (argc < 3 || !strcmp(argv[2], "--help") || !strcmp(argv[2], "-h")) {
            fputs("usage: gpuaas sim trace|scenario [options]\n\n"
                  "Offline replays through the same engine, no daemon needed:\n"
                  "  gpuaas sim trace     replay a cluster trace through the placement code\n"
                  "  gpuaas sim scenario  replay a Kueue scenario on a virtual clock\n\n"
                  "Each takes --help.\n", argc < 3 ? stderr : stdout);
            return argc < 3 ? 2 : 0;
        }
        if (!strcmp(argv[2], "trace")) return gx_sim_trace_main(argc - 2, argv + 2);
        if (!strcmp(argv[2], "scenario")) return gx_sim_scenario_main(argc - 2, argv + 2);
        fprintf(stderr, "gpuaas sim: unknown replay '%s' (trace, scenario)\n", argv[2]);
        return 2;
    }
    int rc = gx_cli_main(argc - 1, argv + 1);
    if (rc == -1) {
        /* a mistake gets one line and where the list is, not the list itself */
        fprintf(stderr, "gpuaas: unknown command '%s'\nusage: gpuaas <command> [options]\nsee gpuaas --help\n", cmd);
        return 2;
    }
    return rc;
}
