/* cli/cmd_report: `gpuaas report` (cmd_report.c), registered in cli.c's table.
 * Owns: its entry point. */
#ifndef GX_CLI_CMD_REPORT_H
#define GX_CLI_CMD_REPORT_H
#include "cli/cmd.h"

int gx_cli_run_report(gx_cli_ctx *c);

#endif
