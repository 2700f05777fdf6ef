"""Client of ramanserve's prediction channel (api/messages.md).

    from ramanserve_client import Client
    with Client("tcp://ramanserve.plant:5555", timeout=1.0, retries=3) as c:
        c.ping()
        p = c.predict(wavenumbers, intensities, context={"batch_id": "B-7"})
        print(p.concentrations, p.confidence)

Depends on pyzmq and msgpack only.
"""

from .client import (
    AXIS_TOLERANCE,
    Client,
    ModelInfo,
    Pong,
    Prediction,
)
from .errors import (
    ChannelDown,
    IncompatibleServer,
    InternalError,
    InvalidRequest,
    InvalidSpectrum,
    MalformedMessage,
    MessageTooLarge,
    ModelNotLoaded,
    ProtocolError,
    RamanServeError,
    ServerBusy,
    ServerError,
    SpectrumOutOfRange,
    UnknownType,
    UnsupportedVersion,
)

__all__ = [
    "AXIS_TOLERANCE",
    "ChannelDown",
    "Client",
    "IncompatibleServer",
    "InternalError",
    "InvalidRequest",
    "InvalidSpectrum",
    "MalformedMessage",
    "MessageTooLarge",
    "ModelInfo",
    "ModelNotLoaded",
    "Pong",
    "Prediction",
    "ProtocolError",
    "RamanServeError",
    "ServerBusy",
    "ServerError",
    "SpectrumOutOfRange",
    "UnknownType",
    "UnsupportedVersion",
]
