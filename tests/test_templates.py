import pytest

from skyeval.templates import SYSTEM_PROMPTS, Template, resolve_system_prompt


def test_chat_template_fills_fields_and_keeps_latex_braces():
    t = Template(messages=[{"role": "user", "content": "{question}\nPut it in \\boxed{}. Sum {a+b}."}])
    assert t.render({"question": "1+1?"}) == [{"role": "user", "content": "1+1?\nPut it in \\boxed{}. Sum {a+b}."}]


def test_text_template_and_missing_field_error():
    assert Template(text="Q: {question}\nA:").render({"question": "hi"}) == "Q: hi\nA:"
    with pytest.raises(KeyError, match="choices"):
        Template(text="{choices}").render({"question": "hi"})


def test_system_prompt_by_name_literal_none_and_model_default():
    msgs = Template(messages=[{"role": "user", "content": "{question}"}], system_prompt="qwq").render({"question": "x"})
    assert msgs[0] == {"role": "system", "content": SYSTEM_PROMPTS["qwq"]}
    assert resolve_system_prompt("Be brief.", None) == "Be brief."
    assert resolve_system_prompt("none", "Qwen/QwQ-32B") is None
    assert resolve_system_prompt(None, "Qwen/QwQ-32B") == SYSTEM_PROMPTS["qwq"]
    assert resolve_system_prompt(None, "meta-llama/Llama-3.1-8B") is None


def test_assistant_prefill_is_kept_last():
    t = Template(messages=[{"role": "user", "content": "{question}"}, {"role": "assistant", "content": "<think>"}])
    assert t.render({"question": "q"})[-1] == {"role": "assistant", "content": "<think>"}


def test_merged_over_env_default():
    default = Template(messages=[{"role": "user", "content": "{question}"}])
    assert Template(system_prompt="helpful").merged_over(default).messages == default.messages
    assert Template(text="{question}").merged_over(default).text == "{question}"
    with pytest.raises(ValueError):
        Template(messages=[], text="x")
