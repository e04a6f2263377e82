"""Our exports as trainers read them: each file loaded with `datasets` and trained for one
step by TRL's real SFTTrainer / DPOTrainer (their own dataset preparation) on the tests'
tiny model, as the GRPO test does."""

from __future__ import annotations

import pytest

from tests.curation.conftest import PROBLEMS, curate_main

pytestmark = pytest.mark.slow

# the tiny model's template with generation markers around the assistant's turns, so that
# assistant-only loss can mask everything else (a user's model brings its own)
TRAINING_TEMPLATE = (
    "{% for m in messages %}"
    "{% if m['role'] == 'assistant' %}<|assistant|>\n{% generation %}{{ m['content'] }}</s>{% endgeneration %}\n"
    "{% else %}<|{{ m['role'] }}|>\n{{ m['content'] }}</s>\n{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)


@pytest.fixture(scope="module")
def tokenizer(tiny_model):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model)
    tok.chat_template = TRAINING_TEMPLATE
    return tok


def exported(run_dir, tmp_path, *args: str):
    """`curate.py ARGS --out FILE`, read back with `datasets` as a trainer's user reads it."""
    from datasets import load_dataset

    out = tmp_path / f"{args[0]}-{'-'.join(args[1:]) or 'default'}.jsonl"
    curate_main()([args[0], str(run_dir), *args[1:], "--out", str(out)])
    return load_dataset("json", data_files=str(out), split="train")


def one_step(trainer) -> None:
    trainer.train()
    assert trainer.state.global_step == 1 and trainer.state.log_history[-1]["train_loss"] > 0


def test_sft_exports_train_in_sfttrainer(gsm8k_run, tmp_path, tiny_model, tokenizer):
    pytest.importorskip("trl", reason="pip install -e '.[trl]'")
    from trl import SFTConfig, SFTTrainer

    def config(name: str, **kwargs) -> SFTConfig:
        return SFTConfig(output_dir=str(tmp_path / name), max_steps=1, per_device_train_batch_size=4, max_length=512,
                         report_to="none", use_cpu=True, bf16=False, save_strategy="no", logging_steps=1,
                         dataset_num_proc=None, dataloader_num_workers=0, **kwargs)

    messages = exported(gsm8k_run, tmp_path, "sft")  # the default: role/content
    assert len(messages) == PROBLEMS * 3 and messages[0]["metadata"]["env"] == "gsm8k"
    trainer = SFTTrainer(model=tiny_model, args=config("messages", assistant_only_loss=True),
                         train_dataset=messages, processing_class=tokenizer)
    example = trainer.train_dataset[0]
    trained = [t for t, label in zip(example["input_ids"], example["labels"]) if label != -100]
    assert tokenizer.decode(trained) == messages[0]["messages"][-1]["content"] + "</s>"  # the response, only
    one_step(trainer)

    sharegpt = exported(gsm8k_run, tmp_path, "sft", "--format", "sharegpt")  # LLaMA-Factory's; TRL converts it
    trainer = SFTTrainer(model=tiny_model, args=config("sharegpt"), train_dataset=sharegpt, processing_class=tokenizer)
    assert "input_ids" in trainer.train_dataset.column_names
    one_step(trainer)


@pytest.mark.parametrize("style", ["explicit", "implicit"])
def test_pairs_train_in_dpotrainer(gsm8k_run, tmp_path, tiny_model, tokenizer, style):
    pytest.importorskip("trl", reason="pip install -e '.[trl]'")
    from trl import DPOConfig, DPOTrainer

    pairs = exported(gsm8k_run, tmp_path, "pairs", "--silc", "--prompt", style)
    assert len(pairs) == 2 * PROBLEMS and ("prompt" in pairs.column_names) == (style == "explicit")
    args = DPOConfig(output_dir=str(tmp_path / style), max_steps=1, per_device_train_batch_size=4, max_length=512,
                     report_to="none", use_cpu=True, bf16=False, save_strategy="no", logging_steps=1,
                     dataloader_num_workers=0)
    trainer = DPOTrainer(model=tiny_model, args=args, train_dataset=pairs, processing_class=tokenizer)
    first = trainer.train_dataset[0]
    prompt = tokenizer.apply_chat_template(pairs[0]["chosen"][:-1] if style == "implicit" else pairs[0]["prompt"],
                                           tokenize=False, add_generation_prompt=True)
    assert tokenizer.decode(first["prompt_ids"]) == prompt  # the prompt TRL found is the stored one
    one_step(trainer)
