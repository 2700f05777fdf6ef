"""The prediction channel's client: a REQ socket with the Lazy Pirate
retry of api/messages.md section 6.2, the handshake ping of section 6.1
on every new socket, and a check of each spectrum against the active
model's axis before it is sent."""

import math
import random
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import msgpack
import zmq

from .errors import (
    ChannelDown,
    IncompatibleServer,
    InvalidSpectrum,
    ProtocolError,
    ServerError,
    SpectrumOutOfRange,
    local_error,
    server_error,
)

PROTOCOL_VERSION = 1
# The server's axis tolerance, cm-1 (api/messages.md section 9): a
# wavenumber further than this from the model's axis at the same index is
# SPECTRUM_OUT_OF_RANGE.
AXIS_TOLERANCE = 0.5
# The longest wait between two attempts, seconds (section 6.2).
MAX_BACKOFF = 5.0

_REPLY_TYPE = {"ping": "pong", "predict": "predict_reply", "model_info": "model_info_reply"}


class _NoReply(Exception):
    """No reply within the timeout: the socket is out of step and must go."""


@dataclass
class Pong:
    server_version: str
    protocol_version: int
    # "" when no model is loaded.
    model_version: str
    uptime_seconds: float


@dataclass
class Prediction:
    # Analyte (EPA, DHA, DPA) to g/L; only the analytes the model predicts.
    concentrations: Dict[str, float]
    confidence: Dict[str, float]
    # The model that served this call (a hot swap may change it between
    # two calls).
    model_version: str
    inference_ms: float
    diagnostics: Dict[str, float] = field(default_factory=dict)
    # Only when asked for with contributions=K.
    contributions: Optional[Dict[str, Any]] = None


@dataclass
class ModelInfo:
    active_version: str
    algorithm: str
    trained_at: str
    latent_components: Optional[int] = None
    trained_samples: Optional[int] = None
    rmse: Optional[Dict[str, float]] = None
    r2: Optional[Dict[str, float]] = None
    wavenumber_range: Optional[List[float]] = None
    wavenumber_count: Optional[int] = None
    # The axis itself, when asked for (model_info(wavenumbers=True)) and
    # the server gives it.
    wavenumbers: Optional[List[float]] = None


