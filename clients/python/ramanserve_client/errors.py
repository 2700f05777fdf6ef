"""Typed exceptions. Every one carries `code` (the contract's error code,
or CHANNEL_DOWN / PROTOCOL_ERROR for what the client itself concludes),
`message` and `retryable`, so a caller can branch on the class or on the
code alike."""


class RamanServeError(Exception):
    """Base of every error the client raises."""

    code = "ERROR"
    retryable = False

    def __init__(self, message, *, code=None, retryable=None, correlation_id=None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if retryable is not None:
            self.retryable = retryable
        # The request id the reply answered ("" when the server could not
        # read it); None for errors no reply carried.
        self.correlation_id = correlation_id

    def __str__(self):
        return f"{self.code}: {self.message}"


class ChannelDown(RamanServeError):
    """No reply within the timeout on any attempt: the server is down,
    unreachable or refusing the connection (a CURVE key it does not
    accept looks the same). Retryable later: the scan is reported
    unmeasured, not queued (api/messages.md section 6.2)."""

    code = "CHANNEL_DOWN"
    retryable = True

    def __init__(self, message, *, attempts):
        super().__init__(message)
        self.attempts = attempts


class ProtocolError(RamanServeError):
    """A reply that breaks the channel's contract: not MessagePack, v other
    than 1, an unexpected type or a correlation_id naming another
    request."""

    code = "PROTOCOL_ERROR"


class IncompatibleServer(ProtocolError):
    """The handshake ping found a server speaking another protocol
    version (api/messages.md section 6.1). Not worth retrying quickly."""

    code = "INCOMPATIBLE_SERVER"


class ServerError(RamanServeError):
    """The server answered with an error object. The subclasses name the
    codes of api/messages.md section 4; an unknown code raises this class
    itself, with the code as sent."""

    # True for a spectrum the client refused before sending it (the axis
    # check); False for the server's own verdicts.
    local = False


class MalformedMessage(ServerError):
    code = "MALFORMED_MESSAGE"


class UnsupportedVersion(ServerError):
    code = "UNSUPPORTED_VERSION"


class UnknownType(ServerError):
    code = "UNKNOWN_TYPE"


class MessageTooLarge(ServerError):
    code = "MESSAGE_TOO_LARGE"


class ServerBusy(ServerError):
    code = "SERVER_BUSY"
    retryable = True


class ModelNotLoaded(ServerError):
    code = "MODEL_NOT_LOADED"


class InvalidSpectrum(ServerError):
    """Also raised before sending, when the spectrum does not fit the
    model's axis in length or holds a value that is not finite (`local`
    is then True)."""

    code = "INVALID_SPECTRUM"


class SpectrumOutOfRange(ServerError):
    """Also raised before sending, when a wavenumber lies off the model's
    axis by more than the tolerance (`local` is then True)."""

    code = "SPECTRUM_OUT_OF_RANGE"


class InvalidRequest(ServerError):
    code = "INVALID_REQUEST"


class InternalError(ServerError):
    code = "INTERNAL_ERROR"


_BY_CODE = {
    cls.code: cls
    for cls in (
        MalformedMessage,
        UnsupportedVersion,
        UnknownType,
        MessageTooLarge,
        ServerBusy,
        ModelNotLoaded,
        InvalidSpectrum,
        SpectrumOutOfRange,
        InvalidRequest,
        InternalError,
    )
}


def server_error(error, correlation_id):
    """The exception for a reply's error object {code, message, retryable}.
    The server's retryable wins over the class default: the table is the
    server's (server/contract)."""
    if not isinstance(error, dict):
        return ProtocolError(f"reply error is {type(error).__name__}, not a map", correlation_id=correlation_id)
    code = error.get("code")
    message = error.get("message")
    retryable = error.get("retryable")
    if not isinstance(code, str) or not isinstance(message, str) or not isinstance(retryable, bool):
        return ProtocolError(f"reply error {error!r} lacks code, message or retryable", correlation_id=correlation_id)
    cls = _BY_CODE.get(code, ServerError)
    return cls(message, code=code, retryable=retryable, correlation_id=correlation_id)


def local_error(cls, message):
    """A spectrum refused before it was sent."""
    e = cls(message, correlation_id=None)
    e.local = True
    return e
