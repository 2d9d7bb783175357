/* One vkCreateInstance + vkEnumeratePhysicalDevices through dlopen("libvulkan.so.1"); no Vulkan headers. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef struct { int32_t sType; const void *pNext; const char *app; uint32_t appv; const char *eng; uint32_t engv; uint32_t api; } AppInfo;
typedef struct { int32_t sType; const void *pNext; uint32_t flags; const AppInfo *app; uint32_t nl; const char *const *l; uint32_t ne; const char *const *e; } CreateInfo;
typedef int32_t (*CreateFn)(const CreateInfo *, const void *, void **);
typedef int32_t (*EnumFn)(void *, uint32_t *, void **);
typedef void (*DestroyFn)(void *, const void *);
typedef void *(*GipaFn)(void *, const char *);

int main(int argc, char **argv) {
    int portability = argc > 1 && strcmp(argv[1], "--portability") == 0;
    void *lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) { printf("dlopen libvulkan.so.1 failed: %s\n", dlerror()); return 3; }
    GipaFn gipa = (GipaFn)dlsym(lib, "vkGetInstanceProcAddr");
    CreateFn create = (CreateFn)gipa(NULL, "vkCreateInstance");
    AppInfo app = {0, NULL, "vkprobe", 1, "vkprobe", 1, (1u << 22) | (1u << 12)};
    const char *ext[] = {"VK_KHR_portability_enumeration"};
    CreateInfo ci = {1, NULL, portability ? 1u : 0u, &app, 0, NULL, portability ? 1u : 0u, portability ? ext : NULL};
    void *inst = NULL;
    int32_t r = create(&ci, NULL, &inst);
    printf("vkCreateInstance -> %d\n", r);
    fflush(stdout);
    if (r != 0) return 1;
    EnumFn en = (EnumFn)gipa(inst, "vkEnumeratePhysicalDevices");
    uint32_t n = 0;
    r = en(inst, &n, NULL);
    printf("vkEnumeratePhysicalDevices -> %d, count=%u\n", r, n);
    DestroyFn destroy = (DestroyFn)gipa(inst, "vkDestroyInstance");
    destroy(inst, NULL);
    return 0;
}
