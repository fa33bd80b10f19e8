"""``cclab kernel``: housekeeping of the real-kernel backend (namespaces, links)."""

from __future__ import annotations

import sys

import click
from rich.console import Console

__all__ = ["kernel"]

out = Console()
err = Console(stderr=True)


@click.group(
    epilog="""\b
Examples:
  sudo cclab kernel clean        # remove cclab- namespaces left by a killed run
"""
)
def kernel() -> None:
    """The real-kernel backend (network namespaces behind the cclab-link emulator)."""


@kernel.command(
    epilog="""\b
Examples:
  sudo cclab kernel clean
"""
)
def clean() -> None:
    """Remove every cclab- network namespace and run record left behind (needs root)."""
    from .kernel.netns import KernelUnavailable
    from .kernel.netns import clean as do_clean

    try:
        removed = do_clean()
    except KernelUnavailable as e:
        err.print(f"[bold red]error:[/] {e}", highlight=False)
        sys.exit(2)
    out.print(f"removed {len(removed)} namespace(s)" + (": " + ", ".join(removed) if removed else ""))
