"""``fastapply serve`` over real HTTP on loopback: a server started in this process, a tiny model."""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.serving import (  # noqa: F401  (fixtures, used by name)
    EXPECTED, ORIGINAL, UPDATE, _fixed_verify_cost, _private_cache, _session_cache, apply_checkpoint, apply_model,
    prompt_messages)

pytest.importorskip("fastapi")

ANSWER = f"<updated-code>\n{EXPECTED}\n</updated-code>"
PREDICTION = {"type": "content", "content": f"<updated-code>\n{ORIGINAL}\n</updated-code>"}


@pytest.fixture(scope="module")
def server(apply_model):
    from fastapply.server import ServeConfig, create_app, running_server

    model, tokenizer = apply_model
    with running_server(create_app(model, tokenizer, ServeConfig(model_name="tiny", max_body_bytes=64 * 1024))) as url:
        with httpx.Client(base_url=url, timeout=60) as client:
            yield client


def chat(client: httpx.Client, **body) -> dict:
    response = client.post("/v1/chat/completions", json={"model": "tiny", "messages": prompt_messages(), **body})
    assert response.status_code == 200, response.text
    return response.json()


def test_chat_completion_writes_the_edited_file_with_and_without_prediction(server, apply_model):
    plain = chat(server, max_tokens=200)
    predicted = chat(server, max_tokens=200, prediction=PREDICTION)
    assert plain["choices"][0]["message"]["content"] == ANSWER
    assert predicted["choices"][0]["message"]["content"] == ANSWER
    assert plain["choices"][0]["finish_reason"] == predicted["choices"][0]["finish_reason"] == "stop"
    details = predicted["usage"]["completion_tokens_details"]
    prediction_tokens = len(apply_model[1](PREDICTION["content"], add_special_tokens=False)["input_ids"])
    assert details["accepted_prediction_tokens"] > prediction_tokens // 2
    assert details["accepted_prediction_tokens"] + details["rejected_prediction_tokens"] == prediction_tokens
    assert plain["usage"]["completion_tokens_details"]["accepted_prediction_tokens"] == 0
    assert predicted["usage"]["completion_tokens"] == plain["usage"]["completion_tokens"]
    assert predicted["fastapply"]["passes"] < plain["fastapply"]["passes"]


def test_streaming_reassembles_to_the_same_text(server):
    body = {"model": "tiny", "messages": prompt_messages(), "max_tokens": 200, "prediction": PREDICTION,
            "stream": True, "stream_options": {"include_usage": True}}
    with server.stream("POST", "/v1/chat/completions", json=body) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        events = [line.removeprefix("data: ") for line in response.iter_lines() if line]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert text == ANSWER
    assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1] == "stop"
    assert len([c for c in chunks if c["choices"] and c["choices"][0]["delta"].get("content")]) > 1
    usage = chunks[-1]["usage"]
    assert usage["completion_tokens_details"]["accepted_prediction_tokens"] > 0


def test_stop_strings_end_the_text_before_them(server):
    stopped = chat(server, max_tokens=200, stop=["greet(", "zzz"], prediction=PREDICTION)
    assert stopped["choices"][0]["message"]["content"] == ANSWER[:ANSWER.index("greet(")]
    assert stopped["choices"][0]["finish_reason"] == "stop"
    with server.stream("POST", "/v1/chat/completions", json={
            "messages": prompt_messages(), "max_tokens": 200, "stop": "greet(", "stream": True}) as response:
        events = [line.removeprefix("data: ") for line in response.iter_lines() if line]
    text = "".join(json.loads(e)["choices"][0]["delta"].get("content") or "" for e in events[:-1])
    assert text == ANSWER[:ANSWER.index("greet(")]


def test_max_tokens_cuts_the_answer(server):
    cut = chat(server, max_tokens=5)
    assert cut["choices"][0]["finish_reason"] == "length"
    assert cut["usage"]["completion_tokens"] == 5
    assert ANSWER.startswith(cut["choices"][0]["message"]["content"])


