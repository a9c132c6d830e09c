/* k8sobj: see k8sobj.h. */
#include "lib/k8sobj.h"

static const char *const SERVER_METADATA[] = {"creationTimestamp", "resourceVersion", "uid", "generation",
                                              "managedFields", "selfLink"};

void gx_k8s_strip_server_fields(json_t *doc)
{
    if (!json_is_object(doc)) return;
    json_object_del(doc, "status");
    json_t *md = json_object_get(doc, "metadata");
    if (!json_is_object(md)) return;
    for (size_t i = 0; i < sizeof SERVER_METADATA / sizeof *SERVER_METADATA; i++) json_object_del(md, SERVER_METADATA[i]);
}
