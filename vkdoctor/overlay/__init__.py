"""The safe LD_LIBRARY_PATH overlay: a private directory of symlinks to exactly the libraries a
driver chain lacks, proven harmless (it shadows nothing) and proven working (load test and probe).

Modules, one job each: `store` (the private, content-addressed directory), `ldpath` (the variable),
`archive` (libraries out of .deb/.pkg.tar.zst/.rpm files), `pkgcache` (package caches),
`candidates` (which file can supply a soname), `safety` (what must never be shadowed),
`plan` (putting them together).
"""
