"""The real load test, run as one child process by vkdoctor.children.loadtest (stdlib only, no Vulkan headers).

Reads one JSON request on stdin:
    {"logdir": DIR, "loader": "libvulkan.so.1", "good_drivers": [MANIFEST, ...],
     "targets": [{"index": N, "kind": "driver"|"layer", "name": ..., "manifest": ...,
                  "dlopen_name": ...}, ...],
     "suspects": [{"index": N, "manifest": ...}, ...]}
and, for each target in order, runs two steps:
  dlopen    dlopen(dlopen_name, RTLD_LAZY|RTLD_LOCAL) as the loader does; dlerror() kept verbatim
  instance  vkCreateInstance through the real loader restricted to this one driver
            (VK_DRIVER_FILES=<manifest>, implicit layers off), then the physical devices; for a
            layer: the layer alone (VK_LOADER_LAYERS_ENABLE=<name>) on top of the drivers that
            already passed
and, for a driver whose instance ran out of host memory or whose vkEnumeratePhysicalDevices
failed alone (a "suspect", also those listed in the request's "suspects"), once the drivers are
done:
  beside    vkCreateInstance and vkEnumeratePhysicalDevices with the suspect beside the drivers
            that gave a device, as an application loads them all: whether it takes their
            instance or their devices with it
Each step writes {"index", "step", "event": "begin"} before it starts and one "end" line when it
is over, unbuffered, so that when a driver kills or hangs this process the parent knows which
target was in flight. Whatever the libraries print (stdout and stderr) goes to DIR/<index>.<step>.log.
The loader re-reads the environment and rescans the manifests on every vkCreateInstance, so setting
the variables in this process between instances is enough.
"""

from __future__ import annotations

import ctypes
import os
import sys
import time

# nothing else at the top: in the child vkdoctor forks at its start (vkdoctor.speed.zygote) the drivers
# wait for this script's imports, and json (which imports re) or typing cost 10-25 ms each on a
# slow machine; the JSON lines are written by `_json_text`
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

PR_SET_PDEATHSIG = 1
SIGKILL = 9
RTLD_LAZY = 0x1
RTLD_LOCAL = 0x0
VK_SUCCESS = 0
VK_INCOMPLETE = 5
VK_ERROR_OUT_OF_HOST_MEMORY = -1
#: what the loader logs when no driver of the instance has a device (setup_loader_term_phys_devs)
NO_DEVICE_AT_ALL = "Failed to detect any valid GPUs"
STYPE_APPLICATION_INFO = 0
STYPE_INSTANCE_CREATE_INFO = 1
STYPE_DEVICE_QUEUE_CREATE_INFO = 2
STYPE_DEVICE_CREATE_INFO = 3
STYPE_PHYSICAL_DEVICE_PROPERTIES_2 = 1000059001
STYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES = 1000196000
API_1_0 = 1 << 22
API_1_1 = (1 << 22) | (1 << 12)
API_1_2 = (1 << 22) | (2 << 12)
DEVICE_TYPES = {0: "other", 1: "integrated-gpu", 2: "discrete-gpu", 3: "virtual-gpu", 4: "cpu"}

#: variables that would widen or narrow what one step loads; the request decides instead
STEP_OVERRIDES = (
    "VK_ICD_FILENAMES",
    "VK_ADD_DRIVER_FILES",
    "VK_LOADER_DRIVERS_SELECT",
    "VK_LOADER_DRIVERS_DISABLE",
    "VK_INSTANCE_LAYERS",
    "VK_LOADER_LAYERS_ENABLE",
    "VK_LOADER_LAYERS_DISABLE",
)


class ApplicationInfo(ctypes.Structure):
    _fields_ = (
        ("sType", ctypes.c_uint32),
        ("pNext", ctypes.c_void_p),
        ("pApplicationName", ctypes.c_char_p),
        ("applicationVersion", ctypes.c_uint32),
        ("pEngineName", ctypes.c_char_p),
        ("engineVersion", ctypes.c_uint32),
        ("apiVersion", ctypes.c_uint32),
    )


class InstanceCreateInfo(ctypes.Structure):
    _fields_ = (
        ("sType", ctypes.c_uint32),
        ("pNext", ctypes.c_void_p),
        ("flags", ctypes.c_uint32),
        ("pApplicationInfo", ctypes.POINTER(ApplicationInfo)),
        ("enabledLayerCount", ctypes.c_uint32),
        ("ppEnabledLayerNames", ctypes.c_void_p),
        ("enabledExtensionCount", ctypes.c_uint32),
        ("ppEnabledExtensionNames", ctypes.c_void_p),
    )


