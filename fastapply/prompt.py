"""Prompt presets: how the original, the update and an instruction become the model's prompt, what
the model's answer looks like (and so the predicted output), and how the answer is parsed.

A preset is a template only; it does not tokenize the draft or decode anything. Text is LF-only here;
``fileio`` restores the file's own newlines.
"""

from __future__ import annotations

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


def prompt_ids(tokenizer, preset: Preset, original: str, update: str, instruction: str = "") -> list[int]:
    """Token ids of the prompt; BOS is added only when no chat template put it in the text already."""
    user = preset.user_message(original, update, instruction)
    return chat_ids(tokenizer, [{"role": "system", "content": preset.system}, {"role": "user", "content": user}])


def chat_text(tokenizer, messages: list[dict[str, str]]) -> str:
    """Chat messages (``role``, ``content``) as the prompt text, with the assistant's turn opened.

    Through the tokenizer's chat template when it has one; without one the contents are joined by
    blank lines and the answer follows directly after them.
    """
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return "".join(f"{message['content']}\n\n" for message in messages)


def chat_ids(tokenizer, messages: list[dict[str, str]]) -> list[int]:
    """Token ids of ``chat_text``; BOS is added only when no chat template put it in the text already."""
    ids = tokenizer(chat_text(tokenizer, messages), add_special_tokens=False)["input_ids"]
    if not getattr(tokenizer, "chat_template", None) and tokenizer.bos_token_id is not None:
        ids = [tokenizer.bos_token_id, *ids]
    return ids


def answer_ids(tokenizer, preset: Preset, file_text: str) -> list[int]:
    """Token ids of the answer for ``file_text`` followed by EOS: the draft when ``file_text`` is the
    original (or a merged candidate), and the training target when it is the expected file."""
    ids = tokenizer(preset.answer(file_text), add_special_tokens=False)["input_ids"]
    if tokenizer.eos_token_id is not None:
        ids = [*ids, tokenizer.eos_token_id]
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
