"""bench/analyze_large.py --profile DIR times an existing profile directory (a real child process)."""

import re
import subprocess
import sys
from pathlib import Path

from .fixtures import make_real_profile as fixture

ROOT = Path(__file__).resolve().parents[2]


def test_profile_option_times_the_given_directory_and_reports_its_findings():
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "analyze_large.py"), "--profile", str(fixture.OUT), "--repeat", "2"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    timing = re.search(r"analyze (\S+): CPU min ([\d.]+) s, median ([\d.]+) s; wall min ([\d.]+) s, median ([\d.]+) s \(2 runs", out)
    assert timing, out
    assert timing.group(1) == str(fixture.OUT)
    cpu_min, cpu_median, wall_min, wall_median = map(float, timing.groups()[1:])
    assert 0 < cpu_min <= cpu_median and 0 < wall_min <= wall_median
    assert "bottleneck Tensor, 7 findings: te_idle@mm_real.py:21, dma_efficiency@mm_real.py:21" in out
    assert "built " not in out  # nothing synthetic was built
