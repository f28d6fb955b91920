"""CLI commands of nkidev.validate (registered by nkidev.cli)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add this package's commands to the nkidev app."""
