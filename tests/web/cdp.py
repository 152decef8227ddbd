"""A headless Chromium driven over the DevTools protocol, for the dashboard's test: Debian's
chromium, Debian's python3-websocket, nothing from a registry. Chromium listens on a port of its
own choosing on loopback (--remote-debugging-port=0, read back from DevToolsActivePort) and
keeps its profile in a fresh folder of the build tree."""
import base64
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request

import websocket


class Browser:
    def __init__(self, workdir, width=1280, height=860):
        exe = shutil.which("chromium") or shutil.which("chromium-browser")
        if not exe:
            raise RuntimeError("chromium is not installed (./dev test installs it)")
        os.makedirs(workdir, exist_ok=True)
        self.profile = tempfile.mkdtemp(prefix="chromium-profile.", dir=workdir)
        # As root Chromium needs --no-sandbox; every other flag keeps it quiet and alone.
        self.proc = subprocess.Popen(
            [exe, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--no-default-browser-check", "--disable-extensions", "--disable-sync",
             "--disable-background-networking", "--disable-component-update",
             "--disable-dev-shm-usage", f"--user-data-dir={self.profile}",
             "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
             f"--window-size={width},{height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        port_file = os.path.join(self.profile, "DevToolsActivePort")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if os.path.exists(port_file) and open(port_file).read().count("\n") >= 1:
                break
            if self.proc.poll() is not None:
                raise RuntimeError(f"chromium exited with {self.proc.returncode}")
            time.sleep(0.1)
        else:
            self.close()
            raise RuntimeError("chromium wrote no DevToolsActivePort in 60 s")
        port = int(open(port_file).read().split("\n")[0])
        pages = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10))
        page = [p for p in pages if p.get("type") == "page"][0]
        self.ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=60,
                                              suppress_origin=True)
        self.next_id = 0
        self.call("Page.enable")
        self.call("Runtime.enable")
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height,
                  deviceScaleFactor=1, mobile=False)

    def call(self, method, **params):
        """Sends one command and returns its result; the events in between are dropped."""
        self.next_id += 1
        mine = self.next_id
        self.ws.send(json.dumps({"id": mine, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == mine:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})

    def navigate(self, url):
        self.call("Page.navigate", url=url)

    def eval(self, expression):
        """The value of a JavaScript expression (awaited when it is a promise)."""
        r = self.call("Runtime.evaluate", expression=expression, returnByValue=True,
                      awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expression}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def wait_for(self, expression, timeout=20):
        """Polls until the expression is truthy; returns its value, or None after `timeout`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.eval(expression)
            if value:
                return value
            time.sleep(0.1)
        return None

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", format="png")["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def close(self):
        if getattr(self, "ws", None):
            self.ws.close()
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)
