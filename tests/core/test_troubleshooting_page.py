"""docs/troubleshooting.md is what scripts/troubleshooting.py writes from the sources, and that
scan sees what it claims to: the operators' rule that turns a ValueError into an ERROR report,
raises and reports with their f-string fields, and the core modules the add-on reaches."""

import ast
import textwrap

from scripts import troubleshooting as ts


def test_the_page_is_up_to_date():
    assert ts.PAGE.read_text() == ts.page(), \
        "docs/troubleshooting.md is out of date: run python scripts/troubleshooting.py"


def test_operators_report_value_errors():
    """The page's premise: the operators' wrapper reports a ValueError's text as an ERROR."""
    found = ts.messages(ts.ROOT / "addon" / "operators" / "_common.py")
    assert (("ERROR", "wrapper", "‹str(exc)›") in [(lvl, fn, text) for _, lvl, fn, text in found])
    source = (ts.ROOT / "addon" / "operators" / "_common.py").read_text()
    handler = next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ExceptHandler))
    assert ast.unparse(handler.type) == "ValueError"


def test_messages_are_read_with_their_fields(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(textwrap.dedent('''
        def run(self, bone, n):
            if n < 1:
                raise InvalidInputError(f"bone {bone.name!r} needs {n} frames; " "add more")
            self.report({"WARNING"}, "only " + str(n) + " samples")
            self.report({"INFO"}, "fine")
            raise KeyError("not a user's message")
    '''))
    assert ts.messages(path) == [
        (4, "ERROR", "run", "bone ‹bone.name› needs ‹n› frames; add more"),
        (5, "WARNING", "run", "only ‹str(n)› samples")]


def test_every_addon_message_is_on_the_page_under_its_panel():
    text = ts.PAGE.read_text()
    for rel in ts.PANELS:
        for _, _, _, message in ts.messages(ts.ROOT / "addon" / rel):
            assert message in text, (rel, message)
    assert "### Simulate panel, Collider subpanel" in text


def test_the_core_modules_reached_include_the_forwarding_chain():
    reached = ts.core_modules_reached()
    # imported by the add-on itself, and reached only through other core modules
    assert {"core.io.osim", "core.rig", "core.transfer"} <= set(reached)
    assert "core.limits" in reached and "core.model" in reached
    assert "core.errors" in reached
