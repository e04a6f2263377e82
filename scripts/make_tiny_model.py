"""Build a tiny random Llama model folder offline, for tests and CI.

    python scripts/make_tiny_model.py OUT_DIR

The folder (config, safetensors weights, tokenizer with a chat template) loads in
`transformers` and in vLLM (CPU build). Same output for the same arguments: the
tokenizer is trained on a fixed corpus and the weights come from a fixed seed.
Generations are random text, which is enough to exercise the pipeline.
"""

from __future__ import annotations

import argparse
from pathlib import Path

BOS, EOS, PAD = "<s>", "</s>", "<pad>"

# ChatML-like; each turn ends with the EOS token, so the model stops at turn end.
CHAT_TEMPLATE = (
    "{% for m in messages %}"
    "<|{{ m['role'] }}|>\n{{ m['content'] }}</s>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)

CORPUS = [
    "Solve the problem step by step and put the final answer in \\boxed{}.",
    "What is 2 + 3? The answer is \\boxed{5}.",
    "Let x be a real number such that x^2 = 16. Then x = 4 or x = -4.",
    "The quick brown fox jumps over the lazy dog 0123456789.",
    "def add(a, b):\n    return a + b\n",
    "Question: Which option is correct? (A) red (B) green (C) blue (D) yellow",
    "You are a helpful assistant. Think carefully before answering.",
    "<|system|> <|user|> <|assistant|>",
]


def build_tokenizer(vocab_size: int):
    """A byte-level BPE tokenizer with special tokens and the chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[PAD, BOS, EOS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS * 4, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=BOS,
        eos_token=EOS,
        pad_token=PAD,
        chat_template=CHAT_TEMPLATE,
        model_max_length=2048,
    )


def build_model(tokenizer, seed: int):
    """A 2-layer Llama (hidden 128, 2 heads of dim 64) with seeded random weights."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
        dtype="float32",
    )
    torch.manual_seed(seed)
    return LlamaForCausalLM(config)


def make_tiny_model(out_dir: str | Path, vocab_size: int = 512, seed: int = 0) -> Path:
    """Write the tiny model folder to `out_dir` and return its path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(vocab_size)
    model = build_model(tokenizer, seed)
    tokenizer.save_pretrained(out)
    model.save_pretrained(out, safe_serialization=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--vocab-size", type=int, default=512)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(make_tiny_model(args.out_dir, args.vocab_size, args.seed))


if __name__ == "__main__":
    main()
