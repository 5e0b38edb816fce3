"""Which chat requests ``fastapply serve`` reads as an edit in the apply form (``ChatRequest.apply_form``)."""

from __future__ import annotations

import pytest

pytest.importorskip("pydantic")


def request(*messages: tuple[str, object]):
    from fastapply.serve_api import ChatRequest

    return ChatRequest.model_validate({"messages": [{"role": role, "content": content} for role, content in messages]})


def test_the_apply_form_gives_the_file_the_update_and_the_instruction_verbatim():
    edit = request(("user", "<instruction>I add a tax</instruction>\n<code>a = 1\n</code>\n<update>a = 2</update>\n"))
    assert (edit.apply_form().original, edit.apply_form().update) == ("a = 1\n", "a = 2")
    assert edit.apply_form().instruction == "I add a tax"
    plain = request(("user", "<code>\nx\n</code><update>y</update>")).apply_form()
    assert (plain.original, plain.update, plain.instruction) == ("\nx\n", "y", "")
    pieces = [{"type": "text", "text": "<code>x</code>\n"}, {"type": "text", "text": "<update>y</update>"}]
    parts = request(("user", pieces))
    assert parts.apply_form().original == "x"


def test_a_file_that_holds_code_tags_is_read_whole():
    html = "<p>Call <code>run()</code> first.</p>\n<p><code>stop()</code></p>\n"
    update = "<p>Call <code>start()</code> first.</p>\n<!-- ... existing code ... -->\n"
    edit = request(("user", f"<code>{html}</code>\n<update>{update}</update>")).apply_form()
    assert (edit.original, edit.update) == (html, update)


@pytest.mark.parametrize("messages", [
    [("system", "You merge code edits."), ("user", "<code>x</code>\n<update>y</update>")],  # fastapply's client
    [("user", "Merge this: <code>x</code>\n<update>y</update>")],  # words outside the tags
    [("user", "<code>x</code>\n<update>y</update> thanks")],
    [("user", "<code>x</code>")],
    [("assistant", "<code>x</code>\n<update>y</update>")],
    [("user", "<update>y</update>\n<code>x</code>")],
])
def test_any_other_chat_is_a_chat(messages):
    assert request(*messages).apply_form() is None
