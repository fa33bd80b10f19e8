"""Shared fixtures: small scenarios, and a skip for tests that need the compiled core."""

from __future__ import annotations

from typing import Any

import pytest


def core_available() -> bool:
    try:
        from cclab import _core  # noqa: F401
    except ImportError:
        return False
    return True


needs_core = pytest.mark.skipif(not core_available(), reason="cclab._core is not built")


@pytest.fixture
def small() -> dict[str, Any]:
    """A 5-second version of the S0 25 ms path with 1 % loss."""
    return {
        "name": "small",
        "duration_s": "5s",
        "bottleneck": {"rate_bps": "64Mbps", "delay_ms": "12.5ms", "queue_pkts": 1000, "loss": 1e-2},
        "flows": [{"cc": "cubic", "mss_bytes": 948, "max_cwnd_pkts": 200}],
    }
