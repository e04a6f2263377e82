"""skyeval.reasoning: the one place reasoning is split from the answer."""

from __future__ import annotations

import pytest

from skyeval.errors import ConfigError
from skyeval.reasoning import prompt_opens_block, split


@pytest.mark.parametrize("text, expected", [
    ("<think>add 2 and 3</think>\n\nThe answer is 5.", ("add 2 and 3", "The answer is 5.")),
    ("add 2 and 3</think>The answer is 5.", ("add 2 and 3", "The answer is 5.")),  # template opened it
    ("<think>add 2 and", ("add 2 and", "")),  # unclosed: truncated reasoning, no answer
    ("The answer is 5.", (None, "The answer is 5.")),
    ("", (None, "")),
    (None, (None, "")),
    ("<think></think>5", ("", "5")),
    ("<think>a</think>b</think>c", ("a", "b</think>c")),  # the first close ends the block
])
def test_default_tags(text, expected):
    assert split(text) == expected


def test_output_that_began_inside_an_open_block():
    assert split("still thinking", opened=True) == ("still thinking", "")
    assert split("done</think> 5", opened=True) == ("done", "5")


def test_server_reasoning_field_wins():
    assert split("The answer is 5.", reasoning="add them") == ("add them", "The answer is 5.")
    assert split(None, reasoning="cut off while thinking") == ("cut off while thinking", "")
    assert split("<think>a</think>b", reasoning="") == ("a", "b")  # empty field: fall back to tags


def test_custom_and_disabled_tags():
    assert split("[R]why[/R] so", ["[R]", "[/R]"]) == ("why", "so")
    assert split("<think>a</think>b", None) == (None, "<think>a</think>b")
    with pytest.raises(ConfigError, match="think_tags"):
        split("x", ["<think>"])


def test_prompt_opens_block():
    assert prompt_opens_block("<|assistant|>\n<think>\n")
    assert not prompt_opens_block("<think>old</think> new question")
    assert not prompt_opens_block("no tags")
    assert not prompt_opens_block("<think>", None)
