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
#
# With "loading" as its second argument it is a server still loading its project, as
# typescript-language-server's syntax server is: it publishes nothing and finds references
# only in open documents until a file named "loaded" appears in the folder; then it logs
# {"fake": "loaded"}, publishes every open document's diagnostics (as in pull mode: an error
# on each line saying "call" while a document says "broken") and, from then on, republishes
# them after every change and finds references in every file.
import json, os, sys, threading, time
from urllib.parse import unquote, urlparse

log = open(sys.argv[1], "a", buffering=1)
pull = len(sys.argv) > 2 and sys.argv[2] == "pull"
loading = len(sys.argv) > 2 and sys.argv[2] == "loading"
loaded = False
docs = {}
inp, out = sys.stdin.buffer, sys.stdout.buffer
lock = threading.Lock()

def send(msg):
    body = json.dumps(msg).encode()
    with lock:
        out.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        out.flush()

def diagnostics_of(uri):
    broken = any("broken" in t for t in list(docs.values()))
    return [{"range": {"start": {"line": i, "character": 0}, "end": {"line": i, "character": 4}},
             "severity": 1, "message": "call is broken", "source": "fake"}
            for i, line in enumerate(docs.get(uri, "").split("\n")) if broken and "call" in line]

def publish_all():
    for uri in list(docs):
        send({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": {
            "uri": uri, "diagnostics": diagnostics_of(uri)}})

def wait_for_load(folder):
    global loaded
    while not os.path.exists(os.path.join(folder, "loaded")):
        time.sleep(0.02)
    log.write(json.dumps({"fake": "loaded"}) + "\n")
    loaded = True
    publish_all()

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
        if loading:
            folder = unquote(urlparse(msg["params"]["rootUri"]).path)
            threading.Thread(target=wait_for_load, args=(folder,), daemon=True).start()
    elif method == "textDocument/didOpen":
        doc = msg["params"]["textDocument"]
        docs[doc["uri"]] = doc["text"]
        if loading:
            if loaded:
                publish_all()
        elif not pull:
            send({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": {
                "uri": doc["uri"], "version": 1, "diagnostics": []}})
    elif method == "textDocument/didChange":
        docs[msg["params"]["textDocument"]["uri"]] = msg["params"]["contentChanges"][-1]["text"]
        if loading and loaded:
            publish_all()
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
            if uri == me or not name.endswith(".fake") or (loading and not loaded and uri not in docs):
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
