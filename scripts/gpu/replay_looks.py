"""Which looks of the runs kept for replay (vkdoctor.speed.replay) see something else now: the
files or folders whose change stops a replay on this machine."""

from __future__ import annotations

import os

from vkdoctor.cachedir import cache_home
from vkdoctor.speed import inputs, replay

store = replay._store(cache_home(os.environ))
entries = store._load() if store is not None else {}
print(f"{len(entries)} kept run(s)")
for entry in entries.values():
    changed = [path for how, path, seen in entry["looks"] if inputs.observe((how, path)) != seen]
    print(f"{len(entry['looks'])} looks, {len(changed)} changed: {changed[:15]}")
