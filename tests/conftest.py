import os

import pytest

# Tests must not depend on the caller's environment.
os.environ.pop("NEURON_PLATFORM_TARGET_OVERRIDE", None)
os.environ.pop("NKIDEV_EMULATE", None)
os.environ.pop("NKIDEV_NKI_VERSION", None)
os.environ.pop("NKIDEV_CALIBRATION", None)  # a user's calibration must not change the cost numbers tests check
os.environ.setdefault("NKIDEV_CONFIG", os.devnull)  # nor their ~/.config/nkidev/config.toml
os.environ.setdefault("NKIDEV_HELP_CACHE", "0")  # `nkidev --help` subprocesses must not write the user's ~/.cache


def _has_device() -> bool:
    """A Trainium device and the Neuron SDK: /dev/neuron0 and neuronx-cc on PATH."""
    import shutil

    return os.path.exists("/dev/neuron0") and shutil.which("neuronx-cc") is not None


def pytest_collection_modifyitems(config, items):
    if _has_device():
        return
    skip = pytest.mark.skip(reason="needs a Trainium device with the Neuron SDK (@pytest.mark.hw)")
    for item in items:
        if "hw" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _fresh_context():
    """Every test starts with a fresh default emulator context (trn2)."""
    from nkidev.emulator import context

    context.set_current(None)
    yield
    context.set_current(None)
