/* cli: the client commands, each a REST call to the daemon.
 * Owns: argument parsing, --server/--token resolution, output as table/json/yaml.
 * Must not: touch the store or the engine directly; everything goes over HTTP. */
#ifndef GX_CLI_H
#define GX_CLI_H
#include <stdio.h>

/* argv[0] is the command name. Returns the exit status, or -1 for an unknown command. */
int gx_cli_main(int argc, char **argv);
/* One line per command, for the top-level usage. */
void gx_cli_usage(FILE *f);
#endif
