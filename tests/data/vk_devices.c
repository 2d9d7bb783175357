/* What a Vulkan application gets from the real loader: one vkCreateInstance (API 1.1), then
 * vkEnumeratePhysicalDevices and each device's name. Prints one line:
 *   create=R enumerate=R devices=NAME|NAME|...
 * (enumerate=none when the instance failed). No Vulkan headers: libvulkan.so.1 is dlopened. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef int VkResult;
struct app_info {
    uint32_t sType;
    const void *pNext;
    const char *pApplicationName;
    uint32_t applicationVersion;
    const char *pEngineName;
    uint32_t engineVersion;
    uint32_t apiVersion;
};
struct create_info {
    uint32_t sType;
    const void *pNext;
    uint32_t flags;
    const struct app_info *pApplicationInfo;
    uint32_t enabledLayerCount;
    const char *const *ppEnabledLayerNames;
    uint32_t enabledExtensionCount;
    const char *const *ppEnabledExtensionNames;
};
/* the head of VkPhysicalDeviceProperties, with room for the rest */
struct properties {
    uint32_t apiVersion, driverVersion, vendorID, deviceID;
    int32_t deviceType;
    char deviceName[256];
    unsigned char rest[2048];
};

int main(void) {
    void *lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        printf("loader=%s\n", dlerror());
        return 2;
    }
    VkResult (*create)(const struct create_info *, const void *, void **) = dlsym(lib, "vkCreateInstance");
    VkResult (*enumerate)(void *, uint32_t *, void **) = dlsym(lib, "vkEnumeratePhysicalDevices");
    void (*props)(void *, struct properties *) = dlsym(lib, "vkGetPhysicalDeviceProperties");
    void (*destroy)(void *, const void *) = dlsym(lib, "vkDestroyInstance");
    struct app_info app = {0, NULL, "vk_devices", 0, NULL, 0, (1u << 22) | (1u << 12)};
    struct create_info info = {1, NULL, 0, &app, 0, NULL, 0, NULL};
    void *instance = NULL;
    VkResult r = create(&info, NULL, &instance);
    if (r != 0) {
        printf("create=%d enumerate=none devices=\n", r);
        return 0;
    }
    uint32_t count = 0;
    VkResult e = enumerate(instance, &count, NULL);
    void *devices[16];
    if (e == 0) {
        if (count > 16) count = 16;
        e = enumerate(instance, &count, devices);
    }
    printf("create=0 enumerate=%d devices=", e);
    if (e == 0 || e == 5) {
        for (uint32_t i = 0; i < count; i++) {
            struct properties p;
            memset(&p, 0, sizeof p);
            props(devices[i], &p);
            printf("%s%s", i ? "|" : "", p.deviceName);
        }
    }
    printf("\n");
    destroy(instance, NULL);
    return 0;
}