class PhysicalDeviceProperties(ctypes.Structure):
    # The head of VkPhysicalDeviceProperties; `rest` covers limits and sparse properties with room.
    _fields_ = (
        ("apiVersion", ctypes.c_uint32),
        ("driverVersion", ctypes.c_uint32),
        ("vendorID", ctypes.c_uint32),
        ("deviceID", ctypes.c_uint32),
        ("deviceType", ctypes.c_int32),
        ("deviceName", ctypes.c_char * 256),
        ("pipelineCacheUUID", ctypes.c_uint8 * 16),
        ("rest", ctypes.c_uint8 * 2048),
    )


class PhysicalDeviceDriverProperties(ctypes.Structure):
    _fields_ = (
        ("sType", ctypes.c_uint32),
        ("pNext", ctypes.c_void_p),
        ("driverID", ctypes.c_uint32),
        ("driverName", ctypes.c_char * 256),
        ("driverInfo", ctypes.c_char * 256),
        ("conformanceVersion", ctypes.c_uint8 * 4),
    )


class PhysicalDeviceProperties2(ctypes.Structure):
    _fields_ = (
        ("sType", ctypes.c_uint32),
        ("pNext", ctypes.c_void_p),
        ("properties", PhysicalDeviceProperties),
    )


class DeviceQueueCreateInfo(ctypes.Structure):
    _fields_ = (
        ("sType", ctypes.c_uint32),
        ("pNext", ctypes.c_void_p),
        ("flags", ctypes.c_uint32),
        ("queueFamilyIndex", ctypes.c_uint32),
        ("queueCount", ctypes.c_uint32),
        ("pQueuePriorities", ctypes.POINTER(ctypes.c_float)),
    )


class DeviceCreateInfo(ctypes.Structure):
    _fields_ = (
        ("sType", ctypes.c_uint32),
        ("pNext", ctypes.c_void_p),
        ("flags", ctypes.c_uint32),
        ("queueCreateInfoCount", ctypes.c_uint32),
        ("pQueueCreateInfos", ctypes.POINTER(DeviceQueueCreateInfo)),
        ("enabledLayerCount", ctypes.c_uint32),
        ("ppEnabledLayerNames", ctypes.c_void_p),
        ("enabledExtensionCount", ctypes.c_uint32),
        ("ppEnabledExtensionNames", ctypes.c_void_p),
        ("pEnabledFeatures", ctypes.c_void_p),
    )


def version_text(v: int) -> str:
    return f"{v >> 22 & 0x7F}.{v >> 12 & 0x3FF}.{v & 0xFFF}"


def driver_version_text(vendor: int, v: int) -> str:
    if vendor == 0x10DE:  # NVIDIA packs 10.8.8.6 bits
        return f"{v >> 22}.{v >> 14 & 0xFF}.{v >> 6 & 0xFF}.{v & 0x3F}"
    return version_text(v)


class Emitter:
    """One JSON document per line on a private copy of stdout; libraries cannot write into it."""

    def __init__(self) -> None:
        self.fd = os.dup(1)

    def __call__(self, **doc: object) -> None:
        os.write(self.fd, (_json_text(doc) + "\n").encode())


