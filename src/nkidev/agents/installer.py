"""`nkidev install` / `nkidev uninstall`: put skills, agents and the MCP server registration where a client
looks, and take exactly those away again.

A manifest (`<client dir>/nkidev-install.json`) records the hash of every file written, the directories
created, files that were there before (to put back) and the MCP entry it replaced. Installing twice changes
nothing; a file that differs from what nkidev wrote (a user edit) is never overwritten or deleted without
`force`; MCP config files are merged, so the user's other servers stay.

Nothing is lost, even to a crash:
- before touching anything, a journal (`<client dir>/nkidev-install.journal.json`, written atomically and
  fsynced) records every path the change will write or delete with its current bytes, and the directories
  it will create. Every file is then replaced atomically (temp file + fsync + rename), the manifest last,
  and the journal is removed. A run that finds a journal was interrupted: it first rolls the files back to
  the journal's bytes (and removes the directories it created), then does what it was asked.
- a file whose bytes differ from what nkidev last wrote (edited since, or the user's own file) is copied to
  `<client dir>/nkidev-backups/<time>/<path>` before `force` overwrites or deletes it; the user's own files
  that an install replaces are also kept in the manifest, and uninstall puts them back.
"""

from __future__ import annotations

import base64
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from nkidev import __version__
from nkidev.agents.bundle import agents, skill_files, skill_names
from nkidev.agents.clients import SERVER_NAME, Client, Context, check_scope, get_client, mcp_entry, skills_dir_for
from nkidev.agents.mcpconfig import plan_register, plan_unregister, read_bytes, sha256
from nkidev.atomic import crash_point, owner_alive, remove_stale_temps, write_bytes
from nkidev.errors import NkiUsageError


@dataclass
class Plan:
    client: Client
    scope: str
    base: Path
    actions: list[dict]
    writes: dict[str, bytes]  # relative path -> new content
    deletes: list[str]
    manifest: dict | None = None  # the manifest to keep after an install (None after an uninstall)
    remove_dirs: list[str] = field(default_factory=list)  # directories to remove if empty (uninstall)
    manifest_written: bool = False
    recorded: dict[str, str] = field(default_factory=dict)  # path -> hash nkidev last wrote (from the old manifest)
    recovered: bool = False  # an interrupted earlier run was rolled back first
    backups: list[dict] = field(default_factory=list)  # {"path", "backup"}: edited files copied before being replaced

    def conflicts(self) -> list[str]:
        return [a["path"] for a in self.actions if a["action"] == "conflict"]

    def result(self, dry_run: bool) -> dict:
        counts: dict[str, int] = {}
        for a in self.actions:
            counts[a["action"]] = counts.get(a["action"], 0) + 1
        changed = bool(self.writes or self.deletes or self.manifest_written)
        return {
            "target": self.client.name,
            "scope": self.scope,
            "base": str(self.base),
            "dry_run": dry_run,
            "changed": changed,
            "summary": counts,
            "conflicts": self.conflicts(),
            "actions": self.actions,
            "recovered": self.recovered,
            "backups": self.backups,
            "mcp_server": {"name": SERVER_NAME, **mcp_entry()},
        }


# ---------------------------------------------------------------- public API


def install(target: str, scope: str = "project", *, dry_run: bool = False, force: bool = False, base: str | Path | None = None) -> dict:
    """Install nkidev's skills, agents and MCP registration for `target` (claude | kiro | cursor)."""
    client, scope, base = get_client(target), check_scope(scope), _base(scope, base)
    recovered = recover(client, base) if not dry_run else False
    plan = _plan_install(client, scope, base, force)
    plan.recovered = recovered
    return _finish(plan, dry_run, force, "install")


def uninstall(target: str, scope: str = "project", *, dry_run: bool = False, force: bool = False, base: str | Path | None = None) -> dict:
    """Remove exactly what `install` put there, restoring files and MCP entries it replaced."""
    client, scope, base = get_client(target), check_scope(scope), _base(scope, base)
    recovered = recover(client, base) if not dry_run else False
    plan = _plan_uninstall(client, scope, base, force)
    plan.recovered = recovered
    return _finish(plan, dry_run, force, "uninstall")


