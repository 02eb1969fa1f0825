"""A real Spark standalone cluster (master + two workers) and a Spark Connect server, from the
pyspark pip install, on 127.0.0.1 -- for tests/test_spark_cluster.py.

Every process is started here with Popen, waited for with a bounded wait, and stopped by its own
PID (``bin/spark-class`` and ``bin/spark-submit`` exec the JVM, so the PID is the JVM's): SIGTERM,
then SIGKILL after a grace period. Logs go to files under the test's tmp folder and are shown
when something does not come up. Clients run in a child Python process: one process holds one
SparkContext, and a test session may already hold a local one.
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

READY_TIMEOUT = 90          # seconds for a daemon to come up
CLIENT_TIMEOUT = 150        # seconds for one client script


def spark_home():
    import pyspark

    return os.path.dirname(os.path.abspath(pyspark.__file__))


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def base_env(tmp):
    """Environment for daemons and clients: loopback only, this Python for Python workers."""
    os.makedirs(str(tmp), exist_ok=True)
    env = dict(os.environ)
    env.update(SPARK_HOME=spark_home(), SPARK_LOCAL_IP="127.0.0.1", SPARK_LOCAL_HOSTNAME="localhost",
               PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               SPARK_LOG_DIR=str(tmp), SPARK_PID_DIR=str(tmp), SPARK_NO_DAEMONIZE="1",
               SPARK_DAEMON_MEMORY="384m", SPARK_DAEMON_JAVA_OPTS="-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
               PYTHONUNBUFFERED="1", CI=os.environ.get("CI", "true"))
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    env.pop("SPARK_REMOTE", None)
    env.pop("SPARK_CONNECT_MODE_ENABLED", None)
    return env


class Daemon:
    """One JVM started by us; `stop()` ends it by its PID."""

    def __init__(self, name, cmd, env, log_path):
        self.name, self.cmd, self.log_path = name, cmd, str(log_path)
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=self._log,
                                     stderr=subprocess.STDOUT, cwd=os.path.dirname(self.log_path))
        self.pid = self.proc.pid

    def log_text(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def wait_for(self, predicate, what, timeout=READY_TIMEOUT):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} (pid {self.pid}) exited with {self.proc.returncode} before "
                                   f"{what}; log:\n{self.log_text()[-4000:]}")
            if predicate():
                return
            time.sleep(0.25)
        raise TimeoutError(f"{self.name} (pid {self.pid}): no {what} within {timeout} s; log:\n"
                           f"{self.log_text()[-4000:]}")

    def wait_for_log(self, needle, timeout=READY_TIMEOUT):
        self.wait_for(lambda: needle in self.log_text(), repr(needle), timeout)

    def wait_for_port(self, port, timeout=READY_TIMEOUT):
        def open_():
            with contextlib.closing(socket.socket()) as s:
                s.settimeout(0.5)
                return s.connect_ex(("127.0.0.1", port)) == 0

        self.wait_for(open_, f"listener on 127.0.0.1:{port}", timeout)

    def stop(self, grace=15):
        if self.proc.poll() is None:
            try:
                os.kill(self.pid, signal.SIGTERM)
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                os.kill(self.pid, signal.SIGKILL)
                self.proc.wait(10)
            except ProcessLookupError:
                pass
        self._log.close()


def _spark_class(cls, *args):
    return [os.path.join(spark_home(), "bin", "spark-class"), cls, *args]


@contextlib.contextmanager
def standalone_cluster(tmp, workers=2, cores=1, memory="1g"):
    """Yields (master_url, env, daemons): a Master and `workers` Workers, all registered."""
    tmp = str(tmp)
    env = base_env(tmp)
    port, ui = free_port(), free_port()
    daemons = []
    try:
        master = Daemon("master", _spark_class("org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                               "--port", str(port), "--webui-port", str(ui)),
                        env, os.path.join(tmp, "master.log"))
        daemons.append(master)
        master.wait_for_port(port)
        url = f"spark://127.0.0.1:{port}"
        for i in range(workers):
            work = os.path.join(tmp, f"worker{i}")
            os.makedirs(work, exist_ok=True)
            daemons.append(Daemon(f"worker{i}", _spark_class(
                "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1", "--cores", str(cores),
                "--memory", memory, "--webui-port", str(free_port()), "--work-dir", work),
                env, os.path.join(tmp, f"worker{i}.log")))
        for w in daemons[1:]:
            w.wait_for_log("Successfully registered with master")
        yield url, env, daemons
    finally:
        for d in reversed(daemons):
            d.stop()


@contextlib.contextmanager
def connect_server(tmp, master="local[2]"):
    """Yields (sc_url, env, daemon): a Spark Connect server whose Python workers run this Python."""
    tmp = str(tmp)
    env = base_env(tmp)
    env["SPARK_DAEMON_MEMORY"] = "1g"     # the launcher sizes the Connect server as a daemon
    port = free_port()
    cmd = [os.path.join(spark_home(), "bin", "spark-submit"), "--class",
           "org.apache.spark.sql.connect.service.SparkConnectServer", "--master", master,
           "--conf", f"spark.connect.grpc.binding.port={port}",
           "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
           "--conf", "spark.ui.enabled=false", "--conf", "spark.sql.shuffle.partitions=2",
           "--conf", f"spark.executorEnv.PYSPARK_PYTHON={sys.executable}",
           "--conf", "spark.driver.extraJavaOptions=-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
           "--driver-memory", "1g", "spark-internal"]
    server = Daemon("connect-server", cmd, env, os.path.join(tmp, "connect.log"))
    try:
        server.wait_for_port(port, timeout=120)
        yield f"sc://127.0.0.1:{port}", env, server
    finally:
        server.stop()


def run_client(script, env, *args, timeout=CLIENT_TIMEOUT):
    """Run a client script in a child Python; it prints one JSON object on its last stdout line."""
    proc = subprocess.run([sys.executable, "-c", script, *map(str, args)], env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, timeout=timeout)
    out = proc.stdout.decode("utf-8", "replace")
    err = proc.stderr.decode("utf-8", "replace")
    if proc.returncode != 0:
        pytest.fail(f"client exited with {proc.returncode}:\n{err[-6000:]}\n{out[-2000:]}")
    lines = [ln for ln in out.splitlines() if ln.startswith("{")]
    if not lines:
        pytest.fail(f"client printed no result:\n{out[-2000:]}\n{err[-4000:]}")
    return json.loads(lines[-1])


def java_available():
    return any(os.access(os.path.join(p, "java"), os.X_OK) for p in os.environ.get("PATH", "").split(os.pathsep)) \
        or bool(os.environ.get("JAVA_HOME"))
