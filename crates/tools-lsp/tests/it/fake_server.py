# A scripted language server for the client's protocol tests. It logs every message it
# receives, one JSON line each, to the file named by its first argument. Hover at line 0
# answers, line 1 never answers, line 2 exits mid-request, line 3 sends a message over the
# client's cap and then answers.
import json, sys

log = open(sys.argv[1], "a", buffering=1)
inp, out = sys.stdin.buffer, sys.stdout.buffer

def send(msg):
    body = json.dumps(msg).encode()
    out.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    out.flush()

def read():
    length = None
    while True:
        line = inp.readline()
        if not line:
            sys.exit(0)
        line = line.strip()
        if not line:
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    msg = json.loads(inp.read(length))
    log.write(json.dumps(msg) + "\n")
    return msg

def ask(id, method, params):
    send({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
    while True:
        msg = read()
        if msg.get("id") == id and "method" not in msg:
            return

while True:
    msg = read()
    method = msg.get("method")
    if method == "initialize":
        ask("c1", "workspace/configuration", {"items": [{"section": "fake"}, {"section": "other"}]})
        ask("c2", "client/registerCapability", {"registrations": []})
        ask("c3", "window/workDoneProgress/create", {"token": "t"})
        ask("c4", "workspace/workspaceFolders", None)
        ask("c5", "fake/unknownRequest", {})
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"capabilities": {"hoverProvider": True}}})
    elif method == "textDocument/didOpen":
        send({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": {
            "uri": msg["params"]["textDocument"]["uri"], "version": 1, "diagnostics": []}})
    elif method == "textDocument/hover":
        line = msg["params"]["position"]["line"]
        if line == 1:
            continue
        if line == 2:
            sys.exit(3)
        if line == 3:
            junk = "x" * (2 * 1024 * 1024)
            send({"jsonrpc": "2.0", "method": "window/logMessage", "params": {"type": 3, "message": junk}})
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"contents": "fake hover %d" % line}})
    elif method == "shutdown":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
    elif method == "exit":
        sys.exit(0)
