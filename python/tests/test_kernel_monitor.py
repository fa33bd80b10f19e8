"""`cclab kernel monitor`: TCP_INFO of another socket through sock_diag, in the flows schema."""

from __future__ import annotations

import socket
import threading

from click.testing import CliRunner

from cclab.cli import cli
from cclab.infer import load_trace
from cclab.kernel.monitor import monitor


def test_monitor_samples_a_busy_connection(tmp_path):
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    cli_sock = socket.create_connection(("127.0.0.1", port))
    conn, _ = srv.accept()
    stop = threading.Event()

    def pump() -> None:
        buf = b"\0" * 65536
        while not stop.is_set():
            cli_sock.sendall(buf)

    def drain() -> None:
        while conn.recv(1 << 20):
            pass

    threads = [threading.Thread(target=pump, daemon=True), threading.Thread(target=drain, daemon=True)]
    for t in threads:
        t.start()
    try:
        df = monitor(0.5, 10, dport=port)
        out = tmp_path / "m.csv"
        r = CliRunner().invoke(cli, ["kernel", "monitor", "--dport", str(port), "--duration-s", "0.3", "-o", str(out)])
    finally:
        stop.set()
        cli_sock.close()
        for t in threads:
            t.join(5)
        conn.close()
        srv.close()
    assert len(df) >= 20 and df["flow"].nunique() == 1
    assert df["cwnd_pkts"].min() >= 1 and df["srtt_ms"].gt(0).all()
    assert df["delivered_bytes"].is_monotonic_increasing and df["delivered_bytes"].iloc[-1] > 1_000_000
    assert r.exit_code == 0, r.output
    assert len(load_trace(out)) >= 10  # the file reads back through the inference importers
