/* cli/cmd_gpus: the GPU commands (cmd_gpus.c), registered in cli.c's table.
 * Owns: their entry points. */
#ifndef GX_CLI_CMD_GPUS_H
#define GX_CLI_CMD_GPUS_H
#include "cli/cmd.h"

int gx_cli_run_gpus_mig_apply(gx_cli_ctx *c);

#endif
