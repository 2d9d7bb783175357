"""vkdoctor: will Vulkan compute run correctly on this machine, and if not, why and what to do."""

__version__ = "0.1.0"
