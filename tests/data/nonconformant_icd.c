/* A Vulkan driver (ICD) that is real lavapipe (or whatever NONCONFORMANT_ICD_REAL names) but
 * reports a conformance version of 0.0.0.0, as drivers that are not Vulkan conformant do (Mesa's
 * dozen, some vendor previews). wgpu hides such an adapter; the Vulkan loader lists it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int VkResult;
typedef void (*PFN)(void);
typedef PFN (*GetProcAddr)(void *, const char *);
typedef VkResult (*Negotiate)(uint32_t *);
typedef void (*GetProperties2)(void *, void *);

/* VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES, _VULKAN_1_2_PROPERTIES */
#define DRIVER_PROPERTIES 1000196000
#define VULKAN_1_2_PROPERTIES 52

typedef struct {
    int sType;
    void *pNext;
} Header;

/* the members of VkPhysicalDeviceDriverProperties up to conformanceVersion */
typedef struct {
    int sType;
    void *pNext;
    int driverID;
    char driverName[256];
    char driverInfo[256];
    uint8_t conformanceVersion[4];
} DriverProperties;

/* VkPhysicalDeviceVulkan12Properties: the same three members after sType and pNext */
typedef DriverProperties Vulkan12Properties;

static void *real_lib;
static GetProcAddr real_gipa;
static GetProperties2 real_props2, real_props2_khr;

static void *real_sym(const char *name) {
    if (!real_lib) {
        const char *path = getenv("NONCONFORMANT_ICD_REAL");
        real_lib = dlopen(path ? path : "libvulkan_lvp.so", RTLD_NOW | RTLD_LOCAL);
        if (!real_lib) {
            fprintf(stderr, "nonconformant_icd: cannot load the real driver: %s\n", dlerror());
            abort();
        }
    }
    return dlsym(real_lib, name);
}

static void zero_conformance(void *props) {
    for (Header *h = ((Header *)props)->pNext; h; h = h->pNext) {
        if (h->sType == DRIVER_PROPERTIES || h->sType == VULKAN_1_2_PROPERTIES)
            memset(((DriverProperties *)h)->conformanceVersion, 0, 4);
    }
}

static void props2(void *gpu, void *props) {
    real_props2(gpu, props);
    zero_conformance(props);
}

static void props2_khr(void *gpu, void *props) {
    real_props2_khr(gpu, props);
    zero_conformance(props);
}

__attribute__((visibility("default"))) VkResult vk_icdNegotiateLoaderICDInterfaceVersion(uint32_t *v) {
    Negotiate real = (Negotiate)real_sym("vk_icdNegotiateLoaderICDInterfaceVersion");
    return real ? real(v) : 0;
}

__attribute__((visibility("default"))) PFN vk_icdGetInstanceProcAddr(void *instance, const char *name) {
    if (!real_gipa) real_gipa = (GetProcAddr)real_sym("vk_icdGetInstanceProcAddr");
    PFN real = real_gipa(instance, name);
    if (real && !strcmp(name, "vkGetPhysicalDeviceProperties2")) {
        real_props2 = (GetProperties2)real;
        return (PFN)props2;
    }
    if (real && !strcmp(name, "vkGetPhysicalDeviceProperties2KHR")) {
        real_props2_khr = (GetProperties2)real;
        return (PFN)props2_khr;
    }
    return real;
}

__attribute__((visibility("default"))) PFN vk_icdGetPhysicalDeviceProcAddr(void *instance, const char *name) {
    GetProcAddr real = (GetProcAddr)real_sym("vk_icdGetPhysicalDeviceProcAddr");
    return real ? real(instance, name) : NULL;
}