def test_apply_route_returns_the_new_file(server, apply_model):
    from fastapply.apply import apply_edit
    from fastapply.merge import merge

    response = server.post("/v1/apply", json={"original": ORIGINAL, "update": UPDATE, "language": "python"})
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["ok"] is True and result["text"] == EXPECTED and result["engine"] == "model"
    assert result["language"] == "python"
    assert result["changed"] is True and result["closed"] is True and result["refused"] is None
    assert result["validation"] == {"ok": True, "reasons": [], "problems": []}
    merged = merge(ORIGINAL, UPDATE, "python")  # auto: the model drafts from the merge engine's candidate
    assert result["merge"] == {"confidence": merged.confidence, "reasons": list(merged.reasons)}
    local = apply_edit(*apply_model, ORIGINAL, UPDATE, merged=merged.text)
    assert result["stats"]["passes"] == local.stats.passes
    alone = server.post("/v1/apply", json={"original": ORIGINAL, "update": UPDATE, "engine": "model"}).json()
    assert alone["text"] == EXPECTED and alone["merge"] is None
    assert alone["language"] == "python"  # no language, no path: told by the file's text
    named = server.post("/v1/apply", json={"original": ORIGINAL, "update": UPDATE, "path": "notes.txt"}).json()
    assert named["language"] is None  # a file's name tells its language, or that it has none fastapply knows
    assert alone["stats"]["passes"] == apply_edit(*apply_model, ORIGINAL, UPDATE).stats.passes


def test_apply_route_refuses_a_cut_off_answer_unless_forced(server):
    body = {"original": ORIGINAL, "update": UPDATE, "language": "python", "max_tokens": 10}
    refused = server.post("/v1/apply", json=body).json()
    assert refused["ok"] is False and refused["text"] is None and refused["closed"] is False
    assert "truncated" in refused["validation"]["reasons"] and not refused["validation"]["ok"]
    assert refused["refused"]["reasons"] == refused["validation"]["reasons"]
    assert "cut off" in refused["refused"]["message"]
    messages = {p["name"]: p["message"] for p in refused["validation"]["problems"]}
    assert "cut off" in messages["truncated"]
    forced = server.post("/v1/apply", json={**body, "force": True}).json()
    assert forced["ok"] is True and forced["refused"] is None and forced["engine"] == "model"
    assert forced["validation"] == refused["validation"]
    assert forced["text"] and EXPECTED.startswith(forced["text"].rstrip("\n"))


def test_apply_route_with_the_merge_engine_alone(server):
    anchored = 'def greet(name):\n    return "hello, " + name + "!"\n# ... existing code ...\n'  # merges for certain
    certain = server.post("/v1/apply", json={"original": ORIGINAL, "update": anchored, "language": "python",
                                             "engine": "merge"}).json()
    assert certain["ok"] is True and certain["text"] == EXPECTED and certain["engine"] == "merge"
    assert certain["merge"]["confidence"] == "certain"
    assert certain["validation"] is None and certain["stats"] is None and certain["closed"] is None
    unsure = "# ... existing code ...\nprint('new')\n# ... existing code ...\n"  # anchors nowhere
    uncertain = server.post("/v1/apply", json={"original": ORIGINAL, "update": unsure, "language": "python",
                                               "engine": "merge"}).json()
    assert uncertain["ok"] is False and uncertain["text"] is None
    assert uncertain["refused"]["reasons"] == ["uncertain-merge"] and uncertain["merge"]["confidence"] != "certain"
    instructed = server.post("/v1/apply", json={"original": ORIGINAL, "update": anchored, "engine": "merge",
                                                "instruction": "do it"})
    assert instructed.status_code == 400 and "instruction" in instructed.json()["error"]["message"]
    renamed = server.post("/v1/apply", json={"original": ORIGINAL, "update": "", "language": "python", "engine": "merge",
                                             "instruction": "rename greet -> welcome"}).json()  # plain: no model
    assert renamed["ok"] is True and renamed["text"] == ORIGINAL.replace("greet", "welcome")
    unknown = server.post("/v1/apply", json={"original": ORIGINAL, "update": UPDATE, "engine": "guess"})
    assert unknown.status_code == 400 and "engine" in unknown.json()["error"]["message"]


