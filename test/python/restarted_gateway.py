"""The gateway after a restart: a new Python process, whose Hermes loads the
plugin afresh (nothing of the previous process's memory), runs a parent
session's next turns with Hermes' own agent loop against the stand-in model.

Run by test_real_hermes.py with the same environment (HERMES_HOME, the
drop-in's media policy). Reads {"session_id", "history", "messages": [...]}
on stdin; prints each turn's final reply and the plugin's records as JSON.
"""

import json
import sys

from fake_model import FakeModel
from hermes_cli.plugins import discover_plugins
from run_agent import AIAgent


def script(request):
    messages = request.get("messages") or []
    if not messages:
        return {"content": "ok"}
    content = str(messages[-1].get("content"))
    if "ASYNC DELEGATION" in content:
        return {"content": "Your chart is ready."}
    return {"content": "You are welcome."}


def main():
    job = json.load(sys.stdin)
    discover_plugins()
    plugin = sys.modules["hermes_plugins.media_outbox"]
    waiting = plugin.records.get(job["session_id"])
    model = FakeModel(script)
    try:
        agent = AIAgent(base_url=model.base_url, api_key="test", model="test-model", quiet_mode=True, skip_context_files=True, skip_memory=True, platform="telegram", session_id=job["session_id"])
        history = job["history"]
        replies = []
        for message in job["messages"]:
            result = agent.run_conversation(message, conversation_history=history)
            replies.append(result["final_response"])
            history = result["messages"]
    finally:
        model.close()
    json.dump({"waiting": waiting, "replies": replies}, sys.stdout)


if __name__ == "__main__":
    main()
