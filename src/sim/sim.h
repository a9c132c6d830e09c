/* sim: offline replays over the real engine code (no daemon, no I/O but files).
 * Owns: `gpuaas sim trace` (placement replay of a cluster trace, sim/trace*.c) and
 * `gpuaas sim scenario` (Kueue scenario replay on a virtual clock, sim/scenario*.c).
 * Must not: carry its own copy of engine or placement logic; it drives src/core. */
#ifndef GX_SIM_H
#define GX_SIM_H

/* argv[0] is "trace" / "scenario"; return the process exit status. */
int gx_sim_trace_main(int argc, char **argv);
int gx_sim_scenario_main(int argc, char **argv);

#endif
