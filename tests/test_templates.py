import pytest

from skyeval.errors import ConfigError
from skyeval.templates import SYSTEM_PROMPTS, Template, resolve_system_prompt


def test_chat_template_fills_fields_and_keeps_latex_braces():
    t = Template(messages=[{"role": "user", "content": "{question}\nPut it in \\boxed{}. Sum {a+b}."}])
    assert t.render({"question": "1+1?"}) == [{"role": "user", "content": "1+1?\nPut it in \\boxed{}. Sum {a+b}."}]


def test_text_template_and_missing_field_error():
    assert Template(text="Q: {question}\nA:").render({"question": "hi"}) == "Q: hi\nA:"
    with pytest.raises(KeyError, match="choices"):
        Template(text="{choices}").render({"question": "hi"})


def test_system_prompt_by_name_literal_none_and_model_default():
    msgs = Template(messages=[{"role": "user", "content": "{question}"}], system_prompt_name="qwq").render({"question": "x"})
    assert msgs[0] == {"role": "system", "content": SYSTEM_PROMPTS["qwq"]}
    assert resolve_system_prompt("Be brief.", None) == "Be brief."
    assert resolve_system_prompt(None, "Qwen/QwQ-32B", "none") is None
    assert resolve_system_prompt(None, "Qwen/QwQ-32B") == SYSTEM_PROMPTS["qwq"]
    assert resolve_system_prompt(None, "meta-llama/Llama-3.1-8B") is None


def test_skythought_named_prompts_and_unknown_name_gets_closest_match():
    assert SYSTEM_PROMPTS["prime_rl"].startswith("\nWhen tackling complex reasoning tasks")
    assert "<|begin_of_thought|>" in SYSTEM_PROMPTS["skythought"]
    msgs = Template(messages=[{"role": "user", "content": "{question}"}], system_prompt_name="prime_rl").render({"question": "x"})
    assert msgs[0]["content"] == SYSTEM_PROMPTS["prime_rl"]
    with pytest.raises(ConfigError, match="Did you mean 'prime_rl'"):
        Template(system_prompt_name="prime-rl")


def test_literal_system_prompt_is_sent_as_text_and_a_bare_name_is_refused():
    msgs = Template(messages=[{"role": "user", "content": "{question}"}], system_prompt="Think hard.").render({"question": "x"})
    assert msgs[0] == {"role": "system", "content": "Think hard."}
    with pytest.raises(ConfigError, match="system_prompt_name=prime_rl"):
        Template(system_prompt="prime_rl")


def test_template_of_string_list_dict():
    assert Template.of("<Q>{question}</Q>").render({"question": "x"}) == "<Q>x</Q>"
    chat = Template.of([{"role": "user", "content": "Q: {question}"}])
    assert chat.render({"question": "x"}) == [{"role": "user", "content": "Q: x"}]
    assert Template.of({"system_prompt_name": "qwq"}).system_prompt_name == "qwq"
    with pytest.raises(ConfigError, match="role"):
        Template.of([{"content": "no role"}])
    with pytest.raises(ConfigError, match="unknown template field"):
        Template.of({"mesages": []})


def test_assistant_prefill_is_kept_last():
    t = Template(messages=[{"role": "user", "content": "{question}"}, {"role": "assistant", "content": "<think>"}])
    assert t.render({"question": "q"})[-1] == {"role": "assistant", "content": "<think>"}


def test_merged_over_env_default():
    default = Template(messages=[{"role": "user", "content": "{question}"}])
    assert Template(system_prompt_name="helpful").merged_over(default).messages == default.messages
    assert Template(text="{question}").merged_over(default).text == "{question}"
    with pytest.raises(ValueError):
        Template(messages=[], text="x")
