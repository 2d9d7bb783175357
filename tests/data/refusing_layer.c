/* A real layer that passes everything through except where it refuses or crashes, for the load
 * test's layer verdicts. Built with -DREFUSE_INSTANCE or -DREFUSE_DEVICE: vkCreateInstance or
 * vkCreateDevice returns VK_ERROR_INITIALIZATION_FAILED without calling down (a layer that
 * refuses, neither crashing nor hanging); with -DCRASH_DESTROY_INSTANCE: vkDestroyInstance
 * crashes after calling down (a crash at exit, once the work is done). No Vulkan headers: the
 * loader's layer interface, declared here. */
#include <stddef.h>
#include <string.h>

typedef void (*PFN_void)(void);
typedef PFN_void (*PFN_gipa)(void *instance, const char *name);
typedef PFN_void (*PFN_gdpa)(void *device, const char *name);
typedef int (*PFN_createInstance)(const void *info, const void *alloc, void **instance);
typedef int (*PFN_createDevice)(void *gpu, const void *info, const void *alloc, void **device);

struct header { int sType; const void *pNext; };
struct instance_link { struct instance_link *pNext; PFN_gipa next_gipa; void *next_gpdpa; };
struct device_link { struct device_link *pNext; PFN_gipa next_gipa; PFN_gdpa next_gdpa; };
struct layer_create_info { int sType; const void *pNext; int function; void *link; };

#define LOADER_INSTANCE_CREATE_INFO 47
#define LOADER_DEVICE_CREATE_INFO 48
#define LAYER_LINK_INFO 0
#define EXPORT __attribute__((visibility("default")))

static PFN_gipa next_gipa;
static PFN_gdpa next_gdpa;
static void *the_instance;
static void *the_device;

static struct layer_create_info *chain(const void *info, int type) {
    const struct header *h = ((const struct header *)info)->pNext;
    for (; h; h = h->pNext) {
        struct layer_create_info *c = (struct layer_create_info *)h;
        if (h->sType == type && c->function == LAYER_LINK_INFO) return c;
    }
    return NULL;
}

static int create_instance(const void *info, const void *alloc, void **instance) {
#ifdef REFUSE_INSTANCE
    return -3;
#endif
    struct layer_create_info *c = chain(info, LOADER_INSTANCE_CREATE_INFO);
    struct instance_link *link = c->link;
    next_gipa = link->next_gipa;
    c->link = link->pNext;
    PFN_createInstance next = (PFN_createInstance)next_gipa(NULL, "vkCreateInstance");
    int r = next(info, alloc, instance);
    if (r == 0) the_instance = *instance;
    return r;
}

static int create_device(void *gpu, const void *info, const void *alloc, void **device) {
#ifdef REFUSE_DEVICE
    return -3;
#endif
    struct layer_create_info *c = chain(info, LOADER_DEVICE_CREATE_INFO);
    struct device_link *link = c->link;
    next_gdpa = link->next_gdpa;
    PFN_gipa gipa = link->next_gipa;
    c->link = link->pNext;
    PFN_createDevice next = (PFN_createDevice)gipa(the_instance, "vkCreateDevice");
    int r = next(gpu, info, alloc, device);
    if (r == 0) the_device = *device;
    return r;
}

EXPORT PFN_void vkGetDeviceProcAddr(void *device, const char *name) {
    if (!strcmp(name, "vkGetDeviceProcAddr")) return (PFN_void)vkGetDeviceProcAddr;
    return next_gdpa(device, name);
}

typedef void (*PFN_destroyInstance)(void *instance, const void *alloc);

__attribute__((unused)) static void destroy_then_crash(void *instance, const void *alloc) {
    ((PFN_destroyInstance)next_gipa(instance, "vkDestroyInstance"))(instance, alloc);
    *(volatile int *)0 = 1;
}

EXPORT PFN_void vkGetInstanceProcAddr(void *instance, const char *name) {
    if (!strcmp(name, "vkGetInstanceProcAddr")) return (PFN_void)vkGetInstanceProcAddr;
#ifdef CRASH_DESTROY_INSTANCE
    if (!strcmp(name, "vkDestroyInstance")) return (PFN_void)destroy_then_crash;
#endif
    if (!strcmp(name, "vkCreateInstance")) return (PFN_void)create_instance;
    if (!strcmp(name, "vkCreateDevice")) return (PFN_void)create_device;
    if (!strcmp(name, "vkGetDeviceProcAddr")) return (PFN_void)vkGetDeviceProcAddr;
    return next_gipa(instance, name);
}
