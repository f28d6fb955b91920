"""The bundled skills pass the Agent Skills spec checks, and the code they teach runs on the emulator."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from nkidev import __version__
from nkidev.agents.bundle import SKILLS_DIR, skill_names
from nkidev.agents.frontmatter import parse
from nkidev.agents.skillcheck import validate_skill

SKILLS = ("nki-writing", "nki-debugging", "nki-profiling", "nki-profile-querying", "nki-optimizing", "nki-docs")


def test_the_five_skills_are_bundled():
    assert skill_names() == sorted(SKILLS)


@pytest.mark.parametrize("name", SKILLS)
def test_skill_passes_nkidev_spec_checks(name):
    assert validate_skill(SKILLS_DIR / name) == []


@pytest.mark.parametrize("name", SKILLS)
def test_skill_passes_the_reference_validator(name):
    skills_ref = pytest.importorskip("skills_ref", reason="skills-ref (PyPI) not installed")
    assert skills_ref.validate(SKILLS_DIR / name) == []


@pytest.mark.parametrize("name", SKILLS)
def test_skill_metadata_and_description(name):
    meta, body = parse((SKILLS_DIR / name / "SKILL.md").read_text(encoding="utf-8"))
    assert set(meta) <= {"name", "description", "license", "compatibility", "metadata", "allowed-tools"}
    assert meta["metadata"] == {"project": "nkidev", "version": __version__}
    assert "Use when" in meta["description"], "the description must say when to use the skill"
    assert len(body.splitlines()) < 500


def _broken(tmp_path: Path, name: str, frontmatter: str, body: str = "# Body\n") -> Path:
    skill = tmp_path / name
    skill.mkdir()
    (skill / "SKILL.md").write_text(f"---\n{frontmatter}\n---\n{body}", encoding="utf-8")
    return skill


@pytest.mark.parametrize(
    "dirname,frontmatter,expected",
    [
        ("a", "name: b\ndescription: d", "must equal the skill name"),
        ("Bad", "name: Bad\ndescription: d", "must be lowercase"),
        ("a--b", "name: a--b\ndescription: d", "'--'"),
        ("a", "name: a\ndescription: d\nmodel: opus", "unexpected frontmatter fields: model"),
        ("a", "name: a", "missing required field: description"),
        ("a", "name: a\ndescription: " + "x" * 1025, "limit is 1024"),
        ("a", "name: a\ndescription: has <tags>", "'<' or '>'"),
        ("a", "name: a\ndescription: d\ncompatibility: " + "x" * 501, "limit is 500"),
        ("a", "name: a\ndescription: d\nmetadata: flat", "map of string keys"),
        ("a" * 65, "name: " + "a" * 65 + "\ndescription: d", "longer than 64"),
    ],
)
def test_validator_catches_spec_violations(tmp_path, dirname, frontmatter, expected):
    problems = validate_skill(_broken(tmp_path, dirname, frontmatter))
    assert any(expected in p for p in problems), problems


def test_validator_checks_body_length_and_references(tmp_path):
    skill = _broken(tmp_path, "a", "name: a\ndescription: d", "see [x](references/missing.md)\n" + "line\n" * 500)
    problems = validate_skill(skill)
    assert any("references/missing.md" in p for p in problems)
    assert any("keep it under 500" in p for p in problems)
    assert validate_skill(tmp_path / "nope") == [f"not a directory: {tmp_path / 'nope'}"]


ASSETS = sorted((SKILLS_DIR / "nki-writing" / "assets").glob("*.py"))


@pytest.mark.parametrize("path", ASSETS, ids=lambda p: p.name)
def test_writing_skill_examples_pass_on_the_emulator(path, tmp_path):
    """The kernels a skill hands to agents as templates must be correct current-API NKI."""
    from nkidev.emulator.jit import simulate
    from nkidev.taskfile import load_task

    copy = tmp_path / path.name
    shutil.copy(path, copy)
    task = load_task(copy)
    (kernel,) = task.kernels.values()
    tol = task.attr("TOLERANCE")
    for case in task.attr("cases")():
        out = np.asarray(simulate(kernel)(*case), dtype=np.float64)
        assert np.allclose(out, task.attr("reference")(*case), **tol), path.name
