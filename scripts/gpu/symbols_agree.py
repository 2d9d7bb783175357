"""On the GPU machine: VKL006 answered by the load test's RTLD_NOW dlopen (vkdoctor.facts.symbols)
and by the symbol tables alone must be the same; prints each target's binding and exits 1 if not."""

import os

from vkdoctor.closures.targets import undefined_by_target
from vkdoctor.context import Context
from vkdoctor.facts import symbols
from vkdoctor.facts.loadtest import load_test, started_load_test

ctx = Context(env=dict(os.environ))
ctx.fact(started_load_test)
bound = symbols.bound_at_dlopen(ctx)
for o in ctx.fact(load_test).outcomes:
    print(
        f"{o.target.name}: dlopen {o.dlopen}, bound {o.bound}, tables not read: {o.target in bound}"
    )
tables = {(t.name, tuple(u.name for u in found)) for t, _, found in undefined_by_target(ctx)}
answered = {(t.name, tuple(u.name for u in f)) for t, _, f in symbols.undefined_by_target(ctx)}
print("the tables say:", sorted(tables))
print("answered:", sorted(answered))
raise SystemExit(0 if tables == answered else 1)