def _finish(plan: Plan, dry_run: bool, force: bool, verb: str) -> dict:
    conflicts = plan.conflicts()
    if conflicts and not dry_run and not force:
        shown = ", ".join(conflicts[:8]) + (f" and {len(conflicts) - 8} more" if len(conflicts) > 8 else "")
        raise NkiUsageError(
            "err_install_conflict",
            f"{verb} would {'overwrite' if verb == 'install' else 'delete'} {len(conflicts)} "
            f"file(s) that differ from what nkidev wrote: {shown} (under {plan.base})",
            f"look at the differences; rerun `nkidev {verb}` with --force to "
            f"{'overwrite' if verb == 'install' else 'delete'} them anyway; nothing was changed",
        )
    if not dry_run:
        _apply(plan)
    return plan.result(dry_run)


def _base(scope: str, base) -> Path:
    path = Path(base) if base is not None else (Path.cwd() if scope == "project" else Path.home())
    if not path.is_dir():
        raise NkiUsageError(
            "err_not_writable",
            f"install directory {path} does not exist or is not a directory",
            "create it first, or run the command from your project directory",
        )
    return path


# ---------------------------------------------------------------- planning


def _kind(client: Client, rel: str) -> str:
    if rel.startswith(client.skills_dir + "/"):
        return "skill"
    return "agent" if rel.startswith(client.agents_dir + "/") else "mcp"


def desired_files(client: Client, scope: str) -> dict[str, bytes]:
    """Relative path -> content of every skill and agent file for this client."""
    files: dict[str, bytes] = {}
    for name in skill_names():
        for rel, data in skill_files(name):
            files[f"{client.skills_dir}/{name}/{rel}"] = data
    ctx = Context(skills_dir_for(client, scope), mcp_entry())
    for agent in agents():
        files[f"{client.agents_dir}/{agent.name}{client.agent_suffix}"] = client.render(agent, ctx).encode("utf-8")
    return files


def _load_manifest(client: Client, base: Path) -> dict | None:
    data = read_bytes(base / client.manifest)
    if data is None:
        return None
    try:
        manifest = json.loads(data)
    except ValueError:
        manifest = None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
        raise NkiUsageError(
            "err_bad_client_config",
            f"{base / client.manifest} is not an nkidev install manifest",
            "restore it from a backup, or delete it and the installed files by hand",
        )
    return manifest


def _plan_install(client: Client, scope: str, base: Path, force: bool) -> Plan:
    old = _load_manifest(client, base) or {}
    old_files: dict = old.get("files", {})
    backups: dict = dict(old.get("backups", {}))
    actions, writes, deletes, files = [], {}, [], {}
    for rel, data in desired_files(client, scope).items():
        current = read_bytes(base / rel)
        if current is None:
            action = "create"
        elif current == data:
            action = "unchanged"
        elif old_files.get(rel) == sha256(current):
            action = "update"
        else:
            action = "overwrite" if force else "conflict"
        if current is not None and rel not in old_files and action != "conflict":
            backups[rel] = base64.b64encode(current).decode()  # the user's file: put it back on uninstall
        if action in ("create", "update", "overwrite"):
            writes[rel] = data
        files[rel] = sha256(data)
        actions.append({"path": rel, "kind": _kind(client, rel), "action": action})
    for rel in sorted(set(old_files) - set(files)):  # installed by an older nkidev, gone from this one
        action = _release(base, rel, old_files[rel], backups.pop(rel, None), writes, deletes, force)
        action = "keep" if action == "conflict" else action  # edited since: leave it, no longer managed
        actions.append({"path": rel, "kind": _kind(client, rel), "action": action})
    mcp_action, mcp_record = plan_register(base, client.mcp_config[scope], old.get("mcp"), force, writes)
    actions.append({"path": client.mcp_config[scope], "kind": "mcp", "action": mcp_action})
    manifest = {
        "tool": "nkidev",
        "version": __version__,
        "target": client.name,
        "scope": scope,
        "files": files,
        "backups": {k: backups[k] for k in sorted(backups) if k in files},
        "dirs": old.get("dirs", []),
        "mcp": mcp_record,
    }
    return Plan(client, scope, base, actions, writes, deletes, manifest, recorded=_recorded(old))


def _recorded(manifest: dict) -> dict[str, str]:
    """What nkidev last wrote, per path: the installed files and the MCP config."""
    out = dict(manifest.get("files", {}))
    mcp = manifest.get("mcp") or {}
    if mcp.get("config") and mcp.get("written_sha"):
        out[mcp["config"]] = mcp["written_sha"]
    return out


