"""mltune.Client: mltuned's CompileService from Python, with the `mltune` CLI's semantics
(client/rpc_client.cc, client/rpc_commands.cc): the same server, TLS and token settings and
environment variables, and the same error messages."""

import os

import grpc

from mltune import graph as graph_wire
from mltune import types
from mltune._stubs import pb, pb_grpc
from mltune.errors import JobFailed, MltuneError, NoResult, Unreachable
from mltune.progress import Progress, steps_text

# The daemon's default listen address (mltuned --listen).
DEFAULT_SERVER = "127.0.0.1:8470"
_UNREACHABLE_PREFIX = "cannot reach mltuned at "
# Bytes per second a deadline allows for: a slow link still finishes an upload; the daemon
# reading, hashing and parsing a graph.
_UPLOAD_RATE = float(1 << 20)
_PARSE_RATE = float(16 << 20)


def server_address(server=None):
    """`server` when non-empty, else $MLTUNE_SERVER when set and non-empty, else 127.0.0.1:8470."""
    return server or os.environ.get("MLTUNE_SERVER") or DEFAULT_SERVER


def _read_credential(what, path):
    if not path:
        return None
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        data = b""
    if not data:
        raise MltuneError(f"cannot read the {what} {path}", grpc.StatusCode.INVALID_ARGUMENT)
    return data


