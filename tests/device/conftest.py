"""The fake Neuron SDK on PATH for the device tests (tests/device/fake_sdk.py), with its switches cleared."""

import pytest

from tests.device import fake_sdk


@pytest.fixture
def fake_path(tmp_path, monkeypatch):
    tools = fake_sdk.install(tmp_path / "sdk-bin")
    monkeypatch.setenv("PATH", fake_sdk.path_with(tools))
    for var in ("NKIDEV_NEURONX_CC", "NKIDEV_NEURON_EXPLORER", "FAKE_COMPILE_FAIL", "FAKE_DEVICE_OFFSET", "FAKE_DEVICE_CALIBRATION"):
        monkeypatch.delenv(var, raising=False)
    return tools
