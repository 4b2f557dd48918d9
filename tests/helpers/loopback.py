"""A static-file HTTP server on loopback for tests of downloads (``Range``, faults, a request log).

:class:`FaultyServer` holds switchable faults (reset per test): drop the connection after some
bytes, corrupt a byte, ignore ``Range``, answer 500 a number of times. It records every request so
tests can check what was asked and sent. :func:`serving` runs one over a folder::

    with serving(tmp_path) as server:
        fetch(RemoteFile(url=f"{server.url}/a.tar.gz", path="a.tar.gz"), data_dir=...)
"""

from __future__ import annotations

import contextlib
import http.server
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Request:
    path: str
    range: str | None
    status: int
    sent: int = 0


@dataclass
class FaultyServer:
    """Switchable faults (reset per test) and the log of requests served."""

    root: Path
    url: str = ""
    drop_after: int | None = None  # close the connection after this many body bytes...
    drops: int = 1_000_000  # ...for this many responses
    corrupt: bool = False  # flip one byte of every body
    ignore_range: bool = False
    fail_500: int = 0  # answer 500 this many times first
    log: list[Request] = field(default_factory=list)

    def reset(self) -> None:
        self.drop_after, self.drops, self.corrupt, self.ignore_range, self.fail_500 = None, 1_000_000, False, False, 0
        self.log.clear()

    def sent(self, path: str) -> int:
        return sum(r.sent for r in self.log if r.path == "/" + path)


class Handler(http.server.BaseHTTPRequestHandler):
    timeout = 5  # a stuck client cannot hold a server thread

    def log_message(self, *args):  # quiet
        pass

    def do_GET(self):  # noqa: N802 - http.server's naming
        state: FaultyServer = self.server.state  # type: ignore[attr-defined]
        range_header = self.headers.get("Range")
        record = Request(self.path, range_header, 0)
        state.log.append(record)
        if state.fail_500 > 0:
            state.fail_500 -= 1
            return self._status(record, 500)
        path = state.root / self.path.lstrip("/")
        if ".." in self.path or not path.is_file():
            return self._status(record, 404)
        data = path.read_bytes()
        if state.corrupt:
            data = data[:100] + bytes([data[100] ^ 0xFF]) + data[101:]
        start = 0
        match = re.fullmatch(r"bytes=(\d+)-", range_header or "")
        if match and not state.ignore_range:
            start = int(match.group(1))
            if start >= len(data):
                record.status = 416
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(data)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            record.status = 206
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            record.status = 200
            self.send_response(200)
        body = data[start:]
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if state.drop_after is not None and state.drops > 0:
            state.drops -= 1
            body = body[: state.drop_after]
        self.wfile.write(body)
        record.sent = len(body)
        self.wfile.flush()
        self.close_connection = True

    def _status(self, record: Request, status: int):
        record.status = status
        self.send_error(status)



@contextlib.contextmanager
def serving(root: Path, *, watchdog_s: float = 120.0) -> Iterator[FaultyServer]:
    """Serve the files under ``root`` on ``http://127.0.0.1:<free port>`` until the block ends
    (or ``watchdog_s`` pass, so a test that never tears down cannot leave it running)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.state = FaultyServer(Path(root), url=f"http://127.0.0.1:{server.server_address[1]}")
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    watchdog = threading.Timer(watchdog_s, server.shutdown)
    watchdog.daemon = True
    thread.start()
    watchdog.start()
    try:
        yield server.state
    finally:
        watchdog.cancel()
        server.shutdown()
        server.server_close()
        thread.join(5)