def test_apply_route_takes_a_diff(server):
    """A unified diff as the update, with the merge engine: placed line for line, certain, no model run."""
    import difflib

    diff = "".join(difflib.unified_diff(ORIGINAL.splitlines(True), EXPECTED.splitlines(True), "a/g.py", "b/g.py"))
    answer = server.post("/v1/apply", json={"original": ORIGINAL, "update": diff, "language": "python",
                                            "engine": "merge"}).json()
    assert answer["ok"] is True and answer["text"] == EXPECTED and answer["engine"] == "merge"
    assert answer["merge"]["confidence"] == "certain" and answer["stats"] is None


def test_apply_route_takes_a_chat_answer_for_the_file_its_path_names(server):
    """The file's ``path`` picks its code blocks from a chat model's answer and names its language; an
    answer for other files, or an empty edit, is a 400 answer whichever engine."""
    answer = (f"In `src/greet.py`:\n\n```python\n{EXPECTED}```\n\nand\n\n```python:other.py\nx = 1\n```\n")
    applied = server.post("/v1/apply", json={"original": ORIGINAL, "update": answer, "path": "src/greet.py",
                                             "engine": "merge"}).json()
    assert applied["ok"] is True and applied["text"] == EXPECTED and applied["merge"]["confidence"] == "certain"
    for engine in ("merge", "auto"):
        other = server.post("/v1/apply", json={"original": ORIGINAL, "update": answer, "path": "third.py",
                                               "engine": engine})
        assert other.status_code == 400 and "not third.py" in other.json()["error"]["message"], engine
        empty = server.post("/v1/apply", json={"original": ORIGINAL, "update": " ", "engine": engine})
        assert empty.status_code == 400 and "the edit is empty" in empty.json()["error"]["message"], engine


def test_apply_route_takes_an_agents_tool_call(server):
    """An Edit tool call as the update: the tool's own result, certain; an Edit of an empty old string on a
    file that is not empty is a 400 answer, as the tool refuses it."""
    call = {"type": "tool_use", "name": "Edit", "input": {"file_path": "/work/src/g.py", "old_string": ORIGINAL,
                                                          "new_string": EXPECTED}}
    answer = server.post("/v1/apply", json={"original": ORIGINAL, "update": json.dumps(call), "path": "src/g.py",
                                            "engine": "merge"})
    assert answer.status_code == 200 and answer.json()["text"] == EXPECTED and answer.json()["engine"] == "merge"
    assert answer.json()["stats"] is None
    create = {"old_string": "", "new_string": "x"}
    refused = server.post("/v1/apply", json={"original": ORIGINAL, "update": json.dumps(create), "language": "python"})
    assert refused.status_code == 400 and "creates a file" in refused.json()["error"]["message"]


def test_a_file_with_crlf_lines_comes_back_with_crlf_lines(server):
    """The edit is applied to the file's LF text, as the CLI reads a file, and the new file is given back
    in the file's own line endings (and byte-order mark): not a file of mixed endings."""
    anchored = 'def greet(name):\n    return "hello, " + name + "!"\n# ... existing code ...\n'  # LF, as chats write
    for original, expected in [(ORIGINAL.replace("\n", "\r\n"), EXPECTED.replace("\n", "\r\n")),
                               ("\ufeff" + ORIGINAL, "\ufeff" + EXPECTED)]:
        for update in (anchored, anchored.replace("\n", "\r\n")):  # an update's line ends read as a file's too
            answer = server.post("/v1/apply", json={"original": original, "update": update, "language": "python",
                                                    "engine": "merge"}).json()
            assert answer["ok"] is True and answer["text"] == expected and answer["changed"] is True
    crlf = server.post("/v1/apply", json={"original": ORIGINAL.replace("\n", "\r\n"), "update": UPDATE}).json()
    assert crlf["engine"] == "model" and crlf["text"] == EXPECTED.replace("\n", "\r\n")  # the model read LF text


