"""An S3-compatible server (moto, in server mode) on loopback for the object-storage tests: the fixtures
``s3_endpoint`` (session) and ``bucket``; a test module or conftest imports them.

The server is a separate process listening on 127.0.0.1 on a free port, as a real object store is reached: parvec
talks to it through s3fs over HTTP, with credentials and the endpoint in the environment
(``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_ENDPOINT_URL``), the way a user points parvec at MinIO,
Ceph or any S3-compatible store.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("s3fs")
pytest.importorskip("moto.server")

_ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_SESSION_TOKEN": "testing", "AWS_SECURITY_TOKEN": "testing"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """The URL of a moto S3 server on 127.0.0.1, with the environment set for s3fs to reach it."""
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"the moto S3 server did not start on port {port}")
            time.sleep(0.1)
    saved = {k: os.environ.get(k) for k in [*_ENV, "AWS_ENDPOINT_URL"]}
    os.environ.update(_ENV, AWS_ENDPOINT_URL=endpoint)
    try:
        yield endpoint
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def s3_client() -> Any:
    """An s3fs filesystem for the test server (the environment :func:`s3_endpoint` set), not from s3fs's cache."""
    import s3fs

    return s3fs.S3FileSystem(skip_instance_cache=True)


@pytest.fixture()
def bucket(s3_endpoint: str) -> str:
    """A new empty bucket on the test S3 server; its name."""
    name = f"parvec-{uuid.uuid4().hex[:12]}"
    s3_client().mkdir(name)
    return name
