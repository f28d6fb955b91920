"""Fails at import (line 4)."""

# nothing to import: the next line raises
raise RuntimeError("the task file is broken on purpose")