def apply_form(original: str = ORIGINAL, update: str = UPDATE, instruction: str = "") -> list[dict[str, str]]:
    """One user message as Morph's API and its clients write an edit."""
    asked = f"<instruction>{instruction}</instruction>\n" if instruction else ""
    return [{"role": "user", "content": f"{asked}<code>{original}</code>\n<update>{update}</update>"}]


def test_a_chat_in_the_apply_form_is_answered_with_the_new_file(server, apply_model):
    """The file comes back as the message, decided and checked as /v1/apply decides it (the same run) in the
    language its text tells."""
    from fastapply.prompt import chat_ids, encode_text

    answer = chat(server, messages=apply_form())
    message = answer["choices"][0]["message"]["content"]
    assert message == EXPECTED and answer["choices"][0]["finish_reason"] == "stop"
    details = answer["fastapply"]
    routed = server.post("/v1/apply", json={"original": ORIGINAL, "update": UPDATE, "language": "python"}).json()
    assert details["language"] == "python"  # told by the file's text
    assert details["ok"] is True and details["engine"] == "model" and "text" not in details
    assert details["validation"] == routed["validation"] and details["merge"] == routed["merge"]
    assert details["stats"]["passes"] == routed["stats"]["passes"]
    usage = answer["usage"]
    assert usage["prompt_tokens"] == len(chat_ids(apply_model[1], apply_form()))
    assert usage["completion_tokens"] == len(encode_text(apply_model[1], EXPECTED))
    body = {"model": "tiny", "messages": apply_form(), "stream": True, "stream_options": {"include_usage": True}}
    with server.stream("POST", "/v1/chat/completions", json=body) as response:
        assert response.status_code == 200
        events = [line.removeprefix("data: ") for line in response.iter_lines() if line]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"]) == EXPECTED
    assert chunks[-1]["usage"] == usage and chunks[-2]["choices"][0]["finish_reason"] == "stop"


def test_a_refused_edit_in_the_apply_form_is_an_error_not_a_file(server):
    """Cut off by max_tokens, or asking for stop strings: no text comes back."""
    cut = server.post("/v1/chat/completions", json={"messages": apply_form(), "max_tokens": 10})
    assert cut.status_code == 422, cut.text
    error = cut.json()["error"]
    assert error["type"] == "edit_refused" and "cut off" in error["message"]
    streamed = server.post("/v1/chat/completions", json={"messages": apply_form(), "max_tokens": 10, "stream": True})
    assert streamed.status_code == 422 and streamed.json()["error"]["type"] == "edit_refused"
    stopped = server.post("/v1/chat/completions", json={"messages": apply_form(), "stop": ["x"]})
    assert stopped.status_code == 400 and "stop" in stopped.json()["error"]["message"]
    lazy = server.post("/v1/chat/completions", json={"messages": apply_form(update="// ... existing code ...\n")})
    assert lazy.status_code == 400 and "lazy markers alone" in lazy.json()["error"]["message"]


def test_relaces_code_apply_route_answers_with_the_merged_file(server, apply_model):
    from fastapply.prompt import encode_text, get_preset, prompt_ids

    body = {"initialCode": ORIGINAL, "editSnippet": UPDATE, "relace_metadata": {"source": "test"}}
    answer = server.post("/v1/code/apply", json=body)
    assert answer.status_code == 200, answer.text
    merged = answer.json()
    assert merged["mergedCode"] == EXPECTED and "text" not in merged["fastapply"]
    assert merged["fastapply"]["language"] == "python" and merged["fastapply"]["engine"] == "model"
    tokenizer = apply_model[1]
    assert merged["usage"] == {"prompt_tokens": len(prompt_ids(tokenizer, get_preset("default"), ORIGINAL, UPDATE)),
                               "completion_tokens": len(encode_text(tokenizer, EXPECTED)),
                               "total_tokens": merged["usage"]["prompt_tokens"] + merged["usage"]["completion_tokens"]}
    streamed = server.post("/v1/code/apply", json={**body, "stream": True})
    assert streamed.status_code == 400 and "stream" in streamed.json()["error"]["message"]
    unknown = server.post("/v1/code/apply", json={**body, "extra": 1})
    assert unknown.status_code == 400 and "extra" in unknown.json()["error"]["message"]
    lazy = server.post("/v1/code/apply", json={"initialCode": ORIGINAL, "editSnippet": "// ... rest of code ...\n"})
    assert lazy.status_code == 400 and "lazy markers alone" in lazy.json()["error"]["message"]


