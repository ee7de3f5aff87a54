"""A headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``:
JSON messages separated by NUL bytes on file descriptors 3 and 4), with nothing but the
standard library, and a local HTTP server for a built site (the site's search loads its index
with fetch, which file:// URLs refuse)."""

import base64
import functools
import http.server
import json
import os
import shutil
import subprocess
import threading
import time

from core.io import atomic_write


def chromium_path():
    """The Chromium executable on PATH (Debian's package), or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Site:
    """``with Site(folder) as base_url``: the folder served on 127.0.0.1 at a free port."""

    def __init__(self, folder):
        handler = functools.partial(_QuietHandler, directory=str(folder))
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)

    def __enter__(self):
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.server.server_address[1]}/"

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


class Browser:
    """One headless Chromium with one page; :meth:`call` sends a command to the page and
    returns its result, :meth:`goto` loads a URL and waits for its load event."""

    def __init__(self, width=1280, height=900, timeout=60.0):
        self.timeout = timeout
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()

        def wire_fds():                      # in the child: our pipes become its fds 3 and 4
            read_end, write_end = os.dup(to_child_r), os.dup(from_child_w)
            os.dup2(read_end, 3)
            os.dup2(write_end, 4)

        self.proc = subprocess.Popen(
            [chromium_path(), "--headless=new", "--remote-debugging-pipe", "--no-sandbox",
             "--disable-gpu", "--no-first-run", "--disable-extensions",
             f"--window-size={width},{height}", "about:blank"],
            preexec_fn=wire_fds, close_fds=False,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_child_r)
        os.close(from_child_w)
        self._buffer = b""
        self._next_id = 0
        self.events = []
        target = next(t for t in self._send("Target.getTargets")["targetInfos"] if t["type"] == "page")
        self.session = self._send("Target.attachToTarget", {"targetId": target["targetId"],
                                                            "flatten": True})["sessionId"]
        self.call("Page.enable")
        self.call("Runtime.enable")
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})

    def close(self):
        os.close(self._to_child)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._from_child)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- the protocol
    def _read_message(self, deadline):
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("Chromium did not answer")
            chunk = os.read(self._from_child, 1 << 16)
            if not chunk:
                raise RuntimeError("Chromium closed its pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def _send(self, method, params=None, session=None):
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_child, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def call(self, method, params=None):
        return self._send(method, params, self.session)

    def goto(self, url):
        """Load ``url`` and wait for its load event."""
        self.events.clear()
        self.call("Page.navigate", {"url": url})
        deadline = time.monotonic() + self.timeout
        while not any(e["method"] == "Page.loadEventFired" for e in self.events):
            self.events.append(self._read_message(deadline))

    def evaluate(self, expression):
        """The value of a JavaScript expression (promises awaited)."""
        result = self.call("Runtime.evaluate", {"expression": expression, "awaitPromise": True,
                                                "returnByValue": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression[:80]}...: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path, top=0, max_height=2400):
        """A PNG of the page from ``top`` (CSS pixels), as tall as the rest of the page up to
        ``max_height`` pixels."""
        size = self.call("Page.getLayoutMetrics")["cssContentSize"]
        top = max(0, min(top, size["height"] - 1))
        clip = {"x": 0, "y": top, "width": size["width"],
                "height": min(size["height"] - top, max_height), "scale": 1}
        data = self.call("Page.captureScreenshot", {"format": "png", "clip": clip,
                                                    "captureBeyondViewport": True})["data"]
        atomic_write(path, base64.b64decode(data))