def _json_text(value: object) -> str:
    """`json.dumps(value)` for what the lines hold (dicts, lists, strings, numbers, booleans,
    None), by the C encoder of strings that json itself uses."""
    try:
        from _json import encode_basestring_ascii as text
    except ImportError:  # an interpreter without the C accelerator
        import json

        return json.dumps(value)
    if isinstance(value, str):
        return str(text(value))
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        special = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}
        return special.get(repr(value)) or float.__repr__(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{text(str(k))}: {_json_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_json_text(v) for v in value) + "]"
    import json

    return json.dumps(value)  # anything else: as json says it (or why it cannot)


class Output:
    """Sends fd 1 and 2 to one file per step, so each step's noise stays with it."""

    def __init__(self, logdir: str) -> None:
        self.logdir = logdir

    def to(self, name: str) -> None:
        fd = os.open(f"{self.logdir}/{name}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)


class Loader:
    """libvulkan.so.1 through ctypes, with the handful of entry points the load test needs."""

    def __init__(self, name: str) -> None:
        lib = ctypes.CDLL(name)
        self.create = lib.vkCreateInstance
        self.create.restype = ctypes.c_int32
        self.create.argtypes = (
            ctypes.POINTER(InstanceCreateInfo),
            ctypes.c_void_p,
            ctypes.POINTER(ctypes.c_void_p),
        )
        self.destroy = lib.vkDestroyInstance
        self.destroy.restype = None
        self.destroy.argtypes = (ctypes.c_void_p, ctypes.c_void_p)
        self.create_device = lib.vkCreateDevice
        self.create_device.restype = ctypes.c_int32
        self.create_device.argtypes = (
            ctypes.c_void_p,
            ctypes.POINTER(DeviceCreateInfo),
            ctypes.c_void_p,
            ctypes.POINTER(ctypes.c_void_p),
        )
        self.destroy_device = lib.vkDestroyDevice
        self.destroy_device.restype = None
        self.destroy_device.argtypes = (ctypes.c_void_p, ctypes.c_void_p)
        self.enumerate = lib.vkEnumeratePhysicalDevices
        self.enumerate.restype = ctypes.c_int32
        self.enumerate.argtypes = (
            ctypes.c_void_p,
            ctypes.POINTER(ctypes.c_uint32),
            ctypes.c_void_p,
        )
        self.properties = lib.vkGetPhysicalDeviceProperties
        self.properties.restype = None
        self.properties.argtypes = (ctypes.c_void_p, ctypes.POINTER(PhysicalDeviceProperties))
        self.proc_addr = lib.vkGetInstanceProcAddr
        self.proc_addr.restype = ctypes.c_void_p
        self.proc_addr.argtypes = (ctypes.c_void_p, ctypes.c_char_p)
        self.version = API_1_0
        #: whether the loader said its version (a broken implicit layer can make it fail)
        self.version_known = False
        enum_version = self.proc_addr(None, b"vkEnumerateInstanceVersion")
        if enum_version:
            out = ctypes.c_uint32(0)
            fn = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.POINTER(ctypes.c_uint32))(enum_version)
            if fn(ctypes.byref(out)) == VK_SUCCESS:
                self.version = out.value
                self.version_known = True

    def device_result(self, physical: int, begin: Callable[[str], None] | None = None) -> int:
        """vkCreateDevice with one queue of family 0, then vkDestroyDevice: where a layer or a
        driver that survives vkCreateInstance can still crash every program."""
        priority = ctypes.c_float(1.0)
        queue = DeviceQueueCreateInfo(
            sType=STYPE_DEVICE_QUEUE_CREATE_INFO,
            queueFamilyIndex=0,
            queueCount=1,
            pQueuePriorities=ctypes.pointer(priority),
        )
        info = DeviceCreateInfo(
            sType=STYPE_DEVICE_CREATE_INFO,
            queueCreateInfoCount=1,
            pQueueCreateInfos=ctypes.pointer(queue),
        )
        device = ctypes.c_void_p()
        result = int(self.create_device(physical, ctypes.byref(info), None, ctypes.byref(device)))
        if result == VK_SUCCESS:
            if begin is not None:
                begin("destroy-device")
            self.destroy_device(device, None)
        return result

    def instance_devices(
        self, begin: Callable[[str], None] | None = None, *, device: bool = True
    ) -> dict[str, object]:
        """vkCreateInstance, the physical devices, and vkCreateDevice on the first (`device`);
        `begin("enumerate")` and `begin("device")` say which call comes next, so that a driver
        or layer that ends the process in it is blamed for that call."""
        app = ApplicationInfo(
            sType=STYPE_APPLICATION_INFO,
            pApplicationName=b"vkdoctor-loadtest",
            pEngineName=b"vkdoctor",
            apiVersion=API_1_1 if self.version >= API_1_1 else API_1_0,
        )
        info = InstanceCreateInfo(
            sType=STYPE_INSTANCE_CREATE_INFO, pApplicationInfo=ctypes.pointer(app)
        )
        instance = ctypes.c_void_p()
        result = self.create(ctypes.byref(info), None, ctypes.byref(instance))
        if result != VK_SUCCESS:
            return {"result": result}
        try:
            if begin is not None:
                begin("enumerate")
            found = self._devices(instance)
            handles = found.pop("handles", [])
            if handles and device:
                if begin is not None:
                    begin("device")
                found["device_result"] = self.device_result(handles[0], begin)  # type: ignore[index]
            return {"result": result, **found}
        finally:
            if begin is not None:
                begin("destroy")
            self.destroy(instance, None)

    def _devices(self, instance: ctypes.c_void_p) -> dict[str, object]:
        count = ctypes.c_uint32(0)
        result = self.enumerate(instance, ctypes.byref(count), None)
        if result != VK_SUCCESS:
            return {"enumerate_result": result, "devices": []}
        handles = (ctypes.c_void_p * max(count.value, 1))()
        result = self.enumerate(instance, ctypes.byref(count), handles)
        if result not in (VK_SUCCESS, VK_INCOMPLETE):
            return {"enumerate_result": result, "devices": []}
        props2_addr = self.proc_addr(instance, b"vkGetPhysicalDeviceProperties2")
        props2 = None
        if props2_addr and self.version >= API_1_1:
            props2 = ctypes.CFUNCTYPE(
                None, ctypes.c_void_p, ctypes.POINTER(PhysicalDeviceProperties2)
            )(props2_addr)
        return {
            "enumerate_result": result,
            "devices": [self._device(h, props2) for h in handles[: count.value]],
            "handles": list(handles[: count.value]),
        }

    def _device(self, handle: int, props2: object) -> dict[str, object]:
        p = PhysicalDeviceProperties()
        self.properties(handle, ctypes.byref(p))
        device: dict[str, object] = {
            "name": p.deviceName.decode("utf-8", "replace"),
            "type": DEVICE_TYPES.get(p.deviceType, f"unknown ({p.deviceType})"),
            "api_version": version_text(p.apiVersion),
            "driver_version": driver_version_text(p.vendorID, p.driverVersion),
            "driver_version_raw": p.driverVersion,
            "vendor_id": f"0x{p.vendorID:04x}",
            "device_id": f"0x{p.deviceID:04x}",
        }
        if props2 is not None and p.apiVersion >= API_1_2:
            drv = PhysicalDeviceDriverProperties(sType=STYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES)
            full = PhysicalDeviceProperties2(
                sType=STYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                pNext=ctypes.cast(ctypes.pointer(drv), ctypes.c_void_p),
            )
            props2(handle, ctypes.byref(full))  # type: ignore[operator]
            device["driver_name"] = drv.driverName.decode("utf-8", "replace")
            device["driver_info"] = drv.driverInfo.decode("utf-8", "replace")
        return device


def libdl() -> ctypes.CDLL:
    """dlopen/dlerror from libc (glibc >= 2.34) or libdl.so.2; ctypes.CDLL itself forces RTLD_NOW."""
    for name in (None, "libdl.so.2"):
        lib = ctypes.CDLL(name)
        if hasattr(lib, "dlopen") and hasattr(lib, "dlerror"):
            lib.dlopen.restype = ctypes.c_void_p
            lib.dlopen.argtypes = (ctypes.c_char_p, ctypes.c_int)
            lib.dlerror.restype = ctypes.c_char_p
            lib.dlerror.argtypes = ()
            return lib
    raise OSError("no dlopen in libc or libdl.so.2")


def die_with_parent(parent: int | None) -> None:
    """SIGKILL this process when vkdoctor dies, so that a hanging driver does not outlive it."""
    libc = ctypes.CDLL(None)
    if hasattr(libc, "prctl"):
        libc.prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0)
    if parent is not None and os.getppid() != parent:
        os._exit(1)