def test_the_servers_preset_is_the_one_of_edits_that_name_none(apply_model):
    """``--preset``: the apply form and /v1/code/apply prompt with it (the prompt counted in the usage is its);
    a /v1/apply request naming one uses its own (the tiny model learnt the default preset's prompt)."""
    from fastapply.prompt import get_preset, prompt_ids
    from fastapply.server import ServeConfig, create_app, running_server

    model, tokenizer = apply_model
    anchored = 'def greet(name):\n    return "hello, " + name + "!"\n# ... existing code ...\n'  # certain: no model
    config = ServeConfig(preset="open-fastapply", merge_first=True)
    with running_server(create_app(model, tokenizer, config)) as url, httpx.Client(base_url=url, timeout=60) as client:
        merged = client.post("/v1/code/apply", json={"initialCode": ORIGINAL, "editSnippet": anchored}).json()
        assert merged["mergedCode"] == EXPECTED and merged["fastapply"]["engine"] == "merge"
        assert merged["usage"]["prompt_tokens"] == len(prompt_ids(tokenizer, get_preset("open-fastapply"), ORIGINAL,
                                                                  anchored))
        named = client.post("/v1/apply", json={"original": ORIGINAL, "update": UPDATE, "preset": "default"}).json()
        assert named["ok"] is True and named["engine"] == "model" and named["text"] == EXPECTED
        unnamed = client.post("/v1/apply", json={"original": ORIGINAL, "update": UPDATE, "max_tokens": 60}).json()
        assert unnamed["engine"] is None or unnamed["text"] != EXPECTED  # the other preset's prompt: not learnt


def test_models_and_health(server):
    assert [m["id"] for m in server.get("/v1/models").json()["data"]] == ["tiny"]
    health = server.get("/health").json()
    assert health["status"] == "ok" and health["running"] == 0 and health["admitted"] == 0


def test_eight_concurrent_requests_match_sequential_ones(server):
    bodies = [{"messages": prompt_messages(ORIGINAL + "#" * i), "max_tokens": 12 + i,
               **({"prediction": PREDICTION} if i % 2 else {})} for i in range(7)]
    bodies.append({"messages": prompt_messages(), "max_tokens": 200, "prediction": PREDICTION})
    sequential = [chat(server, **body)["choices"][0]["message"]["content"] for body in bodies]
    with ThreadPoolExecutor(max_workers=8) as pool:
        concurrent = list(pool.map(lambda body: chat(server, **body)["choices"][0]["message"]["content"], bodies))
    assert concurrent == sequential
    assert sequential[-1] == ANSWER


@pytest.mark.parametrize("body, status, message", [
    (b"{not json", 400, "not valid JSON"),
    (b"[1, 2]", 400, "JSON object"),
    (json.dumps({"messages": [{"role": "user", "content": "x"}], "tools": []}).encode(), 400, "unknown field 'tools'"),
    (json.dumps({"model": "tiny"}).encode(), 400, "messages"),
    (json.dumps({"messages": [{"role": "user", "content": "x"}], "n": 2}).encode(), 400, "n"),
    (json.dumps({"messages": [{"role": "user", "content": "x" * 70_000}]}).encode(), 413, "limit"),
])
def test_bad_requests_are_refused_and_the_server_keeps_serving(server, body, status, message):
    response = server.post("/v1/chat/completions", content=body, headers={"content-type": "application/json"})
    assert response.status_code == status
    assert message in response.json()["error"]["message"]
    assert chat(server, max_tokens=200)["choices"][0]["message"]["content"] == ANSWER


def test_unknown_language_on_apply_is_a_bad_request(server):
    response = server.post("/v1/apply", json={"original": ORIGINAL, "update": UPDATE, "language": "cobol"})
    assert response.status_code == 400 and "cobol" in response.json()["error"]["message"]
    response = server.post("/v1/apply", json={"original": ORIGINAL})
    assert response.status_code == 400 and "update" in response.json()["error"]["message"]


