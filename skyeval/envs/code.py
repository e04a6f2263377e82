"""Code benchmarks: a generation's code runs against the problem's tests, in the sandbox only.

The generation's last ```python block goes to `skyeval.scorers.code.score_code`, which
keeps the tests' expected values out of the sandbox (docs/sandbox.md's trust model).

Problems carry their tests as a JSON string (`tests_json`) in one of score_code's shapes
(stdin / call / functional / asserts): Ray Data's Arrow conversion cannot hold the
heterogeneous nested test structures, a string column always converts. `score_item`
decodes it. Reference generations are the dataset's solution in a ```python fence (None
where a benchmark ships no solution: codeforces, code_contests, livecodebench).
"""

from __future__ import annotations

import ast
import base64
import io
import json
import pickle
import re
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skyeval.envs.base import Env, RowScorer, check_positive
from skyeval.envs.data import read_records, resolve_data_dir
from skyeval.envs.math import check_knob
from skyeval.errors import ConfigError
from skyeval.templates import Template

if TYPE_CHECKING:
    import pyarrow
    import ray.data

STDIN_INSTRUCTION = (
    "Read the input from stdin and write the answer to stdout. "
    "Return your complete program in one ```python code block."
)
FUNCTION_INSTRUCTION = "Return your complete solution, starting from the given code, in one ```python code block."
CODE_INSTRUCTION = "Return your complete solution in one ```python code block."
LCB_STDIN_INSTRUCTION = (
    "Read the inputs from stdin solve the problem and write the answer to stdout (do not directly test on the "
    "sample inputs). Enclose your code within delimiters as follows. Ensure that when the python program runs, it "
    "reads the inputs, runs the algorithm and writes output to STDOUT.\n```python\n# YOUR CODE HERE\n```"
)
LCB_FUNCTION_INSTRUCTION = (
    "You will use the following starter code to write the solution to the problem and enclose your code within "
    "delimiters.\n```python\n{starter}\n```"
)
MBPP_SPLITS = {"prompt": (1, 10), "test": (11, 510), "validation": (511, 600), "train": (601, 974)}
APPS_DIFFICULTIES = ("all", "introductory", "interview", "competition")
TACO_DIFFICULTIES = ("all", "easy", "medium", "medium_hard", "hard", "very_hard", "unknown_difficulty")
TACO_SKILLS = (
    "all", "Amortized analysis", "Bit manipulation", "Complete search", "Data structures",
    "Dynamic programming", "Greedy algorithms", "Range queries", "Sorting",
)
LCB_DIFFICULTIES = ("all", "easy", "medium", "hard")
_MAX_DECODED_BYTES = 1 << 30
APPS_FLOAT_TOLERANCE = [1e-5, 1e-8]  # [rel, abs]: APPS's/TACO's checker uses np.allclose(rtol=1e-5, atol=1e-8)
_CHECK_CALL = re.compile(r"^check\((.+)\)\s*$", re.MULTILINE)


