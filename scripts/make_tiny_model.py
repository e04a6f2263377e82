"""Build a tiny random Llama model folder offline, for tests and CI.

    python scripts/make_tiny_model.py OUT_DIR
    python scripts/make_tiny_model.py OUT_DIR --memorize pairs.json   # [[prompt, completion], ...]

The folder (config, safetensors weights, tokenizer with a chat template) loads in
`transformers` and in vLLM (CPU build). Same output for the same arguments: the
tokenizer is trained on a fixed corpus and the weights come from a fixed seed.
Generations are random text, which is enough to exercise the pipeline. With `memorize`,
the model is then trained on (prompt, completion) pairs (seconds on a CPU) until greedy
decoding completes each prompt as written: a model that writes known replies, e.g. a
program and, once it has read the program's output, an answer (tests/tools).
"""

from __future__ import annotations

import argparse
import json
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


def build_tokenizer(vocab_size: int, extra: tuple[str, ...] | list[str] = ()):
    """A byte-level BPE tokenizer with special tokens and the chat template, trained on the
    fixed corpus (and `extra` texts)."""
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
    tok.train_from_iterator(CORPUS * 4 + list(extra) * 4, trainer=trainer)
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


def memorize(model, tokenizer, pairs: list[tuple[str, str]], steps: int = 600, lr: float = 3e-3) -> None:
    """Train `model` on (prompt, completion) pairs, tokenized as vLLM tokenizes a rendered
    prompt (no special tokens added), until greedy decoding continues each prompt with its
    completion; raises if it does not within `steps`."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a tiny model: more threads only contend on a busy machine
    try:
        _train(model, tokenizer, pairs, steps, lr)
    finally:
        torch.set_num_threads(threads)


def _train(model, tokenizer, pairs: list[tuple[str, str]], steps: int, lr: float) -> None:
    import torch

    torch.manual_seed(0)
    rows, starts = [], []
    for prompt, completion in pairs:
        rows.append(tokenizer.encode(prompt + completion, add_special_tokens=False))
        starts.append(len(tokenizer.encode(prompt, add_special_tokens=False)))
    width = max(map(len, rows))
    ids = torch.tensor([row + [tokenizer.pad_token_id] * (width - len(row)) for row in rows])
    mask = torch.tensor([[1] * len(row) + [0] * (width - len(row)) for row in rows])
    learn = torch.tensor([[int(start <= k < len(row)) for k in range(width)] for row, start in zip(rows, starts)])
    labels = ids.masked_fill(learn == 0, -100)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    model.train()
    for step in range(steps):
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 25 == 24 and _reproduces(model, ids, mask, learn):
            break
    model.eval()
    if not _reproduces(model, ids, mask, learn):
        raise RuntimeError(f"the tiny model did not learn its completions in {steps} steps (loss {loss.item():.4f})")


def _reproduces(model, ids, mask, learn) -> bool:
    """Whether the greedy next token is the completion's own at each of its positions."""
    import torch

    with torch.no_grad():
        predicted = model(input_ids=ids, attention_mask=mask).logits.argmax(-1)
    return bool(((predicted[:, :-1] == ids[:, 1:]) | (learn[:, 1:] == 0)).all())


def make_tiny_model(out_dir: str | Path, vocab_size: int = 512, seed: int = 0,
                    pairs: list[tuple[str, str]] | None = None) -> Path:
    """Write the tiny model folder to `out_dir` and return its path; `pairs`: (prompt,
    completion) pairs it then learns to complete as written (see `memorize`)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(vocab_size, extra=[p + c for p, c in pairs or ()])
    model = build_model(tokenizer, seed)
    if pairs:
        memorize(model, tokenizer, pairs)
    tokenizer.save_pretrained(out)
    model.save_pretrained(out, safe_serialization=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--vocab-size", type=int, default=512)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--memorize", help="a JSON file holding [prompt, completion] pairs the model learns")
    args = parser.parse_args()
    pairs = [tuple(pair) for pair in json.loads(Path(args.memorize).read_text())] if args.memorize else None
    print(make_tiny_model(args.out_dir, args.vocab_size, args.seed, pairs))


if __name__ == "__main__":
    main()
