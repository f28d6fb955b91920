import os

import pytest

# Tests must not depend on the caller's environment.
os.environ.pop("NEURON_PLATFORM_TARGET_OVERRIDE", None)
os.environ.pop("NKIDEV_EMULATE", None)
os.environ.pop("NKIDEV_NKI_VERSION", None)


@pytest.fixture(autouse=True)
def _fresh_context():
    """Every test starts with a fresh default emulator context (trn2)."""
    from nkidev.emulator import context

    context.set_current(None)
    yield
    context.set_current(None)
