"""Merging nkidev's server into a client's MCP config file (`{"mcpServers": {...}}`) and taking it out again.

Only the `nkidev` entry is ever touched: the user's other servers and keys stay. The record kept in the
install manifest remembers the entry it replaced and the file's original bytes, so an uninstall restores
the file exactly when nobody edited it in between.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from nkidev.agents.clients import SERVER_NAME, mcp_entry
from nkidev.errors import NkiUsageError


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_bytes(path: Path) -> bytes | None:
    """The file's bytes, or None when it does not exist."""
    try:
        return path.read_bytes() if path.is_file() else None
    except OSError as e:
        raise NkiUsageError("err_not_writable", f"cannot read {path}: {e.strerror}", None) from None


def load_config(base: Path, rel: str) -> tuple[str | None, dict]:
    raw = read_bytes(base / rel)
    if raw is None:
        return None, {}
    text = raw.decode("utf-8", errors="replace")
    try:
        config = json.loads(text) if text.strip() else {}
    except ValueError as e:
        raise NkiUsageError("err_bad_client_config", f"{base / rel} is not valid JSON ({e})", None) from None
    if not isinstance(config, dict) or not isinstance(config.get("mcpServers", {}), dict):
        raise NkiUsageError("err_bad_client_config", f"{base / rel} must be a JSON object whose mcpServers is an object", None)
    return text, config


def dump_config(config: dict) -> bytes:
    return (json.dumps(config, indent=2) + "\n").encode("utf-8")


def plan_register(base: Path, rel: str, old: dict | None, force: bool, writes: dict) -> tuple[str, dict]:
    """Plan adding our server to the config at base/rel; return the action and the record to keep."""
    text, config = load_config(base, rel)
    servers = config.get("mcpServers", {})
    entry, current = mcp_entry(), servers.get(SERVER_NAME)
    if current == entry:
        action = "unchanged"
    elif current is None:
        action = "create"
    elif old and current == old.get("entry"):
        action = "update"
    else:
        action = "overwrite" if force else "conflict"
    record = old or {
        "config": rel,
        "server": SERVER_NAME,
        "previous": current,
        "created": text is None,
        "had_servers": "mcpServers" in config,
        "original": text,
    }
    record = {**record, "entry": entry}
    if action in ("create", "update", "overwrite"):
        new = dump_config({**config, "mcpServers": {**servers, SERVER_NAME: entry}})
        writes[rel] = new
        record["written_sha"] = sha256(new)
    elif "written_sha" not in record:
        record["written_sha"] = sha256((text or "").encode("utf-8"))
    return action, record


def plan_unregister(base: Path, record: dict, force: bool, writes: dict, deletes: list) -> str:
    """Give the MCP config back: the original bytes if untouched since, else the user's config minus our entry."""
    rel = record["config"]
    text, config = load_config(base, rel)
    servers = dict(config.get("mcpServers", {}))
    current, previous = servers.get(SERVER_NAME), record.get("previous")
    if current is None:
        return "missing"
    if current == previous:
        return "unchanged"  # the entry was there, identical, before nkidev installed
    if current != record["entry"] and not force:
        return "conflict"
    if record.get("original") is not None and sha256(text.encode("utf-8")) == record.get("written_sha"):
        writes[rel] = record["original"].encode("utf-8")
        return "restore"
    if previous is None:
        servers.pop(SERVER_NAME)
    else:
        servers[SERVER_NAME] = previous
    rest = {k: v for k, v in config.items() if k != "mcpServers"}
    if servers or record.get("had_servers"):
        rest["mcpServers"] = servers
    if record.get("created") and not rest:
        deletes.append(rel)
        return "remove"
    writes[rel] = dump_config(rest)
    return "update"
