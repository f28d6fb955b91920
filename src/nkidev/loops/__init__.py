"""nkidev.loops: the loops that chain the stages and keep the best correct kernel.

- `tune.tune(spec, ...)`: a deterministic search over a kernel's TUNABLE keyword arguments.
- `optimize.optimize(spec, provider=..., ...)`: propose -> gate -> profile -> analyze -> keep best, until a target.
- `debug.debug(spec, provider=...)`: ask for fixes until the kernel validates.
- `evaluate.evaluate_item(item)`: the unit of work every loop maps over an executor (`nkidev.executors`).
"""