def test_api_key_is_required_when_set(apply_model):
    from fastapply.server import ServeConfig, create_app, running_server

    with running_server(create_app(*apply_model, ServeConfig(api_key="s3cret"))) as url:
        body = {"messages": prompt_messages(), "max_tokens": 200}
        assert httpx.post(f"{url}/v1/chat/completions", json=body).status_code == 401
        wrong = httpx.post(f"{url}/v1/chat/completions", json=body, headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401 and wrong.headers["www-authenticate"] == "Bearer"
        assert httpx.get(f"{url}/v1/models").status_code == 401
        assert httpx.get(f"{url}/health").status_code == 200
        right = httpx.post(f"{url}/v1/chat/completions", json=body, headers={"Authorization": "Bearer s3cret"},
                           timeout=60)
        assert right.status_code == 200 and right.json()["choices"][0]["message"]["content"] == ANSWER


def wait_for(condition, what: str, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


def test_full_queue_answers_503_and_a_client_that_leaves_frees_its_slot(apply_model):
    """Queue size 1. The model is held at its first forward pass (a gate), so one request runs, one
    waits and the next is 503 without any timing. A client that disconnects gives its slot back at once
    and its work stops at the next pass once the gate opens; the waiting requests are then served."""
    from fastapply.server import ServeConfig, create_app, running_server

    model, tokenizer = apply_model
    gate = threading.Event()

    def hold(module, args) -> None:
        gate.wait(60)

    hook = model.register_forward_pre_hook(hold)
    body = {"messages": prompt_messages(), "max_tokens": 200}
    answers: list = []

    def send(request_body):
        answers.append(client.post("/v1/chat/completions", json=request_body))

    try:
        with running_server(create_app(model, tokenizer, ServeConfig(queue_size=1))) as url, \
                httpx.Client(base_url=url, timeout=60) as client:
            health = lambda: client.get("/health").json()  # noqa: E731
            with client.stream("POST", "/v1/chat/completions", json={**body, "stream": True}) as held:
                assert held.status_code == 200
                wait_for(lambda: health()["running"] == 1, "the streamed request to reach the model")
                waiters = [threading.Thread(target=send, args=(body,))]
                waiters[0].start()
                wait_for(lambda: health()["admitted"] == 2, "the second request to be queued")
                refused = client.post("/v1/chat/completions", json=body)
                assert refused.status_code == 503
                assert refused.headers["retry-after"] == "1" and "busy" in refused.json()["error"]["message"]
                assert client.post("/v1/apply", json={"original": ORIGINAL, "update": UPDATE}).status_code == 503
            # the streamed client has gone: its slot is free although the model is still held
            wait_for(lambda: health()["admitted"] == 1, "the disconnected stream to give its slot back")
            waiters.append(threading.Thread(target=send, args=({**body, "prediction": PREDICTION},)))
            waiters[1].start()
            wait_for(lambda: health()["admitted"] == 2, "a new request to take the freed slot")
            gate.set()
            for waiter in waiters:
                waiter.join(timeout=60)
            assert [a.status_code for a in answers] == [200, 200]
            assert [a.json()["choices"][0]["message"]["content"] for a in answers] == [ANSWER, ANSWER]
            wait_for(lambda: health()["running"] == 0 and health()["admitted"] == 0, "the queue to empty")

            # a non-streamed client that gives up (read timeout) frees its slot too
            gate.clear()
            with pytest.raises(httpx.ReadTimeout):
                client.post("/v1/chat/completions", json=body, timeout=httpx.Timeout(60, read=0.5))
            wait_for(lambda: health()["admitted"] == 0, "the abandoned request to give its slot back")
            gate.set()
            wait_for(lambda: health()["running"] == 0, "the abandoned request to stop")
            assert chat(client, max_tokens=200)["choices"][0]["message"]["content"] == ANSWER
    finally:
        gate.set()
        hook.remove()
