/* serve: the daemon's entry point. */
#ifndef GX_SERVE_H
#define GX_SERVE_H
int gx_serve_main(int argc, char **argv);
#endif
