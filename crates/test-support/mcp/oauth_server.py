"""A hosted MCP server behind OAuth, for the login tests: one process that is both the
authorization server and the protected resource. Plain Python (no packages).

Usage: python3 oauth_server.py LIFETIME_SECONDS

Prints `PORT <n>` once it listens on 127.0.0.1. Then:

- `POST /mcp` (streamable HTTP, JSON answers, no sessions): `initialize` and notifications
  need no token; `tools/list` needs scope `read`; `tools/call` needs `read write` (a
  step-up: a `read` token gets `403 insufficient_scope`). No token, or a token that is
  unknown, expired or revoked: `401` with `WWW-Authenticate` naming the resource metadata
  and scope `read`.
- `/.well-known/oauth-protected-resource/mcp` (RFC 9728) and
  `/.well-known/oauth-authorization-server` (RFC 8414).
- `/register` (RFC 7591), `/authorize` (checks PKCE S256 and the resource indicator, then
  redirects at once with a code, as if the person had approved), `/token` (authorization
  code with the PKCE verifier, and refresh tokens, which rotate), `/revoke` (RFC 7009).
- `GET /stats`: what happened, as JSON: the scopes of each authorization, the grants asked
  at the token endpoint, revocations, and the tokens the MCP endpoint refused.

Access tokens live LIFETIME_SECONDS.
"""

import base64
import hashlib
import json
import secrets
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LIFETIME = int(sys.argv[1]) if len(sys.argv) > 1 else 3600
LOCK = threading.Lock()
CLIENTS = {}
CODES = {}
TOKENS = {}  # access token -> {"scopes": [...], "expires": t, "revoked": bool}
REFRESH = {}  # refresh token -> {"client": id, "scopes": [...]}
STATS = {"authorizations": [], "grants": [], "revoked": 0, "refused": 0, "resources": []}


