/* devnodes: the device nodes a pod gets for its GPUs, as NVIDIA's container toolkit
 * injects them (../shared/reference/isolation.md).
 * Owns: the list: /dev/nvidiactl, nvidia-uvm, nvidia-uvm-tools and nvidia-modeset when
 * the host has them; /dev/nvidia<minor> of each GPU the pod holds (the parent GPU of a
 * MIG device); for a MIG device /dev/nvidia-caps/nvidia-cap<A> and <B>, A and B read
 * from the driver's capability files (.../gpu<minor>/mig/gi<G>/access and .../ci<C>/access,
 * line "DeviceFileMinor: N"). Each with its type, major and minor for the device cgroup.
 * Must not: mount anything or know the sandbox's command line.
 *
 * Only nodes that exist are listed: a host without GPUs (the demo, CI) has none, and the
 * pod then gets no nvidia node at all. */
#ifndef GX_DEVNODES_H
#define GX_DEVNODES_H
#include <limits.h>
#include <stddef.h>
#include "lib/err.h"

#define GX_DEVNODES_MAX 64

typedef struct gx_devnode {
    char src[PATH_MAX];              /* on the host: DEVDIR/nvidia0 */
    char dst[64];                    /* inside the pod: /dev/nvidia0 */
    char type;                       /* 'c' or 'b' */
    unsigned major, minor;
} gx_devnode;

/* One device the pod holds: the GPU's minor and, for a MIG device, its GPU and compute
 * instance ids (mig_gi < 0: a whole GPU or a share of one). */
typedef struct gx_devsel { int minor; int mig_gi, mig_ci; } gx_devsel;

/* Fill out[] (at most max) with the nodes under dev_dir ("/dev") for these devices;
 * caps_dir is the driver's capability tree ("/proc/driver/nvidia/capabilities").
 * nsel == 0 gives an empty list (no GPU, no nvidia node). Returns the count, or -1 (err)
 * when an assigned GPU's node is missing while nvidiactl exists (a broken driver
 * install would otherwise start a pod without its GPU) or the list is full. */
int gx_devnodes_for(const char *dev_dir, const char *caps_dir, const gx_devsel *sel, size_t nsel,
                    gx_devnode *out, int max, gx_err *err);

#endif