def suspect(outcome: dict[str, object], log: str) -> bool:
    """Whether a driver that failed alone may break the other drivers' instances too: its
    vkCreateInstance ran out of host memory, or vkEnumeratePhysicalDevices failed for another
    reason than the loader's own "no device at all" (which a driver without hardware gets)."""
    if outcome["result"] == VK_ERROR_OUT_OF_HOST_MEMORY:
        return True
    if outcome["result"] != VK_SUCCESS or outcome.get("devices"):
        return False
    if outcome.get("enumerate_result") in (None, VK_SUCCESS):
        return False
    return NO_DEVICE_AT_ALL not in log


def beside(
    loader: Loader, suspects: list[tuple[int, str]], good: list[str], emit: Emitter, out: Output
) -> None:
    """Each suspect's manifest beside the drivers that gave a device, as an application loads
    them all: does the loader still give their devices?"""
    for index, manifest in suspects:
        if not good:
            emit(event="skip", index=index, step="beside", reason="no driver gave a device")
            continue
        drivers = [*good, manifest]
        isolate({"VK_DRIVER_FILES": ":".join(drivers), "VK_LOADER_LAYERS_DISABLE": "~implicit~"})
        emit(event="begin", index=index, step="beside")
        out.to(f"{index}.beside.log")
        start = time.perf_counter()
        try:
            outcome = loader.instance_devices(device=False)
        except Exception as exc:  # a bug of ours, not the driver's
            emit(event="error", index=index, step="beside", error=f"{type(exc).__name__}: {exc}")
            continue
        emit(
            event="end",
            index=index,
            step="beside",
            seconds=time.perf_counter() - start,
            drivers=drivers,
            **outcome,
        )
    suspects.clear()


