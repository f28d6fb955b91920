"""Start-up cost: the .pth hook and `nkidev --help` import none of the heavy modules (checked in fresh interpreters)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HOOK = (ROOT / "src" / "nkidev_shim.pth").read_text().strip()
HEAVY = ("numpy", "ml_dtypes", "duckdb", "pyarrow", "typer", "rich", "threading", "importlib.abc", "nkidev", "nkidev.emulator")

# Run the shipped hook line in an interpreter without site-packages (-S) so no installed copy runs first,
# then report which heavy modules are loaded and whether `import nki` still falls back to the emulator.
PROBE = f"""
import json, sys
{HOOK}
{HOOK}
loaded = [m for m in {HEAVY!r} if m in sys.modules]
finders = [type(f).__module__ for f in sys.meta_path]
import nki
after = [type(f).__module__ for f in sys.meta_path]
print(json.dumps({{"loaded": loaded, "finders": finders, "after": after, "nki": nki.__name__}}))
"""


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NKIDEV_")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), *sys.path[1:]])
    return env | extra


def test_the_startup_hook_imports_nothing_heavy_and_nki_still_resolves():
    out = subprocess.run([sys.executable, "-S", "-c", PROBE], capture_output=True, text=True, env=_env(), check=True, timeout=60)
    probe = json.loads(out.stdout)
    # the hook line ran twice (as site runs a venv's .pth files): two stand-ins, and not even nkidev imported
    assert probe["loaded"] == []
    assert probe["finders"].count("nkidev_shim") == 2
    assert probe["nki"] == "nkidev.emulator.nki_api"  # no real nki installed: the fallback resolved it
    assert probe["after"].count("nkidev.startup") == 1 and "nkidev_shim" not in probe["after"]  # the fallback took their place


def test_the_hook_forces_emulation_with_the_env_var_without_importing_the_emulator():
    code = f"import json, sys\n{HOOK}\nprint(json.dumps([sys.meta_path[0].fallback, 'nkidev.emulator' in sys.modules]))"
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, env=_env(NKIDEV_EMULATE="1"), check=True)
    assert json.loads(out.stdout) == [False, False]


CLI_HEAVY = ("numpy", "duckdb", "pyarrow", "ml_dtypes", "mcp", "threadpoolctl", "nkidev.emulator.jit", "nkidev.validate.api")


def test_cli_help_lists_every_command_without_numpy_duckdb_or_the_emulator():
    code = (
        "import json, sys, contextlib, io\n"
        "sys.argv = ['nkidev', '--help']\n"
        "buf = io.StringIO()\n"
        "with contextlib.redirect_stdout(buf), contextlib.suppress(SystemExit):\n"
        "    from nkidev.cli import main; main()\n"
        f"heavy = [m for m in {CLI_HEAVY!r} if m in sys.modules]\n"
        "from nkidev.cli import app\n"
        "names = [c.name or c.callback.__name__ for c in app.registered_commands] + [g.name for g in app.registered_groups]\n"
        "print(json.dumps({'heavy': heavy, 'names': names, 'help': buf.getvalue()}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(COLUMNS="200"), check=True, timeout=60)
    probe = json.loads(out.stdout)
    assert probe["heavy"] == []
    assert len(probe["names"]) >= 10
    missing = [n for n in probe["names"] if n.replace("_", "-") not in probe["help"]]
    assert missing == []
