# A scripted language server for the client's protocol tests. It logs every message it
# receives, one JSON line each, to the file named by its first argument. Hover at line 0
# answers, line 1 never answers, line 2 exits mid-request, line 3 sends a message over the
# client's cap and then answers.
#
# With "pull" as its second argument it offers pull diagnostics (and publishes none): a
# document's diagnostics are an error on each line that says "call", while any document
# whose text says "broken" is open; documentSymbol gives one function "thing" over the
# whole document, and references of it are the lines saying "call" in every other open
# document.
import json, os, sys
from urllib.parse import unquote, urlparse

log = open(sys.argv[1], "a", buffering=1)
pull = len(sys.argv) > 2 and sys.argv[2] == "pull"
docs = {}
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
        caps = {"hoverProvider": True}
        if pull:
            caps["diagnosticProvider"] = {"interFileDependencies": True, "workspaceDiagnostics": False}
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"capabilities": caps}})
    elif method == "textDocument/didOpen":
        doc = msg["params"]["textDocument"]
        docs[doc["uri"]] = doc["text"]
        if not pull:
            send({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": {
                "uri": doc["uri"], "version": 1, "diagnostics": []}})
    elif method == "textDocument/didChange":
        docs[msg["params"]["textDocument"]["uri"]] = msg["params"]["contentChanges"][-1]["text"]
    elif method == "textDocument/didClose":
        docs.pop(msg["params"]["textDocument"]["uri"], None)
    elif method == "textDocument/diagnostic":
        uri = msg["params"]["textDocument"]["uri"]
        broken = any("broken" in t for t in docs.values())
        items = [{"range": {"start": {"line": i, "character": 0}, "end": {"line": i, "character": 4}},
                  "severity": 1, "message": "call is broken", "source": "fake"}
                 for i, line in enumerate(docs.get(uri, "").split("\n")) if broken and "call" in line]
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"kind": "full", "items": items}})
    elif method == "textDocument/documentSymbol":
        text = docs.get(msg["params"]["textDocument"]["uri"], "")
        last = len(text.split("\n")) - 1
        send({"jsonrpc": "2.0", "id": msg["id"], "result": [{
            "name": "thing", "kind": 12,
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": last, "character": 0}},
            "selectionRange": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 5}},
        }]})
    elif method == "textDocument/references":
        me = msg["params"]["textDocument"]["uri"]
        # Every other document in the folder, open or not, as a server that indexes would.
        folder = unquote(urlparse(me).path).rsplit("/", 1)[0]
        found = []
        for name in sorted(os.listdir(folder)):
            uri = "file://" + folder + "/" + name
            if uri == me or not name.endswith(".fake"):
                continue
            text = docs.get(uri) or open(folder + "/" + name).read()
            for i, line in enumerate(text.split("\n")):
                if "call" in line:
                    found.append({"uri": uri, "range": {"start": {"line": i, "character": 0},
                                                        "end": {"line": i, "character": 4}}})
        send({"jsonrpc": "2.0", "id": msg["id"], "result": found})
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
