/* A real implicit layer that passes everything through except what it breaks, for the probe's
 * localisation tests. Built with -DDROP_DISPATCH: vkCmdDispatch does nothing (every compute
 * result stays as it was); with -DDROP_SUBMITS: vkQueueSubmit submits its batches without their
 * command buffers (semaphores and fences still signal, nothing runs). No Vulkan headers: the loader's layer interface, declared here. */
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

__attribute__((unused)) static void no_dispatch(void *cmd, unsigned x, unsigned y, unsigned z) {
    (void)cmd; (void)x; (void)y; (void)z;
}

struct submit_info {
    int sType; const void *pNext;
    unsigned waitSemaphoreCount; const void *pWaitSemaphores; const void *pWaitDstStageMask;
    unsigned commandBufferCount; const void *pCommandBuffers;
    unsigned signalSemaphoreCount; const void *pSignalSemaphores;
};
typedef int (*PFN_queueSubmit)(void *queue, unsigned count, const struct submit_info *s, void *fence);

__attribute__((unused)) static int submit_nothing(void *queue, unsigned count, const struct submit_info *submits, void *fence) {
    struct submit_info emptied[64];
    if (count > 64) count = 64;
    for (unsigned i = 0; i < count; i++) {
        emptied[i] = submits[i];
        emptied[i].commandBufferCount = 0;
        emptied[i].pCommandBuffers = NULL;
    }
    PFN_queueSubmit next = (PFN_queueSubmit)next_gdpa(the_device, "vkQueueSubmit");
    return next(queue, count, emptied, fence);
}

EXPORT PFN_void vkGetDeviceProcAddr(void *device, const char *name) {
    if (!strcmp(name, "vkGetDeviceProcAddr")) return (PFN_void)vkGetDeviceProcAddr;
#ifdef DROP_SUBMITS
    if (!strcmp(name, "vkQueueSubmit")) return (PFN_void)submit_nothing;
#endif
#ifdef DROP_DISPATCH
    if (!strcmp(name, "vkCmdDispatch")) return (PFN_void)no_dispatch;
#endif
    return next_gdpa(device, name);
}

EXPORT PFN_void vkGetInstanceProcAddr(void *instance, const char *name) {
    if (!strcmp(name, "vkGetInstanceProcAddr")) return (PFN_void)vkGetInstanceProcAddr;
    if (!strcmp(name, "vkCreateInstance")) return (PFN_void)create_instance;
    if (!strcmp(name, "vkCreateDevice")) return (PFN_void)create_device;
    if (!strcmp(name, "vkGetDeviceProcAddr")) return (PFN_void)vkGetDeviceProcAddr;
#ifdef DROP_SUBMITS
    if (!strcmp(name, "vkQueueSubmit")) return (PFN_void)submit_nothing;
#endif
#ifdef DROP_DISPATCH
    if (!strcmp(name, "vkCmdDispatch")) return (PFN_void)no_dispatch;
#endif
    return next_gipa(instance, name);
}