def _option_text(value):
    """Task options travel as strings: True -> "true", 0.05 -> "0.05"."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _fields(message):
    """A wire message as plain dicts, lists and scalars (int64 fields stay ints)."""
    out = {}
    for field in message.DESCRIPTOR.fields:
        value = getattr(message, field.name)
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            out[field.name] = {k: _fields(v) if hasattr(v, "DESCRIPTOR") else v
                               for k, v in value.items()}
        elif hasattr(value, "DESCRIPTOR"):
            out[field.name] = _fields(value)
        elif isinstance(value, (str, bytes, int, float, bool)):
            out[field.name] = value
        else:  # a repeated field
            out[field.name] = [_fields(v) if hasattr(v, "DESCRIPTOR") else v for v in value]
    return out


class Client:
    """One connection to mltuned. Thread-safe; close() it, or use it as a context manager.

    server: HOST:PORT, else $MLTUNE_SERVER, else 127.0.0.1:8470. ca, cert, key (PEM files) and
    token fall back to $MLTUNE_CA, $MLTUNE_CERT, $MLTUNE_KEY and $MLTUNE_TOKEN, as the CLI's
    --ca, --cert, --key and --token do: ca or cert makes the channel TLS (cert and key: mutual
    TLS); the token goes with every call as `authorization: Bearer TOKEN`. timeout: seconds
    each unary call may take (None: no deadline); watch() has none, a search may run for hours.
    A call that moves or parses a large graph gets a second more per MiB uploaded, and per 16 MiB
    the daemon parses. max_message_bytes: the largest message sent or received (-1: none but
    gRPC's 2 GiB, since a result can carry a model's weights; graphs over 1 MiB go in 4 MiB
    chunks, uploaded once by content hash).
    """

    def __init__(self, server=None, *, ca=None, cert=None, key=None, token=None, timeout=30.0,
                 max_message_bytes=-1):
        self.address = server_address(server)
        ca = ca or os.environ.get("MLTUNE_CA")
        cert = cert or os.environ.get("MLTUNE_CERT")
        key = key or os.environ.get("MLTUNE_KEY")
        # A token read from a file usually ends in a newline, which gRPC refuses in a header.
        token = (token or os.environ.get("MLTUNE_TOKEN") or "").strip()
        self._metadata = (("authorization", f"Bearer {token}"),) if token else ()
        self._timeout = timeout
        options = [("grpc.max_send_message_length", max_message_bytes),
                   ("grpc.max_receive_message_length", max_message_bytes),
                   # Its own connection per Client, as the C++ client has.
                   ("grpc.use_local_subchannel_pool", 1)]
        if ca or cert:
            credentials = grpc.ssl_channel_credentials(
                root_certificates=_read_credential("CA file (ca=, $MLTUNE_CA)", ca),
                private_key=_read_credential("key (key=, $MLTUNE_KEY)", key),
                certificate_chain=_read_credential("certificate (cert=, $MLTUNE_CERT)", cert))
            self._channel = grpc.secure_channel(self.address, credentials, options)
        else:
            self._channel = grpc.insecure_channel(self.address, options)
        self._stub = pb_grpc.CompileServiceStub(self._channel)

    def close(self):
        self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- errors ----

    def _unreachable(self, detail, code):
        return Unreachable(
            f"{_UNREACHABLE_PREFIX}{self.address} ({detail}): is it running? (start it with "
            "scripts/run, or pass server= / set MLTUNE_SERVER)", code)

    def _error(self, e, job_id=None):
        """The daemon's code and message; Unreachable when the channel never got (or lost) its
        connection; a job's id in front of a message that does not name it (so "not found"
        says what was not)."""
        code = e.code()
        detail = e.details() or str(code)
        if not self._connected() and code in (grpc.StatusCode.UNAVAILABLE,
                                      grpc.StatusCode.DEADLINE_EXCEEDED):
            return self._unreachable(detail, code)
        if job_id and job_id not in detail:
            detail = f"job {job_id}: {detail}"
        return MltuneError(detail, code)

    def _connected(self):
        """Whether the channel holds a connection now. Asked of grpc's channel directly: the
        public channel.subscribe() polls from a thread that raises when the channel closes."""
        try:
            state = self._channel._channel.check_connectivity_state(False)
            return (grpc._common.CYGRPC_CONNECTIVITY_STATE_TO_CHANNEL_CONNECTIVITY[state] ==
                    grpc.ChannelConnectivity.READY)
        except Exception:  # a grpc without these internals: every UNAVAILABLE is unreachable
            return False

    def _deadline(self, extra_seconds=0.0):
        return None if self._timeout is None else self._timeout + extra_seconds

    def _unary(self, method, request, job_id=None, extra_seconds=0.0):
        try:
            return method(request, timeout=self._deadline(extra_seconds), metadata=self._metadata)
        except grpc.RpcError as e:
            raise self._error(e, job_id) from None

    # ---- graphs ----

    def upload_graph(self, graph, name=None):
        """Stores a graph (bytes, str or a pathlib.Path, read in pieces) on the daemon once, by
        the SHA-256 of its bytes: asks HasGraph, and sends it in 4 MiB chunks only when the daemon
        lacks it. Returns a GraphRef; a request can then name the graph by it (submit and lookup
        do this by themselves for graphs over 1 MiB)."""
        source = graph if isinstance(graph, graph_wire.GraphSource) else \
            graph_wire.GraphSource(graph, name)
        ref = types.GraphRef(sha256=source.sha256(), size=source.size)
        stored = self._unary(self._stub.HasGraph, pb.HasGraphRequest(sha256=ref.sha256))
        if stored.stored:
            ref.already_stored = True
            return ref
        sent = [0]

        def chunks():
            for chunk in graph_wire.upload_chunks(source, ref.sha256):
                yield chunk
                sent[0] += len(chunk.data)

        response = self._unary(self._stub.UploadGraph, chunks(),
                               extra_seconds=source.size / _UPLOAD_RATE)
        ref.already_stored = response.already_stored
        ref.bytes_sent = sent[0]
        return ref

    def _graph(self, graph, name, format):
        """The request's Graph message and how it was sent (a GraphRef)."""
        refs = []

        def store(source):
            try:
                refs.append(self.upload_graph(source))
            except MltuneError as e:
                if e.code == grpc.StatusCode.UNIMPLEMENTED:  # a daemon older than the upload
                    return None
                raise
            return refs[-1].sha256

        message, source = graph_wire.graph_message(graph, name, format, store)
        return message, (refs[0] if refs else types.GraphRef(size=source.size,
                                                             bytes_sent=source.size))

    def wait_for_ready(self, seconds):
        """Waits up to `seconds` for a connection; Unreachable when none comes."""
        # A gRPC health check (served without a token; an empty request is b"") that waits for
        # the connection: any answer but UNAVAILABLE or DEADLINE_EXCEEDED means one came.
        # (grpc.channel_ready_future polls from a thread that raises once the channel closes.)
        check = self._channel.unary_unary("/grpc.health.v1.Health/Check",
                                          request_serializer=None, response_deserializer=None)
        try:
            check(b"", timeout=seconds, wait_for_ready=True)
        except grpc.RpcError as e:
            if e.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                raise self._unreachable(f"no connection within {seconds:g} s", e.code()) from None

    # ---- jobs ----

    def submit(self, graph, *, task=None, tasks=None, target="cpu", budget=None, strategy="",
               options=None, skip_cache=False, name=None, format=None):
        """Tunes a graph: answered from the cache, attached to an identical queued or running
        job, or queued. graph: bytes, str (HLO text) or a pathlib.Path to read. task or tasks:
        what to run ("pass-order" when neither). budget: steps, or mltune.Budget(steps,
        seconds); None = the daemon's default. options: task options, e.g.
        {"measure_seconds": 0.05}. Returns a Submission: `cached` (then `job.results` holds the
        results) or the `job_id` to watch."""
        if task is not None and tasks is not None:
            raise ValueError("submit takes task or tasks, not both")
        budget = types.Budget.of(budget)
        graph, sent = self._graph(graph, name, format)
        request = pb.SubmitCompileRequest(
            graph=graph,
            tasks=[task] if task is not None else list(tasks or []), target=target,
            budget=pb.Budget(steps=budget.steps, seconds=budget.seconds), strategy=strategy,
            options={k: _option_text(v) for k, v in (options or {}).items()},
            skip_cache=skip_cache)
        response = self._unary(self._stub.SubmitCompile, request,
                               extra_seconds=sent.size / _PARSE_RATE)
        return types.Submission(job_id=response.job_id, attached=response.attached,
                                cached=response.cached, job=types.job_from_proto(response.job),
                                graph=sent)

    def watch(self, job_id, *, progress=None, on_update=None):
        """Follows the job to its end and returns its final snapshot (state "done", with
        results); JobFailed when it failed or was cancelled. progress: None or True (a bar on a
        terminal, plain lines otherwise, on stderr), False (nothing), "live", "lines", or a
        mltune.progress.Progress. on_update(job) sees every snapshot; when it returns False the
        watch stops and returns the last snapshot, unfinished."""
        if progress is None or progress is True:
            progress = Progress()
        elif progress is False:
            progress = Progress("none")
        elif isinstance(progress, str):
            progress = Progress(progress)
        call = self._stub.WatchJob(pb.WatchJobRequest(job_id=job_id), metadata=self._metadata)
        last = None
        try:
            for message in call:
                last = types.job_from_proto(message)
                progress.update(last)
                if last.final:
                    break
                if on_update is not None and on_update(last) is False:
                    break
        except grpc.RpcError as e:
            progress.finish()
            raise self._error(e, job_id) from None
        finally:
            # Nothing more is wanted: cancel rather than wait for the daemon to close the stream.
            call.cancel()
        progress.finish()
        if last is None:
            raise MltuneError(f"job {job_id}: WatchJob ended without a snapshot",
                              grpc.StatusCode.INTERNAL)
        if last.final and on_update is not None:
            on_update(last)
        if last.state in ("failed", "cancelled"):
            raise JobFailed(last)
        return last

    def get_job(self, job_id):
        """The job's current snapshot, whatever its state."""
        return types.job_from_proto(
            self._unary(self._stub.GetJob, pb.GetJobRequest(job_id=job_id), job_id))

    def result(self, job_id):
        """The finished job (state "done", with its results), as `mltune result` shows it.
        NoResult while it is queued or running; JobFailed when it failed or was cancelled."""
        job = self.get_job(job_id)
        if not job.final:
            raise NoResult(job, f"job {job.job_id} is {job.state} ({100 * job.progress:.0f}%  "
                           f"{steps_text(job)}): no result yet; follow it with "
                           f"client.watch({job.job_id!r})")
        if job.state != "done":
            raise JobFailed(job)
        return job

    def cancel(self, job_id):
        """Cancels a queued or running job (a running one stops at its next step); returns its
        snapshot. FAILED_PRECONDITION for a job that already finished."""
        response = self._unary(self._stub.CancelJob, pb.CancelJobRequest(job_id=job_id), job_id)
        return types.job_from_proto(response.job)

    def lookup(self, graph=None, *, fingerprint=None, task="", target="", omit_artifacts=False,
               name=None, format=None):
        """What the cache holds for a graph (given as for submit) or a fingerprint (as `mltune
        fingerprint` prints it), without queuing anything; task and target "" mean any. A miss
        is a LookupResult with no results."""
        if (graph is None) == (fingerprint is None):
            raise ValueError("lookup needs exactly one of a graph and a fingerprint")
        request = pb.LookupCacheRequest(task=task, target=target, omit_artifacts=omit_artifacts)
        size = 0
        if fingerprint is not None:
            request.fingerprint = fingerprint
        else:
            message, sent = self._graph(graph, name, format)
            request.graph.CopyFrom(message)
            size = sent.size
        response = self._unary(self._stub.LookupCache, request, extra_seconds=size / _PARSE_RATE)
        return types.LookupResult(
            fingerprint=response.fingerprint,
            results=[types.task_result_from_proto(r) for r in response.results])

    # ---- the daemon ----

    def strategies(self):
        """The tasks (name, description, targets) and strategies, as `mltune strategies` lists
        them: {"strategies": [...], "tasks": [...], "default_strategy": ...}."""
        return _fields(self._unary(self._stub.ListStrategies, pb.ListStrategiesRequest()))

    def workers(self):
        """The daemon's workers, as `mltune workers` lists them: a dict per worker."""
        return _fields(self._unary(self._stub.ListWorkers, pb.ListWorkersRequest()))["workers"]

    def stats(self):
        """Queue, cache and retraining figures, as `mltune stats` prints them, as a dict."""
        return _fields(self._unary(self._stub.GetStats, pb.GetStatsRequest()))
