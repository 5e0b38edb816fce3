"""Prompt presets: how the original, the update and an instruction become the model's prompt, what
the model's answer looks like (and so the predicted output), and how the answer is parsed.

A preset is a template only; it does not tokenize the draft or decode anything. Text is LF-only here;
``fileio`` restores the file's own newlines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fastapply.errors import UsageError


@dataclass(frozen=True)
class Preset:
    name: str
    description: str
    system: str
    user: str  # format string with {instruction_block}, {original}, {update}
    instruction_block: str  # format string with {instruction}; used only when there is one
    answer_open: str = "<updated-code>\n"
    answer_close: str = "\n</updated-code>"

    def user_message(self, original: str, update: str, instruction: str = "") -> str:
        block = self.instruction_block.format(instruction=instruction) if instruction.strip() else ""
        return self.user.format(instruction_block=block, original=original, update=update)

    def answer(self, file_text: str) -> str:
        """The whole answer for ``file_text``: with the original file this is the predicted output."""
        return self.answer_open + file_text + self.answer_close


PRESETS: dict[str, Preset] = {
    preset.name: preset
    for preset in [
        Preset(
            name="default",
            description="fastapply's own format",
            system="You merge code edits. Rewrite the whole file with the update applied. Output only the file.",
            user="{instruction_block}<code>{original}</code>\n<update>{update}</update>",
            instruction_block="<instruction>{instruction}</instruction>\n",
        ),
        Preset(
            name="open-fastapply",
            description="the published prompt of the open FastApply checkpoints (Qwen2.5-Coder based)",
            system="You are a coding assistant that helps merge code updates, ensuring every modification is "
            "fully integrated.",
            user="Merge all changes from the <update> snippet into the <code> below.\n"
            "- Preserve the code's structure, order, comments, and indentation exactly.\n"
            "- Output only the updated code, enclosed within <updated-code> and </updated-code> tags.\n"
            "- Do not include any additional text, explanations, placeholders, ellipses, or code fences.\n\n"
            "{instruction_block}<code>{original}</code>\n\n<update>{update}</update>\n\n"
            "Provide the complete updated code.",
            instruction_block="Instruction: {instruction}\n\n",
            answer_open="<updated-code>",
            answer_close="</updated-code>",
        ),
    ]
}


def get_preset(name: str) -> Preset:
    try:
        return PRESETS[name]
    except KeyError:
        raise UsageError(f"unknown prompt preset {name!r}; choose one of: {', '.join(PRESETS)}") from None


def prompt_text(tokenizer, preset: Preset, original: str, update: str, instruction: str = "") -> str:
    """The prompt as text, through the tokenizer's chat template when it has one (see ``chat_text``)."""
    user = preset.user_message(original, update, instruction)
    return chat_text(tokenizer, [{"role": "system", "content": preset.system}, {"role": "user", "content": user}])


def encode_text(tokenizer, text: str) -> list[int]:
    """Token ids of user text (a file, a snippet): text that looks like a special token (``</s>``,
    ``<|im_end|>``) stays plain text, so a file can never end the answer or hide a BOS."""
    return tokenizer(text, add_special_tokens=False, split_special_tokens=True)["input_ids"]


_SLOT = re.compile("\x00fastapply-([a-z0-9]+)\x00")


def _slot(name: str) -> str:
    return f"\x00fastapply-{name}\x00"


def prompt_ids(tokenizer, preset: Preset, original: str, update: str, instruction: str = "") -> list[int]:
    """Token ids of the prompt: the template's own text with its special tokens, the user's text as
    plain text (see ``encode_text``). BOS is added only when no chat template put it in already."""
    values = {"original": original, "update": update, "instruction": instruction}
    used = {name: _slot(name) for name, value in values.items() if name != "instruction" or value.strip()}
    text = prompt_text(tokenizer, preset, used["original"], used["update"], used.get("instruction", ""))
    return _encode_slotted(tokenizer, text, used, values,
                           lambda: prompt_text(tokenizer, preset, original, update, instruction))


def chat_text(tokenizer, messages: list[dict[str, str]]) -> str:
    """Chat messages (``role``, ``content``) as prompt text, with the assistant's turn opened: through the
    tokenizer's chat template when it has one, else the contents joined by blank lines (the answer
    follows directly after them)."""
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return "".join(f"{message['content']}\n\n" for message in messages)


def chat_ids(tokenizer, messages: list[dict[str, str]]) -> list[int]:
    """Token ids of ``chat_text``: the template's text with its special tokens, each message's content
    as plain text (see ``encode_text``); BOS as in ``prompt_ids``."""
    values = {str(i): message["content"] for i, message in enumerate(messages)}
    used = {name: _slot(name) for name in values}
    text = chat_text(tokenizer, [{**message, "content": used[str(i)]} for i, message in enumerate(messages)])
    return _encode_slotted(tokenizer, text, used, values, lambda: chat_text(tokenizer, messages))


def _encode_slotted(tokenizer, text: str, used: dict[str, str], values: dict[str, str], whole) -> list[int]:
    """Tokenize ``text`` whose ``used`` slots stand for ``values``: template pieces as tokens, values as
    plain text. If the template rewrote a slot, ``whole()`` (the text with the values in) is tokenized."""
    pieces = _SLOT.split(text) if all(slot in text for slot in used.values()) else [whole()]
    ids: list[int] = []
    for i, piece in enumerate(pieces):
        if i % 2:
            ids += encode_text(tokenizer, values[piece])
        elif piece:
            ids += tokenizer(piece, add_special_tokens=False)["input_ids"]
    if not getattr(tokenizer, "chat_template", None) and tokenizer.bos_token_id is not None:
        ids = [tokenizer.bos_token_id, *ids]
    return ids


def answer_ids(tokenizer, preset: Preset, file_text: str) -> list[int]:
    """Token ids of the answer for ``file_text`` followed by EOS: the draft when ``file_text`` is the
    original (or a merged candidate), and the training target when it is the expected file."""
    ids = [*tokenizer(preset.answer_open, add_special_tokens=False)["input_ids"],
           *encode_text(tokenizer, file_text),
           *tokenizer(preset.answer_close, add_special_tokens=False)["input_ids"]]
    if tokenizer.eos_token_id is not None:
        ids.append(tokenizer.eos_token_id)
    return ids


@dataclass(frozen=True)
class ParsedAnswer:
    file: str
    closed: bool  # the closing tag was seen; False means the answer was cut off


def parse_answer(preset: Preset, text: str) -> ParsedAnswer:
    """The file inside a model's answer.

    The file runs from the first opening tag to the *last* closing tag, so code that itself contains
    ``</updated-code>`` is kept whole. An answer without an opening tag is taken as the file itself.
    """
    open_tag, close_tag = preset.answer_open.strip(), preset.answer_close.strip()
    start = text.find(open_tag)
    body = text[start + len(open_tag):] if start >= 0 else text
    if start >= 0 and preset.answer_open.endswith("\n") and body.startswith("\n"):
        body = body[1:]
    end = body.rfind(close_tag)
    closed = end >= 0
    if closed:
        body = body[:end]
        if preset.answer_close.startswith("\n") and body.endswith("\n"):
            body = body[:-1]
    return ParsedAnswer(file=body, closed=closed)