def challenge(base, error=None, scope="read"):
    parts = [f'resource_metadata="{base}/.well-known/oauth-protected-resource/mcp"', f'scope="{scope}"']
    if error:
        parts.insert(0, f'error="{error}"')
    return "Bearer " + ", ".join(parts)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    @property
    def base(self):
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def send(self, status, body=None, headers=None):
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        base = self.base
        if url.path == "/.well-known/oauth-protected-resource/mcp":
            return self.send(200, {"resource": f"{base}/mcp", "authorization_servers": [base], "scopes_supported": ["read", "write"]})
        if url.path == "/.well-known/oauth-authorization-server":
            return self.send(200, {
                "issuer": base,
                "authorization_endpoint": f"{base}/authorize",
                "token_endpoint": f"{base}/token",
                "registration_endpoint": f"{base}/register",
                "revocation_endpoint": f"{base}/revoke",
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none"],
                "scopes_supported": ["read", "write", "offline_access"],
            })
        if url.path == "/authorize":
            problems = []
            if query.get("code_challenge_method") != "S256" or not query.get("code_challenge"):
                problems.append("PKCE S256 missing")
            if query.get("resource") != f"{base}/mcp":
                problems.append(f"resource {query.get('resource')!r}")
            if query.get("client_id") not in CLIENTS:
                problems.append("unknown client")
            redirect = query.get("redirect_uri", "")
            if problems:
                return self.send(400, {"error": "invalid_request", "error_description": "; ".join(problems)})
            code = secrets.token_urlsafe(16)
            scopes = query.get("scope", "").split()
            with LOCK:
                CODES[code] = {"client": query["client_id"], "challenge": query["code_challenge"], "redirect": redirect, "scopes": scopes}
                STATS["authorizations"].append(scopes)
            sep = "&" if "?" in redirect else "?"
            location = f"{redirect}{sep}code={code}&state={urllib.parse.quote(query.get('state', ''))}"
            return self.send(302, None, {"Location": location})
        if url.path == "/stats":
            with LOCK:
                return self.send(200, STATS)
        if url.path == "/mcp":
            return self.send(405, {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": "no GET stream"}})
        return self.send(404, {"error": "not_found"})

    def issue(self, client, scopes):
        access = "at-" + secrets.token_urlsafe(24)
        refresh = "rt-" + secrets.token_urlsafe(24)
        TOKENS[access] = {"scopes": scopes, "expires": time.time() + LIFETIME, "revoked": False}
        REFRESH[refresh] = {"client": client, "scopes": scopes}
        return {"access_token": access, "token_type": "Bearer", "expires_in": LIFETIME, "refresh_token": refresh, "scope": " ".join(scopes)}

    def do_POST(self):
        url = urllib.parse.urlparse(self.path)
        raw = self.body()
        base = self.base
        if url.path == "/register":
            meta = json.loads(raw or b"{}")
            client = "client-" + secrets.token_hex(4)
            with LOCK:
                CLIENTS[client] = meta.get("redirect_uris", [])
            return self.send(201, {"client_id": client, "redirect_uris": CLIENTS[client], "token_endpoint_auth_method": "none"})
        if url.path in ("/token", "/revoke"):
            form = dict(urllib.parse.parse_qsl(raw.decode()))
            with LOCK:
                if url.path == "/revoke":
                    token = form.get("token", "")
                    REFRESH.pop(token, None)
                    if token in TOKENS:
                        TOKENS[token]["revoked"] = True
                    STATS["revoked"] += 1
                    return self.send(200, {})
                grant = form.get("grant_type")
                STATS["grants"].append(grant)
                STATS["resources"].append(form.get("resource"))
                if grant == "authorization_code":
                    entry = CODES.pop(form.get("code", ""), None)
                    verifier = form.get("code_verifier", "")
                    digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
                    if not entry or digest != entry["challenge"] or form.get("redirect_uri") != entry["redirect"]:
                        return self.send(400, {"error": "invalid_grant"})
                    return self.send(200, self.issue(entry["client"], entry["scopes"]))
                if grant == "refresh_token":
                    entry = REFRESH.pop(form.get("refresh_token", ""), None)
                    if not entry:
                        return self.send(400, {"error": "invalid_grant"})
                    return self.send(200, self.issue(entry["client"], entry["scopes"]))
            return self.send(400, {"error": "unsupported_grant_type"})
        if url.path != "/mcp":
            return self.send(404, {"error": "not_found"})
        message = json.loads(raw or b"{}")
        method = message.get("method", "")
        if method == "initialize":
            return self.send(200, {"jsonrpc": "2.0", "id": message.get("id"), "result": {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "oauth-test-server", "version": "1"},
            }})
        if method.startswith("notifications/"):
            return self.send(202)
        header = self.headers.get("Authorization", "")
        token = header[7:] if header.startswith("Bearer ") else None
        with LOCK:
            known = TOKENS.get(token) if token else None
            if not known or known["revoked"] or known["expires"] < time.time():
                if token:
                    STATS["refused"] += 1
                return self.send(401, {"error": "invalid_token"}, {"WWW-Authenticate": challenge(base, "invalid_token" if token else None)})
            scopes = known["scopes"]
        needed = ["read", "write"] if method == "tools/call" else ["read"]
        if not all(s in scopes for s in needed):
            return self.send(403, {"error": "insufficient_scope"}, {"WWW-Authenticate": challenge(base, "insufficient_scope", " ".join(needed))})
        if method == "tools/list":
            result = {"tools": [{"name": "whoami", "description": "Says who you are", "inputSchema": {"type": "object"}}]}
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": "hello from the protected server (scopes: " + " ".join(scopes) + ")"}]}
        else:
            return self.send(200, {"jsonrpc": "2.0", "id": message.get("id"), "error": {"code": -32601, "message": f"Method not found: {method}"}})
        return self.send(200, {"jsonrpc": "2.0", "id": message.get("id"), "result": result})


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
