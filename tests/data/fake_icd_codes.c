/* A minimal Vulkan driver (ICD) whose vkCreateInstance or vkEnumeratePhysicalDevices returns the
 * VkResult named by an environment variable, read at each call:
 *   VKDOCTOR_FAKE_CREATE=N   vkCreateInstance returns N (0, or unset: it succeeds)
 *   VKDOCTOR_FAKE_ENUM=N     vkEnumeratePhysicalDevices returns N (unset: VK_SUCCESS, no device)
 *   VKDOCTOR_FAKE_ENUM_ON=fill   return N only when the loader asks for the handles (the count
 *                            query then says one device, when N is not 0); else on every call
 *   VKDOCTOR_FAKE_ENUM_END=segv|hang|exit   vkEnumeratePhysicalDevices raises SIGSEGV, never
 *                            returns, or calls exit(0) instead
 * It never has a device, so a successful enumeration reports none. Interface version 5. */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int VkResult;
typedef void (*PFN)(void);

static int env_code(const char *name) {
    const char *v = getenv(name);
    return v && *v ? atoi(v) : 0;
}

static VkResult create_instance(const void *info, const void *alloc, void **instance) {
    (void)info;
    (void)alloc;
    VkResult code = env_code("VKDOCTOR_FAKE_CREATE");
    if (code != 0) return code;
    *instance = calloc(1, 64); /* a dispatchable handle: the loader may write its first word */
    return *instance ? 0 : -1;
}

static void destroy_instance(void *instance, const void *alloc) {
    (void)alloc;
    free(instance);
}

static VkResult enumerate_devices(void *instance, uint32_t *count, void **devices) {
    (void)instance;
    const char *end = getenv("VKDOCTOR_FAKE_ENUM_END");
    if (end && !strcmp(end, "segv")) raise(SIGSEGV);
    if (end && !strcmp(end, "hang"))
        for (;;) pause();
    if (end && !strcmp(end, "exit")) exit(0);
    VkResult code = env_code("VKDOCTOR_FAKE_ENUM");
    const char *on = getenv("VKDOCTOR_FAKE_ENUM_ON");
    if (on && !strcmp(on, "fill")) {
        if (devices == NULL) {
            *count = code ? 1 : 0;
            return 0;
        }
        *count = 0;
        return code;
    }
    *count = 0;
    return code;
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

/* The entry points loader_icd_init_entries requires (core 1.0); none is reached without a device. */
static VkResult unreachable(void) { return -3; }

static const char *const required[] = {
    "vkGetPhysicalDeviceFeatures", "vkGetPhysicalDeviceFormatProperties",
    "vkGetPhysicalDeviceImageFormatProperties", "vkGetPhysicalDeviceProperties",
    "vkGetPhysicalDeviceQueueFamilyProperties", "vkGetPhysicalDeviceMemoryProperties",
    "vkGetDeviceProcAddr", "vkCreateDevice", "vkEnumerateDeviceExtensionProperties",
    "vkGetPhysicalDeviceSparseImageFormatProperties",
};

__attribute__((visibility("default"))) VkResult vk_icdNegotiateLoaderICDInterfaceVersion(uint32_t *v) {
    if (*v > 5) *v = 5;
    return 0;
}

__attribute__((visibility("default"))) void *vk_icdGetInstanceProcAddr(void *instance, const char *name) {
    (void)instance;
    if (!strcmp(name, "vkCreateInstance")) return (void *)create_instance;
    if (!strcmp(name, "vkDestroyInstance")) return (void *)destroy_instance;
    if (!strcmp(name, "vkEnumeratePhysicalDevices")) return (void *)enumerate_devices;
    if (!strcmp(name, "vkEnumerateInstanceExtensionProperties")) return (void *)enum_ext;
    if (!strcmp(name, "vkEnumerateInstanceVersion")) return (void *)enum_version;
    for (size_t i = 0; i < sizeof required / sizeof *required; i++)
        if (!strcmp(name, required[i])) return (void *)unreachable;
    return NULL;
}
