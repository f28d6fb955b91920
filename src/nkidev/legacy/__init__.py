"""The legacy NKI Beta-1 API (`neuronxcc.nki`, Neuron SDK <= 2.26) as a front end over the current emulator.

`import neuronxcc.nki.language as nl` (under the shim) gives `nkidev.legacy.language`; its calls lower to
current `nki.isa` instructions, so hardware rules, traces and profiles are those of the current API. See
`api.py` for the decorators and harness entry points, `tile.py` for legacy tiles and `index.py` for
`nl.arange` / `nl.mgrid` index expressions and masks.
"""
