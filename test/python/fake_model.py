"""A stand-in model for the real Hermes: an OpenAI-compatible chat completions
endpoint on 127.0.0.1 (plain and streamed answers) that answers from a script.

Hermes' own agent loop (run_agent.AIAgent) talks to it as to any provider, so
the tools, the hooks and delegate_task's subagents run as they do in a gateway.
"""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeModel:
    """`script(request)` gets each chat request (a dict) and returns
    {"content": text} or {"tool": (name, arguments)}."""

    def __init__(self, script):
        self.script = script
        self.requests = []
        model = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                self._send({"object": "list", "data": [{"id": "test-model", "object": "model"}]})

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                request = json.loads(self.rfile.read(length) or b"{}")
                model.requests.append(request)
                answer = model.script(request)
                message = {"role": "assistant", "content": answer.get("content")}
                if "tool" in answer:
                    name, arguments = answer["tool"]
                    message["tool_calls"] = [{"id": "call_%d" % len(model.requests), "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}]
                finish = "tool_calls" if "tool" in answer else "stop"
                usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
                if not request.get("stream"):
                    self._send({"id": "r", "object": "chat.completion", "created": 0, "model": "test-model", "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage})
                    return
                delta = {k: v for k, v in message.items() if v is not None}
                if "tool_calls" in delta:
                    delta["tool_calls"] = [dict(call, index=0) for call in delta["tool_calls"]]
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for chunk in ({"choices": [{"index": 0, "delta": delta, "finish_reason": None}]}, {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}], "usage": usage}):
                    chunk.update(id="r", object="chat.completion.chunk", created=0, model="test-model")
                    self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                self.wfile.write(b"data: [DONE]\n\n")

            def _send(self, body):
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base_url = "http://127.0.0.1:%d/v1" % self.server.server_address[1]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def tool_names(request):
    return [t.get("function", {}).get("name") for t in request.get("tools") or []]
