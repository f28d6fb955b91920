"""Fails at import (line 4)."""
import numpy as np

raise RuntimeError("the task file is broken on purpose")

reference = np.exp