class Client:
    """One REQ connection to ramanserve's prediction channel.

    Client(endpoint, timeout, retries): each attempt waits `timeout`
    seconds for its reply; a call makes at most 1 + `retries` attempts,
    retrying after no reply (on a new socket) and after an error the
    server marks retryable (SERVER_BUSY), with a jittered exponential
    backoff from `backoff` seconds up to 5 s. Every new socket starts with
    a ping that checks the server speaks v=1, so an attempt on a new
    socket waits at most twice `timeout`. When every attempt fails the
    call raises ChannelDown (or the last retryable server error).

    CurveZMQ: give `server_key` (the server's public key) and the client's
    own `public_key` and `secret_key`, each as 40 Z85 characters (str or
    bytes) or 32 raw bytes.

    Not safe for concurrent use: give each thread its own Client.
    """

    def __init__(
        self,
        endpoint: str,
        timeout: float = 1.0,
        retries: int = 3,
        *,
        server_key=None,
        public_key=None,
        secret_key=None,
        backoff: float = 0.1,
        check_axis: bool = True,
        axis_tolerance: float = AXIS_TOLERANCE,
        heartbeat_ivl: float = 1.0,
        context: Optional[zmq.Context] = None,
    ):
        if not isinstance(endpoint, str) or not endpoint:
            raise ValueError("endpoint must be a ZeroMQ endpoint such as tcp://host:5555")
        if not timeout > 0:
            raise ValueError(f"timeout must be positive, got {timeout!r}")
        if not isinstance(retries, int) or retries < 0:
            raise ValueError(f"retries must be an integer >= 0, got {retries!r}")
        if not backoff >= 0:
            raise ValueError(f"backoff must be >= 0, got {backoff!r}")
        keys = (server_key, public_key, secret_key)
        if any(k is not None for k in keys) and not all(k is not None for k in keys):
            raise ValueError("CurveZMQ needs server_key, public_key and secret_key together")
        if server_key is not None and not zmq.has("curve"):
            raise ValueError("this libzmq is built without CurveZMQ")
        self.endpoint = endpoint
        self.timeout = float(timeout)
        self.retries = retries
        self.backoff = float(backoff)
        self.check_axis = check_axis
        self.axis_tolerance = float(axis_tolerance)
        self._keys = tuple(_key(k) for k in keys) if server_key is not None else None
        self._heartbeat_ms = int(heartbeat_ivl * 1000)
        self._ctx = context or zmq.Context.instance()
        self._sock = None
        self._checked = False  # the current socket's handshake ping passed
        self._axis = None  # (model version, its wavenumbers)
        # What the client did, for whoever watches it: attempts sent and
        # sockets closed after a timeout.
        self.attempts = 0
        self.reconnects = 0
        # The pong of the latest handshake.
        self.server: Optional[Pong] = None

    # ---- the three requests

    def ping(self) -> Pong:
        """The liveness probe; succeeds with or without a loaded model."""
        return _pong(self._call("ping", {}))

    def model_info(self, wavenumbers: bool = False) -> ModelInfo:
        """The active model's description; with wavenumbers=True also its
        axis (body.include, api/messages.md section 3.3)."""
        body = {"include": ["wavenumbers"]} if wavenumbers else {}
        info = _model_info(self._call("model_info", body))
        if wavenumbers:
            # None for a server that does not give the axis: remembered
            # too, so that it is not asked again for this model.
            self._axis = (info.active_version, info.wavenumbers)
        return info

    def predict(
        self,
        wavenumbers,
        intensities,
        context: Optional[Dict[str, Any]] = None,
        *,
        contributions: Optional[int] = None,
        scan_seq: Optional[float] = None,
        channel: Optional[float] = None,
        integration_ms: Optional[float] = None,
    ) -> Prediction:
        """Concentrations of one spectrum. `wavenumbers` and `intensities`
        are sequences of numbers (lists, NumPy arrays); `context` may hold
        batch_id, port and column_index. With check_axis (the default) the
        spectrum is first checked against the active model's axis, fetched
        once per model version: a wrong length or a value that is not
        finite raises InvalidSpectrum, a wavenumber off the axis
        SpectrumOutOfRange, with `local` True and nothing sent."""
        wn = _floats(wavenumbers, "wavenumbers")
        it = _floats(intensities, "intensities")
        if self.check_axis:
            self._check_spectrum(wn, it)
        spectrum: Dict[str, Any] = {"wavenumbers": wn, "intensities": it}
        for name, value in (("scan_seq", scan_seq), ("channel", channel), ("integration_ms", integration_ms)):
            if value is not None:
                spectrum[name] = float(value)
        body: Dict[str, Any] = {"spectrum": spectrum}
        if context:
            body["context"] = dict(context)
        if contributions is not None:
            body["options"] = {"contributions": int(contributions)}
        p = _prediction(self._call("predict", body))
        if self._axis is not None and self._axis[0] != p.model_version:
            self._axis = None  # a hot swap: the next check fetches the new model's axis
        return p

    def close(self):
        self._drop_socket()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- the axis check

    def _check_spectrum(self, wn, it):
        if self._axis is None:
            self.model_info(wavenumbers=True)
        version, ref = self._axis
        if len(wn) != len(it):
            raise local_error(InvalidSpectrum, f"wavenumbers has {len(wn)} points but intensities has {len(it)}")
        if ref is None:
            return  # a server that does not give its axis checks alone
        if len(wn) != len(ref):
            raise local_error(InvalidSpectrum, f"the spectrum has {len(wn)} points; model {version} expects {len(ref)}")
        tol = self.axis_tolerance
        for i, (w, x, r) in enumerate(zip(wn, it, ref)):
            if not (math.isfinite(w) and math.isfinite(x)):
                raise local_error(InvalidSpectrum, f"point {i} is not finite (wavenumber {w}, intensity {x})")
            if abs(w - r) > tol:
                raise local_error(
                    SpectrumOutOfRange,
                    f"wavenumbers[{i}] = {w} is {abs(w - r):.3g} cm-1 from model {version}'s axis ({r}); the tolerance is {tol}",
                )

    # ---- Lazy Pirate

    def _call(self, type_, body):
        last = None
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self._backoff(attempt - 1))
            try:
                if not self._checked:
                    self._handshake()
                return self._exchange(type_, body)
            except _NoReply:
                self._drop_socket()
                self.reconnects += 1
                last = None
            except ServerError as e:
                if not e.retryable:
                    raise
                last = e
        if last is not None:
            raise last
        raise ChannelDown(
            f"no reply from {self.endpoint} to {type_} in {self.retries + 1} attempts of {self.timeout:g} s",
            attempts=self.retries + 1,
        )

    def _backoff(self, n):
        return min(self.backoff * 2**n, MAX_BACKOFF) * random.uniform(0.5, 1.5)

    def _handshake(self):
        """The ping every new socket starts with (section 6.1)."""
        try:
            pong = _pong(self._exchange("ping", {}, handshake=True))
        except ProtocolError as e:
            self._drop_socket()
            raise IncompatibleServer(f"incompatible prediction server at {self.endpoint}: {e.message}") from e
        if pong.protocol_version != PROTOCOL_VERSION:
            self._drop_socket()
            raise IncompatibleServer(
                f"incompatible prediction server at {self.endpoint} (protocol_version={pong.protocol_version}, server_version={pong.server_version})"
            )
        self._checked = True
        self.server = pong
        if self._axis is not None and self._axis[0] != pong.model_version:
            self._axis = None

    def _socket(self):
        if self._sock is None:
            s = self._ctx.socket(zmq.REQ)
            s.setsockopt(zmq.LINGER, 0)
            # A send never waits for long: REQ queues on a connected pipe,
            # and a send that cannot is a timeout like a lost reply.
            s.setsockopt(zmq.SNDTIMEO, int(self.timeout * 1000))
            if zmq.zmq_version_info() >= (4, 2) and self._heartbeat_ms > 0:
                s.setsockopt(zmq.HEARTBEAT_IVL, self._heartbeat_ms)
                s.setsockopt(zmq.HEARTBEAT_TIMEOUT, 3 * self._heartbeat_ms)
            if self._keys is not None:
                s.curve_serverkey, s.curve_publickey, s.curve_secretkey = self._keys
            s.connect(self.endpoint)
            self._sock = s
            self._checked = False
        return self._sock

    def _drop_socket(self):
        if self._sock is not None:
            self._sock.close(linger=0)
            self._sock = None
        self._checked = False

    def _exchange(self, type_, body, handshake=False):
        """One request and its reply on the current socket: the reply's
        body, or ServerError, ProtocolError, _NoReply."""
        sock = self._socket()
        rid = str(uuid.uuid4())
        frame = msgpack.packb({"v": PROTOCOL_VERSION, "type": type_, "id": rid, "ts": time.time(), "body": body}, use_bin_type=True)
        self.attempts += 1
        try:
            sock.send(frame)
        except zmq.Again:
            raise _NoReply()
        if not sock.poll(int(self.timeout * 1000), zmq.POLLIN):
            raise _NoReply()
        data = sock.recv()
        try:
            reply = msgpack.unpackb(data, raw=False)
        except Exception as e:  # any decoding fault of a foreign frame
            raise ProtocolError(f"reply is not MessagePack: {e}")
        if not isinstance(reply, dict):
            raise ProtocolError(f"reply is a {type(reply).__name__}, not a map")
        v = reply.get("v")
        if type(v) is not int or v != PROTOCOL_VERSION:
            raise ProtocolError(f"reply has v={v!r}; this client speaks v={PROTOCOL_VERSION}")
        corr = reply.get("correlation_id")
        # "" answers a request the server could not read: on REQ, ours.
        if corr != rid and corr != "":
            raise ProtocolError(f"reply answers request {corr!r}, not {rid!r}")
        if reply.get("error") is not None:
            e = server_error(reply["error"], corr)
            if handshake and e.code == "UNSUPPORTED_VERSION":
                raise ProtocolError(e.message)
            raise e
        if reply.get("type") != _REPLY_TYPE[type_]:
            raise ProtocolError(f"reply type {reply.get('type')!r} to a {type_}")
        rbody = reply.get("body")
        if not isinstance(rbody, dict):
            raise ProtocolError("reply body is not a map")
        return rbody


