"""docs/curation.md's Sky-T1 recipe and the two loopback models it runs against, shared by
tests/curation/test_recipe.py and scripts/bench_curation.py.

`recipe()` is the bash block after the marker in docs/curation.md; `recipe_env(...)` the
variables it expects (`SOURCE`, `SAMPLER`, `REWRITER`, `AGAINST`) pointing at two
`FaultServer`s (tests/backends/fault_server.py): the sampling model answers with one of
`SAMPLES` (the prompt carries the gold: see `SAMPLER_CONFIG`), the second model with
`REWRITE`; the recipe's folder holds `sampler.yaml` (`SAMPLER_CONFIG` with the sampler's
URL) and a `scripts` link to the checkout's.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MARKER = "<!-- the recipe: tests/curation/test_recipe.py and scripts/bench_curation.py run the next block -->"

# the sampling model: four different traces per problem, reasoning in <think>, the third
# one wrong; the prompt carries the gold (see SAMPLER_CONFIG), so the others are right
SAMPLES = [
    "<think>\nI add the numbers given, one by one, and reach {number}.\n</think>\n\nThe answer is $\\boxed{{{number}}}$.",
    "<think>\nFirst I list what the problem gives me. Then I combine those quantities in the order the story tells "
    "them, checking each step against the question, and the total comes to {number}.\n</think>\n\n"
    "Therefore the final answer is $\\boxed{{{number}}}$.",
    "<think>\nA quick guess, without checking.\n</think>\n\nThe answer is $\\boxed{{{number}1}}$.",
    "<think>\nWorking backwards: the result has to agree with every condition stated, and {number} does.\n</think>\n\n"
    "$\\boxed{{{number}}}$ is what the question asks for.",
]
# the second model: a rewrite (its reasoning and answer: one of its own for each trace) that
# also ends with a difficulty label
REWRITE = ("<reasoning>\nRestated ({prompt_hash}): the quantities of the problem, combined in order, give {number}."
           "\n</reasoning>\n"
           "<answer>\nThe answer is $\\boxed{{{number}}}$.\n</answer>\nDifficulty: 3")
SAMPLER_CONFIG = """model_config:
  type: openai
  model_source: sampler
  api_url: {url}
  api_key_env: null
template:
  messages:
    - role: user
      content: "{{question}}\\nPut the final answer in \\\\boxed{{}}. (reference: {{expected}})"
"""


def recipe() -> str:
    """The bash block after the recipe's marker in docs/curation.md."""
    text = (REPO / "docs" / "curation.md").read_text(encoding="utf-8")
    return re.search(r"```bash\n(.*?)^```", text[text.index(MARKER):], re.M | re.S).group(1)


def recipe_env(work: Path, problems: int, sampler_url: str, second_url: str, against: str) -> dict[str, str]:
    """Prepare `work` (sampler.yaml, the scripts link) and return the recipe's variables:
    `problems` GSM8K problems, the two models at their URLs, decontaminated `against`."""
    (work / "scripts").symlink_to(REPO / "scripts")  # the recipe runs from a checkout
    (work / "sampler.yaml").write_text(SAMPLER_CONFIG.format(url=sampler_url))
    return {"SOURCE": "+experiment=numina_rejection_sampling env=gsm8k "
                      f"env._target_=skyeval.curation.rejection.GSM8KRejectionEnv env.limit={problems}",
            "SAMPLER": "--config sampler.yaml",
            "REWRITER": f"--model openai --set model_source=rewriter --set api_url={second_url} "
                        "--set api_key_env=null",
            "AGAINST": against, "PYTHONPATH": str(REPO)}