def read_log(logdir: str, index: int) -> str:
    try:
        with open(f"{logdir}/{index}.instance.log", encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def isolate(env: dict[str, str]) -> None:
    for key in STEP_OVERRIDES:
        os.environ.pop(key, None)
    os.environ.update(env)


def main() -> int:
    import json

    return run(json.loads(sys.stdin.read()))


def run(request: dict[str, Any]) -> int:
    """The load test of `request`; also called in a child forked by vkdoctor (vkdoctor.speed.zygote)."""
    emit = Emitter()
    out = Output(request["logdir"])
    out.to("child.log")
    dl = libdl()
    die_with_parent(request.get("parent"))
    handles: list[int] = []
    isolate({"VK_DRIVER_FILES": "", "VK_LOADER_LAYERS_DISABLE": "~implicit~"})
    # the loader reads this once, when it is loaded: its ERROR lines land in each step's log and
    # say why an instance failed (e.g. "Could not get 'vkCreateInstance' via ...") or that no
    # driver had a device (`suspect`), so error must be among the user's own categories
    debug = [t for t in os.environ.get("VK_LOADER_DEBUG", "").split(",") if t]
    if not any(t in ("error", "all") for t in debug):
        os.environ["VK_LOADER_DEBUG"] = ",".join([*debug, "error"])
    try:
        loader: Loader | None = Loader(request.get("loader") or "libvulkan.so.1")
        hello: dict[str, object] = {
            "loader_version": version_text(loader.version) if loader.version_known else None
        }
    except (OSError, AttributeError) as exc:
        loader = None
        hello = {"loader_error": str(exc)}
    emit(event="hello", pid=os.getpid(), **hello)
    good: list[str] = list(request.get("good_drivers") or [])
    suspects: list[tuple[int, str]] = [
        (s["index"], s["manifest"]) for s in request.get("suspects") or ()
    ]
    for target in request["targets"]:
        index = target["index"]
        if target["kind"] != "driver" and suspects and loader is not None:
            beside(loader, suspects, good, emit, out)
        emit(event="begin", index=index, step="dlopen")
        out.to(f"{index}.dlopen.log")
        start = time.perf_counter()
        try:
            name = os.fsencode(target["dlopen_name"])
        except Exception as exc:  # a bug of ours (or data we cannot pass), not the driver's
            emit(event="error", index=index, step="dlopen", error=f"{type(exc).__name__}: {exc}")
            continue
        handle = dl.dlopen(name, RTLD_LAZY | RTLD_LOCAL)
        error = None if handle else (dl.dlerror() or b"").decode("utf-8", "replace")
        seconds = time.perf_counter() - start
        if handle:
            handles.append(handle)
        emit(event="end", index=index, step="dlopen", ok=bool(handle), error=error, seconds=seconds)
        if loader is None or not handle:
            continue
        if target["kind"] == "driver":
            isolate(
                {"VK_DRIVER_FILES": target["manifest"], "VK_LOADER_LAYERS_DISABLE": "~implicit~"}
            )
        elif good:
            isolate(
                {
                    "VK_DRIVER_FILES": ":".join(good),
                    "VK_LOADER_LAYERS_DISABLE": "~implicit~",
                    "VK_LOADER_LAYERS_ENABLE": target["name"],
                }
            )
        else:
            emit(
                event="skip",
                index=index,
                step="instance",
                reason="no driver passed to put the layer on",
            )
            continue
        emit(event="begin", index=index, step="instance")
        out.to(f"{index}.instance.log")
        start = time.perf_counter()
        try:
            outcome = loader.instance_devices(
                lambda step, i=index: emit(event="begin", index=i, step=step)
            )
        except Exception as exc:  # a bug of ours (or data we cannot read), not the driver's
            emit(event="error", index=index, step="instance", error=f"{type(exc).__name__}: {exc}")
            continue
        seconds = time.perf_counter() - start
        suspected = target["kind"] == "driver" and suspect(
            outcome, read_log(request["logdir"], index)
        )
        emit(
            event="end", index=index, step="instance", seconds=seconds, suspect=suspected, **outcome
        )
        if (
            target["kind"] == "driver"
            and outcome["result"] == VK_SUCCESS
            and outcome.get("devices")
        ):
            good.append(target["manifest"])
        elif suspected:
            suspects.append((index, target["manifest"]))
    if suspects and loader is not None:
        beside(loader, suspects, good, emit, out)
    emit(event="done")
    # Skip the libraries' exit handlers: a destructor crash would read as a failure of the last target.
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