def _key(k):
    return k.encode("ascii") if isinstance(k, str) else bytes(k)


def _floats(values, name):
    try:
        return [float(x) for x in values]
    except (TypeError, ValueError) as e:
        raise local_error(InvalidSpectrum, f"{name} must be a sequence of numbers: {e}") from None


def _need(body, key, kind):
    v = body.get(key)
    if kind is float and type(v) is int:
        v = float(v)
    if not isinstance(v, kind) or isinstance(v, bool):
        raise ProtocolError(f"reply body.{key} is {v!r}, not {kind.__name__}")
    return v


def _pong(b):
    return Pong(
        server_version=_need(b, "server_version", str),
        protocol_version=_need(b, "protocol_version", int),
        model_version=_need(b, "model_version", str),
        uptime_seconds=_need(b, "uptime_seconds", float),
    )


def _prediction(b):
    return Prediction(
        concentrations=_need(b, "concentrations", dict),
        confidence=_need(b, "confidence", dict),
        model_version=_need(b, "model_version", str),
        inference_ms=_need(b, "inference_ms", float),
        diagnostics=b.get("diagnostics") or {},
        contributions=b.get("contributions"),
    )


def _model_info(b):
    wn = b.get("wavenumbers")
    return ModelInfo(
        active_version=_need(b, "active_version", str),
        algorithm=_need(b, "algorithm", str),
        trained_at=_need(b, "trained_at", str),
        latent_components=b.get("latent_components"),
        trained_samples=b.get("trained_samples"),
        rmse=b.get("rmse"),
        r2=b.get("r2"),
        wavenumber_range=b.get("wavenumber_range"),
        wavenumber_count=b.get("wavenumber_count"),
        wavenumbers=[float(x) for x in wn] if isinstance(wn, list) else None,
    )
