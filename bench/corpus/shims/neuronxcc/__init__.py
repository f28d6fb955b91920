"""Corpus-harness stand-in for the Neuron compiler package's Python names that nki-library imports:
neuronxcc.nki.typing (type hints, mapped to the emulator's nki.typing) and
neuronxcc.starfish.support.dtype.static_cast (mapped to the neuron_dtypes stand-in)."""

import sys
import types

import neuron_dtypes
import nki.typing as _nt

nki = types.ModuleType("neuronxcc.nki")
nki.__path__ = []
nki.typing = _nt
sys.modules["neuronxcc.nki"] = nki
sys.modules["neuronxcc.nki.typing"] = _nt
_st = types.ModuleType("neuronxcc.starfish")
_st.__path__ = []
_sup = types.ModuleType("neuronxcc.starfish.support")
_sup.__path__ = []
_dt = types.ModuleType("neuronxcc.starfish.support.dtype")
_dt.__dict__.update({k: v for k, v in vars(neuron_dtypes).items() if not k.startswith("__")})
_st.support, _sup.dtype = _sup, _dt
sys.modules.update({"neuronxcc.starfish": _st, "neuronxcc.starfish.support": _sup, "neuronxcc.starfish.support.dtype": _dt})