def _release(base: Path, rel: str, recorded: str, backup: str | None, writes: dict, deletes: list, force: bool) -> str:
    """Plan giving a file back: delete it (or restore the user's original) unless it was edited since."""
    current = read_bytes(base / rel)
    if current is None:
        return "missing"
    if sha256(current) != recorded and not force:
        return "conflict"
    if backup is not None:
        original = base64.b64decode(backup)
        if original != current:
            writes[rel] = original
        return "restore"
    deletes.append(rel)
    return "remove"


def _plan_uninstall(client: Client, scope: str, base: Path, force: bool) -> Plan:
    old = _load_manifest(client, base)
    if old is None:
        raise NkiUsageError(
            "err_not_installed",
            f"no nkidev install manifest at {base / client.manifest}, so nothing is known to remove",
            f"run `nkidev uninstall --target {client.name}` from the directory you installed into (or with the --scope you "
            "installed with); nothing was changed",
        )
    actions, writes, deletes = [], {}, []
    backups = old.get("backups", {})
    for rel, recorded in sorted(old["files"].items()):
        action = _release(base, rel, recorded, backups.get(rel), writes, deletes, force)
        actions.append({"path": rel, "kind": _kind(client, rel), "action": action})
    if old.get("mcp"):
        action = plan_unregister(base, old["mcp"], force, writes, deletes)
        actions.append({"path": old["mcp"]["config"], "kind": "mcp", "action": action})
    deletes.append(client.manifest)
    actions.append({"path": client.manifest, "kind": "manifest", "action": "remove"})
    return Plan(client, scope, base, actions, writes, deletes, remove_dirs=list(old.get("dirs", [])), recorded=_recorded(old))


# ---------------------------------------------------------------- applying


def _apply(plan: Plan) -> None:
    base = plan.base
    _check_writable(base, [*plan.writes, *plan.deletes, plan.client.manifest])
    try:
        created = _missing_parents(base, [*plan.writes, plan.client.manifest] if plan.manifest is not None else list(plan.writes))
        manifest_changes = plan.manifest is not None and read_bytes(base / plan.client.manifest) != _manifest_bytes(plan, created)
        if not (plan.writes or plan.deletes or manifest_changes or plan.remove_dirs):
            return  # nothing to change: no journal either
        touched = sorted(set(plan.writes) | set(plan.deletes) | ({plan.client.manifest} if plan.manifest is not None else set()))
        _backup_edits(plan, touched)
        _write_journal(plan, touched, created)
        for rel, data in plan.writes.items():
            _make_parents(base, rel)
            write_bytes(base / rel, data)
        for rel in plan.deletes:
            (base / rel).unlink(missing_ok=True)
            crash_point(f"delete {rel}")
        if plan.manifest is not None:
            _write_manifest(plan, created)
        crash_point("before the journal is removed")
        _journal(plan.client, base).unlink(missing_ok=True)  # done: the change is complete
        if plan.manifest is None:
            _remove_dirs(base, plan.remove_dirs)
    except OSError as e:
        raise NkiUsageError("err_not_writable", f"cannot write under {base}: {e}", None) from None


# ---------------------------------------------------------------- journal, backups and recovery


def _journal(client: Client, base: Path) -> Path:
    return base / client.manifest.replace(".json", ".journal.json")


def _write_journal(plan: Plan, touched: list[str], created: list[str]) -> None:
    """Record the bytes of every path about to change (None: absent) before anything changes."""
    entries = {}
    for rel in touched:
        current = read_bytes(plan.base / rel)
        entries[rel] = None if current is None else base64.b64encode(current).decode()
    journal = {"tool": "nkidev", "version": __version__, "target": plan.client.name, "files": entries, "created_dirs": created}
    path = _journal(plan.client, plan.base)
    _make_parents(plan.base, plan.client.manifest)
    write_bytes(path, (json.dumps(journal, indent=1, sort_keys=True) + "\n").encode("utf-8"))
    crash_point("journal written")


