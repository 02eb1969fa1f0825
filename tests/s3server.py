"""A real S3 API server on loopback for the tests: moto's ThreadedMotoServer, plus a small fault proxy.

Use from a test module::

    from s3server import s3, fault_proxy      # pytest fixtures (module imports register them)

``s3`` (session scope) starts moto on 127.0.0.1 once and gives an :class:`S3` helper: ``endpoint``,
``storage_options`` (for kafkafmt / s3fs), ``client`` (boto3), ``bucket()`` (a fresh bucket),
``upload_dir``, ``put``. ``fault_proxy`` (function scope) puts a :class:`FaultProxy` in front of
moto: ``proxy.storage_options`` point at it; ``proxy.fail(n, status)``, ``proxy.drop(n)``,
``proxy.delay = seconds``, ``proxy.log`` (method, path, range) of every request it forwarded.

Needs ``moto[server]``, ``boto3`` and ``s3fs`` (the ``test`` extra).
"""
from __future__ import annotations

import http.client
import http.server
import os
import socketserver
import threading
import time
import uuid

import pytest

KEY, SECRET, REGION = "testing-key", "testing-secret-do-not-print", "us-east-1"


class S3:
    """Helper over a running moto server."""

    def __init__(self, endpoint):
        import boto3
        self.endpoint = endpoint
        self.client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=KEY,
                                   aws_secret_access_key=SECRET, region_name=REGION)

    def options(self, endpoint=None, **extra):
        """storage_options for s3fs (what a user passes to kafkafmt)."""
        opts = {"key": KEY, "secret": SECRET, "endpoint_url": endpoint or self.endpoint,
                "client_kwargs": {"region_name": REGION}}
        opts.update(extra)
        return opts

    @property
    def storage_options(self):
        return self.options()

    def bucket(self, prefix="kfmt"):
        name = f"{prefix}-{uuid.uuid4().hex[:12]}"
        self.client.create_bucket(Bucket=name)
        return name

    def put(self, bucket, key, data: bytes):
        self.client.put_object(Bucket=bucket, Key=key, Body=bytes(data))

    def upload_dir(self, local, bucket, prefix=""):
        """Upload every file under ``local`` to ``bucket/prefix/<relative path>``; returns the count."""
        n = 0
        for root, _dirs, files in os.walk(local):
            for f in files:
                full = os.path.join(root, f)
                rel = os.path.relpath(full, local).replace(os.sep, "/")
                key = f"{prefix.rstrip('/')}/{rel}" if prefix else rel
                with open(full, "rb") as fh:
                    self.put(bucket, key, fh.read())
                n += 1
        return n

    def set_auth(self, enabled: bool):
        """Turn moto's request authentication on (unknown access keys are refused) or off."""
        import urllib.request
        req = urllib.request.Request(f"{self.endpoint}/moto-api/reset-auth",
                                     data=b"0" if enabled else b"inf", method="POST",
                                     headers={"Content-Type": "text/plain"})
        urllib.request.urlopen(req, timeout=10).read()


def start_moto():
    from moto.server import ThreadedMotoServer
    srv = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    srv.start()
    host, port = srv.get_host_and_port()
    return srv, f"http://{host}:{port}"


@pytest.fixture(scope="session")
def s3():
    import moto.server  # noqa: F401
    import s3fs  # noqa: F401
    import boto3  # noqa: F401
    srv, endpoint = start_moto()
    try:
        yield S3(endpoint)
    finally:
        srv.stop()


# ------------------------------------------------------------------------------------------------

class FaultProxy:
    """A loopback HTTP proxy in front of the S3 server that can fail, drop or slow requests.

    ``fail(n, status=503, code="SlowDown")`` answers the next n requests with that S3 error;
    ``drop(n)`` closes the next n connections without an answer; ``delay`` sleeps that many
    seconds before forwarding each request; ``truncate(n)`` sends only half of the next n bodies
    (with the full Content-Length, as a connection cut mid-transfer). ``log`` lists (method, path,
    Range header) of requests forwarded; ``count`` all requests seen.
    """

    def __init__(self, upstream):
        self.upstream = upstream.split("://", 1)[1]
        self.lock = threading.Lock()
        self.log, self.count = [], 0
        self._fail, self._fail_status, self._fail_code = 0, 503, "SlowDown"
        self._drop = self._truncate = 0
        self.delay = 0.0
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _handle(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                with proxy.lock:
                    proxy.count += 1
                    fail, drop, trunc = proxy._fail > 0, proxy._drop > 0, proxy._truncate > 0
                    if fail:
                        proxy._fail -= 1
                    elif drop:
                        proxy._drop -= 1
                    elif trunc:
                        proxy._truncate -= 1
                    status, code, delay = proxy._fail_status, proxy._fail_code, proxy.delay
                if delay:
                    time.sleep(delay)
                if drop and not fail:
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                if fail:
                    xml = (f"<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>{code}</Code>"
                           f"<Message>injected by the test proxy</Message></Error>").encode()
                    self.send_response(status)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(xml)))
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(xml)
                    return
                conn = http.client.HTTPConnection(proxy.upstream, timeout=30)
                try:
                    headers = {k: v for k, v in self.headers.items() if k.lower() != "connection"}
                    conn.request(self.command, self.path, body=body, headers=headers)
                    resp = conn.getresponse()
                    data = resp.read()
                finally:
                    conn.close()
                with proxy.lock:
                    proxy.log.append((self.command, self.path, self.headers.get("Range")))
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("connection", "transfer-encoding", "content-length", "date", "server"):
                        self.send_header(k, v)
                upstream_length = resp.getheader("Content-Length")
                self.send_header("Content-Length", upstream_length if self.command == "HEAD" and upstream_length
                                 else str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    if trunc and not fail:
                        self.wfile.write(data[:len(data) // 2])
                        self.wfile.flush()
                        self.close_connection = True
                        self.connection.shutdown(2)
                        return
                    self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _handle

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True
            allow_reuse_address = True

            def handle_error(self, request, client_address):
                pass      # clients hanging up and upstreams gone after a test are expected here

        self.server = Server(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def fail(self, n, status=503, code="SlowDown"):
        with self.lock:
            self._fail, self._fail_status, self._fail_code = n, status, code

    def drop(self, n):
        with self.lock:
            self._drop = n

    def truncate(self, n):
        with self.lock:
            self._truncate = n

    def reset(self):
        with self.lock:
            self._fail = self._drop = self._truncate = 0
            self.delay = 0.0
            self.log.clear()
            self.count = 0

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fault_proxy(s3):
    proxy = FaultProxy(s3.endpoint)
    # quick timeouts and no retries below kafkafmt's own, so failure tests take seconds
    proxy.storage_options = s3.options(
        endpoint=proxy.endpoint,
        config_kwargs={"read_timeout": 2, "connect_timeout": 2, "retries": {"max_attempts": 1, "mode": "standard"}},
        skip_instance_cache=True)
    try:
        yield proxy
    finally:
        proxy.close()
