"""Progress of a long command as it runs: a rich progress bar on a terminal, plain result lines otherwise,
nothing at all with --json (stdout stays one JSON object).

Library functions report progress as plain dicts ({"event": "start", "cases": n}, {"event": "case_start",
"stage": ...}, {"event": "case", "line": ...}); the sandbox forwards them from the child while it runs, and
`Progress.event` turns each into output the moment it arrives.
"""

from __future__ import annotations

from nkidev.cli_common import console

NOTE_CHARS = 2000


class Progress:
    """Show events of one run. `bar` (default: stdout is a terminal) draws a transient bar below the lines."""

    def __init__(self, as_json: bool, title: str, bar: bool | None = None):
        self.as_json = as_json
        self.title = title
        self.bar = console.is_terminal if bar is None else bar
        self._rich = None
        self._task = None

    def __enter__(self) -> Progress:
        if not self.as_json and self.bar:
            from rich.progress import BarColumn, MofNCompleteColumn, SpinnerColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as RichProgress

            self._rich = RichProgress(
                SpinnerColumn(),
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=console,
                transient=True,
            )
            self._rich.start()
            self._task = self._rich.add_task(self.title, total=None)
        return self

    def __exit__(self, *exc) -> None:
        if self._rich is not None:
            self._rich.stop()
            self._rich = None

    def event(self, event: dict) -> None:
        if self.as_json:
            return
        kind = event.get("event")
        if kind == "case" and event.get("line"):
            console.print(event["line"], highlight=False, markup=False, soft_wrap=True)
        if self._rich is None:
            return
        if kind == "start" and event.get("cases"):
            self._rich.update(self._task, total=event["cases"])
        if event.get("stage"):
            self._rich.update(self._task, description=f"{self.title}: {event['stage']}")
        if kind == "case":
            self._rich.advance(self._task)


def run_isolated(title: str, function: str, kwargs: dict, limits, as_json: bool, label: str = "", warm: bool = False):
    """Run `function` in a sandbox child, showing its progress events; returns (result, job) once it has ended
    (the job keeps the child's captured stdout/stderr). The child is killed on any exit, Ctrl-C included."""
    from nkidev import sandbox

    with Progress(as_json, title) as progress:
        job = sandbox.start(function, kwargs, limits, progress.event, label=label or title, warm=warm)
        try:
            return job.result(), job
        finally:
            job.worker.kill()


def output_notes(stdout: str, stderr: str) -> list[str]:
    """Notes for what the isolated process printed outside the captured kernel runs (the task file's import, ...)."""
    notes = []
    for what, text in (("printed", stdout), ("wrote to stderr", stderr)):
        text = text.strip()
        if text:
            shown = text if len(text) <= NOTE_CHARS else text[:NOTE_CHARS] + "..."
            notes.append(f"the task file {what}:\n{shown}")
    return notes
