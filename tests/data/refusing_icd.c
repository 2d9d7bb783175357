/* A Vulkan driver (ICD) that is lavapipe in every call but one: vkCreateDevice returns
 * VK_ERROR_INITIALIZATION_FAILED. It lists lavapipe's device, so a program sees the adapter and
 * fails only when it opens it. LVP is lavapipe's library (-DLVP=\"...\"). */
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

typedef void (*PFN)(void);
typedef PFN (*GIPA)(void *, const char *);

static void *lvp;
static GIPA instance_proc, physical_proc;

static void open_lvp(void) {
    if (lvp) return;
    lvp = dlopen(LVP, RTLD_NOW | RTLD_LOCAL);
    instance_proc = (GIPA)dlsym(lvp, "vk_icdGetInstanceProcAddr");
    physical_proc = (GIPA)dlsym(lvp, "vk_icdGetPhysicalDeviceProcAddr");
}

static int32_t refuse(void *physical, const void *info, const void *alloc, void **device) {
    (void)physical;
    (void)info;
    (void)alloc;
    (void)device;
    return -3; /* VK_ERROR_INITIALIZATION_FAILED */
}

int32_t vk_icdNegotiateLoaderICDInterfaceVersion(uint32_t *version) {
    open_lvp();
    return ((int32_t(*)(uint32_t *))dlsym(lvp, "vk_icdNegotiateLoaderICDInterfaceVersion"))(version);
}

PFN vk_icdGetInstanceProcAddr(void *instance, const char *name) {
    open_lvp();
    return strcmp(name, "vkCreateDevice") ? instance_proc(instance, name) : (PFN)refuse;
}

PFN vk_icdGetPhysicalDeviceProcAddr(void *instance, const char *name) {
    open_lvp();
    return strcmp(name, "vkCreateDevice") ? physical_proc(instance, name) : (PFN)refuse;
}
