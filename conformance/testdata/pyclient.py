"""Drives clients/python (the ramanserve_client package) for
conformance/pyclient_test.go. Reads one JSON job on stdin and writes
JSON lines on stdout; the package is imported from the path in the
job (in place, as a checkout uses it)."""

import json
import math
import sys
import time


def emit(obj):
    print(json.dumps(obj), flush=True)


def error_fields(e):
    return {
        "class": type(e).__name__,
        "code": e.code,
        "retryable": e.retryable,
        "message": e.message,
        "local": getattr(e, "local", None),
        "correlation_id": e.correlation_id,
    }


def expect_error(rc, fn):
    try:
        fn()
    except rc.RamanServeError as e:
        return error_fields(e)
    return None


def basics(rc, job):
    wn, it = job["wavenumbers"], job["intensities"]
    out = {}
    with rc.Client(job["endpoint"], timeout=5.0, retries=2) as c:
        pong = c.ping()
        out["pong"] = vars(pong)
        info = c.model_info(wavenumbers=True)
        out["info_version"] = info.active_version
        out["info_count"] = info.wavenumber_count
        out["info_axis"] = info.wavenumbers
        out["info_plain_has_axis"] = c.model_info().wavenumbers is not None
        p = c.predict(wn, it, context={"batch_id": "B-py-1", "port": "P1", "column_index": 2}, scan_seq=7)
        out["prediction"] = vars(p)
        out["contributions"] = c.predict(wn, it, contributions=3).contributions
        sent = c.attempts
        out["short"] = expect_error(rc, lambda: c.predict(wn[:-1], it[:-1]))
        out["shifted"] = expect_error(rc, lambda: c.predict([w + 2.0 for w in wn], it))
        nan = list(it)
        nan[5] = math.nan
        out["nan"] = expect_error(rc, lambda: c.predict(wn, nan))
        out["sent_for_local_errors"] = c.attempts - sent
    with rc.Client(job["endpoint"], timeout=5.0, retries=2, check_axis=False) as c:
        out["server_shifted"] = expect_error(rc, lambda: c.predict([w + 2.0 for w in wn], it))
        out["server_nan"] = expect_error(rc, lambda: c.predict(wn, nan))
        out["server_short"] = expect_error(rc, lambda: c.predict(wn[:-1], it[:-1]))
        out["server_bad_options"] = expect_error(rc, lambda: c.predict(wn, it, contributions=65))
    emit(out)


def no_model(rc, job):
    out = {}
    with rc.Client(job["endpoint"], timeout=5.0, retries=2) as c:
        out["pong"] = vars(c.ping())
        out["model_info"] = expect_error(rc, lambda: c.model_info())
        out["predict"] = expect_error(rc, lambda: c.predict(job["wavenumbers"], job["intensities"]))
    emit(out)


def down(rc, job):
    c = rc.Client(job["endpoint"], timeout=0.3, retries=2, backoff=0.05)
    began = time.monotonic()
    err = expect_error(rc, c.ping)
    emit({"error": err, "elapsed_s": time.monotonic() - began, "attempts": c.attempts, "reconnects": c.reconnects})
    c.close()


def curve(rc, job):
    out = {}
    for name in ("admitted", "stranger"):
        k = job[name]
        with rc.Client(job["endpoint"], timeout=1.0, retries=1, server_key=job["server_key"],
                       public_key=k["public"], secret_key=k["secret"]) as c:
            try:
                out[name] = {"pong": vars(c.ping())}
            except rc.RamanServeError as e:
                out[name] = {"error": error_fields(e)}
    emit(out)


def stream(rc, job):
    wn, it = job["wavenumbers"], job["intensities"]
    c = rc.Client(job["endpoint"], timeout=job["timeout"], retries=job["retries"])
    longest = 0.0
    for i in range(job["count"]):
        began = time.monotonic()
        try:
            p = c.predict(wn, it, context={"batch_id": "stream"}, scan_seq=i)
            emit({"i": i, "ok": True, "model_version": p.model_version})
        except rc.RamanServeError as e:
            emit({"i": i, "ok": False, "error": error_fields(e)})
        longest = max(longest, time.monotonic() - began)
    emit({"done": True, "attempts": c.attempts, "reconnects": c.reconnects, "longest_call_s": longest})
    c.close()


def main():
    job = json.load(sys.stdin)
    sys.path.insert(0, job["package_dir"])
    import ramanserve_client as rc

    {"basics": basics, "no_model": no_model, "down": down, "curve": curve, "stream": stream}[job["scenario"]](rc, job)


if __name__ == "__main__":
    main()
