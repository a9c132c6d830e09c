/* render_main: `gpuaas render`, the offline half of fleet mode (docs/fleet.md, "Render").
 * Owns: the command's entry point; see render_main.c.
 * Must not: talk to a daemon or to git. */
#ifndef GX_FLEET_RENDER_MAIN_H
#define GX_FLEET_RENDER_MAIN_H

/* gpuaas render --config FILE [--cluster NAME] --out DIR [-f REQUEST.yaml ...].
 * argv[0] is "render"; returns the exit status (0 done, 1 the configuration or a
 * request is wrong or a file cannot be written, 2 a usage mistake). */
int gx_fleet_render_main(int argc, char **argv);

#endif
