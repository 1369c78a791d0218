"""A real loopback HTTP server speaking the Chat Completions protocol, replaying a script.

    with ChatServer([tool_call("search", {"query": "discount"}), content("hi")]) as srv:
        ModelChooser(base_url=srv.base_url, model="m")
        srv.requests  # every received request body, parsed

Script items are built with the helpers below; each request consumes the next item.
An exhausted script answers HTTP 400 (never retried) so a test that calls too often fails loudly.

The helpers imitate what real servers send: arguments as a string (OpenAI) or as a JSON object
(llama.cpp builds, Ollama), several calls in one reply, the call written in the text, a refusal,
a reply cut off at the output limit, no `usage`, errors with Retry-After / retry-after-ms
headers, and a dropped connection. `max_in_flight` is the most requests handled at once.
"""
from __future__ import annotations

import itertools
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

DEFAULT_USAGE = {"prompt_tokens": 120, "completion_tokens": 30}


def tool_call(name: str, arguments: dict | str | None = None, *, usage: dict | None = DEFAULT_USAGE,
              object_args: bool = False, finish_reason: str = "tool_calls") -> dict:
    """One tool call; a str `arguments` is sent verbatim (to script malformed JSON). `object_args`
    sends a dict as a JSON object instead of a JSON string, as llama.cpp builds and Ollama do."""
    return tool_calls((name, arguments), usage=usage, object_args=object_args, finish_reason=finish_reason)


def tool_calls(*calls: tuple[str, dict | str | None], usage: dict | None = DEFAULT_USAGE, object_args: bool = False,
               finish_reason: str = "tool_calls") -> dict:
    return {"kind": "tool_calls", "calls": list(calls), "usage": usage, "object_args": object_args,
            "finish": finish_reason}


def content(text: str, *, usage: dict | None = DEFAULT_USAGE, finish_reason: str = "stop") -> dict:
    return {"kind": "content", "text": text, "usage": usage, "finish": finish_reason}


def refusal(text: str, *, usage: dict | None = DEFAULT_USAGE) -> dict:
    """OpenAI's refusal: `message.refusal` set, no content, no call."""
    return {"kind": "message", "message": {"role": "assistant", "content": None, "refusal": text},
            "finish": "stop", "usage": usage}


def http_error(status: int, body: dict | str, headers: dict[str, str] | None = None) -> dict:
    return {"kind": "error", "status": status, "body": body, "headers": headers or {}}


def openai_error(status: int, message: str, *, type: str = "invalid_request_error", code: str | None = None,
                 param: str | None = None, headers: dict[str, str] | None = None) -> dict:
    """An error in OpenAI's shape: {"error": {"message", "type", "param", "code"}}."""
    return http_error(status, {"error": {"message": message, "type": type, "param": param, "code": code}}, headers)


def drop_connection() -> dict:
    """Close the connection without any answer: the client sees a reset / remote disconnect."""
    return {"kind": "drop"}


def delay(seconds: float, then: dict) -> dict:
    """Wait before answering `then` (the wait ends early when the server shuts down)."""
    return {"kind": "delay", "seconds": seconds, "then": then}


def _arguments(args: dict | str | None, as_object: bool) -> Any:
    if isinstance(args, str):
        return args
    return (args or {}) if as_object else json.dumps(args or {})


def _completion(item: dict, model: str, seq: int) -> dict:
    message: dict[str, Any] = {"role": "assistant", "content": None}
    finish = item.get("finish", "stop")
    if item["kind"] == "content":
        message["content"] = item["text"]
    elif item["kind"] == "message":
        message = dict(item["message"])
    else:
        message["tool_calls"] = [
            {"id": f"call_{seq}_{i}", "type": "function",
             "function": {"name": name, "arguments": _arguments(args, item.get("object_args", False))}}
            for i, (name, args) in enumerate(item["calls"])]
    reply = {"id": f"chatcmpl-test-{seq}", "object": "chat.completion", "created": int(time.time()),
             "model": model, "choices": [{"index": 0, "message": message, "finish_reason": finish}]}
    if item.get("usage") is not None:
        u = item["usage"]
        reply["usage"] = {"prompt_tokens": u["prompt_tokens"], "completion_tokens": u["completion_tokens"],
                          "total_tokens": u["prompt_tokens"] + u["completion_tokens"]}
    return reply


class ChatServer:
    def __init__(self, script: list[dict], responder: Callable[[dict], dict] | None = None):
        """`responder(body)` answers (with a script item) whatever the script does not: a server
        that replies from the request, for runs whose requests interleave (a sweep's workers)."""
        self.script = list(script)
        self.responder = responder
        self.requests: list[dict] = []   # parsed bodies of POST /v1/chat/completions
        self.headers: list[dict] = []    # their headers (lower-case names), same order
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._seq = itertools.count(1)
        self.in_flight = 0
        self.max_in_flight = 0
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def _next(self, body: dict, headers: dict) -> dict | None:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            if self.script:
                return self.script.pop(0)
            return self.responder(body) if self.responder is not None else None

    def _enter(self) -> None:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            # HTTP/1.0: one request per connection, so no idle keep-alive thread blocks shutdown.
            protocol_version = "HTTP/1.0"

            def log_message(self, *args: Any) -> None:  # keep pytest output clean
                pass

            def _send(self, status: int, payload: dict | str, headers: dict[str, str] | None = None) -> None:
                data = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # client gave up (timeout tests)
                    pass

            def do_GET(self) -> None:
                if self.path.rstrip("/") == "/v1/models":
                    self._send(200, {"object": "list", "data": [
                        {"id": "scripted-model", "object": "model", "created": 0, "owned_by": "tests"}]})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                    return
                try:
                    body = json.loads(raw)
                except json.JSONDecodeError:
                    self._send(400, {"error": {"message": "body is not JSON", "type": "invalid_request_error"}})
                    return
                server._enter()
                try:
                    item = server._next(body, {k.lower(): v for k, v in self.headers.items()})
                    while item is not None and item["kind"] == "delay":
                        if server._closing.wait(item["seconds"]):
                            return
                        item = item["then"]
                    if item is None:
                        self._send(400, {"error": {"message": "script exhausted", "type": "script_exhausted"}})
                    elif item["kind"] == "error":
                        self._send(item["status"], item["body"], item.get("headers"))
                    elif item["kind"] == "drop":
                        self.close_connection = True
                        self.connection.shutdown(socket.SHUT_RDWR)
                    else:
                        self._send(200, _completion(item, body.get("model", "scripted-model"), next(server._seq)))
                finally:
                    server._leave()

        return Handler

    def start(self) -> "ChatServer":
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        # A short poll interval keeps shutdown() (and so every test) fast.
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02},
                                        name="chat-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is None:
            return
        self._closing.set()          # wake handlers still waiting in a delay
        self._httpd.shutdown()
        self._httpd.server_close()   # joins handler threads
        assert self._thread is not None
        self._thread.join(timeout=5)
        self._httpd = None

    def __enter__(self) -> "ChatServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
