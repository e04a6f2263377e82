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
    assert resolve_system_prompt("Be brief.", None)[0] == "Be brief."
    assert resolve_system_prompt(None, "Qwen/QwQ-32B", "none")[0] is None
    assert resolve_system_prompt(None, "Qwen/QwQ-32B")[0] == SYSTEM_PROMPTS["qwq"]
    assert resolve_system_prompt(None, "meta-llama/Llama-3.1-8B")[0] is None


def test_system_prompt_none_sends_no_system_message_and_the_choice_is_described():
    """Issue 25 item 9: `system_prompt=none` is no system message, not the text "none"; a
    fine-tune whose name merely contains a model's name gets no default; the choice and
    its reason are described (summary.json's `template`)."""
    chat = [{"role": "user", "content": "{question}"}]
    for none in ("none", "None"):
        assert Template(messages=chat, system_prompt=none).render({"question": "x"}, "Qwen/QwQ-32B") == \
            [{"role": "user", "content": "x"}]
    assert Template(messages=chat).render({"question": "x"}, "my-org/qwq-distill-7b") == [{"role": "user", "content": "x"}]
    assert Template(messages=chat).describe("my-org/qwq-distill-7b") == {
        "kind": "chat", "system_prompt_used": None,
        "system_prompt_reason": "none: none configured and no model default matches"}
    found = Template(messages=chat).describe("/models/QwQ-32B-Preview")
    assert found["system_prompt_used"] == SYSTEM_PROMPTS["qwq"] and "matches 'qwq-32b' -> qwq" in found["system_prompt_reason"]
    assert Template(messages=chat, system_prompt="none").describe("Qwen/QwQ-32B")["system_prompt_reason"] == \
        "none: template.system_prompt=none"
    assert Template(messages=chat, system_prompt_name="helpful").describe(None)["system_prompt_reason"] == \
        "configured: template.system_prompt_name=helpful"
    assert Template(text="Q: {question}").describe("Qwen/QwQ-32B")["system_prompt_used"] is None


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
