/* A Vulkan driver (ICD) that is a real one (lavapipe, or whatever SLOW_ICD_REAL names) with one
 * entry point that first sleeps, for the probe's timeout tests. Environment:
 *   SLOW_ICD_REAL   the real driver library to forward to
 *   SLOW_ICD_AT     vkCreateInstance, vkEnumeratePhysicalDevices, vkCreateDevice or vkQueueSubmit:
 *                   its first call sleeps for an hour, then goes on to the real driver
 *   SLOW_ICD_MODE   "loop": the sleep goes on after a signal (nanosleep again with what is left);
 *                   "once": a signal ends it (nanosleep's EINTR), as a driver's timed wait that
 *                   gives up early, and the call goes on
 *   SLOW_ICD_LOG    a file that gets the lines this driver writes to stderr, so that a test
 *                   knows what happened whatever the stderr tail kept
 * It writes "slow_icd: NAME sleeps" and "slow_icd: NAME woke early (signal)". */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int VkResult;
typedef void (*PFN)(void);
typedef PFN (*GetProcAddr)(void *, const char *);
typedef VkResult (*Negotiate)(uint32_t *);
typedef VkResult (*CreateInstance)(const void *, const void *, void **);
typedef VkResult (*EnumeratePhysicalDevices)(void *, uint32_t *, void **);
typedef VkResult (*CreateDevice)(void *, const void *, const void *, void **);
typedef VkResult (*QueueSubmit)(void *, uint32_t, const void *, uint64_t);

static void *real_lib;
static GetProcAddr real_gipa, real_gdpa;
static CreateInstance real_create_instance;
static EnumeratePhysicalDevices real_enumerate;
static CreateDevice real_create_device;
static QueueSubmit real_submit;
static int slept;

static void *real_sym(const char *name) {
    if (!real_lib) {
        const char *path = getenv("SLOW_ICD_REAL");
        real_lib = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
        if (!real_lib) {
            fprintf(stderr, "slow_icd: cannot load SLOW_ICD_REAL: %s\n", dlerror());
            abort();
        }
    }
    return dlsym(real_lib, name);
}

static void say(const char *name, const char *what) {
    fprintf(stderr, "slow_icd: %s %s\n", name, what);
    const char *log = getenv("SLOW_ICD_LOG");
    FILE *f = log ? fopen(log, "a") : NULL;
    if (f) {
        fprintf(f, "slow_icd: %s %s\n", name, what);
        fclose(f);
    }
}

static void maybe_sleep(const char *name) {
    const char *at = getenv("SLOW_ICD_AT");
    const char *mode = getenv("SLOW_ICD_MODE");
    if (slept || !at || strcmp(at, name) != 0) return;
    slept = 1;
    say(name, "sleeps");
    struct timespec left = {3600, 0};
    while (nanosleep(&left, &left) == -1 && errno == EINTR) {
        if (!mode || strcmp(mode, "loop") != 0) {
            say(name, "woke early (signal)");
            return;
        }
    }
}

static VkResult create_instance(const void *info, const void *alloc, void **instance) {
    maybe_sleep("vkCreateInstance");
    return real_create_instance(info, alloc, instance);
}

static VkResult enumerate(void *instance, uint32_t *count, void **devices) {
    maybe_sleep("vkEnumeratePhysicalDevices");
    return real_enumerate(instance, count, devices);
}

static VkResult create_device(void *gpu, const void *info, const void *alloc, void **device) {
    maybe_sleep("vkCreateDevice");
    return real_create_device(gpu, info, alloc, device);
}

static VkResult submit(void *queue, uint32_t count, const void *submits, uint64_t fence) {
    maybe_sleep("vkQueueSubmit");
    return real_submit(queue, count, submits, fence);
}

static PFN wrap(const char *name, PFN real) {
    if (!real) return NULL;
    if (!strcmp(name, "vkCreateInstance")) {
        real_create_instance = (CreateInstance)real;
        return (PFN)create_instance;
    }
    if (!strcmp(name, "vkEnumeratePhysicalDevices")) {
        real_enumerate = (EnumeratePhysicalDevices)real;
        return (PFN)enumerate;
    }
    if (!strcmp(name, "vkCreateDevice")) {
        real_create_device = (CreateDevice)real;
        return (PFN)create_device;
    }
    if (!strcmp(name, "vkQueueSubmit")) {
        real_submit = (QueueSubmit)real;
        return (PFN)submit;
    }
    return real;
}

static PFN get_device_proc_addr(void *device, const char *name) {
    return wrap(name, real_gdpa(device, name));
}

__attribute__((visibility("default"))) VkResult vk_icdNegotiateLoaderICDInterfaceVersion(uint32_t *v) {
    Negotiate real = (Negotiate)real_sym("vk_icdNegotiateLoaderICDInterfaceVersion");
    return real ? real(v) : 0;
}

__attribute__((visibility("default"))) PFN vk_icdGetInstanceProcAddr(void *instance, const char *name) {
    if (!real_gipa) real_gipa = (GetProcAddr)real_sym("vk_icdGetInstanceProcAddr");
    PFN real = real_gipa(instance, name);
    if (!strcmp(name, "vkGetDeviceProcAddr") && real) {
        real_gdpa = (GetProcAddr)real;
        return (PFN)get_device_proc_addr;
    }
    return wrap(name, real);
}

__attribute__((visibility("default"))) PFN vk_icdGetPhysicalDeviceProcAddr(void *instance, const char *name) {
    GetProcAddr real = (GetProcAddr)real_sym("vk_icdGetPhysicalDeviceProcAddr");
    return real ? real(instance, name) : NULL;
}
