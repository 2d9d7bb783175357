"""Facts: what the checks and the face share from one run, each computed once (`ctx.fact`).

- `vkdoctor.facts.loadtest`: the load test of this run, started early.
- `vkdoctor.facts.probe`: the probe's result in this run's context.
- `vkdoctor.facts.overlay`: how `check` plans and proves the overlay.
- `vkdoctor.facts.drivers`: the report's `drivers` list.
- `vkdoctor.facts.report`: the report of `check` and `drivers`.
"""
