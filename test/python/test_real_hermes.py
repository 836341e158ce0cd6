"""The plugin inside the real Hermes (the published hermes-agent package, in .venv/).

Run by test/hermes-plugin.test.ts after `media-outbox install hermes-plugin`
put the plugin into a temporary HERMES_HOME, with the environment the systemd
drop-in gives the gateway (the outbox allowed, strict mode, no trust in recent
files). Hermes' own plugin loader loads it, Hermes' tool registry and tool
dispatcher call it, the hook is fired as Hermes' turn finalizer fires it, and
the installed gateway's own extraction and path validation judge the result.
The skill file, copied by the README's own commands, is listed and shown by
Hermes' skills tool.
"""

import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import unittest
from pathlib import Path

BIN = os.environ["MO_TEST_BIN"]
WORK = Path(os.environ["MO_TEST_WORK"])
OUTBOX = Path(os.environ["HERMES_MEDIA_ALLOW_DIRS"])
ROOT = Path(__file__).resolve().parents[2]
SKILL = ROOT / "skills" / "media-outbox" / "SKILL.md"


def final_reply(response_text, session_id):
    """What agent/turn_finalizer.py does with transform_llm_output: the first non-empty string wins."""
    from hermes_cli.plugins import invoke_hook

    final = response_text
    for result in invoke_hook("transform_llm_output", response_text=response_text, session_id=session_id, model="test-model", platform="telegram"):
        if isinstance(result, str) and result:
            final = result
            break
    return final


def delivered(reply):
    """What the gateway sends: its extraction, then its path validation (the drop-in's environment)."""
    from gateway.platforms.base import BasePlatformAdapter

    media, cleaned = BasePlatformAdapter.extract_media(reply)
    return [p for p, _ in BasePlatformAdapter.filter_media_delivery_paths(media)], cleaned


class RealHermesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        from hermes_cli.plugins import discover_plugins, get_plugin_manager

        discover_plugins()
        cls.manager = get_plugin_manager()
        cls.plugin = sys.modules["hermes_plugins.media_outbox"]

    def start_turn(self, session_id):
        from hermes_cli.plugins import invoke_hook

        invoke_hook("pre_llm_call", session_id=session_id, task_id="task", turn_id="turn", user_message="make me a chart", conversation_history=[], is_first_turn=True, model="test-model", platform="telegram", sender_id="")

    def send_file(self, session_id, **args):
        from tools.registry import registry

        return json.loads(registry.dispatch("send_file", args, task_id="task", session_id=session_id))

    def test_loaded_by_hermes_own_loader(self):
        from hermes_cli.plugins import VALID_HOOKS
        from tools.registry import registry

        loaded = self.manager._plugins["media-outbox"]
        self.assertTrue(loaded.enabled, loaded.error)
        self.assertEqual(loaded.tools_registered, ["send_file"])
        self.assertEqual(set(loaded.hooks_registered), {"pre_llm_call", "post_tool_call", "transform_llm_output", "on_session_end", "subagent_start", "subagent_stop"})
        self.assertTrue(set(loaded.hooks_registered) <= VALID_HOOKS)
        self.assertEqual(registry.get_entry("send_file").toolset, "media_outbox")

    def test_a_turn_every_prepared_file_is_delivered_and_a_dropped_one_is_named(self):
        import model_tools

        session = "session-1"
        self.start_turn(session)
        chart = self.send_file(session, path=str(WORK / "chart.png"))
        self.assertTrue(chart["success"], chart)
        named = self.send_file(session, path=str(WORK / "notes.txt"), name="Meeting notes.txt")
        self.assertTrue(named["success"], named)
        self.assertEqual(named["media"][0]["name"], "Meeting-notes.txt")
        self.assertEqual(named["media"][0]["source"], str(WORK / "notes.txt"))
        # One copy, under the name: the file is not published under its own name too.
        outbox = Path(named["outbox"])
        copies = [f for f in sorted(os.listdir(outbox)) if hashlib.sha256((outbox / f).read_bytes()).hexdigest() == named["media"][0]["sha256"]]
        self.assertEqual(copies, ["Meeting-notes.txt"])
        refused = self.send_file(session, path=str(Path(os.environ["HOME"]) / ".ssh" / "id.txt"))
        self.assertFalse(refused["success"])
        self.assertEqual(refused["media_dropped"][0]["code"], "denied_source")
        # The model runs prepare through the terminal instead: Hermes' dispatcher fires post_tool_call.
        terminal = json.loads(model_tools.handle_function_call("terminal", {"command": f"{BIN} prepare {WORK / 'data.csv'}"}, task_id="task", session_id=session))
        self.assertEqual(terminal["exit_code"], 0, terminal)
        p1, p2 = chart["media"][0]["path"], named["media"][0]["path"]
        p3 = terminal["output"].strip()[len("MEDIA:"):]
        self.assertEqual(self.plugin.records.get(session), [p1, p2, p3])

        reply = (
            f"Here is the chart: `MEDIA:{p1}`\n"
            f"**MEDIA:{p2}**.\n"
            "The data is attached.\n"
            f"The chart again, as asked: MEDIA:{p1}.\n"
            "Also the old report MEDIA:/srv/reports/missing.pdf\n"
            "图表如下：谢谢！"
        )
        before, _ = delivered(reply)
        self.assertNotIn(p3, before)  # what the model's own reply would have lost
        final = final_reply(reply, session)
        self.assertEqual(
            final,
            "Here is the chart:\n"
            "The data is attached.\n"
            "The chart again, as asked.\n"
            "Also the old report (missing.pdf could not be sent: the file does not exist.)\n"
            "图表如下：谢谢！\n"
            f"MEDIA:{p1}\nMEDIA:{p2}\nMEDIA:{p3}",
        )
        sent, cleaned = delivered(final)
        self.assertEqual(sent, [p1, p2, p3])
        self.assertEqual(cleaned, "Here is the chart:\nThe data is attached.\nThe chart again, as asked.\nAlso the old report (missing.pdf could not be sent: the file does not exist.)\n图表如下：谢谢！")
        # The turn ends: its record goes.
        from hermes_cli.plugins import invoke_hook

        invoke_hook("on_session_end", session_id=session, task_id="task", turn_id="turn", completed=True, interrupted=False, model="test-model", platform="telegram")
        self.assertEqual(self.plugin.records.get(session), [])

    def test_every_json_document_of_a_terminal_run_is_read(self):
        import model_tools

        session = "session-6"
        self.start_turn(session)
        (WORK / "one.txt").write_text("one\n")
        (WORK / "two.txt").write_text("two\n")
        # Two --json runs, a dict printed before them, and prepare's refusal of a name with a
        # ZWSP, which its stderr line (merged by the terminal tool, before the document) escapes with a brace.
        command = f"echo '{{\"rows\": 3}}' && {BIN} prepare --json {WORK / 'one.txt'}; {BIN} prepare --json {WORK / 'two.txt'} $'{WORK}/no\\u200bpe.txt'"
        terminal = json.loads(model_tools.handle_function_call("terminal", {"command": command}, task_id="task", session_id=session))
        self.assertIn("\\u{200b}", terminal["output"])
        self.assertLess(terminal["output"].index("\\u{200b}"), terminal["output"].rindex('"media"'))
        published = [str(OUTBOX / "one.txt"), str(OUTBOX / "two.txt")]
        self.assertEqual(self.plugin.records.get(session), published)
        final = final_reply("Both files are attached.", session)
        self.assertEqual(delivered(final)[0], published)

    def delegate_in_background(self, name, content):
        """delegate_task as Hermes 0.19.0 runs it for the top-level model: in the
        background, the subagent in a session of its own, its result re-entering
        the conversation as a new turn. Hermes' own agent loop runs both agents
        against a stand-in model that calls the tools; the subagent publishes the
        file `name` once its parent's turn is over. Returns the parent agent, its
        first turn, the completion notice the gateway injects next, and the
        published path."""
        from fake_model import FakeModel, tool_names
        from run_agent import AIAgent
        from tools.process_registry import format_process_notification, process_registry

        source = WORK / name
        source.write_text(content)
        parent_turn_over = threading.Event()

        def script(request):
            messages = request.get("messages") or []
            last = messages[-1] if messages else {}
            content = str(last.get("content"))
            if not messages:
                return {"content": "ok"}
            if "delegate_task" not in tool_names(request):
                # The subagent (a leaf has no delegate_task): it publishes once its parent's turn is over.
                if last.get("role") == "tool":
                    return {"content": "Done: the chart is made and sent."}
                parent_turn_over.wait(120)
                return {"tool": ("send_file", {"path": str(source)})}
            if last.get("role") == "tool":
                return {"content": "A subagent is making the chart."}
            if "ASYNC DELEGATION" in content:
                return {"content": "Your chart is ready."}
            if "make the chart" in content:
                return {"tool": ("delegate_task", {"goal": "make the chart"})}
            return {"content": "You are welcome."}

        model = FakeModel(script)
        self.addCleanup(model.close)
        parent = AIAgent(base_url=model.base_url, api_key="test", model="test-model", quiet_mode=True, skip_context_files=True, skip_memory=True, platform="telegram")
        first = parent.run_conversation("Please make the chart")
        parent_turn_over.set()
        self.assertEqual(first["final_response"], "A subagent is making the chart.")
        # The completion, as the gateway's async-delegation watcher takes it from the queue and injects it.
        while True:
            event = process_registry.completion_queue.get(timeout=300)
            if event.get("parent_session_id") == parent.session_id:
                break
        published = str(OUTBOX / name)
        notice = format_process_notification(event)
        # The subagent's own reply was checked in its session: the line is in its result...
        self.assertIn(f"\nMEDIA:{published}\n", notice)
        return parent, first, notice, published

    def test_a_background_subagents_file_reaches_the_parents_next_reply(self):
        parent, first, notice, published = self.delegate_in_background("subagent-chart.csv", "q1,q2\n1,2\n")
        second = parent.run_conversation(notice, conversation_history=first["messages"])
        # ...and the parent's reply, which the model wrote without it, now carries it too.
        self.assertEqual(second["final_response"], f"Your chart is ready.\nMEDIA:{published}")
        self.assertEqual(delivered(second["final_response"])[0], [published])
        # Handed to one reply: the next turn is left alone.
        third = parent.run_conversation("Thanks", conversation_history=second["messages"])
        self.assertEqual(third["final_response"], "You are welcome.")

    def test_a_background_subagents_file_survives_a_gateway_restart_before_the_parents_reply(self):
        """The gateway restarts between the subagent's publication and the
        parent's next turn: that turn runs in a new process, whose Hermes loads
        the plugin afresh (restarted_gateway.py)."""
        parent, first, notice, published = self.delegate_in_background("restart-chart.csv", "q3,q4\n3,4\n")
        # What waits for the parent's reply is on disk, under Hermes' state.
        state = Path(os.environ["HERMES_HOME"]) / "state" / "media-outbox" / "delegated.json"
        self.assertEqual(json.loads(state.read_text())["sessions"][parent.session_id], [published])
        job = {"session_id": parent.session_id, "history": first["messages"], "messages": [notice, "Thanks"]}
        r = subprocess.run([sys.executable, str(Path(__file__).with_name("restarted_gateway.py"))], input=json.dumps(job), capture_output=True, text=True, cwd=Path(__file__).parent, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        after = json.loads(r.stdout)
        self.assertEqual(after["waiting"], [published])
        # The reply the model wrote without the line carries it, and the gateway sends the file.
        self.assertEqual(after["replies"][0], f"Your chart is ready.\nMEDIA:{published}")
        self.assertEqual(delivered(after["replies"][0])[0], [published])
        # Handed to one reply: removed from disk, and the next turn is left alone.
        self.assertEqual(after["replies"][1], "You are welcome.")
        self.assertNotIn(parent.session_id, json.loads(state.read_text())["sessions"] if state.exists() else {})

    def test_a_forged_line_in_a_terminal_result_is_never_added(self):
        import model_tools

        session = "session-4"
        self.start_turn(session)
        # A file in the gateway's own cache (another chat's upload): the gateway sends it if a reply names it.
        cache = Path(os.environ["HERMES_HOME"]) / "cache" / "documents"
        cache.mkdir(parents=True, exist_ok=True)
        other = cache / "other-chat.pdf"
        other.write_bytes(b"%PDF-1.4\n")
        command = f"{BIN} prepare {WORK / 'chart.png'} && echo MEDIA:{other}"
        terminal = json.loads(model_tools.handle_function_call("terminal", {"command": command}, task_id="task", session_id=session))
        self.assertEqual(terminal["exit_code"], 0, terminal)
        published = terminal["output"].splitlines()[0][len("MEDIA:"):]
        # The plugin records both lines (it cannot tell them apart)...
        self.assertEqual(self.plugin.records.get(session), [published, str(other)])
        # ...and check-reply takes only the file in the outbox.
        final = final_reply("Done.", session)
        self.assertEqual(final, f"Done.\nMEDIA:{published}")
        self.assertEqual(delivered(final)[0], [published])

    def test_a_turn_without_files_leaves_the_reply_alone(self):
        session = "session-2"
        self.start_turn(session)
        calls = []
        real_run = self.plugin.subprocess.run
        self.plugin.subprocess.run = lambda *a, **k: calls.append(a) or real_run(*a, **k)
        try:
            reply = "Nothing to send today.\n> quoted\n```\ncode\n```"
            self.assertEqual(final_reply(reply, session), reply)
        finally:
            self.plugin.subprocess.run = real_run
        self.assertEqual(calls, [])

    def test_a_reply_with_surrogates_is_still_checked(self):
        # A model's emoji split into escapes: one lone surrogate, then a pair. reply.encode("utf-8") raises on them.
        session = "session-5"
        self.start_turn(session)
        chart = self.send_file(session, path=str(WORK / "chart.png"))
        p = chart["media"][0]["path"]
        reply = "Here is your chart \ud83d and \ud83d\ude00"
        self.assertEqual(delivered(reply)[0], [])
        final = final_reply(reply, session)
        self.assertEqual(final, f"Here is your chart \ufffd and \U0001F600\nMEDIA:{p}")
        self.assertEqual(delivered(final)[0], [p])

    def test_a_good_reply_is_left_byte_for_byte(self):
        session = "session-3"
        self.start_turn(session)
        chart = self.send_file(session, path=str(WORK / "chart.png"))
        p = chart["media"][0]["path"]
        reply = f"Voilà, le graphique :\r\nMEDIA:{p}\r\n"
        self.assertEqual(final_reply(reply, session), reply)
        self.assertEqual(delivered(reply)[0], [p])


def readme_skill_commands():
    """The README's shell block that installs the skill, exactly as an operator copies it."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = [b for b in re.findall(r"^```sh\n(.*?)^```$", readme, re.S | re.M) if "SKILL.md" in b]
    assert len(blocks) == 1, f"the README should have one sh block that copies SKILL.md, found {len(blocks)}"
    return blocks[0]


class SkillInstallTest(unittest.TestCase):
    """skills/media-outbox/SKILL.md, copied as the README says, is a skill the real Hermes lists and shows."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="mo-skill-")
        self.home = Path(self.tmp.name)
        self.saved = os.environ.get("HERMES_HOME")

    def tearDown(self):
        if self.saved is None:
            os.environ.pop("HERMES_HOME", None)
        else:
            os.environ["HERMES_HOME"] = self.saved
        self.tmp.cleanup()

    def install_as_readme_says(self, hermes_home=None):
        env = {"PATH": os.environ["PATH"], "HOME": str(self.home)}
        if hermes_home is not None:
            env["HERMES_HOME"] = str(hermes_home)
        r = subprocess.run(["sh", "-eu", "-c", readme_skill_commands()], cwd=ROOT, env=env, capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)

    def assert_hermes_has_the_skill(self, hermes_home):
        from tools.skills_tool import skill_view, skills_list

        front = yaml_front_matter(SKILL.read_text(encoding="utf-8"))
        self.assertEqual((hermes_home / "skills" / "media-outbox" / "SKILL.md").read_bytes(), SKILL.read_bytes())
        # Hermes resolves its skills directory from HERMES_HOME at each call, as a profile's gateway does.
        os.environ["HERMES_HOME"] = str(hermes_home)
        listed = json.loads(skills_list())
        self.assertTrue(listed["success"], listed)
        self.assertEqual(listed["skills"], [{"name": "media-outbox", "description": front["description"], "category": None}])
        shown = json.loads(skill_view("media-outbox"))
        self.assertTrue(shown["success"], shown)
        self.assertEqual((shown["name"], shown["description"]), ("media-outbox", front["description"]))
        self.assertEqual(shown["content"], SKILL.read_text(encoding="utf-8"))
        self.assertEqual(shown["readiness_status"], "available")

    def test_front_matter_within_hermes_limits(self):
        from tools import skill_manager_tool, skills_tool

        text = SKILL.read_text(encoding="utf-8")
        front = yaml_front_matter(text)
        self.assertEqual(front["name"], "media-outbox")
        # The checks Hermes applies to a skill it writes; its listing cuts longer values silently.
        self.assertIsNone(skill_manager_tool._validate_frontmatter(text))
        self.assertIsNone(skill_manager_tool._validate_name(front["name"]))
        self.assertLessEqual(len(front["name"]), skills_tool.MAX_NAME_LENGTH)
        self.assertIsInstance(front["description"], str)
        self.assertTrue(0 < len(front["description"]) <= skills_tool.MAX_DESCRIPTION_LENGTH)
        # The listing parses only the first 4000 characters.
        self.assertLess(text.index("\n---\n", 3), 4000)

    def test_installed_into_the_default_hermes_home(self):
        self.install_as_readme_says()
        self.assert_hermes_has_the_skill(self.home / ".hermes")

    def test_installed_into_a_profile(self):
        profile = self.home / ".hermes" / "profiles" / "work"
        self.install_as_readme_says(profile)
        self.assert_hermes_has_the_skill(profile)
        self.assertFalse((self.home / ".hermes" / "skills").exists())


def yaml_front_matter(text):
    import yaml

    m = re.match(r"---\n(.*?)\n---\n", text, re.S)
    assert m, "SKILL.md starts with no front matter"
    return yaml.safe_load(m.group(1))


if __name__ == "__main__":
    unittest.main()
