"""Find cclab's Rust binaries: ``$ENV_VAR``, else the workspace's target/release, else PATH."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

__all__ = ["BinaryMissing", "find_binary", "repo_root"]


class BinaryMissing(RuntimeError):
    """A cclab binary is not built or not on PATH."""


def repo_root() -> Path:
    return Path(__file__).resolve().parents[3]


def find_binary(name: str, env_var: str, build_hint: str) -> Path:
    """``$env_var``, else ``target/release/<name>`` in the workspace, else ``name`` on PATH."""
    env = os.environ.get(env_var)
    if env:
        p = Path(env)
        if p.is_file() and os.access(p, os.X_OK):
            return p
        raise BinaryMissing(f"{env_var}={env} is not an executable file")
    local = repo_root() / "target" / "release" / name
    if local.is_file() and os.access(local, os.X_OK):
        return local
    found = shutil.which(name)
    if found:
        return Path(found)
    raise BinaryMissing(f"{name} not found (looked at {local} and PATH): {build_hint}")
