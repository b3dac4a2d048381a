"""A scripted OpenAI-compatible chat server for tests: no network, no model, just rules.

The server listens on 127.0.0.1 (port 0: the OS picks one) and answers
``POST /v1/chat/completions`` (and ``/chat/completions``) the way a provider would, with
``usage`` figures, so the real client path (litellm, ``model="openai/<name>"``,
``api_base=server.base_url``) is exercised end to end.

A script is a list of :class:`Rule`: a regular expression matched against the last user
message (``scope="last_user"``) or the whole conversation (``scope="conversation"``, every
message's content joined by newlines), and the replies to play in order. The first rule that
matches and still has a reply left answers. A reply is text, an HTTP error status (429, 500,
401, ...), or either of these after a delay (longer than the client's timeout, to provoke
one). When no rule can answer, the server replies 400 "script exhausted", which a client
does not retry, so a test that runs off its script fails loudly.

A rule may instead hold a ``respond`` function of the request's JSON body (``model``,
``messages``; a stochastic model, say) returning a reply, text, or None to let later rules answer. Faults a provider shows are
replies too: an HTTP error status with headers (429 with Retry-After), a delay past the client's
timeout, a 200 whose body is not JSON (``raw_body``), a connection closed without an answer
(``drop``).

The server answers the model preflight (``search.llm.preflight.PING``) with "ready" before any
rule is consulted, as every real model would (``answer_preflight=False`` lets rules answer it).
With ``api_key`` set it behaves like a provider checking keys: a request without
``Authorization: Bearer <api_key>`` gets 401 and no rule is consulted.

Every request is recorded in ``server.requests`` (path, JSON body, which rule and reply
answered, the Authorization header) for assertions.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

from search.llm.preflight import PING

CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")
PREFLIGHT_RULE = "preflight"      # server.requests[i]["rule"] of an automatic preflight answer


@dataclass
class Reply:
    """One scripted answer: ``text`` with HTTP 200, or an error ``status``; after ``delay_s``.

    ``prompt_tokens`` / ``completion_tokens`` override the usage figures (default: about one
    token per four characters). ``headers`` are extra response headers (e.g. Retry-After).
    """

    text: str | None = None
    status: int = 200
    delay_s: float = 0.0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    headers: dict = field(default_factory=dict)
    echo_authorization: bool = False  # put the request's Authorization header into an error message, as careless providers do
    raw_body: bytes | None = None     # send these bytes as the 200 body instead of a JSON completion
    drop: bool = False                # close the connection without answering


@dataclass
class Rule:
    pattern: str
    replies: list  # of Reply or str (text)
    scope: str = "last_user"  # "last_user" | "conversation"
    repeat_last: bool = False  # keep answering with the last reply once the list is used up
    played: int = 0
    respond: Callable | None = None  # request body -> Reply | str | None; replaces ``replies`` when given

    def __post_init__(self):
        if self.scope not in ("last_user", "conversation"):
            raise ValueError(f"unknown rule scope {self.scope!r}")
        self.replies = [r if isinstance(r, Reply) else Reply(text=r) for r in self.replies]
        self._regex = re.compile(self.pattern, re.S)

    def matches(self, last_user: str, conversation: str) -> bool:
        return bool(self._regex.search(last_user if self.scope == "last_user" else conversation))

    def next_reply(self, body: dict | None = None) -> Reply | None:
        if self.respond is not None:
            reply = self.respond(body or {})
            if reply is None:
                return None
            self.played += 1
            return reply if isinstance(reply, Reply) else Reply(text=reply)
        if self.played < len(self.replies):
            self.played += 1
            return self.replies[self.played - 1]
        if self.repeat_last and self.replies:
            self.played += 1
            return self.replies[-1]
        return None


def _text_of(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


class ScriptedServer:
    """``with ScriptedServer(rules) as server: ... server.base_url ...``."""

    def __init__(self, rules: list[Rule], api_key: str | None = None, answer_preflight: bool = True):
        self.rules = list(rules)
        self.api_key = api_key
        self.answer_preflight = answer_preflight
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> "ScriptedServer":
        handler = _make_handler(self)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="scripted-llm", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> "ScriptedServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("server not started")
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        """The ``api_base`` to give the client."""
        return f"http://127.0.0.1:{self.port}/v1"

    # -- scripting ------------------------------------------------------------------------
    def _choose(self, body: dict) -> tuple[int | None, Reply | None]:
        messages = body.get("messages") or []
        users = [_text_of(m.get("content")) for m in messages if m.get("role") == "user"]
        last_user = users[-1] if users else ""
        conversation = "\n".join(_text_of(m.get("content")) for m in messages)
        with self._lock:
            for i, rule in enumerate(self.rules):
                if rule.matches(last_user, conversation):
                    reply = rule.next_reply(body)
                    if reply is not None:
                        return i, reply
        return None, None

    def _record(self, entry: dict) -> None:
        with self._lock:
            self.requests.append(entry)


def _make_handler(server: ScriptedServer):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:  # keep test output clean
            pass

        def do_POST(self) -> None:  # noqa: N802 (http.server naming)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                self._send(400, _error_body("request body is not JSON", "invalid_request_error"))
                return
            path = self.path.split("?")[0]
            entry = {"path": path, "body": body, "authorization": self.headers.get("Authorization"),
                     "rule": None, "reply": None, "time": time.time()}
            if path not in CHAT_PATHS:
                server._record(entry)
                self._send(404, _error_body(f"no route {path}", "not_found_error"))
                return
            messages = body.get("messages") or []
            if server.api_key is not None and entry["authorization"] != f"Bearer {server.api_key}":
                entry["rule"] = "auth"
                server._record(entry)
                self._send(401, _error_body("Incorrect API key provided", "authentication_error"))
                return
            users = [_text_of(m.get("content")) for m in messages if m.get("role") == "user"]
            if server.answer_preflight and users and users[-1] == PING:
                entry["rule"] = PREFLIGHT_RULE
                server._record(entry)
                self._send(200, _completion_body(body, messages, Reply("ready")))
                return
            rule_index, reply = server._choose(body)
            entry["rule"] = rule_index
            if reply is not None:
                entry["reply"] = server.rules[rule_index].played - 1
            server._record(entry)
            if reply is None:
                self._send(400, _error_body("script exhausted: no rule answers this request", "invalid_request_error"))
                return
            if reply.delay_s:
                time.sleep(reply.delay_s)
            if reply.drop:
                self.close_connection = True
                try:
                    self.connection.shutdown(2)   # socket.SHUT_RDWR: the client sees the connection end, no answer
                except OSError:
                    pass
                return
            if reply.raw_body is not None:
                self._send_bytes(200, reply.raw_body, reply.headers)
                return
            if reply.status != 200:
                kind = {429: "rate_limit_error", 401: "authentication_error"}.get(reply.status, "server_error")
                message = f"scripted error {reply.status}"
                if reply.echo_authorization:
                    message += f" (you sent Authorization: {self.headers.get('Authorization')})"
                self._send(reply.status, _error_body(message, kind), reply.headers)
                return
            self._send(200, _completion_body(body, messages, reply), reply.headers)

        def _send(self, status: int, payload: dict, headers: dict | None = None) -> None:
            self._send_bytes(status, json.dumps(payload).encode(), headers)

        def _send_bytes(self, status: int, data: bytes, headers: dict | None = None) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, str(v))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout); nothing to do

    return Handler


def _error_body(message: str, kind: str) -> dict:
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def _completion_body(request: dict, messages: list, reply: Reply) -> dict:
    text = reply.text or ""
    prompt_chars = sum(len(_text_of(m.get("content"))) for m in messages)
    pt = reply.prompt_tokens if reply.prompt_tokens is not None else max(1, prompt_chars // 4)
    ct = reply.completion_tokens if reply.completion_tokens is not None else max(1, len(text) // 4)
    return {
        "id": f"chatcmpl-scripted-{int(time.time() * 1e6)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model", "scripted"),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct},
    }
