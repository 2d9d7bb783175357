/* A fake Vulkan driver (ICD) that misbehaves on purpose, for the load test's and the probe's tests.
 * Build with one of:
 *   -DCTOR_SEGV, -DCTOR_HANG        the constructor crashes or hangs (at dlopen)
 *   -DGIPA_ABORT, -DGIPA_HANG       vk_icdGetInstanceProcAddr aborts or hangs
 *   -DCREATE_SEGV, -DCREATE_HANG,   the driver negotiates with the loader and hands out its
 *   -DCREATE_ABRT                   vkCreateInstance, which crashes, hangs or aborts
 * or none: it loads, and gives the loader no entry point. */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(CTOR_SEGV)
static int *volatile nowhere; /* a real invalid write, which the compiler cannot prove away */
__attribute__((constructor)) static void fake_icd_ctor(void) { *nowhere = 1; }
#elif defined(CTOR_HANG)
__attribute__((constructor)) static void fake_icd_ctor(void) { for (;;) sleep(1000); }
#endif

#if defined(CREATE_SEGV) || defined(CREATE_HANG) || defined(CREATE_ABRT)
#define HANDS_OUT_CREATE 1
typedef int VkResult;
typedef void (*PFN)(void);
static int *volatile nowhere_create;
static VkResult create_instance(const void *info, const void *alloc, void **instance) {
    (void)info;
    (void)alloc;
    (void)instance;
#if defined(CREATE_SEGV)
    *nowhere_create = 1;
#elif defined(CREATE_HANG)
    for (;;) sleep(1000);
#else
    abort();
#endif
    return -3; /* VK_ERROR_INITIALIZATION_FAILED */
}
static VkResult enum_ext(const char *layer, uint32_t *count, void *props) {
    (void)layer;
    (void)props;
    *count = 0;
    return 0;
}
static VkResult enum_version(uint32_t *v) {
    *v = (1u << 22) | (3u << 12);
    return 0;
}
__attribute__((visibility("default"))) VkResult vk_icdNegotiateLoaderICDInterfaceVersion(uint32_t *v) {
    if (*v > 5) *v = 5;
    return 0;
}
#endif

__attribute__((visibility("default"))) void *vk_icdGetInstanceProcAddr(void *instance, const char *name) {
    (void)instance;
#if defined(GIPA_ABORT)
    abort();
#elif defined(GIPA_HANG)
    for (;;) sleep(1000);
#endif
#if defined(HANDS_OUT_CREATE)
    if (!strcmp(name, "vkCreateInstance")) return (void *)create_instance;
    if (!strcmp(name, "vkEnumerateInstanceExtensionProperties")) return (void *)enum_ext;
    if (!strcmp(name, "vkEnumerateInstanceVersion")) return (void *)enum_version;
#else
    (void)name;
#endif
    return NULL;
}