def recover(client: Client, base: Path) -> bool:
    """Roll back an install or uninstall that was interrupted (its journal is still there). True if one was.
    Temporary files of crashed atomic writes next to anything nkidev writes here are removed either way."""
    path = _journal(client, base)
    _remove_temps(client, base)
    data = read_bytes(path)
    if data is None:
        return False
    try:
        journal = json.loads(data)
        files = journal["files"]
    except (ValueError, KeyError, TypeError):
        # a journal is written atomically, so a torn one cannot exist; an unreadable one is not ours to act on
        raise NkiUsageError(
            "err_bad_client_config",
            f"{path} is not a readable nkidev install journal",
            "look at the files it lists by hand, then delete it and rerun the command",
        ) from None
    for rel, before in files.items():
        target = base / rel
        if before is None:
            target.unlink(missing_ok=True)
        else:
            original = base64.b64decode(before)
            if read_bytes(target) != original:
                _make_parents(base, rel)
                write_bytes(target, original)
    path.unlink()
    _remove_dirs(base, list(journal.get("created_dirs", [])))
    return True


def _remove_temps(client: Client, base: Path) -> None:
    manifest = read_bytes(base / client.manifest)
    try:
        listed = list(json.loads(manifest).get("files", {})) if manifest else []
    except (ValueError, AttributeError):
        listed = []
    for rel in [client.manifest, _journal(client, base).relative_to(base).as_posix(), *client.mcp_config.values(), *listed]:
        remove_stale_temps(base / rel)
    backups = base / client.home / "nkidev-backups"
    if backups.is_dir():
        for tmp in backups.rglob(".*.nkidev-tmp-*"):
            if not owner_alive(tmp):
                tmp.unlink(missing_ok=True)


def _backup_edits(plan: Plan, touched: list[str]) -> None:
    """Copy every file that differs from what nkidev last wrote into nkidev-backups/ before it is replaced or deleted."""
    stamp = None
    for rel in touched:
        if rel == plan.client.manifest:
            continue
        current = read_bytes(plan.base / rel)
        if current is None or sha256(current) == plan.recorded.get(rel) or rel not in plan.recorded:
            continue  # absent, exactly what nkidev wrote, or the user's own file (the manifest keeps that one)
        stamp = stamp or f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
        backup = f"{plan.client.home}/nkidev-backups/{stamp}/{rel}"
        _make_parents(plan.base, backup)
        write_bytes(plan.base / backup, current)
        plan.backups.append({"path": rel, "backup": backup})


def _manifest_bytes(plan: Plan, created: list[str]) -> bytes:
    manifest = {**plan.manifest, "dirs": sorted(set(plan.manifest["dirs"]) | set(created))}
    return (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode("utf-8")


def _write_manifest(plan: Plan, created: list[str]) -> None:
    data = _manifest_bytes(plan, created)
    plan.manifest["dirs"] = sorted(set(plan.manifest["dirs"]) | set(created))
    path = plan.base / plan.client.manifest
    current = read_bytes(path)
    if current != data:
        _make_parents(plan.base, plan.client.manifest)
        write_bytes(path, data)
        plan.manifest_written = True
        action = "create" if current is None else "update"
        plan.actions.append({"path": plan.client.manifest, "kind": "manifest", "action": action})


def _missing_parents(base: Path, rels: list[str]) -> list[str]:
    """The parent directories of base/rel that do not exist yet, relative to base (what the change will create)."""
    missing: set[str] = set()
    for rel in rels:
        parent = (base / rel).parent
        while parent != base and not parent.exists():
            missing.add(parent.relative_to(base).as_posix())
            parent = parent.parent
    return sorted(missing)


def _make_parents(base: Path, rel: str) -> list[str]:
    """Create the missing parent directories of base/rel; return the ones created, relative to base."""
    missing = []
    parent = (base / rel).parent
    while parent != base and not parent.exists():
        missing.append(parent)
        parent = parent.parent
    for directory in reversed(missing):
        directory.mkdir()
    return [d.relative_to(base).as_posix() for d in missing]


def _remove_dirs(base: Path, dirs: list[str]) -> None:
    """Remove the directories an install created, deepest first, when nothing else lives in them."""
    for rel in sorted(dirs, key=lambda d: d.count("/"), reverse=True):
        path = base / rel
        if path.is_dir() and not any(path.iterdir()):
            path.rmdir()


def _check_writable(base: Path, rels: list[str]) -> None:
    """Fail before touching anything when a target directory cannot be written."""
    for rel in rels:
        target = base / rel
        probe = target.parent
        while not probe.exists():
            probe = probe.parent
        if not probe.is_dir() or not os.access(probe, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
            raise NkiUsageError("err_not_writable", f"cannot write {target}: {probe} is not a writable directory", None)