class CodeEnv(Env):
    """A problem statement plus tests; scored by running the extracted code in the sandbox.

    Knobs: `timeout_s` (the benchmark's time limit per sandbox run, as CPU time: RLIMIT_CPU),
    `wall_multiple` (wall time allowed per run, in multiples of `timeout_s`: a loaded machine
    slows a program down without making it wrong), `memory_mb`
    (address-space limit), `stop_at_first_failure` (skip the remaining stdin runs of a
    failed sample: same verdict, less time), `score_threads` (sandboxes run at once per Ray
    scoring task: a sandbox mostly waits on its child process, so one core keeps several busy),
    `float_rule` (`exact`: floats as the benchmark's own checker compares them; `tolerant`:
    also within 1e-6; unset: the benchmark's documented rule, `default_float_rule`)."""

    default_float_rule = "tolerant"  # docs/sandbox.md says which benchmark uses which, and why

    required_keys = ("tests_json",)  # a row without its tests has nothing to score against

    default_template = Template(messages=[{"role": "user", "content": "{question}\n\n{instruction}"}])

    def __init__(
        self,
        timeout_s: float = 6.0,
        memory_mb: int = 2048,
        stop_at_first_failure: bool = True,
        score_threads: int = 4,
        float_rule: str | None = None,
        wall_multiple: float = 3.0,
        **kwargs: Any,
    ) -> None:
        from skyeval.scorers.code import FLOAT_RULES

        super().__init__(**kwargs)
        self.timeout_s, self.memory_mb = check_positive("env.timeout_s", timeout_s), memory_mb
        self.stop_at_first_failure, self.score_threads = stop_at_first_failure, score_threads
        self.wall_multiple = check_positive("env.wall_multiple", wall_multiple)
        if self.wall_multiple < 1:
            raise ConfigError(f"env.wall_multiple must be >= 1 (wall time is a multiple of the CPU limit), "
                              f"got {wall_multiple!r}")
        self.float_rule = float_rule or self.default_float_rule
        try:
            check_knob("env.float_rule", self.float_rule, FLOAT_RULES)
        except ValueError as err:
            raise ConfigError(str(err)) from None

    def problem(self, problem_id: str, question: str, tests: dict[str, Any] | None, *,
                instruction: str = STDIN_INSTRUCTION, solution: str | None = None,
                starter_code: str | None = None, **meta: Any) -> dict[str, Any]:
        """The uniform problem dict; `tests_json` is None when the row has no usable tests."""
        return {
            "id": str(problem_id),
            "question": question.strip(),
            "instruction": instruction,
            "tests_json": json.dumps(tests) if tests else None,
            "starter_code": starter_code or None,
            "solution": solution or None,
            **meta,
        }

    def keep(self, problem: dict[str, Any]) -> bool:
        return problem["tests_json"] is not None

    def gold_problem(self, key: str, value: Any, item: dict[str, Any]) -> str | None:
        """The gold is a test spec as JSON text, in one of score_code's shapes."""
        return tests_problem(value)

    def reference_generation(self, problem: dict[str, Any]) -> str | None:
        solution = problem.get("solution")
        return f"```python\n{solution.strip(chr(10))}\n```" if solution else None

    def score(self, ds_or_item: "ray.data.Dataset | dict[str, Any]") -> Any:
        """Like `Env.score`, but each Ray task scores its block with `score_threads` threads."""
        if isinstance(ds_or_item, dict):
            return self.score_item(ds_or_item)
        return ds_or_item.map_batches(_ScoreBatch(self), batch_size=None, batch_format="pyarrow")

    def describe_scoring(self) -> dict[str, Any]:
        from skyeval.scorers.sandbox import describe

        return {"sandbox": describe(), "float_rule": self.float_rule}

    scorer_name = "code"

    def scoring_functions(self) -> dict[str, Any]:
        return {"code": CodeScorer}


_TEST_FIELDS = {"stdin": ("inputs", "outputs"), "call": ("fn_name", "inputs", "outputs"),
                "functional": ("test", "entry_point"), "asserts": ("asserts",)}
TESTS_SPEC = ('a JSON test spec {"type": "stdin"|"call" with non-empty "inputs" and "outputs" of one length '
              '(and "fn_name"), "functional" with "test" and "entry_point", or "asserts" with a non-empty list}')


