/* A real Vulkan driver for the probe's tests that computes wrong numbers on large buffers: it is
 * lavapipe (dlopened from LVP, the library's path), passed through, except that a vkCmdCopyBuffer
 * region over 1 MiB gets 0xdeadbeef for its first 4 bytes (small copies are left alone), and its
 * device is named NAME (so that wgpu can tell it from lavapipe's own). No Vulkan headers: the
 * loader's driver interface, declared here. */
#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

typedef void (*PFN_void)(void);
typedef PFN_void (*PFN_gipa)(void *instance, const char *name);
typedef PFN_void (*PFN_gdpa)(void *device, const char *name);
typedef int (*PFN_negotiate)(unsigned *version);
typedef void (*PFN_properties)(void *gpu, unsigned char *properties);
typedef void (*PFN_properties2)(void *gpu, unsigned char *properties2);

#define EXPORT __attribute__((visibility("default")))
/* VkPhysicalDeviceProperties.deviceName; VkPhysicalDeviceProperties2.properties */
#define NAME_AT 20
#define PROPERTIES_AT 16

static void *lvp;
static PFN_gipa lvp_gipa;
static PFN_gdpa lvp_gdpa;
static PFN_properties lvp_properties;
static PFN_properties2 lvp_properties2;

static void load(void) {
    if (lvp) return;
    lvp = dlopen(LVP, RTLD_NOW | RTLD_LOCAL);
    lvp_gipa = (PFN_gipa)dlsym(lvp, "vk_icdGetInstanceProcAddr");
}

EXPORT int vk_icdNegotiateLoaderICDInterfaceVersion(unsigned *version) {
    load();
    return ((PFN_negotiate)dlsym(lvp, "vk_icdNegotiateLoaderICDInterfaceVersion"))(version);
}

struct buffer_copy { unsigned long long src, dst, size; };
typedef void (*PFN_copyBuffer)(void *cmd, void *src, void *dst, unsigned count, const struct buffer_copy *r);
typedef void (*PFN_fillBuffer)(void *cmd, void *dst, unsigned long long offset, unsigned long long size, unsigned data);
static PFN_copyBuffer lvp_copy;
static PFN_fillBuffer lvp_fill;

static void copy_short(void *cmd, void *src, void *dst, unsigned count, const struct buffer_copy *regions) {
    struct buffer_copy shortened[64];
    if (count > 64) count = 64;
    for (unsigned i = 0; i < count; i++) {
        shortened[i] = regions[i];
        if (shortened[i].size > (1u << 20)) {
            shortened[i].src += 4;
            shortened[i].dst += 4;
            shortened[i].size -= 4;
        }
    }
    lvp_copy(cmd, src, dst, count, shortened);
    /* the 4 bytes left out get a value no copy gives, whatever the memory held before */
    for (unsigned i = 0; i < count; i++)
        if (shortened[i].size != regions[i].size)
            lvp_fill(cmd, dst, regions[i].dst, 4, 0xdeadbeefu);
}

static void named(unsigned char *properties) {
    memset(properties + NAME_AT, 0, 256);
    strcpy((char *)properties + NAME_AT, NAME);
}

static void properties(void *gpu, unsigned char *p) { lvp_properties(gpu, p); named(p); }
static void properties2(void *gpu, unsigned char *p) { lvp_properties2(gpu, p); named(p + PROPERTIES_AT); }

static PFN_void device_proc(void *device, const char *name) {
    if (!strcmp(name, "vkGetDeviceProcAddr")) return (PFN_void)device_proc;
    if (!strcmp(name, "vkCmdCopyBuffer")) {
        lvp_copy = (PFN_copyBuffer)lvp_gdpa(device, name);
        lvp_fill = (PFN_fillBuffer)lvp_gdpa(device, "vkCmdFillBuffer");
        return (PFN_void)copy_short;
    }
    return lvp_gdpa(device, name);
}

EXPORT PFN_void vk_icdGetInstanceProcAddr(void *instance, const char *name) {
    load();
    if (!strcmp(name, "vkGetInstanceProcAddr")) return (PFN_void)vk_icdGetInstanceProcAddr;
    if (instance && !strcmp(name, "vkGetDeviceProcAddr")) {
        lvp_gdpa = (PFN_gdpa)lvp_gipa(instance, name);
        return (PFN_void)device_proc;
    }
    if (instance && !strcmp(name, "vkGetPhysicalDeviceProperties")) {
        lvp_properties = (PFN_properties)lvp_gipa(instance, name);
        return (PFN_void)properties;
    }
    if (instance && (!strcmp(name, "vkGetPhysicalDeviceProperties2") ||
                     !strcmp(name, "vkGetPhysicalDeviceProperties2KHR"))) {
        PFN_properties2 real = (PFN_properties2)lvp_gipa(instance, name);
        if (!real) return NULL; /* the KHR name, without its extension */
        lvp_properties2 = real;
        return (PFN_void)properties2;
    }
    return lvp_gipa(instance, name);
}

EXPORT PFN_void vk_icdGetPhysicalDeviceProcAddr(void *instance, const char *name) {
    load();
    return ((PFN_gipa)dlsym(lvp, "vk_icdGetPhysicalDeviceProcAddr"))(instance, name);
}
