"""What the client raises. The messages are the `mltune` CLI's (client/rpc_commands.cc), so a
user sees the same words from either."""


class MltuneError(Exception):
    """The daemon refused a call, or the call failed: `code` is the grpc.StatusCode (None for an
    error found before any call) and the message the daemon's."""

    def __init__(self, message, code=None):
        super().__init__(message)
        self.code = code


class Unreachable(MltuneError):
    """mltuned is not there: nothing listens at the address, or no connection came before the
    deadline (the CLI exits 2 on it). A compiler can fall back to its default pipeline."""


class JobFailed(MltuneError):
    """The job ended failed or cancelled; `job` is its last snapshot."""

    def __init__(self, job):
        if job.state == "cancelled":
            message = f"job {job.job_id} was cancelled"
        else:
            message = f"job {job.job_id} failed: {job.error or '?'}"
        super().__init__(message)
        self.job = job


class NoResult(MltuneError):
    """The job is still queued or running (the CLI's `result` exits 3 on it); `job` is its
    snapshot."""

    def __init__(self, job, message):
        super().__init__(message)
        self.job = job