def tests_problem(value: Any) -> str | None:
    """None for a well-formed `tests_json`, else what it must be (`TESTS_SPEC`, with the flaw)."""
    if not isinstance(value, str) or not value.strip():
        return TESTS_SPEC
    try:
        tests = json.loads(value)
    except ValueError as err:
        return f"{TESTS_SPEC} (not JSON: {err})"
    kind = tests.get("type") if isinstance(tests, dict) else None
    if kind not in _TEST_FIELDS:
        return TESTS_SPEC
    missing = [name for name in _TEST_FIELDS[kind] if not tests.get(name)]
    if missing:
        return f"{TESTS_SPEC} (a {kind!r} spec without {', '.join(missing)})"
    if kind in ("stdin", "call") and not (isinstance(tests["inputs"], list) and isinstance(tests["outputs"], list)
                                          and len(tests["inputs"]) == len(tests["outputs"])):
        return f"{TESTS_SPEC} (inputs and outputs are not lists of one length)"
    if kind == "asserts" and not isinstance(tests["asserts"], list):
        return f"{TESTS_SPEC} (asserts is not a list)"
    return None


class CodeScorer:
    """Runs a sample's last ```python block against the problem's tests (`tests_json`) in
    the sandbox, with the env's time and memory limits: `{"score", "passed", ...}`."""

    def __init__(self, env: CodeEnv) -> None:
        self.env = env

    def __call__(self, item: dict[str, Any]) -> dict[str, Any]:
        from skyeval.scorers.code import score_code
        from skyeval.scorers.sandbox import SandboxLimits

        if "tests_json" not in item:
            raise ValueError(f"score_item of env {self.env.name!r} needs key 'tests_json' (the problem's tests), "
                             f"which this item lacks: it has {sorted(item)} (rows from env.read_dataset() have it)")
        env = self.env
        limits = SandboxLimits(timeout_s=env.timeout_s * env.wall_multiple, cpu_s=env.timeout_s,
                               memory_mb=env.memory_mb)
        return score_code(item.get("generation") or "", json.loads(item["tests_json"]), limits=limits,
                          stop_at_first_failure=env.stop_at_first_failure, starter_code=item.get("starter_code"),
                          float_rule=env.float_rule)


class HumanEvalEnv(CodeEnv):
    """HumanEval: complete the function in `prompt`; `check(entry_point)` with the prompt
    as prelude (so a bare completion of the body also runs). Floats `exact`: its tests write
    a tolerance where the task allows one (`abs(x - y) < 1e-6`), and `==` on a float is a
    value the task fixes (e.g. rounded to two decimals)."""

    default_float_rule = "exact"

    def to_problem(self, row: dict[str, Any], index: int) -> dict[str, Any]:
        # the reference solution runs the check's own code on the trusted side (its helpers,
        # e.g. HumanEval/33's expected `sort_third(...)`): skyeval.scorers.trusted_check
        tests = {"type": "functional", "test": row["test"], "entry_point": row["entry_point"], "prelude": row["prompt"],
                 "reference": row["prompt"] + row["canonical_solution"]}
        question = f"Complete the following Python function.\n```python\n{row['prompt'].strip()}\n```"
        return self.problem(row["task_id"], question, tests, instruction=FUNCTION_INSTRUCTION,
                            solution=row["prompt"] + row["canonical_solution"], entry_point=row["entry_point"])


class MBPPEnv(CodeEnv):
    """MBPP (full, or the hand-verified `sanitized` subset). `split` picks the README's
    task-id range (test = 11-510) from the local file, or the hub split of that name."""

    def __init__(self, sanitized: bool = False, **kwargs: Any) -> None:
        kwargs["hf_subset"] = kwargs.get("hf_subset") or ("sanitized" if sanitized else "full")
        kwargs["local_files"] = kwargs.get("local_files") or (
            "mbpp/sanitized-mbpp.json" if sanitized else "mbpp/mbpp.jsonl"
        )
        super().__init__(**kwargs)
        check_knob("mbpp split", self.split, tuple(MBPP_SPLITS))
        self.sanitized = sanitized

    def to_problem(self, row: dict[str, Any], index: int) -> dict[str, Any]:
        asserts = list(row["test_list"])
        task = (row.get("text") or row.get("prompt") or "").strip()
        question = (f"You are an expert Python programmer, and here is your task: {task} "
                    "Your code should pass these tests:\n\n" + "\n".join(asserts))
        # test_setup_code uses the solution's names (e.g. builds its `Node` trees): it runs
        # after the code, ahead of each assert; sanitized test_imports run before the code.
        after = (row.get("test_setup_code") or "").strip()
        tests = {"type": "asserts", "asserts": [f"{after}\n{a}" if after else a for a in asserts],
                 "setup": "\n".join(row.get("test_imports") or []), "reference": row["code"]}
        return self.problem(row["task_id"], question, tests, instruction=CODE_INSTRUCTION,
                            solution=row["code"], task_id=int(row["task_id"]))

    def keep(self, problem: dict[str, Any]) -> bool:
        low, high = MBPP_SPLITS[self.split]
        return super().keep(problem) and low <= problem["task_id"] <= high


