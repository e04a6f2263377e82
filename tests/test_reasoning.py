"""skyeval.reasoning: the one place reasoning is split from the answer."""

from __future__ import annotations

import pytest

from skyeval.errors import ConfigError
from skyeval.reasoning import CLOSED, NONE, UNCLOSED, parse, prompt_opens_block, split


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


# --- parse: what graders and rewards use (issue 24) ---------------------------------------

SKY = ("<|begin_of_thought|>", "<|end_of_thought|>", "<|begin_of_solution|>", "<|end_of_solution|>")


@pytest.mark.parametrize("text, expected", [
    ("<think>2+3</think>\nIt is 5.", ("2+3", "It is 5.", CLOSED)),
    ("<think>2+3, so 5", ("2+3, so 5", "", UNCLOSED)),
    ("2+3</think>It is 5.", ("2+3", "It is 5.", CLOSED)),  # the template opened the block
    (f"{SKY[0]}\n2+3\n{SKY[1]}\n\n{SKY[2]}\nIt is $\\boxed{{5}}$.\n{SKY[3]}", ("2+3", "It is $\\boxed{5}$.", CLOSED)),
    (f"{SKY[0]}\n2+3 is 5, so the answer is 5", ("2+3 is 5, so the answer is 5", "", UNCLOSED)),
    (f"{SKY[0]}a{SKY[1]}{SKY[2]}It is 5 and then", ("a", "It is 5 and then", CLOSED)),  # solution cut off
    (f"{SKY[2]}It is 5.{SKY[3]}", (None, "It is 5.", NONE)),
    ("It is 5.", (None, "It is 5.", NONE)),
    ("", (None, "", NONE)),
])
def test_parse_built_in_formats(text, expected):
    assert tuple(parse(text)) == expected


def test_parse_configured_pair_and_reasoning_field():
    assert tuple(parse("[R]why[/R] 5", ["[R]", "[/R]"])) == ("why", "5", CLOSED)
    assert tuple(parse("[R]why and", ["[R]", "[/R]"])) == ("why and", "", UNCLOSED)
    assert tuple(parse("5", reasoning_content="why")) == ("why", "5", CLOSED)
    assert tuple(parse("", reasoning_content="why, cut")) == ("why, cut", "", UNCLOSED)


def test_split_knows_sky_t1_with_the_default_tags():
    text = f"{SKY[0]}a{SKY[1]}{SKY[2]}It is 5.{SKY[3]}"
    assert split(text) == ("a", "It is 5.")
    assert split(f"{SKY[0]}a and b") == ("a and b", "")
