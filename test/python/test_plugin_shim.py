"""The Hermes plugin shim against a stand-in plugin context and a stand-in CLI.

Standard library only; run by `npm test` (test/hermes-plugin.test.ts) with the
system Python. The stand-in CLI (MEDIA_OUTBOX_BIN) records its argument list,
its stdin and its PID, so the tests see exactly what the shim runs.
"""

import importlib.util
import json
import logging
import os
import shutil
import stat
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "integrations" / "hermes" / "media-outbox"


def load_plugin():
    spec = importlib.util.spec_from_file_location("media_outbox_plugin_under_test", PLUGIN / "__init__.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class StandInContext:
    """What the shim may use of Hermes' PluginContext: register_tool and register_hook."""

    def __init__(self):
        self.tools = {}
        self.hooks = {}

    def register_tool(self, name, toolset, schema, handler, check_fn=None, requires_env=None, is_async=False, description="", emoji="", override=False):
        self.tools[name] = dict(toolset=toolset, schema=schema, handler=handler, check_fn=check_fn, is_async=is_async, description=description, override=override)

    def register_hook(self, hook_name, callback):
        self.hooks.setdefault(hook_name, []).append(callback)


FAKE_CLI = textwrap.dedent(
    """\
    #!{python}
    import json, os, sys, time
    log = os.environ["FAKE_LOG"]
    data = sys.stdin.buffer.read() if not sys.stdin.isatty() else b""
    with open(log, "a") as f:
        f.write(json.dumps({{"argv": sys.argv[1:], "stdin": data.decode("utf-8", "replace"), "pid": os.getpid()}}) + "\\n")
    mode = os.environ.get("FAKE_MODE", "ok")
    if mode == "sleep":
        time.sleep(30)
    if mode == "exit2":
        sys.stderr.write("media-outbox: usage error: bad\\nMEDIA:/etc/passwd\\n")
        sys.exit(2)
    if mode == "garbage":
        sys.stdout.write("not json")
        sys.exit(0)
    if sys.argv[1] == "prepare":
        named = [a[len("--name="):] for a in sys.argv if a.startswith("--name=")]
        name = named[0] if named else os.path.basename(sys.argv[-1])
        path = os.path.join(os.environ["FAKE_OUTBOX"], name)
        with open(path, "wb") as f:
            f.write(data or b"bytes")
        doc = {{"success": True, "partial_success": False, "outbox": os.environ["FAKE_OUTBOX"],
               "media": [{{"source": sys.argv[-1], "path": path, "directive": "MEDIA:" + path, "name": name}}], "media_dropped": []}}
        print(json.dumps(doc))
    elif sys.argv[1] == "check-reply":
        media = [sys.argv[i + 1] for i, a in enumerate(sys.argv) if a == "--media"]
        reply = data.decode("utf-8") + "".join("\\nMEDIA:" + m for m in media)
        print(json.dumps({{"reply": reply, "changed": mode != "unchanged", "added": media, "removed": [], "notes": []}}))
    """
)


class ShimTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)
        self.outbox = self.dir / "outbox"
        self.outbox.mkdir()
        self.log = self.dir / "calls.jsonl"
        fake = self.dir / "media-outbox"
        fake.write_text(FAKE_CLI.format(python=sys.executable))
        fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
        self.saved_env = dict(os.environ)
        os.environ.update(MEDIA_OUTBOX_BIN=str(fake), FAKE_LOG=str(self.log), FAKE_OUTBOX=str(self.outbox), FAKE_MODE="ok")
        os.environ.pop("MEDIA_OUTBOX_REPLY_TIMEOUT", None)
        # The plugin keeps state under the Hermes home: each test has its own.
        self.hermes = self.dir / "hermes"
        self.hermes.mkdir()
        os.environ["HERMES_HOME"] = str(self.hermes)
        self.plugin = load_plugin()
        self.ctx = StandInContext()
        self.plugin.register(self.ctx)

    def tearDown(self):
        os.environ.clear()
        os.environ.update(self.saved_env)
        self.tmp.cleanup()

    def calls(self):
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def hook(self, name):
        (callback,) = self.ctx.hooks[name]
        return callback

    # -- registration ---------------------------------------------------------

    def test_registers_the_tool_and_the_hooks(self):
        self.assertEqual(list(self.ctx.tools), ["send_file"])
        tool = self.ctx.tools["send_file"]
        self.assertEqual(tool["toolset"], "media_outbox")
        self.assertFalse(tool["override"])
        self.assertFalse(tool["is_async"])
        self.assertTrue(tool["check_fn"]())
        os.environ["MEDIA_OUTBOX_BIN"] = ""
        os.environ["PATH"] = str(self.dir / "empty")
        self.plugin.COMMAND_FILE = self.dir / "no-command.json"
        self.assertFalse(tool["check_fn"]())
        schema = tool["schema"]
        self.assertEqual(schema["name"], "send_file")
        self.assertEqual(schema["parameters"]["required"], ["path"])
        self.assertEqual(set(schema["parameters"]["properties"]), {"path", "name"})
        self.assertEqual(set(self.ctx.hooks), {"pre_llm_call", "post_tool_call", "transform_llm_output", "on_session_end", "subagent_start", "subagent_stop"})
        self.assertTrue(all(len(v) == 1 for v in self.ctx.hooks.values()))

    # -- the tool -------------------------------------------------------------

    def test_tool_runs_prepare_with_an_argument_list_and_records_the_file(self):
        handler = self.ctx.tools["send_file"]["handler"]
        hostile = str(self.dir / "-x; rm -rf ~ $(id) `id`.png")
        result = json.loads(handler({"path": hostile}, task_id="t", session_id="s1"))
        (call,) = self.calls()
        # One argument, as given, after `--`: never a shell, never an option.
        self.assertEqual(call["argv"], ["prepare", "--json", "--", hostile])
        self.assertTrue(result["success"])
        self.assertIn("attached to your final reply", result["delivery"])
        published = result["media"][0]["path"]
        self.assertEqual(self.plugin.records.get("s1"), [published])
        self.assertEqual(self.plugin.records.get("other"), [])

    def test_tool_with_a_name_runs_one_prepare_of_the_file_under_that_name(self):
        handler = self.ctx.tools["send_file"]["handler"]
        result = json.loads(handler({"path": "/work/chart.png", "name": "Q3 chart.png"}, session_id="s1"))
        (call,) = self.calls()
        # One prepare of the real source (its path still checked), published once under the name.
        self.assertEqual(call["argv"], ["prepare", "--json", "--name=Q3 chart.png", "--", "/work/chart.png"])
        self.assertEqual(call["stdin"], "")
        self.assertEqual(self.plugin.records.get("s1"), [str(self.outbox / "Q3 chart.png")])
        self.assertEqual(result["media"][0]["name"], "Q3 chart.png")
        self.assertEqual(sorted(os.listdir(self.outbox)), ["Q3 chart.png"])

    def test_a_name_that_looks_like_an_option_stays_the_name(self):
        handler = self.ctx.tools["send_file"]["handler"]
        handler({"path": "-chart.png", "name": "--json.png"}, session_id="s1")
        (call,) = self.calls()
        self.assertEqual(call["argv"], ["prepare", "--json", "--name=--json.png", "--", "-chart.png"])

    def test_tool_refuses_bad_arguments_without_running_anything(self):
        handler = self.ctx.tools["send_file"]["handler"]
        for args in ({}, {"path": ""}, {"path": 3}, {"path": "/a.png", "name": ""}, {"path": "/a.png", "name": ["x"]}):
            self.assertEqual(json.loads(handler(args))["error"]["code"], "usage")
        self.assertEqual(self.calls(), [])

    def test_tool_reports_a_cli_that_cannot_run(self):
        os.environ["MEDIA_OUTBOX_BIN"] = str(self.dir / "missing")
        result = json.loads(self.ctx.tools["send_file"]["handler"]({"path": "/a.png"}, session_id="s1"))
        self.assertEqual(result["error"]["code"], "plugin_error")
        self.assertEqual(self.plugin.records.get("s1"), [])

    # -- the terminal tool ----------------------------------------------------

    def test_a_prepare_run_through_the_terminal_is_recorded_from_the_tool_result(self):
        post = self.hook("post_tool_call")
        out = "MEDIA:/o/a.png\nmedia-outbox: refused b.png: not_found: no such file\nMEDIA:/o/c.pdf"
        post(tool_name="terminal", args={"command": "media-outbox prepare a.png b.png c.pdf"}, result=json.dumps({"output": out, "exit_code": 1, "error": None}), session_id="s1", task_id="t", tool_call_id="c", turn_id="u")
        self.assertEqual(self.plugin.records.get("s1"), ["/o/a.png", "/o/c.pdf"])
        doc = json.dumps({"success": True, "media": [{"path": "/o/d.png"}], "media_dropped": []}, indent=2)
        post(tool_name="terminal", args={"command": "cd /w && media-outbox prepare --json d.png"}, result=json.dumps({"output": doc}), session_id="s1")
        self.assertEqual(self.plugin.records.get("s1"), ["/o/a.png", "/o/c.pdf", "/o/d.png"])
        # Anything else is not a prepare run.
        post(tool_name="terminal", args={"command": "echo MEDIA:/etc/passwd"}, result=json.dumps({"output": "MEDIA:/etc/passwd"}), session_id="s2")
        post(tool_name="read_file", args={"path": "media-outbox prepare"}, result="MEDIA:/etc/passwd", session_id="s2")
        self.assertEqual(self.plugin.records.get("s2"), [])
        self.assertEqual(self.calls(), [])

    def test_every_json_document_a_terminal_run_printed_is_read(self):
        post = self.hook("post_tool_call")
        doc = lambda *paths: json.dumps({"success": True, "media": [{"path": p} for p in paths], "media_dropped": []})
        cases = [
            # Two prepare --json runs in one command.
            ("media-outbox prepare --json a.txt; media-outbox prepare --json b.txt", doc("/o/a.txt") + "\n" + doc("/o/b.txt"), ["/o/a.txt", "/o/b.txt"]),
            # A command that printed a dict of its own first (and one after).
            ("python3 make.py && media-outbox prepare --json a.txt", "{'rows': 3}\n{\"rows\": 3}\n" + doc("/o/a.txt") + "\n{}", ["/o/a.txt"]),
            # prepare's own refusal line, merged from stderr before its document, escapes a name with a brace.
            ("media-outbox prepare --json a.txt $'b\\u200b.txt'", "media-outbox: refused b\\u{200b}.txt: unsafe_path_chars\n" + doc("/o/a.txt"), ["/o/a.txt"]),
            # Pretty-printed, with a document inside a broken one, and braces in strings.
            ("media-outbox prepare --json c.txt", '{"x": [1, } ' + json.dumps({"media": [{"path": "/o/c.txt", "name": "{c}"}]}, indent=2) + " }", ["/o/c.txt"]),
        ]
        for i, (command, output, expected) in enumerate(cases):
            session = "s%d" % i
            post(tool_name="terminal", args={"command": command}, result=json.dumps({"output": output, "exit_code": 0, "error": None}), session_id=session)
            self.assertEqual(self.plugin.records.get(session), expected, command)

    def test_reading_json_documents_stays_linear_in_the_output(self):
        # The work of a reading: every character handed to the decoder (each try decodes a
        # slice from its brace), at most a constant times the text's length.
        real = self.plugin._JSON
        work = []

        class Counting:
            def raw_decode(self, window):
                work.append(len(window))
                return real.raw_decode(window)

        self.plugin._JSON = Counting()

        def cost(output):
            work.clear()
            self.plugin.json_documents(output)
            return sum(work)

        doc = json.dumps({"media": [{"path": "/o/late.txt"}]})
        adversarial = {
            # Unclosed nesting just short of the parser's depth, again and again: a try at each
            # brace scans to the end of its block (200 times the text without the budget).
            "nested": lambda k: ('{"a":' * 400 + "0 x\n") * (100 * k),
            # Unclosed nesting past the parser's depth: each try fails only there.
            "deep": lambda k: '{"a":' * (100000 * k),
            # Many tries that fail at once, with no line break (a decode error counts the lines before it).
            "flat": lambda k: '{"x' * (50000 * k),
            # One document, then an unterminated string to the end.
            "string": lambda k: doc + '{"' + "x" * (100000 * k),
        }
        for name, make in adversarial.items():
            for k in (1, 2):
                text = make(k) + doc
                self.assertLessEqual(cost(text), 64 * len(text), name)
        # Cheap failures spend little of the budget: a document after 100,000 of them is found.
        found = self.plugin.json_documents('{"x' * 100000 + doc)
        self.assertEqual(self.plugin.published_paths(found[-1]), ["/o/late.txt"])
        # A document longer than the first slice is read whole; one cut short is not (the objects whole inside it are).
        big = {"media": [{"path": "/o/%d.txt" % i} for i in range(2000)]}
        self.assertEqual(self.plugin.json_documents("x " + json.dumps(big, indent=2) + " y"), [big])
        self.assertEqual(self.plugin.json_documents(json.dumps(big)[:-1]), [{"path": "/o/%d.txt" % i} for i in range(2000)])
        # Nested past the parser's depth: the try fails, nothing is raised.
        self.assertEqual(self.plugin.json_documents('{"a":' * 100000), [])

    # -- subagents ------------------------------------------------------------

    def test_a_subagents_file_is_recorded_for_its_parent_and_reaches_the_parents_reply(self):
        handler = self.ctx.tools["send_file"]["handler"]
        self.hook("pre_llm_call")(session_id="parent")
        # Hermes' _build_child_agent fires subagent_start with both session ids.
        self.hook("subagent_start")(parent_session_id="parent", parent_turn_id="u", parent_subagent_id=None, child_session_id="child", child_subagent_id="sa-0", child_role="leaf", child_goal="make a chart")
        self.hook("pre_llm_call")(session_id="child")
        published = json.loads(handler({"path": "/w/chart.csv"}, session_id="child"))["media"][0]["path"]
        self.assertEqual(self.hook("transform_llm_output")(response_text="Done.", session_id="child"), "Done.\nMEDIA:" + published)
        self.hook("on_session_end")(session_id="child")
        self.hook("subagent_stop")(parent_session_id="parent", child_session_id="child", child_summary="Done.", child_status="completed")
        self.assertEqual(self.plugin.records.get("parent"), [published])
        self.assertEqual(self.hook("transform_llm_output")(response_text="Your chart is ready.", session_id="parent"), "Your chart is ready.\nMEDIA:" + published)
        self.hook("on_session_end")(session_id="parent")
        # Handed to one reply: the next turn starts without it.
        self.hook("pre_llm_call")(session_id="parent")
        self.assertEqual(self.plugin.records.get("parent"), [])
        # After subagent_stop the child is no longer the parent's.
        self.plugin.records.add("child", ["/o/late.png"])
        self.assertEqual(self.plugin.records.get("parent"), [])

    def test_a_background_subagents_file_waits_for_the_parents_next_reply(self):
        # Hermes runs a top-level delegation in the background: the parent's turn ends, the child
        # publishes, and its result re-enters as a new turn (whose pre_llm_call starts a new record).
        self.hook("subagent_start")(parent_session_id="parent", child_session_id="child")
        self.hook("pre_llm_call")(session_id="parent")
        self.hook("transform_llm_output")(response_text="A subagent is on it.", session_id="parent")
        self.hook("on_session_end")(session_id="parent")
        self.plugin.records.add("child", ["/o/chart.csv"])
        self.hook("pre_llm_call")(session_id="parent")
        self.assertEqual(self.hook("transform_llm_output")(response_text="The chart is done.", session_id="parent"), "The chart is done.\nMEDIA:/o/chart.csv")
        self.hook("on_session_end")(session_id="parent")
        self.hook("pre_llm_call")(session_id="parent")
        self.assertIsNone(self.hook("transform_llm_output")(response_text="Anything else?", session_id="parent"))

    def test_nested_subagents_reach_the_top_and_a_cycle_ends(self):
        sub_start = self.hook("subagent_start")
        sub_start(parent_session_id="root", child_session_id="orchestrator")
        sub_start(parent_session_id="orchestrator", child_session_id="worker")
        self.plugin.records.add("worker", ["/o/w.png"])
        self.assertEqual(self.plugin.records.get("orchestrator"), ["/o/w.png"])
        self.assertEqual(self.plugin.records.get("root"), ["/o/w.png"])
        # Odd ids from a hook never loop or raise.
        sub_start(parent_session_id="worker", child_session_id="root")
        sub_start(parent_session_id="x", child_session_id="x")
        sub_start(parent_session_id=None, child_session_id=3)
        self.plugin.records.add("worker", ["/o/v.png"])
        self.assertEqual(self.plugin.records.get("root"), ["/o/w.png", "/o/v.png"])

    def test_the_media_lines_of_a_delegate_task_result_are_recorded_for_the_parent(self):
        post = self.hook("post_tool_call")
        result = json.dumps({"results": [{"task_index": 0, "status": "completed", "summary": "Made it.\nMEDIA:/o/chart.csv"}, {"summary": None}, "odd"], "total_duration_seconds": 3})
        post(tool_name="delegate_task", args={"goal": "make the chart"}, result=result, session_id="parent")
        self.assertEqual(self.plugin.records.get("parent"), ["/o/chart.csv"])
        # A background dispatch's handle, or anything unreadable, records nothing.
        for odd in (json.dumps({"status": "dispatched", "mode": "background"}), "not json", None, "[" * 100000):
            post(tool_name="delegate_task", args={}, result=odd, session_id="other")
        self.assertEqual(self.plugin.records.get("other"), [])

    def test_what_is_recorded_stays_bounded_and_odd_output_never_raises(self):
        post = self.hook("post_tool_call")
        run = {"command": "media-outbox prepare x.png"}
        # Output nested deeper than the JSON parser goes, as the result or inside it.
        deep = "[" * 100000
        post(tool_name="terminal", args=run, result=deep, session_id="s1")
        post(tool_name="terminal", args=run, result=json.dumps({"output": "{" + deep + "}"}), session_id="s1")
        # A path longer than any the kernel takes, and more files than a turn keeps.
        lines = ["MEDIA:/o/" + "a" * 5000 + ".png"] + ["MEDIA:/o/%d.png" % i for i in range(200)]
        post(tool_name="terminal", args=run, result=json.dumps({"output": "\n".join(lines)}), session_id="s1")
        recorded = self.plugin.records.get("s1")
        self.assertEqual(len(recorded), self.plugin.MAX_FILES_PER_TURN)
        self.assertEqual(recorded[0], "/o/0.png")
        # Sessions are bounded too: the oldest goes first.
        for i in range(self.plugin.MAX_SESSIONS + 10):
            self.plugin.records.add("many-%d" % i, ["/o/x.png"])
        self.assertEqual(self.plugin.records.get("s1"), [])
        self.assertEqual(self.plugin.records.get("many-%d" % (self.plugin.MAX_SESSIONS + 9)), ["/o/x.png"])

    def test_turns_start_and_end_empty_and_sessions_stay_apart(self):
        self.plugin.records.add("s1", ["/o/a.png"])
        self.plugin.records.add("s2", ["/o/b.png"])
        self.hook("pre_llm_call")(session_id="s1", task_id="t", turn_id="u", user_message="hi")
        self.assertEqual(self.plugin.records.get("s1"), [])
        self.assertEqual(self.plugin.records.get("s2"), ["/o/b.png"])
        self.hook("on_session_end")(session_id="s2", completed=True, interrupted=False)
        self.assertEqual(self.plugin.records.get("s2"), [])

    # -- subagents' files across a gateway restart -----------------------------

    def state(self):
        return self.hermes / "state" / "media-outbox" / "delegated.json"

    def restarted(self):
        """The gateway restarted: a new plugin instance, its memory empty."""
        plugin = load_plugin()
        ctx = StandInContext()
        plugin.register(ctx)
        return plugin, {name: callbacks[0] for name, callbacks in ctx.hooks.items()}

    def test_a_subagents_waiting_file_survives_a_gateway_restart_and_is_removed_once_delivered(self):
        self.hook("subagent_start")(parent_session_id="parent", child_session_id="child")
        self.hook("subagent_start")(parent_session_id="other-parent", child_session_id="other-child")
        published = json.loads(self.ctx.tools["send_file"]["handler"]({"path": "/w/chart.csv"}, session_id="child"))["media"][0]["path"]
        self.plugin.records.add("other-child", ["/o/other.png"])
        self.assertEqual(json.loads(self.state().read_text()), {"version": 1, "sessions": {"parent": [published], "other-parent": ["/o/other.png"]}})
        self.assertEqual(stat.S_IMODE(self.state().stat().st_mode), 0o600)
        self.assertEqual(stat.S_IMODE(self.state().parent.stat().st_mode), 0o700)
        plugin, hooks = self.restarted()
        self.assertEqual(plugin.records.get("parent"), [published])
        hooks["pre_llm_call"](session_id="parent")
        self.assertEqual(hooks["transform_llm_output"](response_text="Your chart is ready.", session_id="parent"), "Your chart is ready.\nMEDIA:" + published)
        # Delivered: gone from the file; the other session's file still waits.
        self.assertEqual(json.loads(self.state().read_text()), {"version": 1, "sessions": {"other-parent": ["/o/other.png"]}})
        hooks["on_session_end"](session_id="parent")
        hooks["pre_llm_call"](session_id="parent")
        self.assertIsNone(hooks["transform_llm_output"](response_text="Anything else?", session_id="parent"))
        self.assertEqual(hooks["transform_llm_output"](response_text="Done.", session_id="other-parent"), "Done.\nMEDIA:/o/other.png")
        # Nothing waits: no file is left, and no temporary one either.
        self.assertEqual(os.listdir(self.state().parent), [])
        # A turn's own files (not a subagent's) are not kept on disk: a restart ends the turn.
        plugin.records.add("parent", ["/o/own.png"])
        self.assertFalse(self.state().exists())

    def test_the_state_file_stays_bounded(self):
        sub_start = self.hook("subagent_start")
        for i in range(self.plugin.MAX_SESSIONS + 10):
            sub_start(parent_session_id="p-%d" % i, child_session_id="c-%d" % i)
            self.plugin.records.add("c-%d" % i, ["/o/%d/%s.png" % (i, "x" * 3800)])
        sessions = json.loads(self.state().read_text())["sessions"]
        self.assertEqual(len(sessions), self.plugin.MAX_SESSIONS)
        self.assertEqual(next(iter(sessions)), "p-10")
        # Past its bytes, the oldest sessions go first.
        sub_start(parent_session_id="big", child_session_id="big-child")
        self.plugin.records.add("big-child", ["/o/%d/%s.png" % (i, "y" * 4000) for i in range(self.plugin.MAX_FILES_PER_TURN + 5)])
        text = self.state().read_text()
        self.assertLessEqual(len(text), self.plugin.MAX_STATE_BYTES)
        sessions = json.loads(text)["sessions"]
        self.assertEqual(list(sessions)[-1], "big")
        self.assertEqual(len(sessions["big"]), self.plugin.MAX_FILES_PER_TURN)
        self.assertLess(len(sessions), self.plugin.MAX_SESSIONS - 40)
        self.assertEqual(list(sessions)[-2], "p-%d" % (self.plugin.MAX_SESSIONS + 9))
        # A file grown past the bound (not by the plugin) is not read, and is replaced at the next write.
        self.state().write_text(json.dumps({"version": 1, "sessions": {"big": ["/o/z.png"], "pad": ["x" * self.plugin.MAX_STATE_BYTES]}}))
        plugin, _ = self.restarted()
        with self.assertLogs(plugin.logger, logging.WARNING) as logs:
            self.assertEqual(plugin.records.get("big"), [])
        self.assertIn("is not read", logs.output[0])
        # Unreadable or odd content the same way, without raising.
        for odd in ["not json", "[1]", '{"version": 2, "sessions": {}}', "[" * 100000, '{"version": 1, "sessions": {"big": "/o/a.png", "s": [1, null, "/o/b.png"]}}']:
            self.state().write_text(odd)
            with self.assertLogs(plugin.logger, logging.WARNING) if "/o/b.png" not in odd else _no_logs():
                self.assertEqual(plugin.records.claim("big"), [])
        self.assertEqual(plugin.records.claim("s"), ["/o/b.png"])

    def test_a_planted_link_is_never_followed(self):
        sub_start = self.hook("subagent_start")
        sub_start(parent_session_id="parent", child_session_id="child")
        victim = self.dir / "victim.txt"
        victim.write_text("the agent cannot write this\n")
        planted = self.dir / "planted.json"
        planted.write_text(json.dumps({"version": 1, "sessions": {"parent": ["/etc/passwd"]}}))
        self.state().parent.mkdir(parents=True, mode=0o700)
        # The state file a symlink: not read (its paths never join a reply), and replaced, not written through.
        for target in (victim, planted):
            self.state().symlink_to(target)
            plugin, _ = self.restarted()
            with self.assertLogs(plugin.logger, logging.WARNING):
                self.assertEqual(plugin.records.get("parent"), [])
            with self.assertLogs(plugin.logger, logging.WARNING):
                self.plugin.records.add("child", ["/o/a.png"])
            self.assertFalse(self.state().is_symlink())
            self.assertEqual(json.loads(self.state().read_text())["sessions"], {"parent": ["/o/a.png"]})
            self.state().unlink()
        self.assertEqual(victim.read_text(), "the agent cannot write this\n")
        # A hard link to another file, or a FIFO (a read would block): not read.
        os.link(planted, self.state())
        with self.assertLogs(self.plugin.logger, logging.WARNING):
            self.assertEqual(self.restarted()[0].records.get("parent"), [])
        self.state().unlink()
        os.mkfifo(self.state())
        with self.assertLogs(self.plugin.logger, logging.WARNING):
            self.assertEqual(self.restarted()[0].records.get("parent"), [])
        self.state().unlink()
        # Either directory a symlink, or writable by others: nothing is written there, and the file still waits in memory.
        elsewhere = self.dir / "elsewhere"
        elsewhere.mkdir(mode=0o700)
        ours, state = self.state().parent, self.state().parent.parent
        for link in (ours, state):
            shutil.rmtree(link)
            link.symlink_to(elsewhere)
            with self.assertLogs(self.plugin.logger, logging.WARNING) as logs:
                self.plugin.records.add("child", ["/o/b.png"])
            self.assertIn("wait in memory only", logs.output[0])
            self.assertEqual(os.listdir(elsewhere), [])
            link.unlink()
            ours.mkdir(parents=True)
            state.chmod(0o700)
        ours.chmod(0o777)
        ours.chmod(0o777)
        with self.assertLogs(self.plugin.logger, logging.WARNING):
            self.plugin.records.add("child", ["/o/c.png"])
        self.assertEqual(os.listdir(ours), [])
        with self.assertLogs(self.plugin.logger, logging.WARNING):
            final = self.hook("transform_llm_output")(response_text="Done.", session_id="parent")
        self.assertEqual(final, "Done.\nMEDIA:/o/a.png\nMEDIA:/o/b.png\nMEDIA:/o/c.png")

    # -- the final-reply hook -------------------------------------------------

    def test_hook_hands_the_reply_and_the_turns_files_to_check_reply(self):
        self.plugin.records.add("s1", ["/o/a.png", "/o/b.pdf"])
        out = self.hook("transform_llm_output")(response_text="Done: ünïcode ✓", session_id="s1", model="m", platform="telegram")
        (call,) = self.calls()
        self.assertEqual(call["argv"], ["check-reply", "--json", "--media", "/o/a.png", "--media", "/o/b.pdf"])
        self.assertEqual(call["stdin"], "Done: ünïcode ✓")
        self.assertEqual(out, "Done: ünïcode ✓\nMEDIA:/o/a.png\nMEDIA:/o/b.pdf")

    def test_hook_spawns_nothing_for_a_reply_without_media_when_nothing_was_published(self):
        hook = self.hook("transform_llm_output")
        self.assertIsNone(hook(response_text="Just text, nothing to send.", session_id="s1", model="m", platform="cli"))
        self.assertIsNone(hook(response_text="", session_id="s1"))
        self.assertIsNone(hook(response_text=None, session_id="s1"))
        self.assertEqual(self.calls(), [])
        # A directive alone is enough to be judged.
        hook(response_text="see media:/tmp/x.png", session_id="s1")
        self.assertEqual(len(self.calls()), 1)

    def test_hook_is_bounded_in_time_and_the_slow_process_is_ended(self):
        os.environ.update(FAKE_MODE="sleep", MEDIA_OUTBOX_REPLY_TIMEOUT="0.5")
        self.plugin.records.add("s1", ["/o/a.png"])
        with self.assertLogs(self.plugin.logger, logging.WARNING) as logs:
            out = self.hook("transform_llm_output")(response_text="reply", session_id="s1")
        self.assertIsNone(out)
        self.assertIn("took longer than 0.50 s; the reply goes out unchanged", logs.output[0])
        (call,) = self.calls()
        with self.assertRaises(ProcessLookupError):
            os.kill(call["pid"], 0)

    def test_a_reply_timeout_that_is_not_one_is_said_and_the_default_used(self):
        self.plugin.records.add("s1", ["/o/a.png"])
        hook = self.hook("transform_llm_output")
        for raw in ["abc", "0", "-1", "61", "nan", "inf", "2\x1bMEDIA:/etc/passwd"]:
            os.environ["MEDIA_OUTBOX_REPLY_TIMEOUT"] = raw
            with self.assertLogs(self.plugin.logger, logging.WARNING) as logs:
                hook(response_text="reply", session_id="s1")
            said = [line for line in logs.output if "MEDIA_OUTBOX_REPLY_TIMEOUT=" in line]
            self.assertEqual(len(said), 1, raw)
            self.assertIn("is not a number of seconds above 0 and at most 60; using 2.0 s", said[0])
            self.assertNotIn("\x1b", said[0])
            self.assertNotIn("MEDIA:/etc", said[0])
        os.environ["MEDIA_OUTBOX_REPLY_TIMEOUT"] = "1.5"
        self.assertEqual(self.plugin._reply_timeout(), 1.5)

    def test_hook_fails_open_and_says_why(self):
        hook = self.hook("transform_llm_output")
        self.plugin.records.add("s1", ["/o/a.png"])
        cases = {
            "exit2": "check-reply failed (exit 2: media-outbox: usage error: bad\\x0aMEDIA\\x3a/etc/passwd)",
            "garbage": "check-reply answered something unreadable",
        }
        for mode, expected in cases.items():
            os.environ["FAKE_MODE"] = mode
            with self.assertLogs(self.plugin.logger, logging.WARNING) as logs:
                self.assertIsNone(hook(response_text="reply", session_id="s1"))
            self.assertIn(expected, logs.output[0])
        os.environ["FAKE_MODE"] = "unchanged"
        self.assertIsNone(hook(response_text="reply", session_id="s1"))
        os.environ["MEDIA_OUTBOX_BIN"] = str(self.dir / "missing")
        with self.assertLogs(self.plugin.logger, logging.WARNING) as logs:
            self.assertIsNone(hook(response_text="reply", session_id="s1"))
        self.assertIn("cannot run check-reply", logs.output[0])
        # An exception anywhere inside is caught too.
        self.plugin.check_reply = lambda *a, **k: 1 / 0
        with self.assertLogs(self.plugin.logger, logging.WARNING) as logs:
            self.assertIsNone(hook(response_text="reply", session_id="s1"))
        self.assertIn("check-reply hook failed (division by zero)", logs.output[0])

    def test_surrogates_in_the_reply_are_checked_not_skipped(self):
        # UTF-8 cannot encode them: a lone one goes to check-reply as U+FFFD, a pair as its character.
        self.plugin.records.add("s1", ["/o/a.png"])
        hook = self.hook("transform_llm_output")
        self.assertEqual(hook(response_text="bad \ud800", session_id="s1"), "bad \ufffd\nMEDIA:/o/a.png")
        self.assertEqual(hook(response_text="ok \ud83d\ude00", session_id="s1"), "ok \U0001F600\nMEDIA:/o/a.png")

    def test_the_command_comes_from_the_environment_then_command_json_then_path(self):
        self.assertEqual(self.plugin.media_outbox_command(), [os.environ["MEDIA_OUTBOX_BIN"]])
        del os.environ["MEDIA_OUTBOX_BIN"]
        command_file = self.dir / "command.json"
        command_file.write_text(json.dumps(["/usr/bin/node", "/opt/mo/bin/media-outbox"]))
        self.plugin.COMMAND_FILE = command_file
        self.assertEqual(self.plugin.media_outbox_command(), ["/usr/bin/node", "/opt/mo/bin/media-outbox"])
        command_file.write_text('"not a list"')
        os.environ["PATH"] = str(self.dir)
        with self.assertLogs(self.plugin.logger, logging.WARNING):
            self.assertEqual(self.plugin.media_outbox_command(), [str(self.dir / "media-outbox")])

    def test_log_text_never_carries_a_control_character_or_a_directive(self):
        self.assertEqual(self.plugin._safe("a\nMEDIA:/etc/x\u2028b\\"), "a\\x0aMEDIA\\x3a/etc/x\\u{2028}b\\x5c")


class _no_logs:
    """A context that expects nothing (where assertLogs would fail for want of a warning)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


if __name__ == "__main__":
    unittest.main()
