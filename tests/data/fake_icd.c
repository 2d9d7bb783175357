/* A fake Vulkan driver (ICD) that misbehaves on purpose, for the load test's tests.
 * Build with one of -DCTOR_SEGV, -DCTOR_HANG, -DGIPA_ABORT, -DGIPA_HANG (or none: loads, no driver). */
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#if defined(CTOR_SEGV)
static int *volatile nowhere; /* a real invalid write, which the compiler cannot prove away */
__attribute__((constructor)) static void fake_icd_ctor(void) { *nowhere = 1; }
#elif defined(CTOR_HANG)
__attribute__((constructor)) static void fake_icd_ctor(void) { for (;;) sleep(1000); }
#endif

__attribute__((visibility("default"))) void *vk_icdGetInstanceProcAddr(void *instance, const char *name) {
    (void)instance;
    (void)name;
#if defined(GIPA_ABORT)
    abort();
#elif defined(GIPA_HANG)
    for (;;) sleep(1000);
#endif
    return NULL;
}
