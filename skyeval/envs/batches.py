"""The `map_batches` callables both Datasets run (a Ray Dataset's actors, or the
in-process `skyeval.envs.local.LocalDataset`): `GenerateBatch`. No Ray import here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa


class GenerateBatch:
    """`ds.map_batches(GenerateBatch, fn_constructor_args=(env, model, scaling, sampling))`:
    the backend is built once per actor from `model` (a model config such as
    `HTTPConfig`, in the env's turn loop when it has tools; a backend object is used as
    it is), and each batch of problems becomes
    one row per sample: the problem's fields, `prompt`, and `GenerationResult`'s fields
    (`sample_idx`, `generation`, `error`, `error_type`, `finish_reason`, `usage`). A
    problem whose prompt can't be built gets rows with `error` set, never an exception."""

    def __init__(self, env: Any, model: Any, scaling: Any, sampling: Any) -> None:
        self.env, self.sampling = env, sampling
        self.owned = not hasattr(model, "generate")  # a backend passed in is its owner's to close
        self.backend = model if not self.owned else env.build_backend(model, scaling)

    def __call__(self, batch: "pa.Table") -> dict[str, list[Any]]:
        from skyeval.backends.base import GenerationResult

        problems, requests, rows = {}, [], []
        samples = list(range(self.sampling.n))
        for position, problem in enumerate(batch.to_pylist()):
            try:
                problem = self.env._templated(problem)
                request = self.env.request_for(problem, samples)
            except Exception as err:  # noqa: BLE001 - that problem's samples fail, the batch goes on
                rows.extend((position, {**problem, "prompt": problem.get("prompt"), **GenerationResult(
                    problem["id"], i, error=f"{type(err).__name__}: {err}", error_type=type(err).__name__).to_dict()})
                    for i in samples)
                continue
            problems[problem["id"]] = (position, problem)
            requests.append(request)
        for result in self.backend.generate(requests, self.sampling):
            position, problem = problems[result.id]
            rows.append((position, {**problem, **result.to_dict()}))
        rows.sort(key=lambda item: (item[0], item[1]["sample_idx"]))
        return _columns([row for _, row in rows])

    def __del__(self) -> None:
        close = getattr(getattr(self, "backend", None), "close", None) if getattr(self, "owned", False) else None
        if close is not None:
            try:
                close()
            except Exception:  # noqa: BLE001 - the actor is going away anyway
                pass


def _columns(rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Rows -> columns over the union of their keys (None where a row lacks one)."""
    keys = dict.fromkeys(k for row in rows for k in row)
    return {key: [row.get(key) for row in rows] for key in keys}
