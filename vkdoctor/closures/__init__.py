"""Closures: what ld.so maps for each library the Vulkan loader will dlopen, as run-wide facts.

Below the checks, the overlay and the package rules, which all read the same resolutions
(`ctx.fact`), so each target is resolved once per run:

- `vkdoctor.closures.targets`: the load targets, each target's resolution, and the strong
  undefined symbols of each resolvable target's closure.
- `vkdoctor.closures.versions`: the copies that win and lack symbol versions (VKL003's fact),
  with the fix for each.
"""