class APPSEnv(CodeEnv):
    """APPS (`codeparrot/apps` rows: `input_output` and `solutions` as JSON strings), or
    locally the original layout `<id>/{question.txt,input_output.json,solutions.json,...}`
    (`local_files` globs the problem folders). Call-based when `fn_name` is present."""

    difficulties = APPS_DIFFICULTIES

    def __init__(self, difficulty: str = "all", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        check_knob(f"{self.name} difficulty", difficulty, self.difficulties)
        self.difficulty = difficulty

    def load_rows(self) -> list[dict[str, Any]]:
        data_dir = resolve_data_dir(self.data_dir)
        if data_dir is None or not self.local_files:
            return super().load_rows()
        patterns = [self.local_files] if isinstance(self.local_files, str) else self.local_files
        paths = sorted(p for pattern in patterns for p in data_dir.glob(pattern))
        if not paths:
            raise FileNotFoundError(f"no file or APPS problem folder matches {patterns} under {data_dir}")
        return [row for p in paths for row in ([_apps_folder_row(p)] if p.is_dir() else read_records(p))]

    def to_problem(self, row: dict[str, Any], index: int) -> dict[str, Any]:
        io_spec = _loads(row.get("input_output"))
        solutions = _loads(row.get("solutions")) or []
        starter = (row.get("starter_code") or "").strip("\n")
        question = row["question"] + (f"\n\nStarter code:\n```python\n{starter}\n```" if starter else "")
        tests = _io_tests(io_spec)
        instruction = FUNCTION_INSTRUCTION if tests and tests["type"] == "call" else STDIN_INSTRUCTION
        return self.problem(row.get("problem_id", index), question, tests, instruction=instruction,
                            solution=solutions[0] if solutions else None, starter_code=starter,
                            difficulty=str(row.get("difficulty") or "").lower())

    def keep(self, problem: dict[str, Any]) -> bool:
        return super().keep(problem) and self.difficulty in ("all", problem["difficulty"])


class TACOEnv(APPSEnv):
    """TACO (`BAAI/TACO`, APPS-style fields). Knobs: `difficulty` (easy ... very_hard) and
    `skill` (one of its `skill_types`, e.g. "Dynamic programming")."""

    difficulties = TACO_DIFFICULTIES

    def __init__(self, skill: str = "all", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        check_knob("taco skill", skill, TACO_SKILLS)
        self.skill = skill

    def to_problem(self, row: dict[str, Any], index: int) -> dict[str, Any]:
        skills = row.get("skill_types") or []
        skills = ast.literal_eval(skills) if isinstance(skills, str) else list(skills)
        return {**super().to_problem(row, index), "skills": skills}

    def keep(self, problem: dict[str, Any]) -> bool:
        return super().keep(problem) and self.skill in ("all", *problem["skills"])


class LiveCodeBenchEnv(CodeEnv):
    """LiveCodeBench (`livecodebench/code_generation_lite`): public tests as JSON, private
    tests as base64(zlib(pickle(JSON))) decoded without unpickling any object. Knobs:
    `difficulty` (easy|medium|hard|all); its dates are `contest_date` (the `start_date` /
    `end_date` window of every dated env). Floats `exact`, as its leaderboard's checker
    (stdout decimals exactly, call results `==`)."""

    default_float_rule = "exact"

    date_field = "contest_date"
    row_fields = ("question_id", "question_content", "public_test_cases", "private_test_cases", "contest_date",
                  "difficulty")
    local_copy = ("hf download livecodebench/code_generation_lite test.jsonl test2.jsonl test3.jsonl test4.jsonl "
                  "test5.jsonl --repo-type dataset --local-dir {data_dir}/livecodebench (release_v5: 880 problems "
                  "with their tests; `hf` comes with huggingface_hub, which datasets installs)")

    def __init__(self, difficulty: str = "all", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        check_knob("livecodebench difficulty", difficulty, LCB_DIFFICULTIES)
        self.difficulty = difficulty

    def to_problem(self, row: dict[str, Any], index: int) -> dict[str, Any]:
        cases = _loads(row["public_test_cases"]) + decode_private_tests(row.get("private_test_cases"))
        starter = (row.get("starter_code") or "").strip("\n")
        if cases and cases[0].get("testtype") == "functional":
            func_name = (_loads(row.get("metadata")) or {})["func_name"]
            tests = {"type": "call", "fn_name": func_name,
                     "inputs": [[json.loads(arg) for arg in c["input"].split("\n")] for c in cases],
                     "outputs": [json.loads(c["output"]) for c in cases]}
            instruction = LCB_FUNCTION_INSTRUCTION.format(starter=starter)
        else:
            tests = {"type": "stdin", "inputs": [c["input"] for c in cases], "outputs": [c["output"] for c in cases],
                     "float_tolerance": None}  # LiveCodeBench's checker: float tokens as exact decimals
            instruction = LCB_STDIN_INSTRUCTION
        return self.problem(row["question_id"], row["question_content"], tests if cases else None,
                            instruction=instruction, starter_code=starter, difficulty=row["difficulty"],
                            contest_date=str(row["contest_date"])[:10], platform=row.get("platform"))

    def keep(self, problem: dict[str, Any]) -> bool:
        return super().keep(problem) and self.difficulty in ("all", problem["difficulty"])


class StdinTestsEnv(CodeEnv):
    """Stdin/stdout problems: rLLM/DeepCoder rows (`problem`; `tests` a list of
    {input, output} or {inputs, outputs}, native or a JSON string) or `deepmind/code_contests`
    rows (`description`, public + private tests)."""

    def to_problem(self, row: dict[str, Any], index: int) -> dict[str, Any]:
        if "description" in row:  # deepmind/code_contests
            cases = [row["public_tests"], row["private_tests"]]
            inputs = [x for c in cases for x in c["input"]]
            outputs = [x for c in cases for x in c["output"]]
            question, problem_id = row["description"], row.get("name", index)
        else:
            tests = _loads(row["tests"])
            if isinstance(tests, list):
                inputs, outputs = [t["input"] for t in tests], [t["output"] for t in tests]
            else:
                inputs, outputs = tests["inputs"], tests["outputs"]
            question, problem_id = row["problem"], index
        tests = {"type": "stdin", "inputs": inputs, "outputs": outputs} if inputs else None
        return self.problem(problem_id, question, tests)


class LeetCodeEnv(CodeEnv):
    """LeetCode problems with a `check(candidate)` test called on `Solution().<method>`:
    rLLM rows (`problem`, `solutions`, `tests.functional` ending in `check(Solution().m)`)
    or `newfacade/LeetCodeDataset` rows (`query`, `completion`, `test`, `entry_point`).
    Tests get `LEETCODE_PRELUDE` (the imports LeetCode provides) as prelude."""

    def to_problem(self, row: dict[str, Any], index: int) -> dict[str, Any]:
        from skyeval.scorers.code import LEETCODE_PRELUDE

        if "entry_point" in row:  # newfacade/LeetCodeDataset
            test, entry_point = row["test"], row["entry_point"]
            question, solution, problem_id = row["query"], row["completion"], row.get("task_id", index)
        else:
            test, entry_point = split_check_call(_loads(row["tests"])["functional"])
            question, solution, problem_id = row["problem"], row.get("solutions"), index
        tests = {"type": "functional", "test": test, "entry_point": entry_point, "prelude": LEETCODE_PRELUDE,
                 **({"reference": solution} if solution else {})}
        return self.problem(problem_id, question, tests, instruction=FUNCTION_INSTRUCTION, solution=solution,
                            entry_point=entry_point)


class _ScoreBatch:
    """A block of rows scored by a thread pool inside one Ray task."""

    def __init__(self, env: CodeEnv) -> None:
        self.env = env

    def __call__(self, batch: "pyarrow.Table") -> dict[str, list[Any]]:
        rows = batch.to_pylist()
        with ThreadPoolExecutor(max(1, self.env.score_threads)) as pool:
            scored = list(pool.map(RowScorer(self.env), rows))
        return {key: [row.get(key) for row in scored] for key in dict.fromkeys(k for row in scored for k in row)}


def split_check_call(functional: str) -> tuple[str, str]:
    """`def check(candidate): ...\\ncheck(Solution().m)` -> (the test without the call, "Solution().m")."""
    calls = _CHECK_CALL.findall(functional)
    if len(calls) != 1:
        raise ValueError(f"expected one top-level check(...) call in the test, found {len(calls)}")
    return _CHECK_CALL.sub("", functional).rstrip() + "\n", calls[0].strip()


class _DataOnlyUnpickler(pickle.Unpickler):
    """Loads only pickle's built-in data types; every global (class, function) is refused."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"test data may not reference {module}.{name}")


def decode_private_tests(text: str | None) -> list[dict[str, Any]]:
    """LiveCodeBench private tests: plain JSON, or base64(zlib(pickle(JSON string)))."""
    if not text:
        return []
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    inflater = zlib.decompressobj()
    raw = inflater.decompress(base64.b64decode(text), _MAX_DECODED_BYTES)
    if inflater.unconsumed_tail:
        raise ValueError("private tests decompress to more than 1 GiB")
    data = _DataOnlyUnpickler(io.BytesIO(raw)).load()
    return json.loads(data) if isinstance(data, (str, bytes)) else data


def _io_tests(spec: dict[str, Any] | None) -> dict[str, Any] | None:
    """APPS/TACO `input_output` -> score_code tests (call-based when `fn_name` is set). As
    their checker: an expected `[x]` also accepts `x` (outputs are wrapped inconsistently),
    stdout floats as `np.allclose`'s defaults."""
    if not spec or not spec.get("inputs"):
        return None
    if spec.get("fn_name"):
        return {"type": "call", "fn_name": spec["fn_name"], "inputs": spec["inputs"], "outputs": spec["outputs"],
                "accept_unwrapped": True}
    return {"type": "stdin", "inputs": spec["inputs"], "outputs": spec["outputs"], "float_tolerance": APPS_FLOAT_TOLERANCE}


def _apps_folder_row(folder: Path) -> dict[str, Any]:
    """One original-layout APPS problem folder as a `codeparrot/apps` row."""
    def text(name: str) -> str | None:
        path = folder / name
        return path.read_text(encoding="utf-8") if path.exists() else None

    metadata = json.loads(text("metadata.json") or "{}")
    return {
        "problem_id": folder.name,
        "question": text("question.txt") or "",
        "input_output": text("input_output.json") or "",
        "solutions": text("solutions.json") or "",
        "starter_code": text("starter_code.py") or "",
        "difficulty": metadata.get("difficulty"),
        "url": metadata.get("url"),
    }


def _loads(value: Any) -> Any:
    """A JSON string (hub columns) or the already-parsed value; None for empty."""
    if value in (None, ""):
        return None
    return json.loads(value) if isinstance(value, str) else value
