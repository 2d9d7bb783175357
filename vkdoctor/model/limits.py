"""Resource limits (ulimit) small enough to stop a Vulkan driver or the probe from starting.

A child inherits its parent's limits: the load test and the probe run under the same ones as the
user's programs. The minimums were measured on lavapipe (Mesa 22.3.6, LLVM 15) with wgpu-py 0.32
(docs/codes/VKE010.md has the numbers); they are kept with a margin, since a GPU driver needs more.
"""

from __future__ import annotations

import resource

from vkdoctor.model.record import record
from vkdoctor.model.units import format_size

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB


@record(frozen=True, kw_only=True)
class LimitSpec:
    name: str
    #: bash's ulimit option
    option: str
    #: what the limit caps, in words
    what: str
    #: the least that Vulkan compute needs (bytes, or a count)
    minimum: int
    #: bytes (ulimit counts them in KiB) or a plain count
    in_bytes: bool


SPECS = (
    # the probe failed at 1.2 GB ("Not enough memory left"), passed at 1.6 GB; vulkaninfo
    # failed at 200 MB (ld.so: "failed to map segment") and crashed at 400 MB
    LimitSpec(name="RLIMIT_AS", option="-v", what="virtual memory", minimum=4 * GIB, in_bytes=True),
    # the probe crashed (SIGSEGV) at 200 MB, passed at 400 MB
    LimitSpec(name="RLIMIT_DATA", option="-d", what="data segment", minimum=1 * GIB, in_bytes=True),
    # Python itself crashes below about 100 KiB; thread stacks default to this size
    LimitSpec(name="RLIMIT_STACK", option="-s", what="stack", minimum=1 * MIB, in_bytes=True),
    # 8 stopped the probe's start (EMFILE) and the load test; 16 passed
    LimitSpec(name="RLIMIT_NOFILE", option="-n", what="open files", minimum=64, in_bytes=False),
)


@record(frozen=True, kw_only=True)
class Limit:
    spec: LimitSpec
    #: None: unlimited
    soft: int | None
    hard: int | None

    @property
    def tight(self) -> bool:
        return self.soft is not None and self.soft < self.spec.minimum

    def shown(self, value: int | None) -> str:
        if value is None:
            return "unlimited"
        return format_size(value) if self.spec.in_bytes else str(value)

    def ulimit_value(self, value: int | None) -> str:
        if value is None:
            return "unlimited"
        return str(value // KIB) if self.spec.in_bytes else str(value)

    def raisable(self) -> bool:
        """Whether this user can raise the soft limit far enough (up to the hard one)."""
        return self.hard is None or self.hard >= self.spec.minimum

    def remedy(self, *, root: bool = False) -> str:
        """How to raise it. `root`: this process may raise hard limits (CAP_SYS_RESOURCE)."""
        s = self.spec
        if self.raisable() or root:
            # the kernel caps open files at fs.nr_open: "unlimited" is refused even for root
            value = (
                self.ulimit_value(self.hard)
                if not root
                else "unlimited"
                if s.in_bytes
                else str(max(self.spec.minimum * 16, self.hard or 0))
            )
            both = "" if root else "-S "
            return (
                f"ulimit {both}{s.option} {value} in the shell (or job) that runs your Vulkan "
                "programs, before they start"
            )
        return (
            f"the hard limit is {self.shown(self.hard)} too, so only what starts this shell can "
            f"raise it: a systemd unit's Limit{_systemd(s.name)}=, /etc/security/limits.conf, "
            f"docker run --ulimit, or the CI runner's settings; then ulimit -S {s.option} "
            "unlimited"
        )

    def evidence(self) -> dict[str, object]:
        return {
            "limit": self.spec.name,
            "ulimit": f"ulimit {self.spec.option}",
            "soft": self.soft,
            "hard": self.hard,
            "minimum": self.spec.minimum,
        }


def _systemd(name: str) -> str:
    return {"RLIMIT_AS": "AS", "RLIMIT_DATA": "DATA", "RLIMIT_STACK": "STACK"}.get(name, "NOFILE")


def _value(v: int) -> int | None:
    return None if v == resource.RLIM_INFINITY else v


#: how running out of memory shows: ld.so's mmap failure, malloc's, wgpu's, Python's, and the
#: crashes of code that does not check (LLVM)
_MEMORY = (
    "failed to map segment",
    "cannot allocate memory",
    "not enough memory",
    "out of memory",
    "memoryerror",
    "errno 12",
)
_CRASH = ("sigsegv", "sigbus", "sigabrt", "segmentation fault", "bus error", "an abort")
SIGNS = {
    "RLIMIT_AS": _MEMORY + _CRASH,
    "RLIMIT_DATA": _MEMORY + _CRASH,
    "RLIMIT_STACK": _CRASH,
    "RLIMIT_NOFILE": ("too many open files", "errno 24", "emfile"),
}


def shows(limit: str, text: str) -> bool:
    """Whether a failure's text looks like what `limit` does when it is too small."""
    low = text.lower()
    return any(sign in low for sign in SIGNS.get(limit, ()))


#: capability(7) bit that lets a process raise its hard limits
CAP_SYS_RESOURCE = 24


def can_raise_hard(status: str | None = None) -> bool:
    """Whether this process holds CAP_SYS_RESOURCE (root in a container often does not)."""
    if status is None:
        try:
            with open("/proc/self/status") as f:
                status = f.read()
        except OSError:
            return False
    for line in status.splitlines():
        if line.startswith("CapEff:"):
            return bool(int(line.split()[1], 16) >> CAP_SYS_RESOURCE & 1)
    return False


def current() -> list[Limit]:
    """This process's limits, which its children (the load test, the probe) inherit."""
    out = []
    for spec in SPECS:
        soft, hard = resource.getrlimit(getattr(resource, spec.name))
        out.append(Limit(spec=spec, soft=_value(soft), hard=_value(hard)))
    return out


def out_of_memory() -> str | None:
    """The resource limit that ran this process out of memory, and how to raise it (None:
    no limit is tight, the memory is really gone)."""
    try:
        for lim in current():
            if lim.tight and lim.spec.in_bytes and lim.spec.name != "RLIMIT_STACK":
                return (
                    f"this process may use only {lim.shown(lim.soft)} ({lim.spec.name}, ulimit "
                    f"{lim.spec.option}), less than vkdoctor needs and far less than the Vulkan "
                    f"drivers need ({lim.shown(lim.spec.minimum)}); raise it: "
                    f"{lim.remedy(root=can_raise_hard())}."
                )
    except Exception:  # too little even to read the limits (CPython fails in many ways then)
        return (
            "a resource limit leaves it too little memory even to read the limits "
            "(`ulimit -a` shows them; `ulimit -S -v unlimited` lifts the address-space "
            "limit in the shell that runs your Vulkan programs)"
        )
    return None
