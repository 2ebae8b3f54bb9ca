"""Plain Python values for what the daemon answers (the C++ client's structs in
client/rpc_client.h), made from the wire messages here so callers never touch protobuf."""

import dataclasses
import json
from typing import Dict, List, Optional

# JobState enum values (proto/mltune/v1/compile_service.proto) by the CLI's names for them.
_STATE_NAMES = {0: "unspecified", 1: "queued", 2: "running", 3: "done", 4: "failed",
                5: "cancelled"}
FINAL_STATES = ("done", "failed", "cancelled")


@dataclasses.dataclass
class Budget:
    steps: int = 0        # search steps; 0 = the daemon's default
    seconds: float = 0.0  # wall-clock limit; 0 = none beyond the daemon's max_job_seconds

    @staticmethod
    def of(budget):
        """None (the daemon's default), a number of steps, or a Budget."""
        if budget is None:
            return Budget()
        if isinstance(budget, Budget):
            return budget
        if isinstance(budget, bool) or not isinstance(budget, int):
            raise TypeError(f"budget wants a number of steps or mltune.Budget, got {budget!r}")
        return Budget(steps=budget)


@dataclasses.dataclass
class Provenance:
    worker: str = ""
    mltune_version: str = ""
    search_version: str = ""
    created_unix_ms: int = 0
    updated_unix_ms: int = 0


@dataclasses.dataclass
class TaskResult:
    task: str = ""
    target: str = ""
    fingerprint: str = ""
    strategy: str = ""
    # Costs (lower is better): the graph as given, the compiler's default, the best found.
    original_score: float = 0.0
    baseline_score: float = 0.0
    tuned_score: float = 0.0
    budget_steps: int = 0
    artifacts: Dict[str, bytes] = dataclasses.field(default_factory=dict)
    provenance: Provenance = dataclasses.field(default_factory=Provenance)
    from_cache: bool = False
    cache_hits: int = 0

    def text(self, name):
        """The artifact `name` as text, or None when the result has none."""
        data = self.artifacts.get(name)
        return None if data is None else data.decode("utf-8")

    @property
    def optimized_hlo(self):
        return self.text("optimized_hlo")

    @property
    def pass_sequence(self):
        """The pass sequence, one name per entry ([] when the graph was kept as given)."""
        return [line for line in (self.text("pass_sequence") or "").splitlines() if line.strip()]

    @property
    def compiler_options(self):
        """XLA debug options by name ({} when XLA's default was best), or None when the task
        returns none."""
        text = self.text("compiler_options")
        return None if text is None else json.loads(text)

    @property
    def improvement_vs_baseline_percent(self):
        if self.baseline_score == 0:
            return 0.0
        return 100.0 * (self.baseline_score - self.tuned_score) / self.baseline_score


@dataclasses.dataclass
class Job:
    job_id: str = ""
    state: str = "unspecified"  # queued, running, done, failed, cancelled
    tasks: List[str] = dataclasses.field(default_factory=list)
    target: str = ""
    strategy: str = ""
    budget: Budget = dataclasses.field(default_factory=Budget)
    fingerprint: str = ""
    graph_name: str = ""
    progress: float = 0.0  # 0..1
    best_score: Optional[float] = None  # best so far of the running task
    steps_done: int = 0
    error: str = ""
    results: List[TaskResult] = dataclasses.field(default_factory=list)
    attempts: int = 0
    created_unix_ms: int = 0
    started_unix_ms: int = 0
    finished_unix_ms: int = 0

    @property
    def final(self):
        return self.state in FINAL_STATES

    def result(self, task=None):
        """The result of `task` (of the only task when None); KeyError when it has none."""
        for r in self.results:
            if task is None or r.task == task:
                return r
        raise KeyError(f"job {self.job_id} has no result" + (f" for task {task}" if task else ""))


@dataclasses.dataclass
class GraphRef:
    """A graph stored on the daemon by content hash (Client.upload_graph), or how a request's
    graph went: by hash (sha256 set) or inline (sha256 "")."""
    sha256: str = ""
    size: int = 0
    already_stored: bool = False  # the daemon had it: its bytes were not sent again
    bytes_sent: int = 0  # graph bytes this call sent


@dataclasses.dataclass
class Submission:
    job_id: str = ""  # "" when the cache answered
    attached: bool = False  # an identical request was already queued or running: its job
    cached: bool = False  # answered from the cache: `job.results` holds the results
    job: Job = dataclasses.field(default_factory=Job)
    graph: GraphRef = dataclasses.field(default_factory=GraphRef)  # how the graph was sent


@dataclasses.dataclass
class LookupResult:
    fingerprint: str = ""
    results: List[TaskResult] = dataclasses.field(default_factory=list)  # empty on a miss


def budget_from_proto(b):
    return Budget(steps=b.steps, seconds=b.seconds)


def task_result_from_proto(r):
    p = r.provenance
    return TaskResult(task=r.task, target=r.target, fingerprint=r.fingerprint,
                      strategy=r.strategy, original_score=r.original_score,
                      baseline_score=r.baseline_score, tuned_score=r.tuned_score,
                      budget_steps=r.budget_steps, artifacts=dict(r.artifacts),
                      provenance=Provenance(p.worker, p.mltune_version, p.search_version,
                                            p.created_unix_ms, p.updated_unix_ms),
                      from_cache=r.from_cache, cache_hits=r.cache_hits)


def job_from_proto(j):
    return Job(job_id=j.job_id, state=_STATE_NAMES.get(j.state, "unspecified"),
               tasks=list(j.tasks), target=j.target, strategy=j.strategy,
               budget=budget_from_proto(j.budget), fingerprint=j.fingerprint,
               graph_name=j.graph_name, progress=j.progress,
               best_score=j.best_score if j.HasField("best_score") else None,
               steps_done=j.steps_done, error=j.error,
               results=[task_result_from_proto(r) for r in j.results], attempts=j.attempts,
               created_unix_ms=j.created_unix_ms, started_unix_ms=j.started_unix_ms,
               finished_unix_ms=j.finished_unix_ms)
