"""Drives headless Chromium through the DevTools protocol: open the settings page, change a setting with
the `defaults` command, wait until the page shows it, and save a screenshot. Used by Scripts/screenshot."""
import argparse, base64, json, os, subprocess, sys, time, urllib.request

import websocket  # websocket-client

parser = argparse.ArgumentParser()
parser.add_argument("--devtools", type=int, required=True)
parser.add_argument("--url", required=True)
parser.add_argument("--defaults", required=True)
parser.add_argument("--config", required=True)
parser.add_argument("--output", required=True)
options = parser.parse_args()


def wait_for(condition, seconds, what):
    deadline = time.time() + seconds
    while time.time() < deadline:
        result = condition()
        if result:
            return result
        time.sleep(0.05)
    sys.exit(f"screenshot: timed out waiting for {what}")


def page_socket():
    def targets():
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{options.devtools}/json", timeout=2) as response:
                return [t for t in json.load(response) if t.get("type") == "page"]
        except OSError:
            return None
    return websocket.create_connection(wait_for(targets, 30, "Chromium")[0]["webSocketDebuggerUrl"], timeout=30)


socket = page_socket()
next_id = 0


def call(method, **params):
    global next_id
    next_id += 1
    socket.send(json.dumps({"id": next_id, "method": method, "params": params}))
    while True:
        message = json.loads(socket.recv())
        if message.get("id") == next_id:
            if "error" in message:
                sys.exit(f"screenshot: {method}: {message['error']}")
            return message.get("result", {})


def evaluate(expression):
    return call("Runtime.evaluate", expression=expression, returnByValue=True).get("result", {}).get("value")


def server_ready():
    try:
        urllib.request.urlopen(options.url + "settings", timeout=1).read()
        return True
    except OSError:
        return False


wait_for(server_ready, 30, "the server")
call("Page.enable")
call("Page.navigate", url=options.url)
wait_for(lambda: evaluate("document.getElementById('status') && document.getElementById('status').textContent.startsWith('live')"),
         15, "the page to connect to /events")
before = evaluate("document.getElementById('field-Greeting').value")

greeting = "Hi from the shell, " + time.strftime("%H:%M:%S")
environment = dict(os.environ, XDG_CONFIG_HOME=options.config, LIVEDEFAULTS_SCHEMA_PATH=options.config + "/Schemas")
started = time.time()
subprocess.run([options.defaults, "write", "com.example.liveserver", "Greeting", greeting], env=environment, check=True)
subprocess.run([options.defaults, "write", "com.example.liveserver", "RateLimit", "-int", "5"], env=environment, check=True)
wait_for(lambda: evaluate("document.getElementById('field-Greeting').value") == greeting, 10, "the page to show the new greeting")
elapsed = (time.time() - started) * 1000
wait_for(lambda: evaluate("document.getElementById('field-RateLimit').value") == "5", 10, "the page to show the new rate limit")
time.sleep(0.3)  # let the highlight show

shot = call("Page.captureScreenshot", format="png")
with open(options.output, "wb") as file:
    file.write(base64.b64decode(shot["data"]))
log = evaluate("document.getElementById('log').textContent")
print(f"page showed Greeting {before!r} before; {greeting!r} {elapsed:.0f} ms after `defaults write` started (no reload)")
print(f"page log: {log.strip()}")
print(f"screenshot: {options.output}")
