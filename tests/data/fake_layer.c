/* A fake implicit layer whose vkGetInstanceProcAddr aborts: the loader calls it while it builds
 * the instance chain, inside vkCreateInstance. For the load test's tests. */
#include <stdlib.h>

__attribute__((visibility("default"))) void *vkGetInstanceProcAddr(void *instance, const char *name) {
    (void)instance;
    (void)name;
    abort();
}
